/* What egretd learns about the kernel at start and tells the BPF objects before load (their
 * .rodata): which fallbacks the programs take where the kernel lacks a helper or kfunc. Set by
 * user/kernel/kfeatures.c, read by bpf/lib/compat.bpf.h; README "Kernels" says what each one is for.
 */
#ifndef EGRET_FEATURES_H
#define EGRET_FEATURES_H

/* skb_task_helpers: the current-task helpers cgroup_skb programs may call on this kernel */
#define EGRET_SKB_PID_TGID 0x1 /* bpf_get_current_pid_tgid */
#define EGRET_SKB_UID_GID  0x2 /* bpf_get_current_uid_gid */
#define EGRET_SKB_COMM	   0x4 /* bpf_get_current_comm */

#define EGRET_PIDS_MAX	   65536 /* sandboxed tasks sandbox_pids tracks without bpf_task_from_pid */

#endif /* EGRET_FEATURES_H */
