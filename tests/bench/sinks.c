/* egret_bench_sinks: how many events a second egretd's delivery moves, on one core.
 *
 * The delivery code runs in this process, pinned to CPU 0, as egretd runs it: events are
 * stamped and encoded (stream__emit), appended to a spool in a temp dir, and every 1,000 events
 * (about one 25 ms drain at 40,000 events/s) the spool is written and the sink pumped. Each
 * configuration sends the same events (a typical mix of an allowed connect, a file write and
 * an exec with argv, about 300 bytes each encoded):
 *   raw write       the already-encoded bytes written to a file: the disk's ceiling
 *   spool only      encode + spool, no sink
 *   file            encode + spool + the file sink
 *   stdout json     the stdout sink (to /dev/null) with --format json
 *   unix, tcp       the socket sinks, to a receiver process on CPU 1 that reads and discards
 *   unix ack        with ?ack, the receiver acknowledging
 *   otlp+http       to an HTTP server process on CPU 1 that decodes every request as a
 *                   collector does (gunzip, the OTLP protobuf; the records counted and checked
 *                   against what was sent) and answers 200
 *   otlp none       the same with ?compression=none (a local collector: no gzip either side)
 *   replay file     N events already spooled (the sink was down), delivered to a file
 *   replay tcp      the same to a tcp receiver
 * Rounds alternate; medians are printed with the ratio to raw write of the same round. Last,
 * reading an event back from the spool (every sink but the framed ones does it) with
 * protobuf-c's unpack and with pbdecode, and writing it (every event, for every sink) with
 * protobuf-c's pack and with pbencode, CPU time per event. Run:
 *   egret_bench_sinks [--events N] [--rounds N] [--only CONFIG,...]
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/mman.h>
#include <unistd.h>
#include <zlib.h>

#include "arena.h"
#include "bench.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "loop.h"
#include "pbdecode.h"
#include "pbencode.h"
#include "sink.h"
#include "stream.h"
#include "util.h"
#include "wire.h"

#define MAX_ROUNDS 16
#define BATCH	   1000

enum config {
	RAW,
	SPOOL_ONLY,
	FILE_SINK,
	STDOUT_JSON,
	UNIX_SINK,
	UNIX_ACK,
	TCP_SINK,
	OTLP_SINK,
	OTLP_PLAIN,
	REPLAY_FILE,
	REPLAY_TCP,
	CONFIGS
};

static const char *const names[CONFIGS] = {
	"raw write", "spool only", "file",	"stdout json", "unix",	     "unix ack",
	"tcp",	     "otlp+http",  "otlp none", "replay file", "replay tcp",
};

static char dir[64];
static pid_t children[8];
static int nchildren;
static uint64_t bytes_per_event;
static double otlp_per_request; /* records per OTLP request, the last run's */
/* the CPU time this process (egret's side: receivers are other processes) spent per event */
static double cpu_per_event[CONFIGS][MAX_ROUNDS];
static int round_now;

static uint64_t cpu_ns(void)
{
	return now_ns(CLOCK_PROCESS_CPUTIME_ID);
}

/* ---- receivers (CPU 1) ----------------------------------------------------------------------- */

static int listen_socket(int family, struct sockaddr *sa, socklen_t sl)
{
	int fd = socket(family, SOCK_STREAM, 0), one = 1;

	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (fd < 0 || bind(fd, sa, sl) || listen(fd, 8)) {
		perror("bench: listen");
		exit(1);
	}
	return fd;
}

/* Read and discard; with ack, acknowledge every read's records as tail does. */
static void discard(int c, bool ack)
{
	static uint8_t buf[1 << 20];
	uint8_t pending[1 << 20];
	size_t plen = 0;
	uint64_t records = 0;

	for (;;) {
		ssize_t n = read(c, buf, sizeof(buf));
		size_t off = 0, count, total;

		if (n <= 0)
			return;
		if (!ack)
			continue;
		/* count whole records across reads */
		while (off < (size_t)n) {
			size_t take = (size_t)n - off < sizeof(pending) - plen
					      ? (size_t)n - off
					      : sizeof(pending) - plen;

			memcpy(pending + plen, buf + off, take);
			plen += take;
			off += take;
			total = wire__whole(pending, plen, SIZE_MAX, &count);
			records += count;
			memmove(pending, pending + total, plen - total);
			plen -= total;
		}
		{
			uint8_t v[WIRE_VARINT_MAX];

			send(c, v, wire__varint_put(records, v), MSG_NOSIGNAL);
		}
	}
}

