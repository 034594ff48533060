/* egretd protecting itself from root in a sandbox: files someone else could write (StrictModes),
 * SIGHUP from a sandbox, control-socket peers that cannot be identified or hog the slots, and
 * the gaps when egretd is stopped, killed or starved (each reported with what was lost). Every
 * refusal has its positive control: the same thing from the host, or with the file fixed.
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include <linux/types.h>
#include "cgroup.h"
#include "collector.h"
#include "control.h"
#include "egret/events.h"
#include "harness.h"
#include "util.h"

#define DENIED	    "198.51.100.8" /* no rule allows it until a test's reload does */
#define DENIED_PORT 80
#define ALLOW_LINE  "allow " DENIED " tcp/80\n"

static int listener = -1;

static void setup(void)
{
	harness_setup(true);
	cr_assert_eq(netns_addr("lo", DENIED "/32"), 0);
	harness_setup_listen(&listener, "0.0.0.0", DENIED_PORT);
}

TestSuite(selfprot, .init = setup, .fini = harness_teardown, .timeout = 120);

static void start_ok(const char *const extra[])
{
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
}

static int connect_denied(void *arg)
{
	return tcp_connect(DENIED, DENIED_PORT, AF_INET, 2000);
}

/* A start that must be refused: exit 1, and the log says each of the words. */
static void expect_refused_start(const char *what, const char *w1, const char *w2, const char *w3)
{
	const char *log;
	int rc;

	truncate(T->log_path, 0);
	rc = harness_start(T, NULL);
	log = harness_log(T);
	cr_expect_eq(rc, 1, "%s: egretd started (or not as refused): %d\n%s", what, rc, log);
	if (rc == 0)
		harness_stop(T, SIGTERM);
	for (const char *w[] = { "refused", w1, w2, w3 }, **p = w; p < w + 4; p++)
		cr_expect(!*p || strstr(log, *p), "%s: the error does not say '%s':\n%s", what, *p,
			  log);
}

static void start_and_stop(const char *what)
{
	truncate(T->log_path, 0);
	cr_expect_eq(harness_start(T, NULL), 0, "%s: egretd did not start:\n%s", what,
		     harness_log(T));
	if (T->egretd)
		cr_expect_eq(harness_stop(T, SIGTERM), 0);
}

static void write_file_mode(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);

	cr_assert(fd >= 0, "%s: %s", path, strerror(errno));
	cr_assert_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	cr_assert_eq(fchmod(fd, mode), 0);
	close(fd);
}

/* Each file another user could write is refused at start, naming the path, its owner and mode
 * and the fix; the fixed file then loads.
 */
Test(selfprot, files_others_could_write_are_refused_at_start)
{
	char shared[PATH_MAX], inner[PATH_MAX + 16], link[PATH_MAX + 16], policy[PATH_MAX];

	snprintf(policy, sizeof(policy), "%s", T->policy_path);
	start_and_stop("positive control");

	cr_assert_eq(chmod(T->policy_path, 0664), 0);
	expect_refused_start("group-writable policy", T->policy_path, "mode 0664", "chmod go-w");
	cr_assert_eq(chmod(T->policy_path, 0644), 0);
	start_and_stop("policy fixed");

	/* a policy in a world-writable directory, then a sticky one, then a symlink into it */
	snprintf(shared, sizeof(shared), "%s/shared", T->tmpdir);
	cr_assert_eq(mkdir(shared, 0755), 0);
	cr_assert_eq(chmod(shared, 0777), 0);
	snprintf(inner, sizeof(inner), "%s/egret.policy", shared);
	write_file_mode(inner, "mode enforce\n", 0644);
	snprintf(T->policy_path, sizeof(T->policy_path), "%s", inner);
	expect_refused_start("policy in a world-writable directory", shared, "mode 0777",
			     "writable by group and others");
	cr_assert_eq(chmod(shared, 01777), 0);
	expect_refused_start("policy in a sticky directory", shared, "mode 1777",
			     "shared directory");
	snprintf(link, sizeof(link), "%s/link.policy", T->tmpdir);
	cr_assert_eq(symlink(inner, link), 0);
	snprintf(T->policy_path, sizeof(T->policy_path), "%s", link);
	expect_refused_start("symlink to a writable place", link, shared, "mode 1777");
	cr_assert_eq(chmod(shared, 0755), 0);
	start_and_stop("symlink to a safe place");
	snprintf(T->policy_path, sizeof(T->policy_path), "%s", policy);

	/* live rules owned by nobody */
	write_file_mode(T->live_path, "", 0600);
	cr_assert_eq(chown(T->live_path, 65534, 65534), 0);
	expect_refused_start("live rules owned by nobody", T->live_path, "owned by uid 65534",
			     "chown root");
	cr_assert_eq(chown(T->live_path, 0, 0), 0);
	start_and_stop("live rules fixed");

	/* a spool others can write */
	cr_assert_eq(chmod(T->spool_dir, 0777), 0);
	expect_refused_start("spool writable by others", T->spool_dir, "mode 0777", "spool");
	cr_assert_eq(chmod(T->spool_dir, 0700), 0);
	start_and_stop("spool fixed");
}

