/* The audit stream's flow records: when a socket that carried traffic closes, what it carried,
 * between which addresses, for the task that started it. A TCP connect's record carries the
 * socket's cookie and its flow record the same cookie: egretd joins the two, and the socket
 * needs no storage. UDP flows, and a TCP flow whose connect record was lost (the ring full),
 * have their start noted by lib/egress.bpf.h's flow_begin() in the socket's sock_flows storage.
 */
#ifndef EGRET_FLOW_BPF_H
#define EGRET_FLOW_BPF_H

#include "lib/events.bpf.h"
#include "lib/sandbox.bpf.h"

#define CSS_ONLINE_ (1u << 1) /* cgroup_subsys_state.flags: not removed */

/* The flow record of the flow st started, reserved, its header and duration filled: the
 * starter's ids, not those of whoever runs when it ends. NULL when the ring is full (counted).
 */
static __always_inline struct egret_flow_event *flow_record(const struct egret_flow_start *st,
							    __u8 family, __u8 protocol)
{
	struct egret_flow_event *e = event_reserve_for(sizeof(*e), EGRET_EV_FLOW, st->sandbox_id);

	if (!e)
		return NULL;
	event_set_hdr(&e->hdr, EGRET_EV_FLOW, st->sandbox_id, (__u64)st->pid << 32 | st->pid,
		      (__u64)st->gid << 32 | st->uid);
	__builtin_memcpy(e->hdr.comm, st->comm, sizeof(e->hdr.comm));
	e->exec_id = 0;
	e->duration_ns = e->hdr.ts_ns - st->start_ns;
	e->protocol = protocol;
	e->family = family;
	e->by_cookie = 0;
	e->pad = 0;
	e->cookie = 0;
	return e;
}

/* Send it; a DNS socket steered to the resolver: the flow went to the server it asked. */
static __always_inline void flow_send(struct egret_flow_event *e, const struct egret_sock_meta *m)
{
	if (m && m->dns_orig_port) {
		__builtin_memcpy(e->daddr, m->dns_orig, sizeof(e->daddr));
		e->dport = bpf_ntohs(m->dns_orig_port);
	}
	event_submit(e);
}

/* A UDP socket that carried traffic closes (TCP is reported when its socket is destroyed). The
 * release hook cannot read the socket's addresses: flow_begin() and the first packet noted them.
 */
static __always_inline void flow_end_udp(struct bpf_sock *sk)
{
	struct egret_flow *fl = bpf_sk_storage_get(&sock_flows, sk, 0, 0);
	struct egret_flow_event *e;

	if (!fl || fl->protocol != IPPROTO_UDP)
		return;
	e = flow_record(&fl->st, fl->family, IPPROTO_UDP);
	if (!e)
		return;
	e->bytes_out = fl->bytes_out;
	e->bytes_in = fl->bytes_in;
	e->packets_out = fl->packets_out;
	e->packets_in = fl->packets_in;
	__builtin_memcpy(e->saddr, fl->saddr, sizeof(e->saddr));
	__builtin_memcpy(e->daddr, fl->daddr, sizeof(e->daddr));
	e->sport = fl->sport;
	e->dport = fl->dport;
	flow_send(e, bpf_sk_storage_get(&sock_meta, sk, 0, 0));
}

/* A TCP socket goes: its own counters say what it carried. The tracepoint's socket is a BTF
 * pointer: its fields are read with plain loads (the verifier guards them), not a helper call a
 * field, and bpf_skc_to_tcp_sock() gives the tcp_sock's counters the same way.
 */
static __always_inline void flow_end_tcp(struct sock *sk)
{
	struct egret_flow *fl = bpf_sk_storage_get(&sock_flows, sk, 0, 0);
	__u64 cookie = sk->__sk_common.skc_cookie.counter;
	struct egret_flow_start joined = {};
	struct egret_flow_event *e;
	struct tcp_sock *tp;
	__u8 by_cookie = 1;
	__u16 family;

	/* No storage: a flow whose start is its connect record, if that record carried the
	 * socket's cookie. A socket without a cookie was never connected by a sandbox (egret's
	 * connect hook gives it one); one with a cookie (something else asked for it) in no
	 * sandbox is the host's, unless its cgroup was removed since: a container gone while its
	 * connection closes (its registration went with it). That one names its cgroup; egretd
	 * knows whether it held the connect, or whether the cgroup was a sandbox's.
	 */
	if (!fl) {
		struct cgroup *cg = sk->sk_cgrp_data.cgroup;

		if (!cookie || !cg)
			return;
		joined.sandbox_id = sandbox_of_cgroup_btf(cg);
		if (joined.sandbox_id == NOT_A_SANDBOX) {
			if (cg->self.flags & CSS_ONLINE_)
				return;
			joined.sandbox_id = cg->kn->id;
			by_cookie = 2;
		}
	}
	family = sk->__sk_common.skc_family;
	e = flow_record(fl ? &fl->st : &joined, (__u8)family, IPPROTO_TCP);
	if (!e)
		return;
	/* the cookie in either case: egretd forgets the connect it noted */
	e->cookie = cookie;
	if (!fl) {
		e->by_cookie = by_cookie;
		e->duration_ns = 0;
	}
	tp = bpf_skc_to_tcp_sock(sk);
	e->bytes_out = tp ? tp->bytes_acked : 0;
	e->bytes_in = tp ? tp->bytes_received : 0;
	e->packets_out = tp ? tp->segs_out : 0;
	e->packets_in = tp ? tp->segs_in : 0;
	if (family == AF_INET) {
		e->saddr[0] = e->saddr[1] = e->daddr[0] = e->daddr[1] = 0;
		e->saddr[2] = e->daddr[2] = bpf_htonl(0x0000ffff);
		e->saddr[3] = sk->__sk_common.skc_rcv_saddr;
		e->daddr[3] = sk->__sk_common.skc_daddr;
	} else {
		for (int i = 0; i < 4; i++) {
			e->saddr[i] = sk->__sk_common.skc_v6_rcv_saddr.in6_u.u6_addr32[i];
			e->daddr[i] = sk->__sk_common.skc_v6_daddr.in6_u.u6_addr32[i];
		}
	}
	e->sport = sk->__sk_common.skc_num;
	e->dport = bpf_ntohs(sk->__sk_common.skc_dport);
	flow_send(e, bpf_sk_storage_get(&sock_meta, sk, 0, 0));
}

/* what a UDP socket receives (TCP keeps its own counters) */
static __always_inline void flow_count_udp_in(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct egret_flow *fl;

	if (!sk || !(sk = bpf_sk_fullsock(sk)) || sk->protocol != IPPROTO_UDP)
		return;
	fl = bpf_sk_storage_get(&sock_flows, sk, 0, 0);
	if (fl) {
		__sync_fetch_and_add(&fl->bytes_in, skb->len);
		__sync_fetch_and_add(&fl->packets_in, 1);
	}
}

#endif /* EGRET_FLOW_BPF_H */
