/* egretd's life and death: fail closed, enforcement that outlives egretd, adoption of pins by a
 * restarted egretd with no unprotected moment, egretctl refusing to run anything unprotected,
 * explicit uninstall, the agent events that bracket a stream, bpffs and tracefs mounted once
 * when several egretds start at once on a host without them, and a second egretd on an
 * instance's state dir, spool or control socket exiting at once without touching them.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/vfs.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <stddef.h>

#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "../fuzz/jsoncheck.h"
#include "cgroup.h"
#include "harness.h"
#include "loader.h"
#include "paths.h"

#define PORT	  80
#define NOTHERS	  8
#define NSTARTING 8 /* egretds released at once to race for the mounts */
#define NREADY	  4 /* of them, brought all the way up in the last round */

static int listener = -1;
/* further instances of a test, cleaned up with T (harness_teardown) */
static struct egret_instance others[NOTHERS];
static unsigned int nothers;

/* The programs egretd attaches on this kernel: all but those it did without (kernel_features). */
static unsigned int nexpected(void)
{
	struct egret_paths p;

	if (paths__init(&p, T->cgroup_root, T->state_dir, T->control))
		return 0;
	return loader__nexpected(&p);
}

static void setup(void)
{
	harness_setup(true);
	cr_assert_eq(netns_addr("lo", "169.254.169.254/32"), 0);
	cr_assert_eq(netns_addr("lo", "fd00:ec2::254/128"), 0);
	harness_setup_listen(&listener, "169.254.169.254", PORT);
}

static struct egret_instance *other_instance(void)
{
	struct egret_instance *e;

	cr_assert_lt(nothers, NOTHERS);
	e = &others[nothers++];
	cr_assert_eq(harness_init(e), 0);
	return e;
}

static int connect_metadata(void *arg)
{
	return tcp_connect("169.254.169.254", PORT, AF_INET, 2000);
}

TestSuite(lifecycle, .init = setup, .fini = harness_teardown, .timeout = 120);

Test(lifecycle, sigkill_leaves_enforcement_attached)
{
	char out[4096];

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_assert_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM);
	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	cr_expect_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM,
		     "enforcement went away with egretd");
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 3, "%s", out);
	cr_expect(strstr(out, "enforcement: attached"), "%s", out);
	cr_expect(strstr(out, "egretd: not running"), "%s", out);
	cr_expect_eq(in_sandbox(T, NULL, connect_metadata, NULL), 0, "positive control failed");
}

/* `status` in each state, by exit code and in --json: 1 not attached, 0 attached with egretd
 * answering, 3 attached with egretd gone
 */
static void expect_status_json(char *out, size_t size, int code, const char *state,
			       const char *answering)
{
	char want[64];

	cr_expect_eq(egretctl(T, out, size, "status", "--json", NULL), code, "%s", out);
	cr_expect(jsoncheck_valid(out, strlen(out)), "not JSON: %s", out);
	snprintf(want, sizeof(want), "{\"state\":\"%s\",\"exit_code\":%d,", state, code);
	cr_expect(strstr(out, want), "no %s in %s", want, out);
	snprintf(want, sizeof(want), "\"egretd\":{\"answering\":%s,", answering);
	cr_expect(strstr(out, want), "no %s in %s", want, out);
	cr_expect(strstr(out, "\"counters\":{"), "%s", out);
}

Test(lifecycle, status_exit_codes_and_json)
{
	char out[16384], want[PATH_MAX + 64];

	cr_assert_eq(mkdir(T->cgroup_root, 0755), 0);
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 1, "%s", out);
	expect_status_json(out, sizeof(out), 1, "not attached", "false");
	cr_expect(strstr(out, "\"missing\":[\"egret_"), "%s", out);

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, "egretd: running"), "%s", out);
	expect_status_json(out, sizeof(out), 0, "attached", "true");
	cr_expect(strstr(out, "\"attached\":true,"), "%s", out);
	cr_expect(strstr(out, "\"missing\":[]"), "%s", out);
	snprintf(want, sizeof(want), "\"policy\":{\"path\":\"%s\",\"mode\":\"enforce\",",
		 T->policy_path);
	cr_expect(strstr(out, want), "no %s in %s", want, out);
	cr_expect(strstr(out, "\"connect4.denied\":"), "%s", out);
	cr_expect(strstr(out, "\"sinks\":[{\"uri\":\"file:"), "%s", out);

	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 3, "%s", out);
	expect_status_json(out, sizeof(out), 3, "attached, egretd not answering", "false");
	cr_expect(strstr(out, "\"attached\":true,"), "%s", out);
	cr_expect(strstr(out, "\"connect4.denied\":"), "%s", out);
}

/* A sandboxed child connecting in a loop while egretd is killed and restarted: not one connect
 * may get through.
 */
