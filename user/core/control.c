/* Control socket server (egretd) and client (egretctl). See control.h for the protocol. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "cgroup.h"
#include "control.h"
#include "log.h"
#include "util.h"

#define CONN_IDLE_NS	     (5ull * 1000000000ull)
#define CONTROL_REJECT_DRAIN 256 /* messages of a refused peer read before closing */

struct control_conn {
	struct watch w;
	struct control *srv;
	struct control_conn *next;
	uint64_t deadline;
	struct peer peer; /* as identified when it was accepted */
	char *reply;	  /* framed messages still to send */
	size_t len, off;
};

static int sun_for(struct sockaddr_un *sa, const char *path)
{
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sa->sun_path))
		return -ENAMETOOLONG;
	strcpy(sa->sun_path, path);
	return 0;
}

static void reply_append(struct control_req *r, char tag, const void *data, size_t len)
{
	size_t need = r->len + 3 + len;

	if (ARRAY_RESERVE(r->reply, r->cap, need))
		return;
	/* internal framing: tag, 2-byte length, data; split into messages on send */
	r->reply[r->len] = tag;
	r->reply[r->len + 1] = (char)(len >> 8);
	r->reply[r->len + 2] = (char)(len & 0xff);
	memcpy(r->reply + r->len + 3, data, len);
	r->len += 3 + len;
}

__attribute__((format(printf, 3, 0))) static void reply_vtext(struct control_req *r, char tag,
							      const char *fmt, va_list ap)
{
	char *text = NULL;
	int n = vasprintf(&text, fmt, ap);

	for (int off = 0; n > 0 && off < n; off += CONTROL_REPLY_CHUNK) {
		int len = n - off < CONTROL_REPLY_CHUNK ? n - off : CONTROL_REPLY_CHUNK;

		reply_append(r, tag, text + off, (size_t)len);
	}
	free(text);
}

void control__out(struct control_req *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	reply_vtext(r, 'o', fmt, ap);
	va_end(ap);
}

void control__err(struct control_req *r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	reply_vtext(r, 'e', fmt, ap);
	va_end(ap);
}

static void conn_free(struct control_conn *cc)
{
	struct control *c = cc->srv;

	for (struct control_conn **p = &c->conns; *p; p = &(*p)->next) {
		if (*p == cc) {
			*p = cc->next;
			break;
		}
	}
	loop__del(c->loop, &cc->w);
	close(cc->w.fd);
	free(cc->reply);
	free(cc);
	c->nconns--;
}

bool control__reply_next(const char *reply, size_t len, size_t *off, char *msg, size_t *mlen)
{
	const char *p = reply + *off;
	size_t dlen;

	if (*off >= len || len - *off < 3)
		return false;
	dlen = ((size_t)(uint8_t)p[1] << 8) | (uint8_t)p[2];
	if (dlen > CONTROL_REPLY_CHUNK || len - *off - 3 < dlen)
		return false;
	msg[0] = p[0];
	memcpy(msg + 1, p + 3, dlen);
	*mlen = dlen + 1;
	*off += 3 + dlen;
	return true;
}

/* Send queued reply messages; frees the connection when all are out or the peer is gone. */
static void conn_send(struct control_conn *cc)
{
	char msg[CONTROL_REPLY_CHUNK + 1];
	size_t off = cc->off, mlen;

	while (control__reply_next(cc->reply, cc->len, &off, msg, &mlen)) {
		if (send(cc->w.fd, msg, mlen, MSG_DONTWAIT | MSG_NOSIGNAL) < 0) {
			if (errno == EAGAIN) {
				loop__mod(cc->srv->loop, &cc->w, EPOLLOUT);
				return;
			}
			break;
		}
		cc->off = off;
	}
	conn_free(cc);
}

/* Split a request into words; returns argc, or -EINVAL when it is not NUL-terminated words. */
int control__parse_request(char *msg, size_t len, char **argv, int max)
{
	int argc = 0;

	if (len == 0 || msg[len - 1] != '\0')
		return -EINVAL;
	for (size_t i = 0; i < len;) {
		if (argc == max)
			return -E2BIG;
		argv[argc++] = msg + i;
		i += strlen(msg + i) + 1;
	}
	return argc;
}

/* Root, or the control group; and only a peer identified outside every sandbox. */
static bool peer_allowed(struct control *c, const struct ucred *cr, enum peer_place place,
			 char *why, size_t size)
{
	if (cr->uid != 0 && !(c->has_group && cr->gid == c->group)) {
		snprintf(why, size, "uid %u is not allowed on the control socket", cr->uid);
		return false;
	}
	if (place == PEER_SANDBOX) {
		snprintf(why, size, "requests from inside a sandbox are refused");
		return false;
	}
	if (place != PEER_HOST) {
		snprintf(why, size, "the peer could not be identified: refused");
		return false;
	}
	return true;
}

