/* The resolver's listeners: in each network namespace that holds sandboxed processes, UDP and
 * TCP sockets on 127.0.0.1 and ::1 (one port for both protocols), made by entering the
 * namespace (setns), binding, and coming back; the sockets stay in that namespace and egretd
 * serves them from its own loop. dns_listeners tells the kernel where to steer each namespace's
 * queries; dns_clients, written by the kernel, says which sandbox a query's source socket is of
 * (only those queries are served).
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "array.h"
#include "engine.h"
#include "log.h"
#include "resolver.h"

#include "egret/device.h"

#ifndef SO_NETNS_COOKIE
#define SO_NETNS_COOKIE 71
#endif

static void on_udp(struct watch *w, uint32_t events);

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

/* A socket on addr (network order, IPv4 mapped; NULL: loopback) and port. */
static int bound(int family, int type, uint16_t port, const uint32_t *addr)
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
		s4->sin_addr.s_addr = addr ? addr[3] : htonl(INADDR_LOOPBACK);
		s4->sin_port = htons(port);
		len = sizeof(*s4);
	} else {
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		s6->sin6_family = AF_INET6;
		if (addr)
			memcpy(&s6->sin6_addr, addr, 16);
		else
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

/* A UDP and a TCP socket on the same port of addr (NULL: loopback): the kernel steers both
 * to one port.
 */
static int bind_pair(int family, const uint32_t *addr, int *udp, int *tcp, uint16_t *port)
{
	for (int tries = 0; tries < 32; tries++) {
		*udp = bound(family, SOCK_DGRAM, 0, addr);
		if (*udp < 0)
			return *udp;
		*port = local_port(*udp);
		*tcp = bound(family, SOCK_STREAM, *port, addr);
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

void listener__free(struct dns_listener *l)
{
	free(l->users);
	free(l);
}

/* sandbox (0: none, egretd's own namespace) has processes in l's namespace */
static int listener_use(struct dns_listener *l, uint64_t sandbox)
{
	if (!sandbox)
		return 0;
	for (size_t i = 0; i < l->nusers; i++) {
		if (l->users[i] == sandbox)
			return 0;
	}
	if (ARRAY_RESERVE(l->users, l->cap, l->nusers + 1))
		return -ENOMEM;
	l->users[l->nusers++] = sandbox;
	return 0;
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
	err = bind_pair(AF_INET, NULL, &fds[UDP4], &fds[TCP4], &l->port4);
	if (err)
		return err;
	if (bind_pair(AF_INET6, NULL, &fds[UDP6], &fds[TCP6], &l->port6)) {
		fds[UDP6] = fds[TCP6] = -1; /* no IPv6 here: IPv6 queries are refused */
		l->port6 = 0;
	}
	for (int i = 0; i < NSOCK; i++) {
		l->w[i].fd = fds[i];
		l->w[i].fn = i == UDP4 || i == UDP6 ? on_udp : conn__on_accept;
		l->w[i].data = l;
	}
	return 0;
}

static struct dns_listener *listener_find(struct resolver *r, uint64_t cookie)
{
	for (struct dns_listener *l = r->listeners; l; l = l->next) {
		if (!l->device && l->cookie == cookie)
			return l;
	}
	return NULL;
}

/* Make the sockets in the namespace of nsfd (-1: egretd's own), coming back to egretd's. */
static int listener_sockets_in(struct resolver *r, struct dns_listener *l, int nsfd)
{
	int err;

	if (nsfd >= 0 && setns(nsfd, CLONE_NEWNET))
		return -errno;
	err = listener_sockets(l);
	if (nsfd >= 0 && setns(r->own_netns, CLONE_NEWNET))
		log_err("dns: cannot return to egretd's network namespace: %s", strerror(errno));
	return err;
}

/* Tell the kernel where the namespace's queries go: dns_listeners[cookie]. */
static int listener_publish(struct resolver *r, const struct dns_listener *l)
{
	struct egret_dns_listener v = { 0 };

	v.addr4 = htonl(INADDR_LOOPBACK);
	v.port4 = htons(l->port4);
	if (l->port6) {
		memcpy(v.addr6, &in6addr_loopback, 16);
		v.port6 = htons(l->port6);
	}
	if (bpf_map_update_elem(r->m.listeners_fd, &l->cookie, &v, BPF_ANY))
		return -errno;
	return 0;
}

/* Listen in the namespace of nsfd (-1: egretd's own) and tell the kernel where. */
static int listener_open(struct resolver *r, int nsfd, uint64_t sandbox, uint64_t *cookie_out)
{
	struct dns_listener *l = calloc(1, sizeof(*l));
	socklen_t clen = sizeof(uint64_t);
	uint64_t cookie = 0;
	int err;

	if (!l)
		return -ENOMEM;
	l->r = r;
	for (int i = 0; i < NSOCK; i++)
		l->w[i].fd = -1;
	err = listener_use(l, sandbox);
	if (err)
		goto err_close;
	err = listener_sockets_in(r, l, nsfd);
	if (err)
		goto err_close;
	if (getsockopt(l->w[UDP4].fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &clen)) {
		err = -errno;
		goto err_close;
	}
	if (listener_find(r, cookie)) {
		/* another sandbox's namespace too, or raced with another report of it */
		err = listener_use(listener_find(r, cookie), sandbox) ?: -EEXIST;
		goto err_close;
	}
	l->cookie = cookie;
	for (int i = 0; i < NSOCK; i++) {
		if (l->w[i].fd >= 0)
			loop__add(r->loop, &l->w[i], EPOLLIN);
	}
	err = listener_publish(r, l);
	if (err)
		goto err_close;
	l->next = r->listeners;
	r->listeners = l;
	if (cookie_out)
		*cookie_out = cookie;
	return 0;

err_close:
	listener_close(l);
	listener__free(l);
	return err;
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

int resolver__listen_in(struct resolver *r, int nsfd, uint64_t sandbox)
{
	struct stat own, st;
	uint64_t got = 0;
	int err;

	if (fstat(nsfd, &st) || fstat(r->own_netns, &own))
		return -errno;
	if (st.st_ino == own.st_ino && st.st_dev == own.st_dev)
		return 0; /* the host's network: egretd listens there already */
	err = listener_open(r, nsfd, sandbox, &got);
	if (err == -EEXIST)
		return 0;
	if (!err)
		log_debug("dns: listening in namespace %llu of sandbox %llu",
			  (unsigned long long)got, (unsigned long long)sandbox);
	return err;
}

static struct dns_listener *device_find(struct resolver *r, const uint32_t addr[4])
{
	for (struct dns_listener *l = r->listeners; l; l = l->next) {
		if (l->device && !memcmp(l->addr, addr, sizeof(l->addr)))
			return l;
	}
	return NULL;
}

static bool addr_mapped(const uint32_t addr[4])
{
	return addr[0] == 0 && addr[1] == 0 && addr[2] == htonl(0x0000ffff);
}

/* The kernel steers what a device sends to l's address and port like a query to port 53
 * (dev_listeners): 0, or -errno when it cannot (the listener is not used then: queries sent
 * there directly would be judged by the record a query of another device left).
 */
static int device_steer(struct resolver *r, const struct dns_listener *l, bool add)
{
	struct egret_dev_listener_key k = { .port = htons(addr_mapped(l->addr) ? l->port4
									       : l->port6) };
	uint8_t one = 1;

	if (r->m.dev_listeners_fd < 0)
		return add ? -EBADF : 0;
	memcpy(k.addr, l->addr, sizeof(k.addr));
	if (add)
		return bpf_map_update_elem(r->m.dev_listeners_fd, &k, &one, BPF_ANY) ? -errno : 0;
	if (bpf_map_delete_elem(r->m.dev_listeners_fd, &k) && errno != ENOENT)
		log_warn("dns: a device listener's address stays steered (%s)", strerror(errno));
	return 0;
}

/* What reached l's sockets before its port was steered (a device guessing the port as it was
 * bound): not recorded as its device's, so dropped.
 */
static void device_drain(struct dns_listener *l)
{
	char buf[16];

	for (int i = 0; i < NSOCK; i++) {
		int fd;

		if (l->w[i].fd < 0)
			continue;
		if (i == UDP4 || i == UDP6) {
			while (recv(l->w[i].fd, buf, sizeof(buf), MSG_DONTWAIT | MSG_TRUNC) >= 0)
				;
			continue;
		}
		while ((fd = accept4(l->w[i].fd, NULL, NULL, SOCK_CLOEXEC)) >= 0)
			close(fd);
	}
}

int resolver__device_listener(struct resolver *r, const uint32_t addr[4], uint16_t *port)
{
	struct dns_listener *l = device_find(r, addr);
	bool v4 = addr_mapped(addr);
	int err;

	if (l) {
		l->refs++;
		*port = v4 ? l->port4 : l->port6;
		return 0;
	}
	l = calloc(1, sizeof(*l));
	if (!l)
		return -ENOMEM;
	l->r = r;
	l->device = true;
	l->refs = 1;
	memcpy(l->addr, addr, sizeof(l->addr));
	for (int i = 0; i < NSOCK; i++)
		l->w[i].fd = -1;
	err = v4 ? bind_pair(AF_INET, addr, &l->w[UDP4].fd, &l->w[TCP4].fd, &l->port4)
		 : bind_pair(AF_INET6, addr, &l->w[UDP6].fd, &l->w[TCP6].fd, &l->port6);
	if (err) {
		for (int i = 0; i < NSOCK; i++)
			l->w[i].fd = -1;
		listener__free(l);
		return err;
	}
	err = device_steer(r, l, true);
	if (err) {
		for (int i = 0; i < NSOCK; i++) {
			if (l->w[i].fd >= 0)
				close(l->w[i].fd);
		}
		listener__free(l);
		return err;
	}
	device_drain(l);
	for (int i = 0; i < NSOCK; i++) {
		l->w[i].fn = i == UDP4 || i == UDP6 ? on_udp : conn__on_accept;
		l->w[i].data = l;
		if (l->w[i].fd >= 0)
			loop__add(r->loop, &l->w[i], EPOLLIN);
	}
	l->next = r->listeners;
	r->listeners = l;
	*port = v4 ? l->port4 : l->port6;
	return 0;
}

void resolver__device_release(struct resolver *r, const uint32_t addr[4])
{
	struct dns_listener **pp = &r->listeners;

	for (; *pp; pp = &(*pp)->next) {
		struct dns_listener *l = *pp;

		if (!l->device || memcmp(l->addr, addr, sizeof(l->addr)))
			continue;
		if (--l->refs > 0)
			return;
		device_steer(r, l, false);
		for (struct dns_query *q = r->pending; q; q = q->next) {
			if (q->l == l) {
				q->l = NULL;
				q->udp_fd = -1;
			}
		}
		for (struct dns_conn *c = r->conns; c; c = c->next) {
			if (c->l == l) {
				c->closing = true;
				c->l = NULL;
			}
		}
		*pp = l->next;
		listener_retire(l);
		return;
	}
}

void resolver__each_netns(struct resolver *r,
			  void (*fn)(void *ctx, int sock, const uint64_t *sandboxes, size_t n),
			  void *ctx)
{
	for (struct dns_listener *l = r->listeners; l; l = l->next) {
		if (!l->device && l->nusers > 0 && l->w[UDP4].fd >= 0)
			fn(ctx, l->w[UDP4].fd, l->users, l->nusers);
	}
}

static void scan_cgroup(struct resolver *r, const char *dir, uint64_t sandbox, ino_t own_ns,
			ino_t *seen, size_t *nseen, size_t cap);

/* The process that was seen in a namespace without a listener is gone (a short-lived dig, a
 * runtime's helper): any process of its sandbox still in such a namespace gets one.
 */
static void netns_seen_gone(struct resolver *r, uint64_t cookie, uint32_t pid, uint64_t sandbox)
{
	char dir[PATH_MAX];
	ino_t seen[64];
	size_t nseen = 0;
	struct stat st;

	if (!sandbox || engine__sandbox_path(r->engine, sandbox, dir, sizeof(dir)) ||
	    fstat(r->own_netns, &st)) {
		log_debug("dns: namespace %llu of pid %u: the process is gone",
			  (unsigned long long)cookie, pid);
		return;
	}
	scan_cgroup(r, dir, sandbox, st.st_ino, seen, &nseen, sizeof(seen) / sizeof(seen[0]));
}

/* A sandboxed process is in a namespace without a listener: set one up there. */
void resolver__netns_seen(struct resolver *r, uint64_t cookie, uint32_t pid, uint64_t sandbox)
{
	struct dns_listener *l = cookie ? listener_find(r, cookie) : NULL;
	char path[64];
	uint64_t got = 0;
	int nsfd, err;

	if (l) {
		listener_use(l, sandbox);
		return;
	}
	snprintf(path, sizeof(path), "/proc/%u/ns/net", pid);
	nsfd = open(path, O_RDONLY | O_CLOEXEC);
	if (nsfd < 0) {
		if (cookie)
			netns_seen_gone(r, cookie, pid, sandbox);
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

/* The processes of one cgroup directory and its descendants, for resolver__scan (sandbox 0:
 * each child of dir is one) and for one sandbox.
 */
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

/* At start: listen in every namespace sandboxed processes are in already: under egret's root,
 * and in every registered sandbox.
 */
void resolver__scan(struct resolver *r, const char *cgroup_root)
{
	ino_t seen[1024];
	size_t nseen = 0;
	char dir[PATH_MAX];
	struct stat st;

	if (fstat(r->own_netns, &st))
		return;
	scan_cgroup(r, cgroup_root, 0, st.st_ino, seen, &nseen, sizeof(seen) / sizeof(seen[0]));
	for (size_t i = 0; i < sandbox_names__slots(&r->engine->reg); i++) {
		const struct sandbox_entry *s = sandbox_names__at(&r->engine->reg, i);

		if (s && s->meta && engine__sandbox(r->engine, s->id) &&
		    !engine__sandbox_path(r->engine, s->id, dir, sizeof(dir)))
			scan_cgroup(r, dir, s->id, st.st_ino, seen, &nseen,
				    sizeof(seen) / sizeof(seen[0]));
	}
}

/* The sandbox is gone: so are the namespaces made for it (our sockets kept them alive). */
void resolver__sandbox_gone(struct resolver *r, uint64_t sandbox)
{
	struct dns_listener **pp = &r->listeners;

	if (sandbox) {
		allow__sandbox_gone(r, sandbox);
		cache__sandbox_gone(r, sandbox);
	}

	while (*pp) {
		struct dns_listener *l = *pp;
		size_t had = l->nusers;

		for (size_t i = 0; i < l->nusers; i++) {
			if (l->users[i] == sandbox)
				l->users[i--] = l->users[--l->nusers];
		}
		if (!sandbox || had == 0 || l->nusers > 0) {
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

/* A query's source: its address (network order, IPv4 mapped) and port (network order). */
static uint16_t query_source(const struct sockaddr_storage *ss, uint32_t *addr)
{
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;

		addr[0] = addr[1] = 0;
		addr[2] = htonl(0x0000ffff);
		addr[3] = s4->sin_addr.s_addr;
		return s4->sin_port;
	}
	memcpy(addr, &((const struct sockaddr_in6 *)ss)->sin6_addr, 16);
	return ((const struct sockaddr_in6 *)ss)->sin6_port;
}

/* A device's query: which sandbox's, by the address and port it came from (dev_nat's record
 * under ifindex 0: a datagram does not say which device it came through).
 */
static bool device_client(struct resolver *r, const struct sockaddr_storage *ss, uint8_t proto,
			  struct egret_dns_client *who)
{
	struct egret_dev_nat_key k = { .proto = proto };
	struct egret_dev_nat v;

	k.port = query_source(ss, k.addr);
	if (r->m.dev_nat_fd < 0 || bpf_map_lookup_elem(r->m.dev_nat_fd, &k, &v) ||
	    !v.client.sandbox_id)
		return false;
	*who = v.client;
	return true;
}

/* dns_client_gen into egretd's memory, read-only; without it (an error, a kernel that cannot
 * map it) every query looks its client up, as before the map was.
 */
void listener__map_clients(struct resolver *r)
{
	void *p;

	if (r->m.client_gen_fd < 0)
		return;
	p = mmap(NULL, CLIENT_SLOTS * sizeof(uint64_t), PROT_READ, MAP_SHARED, r->m.client_gen_fd,
		 0);
	if (p == MAP_FAILED) {
		log_warn("dns: dns_client_gen cannot be mapped (%s): each query's client is looked "
			 "up in the kernel",
			 strerror(errno));
		return;
	}
	r->client_gen = p;
}

void listener__unmap_clients(struct resolver *r)
{
	if (r->client_gen)
		munmap((void *)r->client_gen, CLIENT_SLOTS * sizeof(uint64_t));
	r->client_gen = NULL;
}

/* The client of key k: what was read before while its slot's counter stands where it stood
 * then (include/egret/dns.h), or dns_clients' value. The counter is read first: a change the
 * kernel counts after it is seen at the next query.
 */
static bool client_lookup(struct resolver *r, const struct egret_dns_client_key *k,
			  struct egret_dns_client *who)
{
	uint32_t slot = egret_dns_client_slot(k);
	struct client_seen *c = &r->seen[slot];
	uint64_t gen;

	if (!r->client_gen)
		return bpf_map_lookup_elem(r->m.clients_fd, k, who) == 0;
	gen = __atomic_load_n(&r->client_gen[slot], __ATOMIC_ACQUIRE);
	if (c->valid && c->gen == gen && !memcmp(&c->k, k, sizeof(*k))) {
		*who = c->who;
		r->st.clients_kept++;
		return true;
	}
	c->valid = false;
	if (bpf_map_lookup_elem(r->m.clients_fd, k, who))
		return false;
	c->k = *k;
	c->gen = gen;
	c->who = *who;
	c->valid = true;
	return true;
}

/* Which sandbox sent from this address and port? Only queries the kernel steered here are
 * served.
 */
bool listener__client(struct resolver *r, struct dns_listener *l, const struct sockaddr_storage *ss,
		      uint8_t proto, struct egret_dns_client *who)
{
	struct egret_dns_client_key k = { .netns = l->cookie, .proto = proto };

	if (l->device) {
		if (device_client(r, ss, proto, who))
			return true;
		r->st.outside++;
		return false;
	}
	k.port = ntohs(query_source(ss, k.addr));
	if (client_lookup(r, &k, who))
		return true;
	r->st.outside++;
	return false;
}

static void on_udp(struct watch *w, uint32_t events)
{
	struct dns_listener *l = w->data;
	struct resolver *r = l->r;
	struct egret_dns_client who;

	/* at most 64 a turn: one busy namespace does not hold the loop */
	for (int round = 0; round < 64 / DNS_BATCH; round++) {
		int n = resolver__recv_batch(r, w->fd);

		for (int i = 0; i < n; i++) {
			if (!listener__client(r, l, &r->from[i], IPPROTO_UDP, &who))
				continue;
			query__handle(r, l, NULL, w->fd, &r->from[i], r->msg[i].msg_hdr.msg_namelen,
				      r->buf[i], r->msg[i].msg_len, &who);
		}
		if (n < DNS_BATCH)
			return;
	}
}

/* Listeners in the map belong to an egretd that is gone: drop them all, so the kernel reports
 * each namespace again (and refuses its queries meanwhile) until this egretd listens there.
 */
void listener__forget_all(struct resolver *r)
{
	struct egret_dev_listener_key dk;
	uint64_t key;

	while (bpf_map_get_next_key(r->m.listeners_fd, NULL, &key) == 0)
		bpf_map_delete_elem(r->m.listeners_fd, &key);
	/* and the device listeners' ports, which a port of the host's may be now */
	while (bpf_map_get_next_key(r->m.dev_listeners_fd, NULL, &dk) == 0)
		bpf_map_delete_elem(r->m.dev_listeners_fd, &dk);
}

void listener__close_all(struct resolver *r)
{
	while (r->listeners) {
		struct dns_listener *l = r->listeners;

		r->listeners = l->next;
		/* queries are refused, not sent to a closed port, until the next egretd listens */
		bpf_map_delete_elem(r->m.listeners_fd, &l->cookie);
		/* a device's port, closed, may be a host service's next: no longer steered */
		if (l->device)
			device_steer(r, l, false);
		listener_close(l);
		listener__free(l);
	}
}
