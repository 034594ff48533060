/* Private egret instances for integration tests: each test's egretd with its own cgroup root,
 * bpffs state dir, control socket, sink, spool and instance directory (never egret's defaults);
 * starting, stopping and removing it, with its keepers, even when the test fails or skips;
 * sweeping what crashed tests left; egretctl and other commands with their output captured.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

#include "cgroup.h"
#include "harness_cgroup.h"
#include "harness_instance.h"
#include "keeper.h"
#include "loader.h"
#include "paths.h"
#include "util.h"

struct egret_instance *T;
static unsigned int instance_seq;

/* The test process's instances are removed when it exits without its .fini (cr_skip_test
 * exits at once); never from a child that calls exit().
 */
static pid_t cleanup_owner;
static struct egret_instance *live[16];

void harness_cleanup_all(void)
{
	if (getpid() != cleanup_owner)
		return;
	for (size_t i = sizeof(live) / sizeof(live[0]); i-- > 0;) {
		if (live[i])
			harness_cleanup(live[i]);
	}
}

static void cleanup_at_exit(void)
{
	harness_cleanup_all();
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
	strcpy(e->attach, "=");
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
 * ready, else egretd's exit status (it exited) or -errno. The wait is long: under qemu's
 * emulation (EGRET_TEST_TIMEOUT_SCALE 4) an egretd verifying its programs while another test
 * starts several at once took over the 120 s this gave before; one that exits is seen at once.
 */
int harness_start(struct egret_instance *e, const char *const extra[])
{
	int nfd = harness_spawn(e, extra, -1);

	return nfd < 0 ? nfd : harness_wait_ready(e, nfd, 60000);
}

/* In the child, before exec: e's listen_fds at 3, 4... and the variables systemd sets. */
static int pass_listen_fds(const struct egret_instance *e)
{
	int high[256];
	char text[16];

	if (e->nlisten > 256)
		return -1;
	/* out of the way first: a listen fd may sit where another is to go */
	for (unsigned int i = 0; i < e->nlisten; i++) {
		high[i] = fcntl(e->listen_fds[i], F_DUPFD, 3 + (int)e->nlisten);
		if (high[i] < 0)
			return -1;
	}
	for (unsigned int i = 0; i < e->nlisten; i++) {
		if (dup2(high[i], 3 + (int)i) < 0)
			return -1;
		close(high[i]);
	}
	snprintf(text, sizeof(text), "%u", e->nlisten);
	setenv("LISTEN_FDS", text, 1);
	snprintf(text, sizeof(text), "%d", (int)getpid());
	setenv("LISTEN_PID", text, 1);
	setenv("LISTEN_FDNAMES", e->listen_names ? e->listen_names : "", 1);
	return 0;
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
	if (e->attach[0]) {
		argv[n++] = "--attach";
		argv[n++] = strcmp(e->attach, "=") ? e->attach : e->cgroup_root;
	}
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
		if (e->nlisten && pass_listen_fds(e))
			_exit(125);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	return nfd;
}

/* How many times longer than natively an egretd may take to come up:
 * $EGRET_TEST_TIMEOUT_SCALE (1 to 20), which tests/kernels/guest.sh sets under qemu's emulated
 * CPU, where egretds starting at once verify their programs on one host thread. A bound on
 * liveness, not a measure of speed.
 */
unsigned int harness_timeout_scale(void)
{
	const char *s = getenv("EGRET_TEST_TIMEOUT_SCALE");
	unsigned long v = s ? strtoul(s, NULL, 10) : 1;

	return v >= 1 && v <= 20 ? (unsigned int)v : 1;
}

/* Wait for READY=1 from the egretd harness_spawn started; closes nfd. 0 when ready, else
 * egretd's exit status (it exited) or -errno.
 */
int harness_wait_ready(struct egret_instance *e, int nfd, int timeout_ms)
{
	uint64_t deadline = now_ns(CLOCK_MONOTONIC) +
			    (uint64_t)timeout_ms * harness_timeout_scale() * 1000000ull;
	char buf[512];
	int status;

	while (now_ns(CLOCK_MONOTONIC) < deadline) {
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

int harness_nest_root(struct egret_instance *e)
{
	snprintf(e->attach, sizeof(e->attach), "%s/%s", e->cgroup_mount, e->name);
	snprintf(e->cgroup_root, sizeof(e->cgroup_root), "%s/egret", e->attach);
	if (mkdir(e->attach, 0755) && errno != EEXIST)
		return -errno;
	return 0;
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
	cgroup_tree__remove(p.cgroup_root);
	snprintf(path, sizeof(path), HARNESS_DIR "/%s", name);
	remove_tree(path);
	snprintf(path, sizeof(path), "/tmp/%s", name);
	remove_tree(path);
	cgroup_v1__remove_limits(name);
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

		if (cgroup_v1__mount(i ? "pids" : "memory", v1, sizeof(v1)) == 0)
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
