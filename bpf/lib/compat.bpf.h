/* What differs between the kernels egret runs on, Debian 12's 6.1 to the newest (README
 * "Kernels"): layouts of older kernels as CO-RE flavors of the checked-in vmlinux.h's types,
 * kfuncs declared weak (absent ones resolve to 0), and the switches egretd sets before load from
 * what it probed (user/kernel/kfeatures.c): a switch that is off makes the verifier drop the code that
 * needs the feature, so the same object loads everywhere.
 */
#ifndef EGRET_COMPAT_BPF_H
#define EGRET_COMPAT_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>

#include "egret/features.h"

#ifndef bpf_ksym_exists /* libbpf < 1.2 */
#define bpf_ksym_exists(sym) (!!(sym))
#endif

/* set by egretd before load */
const volatile bool have_task_from_pid = false;	   /* kfunc bpf_task_from_pid (6.3) */
const volatile bool have_send_signal_task = false; /* kfunc bpf_send_signal_task (6.13) */
const volatile __u32 skb_task_helpers = 0;	   /* EGRET_SKB_*: current-task helpers in skb */

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym __weak;
extern void bpf_task_release(struct task_struct *p) __ksym __weak;
extern int bpf_send_signal_task(struct task_struct *task, int sig, enum pid_type type,
				__u64 value) __ksym __weak;

static __always_inline bool task_from_pid_ok(void)
{
	return have_task_from_pid && bpf_ksym_exists(bpf_task_from_pid) &&
	       bpf_ksym_exists(bpf_task_release);
}

static __always_inline bool send_signal_task_ok(void)
{
	return have_send_signal_task && bpf_ksym_exists(bpf_send_signal_task);
}

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
