/* The audit stream's resource limit records: a task the OOM killer picked, with its memory and
 * its memory cgroup's limit; a fork refused because a pids cgroup was full.
 */
#ifndef EGRET_LIMIT_BPF_H
#define EGRET_LIMIT_BPF_H

#include "lib/audit.bpf.h"

/* The OOM killer's victim, with what it used and what its memory cgroup allows. */
static __always_inline void oom_report(struct task_struct *task, uid_t uid)
{
	struct cgroup *cg = BPF_CORE_READ(task, cgroups, dfl_cgrp);
	struct egret_limit_event *e;
	struct mm_struct *mm;
	struct mem_cgroup *memcg;
	__u64 sandbox = sandbox_of_cgroup(cg), pages = 0;
	int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);

	if (sandbox == NOT_A_SANDBOX && !audit_host)
		return;
	e = event_reserve_for(sizeof(*e), EGRET_EV_LIMIT, sandbox);
	if (!e)
		return;
	event_fill_hdr(&e->hdr, EGRET_EV_LIMIT, sandbox);
	/* the header describes the victim, not whoever triggered the kill */
	event_hdr_task(&e->hdr, task->tgid, task->pid);
	e->hdr.uid = uid;
	bpf_probe_read_kernel_str(e->hdr.comm, sizeof(e->hdr.comm), task->comm);
	e->exec_id = exec_id_of(task);
	mm = task->mm;
	if (mm) {
		pages += MM_RSS(mm, 0); /* file */
		pages += MM_RSS(mm, 1); /* anon */
		pages += MM_RSS(mm, 3); /* shmem */
	}
	e->usage = pages * 4096;
	memcg = (struct mem_cgroup *)BPF_CORE_READ(task, cgroups, subsys[id & 15]);
	e->limit = memcg ? BPF_CORE_READ(memcg, memory.max) * 4096 : 0;
	cgroup_name_of(memcg ? BPF_CORE_READ(memcg, css.cgroup) : NULL, e->cgroup);
	e->kind = EGRET_LIMIT_OOM_KILL;
	e->period_s = 0;
	event_submit(e);
}

#define PIDS_LEVELS 8 /* pids cgroups above the task's own that are checked */

/* The task's pids cgroup, or the first of the PIDS_LEVELS above it, that is full, with its
 * count and limit; NULL when none is.
 */
static __always_inline struct cgroup_subsys_state *pids_full(struct task_struct *task, __s64 *usage,
							     __s64 *limit)
{
	int id = bpf_core_enum_value(enum cgroup_subsys_id, pids_cgrp_id);
	struct cgroup_subsys_state *css;

	css = BPF_CORE_READ(task, cgroups, subsys[id & 15]);
	for (int i = 0; i < PIDS_LEVELS && css; i++) {
		struct pids_cgroup *p = container_of(css, struct pids_cgroup, css);

		*usage = BPF_CORE_READ(p, counter.counter);
		*limit = BPF_CORE_READ(p, limit.counter);
		if (*usage >= *limit)
			break;
		css = BPF_CORE_READ(css, parent);
	}
	if (!css || *usage < *limit)
		return NULL;
	return css;
}

/* A fork that failed with EAGAIN: a pids limit if the task's pids cgroup, or one above it, is
 * full. Checked here, at the syscall's exit, while the cgroup still is; after a failed charge
 * the counter stays at the limit until something in it exits. RLIMIT_NPROC and memory also
 * give EAGAIN: no full pids cgroup, no event.
 */
static __always_inline void fork_failed(long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct cgroup_subsys_state *css;
	struct egret_limit_event *e;
	__s64 usage = 0, limit = 0;
	__u64 sandbox;

	if (ret != -EAGAIN_ || !in_scope())
		return;
	css = pids_full(task, &usage, &limit);
	if (!css)
		return;
	sandbox = sandbox_of_current();
	e = event_reserve_for(sizeof(*e), EGRET_EV_LIMIT, sandbox);
	if (!e)
		return;
	event_fill_hdr(&e->hdr, EGRET_EV_LIMIT, sandbox);
	e->exec_id = exec_id_of(task);
	e->usage = usage;
	e->limit = limit;
	e->kind = EGRET_LIMIT_PIDS;
	e->period_s = 0;
	cgroup_name_of(BPF_CORE_READ(css, cgroup), e->cgroup);
	event_submit(e);
}

#endif /* EGRET_LIMIT_BPF_H */
