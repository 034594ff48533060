/* task_sandbox for the processes already in sandboxes when egretd starts. */
#ifndef EGRET_TASKSEED_H
#define EGRET_TASKSEED_H

#include <linux/types.h>

/* every process under root gets its sandbox's id (0 in root itself) unless the kernel's
 * programs already recorded one; how many were recorded, or -errno
 */
int taskseed__run(int map_fd, const char *root);
/* fn for every process under root with its sandbox's id (0 in root itself) */
void taskseed__each(const char *root, void (*fn)(void *ctx, int pid, __u64 sandbox_id), void *ctx);

#endif /* EGRET_TASKSEED_H */
