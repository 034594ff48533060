/* Egress enforcement ABI shared by bpf/egress.bpf.c and user/: address form, verdicts,
 * reasons, hooks, and the connect event record. Mirrored by NetConnect in
 * proto/egret/v1/events.proto; keep the enums in step.
 */
#ifndef EGRET_EGRESS_H
#define EGRET_EGRESS_H

/* Every address is 16 bytes in network order; IPv4 is stored IPv4-mapped (::ffff:a.b.c.d). */
#define EGRET_ADDR_LEN 16

/* NetConnect.Verdict */
enum egret_verdict {
	EGRET_VERDICT_ALLOW = 1,
	EGRET_VERDICT_DENY = 2,
	EGRET_VERDICT_AUDIT = 3,
};

/* NetConnect.Reason */
enum egret_reason {
	EGRET_REASON_METADATA = 1,
	EGRET_REASON_DENY_RULE = 2,
	EGRET_REASON_DEFAULT_DENY = 3,
	EGRET_REASON_ALLOW_RULE = 4,
	EGRET_REASON_SOCKET_TYPE = 5,
	EGRET_REASON_DNS = 6,
	EGRET_REASON_SANDBOX_PENDING = 7,
	EGRET_REASON_NO_POLICY = 8,
	EGRET_REASON_NO_RESOLVER = 9, /* DNS: no resolver listener in this network namespace */
	EGRET_REASON_PROTOCOL = 10,   /* a device's frame that is neither IP nor ARP */
	EGRET_REASON_DNS_SOURCE = 11, /* DNS: a source other than the steered socket's */
};

/* NetConnect.Hook */
enum egret_hook {
	EGRET_HOOK_CONNECT4 = 1,
	EGRET_HOOK_CONNECT6 = 2,
	EGRET_HOOK_SENDMSG4 = 3,
	EGRET_HOOK_SENDMSG6 = 4,
	EGRET_HOOK_SOCK_CREATE = 5,
	EGRET_HOOK_SKB_EGRESS = 6,
	EGRET_HOOK_SYSCALL = 7,
	EGRET_HOOK_DEVICE = 8, /* tc on a sandbox's own network device (include/egret/device.h) */
	EGRET_HOOK_MAX = 9,
};

/* Names of the hooks and verdicts as egretd's counters show them, indexed by enum egret_hook
 * and enum egret_verdict: initializers for `static const char *const x[] = ...`.
 */
/* clang-format off */
#define EGRET_HOOK_NAMES \
	{ "", "connect4", "connect6", "sendmsg4", "sendmsg6", "sock_create", "egress", "syscall", \
	  "device" }
#define EGRET_VERDICT_NAMES { "", "allowed", "denied", "audited" }

/* The `counters` index (include/egret/events.h) counting a hook's verdicts; the masks keep a
 * bad value inside the array.
 */
#define EGRET_CNT_VERDICT(hook, verdict) \
	(EGRET_CNT_VERDICT_BASE + ((hook) < EGRET_HOOK_MAX ? (hook) : 0) * 4 + ((verdict) & 3))
/* clang-format on */

/* Per-socket state in the `sock_meta` sk_storage map, made on a socket's first sendmsg (or a
 * redirected DNS connect): the last destination allowed, so that a flow of datagrams is
 * reported once, not per datagram; whether the skb backstop already reported a drop on it; and
 * for DNS, the server the socket asked and the resolver listener it was steered to, so that
 * recvmsg and getpeername show the former.
 */
struct egret_sock_meta {
	__u32 last_addr[4];   /* last allowed destination, IPv4 mapped */
	__u32 dns_orig[4];    /* DNS: the server asked, as the socket named it (network order) */
	__u32 dns_to[4];      /* DNS: the listener it was steered to, as the socket sees it */
	__u16 last_port;      /* host order */
	__u16 dns_orig_port;  /* network order; 0: not redirected */
	__u16 dns_to_port;    /* network order */
	__u8 last_proto;      /* 0: no flow yet */
	__u8 denied_reported; /* the skb backstop reported a drop on this socket */
};

/* EGRET_EV_CONNECT */
struct egret_connect_event {
	struct egret_event_hdr hdr;
	__u8 daddr[EGRET_ADDR_LEN]; /* destination, network order, IPv4 mapped */
	__u32 rule_id;		    /* matching rule, 0 when none */
	__u16 dport;		    /* destination port, host order */
	__u8 family;		    /* AF_* of the socket */
	__u8 protocol;		    /* IPPROTO_TCP, IPPROTO_UDP, ... */
	__u8 hook;		    /* enum egret_hook */
	__u8 verdict;		    /* enum egret_verdict */
	__u8 reason;		    /* enum egret_reason */
	__u8 v4_mapped;		    /* 1: an IPv6 socket asked for ::ffff:a.b.c.d */
	__u16 sock_type;	    /* SOCK_* for HOOK_SOCK_CREATE and HOOK_SYSCALL */
	__u8 killed;		    /* HOOK_SYSCALL: SIGKILL sent */
	__u8 pad;
	__u32 ifindex;		    /* HOOK_DEVICE: the device, in egretd's network namespace */
	__u8 saddr[EGRET_ADDR_LEN]; /* HOOK_DEVICE: the packet's source, IPv4 mapped */
	__u16 sport;		    /* HOOK_DEVICE: its source port, host order */
	__u16 pad2;
	__u64 cookie; /* an allowed TCP connect: the socket's cookie, which its flow record carries
		       * when it closes (egretd joins the two); 0 otherwise */
};

#endif /* EGRET_EGRESS_H */
