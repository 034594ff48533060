/* egret_bench_packet: what judging every packet costs (issue 16): the cgroup egress backstop on
 * each packet of a sandbox's sockets, and the tc program on each packet a sandbox's own device
 * carries.
 *
 * 64-byte UDP datagrams, sent as fast as one process on CPU 0 can, in a network namespace of
 * the bench's own, in nine places measured in the same run (interleaved rounds, medians, each a
 * ratio to its baseline):
 *   baseline      a cgroup outside egret's root: no egret program runs (to 127.0.0.1)
 *   host          a cgroup beside the sandboxes, egretd running: the backstop's "not a
 *                 sandbox" test
 *   connected     a sandbox's connected socket: the packet goes to its peer (one compare)
 *   sendto        a sandbox's unconnected socket, one destination: sendmsg's hook, then the
 *                 socket's last allowed flow
 *   dev-baseline  a process behind veth vh1, which no egret program judges
 *   device        a process behind veth vh0, sandbox vm1's device (`interface vh0`): tc judges
 *                 each packet by the policy
 *   veth          a sandbox's unconnected socket out through vh1 (not loopback, which egress
 *                 budgets do not count), the sandbox without a budget of its own while the
 *                 policy has one: the budget's switch on, one lookup that finds nothing
 *   veth+budget   the same from sandbox `budgeted` ('budget egress 1TiB/hour'): each packet
 *                 counted against its budget (two atomic adds, the period's check)
 *   veth+rate     the same from sandbox `rated` ('budget egress-rate 1TiB/s', never reached):
 *                 each packet through the rate's bucket (a division, a compare-and-swap or
 *                 not, an atomic add)
 * Then, with kernel.bpf_stats_enabled for a separate pass (put back after), the exact kernel
 * time of egret_egress and egret_dev_out per packet. Run as root:
 *   egret_bench_packet [--rounds N] [--packets N]
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <net/if.h>

#include "bench.h"
#include "cgroup.h"
#include "harness.h"
#include "tc.h"
#include "util.h"

#define CONFIGS	   9
#define LOOP_PORT  9100
#define DEV_PORT   9101
#define VETH_PORT  9102
#define MAX_ROUNDS 64

enum {
	BASE,
	HOST,
	CONNECTED,
	SENDTO,
	DEV_BASE,
	DEVICE,
	VETH,
	BUDGET,
	RATE
};

struct config {
	const char *name;
	char cgroup[PATH_MAX]; /* the sender's cgroup ("" for the bench's own) */
	const char *netns;     /* the sender's namespace (NULL: the bench's) */
	const char *dst;
	uint16_t port;
	bool connected;
	double rates[MAX_ROUNDS];
};

static char ns_s0[64], ns_s1[64];
static struct config configs[CONFIGS] = {
	[BASE] = { .name = "baseline", .dst = "127.0.0.1", .port = LOOP_PORT, .connected = true },
	[HOST] = { .name = "host", .dst = "127.0.0.1", .port = LOOP_PORT, .connected = true },
	[CONNECTED] = { .name = "connected",
			.dst = "127.0.0.1",
			.port = LOOP_PORT,
			.connected = true },
	[SENDTO] = { .name = "sendto", .dst = "127.0.0.1", .port = LOOP_PORT },
	[DEV_BASE] = { .name = "dev-baseline",
		       .netns = ns_s1,
		       .dst = "10.211.0.1",
		       .port = DEV_PORT,
		       .connected = true },
	[DEVICE] = { .name = "device",
		     .netns = ns_s0,
		     .dst = "10.210.0.1",
		     .port = DEV_PORT,
		     .connected = true },
	[VETH] = { .name = "veth", .dst = "10.211.0.2", .port = VETH_PORT },
	[BUDGET] = { .name = "veth+budget", .dst = "10.211.0.2", .port = VETH_PORT },
	[RATE] = { .name = "veth+rate", .dst = "10.211.0.2", .port = VETH_PORT },
};
static struct egret_instance inst;
static char base_cgroup[PATH_MAX];

static int sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int sh(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return netns_run(cmd);
}

