// SPDX-License-Identifier: GPL-2.0
/* The audit stream's kernel side: process exec, fork and exit with full argv; file creates,
 * writes, deletes, renames, chmods (and reads of secret paths), each with its absolute path
 * and result; a flow record when a socket that carried traffic closes; OOM kills and failed
 * forks. Records are built once in a per-CPU (or per-task) buffer, filtered by scope and path
 * pattern in the kernel, and sent with their exact length.
 */
#define EGRET_OBJ_AUDIT /* its maps, lib/maps.bpf.h */
#include "lib/audit.bpf.h"
#include "lib/caps.bpf.h"
#include "lib/dns.bpf.h"
#include "lib/syscalls32.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* ---- processes ---------------------------------------------------------------------------- */

SEC("tp_btf/sched_process_exec")
int BPF_PROG(egret_aexec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct task_struct *task = bpf_get_current_task_btf(), *parent;
	struct egret_task_info *ti, *pti;
	struct egret_exec_event *e;
	unsigned long arg_start, arg_end;
	struct task_caps caps;
	__u32 zero = 0, n, off;
	bool cut;

	if (!in_scope())
		return 0;
	e = bpf_map_lookup_elem(&exec_scratch, &zero);
	ti = bpf_task_storage_get(&task_info, task, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!e || !ti)
		return 0;
	parent = task->real_parent;
	pti = bpf_task_storage_get(&task_info, parent, 0, 0);
	event_fill_hdr(&e->hdr, EGRET_EV_EXEC, sandbox_of_current());
	ti->exec_id = exec_id_new();
	if (!ti->start_ns)
		ti->start_ns = task->start_boottime;
	e->exec_id = ti->exec_id;
	e->parent_exec_id = pti ? pti->exec_id : 0;
	e->ppid = parent->tgid;
	e->euid = BPF_CORE_READ(task, cred, euid.val);
	e->egid = BPF_CORE_READ(task, cred, egid.val);
	e->flags = 0;
	e->argc = (__u16)bprm->argc;
	/* the new image's creds: begin_new_exec() committed them before this tracepoint */
	task_caps_of(task, &caps);
	e->cap_eff = caps.eff;
	e->cap_prm = caps.prm;
	e->userns_level = caps.userns_level;
	e->pad = 0;
	arg_start = BPF_CORE_READ(task, mm, arg_start);
	arg_end = BPF_CORE_READ(task, mm, arg_end);
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
		return 0;
	e->exe_len = (__u16)path_of(&bprm->file->f_path, (char *)&e->data[off], &cut);
	if (cut)
		e->flags |= EGRET_EXEC_EXE_CUT;
	off += e->exe_len & (2 * EGRET_PATH_MAX - 1);
	if (off > EGRET_ARGS_MAX + EGRET_PATH_MAX)
		return 0;
	e->cwd_len = (__u16)path_of(&task->fs->pwd, (char *)&e->data[off], &cut);
	if (cut)
		e->flags |= EGRET_EXEC_CWD_CUT;
	off += e->cwd_len & (2 * EGRET_PATH_MAX - 1);
	if (off > sizeof(e->data))
		return 0;
	event_output(e, offsetof(struct egret_exec_event, data) + off);
	return 0;
}

SEC("tp_btf/sched_process_fork")
int BPF_PROG(egret_afork, struct task_struct *parent, struct task_struct *child)
{
	struct egret_task_info *ti;
	struct egret_fork_event *e;
	__u64 exec_id;

	if (child->pid != child->tgid || !in_scope())
		return 0;
	exec_id = exec_id_of(parent);
	ti = bpf_task_storage_get(&task_info, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ti) {
		ti->exec_id = exec_id;
		ti->start_ns = child->start_boottime;
	}
	e = event_reserve(sizeof(*e));
	if (!e)
		return 0;
	event_fill_hdr(&e->hdr, EGRET_EV_FORK, sandbox_of_current());
	e->exec_id = exec_id;
	e->child_pid = child->tgid;
	e->pad = 0;
	event_submit(e);
	return 0;
}

