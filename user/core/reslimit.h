/* A sandbox's resource limits (egretctl run --memory, --cpus, --pids, --timeout), set through
 * the cgroup controllers the host has: on cgroup v2 where the v2 root offers the controller
 * (enabled from there down to egret's root, written in the sandbox's own cgroup), else in the
 * v1 hierarchy that holds it (a hybrid host's), in a cgroup <v1 mount>/<root's name>/<sandbox>
 * the sandbox's first process joins before it runs anything. Limit files are root's: the
 * sandbox reads them, and cannot raise them.
 */
#ifndef EGRET_RESLIMIT_H
#define EGRET_RESLIMIT_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct limits {
	uint64_t memory;      /* bytes; 0: none */
	uint64_t memory_high; /* bytes over which the kernel reclaims and throttles (v2 only) */
	uint32_t cpu_milli;   /* thousandths of a CPU; 0: none */
	uint32_t pids;	      /* 0: none */
	uint64_t timeout_ms;  /* wall clock; 0: none */
};

#define LIMITS_V1_MAX 3 /* memory, cpu, pids */

/* Where a sandbox's limits are. */
struct limit_cgroups {
	unsigned int nv1;
	char v1[LIMITS_V1_MAX][PATH_MAX]; /* v1 cgroups made for the sandbox: joined, removed */
	char cpu_stat[PATH_MAX + 16];	  /* cpu.stat of the cgroup holding the CPU limit */
	bool cpu_v1;			  /* its format: v1 (throttled_time ns) or v2 (_usec) */
};

/* "64M", "1G", "1048576" (bytes); at least 4 MiB: 0 or -EINVAL */
int limits__parse_memory(const char *s, uint64_t *out);
/* "0.5", "2", "1.25": thousandths of a CPU, 0.01 to 1024: 0 or -EINVAL */
int limits__parse_cpus(const char *s, uint32_t *milli);
/* "2", "2s", "500ms", "5m", "1h": milliseconds, at least 1: 0 or -EINVAL */
int limits__parse_duration(const char *s, uint64_t *ms);

/* Set l on sandbox name under egret's root cgroup root (a v2 directory under v2_mount), each
 * controller where the host has it; what was made into lc. -errno with err saying which
 * controller and what to do.
 */
int limits__apply(const struct limits *l, const char *v2_mount, const char *root, const char *name,
		  struct limit_cgroups *lc, char *err, size_t errsz);
/* egretd's, for a policy's limits (any sandbox's cgroup, a runtime's too): is each controller
 * l asks for offered by v2 (and enabled from v2_mount down to root, so root's children have
 * it), or mounted as a v1 hierarchy (memory.high: v2 only)? 0, or -errno with err.
 */
int limits__v2_check(const struct limits *l, const char *v2_mount, const char *root, char *err,
		     size_t errsz);
/* l's memory, CPU and pids limits (not the timeout) in the v2 cgroup dir, each only where it
 * is tighter than what the cgroup has (a limit is never raised): how many were written, or
 * -errno with err
 */
int limits__v2_set(const struct limits *l, const char *dir, char *err, size_t errsz);
/* l into the limits cgroup v2 (v2_mount) can hold (its controllers', memory.high, the
 * timeout) and those a hybrid host's v1 hierarchies hold
 */
void limits__split(const struct limits *l, const char *v2_mount, struct limits *v2,
		   struct limits *v1);
/* On a hybrid host, l's memory, CPU and pids limits for those of them cgroup v2 (v2_mount)
 * does not offer: in the v1 cgroups the processes of the v2 cgroup dir are in (where their
 * runtime, or egretctl run, placed them), each only where tighter and only in a v1 cgroup
 * that holds the sandbox's processes alone. How many were written; -EPERM with err when
 * processes are in a v1 hierarchy's root or in a v1 cgroup shared with others (nothing set
 * there); -errno with err.
 */
int limits__v1_set(const struct limits *l, const char *v2_mount, const char *dir, char *err,
		   size_t errsz);
/* the v2 cgroup dir frozen (cgroup.freeze); killed whole (cgroup.kill, 5.14; else each
 * process cgroup.procs lists, until none is left)
 */
void limits__freeze(const char *dir);
void limits__kill(const char *dir);
/* pid into each v1 cgroup of lc: 0 or -errno */
int limits__join(const struct limit_cgroups *lc, pid_t pid);
/* remove the v1 cgroups of lc (empty by now): 0 or the first -errno */
int limits__remove(const struct limit_cgroups *lc);
/* The number after "KEY " in the flat-keyed cgroup file dir/file (cpu.stat, memory.events):
 * 0, -ENOENT (no file, no key) or -EBADMSG
 */
int limits__file_value(const char *dir, const char *file, const char *key, uint64_t *out);
/* Does cgroup v2 (mounted at v2_mount) offer controller ctl (its cgroup.controllers)? */
bool limits__v2_offers(const char *v2_mount, const char *ctl);
/* the CPU limit's scheduler periods, of them throttled, and time throttled (ns): 0 or -errno */
int limits__cpu_stat(const struct limit_cgroups *lc, uint64_t *periods, uint64_t *throttled,
		     uint64_t *throttled_ns);

#endif /* EGRET_RESLIMIT_H */
