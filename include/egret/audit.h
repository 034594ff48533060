/* Audit records shared by bpf/audit.bpf.c and user/events/audit.c: processes, files, flows, sandbox
 * lifecycle and resource limits, captured where the sandbox cannot suppress them. Mirrored by
 * ProcessExec, ProcessFork, ProcessExit, FileActivity, NetFlow, SandboxLifecycle and
 * ResourceLimit in proto/egret/v1/events.proto.
 */
#ifndef EGRET_AUDIT_H
#define EGRET_AUDIT_H

#define EGRET_ARGS_MAX	    4096 /* bytes of argv an exec event carries (NUL-separated) */
#define EGRET_PATH_MAX	    1024 /* bytes of a path; longer ones are cut and flagged */
#define EGRET_PATH_DEPTH    48	 /* directory levels walked to resolve a path */
#define EGRET_PATTERNS_MAX  32	 /* configured path patterns */
#define EGRET_PATTERN_LEN   128	 /* characters of a pattern's text */
#define EGRET_PATTERN_DEPTH 8	 /* components a pattern may have */
#define EGRET_ENV_MAX	    8192 /* bytes of a package manager's environment an exec carries */
#define EGRET_ENV_NAME_LEN  16	 /* the key of env_programs: an executable's file name */
#define EGRET_ENV_PROGRAMS  256	 /* names in env_programs */

/* the record types (EGRET_EV_EXEC ... EGRET_EV_LIMIT) are in enum egret_event_type,
 * include/egret/events.h
 */

/* egret_exec_event.flags */
#define EGRET_EXEC_ARGS_CUT 0x1 /* argv was longer than EGRET_ARGS_MAX */
#define EGRET_EXEC_EXE_CUT  0x2 /* the executable's path was cut */
#define EGRET_EXEC_CWD_CUT  0x4
#define EGRET_EXEC_ENV_CUT  0x8 /* the environment was longer than EGRET_ENV_MAX - 1 */

/* Capabilities that give a sandbox power over the host, any of them effective or permitted in
 * the initial user namespace: SYS_ADMIN 21, NET_ADMIN 12, SYS_PTRACE 19, SYS_MODULE 16,
 * BPF 39, PERFMON 38
 */
#define EGRET_CAPS_DANGER \
	((1ull << 21) | (1ull << 12) | (1ull << 19) | (1ull << 16) | (1ull << 39) | (1ull << 38))

/* A process image, as task storage keeps it: what every later event of the task links to. */
struct egret_task_info {
	__u64 exec_id;	/* unique per boot: (per-CPU counter << 8) | cpu */
	__u64 start_ns; /* when the process started (boot time) */
	__u32 exited;	/* the group leader's: the process's exit was reported */
	__u32 pad;
	/* a file call between its syscall's entry and exit, this task's (bpf/lib/file.bpf.h):
	 * kept here because a process has this storage from its fork on, and allocating another
	 * one at its first file call was most of an exec storm's file cost
	 */
	__u64 file_name;  /* user pointer to the path argument */
	__u64 file_name2; /* rename: the new path */
	__s32 file_dfd, file_dfd2;
	__u32 file_flags;
	__u16 file_op;
	__u8 file_active;
	__u8 file_pad;
};

/* EGRET_EV_EXEC. exe and cwd follow args in data[], then the environment: args_len + exe_len +
 * cwd_len + env_len bytes. The environment is read only when the executed file's name is in
 * env_programs (package managers and the interpreters that run them, filled by egretd): egretd
 * reads a run's registry from it without racing the process's exit, and never sends it on.
 */
struct egret_exec_event {
	struct egret_event_hdr hdr;
	__u64 exec_id;
	__u64 parent_exec_id; /* 0 when the parent's image was never seen */
	__u32 ppid;
	__u32 euid;
	__u32 egid;
	__u32 flags;	/* EGRET_EXEC_* */
	__u16 args_len; /* argv bytes, NUL-separated */
	__u16 exe_len;	/* absolute path of the executable, no NUL */
	__u16 cwd_len;	/* absolute working directory, no NUL */
	__u16 argc;
	__u64 cap_eff;	    /* effective capabilities over the host (0 in a child user ns) */
	__u64 cap_prm;	    /* permitted, likewise */
	__u32 userns_level; /* of the new cred's user namespace; 0: the initial one */
	__u16 env_len;	    /* the environment's bytes (NUL-separated), 0 when not read */
	__u16 pad;
	__u8 data[EGRET_ARGS_MAX + 2 * EGRET_PATH_MAX + EGRET_ENV_MAX];
};

/* EGRET_EV_FORK: a new process (not a thread) */
struct egret_fork_event {
	struct egret_event_hdr hdr; /* the parent */
	__u64 exec_id;		    /* the image both run now */
	__u32 child_pid;
	__u32 pad;
};

/* EGRET_EV_EXIT: the last thread of a process ended */
struct egret_exit_event {
	struct egret_event_hdr hdr;
	__u64 exec_id;
	__u64 duration_ns; /* since the process started */
	__u32 exit_code;   /* wait status: (code << 8) | signal, as the kernel keeps it */
	__u32 pad;
};

/* egret_file_event.op; mirrors FileActivity.Op */
enum egret_file_op {
	EGRET_FILE_CREATE = 1, /* opened with O_CREAT */
	EGRET_FILE_WRITE = 2,  /* opened for writing (O_WRONLY, O_RDWR, O_TRUNC) */
	EGRET_FILE_READ = 3,   /* opened for reading: only paths matching a read pattern */
	EGRET_FILE_UNLINK = 4,
	EGRET_FILE_RMDIR = 5,
	EGRET_FILE_RENAME = 6,
	EGRET_FILE_CHMOD = 7,
};

