/* Red team of the container support (sandboxes wherever a runtime or a hand put them): what a
 * hostile process in a sandbox, root there and, where a runtime placed it without a user
 * namespace, holding host capabilities, may try to stop being its sandbox's (and pass egret's
 * egress rules as the host's), or to reach egretd's registrations. Each attack is a test that
 * asserts the protection holds, next to a positive control that shows the test would see the
 * attack succeed if the protection were not there (the same step from the host works).
 *
 * Tests whose comment says "Was a hole" describe an attack that worked before the fix their
 * comment names; their messages still say HOLE when the attack works again.
 *
 * The instance's tree (harness_nest_root): <mount>/NAME is where egretd attaches (the "host"
 * of this instance), NAME/egret its root (watched), NAME/ctrs the place of hand-registered
 * "containers" (not watched: registration alone makes them sandboxes, like Docker's
 * system.slice), NAME/host a plain host cgroup under the attach point (egret's socket hooks run
 * there and pass it). Traffic goes only to SERVER, an address on the loopback of the test's own
 * network namespace.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/sched.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cgroup.h"
#include "control.h"
#include "harness.h"
#include "util.h"

#define SERVER "192.0.2.80"
#define PORT   8080

static int listener = -1;
static char top[PATH_MAX];	  /* <mount>/NAME: egretd's attach point */
static char hostcg[PATH_MAX + 8]; /* NAME/host: a host cgroup below the attach point */
static char ctrs[PATH_MAX + 8];	  /* NAME/ctrs: hand-registered cgroups (not watched) */

static void setup(void)
{
	harness_setup(true);
	cr_assert_eq(netns_addr("lo", SERVER "/32"), 0);
	cr_assert_eq(harness_nest_root(T), 0);
	snprintf(top, sizeof(top), "%s", T->attach);
	snprintf(hostcg, sizeof(hostcg), "%s/host", top);
	snprintf(ctrs, sizeof(ctrs), "%s/ctrs", top);
	cr_assert_eq(mkdir(hostcg, 0755), 0);
	cr_assert_eq(mkdir(ctrs, 0755), 0);
	harness_setup_listen(&listener, SERVER, PORT);
}

TestSuite(redteam, .init = setup, .fini = harness_teardown, .timeout = 240);

/* ---- helpers ------------------------------------------------------------------------------ */

/* What a child reports, in memory it shares with the test (it may be killed at any step). */
struct report {
	int step;	  /* the last step reached */
	int before;	  /* connect to SERVER before the attack: 0 or an errno */
	int helper;	  /* a helper's raw wait status */
	int moved;	  /* the move (or request) returned: 0 or an errno */
	int after;	  /* connect to SERVER after the attack: 0 or an errno, -1 not tried */
	int writer_alive; /* a writer outlived its move (pull_parent) */
	int control_rc;	  /* a control request's status */
	char text[2048];  /* what egretd answered, what the child saw */
};

static struct report *report_new(void)
{
	struct report *r =
		mmap(NULL, sizeof(*r), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);

	cr_assert(r != MAP_FAILED);
	memset(r, 0, sizeof(*r));
	r->before = r->after = r->moved = r->helper = -1;
	r->control_rc = -1000;
	return r;
}

static int reach(void)
{
	return tcp_connect(SERVER, PORT, 0, 2000);
}

static bool killed(int status)
{
	return status >= 0 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL;
}

/* fn(arg) in a forked child (dies with the test); its raw wait status */
static int child_status(int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(fn(arg) & 0xff);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return status;
}

static int join(const char *cgroup)
{
	return -cgroup__join(cgroup, getpid());
}

static int join_pid(const char *cgroup, pid_t pid)
{
	return -cgroup__join(cgroup, pid);
}

static void mkcg(const char *path)
{
	cr_assert(mkdir(path, 0755) == 0 || errno == EEXIST, "mkdir %s: %s", path, strerror(errno));
}

static uint64_t cg_id(const char *path)
{
	uint64_t id = 0;

	cr_assert_eq(cgroup__id(path, &id), 0, "no cgroup %s", path);
	return id;
}

/* egretctl register PATH WORDS... from the host, asserted */
static void hand_register(const char *path, const char *word)
{
	char out[4096];

	cr_assert_eq(egretctl(T, out, sizeof(out), "register", path, word, NULL), 0,
		     "register %s: %s", path, out);
}

/* A request on egretd's control socket from the calling process; status, text in r->text */
static int control_req(struct report *r, int argc, char *const argv[], const int *fds, int nfds)
{
	FILE *out = fmemopen(r->text, sizeof(r->text) - 1, "w");
	int rc;

	if (!out)
		return -ENOMEM;
	setvbuf(out, NULL, _IONBF, 0);
	rc = control__call_fds(T->control, argc, argv, fds, nfds, out, out, 10);
	fclose(out);
	return rc;
}

static bool egretd_answers(void)
{
	char out[8192];

	return egretctl(T, out, sizeof(out), "status", NULL) == 0;
}

/* ---- 1. a peer moved into another sandbox becomes "foreign" ------------------------------- */

static const char *pull_dst; /* the other sandbox */

/* B, a child of A in A's sandbox: writes A's pid into another sandbox's cgroup.procs (made
 * first when it does not exist: a child of egret's root), then lives on for half a second and
 * says so in r->writer_alive. B has no parent-death signal: when egret kills A, whatever kills B
 * is egret too.
 */
static int pull_parent(void *arg)
{
	struct report *r = arg;

	if (mkdir(pull_dst, 0755) && errno != EEXIST)
		return 101;
	/* egret may kill the writer at its next system call, inside join_pid */
	r->moved = join_pid(pull_dst, getppid());
	usleep(500000);
	r->writer_alive = 1;
	return r->moved ? 100 : 0;
}

/* A: the sandbox's code, in its sandbox. Has its child move it into another sandbox (a "pull"
 * in egret's eyes before, which marked A foreign), then moves itself to the host and connects.
 */
static int launder_in(void *arg)
{
	struct report *r = arg;
	pid_t b;

	r->before = reach();
	r->step = 2;
	b = fork();
	if (b == 0)
		_exit(pull_parent(r));
	if (b < 0 || waitpid(b, &r->helper, 0) != b)
		return 99;
	r->step = 3;
	r->moved = join(hostcg);
	r->step = 4;
	r->after = reach();
	r->step = 5;
	return 0;
}

/* Whether the writer outlived its move: it would say so within half a second. */
static bool writer_lived(struct report *r)
{
	for (unsigned int i = 0; i < 30 * harness_timeout_scale() && !r->writer_alive; i++)
		usleep(50000);
	return r->writer_alive;
}

struct in_cg {
	const char *cgroup;
	int (*fn)(void *);
	void *arg;
};

static int run_in_cg(void *arg)
{
	struct in_cg *c = arg;

	if (join(c->cgroup))
		return 250;
	return c->fn(c->arg);
}

static int status_in(const char *cgroup, int (*fn)(void *), void *arg)
{
	struct in_cg c = { cgroup, fn, arg };

	return child_status(run_in_cg, &c);
}

static int reach_fn(void *arg)
{
	return reach();
}

/* a process moving itself into the cgroup arg: 0, or 100 when the write failed */
static int move_to(void *arg)
{
	return join(arg) ? 100 : 0;
}

/* positive control: a process in the host cgroup reaches SERVER */
static void host_reaches(void)
{
	int st = status_in(hostcg, reach_fn, NULL);

	cr_expect(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "positive control: the host could not reach " SERVER " (%d)", st);
}

/* Was a hole: cgroup_pull() (bpf/confine.bpf.c egret_cg_attach -> is_pull) took any task moved
 * into a sandbox by a writer in another sandbox for a host process pulled in, and marked it
 * TASK_FOREIGN: "never killed, not the sandbox's". A sandbox's own process that a peer (its own
 * child) moved into another sandbox was marked so too, only the writer died; the foreign process
 * then wrote itself into any host cgroup, egret let it go, and it passed every egress rule. Now
 * a move of a sandbox's process into another sandbox is an escape: the writer and the moved
 * process die.
 */
