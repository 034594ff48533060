/* The /proc/PID/cgroup parser that places a control-socket peer (and egretd itself): it returns
 * the one v2 line's path or refuses, never a guess. A process with host privilege can make its v1
 * lines as long as it likes; text cut anywhere must be refused, not read as the v2 root.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cgroup.h"

#define HYBRID                             \
	"13:misc:/\n"                      \
	"12:pids:/user.slice/u\n"          \
	"11:freezer:/\n"                   \
	"10:memory:/user.slice/u\n"        \
	"9:name=systemd:/user.slice/u:x\n" \
	"1:cpu,cpuacct:/\n"

static int parse(const char *text, char *out, size_t size)
{
	return cgroup__parse_proc_cgroup(text, strlen(text), out, size);
}

Test(proc_cgroup, pure_v2_and_hybrid)
{
	char out[256];

	cr_assert_eq(parse("0::/egret/box\n", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/egret/box");
	cr_assert_eq(parse("0::/\n", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/");
	cr_assert_eq(parse(HYBRID "0::/system.slice/egretd.service\n", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/system.slice/egretd.service");
	/* a name may hold ':' and spaces; a dead cgroup's " (deleted)" stays in the path */
	cr_assert_eq(parse("0::/a:b/c d (deleted)\n", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/a:b/c d (deleted)");
	/* a named v1 hierarchy on a pure v2 host comes first */
	cr_assert_eq(parse("1:name=mine:/x\n0::/k\n", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/k");
}

/* The red team's attack: the read ends right after "0::" (or anywhere else): refused. */
Test(proc_cgroup, cut_anywhere_is_refused)
{
	const char *full = HYBRID "0::/ctrs/box\n";
	size_t n = strlen(full);
	char out[256];

	for (size_t cut = 0; cut < n; cut++) {
		int err = cgroup__parse_proc_cgroup(full, cut, out, sizeof(out));

		cr_expect_neq(err, 0, "text cut at %zu of %zu was taken: '%s'", cut, n, out);
	}
	cr_expect_eq(cgroup__parse_proc_cgroup(full, n, out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/ctrs/box");
}

Test(proc_cgroup, anything_but_the_kernels_form_is_refused)
{
	static const char *const bad[] = {
		"",
		"\n",
		"0::/a\n0::/\n",	    /* two v2 lines */
		"0::/a\n0::\n",		    /* the second empty */
		"0::\n",		    /* no path */
		"0:x:/a\n",		    /* v2 with controllers */
		"00::/a\n",		    /* not how the kernel prints 0 */
		"a:pids:/\n0::/b\n",	    /* no id */
		"5:pids\n0::/b\n",	    /* a line without a path */
		"5:pids:relative\n0::/b\n", /* a path not from the root */
		"5:pids:/\nstray\n0::/b\n", /* a line of no hierarchy */
		"0::/a\nnot a line\n",	    /* after the v2 line */
		"0::/a",		    /* no final newline: cut short */
	};
	char out[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_neq(parse(bad[i], out, sizeof(out)), 0, "case %zu '%s' was taken", i,
			      bad[i]);
	/* a NUL inside */
	cr_expect_eq(cgroup__parse_proc_cgroup("0::/a\0b\n", 8, out, sizeof(out)), -EBADMSG);
	/* no v2 hierarchy at all */
	cr_expect_eq(parse("5:pids:/\n", out, sizeof(out)), -ENOENT);
}

Test(proc_cgroup, outside_the_readers_namespace_and_too_long)
{
	char out[8];

	cr_expect_eq(parse("0::/../../x\n", out, sizeof(out)), -EXDEV);
	cr_expect_eq(parse("0::/a/..\n", out, sizeof(out)), -EXDEV);
	cr_expect_eq(parse("0::/a..b\n", out, sizeof(out)), 0);
	cr_expect_eq(parse("0::/a/b/c/d/e\n", out, sizeof(out)), -ENAMETOOLONG);
}

/* the caller's own file, read whole (a host without a visible v2 hierarchy has no v2 line) */
Test(proc_cgroup, own_cgroup)
{
	char out[4096];
	int err = cgroup__of_pid(0, "/mnt", out, sizeof(out));

	cr_expect(err == 0 || err == -ENOENT, "%s", strerror(-err));
	if (!err)
		cr_expect_eq(strncmp(out, "/mnt", 4), 0, "%s", out);
}
