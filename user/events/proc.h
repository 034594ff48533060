/* What egretd knows of live processes, from their exec and fork events: the image each runs,
 * so that every other event of the process carries its exec_id and executable; or that the
 * record of its image's exec was lost, so that its events carry no image rather than its
 * parent's.
 */
#ifndef EGRET_PROC_H
#define EGRET_PROC_H

#include <stdbool.h>
#include <stdint.h>

#include "htab.h"

#define PROC_EXE_MAX  256
#define PROC_MAX_LIVE 65536

struct proc_info {
	uint32_t pid; /* the key: first */
	uint32_t ppid, euid;
	uint64_t exec_id, parent_exec_id;
	bool inherited; /* the image came with a fork: the parent's, as the child runs it too */
	bool exec_lost; /* the record of its exec was lost: exe and exec_id unknown */
	char exe[PROC_EXE_MAX];
};

struct proc_cache {
	struct htab procs; /* of struct proc_info */
};

int proc_cache__init(struct proc_cache *c);
struct proc_info *proc_cache__get(struct proc_cache *c, uint32_t pid);
struct proc_info *proc_cache__put(struct proc_cache *c, uint32_t pid);
void proc_cache__del(struct proc_cache *c, uint32_t pid);
/* The kernel says pid's exec record was lost: its image is unknown from now on (until an exec
 * of it is seen), never the one it ran before, which a forked process took from its parent. The
 * entry, created when missing; NULL when the cache is full.
 */
struct proc_info *proc_cache__exec_lost(struct proc_cache *c, uint32_t pid);
void proc_cache__free(struct proc_cache *c);

#endif /* EGRET_PROC_H */