static bool is_reload_ok(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE &&
	       !strcmp(ev->policy_change->action, "reload") &&
	       ev->policy_change->ok == (arg != NULL);
}

static size_t count_of(bool (*match)(const Egret__V1__Event *, const void *), const void *arg)
{
	struct events evs;
	size_t n = 0;

	if (events_read(T->sink_path, &evs) == 0)
		events_find(&evs, match, arg, &n);
	events_free(&evs);
	return n;
}

static void rule_set(char *out, size_t size)
{
	char buf[8192], *line;

	cr_assert_eq(egretctl(T, buf, sizeof(buf), "list", NULL), 0, "%s", buf);
	line = strstr(buf, "rule set ");
	cr_assert(line, "%s", buf);
	snprintf(out, size, "%.73s", line);
}

/* One unsafe state at reload: egretctl reload and a host SIGHUP are both refused, naming path;
 * the rules in force stay, and each refusal is a PolicyChange with ok false.
 */
static void expect_refused_reload(const char *what, const char *path)
{
	size_t refused = count_of(is_reload_ok, NULL);
	char out[4096], before[80], after[80];
	struct events evs;

	rule_set(before, sizeof(before));
	cr_expect_eq(egretctl(T, out, sizeof(out), "reload", NULL), 1, "%s: %s", what, out);
	cr_expect(strstr(out, "refused") && strstr(out, path), "%s: %s", what, out);
	cr_assert_eq(kill(T->egretd, SIGHUP), 0);
	cr_expect_eq(events_wait_count(T->sink_path, is_reload_ok, NULL, refused + 2, 15000, &evs),
		     0, "%s: not two refused PolicyChange events", what);
	events_free(&evs);
	rule_set(after, sizeof(after));
	cr_expect_str_eq(after, before, "%s: the rule set changed", what);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM, "%s: the edit is in force",
		     what);
}

Test(selfprot, files_others_could_write_are_refused_at_reload)
{
	char out[4096];
	struct events evs;

	start_ok(NULL);
	cr_assert_eq(egretctl(T, out, sizeof(out), "allow", "198.51.100.9", "tcp/81", NULL), 0,
		     "%s", out);
	cr_assert_eq(harness_policy(T, "mode enforce\n" ALLOW_LINE), 0);

	cr_assert_eq(chmod(T->policy_path, 0664), 0);
	expect_refused_reload("group-writable policy", T->policy_path);
	cr_assert_eq(chmod(T->policy_path, 0644), 0);

	cr_assert_eq(chmod(T->tmpdir, 0777), 0);
	expect_refused_reload("policy in a world-writable directory", T->tmpdir);
	cr_assert_eq(chmod(T->tmpdir, 0700), 0);

	cr_assert_eq(chown(T->live_path, 65534, 65534), 0);
	expect_refused_reload("live rules owned by nobody", T->live_path);
	cr_assert_eq(chown(T->live_path, 0, 0), 0);

	cr_assert_eq(chmod(T->spool_dir, 0777), 0);
	expect_refused_reload("spool writable by others", T->spool_dir);
	cr_assert_eq(chmod(T->spool_dir, 0700), 0);

	/* fixed: the same reload goes through */
	cr_assert_eq(egretctl(T, out, sizeof(out), "reload", NULL), 0, "%s", out);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), 0);
	cr_expect_eq(events_wait_count(T->sink_path, is_reload_ok, (void *)1, 1, 15000, &evs), 0,
		     "no PolicyChange of the reload that went through");
	events_free(&evs);
}

static bool is_signal_tamper(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_SIGNAL && ev->process &&
	       ev->process->pid == (uint32_t)(uintptr_t)arg;
}

static bool is_reload_by(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE &&
	       !strcmp(ev->policy_change->action, "reload") &&
	       ev->policy_change->actor_pid == (uint32_t)(uintptr_t)arg;
}

/* what a SIGHUP from pid arg left: a Tamper event or a reload */
static bool is_hup_of(const Egret__V1__Event *ev, const void *arg)
{
	return is_signal_tamper(ev, arg) || is_reload_by(ev, arg);
}

/* Join <root>/box by hand (as a runtime would place a process), then SIGHUP egretd. */
static int hup_from_box(void *arg)
{
	char dir[PATH_MAX];

	if (sandbox_path(T, "box", dir, sizeof(dir)) || (mkdir(dir, 0755) && errno != EEXIST) ||
	    cgroup__join(dir, getpid()))
		return 100;
	return kill(T->egretd, SIGHUP) ? 101 : 0;
}

static int hup_from_box_and_wait(void *arg)
{
	int *go = arg, rc = hup_from_box(NULL);
	char c;

	/* stay until the test has seen the event (it closes the pipe) */
	if (!rc && read(*go, &c, 1) < 0)
		rc = 102;
	return rc;
}

