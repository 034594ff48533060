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
#include "paths.h"
#include "policy.h"
#include "sandbox.h"
#include "stream.h"

#define EGRET_DEFAULT_POLICY	 "/etc/egret/egret.policy"
#define EGRET_DEFAULT_LIVE_RULES "/var/lib/egret/live.rules"

/* The maps the engine keeps (bpf/lib/maps.bpf.h). */
struct engine_maps {
	int outer_fd;	   /* policy_v1: slot 0 holds the trie in force */
	int sandboxes_fd;  /* registered sandboxes */
	int rule_names_fd; /* hashes of sandbox names with rules of their own */
	int meta_fd;	   /* sandbox_meta: what each registration said, pinned */
	int budgets_fd;	   /* egress_budgets: sandboxes' egress budgets and counts */
	int budget_n_fd;   /* egress_budget_n: the policy has egress budgets */
};

struct engine {
	const char *policy_path;
	const char *live_path;
	const char *spool_dir; /* checked with the files at every reload (fileperm.h), or NULL */
	const char *cgroup_root;
	const struct egret_paths *paths; /* the cgroups: v2 mount, root, attach point, watched */
	int outer_fd;			 /* policy_v1: slot 0 holds the trie in force */
	int sandboxes_fd;		 /* registered sandboxes */
	int rule_names_fd;		 /* hashes of sandbox names with rules of their own */
	int meta_fd;			 /* sandbox_meta */
	int budgets_fd, budget_n_fd;	 /* egress_budgets, egress_budget_n */
	int trie_fd;			 /* the trie in force (our reference) */
	struct policy pol;		 /* file rules, then live rules */
	/* egretd's one sandbox registry (cgroup id -> name; the collector labels events with it);
	 * the entries flagged ENGINE_SB_INSTALLED are the sandboxes whose rules are installed
	 */
	struct sandbox_names reg;
	size_t installed;      /* how many entries of reg are flagged ENGINE_SB_INSTALLED */
	struct stream *stream; /* NULL until the event pipeline is up */
	char hash[65];
	uint64_t changes; /* rule set changes since start */
	struct engine_file_seen {
		uint64_t dev, ino, size, mtime_ns, ctime_ns;
	} seen;			/* the policy file as last read (engine__reload_if_changed) */
	const char *no_enforce; /* a kernel gap nobody accepted (kfeatures): no enforce mode */
	/* told when a sandbox goes: its cgroup removed, or unregistered (its cgroup stays, and no
	 * cgroup record says it), or found gone by a rescan
	 */
	void (*sandbox_gone)(void *ctx, uint64_t id);
	void *sandbox_gone_ctx;
};

#define ENGINE_SB_INSTALLED  1u	  /* sandbox_entry.flags: its rules are installed */
#define ENGINE_SB_EXEMPT     2u	  /* sandbox_entry.flags: an exempt cgroup (the host's) */
#define ENGINE_SB_UNCLAIMED  4u	  /* sandbox_entry.flags: a root child egretd does not register */
#define ENGINE_SB_TIMED_OUT  8u	  /* sandbox_entry.flags: killed at its policy timeout */
#define ENGINE_SB_OVER_HIGH  16u  /* sandbox_entry.flags: went over memory.high, reported */
#define ENGINE_SB_THROTTLED  32u  /* sandbox_entry.flags: throttled at cpu.max, reported */
#define ENGINE_SB_CPU_BY_RUN 64u  /* sandbox_entry.flags: egretctl run reports its throttling */
#define ENGINE_SB_V1_LIMITS  128u /* sandbox_entry.flags: policy limits in v1 cgroups, kept up */
#define ENGINE_SB_V1_ERROR   256u /* sandbox_entry.flags: they could not be set (logged once) */

int engine__init(struct engine *e, const char *policy_path, const char *live_path,
		 const struct egret_paths *paths, const struct engine_maps *maps);
int engine__start(struct engine *e);
void engine__rescan(struct engine *e);
void engine__announce(struct engine *e);
void engine__sandbox_created(struct engine *e, uint64_t id, const char *name);
/* The kernel's egress budgets (egress_budgets) as the policy in force sets them: of the one
 * sandbox s, or of every registered sandbox (and no other); counts are kept across changes.
 */
void engine__budget_one(struct engine *e, const struct sandbox_entry *s);
/* The policy's limit lines on the installed sandbox s (engine_limits.c): memory, CPU and pids
 * in its v2 cgroup (never raised), its timeout's deadline; on every sandbox. Errors are logged.
 */
void engine__limits_one(struct engine *e, struct sandbox_entry *s);
void engine__sync_limits(struct engine *e);
/* Can the limits p asks for be set here (cgroup v2 offers their controllers)? 0 or -errno
 * with err.
 */
