/* A policy's limit lines (policy.h) on the sandboxes they select: memory, CPU and pids limits in
 * each sandbox's cgroup v2 directory (under egret's root, or a registered container's cgroup:
 * a runtime's), or on a hybrid host in the v1 cgroups its processes are in, never raising one
 * a cgroup has; the throttling and memory.high events of v2 sandboxes; and the timeout, wall clock from the cgroup's
 * creation (or egretctl run --timeout's, from the command's start: egretd enforces it whatever
 * becomes of egretctl), after which the sandbox is frozen, reported (ResourceLimit
 * KIND_TIMEOUT) and killed, and killed again whenever something runs in it.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "egret/ocsf.h"
#include "engine_int.h"
#include "log.h"
#include "reslimit.h"
#include "stream.h"
#include "util.h"

#define NS_PER_MS 1000000ull

/* what the policy p gives sandbox s (the tightest of each kind) */
static void limits_of(const struct policy *p, const struct sandbox_entry *s, struct limits *l)
{
	const struct policy_budget *b;

	memset(l, 0, sizeof(*l));
	if ((b = policy__budget(p, LIMIT_MEMORY, s->name, s->meta)))
		l->memory = b->amount;
	if ((b = policy__budget(p, LIMIT_MEMORY_HIGH, s->name, s->meta)))
		l->memory_high = b->amount;
	if ((b = policy__budget(p, LIMIT_CPUS, s->name, s->meta)))
		l->cpu_milli = (uint32_t)b->amount;
	if ((b = policy__budget(p, LIMIT_PIDS, s->name, s->meta)))
		l->pids = (uint32_t)b->amount;
	if ((b = policy__budget(p, LIMIT_TIMEOUT, s->name, s->meta)))
		l->timeout_ms = b->amount;
}

int engine__limits_check(const struct engine *e, const struct policy *p, char *err, size_t errsz)
{
	struct limits all = { 0 };

	for (size_t i = 0; i < p->nbudgets; i++) {
		const struct policy_budget *b = &p->budgets[i];

		all.memory |= b->kind == LIMIT_MEMORY;
		all.memory_high |= b->kind == LIMIT_MEMORY_HIGH;
		all.cpu_milli |= b->kind == LIMIT_CPUS;
		all.pids |= b->kind == LIMIT_PIDS;
	}
	if (!all.memory && !all.memory_high && !all.cpu_milli && !all.pids)
		return 0;
	if (!e->paths)
		return 0; /* no cgroups to set (unit tests) */
	return limits__v2_check(&all, e->paths->cgroup_mount, e->cgroup_root, err, errsz);
}

/* When the cgroup at path was made (CLOCK_BOOTTIME ns), from its directory's change time: the
 * kernel sets it at mkdir. 0 when it cannot be read.
 */
static uint64_t born_of(const char *path)
{
	struct timespec real, boot;
	struct stat st;
	uint64_t ctime_ns, real_ns, boot_ns;

	if (stat(path, &st) || clock_gettime(CLOCK_REALTIME, &real) ||
	    clock_gettime(CLOCK_BOOTTIME, &boot))
		return 0;
	ctime_ns = (uint64_t)st.st_ctim.tv_sec * 1000000000ull + (uint64_t)st.st_ctim.tv_nsec;
	real_ns = (uint64_t)real.tv_sec * 1000000000ull + (uint64_t)real.tv_nsec;
	boot_ns = (uint64_t)boot.tv_sec * 1000000000ull + (uint64_t)boot.tv_nsec;
	if (ctime_ns > real_ns)
		return boot_ns;
	return real_ns - ctime_ns < boot_ns ? boot_ns - (real_ns - ctime_ns) : 1;
}

/* The v1 part l1 of sandbox s's limits (path its v2 cgroup) in the v1 cgroups its processes
 * are in: at every change and every second (a runtime places its processes after the cgroup
 * is made); an error logged once.
 */
