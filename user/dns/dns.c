/* egret's resolver (see dns.h). One listener set per network namespace that holds sandboxed
 * processes: UDP and TCP on 127.0.0.1 and ::1, same port for both protocols, created by
 * entering the namespace (setns), binding, and coming back; the sockets stay in that namespace
 * and egretd serves them from its own loop. A query is served only when the kernel recorded its
 * source socket in `dns_clients` (so only queries steered from a sandbox are answered), parsed
 * with ldns, checked against the domain rules of its sandbox, and either refused locally or
 * forwarded upstream (UDP, then TCP when truncated). Addresses of an allowed answer, following
 * CNAMEs, go into `dns_allow` before the answer goes back.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <errno.h>
#include <fcntl.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <ldns/ldns.h>
#include <linux/types.h>

#include "egret/events.h"
#include "egret/fnv.h"
#include "egret/dns.h"
#include "egret/policy.h"
#include "addr.h"
#include "dns.h"
#include "engine.h"
#include "log.h"
#include "stream.h"
#include "util.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

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
	uint64_t sandbox; /* the sandbox it was made for; 0: egretd's own namespace */
	struct watch w[NSOCK];
	uint16_t port4, port6; /* host order */
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
	uint16_t qtype;
	uint8_t *msg; /* the client's query, id replaced by up_id */
	size_t msg_len;
	uint64_t start_ns, deadline_ns;
	char rule[400];
	struct upstream_sock *us; /* UDP upstream, shared */
	struct watch up;	  /* TCP upstream, this query's own */
	bool up_tcp;
	uint8_t *up_buf;
	size_t up_len, up_sent;
	bool up_reading; /* TCP upstream: the query is out, up_buf collects the answer */
	struct dns_query *next;
};

/* an address an answer opened to a sandbox, mirrored from `dns_allow` */
struct allow_entry {
	struct egret_dns_allow_key key;
	uint64_t expires_ns;
	bool used;
};

/* the addresses a name opened to a sandbox, for the per-name cap */
struct name_entry {
	uint64_t sandbox;
	char name[LDNS_MAX_DOMAINLEN + 1];
	unsigned int n;
	struct {
		uint32_t addr[4];
		uint64_t expires_ns;
	} * ips;
	bool used;
};

struct dns_stats {
	uint64_t queries, allowed, refused, not_host, outside, malformed, upstream_fail, timeouts,
		opened, capped, map_full, tcp_evicted;
};

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
	struct allow_entry *allow;
	size_t allow_cap, allow_used;
	struct name_entry *names;
	size_t names_cap, names_used;
	uint64_t last_sweep_ns;
	struct dns_stats st;
	uint8_t buf[DNS_MSG_MAX + 2];
};

/* --- configuration ------------------------------------------------------------------------ */

/* "192.0.2.53", "192.0.2.53:5353", "2001:db8::53", "[2001:db8::53]:5353" */
int dns__parse_server(const char *text, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *port = NULL, *colon = strrchr(text, ':');
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	uint64_t p = 53;
	size_t hlen;

	memset(ss, 0, sizeof(*ss));
	if (text[0] == '[') {
		const char *end = strchr(text, ']');

		if (!end || (end[1] && end[1] != ':'))
			return -EINVAL;
		hlen = (size_t)(end - text - 1);
		if (hlen >= sizeof(host))
			return -EINVAL;
		memcpy(host, text + 1, hlen);
		host[hlen] = '\0';
		port = end[1] ? end + 2 : NULL;
	} else if (colon && strchr(text, ':') == colon) {
		hlen = (size_t)(colon - text);
		if (hlen >= sizeof(host))
			return -EINVAL;
		memcpy(host, text, hlen);
		host[hlen] = '\0';
		port = colon + 1;
	} else {
		if (strlen(text) >= sizeof(host))
			return -EINVAL;
		strcpy(host, text);
	}
	if (port && (parse_u64(port, 65535, &p) || p == 0))
		return -EINVAL;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)p);
		*len = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*s6);
		return 0;
	}
	return -EINVAL;
}

/* The first "nameserver" of a resolv.conf. */
int dns__resolv_conf_server(const char *path, char *out, size_t size)
{
	char line[512], word[64], addr[128];
	FILE *f = fopen(path, "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		if (sscanf(line, " %63s %127s", word, addr) == 2 && !strcmp(word, "nameserver") &&
		    strlen(addr) < size) {
			strcpy(out, addr);
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

/* --- events -------------------------------------------------------------------------------- */

static const char *type_name(uint16_t type, char *buf, size_t size)
{
	char *s = ldns_rr_type2str((ldns_rr_type)type);

	snprintf(buf, size, "%s", s ? s : "?");
	free(s);
	return buf;
}

static const char *rcode_name(uint8_t rcode, char *buf, size_t size)
{
	char *s = ldns_pkt_rcode2str((ldns_pkt_rcode)rcode);

	snprintf(buf, size, "%s", s ? s : "?");
	free(s);
	return buf;
}

struct answer_list {
	char *text[MAX_ANSWERS];
	char store[MAX_ANSWERS][LDNS_MAX_DOMAINLEN + 16];
	size_t n;
	uint32_t ttl; /* granted seconds, 0 when nothing was opened */
	uint32_t opened;
};

static void emit_query(struct resolver *r, const struct dns_query *q, bool allowed, uint8_t rcode,
		       const struct answer_list *a, const char *error)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	Egret__V1__Process pr = EGRET__V1__PROCESS__INIT;
	Egret__V1__DnsQuery dq = EGRET__V1__DNS_QUERY__INIT;
	char tname[16], rname[16], server[ADDR_STRLEN + 8], comm[EGRET_COMM_LEN + 1];
	char addr[ADDR_STRLEN], sbname[SANDBOX_NAME_MAX + 24];
	const char *name;

	if (!r->stream)
		return;
	name = engine__sandbox_name(r->engine, q->who.sandbox_id);
	if (name)
		snprintf(sbname, sizeof(sbname), "%s", name);
	else
		snprintf(sbname, sizeof(sbname), "cgroup-%llu",
			 (unsigned long long)q->who.sandbox_id);
	sb.cgroup_id = q->who.sandbox_id;
	sb.name = sbname;
	memcpy(comm, q->who.comm, EGRET_COMM_LEN);
	comm[EGRET_COMM_LEN] = '\0';
	pr.pid = q->who.pid;
	pr.tid = q->who.tid;
	pr.comm = comm;
	addr__format((const uint8_t *)q->who.orig_addr, addr, sizeof(addr));
	snprintf(server, sizeof(server), strchr(addr, ':') ? "[%s]:%u" : "%s:%u", addr,
		 q->who.orig_port);
	dq.name = (char *)q->name;
	dq.type = (char *)type_name(q->qtype, tname, sizeof(tname));
	dq.rcode = (char *)rcode_name(rcode, rname, sizeof(rname));
	dq.allowed = allowed;
	dq.latency_us = (now_ns(CLOCK_MONOTONIC) - q->start_ns) / 1000;
	dq.server = server;
	dq.transport = (char *)(q->conn ? "tcp" : "udp");
	dq.rule = (char *)q->rule;
	dq.error = (char *)(error ? error : "");
	if (a) {
		dq.n_answers = a->n;
		dq.answers = (char **)a->text;
		dq.ttl = a->ttl;
		dq.addresses_opened = a->opened;
	}
	ev.time_unix_nano = 0;
	ev.sandbox = &sb;
	ev.process = &pr;
	ev.class_uid = OCSF_DNS_ACTIVITY;
	ev.activity_id = OCSF_DNS_ACTIVITY_RESPONSE;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_DNS_QUERY;
	ev.dns_query = &dq;
	stream__emit(r->stream, &ev);
}

/* --- addresses opened by answers ----------------------------------------------------------- */

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = egret_fnv64_byte(h, b[i]);
	return h;
}

