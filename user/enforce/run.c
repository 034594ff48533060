/* egretctl run. egretctl checks that egret's programs are attached, creates the sandbox's
 * cgroup, registers it with egretd (sending what the command is given, for the start event;
 * egretd answers with the paths of its own that the sandbox must not reach) and forks. The
 * child builds the sandbox's namespaces (ns.c: a user namespace whose root is an unprivileged
 * host uid, pid, mount, ipc, uts, cgroup, optionally network), egretctl writes its id maps and
 * moves it into the cgroup, the child installs the seccomp profile (seccomp.c) and, as pid 1
 * of the new pid namespace, forks the command and reaps; egretctl stays outside as the parent:
 * it passes signals on, answers and reports the profile's refusals, and removes the cgroup
 * it created when the command is done.
 *
 * Parent and child talk over a socketpair, one message a step:
 *   child -> parent  'n'     namespaces made: write my maps, move me into the sandbox
 *   parent -> child  'g'     done: go on
 *   child -> parent  's'+fd  the seccomp listener (SCM_RIGHTS)
 *   child -> parent  'x'+int the command's wait status (the init's exit says nothing)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cgroup.h"
#include "control.h"
#include "loader.h"
#include "log.h"
#include "ns.h"
#include "run.h"
#include "seccomp.h"
#include "util.h"

/* how long `run` waits for what the command left running to leave the sandbox it removes */
#define RUN_REMOVE_WAIT_MS 3000
/* how long after the timeout egretctl kills the sandbox itself when egretd took the timeout
 * (egretd looks once a second): only if egretd did not
 */
#define RUN_TIMEOUT_GRACE_MS 5000
/* refusals reported one by one per second; more are counted into the next report */
#define REPORTS_PER_S 64

/* What the parent knows while the command runs. */
struct run {
	struct egret_paths *p;
	struct run_opts *o;
	struct ns_protect protect;
	char dir[PATH_MAX]; /* <root>/NAME */
	int sock;	    /* this side's end of the socketpair */
	/* reports of refusals */
	uint64_t window_ns;
	unsigned int in_window;
	unsigned long suppressed;
	bool report_failed;
	/* limits: where they are, the command's start, the timeout's end, CPU throttling seen */
	struct limit_cgroups lc;
	uint64_t start_ns, deadline_ns;
	bool timed_out, throttled;
	bool egretd_timeout; /* egretd took the timeout: it kills; egretctl's own is a fallback */
	uint64_t asked_ns;   /* when egretd was asked: its time counts from about then */
	uint64_t cpu0[3];    /* cpu.stat at the start: periods, throttled, throttled ns */
};

/* Signals egretctl passes on to the command; SIGCHLD is how it learns the command ended. */
static const int forwarded[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH };

int run__parse_user(const char *arg, struct sandbox_spec *spec)
{
	char buf[64], *colon;
	uint64_t uid, gid;

	if (str_copy(buf, sizeof(buf), arg) >= sizeof(buf) - 1)
		return -EINVAL;
	colon = strchr(buf, ':');
	if (colon)
		*colon++ = '\0';
	if (parse_u64(buf, UINT32_MAX - 1, &uid) ||
	    (colon && parse_u64(colon, UINT32_MAX - 1, &gid)))
		return -EINVAL;
	if (!colon)
		gid = uid;
	if (!uid || !gid)
		return -EINVAL;
	spec->uid = (uint32_t)uid;
	spec->gid = (uint32_t)gid;
	spec->ids = 1;
	spec->user_given = true;
	return 0;
}

/* ---- before the fork -------------------------------------------------------------------------- */

/* Refuse unless every egret program is attached to the root cgroup. */
static int require_enforcement(struct egret_paths *p)
{
	char missing[1024];
	int n;

	if (paths__open_root(p)) {
		log_note("refusing to run: egret's root cgroup %s does not exist "
			 "(is egretd running?)",
			 p->cgroup_root);
		return -ENOENT;
	}
	n = loader__check(p, missing, sizeof(missing));
	if (n < 0) {
		log_note("refusing to run: cannot check enforcement on %s: %s", p->cgroup_root,
			 strerror(-n));
		return n;
	}
	if (n > 0) {
		log_note("refusing to run: egret enforcement is not attached to %s "
			 "(missing: %s); start egretd first",
			 p->cgroup_root, missing);
		return -ENOLINK;
	}
	return 0;
}

