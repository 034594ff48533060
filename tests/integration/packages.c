/* Package installs in a sandbox, from local registries inside the test's network namespace: a
 * PEP 503 simple index and a flat apt repository served by python3 -m http.server on
 * 192.0.2.20 (allowed) and 192.0.2.30 (not), a .deb for dpkg, an npm tarball. Each install is
 * reported with the right manager, name, version, source and hash; a package copied into place
 * with cp is reported too; an install from the denied registry is reported as such.
 * A sandboxed process in a mount namespace of its own has its files read in its root: what it
 * wrote under its own tmpfs, not the host's file at the same path; its symlinks resolve in its
 * root; and when it is gone before egretd could look, nothing is read.
 * Fixtures: tests/tools/pkg_fixtures.sh.
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "util.h"

#define ALLOWED "192.0.2.20"
#define DENIED	"192.0.2.30"

static pid_t servers[2];
static char fx[PATH_MAX];

static pid_t serve(const char *addr)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, 1);
		dup2(null, 2);
		execl("/usr/bin/python3", "python3", "-m", "http.server", "8000", "--bind", addr,
		      "--directory", fx, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100 && tcp_connect(addr, 8000, 0, 100); i++)
		usleep(50000);
	return pid;
}

static void setup(void)
{
	char script[PATH_MAX], out[4096];
	char *argv[] = { "/bin/sh", script, fx, NULL };

	harness_setup(false);
	harness_kill_at_teardown(&servers[0]);
	harness_kill_at_teardown(&servers[1]);
	snprintf(fx, sizeof(fx), "%s/fx", T->tmpdir);
	snprintf(script, sizeof(script), "%s/tests/tools/pkg_fixtures.sh", EGRET_SOURCE_DIR);
	cr_assert_eq(run_cmd(argv, out, sizeof(out)), 0, "fixtures: %s", out);
	cr_assert_eq(netns_new(), 0);
	cr_assert_eq(netns_addr("lo", ALLOWED "/32"), 0);
	cr_assert_eq(netns_addr("lo", DENIED "/32"), 0);
	servers[0] = serve(ALLOWED);
	servers[1] = serve(DENIED);
	harness_setup_start("allow " ALLOWED " tcp/8000\n", NULL);
}

TestSuite(packages, .init = setup, .fini = harness_teardown, .timeout = 120);

/* the contents of a fixture file (a hash the fixtures computed) */
static const char *fixture(const char *name)
{
	static char buf[4][256];
	static int n;
	char path[PATH_MAX + 64];
	char *b = buf[n++ % 4];

	snprintf(path, sizeof(path), "%s/%s", fx, name);
	cr_assert_gt(read_file(path, b, 256), 0, "%s", path);
	return b;
}

static bool is_install(const Egret__V1__Event *ev, const void *name)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_PACKAGE_INSTALL &&
	       !strcmp(ev->package_install->name, name);
}

static bool is_run(const Egret__V1__Event *ev, const void *manager)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN &&
	       !strcmp(ev->package_run->manager, manager);
}