Test(redteam, a_peer_moved_into_another_sandbox_cannot_leave_as_foreign)
{
	char victim[PATH_MAX + 32], other[PATH_MAX + 32];
	struct report *r = report_new();
	int st;

	harness_setup_start("mode enforce\n", NULL);
	snprintf(victim, sizeof(victim), "%s/victim", ctrs);
	snprintf(other, sizeof(other), "%s/other", ctrs);
	mkcg(victim);
	mkcg(other);
	hand_register(victim, "name=victim");
	hand_register(other, "name=other");
	pull_dst = other;

	st = status_in(victim, launder_in, r);
	cr_expect_eq(r->before, EPERM, "the sandbox reached " SERVER " before the attack: %d",
		     r->before);
	/* the attack's first step is what egret means to stop: the writer dies */
	cr_expect_not(writer_lived(r), "the writer moving its peer out was not killed (%d)",
		      r->helper);
	/* secure: the moved process dies at its move (or at its move to the host), or stays
	 * denied
	 */
	cr_expect(killed(st) || (r->after != 0 && r->after != -1),
		  "HOLE: a process laundered through a pull left its sandbox (step %d, move %d) "
		  "and reached " SERVER " (connect %d)",
		  r->step, r->moved, r->after);

	/* positive controls: the host reaches SERVER; a sandboxed process moving itself to the
	 * host directly is killed (the test sees a kill)
	 */
	host_reaches();
	st = status_in(victim, move_to, hostcg);
	cr_expect(killed(st), "positive control: a direct escape was not killed (%d)", st);

	/* no second registration needed: the sandbox makes the other sandbox itself, a cgroup in
	 * egret's root
	 */
	snprintf(other, sizeof(other), "%s/made-by-the-sandbox", T->cgroup_root);
	pull_dst = other;
	memset(r, 0, sizeof(*r));
	r->before = r->after = r->moved = r->helper = -1;
	st = status_in(victim, launder_in, r);
	cr_expect_not(writer_lived(r), "the writer was not killed (%d)", r->helper);
	cr_expect(killed(st) || (r->after != 0 && r->after != -1),
		  "HOLE: laundered through a cgroup it made in egret's root, the process left its "
		  "sandbox (step %d, move %d) and reached " SERVER " (connect %d)",
		  r->step, r->moved, r->after);
}

/* ---- 2. a process that was in its cgroup before the cgroup was registered ----------------- */

struct late {
	int ready[2], go[2];
	struct report *r;
	const char *cgroup;
};

/* P: joins a cgroup nobody registered yet (a unit's, a VM's: egretctl register by hand, or a
 * runtime's that registers late), waits for the registration, then moves itself to the host.
 */
static int late_proc(void *arg)
{
	struct late *l = arg;
	struct report *r = l->r;
	char c = 0;

	if (join(l->cgroup))
		return 250;
	if (write(l->ready[1], "r", 1) != 1 || read(l->go[0], &c, 1) != 1)
		return 251;
	r->step = 1;
	r->before = reach();
	/* a child forked now is known to the kernel as the sandbox's: its escape is killed */
	r->helper = child_status(move_to, hostcg);
	r->step = 2;
	r->moved = join(hostcg);
	r->step = 3;
	r->after = reach();
	r->step = 4;
	return 0;
}

/* late_proc in a child, waiting in l->cgroup for the go: its pid */
static pid_t late_start(struct late *l)
{
	pid_t pid;
	char c;

	cr_assert_eq(pipe(l->ready), 0);
	cr_assert_eq(pipe(l->go), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(late_proc(l));
	}
	cr_assert_eq(read(l->ready[0], &c, 1), 1);
	return pid;
}

/* Was a hole: the kernel learns a task's sandbox when it forks, execs or moves (task_sandbox); a
 * process already in a cgroup when egretd registered it had no record (taskseed only walked
 * egret's root, at egretd's start). Its move of itself is judged by sandbox_before(), which for a
 * task without a record reads the current cgroup: after the move, the destination's. So the
 * move out of the registered sandbox was a move from the host to the host: allowed, no kill,
 * and the process was the host's. Now a registration records the processes already in the
 * cgroup as its sandbox's (engine_reg.c, taskseed__registered).
 */
Test(redteam, a_process_there_before_registration_cannot_leave)
{
	char vm[PATH_MAX + 32];
	struct report *r = report_new();
	struct late l = { .r = r };
	int st;
	pid_t pid;

	harness_setup_start("mode enforce\n", NULL);
	snprintf(vm, sizeof(vm), "%s/vm", ctrs);
	mkcg(vm);
	l.cgroup = vm;
	pid = late_start(&l);
	hand_register(vm, "name=vm");
	cr_assert_eq(write(l.go[1], "g", 1), 1);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect_eq(r->before, EPERM, "the registered cgroup reached " SERVER ": %d", r->before);
	cr_expect(killed(r->helper),
		  "positive control: a child forked after the registration left unkilled (%d)",
		  r->helper);
	cr_expect(killed(st) || (r->after != 0 && r->after != -1),
		  "HOLE: a process in its cgroup before the registration moved itself to the host "
		  "(step %d, move %d) unkilled and reached " SERVER " (connect %d)",
		  r->step, r->moved, r->after);
	host_reaches();
}

/* Was a hole: the same, for a pod that ran before egretd (a node where egret is installed, or
 * restarted with new maps): under a watched subtree its cgroup is a sandbox not registered yet
 * (no network), yet its process was never recorded (taskseed walked egret's root only), so it
 * walked out to the host and had the host's network. Now egretd's start records every process
 * in a sandbox below the attach point, as the kernel places it (taskseed__run).
 */
Test(redteam, a_process_older_than_egretd_in_a_watched_subtree_cannot_leave)
{
	char pods[PATH_MAX + 8], watch[PATH_MAX + 8], old[PATH_MAX + 32];
	const char *extra[] = { "--watch", watch, NULL };
	struct report *r = report_new();
	struct late l = { .r = r };
	int st;
	pid_t pid;

	snprintf(pods, sizeof(pods), "%s/pods", top);
	snprintf(watch, sizeof(watch), "%s", pods);
	snprintf(old, sizeof(old), "%s/old", pods);
	mkcg(pods);
	mkcg(old);
	l.cgroup = old;
	pid = late_start(&l);
	harness_setup_start("mode enforce\n", extra);
	cr_assert_eq(write(l.go[1], "g", 1), 1);
	cr_assert_eq(waitpid(pid, &st, 0), pid);
	cr_expect_eq(r->before, EPERM, "the unregistered pod reached " SERVER ": %d", r->before);
	cr_expect(killed(r->helper), "positive control: its new child left unkilled (%d)",
		  r->helper);
	cr_expect(killed(st) || (r->after != 0 && r->after != -1),
		  "HOLE: a process older than egretd in a watched subtree moved itself to the "
		  "host (step %d, move %d) unkilled and reached " SERVER " (connect %d)",
		  r->step, r->moved, r->after);
	host_reaches();
}

/* ---- 3. the control socket from a sandbox: /proc/PID/cgroup cut at 8 KiB ---------------- */

#define PEER_READ 8191 /* what cgroup__of_pid reads of /proc/PID/cgroup (its buffer - 1) */

/* The offset of the "0::" line in /proc/self/cgroup, and the text, or -1. */
static long v2_line_offset(char *buf, size_t size)
{
	int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
	ssize_t n, got = 0;
	char *p;

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf + got, size - 1 - (size_t)got)) > 0)
		got += n;
	close(fd);
	buf[got] = '\0';
	if (!strncmp(buf, "0::", 3))
		return 0;
	p = strstr(buf, "\n0::");
	return p ? p - buf + 1 : -1;
}

