/* Which sandbox a task, socket or cgroup belongs to. A sandbox is a cgroup egretd (or, for the
 * direct children of egret's root, the kernel at mkdir) registered in `sandboxes`, with every
 * cgroup below it: the nearest registered cgroup, this one or an ancestor, names the sandbox.
 * Registration, not depth, makes a sandbox, so a container's cgroup is one wherever its runtime
 * put it, and a pod's at whatever depth its QoS class and cgroup driver give it.
 *
 * A cgroup under a watched subtree (egret's root, and each --watch) that is in no registered
 * sandbox is a sandbox not registered yet: it has an id (its ancestor one level below the
 * watched cgroup) but no entry, so it gets no network (fail closed) until egretd registers it.
 * Everything else is the host's: egret's hooks pass it untouched.
 *
 * Programs attach at the cgroup v2 root (or egretd's --attach), so they run for host tasks too.
 * Socket hooks judge a call by the sandbox of the task making it (sock_addr programs have no
 * helper for the socket's cgroup); the skb backstop by the socket's cgroup.
 */
#ifndef EGRET_SANDBOX_BPF_H
#define EGRET_SANDBOX_BPF_H

#include "lib/maps.bpf.h"

#define NOT_A_SANDBOX EGRET_NO_SANDBOX /* the host's: in no sandbox, under no watched subtree */

/* The watched subtrees, set by egretd before load: [0] is egret's root (its direct children are
 * the sandboxes `egretctl run` makes), the rest --watch. Levels below the v2 root, and ids.
 */
const volatile __u32 watch_n = 0;
const volatile __u32 watch_level[EGRET_WATCH_MAX] = {};
const volatile __u64 watch_id[EGRET_WATCH_MAX] = {};

/* A cgroup's ancestry: id[l] is its ancestor at level l (itself at its own level), for the first
 * n levels; n is its level + 1, at most EGRET_CGROUP_DEPTH (egretd registers nothing deeper).
 */
struct cgroup_line {
	__u64 id[EGRET_CGROUP_DEPTH];
	__u32 n;
};

/* What a registered cgroup makes of the cgroups in it: id for a sandbox, NOT_A_SANDBOX for an
 * exempt one (EGRET_SB_HOST); 0 when id is not registered.
 */
static __always_inline __u64 registration_of(__u64 id)
{
	struct egret_sandbox *sb = bpf_map_lookup_elem(&sandboxes, &id);

	if (!sb)
		return 0;
	return sb->flags & EGRET_SB_HOST ? NOT_A_SANDBOX : id;
}

/* The sandbox of the cgroup whose ancestry this is; 0 for a watched cgroup itself (egret's root
 * itself: the global rules only), NOT_A_SANDBOX for the host.
 */
static __always_inline __u64 line_sandbox(const struct cgroup_line *c)
{
	for (int i = 0; i < EGRET_CGROUP_DEPTH; i++) {
		int l = (int)c->n - 1 - i;
		__u64 id, sb;

		if (l < 1) /* the v2 root is never a sandbox */
			break;
		id = c->id[l & (EGRET_CGROUP_DEPTH - 1)];
		sb = registration_of(id);
		if (sb)
			return sb;
	}
	for (int w = 0; w < EGRET_WATCH_MAX; w++) {
		__u32 lw;

		if (w >= watch_n)
			break;
		lw = watch_level[w];
		if (lw >= c->n || lw >= EGRET_CGROUP_DEPTH - 1 || c->id[lw] != watch_id[w])
			continue;
		return lw + 1 < c->n ? c->id[(lw + 1) & (EGRET_CGROUP_DEPTH - 1)] : 0;
	}
	return NOT_A_SANDBOX;
}

/* The ancestry walks below are global functions (or, for a cgroup pointer, call one): the
 * verifier checks each once per program, not once for every call and every path that reaches
 * it. Inlined, they were most of the instructions it processed in two thirds of egret's
 * programs, five times more on 6.1 than on 6.18. Only a task, socket or cgroup that is not
 * directly in its registered cgroup pays the call. Each is one call deep: 6.1 refuses a chain
 * of frames over 512 bytes, counting each rounded up to 32.
 */
__noinline __u64 sandbox_pick(const struct cgroup_line *c)
{
	return c ? line_sandbox(c) : NOT_A_SANDBOX; /* a global function's pointer may be NULL */
}

/* sandbox_of_current()'s walk: the current task's ancestry, its levels looked up nearest first */
__noinline __u64 current_ancestry_sandbox(void)
{
	struct cgroup_line c = {};

	for (int l = 0; l < EGRET_CGROUP_DEPTH; l++) {
		__u64 id = bpf_get_current_ancestor_cgroup_id(l);

		if (!id)
			break;
		c.id[l] = id;
		c.n = l + 1;
	}
	return line_sandbox(&c);
}