/* A command in the sandbox "pkgbox"; its output when it fails. */
static int in_box(const char *what, ...)
{
	char *argv[64], out[16384];
	va_list ap;
	int n = 0, rc;

	va_start(ap, what);
	while (n < 63 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	rc = sandbox_cmdv(T, "pkgbox", out, sizeof(out), argv);
	if (rc && getenv("EGRET_TEST_VERBOSE"))
		fprintf(stderr, "%s: exit %d\n%s\n", what, rc, out);
	return rc;
}

static const Egret__V1__PackageInstall *wait_install(struct events *evs, const char *name)
{
	cr_assert_eq(events_wait(T->sink_path, is_install, name, 15000, evs), 0,
		     "no PackageInstall for %s", name);
	return events_find(evs, is_install, name, NULL)->package_install;
}

/* --isolated: no configuration or environment of the host's; plain HTTP to the test's hosts */
#define PIP                                                                                      \
	"/usr/bin/python3", "-m", "pip", "install", "--isolated", "--no-cache-dir", "--no-deps", \
		"--disable-pip-version-check", "--no-input", "--break-system-packages",          \
		"--trusted-host", ALLOWED, "--trusted-host", DENIED

Test(packages, pip_from_an_index)
{
	char target[PATH_MAX + 16];
	const Egret__V1__PackageInstall *pi;
	const Egret__V1__PackageRun *run;
	struct events evs;

	snprintf(target, sizeof(target), "%s/site1", T->tmpdir);
	cr_assert_eq(in_box("pip", PIP, "--target", target, "--index-url",
			    "http://" ALLOWED ":8000/simple/", "demo-pkg", NULL),
		     0, "pip install failed");
	pi = wait_install(&evs, "demo-pkg");
	cr_expect_str_eq(pi->manager, "pip");
	cr_expect_str_eq(pi->version, "1.0");
	cr_expect_str_eq(pi->installer, "pip");
	cr_expect_neq(pi->installer_exec_id, 0);
	cr_expect_str_eq(pi->source, "http://" ALLOWED ":8000/simple/");
	cr_expect_str_eq(pi->hash, fixture("metadata.hash"));
	cr_expect_str_eq(pi->hash_source, "pip RECORD (METADATA)");
	cr_expect(strstr(pi->path, "/site1/demo_pkg-1.0.dist-info"), "%s", pi->path);
	events_free(&evs);
	cr_assert_eq(events_wait(T->sink_path, is_run, "pip", 5000, &evs), 0, "no PackageRun");
	run = events_find(&evs, is_run, "pip", NULL)->package_run;
	cr_expect_str_eq(run->registry, "http://" ALLOWED ":8000/simple/");
	cr_expect_str_eq(run->registry_from, "--index-url");
	cr_assert_eq(run->n_installed, 1);
	cr_expect_str_eq(run->installed[0], "demo-pkg@1.0");
	cr_expect_not(run->registry_denied);
	cr_expect_eq(run->exit_code, 0);
	events_free(&evs);
}

Test(packages, pip_from_a_url_has_the_wheel_hash)
{
	char target[PATH_MAX + 16], url[256], want[80];
	const Egret__V1__PackageInstall *pi;
	struct events evs;

	snprintf(target, sizeof(target), "%s/site2", T->tmpdir);
	snprintf(url, sizeof(url),
		 "http://" ALLOWED ":8000/demo_pkg-1.0-py3-none-any.whl#sha256=%s",
		 fixture("wheel.sha256"));
	cr_assert_eq(in_box("pip url", PIP, "--target", target, url, NULL), 0,
		     "pip install failed");
	pi = wait_install(&evs, "demo-pkg");
	snprintf(want, sizeof(want), "sha256:%s", fixture("wheel.sha256"));
	cr_expect_str_eq(pi->hash, want);
	cr_expect_str_eq(pi->hash_source, "pip direct_url.json");
	cr_expect_str_eq(pi->source, "http://" ALLOWED ":8000/demo_pkg-1.0-py3-none-any.whl");
	events_free(&evs);
}

Test(packages, apt_from_a_local_repository)
{
	char root[PATH_MAX + 16], dir[PATH_MAX + 64], opt_root[PATH_MAX + 16],
		opt_status[PATH_MAX + 64], opt_dpkg[PATH_MAX + 32], want[80];
	static const char *const dirs[] = { "etc/apt/apt.conf.d",
					    "etc/apt/preferences.d",
					    "var/lib/apt/lists/partial",
					    "var/cache/apt/archives/partial",
					    "var/lib/dpkg/info",
					    "var/lib/dpkg/updates",
					    "var/log/apt" };
	const Egret__V1__PackageInstall *pi;
	struct events evs;
	FILE *f;

	snprintf(root, sizeof(root), "%s/aptroot", T->tmpdir);
	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(dir, sizeof(dir), "%s/%s", root, dirs[i]);
		cr_assert_eq(mkdir_p(dir, 0755), 0);
	}
	snprintf(dir, sizeof(dir), "%s/var/lib/dpkg/status", root);
	f = fopen(dir, "w");
	fclose(f);
	snprintf(dir, sizeof(dir), "%s/etc/apt/sources.list", root);
	f = fopen(dir, "w");
	fprintf(f, "deb [trusted=yes] http://" ALLOWED ":8000/repo ./\n");
	fclose(f);
	snprintf(opt_root, sizeof(opt_root), "Dir=%s", root);
	snprintf(opt_status, sizeof(opt_status), "Dir::State::status=%s/var/lib/dpkg/status", root);
	snprintf(opt_dpkg, sizeof(opt_dpkg), "DPkg::Options::=--root=%s", root);
#define APT                                                                                  \
	"apt-get", "-q", "-o", opt_root, "-o", opt_status, "-o", "Debug::NoLocking=1", "-o", \
		"APT::Sandbox::User=root", "-o", opt_dpkg, "-o", "DPkg::Options::=--log=/dev/null"
	cr_assert_eq(in_box("apt update", APT, "update", NULL), 0, "apt-get update failed");
	cr_assert_eq(in_box("apt install", APT, "-y", "install", "egret-demo", NULL), 0,
		     "apt-get install failed");
	pi = wait_install(&evs, "egret-demo");
	snprintf(want, sizeof(want), "sha256:%s", fixture("deb.sha256"));
	cr_expect_str_eq(pi->manager, "dpkg");
	cr_expect_str_eq(pi->version, "1.0-1");
	cr_expect_str_eq(pi->installer, "apt");
	cr_expect_str_eq(pi->hash, want);
	cr_expect(!strncmp(pi->hash_source, "apt lists", 9), "%s", pi->hash_source);
	cr_expect_str_eq(pi->source, "http://" ALLOWED ":8000/repo/./egret-demo_1.0-1_all.deb");
	events_free(&evs);
}

