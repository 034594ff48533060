/* task_sandbox for the processes already in sandboxes when egretd starts, or in a cgroup when
 * egretd registers it.
 */
#ifndef EGRET_TASKSEED_H
#define EGRET_TASKSEED_H

#include <linux/types.h>

struct egret_paths;

/* The maps a seeding reads and writes, and where the sandboxes are. */
struct taskseed {
	int task_fd;	  /* task_sandbox */
	int sandboxes_fd; /* sandboxes: the registrations the kernel finds */
	const struct egret_paths *paths;
};

/* egretd's start: every process below the attach point that is in a sandbox (registered,
 * exempt or in a watched subtree, as the kernel finds it) gets its sandbox's id unless the
 * programs already recorded one; how many were recorded, or -errno
 */
int taskseed__run(const struct taskseed *t);
/* a registration of the cgroup at path as sandbox_id (EGRET_NO_SANDBOX: exempt, the host's):
 * every process in it and below gets the sandbox it is now in, a record the programs made
 * included (a process pulled in from outside keeps its own); how many, or -errno
 */
int taskseed__registered(const struct taskseed *t, const char *path, __u64 sandbox_id);
/* fn for every process under root with its sandbox's id (0 in root itself) */
void taskseed__each(const char *root, void (*fn)(void *ctx, int pid, __u64 sandbox_id), void *ctx);

#endif /* EGRET_TASKSEED_H */
