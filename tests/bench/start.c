/* egret_bench_start: what an egretd start costs, most of it the kernel's verifier checking
 * egret's programs. Each round starts egretd on a private root (the test harness's instance,
 * never egret's defaults) and, once it is ready: the wall time from its spawn, its CPU time (the
 * verifier runs in egretd's bpf(2) calls: system time), and each of its programs' verified
 * instructions (bpf_prog_info.verified_insns, 5.16: how much work the verifier did, the same on
 * every run of one kernel, unlike the times), read through the program descriptors egretd holds.
 * Prints each round, the medians, and the programs that cost most. The times are those of this
 * machine (an emulated CPU takes some 30 times longer); the instruction counts compare across
 * machines. Run as root:
 *   egret_bench_start [--rounds R] [--top N]
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bench.h"
#include "harness.h"
#include "util.h"

#define MAX_ROUNDS 16
#define MAX_PROGS  256

struct prog {
	__u32 id, insns;
	char name[BPF_OBJ_NAME_LEN];
};

static int by_insns(const void *a, const void *b)
{
	const struct prog *x = a, *y = b;

	return x->insns < y->insns ? 1 : x->insns > y->insns ? -1 : 0;
}

/* the programs whose descriptors pid holds (its /proc fdinfo names each prog_id), once each */
static int programs_of(pid_t pid, struct prog *out, int max)
{
	char dir[64], path[PATH_MAX], buf[4096];
	struct dirent *de;
	int n = 0;
	DIR *d;

	snprintf(dir, sizeof(dir), "/proc/%d/fdinfo", (int)pid);
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)) && n < max) {
		const char *p;
		__u32 id;
		bool seen = false;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (read_file(path, buf, sizeof(buf)) < 0 || !(p = strstr(buf, "prog_id:")))
			continue;
		id = (__u32)strtoul(p + 8, NULL, 10);
		for (int i = 0; i < n && !seen; i++)
			seen = out[i].id == id;
		if (!seen && id)
			out[n++].id = id;
	}
	closedir(d);
	for (int i = 0; i < n; i++) {
		struct bpf_prog_info info = {};
		__u32 len = sizeof(info);
		int fd = bpf_prog_get_fd_by_id(out[i].id);

		out[i].insns = 0;
		snprintf(out[i].name, sizeof(out[i].name), "?");
		if (fd < 0)
			continue;
		if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0) {
			out[i].insns = info.verified_insns;
			snprintf(out[i].name, sizeof(out[i].name), "%s", info.name);
		}
		close(fd);
	}
	return n;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	static struct prog progs[MAX_PROGS];
	double wall[MAX_ROUNDS], cpu[MAX_ROUNDS], insns[MAX_ROUNDS];
	int rounds = 5, top = 10, n = 0;
	static const char usage[] = "usage: egret_bench_start [--rounds 1-16] [--top N]\n";
	const struct bench_opt opts[] = {
		{ "--rounds", 'i', &rounds },
		{ "--top", 'i', &top },
		{},
	};

	bench_args(argc, argv, opts, usage);
	if (rounds < 1 || rounds > MAX_ROUNDS || top < 0) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (geteuid()) {
		fprintf(stderr, "egret_bench_start: run as root\n");
		return 1;
	}
	harness_sweep_stale();
	for (int r = 0; r < rounds; r++) {
		struct egret_instance e;
		double t0 = now_s();
		__u64 sum = 0;

		if (harness_init(&e) < 0 || harness_start(&e, NULL)) {
			fprintf(stderr, "egret_bench_start: egretd did not start:\n%s\n",
				harness_log(&e));
			harness_cleanup(&e);
			return 1;
		}
		wall[r] = now_s() - t0;
		cpu[r] = bench_cpu_seconds(e.egretd);
		n = programs_of(e.egretd, progs, MAX_PROGS);
		harness_cleanup(&e);
		if (n <= 0) {
			fprintf(stderr,
				"egret_bench_start: no program found in egretd's descriptors "
				"(%s)\n",
				n < 0 ? strerror(-n) : "none");
			return 1;
		}
		for (int i = 0; i < n; i++)
			sum += progs[i].insns;
		insns[r] = (double)sum;
		printf("round %d: ready in %.2f s, egretd CPU %.2f s, %d programs, %llu instructions "
		       "verified\n",
		       r + 1, wall[r], cpu[r], n, (unsigned long long)sum);
		fflush(stdout);
	}
	printf("median of %d: ready in %.2f s, egretd CPU %.2f s, %.0f instructions verified\n",
	       rounds, bench_median(wall, rounds), bench_median(cpu, rounds),
	       bench_median(insns, rounds));
	qsort(progs, (size_t)n, sizeof(progs[0]), by_insns);
	for (int i = 0; i < n && i < top; i++)
		printf("  %-16s %8u instructions verified\n", progs[i].name, progs[i].insns);
	return 0;
}
