/* The control socket: egretctl's requests to a running egretd. A unix SOCK_SEQPACKET socket;
 * a request is one message of NUL-separated words (argv); the reply is a series of messages,
 * each a tag byte and data: 'o' text for stdout, 'e' text for stderr, 'x' and a 4-byte exit
 * status, which ends it. Only root (or --control-group) may connect, and never a process inside
 * a sandbox: the peer is identified when egretd accepts it (peer.h), and one that cannot be is
 * refused. Slots are bounded per uid and per cgroup, with a reserve only root can take.
 */
#ifndef EGRET_CONTROL_H
#define EGRET_CONTROL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "loop.h"
#include "peer.h"

#define CONTROL_MSG_MAX	    65536
#define CONTROL_REPLY_CHUNK 32768 /* text bytes per reply message */
#define CONTROL_MAX_ARGS    4096
#define CONTROL_MAX_CONNS   32
#define CONTROL_ROOT_SLOTS  8  /* of those, only root peers (outside sandboxes) take the last 8 */
#define CONTROL_PER_UID	    8  /* connections one non-root uid may hold at once */
#define CONTROL_PER_CGROUP  16 /* connections the processes of one cgroup may hold at once */
#define CONTROL_MAX_FDS	    4  /* descriptors a request may pass (SCM_RIGHTS) */

struct control_req {
	int argc;
	char **argv;
	/* descriptors passed with the request (a registration's cgroup and namespaces); a
	 * handler that keeps one sets its slot to -1, the rest are closed after it
	 */
	int fds[CONTROL_MAX_FDS];
	int nfds;
	struct ucred peer;
	enum peer_place place; /* where the peer was when egretd accepted it (peer.h) */
	char *reply;	       /* framed reply messages */
	size_t len, cap;
};

typedef int (*control_fn)(void *ctx, struct control_req *r);

struct control_cmd {
	const char *name;
	control_fn fn;
};

struct control_conn;

struct control {
	struct watch listen;
	struct loop *loop;
	char path[PATH_MAX];
	bool has_group;
	gid_t group;
	const char *cgroup_mount;
	const char *cgroup_root;
	/* what makes a peer's cgroup a sandbox's (struct peer_scope); NULL: below the root */
	bool (*in_sandbox)(const void *ctx, const char *cgroup);
	const void *in_sandbox_ctx;
	const struct control_cmd *cmds;
	size_t ncmds;
	void *ctx;
	struct control_conn *conns;
	unsigned int nconns;
	unsigned long long served, refused, busy;
	uint64_t warned_ns;    /* the last refusal logged (at most one a second) */
	unsigned int unlogged; /* refusals since, not logged */
};

int control__listen(struct control *c, struct loop *loop, const char *path);
/* Connections open, served, refused (for egretd's status). */
void control__status(const struct control *c, struct control_req *r);
void control__expire(struct control *c);
void control__close(struct control *c);
void control__out(struct control_req *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void control__err(struct control_req *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

int control__call(const char *path, int argc, char *const argv[], FILE *out, FILE *err,
		  int timeout_s);
/* The same, passing nfds descriptors with the request (SCM_RIGHTS). */
int control__call_fds(const char *path, int argc, char *const argv[], const int *fds, int nfds,
		      FILE *out, FILE *err, int timeout_s);
/* Split a request into words; returns argc, or -EINVAL when it is not NUL-terminated words. */
int control__parse_request(char *msg, size_t len, char **argv, int max);
/* One request of n bytes (more than CONTROL_MSG_MAX: it was cut) from r->peer: checked, parsed,
 * dispatched; r->reply holds the framed reply, ending with the exit status.
 */
void control__handle(struct control *c, char *msg, size_t n, struct control_req *r);
/* The next message of a framed reply at *off (tag, then up to CONTROL_REPLY_CHUNK bytes) into
 * msg; false at the end, or where the framing is broken.
 */
bool control__reply_next(const char *reply, size_t len, size_t *off, char *msg, size_t *mlen);
/* One reply message as egretctl receives it: text copied to out or err, or the end (1, with
 * *status); -EBADMSG for anything else.
 */
int control__reply_msg(const char *msg, size_t n, FILE *out, FILE *err, int *status);

#endif /* EGRET_CONTROL_H */
