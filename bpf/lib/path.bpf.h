/* Absolute paths from the kernel's own objects: a struct path is walked up through its dentries
 * and mount points to the task's root (the path as the process sees it), written backwards into
 * a per-CPU buffer and copied out once. Where tracepoints may type a kernel pointer
 * (bpf_rdonly_cast, 6.2: feature rdonly_cast) the walk reads dentries and mounts with plain
 * loads; elsewhere (6.1) each read is a bpf_probe_read_kernel(), some 30 ns more a level.
 */
#ifndef EGRET_PATH_BPF_H
#define EGRET_PATH_BPF_H

#include "lib/maps.bpf.h"
#include "egret/audit.h"

#ifndef EGRET_OBJ_AUDIT
#error "lib/path.bpf.h needs the audit maps: define EGRET_OBJ_AUDIT first"
#endif

#define NAME_MAX_ 255

/* What one read of a dentry brings: d_parent and d_name lie side by side in every kernel egret
 * runs on (checked at load, with CO-RE offsets: otherwise three reads). Where plain loads can
 * be made, they fill it field by field.
 */
struct dentry_up {
	__u64 parent;
	struct qstr name;
};

/* One step up: a name written before the previous ones, or a hop from a mount's root to its
 * mount point. bpf_loop() runs it, so the verifier checks it once, not once per level; ctx holds
 * the scratch.
 */
static long path_step(__u32 i, void *ctx)
{
	struct path_scratch *s = *(struct path_scratch **)ctx;
	struct dentry *dentry;
	struct dentry_up up;
	struct mount *mnt;
	__u32 nlen, pos;

	if (!s)
		return 1;
	dentry = (struct dentry *)s->dentry;
	mnt = (struct mount *)s->mnt;
	if (s->dentry == s->root_dentry && s->vfsmnt == s->root_mnt)
		return 1;
	if (s->dentry == s->mnt_root) {
		struct mount *parent = KERNEL_READ(struct mount, mnt, mnt_parent);

		if (!parent || parent == mnt)
			return 1; /* the global root (or a read that failed) */
		s->dentry = (__u64)KERNEL_READ(struct mount, mnt, mnt_mountpoint);
		s->mnt_root = (__u64)KERNEL_READ(struct mount, parent, mnt.mnt_root);
		s->mnt = (__u64)parent;
		s->vfsmnt = (__u64)&parent->mnt;
		return 0;
	}
	if (rdonly_cast_ok()) {
		struct dentry *d = KERNEL_PTR(struct dentry, s->dentry);

		up.parent = (__u64)d->d_parent;
		up.name.len = d->d_name.len;
		up.name.name = d->d_name.name;
		if (!up.parent)
			return 1;
	} else if (bpf_core_field_offset(struct dentry, d_name) ==
		   bpf_core_field_offset(struct dentry, d_parent) + sizeof(__u64)) {
		if (bpf_probe_read_kernel(&up, sizeof(up), &dentry->d_parent))
			return 1;
	} else {
		up.parent = (__u64)BPF_CORE_READ(dentry, d_parent);
		up.name.len = BPF_CORE_READ(dentry, d_name.len);
		up.name.name = BPF_CORE_READ(dentry, d_name.name);
	}
	if (up.parent == s->dentry)
		return 1;
	nlen = up.name.len & NAME_MAX_;
	pos = s->pos;
	if (pos > PATH_SCRATCH || pos < nlen + 2)
		return 1;
	pos -= nlen;
	if (s->names)
		bpf_probe_read_kernel(&s->buf[pos & (PATH_SCRATCH - 1)], nlen, up.name.name);
	pos -= 1;
	if (s->names)
		s->buf[pos & (PATH_SCRATCH - 1)] = '/';
	s->top_name = (__u64)up.name.name;
	s->top_len = nlen;
	s->pos = pos;
	s->dentry = up.parent;
	return 0;
}

/* Walk (dentry, vfsmnt) up to the task's root: with names, the path written backwards into the
 * scratch's buf; without, only the first name noted (the walk is the same, step for step). NULL
 * when there is no scratch; *steps: how many bpf_loop() ran.
 */
