/* DNS redirection (include/egret/dns.h): connect and sendmsg to port 53 are steered to egret's
 * resolver listener in the caller's network namespace, recvmsg and getpeername are steered
 * back, and the resolver is told who asked.
 */
#ifndef EGRET_DNS_BPF_H
#define EGRET_DNS_BPF_H

#include "lib/report.bpf.h"

static __always_inline void netns_report(__u64 cookie, __u64 sandbox_id)
{
	struct egret_netns_event *e;
	__u64 now = bpf_ktime_get_boot_ns(), *last;

	/* once per namespace and second: a client retrying must not flood the ring */
	last = bpf_map_lookup_elem(&netns_reported, &cookie);
	if (last && now - *last < 1000000000ull)
		return;
	bpf_map_update_elem(&netns_reported, &cookie, &now, BPF_ANY);
	e = event_reserve_for(sizeof(*e), EGRET_EV_NETNS, sandbox_id);
	if (!e)
		return;
	event_fill_hdr(&e->hdr, EGRET_EV_NETNS, sandbox_id);
	e->netns = cookie;
	event_submit(e);
}

/* The verifier refuses loads through a moved socket pointer; keep clang from sharing one. */
static __always_inline __u32 sock_src_port(struct bpf_sock *sk)
{
	asm volatile("" : "+r"(sk));
	return sk->src_port;
}

/* The verifier refuses loads through a moved socket pointer; each field read on its own. */
static __always_inline __u32 sock_src_ip4(struct bpf_sock *sk)
{
	asm volatile("" : "+r"(sk));
	return sk->src_ip4;
}

static __always_inline void sock_src_ip6(struct bpf_sock *sk, __u32 *a)
{
	asm volatile("" : "+r"(sk));
	a[0] = sk->src_ip6[0];
	asm volatile("" : "+r"(sk));
	a[1] = sk->src_ip6[1];
	asm volatile("" : "+r"(sk));
	a[2] = sk->src_ip6[2];
	asm volatile("" : "+r"(sk));
	a[3] = sk->src_ip6[3];
}

/* The source address a sendmsg's IP_PKTINFO / IPV6_PKTINFO names (all zero: none). */
static __always_inline void msg_src(struct bpf_sock_addr *ctx, const int family, __u8 hook,
				    __u32 *a)
{
	a[0] = a[1] = a[2] = a[3] = 0;
	if (family == AF_INET && hook == EGRET_HOOK_SENDMSG4) {
		a[3] = ctx->msg_src_ip4;
		if (a[3])
			a[2] = bpf_htonl(0x0000ffff);
	} else if (family == AF_INET6 && hook == EGRET_HOOK_SENDMSG6) {
		a[0] = ctx->msg_src_ip6[0];
		a[1] = ctx->msg_src_ip6[1];
		a[2] = ctx->msg_src_ip6[2];
		a[3] = ctx->msg_src_ip6[3];
	}
}

/* The socket's own source address (all zero: not bound to one yet), IPv4 mapped. */
static __always_inline void sock_src(struct bpf_sock *sk, const int family, __u32 *a)
{
	if (family == AF_INET) {
		a[0] = a[1] = 0;
		a[3] = sock_src_ip4(sk);
		a[2] = a[3] ? bpf_htonl(0x0000ffff) : 0;
	} else {
		sock_src_ip6(sk, a);
	}
}

static __always_inline bool addr_unset(const __u32 *a)
{
	return !(a[0] | a[1] | a[2] | a[3]);
}

/* Does the sendmsg's PKTINFO name a source other than its socket's? For IPv4 any change counts,
 * 0 included (the kernel then picks the source: 127.0.0.1 for the listener, whatever the
 * socket is bound to); an IPv6 PKTINFO of :: leaves the socket's. Such a query would reach the
 * resolver from an address and port another socket may have used: refused.
 */
