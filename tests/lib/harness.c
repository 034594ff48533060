/* What every integration suite begins and ends with: root, the test's instance in T (and its
 * network namespace), egretd started with the suite's policy, and the one teardown that ends
 * the helper processes and descriptors a set-up registered and removes the test's instances;
 * skipping a test on a kernel too old for it. The harness's parts: see harness.h.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/internal/ordered-set.h>

#include "harness.h"

/* A slow machine (EGRET_TEST_TIMEOUT_SCALE: tests/kernels' emulated guests) gets the suites'
 * time limits scaled like the harness's waits: Criterion's --timeout can only lower them.
 */
ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	unsigned int scale = harness_timeout_scale();

	if (scale <= 1)
		return;
	FOREACH_SET(struct criterion_suite_set * s, set->suites)
	{
		if (s->suite.data && s->suite.data->timeout > 0)
			s->suite.data->timeout *= scale;
		FOREACH_SET(struct criterion_test * t, s->tests)
		{
			if (t->data && t->data->timeout > 0)
				t->data->timeout *= scale;
		}
	}
}

void harness_require_root(void)
{
	if (geteuid() != 0)
		cr_assert_fail(
			"integration tests need root (they load BPF programs and create cgroups "
			"and network namespaces); run them with sudo, as CI does");
}

void harness_setup(bool netns)
{
	static struct egret_instance inst;

	harness_require_root();
	T = &inst;
	cr_assert_eq(harness_init(T), 0, "cannot set up the test's egret instance");
	if (netns)
		cr_assert_eq(netns_new(), 0, "cannot create a network namespace");
}

/* The running kernel's major and minor version, from uname. */
int harness_kernel_version(int *major, int *minor)
{
	struct utsname u;

	if (uname(&u) || sscanf(u.release, "%d.%d", major, minor) != 2)
		return -EINVAL;
	return 0;
}

void harness_require_kernel(int major, int minor, const char *why)
{
	struct utsname u;
	int have_major, have_minor;

	if (harness_kernel_version(&have_major, &have_minor))
		cr_assert_fail("cannot read the kernel version from uname");
	if (have_major > major || (have_major == major && have_minor >= minor))
		return;
	uname(&u);
	/* Criterion skips by exiting the test process: the instance goes first (see atexit) */
	cr_skip_test("needs Linux %d.%d, this is %s: %s", major, minor, u.release, why);
}

void harness_setup_netns(void)
{
	harness_setup(true);
}

void harness_setup_start(const char *policy, const char *const extra[])
{
	if (policy)
		cr_assert_eq(harness_policy(T, policy), 0, "cannot write the test's policy");
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
}

void harness_setup_listen(int *fd, const char *addr, uint16_t port)
{
	harness_close_at_teardown(fd);
	*fd = tcp_listen(addr, port);
	cr_assert(*fd >= 0, "cannot listen on %s port %u: %s", addr, port, strerror(-*fd));
}

/* Registered by the test process (each test has its own), read at its teardown. */
static pid_t *teardown_pids[16];
static int *teardown_fds[128];
static struct {
	void (*fn)(void *);
	void *arg;
} teardown_fns[16];
static size_t nteardown_pids, nteardown_fds, nteardown_fns;

/* What a test registers is read at its teardown, after the test's function has returned: an
 * address in its stack frame then holds whatever the teardown's own calls left there (a
 * descriptor of Criterion's, closed under it; a pid, killed). Refused at once.
 */
static void assert_not_on_stack(const void *p, const char *what)
{
	pthread_attr_t attr;
	size_t size;
	void *low;

	if (!p || pthread_getattr_np(pthread_self(), &attr))
		return;
	if (!pthread_attr_getstack(&attr, &low, &size))
		cr_assert(!((const char *)p >= (const char *)low &&
			    (const char *)p < (const char *)low + size),
			  "%s: %p is on the test's stack, gone at its teardown; give it static "
			  "storage (or use harness_own_fd)",
			  what, p);
	pthread_attr_destroy(&attr);
}

void harness_at_teardown(void (*fn)(void *), void *arg)
{
	assert_not_on_stack(arg, "harness_at_teardown");
	cr_assert_lt(nteardown_fns, sizeof(teardown_fns) / sizeof(teardown_fns[0]),
		     "more clean-ups than harness_at_teardown holds");
	teardown_fns[nteardown_fns].fn = fn;
	teardown_fns[nteardown_fns++].arg = arg;
}

void harness_kill_at_teardown(pid_t *pid)
{
	assert_not_on_stack(pid, "harness_kill_at_teardown");
	cr_assert_lt(nteardown_pids, sizeof(teardown_pids) / sizeof(teardown_pids[0]),
		     "more helper processes than harness_kill_at_teardown holds");
	teardown_pids[nteardown_pids++] = pid;
}

void harness_close_at_teardown(int *fd)
{
	assert_not_on_stack(fd, "harness_close_at_teardown");
	cr_assert_lt(nteardown_fds, sizeof(teardown_fds) / sizeof(teardown_fds[0]),
		     "more descriptors than harness_close_at_teardown holds");
	teardown_fds[nteardown_fds++] = fd;
}

int harness_own_fd(int fd)
{
	static int owned[64];
	static size_t nowned;

	/* a test process runs one test: the slots are its own */
	cr_assert_lt(nowned, sizeof(owned) / sizeof(owned[0]),
		     "more descriptors than harness_own_fd holds");
	owned[nowned] = fd;
	harness_close_at_teardown(&owned[nowned++]);
	return fd;
}

void harness_teardown(void)
{
	/* never leave egretd stopped, whatever failed */
	if (T && T->egretd)
		kill(T->egretd, SIGCONT);
	/* last registered first: a later step may rely on an earlier one's state */
	while (nteardown_fns > 0) {
		nteardown_fns--;
		teardown_fns[nteardown_fns].fn(teardown_fns[nteardown_fns].arg);
	}
	for (size_t i = 0; i < nteardown_pids; i++) {
		pid_t *pid = teardown_pids[i];

		if (*pid > 0) {
			kill(*pid, SIGKILL);
			waitpid(*pid, NULL, 0);
		}
		*pid = 0;
	}
	for (size_t i = 0; i < nteardown_fds; i++) {
		if (*teardown_fds[i] >= 0)
			close(*teardown_fds[i]);
		*teardown_fds[i] = -1;
	}
	nteardown_pids = nteardown_fds = 0;
	harness_cleanup_all();
}
