/* The package tracker on its own: events as the collector hands them over, metadata files
 * written in a temporary directory, the events it emits read back from a file sink. The
 * kernel side is covered by the packages integration suite; here are the bounds: a run that
 * installs more packages than the tracker holds at once loses none of them, and egretd
 * stopping mid-run still reports what was installed; and where a package is read when the
 * process that wrote it is gone: in its sandbox's registered root, or nowhere.
 */
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "loop.h"
#include "pkg.h"
#include "sink.h"
#include "stream.h"
#include "util.h"

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
	pkg__observe(&r->t, &ev, NULL);
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
	pkg__observe(&r->t, &ev, NULL);
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
	pkg__observe(&r->t, &ev, NULL);
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

/* a pid no process has: a child's, reaped */
static uint32_t gone_pid(void)
{
	pid_t pid = fork();

	cr_assert_geq(pid, 0);
	if (!pid)
		_exit(0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	return (uint32_t)pid;
}

/* a file event of pid in sandbox 77, in no run */
static void file_written(struct rig *r, uint32_t pid, const char *path)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	Egret__V1__FileActivity fa = EGRET__V1__FILE_ACTIVITY__INIT;

	as_sandboxed(&ev, &sb, &p, 2002);
	p.pid = pid;
	p.comm = "cp";
	fa.op = EGRET__V1__FILE_ACTIVITY__OP__OP_CREATE;
	fa.path = (char *)path;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_FILE;
	ev.file = &fa;
	pkg__observe(&r->t, &ev, NULL);
}

static size_t open_fds(void)
{
	DIR *d = opendir("/proc/self/fd");
	size_t n = 0;

	cr_assert(d);
	while (readdir(d))
		n++;
	closedir(d);
	return n;
}

static size_t roots_held(const struct pkg_tracker *t, uint32_t *refs)
{
	size_t n = 0;

	for (int i = 0; i < PKG_MAX_ROOTS; i++) {
		if (t->roots[i].fd >= 0) {
			n++;
			*refs = t->roots[i].refs;
		}
	}
	return n;
}

/* The path in a file event is the sandbox's: with its writer gone egretd reads it in the root
 * the sandbox's registration gave (one held for all its packages, let go when they are
 * reported), and without one reads nothing, reporting what the path says.
 */
Test(pkg, a_gone_writer_is_read_in_the_registered_root_or_not_at_all)
{
	const char *paths[] = { "/site/gone-1.0.dist-info/METADATA",
				"/site/also-2.0.dist-info/METADATA" };
	size_t fds = open_fds();
	struct rig r;
	struct events evs;
	char root[128], dir[192];
	uint32_t pid = gone_pid(), refs = 0;
	FILE *f;

	rig_init(&r);
	snprintf(root, sizeof(root), "%s/root", r.dir);
	for (int i = 0; i < 2; i++) {
		snprintf(dir, sizeof(dir), "%s/site/%s-%d.0.dist-info", root, i ? "also" : "gone",
			 i + 1);
		cr_assert_eq(mkdir_p(dir, 0755), 0);
		strcat(dir, "/METADATA");
		f = fopen(dir, "w");
		cr_assert(f);
		fprintf(f, "Name: %s\nVersion: %d.0-in-the-root\n", i ? "also" : "gone", i + 1);
		fclose(f);
	}

	/* no root known: from the path only */
	file_written(&r, pid, paths[0]);
	cr_expect_eq(roots_held(&r.t, &refs), 0);
	pkg__flush(&r.t);
	/* the registration's root: read in it, one root held for both */
	pkg__set_sandbox_root(&r.t, 77, open(root, O_PATH | O_DIRECTORY | O_CLOEXEC));
	file_written(&r, pid, paths[0]);
	file_written(&r, pid, paths[1]);
	cr_expect_eq(roots_held(&r.t, &refs), 1);
	cr_expect_eq(refs, 2);
	pkg__flush(&r.t);
	cr_expect_eq(roots_held(&r.t, &refs), 0, "a root outlived its packages");
	/* forgotten: nothing read again */
	pkg__set_sandbox_root(&r.t, 77, -1);
	file_written(&r, pid, paths[1]);
	pkg__flush(&r.t);
	stream__flush(&r.s);

	cr_assert_eq(events_read(r.out, &evs), 0);
	cr_assert_eq(evs.n, 4);
	for (size_t i = 0; i < evs.n; i++) {
		const Egret__V1__PackageInstall *pi = evs.ev[i]->package_install;
		bool read = i == 1 || i == 2;

		cr_assert_eq(evs.ev[i]->payload_case, EGRET__V1__EVENT__PAYLOAD_PACKAGE_INSTALL);
		cr_expect_str_eq(pi->installer, "");
		cr_expect_str_eq(evs.ev[i]->process->comm, "cp");
		if (read) {
			cr_expect(strstr(pi->version, "-in-the-root"), "%zu: %s", i, pi->version);
			cr_expect_str_eq(pi->hash_source, "egret sha256 of METADATA");
			cr_expect(!strncmp(pi->hash, "sha256:", 7), "%s", pi->hash);
		} else {
			cr_expect(!strcmp(pi->version, "1.0") || !strcmp(pi->version, "2.0"), "%s",
				  pi->version);
			cr_expect_str_eq(pi->hash, "");
			cr_expect(!strncmp(pi->hash_source, "unreadable: ", 12), "%s",
				  pi->hash_source);
		}
	}
	events_free(&evs);
	rig_free(&r);
	cr_expect_eq(open_fds(), fds, "descriptors leaked");
}

/* Registered roots past the table's bound are closed, not leaked; re-registering replaces; a
 * descriptor that is not a directory is refused.
 */
Test(pkg, registered_roots_are_bounded)
{
	size_t fds = open_fds(), rig;
	struct rig r;

	rig_init(&r);
	rig = open_fds();
	for (uint64_t id = 1; id <= PKG_MAX_SANDBOX_ROOTS + 10; id++)
		pkg__set_sandbox_root(&r.t, id, open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
	pkg__set_sandbox_root(&r.t, 1, open("/", O_PATH | O_DIRECTORY | O_CLOEXEC));
	cr_expect_eq(open_fds(), rig + PKG_MAX_SANDBOX_ROOTS);
	for (uint64_t id = 1; id <= 100; id++)
		pkg__set_sandbox_root(&r.t, id, -1);
	cr_expect_eq(open_fds(), rig + PKG_MAX_SANDBOX_ROOTS - 100);
	/* not a directory: closed, and the root held for it before forgotten */
	pkg__set_sandbox_root(&r.t, 200, open("/dev/null", O_RDONLY | O_CLOEXEC));
	cr_expect_eq(open_fds(), rig + PKG_MAX_SANDBOX_ROOTS - 101);
	rig_free(&r);
	cr_expect_eq(open_fds(), fds, "descriptors leaked");
}
