/* A sandbox's resource limits through the host's cgroup controllers: reslimit.h. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "reslimit.h"
#include "util.h"

#define CPU_PERIOD_US 100000u

int limits__parse_memory(const char *s, uint64_t *out)
{
	char num[32];
	size_t n;

	if (!s || (n = strlen(s)) == 0 || n >= sizeof(num))
		return -EINVAL;
	memcpy(num, s, n + 1);
	/* 64MiB and 64MB as 64M */
	if (n > 3 && !strcmp(num + n - 2, "iB"))
		num[n -= 2] = '\0';
	else if (n > 2 && num[n - 1] == 'B' && num[n - 2] > '9')
		num[--n] = '\0';
	if (parse_size(num, out) || *out < (4ull << 20))
		return -EINVAL;
	return 0;
}

int limits__parse_cpus(const char *s, uint32_t *milli)
{
	uint64_t whole = 0, frac = 0;
	unsigned int digits = 0;
	const char *c = s;

	if (!s || !*s)
		return -EINVAL;
	for (; *c >= '0' && *c <= '9' && whole < 100000; c++)
		whole = whole * 10 + (uint64_t)(*c - '0');
	if (c == s && *c != '.')
		return -EINVAL;
	if (*c == '.') {
		for (c++; *c >= '0' && *c <= '9'; c++, digits++) {
			if (digits >= 3)
				return -EINVAL; /* a thousandth of a CPU is the finest */
			frac = frac * 10 + (uint64_t)(*c - '0');
		}
		for (unsigned int i = digits; i < 3; i++)
			frac *= 10;
	}
	if (*c || whole * 1000 + frac < 10 || whole * 1000 + frac > 1024000)
		return -EINVAL;
	*milli = (uint32_t)(whole * 1000 + frac);
	return 0;
}

int limits__parse_duration(const char *s, uint64_t *ms)
{
	static const struct {
		const char *unit;
		uint64_t ms;
	} units[] = { { "", 1000 }, { "s", 1000 }, { "ms", 1 }, { "m", 60000 }, { "h", 3600000 } };
	uint64_t v;
	char *end;

	if (!s || *s < '0' || *s > '9')
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || v == 0)
		return -EINVAL;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (!strcmp(end, units[i].unit)) {
			if (v > UINT64_MAX / units[i].ms / 1000)
				return -EINVAL;
			*ms = v * units[i].ms;
			return 0;
		}
	}
	return -EINVAL;
}

