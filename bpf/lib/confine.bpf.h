/* Confinement helpers for tracepoints: which sandbox a cgroup belongs to, tamper reports. */
#ifndef EGRET_CONFINE_BPF_H
#define EGRET_CONFINE_BPF_H

#include "lib/events.bpf.h"
#include "lib/sandbox.bpf.h"

#include "egret/syscalls32.h"

#define SYS_SECCOMP 1 /* si_code of a SIGSYS sent by a seccomp filter */

#ifndef EGRET_MAPS_TASKS
#error "lib/confine.bpf.h needs the task maps: define EGRET_OBJ_CONFINE or EGRET_OBJ_AUDIT first"
#endif

static __always_inline bool tgid_protected(__u32 tgid)
{
	return bpf_map_lookup_elem(&protected_tgids, &tgid) != NULL;
}

static __always_inline void doomed_add(__s64 n)
{
	__u32 zero = 0;
	__u64 *v = bpf_map_lookup_elem(&doomed, &zero);

	if (v)
		__sync_fetch_and_add(v, n);
}

/* Is the current task the sandbox's own code, which egret judges and may kill? In egret's root,
 * not protected, and not a process pulled in from outside.
 */
static __always_inline bool confined_in(__u64 sandbox)
{
	struct task_struct *t;
	struct task_sandbox *ts;

	if (sandbox == NOT_A_SANDBOX)
		return false;
	t = bpf_get_current_task_btf();
	if (tgid_protected((__u32)t->tgid))
		return false;
	ts = bpf_task_storage_get(&task_sandbox, t->group_leader, 0, 0);
	return !ts || !(ts->flags & TASK_FOREIGN);
}

/* the same, the current task's sandbox looked up */
static __always_inline bool confined(void)
{
	return confined_in(sandbox_of_current());
}

/* The sandbox the task was in before anything it is doing now; NOT_A_SANDBOX when it was in
 * none. A thread without a record of its own is where its process is: egretd records a process
 * that was already in its sandbox (taskseed.c) by its leader, and a thread of it may write
 * cgroup.procs.
 */
static __always_inline __u64 sandbox_before(struct task_struct *task)
{
	struct task_sandbox *ts = bpf_task_storage_get(&task_sandbox, task, 0, 0);

	if (!ts && task->group_leader != task)
		ts = bpf_task_storage_get(&task_sandbox, task->group_leader, 0, 0);
	if (ts)
		return ts->sandbox_id;
	return task == bpf_get_current_task_btf() ? sandbox_of_current() : NOT_A_SANDBOX;
}

/* sandbox_pids: where the task with this pid is now (NOT_A_SANDBOX: in no sandbox) */
static __always_inline void pids_note(__u32 pid, __u64 sandbox_id)
{
	if (task_from_pid_ok())
		return;
	if (sandbox_id == NOT_A_SANDBOX)
		bpf_map_delete_elem(&sandbox_pids, &pid);
	else
		bpf_map_update_elem(&sandbox_pids, &pid, &sandbox_id, BPF_ANY);
}

static __always_inline void remember_sandbox(struct task_struct *task, __u64 sandbox_id)
{
	struct task_sandbox *ts;

	pids_note(task->pid, sandbox_id);
	if (sandbox_id == NOT_A_SANDBOX) {
		bpf_task_storage_delete(&task_sandbox, task);
		return;
	}
	ts = bpf_task_storage_get(&task_sandbox, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ts)
		ts->sandbox_id = sandbox_id;
}

/* May a task of sandbox `from` end up in sandbox `to`? Within its sandbox, or from egret's
 * root itself into any sandbox.
 */
static __always_inline bool move_allowed(__u64 from, __u64 to)
{
	return from == NOT_A_SANDBOX || to == from || (from == 0 && to != NOT_A_SANDBOX);
}

/* Mark the process of a task, which is now in sandbox `where`, for death: egret_reap (or a
 * signal syscall's exit, egret_xkill) kills it from its own context on its way back from the
 * syscall it is in.
 */
