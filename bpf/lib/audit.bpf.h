/* Audit helpers: scope, per-task image ids, path patterns, joining a directory and a name. */
#ifndef EGRET_AUDIT_BPF_H
#define EGRET_AUDIT_BPF_H

#include "lib/confine.bpf.h"
#include "lib/path.bpf.h"

#define AT_FDCWD_     (-100)
#define O_WRONLY_     01
#define O_RDWR_	      02
#define O_CREAT_      0100
#define O_TRUNC_      01000
#define AT_REMOVEDIR_ 0x200
#define EAGAIN_	      11

extern struct task_struct *bpf_task_from_pid(s32 pid) __ksym;
extern void bpf_task_release(struct task_struct *p) __ksym;

/* set by egretd before load */
const volatile bool audit_host = false; /* --audit-scope host */
const volatile struct egret_pattern patterns[EGRET_PATTERNS_MAX] = {};
const volatile __u32 npatterns = 0;
const volatile bool have_read_patterns = false;

/* per task: the process image it runs (exec_id) and when the process started */
struct {
	__uint(type, BPF_MAP_TYPE_TASK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct egret_task_info);
} task_info SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, __u64);
} exec_seq SEC(".maps");

static __always_inline bool in_scope(void)
{
	return audit_host || current_in_root();
}

/* (per-CPU sequence << 8) | cpu: unique per boot without a shared counter */
static __always_inline __u64 exec_id_new(void)
{
	__u32 zero = 0;
	__u64 *seq = bpf_map_lookup_elem(&exec_seq, &zero);

	if (!seq)
		return 0;
	*seq += 1;
	return (*seq << 8) | (bpf_get_smp_processor_id() & 0xff);
}

static __always_inline __u64 exec_id_of(struct task_struct *task)
{
	struct egret_task_info *ti = bpf_task_storage_get(&task_info, task, 0, 0);

	return ti ? ti->exec_id : 0;
}

#define HASH_WINDOW 256 /* the first bytes of a path are hashed for pattern matching */

struct path_comps {
	__u64 hash[EGRET_PATTERN_DEPTH];
	__u32 n;
};

struct hash_walk {
	const char *path;
	struct path_comps *pc;
	__u64 h;
	__u32 len;
	__u32 k;
	bool in;
};

/* One character: a bpf_loop() step, so the verifier checks it once, not once per character. */
static long hash_step(__u32 j, void *arg)
{
	struct hash_walk *w = arg;
	char c = j < w->len ? w->path[j & (HASH_WINDOW - 1)] : '/';

	if (c != '/') {
		w->in = true;
		w->h = (w->h ^ (__u8)c) * EGRET_FNV64_PRIME;
		return 0;
	}
	if (w->in && w->k < EGRET_PATTERN_DEPTH)
		w->pc->hash[w->k++ & (EGRET_PATTERN_DEPTH - 1)] = w->h;
	w->in = false;
	w->h = EGRET_FNV64_OFFSET;
	return j >= w->len ? 1 : 0;
}

/* FNV-1a of each of the path's first EGRET_PATTERN_DEPTH components. */
static __always_inline void path_hash(const char *path, __u32 len, struct path_comps *pc)
{
	struct hash_walk w = { .path = path,
			       .pc = pc,
			       .h = EGRET_FNV64_OFFSET,
			       .len = len > HASH_WINDOW - 1 ? HASH_WINDOW - 1 : len };

	bpf_loop(HASH_WINDOW, hash_step, &w, 0);
	pc->n = w.k;
}

static __always_inline bool pattern_match(const struct path_comps *pc, __u32 idx)
{
	__u32 n = patterns[idx].ncomp;

	if (n > EGRET_PATTERN_DEPTH || pc->n < n)
		return false;
	for (__u32 c = 0; c < EGRET_PATTERN_DEPTH; c++) {
		if (c >= n)
			break;
		if (!(patterns[idx].wild & (1u << c)) && patterns[idx].hash[c] != pc->hash[c])
			return false;
	}
	return true;
}

static __always_inline bool patterns_match(const struct path_comps *pc, __u8 kind)
{
	for (__u32 k = 0; k < EGRET_PATTERNS_MAX; k++) {
		if (k >= npatterns)
			break;
		if (patterns[k].kind == kind && pattern_match(pc, k))
			return true;
	}
	return false;
}

#endif /* EGRET_AUDIT_BPF_H */
