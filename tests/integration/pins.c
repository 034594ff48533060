/* Pins removable only by egretctl uninstall: removing them removes nothing. egret's keeper (a
 * process holding every link and map besides its pin, egretd alive or not) puts each removed
 * pin back within milliseconds and egretd reports it; a remover in a sandbox is killed. The
 * positive control: egretctl uninstall, root on the host, removes every link and the keeper.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/magic.h>
#include <criterion/criterion.h>

#include "cgroup.h"
#include "harness.h"
#include "keeper.h"
#include "loader.h"
#include "paths.h"
#include "util.h"

#define DENIED	    "198.51.100.8" /* no rule allows it */
#define DENIED_PORT 80

static int listener = -1;

static void setup(void)
{
	harness_setup(true);
	cr_assert_eq(netns_addr("lo", DENIED "/32"), 0);
	harness_setup_listen(&listener, "0.0.0.0", DENIED_PORT);
}

TestSuite(pins, .init = setup, .fini = harness_teardown, .timeout = 120);

static int connect_denied(void *arg)
{
	return tcp_connect(DENIED, DENIED_PORT, AF_INET, 2000);
}

static uint64_t ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void instance_paths(struct egret_paths *p)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->cgroup_root, sizeof(p->cgroup_root), "%s", T->cgroup_root);
	snprintf(p->state_dir, sizeof(p->state_dir), "%s", T->state_dir);
}

/* egret programs not in force on the instance's root (0: all are), as egretctl status counts */
static int missing(char *names, size_t size)
{
	struct egret_paths p;

	instance_paths(&p);
	return loader__check(&p, names, size);
}

/* programs attached to the instance's root cgroup, over every attach type egret uses */
static unsigned int attached_to_root(void)
{
	static struct loader_specs specs;
	const struct egret_prog_spec *s = specs.spec;
	unsigned int n, total = 0;
	int fd = open(T->cgroup_root, O_RDONLY | O_DIRECTORY);

	if (fd < 0 || loader__specs(&specs))
		return fd < 0 ? 0 : 1000;
	n = specs.n;
	for (unsigned int i = 0; i < n; i++) {
		__u32 ids[64], cnt = 64;
		bool seen = false;

		for (unsigned int j = 0; j < i; j++)
			seen |= s[j].cgroup && s[j].attach_type == s[i].attach_type;
		if (!s[i].cgroup || seen)
			continue;
		if (bpf_prog_query(fd, s[i].attach_type, 0, NULL, ids, &cnt) == 0)
			total += cnt;
	}
	close(fd);
	return total;
}

/* how many pins under links/ and maps/ */
static unsigned int npins(void)
{
	static const char *const subs[] = { "links", "maps" };
	char dir[PATH_MAX + 8];
	unsigned int n = 0;

	for (int s = 0; s < 2; s++) {
		struct dirent *de;
		DIR *d;

		snprintf(dir, sizeof(dir), "%s/%s", T->state_dir, subs[s]);
		d = opendir(dir);
		while (d && (de = readdir(d)))
			n += de->d_name[0] != '.';
		if (d)
			closedir(d);
	}
	return n;
}

/* wait until want pins are back: the milliseconds it took, or -1 after timeout_ms */
/* timeout_ms is a liveness bound, scaled under qemu (harness_timeout_scale) */
static long pins_back(unsigned int want, int timeout_ms)
{
	uint64_t start = ms_now(), bound = (uint64_t)timeout_ms * harness_timeout_scale();

	while (ms_now() - start < bound) {
		if (npins() >= want)
			return (long)(ms_now() - start);
		usleep(5000);
	}
	return -1;
}

/* keeper_now and gone: timeout_ms, a liveness bound, is scaled like pins_back's */
static pid_t keeper_now(int timeout_ms, pid_t not )
{
	uint64_t start = ms_now();
	pid_t pid;

	do {
		pid = keeper__find(T->state_dir);
		if (pid && pid != not )
			return pid;
		usleep(10000);
	} while (ms_now() - start < (uint64_t)timeout_ms * harness_timeout_scale());
	return 0;
}

