/* Sandboxes with their own network device (include/egret/device.h): what a container's veth,
 * a VM's tap or a tun sends reaches the host through the host side of its device, where no
 * socket of the sandbox is left to judge. Every packet arriving there is judged by the policy
 * of the device's sandboxes, as the sandbox sent it (before the host routes or NATs it);
 * DNS goes to egret's resolver whatever server it names, and comes back from that server.
 */
#ifndef EGRET_DEVICE_BPF_H
#define EGRET_DEVICE_BPF_H

#include "lib/budget.bpf.h"
#include "lib/packet.bpf.h"
#include "lib/report.bpf.h"

#define TC_ACT_UNSPEC	     (-1) /* go on: the next filter (another's), or the stack */
#define TC_ACT_SHOT	     2

#define ETH_HLEN	     14
#define ETH_P_ARP	     0x0806
#define BPF_F_PSEUDO_HDR     (1ULL << 4)
#define BPF_F_MARK_MANGLED_0 (1ULL << 5)

#define DEV_REPORT_DENY_NS   1000000000ull  /* a denied destination: once a second */
#define DEV_REPORT_ALLOW_NS  60000000000ull /* an allowed one: once a minute */

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_DEVICES_MAX);
	__type(key, __u32);
	__type(value, struct egret_device);
} devices SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EGRET_DEV_NAT_MAX);
	__type(key, struct egret_dev_nat_key);
	__type(value, struct egret_dev_nat);
} dev_nat SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_DEV_LISTENERS_MAX);
	__type(key, struct egret_dev_listener_key);
	__type(value, __u8);
} dev_listeners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EGRET_DEV_FRAGS_MAX);
	__type(key, struct egret_dev_frag_key);
	__type(value, __u64);
} dev_frags SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EGRET_DEV_REPORTS_MAX);
	__type(key, struct egret_dev_report_key);
	__type(value, __u64);
} dev_reported SEC(".maps");

/* Link-local traffic a device needs to work at all, which never leaves its link: IPv6
 * neighbour discovery and multicast listener messages to link-local addresses, and DHCP to
 * the limited broadcast address.
 */
static __always_inline bool dev_link_local(const struct pkt *p)
{
	if (p->f.family == AF_INET6 && p->f.protocol == IPPROTO_ICMPV6 && !p->fragment) {
		__u32 w0 = bpf_ntohl(p->f.addr[0]);
		bool link = (w0 & 0xffc00000) == 0xfe800000 || (w0 & 0xffff0000) == 0xff020000;
		__u8 t = p->icmp_type;

		return link && ((t >= 130 && t <= 137) || t == 143);
	}
	return p->f.family == AF_INET && p->f.protocol == IPPROTO_UDP && !p->fragment &&
	       p->f.addr[3] == 0xffffffff && p->f.port == 67 && p->sport == 68;
}

/* The device's sandboxes decide: the first that allows the packet passes it; a denial says
 * what the first sandbox's rules said.
 */
static __always_inline void dev_decide(const struct egret_device *dev, const struct flow *f,
				       struct decision *d, __u64 *sandbox_id)
{
	struct decision cur;

	decide(d, EGRET_VERDICT_DENY, EGRET_REASON_SANDBOX_PENDING, 0);
	*sandbox_id = dev->sandbox_id[0];
#pragma clang loop unroll(disable)
	for (int i = 0; i < EGRET_DEV_SANDBOXES; i++) {
		__u64 id = dev->sandbox_id[i & (EGRET_DEV_SANDBOXES - 1)];

		if (!id)
			continue;
		policy_decide(f, id, &cur);
		if (cur.verdict != EGRET_VERDICT_DENY || *sandbox_id == id) {
			*d = cur;
			*sandbox_id = id;
		}
		if (cur.verdict != EGRET_VERDICT_DENY)
			return;
	}
}

/* One record per device, destination and verdict a second (a minute for an allowed one): a
 * flood of denied packets costs the ring nothing more.
 */
