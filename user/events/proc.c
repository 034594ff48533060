/* The process cache: a hash table on pid. Full (PROC_MAX_LIVE live processes), new processes
 * are simply not cached: their events go out without exec_id, never dropped. pid 0 is never
 * cached (it is the table's empty key).
 */
#include <errno.h>
#include <stdbool.h>

#include "proc.h"

int proc_cache__init(struct proc_cache *c)
{
	return htab__init(&c->procs, sizeof(struct proc_info), sizeof(uint32_t), 1024);
}

struct proc_info *proc_cache__get(struct proc_cache *c, uint32_t pid)
{
	return htab__find(&c->procs, &pid);
}

/* The entry for pid, created (zeroed) when missing; NULL when the cache is full. An insert may
 * move entries: an earlier pointer into the cache is not valid after it. */
struct proc_info *proc_cache__put(struct proc_cache *c, uint32_t pid)
{
	struct proc_info *p = htab__find(&c->procs, &pid);

	if (p || c->procs.used >= PROC_MAX_LIVE)
		return p;
	return htab__insert(&c->procs, &pid, NULL);
}

void proc_cache__del(struct proc_cache *c, uint32_t pid)
{
	htab__remove(&c->procs, &pid);
}

struct proc_info *proc_cache__exec_lost(struct proc_cache *c, uint32_t pid)
{
	struct proc_info *p = pid ? proc_cache__put(c, pid) : NULL;

	if (!p || p->exec_lost)
		return p;
	/* the image it ran before the exec is the one its new image's parent_exec_id names: its
	 * parent's for a forked child, else its own's parent
	 */
	if (p->inherited)
		p->parent_exec_id = p->exec_id;
	p->exec_id = 0;
	p->exe[0] = '\0';
	p->inherited = false;
	p->exec_lost = true;
	return p;
}

void proc_cache__free(struct proc_cache *c)
{
	htab__free(&c->procs);
}
