/* Fuzz target: the policy language, as a policy file (policy__parse) and as the words of a live
 * edit (policy__parse_words, what `egretctl allow|deny|revoke` sends).
 * Invariants: a parsed policy printed back in policy words (mode line, then the rules as the
 * live-rules file writes them) parses to the same rule set (same hash, same count); every rule
 * of a live edit prints as words that parse back to the same rule; errors are terminated text;
 * the rule trie compiled for the global scope (policy_map__compile) gives, for flows at and
 * around each rule's edges, looked up as the kernel does (longest prefix, deny before allow),
 * the verdict the rules themselves give.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>
#include <netinet/in.h>

#include "egret/policy.h"
#include "policy.h"
#include "policy_map.h"

#define MAX_RULES 64

static void check_err(const char *err, size_t size)
{
	if (!memchr(err, '\0', size) || !err[0])
		abort();
}

/* the policy in words, parsed again: the same rules */
static void check_round_trip(const struct policy *p)
{
	struct policy again;
	char *text = NULL, err[POLICY_ERR_LEN], h1[65], h2[65];
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return;
	fprintf(f, "mode %s\n", policy__mode_name(p->mode));
	if (policy__write_live(p, f))
		abort();
	fclose(f);
	f = fmemopen(text, len, "r");
	policy__init(&again);
	if (!f || policy__parse(&again, "again", f, true, err, sizeof(err))) {
		fprintf(stderr, "printed policy does not parse: %s\n%s", err, text);
		abort();
	}
	fclose(f);
	policy__hash(p, h1);
	policy__hash(&again, h2);
	if (again.n != p->n || strcmp(h1, h2) || again.mode != p->mode) {
		fprintf(stderr, "printed policy differs:\n%s", text);
		abort();
	}
	policy__free(&again);
	free(text);
}

struct flow {
	uint8_t addr[16];
	uint8_t proto;
	uint16_t port;
};

static bool prefix_covers(const uint8_t *net, unsigned int plen, const uint8_t *addr)
{
	for (unsigned int i = 0; i < plen; i++) {
		uint8_t bit = (uint8_t)(0x80 >> (i % 8));

		if ((net[i / 8] & bit) != (addr[i / 8] & bit))
			return false;
	}
	return true;
}

/* as bpf/lib/policy.bpf.h port_rule_matches() */
static bool port_matches(uint8_t proto, uint16_t lo, uint16_t hi, const struct flow *f)
{
	if (proto && proto != f->proto && !(proto == IPPROTO_ICMP && f->proto == IPPROTO_ICMPV6))
		return false;
	return f->port >= lo && f->port <= hi;
}

/* 2 deny, 1 allow, 0 neither: from the global rules themselves */
static int by_rules(const struct policy *p, const struct flow *f)
{
	int v = 0;

	for (size_t i = 0; i < p->n; i++) {
		const struct rule *r = &p->rules[i];

		if (r->kind != RULE_CIDR || r->sandbox[0] ||
		    !prefix_covers(r->addr, r->plen, f->addr) ||
		    !port_matches(r->proto, r->port_lo, r->port_hi, f))
			continue;
		if (r->action == EGRET_ACT_DENY)
			return 2;
		v = 1;
	}
	return v;
}

/* the same from the compiled entries, looked up as the kernel looks them up */
static int by_trie(const struct policy_entries *set, const struct flow *f)
{
	const struct policy_entry *best = NULL;
	int v = 0;

	for (size_t i = 0; i < set->n; i++) {
		if (prefix_covers(set->v[i].addr, set->v[i].plen, f->addr) &&
		    (!best || set->v[i].plen > best->plen))
			best = &set->v[i];
	}
	for (uint32_t i = 0; best && i < best->val.nrules && i < EGRET_PORT_RULES; i++) {
		const struct egret_port_rule *r = &best->val.rules[i];

		if (!port_matches(r->proto, r->port_lo, r->port_hi, f))
			continue;
		if (r->action == EGRET_ACT_DENY)
			return 2;
		v = 1;
	}
	return v;
}