/* A sandboxed process that edited the policy sends SIGHUP: no reload, a Tamper event naming it
 * (the kernel kills the sender, and records who it was). One that is reaped at once, even
 * before egretd reads the signal, is not reloaded for either. The host's SIGHUP reloads.
 */
Test(selfprot, sighup_from_a_sandbox_is_ignored_and_reported)
{
	const Egret__V1__Event *ev;
	struct events evs;
	int go[2], status;
	pid_t sender, quick;

	start_ok(NULL);
	cr_assert_eq(harness_policy(T, "mode enforce\n" ALLOW_LINE), 0);
	cr_assert_eq(pipe(go), 0);
	sender = fork();
	if (sender == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(go[1]);
		_exit(hup_from_box_and_wait(&go[0]));
	}
	close(go[0]);
	cr_expect_eq(
		events_wait(T->sink_path, is_signal_tamper, (void *)(uintptr_t)sender, 5000, &evs),
		0, "no Tamper event for the SIGHUP of pid %d", sender);
	ev = events_find(&evs, is_signal_tamper, (void *)(uintptr_t)sender, NULL);
	if (ev) {
		cr_expect_eq(ev->tamper->target, SIGHUP);
		cr_expect_str_eq(ev->sandbox->name, "box");
		cr_expect(strstr(ev->tamper->detail, "not reloaded"), "%s", ev->tamper->detail);
	}
	events_free(&evs);
	close(go[1]);
	cr_assert_eq(waitpid(sender, &status, 0), sender);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "the sender of SIGHUP to egretd lives: %d", status);
	cr_expect_eq(count_of(is_reload_by, (void *)(uintptr_t)sender), 0);

	/* a sender gone (reaped) before egretd reads the signal: refused as unidentifiable */
	quick = fork();
	if (quick == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(hup_from_box(NULL));
	}
	cr_assert_eq(waitpid(quick, &status, 0), quick);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "%d", status);
	cr_expect_eq(events_wait(T->sink_path, is_hup_of, (void *)(uintptr_t)quick, 5000, &evs), 0,
		     "nothing reported of the quick sender's SIGHUP");
	events_free(&evs);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM,
		     "a sandbox's SIGHUP reloaded the policy");
	cr_expect_eq(count_of(is_reload_ok, (void *)1), 0, "a reload went through");
	cr_expect_eq(count_of(is_signal_tamper, (void *)(uintptr_t)quick) +
			     count_of(is_reload_by, (void *)(uintptr_t)quick),
		     1, "the quick sender's SIGHUP was not reported once");

	/* and one certainly gone: egretd is stopped until the sender has been reaped; the
	 * kernel's record of the sender still names its sandbox
	 */
	cr_assert_eq(kill(T->egretd, SIGSTOP), 0);
	quick = fork();
	if (quick == 0)
		_exit(hup_from_box(NULL));
	cr_assert_eq(waitpid(quick, &status, 0), quick);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "%d", status);
	cr_assert_eq(kill(T->egretd, SIGCONT), 0);
	cr_expect_eq(
		events_wait(T->sink_path, is_signal_tamper, (void *)(uintptr_t)quick, 5000, &evs),
		0, "no Tamper event for the reaped sender %d", quick);
	ev = events_find(&evs, is_signal_tamper, (void *)(uintptr_t)quick, NULL);
	if (ev)
		cr_expect_str_eq(ev->sandbox->name, "box");
	events_free(&evs);
	cr_expect_eq(count_of(is_reload_by, (void *)(uintptr_t)quick), 0);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);

	/* positive control: a host process's SIGHUP reloads */
	cr_assert_eq(kill(T->egretd, SIGHUP), 0);
	cr_expect_eq(events_wait(T->sink_path, is_reload_ok, (void *)1, 5000, &evs), 0);
	events_free(&evs);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), 0);
}

/* A raw request on an open control connection: egretd's exit status, its text in out. */
static int request_on(int fd, const char *words, size_t len, char *out, size_t size)
{
	FILE *f = fmemopen(out, size, "w");
	char msg[CONTROL_MSG_MAX];
	int status = -1, ret = 0;

	if (!f)
		return -1;
	send(fd, words, len, MSG_NOSIGNAL); /* may fail: egretd refused and closed already */
	for (int resets = 0; ret == 0;) {
		ssize_t n = recv(fd, msg, sizeof(msg), 0);

		/* egretd closed with our request unread: the reset comes first, then its reply */
		if (n < 0 && errno == ECONNRESET && !resets++)
			continue;
		if (n <= 0)
			break;
		ret = control__reply_msg(msg, (size_t)n, f, f, &status);
	}
	fclose(f);
	return ret == 1 ? status : -1;
}

static int control_socket(void)
{
	struct timeval tv = { .tv_sec = 5 };
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	if (fd >= 0)
		setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	return fd;
}

