/* egretctl tail; see tail.h. */
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "arena.h"
#include "array.h"
#include "egret/v1/events.pb-c.h"
#include "log.h"
#include "pbdecode.h"
#include "pbjson.h"
#include "sink.h"
#include "tail.h"
#include "util.h"
#include "wire.h"

#define TAIL_CHUNK	 (1u << 20)
#define TAIL_MAX_CLIENTS 64
#define TAIL_ARENA_KEEP	 (1u << 20) /* a feed's decoding memory kept between records */
#define FOLLOW_POLL_MS	 200

/* Bytes from one source, framed into records as they arrive. */
struct feed {
	int fd;
	char name[128];
	uint8_t *buf;
	size_t len, cap;
	uint64_t offset;     /* stream offset of buf[0] */
	uint64_t records;    /* decoded from this source */
	bool bad;	     /* a length prefix that cannot be ours: the rest is unreadable */
	struct arena *arena; /* each record decoded into it (pbdecode), emptied after; its own
			      * allocation: a feed is copied when the one before it goes */
};

static int feed_init(struct feed *f, int fd, const char *name)
{
	memset(f, 0, sizeof(*f));
	f->fd = fd;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->cap = TAIL_CHUNK;
	f->buf = malloc(f->cap);
	f->arena = malloc(sizeof(*f->arena));
	if (!f->buf || !f->arena) {
		free(f->buf);
		free(f->arena);
		return -ENOMEM;
	}
	arena__init(f->arena);
	return 0;
}

static void feed_free(struct feed *f)
{
	free(f->buf);
	f->buf = NULL;
	if (f->arena)
		arena__release(f->arena);
	free(f->arena);
	f->arena = NULL;
}

/* Read what is there: bytes read, 0 at end of file, -errno. */
static ssize_t feed_read(struct feed *f)
{
	ssize_t n;

	/* doubling from TAIL_CHUNK, never past what two records of ours can take */
	if (f->len == f->cap &&
	    (f->cap * 2 > WIRE_RECORD_MAX * 2 || ARRAY_RESERVE(f->buf, f->cap, f->len + 1)))
		return -ENOMEM;
	n = read(f->fd, f->buf + f->len, f->cap - f->len);
	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? -EAGAIN : -errno;
	f->len += (size_t)n;
	return n;
}

/* Print every whole record held; returns how many were not Events (reported on stderr). */
static int feed_decode(struct feed *f, FILE *out)
{
	size_t off = 0, total, msg;
	int bad = 0, r;

	while ((r = wire__frame(f->buf + off, f->len - off, &total, &msg)) == 1) {
		Egret__V1__Event *ev = (Egret__V1__Event *)pbdecode__unpack_any(
			&egret__v1__event__descriptor, &f->arena->pb, total - msg,
			f->buf + off + msg);

		/* an event is whole (pbdecode may have run out, and protobuf-c then decoded it) */
		if (ev) {
			pbjson__event(out, ev);
			fputc('\n', out);
		} else if (f->arena->failed) {
			log_note("%s: out of memory decoding the record at byte %llu (%zu bytes); "
				 "skipped",
				 f->name, (unsigned long long)(f->offset + off), total - msg);
			bad++;
		} else {
			log_note("%s: record at byte %llu (%zu bytes) is not an "
				 "egret.v1.Event; skipped",
				 f->name, (unsigned long long)(f->offset + off), total - msg);
			bad++;
		}
		arena__trim(f->arena, TAIL_ARENA_KEEP); /* a peer's huge record: not kept */
		arena__reset(f->arena);
		f->records++;
		off += total;
	}
	if (r < 0 && !f->bad) {
		log_note("%s: bad length prefix at byte %llu: not an egret event stream", f->name,
			 (unsigned long long)(f->offset + off));
		f->bad = true;
	}
	memmove(f->buf, f->buf + off, f->len - off);
	f->len -= off;
	f->offset += off;
	return bad;
}

/* The source ended: anything left is a half-written record. */
static bool feed_end(const struct feed *f)
{
	if (f->len && !f->bad)
		log_note("%s: stream ends inside the record at byte %llu (half-written "
			 "tail)",
			 f->name, (unsigned long long)f->offset);
	return !f->len && !f->bad;
}

/* ---- files ----------------------------------------------------------------------------------- */

/* A followed file rotated (a new file under the name) or truncated: 1 when f reads the new
 * one from its start now, 0 when neither happened, -errno when the new one cannot be opened
 * (f->fd is -1 then).
 */
static int feed_reopen(struct feed *f, const char *path)
{
	struct stat now, cur;

	if (stat(path, &now) || fstat(f->fd, &cur) ||
	    (now.st_ino == cur.st_ino && (uint64_t)now.st_size >= f->offset + f->len))
		return 0;
	feed_end(f);
	close(f->fd);
	f->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (f->fd < 0)
		return -errno;
	f->len = 0;
	f->offset = 0;
	return 1;
}

