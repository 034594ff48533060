// SPDX-License-Identifier: GPL-2.0
/* What a root process in a sandbox could do that the cgroup socket hooks never see: create a
 * socket of a family without inet hooks (AF_PACKET and the rest), set up io_uring (whose socket
 * op bypasses the socket syscall), call bpf(2), or leave its sandbox's cgroup by writing
 * cgroup.procs or by clone3(CLONE_INTO_CGROUP). Tracepoints see each and send SIGKILL; the
 * process dies on its way back to user space, before it can use what the call returned. Also
 * reports the sandbox cgroups coming and going, so egretd installs their rules.
 */
#define EGRET_OBJ_CONFINE /* its maps, lib/maps.bpf.h */
#include "lib/caps.bpf.h"
#include "lib/confine.bpf.h"
#include "lib/dns.bpf.h"
#include "lib/egress.bpf.h"
#include "lib/syscalls32.bpf.h"

char LICENSE[] SEC("license") = "GPL";

/* inet families have cgroup hooks; unix and netlink send nothing off the host */
static __always_inline bool family_hooked(int family)
{
	return family == AF_UNIX || family == AF_INET || family == AF_INET6 || family == AF_NETLINK;
}

/* socket(2) of a family without inet hooks: the native tracepoint's check, and the compat
 * dispatcher's
 */
static __always_inline void socket_check(int family, int type, int protocol)
{
	struct egret_connect_event *e;
	__u64 sandbox;
	bool audit;

	if (family_hooked(family) || !confined())
		return;
	audit = policy_audit_mode();
	if (!audit)
		bpf_send_signal(SIGKILL);
	counter_verdict(EGRET_HOOK_SYSCALL, audit ? EGRET_VERDICT_AUDIT : EGRET_VERDICT_DENY);
	sandbox = sandbox_of_current();
	e = event_reserve_for(sizeof(*e), EGRET_EV_CONNECT, sandbox);
	if (!e)
		return;
	__builtin_memset(e, 0, sizeof(*e));
	event_fill_hdr(&e->hdr, EGRET_EV_CONNECT, sandbox);
	e->family = (__u8)family;
	e->protocol = (__u8)protocol;
	e->sock_type = (__u16)(type & SOCK_TYPE_MASK);
	e->hook = EGRET_HOOK_SYSCALL;
	e->verdict = audit ? EGRET_VERDICT_AUDIT : EGRET_VERDICT_DENY;
	e->reason = EGRET_REASON_SOCKET_TYPE;
	e->killed = !audit;
	event_submit(e);
}

SEC("tp/syscalls/sys_enter_socket")
int egret_socket(struct trace_event_raw_sys_enter *ctx)
{
	socket_check((int)ctx->args[0], (int)ctx->args[1], (int)ctx->args[2]);
	return 0;
}

static __always_inline void uring_check(__u64 entries)
{
	bool audit;

	if (!confined())
		return;
	audit = policy_audit_mode();
	if (!audit)
		bpf_send_signal(SIGKILL);
	tamper_report(EGRET_TAMPER_IO_URING, entries, 0, !audit);
}

SEC("tp/syscalls/sys_enter_io_uring_setup")
int egret_uring(struct trace_event_raw_sys_enter *ctx)
{
	uring_check(ctx->args[0]);
	return 0;
}

static __always_inline void bpf_check(__u64 cmd)
{
	if (!confined())
		return;
	bpf_send_signal(SIGKILL);
	tamper_report(EGRET_TAMPER_BPF, cmd, 0, true);
}

/* Where egret_csys is loaded it judges bpf(2) itself (one compare on each call, instead of a
 * syscalls tracepoint that would run on every bpf(2) of the host, egretd's own included); this
 * is the judge where it is not (no sys_enter tracepoint with BTF: kfeatures.c, cond_progs).
 */
SEC("tp/syscalls/sys_enter_bpf")
int egret_bpf(struct trace_event_raw_sys_enter *ctx)
{
	bpf_check(ctx->args[0]);
	return 0;
}

/* set by egretd before load */
const volatile bool require_unpriv = false; /* --require-unprivileged */
/* --trusted-mover: the cgroups (v2 id and level) whose writers may move host tasks into a
 * sandbox; none given: any writer outside every sandbox
 */
const volatile __u64 trusted_mover_id[EGRET_TRUSTED_MOVERS_MAX] = {};
const volatile __u32 trusted_mover_level[EGRET_TRUSTED_MOVERS_MAX] = {};
const volatile __u32 ntrusted_movers = 0;

/* The global policy's flags (EGRET_POL_*), --require-unprivileged as EGRET_POL_REQUIRE_UNPRIV:
 * one lookup for 'require unprivileged' (the flag or the policy) and the policy's audit mode
 */
static __always_inline __u32 global_flags(void)
{
	struct egret_policy_val *g;
	__u32 any[4] = {}, flags = require_unpriv ? EGRET_POL_REQUIRE_UNPRIV : 0;
	void *trie = policy_trie();

	g = trie ? policy_lookup(trie, 0, any) : NULL;
	return g ? flags | g->flags : flags;
}

static __always_inline bool task_foreign(struct task_struct *t)
{
	struct task_sandbox *ts = bpf_task_storage_get(&task_sandbox, t->group_leader, 0, 0);

	return ts && (ts->flags & TASK_FOREIGN);
}

/* Is the current task (outside every sandbox) one that may move host tasks into one? */
static __always_inline bool mover_trusted(void)
{
	if (ntrusted_movers == 0)
		return true;
	for (int i = 0; i < EGRET_TRUSTED_MOVERS_MAX; i++) {
		if (i >= ntrusted_movers)
			break;
		if (bpf_get_current_ancestor_cgroup_id(trusted_mover_level[i]) ==
		    trusted_mover_id[i])
			return true;
	}
	return false;
}

