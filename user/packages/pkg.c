/* Package runs and installs; see pkg.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "metafile.h"
#include "pkg.h"
#include "stream.h"
#include "util.h"

#define DEB ".deb" /* a package file dpkg -i is given */

#define WHY_GONE                                                                            \
	"unreadable: the process that wrote it had exited, and no root of its sandbox was " \
	"known"
#define WHY_FULL "unreadable: egret held too many sandbox roots"

/* ---- roots: where a sandbox's files are read --------------------------------------------------- */

/* which directory fd is: its mount, device and inode */
static int root_identity(int fd, uint64_t *mnt, uint64_t *dev, uint64_t *ino)
{
	struct statx sx;

	if (statx(fd, "", AT_EMPTY_PATH, STATX_INO | STATX_MNT_ID, &sx))
		return -errno;
	*mnt = sx.stx_mask & STATX_MNT_ID ? sx.stx_mnt_id : 0;
	*dev = makedev(sx.stx_dev_major, sx.stx_dev_minor);
	*ino = sx.stx_ino;
	return 0;
}

static void self_root(struct pkg_tracker *t)
{
	struct stat ns;
	int fd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0 && !stat("/proc/self/ns/mnt", &ns) &&
	    !root_identity(fd, &t->self_mnt, &t->self_dev, &t->self_ino))
		t->self_ns = ns.st_ino;
	if (fd >= 0)
		close(fd);
}

/* the descriptor a run's or a package's root (pkg.h) reads in (metafile.h) */
static int root_fd(const struct pkg_tracker *t, int w)
{
	return w >= 0 ? t->roots[w].fd : w;
}

static int root_ref(struct pkg_tracker *t, int w)
{
	if (w >= 0)
		t->roots[w].refs++;
	return w;
}

static void root_put(struct pkg_tracker *t, int w)
{
	struct pkg_root *r;

	if (w < 0)
		return;
	r = &t->roots[w];
	if (--r->refs)
		return;
	close(r->fd);
	if (r->ns >= 0)
		close(r->ns);
	r->fd = r->ns = -1;
}

/* A root fd (and ns, -1 for none) in roots[]: the one already held for the same root (fd and ns
 * closed), or a new slot; -ENFILE (both closed) when none is free.
 */
static int root_keep(struct pkg_tracker *t, int fd, int ns, uint64_t ns_ino, uint64_t mnt,
		     uint64_t dev, uint64_t ino)
{
	int free_slot = -1;

	for (int i = 0; i < PKG_MAX_ROOTS; i++) {
		struct pkg_root *r = &t->roots[i];

		if (r->fd < 0) {
			if (free_slot < 0)
				free_slot = i;
		} else if (r->ns_ino == ns_ino && r->mnt_id == mnt && r->dev == dev &&
			   r->ino == ino) {
			free_slot = i;
			break;
		}
	}
	if (free_slot >= 0 && t->roots[free_slot].fd >= 0) {
		close(fd);
		if (ns >= 0)
			close(ns);
		return root_ref(t, free_slot);
	}
	if (free_slot < 0) {
		close(fd);
		if (ns >= 0)
			close(ns);
		if (!t->roots_full++)
			log_warn("package tracking: more than %d sandbox roots in use; packages "
				 "of the next ones are read in their registered root, or reported "
				 "unread",
				 PKG_MAX_ROOTS);
		return -ENFILE;
	}
	t->roots[free_slot] = (struct pkg_root){ fd, ns, ns_ino, mnt, dev, ino, 1 };
	return free_slot;
}

/* Process pid's root while it lives: PKG_ROOT_HOST when it is egretd's own (the same mount
 * namespace and root directory), else a root held with its mount namespace; -errno when it is
 * gone (or cannot be looked at), -ENFILE when no slot is free.
 */
