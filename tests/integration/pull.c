/* No task is moved into a sandbox from outside except by egret or a trusted host process: a
 * root process in a sandbox that writes a host pid (egretd's, a host `sleep`'s) into its own
 * cgroup.procs is killed, the pulled process is flagged foreign (egret never kills it), and
 * egretd pulled in goes back to its own cgroup. The positive controls: a host process placing
 * a child in a sandbox (what a runtime does) and egretctl run.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cgroup.h"
#include "harness.h"
#include "util.h"

#define DENIED	    "198.51.100.9" /* in the test's own network namespace */
#define DENIED_PORT 80

static int listener = -1;
static char trusted[PATH_MAX]; /* a runtime's cgroup, outside egret's root */

static void setup(void)
{
	harness_setup(true);
	cr_assert_eq(netns_addr("lo", DENIED "/32"), 0);
	harness_setup_listen(&listener, "0.0.0.0", DENIED_PORT);
}

/* the runtime's cgroup goes after its processes */
static void teardown(void)
{
	harness_teardown();
	if (trusted[0])
		rmdir(trusted);
}

TestSuite(pull, .init = setup, .fini = teardown, .timeout = 90);

static void start_ok(const char *const extra[])
{
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
}

static bool killed(int status)
{
	return status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static bool is_pull_of(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_CGROUP_PULL &&
	       (!arg || ev->tamper->other_pid == (uint32_t)(long)arg);
}

static bool is_exec_of(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_EXEC && ev->exec->n_args > 1 &&
	       !strcmp(ev->exec->args[1], arg);
}

static void box_dir(const char *name, char *out, size_t size)
{
	cr_assert_eq(sandbox_path(T, name, out, size), 0);
	cr_assert(mkdir(out, 0755) == 0 || errno == EEXIST, "%s: %s", out, strerror(errno));
}

static void cgroup_of(pid_t pid, char *out, size_t size)
{
	cr_assert_eq(cgroup__of_pid(pid, T->cgroup_mount, out, size), 0, "cgroup of %d", pid);
}

/* A child that waits for a byte on fd and then runs fn's code: the victim of a pull. */
static pid_t spawn_waiting(int *go, int (*fn)(void))
{
	int p[2];
	pid_t pid;

	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		char c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(p[1]);
		if (read(p[0], &c, 1) != 1)
			_exit(99);
		_exit(fn() & 0xff);
	}
	close(p[0]);
	*go = p[1];
	return pid;
}

static int exit_now(void)
{
	return 0;
}

static int reap(pid_t pid)
{
	int status;

	return waitpid(pid, &status, 0) == pid ? status : -1;
}

/* A shell joined by hand to a sandbox, writing pid into the sandbox's cgroup.procs. */
static int pull_in(void *arg)
{
	char procs[PATH_MAX + 16], val[32];
	const char *box = ((const char *const *)arg)[0];
	pid_t pid = (pid_t)(long)((void *const *)arg)[1];

	snprintf(procs, sizeof(procs), "%s/cgroup.procs", box);
	snprintf(val, sizeof(val), "%d", (int)pid);
	if (write_file(procs, val))
		return 100;
	/* a pull kills the writer on its way out of write(2) */
	return 0;
}

static int writer_in(const char *box, pid_t victim)
{
	const void *arg[2] = { box, (void *)(long)victim };
	int status;
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cgroup__join(box, getpid()))
			_exit(101);
		_exit(pull_in(arg) & 0xff);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return status;
}

static int marker(const char *box_name, const char *word)
{
	char out[256];

	return sandbox_cmd(T, box_name, out, sizeof(out), "/bin/echo", word, NULL);
}

/* What a runtime does: a host process places its child in the sandbox; and egretctl run. No
 * pull is reported, nobody is killed.
 */