Test(lifecycle, restart_adopts_pins_without_a_gap)
{
	char out[4096], sandbox[PATH_MAX];
	int stop[2], status, successes;
	pid_t child;

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_assert_eq(pipe2(stop, O_CLOEXEC), 0);
	cr_assert_eq(sandbox_path(T, "loop", sandbox, sizeof(sandbox)), 0);
	mkdir(sandbox, 0755);
	child = fork();
	if (child == 0) {
		int n = 0, tries = 0;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		close(stop[1]);
		fcntl(stop[0], F_SETFL, O_NONBLOCK);
		if (cgroup__join(sandbox, getpid()))
			_exit(255);
		while (read(stop[0], out, 1) < 0 && errno == EAGAIN) {
			n += tcp_connect("169.254.169.254", PORT, AF_INET, 500) == 0;
			tries++;
			/* paced: restarts under qemu take minutes, and an unpaced loop's 250,000
			 * denials kept egretd too busy to answer the status below
			 */
			usleep(1000);
		}
		_exit(tries == 0 ? 254 : (n > 200 ? 200 : n));
	}
	close(stop[0]);
	usleep(100000);
	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	usleep(200000);
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	usleep(100000);
	close(stop[1]);
	waitpid(child, &status, 0);
	successes = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
	cr_expect_eq(successes, 0, "%d connects to the metadata address got through", successes);
	snprintf(out, sizeof(out), "(%u adopted)", nexpected());
	cr_expect(strstr(harness_log(T), out), "restart did not adopt the pins:\n%s",
		  harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	snprintf(sandbox, sizeof(sandbox), "%u adopted from a previous egretd", nexpected());
	cr_expect(strstr(out, sandbox), "%s", out);
}

Test(lifecycle, run_refuses_while_nothing_is_attached)
{
	char out[4096], shared[PATH_MAX], marker[PATH_MAX + 16];
	struct stat st;

	cr_assert_eq(harness_shared_dir(T, shared, sizeof(shared)), 0);
	snprintf(marker, sizeof(marker), "%s/ran", shared);
	cr_assert_eq(mkdir(T->cgroup_root, 0755), 0);
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--", "touch", marker, NULL), 125, "%s",
		     out);
	cr_expect(strstr(out, "refusing to run"), "%s", out);
	cr_expect_neq(stat(marker, &st), 0, "the command ran unprotected");
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 1, "%s", out);
	cr_expect(strstr(out, "NOT attached"), "%s", out);

	/* positive control: once egretd is up, the same command runs, inside a sandbox */
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "ok", "--", "touch", marker,
			      NULL),
		     0, "%s", out);
	cr_expect_eq(stat(marker, &st), 0, "the command did not run");
}

Test(lifecycle, run_places_the_command_in_its_sandbox)
{
	char out[4096], expect[PATH_MAX + 16];

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	/* in the host's cgroup namespace, its path; in its own (the default), the root */
	cr_assert_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "named", "--share", "cgroup",
			      "--", "cat", "/proc/self/cgroup", NULL),
		     0, "%s", out);
	snprintf(expect, sizeof(expect), "0::%s/named\n", T->cgroup_root + strlen(T->cgroup_mount));
	cr_expect(strstr(out, expect), "expected '%s' in:\n%s", expect, out);
	cr_assert_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "named", "--", "sh", "-c",
			      "grep ^0:: /proc/self/cgroup; grep ^0:: /proc/1/cgroup", NULL),
		     0, "%s", out);
	cr_expect(strstr(out, "0::/\n0::/\n"), "not at the root of its cgroup namespace:\n%s", out);
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--", "sh", "-c", "exit 7", NULL), 7,
		     "exit status not passed through: %s", out);
	cr_expect(strstr(out, "egretctl: sandbox sbx-"), "generated name not shown: %s", out);
	cr_expect_eq(
		egretctl(T, out, sizeof(out), "run", "--sandbox", "../escape", "--", "true", NULL),
		2, "%s", out);
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--", "/nonexistent/cmd", NULL), 127,
		     "%s", out);
}

static bool sandbox_exists(const char *name)
{
	char dir[PATH_MAX];
	struct stat st;

	cr_assert_eq(sandbox_path(T, name, dir, sizeof(dir)), 0);
	return stat(dir, &st) == 0;
}

/* egretctl run removes the sandbox cgroup it created when the command is done (also after
 * descendants that outlived the command, and cgroups the command made inside it), and leaves
 * one that was there before; the command's parent, egretctl, stays outside the sandbox.
 */