/* The moved task, which was in sandbox prev (NOT_A_SANDBOX: none), now in sandbox to: was it
 * pulled in from outside? Only a task that was in no sandbox can be: one that was in a sandbox
 * (egret's root itself included) and is moved to another left its own, whoever moved it (judged
 * as an escape, never marked foreign: a foreign process may go anywhere). Moves within a
 * sandbox, a task moving itself (egretctl run's child, a shell's `echo $$`), egretd's own moves
 * and a trusted host writer's (a runtime placing its container) are not pulls either.
 */
static __always_inline bool is_pull(struct task_struct *cur, bool self, __u64 from, __u64 prev,
				    __u64 to)
{
	if (to == NOT_A_SANDBOX || to == 0 || prev == to || self || prev != NOT_A_SANDBOX)
		return false;
	if (tgid_protected((__u32)cur->tgid))
		return false;
	return !(from == NOT_A_SANDBOX || from == 0) || !mover_trusted();
}

/* The pulled process is marked FOREIGN and keeps where it was: egret never kills it and never
 * counts it as the sandbox's (moving it back out is no escape). A sandboxed writer dies.
 */
static __always_inline void cgroup_pull(struct cgroup *dst, struct task_struct *task, __u64 prev)
{
	struct task_struct *leader = task->group_leader;
	struct task_sandbox *ts;
	bool killed = false;

	ts = bpf_task_storage_get(&task_sandbox, leader, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ts) {
		if (!(ts->flags & TASK_FOREIGN))
			ts->sandbox_id = leader == task ? prev : NOT_A_SANDBOX;
		ts->flags |= TASK_FOREIGN;
	}
	if (confined())
		killed = kill_current();
	tamper_report(EGRET_TAMPER_CGROUP_PULL, BPF_CORE_READ(dst, kn, id), task->tgid, killed);
}

/* --require-unprivileged: a privileged process that entered a sandbox itself, or that a
 * sandboxed writer moved, dies at the move (it need never exec). A runtime's own move of its
 * init (a host writer) is left to the exec that follows.
 */
static __always_inline void privileged_move(struct task_struct *task, bool self, __u64 from,
					    __u64 to)
{
	struct task_caps caps;
	__u32 flags;
	__u64 mask;

	if (to == NOT_A_SANDBOX || to == 0)
		return;
	flags = global_flags();
	if (!(flags & EGRET_POL_REQUIRE_UNPRIV) || (flags & EGRET_POL_AUDIT))
		return;
	if (!self && (from == NOT_A_SANDBOX || from == 0))
		return;
	if (tgid_protected((__u32)task->tgid) || task_foreign(task))
		return;
	task_caps_of(task, &caps);
	mask = task_caps_danger(&caps);
	if (!mask)
		return;
	if (self)
		tamper_report(EGRET_TAMPER_PRIVILEGED, mask, task->tgid, kill_current());
	else {
		kill_task(task, to);
		tamper_report(EGRET_TAMPER_PRIVILEGED, mask, task->tgid, true);
	}
}

/* Where each protected process (egretd, its keeper) is, as its last v2 move left it: the
 * sandbox it was pulled into, NOT_A_SANDBOX elsewhere (a process never moved has no entry: it
 * is where it started, outside every sandbox). A sandbox may not freeze its own cgroups while
 * one of them is there.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 4 * EGRET_PROTECTED_MAX);
	__type(key, __u32);
	__type(value, __u64);
} protected_place SEC(".maps");

static __always_inline void protected_moved(struct task_struct *task, __u64 to)
{
	__u32 tgid = (__u32)task->tgid;

	if (!tgid_protected(tgid))
		return;
	if (to == NOT_A_SANDBOX)
		bpf_map_delete_elem(&protected_place, &tgid);
	else
		bpf_map_update_elem(&protected_place, &tgid, &to, BPF_ANY);
}

/* A move in a v1 hierarchy (no sandbox lives there, but a v1 freezer or memory cgroup stops or
 * starves whatever is put in it): a sandboxed writer may move its own sandbox's processes only.
 * Moving egretd, its keeper, a host process or another sandbox's kills the writer.
 */
static __always_inline void v1_move(struct cgroup *dst, struct task_struct *task, bool self)
{
	if (self || !confined())
		return;
	if (!tgid_protected((__u32)task->tgid) && sandbox_of_task(task) == sandbox_of_current())
		return;
	tamper_report(EGRET_TAMPER_CGROUP_ESCAPE, BPF_CORE_READ(dst, kn, id), task->tgid,
		      kill_current());
}

/* A sandboxed writer of cgroup.procs may move tasks within its own sandbox, nowhere else, and
 * may not pull a task in from outside, nor move egretd or its keeper anywhere. The tracepoint
 * fires after the move, so a task that moved itself is judged by where it was.
 */