/* What the OTLP receiver decoded: records and requests (shared with the parent) */
static struct otlp_rx {
	uint64_t records, requests, bad;
} * rx;

/* The receiver decodes each request into an arena emptied after it (egret's own, arena.h), as
 * a collector's decoder reuses its memory: malloc and free of every KeyValue were half its time.
 */
static struct arena rx_arena;

/* A request body as a collector reads it: gunzipped (gz: Content-Encoding: gzip) and decoded
 * as an OTLP protobuf request; its log records counted in rx.
 */
static void otlp_decode(const uint8_t *body, size_t len, bool gz)
{
	static uint8_t plain[64 << 20];
	const uint8_t *in = plain;
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
	z_stream z = { .next_in = (Bytef *)body, .avail_in = (uInt)len };
	size_t n;

	rx->requests++;
	if (!gz) {
		in = body;
		n = len;
		goto decode;
	}
	if (inflateInit2(&z, 15 + 16) != Z_OK) {
		rx->bad++;
		return;
	}
	z.next_out = plain;
	z.avail_out = sizeof(plain);
	if (inflate(&z, Z_FINISH) != Z_STREAM_END) {
		inflateEnd(&z);
		rx->bad++;
		return;
	}
	n = z.total_out;
	inflateEnd(&z);
decode:
	if (!rx_arena.pb.alloc)
		arena__init(&rx_arena);
	req = opentelemetry__proto__collector__logs__v1__export_logs_service_request__unpack(
		&rx_arena.pb, n, in);
	if (!req)
		rx->bad++;
	for (size_t i = 0; req && i < req->n_resource_logs; i++) {
		for (size_t j = 0; j < req->resource_logs[i]->n_scope_logs; j++)
			rx->records += req->resource_logs[i]->scope_logs[j]->n_log_records;
	}
	arena__reset(&rx_arena);
}

/* An HTTP server that decodes every request (otlp_decode) and answers it 200 with an empty
 * body.
 */
static void http_ok(int c)
{
	static char buf[8 << 20];
	size_t have = 0;

	for (;;) {
		ssize_t n = read(c, buf + have, sizeof(buf) - have);
		char *hend;

		if (n <= 0)
			return;
		have += (size_t)n;
		while ((hend = memmem(buf, have, "\r\n\r\n", 4))) {
			char *cl = strcasestr(buf, "Content-Length:");
			size_t body = cl && cl < hend ? strtoul(cl + 15, NULL, 10) : 0;
			size_t total = (size_t)(hend - buf) + 4 + body;
			static const char ok[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";

			if (have < total)
				break;
			otlp_decode(
				(const uint8_t *)hend + 4, body,
				memmem(buf, (size_t)(hend - buf), "Content-Encoding: gzip", 22));
			if (write(c, ok, sizeof(ok) - 1) < 0)
				return;
			memmove(buf, buf + total, have - total);
			have -= total;
		}
	}
}

static void serve(int lfd, int kind)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		bench_pin(0, 1);
		for (;;) {
			int c = accept(lfd, NULL, NULL);

			if (c < 0)
				continue;
			if (kind == 2)
				http_ok(c);
			else
				discard(c, kind == 1);
			close(c);
		}
	}
	children[nchildren++] = pid;
	close(lfd);
}

static uint16_t tcp_server(int kind)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	int fd = listen_socket(AF_INET, (struct sockaddr *)&sa, sizeof(sa));

	getsockname(fd, (struct sockaddr *)&sa, &l);
	serve(fd, kind);
	return ntohs(sa.sin_port);
}

static void unix_server(const char *path, int kind)
{
	struct sockaddr_un un = { .sun_family = AF_UNIX };

	snprintf(un.sun_path, sizeof(un.sun_path), "%s", path);
	unlink(path);
	serve(listen_socket(AF_UNIX, (struct sockaddr *)&un, sizeof(un)), kind);
}

/* ---- the events ------------------------------------------------------------------------------ */

