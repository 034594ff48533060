/* egretd watching itself (see selfwatch.h). The alive record is one fixed-size line rewritten
 * in place every second (pwrite, no fsync: it must survive egretd, not the machine; a reboot is
 * told by the boot id). Durations within a boot come from CLOCK_MONOTONIC, which a wall clock
 * change does not move and a suspend does not advance (nothing runs then, so nothing is lost).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "selfwatch.h"
#include "stream.h"
#include "util.h"

#define RECORD_LEN 256

int selfwatch__format(const struct selfwatch_record *r, char *buf, size_t size)
{
	int n;

	if (size < RECORD_LEN + 1)
		return -ENOSPC;
	n = snprintf(buf, size,
		     "egretd-alive 1 boot=%s mono=%" PRIu64 " unix=%" PRIu64
		     " pid=%d state=%s stream=%s seq=%" PRIu64 " reason=%s",
		     r->boot_id[0] ? r->boot_id : "-", r->mono_ns, r->unix_ns, r->pid,
		     r->stopped ? "stopped" : "running", r->stream[0] ? r->stream : "-", r->seq,
		     r->reason);
	if (n < 0 || n >= RECORD_LEN)
		return -ENAMETOOLONG;
	/* padded to a fixed size: each rewrite covers the last one whole */
	memset(buf + n, ' ', (size_t)(RECORD_LEN - 1 - n));
	buf[RECORD_LEN - 1] = '\n';
	buf[RECORD_LEN] = '\0';
	return RECORD_LEN;
}

int selfwatch__parse(const char *buf, struct selfwatch_record *r)
{
	char state[16];
	int at = -1;
	size_t n;

	memset(r, 0, sizeof(*r));
	if (sscanf(buf,
		   "egretd-alive 1 boot=%39s mono=%" SCNu64 " unix=%" SCNu64
		   " pid=%d state=%15s stream=%39s seq=%" SCNu64 " reason=%n",
		   r->boot_id, &r->mono_ns, &r->unix_ns, &r->pid, state, r->stream, &r->seq,
		   &at) != 7 ||
	    at < 0)
		return -EINVAL;
	if (strcmp(state, "running") && strcmp(state, "stopped"))
		return -EINVAL;
	r->stopped = !strcmp(state, "stopped");
	snprintf(r->reason, sizeof(r->reason), "%s", buf + at);
	n = strcspn(r->reason, "\n");
	r->reason[n] = '\0';
	while (n && r->reason[n - 1] == ' ')
		r->reason[--n] = '\0';
	return 0;
}

static void iso_time(uint64_t unix_ns, char *out, size_t size)
{
	time_t t = (time_t)(unix_ns / 1000000000ull);
	struct tm tm;

	if (!gmtime_r(&t, &tm) || !strftime(out, size, "%Y-%m-%dT%H:%M:%SZ", &tm))
		snprintf(out, size, "?");
}

bool selfwatch__gap_since(const struct selfwatch_record *r, const char *boot_id, uint64_t mono_ns,
			  uint64_t unix_ns, struct selfwatch_gap *g)
{
	bool same_boot = !strcmp(r->boot_id, boot_id);
	char when[32], how[160];

	memset(g, 0, sizeof(*g));
	g->start_unix_ns = r->unix_ns;
	g->rebooted = !same_boot;
	if (same_boot)
		g->duration_ns = mono_ns > r->mono_ns ? mono_ns - r->mono_ns : 0;
	else
		g->duration_ns = unix_ns > r->unix_ns ? unix_ns - r->unix_ns : 0;
	iso_time(r->unix_ns, when, sizeof(when));
	if (!same_boot)
		snprintf(how, sizeof(how),
			 "the host rebooted (what the kernel's ring held then is gone, uncounted)");
	else if (r->stopped)
		snprintf(how, sizeof(how), "egretd pid %d was stopped (%s)", r->pid,
			 r->reason[0] ? r->reason : "no reason given");
	else
		snprintf(how, sizeof(how),
			 "egretd pid %d ended without stopping (killed, crashed or out of memory)",
			 r->pid);
	snprintf(g->cause, sizeof(g->cause),
		 "egretd was not running for %.3f s, from %s: %s; previous stream %s ended at seq "
		 "%" PRIu64,
		 (double)g->duration_ns / 1e9, when, how, r->stream, r->seq);
	return true;
}

