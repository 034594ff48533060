/* Rules -> rule trie. For one scope (global, or one sandbox), every distinct prefix becomes one
 * trie entry whose port rules are its own plus those of every shorter prefix covering it
 * (pushed down), merged where ranges touch, so that the kernel's longest-prefix match alone
 * yields every rule that applies to an address. The global scope always has a ::/0 entry: it
 * carries the mode to every lookup.
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <linux/types.h>

#include "array.h"
#include "egret/policy.h"
#include "addr.h"
#include "policy_map.h"

/* A compiled set freed. A large one (100,000 rules: 15 MB) goes back to the system at once:
 * freed in the middle of the heap it would stay in egretd's resident memory for good.
 */
static void set_free(struct policy_entries *set)
{
	bool large = set->cap >= 4096;

	free(set->v);
	set->v = NULL;
	if (large)
		malloc_trim(0);
}

int policy_map__create(void)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_NO_PREALLOC);
	int fd = bpf_map_create(BPF_MAP_TYPE_LPM_TRIE, "egret_rules",
				sizeof(struct egret_policy_key), sizeof(struct egret_policy_val),
				EGRET_POLICY_MAX_ENTRIES, &opts);

	return fd < 0 ? -errno : fd;
}

static int cmp_prefix(const void *a, const void *b)
{
	const struct policy_entry *x = a, *y = b;
	int c = memcmp(x->addr, y->addr, 16);

	return c ? c : (int)x->plen - (int)y->plen;
}

static bool covers(const struct policy_entry *outer, const struct policy_entry *inner)
{
	unsigned int full = outer->plen / 8, rest = outer->plen % 8;

	if (outer->plen > inner->plen || memcmp(outer->addr, inner->addr, full))
		return false;
	return !rest || ((outer->addr[full] ^ inner->addr[full]) & (0xff00 >> rest) & 0xff) == 0;
}

static int cmp_port_rule(const void *a, const void *b)
{
	const struct egret_port_rule *x = a, *y = b;

	if (x->action != y->action)
		return x->action == EGRET_ACT_DENY ? -1 : 1;
	if (x->proto != y->proto)
		return (int)x->proto - (int)y->proto;
	return (int)x->port_lo - (int)y->port_lo;
}

/* Sort, then merge same-action same-protocol ranges that overlap or touch. */
static void normalize(struct egret_policy_val *v, struct egret_port_rule *tmp, size_t n)
{
	size_t out = 0;

	qsort(tmp, n, sizeof(*tmp), cmp_port_rule);
	for (size_t i = 0; i < n; i++) {
		struct egret_port_rule *last = out ? &tmp[out - 1] : NULL;

		if (last && last->action == tmp[i].action && last->proto == tmp[i].proto &&
		    (uint32_t)tmp[i].port_lo <= (uint32_t)last->port_hi + 1) {
			if (tmp[i].port_hi > last->port_hi)
				last->port_hi = tmp[i].port_hi;
			continue;
		}
		tmp[out++] = tmp[i];
	}
	v->nrules = (uint32_t)out;
	memcpy(v->rules, tmp, (out < EGRET_PORT_RULES ? out : EGRET_PORT_RULES) * sizeof(*tmp));
}

static int add_rule(struct policy_entries *set, const struct rule *r)
{
	struct policy_entry *p;

	if (ARRAY_RESERVE(set->v, set->cap, set->n + 1))
		return -ENOMEM;
	p = &set->v[set->n++];
	memset(p, 0, sizeof(*p));
	memcpy(p->addr, r->addr, 16);
	p->plen = r->plen;
	p->val.nrules = 1;
	p->val.rules[0] = (struct egret_port_rule){ .rule_id = r->id,
						    .port_lo = r->port_lo,
						    .port_hi = r->port_hi,
						    .proto = r->proto,
						    .action = r->action };
	return 0;
}

