/* Capabilities at exec: every exec in a sandbox reports what the new image holds over the host
 * (its posture), and with --require-unprivileged a sandboxed process holding CAP_SYS_ADMIN,
 * CAP_NET_ADMIN, CAP_SYS_PTRACE, CAP_SYS_MODULE, CAP_BPF or CAP_PERFMON there is killed at its
 * exec, or at the move when it enters a sandbox itself. The positive controls: a process that
 * dropped its capabilities, and egretctl run (its own user namespace).
 */
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cgroup.h"
#include "harness.h"
#include "pbjson.h"
#include "util.h"

#define CAP_SYS_ADMIN_BIT (1ull << 21)

static const char *const require[] = { "--require-unprivileged", NULL };

TestSuite(caps, .init = harness_setup_netns, .fini = harness_teardown, .timeout = 90);

static void start_ok(const char *const extra[])
{
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
}

static bool killed(int status)
{
	return status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static bool exited_0(int status)
{
	return status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static bool is_exec_of(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_EXEC && ev->exec->n_args > 1 &&
	       !strcmp(ev->exec->args[1], arg);
}

static bool is_privileged_of(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_PRIVILEGED &&
	       ev->process->pid == (uint32_t)(long)arg;
}

static bool has_cap(const Egret__V1__ProcessExec__Posture *p, const char *name)
{
	for (size_t i = 0; i < p->n_capabilities; i++) {
		if (!strcmp(p->capabilities[i], name))
			return true;
	}
	return false;
}

static void box_dir(char *out, size_t size)
{
	cr_assert_eq(sandbox_path(T, "s1", out, size), 0);
	cr_assert(mkdir(out, 0755) == 0 || errno == EEXIST, "%s: %s", out, strerror(errno));
}

enum how {
	AS_ROOT,       /* keeps every capability */
	DROP_UID,      /* setresuid(65534): the kernel clears the capabilities */
	DROP_BOUNDING, /* uid 0, every capability out of the bounding set: none after exec */
};

/* Drop what how says, then wait for a byte on fd (the host places it meanwhile), then exec
 * /bin/true MARKER.
 */
static void child_exec(enum how how, int fd, const char *marker)
{
	char *argv[] = { "/bin/true", (char *)marker, NULL };
	char c;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (how == DROP_BOUNDING) {
		for (int cap = 0; cap < 64; cap++) {
			if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) && errno != EINVAL)
				_exit(96);
		}
	}
	if (how == DROP_UID && (setgroups(0, NULL) || setresgid(65534, 65534, 65534) ||
				setresuid(65534, 65534, 65534)))
		_exit(97);
	if (read(fd, &c, 1) != 1)
		_exit(98);
	execv(argv[0], argv);
	_exit(127);
}

/* A child the host places in s1 (a runtime's move: not judged), which then execs. */
static int placed_exec(enum how how, const char *marker, pid_t *pid_out)
{
	char box[PATH_MAX];
	int p[2], status;
	pid_t pid;

	box_dir(box, sizeof(box));
	cr_assert_eq(pipe(p), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		close(p[1]);
		child_exec(how, p[0], marker);
	}
	close(p[0]);
	cr_assert_eq(cgroup__join(box, pid), 0);
	cr_assert_eq(write(p[1], "g", 1), 1);
	close(p[1]);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (pid_out)
		*pid_out = pid;
	return status;
}

/* A root shell joined by hand (it writes its own pid, `echo $$ > cgroup.procs`), then execs. */
static int joined_exec(const char *marker, pid_t *pid_out)
{
	char box[PATH_MAX];
	int status;
	pid_t pid;

	box_dir(box, sizeof(box));
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		char *argv[] = { "/bin/true", (char *)marker, NULL };

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cgroup__join(box, getpid()))
			_exit(100);
		execv(argv[0], argv);
		_exit(127);
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	if (pid_out)
		*pid_out = pid;
	return status;
}

static const Egret__V1__ProcessExec__Posture *wait_posture(struct events *evs, const char *marker)
{
	const Egret__V1__Event *ev;

	if (events_wait(T->sink_path, is_exec_of, marker, 5000, evs))
		return NULL;
	ev = events_find(evs, is_exec_of, marker, NULL);
	return ev ? ev->exec->posture : NULL;
}

