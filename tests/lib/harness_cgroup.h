/* Sandbox cgroups for integration tests (see harness_cgroup.c): running a function or a command
 * in a sandbox of an instance, limits on a sandbox, and removing cgroup trees. Included through
 * harness.h.
 */
#ifndef EGRET_TEST_HARNESS_CGROUP_H
#define EGRET_TEST_HARNESS_CGROUP_H

#include <stddef.h>

struct egret_instance;

/* A resource limit on a sandbox, by its cgroup v2 name (memory.max, pids.max): where the
 * controller is on cgroup2 (pure v2 hosts) written in the sandbox cgroup itself, the controller
 * enabled down to it; where v1 holds it (hybrid hosts) in a v1 cgroup
 * <controller mount>/<instance>/<sandbox> that every process entering the sandbox through
 * in_sandbox/sandbox_cmd joins as well. Either way the process starts inside its sandbox and
 * never crosses into another one. out gets the cgroup holding the limit; its last component is
 * the sandbox's name.
 */
int harness_sandbox_limit(struct egret_instance *e, const char *sandbox, const char *file,
			  const char *value, char *out, size_t size);

/* sandboxes: fn runs in a child in <root>/<sandbox> (sandbox NULL: outside egret's root);
 * returns fn's return value (0-255), or -1 when the child could not run it
 */
int sandbox_path(struct egret_instance *e, const char *sandbox, char *out, size_t size);
int in_sandbox(struct egret_instance *e, const char *sandbox, int (*fn)(void *), void *arg);
int in_sandbox_status(struct egret_instance *e, const char *sandbox, int (*fn)(void *), void *arg);
int sandbox_cmd(struct egret_instance *e, const char *sandbox, char *out, size_t outsz, ...);
int sandbox_cmdv(struct egret_instance *e, const char *sandbox, char *out, size_t outsz,
		 char *const argv[]);

/* for the instance's cleanup: a cgroup subtree killed and removed; the mount of a v1
 * controller's hierarchy ("memory", "pids"); the v1 limit cgroups of an instance by its name
 */
void cgroup_tree__remove(const char *path);
int cgroup_v1__mount(const char *controller, char *out, size_t size);
void cgroup_v1__remove_limits(const char *name);

#endif /* EGRET_TEST_HARNESS_CGROUP_H */