static int control_connect_fd(int fd)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", T->control);
	return connect(fd, (struct sockaddr *)&sa, sizeof(sa));
}

/* One request on a new connection, answered within 5 s: the reply's status, or -1. */
static int request_on_new(const char *word, char *out, size_t size)
{
	int fd = control_socket(), status = -1;

	out[0] = '\0';
	if (fd >= 0 && !control_connect_fd(fd))
		status = request_on(fd, word, strlen(word) + 1, out, size);
	if (fd >= 0)
		close(fd);
	return status;
}

static const char allow_req[] = "allow\0" DENIED "\0tcp/80";

/* SIGSTOP or SIGCONT to egretd, sent by a host process for a sandboxed one (whose own signal
 * to egretd would kill it): 's' or 'c' on cmd, answered on ack. cmd -1: sent directly.
 */
struct stopper {
	int cmd, ack;
	pid_t pid;
};

static void stopper_start(struct stopper *s)
{
	int cmd[2], ack[2];
	char c;

	cr_assert_eq(pipe(cmd), 0);
	cr_assert_eq(pipe(ack), 0);
	s->pid = fork();
	cr_assert(s->pid >= 0);
	if (s->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(cmd[1]);
		close(ack[0]);
		while (read(cmd[0], &c, 1) == 1 && !kill(T->egretd, c == 's' ? SIGSTOP : SIGCONT) &&
		       write(ack[1], &c, 1) == 1)
			;
		_exit(0);
	}
	close(cmd[0]);
	close(ack[1]);
	s->cmd = cmd[1];
	s->ack = ack[0];
}

static void stopper_stop(struct stopper *s)
{
	close(s->cmd);
	close(s->ack);
	waitpid(s->pid, NULL, 0);
}

static void egretd_signal(const struct stopper *s, int sig)
{
	char c = sig == SIGSTOP ? 's' : 'c';

	if (s->cmd < 0)
		kill(T->egretd, sig);
	else if (write(s->cmd, &c, 1) == 1 && read(s->ack, &c, 1) != 1)
		fprintf(stderr, "the stopper did not answer\n");
}

/* The attack: the parent makes a socket, a child connects it (SO_PEERCRED names the child) and
 * exits, is reaped, and the parent sends `allow` on it. With arg (a stopper) set, egretd is
 * stopped meanwhile, so it accepts only once the child is gone. 0: refused as unidentifiable
 * (arg) or as a sandbox; 10: egretd obeyed; 11: no answer; 12: set-up failed.
 */
static int reaped_child_attack(void *arg)
{
	char out[1024];
	int fd = control_socket(), status = 0;
	bool connected;
	pid_t child;

	if (fd < 0)
		return 12;
	if (arg)
		egretd_signal(arg, SIGSTOP);
	child = fork();
	if (child == 0)
		_exit(control_connect_fd(fd) ? 1 : 0);
	connected = child > 0 && waitpid(child, &status, 0) == child && WIFEXITED(status) &&
		    WEXITSTATUS(status) == 0;
	if (arg) { /* whatever happened: a stopped egretd would stop the whole test */
		usleep(100000);
		egretd_signal(arg, SIGCONT);
	}
	if (!connected) {
		fprintf(stderr, "reaped child attack: the child did not connect\n");
		return 12;
	}
	status = request_on(fd, allow_req, sizeof(allow_req), out, sizeof(out));
	close(fd);
	if (status == 0)
		return 10;
	if (status != 1)
		return 11;
	if (arg && !strstr(out, "could not be identified"))
		fprintf(stderr, "reaped child attack: %s", out);
	if (arg)
		return strstr(out, "could not be identified") ? 0 : 13;
	return strstr(out, "could not be identified") || strstr(out, "inside a sandbox") ? 0 : 14;
}

static bool list_has(const char *text)
{
	char out[8192];

	cr_assert_eq(egretctl(T, out, sizeof(out), "list", NULL), 0, "%s", out);
	return strstr(out, text) != NULL;
}

/* The connection of a process that is gone is never served: from a sandbox (the attack), and
 * from the host too (egretd cannot tell it was not in a sandbox). A live host peer is served.
 */
Test(selfprot, control_peer_that_left_is_refused)
{
	struct stopper helper, direct = { .cmd = -1 };
	char out[4096];
	int rc;

	start_ok(NULL);
	cr_expect_eq(in_sandbox(T, "box", reaped_child_attack, NULL), 0, "sandbox, egretd running");
	stopper_start(&helper); /* a sandbox's own SIGSTOP to egretd would kill it */
	cr_expect_eq(in_sandbox(T, "box", reaped_child_attack, &helper), 0,
		     "sandbox, accepted after the child was reaped");
	stopper_stop(&helper);
	rc = in_sandbox(T, NULL, reaped_child_attack, &direct);
	cr_expect_eq(rc, 0, "host, accepted after the child was reaped: %d", rc);
	cr_expect_not(list_has(DENIED), "the attack's rule is in force");
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	cr_assert_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, "refused"), "%s", out);

	/* positive control: the same request from a live host peer */
	cr_expect_eq(egretctl(T, out, sizeof(out), "allow", DENIED, "tcp/80", NULL), 0, "%s", out);
	cr_expect(list_has(DENIED));
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), 0);
}

