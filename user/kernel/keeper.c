/* The keeper (see keeper.h): egretd's side (start, restart, hand-over, stop) and the keeper's
 * own loop, which watches the state dir with inotify and puts back every pin that goes.
 *
 * Hand-over between egretds: a starting egretd tells the previous keeper (the pid in
 * <state>/keeper) with SIGUSR1 to stop putting pins back, so that the pins it swaps or
 * replaces stay as it leaves them; that keeper acknowledges by renaming itself
 * egret-keeper-q and goes on holding every fd. Once the new egretd is attached and its own
 * keeper holds every pin, the old keeper is killed. At no moment is a link held by its pin
 * alone. systemd's fd store, a second holder, is keeper_store.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include <linux/types.h>

#include "cgroup.h"
#include "egret/events.h"
#include "egret/confine.h"
#include "keeper.h"
#include "loader.h"
#include "log.h"
#include "paths.h"
#include "util.h"

#define KEEPER_COMM_QUIET "egret-keeper-q" /* stopped putting pins back; still holding */
#define KEEPER_READY_MS	  3000
#define KEEPER_GUARD_MS	  100 /* how often the keeper looks whether egretd was stopped */
#define KEEPER_WATCH_MASK                                                                      \
	(IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CREATE | IN_DELETE_SELF | IN_MOVE_SELF | \
	 IN_UNMOUNT | IN_ONLYDIR)

static int sys_pidfd_open(pid_t pid)
{
	return (int)syscall(SYS_pidfd_open, pid, 0);
}