static __always_inline void doom_task(struct task_struct *task, __u64 where)
{
	struct task_struct *leader = task->group_leader;
	struct task_sandbox *ts;

	ts = bpf_task_storage_get(&task_sandbox, leader, 0, 0);
	if (!ts) {
		ts = bpf_task_storage_get(&task_sandbox, leader, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
		if (!ts)
			return;
		ts->sandbox_id = where;
	}
	if (__sync_val_compare_and_swap(&ts->doomed, 0, 1) == 0)
		doomed_add(1);
}

/* Kill the process of a task other than the current one, which is now in sandbox `where`:
 * with bpf_send_signal_task (6.13), or else by marking it (a child of clone3 dies on its way
 * out of clone3, before its first instruction).
 */
static __always_inline void kill_task(struct task_struct *task, __u64 where)
{
	if (send_signal_task_ok()) {
		bpf_send_signal_task(task, SIGKILL, PIDTYPE_TGID, 0);
		return;
	}
	doom_task(task, where);
}

/* Kill the current process: whether the signal is on its way. */
static __always_inline bool kill_current(void)
{
	return bpf_send_signal(SIGKILL) == 0;
}

/* Kill the current process, which moved another one (task, now in sandbox `where`) out of its
 * sandbox, and that one: whether the mover's death is on its way. Under css_set_lock a program
 * can queue one signal only (a second is EBUSY): where bpf_send_signal_task (6.13) takes it for
 * the moved process, the mover is marked and dies at its next system call's entry (egret_csys,
 * reap_current); before 6.13 the moved one is marked (egret_reap) and the mover signalled.
 */
static __always_inline bool kill_mover_and_moved(struct task_struct *task, __u64 where)
{
	struct task_struct *cur = bpf_get_current_task_btf();

	if (send_signal_task_ok()) {
		bpf_send_signal_task(task, SIGKILL, PIDTYPE_TGID, 0);
		doom_task(cur, sandbox_of_current());
		return true;
	}
	doom_task(task, where);
	return kill_current();
}

/* A tamper event. A global function, so the verifier checks it once per program, not at each
 * of a program's calls (sigsys, fork and a cgroup move have several).
 */
__noinline int tamper_report_abi(__u32 kind, __u64 target, __u32 other_pid, bool killed, __u8 abi)
{
	struct egret_tamper_event *e;
	__u64 sandbox = sandbox_of_current();

	counter_inc(EGRET_CNT_TAMPER);
	e = event_reserve_for(sizeof(*e), EGRET_EV_TAMPER, sandbox);
	if (!e)
		return 0;
	event_fill_hdr(&e->hdr, EGRET_EV_TAMPER, sandbox);
	e->target = target;
	e->kind = kind;
	e->other_pid = other_pid;
	e->killed = killed;
	e->abi = abi;
	__builtin_memset(e->pad, 0, sizeof(e->pad));
	event_submit(e);
	return 0;
}

static __always_inline void tamper_report(__u32 kind, __u64 target, __u32 other_pid, bool killed)
{
	tamper_report_abi(kind, target, other_pid, killed, EGRET_ABI_NATIVE);
}

/* mount(2) and kin from a sandbox (reported): 1 mount, 2 move_mount, 3 fsmount, 4 umount. A
 * sandbox's mounts before its first exec are its runtime's own set-up (runc's init preparing
 * the root file system, egretctl run covering egret's files), not the sandbox's code.
 */
static __always_inline void mount_attempt(__u64 what)
{
	__u64 sb = sandbox_of_current();

	if (sb == NOT_A_SANDBOX || (sb && !bpf_map_lookup_elem(&sandbox_started, &sb)))
		return;
	tamper_report(EGRET_TAMPER_MOUNT, what, 0, false);
}

/* An exec in a sandbox: from now on the sandbox's own code runs there. */
static __always_inline void sandbox_start(__u64 sb)
{
	__u8 one = 1;

	if (sb && sb != NOT_A_SANDBOX && !bpf_map_lookup_elem(&sandbox_started, &sb))
		bpf_map_update_elem(&sandbox_started, &sb, &one, BPF_NOEXIST);
}

/* ---- where the target of a signal, ptrace, pidfd or /proc access is ---------------------- */

/* sandbox_of_task(): a process pulled into its sandbox from outside, never the sender's peer */
#define FOREIGN_TARGET (~1ull)

/* Tamper PROC_ACCESS targets: what the sandbox did to the process outside */
#define ACCESS_PTRACE	    1
#define ACCESS_PIDFD_GETFD  2
#define ACCESS_VM_READV	    3
#define ACCESS_VM_WRITEV    4
#define ACCESS_PROC_MEM	    5
#define ACCESS_PROC_ENVIRON 6

/* The sandbox of a task (NOT_A_SANDBOX outside every one, FOREIGN_TARGET when pulled in). */
static __always_inline __u64 sandbox_of_task(struct task_struct *t)
{
	struct task_sandbox *ts = bpf_task_storage_get(&task_sandbox, t->group_leader, 0, 0);

	if (ts && (ts->flags & TASK_FOREIGN))
		return FOREIGN_TARGET;
	return sandbox_of_cgroup(BPF_CORE_READ(t, cgroups, dfl_cgrp));
}

/* A task an access names: where it is and its process; found false when there is none. */
struct target {
	__u64 sandbox;
	__u32 tgid;
	bool found;
};

/* Are pid numbers in the current task's system call arguments the host's? Only in the initial
 * pid namespace (a caller in a child one names tasks of that namespace, and is not judged).
 */
static __always_inline bool pids_are_global(void)
{
	struct task_struct *t = bpf_get_current_task_btf();

	return BPF_CORE_READ(t, thread_pid, level) == 0;
}

/* The task with host pid nr: bpf_task_from_pid (6.3), else sandbox_pids, where a pid that is
 * missing counts as outside every sandbox (its process is the host's, or unknown to egret).
 */
static __always_inline void target_of_pid(__u32 nr, struct target *tg)
{
	struct task_struct *t;
	__u64 *sb;

	tg->found = true;
	tg->tgid = nr;
	if (!task_from_pid_ok()) {
		sb = bpf_map_lookup_elem(&sandbox_pids, &nr);
		tg->sandbox = sb ? *sb : NOT_A_SANDBOX;
		return;
	}
	t = bpf_task_from_pid((__s32)nr);
	if (!t) {
		tg->found = false;
		return;
	}
	tg->tgid = (__u32)t->tgid;
	tg->sandbox = sandbox_of_task(t);
	bpf_task_release(t);
}

/* The task of a struct pid (a pidfd's, a /proc inode's): with bpf_task_from_pid by its host
 * number, else from the pid's own task list and that task's cgroup (exact; a pulled-in target
 * is not told apart there).
 */
static __always_inline void target_of_struct_pid(struct pid *pid, struct target *tg)
{
	struct hlist_node *first;
	struct task_struct *t;

	tg->found = false;
	if (!pid)
		return;
	first = BPF_CORE_READ(pid, tasks[PIDTYPE_PID].first);
	if (!first)
		return;
	if (task_from_pid_ok()) {
		target_of_pid(BPF_CORE_READ(pid, numbers[0].nr), tg);
		return;
	}
	t = (struct task_struct *)((void *)first -
				   bpf_core_field_offset(struct task_struct, pid_links));
	tg->found = true;
	tg->tgid = (__u32)BPF_CORE_READ(t, tgid);
	tg->sandbox = sandbox_of_cgroup(BPF_CORE_READ(t, cgroups, dfl_cgrp));
}

/* Is the target in another sandbox than the current task's, or in none? */
static __always_inline bool target_outside(const struct target *tg)
{
	return tg->found && (tg->sandbox == FOREIGN_TARGET || tg->sandbox != sandbox_of_current());
}

#endif /* EGRET_CONFINE_BPF_H */
