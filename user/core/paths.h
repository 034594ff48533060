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

struct egret_paths {
	char cgroup_mount[PATH_MAX]; /* the cgroup v2 mount point */
	char cgroup_root[PATH_MAX];  /* egret's root: sandboxes are its direct children */
	char state_dir[PATH_MAX];    /* bpffs directory holding links/ and maps/ */
	char control[PATH_MAX];	     /* control socket path */
	uint64_t root_id;	     /* cgroup id of cgroup_root (0 until it exists) */
	unsigned int root_level;     /* depth of cgroup_root below the mount */
};

int paths__init(struct egret_paths *p, const char *cgroup, const char *state_dir,
		const char *control);
int paths__create_root(struct egret_paths *p);
int paths__open_root(struct egret_paths *p);
int paths__state(const struct egret_paths *p, char *out, size_t size, const char *sub,
		 const char *name);
int bpffs__ensure(const char *state_dir);
int tracefs__ensure(void);

#endif /* EGRET_PATHS_H */
