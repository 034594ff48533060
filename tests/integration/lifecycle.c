/* egretd's life and death: fail closed, enforcement that outlives egretd, adoption of pins by a
 * restarted egretd with no unprotected moment, egretctl refusing to run anything unprotected,
 * explicit uninstall, and the agent events that bracket a stream.
 */
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

#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "../fuzz/jsoncheck.h"
#include "cgroup.h"
#include "harness.h"
#include "loader.h"
#include "paths.h"

#define PORT 80

static int listener;

static void setup(void)
{
	static struct egret_instance inst;

	harness_require_root();
	T = &inst;
	cr_assert_eq(harness_init(T), 0);
	cr_assert_eq(netns_new(), 0);
	cr_assert_eq(netns_addr("lo", "169.254.169.254/32"), 0);
	cr_assert_eq(netns_addr("lo", "fd00:ec2::254/128"), 0);
	listener = tcp_listen("169.254.169.254", PORT);
	cr_assert(listener >= 0);
}

static void teardown(void)
{
	close(listener);
	harness_cleanup(T);
}

static int connect_metadata(void *arg)
{
	return tcp_connect("169.254.169.254", PORT, AF_INET, 2000);
}

TestSuite(lifecycle, .init = setup, .fini = teardown, .timeout = 120);

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
	snprintf(out, sizeof(out), "(%u adopted)", loader__nprogs());
	cr_expect(strstr(harness_log(T), out), "restart did not adopt the pins:\n%s",
		  harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	snprintf(sandbox, sizeof(sandbox), "%u adopted from a previous egretd", loader__nprogs());
	cr_expect(strstr(out, sandbox), "%s", out);
}

Test(lifecycle, run_refuses_while_nothing_is_attached)
{
	char out[4096], marker[PATH_MAX + 16];
	struct stat st;

	snprintf(marker, sizeof(marker), "%s/ran", T->tmpdir);
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
	cr_assert_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "named", "--", "cat",
			      "/proc/self/cgroup", NULL),
		     0, "%s", out);
	snprintf(expect, sizeof(expect), "0::%s/named\n", T->cgroup_root + strlen(T->cgroup_mount));
	cr_expect(strstr(out, expect), "expected '%s' in:\n%s", expect, out);
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

	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "linger", "--", "sh", "-c",
			      "sleep 0.5 & exit 3", NULL),
		     3, "%s", out);
	cr_expect_not(sandbox_exists("linger"), "sandbox left behind by a lingering child");

	cr_assert_eq(sandbox_path(T, "nested", expect, sizeof(expect)), 0);
	snprintf(script, sizeof(script), "mkdir %s/inner", expect);
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "nested", "--", "sh", "-c",
			      script, NULL),
		     0, "%s", out);
	cr_expect_not(sandbox_exists("nested"), "a cgroup inside the sandbox kept it");

	cr_assert_eq(sandbox_path(T, "kept", expect, sizeof(expect)), 0);
	cr_assert_eq(mkdir(expect, 0755), 0);
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "kept", "--", "sh", "-c",
			      "cat /proc/$PPID/cgroup", NULL),
		     0, "%s", out);
	cr_expect(sandbox_exists("kept"), "a sandbox egretctl did not create was removed");
	snprintf(expect, sizeof(expect), "0::%s/kept\n", T->cgroup_root + strlen(T->cgroup_mount));
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

	for (; ms > 0; ms -= 20) {
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
	char log[PATH_MAX + 16], ready[PATH_MAX + 16], script[PATH_MAX * 2 + 64];
	char *trap[] = { "sh", "-c", script, NULL }, *sleeper[] = { "sh", "-c", script, NULL };
	int status;
	pid_t pid;

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	snprintf(log, sizeof(log), "%s/run.log", T->tmpdir);
	snprintf(ready, sizeof(ready), "%s/ready", T->tmpdir);
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

Test(lifecycle, pins_of_another_cgroup_are_refused)
{
	char other[PATH_MAX + 16];
	const char *argv[] = { "--cgroup", other, NULL };
	struct egret_instance second;

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	/* a second egretd on another cgroup root but the same state dir */
	second = *T;
	snprintf(other, sizeof(other), "%s/nested", T->cgroup_root);
	snprintf(second.log_path, sizeof(second.log_path), "%s/second.log", T->tmpdir);
	snprintf(second.control, sizeof(second.control), "%s/second.sock", T->tmpdir);
	cr_expect_eq(harness_start(&second, argv), 1, "%s", harness_log(&second));
	cr_expect(strstr(harness_log(&second), "is attached to another cgroup"), "%s",
		  harness_log(&second));
	cr_expect_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM);
}

Test(lifecycle, uninstall_is_explicit)
{
	char out[4096];

	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "uninstall", NULL), 1, "%s", out);
	cr_expect(strstr(out, "stop it first"), "%s", out);
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
	cr_expect_eq(evs.ev[0]->agent->programs, loader__nprogs());
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

/* In a private mount namespace without bpffs, egretd mounts one itself. */
Test(lifecycle, bpffs_is_mounted_when_absent)
{
	struct statfs sfs;

	cr_assert_eq(unshare(CLONE_NEWNS), 0);
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	while (umount2(EGRET_BPFFS, MNT_DETACH) == 0)
		;
	cr_assert(statfs(EGRET_BPFFS, &sfs) == 0 && sfs.f_type != BPF_FS_MAGIC,
		  "bpffs still mounted");
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect(strstr(harness_log(T), "mounted bpffs on /sys/fs/bpf"), "%s", harness_log(T));
	cr_expect(statfs(EGRET_BPFFS, &sfs) == 0 && sfs.f_type == BPF_FS_MAGIC);
	cr_expect_eq(in_sandbox(T, "box", connect_metadata, NULL), EPERM);
}
