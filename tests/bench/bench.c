/* What the benchmarks share; see bench.h. */
#include <errno.h>
#include <limits.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "bench.h"
#include "util.h"

static const char *prog_name(const char *argv0)
{
	const char *slash = strrchr(argv0, '/');

	return slash ? slash + 1 : argv0;
}

/* one value of kind into val: 0, or -1 when text is not one */
static int opt_value(char kind, const char *text, void *val)
{
	char *end;

	errno = 0;
	switch (kind) {
	case 's':
		*(const char **)val = text;
		return 0;
	case 'd':
		*(double *)val = strtod(text, &end);
		break;
	case 'u':
		if (*text == '-')
			return -1;
		*(uint64_t *)val = strtoull(text, &end, 10);
		break;
	default: {
		long v = strtol(text, &end, 10);

		if (kind == 'i' && (v < INT_MIN || v > INT_MAX))
			return -1;
		if (kind == 'i')
			*(int *)val = (int)v;
		else
			*(long *)val = v;
	}
	}
	return errno || end == text || *end ? -1 : 0;
}

void bench_args(int argc, char **argv, const struct bench_opt *opts, const char *usage)
{
	const char *me = prog_name(argv[0]);

	for (int i = 1; i < argc; i++) {
		const struct bench_opt *o = opts;

		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			printf("%s", usage);
			exit(0);
		}
		while (o->name && strcmp(o->name, argv[i]))
			o++;
		if (!o->name) {
			fprintf(stderr, "%s: unknown option '%s'\n%s", me, argv[i], usage);
			exit(2);
		}
		if (o->kind == 'b') {
			*(bool *)o->val = true;
			continue;
		}
		if (i + 1 >= argc) {
			fprintf(stderr, "%s: %s needs a value\n%s", me, o->name, usage);
			exit(2);
		}
		if (opt_value(o->kind, argv[++i], o->val)) {
			fprintf(stderr, "%s: %s %s: not a number\n%s", me, o->name, argv[i], usage);
			exit(2);
		}
	}
}

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

static void prog_fd_stats(int fd, struct bench_prog_stats *s)
{
	struct bpf_prog_info pi = {};
	__u32 len = sizeof(pi);

	memset(s, 0, sizeof(*s));
	if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &pi, &len) == 0) {
		s->ns = pi.run_time_ns;
		s->cnt = pi.run_cnt;
		s->found = true;
	}
}

void bench_prog_stats(uint32_t id, struct bench_prog_stats *s)
{
	int fd = bpf_prog_get_fd_by_id(id);

	prog_fd_stats(fd, s);
	if (fd >= 0)
		close(fd);
}

int bench_nop_open(struct bench_nop *n)
{
	/* r0 = 0; exit */
	const struct bpf_insn nop[] = { { .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0 },
					{ .code = BPF_JMP | BPF_EXIT } };

	n->link = -1;
	n->prog =
		bpf_prog_load(BPF_PROG_TYPE_RAW_TRACEPOINT, "egret_bench_nop", "GPL", nop, 2, NULL);
	if (n->prog < 0)
		return n->prog;
	n->link = bpf_raw_tracepoint_open("sys_enter", n->prog);
	if (n->link < 0) {
		int err = n->link;

		bench_nop_close(n);
		return err;
	}
	return 0;
}

void bench_nop_stats(const struct bench_nop *n, struct bench_prog_stats *s)
{
	prog_fd_stats(n->prog, s);
}

void bench_nop_close(struct bench_nop *n)
{
	if (n->link >= 0)
		close(n->link);
	if (n->prog >= 0)
		close(n->prog);
	n->link = n->prog = -1;
}

void bench_link_stats(const char *state_dir, const char *name, struct bench_prog_stats *s)
{
	char pin[PATH_MAX * 2];
	struct bpf_link_info li = {};
	__u32 len = sizeof(li);
	int fd;

	memset(s, 0, sizeof(*s));
	snprintf(pin, sizeof(pin), "%s/links/%s", state_dir, name);
	fd = bpf_obj_get(pin);
	if (fd >= 0 && bpf_obj_get_info_by_fd(fd, &li, &len) == 0)
		bench_prog_stats(li.prog_id, s);
	if (fd >= 0)
		close(fd);
}

double bench_ns_per_run(const struct bench_prog_stats *a, const struct bench_prog_stats *b)
{
	uint64_t cnt = b->cnt - a->cnt;

	return cnt ? (double)(b->ns - a->ns) / (double)cnt : 0.0;
}

static char stats_was[16] = "0";

void bench_stats_on(void)
{
	read_file("/proc/sys/kernel/bpf_stats_enabled", stats_was, sizeof(stats_was));
	stats_was[1] = '\0';
	write_file("/proc/sys/kernel/bpf_stats_enabled", "1");
}

void bench_stats_off(void)
{
	write_file("/proc/sys/kernel/bpf_stats_enabled", stats_was);
}