/* Is word one of the space-separated words of the file at path? */
static bool file_has_word(const char *path, const char *word)
{
	char buf[512];
	size_t n = strlen(word);
	int len = read_file(path, buf, sizeof(buf));

	for (char *p = len > 0 ? buf : NULL; p && *p;
	     p += strcspn(p, " \n"), p += strspn(p, " \n")) {
		if (strncmp(p, word, n) == 0 && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
			return true;
	}
	return false;
}

/* +ctl in cgroup.subtree_control from the v2 mount down to root, so root's children have it */
static int v2_enable(const char *v2_mount, const char *root, const char *ctl, char *err,
		     size_t errsz)
{
	char dir[PATH_MAX], file[PATH_MAX + 32], plus[32];
	size_t mlen = strlen(v2_mount);
	const char *rest = root + mlen;

	if (strncmp(root, v2_mount, mlen) || (*rest && *rest != '/') || strlen(root) >= sizeof(dir))
		return -EINVAL;
	snprintf(plus, sizeof(plus), "+%s", ctl);
	memcpy(dir, v2_mount, mlen + 1);
	for (;;) {
		int e;

		snprintf(file, sizeof(file), "%s/cgroup.subtree_control", dir);
		if (!file_has_word(file, ctl) && (e = write_file(file, plus))) {
			snprintf(err, errsz,
				 "cannot enable the %s controller in %s: %s (a cgroup holding "
				 "processes cannot pass controllers on: keep egret's root free of "
				 "them)",
				 ctl, file, strerror(-e));
			return e;
		}
		if (!*rest)
			return 0;
		rest += strcspn(rest + 1, "/") + 1;
		memcpy(dir, root, (size_t)(rest - root));
		dir[rest - root] = '\0';
	}
}

/* <v1 mount of ctl>/<root's name>/<name>, made root's (0755) and recorded in lc */
static int v1_dir(const char *mnt, const char *root, const char *name, struct limit_cgroups *lc,
		  char *out, size_t size)
{
	const char *base = strrchr(root, '/') ? strrchr(root, '/') + 1 : root;

	if ((size_t)snprintf(out, size, "%s/%s", mnt, base) >= size)
		return -ENAMETOOLONG;
	if (mkdir(out, 0755) && errno != EEXIST)
		return -errno;
	if ((size_t)snprintf(out, size, "%s/%s/%s", mnt, base, name) >= size)
		return -ENAMETOOLONG;
	if (mkdir(out, 0755) && errno != EEXIST)
		return -errno;
	for (unsigned int i = 0; i < lc->nv1; i++) {
		if (!strcmp(lc->v1[i], out))
			return 0;
	}
	if (lc->nv1 == LIMITS_V1_MAX)
		return -E2BIG;
	snprintf(lc->v1[lc->nv1++], sizeof(lc->v1[0]), "%s", out);
	return 0;
}

static int write_in(const char *dir, const char *file, const char *value, char *err, size_t errsz)
{
	char path[PATH_MAX + 64];
	int e;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	e = write_file(path, value);
	if (e)
		snprintf(err, errsz, "cannot write %s to %s: %s", value, path, strerror(-e));
	return e;
}

/* "A" or "A B" (A may be "max"): A/B as a fraction, max as UINT64_MAX over 1 */
static bool v2_value(const char *text, uint64_t *num, uint64_t *den)
{
	char *end;

	*den = 1;
	if (!strncmp(text, "max", 3)) {
		*num = UINT64_MAX;
		return true;
	}
	errno = 0;
	*num = strtoull(text, &end, 10);
	if (end == text || errno)
		return false;
	if (*end == ' ') {
		*den = strtoull(end + 1, &end, 10);
		if (!*den)
			return false;
	}
	return true;
}

/* value into dir/file unless what the file has is as tight already: 1 written, 0 left, -errno */
static int v2_lower(const char *dir, const char *file, const char *value, char *err, size_t errsz)
{
	char path[PATH_MAX + 64], have[64];
	uint64_t hn, hd, wn, wd;
	int e;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	e = read_file(path, have, sizeof(have));
	if (e < 0) {
		snprintf(err, errsz, "cannot read %s: %s", path, strerror(-e));
		return e;
	}
	if (v2_value(have, &hn, &hd) && v2_value(value, &wn, &wd) &&
	    (unsigned __int128)hn * wd <= (unsigned __int128)wn * hd)
		return 0;
	e = write_in(dir, file, value, err, errsz);
	return e ? e : 1;
}

/* One controller's limit: its files and their values, in v2 and in v1. */
struct ctl_limit {
	const char *ctl, *option;
	const char *v2_files[2], *v1_files[2];
	char v2_values[2][48], v1_values[2][48];
};

static int apply_one(struct ctl_limit *c, const char *v2_mount, const char *root, const char *name,
		     struct limit_cgroups *lc, char *err, size_t errsz)
{
	char v2file[PATH_MAX + 32], mnt[PATH_MAX], dir[PATH_MAX];
	int e;

	snprintf(v2file, sizeof(v2file), "%s/cgroup.controllers", v2_mount);
	if (file_has_word(v2file, c->ctl)) {
		e = v2_enable(v2_mount, root, c->ctl, err, errsz);
		if (e)
			return e;
		if ((size_t)snprintf(dir, sizeof(dir), "%s/%s", root, name) >= sizeof(dir))
			return -ENAMETOOLONG;
		for (int i = 0; i < 2 && c->v2_files[i]; i++) {
			/* egretd may have set the policy's tighter limit already: kept */
			e = v2_lower(dir, c->v2_files[i], c->v2_values[i], err, errsz);
			if (e < 0)
				return e;
		}
		if (!strcmp(c->ctl, "cpu")) {
			snprintf(lc->cpu_stat, sizeof(lc->cpu_stat), "%s/cpu.stat", dir);
			lc->cpu_v1 = false;
		}
		return 0;
	}
	if (!c->v1_files[0]) {
		snprintf(err, errsz,
			 "%s: %s is cgroup v2's, and cgroup v2 does not offer the %s controller "
			 "here (%s: a hybrid host keeps it in v1); run without %s",
			 c->option, c->v2_files[0], c->ctl, v2file, c->option);
		return -ENOTSUP;
	}
	if (cgroup__v1_mount(c->ctl, strlen(c->ctl), mnt, sizeof(mnt))) {
		snprintf(err, errsz,
			 "%s: the %s controller is neither offered by cgroup v2 (%s) nor mounted "
			 "as a v1 hierarchy here; enable it, or run without %s",
			 c->option, c->ctl, v2file, c->option);
		return -ENOTSUP;
	}
	e = v1_dir(mnt, root, name, lc, dir, sizeof(dir));
	if (e) {
		snprintf(err, errsz, "%s: cannot make the v1 %s cgroup %s: %s", c->option, c->ctl,
			 dir, strerror(-e));
		return e;
	}
	for (int i = 0; i < 2 && c->v1_files[i]; i++) {
		e = write_in(dir, c->v1_files[i], c->v1_values[i], err, errsz);
		if (e)
			return e;
	}
	if (!strcmp(c->ctl, "cpu")) {
		snprintf(lc->cpu_stat, sizeof(lc->cpu_stat), "%s/cpu.stat", dir);
		lc->cpu_v1 = true;
	}
	return 0;
}

int limits__apply(const struct limits *l, const char *v2_mount, const char *root, const char *name,
		  struct limit_cgroups *lc, char *err, size_t errsz)
{
	struct ctl_limit mem = { .ctl = "memory",
				 .option = "--memory",
				 .v2_files = { "memory.max" },
				 .v1_files = { "memory.limit_in_bytes" } };
	struct ctl_limit cpu = { .ctl = "cpu",
				 .option = "--cpus",
				 .v2_files = { "cpu.max" },
				 .v1_files = { "cpu.cfs_period_us", "cpu.cfs_quota_us" } };
	struct ctl_limit high = { .ctl = "memory",
				  .option = "--memory-high",
				  .v2_files = { "memory.high" } };
	struct ctl_limit pids = { .ctl = "pids",
				  .option = "--pids",
				  .v2_files = { "pids.max" },
				  .v1_files = { "pids.max" } };
	char swap[PATH_MAX + 32];
	int e = 0;

	memset(lc, 0, sizeof(*lc));
	err[0] = '\0';
	if (l->memory) {
		snprintf(mem.v2_values[0], sizeof(mem.v2_values[0]), "%llu",
			 (unsigned long long)l->memory);
		memcpy(mem.v1_values[0], mem.v2_values[0], sizeof(mem.v1_values[0]));
		e = apply_one(&mem, v2_mount, root, name, lc, err, errsz);
		/* v2: the limit is of memory, not memory and swap */
		snprintf(swap, sizeof(swap), "%s/%s/memory.swap.max", root, name);
		if (!e && access(swap, F_OK) == 0)
			write_file(swap, "0");
	}
	if (!e && l->memory_high) {
		snprintf(high.v2_values[0], sizeof(high.v2_values[0]), "%llu",
			 (unsigned long long)l->memory_high);
		e = apply_one(&high, v2_mount, root, name, lc, err, errsz);
	}
	if (!e && l->cpu_milli) {
		unsigned int quota = l->cpu_milli * (CPU_PERIOD_US / 1000);

		/* v2 "QUOTA PERIOD"; v1 the period first, then the quota */
		snprintf(cpu.v2_values[0], sizeof(cpu.v2_values[0]), "%u %u", quota, CPU_PERIOD_US);
		snprintf(cpu.v1_values[0], sizeof(cpu.v1_values[0]), "%u", CPU_PERIOD_US);
		snprintf(cpu.v1_values[1], sizeof(cpu.v1_values[1]), "%u", quota);
		e = apply_one(&cpu, v2_mount, root, name, lc, err, errsz);
	}
	if (!e && l->pids) {
		snprintf(pids.v2_values[0], sizeof(pids.v2_values[0]), "%u", l->pids);
		memcpy(pids.v1_values[0], pids.v2_values[0], sizeof(pids.v1_values[0]));
		e = apply_one(&pids, v2_mount, root, name, lc, err, errsz);
	}
	if (e)
		limits__remove(lc);
	return e;
}

int limits__v2_set(const struct limits *l, const char *dir, char *err, size_t errsz)
{
	char value[48];
	struct {
		const char *file;
		uint64_t v;
	} want[] = {
		{ "memory.max", l->memory },
		{ "memory.high", l->memory_high },
		{ "cpu.max", l->cpu_milli },
		{ "pids.max", l->pids },
	};
	int e, changed = 0;

	err[0] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		if (!want[i].v)
			continue;
		if (want[i].file[0] == 'c')
			snprintf(value, sizeof(value), "%llu %u",
				 (unsigned long long)want[i].v * (CPU_PERIOD_US / 1000),
				 CPU_PERIOD_US);
		else
			snprintf(value, sizeof(value), "%llu", (unsigned long long)want[i].v);
		e = v2_lower(dir, want[i].file, value, err, errsz);
		if (e < 0)
			return e;
		changed += e;
	}
	return changed;
}