Test(lifecycle, run_removes_the_sandbox_it_created)
{
	char out[4096], name[80], expect[PATH_MAX + 16], script[PATH_MAX + 16];
	const char *gen;

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_assert_eq(egretctl(T, out, sizeof(out), "run", "--", "true", NULL), 0, "%s", out);
	gen = strstr(out, "egretctl: sandbox ");
	cr_assert(gen, "%s", out);
	cr_assert_eq(sscanf(gen, "egretctl: sandbox %79s", name), 1);
	cr_expect_not(sandbox_exists(name), "generated sandbox %s left behind", name);

	/* in the host's pid namespace a descendant outlives the command, and is waited for; in
	 * the sandbox's own, it ends with the command (its init)
	 */
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "linger", "--share", "pid",
			      "--", "sh", "-c", "sleep 0.5 & exit 3", NULL),
		     3, "%s", out);
	cr_expect_not(sandbox_exists("linger"), "sandbox left behind by a lingering child");
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "linger", "--", "sh", "-c",
			      "sleep 30 & exit 4", NULL),
		     4, "%s", out);
	cr_expect_not(sandbox_exists("linger"), "the sandbox's pid namespace outlived its init");
	cr_expect_null(strstr(out, "still has processes"), "%s", out);

	/* the sandbox's cgroup, delegated to its root, is at the cgroup2 mount in its namespace */
	snprintf(script, sizeof(script), "mkdir %s/inner && echo $$ > %s/inner/cgroup.procs",
		 T->cgroup_mount, T->cgroup_mount);
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "nested", "--", "sh", "-c",
			      script, NULL),
		     0, "%s", out);
	cr_expect_not(sandbox_exists("nested"), "a cgroup inside the sandbox kept it");

	cr_assert_eq(sandbox_path(T, "kept", expect, sizeof(expect)), 0);
	cr_assert_eq(mkdir(expect, 0755), 0);
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "kept", "--share",
			      "pid,cgroup", "--", "sh", "-c", "cat /proc/$PPID/cgroup", NULL),
		     0, "%s", out);
	cr_expect(sandbox_exists("kept"), "a sandbox egretctl did not create was removed");
	snprintf(expect, sizeof(expect), "0::%s/kept\n", T->cgroup_root + strlen(T->cgroup_mount));
	cr_expect(strstr(out, "0::/"), "egretctl's cgroup not read: %s", out);
	cr_expect_null(strstr(out, expect), "egretctl itself is in the sandbox: %s", out);
}

/* egretctl run in the background, its stdout and stderr to path */
static pid_t spawn_run(const char *path, char *const cmd[])
{
	char *argv[32] = { EGRETCTL_BIN, "--cgroup",  T->cgroup_root, "--state-dir",
			   T->state_dir, "--control", T->control,     "run",
			   "-q",	 "--sandbox", "sig",	      "--" };
	int n = 12;
	pid_t pid;

	while (*cmd && n < 31)
		argv[n++] = *cmd++;
	argv[n] = NULL;
	pid = fork();
	if (pid == 0) {
		int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		dup2(fd, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	return pid;
}

static bool wait_file(const char *path, int ms)
{
	struct stat st;

	for (ms *= (int)harness_timeout_scale(); ms > 0; ms -= 20) {
		if (stat(path, &st) == 0)
			return true;
		usleep(20000);
	}
	return false;
}

/* Signals sent to egretctl reach the command; egretctl ends as the command did (its exit code,
 * or the same signal), and removes the sandbox either way.
 */
Test(lifecycle, run_forwards_signals_and_exits_as_the_command)
{
	char log[PATH_MAX + 16], ready[PATH_MAX + 16], script[PATH_MAX * 2 + 64], shared[PATH_MAX];
	char *trap[] = { "sh", "-c", script, NULL }, *sleeper[] = { "sh", "-c", script, NULL };
	int status;
	pid_t pid;

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_assert_eq(harness_shared_dir(T, shared, sizeof(shared)), 0);
	snprintf(log, sizeof(log), "%s/run.log", T->tmpdir);
	snprintf(ready, sizeof(ready), "%s/ready", shared);
	snprintf(script, sizeof(script),
		 "trap 'exit 42' USR1; touch %s; while :; do sleep 0.05; done", ready);
	pid = spawn_run(log, trap);
	cr_assert(wait_file(ready, 10000), "the command did not start");
	cr_assert_eq(kill(pid, SIGUSR1), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 42,
		  "SIGUSR1 did not reach the command: status 0x%x", status);
	cr_expect_not(sandbox_exists("sig"));

	unlink(ready);
	snprintf(script, sizeof(script), "touch %s; exec sleep 30", ready);
	pid = spawn_run(log, sleeper);
	cr_assert(wait_file(ready, 10000), "the command did not start");
	usleep(100000); /* sh has exec'd sleep */
	cr_assert_eq(kill(pid, SIGTERM), 0);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM,
		  "egretctl did not end by the command's signal: status 0x%x", status);
	cr_expect_not(sandbox_exists("sig"));
}

/* 64 programs of one attach type is the kernel's per-cgroup limit: with 64 dummies on
 * connect6, attaching egret_connect6 fails for real (E2BIG).
 */
static void fill_connect6_slots(const char *cgroup)
{
	struct bpf_insn ret1[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_CGROUP_INET6_CONNECT);
	int cg = open(cgroup, O_RDONLY | O_DIRECTORY);

	cr_assert(cg >= 0);
	for (int i = 0; i < 64; i++) {
		int fd = bpf_prog_load(BPF_PROG_TYPE_CGROUP_SOCK_ADDR, "dummy", "GPL", ret1, 2,
				       &opts);

		cr_assert(fd >= 0, "dummy load: %s", strerror(errno));
		cr_assert_eq(bpf_prog_attach(fd, cg, BPF_CGROUP_INET6_CONNECT, BPF_F_ALLOW_MULTI),
			     0, "dummy attach %d: %s", i, strerror(errno));
		close(fd);
	}
	close(cg);
}

Test(lifecycle, attach_failure_fails_closed)
{
	char expect[PATH_MAX + 64], out[4096];
	int rc;

	cr_assert_eq(mkdir(T->cgroup_root, 0755), 0);
	fill_connect6_slots(T->cgroup_root);
	rc = harness_start(T, NULL);
	cr_expect_eq(rc, 1, "egretd should exit 1, got %d:\n%s", rc, harness_log(T));
	snprintf(expect, sizeof(expect),
		 "failed to attach 'egret_connect6' to %s: Argument list "
		 "too long",
		 T->cgroup_root);
	cr_expect(strstr(harness_log(T), expect), "expected '%s' in:\n%s", expect, harness_log(T));
	/* what was attached before the failure stays pinned and enforcing */
	cr_expect_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM);
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--", "true", NULL), 125, "%s", out);
	cr_expect(strstr(out, "egret_connect6"), "%s", out);
}