static __always_inline struct path_scratch *
path_walk(struct dentry *dentry, struct vfsmount *vfsmnt, bool names, long *steps)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct path_scratch *s;
	__u32 zero = 0;

	s = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!s)
		return NULL;
	s->dentry = (__u64)dentry;
	s->vfsmnt = (__u64)vfsmnt;
	s->mnt = (__u64)container_of(vfsmnt, struct mount, mnt);
	s->root_dentry = (__u64)task->fs->root.dentry; /* direct loads: a trusted task */
	s->root_mnt = (__u64)task->fs->root.mnt;
	s->mnt_root = (__u64)KERNEL_READ(struct vfsmount, vfsmnt, mnt_root);
	s->pos = PATH_SCRATCH;
	s->names = names;
	s->top_len = 0;
	*steps = bpf_loop(EGRET_PATH_DEPTH, path_step, &s, 0);
	return s;
}

/* Write the path of (dentry, vfsmnt) into out[0..EGRET_PATH_MAX); returns its length, and sets
 * *cut when it was longer or deeper than we walk.
 */
static __always_inline __u32 path_resolve(struct dentry *dentry, struct vfsmount *vfsmnt, char *out,
					  bool *cut)
{
	struct path_scratch *s;
	__u32 len, pos;
	long steps;

	*cut = false;
	s = path_walk(dentry, vfsmnt, true, &steps);
	if (!s)
		return 0;
	if (steps >= EGRET_PATH_DEPTH)
		*cut = true;
	pos = s->pos;
	if (pos >= PATH_SCRATCH) {
		out[0] = '/';
		return 1;
	}
	len = PATH_SCRATCH - pos;
	if (len > EGRET_PATH_MAX) {
		*cut = true;
		len = EGRET_PATH_MAX;
	}
	bpf_probe_read_kernel(out, len & (EGRET_PATH_MAX * 2 - 1),
			      &s->buf[pos & (PATH_SCRATCH - 1)]);
	return len;
}

/* *p into pv: {mnt, dentry}, alike in every kernel (one read where plain loads cannot be made) */
static __always_inline void path_load(struct path *pv, const struct path *p)
{
	if (rdonly_cast_ok()) {
		const struct path *k = KERNEL_PTR(struct path, p);

		pv->mnt = k->mnt;
		pv->dentry = k->dentry;
	} else {
		bpf_probe_read_kernel(pv, sizeof(*pv), p);
	}
}

static __always_inline __u32 path_of(const struct path *p, char *out, bool *cut)
{
	struct path pv = {};

	path_load(&pv, p);
	return path_resolve(pv.dentry, pv.mnt, out, cut);
}

/* The first name of p's path (the one right under the task's root) hashed as the pattern
 * matcher hashes a name (path_wanted), found by the same walk as path_of() but without copying
 * the names on the way: one read a level instead of two, and none of the path's copying and
 * hashing. False when there is no such name to go by (the root itself, a name too long for the
 * matcher's window): the caller then resolves the whole path.
 */
#define FIRST_NAME_MAX 128

static __always_inline bool path_first_name(const struct path *p, __u64 *hash)
{
	struct path pv = {};
	struct path_scratch *s;
	__u64 h = EGRET_FNV64_OFFSET;
	__u32 len;
	long steps;

	path_load(&pv, p);
	s = path_walk(pv.dentry, pv.mnt, false, &steps);
	if (!s)
		return false;
	len = s->top_len;
	if (!len || len > FIRST_NAME_MAX)
		return false;
	if (bpf_probe_read_kernel(s->buf, len & (FIRST_NAME_MAX * 2 - 1), (void *)s->top_name))
		return false;
	for (__u32 j = 0; j < FIRST_NAME_MAX; j++) {
		if (j >= len)
			break;
		h = egret_fnv64_byte(h, (__u8)s->buf[j]);
	}
	*hash = h;
	return true;
}

#endif /* EGRET_PATH_BPF_H */
