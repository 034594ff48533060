/* What the benchmarks share: CPU pinning, medians, a process's CPU time and memory. */
#ifndef EGRET_BENCH_H
#define EGRET_BENCH_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

/* A command-line option: "--name" and where its value goes. kind: 'i' int, 'l' long, 'u' uint64_t,
 * 'd' double, 's' const char *, 'b' bool (a flag, no value: set true).
 */
struct bench_opt {
	const char *name;
	char kind;
	void *val;
};
/* Parse argv against opts (ended by a zeroed entry). --help or -h prints usage and exits 0; an
 * unknown option, a missing value or one that is not a number says which and exits 2 (a bench
 * is minutes of work: never start one on a misspelt option). Range checks stay with the caller.
 */
void bench_args(int argc, char **argv, const struct bench_opt *opts, const char *usage);
/* a number macro as text, for usage strings */
#define BENCH_STR_(x) #x
#define BENCH_STR(x)  BENCH_STR_(x)

/* Pin pid (0: the caller) to one CPU. */
void bench_pin(pid_t pid, int cpu);
/* The median of n values; v is left as it was. */
double bench_median(const double *v, int n);
/* User + system CPU time of a process and all its threads so far, in seconds. */
double bench_cpu_seconds(pid_t pid);
/* Resident memory of a process, in KiB; -1 when it cannot be read. */
long bench_rss_kb(pid_t pid);

/* A BPF program's run_time_ns and run_cnt (kernel.bpf_stats_enabled counts them). */
struct bench_prog_stats {
	uint64_t ns, cnt;
	bool found;
};
/* The program behind egret's pinned link state_dir/links/NAME. */
void bench_link_stats(const char *state_dir, const char *name, struct bench_prog_stats *s);
/* The program of id. */
void bench_prog_stats(uint32_t id, struct bench_prog_stats *s);
/* ns a run between two readings (0 when it did not run) */
double bench_ns_per_run(const struct bench_prog_stats *a, const struct bench_prog_stats *b);
/* An empty program on the raw sys_enter tracepoint, where it runs at every syscall on the host:
 * what bpf_stats counts for a run that does nothing (its own clock reads), to take from each run
 * of egret's. Open: 0 or -errno; its stats as bench_prog_stats gives them; close when done.
 */
struct bench_nop {
	int prog, link;
};
int bench_nop_open(struct bench_nop *n);
void bench_nop_stats(const struct bench_nop *n, struct bench_prog_stats *s);
void bench_nop_close(struct bench_nop *n);
/* kernel.bpf_stats_enabled on (bench_stats_off puts back what it was). */
void bench_stats_on(void);
void bench_stats_off(void);

#endif /* EGRET_BENCH_H */
