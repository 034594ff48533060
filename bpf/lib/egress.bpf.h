/* Egress enforcement at the socket hooks (connect, sendmsg, socket creation) and the skb
 * backstop, with their reports. Socket hooks remember the last destination they allowed on the
 * socket: a new flow is reported once, and the backstop passes that flow's packets after one
 * compare.
 */
#ifndef EGRET_EGRESS_BPF_H
#define EGRET_EGRESS_BPF_H

#include "lib/dns.bpf.h"
#include "lib/packet.bpf.h"
#include "lib/report.bpf.h"
#include "lib/budget.bpf.h"
#include "lib/sandbox.bpf.h"

#define SOCK_RAW 3

static __always_inline bool meta_is_flow(const struct egret_sock_meta *m, const struct flow *f)
{
	return m->last_proto == f->protocol && m->last_port == f->port &&
	       addr_eq(m->last_addr, f->addr);
}

static __always_inline void meta_set_flow(struct egret_sock_meta *m, const struct flow *f)
{
	__builtin_memcpy(m->last_addr, f->addr, sizeof(m->last_addr));
	m->last_port = f->port;
	m->last_proto = f->protocol;
}

/* Who starts a flow and when, from the header of the record that reports it: the same clock and
 * ids, not asked again.
 */
static __always_inline void flow_start_of(struct egret_flow_start *st,
					  const struct egret_event_hdr *h, __u64 sandbox_id)
{
	st->start_ns = h->ts_ns;
	st->sandbox_id = sandbox_id;
	st->pid = h->pid;
	st->uid = h->uid;
	st->gid = h->gid;
	st->pad = 0;
	__builtin_memcpy(st->comm, h->comm, sizeof(st->comm));
}

/* Start measuring a socket's traffic (its flow record is sent when it closes). start: who
 * started it, from its connect record; NULL when none was sent (the ring full, or the flow
 * reported already), then asked of the task.
 */
static __always_inline void flow_begin(struct bpf_sock_addr *ctx, const struct flow *f,
				       __u64 sandbox_id, const struct egret_flow_start *start)
{
	struct bpf_sock *sk = ctx->sk;
	struct egret_flow *fl;
	__u64 uid_gid;

	if (!sk)
		return;
	/* the socket's flow, created zeroed; one already started is left as it is */
	fl = bpf_sk_storage_get(&sock_flows, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!fl || fl->st.start_ns)
		return;
	if (start) {
		fl->st = *start;
	} else {
		uid_gid = bpf_get_current_uid_gid();
		fl->st.start_ns = bpf_ktime_get_boot_ns();
		fl->st.sandbox_id = sandbox_id;
		fl->st.pid = bpf_get_current_pid_tgid() >> 32;
		fl->st.uid = (__u32)uid_gid;
		fl->st.gid = uid_gid >> 32;
		bpf_get_current_comm(fl->st.comm, sizeof(fl->st.comm));
	}
	fl->family = f->family;
	fl->protocol = f->protocol;
	fl->dport = f->port;
	__builtin_memcpy(fl->daddr, f->addr, sizeof(fl->daddr));
}

/* The peer a socket is connected to (its bpf_sock), as a flow: false when it has none. Reads
 * each field once through a fresh pointer (the verifier refuses loads through a moved one).
 */
static __always_inline bool flow_from_peer(struct flow *f, struct bpf_sock *sk, int family,
					   __u8 protocol)
{
	__u32 port;

	asm volatile("" : "+r"(sk));
	port = sk->dst_port;
	f->family = family;
	f->protocol = protocol;
	f->port = bpf_ntohs((__u16)port);
	f->mapped = 0;
	if (family == AF_INET) {
		f->addr[0] = 0;
		f->addr[1] = 0;
		f->addr[2] = bpf_htonl(0x0000ffff);
		f->addr[3] = sk->dst_ip4;
	} else {
		f->addr[0] = sk->dst_ip6[0];
		f->addr[1] = sk->dst_ip6[1];
		f->addr[2] = sk->dst_ip6[2];
		f->addr[3] = sk->dst_ip6[3];
		f->mapped = addr_is_v4(f->addr);
	}
	return f->port != 0;
}