/* Without the flag: reported, not killed. */
Test(caps, a_root_exec_in_a_sandbox_reports_its_capabilities)
{
	const Egret__V1__ProcessExec__Posture *p;
	struct events evs;
	int status;

	start_ok(NULL);
	status = joined_exec("caps-root", NULL);
	cr_expect(exited_0(status), "killed without --require-unprivileged: %#x", status);
	p = wait_posture(&evs, "caps-root");
	cr_assert(p, "no exec event with a posture:\n%s", harness_log(T));
	cr_expect(p->privileged);
	cr_expect(p->initial_user_ns);
	cr_expect_eq(p->user_ns_level, 0);
	cr_expect(p->effective & CAP_SYS_ADMIN_BIT);
	cr_expect(p->permitted & CAP_SYS_ADMIN_BIT);
	/* the JSON a SIEM reads (stdout json, egretctl tail, OTLP bodies) carries it */
	{
		const Egret__V1__Event *ev = events_find(&evs, is_exec_of, "caps-root", NULL);
		char *json = NULL;
		size_t len = 0;
		FILE *f = open_memstream(&json, &len);

		cr_assert(f);
		pbjson__event(f, ev);
		fclose(f);
		cr_expect(strstr(json, "\"posture\":{") && strstr(json, "\"privileged\":true") &&
				  strstr(json, "\"CAP_SYS_ADMIN\""),
			  "%s", json);
		free(json);
	}
	for (const char *const *n =
		     (const char *const[]){ "CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_SYS_PTRACE",
					    "CAP_SYS_MODULE", "CAP_BPF", "CAP_PERFMON", NULL };
	     *n; n++)
		cr_expect(has_cap(p, *n), "posture does not name %s", *n);
	events_free(&evs);
}

/* With the flag: the exec of a privileged process a host placed in the sandbox never runs. */
Test(caps, require_unprivileged_kills_a_privileged_exec)
{
	const Egret__V1__Event *ev;
	struct events evs;
	int status;
	pid_t pid;

	start_ok(require);
	status = placed_exec(AS_ROOT, "caps-killed", &pid);
	cr_expect(killed(status), "a privileged exec survived: %#x", status);
	cr_assert_eq(events_wait(T->sink_path, is_privileged_of, (void *)(long)pid, 5000, &evs), 0,
		     "no PRIVILEGED tamper:\n%s", harness_log(T));
	ev = events_find(&evs, is_privileged_of, (void *)(long)pid, NULL);
	cr_expect(ev->tamper->killed);
	cr_expect(ev->tamper->target & CAP_SYS_ADMIN_BIT, "mask %#llx",
		  (unsigned long long)ev->tamper->target);
	cr_expect(strstr(ev->tamper->detail, "CAP_SYS_ADMIN"), "%s", ev->tamper->detail);
	cr_expect_str_eq(ev->sandbox->name, "s1");
	events_free(&evs);
}

/* `echo $$ > cgroup.procs` of a privileged shell: it need never exec, it dies at the move. */
Test(caps, require_unprivileged_kills_a_privileged_process_joining_by_hand)
{
	struct events evs;
	int status;
	pid_t pid;

	start_ok(require);
	status = joined_exec("caps-joined", &pid);
	cr_expect(killed(status), "a privileged process joined a sandbox: %#x", status);
	cr_assert_eq(events_wait(T->sink_path, is_privileged_of, (void *)(long)pid, 5000, &evs), 0,
		     "no PRIVILEGED tamper:\n%s", harness_log(T));
	cr_expect_null(events_find(&evs, is_exec_of, "caps-joined", NULL), "it got to exec");
	events_free(&evs);
}

