/* StrictModes for egretd's files (see fileperm.h). The path is looked up one component at a
 * time, as the kernel would, so every directory a lookup passes through is checked: those of
 * the path as given, those a symlink leads to, and the one each symlink lives in.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fileperm.h"

#define MAX_LINKS 40 /* as the kernel's MAXSYMLINKS */

struct walk {
	const char *what, *path;
	const struct fileperm_opts *o;
	char *err;
	size_t errsz;
	char cur[PATH_MAX];  /* the directory reached so far, canonical */
	char rest[PATH_MAX]; /* what is still to be looked up */
	int links;
};

static void name_of(uid_t uid, char *out, size_t size)
{
	struct passwd *pw = uid == 0 ? NULL : getpwuid(uid);

	if (uid == 0)
		snprintf(out, size, "root");
	else if (pw)
		snprintf(out, size, "uid %u (%s)", (unsigned int)uid, pw->pw_name);
	else
		snprintf(out, size, "uid %u", (unsigned int)uid);
}

static const char *trusted_dir; /* fileperm__trust() */

void fileperm__trust(const char *dir)
{
	trusted_dir = dir;
}

/* The directory and everything above it are taken as safe. */
static bool trusted(const struct walk *w, const char *dir)
{
	const char *t = w->o->trusted ? w->o->trusted : trusted_dir;
	size_t n = strlen(dir);

	if (!t)
		return false;
	if (!strcmp(dir, "/"))
		return true;
	return !strncmp(t, dir, n) && (t[n] == '\0' || t[n] == '/');
}

/* Owned by root or by egretd's uid, writable by neither group nor others. */
static int check_one(struct walk *w, const char *obj, const struct stat *st)
{
	bool dir = S_ISDIR(st->st_mode);
	const char *kind = dir ? "directory" : "file";
	unsigned int mode = (unsigned int)st->st_mode & 07777;
	char owner[96], fix[PATH_MAX + 32];

	if (dir && trusted(w, obj))
		return 0;
	name_of(st->st_uid, owner, sizeof(owner));
	if (st->st_uid != 0 && st->st_uid != geteuid()) {
		snprintf(
			w->err, w->errsz,
			"%s %s: refused: %s %s is owned by %s, not root (mode %04o): run 'chown root "
			"%s'",
			w->what, w->path, kind, obj, owner, mode, obj);
		return -EPERM;
	}
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
		return 0;
	if (dir && (st->st_mode & S_ISVTX) && (st->st_mode & S_IWOTH))
		snprintf(fix, sizeof(fix),
			 "it is a shared directory (sticky, like /tmp): keep egret's files in a "
			 "directory only root can write");
	else
		snprintf(fix, sizeof(fix), "run 'chmod go-w %s'", obj);
	snprintf(w->err, w->errsz,
		 "%s %s: refused: %s %s is writable by %s (owner %s, mode %04o): %s", w->what,
		 w->path, kind, obj,
		 (st->st_mode & S_IWGRP) && (st->st_mode & S_IWOTH) ? "group and others"
		 : (st->st_mode & S_IWGRP)			    ? "group"
								    : "others",
		 owner, mode, fix);
	return -EPERM;
}

/* The next component of w->rest into comp; false when there is none. */
static bool next_component(struct walk *w, char *comp, size_t size)
{
	char *p = w->rest, *end;
	size_t n;

	while (*p == '/')
		p++;
	if (!*p)
		return false;
	end = strchr(p, '/');
	n = end ? (size_t)(end - p) : strlen(p);
	if (n >= size)
		n = size - 1;
	memcpy(comp, p, n);
	comp[n] = '\0';
	memmove(w->rest, p + n, strlen(p + n) + 1);
	return true;
}

static bool rest_empty(const struct walk *w)
{
	for (const char *p = w->rest; *p; p++) {
		if (*p != '/')
			return false;
	}
	return true;
}

/* A symlink at cand (its directory, w->cur, is checked): continue with its target. */
static int follow(struct walk *w, const char *cand)
{
	char target[PATH_MAX], next[PATH_MAX];
	ssize_t n;
	int len;

	if (++w->links > MAX_LINKS) {
		snprintf(w->err, w->errsz, "%s %s: too many symlinks", w->what, w->path);
		return -ELOOP;
	}
	n = readlink(cand, target, sizeof(target) - 1);
	if (n < 0) {
		snprintf(w->err, w->errsz, "%s %s: cannot read symlink %s: %s", w->what, w->path,
			 cand, strerror(errno));
		return -errno;
	}
	target[n] = '\0';
	len = snprintf(next, sizeof(next), "%s%s", target, w->rest);
	if (len < 0 || (size_t)len >= sizeof(next))
		return -ENAMETOOLONG;
	memcpy(w->rest, next, (size_t)len + 1);
	if (target[0] == '/')
		snprintf(w->cur, sizeof(w->cur), "/");
	return 0;
}

static void go_up(struct walk *w)
{
	char *slash = strrchr(w->cur, '/');

	if (slash && slash != w->cur)
		*slash = '\0';
	else
		snprintf(w->cur, sizeof(w->cur), "/");
}

