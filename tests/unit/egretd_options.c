/* egretd's option table, from outside: --help documents every option with its default, and
 * each option's missing or bad value is a one-line usage error (exit 2) naming the option and
 * the value. Nothing here gets past option parsing, so nothing touches the system.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

/* every option egretd takes: this set is its interface (README "egretd") */
static const char *const value_options[] = {
	"--policy",
	"--live-rules",
	"--cgroup",
	"--state-dir",
	"--control",
	"--control-group",
	"--upstream-dns",
	"--dns-refuse",
	"--dns-min-ttl",
	"--dns-grace",
	"--dns-max-ips",
	"--audit-scope",
	"--audit-write",
	"--audit-read",
	"--audit-skip",
	"--file-budget",
	"--redact-key",
	"--redact-pattern",
	"--sink",
	"--format",
	"--spool",
	"--spool-max",
	"--spool-sync",
	"--heartbeat",
	"--trusted-mover",
	"--compat",
	"--accept-kernel-gap",
	"--without-kernel-feature",
};
static const char *const flag_options[] = {
	"--require-unprivileged", "--kill-cross-signals", "-v, --verbose",
	"-V, --version",	  "-h, --help",
};

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* "\n  OPT" followed by a space or the end of the line: OPT starts a help entry */
static bool documented(const char *help, const char *opt)
{
	char want[64];
	size_t n = (size_t)snprintf(want, sizeof(want), "\n  %s", opt);

	for (const char *p = strstr(help, want); p; p = strstr(p + 1, want)) {
		if (p[n] == ' ' || p[n] == '\n')
			return true;
	}
	return false;
}

Test(egretd_options, help_documents_every_option_and_its_default)
{
	static const char *const defaults[] = {
		"/etc/egret/egret.policy",
		"/var/lib/egret/live.rules",
		"/sys/fs/bpf/egret",
		"/run/egret/control.sock",
		"file:/var/log/egret/events.pb",
		"/var/lib/egret/spool",
		"/proc/*/environ",
		"(default: 1G)",
		"(default: 32)",
		"(default: second)",
	};
	char help[16384];

	cr_assert_eq(run_cmd((char *[]){ EGRETD_BIN, "--help", NULL }, help, sizeof(help)), 0);
	for (size_t i = 0; i < sizeof(value_options) / sizeof(value_options[0]); i++)
		cr_expect(documented(help, value_options[i]), "%s missing from --help",
			  value_options[i]);
	for (size_t i = 0; i < sizeof(flag_options) / sizeof(flag_options[0]); i++)
		cr_expect(documented(help, flag_options[i]), "%s missing from --help",
			  flag_options[i]);
	for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
		cr_expect(strstr(help, defaults[i]), "default %s missing from --help", defaults[i]);
}

Test(egretd_options, a_missing_value_names_the_option)
{
	char out[4096], want[80];

	for (size_t i = 0; i < sizeof(value_options) / sizeof(value_options[0]); i++) {
		char *opt = (char *)value_options[i];

		snprintf(want, sizeof(want), "option '%s' needs a value", opt);
		cr_expect_eq(run_cmd((char *[]){ EGRETD_BIN, opt, NULL }, out, sizeof(out)), 2,
			     "%s: %s", opt, out);
		cr_expect(strstr(out, want), "%s: %s", opt, out);
		cr_expect_eq(lines(out), 1, "%s: %s", opt, out);
	}
}

Test(egretd_options, a_bad_value_names_the_option_and_the_value)
{
	static char *const cases[][2] = {
		{ "--dns-max-ips", "0" },
		{ "--dns-max-ips", "4097" },
		{ "--dns-min-ttl", "604801" },
		{ "--dns-grace", "soon" },
		{ "--heartbeat", "86401" },
		{ "--dns-refuse", "drop" },
		{ "--audit-scope", "world" },
		{ "--file-budget", "lots" },
		{ "--format", "xml" },
		{ "--spool-sync", "always" },
		{ "--compat", "allow" },
		{ "--spool", "relative/dir" },
		{ "--spool-max", "1K" },
		{ "--sink", "ftp://x" },
		{ "--upstream-dns", "not an address" },
		{ "--audit-read", "relative" },
		{ "--audit-write", "" },
		{ "--redact-pattern", "(" },
		{ "--trusted-mover", "" },
		{ "--accept-kernel-gap", "bpf_loop" },
		{ "--without-kernel-feature", "bpf_loop" },
	};
	char out[4096], want[160];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(want, sizeof(want), "bad %s '%s': ", cases[i][0], cases[i][1]);
		cr_expect_eq(run_cmd((char *[]){ EGRETD_BIN, cases[i][0], cases[i][1], NULL }, out,
				     sizeof(out)),
			     2, "%s %s: %s", cases[i][0], cases[i][1], out);
		cr_expect(strstr(out, want), "%s %s: %s", cases[i][0], cases[i][1], out);
		cr_expect_eq(lines(out), 1, "%s %s: %s", cases[i][0], cases[i][1], out);
	}
}

Test(egretd_options, repeated_options_are_bounded)
{
	char *argv[64] = { EGRETD_BIN }, uris[16][32], out[4096];
	int n = 1;

	for (int i = 0; i < 16; i++) {
		snprintf(uris[i], sizeof(uris[i]), "tcp://127.0.0.1:%d", 1000 + i);
		argv[n++] = "--sink";
		argv[n++] = uris[i];
	}
	argv[n] = NULL;
	cr_expect_eq(run_cmd(argv, out, sizeof(out)), 2, "%s", out);
	cr_expect(strstr(out, "at most ") && strstr(out, " --sink options"), "%s", out);
	argv[1] = "--sink";
	argv[2] = "stdout";
	argv[3] = "--sink";
	argv[4] = "stdout";
	argv[5] = NULL;
	cr_expect_eq(run_cmd(argv, out, sizeof(out)), 2, "%s", out);
	cr_expect(strstr(out, "bad --sink 'stdout': given twice"), "%s", out);
}

/* The defaults of the audit kinds not given count toward the 32 patterns: 30 --audit-write
 * leave no room for --audit-read's 7 defaults, a usage error (they used to be written past
 * the end of the pattern table). The policy named does not exist, so an egretd that got past
 * its options would stop at its file check, before touching anything.
 */
Test(egretd_options, audit_defaults_count_toward_the_pattern_limit)
{
	char *argv[80] = { EGRETD_BIN, "--policy", "/nonexistent/egret-unit.policy" };
	char paths[30][32], out[4096];
	int n = 3;

	for (int i = 0; i < 30; i++) {
		snprintf(paths[i], sizeof(paths[i]), "/srv/w%d", i);
		argv[n++] = "--audit-write";
		argv[n++] = paths[i];
	}
	argv[n] = NULL;
	cr_expect_eq(run_cmd(argv, out, sizeof(out)), 2, "%s", out);
	cr_expect(strstr(out, "bad --audit-read default '") && strstr(out, "32 patterns in all"),
		  "%s", out);
	cr_expect_eq(lines(out), 1, "%s", out);
	argv[n - 2] = NULL; /* 29 writes, 7 reads, 3 skips: too many still */
	cr_expect_eq(run_cmd(argv, out, sizeof(out)), 2, "%s", out);
	argv[2 * 22 + 3] = NULL; /* 22 + 7 + 3: exactly full, past the options */
	cr_expect_neq(run_cmd(argv, out, sizeof(out)), 2, "%s", out);
	cr_expect(strstr(out, "/nonexistent/egret-unit.policy"), "%s", out);
}
