/* A sandbox egret did not start (a cgroup joined by hand, host root, the host's pid namespace)
 * reaching a process outside it: signals (to egretd: the sender dies, egretd goes on), ptrace,
 * pidfd_getfd, process_vm_writev and /proc/PID/mem (the sender dies before anything is read
 * or written). Each has its positive control: the same from the host, or against a peer in
 * the same sandbox, works and nobody is killed.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cgroup.h"
#include "harness.h"
#include "util.h"

#define UNTOUCHED "untouched-host-buffer"
#define STOLEN	  "written-by-the-sandbox"

/* the victim's buffer: the same address in every process forked from the test */
static char victim_buf[64] = UNTOUCHED;

struct victim {
	pid_t pid;
	int cmd; /* the test writes a byte: the victim answers with its buffer */
	int reply;
	int held;  /* the victim's copy of a pipe's write end (pidfd_getfd's prey) */
	int drain; /* the test's read end of that pipe */
};

static void setup(void)
{
	harness_setup(false);
}

TestSuite(procs, .init = setup, .fini = harness_teardown, .timeout = 120);

static void start_ok(const char *const extra[])
{
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
}

/* join <root>/box by hand, as a runtime would place a process */
static int join_box(void)
{
	char dir[PATH_MAX];

	if (sandbox_path(T, "box", dir, sizeof(dir)) || (mkdir(dir, 0755) && errno != EEXIST))
		return -1;
	return cgroup__join(dir, getpid());
}

static void victim_loop(int cmd, int reply)
{
	char c;

	while (read(cmd, &c, 1) == 1) {
		if (write(reply, victim_buf, sizeof(victim_buf)) != sizeof(victim_buf))
			break;
	}
	_exit(0);
}

/* A process that waits (in the box when boxed, else in the test's host cgroup) */
static void victim_start(struct victim *v, bool boxed)
{
	int cmd[2], reply[2], held[2];

	cr_assert_eq(pipe(cmd), 0);
	cr_assert_eq(pipe(reply), 0);
	cr_assert_eq(pipe2(held, O_NONBLOCK), 0);
	v->pid = fork();
	cr_assert(v->pid >= 0);
	if (v->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (boxed && join_box())
			_exit(100);
		close(cmd[1]);
		close(reply[0]);
		close(held[0]);
		victim_loop(cmd[0], reply[1]);
	}
	close(cmd[0]);
	close(reply[1]);
	close(held[1]);
	v->cmd = cmd[1];
	v->reply = reply[0];
	v->held = held[1]; /* the number, valid in the victim only */
	v->drain = held[0];
	/* it answers once it is in place */
	cr_assert_eq(write(v->cmd, "r", 1), 1);
	cr_assert_eq(read(v->reply, (char[64]){ 0 }, 64), 64, "the victim did not start");
}

static void victim_buffer(struct victim *v, char *out)
{
	cr_assert_eq(write(v->cmd, "r", 1), 1);
	cr_assert_eq(read(v->reply, out, 64), 64, "the victim did not answer");
}

static void victim_stop(struct victim *v)
{
	if (v->pid <= 0)
		return;
	kill(v->pid, SIGKILL);
	waitpid(v->pid, NULL, 0);
	close(v->cmd);
	close(v->reply);
	close(v->drain);
	v->pid = 0;
}

/* fn in a new process, in the box when boxed; its pid in *pid, its raw wait status */
static int attack(bool boxed, int (*fn)(void *), void *arg, pid_t *pid)
{
	int status = -1;
	pid_t p = fork();

	cr_assert(p >= 0);
	if (p == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (boxed && join_box())
			_exit(100);
		_exit(fn(arg) & 0xff);
	}
	if (pid)
		*pid = p;
	cr_assert_eq(waitpid(p, &status, 0), p);
	return status;
}