/* The last thread of a process ends. Kernels before group_dead was passed (6.1, 6.12) give the
 * task only: do_exit() has counted signal->live down before this tracepoint, so 0 means the
 * group is dead. Threads ending together may each see 0: the group leader's task storage says
 * whether one of them reported it already.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(egret_aexit, struct task_struct *task)
{
	struct egret_task_info *ti;
	struct egret_exit_event *e;

	if (BPF_CORE_READ(task, signal, live.counter) != 0 || !in_scope())
		return 0;
	ti = bpf_task_storage_get(&task_info, task->group_leader, 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ti && __sync_val_compare_and_swap(&ti->exited, 0, 1) != 0)
		return 0;
	e = event_reserve(sizeof(*e));
	if (!e)
		return 0;
	event_fill_hdr(&e->hdr, EGRET_EV_EXIT, sandbox_of_current());
	e->exec_id = ti ? ti->exec_id : 0;
	e->duration_ns = bpf_ktime_get_boot_ns() - task->start_boottime;
	e->exit_code = (__u32)task->exit_code;
	e->pad = 0;
	event_submit(e);
	return 0;
}

/* ---- files ---------------------------------------------------------------------------------- */

static __always_inline void file_begin(__u16 op, __u32 flags, int dfd, const char *name, int dfd2,
				       const char *name2)
{
	struct pending_file *pf;

	if (!in_scope())
		return;
	/* reads are reported only for paths a read pattern names */
	if (op == EGRET_FILE_READ && !have_read_patterns)
		return;
	pf = bpf_task_storage_get(&pending_file, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!pf)
		return;
	pf->active = 1;
	pf->e.op = op;
	pf->e.flags = flags;
	pf->dfd = dfd;
	pf->name = (__u64)name;
	pf->dfd2 = dfd2;
	pf->name2 = (__u64)name2;
}

/* "dir/name": the directory of dfd (or the cwd), then the name as the caller gave it; an
 * absolute name alone.
 */
static __always_inline __u32 join_path(char *out, int dfd, __u64 name, bool *cut)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 dlen = 0;
	char first = 0;
	long n;

	bpf_probe_read_user(&first, 1, (void *)name);
	if (first != '/') {
		if (dfd == AT_FDCWD_) {
			dlen = path_of(&task->fs->pwd, out, cut);
		} else {
			struct file *f = fd_file(dfd);

			if (f)
				dlen = path_of(&f->f_path, out, cut);
		}
		if (dlen > 1 && dlen < EGRET_PATH_MAX - 1)
			out[dlen++ & (EGRET_PATH_MAX - 1)] = '/';
		else if (dlen >= EGRET_PATH_MAX - 1)
			return dlen;
		else
			dlen = dlen == 1 ? 1 : 0;
	}
	/* clang knows dlen is in range here and would drop the mask, which 6.12's verifier needs
	 * to bound the read ("R2 unbounded memory access"): hide what it knows
	 */
	asm volatile("" : "+r"(dlen));
	dlen &= EGRET_PATH_MAX - 1;
	n = bpf_probe_read_user_str(out + dlen, EGRET_PATH_MAX - dlen, (void *)name);
	if (n <= 0)
		return dlen;
	if (dlen + n >= EGRET_PATH_MAX)
		*cut = true;
	return dlen + n - 1; /* without the NUL */
}

static __always_inline bool under_bpffs(const char *p, __u32 len)
{
	return len >= 11 && p[0] == '/' && p[1] == 's' && p[2] == 'y' && p[3] == 's' &&
	       p[4] == '/' && p[5] == 'f' && p[6] == 's' && p[7] == '/' && p[8] == 'b' &&
	       p[9] == 'p' && p[10] == 'f' && (len == 11 || p[11] == '/');
}

/* At the syscall's exit: resolve the path(s), filter, send. An opened file is named by what
 * was opened (symlinks and .. resolved); a deleted or renamed one, and an open that failed
 * (EACCES, ENOENT...), by its parent and name as given.
 */