/* A refused peer that sends and closes before egretd looks at it: egretd reads what it sent,
 * meets the end of the connection and goes on (it once read that end for ever, a hang of its
 * whole loop any process could cause). From a sandbox and from a peer that is gone.
 */
static int send_and_leave(void *arg)
{
	int fd = control_socket();

	(void)arg;
	if (fd < 0 || control_connect_fd(fd))
		return 12;
	send(fd, allow_req, sizeof(allow_req), MSG_NOSIGNAL);
	close(fd);
	return 0;
}

Test(selfprot, a_refused_peer_that_closes_does_not_hold_egretd)
{
	char out[4096];

	start_ok(NULL);
	cr_assert_eq(kill(T->egretd, SIGSTOP), 0);
	for (int i = 0; i < 4; i++) {
		cr_expect_eq(in_sandbox(T, "box", send_and_leave, NULL), 0);
		cr_expect_eq(in_sandbox(T, NULL, send_and_leave, NULL), 0);
	}
	cr_assert_eq(kill(T->egretd, SIGCONT), 0);
	/* egretctl's own replies come only from a loop that is turning */
	for (int i = 0; i < 3; i++)
		cr_expect_eq(request_on_new("list", out, sizeof(out)), 0,
			     "egretd stopped serving: %s", out);
	cr_expect_not(list_has(DENIED), "a refused peer's rule is in force");
}

/* Open n connections and hold them; tell the test, wait for its word, then count how many were
 * refused at once (a reply is waiting) and how many egretd holds for us. Exit code: held.
 */
struct flood {
	int n;
	bool as_nobody;
	int ready, done;
};

static int flood(void *arg)
{
	struct flood *f = arg;
	static int fds[64];
	int held = 0;
	char c = 1;

	if (f->as_nobody && (setgroups(0, NULL) || setgid(65534) || setuid(65534)))
		return 250;
	for (int i = 0; i < f->n; i++) {
		fds[i] = control_socket();
		if (fds[i] < 0 || control_connect_fd(fds[i]))
			return 251;
	}
	usleep(500000); /* egretd accepts each: keeps it or answers and closes it */
	if (write(f->ready, &c, 1) != 1 || read(f->done, &c, 1) != 1)
		return 252;
	for (int i = 0; i < f->n; i++) {
		struct pollfd p = { .fd = fds[i], .events = POLLIN };

		held += poll(&p, 1, 0) == 0;
	}
	return held;
}

/* Start a flood in a sandbox (or outside, as nobody) and return its pid once it holds them. */
static pid_t start_flood(const char *sandbox, struct flood *f, int done[2])
{
	int ready[2];
	char c;
	pid_t pid;

	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(pipe(done), 0);
	f->ready = ready[1];
	f->done = done[0];
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(in_sandbox(T, sandbox, flood, f));
	}
	cr_assert_eq(read(ready[0], &c, 1), 1, "the flood did not start");
	close(ready[0]);
	close(ready[1]);
	return pid;
}

static int end_flood(pid_t pid, int done[2])
{
	int status;
	char c = 1;

	cr_assert_eq(write(done[1], &c, 1), 1);
	close(done[0]);
	close(done[1]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status));
	return WEXITSTATUS(status);
}

/* 64 connections from one sandbox, or from one user of the control group, do not stop root's
 * egretctl list: sandbox peers get no slot at all, a user at most CONTROL_PER_UID.
 */
Test(selfprot, one_peer_cannot_hold_every_control_slot)
{
	struct group *g = getgrgid(65534);
	const char *extra[] = { "--control-group", g ? g->gr_name : "nogroup", NULL };
	struct flood f = { .n = 64 };
	char out[8192];
	int done[2], held;
	pid_t pid;

	cr_assert(g, "no group 65534 on this host");
	start_ok(extra);
	cr_assert_eq(chmod(T->tmpdir, 0755), 0); /* nobody reaches the socket (mode 0660) */

	pid = start_flood("box", &f, done);
	cr_expect_eq(egretctl(T, out, sizeof(out), "list", NULL), 0, "%s", out);
	cr_assert_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, "control: 1 connections open"), "sandbox peers hold slots: %s", out);
	held = end_flood(pid, done);
	cr_expect_eq(held, 0, "egretd held %d connections of a sandbox", held);

	f.as_nobody = true;
	pid = start_flood(NULL, &f, done);
	cr_expect_eq(egretctl(T, out, sizeof(out), "list", NULL), 0, "%s", out);
	cr_assert_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, "control: 9 connections open"), "%s", out);
	held = end_flood(pid, done);
	cr_expect_eq(held, CONTROL_PER_UID, "egretd held %d connections of one user", held);
}

