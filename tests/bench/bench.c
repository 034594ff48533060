/* What the benchmarks share; see bench.h. */
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "util.h"

void bench_pin(pid_t pid, int cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	sched_setaffinity(pid, sizeof(set), &set);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(const double *v, int n)
{
	double tmp[256];

	if (n <= 0 || n > 256)
		return 0;
	memcpy(tmp, v, n * sizeof(*v));
	qsort(tmp, n, sizeof(*tmp), cmp_double);
	return n % 2 ? tmp[n / 2] : (tmp[n / 2 - 1] + tmp[n / 2]) / 2;
}

double bench_cpu_seconds(pid_t pid)
{
	char path[64], buf[1024], *p;
	unsigned long ut = 0, st = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (read_file(path, buf, sizeof(buf)) < 0 || !(p = strrchr(buf, ')')))
		return 0;
	/* fields 14 and 15, counted from after the command name */
	if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) != 2)
		return 0;
	return (double)(ut + st) / sysconf(_SC_CLK_TCK);
}

long bench_rss_kb(pid_t pid)
{
	char path[64], buf[4096], *p;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (read_file(path, buf, sizeof(buf)) < 0 || !(p = strstr(buf, "VmRSS:")))
		return -1;
	return strtol(p + 6, NULL, 10);
}