/* The v1 cgroup (relative to its hierarchy's root) of pid in the hierarchy holding ctl, from
 * /proc/PID/cgroup ("N:cpu,cpuacct:/path"): 0, or -ENOENT
 */
static int v1_path_of(pid_t pid, const char *ctl, char *out, size_t size)
{
	char file[64], text[4096];
	size_t n = strlen(ctl);

	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
	if (read_file(file, text, sizeof(text)) <= 0)
		return -ENOENT;
	for (char *line = text; line && *line;) {
		char *next = strchr(line, '\n'), *c1 = strchr(line, ':'), *c2;

		if (next)
			*next++ = '\0';
		c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		for (char *p = c1 ? c1 + 1 : NULL; p && c2 && p < c2; p += strcspn(p, ",:") + 1) {
			if (!strncmp(p, ctl, n) && (p[n] == ',' || p[n] == ':')) {
				str_copy(out, size, c2 + 1);
				return 0;
			}
		}
		line = next;
	}
	return -ENOENT;
}

/* v1 cpu: period then quota, unless the cgroup's quota/period is as tight already */
static int v1_cpu_lower(const char *dir, uint32_t milli, char *err, size_t errsz)
{
	char file[PATH_MAX + 32], text[32], value[32];
	uint64_t quota = (uint64_t)milli * (CPU_PERIOD_US / 1000);
	long long hq;
	unsigned long long hp;
	int e;

	snprintf(file, sizeof(file), "%s/cpu.cfs_quota_us", dir);
	if (read_file(file, text, sizeof(text)) > 0 && sscanf(text, "%lld", &hq) == 1 && hq > 0) {
		snprintf(file, sizeof(file), "%s/cpu.cfs_period_us", dir);
		if (read_file(file, text, sizeof(text)) > 0 && sscanf(text, "%llu", &hp) == 1 &&
		    hp && (unsigned __int128)hq * CPU_PERIOD_US <= (unsigned __int128)quota * hp)
			return 0;
	}
	snprintf(value, sizeof(value), "%u", CPU_PERIOD_US);
	e = write_in(dir, "cpu.cfs_period_us", value, err, errsz);
	if (e)
		return e;
	snprintf(value, sizeof(value), "%llu", (unsigned long long)quota);
	e = write_in(dir, "cpu.cfs_quota_us", value, err, errsz);
	return e ? e : 1;
}