static int root_of_pid(struct pkg_tracker *t, uint32_t pid)
{
	char path[64];
	struct stat ns, held;
	uint64_t mnt = 0, dev = 0, ino = 0;
	int fd, nsfd = -1;

	snprintf(path, sizeof(path), "/proc/%u/root", pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	snprintf(path, sizeof(path), "/proc/%u/ns/mnt", pid);
	if (stat(path, &ns) || root_identity(fd, &mnt, &dev, &ino)) {
		close(fd);
		return -ESRCH;
	}
	if (t->self_ns && ns.st_ino == t->self_ns && mnt == t->self_mnt && dev == t->self_dev &&
	    ino == t->self_ino) {
		close(fd);
		return PKG_ROOT_HOST;
	}
	if (ns.st_ino != t->self_ns) {
		/* held open, the namespace keeps its mounts when its processes are gone */
		nsfd = open(path, O_RDONLY | O_CLOEXEC);
		if (nsfd < 0 || fstat(nsfd, &held) || held.st_ino != ns.st_ino) {
			if (nsfd >= 0)
				close(nsfd);
			close(fd);
			return -ESRCH;
		}
	}
	return root_keep(t, fd, nsfd, ns.st_ino, mnt, dev, ino);
}

/* the root the registration of a sandbox gave, shared; -ENOENT when none */
static int root_of_sandbox(struct pkg_tracker *t, uint64_t sandbox_id)
{
	for (size_t i = 0; t->sandbox_roots && i < PKG_MAX_SANDBOX_ROOTS; i++) {
		if (t->sandbox_roots[i].sandbox_id == sandbox_id) {
			int fd = fcntl(t->sandbox_roots[i].fd, F_DUPFD_CLOEXEC, 0);
			uint64_t mnt = 0, dev = 0, ino = 0;

			if (fd < 0)
				return -errno;
			if (root_identity(fd, &mnt, &dev, &ino)) {
				close(fd);
				return -EBADF;
			}
			return root_keep(t, fd, -1, 0, mnt, dev, ino);
		}
	}
	return -ENOENT;
}

/* Where the files of process pid of a sandbox are read: its own root, else fallback (a run's;
 * PKG_ROOT_NONE: none), else its sandbox's registered root, else nowhere, *why says why.
 */
/* A root of mount namespace mnt_ns already held, with a reference more; -ENOENT when none. */
static int root_with_ns(struct pkg_tracker *t, uint32_t mnt_ns)
{
	for (int i = 0; i < PKG_MAX_ROOTS; i++) {
		if (t->roots[i].fd >= 0 && t->roots[i].refs && t->roots[i].ns_ino == mnt_ns)
			return root_ref(t, i);
	}
	return -ENOENT;
}

/* The writer (pid, in mount namespace mnt_ns as its file record says; 0 unknown) is gone: its
 * namespace's root through another process of its sandbox still in it.
 */
static int root_of_namespace(struct pkg_tracker *t, uint64_t sandbox_id, uint32_t mnt_ns)
{
	uint32_t other;
	int w;

	if (!mnt_ns)
		return -ENOENT;
	/* egretd's own: the host's paths (a writer chrooted in it would be misread) */
	if (mnt_ns == t->self_ns)
		return PKG_ROOT_HOST;
	w = root_with_ns(t, mnt_ns);
	if (w >= 0)
		return w;
	other = t->ns_member ? t->ns_member(t->sandbox_ctx, sandbox_id, mnt_ns) : 0;
	return other ? root_of_pid(t, other) : -ENOENT;
}

static int root_for(struct pkg_tracker *t, uint32_t pid, uint32_t mnt_ns, uint64_t sandbox_id,
		    int fallback, const char **why)
{
	int w = root_of_pid(t, pid);
	bool full = w == -ENFILE;

	*why = NULL;
	if (w >= 0 || w == PKG_ROOT_HOST)
		return w;
	if (fallback != PKG_ROOT_NONE)
		return root_ref(t, fallback);
	w = root_of_namespace(t, sandbox_id, mnt_ns);
	full |= w == -ENFILE;
	if (w >= 0 || w == PKG_ROOT_HOST)
		return w;
	w = root_of_sandbox(t, sandbox_id);
	if (w >= 0)
		return w;
	*why = full || w == -ENFILE ? WHY_FULL : WHY_GONE;
	return PKG_ROOT_NONE;
}

void pkg__set_sandbox_root(struct pkg_tracker *t, uint64_t sandbox_id, int fd)
{
	size_t free_slot = PKG_MAX_SANDBOX_ROOTS;
	struct stat st;

	if (fd >= 0 && (fstat(fd, &st) || !S_ISDIR(st.st_mode))) {
		log_warn("package tracking: the root given for sandbox %llu is not a directory; "
			 "not kept",
			 (unsigned long long)sandbox_id);
		close(fd);
		fd = -1; /* and the one held before is forgotten */
	}

	for (size_t i = 0; sandbox_id && t->sandbox_roots && i < PKG_MAX_SANDBOX_ROOTS; i++) {
		if (t->sandbox_roots[i].sandbox_id == sandbox_id) {
			if (t->sandbox_roots[i].fd != fd)
				close(t->sandbox_roots[i].fd);
			t->sandbox_roots[i].fd = fd;
			if (fd < 0)
				t->sandbox_roots[i].sandbox_id = 0;
			return;
		}
		if (!t->sandbox_roots[i].sandbox_id && free_slot == PKG_MAX_SANDBOX_ROOTS)
			free_slot = i;
	}
	if (fd < 0)
		return;
	if (!sandbox_id || free_slot == PKG_MAX_SANDBOX_ROOTS) {
		close(fd);
		if (sandbox_id && !t->registered_full++)
			log_warn(
				"package tracking: more than %d registered sandbox roots; the root "
				"of sandbox %llu is not kept (its packages are read through its "
				"processes only)",
				PKG_MAX_SANDBOX_ROOTS, (unsigned long long)sandbox_id);
		return;
	}
	t->sandbox_roots[free_slot].sandbox_id = sandbox_id;
	t->sandbox_roots[free_slot].fd = fd;
}

/* ---- the tracker ------------------------------------------------------------------------------ */

int pkg__init(struct pkg_tracker *t, struct stream *s)
{
	memset(t, 0, sizeof(*t));
	t->stream = s;
	for (int i = 0; i < PKG_MAX_ROOTS; i++)
		t->roots[i].fd = t->roots[i].ns = -1;
	self_root(t);
	t->pending = calloc(PKG_MAX_PENDING, sizeof(*t->pending));
	t->sandbox_roots = calloc(PKG_MAX_SANDBOX_ROOTS, sizeof(*t->sandbox_roots));
	if (!t->pending || !t->sandbox_roots) {
		free(t->pending);
		free(t->sandbox_roots);
		t->pending = NULL;
		t->sandbox_roots = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void who_of(const Egret__V1__Event *ev, struct pkg_who *w)
{
	memset(w, 0, sizeof(*w));
	if (ev->sandbox) {
		w->sandbox_id = ev->sandbox->cgroup_id;
		snprintf(w->sandbox, sizeof(w->sandbox), "%s", ev->sandbox->name);
	}
	if (ev->process) {
		w->pid = ev->process->pid;
		w->tid = ev->process->tid;
		w->uid = ev->process->uid;
		w->gid = ev->process->gid;
		w->exec_id = ev->process->exec_id;
		snprintf(w->comm, sizeof(w->comm), "%s", ev->process->comm);
	}
}

static void envelope(const struct pkg_tracker *t, const struct pkg_who *w, Egret__V1__Event *ev,
		     Egret__V1__Sandbox *sb, Egret__V1__Process *p)
{
	const Egret__V1__Sandbox *with =
		t->sandbox_pb ? t->sandbox_pb(t->sandbox_ctx, w->sandbox_id, w->sandbox) : NULL;

	sb->cgroup_id = w->sandbox_id;
	sb->name = (char *)w->sandbox;
	if (with)
		*sb = *with;
	p->pid = w->pid;
	p->tid = w->tid;
	p->uid = w->uid;
	p->gid = w->gid;
	p->comm = (char *)w->comm;
	p->exec_id = w->exec_id;
	ev->sandbox = sb;
	ev->process = p;
	ev->class_uid = OCSF_APPLICATION_LIFECYCLE;
}

/* ---- what leaves the host ------------------------------------------------------------------- */

#define REDACTED_CUT "[REDACTED][TRUNCATED]"
#define SCRATCH_MAX  65536 /* what an environment (and a config file) is read into, at most */

/* src (read into a buffer of srcsize bytes) into dst[size] through egretd's redactor; src may be
 * dst. A src that filled its buffer may have been cut by its reader inside a secret a rule needs
 * the rest of to see (a URL's password before its '@'): unless the redactor cut it already, its
 * last word is then redacted whole and the string ends in [TRUNCATED]. Without a redactor a
 * plain copy.
 */
static void clean(const struct pkg_tracker *t, char *dst, size_t size, const char *src,
		  size_t srcsize)
{
	static char in[SCRATCH_MAX + 1];
	const size_t ml = sizeof(REDACTED_CUT) - 1, tl = sizeof("[TRUNCATED]") - 1;
	bool maybe_cut = srcsize && strnlen(src, srcsize) >= srcsize - 1;
	size_t len, w;

	if (!size)
		return;
	if (!t->redact) {
		if (dst != src)
			snprintf(dst, size, "%s", src);
		return;
	}
	snprintf(in, sizeof(in), "%s", src); /* src may be dst */
	len = t->redact(t->redact_ctx, in, dst, size);
	if (len >= size)
		len = strnlen(dst, size - 1);
	dst[len] = '\0';
	if (!maybe_cut || (len >= tl && !strcmp(dst + len - tl, "[TRUNCATED]")))
		return;
	for (w = len; w > 0 && dst[w - 1] != ' ' && dst[w - 1] != '\t' && dst[w - 1] != '\n'; w--)
		;
	if (w + ml >= size)
		w = size > ml ? size - 1 - ml : 0;
	while (w > 0 && ((unsigned char)dst[w] & 0xc0) == 0x80) /* not inside a UTF-8 character */
		w--;
	snprintf(dst + w, size - w, "%s", REDACTED_CUT);
}

/* ---- members: the processes of a run --------------------------------------------------------- */

static int run_of(struct pkg_tracker *t, uint32_t pid)
{
	for (size_t i = 0; i < t->nmembers; i++) {
		if (t->members[i].pid == pid)
			return t->members[i].run;
	}
	return -1;
}

static void join(struct pkg_tracker *t, uint32_t pid, int run)
{
	if (run_of(t, pid) >= 0)
		return;
	if (t->nmembers == PKG_MAX_MEMBERS) {
		if (!t->unjoined++)
			log_warn("package tracking: more than %d processes in manager runs; what "
				 "pid %u installs is reported without its run",
				 PKG_MAX_MEMBERS, pid);
		return;
	}
	t->members[t->nmembers].pid = pid;
	t->members[t->nmembers++].run = run;
}

static void leave(struct pkg_tracker *t, uint32_t pid)
{
	for (size_t i = 0; i < t->nmembers; i++) {
		if (t->members[i].pid == pid) {
			t->members[i] = t->members[--t->nmembers];
			return;
		}
	}
}

static void leave_run(struct pkg_tracker *t, int run)
{
	for (size_t i = 0; i < t->nmembers;) {
		if (t->members[i].run == run)
			t->members[i] = t->members[--t->nmembers];
		else
			i++;
	}
}

/* ---- runs ------------------------------------------------------------------------------------ */

/* The environment run r starts with, in env[size] or at *vars: the kernel's copy from its exec
 * (exact, and there even when the process is gone before egretd looks), else /proc's while it
 * runs (also when the kernel's was cut: /proc's is read up to size); its length, 0: none.
 */
static size_t run_env(const Egret__V1__Event *ev, const struct env_block *kenv, char *env,
		      size_t size, const char **vars)
{
	char path[64];
	int len;

	*vars = env;
	if (kenv && !kenv->cut) {
		*vars = kenv->vars;
		return kenv->len;
	}
	snprintf(path, sizeof(path), "/proc/%u/environ", ev->process->pid);
	len = read_file(path, env, size);
	if (len == (int)size - 1) { /* larger: the last variable, cut, is left out */
		const char *last = memrchr(env, '\0', (size_t)len);

		len = last ? (int)(last - env) + 1 : 0;
	}
	if (len <= 0 && kenv) { /* gone: what the kernel read */
		*vars = kenv->vars;
		return kenv->len;
	}
	return len > 0 ? (size_t)len : 0;
}

static void start_run(struct pkg_tracker *t, const Egret__V1__Event *ev, const char *manager,
		      const struct env_block *kenv)
{
	const Egret__V1__ProcessExec *x = ev->exec;
	static char registry[SCRATCH_MAX], from[SCRATCH_MAX];
	char env[65536];
	struct pkg_run *r = NULL;
	const char *why, *vars;
	size_t envlen;
	int idx;

	for (idx = 0; idx < PKG_MAX_RUNS && t->runs[idx].used; idx++)
		;
	if (idx == PKG_MAX_RUNS) {
		log_warn("package tracking: more than %d manager runs at once; %s in pid %u not "
			 "tracked",
			 PKG_MAX_RUNS, manager, ev->process->pid);
		return;
	}
	r = &t->runs[idx];
	memset(r, 0, sizeof(*r));
	r->used = true;
	who_of(ev, &r->who);
	/* its root, while it runs: its config files, and its packages when their writer is gone */
	r->root = root_for(t, ev->process->pid, 0, r->who.sandbox_id, PKG_ROOT_NONE, &why);
	r->started_ns = now_ns(CLOCK_MONOTONIC);
	snprintf(r->manager, sizeof(r->manager), "%s", manager);
	for (size_t i = 0; i < x->n_args && r->nargs < PKG_MAX_ARGS; i++) {
		const char *arg = x->args[i];

		r->args[r->nargs++] = strdup(arg);
		if (strlen(arg) > strlen(DEB) && pkg_ends_with(arg, DEB) &&
		    r->ndebs < ARRAY_SIZE(r->debs)) {
			char abs[PATH_MAX * 2];

			if (arg[0] == '/')
				snprintf(abs, sizeof(abs), "%s", arg);
			else
				snprintf(abs, sizeof(abs), "%s/%s", x->cwd, arg);
			r->debs[r->ndebs++] = strdup(abs);
		}
	}
	/* the environment it runs with */
	envlen = run_env(ev, kenv, env, sizeof(env), &vars);
	/* read whole (no reader cuts a secret egretd cannot see the end of), redacted, then cut */
	pkgmeta__registry_in(root_fd(t, r->root), manager, r->args, r->nargs, envlen ? vars : NULL,
			     envlen, x->cwd, registry, sizeof(registry), from, sizeof(from));
	clean(t, r->registry, sizeof(r->registry), registry, sizeof(registry));
	clean(t, r->from, sizeof(r->from), from, sizeof(from));
	join(t, ev->process->pid, idx);
}

static void emit_install(struct pkg_tracker *t, struct pkg_pending *p)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	Egret__V1__Process pr = EGRET__V1__PROCESS__INIT;
	Egret__V1__PackageInstall pi = EGRET__V1__PACKAGE_INSTALL__INIT;
	struct pkg_run *r = p->run >= 0 ? &t->runs[p->run] : NULL;

	if (p->root == PKG_ROOT_NONE) {
		/* what the path says, and why nothing more: see pkg.h */
		snprintf(p->f.hash_source, sizeof(p->f.hash_source), "%s", p->unreadable);
		if (r)
			snprintf(p->f.source, sizeof(p->f.source), "%s", r->registry);
		if (!t->unreadable++)
			log_info("package tracking: %s is reported from its path only (%s)",
				 p->f.key, p->unreadable);
	} else if (pkgmeta__read_in(root_fd(t, p->root), &p->f, r ? r->debs : NULL,
				    r ? r->ndebs : 0, r ? r->registry : NULL)) {
		return; /* not there (any more): a failed or undone install */
	}
	/* what the package's files said (a lockfile's resolved URL may carry a token) */
	clean(t, p->f.source, sizeof(p->f.source), p->f.source, sizeof(p->f.source));
	clean(t, p->f.name, sizeof(p->f.name), p->f.name, sizeof(p->f.name));
	clean(t, p->f.version, sizeof(p->f.version), p->f.version, sizeof(p->f.version));
	clean(t, p->f.hash_source, sizeof(p->f.hash_source), p->f.hash_source,
	      sizeof(p->f.hash_source));
	envelope(t, &p->who, &ev, &sb, &pr);
	pi.manager = (char *)pkgmeta__layout_name(p->f.layout);
	pi.name = p->f.name;
	pi.version = p->f.version;
	pi.source = p->f.source;
	pi.hash = p->f.hash;
	pi.hash_source = p->f.hash_source;
	pi.path = p->f.key;
	pi.installer = r ? r->manager : (char *)"";
	pi.installer_exec_id = r ? r->who.exec_id : 0;
	ev.activity_id = OCSF_APP_ACTIVITY_INSTALL;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_PACKAGE_INSTALL;
	ev.package_install = &pi;
	stream__emit(t->stream, &ev);
	t->installs++;
	if (r)
		r->installs++;
	if (r && r->ninstalled < PKG_MAX_LISTED) {
		char item[PKG_NAME_MAX + PKG_VER_MAX + 2];

		snprintf(item, sizeof(item), "%s@%s", p->f.name, p->f.version);
		r->installed[r->ninstalled++] = strdup(item);
	}
}

static void take_pending(struct pkg_tracker *t, size_t i)
{
	root_put(t, t->pending[i].root);
	t->pending[i] = t->pending[--t->npending];
}

static void release_run(struct pkg_tracker *t, int idx);

static void end_run(struct pkg_tracker *t, int idx, const Egret__V1__ProcessExit *x)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	Egret__V1__Process pr = EGRET__V1__PROCESS__INIT;
	Egret__V1__PackageRun pr_ = EGRET__V1__PACKAGE_RUN__INIT;
	struct pkg_run *r = &t->runs[idx];

	for (size_t i = 0; i < t->npending;) {
		if (t->pending[i].run == idx) {
			emit_install(t, &t->pending[i]);
			take_pending(t, i);
		} else {
			i++;
		}
	}
	envelope(t, &r->who, &ev, &sb, &pr);
	pr_.manager = r->manager;
	pr_.n_args = r->nargs;
	pr_.args = r->args;
	pr_.registry = r->registry;
	pr_.registry_from = r->from;
	pr_.n_installed = r->ninstalled;
	pr_.installed = r->installed;
	pr_.installed_count = (uint32_t)r->installs;
	pr_.n_denied = r->ndenied;
	pr_.denied = r->denied;
	pr_.registry_denied = r->ndenied > 0;
	if (x) {
		pr_.exit_code = x->exit_code;
		pr_.signal = x->signal;
		pr_.duration_ns = x->duration_ns;
	} else {
		pr_.duration_ns = now_ns(CLOCK_MONOTONIC) - r->started_ns;
	}
	ev.activity_id = OCSF_ACTIVITY_OTHER;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN;
	ev.package_run = &pr_;
	stream__emit(t->stream, &ev);
	release_run(t, idx);
}

static void release_run(struct pkg_tracker *t, int idx)
{
	struct pkg_run *r = &t->runs[idx];

	for (size_t i = 0; i < r->nargs; i++)
		free(r->args[i]);
	for (size_t i = 0; i < r->ndebs; i++)
		free(r->debs[i]);
	for (size_t i = 0; i < r->ninstalled; i++)
		free(r->installed[i]);
	for (size_t i = 0; i < r->ndenied; i++)
		free(r->denied[i]);
	root_put(t, r->root);
	r->used = false;
	leave_run(t, idx);
}

/* ---- what the stream says --------------------------------------------------------------------- */

static void on_file(struct pkg_tracker *t, const Egret__V1__Event *ev)
{
	const Egret__V1__FileActivity *fa = ev->file;
	struct pkg_pending *p;
	int fallback;
	const char *path;
	struct pkg_found f;
	int run;

	switch (fa->op) {
	case EGRET__V1__FILE_ACTIVITY__OP__OP_CREATE:
	case EGRET__V1__FILE_ACTIVITY__OP__OP_WRITE:
		path = fa->path;
		break;
	case EGRET__V1__FILE_ACTIVITY__OP__OP_RENAME:
		path = fa->new_path;
		break;
	default:
		return;
	}
	if (fa->result < 0 || !path || !pkgmeta__match(path, &f))
		return;
	run = run_of(t, ev->process->pid);
	fallback = run >= 0 ? t->runs[run].root : PKG_ROOT_NONE;
	for (size_t i = 0; i < t->npending; i++) {
		p = &t->pending[i];
		if (strcmp(p->f.key, f.key) || p->who.sandbox_id != ev->sandbox->cgroup_id)
			continue;
		p->seen_ns = now_ns(CLOCK_MONOTONIC);
		if (p->root == PKG_ROOT_NONE) /* this writer may still be there */
			p->root = root_for(t, ev->process->pid, ev->process->mnt_ns,
					   ev->sandbox->cgroup_id, fallback, &p->unreadable);
		return;
	}
	if (t->npending == PKG_MAX_PENDING) {
		/* a very large run: report the package written longest ago now, not at its end */
		size_t old = 0;

		for (size_t i = 1; i < t->npending; i++) {
			if (t->pending[i].seen_ns < t->pending[old].seen_ns)
				old = i;
		}
		if (!t->early++)
			log_info("package tracking: more than %d packages pending; reporting the "
				 "oldest before its run ends",
				 PKG_MAX_PENDING);
		emit_install(t, &t->pending[old]);
		take_pending(t, old);
	}
	p = &t->pending[t->npending++];
	p->f = f;
	p->run = run;
	who_of(ev, &p->who);
	p->seen_ns = now_ns(CLOCK_MONOTONIC);
	/* while the writer lives, if it still does: its root */
	p->root = root_for(t, ev->process->pid, ev->process->mnt_ns, ev->sandbox->cgroup_id,
			   fallback, &p->unreadable);
}

static void on_denied(struct pkg_tracker *t, const Egret__V1__Event *ev)
{
	const Egret__V1__NetConnect *c = ev->net_connect;
	const ProtobufCEnumValue *why;
	int idx = run_of(t, ev->process->pid);
	struct pkg_run *r;
	char item[160];

	if (idx < 0 || c->verdict != EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY)
		return;
	r = &t->runs[idx];
	why = protobuf_c_enum_descriptor_get_value(&egret__v1__net_connect__reason__descriptor,
						   c->reason);
	snprintf(item, sizeof(item), "%s:%u %s", c->dst_addr, c->dst_port, why ? why->name : "");
	for (size_t i = 0; i < r->ndenied; i++) {
		if (!strcmp(r->denied[i], item))
			return;
	}
	if (r->ndenied < PKG_MAX_DENIED)
		r->denied[r->ndenied++] = strdup(item);
}

void pkg__observe(struct pkg_tracker *t, const Egret__V1__Event *ev, const struct env_block *env)
{
	int idx;

	if (!ev->process || !ev->sandbox || !ev->sandbox->cgroup_id)
		return;
	switch (ev->payload_case) {
	case EGRET__V1__EVENT__PAYLOAD_EXEC: {
		bool installs;
		const char *m = pkgmeta__manager(ev->exec->args, ev->exec->n_args, &installs);

		/* a manager a run starts (apt's dpkg, npm's node-gyp) belongs to that run */
		if (m && installs && run_of(t, ev->process->pid) < 0)
			start_run(t, ev, m, env);
		break;
	}
	case EGRET__V1__EVENT__PAYLOAD_FORK:
		idx = run_of(t, ev->process->pid);
		if (idx >= 0)
			join(t, ev->fork->child_pid, idx);
		break;
	case EGRET__V1__EVENT__PAYLOAD_EXIT:
		idx = run_of(t, ev->process->pid);
		if (idx >= 0 && t->runs[idx].who.pid == ev->process->pid)
			end_run(t, idx, ev->exit);
		else
			leave(t, ev->process->pid);
		break;
	case EGRET__V1__EVENT__PAYLOAD_FILE:
		on_file(t, ev);
		break;
	case EGRET__V1__EVENT__PAYLOAD_NET_CONNECT:
		on_denied(t, ev);
		break;
	default:
		break;
	}
}

void pkg__tick(struct pkg_tracker *t)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	for (size_t i = 0; i < t->npending;) {
		struct pkg_pending *p = &t->pending[i];

		if (p->run < 0 && now - p->seen_ns >= PKG_QUIET_NS) {
			emit_install(t, p);
			take_pending(t, i);
		} else {
			i++;
		}
	}
	pkgmeta__expire(now);
	/* a run whose exit record was lost: its process is gone */
	for (int i = 0; i < PKG_MAX_RUNS; i++) {
		if (t->runs[i].used && now - t->runs[i].started_ns > PKG_ORPHAN_NS &&
		    kill((pid_t)t->runs[i].who.pid, 0) && errno == ESRCH)
			end_run(t, i, NULL);
	}
}

void pkg__flush(struct pkg_tracker *t)
{
	while (t->npending) {
		emit_install(t, &t->pending[t->npending - 1]);
		take_pending(t, t->npending - 1);
	}
}

/* egretd stops: runs in progress are not reported as ended (they have not) */
void pkg__free(struct pkg_tracker *t)
{
	while (t->pending && t->npending)
		take_pending(t, t->npending - 1);
	for (int i = 0; i < PKG_MAX_RUNS; i++) {
		if (t->runs[i].used)
			release_run(t, i);
	}
	for (int i = 0; i < PKG_MAX_ROOTS; i++) {
		if (t->roots[i].fd >= 0) /* not reached: every reference was put above */
			close(t->roots[i].fd);
		if (t->roots[i].ns >= 0)
			close(t->roots[i].ns);
		t->roots[i].fd = t->roots[i].ns = -1;
	}
	for (size_t i = 0; t->sandbox_roots && i < PKG_MAX_SANDBOX_ROOTS; i++) {
		if (t->sandbox_roots[i].sandbox_id)
			close(t->sandbox_roots[i].fd);
	}
	free(t->sandbox_roots);
	t->sandbox_roots = NULL;
	free(t->pending);
	t->pending = NULL;
	pkgmeta__expire(0);
}