/* The sandbox's cgroup; a generated name must be a new sandbox, never one that exists. */
static int run_create(struct run *r, char *gen, size_t size, bool *created)
{
	struct run_opts *o = r->o;
	int err = 0;

	if (o->name)
		err = sandbox__create(r->p->cgroup_root, o->name, created);
	for (int i = 0; !o->name && i < 8 && !err && !*created; i++) {
		sandbox__generate_name(gen, size);
		err = sandbox__create(r->p->cgroup_root, gen, created);
	}
	if (!o->name) {
		o->name = gen;
		if (!err && !*created)
			err = -EEXIST;
		if (!err && !o->quiet)
			log_note("sandbox %s", gen);
	}
	if (!err)
		err = join_path(r->dir, sizeof(r->dir), r->p->cgroup_root, o->name);
	if (err)
		log_note("failed to create sandbox cgroup %s/%s: %s", r->p->cgroup_root, o->name,
			 strerror(-err));
	return err;
}

/* The "protect" lines of egretd's reply, and the paths egretctl knows itself. */
static int protect_paths(struct run *r, char *reply)
{
	char self[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	size_t lines = 0;
	int err = 0;

	for (char *save, *l = strtok_r(reply, "\n", &save); l && !err;
	     l = strtok_r(NULL, "\n", &save), lines++)
		err = ns_protect__add_line(&r->protect, l);
	if (err || !lines)
		return err ? err : -EPROTO;
	if (n > 0)
		self[n] = '\0';
	err = ns_protect__add(&r->protect, "binary", n > 0 ? self : NULL);
	if (err)
		return err;
	err = ns_protect__add(&r->protect, "control", r->p->control);
	if (err)
		return err;
	return ns_protect__add(&r->protect, "state-dir", r->p->state_dir);
}

/* Register the sandbox with egretd: it installs the sandbox's rules, reports its start with
 * what the command is given, and names its files. Without an answer a sandbox with a mount
 * namespace is refused (egret's files could not all be covered); one without still runs,
 * without network until egretd registers it.
 */
static int prepare_sandbox(struct run *r)
{
	char words[SANDBOX_SPEC_WORDS][SANDBOX_SPEC_WORD], *req[4 + SANDBOX_SPEC_WORDS];
	char timeout[32], watch[] = "watch=cpu";
	char *reply = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&reply, &len);
	bool need = r->o->spec.ns & SANDBOX_NS_MOUNT;
	int rc, err = 0, n = 2 + SANDBOX_SPEC_WORDS;

	req[0] = "prepare";
	req[1] = (char *)r->o->name;
	sandbox_spec__words(&r->o->spec, words);
	for (int i = 0; i < SANDBOX_SPEC_WORDS; i++)
		req[2 + i] = words[i];
	/* egretd keeps the time too: the sandbox ends then even if egretctl does not live on */
	if (r->o->limits.timeout_ms) {
		snprintf(timeout, sizeof(timeout), "timeout=%llu",
			 (unsigned long long)r->o->limits.timeout_ms);
		req[n++] = timeout;
	}
	/* a v1 CPU limit is egretctl's to watch (egretd watches v2 cgroups' cpu.stat) */
	if (r->o->limits.cpu_milli && r->lc.cpu_v1)
		req[n++] = watch;
	r->asked_ns = now_ns(CLOCK_MONOTONIC);
	rc = out ? control__call(r->p->control, n, req, out, stderr, 30) : -ENOMEM;
	r->egretd_timeout = rc == 0 && r->o->limits.timeout_ms;
	if (out)
		fclose(out);
	if (rc < 0 && need) {
		log_note("refusing to run: egretd is not answering on %s (%s), and only it "
			 "can say which of its files to hide from the sandbox (--share mount or "
			 "--privileged runs without)",
			 r->p->control, strerror(-rc));
		err = rc;
	} else if (rc < 0) {
		log_warn("egretd is not answering on %s (%s): sandbox %s "
			 "has no network until egretd registers it",
			 r->p->control, strerror(-rc), r->o->name);
	} else if (rc > 0) {
		log_note("egretd could not prepare sandbox %s", r->o->name);
		err = -EPERM;
	} else if (need && (err = protect_paths(r, reply ? reply : (char *)""))) {
		log_note("refusing to run: egretd did not say which of its files to hide "
			 "from the sandbox (%s; an egretd older than this egretctl?)",
			 strerror(-err));
	}
	free(reply);
	return err;
}

