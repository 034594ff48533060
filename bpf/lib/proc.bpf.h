/* The audit stream's process records: an exec with its argv, executable and working directory,
 * a fork, and the exit of a process's last thread; each tags the task with its image's exec_id.
 * A process whose exec record was lost is marked (`exec_lost`), and so are the processes it
 * forks, until an exec of theirs is recorded: their records say their image is unknown, where
 * egretd would otherwise take them for their parent's.
 */
#ifndef EGRET_PROC_BPF_H
#define EGRET_PROC_BPF_H

#include "lib/audit.bpf.h"
#include "lib/caps.bpf.h"

/* `exec_lost_n`, as `exec_lost` gains (1) or loses (-1) a process */
static __always_inline void exec_lost_count(__s64 d)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&exec_lost_n, &zero);

	if (n)
		__sync_fetch_and_add(n, d);
}

/* tgid runs an image whose exec record was lost (counted when it is its own exec's) */
static __always_inline void exec_lost_mark(__u32 tgid, bool own)
{
	__u32 one = 1;
	long err;

	if (own)
		counter_inc(EGRET_CNT_EXEC_LOST);
	err = bpf_map_update_elem(&exec_lost, &tgid, &one, BPF_NOEXIST);
	if (!err)
		exec_lost_count(1);
	else if (err != -EEXIST_)
		counter_inc(EGRET_CNT_EXEC_UNMARKED);
}

/* tgid's image is known again (an exec recorded), or tgid is gone */
static __always_inline void exec_lost_clear(__u32 tgid)
{
	if (hdr_flags(tgid) && !bpf_map_delete_elem(&exec_lost, &tgid))
		exec_lost_count(-1);
}

/* Who runs the new image: a fresh exec_id for the task, its parent's, its ids and creds. */
static __always_inline void exec_fill_task(struct egret_exec_event *e, struct egret_task_info *ti,
					   struct task_struct *task, struct linux_binprm *bprm,
					   __u64 sandbox)
{
	struct task_struct *parent = task->real_parent;
	struct egret_task_info *pti = bpf_task_storage_get(&task_info, parent, 0, 0);
	struct task_caps caps;

	event_fill_hdr_cur(&e->hdr, EGRET_EV_EXEC, sandbox);
	e->hdr.flags &= ~EGRET_HDR_EXEC_LOST; /* a mark is of the image before: this one is known */
	ti->exec_id = exec_id_new();
	if (!ti->start_ns)
		ti->start_ns = task->start_boottime;
	e->exec_id = ti->exec_id;
	e->parent_exec_id = pti ? pti->exec_id : 0;
	e->ppid = parent->tgid;
	e->euid = task->cred->euid.val;
	e->egid = task->cred->egid.val;
	e->flags = 0;
	e->argc = (__u16)bprm->argc;
	/* the new image's creds: begin_new_exec() committed them before this tracepoint */
	task_caps_of(task, &caps);
	e->cap_eff = caps.eff;
	e->cap_prm = caps.prm;
	e->userns_level = caps.userns_level;
	e->env_len = 0;
	e->pad = 0;
}

/* The environment of the image that begins, into e->data at off (at most EGRET_ENV_MAX - 1
 * bytes, the cut flagged), when its file's name is in env_programs; its length.
 */
static __always_inline __u32 exec_env(struct egret_exec_event *e, struct task_struct *task,
				      struct linux_binprm *bprm, __u32 off)
{
	struct env_name key = {};
	unsigned long start, end;
	__u32 n;

	bpf_probe_read_kernel_str(key.name, sizeof(key.name),
				  bprm->file->f_path.dentry->d_name.name);
	if (!bpf_map_lookup_elem(&env_programs, &key))
		return 0;
	start = task->mm->env_start;
	end = task->mm->env_end;
	n = end > start ? end - start : 0;
	if (n > EGRET_ENV_MAX - 1) {
		n = EGRET_ENV_MAX - 1;
		e->flags |= EGRET_EXEC_ENV_CUT;
	}
	if (off > EGRET_ARGS_MAX + 2 * EGRET_PATH_MAX)
		return 0;
	if (n && bpf_probe_read_user(&e->data[off], n & (EGRET_ENV_MAX - 1), (void *)start))
		return 0;
	return n & (EGRET_ENV_MAX - 1);
}

/* The argv block, then the executable's path, then the cwd's, then (for a package manager) the
 * environment, one after the other in e->data;
 * then the record is sent with its exact length: whether it was.
 */
static __always_inline bool exec_send(struct egret_exec_event *e, struct task_struct *task,
				      struct linux_binprm *bprm)
{
	unsigned long arg_start, arg_end;
	__u32 n, off;
	bool cut;

