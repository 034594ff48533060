/* egret_bench_dns: what egret's resolver adds to a DNS query.
 *
 * dnsmasq answers a test zone in the bench's own network namespace. A client pinned to CPU 0
 * (egretd and dnsmasq on CPU 1) sends A queries at a fixed rate (open loop: a slow answer does
 * not slow the sender) for a few seconds, once from a plain cgroup straight to dnsmasq and once
 * from a sandbox, whose queries egret steers through its resolver (policy check, forward,
 * answer parsed, addresses opened, answer released). Rounds alternate; per-query latency
 * percentiles are printed for both and as the difference, with egretd's CPU time per query
 * beside dnsmasq's own when it answers directly (the floor on this machine: one datagram in and
 * one out, where egretd has two of each). Then each path at full speed with 64
 * queries in flight, for the queries per second it sustains, and egretd's CPU time per query.
 * dnsmasq answers www.bench.test with a TTL of 0, which no cache keeps, so every query through
 * egret goes upstream; a third path asks kept.bench.test, answered with a TTL of 300 s, as real
 * zones are: egret's resolver answers its repeats from what it kept (README "DNS", the cache),
 * one datagram in and one out like dnsmasq itself.
 * --unique-names: each query asks a name never asked before (q<hex>.bench.test), where by
 * default all ask www.bench.test (and kept.bench.test on the third path).
 * Run as root:  egret_bench_dns [--rate QPS] [--seconds N] [--rounds N] [--unique-names]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "cgroup.h"
#include "harness.h"
#include "util.h"

#define UPSTREAM "192.0.2.53"
#define MAX_Q	 (1 << 20)

struct result {
	double p50, p90, p99, max; /* microseconds */
	double qps;
	unsigned long sent, answered;
};

static struct egret_instance inst;
static char base_cgroup[PATH_MAX];
static pid_t dnsmasq;

/* --unique-names: each query asks a name never asked before in the run (a cache would miss
 * every one); otherwise all ask www.bench.test. measure() moves name_run on before each client.
 */
static bool unique_names;
static uint32_t name_run;
/* the client asks kept.bench.test (TTL 300) instead of www.bench.test (TTL 0) */
static bool ask_kept;

/* An A query for www.bench.test, or for the unique name of query n: "q" and 8 hex digits of
 * (run << 20 | n), n < MAX_Q.
 */
