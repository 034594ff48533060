/* Confinement helpers for tracepoints: which sandbox a cgroup belongs to, tamper reports. */
#ifndef EGRET_CONFINE_BPF_H
#define EGRET_CONFINE_BPF_H

#include "lib/events.bpf.h"
#include "lib/sandbox.bpf.h"

#define NOT_A_SANDBOX (~0ull) /* the cgroup is not under egret's root */
#define SYS_SECCOMP   1	      /* si_code of a SIGSYS sent by a seccomp filter */

extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type,
				__u64 value) __ksym __weak;

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

/* The sandbox id of a v2 cgroup: 0 for egret's root itself, NOT_A_SANDBOX outside it. */
static __always_inline __u64 sandbox_of_cgroup(struct cgroup *cg)
{
	__u32 level = BPF_CORE_READ(cg, level);

	if (sandbox_level == 0 || level + 1 < sandbox_level ||
	    cgroup_id_at(cg, sandbox_level - 1) != root_cgroup_id)
		return NOT_A_SANDBOX;
	return level + 1 == sandbox_level ? 0 : cgroup_id_at(cg, sandbox_level);
}

static __always_inline void kill_task(struct task_struct *task)
{
	if (bpf_ksym_exists(bpf_send_signal_task))
		bpf_send_signal_task(task, SIGKILL, PIDTYPE_TGID, 0);
}

static __always_inline void tamper_report(__u32 kind, __u64 target, __u32 other_pid, bool killed)
{
	struct egret_tamper_event *e;

	counter_inc(EGRET_CNT_TAMPER);
	e = event_reserve(sizeof(*e));
	if (!e)
		return;
	event_fill_hdr(&e->hdr, EGRET_EV_TAMPER, sandbox_of_current());
	e->target = target;
	e->kind = kind;
	e->other_pid = other_pid;
	e->killed = killed;
	__builtin_memset(e->pad, 0, sizeof(e->pad));
	bpf_ringbuf_submit(e, 0);
}

static __always_inline void cgroup_report(struct cgroup *cg, __u64 id, __u32 op)
{
	struct egret_cgroup_event *e = event_reserve(sizeof(*e));
	const char *name;

	if (!e)
		return;
	event_fill_hdr(&e->hdr, EGRET_EV_CGROUP, id);
	e->cgroup_id = id;
	e->op = op;
	e->pad = 0;
	name = BPF_CORE_READ(cg, kn, name);
	if (bpf_probe_read_kernel_str(e->name, sizeof(e->name), name) < 0)
		e->name[0] = '\0';
	bpf_ringbuf_submit(e, 0);
}

#endif /* EGRET_CONFINE_BPF_H */
