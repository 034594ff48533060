/* egret on a kernel that lacks an optional feature, tried here on a kernel that has it:
 * egretd's --without-kernel-feature makes it behave as on 6.1 or 6.12 (the same switches its
 * probes set there), so each fallback is proved on the machine that can also compare it with
 * the real thing. Also what egretd and egretctl say about the kernel: status, the agent start
 * event, a gap refused in enforce mode unless accepted.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <criterion/criterion.h>

#include "cgroup.h"
#include "harness.h"

TestSuite(kfeatures, .init = harness_setup_netns, .fini = harness_teardown, .timeout = 90);

static bool killed(int status)
{
	return status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static bool is_start(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_AGENT &&
	       ev->agent->kind == EGRET__V1__AGENT_LIFECYCLE__KIND__KIND_START;
}

/* the feature the agent start event lists as not on, or NULL */
static const Egret__V1__KernelFeature *start_feature(struct events *evs, const char *name)
{
	const Egret__V1__Event *ev;

	if (events_wait(T->sink_path, is_start, NULL, 5000, evs))
		return NULL;
	ev = events_find(evs, is_start, NULL, NULL);
	for (size_t i = 0; ev && i < ev->agent->n_features; i++) {
		if (!strcmp(ev->agent->features[i]->name, name))
			return ev->agent->features[i];
	}
	return NULL;
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

/* Without bpf_send_signal_task (before 6.13) the child clone3 put outside is killed from its own
 * context (egret_reap) before its first instruction.
 */
Test(kfeatures, without_send_signal_task_a_clone3_escape_dies_before_it_runs)
{
	const char *extra[] = { "--without-kernel-feature", "send_signal_task", NULL };
	const Egret__V1__KernelFeature *f;
	char marker[PATH_MAX + 16], out[8192];
	struct events evs;
	struct stat st;

	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
	snprintf(marker, sizeof(marker), "%s/escaped", T->tmpdir);
	for (int i = 0; i < 20; i++)
		cr_expect(killed(in_sandbox_status(T, "box", clone_into, T->cgroup_mount)),
			  "round %d", i);
	cr_expect_neq(stat(marker, &st), 0, "the child ran outside the sandbox");
	/* positive control: from outside egret's root the same clone3 works */
	cr_expect_eq(in_sandbox(T, NULL, clone_into, T->cgroup_mount), 0);
	cr_expect_eq(stat(marker, &st), 0, "positive control: the child did not run");
	/* and nothing outside a sandbox is killed by a mark left behind */
	unlink(marker);
	cr_expect_eq(in_sandbox(T, NULL, clone_into, T->cgroup_mount), 0);
	cr_expect_eq(stat(marker, &st), 0, "a later process outside was killed");

	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, "send_signal_task: fallback: no kfunc bpf_send_signal_task (Linux "
			      "6.13)"),
		  "%s", out);
	f = start_feature(&evs, "send_signal_task");
	cr_assert(f, "the start event does not list send_signal_task");
	cr_expect_eq(f->state, EGRET__V1__KERNEL_FEATURE__STATE__STATE_FALLBACK);
	cr_expect_not(f->accepted);
	events_free(&evs);
}

static bool is_escape(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_CGROUP_ESCAPE;
}

/* In the sandbox: a child that keeps making syscalls, moved out to the host's root cgroup by
 * its parent (the mover, killed at once wherever); the child's pid is left in the file arg.
 */
static int move_other(void *arg)
{
	pid_t victim = fork();
	FILE *f;

	if (victim == 0) {
		for (;;)
			usleep(1000);
	}
	f = fopen(arg, "w");
	if (!f)
		return 100;
	fprintf(f, "%d\n", (int)victim);
	fclose(f);
	cgroup__join(T->cgroup_mount, victim);
	return 0;
}

/* the status of the moved child, which the test process reaps as the subreaper; -1 when it
 * still runs after 5 s (then it is killed here)
 */
static int victim_status(const char *pidfile)
{
	FILE *f = fopen(pidfile, "r");
	int pid = 0, status = -1;

	if (!f || fscanf(f, "%d", &pid) != 1 || pid <= 0) {
		if (f)
			fclose(f);
		return -1;
	}
	fclose(f);
	for (int i = 0; i < 50; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		usleep(100 * 1000);
	}
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	return -1;
}

