/* Where an egret instance lives: its sandbox root cgroup, its bpffs state dir and its control
 * socket. egretd and egretctl resolve them the same way from the same options, so egretctl can
 * drive a non-default instance (the tests run one per test).
 */
#ifndef EGRET_PATHS_H
#define EGRET_PATHS_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#define EGRET_DEFAULT_CGROUP_NAME "egret"
#define EGRET_DEFAULT_STATE_DIR	  "/sys/fs/bpf/egret"
#define EGRET_DEFAULT_CONTROL	  "/run/egret/control.sock"
#define EGRET_DEFAULT_SINK	  "file:/var/log/egret/events.pb"
#define EGRET_DEFAULT_SPOOL	  "/var/lib/egret/spool"
#define EGRET_BPFFS		  "/sys/fs/bpf"
#define EGRET_TRACEFS		  "/sys/kernel/tracing"

#define PATHS_WATCH_MAX		  8 /* EGRET_WATCH_MAX: egret's root and 7 --watch */

/* A cgroup egret's programs know by level and id: the one they attach to, a watched subtree. */
struct paths_cgroup {
	char path[PATH_MAX];
	uint64_t id;
	unsigned int level; /* below the v2 mount, which is level 0 */
};

struct egret_paths {
	char cgroup_mount[PATH_MAX]; /* the cgroup v2 mount point */
	char cgroup_root[PATH_MAX];  /* egret's root: sandboxes are its direct children */
	char state_dir[PATH_MAX];    /* bpffs directory holding links/ and maps/ */
	char control[PATH_MAX];	     /* control socket path */
	uint64_t root_id;	     /* cgroup id of cgroup_root (0 until it exists) */
	unsigned int root_level;     /* depth of cgroup_root below the mount */
	/* egretd only (paths__layout): where the programs attach (the v2 root by default), and
	 * the watched subtrees, where a cgroup in no registered sandbox has no network; watch[0]
	 * is cgroup_root
	 */
	struct paths_cgroup attach;
	struct paths_cgroup watch[PATHS_WATCH_MAX];
	unsigned int nwatch;
};

int paths__init(struct egret_paths *p, const char *cgroup, const char *state_dir,
		const char *control);
int paths__create_root(struct egret_paths *p);
/* Where egretd attaches (NULL: the v2 mount) and the subtrees it watches besides its root:
 * each absolute or relative to the v2 mount, existing, at most EGRET_CGROUP_DEPTH - 2 levels
 * deep, and the root and every watched one at or below the attach point (else the programs
 * would not run there). Call after paths__create_root.
 */
int paths__layout(struct egret_paths *p, const char *attach, const char *const watch[],
		  unsigned int nwatch);
/* Where the programs attach: --attach, or the root for a paths without a layout (egretctl). */
const char *paths__attach_path(const struct egret_paths *p);
uint64_t paths__attach_id(const struct egret_paths *p);
/* A cgroup path as egret options take it (absolute, or relative to the v2 mount) into out. */
int paths__cgroup_arg(const struct egret_paths *p, const char *arg, char *out, size_t size);
int paths__open_root(struct egret_paths *p);
int paths__state(const struct egret_paths *p, char *out, size_t size, const char *sub,
		 const char *name);
int bpffs__ensure(const char *state_dir);
int tracefs__ensure(void);

#endif /* EGRET_PATHS_H */
