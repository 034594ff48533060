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
/* Flag the registry's entry of id as installed (its rules are in the trie) or not. */
void engine__mark_installed(struct engine *e, uint64_t id, bool on);
/* Put id in `sandboxes`, with EGRET_SB_RULES when rules says so. */
int engine__register_id(struct engine *e, uint64_t id, bool rules);
/* Whether a block of p selects the sandbox (its scope has rules of its own). */
bool engine__has_rules(const struct policy *p, const struct sandbox_entry *s);
/* "sandbox NAME: " before err */
void engine__prefix_err(char *err, size_t errsz, const struct sandbox_entry *s);
/* The registrations an earlier egretd pinned, whose cgroups still exist, into the registry;
 * the others' pins and kernel entries go (engine_reg.c).
 */
void engine__load_registrations(struct engine *e);
/* An exempt cgroup is gone: its entries go. */
void engine__exempt_gone(struct engine *e, uint64_t id);
/* Whether a sandbox's cgroup is still there: a root child's directory, a registration's path. */
bool engine__sandbox_exists(const struct engine *e, const struct sandbox_entry *s);
/* A PolicyChange event (ok unless error is set); nothing before the stream is up. */
void engine__emit_change(struct engine *e, const char *action, const char *actor,
			 const struct ucred *cr, const char *detail, const char *sandbox,
			 const char *before, const char *error);

#endif /* EGRET_ENGINE_INT_H */
