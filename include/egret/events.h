/* The record header every egret BPF program writes into the shared ring buffers (`events`, and
 * `bulk_events` for file records), the rings' counters and the per-sandbox loss accounting.
 * Shared by bpf/ and user/: no includes, fixed-width types only; the user side includes
 * <linux/types.h> first.
 */
#ifndef EGRET_EVENTS_H
#define EGRET_EVENTS_H

#define EGRET_RINGBUF_BYTES	  (8u << 20) /* `events` ring buffer size, a power of two */
#define EGRET_BULK_RINGBUF_BYTES  (8u << 20) /* `bulk_events` (file records), a power of two */
#define EGRET_FILE_BUDGET_DEFAULT 20000	     /* file records a second per sandbox (--file-budget) */
#define EGRET_LOSS_KEYS_MAX	  16384	     /* (sandbox, kind) pairs `losses` counts apart */
#define EGRET_EXEC_LOST_MAX	  16384	     /* live processes marked exec-lost at once */
#define EGRET_COMM_LEN		  16
#define EGRET_CGROUP_NAME_LEN	  256 /* a cgroup directory name as records carry it (NAME_MAX + 1) */

/* Record types, every one egret's programs write; the first field of every record is
 * struct egret_event_hdr. user/events/decoders.c registers a decoder for each.
 */
enum egret_event_type {
	EGRET_EV_CONNECT = 1, /* struct egret_connect_event, include/egret/egress.h */
	EGRET_EV_CGROUP = 2,  /* struct egret_cgroup_event, include/egret/confine.h */
	EGRET_EV_TAMPER = 3,  /* struct egret_tamper_event, include/egret/confine.h */
	EGRET_EV_NETNS = 4,   /* struct egret_netns_event, include/egret/dns.h */
	/* the audit stream, include/egret/audit.h */
	EGRET_EV_EXEC = 16,  /* struct egret_exec_event */
	EGRET_EV_FORK = 17,  /* struct egret_fork_event */
	EGRET_EV_EXIT = 18,  /* struct egret_exit_event */
	EGRET_EV_FILE = 19,  /* struct egret_file_event */
	EGRET_EV_FLOW = 20,  /* struct egret_flow_event */
	EGRET_EV_LIMIT = 21, /* struct egret_limit_event */
};

/* What a loss counts (struct egret_loss_key.kind): the record type, but for file records that
 * read a secret path, which are counted apart. Mirrors Loss.RecordKind in
 * proto/egret/v1/events.proto.
 */
#define EGRET_LOSS_FILE_READ 32

/* Indexes into the per-CPU `counters` array. */
enum egret_counter {
	EGRET_CNT_RINGBUF_DROPS = 0, /* records lost: a ring buffer full (either) */
	EGRET_CNT_DROPS_REPORTED,    /* written by egretd: ring buffer drops already reported */
	EGRET_CNT_TAMPER,	     /* tamper attempts stopped */
	EGRET_CNT_BULK_DROPS,	     /* of EGRET_CNT_RINGBUF_DROPS, those of `bulk_events` */
	EGRET_CNT_BUDGET_DROPS,	     /* file records over their sandbox's budget: not sent */
	EGRET_CNT_BUDGET_REPORTED,   /* written by egretd: budget drops already reported */
	EGRET_CNT_EXEC_LOST,	     /* exec records lost: processes marked exec-lost */
	EGRET_CNT_EXEC_UNMARKED,     /* of those, marks `exec_lost` had no room for */
	EGRET_CNT_VERDICT_BASE = 8,  /* + hook * 4 + verdict (enum egret_hook, egret_verdict) */
	EGRET_CNT_MAX = 64,
};

/* egret_event_hdr.flags */
#define EGRET_HDR_EXEC_LOST 0x1 /* the exec record of the image pid runs was lost (`exec_lost`) */

struct egret_event_hdr {
	__u64 ts_ns;	  /* bpf_ktime_get_boot_ns(); egretd merges the rings in this order */
	__u64 sandbox_id; /* cgroup id of the sandbox (bpf/lib/sandbox.bpf.h); 0: a watched cgroup
			   * itself; EGRET_NO_SANDBOX: the host's (audit scope host) */
	__u16 type;	  /* enum egret_event_type */
	__u16 flags;	  /* EGRET_HDR_* */
	__u32 pid;	  /* thread group id of the current task */
	__u32 tid;	  /* thread id */
	__u32 uid;	  /* real uid */
	__u32 gid;	  /* real gid */
	__u32 mnt_ns;	  /* file records: the task's mount namespace (its inode number); else 0 */
	__u8 comm[EGRET_COMM_LEN]; /* task comm, NUL-padded */
};

/* `losses` and `losses_reported`: the records lost, per sandbox and kind. The kernel only adds
 * to `losses`; egretd writes what it reported in `losses_reported` (pinned, so losses made while
 * egretd was down are reported by the next one) and turns the difference into Loss events.
 */
struct egret_loss_key {
	__u64 sandbox_id; /* as egret_event_hdr.sandbox_id */
	__u32 kind;	  /* enum egret_event_type, or EGRET_LOSS_FILE_READ */
	__u32 pad;
};

struct egret_loss {
	__u64 ring;   /* a ring buffer was full */
	__u64 budget; /* over the sandbox's file budget */
};

#endif /* EGRET_EVENTS_H */
