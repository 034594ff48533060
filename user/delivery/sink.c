/* What every sink shares (positions, errors and backoff, connecting, the interface, which calls
 * the sink's ops), and the sinks that carry the framed stream (file, stdout, tcp, unix): each
 * reads spool bytes at its own position, writes them (or their JSON) out, and moves its
 * delivered position on as the receiver confirms them; see sink.h. The OTLP sink is in otlp.c,
 * URIs in sink_uri.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <linux/sockios.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "egret/v1/events.pb-c.h"
#include "log.h"
#include "arena.h"
#include "pbdecode.h"
#include "pbjson.h"
#include "sink.h"
#include "util.h"
#include "wire.h"

#define CONNECT_TIMEOUT_NS (10ull * 1000000000ull)
#define PUMP_BUDGET	   (16u << 20) /* bytes one pump writes before the loop runs again */

/* ---- state ----------------------------------------------------------------------------------- */

unsigned int sink__backoff_next(unsigned int ms)
{
	return ms < SINK_BACKOFF_MIN_MS	       ? SINK_BACKOFF_MIN_MS
	       : ms >= SINK_BACKOFF_MAX_MS / 2 ? SINK_BACKOFF_MAX_MS
					       : ms * 2;
}

void sink__set_error(struct sink *s, int err, const char *fmt, ...)
{
	char text[sizeof(s->error)];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	if (strcmp(text, s->error))
		log_err("sink %s: %s", s->uri, text);
	snprintf(s->error, sizeof(s->error), "%s", text);
	s->last_err = err;
	s->failures++;
}

void sink__clear_error(struct sink *s)
{
	if (s->error[0])
		log_info("sink %s: delivering again", s->uri);
	s->error[0] = '\0';
	s->last_err = 0;
}

void sink__watch(struct sink *s, uint32_t events)
{
	if (s->fd < 0 || !s->loop || s->wanted == events)
		return;
	if (s->wanted ? loop__mod(s->loop, &s->w, events) : loop__add(s->loop, &s->w, events))
		return;
	s->wanted = events;
}

void sink__disconnect(struct sink *s)
{
	if (s->fd >= 0) {
		if (s->wanted && s->loop)
			loop__del(s->loop, &s->w);
		if (s->kind != SINK_STDOUT)
			close(s->fd);
	}
	s->fd = -1;
	s->wanted = 0;
	s->up = s->connecting = false;
}

/* The receiver is gone or failing: what it had not confirmed is sent again after a backoff. */
void sink__down(struct sink *s, int err, const char *what)
{
	static uint64_t x;
	unsigned int jittered;

	sink__disconnect(s);
	s->next = s->acked;
	s->len = s->off = 0;
	s->buf_records = 0;
	s->qhead = s->qlen = 0;
	s->conn_bytes = s->conn_records = s->peer_acked = s->conn_confirmed = 0;
	s->acklen = 0;
	s->backoff_ms = sink__backoff_next(s->backoff_ms);
	/* jitter: 75-125% of the step, so egretds that lost one receiver do not return in step */
	if (!x)
		x = now_ns(CLOCK_REALTIME) | 1;
	x ^= x << 13, x ^= x >> 7, x ^= x << 17;
	jittered = s->backoff_ms * 3 / 4 + (unsigned int)(x % (s->backoff_ms / 2 + 1));
	s->retry_at_ns = now_ns(CLOCK_MONOTONIC) + jittered * 1000000ull;
	/* logged when it changes, not at every retry */
	sink__set_error(s, err, "%s: %s (retrying, backing off up to %u s)", what, strerror(-err),
			SINK_BACKOFF_MAX_MS / 1000);
}

/* ---- files ----------------------------------------------------------------------------------- */