static void too_many(const struct policy_entry *p, const char *why, char *err, size_t errsz)
{
	char a[ADDR_STRLEN];
	bool v4 = addr__is_v4(p->addr) && p->plen >= 96;

	addr__format(p->addr, a, sizeof(a));
	snprintf(err, errsz, "%s/%u %s more than %d port rules: merge port ranges", a,
		 v4 ? p->plen - 96 : p->plen, why, EGRET_PORT_RULES);
}

/* Collapse duplicates (same prefix from several rules) into one entry with all their rules. */
static int collapse(struct policy_entries *set, char *err, size_t errsz)
{
	size_t out = 0;

	if (set->n > 1)
		qsort(set->v, set->n, sizeof(*set->v), cmp_prefix);
	for (size_t i = 0; i < set->n; i++) {
		struct policy_entry *last = out ? &set->v[out - 1] : NULL;

		if (last && last->plen == set->v[i].plen &&
		    !memcmp(last->addr, set->v[i].addr, 16)) {
			struct egret_port_rule tmp[2 * EGRET_PORT_RULES];
			size_t n = last->val.nrules;

			memcpy(tmp, last->val.rules, n * sizeof(*tmp));
			memcpy(tmp + n, set->v[i].val.rules, set->v[i].val.nrules * sizeof(*tmp));
			normalize(&last->val, tmp, n + set->v[i].val.nrules);
			if (last->val.nrules > EGRET_PORT_RULES) {
				too_many(last, "has", err, errsz);
				return -E2BIG;
			}
			continue;
		}
		set->v[out++] = set->v[i];
	}
	set->n = out;
	return 0;
}

/* Give every prefix the rules of the prefixes that cover it (sorted order makes them a stack). */
static int push_down(struct policy_entries *set, char *err, size_t errsz)
{
	size_t *stack = malloc((set->n + 1) * sizeof(*stack)), depth = 0;

	if (!stack)
		return -ENOMEM;
	for (size_t i = 0; i < set->n; i++) {
		struct policy_entry *p = &set->v[i];

		while (depth && !covers(&set->v[stack[depth - 1]], p))
			depth--;
		if (depth) {
			const struct egret_policy_val *up = &set->v[stack[depth - 1]].val;
			struct egret_port_rule tmp[2 * EGRET_PORT_RULES];
			size_t n = p->val.nrules;

			memcpy(tmp, p->val.rules, n * sizeof(*tmp));
			memcpy(tmp + n, up->rules, up->nrules * sizeof(*tmp));
			normalize(&p->val, tmp, n + up->nrules);
			p->val.flags |= up->flags;
			if (p->val.nrules > EGRET_PORT_RULES) {
				too_many(p, "collects, with the prefixes that cover it,", err,
					 errsz);
				free(stack);
				return -E2BIG;
			}
		}
		stack[depth++] = i;
	}
	free(stack);
	return 0;
}

/* Which rules a scope gets: the global scope the rules outside blocks; a sandbox those of every
 * block that selects it; a check of one block (exact) that block's only.
 */
struct scope_of {
	const char *name;		 /* NULL: the global scope */
	const struct sandbox_meta *meta; /* the sandbox's, with name */
	bool exact;			 /* name is a block's selector, compared as text */
};

static bool scope_wants(const struct scope_of *s, const struct rule *r)
{
	if (!s->name)
		return !r->sandbox[0];
	if (!r->sandbox[0])
		return false;
	return s->exact ? !strcmp(r->sandbox, s->name)
			: sandbox__selects(r->sandbox, s->name, s->meta);
}

/* The entries of one scope's rules; the global scope gets ::/0 carrying the mode. The caller
 * frees set->v.
 */
static int compile_scope(const struct policy *p, const struct scope_of *scope,
			 struct policy_entries *set, char *err, size_t errsz)
{
	int ret;