static void v1_limits(struct engine *e, struct sandbox_entry *s, const char *path,
		      const struct limits *l1)
{
	char err[PATH_MAX + 256];
	int n;

	if (!e->paths)
		return;
	n = limits__v1_set(l1, e->paths->cgroup_mount, path, err, sizeof(err));
	if (n < 0 && !(s->flags & ENGINE_SB_V1_ERROR)) {
		s->flags |= ENGINE_SB_V1_ERROR;
		log_err("sandbox %s: its policy limits are not all set in v1: %s", s->name, err);
	} else if (n > 0) {
		log_info("sandbox %s: %d policy limit%s set in its v1 cgroups", s->name, n,
			 n == 1 ? "" : "s");
	}
}

void engine__limits_one(struct engine *e, struct sandbox_entry *s)
{
	char path[PATH_MAX], err[PATH_MAX + 256];
	struct limits l, l1, l2;
	int n;

	if (!s->id || !(s->flags & ENGINE_SB_INSTALLED) || (s->flags & ENGINE_SB_EXEMPT))
		return;
	limits_of(&e->pol, s, &l);
	s->deadline_ns = s->run_deadline_ns;
	s->deadline_from_ns = s->run_from_ns;
	if (!l.memory && !l.memory_high && !l.cpu_milli && !l.pids && !l.timeout_ms)
		return;
	if (engine__sandbox_path(e, s->id, path, sizeof(path)))
		return;
	if (!s->born_ns)
		s->born_ns = born_of(path);
	if (l.timeout_ms && s->born_ns &&
	    (!s->deadline_ns || s->born_ns + l.timeout_ms * NS_PER_MS < s->deadline_ns)) {
		s->deadline_ns = s->born_ns + l.timeout_ms * NS_PER_MS;
		s->deadline_from_ns = s->born_ns;
	}
	if (!l.memory && !l.memory_high && !l.cpu_milli && !l.pids)
		return;
	limits__split(&l, e->paths ? e->paths->cgroup_mount : "/nonexistent", &l2, &l1);
	n = limits__v2_set(&l2, path, err, sizeof(err));
	if (n < 0)
		log_err("sandbox %s: its policy limits are not set: %s", s->name, err);
	else if (n > 0)
		log_info("sandbox %s: %d policy limit%s set in %s", s->name, n, n == 1 ? "" : "s",
			 path);
	s->flags &= ~ENGINE_SB_V1_LIMITS;
	if (l1.memory || l1.cpu_milli || l1.pids) {
		s->flags |= ENGINE_SB_V1_LIMITS;
		v1_limits(e, s, path, &l1);
	}
}

void engine__run_limits(struct engine *e, uint64_t id, uint64_t ms, bool cpu_watched)
{
	struct sandbox_entry *s = sandbox_names__entry(&e->reg, id);
	uint64_t now = now_ns(CLOCK_BOOTTIME);

	if (!s)
		return;
	s->flags &= ~ENGINE_SB_CPU_BY_RUN;
	if (cpu_watched)
		s->flags |= ENGINE_SB_CPU_BY_RUN;
	s->run_from_ns = ms ? now : 0;
	s->run_deadline_ns = ms ? now + ms * NS_PER_MS : 0;
	engine__limits_one(e, s);
	if (!s->deadline_ns || s->deadline_ns > now)
		s->flags &= ~ENGINE_SB_TIMED_OUT; /* a new command, within its time */
}

void engine__sync_limits(struct engine *e)
{
	for (size_t i = 0; i < sandbox_names__slots(&e->reg); i++) {
		struct sandbox_entry *s = sandbox_names__at(&e->reg, i);

		if (s)
			engine__limits_one(e, s);
	}
}

/* A ResourceLimit event of sandbox s (rl's cgroup is path) */
static void emit_limit(struct engine *e, const struct sandbox_entry *s, const char *path,
		       Egret__V1__ResourceLimit *rl)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	struct sandbox_pb pb;

	if (!e->stream)
		return;
	sandbox_pb__fill(&pb, s->id, s->name, s->meta);
	rl->cgroup = (char *)path;
	ev.sandbox = &pb.sb;
	ev.class_uid = OCSF_PROCESS_ACTIVITY;
	ev.activity_id = rl->kind == EGRET__V1__RESOURCE_LIMIT__KIND__KIND_TIMEOUT
				 ? OCSF_PROCESS_ACTIVITY_TERMINATE
				 : OCSF_ACTIVITY_OTHER;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_LIMIT;
	ev.limit = rl;
	stream__emit(e->stream, &ev);
}

