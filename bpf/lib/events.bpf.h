/* Writing records into the shared ring buffer; a failed reservation is counted, never silent. */
#ifndef EGRET_EVENTS_BPF_H
#define EGRET_EVENTS_BPF_H

#include "lib/maps.bpf.h"

static __always_inline void *event_reserve(__u64 size)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e)
		counter_inc(EGRET_CNT_RINGBUF_DROPS);
	return e;
}

/* Waking egretd costs an inter-processor interrupt per record, more than everything else a
 * connect pays egret; egretd drains the ring on a short timer instead, and is woken only when
 * the ring is filling.
 */
#define WAKEUP_BYTES (EGRET_RINGBUF_BYTES / 16)

static __always_inline __u64 wakeup_flags(void)
{
	return bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) > WAKEUP_BYTES ? BPF_RB_FORCE_WAKEUP
									    : BPF_RB_NO_WAKEUP;
}

static __always_inline void event_submit(void *e)
{
	bpf_ringbuf_submit(e, wakeup_flags());
}

/* A variable-length record built elsewhere (task storage, a per-CPU buffer), copied in. */
static __always_inline void event_output(void *e, __u64 size)
{
	if (bpf_ringbuf_output(&events, e, size, wakeup_flags()))
		counter_inc(EGRET_CNT_RINGBUF_DROPS);
}

/* The header every record starts with, from the current task's ids as the caller got them. */
static __always_inline void event_set_hdr(struct egret_event_hdr *h, __u32 type, __u64 sandbox_id,
					  __u64 pid_tgid, __u64 uid_gid)
{
	h->ts_ns = bpf_ktime_get_boot_ns();
	h->sandbox_id = sandbox_id;
	h->type = type;
	h->pid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->uid = (__u32)uid_gid;
	h->gid = uid_gid >> 32;
	h->mnt_ns = 0;
}

static __always_inline void event_fill_hdr(struct egret_event_hdr *h, __u32 type, __u64 sandbox_id)
{
	event_set_hdr(h, type, sandbox_id, bpf_get_current_pid_tgid(), bpf_get_current_uid_gid());
	bpf_get_current_comm(h->comm, sizeof(h->comm));
}

/* The same in a cgroup_skb program, with only the current-task helpers this kernel lets it call
 * (6.1 has none of them there, 6.12 no bpf_get_current_uid_gid); what it may not ask stays 0.
 */
static __always_inline void event_fill_hdr_skb(struct egret_event_hdr *h, __u32 type,
					       __u64 sandbox_id)
{
	__u64 pid_tgid = 0, uid_gid = 0;

	if (skb_task_helpers & EGRET_SKB_PID_TGID)
		pid_tgid = bpf_get_current_pid_tgid();
	if (skb_task_helpers & EGRET_SKB_UID_GID)
		uid_gid = bpf_get_current_uid_gid();
	event_set_hdr(h, type, sandbox_id, pid_tgid, uid_gid);
	__builtin_memset(h->comm, 0, sizeof(h->comm));
	if (skb_task_helpers & EGRET_SKB_COMM)
		bpf_get_current_comm(h->comm, sizeof(h->comm));
}

#endif /* EGRET_EVENTS_BPF_H */
