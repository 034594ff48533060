/* The sd_notify side of systemd's fd store: a file descriptor sent with FDSTORE=1 arrives as
 * SCM_RIGHTS on $NOTIFY_SOCKET, and $LISTEN_FDS/$LISTEN_FDNAMES are read only for this pid.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "notify.h"

Test(notify, an_fd_goes_with_its_message)
{
	char dir[] = "/tmp/egret-notify-XXXXXX", path[64], msg[128];
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} ctl;
	struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) - 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct stat a, b;
	struct cmsghdr *c;
	int s, fd, got;
	ssize_t n;

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/n.sock", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	s = socket(AF_UNIX, SOCK_DGRAM, 0);
	cr_assert_eq(bind(s, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setenv("NOTIFY_SOCKET", path, 1);
	fd = open("/dev/null", O_RDONLY);
	cr_assert_eq(notify__send_fd("FDSTORE=1\nFDNAME=link-x", fd), 0);
	n = recvmsg(s, &mh, 0);
	cr_assert_gt(n, 0);
	msg[n] = '\0';
	cr_expect_str_eq(msg, "FDSTORE=1\nFDNAME=link-x");
	c = CMSG_FIRSTHDR(&mh);
	cr_assert(c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS);
	memcpy(&got, CMSG_DATA(c), sizeof(int));
	cr_assert_eq(fstat(fd, &a), 0);
	cr_assert_eq(fstat(got, &b), 0);
	cr_expect(a.st_ino == b.st_ino && a.st_dev == b.st_dev, "another file came");
	/* and without a socket, nothing to do */
	unsetenv("NOTIFY_SOCKET");
	cr_expect_eq(notify__send_fd("FDSTORE=1", fd), 0);
	close(got);
	close(fd);
	close(s);
	unlink(path);
	rmdir(dir);
}

Test(notify, listen_fds_are_ours_only)
{
	const char *names[4];
	char pid[16];

	setenv("LISTEN_FDS", "2", 1);
	setenv("LISTEN_FDNAMES", "link-egret_connect4:map-counters", 1);
	setenv("LISTEN_PID", "1", 1);
	cr_expect_eq(notify__listen_fds(names, 4), 0, "another process's fds taken");
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	setenv("LISTEN_PID", pid, 1);
	cr_assert_eq(notify__listen_fds(names, 4), 2);
	cr_expect_str_eq(names[0], "link-egret_connect4");
	cr_expect_str_eq(names[1], "map-counters");
	cr_expect_eq(notify__listen_fd(1), 4);
	cr_expect_eq(notify__listen_fds(names, 1), 1, "more names than room");
}