static __always_inline bool flow_unset(const struct flow *f)
{
	return !f->port && !(f->addr[0] | f->addr[1] | f->addr[3]) &&
	       (f->addr[2] == 0 || f->addr[2] == bpf_htonl(0x0000ffff));
}

/* connect4/6, sendmsg4/6: decide, count, report denials and new flows. A connect is always a
 * new flow; datagrams sent with sendmsg are one flow per socket and destination.
 */
static __always_inline int egress_sock_addr(struct bpf_sock_addr *ctx, const int family, __u8 hook)
{
	const bool datagrams = hook == EGRET_HOOK_SENDMSG4 || hook == EGRET_HOOK_SENDMSG6;
	const struct egret_flow_start *from = NULL;
	struct egret_connect_event *e = NULL;
	struct egret_sock_meta *m = NULL;
	__u64 sandbox_id = sandbox_of_current();
	struct egret_flow_start start;
	struct decision d;
	struct flow f;

	if (sandbox_id == NOT_A_SANDBOX)
		return SK_PASS; /* the host's */
	flow_from_sock_addr(&f, ctx, family);
	/* sendmsg without an address: a connected socket's datagram with ancillary data (IP_TOS,
	 * UDP GSO, QUIC's ECN) runs this hook with 0.0.0.0:0. It goes to the socket's peer, which
	 * its connect judged (or steered to egret's resolver): judge that. A socket with no peer
	 * sends nothing (the kernel refuses it).
	 */
	if (datagrams && flow_unset(&f)) {
		if (!ctx->sk || !flow_from_peer(&f, ctx->sk, family, f.protocol))
			return SK_PASS;
		m = bpf_sk_storage_get(&sock_meta, ctx->sk, 0, 0);
		if (m && m->dns_to_port && bpf_htons(f.port) == m->dns_to_port &&
		    addr_eq(m->dns_to, f.addr))
			/* steered to the resolver at its connect, from the source it recorded */
			return dns_source_kept(ctx, family, hook, &f, sandbox_id);
		m = NULL;
	} else if ((f.port == EGRET_DNS_PORT &&
		    (f.protocol == IPPROTO_UDP || f.protocol == IPPROTO_TCP)) ||
		   dns_names_listener(ctx, &f)) {
		return dns_redirect(ctx, family, hook, &f, sandbox_id);
	}
	policy_decide(&f, sandbox_id, &d);
	counter_verdict(hook, d.verdict);
	if (d.verdict == EGRET_VERDICT_DENY) {
		egress_report(&f, sandbox_id, hook, &d, (__u16)ctx->type);
		return SK_DROP;
	}
	if (datagrams && ctx->sk)
		m = bpf_sk_storage_get(&sock_meta, ctx->sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!m || !meta_is_flow(m, &f)) {
		e = egress_event(&f, sandbox_id, hook, &d, (__u16)ctx->type);
		if (e) {
			/* a TCP flow starts with this record: its close carries the same cookie
			 * (lib/flow.bpf.h), and egretd joins them; the socket needs no storage
			 */
			if (!datagrams && f.protocol == IPPROTO_TCP) {
				e->cookie = bpf_get_socket_cookie(ctx);
				event_submit(e);
				return SK_PASS;
			}
			flow_start_of(&start, &e->hdr, sandbox_id);
			event_submit(e);
			from = &start;
		}
	}
	if (m)
		meta_set_flow(m, &f);
	flow_begin(ctx, &f, sandbox_id, from);
	return SK_PASS;
}

