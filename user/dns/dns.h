/* egret's resolver: answers every DNS query a sandbox sends (include/egret/dns.h steers them
 * here), forwarding names the policy allows to the upstream resolver and refusing the rest, and
 * opening the addresses of allowed answers to that sandbox for their TTL, before the answer is
 * released.
 */
#ifndef EGRET_DNS_H_USER
#define EGRET_DNS_H_USER

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "control.h"
#include "loop.h"

#define DNS_DEFAULT_MIN_TTL    30   /* seconds an allowed address stays open at least */
#define DNS_DEFAULT_GRACE      30   /* seconds added after the TTL */
#define DNS_DEFAULT_MAX_IPS    32   /* addresses per name and sandbox */
#define DNS_DEFAULT_TIMEOUT_MS 5000 /* upstream */

struct engine;
struct stream;

struct dns_options {
	const char
		*upstream; /* ADDR[:PORT], [ADDR]:PORT; NULL: the first nameserver of resolv.conf */
	const char *resolv_conf;
	bool nxdomain; /* answer names not allowed with NXDOMAIN instead of REFUSED */
	unsigned int min_ttl;
	unsigned int grace;
	unsigned int max_ips;
	unsigned int max_names; /* names holding addresses for one sandbox at once */
	unsigned int max_addrs; /* addresses open to one sandbox at once */
	unsigned int max_ttl;	/* the longest an answer's address stays open, before grace */
	unsigned int timeout_ms;
	unsigned int cache; /* answers kept to answer a sandbox's repeats (0: none) */
};

struct dns_maps {
	int listeners_fd;
	int clients_fd;
	int client_gen_fd; /* dns_client_gen, mapped to skip look-ups of dns_clients (-1: none) */
	int allow_fd;
	int dev_nat_fd;	      /* queries steered at a device (include/egret/device.h) */
	int dev_listeners_fd; /* where the resolver listens for devices: steered there too */
};

struct resolver;
struct egret_dns_client;
struct ldns_struct_pkt;

#define DNS_HOST_MAX	253    /* characters of a host name */
#define DNS_NAME_LEN	256    /* a name as text: a host name fits, escaped text may be cut */
#define DNS_NAMES_MAX	131072 /* names holding addresses, all sandboxes together */
#define DNS_CNAME_DEPTH 16     /* CNAMEs followed from the name asked */

#define DNS_EDNS_UDP	1232 /* the UDP payload size egret offers upstream (DNS flag day 2020) */
/* the largest query egret sends upstream: header, a name, type and class, an OPT record */
#define DNS_BARE_MAX (12 + 255 + 4 + 11)

/* The question of a query from a sandbox. */
struct dns_question {
	uint16_t id, type;
	bool host;		 /* the name is a host name (see dns__host_name) */
	char name[DNS_NAME_LEN]; /* host: the host name; otherwise the name escaped, for events */
	/* what goes upstream: the flags a query may carry, the name as asked (wire form), the
	 * class, and whether the client spoke EDNS (its DO bit): nothing else of the message
	 */
	uint16_t qclass, edns_size; /* edns_size: the UDP payload the client takes */
	bool rd, ad, cd, edns, edns_do;
	uint8_t wire_len;
	uint8_t wire[255];
};

/* An address of an answer: A or AAAA, owned by the name asked or a CNAME it leads to. */
struct dns_addr {
	uint32_t addr[4]; /* network order, IPv4 mapped */
	uint32_t ttl;
	uint16_t type; /* LDNS_RR_TYPE_A or LDNS_RR_TYPE_AAAA */
};

/* What an upstream answer says about the question asked. */
struct dns_answer {
	uint8_t rcode;
	bool truncated;
	unsigned int ncnames; /* the CNAME chain from the name asked, in the order found */
	char cnames[DNS_CNAME_DEPTH][DNS_NAME_LEN];
	size_t naddrs;
	struct dns_addr *addrs;
};

/* Network-order fields of a message */
static inline uint16_t dns__get16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t dns__get32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void dns__put32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

int dns__parse_server(const char *text, struct sockaddr_storage *ss, socklen_t *len);
int dns__resolv_conf_server(const char *path, char *out, size_t size);
/* A wire-format name (len bytes, labels up to the root label) as a host name: its labels, each
 * of letters, digits, '-' and '_', joined by dots, in lower case. -EINVAL for any other name
 * (a label holding a dot, a space, a NUL...: as text it could pass for another name), -EBADMSG
 * when it is not a whole wire name.
 */
