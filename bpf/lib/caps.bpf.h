/* A task's capabilities over the host (the initial user namespace), for the exec event's
 * posture and --require-unprivileged. kernel_cap_t is u32[2] up to 6.2 and one u64 from 6.3:
 * the same 8 little-endian bytes, read as one.
 */
#ifndef EGRET_CAPS_BPF_H
#define EGRET_CAPS_BPF_H

#include "lib/events.bpf.h"
#include "egret/audit.h"

struct task_caps {
	__u64 eff;	    /* effective, over the host: 0 in a child user namespace */
	__u64 prm;	    /* permitted, likewise */
	__u32 userns_level; /* of the cred's user namespace; 0: the initial one */
};

static __always_inline void task_caps_of(struct task_struct *t, struct task_caps *c)
{
	const struct cred *cred = BPF_CORE_READ(t, cred);

	c->eff = c->prm = 0;
	c->userns_level = BPF_CORE_READ(cred, user_ns, level);
	if (c->userns_level != 0)
		return;
	bpf_core_read(&c->eff, sizeof(c->eff), &cred->cap_effective);
	bpf_core_read(&c->prm, sizeof(c->prm), &cred->cap_permitted);
}

/* permitted counts too: capset(2) raises effective up to permitted without an exec */
static __always_inline __u64 task_caps_danger(const struct task_caps *c)
{
	return (c->eff | c->prm) & EGRET_CAPS_DANGER;
}

#endif /* EGRET_CAPS_BPF_H */