SEC("tp_btf/cgroup_attach_task")
int BPF_PROG(egret_cg_attach, struct cgroup *dst, const char *path, struct task_struct *task,
	     bool threadgroup)
{
	struct task_struct *cur;
	__u64 from, prev, to;
	bool self;

	cur = bpf_get_current_task_btf();
	self = cur->tgid == task->tgid;
	if (!cgroup_is_v2(dst)) {
		v1_move(dst, task, self);
		return 0;
	}
	from = sandbox_before(cur);
	prev = self ? from : sandbox_before(task);
	to = sandbox_of_cgroup(dst);
	protected_moved(task, to);
	if (is_pull(cur, self, from, prev, to)) {
		cgroup_pull(dst, task, prev);
		return 0;
	}
	/* egretd or its keeper moved by a sandbox elsewhere than into it: the writer dies, the
	 * moved one goes home by itself
	 */
	if (!self && tgid_protected((__u32)task->tgid) && confined()) {
		tamper_report(EGRET_TAMPER_CGROUP_ESCAPE, BPF_CORE_READ(dst, kn, id), task->tgid,
			      kill_current());
		return 0;
	}
	/* a pulled-in process is no sandbox's: wherever it goes, nobody escaped */
	if (task_foreign(task) || task_foreign(cur) || tgid_protected((__u32)cur->tgid)) {
		if (to == NOT_A_SANDBOX || !task_foreign(task))
			remember_sandbox(task, to);
		return 0;
	}
	remember_sandbox(task, to);
	if (self)
		remember_sandbox(cur, to);
	/* the writer may not send anything out of its sandbox, and a sandbox's process moved by
	 * anyone but the host may not leave its own
	 */
	if (!move_allowed(from, to) || (from != NOT_A_SANDBOX && !move_allowed(prev, to))) {
		bool killed = self || tgid_protected((__u32)task->tgid)
				      ? kill_current()
				      : kill_mover_and_moved(task, to);

		tamper_report(EGRET_TAMPER_CGROUP_ESCAPE, BPF_CORE_READ(dst, kn, id), task->tgid,
			      killed);
		return 0;
	}
	privileged_move(task, self, from, to);
	return 0;
}

/* sandbox_pids: a new task of a parent nobody tracks, started in a sandbox (clone3 into it) */
static __always_inline void pids_note_child(struct task_struct *child)
{
	__u64 to;

	if (task_from_pid_ok())
		return;
	to = sandbox_of_cgroup(BPF_CORE_READ(child, cgroups, dfl_cgrp));
	if (to != NOT_A_SANDBOX)
		pids_note(child->pid, to);
}

/* A pulled-in process's child is as foreign as its parent, and was as much in no sandbox: a
 * new process gets the mark; a thread shares its leader's.
 */
