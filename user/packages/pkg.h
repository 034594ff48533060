/* Package installs in sandboxes, from the audit stream egretd already has: an exec of a package
 * manager starts a run (its registry read from arguments, environment and config), its forks
 * join it, egress refused to it is noted; files written that mark an installed package (dpkg's
 * info lists, *.dist-info, node_modules/<name>/package.json, gem specifications, Go's module
 * cache) become PackageInstall events, read when the run ends, or after a quiet moment when no
 * manager ran (a copy, a renamed binary, an unknown tool). Each run ends with a PackageRun.
 *
 * The paths in events are paths as the sandboxed process sees them, so its files are read in
 * its root (pkgmeta.h, metafile.h), never at the same path in egretd's mount namespace. Which
 * root, for a package written by process P of sandbox S:
 *   1. P's own /proc/P/root, opened when the file event is handled, while P lives. With it
 *      egretd holds P's mount namespace (/proc/P/ns/mnt) open: when a namespace's last process
 *      exits its mounts are detached, and a root opened before would show the directories under
 *      them (the host's) instead of the sandbox's files. A P in egretd's own mount namespace
 *      and root directory is read at egretd's own paths (PKG_ROOT_HOST), holding nothing.
 *   2. P is gone, and is a process of a manager run: the run's root, opened the same way when
 *      the run's exec is handled.
 *   3. The root egretd's registration of S handed over (pkg__set_sandbox_root).
 *   4. None of those: egretd cannot tell which mount namespace P was in (a process may unshare
 *      its own, mount over a directory and write there), so nothing is read: the package is
 *      reported from what its path says (name, and version where the layout has it: dist-info
 *      and gemspec names, Go's .ziphash paths), with an empty hash and hash_source
 *      "unreadable: ..." saying why. That loses the least: the install is still seen, and
 *      nothing the sandbox did not write is reported as its own. A later file of the same
 *      package written by a process that lives gives the package that one's root.
 * Roots are shared by the runs and packages of the same mount namespace and root directory
 * (counted references), at most PKG_MAX_ROOTS at once (two descriptors each); past that, or
 * when P's root cannot be opened, the next source is used.
 */
#ifndef EGRET_PKG_H
#define EGRET_PKG_H

#include <stdint.h>

#include "egret/v1/events.pb-c.h"
#include "pkgmeta.h"
#include "util.h"

struct stream;

#define PKG_MAX_RUNS	      64
#define PKG_MAX_MEMBERS	      4096
#define PKG_MAX_PENDING	      1024
#define PKG_MAX_ARGS	      64
#define PKG_MAX_LISTED	      64
#define PKG_MAX_DENIED	      8
#define PKG_QUIET_NS	      (2ull * 1000000000ull)  /* files with no run: read this long after */
#define PKG_ORPHAN_NS	      (10ull * 1000000000ull) /* a run whose exit was never seen */
#define PKG_MAX_ROOTS	      128  /* roots held at once (a directory and a namespace each) */
#define PKG_MAX_SANDBOX_ROOTS 4096 /* roots handed over by registrations */

/* who did it, as the envelope said */
struct pkg_who {
	uint64_t sandbox_id;
	char sandbox[80];
	uint32_t pid, tid, uid, gid;
	char comm[17];
	uint64_t exec_id;
};

/* A root held for runs and packages: a process's root directory and mount namespace. */
struct pkg_root {
	int fd; /* O_PATH directory; -1: a free slot */
	int ns; /* its mount namespace, held so that its mounts stay; -1: egretd's, or unknown */
	uint64_t ns_ino, mnt_id, dev, ino; /* which root it is (ns_ino 0: a registration's) */
	uint32_t refs;
};