/* The positive controls: processes without those capabilities run, reported unprivileged. */
Test(caps, a_process_that_dropped_its_capabilities_runs)
{
	const Egret__V1__ProcessExec__Posture *p;
	struct events evs;
	int status;

	start_ok(require);
	status = placed_exec(DROP_UID, "caps-nobody", NULL);
	cr_expect(exited_0(status), "uid 65534 was killed: %#x", status);
	p = wait_posture(&evs, "caps-nobody");
	cr_assert(p, "no exec event:\n%s", harness_log(T));
	cr_expect_not(p->privileged);
	cr_expect_eq(p->effective, 0);
	cr_expect_eq(p->permitted, 0);
	cr_expect_eq(p->n_capabilities, 0);
	cr_expect(p->initial_user_ns);
	events_free(&evs);

	status = placed_exec(DROP_BOUNDING, "caps-bounded", NULL);
	cr_expect(exited_0(status), "root without a bounding set was killed: %#x", status);
	p = wait_posture(&evs, "caps-bounded");
	cr_assert(p, "no exec event:\n%s", harness_log(T));
	cr_expect_not(p->privileged);
	cr_expect_eq(p->permitted, 0);
	events_free(&evs);
}

Test(caps, egretctl_run_has_no_capabilities_over_the_host)
{
	const Egret__V1__ProcessExec__Posture *p;
	struct events evs;
	char out[4096];
	int rc;

	start_ok(require);
	rc = egretctl(T, out, sizeof(out), "run", "--sandbox", "s1", "--", "/bin/true", "caps-run",
		      NULL);
	cr_expect_eq(rc, 0, "egretctl run: %d %s\n%s", rc, out, harness_log(T));
	p = wait_posture(&evs, "caps-run");
	cr_assert(p, "no exec event:\n%s", harness_log(T));
	cr_expect_not(p->initial_user_ns);
	cr_expect_gt(p->user_ns_level, 0);
	cr_expect_not(p->privileged);
	cr_expect_eq(p->effective, 0);
	events_free(&evs);
}

/* A sandboxed writer moving a privileged peer (both placed by the host): the peer dies at the
 * move, with bpf_send_signal_task and with its fallback (killed at its next syscall exit).
 */
Test(caps, require_unprivileged_kills_a_privileged_process_a_peer_moves)
{
	static const char *const fallback[] = { "--require-unprivileged",
						"--without-kernel-feature", "send_signal_task",
						NULL };
	const char *const *const flags[] = { require, fallback };
	char box[PATH_MAX], nested[PATH_MAX + 8], val[32];

	for (int i = 0; i < 2; i++) {
		struct events evs;
		int p[2], w[2], status;
		pid_t peer, writer;

		start_ok(flags[i]);
		box_dir(box, sizeof(box));
		snprintf(nested, sizeof(nested), "%s/nested", box);
		cr_assert(mkdir(nested, 0755) == 0 || errno == EEXIST);
		cr_assert_eq(pipe(p), 0);
		peer = fork();
		cr_assert(peer >= 0);
		if (peer == 0) {
			close(p[1]);
			child_exec(AS_ROOT, p[0], "caps-peer");
		}
		close(p[0]);
		cr_assert_eq(cgroup__join(box, peer), 0);
		cr_assert_eq(pipe(w), 0);
		writer = fork();
		cr_assert(writer >= 0);
		if (writer == 0) {
			char c, procs[PATH_MAX + 32];

			prctl(PR_SET_PDEATHSIG, SIGKILL);
			close(w[1]);
			if (read(w[0], &c, 1) != 1)
				_exit(98);
			snprintf(procs, sizeof(procs), "%s/cgroup.procs", nested);
			snprintf(val, sizeof(val), "%d", (int)peer);
			_exit(write_file(procs, val) ? 100 : 0);
		}
		close(w[0]);
		cr_assert_eq(cgroup__join(box, writer), 0);
		cr_assert_eq(write(w[1], "g", 1), 1);
		close(w[1]);
		cr_assert_eq(waitpid(writer, &status, 0), writer);
		cr_expect(exited_0(status), "run %d: the writer: %#x", i, status);
		/* where bpf_send_signal_task killed it at once, nobody reads this any more */
		signal(SIGPIPE, SIG_IGN);
		(void)!write(p[1], "g", 1);
		close(p[1]);
		cr_assert_eq(waitpid(peer, &status, 0), peer);
		cr_expect(killed(status), "run %d: the moved privileged peer survived: %#x", i,
			  status);
		cr_expect_eq(events_wait(T->sink_path, is_privileged_of, (void *)(long)writer, 5000,
					 &evs),
			     0, "run %d: no PRIVILEGED tamper:\n%s", i, harness_log(T));
		events_free(&evs);
		cr_assert_eq(harness_stop(T, SIGTERM), 0);
	}
}