/* One event of the mix, built in *ev from storage that lives until the next call. */
static void make_event(uint64_t i, Egret__V1__Event *out)
{
	static char *args[] = { "python3", "-m", "pip", "install", "--user", "requests==2.31.0" };
	static Egret__V1__Event ev;
	static Egret__V1__Sandbox sb;
	static Egret__V1__Process p;
	static Egret__V1__NetConnect nc;
	static Egret__V1__FileActivity fa;
	static Egret__V1__ProcessExec ex;

	egret__v1__event__init(&ev);
	egret__v1__sandbox__init(&sb);
	egret__v1__process__init(&p);
	egret__v1__net_connect__init(&nc);
	egret__v1__file_activity__init(&fa);
	egret__v1__process_exec__init(&ex);

	sb.cgroup_id = 4242;
	sb.name = "build-7f3a";
	p.pid = p.tid = 10000 + (uint32_t)(i % 5000);
	p.ppid = 9999;
	p.uid = p.gid = 1000;
	p.comm = "python3";
	p.exe = "/usr/bin/python3.11";
	p.exec_id = 0x123456789ull + i;
	ev.sandbox = &sb;
	ev.process = &p;
	ev.time_unix_nano = 1796000000000000000ull + i;
	switch (i % 3) {
	case 0:
		nc.verdict = EGRET__V1__NET_CONNECT__VERDICT__VERDICT_ALLOW;
		nc.reason = EGRET__V1__NET_CONNECT__REASON__REASON_ALLOW_RULE;
		nc.hook = EGRET__V1__NET_CONNECT__HOOK__HOOK_CONNECT4;
		nc.protocol = "tcp";
		nc.dst_addr = "151.101.0.223";
		nc.dst_port = 443;
		nc.family = 2;
		nc.rule_id = 12;
		nc.rule = "allow 151.101.0.0/16 tcp/443";
		ev.class_uid = 4001;
		ev.activity_id = 1;
		ev.payload_case = EGRET__V1__EVENT__PAYLOAD_NET_CONNECT;
		ev.net_connect = &nc;
		break;
	case 1:
		fa.op = EGRET__V1__FILE_ACTIVITY__OP__OP_CREATE;
		fa.path = "/home/build/.local/lib/python3.11/site-packages/requests/adapters.py";
		fa.result = 3;
		fa.flags = 0101;
		ev.class_uid = 1001;
		ev.activity_id = 1;
		ev.payload_case = EGRET__V1__EVENT__PAYLOAD_FILE;
		ev.file = &fa;
		break;
	default:
		ex.args = args;
		ex.n_args = 6;
		ex.argc = 6;
		ex.cwd = "/home/build/src";
		ev.class_uid = 1007;
		ev.activity_id = 1;
		ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXEC;
		ev.exec = &ex;
	}
	*out = ev;
}

static void emit_one(struct stream *s, uint64_t i)
{
	Egret__V1__Event ev;

	make_event(i, &ev);
	stream__emit(s, &ev);
}

/* ---- one measurement ------------------------------------------------------------------------ */

static bool caught_up(struct stream *s)
{
	for (unsigned int i = 0; i < s->nsinks; i++) {
		if (spool__behind(&s->spool, s->sinks[i]->acked))
			return false;
	}
	return true;
}

