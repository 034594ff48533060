/* The egress decision: hard-deny set, then the rule trie (global scope and the sandbox's
 * scope, one lookup each), deny before allow, default deny; audit mode turns a rule denial into
 * a reported pass. Anything missing (no trie, unregistered sandbox) denies.
 */
#ifndef EGRET_POLICY_BPF_H
#define EGRET_POLICY_BPF_H

#include "lib/addr.bpf.h"
#include "lib/maps.bpf.h"

struct decision {
	__u32 rule_id;
	__u8 verdict; /* enum egret_verdict */
	__u8 reason;  /* enum egret_reason */
};

static __always_inline void *policy_trie(void)
{
	__u32 zero = 0;

	return bpf_map_lookup_elem(&policy_v1, &zero);
}

static __always_inline struct egret_policy_val *policy_lookup(void *trie, __u64 scope,
							      const __u32 *addr)
{
	struct egret_policy_key key;

	key.prefixlen = EGRET_SCOPE_BITS + 128;
	key.scope[0] = (__u32)scope;
	key.scope[1] = scope >> 32;
	__builtin_memcpy(key.addr, addr, sizeof(key.addr));
	return bpf_map_lookup_elem(trie, &key);
}

/* The policy mode, for hooks that have no destination (socket creation, syscalls). */
static __always_inline bool policy_audit_mode(void)
{
	struct egret_policy_val *g;
	__u32 any[4] = {};
	void *trie = policy_trie();

	if (!trie)
		return false;
	g = policy_lookup(trie, 0, any);
	return g && (g->flags & EGRET_POL_AUDIT);
}

static __always_inline bool port_rule_matches(const struct egret_port_rule *r, __u8 protocol,
					      __u16 port)
{
	if (r->proto && r->proto != protocol &&
	    !(r->proto == IPPROTO_ICMP && protocol == IPPROTO_ICMPV6))
		return false;
	return port >= r->port_lo && port <= r->port_hi;
}

/* The first rule of v with this action that matches the protocol and port; 0 when none. A
 * global function, which the verifier checks once, on its own: inlined into the four calls of a
 * decision, the rule loop took the skb backstop past 800,000 verified instructions on 6.18 and
 * past the 1,000,000 limit on 6.1.
 */
__noinline __u32 match_rules(const struct egret_policy_val *v, __u32 protocol, __u32 port,
			     __u32 action)
{
	if (!v)
		return 0;
	for (int i = 0; i < EGRET_PORT_RULES; i++) {
		if (i >= v->nrules)
			break;
		if (v->rules[i].action == action &&
		    port_rule_matches(&v->rules[i], (__u8)protocol, (__u16)port))
			return v->rules[i].rule_id ? v->rules[i].rule_id : 1;
	}
	return 0;
}

static __always_inline void decide(struct decision *d, __u8 verdict, __u8 reason, __u32 rule_id)
{
	d->verdict = verdict;
	d->reason = reason;
	d->rule_id = rule_id;
}

/* An address an allowed DNS answer gave this sandbox, and not yet expired. */
static __always_inline bool dns_allowed(__u64 sandbox_id, const __u32 *addr)
{
	struct egret_dns_allow_key k = { .sandbox_id = sandbox_id };
	struct egret_dns_allow *v;

	__builtin_memcpy(k.addr, addr, sizeof(k.addr));
	v = bpf_map_lookup_elem(&dns_allow, &k);
	return v && v->expires_ns > bpf_ktime_get_boot_ns();
}

static __always_inline void policy_match(void *trie, const struct flow *f, __u64 sandbox_id,
					 struct decision *d)
{
	struct egret_policy_val *g, *s = NULL;
	__u32 id;

	g = policy_lookup(trie, 0, f->addr);
	if (g && (g->flags & EGRET_POL_AUDIT))
		d->verdict = EGRET_VERDICT_AUDIT; /* what a denial becomes */
	if (sandbox_id) {
		struct egret_sandbox *sb = bpf_map_lookup_elem(&sandboxes, &sandbox_id);

		if (!sb) {
			decide(d, d->verdict, EGRET_REASON_SANDBOX_PENDING, 0);
			return;
		}
		if (sb->flags & EGRET_SB_RULES)
			s = policy_lookup(trie, sandbox_id, f->addr);
	}
	if ((id = match_rules(g, f->protocol, f->port, EGRET_ACT_DENY)) ||
	    (id = match_rules(s, f->protocol, f->port, EGRET_ACT_DENY))) {
		decide(d, d->verdict, EGRET_REASON_DENY_RULE, id);
		return;
	}
	if ((id = match_rules(s, f->protocol, f->port, EGRET_ACT_ALLOW)) ||
	    (id = match_rules(g, f->protocol, f->port, EGRET_ACT_ALLOW))) {
		decide(d, EGRET_VERDICT_ALLOW, EGRET_REASON_ALLOW_RULE, id);
		return;
	}
	if (dns_allowed(sandbox_id, f->addr)) {
		decide(d, EGRET_VERDICT_ALLOW, EGRET_REASON_DNS, 0);
		return;
	}
	decide(d, d->verdict, EGRET_REASON_DEFAULT_DENY, 0);
}

static __always_inline void policy_decide_in(const struct flow *f, __u64 sandbox_id,
					     struct decision *d)
{
	void *trie;

	decide(d, EGRET_VERDICT_DENY, EGRET_REASON_NO_POLICY, 0);
	if (addr_hard_denied(f->addr)) {
		d->reason = EGRET_REASON_METADATA;
		return;
	}
	trie = policy_trie();
	if (trie)
		policy_match(trie, f, sandbox_id, d);
}

/* The decision for a destination of a sandbox, in *d; its verdict returned. A global function,
 * verified once on its own (as match_rules): the skb backstop, the socket hooks and a device's
 * program, which decides for each of its sandboxes, call it without taking its paths into
 * theirs.
 */
__noinline int policy_decide(const struct flow *f, __u64 sandbox_id, struct decision *d)
{
	if (!f || !d)
		return 0;
	policy_decide_in(f, sandbox_id, d);
	return d->verdict;
}

#endif /* EGRET_POLICY_BPF_H */
