/* Absolute paths from the kernel's own objects: a struct path is walked up through its dentries
 * and mount points to the task's root (the path as the process sees it), written backwards into
 * a per-CPU buffer and copied out once.
 */
#ifndef EGRET_PATH_BPF_H
#define EGRET_PATH_BPF_H

#include "lib/common.bpf.h"
#include "egret/audit.h"

#define PATH_SCRATCH 4096 /* power of two: offsets are masked with PATH_SCRATCH - 1 */
#define NAME_MAX_    255

/* room past PATH_SCRATCH so the verifier can see that masked offsets plus a bounded length
 * stay inside
 */
struct path_scratch {
	char buf[PATH_SCRATCH + EGRET_PATH_MAX];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct path_scratch);
} path_scratch SEC(".maps");

struct path_walk {
	struct dentry *dentry;
	struct vfsmount *vfsmnt;
	struct mount *mnt;
	struct dentry *root_dentry;
	struct vfsmount *root_mnt;
	__u32 pos;
};

/* One step up: a name written before the previous ones, or a hop from a mount's root to its
 * mount point. bpf_loop() runs it, so the verifier checks it once, not once per level.
 */
static long path_step(__u32 i, void *arg)
{
	struct path_walk *w = arg;
	/* locals, not w->...: CO-RE relocates kernel types only */
	struct dentry *dentry = w->dentry, *parent, *mnt_root;
	struct vfsmount *vfsmnt = w->vfsmnt;
	struct mount *mnt = w->mnt;
	const unsigned char *name;
	struct path_scratch *s;
	__u32 zero = 0, nlen;

	if (dentry == w->root_dentry && vfsmnt == w->root_mnt)
		return 1;
	mnt_root = BPF_CORE_READ(vfsmnt, mnt_root);
	if (dentry == mnt_root) {
		struct mount *up = BPF_CORE_READ(mnt, mnt_parent);

		if (up == mnt)
			return 1; /* the global root */
		w->dentry = BPF_CORE_READ(mnt, mnt_mountpoint);
		w->mnt = up;
		w->vfsmnt = &up->mnt;
		return 0;
	}
	parent = BPF_CORE_READ(dentry, d_parent);
	if (parent == dentry)
		return 1;
	name = BPF_CORE_READ(dentry, d_name.name);
	nlen = BPF_CORE_READ(dentry, d_name.len) & NAME_MAX_;
	s = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!s || w->pos < nlen + 2)
		return 1;
	w->pos -= nlen;
	bpf_probe_read_kernel(&s->buf[w->pos & (PATH_SCRATCH - 1)], nlen, name);
	w->pos -= 1;
	s->buf[w->pos & (PATH_SCRATCH - 1)] = '/';
	w->dentry = parent;
	return 0;
}

/* Write the path of (dentry, vfsmnt) into out[0..EGRET_PATH_MAX); returns its length, and sets
 * *cut when it was longer or deeper than we walk.
 */
static __always_inline __u32 path_resolve(struct dentry *dentry, struct vfsmount *vfsmnt, char *out,
					  bool *cut)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct path_walk w = {
		.dentry = dentry,
		.vfsmnt = vfsmnt,
		.mnt = container_of(vfsmnt, struct mount, mnt),
		.root_dentry = BPF_CORE_READ(task, fs, root.dentry),
		.root_mnt = BPF_CORE_READ(task, fs, root.mnt),
		.pos = PATH_SCRATCH,
	};
	struct path_scratch *s;
	__u32 zero = 0, len;
	long steps;

	*cut = false;
	steps = bpf_loop(EGRET_PATH_DEPTH, path_step, &w, 0);
	if (steps >= EGRET_PATH_DEPTH)
		*cut = true;
	if (w.pos >= PATH_SCRATCH) {
		out[0] = '/';
		return 1;
	}
	len = PATH_SCRATCH - w.pos;
	if (len > EGRET_PATH_MAX) {
		*cut = true;
		len = EGRET_PATH_MAX;
	}
	s = bpf_map_lookup_elem(&path_scratch, &zero);
	if (!s)
		return 0;
	bpf_probe_read_kernel(out, len & (EGRET_PATH_MAX * 2 - 1),
			      &s->buf[w.pos & (PATH_SCRATCH - 1)]);
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