static void check_compiled(const struct policy *p)
{
	static const uint8_t protos[] = { IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP, IPPROTO_ICMPV6 };
	struct policy_entries set;
	char err[POLICY_ERR_LEN];

	if (policy_map__compile(p, NULL, &set, err, sizeof(err))) {
		check_err(err, sizeof(err));
		free(set.v);
		return;
	}
	for (size_t i = 0; i < set.n; i++) {
		if (set.v[i].val.nrules > EGRET_PORT_RULES)
			abort();
	}
	for (size_t i = 0; i < p->n && i < 16; i++) {
		const struct rule *r = &p->rules[i];
		uint16_t ports[] = { r->port_lo, r->port_hi, (uint16_t)(r->port_lo - 1),
				     (uint16_t)(r->port_hi + 1) };

		for (int edge = 0; edge < 3; edge++) {
			struct flow f;

			memcpy(f.addr, r->addr, 16);
			if (edge == 1 && r->plen)
				f.addr[(r->plen - 1) / 8] ^= (uint8_t)(0x80 >> ((r->plen - 1) % 8));
			if (edge == 2)
				f.addr[15] ^= 1;
			for (size_t k = 0; k < sizeof(protos); k++) {
				for (size_t j = 0; j < 4; j++) {
					f.proto = protos[k];
					f.port =
						protos[k] == IPPROTO_TCP || protos[k] == IPPROTO_UDP
							? ports[j]
							: 0;
					if (by_rules(p, &f) != by_trie(&set, &f)) {
						fprintf(stderr,
							"rule %zu: trie says %d, rules %d\n", i,
							by_trie(&set, &f), by_rules(p, &f));
						abort();
					}
				}
			}
		}
	}
	free(set.v);
	if (policy_map__check(p, err, sizeof(err)))
		check_err(err, sizeof(err));
}

static void fuzz_file(const uint8_t *data, size_t size)
{
	char err[POLICY_ERR_LEN] = "";
	FILE *f = fmemopen((void *)data, size, "r");
	struct policy p;

	if (!f)
		return;
	policy__init(&p);
	if (policy__parse(&p, "fuzz", f, true, err, sizeof(err)))
		check_err(err, sizeof(err));
	else {
		check_round_trip(&p);
		check_compiled(&p);
	}
	fclose(f);
	policy__free(&p);
}

/* The first line of the input as the words of a live edit, the second as its sandbox. */
static void fuzz_words(const uint8_t *data, size_t size)
{
	char line[4096], *words[64], *save = NULL, err[POLICY_ERR_LEN] = "", *sandbox, *nl;
	struct rule rules[MAX_RULES], back[MAX_RULES];
	int n = 0, got;

	if (size >= sizeof(line))
		size = sizeof(line) - 1;
	memcpy(line, data, size);
	line[size] = '\0';
	nl = strchr(line, '\n');
	sandbox = nl ? nl + 1 : "";
	if (nl)
		*nl = '\0';
	for (char *w = strtok_r(line, " \t", &save); w && n < 64; w = strtok_r(NULL, " \t", &save))
		words[n++] = w;
	got = policy__parse_words(words, n, sandbox, rules, MAX_RULES, err, sizeof(err));
	if (got < 0) {
		check_err(err, sizeof(err));
		return;
	}
	if (got > MAX_RULES)
		abort();
	for (int i = 0; i < got; i++) {
		char text[400], *w2[64], *s2 = NULL;
		int n2 = 0;

		rule__format(&rules[i], text, sizeof(text));
		for (char *w = strtok_r(text, " ", &s2); w && n2 < 64; w = strtok_r(NULL, " ", &s2))
			w2[n2++] = w;
		if (policy__parse_words(w2, n2, sandbox, back, MAX_RULES, err, sizeof(err)) != 1 ||
		    !rule__same(&rules[i], &back[0])) {
			fprintf(stderr, "rule %d does not print back: %s\n", i, err);
			abort();
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fuzz_file(data, size);
	fuzz_words(data, size);
	return 0;
}