/* Pins left by an egretd attached to one cgroup are not taken over for another. */
Test(lifecycle, pins_of_another_cgroup_are_refused)
{
	char other[PATH_MAX + 16];
	const char *argv[] = { "--cgroup", other, "--attach", other, NULL };
	struct egret_instance second;

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	/* a second egretd attached to another cgroup but on the same state dir */
	second = *T;
	snprintf(other, sizeof(other), "%s/nested", T->cgroup_root);
	snprintf(second.log_path, sizeof(second.log_path), "%s/second.log", T->tmpdir);
	snprintf(second.control, sizeof(second.control), "%s/second.sock", T->tmpdir);
	cr_expect_eq(harness_start(&second, argv), 1, "%s", harness_log(&second));
	cr_expect(strstr(harness_log(&second), "is attached to another cgroup"), "%s",
		  harness_log(&second));
	cr_expect_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM);
}

/* An egretd that answers does the uninstall itself (tests/integration/pins.c); one that holds
 * the state dir but does not answer (here: egretctl asks on another socket) is not raced.
 */
Test(lifecycle, uninstall_is_explicit)
{
	char out[4096], expect[PATH_MAX + 64], nosock[PATH_MAX + 16];

	snprintf(nosock, sizeof(nosock), "%s/none.sock", T->tmpdir);
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "uninstall", "--control", nosock, NULL), 1, "%s",
		     out);
	snprintf(expect, sizeof(expect), "state dir %s is in use by egretd (pid %d)", T->state_dir,
		 (int)T->egretd);
	cr_expect(strstr(out, expect), "expected '%s' in: %s", expect, out);
	cr_expect(strstr(out, "stop it first"), "%s", out);
	cr_expect_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM, "uninstall detached");
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	cr_assert_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM, "a clean stop detached");
	cr_expect_eq(egretctl(T, out, sizeof(out), "uninstall", NULL), 0, "%s", out);
	cr_expect_eq(in_sandbox(T, "box", connect_metadata, NULL), 0, "uninstall left it attached");
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 1, "%s", out);
}

Test(lifecycle, bad_state_dir_fails_closed)
{
	char dir[PATH_MAX + 16];
	const char *argv[] = { "--state-dir", dir, NULL };

	snprintf(dir, sizeof(dir), "%s/not-bpffs", T->tmpdir);
	cr_expect_eq(harness_start(T, argv), 1);
	cr_expect(strstr(harness_log(T), "is not on a bpf file system"), "%s", harness_log(T));
}