static __always_inline void file_end(long ret)
{
	struct pending_file *pf;
	struct egret_file_event *e;
	__u32 len2 = 0, size;
	bool cut = false, cut2 = false, bpffs;
	__u8 kind;

	pf = bpf_task_storage_get(&pending_file, bpf_get_current_task_btf(), 0, 0);
	if (!pf || !pf->active)
		return;
	pf->active = 0;
	e = &pf->e;
	/* a failed open (read or write) is named by the path as given, as a delete is */
	if ((e->op == EGRET_FILE_CREATE || e->op == EGRET_FILE_WRITE || e->op == EGRET_FILE_READ) &&
	    ret >= 0) {
		struct file *f = fd_file((int)ret);

		if (!f)
			return;
		e->path_len = (__u16)path_of(&f->f_path, (char *)e->data, &cut);
	} else if (pf->name) {
		e->path_len = (__u16)join_path((char *)e->data, pf->dfd, pf->name, &cut);
	} else {
		struct file *f = fd_file(pf->dfd); /* fchmod */

		if (!f)
			return;
		e->path_len = (__u16)path_of(&f->f_path, (char *)e->data, &cut);
	}
	if (e->path_len > EGRET_PATH_MAX)
		return;
	kind = e->op == EGRET_FILE_READ ? EGRET_PATTERN_READ : EGRET_PATTERN_WRITE;
	bpffs = under_bpffs((char *)e->data, e->path_len);
	/* a sandbox removing a pin dies (after this first one: the body has run); the keeper
	 * puts the pin back
	 */
	if (bpffs &&
	    (e->op == EGRET_FILE_UNLINK || e->op == EGRET_FILE_RMDIR ||
	     e->op == EGRET_FILE_RENAME) &&
	    confined())
		tamper_report(EGRET_TAMPER_PIN_REMOVED, e->op, 0, kill_current());
	/* skip patterns thin out writes; a read pattern is a precise ask and always wins */
	if (!bpffs && !path_wanted((const struct path_window *)e->data, e->path_len, kind))
		return;
	if (e->op == EGRET_FILE_RENAME && pf->name2)
		len2 = join_path((char *)&e->data[EGRET_PATH_MAX], pf->dfd2, pf->name2, &cut2);
	e->path2_len = (__u16)(len2 & (EGRET_PATH_MAX * 2 - 1));
	e->cut = (cut ? EGRET_FILE_PATH_CUT : 0) | (cut2 ? EGRET_FILE_PATH2_CUT : 0) |
		 (bpffs ? EGRET_FILE_BPFFS : 0);
	e->result = (__s32)ret;
	event_fill_hdr(&e->hdr, EGRET_EV_FILE, sandbox_of_current());
	e->exec_id = exec_id_of(bpf_get_current_task_btf());
	/* the path, then the new path of a rename at a fixed offset */
	size = offsetof(struct egret_file_event, data) +
	       (e->op == EGRET_FILE_RENAME ? EGRET_PATH_MAX + e->path2_len : e->path_len);
	if (size > sizeof(*e))
		return;
	event_output(e, size);
}

static __always_inline __u16 open_op(__u64 flags)
{
	if (flags & O_CREAT_)
		return EGRET_FILE_CREATE;
	if (flags & (O_WRONLY_ | O_RDWR_ | O_TRUNC_))
		return EGRET_FILE_WRITE;
	return EGRET_FILE_READ;
}

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

