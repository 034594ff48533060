/* What a root process in a sandbox might try besides sockets: bpf(2), io_uring, leaving its
 * sandbox's cgroup by cgroup.procs or clone3(CLONE_INTO_CGROUP). Each is stopped and reported;
 * the same moves within the sandbox, or from outside egret's root, are left alone (the
 * positive controls).
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cgroup.h"
#include "harness.h"
#include "util.h"

static void setup(void)
{
	harness_setup(true);
	harness_setup_start(NULL, NULL);
}

TestSuite(confine, .init = setup, .fini = harness_teardown, .timeout = 60);

static bool is_tamper(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == (Egret__V1__Tamper__Kind)(long)arg;
}

static const Egret__V1__Event *wait_tamper(struct events *evs, long kind)
{
	if (events_wait(T->sink_path, is_tamper, (void *)kind, 5000, evs))
		return NULL;
	return events_find(evs, is_tamper, (void *)kind, NULL);
}

static bool killed(int status)
{
	return status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static int call_bpf(void *arg)
{
	char *argv[] = { EGRET_PROBE_BIN, "bpf", NULL };

	execv(argv[0], argv);
	return 127;
}

Test(confine, bpf_from_a_sandbox_is_killed)
{
	const Egret__V1__Event *ev;
	struct events evs;

	cr_expect(killed(in_sandbox_status(T, "box", call_bpf, NULL)));
	cr_expect_eq(in_sandbox(T, NULL, call_bpf, NULL), 0, "positive control");
	ev = wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_BPF);
	cr_assert(ev, "no tamper event");
	cr_expect(ev->tamper->killed);
	cr_expect_str_eq(ev->sandbox->name, "box");
	cr_expect_str_eq(ev->process->comm, "egret_probe");
	events_free(&evs);
}

/* is the program pinned as <state>/links/<prog>? */
static bool linked(const char *prog)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/links/%s", T->state_dir, prog);
	return access(path, F_OK) == 0;
}

/* On a kernel without tp_btf/sys_enter (as on one whose BTF lacks it) egret_csys is not loaded
 * and bpf(2)'s own tracepoint (egret_bpf) judges it: killed all the same. Where egret_csys is
 * loaded, it judges bpf(2) and egret_bpf is not loaded (and status does not count it missing).
 */
Test(confine, bpf_is_judged_without_sys_enter_btf_too)
{
	const char *gap[] = { "--without-kernel-feature", "sys_enter_btf", "--accept-kernel-gap",
			      "compat", NULL };
	const Egret__V1__Event *ev;
	struct events evs;
	char out[8192];

	cr_assert_eq(egretctl(T, out, sizeof(out), "status", "--json", NULL), 0, "%s", out);
	cr_expect(strstr(out, "\"egret_bpf\""), "compat names egret_bpf as not loaded: %s", out);
	cr_expect(linked("egret_csys") && !linked("egret_bpf"));
	cr_assert_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(!strstr(out, "NOT attached"), "%s", out);
	harness_stop(T, SIGTERM);
	cr_assert_eq(harness_start(T, gap), 0, "egretd did not start:\n%s", harness_log(T));
	cr_assert_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(!strstr(out, "egret_bpf"), "egret_bpf not loaded without egret_csys: %s", out);
	cr_expect(strstr(out, "egret_csys"), "%s", out);
	cr_expect(!strstr(out, "NOT attached"), "%s", out);
	cr_expect(!linked("egret_csys") && linked("egret_bpf"));
	cr_expect(killed(in_sandbox_status(T, "box", call_bpf, NULL)));
	cr_expect_eq(in_sandbox(T, NULL, call_bpf, NULL), 0, "positive control");
	ev = wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_BPF);
	cr_assert(ev, "no tamper event");
	cr_expect(ev->tamper->killed);
	cr_expect_str_eq(ev->sandbox->name, "box");
	events_free(&evs);
}

/* egretctl run's seccomp profile refuses bpf(2), AF_PACKET and io_uring before they run, with
 * an errno, and each refusal is a Tamper event; with --privileged (a sandbox a runtime placed
 * with full privilege) the kernel hooks stop them instead.
 */
