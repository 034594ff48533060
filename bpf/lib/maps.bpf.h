/* Every map of egret's BPF objects, and the layout of the values only BPF code reads. The first
 * part is in every object. The rest is in some objects only: an object names itself before its
 * first include (EGRET_OBJ_EGRESS, EGRET_OBJ_CONFINE, EGRET_OBJ_AUDIT) and gets the maps it owns,
 * and no others. egretd shares maps by name: it loads the first object that has one, pins it
 * under its state dir and hands the same map to the other objects that have it, so there is one
 * ring buffer of each kind, one counter array and one socket store per egret instance.
 */
#ifndef EGRET_MAPS_BPF_H
#define EGRET_MAPS_BPF_H

#include "lib/common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EGRET_RINGBUF_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EGRET_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

/* Records lost, per sandbox and kind (include/egret/events.h): added to by every object. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EGRET_LOSS_KEYS_MAX);
	__type(key, struct egret_loss_key);
	__type(value, struct egret_loss);
} losses SEC(".maps");

/* what egretd reported of `losses` (collector.c); no program reads it */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EGRET_LOSS_KEYS_MAX);
	__type(key, struct egret_loss_key);
	__type(value, struct egret_loss);
} losses_reported SEC(".maps");

/* Processes (by tgid) whose exec record was lost, and those they forked since: every record
 * of theirs says so (EGRET_HDR_EXEC_LOST, lib/events.bpf.h) until the next exec whose record is
 * kept, or the exit (lib/proc.bpf.h). A hash and not task storage: the cgroup programs that
 * write connect records cannot read task storage.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EGRET_EXEC_LOST_MAX);
	__type(key, __u32);
	__type(value, __u32);
} exec_lost SEC(".maps");

/* How many processes `exec_lost` holds: while none (nearly always), a record's header costs no
 * lookup of its own.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} exec_lost_n SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct egret_sock_meta);
} sock_meta SEC(".maps");

/* The rule trie; see include/egret/policy.h. Renamed (policy_vN) whenever its key or value
 * layout changes, so an egretd of another layout never adopts it.
 */
struct policy_trie {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EGRET_POLICY_MAX_ENTRIES);
	__uint(key_size, sizeof(struct egret_policy_key));
	__uint(value_size, sizeof(struct egret_policy_val));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct policy_trie);
} policy_v1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_SANDBOXES_MAX);
	__type(key, __u64);
	__type(value, struct egret_sandbox);
} sandboxes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_SANDBOXES_MAX);
	__type(key, __u64);
	__type(value, __u8);
} sandbox_rules SEC(".maps");

/* a sandbox's egress budget and its counts (include/egret/policy.h); whether any is set */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EGRET_SANDBOXES_MAX);
	__type(key, __u64);
	__type(value, struct egret_budget);
} egress_budgets SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} egress_budget_n SEC(".maps");

/* egretd's record of registrations (include/egret/policy.h); no program reads it */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EGRET_SANDBOXES_MAX);
	__type(key, __u64);
	__type(value, struct egret_sandbox_meta);
} sandbox_meta SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_DNS_LISTENERS_MAX);
	__type(key, __u64);
	__type(value, struct egret_dns_listener);
} dns_listeners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EGRET_DNS_CLIENTS_MAX);
	__type(key, struct egret_dns_client_key);
	__type(value, struct egret_dns_client);
} dns_clients SEC(".maps");

/* raised after each change of a dns_clients value in its slot; egretd reads it mapped */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << EGRET_DNS_CLIENT_GEN_BITS);
	__type(key, __u32);
	__type(value, __u64);
} dns_client_gen SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_DNS_ALLOW_MAX);
	__type(key, struct egret_dns_allow_key);
	__type(value, struct egret_dns_allow);
} dns_allow SEC(".maps");

/* a sandboxed socket's traffic, from its first allowed connect or send to its close; kept with
 * the socket, so it needs no key, no eviction and no clean-up
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct egret_flow);
} sock_flows SEC(".maps");

/* network namespaces already reported as lacking a listener (rate limit) */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} netns_reported SEC(".maps");

/* ---- confine and audit: tracepoints on the sandboxes' tasks -------------------------------- */

#if defined(EGRET_OBJ_CONFINE) || defined(EGRET_OBJ_AUDIT)
#define EGRET_MAPS_TASKS

/* The sandbox each task entered, kept per task: when a task moves itself, the tracepoint runs
 * after the move, and only this remembers where it came from.
 */
struct task_sandbox {
	__u64 sandbox_id;
	__u32 doomed; /* a group leader's: kill_task() marked its process (1), egret_reap killed it (2) */
	__u32 flags; /* a group leader's: TASK_FOREIGN */
};

/* task_sandbox.flags: the process was moved into its sandbox from outside by someone else (a
 * pull): it is in the sandbox's cgroup, so its egress follows the sandbox's rules, but it is not
 * the sandbox's code, and egret never kills it for what it does.
 */
#define TASK_FOREIGN 1u

struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct task_sandbox);
} task_sandbox SEC(".maps");

/* Without bpf_task_from_pid (before 6.3): the sandbox of every sandboxed task by its pid, kept
 * by the fork, exec, exit and cgroup-move programs, so that ptrace's target can be placed.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EGRET_PIDS_MAX);
	__type(key, __u32);
	__type(value, __u64);
} sandbox_pids SEC(".maps");

/* egretd and its own helpers (EGRET_PROTECTED_MAX), keyed by tgid; written by egretd at start */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_PROTECTED_MAX);
	__type(key, __u32);
	__type(value, __u32);
} protected_tgids SEC(".maps");