static __always_inline bool dns_source_named(struct bpf_sock_addr *ctx, struct bpf_sock *sk,
					     const int family, __u8 hook)
{
	__u32 named[4], own[4];

	if (hook != EGRET_HOOK_SENDMSG4 && hook != EGRET_HOOK_SENDMSG6)
		return false;
	msg_src(ctx, family, hook, named);
	sock_src(sk, family, own);
	if (family == AF_INET6 && addr_unset(named))
		return false;
	return !addr_eq(named, own);
}

/* The source the query will carry as the listener sees it (IPv4 mapped), once
 * dns_source_named() is false: the socket's bound one, else the listener's own (the kernel's
 * choice for a loopback destination). The resolver looks the client up by it and the port.
 */
static __always_inline void dns_source(struct bpf_sock *sk, const int family, const __u32 *to,
				       __u32 *src)
{
	sock_src(sk, family, src);
	if (addr_unset(src) ||
	    (!src[0] && !src[1] && src[2] == bpf_htonl(0x0000ffff) && !src[3])) /* 0.0.0.0 */
		__builtin_memcpy(src, to, 16);
}

/* Where to steer this socket: the listener's address as the socket can reach it. */
static __always_inline bool dns_target(const struct egret_dns_listener *l, const struct flow *f,
				       __u32 *to, __u16 *port)
{
	if (f->family == AF_INET || f->mapped) {
		to[0] = 0;
		to[1] = 0;
		to[2] = bpf_htonl(0x0000ffff);
		to[3] = l->addr4;
		*port = l->port4;
		return l->port4 != 0;
	}
	__builtin_memcpy(to, l->addr6, 16);
	*port = l->port6;
	return l->port6 != 0;
}

/* Bind a connecting socket to a port now, so the resolver can tell from the source address and
 * port who asked. bpf_bind() with port 0 defers the port to connect (IP_BIND_ADDRESS_NO_PORT),
 * so pick one from the ephemeral range and try again if it is taken.
 */
static __always_inline int dns_bind(struct bpf_sock_addr *ctx, const int family, const __u32 *to)
{
	int err = -1;

	for (int i = 0; i < 8 && err; i++) {
		__u16 port = bpf_htons(32768 + bpf_get_prandom_u32() % 28232);

		if (family == AF_INET) {
			struct sockaddr_in sa = { .sin_family = AF_INET,
						  .sin_port = port,
						  .sin_addr.s_addr = to[3] };

			err = bpf_bind(ctx, (struct sockaddr *)&sa, sizeof(sa));
		} else {
			struct sockaddr_in6 sa = { .sin6_family = AF_INET6, .sin6_port = port };

			__builtin_memcpy(&sa.sin6_addr, to, 16);
			err = bpf_bind(ctx, (struct sockaddr *)&sa, sizeof(sa));
		}
	}
	return err;
}

static __always_inline void dns_rewrite(struct bpf_sock_addr *ctx, const int family,
					const __u32 *addr, __u16 port_be)
{
	if (family == AF_INET) {
		ctx->user_ip4 = addr[3];
	} else {
		ctx->user_ip6[0] = addr[0];
		ctx->user_ip6[1] = addr[1];
		ctx->user_ip6[2] = addr[2];
		ctx->user_ip6[3] = addr[3];
	}
	ctx->user_port = port_be;
}

/* Does the value say what c says (its time aside)? */
static __always_inline bool dns_client_same(const struct egret_dns_client *a,
					    const struct egret_dns_client *c)
{
	const __u64 *x = (const __u64 *)a->orig_addr, *y = (const __u64 *)c->orig_addr;
	const __u32 *xc = (const __u32 *)a->comm, *yc = (const __u32 *)c->comm; /* 4-aligned */

	_Static_assert(sizeof(a->comm) == 16, "comm compared as four words");
	return a->sandbox_id == c->sandbox_id && x[0] == y[0] && x[1] == y[1] &&
	       a->orig_port == c->orig_port && a->pid == c->pid && a->tid == c->tid &&
	       xc[0] == yc[0] && xc[1] == yc[1] && xc[2] == yc[2] && xc[3] == yc[3];
}