static __always_inline void foreign_child(struct task_struct *parent, struct task_struct *child,
					  __u64 to)
{
	struct task_sandbox *ts;

	if (child->pid != child->tgid)
		return;
	if (to == NOT_A_SANDBOX) {
		pids_note(child->pid, to);
		return;
	}
	ts = bpf_task_storage_get(&task_sandbox, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (ts) {
		ts->sandbox_id = NOT_A_SANDBOX;
		ts->flags = TASK_FOREIGN;
	}
}

/* A child starts in its parent's sandbox, unless clone3(CLONE_INTO_CGROUP) put it elsewhere:
 * that is leaving the sandbox without a cgroup.procs write. A child in its parent's cgroup
 * moved nowhere, whatever the parent's record says (egretd may have registered the cgroup
 * since).
 */
SEC("tp_btf/sched_process_fork")
int BPF_PROG(egret_fork, struct task_struct *parent, struct task_struct *child)
{
	struct task_sandbox *ts = bpf_task_storage_get(&task_sandbox, parent, 0, 0);
	struct cgroup *cg;
	__u64 from, to;

	from = ts ? ts->sandbox_id : sandbox_of_current();
	if (!ts && from == NOT_A_SANDBOX) {
		pids_note_child(child);
		return 0;
	}
	cg = child->cgroups->dfl_cgrp;
	to = sandbox_of_cgroup_btf(cg);
	if (task_foreign(parent)) {
		foreign_child(parent, child, to);
		return 0;
	}
	remember_sandbox(child, to);
	if (cg != parent->cgroups->dfl_cgrp && !move_allowed(from, to)) {
		bpf_send_signal(SIGKILL);
		kill_task(child, to);
		tamper_report(EGRET_TAMPER_CGROUP_ESCAPE, BPF_CORE_READ(cg, kn, id), child->tgid,
			      true);
	}
	return 0;
}

/* The current process dies here if kill_task() or doom_task() marked it: on its way out of
 * the system call it is in, in its own context.
 */
static __always_inline void reap_current(void)
{
	struct task_struct *task;
	struct task_sandbox *ts;
	__u32 zero = 0;
	__u64 *pending;

	pending = bpf_map_lookup_elem(&doomed, &zero);
	if (!pending || !*pending)
		return;
	task = bpf_get_current_task_btf();
	ts = bpf_task_storage_get(&task_sandbox, task->group_leader, 0, 0);
	if (!ts || !ts->doomed)
		return;
	bpf_send_signal(SIGKILL);
	if (__sync_val_compare_and_swap(&ts->doomed, 1, 2) == 1)
		doomed_add(-1);
}

/* Without bpf_send_signal_task: the process kill_task() marked dies here, in its own context,
 * on its way back to user space. Runs at every syscall exit on the host (with one load when
 * nothing is marked), so egretd loads it only on kernels without that kfunc.
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(egret_reap, struct pt_regs *regs, long ret)
{
	reap_current();
	return 0;
}

/* A task ends: it leaves sandbox_pids, and a marked process that died before egret_reap saw it
 * is no longer pending. egretd loads this only on kernels without bpf_task_from_pid or
 * bpf_send_signal_task.
 */
SEC("tp_btf/sched_process_exit")
int BPF_PROG(egret_cexit, struct task_struct *task)
{
	struct task_sandbox *ts;
	__u32 pid = task->pid;

	if (!task_from_pid_ok())
		bpf_map_delete_elem(&sandbox_pids, &pid);
	if (send_signal_task_ok() || BPF_CORE_READ(task, signal, live.counter) != 0)
		return 0;
	ts = bpf_task_storage_get(&task_sandbox, task->group_leader, 0, 0);
	if (ts && __sync_val_compare_and_swap(&ts->doomed, 1, 2) == 1)
		doomed_add(-1);
	return 0;
}

static __always_inline __u64 name_hash(const __u8 *name)
{
	__u64 h = EGRET_FNV64_OFFSET;

	for (int i = 0; i < EGRET_CGROUP_NAME_LEN; i++) {
		if (!name[i])
			break;
		h = egret_fnv64_byte(h, name[i]);
	}
	return h;
}

/* A new sandbox without rules of its own is ready at once: register it here, in the kernel,
 * so its first connect does not wait for egretd.
 */
static __always_inline void register_if_plain(__u64 id, const __u8 *name)
{
	struct egret_sandbox v = {};
	__u64 h = name_hash(name);

	if (!bpf_map_lookup_elem(&sandbox_rules, &h))
		bpf_map_update_elem(&sandboxes, &id, &v, BPF_NOEXIST);
}

/* The record is built in cgroup_scratch (a directory name does not fit the stack beside the
 * rest) and copied into the ring after the map calls: 6.1's verifier refuses a reservation held
 * across them ("Unreleased reference"). A child of egret's root a sandbox made is not registered:
 * it is no sandbox of the host's making, it stays one not registered yet (no network, no entry
 * in `sandboxes`, so a sandbox's mkdirs cannot fill the table), and nothing of the sandbox may
 * enter it.
 */
static __always_inline void cgroup_report(struct cgroup *cg, __u64 id, __u32 op)
{
	struct egret_cgroup_event *e;
	__u32 zero = 0;

	e = bpf_map_lookup_elem(&cgroup_scratch, &zero);
	if (!e)
		return;
	cgroup_name_of(cg, e->name);
	if (op == EGRET_CG_CREATED && !confined())
		register_if_plain(id, e->name);
	else if (op == EGRET_CG_DESTROYED)
		bpf_map_delete_elem(&sandboxes, &id);
	event_fill_hdr(&e->hdr, EGRET_EV_CGROUP, id);
	e->cgroup_id = id;
	e->op = op;
	e->pad = 0;
	event_output(e, sizeof(*e));
}

/* Lifecycle records: the direct children of egret's root (registered here, at mkdir, when they
 * need no rules of their own) and every registered sandbox's freeze, thaw and removal.
 */
static __always_inline void sandbox_cgroup_event(struct cgroup *cg, __u32 op)
{
	__u64 id;

	if (!cgroup_is_v2(cg))
		return;
	id = BPF_CORE_READ(cg, kn, id);
	if (op == EGRET_CG_DESTROYED) {
		bpf_map_delete_elem(&sandbox_started, &id);
		if (registration_of(id) == NOT_A_SANDBOX) /* an exempt cgroup's goes quietly */
			bpf_map_delete_elem(&sandboxes, &id);
	}
	if (cgroup_in_egret_root(cg) || registration_of(id) == id)
		cgroup_report(cg, id, op);
}

SEC("tp_btf/cgroup_mkdir")
int BPF_PROG(egret_cg_mkdir, struct cgroup *cg, const char *path)
{
	sandbox_cgroup_event(cg, EGRET_CG_CREATED);
	return 0;
}

SEC("tp_btf/cgroup_rmdir")
int BPF_PROG(egret_cg_rmdir, struct cgroup *cg, const char *path)
{
	sandbox_cgroup_event(cg, EGRET_CG_DESTROYED);
	return 0;
}

/* A sandboxed process in a network namespace egret's resolver does not listen in yet: tell
 * egretd, which sets up a listener there before the process is likely to ask anything.
 */
static __always_inline void netns_check(__u64 sb)
{
	struct task_struct *t;
	__u64 cookie;

	if (sb == NOT_A_SANDBOX)
		return;
	t = bpf_get_current_task_btf();
	cookie = t->nsproxy->net_ns->net_cookie;
	if (!bpf_map_lookup_elem(&dns_listeners, &cookie))
		netns_report(cookie, sb);
}

#define SIGCONT_ 18
#define SIGSTOP_ 19

/* The last freeze of each cgroup that a sandbox froze where it may not (and was killed for),
 * with the writer (struct egret_signal_sender), for egret's keeper: it thaws a cgroup holding
 * egretd that a sandbox froze, and leaves the host's freezes alone. A host's later freeze of a
 * cgroup in the map takes its entry over (sandbox_id ~0), a host's thaw removes it.
 */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, struct egret_signal_sender);
} freeze_writers SEC(".maps");

struct protected_scan {
	__u64 sandbox;
	bool found;
};

static long protected_in_cb(struct bpf_map *map, __u32 *tgid, __u64 *where,
			    struct protected_scan *s)
{
	if (*where != s->sandbox || !tgid_protected(*tgid))
		return 0;
	s->found = true;
	return 1;
}

/* Is egretd or its keeper in sandbox sb now (pulled in)? */
static __always_inline bool protected_in(__u64 sb)
{
	struct protected_scan s = { .sandbox = sb };

	bpf_for_each_map_elem(&protected_place, protected_in_cb, &s, 0);
	return s.found;
}

static __always_inline void freeze_record(__u64 id, __u64 sandbox_id)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	struct egret_signal_sender v = {
		.tgid = (__u32)(pid_tgid >> 32),
		.pid = (__u32)pid_tgid,
		.sandbox_id = sandbox_id,
		.ts_ns = bpf_ktime_get_boot_ns(),
	};

	bpf_map_update_elem(&freeze_writers, &id, &v, BPF_ANY);
}

/* cgroup.freeze written. A sandbox may freeze and thaw its own cgroups, unless egretd or its
 * keeper was pulled into it; any other cgroup (egretd's, the host's, another sandbox's) it may
 * not: the writer dies (Tamper SIGNAL_OUT, target SIGSTOP or SIGCONT: a freeze stops every
 * process in the cgroup). The kernel offers no way to refuse the write: a freeze stays in force
 * until someone thaws it, egret's keeper for a cgroup holding egretd (freeze_writers).
 */