Test(pull, a_host_process_placing_a_child_and_egretctl_run_are_not_pulls)
{
	char box[PATH_MAX], where[PATH_MAX], out[4096];
	struct events evs;
	int go, rc;
	pid_t child;

	start_ok(NULL);
	box_dir("s1", box, sizeof(box));
	child = spawn_waiting(&go, exit_now);
	cr_assert_eq(cgroup__join(box, child), 0);
	cgroup_of(child, where, sizeof(where));
	cr_expect_str_eq(where, box);
	cr_assert_eq(write(go, "g", 1), 1);
	close(go);
	rc = reap(child);
	cr_expect(WIFEXITED(rc) && WEXITSTATUS(rc) == 0, "the placed child: status %#x", rc);
	rc = egretctl(T, out, sizeof(out), "run", "--sandbox", "s1", "--", "/bin/true", NULL);
	cr_expect_eq(rc, 0, "egretctl run: %d %s", rc, out);
	/* everything before the marker's exec is in the stream when the marker is */
	cr_assert_eq(marker("s1", "pull-control-done"), 0);
	cr_assert_eq(events_wait(T->sink_path, is_exec_of, "pull-control-done", 5000, &evs), 0);
	cr_expect_null(events_find(&evs, is_pull_of, NULL, NULL), "a pull was reported");
	events_free(&evs);
}

static bool back_home(pid_t pid, const char *home, int timeout_ms)
{
	char now[PATH_MAX];

	for (int waited = 0; waited < timeout_ms; waited += 10) {
		if (cgroup__of_pid(pid, T->cgroup_mount, now, sizeof(now)) == 0 &&
		    !strcmp(now, home)) {
			cr_log_info("pid %d back in its cgroup %d ms after its puller died",
				    (int)pid, waited + 10);
			return true;
		}
		usleep(10 * 1000);
	}
	return false;
}

static int connect_denied(void *arg)
{
	return tcp_connect(DENIED, DENIED_PORT, AF_INET, 2000);
}

/* The attack: a shell joined by hand to s1 writes egretd's pid into s1/cgroup.procs. The
 * writer dies, egretd goes back to its cgroup and keeps serving and applying rules.
 */
