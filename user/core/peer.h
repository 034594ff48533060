/* Who is on the other end of a request to egretd (a control-socket peer, a signal's sender) and
 * whether it is inside a sandbox. Fails closed: a process egretd cannot identify (it exited, its
 * pid was reused, its /proc entry cannot be read) is PEER_UNKNOWN, never taken for a host
 * process. Where the kernel can pin the identity (a pidfd: SO_PEERPIDFD on Linux 6.5+, else
 * pidfd_open at the time of the check), a process that went away while it was being looked at
 * is caught too.
 */
#ifndef EGRET_PEER_H
#define EGRET_PEER_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

enum peer_place {
	PEER_UNKNOWN = 0, /* could not be identified: refuse */
	PEER_HOST,	  /* outside every sandbox */
	PEER_SANDBOX,	  /* inside egret's root cgroup */
};

enum peer_pin {
	PEER_PIN_NONE,	    /* the pid as /proc shows it now (no pidfds on this kernel) */
	PEER_PIN_PIDFD,	    /* a pidfd taken when egretd looked */
	PEER_PIN_PEERPIDFD, /* the socket's own pidfd of its peer (SO_PEERPIDFD) */
	PEER_PIN_KERNEL,    /* the cgroup the kernel recorded at the time (not yet used) */
};

struct peer {
	struct ucred cred;
	enum peer_place place;
	enum peer_pin pin;
	char cgroup[PATH_MAX]; /* its cgroup v2 directory, when known */
	char why[160];	       /* PEER_UNKNOWN: why it could not be identified */
};

struct peer_scope {
	const char *cgroup_mount; /* the cgroup v2 mount */
	const char *cgroup_root;  /* egret's root cgroup: everything below is a sandbox */
	/* egretd's registry: whether a cgroup is in a sandbox wherever it is (a container's);
	 * NULL: below cgroup_root only
	 */
	bool (*in_sandbox)(const void *ctx, const char *cgroup);
	const void *ctx;
};

/* The process that connected to a unix socket, as it was when egretd accepted it. */
void peer__of_socket(int fd, const struct peer_scope *s, struct peer *out);
/* A signal's sender (pid and uid from the signal). recorded_cgroup is the cgroup the kernel
 * recorded when the signal was sent, or NULL when there is no such record; without it the
 * sender is looked up now, in /proc (a zombie still names its cgroup, a reaped process is
 * PEER_UNKNOWN).
 */
void peer__of_signal(pid_t pid, uid_t uid, const char *recorded_cgroup, const struct peer_scope *s,
		     struct peer *out);
/* The place of a process by its pid; pidfd (or -1) pins it; zombies are PEER_UNKNOWN unless
 * zombie_ok.
 */
void peer__of_pid(pid_t pid, int pidfd, bool zombie_ok, const struct peer_scope *s,
		  struct peer *out);
/* The sandbox's name (the first component below the root), or "" outside sandboxes. */
const char *peer__sandbox(const struct peer *p, const struct peer_scope *s, char *out, size_t size);

#endif /* EGRET_PEER_H */
