/* DNS redirection ABI shared by bpf/lib/dns.bpf.h and user/dns. Every DNS query a sandbox
 * sends (UDP or TCP to port 53, any address) is steered to egret's resolver listening in the
 * sandbox's own network namespace; the resolver learns from `dns_clients` which sandbox (and
 * process) asked and what server it asked, and writes the addresses of allowed answers into
 * `dns_allow` before it releases the answer.
 */
#ifndef EGRET_DNS_H
#define EGRET_DNS_H

#define EGRET_DNS_PORT		  53
#define EGRET_DNS_LISTENERS_MAX	  4096	 /* network namespaces with a resolver listener */
#define EGRET_DNS_CLIENTS_MAX	  65536	 /* queries in flight (LRU) */
#define EGRET_DNS_ALLOW_MAX	  262144 /* (sandbox, address) pairs learned from answers */
#define EGRET_DNS_CLIENT_GEN_BITS 12	 /* `dns_client_gen`: 4,096 counters */

/* `dns_listeners` value, keyed by network namespace cookie */
struct egret_dns_listener {
	__u32 addr6[4]; /* IPv6 listener (::1), network order; all zero: none */
	__u32 addr4;	/* IPv4 listener (127.0.0.1), network order */
	__u16 port4;	/* network order */
	__u16 port6;	/* network order */
};

/* `dns_clients` key: the socket a redirected query came from, as the resolver sees it: its
 * source address as well as its port, since sockets on other local addresses (127.0.0.2, ::1
 * beside 127.0.0.1) may hold the same port at once
 */
struct egret_dns_client_key {
	__u64 netns;   /* network namespace cookie */
	__u32 addr[4]; /* client source address, network order, IPv4 mapped */
	__u16 port;    /* client source port, host order */
	__u8 proto;    /* IPPROTO_UDP or IPPROTO_TCP */
	__u8 pad[5];
};

struct egret_dns_client {
	__u64 sandbox_id;   /* the sandbox that asked */
	__u64 ts_ns;	    /* when first written so (bpf_ktime_get_boot_ns) */
	__u32 orig_addr[4]; /* the server it asked, network order, IPv4 mapped */
	__u16 orig_port;    /* host order */
	__u16 pad;
	__u32 pid; /* asking process */
	__u32 tid;
	__u8 comm[EGRET_COMM_LEN];
};

/* `dns_client_gen` (an array egretd maps into its memory): a counter for each slot of client
 * keys, which the kernel raises after every write that changes a `dns_clients` value (its
 * ts_ns aside) of a key in that slot. egretd keeps what it read of a key with the counter it
 * read before the look-up, and uses it again only while the counter is unchanged: a datagram
 * leaves its sender after the sender's write and its count, so egretd, reading the counter
 * after the datagram, sees any change a query could carry. A slot shared by keys only costs
 * look-ups.
 */
static inline __u32 egret_dns_client_slot(const struct egret_dns_client_key *k)
{
	__u64 h = k->netns ^ ((__u64)k->port << 8 | k->proto) ^
		  ((__u64)(k->addr[0] ^ k->addr[2]) << 32 | (k->addr[1] ^ k->addr[3]));

	h *= 0x9e3779b97f4a7c15ull;
	return (__u32)(h >> (64 - EGRET_DNS_CLIENT_GEN_BITS));
}

/* `dns_allow`: an address an allowed answer gave a sandbox, until expires_ns */
struct egret_dns_allow_key {
	__u64 sandbox_id;
	__u32 addr[4]; /* network order, IPv4 mapped */
};

struct egret_dns_allow {
	__u64 expires_ns; /* bpf_ktime_get_boot_ns() deadline: TTL (at least the floor) + grace */
};

/* EGRET_EV_NETNS: a sandboxed process is in a network namespace without a listener */
struct egret_netns_event {
	struct egret_event_hdr hdr;
	__u64 netns; /* its cookie */
};

#endif /* EGRET_DNS_H */