static __always_inline void freeze_judge(struct cgroup *cg, __u32 op)
{
	__u64 id, mine, where;

	if (!cgroup_is_v2(cg))
		return;
	id = BPF_CORE_READ(cg, kn, id);
	if (!confined()) {
		if (!bpf_map_lookup_elem(&freeze_writers, &id))
			return;
		if (op == EGRET_CG_FROZEN)
			freeze_record(id, NOT_A_SANDBOX);
		else
			bpf_map_delete_elem(&freeze_writers, &id);
		return;
	}
	mine = sandbox_of_current();
	where = sandbox_of_cgroup(cg);
	if (move_allowed(mine, where) && !protected_in(where))
		return;
	if (op == EGRET_CG_FROZEN)
		freeze_record(id, mine);
	tamper_report(EGRET_TAMPER_SIGNAL_OUT, op == EGRET_CG_FROZEN ? SIGSTOP_ : SIGCONT_, 0,
		      kill_current());
}

/* a sandbox paused and resumed (cgroup.freeze); the writer is in the record's header */
SEC("tp_btf/cgroup_freeze")
int BPF_PROG(egret_cg_freeze, struct cgroup *cg, const char *path)
{
	freeze_judge(cg, EGRET_CG_FROZEN);
	sandbox_cgroup_event(cg, EGRET_CG_FROZEN);
	return 0;
}

SEC("tp_btf/cgroup_unfreeze")
int BPF_PROG(egret_cg_thaw, struct cgroup *cg, const char *path)
{
	freeze_judge(cg, EGRET_CG_THAWED);
	sandbox_cgroup_event(cg, EGRET_CG_THAWED);
	return 0;
}

SEC("tp/syscalls/sys_exit_unshare")
int egret_unshare(struct trace_event_raw_sys_exit *ctx)
{
	netns_check(sandbox_of_current());
	return 0;
}

SEC("tp/syscalls/sys_exit_setns")
int egret_setns(struct trace_event_raw_sys_exit *ctx)
{
	netns_check(sandbox_of_current());
	return 0;
}

/* sandbox_pids: a thread that execs takes its process's pid (the old leader's entry went when
 * it exited)
 */
static __always_inline void pids_exec(struct task_struct *p, __u32 old_pid)
{
	__u32 pid = p->pid;
	__u64 *sb;

	if (task_from_pid_ok() || pid == old_pid)
		return;
	sb = bpf_map_lookup_elem(&sandbox_pids, &old_pid);
	if (!sb)
		return;
	bpf_map_update_elem(&sandbox_pids, &pid, sb, BPF_ANY);
	bpf_map_delete_elem(&sandbox_pids, &old_pid);
}

/* --require-unprivileged: a sandboxed image that starts with capabilities over the host never
 * runs its first instruction
 */
static __always_inline void privileged_exec(struct task_struct *p, __u64 sb)
{
	__u32 flags = global_flags();
	struct task_caps caps;
	__u64 mask;

	/* the policy first (one lookup, and nothing else when it does not ask), then the task */
	if (!(flags & EGRET_POL_REQUIRE_UNPRIV) || (flags & EGRET_POL_AUDIT) || !confined_in(sb))
		return;
	task_caps_of(p, &caps);
	mask = task_caps_danger(&caps);
	if (mask)
		tamper_report(EGRET_TAMPER_PRIVILEGED, mask, 0, bpf_send_signal(SIGKILL) == 0);
}

/* A task's sandbox can change without a move: egretd registers a container's cgroup after the
 * runtime moved its init there. The exec that starts the container's code takes the new one.
 */
static __always_inline void exec_sandbox(struct task_struct *p, __u64 sb)
{
	struct task_sandbox *ts = bpf_task_storage_get(&task_sandbox, p, 0, 0);

	if (sb == NOT_A_SANDBOX || (ts && (ts->flags & TASK_FOREIGN)))
		return;
	if (!ts || ts->sandbox_id != sb)
		remember_sandbox(p, sb);
}

SEC("tp_btf/sched_process_exec")
int BPF_PROG(egret_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	__u64 sb = sandbox_of_current_btf();

	pids_exec(p, (__u32)old_pid);
	exec_sandbox(p, sb);
	sandbox_start(sb);
	privileged_exec(p, sb);
	netns_check(sb);
	return 0;
}

/* ---- compat system calls: ia32 (int 0x80, sysenter) and x32 ------------------------------- */

/* The syscalls tracepoints above never see a compat call (the kernel gives them no number
 * for one); the raw sys_enter tracepoint sees every call, with the ABI's own number. egret_csys
 * runs on every syscall on the host and returns after three loads and a compare for a native
 * one (the third load: whether any process is marked for death, reap_current; the compare:
 * whether it is bpf(2), judged here rather than by egret_bpf).
 */
#define SYS_SOCKET_	   1   /* socketcall's number for socket(2) */
#define NR_BPF_		   321 /* bpf(2) on x86_64 */
#define S_IFMT_		   0170000
#define S_IFSOCK_	   0140000
#define SIGNAL_GROUP_EXIT_ 0x4 /* signal_struct.flags: the process is being killed */

const volatile __u32 compat_mode = EGRET_COMPAT_REFUSE; /* --compat, set by egretd */

/* whether this process's first compat call is the current one (keyed by tgid and start) */
static __always_inline bool compat_first(struct task_struct *t)
{
	__u64 key = ((__u64)t->tgid << 32) ^ BPF_CORE_READ(t, group_leader, start_time);
	__u8 one = 1;

	return bpf_map_update_elem(&compat_seen, &key, &one, BPF_NOEXIST) == 0;
}

