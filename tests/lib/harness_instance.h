/* Private egret instances for integration tests (see harness_instance.c): the paths of one
 * instance, starting and stopping its egretd, removing all it made, and running egretctl and
 * other commands with their output captured. Included through harness.h.
 */
#ifndef EGRET_TEST_HARNESS_INSTANCE_H
#define EGRET_TEST_HARNESS_INSTANCE_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#define HARNESS_PREFIX "egret-test-"
/* Where each instance's files go (HARNESS_DIR/<name>): a root-owned directory nobody else can
 * write, all the way up, since egretd refuses a policy, live-rules file or spool that another
 * user could replace (StrictModes); /tmp, sticky and world-writable, is refused.
 */
#define HARNESS_DIR "/run/egret-test"

struct egret_instance {
	char name[64]; /* egret-test-<pid>-<n> */
	char cgroup_mount[PATH_MAX];
	char cgroup_root[PATH_MAX];
	/* egretd's --attach: "=" (harness_init's) the instance's own cgroup_root, so instances
	 * never see each other's tasks; "" egretd's default, the v2 root; or a path
	 */
	char attach[PATH_MAX];
	char state_dir[PATH_MAX];
	char tmpdir[PATH_MAX];
	char control[PATH_MAX];
	char sink_path[PATH_MAX];
	char log_path[PATH_MAX];
	char policy_path[PATH_MAX];
	char live_path[PATH_MAX];
	char spool_dir[PATH_MAX];
	pid_t egretd; /* running egretd, 0 when none */
	/* v1 controller cgroups made by harness_sandbox_limit (hybrid hosts), which a process
	 * entering limit_sandbox[i] joins beside it
	 */
	char limit_dirs[4][PATH_MAX];
	char limit_sandbox[4][64];
	/* systemd's part at the next harness_spawn: these fds passed as $LISTEN_FDS (from 3), with
	 * $LISTEN_FDNAMES listen_names (colon-separated); none when nlisten is 0
	 */
	const int *listen_fds;
	unsigned int nlisten;
	const char *listen_names;
};

/* the instance of the current test (one per test process) */
extern struct egret_instance *T;

int harness_init(struct egret_instance *e);
/* The instance's egret root one level down, <mount>/NAME/egret, and egretd attached at
 * <mount>/NAME (created), so that a test places cgroups beside the root inside the instance's
 * own tree: a runtime's containers, a watched subtree. Before harness_start.
 */
int harness_nest_root(struct egret_instance *e);
int harness_base_dir(void);
int harness_policy(struct egret_instance *e, const char *text);
int harness_start(struct egret_instance *e, const char *const extra[]);
int harness_spawn(struct egret_instance *e, const char *const extra[], int gate);
/* timeout_ms is scaled by harness_timeout_scale() */
int harness_wait_ready(struct egret_instance *e, int nfd, int timeout_ms);
unsigned int harness_timeout_scale(void);
int harness_stop(struct egret_instance *e, int sig);
void harness_cleanup(struct egret_instance *e);
/* harness_cleanup of every instance the calling test process still has */
void harness_cleanup_all(void);
void harness_sweep_stale(void);
const char *harness_log(struct egret_instance *e);
int harness_shared_dir(struct egret_instance *e, char *out, size_t size);

/* commands */
int run_cmd(char *const argv[], char *out, size_t outsz);
int egretctl(struct egret_instance *e, char *out, size_t outsz, ...);

#endif /* EGRET_TEST_HARNESS_INSTANCE_H */
