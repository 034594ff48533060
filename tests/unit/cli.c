/* Both binaries: --help and --version succeed, bad options and values get a one-line error and
 * exit status 2, without needing root or touching the kernel.
 */
#include <string.h>

#include <criterion/criterion.h>

#include "harness.h"

static int run(char *out, size_t size, char *const argv[])
{
	return run_cmd(argv, out, size);
}

static int lines(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}

Test(cli, help_and_version)
{
	char out[8192];

	cr_expect_eq(run(out, sizeof(out), (char *[]){ EGRETD_BIN, "--help", NULL }), 0);
	cr_expect(strstr(out, "--state-dir"), "%s", out);
	cr_expect_eq(run(out, sizeof(out), (char *[]){ EGRETD_BIN, "--version", NULL }), 0);
	cr_expect(strstr(out, "egretd "), "%s", out);
	cr_expect_eq(run(out, sizeof(out), (char *[]){ EGRETCTL_BIN, "--help", NULL }), 0);
	cr_expect(strstr(out, "uninstall"), "%s", out);
	cr_expect_eq(run(out, sizeof(out), (char *[]){ EGRETCTL_BIN, "help", NULL }), 0);
}

Test(cli, usage_errors_exit_2_in_one_line)
{
	static char *const cases[][5] = {
		{ EGRETD_BIN, "--bogus", NULL },
		{ EGRETD_BIN, "--sink", "ftp://x", NULL },
		{ EGRETD_BIN, "--cgroup", NULL },
		{ EGRETD_BIN, "extra", NULL },
		{ EGRETCTL_BIN, "frobnicate", NULL },
		{ EGRETCTL_BIN, "--bogus", "status", NULL },
		{ EGRETCTL_BIN, "status", "--bogus", NULL },
		{ EGRETCTL_BIN, "run", NULL },
		{ EGRETCTL_BIN, "run", "--preserve-fds", "x", NULL },
		{ EGRETCTL_BIN, "tail", "a", "b", NULL },
	};
	char out[8192];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(run(out, sizeof(out), cases[i]), 2, "%s %s: %s", cases[i][0],
			     cases[i][1], out);
		cr_expect_eq(lines(out), 1, "%s %s: not one line: %s", cases[i][0], cases[i][1],
			     out);
		cr_expect(strstr(out, "--help"), "%s", out);
	}
}