int engine__limits_check(const struct engine *e, const struct policy *p, char *err, size_t errsz);
/* egretctl run's limits for sandbox id (prepare's words): --timeout MS (0: none) from now,
 * enforced like the policy's timeout, the earlier of the two ending it (a sandbox killed at an
 * earlier timeout runs again under the new one); cpu_watched: egretctl reports its CPU
 * throttling itself (egretd does not, for this command).
 */
void engine__run_limits(struct engine *e, uint64_t id, uint64_t ms, bool cpu_watched);
/* Sandboxes past their timeout: frozen, reported, killed (and killed again when something
 * runs in them later); sandboxes over their memory.high (cgroup v2's memory.events) or
 * throttled at their cpu.max (cpu.stat) for the first time, reported. Every second.
 */
void engine__limits_tick(struct engine *e);
/* The sandbox s is gone: its memory.high and CPU throttling summaries, when it had any. */
void engine__limits_gone(struct engine *e, uint64_t id);
void engine__sync_budgets(struct engine *e);
/* A child of egret's root seen (made_now: its mkdir's record; else a rescan): registered as
 * engine__sandbox_created does when engine__claims it (engine_reg.c)
 */
void engine__sandbox_seen(struct engine *e, uint64_t id, const char *name, bool made_now);
/* Whether egretd registers s, a registration or a child of egret's root, under policy p: a
 * child the kernel did not register at its mkdir (a sandbox made it) only when p has rules for
 * its name or (unless made_now, when it holds nothing yet) the host put a process of its own in
 * it; else it is flagged ENGINE_SB_UNCLAIMED and stays a sandbox not registered yet (no
 * network, no entry in the kernel's table)
 */
bool engine__claims(struct engine *e, const struct policy *p, struct sandbox_entry *s,
		    bool made_now);
void engine__sandbox_destroyed(struct engine *e, uint64_t id);
int engine__reload(struct engine *e, const char *actor, const struct ucred *cr, bool discard_live,
		   char *err, size_t errsz);
void engine__refuse_reload(struct engine *e, const char *actor, const struct ucred *cr,
			   const char *why);
/* --reload-on-change: the policy file (as its path resolves now) is not the one last read;
 * reload it then (once per change: a file with an error is not read again until it changes).
 */
void engine__reload_if_changed(struct engine *e);
void engine__actor_of(const struct ucred *cr, char *out, size_t size);
/* The domain rules' verdict on name for the sandbox (NULL: the global rules only). */
int engine__domain_verdict(const struct engine *e, const struct sandbox_entry *sandbox,
			   const char *name, char *rule, size_t size);
const char *engine__sandbox_name(const struct engine *e, uint64_t id);
/* The registry's entry of a sandbox whose rules are installed, NULL for any other. */
const struct sandbox_entry *engine__sandbox(const struct engine *e, uint64_t id);
/* The cgroup directory of an installed sandbox, in egretd's view; -ENOENT for none. */
int engine__sandbox_path(const struct engine *e, uint64_t id, char *out, size_t size);

/* A runtime's registration of a container (egretctl oci-hook, egretd's register command):
 * cgfd is the container's cgroup directory, words (len bytes) the KEY=VALUE words of struct
 * sandbox_meta. The cgroup becomes a sandbox with the rules of every block that selects it,
 * before the call returns; registered again, it takes the new words. 0 and *id, or -errno
 * with err saying why (nothing changed then).
 */
int engine__register(struct engine *e, int cgfd, const char *words, size_t len, uint64_t *id,
		     char *err, size_t errsz);
/* The end of a registration (a runtime's poststop hook; its cgroup's removal): -ENOENT when id
 * was none.
 */
int engine__unregister(struct engine *e, uint64_t id, const char *why);

/* egretd's own cgroup, when it is in a watched subtree or a registered sandbox (egret's own
 * pod under kubepods.slice): exempt, so that egretd keeps its network (its sinks, its upstream).
 */
void engine__exempt_self(struct engine *e);
/* Whether a cgroup directory (egretd's view) is in a sandbox, registered or not yet: below a
 * registered one (not exempt), or below or at a watched one. What the kernel decides, for the
 * control socket's and signals' peers.
 */
bool engine__cgroup_in_sandbox(const struct engine *e, const char *path);

/* An event's Sandbox message with its Container, and the storage its pointers need. */
struct sandbox_pb {
	Egret__V1__Sandbox sb;
	Egret__V1__Container c;
	Egret__V1__ContainerImage img;
	char tag[128];
	char *labels[SANDBOX_LABELS_MAX];
};

/* out from id, name and meta (NULL: a sandbox without a container); out->sb is the message. */
void sandbox_pb__fill(struct sandbox_pb *out, uint64_t id, const char *name,
		      const struct sandbox_meta *meta);
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
