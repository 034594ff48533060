/* Which devices are sandboxes' and egret's programs on each (devices.h). One look (sync) finds
 * what should be in force from scratch: the links of egretd's namespace, the interfaces the
 * policy names, the namespaces the resolver listens in for sandboxes; then it puts each found
 * device's entry, resolver and filters in force and takes egret off every device no longer
 * found. Looking again changes nothing that is right already.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if_arp.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "addr.h"
#include "array.h"
#include "control.h"
#include "devices.h"
#include "dns.h"
#include "engine.h"
#include "log.h"
#include "netlink.h"
#include "tc.h"
#include "util.h"

#ifndef SIOCGSKNS
#define SIOCGSKNS 0x894C
#endif

#define SYNC_PERIOD_NS (2ull * 1000000000ull)

/* What one look found: the links, and the devices wanted with their sandboxes. */
struct look {
	struct nl_link *links;
	size_t nlinks;
	struct devices *d;
};

static const struct nl_link *link_by_index(const struct look *lk, uint32_t ifindex)
{
	for (size_t i = 0; i < lk->nlinks; i++) {
		if (lk->links[i].ifindex == ifindex)
			return &lk->links[i];
	}
	return NULL;
}

static const struct nl_link *link_by_name(const struct look *lk, const char *name)
{
	for (size_t i = 0; i < lk->nlinks; i++) {
		if (!strcmp(lk->links[i].name, name))
			return &lk->links[i];
	}
	return NULL;
}

static struct dev_entry *entry_of(struct devices *d, uint32_t ifindex)
{
	for (size_t i = 0; i < d->n; i++) {
		if (d->e[i].ifindex == ifindex)
			return &d->e[i];
	}
	return NULL;
}

/* The entry of a device found in this look (made when new), its sandboxes to be added. */
static struct dev_entry *want(struct devices *d, const struct nl_link *l, const char *source)
{
	struct dev_entry *e = entry_of(d, l->ifindex);

	if (!e) {
		if (ARRAY_RESERVE(d->e, d->cap, d->n + 1))
			return NULL;
		e = &d->e[d->n++];
		memset(e, 0, sizeof(*e));
		e->ifindex = l->ifindex;
	}
	if (!e->want) {
		memset(e->v.sandbox_id, 0, sizeof(e->v.sandbox_id));
		e->err[0] = '\0';
	}
	e->source = source;
	e->want = true;
	snprintf(e->name, sizeof(e->name), "%s", l->name);
	return e;
}

static void add_sandbox(struct dev_entry *e, uint64_t id)
{
	for (int i = 0; i < EGRET_DEV_SANDBOXES; i++) {
		if (e->v.sandbox_id[i] == id)
			return;
		if (!e->v.sandbox_id[i]) {
			e->v.sandbox_id[i] = id;
			return;
		}
	}
	if (!e->err[0])
		snprintf(e->err, sizeof(e->err),
			 "more than %d sandboxes share it: the first %d decide its packets",
			 EGRET_DEV_SANDBOXES, EGRET_DEV_SANDBOXES);
}

/* The interfaces the policy names, each for the installed sandboxes of its block's name (none
 * yet: the device is in force and passes nothing until one is).
 */
static void look_policy(struct look *lk)
{
	struct devices *d = lk->d;
	const struct policy *p = &d->engine->pol;
	const struct sandbox_names *reg = &d->engine->reg;
	size_t used = 0;

	d->missing[0] = '\0';
	for (size_t i = 0; i < p->nifaces; i++) {
		const struct nl_link *l = link_by_name(lk, p->ifaces[i].name);
		struct dev_entry *e;

		if (!l) {
			used += (size_t)snprintf(
				d->missing + used,
				used < sizeof(d->missing) ? sizeof(d->missing) - used : 0,
				"%s%s (sandbox %s)", used ? ", " : "", p->ifaces[i].name,
				p->ifaces[i].sandbox);
			continue;
		}
		e = want(d, l, "policy");
		if (!e)
			continue;
		for (size_t k = 0; k < sandbox_names__slots(reg); k++) {
			const struct sandbox_entry *s = sandbox_names__at(reg, k);

			if (s && !strcmp(s->name, p->ifaces[i].sandbox) &&
			    engine__sandbox(d->engine, s->id))
				add_sandbox(e, s->id);
		}
		if (!e->v.sandbox_id[0])
			snprintf(e->err, sizeof(e->err),
				 "sandbox %s does not exist (yet): nothing it sends passes",
				 p->ifaces[i].sandbox);
	}
	if (used >= sizeof(d->missing))
		snprintf(d->missing + sizeof(d->missing) - 5, 5, "...");
}