Test(lifecycle, stream_is_bracketed_and_gapless)
{
	static char out[1 << 20];
	char seq[32], *argv[] = { EGRETCTL_BIN, "tail", T->sink_path, NULL };
	struct events evs;
	size_t last, denials = 0, lines = 0, nevents;

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	for (int i = 0; i < 3; i++)
		cr_assert_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM);
	usleep(200000);
	cr_assert_eq(harness_stop(T, SIGTERM), 0, "%s", harness_log(T));
	cr_assert_eq(events_read(T->sink_path, &evs), 0);
	/* start, the policy loaded, sandbox box created, 3 denials (with the audit events of the
	 * three sandboxed children), stop
	 */
	cr_assert_geq(evs.n, 7, "got %zu events", evs.n);
	last = evs.n - 1;
	for (size_t i = 0; i < evs.n; i++) {
		cr_expect_eq(evs.ev[i]->seq, i + 1, "seq %llu at %zu",
			     (unsigned long long)evs.ev[i]->seq, i);
		cr_expect_str_eq(evs.ev[i]->stream_id, evs.ev[0]->stream_id);
		cr_expect_eq(strlen(evs.ev[i]->stream_id), 32);
	}
	cr_expect_eq(evs.ev[0]->payload_case, EGRET__V1__EVENT__PAYLOAD_AGENT);
	cr_expect_eq(evs.ev[0]->agent->kind, EGRET__V1__AGENT_LIFECYCLE__KIND__KIND_START);
	cr_expect_eq(evs.ev[0]->agent->programs, nexpected());
	cr_expect_eq(evs.ev[1]->payload_case, EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE);
	cr_expect_str_eq(evs.ev[1]->policy_change->action, "load");
	cr_expect_eq(evs.ev[last]->payload_case, EGRET__V1__EVENT__PAYLOAD_AGENT);
	cr_expect_eq(evs.ev[last]->agent->kind, EGRET__V1__AGENT_LIFECYCLE__KIND__KIND_STOP);
	cr_expect_str_eq(evs.ev[last]->agent->reason, "Terminated");
	for (size_t i = 1; i < last; i++)
		denials += evs.ev[i]->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT;
	cr_expect_eq(denials, 3);
	nevents = evs.n;
	events_free(&evs);

	cr_assert_eq(run_cmd(argv, out, sizeof(out)), 0, "%s", out);
	/* 64-bit integers as strings, zeros written (the test runs as root: uid 0), the time in
	 * RFC 3339 and the event's type named; every line one valid JSON object
	 */
	for (int i = 1; i <= 7; i++) {
		snprintf(seq, sizeof(seq), "\"seq\":\"%d\",", i);
		cr_expect(strstr(out, seq), "tail output lacks %s:\n%s", seq, out);
	}
	cr_expect(strstr(out, "\"dst_addr\":\"169.254.169.254\""), "%s", out);
	cr_expect(strstr(out, "\"verdict\":\"VERDICT_DENY\""), "%s", out);
	cr_expect(strstr(out, "\"sandbox\":{\"cgroup_id\":\""), "%s", out);
	cr_expect(strstr(out, "\"uid\":0,"), "%s", out);
	cr_expect(strstr(out, "\"event\":\"net_connect\",\"net_connect\":{"), "%s", out);
	cr_expect(strstr(out, "\"event\":\"agent\""), "%s", out);
	cr_expect(strstr(out, "\"time\":\"20"), "%s", out);
	for (char *line = out, *nl; *line; line = nl + 1, lines++) {
		nl = strchr(line, '\n');
		cr_assert(nl, "unterminated line: %s", line);
		cr_expect(jsoncheck_valid(line, (size_t)(nl - line)), "not JSON: %.*s",
			  (int)(nl - line), line);
		cr_expect(strstr(line, "\"time\":\"") && strstr(line, "\"event\":\""), "%.*s",
			  (int)(nl - line), line);
	}
	cr_expect_eq(lines, nevents);
}

/* ---- bpffs and tracefs --------------------------------------------------------------------- */

/* How many file systems of fstype /proc/self/mountinfo shows mounted on dir. */
static int mounts_on(const char *dir, const char *fstype)
{
	char line[4096], point[4096], type[64];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int n = 0;

	while (f && fgets(line, sizeof(line), f)) {
		const char *sep = strstr(line, " - ");

		if (sep && sscanf(line, "%*s %*s %*s %*s %4095s", point) == 1 &&
		    sscanf(sep + 3, "%63s", type) == 1)
			n += !strcmp(point, dir) && !strcmp(type, fstype);
	}
	if (f)
		fclose(f);
	return n;
}

/* The bpf and tracefs lines of mountinfo, for a failure message. */
static const char *fs_mounts(void)
{
	static char buf[8192];
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	size_t used = 0;

	buf[0] = '\0';
	while (f && fgets(line, sizeof(line), f)) {
		if ((strstr(line, " - bpf ") || strstr(line, " - tracefs ")) &&
		    used + strlen(line) < sizeof(buf))
			used += (size_t)snprintf(buf + used, sizeof(buf) - used, "%s", line);
	}
	if (f)
		fclose(f);
	return buf;
}

/* Move the test process into a private mount namespace: what it unmounts stays mounted for
 * everyone else.
 */
static void private_mounts(void)
{
	cr_assert_eq(unshare(CLONE_NEWNS), 0);
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
}

/* Unmount bpffs and tracefs (every layer, wherever libbpf may look) until neither is left. */
static void unmount_bpffs_and_tracefs(void)
{
	static const char *const dirs[] = { EGRET_BPFFS, EGRET_TRACEFS,
					    "/sys/kernel/debug/tracing" };
	struct statfs sfs;

	for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
		while (umount2(dirs[i], MNT_DETACH) == 0)
			;
	cr_assert(statfs(EGRET_BPFFS, &sfs) == 0 && sfs.f_type != BPF_FS_MAGIC,
		  "bpffs still mounted");
	cr_assert(statfs(EGRET_TRACEFS, &sfs) == 0 && sfs.f_type != TRACEFS_MAGIC,
		  "tracefs still mounted");
	cr_assert_eq(mounts_on(EGRET_BPFFS, "bpf") + mounts_on(EGRET_TRACEFS, "tracefs"), 0, "%s",
		     fs_mounts());
}