static bool gone(pid_t pid, int timeout_ms)
{
	uint64_t start = ms_now();

	do {
		char path[64], st[256];

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		/* gone, or a zombie nobody reaped yet (its fds are closed) */
		if (read_file(path, st, sizeof(st)) <= 0 || strstr(st, ") Z "))
			return true;
		usleep(10000);
	} while (ms_now() - start < (uint64_t)timeout_ms * harness_timeout_scale());
	return false;
}

static void start_enforcing(void)
{
	cr_assert_eq(harness_policy(T, "mode enforce\n"), 0);
	cr_assert_eq(harness_start(T, NULL), 0, "egretd did not start:\n%s", harness_log(T));
	cr_assert_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
}

static void rm_pins_from_host(void)
{
	char links[PATH_MAX + 8], maps[PATH_MAX + 8], out[4096];
	char *argv[] = { "rm", "-rf", links, maps, NULL };
	int rc;

	snprintf(links, sizeof(links), "%s/links", T->state_dir);
	snprintf(maps, sizeof(maps), "%s/maps", T->state_dir);
	rc = run_cmd(argv, out, sizeof(out));
	/* rm may find a directory filled again behind it; it is never killed */
	cr_expect(rc == 0 || rc == 1, "rm from the host: status %d: %s", rc, out);
}

static bool is_pin_put_back(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_PIN_REMOVED &&
	       ev->tamper->detail && strstr(ev->tamper->detail, "keeper put it back") &&
	       strstr(ev->tamper->detail, arg);
}

static bool is_pin_remover(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_PIN_REMOVED && ev->process &&
	       ev->process->pid == (uint32_t)(uintptr_t)arg;
}

Test(pins, uninstall_as_root_on_the_host_removes_every_link_and_the_keeper)
{
	char out[4096], names[4096];
	pid_t keeper;
	int status;

	start_enforcing();
	keeper = keeper_now(3000, 0);
	cr_assert(keeper > 0, "no keeper for %s:\n%s", T->state_dir, harness_log(T));
	cr_expect_eq(missing(names, sizeof(names)), 0, "missing: %s", names);
	cr_assert_gt(attached_to_root(), 0);
	cr_expect_eq(egretctl(T, out, sizeof(out), "uninstall", NULL), 0, "%s\n%s", out,
		     harness_log(T));
	cr_expect(strstr(out, "egret enforcement removed"), "%s", out);
	cr_expect_eq(attached_to_root(), 0, "egret programs left on %s", T->cgroup_root);
	cr_expect(gone(keeper, 3000), "keeper %d still runs", (int)keeper);
	cr_expect_eq(waitpid(T->egretd, &status, 0), T->egretd);
	T->egretd = 0;
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == EGRETD_EXIT_UNINSTALLED,
		  "egretd status %#x", status);
	cr_expect_eq(access(T->state_dir, F_OK), -1, "state dir %s left", T->state_dir);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), 0, "still enforced");
}

/* The attack: a process in a cgroup joined by hand removes every pin. */
static int rm_pins_from_box(void *arg)
{
	char dir[PATH_MAX], links[PATH_MAX + 8], maps[PATH_MAX + 8];

	if (sandbox_path(T, "box", dir, sizeof(dir)) || (mkdir(dir, 0755) && errno != EEXIST) ||
	    cgroup__join(dir, getpid()))
		return 100;
	snprintf(links, sizeof(links), "%s/links", T->state_dir);
	snprintf(maps, sizeof(maps), "%s/maps", T->state_dir);
	execl("/bin/rm", "rm", "-rf", links, maps, (char *)NULL);
	return 101;
}

