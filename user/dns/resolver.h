/* The resolver's insides, shared by the files of user/dns and by nothing else (the rest of egret
 * uses dns.h): the resolver, its listeners and TCP clients, the queries it has upstream, and the
 * functions one part of it calls in another.
 *
 *   listeners.c  the loopback sockets in each network namespace, dns_listeners and dns_clients
 *   tcp.c        TCP clients of the listeners: reading queries, writing answers, eviction
 *   query.c      a query from a sandbox: parsing, the verdict, local answers
 *   upstream.c   forwarding allowed queries to the upstream resolver (UDP pool, TCP), answers
 *   allow.c      the addresses allowed answers open in dns_allow, per name and sandbox
 *   cache.c      answers kept to answer a sandbox's repeats without going upstream
 *   events.c     the DnsQuery event of each query
 *   parse.c      pure functions of the bytes: messages, names, the upstream's address
 *   resolver.c   the resolver's life: new, tick, status, free
 */
#ifndef EGRET_DNS_RESOLVER_H
#define EGRET_DNS_RESOLVER_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include <ldns/ldns.h>
#include <linux/types.h>

#include "egret/events.h"
#include "egret/dns.h"
#include "dns.h"
#include "htab.h"
#include "loop.h"

#define DNS_MSG_MAX	65535
#define MAX_ANSWERS	64
#define TCP_IDLE_NS	(10ull * 1000000000ull)
#define MAX_TCP_CONNS	256
#define TCP_PER_SANDBOX 64	     /* TCP clients one sandbox may hold: a quarter */
#define TCP_PER_LISTEN	192	     /* and one namespace's listener: never all of them */
#define TCP_OUT_MAX	(256u << 10) /* answers a client leaves unread; more closes it */
#define MAX_PENDING	8192
#define UPSTREAM_SOCKS	8    /* UDP sockets to the upstream, each connected, shared by queries */
#define UPSTREAM_ROTATE 4096 /* queries before a socket is replaced (new random source port) */
#define DNS_BATCH	8    /* datagrams read in one system call (recvmmsg) */

struct dns_listener;
struct dns_conn;

enum {
	UDP4,
	UDP6,
	TCP4,
	TCP6,
	NSOCK
};

struct dns_listener {
	struct resolver *r;
	uint64_t cookie;
	/* the sandboxes whose processes are in its namespace (a pod's containers share one);
	 * none: egretd's own namespace, kept for egretd's life
	 */
	uint64_t *users;
	size_t nusers, cap;
	struct watch w[NSOCK];
	uint16_t port4, port6; /* host order */
	/* a device's listener (user/net/devices.c): in egretd's namespace, on the address of
	 * the devices that steer their DNS to it, which of them asked told by `dev_nat`
	 */
	bool device;
	uint32_t addr[4]; /* network order, IPv4 mapped */
	unsigned int refs;
	struct dns_listener *next;
};

struct dns_conn {
	struct watch w;
	struct dns_listener *l;
	struct egret_dns_client who;
	uint8_t in[2 + DNS_MSG_MAX];
	size_t in_len;
	uint8_t *out;
	size_t out_len, out_cap;
	uint64_t idle_deadline;
	uint64_t active_ns;   /* the last whole query or answer: eviction takes the oldest */
	unsigned int pending; /* queries of this connection still upstream */
	bool closing;
	struct dns_conn *next;
};

/* a connected UDP socket to the upstream; answers find their query by id */
struct upstream_sock {
	struct watch w;
	struct resolver *r;
	unsigned int uses, pending;
	bool draining;
	struct upstream_sock *next;
};

/* the key of the addresses a name opened to a sandbox: the name's SHA-256, its first 128 bits
 * (an entry of 40 bytes, not the 264 of the name itself)
 */
struct name_key {
	uint64_t sandbox;
	uint8_t digest[16];
};

/* The key of an answer kept for a sandbox (cache.c): everything the query sent upstream is
 * made of (dns__bare_query) but the case of the name
 */
struct cache_key {
	uint64_t sandbox;
	uint8_t digest[16]; /* the name's, as in name_key */
	uint16_t qtype, edns_size;
	uint8_t flags; /* CACHE_RD ... */
	uint8_t pad[3];
};

