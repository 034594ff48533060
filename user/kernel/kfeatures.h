/* What this kernel offers egret's programs, found at start before anything is loaded: kfuncs
 * in the kernel's BTF, helpers a program type may call, tracepoints in tracefs. Each optional
 * part of egret is then on, replaced by a fallback, reduced, not needed, or a gap (a protection
 * that is off); a gap stops egretd in enforce mode unless the operator accepts it. egretd pins
 * the result (maps/kernel_features) so egretctl can say what is off and which programs were
 * deliberately not loaded. README "Kernels" describes every feature.
 */
#ifndef EGRET_USER_FEATURES_H
#define EGRET_USER_FEATURES_H

#include <stdbool.h>
#include <stdio.h>

#include <linux/types.h>

#include "paths.h"

#define FEATURES_MAX	    8
#define FEATURES_PROBES_MAX 16
#define FEATURES_MAP	    "kernel_features" /* its pin under <state>/maps */
#define FEATURE_NAME_LEN    24
#define FEATURE_DETAIL_LEN  320
#define FEATURE_PROGS_LEN   96
#define FEATURE_RELEASE_LEN 65

/* mirrors KernelFeature.State in proto/egret/v1/events.proto */
enum feature_state {
	FEATURE_ON = 1,		/* the kernel has it */
	FEATURE_FALLBACK = 2,	/* it has not; another mechanism does the job */
	FEATURE_REDUCED = 3,	/* it has not; events carry less */
	FEATURE_NOT_NEEDED = 4, /* it has not, nor what it would watch */
	FEATURE_GAP = 5,	/* it has not and nothing replaces it: a protection is off */
};

/* One optional part of egret on this kernel; also the pinned map's value. */
struct feature_status {
	char name[FEATURE_NAME_LEN];	 /* what --accept-kernel-gap takes */
	__u32 state;			 /* enum feature_state */
	__u32 accepted;			 /* a gap the operator accepted */
	char detail[FEATURE_DETAIL_LEN]; /* one line: what egret does on this kernel */
	char progs[FEATURE_PROGS_LEN];	 /* programs not loaded because of it, space-separated */
};

/* What egretd found, and the switches the BPF objects get (include/egret/features.h). */
struct kernel_features {
	char release[FEATURE_RELEASE_LEN]; /* uname -r */
	bool task_from_pid;		   /* kfunc bpf_task_from_pid */
	bool send_signal_task;		   /* kfunc bpf_send_signal_task */
	bool sys_exit_btf;		   /* tp_btf/sys_exit can attach */
	bool fchmodat2;			   /* tracepoint syscalls/sys_enter_fchmodat2 */
	bool sys_enter_btf;		   /* tp_btf/sys_enter can attach */
	bool rdonly_cast;		   /* tracepoints may call kfunc bpf_rdonly_cast */
	bool compat_judge;		   /* --compat judge (not a probe: the operator's) */
	__u32 skb_task_helpers;		   /* EGRET_SKB_* */
	unsigned int n;
	struct feature_status f[FEATURES_MAX];
};

/* What the operator said: probes to treat as absent, gaps accepted (option values). */
struct feature_options {
	const char *without[FEATURES_PROBES_MAX];
	unsigned int nwithout;
	const char *accept[FEATURES_MAX];
	unsigned int naccept;
	bool compat_judge; /* --compat judge */
};

bool kfeatures__is_probe(const char *name);
bool kfeatures__is_feature(const char *name);
const char *kfeatures__probe_names(void);
const char *kfeatures__feature_names(void);
int kfeatures__probe(struct kernel_features *kf, const struct feature_options *o);
int kfeatures__check_gaps(const struct kernel_features *kf, bool enforce);
const char *kfeatures__gap(const struct kernel_features *kf);
bool kfeatures__prog_wanted(const struct kernel_features *kf, const char *prog);
bool kfeatures__prog_skipped(const struct kernel_features *kf, const char *prog);
unsigned int kfeatures__nskipped(const struct kernel_features *kf);
const char *kfeatures__state_name(enum feature_state s);

int kfeatures__pin(const struct kernel_features *kf, const struct egret_paths *p);
int kfeatures__read_pinned(const struct egret_paths *p, struct kernel_features *kf);
void kfeatures__print(FILE *f, const struct kernel_features *kf);
void kfeatures__json(FILE *f, const struct kernel_features *kf);

#endif /* EGRET_USER_FEATURES_H */