Test(pins, a_sandboxed_remover_is_killed_and_the_pins_come_back)
{
	unsigned int before;
	char names[4096];
	struct events evs;
	pid_t pid;
	long ms;
	int status = 0;

	start_enforcing();
	cr_assert(keeper_now(3000, 0) > 0, "no keeper:\n%s", harness_log(T));
	before = npins();
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(rm_pins_from_box(NULL));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "the remover was not killed: status %#x", status);
	ms = pins_back(before, 2000);
	cr_expect_geq(ms, 0, "%u of %u pins back after 2 s", npins(), before);
	cr_expect_eq(missing(names, sizeof(names)), 0, "not in force: %s", names);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	cr_expect_eq(events_wait(T->sink_path, is_pin_remover, (void *)(uintptr_t)pid, 10000, &evs),
		     0, "no Tamper PIN_REMOVED naming pid %d", (int)pid);
	if (evs.n) {
		const Egret__V1__Event *ev =
			events_find(&evs, is_pin_remover, (void *)(uintptr_t)pid, NULL);

		cr_expect(ev && ev->tamper->killed, "the report does not say it was killed");
	}
	events_free(&evs);
	cr_expect_eq(events_wait(T->sink_path, is_pin_put_back, T->state_dir, 10000, &evs), 0,
		     "no Tamper PIN_REMOVED for a pin put back:\n%s", harness_log(T));
	events_free(&evs);
	fprintf(stderr, "pins: %u pins back %ld ms after a sandboxed rm -rf\n", before, ms);
}

Test(pins, a_host_remover_is_reported_not_killed)
{
	unsigned int before;
	char names[4096];
	struct events evs;
	long ms;

	start_enforcing();
	cr_assert(keeper_now(3000, 0) > 0, "no keeper:\n%s", harness_log(T));
	before = npins();
	rm_pins_from_host();
	ms = pins_back(before, 2000);
	cr_expect_geq(ms, 0, "%u of %u pins back after 2 s", npins(), before);
	cr_expect_eq(missing(names, sizeof(names)), 0, "not in force: %s", names);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	cr_expect_eq(events_wait(T->sink_path, is_pin_put_back, T->state_dir, 10000, &evs), 0,
		     "no Tamper PIN_REMOVED for a pin put back:\n%s", harness_log(T));
	events_free(&evs);
}

Test(pins, with_egretd_killed_the_keeper_holds_and_puts_pins_back)
{
	char names[4096];
	unsigned int before;
	pid_t keeper, next;
	long ms;

	start_enforcing();
	keeper = keeper_now(3000, 0);
	cr_assert(keeper > 0, "no keeper:\n%s", harness_log(T));
	before = npins();
	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	rm_pins_from_host();
	ms = pins_back(before, 2000);
	cr_expect_geq(ms, 0, "%u of %u pins back after 2 s without egretd", npins(), before);
	cr_expect_eq(missing(names, sizeof(names)), 0, "not in force: %s", names);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	/* twice: the keeper goes on after the first */
	rm_pins_from_host();
	cr_expect_geq(pins_back(before, 2000), 0, "not back after a second rm");
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	/* the next egretd adopts the pins and takes over from the keeper */
	cr_assert_eq(harness_start(T, NULL), 0, "egretd did not restart:\n%s", harness_log(T));
	cr_expect(strstr(harness_log(T), "adopted"), "%s", harness_log(T));
	next = keeper_now(3000, keeper);
	cr_expect(next > 0 && next != keeper, "no new keeper:\n%s", harness_log(T));
	cr_expect(gone(keeper, 3000), "the previous keeper %d still runs", (int)keeper);
	cr_expect_eq(missing(names, sizeof(names)), 0, "not in force: %s", names);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	rm_pins_from_host();
	cr_expect_geq(pins_back(before, 2000), 0, "the new keeper did not put them back");
}

Test(pins, a_killed_keeper_is_replaced_by_egretd)
{
	unsigned int before;
	pid_t keeper, next;

	start_enforcing();
	keeper = keeper_now(3000, 0);
	cr_assert(keeper > 0, "no keeper:\n%s", harness_log(T));
	before = npins();
	cr_assert_eq(kill(keeper, SIGKILL), 0);
	next = keeper_now(3000, keeper);
	cr_expect(next > 0, "egretd started no other keeper:\n%s", harness_log(T));
	cr_expect(strstr(harness_log(T), "is gone"), "%s", harness_log(T));
	rm_pins_from_host();
	cr_expect_geq(pins_back(before, 2000), 0, "the new keeper did not put them back");
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
}