static __always_inline void dev_report(struct __sk_buff *skb, const struct pkt *p, __u64 sandbox_id,
				       const struct decision *d)
{
	struct egret_dev_report_key k = { .ifindex = skb->ifindex,
					  .dport = p->f.port,
					  .proto = p->f.protocol,
					  .pad = d->verdict };
	__u64 now = bpf_ktime_get_boot_ns(), *last;
	struct egret_connect_event *e;

	__builtin_memcpy(k.daddr, p->f.addr, sizeof(k.daddr));
	last = bpf_map_lookup_elem(&dev_reported, &k);
	if (last && now - *last < (d->verdict == EGRET_VERDICT_ALLOW ? DEV_REPORT_ALLOW_NS
								     : DEV_REPORT_DENY_NS))
		return;
	bpf_map_update_elem(&dev_reported, &k, &now, BPF_ANY);
	e = egress_event(&p->f, sandbox_id, EGRET_HOOK_DEVICE, d, 0);
	if (!e)
		return;
	e->ifindex = skb->ifindex;
	__builtin_memcpy(e->saddr, p->saddr, sizeof(e->saddr));
	e->sport = p->sport;
	event_submit(e);
}

/* Rewrite the destination (address and port) of the packet p describes, keeping its checksums
 * right; the Ethernet destination too when mac is set.
 */
static __always_inline int dev_rewrite(struct __sk_buff *skb, const struct pkt *p, bool dst,
				       const __u32 *addr, __u16 port_be, const __u8 *mac)
{
	__u32 csum = p->l4 + (p->f.protocol == IPPROTO_TCP ? 16 : 6);
	__u64 mangled = p->f.protocol == IPPROTO_UDP ? BPF_F_MARK_MANGLED_0 : 0;
	__u32 old_addr[4], new_addr[4];
	__u16 old_port = bpf_htons(dst ? p->f.port : p->sport);

	__builtin_memcpy(old_addr, dst ? p->f.addr : p->saddr, sizeof(old_addr));
	__builtin_memcpy(new_addr, addr, sizeof(new_addr));
	if (p->f.family == AF_INET) {
		__u32 at = p->l3 + (dst ? 16 : 12);

		if (bpf_l4_csum_replace(skb, csum, old_addr[3], new_addr[3],
					mangled | BPF_F_PSEUDO_HDR | 4) ||
		    bpf_l3_csum_replace(skb, p->l3 + 10, old_addr[3], new_addr[3], 4) ||
		    bpf_skb_store_bytes(skb, at, &new_addr[3], 4, 0))
			return -1;
	} else {
		__s64 diff = bpf_csum_diff(old_addr, 16, new_addr, 16, 0);

		if (diff < 0 ||
		    bpf_l4_csum_replace(skb, csum, 0, diff, mangled | BPF_F_PSEUDO_HDR) ||
		    bpf_skb_store_bytes(skb, p->l3 + (dst ? 24 : 8), new_addr, 16, 0))
			return -1;
	}
	if (bpf_l4_csum_replace(skb, csum, old_port, port_be, mangled | 2) ||
	    bpf_skb_store_bytes(skb, p->l4 + (dst ? 2 : 0), &port_be, 2, 0))
		return -1;
	if (mac && bpf_skb_store_bytes(skb, 0, mac, 6, 0))
		return -1;
	return 0;
}

/* A DNS query at a device: to egret's resolver for the device, noted so that the resolver
 * knows the sandbox and the server asked, and the answer comes back from that server. No
 * resolver for its family: dropped and reported.
 */