#define CACHE_RD    0x01
#define CACHE_AD    0x02
#define CACHE_CD    0x04
#define CACHE_EDNS  0x08
#define CACHE_DO    0x10
#define CACHE_TTLS  64	 /* records of an answer kept; one with more is not kept */
#define CACHE_ADDRS 64	 /* addresses of an answer kept */
#define CACHE_BLOB  2048 /* bytes of an answer kept (--dns-cache of them: 8 MiB at most) */

/* An answer kept: a struct htab entry. blob holds its addresses, the offsets of its TTLs, its
 * CNAMEs (each ended by a NUL, cnames_len bytes in all) and its bytes as upstream sent them, in
 * that order.
 */
struct cache_entry {
	struct cache_key key;
	uint64_t stored_ns, expires_ns; /* CLOCK_BOOTTIME */
	void *blob;
	uint16_t len, nttl, naddrs, cnames_len;
	uint8_t rcode, ncnames, qname_len;
};

struct dns_query {
	struct resolver *r;
	struct dns_listener *l;
	struct dns_conn *conn; /* TCP client, or NULL for UDP */
	int udp_fd;	       /* UDP: the listener socket to answer from */
	struct sockaddr_storage client;
	socklen_t client_len;
	struct egret_dns_client who;
	uint16_t client_id, up_id;
	char name[DNS_NAME_LEN];
	struct name_key nk;  /* the name's key in the names its sandbox holds (allow.c) */
	struct cache_key ck; /* its answer's key in the answers kept (cache.c) */
	uint8_t qname_len;   /* the name's wire length */
	bool cached;	     /* answered from an answer kept, not upstream */
	bool gone;	     /* its sandbox went while it was upstream: it opens nothing */
	uint16_t qtype;
	uint8_t *msg; /* what goes upstream: the bare question (dns__bare_query), id up_id */
	size_t msg_len;
	uint64_t start_ns, deadline_ns;
	char rule[400];
	char budget[64];	  /* the budget line that refused it (budget.c), or "" */
	float entropy;		  /* bits a character of the name left of its rule (budget.c) */
	bool high_entropy;	  /* that part: 16 characters or more at 3.5 bits or above */
	struct upstream_sock *us; /* UDP upstream, shared */
	struct watch up;	  /* TCP upstream, this query's own */
	bool up_tcp;
	uint8_t *up_buf;
	size_t up_len, up_sent;
	bool up_reading; /* TCP upstream: the query is out, up_buf collects the answer */
	struct dns_query *next;
};

/* an address an answer opened to a sandbox, mirrored from `dns_allow`: a struct htab entry */
struct allow_entry {
	struct egret_dns_allow_key key; /* the htab key */
	uint64_t expires_ns;
};

/* the addresses a name opened to a sandbox, for the per-name cap: a struct htab entry */
struct name_entry {
	struct name_key key;
	unsigned int n, room; /* addresses held; room in ips, grown up to --dns-max-ips */
	struct {
		uint32_t addr[4];
		uint64_t expires_ns;
	} * ips;
};

/* What one sandbox holds (--dns-max-names, --dns-max-addresses): a struct htab entry keyed by
 * the sandbox and a 1 (sandbox 0, the root's, would be an all-zero key, which no htab holds)
 */
struct dns_held {
	uint64_t sandbox;
	uint32_t one;
	uint32_t names; /* entries in r->names */
	uint32_t addrs; /* entries in r->allow */
	uint32_t pad;
};

#define NAMES_RESWEEP_NS 100000000ull /* sweeps for a name at a bound: at most this often */

struct dns_stats {
	uint64_t queries, allowed, refused, not_host, outside, malformed, upstream_fail, timeouts,
		opened, capped, map_full, tcp_evicted, over_budget, names_full, early_sweeps,
		cache_hits, cache_full, clients_kept;
};

/* What listener__client() read of a client key, and the slot's counter read before it. */
struct client_seen {
	struct egret_dns_client_key k;
	uint64_t gen;
	struct egret_dns_client who;
	bool valid;
};

#define CLIENT_SLOTS (1u << EGRET_DNS_CLIENT_GEN_BITS)