Test(pins, uninstall_without_egretd_stops_the_keeper_first)
{
	char out[4096];
	pid_t keeper;

	start_enforcing();
	keeper = keeper_now(3000, 0);
	cr_assert(keeper > 0, "no keeper:\n%s", harness_log(T));
	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	cr_expect_eq(egretctl(T, out, sizeof(out), "uninstall", NULL), 0, "%s", out);
	cr_expect(gone(keeper, 3000), "keeper %d still runs", (int)keeper);
	cr_expect_eq(attached_to_root(), 0, "egret programs left on %s", T->cgroup_root);
	cr_expect_eq(access(T->state_dir, F_OK), -1, "state dir %s left (put back?)", T->state_dir);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), 0, "still enforced");
}

/* egretctl uninstall from a sandbox: egretd refuses it, nothing changes. */
Test(pins, uninstall_from_a_sandbox_is_refused)
{
	char out[4096], names[4096];
	int rc;

	start_enforcing();
	rc = sandbox_cmd(T, "box", out, sizeof(out), EGRETCTL_BIN, "--cgroup", T->cgroup_root,
			 "--state-dir", T->state_dir, "--control", T->control, "uninstall", NULL);
	cr_expect_eq(rc, 1, "%s", out);
	cr_expect(strstr(out, "refused"), "%s", out);
	cr_expect_eq(missing(names, sizeof(names)), 0, "not in force: %s", names);
	cr_expect(keeper_now(1000, 0) > 0, "no keeper");
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	cr_expect_eq(kill(T->egretd, 0), 0, "egretd exited");
}

/* bpffs unmounted (lazily, every layer) in egretd's mount namespace: mounted again, every pin
 * back, enforcement never stopped. A private namespace with a bpffs of its own keeps the host's
 * untouched, and takes whatever is left with it when the test process exits.
 */
Test(pins, an_unmounted_bpffs_is_mounted_again_with_every_pin)
{
	struct statfs sfs;
	unsigned int before;
	uint64_t start;
	int layers = 0;

	cr_assert_eq(unshare(CLONE_NEWNS), 0);
	cr_assert_eq(mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL), 0);
	/* the host's bpffs out of sight first: a keeper must never pin into it here */
	while (statfs(EGRET_BPFFS, &sfs) == 0 && sfs.f_type == BPF_FS_MAGIC &&
	       umount2(EGRET_BPFFS, MNT_DETACH) == 0)
		;
	cr_assert_eq(mount("bpf", EGRET_BPFFS, "bpf", 0, "mode=0700"), 0);
	start_enforcing();
	cr_assert(keeper_now(3000, 0) > 0, "no keeper:\n%s", harness_log(T));
	before = npins();
	while (statfs(EGRET_BPFFS, &sfs) == 0 && sfs.f_type == BPF_FS_MAGIC && layers < 8 &&
	       umount2(EGRET_BPFFS, MNT_DETACH) == 0)
		layers++;
	cr_assert_gt(layers, 0, "bpffs was not unmounted: %s", strerror(errno));
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	start = ms_now();
	while (ms_now() - start < 3000 * harness_timeout_scale() &&
	       (statfs(EGRET_BPFFS, &sfs) || sfs.f_type != BPF_FS_MAGIC || npins() < before))
		usleep(10000);
	cr_expect(statfs(EGRET_BPFFS, &sfs) == 0 && sfs.f_type == BPF_FS_MAGIC,
		  "bpffs not mounted again:\n%s", harness_log(T));
	cr_expect_geq(npins(), before, "%u of %u pins back:\n%s", npins(), before, harness_log(T));
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	/* and the new mount is watched like the old one */
	rm_pins_from_host();
	cr_expect_geq(pins_back(before, 2000), 0, "not back after rm on the new bpffs");
}

/* whether pid still has signal sig pending (not yet read from its signalfd) */
static bool pending(pid_t pid, int sig)
{
	char path[64], buf[4096], *p;
	unsigned long long mask;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	if (read_file(path, buf, sizeof(buf)) <= 0 || !(p = strstr(buf, "ShdPnd:")))
		return false;
	mask = strtoull(p + 7, NULL, 16);
	return mask & (1ull << (sig - 1));
}