static bool is_privileged_pid(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_PRIVILEGED &&
	       ev->tamper->other_pid == (uint32_t)(long)arg;
}

/* A privileged process already in a sandbox when egretd starts never execs or moves where the
 * kernel sees it: egretd's start scan kills it; one without those capabilities stays.
 */
Test(caps, require_unprivileged_kills_privileged_processes_found_at_start)
{
	char box[PATH_MAX];
	const Egret__V1__Event *ev;
	struct events evs;
	int p[2], q[2], status;
	pid_t root_pid, nobody;

	cr_assert(mkdir(T->cgroup_root, 0755) == 0 || errno == EEXIST);
	box_dir(box, sizeof(box));
	/* close-on-exec: egretd, started below, must not hold the write ends */
	cr_assert_eq(pipe2(p, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(q, O_CLOEXEC), 0);
	root_pid = fork();
	cr_assert(root_pid >= 0);
	if (root_pid == 0) {
		close(p[1]);
		child_exec(AS_ROOT, p[0], "caps-old-root");
	}
	nobody = fork();
	cr_assert(nobody >= 0);
	if (nobody == 0) {
		close(p[1]);
		close(q[1]);
		child_exec(DROP_UID, q[0], "caps-old-nobody");
	}
	close(p[0]);
	close(q[0]);
	cr_assert_eq(cgroup__join(box, root_pid), 0);
	cr_assert_eq(cgroup__join(box, nobody), 0);
	start_ok(require);
	/* the scan is over before egretd is ready: a survivor reads EOF and exits 98 */
	close(p[1]);
	cr_assert_eq(waitpid(root_pid, &status, 0), root_pid);
	cr_expect(killed(status), "the privileged process survived egretd's start: %#x", status);
	cr_assert_eq(
		events_wait(T->sink_path, is_privileged_pid, (void *)(long)root_pid, 5000, &evs), 0,
		"no PRIVILEGED tamper:\n%s", harness_log(T));
	ev = events_find(&evs, is_privileged_pid, (void *)(long)root_pid, NULL);
	cr_expect(ev->tamper->killed);
	cr_expect_str_eq(ev->sandbox->name, "s1");
	cr_expect_null(events_find(&evs, is_privileged_pid, (void *)(long)nobody, NULL));
	events_free(&evs);
	cr_expect_eq(kill(nobody, 0), 0, "the unprivileged process was killed");
	cr_assert_eq(write(q[1], "g", 1), 1);
	close(q[1]);
	cr_assert_eq(waitpid(nobody, &status, 0), nobody);
	cr_expect(exited_0(status), "the unprivileged process: %#x", status);
}

/* The policy's `require unprivileged` does what the option does; audit mode only reports. */
Test(caps, the_policy_can_require_unprivileged)
{
	const Egret__V1__ProcessExec__Posture *p;
	struct events evs;
	int status;
	pid_t pid;

	cr_assert_eq(harness_policy(T, "require unprivileged\n"), 0);
	start_ok(NULL);
	status = placed_exec(AS_ROOT, "caps-policy", &pid);
	cr_expect(killed(status), "a privileged exec survived the policy: %#x", status);
	cr_expect_eq(events_wait(T->sink_path, is_privileged_of, (void *)(long)pid, 5000, &evs), 0,
		     "no PRIVILEGED tamper:\n%s", harness_log(T));
	events_free(&evs);
	cr_assert_eq(harness_stop(T, SIGTERM), 0);

	cr_assert_eq(harness_policy(T, "mode audit\nrequire unprivileged\n"), 0);
	start_ok(NULL);
	status = placed_exec(AS_ROOT, "caps-policy-audit", &pid);
	cr_expect(exited_0(status), "killed in audit mode: %#x", status);
	p = wait_posture(&evs, "caps-policy-audit");
	cr_assert(p, "no exec event:\n%s", harness_log(T));
	cr_expect(p->privileged);
	events_free(&evs);
}