/* Sandboxes may create TCP stream and UDP datagram sockets, and ICMP echo ("ping") sockets,
 * whose packets the skb backstop checks; raw, SCTP, MPTCP and every other inet socket are
 * refused.
 */
static __always_inline bool sock_type_allowed(__u32 family, __u32 type, __u32 protocol)
{
	type &= SOCK_TYPE_MASK;
	if (type == SOCK_STREAM)
		return protocol == IPPROTO_TCP;
	if (type != SOCK_DGRAM)
		return false;
	return protocol == IPPROTO_UDP || (family == AF_INET && protocol == IPPROTO_ICMP) ||
	       (family == AF_INET6 && protocol == IPPROTO_ICMPV6);
}

static __always_inline int egress_sock_create(struct bpf_sock *sk)
{
	struct decision d = { .reason = EGRET_REASON_SOCKET_TYPE };
	/* ctx fields read once, as scalars: the verifier refuses reads through a moved ctx */
	__u32 family = sk->family, type = sk->type, protocol = sk->protocol;
	struct flow f = {};
	__u64 sandbox_id;

	if (sock_type_allowed(family, type, protocol))
		return SK_PASS;
	sandbox_id = sandbox_of_current();
	if (sandbox_id == NOT_A_SANDBOX)
		return SK_PASS; /* the host's */
	d.verdict = policy_audit_mode() ? EGRET_VERDICT_AUDIT : EGRET_VERDICT_DENY;
	f.family = family;
	f.protocol = protocol;
	counter_verdict(EGRET_HOOK_SOCK_CREATE, d.verdict);
	egress_report(&f, sandbox_id, EGRET_HOOK_SOCK_CREATE, &d, type);
	return d.verdict == EGRET_VERDICT_DENY ? SK_DROP : SK_PASS;
}

/* what UDP sockets send (TCP keeps its own counters) */
static __always_inline void flow_count_out(struct __sk_buff *skb, struct bpf_sock *sk,
					   const struct pkt *p)
{
	struct egret_flow *fl = bpf_sk_storage_get(&sock_flows, sk, 0, 0);

	if (!fl)
		return;
	__sync_fetch_and_add(&fl->bytes_out, skb->len);
	__sync_fetch_and_add(&fl->packets_out, 1);
	/* the source, now that the kernel has bound one */
	if (!fl->sport && !p->later_frag) {
		__builtin_memcpy(fl->saddr, p->saddr, sizeof(fl->saddr));
		fl->sport = p->sport;
	}
}

/* Is the packet going where its socket is connected? That destination is one the socket hooks
 * judged (its connect, or egret's own steering to the resolver): a TCP connection's packets,
 * a connected UDP socket's, an accepted connection's replies. After an nftables DNAT, a
 * vxlan's encapsulation or a route's rewrite it is not.
 */
static __always_inline bool skb_to_peer(struct bpf_sock *sk, const struct flow *f)
{
	struct flow peer;

	if (!flow_from_peer(&peer, sk, f->family, f->protocol))
		return false;
	return peer.port == f->port && addr_eq(peer.addr, f->addr);
}

/* Is it the destination the socket hooks last allowed this socket (a datagram's sendmsg), or
 * the resolver listener a DNS query was steered to?
 */
static __always_inline bool skb_known_flow(const struct egret_sock_meta *m, const struct flow *f,
					   bool later_frag)
{
	if (!m)
		return false;
	if (meta_is_flow(m, f) || (later_frag && addr_eq(m->last_addr, f->addr)))
		return true;
	return m->dns_to_port && bpf_htons(f->port) == m->dns_to_port &&
	       addr_eq(m->dns_to, f->addr);
}

/* Every packet a sandbox's socket sends, judged by its destination as it leaves (after NAT,
 * routing and encapsulation): a TCP or UDP packet to the peer its socket is connected to, or
 * to the destination a sendmsg was allowed, passes after one compare; any other packet (a
 * DNAT's rewrite, a vxlan's or other kernel socket's datagram, source routing, ping sockets,
 * whatever a future kernel adds) passes only when the policy allows its destination, and is
 * dropped and reported otherwise. The host's sockets pass untouched.
 */