/* A namespace the resolver listens in for sandboxes: the host ends of its veths. */
static void look_netns(void *ctx, int sock, const uint64_t *sandboxes, size_t n)
{
	struct look *lk = ctx;
	int nsfd = ioctl(sock, SIOCGSKNS), id;

	if (nsfd < 0)
		return;
	id = nl__netns_id(nsfd);
	close(nsfd);
	if (id < 0)
		return; /* no device of ours is linked to it */
	for (size_t i = 0; i < lk->nlinks; i++) {
		const struct nl_link *l = &lk->links[i];
		struct dev_entry *e;

		if (strcmp(l->kind, "veth") || l->link_netnsid != id)
			continue;
		e = want(lk->d, l, "namespace");
		for (size_t k = 0; e && k < n; k++)
			add_sandbox(e, sandboxes[k]);
	}
}

/* Where the device's DNS is steered: an address of the device, or of its master (the bridge a
 * veth is a port of); an IPv6 address that is not link-local. The MAC is that device's.
 */
static void steering(const struct look *lk, const struct nl_link *l, struct egret_device *v,
		     uint32_t steer4[4], uint32_t steer6[4])
{
	const struct nl_link *holders[2] = { l, l->master ? link_by_index(lk, l->master) : NULL };
	struct ifaddrs *ifa = NULL;
	bool have4 = false, have6 = false;

	memset(steer4, 0, 16);
	memset(steer6, 0, 16);
	if (getifaddrs(&ifa))
		return;
	for (int h = 0; h < 2 && !(have4 && have6); h++) {
		if (!holders[h])
			continue;
		for (struct ifaddrs *a = ifa; a; a = a->ifa_next) {
			if (!a->ifa_addr || strcmp(a->ifa_name, holders[h]->name))
				continue;
			if (a->ifa_addr->sa_family == AF_INET && !have4) {
				steer4[2] = htonl(0x0000ffff);
				steer4[3] = ((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr;
				have4 = true;
				memcpy(v->mac, holders[h]->mac, sizeof(v->mac));
			} else if (a->ifa_addr->sa_family == AF_INET6 && !have6) {
				const struct in6_addr *a6 =
					&((struct sockaddr_in6 *)a->ifa_addr)->sin6_addr;

				if (IN6_IS_ADDR_LINKLOCAL(a6))
					continue;
				memcpy(steer6, a6, 16);
				have6 = true;
				if (!have4)
					memcpy(v->mac, holders[h]->mac, sizeof(v->mac));
			}
		}
	}
	freeifaddrs(ifa);
}

static bool addr_set(const uint32_t a[4])
{
	return a[0] | a[1] | a[2] | a[3];
}

/* Hold the resolver's listener for addr (held already: keep it, and its port); the port in
 * *port_be, 0 when there is none.
 */
static void steer_to(struct devices *d, struct dev_entry *e, uint32_t held[4], uint16_t *held_port,
		     const uint32_t addr[4], uint16_t *port_be)
{
	uint16_t port = 0;
	int err;

	if (addr_set(held) && memcmp(held, addr, 16)) {
		resolver__device_release(d->resolver, held);
		memset(held, 0, 16);
		*held_port = 0;
	}
	if (addr_set(addr) && !addr_set(held)) {
		err = resolver__device_listener(d->resolver, addr, &port);
		if (err) {
			snprintf(e->err, sizeof(e->err),
				 "egret's resolver cannot listen on its address (%s): its DNS is "
				 "dropped",
				 strerror(-err));
		} else {
			memcpy(held, addr, 16);
			*held_port = htons(port);
		}
	}
	*port_be = *held_port;
}

/* Put one found device in force: its entry, its resolver, its filters. */
static void put(struct devices *d, const struct look *lk, struct dev_entry *e)
{
	const struct nl_link *l = link_by_index(lk, e->ifindex);
	struct egret_device v = e->v, old;
	uint32_t s4[4], s6[4];
	char why[160] = "";

	if (!l)
		return;
	if (l->type == ARPHRD_ETHER) {
		v.l2 = 1;
	} else if (l->type == ARPHRD_NONE) {
		v.l2 = 0;
	} else {
		snprintf(e->err, sizeof(e->err),
			 "link type %u is neither Ethernet nor IP: egret cannot judge it", l->type);
		e->attached = false;
		return;
	}
	memset(v.mac, 0, sizeof(v.mac));
	steering(lk, l, &v, s4, s6);
	steer_to(d, e, e->steer4, &e->port4, s4, &v.port4);
	steer_to(d, e, e->steer6, &e->port6, s6, &v.port6);
	v.resolver4 = e->steer4[3];
	memcpy(v.resolver6, e->steer6, sizeof(v.resolver6));
	v.source = strcmp(e->source, "policy") ? EGRET_DEV_NAMESPACE : EGRET_DEV_POLICY;
	if (bpf_map_lookup_elem(d->map_fd, &e->ifindex, &old) || memcmp(&old, &v, sizeof(v))) {
		if (bpf_map_update_elem(d->map_fd, &e->ifindex, &v, BPF_ANY)) {
			snprintf(e->err, sizeof(e->err), "cannot write the devices map: %s",
				 strerror(errno));
			return;
		}
	}
	e->v = v;
	if (tc__runs(e->ifindex, true, d->prog_out) && tc__runs(e->ifindex, false, d->prog_in)) {
		e->attached = true;
		return;
	}
	if (tc__attach(e->ifindex, true, d->prog_out, why, sizeof(why)) ||
	    tc__attach(e->ifindex, false, d->prog_in, why, sizeof(why))) {
		if (e->attached || strcmp(e->err, why))
			log_err("device %s (sandbox %llu): %s", e->name,
				(unsigned long long)v.sandbox_id[0], why);
		snprintf(e->err, sizeof(e->err), "%s", why);
		e->attached = false;
		d->attach_errors++;
		return;
	}
	if (!e->attached)
		log_info("device %s: egret judges what it sends (%s, sandbox %llu%s)", e->name,
			 e->source, (unsigned long long)v.sandbox_id[0],
			 v.sandbox_id[1] ? " and others" : "");
	e->attached = true;
}

/* Take egret off a device it no longer judges (the device may be gone already). */
static void drop(struct devices *d, struct dev_entry *e)
{
	tc__detach(e->ifindex, true);
	tc__detach(e->ifindex, false);
	bpf_map_delete_elem(d->map_fd, &e->ifindex);
	if (addr_set(e->steer4))
		resolver__device_release(d->resolver, e->steer4);
	if (addr_set(e->steer6))
		resolver__device_release(d->resolver, e->steer6);
	if (e->attached)
		log_info("device %s: no longer a sandbox's, egret's filters removed", e->name);
}

/* A device a previous egretd judged for a namespace, not found by this look (its namespace's
 * processes not seen yet): kept while it exists and a sandbox of it does, so that a restart
 * never opens a container's device. Its sandboxes that are gone are let go.
 */
static void keep_previous(struct devices *d, const struct look *lk, struct dev_entry *e)
{
	uint64_t alive[EGRET_DEV_SANDBOXES] = { 0 };
	int n = 0;

	if (e->want || strcmp(e->source, "previous egretd") || e->v.source != EGRET_DEV_NAMESPACE ||
	    !link_by_index(lk, e->ifindex))
		return;
	for (int i = 0; i < EGRET_DEV_SANDBOXES; i++) {
		if (e->v.sandbox_id[i] && engine__sandbox(d->engine, e->v.sandbox_id[i]))
			alive[n++] = e->v.sandbox_id[i];
	}
	if (!n)
		return;
	memcpy(e->v.sandbox_id, alive, sizeof(alive));
	snprintf(e->name, sizeof(e->name), "%s", link_by_index(lk, e->ifindex)->name);
	e->want = true;
}

/* A previous egretd's entries: each becomes an entry of ours, found again, kept or dropped. */
static void adopt(struct devices *d)
{
	__u32 key, next;
	bool first = true;

	while (bpf_map_get_next_key(d->map_fd, first ? NULL : &key, &next) == 0) {
		struct dev_entry *e;

		first = false;
		key = next;
		if (entry_of(d, key) || ARRAY_RESERVE(d->e, d->cap, d->n + 1))
			continue;
		e = &d->e[d->n++];
		memset(e, 0, sizeof(*e));
		e->ifindex = key;
		e->attached = true; /* as far as we know: sync says */
		e->source = "previous egretd";
		snprintf(e->name, sizeof(e->name), "ifindex %u", key);
		bpf_map_lookup_elem(d->map_fd, &key, &e->v);
		/* its resolver listeners were the previous egretd's: none is held */
	}
	d->adopted = true;
}

void devices__sync(struct devices *d)
{
	struct look lk = { .d = d };
	size_t i = 0;
	int err;

	if (!d->loop || d->map_fd < 0)
		return; /* not set up (yet) */
	if (!d->adopted)
		adopt(d);
	err = nl__links(&lk.links, &lk.nlinks);
	if (err) {
		log_err("devices: cannot list the network devices: %s (nothing changed)",
			strerror(-err));
		return;
	}
	for (i = 0; i < d->n; i++)
		d->e[i].want = false;
	look_policy(&lk);
	if (d->resolver)
		resolver__each_netns(d->resolver, look_netns, &lk);
	for (i = 0; i < d->n; i++)
		keep_previous(d, &lk, &d->e[i]);
	for (i = 0; i < d->n; i++) {
		if (d->e[i].want)
			put(d, &lk, &d->e[i]);
	}
	for (i = 0; i < d->n;) {
		if (d->e[i].want) {
			i++;
			continue;
		}
		drop(d, &d->e[i]);
		d->e[i] = d->e[--d->n];
	}
	free(lk.links);
	d->syncs++;
	d->next_ns = now_ns(CLOCK_MONOTONIC) + SYNC_PERIOD_NS;
}

void devices__tick(struct devices *d)
{
	if (d->loop && now_ns(CLOCK_MONOTONIC) >= d->next_ns)
		devices__sync(d);
}

static void on_change(struct watch *w, uint32_t events)
{
	struct devices *d = w->data;

	(void)events;
	if (nl__drain(w->fd))
		log_warn("devices: the link monitor failed; looking every %llu s only",
			 (unsigned long long)(SYNC_PERIOD_NS / 1000000000ull));
	devices__sync(d);
}

int devices__init(struct devices *d, struct loop *loop, struct engine *e, struct resolver *r,
		  int map_fd, int prog_out, int prog_in)
{
	memset(d, 0, sizeof(*d));
	d->loop = loop;
	d->engine = e;
	d->resolver = r;
	d->map_fd = map_fd;
	d->prog_out = prog_out;
	d->prog_in = prog_in;
	d->mon.fd = -1;
	if (map_fd < 0 || prog_out < 0 || prog_in < 0)
		return -ENOENT;
	d->mon.fd = nl__monitor();
	if (d->mon.fd < 0) {
		log_warn("devices: no link monitor (%s): looking every %llu s only",
			 strerror(-d->mon.fd),
			 (unsigned long long)(SYNC_PERIOD_NS / 1000000000ull));
		return 0;
	}
	d->mon.fn = on_change;
	d->mon.data = d;
	return loop__add(loop, &d->mon, EPOLLIN);
}

void devices__status(struct devices *d, struct control_req *r)
{
	size_t attached = 0;

	if (!d->loop)
		return;
	for (size_t i = 0; i < d->n; i++)
		attached += d->e[i].attached;
	control__out(r, "devices: %zu judged by egret of %zu found%s%s\n", attached, d->n,
		     d->missing[0] ? "; named by the policy but absent: " : "", d->missing);
	for (size_t i = 0; i < d->n; i++) {
		const struct dev_entry *e = &d->e[i];
		char dns4[64] = "none", dns6[80] = "none";

		if (e->v.port4)
			addr__format_port((const uint8_t *)e->steer4, ntohs(e->v.port4), dns4,
					  sizeof(dns4));
		if (e->v.port6)
			addr__format_port((const uint8_t *)e->steer6, ntohs(e->v.port6), dns6,
					  sizeof(dns6));
		control__out(r, "  %s (%s, ifindex %u): %s, sandbox %llu%s, DNS to %s / %s%s%s\n",
			     e->name, e->source ? e->source : "previous egretd", e->ifindex,
			     e->attached ? "in force" : "NOT in force",
			     (unsigned long long)e->v.sandbox_id[0],
			     e->v.sandbox_id[1] ? " (and others)" : "", dns4, dns6,
			     e->err[0] ? ": " : "", e->err);
	}
}

void devices__uninstall(struct devices *d)
{
	if (!d->loop)
		return;
	for (size_t i = 0; i < d->n; i++)
		drop(d, &d->e[i]);
	d->n = 0;
	d->map_fd = -1; /* no look from now on */
}

void devices__free(struct devices *d)
{
	if (!d->loop)
		return; /* never set up */
	if (d->mon.fd >= 0) {
		loop__del(d->loop, &d->mon);
		close(d->mon.fd);
	}
	free(d->e);
	memset(d, 0, sizeof(*d));
	d->map_fd = -1;
	d->mon.fd = -1;
}