static size_t make_query(uint8_t *q, uint16_t id, unsigned long n)
{
	static const uint8_t tail[] = { 5,   'b', 'e', 'n', 'c', 'h', 4, 't',
					'e', 's', 't', 0,   0,	 1,   0, 1 };
	size_t off = 12;

	memset(q, 0, 12);
	q[0] = (uint8_t)(id >> 8);
	q[1] = (uint8_t)id;
	q[2] = 0x01; /* RD */
	q[5] = 1;    /* one question */
	if (unique_names) {
		uint32_t v = name_run << 20 | (uint32_t)n;

		q[off++] = 9;
		q[off++] = 'q';
		for (int i = 7; i >= 0; i--)
			q[off++] = "0123456789abcdef"[(v >> (4 * i)) & 0xf];
	} else {
		const char *label = ask_kept ? "\4kept" : "\3www";

		memcpy(q + off, label, strlen(label));
		off += strlen(label);
	}
	memcpy(q + off, tail, sizeof(tail));
	return off + sizeof(tail);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* In a child in cgroup: the load, from one UDP socket; the latencies (ns) into lat[]. */
static void client(const char *cgroup, double rate, double seconds, int window, uint64_t *lat,
		   struct result *res)
{
	struct sockaddr_in up = { .sin_family = AF_INET, .sin_port = htons(53) };
	uint64_t *sent_at = calloc(65536, sizeof(uint64_t)), start, next, end, now;
	unsigned long n = 0, got = 0, limit = (unsigned long)(rate * seconds);
	int fd, inflight = 0;
	uint8_t q[512];

	bench_pin(0, 0);
	if (cgroup__join(cgroup, getpid()))
		_exit(1);
	inet_pton(AF_INET, UPSTREAM, &up.sin_addr);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
	start = next = now_ns(CLOCK_MONOTONIC);
	end = start + (uint64_t)(seconds * 1e9);
	if (window)
		limit = MAX_Q;
	while ((now = now_ns(CLOCK_MONOTONIC)) < end + 1000000000ull && n < MAX_Q) {
		bool may_send = window ? inflight < window && now < end : n < limit && now >= next;

		if (may_send) {
			size_t len = make_query(q, (uint16_t)n, n);

			sent_at[n & 0xffff] = now;
			if (sendto(fd, q, len, 0, (struct sockaddr *)&up, sizeof(up)) > 0) {
				n++;
				inflight++;
			}
			next += (uint64_t)(1e9 / rate);
			continue;
		}
		if (!window && n >= limit && got == n)
			break;
		for (;;) {
			ssize_t r = recv(fd, q, sizeof(q), 0);
			uint16_t id;

			if (r < 12)
				break;
			id = (uint16_t)((q[0] << 8) | q[1]);
			if (got < MAX_Q)
				lat[got++] = now_ns(CLOCK_MONOTONIC) - sent_at[id];
			inflight--;
		}
		if (window && now >= end && inflight <= 0)
			break;
	}
	qsort(lat, got, sizeof(*lat), cmp_u64);
	res->sent = n;
	res->answered = got;
	res->qps = got / ((double)(now_ns(CLOCK_MONOTONIC) - start) / 1e9);
	if (got) {
		res->p50 = lat[got / 2] / 1e3;
		res->p90 = lat[got * 9 / 10] / 1e3;
		res->p99 = lat[got * 99 / 100] / 1e3;
		res->max = lat[got - 1] / 1e3;
	}
	free(sent_at);
}

static struct result measure(const char *cgroup, double rate, double seconds, int window)
{
	struct result *res =
		mmap(NULL, sizeof(*res), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	struct result out;
	pid_t pid;

	memset(res, 0, sizeof(*res));
	name_run++; /* a client's names are its own (4,095 runs before they wrap) */
	pid = fork();
	if (pid == 0) {
		uint64_t *lat = malloc(MAX_Q * sizeof(uint64_t));

		client(cgroup, rate, seconds, window, lat, res);
		_exit(0);
	}
	waitpid(pid, NULL, 0);
	out = *res;
	munmap(res, sizeof(*res));
	return out;
}

static void print(const char *what, const struct result *r)
{
	printf("%-22s %8.0f %8.0f %8.0f %8.0f %9.0f %8lu/%lu\n", what, r->p50, r->p90, r->p99,
	       r->max, r->qps, r->answered, r->sent);
}

int main(int argc, char **argv)
{
	const char *extra[] = { "--upstream-dns", UPSTREAM, NULL };
	double rate = 10000, seconds = 3, d50[16], d99[16], b50[16], b99[16], e50[16], e99[16];
	double eg[16], up[16], k50[16], k99[16], egk[16];
	char mount_root[PATH_MAX], sandbox[PATH_MAX];
	int rounds = 3;
	struct result base, via, kept, fast_base, fast_via, fast_kept;
	double t0, t1, u0, u1;
	static const char usage[] =
		"usage: egret_bench_dns [--rate QPS] [--seconds N] [--rounds 1-16] "
		"[--unique-names]\n"
		"  --unique-names  every query asks a name not asked before (default: all ask "
		"one name)\n";
	const struct bench_opt opts[] = {
		{ "--rate", 'd', &rate },
		{ "--seconds", 'd', &seconds },
		{ "--rounds", 'i', &rounds },
		{ "--unique-names", 'b', &unique_names },
		{},
	};

	bench_args(argc, argv, opts, usage);
	if (rate < 1 || seconds <= 0 || rate * seconds > MAX_Q / 2 || rounds < 1 || rounds > 16) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	if (geteuid()) {
		fprintf(stderr, "egret_bench_dns: run as root\n");
		return 1;
	}
	harness_sweep_stale();
	if (netns_new() || netns_addr("lo", UPSTREAM "/32") || netns_addr("lo", "192.0.2.10/32"))
		return 1;
	dnsmasq = fork();
	if (dnsmasq == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("dnsmasq", "dnsmasq", "-k", "--conf-file=/dev/null", "--no-resolv",
		       "--no-hosts", "--listen-address=" UPSTREAM, "--bind-interfaces", "--port=53",
		       "--user=root", "--pid-file=", "--log-facility=/dev/null",
		       "--address=/bench.test/192.0.2.10",
		       "--host-record=kept.bench.test,192.0.2.10,300", "--dns-forward-max=1000",
		       NULL);
		_exit(127);
	}
	bench_pin(dnsmasq, 1);
	if (harness_init(&inst) || harness_policy(&inst, "allow domain *.bench.test\n") ||
	    harness_start(&inst, extra)) {
		fprintf(stderr, "bench: egretd did not start:\n%s\n", harness_log(&inst));
		kill(dnsmasq, SIGKILL);
		harness_cleanup(&inst);
		return 1;
	}
	bench_pin(inst.egretd, 1);
	cgroup__find_v2_mount(mount_root, sizeof(mount_root));
	snprintf(base_cgroup, sizeof(base_cgroup), "%s/%s-base", mount_root, inst.name);
	mkdir(base_cgroup, 0755);
	snprintf(sandbox, sizeof(sandbox), "%s/bench", inst.cgroup_root);
	mkdir(sandbox, 0755);
	usleep(300000);
	measure(base_cgroup, 1000, 0.3, 0); /* warm-up */
	measure(sandbox, 1000, 0.3, 0);

	printf("A queries at %.0f/s for %.1f s, %d alternating rounds, %s; latency in "
	       "microseconds\n",
	       rate, seconds, rounds,
	       unique_names ? "each for a name not asked before" : "all for www.bench.test");
	printf("%-22s %8s %8s %8s %8s %9s %15s\n", "path", "p50", "p90", "p99", "max", "answers/s",
	       "answered/sent");
	for (int r = 0; r < rounds; r++) {
		u0 = bench_cpu_seconds(dnsmasq);
		base = measure(base_cgroup, rate, seconds, 0);
		u1 = bench_cpu_seconds(dnsmasq);
		t0 = bench_cpu_seconds(inst.egretd);
		via = measure(sandbox, rate, seconds, 0);
		t1 = bench_cpu_seconds(inst.egretd);
		eg[r] = (t1 - t0) * 1e6 / (via.answered ? via.answered : 1);
		print("dnsmasq directly", &base);
		print("through egret", &via);
		if (!unique_names) {
			ask_kept = true;
			t0 = bench_cpu_seconds(inst.egretd);
			kept = measure(sandbox, rate, seconds, 0);
			t1 = bench_cpu_seconds(inst.egretd);
			ask_kept = false;
			print("through egret, kept", &kept);
			egk[r] = (t1 - t0) * 1e6 / (kept.answered ? kept.answered : 1);
			k50[r] = kept.p50 - base.p50;
			k99[r] = kept.p99 - base.p99;
		}
		/* the floor: what the upstream itself spends answering a query from its own zone
		 * (one datagram in, one out, as egretd's two legs each are), in the same minute
		 */
		up[r] = (u1 - u0) * 1e6 / (base.answered ? base.answered : 1);
		printf("  egretd CPU: %.1f us per query going upstream (%.2fx dnsmasq's own, answering "
		       "directly: %.1f us per query)\n",
		       eg[r], up[r] > 0 ? eg[r] / up[r] : 0, up[r]);
		if (!unique_names)
			printf("  egretd CPU: %.1f us per query answered from what it kept (%.2fx "
			       "dnsmasq's own)\n",
			       egk[r], up[r] > 0 ? egk[r] / up[r] : 0);
		b50[r] = base.p50, b99[r] = base.p99, e50[r] = via.p50, e99[r] = via.p99;
		d50[r] = via.p50 - base.p50;
		d99[r] = via.p99 - base.p99;
	}
	printf("\nmedian of rounds: direct p50 %.0f p99 %.0f us; through egret p50 %.0f p99 %.0f us;"
	       "\nadded by egret: p50 %.0f us, p99 %.0f us; CPU per query: egretd %.1f us, "
	       "dnsmasq answering directly %.1f us\n",
	       bench_median(b50, rounds), bench_median(b99, rounds), bench_median(e50, rounds),
	       bench_median(e99, rounds), bench_median(d50, rounds), bench_median(d99, rounds),
	       bench_median(eg, rounds), bench_median(up, rounds));
	if (!unique_names)
		printf("answered from what egret kept: added p50 %.0f us, p99 %.0f us; egretd %.1f us "
		       "a query\n",
		       bench_median(k50, rounds), bench_median(k99, rounds),
		       bench_median(egk, rounds));

	fast_base = measure(base_cgroup, 1e9, 2, 64);
	fast_via = measure(sandbox, 1e9, 2, 64);
	if (!unique_names) {
		ask_kept = true;
		fast_kept = measure(sandbox, 1e9, 2, 64);
		ask_kept = false;
	}
	printf("\nfull speed, 64 queries in flight, 2 s:\n");
	print("dnsmasq directly", &fast_base);
	print("through egret", &fast_via);
	if (!unique_names)
		print("through egret, kept", &fast_kept);

	kill(dnsmasq, SIGKILL);
	waitpid(dnsmasq, NULL, 0);
	harness_cleanup(&inst);
	rmdir(base_cgroup);
	return 0;
}
