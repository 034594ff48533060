/* The policy engine inside egretd: the rule set in force (policy file + live rules), the
 * sandboxes whose rules are installed, and every change to either: reload, live edits over the
 * control socket, sandboxes appearing and going. Each change is built beside the rule set in
 * force and swapped in atomically, and reported as a PolicyChange event.
 */
#ifndef EGRET_ENGINE_H
#define EGRET_ENGINE_H

#include <stdbool.h>
#include <stdint.h>

#include "control.h"
#include "policy.h"
#include "sandbox.h"
#include "stream.h"

#define EGRET_DEFAULT_POLICY	 "/etc/egret/egret.policy"
#define EGRET_DEFAULT_LIVE_RULES "/var/lib/egret/live.rules"

struct engine {
	const char *policy_path;
	const char *live_path;
	const char *spool_dir; /* checked with the files at every reload (fileperm.h), or NULL */
	const char *cgroup_root;
	int outer_fd;	   /* policy_v1: slot 0 holds the trie in force */
	int sandboxes_fd;  /* registered sandboxes */
	int rule_names_fd; /* hashes of sandbox names with rules of their own */
	int trie_fd;	   /* the trie in force (our reference) */
	struct policy pol; /* file rules, then live rules */
	/* egretd's one sandbox registry (cgroup id -> name; the collector labels events with it);
	 * the entries flagged ENGINE_SB_INSTALLED are the sandboxes whose rules are installed
	 */
	struct sandbox_names reg;
	size_t installed;      /* how many entries of reg are flagged ENGINE_SB_INSTALLED */
	struct stream *stream; /* NULL until the event pipeline is up */
	char hash[65];
	uint64_t changes;	/* rule set changes since start */
	const char *no_enforce; /* a kernel gap nobody accepted (kfeatures): no enforce mode */
};

#define ENGINE_SB_INSTALLED 1u /* sandbox_entry.flags: its rules are installed */

int engine__init(struct engine *e, const char *policy_path, const char *live_path,
		 const char *cgroup_root, int outer_fd, int sandboxes_fd, int rule_names_fd);
int engine__start(struct engine *e);
void engine__rescan(struct engine *e);
void engine__announce(struct engine *e);
void engine__sandbox_created(struct engine *e, uint64_t id, const char *name);
void engine__sandbox_destroyed(struct engine *e, uint64_t id);
int engine__reload(struct engine *e, const char *actor, const struct ucred *cr, bool discard_live,
		   char *err, size_t errsz);
void engine__refuse_reload(struct engine *e, const char *actor, const struct ucred *cr,
			   const char *why);
void engine__actor_of(const struct ucred *cr, char *out, size_t size);
int engine__domain_verdict(const struct engine *e, const char *sandbox, const char *name,
			   char *rule, size_t size);
const char *engine__sandbox_name(const struct engine *e, uint64_t id);
const char *engine__rule_text(const struct engine *e, uint32_t id, char *buf, size_t size);
void engine__free(struct engine *e);

/* The control commands: each replies through control__out/control__err and returns 0 or
 * -errno (-EINVAL: the request itself was wrong). */
int engine__cmd_allow(void *ctx, struct control_req *r);
int engine__cmd_deny(void *ctx, struct control_req *r);
int engine__cmd_revoke(void *ctx, struct control_req *r);
int engine__cmd_list(void *ctx, struct control_req *r);
int engine__cmd_reload(void *ctx, struct control_req *r);
int engine__cmd_prepare(void *ctx, struct control_req *r);
void engine__status(struct engine *e, struct control_req *r);

#endif /* EGRET_ENGINE_H */
