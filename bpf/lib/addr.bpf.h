/* Destination addresses as the socket hooks see them, in one 16-byte form (IPv4 mapped into
 * ::ffff:0:0/96), and the built-in hard-deny set that no rule can open.
 */
#ifndef EGRET_ADDR_BPF_H
#define EGRET_ADDR_BPF_H

#include "lib/common.bpf.h"

struct flow {
	__u32 addr[4]; /* network order; IPv4 as ::ffff:a.b.c.d */
	__u16 port;    /* host order */
	__u8 family;   /* AF_INET / AF_INET6 as the socket used it */
	__u8 protocol; /* IPPROTO_* */
	__u8 mapped;   /* an AF_INET6 socket named an IPv4-mapped address */
};

static __always_inline bool addr_eq(const __u32 *a, const __u32 *b)
{
	return a[0] == b[0] && a[1] == b[1] && a[2] == b[2] && a[3] == b[3];
}

static __always_inline bool addr_is_v4(const __u32 *a)
{
	return a[0] == 0 && a[1] == 0 && a[2] == bpf_htonl(0x0000ffff);
}

/* Load the destination of a connect/sendmsg call; IPv4-mapped IPv6 becomes plain IPv4. family
 * must be a constant: the verifier refuses user_ip6 reads in IPv4 programs, even dead ones.
 */
static __always_inline void flow_from_sock_addr(struct flow *f, struct bpf_sock_addr *ctx,
						const int family)
{
	f->family = family;
	f->protocol = ctx->protocol;
	f->port = bpf_ntohs((__u16)ctx->user_port);
	f->mapped = 0;
	if (family == AF_INET) {
		f->addr[0] = 0;
		f->addr[1] = 0;
		f->addr[2] = bpf_htonl(0x0000ffff);
		f->addr[3] = ctx->user_ip4;
		return;
	}
	/* the verifier wants each 4-byte word of user_ip6 read on its own */
	f->addr[0] = ctx->user_ip6[0];
	f->addr[1] = ctx->user_ip6[1];
	f->addr[2] = ctx->user_ip6[2];
	f->addr[3] = ctx->user_ip6[3];
	f->mapped = addr_is_v4(f->addr);
}

/* 169.254.0.0/16 (link-local and every cloud's metadata service at 169.254.169.254),
 * 100.100.100.200 (Alibaba), 192.0.0.192 (Oracle), 168.63.129.16 (Azure wireserver).
 */
static __always_inline bool v4_hard_denied(__u32 a_be)
{
	__u32 a = bpf_ntohl(a_be);

	return (a & 0xffff0000) == 0xa9fe0000 || a == 0x646464c8 || a == 0xc00000c0 ||
	       a == 0xa83f8110;
}

/* fd00:ec2::254 (AWS IMDS over IPv6), fe80::/10 (link-local), and every IPv6 form that embeds
 * an IPv4 address a gateway or the stack would deliver to it: IPv4-mapped (::ffff:0:0/96),
 * IPv4-compatible (::/96), NAT64 well-known prefix (64:ff9b::/96).
 */
static __always_inline bool addr_hard_denied(const __u32 *a)
{
	__u32 w0 = bpf_ntohl(a[0]);

	if (a[1] == 0 && a[2] == bpf_htonl(0x0000ffff) && w0 == 0)
		return v4_hard_denied(a[3]);
	if (a[1] == 0 && a[2] == 0 && (w0 == 0 || w0 == 0x0064ff9b))
		return v4_hard_denied(a[3]);
	if ((w0 & 0xffc00000) == 0xfe800000)
		return true;
	return w0 == 0xfd000ec2 && a[1] == 0 && a[2] == 0 && a[3] == bpf_htonl(0x254);
}

#endif /* EGRET_ADDR_BPF_H */
