/* cmake --install into a DESTDIR: the binaries, the systemd unit with ExecStart at the installed
 * egretd, the default policy at /etc/egret/egret.policy (and an operator's policy left alone on
 * a second install); the unit passes systemd-analyze verify, and systemd-analyze security
 * scores it below EXPOSURE_MAX.
 *
 * EXPOSURE_MAX: the unit measures 4.2 ("OK"; 7.8 before its hardening). What is left is what
 * egretd is for: root with CAP_SYS_ADMIN, CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN, CAP_SYS_PTRACE
 * and CAP_DAC_OVERRIDE, the host's network, writable cgroupfs and sysfs, bpf(2), mount(2),
 * perf_event_open(2) and setns(2) allowed, every process's /proc, the host's /tmp and /home.
 * 4.5 leaves room for rounding, and fails when any of the options that took it from 7.8 is lost.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "util.h"

#define EXPOSURE_MAX	  4.5
#define SYSTEMD_ANALYZE	  "/usr/bin/systemd-analyze"
#define UNIT_IN_DESTDIR	  "/usr/local/lib/systemd/system/egretd.service"
#define POLICY_IN_DESTDIR "/etc/egret/egret.policy"

static char destdir[64];

static void setup(void)
{
	snprintf(destdir, sizeof(destdir), "/tmp/egret-unit-install-XXXXXX");
	cr_assert(mkdtemp(destdir));
}

static void teardown(void)
{
	char *argv[] = { "rm", "-rf", destdir, NULL };

	if (destdir[0])
		run_cmd(argv, NULL, 0);
}

TestSuite(install, .init = setup, .fini = teardown, .timeout = 120);

static int cmake_install(char *out, size_t size)
{
	char env[96];
	char *argv[] = { "/usr/bin/env",   env,	       EGRET_CMAKE,  "--install",
			 EGRET_BINARY_DIR, "--prefix", "/usr/local", NULL };

	snprintf(env, sizeof(env), "DESTDIR=%s", destdir);
	return run_cmd(argv, out, size);
}

static void in_destdir(char *out, size_t size, const char *path)
{
	snprintf(out, size, "%s%s", destdir, path);
}

Test(install, unit_and_policy_are_installed_and_an_operators_policy_is_kept)
{
	static char out[16384], unit[16384], policy[8192], shipped[8192];
	char path[PATH_MAX];

	cr_assert_eq(cmake_install(out, sizeof(out)), 0, "%s", out);
	in_destdir(path, sizeof(path), "/usr/local/sbin/egretd");
	cr_expect_eq(access(path, X_OK), 0, "no %s", path);
	in_destdir(path, sizeof(path), "/usr/local/sbin/egretctl");
	cr_expect_eq(access(path, X_OK), 0, "no %s", path);
	in_destdir(path, sizeof(path), UNIT_IN_DESTDIR);
	cr_assert_gt(read_file(path, unit, sizeof(unit)), 0, "no unit at %s:\n%s", path, out);
	cr_expect(strstr(unit, "\nExecStart=/usr/local/sbin/egretd\n"), "%s", unit);
	cr_expect_null(strstr(unit, "@EGRET"), "a template variable left: %s", unit);
	cr_expect_null(strstr(unit, "\nPrivateTmp=yes"), "/tmp hidden from package detection");
	in_destdir(path, sizeof(path), POLICY_IN_DESTDIR);
	cr_assert_gt(read_file(path, policy, sizeof(policy)), 0, "no policy at %s:\n%s", path, out);
	cr_assert_gt(read_file(EGRET_SOURCE_DIR "/deploy/egret.policy", shipped, sizeof(shipped)),
		     0);
	cr_expect_str_eq(policy, shipped);

	/* the operator's policy survives a reinstall */
	{
		FILE *f = fopen(path, "w");

		cr_assert(f);
		fputs("mode audit\n", f);
		fclose(f);
	}
	cr_assert_eq(cmake_install(out, sizeof(out)), 0, "%s", out);
	cr_assert_gt(read_file(path, policy, sizeof(policy)), 0);
	cr_expect_str_eq(policy, "mode audit\n", "the install overwrote the operator's policy");
	cr_expect(strstr(out, "not overwritten"), "%s", out);
}

Test(install, systemd_analyze_verifies_and_scores_the_unit)
{
	static char out[65536];
	char root[96], unit[PATH_MAX],
		*verify[] = {
			SYSTEMD_ANALYZE, "verify", "--recursive-errors=no", root, unit, NULL
		};
	char *security[] = { SYSTEMD_ANALYZE, "security", "--offline=yes", root, unit, NULL };
	const char *at;
	double exposure;

	cr_assert_eq(access(SYSTEMD_ANALYZE, X_OK), 0,
		     SYSTEMD_ANALYZE " is missing (Debian package systemd)");
	cr_assert_eq(cmake_install(out, sizeof(out)), 0, "%s", out);
	snprintf(root, sizeof(root), "--root=%s", destdir);
	in_destdir(unit, sizeof(unit), UNIT_IN_DESTDIR);
	/* under --root, ExecStart must name the egretd in the DESTDIR */
	cr_expect_eq(run_cmd(verify, out, sizeof(out)), 0, "systemd-analyze verify:\n%s", out);
	cr_expect_eq(strlen(out), 0, "systemd-analyze verify has something to say:\n%s", out);
	cr_assert_eq(run_cmd(security, out, sizeof(out)), 0, "%s", out);
	at = strstr(out, "Overall exposure level for egretd.service: ");
	cr_assert(at, "%s", out);
	exposure = strtod(at + strlen("Overall exposure level for egretd.service: "), NULL);
	cr_expect_lt(exposure, EXPOSURE_MAX, "exposure %.1f:\n%s", exposure, out);
	cr_expect_gt(exposure, 0.0, "%s", out);
}
