/* Helpers of the package-metadata fuzz targets (pkgjson.c, pkgfiles.c, pkgargv.c): an input is
 * sections separated by the line "%%", each copied into a buffer of its exact size (so ASan
 * sees a read one byte past it) plus a NUL byte after that for the APIs taking C strings; files
 * the APIs read are written under a temp dir of the process's own, removed at exit.
 */
#ifndef EGRET_FUZZ_PKGFUZZ_H
#define EGRET_FUZZ_PKGFUZZ_H

#include <fcntl.h>
#include <ftw.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util.h"

#define FUZZ_SEP     "\n%%\n"
#define FUZZ_MAXSECT 8

struct sections {
	char *s[FUZZ_MAXSECT];	   /* NUL-terminated copies; never NULL (empty when absent) */
	char *exact[FUZZ_MAXSECT]; /* the same bytes in a buffer of exactly len[i] bytes */
	size_t len[FUZZ_MAXSECT];
};

static char *copy_exact(const uint8_t *p, size_t n, int nul)
{
	size_t want = n + (size_t)nul;
	char *c = malloc(want ? want : 1);

	if (!c)
		abort();
	memcpy(c, p, n);
	if (nul)
		c[n] = '\0';
	return c;
}

static void sections__split(struct sections *x, const uint8_t *data, size_t size)
{
	const size_t sl = sizeof(FUZZ_SEP) - 1;
	size_t off = 0;

	for (int i = 0; i < FUZZ_MAXSECT; i++) {
		const uint8_t *end =
			off < size ? memmem(data + off, size - off, FUZZ_SEP, sl) : NULL;
		size_t n = end ? (size_t)(end - (data + off)) : off < size ? size - off : 0;

		if (i == FUZZ_MAXSECT - 1 && off < size)
			n = size - off;
		x->s[i] = copy_exact(data + off, n, 1);
		x->exact[i] = copy_exact(data + off, n, 0);
		x->len[i] = n;
		off = end ? (size_t)(end - data) + sl : size;
	}
}

static void sections__free(struct sections *x)
{
	for (int i = 0; i < FUZZ_MAXSECT; i++) {
		free(x->s[i]);
		free(x->exact[i]);
	}
}

static char fuzz_dir[64];

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void fuzz_dir_remove(void)
{
	if (fuzz_dir[0])
		nftw(fuzz_dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* The process's temp dir, made at the first call: in /dev/shm when there is one (on ext4 a
 * file rewritten with O_TRUNC is flushed at close, which makes a run wait on the disk).
 */
static const char *fuzz_tmpdir(void)
{
	if (!fuzz_dir[0]) {
		snprintf(fuzz_dir, sizeof(fuzz_dir), "%s/egret-fuzz-pkg-XXXXXX",
			 access("/dev/shm", W_OK) ? "/tmp" : "/dev/shm");
		if (!mkdtemp(fuzz_dir))
			abort();
		atexit(fuzz_dir_remove);
	}
	return fuzz_dir;
}

/* dir/rel with n bytes of data (its directories made), or removed when data is NULL */
static void fuzz_put(const char *dir, const char *rel, const char *data, size_t n)
{
	char path[4096], *slash;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	if (!data) {
		unlink(path);
		return;
	}
	slash = strrchr(path, '/');
	*slash = '\0';
	mkdir_p(path, 0755);
	*slash = '/';
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		abort();
	if (n && write(fd, data, n) != (ssize_t)n)
		abort();
	close(fd);
}

/* a string field of a result must end inside its array */
#define FUZZ_TERMINATED(arr)                                    \
	do {                                                    \
		if (strnlen((arr), sizeof(arr)) == sizeof(arr)) \
			abort();                                \
	} while (0)

#endif /* EGRET_FUZZ_PKGFUZZ_H */