	memset(set, 0, sizeof(*set));
	if (!scope->name) {
		struct rule any = { 0 };

		ret = add_rule(set, &any);
		if (ret)
			return ret;
		set->v[0].val.nrules = 0;
		set->v[0].val.flags = (p->mode == POLICY_AUDIT ? EGRET_POL_AUDIT : 0) |
				      (p->require_unpriv ? EGRET_POL_REQUIRE_UNPRIV : 0);
	}
	for (size_t i = 0; i < p->n; i++) {
		const struct rule *r = &p->rules[i];

		if (r->kind != RULE_CIDR || !scope_wants(scope, r))
			continue;
		ret = add_rule(set, r);
		if (ret)
			return ret;
	}
	ret = collapse(set, err, errsz);
	return ret ? ret : push_down(set, err, errsz);
}

int policy_map__compile(const struct policy *p, const char *sandbox, struct policy_entries *set,
			char *err, size_t errsz)
{
	struct scope_of s = { .name = sandbox && sandbox[0] ? sandbox : NULL, .exact = true };

	return compile_scope(p, &s, set, err, errsz);
}

static void key_for(struct egret_policy_key *k, const struct policy_entry *p, uint64_t scope)
{
	memset(k, 0, sizeof(*k));
	k->prefixlen = EGRET_SCOPE_BITS + p->plen;
	k->scope[0] = (uint32_t)scope;
	k->scope[1] = (uint32_t)(scope >> 32);
	memcpy(k->addr, p->addr, 16);
}

/* Insert the rules of sandbox name with meta (name NULL: the global rules) under scope into
 * trie_fd.
 */
int policy_map__install(int trie_fd, const struct policy *p, const char *name,
			const struct sandbox_meta *meta, uint64_t scope, char *err, size_t errsz)
{
	struct scope_of s = { .name = name, .meta = meta };
	struct policy_entries set;
	struct egret_policy_key k;
	int ret = compile_scope(p, &s, &set, err, errsz);

	for (size_t i = 0; !ret && i < set.n; i++) {
		key_for(&k, &set.v[i], scope);
		if (bpf_map_update_elem(trie_fd, &k, &set.v[i].val, BPF_ANY)) {
			ret = -errno;
			snprintf(err, errsz, "rule map update failed: %s", strerror(errno));
		}
	}
	set_free(&set);
	return ret;
}

/* Delete the entries policy_map__install made for this sandbox and scope. */
int policy_map__remove(int trie_fd, const struct policy *p, const char *name,
		       const struct sandbox_meta *meta, uint64_t scope)
{
	struct scope_of s = { .name = name, .meta = meta };
	struct policy_entries set;
	struct egret_policy_key k;
	char err[POLICY_ERR_LEN];
	int ret = compile_scope(p, &s, &set, err, sizeof(err));

	for (size_t i = 0; !ret && i < set.n; i++) {
		key_for(&k, &set.v[i], scope);
		bpf_map_delete_elem(trie_fd, &k);
	}
	free(set.v);
	return ret;
}

/* Make trie_fd the rule set in force: one map update, atomic for every reader. */
int policy_map__swap(int outer_fd, int trie_fd)
{
	__u32 zero = 0;

	return bpf_map_update_elem(outer_fd, &zero, &trie_fd, BPF_ANY) ? -errno : 0;
}

/* Compile every scope without touching the kernel: the errors a load would hit. */
int policy_map__check(const struct policy *p, char *err, size_t errsz)
{
	struct policy_entries set;
	const char **names = NULL;
	size_t n = 0;
	int ret = policy_map__compile(p, NULL, &set, err, errsz);

	set_free(&set);
	if (ret)
		return ret;
	ret = policy__sandboxes(p, &names, &n);
	for (size_t i = 0; !ret && i < n; i++) {
		ret = policy_map__compile(p, names[i], &set, err, errsz);
		if (ret) {
			char msg[POLICY_ERR_LEN];

			snprintf(msg, sizeof(msg), "sandbox %s: %s", names[i], err);
			snprintf(err, errsz, "%s", msg);
		}
		set_free(&set);
	}
	free(names);
	return ret;
}