/* one exit program per syscall above (program names stay within the kernel's 15 characters) */
#define FILE_EXIT(sys, prog)                           \
	SEC("tp/syscalls/sys_exit_" #sys)              \
	int prog(struct trace_event_raw_sys_exit *ctx) \
	{                                              \
		file_end(ctx->ret);                    \
		return 0;                              \
	}

FILE_EXIT(openat, egret_xopenat)
FILE_EXIT(open, egret_xopen)
FILE_EXIT(creat, egret_xcreat)
FILE_EXIT(openat2, egret_xopenat2)
FILE_EXIT(unlinkat, egret_xunlinkat)
FILE_EXIT(unlink, egret_xunlink)
FILE_EXIT(renameat2, egret_xrename2)
FILE_EXIT(renameat, egret_xrenameat)
FILE_EXIT(rename, egret_xrename)
FILE_EXIT(fchmodat, egret_xfchmodat)
FILE_EXIT(fchmodat2, egret_xfchmod2)
FILE_EXIT(chmod, egret_xchmod)
FILE_EXIT(fchmod, egret_xfchmod)

/* The same file calls made through a compat entry (ia32 int 0x80 or sysenter, x32), which the
 * syscalls tracepoints above never see: --compat judge only (confine.bpf.c kills a sandbox's
 * first compat call otherwise). Two more programs on every syscall of the host, each returning
 * after two loads for a native call.
 */
struct compat_file {
	__u16 op;
	__u32 flags;
	int dfd, dfd2;
	__u64 name, name2;
};

/* the native program's file_begin() arguments, from the compat call's; false: not a file call */
static __always_inline bool compat_file_args(__u32 action, const __u64 a[5], struct compat_file *c)
{
	__u64 how_flags = 0;

	c->dfd = c->dfd2 = AT_FDCWD_;
	c->name2 = 0;
	switch (action) {
	case EGRET_CC_OPEN:
		c->op = open_op(a[1]);
		c->flags = (__u32)a[1];
		c->name = a[0];
		return true;
	case EGRET_CC_CREAT:
		c->op = EGRET_FILE_CREATE;
		c->flags = O_CREAT_ | O_WRONLY_ | O_TRUNC_;
		c->name = a[0];
		return true;
	case EGRET_CC_OPENAT:
	case EGRET_CC_OPENAT2:
		if (action == EGRET_CC_OPENAT2)
			bpf_probe_read_user(&how_flags, sizeof(how_flags), (void *)a[2]);
		else
			how_flags = a[2];
		c->op = open_op(how_flags);
		c->flags = (__u32)how_flags;
		c->dfd = (int)a[0];
		c->name = a[1];
		return true;
	case EGRET_CC_UNLINK:
		c->op = EGRET_FILE_UNLINK;
		c->flags = 0;
		c->name = a[0];
		return true;
	case EGRET_CC_UNLINKAT:
		c->op = a[2] & AT_REMOVEDIR_ ? EGRET_FILE_RMDIR : EGRET_FILE_UNLINK;
		c->flags = 0;
		c->dfd = (int)a[0];
		c->name = a[1];
		return true;
	case EGRET_CC_RENAME:
		c->op = EGRET_FILE_RENAME;
		c->flags = 0;
		c->name = a[0];
		c->name2 = a[1];
		return true;
	case EGRET_CC_RENAMEAT:
	case EGRET_CC_RENAMEAT2:
		c->op = EGRET_FILE_RENAME;
		c->flags = action == EGRET_CC_RENAMEAT2 ? (__u32)a[4] : 0;
		c->dfd = (int)a[0];
		c->name = a[1];
		c->dfd2 = (int)a[2];
		c->name2 = a[3];
		return true;
	case EGRET_CC_CHMOD:
		c->op = EGRET_FILE_CHMOD;
		c->flags = (__u32)a[1];
		c->name = a[0];
		return true;
	case EGRET_CC_FCHMOD:
		c->op = EGRET_FILE_CHMOD;
		c->flags = (__u32)a[1];
		c->dfd = (int)a[0];
		c->name = 0;
		return true;
	case EGRET_CC_FCHMODAT:
		c->op = EGRET_FILE_CHMOD;
		c->flags = (__u32)a[2];
		c->dfd = (int)a[0];
		c->name = a[1];
		return true;
	}
	return false;
}

SEC("tp_btf/sys_enter")
int BPF_PROG(egret_acsys, struct pt_regs *regs, long id)
{
	__u8 abi = compat_abi(bpf_get_current_task_btf(), id);
	struct compat_file c;
	__u64 a[5];

	if (abi == EGRET_ABI_NATIVE)
		return 0;
	compat_args(regs, abi, a);
	if (compat_file_args(egret_compat_action(abi, compat_nr(abi, id)), a, &c))
		file_begin(c.op, c.flags, c.dfd, (const char *)c.name, c.dfd2,
			   (const char *)c.name2);
	return 0;
}

SEC("tp_btf/sys_exit")
int BPF_PROG(egret_acxsys, struct pt_regs *regs, long ret)
{
	if (compat_abi(bpf_get_current_task_btf(), (long)(int)regs->orig_ax) != EGRET_ABI_NATIVE)
		file_end(ret);
	return 0;
}

/* ---- flows ---------------------------------------------------------------------------------- */

/* The flow record, from what flow_begin() noted and the socket's own addresses. */
static __always_inline void flow_report(struct egret_flow *fl, __u8 family, __u8 protocol,
					const __u32 *saddr, const __u32 *daddr, __u16 sport,
					__u16 dport, struct egret_sock_meta *m)
{
	struct egret_flow_event *e = event_reserve(sizeof(*e));

	if (!e)
		return;
	event_fill_hdr(&e->hdr, EGRET_EV_FLOW, fl->sandbox_id);
	/* who started the flow, not whoever runs when it ends */
	e->hdr.pid = e->hdr.tid = fl->pid;
	e->hdr.uid = fl->uid;
	__builtin_memcpy(e->hdr.comm, fl->comm, sizeof(e->hdr.comm));
	e->exec_id = 0;
	e->duration_ns = bpf_ktime_get_boot_ns() - fl->start_ns;
	e->bytes_out = fl->bytes_out;
	e->bytes_in = fl->bytes_in;
	e->packets_out = fl->packets_out;
	e->packets_in = fl->packets_in;
	e->protocol = protocol;
	e->family = family;
	e->sport = sport;
	e->dport = dport;
	__builtin_memcpy(e->saddr, saddr, sizeof(e->saddr));
	__builtin_memcpy(e->daddr, daddr, sizeof(e->daddr));
	/* a DNS socket steered to the resolver: the flow went to the server it asked */
	if (m && m->dns_orig_port) {
		__builtin_memcpy(e->daddr, m->dns_orig, sizeof(e->daddr));
		e->dport = bpf_ntohs(m->dns_orig_port);
	}
	e->pad[0] = e->pad[1] = 0;
	event_submit(e);
}

/* A UDP socket that carried traffic closes (TCP is reported when its socket is destroyed). The
 * release hook cannot read the socket's addresses: flow_begin() and the first packet noted them.
 */
SEC("cgroup/sock_release")
int egret_sock_end(struct bpf_sock *sk)
{
	struct egret_flow *fl = bpf_sk_storage_get(&sock_flows, sk, 0, 0);

	if (!fl || fl->protocol != IPPROTO_UDP)
		return 1;
	flow_report(fl, fl->family, fl->protocol, fl->saddr, fl->daddr, fl->sport, fl->dport,
		    bpf_sk_storage_get(&sock_meta, sk, 0, 0));
	return 1;
}

/* A TCP socket goes: its own counters say what it carried. */
SEC("tp_btf/tcp_destroy_sock")
int BPF_PROG(egret_tcp_end, struct sock *sk)
{
	struct tcp_sock *tp = (struct tcp_sock *)sk;
	__u32 saddr[4] = { 0, 0, bpf_htonl(0x0000ffff), 0 },
	      daddr[4] = { 0, 0, bpf_htonl(0x0000ffff), 0 };
	struct egret_flow *fl;
	__u16 family;

	fl = bpf_sk_storage_get(&sock_flows, sk, 0, 0);
	if (!fl)
		return 0;
	fl->bytes_out = BPF_CORE_READ(tp, bytes_acked);
	fl->bytes_in = BPF_CORE_READ(tp, bytes_received);
	fl->packets_out = BPF_CORE_READ(tp, segs_out);
	fl->packets_in = BPF_CORE_READ(tp, segs_in);
	family = BPF_CORE_READ(sk, __sk_common.skc_family);
	if (family == AF_INET) {
		saddr[3] = BPF_CORE_READ(sk, __sk_common.skc_rcv_saddr);
		daddr[3] = BPF_CORE_READ(sk, __sk_common.skc_daddr);
	} else {
		BPF_CORE_READ_INTO(&saddr, sk, __sk_common.skc_v6_rcv_saddr);
		BPF_CORE_READ_INTO(&daddr, sk, __sk_common.skc_v6_daddr);
	}
	flow_report(fl, (__u8)family, IPPROTO_TCP, saddr, daddr,
		    BPF_CORE_READ(sk, __sk_common.skc_num),
		    bpf_ntohs(BPF_CORE_READ(sk, __sk_common.skc_dport)),
		    bpf_sk_storage_get(&sock_meta, sk, 0, 0));
	return 0;
}

/* what UDP sockets receive (TCP keeps its own counters) */
SEC("cgroup_skb/ingress")
int egret_ingress(struct __sk_buff *skb)
{
	struct bpf_sock *sk = skb->sk;
	struct egret_flow *fl;

	if (!sk || !(sk = bpf_sk_fullsock(sk)) || sk->protocol != IPPROTO_UDP)
		return 1;
	fl = bpf_sk_storage_get(&sock_flows, sk, 0, 0);
	if (fl) {
		__sync_fetch_and_add(&fl->bytes_in, skb->len);
		__sync_fetch_and_add(&fl->packets_in, 1);
	}
	return 1;
}

/* ---- resource limits ------------------------------------------------------------------------ */

SEC("tp_btf/mark_victim")
int BPF_PROG(egret_oom, struct task_struct *task, uid_t uid)
{
	struct cgroup *cg = BPF_CORE_READ(task, cgroups, dfl_cgrp);
	struct egret_limit_event *e;
	struct mm_struct *mm;
	struct mem_cgroup *memcg;
	__u64 sandbox = sandbox_of_cgroup(cg), pages = 0;
	int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);

	if (sandbox == NOT_A_SANDBOX && !audit_host)
		return 0;
	e = event_reserve(sizeof(*e));
	if (!e)
		return 0;
	event_fill_hdr(&e->hdr, EGRET_EV_LIMIT, sandbox == NOT_A_SANDBOX ? 0 : sandbox);
	/* the header describes the victim, not whoever triggered the kill */
	e->hdr.pid = task->tgid;
	e->hdr.tid = task->pid;
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
	e->pad = 0;
	event_submit(e);
	return 0;
}

