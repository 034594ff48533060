/* The egress decision and its report. A verdict is computed once per call and reported as an
 * egret_connect_event; the caller turns it into SK_PASS / SK_DROP.
 */
#ifndef EGRET_EGRESS_BPF_H
#define EGRET_EGRESS_BPF_H

#include "lib/addr.bpf.h"
#include "lib/events.bpf.h"
#include "lib/sandbox.bpf.h"

struct decision {
	__u32 rule_id;
	__u8 verdict; /* enum egret_verdict */
	__u8 reason;  /* enum egret_reason */
};

static __always_inline void egress_decide(const struct flow *f, __u64 sandbox_id,
					  struct decision *d)
{
	d->rule_id = 0;
	if (addr_hard_denied(f->addr)) {
		d->verdict = EGRET_VERDICT_DENY;
		d->reason = EGRET_REASON_METADATA;
		return;
	}
	d->verdict = EGRET_VERDICT_ALLOW;
	d->reason = EGRET_REASON_ALLOW_RULE;
}

static __always_inline void egress_report(const struct flow *f, __u64 sandbox_id, __u8 hook,
					  const struct decision *d)
{
	struct egret_connect_event *e;

	e = event_reserve(sizeof(*e));
	if (!e)
		return;
	event_fill_hdr(&e->hdr, EGRET_EV_CONNECT, sandbox_id);
	__builtin_memcpy(e->daddr, f->addr, sizeof(e->daddr));
	e->rule_id = d->rule_id;
	e->dport = f->port;
	e->family = f->family;
	e->protocol = f->protocol;
	e->hook = hook;
	e->verdict = d->verdict;
	e->reason = d->reason;
	e->v4_mapped = f->mapped;
	__builtin_memset(e->pad, 0, sizeof(e->pad));
	bpf_ringbuf_submit(e, 0);
}

/* Decide, count, report denials; return what the cgroup hook returns. */
static __always_inline int egress_sock_addr(struct bpf_sock_addr *ctx, const int family, __u8 hook)
{
	struct decision d;
	struct flow f;
	__u64 sandbox_id;

	flow_from_sock_addr(&f, ctx, family);
	sandbox_id = sandbox_of_sock(ctx->sk);
	egress_decide(&f, sandbox_id, &d);
	if (d.verdict == EGRET_VERDICT_ALLOW) {
		counter_inc(EGRET_CNT_ALLOWED);
		return SK_PASS;
	}
	counter_inc(d.verdict == EGRET_VERDICT_DENY ? EGRET_CNT_DENIED : EGRET_CNT_AUDITED);
	egress_report(&f, sandbox_id, hook, &d);
	return d.verdict == EGRET_VERDICT_DENY ? SK_DROP : SK_PASS;
}

#endif /* EGRET_EGRESS_BPF_H */