/* Tell the resolver who sends from this socket: a value that changes is written, then its
 * slot's counter raised (include/egret/dns.h), with a full barrier between (the atomic's
 * fetched form), before the datagram or connect goes on; an unchanged one is left as it is.
 * Skipping is safe because the value holds the thread: two writers of the same value are
 * one thread, never at once. 0, or -1 when the value could not be written (the query is
 * then refused: the resolver would take it for an older sender's).
 */
static __always_inline int dns_client_write(const struct egret_dns_client_key *ck,
					    const struct egret_dns_client *c)
{
	struct egret_dns_client *old = bpf_map_lookup_elem(&dns_clients, ck);
	__u32 slot = egret_dns_client_slot(ck);
	__u64 *gen, was;

	if (old && dns_client_same(old, c))
		return 0;
	if (bpf_map_update_elem(&dns_clients, ck, c, BPF_ANY))
		return -1;
	gen = bpf_map_lookup_elem(&dns_client_gen, &slot);
	if (gen) {
		was = __sync_fetch_and_add(gen, 1);
		asm volatile("" : "+r"(was)); /* used: the fetching, fully ordered form */
	}
	return 0;
}

/* Does the socket name its namespace's listener itself: 127.0.0.1 or ::1 (or 0.0.0.0 or ::,
 * which the kernel sends to them) and the listener's port? Such a query is steered and
 * recorded as one to port 53 is: otherwise a sandbox allowed to reach loopback could send
 * from a port another sandbox's query used and be answered as that sandbox (dns_clients is
 * keyed by address and port and outlives the socket).
 */
static __always_inline bool dns_names_listener(struct bpf_sock_addr *ctx, const struct flow *f)
{
	const struct egret_dns_listener *l;
	__u64 cookie;
	bool v4, v6;

	if (f->addr[0] || f->addr[1] || (f->protocol != IPPROTO_UDP && f->protocol != IPPROTO_TCP))
		return false;
	if (f->addr[2] == bpf_htonl(0x0000ffff)) {
		if (f->addr[3] && f->addr[3] != bpf_htonl(0x7f000001))
			return false;
	} else if (f->addr[2] || (f->addr[3] && f->addr[3] != bpf_htonl(1))) {
		return false;
	}
	cookie = bpf_get_netns_cookie(ctx);
	l = bpf_map_lookup_elem(&dns_listeners, &cookie);
	if (!l)
		return false;
	v4 = l->port4 && f->port == bpf_ntohs(l->port4);
	v6 = l->port6 && f->port == bpf_ntohs(l->port6);
	/* 0.0.0.0 or :: may reach either: a socket bound to a v4-mapped address connecting to ::
	 * is connected to 127.0.0.1
	 */
	if (!f->addr[3])
		return v4 || v6;
	return f->addr[2] ? v4 : v6;
}