/* The current path of this process in the v1 hierarchy whose line names ctrl ("pids"). */
static size_t v1_path_len(const char *text, const char *ctrl)
{
	char pat[64];
	const char *p;

	snprintf(pat, sizeof(pat), ":%s:", ctrl);
	p = strstr(text, pat);
	if (!p)
		return 0;
	p += strlen(pat);
	return strcspn(p, "\n");
}

/* Move this process to a v1 cgroup <mnt>/<name>/... whose path (from the hierarchy's root) is
 * exactly len bytes long. 0 or -errno.
 */
static int v1_join_len(const char *mnt, const char *name, size_t len)
{
	char path[PATH_MAX * 2], comp[256];
	size_t base = 1 + strlen(name), rest, used;
	int err;

	if (len < base + 2 || len > 4000)
		return -EINVAL;
	used = (size_t)snprintf(path, sizeof(path), "%s/%s", mnt, name);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	rest = len - base;
	while (rest > 0) {
		size_t c = rest > 256 ? 200 : rest - 1;

		memset(comp, 'p', c);
		comp[c] = '\0';
		used += (size_t)snprintf(path + used, sizeof(path) - used, "/%s", comp);
		if (mkdir(path, 0755) && errno != EEXIST)
			return -errno;
		rest -= c + 1;
	}
	err = cgroup__join(path, getpid());
	return err;
}

static char v1_mounts[3][PATH_MAX];
static const char *const v1_ctrls[3] = { "pids", "freezer", "blkio" };
static pid_t peer_pid;

static void v1_cleanup(void *arg)
{
	char path[PATH_MAX * 2];

	if (peer_pid > 0) {
		kill(peer_pid, SIGKILL);
		waitpid(peer_pid, NULL, 0);
		peer_pid = 0;
	}
	for (int i = 0; i < 3; i++) {
		if (!v1_mounts[i][0])
			continue;
		snprintf(path, sizeof(path), "%s/%s", v1_mounts[i], T->name);
		cgroup_tree__remove(path);
	}
}

struct peer_attack {
	struct report *r;
	uint64_t id; /* the sandbox's cgroup id */
	int baseline_rc;
	char baseline[512];
	long offset; /* of the 0:: line after the padding */
	char seen[256];
};

/* Q: root in a sandbox a runtime placed without a user namespace, the control socket in reach
 * (bind-mounted, or the host's mount namespace). It pads its v1 cgroup paths (v1 moves are not
 * judged) so that the "0::" line of /proc/PID/cgroup starts at byte 8188: egretd's 8 KiB read
 * then ends right after "0::", and the peer's cgroup is read as the v2 root: the host's.
 */
static int peer_proc(void *arg)
{
	struct peer_attack *a = arg;
	struct report *r = a->r;
	char buf[65536], word[64];
	char *status[] = { "status" }, *unreg[] = { "unregister", word };
	long off;
	size_t grow[3] = { 3000, 3000, 0 }, cur;
	int rc;

	r->before = reach();
	r->step = 1;
	rc = control_req(r, 1, status, NULL, 0);
	a->baseline_rc = rc;
	snprintf(a->baseline, sizeof(a->baseline), "%s", r->text);
	r->step = 2;
	for (int i = 0; i < 3; i++) {
		off = v2_line_offset(buf, sizeof(buf));
		if (off < 0)
			return 90;
		cur = v1_path_len(buf, v1_ctrls[i]);
		if (i == 2)
			grow[2] = (size_t)(8188 - off);
		if (v1_join_len(v1_mounts[i], T->name, cur + grow[i]))
			return 91 + i;
	}
	a->offset = v2_line_offset(buf, sizeof(buf));
	snprintf(a->seen, sizeof(a->seen), "%.*s", 120, buf + (a->offset > 0 ? a->offset : 0));
	r->step = 3;
	snprintf(word, sizeof(word), "id=%llu", (unsigned long long)a->id);
	r->control_rc = control_req(r, 2, unreg, NULL, 0);
	r->step = 4;
	r->after = reach();
	r->step = 5;
	return 0;
}

/* Was a hole: cgroup__of_pid (user/core/cgroup.c) read /proc/PID/cgroup into 8 KiB and took
 * the first "0::" line; the v2 line is the last (on hybrid hosts after every v1 hierarchy's
 * line, on a pure v2 host after a named v1 hierarchy root can mount), and a process with host
 * privilege lengthens the v1 lines at will. peer__of_pid then placed the sandboxed peer at the
 * v2 root, engine__cgroup_in_sandbox said host, and the control socket served it: it
 * unregistered its own sandbox and reached a denied address. Now the file is read whole and
 * anything but the kernel's form (text cut short among it) is refused: the peer is unknown.
 */