/* ---- the child ---------------------------------------------------------------------------------- */

static int send_msg(int sock, char tag, const void *data, size_t len, int fd)
{
	char buf[16], cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = 1 + len };
	struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1 };

	buf[0] = tag;
	memcpy(buf + 1, data, len);
	if (fd >= 0) {
		struct cmsghdr *c;

		memset(cbuf, 0, sizeof(cbuf));
		mh.msg_control = cbuf;
		mh.msg_controllen = sizeof(cbuf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

/* The next message: its tag (0 at the end), data into buf, a passed descriptor into *fd. */
static char recv_msg(int sock, void *data, size_t len, int *fd, int flags)
{
	char buf[16], cbuf[CMSG_SPACE(sizeof(int))];
	struct iovec iov = { .iov_base = buf, .iov_len = sizeof(buf) };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = cbuf,
			     .msg_controllen = sizeof(cbuf) };
	ssize_t n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
	struct cmsghdr *c = n > 0 ? CMSG_FIRSTHDR(&mh) : NULL;

	if (c && c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS && fd)
		memcpy(fd, CMSG_DATA(c), sizeof(int));
	if (n <= 0 || (size_t)n != 1 + len)
		return 0;
	memcpy(data, buf + 1, len);
	return buf[0];
}

/* Close inherited descriptors above 2, except the first `keep` of them: a socket opened
 * outside the sandbox would not be subject to its hooks.
 */
static void close_inherited(int keep)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] != '.' && fd > 2 + keep && fd != dirfd(d))
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	closedir(d);
}

__attribute__((noreturn)) static void child_fail(const char *what, int err)
{
	log_note("cannot start the sandbox: %s: %s", what, strerror(-err));
	_exit(EXIT_RUN_FAILED);
}

/* Exec the command, with the signal state egretctl inherited. */
__attribute__((noreturn)) static void child_exec(const struct run_opts *o, const sigset_t *mask,
						 const struct sigaction *chld)
{
	int err;

	close_inherited((int)o->keep);
	sigaction(SIGCHLD, chld, NULL);
	sigprocmask(SIG_SETMASK, mask, NULL);
	execvp(o->argv[0], o->argv);
	err = errno;
	log_note("cannot run %s: %s", o->argv[0], strerror(err));
	_exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC);
}

/* What the sandbox reads in /proc/1/cmdline: not egretctl's options (egret's paths). */
static void init_rename(const struct run_opts *o)
{
	char *start = o->self_argv[0], *end;

	if (!o->self_argc || !start)
		return;
	end = o->self_argv[o->self_argc - 1];
	end += strlen(end) + 1;
	memset(start, 0, (size_t)(end - start));
	str_copy(start, (size_t)(end - start), "egretctl-init");
	prctl(PR_SET_NAME, "egretctl-init", 0, 0, 0);
}

/* pid 1 of the sandbox: fork the command, pass signals on to it (not those the kernel sent,
 * which reached it too, nor its own), reap every orphan, and when the command ends tell
 * egretctl how (the namespace's other processes are killed as init exits).
 */
__attribute__((noreturn)) static void child_init(struct run *r, const sigset_t *mask,
						 const struct sigaction *chld, const sigset_t *set)
{
	pid_t cmd = fork();

	if (cmd == 0)
		child_exec(r->o, mask, chld);
	if (cmd < 0)
		child_fail("fork", -errno);
	init_rename(r->o);
	for (;;) {
		siginfo_t si;
		int sig = sigwaitinfo(set, &si), status;
		pid_t pid;

		if (sig != SIGCHLD) {
			if (sig > 0 && si.si_code != SI_KERNEL && si.si_pid != cmd)
				kill(cmd, sig);
			continue;
		}
		while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
			if (pid == cmd) {
				send_msg(r->sock, 'x', &status, sizeof(status), -1);
				_exit(0);
			}
		}
	}
}

