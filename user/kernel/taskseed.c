/* task_sandbox for processes the programs never saw enter their sandbox: those there before
 * egret's programs were attached (egretd's start, in egret's root, a --watch subtree or a
 * registered cgroup) and those already in a cgroup when egretd registers it (a container whose
 * runtime moved it in first, a unit or VM registered by hand). The kernel learns a process's
 * sandbox when it forks, execs or moves; without a record, a process moving itself out is judged
 * by where it went (so it leaves unkilled), and one a peer moves looks pulled in from outside.
 *
 * A cgroup's sandbox is found as the kernel finds it (bpf/lib/sandbox.bpf.h sandbox_pick): the
 * nearest registered cgroup at most EGRET_CGROUP_DEPTH - 1 levels down (an exempt one: the
 * host's), else the child of a watched subtree it is in (the watched cgroup itself: 0), else the
 * host's. Written through pidfds (a process's record is its group leader's).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/types.h>

#include "cgroup.h"
#include "egret/policy.h"
#include "log.h"
#include "paths.h"
#include "taskseed.h"
#include "util.h"

#define SEED_DEPTH 64 /* cgroup levels walked below where a walk starts */

/* the value of task_sandbox (bpf/lib/maps.bpf.h struct task_sandbox) */
struct seed_value {
	__u64 sandbox_id;
	__u32 doomed;
	__u32 flags;
};

#define SEED_TASK_FOREIGN 1u /* maps.bpf.h TASK_FOREIGN: pulled in from outside */

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

/* ---- seeding task_sandbox ------------------------------------------------------------------ */

struct seed {
	const struct taskseed *t;
	bool correct; /* a registration: records the programs made are corrected */
	int n;
};

/* Where a cgroup's processes belong, as the walk down to it found. */
struct place {
	__u64 reg;	  /* the nearest registration's sandbox (EGRET_NO_SANDBOX: exempt) */
	__u64 watched;	  /* the watched subtree's child it is in (0: the watched cgroup) */
	bool has_reg;	  /* reg is set */
	bool has_watched; /* watched is set */
	unsigned int watch_level;
};

static __u64 place_sandbox(const struct place *pl)
{
	if (pl->has_reg)
		return pl->reg;
	return pl->has_watched ? pl->watched : EGRET_NO_SANDBOX;
}

/* One process: its record says sandbox_id (a foreign one's stays its own). */
static void seed_one(struct seed *s, int pid, __u64 sandbox_id)
{
	struct seed_value v = { .sandbox_id = sandbox_id };
	int fd = (int)syscall(SYS_pidfd_open, pid, 0), map = s->t->task_fd;

	if (fd < 0)
		return; /* gone, or not a process */
	if (bpf_map_lookup_elem(map, &fd, &v) == 0) {
		if (s->correct && !(v.flags & SEED_TASK_FOREIGN) && v.sandbox_id != sandbox_id) {
			v.sandbox_id = sandbox_id;
			if (sandbox_id == EGRET_NO_SANDBOX
				    ? bpf_map_delete_elem(map, &fd) == 0
				    : bpf_map_update_elem(map, &fd, &v, BPF_EXIST) == 0)
				s->n++;
		}
	} else if (sandbox_id != EGRET_NO_SANDBOX &&
		   bpf_map_update_elem(map, &fd, &v, BPF_NOEXIST) == 0) {
		s->n++;
	}
	close(fd);
}

static void seed_procs(struct seed *s, const char *dir, __u64 sandbox_id)
{
	char path[PATH_MAX + 16];
	int pid;
	FILE *f;

	if (sandbox_id == EGRET_NO_SANDBOX && !s->correct)
		return; /* the host's: nothing to record */
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	f = fopen(path, "re");
	if (!f)
		return; /* gone meanwhile */
	while (fscanf(f, "%d", &pid) == 1)
		seed_one(s, pid, sandbox_id);
	fclose(f);
}

/* What a registration or a watched subtree at this cgroup makes of it. */
static void place_update(const struct seed *s, struct place *pl, __u64 id, unsigned int level)
{
	const struct egret_paths *p = s->t->paths;
	struct egret_sandbox reg;

	if (level >= 1 && level < EGRET_CGROUP_DEPTH && s->t->sandboxes_fd >= 0 &&
	    bpf_map_lookup_elem(s->t->sandboxes_fd, &id, &reg) == 0) {
		pl->reg = reg.flags & EGRET_SB_HOST ? EGRET_NO_SANDBOX : id;
		pl->has_reg = true;
	}
	if (pl->has_watched) {
		if (pl->watched == 0 && level == pl->watch_level + 1)
			pl->watched = id;
		return;
	}
	for (unsigned int i = 0; p && i < p->nwatch; i++) {
		if (p->watch[i].id == id && p->watch[i].level < EGRET_CGROUP_DEPTH - 1) {
			pl->has_watched = true;
			pl->watched = 0;
			pl->watch_level = level;
			return;
		}
	}
}

/* Whether no process is in the cgroup at dir or below it (cgroup.events: "populated 0"). */
static bool unpopulated(const char *dir)
{
	char path[PATH_MAX + 16], buf[256];

	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return false;
	return !strncmp(buf, "populated 0", 11) || strstr(buf, "\npopulated 0");
}

static void seed_tree(struct seed *s, const char *dir, unsigned int level, struct place pl,
		      int depth)
{
	char sub[PATH_MAX];
	struct dirent *de;
	struct stat st;
	DIR *d;

	/* an empty subtree (most cgroups a sandbox makes) costs one read */
	if (unpopulated(dir) || stat(dir, &st))
		return;
	place_update(s, &pl, (__u64)st.st_ino, level);
	seed_procs(s, dir, place_sandbox(&pl));
	if (depth >= SEED_DEPTH || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(sub, sizeof(sub), "%s/%s", dir, de->d_name) < (int)sizeof(sub))
			seed_tree(s, sub, level + 1, pl, depth + 1);
	}
	closedir(d);
}

int taskseed__run(const struct taskseed *t)
{
	struct seed s = { .t = t };
	const char *top = paths__attach_path(t->paths);
	unsigned int level = 0;

	if (t->task_fd < 0)
		return t->task_fd;
	if (cgroup__level(t->paths->cgroup_mount, top, &level))
		return -EXDEV;
	seed_tree(&s, top, level, (struct place){ 0 }, 0);
	if (s.n > 0)
		log_info("%d processes already in sandboxes recorded as theirs", s.n);
	return s.n;
}

int taskseed__registered(const struct taskseed *t, const char *path, __u64 sandbox_id)
{
	struct seed s = { .t = t, .correct = true };
	struct place pl = { .reg = sandbox_id, .has_reg = true };
	unsigned int level = 0;

	if (t->task_fd < 0)
		return t->task_fd;
	if (cgroup__level(t->paths->cgroup_mount, path, &level))
		return -EXDEV;
	/* its own registration is read again at its level: the kernel's entry is there already */
	seed_tree(&s, path, level, pl, 0);
	if (s.n > 0)
		log_info("%d processes already in %s recorded as its sandbox's", s.n, path);
	return s.n;
}