/* A process moved out of its sandbox by another is killed, with bpf_send_signal_task or from
 * its own context at its next syscall exit. The mover is killed too, except where
 * bpf_send_signal_task took the one signal the tracepoint may send: then the report says it
 * was not (it stays in its sandbox).
 */
Test(kfeatures, a_process_moved_out_by_another_is_killed_either_way)
{
	const char *extra[] = { "--without-kernel-feature", "send_signal_task", NULL };
	char pidfile[PATH_MAX + 16];
	const Egret__V1__Event *ev;
	struct events evs;
	int mover;

	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	snprintf(pidfile, sizeof(pidfile), "%s/victim", T->tmpdir);
	for (int round = 0; round < 2; round++) {
		cr_assert_eq(harness_start(T, round ? extra : NULL), 0, "%s", harness_log(T));
		mover = in_sandbox_status(T, "box", move_other, pidfile);
		cr_expect(killed(victim_status(pidfile)), "round %d: the moved process survived",
			  round);
		cr_assert_eq(events_wait(T->sink_path, is_escape, NULL, 5000, &evs), 0);
		ev = events_find(&evs, is_escape, NULL, NULL);
		cr_expect_eq(ev->tamper->killed, killed(mover), "round %d: killed %d, mover %d",
			     round, ev->tamper->killed, mover);
		if (round)
			cr_expect(killed(mover), "the fallback's mover survived: %d", mover);
		events_free(&evs);
		cr_assert_eq(harness_stop(T, SIGTERM), 0);
		unlink(T->sink_path);
	}
}

static int ptrace_it(void *arg)
{
	pid_t target = *(pid_t *)arg;

	ptrace(PTRACE_ATTACH, target, NULL, NULL);
	return 0;
}