/* The last component, lstat'ed into st: the right type, and safe. */
static int check_last(struct walk *w, const char *cand, const struct stat *st)
{
	bool want_dir = w->o->type == FILEPERM_DIR;

	if (want_dir ? !S_ISDIR(st->st_mode) : !S_ISREG(st->st_mode)) {
		snprintf(w->err, w->errsz, "%s %s: %s is not a %s", w->what, w->path, cand,
			 want_dir ? "directory" : "regular file");
		return want_dir ? -ENOTDIR : -EINVAL;
	}
	return check_one(w, cand, st);
}

static int walk_step(struct walk *w, const char *comp, struct stat *st, bool *done)
{
	char cand[PATH_MAX];
	bool last = rest_empty(w);
	int len;

	if (!strcmp(comp, "."))
		return 0;
	if (!strcmp(comp, "..")) {
		go_up(w);
		return 0;
	}
	len = snprintf(cand, sizeof(cand), "%s%s%s", w->cur, strcmp(w->cur, "/") ? "/" : "", comp);
	if (len < 0 || (size_t)len >= sizeof(cand))
		return -ENAMETOOLONG;
	if (lstat(cand, st)) {
		int err = -errno;

		if (err == -ENOENT && last && w->o->may_be_missing) {
			memset(st, 0, sizeof(*st));
			*done = true;
			return 0;
		}
		snprintf(w->err, w->errsz, "%s %s: %s: %s", w->what, w->path, cand,
			 strerror(errno));
		return err;
	}
	if (S_ISLNK(st->st_mode))
		return follow(w, cand);
	if (last) {
		*done = true;
		return check_last(w, cand, st);
	}
	if (!S_ISDIR(st->st_mode)) {
		snprintf(w->err, w->errsz, "%s %s: %s is not a directory", w->what, w->path, cand);
		return -ENOTDIR;
	}
	snprintf(w->cur, sizeof(w->cur), "%s", cand);
	return check_one(w, cand, st);
}

static int walk_start(struct walk *w)
{
	struct stat st;
	char cwd[PATH_MAX];
	int len;

	if (w->path[0] == '/')
		len = snprintf(w->rest, sizeof(w->rest), "%s", w->path);
	else if (getcwd(cwd, sizeof(cwd)))
		len = snprintf(w->rest, sizeof(w->rest), "%s/%s", cwd, w->path);
	else
		return -errno;
	if (len < 0 || (size_t)len >= sizeof(w->rest))
		return -ENAMETOOLONG;
	snprintf(w->cur, sizeof(w->cur), "/");
	if (stat("/", &st))
		return -errno;
	return check_one(w, "/", &st);
}

int fileperm__check(const char *what, const char *path, const struct fileperm_opts *o,
		    struct stat *st, char *err, size_t errsz)
{
	struct walk w = { .what = what, .path = path, .o = o, .err = err, .errsz = errsz };
	char comp[NAME_MAX + 1];
	struct stat tmp, *out = st ? st : &tmp;
	bool done = false;
	int ret;

	err[0] = '\0';
	ret = walk_start(&w);
	while (!ret && !done) {
		if (!next_component(&w, comp, sizeof(comp))) {
			/* the path names a directory ("/", "a/..") */
			if (stat(w.cur, out))
				return -errno;
			return o->type == FILEPERM_DIR ? check_one(&w, w.cur, out) : -EISDIR;
		}
		ret = walk_step(&w, comp, out, &done);
	}
	if (ret && !err[0])
		snprintf(err, errsz, "%s %s: %s", what, path, strerror(-ret));
	return ret;
}

int fileperm__open(const char *what, const char *path, const char *trusted, char *err, size_t errsz)
{
	struct fileperm_opts o = { .type = FILEPERM_FILE, .trusted = trusted };
	struct walk w = { .what = what, .path = path, .o = &o, .err = err, .errsz = errsz };
	struct stat fs, st;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0) {
		ret = -errno;
		snprintf(err, errsz, "%s %s: %s", what, path, strerror(errno));
		return ret;
	}
	ret = fstat(fd, &fs) ? -errno : 0;
	if (!ret && !S_ISREG(fs.st_mode)) {
		snprintf(err, errsz, "%s %s: not a regular file", what, path);
		ret = -EINVAL;
	}
	if (!ret)
		ret = check_one(&w, path, &fs);
	if (!ret)
		ret = fileperm__check(what, path, &o, &st, err, errsz);
	if (!ret && (st.st_dev != fs.st_dev || st.st_ino != fs.st_ino)) {
		snprintf(err, errsz,
			 "%s %s: refused: the path was changed while egretd opened it (it now "
			 "names another file); try again",
			 what, path);
		ret = -EAGAIN;
	}
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

int fileperm__check_instance(const char *policy, const char *live, const char *spool, char *err,
			     size_t errsz)
{
	const struct fileperm_opts file = { .type = FILEPERM_FILE };
	const struct fileperm_opts created = { .type = FILEPERM_FILE, .may_be_missing = true };
	const struct fileperm_opts dir = { .type = FILEPERM_DIR, .may_be_missing = true };
	int ret;

	ret = fileperm__check("policy", policy, &file, NULL, err, errsz);
	if (!ret)
		ret = fileperm__check("live rules", live, &created, NULL, err, errsz);
	if (!ret && spool)
		ret = fileperm__check("spool", spool, &dir, NULL, err, errsz);
	return ret;
}