static bool was_killed(int status)
{
	return WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

static bool exited_ok(int status)
{
	return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

struct want {
	Egret__V1__Tamper__Kind kind;
	pid_t sender;
	uint32_t other_pid;
	uint64_t target;
};

static bool is_tamper(const Egret__V1__Event *ev, const void *arg)
{
	const struct want *w = arg;

	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == w->kind && ev->process &&
	       ev->process->pid == (uint32_t)w->sender && ev->tamper->other_pid == w->other_pid &&
	       ev->tamper->target == w->target;
}

/* The Tamper event of w, within 5 s, whether it says the sender was killed, and its detail
 * (which names the target's pid after words).
 */
static void expect_tamper(const struct want *w, bool killed, const char *words)
{
	char want[128];
	const Egret__V1__Event *ev;
	struct events evs;

	cr_assert_eq(events_wait(T->sink_path, is_tamper, w, 5000, &evs), 0,
		     "no Tamper kind %d (target %llu, other pid %u) of pid %d:\n%s", w->kind,
		     (unsigned long long)w->target, w->other_pid, (int)w->sender, harness_log(T));
	ev = events_find(&evs, is_tamper, w, NULL);
	cr_expect_eq(ev->tamper->killed, killed, "%s", ev->tamper->detail);
	snprintf(want, sizeof(want), "%s pid %u, outside the sandbox", words, w->other_pid);
	cr_expect(strstr(ev->tamper->detail, want), "'%s' does not say '%s'", ev->tamper->detail,
		  want);
	cr_expect_str_eq(ev->sandbox->name, "box");
	events_free(&evs);
}

static size_t tampers_of(pid_t sender)
{
	struct events evs;
	size_t n = 0;

	if (events_read(T->sink_path, &evs))
		return 0;
	for (size_t i = 0; i < evs.n; i++)
		n += evs.ev[i]->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
		     evs.ev[i]->process && evs.ev[i]->process->pid == (uint32_t)sender;
	events_free(&evs);
	return n;
}

/* the keeper's pid, from <state>/keeper; 0 when there is none */
static pid_t keeper_pid(void)
{
	char path[PATH_MAX + 16], buf[32];
	ssize_t n;

	snprintf(path, sizeof(path), "%s/keeper", T->state_dir);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return (pid_t)atoi(buf);
}

/* whether egretd's log (the keeper's too) holds text within ms */
static bool log_says(const char *text, int ms)
{
	for (int i = 0; i < ms / 20; i++) {
		if (strstr(harness_log(T), text))
			return true;
		usleep(20000);
	}
	return strstr(harness_log(T), text) != NULL;
}

/* Whether pid runs again within 3 s: no thread stopped or in a trace stop, and no stop pending
 * (a stop just queued leaves the process running for a while). A stop a sandbox sent to egretd
 * is answered by the kernel (6.13) or by egret's keeper (every 100 ms), one sent to the keeper
 * by egretd (every second).
 */
static bool continued(pid_t pid)
{
	for (int i = 0; i < 150 * (int)harness_timeout_scale(); i++) {
		if (proc_stopping(pid) == 0)
			return true;
		usleep(20000);
	}
	return false;
}

static int send_sig(void *arg)
{
	const int *v = arg; /* pid, signal */

	return kill(v[0], v[1]) ? 1 : 0;
}

static bool is_stop_refused(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_SIGNAL && ev->process &&
	       ev->process->pid == (uint32_t)(uintptr_t)arg &&
	       strstr(ev->tamper->detail, "egretd did not stop");
}

/* kill -TERM egretd from the box: the sender dies, egretd does not stop and says so; kill
 * -STOP: the sender dies, and where the kernel lets a program send SIGCONT (6.13) egretd is not
 * left stopped. From the host, both work.
 */
Test(procs, signals_to_egretd_from_a_sandbox_kill_the_sender)
{
	int term[2], stop[2], status;
	struct want w = { .kind = EGRET__V1__TAMPER__KIND__KIND_SIGNAL_OUT };
	char out[4096];
	struct events evs;
	pid_t sender;

	start_ok(NULL);
	term[0] = stop[0] = T->egretd;
	term[1] = SIGTERM;
	stop[1] = SIGSTOP;

	status = attack(true, send_sig, term, &sender);
	cr_expect(was_killed(status), "the sender of SIGTERM to egretd lives: %d", status);
	w.sender = sender;
	w.other_pid = (uint32_t)T->egretd;
	w.target = SIGTERM;
	expect_tamper(&w, true, "signal 15 (TERM) to");
	cr_expect_eq(
		events_wait(T->sink_path, is_stop_refused, (void *)(uintptr_t)sender, 5000, &evs),
		0, "egretd did not report the SIGTERM it refused:\n%s", harness_log(T));
	events_free(&evs);
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "egretd stopped: %s\n%s",
		     out, harness_log(T));

	status = attack(true, send_sig, stop, &sender);
	cr_expect(was_killed(status), "the sender of SIGSTOP to egretd lives: %d", status);
	w.sender = sender;
	w.target = SIGSTOP;
	cr_expect(continued(T->egretd), "egretd was left stopped");
	expect_tamper(&w, true, "signal 19 (STOP) to");
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	kill(T->egretd, SIGCONT);

	/* positive control: the host's SIGSTOP stops egretd (nothing continues it), its SIGTERM
	 * stops it for good
	 */
	status = attack(false, send_sig, stop, &sender);
	cr_expect(exited_ok(status), "the host's SIGSTOP: %d", status);
	for (int i = 0; i < 100 && proc_state(T->egretd) != 'T'; i++)
		usleep(20000);
	cr_expect_eq(proc_state(T->egretd), 'T', "the host's SIGSTOP did not stop egretd");
	usleep(200000);
	cr_expect_eq(proc_state(T->egretd), 'T', "egretd was continued after the host's SIGSTOP");
	cr_expect_eq(tampers_of(sender), 0, "the host's signal was reported");
	kill(T->egretd, SIGCONT);
	cr_expect_eq(harness_stop(T, SIGTERM), 0, "the host's SIGTERM did not stop egretd");
}

static bool traced(pid_t pid);

static int attach(void *arg)
{
	pid_t pid = *(pid_t *)arg;

	return ptrace(PTRACE_ATTACH, pid, NULL, NULL) ? 1 : 0;
}

/* gdb -p egretd from the box: the tracer dies, egretd is left neither traced nor stopped by the
 * attach's SIGSTOP (continued by the kernel on 6.13, by the keeper before).
 */
Test(procs, ptrace_attach_of_egretd_kills_the_tracer)
{
	struct want w = { .kind = EGRET__V1__TAMPER__KIND__KIND_PTRACE };
	char out[4096];
	pid_t sender;
	int status;

	start_ok(NULL);
	status = attack(true, attach, &T->egretd, &sender);
	cr_expect(was_killed(status), "the tracer of egretd lives: %d", status);
	w.sender = sender;
	w.other_pid = (uint32_t)T->egretd;
	w.target = (uint64_t)T->egretd;
	expect_tamper(&w, true, "ptrace of");
	cr_expect(continued(T->egretd), "egretd was left stopped by the attach");
	cr_expect_not(traced(T->egretd), "egretd is still traced");
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	kill(T->egretd, SIGCONT);
}

/* Without bpf_send_signal_task (before 6.13) no program can continue egretd: the sender of
 * SIGSTOP still dies at once, and egret's keeper, which sees the kernel's record of the sender,
 * continues egretd within a few hundred milliseconds. A stop of the keeper itself is answered by
 * egretd the same way.
 */
Test(procs, without_send_signal_task_the_keeper_continues_a_stopped_egretd)
{
	const char *extra[] = { "--without-kernel-feature", "send_signal_task", NULL };
	struct want w = { .kind = EGRET__V1__TAMPER__KIND__KIND_SIGNAL_OUT, .target = SIGSTOP };
	int stop[2] = { 0, SIGSTOP }, status;
	pid_t sender, keeper;
	char out[4096];

	start_ok(extra);
	stop[0] = T->egretd;
	status = attack(true, send_sig, stop, &sender);
	cr_expect(was_killed(status), "the sender of SIGSTOP to egretd lives: %d", status);
	cr_expect(continued(T->egretd), "egretd was left stopped:\n%s", harness_log(T));
	w.sender = sender;
	w.other_pid = (uint32_t)T->egretd;
	expect_tamper(&w, true, "signal 19 (STOP) to");
	snprintf(out, sizeof(out), "egretd (pid %d) was stopped by signal 19", (int)T->egretd);
	cr_expect(log_says(out, 5000), "the keeper did not say it continued egretd:\n%s",
		  harness_log(T));

	keeper = keeper_pid();
	cr_assert(keeper > 0, "no keeper:\n%s", harness_log(T));
	stop[0] = keeper;
	status = attack(true, send_sig, stop, &sender);
	cr_expect(was_killed(status), "the sender of SIGSTOP to the keeper lives: %d", status);
	/* the stop lands once the keeper is back in user space: wait for egretd's word */
	snprintf(out, sizeof(out), "keeper (pid %d) was stopped by signal 19", (int)keeper);
	cr_expect(log_says(out, 5000), "egretd did not say it continued the keeper:\n%s",
		  harness_log(T));
	cr_expect(continued(keeper), "the keeper was left stopped:\n%s", harness_log(T));
	cr_expect_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	kill(T->egretd, SIGCONT);
	kill(keeper, SIGCONT);
}

/* A signal from the box to a host process is reported, and the sender lives; one to a peer
 * in the box is not even reported.
 */
Test(procs, a_signal_to_a_host_process_is_reported_only)
{
	struct want w = { .kind = EGRET__V1__TAMPER__KIND__KIND_SIGNAL_OUT, .target = SIGTERM };
	struct victim host, peer;
	int sig[2], status;
	pid_t sender;

	start_ok(NULL);
	victim_start(&host, false);
	victim_start(&peer, true);

	sig[0] = peer.pid;
	sig[1] = SIGTERM;
	status = attack(true, send_sig, sig, &sender);
	cr_expect(exited_ok(status), "the signal to a peer: %d", status);
	cr_expect_eq(waitpid(peer.pid, &status, 0), peer.pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	peer.pid = 0;
	cr_expect_eq(tampers_of(sender), 0, "a signal within the sandbox was reported");

	sig[0] = host.pid;
	status = attack(true, send_sig, sig, &sender);
	cr_expect(exited_ok(status), "the sender of a signal to a host process: %d", status);
	cr_expect_eq(waitpid(host.pid, &status, 0), host.pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	w.sender = sender;
	w.other_pid = (uint32_t)host.pid;
	host.pid = 0;
	expect_tamper(&w, false, "signal 15 (TERM) to");
}

/* --kill-cross-signals: the sender of a signal to any host process dies too; a signal within
 * the box still works.
 */
Test(procs, with_kill_cross_signals_a_signal_to_a_host_process_kills_the_sender)
{
	const char *extra[] = { "--kill-cross-signals", NULL };
	struct want w = { .kind = EGRET__V1__TAMPER__KIND__KIND_SIGNAL_OUT, .target = SIGTERM };
	struct victim host, peer;
	int sig[2], status;
	pid_t sender;

	start_ok(extra);
	victim_start(&host, false);
	victim_start(&peer, true);

	sig[0] = peer.pid;
	sig[1] = SIGTERM;
	status = attack(true, send_sig, sig, &sender);
	cr_expect(exited_ok(status), "the signal to a peer: %d", status);
	cr_expect_eq(waitpid(peer.pid, &status, 0), peer.pid);
	peer.pid = 0;

	sig[0] = host.pid;
	status = attack(true, send_sig, sig, &sender);
	cr_expect(was_killed(status), "the sender of a signal to a host process lives: %d", status);
	cr_expect_eq(waitpid(host.pid, &status, 0), host.pid);
	w.sender = sender;
	w.other_pid = (uint32_t)host.pid;
	host.pid = 0;
	expect_tamper(&w, true, "signal 15 (TERM) to");
}

static int seize(void *arg)
{
	pid_t pid = *(pid_t *)arg;

	return ptrace(PTRACE_SEIZE, pid, NULL, NULL) ? 1 : 0;
}

static bool traced(pid_t pid)
{
	char path[64], buf[4096], *t;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0 || !(t = strstr(buf, "TracerPid:")))
		return false;
	return atoi(t + 10) != 0;
}

/* ptrace(PTRACE_SEIZE) of a host process from the box: the tracer dies, the tracee is not
 * left traced. Of a peer in the box, or from the host: it works.
 */
Test(procs, ptrace_seize_of_a_host_process_kills_the_tracer)
{
	struct want w = { .kind = EGRET__V1__TAMPER__KIND__KIND_PTRACE };
	struct victim host, peer;
	pid_t sender;
	int status;

	start_ok(NULL);
	victim_start(&host, false);
	victim_start(&peer, true);

	status = attack(true, seize, &peer.pid, &sender);
	cr_expect(exited_ok(status), "ptrace of a peer in the sandbox: %d", status);
	cr_expect_eq(tampers_of(sender), 0, "ptrace within the sandbox was reported");
	status = attack(false, seize, &host.pid, &sender);
	cr_expect(exited_ok(status), "ptrace from the host: %d", status);

	status = attack(true, seize, &host.pid, &sender);
	cr_expect(was_killed(status), "the tracer of a host process lives: %d", status);
	cr_expect_not(traced(host.pid), "the host process is still traced");
	w.sender = sender;
	w.other_pid = (uint32_t)host.pid;
	w.target = (uint64_t)host.pid;
	expect_tamper(&w, true, "ptrace of");
	victim_stop(&host);
	victim_stop(&peer);
}

static size_t ptraces_of(uint32_t pid)
{
	struct events evs;
	size_t n = 0;

	if (events_read(T->sink_path, &evs))
		return 0;
	for (size_t i = 0; i < evs.n; i++)
		n += evs.ev[i]->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
		     evs.ev[i]->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_PTRACE &&
		     evs.ev[i]->tamper->other_pid == pid;
	events_free(&evs);
	return n;
}

/* In a new pid namespace: its init (pid 1) seizes its child, pid 2 there. 0 when that worked,
 * 30 + the signal that ended the tracer.
 */
static int seize_in_pidns(void *arg)
{
	int status;
	pid_t init;

	(void)arg;
	if (unshare(CLONE_NEWPID))
		return 20;
	init = fork();
	if (init == 0) {
		pid_t victim = fork();
		int rc;

		if (victim == 0) {
			pause();
			_exit(0);
		}
		rc = victim != 2 ? 21 : ptrace(PTRACE_SEIZE, victim, NULL, NULL) ? 22 : 0;
		kill(victim, SIGKILL);
		waitpid(victim, NULL, 0);
		_exit(rc);
	}
	if (init < 0 || waitpid(init, &status, 0) != init)
		return 23;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 30 + WTERMSIG(status);
}

/* A pid in a child pid namespace is that namespace's: pid 2 there is not the host's pid 2
 * (kthreadd). Its ptrace is not judged: not killed, not reported.
 */
Test(procs, ptrace_in_a_child_pid_namespace_is_judged_by_that_namespace)
{
	pid_t sender;
	int status;

	start_ok(NULL);
	status = attack(true, seize_in_pidns, NULL, &sender);
	cr_expect(exited_ok(status), "ptrace within the sandbox's own pid namespace: %d (%d)",
		  WIFEXITED(status) ? WEXITSTATUS(status) : -1, status);
	usleep(300000);
	cr_expect_eq(ptraces_of(2), 0, "ptrace within a pid namespace was reported");
}

/* pidfd_getfd of the victim's pipe, then a write into it (10: a step failed); upper: bits the
 * kernel drops from the pidfd argument (an int), for a check that reads all 64
 */
static int steal(struct victim *v, long upper)
{
	int pidfd = (int)syscall(SYS_pidfd_open, v->pid, 0), fd;

	close(v->drain);
	if (pidfd < 0)
		return 10;
	fd = (int)syscall(SYS_pidfd_getfd, (long)pidfd | upper, v->held, 0);
	if (fd < 0)
		return 11;
	return write(fd, STOLEN, sizeof(STOLEN)) == sizeof(STOLEN) ? 0 : 12;
}

static int steal_fd(void *arg)
{
	return steal(arg, 0);
}

static int steal_fd_upper(void *arg)
{
	return steal(arg, 1L << 32);
}

/* pidfd_getfd of a host process's fd from the box: killed before it can use the fd (nothing
 * arrives through the pipe); from the host the same steal works.
 */
Test(procs, pidfd_getfd_of_a_host_process_kills_the_taker)
{
	struct want w = { .kind = EGRET__V1__TAMPER__KIND__KIND_PROC_ACCESS, .target = 2 };
	char buf[64];
	struct victim host;
	pid_t sender;
	int status;

	start_ok(NULL);
	victim_start(&host, false);

	status = attack(false, steal_fd, &host, &sender);
	cr_expect(exited_ok(status), "pidfd_getfd from the host: %d", status);
	cr_expect_eq(read(host.drain, buf, sizeof(buf)), (ssize_t)sizeof(STOLEN),
		     "the host's steal did not write");

	status = attack(true, steal_fd, &host, &sender);
	cr_expect(was_killed(status), "the taker of a host fd lives: %d", status);
	errno = 0;
	cr_expect_eq(read(host.drain, buf, sizeof(buf)), -1, "the stolen fd was used");
	cr_expect_eq(errno, EAGAIN);
	w.sender = sender;
	w.other_pid = (uint32_t)host.pid;
	expect_tamper(&w, true, "pidfd_getfd(2) of");
	victim_stop(&host);
}

/* The same with the pidfd in the low half of a 64-bit argument whose upper half is set: the
 * kernel takes the int (from the host the steal works), egret judges the same descriptor.
 */
Test(procs, pidfd_getfd_with_bits_above_the_int_kills_the_taker)
{
	char buf[64];
	struct victim host;
	pid_t sender;
	int status;

	start_ok(NULL);
	victim_start(&host, false);
	status = attack(false, steal_fd_upper, &host, &sender);
	cr_expect(exited_ok(status), "the kernel did not take the low half: %d", status);
	cr_expect_eq(read(host.drain, buf, sizeof(buf)), (ssize_t)sizeof(STOLEN),
		     "the host's steal did not write");
	status = attack(true, steal_fd_upper, &host, &sender);
	cr_expect(was_killed(status), "the taker of a host fd lives: %d", status);
	errno = 0;
	cr_expect_eq(read(host.drain, buf, sizeof(buf)), -1, "the stolen fd was used");
	cr_expect_eq(errno, EAGAIN);
	victim_stop(&host);
}

static int vm_write(void *arg)
{
	pid_t pid = *(pid_t *)arg;
	char data[] = STOLEN;
	struct iovec local = { data, sizeof(data) }, remote = { victim_buf, sizeof(data) };

	return process_vm_writev(pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(data) ? 0 : 1;
}

static int vm_read(void *arg)
{
	pid_t pid = *(pid_t *)arg;
	char data[sizeof(victim_buf)];
	struct iovec local = { data, sizeof(data) }, remote = { victim_buf, sizeof(data) };

	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)sizeof(data) ? 0 : 1;
}

/* fn from the box writing into the host process v: the writer killed, v's memory untouched,
 * a Tamper w whose detail says what
 */
static void expect_write_killed(int (*fn)(void *), struct victim *v, struct want *w,
				const char *detail)
{
	char buf[64];
	pid_t sender;
	int status = attack(true, fn, &v->pid, &sender);

	cr_expect(was_killed(status), "%s a host process: the writer lives: %d", detail, status);
	victim_buffer(v, buf);
	cr_expect_str_eq(buf, UNTOUCHED, "%s a host process: its memory was written", detail);
	w->sender = sender;
	w->other_pid = (uint32_t)v->pid;
	expect_tamper(w, true, detail);
}

/* process_vm_writev into a host helper's buffer from the box: nothing is written, the writer
 * dies; into a peer in the box it works. process_vm_readv the same.
 */
Test(procs, process_vm_writev_into_a_host_process_copies_nothing)
{
	struct want w = { .kind = EGRET__V1__TAMPER__KIND__KIND_PROC_ACCESS, .target = 4 };
	struct victim host, peer;
	char buf[64];
	pid_t sender;
	int status;

	start_ok(NULL);
	victim_start(&host, false);
	victim_start(&peer, true);

	status = attack(true, vm_write, &peer.pid, &sender);
	cr_expect(exited_ok(status), "process_vm_writev into a peer: %d", status);
	victim_buffer(&peer, buf);
	cr_expect_str_eq(buf, STOLEN, "the peer's buffer was not written");
	cr_expect_eq(tampers_of(sender), 0);

	expect_write_killed(vm_write, &host, &w, "process_vm_writev(2) of");

	/* and the reader of a host process's memory dies too; from the host it reads */
	status = attack(false, vm_read, &host.pid, &sender);
	cr_expect(exited_ok(status), "process_vm_readv from the host: %d", status);
	status = attack(true, vm_read, &host.pid, &sender);
	cr_expect(was_killed(status), "the reader of a host process lives: %d", status);
	w.sender = sender;
	w.target = 3;
	expect_tamper(&w, true, "process_vm_readv(2) of");
	victim_stop(&host);
	victim_stop(&peer);
}

/* open /proc/PID/mem read-write and pwrite the buffer (10: the open failed, 11: the write) */
static int mem_write(void *arg)
{
	pid_t pid = *(pid_t *)arg;
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	fd = open(path, O_RDWR);
	if (fd < 0)
		return 10;
	return pwrite(fd, STOLEN, sizeof(STOLEN), (off_t)(uintptr_t)victim_buf) ==
			       (ssize_t)sizeof(STOLEN)
		       ? 0
		       : 11;
}

static int read_environ(void *arg)
{
	pid_t pid = *(pid_t *)arg;
	char path[64], buf[256];
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	fd = open(path, O_RDONLY);
	return fd >= 0 && read(fd, buf, sizeof(buf)) >= 0 ? 0 : 1;
}

/* /proc/<host pid>/mem opened read-write from the box: killed before the pwrite, the memory
 * unchanged; from the host, or into a peer in the box, the same write works. An open of a host
 * process's environ is reported only.
 */
/* without: a kernel feature egretd is to do without (--without-kernel-feature), or NULL */
static void proc_pid_mem(const char *without)
{
	const char *extra[] = { "--without-kernel-feature", without, NULL };
	struct want w = { .kind = EGRET__V1__TAMPER__KIND__KIND_PROC_ACCESS, .target = 5 };
	struct victim host, other, peer;
	char buf[64], out[8192], want[64];
	pid_t sender;
	int status;

	start_ok(without ? extra : NULL);
	if (without) {
		snprintf(want, sizeof(want), "{\"name\":\"%s\",\"state\":\"fallback\"", without);
		cr_assert_eq(egretctl(T, out, sizeof(out), "status", "--json", NULL), 0, "%s", out);
		cr_assert(strstr(out, want), "%s is not in its fallback: %s", without, out);
	}
	victim_start(&host, false);
	victim_start(&other, false);
	victim_start(&peer, true);

	status = attack(true, mem_write, &peer.pid, &sender);
	cr_expect(exited_ok(status), "a write through a peer's /proc/PID/mem: %d", status);
	victim_buffer(&peer, buf);
	cr_expect_str_eq(buf, STOLEN, "the write into the peer did not arrive");
	cr_expect_eq(tampers_of(sender), 0);
	victim_stop(&peer);

	status = attack(false, mem_write, &other.pid, &sender);
	cr_expect(exited_ok(status), "the host's write through /proc/PID/mem: %d", status);
	victim_buffer(&other, buf);
	cr_expect_str_eq(buf, STOLEN, "the host's write did not arrive");

	expect_write_killed(mem_write, &host, &w, "an open of /proc/PID/mem of");

	status = attack(true, read_environ, &host.pid, &sender);
	cr_expect(exited_ok(status), "the reader of a host process's environ: %d", status);
	w.sender = sender;
	w.target = 6;
	expect_tamper(&w, false, "an open of /proc/PID/environ of");
	victim_stop(&host);
	victim_stop(&other);
}

Test(procs, proc_pid_mem_of_a_host_process_kills_the_opener)
{
	proc_pid_mem(NULL);
}

/* the same where the opened file is read with bpf_probe_read_kernel (6.1, no bpf_rdonly_cast) */
Test(procs, proc_pid_mem_of_a_host_process_kills_the_opener_with_probe_reads)
{
	proc_pid_mem("rdonly_cast");
}

/* Without bpf_task_from_pid (6.1) the programs place pids through sandbox_pids, which egretd
 * seeds at start: a peer that was in the box before egretd started is the box's (ptrace and
 * process_vm_writev of it work), a host process is not (the tracer dies).
 */
Test(procs, without_task_from_pid_tasks_older_than_egretd_are_placed)
{
	const char *extra[] = { "--without-kernel-feature", "task_from_pid", NULL };
	struct victim host, peer;
	char buf[64];
	pid_t sender;
	int status;

	cr_assert(mkdir(T->cgroup_root, 0755) == 0 || errno == EEXIST, "%s: %s", T->cgroup_root,
		  strerror(errno));
	victim_start(&peer, true);
	victim_start(&host, false);
	start_ok(extra);

	status = attack(true, seize, &peer.pid, &sender);
	cr_expect(exited_ok(status), "ptrace of a peer older than egretd: %d\n%s", status,
		  harness_log(T));
	status = attack(true, vm_write, &peer.pid, &sender);
	cr_expect(exited_ok(status), "process_vm_writev into a peer older than egretd: %d", status);
	victim_buffer(&peer, buf);
	cr_expect_str_eq(buf, STOLEN);

	status = attack(true, seize, &host.pid, &sender);
	cr_expect(was_killed(status), "the tracer of a host process lives: %d", status);
	status = attack(true, mem_write, &host.pid, &sender);
	cr_expect(was_killed(status), "the opener of a host process's mem lives: %d", status);
	victim_buffer(&host, buf);
	cr_expect_str_eq(buf, UNTOUCHED);
	victim_stop(&host);
	victim_stop(&peer);
}

/* a datagram saying WATCHDOG=1 on fd within ms */
static bool watchdog_ping(int fd, int ms)
{
	char buf[512];

	for (int waited = 0; waited < ms; waited += 50) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t len;

		if (poll(&p, 1, 50) != 1)
			continue;
		len = recv(fd, buf, sizeof(buf) - 1, 0);
		buf[len > 0 ? len : 0] = '\0';
		if (strstr(buf, "WATCHDOG=1"))
			return true;
	}
	return false;
}

/* Where no program can continue egretd (before 6.13), systemd's watchdog (WatchdogSec in
 * egretd.service) restarts a stopped one: egretd pings it from its loop, and a stopped egretd
 * does not.
 */
Test(procs, a_stopped_egretd_stops_its_watchdog_pings)
{
	int nfd, mine;

	setenv("WATCHDOG_USEC", "30000000", 1);
	nfd = harness_spawn(T, NULL, -1);
	unsetenv("WATCHDOG_USEC");
	cr_assert(nfd >= 0, "egretd did not start: %d", nfd);
	mine = dup(nfd);
	cr_assert_eq(harness_wait_ready(T, nfd, 30000), 0, "egretd did not start:\n%s",
		     harness_log(T));
	cr_expect(watchdog_ping(mine, 5000), "no WATCHDOG=1 from a running egretd");
	cr_assert_eq(kill(T->egretd, SIGSTOP), 0);
	for (int i = 0; i < 100 && proc_state(T->egretd) != 'T'; i++)
		usleep(20000);
	watchdog_ping(mine, 100); /* one sent as it stopped */
	cr_expect_not(watchdog_ping(mine, 2500), "a stopped egretd pinged the watchdog");
	cr_assert_eq(kill(T->egretd, SIGCONT), 0);
	cr_expect(watchdog_ping(mine, 5000), "no WATCHDOG=1 after SIGCONT");
	close(mine);
}
