/* Which sandbox a task or socket belongs to: the id of its cgroup's ancestor one level below
 * egret's root cgroup. Programs attach at the root, so they only ever run for the root and its
 * descendants.
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

/* The sandbox that created the socket; a socket keeps it when passed to another process. */
static __always_inline __u64 sandbox_of_sock(struct bpf_sock *sk)
{
	struct egret_sock_meta *m;

	if (!sk)
		return sandbox_of_current();
	m = bpf_sk_storage_get(&sock_meta, sk, 0, 0);
	return m ? m->sandbox_id : sandbox_of_current();
}

static __always_inline void sandbox_stamp_sock(struct bpf_sock *sk)
{
	struct egret_sock_meta *m;

	m = bpf_sk_storage_get(&sock_meta, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
	if (m) {
		__builtin_memset(m, 0, sizeof(*m));
		m->sandbox_id = sandbox_of_current();
	}
}

#endif /* EGRET_SANDBOX_BPF_H */