static int file_open(struct sink *s)
{
	char dir[PATH_MAX];
	struct stat st;
	int err;

	snprintf(dir, sizeof(dir), "%s", s->path);
	err = mkdir_p(dirname(dir), 0750);
	if (err)
		return err;
	s->fd = open(s->path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (s->fd < 0)
		return -errno;
	s->file_bytes = fstat(s->fd, &st) ? 0 : (uint64_t)st.st_size;
	s->up = true;
	return 0;
}

/* PATH -> PATH.1 -> PATH.2 ... -> PATH.keep (the oldest, replaced); a new PATH. Rotation is at
 * a record boundary, so every file is a whole stream on its own.
 */
static int file_rotate(struct sink *s)
{
	char from[PATH_MAX + 16], to[PATH_MAX + 16];

	sink__disconnect(s);
	for (unsigned int i = s->keep; i > 1; i--) {
		snprintf(from, sizeof(from), "%s.%u", s->path, i - 1);
		snprintf(to, sizeof(to), "%s.%u", s->path, i);
		if (rename(from, to) && errno != ENOENT)
			log_err("sink %s: cannot rename %s: %s", s->uri, from, strerror(errno));
	}
	snprintf(to, sizeof(to), "%s.1", s->path);
	if (rename(s->path, to) && errno != ENOENT)
		log_err("sink %s: cannot rename %s: %s", s->uri, s->path, strerror(errno));
	return file_open(s);
}

/* ---- sockets --------------------------------------------------------------------------------- */

int sink__connect(struct sink *s)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd, err;

	memset(&ss, 0, sizeof(ss));
	if (s->kind == SINK_UNIX) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;

		un->sun_family = AF_UNIX;
		str_copy(un->sun_path, sizeof(un->sun_path), s->path);
		sl = sizeof(*un);
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_NUMERICSERV },
				*ai = NULL;

		err = getaddrinfo(s->host, s->port, &hints, &ai);
		if (err || !ai) {
			sink__down(s, -EHOSTUNREACH, "cannot resolve the host");
			return -EHOSTUNREACH;
		}
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		sl = ai->ai_addrlen;
		freeaddrinfo(ai);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		sink__down(s, -errno, "socket");
		return -errno;
	}
	s->fd = fd;
	s->w = (struct watch){ .fd = fd, .fn = s->w.fn, .data = s };
	s->connects++;
	s->connect_started_ns = now_ns(CLOCK_MONOTONIC);
	if (connect(fd, (struct sockaddr *)&ss, sl) == 0) {
		s->up = true;
	} else if (errno == EINPROGRESS) {
		s->connecting = true;
		sink__watch(s, EPOLLOUT);
	} else {
		err = -errno;
		sink__down(s, err, "connect");
		return err;
	}
	return 0;
}

/* A non-blocking connect finished: did it work? */
static bool connect_done(struct sink *s)
{
	int soerr = 0;
	socklen_t l = sizeof(soerr);

	s->connecting = false;
	if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &soerr, &l) || soerr) {
		sink__down(s, -(soerr ? soerr : errno), "connect");
		return false;
	}
	s->up = true;
	return true;
}

/* The receiver's acks: varints, each the number of records it has taken on this connection. */
static void parse_acks(struct sink *s, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint64_t v;
		size_t used;

		s->ackbuf[s->acklen++] = p[i];
		if (wire__varint_get(s->ackbuf, s->acklen, &v, &used) == 0) {
			if (v > s->peer_acked && v <= s->conn_records)
				s->peer_acked = v;
			s->acklen = 0;
		} else if (s->acklen == sizeof(s->ackbuf)) {
			s->acklen = 0; /* not an ack: ignore */
		}
	}
}

static void confirm_upto(struct sink *s, uint64_t bytes, uint64_t records)
{
	bool any = false;

	while (s->qlen) {
		struct sink_inflight *f = &s->q[s->qhead];

		if (s->ack ? f->conn_records > records : f->conn_bytes > bytes)
			break;
		s->delivered += f->conn_records - s->conn_confirmed;
		s->conn_confirmed = f->conn_records;
		s->acked = f->end;
		s->qhead = (s->qhead + 1) % SINK_INFLIGHT;
		s->qlen--;
		any = true;
	}
	if (any) {
		s->backoff_ms = 0;
		sink__clear_error(s);
	}
}

/* What the receiver has: acks read, or (without ack) what left the socket's send queue.
 * false when the connection is gone.
 */
static bool collect(struct sink *s)
{
	uint8_t tmp[512];
	int outq = 0;

	/* the queue before the EOF check: a peer that closes frees what it had not read */
	if (!s->ack && ioctl(s->fd, SIOCOUTQ, &outq))
		outq = -1;
	for (;;) {
		ssize_t n = recv(s->fd, tmp, sizeof(tmp), MSG_DONTWAIT);

		if (n > 0) {
			if (s->ack)
				parse_acks(s, tmp, (size_t)n);
			continue;
		}
		if (n == 0) {
			sink__down(s, -ECONNRESET, "the receiver closed the connection");
			return false;
		}
		if (errno == EAGAIN || errno == EINTR)
			break;
		sink__down(s, -errno, "read");
		return false;
	}
	if (s->ack)
		confirm_upto(s, 0, s->peer_acked);
	else if (outq >= 0)
		confirm_upto(s, s->conn_bytes - (uint64_t)outq, 0);
	return true;
}

