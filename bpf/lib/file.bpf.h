/* The audit stream's file records: a file call's arguments are noted per task at the syscall's
 * entry and, at its exit, resolved to absolute paths, filtered by the path patterns and sent with
 * the call's result into `bulk_events`, within the sandbox's budget of records a second. Native
 * calls come through the syscalls tracepoints, compat ones (ia32, x32) through the raw syscall
 * tracepoints.
 */
#ifndef EGRET_FILE_BPF_H
#define EGRET_FILE_BPF_H

#include "lib/audit.bpf.h"
#include "lib/syscalls32.bpf.h"

/* --file-budget: file records a second each sandbox may send (reads of secret paths have a
 * budget of their own); 0: no limit
 */
const volatile __u32 file_budget = EGRET_FILE_BUDGET_DEFAULT;

/* One record of the sandbox's budget for this second: false when it is spent. CPUs that start a
 * second together may each reset the counts: a few records more get through, never fewer.
 */
static __always_inline bool file_budget_take(__u64 sandbox_id, bool read)
{
	__u64 second = bpf_ktime_get_boot_ns() / 1000000000ull;
	struct file_budget fresh = { .second = second }, *b;
	__u32 used;

	if (!file_budget)
		return true;
	b = bpf_map_lookup_elem(&file_budgets, &sandbox_id);
	if (!b) {
		bpf_map_update_elem(&file_budgets, &sandbox_id, &fresh, BPF_NOEXIST);
		b = bpf_map_lookup_elem(&file_budgets, &sandbox_id);
		if (!b)
			return true;
	}
	if (b->second != second) {
		b->second = second;
		b->writes = 0;
		b->reads = 0;
	}
	if (read)
		used = __sync_fetch_and_add(&b->reads, 1);
	else
		used = __sync_fetch_and_add(&b->writes, 1);
	return used < file_budget;
}

static __always_inline void file_begin(__u16 op, __u32 flags, int dfd, const char *name, int dfd2,
				       const char *name2)
{
	struct egret_task_info *ti;

	if (!in_scope())
		return;
	/* reads are reported only for paths a read pattern names */
	if (op == EGRET_FILE_READ && !have_read_patterns)
		return;
	/* a process forked under egret has it already (lib/proc.bpf.h); a thread's, or that of a
	 * process older than egretd, is made here
	 */
	ti = bpf_task_storage_get(&task_info, bpf_get_current_task_btf(), 0,
				  BPF_LOCAL_STORAGE_GET_F_CREATE);
	if (!ti)
		return;
	ti->file_active = 1;
	ti->file_op = op;
	ti->file_flags = flags;
	ti->file_dfd = dfd;
	ti->file_name = (__u64)name;
	ti->file_dfd2 = dfd2;
	ti->file_name2 = (__u64)name2;
}

/* "dir/name": the directory of dfd (or the cwd), then the name as the caller gave it; an
 * absolute name alone.
 */
static __always_inline __u32 join_path(char *out, int dfd, __u64 name, bool *cut)
{
	struct task_struct *task = bpf_get_current_task_btf();
	__u32 dlen = 0;
	char first = 0;
	long n;

	bpf_probe_read_user(&first, 1, (void *)name);
	if (first != '/') {
		if (dfd == AT_FDCWD_) {
			dlen = path_of(&task->fs->pwd, out, cut);
		} else {
			struct file *f = current_fd_file(dfd);

			if (f)
				dlen = path_of(&f->f_path, out, cut);
		}
		if (dlen > 1 && dlen < EGRET_PATH_MAX - 1)
			out[dlen++ & (EGRET_PATH_MAX - 1)] = '/';
		else if (dlen >= EGRET_PATH_MAX - 1)
			return dlen;
		else
			dlen = dlen == 1 ? 1 : 0;
	}
	/* clang knows dlen is in range here and would drop the mask, which 6.12's verifier needs
	 * to bound the read ("R2 unbounded memory access"): hide what it knows
	 */
	asm volatile("" : "+r"(dlen));
	dlen &= EGRET_PATH_MAX - 1;
	n = bpf_probe_read_user_str(out + dlen, EGRET_PATH_MAX - dlen, (void *)name);
	if (n <= 0)
		return dlen;
	if (dlen + n >= EGRET_PATH_MAX)
		*cut = true;
	return dlen + n - 1; /* without the NUL */
}

/* the path is on /sys/fs/bpf, where egretd pins its maps */
static __always_inline bool under_bpffs(const char *p, __u32 len)
{
	return len >= 11 && p[0] == '/' && p[1] == 's' && p[2] == 'y' && p[3] == 's' &&
	       p[4] == '/' && p[5] == 'f' && p[6] == 's' && p[7] == '/' && p[8] == 'b' &&
	       p[9] == 'p' && p[10] == 'f' && (len == 11 || p[11] == '/');
}