static void emit_timeout(struct engine *e, const struct sandbox_entry *s, const char *path,
			 uint64_t limit_ms, uint64_t ran_ms)
{
	Egret__V1__ResourceLimit rl = EGRET__V1__RESOURCE_LIMIT__INIT;

	rl.kind = EGRET__V1__RESOURCE_LIMIT__KIND__KIND_TIMEOUT;
	rl.phase = EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_HIT;
	rl.limit = limit_ms;
	rl.usage = ran_ms;
	emit_limit(e, s, path, &rl);
}

/* A cgroup file's one number ("max": UINT64_MAX); 0 when unreadable. */
static uint64_t cg_number(const char *path, const char *file)
{
	char name[PATH_MAX + 32], text[64];

	snprintf(name, sizeof(name), "%s/%s", path, file);
	if (read_file(name, text, sizeof(text)) <= 0)
		return 0;
	return strncmp(text, "max", 3) ? strtoull(text, NULL, 10) : UINT64_MAX;
}

static void emit_high(struct engine *e, const struct sandbox_entry *s, const char *path, int phase)
{
	Egret__V1__ResourceLimit rl = EGRET__V1__RESOURCE_LIMIT__INIT;

	rl.kind = EGRET__V1__RESOURCE_LIMIT__KIND__KIND_MEMORY_HIGH;
	rl.phase = phase;
	rl.high_count = s->high_count;
	if (phase == EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_STARTED) {
		rl.limit = cg_number(path, "memory.high");
		rl.usage = cg_number(path, "memory.current");
	}
	emit_limit(e, s, path, &rl);
}

/* Sandbox s over its memory.high since egretd last looked (path its cgroup)? The first time,
 * reported.
 */
static void look_at_high(struct engine *e, struct sandbox_entry *s, const char *path)
{
	uint64_t high;

	if (limits__file_value(path, "memory.events", "high", &high) || high <= s->high_count)
		return;
	s->high_count = high;
	if (s->flags & ENGINE_SB_OVER_HIGH)
		return;
	s->flags |= ENGINE_SB_OVER_HIGH;
	log_info("sandbox %s: over its memory.high", s->name);
	emit_high(e, s, path, EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_STARTED);
}

/* cpu.max as thousandths of a CPU; 0 when none ("max") or unreadable */
static uint64_t cpu_limit(const char *path)
{
	char file[PATH_MAX + 16], text[64];
	uint64_t quota, period;

	snprintf(file, sizeof(file), "%s/cpu.max", path);
	if (read_file(file, text, sizeof(text)) <= 0 ||
	    sscanf(text, "%" SCNu64 " %" SCNu64, &quota, &period) != 2 || !period)
		return 0;
	return quota * 1000 / period;
}

static void emit_throttle(struct engine *e, const struct sandbox_entry *s, const char *path,
			  int phase)
{
	Egret__V1__ResourceLimit rl = EGRET__V1__RESOURCE_LIMIT__INIT;
	uint64_t now = now_ns(CLOCK_BOOTTIME);

	rl.kind = EGRET__V1__RESOURCE_LIMIT__KIND__KIND_CPU_THROTTLE;
	rl.phase = phase;
	rl.limit = path[0] ? cpu_limit(path) : 0;
	if (phase == EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_SUMMARY && s->born_ns &&
	    now > s->born_ns)
		rl.usage = (now - s->born_ns) / NS_PER_MS;
	rl.periods = s->cpu_stat[0];
	rl.throttled_periods = s->cpu_stat[1];
	rl.throttled_ns = s->cpu_stat[2];
	emit_limit(e, s, path, &rl);
}

/* Sandbox s throttled at its cpu.max (path its cgroup)? The first time, reported (egretctl
 * run reports its own command's).
 */