static struct allow_entry *allow_slot(struct resolver *r, const struct egret_dns_allow_key *k,
				      bool create)
{
	size_t mask, i;

	if (create && (r->allow_used + 1) * 2 > r->allow_cap) {
		struct allow_entry *old = r->allow;
		size_t oldcap = r->allow_cap, cap = oldcap ? oldcap * 2 : 1024;

		r->allow = calloc(cap, sizeof(*r->allow));
		if (!r->allow) {
			r->allow = old;
			return NULL;
		}
		r->allow_cap = cap;
		r->allow_used = 0;
		for (size_t j = 0; j < oldcap; j++) {
			if (old[j].used)
				*allow_slot(r, &old[j].key, true) = old[j];
		}
		free(old);
	}
	if (!r->allow_cap)
		return NULL;
	mask = r->allow_cap - 1;
	i = hash_bytes(k, sizeof(*k), EGRET_FNV64_OFFSET) & mask;
	while (r->allow[i].used && memcmp(&r->allow[i].key, k, sizeof(*k)))
		i = (i + 1) & mask;
	if (!r->allow[i].used) {
		if (!create)
			return NULL;
		r->allow[i].used = true;
		r->allow[i].key = *k;
		r->allow[i].expires_ns = 0;
		r->allow_used++;
	}
	return &r->allow[i];
}

static struct name_entry *name_slot(struct resolver *r, uint64_t sandbox, const char *name)
{
	uint64_t h = hash_bytes(name, strlen(name), hash_bytes(&sandbox, 8, EGRET_FNV64_OFFSET));
	size_t mask, i;

	if ((r->names_used + 1) * 2 > r->names_cap) {
		struct name_entry *old = r->names;
		size_t oldcap = r->names_cap, cap = oldcap ? oldcap * 2 : 256;

		r->names = calloc(cap, sizeof(*r->names));
		if (!r->names) {
			r->names = old;
			return NULL;
		}
		r->names_cap = cap;
		r->names_used = 0;
		for (size_t j = 0; j < oldcap; j++) {
			if (old[j].used)
				*name_slot(r, old[j].sandbox, old[j].name) = old[j];
		}
		free(old);
		h = hash_bytes(name, strlen(name), hash_bytes(&sandbox, 8, EGRET_FNV64_OFFSET));
	}
	mask = r->names_cap - 1;
	i = h & mask;
	while (r->names[i].used &&
	       (r->names[i].sandbox != sandbox || strcmp(r->names[i].name, name)))
		i = (i + 1) & mask;
	if (!r->names[i].used) {
		memset(&r->names[i], 0, sizeof(r->names[i]));
		r->names[i].used = true;
		r->names[i].sandbox = sandbox;
		snprintf(r->names[i].name, sizeof(r->names[i].name), "%s", name);
		r->names_used++;
	}
	return &r->names[i];
}

/* Count addr against name's cap; false when the name already holds max_ips live addresses. */
static bool name_admits(struct resolver *r, struct name_entry *ne, const uint32_t *addr,
			uint64_t expires, uint64_t now)
{
	unsigned int slot = ne->n;

	for (unsigned int i = 0; i < ne->n; i++) {
		if (!memcmp(ne->ips[i].addr, addr, 16)) {
			if (expires > ne->ips[i].expires_ns)
				ne->ips[i].expires_ns = expires;
			return true;
		}
		if (ne->ips[i].expires_ns <= now && slot == ne->n)
			slot = i; /* an expired one can be reused */
	}
	if (slot == ne->n) {
		if (ne->n >= r->o.max_ips)
			return false;
		if (!ne->ips)
			ne->ips = calloc(r->o.max_ips, sizeof(*ne->ips));
		if (!ne->ips)
			return false;
		ne->n++;
	}
	memcpy(ne->ips[slot].addr, addr, 16);
	ne->ips[slot].expires_ns = expires;
	return true;
}

/* Open addr to the sandbox until expires (boot time); the map is written before the answer is
 * released, so the connect that follows finds it.
 */
static bool open_address(struct resolver *r, uint64_t sandbox, struct name_entry *ne,
			 const uint32_t *addr, uint64_t expires, uint64_t now)
{
	struct egret_dns_allow_key k = { .sandbox_id = sandbox };
	struct egret_dns_allow v;
	struct allow_entry *ae;

	memcpy(k.addr, addr, 16);
	if (ne && !name_admits(r, ne, addr, expires, now)) {
		r->st.capped++;
		return false;
	}
	ae = allow_slot(r, &k, true);
	/* already open long enough: a repeated answer does not cost a map update */
	if (ae && ae->expires_ns + 1000000000ull >= expires)
		return true;
	v.expires_ns = expires;
	if (bpf_map_update_elem(r->m.allow_fd, &k, &v, BPF_ANY)) {
		r->st.map_full++;
		log_warn("dns: cannot open an address to sandbox %llu: %s",
			 (unsigned long long)sandbox, strerror(errno));
		return false;
	}
	if (ae)
		ae->expires_ns = expires;
	r->st.opened++;
	return true;
}

/* Delete expired addresses from the map (the kernel already ignores them), and forget names
 * whose addresses all expired.
 */
static void sweep_allow(struct resolver *r, uint64_t now)
{
	struct allow_entry *old = r->allow;
	struct name_entry *old_names = r->names;
	size_t oldcap = r->allow_cap, old_names_cap = r->names_cap;

	r->allow = NULL;
	r->allow_cap = r->allow_used = 0;
	for (size_t i = 0; i < oldcap; i++) {
		struct allow_entry *ae;

		if (!old[i].used)
			continue;
		if (old[i].expires_ns <= now) {
			bpf_map_delete_elem(r->m.allow_fd, &old[i].key);
			continue;
		}
		ae = allow_slot(r, &old[i].key, true);
		if (ae)
			ae->expires_ns = old[i].expires_ns;
	}
	free(old);
	r->names = NULL;
	r->names_cap = r->names_used = 0;
	for (size_t i = 0; i < old_names_cap; i++) {
		struct name_entry *ne = &old_names[i], *kept;
		bool live = false;

		for (unsigned int j = 0; ne->used && j < ne->n; j++)
			live |= ne->ips[j].expires_ns > now;
		if (!live || !(kept = name_slot(r, ne->sandbox, ne->name))) {
			free(ne->ips);
			continue;
		}
		kept->n = ne->n;
		kept->ips = ne->ips;
	}
	free(old_names);
}

/* Entries a previous egretd left in the pinned map: learn the live ones, delete the rest. */
static void adopt_allow(struct resolver *r)
{
	struct egret_dns_allow_key k, next, *dead = NULL;
	size_t ndead = 0, cap = 0;
	struct egret_dns_allow v;
	bool have = false;
	uint64_t now = now_ns(CLOCK_BOOTTIME);

	while (bpf_map_get_next_key(r->m.allow_fd, have ? &k : NULL, &next) == 0) {
		k = next;
		have = true;
		if (bpf_map_lookup_elem(r->m.allow_fd, &k, &v) == 0 && v.expires_ns > now) {
			struct allow_entry *ae = allow_slot(r, &k, true);

			if (ae)
				ae->expires_ns = v.expires_ns;
			continue;
		}
		if (ndead == cap) {
			struct egret_dns_allow_key *nd;

			cap = cap ? cap * 2 : 256;
			nd = realloc(dead, cap * sizeof(*nd));
			if (!nd)
				break;
			dead = nd;
		}
		dead[ndead++] = k;
	}
	for (size_t i = 0; i < ndead; i++)
		bpf_map_delete_elem(r->m.allow_fd, &dead[i]);
	free(dead);
}

/* --- listeners ------------------------------------------------------------------------------ */

static void on_udp(struct watch *w, uint32_t events);
static void on_accept(struct watch *w, uint32_t events);

