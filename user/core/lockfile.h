/* Exclusive locks that say "this path is in use" for a process's whole life: an egretd's state
 * dir, spool and control socket, taken before egretd touches any of them. flock(2) locks
 * belong to the open file, so the kernel drops them when the process exits, however it exits;
 * a lock file left behind means nothing. The holder of a lock is found in /proc/locks (a lock
 * file also holds its pid, for a human and for a holder in another pid namespace).
 */
#ifndef EGRET_LOCKFILE_H
#define EGRET_LOCKFILE_H

#include <stddef.h>
#include <sys/types.h>

struct lock_holder {
	pid_t pid;     /* 0 when unknown */
	char comm[16]; /* its /proc/PID/comm, "" when unknown */
};

/* Lock path, a regular file created (0600) when missing, and write our pid into it. Returns
 * the fd, which holds the lock until it is closed; -EWOULDBLOCK when another process holds
 * it (then *holder says which), or another -errno.
 */
int lockfile__take(const char *path, struct lock_holder *holder);
/* The same on an existing directory (a bpffs dir, which cannot hold a file). */
int lockfile__take_dir(const char *dir, struct lock_holder *holder);
/* "egretd (pid 1234)", "pid 1234" or "another process". */
const char *lockfile__describe(const struct lock_holder *h, char *buf, size_t size);

#endif /* EGRET_LOCKFILE_H */
