/* The namespaces egretctl run gives a sandbox's command: host id ranges and cgroup
 * delegation, the mount namespace that covers egret's own state, the user namespace and the
 * rest. See ns.c for who does which step.
 */
#ifndef EGRET_NS_H
#define EGRET_NS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "sandbox.h"

/* Host ids for sandboxes' user namespaces: 65536 per sandbox (root inside is the first), from
 * the range systemd sets aside for containers' ids (524288-1879048191), like rootless
 * runtimes' subordinate ids; which slot a sandbox gets follows from its cgroup id, skipping
 * those other sandboxes under the same root hold.
 */
#define NS_IDS_BASE  0x80000u
#define NS_IDS_COUNT 0x10000u
#define NS_IDS_SLOTS 28664u

#define NS_KIND_MAX  16

/* A path of egret's the sandbox must not write (and, where it can be, not see). kind names it
 * in messages and says how: "binary" stays visible, read-only; "control" takes its directory
 * along when nothing else is in it; everything else is covered by an empty read-only file or
 * directory.
 */
struct ns_path {
	char kind[NS_KIND_MAX];
	char path[PATH_MAX];
};

struct ns_protect {
	struct ns_path *v;
	size_t n, cap;
};

int ns_protect__add(struct ns_protect *p, const char *kind, const char *path);
/* "protect KIND /PATH", a line of egretd's prepare reply; -EINVAL for anything else */
int ns_protect__add_line(struct ns_protect *p, const char *line);
void ns_protect__free(struct ns_protect *p);

/* egretctl's steps. ns__pick_ids fills s->uid, gid, ids unless --user gave them, and delegates
 * <root>/NAME to them.
 */
int ns__pick_ids(const char *root, const char *name, struct sandbox_spec *s);
int ns__delegate(const char *dir, uid_t uid, gid_t gid);
/* fork(2), the child in a new pid namespace when new_pid: its pid, 0 in it, or -errno */
pid_t ns__fork(bool new_pid);
int ns__write_maps(pid_t pid, const struct sandbox_spec *s);

/* The child's steps; ns__stage names in what the thing it failed on. */
struct ns_stage {
	const struct sandbox_spec *spec;
	const struct ns_protect *protect;
	const char *state_dir;	  /* egret's bpffs state dir: covered */
	const char *sandbox_dir;  /* <root>/NAME, put over cgroup_mount (cgroup namespace) */
	const char *cgroup_mount; /* the cgroup2 mount point */
};
int ns__stage(const struct ns_stage *st, char *what, size_t size);
int ns__unshare(const struct sandbox_spec *s);
int ns__become_root(void);
int ns__loopback_up(void);

#endif /* EGRET_NS_H */
