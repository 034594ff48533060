/* Integration test harness: private egret instances, sandboxed children, network namespaces,
 * sockets with timeouts, event stream reading. See harness.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <glob.h>
#include <sys/utsname.h>

#include "cgroup.h"
#include "control.h"
#include "harness.h"
#include "keeper.h"
#include "loader.h"
#include "paths.h"
#include "util.h"
#include "wire.h"

struct egret_instance *T;
static unsigned int instance_seq;

void harness_require_root(void)
{
	if (geteuid() != 0)
		cr_assert_fail(
			"integration tests need root (they load BPF programs and create cgroups "
			"and network namespaces); run them with sudo, as CI does");
}

void harness_setup(bool netns)
{
	static struct egret_instance inst;

	harness_require_root();
	T = &inst;
	cr_assert_eq(harness_init(T), 0, "cannot set up the test's egret instance");
	if (netns)
		cr_assert_eq(netns_new(), 0, "cannot create a network namespace");
}

/* The running kernel's major and minor version, from uname. */
int harness_kernel_version(int *major, int *minor)
{
	struct utsname u;

	if (uname(&u) || sscanf(u.release, "%d.%d", major, minor) != 2)
		return -EINVAL;
	return 0;
}

void harness_require_kernel(int major, int minor, const char *why)
{
	struct utsname u;
	int have_major, have_minor;

	if (harness_kernel_version(&have_major, &have_minor))
		cr_assert_fail("cannot read the kernel version from uname");
	if (have_major > major || (have_major == major && have_minor >= minor))
		return;
	uname(&u);
	/* Criterion skips by exiting the test process: the instance goes first (see atexit) */
	cr_skip_test("needs Linux %d.%d, this is %s: %s", major, minor, u.release, why);
}

/* The test process's instances are removed when it exits without its .fini (cr_skip_test
 * exits at once); never from a child that calls exit().
 */
static pid_t cleanup_owner;
static struct egret_instance *live[16];

static void cleanup_at_exit(void)
{
	if (getpid() != cleanup_owner)
		return;
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++) {
		if (live[i])
			harness_cleanup(live[i]);
	}
}

static void remember_instance(struct egret_instance *e)
{
	if (cleanup_owner != getpid()) {
		cleanup_owner = getpid();
		memset(live, 0, sizeof(live));
		atexit(cleanup_at_exit);
	}
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++) {
		if (!live[i] || live[i] == e) {
			live[i] = e;
			return;
		}
	}
}

static void forget_instance(struct egret_instance *e)
{
	for (size_t i = 0; i < sizeof(live) / sizeof(live[0]); i++) {
		if (live[i] == e)
			live[i] = NULL;
	}
}

/* EGRET_TEST_KEEP_LOGS=DIR: egretd's log of each test goes to DIR/<suite>.<test>.log (a second
 * instance of the same test: <suite>.<test>.<n>.log), and the runner deletes the logs of tests
 * that did not fail, so DIR holds the logs of failed tests only (also of those that crashed or
 * timed out before their .fini).
 */
static const char *keep_logs_dir(void)
{
	const char *dir = getenv("EGRET_TEST_KEEP_LOGS");

	return dir && dir[0] ? dir : NULL;
}

static void keep_log_path(struct egret_instance *e, unsigned int seq)
{
	const char *dir = keep_logs_dir();
	char cmd[PATH_MAX + 32];
	int fd;

	if (!dir || !criterion_current_test || !criterion_current_suite)
		return;
	if (access(dir, W_OK)) {
		snprintf(cmd, sizeof(cmd), "mkdir -p '%s'", dir);
		if (system(cmd))
			return;
	}
	if (seq == 0)
		snprintf(e->log_path, sizeof(e->log_path), "%s/%s.%s.log", dir,
			 criterion_current_suite->name, criterion_current_test->name);
	else
		snprintf(e->log_path, sizeof(e->log_path), "%s/%s.%s.%u.log", dir,
			 criterion_current_suite->name, criterion_current_test->name, seq);
	fd = open(e->log_path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd >= 0) {
		dprintf(fd, "--- egretd log of %s (%s::%s) ---\n", e->name,
			criterion_current_suite->name, criterion_current_test->name);
		close(fd);
	}
}