/* The path the call acted on, into e->data: an opened file is named by what was opened
 * (symlinks and .. resolved); a deleted or renamed one, and an open that failed (EACCES,
 * ENOENT...), by its parent and name as given. False when there is no such file.
 */
static __always_inline bool file_path(const struct egret_task_info *pf, struct egret_file_event *e,
				      long ret, bool *cut)
{
	/* a failed open (read or write) is named by the path as given, as a delete is */
	if ((e->op == EGRET_FILE_CREATE || e->op == EGRET_FILE_WRITE || e->op == EGRET_FILE_READ) &&
	    ret >= 0) {
		struct file *f = current_fd_file(ret);

		if (!f)
			return false;
		e->path_len = (__u16)path_of(&f->f_path, (char *)e->data, cut);
	} else if (pf->file_name) {
		e->path_len = (__u16)join_path((char *)e->data, pf->file_dfd, pf->file_name, cut);
	} else {
		struct file *f = current_fd_file(pf->file_dfd); /* fchmod */

		if (!f)
			return false;
		e->path_len = (__u16)path_of(&f->f_path, (char *)e->data, cut);
	}
	return true;
}

/* Whether the read that opened fd could be reported: false when its path's first name is one no
 * read pattern starts with, told without resolving the path (most opens are such reads: a
 * program's libraries, its configuration). A path under /sys may be on bpffs, where any access
 * is reported: it is resolved. What is reported does not change: path_wanted() would have
 * stopped at the same first name.
 */
static __always_inline bool read_may_match(long fd)
{
	struct file *f = current_fd_file(fd);
	__u64 h;

	if (!f || !path_first_name(&f->f_path, &h))
		return true;
	return h == egret_fnv64_byte(
			    egret_fnv64_byte(egret_fnv64_byte(EGRET_FNV64_OFFSET, 's'), 'y'),
			    's') ||
	       first_name_possible(h, EGRET_PATTERN_READ);
}

/* At the syscall's exit: resolve the path(s), filter, take a record of the sandbox's budget,
 * send. A write under bpffs is a tamper attempt: it goes with the priority records, unbudgeted.
 */
static __always_inline void file_end(long ret)
{
	struct egret_task_info *pf;
	struct file_scratch *fs;
	struct egret_file_event *e;
	__u32 len2 = 0, size, loss_kind, zero = 0;
	bool cut = false, cut2 = false, bpffs;
	__u64 sandbox;
	__u8 kind;

	pf = bpf_task_storage_get(&task_info, bpf_get_current_task_btf(), 0, 0);
	if (!pf || !pf->file_active)
		return;
	pf->file_active = 0;
	fs = bpf_map_lookup_elem(&file_scratch, &zero);
	if (!fs)
		return;
	if (pf->file_op == EGRET_FILE_READ && ret >= 0 && !read_may_match(ret))
		return;
	e = &fs->e;
	e->op = pf->file_op;
	e->flags = pf->file_flags;
	if (!file_path(pf, e, ret, &cut) || e->path_len > EGRET_PATH_MAX)
		return;
	kind = e->op == EGRET_FILE_READ ? EGRET_PATTERN_READ : EGRET_PATTERN_WRITE;
	bpffs = under_bpffs((char *)e->data, e->path_len);
	/* a sandbox removing a pin dies (after this first one: the body has run); the keeper
	 * puts the pin back
	 */
	if (bpffs &&
	    (e->op == EGRET_FILE_UNLINK || e->op == EGRET_FILE_RMDIR ||
	     e->op == EGRET_FILE_RENAME) &&
	    confined())
		tamper_report(EGRET_TAMPER_PIN_REMOVED, e->op, 0, kill_current());
	/* skip patterns thin out writes; a read pattern is a precise ask and always wins */
	if (!bpffs && !path_wanted((const struct path_window *)e->data, e->path_len, kind))
		return;
	sandbox = sandbox_of_current_btf();
	loss_kind = e->op == EGRET_FILE_READ ? EGRET_LOSS_FILE_READ : EGRET_EV_FILE;
	if (!bpffs && !file_budget_take(sandbox, e->op == EGRET_FILE_READ)) {
		loss_count(sandbox, loss_kind, true);
		return;
	}
	if (e->op == EGRET_FILE_RENAME && pf->file_name2)
		len2 = join_path((char *)&e->data[EGRET_PATH_MAX], pf->file_dfd2, pf->file_name2,
				 &cut2);
	e->path2_len = (__u16)(len2 & (EGRET_PATH_MAX * 2 - 1));
	e->cut = (cut ? EGRET_FILE_PATH_CUT : 0) | (cut2 ? EGRET_FILE_PATH2_CUT : 0) |
		 (bpffs ? EGRET_FILE_BPFFS : 0);
	e->result = (__s32)ret;
	event_fill_hdr_cur(&e->hdr, EGRET_EV_FILE, sandbox);
	/* the files a record names are in this mount namespace: what egretd reads them through */
	e->hdr.mnt_ns = BPF_CORE_READ(bpf_get_current_task_btf(), nsproxy, mnt_ns, ns.inum);
	e->exec_id = exec_id_of(bpf_get_current_task_btf());
	/* the path, then the new path of a rename at a fixed offset */
	size = offsetof(struct egret_file_event, data) +
	       (e->op == EGRET_FILE_RENAME ? EGRET_PATH_MAX + e->path2_len : e->path_len);
	if (size > sizeof(*e))
		return;
	if (bpffs)
		event_output(e, size);
	else
		bulk_output(e, size, loss_kind);
}

