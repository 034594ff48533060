/* FNV-1a 64, the one hash of egret. The two sides must agree on it: sandbox names
 * (`sandbox_rules`: user/core/sandbox.c and bpf/lib/confine.bpf.h) and path components (audit
 * patterns: user/events/audit.c, user/kernel/selftest.c and bpf/lib/audit.bpf.h). Shared by bpf/
 * and user/: no includes, the user side includes <linux/types.h> first.
 */
#ifndef EGRET_FNV_H
#define EGRET_FNV_H

#define EGRET_FNV64_OFFSET 0xcbf29ce484222325ull /* the hash of nothing */
#define EGRET_FNV64_PRIME  0x100000001b3ull

/* h with one more byte hashed in */
static inline __u64 egret_fnv64_byte(__u64 h, __u8 byte)
{
	return (h ^ byte) * EGRET_FNV64_PRIME;
}

#endif /* EGRET_FNV_H */
