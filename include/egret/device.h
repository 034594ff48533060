/* The datapath for sandboxes with their own network device (bpf/lib/device.bpf.h, user/net):
 * a container's veth, whose host end egretd finds from the sandbox's network namespace, or a
 * device the policy names (a VM's tap). Two tc programs on the host side of the device:
 * egret_dev_out at its ingress (what the sandbox sends) judges every packet by the policy of
 * the device's sandboxes and steers DNS to egret's resolver; egret_dev_in at its egress (what
 * the sandbox receives) gives steered DNS answers back the server the sandbox asked.
 */
#ifndef EGRET_DEVICE_H
#define EGRET_DEVICE_H

#define EGRET_DEVICES_MAX	4096  /* devices egret judges */
#define EGRET_DEV_SANDBOXES	4     /* sandboxes sharing one device (a pod's containers) */
#define EGRET_DEV_NAT_MAX	65536 /* records of steered DNS queries in flight, 2 each (LRU) */
#define EGRET_DEV_FRAGS_MAX	16384 /* fragmented datagrams whose first fragment passed (LRU) */
#define EGRET_DEV_REPORTS_MAX	4096  /* (device, destination) denials reported this second */
#define EGRET_DEV_LISTENERS_MAX 8192  /* resolver addresses for devices' DNS: 2 a device */

/* The tc filter egretd installs on each device, at both hooks: its own priority and handle,
 * so that it never replaces or removes another's filter.
 */
#define EGRET_TC_PRIORITY 1
#define EGRET_TC_HANDLE	  0xe9e7

/* `devices` value, keyed by the device's ifindex in egretd's network namespace */
struct egret_device {
	__u64 sandbox_id[EGRET_DEV_SANDBOXES]; /* 0: unused; a packet passes when any allows it;
						* [0]'s domain rules answer the device's DNS */
	__u32 resolver6[4]; /* egret's resolver for the device's DNS, network order; 0: none */
	__u32 resolver4;
	__u16 port4; /* network order; 0: no IPv4 resolver (DNS is dropped) */
	__u16 port6;
	__u8 mac[6]; /* the resolver's device's address: steered frames go there */
	__u8 l2;     /* 1: Ethernet frames (veth, tap); 0: IP packets (tun, L3 devices) */
	__u8 source; /* enum egret_dev_source: what made it a sandbox's (for the next egretd) */
};

enum egret_dev_source {
	EGRET_DEV_POLICY = 1,	 /* 'interface' in the policy */
	EGRET_DEV_NAMESPACE = 2, /* a veth to a sandbox's network namespace */
};

/* `dev_nat` key: where a steered DNS query came from (the sandbox's address and port). Each
 * query is recorded twice: under its device, which egret_dev_in reads to give the answer back
 * the server asked (another device sending from the same address and port cannot take that
 * away), and under ifindex 0, which the resolver reads (it cannot tell the device a datagram
 * came through).
 */
struct egret_dev_nat_key {
	__u32 addr[4]; /* network order, IPv4 mapped */
	__u16 port;    /* network order */
	__u8 proto;    /* IPPROTO_UDP or IPPROTO_TCP */
	__u8 pad;
	__u32 ifindex; /* the device's; 0: the resolver's record */
};

/* `dev_nat` value: who asked and what server (as dns_clients has it), and on which device */
struct egret_dev_nat {
	struct egret_dns_client client;
	__u32 ifindex;
	__u32 pad;
};

/* `dev_listeners` key: an address and port egret's resolver listens on for devices' DNS (its
 * UDP and TCP sockets share the port). A packet a device sends there is a DNS query steered like
 * one to port 53, so that the resolver learns its sender from the device it came through, never
 * from a record another device's query left under the same source address and port.
 */
struct egret_dev_listener_key {
	__u32 addr[4]; /* network order, IPv4 mapped */
	__u16 port;    /* network order */
	__u16 pad;
};

/* `dev_frags` key: a fragmented datagram whose first fragment passed */
struct egret_dev_frag_key {
	__u32 daddr[4];
	__u32 id; /* IPv4 identification or IPv6 fragment header id */
	__u32 ifindex;
};

/* `dev_reported` key: one denial report per device, destination and second */
struct egret_dev_report_key {
	__u32 daddr[4];
	__u32 ifindex;
	__u16 dport;
	__u8 proto;
	__u8 pad;
};

#endif /* EGRET_DEVICE_H */
