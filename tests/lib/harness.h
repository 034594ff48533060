/* Test harness shared by every integration test: a private egret instance (its own cgroup root,
 * bpffs state dir, control socket, sink and temp dir, never egret's defaults), processes in
 * sandboxes, network namespaces with the addresses a test needs, listeners and connects with
 * timeouts, and reading the event stream. Everything a test creates is removed by
 * harness_cleanup, which the suites call from .fini so it runs when an assertion fails too;
 * leftovers of a crashed test are swept by harness_sweep_stale before the next run.
 * EGRET_TEST_VERBOSE=1 prints each instance's egretd log at cleanup; EGRET_TEST_KEEP_LOGS=DIR
 * keeps the egretd log of each failed test in DIR/<suite>.<test>.log (tests/kernels uses it).
 */
#ifndef EGRET_TEST_HARNESS_H
#define EGRET_TEST_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "egret/v1/events.pb-c.h"

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
};

/* the instance of the current test (one per test process) */
extern struct egret_instance *T;

void harness_require_root(void);
/* A suite's usual set-up, every step asserted: root, a new instance of this test in T, and with
 * netns a network namespace of the test's own.
 */
void harness_setup(bool netns);
/* Skip the calling test (SKIP with why, as the report shows it) on a kernel older than
 * major.minor, for a test of a feature that cannot exist there:
 * harness_require_kernel(6, 6, "fchmodat2 arrived in 6.6"). Call it first in the test body;
 * the test's instances are removed before it skips (Criterion skips without .fini).
 */
void harness_require_kernel(int major, int minor, const char *why);
int harness_kernel_version(int *major, int *minor);
int harness_init(struct egret_instance *e);
int harness_base_dir(void);
int harness_policy(struct egret_instance *e, const char *text);
int harness_start(struct egret_instance *e, const char *const extra[]);
int harness_spawn(struct egret_instance *e, const char *const extra[], int gate);
int harness_wait_ready(struct egret_instance *e, int nfd, int timeout_ms);
int harness_stop(struct egret_instance *e, int sig);
void harness_cleanup(struct egret_instance *e);
void harness_sweep_stale(void);
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
const char *harness_log(struct egret_instance *e);

/* commands */
int run_cmd(char *const argv[], char *out, size_t outsz);
int egretctl(struct egret_instance *e, char *out, size_t outsz, ...);

/* sandboxes: fn runs in a child in <root>/<sandbox> (sandbox NULL: outside egret's root);
 * returns fn's return value (0-255), or -1 when the child could not run it
 */
int sandbox_path(struct egret_instance *e, const char *sandbox, char *out, size_t size);
int harness_shared_dir(struct egret_instance *e, char *out, size_t size);
int in_sandbox(struct egret_instance *e, const char *sandbox, int (*fn)(void *), void *arg);
int in_sandbox_status(struct egret_instance *e, const char *sandbox, int (*fn)(void *), void *arg);
int sandbox_cmd(struct egret_instance *e, const char *sandbox, char *out, size_t outsz, ...);
int sandbox_cmdv(struct egret_instance *e, const char *sandbox, char *out, size_t outsz,
		 char *const argv[]);

/* network namespace of the calling test process */
int netns_new(void);
int netns_addr(const char *dev, const char *cidr);
int netns_run(const char *cmdline);

/* sockets: 0 or an errno */
int tcp_listen(const char *addr, uint16_t port);
int udp_bind(const char *addr, uint16_t port);
int tcp_connect(const char *addr, uint16_t port, int family, int timeout_ms);
int udp_sendto(const char *addr, uint16_t port, int family);
int udp_connect_send(const char *addr, uint16_t port, int family);
int tcp_fastopen(const char *addr, uint16_t port, int family);
int ping_echo(const char *addr, int timeout_ms);

/* the event stream */
struct events {
	Egret__V1__Event **ev;
	size_t n;
};
int events_read(const char *path, struct events *out);
void events_free(struct events *ev);
int events_wait(const char *path, bool (*match)(const Egret__V1__Event *, const void *),
		const void *arg, int timeout_ms, struct events *out);
int events_wait_count(const char *path, bool (*match)(const Egret__V1__Event *, const void *),
		      const void *arg, size_t count, int timeout_ms, struct events *out);
const Egret__V1__Event *events_find(const struct events *ev,
				    bool (*match)(const Egret__V1__Event *, const void *),
				    const void *arg, size_t *count);

#endif /* EGRET_TEST_HARNESS_H */