/* The sandboxes whose code has started: an exec happened in them (lib/confine.bpf.h). Keyed by
 * sandbox id; removed with the cgroup.
 */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_SANDBOXES_MAX);
	__type(key, __u64);
	__type(value, __u8);
} sandbox_started SEC(".maps");

/* How many processes kill_task() marked have not yet passed a syscall exit (egret_reap); a
 * pinned map, so a restarted egretd's programs see the marks of the previous one's.
 */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} doomed SEC(".maps");
#endif

/* ---- confine only ---------------------------------------------------------------------------- */

#ifdef EGRET_OBJ_CONFINE
/* refuse mode under an audit policy: the processes already reported, once each */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u8);
} compat_seen SEC(".maps");

/* socketcall(SYS_SOCKET) between entry and exit: the family egret_csys judged, by thread */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u32);
	__type(value, __u32);
} socketcall_fam SEC(".maps");

/* a sandbox lifecycle record being built (lib/confine.bpf.h) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct egret_cgroup_event);
} cgroup_scratch SEC(".maps");

/* the last sandboxed sender of each signal to a protected process (include/egret/confine.h) */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EGRET_SIGNAL_SENDERS_MAX);
	__type(key, struct egret_signal_key);
	__type(value, struct egret_signal_sender);
} signal_senders SEC(".maps");
#endif

/* ---- audit only ------------------------------------------------------------------------------ */

#ifdef EGRET_OBJ_AUDIT
/* File records, apart from every other record: a flood of them can fill this ring and never
 * `events`, where exec, exit, connect verdicts, tamper and lifecycle records go.
 */
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EGRET_BULK_RINGBUF_BYTES);
} bulk_events SEC(".maps");

/* A sandbox's file records in the current second (lib/file.bpf.h), reads of secret paths
 * counted apart; an evicted entry only starts a fresh second.
 */
struct file_budget {
	__u64 second; /* boot time in seconds the counts are of */
	__u32 writes; /* records other than reads */
	__u32 reads;
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EGRET_SANDBOXES_MAX);
	__type(key, __u64);
	__type(value, struct file_budget);
} file_budgets SEC(".maps");

#define PATH_SCRATCH 4096 /* power of two: offsets are masked with PATH_SCRATCH - 1 */

/* Room past PATH_SCRATCH, so the verifier can see that masked offsets plus a bounded length
 * stay inside; and the walk's state (lib/path.bpf.h). The state is kept here and not on the
 * stack: a bpf_loop() callback's stack state made 6.12's verifier walk 400,000 instructions for
 * one exec program (it follows each iteration's known values), and 6.1's check it with the first
 * iteration's values only; of a map value's contents neither knows anything.
 */
struct path_scratch {
	char buf[PATH_SCRATCH + EGRET_PATH_MAX];
	__u64 dentry;	   /* struct dentry *, the walk's position */
	__u64 vfsmnt;	   /* struct vfsmount * it is on */
	__u64 mnt;	   /* the struct mount around vfsmnt */
	__u64 mnt_root;	   /* vfsmnt's root dentry */
	__u64 root_dentry; /* the task's root, where the walk stops */
	__u64 root_mnt;
	__u32 pos;	/* where the next name ends in buf: the path is written backwards */
	__u32 names;	/* 0: names are not copied, only the first one noted (path_first_name) */
	__u64 top_name; /* the last name walked (the path's first): its bytes and length */
	__u32 top_len;
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct path_scratch);
} path_scratch SEC(".maps");

/* per task: the process image it runs (exec_id) and when the process started */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct egret_task_info);
} task_info SEC(".maps");

/* exec ids: a sequence per CPU (lib/audit.bpf.h) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} exec_seq SEC(".maps");

/* The path pattern matcher's component hashes (lib/audit.bpf.h), in a per-CPU map and not on
 * the stack: of a map value the verifier knows nothing, so it never takes the code that uses
 * them for dead, and its loop's states stay few.
 */
struct match_state {
	__u64 hash[EGRET_PATTERN_DEPTH]; /* FNV-1a of each of the first components */
	__u32 n;			 /* components hashed */
	__u32 pad;
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct match_state);
} match_state SEC(".maps");

/* an exec record being built (lib/proc.bpf.h) */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct egret_exec_event);
} exec_scratch SEC(".maps");

/* the file names (the executed file's, a script's interpreter's) whose execs carry their
 * environment (lib/proc.bpf.h): a package manager's registry may be in it; egretd fills it
 */
struct env_name {
	char name[EGRET_ENV_NAME_LEN];
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_ENV_PROGRAMS);
	__type(key, struct env_name);
	__type(value, __u8);
} env_programs SEC(".maps");

/* The file record being built at a syscall's exit (one program runs to its end on a CPU); the
 * call's arguments wait in the task's egret_task_info (lib/file.bpf.h)
 */
struct file_scratch {
	struct egret_file_event e;
	char slack[EGRET_PATH_MAX]; /* lets the verifier see "dir/name" writes stay inside */
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct file_scratch);
} file_scratch SEC(".maps");

/* the start-up self-test's path and pattern kind, written by egretd (egret_selftest) */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct egret_selftest);
} selftest SEC(".maps");
#endif

static __always_inline void counter_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

static __always_inline void counter_verdict(__u8 hook, __u8 verdict)
{
	counter_inc(EGRET_CNT_VERDICT(hook, verdict));
}

#endif /* EGRET_MAPS_BPF_H */
