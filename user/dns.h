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
	unsigned int timeout_ms;
};

struct dns_maps {
	int listeners_fd;
	int clients_fd;
	int allow_fd;
};

struct resolver;

int dns__parse_server(const char *text, struct sockaddr_storage *ss, socklen_t *len);
int dns__resolv_conf_server(const char *path, char *out, size_t size);

int resolver__new(struct resolver **out, const struct dns_options *o, const struct dns_maps *m,
		  struct loop *loop, struct engine *e);
void resolver__set_stream(struct resolver *r, struct stream *s);
int resolver__listen_here(struct resolver *r);
void resolver__netns_seen(struct resolver *r, uint64_t cookie, uint32_t pid, uint64_t sandbox);
void resolver__scan(struct resolver *r, const char *cgroup_root);
void resolver__sandbox_gone(struct resolver *r, uint64_t sandbox);
void resolver__tick(struct resolver *r);
void resolver__status(struct resolver *r, struct control_req *req);
void resolver__free(struct resolver *r);

#endif /* EGRET_DNS_H_USER */