static int sys_pidfd_send_signal(int pidfd, int sig)
{
	return (int)syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* the kernel's id of a link or map (both info structs start with type, id) */
static __u32 obj_id(int fd)
{
	struct {
		__u32 type, id;
	} info = { 0 };
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* ---- stops a sandbox sent ------------------------------------------------------------------ */

/* Whether the last stop signal the kernel recorded for pid came from a sandbox, at or after
 * since_ns (a host's stop after a sandbox's is the host's to undo).
 */
static bool stopped_by_sandbox(const struct stop_guard *g, uint64_t since_ns)
{
	static const __u32 stops[] = { SIGSTOP, SIGTSTP, SIGTTIN, SIGTTOU };
	struct egret_signal_sender last = { 0 }, v;
	__u32 sig = 0;

	for (size_t i = 0; i < ARRAY_SIZE(stops); i++) {
		struct egret_signal_key key = { .tgid = (__u32)g->pid, .sig = stops[i] };

		if (bpf_map_lookup_elem(g->senders_fd, &key, &v) == 0 && v.ts_ns >= last.ts_ns) {
			last = v;
			sig = stops[i];
		}
	}
	if (!sig || last.ts_ns < since_ns || last.sandbox_id == ~0ull)
		return false;
	log_warn("%s (pid %d) was stopped by signal %u from pid %u of a sandbox: continuing it",
		 g->what, (int)g->pid, sig, last.tgid);
	return true;
}

bool stop_guard__check(struct stop_guard *g)
{
	uint64_t now = now_ns(CLOCK_BOOTTIME); /* before the look: a stop after it is newer */
	int stopping;

	if (g->senders_fd < 0 || g->pid <= 0)
		return false;
	/* Not "its state is not T": a stop the kernel queued is a while (on a loaded machine,
	 * hundreds of milliseconds) in the process before a thread takes it and stops; a look then
	 * would take the stop's record for one already answered, and leave it stopped.
	 */
	stopping = proc_stopping(g->pid);
	if (stopping <= 0) {
		if (stopping == 0)
			g->running_ns = now;
		return false;
	}
	if (!stopped_by_sandbox(g, g->running_ns))
		return false;
	g->running_ns = now; /* each record continues it once */
	return kill(g->pid, SIGCONT) == 0;
}

/* ---- the keeper process ----------------------------------------------------------------- */

struct keeper_run {
	const struct keeper *k;
	struct stop_guard guard; /* over egretd, while the egretd that forked us lives */
	uint64_t guarded_ms;
	int sock, ino, sig, mnt; /* mnt: mountinfo, POLLPRI on every mount or umount */
	pid_t egretd;		 /* the egretd that forked this keeper */
	char link[PATH_MAX + 16];
	/* egretd's cgroups (see "cgroups" below) */
	int freezes_fd; /* freeze_writers: the cgroups a sandbox froze, -1 when none */
	char v2[PATH_MAX];
	char *home; /* egretd's /proc/PID/cgroup when this keeper started, NULL unknown */
	size_t home_len;
	bool home_stuck;   /* the last return home failed (logged once until one works) */
	bool keeper_stuck; /* the keeper could not go to the roots (logged once) */
};

static void report(struct keeper_run *r, const char *path)
{
	if (r->sock >= 0 && send(r->sock, path, strlen(path), MSG_NOSIGNAL | MSG_DONTWAIT) < 0 &&
	    errno != EAGAIN) {
		close(r->sock); /* egretd is gone: keep holding, report to nobody */
		r->sock = -1;
	}
}

/* Put one pin back when it is missing or names another object; true when it did. */
static bool repin(const struct keeper_item *it)
{
	int cur = bpf_obj_get(it->path);

	if (cur >= 0) {
		bool same = obj_id(cur) == obj_id(it->fd);

		close(cur);
		if (same)
			return false;
	}
	if (cur >= 0 || errno != ENOENT) {
		if (unlink(it->path) && errno == EISDIR)
			rmdir(it->path);
	}
	if (bpf_obj_pin(it->fd, it->path)) {
		log_err("keeper: failed to pin %s again: %s", it->path, strerror(errno));
		return false;
	}
	return true;
}

/* <state>/keeper -> our pid, so egretctl and the next egretd find us */
static void mark(struct keeper_run *r)
{
	char want[32], have[32];
	ssize_t n = readlink(r->link, have, sizeof(have) - 1);

	snprintf(want, sizeof(want), "%d", (int)getpid());
	if (n > 0 && (size_t)n == strlen(want) && !memcmp(have, want, (size_t)n))
		return;
	unlink(r->link);
	if (symlink(want, r->link))
		log_warn("keeper: cannot write %s: %s", r->link, strerror(errno));
}

static void watch_dirs(struct keeper_run *r)
{
	const char *subs[] = { "", "/links", "/maps" };
	char dir[PATH_MAX + 8];

	for (size_t i = 0; i < ARRAY_SIZE(subs); i++) {
		snprintf(dir, sizeof(dir), "%s%s", r->k->state_dir, subs[i]);
		if (inotify_add_watch(r->ino, dir, KEEPER_WATCH_MASK) < 0 && errno != ENOENT)
			log_warn("keeper: cannot watch %s: %s", dir, strerror(errno));
	}
}

/* The state dir as egretd left it: bpffs mounted, the directories there, every pin back. */
static void repair(struct keeper_run *r)
{
	if (bpffs__ensure(r->k->state_dir))
		return;
	watch_dirs(r);
	for (unsigned int i = 0; i < r->k->nitems; i++) {
		if (repin(&r->k->items[i])) {
			log_warn("keeper: pin %s was removed: put back", r->k->items[i].path);
			report(r, r->k->items[i].path);
		}
	}
	mark(r);
}

static bool kept_fd(const struct keeper *k, int fd, int sock)
{
	if (fd <= 2 || fd == sock)
		return true;
	for (unsigned int i = 0; i < k->nitems; i++) {
		if (k->items[i].fd == fd)
			return true;
	}
	return false;
}

/* Everything egretd had open but the pinned objects, the channel and stdio. */
static void close_others(const struct keeper *k, int sock)
{
	int fds[1024], n = 0;
	struct dirent *de;
	DIR *d = opendir("/proc/self/fd");

	while (d && (de = readdir(d)) && n < (int)ARRAY_SIZE(fds)) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] != '.' && fd != dirfd(d) && !kept_fd(k, fd, sock))
			fds[n++] = fd;
	}
	if (d)
		closedir(d);
	for (int i = 0; i < n; i++)
		close(fds[i]);
}