static void read_boot_id(char *out, size_t size)
{
	int n = read_file("/proc/sys/kernel/random/boot_id", out, size);

	if (n <= 0)
		snprintf(out, size, "-");
	else
		out[strcspn(out, "\n")] = '\0';
}

static int write_record(struct selfwatch *w, bool stopped, const char *reason)
{
	struct selfwatch_record r = { .pid = getpid(), .stopped = stopped };
	char buf[RECORD_LEN + 1];
	int n;

	if (w->alive_fd < 0)
		return -EBADF;
	snprintf(r.boot_id, sizeof(r.boot_id), "%s", w->boot_id);
	r.mono_ns = now_ns(CLOCK_MONOTONIC);
	r.unix_ns = now_ns(CLOCK_REALTIME);
	if (w->stream) {
		snprintf(r.stream, sizeof(r.stream), "%s", w->stream->id);
		r.seq = w->stream->seq;
	}
	for (size_t i = 0; reason && reason[i] && i + 1 < sizeof(r.reason); i++)
		r.reason[i] = reason[i] == '\n' ? ' ' : reason[i];
	n = selfwatch__format(&r, buf, sizeof(buf));
	if (n < 0)
		return n;
	return pwrite(w->alive_fd, buf, (size_t)n, 0) == n ? 0 : -errno;
}

/* Each value as it is now; one that cannot be read keeps what l held (out of descriptors,
 * say: that is not a change of oom_score_adj).
 */
static void read_limits(struct selfwatch_limits *l)
{
	char buf[32];
	int v;

	errno = 0;
	v = getpriority(PRIO_PROCESS, 0);
	if (!errno)
		l->nice = v;
	v = sched_getscheduler(0);
	if (v >= 0)
		l->policy = v;
	if (read_file("/proc/self/oom_score_adj", buf, sizeof(buf)) > 0)
		l->oom_score_adj = atoi(buf);
	getrlimit(RLIMIT_NOFILE, &l->nofile);
}

int selfwatch__open(struct selfwatch *w, struct stream *s, const char *spool_dir)
{
	struct selfwatch_record prev;
	char buf[RECORD_LEN + 1];
	ssize_t n;

	memset(w, 0, sizeof(*w));
	w->stream = s;
	w->alive_fd = -1;
	read_boot_id(w->boot_id, sizeof(w->boot_id));
	if (join_path(w->alive_path, sizeof(w->alive_path), spool_dir, "alive"))
		return -ENAMETOOLONG;
	w->alive_fd = open(w->alive_path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (w->alive_fd < 0) {
		int err = -errno;

		log_err("cannot open %s: %s", w->alive_path, strerror(errno));
		return err;
	}
	n = pread(w->alive_fd, buf, RECORD_LEN, 0);
	buf[n > 0 ? n : 0] = '\0';
	if (n > 0 && selfwatch__parse(buf, &prev) == 0)
		w->have_previous = selfwatch__gap_since(&prev, w->boot_id, now_ns(CLOCK_MONOTONIC),
							now_ns(CLOCK_REALTIME), &w->downtime);
	else if (n > 0)
		log_warn("%s: not an alive record; the time since the last egretd is unknown",
			 w->alive_path);
	memset(&w->limits, 0, sizeof(w->limits));
	read_limits(&w->limits);
	w->have_limits = true;
	w->last_turn_ns = w->cpu_read_ns = now_ns(CLOCK_MONOTONIC);
	w->last_turn_unix_ns = now_ns(CLOCK_REALTIME);
	w->last_cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID);
	return write_record(w, false, "");
}

bool selfwatch__downtime(const struct selfwatch *w, struct selfwatch_gap *g)
{
	if (!w->have_previous)
		return false;
	*g = w->downtime;
	return true;
}

/* A process's CPU clock is not in the vDSO: reading it each turn was a system call each wakeup
 * (half a system call per DNS query at 10,000 queries/s). It is read when a gap is found and
 * otherwise every SELFWATCH_CPU_NS, so a gap's "busy or stopped" looks at the gap plus at most
 * that much of the time before it.
 */
