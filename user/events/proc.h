/* What egretd knows of live processes, from their exec and fork events: the image each runs,
 * so that every other event of the process carries its exec_id and executable.
 */
#ifndef EGRET_PROC_H
#define EGRET_PROC_H

#include <stdint.h>

#include "htab.h"

#define PROC_EXE_MAX  256
#define PROC_MAX_LIVE 65536

struct proc_info {
	uint32_t pid; /* the key: first */
	uint32_t ppid, euid;
	uint64_t exec_id, parent_exec_id;
	char exe[PROC_EXE_MAX];
};

struct proc_cache {
	struct htab procs; /* of struct proc_info */
};

int proc_cache__init(struct proc_cache *c);
struct proc_info *proc_cache__get(struct proc_cache *c, uint32_t pid);
struct proc_info *proc_cache__put(struct proc_cache *c, uint32_t pid);
void proc_cache__del(struct proc_cache *c, uint32_t pid);
void proc_cache__free(struct proc_cache *c);

#endif /* EGRET_PROC_H */
