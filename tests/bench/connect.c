/* egret_bench_connect: what egress enforcement costs a sandbox's TCP connects.
 *
 * TCP connect + close to a listener on 127.0.0.1, in a network namespace of the bench's own, from
 * a client pinned to CPU 0 (the server to CPU 1), in five places measured in the same run:
 *   baseline       a cgroup with no firewall
 *   egret-10       a sandbox of an egretd with 10 rules
 *   egret-100k     a sandbox of an egretd with 100,000 rules
 *   nft-10         a cgroup matched by nftables (socket cgroupv2 + an interval set of 10)
 *   nft-100k       the same with 100,000 set elements
 * Rounds are interleaved and each configuration's median rate is printed as a ratio to the
 * baseline's (these machines differ 10-15% between identical runs, so only ratios from one run
 * mean anything). Then, with kernel.bpf_stats_enabled for a pass per round (the median of each
 * figure printed), the kernel time egret's programs add per connect, which depends far less on
 * the noise (a vCPU descheduled inside a program counts its wait: hence the passes). Run as
 * root:
 *   egret_bench_connect [--rounds N] [--connects N]
 */
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <netinet/in.h>

#include "bench.h"
#include "cgroup.h"
#include "harness.h"
#include "util.h"

#define PORT	9000
#define CONFIGS 5

struct config {
	const char *name;
	char cgroup[PATH_MAX]; /* the client's cgroup */
	double rates[64];
};

static struct config configs[CONFIGS] = {
	{ .name = "baseline" }, { .name = "egret-10" }, { .name = "egret-100k" },
	{ .name = "nft-10" },	{ .name = "nft-100k" },
};
static struct egret_instance inst10, inst100k;
static char nft_mounts[2][PATH_MAX];
static char base_cgroup[PATH_MAX];

static pid_t start_server(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	int one = 1, fd = socket(AF_INET, SOCK_STREAM, 0);
	pid_t pid;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 4096)) {
		perror("bench: listen");
		exit(1);
	}
	pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bench_pin(0, 1);
		for (;;) {
			int c = accept(fd, NULL, NULL);

			if (c >= 0)
				close(c);
		}
	}
	close(fd);
	return pid;
}

/* In a child in cgroup: n connects; the elapsed ns through the pipe. */
static double measure(const char *cgroup, int n)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_port = htons(PORT),
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	uint64_t ns = 0;
	int pfd[2];
	pid_t pid;

	if (pipe(pfd))
		return 0;
	pid = fork();
	if (pid == 0) {
		struct linger lg = { .l_onoff = 1, .l_linger = 0 };
		uint64_t t0;

		bench_pin(0, 0);
		if (cgroup__join(cgroup, getpid()))
			_exit(1);
		t0 = now_ns(CLOCK_MONOTONIC);
		for (int i = 0; i < n; i++) {
			int fd = socket(AF_INET, SOCK_STREAM, 0);

			if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
				fprintf(stderr, "bench: connect from %s: %s\n", cgroup,
					strerror(errno));
				_exit(1);
			}
			/* reset instead of TIME_WAIT: the ports must not run out */
			setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
			close(fd);
		}
		ns = now_ns(CLOCK_MONOTONIC) - t0;
		if (write(pfd[1], &ns, sizeof(ns)) != sizeof(ns))
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	if (read(pfd[0], &ns, sizeof(ns)) != sizeof(ns))
		ns = 0;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	return ns ? n / (ns / 1e9) : 0;
}

static void write_policy(struct egret_instance *e, int nrules)
{
	FILE *f = fopen(e->policy_path, "w");

	fprintf(f, "mode enforce\nallow 127.0.0.1 tcp/%d\n", PORT);
	for (int i = 0; i < nrules - 1; i++)
		fprintf(f, "allow 198.%d.%d.%d tcp/443\n", 18 + (i >> 16), (i >> 8) & 0xff,
			i & 0xff);
	fclose(f);
}

static void start_egret(struct egret_instance *e, int nrules, struct config *c)
{
	if (harness_init(e) < 0) {
		fprintf(stderr, "bench: harness_init failed\n");
		exit(1);
	}
	write_policy(e, nrules);
	if (harness_start(e, NULL)) {
		fprintf(stderr, "bench: egretd did not start:\n%s\n", harness_log(e));
		exit(1);
	}
	snprintf(c->cgroup, sizeof(c->cgroup), "%s/bench", e->cgroup_root);
	mkdir(c->cgroup, 0755);
}

/* nftables matches cgroups by path under /sys/fs/cgroup; on a hybrid host the v2 cgroup must be
 * bind-mounted there for `socket cgroupv2` to find it.
 */
