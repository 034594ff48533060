/* egretd watching itself: the times it was not there to drain the kernel's ring (not running
 * between two egretds, or stopped, frozen or starved of CPU while running), and changes made to
 * it from outside that it can see in itself (priority, scheduling policy, oom_score_adj,
 * RLIMIT_NOFILE). A gap is found two ways: an "alive" record in the spool directory, rewritten
 * every second, tells the next egretd when the previous one was last alive and whether it
 * stopped cleanly; and a turn of the event loop that comes much later than it should (the loop
 * wakes every 25 ms) is a gap of the running egretd.
 */
#ifndef EGRET_SELFWATCH_H
#define EGRET_SELFWATCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/resource.h>

#define SELFWATCH_GAP_NS    (2ull * 1000000000ull) /* a loop turn this late is a gap */
#define SELFWATCH_CPU_NS    (100ull * 1000000ull)  /* egretd's CPU time is read this often */
#define SELFWATCH_CAUSE_LEN 320

struct stream;

struct selfwatch_gap {
	uint64_t start_unix_ns; /* when egretd was last seen running */
	uint64_t duration_ns;
	bool rebooted;			 /* between two boots: the kernel's ring is gone too */
	char cause[SELFWATCH_CAUSE_LEN]; /* what happened, for the Loss event's detail */
};

struct selfwatch_limits {
	int nice;
	int policy; /* SCHED_* */
	int oom_score_adj;
	struct rlimit nofile;
};

struct selfwatch {
	struct stream *stream;
	int alive_fd;
	char alive_path[4096];
	char boot_id[40];
	uint64_t last_turn_ns; /* CLOCK_MONOTONIC at the end of the previous loop turn */
	uint64_t last_turn_unix_ns;
	uint64_t last_cpu_ns; /* egretd's CPU time at cpu_read_ns (a system call: read seldom) */
	uint64_t cpu_read_ns; /* CLOCK_MONOTONIC when last_cpu_ns was read */
	struct selfwatch_limits limits;
	bool have_limits;
	bool have_previous; /* an alive record of an earlier egretd was found */
	struct selfwatch_gap downtime;
	uint64_t gaps; /* gaps found while running */
};

/* Read the previous egretd's alive record in spool_dir (the downtime, if any) and start this
 * one's; the baseline of egretd's limits is taken now.
 */
int selfwatch__open(struct selfwatch *w, struct stream *s, const char *spool_dir);
/* The gap between the previous egretd and this one: false when there was none to report. */
bool selfwatch__downtime(const struct selfwatch *w, struct selfwatch_gap *g);
/* Each turn of the event loop: true, with g, when this turn came SELFWATCH_GAP_NS late. */
bool selfwatch__turn(struct selfwatch *w, struct selfwatch_gap *g);
/* Every second: refresh the alive record, report changes to egretd's limits. */
void selfwatch__tick(struct selfwatch *w);
/* A clean stop: the alive record says so, and why. */
void selfwatch__stop(struct selfwatch *w, const char *reason);
void selfwatch__close(struct selfwatch *w);

/* The alive record (tests and fuzzing): format one, parse one (0, or -EINVAL). */
struct selfwatch_record {
	char boot_id[40];
	uint64_t mono_ns, unix_ns;
	int pid;
	bool stopped;
	char stream[40];
	uint64_t seq;
	char reason[64];
};
int selfwatch__format(const struct selfwatch_record *r, char *buf, size_t size);
int selfwatch__parse(const char *buf, struct selfwatch_record *r);
/* The gap a record leaves before now (mono/unix: the clocks now, boot_id: this boot's). */
bool selfwatch__gap_since(const struct selfwatch_record *r, const char *boot_id, uint64_t mono_ns,
			  uint64_t unix_ns, struct selfwatch_gap *g);

#endif /* EGRET_SELFWATCH_H */