#define V1_DIRS_MAX 8 /* distinct v1 cgroups of one sandbox's processes */

/* Is every process of the v1 cgroup v1 in the v2 cgroup v2rel (relative to the v2 mount) or
 * below it? A limit on a v1 cgroup the sandbox shares with others (a runtime that left its
 * processes in its own service's cgroup) would limit those too.
 */
static bool v1_only_of(const char *v1, const char *v2rel)
{
	char file[PATH_MAX + 16], procs[16384], cg[64], text[4096];
	size_t n = strlen(v2rel);

	snprintf(file, sizeof(file), "%s/cgroup.procs", v1);
	if (read_file(file, procs, sizeof(procs)) < 0)
		return false;
	for (char *p = procs; *p; p += strcspn(p, "\n"), p += *p == '\n') {
		const char *v2line;

		snprintf(cg, sizeof(cg), "/proc/%d/cgroup", atoi(p));
		if (read_file(cg, text, sizeof(text)) <= 0)
			continue; /* gone */
		v2line = strstr(text, "\n0::");
		v2line = !strncmp(text, "0::", 3) ? text + 3 : v2line ? v2line + 4 : NULL;
		if (!v2line || strncmp(v2line, v2rel, n) || (v2line[n] != '/' && v2line[n] != '\n'))
			return false;
	}
	return true;
}