Test(redteam, a_sandbox_cannot_pass_the_control_socket_peer_check)
{
	char box[PATH_MAX + 32], box2[PATH_MAX + 32], word[64];
	struct report *r = report_new();
	struct peer_attack *a =
		mmap(NULL, sizeof(*a), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *unreg[] = { "unregister", word };
	int st, rc;

	cr_assert(a != MAP_FAILED);
	memset(a, 0, sizeof(*a));
	a->r = r;
	for (int i = 0; i < 3; i++) {
		if (cgroup_v1__mount(v1_ctrls[i], v1_mounts[i], sizeof(v1_mounts[i])))
			cr_skip_test("no v1 %s hierarchy here (a pure v2 host: the attacker would "
				     "mount a named one)",
				     v1_ctrls[i]);
	}
	harness_at_teardown(v1_cleanup, NULL);
	harness_setup_start("mode enforce\n", NULL);
	snprintf(box, sizeof(box), "%s/box", ctrs);
	snprintf(box2, sizeof(box2), "%s/box2", ctrs);
	mkcg(box);
	mkcg(box2);
	hand_register(box, "name=box");
	hand_register(box2, "name=box2");
	a->id = cg_id(box);

	peer_pid = fork();
	cr_assert(peer_pid >= 0);
	if (peer_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(join(box) ? 250 : peer_proc(a));
	}
	cr_assert_eq(waitpid(peer_pid, &st, 0), peer_pid);
	peer_pid = 0;
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the attack could not be set up: %d", st);
	cr_expect_eq(r->before, EPERM, "the sandbox reached " SERVER " at first: %d", r->before);
	cr_expect_eq(a->baseline_rc, 1, "a plain request from the sandbox was not refused");
	cr_expect(strstr(a->baseline, "inside a sandbox"), "%s", a->baseline);
	cr_expect_eq(a->offset, PEER_READ - 3, "the padding missed: the 0:: line is at %ld",
		     a->offset);
	cr_expect_neq(r->control_rc, 0,
		      "HOLE: the sandbox's request was served (its 0:: line at byte %ld, cut after "
		      "'0::' by egretd's read; the full line: '%.60s'): %s",
		      a->offset, a->seen, r->text);
	cr_expect_neq(r->after, 0, "HOLE: the sandbox unregistered itself and reached " SERVER);

	/* positive control: the same request from the host is served (on another sandbox) */
	snprintf(word, sizeof(word), "id=%llu", (unsigned long long)cg_id(box2));
	rc = control_req(r, 2, unreg, NULL, 0);
	cr_expect_eq(rc, 0, "positive control: the host could not unregister: %s", r->text);
	st = status_in(box2, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "positive control: an unregistered cgroup is the host's (%d)", st);
	cr_expect(egretd_answers());
}

/* ---- 4. deeper than EGRET_CGROUP_DEPTH ---------------------------------------------------- */

/* make path/d0/d1/... n levels below path; out gets the deepest */
static void mk_levels(const char *path, int n, char *out, size_t size)
{
	size_t used = (size_t)snprintf(out, size, "%s", path);

	for (int i = 0; i < n; i++) {
		used += (size_t)snprintf(out + used, size - used, "/d%d", i);
		mkcg(out);
	}
}

struct deep {
	struct report *r;
	char deepest[PATH_MAX];
};

/* In the sandbox at level 15: make 12 levels below it (its own, allowed), go to the deepest
 * (level 27), connect, then move to the host from there.
 */
static int deep_proc(void *arg)
{
	struct deep *d = arg;
	struct report *r = d->r;

	if (join(d->deepest))
		return 250;
	r->step = 1;
	r->before = reach();
	r->step = 2;
	r->moved = join(hostcg);
	r->step = 3;
	r->after = reach();
	return 0;
}

/* Held: bpf_get_current_ancestor_cgroup_id() reads the levels from the v2 root down, so a task
 * 27 levels deep still sees its registered ancestor at level 15; egretd refuses registrations at
 * level 16 and deeper (check_place), so no sandbox sits where the walk cannot see it.
 */
Test(redteam, nesting_past_the_walk_depth_keeps_the_sandbox)
{
	char reg[PATH_MAX], tooDeep[PATH_MAX + 8], hostDeep[PATH_MAX], out[4096];
	struct report *r = report_new();
	struct deep *d =
		mmap(NULL, sizeof(*d), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	unsigned int level = 0;
	int st;

	cr_assert(d != MAP_FAILED);
	d->r = r;
	harness_setup_start("mode enforce\n", NULL);
	/* NAME is level 1, ctrs level 2: 13 more make level 15 */
	mk_levels(ctrs, 13, reg, sizeof(reg));
	cr_assert_eq(cgroup__level(T->cgroup_mount, reg, &level), 0);
	cr_assert_eq(level, 15);
	hand_register(reg, "name=deep");
	/* level 16: refused, and stays the host's (the kernel's walk would not see it) */
	snprintf(tooDeep, sizeof(tooDeep), "%s/x", reg);
	mkcg(tooDeep);
	cr_expect_neq(egretctl(T, out, sizeof(out), "register", tooDeep, "name=toodeep", NULL), 0,
		      "a registration at level 16 was accepted: %s", out);
	mk_levels(reg, 12, d->deepest, sizeof(d->deepest));

	st = child_status(deep_proc, d);
	cr_expect_eq(
		r->step >= 1 ? r->before : -2, EPERM,
		"27 levels deep in a sandbox registered at level 15, the sandbox reached " SERVER
		" (%d)",
		r->before);
	cr_expect(killed(st), "leaving from 27 levels deep was not killed (step %d, connect %d)",
		  r->step, r->after);
	/* positive control: the host at the same depth reaches SERVER */
	mk_levels(hostcg, 26, hostDeep, sizeof(hostDeep));
	st = status_in(hostDeep, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "positive control: the host 27 levels deep could not reach " SERVER " (%d)", st);
}

/* ---- 5. clone3(CLONE_INTO_CGROUP), exempt cgroups, cgroup namespaces ------------------------ */

static char marker[PATH_MAX + 32];

static int clone_into(void *arg)
{
	struct clone_args args;
	int fd = open(arg, O_RDONLY | O_DIRECTORY | O_CLOEXEC), st = -1;
	long pid;

	if (fd < 0)
		return 101;
	memset(&args, 0, sizeof(args));
	args.flags = CLONE_INTO_CGROUP;
	args.exit_signal = SIGCHLD;
	args.cgroup = (unsigned long long)fd;
	pid = syscall(SYS_clone3, &args, sizeof(args));
	if (pid == 0) {
		/* the child, outside: reaches SERVER and leaves a mark when it gets through */
		if (reach() == 0)
			close(open(marker, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
		_exit(0);
	}
	if (pid < 0)
		return 100;
	waitpid((pid_t)pid, &st, 0);
	return 0;
}

static int move_self_ns(void *arg)
{
	if (unshare(CLONE_NEWCGROUP))
		return 102;
	if (join(arg))
		return 100; /* the namespace refused the write */
	return reach() == 0 ? 0 : 103;
}

/* Held: a sandboxed process cannot become the host's by entering an exempt cgroup (or a cgroup
 * it makes inside one), by clone3 into the host or an exempt cgroup, or after a cgroup
 * namespace of its own: every move out is killed (sandbox_of_cgroup of an exempt cgroup is
 * NOT_A_SANDBOX, move_allowed refuses it).
 */
Test(redteam, exempt_cgroups_and_clone3_are_no_way_out)
{
	char box[PATH_MAX + 32], infra[PATH_MAX + 32], inside[PATH_MAX + 48];
	struct stat sb;
	int st;

	harness_setup_start("mode enforce\n", NULL);
	snprintf(box, sizeof(box), "%s/box", ctrs);
	snprintf(infra, sizeof(infra), "%s/infra", ctrs);
	snprintf(inside, sizeof(inside), "%s/made-by-sandbox", infra);
	snprintf(marker, sizeof(marker), "%s/escaped", T->tmpdir);
	mkcg(box);
	mkcg(infra);
	hand_register(box, "name=box");
	hand_register(infra, "exempt=1");

	st = status_in(box, move_to, infra);
	cr_expect(killed(st), "a move into an exempt cgroup was not killed (%d)", st);
	mkcg(inside);
	st = status_in(box, move_to, inside);
	cr_expect(killed(st), "a move into a cgroup inside an exempt one was not killed (%d)", st);
	st = status_in(box, clone_into, hostcg);
	cr_expect(killed(st), "clone3 into the host was not killed (%d)", st);
	st = status_in(box, clone_into, infra);
	cr_expect(killed(st), "clone3 into an exempt cgroup was not killed (%d)", st);
	cr_expect_neq(stat(marker, &sb), 0, "a clone3 child reached " SERVER " from outside");
	st = status_in(box, move_self_ns, hostcg);
	cr_expect(killed(st) || (WIFEXITED(st) && WEXITSTATUS(st) == 100),
		  "after unshare(CLONE_NEWCGROUP) the sandbox left and reached " SERVER " (%d)",
		  st);
	st = status_in(box, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == EPERM, "the sandbox reached " SERVER);

	/* positive controls: from the host the same moves and clone3 work and reach SERVER */
	st = status_in(hostcg, clone_into, infra);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "host clone3: %d", st);
	cr_expect_eq(stat(marker, &sb), 0,
		     "positive control: the host's clone3 child did not "
		     "reach " SERVER " from the exempt cgroup");
	st = status_in(infra, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "positive control: exempt is the host's");
}

/* ---- 6. cgroup ids, stale registrations ---------------------------------------------------- */

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Held: cgroup ids are kernfs node ids (64 bits on 64-bit kernels: a cyclic 32-bit number and a
 * generation), never the same twice, so a cgroup removed and made again under the same name is
 * another cgroup: its registration does not carry over. In a watched subtree the new one has no
 * network until registered.
 */
Test(redteam, a_cgroup_made_again_is_not_its_predecessor)
{
	enum {
		N = 3000
	};
	char pods[PATH_MAX + 8], watch[PATH_MAX + 8], pod[PATH_MAX + 32], path[PATH_MAX + 32];
	const char *extra[] = { "--watch", watch, NULL };
	uint64_t *ids = calloc(N, sizeof(*ids));
	uint64_t first, again;
	int st;

	cr_assert(ids);
	for (int i = 0; i < N; i++) {
		snprintf(path, sizeof(path), "%s/again", hostcg);
		mkcg(path);
		ids[i] = cg_id(path);
		cr_assert_eq(rmdir(path), 0);
	}
	qsort(ids, N, sizeof(*ids), cmp_u64);
	for (int i = 1; i < N; i++)
		cr_expect_neq(ids[i], ids[i - 1], "cgroup id %llu came twice",
			      (unsigned long long)ids[i]);
	free(ids);

	snprintf(pods, sizeof(pods), "%s/pods", top);
	snprintf(watch, sizeof(watch), "%s", pods);
	snprintf(pod, sizeof(pod), "%s/trusted", pods);
	mkcg(pods);
	mkcg(pod);
	harness_setup_start("mode enforce\n"
			    "sandbox container=trusted {\n"
			    "  allow " SERVER " tcp/8080\n"
			    "}\n",
			    extra);
	hand_register(pod, "container.id=trusted");
	first = cg_id(pod);
	st = status_in(pod, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0,
		  "positive control: the registered container could not reach " SERVER);
	/* v2 has no rename: a registered cgroup cannot be moved to another name or place */
	snprintf(path, sizeof(path), "%s/renamed", pods);
	cr_expect_neq(rename(pod, path), 0, "a registered cgroup was renamed");
	cr_assert_eq(rmdir(pod), 0);
	mkcg(pod);
	again = cg_id(pod);
	cr_expect_neq(again, first, "the cgroup made again has the old id");
	st = status_in(pod, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == EPERM,
		  "a cgroup made again under a registered container's name reached " SERVER " (%d)",
		  st);
}

/* ---- 7. the control socket from a sandbox --------------------------------------------------- */

struct ctl_try {
	struct report *r;
	uint64_t id;
	int rc_exempt, rc_unreg, rc_ns;
	char text[3][256];
};

static int ctl_proc(void *arg)
{
	struct ctl_try *c = arg;
	char word[64], cgword[PATH_MAX], own[PATH_MAX];
	char *exempt[] = { "register", "with=cgroup", cgword, "exempt=1" };
	char *unreg[] = { "unregister", word };
	int fd;

	if (cgroup__of_pid(0, T->cgroup_mount, own, sizeof(own)))
		return 90;
	snprintf(cgword, sizeof(cgword), "cgroup=%s", own + strlen(T->cgroup_mount));
	fd = open(own, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return 91;
	/* its own cgroup made exempt: the host's */
	c->rc_exempt = control_req(c->r, 4, exempt, &fd, 1);
	snprintf(c->text[0], sizeof(c->text[0]), "%s", c->r->text);
	snprintf(word, sizeof(word), "id=%llu", (unsigned long long)c->id);
	c->rc_unreg = control_req(c->r, 2, unreg, NULL, 0);
	snprintf(c->text[1], sizeof(c->text[1]), "%s", c->r->text);
	/* in a cgroup namespace of its own, rooted at its cgroup ("0::/") */
	if (unshare(CLONE_NEWCGROUP))
		return 92;
	c->rc_ns = control_req(c->r, 2, unreg, NULL, 0);
	snprintf(c->text[2], sizeof(c->text[2]), "%s", c->r->text);
	close(fd);
	c->r->after = reach();
	return 0;
}

/* Held (for a plain peer): the control socket refuses a peer identified in a sandbox, whatever
 * it asks, with its own cgroup's descriptor or in a cgroup namespace of its own.
 */
Test(redteam, the_control_socket_refuses_a_sandbox)
{
	char box[PATH_MAX + 32], box2[PATH_MAX + 32], word[64], cgword[PATH_MAX];
	struct report *r = report_new();
	struct ctl_try *c =
		mmap(NULL, sizeof(*c), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	char *exempt[] = { "register", "with=cgroup", cgword, "exempt=1" };
	char *unreg[] = { "unregister", word };
	int st, fd;

	cr_assert(c != MAP_FAILED);
	memset(c, 0, sizeof(*c));
	c->r = r;
	harness_setup_start("mode enforce\n", NULL);
	snprintf(box, sizeof(box), "%s/box", ctrs);
	snprintf(box2, sizeof(box2), "%s/box2", ctrs);
	mkcg(box);
	mkcg(box2);
	hand_register(box, "name=box");
	hand_register(box2, "name=box2");
	c->id = cg_id(box);
	st = status_in(box, ctl_proc, c);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%d", st);
	cr_expect_eq(c->rc_exempt, 1, "a sandbox exempted itself: %s", c->text[0]);
	cr_expect_eq(c->rc_unreg, 1, "a sandbox unregistered itself: %s", c->text[1]);
	cr_expect_eq(c->rc_ns, 1, "a sandbox in its own cgroup namespace was served: %s",
		     c->text[2]);
	cr_expect(strstr(c->text[1], "inside a sandbox"), "%s", c->text[1]);
	cr_expect_eq(r->after, EPERM, "the sandbox reached " SERVER);

	/* positive control: the host may (box2 exempted, box unregistered) */
	snprintf(cgword, sizeof(cgword), "cgroup=%s", box2 + strlen(T->cgroup_mount));
	snprintf(word, sizeof(word), "id=%llu", (unsigned long long)cg_id(box2));
	cr_expect_eq(control_req(r, 2, unreg, NULL, 0), 0, "%s", r->text);
	fd = open(box2, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cr_assert(fd >= 0);
	cr_expect_eq(control_req(r, 4, exempt, &fd, 1), 0, "%s", r->text);
	close(fd);
	st = status_in(box2, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "positive control: %d", st);
}

/* ---- 8. bad descriptors and hostile words (from the host: what the hook relays) ---------- */

static int reg_with(const char *with, const int *fds, int nfds, const char *const words[],
		    struct report *r)
{
	char *argv[80];
	int n = 0;

	argv[n++] = "register";
	if (with)
		argv[n++] = (char *)with;
	for (int i = 0; words && words[i] && n < 79; i++)
		argv[n++] = (char *)words[i];
	return control_req(r, n, argv, fds, nfds);
}

/* Held: a registration whose descriptors are not what it says (a file, a v1 cgroup, a socket,
 * a cgroup above the attach point, a namespace that is no namespace, too many, too few) or whose
 * words are hostile is refused, registers nothing, and egretd goes on answering.
 */
Test(redteam, bad_descriptors_and_words_register_nothing)
{
	char box[PATH_MAX + 32], cgword[PATH_MAX], pidsmnt[PATH_MAX], big[4200], name300[300];
	char lab[70][24];
	const char *words[80];
	struct report *r = report_new();
	int fds[6], sv[2], rc, st, n;

	harness_setup_start("mode enforce\n", NULL);
	snprintf(box, sizeof(box), "%s/box", ctrs);
	mkcg(box);
	snprintf(cgword, sizeof(cgword), "cgroup=%s", box + strlen(T->cgroup_mount));
	words[0] = cgword;
	words[1] = "name=box";
	words[2] = NULL;

	/* a regular file */
	fds[0] = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	rc = reg_with("with=cgroup", fds, 1, words, r);
	cr_expect_neq(rc, 0, "a file registered: %s", r->text);
	close(fds[0]);
	/* a v1 cgroup directory */
	if (cgroup_v1__mount("pids", pidsmnt, sizeof(pidsmnt)) == 0) {
		fds[0] = open(pidsmnt, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		rc = reg_with("with=cgroup", fds, 1, words, r);
		cr_expect_neq(rc, 0, "a v1 cgroup registered: %s", r->text);
		close(fds[0]);
	}
	/* a socket */
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	rc = reg_with("with=cgroup", sv, 1, words, r);
	cr_expect_neq(rc, 0, "a socket registered: %s", r->text);
	/* the v2 root, above the attach point */
	fds[0] = open(T->cgroup_mount, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = reg_with("with=cgroup", fds, 1, words, r);
	cr_expect_neq(rc, 0, "the v2 root registered: %s", r->text);
	close(fds[0]);
	/* the right cgroup, with a "network namespace" that is a socket */
	fds[0] = open(box, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	fds[1] = sv[1];
	rc = reg_with("with=cgroup,net", fds, 2, words, r);
	cr_expect_neq(rc, 0, "a socket for a netns registered: %s", r->text);
	/* descriptors and with= that disagree */
	rc = reg_with("with=cgroup,net,root", fds, 1, words, r);
	cr_expect_neq(rc, 0, "%s", r->text);
	rc = reg_with("with=cgroup,cgroup", fds, 2, words, r);
	cr_expect_neq(rc, 0, "%s", r->text);
	rc = reg_with("with=net", fds, 1, words, r);
	cr_expect_neq(rc, 0, "%s", r->text);
	/* more descriptors than a request carries */
	for (int i = 1; i < 6; i++)
		fds[i] = fds[0];
	rc = reg_with("with=cgroup", fds, 6, words, r);
	cr_expect_neq(rc, 0, "six descriptors: %s", r->text);
	close(sv[0]);
	close(sv[1]);

	/* hostile words */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "label.k=", 8);
	memset(name300, 'n', sizeof(name300) - 1);
	name300[sizeof(name300) - 1] = '\0';
	memcpy(name300, "name=", 5);
	{
		const char *const bad[][3] = {
			{ cgword, big, NULL },				/* over 4096 bytes */
			{ cgword, name300, NULL },			/* a name over 255 */
			{ cgword, "name=a b", NULL },			/* a space */
			{ cgword, "name=x{", NULL },			/* a policy brace */
			{ cgword, "exempt=2", NULL },			/* exempt is 1 */
			{ cgword, "label.=x", NULL },			/* no label key */
			{ cgword, "=x", NULL },				/* no key */
			{ cgword, "name=\xc0\xaf", NULL },		/* overlong UTF-8 */
			{ cgword, "name=a\x1b[2J", NULL },		/* a control character */
			{ cgword, "container.id=a", "container.id=b" }, /* a key twice */
		};

		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			rc = reg_with("with=cgroup", fds, 1, bad[i], r);
			cr_expect_neq(rc, 0, "hostile words %zu registered: %s", i, r->text);
		}
	}
	/* 65 labels: one more than a registration holds */
	n = 0;
	words[n++] = cgword;
	for (int i = 0; i < 65; i++) {
		snprintf(lab[i], sizeof(lab[i]), "label.k%d=v", i);
		words[n++] = lab[i];
	}
	words[n] = NULL;
	rc = reg_with("with=cgroup", fds, 1, words, r);
	cr_expect_neq(rc, 0, "65 labels registered: %s", r->text);
	close(fds[0]);

	cr_expect(egretd_answers(), "egretd stopped answering:\n%s", harness_log(T));
	/* nothing was registered: box is still the host's */
	st = status_in(box, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "a refused registration held (%d)", st);
	/* positive control: the good registration takes */
	hand_register(box, "name=box");
	st = status_in(box, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == EPERM, "positive control: %d", st);
}

/* ---- 9. a flood of sandboxes: the 65536-entry maps ---------------------------------------- */

#define FLOOD 70000

static int flood_proc(void *arg)
{
	char path[PATH_MAX + 32];
	int made = 0;

	for (int i = 0; i < FLOOD; i++) {
		snprintf(path, sizeof(path), "%s/f%d", T->cgroup_root, i);
		if (mkdir(path, 0755))
			break;
		made++;
	}
	((struct report *)arg)->moved = made;
	return 0;
}

static long ms_since(const struct timespec *a)
{
	struct timespec b;

	clock_gettime(CLOCK_MONOTONIC, &b);
	return (b.tv_sec - a->tv_sec) * 1000 + (b.tv_nsec - a->tv_nsec) / 1000000;
}

static int status_within(int seconds);

/* egretd answers a status request within seconds (scaled under qemu's emulated CPU) */
static bool answers_within(int seconds)
{
	return status_within(seconds * (int)harness_timeout_scale()) == 0;
}

/* egretd answers each of n status requests a second apart within limit_ms: the worst, or -1 */
static long worst_answer(int n, long limit_ms)
{
	struct timespec t0;
	long worst = 0;

	for (int i = 0; i < n; i++) {
		clock_gettime(CLOCK_MONOTONIC, &t0);
		if (status_within((int)(limit_ms / 1000) + 1) != 0)
			return -1;
		if (ms_since(&t0) > worst)
			worst = ms_since(&t0);
		if (worst > limit_ms)
			break;
		usleep(1000000);
	}
	return worst;
}

/* Was a hole, denial of service (nothing failed open). A sandboxed process with host privilege
 * makes 70,000 cgroups in egret's root (mkdir is not a move: nothing kills it). Each was a
 * sandbox the kernel registered at mkdir (register_if_plain in bpf/confine.bpf.c) and egretd
 * again (engine__sandbox_created, its rescans, its start), so `sandboxes` (65,536 entries)
 * filled and every registration after it failed (E2BIG): no new container could start on the
 * host until they were removed. Now a cgroup a sandbox made is registered by nobody (it stays a
 * sandbox not registered yet: no network, no entry), also across a restart of egretd, and
 * egretd's rescans do not stall on them.
 */
Test(redteam, a_flood_of_sandboxes_neither_hangs_egretd_nor_opens_anything, .timeout = 600)
{
	char box[PATH_MAX + 32], late[PATH_MAX + 32], fresh[PATH_MAX + 32], out[4096];
	struct report *r = report_new();
	struct timespec t0;
	long worst, limit;
	int st, rc;

	harness_setup_start("mode enforce\n", NULL);
	snprintf(box, sizeof(box), "%s/box", ctrs);
	snprintf(late, sizeof(late), "%s/late", ctrs);
	snprintf(fresh, sizeof(fresh), "%s/fresh", T->cgroup_root);
	mkcg(box);
	mkcg(late);
	hand_register(box, "name=box");
	st = status_in(box, flood_proc, r);
	cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the flooder died: %d", st);
	cr_expect_eq(r->moved, FLOOD, "only %d cgroups were made", r->moved);
	limit = 10000 * (long)harness_timeout_scale();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect(answers_within(10), "egretd stopped answering after the flood:\n%.2000s",
		  harness_log(T));
	cr_expect_lt(ms_since(&t0), limit, "egretd took %ld ms to answer", ms_since(&t0));
	st = status_in(box, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == EPERM, "the flooder reached " SERVER);
	mkcg(fresh);
	st = status_in(fresh, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == EPERM,
		  "a sandbox made after the flood reached " SERVER " (%d)", st);
	rc = egretctl(T, out, sizeof(out), "register", late, "name=late", NULL);
	cr_expect_eq(rc, 0,
		     "DoS: after a sandbox's flood of cgroups a container cannot be "
		     "registered (so it cannot start): %s",
		     out);
	if (rc == 0) {
		st = status_in(late, reach_fn, NULL);
		cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == EPERM, "late reached " SERVER);
	}
	/* through a periodic rescan (every 10 s) of the 70,000 cgroups. Under qemu's TCG a rescan
	 * itself takes about 9 s of egretd's CPU (stop 31's rehearsal: 9.3 s busy in 9.8, and a
	 * status waited longer than the 8 s allowed then): there what is checked is that egretd
	 * still answers between rescans, within three of them
	 */
	limit = 2000 * (long)harness_timeout_scale();
	if (harness_timeout_scale() > 1)
		limit *= 3;
	worst = worst_answer(12, limit);
	cr_expect(worst >= 0 && worst <= limit,
		  "egretd answered in %ld ms at worst after the flood", worst);

	/* a restarted egretd finds the 70,000 cgroups at its start: it registers none of them */
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	/* its start walks the 70,000 cgroups a few times: 6 s here, minutes under qemu's TCG */
	rc = harness_spawn(T, NULL, -1);
	cr_assert_geq(rc, 0);
	cr_assert_eq(harness_wait_ready(T, rc, 90000), 0, "egretd did not start again:\n%.4000s",
		     harness_log(T));
	snprintf(late, sizeof(late), "%s/late2", ctrs);
	mkcg(late);
	rc = egretctl(T, out, sizeof(out), "register", late, "name=late2", NULL);
	cr_expect_eq(rc, 0, "DoS: after egretd's restart a container cannot be registered: %s",
		     out);
	st = status_in(fresh, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == EPERM,
		  "a sandbox made after the flood reached " SERVER " after the restart (%d)", st);
	st = status_in(box, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == EPERM, "the flooder reached " SERVER);
	limit = 10000 * (long)harness_timeout_scale();
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect(answers_within(10));
	cr_expect_lt(ms_since(&t0), limit, "egretd took %ld ms to answer", ms_since(&t0));
	host_reaches();
}

/* ---- 10. the OCI hook: what a pod's author controls ---------------------------------------- */

static pid_t inits[2];

/* A stand-in for a container's init, which the runtime put in cgroup: its pid */
static pid_t start_init(const char *cgroup, int slot)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (join(cgroup))
			_exit(250);
		pause();
		_exit(0);
	}
	inits[slot] = pid;
	harness_kill_at_teardown(&inits[slot]);
	for (int i = 0; i < 200; i++) {
		char own[PATH_MAX];

		if (cgroup__of_pid(pid, T->cgroup_mount, own, sizeof(own)) == 0 &&
		    !strcmp(own, cgroup))
			return pid;
		usleep(5000);
	}
	cr_assert_fail("the init stand-in did not reach %s", cgroup);
	return -1;
}

/* A containerd CRI bundle (its place says containerd made it) for a pod's container in
 * namespace ns, with what a pod's author may add through pod_annotations; the hook run on it
 * with --exempt-namespace kube-system. The hook's exit status, its output in out.
 */
static int cri_hook(const char *id, const char *ns, pid_t init, const char *claimed_cgroup,
		    char *out, size_t size)
{
	char bundle[PATH_MAX], path[PATH_MAX + 32], cmd[PATH_MAX * 3];
	char *argv[] = { "sh", "-c", cmd, NULL };
	FILE *f;

	snprintf(bundle, sizeof(bundle), "%s/run/io.containerd.runtime.v2.task/k8s.io/%s",
		 T->tmpdir, id);
	snprintf(cmd, sizeof(cmd), "mkdir -p %s/rootfs", bundle);
	cr_assert_eq(run_cmd(argv, out, size), 0, "%s", out);
	snprintf(path, sizeof(path), "%s/config.json", bundle);
	f = fopen(path, "w");
	cr_assert(f);
	fprintf(f,
		"{\"ociVersion\":\"1.0.2\",\"root\":{\"path\":\"rootfs\"},"
		"\"linux\":{\"cgroupsPath\":\"%s\"},"
		"\"annotations\":{"
		"\"io.kubernetes.cri.container-type\":\"container\","
		"\"io.kubernetes.cri.container-name\":\"web\","
		"\"io.kubernetes.cri.image-name\":\"docker.io/library/nginx:1.25\","
		"\"io.kubernetes.cri.sandbox-name\":\"web-1\","
		"\"io.kubernetes.cri.sandbox-namespace\":\"%s\","
		"\"io.kubernetes.cri.sandbox-uid\":\"1f0c2b4e-8a7d-4c3b-9e1f-0a2b3c4d5e6f\","
		/* the pod's author's, passed through */
		"\"io.egret.sandbox\":\"trusted\",\"io.egret.image\":\"trusted:1\","
		"\"io.egret.label.team\":\"infra\",\"io.container.manager\":\"cri-o\","
		"\"io.kubernetes.pod.namespace\":\"kube-system\","
		"\"io.kubernetes.pod.name\":\"coredns\"}}\n",
		claimed_cgroup, ns);
	fclose(f);
	snprintf(path, sizeof(path), "%s/state.json", bundle);
	f = fopen(path, "w");
	cr_assert(f);
	fprintf(f,
		"{\"ociVersion\":\"1.0.2\",\"id\":\"%s\",\"status\":\"creating\",\"pid\":%d,"
		"\"bundle\":\"%s\",\"annotations\":{\"io.kubernetes.pod.namespace\":"
		"\"kube-system\"}}\n",
		id, (int)init, bundle);
	fclose(f);
	snprintf(cmd, sizeof(cmd),
		 "%s --control %s oci-hook createRuntime --exempt-namespace kube-system < %s 2>&1",
		 EGRETCTL_BIN, T->control, path);
	return run_cmd(argv, out, size);
}

/* Held: the hook believes a pod's identity only from containerd's own annotations (by the
 * bundle's place): a pod's author naming egret's sandbox, label or image, CRI-O's keys claiming
 * kube-system (an exempt namespace), or a cgroupsPath of an exempt cgroup changes nothing; the
 * hook registers the cgroup its init is in. With egretd gone it fails the start.
 */
Test(redteam, a_pods_author_cannot_steer_the_hook)
{
	char a[PATH_MAX + 32], k[PATH_MAX + 32], infra[PATH_MAX + 32], out[8192];
	const char *infra_rel;
	int st;

	harness_setup_start("mode enforce\n"
			    "sandbox trusted {\n  allow " SERVER " tcp/8080\n}\n"
			    "sandbox label team=infra {\n  allow " SERVER " tcp/8080\n}\n"
			    "sandbox image=trusted:1 {\n  allow " SERVER " tcp/8080\n}\n"
			    "sandbox k8s-namespace=kube-system {\n  allow " SERVER " tcp/8080\n}\n",
			    NULL);
	snprintf(a, sizeof(a), "%s/pod-a", ctrs);
	snprintf(k, sizeof(k), "%s/pod-k", ctrs);
	snprintf(infra, sizeof(infra), "%s/infra", ctrs);
	mkcg(a);
	mkcg(k);
	mkcg(infra);
	hand_register(infra, "exempt=1");
	infra_rel = infra + strlen(T->cgroup_mount);

	st = cri_hook("aaaa0001", "team-a", start_init(a, 0), infra_rel, out, sizeof(out));
	cr_expect_eq(st, 0, "the hook failed: %s", out);
	cr_expect(strstr(out, "registered team-a/web-1/web"), "%s", out);
	st = status_in(a, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == EPERM,
		  "the pod's author's annotations opened " SERVER " (%d)", st);
	st = status_in(infra, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "the exempt cgroup was taken over");

	/* positive control: containerd's own kube-system is exempt */
	st = cri_hook("kkkk0001", "kube-system", start_init(k, 1), infra_rel, out, sizeof(out));
	cr_expect_eq(st, 0, "the hook failed: %s", out);
	cr_expect(strstr(out, "exempt"), "%s", out);
	st = status_in(k, reach_fn, NULL);
	cr_expect(WIFEXITED(st) && WEXITSTATUS(st) == 0, "positive control: %d", st);

	/* egretd gone: the hook fails a pod's start (not an exempt namespace's) */
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	st = cri_hook("aaaa0002", "team-a", getpid(), infra_rel, out, sizeof(out));
	cr_expect_neq(st, 0, "the hook let a pod start with no egretd: %s", out);
}

/* ---- 11. freezing egretd: a stop that is no signal ---------------------------------------- */

static char svc[PATH_MAX + 8];	   /* egretd's own cgroup (a unit's, a pod's) */
static char frz_v1[PATH_MAX + 16]; /* a v1 freezer cgroup the sandbox makes */

static void thaw_all(void *arg)
{
	char path[PATH_MAX * 2];

	if (svc[0]) {
		snprintf(path, sizeof(path), "%s/cgroup.freeze", svc);
		write_file(path, "0");
	}
	if (frz_v1[0]) {
		snprintf(path, sizeof(path), "%s/freezer.state", frz_v1);
		write_file(path, "THAWED");
		usleep(100000);
		/* the processes go with the instance; the v1 cgroup once they are gone */
	}
}

static void frz_v1_remove(void *arg)
{
	char parent[PATH_MAX + 16], mnt[PATH_MAX + 16];

	if (!frz_v1[0])
		return;
	snprintf(parent, sizeof(parent), "%s", frz_v1);
	*strrchr(parent, '/') = '\0';
	snprintf(mnt, sizeof(mnt), "%s", parent);
	*strrchr(mnt, '/') = '\0';
	/* egretd (thawed) back to the hierarchy's root, so the cgroups can go */
	if (T && T->egretd > 0)
		cgroup__join(mnt, T->egretd);
	cgroup_tree__remove(parent);
}

/* egretd started in its own cgroup, as under systemd or in its pod */
static void start_in_svc(const char *policy)
{
	char own[PATH_MAX];

	snprintf(svc, sizeof(svc), "%s/svc", top);
	mkcg(svc);
	cr_assert_eq(cgroup__of_pid(0, T->cgroup_mount, own, sizeof(own)), 0);
	cr_assert_eq(cgroup__join(svc, getpid()), 0);
	harness_setup_start(policy, NULL);
	cr_assert_eq(cgroup__join(own, getpid()), 0);
}

static int status_within(int seconds)
{
	char *status[] = { "status" };
	struct report *r = report_new();
	FILE *out = fmemopen(r->text, sizeof(r->text) - 1, "w");
	int rc = control__call_fds(T->control, 1, status, NULL, 0, out, out, seconds);

	fclose(out);
	munmap(r, sizeof(*r));
	return rc;
}

static int freeze_svc(void *arg)
{
	char path[PATH_MAX * 2];

	snprintf(path, sizeof(path), "%s/cgroup.freeze", svc);
	return write_file(path, "1") ? 100 : 0;
}

/* into a v1 freezer cgroup of its own, then frozen (arg NULL), or frozen first and egretd
 * moved in after (arg non-NULL)
 */
static int freeze_v1(void *arg)
{
	char path[PATH_MAX * 2];

	if (mkdir(frz_v1, 0755) && errno != EEXIST)
		return 101;
	snprintf(path, sizeof(path), "%s/freezer.state", frz_v1);
	if (arg && write_file(path, "FROZEN"))
		return 103;
	if (cgroup__join(frz_v1, T->egretd))
		return 102;
	return arg || !write_file(path, "FROZEN") ? 0 : 100;
}

/* a helper froze a cgroup for the test: whether egretd answers within a few seconds of it */
static bool answers_after_freeze(void)
{
	usleep(1500000 * harness_timeout_scale());
	return status_within(3 * (int)harness_timeout_scale()) == 0;
}

/* Was a hole: egretd stopped without a signal. egret answers a SIGSTOP to egretd from a sandbox
 * by killing the sender and continuing egretd, but a sandbox with host privilege could freeze
 * egretd instead: cgroup.freeze of egretd's own cgroup (v2; no move, no signal), or egretd moved
 * into a frozen v1 freezer cgroup (v1 moves were not judged). Nothing killed the writer, nothing
 * thawed egretd: no DNS answers, no control socket, no events (the ring fills), until the host
 * thawed it. Now the writer dies (egret_cg_freeze, egret_cg_attach in v1) and egret's keeper,
 * in the roots of the v2 and v1 freezer hierarchies, thaws what a sandbox froze around egretd
 * and puts egretd back in its own v1 cgroups; a freeze by the host stays.
 */
Test(redteam, a_sandbox_cannot_freeze_egretd)
{
	char box[PATH_MAX + 32], mnt[PATH_MAX];
	int st;

	harness_at_teardown(frz_v1_remove, NULL);
	harness_at_teardown(thaw_all, NULL);
	start_in_svc("mode enforce\n");
	snprintf(box, sizeof(box), "%s/box", ctrs);
	mkcg(box);
	hand_register(box, "name=box");
	cr_assert_eq(status_within(5), 0, "egretd does not answer to begin with");

	st = status_in(box, freeze_svc, NULL);
	cr_expect(killed(st), "a sandbox froze egretd's cgroup and lived (writer status %d)", st);
	cr_expect(answers_after_freeze(),
		  "HOLE: a sandbox froze egretd's cgroup and egretd does not answer:\n%s",
		  harness_log(T));
	cr_expect(strstr(harness_log(T), "was frozen by pid"), "the keeper did not thaw it:\n%s",
		  harness_log(T));
	thaw_all(NULL);
	cr_assert_eq(status_within(5), 0, "egretd does not answer once thawed");

	if (cgroup_v1__mount("freezer", mnt, sizeof(mnt)) == 0) {
		snprintf(frz_v1, sizeof(frz_v1), "%s/%s", mnt, T->name);
		mkcg(frz_v1);
		strcat(frz_v1, "/frz");
		/* egretd moved in, then the cgroup frozen: the writer dies at the move */
		st = status_in(box, freeze_v1, NULL);
		cr_expect(killed(st),
			  "a sandbox moved egretd into a v1 freezer cgroup and lived "
			  "(writer status %d)",
			  st);
		cr_expect(answers_after_freeze(),
			  "HOLE: a sandbox froze egretd in a v1 freezer cgroup and egretd does not "
			  "answer:\n%s",
			  harness_log(T));
		thaw_all(NULL);
		cr_expect_eq(status_within(5), 0, "egretd does not answer once thawed");
		/* the cgroup frozen first, egretd moved in after: the keeper puts it back */
		st = status_in(box, freeze_v1, "frozen first");
		cr_expect(killed(st),
			  "a sandbox moved egretd into a frozen v1 freezer cgroup and "
			  "lived (writer status %d)",
			  st);
		cr_expect(answers_after_freeze(),
			  "HOLE: egretd moved into a frozen v1 freezer cgroup does not answer:\n%s",
			  harness_log(T));
		cr_expect(strstr(harness_log(T), "(hierarchy") &&
				  strstr(harness_log(T), "put back in"),
			  "the keeper did not put egretd back:\n%s", harness_log(T));
		thaw_all(NULL);
		cr_expect_eq(status_within(5), 0, "egretd does not answer once thawed");
	}
	/* positive control: the same freeze from the host stops egretd (the test sees it), and
	 * egret leaves a host's freeze alone
	 */
	cr_assert_eq(freeze_svc(NULL), 0);
	usleep(500000);
	cr_expect_neq(status_within(2), 0, "positive control: a frozen egretd answered");
	thaw_all(NULL);
	cr_expect_eq(status_within(5), 0);
}

/* ---- 12. egretd pulled into a registered container ------------------------------------------ */

static int pull_egretd(void *arg)
{
	return join_pid(arg, T->egretd) ? 100 : 0;
}

/* where egretd is, some time after a pull: true when back in its own cgroup */
static bool egretd_home_after(const char *home, int ms)
{
	char now[PATH_MAX];

	for (int i = 0; i < ms / 50; i++) {
		if (cgroup__of_pid(T->egretd, T->cgroup_mount, now, sizeof(now)) == 0 &&
		    !strcmp(now, home))
			return true;
		usleep(50000);
	}
	return false;
}

/* Was a hole: a sandbox that pulls egretd into its own cgroup puts egretd's sockets (DNS
 * upstream, tcp and OTLP sinks) under its rules; egretd is to move itself back at the pull's
 * Tamper event and at every tick, but selfcg__check (user/enforce/selfcg.c) acted only when
 * egretd was inside egret's root: pulled into a registered container's cgroup (a Docker scope,
 * a pod under --watch) egretd stayed, with that container's egress, for good. Now egretd goes
 * back wherever it was moved.
 */
Test(redteam, egretd_pulled_into_a_container_goes_home)
{
	char box[PATH_MAX + 32], inroot[PATH_MAX + 32], now[PATH_MAX];
	int st;

	harness_at_teardown(thaw_all, NULL);
	start_in_svc("mode enforce\n");
	snprintf(box, sizeof(box), "%s/box", ctrs);
	snprintf(inroot, sizeof(inroot), "%s/sbx", T->cgroup_root);
	mkcg(box);
	mkcg(inroot);
	hand_register(box, "name=box");

	/* positive control: pulled into a sandbox in egret's root, egretd goes home */
	st = status_in(inroot, pull_egretd, inroot);
	cr_expect(killed(st), "the puller was not killed (%d)", st);
	cr_expect(egretd_home_after(svc, 3000), "positive control: egretd did not go home");

	st = status_in(box, pull_egretd, box);
	cr_expect(killed(st), "the puller was not killed (%d)", st);
	cr_expect(egretd_home_after(svc, 3000),
		  "HOLE: egretd pulled into a registered container's cgroup stays there (%s), "
		  "its own egress under that container's rules",
		  cgroup__of_pid(T->egretd, T->cgroup_mount, now, sizeof(now)) ? "?" : now);
}
