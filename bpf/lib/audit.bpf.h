/* Audit helpers: scope, per-task image ids, path patterns, joining a directory and a name. */
#ifndef EGRET_AUDIT_BPF_H
#define EGRET_AUDIT_BPF_H

#include "lib/confine.bpf.h"
#include "lib/path.bpf.h"

#ifndef EGRET_OBJ_AUDIT
#error "lib/audit.bpf.h needs the audit maps: define EGRET_OBJ_AUDIT first"
#endif

#define AT_FDCWD_     (-100)
#define O_WRONLY_     01
#define O_RDWR_	      02
#define O_CREAT_      0100
#define O_TRUNC_      01000
#define AT_REMOVEDIR_ 0x200
#define EAGAIN_	      11
#define EEXIST_	      17

/* set by egretd before load */
const volatile bool audit_host = false; /* --audit-scope host */
const volatile struct egret_pattern patterns[EGRET_PATTERNS_MAX] = {};
const volatile __u32 npatterns = 0;
const volatile bool have_read_patterns = false;

/* (called by the audit's tracing programs only: the current task is a BTF pointer) */
static __always_inline bool in_scope(void)
{
	return audit_host || sandbox_of_current_btf() != NOT_A_SANDBOX;
}

/* in_scope() for a caller that wants the sandbox too: one lookup, not two */
static __always_inline bool in_scope_as(__u64 *sandbox)
{
	*sandbox = sandbox_of_current_btf();
	return audit_host || *sandbox != NOT_A_SANDBOX;
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

#define HASH_WINDOW EGRET_SELFTEST_PATH /* the first bytes of a path are hashed for matching */

/* The first HASH_WINDOW bytes of a path, as global functions take them (a sized type). */
struct path_window {
	char c[HASH_WINDOW];
};

static __always_inline bool pattern_match(const struct match_state *m, __u32 idx)
{
	__u32 n = patterns[idx].ncomp;

	if (n > EGRET_PATTERN_DEPTH || m->n < n)
		return false;
	for (__u32 c = 0; c < EGRET_PATTERN_DEPTH; c++) {
		if (c >= n)
			break;
		if (!(patterns[idx].wild & (1u << c)) && patterns[idx].hash[c] != m->hash[c])
			return false;
	}
	return true;
}

static __always_inline bool patterns_match(const struct match_state *m, __u8 kind)
{
	for (__u32 k = 0; k < EGRET_PATTERNS_MAX; k++) {
		if (k >= npatterns)
			break;
		if (patterns[k].kind == kind && pattern_match(m, k))
			return true;
	}
	return false;
}

/* Whether a pattern of this kind could match a path whose first name hashes to h: "/", a
 * first name of '*', or this one (skip patterns only take away, so they do not count). A global
 * function: the loop of path_wanted() sees only its result.
 */
__noinline int first_name_possible(__u64 h, __u32 kind)
{
	for (__u32 k = 0; k < EGRET_PATTERNS_MAX; k++) {
		if (k >= npatterns)
			break;
		if (patterns[k].kind == kind &&
		    (patterns[k].ncomp == 0 || (patterns[k].wild & 1) || patterns[k].hash[0] == h))
			return true;
	}
	return false;
}

/* Whether a file event at path (len bytes) is reported by the patterns: a read when a read
 * pattern names it; anything else when a write pattern does and no skip pattern does. A global
 * function: the verifier checks it once, alike in every program, so egretd's start-up self-test
 * (egret_selftest, user/kernel/selftest.c) runs the very code the file programs run.
 */
__noinline int path_wanted(const struct path_window *path, __u32 len, __u32 kind)
{
	__u64 h = EGRET_FNV64_OFFSET;
	struct match_state *m;
	__u32 zero = 0;
	bool in = false;

	m = bpf_map_lookup_elem(&match_state, &zero);
	if (!m || !path)
		return 0;
	m->n = 0;
	if (len > HASH_WINDOW - 1)
		len = HASH_WINDOW - 1;
	/* an inline loop, not bpf_loop(): a callback per character is an indirect call, dear on a
	 * kernel with retpolines (verified once all the same: this is a global function)
	 */
	for (__u32 j = 0; j < HASH_WINDOW; j++) {
		char c = j < len ? path->c[j & (HASH_WINDOW - 1)] : '/';

		if (c != '/') {
			in = true;
			h = egret_fnv64_byte(h, (__u8)c);
			continue;
		}
		if (in) {
			if (m->n < EGRET_PATTERN_DEPTH)
				m->hash[m->n++ & (EGRET_PATTERN_DEPTH - 1)] = h;
			/* most paths are out at their first name: no more hashing */
			if (m->n == 1 && !first_name_possible(h, kind))
				return 0;
		}
		in = false;
		h = EGRET_FNV64_OFFSET;
		if (j >= len)
			break;
	}
	if (kind == EGRET_PATTERN_WRITE && patterns_match(m, EGRET_PATTERN_SKIP))
		return 0;
	return patterns_match(m, kind);
}

#endif /* EGRET_AUDIT_BPF_H */
