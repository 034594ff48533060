/* The control socket: egretctl's requests to a running egretd. A unix SOCK_SEQPACKET socket;
 * a request is one message of NUL-separated words (argv); the reply is a series of messages,
 * each a tag byte and data: 'o' text for stdout, 'e' text for stderr, 'x' and a 4-byte exit
 * status, which ends it. Only root (or --control-group) may connect, and never a process inside
 * a sandbox.
 */
#ifndef EGRET_CONTROL_H
#define EGRET_CONTROL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/socket.h>
#include <sys/types.h>

#include "loop.h"

#define CONTROL_MSG_MAX	  65536
#define CONTROL_MAX_ARGS  4096
#define CONTROL_MAX_CONNS 32

struct control_req {
	int argc;
	char **argv;
	struct ucred peer;
	char *reply; /* framed reply messages */
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
	const struct control_cmd *cmds;
	size_t ncmds;
	void *ctx;
	struct control_conn *conns;
	unsigned int nconns;
	unsigned long long served, refused;
};

int control__listen(struct control *c, struct loop *loop, const char *path);
void control__expire(struct control *c);
void control__close(struct control *c);
void control__out(struct control_req *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void control__err(struct control_req *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

int control__call(const char *path, int argc, char *const argv[], FILE *out, FILE *err,
		  int timeout_s);
int control__parse_request(char *msg, size_t len, char **argv, int max);

#endif /* EGRET_CONTROL_H */