/* A fresh network namespace has lo down: 127.0.0.1 is unreachable until it is up. */
static void loopback_up(void)
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return;
	strcpy(ifr.ifr_name, "lo");
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) == 0 && !(ifr.ifr_flags & IFF_UP)) {
		ifr.ifr_flags |= IFF_UP;
		ioctl(fd, SIOCSIFFLAGS, &ifr);
	}
	close(fd);
}

static int bound(int family, int type, uint16_t port)
{
	struct sockaddr_storage ss = { 0 };
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	socklen_t len;
	int fd, one = 1;

	fd = socket(family, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (family == AF_INET) {
		s4->sin_family = AF_INET;
		s4->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		s4->sin_port = htons(port);
		len = sizeof(*s4);
	} else {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		s6->sin6_family = AF_INET6;
		s6->sin6_addr = in6addr_loopback;
		s6->sin6_port = htons(port);
		len = sizeof(*s6);
	}
	if (bind(fd, (struct sockaddr *)&ss, len) || (type == SOCK_STREAM && listen(fd, 128))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static uint16_t local_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &len))
		return 0;
	return ntohs(ss.ss_family == AF_INET ? ((struct sockaddr_in *)&ss)->sin_port
					     : ((struct sockaddr_in6 *)&ss)->sin6_port);
}

/* A UDP and a TCP socket on the same loopback port (the kernel steers both to one port). */
static int bind_pair(int family, int *udp, int *tcp, uint16_t *port)
{
	for (int tries = 0; tries < 32; tries++) {
		*udp = bound(family, SOCK_DGRAM, 0);
		if (*udp < 0)
			return *udp;
		*port = local_port(*udp);
		*tcp = bound(family, SOCK_STREAM, *port);
		if (*tcp >= 0)
			return 0;
		close(*udp);
		if (*tcp != -EADDRINUSE)
			return *tcp;
	}
	return -EADDRINUSE;
}

static void listener_close(struct dns_listener *l)
{
	for (int i = 0; i < NSOCK; i++) {
		if (l->w[i].fd >= 0) {
			loop__del(l->r->loop, &l->w[i]);
			close(l->w[i].fd);
			l->w[i].fd = -1;
		}
	}
}

/* Closed now, freed by resolver__tick(): a sandbox can go (a ring buffer record) in the same
 * epoll batch that still holds an event for one of its listener's sockets.
 */
static void listener_retire(struct dns_listener *l)
{
	listener_close(l);
	l->next = l->r->retired_ls;
	l->r->retired_ls = l;
}

/* Make the sockets in the current namespace (the caller has entered it). */
static int listener_sockets(struct dns_listener *l)
{
	int fds[NSOCK] = { -1, -1, -1, -1 }, err;

	loopback_up();
	err = bind_pair(AF_INET, &fds[UDP4], &fds[TCP4], &l->port4);
	if (err)
		return err;
	if (bind_pair(AF_INET6, &fds[UDP6], &fds[TCP6], &l->port6)) {
		fds[UDP6] = fds[TCP6] = -1; /* no IPv6 here: IPv6 queries are refused */
		l->port6 = 0;
	}
	for (int i = 0; i < NSOCK; i++) {
		l->w[i].fd = fds[i];
		l->w[i].fn = i == UDP4 || i == UDP6 ? on_udp : on_accept;
		l->w[i].data = l;
	}
	return 0;
}

static struct dns_listener *listener_find(struct resolver *r, uint64_t cookie)
{
	for (struct dns_listener *l = r->listeners; l; l = l->next) {
		if (l->cookie == cookie)
			return l;
	}
	return NULL;
}

/* Listen in the namespace of nsfd (-1: egretd's own) and tell the kernel where. */
static int listener_open(struct resolver *r, int nsfd, uint64_t sandbox, uint64_t *cookie_out)
{
	struct egret_dns_listener v = { 0 };
	struct dns_listener *l = calloc(1, sizeof(*l));
	socklen_t clen = sizeof(uint64_t);
	uint64_t cookie = 0;
	int err;

	if (!l)
		return -ENOMEM;
	l->r = r;
	l->sandbox = sandbox;
	for (int i = 0; i < NSOCK; i++)
		l->w[i].fd = -1;
	if (nsfd >= 0 && setns(nsfd, CLONE_NEWNET)) {
		free(l);
		return -errno;
	}
	err = listener_sockets(l);
	if (nsfd >= 0 && setns(r->own_netns, CLONE_NEWNET))
		log_err("dns: cannot return to egretd's network namespace: %s", strerror(errno));
	if (!err && getsockopt(l->w[UDP4].fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &clen))
		err = -errno;
	if (!err && listener_find(r, cookie))
		err = -EEXIST; /* raced with another report of the same namespace */
	if (err) {
		listener_close(l);
		free(l);
		return err;
	}
	l->cookie = cookie;
	for (int i = 0; i < NSOCK; i++) {
		if (l->w[i].fd >= 0)
			loop__add(r->loop, &l->w[i], EPOLLIN);
	}
	v.addr4 = htonl(INADDR_LOOPBACK);
	v.port4 = htons(l->port4);
	if (l->port6) {
		memcpy(v.addr6, &in6addr_loopback, 16);
		v.port6 = htons(l->port6);
	}
	if (bpf_map_update_elem(r->m.listeners_fd, &cookie, &v, BPF_ANY)) {
		err = -errno;
		listener_close(l);
		free(l);
		return err;
	}
	l->next = r->listeners;
	r->listeners = l;
	if (cookie_out)
		*cookie_out = cookie;
	return 0;
}

int resolver__listen_here(struct resolver *r)
{
	uint64_t cookie;
	int err = listener_open(r, -1, 0, &cookie);

	if (err)
		log_err("dns: cannot listen on loopback in egretd's network namespace: %s",
			strerror(-err));
	else
		log_info("dns: resolver listening in egretd's namespace (cookie %llu), upstream %s",
			 (unsigned long long)cookie, r->upstream_text);
	return err;
}

/* A sandboxed process is in a namespace without a listener: set one up there. */
void resolver__netns_seen(struct resolver *r, uint64_t cookie, uint32_t pid, uint64_t sandbox)
{
	char path[64];
	uint64_t got = 0;
	int nsfd, err;

	if (cookie && listener_find(r, cookie))
		return;
	snprintf(path, sizeof(path), "/proc/%u/ns/net", pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0) {
		log_debug("dns: namespace %llu of pid %u: %s", (unsigned long long)cookie, pid,
			  strerror(errno));
		return;
	}
	err = listener_open(r, nsfd, sandbox, &got);
	close(nsfd);
	if (err && err != -EEXIST)
		log_warn("dns: cannot listen in the network namespace of pid %u: %s", pid,
			 strerror(-err));
	else if (!err)
		log_debug("dns: listening in namespace %llu of pid %u", (unsigned long long)got,
			  pid);
}

/* The processes of one cgroup directory and its descendants, for resolver__scan. */
static void scan_cgroup(struct resolver *r, const char *dir, uint64_t sandbox, ino_t own_ns,
			ino_t *seen, size_t *nseen, size_t cap)
{
	char path[PATH_MAX], line[32];
	struct dirent *de;
	struct stat st;
	FILE *f;
	DIR *d;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	while (f && fgets(line, sizeof(line), f)) {
		unsigned int pid = (unsigned int)strtoul(line, NULL, 10);
		bool known = false;

		snprintf(path, sizeof(path), "/proc/%u/ns/net", pid);
		if (stat(path, &st) || st.st_ino == own_ns)
			continue;
		for (size_t i = 0; i < *nseen; i++)
			known |= seen[i] == st.st_ino;
		if (known || *nseen == cap)
			continue;
		seen[(*nseen)++] = st.st_ino;
		resolver__netns_seen(r, 0, pid, sandbox);
	}
	if (f)
		fclose(f);
	d = opendir(dir);
	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (stat(path, &st) == 0)
			scan_cgroup(r, path, sandbox ? sandbox : st.st_ino, own_ns, seen, nseen,
				    cap);
	}
	if (d)
		closedir(d);
}

