/* Exclusive whole-life locks on files and directories; see lockfile.h. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lockfile.h"
#include "util.h"

/* The pid /proc/locks gives for a flock on fd's inode; 0 when none is visible (a holder in
 * another pid namespace is left out).
 */
static pid_t locks_holder(int fd)
{
	char line[256], kind[16];
	unsigned int maj, min;
	unsigned long long ino;
	struct stat st;
	pid_t pid = 0;
	int p;
	FILE *f;

	if (fstat(fd, &st) || !(f = fopen("/proc/locks", "re")))
		return 0;
	while (!pid && fgets(line, sizeof(line), f)) {
		/* "1: FLOCK  ADVISORY  WRITE 1234 00:28:4126566 0 EOF"; waiters have "->" */
		if (strstr(line, "->") || sscanf(line, "%*d: %15s %*s %*s %d %x:%x:%llu", kind, &p,
						 &maj, &min, &ino) != 5)
			continue;
		if (!strcmp(kind, "FLOCK") && maj == major(st.st_dev) && min == minor(st.st_dev) &&
		    ino == (unsigned long long)st.st_ino)
			pid = p;
	}
	fclose(f);
	return pid;
}

/* The pid a lock file's holder wrote into it. */
static pid_t file_holder(int fd)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	long pid;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, NULL, 10);
	return pid > 0 && pid < (1l << 22) ? (pid_t)pid : 0;
}

static void find_holder(int fd, bool file, struct lock_holder *h)
{
	char path[64];

	memset(h, 0, sizeof(*h));
	h->pid = locks_holder(fd);
	if (h->pid) {
		snprintf(path, sizeof(path), "/proc/%d/comm", (int)h->pid);
		if (read_file(path, h->comm, sizeof(h->comm)) > 0)
			h->comm[strcspn(h->comm, "\n")] = '\0';
		else
			h->comm[0] = '\0';
	} else if (file) {
		h->pid = file_holder(fd);
	}
}

/* Lock fd, or close it: fd, or -errno (-EWOULDBLOCK with *h filled in). */
static int lock_fd(int fd, bool file, struct lock_holder *h)
{
	int err;

	if (flock(fd, LOCK_EX | LOCK_NB) == 0)
		return fd;
	err = -errno;
	if (err == -EWOULDBLOCK && h)
		find_holder(fd, file, h);
	close(fd);
	return err;
}

static int write_pid(int fd)
{
	char buf[32];
	int len = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());

	if (ftruncate(fd, 0) || pwrite(fd, buf, (size_t)len, 0) != len)
		return -errno;
	return 0;
}

int lockfile__take(const char *path, struct lock_holder *holder)
{
	int fd = open_regular(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600,
			      NULL),
	    err;

	if (fd < 0)
		return fd;
	fd = lock_fd(fd, true, holder);
	if (fd < 0)
		return fd;
	err = write_pid(fd);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

int lockfile__take_dir(const char *dir, struct lock_holder *holder)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : lock_fd(fd, false, holder);
}

const char *lockfile__describe(const struct lock_holder *h, char *buf, size_t size)
{
	if (h->pid && h->comm[0])
		snprintf(buf, size, "%s (pid %d)", h->comm, (int)h->pid);
	else if (h->pid)
		snprintf(buf, size, "pid %d", (int)h->pid);
	else
		snprintf(buf, size, "another process");
	return buf;
}
