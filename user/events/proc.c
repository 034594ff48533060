/* The process cache: open addressing on pid with tombstones, rebuilt when they pile up. Full
 * (more than PROC_MAX_LIVE live processes), new processes are simply not cached: their events
 * go out without exec_id, never dropped.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "proc.h"

int proc_cache__init(struct proc_cache *c)
{
	memset(c, 0, sizeof(*c));
	c->cap = 1024;
	c->slots = calloc(c->cap, sizeof(*c->slots));
	return c->slots ? 0 : -ENOMEM;
}

static size_t home(const struct proc_cache *c, uint32_t pid)
{
	return (size_t)((pid * 0x9e3779b1u) & (c->cap - 1));
}

struct proc_info *proc_cache__get(struct proc_cache *c, uint32_t pid)
{
	for (size_t i = home(c, pid), n = 0; n < c->cap; i = (i + 1) & (c->cap - 1), n++) {
		struct proc_info *p = &c->slots[i];

		if (!p->used)
			return NULL;
		if (p->used > 0 && p->pid == pid)
			return p;
	}
	return NULL;
}

static int rehash(struct proc_cache *c, size_t cap)
{
	struct proc_info *old = c->slots;
	size_t oldcap = c->cap;

	c->slots = calloc(cap, sizeof(*c->slots));
	if (!c->slots) {
		c->slots = old;
		return -ENOMEM;
	}
	c->cap = cap;
	c->live = c->tombs = 0;
	for (size_t i = 0; i < oldcap; i++) {
		if (old[i].used > 0)
			*proc_cache__put(c, old[i].pid) = old[i];
	}
	free(old);
	return 0;
}

/* The entry for pid, created (zeroed) when missing; NULL when the cache is full. */
struct proc_info *proc_cache__put(struct proc_cache *c, uint32_t pid)
{
	struct proc_info *p = proc_cache__get(c, pid);

	if (p)
		return p;
	if ((c->live + c->tombs + 1) * 4 > c->cap * 3) {
		size_t cap = c->live * 4 > c->cap ? c->cap * 2 : c->cap;

		if (c->live >= PROC_MAX_LIVE || rehash(c, cap))
			return NULL;
	}
	for (size_t i = home(c, pid);; i = (i + 1) & (c->cap - 1)) {
		p = &c->slots[i];
		if (p->used > 0)
			continue;
		if (p->used < 0)
			c->tombs--;
		memset(p, 0, sizeof(*p));
		p->used = 1;
		p->pid = pid;
		c->live++;
		return p;
	}
}

void proc_cache__del(struct proc_cache *c, uint32_t pid)
{
	struct proc_info *p = proc_cache__get(c, pid);

	if (!p)
		return;
	p->used = -1;
	c->live--;
	c->tombs++;
}

void proc_cache__free(struct proc_cache *c)
{
	free(c->slots);
	c->slots = NULL;
}