/* At start: listen in every namespace sandboxed processes are in already. */
void resolver__scan(struct resolver *r, const char *cgroup_root)
{
	ino_t seen[1024];
	size_t nseen = 0;
	struct stat st;

	if (fstat(r->own_netns, &st))
		return;
	scan_cgroup(r, cgroup_root, 0, st.st_ino, seen, &nseen, sizeof(seen) / sizeof(seen[0]));
}

/* The sandbox is gone: so are the namespaces made for it (our sockets kept them alive). */
void resolver__sandbox_gone(struct resolver *r, uint64_t sandbox)
{
	struct dns_listener **pp = &r->listeners;

	while (*pp) {
		struct dns_listener *l = *pp;

		if (l->sandbox != sandbox || !sandbox) {
			pp = &l->next;
			continue;
		}
		for (struct dns_query *q = r->pending; q; q = q->next) {
			if (q->l == l) {
				q->l = NULL;
				q->udp_fd = -1; /* nowhere to answer */
			}
		}
		for (struct dns_conn *c = r->conns; c; c = c->next) {
			if (c->l == l) {
				c->closing = true;
				c->l = NULL; /* freed with the listener: on_conn() ignores it */
			}
		}
		bpf_map_delete_elem(r->m.listeners_fd, &l->cookie);
		*pp = l->next;
		listener_retire(l);
	}
}

/* --- parsing: pure functions of the bytes ------------------------------------------------- */

/* A name as ldns prints it (a dot or an odd byte in a label escaped), lower case, without the
 * final dot; "" when there is none.
 */
static void lower_name(const ldns_rdf *rdf, char *out, size_t size)
{
	char *s = rdf ? ldns_rdf2str(rdf) : NULL;
	size_t n;

	snprintf(out, size, "%s", s ? s : "");
	free(s);
	n = strlen(out);
	if (n > 1 && out[n - 1] == '.')
		out[--n] = '\0';
	for (char *p = out; *p; p++)
		*p = (char)tolower((unsigned char)*p);
}

static bool host_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/* The labels of wire into out, for dns__host_name(); out is left unterminated on errors. */
static int host_labels(const uint8_t *wire, size_t len, char *out, size_t size)
{
	size_t i = 0, o = 0;

	for (;;) {
		uint8_t n;

		if (i >= len)
			return -EBADMSG; /* no root label */
		n = wire[i++];
		if (n == 0)
			break;
		if (n > 63 || n > len - i)
			return -EBADMSG;
		if (o + (o ? 1 : 0) + n > DNS_HOST_MAX || o + (o ? 1 : 0) + n >= size)
			return -EINVAL; /* longer than a host name can be */
		if (o)
			out[o++] = '.';
		for (size_t j = 0; j < n; j++) {
			uint8_t c = wire[i + j];

			if (!host_char(c))
				return -EINVAL;
			out[o++] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
		}
		i += n;
	}
	out[o] = '\0';
	if (i != len)
		return -EBADMSG;
	return o ? 0 : -EINVAL; /* the root is no host */
}

int dns__host_name(const uint8_t *wire, size_t len, char *out, size_t size)
{
	int ret = size ? host_labels(wire, len, out, size) : -EINVAL;

	if (ret && size)
		out[0] = '\0';
	return ret;
}

int dns__parse_query(const uint8_t *msg, size_t len, struct dns_question *q, ldns_pkt **pkt)
{
	ldns_pkt *p = NULL;
	const ldns_rdf *owner;
	ldns_rr *qrr;
	int ret;

	memset(q, 0, sizeof(*q));
	if (pkt)
		*pkt = NULL;
	if (len < 12 || ldns_wire2pkt(&p, msg, len) != LDNS_STATUS_OK || ldns_pkt_qr(p) ||
	    ldns_pkt_get_opcode(p) != LDNS_PACKET_QUERY || ldns_pkt_qdcount(p) != 1 ||
	    !(qrr = ldns_rr_list_rr(ldns_pkt_question(p), 0)) || !(owner = ldns_rr_owner(qrr)) ||
	    ldns_rdf_get_type(owner) != LDNS_RDF_TYPE_DNAME) {
		ldns_pkt_free(p);
		return -EBADMSG;
	}
	q->id = ldns_pkt_id(p);
	q->type = (uint16_t)ldns_rr_get_type(qrr);
	ret = dns__host_name(ldns_rdf_data(owner), ldns_rdf_size(owner), q->name, sizeof(q->name));
	q->host = ret == 0;
	if (ret) {
		lower_name(owner, q->name, sizeof(q->name));
		ret = -EINVAL;
	}
	if (pkt)
		*pkt = p;
	else
		ldns_pkt_free(p);
	return ret;
}

static bool in_chain(const struct dns_answer *a, const char *name, const char *n)
{
	if (!strcmp(name, n))
		return true;
	for (unsigned int i = 0; i < a->ncnames; i++) {
		if (!strcmp(a->cnames[i], n))
			return true;
	}
	return false;
}

/* The CNAMEs that lead on from name, however the answer orders them. */
static void answer_chain(const ldns_rr_list *ans, size_t n, const char *name, struct dns_answer *a)
{
	char owner[DNS_NAME_LEN], target[DNS_NAME_LEN];
	bool grew = true;

	while (grew && a->ncnames < DNS_CNAME_DEPTH) {
		grew = false;
		for (size_t i = 0; i < n && a->ncnames < DNS_CNAME_DEPTH; i++) {
			ldns_rr *rr = ldns_rr_list_rr(ans, i);

			if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_CNAME || !ldns_rr_rdf(rr, 0))
				continue;
			lower_name(ldns_rr_owner(rr), owner, sizeof(owner));
			if (!in_chain(a, name, owner))
				continue;
			lower_name(ldns_rr_rdf(rr, 0), target, sizeof(target));
			if (in_chain(a, name, target))
				continue;
			memcpy(a->cnames[a->ncnames++], target, sizeof(target));
			grew = true;
		}
	}
}

/* The A and AAAA records owned by name or a name of its CNAME chain. */
static void answer_addrs(const ldns_rr_list *ans, size_t n, const char *name, struct dns_answer *a)
{
	char owner[DNS_NAME_LEN];

	a->addrs = n ? calloc(n, sizeof(*a->addrs)) : NULL;
	for (size_t i = 0; a->addrs && i < n; i++) {
		ldns_rr *rr = ldns_rr_list_rr(ans, i);
		ldns_rr_type t = ldns_rr_get_type(rr);
		const ldns_rdf *rd = ldns_rr_rdf(rr, 0);
		struct dns_addr *d = &a->addrs[a->naddrs];

		if ((t != LDNS_RR_TYPE_A && t != LDNS_RR_TYPE_AAAA) || !rd)
			continue;
		lower_name(ldns_rr_owner(rr), owner, sizeof(owner));
		if (!in_chain(a, name, owner))
			continue;
		d->addr[2] = htonl(0xffff);
		if (t == LDNS_RR_TYPE_A && ldns_rdf_size(rd) == 4)
			memcpy(&d->addr[3], ldns_rdf_data(rd), 4);
		else if (t == LDNS_RR_TYPE_AAAA && ldns_rdf_size(rd) == 16)
			memcpy(d->addr, ldns_rdf_data(rd), 16);
		else
			continue;
		d->ttl = ldns_rr_ttl(rr);
		d->type = (uint16_t)t;
		a->naddrs++;
	}
}

int dns__parse_answer(const uint8_t *msg, size_t len, const char *name, uint16_t type,
		      struct dns_answer *a)
{
	char qname[DNS_NAME_LEN];
	const ldns_rr_list *ans;
	ldns_pkt *resp = NULL;
	ldns_rr *qrr;
	size_t n;
	int ret = 0;

