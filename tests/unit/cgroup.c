/* Finding the cgroup v2 mount in mountinfo (hybrid and pure v2 hosts, escaped paths), cgroup
 * levels and containment.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "cgroup.h"

static int parse(const char *text, char *out, size_t size)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int err = cgroup__parse_mountinfo(f, out, size);

	fclose(f);
	return err;
}

Test(cgroup, hybrid_host)
{
	char out[256];

	cr_assert_eq(
		parse("30 22 0:27 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
		      "34 30 0:31 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
		      "40 30 0:37 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n",
		      out, sizeof(out)),
		0);
	cr_expect_str_eq(out, "/sys/fs/cgroup/unified");
}

Test(cgroup, pure_v2_host_with_optional_fields)
{
	char out[256];

	cr_assert_eq(parse("35 24 0:30 / /sys/fs/cgroup rw,nosuid shared:9 - cgroup2 cgroup2 "
			   "rw,nsdelegate\n",
			   out, sizeof(out)),
		     0);
	cr_expect_str_eq(out, "/sys/fs/cgroup");
}

Test(cgroup, escaped_mount_point)
{
	char out[256];

	cr_assert_eq(
		parse("1 2 0:1 / /mnt/my\\040cgroups rw - cgroup2 none rw\n", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/mnt/my cgroups");
}

Test(cgroup, no_v2_mount)
{
	char out[256];

	cr_expect_eq(parse("34 30 0:31 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n", out,
			   sizeof(out)),
		     -ENOENT);
	cr_expect_eq(parse("40 30 0:37 / /a/very/long/mount rw - cgroup2 cgroup2 rw\n", out, 4),
		     -ENAMETOOLONG);
}

Test(cgroup, levels)
{
	unsigned int level = 99;

	cr_assert_eq(cgroup__level("/sys/fs/cgroup", "/sys/fs/cgroup/egret", &level), 0);
	cr_expect_eq(level, 1);
	cr_assert_eq(cgroup__level("/sys/fs/cgroup/", "/sys/fs/cgroup/a/b//c/", &level), 0);
	cr_expect_eq(level, 3);
	cr_assert_eq(cgroup__level("/sys/fs/cgroup", "/sys/fs/cgroup", &level), 0);
	cr_expect_eq(level, 0);
	cr_expect_eq(cgroup__level("/sys/fs/cgroup", "/sys/fs/cgroupx/a", &level), -EXDEV);
	cr_expect_eq(cgroup__level("/sys/fs/cgroup", "/tmp", &level), -EXDEV);
}

Test(cgroup, containment)
{
	cr_expect(cgroup__is_within("/cg/egret/box", "/cg/egret"));
	cr_expect(cgroup__is_within("/cg/egret", "/cg/egret/"));
	cr_expect_not(cgroup__is_within("/cg/egret2/box", "/cg/egret"));
	cr_expect_not(cgroup__is_within("/cg", "/cg/egret"));
}