/* All events through egret's delivery to the sink of uri (NULL: none): events/s. */
static double run(enum config c, const char *uri, uint64_t n)
{
	char spool[128], cmd[160], err[160];
	struct loop loop;
	struct stream s;
	struct sink k;
	uint64_t t0, t1;
	int saved_stdout = -1;
	bool replay = c == REPLAY_FILE || c == REPLAY_TCP;
	struct otlp_rx before;
	uint64_t cpu0;

	sync(); /* no run pays for the dirty pages of the one before */

	snprintf(spool, sizeof(spool), "%s/spool-%d", dir, c);
	loop__init(&loop);
	stream__init(&s);
	if (stream__open_spool(&s, spool, 16ull << 30, SPOOL_SYNC_NEVER))
		exit(1);
	if (uri) {
		if (sink__parse(&k, uri, err, sizeof(err))) {
			fprintf(stderr, "bench: %s: %s\n", uri, err);
			exit(1);
		}
		if (c == STDOUT_JSON) {
			int null = open("/dev/null", O_WRONLY);

			fflush(stdout);
			saved_stdout = dup(1);
			dup2(null, 1);
			close(null);
			k.format = SINK_JSON;
		}
		stream__add_sink(&s, &k, &loop);
	}
	if (replay) {
		/* spooled while the sink was down */
		for (uint64_t i = 0; i < n; i++)
			emit_one(&s, i);
		spool__flush(&s.spool);
		sync();
	}
	before = *rx;
	cpu0 = cpu_ns();
	t0 = now_ns(CLOCK_MONOTONIC);
	for (uint64_t i = 0; !replay && i < n; i++) {
		emit_one(&s, i);
		if (i % BATCH == BATCH - 1)
			stream__flush(&s);
	}
	do {
		stream__flush(&s);
		if (uri && !caught_up(&s))
			loop__run_once(&loop, 1);
	} while (uri && !caught_up(&s));
	t1 = now_ns(CLOCK_MONOTONIC);
	cpu_per_event[c][round_now] = (double)(cpu_ns() - cpu0) / 1e3 / (double)n;
	bytes_per_event = s.spool.bytes / n;
	if (c == OTLP_SINK || c == OTLP_PLAIN) {
		uint64_t got = rx->records - before.records, reqs = rx->requests - before.requests;

		if (got != n || rx->bad != before.bad) {
			fprintf(stderr,
				"bench: the OTLP receiver decoded %llu of %llu records (%llu "
				"requests it could not decode)\n",
				(unsigned long long)got, (unsigned long long)n,
				(unsigned long long)(rx->bad - before.bad));
			exit(1);
		}
		otlp_per_request = (double)got / (double)(reqs ? reqs : 1);
	}
	stream__free(&s);
	loop__close(&loop);
	if (saved_stdout >= 0) {
		dup2(saved_stdout, 1);
		close(saved_stdout);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf %s", spool);
	if (system(cmd))
		fprintf(stderr, "bench: cannot remove %s\n", spool);
	return n / ((t1 - t0) / 1e9);
}

/* n of the events, stamped as the stream stamps them, encoded and framed into all[0, cap):
 * their bytes (fewer events when cap is reached)
 */
static size_t encode_events(uint64_t n, uint8_t *all, size_t cap)
{
	size_t len = 0;

	for (uint64_t i = 0; i < n; i++) {
		Egret__V1__Event ev;
		size_t sz;

		make_event(i, &ev);
		ev.stream_id = "0123456789abcdef0123456789abcdef";
		ev.seq = i + 1;
		ev.host = "bench";
		ev.sensor_version = EGRET_VERSION;
		sz = egret__v1__event__get_packed_size(&ev);
		if (len + sz + WIRE_VARINT_MAX > cap)
			break;
		len += wire__varint_put(sz, all + len);
		len += egret__v1__event__pack(&ev, all + len);
	}
	return len;
}

/* The same events, encoded and framed beforehand, written to a file in 1 MiB writes. */
static double raw_write(uint64_t n)
{
	char path[128];
	size_t cap = n * 320, len;
	uint8_t *all = malloc(cap);
	uint64_t t0, t1;
	int fd;

	if (!all)
		exit(1);
	snprintf(path, sizeof(path), "%s/raw.pb", dir);
	len = encode_events(n, all, cap);
	sync();
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	t0 = now_ns(CLOCK_MONOTONIC);
	for (size_t off = 0; off < len;) {
		ssize_t r = write(fd, all + off, len - off < (1u << 20) ? len - off : (1u << 20));

		if (r <= 0)
			exit(1);
		off += (size_t)r;
	}
	t1 = now_ns(CLOCK_MONOTONIC);
	close(fd);
	unlink(path);
	free(all);
	return n / ((t1 - t0) / 1e9);
}

/* Reading a spooled event back (what the OTLP and JSON sinks do with every event): the same
 * 10,000 events through protobuf-c's unpack and through pbdecode, alternating, into an arena
 * as the sinks do; CPU ns per event of each, the medians of rounds.
 */
#define DECODE_EVENTS 10000

static void decode_compare(int rounds)
{
	static double ns[2][MAX_ROUNDS];
	size_t cap = DECODE_EVENTS * 320, len, off;
	uint8_t *all = malloc(cap);
	struct arena a;

	if (!all)
		exit(1);
	len = encode_events(DECODE_EVENTS, all, cap);
	arena__init(&a);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 2; k++) {
			int which = (k + r) % 2;
			uint64_t t0 = cpu_ns();
			size_t total, msg, events = 0;

			for (int rep = 0; rep < 20; rep++) {
				for (off = 0; wire__frame(all + off, len - off, &total, &msg) == 1;
				     off += total, events++) {
					const uint8_t *m = all + off + msg;
					const ProtobufCMessageDescriptor *d =
						&egret__v1__event__descriptor;
					size_t ml = total - msg;
					void *ev;

					if (which)
						ev = pbdecode__unpack(d, &a.pb, ml, m);
					else
						ev = protobuf_c_message_unpack(d, &a.pb, ml, m);
					if (!ev) {
						fprintf(stderr, "bench: an event did not decode\n");
						exit(1);
					}
				}
				arena__reset(&a);
			}
			ns[which][r] = (double)(cpu_ns() - t0) / (double)events;
		}
	}
	printf("reading an event back from the spool (OTLP and JSON sinks): protobuf-c %.0f ns, "
	       "pbdecode %.0f ns (%.2fx)\n",
	       bench_median(ns[0], rounds), bench_median(ns[1], rounds),
	       bench_median(ns[0], rounds) / bench_median(ns[1], rounds));

	/* and writing them (what egretd does with every event, for every sink): the same events,
	 * decoded once, framed by protobuf-c (size, then pack) and by pbencode, alternating
	 */
	{
		ProtobufCMessage **evs = calloc(DECODE_EVENTS, sizeof(*evs));
		struct pbencode_buf b = { 0 };
		uint8_t *out = malloc(64 << 10);
		size_t n = 0, total, msg, sum = 0;

		if (!evs || !out)
			exit(1);
		for (off = 0;
		     n < DECODE_EVENTS && wire__frame(all + off, len - off, &total, &msg) == 1;
		     off += total)
			evs[n++] = protobuf_c_message_unpack(&egret__v1__event__descriptor, &a.pb,
							     total - msg, all + off + msg);
		for (int r = 0; r < rounds; r++) {
			for (int k = 0; k < 2; k++) {
				int which = (k + r) % 2;
				uint64_t t0 = cpu_ns();

				for (int rep = 0; rep < 20; rep++) {
					for (size_t i = 0; i < n; i++) {
						size_t sz, at;

						if (which) {
							if (pbencode__frame(&b, evs[i], &at))
								exit(1);
							sum += b.len - at;
							continue;
						}
						sz = protobuf_c_message_get_packed_size(evs[i]);
						at = wire__varint_put(sz, out);
						sum += at +
						       protobuf_c_message_pack(evs[i], out + at);
					}
				}
				ns[which][r] = (double)(cpu_ns() - t0) / (double)(20 * n);
			}
		}
		printf("writing an event into the spool (every sink): protobuf-c %.0f ns, pbencode "
		       "%.0f ns (%.2fx; %.0f bytes an event framed)\n",
		       bench_median(ns[0], rounds), bench_median(ns[1], rounds),
		       bench_median(ns[0], rounds) / bench_median(ns[1], rounds),
		       (double)sum / (double)(rounds * 2 * 20 * n));
		pbencode__buf_free(&b);
		free(out);
		free(evs);
	}
	arena__release(&a);
	free(all);
}