/* In a private mount namespace without bpffs and tracefs, egretd mounts them itself. */
Test(lifecycle, bpffs_and_tracefs_are_mounted_when_absent)
{
	struct statfs sfs;

	private_mounts();
	unmount_bpffs_and_tracefs();
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect(strstr(harness_log(T), "mounted bpffs on /sys/fs/bpf"), "%s", harness_log(T));
	cr_expect(strstr(harness_log(T), "mounted tracefs on /sys/kernel/tracing"), "%s",
		  harness_log(T));
	cr_expect(statfs(EGRET_BPFFS, &sfs) == 0 && sfs.f_type == BPF_FS_MAGIC);
	cr_expect(statfs(EGRET_TRACEFS, &sfs) == 0 && sfs.f_type == TRACEFS_MAGIC);
	cr_expect_eq(mounts_on(EGRET_TRACEFS, "tracefs"), 1, "%s", fs_mounts());
	cr_expect_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM);
}

static size_t count_in(const char *text, const char *word)
{
	size_t n = 0;

	for (const char *p = text; (p = strstr(p, word)); p += strlen(word))
		n++;
	return n;
}

/* Spawn e[from..to) in the caller's mount namespace, each waiting for a byte on gate. */
static void spawn_gated(struct egret_instance *const e[], int from, int to, int gate, int nfd[])
{
	for (int i = from; i < to; i++) {
		nfd[i] = harness_spawn(e[i], NULL, gate);
		cr_assert_geq(nfd[i], 0, "%s", strerror(-nfd[i]));
	}
}

/* Release the n egretds waiting on gate at the same moment. */
static void open_gate(int gate[2], int n)
{
	char go[NSTARTING];

	memset(go, 'g', sizeof(go));
	cr_assert_eq(write(gate[1], go, (size_t)n), n);
	close(gate[0]);
	close(gate[1]);
}

/* Spawn n egretds and release them at the same moment; their notify sockets in nfd. */
static void release_at_once(struct egret_instance *const e[], int n, int nfd[])
{
	int gate[2];

	cr_assert_eq(pipe2(gate, O_CLOEXEC), 0);
	spawn_gated(e, 0, n, gate[0], nfd);
	open_gate(gate, n);
}

/* egretd has exited, or holds a BPF map or program: it is past mounting bpffs and tracefs. */
static bool past_mounts(pid_t pid)
{
	char dir[64], fd[PATH_MAX], target[64];
	struct dirent *de;
	siginfo_t si = { 0 };
	bool past = false;
	DIR *d;

	if (waitid(P_PID, pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid)
		return true;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	while (d && !past && (de = readdir(d))) {
		ssize_t n;

		snprintf(fd, sizeof(fd), "%s/%s", dir, de->d_name);
		n = readlink(fd, target, sizeof(target) - 1);
		target[n > 0 ? n : 0] = '\0';
		past = strstr(target, "anon_inode:bpf-map") ||
		       strstr(target, "anon_inode:bpf-prog");
	}
	if (d)
		closedir(d);
	return past;
}

static void wait_past_mounts(struct egret_instance *const e[])
{
	for (int waited = 0; waited < 60000; waited += 10) {
		int n = 0;

		for (int i = 0; i < NSTARTING; i++)
			n += past_mounts(e[i]->egretd);
		if (n == NSTARTING)
			return;
		usleep(10000);
	}
	cr_assert_fail("the egretds did not get past their mounts in 60 s");
}

/* SIGKILL every egretd of a quick round; each must still have been running. */
static void stop_all(struct egret_instance *const e[], int nfd[], int round)
{
	for (int i = 0; i < NSTARTING; i++) {
		int rc = harness_stop(e[i], SIGKILL);

		close(nfd[i]);
		cr_expect_eq(rc, 128 + SIGKILL, "round %d: egretd %s exited (%d):\n%s", round,
			     e[i]->name, rc, harness_log(e[i]));
	}
}

/* One bpffs and one tracefs mounted in the caller's mount namespace. */
static void expect_one_each(const char *where, int round)
{
	cr_expect_eq(mounts_on(EGRET_BPFFS, "bpf"), 1, "round %d, %s:\n%s", round, where,
		     fs_mounts());
	cr_expect_eq(mounts_on(EGRET_TRACEFS, "tracefs"), 1, "round %d, %s:\n%s", round, where,
		     fs_mounts());
}

/* The egretds' logs say bpffs and tracefs were mounted `times` times so far. */
static void expect_mounted_times(struct egret_instance *const e[], size_t times)
{
	size_t bpffs = 0, tracefs = 0;

	for (int i = 0; i < NSTARTING; i++) {
		bpffs += count_in(harness_log(e[i]), "mounted bpffs on");
		tracefs += count_in(harness_log(e[i]), "mounted tracefs on");
	}
	cr_expect_eq(bpffs, times, "bpffs mounted %zu times, expected %zu", bpffs, times);
	cr_expect_eq(tracefs, times, "tracefs mounted %zu times, expected %zu", tracefs, times);
}

static void others_for(struct egret_instance *e[])
{
	e[0] = T;
	for (int i = 1; i < NSTARTING; i++)
		e[i] = other_instance();
}

/* Several egretds released at the same moment on a host without bpffs and tracefs (the
 * integration suite's own first run, --jobs 2, on a fresh machine): each file system is
 * mounted once, not stacked, and every egretd comes up. A race may not show in one round:
 * QUICK_ROUNDS of NSTARTING egretds are stopped once past their mounts, and NREADY of them
 * are brought up in the last round.
 */
#define QUICK_ROUNDS 10
Test(lifecycle, egretds_starting_at_once_mount_bpffs_and_tracefs_once, .timeout = 400)
{
	struct egret_instance *e[NSTARTING];
	int nfd[NSTARTING];

	others_for(e);
	private_mounts();
	for (int round = 1; round <= QUICK_ROUNDS; round++) {
		unmount_bpffs_and_tracefs();
		release_at_once(e, NSTARTING, nfd);
		wait_past_mounts(e);
		expect_one_each("one namespace", round);
		expect_mounted_times(e, (size_t)round);
		stop_all(e, nfd, round);
	}
	unmount_bpffs_and_tracefs();
	release_at_once(e, NREADY, nfd);
	for (int i = 0; i < NREADY; i++) {
		int rc = harness_wait_ready(e[i], nfd[i], 180000);

		cr_expect_eq(rc, 0, "egretd %s did not come up (%d):\n%s", e[i]->name, rc,
			     harness_log(e[i]));
	}
	expect_one_each("one namespace", QUICK_ROUNDS + 1);
	expect_mounted_times(e, QUICK_ROUNDS + 1);
	cr_expect_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM);
}