Test(packages, dpkg_of_a_local_deb)
{
	char root[PATH_MAX + 16], dir[PATH_MAX + 64], opt[PATH_MAX + 16], deb[PATH_MAX + 64],
		want[80];
	const Egret__V1__PackageInstall *pi;
	struct events evs;
	FILE *f;

	snprintf(root, sizeof(root), "%s/dpkgroot", T->tmpdir);
	snprintf(dir, sizeof(dir), "%s/var/lib/dpkg/info", root);
	cr_assert_eq(mkdir_p(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/var/lib/dpkg/updates", root);
	cr_assert_eq(mkdir_p(dir, 0755), 0);
	snprintf(dir, sizeof(dir), "%s/var/lib/dpkg/status", root);
	f = fopen(dir, "w");
	fclose(f);
	snprintf(opt, sizeof(opt), "--root=%s", root);
	snprintf(deb, sizeof(deb), "%s/repo/egret-demo_1.0-1_all.deb", fx);
	cr_assert_eq(in_box("dpkg", "dpkg", opt, "--log=/dev/null", "-i", deb, NULL), 0);
	pi = wait_install(&evs, "egret-demo");
	snprintf(want, sizeof(want), "sha256:%s", fixture("deb.sha256"));
	cr_expect_str_eq(pi->installer, "dpkg");
	cr_expect_str_eq(pi->hash, want);
	cr_expect_str_eq(pi->hash_source, "sha256 of the .deb");
	snprintf(want, sizeof(want), "file://%s", deb);
	cr_expect_str_eq(pi->source, want);
	events_free(&evs);
}

Test(packages, npm_of_a_tarball)
{
	char prefix[PATH_MAX + 16], cache[PATH_MAX + 16], tgz[PATH_MAX + 32];
	const Egret__V1__PackageInstall *pi;
	struct events evs;

	snprintf(prefix, sizeof(prefix), "%s/proj", T->tmpdir);
	snprintf(cache, sizeof(cache), "%s/npmcache", T->tmpdir);
	snprintf(tgz, sizeof(tgz), "%s/demo-npm-1.0.0.tgz", fx);
	cr_assert_eq(in_box("npm", "npm", "install", "--prefix", prefix, "--no-audit", "--no-fund",
			    "--offline", "--cache", cache, tgz, NULL),
		     0, "npm install failed");
	pi = wait_install(&evs, "demo-npm");
	cr_expect_str_eq(pi->manager, "npm");
	cr_expect_str_eq(pi->version, "1.0.0");
	cr_expect_str_eq(pi->installer, "npm");
	cr_expect_str_eq(pi->hash, fixture("npm.integrity"));
	cr_expect_str_eq(pi->hash_source, "npm lockfile integrity");
	cr_expect(strstr(pi->source, "demo-npm-1.0.0.tgz"), "%s", pi->source);
	events_free(&evs);
}

/* egretd reads a package in the root of the process that wrote it, so it must see that process
 * alive (a_writer_gone_unseen_is_reported_from_its_path is the other case): this cp copies the
 * dist-info, then waits on a FIFO, its last source, until egretd had a second to look.
 */
Test(packages, copied_into_place_without_a_manager)
{
	char src[PATH_MAX + 64], dst[PATH_MAX + 16];
	const Egret__V1__Event *ev;
	struct events evs;

	snprintf(src, sizeof(src), "%s/unpacked/demo_pkg-1.0.dist-info", fx);
	snprintf(dst, sizeof(dst), "%s/site3", T->tmpdir);
	cr_assert_eq(mkdir_p(dst, 0755), 0);
	/* cp is gone by the time egretd looks: its file records say it was in egretd's own mount
	 * namespace, so the files are read where egretd sees them
	 */
	cr_assert_eq(in_box("cp", "cp", "-r", src, dst, NULL), 0);
	wait_install(&evs, "demo-pkg");
	ev = events_find(&evs, is_install, "demo-pkg", NULL);
	cr_expect_str_eq(ev->package_install->installer, "");
	cr_expect_str_eq(ev->process->comm, "cp");
	cr_expect_str_eq(ev->sandbox->name, "pkgbox");
	cr_expect_str_eq(ev->package_install->version, "1.0");
	cr_expect_str_eq(ev->package_install->hash, fixture("metadata.hash"));
	cr_expect_eq(ev->class_uid, 6002);
	cr_expect_eq(ev->activity_id, 1);
	events_free(&evs);
}

Test(packages, a_denied_registry_is_reported)
{
	char target[PATH_MAX + 16];
	const Egret__V1__PackageRun *run;
	struct events evs;

	snprintf(target, sizeof(target), "%s/site4", T->tmpdir);
	cr_expect_neq(in_box("pip denied", PIP, "--target", target, "--index-url",
			     "http://" DENIED ":8000/simple/", "demo-pkg", NULL),
		      0, "pip installed from a registry egret should have refused");
	cr_assert_eq(events_wait(T->sink_path, is_run, "pip", 15000, &evs), 0, "no PackageRun");
	run = events_find(&evs, is_run, "pip", NULL)->package_run;
	cr_expect(run->registry_denied);
	cr_assert_geq(run->n_denied, 1);
	cr_expect(strstr(run->denied[0], DENIED ":8000"), "%s", run->denied[0]);
	cr_expect_eq(run->n_installed, 0);
	cr_expect_neq(run->exit_code, 0);
	cr_expect_null(events_find(&evs, is_install, "demo-pkg", NULL), "an install was reported");
	events_free(&evs);
}

/* The registry a run takes from its environment is the one reported even when egretd handles
 * the exec after the manager is gone (egretd stopped while pip runs: /proc/PID/environ is no
 * more): the kernel read the environment of the manager's exec. Before, a busy egretd reported
 * pip's default registry instead (or a config file's, under npm), a registry the run never used.
 */
Test(packages, a_registry_from_the_environment_outlives_the_manager)
{
	char script[PATH_MAX + 256];
	const Egret__V1__PackageRun *run;
	struct events evs;
	int rc;

	cr_assert_eq(in_box("sandbox first", "/bin/true", NULL), 0);
	snprintf(script, sizeof(script),
		 "PIP_INDEX_URL=http://" DENIED
		 ":8000/simple/ exec /usr/bin/python3 -m pip install "
		 "--no-cache-dir --no-deps --disable-pip-version-check --no-input "
		 "--break-system-packages --trusted-host " DENIED " --target %s/site5 demo-pkg",
		 T->tmpdir);
	cr_assert_eq(kill(T->egretd, SIGSTOP), 0);
	rc = in_box("pip from the environment", "/bin/sh", "-c", script, NULL);
	kill(T->egretd, SIGCONT);
	cr_expect_neq(rc, 0, "pip installed from a registry egret should have refused");
	cr_assert_eq(events_wait(T->sink_path, is_run, "pip", 15000, &evs), 0, "no PackageRun");
	run = events_find(&evs, is_run, "pip", NULL)->package_run;
	cr_expect_str_eq(run->registry, "http://" DENIED ":8000/simple/");
	cr_expect_str_eq(run->registry_from, "PIP_INDEX_URL");
	cr_expect(run->registry_denied);
	events_free(&evs);
}

/* ---- a sandbox's own mount namespace ------------------------------------------------------ */

/* Writes files as a container would, with python3: "file PATH TEXT", "link PATH TARGET" (the
 * directories made as needed), "sleep S" (the writer stays that long).
 */
static const char writer_py[] = "import os, sys, time\n"
				"a = sys.argv[1:]\n"
				"while a:\n"
				"    op = a.pop(0)\n"
				"    if op == 'sleep':\n"
				"        time.sleep(float(a.pop(0)))\n"
				"        continue\n"
				"    p, v = a.pop(0), a.pop(0)\n"
				"    os.makedirs(os.path.dirname(p), exist_ok=True)\n"
				"    if op == 'link':\n"
				"        os.symlink(v, p)\n"
				"    else:\n"
				"        open(p, 'w').write(v)\n";

struct writer {
	bool own_ns;	      /* in a mount namespace of its own, with... */
	const char *tmpfs[2]; /* ...a tmpfs over these directories (NULL: none) */
	char *args[16];	      /* writer_py's, NULL-terminated */
};

/* How long a writer stays after its last write, for egretd to read its files through its root
 * (/proc/PID/root): half a second, scaled on a slow machine
 */
static char *writer_hold(void)
{
	static char hold[16];

	snprintf(hold, sizeof(hold), "%.1f", 0.5 * harness_timeout_scale());
	return hold;
}

static int write_as_container(void *arg)
{
	struct writer *w = arg;
	char *argv[24], out[4096];
	int n = 0;

	if (w->own_ns) {
		if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
			return 90;
		for (int i = 0; i < 2 && w->tmpfs[i]; i++) {
			if (mkdir_p(w->tmpfs[i], 0755) ||
			    mount("tmpfs", w->tmpfs[i], "tmpfs", 0, "mode=0755"))
				return 91;
		}
	}
	argv[n++] = "/usr/bin/python3";
	argv[n++] = "-c";
	argv[n++] = (char *)writer_py;
	for (int i = 0; w->args[i] && n < 23; i++)
		argv[n++] = w->args[i];
	argv[n] = NULL;
	return run_cmd(argv, out, sizeof(out));
}

/* a dist-info's METADATA and RECORD (RECORD's hash of METADATA: hash) in dir */
static void host_dist_info(const char *dir, const char *name, const char *version, const char *hash)
{
	char p[PATH_MAX + 64];
	FILE *f;

	cr_assert_eq(mkdir_p(dir, 0755), 0, "%s", dir);
	snprintf(p, sizeof(p), "%s/METADATA", dir);
	f = fopen(p, "w");
	cr_assert(f, "%s", p);
	fprintf(f, "Metadata-Version: 2.1\nName: %s\nVersion: %s\n", name, version);
	fclose(f);
	snprintf(p, sizeof(p), "%s/RECORD", dir);
	f = fopen(p, "w");
	cr_assert(f, "%s", p);
	fprintf(f, "%s-1.0.dist-info/METADATA,sha256=%s,60\n", name, hash);
	fclose(f);
}

static bool is_install_under(const Egret__V1__Event *ev, const void *dir)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_PACKAGE_INSTALL &&
	       str_starts_with(ev->package_install->path, dir);
}

static const Egret__V1__Event *wait_install_under(struct events *evs, const char *dir)
{
	cr_assert_eq(events_wait(T->sink_path, is_install_under, dir, 15000, evs), 0,
		     "no PackageInstall under %s", dir);
	return events_find(evs, is_install_under, dir, NULL);
}

/* The host has nsdemo 6.6.6 at a path where the sandbox, in a mount namespace of its own, has
 * mounted a tmpfs and written nsdemo 1.0: egretd reports the sandbox's, read through its root
 * (held with its namespace, so still the sandbox's 2 s later when the writer has exited and its
 * namespace's mounts would be gone). Before, it read the host's file at the sandbox's path.
 */
Test(packages, a_sandbox_in_its_own_mount_namespace_is_read_in_its_root)
{
	char site[PATH_MAX], info[PATH_MAX + 32], meta[PATH_MAX + 48], record[PATH_MAX + 48];
	const Egret__V1__PackageInstall *pi;
	struct events evs;
	struct writer w = { .own_ns = true };

	snprintf(site, sizeof(site), "%s/nsA/site", T->tmpdir);
	snprintf(info, sizeof(info), "%s/nsdemo-1.0.dist-info", site);
	host_dist_info(info, "nsdemo", "6.6.6-host", "HOSTHASH");
	snprintf(meta, sizeof(meta), "%s/METADATA", info);
	snprintf(record, sizeof(record), "%s/RECORD", info);
	w.tmpfs[0] = site;
	w.args[0] = "file";
	w.args[1] = meta;
	w.args[2] = "Metadata-Version: 2.1\nName: nsdemo\nVersion: 1.0\n";
	w.args[3] = "file";
	w.args[4] = record;
	w.args[5] = "nsdemo-1.0.dist-info/METADATA,sha256=BOXHASH,44\n";
	w.args[6] = "sleep";
	w.args[7] = writer_hold();
	cr_assert_eq(in_sandbox(T, "pkgbox", write_as_container, &w), 0, "the writer failed");
	pi = wait_install_under(&evs, site)->package_install;
	cr_expect_str_eq(pi->name, "nsdemo");
	cr_expect_str_eq(pi->version, "1.0", "not the sandbox's version: %s", pi->version);
	cr_expect_str_eq(pi->hash, "sha256:BOXHASH");
	cr_expect_str_eq(pi->hash_source, "pip RECORD (METADATA)");
	cr_expect_str_eq(pi->path, info);
	cr_expect_eq(events_find(&evs, is_install, "nsdemo", NULL)->package_install, pi);
	events_free(&evs);
}

/* The control: the same writer in the host's mount namespace, read where egretd reads it. */
Test(packages, a_sandbox_in_the_hosts_mount_namespace_is_read_as_before)
{
	char site[PATH_MAX], meta[PATH_MAX + 48], record[PATH_MAX + 48];
	const Egret__V1__PackageInstall *pi;
	struct events evs;
	struct writer w = { .own_ns = false };

	snprintf(site, sizeof(site), "%s/nsB/site", T->tmpdir);
	snprintf(meta, sizeof(meta), "%s/nsctl-1.0.dist-info/METADATA", site);
	snprintf(record, sizeof(record), "%s/nsctl-1.0.dist-info/RECORD", site);
	w.args[0] = "file";
	w.args[1] = meta;
	w.args[2] = "Metadata-Version: 2.1\nName: nsctl\nVersion: 1.0\n";
	w.args[3] = "file";
	w.args[4] = record;
	w.args[5] = "nsctl-1.0.dist-info/METADATA,sha256=CTLHASH,44\n";
	w.args[6] = "sleep";
	w.args[7] = writer_hold();
	cr_assert_eq(in_sandbox(T, "pkgbox", write_as_container, &w), 0, "the writer failed");
	pi = wait_install_under(&evs, site)->package_install;
	cr_expect_str_eq(pi->name, "nsctl");
	cr_expect_str_eq(pi->version, "1.0");
	cr_expect_str_eq(pi->hash, "sha256:CTLHASH");
	cr_expect_str_eq(pi->hash_source, "pip RECORD (METADATA)");
	events_free(&evs);
}

/* The sandbox plants METADATA -> <host file> in a directory the host shares with it; in its own
 * mount namespace that path holds a file of its own. The symlink is resolved in the sandbox's
 * root: egretd reads the sandbox's file, never the host's (which would say "stolen 6.6.6").
 */
Test(packages, a_sandbox_symlink_resolves_in_its_root)
{
	char site[PATH_MAX], secret_dir[PATH_MAX], secret[PATH_MAX + 16], meta[PATH_MAX + 48],
		record[PATH_MAX + 48];
	const Egret__V1__Event *ev;
	const Egret__V1__PackageInstall *pi;
	struct events evs;
	struct writer w = { .own_ns = true };
	FILE *f;

	snprintf(secret_dir, sizeof(secret_dir), "%s/hostonly", T->tmpdir);
	snprintf(secret, sizeof(secret), "%s/shadow", secret_dir);
	cr_assert_eq(mkdir_p(secret_dir, 0700), 0);
	f = fopen(secret, "w");
	cr_assert(f);
	fputs("Metadata-Version: 2.1\nName: stolen\nVersion: 6.6.6-secret\n", f);
	fclose(f);
	snprintf(site, sizeof(site), "%s/nsC/site", T->tmpdir);
	cr_assert_eq(mkdir_p(site, 0755), 0);
	snprintf(meta, sizeof(meta), "%s/evil-1.0.dist-info/METADATA", site);
	snprintf(record, sizeof(record), "%s/evil-1.0.dist-info/RECORD", site);
	w.tmpfs[0] = secret_dir; /* the sandbox's own view of that directory */
	w.args[0] = "file";
	w.args[1] = secret;
	w.args[2] = "Metadata-Version: 2.1\nName: evil\nVersion: 1.0-sandbox\n";
	w.args[3] = "link";
	w.args[4] = meta;
	w.args[5] = secret;
	w.args[6] = "file";
	w.args[7] = record;
	w.args[8] = "evil-1.0.dist-info/METADATA,sha256=EVILHASH,44\n";
	w.args[9] = "sleep";
	w.args[10] = writer_hold();
	cr_assert_eq(in_sandbox(T, "pkgbox", write_as_container, &w), 0, "the writer failed");
	ev = wait_install_under(&evs, site);
	pi = ev->package_install;
	cr_expect_str_neq(pi->name, "stolen", "egretd read the host's file through the symlink");
	cr_expect(!strstr(pi->version, "secret"), "egretd read the host's file: %s", pi->version);
	cr_expect_str_eq(pi->name, "evil");
	cr_expect_str_eq(pi->version, "1.0-sandbox");
	cr_expect_null(events_find(&evs, is_install, "stolen", NULL));
	events_free(&evs);
}

/* A writer gone before egretd could open its root, in a sandbox that registered none: egretd
 * cannot tell which mount namespace it wrote in, so it reads nothing (not the host's nsgone
 * 6.6.6 at that path) and reports what the path says, saying why. egretd is stopped while the
 * sandbox writes and exits, so that it is gone for certain.
 */
Test(packages, a_writer_gone_unseen_is_reported_from_its_path)
{
	char site[PATH_MAX], info[PATH_MAX + 32], meta[PATH_MAX + 48];
	const Egret__V1__PackageInstall *pi;
	struct events evs;
	struct writer w = { .own_ns = true };
	pid_t egretd = T->egretd;
	int rc;

	snprintf(site, sizeof(site), "%s/nsD/site", T->tmpdir);
	snprintf(info, sizeof(info), "%s/nsgone-1.0.dist-info", site);
	host_dist_info(info, "nsgone", "6.6.6-host", "HOSTHASH");
	snprintf(meta, sizeof(meta), "%s/METADATA", info);
	w.tmpfs[0] = site;
	w.args[0] = "file";
	w.args[1] = meta;
	w.args[2] = "Metadata-Version: 2.1\nName: nsgone\nVersion: 1.0\n";
	cr_assert_eq(in_box("true", "true", NULL), 0); /* the sandbox prepared, while egretd runs */
	cr_assert_eq(kill(egretd, SIGSTOP), 0);
	T->egretd = 0; /* entering the sandbox would ask the stopped egretd to prepare it again */
	rc = in_sandbox(T, "pkgbox", write_as_container, &w);
	T->egretd = egretd;
	kill(egretd, SIGCONT);
	cr_assert_eq(rc, 0, "the writer failed");
	pi = wait_install_under(&evs, site)->package_install;
	cr_expect_str_eq(pi->name, "nsgone");
	cr_expect_str_eq(pi->version, "1.0", "the host's file was read: %s", pi->version);
	cr_expect_str_eq(pi->hash, "");
	cr_expect(str_starts_with(pi->hash_source, "unreadable: "), "%s", pi->hash_source);
	events_free(&evs);
}

/* The writer (a cp, an unzip) is gone before egretd looks, but another process of its sandbox
 * is still in its mount namespace: its file records name the namespace, and egretd reads them
 * through that process's root (the sandbox's tmpfs, not the host's file at the same path).
 */
struct ns_writer {
	pid_t holder;
	struct writer w;
};

static int write_in_holders_namespace(void *arg)
{
	struct ns_writer *nw = arg;
	char ns[64];
	int fd;

	snprintf(ns, sizeof(ns), "/proc/%d/ns/mnt", (int)nw->holder);
	fd = open(ns, O_RDONLY);
	if (fd < 0 || setns(fd, CLONE_NEWNS))
		return 92;
	close(fd);
	nw->w.own_ns = false; /* already in the holder's */
	return write_as_container(&nw->w);
}

static int hold_namespace(void *arg)
{
	struct writer *w = arg;
	int *ready = (int *)w->args[15];

	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
	    mkdir_p(w->tmpfs[0], 0755) || mount("tmpfs", w->tmpfs[0], "tmpfs", 0, "mode=0755"))
		return 91;
	if (write(ready[1], "x", 1) != 1)
		return 93;
	pause();
	return 0;
}

