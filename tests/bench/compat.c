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
 * medians of rounds (noisy on a shared machine; bpf_stats is the exact figure). Run as root:
 *   egret_bench_compat [--calls N] [--rounds R]
 */
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

static const char *const progs[] = { "egret_csys", "egret_cxsys", "egret_acsys", "egret_acxsys" };
#define NPROGS (sizeof(progs) / sizeof(progs[0]))

struct prog_stats {
	uint64_t ns, cnt;
	bool found;
};

static void prog_stats(struct egret_instance *e, const char *name, struct prog_stats *s)
{
	char pin[PATH_MAX * 2];
	struct bpf_link_info li = {};
	struct bpf_prog_info pi = {};
	__u32 len = sizeof(li), plen = sizeof(pi);
	int fd, pfd = -1;

	memset(s, 0, sizeof(*s));
	snprintf(pin, sizeof(pin), "%s/links/%s", e->state_dir, name);
	fd = bpf_obj_get(pin);
	if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &li, &len) == 0)
		pfd = bpf_prog_get_fd_by_id(li.prog_id);
	if (pfd >= 0 && bpf_obj_get_info_by_fd(pfd, &pi, &plen) == 0) {
		s->ns = pi.run_time_ns;
		s->cnt = pi.run_cnt;
		s->found = true;
	}
	if (pfd >= 0)
		close(pfd);
	if (fd >= 0)
		close(fd);
}

/* ns per getppid() over n calls */
static double loop_ns(long n)
{
	struct timespec a, b;

	clock_gettime(CLOCK_MONOTONIC, &a);
	for (long i = 0; i < n; i++)
		syscall(SYS_getppid);
	clock_gettime(CLOCK_MONOTONIC, &b);
	return ((double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec)) / (double)n;
}

/* the median over rounds of ns per getppid() */
static double loop_median(long calls, int rounds)
{
	double v[MAX_ROUNDS];

	for (int r = 0; r < rounds; r++)
		v[r] = loop_ns(calls);
	return bench_median(v, rounds);
}

/* mode "none": egretd without egret_csys (the compat gap accepted), the rest of egret's
 * syscall tracepoints on, which already put every syscall on the kernel's slow path
 */
static void measure(const char *mode, long calls, int rounds, double base)
{
	const char *compat[] = { "--compat", mode, NULL };
	const char *none[] = { "--without-kernel-feature", "sys_enter_btf", "--accept-kernel-gap",
			       "compat", NULL };
	const char *const *extra = strcmp(mode, "none") ? compat : none;
	struct prog_stats s0[NPROGS], s1[NPROGS];
	char stats_before[16] = "0";
	struct egret_instance e;
	double with;

	if (harness_init(&e) < 0 || harness_start(&e, extra)) {
		fprintf(stderr, "bench: egretd --compat %s did not start:\n%s\n", mode,
			harness_log(&e));
		harness_cleanup(&e);
		exit(1);
	}
	with = loop_median(calls, rounds);
	read_file("/proc/sys/kernel/bpf_stats_enabled", stats_before, sizeof(stats_before));
	write_file("/proc/sys/kernel/bpf_stats_enabled", "1");
	for (size_t i = 0; i < NPROGS; i++)
		prog_stats(&e, progs[i], &s0[i]);
	loop_ns(calls);
	for (size_t i = 0; i < NPROGS; i++)
		prog_stats(&e, progs[i], &s1[i]);
	stats_before[1] = '\0';
	write_file("/proc/sys/kernel/bpf_stats_enabled", stats_before);
	printf("--compat %-6s getppid %.1f ns (no egretd: %.1f ns)", mode, with, base);
	for (size_t i = 0; i < NPROGS; i++) {
		uint64_t cnt = s1[i].cnt - s0[i].cnt;

		if (!s0[i].found)
			continue;
		printf("; %s %.1f ns a call over %llu calls", progs[i],
		       cnt ? (double)(s1[i].ns - s0[i].ns) / (double)cnt : 0.0,
		       (unsigned long long)cnt);
	}
	printf("\n");
	fflush(stdout);
	harness_cleanup(&e);
}

int main(int argc, char **argv)
{
	double base;
	long calls = 2000000;
	int rounds = 5;

	for (int i = 1; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--calls"))
			calls = atol(argv[i + 1]);
		else if (!strcmp(argv[i], "--rounds"))
			rounds = atoi(argv[i + 1]);
	}
	if (calls < 1000 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "usage: egret_bench_compat [--calls N>=1000] [--rounds 1-32]\n");
		return 2;
	}
	if (geteuid()) {
		fprintf(stderr, "egret_bench_compat: run as root\n");
		return 1;
	}
	harness_sweep_stale();
	bench_pin(0, 0);
	base = loop_median(calls, rounds);
	measure("none", calls, rounds, base);
	measure("refuse", calls, rounds, base);
	measure("judge", calls, rounds, base);
	return 0;
}
