/* A sandbox's DNS budgets (the policy's 'budget dns N/s' and 'budget dns-names SIZE/PERIOD'),
 * kept by the resolver per sandbox: a token bucket of queries (N a second, a burst of 2N) that
 * every query draws from, and the bytes of names sent upstream in the current period. A query
 * over either is refused (REFUSED, or NXDOMAIN with --dns-refuse nxdomain) and its DnsQuery
 * event names the budget. And the name's entropy, reported never blocking: a tunnel's labels
 * are encoded data, a host name's are words.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "engine.h"
#include "resolver.h"
#include "util.h"

/* one sandbox's spending: a struct htab entry */
struct budget_entry {
	uint64_t sandbox_id; /* the key */
	uint64_t last_ns;    /* the bucket's last refill (CLOCK_MONOTONIC) */
	uint64_t tokens_m;   /* queries in the bucket, in thousandths */
	uint64_t window_ns;  /* when the names period began */
	uint64_t name_bytes; /* sent upstream in it */
};

#define IDLE_FORGET_NS (2 * 86400ull * 1000000000ull) /* longer than the longest period */

int budget__init(struct resolver *r)
{
	return htab__init(&r->budgets, sizeof(struct budget_entry), sizeof(uint64_t), 64);
}

void budget__free(struct resolver *r)
{
	htab__free(&r->budgets);
}

/* sandboxes that spent nothing for two days start afresh (and the gone ones go) */
void budget__sweep(struct resolver *r, uint64_t now)
{
	for (size_t i = 0; i < r->budgets.cap; i++) {
		struct budget_entry *e = htab__at(&r->budgets, i);

		if (e && now - e->last_ns > IDLE_FORGET_NS && now - e->window_ns > IDLE_FORGET_NS &&
		    htab__remove(&r->budgets, &e->sandbox_id))
			i--; /* backward-shift delete moved the next entry here */
	}
}

static const struct policy_budget *budget_of(struct resolver *r, const struct dns_query *q,
					     enum budget_kind kind)
{
	const struct sandbox_entry *s;

	if (!q->who.sandbox_id || !r->engine)
		return NULL;
	s = engine__sandbox(r->engine, q->who.sandbox_id);
	return policy__budget(&r->engine->pol, kind, s ? s->name : "", s ? s->meta : NULL);
}

static struct budget_entry *entry_of(struct resolver *r, const struct dns_query *q, uint64_t now,
				     const struct policy_budget *b)
{
	bool added;
	struct budget_entry *e = htab__insert(&r->budgets, &q->who.sandbox_id, &added);

	if (e && added) {
		e->last_ns = e->window_ns = now;
		e->tokens_m = 2 * b->amount * 1000; /* a full bucket */
	}
	return e;
}

static bool refuse(struct dns_query *q, const struct policy_budget *b)
{
	budget__format(b, q->budget, sizeof(q->budget));
	return true;
}

bool budget__over_queries(struct resolver *r, struct dns_query *q)
{
	const struct policy_budget *b = budget_of(r, q, BUDGET_DNS);
	uint64_t now = now_ns(CLOCK_MONOTONIC), cap, refill;
	struct budget_entry *e;

	if (!b)
		return false;
	e = entry_of(r, q, now, b);
	if (!e)
		return refuse(q, b); /* no memory to count in: fail closed */
	cap = 2 * b->amount * 1000;
	/* N queries a second is N * 1000 thousandths in 1e9 ns */
	refill = (now - e->last_ns) / 1000 * b->amount / 1000;
	e->last_ns = now;
	e->tokens_m = e->tokens_m + refill > cap ? cap : e->tokens_m + refill;
	if (e->tokens_m < 1000) {
		r->st.over_budget++;
		return refuse(q, b);
	}
	e->tokens_m -= 1000;
	return false;
}

bool budget__over_names(struct resolver *r, struct dns_query *q, size_t name_bytes)
{
	const struct policy_budget *b = budget_of(r, q, BUDGET_DNS_NAMES);
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	struct budget_entry *e;

	if (!b)
		return false;
	e = entry_of(r, q, now, b);
	if (!e)
		return refuse(q, b);
	if (now - e->window_ns >= (uint64_t)b->period_s * 1000000000ull) {
		e->window_ns = now;
		e->name_bytes = 0;
	}
	if (e->name_bytes + name_bytes > b->amount) {
		r->st.over_budget++;
		return refuse(q, b);
	}
	e->name_bytes += name_bytes;
	return false;
}

/* Shannon entropy, in bits a character, of the name's part left of what its rule matched
 * (all of it but the last two labels when no rule did); a part of 16 characters or more at 3.5
 * bits or above is flagged: hex runs about 3.7-4, base32 and base64 4.3-5.5, words and
 * host names under 3.3.
 */
void budget__entropy(struct dns_query *q)
{
	const char *name = q->name, *rule = q->rule, *end = name + strlen(name);
	unsigned int count[256] = { 0 }, n = 0;
	double h = 0;

	/* rule__format's "allow domain *.example.com", or "" */
	rule = strstr(rule, " domain ") ? strstr(rule, " domain ") + 8 : NULL;
	if (rule && rule[0] == '*' && rule[1] == '.') {
		size_t rl = strlen(rule + 1); /* ".suffix" */

		end = (size_t)(end - name) >= rl ? end - rl : name;
	} else if (rule && *rule) {
		end = name; /* an exact name: nothing of it is the client's */
	} else {
		for (int dots = 0; end > name && dots < 2; end--)
			dots += end[-1] == '.';
	}
	for (const char *c = name; c < end; c++) {
		if (*c == '.')
			continue;
		count[(unsigned char)*c]++;
		n++;
	}
	for (unsigned int i = 0; i < 256 && n; i++) {
		if (count[i]) {
			double p = (double)count[i] / n;

			h -= p * log2(p);
		}
	}
	q->entropy = (float)h;
	q->high_entropy = n >= 16 && h >= 3.5;
}