/* packets a second from one sender in the config's cgroup and namespace */
static double measure(const struct config *c, long packets)
{
	int pipefd[2], status;
	double rate = 0;
	pid_t pid;

	if (pipe(pipefd))
		return 0;
	pid = fork();
	if (pid == 0) {
		struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(c->port) };
		char payload[64] = { 0 }, path[128];
		struct timespec a, b;
		int fd, nsfd;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bench_pin(0, 0);
		if (c->cgroup[0] && cgroup__join(c->cgroup, getpid()))
			_exit(1);
		if (c->netns) {
			snprintf(path, sizeof(path), "/run/netns/%s", c->netns);
			nsfd = open(path, O_RDONLY | O_CLOEXEC);
			if (nsfd < 0 || setns(nsfd, CLONE_NEWNET))
				_exit(1);
		}
		inet_pton(AF_INET, c->dst, &sa.sin_addr);
		fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
		if (c->connected && connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
			_exit(1);
		clock_gettime(CLOCK_MONOTONIC, &a);
		for (long i = 0; i < packets; i++) {
			if ((c->connected ? send(fd, payload, sizeof(payload), 0)
					  : sendto(fd, payload, sizeof(payload), 0,
						   (struct sockaddr *)&sa, sizeof(sa))) < 0)
				_exit(1);
		}
		clock_gettime(CLOCK_MONOTONIC, &b);
		rate = (double)packets /
		       ((double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
		if (write(pipefd[1], &rate, sizeof(rate)) != sizeof(rate))
			_exit(1);
		_exit(0);
	}
	close(pipefd[1]);
	if (read(pipefd[0], &rate, sizeof(rate)) != sizeof(rate))
		rate = 0;
	close(pipefd[0]);
	waitpid(pid, &status, 0);
	return rate;
}

/* a receiver on addr:port, so that nothing answers with ICMP (its queue may overflow) */
static int receiver(const char *addr, uint16_t port)
{
	int fd = udp_bind(addr, port);

	if (fd < 0) {
		fprintf(stderr, "bench: cannot bind %s:%u\n", addr, port);
		exit(1);
	}
	return fd;
}

static void cleanup(void)
{
	harness_cleanup(&inst);
	sh("ip netns del %s 2>/dev/null; ip netns del %s 2>/dev/null", ns_s0, ns_s1);
	rmdir(base_cgroup);
}

static void topology(void)
{
	if (sh("ip netns add %s && ip netns add %s", ns_s0, ns_s1) ||
	    sh("ip link add vh0 type veth peer name vs0 netns %s && "
	       "ip addr add 10.210.0.1/24 dev vh0 && ip link set vh0 up && "
	       "ip -n %s addr add 10.210.0.2/24 dev vs0 && ip -n %s link set vs0 up",
	       ns_s0, ns_s0, ns_s0) ||
	    sh("ip link add vh1 type veth peer name vs1 netns %s && "
	       "ip addr add 10.211.0.1/24 dev vh1 && ip link set vh1 up && "
	       "ip -n %s addr add 10.211.0.2/24 dev vs1 && ip -n %s link set vs1 up",
	       ns_s1, ns_s1, ns_s1)) {
		fprintf(stderr, "bench: cannot make the namespaces and veths\n");
		cleanup();
		exit(1);
	}
}

static void start_egret(void)
{
	char path[PATH_MAX];

	if (harness_init(&inst) < 0 || harness_nest_root(&inst) ||
	    harness_policy(&inst, "mode enforce\n"
				  "allow 127.0.0.1/32 udp/9100\n"
				  "allow 10.211.0.2/32 udp/9102\n"
				  "sandbox vm1 {\n"
				  "  interface vh0\n"
				  "  allow 10.210.0.1/32 udp/9101\n"
				  "}\n"
				  "sandbox budgeted {\n"
				  "  budget egress 1TiB/hour\n"
				  "}\n"
				  "sandbox rated {\n"
				  "  budget egress-rate 1TiB/s\n"
				  "}\n")) {
		fprintf(stderr, "bench: cannot set up egret's instance\n");
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/vm1", inst.cgroup_root);
	mkdir_p(path, 0755);
	if (harness_start(&inst, NULL)) {
		fprintf(stderr, "bench: egretd did not start:\n%s\n", harness_log(&inst));
		cleanup();
		exit(1);
	}
	snprintf(configs[CONNECTED].cgroup, sizeof(configs[0].cgroup), "%s/bench",
		 inst.cgroup_root);
	mkdir(configs[CONNECTED].cgroup, 0755);
	snprintf(configs[VETH].cgroup, sizeof(configs[0].cgroup), "%s", configs[CONNECTED].cgroup);
	snprintf(configs[BUDGET].cgroup, sizeof(configs[0].cgroup), "%s/budgeted",
		 inst.cgroup_root);
	mkdir(configs[BUDGET].cgroup, 0755);
	snprintf(configs[RATE].cgroup, sizeof(configs[0].cgroup), "%s/rated", inst.cgroup_root);
	mkdir(configs[RATE].cgroup, 0755);
	snprintf(configs[SENDTO].cgroup, sizeof(configs[0].cgroup), "%s",
		 configs[CONNECTED].cgroup);
	/* beside the sandboxes, under egret's attach point: the programs run, "the host's" */
	snprintf(configs[HOST].cgroup, sizeof(configs[0].cgroup), "%s/host", inst.attach);
	mkdir(configs[HOST].cgroup, 0755);
}

int main(int argc, char **argv)
{
	int rounds = 7, fds[2];
	long packets = 200000;
	char prefix[64], mount_root[PATH_MAX];
	struct bench_prog_stats e0[CONFIGS], e1[CONFIGS], d0, d1;
	uint32_t dev_prog;
	double base, dev_base;
	static const char usage[] =
		"usage: egret_bench_packet [--rounds 1-64] [--packets N>=1000]\n";
	const struct bench_opt opts[] = {
		{ "--rounds", 'i', &rounds },
		{ "--packets", 'l', &packets },
		{},
	};

	bench_args(argc, argv, opts, usage);
	if (rounds < 1 || rounds > MAX_ROUNDS || packets < 1000) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (geteuid()) {
		fprintf(stderr, "egret_bench_packet: run as root\n");
		return 1;
	}
	harness_sweep_stale();
	if (netns_new()) {
		fprintf(stderr, "bench: cannot create a network namespace\n");
		return 1;
	}
	snprintf(ns_s0, sizeof(ns_s0), "egret-bench-%d-0", (int)getpid());
	snprintf(ns_s1, sizeof(ns_s1), "egret-bench-%d-1", (int)getpid());
	topology();
	fds[0] = receiver("127.0.0.1", LOOP_PORT);
	cgroup__find_v2_mount(mount_root, sizeof(mount_root));
	snprintf(prefix, sizeof(prefix), HARNESS_PREFIX "%d-", getpid());
	snprintf(base_cgroup, sizeof(base_cgroup), "%s/%sbase", mount_root, prefix);
	mkdir(base_cgroup, 0755);
	snprintf(configs[BASE].cgroup, sizeof(configs[0].cgroup), "%s", base_cgroup);
	printf("setting up: egretd, sandbox vm1's device vh0, an unjudged vh1\n");
	fflush(stdout);
	start_egret();
	fds[1] = receiver("10.210.0.1", DEV_PORT);
	(void)receiver("10.211.0.1", DEV_PORT);
	dev_prog = tc__prog(if_nametoindex("vh0"), true);
	if (!dev_prog) {
		fprintf(stderr, "bench: egret judges nothing at vh0:\n%s\n", harness_log(&inst));
		cleanup();
		return 1;
	}

	for (int c = 0; c < CONFIGS; c++) {
		if (measure(&configs[c], packets / 10) <= 0) { /* warm-up and a check */
			fprintf(stderr, "bench: %s cannot send\n", configs[c].name);
			cleanup();
			return 1;
		}
	}
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < CONFIGS; k++) {
			int c = (k + r) % CONFIGS;

			configs[c].rates[r] = measure(&configs[c], packets);
		}
		printf("round %d/%d done\n", r + 1, rounds);
		fflush(stdout);
	}
	base = bench_median(configs[BASE].rates, rounds);
	dev_base = bench_median(configs[DEV_BASE].rates, rounds);
	printf("\n64-byte UDP datagrams, %ld x %d interleaved rounds, medians:\n", packets, rounds);
	printf("%-14s %12s %12s\n", "config", "packets/s", "vs baseline");
	for (int c = 0; c < CONFIGS; c++) {
		double m = bench_median(configs[c].rates, rounds);

		printf("%-14s %12.0f %12.3f\n", configs[c].name, m,
		       m / (c == DEV_BASE || c == DEVICE ? dev_base : base));
	}

	/* kernel time per packet (a separate pass: stats cost time) */
	bench_stats_on();
	printf("\negret's programs, kernel time per packet (bpf_stats):\n");
	for (int c = HOST; c < CONFIGS; c++) {
		if (c == DEV_BASE || c == DEVICE)
			continue;
		bench_link_stats(inst.state_dir, "egret_egress", &e0[c]);
		measure(&configs[c], packets);
		bench_link_stats(inst.state_dir, "egret_egress", &e1[c]);
		printf("%-14s egret_egress %6.1f ns a packet (%llu runs)\n", configs[c].name,
		       bench_ns_per_run(&e0[c], &e1[c]),
		       (unsigned long long)(e1[c].cnt - e0[c].cnt));
	}
	bench_prog_stats(dev_prog, &d0);
	measure(&configs[DEVICE], packets);
	bench_prog_stats(dev_prog, &d1);
	bench_stats_off();
	printf("%-14s egret_dev_out %5.1f ns a packet (%llu runs)\n", "device",
	       bench_ns_per_run(&d0, &d1), (unsigned long long)(d1.cnt - d0.cnt));
	close(fds[0]);
	close(fds[1]);
	cleanup();
	return 0;
}