	memset(a, 0, sizeof(*a));
	if (ldns_wire2pkt(&resp, msg, len) != LDNS_STATUS_OK || !ldns_pkt_qr(resp) ||
	    ldns_pkt_qdcount(resp) != 1 || !(qrr = ldns_rr_list_rr(ldns_pkt_question(resp), 0))) {
		ldns_pkt_free(resp);
		return -EBADMSG;
	}
	lower_name(ldns_rr_owner(qrr), qname, sizeof(qname));
	if (strcmp(qname, name) || ldns_rr_get_type(qrr) != type) {
		ret = -ENOENT;
		goto out;
	}
	a->rcode = (uint8_t)ldns_pkt_get_rcode(resp);
	a->truncated = ldns_pkt_tc(resp);
	ans = ldns_pkt_answer(resp);
	n = ans ? ldns_rr_list_rr_count(ans) : 0;
	answer_chain(ans, n, name, a);
	answer_addrs(ans, n, name, a);
out:
	ldns_pkt_free(resp);
	return ret;
}

void dns__answer_free(struct dns_answer *a)
{
	free(a->addrs);
	a->addrs = NULL;
	a->naddrs = 0;
}

/* --- queries ------------------------------------------------------------------------------- */

/* Send a complete DNS message to the client: a datagram, or a length-prefixed TCP record. */
static void reply(struct resolver *r, struct dns_query *q, const uint8_t *msg, size_t len)
{
	struct dns_conn *c = q->conn;

	if (!c) {
		if (q->udp_fd >= 0)
			sendto(q->udp_fd, msg, len, MSG_DONTWAIT, (struct sockaddr *)&q->client,
			       q->client_len);
		return;
	}
	if (c->closing)
		return;
	if (c->out_len + 2 + len > TCP_OUT_MAX) {
		c->closing = true; /* a client that does not read its answers */
		return;
	}
	c->active_ns = now_ns(CLOCK_MONOTONIC);
	c->idle_deadline = c->active_ns + TCP_IDLE_NS;
	if (c->out_len + 2 + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap * 2 : 4096;
		uint8_t *nb;

		while (cap < c->out_len + 2 + len)
			cap *= 2;
		nb = realloc(c->out, cap);
		if (!nb) {
			c->closing = true;
			return;
		}
		c->out = nb;
		c->out_cap = cap;
	}
	c->out[c->out_len] = (uint8_t)(len >> 8);
	c->out[c->out_len + 1] = (uint8_t)len;
	memcpy(c->out + c->out_len + 2, msg, len);
	c->out_len += 2 + len;
	loop__mod(r->loop, &c->w, EPOLLIN | EPOLLOUT);
}

/* A locally made answer: REFUSED, NXDOMAIN or SERVFAIL, with the client's question. */
static void reply_rcode(struct resolver *r, struct dns_query *q, const ldns_pkt *query,
			uint8_t rcode)
{
	ldns_pkt *a = ldns_pkt_new();
	uint8_t *wire = NULL;
	size_t len = 0;

	if (!a)
		return;
	ldns_pkt_set_id(a, q->client_id);
	ldns_pkt_set_qr(a, true);
	ldns_pkt_set_opcode(a, LDNS_PACKET_QUERY);
	ldns_pkt_set_rd(a, query ? ldns_pkt_rd(query) : true);
	ldns_pkt_set_ra(a, true);
	ldns_pkt_set_rcode(a, rcode);
	if (query && ldns_pkt_qdcount(query) == 1)
		ldns_pkt_push_rr(a, LDNS_SECTION_QUESTION,
				 ldns_rr_clone(ldns_rr_list_rr(ldns_pkt_question(query), 0)));
	if (ldns_pkt2wire(&wire, a, &len) == LDNS_STATUS_OK)
		reply(r, q, wire, len);
	free(wire);
	ldns_pkt_free(a);
}

static void sock_close(struct resolver *r, struct upstream_sock *us)
{
	if (us->w.fd >= 0) {
		loop__del(r->loop, &us->w);
		close(us->w.fd);
	}
	free(us);
}

/* Closed now, freed by resolver__tick(): the answer that lets a draining socket go is read by
 * on_pool() of that very socket, which goes on reading it; and an event for a socket retired
 * by another callback may still be in the loop's batch. A retired socket has fd -1.
 */
static void sock_retire(struct resolver *r, struct upstream_sock *us)
{
	loop__del(r->loop, &us->w);
	close(us->w.fd);
	us->w.fd = -1;
	us->next = r->retired;
	r->retired = us;
}

/* Free what was retired: only between the loop's batches. */
static void reap_retired(struct resolver *r)
{
	while (r->retired) {
		struct upstream_sock *us = r->retired;

		r->retired = us->next;
		free(us);
	}
	while (r->retired_ls) {
		struct dns_listener *l = r->retired_ls;

		r->retired_ls = l->next;
		free(l);
	}
	while (r->retired_conns) {
		struct dns_conn *c = r->retired_conns;

		r->retired_conns = c->next;
		free(c);
	}
}

/* The query no longer waits on its shared UDP socket; a draining socket closes when empty. */
static void upstream_detach(struct resolver *r, struct dns_query *q)
{
	struct upstream_sock *us = q->us;

	if (!us)
		return;
	if (r->by_id[q->up_id] == q)
		r->by_id[q->up_id] = NULL;
	q->us = NULL;
	if (--us->pending || !us->draining)
		return;
	for (struct upstream_sock **pp = &r->draining; *pp; pp = &(*pp)->next) {
		if (*pp == us) {
			*pp = us->next;
			break;
		}
	}
	sock_retire(r, us);
}

static void query_free(struct resolver *r, struct dns_query *q)
{
	for (struct dns_query **pp = &r->pending; *pp; pp = &(*pp)->next) {
		if (*pp == q) {
			*pp = q->next;
			r->npending--;
			break;
		}
	}
	upstream_detach(r, q);
	if (q->up.fd >= 0) {
		loop__del(r->loop, &q->up);
		close(q->up.fd);
	}
	if (q->conn)
		q->conn->pending--;
	free(q->msg);
	free(q->up_buf);
	free(q);
}

static void on_upstream(struct watch *w, uint32_t events);
static void on_pool(struct watch *w, uint32_t events);

static struct upstream_sock *sock_open(struct resolver *r)
{
	struct upstream_sock *us = calloc(1, sizeof(*us));
	int fd;

	if (!us)
		return NULL;
	fd = socket(r->upstream.ss_family, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&r->upstream, r->upstream_len)) {
		if (fd >= 0)
			close(fd);
		free(us);
		return NULL;
	}
	us->w = (struct watch){ .fd = fd, .fn = on_pool, .data = us };
	us->r = r;
	if (loop__add(r->loop, &us->w, EPOLLIN)) {
		sock_close(r, us);
		return NULL;
	}
	return us;
}

/* The next socket of the pool, replaced by a fresh one (a new random source port) when it has
 * carried UPSTREAM_ROTATE queries; the old one drains its answers first.
 */
static struct upstream_sock *pool_next(struct resolver *r)
{
	unsigned int slot = r->next_sock++ % UPSTREAM_SOCKS;
	struct upstream_sock *us = r->pool[slot];

	if (us && us->uses < UPSTREAM_ROTATE)
		return us;
	if (us) {
		if (us->pending) {
			us->draining = true;
			us->next = r->draining;
			r->draining = us;
		} else {
			sock_retire(r, us);
		}
	}
	r->pool[slot] = sock_open(r);
	return r->pool[slot];
}

/* Query ids from the kernel's CSPRNG, fetched 4 KiB at a time: glibc's arc4random makes one
 * getrandom(2) call per use, a syscall per query.
 */
static uint16_t random_u16(struct resolver *r)
{
	uint16_t v;

	if (r->rand_used + sizeof(v) > sizeof(r->rand)) {
		if (getrandom(r->rand, sizeof(r->rand), 0) != (ssize_t)sizeof(r->rand))
			arc4random_buf(r->rand, sizeof(r->rand));
		r->rand_used = 0;
	}
	memcpy(&v, r->rand + r->rand_used, sizeof(v));
	r->rand_used += sizeof(v);
	return v;
}

