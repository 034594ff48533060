/* cgroup v2 plumbing. The v2 hierarchy is found in /proc/self/mountinfo, never assumed: it is
 * /sys/fs/cgroup on most distributions and /sys/fs/cgroup/unified on hybrid hosts.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

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

/* The mount point of the first cgroup2 file system in a mountinfo stream. Lines are read whole,
 * however long (a mount point may be 4 KiB, four times that escaped): a line cut in two would
 * make its second half look like a line of its own.
 */
int cgroup__parse_mountinfo(FILE *f, char *out, size_t size)
{
	char *line = NULL;
	size_t cap = 0;
	int err = -ENOENT;

	while (err == -ENOENT && getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - ");
		char *save = NULL, *tok, *mnt = NULL;
		int field = 0;

		if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
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
		if (strlen(mnt) >= size) {
			err = -ENAMETOOLONG;
			break;
		}
		strcpy(out, mnt);
		err = 0;
	}
	free(line);
	return err;
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

/* One line of /proc/PID/cgroup, "ID:CONTROLLERS:PATH\n" from line to nl: false when it is not
 * of that form. *v2 is set for hierarchy 0 (v2's "0::PATH"), *path to PATH.
 */
static bool proc_cgroup_line(const char *line, const char *nl, bool *v2, const char **path)
{
	const char *p = line, *colon;

	while (p < nl && *p >= '0' && *p <= '9')
		p++;
	if (p == line || p == nl || *p != ':' || (p - line > 1 && line[0] == '0'))
		return false;
	colon = memchr(p + 1, ':', (size_t)(nl - p - 1));
	if (!colon || colon + 1 == nl || colon[1] != '/')
		return false;
	*v2 = p - line == 1 && line[0] == '0';
	if (*v2 && colon != p + 1)
		return false; /* v2 has no controllers in this field */
	*path = colon + 1;
	return true;
}

/* Whether a path as /proc names it climbs out of the reader's cgroup namespace ("/../x"). */
static bool path_climbs(const char *p, size_t n)
{
	for (size_t i = 0; i + 1 < n; i++) {
		if (p[i] == '.' && p[i + 1] == '.' && (i == 0 || p[i - 1] == '/') &&
		    (i + 2 == n || p[i + 2] == '/'))
			return true;
	}
	return false;
}

int cgroup__parse_proc_cgroup(const char *text, size_t len, char *out, size_t size)
{
	const char *line = text, *end = text + len, *v2 = NULL, *v2_end = NULL;

	if (len == 0 || text[len - 1] != '\n' || memchr(text, '\0', len))
		return -EBADMSG; /* cut short, or not the kernel's */
	while (line < end) {
		const char *nl = memchr(line, '\n', (size_t)(end - line)), *path;
		bool is_v2;

		if (!proc_cgroup_line(line, nl, &is_v2, &path))
			return -EBADMSG;
		if (is_v2) {
			if (v2)
				return -EBADMSG; /* one v2 hierarchy, one line */
			v2 = path;
			v2_end = nl;
		}
		line = nl + 1;
	}
	if (!v2)
		return -ENOENT;
	if (path_climbs(v2, (size_t)(v2_end - v2)))
		return -EXDEV;
	if ((size_t)(v2_end - v2) >= size)
		return -ENAMETOOLONG;
	memcpy(out, v2, (size_t)(v2_end - v2));
	out[v2_end - v2] = '\0';
	return 0;
}

/* The whole of a /proc file (its seq_file snapshot, read to the end), NUL-terminated: its length,
 * or -errno; -EFBIG past max bytes.
 */
static ssize_t read_whole(const char *path, char **out, size_t max)
{
	size_t cap = 8192, n = 0;
	char *buf = malloc(cap), *bigger;
	ssize_t r = 0;
	int fd;

	if (!buf)
		return -ENOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto fail;
	}
	for (;;) {
		if (n + 1 >= cap) {
			if (cap >= max) {
				r = -EFBIG;
				break;
			}
			bigger = realloc(buf, cap * 2);
			if (!bigger) {
				r = -ENOMEM;
				break;
			}
			buf = bigger;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - 1 - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			r = r < 0 ? -errno : 0;
			break;
		}
		n += (size_t)r;
	}
	close(fd);
	if (r < 0)
		goto fail;
	buf[n] = '\0';
	*out = buf;
	return (ssize_t)n;
fail:
	free(buf);
	return r;
}