int limits__v1_set(const struct limits *l, const char *v2_mount, const char *dir, char *err,
		   size_t errsz)
{
	struct {
		const char *ctl, *file;
		uint64_t v;
	} want[] = {
		{ "memory", "memory.limit_in_bytes", l->memory },
		{ "cpu", "cpu.cfs_quota_us", l->cpu_milli },
		{ "pids", "pids.max", l->pids },
	};
	char file[PATH_MAX + 32], procs[16384], mnt[PATH_MAX], rel[PATH_MAX], v1[PATH_MAX];
	size_t mlen = strlen(v2_mount);
	const char *v2rel = strncmp(dir, v2_mount, mlen) ? NULL : dir + mlen;
	int changed = 0, e, in_root = 0, shared = 0;

	err[0] = '\0';
	if (!v2rel || v2rel[0] != '/')
		return -EINVAL;
	snprintf(file, sizeof(file), "%s/cgroup.procs", dir);
	if (read_file(file, procs, sizeof(procs)) < 0)
		return 0; /* gone */
	for (size_t i = 0; i < ARRAY_SIZE(want); i++) {
		char done[V1_DIRS_MAX][PATH_MAX];
		size_t ndone = 0;

		snprintf(file, sizeof(file), "%s/cgroup.controllers", v2_mount);
		if (!want[i].v || file_has_word(file, want[i].ctl) ||
		    cgroup__v1_mount(want[i].ctl, strlen(want[i].ctl), mnt, sizeof(mnt)))
			continue;
		for (char *p = procs; *p; p += strcspn(p, "\n"), p += *p == '\n') {
			pid_t pid = (pid_t)atoi(p);
			bool seen = false;

			if (pid <= 0 || v1_path_of(pid, want[i].ctl, rel, sizeof(rel)))
				continue;
			if (!strcmp(rel, "/")) {
				in_root++;
				continue;
			}
			for (size_t k = 0; k < ndone && !seen; k++)
				seen = !strcmp(done[k], rel);
			if (seen || ndone == V1_DIRS_MAX)
				continue;
			str_copy(done[ndone++], sizeof(done[0]), rel);
			if ((size_t)snprintf(v1, sizeof(v1), "%s%s", mnt, rel) >= sizeof(v1))
				continue;
			if (!v1_only_of(v1, v2rel)) {
				shared++;
				continue;
			}
			if (want[i].ctl[0] == 'c') {
				e = v1_cpu_lower(v1, (uint32_t)want[i].v, err, errsz);
			} else {
				char value[32];

				snprintf(value, sizeof(value), "%llu",
					 (unsigned long long)want[i].v);
				e = v2_lower(v1, want[i].file, value, err, errsz);
			}
			if (e < 0)
				return e;
			changed += e;
		}
	}
	if (in_root || shared) {
		snprintf(
			err, errsz,
			"%d of its processes are in a v1 hierarchy's root cgroup and %d v1 cgroups "
			"of its hold processes of others: no limit is set there (it would take "
			"moving them, or limit others)",
			in_root, shared);
		return -EPERM;
	}
	return changed;
}

void limits__split(const struct limits *l, const char *v2_mount, struct limits *v2,
		   struct limits *v1)
{
	char file[PATH_MAX + 32];

	snprintf(file, sizeof(file), "%s/cgroup.controllers", v2_mount);
	memset(v2, 0, sizeof(*v2));
	*v1 = *v2;
	if (file_has_word(file, "memory"))
		v2->memory = l->memory;
	else
		v1->memory = l->memory;
	v2->memory_high = l->memory_high;
	if (file_has_word(file, "cpu"))
		v2->cpu_milli = l->cpu_milli;
	else
		v1->cpu_milli = l->cpu_milli;
	if (file_has_word(file, "pids"))
		v2->pids = l->pids;
	else
		v1->pids = l->pids;
	v2->timeout_ms = l->timeout_ms;
}