static uint16_t free_id(struct resolver *r)
{
	uint16_t id = 0;

	for (int i = 0; i < 32; i++) {
		id = random_u16(r);
		if (!r->by_id[id])
			break;
	}
	return id;
}

/* Send the query upstream: UDP first, on a shared socket; TCP (its own connection,
 * length-prefixed) when the UDP answer was cut.
 */
static int upstream_send(struct resolver *r, struct dns_query *q, bool tcp)
{
	struct upstream_sock *us;
	int fd;

	upstream_detach(r, q);
	if (!tcp) {
		q->up_id = free_id(r);
		if (r->by_id[q->up_id])
			return -EBUSY;
		q->msg[0] = (uint8_t)(q->up_id >> 8);
		q->msg[1] = (uint8_t)q->up_id;
		us = pool_next(r);
		if (!us)
			return -ENOTCONN;
		if (send(us->w.fd, q->msg, q->msg_len, 0) < 0)
			return -errno;
		us->uses++;
		us->pending++;
		q->us = us;
		r->by_id[q->up_id] = q;
		return 0;
	}
	if (q->up.fd >= 0) {
		loop__del(r->loop, &q->up);
		close(q->up.fd);
		q->up.fd = -1;
	}
	q->up_tcp = true;
	fd = socket(r->upstream.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&r->upstream, r->upstream_len) && errno != EINPROGRESS) {
		int err = -errno;

		close(fd);
		return err;
	}
	q->up = (struct watch){ .fd = fd, .fn = on_upstream, .data = q };
	free(q->up_buf);
	q->up_buf = malloc(2 + DNS_MSG_MAX);
	if (!q->up_buf)
		return -ENOMEM;
	q->up_buf[0] = (uint8_t)(q->msg_len >> 8);
	q->up_buf[1] = (uint8_t)q->msg_len;
	memcpy(q->up_buf + 2, q->msg, q->msg_len);
	q->up_len = 2 + q->msg_len;
	q->up_sent = 0;
	q->up_reading = false;
	return loop__add(r->loop, &q->up, EPOLLOUT);
}

/* Open each address of the answer to the sandbox for its TTL (at least the floor) plus the
 * grace period; the event lists the CNAMEs and addresses.
 */
static void open_answers(struct resolver *r, struct dns_query *q, const struct dns_answer *ans,
			 struct answer_list *out)
{
	uint64_t now = now_ns(CLOCK_BOOTTIME);
	struct name_entry *ne = name_slot(r, q->who.sandbox_id, q->name);
	unsigned int min_ttl = UINT32_MAX;

	for (unsigned int i = 0; i < ans->ncnames; i++) {
		out->text[out->n] = out->store[out->n];
		snprintf(out->store[out->n], sizeof(out->store[0]), "CNAME %s", ans->cnames[i]);
		out->n += out->n < MAX_ANSWERS - 1;
	}
	for (size_t i = 0; i < ans->naddrs; i++) {
		const struct dns_addr *d = &ans->addrs[i];
		uint32_t ttl = d->ttl < r->o.min_ttl ? r->o.min_ttl : d->ttl;
		uint64_t expires = now + ((uint64_t)ttl + r->o.grace) * 1000000000ull;

		if (open_address(r, q->who.sandbox_id, ne, d->addr, expires, now)) {
			out->opened++;
			if (ttl < min_ttl)
				min_ttl = ttl;
		}
		if (out->n < MAX_ANSWERS - 1) {
			char a[ADDR_STRLEN];

			addr__format((const uint8_t *)d->addr, a, sizeof(a));
			out->text[out->n] = out->store[out->n];
			snprintf(out->store[out->n], sizeof(out->store[0]), "%s %s",
				 d->type == LDNS_RR_TYPE_A ? "A" : "AAAA", a);
			out->n++;
		}
	}
	out->ttl = out->opened ? min_ttl + r->o.grace : 0;
}

/* The upstream's answer: check it answers our question, open its addresses, release it.
 * false when it answers another question (nothing done: q still waits).
 */
static bool upstream_answer(struct resolver *r, struct dns_query *q, uint8_t *msg, size_t len)
{
	struct answer_list a = { .n = 0 };
	struct dns_answer ans;
	int err = dns__parse_answer(msg, len, q->name, q->qtype, &ans);

	if (err == -ENOENT)
		return false;
	if (err) {
		r->st.upstream_fail++;
		reply_rcode(r, q, NULL, LDNS_RCODE_SERVFAIL);
		emit_query(r, q, true, LDNS_RCODE_SERVFAIL, NULL, "malformed upstream answer");
		query_free(r, q);
		return true;
	}
	/* a UDP client gets the truncated answer and asks again over TCP (steered here too); a
	 * TCP client's query is asked again over TCP upstream
	 */
	if (ans.truncated && !q->up_tcp && q->conn) {
		dns__answer_free(&ans);
		if (upstream_send(r, q, true) == 0)
			return true;
		r->st.upstream_fail++;
		reply_rcode(r, q, NULL, LDNS_RCODE_SERVFAIL);
		emit_query(r, q, true, LDNS_RCODE_SERVFAIL, NULL, "upstream over TCP failed");
		query_free(r, q);
		return true;
	}
	open_answers(r, q, &ans, &a);
	msg[0] = (uint8_t)(q->client_id >> 8);
	msg[1] = (uint8_t)q->client_id;
	reply(r, q, msg, len);
	emit_query(r, q, true, ans.rcode, &a, NULL);
	dns__answer_free(&ans);
	query_free(r, q);
	return true;
}

static void upstream_failed(struct resolver *r, struct dns_query *q, const char *why)
{
	r->st.upstream_fail++;
	reply_rcode(r, q, NULL, LDNS_RCODE_SERVFAIL);
	emit_query(r, q, true, LDNS_RCODE_SERVFAIL, NULL, why);
	query_free(r, q);
}

/* Answers on a shared UDP socket: each goes to the query its id names (if it went out on this
 * socket); anything else is a stray datagram and is dropped.
 */
static void on_pool(struct watch *w, uint32_t events)
{
	struct upstream_sock *us = w->data;
	struct resolver *r = us->r;

	/* an answer handled here may retire this socket: stop reading it then */
	for (int i = 0; i < 64 && w->fd >= 0; i++) {
		ssize_t n = recv(w->fd, r->buf, DNS_MSG_MAX, MSG_DONTWAIT);
		struct dns_query *q;

		if (n < 0)
			return;
		if (n < 12)
			continue;
		q = r->by_id[((uint16_t)r->buf[0] << 8) | r->buf[1]];
		if (q && q->us == us)
			upstream_answer(r, q, r->buf, (size_t)n);
	}
}

static void on_upstream(struct watch *w, uint32_t events)
{
	struct dns_query *q = w->data;
	struct resolver *r = q->r;
	ssize_t n;

	if (!q->up_reading) {
		n = send(w->fd, q->up_buf + q->up_sent, q->up_len - q->up_sent, MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN) {
			upstream_failed(r, q, strerror(errno));
			return;
		}
		if (n > 0)
			q->up_sent += (size_t)n;
		if (q->up_sent == q->up_len) {
			q->up_len = 0;
			q->up_reading = true;
			loop__mod(r->loop, &q->up, EPOLLIN);
		}
		return;
	}
	n = recv(w->fd, q->up_buf + q->up_len, 2 + DNS_MSG_MAX - q->up_len, MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		upstream_failed(r, q, n < 0 ? strerror(errno) : "upstream closed the connection");
		return;
	}
	q->up_len += (size_t)n;
	if (q->up_len >= 2) {
		size_t want = ((size_t)q->up_buf[0] << 8) | q->up_buf[1];

		if (want < 12) {
			upstream_failed(r, q, "short upstream answer");
			return;
		}
		if (q->up_len >= 2 + want) {
			if ((((uint16_t)q->up_buf[2] << 8) | q->up_buf[3]) != q->up_id) {
				upstream_failed(r, q, "upstream answered another query");
				return;
			}
			/* on its own connection, an answer to another question is a failure */
			if (!upstream_answer(r, q, q->up_buf + 2, want))
				upstream_failed(r, q, "upstream answered another question");
		}
	}
}