/* The namespaces, as far as the child can make them before egretctl writes its maps. */
static void child_namespaces(struct run *r)
{
	const struct sandbox_spec *s = &r->o->spec;
	struct ns_stage st = { .spec = s,
			       .protect = &r->protect,
			       .state_dir = r->p->state_dir,
			       .sandbox_dir = r->dir,
			       .cgroup_mount = r->p->cgroup_mount };
	char what[PATH_MAX + 32];
	int err = 0;

	if (s->ns & SANDBOX_NS_MOUNT) {
		err = ns__stage(&st, what, sizeof(what));
		if (err)
			log_note("cannot hide egret's state from the sandbox");
	}
	if (err)
		child_fail(what, err);
	err = ns__unshare(s);
	if (err)
		child_fail("unshare", err);
	if ((s->ns & SANDBOX_NS_NET) && (err = ns__loopback_up()))
		child_fail("loopback up in the sandbox's network namespace", err);
}

/* After egretctl's part: root of the user namespace, the cgroup namespace, the profile. */
static void child_confine(struct run *r)
{
	const struct sandbox_spec *s = &r->o->spec;
	int err, fd;

	if ((s->ns & SANDBOX_NS_USER) && (err = ns__become_root()))
		child_fail("root of the user namespace", err);
	if ((s->ns & SANDBOX_NS_CGROUP) && unshare(CLONE_NEWCGROUP))
		child_fail("cgroup namespace", -errno);
	if (s->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		child_fail("no_new_privs", -errno);
	if (s->seccomp) {
		fd = seccomp__install_sandbox_filter(s->ns & SANDBOX_NS_PID);
		if (fd < 0)
			child_fail("the seccomp profile", fd);
		err = send_msg(r->sock, 's', NULL, 0, fd);
		close(fd);
		if (err)
			child_fail("passing the seccomp listener", err);
	}
	/* nothing in the sandbox may ptrace or read the memory of its init (host-built) */
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

__attribute__((noreturn)) static void run_child(struct run *r, const sigset_t *mask,
						const struct sigaction *chld, const sigset_t *set)
{
	char go;

	child_namespaces(r);
	if (send_msg(r->sock, 'n', NULL, 0, -1) || recv_msg(r->sock, &go, 0, NULL, 0) != 'g')
		_exit(EXIT_RUN_FAILED); /* egretctl said why */
	child_confine(r);
	if (r->o->spec.ns & SANDBOX_NS_PID)
		child_init(r, mask, chld, set);
	child_exec(r->o, mask, chld);
}

/* ---- the parent -------------------------------------------------------------------------------- */

static int enter_sandbox(struct run *r, pid_t child)
{
	char self[PATH_MAX];
	int err = limits__join(&r->lc, child);

	if (err) {
		log_note("failed to move the command into the v1 cgroups of its limits: %s",
			 strerror(-err));
		return err;
	}
	err = cgroup__join(r->dir, child);
	if (err) {
		log_note("failed to move the command into sandbox cgroup %s: %s", r->dir,
			 strerror(-err));
		return err;
	}
	err = cgroup__of_pid(child, r->p->cgroup_mount, self, sizeof(self));
	if (err || strcmp(self, r->dir) != 0) {
		log_note("the command is not in sandbox cgroup %s after joining it "
			 "(in %s)",
			 r->dir, err ? strerror(-err) : self);
		return -EPERM;
	}
	return 0;
}

/* The parent's side of the set-up: maps, cgroup, go; the seccomp listener into *listener. */
static int run_setup(struct run *r, pid_t child, int *listener)
{
	const struct sandbox_spec *s = &r->o->spec;
	int err;

	if (recv_msg(r->sock, NULL, 0, NULL, 0) != 'n')
		return -ECHILD; /* the child said why */
	if (s->ns & SANDBOX_NS_USER) {
		err = ns__write_maps(child, s);
		if (err) {
			log_note("cannot map root of the sandbox to host uid %u: %s", s->uid,
				 strerror(-err));
			return err;
		}
	}
	err = enter_sandbox(r, child);
	if (err)
		return err;
	err = send_msg(r->sock, 'g', NULL, 0, -1);
	if (err)
		return err;
	if (s->seccomp && recv_msg(r->sock, NULL, 0, listener, 0) != 's')
		return -ECHILD;
	return 0;
}

/* Tell egretd about one refusal (at most REPORTS_PER_S a second one by one; the others are
 * counted into the next report).
 */
static void report_refusal(struct run *r, const struct seccomp_refusal *f)
{
	char w[12][24], *req[13] = { "seccomp", (char *)r->o->name };
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	FILE *null = fopen("/dev/null", "we");
	int rc;

	if (now - r->window_ns > 1000000000ull) {
		r->window_ns = now;
		r->in_window = 0;
	}
	if (f && r->in_window++ >= REPORTS_PER_S) {
		r->suppressed++;
		if (null)
			fclose(null);
		return;
	}
	snprintf(w[0], sizeof(w[0]), "%u", f ? f->pid : 0);
	snprintf(w[1], sizeof(w[1]), "%u", f ? f->arch : 0);
	snprintf(w[2], sizeof(w[2]), "%u", f ? f->nr : 0);
	snprintf(w[3], sizeof(w[3]), "%d", f ? f->err : 0);
	for (int i = 0; i < 6; i++)
		snprintf(w[4 + i], sizeof(w[4 + i]), "%llu",
			 f ? (unsigned long long)f->args[i] : 0ull);
	snprintf(w[10], sizeof(w[10]), "%lu", r->suppressed);
	for (int i = 0; i < 11; i++)
		req[2 + i] = w[i];
	rc = null ? control__call(r->p->control, 13, req, null, null, 2) : -ENOMEM;
	if (null)
		fclose(null);
	if (rc == 0)
		r->suppressed = 0;
	else if (!r->report_failed) {
		r->report_failed = true;
		log_warn("egretd did not take the report of a refused system call "
			 "(%s); refusals are still refused, but not all are in the event stream",
			 rc < 0 ? strerror(-rc) : "refused");
	}
}

static void on_listener(struct run *r, int *listener, short revents)
{
	struct seccomp_refusal f;
	int err;

	if (revents & POLLIN) {
		/* reported while the caller waits, so egretd still finds it in /proc */
		err = seccomp__receive(*listener, &f);
		if (!err) {
			report_refusal(r, &f);
			err = seccomp__reply(*listener, &f);
		}
		if (!err || err == -ENOENT || err == -EINTR)
			return;
	}
	close(*listener);
	*listener = -1;
}

/* Tell egretd a limit was hit (a ResourceLimit event): KIND is timeout, cpu-throttled (the
 * first throttled period) or cpu-summary (at the end, when any was).
 */
static void report_limit(struct run *r, const char *kind, uint64_t limit, uint64_t usage,
			 const uint64_t cpu[3])
{
	char w[6][24], *req[8] = { "limit", (char *)r->o->name, (char *)kind };
	FILE *null = fopen("/dev/null", "we");
	int rc;

	snprintf(w[0], sizeof(w[0]), "%llu", (unsigned long long)limit);
	snprintf(w[1], sizeof(w[1]), "%llu", (unsigned long long)usage);
	for (int i = 0; i < 3; i++)
		snprintf(w[2 + i], sizeof(w[2 + i]), "%llu",
			 cpu ? (unsigned long long)(cpu[i] - r->cpu0[i]) : 0ull);
	for (int i = 0; i < 5; i++)
		req[3 + i] = w[i];
	rc = null ? control__call(r->p->control, 8, req, null, null, 2) : -ENOMEM;
	if (null)
		fclose(null);
	if (rc)
		log_warn("egretd did not take the report of sandbox %s's %s (%s): it is not in "
			 "the event stream",
			 r->o->name, kind, rc < 0 ? strerror(-rc) : "refused");
}

/* The sandbox is frozen (its processes stop where they are, nothing more runs), reported, then
 * killed whole (limits__kill).
 */
static void kill_at_timeout(struct run *r)
{
	uint64_t ran = (now_ns(CLOCK_MONOTONIC) - r->start_ns) / 1000000;

	r->timed_out = true;
	limits__freeze(r->dir);
	log_note("sandbox %s: killed at its --timeout of %llu ms (ran %llu ms)", r->o->name,
		 (unsigned long long)r->o->limits.timeout_ms, (unsigned long long)ran);
	report_limit(r, "timeout", r->o->limits.timeout_ms, ran, NULL);
	limits__kill(r->dir);
}

/* A command that died of SIGKILL at or after its timeout, egretd holding the timeout: egretd
 * ended it (and reported it): said so, and egretctl exits 124.
 */
static void killed_by_egretd(struct run *r, int wstatus)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC), ran = (now - r->start_ns) / 1000000;

	if (!r->egretd_timeout || r->timed_out || !WIFSIGNALED(wstatus) ||
	    WTERMSIG(wstatus) != SIGKILL || (now - r->asked_ns) / 1000000 < r->o->limits.timeout_ms)
		return;
	r->timed_out = true;
	log_note("sandbox %s: killed at its --timeout of %llu ms (ran %llu ms)", r->o->name,
		 (unsigned long long)r->o->limits.timeout_ms, (unsigned long long)ran);
}

