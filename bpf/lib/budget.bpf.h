/* Egress budgets (policy 'budget egress', 'budget egress-total', 'budget egress-rate'): the
 * bytes a sandbox sends that its verdict passed, charged to its egret_budget
 * (include/egret/policy.h) at cgroup_skb/egress (lib/egress.bpf.h) and at the tc hook of its
 * own device (lib/device.bpf.h).
 */
#ifndef EGRET_BUDGET_BPF_H
#define EGRET_BUDGET_BPF_H

#include "lib/report.bpf.h"
#include "lib/sandbox.bpf.h"

/* The crossing of a sandbox's egress budget, once per period (or once for the total), or the
 * first drop of a spell over its rate (kind).
 */
static __always_inline void budget_report(__u64 sandbox_id, __u32 kind, __u64 limit, __u64 usage,
					  __u32 period_s)
{
	struct egret_limit_event *e = event_reserve_for(sizeof(*e), EGRET_EV_LIMIT, sandbox_id);

	if (!e)
		return;
	event_fill_hdr_skb(&e->hdr, EGRET_EV_LIMIT, sandbox_id);
	e->exec_id = 0;
	e->usage = usage;
	e->limit = limit;
	e->kind = kind;
	e->period_s = period_s;
	__builtin_memset(e->cgroup, 0, sizeof(e->cgroup));
	event_submit(e);
}

/* len more bytes against count, a budget of limit: within it, or over it (the packet that
 * crosses the line, exactly one for each time the count starts afresh, is reported)
 */
static __always_inline bool budget_over(__u64 *count, __u64 len, __u64 limit, bool *crossed)
{
	__u64 now = __sync_fetch_and_add(count, len) + len;

	*crossed = now > limit && now - len <= limit;
	return now > limit;
}

/* Is any egress budget in force (egress_budget_n: one array load while the policy has none)? */
static __always_inline bool budget_on(void)
{
	__u32 zero = 0;
	__u64 *on = bpf_map_lookup_elem(&egress_budget_n, &zero);

	return on && *on;
}

#define RATE_SPELL_NS 1000000000ull /* a drop this long after the last starts a new spell */

/* len bytes against the rate's bucket at boot time now: false to drop them. Another CPU's packet
 * between the load and the add may be charged from a tat a little behind: a packet more passes
 * at the edge of the burst, never fewer.
 */
static __always_inline bool rate_pass(struct egret_budget *b, __u64 len, __u64 now)
{
	__u64 cost = len * 1000000000ull / b->rate_bps, tat = b->tat_ns, backlog;

	/* idle long enough that the bucket is full: it starts from now */
	if ((__s64)(tat - now) < 0)
		__sync_val_compare_and_swap(&b->tat_ns, tat, now);
	tat = __sync_fetch_and_add(&b->tat_ns, cost);
	backlog = (__s64)(tat - now) > 0 ? tat - now : 0;
	/* a full bucket lets any one packet go (a segmentation-offload packet may be more than the
	 * burst): what follows waits for it to drain
	 */
	if (!backlog || backlog + cost <= b->burst_ns)
		return true;
	__sync_fetch_and_add(&b->tat_ns, -cost); /* a dropped packet spends nothing */
	return false;
}

/* Charge len bytes sandbox_id sends, which its verdict passed, to its egress budget
 * (egret_budget, include/egret/policy.h): false when they would take it over, or go over its
 * rate (drop them).
 */
static __always_inline bool budget_charge(__u64 sandbox_id, __u64 len)
{
	struct egret_budget *b;
	bool crossed = false;
	__u64 w, old, now, refused;

	b = sandbox_id != NOT_A_SANDBOX ? bpf_map_lookup_elem(&egress_budgets, &sandbox_id) : NULL;
	if (!b)
		return true;
	if (b->total_bytes && budget_over(&b->total_used, len, b->total_bytes, &crossed)) {
		if (crossed)
			budget_report(sandbox_id, EGRET_LIMIT_EGRESS_BUDGET, b->total_bytes,
				      b->total_used, 0);
		__sync_fetch_and_add(&b->dropped, 1);
		return false;
	}
	now = bpf_ktime_get_boot_ns();
	if (b->period_bytes && b->period_ns) {
		w = now / b->period_ns;
		old = b->window;
		/* a new period: whoever moves the window on starts the count afresh */
		if (old != w && __sync_val_compare_and_swap(&b->window, old, w) == old)
			__sync_lock_test_and_set(&b->used, 0);
		if (budget_over(&b->used, len, b->period_bytes, &crossed)) {
			if (crossed)
				budget_report(sandbox_id, EGRET_LIMIT_EGRESS_BUDGET,
					      b->period_bytes, b->used,
					      (__u32)(b->period_ns / 1000000000ull));
			__sync_fetch_and_add(&b->dropped, 1);
			return false;
		}
	}
	if (!b->rate_bps || rate_pass(b, len, now))
		return true;
	refused = __sync_fetch_and_add(&b->rate_refused, len) + len;
	if (now - __sync_lock_test_and_set(&b->rate_drop_ns, now) > RATE_SPELL_NS)
		budget_report(sandbox_id, EGRET_LIMIT_EGRESS_RATE, b->rate_bps, refused, 1);
	__sync_fetch_and_add(&b->dropped, 1);
	return false;
}

#endif /* EGRET_BUDGET_BPF_H */
