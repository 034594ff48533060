/* The harness itself, without egretd: sandbox limits are where the kernel applies them in this
 * host's cgroup layout (the sandbox cgroup itself on cgroup2, a v1 cgroup beside it on a hybrid
 * host), a process in a limited sandbox is in that sandbox and nowhere else on cgroup2, and
 * the limit holds: a memory hog is OOM-killed, a fork past pids.max fails; a sandbox without
 * the limit is not limited.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "util.h"

static void setup(void)
{
	harness_setup(false);
	/* egretd makes the root when it starts; these tests run without it */
	cr_assert_eq(mkdir(T->cgroup_root, 0755), 0);
}

TestSuite(harness, .init = setup, .fini = harness_teardown, .timeout = 60);

static int hog(void *arg)
{
	size_t size = 128u << 20;
	char *p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return 91;
	for (size_t i = 0; i < size; i += 4096)
		p[i] = 1;
	return 0;
}

/* the child's /proc/self/cgroup, into the shared buffer arg */
static int own_cgroups(void *arg)
{
	return read_file("/proc/self/cgroup", arg, 4096) > 0 ? 0 : 1;
}

/* The line of /proc/PID/cgroup for the hierarchy holding the limit, as it should read. */
static void expect_member(const char *cgroups, const char *limit_dir, const char *sandbox_dir)
{
	char want[PATH_MAX * 2];

	/* cgroup2: "0::/<instance>/<sandbox>", whether or not the limit is on v2 */
	snprintf(want, sizeof(want), "0::%s\n", sandbox_dir + strlen(T->cgroup_mount));
	cr_expect(strstr(cgroups, want), "not in its sandbox on cgroup2 (%s): %s", want, cgroups);
	if (strcmp(limit_dir, sandbox_dir)) {
		/* v1: ":<controller>:/<instance>/<sandbox>" */
		snprintf(want, sizeof(want), ":/%s/", T->name);
		cr_expect(strstr(cgroups, want), "not in the v1 limit cgroup %s: %s", limit_dir,
			  cgroups);
	}
}

static void read_limit(const char *dir, const char *file, char *out, size_t size)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (read_file(path, out, size) < 0)
		out[0] = '\0';
	out[strcspn(out, "\n")] = '\0';
}

Test(harness, a_memory_limit_holds_in_the_sandbox)
{
	char dir[PATH_MAX], sandbox[PATH_MAX], value[64], *cgroups;
	int status;

	cr_assert_eq(harness_sandbox_limit(T, "hungry", "memory.max", "16777216", dir, sizeof(dir)),
		     0);
	cr_assert_eq(sandbox_path(T, "hungry", sandbox, sizeof(sandbox)), 0);
	cr_expect_str_eq(strrchr(dir, '/') + 1, "hungry");
	read_limit(dir, strcmp(dir, sandbox) ? "memory.limit_in_bytes" : "memory.max", value,
		   sizeof(value));
	cr_expect_str_eq(value, "16777216");
	cgroups = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(cgroups, MAP_FAILED);
	cr_assert_eq(in_sandbox(T, "hungry", own_cgroups, cgroups), 0);
	expect_member(cgroups, dir, sandbox);
	munmap(cgroups, 4096);
	status = in_sandbox_status(T, "hungry", hog, NULL);
	cr_expect(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "128 MiB in a 16 MiB sandbox: not OOM-killed (status %#x)", status);
	cr_expect_eq(in_sandbox(T, "unlimited", hog, NULL), 0, "positive control: no limit there");
}

static int fork_past(void *arg)
{
	pid_t kids[8];
	int n = 0, refused = 0;

	for (int i = 0; i < 8; i++) {
		pid_t p = fork();

		if (p == 0) {
			pause();
			_exit(0);
		}
		if (p > 0)
			kids[n++] = p;
		else
			refused += errno == EAGAIN;
	}
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	return refused;
}

Test(harness, a_pids_limit_holds_in_the_sandbox)
{
	char dir[PATH_MAX], sandbox[PATH_MAX], value[64], *cgroups;

	cr_assert_eq(harness_sandbox_limit(T, "forky", "pids.max", "3", dir, sizeof(dir)), 0);
	cr_assert_eq(sandbox_path(T, "forky", sandbox, sizeof(sandbox)), 0);
	cr_expect_str_eq(strrchr(dir, '/') + 1, "forky");
	read_limit(dir, "pids.max", value, sizeof(value));
	cr_expect_str_eq(value, "3");
	cgroups = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(cgroups, MAP_FAILED);
	cr_assert_eq(in_sandbox(T, "forky", own_cgroups, cgroups), 0);
	expect_member(cgroups, dir, sandbox);
	munmap(cgroups, 4096);
	/* the child and 2 forks fit in 3: 6 of 8 forks refused */
	cr_expect_eq(in_sandbox(T, "forky", fork_past, NULL), 6);
	cr_expect_eq(in_sandbox(T, "free", fork_past, NULL), 0, "positive control: no limit there");
}

Test(harness, the_kernel_version_is_uname_s)
{
	char release[128], want[64];
	int major, minor;

	cr_assert_eq(harness_kernel_version(&major, &minor), 0);
	cr_assert_eq(read_file("/proc/sys/kernel/osrelease", release, sizeof(release)) > 0, 1);
	snprintf(want, sizeof(want), "%d.%d.", major, minor);
	cr_expect_eq(strncmp(release, want, strlen(want)), 0, "%s is not %s", release, want);
	harness_require_kernel(major, minor, "the running kernel is new enough for itself");
	harness_require_kernel(major - 1, 99, "an older kernel");
}

Test(harness, a_newer_kernel_than_this_one_skips)
{
	int major, minor;

	cr_assert_eq(harness_kernel_version(&major, &minor), 0);
	harness_require_kernel(major, minor + 1, "this skip is the test's result");
	cr_assert_fail("harness_require_kernel(%d, %d) did not skip on %d.%d", major, minor + 1,
		       major, minor);
}