#define EGRET_FILE_PATH_CUT  0x1
#define EGRET_FILE_PATH2_CUT 0x2
#define EGRET_FILE_BPFFS     0x4 /* the path is under bpffs: also a tamper attempt */

/* EGRET_EV_FILE. path (and for rename the new path) follow in data[]. */
struct egret_file_event {
	struct egret_event_hdr hdr;
	__u64 exec_id;
	__s32 result; /* the syscall's return value: fd, 0, or -errno */
	__u32 flags;  /* open flags, or the chmod mode */
	__u16 op;     /* enum egret_file_op */
	__u16 cut;    /* EGRET_FILE_* */
	__u16 path_len;
	__u16 path2_len;
	__u8 data[2 * EGRET_PATH_MAX];
};

/* EGRET_EV_FLOW: a socket that carried traffic closed */
struct egret_flow_event {
	struct egret_event_hdr hdr;
	__u64 exec_id;
	__u64 duration_ns;
	__u64 bytes_out, bytes_in;
	__u64 packets_out, packets_in;
	__u32 saddr[4]; /* network order, IPv4 mapped */
	__u32 daddr[4];
	__u16 sport, dport; /* host order */
	__u8 protocol;
	__u8 family;
	__u8 by_cookie; /* who started the flow, and when, is the connect record with this cookie
			 * (egretd fills them in; hdr has the close's time): 1, hdr.sandbox_id is
			 * the socket's cgroup's sandbox; 2, that cgroup was removed and is in no
			 * sandbox now: hdr.sandbox_id is its own id (a removed sandbox's, or not) */
	__u8 pad;
	__u64 cookie; /* the socket's cookie, when a connect record carried it; else 0 */
};

/* Who started a flow and when: noted by the connect or send that began it. */
struct egret_flow_start {
	__u64 start_ns;
	__u64 sandbox_id;
	__u32 pid; /* the process that started the flow */
	__u32 uid;
	__u32 gid;
	__u32 pad;
	__u8 comm[EGRET_COMM_LEN];
};

/* A socket's flow in its storage (`sock_flows`), from its first allowed connect or send on */
struct egret_flow {
	struct egret_flow_start st;
	__u64 bytes_out, bytes_in; /* UDP: counted by the skb programs; TCP: from tcp_sock */
	__u64 packets_out, packets_in;
	__u32 saddr[4]; /* UDP: the addresses, as the first connect/send saw them */
	__u32 daddr[4];
	__u16 sport, dport; /* host order; sport filled from the first packet if unbound */
	__u8 family, protocol;
	__u8 pad[2];
};

/* egret_limit_event.kind; mirrors ResourceLimit.Kind */
enum egret_limit_kind {
	EGRET_LIMIT_OOM_KILL = 1,      /* the OOM killer chose a sandboxed process */
	EGRET_LIMIT_PIDS = 2,	       /* a fork failed with EAGAIN in a pids cgroup at its limit */
	EGRET_LIMIT_EGRESS_BUDGET = 5, /* a sandbox's egress crossed its budget (egret_budget) */
	EGRET_LIMIT_EGRESS_RATE = 7, /* its egress went over its rate: the first drop of a spell */
};

/* EGRET_EV_LIMIT */
struct egret_limit_event {
	struct egret_event_hdr hdr; /* the victim / the forking task */
	__u64 exec_id;
	__u64 usage;	/* OOM: the victim's resident bytes; PIDS: pids.current; EGRESS_BUDGET: the
		      * bytes counted with the crossing packet's; EGRESS_RATE: the bytes the rate
		      * refused since it was set, this packet's included */
	__u64 limit;	/* OOM: memory.max in bytes (v1 or v2); PIDS: pids.max; EGRESS_BUDGET: the
		      * budget's bytes; EGRESS_RATE: bytes a second */
	__u32 kind;	/* enum egret_limit_kind */
	__u32 period_s; /* EGRESS_BUDGET: the budget's period, 0 for the total; EGRESS_RATE: 1 */
	__u8 cgroup[EGRET_CGROUP_NAME_LEN]; /* the limiting cgroup's directory name, NUL-padded */
};

/* `audit_patterns`: path patterns the kernel filters file events with */
#define EGRET_PATTERN_WRITE 1 /* writes, creates, deletes, renames, chmods under it are reported */
#define EGRET_PATTERN_READ  2 /* reads matching it are reported (secrets) */
#define EGRET_PATTERN_SKIP  3 /* nothing under it is reported (/dev, /proc, /sys) */

/* A path prefix as component hashes: "/home/ * /.ssh" is 3 components, the second a wildcard.
 * The kernel hashes a path's first components the same way (FNV-1a 64, EGRET_FNV64_*).
 */
struct egret_pattern {
	__u8 kind;  /* EGRET_PATTERN_*; 0: unused slot */
	__u8 ncomp; /* components, 0 for "/" (everything) */
	__u8 wild;  /* bit c set: component c is '*' */
	__u8 pad[5];
	__u64 hash[EGRET_PATTERN_DEPTH];
};

/* `selftest` map value: a path egretd asks the kernel's pattern matcher about at start, by
 * running egret_selftest with BPF_PROG_TEST_RUN (its return value: reported or not); user/kernel/selftest.c
 */
#define EGRET_SELFTEST_PATH 256 /* also the bytes of a path the matcher looks at */

struct egret_selftest {
	__u32 len;  /* bytes of path */
	__u32 kind; /* EGRET_PATTERN_WRITE or EGRET_PATTERN_READ */
	char path[EGRET_SELFTEST_PATH];
};

#endif /* EGRET_AUDIT_H */