static bool is_gap(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_LOSS &&
	       ev->loss->source == EGRET__V1__LOSS__SOURCE__SOURCE_AGENT_GAP &&
	       (!arg || strstr(ev->loss->detail, arg));
}

static bool is_denied_of(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->verdict == EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY &&
	       !strcmp(ev->net_connect->dst_addr, DENIED) && ev->process &&
	       ev->process->pid == (uint32_t)(uintptr_t)arg;
}

/* A denied connect from the sandbox; its pid. */
static pid_t denied_connect(void)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		char dir[PATH_MAX];

		if (sandbox_path(T, "box", dir, sizeof(dir)) ||
		    (mkdir(dir, 0755) && errno != EEXIST) || cgroup__join(dir, getpid()))
			_exit(100);
		_exit(connect_denied(NULL) == EPERM ? 0 : 101);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the connect was not denied: %d",
		  status);
	return pid;
}

/* 30 s: after a flood egretd first drains a full ring, slowly on a loaded machine */
static const Egret__V1__Event *wait_gap(struct events *evs, const char *words)
{
	cr_assert_eq(events_wait(T->sink_path, is_gap, words, 30000, evs), 0,
		     "no gap event%s%s:\n%s", words ? " saying " : "", words ? words : "",
		     harness_log(T));
	return events_find(evs, is_gap, words, NULL);
}

/* SIGSTOP for 3 s: a gap of about 3 s when egretd runs again; the denied connect made meanwhile
 * was kept by the ring, so nothing is lost and the connect is in the stream.
 */
Test(selfprot, sigstop_is_a_gap_and_the_ring_keeps_what_fits)
{
	const Egret__V1__Event *gap;
	struct events evs;
	pid_t pid;

	start_ok(NULL);
	in_sandbox(T, "box", connect_denied, NULL); /* the sandbox is registered */
	usleep(1500000);
	cr_expect_eq(count_of(is_gap, NULL), 0, "a gap before any");
	cr_assert_eq(kill(T->egretd, SIGSTOP), 0);
	usleep(500000);
	pid = denied_connect();
	usleep(2500000);
	cr_assert_eq(kill(T->egretd, SIGCONT), 0);
	gap = wait_gap(&evs, "stopped");
	cr_expect(gap->loss->gap_ns >= 2800000000ull && gap->loss->gap_ns <= 4500000000ull,
		  "gap of %llu ns for a 3 s stop", (unsigned long long)gap->loss->gap_ns);
	cr_expect_eq(gap->loss->count, 0, "%s", gap->loss->detail);
	cr_expect_neq(gap->loss->gap_start_unix_nano, 0);
	events_free(&evs);
	cr_expect_eq(events_wait(T->sink_path, is_denied_of, (void *)(uintptr_t)pid, 5000, &evs), 0,
		     "the connect denied while egretd was stopped is not in the stream");
	events_free(&evs);
}

/* kill -9, 2 s without egretd, restart: the new egretd reports the downtime, and the denied
 * connect of the downtime (kept by the pinned ring) is in its stream. A clean stop is a gap
 * too, named as one.
 */
Test(selfprot, a_killed_egretd_is_a_gap_at_the_next_start)
{
	const Egret__V1__Event *gap;
	struct events evs;
	uint64_t killed, down;
	pid_t pid;

	start_ok(NULL);
	in_sandbox(T, "box", connect_denied, NULL);
	usleep(1200000); /* at least one alive record after start */
	killed = now_ns(CLOCK_MONOTONIC);
	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	pid = denied_connect();
	usleep(2000000);
	start_ok(NULL);
	/* from the last alive record (at most a second before the kill) to the new egretd's
	 * first turn (after its set-up, which takes seconds on a busy machine)
	 */
	down = now_ns(CLOCK_MONOTONIC) - killed + 1100000000ull;
	gap = wait_gap(&evs, "ended without stopping");
	cr_expect(gap->loss->gap_ns >= 2000000000ull && gap->loss->gap_ns <= down,
		  "downtime of %llu ns for one of 2 s plus a start (at most %llu ns)",
		  (unsigned long long)gap->loss->gap_ns, (unsigned long long)down);
	cr_expect_eq(gap->loss->count, 0, "%s", gap->loss->detail);
	events_free(&evs);
	cr_expect_eq(events_wait(T->sink_path, is_denied_of, (void *)(uintptr_t)pid, 5000, &evs), 0,
		     "the connect denied while egretd was down is not in the stream");
	events_free(&evs);

	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	usleep(1000000);
	start_ok(NULL);
	gap = wait_gap(&evs, "was stopped (Terminated)");
	cr_expect(gap->loss->gap_ns >= 1000000000ull, "%llu",
		  (unsigned long long)gap->loss->gap_ns);
	events_free(&evs);
}