Test(confine, egretctl_run_stops_bpf_before_it_runs)
{
	char out[4096];
	const Egret__V1__Event *ev;
	struct events evs;
	int rc;

	rc = egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--", EGRET_PROBE_BIN, "bpf",
		      NULL);
	cr_expect_eq(rc, 0, "bpf(2) under egretctl run: %d %s", rc, out);
	cr_expect(strstr(out, "bpf returned -1 (Operation not permitted)"), "%s", out);
	ev = wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_SECCOMP);
	cr_assert(ev, "no tamper event");
	cr_expect_eq(ev->tamper->target, SYS_bpf);
	cr_expect_str_eq(ev->tamper->syscall, "bpf");
	cr_expect_str_eq(ev->sandbox->name, "box");
	cr_expect_str_eq(ev->process->comm, "egret_probe");
	events_free(&evs);

	rc = egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--", EGRET_PROBE_BIN,
		      "packet", NULL);
	cr_expect_eq(rc, 0, "AF_PACKET under egretctl run: %d %s", rc, out);
	cr_expect(strstr(out, "packet returned -1 (Operation not permitted)"), "%s", out);
	rc = egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--", EGRET_PROBE_BIN,
		      "uring", NULL);
	cr_expect_eq(rc, 0, "io_uring under egretctl run should fail with ENOSYS: %d %s", rc, out);
	cr_expect(strstr(out, "Function not implemented"), "%s", out);

	/* no profile: the tracepoints kill them on their way back */
	rc = egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--privileged", "--",
		      EGRET_PROBE_BIN, "bpf", NULL);
	cr_expect_eq(rc, 128 + SIGKILL, "bpf(2) under --privileged: %d %s", rc, out);
	rc = egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--privileged", "--",
		      EGRET_PROBE_BIN, "packet", NULL);
	cr_expect_eq(rc, 128 + SIGKILL, "AF_PACKET under --privileged: %d %s", rc, out);
}

static int call_uring(void *arg)
{
	char *argv[] = { EGRET_PROBE_BIN, "uring", NULL };

	execv(argv[0], argv);
	return 127;
}

Test(confine, io_uring_from_a_sandbox_is_killed)
{
	struct events evs;

	cr_expect(killed(in_sandbox_status(T, "box", call_uring, NULL)));
	cr_expect_eq(in_sandbox(T, NULL, call_uring, NULL), 0, "positive control");
	cr_expect(wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_IO_URING));
	events_free(&evs);
}

static int move_self(void *arg)
{
	int err = cgroup__join(arg, getpid());

	/* when the move escapes the sandbox, SIGKILL is already pending here */
	return err ? 100 : 0;
}

Test(confine, leaving_the_sandbox_is_killed)
{
	char inside[PATH_MAX];
	const Egret__V1__Event *ev;
	struct events evs;

	cr_expect(killed(in_sandbox_status(T, "box", move_self, T->cgroup_mount)),
		  "moving into the host's root cgroup");
	cr_expect(killed(in_sandbox_status(T, "box", move_self, T->cgroup_root)),
		  "moving into egret's root cgroup");
	snprintf(inside, sizeof(inside), "%s/other", T->cgroup_root);
	mkdir(inside, 0755);
	cr_expect(killed(in_sandbox_status(T, "box", move_self, inside)),
		  "moving into another sandbox");
	/* positive controls: within its own sandbox, and from outside egret's root */
	snprintf(inside, sizeof(inside), "%s/box/nested", T->cgroup_root);
	cr_assert_eq(mkdir(inside, 0755), 0);
	cr_expect_eq(in_sandbox(T, "box", move_self, inside), 0);
	cr_expect_eq(in_sandbox(T, NULL, move_self, inside), 0);
	ev = wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_CGROUP_ESCAPE);
	cr_assert(ev, "no tamper event");
	cr_expect(ev->tamper->killed);
	cr_expect_neq(ev->tamper->other_pid, 0);
	events_free(&evs);
}

static int clone_into(void *arg)
{
	struct clone_args args;
	char marker[PATH_MAX + 16];
	int fd = open(arg, O_RDONLY | O_DIRECTORY);
	long pid;

	snprintf(marker, sizeof(marker), "%s/escaped", T->tmpdir);
	memset(&args, 0, sizeof(args));
	args.flags = CLONE_INTO_CGROUP;
	args.exit_signal = SIGCHLD;
	args.cgroup = (unsigned long long)fd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0) {
		/* the child: if it ever runs outside the sandbox, it leaves a mark */
		close(open(marker, O_CREAT | O_WRONLY, 0600));
		_exit(0);
	}
	if (pid < 0)
		return 100;
	waitpid((pid_t)pid, NULL, 0);
	return 0;
}

Test(confine, clone_into_another_cgroup_is_killed)
{
	char marker[PATH_MAX + 16];
	struct stat st;

	snprintf(marker, sizeof(marker), "%s/escaped", T->tmpdir);
	cr_expect(killed(in_sandbox_status(T, "box", clone_into, T->cgroup_mount)));
	cr_expect_neq(stat(marker, &st), 0, "the child ran outside the sandbox");
	/* positive control: from outside egret's root the same clone3 works */
	cr_expect_eq(in_sandbox(T, NULL, clone_into, T->cgroup_mount), 0);
	cr_expect_eq(stat(marker, &st), 0, "positive control: the child did not run");
}