/* a compat call egret does not judge: killed (reported only under an audit policy) */
static __always_inline void compat_refuse(__u32 nr, __u8 abi)
{
	bool audit = policy_audit_mode();

	if (!audit)
		bpf_send_signal(SIGKILL);
	tamper_report_abi(EGRET_TAMPER_COMPAT_SYSCALL, nr, 0, !audit, abi);
}

/* --compat judge: the same check the native tracepoint of the call makes */
static __always_inline void compat_judge(struct pt_regs *regs, __u8 abi, __u32 nr)
{
	__u32 action = egret_compat_action(abi, nr), words[3];
	__u64 a[5];

	/* unshare and setns at their exit (egret_cxsys), file calls in audit.bpf.c */
	if (action == EGRET_CC_ALLOW || action == EGRET_CC_NETNS || action >= EGRET_CC_FILE_FIRST)
		return;
	compat_args(regs, abi, a);
	switch (action) {
	case EGRET_CC_SOCKETCALL:
		/* socketcall(SYS_SOCKET, {family, type, protocol}); args this cannot read (a page
		 * not faulted in) or another thread rewrites are judged by egret_cxsys at the exit,
		 * from the socket made
		 */
		if (a[0] != SYS_SOCKET_ || bpf_probe_read_user(words, sizeof(words), (void *)a[1]))
			return;
		if (compat_mode == EGRET_COMPAT_JUDGE) {
			__u32 tid = (__u32)bpf_get_current_pid_tgid();

			bpf_map_update_elem(&socketcall_fam, &tid, &words[0], BPF_ANY);
		}
		socket_check((int)words[0], (int)words[1], (int)words[2]);
		return;
	case EGRET_CC_SOCKET:
		socket_check((int)a[0], (int)a[1], (int)a[2]);
		return;
	case EGRET_CC_URING:
		uring_check(a[0]);
		return;
	case EGRET_CC_BPF:
		bpf_check(a[0]);
		return;
	case EGRET_CC_MOUNT:
	case EGRET_CC_MOVE_MOUNT:
	case EGRET_CC_FSMOUNT:
	case EGRET_CC_UMOUNT:
		mount_attempt(action - EGRET_CC_MOUNT + 1);
		return;
	default:
		compat_refuse(nr, abi);
	}
}

SEC("tp_btf/sys_enter")
int BPF_PROG(egret_csys, struct pt_regs *regs, long id)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u8 abi = compat_abi(t, id);
	__u32 nr;

	/* a process marked for death (a mover whose signal could not be queued) dies here */
	reap_current();
	if (abi == EGRET_ABI_NATIVE) {
		if (id == NR_BPF_)
			bpf_check(regs->di);
		return 0;
	}
	if (!confined())
		return 0;
	nr = compat_nr(abi, id);
	if (compat_mode == EGRET_COMPAT_REFUSE) {
		if (!policy_audit_mode()) {
			bpf_send_signal(SIGKILL);
			tamper_report_abi(EGRET_TAMPER_COMPAT_SYSCALL, nr, 0, true, abi);
			return 0;
		}
		/* audit: what refuse would kill, once per process, then each call judged */
		if (compat_first(t))
			tamper_report_abi(EGRET_TAMPER_COMPAT_SYSCALL, nr, 0, false, abi);
	}
	compat_judge(regs, abi, nr);
	return 0;
}

/* socketcall(SYS_SOCKET) at its exit, unless egret_csys's kill is already on its way: the
 * socket the call made is judged, whatever its argument block says now. A descriptor that is
 * no socket any more was replaced by another thread meanwhile: killed.
 */
static __always_inline void socketcall_end(struct task_struct *t, long fd, __u8 abi)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid(), *judged, family;
	struct file **fds, *f = NULL;
	struct socket *sock;
	unsigned int max;

	judged = bpf_map_lookup_elem(&socketcall_fam, &tid);
	family = judged ? *judged : ~0u;
	if (judged)
		bpf_map_delete_elem(&socketcall_fam, &tid);
	if (fd < 0 || (BPF_CORE_READ(t, signal, flags) & SIGNAL_GROUP_EXIT_))
		return;
	fds = BPF_CORE_READ(t, files, fdt, fd);
	max = BPF_CORE_READ(t, files, fdt, max_fds);
	if ((unsigned long)fd < max)
		bpf_core_read(&f, sizeof(f), &fds[fd]);
	if (!f || (BPF_CORE_READ(f, f_inode, i_mode) & S_IFMT_) != S_IFSOCK_) {
		if (confined())
			compat_refuse(102, abi);
		return;
	}
	sock = (struct socket *)BPF_CORE_READ(f, private_data);
	/* the family egret_csys judged (and reported, under an audit policy) is not judged twice */
	if (BPF_CORE_READ(sock, sk, __sk_common.skc_family) != family)
		socket_check(BPF_CORE_READ(sock, sk, __sk_common.skc_family),
			     BPF_CORE_READ(sock, type), BPF_CORE_READ(sock, sk, sk_protocol));
}

/* --compat judge: unshare and setns are judged once they are done, like the native ones, and
 * socketcall(SYS_SOCKET) by the socket it made
 */
SEC("tp_btf/sys_exit")
int BPF_PROG(egret_cxsys, struct pt_regs *regs, long ret)
{
	struct task_struct *t = bpf_get_current_task_btf();
	long id = (long)(int)regs->orig_ax;
	__u8 abi = compat_abi(t, id);
	__u32 action;

	if (abi == EGRET_ABI_NATIVE)
		return 0;
	action = egret_compat_action(abi, compat_nr(abi, id));
	if (action == EGRET_CC_NETNS)
		netns_check(sandbox_of_current());
	else if (action == EGRET_CC_SOCKETCALL && (__u32)regs->bx == SYS_SOCKET_)
		socketcall_end(t, ret, abi);
	return 0;
}

