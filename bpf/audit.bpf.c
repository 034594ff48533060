// SPDX-License-Identifier: GPL-2.0
/* The audit stream's kernel side: process exec, fork and exit with full argv; file creates,
 * writes, deletes, renames, chmods (and reads of secret paths), each with its absolute path
 * and result; a flow record when a socket that carried traffic closes; OOM kills and failed
 * forks. Records are built once in a per-CPU (or per-task) buffer, filtered by scope and path
 * pattern in the kernel, and sent with their exact length.
 */
#define EGRET_OBJ_AUDIT /* its maps, lib/maps.bpf.h */
#include "lib/file.bpf.h"
#include "lib/flow.bpf.h"
#include "lib/limit.bpf.h"
#include "lib/proc.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* ---- processes (lib/proc.bpf.h) ------------------------------------------------------------ */

SEC("tp_btf/sched_process_exec")
int BPF_PROG(egret_aexec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	exec_report(bpf_get_current_task_btf(), bprm);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(egret_afork, struct task_struct *parent, struct task_struct *child)
{
	fork_report(parent, child);
	return 0;
}

SEC("tp_btf/sched_process_exit")
int BPF_PROG(egret_aexit, struct task_struct *task)
{
	exit_report(task);
	return 0;
}

/* ---- files (lib/file.bpf.h) ----------------------------------------------------------------- */

SEC("tp/syscalls/sys_enter_openat")
int egret_openat(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(open_op(ctx->args[2]), (__u32)ctx->args[2], (int)ctx->args[0],
		   (const char *)ctx->args[1], 0, NULL);
	return 0;
}

SEC("tp/syscalls/sys_enter_open")
int egret_open(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(open_op(ctx->args[1]), (__u32)ctx->args[1], AT_FDCWD_,
		   (const char *)ctx->args[0], 0, NULL);
	return 0;
}

SEC("tp/syscalls/sys_enter_creat")
int egret_creat(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(EGRET_FILE_CREATE, O_CREAT_ | O_WRONLY_ | O_TRUNC_, AT_FDCWD_,
		   (const char *)ctx->args[0], 0, NULL);
	return 0;
}

SEC("tp/syscalls/sys_enter_openat2")
int egret_openat2(struct trace_event_raw_sys_enter *ctx)
{
	__u64 flags = 0;

	bpf_probe_read_user(&flags, sizeof(flags), (void *)ctx->args[2]); /* open_how.flags */
	file_begin(open_op(flags), (__u32)flags, (int)ctx->args[0], (const char *)ctx->args[1], 0,
		   NULL);
	return 0;
}

SEC("tp/syscalls/sys_enter_unlinkat")
int egret_unlinkat(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(ctx->args[2] & AT_REMOVEDIR_ ? EGRET_FILE_RMDIR : EGRET_FILE_UNLINK, 0,
		   (int)ctx->args[0], (const char *)ctx->args[1], 0, NULL);
	return 0;
}

SEC("tp/syscalls/sys_enter_unlink")
int egret_unlink(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(EGRET_FILE_UNLINK, 0, AT_FDCWD_, (const char *)ctx->args[0], 0, NULL);
	return 0;
}

SEC("tp/syscalls/sys_enter_renameat2")
int egret_renameat2(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(EGRET_FILE_RENAME, (__u32)ctx->args[4], (int)ctx->args[0],
		   (const char *)ctx->args[1], (int)ctx->args[2], (const char *)ctx->args[3]);
	return 0;
}

SEC("tp/syscalls/sys_enter_renameat")
int egret_renameat(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(EGRET_FILE_RENAME, 0, (int)ctx->args[0], (const char *)ctx->args[1],
		   (int)ctx->args[2], (const char *)ctx->args[3]);
	return 0;
}

SEC("tp/syscalls/sys_enter_rename")
int egret_rename(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(EGRET_FILE_RENAME, 0, AT_FDCWD_, (const char *)ctx->args[0], AT_FDCWD_,
		   (const char *)ctx->args[1]);
	return 0;
}

SEC("tp/syscalls/sys_enter_fchmodat")
int egret_fchmodat(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(EGRET_FILE_CHMOD, (__u32)ctx->args[2], (int)ctx->args[0],
		   (const char *)ctx->args[1], 0, NULL);
	return 0;
}

SEC("tp/syscalls/sys_enter_fchmodat2")
int egret_fchmodat2(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(EGRET_FILE_CHMOD, (__u32)ctx->args[2], (int)ctx->args[0],
		   (const char *)ctx->args[1], 0, NULL);
	return 0;
}

SEC("tp/syscalls/sys_enter_chmod")
int egret_chmod(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(EGRET_FILE_CHMOD, (__u32)ctx->args[1], AT_FDCWD_, (const char *)ctx->args[0], 0,
		   NULL);
	return 0;
}

SEC("tp/syscalls/sys_enter_fchmod")
int egret_fchmod(struct trace_event_raw_sys_enter *ctx)
{
	file_begin(EGRET_FILE_CHMOD, (__u32)ctx->args[1], (int)ctx->args[0], NULL, 0, NULL);
	return 0;
}

/* One program ends every file call above, whichever it was: attached here to sys_exit_openat
 * and by the loader to the exit of each other call (user/kernel/loader.c, also_attach), under
 * the names the copies per call had. Verified once instead of thirteen times.
 */
SEC("tp/syscalls/sys_exit_openat")
int egret_xopenat(struct trace_event_raw_sys_exit *ctx)
{
	file_end(ctx->ret);
	return 0;
}

/* The same file calls made through a compat entry (ia32 int 0x80 or sysenter, x32), which the
 * syscalls tracepoints above never see: --compat judge only (confine.bpf.c kills a sandbox's
 * first compat call otherwise). Two more programs on every syscall of the host, each returning
 * after two loads for a native call.
 */
SEC("tp_btf/sys_enter")
int BPF_PROG(egret_acsys, struct pt_regs *regs, long id)
{
	compat_file_begin(regs, id);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(egret_acxsys, struct pt_regs *regs, long ret)
{
	compat_file_end(regs, ret);
	return 0;
}

/* ---- flows (lib/flow.bpf.h) ----------------------------------------------------------------- */

SEC("cgroup/sock_release")
int egret_sock_end(struct bpf_sock *sk)
{
	flow_end_udp(sk);
	return 1;
}

SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(egret_tcp_end, struct sock *sk)
{
	flow_end_tcp(sk);
	return 0;
}

SEC("cgroup_skb/ingress")
int egret_ingress(struct __sk_buff *skb)
{
	flow_count_udp_in(skb);
	return 1;
}

/* ---- resource limits (lib/limit.bpf.h) ------------------------------------------------------ */

SEC("tp_btf/mark_victim")
int BPF_PROG(egret_oom, struct task_struct *task, uid_t uid)
{
	oom_report(task, uid);
	return 0;
}

#define FORK_EXIT(sys, prog)                           \
	SEC("tp/syscalls/sys_exit_" #sys)              \
	int prog(struct trace_event_raw_sys_exit *ctx) \
	{                                              \
		fork_failed(ctx->ret);                 \
		return 0;                              \
	}

FORK_EXIT(clone, egret_xclone)
FORK_EXIT(clone3, egret_xclone3)
FORK_EXIT(fork, egret_xfork)
FORK_EXIT(vfork, egret_xvfork)

/* ---- tamper attempts (reported) ------------------------------------------------------------- */

SEC("tp/syscalls/sys_enter_mount")
int egret_mount(struct trace_event_raw_sys_enter *ctx)
{
	mount_attempt(1);
	return 0;
}

SEC("tp/syscalls/sys_enter_move_mount")
int egret_movemount(struct trace_event_raw_sys_enter *ctx)
{
	mount_attempt(2);
	return 0;
}

SEC("tp/syscalls/sys_enter_fsmount")
int egret_fsmount(struct trace_event_raw_sys_enter *ctx)
{
	mount_attempt(3);
	return 0;
}

SEC("tp/syscalls/sys_enter_umount")
int egret_umount(struct trace_event_raw_sys_enter *ctx)
{
	mount_attempt(4);
	return 0;
}

/* ---- start-up self-test ------------------------------------------------------------------- */

/* Whether the path in `selftest` would be reported: egretd runs this with BPF_PROG_TEST_RUN
 * before it attaches anything and compares with what the patterns say in user space, so a
 * verifier that mis-compiles the matcher stops egretd instead of silencing file events. Never
 * attached.
 */
SEC("syscall")
int egret_selftest(void *ctx)
{
	struct egret_selftest *t;
	__u32 zero = 0;

	t = bpf_map_lookup_elem(&selftest, &zero);
	if (!t)
		return -1;
	return path_wanted((const struct path_window *)t->path, t->len, t->kind);
}
