/* Which sandbox a task belongs to: the id of its cgroup's ancestor one level below egret's root
 * cgroup. Programs attach at the root, so they only ever run for the root and its descendants.
 * Socket hooks judge a call by the sandbox of the task making it (sock_addr programs have no
 * helper for the socket's cgroup); the skb backstop by the socket's cgroup.
 */
#ifndef EGRET_SANDBOX_BPF_H
#define EGRET_SANDBOX_BPF_H

#include "lib/maps.bpf.h"

/* Level of the sandbox cgroups (egret's root cgroup level + 1), and the root's id; set by
 * egretd before load.
 */
const volatile __u32 sandbox_level = 1;
const volatile __u64 root_cgroup_id = 0;

/* Tracepoints run for every task: is current under egret's root? */
static __always_inline bool current_in_root(void)
{
	return sandbox_level > 0 &&
	       bpf_get_current_ancestor_cgroup_id(sandbox_level - 1) == root_cgroup_id;
}

static __always_inline __u64 sandbox_of_current(void)
{
	/* 0 when the task sits in the root cgroup itself (no ancestor at that level) */
	return bpf_get_current_ancestor_cgroup_id(sandbox_level);
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