/* a process in the sandbox that waits to be traced, and the one that traces it */
static int ptrace_neighbour(void *arg)
{
	pid_t child = fork();
	int rc;

	(void)arg;
	if (child == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	rc = ptrace_it(&child);
	kill(child, SIGKILL);
	waitpid(child, NULL, 0);
	return rc;
}

static bool is_ptrace(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_PTRACE &&
	       (!arg || ev->tamper->other_pid == (uint32_t) * (const pid_t *)arg);
}

static bool is_exec_of(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_EXEC && ev->exec->n_args > 1 &&
	       !strcmp(ev->exec->args[1], arg);
}

/* Without bpf_task_from_pid (before 6.3) a ptrace target is placed by sandbox_pids: a process
 * outside the sandbox is reported, one inside it is not.
 */
Test(kfeatures, without_task_from_pid_ptrace_out_of_the_sandbox_is_reported)
{
	const char *extra[] = { "--without-kernel-feature", "task_from_pid", NULL };
	const Egret__V1__KernelFeature *f;
	struct events evs;
	char out[8192];
	pid_t outside;
	size_t n = 0;
	int status;

	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
	cr_expect_eq(in_sandbox(T, "box", ptrace_neighbour, NULL), 0);
	outside = fork();
	if (outside == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	status = in_sandbox_status(T, "box", ptrace_it, &outside);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "the tracer of pid %d outside the sandbox was not killed: %d", (int)outside,
		  status);
	kill(outside, SIGKILL);
	waitpid(outside, NULL, 0);
	cr_assert_eq(events_wait(T->sink_path, is_ptrace, &outside, 5000, &evs), 0,
		     "ptrace of pid %d outside the sandbox not reported", (int)outside);
	/* the neighbour's ptrace came first: a report of it would be in evs already */
	for (size_t i = 0; i < evs.n; i++)
		n += is_ptrace(evs.ev[i], NULL);
	cr_expect_eq(n, 1, "%zu ptrace reports: the neighbour in the same sandbox was reported", n);
	events_free(&evs);

	cr_expect_eq(egretctl(T, out, sizeof(out), "status", "--json", NULL), 0, "%s", out);
	cr_expect(strstr(out, "{\"name\":\"task_from_pid\",\"state\":\"fallback\""), "%s", out);
	f = start_feature(&evs, "task_from_pid");
	cr_assert(f, "the start event does not list task_from_pid");
	cr_expect_eq(f->state, EGRET__V1__KERNEL_FEATURE__STATE__STATE_FALLBACK);
	events_free(&evs);
	/* the exec of a sandboxed process is still seen (the fork/exec bookkeeping runs too) */
	cr_expect_eq(sandbox_cmd(T, "box", out, sizeof(out), "/bin/echo", "kfeatures-probe", NULL),
		     0, "%s", out);
	cr_expect_eq(events_wait(T->sink_path, is_exec_of, "kfeatures-probe", 5000, &evs), 0);
	events_free(&evs);
}

static int ping_denied(void *arg)
{
	(void)arg;
	return ping_echo("198.51.100.8", 1000);
}

static bool is_skb_deny(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->hook == EGRET__V1__NET_CONNECT__HOOK__HOOK_SKB_EGRESS &&
	       ev->net_connect->verdict == EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY;
}

/* Where cgroup_skb programs may not ask for the current task (6.1 none, 6.12 no uid), the skb
 * backstop still refuses and reports, with the sandbox but without the process.
 */
Test(kfeatures, without_skb_task_helpers_the_backstop_still_denies)
{
	const char *extra[] = { "--without-kernel-feature",
				"skb_pid_tgid",
				"--without-kernel-feature",
				"skb_uid_gid",
				"--without-kernel-feature",
				"skb_comm",
				NULL };
	const Egret__V1__KernelFeature *f;
	const Egret__V1__Event *ev;
	struct events evs;
	char out[8192];
	int got;

	cr_assert_eq(netns_addr("lo", "198.51.100.8/32"), 0);
	cr_assert_eq(netns_run("sysctl -qw net.ipv4.ping_group_range='0 2147483647'"), 0);
	cr_assert_eq(harness_policy(T, "mode enforce\nallow 192.0.2.0/24\n"), 0);
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
	got = in_sandbox(T, "box", ping_denied, NULL);
	cr_expect(got == EPERM || got == ETIMEDOUT, "ping to a denied address: %s", strerror(got));
	cr_expect_eq(in_sandbox(T, NULL, ping_denied, NULL), 0, "positive control");
	cr_assert_eq(events_wait(T->sink_path, is_skb_deny, NULL, 5000, &evs), 0,
		     "no skb_egress denial");
	ev = events_find(&evs, is_skb_deny, NULL, NULL);
	cr_expect_str_eq(ev->sandbox->name, "box");
	cr_expect_eq(ev->process->pid, 0, "pid %u from a helper that is off", ev->process->pid);
	cr_expect_str_eq(ev->process->comm, "");
	events_free(&evs);
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, "skb_task: reduced: cgroup_skb programs may not call "
			      "bpf_get_current_pid_tgid, bpf_get_current_uid_gid, "
			      "bpf_get_current_comm here"),
		  "%s", out);
	f = start_feature(&evs, "skb_task");
	cr_assert(f);
	cr_expect_eq(f->state, EGRET__V1__KERNEL_FEATURE__STATE__STATE_REDUCED);
	events_free(&evs);
}

/* With neither bpf_send_signal_task nor a sys_exit tracepoint nothing kills a clone3 escape:
 * egretd refuses enforce mode, naming the feature and the option, unless it is accepted.
 */
