/* A task's capabilities over the host (the initial user namespace), for the exec event's
 * posture and --require-unprivileged. kernel_cap_t is u32[2] up to 6.2 and one u64 from 6.3:
 * the same 8 little-endian bytes, read as the kernel has them (CO-RE).
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

/* kernel_cap_t before 6.3 */
struct kernel_cap_struct___u32 {
	__u32 cap[2];
} __attribute__((preserve_access_index));

static __always_inline __u64 cap_bits(const kernel_cap_t *c)
{
	const struct kernel_cap_struct___u32 *old = (const void *)c;

	if (bpf_core_field_exists(c->val))
		return c->val;
	return old->cap[0] | (__u64)old->cap[1] << 32;
}

/* t: a BTF pointer (a tracepoint's task, the current one): plain loads, no helper call */
static __always_inline void task_caps_of(struct task_struct *t, struct task_caps *c)
{
	const struct cred *cred = t->cred;

	c->eff = c->prm = 0;
	c->userns_level = cred->user_ns->level;
	if (c->userns_level != 0)
		return;
	c->eff = cap_bits(&cred->cap_effective);
	c->prm = cap_bits(&cred->cap_permitted);
}

/* permitted counts too: capset(2) raises effective up to permitted without an exec */
static __always_inline __u64 task_caps_danger(const struct task_caps *c)
{
	return (c->eff | c->prm) & EGRET_CAPS_DANGER;
}

#endif /* EGRET_CAPS_BPF_H */