static uint64_t ring_drops(void)
{
	char pin[PATH_MAX + 32];
	uint64_t sum = 0;
	int fd;

	snprintf(pin, sizeof(pin), "%s/maps/counters", T->state_dir);
	fd = bpf_obj_get(pin);
	cr_assert(fd >= 0, "%s: %s", pin, strerror(errno));
	collector__counter(fd, EGRET_CNT_RINGBUF_DROPS, &sum);
	close(fd);
	return sum;
}

static void file_churn(const char *path, long n)
{
	for (long i = 0; i < n; i++) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

		if (fd >= 0)
			close(fd);
		unlink(path);
	}
}

/* Free bytes in the pinned events ring, from its consumer and producer pages (read only). */
static uint64_t ring_free(void)
{
	char pin[PATH_MAX + 32];
	long page = sysconf(_SC_PAGESIZE);
	volatile unsigned long *cons, *prod;
	uint64_t used;
	int fd;

	snprintf(pin, sizeof(pin), "%s/maps/events", T->state_dir);
	fd = bpf_obj_get(pin);
	cr_assert(fd >= 0, "%s: %s", pin, strerror(errno));
	cons = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, 0);
	prod = mmap(NULL, (size_t)page, PROT_READ, MAP_SHARED, fd, page);
	cr_assert(cons != MAP_FAILED && prod != MAP_FAILED, "mmap of the ring: %s",
		  strerror(errno));
	used = *prod - *cons;
	munmap((void *)cons, (size_t)page);
	munmap((void *)prod, (size_t)page);
	close(fd);
	return EGRET_RINGBUF_BYTES - used;
}

/* Cheap file events from the sandbox until the test says the ring drops them (a byte on the
 * pipe: no bpf(2) here, a sandbox is killed for it), then more, so the ring is as full as file
 * records can make it; then the test looks at the room left, and the denied connect follows.
 */
static int flood_ring(int go, int ready)
{
	char path[PATH_MAX + 16], c;

	snprintf(path, sizeof(path), "%s/flood", T->tmpdir);
	fcntl(go, F_SETFL, O_NONBLOCK);
	for (long i = 0; i < 4000; i++) {
		file_churn(path, 1000);
		if (read(go, &c, 1) == 1)
			break;
	}
	file_churn(path, 20000);
	fcntl(go, F_SETFL, 0);
	if (write(ready, "x", 1) != 1 || read(go, &c, 1) != 1)
		return 3;
	return connect_denied(NULL) == EPERM ? 0 : 1;
}

/* The attack of the issue: SIGSTOP, flood the ring, a denied connect, SIGCONT. The gap's Loss
 * event counts exactly the records the ring dropped meanwhile. The connect is in the stream
 * when the room the file records left was enough for it (88 bytes and an 8-byte header), and
 * among the records lost when it was not: the test measures which, and asserts that.
 */
Test(selfprot, a_flood_while_stopped_is_counted_in_the_gap)
{
	const Egret__V1__Event *gap;
	struct events evs;
	uint64_t before, after, room, stopped_at;
	size_t ring_losses = 0, seen;
	int status, go[2], ready[2];
	char c;
	pid_t pid;

	start_ok(NULL);
	in_sandbox(T, "box", connect_denied, NULL);
	usleep(1200000);
	before = ring_drops();
	cr_assert_eq(pipe(go), 0);
	cr_assert_eq(pipe(ready), 0);
	cr_assert_eq(kill(T->egretd, SIGSTOP), 0);
	stopped_at = now_ns(CLOCK_MONOTONIC);
	pid = fork();
	if (pid == 0) {
		char dir[PATH_MAX];

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (sandbox_path(T, "box", dir, sizeof(dir)) || cgroup__join(dir, getpid()))
			_exit(100);
		_exit(flood_ring(go[0], ready[1]));
	}
	for (int i = 0; i < 600 && ring_drops() <= before + 1000; i++)
		usleep(100000);
	cr_expect_gt(ring_drops(), before, "the ring never filled up");
	cr_assert_eq(write(go[1], "x", 1), 1);
	cr_assert_eq(read(ready[0], &c, 1), 1);
	room = ring_free();
	cr_assert_eq(write(go[1], "x", 1), 1);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "flood: %d", status);
	after = ring_drops();
	/* a stop shorter than a gap (2 s) is a plain ring loss: a fast flood must not make one */
	while (now_ns(CLOCK_MONOTONIC) < stopped_at + 3000000000ull)
		usleep(50000);
	cr_assert_eq(kill(T->egretd, SIGCONT), 0);
	gap = wait_gap(&evs, "stopped");
	cr_expect_gt(gap->loss->count, 0, "%s", gap->loss->detail);
	cr_expect_eq(gap->loss->count, after - before, "gap counts %llu, the ring dropped %llu",
		     (unsigned long long)gap->loss->count, (unsigned long long)(after - before));
	events_free(&evs);
	usleep(1500000); /* the ring drained, the next drop check made */
	cr_assert_eq(events_read(T->sink_path, &evs), 0);
	events_find(&evs, is_denied_of, (void *)(uintptr_t)pid, &seen);
	for (size_t i = 0; i < evs.n; i++)
		ring_losses += evs.ev[i]->payload_case == EGRET__V1__EVENT__PAYLOAD_LOSS &&
			       evs.ev[i]->loss->source == EGRET__V1__LOSS__SOURCE__SOURCE_RINGBUF;
	cr_expect_eq(ring_losses, 0, "the drops of the gap were reported apart from it");
	if (room >= 96)
		cr_expect_eq(seen, 1,
			     "%llu bytes were free for the connect: it is not in the stream",
			     (unsigned long long)room);
	else
		cr_expect_eq(seen, 0, "only %llu bytes were free, yet the connect is in the stream",
			     (unsigned long long)room);
	cr_log_info("ring room before the connect: %llu bytes: the connect is %s",
		    (unsigned long long)room, seen ? "in the stream" : "among the records lost");
	events_free(&evs);
}