/* What the limits ask of the supervisor now: kill at the timeout, a look at the CPU limit's
 * throttling (once a second). How long poll may wait, -1 for ever.
 */
static int limits_tick(struct run *r)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC), cpu[3];
	int wait = -1;

	if (r->deadline_ns && !r->timed_out) {
		if (now >= r->deadline_ns)
			kill_at_timeout(r);
		else
			wait = (int)((r->deadline_ns - now + 999999) / 1000000);
	}
	if (r->o->limits.cpu_milli && r->lc.cpu_v1 && !r->throttled) {
		if (limits__cpu_stat(&r->lc, &cpu[0], &cpu[1], &cpu[2]) == 0 &&
		    cpu[1] > r->cpu0[1]) {
			r->throttled = true;
			report_limit(r, "cpu-throttled", r->o->limits.cpu_milli, 0, cpu);
		}
		if (!r->throttled)
			wait = wait < 0 || wait > 1000 ? 1000 : wait;
	}
	return wait;
}

/* Pass signals on until the child ends, answering refusals meanwhile; its wait status into
 * *wstatus. A signal the kernel sent (the terminal's ^C, ^\, hangup, window size: it went to
 * the command's process group too) or that the child sent is not passed on again.
 */
static int run_supervise(struct run *r, pid_t child, const sigset_t *set, int listener,
			 int *wstatus)
{
	int sfd = signalfd(-1, set, SFD_CLOEXEC), err = 0;

	if (sfd < 0)
		return waitpid(child, wstatus, 0) == child ? 0 : -errno;
	for (;;) {
		struct pollfd pfd[2] = { { .fd = sfd, .events = POLLIN },
					 { .fd = listener, .events = POLLIN } };
		struct signalfd_siginfo si;
		int wait_ms = limits_tick(r);

		if (poll(pfd, listener >= 0 ? 2 : 1, wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			err = -errno;
			break;
		}
		if (listener >= 0 && pfd[1].revents)
			on_listener(r, &listener, pfd[1].revents);
		if (!(pfd[0].revents & POLLIN) || read(sfd, &si, sizeof(si)) != sizeof(si))
			continue;
		if (si.ssi_signo == SIGCHLD) {
			if (waitpid(child, wstatus, WNOHANG) == child)
				break;
		} else if (si.ssi_code != SI_KERNEL && (pid_t)si.ssi_pid != child) {
			kill(child, (int)si.ssi_signo);
		}
	}
	if (listener >= 0)
		close(listener);
	if (r->suppressed)
		report_refusal(r, NULL);
	if (r->throttled) {
		uint64_t cpu[3];

		if (limits__cpu_stat(&r->lc, &cpu[0], &cpu[1], &cpu[2]) == 0)
			report_limit(r, "cpu-summary", r->o->limits.cpu_milli,
				     (now_ns(CLOCK_MONOTONIC) - r->start_ns) / 1000000, cpu);
	}
	close(sfd);
	return err;
}

/* The command's wait status: the init's message when there is one, else the child's own. */
static void command_status(struct run *r, int *wstatus)
{
	int status;

	if (recv_msg(r->sock, &status, sizeof(status), NULL, MSG_DONTWAIT) == 'x')
		*wstatus = status;
}

static int run_command(struct run *r, int *wstatus)
{
	struct sigaction dfl = { .sa_handler = SIG_DFL }, chld;
	int sv[2], err, listener = -1;
	sigset_t set, old;
	pid_t child;

	sigemptyset(&set);
	for (size_t i = 0; i < ARRAY_SIZE(forwarded); i++)
		sigaddset(&set, forwarded[i]);
	sigaddset(&set, SIGCHLD);
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	/* SIGCHLD ignored would reap the child for us: waitpid must see it */
	sigaction(SIGCHLD, &dfl, &chld);
	sigprocmask(SIG_BLOCK, &set, &old);
	fflush(NULL);
	child = ns__fork(r->o->spec.ns & SANDBOX_NS_PID);
	if (child == 0) {
		close(sv[0]);
		r->sock = sv[1];
		run_child(r, &old, &chld, &set);
	}
	close(sv[1]);
	r->sock = sv[0];
	if (child < 0) {
		err = (int)child;
		log_note("cannot fork: %s", strerror(-err));
		close(sv[0]);
		return err;
	}
	err = run_setup(r, child, &listener);
	if (err) {
		kill(child, SIGKILL);
		waitpid(child, wstatus, 0);
		*wstatus = EXIT_RUN_FAILED << 8;
	} else {
		r->start_ns = now_ns(CLOCK_MONOTONIC);
		if (r->o->limits.timeout_ms)
			r->deadline_ns =
				r->start_ns + r->o->limits.timeout_ms * 1000000ull +
				(r->egretd_timeout ? RUN_TIMEOUT_GRACE_MS * 1000000ull : 0);
		if (r->o->limits.cpu_milli)
			limits__cpu_stat(&r->lc, &r->cpu0[0], &r->cpu0[1], &r->cpu0[2]);
		err = run_supervise(r, child, &set, listener, wstatus);
		killed_by_egretd(r, *wstatus);
		command_status(r, wstatus);
	}
	close(sv[0]);
	return err;
}

/* Exit as the command did: its exit status, or death by the same signal (without a core dump
 * of egretctl's own); the shell shows 128 + the signal either way.
 */
static int exit_like(int wstatus)
{
	sigset_t one;
	int sig;

	if (WIFEXITED(wstatus))
		return WEXITSTATUS(wstatus);
	sig = WTERMSIG(wstatus);
	prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
	signal(sig, SIG_DFL);
	sigemptyset(&one);
	sigaddset(&one, sig);
	sigprocmask(SIG_UNBLOCK, &one, NULL);
	raise(sig);
	return 128 + sig;
}

/* The sandbox's limits where the host has them; egretctl refuses to run without one asked. */
static int run_limits(struct run *r)
{
	char err[PATH_MAX + 256];
	const struct limits *l = &r->o->limits;
	int e;

	if (!l->memory && !l->memory_high && !l->cpu_milli && !l->pids)
		return 0;
	e = limits__apply(l, r->p->cgroup_mount, r->p->cgroup_root, r->o->name, &r->lc, err,
			  sizeof(err));
	if (e)
		log_note("refusing to run: %s", err);
	return e;
}

/* The sandbox's cgroup goes when egretctl made it; one that was there already stays. */
static void run_cleanup(struct run *r, bool created)
{
	int err = limits__remove(&r->lc);

	if (err)
		log_note("cannot remove the v1 cgroups of sandbox %s's limits: %s", r->o->name,
			 strerror(-err));
	if (!created)
		return;
	err = sandbox__remove(r->p->cgroup_root, r->o->name, RUN_REMOVE_WAIT_MS);
	if (err == -EBUSY)
		log_note("sandbox %s still has processes %u ms after the command ended; "
			 "its cgroup %s is left in place",
			 r->o->name, RUN_REMOVE_WAIT_MS, r->dir);
	else if (err)
		log_note("cannot remove sandbox cgroup %s: %s", r->dir, strerror(-err));
}

/* Host ids for the user namespace, and the sandbox's cgroup delegated to them. */
static int run_ids(struct run *r)
{
	struct sandbox_spec *s = &r->o->spec;
	int err;

	if (!(s->ns & SANDBOX_NS_USER))
		return 0;
	err = ns__pick_ids(r->p->cgroup_root, r->o->name, s);
	if (err)
		log_note("cannot give sandbox %s host ids: %s", r->o->name, strerror(-err));
	return err;
}

int run__sandboxed(struct egret_paths *p, struct run_opts *o)
{
	struct run r = { .p = p, .o = o, .sock = -1 };
	int wstatus = EXIT_RUN_FAILED << 8;
	char generated[32];
	bool created = false;

	if (require_enforcement(p))
		return EXIT_RUN_FAILED;
	if (run_create(&r, generated, sizeof(generated), &created))
		return EXIT_RUN_FAILED;
	/* last look before the child joins: once inside, bpf(2) is a tamper attempt (and links
	 * are pinned, so only an explicit uninstall could detach them meanwhile)
	 */
	if (!run_limits(&r) && !run_ids(&r) && !prepare_sandbox(&r) && !require_enforcement(p))
		run_command(&r, &wstatus);
	run_cleanup(&r, created);
	ns_protect__free(&r.protect);
	/* like timeout(1): 124 when the time ran out */
	return r.timed_out ? EXIT_TIMEOUT : exit_like(wstatus);
}
