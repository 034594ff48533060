/* A packet's IP header read from an skb, at an offset: 0 in the cgroup backstop (the network
 * header), after the Ethernet header on a device (lib/device.bpf.h). IPv6 extension headers
 * are walked to the upper-layer protocol; fragments are told apart.
 */
#ifndef EGRET_PACKET_BPF_H
#define EGRET_PACKET_BPF_H

#include "lib/addr.bpf.h"

#define IP_MF	      0x2000
#define IP_OFFSET     0x1fff

#define IPV6_HOPOPTS  0
#define IPV6_ROUTING  43
#define IPV6_FRAGMENT 44
#define IPV6_DSTOPTS  60
/* extension headers walked: what Linux sends (hop-by-hop, destination options, routing,
 * fragment, destination options) and one more; a longer chain is not judged but dropped
 */
#define IPV6_EXT_MAX 6

struct pkt {
	struct flow f;	 /* the destination: family, protocol, address, port (0: none, or a
			  * later fragment) */
	__u32 saddr[4];	 /* network order, IPv4 mapped */
	__u32 frag_id;	 /* IPv4 identification, IPv6 fragment header id */
	__u16 sport;	 /* host order */
	__u16 l3;	 /* offset of the IP header */
	__u16 l4;	 /* offset of the upper-layer header */
	__u8 later_frag; /* a fragment after the first: no upper-layer header */
	__u8 fragment;	 /* a fragment, first or later */
	__u8 routes;	 /* IPv4 options or IPv6 headers that route or carry options: the
			  * header's destination may be a first hop */
	__u8 icmp_type;	 /* ICMP and ICMPv6 */
};

/* Headers further than this into a packet are always copied by the helper (a mask: 2^n - 1). */
#define PKT_DIRECT_MAX 255

/* n bytes at off into to: read straight from the packet's linear part when they lie there (a
 * socket's own packets' headers always do: no helper call), else copied by bpf_skb_load_bytes
 * (a header in a fragment page, past PKT_DIRECT_MAX). 0 or -errno.
 */
static __always_inline long pkt_load(struct __sk_buff *skb, __u32 off, void *to, const __u32 n)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end, *at;

	if (off <= PKT_DIRECT_MAX) {
		/* the verifier bounds the pointer by the mask it sees, not by a check on a copy */
		barrier_var(off);
		at = data + (off & PKT_DIRECT_MAX);
		if (at + n <= end) {
			__builtin_memcpy(to, at, n);
			return 0;
		}
	}
	return bpf_skb_load_bytes(skb, off, to, n);
}

static __always_inline bool pkt_ipv4(struct __sk_buff *skb, __u32 l3, struct pkt *p)
{
	struct iphdr ip;
	__u16 frag;

	if (pkt_load(skb, l3, &ip, sizeof(ip)) || ip.version != 4 || ip.ihl < 5)
		return false;
	p->f.family = AF_INET;
	p->f.addr[0] = p->saddr[0] = 0;
	p->f.addr[1] = p->saddr[1] = 0;
	p->f.addr[2] = p->saddr[2] = bpf_htonl(0x0000ffff);
	p->f.addr[3] = ip.daddr;
	p->saddr[3] = ip.saddr;
	p->f.protocol = ip.protocol;
	frag = bpf_ntohs(ip.frag_off);
	p->later_frag = (frag & IP_OFFSET) != 0;
	p->fragment = p->later_frag || (frag & IP_MF);
	p->frag_id = ip.id;
	p->routes = ip.ihl != 5;
	p->l4 = l3 + ip.ihl * 4;
	return true;
}

static __always_inline bool pkt_ipv6(struct __sk_buff *skb, __u32 l3, struct pkt *p)
{
	struct ipv6hdr ip6;
	__u32 off = l3 + sizeof(ip6);
	__u8 nh;

	if (pkt_load(skb, l3, &ip6, sizeof(ip6)) || ip6.version != 6)
		return false;
	p->f.family = AF_INET6;
	__builtin_memcpy(p->f.addr, &ip6.daddr, sizeof(p->f.addr));
	__builtin_memcpy(p->saddr, &ip6.saddr, sizeof(p->saddr));
	nh = ip6.nexthdr;
	p->routes = nh == IPV6_HOPOPTS || nh == IPV6_ROUTING || nh == IPV6_DSTOPTS;
	/* hop-by-hop, routing, fragment and destination options headers */
	for (int i = 0; i < IPV6_EXT_MAX; i++) {
		struct ipv6_opt_hdr oh;
		struct frag_hdr fh;

		/* after a later fragment's header comes the datagram's data, not its headers */
		if (p->later_frag || (nh != IPV6_HOPOPTS && nh != IPV6_ROUTING &&
				      nh != IPV6_FRAGMENT && nh != IPV6_DSTOPTS))
			break;
		if (nh == IPV6_FRAGMENT) {
			if (pkt_load(skb, off, &fh, sizeof(fh)))
				return false;
			p->later_frag = (bpf_ntohs(fh.frag_off) & 0xfff8) != 0;
			p->fragment = 1;
			p->frag_id = fh.identification;
			nh = fh.nexthdr;
			off += sizeof(fh);
			continue;
		}
		if (pkt_load(skb, off, &oh, sizeof(oh)))
			return false;
		off += (oh.hdrlen + 1) * 8;
		nh = oh.nexthdr;
	}
	/* a chain longer than the walk: its protocol and ports are unknown (judged as the last
	 * header read, a query past a sandbox's device would reach egret's resolver unsteered)
	 */
	if (!p->later_frag &&
	    (nh == IPV6_HOPOPTS || nh == IPV6_ROUTING || nh == IPV6_FRAGMENT || nh == IPV6_DSTOPTS))
		return false;
	p->f.protocol = nh;
	p->f.mapped = addr_is_v4(p->f.addr);
	p->l4 = off;
	return true;
}

/* Fill p from the IP header at l3 of a packet of ethertype proto (network order). False when
 * it is neither IPv4 nor IPv6, or cannot be read (nor its IPv6 extension headers walked, nor
 * the ports of a TCP or UDP packet that is not a later fragment). A global function, verified
 * once on its own: its IPv6 header walk would otherwise multiply the states of every path
 * after it.
 */
__noinline bool pkt_parse(struct __sk_buff *skb, __u32 l3, __u32 proto, struct pkt *p)
{
	__u16 ports[2];

	if (!p)
		return false;
	p->f.mapped = 0;
	p->f.port = 0;
	p->sport = 0;
	p->later_frag = 0;
	p->fragment = 0;
	p->frag_id = 0;
	p->icmp_type = 0;
	p->l3 = l3;
	if (proto == bpf_htons(ETH_P_IP)) {
		if (!pkt_ipv4(skb, l3, p))
			return false;
	} else if (proto == bpf_htons(ETH_P_IPV6)) {
		if (!pkt_ipv6(skb, l3, p))
			return false;
	} else {
		return false;
	}
	if (p->later_frag)
		return true;
	if (p->f.protocol == IPPROTO_TCP || p->f.protocol == IPPROTO_UDP) {
		/* judged as port 0 it could pass a rule for any port, as a DNS query unsteered */
		if (pkt_load(skb, p->l4, ports, sizeof(ports)))
			return false;
		p->sport = bpf_ntohs(ports[0]);
		p->f.port = bpf_ntohs(ports[1]);
	} else if (p->f.protocol == IPPROTO_ICMP || p->f.protocol == IPPROTO_ICMPV6) {
		pkt_load(skb, p->l4, &p->icmp_type, 1);
	}
	return true;
}

#endif /* EGRET_PACKET_BPF_H */
