/* File-system and string helpers. */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

int mkdir_p(const char *path, mode_t mode)
{
	char buf[4096];
	size_t len = strlen(path);

	if (len == 0 || len >= sizeof(buf))
		return -ENAMETOOLONG;
	memcpy(buf, path, len + 1);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, mode) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, mode) && errno != EEXIST)
		return -errno;
	return 0;
}

int write_file(const char *path, const char *data)
{
	size_t len = strlen(data);
	ssize_t n;
	int fd, err = 0;

	fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = write(fd, data, len);
	if (n < 0)
		err = -errno;
	else if ((size_t)n != len)
		err = -EIO;
	close(fd);
	return err;
}

int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read at most size-1 bytes and NUL-terminate; returns the length read. */
int read_file(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		n = -errno;
		close(fd);
		return n;
	}
	close(fd);
	buf[n] = '\0';
	return n;
}

int open_regular(const char *path, int flags, mode_t mode, uint64_t *size)
{
	int fd = open(path, flags, mode);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (size)
		*size = (uint64_t)st.st_size;
	return fd;
}

int join_path(char *out, size_t size, const char *dir, const char *name)
{
	int n = snprintf(out, size, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Copy src into dst[size], cut if needed, always terminated; the length copied. */
size_t str_copy(char *dst, size_t size, const char *src)
{
	size_t n = strlen(src);

	if (!size)
		return 0;
	if (n >= size)
		n = size - 1;
	memcpy(dst, src, n);
	dst[n] = '\0';
	return n;
}

bool str_starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Parse a decimal unsigned integer no larger than max; the whole string must be the number. */
int parse_u64(const char *s, uint64_t max, uint64_t *out)
{
	unsigned long long v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > max)
		return -ERANGE;
	*out = v;
	return 0;
}

int parse_size(const char *s, uint64_t *out)
{
	static const char units[] = "KMGT";
	char num[32];
	const char *u;
	size_t n;
	int shift = 0;

	if (!s || !*s || (n = strlen(s)) >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	/* strchr() finds the terminator too: a space (0x20 & ~0x20 is 0) is no unit */
	u = strchr(units, num[n - 1] & ~0x20);
	if (u && *u) {
		shift = 10 * (int)(u - units + 1);
		num[n - 1] = '\0';
	}
	if (parse_u64(num, UINT64_MAX >> shift, out))
		return -EINVAL;
	*out <<= shift;
	return 0;
}

/* nbytes random bytes as 2*nbytes hex digits; out must hold 2*nbytes+1. */
void random_hex(char *out, size_t nbytes)
{
	unsigned char raw[64];

	if (nbytes > sizeof(raw))
		nbytes = sizeof(raw);
	if (getrandom(raw, nbytes, 0) != (ssize_t)nbytes) {
		/* getrandom cannot fail for <= 256 bytes once the pool is up; be safe anyway */
		for (size_t i = 0; i < nbytes; i++)
			raw[i] = (unsigned char)(rand() ^ (now_ns(CLOCK_MONOTONIC) >> (i % 8)));
	}
	for (size_t i = 0; i < nbytes; i++)
		sprintf(out + 2 * i, "%02x", raw[i]);
	out[2 * nbytes] = '\0';
}

uint64_t now_ns(int clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The state letter of a stat file (/proc/PID/stat, /proc/PID/task/TID/stat), 0 unread */
static char stat_state(const char *path)
{
	char buf[512], *paren;
	int n = read_file(path, buf, sizeof(buf));

	if (n <= 0)
		return 0;
	paren = strrchr(buf, ')'); /* comm may hold anything, even ") " */
	return paren && paren[1] == ' ' ? paren[2] : 0;
}

char proc_state(pid_t pid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	return stat_state(path);
}

/* Whether a status file (/proc/PID/task/TID/status) shows a stop signal pending, for the thread
 * (SigPnd) or its process (ShdPnd); -errno when it cannot be read.
 */
static int stop_pending(const char *path)
{
	static const int stops[] = { SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU };
	unsigned long long mask = 0, pnd;
	char buf[4096], *l, *save;
	int n = read_file(path, buf, sizeof(buf));

	if (n <= 0)
		return n < 0 ? n : -ENOENT;
	for (size_t i = 0; i < sizeof(stops) / sizeof(stops[0]); i++)
		mask |= 1ull << (stops[i] - 1);
	for (l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if ((sscanf(l, "SigPnd: %llx", &pnd) == 1 ||
		     sscanf(l, "ShdPnd: %llx", &pnd) == 1) &&
		    (pnd & mask))
			return 1;
	return 0;
}

/* The pending sets first, the threads' states after: a stop taken from the pending set in
 * between leaves the thread that took it stopped (the kernel does both under the process's
 * signal lock), so no stop queued before the call is missed.
 */
int proc_stopping(pid_t pid)
{
	char path[96];
	struct dirent *d;
	int ret = 0, seen = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -errno;
	for (int pass = 0; pass < 2 && !ret; pass++) {
		rewinddir(dir);
		while (!ret && (d = readdir(dir))) {
			if (d->d_name[0] < '1' || d->d_name[0] > '9')
				continue;
			snprintf(path, sizeof(path), "/proc/%d/task/%.16s/%s", (int)pid, d->d_name,
				 pass ? "stat" : "status");
			if (pass == 0) {
				int r = stop_pending(path);

				seen += r >= 0;
				ret = r > 0;
			} else {
				char st = stat_state(path);

				ret = st == 'T' || st == 't';
			}
		}
	}
	closedir(dir);
	return ret ? 1 : seen ? 0 : -ESRCH;
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when it is not one (RFC 3629 table 4:
 * the second byte's range rules out overlong forms, surrogates and code points above U+10FFFF).
 */
size_t utf8_seq(const unsigned char *p, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t len;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0; /* below: overlong */
	else if (p[0] == 0xed)
		hi = 0x9f; /* above: UTF-16 surrogates */
	else if (p[0] == 0xf0)
		lo = 0x90; /* below: overlong */
	else if (p[0] == 0xf4)
		hi = 0x8f; /* above: beyond U+10FFFF */
	if (len > n || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t i = 2; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	}
	return len;
}

bool utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	for (size_t i = 0; i < len;) {
		size_t n = p[i] < 0x80 ? 1 : utf8_seq(p + i, len - i);

		if (!n)
			return false;
		i += n;
	}
	return true;
}