bool selfwatch__turn(struct selfwatch *w, struct selfwatch_gap *g)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC), late = now - w->last_turn_ns;
	bool gap = late >= SELFWATCH_GAP_NS;
	char when[32];

	if (gap) {
		uint64_t cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID), ran = cpu - w->last_cpu_ns;
		uint64_t window = now - w->cpu_read_ns;

		memset(g, 0, sizeof(*g));
		g->start_unix_ns = w->last_turn_unix_ns;
		g->duration_ns = late;
		iso_time(g->start_unix_ns, when, sizeof(when));
		/* busy is egretd's own doing; stopped or starved is done to it */
		snprintf(g->cause, sizeof(g->cause),
			 "egretd did not drain the kernel's ring for %.3f s, from %s: %s (it ran "
			 "%.3f s of CPU in the last %.3f s)",
			 (double)late / 1e9, when,
			 ran * 2 > window
				 ? "it was busy"
				 : "it was stopped (SIGSTOP, a frozen cgroup) or not scheduled",
			 (double)ran / 1e9, (double)window / 1e9);
		w->gaps++;
		w->last_cpu_ns = cpu;
		w->cpu_read_ns = now;
	} else if (now - w->cpu_read_ns >= SELFWATCH_CPU_NS) {
		w->last_cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID);
		w->cpu_read_ns = now;
	}
	w->last_turn_ns = now;
	w->last_turn_unix_ns = now_ns(CLOCK_REALTIME);
	return gap;
}

static void emit_limit_change(struct selfwatch *w, const char *detail)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Process pr = EGRET__V1__PROCESS__INIT;
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;

	log_warn("%s", detail);
	if (!w->stream)
		return;
	pr.pid = (uint32_t)getpid();
	pr.tid = pr.pid;
	pr.ppid = (uint32_t)getppid();
	pr.uid = (uint32_t)getuid();
	pr.euid = (uint32_t)geteuid();
	pr.comm = (char *)"egretd";
	t.kind = EGRET__V1__TAMPER__KIND__KIND_AGENT_LIMITS;
	t.detail = (char *)detail;
	ev.process = &pr;
	ev.class_uid = OCSF_APPLICATION_LIFECYCLE;
	ev.activity_id = OCSF_ACTIVITY_OTHER;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	ev.tamper = &t;
	stream__emit(w->stream, &ev);
}

static void limit_text(const struct rlimit *r, char *out, size_t size)
{
	char soft[24], hard[24];

	snprintf(soft, sizeof(soft), "%llu", (unsigned long long)r->rlim_cur);
	snprintf(hard, sizeof(hard), "%llu", (unsigned long long)r->rlim_max);
	snprintf(out, size, "%s/%s", r->rlim_cur == RLIM_INFINITY ? "unlimited" : soft,
		 r->rlim_max == RLIM_INFINITY ? "unlimited" : hard);
}

/* What changed since the last look, one event each; the new values become the baseline. */
static void check_limits(struct selfwatch *w)
{
	struct selfwatch_limits now, *was = &w->limits;
	char detail[256], a[56], b[56];

	now = *was;
	read_limits(&now);
	if (now.nice != was->nice) {
		snprintf(detail, sizeof(detail),
			 "egretd's nice value was changed from %d to %d (renice)", was->nice,
			 now.nice);
		emit_limit_change(w, detail);
	}
	if (now.policy != was->policy) {
		snprintf(detail, sizeof(detail),
			 "egretd's scheduling policy was changed from %d to %d (chrt; %d is "
			 "SCHED_IDLE)",
			 was->policy, now.policy, SCHED_IDLE);
		emit_limit_change(w, detail);
	}
	if (now.oom_score_adj != was->oom_score_adj) {
		snprintf(detail, sizeof(detail),
			 "egretd's oom_score_adj was changed from %d to %d (the OOM killer picks "
			 "higher first)",
			 was->oom_score_adj, now.oom_score_adj);
		emit_limit_change(w, detail);
	}
	if (now.nofile.rlim_cur != was->nofile.rlim_cur ||
	    now.nofile.rlim_max != was->nofile.rlim_max) {
		limit_text(&was->nofile, a, sizeof(a));
		limit_text(&now.nofile, b, sizeof(b));
		snprintf(detail, sizeof(detail),
			 "egretd's RLIMIT_NOFILE (soft/hard) was changed from %s to %s (prlimit)",
			 a, b);
		emit_limit_change(w, detail);
	}
	*was = now;
}

void selfwatch__tick(struct selfwatch *w)
{
	write_record(w, false, "");
	if (w->have_limits)
		check_limits(w);
}

void selfwatch__stop(struct selfwatch *w, const char *reason)
{
	write_record(w, true, reason);
}

void selfwatch__close(struct selfwatch *w)
{
	if (w->alive_fd >= 0)
		close(w->alive_fd);
	w->alive_fd = -1;
}