/* A query to port 53: steer it to the resolver, or refuse it when the namespace has none. */
static __always_inline int dns_redirect(struct bpf_sock_addr *ctx, const int family, __u8 hook,
					const struct flow *f, __u64 sandbox_id)
{
	const bool connecting = hook == EGRET_HOOK_CONNECT4 || hook == EGRET_HOOK_CONNECT6;
	struct egret_dns_client_key ck = { .proto = f->protocol };
	struct egret_dns_client c = { .sandbox_id = sandbox_id };
	struct decision d = { .verdict = EGRET_VERDICT_DENY, .reason = EGRET_REASON_NO_RESOLVER };
	struct egret_dns_listener *l;
	struct egret_sock_meta *m;
	struct bpf_sock *sk;
	__u64 cookie = bpf_get_netns_cookie(ctx);
	__u16 port;
	__u32 to[4];
	bool again;

	l = bpf_map_lookup_elem(&dns_listeners, &cookie);
	sk = ctx->sk;
	if (!l || !sk || !dns_target(l, f, to, &port))
		goto refuse;
	m = bpf_sk_storage_get(&sock_meta, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (!m)
		goto refuse;
	if (connecting && !sock_src_port(sk) && dns_bind(ctx, family, to))
		goto refuse;
	if (dns_source_named(ctx, sk, family, hook)) {
		d.reason = EGRET_REASON_DNS_SOURCE;
		goto refuse;
	}
	/* a socket steered at its connect that names the listener again (a dual-stack socket's
	 * send to a v4-mapped peer comes here with its peer) asked the server it asked then
	 */
	again = m->dns_orig_port && m->dns_to_port == port && addr_eq(m->dns_to, to) &&
		bpf_htons(f->port) == port && addr_eq(f->addr, to);
	ck.netns = cookie;
	ck.port = (__u16)sock_src_port(sk);
	dns_source(sk, family, to, ck.addr);
	c.ts_ns = bpf_ktime_get_boot_ns();
	if (again) {
		__builtin_memcpy(c.orig_addr, m->dns_orig, sizeof(c.orig_addr));
		c.orig_port = bpf_ntohs(m->dns_orig_port);
	} else {
		__builtin_memcpy(c.orig_addr, f->addr, sizeof(c.orig_addr));
		c.orig_port = f->port;
	}
	c.pid = bpf_get_current_pid_tgid() >> 32;
	c.tid = (__u32)bpf_get_current_pid_tgid();
	bpf_get_current_comm(c.comm, sizeof(c.comm));
	if (dns_client_write(&ck, &c))
		goto refuse; /* as if there were no resolver: it cannot be told who asks */
	if (!again) {
		__builtin_memcpy(m->dns_orig, f->addr, sizeof(m->dns_orig));
		m->dns_orig_port = bpf_htons(f->port);
		__builtin_memcpy(m->dns_to, to, sizeof(m->dns_to));
		m->dns_to_port = port;
	}
	dns_rewrite(ctx, family, to, port);
	counter_verdict(hook, EGRET_VERDICT_ALLOW);
	return SK_PASS;
refuse:
	counter_verdict(hook, d.verdict);
	egress_report(f, sandbox_id, hook, &d, (__u16)ctx->type);
	netns_report(cookie, sandbox_id);
	return SK_DROP;
}

/* A datagram of a socket steered at its connect, sent with ancillary data: one whose PKTINFO
 * names a source other than the socket's would reach the resolver from another socket's
 * address and port, to be taken for that socket's sandbox. Refused.
 */
static __always_inline int dns_source_kept(struct bpf_sock_addr *ctx, const int family, __u8 hook,
					   const struct flow *f, __u64 sandbox_id)
{
	struct decision d = { .verdict = EGRET_VERDICT_DENY, .reason = EGRET_REASON_DNS_SOURCE };
	struct bpf_sock *sk = ctx->sk;

	if (!sk || !dns_source_named(ctx, sk, family, hook))
		return SK_PASS;
	counter_verdict(hook, d.verdict);
	egress_report(f, sandbox_id, hook, &d, (__u16)ctx->type);
	return SK_DROP;
}

/* recvmsg / getpeername: a redirected socket sees the server it asked, not the listener. */
static __always_inline int dns_unrewrite(struct bpf_sock_addr *ctx, const int family)
{
	struct egret_sock_meta *m;
	__u32 from[4];

	if (!ctx->sk)
		return 1;
	m = bpf_sk_storage_get(&sock_meta, ctx->sk, 0, 0);
	if (!m || !m->dns_orig_port || ctx->user_port != m->dns_to_port)
		return 1;
	if (family == AF_INET) {
		if (ctx->user_ip4 != m->dns_to[3])
			return 1;
	} else {
		from[0] = ctx->user_ip6[0];
		from[1] = ctx->user_ip6[1];
		from[2] = ctx->user_ip6[2];
		from[3] = ctx->user_ip6[3];
		if (!addr_eq(from, m->dns_to))
			return 1;
	}
	dns_rewrite(ctx, family, m->dns_orig, m->dns_orig_port);
	return 1;
}

#endif /* EGRET_DNS_BPF_H */