/* ---- a sandbox reaching a process outside it: signals, ptrace, fds, memory ------------------ */

#define SIGTSTP_	      20
#define SIGTTIN_	      21
#define SIGTTOU_	      22
#define SIGCHLD_	      17

#define TRACE_SIGNAL_IGNORED_ 1 /* signal_generate's result: the target ignores it */

const volatile bool kill_cross_signals = false; /* --kill-cross-signals */

static __always_inline bool stop_signal(int sig)
{
	return sig == SIGSTOP_ || sig == SIGTSTP_ || sig == SIGTTIN_ || sig == SIGTTOU_;
}

static __always_inline void signal_record(int sig, struct task_struct *target, __u64 sandbox_id)
{
	struct egret_signal_key k = { .tgid = (__u32)target->tgid, .sig = (__u32)sig };
	__u64 id = bpf_get_current_pid_tgid();
	struct egret_signal_sender v = {
		.tgid = (__u32)(id >> 32),
		.pid = (__u32)id,
		.sandbox_id = sandbox_id,
		.ts_ns = bpf_ktime_get_boot_ns(),
	};

	bpf_map_update_elem(&signal_senders, &k, &v, BPF_ANY);
}

/* A signal to egretd: the sender dies. A stop is answered with SIGCONT where the kfunc exists
 * (6.13); that takes the one signal a program holding siglock may queue (a second is EBUSY),
 * so the sender is then marked and dies at the exit of its system call (egret_xkill,
 * egret_reap). Whether the sender's death is on its way.
 */
static __always_inline bool signal_answer(int sig, struct task_struct *target)
{
	if (stop_signal(sig) && send_signal_task_ok()) {
		if (bpf_send_signal_task(target, SIGCONT_, PIDTYPE_TGID, 0) == 0) {
			doom_task(bpf_get_current_task_btf(), sandbox_of_current());
			return true;
		}
	}
	return kill_current();
}

/* A signal from the sandbox's code to a task in another sandbox or outside every one: reported;
 * to egretd (protected_tgids) also answered, to any with --kill-cross-signals (the sender
 * dies). Not judged: signals to the sender's own process and SIGCHLD (a child's exit tells
 * its parent, egretctl run or a runtime, outside).
 */
static __always_inline void signal_out(int sig, struct task_struct *target, int result)
{
	struct task_struct *cur;
	bool killed = false;
	__u64 to;

	if (sig <= 0 || sig == SIGCHLD_ || !confined())
		return;
	cur = bpf_get_current_task_btf();
	if (target->tgid == cur->tgid)
		return;
	to = sandbox_of_task(target);
	if (to != FOREIGN_TARGET && to == sandbox_of_current())
		return;
	if (tgid_protected((__u32)target->tgid)) {
		signal_record(sig, target, sandbox_of_current());
		if (result != TRACE_SIGNAL_IGNORED_)
			killed = signal_answer(sig, target);
	} else if (kill_cross_signals && result != TRACE_SIGNAL_IGNORED_) {
		killed = kill_current();
	}
	tamper_report(EGRET_TAMPER_SIGNAL_OUT, (__u64)sig, (__u32)target->tgid, killed);
}

/* A syscall egretctl run's seccomp filter refused arrives as SIGSYS; any other signal may be
 * one to a process outside the sandbox.
 */
SEC("tp_btf/signal_generate")
int BPF_PROG(egret_sigsys, int sig, struct kernel_siginfo *info, struct task_struct *task,
	     int group, int result)
{
	if (sig == SIGSYS && BPF_CORE_READ(info, si_code) == SYS_SECCOMP) {
		if (current_in_root())
			tamper_report(EGRET_TAMPER_SECCOMP,
				      BPF_CORE_READ(info, _sifields._sigsys._syscall), 0, false);
		return 0;
	}
	/* a stop of egretd from anyone else is recorded too, so the keeper, which continues one
	 * a sandbox sent, leaves the host's alone
	 */
	if (stop_signal(sig) && !confined() && tgid_protected((__u32)task->tgid))
		signal_record(sig, task, NOT_A_SANDBOX);
	else
		signal_out(sig, task, result);
	return 0;
}

/* the exit of every signal call (kill here; the loader attaches it to tkill, tgkill,
 * rt_sigqueueinfo, rt_tgsigqueueinfo and pidfd_send_signal: user/kernel/loader.c, also_attach)
 */
SEC("tp/syscalls/sys_exit_kill")
int egret_xkill(struct trace_event_raw_sys_exit *ctx)
{
	reap_current();
	return 0;
}

/* An access to another process judged at its system call's entry: the sender is killed when
 * the target is outside its sandbox (the kill is pending before the call's body runs).
 */
static __always_inline void access_judge(__u32 kind, struct target *tg, __u32 named)
{
	bool killed;

	if (!target_outside(tg))
		return;
	killed = kill_current();
	if (kind == ACCESS_PTRACE)
		tamper_report(EGRET_TAMPER_PTRACE, named, named, killed);
	else
		tamper_report(EGRET_TAMPER_PROC_ACCESS, kind, tg->tgid, killed);
}

/* a host pid in a system call's argument, judged when the caller may name host pids */
static __always_inline void access_pid(__u32 kind, __u32 pid)
{
	struct target tg;

	if (pid == (__u32)(bpf_get_current_pid_tgid() >> 32) || !confined() || !pids_are_global())
		return;
	target_of_pid(pid, &tg);
	access_judge(kind, &tg, pid);
}

