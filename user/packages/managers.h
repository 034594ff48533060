/* The package managers egret knows, one table entry each (pip.c, npm.c, apt.c, dpkg.c, gem.c,
 * cargo.c, go.c): the programs that run it and the verbs that install, the readers of the
 * registry a run uses (arguments, environment, config files, a default), and the files its
 * installs leave (a layout: how a path marks an installed package, how its metadata is read).
 * pkgmeta.c walks the table; what the managers' readers share is declared here too.
 */
#ifndef EGRET_MANAGERS_H
#define EGRET_MANAGERS_H

#include <stdbool.h>
#include <stddef.h>

#include "pkgmeta.h"

/* The command line a manager run started with. */
struct pkg_cmd {
	char *const *argv; /* from the manager's program word (past env, python -m, node...) */
	size_t argc;
	char *const *pre; /* an "env [-i] [-u NAME] [NAME=value]..." prefix's words, or NULL */
	size_t npre;
	const char *env; /* "K=V\0K=V\0...", may be NULL */
	size_t envlen;
	const char *cwd;  /* may be NULL */
	const char *home; /* $HOME, or /root */
	int root;	  /* where its config files are read (pkgmeta.h) */
};

/* Where a registry reader writes: the registry and where it came from. */
struct pkg_registry {
	char *url;
	size_t size;
	char *from;
	size_t fromsz;
};

/* The files a manager's installs leave. */
struct pkg_files {
	enum pkg_layout layout;
	const char *name; /* the manager a PackageInstall names */
	/* Does path mark an installed package? Fills f (zeroed, and written only when the
	 * answer is yes) as pkgmeta__match says; the name may come out empty.
	 */
	bool (*match)(const char *path, struct pkg_found *f);
	/* the rest of f from the files, in root: 0, or -ENOENT when the package is not there */
	int (*read)(int root, struct pkg_found *f, char *const *debs, size_t ndebs,
		    const char *registry);
};

struct pkg_manager {
	const char *name;
	/* how its runs are recognised: the program (the word after env and an interpreter)... */
	const char *const *programs;
	bool versioned;	    /* ...or a program name and a digit after it: pip3, pip3.11 */
	const char *module; /* python -m <module> (a prefix: pip3) */
	/* and whether the run installs: one of these words among its arguments */
	const char *const *installs;
	bool bare_installs; /* the program without arguments installs too (yarn) */
	/* the registry from the command line, environment or config files: true when found */
	bool (*registry)(const struct pkg_manager *m, const struct pkg_cmd *cmd,
			 struct pkg_registry *r);
	const char *default_registry;  /* NULL: none (apt, dpkg) */
	const struct pkg_files *files; /* NULL: egret reads none (cargo) */
};

extern const struct pkg_manager pkg_pip, pkg_npm, pkg_yarn, pkg_pnpm, pkg_apt, pkg_dpkg, pkg_gem,
	pkg_cargo, pkg_go;
extern const struct pkg_files pkg_pip_files, pkg_npm_files, pkg_dpkg_files, pkg_gem_files,
	pkg_go_files;

/* the registry in r (unless val is r->url already) and where it came from; true */
bool pkg_registry__set(struct pkg_registry *r, const char *val, const char *from);
/* The first of n config files (NULL: skipped; read in cmd's root) that sets key ("key =
 * value", "key: value"): its value and its path into r.
 */
bool pkg_registry__config(struct pkg_registry *r, const struct pkg_cmd *cmd,
			  const char *const *paths, size_t n, const char *key);
/* the value of an option: "--opt V", "--opt=V", "-o V" (names: NULL-terminated) */
const char *pkg_cmd__option(const struct pkg_cmd *cmd, const char *const *names);
/* the value of a variable of the run's environment, NULL when unset */
const char *pkg_cmd__env(const struct pkg_cmd *cmd, const char *name);

#endif /* EGRET_MANAGERS_H */
