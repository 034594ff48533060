/* Absolute paths from the kernel's own objects: a struct path is walked up through its dentries
 * and mount points to the task's root (the path as the process sees it), written backwards into
 * a per-CPU buffer and copied out once.
 */
#ifndef EGRET_PATH_BPF_H
#define EGRET_PATH_BPF_H

#include "lib/maps.bpf.h"
#include "egret/audit.h"

#ifndef EGRET_OBJ_AUDIT
#error "lib/path.bpf.h needs the audit maps: define EGRET_OBJ_AUDIT first"
#endif

#define NAME_MAX_ 255

/* One step up: a name written before the previous ones, or a hop from a mount's root to its
 * mount point. bpf_loop() runs it, so the verifier checks it once, not once per level.
 */
static long path_step(__u32 i, void *unused)
{
	struct dentry *dentry, *parent, *mnt_root;
	struct vfsmount *vfsmnt;
	struct mount *mnt;
	const unsigned char *name;
	struct path_scratch *s;
	__u32 zero = 0, nlen, pos;

	s = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!s)
		return 1;
	dentry = (struct dentry *)s->dentry;
	vfsmnt = (struct vfsmount *)s->vfsmnt;
	mnt = (struct mount *)s->mnt;
	if (s->dentry == s->root_dentry && s->vfsmnt == s->root_mnt)
		return 1;
	mnt_root = BPF_CORE_READ(vfsmnt, mnt_root);
	if (dentry == mnt_root) {
		struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

		if (up == mnt)
			return 1; /* the global root */
		s->dentry = (__u64)BPF_CORE_READ(mnt, mnt_mountpoint);
		s->mnt = (__u64)up;
		s->vfsmnt = (__u64)&up->mnt;
		return 0;
	}
	parent = BPF_CORE_READ(dentry, d_parent);
	if (parent == dentry)
		return 1;
	name = BPF_CORE_READ(dentry, d_name.name);
	nlen = BPF_CORE_READ(dentry, d_name.len) & NAME_MAX_;
	pos = s->pos;
	if (pos > PATH_SCRATCH || pos < nlen + 2)
		return 1;
	pos -= nlen;
	bpf_probe_read_kernel(&s->buf[pos & (PATH_SCRATCH - 1)], nlen, name);
	pos -= 1;
	s->buf[pos & (PATH_SCRATCH - 1)] = '/';
	s->pos = pos;
	s->dentry = (__u64)parent;
	return 0;
}

/* Write the path of (dentry, vfsmnt) into out[0..EGRET_PATH_MAX); returns its length, and sets
 * *cut when it was longer or deeper than we walk.
 */
static __always_inline __u32 path_resolve(struct dentry *dentry, struct vfsmount *vfsmnt, char *out,
					  bool *cut)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct path_scratch *s;
	__u32 zero = 0, len, pos;
	long steps;

	*cut = false;
	s = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!s)
		return 0;
	s->dentry = (__u64)dentry;
	s->vfsmnt = (__u64)vfsmnt;
	s->mnt = (__u64)container_of(vfsmnt, struct mount, mnt);
	s->root_dentry = (__u64)BPF_CORE_READ(task, fs, root.dentry);
	s->root_mnt = (__u64)BPF_CORE_READ(task, fs, root.mnt);
	s->pos = PATH_SCRATCH;
	steps = bpf_loop(EGRET_PATH_DEPTH, path_step, NULL, 0);
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

static __always_inline __u32 path_of(const struct path *p, char *out, bool *cut)
{
	return path_resolve(BPF_CORE_READ(p, dentry), BPF_CORE_READ(p, mnt), out, cut);
}

/* The file behind a descriptor of the current task, or NULL. */
static __always_inline struct file *fd_file(int fd)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct file **fds = BPF_CORE_READ(task, files, fdt, fd);
	unsigned int max = BPF_CORE_READ(task, files, fdt, max_fds);
	struct file *f = NULL;

	if (fd < 0 || (unsigned int)fd >= max)
		return NULL;
	bpf_core_read(&f, sizeof(f), &fds[fd]);
	return f;
}

#endif /* EGRET_PATH_BPF_H */