/* The hand-over signal is a new egretd's: while the keeper's egretd lives, nobody is taking
 * over, and a SIGUSR1 (from a sandbox that cannot be killed for it, say) changes nothing.
 */
Test(pins, the_keeper_ignores_a_takeover_while_its_egretd_runs)
{
	char comm[32], path[64];
	unsigned int before;
	uint64_t start;
	pid_t keeper;

	start_enforcing();
	keeper = keeper_now(3000, 0);
	cr_assert(keeper > 0, "no keeper:\n%s", harness_log(T));
	before = npins();
	cr_assert_eq(kill(keeper, SIGUSR1), 0);
	start = ms_now();
	while (pending(keeper, SIGUSR1) && ms_now() - start < 3000)
		usleep(5000);
	cr_expect(!pending(keeper, SIGUSR1), "the keeper did not read the signal");
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)keeper);
	cr_expect(read_file(path, comm, sizeof(comm)) > 0 && !strcmp(comm, KEEPER_COMM "\n"),
		  "keeper is now '%s'", comm);
	rm_pins_from_host();
	cr_expect_geq(pins_back(before, 2000), 0, "the keeper stopped putting pins back");
}

/* A pin renamed to another name in links/ (from the host: not killed) is put back under its
 * own; the next egretd drops the extra name without detaching the link both names hold.
 */
Test(pins, a_renamed_pin_is_put_back_and_its_copy_dropped_without_detaching)
{
	char from[PATH_MAX + 32], to[PATH_MAX + 32], names[4096];
	unsigned int before;

	start_enforcing();
	cr_assert(keeper_now(3000, 0) > 0, "no keeper:\n%s", harness_log(T));
	before = npins();
	snprintf(from, sizeof(from), "%s/links/egret_connect4", T->state_dir);
	snprintf(to, sizeof(to), "%s/links/egret_moved", T->state_dir);
	cr_assert_eq(rename(from, to), 0, "%s", strerror(errno));
	cr_expect_geq(pins_back(before + 1, 2000), 0, "egret_connect4 not put back");
	cr_expect_eq(access(from, F_OK), 0);
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	cr_assert_eq(harness_start(T, NULL), 0, "egretd did not restart:\n%s", harness_log(T));
	cr_expect_eq(access(to, F_OK), -1, "the extra pin is still there");
	cr_expect_eq(missing(names, sizeof(names)), 0, "not in force: %s\n%s", names,
		     harness_log(T));
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM, "connect4 detached");
}

struct store {
	int fds[256];
	char names[256][64]; /* each fd's FDNAME */
	unsigned int n, links;
	char removed[256][64]; /* names of FDSTOREREMOVE=1 */
	unsigned int nremoved;
};

/* the FDNAME of a notify message, into out */
static void fdname(const char *msg, char *out, size_t size)
{
	const char *p = strstr(msg, "FDNAME=");

	snprintf(out, size, "%.*s", p ? (int)strcspn(p + 7, "\n") : 0, p ? p + 7 : "");
}

/* removed from the store and not stored again */
static bool removed_for_good(const struct store *st, const char *name)
{
	bool removed = false;

	for (unsigned int i = 0; i < st->nremoved; i++)
		removed |= !strcmp(st->removed[i], name);
	for (unsigned int i = 0; i < st->n; i++)
		removed &= strcmp(st->names[i], name) != 0;
	return removed;
}