	arg_start = task->mm->arg_start;
	arg_end = task->mm->arg_end;
	n = arg_end > arg_start ? arg_end - arg_start : 0;
	if (n > EGRET_ARGS_MAX) {
		n = EGRET_ARGS_MAX;
		e->flags |= EGRET_EXEC_ARGS_CUT;
	}
	if (n && bpf_probe_read_user(e->data, n & (2 * EGRET_ARGS_MAX - 1), (void *)arg_start))
		n = 0;
	e->args_len = (__u16)n;
	off = n & (2 * EGRET_ARGS_MAX - 1);
	if (off > EGRET_ARGS_MAX)
		return false;
	e->exe_len = (__u16)path_of(&bprm->file->f_path, (char *)&e->data[off], &cut);
	if (cut)
		e->flags |= EGRET_EXEC_EXE_CUT;
	off += e->exe_len & (2 * EGRET_PATH_MAX - 1);
	if (off > EGRET_ARGS_MAX + EGRET_PATH_MAX)
		return false;
	e->cwd_len = (__u16)path_of(&task->fs->pwd, (char *)&e->data[off], &cut);
	if (cut)
		e->flags |= EGRET_EXEC_CWD_CUT;
	off += e->cwd_len & (2 * EGRET_PATH_MAX - 1);
	if (off > EGRET_ARGS_MAX + 2 * EGRET_PATH_MAX)
		return false;
	e->env_len = (__u16)exec_env(e, task, bprm, off);
	off += e->env_len & (EGRET_ENV_MAX - 1);
	if (off > sizeof(e->data))
		return false;
	return event_output(e, offsetof(struct egret_exec_event, data) + off);
}

/* The current task (task) has begun running bprm's image: an exec record, built in a per-CPU
 * buffer and sent with its exact length.
 */
static __always_inline void exec_report(struct task_struct *task, struct linux_binprm *bprm)
{
	struct egret_task_info *ti;
	struct egret_exec_event *e;
	__u32 zero = 0;
	__u64 sandbox;

	if (!in_scope_as(&sandbox))
		return;
	e = bpf_map_lookup_elem(&exec_scratch, &zero);
	ti = bpf_task_storage_get(&task_info, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!e || !ti) {
		exec_lost_mark(task->tgid, true);
		return;
	}
	exec_fill_task(e, ti, task, bprm, sandbox);
	if (exec_send(e, task, bprm))
		exec_lost_clear(task->tgid);
	else
		exec_lost_mark(task->tgid, true);
}

/* A new process (not a thread): it runs its parent's image until it execs. */
static __always_inline void fork_report(struct task_struct *parent, struct task_struct *child)
{
	struct egret_task_info *ti;
	struct egret_fork_event *e;
	__u64 exec_id, sandbox;

	if (child->pid != child->tgid || !in_scope_as(&sandbox))
		return;
	exec_id = exec_id_of(parent);
	ti = bpf_task_storage_get(&task_info, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ti) {
		ti->exec_id = exec_id;
		ti->start_ns = child->start_boottime;
	}
	/* the child runs the image its parent runs, known or not */
	if (hdr_flags(parent->tgid))
		exec_lost_mark(child->tgid, false);
	e = event_reserve_for(sizeof(*e), EGRET_EV_FORK, sandbox);
	if (!e)
		return;
	event_fill_hdr_cur(&e->hdr, EGRET_EV_FORK, sandbox);
	e->exec_id = exec_id;
	e->child_pid = child->tgid;
	e->pad = 0;
	event_submit(e);
}

/* The exit record of the process task's group leader leads. */
static __always_inline void exit_send(struct task_struct *task, __u64 sandbox)
{
	struct egret_task_info *ti;
	struct egret_exit_event *e;

	ti = bpf_task_storage_get(&task_info, task->group_leader, 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ti && __sync_val_compare_and_swap(&ti->exited, 0, 1) != 0)
		return;
	e = event_reserve_for(sizeof(*e), EGRET_EV_EXIT, sandbox);
	if (!e)
		return;
	event_fill_hdr_cur(&e->hdr, EGRET_EV_EXIT, sandbox);
	e->exec_id = ti ? ti->exec_id : 0;
	e->duration_ns = bpf_ktime_get_boot_ns() - task->start_boottime;
	e->exit_code = (__u32)task->exit_code;
	e->pad = 0;
	event_submit(e);
}

/* The last thread of a process ends. Kernels before group_dead was passed (6.1, 6.12) give the
 * task only: do_exit() has counted signal->live down before this tracepoint, so 0 means the
 * group is dead. Threads ending together may each see 0: the group leader's task storage says
 * whether one of them reported it already. An exec-lost mark goes with the process (its pid may
 * be reused), after its exit record carried it.
 */
static __always_inline void exit_report(struct task_struct *task)
{
	__u64 sandbox;

	if (task->signal->live.counter != 0)
		return;
	if (in_scope_as(&sandbox))
		exit_send(task, sandbox);
	exec_lost_clear(task->tgid);
}

#endif /* EGRET_PROC_BPF_H */