static int keeper_signals(void)
{
	sigset_t set;

	/* no signal but SIGKILL ends the keeper; SIGUSR1 is the next egretd's hand-over */
	sigfillset(&set);
	sigprocmask(SIG_BLOCK, &set, NULL);
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigaddset(&set, SIGUSR2);
	return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static void on_sock(struct keeper_run *r)
{
	char msg[64];
	ssize_t n = recv(r->sock, msg, sizeof(msg) - 1, MSG_DONTWAIT);

	if (n < 0 && errno == EAGAIN)
		return;
	if (n > 0) {
		msg[n] = '\0';
		if (!strcmp(msg, "quit"))
			_exit(0); /* every fd goes with us */
		return;
	}
	close(r->sock);
	r->sock = -1;
}

/* SIGUSR1: a new egretd takes over (stop putting pins back); SIGUSR2: it failed to start
 * (go on as before). A new egretd starts only once the one that forked us is gone (the state
 * dir's lock): while it lives, nobody else is taking over.
 */
static void on_handover(struct keeper_run *r)
{
	struct signalfd_siginfo si;

	while (read(r->sig, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_uid != 0 || getppid() == r->egretd)
			continue;
		if (si.ssi_signo == SIGUSR1 && r->ino >= 0) {
			close(r->ino);
			r->ino = -1;
			prctl(PR_SET_NAME, KEEPER_COMM_QUIET);
		} else if (si.ssi_signo == SIGUSR2 && r->ino < 0) {
			r->ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
			prctl(PR_SET_NAME, KEEPER_COMM);
			repair(r);
		}
	}
}

/* ---- egretd's cgroups ------------------------------------------------------------------------
 *
 * A sandbox holding host privilege can stop egretd without a signal: cgroup.freeze of a cgroup
 * holding it (v2), or egretd moved into a frozen v1 freezer cgroup (or a starving v1 memory
 * one). Its programs kill the writer, but the kernel cannot refuse the write; egretd, frozen,
 * can do nothing about it. The keeper can: it lives where nothing freezes (the roots of the v2
 * and v1 freezer hierarchies), thaws every cgroup holding egretd that a sandbox froze
 * (freeze_writers; a host's freeze stays) and puts egretd back into its own cgroups in every v1
 * hierarchy, and in v2 when it was moved into a frozen cgroup (egretd goes home by itself
 * otherwise, selfcg.c).
 */

/* One line of a /proc/PID/cgroup text cgroup__proc_text checked. */
struct cg_line {
	unsigned long id;
	const char *ctrls, *path;
	size_t clen, plen;
};

static bool cg_line_next(const char **pos, const char *end, struct cg_line *l)
{
	const char *p = *pos, *nl, *colon;

	if (p >= end || !(nl = memchr(p, '\n', (size_t)(end - p))))
		return false;
	l->id = strtoul(p, NULL, 10);
	l->ctrls = memchr(p, ':', (size_t)(nl - p)) + 1;
	colon = memchr(l->ctrls, ':', (size_t)(nl - l->ctrls));
	l->clen = (size_t)(colon - l->ctrls);
	l->path = colon + 1;
	l->plen = (size_t)(nl - l->path);
	*pos = nl + 1;
	return true;
}

static bool cg_line_of(const char *text, size_t len, unsigned long id, struct cg_line *out)
{
	const char *p = text;

	while (cg_line_next(&p, text + len, out)) {
		if (out->id == id)
			return true;
	}
	return false;
}

/* mount + a /proc path ("/" is the mount itself) */
static int cg_dir(char *out, size_t size, const char *mount, const char *path, size_t plen)
{
	int n = snprintf(out, size, "%s%.*s", mount, plen == 1 ? 0 : (int)plen, path);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/* Whether the v2 cgroup at dir is frozen now (cgroup.events: "frozen 1"). */
static bool v2_frozen(const char *dir)
{
	char path[PATH_MAX + 16], buf[256];

	snprintf(path, sizeof(path), "%s/cgroup.events", dir);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return false;
	return !strncmp(buf, "frozen 1", 8) || strstr(buf, "\nfrozen 1");
}

/* Every cgroup holding egretd (its own and those above it) that a sandbox froze is thawed. */
static void thaw_sandbox_freezes(struct keeper_run *r)
{
	struct egret_signal_sender v;
	char path[PATH_MAX];
	size_t mlen = strlen(r->v2);
	struct stat st;
	__u64 key;

	if (r->freezes_fd < 0 || !r->v2[0] || bpf_map_get_next_key(r->freezes_fd, NULL, &key))
		return; /* nothing a sandbox froze (the usual case: one syscall) */
	if (cgroup__of_pid(r->egretd, r->v2, path, sizeof(path)))
		return;
	for (;;) {
		key = 0;
		if (stat(path, &st) == 0)
			key = (__u64)st.st_ino;
		if (key && bpf_map_lookup_elem(r->freezes_fd, &key, &v) == 0 &&
		    v.sandbox_id != ~0ull) { /* ~0: the host froze it since */
			char file[PATH_MAX + 16];

			snprintf(file, sizeof(file), "%s/cgroup.freeze", path);
			if (write_file(file, "0") == 0)
				log_warn(
					"keeper: cgroup %s, holding egretd, was frozen by pid %u of "
					"a sandbox: thawed",
					path, v.tgid);
			else
				log_err("keeper: cannot thaw %s, frozen by pid %u of a sandbox: %s",
					path, v.tgid, strerror(errno));
			bpf_map_delete_elem(r->freezes_fd, &key);
		}
		if (strlen(path) <= mlen || !strrchr(path, '/'))
			break;
		*strrchr(path, '/') = '\0';
	}
}

/* egretd back in its own cgroup of hierarchy h (now in cur), whether it went */
static bool return_in(struct keeper_run *r, const struct cg_line *h, const struct cg_line *cur)
{
	char mount[PATH_MAX], dir[PATH_MAX], now[PATH_MAX];
	int err;

	if (h->id == 0) {
		/* egretd goes home by itself unless it cannot run: a frozen cgroup */
		if (cg_dir(now, sizeof(now), r->v2, cur->path, cur->plen) || !v2_frozen(now))
			return false;
		snprintf(mount, sizeof(mount), "%s", r->v2);
	} else if (cgroup__v1_mount(h->ctrls, h->clen, mount, sizeof(mount))) {
		return false;
	}
	err = cg_dir(dir, sizeof(dir), mount, h->path, h->plen);
	if (!err)
		err = cgroup__join(dir, r->egretd);
	if (err) {
		if (!r->home_stuck)
			log_err("keeper: egretd was moved to %.*s (hierarchy %.*s) and cannot be put "
				"back in %s: %s",
				(int)cur->plen, cur->path, (int)h->clen, h->ctrls, dir,
				strerror(-err));
		r->home_stuck = true;
		return false;
	}
	log_warn("keeper: egretd was moved to %.*s (hierarchy %lu%s%.*s): put back in %s",
		 (int)cur->plen, cur->path, h->id, h->clen ? ", " : "", (int)h->clen, h->ctrls,
		 dir);
	return true;
}

/* egretd's cgroup in each hierarchy now against the one it started in; a hierarchy mounted
 * since (a v1 freezer an attacker mounted on a pure v2 host) started it in its root.
 */
static void egretd_home(struct keeper_run *r)
{
	static const struct cg_line root = { .path = "/", .plen = 1 };
	struct cg_line h, cur;
	size_t len = 0;
	char *now = NULL;
	const char *p;
	bool stuck = false;

	if (!r->home || cgroup__proc_text(r->egretd, &now, &len))
		return;
	if (len == r->home_len && !memcmp(now, r->home, len)) {
		r->home_stuck = false;
		free(now);
		return;
	}
	p = now;
	while (cg_line_next(&p, now + len, &cur)) {
		if (!cg_line_of(r->home, r->home_len, cur.id, &h) || h.clen != cur.clen ||
		    memcmp(h.ctrls, cur.ctrls, h.clen)) {
			h = root;
			h.id = cur.id;
			h.ctrls = cur.ctrls;
			h.clen = cur.clen;
		}
		if (cur.plen == h.plen && !memcmp(cur.path, h.path, h.plen))
			continue;
		if (!return_in(r, &h, &cur))
			stuck = stuck || r->home_stuck;
	}
	r->home_stuck = stuck;
	free(now);
}

/* The keeper itself in the roots of the v2 and v1 freezer hierarchies, which no one can freeze:
 * at its first guard tick (egretd has protected it by then) and whenever something moved it.
 */
static void keeper_to_roots(struct keeper_run *r)
{
	struct cg_line l;
	char mount[PATH_MAX], *text = NULL;
	const char *p;
	size_t len = 0;
	int err = 0;

	if (cgroup__proc_text(0, &text, &len))
		return;
	p = text;
	while (!err && cg_line_next(&p, text + len, &l)) {
		if (l.plen == 1 || (l.id != 0 && (l.clen != 7 || memcmp(l.ctrls, "freezer", 7))))
			continue;
		if (l.id == 0)
			snprintf(mount, sizeof(mount), "%s", r->v2);
		else if (cgroup__v1_mount(l.ctrls, l.clen, mount, sizeof(mount)))
			continue;
		err = mount[0] ? cgroup__join(mount, getpid()) : -ENOENT;
		if (err && !r->keeper_stuck)
			log_warn("keeper: cannot move itself to %s, where nothing freezes it: %s",
				 mount, strerror(-err));
	}
	r->keeper_stuck = err != 0;
	free(text);
}

static void cgroup_guard(struct keeper_run *r)
{
	keeper_to_roots(r);
	thaw_sandbox_freezes(r);
	egretd_home(r);
}

/* A lazy umount of bpffs in the keeper's mount namespace leaves the superblock (and the
 * watches) alive elsewhere, so inotify says nothing: mountinfo does.
 */
static void keeper_loop(struct keeper_run *r)
{
	for (;;) {
		struct pollfd p[4] = { { .fd = r->ino, .events = POLLIN },
				       { .fd = r->sig, .events = POLLIN },
				       { .fd = r->sock, .events = POLLIN },
				       { .fd = r->ino >= 0 ? r->mnt : -1, .events = POLLPRI } };
		char buf[4096];

		if (poll(p, 4, KEEPER_GUARD_MS) < 0)
			continue;
		if (mono_ms() - r->guarded_ms >= KEEPER_GUARD_MS) {
			r->guarded_ms = mono_ms();
			if (getppid() == r->egretd) {
				stop_guard__check(&r->guard);
				cgroup_guard(r);
			}
		}
		if (p[0].revents && r->ino >= 0) {
			while (read(r->ino, buf, sizeof(buf)) > 0)
				;
			repair(r);
		}
		if (p[3].revents && r->ino >= 0)
			repair(r);
		if (p[1].revents)
			on_handover(r);
		if (p[2].revents && r->sock >= 0)
			on_sock(r);
	}
}

/* the keeper's handle of a map it holds, -1 when it holds none of that name */
static int held_map(const struct keeper *k, const char *map)
{
	char name[64];
	size_t n = (size_t)snprintf(name, sizeof(name), "/maps/%s", map);

	for (unsigned int i = 0; i < k->nitems; i++) {
		size_t len = strlen(k->items[i].path);

		if (len >= n && !strcmp(k->items[i].path + len - n, name))
			return k->items[i].fd;
	}
	return -1;
}

static __attribute__((noreturn)) void keeper_main(const struct keeper *k, int sock)
{
	struct keeper_run r = { .k = k, .sock = sock, .egretd = getppid() };

	r.guard = (struct stop_guard){ .pid = r.egretd,
				       .senders_fd = held_map(k, LOADER_MAP_NAME(signal_senders)),
				       .what = "egretd" };
	r.freezes_fd = held_map(k, "freeze_writers"); /* bpf/confine.bpf.c */
	if (cgroup__find_v2_mount(r.v2, sizeof(r.v2)))
		r.v2[0] = '\0';
	if (cgroup__proc_text(r.egretd, &r.home, &r.home_len))
		r.home = NULL;

	prctl(PR_SET_NAME, KEEPER_COMM);
	setsid();
	if (chdir("/"))
		_exit(1);
	close_others(k, sock);
	r.sig = keeper_signals();
	r.ino = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	r.mnt = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (r.sig < 0 || r.ino < 0)
		_exit(1);
	snprintf(r.link, sizeof(r.link), "%s/" KEEPER_LINK, k->state_dir);
	repair(&r);
	report(&r, "ready");
	keeper_loop(&r);
	_exit(0);
}

/* ---- egretd's side -------------------------------------------------------------------------- */

static int collect(struct keeper *k)
{
	static const char *const subs[] = { "links", "maps" };
	char dir[PATH_MAX + 8];

	k->items = calloc(KEEPER_MAX_ITEMS, sizeof(*k->items));
	if (!k->items)
		return -ENOMEM;
	for (size_t s = 0; s < ARRAY_SIZE(subs); s++) {
		struct dirent *de;
		DIR *d;

		snprintf(dir, sizeof(dir), "%s/%s", k->state_dir, subs[s]);
		d = opendir(dir);
		if (!d)
			return -errno;
		while ((de = readdir(d)) && k->nitems < KEEPER_MAX_ITEMS) {
			struct keeper_item *it = &k->items[k->nitems];

			if (de->d_name[0] == '.' ||
			    snprintf(it->path, sizeof(it->path), "%s/%s", dir, de->d_name) >=
				    (int)sizeof(it->path))
				continue;
			it->fd = bpf_obj_get(it->path);
			if (it->fd >= 0)
				k->nitems++;
		}
		closedir(d);
	}
	return 0;
}

static void keeper_forget(struct keeper *k)
{
	if (k->pidfd >= 0) {
		loop__del(k->loop, &k->pw);
		close(k->pidfd);
	}
	if (k->sock >= 0) {
		loop__del(k->loop, &k->sw);
		close(k->sock);
	}
	k->pidfd = k->sock = -1;
	k->pid = 0;
}

static void on_keeper_report(struct watch *w, uint32_t events)
{
	struct keeper *k = w->data;
	char path[PATH_MAX];
	ssize_t n;

	while ((n = recv(k->sock, path, sizeof(path) - 1, MSG_DONTWAIT)) > 0) {
		path[n] = '\0';
		if (k->on_removed)
			k->on_removed(k->ctx, path);
	}
	if (n == 0 || (n < 0 && errno != EAGAIN))
		loop__del(k->loop, &k->sw);
}

static int keeper_spawn(struct keeper *k);

static void on_keeper_exit(struct watch *w, uint32_t events)
{
	struct keeper *k = w->data;
	pid_t pid = k->pid;
	int status = 0;

	waitpid(pid, &status, WNOHANG);
	on_keeper_report(&k->sw, EPOLLIN);
	keeper_forget(k);
	if (k->stopping)
		return;
	k->restarts++;
	log_warn("keeper (pid %d) is gone (%s %d): starting another", (int)pid,
		 WIFSIGNALED(status) ? "signal" : "exit status",
		 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
	if (keeper_spawn(k))
		log_err("no keeper: the pins of %s are held by egretd alone", k->state_dir);
}

/* Wait for the keeper's word that it holds everything and watches; the pins it had to put
 * back first (removed while no keeper ran) are reported.
 */
static int await_ready(struct keeper *k)
{
	uint64_t end = mono_ms() + KEEPER_READY_MS;
	struct pollfd p = { .fd = k->sock, .events = POLLIN };
	char msg[PATH_MAX];
	ssize_t n;

	for (;;) {
		uint64_t now = mono_ms();

		if (now >= end || poll(&p, 1, (int)(end - now)) <= 0)
			return -ETIMEDOUT;
		n = recv(k->sock, msg, sizeof(msg) - 1, 0);
		if (n <= 0)
			return -EPROTO;
		msg[n] = '\0';
		if (!strcmp(msg, "ready"))
			return 0;
		if (k->on_removed)
			k->on_removed(k->ctx, msg);
	}
}

static int keeper_spawn(struct keeper *k)
{
	int sv[2], err;
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(sv[0]);
		close(sv[1]);
		return err;
	}
	if (pid == 0) {
		close(sv[0]);
		keeper_main(k, sv[1]);
	}
	close(sv[1]);
	k->pid = pid;
	k->sock = sv[0];
	k->pidfd = sys_pidfd_open(pid);
	if (k->pidfd < 0) {
		err = -errno;
		goto fail;
	}
	err = await_ready(k);
	if (err)
		goto fail;
	k->pw = (struct watch){ .fd = k->pidfd, .fn = on_keeper_exit, .data = k };
	k->sw = (struct watch){ .fd = k->sock, .fn = on_keeper_report, .data = k };
	err = loop__add(k->loop, &k->pw, EPOLLIN);
	if (err)
		goto fail;
	err = loop__add(k->loop, &k->sw, EPOLLIN);
	if (err)
		goto fail;
	log_info("keeper (pid %d) holds %u pins of %s", (int)pid, k->nitems, k->state_dir);
	if (k->on_started)
		k->on_started(k->ctx, pid);
	return 0;
fail: /* keeper_forget: its watches, pidfd and socket */
	log_err("keeper (pid %d) did not start: %s", (int)pid, strerror(-err));
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
	keeper_forget(k);
	return err;
}

void keeper__tick(struct keeper *k, int signals_fd)
{
	if (k->guard.pid != k->pid)
		k->guard = (struct stop_guard){ .pid = k->pid, .what = "keeper" };
	k->guard.senders_fd = signals_fd;
	stop_guard__check(&k->guard);
}

int keeper__start(struct keeper *k, struct loop *loop, const char *state_dir)
{
	int err;

	k->loop = loop;
	k->pidfd = k->sock = -1;
	snprintf(k->state_dir, sizeof(k->state_dir), "%s", state_dir);
	err = collect(k);
	if (err) {
		log_err("keeper: cannot open the pins under %s: %s", state_dir, strerror(-err));
		return err;
	}
	return keeper_spawn(k);
}

static bool comm_is(pid_t pid, const char *prefix)
{
	char path[64], comm[32];
	struct stat st;
	int n;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st) || st.st_uid != 0)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = read_file(path, comm, sizeof(comm));
	return n > 0 && !strncmp(comm, prefix, strlen(prefix));
}

