/* sd_notify(3) protocol: a datagram of NEWLINE-separated assignments to the unix socket named by
 * $NOTIFY_SOCKET ('@' for the abstract namespace), with a file descriptor for the fd store
 * (FDSTORE=1, passed with SCM_RIGHTS). No socket: nothing to do. The store's fds come back at
 * the next start as $LISTEN_FDS fds from 3 on, named by $LISTEN_FDNAMES (sd_listen_fds(3)).
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "notify.h"

#define LISTEN_FDS_START 3

static int notify_addr(struct sockaddr_un *sa, socklen_t *len)
{
	const char *path = getenv("NOTIFY_SOCKET");
	size_t n;

	if (!path || !*path)
		return 0;
	n = strlen(path);
	if (n >= sizeof(sa->sun_path) || (path[0] != '/' && path[0] != '@'))
		return -EINVAL;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	memcpy(sa->sun_path, path, n);
	if (path[0] == '@')
		sa->sun_path[0] = '\0';
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
	return 1;
}

int notify__send_fd(const char *state, int fd)
{
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct sockaddr_un sa;
	struct iovec iov = { .iov_base = (void *)state, .iov_len = strlen(state) };
	struct msghdr mh = { .msg_name = &sa, .msg_iov = &iov, .msg_iovlen = 1 };
	socklen_t len = 0;
	int s, err = notify_addr(&sa, &len);

	if (err <= 0)
		return err;
	mh.msg_namelen = len;
	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&ctl, 0, sizeof(ctl));
		mh.msg_control = ctl.buf;
		mh.msg_controllen = sizeof(ctl.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return -errno;
	/* a receiver that does not read (a full queue) holds egretd a second at most */
	setsockopt(s, SOL_SOCKET, SO_SNDTIMEO, &(struct timeval){ .tv_sec = 1 },
		   sizeof(struct timeval));
	err = sendmsg(s, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
	close(s);
	return err;
}

int notify__send(const char *state)
{
	return notify__send_fd(state, -1);
}

/* The fds passed to this process ($LISTEN_PID is us): how many, their names in names[] (up to
 * max, pointing into a copy of $LISTEN_FDNAMES that stays valid). 0 when none.
 */
int notify__listen_fds(const char **names, int max)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	static char *copy;
	int n, i = 0;

	if (!pid || !fds || atoi(pid) != getpid())
		return 0;
	n = atoi(fds);
	if (n <= 0)
		return 0;
	free(copy);
	copy = getenv("LISTEN_FDNAMES") ? strdup(getenv("LISTEN_FDNAMES")) : NULL;
	for (char *save = NULL, *tok = copy ? strtok_r(copy, ":", &save) : NULL; tok && i < max;
	     tok = strtok_r(NULL, ":", &save))
		names[i++] = tok;
	while (i < max && i < n)
		names[i++] = "";
	return n < max ? n : max;
}

int notify__listen_fd(int i)
{
	return LISTEN_FDS_START + i;
}
