/* What the benchmarks share: CPU pinning, medians, a process's CPU time and memory. */
#ifndef EGRET_BENCH_H
#define EGRET_BENCH_H

#include <stdint.h>
#include <sys/types.h>

/* Pin pid (0: the caller) to one CPU. */
void bench_pin(pid_t pid, int cpu);
/* The median of n values; v is left as it was. */
double bench_median(const double *v, int n);
/* User + system CPU time of a process and all its threads so far, in seconds. */
double bench_cpu_seconds(pid_t pid);
/* Resident memory of a process, in KiB; -1 when it cannot be read. */
long bench_rss_kb(pid_t pid);

#endif /* EGRET_BENCH_H */