pid_t keeper__find(const char *state_dir)
{
	char link[PATH_MAX + 16], buf[32];
	ssize_t n;
	long pid;

	snprintf(link, sizeof(link), "%s/" KEEPER_LINK, state_dir);
	n = readlink(link, buf, sizeof(buf) - 1);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	pid = strtol(buf, NULL, 10);
	if (pid <= 1 || pid == getpid() || !comm_is((pid_t)pid, KEEPER_COMM))
		return 0;
	return (pid_t)pid;
}

pid_t keeper__quiesce_old(const char *state_dir)
{
	pid_t pid = keeper__find(state_dir);
	uint64_t end = mono_ms() + KEEPER_READY_MS;

	if (!pid)
		return 0;
	kill(pid, SIGUSR1);
	while (!comm_is(pid, KEEPER_COMM_QUIET) && mono_ms() < end)
		usleep(2000);
	if (!comm_is(pid, KEEPER_COMM_QUIET)) {
		log_warn("the previous keeper (pid %d) did not stop putting pins back: killed",
			 (int)pid);
		keeper__kill(pid, KEEPER_READY_MS);
		return 0;
	}
	log_info("the previous keeper (pid %d) holds the pins until this egretd's keeper does",
		 (int)pid);
	return pid;
}

void keeper__resume_old(pid_t pid)
{
	if (pid > 0 && comm_is(pid, KEEPER_COMM))
		kill(pid, SIGUSR2);
}

void keeper__kill(pid_t pid, int timeout_ms)
{
	int fd = sys_pidfd_open(pid);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (fd < 0)
		return;
	if (!sys_pidfd_send_signal(fd, SIGKILL))
		poll(&p, 1, timeout_ms);
	close(fd);
	waitpid(pid, NULL, WNOHANG);
}

void keeper__stop(struct keeper *k)
{
	struct pollfd p = { .fd = k->pidfd, .events = POLLIN };
	pid_t pid = k->pid;

	k->stopping = true;
	if (!pid)
		return;
	if (send(k->sock, "quit", 4, MSG_NOSIGNAL) < 0 || poll(&p, 1, KEEPER_READY_MS) <= 0)
		sys_pidfd_send_signal(k->pidfd, SIGKILL);
	waitpid(pid, NULL, 0);
	keeper_forget(k);
}

/* egretd exits (not uninstall): the keeper stays, holding the pins for the next one */
void keeper__close(struct keeper *k)
{
	if (k->pid)
		keeper_forget(k);
	for (unsigned int i = 0; k->items && i < k->nitems; i++)
		close(k->items[i].fd);
	free(k->items);
	k->items = NULL;
	k->nitems = 0;
}