static void start_nft(int idx, int nrules, struct config *c, const char *prefix)
{
	char name[64], path[PATH_MAX], file[PATH_MAX], mount_root[PATH_MAX];
	unsigned int level;
	FILE *f;

	cgroup__find_v2_mount(mount_root, sizeof(mount_root));
	snprintf(name, sizeof(name), "%snft%d", prefix, idx);
	snprintf(c->cgroup, sizeof(c->cgroup), "%s/%s", mount_root, name);
	mkdir(c->cgroup, 0755);
	cgroup__level(mount_root, c->cgroup, &level);
	snprintf(nft_mounts[idx], sizeof(nft_mounts[idx]), "/sys/fs/cgroup/%s", name);
	if (strcmp(mount_root, "/sys/fs/cgroup")) {
		mkdir(nft_mounts[idx], 0755);
		if (mount(c->cgroup, nft_mounts[idx], NULL, MS_BIND, NULL))
			perror("bench: bind mount for nft");
	}
	snprintf(file, sizeof(file), "/tmp/%s.nft", name);
	f = fopen(file, "w");
	fprintf(f,
		"table inet %s {\n set allowed {\n  type ipv4_addr . inet_service\n"
		"  flags interval\n  elements = { 127.0.0.1 . %d",
		name, PORT);
	for (int i = 0; i < nrules - 1; i++)
		fprintf(f, ",\n   198.%d.%d.%d . 443", 18 + (i >> 16), (i >> 8) & 0xff, i & 0xff);
	fprintf(f,
		" }\n }\n chain out {\n  type filter hook output priority 0; policy accept;\n"
		"  socket cgroupv2 level %u \"%s\" meta l4proto tcp ip daddr . tcp dport != "
		"@allowed drop\n }\n}\n",
		level, name);
	fclose(f);
	snprintf(path, sizeof(path), "nft -f %s", file);
	if (netns_run(path)) {
		fprintf(stderr, "bench: nft ruleset did not load\n");
		exit(1);
	}
	unlink(file);
}

/* the connect path, and the flow record at close (audit) */
#define NPROGS 5
static const char *const progs[NPROGS] = { "egret_sock_new", "egret_connect4", "egret_egress",
					   "egret_sock_end", "egret_tcp_end" };

/* run_time_ns and run_cnt of an instance's cgroup programs on the connect path */
static void bpf_runtime(struct egret_instance *e, struct bench_prog_stats s[NPROGS])
{
	for (size_t i = 0; i < NPROGS; i++)
		bench_link_stats(e->state_dir, progs[i], &s[i]);
}

static void cleanup(void)
{
	harness_cleanup(&inst10);
	harness_cleanup(&inst100k);
	for (int i = 0; i < 2; i++) {
		if (nft_mounts[i][0] && !umount2(nft_mounts[i], MNT_DETACH))
			rmdir(nft_mounts[i]);
	}
	for (int i = 3; i < CONFIGS; i++)
		rmdir(configs[i].cgroup);
	rmdir(base_cgroup);
}