static int ns_fd(void)
{
	int fd = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s", strerror(errno));
	return fd;
}

/* The mount namespace of a process, as "mnt:[inode]". */
static const char *mnt_ns(pid_t pid)
{
	static char out[2][64];
	static int next;
	char path[64], *buf = out[next++ % 2];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/ns/mnt", (int)pid);
	n = readlink(path, buf, sizeof(out[0]) - 1);
	buf[n > 0 ? n : 0] = '\0';
	return buf;
}

static void enter_ns(int fd)
{
	cr_assert_eq(setns(fd, CLONE_NEWNS), 0, "setns: %s", strerror(errno));
}

/* Half the egretds in mount namespace A, half in B, released at the same moment. With /sys
 * shared between A and B, a mount in one appears in the other: bpffs and tracefs are mounted
 * once between them; with private copies, once in each.
 */
static void race_in_two_namespaces(bool shared)
{
	struct egret_instance *e[NSTARTING];
	int nfd[NSTARTING], a, b, gate[2];
	size_t per_round = shared ? 1 : 2;

	others_for(e);
	private_mounts();
	unmount_bpffs_and_tracefs();
	if (shared)
		cr_assert_eq(mount(NULL, "/sys", NULL, MS_SHARED, NULL), 0, "%s", strerror(errno));
	a = ns_fd();
	cr_assert_eq(unshare(CLONE_NEWNS), 0);
	b = ns_fd();
	for (int round = 1; round <= QUICK_ROUNDS / 2; round++) {
		enter_ns(a);
		unmount_bpffs_and_tracefs();
		enter_ns(b);
		unmount_bpffs_and_tracefs();
		cr_assert_eq(pipe2(gate, O_CLOEXEC), 0);
		spawn_gated(e, 0, NSTARTING / 2, gate[0], nfd);
		enter_ns(a);
		spawn_gated(e, NSTARTING / 2, NSTARTING, gate[0], nfd);
		cr_assert_str_neq(mnt_ns(e[0]->egretd), mnt_ns(e[NSTARTING - 1]->egretd),
				  "all egretds in one mount namespace");
		open_gate(gate, NSTARTING);
		wait_past_mounts(e);
		expect_one_each("namespace A", round);
		enter_ns(b);
		expect_one_each("namespace B", round);
		expect_mounted_times(e, per_round * (size_t)round);
		stop_all(e, nfd, round);
	}
	close(a);
	close(b);
}

Test(lifecycle, egretds_in_private_mount_namespaces_each_mount_their_own, .timeout = 300)
{
	race_in_two_namespaces(false);
}

Test(lifecycle, egretds_in_peer_mount_namespaces_mount_once_between_them, .timeout = 300)
{
	race_in_two_namespaces(true);
}

/* ---- one egretd per state dir, spool and control socket ---------------------------------- */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The sorted names of dir's entries, each as "name=N" with N from fn; "" when dir is absent.
 * A spool's cursors and lock files are left out.
 */
static void dir_listing(const char *dir, unsigned long long (*fn)(const char *), char *out,
			size_t size)
{
	char *names[256], path[PATH_MAX * 2];
	struct dirent *de;
	size_t n = 0, used = 0;
	DIR *d = opendir(dir);

	out[0] = '\0';
	while (d && (de = readdir(d)) && n < 256) {
		/* a spool's cursors file is replaced whenever a sink acks: not a segment */
		if (de->d_name[0] != '.' && strncmp(de->d_name, "cursors", 7) &&
		    strcmp(de->d_name, "lock"))
			names[n++] = strdup(de->d_name);
	}
	if (d)
		closedir(d);
	qsort(names, n, sizeof(names[0]), cmp_str);
	for (size_t i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (used < size)
			used += (size_t)snprintf(out + used, size - used, "%s=%llu ", names[i],
						 fn(path));
		free(names[i]);
	}
}

