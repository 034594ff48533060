/* TCP clients of the listeners: a connection per client, queries read as length-prefixed
 * records, answers queued until the client reads them, and the limits that keep one sandbox
 * from holding all connections (the oldest idle one of the sandbox holding most gives way).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "resolver.h"
#include "util.h"

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
	c->out_cap = 0;
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

void conn__send(struct resolver *r, struct dns_conn *c, const uint8_t *msg, size_t len)
{
	if (c->closing)
		return;
	if (c->out_len + 2 + len > TCP_OUT_MAX) {
		c->closing = true; /* a client that does not read its answers */
		return;
	}
	c->active_ns = now_ns(CLOCK_MONOTONIC);
	c->idle_deadline = c->active_ns + TCP_IDLE_NS;
	if (ARRAY_RESERVE(c->out, c->out_cap, c->out_len + 2 + len)) {
		c->closing = true;
		return;
	}
	c->out[c->out_len] = (uint8_t)(len >> 8);
	c->out[c->out_len + 1] = (uint8_t)len;
	memcpy(c->out + c->out_len + 2, msg, len);
	c->out_len += 2 + len;
	loop__mod(r->loop, &c->w, EPOLLIN | EPOLLOUT);
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
			query__handle(r, c->l, c, -1, NULL, 0, c->in + 2, len, &c->who);
		memmove(c->in, c->in + 2 + len, c->in_len - 2 - len);
		c->in_len -= 2 + len;
	}
}

void conn__on_accept(struct watch *w, uint32_t events)
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

		if (!listener__client(r, l, &from, IPPROTO_TCP, &who)) {
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

/* Close the connections marked closing, and those idle too long: a query upstream or an answer
 * unread buys one more idle period, not forever.
 */
void conn__reap_idle(struct resolver *r, uint64_t now)
{
	struct dns_conn *c, *cn;

	for (c = r->conns; c; c = cn) {
		cn = c->next;
		if (c->closing ||
		    now > c->idle_deadline + (c->pending || c->out_len ? TCP_IDLE_NS : 0))
			conn_free(r, c);
	}
}

void conn__free_all(struct resolver *r)
{
	while (r->conns)
		conn_free(r, r->conns);
}