int main(int argc, char **argv)
{
	int rounds = 7, connects = 20000;
	char prefix[64], mount_root[PATH_MAX];
	struct bench_prog_stats s0[2][NPROGS], s1[2][NPROGS];
	struct egret_instance *insts[2] = { &inst10, &inst100k };
	struct bench_prog_stats nop0, nop1;
	struct bench_nop nop;
	/* per egretd, per pass: each program's ns and runs per connect, their total, net of
	 * bpf_stats' own cost, and that cost a run
	 */
	static struct {
		double ns[NPROGS][64], runs[NPROGS][64], total[64], net[64], floor[64];
	} stats[2];
	double base, floor;
	int err;
	pid_t server;
	static const char usage[] =
		"usage: egret_bench_connect [--rounds 1-64] [--connects N>=100]\n";
	const struct bench_opt opts[] = {
		{ "--rounds", 'i', &rounds },
		{ "--connects", 'i', &connects },
		{},
	};

	bench_args(argc, argv, opts, usage);
	if (rounds < 1 || rounds > 64 || connects < 100) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (geteuid()) {
		fprintf(stderr, "egret_bench_connect: run as root\n");
		return 1;
	}
	harness_sweep_stale();
	if (netns_new()) {
		fprintf(stderr, "bench: cannot create a network namespace\n");
		return 1;
	}
	server = start_server();
	cgroup__find_v2_mount(mount_root, sizeof(mount_root));
	snprintf(prefix, sizeof(prefix), HARNESS_PREFIX "%d-", getpid());
	snprintf(base_cgroup, sizeof(base_cgroup), "%s/%sbase", mount_root, prefix);
	mkdir(base_cgroup, 0755);
	snprintf(configs[0].cgroup, sizeof(configs[0].cgroup), "%s", base_cgroup);
	printf("setting up: egretd with 10 and 100,000 rules, nftables with 10 and 100,000 set "
	       "elements\n");
	fflush(stdout);
	start_egret(&inst10, 10, &configs[1]);
	start_egret(&inst100k, 100000, &configs[2]);
	start_nft(0, 10, &configs[3], prefix);
	start_nft(1, 100000, &configs[4], prefix);
	printf("egretd RSS: %ld KiB with 10 rules, %ld KiB with 100,000 rules\n",
	       bench_rss_kb(inst10.egretd), bench_rss_kb(inst100k.egretd));

	for (int c = 0; c < CONFIGS; c++)
		measure(configs[c].cgroup, connects / 10); /* warm-up, and a connectivity check */
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < CONFIGS; k++) {
			int c = (k + r) % CONFIGS; /* rotate the order every round */

			configs[c].rates[r] = measure(configs[c].cgroup, connects);
		}
		printf("round %d/%d done\n", r + 1, rounds);
		fflush(stdout);
	}
	base = bench_median(configs[0].rates, rounds);
	printf("\nTCP connect+close on loopback, %d connects x %d interleaved rounds, medians:\n",
	       connects, rounds);
	printf("%-12s %12s %10s\n", "config", "connects/s", "vs baseline");
	for (int c = 0; c < CONFIGS; c++) {
		double m = bench_median(configs[c].rates, rounds);

		printf("%-12s %12.0f %10.3f\n", configs[c].name, m, m / base);
	}

	/* kernel time per connect, from bpf_stats (separate passes: stats cost time), a pass per
	 * round and the median of each figure: a vCPU descheduled inside a program counts its wait
	 */
	err = bench_nop_open(&nop);
	if (err)
		fprintf(stderr, "bench: no empty program to measure bpf_stats' own cost: %s\n",
			strerror(-err));
	bench_stats_on();
	for (int r = 0; r < rounds; r++) {
		for (int i = 0; i < 2; i++) {
			double total = 0, runs = 0, nop_ns;

			bench_nop_stats(&nop, &nop0);
			bpf_runtime(insts[i], s0[i]);
			measure(configs[1 + i].cgroup, connects);
			bpf_runtime(insts[i], s1[i]);
			bench_nop_stats(&nop, &nop1);
			nop_ns = nop0.found && nop1.found ? bench_ns_per_run(&nop0, &nop1) : 0;
			for (int p = 0; p < NPROGS; p++) {
				double per = (double)(s1[i][p].ns - s0[i][p].ns) / connects,
				       n = (double)(s1[i][p].cnt - s0[i][p].cnt) / connects;

				stats[i].ns[p][r] = per;
				stats[i].runs[p][r] = n;
				total += per;
				runs += n;
			}
			stats[i].total[r] = total;
			stats[i].net[r] = total - nop_ns * runs;
			stats[i].floor[r] = nop_ns;
		}
	}
	bench_stats_off();
	bench_nop_close(&nop);
	printf("\negret's BPF programs, kernel time per connect (bpf_stats; medians of %d passes of "
	       "%d connects):\n",
	       rounds, connects);
	printf("%-12s", "config");
	for (int p = 0; p < NPROGS; p++)
		printf(" %16s", progs[p]);
	printf(" %10s %8s %10s %8s\n", "total", "of base", "net", "of base");
	for (int i = 0; i < 2; i++) {
		double total = bench_median(stats[i].total, rounds),
		       net = bench_median(stats[i].net, rounds);

		printf("%-12s", configs[1 + i].name);
		for (int p = 0; p < NPROGS; p++)
			printf(" %10.0f ns x%.0f", bench_median(stats[i].ns[p], rounds),
			       bench_median(stats[i].runs[p], rounds));
		printf(" %7.0f ns %7.1f%% %7.0f ns %7.1f%%\n", total, total * base / 1e7, net,
		       net * base / 1e7);
	}
	floor = (bench_median(stats[0].floor, rounds) + bench_median(stats[1].floor, rounds)) / 2;
	printf("baseline connect+close takes %.0f ns; net: without bpf_stats' own clock reads, "
	       "%.0f ns a run (an empty program's)\n",
	       1e9 / base, floor);

	kill(server, SIGKILL);
	waitpid(server, NULL, 0);
	cleanup();
	return 0;
}
