/* egret's resolver (see dns.h) over its life: made with the upstream it forwards to, ticked by
 * egretd's loop (timeouts, idle TCP clients, expired addresses, what was retired), asked for its
 * status, and freed. Its parts are in the other files of user/dns (resolver.h lists them).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <ldns/ldns.h>

#include "control.h"
#include "log.h"
#include "resolver.h"
#include "util.h"

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
		listener__free(l);
	}
	while (r->retired_conns) {
		struct dns_conn *c = r->retired_conns;

		r->retired_conns = c->next;
		free(c);
	}
}

/* Queries past their deadline get SERVFAIL. */
static void expire_queries(struct resolver *r, uint64_t now)
{
	struct dns_query *q, *next;

	for (q = r->pending; q; q = next) {
		next = q->next;
		if (now < q->deadline_ns)
			continue;
		r->st.timeouts++;
		query__reply_rcode(r, q, NULL, LDNS_RCODE_SERVFAIL);
		query__emit(r, q, true, LDNS_RCODE_SERVFAIL, NULL, "upstream timed out");
		query__free(r, q);
	}
}

void resolver__tick(struct resolver *r)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	reap_retired(r);
	if (r->client_gen_due_ns && now >= r->client_gen_due_ns) {
		r->client_gen_due_ns = 0;
		listener__map_clients(r);
	}
	expire_queries(r, now);
	conn__reap_idle(r, now);
	if (now - r->last_sweep_ns > 5000000000ull) {
		const uint64_t boot = now_ns(CLOCK_BOOTTIME);

		allow__sweep(r, boot);
		cache__sweep(r, boot);
		budget__sweep(r, now);
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
		     "refused, %llu of them not host names, %llu over a budget, %llu not from a "
		     "sandbox, %llu "
		     "malformed, %llu upstream failures, %llu timeouts), %zu addresses open, "
		     "%llu capped, %zu names holding addresses (%llu refused at a bound, %llu "
		     "early sweeps), %zu answers kept (%llu queries answered from them, %llu "
		     "answers not kept at the bound), "
		     "%u TCP clients (%llu evicted), %llu clients known without a look-up (a "
		     "datagram or connection whose sender had not changed)\n",
		     r->upstream_text, n, (unsigned long long)r->st.queries,
		     (unsigned long long)r->st.allowed, (unsigned long long)r->st.refused,
		     (unsigned long long)r->st.not_host, (unsigned long long)r->st.over_budget,
		     (unsigned long long)r->st.outside, (unsigned long long)r->st.malformed,
		     (unsigned long long)r->st.upstream_fail, (unsigned long long)r->st.timeouts,
		     allow__count(r), (unsigned long long)r->st.capped, allow__names(r),
		     (unsigned long long)r->st.names_full, (unsigned long long)r->st.early_sweeps,
		     cache__count(r), (unsigned long long)r->st.cache_hits,
		     (unsigned long long)r->st.cache_full, r->nconns,
		     (unsigned long long)r->st.tcp_evicted, (unsigned long long)r->st.clients_kept);
}

/* The upstream of the options (--upstream-dns), or the first nameserver of resolv.conf. */
static int resolver_upstream(struct resolver *r, const struct dns_options *o)
{
	const char *conf = o->resolv_conf ? o->resolv_conf : "/etc/resolv.conf";
	char server[128];
	int err;

	if (!o->upstream) {
		err = dns__resolv_conf_server(conf, server, sizeof(server));
		if (err) {
			log_err("dns: no nameserver in %s: give one with --upstream-dns", conf);
			return err;
		}
	} else {
		snprintf(server, sizeof(server), "%s", o->upstream);
	}
	if (dns__parse_server(server, &r->upstream, &r->upstream_len)) {
		log_err("dns: bad upstream resolver '%s': expected ADDR, ADDR:PORT or [ADDR6]:PORT",
			server);
		return -EINVAL;
	}
	snprintf(r->upstream_text, sizeof(r->upstream_text), "%s", server);
	return 0;
}

int resolver__new(struct resolver **out, const struct dns_options *o, const struct dns_maps *m,
		  struct loop *loop, struct engine *e)
{
	struct resolver *r = calloc(1, sizeof(*r));
	int err;

	if (!r)
		return -ENOMEM;
	r->o = *o;
	/* bounds not given (a caller other than egretd's options): the resolver's own */
	if (!r->o.max_names || r->o.max_names > DNS_NAMES_MAX)
		r->o.max_names = DNS_NAMES_MAX;
	if (!r->o.max_addrs || r->o.max_addrs > EGRET_DNS_ALLOW_MAX)
		r->o.max_addrs = EGRET_DNS_ALLOW_MAX;
	if (!r->o.max_ttl)
		r->o.max_ttl = UINT32_MAX;
	r->m = *m;
	r->rand_used = sizeof(r->rand);
	r->loop = loop;
	r->engine = e;
	err = resolver_upstream(r, o);
	if (err)
		goto err_free;
	r->own_netns = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
	if (r->own_netns < 0) {
		err = -errno;
		goto err_free;
	}
	err = allow__init(r);
	if (err)
		goto err_close;
	err = budget__init(r);
	if (err) {
		allow__free(r);
		goto err_close;
	}
	err = cache__init(r);
	if (err) {
		budget__free(r);
		allow__free(r);
		goto err_close;
	}
	allow__adopt(r);
	listener__forget_all(r);
	/* a program an egretd before attached may still be running its last query's write
	 * (not counted) as this one starts: the counters are trusted from a second on
	 */
	if (m->client_gen_fd >= 0)
		r->client_gen_due_ns = now_ns(CLOCK_MONOTONIC) + 1000000000ull;
	*out = r;
	return 0;

err_close:
	close(r->own_netns);
err_free:
	free(r);
	return err;
}

int resolver__recv_batch(struct resolver *r, int fd)
{
	int n;

	for (int i = 0; i < DNS_BATCH; i++) {
		r->iov[i] = (struct iovec){ .iov_base = r->buf[i], .iov_len = DNS_MSG_MAX };
		r->msg[i] = (struct mmsghdr){ .msg_hdr = {
						      .msg_name = &r->from[i],
						      .msg_namelen = sizeof(r->from[i]),
						      .msg_iov = &r->iov[i],
						      .msg_iovlen = 1,
					      } };
	}
	n = recvmmsg(fd, r->msg, DNS_BATCH, MSG_DONTWAIT, NULL);
	return n > 0 ? n : 0;
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
		query__free(r, r->pending);
	conn__free_all(r);
	upstream__close_all(r);
	listener__close_all(r);
	reap_retired(r);
	allow__free(r);
	budget__free(r);
	cache__free(r);
	listener__unmap_clients(r);
	close(r->own_netns);
	free(r);
}