static int32_t dispatch(struct control *c, struct control_req *r)
{
	for (size_t i = 0; i < c->ncmds; i++) {
		if (strcmp(c->cmds[i].name, r->argv[0]) == 0)
			return c->cmds[i].fn(c->ctx, r);
	}
	control__err(r, "unknown request '%s'\n", r->argv[0]);
	return 2;
}

void control__handle(struct control *c, char *msg, size_t n, struct control_req *r)
{
	char *argv[CONTROL_MAX_ARGS], why[160];
	int32_t status = 2;

	if (!peer_allowed(c, &r->peer, r->place, why, sizeof(why))) {
		c->refused++;
		log_warn("control: refused pid %d uid %u: %s", r->peer.pid, r->peer.uid, why);
		control__err(r, "%s\n", why);
		status = 1;
	} else if (n > CONTROL_MSG_MAX) {
		control__err(r, "request larger than %d bytes\n", CONTROL_MSG_MAX);
	} else if (r->nfds < 0) {
		control__err(r, "more than %d descriptors with a request\n", CONTROL_MAX_FDS);
	} else if ((r->argc = control__parse_request(msg, n, argv, CONTROL_MAX_ARGS)) <= 0) {
		control__err(r, "malformed request\n");
	} else {
		r->argv = argv;
		c->served++;
		status = dispatch(c, r);
	}
	r->argv = NULL;
	reply_append(r, 'x', &status, sizeof(status));
}

/* One request and the descriptors passed with it (close-on-exec); the request's size, or
 * -errno. More descriptors than a request may carry are closed and the request refused.
 */
static ssize_t recv_request(int fd, char *msg, size_t size, struct control_req *r)
{
	char cbuf[CMSG_SPACE(sizeof(int) * CONTROL_MAX_FDS)];
	struct iovec iov = { .iov_base = msg, .iov_len = size };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t n = recvmsg(fd, &mh, MSG_DONTWAIT | MSG_TRUNC | MSG_CMSG_CLOEXEC);

	if (n < 0)
		return -errno;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
		int nfd;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		nfd = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		for (int i = 0; i < nfd; i++) {
			int got;

			memcpy(&got, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (r->nfds < CONTROL_MAX_FDS)
				r->fds[r->nfds++] = got;
			else
				close(got);
		}
	}
	if (mh.msg_flags & MSG_CTRUNC)
		r->nfds = -r->nfds - 1; /* control__handle refuses it */
	return n;
}

static void close_fds(struct control_req *r)
{
	int n = r->nfds < 0 ? -r->nfds - 1 : r->nfds;

	for (int i = 0; i < n; i++) {
		if (r->fds[i] >= 0)
			close(r->fds[i]);
		r->fds[i] = -1;
	}
	r->nfds = 0;
}

static void conn_event(struct watch *w, uint32_t events)
{
	struct control_conn *cc = w->data;
	struct control_req r = { .peer = cc->peer.cred, .place = cc->peer.place };
	char msg[CONTROL_MSG_MAX];
	ssize_t n;

	if (cc->reply) {
		conn_send(cc);
		return;
	}
	n = recv_request(w->fd, msg, sizeof(msg), &r);
	if (n == -EAGAIN)
		return;
	if (n <= 0) {
		close_fds(&r);
		conn_free(cc);
		return;
	}
	control__handle(cc->srv, msg, (size_t)n, &r);
	close_fds(&r);
	cc->reply = r.reply;
	cc->len = r.len;
	conn_send(cc);
}

/* At most one refusal a second goes to the log (a flood of connections is not a flood of
 * lines); the count of the others goes with the next.
 */
static void log_refusal(struct control *c, const struct peer *p, const char *why)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	c->refused++;
	if (c->warned_ns && now - c->warned_ns < 1000000000ull) {
		c->unlogged++;
		return;
	}
	log_warn("control: refused pid %d uid %u: %s%s", p->cred.pid, p->cred.uid, why,
		 c->unlogged ? " (more refusals since the last logged)" : "");
	c->warned_ns = now;
	c->unlogged = 0;
}

/* Answer a connection egretd will not serve with why and status, and close it: the peer's
 * egretctl prints why instead of a bare "connection reset".
 */
static void reject(int fd, const char *why, int32_t status)
{
	char msg[CONTROL_REPLY_CHUNK + 1];
	struct control_req r = { 0 };
	size_t off = 0, mlen;

	control__err(&r, "%s\n", why);
	reply_append(&r, 'x', &status, sizeof(status));
	while (control__reply_next(r.reply, r.len, &off, msg, &mlen) &&
	       send(fd, msg, mlen, MSG_DONTWAIT | MSG_NOSIGNAL) >= 0)
		;
	free(r.reply);
	/* read what the peer sent: closing over unread data resets the peer before its reply.
	 * Until the queue is empty (-1) or the peer has shut down (0, which recv returns for ever
	 * after), and at most a queue's worth, so a peer that keeps sending cannot hold egretd here.
	 */
	for (int i = 0; i < CONTROL_REJECT_DRAIN && recv(fd, msg, 1, MSG_DONTWAIT | MSG_TRUNC) > 0;
	     i++)
		;
	close(fd);
}

