/* The audit stream's flow records: when a socket that carried traffic closes, what it carried,
 * between which addresses, for the task that started it (noted by lib/egress.bpf.h's
 * flow_begin() in the socket's sock_flows storage).
 */
#ifndef EGRET_FLOW_BPF_H
#define EGRET_FLOW_BPF_H

#include "lib/events.bpf.h"

/* The flow record, from what flow_begin() noted and the socket's own addresses. */
static __always_inline void flow_report(struct egret_flow *fl, __u8 family, __u8 protocol,
					const __u32 *saddr, const __u32 *daddr, __u16 sport,
					__u16 dport, struct egret_sock_meta *m)
{
	struct egret_flow_event *e = event_reserve_for(sizeof(*e), EGRET_EV_FLOW, fl->sandbox_id);

	if (!e)
		return;
	event_fill_hdr(&e->hdr, EGRET_EV_FLOW, fl->sandbox_id);
	/* who started the flow, not whoever runs when it ends */
	event_hdr_task(&e->hdr, fl->pid, fl->pid);
	e->hdr.uid = fl->uid;
	__builtin_memcpy(e->hdr.comm, fl->comm, sizeof(e->hdr.comm));
	e->exec_id = 0;
	e->duration_ns = bpf_ktime_get_boot_ns() - fl->start_ns;
	e->bytes_out = fl->bytes_out;
	e->bytes_in = fl->bytes_in;
	e->packets_out = fl->packets_out;
	e->packets_in = fl->packets_in;
	e->protocol = protocol;
	e->family = family;
	e->sport = sport;
	e->dport = dport;
	__builtin_memcpy(e->saddr, saddr, sizeof(e->saddr));
	__builtin_memcpy(e->daddr, daddr, sizeof(e->daddr));
	/* a DNS socket steered to the resolver: the flow went to the server it asked */
	if (m && m->dns_orig_port) {
		__builtin_memcpy(e->daddr, m->dns_orig, sizeof(e->daddr));
		e->dport = bpf_ntohs(m->dns_orig_port);
	}
	e->pad[0] = e->pad[1] = 0;
	event_submit(e);
}

/* A UDP socket that carried traffic closes (TCP is reported when its socket is destroyed). The
 * release hook cannot read the socket's addresses: flow_begin() and the first packet noted them.
 */
static __always_inline void flow_end_udp(struct bpf_sock *sk)
{
	struct egret_flow *fl = bpf_sk_storage_get(&sock_flows, sk, 0, 0);

	if (!fl || fl->protocol != IPPROTO_UDP)
		return;
	flow_report(fl, fl->family, fl->protocol, fl->saddr, fl->daddr, fl->sport, fl->dport,
		    bpf_sk_storage_get(&sock_meta, sk, 0, 0));
}

/* A TCP socket goes: its own counters say what it carried. */
static __always_inline void flow_end_tcp(struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 saddr[4] = { 0, 0, bpf_htonl(0x0000ffff), 0 },
	      daddr[4] = { 0, 0, bpf_htonl(0x0000ffff), 0 };
	struct egret_flow *fl;
	__u16 family;

	fl = bpf_sk_storage_get(&sock_flows, sk, 0, 0);
	if (!fl)
		return;
	fl->bytes_out = BPF_CORE_READ(tp, bytes_acked);
	fl->bytes_in = BPF_CORE_READ(tp, bytes_received);
	fl->packets_out = BPF_CORE_READ(tp, segs_out);
	fl->packets_in = BPF_CORE_READ(tp, segs_in);
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family == AF_INET) {
		saddr[3] = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		daddr[3] = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	} else {
		BPF_CORE_READ_INTO(&saddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&daddr, sk, __sk_common.skc_v6_daddr);
	}
	flow_report(fl, (__u8)family, IPPROTO_TCP, saddr, daddr,
		    BPF_CORE_READ(sk, __sk_common.skc_num),
		    bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport)),
		    bpf_sk_storage_get(&sock_meta, sk, 0, 0));
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