struct pkg_run {
	bool used;
	/* where its files are read: an index in roots[] (a reference held), PKG_ROOT_HOST or
	 * PKG_ROOT_NONE (pkgmeta.h)
	 */
	int root;
	struct pkg_who who; /* the manager process */
	uint64_t started_ns;
	char manager[16];
	char *args[PKG_MAX_ARGS];
	size_t nargs;
	char *debs[8];
	size_t ndebs;
	char registry[PKG_URL_MAX], from[256];
	char *installed[PKG_MAX_LISTED];
	size_t ninstalled;
	uint64_t installs; /* all of them, listed or not */
	char *denied[PKG_MAX_DENIED];
	size_t ndenied;
};

struct pkg_pending {
	struct pkg_found f;
	int run;		/* index in runs[], -1: no manager run */
	int root;		/* as a run's */
	const char *unreadable; /* root PKG_ROOT_NONE: why */
	struct pkg_who who;
	uint64_t seen_ns;
};

struct pkg_tracker {
	struct stream *stream;
	struct pkg_run runs[PKG_MAX_RUNS];
	struct {
		uint32_t pid;
		int run;
	} members[PKG_MAX_MEMBERS];
	size_t nmembers;
	struct pkg_pending *pending;
	size_t npending;
	struct pkg_root roots[PKG_MAX_ROOTS];
	struct {
		uint64_t sandbox_id; /* 0: a free slot */
		int fd;
	} * sandbox_roots;				/* PKG_MAX_SANDBOX_ROOTS of them */
	uint64_t self_ns, self_mnt, self_dev, self_ino; /* egretd's own mount namespace and / */
	uint64_t installs, early, unjoined, unreadable, roots_full, registered_full;
	/* egretd's: the Sandbox message of the tracker's events for sandbox id (its container
	 * too), valid until the next call; NULL: the id and the name the tracker saw
	 */
	const Egret__V1__Sandbox *(*sandbox_pb)(void *ctx, uint64_t id, const char *name);
	/* egretd's: a live process of sandbox id in mount namespace mnt_ns (its inode), 0: none;
	 * whose root stands for a writer of that namespace that is gone
	 */
	uint32_t (*ns_member)(void *ctx, uint64_t id, uint32_t mnt_ns);
	void *sandbox_ctx;
	/* egretd's redactor (redact__cb, ctx its struct redactor): in[] redacted into out[size],
	 * cut and ending in [TRUNCATED] when it does not fit; its length. Every string the tracker
	 * reads from a sandbox's environment, config or package files passes it before it is
	 * emitted: PackageRun's registry and registry_from, PackageInstall's source, name, version
	 * and hash_source (and so the run's installed list). argv, cwd and paths come from events
	 * the decoder redacted already. NULL: no redaction (unit tests).
	 */
	size_t (*redact)(void *ctx, const char *in, char *out, size_t size);
	void *redact_ctx;
};

int pkg__init(struct pkg_tracker *t, struct stream *s);
/* An event of the stream; env: an exec's environment as the kernel read it, NULL when it did
 * not (the tracker then reads /proc/PID/environ, which a process that is gone no longer has)
 */
void pkg__observe(struct pkg_tracker *t, const Egret__V1__Event *ev, const struct env_block *env);
/* The root directory of a sandbox (its cgroup id), for its files when the process that wrote
 * them is gone: fd (a directory, O_PATH will do; anything else is closed and logged) is taken
 * over; -1 forgets the one held and closes it (unregistration, the sandbox's end). Packages
 * found before keep the root they were given. At most PKG_MAX_SANDBOX_ROOTS are held: past
 * that fd is closed, and logged. Only the directory is held, not the container's mount
 * namespace: once the container's last process is gone, what was mounted inside it (volumes, a
 * tmpfs) no longer shows through it, the directories of its root file system under them do.
 */
void pkg__set_sandbox_root(struct pkg_tracker *t, uint64_t sandbox_id, int fd);
/* Once a second: packages written outside any run, runs whose end was never seen. */
void pkg__tick(struct pkg_tracker *t);
/* egretd stops: report every package found so far (runs in progress stay open). */
void pkg__flush(struct pkg_tracker *t);
void pkg__free(struct pkg_tracker *t);

#endif /* EGRET_PKG_H */