/* A packet a sandbox's socket sends, after the verdict passed it: SK_DROP over its budget.
 * sandbox_id 0: not known yet. Loopback (ifindex 1 in every namespace) is not egress: it is
 * not counted.
 */
static __always_inline int budget_pass(struct __sk_buff *skb, __u64 sandbox_id)
{
	if (!budget_on() || skb->ifindex == 1)
		return SK_PASS;
	if (!sandbox_id)
		sandbox_id = sandbox_of_skb(skb);
	return budget_charge(sandbox_id, skb->len) ? SK_PASS : SK_DROP;
}

static __always_inline int egress_skb(struct __sk_buff *skb)
{
	struct egret_sock_meta *m = NULL;
	struct bpf_sock *sk = skb->sk;
	bool parsed, l4 = false;
	struct decision d;
	struct pkt p = {};
	__u64 sandbox_id;
	__u8 type = 0;

	if (sk)
		sk = bpf_sk_fullsock(sk);
	parsed = pkt_parse(skb, 0, skb->protocol, &p);
	if (sk) {
		type = sk->type;
		l4 = type != SOCK_RAW &&
		     (sk->protocol == IPPROTO_TCP || sk->protocol == IPPROTO_UDP);
	}
	if (parsed && l4 && !p.later_frag && !p.routes && skb_to_peer(sk, &p.f)) {
		if (p.f.protocol == IPPROTO_UDP)
			flow_count_out(skb, sk, &p);
		return budget_pass(skb, 0);
	}
	sandbox_id = sandbox_of_skb(skb);
	if (sandbox_id == NOT_A_SANDBOX)
		return SK_PASS; /* the host's */
	if (!parsed) {
		decide(&d, policy_audit_mode() ? EGRET_VERDICT_AUDIT : EGRET_VERDICT_DENY,
		       EGRET_REASON_DEFAULT_DENY, 0);
		goto report;
	}
	if (sk)
		m = bpf_sk_storage_get(&sock_meta, sk, 0, l4 ? 0 : BPF_SK_STORAGE_GET_F_CREATE);
	if (!p.routes && skb_known_flow(m, &p.f, p.later_frag)) {
		if (p.f.protocol == IPPROTO_UDP && l4)
			flow_count_out(skb, sk, &p);
		return budget_pass(skb, sandbox_id);
	}
	policy_decide(&p.f, sandbox_id, &d);
	counter_verdict(EGRET_HOOK_SKB_EGRESS, d.verdict);
	if (d.verdict != EGRET_VERDICT_DENY) {
		if (!m || !meta_is_flow(m, &p.f))
			egress_report(&p.f, sandbox_id, EGRET_HOOK_SKB_EGRESS, &d, type);
		if (m)
			meta_set_flow(m, &p.f);
		if (p.f.protocol == IPPROTO_UDP && l4)
			flow_count_out(skb, sk, &p);
		return budget_pass(skb, sandbox_id);
	}
	/* one report a socket: a TCP connection retransmits what is dropped */
	if (!m && sk)
		m = bpf_sk_storage_get(&sock_meta, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (m && m->denied_reported)
		return SK_DROP;
	if (m)
		m->denied_reported = 1;
	egress_report(&p.f, sandbox_id, EGRET_HOOK_SKB_EGRESS, &d, type);
	return SK_DROP;
report:
	counter_verdict(EGRET_HOOK_SKB_EGRESS, d.verdict);
	egress_report(&p.f, sandbox_id, EGRET_HOOK_SKB_EGRESS, &d, 0);
	return d.verdict == EGRET_VERDICT_DENY ? SK_DROP : budget_pass(skb, sandbox_id);
}

#endif /* EGRET_EGRESS_BPF_H */