/* What egretd sends to its notify socket until READY=1 (systemd's part): the fds it stores. */
static int read_store(int nfd, struct store *st)
{
	uint64_t start = ms_now();

	while (ms_now() - start < 60000ull * harness_timeout_scale()) { /* as harness_start */
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} ctl;
		char msg[512];
		struct iovec iov = { .iov_base = msg, .iov_len = sizeof(msg) - 1 };
		struct msghdr mh = { .msg_iov = &iov,
				     .msg_iovlen = 1,
				     .msg_control = ctl.buf,
				     .msg_controllen = sizeof(ctl.buf) };
		struct pollfd p = { .fd = nfd, .events = POLLIN };
		struct cmsghdr *c;
		ssize_t n;

		if (poll(&p, 1, 100) != 1)
			continue;
		n = recvmsg(nfd, &mh, 0);
		if (n < 0)
			return -errno;
		msg[n] = '\0';
		if (strstr(msg, "READY=1"))
			return 0;
		c = CMSG_FIRSTHDR(&mh);
		if (strstr(msg, "FDSTOREREMOVE=1") && st->nremoved < ARRAY_SIZE(st->removed))
			fdname(msg, st->removed[st->nremoved++], sizeof(st->removed[0]));
		if (!strstr(msg, "FDSTORE=1") || !c || c->cmsg_type != SCM_RIGHTS ||
		    st->n == ARRAY_SIZE(st->fds))
			continue;
		fdname(msg, st->names[st->n], sizeof(st->names[0]));
		memcpy(&st->fds[st->n++], CMSG_DATA(c), sizeof(int));
		st->links += strstr(msg, "FDNAME=link-") != NULL;
	}
	return -ETIMEDOUT;
}

/* systemd's fd store (here: the test, on egretd's notify socket) gets every pinned object: with
 * egretd and the keeper killed and every pin removed, what the store holds still enforces.
 */
Test(pins, the_fd_store_gets_every_pin_and_holds_enforcement_alone)
{
	char links[PATH_MAX + 8];
	struct store st = { .n = 0 };
	pid_t keeper;
	int nfd, rc;

	cr_assert_eq(harness_policy(T, "mode enforce\n"), 0);
	setenv("INVOCATION_ID", "egret-test", 1); /* what tells egretd that systemd runs it */
	nfd = harness_spawn(T, NULL, -1);
	unsetenv("INVOCATION_ID");
	cr_assert(nfd >= 0);
	rc = read_store(nfd, &st);
	close(nfd);
	cr_assert_eq(rc, 0, "egretd not ready:\n%s", harness_log(T));
	keeper = keeper_now(3000, 0);
	cr_assert(keeper > 0, "no keeper:\n%s", harness_log(T));
	snprintf(links, sizeof(links), "%s/links", T->state_dir);
	cr_expect_eq(st.n, npins(), "%u fds stored for %u pins", st.n, npins());
	cr_expect_gt(st.links, 0);
	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	keeper__kill(keeper, 3000);
	cr_assert(gone(keeper, 3000));
	rm_pins_from_host();
	cr_expect_eq(access(links, F_OK), -1, "links/ came back with no keeper");
	cr_expect_gt(attached_to_root(), 0, "the store's links were detached");
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	for (unsigned int i = 0; i < st.n; i++)
		close(st.fds[i]);
	cr_expect_eq(attached_to_root(), 0, "links outlived their last holder");
}

