/* cgroup v2 plumbing. The v2 hierarchy is found in /proc/self/mountinfo, never assumed: it is
 * /sys/fs/cgroup on most distributions and /sys/fs/cgroup/unified on hybrid hosts.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "cgroup.h"
#include "util.h"

/* mountinfo escapes space, tab, newline and backslash as \ooo */
static void unescape_octal(char *s)
{
	char *w = s;

	for (char *r = s; *r; r++) {
		if (r[0] == '\\' && r[1] >= '0' && r[1] <= '3' && r[2] >= '0' && r[2] <= '7' &&
		    r[3] >= '0' && r[3] <= '7') {
			*w++ = (char)((r[1] - '0') * 64 + (r[2] - '0') * 8 + (r[3] - '0'));
			r += 3;
		} else {
			*w++ = *r;
		}
	}
	*w = '\0';
}

/* The mount point of the first cgroup2 file system in a mountinfo stream. */
int cgroup__parse_mountinfo(FILE *f, char *out, size_t size)
{
	char line[4096];

	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		char *save = NULL, *tok, *mnt = NULL;
		int field = 0;

		if (!sep)
			continue;
		if (strncmp(sep + 3, "cgroup2 ", 8) != 0)
			continue;
		*sep = '\0';
		for (tok = strtok_r(line, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
			if (++field == 5) {
				mnt = tok;
				break;
			}
		}
		if (!mnt)
			continue;
		unescape_octal(mnt);
		if (strlen(mnt) >= size)
			return -ENAMETOOLONG;
		strcpy(out, mnt);
		return 0;
	}
	return -ENOENT;
}

int cgroup__find_v2_mount(char *out, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int err;

	if (!f)
		return -errno;
	err = cgroup__parse_mountinfo(f, out, size);
	fclose(f);
	return err;
}

/* 0 when path is a directory on a cgroup2 file system. */
int cgroup__check_v2(const char *path)
{
	struct statfs sfs;

	if (statfs(path, &sfs))
		return -errno;
	return sfs.f_type == CGROUP2_SUPER_MAGIC_ ? 0 : -ENOTDIR;
}

/* Depth of path below the v2 mount: the mount itself is level 0. */
int cgroup__level(const char *mount, const char *path, unsigned int *level)
{
	size_t mlen = strlen(mount);
	unsigned int n = 0;
	const char *p;

	while (mlen > 1 && mount[mlen - 1] == '/')
		mlen--;
	if (strncmp(path, mount, mlen) != 0 || (path[mlen] != '/' && path[mlen] != '\0'))
		return -EXDEV;
	for (p = path + mlen; *p; p++) {
		if (*p == '/' && p[1] != '/' && p[1] != '\0')
			n++;
	}
	*level = n;
	return 0;
}

/* On cgroup2 a cgroup's id is its directory's inode number. */
int cgroup__id(const char *path, uint64_t *id)
{
	struct stat st;

	if (stat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return -ENOTDIR;
	*id = st.st_ino;
	return 0;
}

int cgroup__join(const char *path, pid_t pid)
{
	char procs[PATH_MAX], val[32];
	int err;

	err = join_path(procs, sizeof(procs), path, "cgroup.procs");
	if (err)
		return err;
	snprintf(val, sizeof(val), "%d", (int)pid);
	return write_file(procs, val);
}

/* The v2 cgroup directory of pid (0: the caller), from /proc/PID/cgroup's "0::" line. */
int cgroup__of_pid(pid_t pid, const char *mount, char *out, size_t size)
{
	char path[64], buf[8192], *line, *save = NULL;
	int n;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/cgroup");
	n = read_file(path, buf, sizeof(buf));
	if (n < 0)
		return n;
	for (line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "0::", 3) != 0)
			continue;
		n = snprintf(out, size, "%s%s", mount, strcmp(line + 3, "/") ? line + 3 : "");
		return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
	}
	return -ENOENT;
}

/* True when cgroup directory path is root or below it. */
bool cgroup__is_within(const char *path, const char *root)
{
	size_t rlen = strlen(root);

	while (rlen > 1 && root[rlen - 1] == '/')
		rlen--;
	return strncmp(path, root, rlen) == 0 && (path[rlen] == '/' || path[rlen] == '\0');
}