#define PIDS_LEVELS 8 /* pids cgroups above the task's own that are checked */

/* A fork that failed with EAGAIN: a pids limit if the task's pids cgroup, or one above it, is
 * full. Checked here, at the syscall's exit, while the cgroup still is; after a failed charge
 * the counter stays at the limit until something in it exits. RLIMIT_NPROC and memory also
 * give EAGAIN: no full pids cgroup, no event.
 */
static __always_inline void fork_failed(long ret)
{
	struct task_struct *task = bpf_get_current_task_btf();
	int id = bpf_core_enum_value(enum cgroup_subsys_id, pids_cgrp_id);
	struct cgroup_subsys_state *css;
	struct egret_limit_event *e;
	__s64 usage = 0, limit = 0;

	if (ret != -EAGAIN_ || !in_scope())
		return;
	css = BPF_CORE_READ(task, cgroups, subsys[id & 15]);
	for (int i = 0; i < PIDS_LEVELS && css; i++) {
		struct pids_cgroup *p = container_of(css, struct pids_cgroup, css);

		usage = BPF_CORE_READ(p, counter.counter);
		limit = BPF_CORE_READ(p, limit.counter);
		if (usage >= limit)
			break;
		css = BPF_CORE_READ(css, parent);
	}
	if (!css || usage < limit)
		return;
	e = event_reserve(sizeof(*e));
	if (!e)
		return;
	event_fill_hdr(&e->hdr, EGRET_EV_LIMIT, sandbox_of_current());
	e->exec_id = exec_id_of(task);
	e->usage = usage;
	e->limit = limit;
	e->kind = EGRET_LIMIT_PIDS;
	e->pad = 0;
	cgroup_name_of(BPF_CORE_READ(css, cgroup), e->cgroup);
	event_submit(e);
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
