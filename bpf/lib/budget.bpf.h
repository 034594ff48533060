/* Egress budgets (policy 'budget egress', 'budget egress-total'): the bytes a sandbox sends
 * that its verdict passed, charged to its egret_budget (include/egret/policy.h) at
 * cgroup_skb/egress (lib/egress.bpf.h) and at the tc hook of its own device (lib/device.bpf.h).
 */
#ifndef EGRET_BUDGET_BPF_H
#define EGRET_BUDGET_BPF_H

#include "lib/report.bpf.h"
#include "lib/sandbox.bpf.h"

/* The crossing of a sandbox's egress budget, once per period (or once for the total). */
static __always_inline void budget_report(__u64 sandbox_id, __u64 limit, __u64 usage,
					  __u32 period_s)
{
	struct egret_limit_event *e = event_reserve_for(sizeof(*e), EGRET_EV_LIMIT, sandbox_id);

	if (!e)
		return;
	event_fill_hdr_skb(&e->hdr, EGRET_EV_LIMIT, sandbox_id);
	e->exec_id = 0;
	e->usage = usage;
	e->limit = limit;
	e->kind = EGRET_LIMIT_EGRESS_BUDGET;
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

/* Charge len bytes sandbox_id sends, which its verdict passed, to its egress budget
 * (egret_budget, include/egret/policy.h): false when they would take it over (drop them).
 */
static __always_inline bool budget_charge(__u64 sandbox_id, __u64 len)
{
	struct egret_budget *b;
	bool crossed = false;
	__u64 w, old;

	b = sandbox_id != NOT_A_SANDBOX ? bpf_map_lookup_elem(&egress_budgets, &sandbox_id) : NULL;
	if (!b)
		return true;
	if (b->total_bytes && budget_over(&b->total_used, len, b->total_bytes, &crossed)) {
		if (crossed)
			budget_report(sandbox_id, b->total_bytes, b->total_used, 0);
		__sync_fetch_and_add(&b->dropped, 1);
		return false;
	}
	if (!b->period_bytes || !b->period_ns)
		return true;
	w = bpf_ktime_get_boot_ns() / b->period_ns;
	old = b->window;
	/* a new period: whoever moves the window on starts the count afresh */
	if (old != w && __sync_val_compare_and_swap(&b->window, old, w) == old)
		__sync_lock_test_and_set(&b->used, 0);
	if (!budget_over(&b->used, len, b->period_bytes, &crossed))
		return true;
	if (crossed)
		budget_report(sandbox_id, b->period_bytes, b->used,
			      (__u32)(b->period_ns / 1000000000ull));
	__sync_fetch_and_add(&b->dropped, 1);
	return false;
}

#endif /* EGRET_BUDGET_BPF_H */