/* ---- the framed stream ---------------------------------------------------------------------- */

/* The records in raw[0, n) as JSON lines into s->json, each event decoded into s->arena;
 * 0 or -ENOMEM.
 */
static int to_json(struct sink *s, const uint8_t *raw, size_t n)
{
	size_t off = 0, total, msg;
	bool failed;

	if (!s->arena) {
		s->arena = malloc(sizeof(*s->arena));
		if (!s->arena)
			return -ENOMEM;
		arena__init(s->arena);
	}
	s->json.len = 0;
	s->json.err = false;
	while (off < n && wire__frame(raw + off, n - off, &total, &msg) == 1) {
		Egret__V1__Event *ev = (Egret__V1__Event *)pbdecode__unpack_any(
			&egret__v1__event__descriptor, &s->arena->pb, total - msg, raw + off + msg);

		if (s->arena->failed)
			break;
		if (ev)
			pbjson__event_line(&s->json, ev);
		off += total;
	}
	failed = s->arena->failed || s->json.err;
	arena__reset(s->arena);
	return failed ? -ENOMEM : 0;
}

/* Take the next batch from the spool into s->buf (or its JSON); false when there is none. */
static bool fill(struct sink *s)
{
	struct spool_pos pos = s->next;
	size_t cap = SINK_READ_BYTES, count;
	ssize_t n;

	if (s->kind == SINK_FILE && s->max_size) {
		if (s->file_bytes >= s->max_size) {
			int err = file_rotate(s);

			if (err) {
				sink__down(s, err, "cannot start a new file after rotation");
				return false;
			}
		}
		if (s->max_size - s->file_bytes < cap)
			cap = (size_t)(s->max_size - s->file_bytes);
	}
	n = spool__read(s->spool, &pos, s->buf, cap, SIZE_MAX, &count);
	if (n == -EMSGSIZE && cap < SINK_READ_BYTES) {
		/* the next record does not fit in what is left of this file */
		int err = file_rotate(s);

		if (err) {
			sink__down(s, err, "cannot start a new file after rotation");
			return false;
		}
		pos = s->next;
		n = spool__read(s->spool, &pos, s->buf, SINK_READ_BYTES, SIZE_MAX, &count);
	}
	if (n < 0) {
		sink__set_error(s, (int)n, "reading the spool: %s", strerror((int)-n));
		return false;
	}
	if (n == 0)
		return false;
	if (s->format == SINK_JSON && to_json(s, s->buf, (size_t)n)) {
		sink__set_error(s, -ENOMEM, "no memory for the JSON of a batch");
		return false; /* taken again next time */
	}
	pos.off += (uint64_t)n;
	s->next = pos;
	s->buf_records = count;
	s->off = 0;
	s->len = s->format == SINK_JSON ? s->json.len : (size_t)n;
	return true;
}

static const uint8_t *out_bytes(const struct sink *s)
{
	return s->format == SINK_JSON ? (const uint8_t *)s->json.p : s->buf;
}

/* A batch is out: a file has it; a socket's receiver will confirm it. */
static void batch_written(struct sink *s)
{
	s->file_bytes += s->len;
	s->conn_records += s->buf_records;
	if (s->kind == SINK_FILE || s->kind == SINK_STDOUT) {
		s->acked = s->next;
		s->delivered += s->buf_records;
		if (s->error[0])
			sink__clear_error(s);
	} else {
		struct sink_inflight *f = &s->q[(s->qhead + s->qlen) % SINK_INFLIGHT];

		f->conn_bytes = s->conn_bytes;
		f->conn_records = s->conn_records;
		f->end = s->next;
		s->qlen++;
	}
	s->len = s->off = 0;
	s->buf_records = 0;
}

