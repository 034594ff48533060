/* StrictModes for egretd's files (fileperm.h): a file, or any directory a lookup of its path
 * passes through (symlinks followed), that group or others could write is refused with what to
 * fix; a missing file egretd creates later is fine; a file swapped after the open is refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "fileperm.h"

static char dir[64];

static void setup(void)
{
	snprintf(dir, sizeof(dir), "/tmp/egret-unit-perm-XXXXXX");
	cr_assert(mkdtemp(dir));
	cr_assert_eq(chmod(dir, 0700), 0);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		cr_log_warn("could not remove %s", dir);
}

TestSuite(fileperm, .init = setup, .fini = teardown);

static void make_file(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

/* Checked below dir (its parents, /tmp among them, are the test's to trust). */
static int check(const char *path, enum fileperm_type type, bool missing_ok, char *err, size_t size)
{
	struct fileperm_opts o = { .type = type, .may_be_missing = missing_ok, .trusted = dir };

	return fileperm__check("policy", path, &o, NULL, err, size);
}

Test(fileperm, a_file_only_its_owner_writes_is_accepted)
{
	char path[128], err[FILEPERM_ERR_LEN];

	snprintf(path, sizeof(path), "%s/egret.policy", dir);
	make_file(path, 0644);
	cr_expect_eq(check(path, FILEPERM_FILE, false, err, sizeof(err)), 0, "%s", err);
	make_file(path, 0600);
	cr_expect_eq(check(path, FILEPERM_FILE, false, err, sizeof(err)), 0, "%s", err);
}

Test(fileperm, a_file_group_or_others_write_is_refused_with_the_fix)
{
	char path[128], err[FILEPERM_ERR_LEN];

	snprintf(path, sizeof(path), "%s/egret.policy", dir);
	make_file(path, 0664);
	cr_expect_eq(check(path, FILEPERM_FILE, false, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "policy ") == err && strstr(err, "mode 0664") &&
			  strstr(err, "writable by group") && strstr(err, "chmod go-w"),
		  "%s", err);
	make_file(path, 0646);
	cr_expect_eq(check(path, FILEPERM_FILE, false, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "writable by others"), "%s", err);
}

Test(fileperm, a_writable_directory_on_the_way_is_refused)
{
	char sub[128], path[160], err[FILEPERM_ERR_LEN];

	snprintf(sub, sizeof(sub), "%s/etc", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);
	snprintf(path, sizeof(path), "%s/egret.policy", sub);
	make_file(path, 0644);
	cr_expect_eq(check(path, FILEPERM_FILE, false, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(chmod(sub, 0777), 0);
	cr_expect_eq(check(path, FILEPERM_FILE, false, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, sub) && strstr(err, "directory") && strstr(err, "mode 0777"), "%s",
		  err);
	cr_assert_eq(chmod(sub, 01777), 0);
	cr_expect_eq(check(path, FILEPERM_FILE, false, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "shared directory"), "%s", err);
}

/* A symlink is followed: its target's directories are checked, and the link's own. */
Test(fileperm, a_symlink_into_a_writable_directory_is_refused)
{
	char sub[128], target[160], link[160], err[FILEPERM_ERR_LEN];

	snprintf(sub, sizeof(sub), "%s/shared", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);
	snprintf(target, sizeof(target), "%s/egret.policy", sub);
	make_file(target, 0644);
	snprintf(link, sizeof(link), "%s/link.policy", dir);
	cr_assert_eq(symlink("shared/egret.policy", link), 0);
	cr_expect_eq(check(link, FILEPERM_FILE, false, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(chmod(sub, 0777), 0);
	cr_expect_eq(check(link, FILEPERM_FILE, false, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, link) && strstr(err, sub), "%s", err);
}

/* Untrusted all the way up: /tmp itself (sticky, world-writable) is on the way. */
Test(fileperm, tmp_is_not_a_place_for_egrets_files)
{
	struct fileperm_opts o = { .type = FILEPERM_FILE };
	char path[128], err[FILEPERM_ERR_LEN];

	snprintf(path, sizeof(path), "%s/egret.policy", dir);
	make_file(path, 0644);
	cr_expect_eq(fileperm__check("policy", path, &o, NULL, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "/tmp") && strstr(err, "shared directory"), "%s", err);
}

Test(fileperm, a_missing_file_is_fine_only_when_egretd_creates_it)
{
	char path[128], err[FILEPERM_ERR_LEN];
	struct fileperm_opts o = { .type = FILEPERM_FILE, .may_be_missing = true, .trusted = dir };
	struct stat st;

	snprintf(path, sizeof(path), "%s/live.rules", dir);
	cr_expect_eq(fileperm__check("live rules", path, &o, &st, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(st.st_ino, 0);
	cr_expect_eq(check(path, FILEPERM_FILE, false, err, sizeof(err)), -ENOENT);
	/* the directories above a missing file are still checked */
	snprintf(path, sizeof(path), "%s/lib", dir);
	cr_assert_eq(mkdir(path, 0777), 0);
	cr_assert_eq(chmod(path, 0777), 0);
	snprintf(path, sizeof(path), "%s/lib/live.rules", dir);
	cr_expect_eq(fileperm__check("live rules", path, &o, &st, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "mode 0777"), "%s", err);
}

Test(fileperm, the_type_is_checked)
{
	char path[128], err[FILEPERM_ERR_LEN];

	snprintf(path, sizeof(path), "%s/spool", dir);
	cr_assert_eq(mkdir(path, 0700), 0);
	cr_expect_eq(check(path, FILEPERM_DIR, false, err, sizeof(err)), 0, "%s", err);
	cr_expect_neq(check(path, FILEPERM_FILE, false, err, sizeof(err)), 0);
	cr_expect(strstr(err, "not a regular file"), "%s", err);
	cr_assert_eq(chmod(path, 0770), 0);
	cr_expect_eq(check(path, FILEPERM_DIR, false, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "chmod go-w"), "%s", err);
}

Test(fileperm, open_checks_the_file_it_opened)
{
	char path[128], err[FILEPERM_ERR_LEN];
	int fd;

	snprintf(path, sizeof(path), "%s/egret.policy", dir);
	make_file(path, 0644);
	fd = fileperm__open("policy", path, dir, err, sizeof(err));
	cr_expect_geq(fd, 0, "%s", err);
	if (fd >= 0)
		close(fd);
	make_file(path, 0666);
	cr_expect_eq(fileperm__open("policy", path, dir, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "mode 0666"), "%s", err);
	unlink(path);
	cr_expect_eq(fileperm__open("policy", path, dir, err, sizeof(err)), -ENOENT);
}

/* Only root can give a file away: another owner is refused (chown root is the fix). */
Test(fileperm, a_file_another_user_owns_is_refused)
{
	char path[128], err[FILEPERM_ERR_LEN];

	if (geteuid() != 0)
		cr_skip_test("needs root to give a file to uid 65534");
	snprintf(path, sizeof(path), "%s/live.rules", dir);
	make_file(path, 0600);
	cr_assert_eq(chown(path, 65534, 65534), 0);
	cr_expect_eq(check(path, FILEPERM_FILE, false, err, sizeof(err)), -EPERM);
	cr_expect(strstr(err, "owned by uid 65534") && strstr(err, "chown root"), "%s", err);
}
