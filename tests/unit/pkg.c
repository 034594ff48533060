/* The package tracker on its own: events as the collector hands them over, metadata files
 * written in a temporary directory, the events it emits read back from a file sink. The
 * kernel side is covered by the packages integration suite; here are the bounds: a run that
 * installs more packages than the tracker holds at once loses none of them, and egretd
 * stopping mid-run still reports what was installed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "loop.h"
#include "pkg.h"
#include "sink.h"
#include "stream.h"

struct rig {
	char dir[64], spool[96], out[96];
	struct loop loop;
	struct stream s;
	struct sink sink;
	struct pkg_tracker t;
};

static void rig_init(struct rig *r)
{
	char uri[128], err[160];

	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/egret-unit-XXXXXX");
	cr_assert(mkdtemp(r->dir));
	snprintf(r->spool, sizeof(r->spool), "%s/spool", r->dir);
	snprintf(r->out, sizeof(r->out), "%s/ev.pb", r->dir);
	cr_assert_eq(loop__init(&r->loop), 0);
	cr_assert_eq(stream__init(&r->s), 0);
	cr_assert_eq(stream__open_spool(&r->s, r->spool, SPOOL_DEFAULT_LIMIT, SPOOL_SYNC_NEVER), 0);
	snprintf(uri, sizeof(uri), "file:%s", r->out);
	cr_assert_eq(sink__parse(&r->sink, uri, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(stream__add_sink(&r->s, &r->sink, &r->loop), 0);
	cr_assert_eq(pkg__init(&r->t, &r->s), 0);
}

static void rig_free(struct rig *r)
{
	char cmd[128];

	pkg__free(&r->t);
	stream__free(&r->s);
	loop__close(&r->loop);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", r->dir);
	cr_expect_eq(system(cmd), 0);
}

/* the envelope of a sandboxed process; pid is this test's own, so the run is never orphaned */
static void as_sandboxed(Egret__V1__Event *ev, Egret__V1__Sandbox *sb, Egret__V1__Process *p,
			 uint64_t exec_id)
{
	sb->cgroup_id = 77;
	sb->name = "box";
	p->pid = (uint32_t)getpid();
	p->exec_id = exec_id;
	p->comm = "pip";
	ev->sandbox = sb;
	ev->process = p;
}

static void exec_pip(struct rig *r, const char *target)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	Egret__V1__ProcessExec x = EGRET__V1__PROCESS_EXEC__INIT;
	char *argv[] = { "pip",		 "install",	"--target",
			 (char *)target, "--index-url", "http://192.0.2.20:8000/simple/",
			 "many" };

	as_sandboxed(&ev, &sb, &p, 1001);
	x.n_args = 7;
	x.args = argv;
	x.cwd = "/";
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXEC;
	ev.exec = &x;
	pkg__observe(&r->t, &ev);
}

static void exit_pip(struct rig *r)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	Egret__V1__ProcessExit x = EGRET__V1__PROCESS_EXIT__INIT;

	as_sandboxed(&ev, &sb, &p, 1001);
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXIT;
	ev.exit = &x;
	pkg__observe(&r->t, &ev);
}

/* pip writes pkgN-1.0.dist-info/METADATA; the tracker sees the file event */
static void install(struct rig *r, const char *target, int n)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	Egret__V1__FileActivity fa = EGRET__V1__FILE_ACTIVITY__INIT;
	char dir[256], path[300];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/pkg%d-1.0.dist-info", target, n);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(path, sizeof(path), "%s/METADATA", dir);
	f = fopen(path, "w");
	cr_assert(f);
	fprintf(f, "Metadata-Version: 2.1\nName: pkg%d\nVersion: 1.0\n", n);
	fclose(f);
	as_sandboxed(&ev, &sb, &p, 1001);
	fa.op = EGRET__V1__FILE_ACTIVITY__OP__OP_CREATE;
	fa.path = path;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_FILE;
	ev.file = &fa;
	pkg__observe(&r->t, &ev);
}

static size_t count_installs(struct events *evs, bool *seen, size_t n)
{
	size_t found = 0;

	for (size_t i = 0; i < evs->n; i++) {
		const Egret__V1__Event *e = evs->ev[i];
		int k;

		if (e->payload_case != EGRET__V1__EVENT__PAYLOAD_PACKAGE_INSTALL)
			continue;
		found++;
		cr_expect_str_eq(e->package_install->installer, "pip");
		cr_expect_eq(e->package_install->installer_exec_id, 1001);
		cr_expect_str_eq(e->package_install->source, "http://192.0.2.20:8000/simple/");
		if (sscanf(e->package_install->name, "pkg%d", &k) == 1 && k >= 0 && (size_t)k < n) {
			cr_expect_not(seen[k], "pkg%d reported twice", k);
			seen[k] = true;
		}
	}
	return found;
}

Test(pkg, a_run_larger_than_the_tracker_loses_nothing)
{
	enum {
		N = PKG_MAX_PENDING + 300
	};
	static bool seen[N];
	struct rig r;
	struct events evs;
	const Egret__V1__Event *run = NULL;
	char target[96];

	rig_init(&r);
	snprintf(target, sizeof(target), "%s/site", r.dir);
	cr_assert_eq(mkdir(target, 0755), 0);
	exec_pip(&r, target);
	for (int i = 0; i < N; i++)
		install(&r, target, i);
	exit_pip(&r);
	stream__flush(&r.s);
	cr_assert_eq(events_read(r.out, &evs), 0);
	cr_expect_eq(count_installs(&evs, seen, N), N);
	for (int i = 0; i < N; i++)
		cr_expect(seen[i], "pkg%d was not reported", i);
	for (size_t i = 0; i < evs.n; i++) {
		if (evs.ev[i]->payload_case == EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN)
			run = evs.ev[i];
	}
	cr_assert(run, "no PackageRun");
	cr_expect_eq(run->package_run->installed_count, N);
	cr_expect_eq(run->package_run->n_installed, PKG_MAX_LISTED);
	cr_expect_eq(run->seq, evs.ev[evs.n - 1]->seq, "the run ends after its installs");
	events_free(&evs);
	rig_free(&r);
}

Test(pkg, a_stop_mid_run_reports_what_was_installed)
{
	static bool seen[3];
	struct rig r;
	struct events evs;
	char target[96];

	rig_init(&r);
	snprintf(target, sizeof(target), "%s/site", r.dir);
	cr_assert_eq(mkdir(target, 0755), 0);
	exec_pip(&r, target);
	for (int i = 0; i < 3; i++)
		install(&r, target, i);
	pkg__flush(&r.t);
	stream__flush(&r.s);
	cr_assert_eq(events_read(r.out, &evs), 0);
	cr_expect_eq(count_installs(&evs, seen, 3), 3);
	for (size_t i = 0; i < evs.n; i++)
		cr_expect_neq(evs.ev[i]->payload_case, EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN,
			      "a run still going was reported as ended");
	events_free(&evs);
	rig_free(&r);
}