static void look_at_cpu(struct engine *e, struct sandbox_entry *s, const char *path)
{
	struct limit_cgroups lc = { .cpu_v1 = false };
	uint64_t v[3];

	if (s->flags & ENGINE_SB_CPU_BY_RUN)
		return;
	snprintf(lc.cpu_stat, sizeof(lc.cpu_stat), "%s/cpu.stat", path);
	if (limits__cpu_stat(&lc, &v[0], &v[1], &v[2]))
		return; /* no cpu controller in this cgroup, or gone */
	memcpy(s->cpu_stat, v, sizeof(v));
	if (!s->cpu_stat[1] || (s->flags & ENGINE_SB_THROTTLED))
		return;
	s->flags |= ENGINE_SB_THROTTLED;
	if (!s->born_ns)
		s->born_ns = born_of(path);
	log_info("sandbox %s: throttled at its cpu.max", s->name);
	emit_throttle(e, s, path, EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_STARTED);
}

void engine__limits_gone(struct engine *e, uint64_t id)
{
	struct sandbox_entry *s = sandbox_names__entry(&e->reg, id);
	char path[PATH_MAX];

	if (!s || !(s->flags & (ENGINE_SB_OVER_HIGH | ENGINE_SB_THROTTLED)))
		return;
	if (engine__sandbox_path(e, s->id, path, sizeof(path)))
		path[0] = '\0';
	if (s->flags & ENGINE_SB_OVER_HIGH)
		emit_high(e, s, path, EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_SUMMARY);
	if (s->flags & ENGINE_SB_THROTTLED)
		emit_throttle(e, s, path, EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_SUMMARY);
	s->flags &= ~(ENGINE_SB_OVER_HIGH | ENGINE_SB_THROTTLED);
}

/* Does the cgroup at path hold a process (cgroup.events: "populated 1")? */
static bool populated(const char *path)
{
	char file[PATH_MAX + 16], text[256];

	snprintf(file, sizeof(file), "%s/cgroup.events", path);
	return read_file(file, text, sizeof(text)) > 0 && strstr(text, "populated 1");
}

void engine__limits_tick(struct engine *e)
{
	uint64_t now = now_ns(CLOCK_BOOTTIME);
	bool memory = e->paths && limits__v2_offers(e->paths->cgroup_mount, "memory");
	bool cpu = e->paths && limits__v2_offers(e->paths->cgroup_mount, "cpu");
	char path[PATH_MAX];

	for (size_t i = 0; i < sandbox_names__slots(&e->reg); i++) {
		struct sandbox_entry *s = sandbox_names__at(&e->reg, i);

		if (!s || !(s->flags & ENGINE_SB_INSTALLED) || (s->flags & ENGINE_SB_EXEMPT) ||
		    (!memory && !cpu && !s->deadline_ns && !(s->flags & ENGINE_SB_V1_LIMITS)) ||
		    engine__sandbox_path(e, s->id, path, sizeof(path)))
			continue;
		if (s->flags & ENGINE_SB_V1_LIMITS) {
			struct limits l, l1, l2;

			limits_of(&e->pol, s, &l);
			limits__split(&l, e->paths->cgroup_mount, &l2, &l1);
			v1_limits(e, s, path, &l1);
		}
		if (memory)
			look_at_high(e, s, path);
		if (cpu)
			look_at_cpu(e, s, path);
		if (!s->deadline_ns || now < s->deadline_ns)
			continue;
		if (s->flags & ENGINE_SB_TIMED_OUT) {
			if (populated(path)) /* something runs in it again: killed again */
				limits__kill(path);
			continue;
		}
		s->flags |= ENGINE_SB_TIMED_OUT;
		limits__freeze(path);
		log_note("sandbox %s: killed at its %s of %llu ms", s->name,
			 s->deadline_ns == s->run_deadline_ns ? "egretctl run --timeout"
							      : "policy timeout",
			 (unsigned long long)((s->deadline_ns - s->deadline_from_ns) / NS_PER_MS));
		emit_timeout(e, s, path, (s->deadline_ns - s->deadline_from_ns) / NS_PER_MS,
			     (now - s->deadline_from_ns) / NS_PER_MS);
		limits__kill(path);
		/* a frozen cgroup stays frozen: what enters it later is killed, not stopped */
		snprintf(path + strlen(path), sizeof(path) - strlen(path), "/cgroup.freeze");
		write_file(path, "0");
	}
}