static void stream_pump(struct sink *s)
{
	bool socket = s->kind == SINK_TCP || s->kind == SINK_UNIX;
	size_t budget = PUMP_BUDGET;

	if (!s->up && !s->connecting) {
		if (now_ns(CLOCK_MONOTONIC) < s->retry_at_ns)
			return;
		if (socket) {
			if (sink__connect(s))
				return;
		} else if (s->kind == SINK_FILE) {
			int err = file_open(s);

			if (err) {
				sink__down(s, err, "open");
				return;
			}
		} else {
			s->fd = STDOUT_FILENO;
			s->up = true;
		}
	}
	if (s->connecting) {
		if (now_ns(CLOCK_MONOTONIC) - s->connect_started_ns > CONNECT_TIMEOUT_NS)
			sink__down(s, -ETIMEDOUT, "connect");
		return;
	}
	if (socket && !collect(s))
		return;
	while (budget) {
		ssize_t n;

		if (s->off == s->len) {
			/* a socket sink keeps at most SINK_INFLIGHT writes unconfirmed */
			if (socket && s->qlen == SINK_INFLIGHT)
				break;
			if (!fill(s))
				break;
			if (!s->len) {
				batch_written(s);
				continue;
			}
		}
		n = write(s->fd, out_bytes(s) + s->off, s->len - s->off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				sink__watch(s, EPOLLIN | EPOLLOUT);
				return;
			}
			sink__down(s, -errno, "write");
			return;
		}
		s->off += (size_t)n;
		s->conn_bytes += (uint64_t)n;
		budget -= (size_t)n < budget ? (size_t)n : budget;
		if (s->off == s->len)
			batch_written(s);
	}
	if (socket) {
		collect(s);
		if (s->fd >= 0)
			sink__watch(s, EPOLLIN);
	}
}

static void on_io(struct watch *w, uint32_t events)
{
	struct sink *s = w->data;

	if (s->connecting && !connect_done(s))
		return;
	sink__pump(s);
}

/* ---- the interface --------------------------------------------------------------------------- */

/* The framed sinks' ops. */
static int framed_start(struct sink *s)
{
	int err = 0;

	switch (s->kind) {
	case SINK_FILE:
		err = file_open(s);
		if (err)
			log_err("sink %s: cannot open %s: %s", s->uri, s->path, strerror(-err));
		break;
	case SINK_STDOUT:
		s->fd = STDOUT_FILENO;
		s->up = true;
		break;
	case SINK_TCP:
	case SINK_UNIX:
		sink__connect(s); /* failures are retried */
		break;
	default:
		break;
	}
	return err;
}

const struct sink_ops sink_framed_ops = { .start = framed_start, .pump = stream_pump };

static const struct sink_ops *ops_of(const struct sink *s)
{
	return s->ops ? s->ops : &sink_framed_ops;
}

int sink__start(struct sink *s, struct spool *spool, struct loop *loop, struct spool_pos from,
		sink_loss_fn on_loss, void *ctx)
{
	s->spool = spool;
	s->loop = loop;
	s->on_loss = on_loss;
	s->loss_ctx = ctx;
	s->acked = s->next = from;
	s->w = (struct watch){ .fd = -1, .fn = on_io, .data = s };
	s->buf = malloc(SINK_READ_BYTES);
	if (!s->buf)
		return -ENOMEM;
	return ops_of(s)->start(s);
}

void sink__skip(struct sink *s, struct spool_pos pos)
{
	if (s->qlen || s->len || s->connecting)
		sink__disconnect(s);
	if (ops_of(s)->reset) {
		ops_of(s)->reset(s);
		sink__disconnect(s);
	}
	s->acked = s->next = pos;
	s->len = s->off = 0;
	s->buf_records = 0;
	s->qhead = s->qlen = 0;
	s->conn_bytes = s->conn_records = s->peer_acked = s->conn_confirmed = 0;
	s->acklen = 0;
	s->retry_at_ns = 0;
}

void sink__pump(struct sink *s)
{
	ops_of(s)->pump(s);
}

void sink__reopen(struct sink *s)
{
	int err;

	if (s->kind != SINK_FILE)
		return;
	/* what was written is delivered; a batch half-written is written again in full */
	sink__disconnect(s);
	s->next = s->acked;
	s->len = s->off = 0;
	err = file_open(s);
	if (err)
		sink__down(s, err, "reopen");
	else
		log_info("sink %s: reopened %s", s->uri, s->path);
}

void sink__close(struct sink *s)
{
	if (ops_of(s)->close)
		ops_of(s)->close(s);
	sink__disconnect(s);
	free(s->buf);
	s->buf = NULL;
	pbjson__buf_free(&s->json);
	if (s->arena) {
		arena__release(s->arena);
		free(s->arena);
		s->arena = NULL;
	}
}
