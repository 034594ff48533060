/* task_sandbox for processes that were in a sandbox before egret's programs were first
 * attached: the kernel learns a process's sandbox when it forks, execs or moves, so without
 * this a process older than egret, moved within its sandbox by a peer, looks like one pulled in
 * from outside (and its mover is killed), and one moving itself out is judged by where it went.
 * Written through pidfds, never over what the programs recorded (BPF_NOEXIST).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/types.h>

#include "log.h"
#include "taskseed.h"

#define SEED_DEPTH 16 /* cgroup levels below a sandbox walked */

/* the value of task_sandbox (bpf/lib/confine.bpf.h struct task_sandbox) */
struct seed_value {
	__u64 sandbox_id;
	__u32 doomed;
	__u32 flags;
};

static int seed_procs(int map_fd, const char *dir, __u64 sandbox_id)
{
	struct seed_value v = { .sandbox_id = sandbox_id };
	char path[PATH_MAX + 16];
	int n = 0, pid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (!f)
		return 0; /* gone meanwhile */
	while (fscanf(f, "%d", &pid) == 1) {
		int fd = (int)syscall(SYS_pidfd_open, pid, 0);

		if (fd < 0)
			continue;
		if (bpf_map_update_elem(map_fd, &fd, &v, BPF_NOEXIST) == 0)
			n++;
		close(fd);
	}
	fclose(f);
	return n;
}

static int seed_tree(int map_fd, const char *dir, __u64 sandbox_id, int depth)
{
	char sub[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int n = seed_procs(map_fd, dir, sandbox_id);
	DIR *d;

	if (depth > SEED_DEPTH || !(d = opendir(dir)))
		return n;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub) ||
		    stat(sub, &st))
			continue;
		/* below the root, the sandbox is the first level's cgroup (its inode) */
		n += seed_tree(map_fd, sub, depth == 0 ? (__u64)st.st_ino : sandbox_id, depth + 1);
	}
	closedir(d);
	return n;
}

int taskseed__run(int map_fd, const char *root)
{
	int n;

	if (map_fd < 0)
		return map_fd;
	n = seed_tree(map_fd, root, 0, 0);
	if (n > 0)
		log_info("%d processes already in sandboxes recorded as theirs", n);
	return n;
}