/* One query from a sandbox. msg is the client's; who says which sandbox sent it. A name that
 * is not a host name is refused without a look at the rules.
 */
static void handle_query(struct resolver *r, struct dns_listener *l, struct dns_conn *conn,
			 int udp_fd, const struct sockaddr_storage *from, socklen_t fromlen,
			 const uint8_t *msg, size_t len, const struct egret_dns_client *who)
{
	struct dns_question dq;
	struct dns_query *q;
	ldns_pkt *pkt = NULL;
	const char *sandbox;
	int verdict;

	r->st.queries++;
	if (dns__parse_query(msg, len, &dq, &pkt) == -EBADMSG) {
		r->st.malformed++;
		return;
	}
	if (r->npending >= MAX_PENDING || !(q = calloc(1, sizeof(*q)))) {
		ldns_pkt_free(pkt);
		return;
	}
	q->r = r;
	q->l = l;
	q->conn = conn;
	q->udp_fd = udp_fd;
	q->up.fd = -1;
	if (from) {
		memcpy(&q->client, from, fromlen);
		q->client_len = fromlen;
	}
	q->who = *who;
	q->client_id = dq.id;
	q->start_ns = now_ns(CLOCK_MONOTONIC);
	q->deadline_ns = q->start_ns + (uint64_t)r->o.timeout_ms * 1000000ull;
	memcpy(q->name, dq.name, sizeof(q->name));
	q->qtype = dq.type;
	q->next = r->pending;
	r->pending = q;
	r->npending++;
	if (conn)
		conn->pending++;
	sandbox = engine__sandbox_name(r->engine, who->sandbox_id);
	verdict = sandbox && dq.host ? engine__domain_verdict(r->engine, sandbox, q->name, q->rule,
							      sizeof(q->rule))
				     : 0;
	if (verdict != EGRET_ACT_ALLOW) {
		uint8_t rcode = r->o.nxdomain ? LDNS_RCODE_NXDOMAIN : LDNS_RCODE_REFUSED;

		r->st.refused++;
		r->st.not_host += !dq.host;
		reply_rcode(r, q, pkt, rcode);
		emit_query(r, q, false, rcode, NULL,
			   dq.host ? NULL
				   : "not a host name (a label holds a byte other than a letter, "
				     "a digit, '-' or '_')");
		ldns_pkt_free(pkt);
		query_free(r, q);
		return;
	}
	ldns_pkt_free(pkt);
	r->st.allowed++;
	q->msg = malloc(len);
	if (!q->msg) {
		query_free(r, q);
		return;
	}
	memcpy(q->msg, msg, len);
	q->msg_len = len;
	if (upstream_send(r, q, false))
		upstream_failed(r, q, "cannot reach the upstream resolver");
}

void resolver__serve_udp(struct resolver *r, int fd, const struct sockaddr_storage *from,
			 socklen_t fromlen, const uint8_t *msg, size_t len,
			 const struct egret_dns_client *who)
{
	handle_query(r, NULL, NULL, fd, from, fromlen, msg, len, who);
}

/* Which sandbox sent from this port? Only queries the kernel steered here are served. */
static bool client_of(struct resolver *r, struct dns_listener *l, const struct sockaddr_storage *ss,
		      uint8_t proto, struct egret_dns_client *who)
{
	struct egret_dns_client_key k = { .netns = l->cookie, .proto = proto };

	k.port = ntohs(ss->ss_family == AF_INET ? ((const struct sockaddr_in *)ss)->sin_port
						: ((const struct sockaddr_in6 *)ss)->sin6_port);
	if (bpf_map_lookup_elem(r->m.clients_fd, &k, who) == 0)
		return true;
	r->st.outside++;
	return false;
}

static void on_udp(struct watch *w, uint32_t events)
{
	struct dns_listener *l = w->data;
	struct resolver *r = l->r;
	struct egret_dns_client who;

	for (int i = 0; i < 64; i++) {
		struct sockaddr_storage from;
		socklen_t flen = sizeof(from);
		ssize_t n = recvfrom(w->fd, r->buf, DNS_MSG_MAX, MSG_DONTWAIT,
				     (struct sockaddr *)&from, &flen);

		if (n < 0)
			return;
		if (!client_of(r, l, &from, IPPROTO_UDP, &who))
			continue;
		handle_query(r, l, NULL, w->fd, &from, flen, r->buf, (size_t)n, &who);
	}
}

/* Out of the table and closed; the struct itself is the caller's to free. */
static void conn_unlink(struct resolver *r, struct dns_conn *c)
{
	for (struct dns_conn **pp = &r->conns; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			r->nconns--;
			break;
		}
	}
	for (struct dns_query *q = r->pending; q; q = q->next) {
		if (q->conn == c) {
			q->conn = NULL;
			q->udp_fd = -1; /* the client is gone: nowhere to answer */
		}
	}
	loop__del(r->loop, &c->w);
	close(c->w.fd);
	free(c->out);
	c->out = NULL;
}

static void conn_free(struct resolver *r, struct dns_conn *c)
{
	conn_unlink(r, c);
	free(c);
}

/* Closed at once to make room, freed at the next tick: an event for it may still be in the
 * loop's current batch, and on_conn() ignores a connection without a listener.
 */
static void conn_evict(struct resolver *r, struct dns_conn *c)
{
	conn_unlink(r, c);
	c->l = NULL;
	c->next = r->retired_conns;
	r->retired_conns = c;
	r->st.tcp_evicted++;
}

/* The sandbox holding the most connections (on listener l, or anywhere when NULL). */
static uint64_t tcp_hog(const struct resolver *r, const struct dns_listener *l)
{
	unsigned int best = 0;
	uint64_t hog = 0;

	for (const struct dns_conn *c = r->conns; c; c = c->next) {
		unsigned int n = 0;

		if (l && c->l != l)
			continue;
		for (const struct dns_conn *o = r->conns; o; o = o->next)
			n += o->who.sandbox_id == c->who.sandbox_id && (!l || o->l == l);
		if (n > best) {
			best = n;
			hog = c->who.sandbox_id;
		}
	}
	return hog;
}

/* The connection of sandbox sb (on l, when given) idle the longest: one with no query
 * upstream and nothing unsent first.
 */
static struct dns_conn *tcp_oldest(const struct resolver *r, const struct dns_listener *l,
				   uint64_t sb)
{
	struct dns_conn *best = NULL;
	bool best_idle = false;

	for (struct dns_conn *c = r->conns; c; c = c->next) {
		bool idle = !c->pending && !c->out_len;

		if (c->who.sandbox_id != sb || (l && c->l != l))
			continue;
		if (!best || (idle && !best_idle) ||
		    (idle == best_idle && c->active_ns < best->active_ns)) {
			best = c;
			best_idle = idle;
		}
	}
	return best;
}

/* Room for a new client of sandbox sb on l: none of its own past its share (it gives up its
 * own oldest), none of the listener's, none at all (the hog gives up its oldest). A sandbox
 * holding many connections never makes the others' fail.
 */
static void tcp_make_room(struct resolver *r, struct dns_listener *l, uint64_t sb)
{
	unsigned int in_sb = 0, in_l = 0;
	struct dns_conn *victim = NULL;

	for (const struct dns_conn *c = r->conns; c; c = c->next) {
		in_sb += c->who.sandbox_id == sb;
		in_l += c->l == l;
	}
	if (in_sb >= TCP_PER_SANDBOX)
		victim = tcp_oldest(r, NULL, sb);
	else if (in_l >= TCP_PER_LISTEN)
		victim = tcp_oldest(r, l, tcp_hog(r, l));
	else if (r->nconns >= MAX_TCP_CONNS)
		victim = tcp_oldest(r, NULL, tcp_hog(r, NULL));
	if (victim)
		conn_evict(r, victim);
}