static __always_inline __u16 open_op(__u64 flags)
{
	if (flags & O_CREAT_)
		return EGRET_FILE_CREATE;
	if (flags & (O_WRONLY_ | O_RDWR_ | O_TRUNC_))
		return EGRET_FILE_WRITE;
	return EGRET_FILE_READ;
}

/* A compat file call's arguments, as file_begin() takes them. */
struct compat_file {
	__u16 op;
	__u32 flags;
	int dfd, dfd2;
	__u64 name, name2;
};

/* the native program's file_begin() arguments, from the compat call's; false: not a file call */
static __always_inline bool compat_file_args(__u32 action, const __u64 a[5], struct compat_file *c)
{
	__u64 how_flags = 0;

	c->dfd = c->dfd2 = AT_FDCWD_;
	c->name2 = 0;
	switch (action) {
	case EGRET_CC_OPEN:
		c->op = open_op(a[1]);
		c->flags = (__u32)a[1];
		c->name = a[0];
		return true;
	case EGRET_CC_CREAT:
		c->op = EGRET_FILE_CREATE;
		c->flags = O_CREAT_ | O_WRONLY_ | O_TRUNC_;
		c->name = a[0];
		return true;
	case EGRET_CC_OPENAT:
	case EGRET_CC_OPENAT2:
		if (action == EGRET_CC_OPENAT2)
			bpf_probe_read_user(&how_flags, sizeof(how_flags), (void *)a[2]);
		else
			how_flags = a[2];
		c->op = open_op(how_flags);
		c->flags = (__u32)how_flags;
		c->dfd = (int)a[0];
		c->name = a[1];
		return true;
	case EGRET_CC_UNLINK:
		c->op = EGRET_FILE_UNLINK;
		c->flags = 0;
		c->name = a[0];
		return true;
	case EGRET_CC_UNLINKAT:
		c->op = a[2] & AT_REMOVEDIR_ ? EGRET_FILE_RMDIR : EGRET_FILE_UNLINK;
		c->flags = 0;
		c->dfd = (int)a[0];
		c->name = a[1];
		return true;
	case EGRET_CC_RENAME:
		c->op = EGRET_FILE_RENAME;
		c->flags = 0;
		c->name = a[0];
		c->name2 = a[1];
		return true;
	case EGRET_CC_RENAMEAT:
	case EGRET_CC_RENAMEAT2:
		c->op = EGRET_FILE_RENAME;
		c->flags = action == EGRET_CC_RENAMEAT2 ? (__u32)a[4] : 0;
		c->dfd = (int)a[0];
		c->name = a[1];
		c->dfd2 = (int)a[2];
		c->name2 = a[3];
		return true;
	case EGRET_CC_CHMOD:
		c->op = EGRET_FILE_CHMOD;
		c->flags = (__u32)a[1];
		c->name = a[0];
		return true;
	case EGRET_CC_FCHMOD:
		c->op = EGRET_FILE_CHMOD;
		c->flags = (__u32)a[1];
		c->dfd = (int)a[0];
		c->name = 0;
		return true;
	case EGRET_CC_FCHMODAT:
		c->op = EGRET_FILE_CHMOD;
		c->flags = (__u32)a[2];
		c->dfd = (int)a[0];
		c->name = a[1];
		return true;
	}
	return false;
}

/* A compat syscall's entry (egret_acsys): note it as the native program would, if it is a file
 * call.
 */
static __always_inline void compat_file_begin(struct pt_regs *regs, long id)
{
	__u8 abi = compat_abi(bpf_get_current_task_btf(), id);
	struct compat_file c;
	__u64 a[5];

	if (abi == EGRET_ABI_NATIVE)
		return;
	compat_args(regs, abi, a);
	if (compat_file_args(egret_compat_action(abi, compat_nr(abi, id)), a, &c))
		file_begin(c.op, c.flags, c.dfd, (const char *)c.name, c.dfd2,
			   (const char *)c.name2);
}

/* A compat syscall's exit (egret_acxsys); a native one returns after two loads. */
static __always_inline void compat_file_end(struct pt_regs *regs, long ret)
{
	if (compat_abi(bpf_get_current_task_btf(), (long)(int)regs->orig_ax) != EGRET_ABI_NATIVE)
		file_end(ret);
}

#endif /* EGRET_FILE_BPF_H */