static __always_inline int dev_dns(struct __sk_buff *skb, const struct egret_device *dev,
				   const struct pkt *p)
{
	struct egret_dev_nat_key k = { .port = bpf_htons(p->sport), .proto = p->f.protocol };
	struct decision d = { .verdict = EGRET_VERDICT_DENY, .reason = EGRET_REASON_NO_RESOLVER };
	struct egret_dev_nat v = { .ifindex = skb->ifindex };
	__u32 to[4] = { 0, 0, bpf_htonl(0x0000ffff), dev->resolver4 };
	bool v4 = p->f.family == AF_INET;
	__u16 port = v4 ? dev->port4 : dev->port6;
	const __u8 *m = dev->mac;
	bool mac = dev->l2 && (m[0] | m[1] | m[2] | m[3] | m[4] | m[5]);

	if (!v4)
		__builtin_memcpy(to, dev->resolver6, sizeof(to));
	if (!port || p->fragment) {
		counter_verdict(EGRET_HOOK_DEVICE, EGRET_VERDICT_DENY);
		dev_report(skb, p, dev->sandbox_id[0], &d);
		return TC_ACT_SHOT;
	}
	__builtin_memcpy(k.addr, p->saddr, sizeof(k.addr));
	v.client.sandbox_id = dev->sandbox_id[0];
	v.client.ts_ns = bpf_ktime_get_boot_ns();
	__builtin_memcpy(v.client.orig_addr, p->f.addr, sizeof(v.client.orig_addr));
	v.client.orig_port = p->f.port;
	/* the device's record (the answer's way back), then the resolver's (who asked): the query
	 * goes on only with both written, never judged by an older sender's
	 */
	k.ifindex = skb->ifindex;
	if (bpf_map_update_elem(&dev_nat, &k, &v, BPF_ANY))
		goto drop;
	k.ifindex = 0;
	if (bpf_map_update_elem(&dev_nat, &k, &v, BPF_ANY))
		goto drop;
	if (dev_rewrite(skb, p, true, to, port, mac ? m : NULL))
		goto drop;
	counter_verdict(EGRET_HOOK_DEVICE, EGRET_VERDICT_ALLOW);
	return TC_ACT_UNSPEC;
drop:
	/* a record or the rewrite could not be written: not sent unsteered, and counted */
	counter_verdict(EGRET_HOOK_DEVICE, EGRET_VERDICT_DENY);
	return TC_ACT_SHOT;
}

/* A DNS query: to port 53 of any server, or to an address and port egret's resolver listens on
 * for devices (any device's: each is a host address the device may be allowed to reach). Each
 * is steered, so every query the resolver gets from a device was recorded by its own device.
 */
static __always_inline bool dev_is_dns(const struct pkt *p)
{
	struct egret_dev_listener_key k = { .port = bpf_htons(p->f.port) };

	if (p->later_frag || (p->f.protocol != IPPROTO_UDP && p->f.protocol != IPPROTO_TCP))
		return false;
	if (p->f.port == EGRET_DNS_PORT)
		return true;
	__builtin_memcpy(k.addr, p->f.addr, sizeof(k.addr));
	return bpf_map_lookup_elem(&dev_listeners, &k) != NULL;
}

/* A later fragment carries no ports: it passes when its datagram's first fragment did. */
static __always_inline bool dev_frag_passed(struct __sk_buff *skb, const struct pkt *p)
{
	struct egret_dev_frag_key k = { .id = p->frag_id, .ifindex = skb->ifindex };

	__builtin_memcpy(k.daddr, p->f.addr, sizeof(k.daddr));
	return bpf_map_lookup_elem(&dev_frags, &k) != NULL;
}

static __always_inline void dev_frag_pass(struct __sk_buff *skb, const struct pkt *p)
{
	struct egret_dev_frag_key k = { .id = p->frag_id, .ifindex = skb->ifindex };
	__u64 now = bpf_ktime_get_boot_ns();

	__builtin_memcpy(k.daddr, p->f.addr, sizeof(k.daddr));
	bpf_map_update_elem(&dev_frags, &k, &now, BPF_ANY);
}

/* A packet the device's verdict passed, against the sandbox's egress budget (IP bytes, as its
 * sockets'): false over it. Only a device the policy names (a VM's tap) counts: what crosses a
 * veth to a sandbox's own network namespace was counted at its sockets (cgroup_skb) already.
 */
static __always_inline bool dev_budget_pass(struct __sk_buff *skb, const struct egret_device *dev,
					    __u64 sandbox_id)
{
	if (dev->source != EGRET_DEV_POLICY || !budget_on())
		return true;
	return budget_charge(sandbox_id, skb->len - (dev->l2 ? ETH_HLEN : 0));
}

