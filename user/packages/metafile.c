/* Reading package metadata files safely, headers and stanzas, hashes; see metafile.h. */
#include <linux/openat2.h>

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "array.h"
#include "metafile.h"
#include "sha256.h"
#include "util.h"

#define READ_CHUNK    65536 /* read_fd's first buffer */
#define STANZA_END    "\n\n"
#define RESOLVE_TRIES 4 /* openat2's -EAGAIN: a rename raced a ".." inside the root */

int metafile__open_in(int root, const char *path, int flags)
{
	struct open_how how = { .flags = (uint64_t)(flags | O_CLOEXEC),
				.resolve = RESOLVE_NO_MAGICLINKS };
	int dirfd = AT_FDCWD;
	long fd = -1;

	if (root < 0 && root != PKG_ROOT_HOST)
		return -ENOENT; /* PKG_ROOT_NONE: nothing is read */
	if (root >= 0) {
		dirfd = root;
		how.resolve |= RESOLVE_IN_ROOT;
	}
	for (int i = 0; i < RESOLVE_TRIES; i++) {
		fd = syscall(SYS_openat2, dirfd, path, &how, sizeof(how));
		if (fd >= 0 || errno != EAGAIN)
			break;
	}
	if (fd < 0 && errno == ENOSYS && root == PKG_ROOT_HOST) /* before Linux 5.6 */
		fd = open(path, flags | O_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

/* O_PATH first: a FIFO or a device is looked at, never opened; a regular file is reopened
 * through egretd's own /proc/self/fd (the same inode, whatever the path has become since).
 */
int metafile__open(int root, const char *path, uint64_t *size)
{
	int pfd = metafile__open_in(root, path, O_PATH), fd;
	char self[32];
	struct stat st;

	if (pfd < 0)
		return pfd;
	if (fstat(pfd, &st) || !S_ISREG(st.st_mode)) {
		close(pfd);
		return -EINVAL;
	}
	snprintf(self, sizeof(self), "/proc/self/fd/%d", pfd);
	fd = open(self, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (fd < 0)
		fd = -errno;
	close(pfd);
	if (fd >= 0 && size)
		*size = (uint64_t)st.st_size;
	return fd;
}

bool metafile__exists(int root, const char *path)
{
	int fd = metafile__open_in(root, path, O_PATH);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

DIR *metafile__opendir(int root, const char *path)
{
	int fd = metafile__open_in(root, path, O_RDONLY | O_DIRECTORY);
	DIR *d;

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	d = fdopendir(fd);
	if (!d)
		close(fd);
	return d;
}

int metafile__read_small(int root, const char *path, char *buf, size_t size)
{
	int fd = metafile__open(root, path, NULL);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return (int)n;
}

/* can fd be read before deadline (0: no deadline)? */
static bool readable_by(int fd, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t now;

	if (!deadline)
		return true;
	now = now_ns(CLOCK_MONOTONIC);
	return now < deadline && poll(&p, 1, (int)((deadline - now) / 1000000ull) + 1) > 0;
}

/* buf with room for its terminating NUL after n bytes: the one byte more, exactly, when full */
static char *terminated(char *buf, size_t n, size_t cap)
{
	char *nb = n < cap ? buf : realloc(buf, n + 1);

	if (!nb) {
		free(buf);
		return NULL;
	}
	nb[n] = '\0';
	return nb;
}

char *metafile__read_fd(int fd, size_t max, uint64_t deadline, size_t *len)
{
	size_t cap = 0, n = 0;
	char *buf = NULL;
	ssize_t r;

	while (n < max) { /* the first max bytes */
		size_t want = max - n > READ_CHUNK ? n + READ_CHUNK : max;

		if (n == cap && ARRAY_RESERVE(buf, cap, want))
			break;
		if (!readable_by(fd, deadline)) {
			free(buf);
			return NULL;
		}
		r = read(fd, buf + n, (cap < max ? cap : max) - n);
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	buf = buf ? terminated(buf, n, cap) : NULL;
	if (buf)
		*len = n;
	return buf;
}

char *metafile__slurp_max(int root, const char *path, size_t max, size_t *len)
{
	int fd = metafile__open(root, path, NULL);
	char *buf;

	if (fd < 0)
		return NULL;
	buf = metafile__read_fd(fd, max, 0, len);
	close(fd);
	return buf;
}

char *metafile__slurp(int root, const char *path, size_t *len)
{
	return metafile__slurp_max(root, path, META_MAX, len);
}

int pkgmeta__sha256_file(int root, const char *path, uint64_t max, char *hex)
{
	uint8_t buf[65536], digest[32];
	struct sha256 s;
	uint64_t size = 0;
	int fd = metafile__open(root, path, &size);
	ssize_t n;

	if (fd < 0)
		return fd;
	if (size > max) {
		close(fd);
		return -EFBIG;
	}
	sha256__init(&s);
	for (size = 0; (n = read(fd, buf, sizeof(buf))) > 0 && size <= max; size += (uint64_t)n)
		sha256__update(&s, buf, (size_t)n);
	close(fd);
	if (n < 0)
		return -EIO;
	if (size > max)
		return -EFBIG; /* it grew since it was looked at */
	sha256__final(&s, digest);
	sha256__hex(digest, hex);
	return 0;
}

bool metafile__header(const char *text, const char *key, char *out, size_t size)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (*l == '\n')
			return false; /* the body starts */
		if (!strncmp(l, key, kl) && l[kl] == ':') {
			const char *v = l + kl + 1;

			while (*v == ' ')
				v++;
			snprintf(out, size, "%.*s", (int)strcspn(v, "\r\n"), v);
			return true;
		}
	}
	return false;
}

const char *metafile__next_stanza(const char *s)
{
	const char *end = strstr(s, STANZA_END);

	return end ? end + strlen(STANZA_END) : NULL;
}

/* metafile__header stops at the blank line that ends the stanza, so nothing is copied */
bool metafile__stanza_at(const char *s, const char *pkg, const char *version, const char *field,
			 char *out, size_t size)
{
	const char *name = pkg_after(s, STANZA_START);
	size_t pl = strlen(pkg);
	char want[PKG_VER_MAX + 16];

	if (!name || strncmp(name, pkg, pl) || name[pl] != '\n')
		return false;
	if (version &&
	    (!metafile__header(s, "Version", want, sizeof(want)) || strcmp(want, version)))
		return false;
	return metafile__header(s, field, out, size);
}

bool pkgmeta__stanza(const char *text, const char *pkg, const char *version, const char *field,
		     char *out, size_t size)
{
	for (const char *s = text; s && *s; s = metafile__next_stanza(s)) {
		if (metafile__stanza_at(s, pkg, version, field, out, size))
			return true;
	}
	return false;
}

void metafile__set_hash(struct pkg_found *f, const char *prefix, const char *val)
{
	size_t n = str_copy(f->hash, sizeof(f->hash), prefix);

	str_copy(f->hash + n, sizeof(f->hash) - n, val);
}

void metafile__own_hash(struct pkg_found *f, int root, const char *path, const char *what)
{
	char hex[65];

	if (!pkgmeta__sha256_file(root, path, META_MAX, hex)) {
		snprintf(f->hash, sizeof(f->hash), "sha256:%s", hex);
		snprintf(f->hash_source, sizeof(f->hash_source), "egret sha256 of %s", what);
	}
}