int cgroup__proc_text(pid_t pid, char **text, size_t *len)
{
	char path[64], rel[PATH_MAX];
	ssize_t n;
	int err;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/cgroup");
	n = read_whole(path, text, CGROUP_PROC_FILE_MAX);
	if (n < 0)
		return (int)n;
	err = cgroup__parse_proc_cgroup(*text, (size_t)n, rel, sizeof(rel));
	if (err) {
		free(*text);
		*text = NULL;
		return err;
	}
	*len = (size_t)n;
	return 0;
}

/* Whether every controller of a /proc/PID/cgroup controllers field (comma-separated, as
 * "cpu,cpuacct" or "name=systemd") is among a v1 mount's super options.
 */
static bool options_have(const char *opts, const char *ctrls, size_t clen)
{
	const char *c = ctrls, *end = ctrls + clen;

	if (clen == 0)
		return false;
	while (c < end) {
		const char *comma = memchr(c, ',', (size_t)(end - c)), *o = opts;
		size_t n = (size_t)((comma ? comma : end) - c);
		bool found = false;

		while (!found && *o) {
			size_t olen = strcspn(o, ",");

			found = olen == n && !memcmp(o, c, n);
			o += olen + (o[olen] == ',');
		}
		if (!found)
			return false;
		c += n + 1;
	}
	return true;
}

int cgroup__v1_mount(const char *ctrls, size_t clen, char *out, size_t size)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char *line = NULL, *save, *tok, *root, *mnt, *opts;
	size_t cap = 0;
	int err = -ENOENT, field;

	if (!f)
		return -errno;
	while (err == -ENOENT && getline(&line, &cap, f) > 0) {
		char *sep = strstr(line, " - cgroup ");

		if (!sep)
			continue;
		opts = strchr(sep + 10, ' ');
		if (!opts)
			continue;
		opts++;
		opts[strcspn(opts, "\n")] = '\0';
		if (!options_have(opts, ctrls, clen))
			continue;
		*sep = '\0';
		root = mnt = NULL;
		field = 0;
		save = NULL;
		for (tok = strtok_r(line, " ", &save); tok && field < 5;
		     tok = strtok_r(NULL, " ", &save)) {
			if (++field == 4)
				root = tok;
			else if (field == 5)
				mnt = tok;
		}
		if (!root || !mnt || strcmp(root, "/"))
			continue; /* only a mount of the hierarchy's root names its cgroups by path */
		unescape_octal(mnt);
		err = strlen(mnt) < size ? 0 : -ENAMETOOLONG;
		if (!err)
			strcpy(out, mnt);
	}
	free(line);
	fclose(f);
	return err;
}

/* The v2 cgroup directory of pid (0: the caller), from /proc/PID/cgroup's "0::" line, read
 * whole: a process with host privilege can make its v1 lines as long as it likes, and a cut
 * before the v2 line's end would name another cgroup (the v2 root, the host's). Any doubt is
 * an error, never a guess.
 */
int cgroup__of_pid(pid_t pid, const char *mount, char *out, size_t size)
{
	char path[64], *text = NULL, rel[PATH_MAX];
	ssize_t len;
	int n;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	else
		snprintf(path, sizeof(path), "/proc/self/cgroup");
	len = read_whole(path, &text, CGROUP_PROC_FILE_MAX);
	if (len < 0)
		return (int)len;
	n = cgroup__parse_proc_cgroup(text, (size_t)len, rel, sizeof(rel));
	free(text);
	if (n)
		return n;
	n = snprintf(out, size, "%s%s", mount, strcmp(rel, "/") ? rel : "");
	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* True when cgroup directory path is root or below it. */
bool cgroup__is_within(const char *path, const char *root)
{
	size_t rlen = strlen(root);

	while (rlen > 1 && root[rlen - 1] == '/')
		rlen--;
	return strncmp(path, root, rlen) == 0 && (path[rlen] == '/' || path[rlen] == '\0');
}