/* In the runner, after each test's .fini: keep the logs of failed tests only. */
ReportHook(POST_FINI)(struct criterion_test_stats *stats)
{
	const char *dir = keep_logs_dir();
	char pattern[PATH_MAX];
	glob_t g;

	if (!dir || stats->test_status == CR_STATUS_FAILED)
		return;
	snprintf(pattern, sizeof(pattern), "%s/%s.%s.log", dir, stats->test->category,
		 stats->test->name);
	unlink(pattern);
	snprintf(pattern, sizeof(pattern), "%s/%s.%s.*.log", dir, stats->test->category,
		 stats->test->name);
	if (glob(pattern, 0, NULL, &g) == 0) {
		for (size_t i = 0; i < g.gl_pathc; i++)
			unlink(g.gl_pathv[i]);
		globfree(&g);
	}
}

int harness_init(struct egret_instance *e)
{
	int err;

	unsigned int seq = instance_seq++;

	memset(e, 0, sizeof(*e));
	err = cgroup__find_v2_mount(e->cgroup_mount, sizeof(e->cgroup_mount));
	if (err)
		return err;
	remember_instance(e);
	snprintf(e->name, sizeof(e->name), HARNESS_PREFIX "%d-%u", (int)getpid(), seq);
	snprintf(e->cgroup_root, sizeof(e->cgroup_root), "%s/%s", e->cgroup_mount, e->name);
	snprintf(e->state_dir, sizeof(e->state_dir), "%s/%s", EGRET_BPFFS, e->name);
	snprintf(e->tmpdir, sizeof(e->tmpdir), HARNESS_DIR "/%s", e->name);
	snprintf(e->control, sizeof(e->control), "%s/control.sock", e->tmpdir);
	snprintf(e->sink_path, sizeof(e->sink_path), "%s/events.pb", e->tmpdir);
	snprintf(e->log_path, sizeof(e->log_path), "%s/egretd.log", e->tmpdir);
	snprintf(e->policy_path, sizeof(e->policy_path), "%s/egret.policy", e->tmpdir);
	snprintf(e->live_path, sizeof(e->live_path), "%s/live.rules", e->tmpdir);
	snprintf(e->spool_dir, sizeof(e->spool_dir), "%s/spool", e->tmpdir);
	err = harness_base_dir();
	if (err)
		return err;
	if (mkdir(e->tmpdir, 0700) && errno != EEXIST)
		return -errno;
	keep_log_path(e, seq);
	return harness_policy(e, "mode enforce\n");
}

/* HARNESS_DIR: root's, mode 0755 (tests that run a command as nobody open their instance
 * directory up to it), whatever the umask.
 */
