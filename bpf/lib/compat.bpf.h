/* What differs between the kernels egret runs on, Debian 12's 6.1 to the newest (README
 * "Kernels"): layouts of older kernels as CO-RE flavors of the checked-in vmlinux.h's types,
 * kfuncs declared weak (absent ones resolve to 0), and the switches egretd sets before load from
 * what it probed (user/kernel/kfeatures.c): a switch that is off makes the verifier drop the code that
 * needs the feature, so the same object loads everywhere. A kfunc is guarded by its switch alone,
 * never by bpf_ksym_exists(): that takes the kfunc's address, an instruction kernels before 6.4
 * refuse when the kfunc exists (6.2 and 6.3 would load nothing).
 */
#ifndef EGRET_COMPAT_BPF_H
#define EGRET_COMPAT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "egret/features.h"

/* set by egretd before load */
const volatile bool have_task_from_pid = false;	   /* kfunc bpf_task_from_pid (6.3) */
const volatile bool have_send_signal_task = false; /* kfunc bpf_send_signal_task (6.13) */
const volatile __u32 skb_task_helpers = 0;	   /* EGRET_SKB_*: current-task helpers in skb */
const volatile bool have_rdonly_cast = false;	   /* kfunc bpf_rdonly_cast (6.2) */

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;
extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type,
				__u64 value) __ksym __weak;

extern void *bpf_rdonly_cast(const void *obj, __u32 btf_id) __ksym __weak;

static __always_inline bool task_from_pid_ok(void)
{
	return have_task_from_pid;
}

static __always_inline bool send_signal_task_ok(void)
{
	return have_send_signal_task;
}

static __always_inline bool rdonly_cast_ok(void)
{
	return have_rdonly_cast;
}

/* A kernel pointer held as a number, typed for plain loads (each a load, where
 * bpf_probe_read_kernel() is a helper call); only where rdonly_cast_ok(). A load the pointer
 * cannot make reads 0, as a failed read would.
 */
#define KERNEL_PTR(type, p) \
	((type *)bpf_rdonly_cast((const void *)(__u64)(p), bpf_core_type_id_kernel(type)))

/* p->field of a kernel pointer held as a number: a plain load where rdonly_cast_ok(), else a
 * bpf_probe_read_kernel()
 */
#define KERNEL_READ(type, p, field) \
	(rdonly_cast_ok() ? KERNEL_PTR(type, p)->field : BPF_CORE_READ((type *)(p), field))

/* mm_struct.rss_stat: one mm_rss_stat of atomic counters up to 6.1, an array of per-CPU
 * counters from 6.2 (whose shared count is what this reads)
 */
struct mm_rss_stat___pre62 {
	atomic_long_t count[4];
} __attribute__((preserve_access_index));

struct mm_struct___pre62 {
	struct mm_rss_stat___pre62 rss_stat;
} __attribute__((preserve_access_index));

struct mm_struct___v62 {
	struct percpu_counter rss_stat[4];
} __attribute__((preserve_access_index));

/* resident pages of one kind (MM_FILEPAGES 0, MM_ANONPAGES 1, MM_SHMEMPAGES 3); i a constant */
#define MM_RSS(mm, i)                                                                         \
	(bpf_core_type_exists(struct mm_rss_stat___pre62)                                     \
		 ? BPF_CORE_READ((struct mm_struct___pre62 *)(mm), rss_stat.count[i].counter) \
		 : BPF_CORE_READ((struct mm_struct___v62 *)(mm), rss_stat[i].count))

#endif /* EGRET_COMPAT_BPF_H */