Test(pull, egretd_pulled_into_a_sandbox_kills_the_writer_and_goes_home)
{
	char box[PATH_MAX], home[PATH_MAX], out[4096];
	const Egret__V1__Event *ev;
	struct events evs;
	int status;

	start_ok(NULL);
	cgroup_of(T->egretd, home, sizeof(home));
	box_dir("s1", box, sizeof(box));
	status = writer_in(box, T->egretd);
	cr_expect(killed(status), "the writer was not killed: status %#x", status);
	cr_expect(back_home(T->egretd, home, 3000), "egretd did not return to %s:\n%s", home,
		  harness_log(T));
	cr_assert_eq(events_wait(T->sink_path, is_pull_of, (void *)(long)T->egretd, 5000, &evs), 0,
		     "no CGROUP_PULL naming egretd:\n%s", harness_log(T));
	ev = events_find(&evs, is_pull_of, (void *)(long)T->egretd, NULL);
	cr_expect(ev->tamper->killed);
	cr_expect_str_eq(ev->sandbox->name, "s1");
	events_free(&evs);
	cr_expect_eq(kill(T->egretd, 0), 0, "egretd died:\n%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "list", NULL), 0, "list: %s", out);
	cr_expect_neq(in_sandbox(T, "s1", connect_denied, NULL), 0, "denied before the rule");
	cr_expect_eq(egretctl(T, out, sizeof(out), "allow", DENIED, "tcp/80", NULL), 0,
		     "allow: %s\n%s", out, harness_log(T));
	cr_expect_eq(in_sandbox(T, "s1", connect_denied, NULL), 0, "the rule egretd added");
}

/* A pulled-in process and its children: AF_PACKET, which kills the sandbox's own code */
static int packet_twice(void)
{
	char *argv[] = { EGRET_PROBE_BIN, "packet", NULL };
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return 98;
	if (WIFSIGNALED(status))
		return 100 + WTERMSIG(status);
	execv(argv[0], argv);
	return 127;
}

static int call_packet(void *arg)
{
	char *argv[] = { EGRET_PROBE_BIN, "packet", NULL };

	execv(argv[0], argv);
	return 127;
}

/* The same with a host process: the writer dies; the process stays where it was put, alive,
 * and egret never kills it (it is not the sandbox's code), nor its children.
 */
Test(pull, a_host_process_pulled_in_is_foreign_and_never_killed)
{
	char box[PATH_MAX], where[PATH_MAX];
	const Egret__V1__Event *ev;
	struct events evs;
	int go, status;
	pid_t victim;

	start_ok(NULL);
	box_dir("s1", box, sizeof(box));
	/* the check is real: the sandbox's own code dies for AF_PACKET */
	cr_expect(killed(in_sandbox_status(T, "s1", call_packet, NULL)), "negative control");
	victim = spawn_waiting(&go, packet_twice);
	status = writer_in(box, victim);
	cr_expect(killed(status), "the writer was not killed: status %#x", status);
	cgroup_of(victim, where, sizeof(where));
	cr_expect_str_eq(where, box, "the victim is where the writer put it");
	cr_assert_eq(write(go, "g", 1), 1);
	close(go);
	status = reap(victim);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the pulled-in process (or its child) was killed: status %#x (exit %d)", status,
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	cr_assert_eq(events_wait(T->sink_path, is_pull_of, (void *)(long)victim, 5000, &evs), 0);
	ev = events_find(&evs, is_pull_of, (void *)(long)victim, NULL);
	cr_expect(ev->tamper->killed);
	events_free(&evs);
}

/* --trusted-mover narrows who may place host processes: a host writer outside those cgroups
 * is reported (not killed, it is no sandbox's); one inside them is not.
 */
Test(pull, trusted_mover_narrows_the_host_writers)
{
	char box[PATH_MAX];
	const char *extra[] = { "--trusted-mover", trusted, NULL };
	const Egret__V1__Event *ev;
	struct events evs;
	int go, status;
	pid_t victim, mover;

	snprintf(trusted, sizeof(trusted), "%s/%s-runtime", T->cgroup_mount, T->name);
	cr_assert(mkdir(trusted, 0755) == 0 || errno == EEXIST);
	start_ok(extra);
	box_dir("s1", box, sizeof(box));
	/* trusted: a writer in the runtime's cgroup */
	victim = spawn_waiting(&go, exit_now);
	mover = fork();
	cr_assert(mover >= 0);
	if (mover == 0) {
		if (cgroup__join(trusted, getpid()) || cgroup__join(box, victim))
			_exit(100);
		_exit(0);
	}
	status = reap(mover);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "trusted mover: %#x", status);
	cr_assert_eq(write(go, "g", 1), 1);
	close(go);
	reap(victim);
	cr_assert_eq(marker("s1", "trusted-done"), 0);
	cr_assert_eq(events_wait(T->sink_path, is_exec_of, "trusted-done", 5000, &evs), 0);
	cr_expect_null(events_find(&evs, is_pull_of, (void *)(long)victim, NULL),
		       "the trusted mover's move was reported as a pull");
	events_free(&evs);
	/* not trusted: the test itself, outside that cgroup */
	victim = spawn_waiting(&go, exit_now);
	cr_assert_eq(cgroup__join(box, victim), 0);
	cr_assert_eq(events_wait(T->sink_path, is_pull_of, (void *)(long)victim, 5000, &evs), 0,
		     "an untrusted host move was not reported");
	ev = events_find(&evs, is_pull_of, (void *)(long)victim, NULL);
	cr_expect_not(ev->tamper->killed);
	events_free(&evs);
	cr_assert_eq(write(go, "g", 1), 1);
	close(go);
	status = reap(victim);
	cr_expect(WIFEXITED(status), "the untrusted-moved process: %#x", status);
}

/* A process in the sandbox since before egretd's programs existed is the sandbox's (egretd
 * records it at start): a peer moving it within the sandbox is no pull and survives.
 */
Test(pull, a_process_older_than_egretd_moved_by_a_peer_is_not_a_pull)
{
	char box[PATH_MAX], nested[PATH_MAX + 8];
	struct events evs;
	int go, status;
	pid_t old;

	cr_assert(mkdir(T->cgroup_root, 0755) == 0 || errno == EEXIST);
	box_dir("s1", box, sizeof(box));
	snprintf(nested, sizeof(nested), "%s/nested", box);
	cr_assert(mkdir(nested, 0755) == 0 || errno == EEXIST);
	old = spawn_waiting(&go, exit_now);
	cr_assert_eq(cgroup__join(box, old), 0);
	start_ok(NULL);
	status = writer_in(nested, old);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		  "the peer moving an old process within its sandbox: status %#x", status);
	cr_assert_eq(write(go, "g", 1), 1);
	close(go);
	reap(old);
	cr_assert_eq(marker("s1", "old-done"), 0);
	cr_assert_eq(events_wait(T->sink_path, is_exec_of, "old-done", 5000, &evs), 0);
	cr_expect_null(events_find(&evs, is_pull_of, (void *)(long)old, NULL),
		       "a move within the sandbox was reported as a pull");
	events_free(&evs);
}
