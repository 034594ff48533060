/* What package managers are and what they leave behind: recognising a manager from its argv,
 * the registry it will use (arguments, environment, config files), and reading the metadata
 * files an install writes (dpkg status and lists, apt's Packages lists, Python dist-info,
 * npm's package.json and lockfile, gem specifications, Go's module cache). Pure functions over
 * strings and files, so the unit tests can feed them fixtures. Each manager is an entry of the
 * table in managers.h, in a file of its own (pip.c, npm.c, apt.c, dpkg.c, gem.c, cargo.c, go.c).
 *
 * Every file is read inside a root: the paths a sandbox names are paths as ITS processes see
 * the file system, so they are resolved in its root directory (openat2(2) RESOLVE_IN_ROOT, see
 * metafile.h), never at the same path in egretd's own mount namespace.
 */
#ifndef EGRET_PKGMETA_H
#define EGRET_PKGMETA_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

#include "pkgjson.h"

#define PKG_NAME_MAX 128
#define PKG_VER_MAX  64
#define PKG_URL_MAX  512
#define PKG_HASH_MAX 160

/* Where files are read: a root is a directory fd (an O_PATH one will do: a process's
 * /proc/PID/root, a container's root directory) every path is resolved in, or one of these.
 */
#define PKG_ROOT_HOST (-1) /* egretd's own / */
#define PKG_ROOT_NONE (-2) /* nothing: every read fails (-ENOENT), no file is opened */

/* the package manager a command line runs, or NULL */
const char *pkgmeta__manager(char *const *argv, size_t argc, bool *installs);
/* fn(ctx, name) for every file name an exec that starts a manager run may have (the executed
 * file's, a #! script's interpreter's): env, the interpreters (python3.11 too) and the
 * managers' programs (pip3.11 too); stops at and returns fn's first non-zero
 */
int pkgmeta__exec_names(int (*fn)(void *ctx, const char *name), void *ctx);

/* The registry a manager run will use: from its arguments, then its environment
 * ("K=V\0K=V\0...", may be NULL), then config files (read in root: the run's), then the
 * manager's default. *from says which ("--index-url", "PIP_INDEX_URL", "/etc/pip.conf",
 * "default", ...).
 */
void pkgmeta__registry_in(int root, const char *manager, char *const *argv, size_t argc,
			  const char *env, size_t envlen, const char *cwd, char *out, size_t size,
			  char *from, size_t fromsz);
/* pkgmeta__registry_in(PKG_ROOT_HOST, ...): config files at egretd's own paths (tests, tools) */
void pkgmeta__registry(const char *manager, char *const *argv, size_t argc, const char *env,
		       size_t envlen, const char *cwd, char *out, size_t size, char *from,
		       size_t fromsz);

/* What an installed package's metadata file says. */
enum pkg_layout {
	PKG_NONE,
	PKG_DPKG,
	PKG_PIP,
	PKG_NPM,
	PKG_GEM,
	PKG_GO
};

struct pkg_found {
	enum pkg_layout layout;
	char name[PKG_NAME_MAX];
	char version[PKG_VER_MAX];
	char source[PKG_URL_MAX];
	char hash[PKG_HASH_MAX];
	char hash_source[288]; /* "apt lists (<list file name>)" and shorter */
	char key[4096];	       /* the metadata path it was recognised by (deduplication) */
	char root[4096]; /* dpkg: the root dpkg installed into; pip/npm: the package directory */
};

/* Is path a file that marks an installed package? Fills layout, key, root and what the path
 * itself tells (name, version).
 */
bool pkgmeta__match(const char *path, struct pkg_found *f);
/* Read the rest from the files, in root (every path of f and debs is one as the sandbox sees
 * it): version, source, hash. debs: .deb files the installer named (dpkg -i), sha256-hashed
 * when one is this package. registry: the run's registry, "" when none. 0, or -ENOENT when the
 * package is not (or no longer) there, or root is PKG_ROOT_NONE.
 */
int pkgmeta__read_in(int root, struct pkg_found *f, char *const *debs, size_t ndebs,
		     const char *registry);
/* pkgmeta__read_in(PKG_ROOT_HOST, ...): the files at egretd's own paths (tests, tools) */
int pkgmeta__read(struct pkg_found *f, char *const *debs, size_t ndebs, const char *registry);

/* apt lists read by pkgmeta__read are kept indexed while in use: drop those unused for a
 * minute (now: CLOCK_MONOTONIC ns), or all of them (now 0).
 */
void pkgmeta__expire(uint64_t now);

/* the manager a layout's PackageInstall names ("dpkg", "pip", ...; "" for PKG_NONE) */
const char *pkgmeta__layout_name(enum pkg_layout layout);

/* helpers, exported for the tests (and the JSON reader, pkgjson.h) */
bool pkgmeta__stanza(const char *text, const char *pkg, const char *version, const char *field,
		     char *out, size_t size);
/* sha256 of a regular file (path in root) of at most max bytes (-EFBIG when larger, -EINVAL
 * when not a regular file: a FIFO would block) */
int pkgmeta__sha256_file(int root, const char *path, uint64_t max, char *hex);

#endif /* EGRET_PKGMETA_H */
