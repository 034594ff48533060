/* What engine.c (the rule set in force, sandboxes, reload) and engine_cmd.c (the control
 * socket's commands) share; nothing outside the engine includes this.
 */
#ifndef EGRET_ENGINE_INT_H
#define EGRET_ENGINE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "engine.h"

/* The name of a sandbox whose rules are installed, NULL for any other. */
const char *engine__installed_name(const struct engine *e, uint64_t id);
/* The cgroup id (inode) of the sandbox directory NAME under the root; false when none. */
bool engine__sandbox_dir_id(const struct engine *e, const char *name, uint64_t *id);
/* Put p (taken over on success) in force, saving the live rules when save_live; on failure
 * nothing changes and err says why.
 */
int engine__commit(struct engine *e, struct policy *p, bool save_live, char *err, size_t errsz);
/* A PolicyChange event (ok unless error is set); nothing before the stream is up. */
void engine__emit_change(struct engine *e, const char *action, const char *actor,
			 const struct ucred *cr, const char *detail, const char *sandbox,
			 const char *before, const char *error);

#endif /* EGRET_ENGINE_INT_H */
