/* The connect record: one per denied attempt and per newly allowed flow. */
#ifndef EGRET_REPORT_BPF_H
#define EGRET_REPORT_BPF_H

#include "lib/events.bpf.h"
#include "lib/policy.bpf.h"

/* The record of a decision, reserved and filled; the caller adds what its hook knows and
 * submits it. A device's programs run for no task of the sandbox: their header names none.
 */
static __always_inline struct egret_connect_event *egress_event(const struct flow *f,
								__u64 sandbox_id, __u8 hook,
								const struct decision *d,
								__u16 sock_type)
{
	struct egret_connect_event *e;

	e = event_reserve_for(sizeof(*e), EGRET_EV_CONNECT, sandbox_id);
	if (!e)
		return NULL;
	if (hook == EGRET_HOOK_SKB_EGRESS) {
		event_fill_hdr_skb(&e->hdr, EGRET_EV_CONNECT, sandbox_id);
	} else if (hook == EGRET_HOOK_DEVICE) {
		event_set_hdr(&e->hdr, EGRET_EV_CONNECT, sandbox_id, 0, 0);
		__builtin_memset(e->hdr.comm, 0, sizeof(e->hdr.comm));
	} else {
		event_fill_hdr(&e->hdr, EGRET_EV_CONNECT, sandbox_id);
	}
	__builtin_memcpy(e->daddr, f->addr, sizeof(e->daddr));
	e->rule_id = d->rule_id;
	e->dport = f->port;
	e->family = f->family;
	e->protocol = f->protocol;
	e->hook = hook;
	e->verdict = d->verdict;
	e->reason = d->reason;
	e->v4_mapped = f->mapped;
	e->sock_type = sock_type;
	e->killed = 0;
	e->pad = 0;
	e->ifindex = 0;
	__builtin_memset(e->saddr, 0, sizeof(e->saddr));
	e->sport = 0;
	e->pad2 = 0;
	e->cookie = 0;
	return e;
}

static __always_inline void egress_report(const struct flow *f, __u64 sandbox_id, __u8 hook,
					  const struct decision *d, __u16 sock_type)
{
	struct egret_connect_event *e = egress_event(f, sandbox_id, hook, d, sock_type);

	if (e)
		event_submit(e);
}

#endif /* EGRET_REPORT_BPF_H */