/* Is there a slot for p? Bounded per uid and per cgroup, and the last CONTROL_ROOT_SLOTS are
 * root's, so neither one user nor one cgroup can lock the operator out.
 */
static bool slot_free(struct control *c, const struct peer *p, char *why, size_t size)
{
	unsigned int nonroot = 0, same_uid = 0, same_cgroup = 0;

	for (struct control_conn *cc = c->conns; cc; cc = cc->next) {
		nonroot += cc->peer.cred.uid != 0;
		same_uid += cc->peer.cred.uid == p->cred.uid;
		same_cgroup += !strcmp(cc->peer.cgroup, p->cgroup);
	}
	if (c->nconns >= CONTROL_MAX_CONNS)
		snprintf(why, size, "egretd is busy: all %d control connections are in use",
			 CONTROL_MAX_CONNS);
	else if (p->cred.uid && nonroot >= CONTROL_MAX_CONNS - CONTROL_ROOT_SLOTS)
		snprintf(why, size,
			 "egretd is busy: the %d control connections open to users other "
			 "than root are in use",
			 CONTROL_MAX_CONNS - CONTROL_ROOT_SLOTS);
	else if (p->cred.uid && same_uid >= CONTROL_PER_UID)
		snprintf(why, size, "egretd is busy: uid %u holds %u control connections already",
			 p->cred.uid, same_uid);
	else if (same_cgroup >= CONTROL_PER_CGROUP)
		snprintf(why, size,
			 "egretd is busy: cgroup %.200s holds %u control connections already",
			 p->cgroup, same_cgroup);
	else
		return true;
	return false;
}

/* Identify the peer now, while it is there: refuse a sandbox, a stranger or a peer that cannot
 * be identified before it takes a slot; then a slot, if its uid and cgroup have one left.
 */
static void accept_one(struct control *c, int fd)
{
	struct peer_scope scope = { .cgroup_mount = c->cgroup_mount,
				    .cgroup_root = c->cgroup_root,
				    .in_sandbox = c->in_sandbox,
				    .ctx = c->in_sandbox_ctx };
	struct control_conn *cc;
	struct peer p;
	char why[320];

	peer__of_socket(fd, &scope, &p);
	if (!peer_allowed(c, &p.cred, p.place, why, sizeof(why))) {
		if (p.place == PEER_UNKNOWN && p.why[0])
			snprintf(why, sizeof(why),
				 "the peer could not be identified (%s): refused; egretd serves a "
				 "connection only when it can tell where its peer is",
				 p.why);
		log_refusal(c, &p, why);
		reject(fd, why, 1);
		return;
	}
	if (!slot_free(c, &p, why, sizeof(why))) {
		c->busy++;
		log_refusal(c, &p, why);
		reject(fd, why, 1);
		return;
	}
	cc = calloc(1, sizeof(*cc));
	if (!cc) {
		close(fd);
		return;
	}
	cc->w = (struct watch){ .fd = fd, .fn = conn_event, .data = cc };
	cc->srv = c;
	cc->peer = p;
	cc->deadline = now_ns(CLOCK_MONOTONIC) + CONN_IDLE_NS;
	cc->next = c->conns;
	c->conns = cc;
	c->nconns++;
	loop__add(c->loop, &cc->w, EPOLLIN);
}

