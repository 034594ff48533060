/* egret_bench_compat: what egret_csys (tp_btf/sys_enter, every system call on the host) and, in
 * --compat judge, egret_cxsys, egret_acsys and egret_acxsys (sys_exit, sys_enter, sys_exit)
 * cost a native system call outside every sandbox, which is what every process on the host
 * pays for the compat check.
 *
 * For each mode (and "none": egretd without egret_csys, its other syscall tracepoints on):
 * egretd started on a private root, kernel.bpf_stats_enabled set to 1 (restored
 * afterwards), N getppid() calls on CPU 0, then the programs' run_time_ns / run_cnt over that
 * window (run_cnt counts every syscall on the host meanwhile, so the figure is the average
 * over all of them). Also the wall time per getppid() before egretd starts and with it, as
 * medians of rounds (noisy on a shared machine; bpf_stats is the exact figure). The same for
 * bpf(2) (a look-up in a one-element array, a quarter as many calls): judged by egret_csys's
 * compare in refuse and judge, by its own tracepoint program egret_bpf in "none". Run as root:
 *   egret_bench_compat [--calls N] [--rounds R]
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bench.h"
#include "harness.h"
#include "util.h"

#define MAX_ROUNDS 32

static const char *const progs[] = { "egret_csys", "egret_cxsys", "egret_acsys", "egret_acxsys",
				     "egret_bpf" };
#define NPROGS (sizeof(progs) / sizeof(progs[0]))

static int map_fd = -1; /* a one-element array the bpf(2) loop looks up */

/* ns per getppid(), or per bpf(2) look-up in map_fd, over n calls */
static double loop_ns(long n, bool bpf)
{
	struct timespec a, b;
	__u32 key = 0;
	__u64 val;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++) {
		if (bpf)
			bpf_map_lookup_elem(map_fd, &key, &val);
		else
			syscall(SYS_getppid);
	}
	clock_gettime(CLOCK_MONOTONIC, &b);
	return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
}

/* the median over rounds of ns per call */
static double loop_median(long calls, int rounds, bool bpf)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++)
		v[r] = loop_ns(calls, bpf);
	return bench_median(v, rounds);
}

/* mode "none": egretd without egret_csys (the compat gap accepted), the rest of egret's
 * syscall tracepoints on, which already put every syscall on the kernel's slow path
 */
static void measure(const char *mode, long calls, int rounds, const double base[2])
{
	const char *compat[] = { "--compat", mode, NULL };
	const char *none[] = { "--without-kernel-feature", "sys_enter_btf", "--accept-kernel-gap",
			       "compat", NULL };
	const char *const *extra = strcmp(mode, "none") ? compat : none;
	struct bench_prog_stats s0[NPROGS], s1[NPROGS];
	struct egret_instance e;
	double with, with_bpf;

	if (harness_init(&e) < 0 || harness_start(&e, extra)) {
		fprintf(stderr, "bench: egretd --compat %s did not start:\n%s\n", mode,
			harness_log(&e));
		harness_cleanup(&e);
		exit(1);
	}
	with = loop_median(calls, rounds, false);
	with_bpf = loop_median(calls / 4, rounds, true);
	bench_stats_on();
	for (size_t i = 0; i < NPROGS; i++)
		bench_link_stats(e.state_dir, progs[i], &s0[i]);
	loop_ns(calls, false);
	loop_ns(calls / 4, true);
	for (size_t i = 0; i < NPROGS; i++)
		bench_link_stats(e.state_dir, progs[i], &s1[i]);
	bench_stats_off();
	printf("--compat %-6s getppid %.1f ns (no egretd: %.1f ns), bpf(2) look-up %.1f ns (%.1f ns)",
	       mode, with, base[0], with_bpf, base[1]);
	for (size_t i = 0; i < NPROGS; i++) {
		if (!s0[i].found)
			continue;
		printf("; %s %.1f ns a call over %llu calls", progs[i],
		       bench_ns_per_run(&s0[i], &s1[i]),
		       (unsigned long long)(s1[i].cnt - s0[i].cnt));
	}
	printf("\n");
	fflush(stdout);
	harness_cleanup(&e);
}

int main(int argc, char **argv)
{
	double base[2];
	long calls = 2000000;
	int rounds = 5;
	static const char usage[] = "usage: egret_bench_compat [--calls N>=1000] [--rounds 1-32]\n";
	const struct bench_opt opts[] = {
		{ "--calls", 'l', &calls },
		{ "--rounds", 'i', &rounds },
		{},
	};

	bench_args(argc, argv, opts, usage);
	if (calls < 1000 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (geteuid()) {
		fprintf(stderr, "egret_bench_compat: run as root\n");
		return 1;
	}
	harness_sweep_stale();
	bench_pin(0, 0);
	map_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "bench_lookup", 4, 8, 1, NULL);
	if (map_fd < 0) {
		fprintf(stderr, "egret_bench_compat: bpf_map_create: %s\n", strerror(errno));
		return 1;
	}
	base[0] = loop_median(calls, rounds, false);
	base[1] = loop_median(calls / 4, rounds, true);
	measure("none", calls, rounds, base);
	measure("refuse", calls, rounds, base);
	measure("judge", calls, rounds, base);
	return 0;
}