/* The current task's sandbox. A task directly in its registered cgroup (nearly every sandboxed
 * task) costs one lookup; others read their ancestry and look up its levels, nearest first.
 */
static __always_inline __u64 sandbox_of_current(void)
{
	__u64 own = registration_of(bpf_get_current_cgroup_id());

	return own ? own : current_ancestry_sandbox();
}

/* Is the current task in a sandbox, registered or not, or in a watched cgroup itself? */
static __always_inline bool current_in_root(void)
{
	return sandbox_of_current() != NOT_A_SANDBOX;
}

/* sandbox_of_skb()'s walk, the same for the socket of a packet */
__noinline __u64 skb_ancestry_sandbox(struct __sk_buff *skb)
{
	struct cgroup_line c = {};

	for (int l = 0; l < EGRET_CGROUP_DEPTH; l++) {
		__u64 id = bpf_skb_ancestor_cgroup_id(skb, l);

		if (!id)
			break;
		c.id[l] = id;
		c.n = l + 1;
	}
	return line_sandbox(&c);
}

/* The same for the socket of a packet (cgroup_skb). */
static __always_inline __u64 sandbox_of_skb(struct __sk_buff *skb)
{
	__u64 own = registration_of(bpf_skb_cgroup_id(skb));

	return own ? own : skb_ancestry_sandbox(skb);
}

/* cgroup v2 is hierarchy 0, the "0::" line of /proc/PID/cgroup */
static __always_inline bool cgroup_is_v2(struct cgroup *cg)
{
	return BPF_CORE_READ(cg, root, hierarchy_id) == 0;
}

static __always_inline __u64 cgroup_id_at(struct cgroup *cg, __u32 level)
{
	struct cgroup *a = NULL;

	if (level > 255)
		return 0;
	bpf_core_read(&a, sizeof(a), &cg->ancestors[level]);
	return a ? BPF_CORE_READ(a, kn, id) : 0;
}

/* The same for a v2 cgroup the program holds (a task's, a move's destination). Its ancestry is
 * read here, not in a global function: one takes no kernel pointer before 6.8.
 */
static __always_inline __u64 sandbox_of_cgroup(struct cgroup *cg)
{
	struct cgroup_line c = {};
	__u32 level = BPF_CORE_READ(cg, level);
	__u64 own = registration_of(BPF_CORE_READ(cg, kn, id));

	if (own)
		return own;
	c.n = level + 1 < EGRET_CGROUP_DEPTH ? level + 1 : EGRET_CGROUP_DEPTH;
	for (int l = 0; l < EGRET_CGROUP_DEPTH; l++) {
		if (l >= c.n)
			break;
		c.id[l] = cgroup_id_at(cg, l);
	}
	return sandbox_pick(&c);
}

/* The same for a cgroup the program reached through BTF pointers (a tracepoint's task or
 * socket): its id read with direct loads, nearly always a registered sandbox's (one lookup and
 * no helper call); else its ancestry, as sandbox_of_cgroup() reads it.
 */
static __always_inline __u64 sandbox_of_cgroup_btf(struct cgroup *cg)
{
	__u64 own;

	if (!cg)
		return NOT_A_SANDBOX;
	own = registration_of(cg->kn->id);
	return own ? own : sandbox_of_cgroup(cg);
}

/* sandbox_of_current() for a tracing program, whose current task is a BTF pointer: its cgroup
 * read with plain loads, not a helper call; an ancestry walk as sandbox_of_current()'s
 */
static __always_inline __u64 sandbox_of_current_btf(void)
{
	struct cgroup *cg = bpf_get_current_task_btf()->cgroups->dfl_cgrp;
	__u64 own = cg ? registration_of(cg->kn->id) : 0;

	return own ? own : current_ancestry_sandbox();
}

/* Is cg a direct child of egret's root (a sandbox `egretctl run` or a cgroup-parent makes)? */
static __always_inline bool cgroup_in_egret_root(struct cgroup *cg)
{
	return watch_n > 0 && BPF_CORE_READ(cg, level) == watch_level[0] + 1 &&
	       cgroup_id_at(cg, watch_level[0]) == watch_id[0];
}

/* A cgroup's directory name into out[EGRET_CGROUP_NAME_LEN], NUL-terminated; "" without one. */
static __always_inline void cgroup_name_of(struct cgroup *cg, __u8 *out)
{
	out[0] = '\0';
	if (cg &&
	    bpf_probe_read_kernel_str(out, EGRET_CGROUP_NAME_LEN, BPF_CORE_READ(cg, kn, name)) < 0)
		out[0] = '\0';
}

#endif /* EGRET_SANDBOX_BPF_H */
