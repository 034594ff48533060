/* The whole-life locks egretd takes on its state dir, spool and control socket: one holder at a
 * time, the loser told the holder's pid and name, the lock gone with the holder however it
 * exits, and lock paths that are not plain files refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "lockfile.h"
#include "util.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/egret-unit-lock-XXXXXX");
	cr_assert(mkdtemp(dir));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		cr_log_warn("could not remove %s", dir);
}

TestSuite(lockfile, .init = setup, .fini = teardown);

static void self_comm(char *out, size_t size)
{
	cr_assert_gt(read_file("/proc/self/comm", out, size), 0);
	out[strcspn(out, "\n")] = '\0';
}

/* A child that takes path's lock, reports on the pipe, and holds it until killed. */
static pid_t hold_in_child(const char *path, bool is_dir)
{
	int p[2];
	pid_t pid;
	char c;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int fd = is_dir ? lockfile__take_dir(path, NULL) : lockfile__take(path, NULL);

		if (write(p[1], fd >= 0 ? "y" : "n", 1) != 1)
			_exit(1);
		pause();
		_exit(0);
	}
	close(p[1]);
	cr_assert_eq(read(p[0], &c, 1), 1);
	close(p[0]);
	cr_assert_eq(c, 'y', "the child could not take the lock");
	return pid;
}

static void kill_child(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

Test(lockfile, a_file_lock_has_one_holder_and_names_it)
{
	char path[128], buf[64], comm[16], who[64], expect[64];
	struct lock_holder h;
	int fd, again;

	snprintf(path, sizeof(path), "%s/lock", dir);
	fd = lockfile__take(path, &h);
	cr_assert_geq(fd, 0, "%s", strerror(-fd));
	snprintf(expect, sizeof(expect), "%d\n", (int)getpid());
	cr_assert_gt(read_file(path, buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, expect, "the holder's pid is not in the file");
	/* a lock belongs to an open file: a second open, even in the same process, is refused */
	again = lockfile__take(path, &h);
	cr_expect_eq(again, -EWOULDBLOCK);
	cr_expect_eq(h.pid, getpid());
	self_comm(comm, sizeof(comm));
	cr_expect_str_eq(h.comm, comm);
	snprintf(expect, sizeof(expect), "%s (pid %d)", comm, (int)getpid());
	cr_expect_str_eq(lockfile__describe(&h, who, sizeof(who)), expect);
	close(fd);
	fd = lockfile__take(path, &h);
	cr_expect_geq(fd, 0, "not free after the holder closed it: %s", strerror(-fd));
	close(fd);
}

Test(lockfile, a_killed_holder_frees_the_lock)
{
	char path[128], buf[64];
	struct lock_holder h;
	pid_t child;
	int fd;

	snprintf(path, sizeof(path), "%s/lock", dir);
	child = hold_in_child(path, false);
	fd = lockfile__take(path, &h);
	cr_expect_eq(fd, -EWOULDBLOCK);
	cr_expect_eq(h.pid, child, "holder %d, expected the child %d", (int)h.pid, (int)child);
	kill_child(child);
	/* the file is still there with the holder's pid (the refused attempt wrote nothing), and
	 * means nothing once the holder is dead
	 */
	cr_assert_gt(read_file(path, buf, sizeof(buf)), 0);
	cr_expect_eq(atoi(buf), child);
	fd = lockfile__take(path, &h);
	cr_expect_geq(fd, 0, "not free after the holder died: %s", strerror(-fd));
	close(fd);
}

Test(lockfile, a_directory_lock_names_its_holder)
{
	char sub[128];
	struct lock_holder h;
	pid_t child;
	int fd;

	snprintf(sub, sizeof(sub), "%s/state", dir);
	cr_assert_eq(mkdir(sub, 0700), 0);
	child = hold_in_child(sub, true);
	fd = lockfile__take_dir(sub, &h);
	cr_expect_eq(fd, -EWOULDBLOCK);
	cr_expect_eq(h.pid, child);
	kill_child(child);
	fd = lockfile__take_dir(sub, &h);
	cr_expect_geq(fd, 0, "%s", strerror(-fd));
	close(fd);
	cr_expect_eq(lockfile__take_dir("/nonexistent/egret-state", &h), -ENOENT);
}

Test(lockfile, only_plain_files_are_lock_files)
{
	char fifo[128], link[128], sub[128];
	struct lock_holder h;

	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	snprintf(link, sizeof(link), "%s/link", dir);
	snprintf(sub, sizeof(sub), "%s/sub", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	cr_assert_eq(symlink("/etc/passwd", link), 0);
	cr_assert_eq(mkdir(sub, 0700), 0);
	cr_expect_eq(lockfile__take(fifo, &h), -EINVAL, "a FIFO taken as a lock file");
	cr_expect_eq(lockfile__take(link, &h), -ELOOP, "a symlink followed");
	cr_expect_lt(lockfile__take(sub, &h), 0, "a directory opened as a lock file");
}

Test(lockfile, an_unknown_holder_is_described_as_such)
{
	struct lock_holder h = { .pid = 0 };
	char who[64];

	cr_expect_str_eq(lockfile__describe(&h, who, sizeof(who)), "another process");
	h.pid = 42;
	cr_expect_str_eq(lockfile__describe(&h, who, sizeof(who)), "pid 42");
}