int dns__host_name(const uint8_t *wire, size_t len, char *out, size_t size);
/* A query as a sandbox sent it: 0 when it is one question for a host name, -EINVAL when it is
 * a query for a name that is not a host name (to be refused), -EBADMSG when it is not a query
 * (to be dropped). Read by egret's own walk of its records, not by ldns: only the header, the
 * question and an OPT record are looked at, and each record must end where its RDLENGTH says.
 */
int dns__parse_query(const uint8_t *msg, size_t len, struct dns_question *q);
/* An answer made here to q (NULL: a message that was no whole question): id, QR, RD as asked
 * (set without q), RA, rcode, and q's question when there is one. Its length.
 */
size_t dns__rcode_answer(const struct dns_question *q, uint16_t id, uint8_t rcode,
			 uint8_t out[DNS_BARE_MAX]);
/* The query egret sends upstream for q (id 0: the caller sets it): the header with RD, AD and CD
 * as the client set them, the question alone, and an OPT record without options (the client's
 * UDP payload, between 512 and DNS_EDNS_UDP: the answer goes back to it as it comes; the
 * client's DO bit) when the client sent one. Never the client's other records,
 * its EDNS options, or any byte it added: nothing a sandbox writes there leaves the host. Its
 * length, at most DNS_BARE_MAX.
 */
size_t dns__bare_query(const struct dns_question *q, uint8_t out[DNS_BARE_MAX]);
/* An upstream answer to the question (name, type): 0 with *a filled (dns__answer_free), -ENOENT
 * when it answers another question, -EBADMSG when it is not an answer.
 */
int dns__parse_answer(const uint8_t *msg, size_t len, const char *name, uint16_t type,
		      struct dns_answer *a);
void dns__answer_free(struct dns_answer *a);
/* Where the TTL of each record of an answer is (offsets of their 32-bit fields; not OPT's,
 * which holds flags), at most max of them, and the least of those TTLs (0 when none, or one
 * with its top bit set): how many, -E2BIG when more than max, -EBADMSG when msg is not one
 * question and whole records ending where it ends.
 */
int dns__ttl_offsets(const uint8_t *msg, size_t len, uint16_t *offs, size_t max, uint32_t *min_ttl);

int resolver__new(struct resolver **out, const struct dns_options *o, const struct dns_maps *m,
		  struct loop *loop, struct engine *e);
void resolver__set_stream(struct resolver *r, struct stream *s);
int resolver__listen_here(struct resolver *r);
void resolver__netns_seen(struct resolver *r, uint64_t cookie, uint32_t pid, uint64_t sandbox);
/* A registered sandbox's network namespace (nsfd, from its runtime's hook): listen there now,
 * before its first query. 0 when listening (or nsfd is egretd's own namespace), else -errno.
 */
int resolver__listen_in(struct resolver *r, int nsfd, uint64_t sandbox);
void resolver__scan(struct resolver *r, const char *cgroup_root);
/* Listen for the DNS a device steers to addr (network order, IPv4 mapped; an address of
 * egretd's namespace), sharing the sockets of an earlier call for the same address: *port
 * (host order), or -errno. resolver__device_release undoes one call.
 */
int resolver__device_listener(struct resolver *r, const uint32_t addr[4], uint16_t *port);
void resolver__device_release(struct resolver *r, const uint32_t addr[4]);
/* fn(ctx, sock, sandboxes, n) for each network namespace the resolver listens in for
 * sandboxes (not egretd's own): sock is a socket in it (ioctl SIOCGSKNS opens the namespace).
 */
void resolver__each_netns(struct resolver *r,
			  void (*fn)(void *ctx, int sock, const uint64_t *sandboxes, size_t n),
			  void *ctx);
/* The sandbox was unregistered or its cgroup removed: the namespaces it alone used stop being
 * listened in, and the names and addresses its answers opened go (allow.c).
 */
void resolver__sandbox_gone(struct resolver *r, uint64_t sandbox);
/* One datagram a sandbox sent (who: the kernel's record of its socket), answered from fd to
 * from: what the UDP listeners do with each query they receive.
 */
void resolver__serve_udp(struct resolver *r, int fd, const struct sockaddr_storage *from,
			 socklen_t fromlen, const uint8_t *msg, size_t len,
			 const struct egret_dns_client *who);
void resolver__tick(struct resolver *r);
void resolver__status(struct resolver *r, struct control_req *req);
void resolver__free(struct resolver *r);

#endif /* EGRET_DNS_H_USER */