static int tail_file(const char *path, bool follow, FILE *out)
{
	bool is_stdin = !strcmp(path, "-"), bad = false;
	int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC), err = 0, r;
	struct feed f;

	if (fd < 0) {
		err = -errno;
		log_note("cannot open %s: %s", path, strerror(-err));
		return err;
	}
	err = feed_init(&f, fd, is_stdin ? "stdin" : path);
	if (err)
		goto out_fd;
	for (;;) {
		ssize_t n = feed_read(&f);

		if (n > 0) {
			bad |= feed_decode(&f, out) > 0;
			if (f.bad)
				break;
			continue;
		}
		if (n < 0 && n != -EAGAIN) {
			log_note("%s: %s", f.name, strerror((int)-n));
			err = (int)n;
			break;
		}
		if (!follow || is_stdin)
			break;
		fflush(out);
		r = feed_reopen(&f, path);
		if (r < 0)
			break;
		if (r == 0)
			poll(NULL, 0, FOLLOW_POLL_MS);
	}
	bad |= !feed_end(&f);
	fd = f.fd;
	feed_free(&f);
	fflush(out);
out_fd:
	if (!is_stdin && fd >= 0)
		close(fd);
	return err ? err : bad ? -EBADMSG : 0;
}

/* ---- as a receiver --------------------------------------------------------------------------- */

static int listen_on(const char *src)
{
	struct sockaddr_storage ss = { 0 };
	socklen_t sl;
	int fd, one = 1;

	if (str_starts_with(src, "unix-listen:")) {
		struct sockaddr_un *un = (struct sockaddr_un *)&ss;
		const char *path = src + 12;

		if (path[0] != '/' || strlen(path) >= sizeof(un->sun_path)) {
			log_note("%s: expected unix-listen:/ABSOLUTE/PATH", src);
			return -EINVAL;
		}
		un->sun_family = AF_UNIX;
		str_copy(un->sun_path, sizeof(un->sun_path), path);
		unlink(path);
		sl = sizeof(*un);
	} else {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
					  .ai_flags = AI_PASSIVE | AI_NUMERICSERV },
				*ai = NULL;
		char host[256], port[16];
		const char *hp = src + 13;

		if (sink__parse_hostport(hp, strlen(hp), NULL, host, port) ||
		    getaddrinfo(host, port, &hints, &ai) || !ai) {
			log_note("%s: expected tcp-listen://HOST:PORT", src);
			return -EINVAL;
		}
		memcpy(&ss, ai->ai_addr, ai->ai_addrlen);
		sl = ai->ai_addrlen;
		freeaddrinfo(ai);
	}
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, sl) || listen(fd, 16)) {
		int err = -errno;

		log_note("cannot listen on %s: %s", src, strerror(errno));
		close(fd);
		return err;
	}
	return fd;
}

/* Records written out so far on this connection, as the sink's ack protocol wants them. */
static void send_ack(struct feed *f)
{
	uint8_t v[WIRE_VARINT_MAX];
	size_t n = wire__varint_put(f->records, v);

	send(f->fd, v, n, MSG_NOSIGNAL | MSG_DONTWAIT);
}

static int tail_listen(const char *src, FILE *out)
{
	struct pollfd pfd[1 + TAIL_MAX_CLIENTS];
	struct feed clients[TAIL_MAX_CLIENTS];
	int lfd = listen_on(src), n = 0, err = 0;

	if (lfd < 0)
		return lfd;
	log_note("listening on %s", src);
	pfd[0] = (struct pollfd){ .fd = lfd, .events = POLLIN };
	for (;;) {
		if (poll(pfd, (nfds_t)(1 + n), -1) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (pfd[0].revents & POLLIN) {
			int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);

			if (c >= 0 && n < TAIL_MAX_CLIENTS && !feed_init(&clients[n], c, src)) {
				snprintf(clients[n].name, sizeof(clients[n].name),
					 "%s connection %d", src, c);
				pfd[1 + n] = (struct pollfd){ .fd = c, .events = POLLIN };
				n++;
			} else if (c >= 0) {
				close(c);
			}
		}
		for (int i = 0; i < n; i++) {
			struct feed *f = &clients[i];
			ssize_t r;

			if (!pfd[1 + i].revents)
				continue;
			r = feed_read(f);
			if (r > 0) {
				feed_decode(f, out);
				fflush(out);
				if (!f->bad) {
					send_ack(f);
					continue;
				}
			} else if (r == -EAGAIN) {
				continue;
			} else {
				feed_end(f);
			}
			/* gone, or unreadable: drop the connection */
			close(f->fd);
			feed_free(f);
			clients[i] = clients[n - 1];
			pfd[1 + i] = pfd[n];
			n--;
			i--;
		}
	}
	close(lfd);
	return err;
}

int tail__run(const char *src, bool follow, FILE *out)
{
	if (str_starts_with(src, "tcp-listen://") || str_starts_with(src, "unix-listen:"))
		return tail_listen(src, out);
	return tail_file(src, follow, out);
}