Test(packages, a_writer_gone_is_read_in_its_namespace_through_another_process)
{
	char site[PATH_MAX], info[PATH_MAX + 32], meta[PATH_MAX + 48], record[PATH_MAX + 48];
	const Egret__V1__PackageInstall *pi;
	struct ns_writer nw = { 0 };
	struct writer hold = { .own_ns = true };
	pid_t egretd = T->egretd;
	static pid_t holder; /* read at teardown */
	struct events evs;
	int ready[2], rc;

	snprintf(site, sizeof(site), "%s/nsE/site", T->tmpdir);
	snprintf(info, sizeof(info), "%s/nsheld-1.0.dist-info", site);
	host_dist_info(info, "nsheld", "6.6.6-host", "HOSTHASH");
	snprintf(meta, sizeof(meta), "%s/METADATA", info);
	snprintf(record, sizeof(record), "%s/RECORD", info);
	cr_assert_eq(pipe(ready), 0);
	hold.tmpfs[0] = site;
	hold.args[15] = (char *)ready;
	cr_assert_eq(in_box("true", "true", NULL), 0); /* the sandbox prepared, while egretd runs */
	holder = fork();
	if (holder == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(in_sandbox(T, "pkgbox", hold_namespace, &hold));
	}
	harness_kill_at_teardown(&holder);
	cr_assert_eq(read(ready[0], &rc, 1), 1);
	{
		char cmd[64], out[64];
		char *sh[] = { "sh", "-c", cmd, NULL };

		/* the in_sandbox child of holder is the one in the namespace */
		snprintf(cmd, sizeof(cmd), "pgrep -P %d | head -1", (int)holder);
		cr_assert_eq(run_cmd(sh, out, sizeof(out)), 0);
		nw.holder = atoi(out);
	}
	nw.w.args[0] = "file";
	nw.w.args[1] = meta;
	nw.w.args[2] = "Metadata-Version: 2.1\nName: nsheld\nVersion: 1.0\n";
	nw.w.args[3] = "file";
	nw.w.args[4] = record;
	nw.w.args[5] = "nsheld-1.0.dist-info/METADATA,sha256=HELDHASH,44\n";
	/* the writer comes and goes while egretd is stopped: it never sees it alive */
	cr_assert_eq(kill(egretd, SIGSTOP), 0);
	T->egretd = 0;
	rc = in_sandbox(T, "pkgbox", write_in_holders_namespace, &nw);
	T->egretd = egretd;
	kill(egretd, SIGCONT);
	cr_assert_eq(rc, 0, "the writer failed");
	pi = wait_install_under(&evs, site)->package_install;
	cr_expect_str_eq(pi->version, "1.0", "not the sandbox's file: %s", pi->version);
	cr_expect_str_eq(pi->hash, "sha256:HELDHASH");
	events_free(&evs);
}