struct resolver {
	struct dns_options o;
	struct dns_maps m;
	struct loop *loop;
	struct engine *engine;
	struct stream *stream;
	struct sockaddr_storage upstream;
	socklen_t upstream_len;
	char upstream_text[128];
	int own_netns;
	struct dns_listener *listeners;
	struct dns_conn *conns;
	unsigned int nconns;
	struct dns_query *pending;
	unsigned int npending;
	struct dns_query *by_id[65536]; /* queries upstream over UDP, by the id sent */
	struct upstream_sock *pool[UPSTREAM_SOCKS];
	struct upstream_sock *draining;
	struct upstream_sock *retired;	 /* closed, freed by resolver__tick() */
	struct dns_listener *retired_ls; /* closed, freed by resolver__tick() */
	struct dns_conn *retired_conns;	 /* evicted, freed by resolver__tick() */
	unsigned int next_sock;
	uint8_t rand[4096];
	size_t rand_used;
	struct htab allow;	 /* struct allow_entry */
	struct htab names;	 /* struct name_entry */
	struct htab held;	 /* struct dns_held */
	uint64_t swept_ns;	 /* the last sweep made for a name at a bound (CLOCK_BOOTTIME) */
	uint64_t next_expiry_ns; /* no address or name expires before this (CLOCK_BOOTTIME) */
	uint8_t name_salt[16];	 /* allow__name_key's secret */
	uint64_t warned_ns, unwarned; /* the last map failure logged, and those not logged since */
	struct htab budgets;	      /* budget.c: struct budget_entry */
	struct htab cache;	      /* cache.c: struct cache_entry */
	struct htab cache_per;	      /* cache.c: answers kept per sandbox */
	uint64_t last_sweep_ns;
	struct dns_stats st;
	/* dns_client_gen mapped (NULL: every query's client is looked up in dns_clients), and
	 * what was read there, by the same slot (listeners.c)
	 */
	const uint64_t *client_gen;
	uint64_t client_gen_due_ns; /* when to map it (CLOCK_MONOTONIC; 0: done, or never) */
	struct client_seen seen[CLIENT_SLOTS];
	/* resolver__recv_batch(): datagram i in buf[i], msg[i].msg_len bytes, from from[i] */
	struct mmsghdr msg[DNS_BATCH];
	struct iovec iov[DNS_BATCH];
	struct sockaddr_storage from[DNS_BATCH];
	uint8_t buf[DNS_BATCH][DNS_MSG_MAX + 2];
};

/* The CNAMEs and addresses of an answer as its event lists them. */
struct answer_list {
	char *text[MAX_ANSWERS];
	char store[MAX_ANSWERS][LDNS_MAX_DOMAINLEN + 16];
	size_t n;
	uint32_t ttl; /* granted seconds, 0 when nothing was opened */
	uint32_t opened;
};

/* resolver.c: the datagrams waiting on fd, up to DNS_BATCH, in one system call (a read that
 * finds fewer left the socket empty: no second call to learn it); how many, 0 when none.
 */
int resolver__recv_batch(struct resolver *r, int fd);

/* budget.c */
int budget__init(struct resolver *r);
void budget__free(struct resolver *r);
void budget__sweep(struct resolver *r, uint64_t now);
/* the query takes one from the sandbox's 'budget dns' bucket: true (and q->budget set) when
 * it is empty
 */
bool budget__over_queries(struct resolver *r, struct dns_query *q);
/* name_bytes more sent upstream for the sandbox in this period: true (q->budget set) when that
 * is over its 'budget dns-names' (and they are not counted)
 */
bool budget__over_names(struct resolver *r, struct dns_query *q, size_t name_bytes);
/* q->entropy and q->high_entropy, from q->name and q->rule */
void budget__entropy(struct dns_query *q);

/* listeners.c */
/* Which sandbox sent from this port (false: not a query the kernel steered here). */
bool listener__client(struct resolver *r, struct dns_listener *l, const struct sockaddr_storage *ss,
		      uint8_t proto, struct egret_dns_client *who);