/* The id of the program a pinned link runs. */
static unsigned long long link_prog(const char *pin)
{
	struct bpf_link_info info;
	__u32 len = sizeof(info);
	int fd = bpf_obj_get(pin);
	unsigned long long id = 0;

	memset(&info, 0, sizeof(info));
	if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &info, &len) == 0)
		id = info.prog_id;
	if (fd >= 0)
		close(fd);
	return id;
}

static unsigned long long inode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) ? 0 : (unsigned long long)st.st_ino;
}

/* What a second egretd must not touch: the first's pinned programs and spool files. */
struct instance_state {
	char progs[8192];
	char spool[4096];
};

static void instance_state(const struct egret_instance *e, struct instance_state *st)
{
	char links[PATH_MAX + 8];

	snprintf(links, sizeof(links), "%s/links", e->state_dir);
	dir_listing(links, link_prog, st->progs, sizeof(st->progs));
	dir_listing(e->spool_dir, inode_of, st->spool, sizeof(st->spool));
}

static bool other_stream(const Egret__V1__Event *ev, const void *arg)
{
	return strcmp(ev->stream_id, arg) != 0;
}

static bool is_stop(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_AGENT &&
	       ev->agent->kind == EGRET__V1__AGENT_LIFECYCLE__KIND__KIND_STOP;
}

static bool is_denial(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT;
}

/* The first egretd after a second one failed: its programs and spool files are the same, its
 * stream has no event of another stream and no stop, and it still answers and enforces.
 */
static void expect_untouched(const struct instance_state *before, const char *stream,
			     size_t denials)
{
	struct instance_state after;
	struct events evs;
	char out[8192], running[64];
	size_t n;

	instance_state(T, &after);
	cr_expect_str_eq(after.progs, before->progs, "the pinned programs changed: from %s to %s",
			 before->progs, after.progs);
	cr_expect_str_eq(after.spool, before->spool, "the spool's segments changed: from %s to %s",
			 before->spool, after.spool);
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	snprintf(running, sizeof(running), "egretd: running (pid %d,", (int)T->egretd);
	cr_expect(strstr(out, running), "the first egretd does not answer:\n%s", out);
	cr_expect_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM);
	cr_assert_eq(events_wait_count(T->sink_path, is_denial, NULL, denials + 1, 5000, &evs), 0,
		     "the first egretd stopped reporting");
	events_find(&evs, other_stream, stream, &n);
	cr_expect_eq(n, 0, "%zu events of another stream in the first's sink", n);
	events_find(&evs, is_stop, NULL, &n);
	cr_expect_eq(n, 0, "a stop event in the first's stream");
	events_free(&evs);
}

/* A second egretd on the first's state dir, on its spool only, on its control socket only:
 * each exits 1 at once naming the first's pid, and the first goes on untouched.
 */
Test(lifecycle, a_second_egretd_on_an_instance_s_paths_changes_nothing)
{
	static const struct {
		const char *what, *option;
		size_t off;
	} shared[] = {
		{ "state dir", "--state-dir", offsetof(struct egret_instance, state_dir) },
		{ "spool", "--spool", offsetof(struct egret_instance, spool_dir) },
		{ "control socket", "--control", offsetof(struct egret_instance, control) },
	};
	struct instance_state before;
	struct events evs;
	char stream[33];

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_assert_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM);
	cr_assert_eq(events_wait(T->sink_path, is_denial, NULL, 5000, &evs), 0);
	snprintf(stream, sizeof(stream), "%s", evs.ev[0]->stream_id);
	events_free(&evs);
	for (size_t i = 0; i < sizeof(shared) / sizeof(shared[0]); i++) {
		struct egret_instance *second = other_instance();
		const char *path = (const char *)T + shared[i].off;
		char expect[PATH_MAX + 256];
		int rc;

		snprintf((char *)second + shared[i].off, PATH_MAX, "%s", path);
		if (!strcmp(shared[i].what, "state dir"))
			snprintf(second->cgroup_root, PATH_MAX, "%s", T->cgroup_root);
		instance_state(T, &before);
		cr_assert(before.progs[0] && before.spool[0], "nothing to compare: '%s' '%s'",
			  before.progs, before.spool);
		rc = harness_start(second, NULL);
		if (rc == 0)
			harness_stop(second, SIGKILL);
		cr_expect_eq(rc, 1, "a second egretd on the %s: %d\n%s", shared[i].what, rc,
			     harness_log(second));
		snprintf(expect, sizeof(expect),
			 "error: %s %s is in use by egretd (pid %d): stop it first, or give this "
			 "instance its own %s",
			 shared[i].what, path, (int)T->egretd, shared[i].option);
		cr_expect(strstr(harness_log(second), expect), "expected '%s' in:\n%s", expect,
			  harness_log(second));
		expect_untouched(&before, stream, i + 1);
	}
}