int harness_base_dir(void)
{
	struct stat st;

	if (mkdir(HARNESS_DIR, 0755) && errno != EEXIST)
		return -errno;
	if (lstat(HARNESS_DIR, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != 0)
		return -EPERM;
	return chmod(HARNESS_DIR, 0755) ? -errno : 0;
}

/* Write the instance's policy file (egretd reads it at start and on reload), mode 0644 whatever
 * the umask: egretd refuses a policy that group or others could write.
 */
int harness_policy(struct egret_instance *e, const char *text)
{
	FILE *f = fopen(e->policy_path, "w");

	if (!f)
		return -errno;
	fputs(text, f);
	if (fchmod(fileno(f), 0644)) {
		fclose(f);
		return -errno;
	}
	return fclose(f) ? -errno : 0;
}

static int notify_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	unlink(path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return -errno;
	return fd;
}

/* Start egretd on the instance and wait for READY=1 on a private NOTIFY_SOCKET. Returns 0 when
 * ready, else egretd's exit status (it exited) or -errno.
 */
int harness_start(struct egret_instance *e, const char *const extra[])
{
	int nfd = harness_spawn(e, extra, -1);

	return nfd < 0 ? nfd : harness_wait_ready(e, nfd, 30000);
}

/* Fork and exec egretd on the instance without waiting: the notify socket to hand to
 * harness_wait_ready, or -errno. With gate >= 0 the child first reads one byte from it, so a
 * test can release several egretds at the same moment by writing one byte per child.
 */
int harness_spawn(struct egret_instance *e, const char *const extra[], int gate)
{
	char notify[PATH_MAX], sink[PATH_MAX + 8];
	const char *argv[64];
	int n = 0, nfd;

	snprintf(notify, sizeof(notify), "%s/notify.sock", e->tmpdir);
	snprintf(sink, sizeof(sink), "file:%s", e->sink_path);
	nfd = notify_socket(notify);
	if (nfd < 0)
		return nfd;
	argv[n++] = EGRETD_BIN;
	argv[n++] = "--cgroup";
	argv[n++] = e->cgroup_root;
	argv[n++] = "--state-dir";
	argv[n++] = e->state_dir;
	argv[n++] = "--control";
	argv[n++] = e->control;
	argv[n++] = "--sink";
	argv[n++] = sink;
	argv[n++] = "--policy";
	argv[n++] = e->policy_path;
	argv[n++] = "--live-rules";
	argv[n++] = e->live_path;
	argv[n++] = "--spool";
	argv[n++] = e->spool_dir;
	/* tests that resolve start their own upstream and pass --upstream-dns after these */
	argv[n++] = "--upstream-dns";
	argv[n++] = "192.0.2.53";
	for (int i = 0; extra && extra[i] && n < 62; i++)
		argv[n++] = extra[i];
	argv[n] = NULL;
	e->egretd = fork();
	if (e->egretd < 0) {
		int err = -errno;

		e->egretd = 0;
		close(nfd);
		return err;
	}
	if (e->egretd == 0) {
		int log = open(e->log_path, O_WRONLY | O_CREAT | O_APPEND, 0600);
		char go;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(log, 2);
		dup2(log, 1);
		setenv("NOTIFY_SOCKET", notify, 1);
		if (gate >= 0 && read(gate, &go, 1) != 1)
			_exit(126);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return nfd;
}

/* Wait for READY=1 from the egretd harness_spawn started; closes nfd. 0 when ready, else
 * egretd's exit status (it exited) or -errno.
 */
int harness_wait_ready(struct egret_instance *e, int nfd, int timeout_ms)
{
	char buf[512];
	int status;

	for (int waited = 0; waited < timeout_ms; waited += 50) {
		struct pollfd p = { .fd = nfd, .events = POLLIN };

		if (poll(&p, 1, 50) == 1) {
			ssize_t len = recv(nfd, buf, sizeof(buf) - 1, 0);

			buf[len > 0 ? len : 0] = '\0';
			if (strstr(buf, "READY=1")) {
				close(nfd);
				return 0;
			}
		}
		if (waitpid(e->egretd, &status, WNOHANG) == e->egretd) {
			e->egretd = 0;
			close(nfd);
			return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
		}
	}
	close(nfd);
	return -ETIMEDOUT;
}

/* Signal egretd and reap it: its exit status, or 128 + the signal that killed it. */
int harness_stop(struct egret_instance *e, int sig)
{
	int status;

	if (!e->egretd)
		return -ESRCH;
	kill(e->egretd, sig);
	if (waitpid(e->egretd, &status, 0) < 0)
		return -errno;
	e->egretd = 0;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

const char *harness_log(struct egret_instance *e)
{
	static char buf[16384];

	if (read_file(e->log_path, buf, sizeof(buf)) < 0)
		buf[0] = '\0';
	return buf;
}

/* Kill everything in a cgroup subtree and remove it, deepest first. */
static void remove_cgroup_tree(const char *path)
{
	char sub[PATH_MAX * 2];
	struct dirent *de;
	DIR *d;

	snprintf(sub, sizeof(sub), "%s/cgroup.kill", path);
	write_file(sub, "1");
	d = opendir(path);
	if (d) {
		while ((de = readdir(d))) {
			if (de->d_type != DT_DIR || de->d_name[0] == '.')
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
			remove_cgroup_tree(sub);
		}
		closedir(d);
	}
	for (int i = 0; i < 100 && rmdir(path) && errno == EBUSY; i++)
		usleep(10000);
}

static void remove_tree(const char *path)
{
	char cmd[PATH_MAX + 16];

	/* only an instance directory (or one an older harness left under /tmp) */
	if (!str_starts_with(path, HARNESS_DIR "/" HARNESS_PREFIX) &&
	    !str_starts_with(path, "/tmp/" HARNESS_PREFIX))
		return;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
	if (system(cmd))
		fprintf(stderr, "harness: could not remove %s\n", path);
}

static void remove_v1_limits(const char *name);

/* Whether pid's command line has the word word (a keeper is a fork of egretd: it keeps
 * egretd's --state-dir DIR).
 */
static bool cmdline_has(const char *pid, const char *word)
{
	char path[64], buf[8192];
	int n;

	snprintf(path, sizeof(path), "/proc/%s/cmdline", pid);
	n = read_file(path, buf, sizeof(buf) - 1);
	for (int i = 0; i < n; i += (int)strlen(buf + i) + 1) {
		if (!strcmp(buf + i, word))
			return true;
	}
	return false;
}

/* Every keeper of the instance's state dir (the one its pin names, and any other whose egretd
 * was started on it), killed and gone before the pins are removed: no keeper outlives a test.
 */
static void kill_keepers(const char *state_dir)
{
	char path[64], comm[32];
	struct dirent *de;
	DIR *d;
	pid_t pid = keeper__find(state_dir);

	if (pid)
		keeper__kill(pid, 3000);
	d = opendir("/proc");
	while (d && (de = readdir(d))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/comm", de->d_name);
		if (read_file(path, comm, sizeof(comm)) <= 0 ||
		    strncmp(comm, KEEPER_COMM, strlen(KEEPER_COMM)) ||
		    !cmdline_has(de->d_name, state_dir))
			continue;
		keeper__kill(atoi(de->d_name), 3000);
	}
	if (d)
		closedir(d);
}

static void cleanup_named(const char *mount, const char *name)
{
	struct egret_paths p;
	char path[PATH_MAX * 2];

	memset(&p, 0, sizeof(p));
	snprintf(p.cgroup_mount, sizeof(p.cgroup_mount), "%s", mount);
	snprintf(p.cgroup_root, sizeof(p.cgroup_root), "%s/%s", mount, name);
	snprintf(p.state_dir, sizeof(p.state_dir), "%s/%s", EGRET_BPFFS, name);
	kill_keepers(p.state_dir);
	loader__uninstall(&p);
	remove_cgroup_tree(p.cgroup_root);
	snprintf(path, sizeof(path), HARNESS_DIR "/%s", name);
	remove_tree(path);
	snprintf(path, sizeof(path), "/tmp/%s", name);
	remove_tree(path);
	remove_v1_limits(name);
}

/* The mount point of a v1 controller's hierarchy ("memory", "pids"), from mountinfo: a cgroup
 * (v1) mount whose super options name the controller.
 */
static int v1_mount(const char *controller, char *out, size_t size)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int err = -ENOENT;

	while (f && err && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - cgroup "), *tok, *save = NULL, *opts;
		int field = 0;

		if (!sep)
			continue;
		/* " - cgroup SOURCE OPTIONS": the options are the third word after the dash */
		opts = strchr(sep + 10, ' ');
		if (!opts)
			continue;
		opts++;
		opts[strcspn(opts, "\n")] = '\0';
		for (tok = strtok_r(opts, ",", &save); tok && strcmp(tok, controller);
		     tok = strtok_r(NULL, ",", &save))
			;
		if (!tok)
			continue;
		save = NULL;
		for (tok = strtok_r(line, " ", &save); tok && ++field < 5;
		     tok = strtok_r(NULL, " ", &save))
			;
		if (tok) {
			snprintf(out, size, "%s", tok);
			err = 0;
		}
	}
	if (f)
		fclose(f);
	return err;
}

/* The v1 name of a cgroup v2 limit file, or NULL when v1 has none. */
static const char *v1_file(const char *file)
{
	if (!strcmp(file, "memory.max"))
		return "memory.limit_in_bytes";
	if (!strcmp(file, "pids.max"))
		return "pids.max";
	return NULL;
}

/* Enable a controller from the v2 mount down to egret's root, so its sandboxes have it. */
static int v2_enable(struct egret_instance *e, const char *controller)
{
	char path[PATH_MAX * 2], ctl[64];
	int err;

	snprintf(ctl, sizeof(ctl), "+%s", controller);
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", e->cgroup_mount);
	write_file(path, ctl); /* systemd has usually done it */
	if (mkdir(e->cgroup_root, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", e->cgroup_root);
	err = write_file(path, ctl);
	if (err)
		fprintf(stderr, "harness: cannot enable the %s controller in %s: %s\n", controller,
			path, strerror(-err));
	return err;
}

static int v1_limit(struct egret_instance *e, const char *mnt, const char *sandbox,
		    const char *file, const char *value, char *out, size_t size)
{
	char path[PATH_MAX * 2];
	int slot = -1;

	for (int i = 0; i < 4 && slot < 0; i++)
		slot = e->limit_dirs[i][0] ? -1 : i;
	if (slot < 0)
		return -E2BIG;
	snprintf(path, sizeof(path), "%s/%s", mnt, e->name);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	snprintf(out, size, "%s/%s/%s", mnt, e->name, sandbox);
	if (mkdir(out, 0755) && errno != EEXIST)
		return -errno;
	snprintf(e->limit_dirs[slot], sizeof(e->limit_dirs[slot]), "%s", out);
	snprintf(e->limit_sandbox[slot], sizeof(e->limit_sandbox[slot]), "%s", sandbox);
	snprintf(path, sizeof(path), "%s/%s", out, file);
	return write_file(path, value);
}

int harness_sandbox_limit(struct egret_instance *e, const char *sandbox, const char *file,
			  const char *value, char *out, size_t size)
{
	char controller[32], mnt[PATH_MAX], path[PATH_MAX * 2];
	const char *old = v1_file(file);
	int err;

	snprintf(controller, sizeof(controller), "%.*s", (int)strcspn(file, "."), file);
	if (old && v1_mount(controller, mnt, sizeof(mnt)) == 0)
		return v1_limit(e, mnt, sandbox, old, value, out, size);
	/* pure v2 (or a hybrid host with the controller on v2): the sandbox cgroup itself */
	err = v2_enable(e, controller);
	if (err)
		return err;
	if (sandbox_path(e, sandbox, out, size) || (mkdir(out, 0755) && errno != EEXIST))
		return -errno ? -errno : -ENAMETOOLONG;
	snprintf(path, sizeof(path), "%s/%s", out, file);
	return write_file(path, value);
}

/* A process entering a sandbox joins the v1 limit cgroups made for it. */
static int join_limits(struct egret_instance *e, const char *sandbox)
{
	for (int i = 0; i < 4; i++) {
		if (e->limit_dirs[i][0] && !strcmp(e->limit_sandbox[i], sandbox) &&
		    cgroup__join(e->limit_dirs[i], getpid()))
			return -1;
	}
	return 0;
}

/* The v1 cgroups of an instance: <controller mount>/<name> and what is under it. */
static void remove_v1_limits(const char *name)
{
	static const char *const controllers[] = { "memory", "pids" };
	char mnt[PATH_MAX], path[PATH_MAX * 2];

	for (size_t i = 0; i < sizeof(controllers) / sizeof(controllers[0]); i++) {
		if (v1_mount(controllers[i], mnt, sizeof(mnt)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", mnt, name);
		if (access(path, F_OK) == 0)
			remove_cgroup_tree(path);
	}
}

void harness_cleanup(struct egret_instance *e)
{
	if (!e || !e->name[0])
		return;
	if (e->egretd)
		harness_stop(e, SIGKILL);
	if (getenv("EGRET_TEST_VERBOSE"))
		fprintf(stderr, "--- egretd log of %s ---\n%s\n", e->name, harness_log(e));
	/* the v2 tree first: its cgroup.kill ends the processes the v1 cgroups hold too */
	cleanup_named(e->cgroup_mount, e->name);
	forget_instance(e);
	e->name[0] = '\0';
}

static bool owner_alive(const char *name)
{
	int pid = atoi(name + strlen(HARNESS_PREFIX));

	return pid > 0 && kill(pid, 0) == 0;
}

static void sweep_dir(const char *dir, const char *mount)
{
	struct dirent *de;
	DIR *d = opendir(dir);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (str_starts_with(de->d_name, HARNESS_PREFIX) && !owner_alive(de->d_name)) {
			fprintf(stderr, "harness: removing leftovers of %s\n", de->d_name);
			cleanup_named(mount, de->d_name);
		}
	}
	closedir(d);
}

/* Remove what tests of earlier runs left when they crashed: their owner process is gone. */
void harness_sweep_stale(void)
{
	char mount[PATH_MAX];

	if (geteuid() != 0 || cgroup__find_v2_mount(mount, sizeof(mount)))
		return;
	sweep_dir(mount, mount);
	sweep_dir(EGRET_BPFFS, mount);
	sweep_dir(HARNESS_DIR, mount);
	sweep_dir("/tmp", mount);
	for (int i = 0; i < 2; i++) {
		char v1[PATH_MAX];

		if (v1_mount(i ? "pids" : "memory", v1, sizeof(v1)) == 0)
			sweep_dir(v1, mount);
	}
}

/* Run argv with stdout and stderr captured into out; returns the exit status, or 128 + signal. */
int run_cmd(char *const argv[], char *out, size_t outsz)
{
	size_t used = 0;
	int pfd[2], status;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid == 0) {
		dup2(pfd[1], 1);
		dup2(pfd[1], 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	for (;;) {
		char tmp[4096];
		ssize_t n = read(pfd[0], tmp, sizeof(tmp));

		if (n <= 0)
			break;
		if (out && used + 1 < outsz) {
			size_t take = (size_t)n < outsz - 1 - used ? (size_t)n : outsz - 1 - used;

			memcpy(out + used, tmp, take);
			used += take;
		}
	}
	if (out && outsz)
		out[used] = '\0';
	close(pfd[0]);
	if (waitpid(pid, &status, 0) < 0)
		return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* egretctl with the instance's --cgroup/--state-dir/--control, then the NULL-terminated args. */
int egretctl(struct egret_instance *e, char *out, size_t outsz, ...)
{
	char *argv[64];
	va_list ap;
	int n = 0;

	argv[n++] = EGRETCTL_BIN;
	argv[n++] = "--cgroup";
	argv[n++] = e->cgroup_root;
	argv[n++] = "--state-dir";
	argv[n++] = e->state_dir;
	argv[n++] = "--control";
	argv[n++] = e->control;
	va_start(ap, outsz);
	while (n < 63 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return run_cmd(argv, out, outsz);
}

/* <tmpdir>/shared, which root of an `egretctl run` sandbox (an unprivileged host uid) may write:
 * the tmpdir becomes traversable (0711), shared itself 0777 (sticky).
 */
int harness_shared_dir(struct egret_instance *e, char *out, size_t size)
{
	snprintf(out, size, "%s/shared", e->tmpdir);
	if (chmod(e->tmpdir, 0711) || (mkdir(out, 01777) && errno != EEXIST) || chmod(out, 01777))
		return -errno;
	return 0;
}

int sandbox_path(struct egret_instance *e, const char *sandbox, char *out, size_t size)
{
	return join_path(out, size, e->cgroup_root, sandbox);
}

/* Join the sandbox as egretctl run does: create it, have egretd install its rules (when egretd
 * runs), move in.
 */
static int enter(struct egret_instance *e, const char *sandbox)
{
	char *req[] = { "prepare", (char *)sandbox }, dir[PATH_MAX];
	FILE *null = fopen("/dev/null", "w");

	if (sandbox_path(e, sandbox, dir, sizeof(dir)) || (mkdir(dir, 0755) && errno != EEXIST))
		return -1;
	if (e->egretd && null)
		control__call(e->control, 2, req, null, null, 10);
	if (null)
		fclose(null);
	if (cgroup__join(dir, getpid()))
		return -1;
	return join_limits(e, sandbox);
}

/* fn in a child in the sandbox; the child's raw wait status, or -1. */
int in_sandbox_status(struct egret_instance *e, const char *sandbox, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (sandbox && enter(e, sandbox))
			_exit(255);
		_exit(fn(arg) & 0xff);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return status;
}

int in_sandbox(struct egret_instance *e, const char *sandbox, int (*fn)(void *), void *arg)
{
	int status = in_sandbox_status(e, sandbox, fn, arg);

	return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct cmd_arg {
	char **argv;
	char *out;
	size_t outsz;
};

static int exec_captured(void *arg)
{
	struct cmd_arg *c = arg;

	return run_cmd(c->argv, c->out, c->outsz);
}

/* A command (NULL-terminated args) in a sandbox (NULL: outside), output captured; its exit
 * status. The child writes the output into a shared mapping.
 */
int sandbox_cmd(struct egret_instance *e, const char *sandbox, char *out, size_t outsz, ...)
{
	char *argv[64];
	va_list ap;
	int n = 0;

	va_start(ap, outsz);
	while (n < 63 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return sandbox_cmdv(e, sandbox, out, outsz, argv);
}

int sandbox_cmdv(struct egret_instance *e, const char *sandbox, char *out, size_t outsz,
		 char *const argv[])
{
	char *shared;
	struct cmd_arg c;
	int rc;

	shared = mmap(NULL, outsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return -1;
	shared[0] = '\0';
	c = (struct cmd_arg){ .argv = (char **)argv, .out = shared, .outsz = outsz };
	rc = in_sandbox(e, sandbox, exec_captured, &c);
	snprintf(out, outsz, "%s", shared);
	munmap(shared, outsz);
	return rc;
}

int netns_run(const char *cmdline)
{
	char *argv[] = { "/bin/sh", "-c", (char *)cmdline, NULL };
	char out[2048];
	int rc = run_cmd(argv, out, sizeof(out));

	if (rc)
		fprintf(stderr, "harness: '%s' failed (%d): %s\n", cmdline, rc, out);
	return rc;
}

/* Move the calling test process into a new network namespace with lo up. */
int netns_new(void)
{
	if (unshare(CLONE_NEWNET))
		return -errno;
	return netns_run("ip link set lo up") ? -EIO : 0;
}

int netns_addr(const char *dev, const char *cidr)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "ip addr add %s dev %s%s", cidr, dev,
		 strchr(cidr, ':') ? " nodad" : "");
	return netns_run(cmd) ? -EIO : 0;
}

static int resolve(const char *addr, uint16_t port, int family, struct sockaddr_storage *ss,
		   socklen_t *len)
{
	struct addrinfo hints = { .ai_family = family,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *res;
	char service[8];

	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(addr, service, &hints, &res))
		return EINVAL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static int bound_socket(const char *addr, uint16_t port, int type)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	if (resolve(addr, port, AF_UNSPEC, &ss, &len))
		return -EINVAL;
	fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) || (type == SOCK_STREAM && listen(fd, 128))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* A listener on addr:port (IPv6 sockets v6-only); the fd, or -errno. */
int tcp_listen(const char *addr, uint16_t port)
{
	return bound_socket(addr, port, SOCK_STREAM);
}

int udp_bind(const char *addr, uint16_t port)
{
	return bound_socket(addr, port, SOCK_DGRAM);
}

/* TCP connect with a timeout: 0, or the errno (ETIMEDOUT when nothing answered). */
int tcp_connect(const char *addr, uint16_t port, int family, int timeout_ms)
{
	struct sockaddr_storage ss;
	struct pollfd p;
	socklen_t len, elen = sizeof(int);
	int fd, err = 0;

	if (resolve(addr, port, family, &ss, &len))
		return EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&ss, len) == 0)
		goto out;
	if (errno != EINPROGRESS) {
		err = errno;
		goto out;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&p, 1, timeout_ms) != 1)
		err = ETIMEDOUT;
	else
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
out:
	close(fd);
	return err;
}

/* One datagram, by sendto or by connect + send: 0 or the errno. */
static int udp_send(const char *addr, uint16_t port, int family, bool connected)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, err = 0;

	if (resolve(addr, port, family, &ss, &len))
		return EINVAL;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connected ? connect(fd, (struct sockaddr *)&ss, len) || send(fd, "x", 1, 0) < 0
		      : sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, len) < 0)
		err = errno;
	close(fd);
	return err;
}

int udp_sendto(const char *addr, uint16_t port, int family)
{
	return udp_send(addr, port, family, false);
}

int udp_connect_send(const char *addr, uint16_t port, int family)
{
	return udp_send(addr, port, family, true);
}

/* TCP Fast Open: the data rides on the SYN, sent by sendto(MSG_FASTOPEN) without connect(). */
int tcp_fastopen(const char *addr, uint16_t port, int family)
{
	struct timeval tv = { .tv_sec = 2 };
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, err = 0;

	if (resolve(addr, port, family, &ss, &len))
		return EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (sendto(fd, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&ss, len) < 0)
		err = errno;
	close(fd);
	return err;
}

/* One ICMP echo through a ping socket: 0 when the reply came, ETIMEDOUT when none did, or the
 * errno of the send.
 */
int ping_echo(const char *addr, int timeout_ms)
{
	struct icmp_echo {
		uint8_t type, code;
		uint16_t csum, id, seq;
	} req = { .type = 8, .seq = htons(1) };
	struct sockaddr_storage ss;
	struct pollfd p;
	socklen_t len;
	char buf[256];
	int fd, err = 0;

	if (resolve(addr, 0, AF_INET, &ss, &len))
		return EINVAL;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (fd < 0)
		return errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&ss, len) < 0) {
		err = errno;
		goto out;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&p, 1, timeout_ms) != 1 || recv(fd, buf, sizeof(buf), 0) <= 0)
		err = ETIMEDOUT;
out:
	close(fd);
	return err;
}