static void on_conn(struct watch *w, uint32_t events)
{
	struct dns_conn *c = w->data;
	struct resolver *r = c->l ? c->l->r : NULL;
	ssize_t n;

	if (!r)
		return;
	if ((events & EPOLLOUT) && c->out_len) {
		n = send(w->fd, c->out, c->out_len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN) {
			c->closing = true;
			return;
		}
		if (n > 0) {
			memmove(c->out, c->out + n, c->out_len - (size_t)n);
			c->out_len -= (size_t)n;
		}
		if (!c->out_len)
			loop__mod(r->loop, &c->w, EPOLLIN);
	}
	if (!(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	n = recv(w->fd, c->in + c->in_len, sizeof(c->in) - c->in_len, MSG_DONTWAIT);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		c->closing = true;
		return;
	}
	c->in_len += (size_t)n;
	while (c->in_len >= 2) {
		size_t len = ((size_t)c->in[0] << 8) | c->in[1];

		if (c->in_len < 2 + len)
			break;
		/* a byte at a time does not keep a connection: only whole queries do */
		c->active_ns = now_ns(CLOCK_MONOTONIC);
		c->idle_deadline = c->active_ns + TCP_IDLE_NS;
		if (c->l)
			handle_query(r, c->l, c, -1, NULL, 0, c->in + 2, len, &c->who);
		memmove(c->in, c->in + 2 + len, c->in_len - 2 - len);
		c->in_len -= 2 + len;
	}
}

static void on_accept(struct watch *w, uint32_t events)
{
	struct dns_listener *l = w->data;
	struct resolver *r = l->r;
	struct sockaddr_storage from;
	socklen_t flen = sizeof(from);
	struct dns_conn *c;
	int fd;

	while ((fd = accept4(w->fd, (struct sockaddr *)&from, &flen,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		struct egret_dns_client who;

		if (!client_of(r, l, &from, IPPROTO_TCP, &who)) {
			close(fd);
			flen = sizeof(from);
			continue;
		}
		tcp_make_room(r, l, who.sandbox_id);
		if (r->nconns >= MAX_TCP_CONNS || !(c = calloc(1, sizeof(*c)))) {
			close(fd);
			flen = sizeof(from);
			continue;
		}
		c->w = (struct watch){ .fd = fd, .fn = on_conn, .data = c };
		c->l = l;
		c->who = who;
		c->active_ns = now_ns(CLOCK_MONOTONIC);
		c->idle_deadline = c->active_ns + TCP_IDLE_NS;
		c->next = r->conns;
		r->conns = c;
		r->nconns++;
		loop__add(r->loop, &c->w, EPOLLIN);
		flen = sizeof(from);
	}
}

/* --- lifecycle -------------------------------------------------------------------------------- */

void resolver__tick(struct resolver *r)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	struct dns_query *q, *next;
	struct dns_conn *c, *cn;

	reap_retired(r);
	for (q = r->pending; q; q = next) {
		next = q->next;
		if (now < q->deadline_ns)
			continue;
		r->st.timeouts++;
		reply_rcode(r, q, NULL, LDNS_RCODE_SERVFAIL);
		emit_query(r, q, true, LDNS_RCODE_SERVFAIL, NULL, "upstream timed out");
		query_free(r, q);
	}
	for (c = r->conns; c; c = cn) {
		cn = c->next;
		/* a query upstream or an answer unread buys one more idle period, not forever */
		if (c->closing ||
		    now > c->idle_deadline + (c->pending || c->out_len ? TCP_IDLE_NS : 0))
			conn_free(r, c);
	}
	if (now - r->last_sweep_ns > 5000000000ull) {
		sweep_allow(r, now_ns(CLOCK_BOOTTIME));
		r->last_sweep_ns = now;
	}
}

void resolver__status(struct resolver *r, struct control_req *req)
{
	unsigned int n = 0;

	for (struct dns_listener *l = r->listeners; l; l = l->next)
		n++;
	control__out(req,
		     "dns: upstream %s, %u namespaces, %llu queries (%llu allowed, %llu "
		     "refused, %llu of them not host names, %llu not from a sandbox, %llu "
		     "malformed, %llu upstream failures, %llu timeouts), %zu addresses open, "
		     "%llu capped, %u TCP clients (%llu evicted)\n",
		     r->upstream_text, n, (unsigned long long)r->st.queries,
		     (unsigned long long)r->st.allowed, (unsigned long long)r->st.refused,
		     (unsigned long long)r->st.not_host, (unsigned long long)r->st.outside,
		     (unsigned long long)r->st.malformed, (unsigned long long)r->st.upstream_fail,
		     (unsigned long long)r->st.timeouts, r->allow_used,
		     (unsigned long long)r->st.capped, r->nconns,
		     (unsigned long long)r->st.tcp_evicted);
}

/* Listeners in the map belong to an egretd that is gone: drop them all, so the kernel reports
 * each namespace again (and refuses its queries meanwhile) until this egretd listens there.
 */
static void forget_listeners(struct resolver *r)
{
	uint64_t key;

	while (bpf_map_get_next_key(r->m.listeners_fd, NULL, &key) == 0)
		bpf_map_delete_elem(r->m.listeners_fd, &key);
}

int resolver__new(struct resolver **out, const struct dns_options *o, const struct dns_maps *m,
		  struct loop *loop, struct engine *e)
{
	char server[128];
	struct resolver *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	r->o = *o;
	r->m = *m;
	r->rand_used = sizeof(r->rand);
	r->loop = loop;
	r->engine = e;
	if (!o->upstream) {
		err = dns__resolv_conf_server(o->resolv_conf ? o->resolv_conf : "/etc/resolv.conf",
					      server, sizeof(server));
		if (err) {
			log_err("dns: no nameserver in %s: give one with --upstream-dns",
				o->resolv_conf ? o->resolv_conf : "/etc/resolv.conf");
			free(r);
			return err;
		}
	} else {
		snprintf(server, sizeof(server), "%s", o->upstream);
	}
	if (dns__parse_server(server, &r->upstream, &r->upstream_len)) {
		log_err("dns: bad upstream resolver '%s': expected ADDR, ADDR:PORT or [ADDR6]:PORT",
			server);
		free(r);
		return -EINVAL;
	}
	snprintf(r->upstream_text, sizeof(r->upstream_text), "%s", server);
	r->own_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (r->own_netns < 0) {
		err = -errno;
		free(r);
		return err;
	}
	adopt_allow(r);
	forget_listeners(r);
	*out = r;
	return 0;
}

void resolver__set_stream(struct resolver *r, struct stream *s)
{
	r->stream = s;
}

void resolver__free(struct resolver *r)
{
	if (!r)
		return;
	while (r->pending)
		query_free(r, r->pending);
	while (r->conns)
		conn_free(r, r->conns);
	for (int i = 0; i < UPSTREAM_SOCKS; i++) {
		if (r->pool[i])
			sock_close(r, r->pool[i]);
	}
	while (r->draining) {
		struct upstream_sock *us = r->draining;

		r->draining = us->next;
		sock_close(r, us);
	}
	while (r->listeners) {
		struct dns_listener *l = r->listeners;

		r->listeners = l->next;
		/* queries are refused, not sent to a closed port, until the next egretd listens */
		bpf_map_delete_elem(r->m.listeners_fd, &l->cookie);
		listener_close(l);
		free(l);
	}
	reap_retired(r);
	for (size_t i = 0; i < r->names_cap; i++)
		free(r->names[i].ips);
	free(r->names);
	free(r->allow);
	close(r->own_netns);
	free(r);
}