static __u32 link_id_of(int fd)
{
	struct bpf_link_info info = { 0 };
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* does the link with this id still exist (within 3 s of its last fd's close)? */
static bool link_lives(__u32 id)
{
	uint64_t start = ms_now();

	do {
		int fd = bpf_link_get_fd_by_id(id);

		if (fd < 0 && errno == ENOENT)
			return false;
		if (fd >= 0)
			close(fd);
		usleep(20000);
	} while (ms_now() - start < 3000);
	return true;
}

/* An upgrade under systemd to an egretd that no longer loads a program (egret_bpf, where
 * egret_csys judges bpf(2)): the store systemd passes it still holds the old program's link,
 * which no detach ends (a tracepoint's), so the new egretd removes it from the store, and
 * once systemd closes it the old program is gone from the kernel. Without the removal it would
 * stay attached (and report a sandbox's bpf(2) a second time) for as long as the service lives.
 */
Test(pins, a_link_the_new_egretd_does_not_hold_leaves_systemds_store)
{
	const char *old[] = { "--without-kernel-feature", "sys_enter_btf", "--accept-kernel-gap",
			      "compat", NULL };
	static struct store first, second;
	char names[256 * 64] = "";
	int nfd, rc, bpf_at = -1;
	size_t used = 0;
	pid_t keeper;
	__u32 id;

	setenv("INVOCATION_ID", "egret-test", 1);
	nfd = harness_spawn(T, old, -1);
	unsetenv("INVOCATION_ID");
	cr_assert(nfd >= 0);
	rc = read_store(nfd, &first);
	close(nfd);
	cr_assert_eq(rc, 0, "egretd not ready:\n%s", harness_log(T));
	for (unsigned int i = 0; i < first.n; i++) {
		if (!strcmp(first.names[i], "link-egret_bpf"))
			bpf_at = (int)i;
		used += (size_t)snprintf(names + used, sizeof(names) - used, "%s%s", i ? ":" : "",
					 first.names[i]);
	}
	cr_assert_geq(bpf_at, 0, "no link-egret_bpf stored without sys_enter_btf");
	id = link_id_of(first.fds[bpf_at]);
	cr_assert(id);
	keeper = keeper_now(3000, 0);
	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	keeper__kill(keeper, 3000);

	/* the new egretd, as systemd starts it after an upgrade: the store passed */
	T->listen_fds = first.fds;
	T->nlisten = first.n;
	T->listen_names = names;
	setenv("INVOCATION_ID", "egret-test", 1);
	nfd = harness_spawn(T, NULL, -1);
	unsetenv("INVOCATION_ID");
	T->nlisten = 0;
	cr_assert(nfd >= 0);
	rc = read_store(nfd, &second);
	close(nfd);
	cr_assert_eq(rc, 0, "egretd not ready:\n%s", harness_log(T));
	cr_expect(removed_for_good(&second, "link-egret_bpf"), "link-egret_bpf left in the store");
	cr_expect(!removed_for_good(&second, "link-egret_connect4"), "a link in force removed");
	cr_expect(!removed_for_good(&second, "link-egret_csys"));
	/* systemd closes what was removed: nothing else holds the old link */
	for (unsigned int i = 0; i < first.n; i++) {
		if (removed_for_good(&second, first.names[i])) {
			close(first.fds[i]);
			first.fds[i] = -1;
		}
	}
	cr_expect(!link_lives(id), "the old egret_bpf link outlived the store's last fd");
	for (unsigned int i = 0; i < first.n; i++) {
		if (first.fds[i] >= 0)
			close(first.fds[i]);
	}
	for (unsigned int i = 0; i < second.n; i++)
		close(second.fds[i]);
	cr_expect(strstr(harness_log(T), "link-egret_bpf removed"), "%s", harness_log(T));
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
}

static int rename_pin_from_box(void *arg)
{
	char dir[PATH_MAX], from[PATH_MAX + 32], to[PATH_MAX + 32];

	if (sandbox_path(T, "box", dir, sizeof(dir)) || (mkdir(dir, 0755) && errno != EEXIST) ||
	    cgroup__join(dir, getpid()))
		return 100;
	snprintf(from, sizeof(from), "%s/links/egret_connect4", T->state_dir);
	snprintf(to, sizeof(to), "%s/links/egret_gone", T->state_dir);
	rename(from, to);
	return 0; /* not reached: killed on its way out of rename(2) */
}

Test(pins, a_sandboxed_rename_is_killed_and_the_pin_comes_back)
{
	char from[PATH_MAX + 32], names[4096];
	struct events evs;
	pid_t pid;
	int status = 0;
	uint64_t start;

	start_enforcing();
	cr_assert(keeper_now(3000, 0) > 0, "no keeper:\n%s", harness_log(T));
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(rename_pin_from_box(NULL));
	}
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "the renamer was not killed: status %#x", status);
	snprintf(from, sizeof(from), "%s/links/egret_connect4", T->state_dir);
	start = ms_now();
	while (access(from, F_OK) && ms_now() - start < 2000 * harness_timeout_scale())
		usleep(5000);
	cr_expect_eq(access(from, F_OK), 0, "egret_connect4 not put back");
	cr_expect_eq(missing(names, sizeof(names)), 0, "not in force: %s", names);
	cr_expect_eq(in_sandbox(T, "box", connect_denied, NULL), EPERM);
	cr_expect_eq(events_wait(T->sink_path, is_pin_remover, (void *)(uintptr_t)pid, 10000, &evs),
		     0, "no Tamper PIN_REMOVED naming pid %d", (int)pid);
	events_free(&evs);
}
