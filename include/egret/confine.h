/* Confinement ABI shared by bpf/confine.bpf.c and user/events/confine.c: what tracepoints see that
 * the cgroup socket hooks cannot (socket families without inet hooks, bpf(), leaving the
 * sandbox's cgroup), and the sandbox cgroups coming and going.
 */
#ifndef EGRET_CONFINE_H
#define EGRET_CONFINE_H

/* egret_cgroup_event.op; mirrors SandboxLifecycle.Kind in proto/egret/v1/events.proto */
enum egret_cgroup_op {
	EGRET_CG_CREATED = 1,
	EGRET_CG_DESTROYED = 2,
	EGRET_CG_FROZEN = 3,
	EGRET_CG_THAWED = 4,
};

/* EGRET_EV_CGROUP: a sandbox cgroup (a direct child of the root) was created or removed */
struct egret_cgroup_event {
	struct egret_event_hdr hdr;
	__u64 cgroup_id; /* the sandbox's cgroup id */
	__u32 op;	 /* enum egret_cgroup_op */
	__u32 pad;
	__u8 name[EGRET_CGROUP_NAME_LEN]; /* its directory name, NUL-terminated */
};

/* egret_tamper_event.kind; mirrors Tamper.Kind in proto/egret/v1/events.proto */
enum egret_tamper_kind {
	EGRET_TAMPER_BPF = 1, /* bpf(2) from a sandbox; target: the command */
	EGRET_TAMPER_CGROUP_ESCAPE =
		2, /* moved a task out of its sandbox; target: destination cgroup id */
	EGRET_TAMPER_SECCOMP = 3,  /* a syscall egretctl run's filter refused; target: its number */
	EGRET_TAMPER_IO_URING = 4, /* io_uring_setup(2); target: the ring size asked for */
	EGRET_TAMPER_PTRACE = 5,   /* ptrace of a process outside the sandbox; target: its pid */
	EGRET_TAMPER_MOUNT =
		6, /* mount(2) and kin; target: 1 mount, 2 move_mount, 3 fsmount, 4 umount */
	EGRET_TAMPER_BPFFS = 7, /* a write under the bpf file system (from a file event) */
	EGRET_TAMPER_COMPAT_SYSCALL =
		8,		       /* a 32-bit (ia32) or x32 system call; target: its number */
	EGRET_TAMPER_CGROUP_PULL = 9,  /* a task moved into a sandbox from outside it; other_pid */
	EGRET_TAMPER_SIGNAL_OUT = 10,  /* a signal to a process outside; target: the signal */
	EGRET_TAMPER_PROC_ACCESS = 11, /* ptrace, pidfd_getfd, process_vm_*, /proc/PID/mem */
	EGRET_TAMPER_PRIVILEGED = 12,  /* capabilities over the host; target: the mask */
	EGRET_TAMPER_PIN_REMOVED = 13, /* a pin of egret's removed; egretd put it back */
};

/* Tasks no egret program ever kills, whatever cgroup they are in (egretd itself, written at
 * start); a sandbox that signals, traces or reads them is killed instead.
 */
#define EGRET_PROTECTED_MAX 16

/* --trusted-mover cgroups: writers under them may move host tasks into a sandbox */
#define EGRET_TRUSTED_MOVERS_MAX 8

/* signal_senders (an LRU hash): the last sandboxed sender of each signal to a protected
 * process, recorded by the kernel when it was sent, for egretd to tell who sent what it reads;
 * for the stop signals the last sender of any kind (sandbox_id ~0: outside every sandbox), so
 * that the keeper continues only a stop a sandbox sent last
 */
#define EGRET_SIGNAL_SENDERS_MAX 256

struct egret_signal_key {
	__u32 tgid; /* the protected process */
	__u32 sig;
};

struct egret_signal_sender {
	__u32 tgid; /* the sender's process */
	__u32 pid;  /* and thread */
	__u64 sandbox_id;
	__u64 ts_ns; /* CLOCK_BOOTTIME */
};

/* EGRET_EV_TAMPER */
struct egret_tamper_event {
	struct egret_event_hdr hdr;
	__u64 target;	 /* see enum egret_tamper_kind */
	__u32 kind;	 /* enum egret_tamper_kind */
	__u32 other_pid; /* the task moved (cgroup escape), 0 otherwise */
	__u8 killed;	 /* 1: egret sent SIGKILL */
	__u8 abi;	 /* enum egret_abi (include/egret/syscalls32.h): COMPAT_SYSCALL's */
	__u8 pad[6];
};

#endif /* EGRET_CONFINE_H */
