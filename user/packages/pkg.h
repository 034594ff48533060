/* Package installs in sandboxes, from the audit stream egretd already has: an exec of a package
 * manager starts a run (its registry read from arguments, environment and config), its forks
 * join it, egress refused to it is noted; files written that mark an installed package (dpkg's
 * info lists, *.dist-info, node_modules/<name>/package.json, gem specifications, Go's module
 * cache) become PackageInstall events, read when the run ends, or after a quiet moment when no
 * manager ran (a copy, a renamed binary, an unknown tool). Each run ends with a PackageRun.
 */
#ifndef EGRET_PKG_H
#define EGRET_PKG_H

#include <stdint.h>

#include "egret/v1/events.pb-c.h"
#include "pkgmeta.h"

struct stream;

#define PKG_MAX_RUNS	64
#define PKG_MAX_MEMBERS 4096
#define PKG_MAX_PENDING 1024
#define PKG_MAX_ARGS	64
#define PKG_MAX_LISTED	64
#define PKG_MAX_DENIED	8
#define PKG_QUIET_NS	(2ull * 1000000000ull)	/* files with no run: read this long after */
#define PKG_ORPHAN_NS	(10ull * 1000000000ull) /* a run whose exit was never seen */

/* who did it, as the envelope said */
struct pkg_who {
	uint64_t sandbox_id;
	char sandbox[80];
	uint32_t pid, tid, uid, gid;
	char comm[17];
	uint64_t exec_id;
};

struct pkg_run {
	bool used;
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
	int run; /* index in runs[], -1: no manager run */
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
	uint64_t installs, early, unjoined;
};

int pkg__init(struct pkg_tracker *t, struct stream *s);
void pkg__observe(struct pkg_tracker *t, const Egret__V1__Event *ev);
/* Once a second: packages written outside any run, runs whose end was never seen. */
void pkg__tick(struct pkg_tracker *t);
/* egretd stops: report every package found so far (runs in progress stay open). */
void pkg__flush(struct pkg_tracker *t);
void pkg__free(struct pkg_tracker *t);

#endif /* EGRET_PKG_H */
