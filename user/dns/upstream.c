/* Forwarding allowed queries to the upstream resolver: over UDP on a pool of connected sockets
 * shared by all queries (an answer finds its query by the random id it was sent with; a socket
 * is replaced after UPSTREAM_ROTATE queries for a new source port), over TCP on a connection of
 * its own when the answer came back truncated. The answer is checked against the question, its
 * addresses opened (allow.c), and released to the client.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <unistd.h>

#include <ldns/ldns.h>

#include "resolver.h"

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

/* The query no longer waits on its shared UDP socket; a draining socket closes when empty. */
void upstream__detach(struct resolver *r, struct dns_query *q)
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

/* Over UDP, on a shared socket of the pool, with a fresh random id. */
static int send_udp(struct resolver *r, struct dns_query *q)
{
	struct upstream_sock *us;

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

/* Over TCP, on the query's own connection, length-prefixed; on_upstream() sends and reads. */
static int send_tcp(struct resolver *r, struct dns_query *q)
{
	int fd;

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

/* Send the query upstream: UDP first, on a shared socket; TCP (its own connection,
 * length-prefixed) when the UDP answer was cut.
 */
int upstream__send(struct resolver *r, struct dns_query *q, bool tcp)
{
	upstream__detach(r, q);
	return tcp ? send_tcp(r, q) : send_udp(r, q);
}

/* The upstream's answer: check it answers our question, open its addresses, release it.
 * false when it answers another question (nothing done: q still waits).
 */
static bool upstream_answer(struct resolver *r, struct dns_query *q, uint8_t *msg, size_t len)
{
	struct dns_answer ans;
	int err = dns__parse_answer(msg, len, q->name, q->qtype, &ans);

	if (err == -ENOENT)
		return false;
	if (err) {
		r->st.upstream_fail++;
		query__reply_rcode(r, q, NULL, LDNS_RCODE_SERVFAIL);
		query__emit(r, q, true, LDNS_RCODE_SERVFAIL, NULL, "malformed upstream answer");
		query__free(r, q);
		return true;
	}
	/* a UDP client gets the truncated answer and asks again over TCP (steered here too); a
	 * TCP client's query is asked again over TCP upstream
	 */
	if (ans.truncated && !q->up_tcp && q->conn) {
		dns__answer_free(&ans);
		if (upstream__send(r, q, true) == 0)
			return true;
		r->st.upstream_fail++;
		query__reply_rcode(r, q, NULL, LDNS_RCODE_SERVFAIL);
		query__emit(r, q, true, LDNS_RCODE_SERVFAIL, NULL, "upstream over TCP failed");
		query__free(r, q);
		return true;
	}
	query__answer(r, q, msg, len, &ans);
	dns__answer_free(&ans);
	return true;
}

void upstream__failed(struct resolver *r, struct dns_query *q, const char *why)
{
	r->st.upstream_fail++;
	query__reply_rcode(r, q, NULL, LDNS_RCODE_SERVFAIL);
	query__emit(r, q, true, LDNS_RCODE_SERVFAIL, NULL, why);
	query__free(r, q);
}

/* Answers on a shared UDP socket: each goes to the query its id names (if it went out on this
 * socket); anything else is a stray datagram and is dropped.
 */
static void on_pool(struct watch *w, uint32_t events)
{
	struct upstream_sock *us = w->data;
	struct resolver *r = us->r;

	/* an answer handled here may retire this socket (kept until the loop's turn ends, its
	 * queries all done): stop reading it then
	 */
	for (int round = 0; round < 64 / DNS_BATCH && w->fd >= 0; round++) {
		int n = resolver__recv_batch(r, w->fd);

		for (int i = 0; i < n; i++) {
			uint8_t *m = r->buf[i];
			struct dns_query *q;

			if (r->msg[i].msg_len < 12)
				continue;
			q = r->by_id[((uint16_t)m[0] << 8) | m[1]];
			if (q && q->us == us)
				upstream_answer(r, q, m, r->msg[i].msg_len);
		}
		if (n < DNS_BATCH)
			return;
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
			upstream__failed(r, q, strerror(errno));
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
		upstream__failed(r, q, n < 0 ? strerror(errno) : "upstream closed the connection");
		return;
	}
	q->up_len += (size_t)n;
	if (q->up_len >= 2) {
		size_t want = ((size_t)q->up_buf[0] << 8) | q->up_buf[1];

		if (want < 12) {
			upstream__failed(r, q, "short upstream answer");
			return;
		}
		if (q->up_len >= 2 + want) {
			if ((((uint16_t)q->up_buf[2] << 8) | q->up_buf[3]) != q->up_id) {
				upstream__failed(r, q, "upstream answered another query");
				return;
			}
			/* on its own connection, an answer to another question is a failure */
			if (!upstream_answer(r, q, q->up_buf + 2, want))
				upstream__failed(r, q, "upstream answered another question");
		}
	}
}

/* Close the pool and the draining sockets (the queries are gone already). */
void upstream__close_all(struct resolver *r)
{
	for (int i = 0; i < UPSTREAM_SOCKS; i++) {
		if (r->pool[i])
			sock_close(r, r->pool[i]);
	}
	while (r->draining) {
		struct upstream_sock *us = r->draining;

		r->draining = us->next;
		sock_close(r, us);
	}
}