int limits__v2_check(const struct limits *l, const char *v2_mount, const char *root, char *err,
		     size_t errsz)
{
	const char *ctl[] = { l->memory ? "memory" : NULL, l->memory_high ? "memory" : NULL,
			      l->cpu_milli ? "cpu" : NULL, l->pids ? "pids" : NULL };
	const char *opt[] = { "memory", "memory-high", "cpus", "pids" };
	char file[PATH_MAX + 32];
	int e;

	for (size_t i = 0; i < ARRAY_SIZE(ctl); i++) {
		if (!ctl[i])
			continue;
		snprintf(file, sizeof(file), "%s/cgroup.controllers", v2_mount);
		if (!file_has_word(file, ctl[i])) {
			char mnt[PATH_MAX];

			/* a hybrid host's v1 hierarchy: the sandboxes' processes' v1 cgroups */
			if (strcmp(opt[i], "memory-high") &&
			    !cgroup__v1_mount(ctl[i], strlen(ctl[i]), mnt, sizeof(mnt)))
				continue;
			snprintf(
				err, errsz,
				"limit %s: the %s controller is not offered by cgroup v2 here (%s)%s",
				opt[i], ctl[i], file,
				strcmp(opt[i], "memory-high")
					? " nor mounted as a v1 hierarchy"
					: "; memory.high is cgroup v2's (a hybrid host keeps memory "
					  "in v1)");
			return -ENOTSUP;
		}
		e = v2_enable(v2_mount, root, ctl[i], err, errsz);
		if (e)
			return e;
	}
	return 0;
}

void limits__freeze(const char *dir)
{
	char path[PATH_MAX + 32];

	snprintf(path, sizeof(path), "%s/cgroup.freeze", dir);
	write_file(path, "1");
}

void limits__kill(const char *dir)
{
	char path[PATH_MAX + 32], pids[4096];

	snprintf(path, sizeof(path), "%s/cgroup.kill", dir);
	if (write_file(path, "1") == 0)
		return;
	snprintf(path, sizeof(path), "%s/cgroup.procs", dir);
	for (int round = 0; round < 100 && read_file(path, pids, sizeof(pids)) > 0 && pids[0];
	     round++) {
		for (char *p = pids; *p; p += strcspn(p, "\n"), p += *p == '\n')
			kill((pid_t)atoi(p), SIGKILL);
		usleep(10000);
	}
}

int limits__join(const struct limit_cgroups *lc, pid_t pid)
{
	for (unsigned int i = 0; i < lc->nv1; i++) {
		char path[PATH_MAX + 16], num[16];
		int e;

		snprintf(path, sizeof(path), "%s/cgroup.procs", lc->v1[i]);
		snprintf(num, sizeof(num), "%d", (int)pid);
		e = write_file(path, num);
		if (e)
			return e;
	}
	return 0;
}

int limits__remove(const struct limit_cgroups *lc)
{
	int first = 0;

	for (unsigned int i = 0; i < lc->nv1; i++) {
		int e = 0;

		/* a process leaving the cgroup is gone from it a moment after its exit */
		for (int t = 0; t < 100 && rmdir(lc->v1[i]) && (e = -errno) == -EBUSY; t++)
			usleep(10000);
		if (access(lc->v1[i], F_OK) && errno == ENOENT)
			e = 0;
		if (e && !first)
			first = e;
	}
	return first;
}

/* the value after "key " in a cpu.stat */
static int stat_value(const char *text, const char *key, uint64_t *out)
{
	size_t n = strlen(key);

	for (const char *p = text; p && *p; p = strchr(p, '\n'), p = p ? p + 1 : NULL) {
		if (!strncmp(p, key, n) && p[n] == ' ') {
			char *end;

			errno = 0;
			*out = strtoull(p + n + 1, &end, 10);
			return errno || end == p + n + 1 ? -EBADMSG : 0;
		}
	}
	return -ENOENT;
}

int limits__file_value(const char *dir, const char *file, const char *key, uint64_t *out)
{
	char path[PATH_MAX + 64], text[1024];

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	if (read_file(path, text, sizeof(text)) <= 0)
		return -ENOENT;
	return stat_value(text, key, out);
}

bool limits__v2_offers(const char *v2_mount, const char *ctl)
{
	char file[PATH_MAX + 32];

	snprintf(file, sizeof(file), "%s/cgroup.controllers", v2_mount);
	return file_has_word(file, ctl);
}

int limits__cpu_stat(const struct limit_cgroups *lc, uint64_t *periods, uint64_t *throttled,
		     uint64_t *throttled_ns)
{
	char buf[1024];
	uint64_t t = 0;
	int e;

	if (!lc->cpu_stat[0])
		return -ENOENT;
	if (read_file(lc->cpu_stat, buf, sizeof(buf)) <= 0)
		return -EIO;
	e = stat_value(buf, "nr_periods", periods);
	if (!e)
		e = stat_value(buf, "nr_throttled", throttled);
	if (!e)
		e = stat_value(buf, lc->cpu_v1 ? "throttled_time" : "throttled_usec", &t);
	*throttled_ns = lc->cpu_v1 ? t : t * 1000;
	return e;
}