/* Whether config name is in the comma-separated list only (NULL: every config). */
static bool selected(const char *only, const char *name)
{
	size_t len = strlen(name);

	for (const char *p = only; p && *p; p += strcspn(p, ",") + (p[strcspn(p, ",")] == ',')) {
		if (strcspn(p, ",") == len && !strncmp(p, name, len))
			return true;
	}
	return !only;
}

static void cleanup(void)
{
	char cmd[96];

	for (int i = 0; i < nchildren; i++) {
		kill(children[i], SIGKILL);
		waitpid(children[i], NULL, 0);
	}
	if (dir[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
		if (system(cmd))
			fprintf(stderr, "bench: cannot remove %s\n", dir);
	}
}

int main(int argc, char **argv)
{
	static double rates[CONFIGS][MAX_ROUNDS];
	char uris[CONFIGS][160], usock[128], asock[128];
	uint64_t n = 300000;
	int rounds = 5;
	const char *only = NULL;
	static const char usage[] = "usage: egret_bench_sinks [--events N>=10000] [--rounds 1-" BENCH_STR(
		MAX_ROUNDS) "] "
			    "[--only CONFIG,...]\n(raw write always runs: the ratios are to it)\n";
	const struct bench_opt opts[] = {
		{ "--events", 'u', &n },
		{ "--rounds", 'i', &rounds },
		{ "--only", 's', &only },
		{},
	};

	bench_args(argc, argv, opts, usage);
	if (n < 10000 || rounds < 1 || rounds > MAX_ROUNDS) {
		fprintf(stderr, "%s", usage);
		return 2;
	}
	snprintf(dir, sizeof(dir), "/tmp/egret-bench-sinks-XXXXXX");
	if (!mkdtemp(dir))
		return 1;
	atexit(cleanup);
	signal(SIGPIPE, SIG_IGN);
	rx = mmap(NULL, sizeof(*rx), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (rx == MAP_FAILED)
		return 1;
	bench_pin(0, 0);
	snprintf(usock, sizeof(usock), "%s/rx.sock", dir);
	snprintf(asock, sizeof(asock), "%s/rx-ack.sock", dir);
	unix_server(usock, 0);
	unix_server(asock, 1);
	snprintf(uris[FILE_SINK], sizeof(uris[0]), "file:%s/events.pb?max_size=0", dir);
	snprintf(uris[STDOUT_JSON], sizeof(uris[0]), "stdout");
	snprintf(uris[UNIX_SINK], sizeof(uris[0]), "unix:%s", usock);
	snprintf(uris[UNIX_ACK], sizeof(uris[0]), "unix:%s?ack", asock);
	snprintf(uris[TCP_SINK], sizeof(uris[0]), "tcp://127.0.0.1:%u", tcp_server(0));
	snprintf(uris[OTLP_PLAIN], sizeof(uris[0]),
		 "otlp+http://127.0.0.1:%u/v1/logs?compression=none", tcp_server(2));
	snprintf(uris[OTLP_SINK], sizeof(uris[0]), "otlp+http://127.0.0.1:%u/v1/logs",
		 tcp_server(2));
	snprintf(uris[REPLAY_FILE], sizeof(uris[0]), "file:%s/replay.pb?max_size=0", dir);
	snprintf(uris[REPLAY_TCP], sizeof(uris[0]), "%s", uris[TCP_SINK]);
	usleep(200000);
	printf("%llu events a run (~300 bytes each), %d rounds, on CPU 0\n", (unsigned long long)n,
	       rounds);
	for (int r = 0; r < rounds; r++) {
		round_now = r;
		for (int k = 0; k < CONFIGS; k++) {
			enum config c = (enum config)((k + r) % CONFIGS);
			char path[160];

			if (c != RAW && !selected(only, names[c]))
				continue;
			if (c == RAW)
				rates[c][r] = raw_write(n);
			else
				rates[c][r] = run(c, c == SPOOL_ONLY ? NULL : uris[c], n);
			/* the file sinks' output, between runs */
			snprintf(path, sizeof(path), "%s/events.pb", dir);
			unlink(path);
			snprintf(path, sizeof(path), "%s/replay.pb", dir);
			unlink(path);
		}
		printf("round %d/%d done\n", r + 1, rounds);
		fflush(stdout);
	}
	printf("\nmedians (%llu bytes per event encoded; cpu: this process's CPU time per event, "
	       "the receivers' not counted):\n%-14s %12s %10s %12s %14s\n",
	       (unsigned long long)bytes_per_event, "config", "events/s", "MB/s", "vs raw write",
	       "cpu us/event");
	for (int c = 0; c < CONFIGS; c++) {
		double m = bench_median(rates[c], rounds);

		if (c != RAW && !selected(only, names[c]))
			continue;

		printf("%-14s %12.0f %10.1f %12.3f %14.2f\n", names[c], m,
		       m * bytes_per_event / 1e6, m / bench_median(rates[RAW], rounds),
		       c == RAW ? 0.0 : bench_median(cpu_per_event[c], rounds));
	}
	if (selected(only, names[OTLP_SINK]) || selected(only, names[OTLP_PLAIN]))
		printf("otlp+http: every record decoded by the receiver (gunzip, protobuf; otlp none: "
		       "?compression=none, protobuf), %.0f records per request\n",
		       otlp_per_request);
	decode_compare(rounds);
	return 0;
}
