/* Test harness shared by every integration test: a private egret instance (its own cgroup root,
 * bpffs state dir, control socket, sink and temp dir, never egret's defaults), processes in
 * sandboxes, network namespaces with the addresses a test needs, listeners and connects with
 * timeouts, and reading the event stream. Everything a test creates is removed by
 * harness_teardown, the .fini of every suite, so it runs when an assertion fails too;
 * leftovers of a crashed test are swept by harness_sweep_stale before the next run.
 * EGRET_TEST_VERBOSE=1 prints each instance's egretd log at cleanup; EGRET_TEST_KEEP_LOGS=DIR
 * keeps the egretd log of each failed test in DIR/<suite>.<test>.log (tests/kernels uses it).
 *
 * This header includes the harness's parts: harness_instance.h (instances, egretd, commands),
 * harness_cgroup.h (sandboxes and their limits), harness_net.h (namespaces and sockets) and
 * harness_events.h (the event stream); it declares what a suite begins and ends with.
 */
#ifndef EGRET_TEST_HARNESS_H
#define EGRET_TEST_HARNESS_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "harness_cgroup.h"
#include "harness_events.h"
#include "harness_instance.h"
#include "harness_net.h"

void harness_require_root(void);
/* A suite's usual set-up, every step asserted: root, a new instance of this test in T, and with
 * netns a network namespace of the test's own.
 */
void harness_setup(bool netns);
/* the .init of a suite that needs only that: harness_setup(true) */
void harness_setup_netns(void);
/* The end of a set-up that starts egretd: T's policy file written with policy (NULL: keep the
 * "mode enforce" of harness_init), then egretd started on T with extra, asserted with its log.
 */
void harness_setup_start(const char *policy, const char *const extra[]);
/* A TCP listener on addr:port in *fd, asserted, closed by harness_teardown. */
void harness_setup_listen(int *fd, const char *addr, uint16_t port);
/* What harness_teardown ends besides the instances, registered by address and read when the
 * test ends (a test may replace them, or clear them: 0 or -1): a helper process (*pid > 0:
 * killed and reaped, then 0) and a descriptor (*fd >= 0: closed, then -1).
 */
void harness_kill_at_teardown(pid_t *pid);
/* fn(arg) at teardown, before the processes and descriptors above and the instances go, in
 * reverse order of registration (a runtime's clean-up of the containers a test made)
 */
void harness_at_teardown(void (*fn)(void *), void *arg);
void harness_close_at_teardown(int *fd);
/* fd (when >= 0), a descriptor the test keeps to its end, closed by harness_teardown: a copy is
 * kept, so a local variable may hold it (the test must not close it itself); returns fd.
 */
int harness_own_fd(int fd);
/* The .fini of every suite: an egretd a test left stopped continued, the registered processes
 * killed and descriptors closed, in the order registered, then every instance of the test
 * removed (T last).
 */
void harness_teardown(void);
/* Skip the calling test (SKIP with why, as the report shows it) on a kernel older than
 * major.minor, for a test of a feature that cannot exist there:
 * harness_require_kernel(6, 6, "fchmodat2 arrived in 6.6"). Call it first in the test body;
 * the test's instances are removed before it skips (Criterion skips without .fini).
 */
void harness_require_kernel(int major, int minor, const char *why);
int harness_kernel_version(int *major, int *minor);

#endif /* EGRET_TEST_HARNESS_H */