int events_read(const char *path, struct events *out)
{
	struct wire_reader r;
	const uint8_t *msg;
	size_t len, cap = 0;
	FILE *f = fopen(path, "re");
	int n;

	out->ev = NULL;
	out->n = 0;
	if (!f)
		return -errno;
	wire_reader__init(&r, f);
	while ((n = wire_reader__next(&r, &msg, &len)) == 1) {
		Egret__V1__Event *ev = egret__v1__event__unpack(NULL, len, msg);

		if (!ev) {
			n = -EBADMSG;
			break;
		}
		if (out->n == cap) {
			cap = cap ? cap * 2 : 64;
			out->ev = realloc(out->ev, cap * sizeof(*out->ev));
		}
		out->ev[out->n++] = ev;
	}
	wire_reader__free(&r);
	fclose(f);
	/* a record still being written is not an error for a reader racing the writer */
	return n == -EPIPE ? 0 : n;
}

void events_free(struct events *ev)
{
	for (size_t i = 0; i < ev->n; i++)
		egret__v1__event__free_unpacked(ev->ev[i], NULL);
	free(ev->ev);
	ev->ev = NULL;
	ev->n = 0;
}

const Egret__V1__Event *events_find(const struct events *ev,
				    bool (*match)(const Egret__V1__Event *, const void *),
				    const void *arg, size_t *count)
{
	const Egret__V1__Event *first = NULL;
	size_t n = 0;

	for (size_t i = 0; i < ev->n; i++) {
		if (!match(ev->ev[i], arg))
			continue;
		if (!first)
			first = ev->ev[i];
		n++;
	}
	if (count)
		*count = n;
	return first;
}

/* Poll the event file until count events match; 0 with every event read so far in out. */
int events_wait_count(const char *path, bool (*match)(const Egret__V1__Event *, const void *),
		      const void *arg, size_t count, int timeout_ms, struct events *out)
{
	for (int waited = 0;; waited += 50) {
		int err = events_read(path, out);
		size_t n = 0;

		if (!err)
			events_find(out, match, arg, &n);
		if (!err && n >= count)
			return 0;
		if (waited >= timeout_ms)
			return err ? err : -ETIMEDOUT;
		events_free(out);
		usleep(50000);
	}
}

/* Poll the event file until an event matches; 0 with every event read so far in out. */
int events_wait(const char *path, bool (*match)(const Egret__V1__Event *, const void *),
		const void *arg, int timeout_ms, struct events *out)
{
	for (int waited = 0;; waited += 50) {
		int err = events_read(path, out);

		if (!err && events_find(out, match, arg, NULL))
			return 0;
		if (waited >= timeout_ms)
			return err ? err : -ETIMEDOUT;
		events_free(out);
		usleep(50000);
	}
}
