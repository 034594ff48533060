/* Peer identity (see peer.h): SO_PEERCRED, a pidfd that pins the process, its cgroup from
 * /proc, and a check that the pinned process is still there after /proc was read (so the pid
 * was not reused in between).
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "cgroup.h"
#include "peer.h"
#include "util.h"

#ifndef SO_PEERPIDFD
#define SO_PEERPIDFD 77
#endif

static int pidfd_open_(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

/* 0 while the process behind pidfd exists (a zombie included), else -errno. */
static int pidfd_alive(int pidfd)
{
#ifdef SYS_pidfd_send_signal
	return syscall(SYS_pidfd_send_signal, pidfd, 0, NULL, 0) ? -errno : 0;
#else
	return -ENOSYS;
#endif
}

__attribute__((format(printf, 2, 3))) static void unknown(struct peer *out, const char *fmt, ...)
{
	va_list ap;

	out->place = PEER_UNKNOWN;
	va_start(ap, fmt);
	vsnprintf(out->why, sizeof(out->why), fmt, ap);
	va_end(ap);
}

static void place_of(struct peer *out, const struct peer_scope *s)
{
	bool in = s->in_sandbox ? s->in_sandbox(s->ctx, out->cgroup)
				: cgroup__is_within(out->cgroup, s->cgroup_root);

	out->place = in ? PEER_SANDBOX : PEER_HOST;
}

void peer__of_pid(pid_t pid, int pidfd, bool zombie_ok, const struct peer_scope *s,
		  struct peer *out)
{
	int own = -1, err;
	char state;

	out->place = PEER_UNKNOWN;
	out->cgroup[0] = '\0';
	if (pid <= 0) {
		unknown(out, "pid %d is not a process egretd can see", pid);
		return;
	}
	if (pidfd < 0) {
		own = pidfd = pidfd_open_(pid);
		if (pidfd < 0 && errno == ESRCH) {
			unknown(out, "pid %d has exited", pid);
			return;
		}
		if (pidfd < 0 && errno != ENOSYS) {
			unknown(out, "no pidfd for pid %d: %s", pid, strerror(errno));
			return;
		}
		out->pin = pidfd >= 0 ? PEER_PIN_PIDFD : PEER_PIN_NONE;
	}
	state = proc_state(pid);
	if (!state || state == 'X' || (!zombie_ok && state == 'Z')) {
		unknown(out, "pid %d has exited%s", pid, state ? "" : " (no /proc entry)");
		goto out;
	}
	err = cgroup__of_pid(pid, s->cgroup_mount, out->cgroup, sizeof(out->cgroup));
	if (err) {
		unknown(out, "the cgroup of pid %d cannot be read: %s", pid, strerror(-err));
		goto out;
	}
	/* still there after /proc was read: the pid was not reused in between */
	if (pidfd >= 0 && pidfd_alive(pidfd)) {
		unknown(out, "pid %d exited while egretd identified it", pid);
		goto out;
	}
	place_of(out, s);
out:
	if (own >= 0)
		close(own);
}

void peer__of_socket(int fd, const struct peer_scope *s, struct peer *out)
{
	socklen_t len = sizeof(out->cred);
	int pidfd = -1;

	memset(out, 0, sizeof(*out));
	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &out->cred, &len)) {
		unknown(out, "no peer credentials: %s", strerror(errno));
		return;
	}
	len = sizeof(pidfd);
	if (getsockopt(fd, SOL_SOCKET, SO_PEERPIDFD, &pidfd, &len) == 0) {
		out->pin = PEER_PIN_PEERPIDFD;
	} else if (errno != ENOPROTOOPT) {
		/* a kernel with SO_PEERPIDFD says the peer is gone (EINVAL before 6.9, ESRCH) */
		unknown(out, "pid %d has exited: %s", out->cred.pid, strerror(errno));
		return;
	}
	peer__of_pid(out->cred.pid, pidfd, false, s, out);
	if (pidfd >= 0)
		close(pidfd);
}

void peer__of_signal(pid_t pid, uid_t uid, const char *recorded_cgroup, const struct peer_scope *s,
		     struct peer *out)
{
	memset(out, 0, sizeof(*out));
	out->cred.pid = pid;
	out->cred.uid = uid;
	if (recorded_cgroup) {
		/* the kernel's record of the sender at send time beats anything /proc says now */
		out->pin = PEER_PIN_KERNEL;
		snprintf(out->cgroup, sizeof(out->cgroup), "%s", recorded_cgroup);
		place_of(out, s);
		return;
	}
	peer__of_pid(pid, -1, true, s, out);
}

const char *peer__sandbox(const struct peer *p, const struct peer_scope *s, char *out, size_t size)
{
	size_t n = strlen(s->cgroup_root);
	const char *rest = p->cgroup + n, *end;

	out[0] = '\0';
	if (p->place != PEER_SANDBOX || strncmp(p->cgroup, s->cgroup_root, n))
		return out;
	while (*rest == '/')
		rest++;
	end = strchr(rest, '/');
	snprintf(out, size, "%.*s", end ? (int)(end - rest) : (int)strlen(rest), rest);
	return out;
}