Test(kfeatures, a_gap_refuses_enforce_mode_unless_accepted)
{
	const char *gap[] = { "--without-kernel-feature", "send_signal_task",
			      "--without-kernel-feature", "sys_exit_btf", NULL };
	const char *accepted[] = { "--without-kernel-feature",
				   "send_signal_task",
				   "--without-kernel-feature",
				   "sys_exit_btf",
				   "--accept-kernel-gap",
				   "send_signal_task",
				   NULL };
	const Egret__V1__KernelFeature *f;
	struct events evs;
	char out[8192];
	int rc;

	cr_assert_eq(harness_policy(T, "mode enforce\nallow 192.0.2.0/24\n"), 0);
	rc = harness_start(T, gap);
	cr_expect_eq(rc, 1, "egretd should refuse: %d\n%s", rc, harness_log(T));
	cr_expect(strstr(harness_log(T), "lacks what a protection needs: send_signal_task"), "%s",
		  harness_log(T));
	cr_expect(strstr(harness_log(T), "--accept-kernel-gap send_signal_task"), "%s",
		  harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--", "true", NULL), 125,
		     "nothing may be attached after a refusal: %s", out);

	cr_assert_eq(harness_start(T, accepted), 0, "%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, "send_signal_task: gap (accepted with --accept-kernel-gap)"), "%s",
		  out);
	cr_expect(strstr(out, "(not loaded: egret_reap)"), "%s", out);
	f = start_feature(&evs, "send_signal_task");
	cr_assert(f);
	cr_expect_eq(f->state, EGRET__V1__KERNEL_FEATURE__STATE__STATE_GAP);
	cr_expect(f->accepted);
	cr_expect_eq(f->n_not_loaded, 1);
	cr_expect_str_eq(f->not_loaded[0], "egret_reap");
	events_free(&evs);
	cr_expect_eq(harness_stop(T, SIGTERM), 0);

	/* audit mode refuses nothing: it only warns */
	cr_assert_eq(harness_policy(T, "mode audit\nallow 192.0.2.0/24\n"), 0);
	cr_assert_eq(harness_start(T, gap), 0, "%s", harness_log(T));
	cr_expect(strstr(harness_log(T), "send_signal_task: gap"), "%s", harness_log(T));
	/* nor does a reload into enforce mode get past it */
	cr_assert_eq(harness_policy(T, "mode enforce\nallow 192.0.2.0/24\n"), 0);
	cr_assert_eq(kill(T->egretd, SIGHUP), 0);
	for (int i = 0; i < 50 && !strstr(harness_log(T), "nothing changed"); i++)
		usleep(100 * 1000);
	cr_expect(strstr(harness_log(T), "enforce mode refused: this kernel lacks what protection "
					 "send_signal_task needs"),
		  "%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, "mode audit") || strstr(out, "mode: audit"), "%s", out);
}

/* What status says about the kernel is what the agent start event says: the same optional
 * parts off, or none; a bad feature name is refused with the list of good ones.
 */
Test(kfeatures, status_and_the_start_event_agree_on_what_is_off)
{
	const char *bad[] = { "--without-kernel-feature", "bpf_loop", NULL };
	const Egret__V1__Event *ev;
	struct events evs;
	char out[8192], line[128];

	cr_expect_eq(harness_start(T, bad), 2, "%s", harness_log(T));
	cr_expect(strstr(harness_log(T), "bad --without-kernel-feature 'bpf_loop': one of "
					 "task_from_pid,"),
		  "%s", harness_log(T));
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_assert_eq(events_wait(T->sink_path, is_start, NULL, 5000, &evs), 0);
	ev = events_find(&evs, is_start, NULL, NULL);
	cr_expect(ev->agent->kernel && ev->agent->kernel[0]);
	snprintf(line, sizeof(line), "kernel: %s, ", ev->agent->kernel);
	cr_expect(strstr(out, line), "no '%s' in: %s", line, out);
	cr_expect_eq(!!strstr(out, ", every optional part on\n"), ev->agent->n_features == 0, "%s",
		     out);
	for (size_t i = 0; i < ev->agent->n_features; i++) {
		snprintf(line, sizeof(line), "  %s: ", ev->agent->features[i]->name);
		cr_expect(strstr(out, line), "no '%s' in: %s", line, out);
		cr_expect_neq(ev->agent->features[i]->state,
			      EGRET__V1__KERNEL_FEATURE__STATE__STATE_ON);
	}
	events_free(&evs);
}

/* 6.18 has everything egret can use: nothing is off there. */
Test(kfeatures, a_kernel_with_everything_has_nothing_off)
{
	const Egret__V1__Event *ev;
	struct events evs;
	char out[8192];

	harness_require_kernel(6, 18,
			       "6.18 is the oldest kernel measured with every optional part "
			       "(6.12 lacks bpf_send_signal_task and cgroup_skb's "
			       "bpf_get_current_uid_gid)");
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, ", every optional part on\n"), "%s", out);
	cr_assert_eq(events_wait(T->sink_path, is_start, NULL, 5000, &evs), 0);
	ev = events_find(&evs, is_start, NULL, NULL);
	cr_expect_eq(ev->agent->n_features, 0);
	events_free(&evs);
}

