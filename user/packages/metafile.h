/* Reading the files a sandbox's install wrote: only regular files are opened, and only so much
 * of them is read or hashed, so that a FIFO, a device or a huge file cannot stall egretd. Also
 * the RFC 822-style headers and stanzas of METADATA and dpkg's and apt's files, and the hash
 * fields of a package found.
 *
 * Every path is resolved inside a root (pkgmeta.h: a directory fd, PKG_ROOT_HOST or
 * PKG_ROOT_NONE) with openat2(2) RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS: "..", absolute paths
 * and absolute symlinks stay inside the root (a container's METADATA -> /etc/shadow is the
 * container's /etc/shadow), and /proc/PID/fd/N-style links are refused. A file is opened O_PATH
 * first and reopened for reading only when it is a regular file: a FIFO or a device node is
 * never opened (a device's open may act: a watchdog starts).
 */
#ifndef EGRET_METAFILE_H
#define EGRET_METAFILE_H

#include <dirent.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "pkgmeta.h"

#define META_MAX     (4u << 20)	    /* metadata files larger than this are not read */
#define HASH_MAX     (512ull << 20) /* .debs larger than this are not hashed by egret */
#define STANZA_START "Package: "    /* a stanza of dpkg's status and apt's lists */

/* path resolved in root and opened with flags (O_PATH, O_DIRECTORY, ...): an fd or -errno */
int metafile__open_in(int root, const char *path, int flags);
/* the file descriptor of path (in root) opened for reading when it is a regular file (its size
 * in *size, unless NULL), or -errno (-EINVAL: not a regular file)
 */
int metafile__open(int root, const char *path, uint64_t *size);
/* Does path name anything in root (a dangling symlink does not)? */
bool metafile__exists(int root, const char *path);
/* the directory at path in root, NULL (errno set) when it is not one */
DIR *metafile__opendir(int root, const char *path);
/* read_file() for files a sandbox may have put there: the bytes read, or -errno */
int metafile__read_small(int root, const char *path, char *buf, size_t size);
/* All of fd (up to max bytes) into a malloc'd, NUL-terminated buffer; NULL when deadline
 * (CLOCK_MONOTONIC ns, 0: none) passes before the end, or on no memory.
 */
char *metafile__read_fd(int fd, size_t max, uint64_t deadline, size_t *len);
/* a regular file of at most max bytes (the first max of a larger one), as read_fd */
char *metafile__slurp_max(int root, const char *path, size_t max, size_t *len);
/* a metadata file: slurp_max(root, path, META_MAX) */
char *metafile__slurp(int root, const char *path, size_t *len);

/* "Key: value" of an RFC 822-style header block (METADATA, a stanza), the first */
bool metafile__header(const char *text, const char *key, char *out, size_t size);
/* the stanza after the one at s (stanzas end at a blank line), NULL after the last */
const char *metafile__next_stanza(const char *s);
/* The stanza at s, when it is pkg's (at version, unless NULL) and has field: its value. */
bool metafile__stanza_at(const char *s, const char *pkg, const char *version, const char *field,
			 char *out, size_t size);

/* f's hash: prefix and val */
void metafile__set_hash(struct pkg_found *f, const char *prefix, const char *val);
/* f's hash when nothing else says one: egret's sha256 of the file at path (in root), "what"
 * it is
 */
void metafile__own_hash(struct pkg_found *f, int root, const char *path, const char *what);

/* the last component of a path */
static inline const char *pkg_base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static inline bool pkg_ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
}

/* s past prefix, or NULL when s does not start with it */
static inline const char *pkg_after(const char *s, const char *prefix)
{
	size_t n = strlen(prefix);

	return strncmp(s, prefix, n) ? NULL : s + n;
}

#endif /* EGRET_METAFILE_H */