#define PTRACE_POKETEXT_ 4
#define PTRACE_POKEDATA_ 5
#define PTRACE_ATTACH_	 16
#define PTRACE_SEIZE_	 0x4206

/* ptrace of a process outside the sandbox: the tracer dies, so the tracee is detached (and
 * continued) before anything is read or written. Reported as Tamper PTRACE (target: the pid).
 */
SEC("tp/syscalls/sys_enter_ptrace")
int egret_ptrace(struct trace_event_raw_sys_enter *ctx)
{
	long req = (long)ctx->args[0];

	if (req == PTRACE_ATTACH_ || req == PTRACE_SEIZE_ || req == PTRACE_POKETEXT_ ||
	    req == PTRACE_POKEDATA_)
		access_pid(ACCESS_PTRACE, (__u32)ctx->args[1]);
	return 0;
}

/* process_vm_readv/writev: get_user_pages sees the pending SIGKILL and copies nothing */
SEC("tp/syscalls/sys_enter_process_vm_readv")
int egret_vmread(struct trace_event_raw_sys_enter *ctx)
{
	access_pid(ACCESS_VM_READV, (__u32)ctx->args[0]);
	return 0;
}

SEC("tp/syscalls/sys_enter_process_vm_writev")
int egret_vmwrite(struct trace_event_raw_sys_enter *ctx)
{
	access_pid(ACCESS_VM_WRITEV, (__u32)ctx->args[0]);
	return 0;
}

#define PID_FS_MAGIC_	  0x50494446
#define ANON_INODE_MAGIC_ 0x09041934
#define PROC_SUPER_MAGIC_ 0x9fa0

static __always_inline __u64 file_magic(struct file *f)
{
	if (rdonly_cast_ok())
		return KERNEL_PTR(struct file, f)->f_inode->i_sb->s_magic;
	return BPF_CORE_READ(f, f_inode, i_sb, s_magic); /* three reads */
}

/* the first 8 bytes of a file's name, NUL-padded */
static __always_inline __u64 file_name8(struct file *f)
{
	__u64 name = 0;

	bpf_probe_read_kernel_str(&name, sizeof(name),
				  BPF_CORE_READ(f, f_path.dentry, d_name.name));
	return name;
}

#define NAME8(a, b, c, d, e, f, g, h)                                                            \
	((__u64)(a) | (__u64)(b) << 8 | (__u64)(c) << 16 | (__u64)(d) << 24 | (__u64)(e) << 32 | \
	 (__u64)(f) << 40 | (__u64)(g) << 48 | (__u64)(h) << 56)

/* The process a pidfd refers to: pidfs keeps its pid in the inode (6.9), an anon inode named
 * [pidfd] in the file (before). NULL when the file is not a pidfd.
 */
static __always_inline struct pid *pidfd_pid(struct file *f)
{
	__u64 magic = file_magic(f);

	if (magic == PID_FS_MAGIC_)
		return (struct pid *)BPF_CORE_READ(f, f_inode, i_private);
	if (magic == ANON_INODE_MAGIC_ &&
	    file_name8(f) == NAME8('[', 'p', 'i', 'd', 'f', 'd', ']', 0))
		return (struct pid *)BPF_CORE_READ(f, private_data);
	return NULL;
}

/* pidfd_getfd of a process outside: the fd is installed, but its new owner dies before the
 * call returns to it
 */
SEC("tp/syscalls/sys_enter_pidfd_getfd")
int egret_getfd(struct trace_event_raw_sys_enter *ctx)
{
	struct target tg;
	struct file *f;

	if (!confined())
		return 0;
	f = current_fd_file(
		(int)ctx->args[0]); /* the kernel takes an int: the upper half is not the fd */
	if (!f)
		return 0;
	target_of_struct_pid(pidfd_pid(f), &tg);
	access_judge(ACCESS_PIDFD_GETFD, &tg, 0);
	return 0;
}

/* An open of another process's /proc/PID/mem (killed: the fd dies unused) or environ
 * (reported), judged at the open's exit from the file it made.
 */
static __always_inline void proc_open(long ret)
{
	struct proc_inode *pi;
	struct target tg;
	struct inode *ino;
	struct file *f;
	__u64 name;
	__u32 kind;

	if (ret < 0)
		return;
	/* the file first: nearly every open is of no proc file, and that costs fewer loads */
	f = current_fd_file(ret);
	if (!f || file_magic(f) != PROC_SUPER_MAGIC_ || !confined())
		return;
	name = file_name8(f);
	if (name == NAME8('m', 'e', 'm', 0, 0, 0, 0, 0))
		kind = ACCESS_PROC_MEM;
	else if (name == NAME8('e', 'n', 'v', 'i', 'r', 'o', 'n', 0))
		kind = ACCESS_PROC_ENVIRON;
	else
		return;
	ino = BPF_CORE_READ(f, f_inode);
	pi = (struct proc_inode *)((void *)ino -
				   bpf_core_field_offset(struct proc_inode, vfs_inode));
	target_of_struct_pid(BPF_CORE_READ(pi, pid), &tg);
	if (!target_outside(&tg))
		return;
	if (kind == ACCESS_PROC_MEM)
		tamper_report(EGRET_TAMPER_PROC_ACCESS, kind, tg.tgid, kill_current());
	else
		tamper_report(EGRET_TAMPER_PROC_ACCESS, kind, tg.tgid, false);
}

/* the exit of every open (openat here; the loader attaches it to open and openat2) */
SEC("tp/syscalls/sys_exit_openat")
int egret_pmopenat(struct trace_event_raw_sys_exit *ctx)
{
	proc_open(ctx->ret);
	return 0;
}