/* The value of the one-byte switch var in the .rodata of the program behind the instance's
 * pinned link links/prog: what that program was loaded with. Asserted.
 */
static bool loaded_switch(const char *prog, const char *var)
{
	struct bpf_link_info li = {};
	struct bpf_prog_info pi = {};
	__u32 map_ids[64], len = sizeof(li);
	char pin[PATH_MAX + 64];
	int fd, found = -1;

	snprintf(pin, sizeof(pin), "%s/links/%s", T->state_dir, prog);
	fd = bpf_obj_get(pin);
	cr_assert_geq(fd, 0, "%s: %s", pin, strerror(errno));
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, &li, &len), 0);
	close(fd);
	fd = bpf_prog_get_fd_by_id(li.prog_id);
	cr_assert_geq(fd, 0);
	pi.nr_map_ids = 64;
	pi.map_ids = (__u64)(unsigned long)map_ids;
	len = sizeof(pi);
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, &pi, &len), 0);
	close(fd);
	for (__u32 i = 0; i < pi.nr_map_ids && i < 64 && found < 0; i++) {
		struct bpf_map_info mi = {};
		const struct btf_var_secinfo *vs;
		const struct btf_type *sec;
		unsigned char value[4096];
		struct btf *btf;
		__u32 zero = 0;

		len = sizeof(mi);
		fd = bpf_map_get_fd_by_id(map_ids[i]);
		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &mi, &len) || !strstr(mi.name, ".rodata") ||
		    !mi.btf_id || mi.value_size > sizeof(value) ||
		    !(btf = btf__load_from_kernel_by_id(mi.btf_id))) {
			close(fd);
			continue;
		}
		sec = btf__type_by_id(btf, mi.btf_value_type_id);
		vs = sec && btf_is_datasec(sec) ? btf_var_secinfos(sec) : NULL;
		for (__u16 v = 0; vs && v < btf_vlen(sec); v++, vs++) {
			const char *name =
				btf__name_by_offset(btf, btf__type_by_id(btf, vs->type)->name_off);

			if (strcmp(name, var) || bpf_map_lookup_elem(fd, &zero, value))
				continue;
			found = value[vs->offset] != 0;
		}
		btf__free(btf);
		close(fd);
	}
	cr_assert_geq(found, 0, "no %s in the .rodata of %s", var, prog);
	return found;
}

/* bpf_rdonly_cast is in every kernel from 6.2 and callable from tracepoints: the probe finds it
 * there (plain loads for the path walks), and not on 6.1 (probe reads, the same records); the
 * programs that walk paths and read open files were loaded with the switch set as found
 */
Test(kfeatures, rdonly_cast_is_found_where_the_kernel_has_it)
{
	const Egret__V1__KernelFeature *f;
	struct events evs;
	int major, minor;
	bool has;

	cr_assert_eq(harness_kernel_version(&major, &minor), 0);
	has = major > 6 || (major == 6 && minor >= 2);
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_assert_eq(events_wait(T->sink_path, is_start, NULL, 5000, &evs), 0, "no start event");
	events_free(&evs);
	f = start_feature(&evs, "rdonly_cast");
	if (has)
		cr_expect_null(f, "rdonly_cast is not on in Linux %d.%d", major, minor);
	else
		cr_expect(f && f->state == EGRET__V1__KERNEL_FEATURE__STATE__STATE_FALLBACK,
			  "rdonly_cast is not a fallback in Linux %d.%d", major, minor);
	events_free(&evs);
	cr_expect_eq(loaded_switch("egret_xopenat", "have_rdonly_cast"), has);
	cr_expect_eq(loaded_switch("egret_pmopenat", "have_rdonly_cast"), has);
	cr_expect_eq(loaded_switch("egret_aexec", "have_rdonly_cast"), has);
}
