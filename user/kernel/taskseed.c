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

struct walk {
	void (*fn)(void *ctx, int pid, __u64 sandbox_id);
	void *ctx;
};

static void walk_procs(const struct walk *w, const char *dir, __u64 sandbox_id)
{
	char path[PATH_MAX + 16];
	int pid;
	FILE *f;

	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (!f)
		return; /* gone meanwhile */
	while (fscanf(f, "%d", &pid) == 1)
		w->fn(w->ctx, pid, sandbox_id);
	fclose(f);
}

static void walk_tree(const struct walk *w, const char *dir, __u64 sandbox_id, int depth)
{
	char sub[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;

	walk_procs(w, dir, sandbox_id);
	if (depth > SEED_DEPTH || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) >= (int)sizeof(sub) ||
		    stat(sub, &st))
			continue;
		/* below the root, the sandbox is the first level's cgroup (its inode) */
		walk_tree(w, sub, depth == 0 ? (__u64)st.st_ino : sandbox_id, depth + 1);
	}
	closedir(d);
}

void taskseed__each(const char *root, void (*fn)(void *ctx, int pid, __u64 sandbox_id), void *ctx)
{
	struct walk w = { fn, ctx };

	walk_tree(&w, root, 0, 0);
}

struct seed {
	int map_fd;
	int n;
};

static void seed_one(void *ctx, int pid, __u64 sandbox_id)
{
	struct seed_value v = { .sandbox_id = sandbox_id };
	struct seed *s = ctx;
	int fd = (int)syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return;
	if (bpf_map_update_elem(s->map_fd, &fd, &v, BPF_NOEXIST) == 0)
		s->n++;
	close(fd);
}

int taskseed__run(int map_fd, const char *root)
{
	struct seed s = { map_fd, 0 };

	if (map_fd < 0)
		return map_fd;
	taskseed__each(root, seed_one, &s);
	if (s.n > 0)
		log_info("%d processes already in sandboxes recorded as theirs", s.n);
	return s.n;
}