/* What the sandbox sends: the ingress of the device's host side. */
static __always_inline int device_out(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ifindex, proto = skb->protocol;
	struct egret_device *dev = bpf_map_lookup_elem(&devices, &ifindex);
	struct decision d;
	__u64 sandbox_id;
	struct pkt p = {};

	if (!dev)
		return TC_ACT_UNSPEC; /* not (or no longer) a sandbox's */
	if (dev->l2 && proto == bpf_htons(ETH_P_ARP))
		return TC_ACT_UNSPEC;
	if (!pkt_parse(skb, dev->l2 ? ETH_HLEN : 0, proto, &p)) {
		/* neither IP nor ARP (another ethertype, a stacked VLAN), or unreadable */
		decide(&d, EGRET_VERDICT_DENY, EGRET_REASON_PROTOCOL, 0);
		p.f.protocol = 0;
		p.f.port = (__u16)bpf_ntohs((__u16)proto);
		counter_verdict(EGRET_HOOK_DEVICE, d.verdict);
		dev_report(skb, &p, dev->sandbox_id[0], &d);
		return TC_ACT_SHOT;
	}
	if (dev_link_local(&p))
		return TC_ACT_UNSPEC;
	if (dev_is_dns(&p))
		return dev_dns(skb, dev, &p);
	if (p.later_frag && dev_frag_passed(skb, &p))
		return dev_budget_pass(skb, dev, dev->sandbox_id[0]) ? TC_ACT_UNSPEC : TC_ACT_SHOT;
	if (p.later_frag) {
		decide(&d, EGRET_VERDICT_DENY, EGRET_REASON_DEFAULT_DENY, 0);
		sandbox_id = dev->sandbox_id[0];
	} else {
		dev_decide(dev, &p.f, &d, &sandbox_id);
	}
	counter_verdict(EGRET_HOOK_DEVICE, d.verdict);
	dev_report(skb, &p, sandbox_id, &d);
	if (d.verdict == EGRET_VERDICT_DENY)
		return TC_ACT_SHOT;
	if (!dev_budget_pass(skb, dev, sandbox_id))
		return TC_ACT_SHOT;
	if (p.fragment)
		dev_frag_pass(skb, &p);
	return TC_ACT_UNSPEC;
}

/* What the sandbox receives: the egress of the device's host side. An answer of egret's
 * resolver to a query steered here comes from the server the sandbox asked.
 */
static __always_inline int device_in(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ifindex, proto = skb->protocol;
	struct egret_device *dev = bpf_map_lookup_elem(&devices, &ifindex);
	struct egret_dev_nat_key k = {};
	struct egret_dev_nat *n;
	__u32 from[4];
	struct pkt p = {};

	if (!dev || !pkt_parse(skb, dev->l2 ? ETH_HLEN : 0, proto, &p) || p.later_frag ||
	    (p.f.protocol != IPPROTO_UDP && p.f.protocol != IPPROTO_TCP))
		return TC_ACT_UNSPEC;
	if (p.f.family == AF_INET) {
		if (!dev->port4 || p.saddr[3] != dev->resolver4 || bpf_htons(p.sport) != dev->port4)
			return TC_ACT_UNSPEC;
	} else {
		__builtin_memcpy(from, dev->resolver6, sizeof(from));
		if (!dev->port6 || !addr_eq(p.saddr, from) || bpf_htons(p.sport) != dev->port6)
			return TC_ACT_UNSPEC;
	}
	__builtin_memcpy(k.addr, p.f.addr, sizeof(k.addr));
	k.port = bpf_htons(p.f.port);
	k.proto = p.f.protocol;
	k.ifindex = ifindex;
	n = bpf_map_lookup_elem(&dev_nat, &k);
	if (!n || n->ifindex != ifindex)
		return TC_ACT_UNSPEC;
	__builtin_memcpy(from, n->client.orig_addr, sizeof(from));
	if (dev_rewrite(skb, &p, false, from, bpf_htons(n->client.orig_port), NULL))
		return TC_ACT_SHOT;
	return TC_ACT_UNSPEC;
}

#endif /* EGRET_DEVICE_BPF_H */
