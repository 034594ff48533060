/* A policy's limit lines (policy.h) on the sandboxes they select: memory, CPU and pids limits in
 * each sandbox's cgroup v2 directory (under egret's root, or a registered container's cgroup:
 * a runtime's), never raising one the cgroup has; and the timeout, wall clock from the cgroup's
 * creation (or egretctl run --timeout's, from the command's start: egretd enforces it whatever
 * becomes of egretctl), after which the sandbox is frozen, reported (ResourceLimit
 * KIND_TIMEOUT) and killed, and killed again whenever something runs in it.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
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
		all.cpu_milli |= b->kind == LIMIT_CPUS;
		all.pids |= b->kind == LIMIT_PIDS;
	}
	if (!all.memory && !all.cpu_milli && !all.pids)
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

void engine__limits_one(struct engine *e, struct sandbox_entry *s)
{
	char path[PATH_MAX], err[PATH_MAX + 256];
	struct limits l;
	int n;

	if (!s->id || !(s->flags & ENGINE_SB_INSTALLED) || (s->flags & ENGINE_SB_EXEMPT))
		return;
	limits_of(&e->pol, s, &l);
	s->deadline_ns = s->run_deadline_ns;
	s->deadline_from_ns = s->run_from_ns;
	if (!l.memory && !l.cpu_milli && !l.pids && !l.timeout_ms)
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
	if (!l.memory && !l.cpu_milli && !l.pids)
		return;
	n = limits__v2_set(&l, path, err, sizeof(err));
	if (n < 0)
		log_err("sandbox %s: its policy limits are not set: %s", s->name, err);
	else if (n > 0)
		log_info("sandbox %s: %d policy limit%s set in %s", s->name, n, n == 1 ? "" : "s",
			 path);
}

void engine__run_timeout(struct engine *e, uint64_t id, uint64_t ms)
{
	struct sandbox_entry *s = sandbox_names__entry(&e->reg, id);
	uint64_t now = now_ns(CLOCK_BOOTTIME);

	if (!s)
		return;
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

static void emit_timeout(struct engine *e, const struct sandbox_entry *s, const char *path,
			 uint64_t limit_ms, uint64_t ran_ms)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__ResourceLimit rl = EGRET__V1__RESOURCE_LIMIT__INIT;
	struct sandbox_pb pb;

	if (!e->stream)
		return;
	sandbox_pb__fill(&pb, s->id, s->name, s->meta);
	rl.kind = EGRET__V1__RESOURCE_LIMIT__KIND__KIND_TIMEOUT;
	rl.phase = EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_HIT;
	rl.limit = limit_ms;
	rl.usage = ran_ms;
	rl.cgroup = (char *)path;
	ev.sandbox = &pb.sb;
	ev.class_uid = OCSF_PROCESS_ACTIVITY;
	ev.activity_id = OCSF_PROCESS_ACTIVITY_TERMINATE;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_LIMIT;
	ev.limit = &rl;
	stream__emit(e->stream, &ev);
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
	char path[PATH_MAX];

	for (size_t i = 0; i < sandbox_names__slots(&e->reg); i++) {
		struct sandbox_entry *s = sandbox_names__at(&e->reg, i);

		if (!s || !s->deadline_ns || now < s->deadline_ns ||
		    !(s->flags & ENGINE_SB_INSTALLED) ||
		    engine__sandbox_path(e, s->id, path, sizeof(path)))
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