void listener__forget_all(struct resolver *r);
/* dns_client_gen mapped (resolver__tick, a second after the start), so a sender unchanged
 * since its last look-up is not looked up again
 */
void listener__map_clients(struct resolver *r);
void listener__unmap_clients(struct resolver *r);
void listener__close_all(struct resolver *r);
void listener__free(struct dns_listener *l);

/* tcp.c */
void conn__on_accept(struct watch *w, uint32_t events);
/* Queue a length-prefixed answer; a client that does not read its answers is closed. */
void conn__send(struct resolver *r, struct dns_conn *c, const uint8_t *msg, size_t len);
void conn__reap_idle(struct resolver *r, uint64_t now);
void conn__free_all(struct resolver *r);

/* query.c */
void query__handle(struct resolver *r, struct dns_listener *l, struct dns_conn *conn, int udp_fd,
		   const struct sockaddr_storage *from, socklen_t fromlen, const uint8_t *msg,
		   size_t len, const struct egret_dns_client *who);
void query__reply(struct resolver *r, struct dns_query *q, const uint8_t *msg, size_t len);
void query__reply_rcode(struct resolver *r, struct dns_query *q, const struct dns_question *dq,
			uint8_t rcode);
void query__free(struct resolver *r, struct dns_query *q);
/* The answer to q, from upstream or kept (q->cached): its addresses opened (a new name over a
 * bound is refused as at the question), released to the client with its id, its event written,
 * an answer from upstream kept (cache__store). msg is changed; q is freed.
 */
void query__answer(struct resolver *r, struct dns_query *q, uint8_t *msg, size_t len,
		   const struct dns_answer *ans);

/* upstream.c */
int upstream__send(struct resolver *r, struct dns_query *q, bool tcp);
void upstream__detach(struct resolver *r, struct dns_query *q);
void upstream__failed(struct resolver *r, struct dns_query *q, const char *why);
void upstream__close_all(struct resolver *r);

/* allow.c */
/* q->nk, from the sandbox and name of q */
void allow__name_key(struct dns_query *q);
/* Why the name of q may not hold addresses (its sandbox holds --dns-max-names names, or the
 * resolver DNS_NAMES_MAX), or NULL when it may: it holds some already, or there is room.
 */
const char *allow__name_refused(struct resolver *r, const struct dns_query *q);
/* Open the answer's addresses to q's sandbox; NULL, or why none was (allow__name_refused). */
const char *allow__open_answers(struct resolver *r, struct dns_query *q,
				const struct dns_answer *ans, struct answer_list *out);
int allow__init(struct resolver *r);
void allow__sweep(struct resolver *r, uint64_t now);
/* The sandbox is gone (unregistered, or its cgroup removed): its names go and its addresses
 * close, so that sandboxes come and go without filling the resolver's bound for all.
 */
void allow__sandbox_gone(struct resolver *r, uint64_t sandbox);
void allow__adopt(struct resolver *r);
size_t allow__count(const struct resolver *r);
size_t allow__names(const struct resolver *r);
void allow__free(struct resolver *r);

/* cache.c */
int cache__init(struct resolver *r);
void cache__free(struct resolver *r);
/* q->ck and q->qname_len, from its question (after allow__name_key) */
void cache__key(struct dns_query *q, const struct dns_question *dq);
/* Answer q from an answer its sandbox was given for the same question, its TTLs counted down,
 * opening its addresses again as an answer from upstream would (query__answer): true when it
 * did (q is freed), false when none is kept.
 */
bool cache__answer(struct resolver *r, struct dns_query *q, const struct dns_question *dq);
/* Keep the answer upstream gave q, if it may be (NOERROR, not cut, a TTL, no bound reached). */
void cache__store(struct resolver *r, const struct dns_query *q, const uint8_t *msg, size_t len,
		  const struct dns_answer *ans);
void cache__sweep(struct resolver *r, uint64_t now);
void cache__sandbox_gone(struct resolver *r, uint64_t sandbox);
size_t cache__count(const struct resolver *r);

/* events.c */
void query__emit(struct resolver *r, const struct dns_query *q, bool allowed, uint8_t rcode,
		 const struct answer_list *a, const char *error);

#endif /* EGRET_DNS_RESOLVER_H */
