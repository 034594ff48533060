/* Writing records into the ring buffers: file records into `bulk_events` (lib/file.bpf.h),
 * every other record into `events`, so a flood of file records never costs an exec, exit,
 * connect verdict, tamper or lifecycle record its place. A record a ring cannot take is counted
 * per sandbox and kind (`losses`), never silent.
 */
#ifndef EGRET_EVENTS_BPF_H
#define EGRET_EVENTS_BPF_H

#include "lib/maps.bpf.h"

/* One record of kind (enum egret_event_type, EGRET_LOSS_FILE_READ) of a sandbox lost: a ring
 * was full, or (budget) the sandbox's file budget was spent. Counted per (sandbox, kind) before
 * the totals: egretd reads the totals first, so each loss a total holds is in `losses` too,
 * unless `losses` had no room (then egretd reports it without a sandbox).
 */
static __always_inline void loss_count(__u64 sandbox_id, __u32 kind, bool budget)
{
	struct egret_loss_key k = { .sandbox_id = sandbox_id, .kind = kind, .pad = 0 };
	struct egret_loss zero = {}, *v;

	v = bpf_map_lookup_elem(&losses, &k);
	if (!v) {
		bpf_map_update_elem(&losses, &k, &zero, BPF_NOEXIST);
		v = bpf_map_lookup_elem(&losses, &k);
	}
	if (v && budget)
		__sync_fetch_and_add(&v->budget, 1);
	else if (v)
		__sync_fetch_and_add(&v->ring, 1);
	counter_inc(budget ? EGRET_CNT_BUDGET_DROPS : EGRET_CNT_RINGBUF_DROPS);
}

/* A record of type for sandbox_id, in `events`; NULL (counted) when the ring is full. */
static __always_inline void *event_reserve_for(__u64 size, __u32 type, __u64 sandbox_id)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e)
		loss_count(sandbox_id, type, false);
	return e;
}

/* The same for a caller that does not say whose record it is: a loss egretd reports without a
 * sandbox or kind. Use event_reserve_for.
 */
static __always_inline void *event_reserve(__u64 size)
{
	void *e = bpf_ringbuf_reserve(&events, size, 0);

	if (!e)
		counter_inc(EGRET_CNT_RINGBUF_DROPS);
	return e;
}

/* Waking egretd costs an inter-processor interrupt per record, more than everything else a
 * connect pays egret; egretd drains the rings on a short timer instead, and is woken only when
 * a ring is filling.
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

/* A variable-length record built elsewhere (task storage, a per-CPU buffer), its header
 * filled, copied into `events`: whether the ring took it.
 */
static __always_inline bool event_output(void *e, __u64 size)
{
	const struct egret_event_hdr *h = e;

	if (!bpf_ringbuf_output(&events, e, size, wakeup_flags()))
		return true;
	loss_count(h->sandbox_id, h->type, false);
	return false;
}

#ifdef EGRET_OBJ_AUDIT
#define BULK_WAKEUP_BYTES (EGRET_BULK_RINGBUF_BYTES / 16)

/* The same into `bulk_events`, for a record counted as kind when it is lost. */
static __always_inline void bulk_output(void *e, __u64 size, __u32 kind)
{
	const struct egret_event_hdr *h = e;
	__u64 flags = bpf_ringbuf_query(&bulk_events, BPF_RB_AVAIL_DATA) > BULK_WAKEUP_BYTES
			      ? BPF_RB_FORCE_WAKEUP
			      : BPF_RB_NO_WAKEUP;

	if (!bpf_ringbuf_output(&bulk_events, e, size, flags))
		return;
	loss_count(h->sandbox_id, kind, false);
	counter_inc(EGRET_CNT_BULK_DROPS);
}
#endif

/* EGRET_HDR_EXEC_LOST when the exec record of tgid's image was lost (lib/proc.bpf.h). */
static __always_inline __u16 hdr_flags(__u32 tgid)
{
	__u32 zero = 0;
	__u64 *n = bpf_map_lookup_elem(&exec_lost_n, &zero);

	if (!tgid || !n || !*n)
		return 0;
	return bpf_map_lookup_elem(&exec_lost, &tgid) ? EGRET_HDR_EXEC_LOST : 0;
}

/* The header every record starts with, from the current task's ids as the caller got them. */
static __always_inline void event_set_hdr(struct egret_event_hdr *h, __u32 type, __u64 sandbox_id,
					  __u64 pid_tgid, __u64 uid_gid)
{
	h->ts_ns = bpf_ktime_get_boot_ns();
	h->sandbox_id = sandbox_id;
	h->type = (__u16)type;
	h->flags = hdr_flags(pid_tgid >> 32);
	h->pid = pid_tgid >> 32;
	h->tid = (__u32)pid_tgid;
	h->uid = (__u32)uid_gid;
	h->gid = uid_gid >> 32;
	h->mnt_ns = 0;
}

/* A header about another process than the current one (a flow's starter, an OOM victim). */
static __always_inline void event_hdr_task(struct egret_event_hdr *h, __u32 tgid, __u32 tid)
{
	h->pid = tgid;
	h->tid = tid;
	h->flags = hdr_flags(tgid);
}

static __always_inline void event_fill_hdr(struct egret_event_hdr *h, __u32 type, __u64 sandbox_id)
{
	event_set_hdr(h, type, sandbox_id, bpf_get_current_pid_tgid(), bpf_get_current_uid_gid());
	bpf_get_current_comm(h->comm, sizeof(h->comm));
}

/* event_fill_hdr() for a tracing program, whose current task is a BTF pointer: its ids, creds
 * and name read with plain loads instead of a helper call each (the same values: the kernel
 * keeps comm NUL-padded, and a kuid is its uid in the initial namespace).
 */
static __always_inline void event_fill_hdr_cur(struct egret_event_hdr *h, __u32 type,
					       __u64 sandbox_id)
{
	struct task_struct *t = bpf_get_current_task_btf();
	const struct cred *cred = t->cred;

	event_set_hdr(h, type, sandbox_id, (__u64)t->tgid << 32 | (__u32)t->pid,
		      (__u64)cred->gid.val << 32 | cred->uid.val);
	__builtin_memcpy(h->comm, t->comm, sizeof(h->comm));
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