static bool is_limits(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_AGENT_LIMITS &&
	       strstr(ev->tamper->detail, arg);
}

/* renice, oom_score_adj and prlimit NOFILE on egretd: each a Tamper event within seconds. */
Test(selfprot, changes_to_egretds_limits_are_reported)
{
	char path[64], want[64];
	struct rlimit rl;
	struct events evs;
	char oom[32];
	int nice;

	start_ok(NULL);
	usleep(1500000);
	snprintf(path, sizeof(path), "/proc/%d/oom_score_adj", T->egretd);
	cr_assert_gt(read_file(path, oom, sizeof(oom)), 0);
	oom[strcspn(oom, "\n")] = '\0';
	cr_expect_eq(count_of(is_limits, "egretd"), 0, "a change reported before any");
	errno = 0;
	nice = getpriority(PRIO_PROCESS, (id_t)T->egretd);
	cr_assert_eq(errno, 0);
	cr_assert_eq(setpriority(PRIO_PROCESS, (id_t)T->egretd, nice + 5), 0);
	cr_assert_eq(write_file(path, "500"), 0);
	cr_assert_eq(prlimit(T->egretd, RLIMIT_NOFILE, NULL, &rl), 0);
	rl.rlim_cur = rl.rlim_cur > 4096 ? 4096 : rl.rlim_cur - 1; /* egretd keeps working */
	cr_assert_eq(prlimit(T->egretd, RLIMIT_NOFILE, &rl, NULL), 0);

	snprintf(want, sizeof(want), "from %d to %d (renice)", nice, nice + 5);
	cr_expect_eq(events_wait(T->sink_path, is_limits, want, 5000, &evs), 0, "no '%s'", want);
	events_free(&evs);
	snprintf(want, sizeof(want), "oom_score_adj was changed from %s to 500", oom);
	cr_expect_eq(events_wait(T->sink_path, is_limits, want, 5000, &evs), 0, "no '%s'", want);
	events_free(&evs);
	cr_expect_eq(events_wait(T->sink_path, is_limits, "RLIMIT_NOFILE (soft/hard) was changed",
				 5000, &evs),
		     0);
	events_free(&evs);
}

/* egretd's v2 cgroup directory, from /proc/PID/cgroup */
static void cgroup_of(pid_t pid, char *out, size_t size)
{
	char path[64], buf[4096], *line;

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)pid);
	cr_assert(read_file(path, buf, sizeof(buf)) > 0);
	line = strstr(buf, "0::");
	cr_assert(line, "%s", buf);
	line[strcspn(line, "\n")] = '\0';
	snprintf(out, size, "%s%s", T->cgroup_mount, line + 3);
}

/* A host root moving egretd into a sandbox's cgroup: egret's own bpf(2) tracepoint would have
 * killed it at its next map update (protected_tgids). egretd keeps serving requests there.
 */
Test(selfprot, egretd_moved_into_a_sandbox_is_not_killed_by_its_own_programs)
{
	char home[PATH_MAX], box[PATH_MAX], out[4096];

	start_ok(NULL);
	cgroup_of(T->egretd, home, sizeof(home));
	cr_assert_eq(sandbox_path(T, "box", box, sizeof(box)), 0);
	cr_assert(mkdir(box, 0755) == 0 || errno == EEXIST);
	cr_assert_eq(cgroup__join(box, T->egretd), 0);
	/* each request updates the rule map with bpf(2), from inside the sandbox now */
	for (int i = 0; i < 3; i++)
		cr_expect_eq(egretctl(T, out, sizeof(out), "allow", DENIED, "tcp/80", NULL), 0,
			     "request %d: %s\n%s", i, out, harness_log(T));
	cr_expect_eq(kill(T->egretd, 0), 0, "egretd died in the sandbox:\n%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "list", NULL), 0, "%s", out);
	cr_expect(strstr(out, DENIED), "%s", out);
	cgroup__join(home, T->egretd);
}