static void listen_event(struct watch *w, uint32_t events)
{
	struct control *c = w->data;
	int fd;

	while ((fd = accept4(w->fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0)
		accept_one(c, fd);
}

void control__status(const struct control *c, struct control_req *r)
{
	control__out(r,
		     "control: %u connections open (at most %d; %d per uid but root's, %d per "
		     "cgroup, %d kept for root), %llu requests served, %llu refused (%llu busy)\n",
		     c->nconns, CONTROL_MAX_CONNS, CONTROL_PER_UID, CONTROL_PER_CGROUP,
		     CONTROL_ROOT_SLOTS, c->served, c->refused, c->busy);
}

/* Drop connections that sent nothing (or read nothing) within CONN_IDLE_NS. */
void control__expire(struct control *c)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	struct control_conn *cc = c->conns, *next;

	for (; cc; cc = next) {
		next = cc->next;
		if (now > cc->deadline)
			conn_free(cc);
	}
}

/* An existing socket file: another egretd answering on it is an error; a dead one is removed. */
static int claim_path(const char *path, const struct sockaddr_un *sa)
{
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	if (connect(fd, (const struct sockaddr *)sa, sizeof(*sa)) == 0) {
		log_err("another egretd is serving the control socket %s: stop it, or give this one "
			"its own --control",
			path);
		err = -EADDRINUSE;
	} else if (errno == ECONNREFUSED) {
		unlink(path);
	}
	close(fd);
	return err;
}

int control__listen(struct control *c, struct loop *loop, const char *path)
{
	struct sockaddr_un sa;
	char dir[PATH_MAX];
	mode_t old;
	int fd, err;

	c->loop = loop;
	snprintf(c->path, sizeof(c->path), "%s", path);
	err = sun_for(&sa, path);
	if (err) {
		log_err("control socket path %s is too long", path);
		return err;
	}
	snprintf(dir, sizeof(dir), "%s", path);
	err = mkdir_p(dirname(dir), 0755);
	if (!err)
		err = claim_path(path, &sa);
	if (err)
		return err;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	old = umask(c->has_group ? 0117 : 0177);
	err = bind(fd, (struct sockaddr *)&sa, sizeof(sa)) ? -errno : 0;
	umask(old);
	if (!err && c->has_group && chown(path, 0, c->group))
		err = -errno;
	if (!err && listen(fd, 128))
		err = -errno;
	if (err) {
		log_err("failed to listen on control socket %s: %s", path, strerror(-err));
		close(fd);
		return err;
	}
	c->listen = (struct watch){ .fd = fd, .fn = listen_event, .data = c };
	return loop__add(loop, &c->listen, EPOLLIN);
}

void control__close(struct control *c)
{
	while (c->conns)
		conn_free(c->conns);
	if (c->listen.fd > 0) {
		loop__del(c->loop, &c->listen);
		close(c->listen.fd);
		unlink(c->path);
	}
	c->listen.fd = -1;
}

/* Send argv to egretd at path, copy its reply to out / err, return its exit status; -errno
 * when egretd cannot be reached.
 */
int control__call(const char *path, int argc, char *const argv[], FILE *out, FILE *err,
		  int timeout_s)
{
	return control__call_fds(path, argc, argv, NULL, 0, out, err, timeout_s);
}

static ssize_t send_request(int fd, const char *msg, size_t len, const int *fds, int nfds)
{
	char cbuf[CMSG_SPACE(sizeof(int) * CONTROL_MAX_FDS)] = { 0 };
	struct iovec iov = { .iov_base = (void *)msg, .iov_len = len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };
	struct cmsghdr *c;

	if (nfds > CONTROL_MAX_FDS)
		return -E2BIG;
	if (nfds > 0) {
		mh.msg_control = cbuf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(c), fds, sizeof(int) * (size_t)nfds);
	}
	return sendmsg(fd, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

int control__call_fds(const char *path, int argc, char *const argv[], const int *fds, int nfds,
		      FILE *out, FILE *err, int timeout_s)
{
	struct timeval tv = { .tv_sec = timeout_s };
	char msg[CONTROL_MSG_MAX];
	struct sockaddr_un sa;
	size_t len = 0;
	int fd, ret, sent, status = 0;

	for (int i = 0; i < argc; i++) {
		size_t n = strlen(argv[i]) + 1;

		if (len + n > sizeof(msg))
			return -E2BIG;
		memcpy(msg + len, argv[i], n);
		len += n;
	}
	ret = sun_for(&sa, path);
	if (ret)
		return ret;
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		ret = -errno;
		close(fd);
		return ret;
	}
	/* egretd may have refused the connection already: its reply says why */
	sent = (int)send_request(fd, msg, len, fds, nfds);
	for (int resets = 0;;) {
		ssize_t n = recv(fd, msg, sizeof(msg), 0);

		/* egretd closed over our unread request: the reset comes first, then its reply */
		if (n < 0 && errno == ECONNRESET && !resets++)
			continue;
		if (n <= 0) {
			ret = sent ? sent : n < 0 ? -errno : -ECONNRESET;
			break;
		}
		ret = control__reply_msg(msg, (size_t)n, out, err, &status);
		if (ret) {
			ret = ret < 0 ? ret : status;
			break;
		}
	}
	close(fd);
	return ret;
}

int control__reply_msg(const char *msg, size_t n, FILE *out, FILE *err, int *status)
{
	int32_t v;

	if (n == 0)
		return -EBADMSG;
	if (msg[0] == 'x') {
		if (n != 5)
			return -EBADMSG;
		memcpy(&v, msg + 1, 4);
		*status = v;
		return 1;
	}
	if (msg[0] != 'o' && msg[0] != 'e')
		return -EBADMSG;
	fwrite(msg + 1, 1, n - 1, msg[0] == 'e' ? err : out);
	return 0;
}
