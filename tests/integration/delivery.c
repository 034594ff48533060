/* Delivery to a SIEM, with real receivers: egretctl tail as the tcp:// and unix: receiver, and
 * an OTLP/HTTP receiver in Python that decodes with an independent protobuf implementation.
 * Under a steady event load from a sandbox, a receiver that stops reading and then is killed
 * and restarted still gets every seq from 1 to N, in order; at the spool's limit the Loss
 * event names exactly the range the lagging sink lost; what a stopped egretd spooled is
 * delivered by the next one, damaged spool bytes reported and not replayed; heartbeats,
 * rotation followed by tail --follow, stdout JSON; a second egretd on the same paths leaves
 * a backlog for a sink that is down alone.
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
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "util.h"

#define LOAD_SANDBOX "load"

static pid_t receivers[4], load_pid;
static unsigned int nreceivers;

static void setup(void)
{
	harness_setup(true);
	for (unsigned int i = 0; i < sizeof(receivers) / sizeof(receivers[0]); i++)
		harness_kill_at_teardown(&receivers[i]);
	harness_kill_at_teardown(&load_pid);
}

TestSuite(delivery, .init = setup, .fini = harness_teardown, .timeout = 120);

/* ---- receivers ------------------------------------------------------------------------------ */

static uint16_t free_port(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	cr_assert(fd >= 0);
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &l), 0);
	close(fd);
	return ntohs(sa.sin_port);
}

/* A receiver process with stdout appended to out; returns its pid once it listens on port (0:
 * a unix socket at path).
 */
static pid_t start_receiver(char *const argv[], const char *out, uint16_t port, const char *path)
{
	pid_t pid = fork();

	cr_assert(pid >= 0);
	if (pid == 0) {
		int fd = open(out, O_WRONLY | O_CREAT | O_APPEND, 0600);
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		if (!getenv("EGRET_TEST_VERBOSE"))
			dup2(null, 2);
		execv(argv[0], argv);
		_exit(127);
	}
	for (int i = 0; i < 100; i++) {
		struct stat st;

		if (port ? tcp_connect("127.0.0.1", port, AF_INET, 100) == 0
			 : !stat(path, &st) && S_ISSOCK(st.st_mode))
			break;
		usleep(50000);
	}
	receivers[nreceivers++ % 4] = pid;
	return pid;
}

static pid_t start_tail(const char *src, const char *out, uint16_t port, const char *path)
{
	char *argv[] = { EGRETCTL_BIN, "tail", (char *)src, NULL };

	return start_receiver(argv, out, port, path);
}

/* ---- what arrived --------------------------------------------------------------------------- */

struct seen {
	char stream[33];
	uint64_t max;	 /* highest seq of that stream */
	uint64_t *order; /* seqs of that stream in arrival order */
	size_t n, cap;
	uint64_t lines; /* all lines */
};

/* "stream_id":"...","seq":"N" of a JSON line; false for lines without them */
static bool line_seq(const char *line, char sid[33], uint64_t *seq)
{
	const char *s = strstr(line, "\"stream_id\":\""), *q = strstr(line, "\"seq\":\"");

	if (!s || !q)
		return false;
	snprintf(sid, 33, "%.32s", s + 13);
	*seq = strtoull(q + 7, NULL, 10);
	return true;
}

/* Every seq of stream (or of the first stream seen when stream is "") in a JSON-lines file. */
static void read_seen(const char *path, const char *stream, struct seen *out)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;

	memset(out, 0, sizeof(*out));
	snprintf(out->stream, sizeof(out->stream), "%s", stream);
	while (f && getline(&line, &cap, f) > 0) {
		char sid[33];
		uint64_t seq;

		out->lines++;
		if (!line_seq(line, sid, &seq))
			continue;
		if (!out->stream[0])
			snprintf(out->stream, sizeof(out->stream), "%s", sid);
		if (strcmp(sid, out->stream))
			continue;
		if (out->n == out->cap) {
			out->cap = out->cap ? out->cap * 2 : 1024;
			out->order = realloc(out->order, out->cap * sizeof(*out->order));
		}
		out->order[out->n++] = seq;
		if (seq > out->max)
			out->max = seq;
	}
	free(line);
	if (f)
		fclose(f);
}

/* The highest seq egretd has written to the instance's file sink, and its stream id. */
static uint64_t file_max_seq(char sid[33])
{
	struct events evs;
	uint64_t max = 0;

	if (events_read(T->sink_path, &evs))
		return 0;
	for (size_t i = 0; i < evs.n; i++) {
		if (evs.ev[i]->seq > max)
			max = evs.ev[i]->seq;
		if (sid)
			snprintf(sid, 33, "%s", evs.ev[i]->stream_id);
	}
	events_free(&evs);
	return max;
}

/* Wait until path has every seq up to the file sink's highest (taken once the load is over). */
static void wait_caught_up(const char *path, const char *stream, uint64_t max, int timeout_ms)
{
	struct seen s;

	timeout_ms *= (int)harness_timeout_scale(); /* an emulated guest is slower */
	for (int waited = 0; waited < timeout_ms; waited += 200) {
		read_seen(path, stream, &s);
		free(s.order);
		if (s.max >= max)
			return;
		usleep(200000);
	}
}

/* ---- load ------------------------------------------------------------------------------------ */

/* In the sandbox: create and delete a file every ms for `seconds` (two events each). */
static int file_churn(void *arg)
{
	double seconds = *(double *)arg;
	uint64_t end = now_ns(CLOCK_MONOTONIC) + (uint64_t)(seconds * 1e9);
	char path[64];

	snprintf(path, sizeof(path), "/tmp/egret-load-%d", getpid());
	while (now_ns(CLOCK_MONOTONIC) < end) {
		int fd = open(path, O_CREAT | O_WRONLY, 0600);

		if (fd >= 0)
			close(fd);
		unlink(path);
		usleep(1000);
	}
	return 0;
}

static void start_load(double seconds)
{
	static double s;

	s = seconds;
	load_pid = fork();
	cr_assert(load_pid >= 0);
	if (load_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		_exit(in_sandbox(T, LOAD_SANDBOX, file_churn, &s));
	}
}

static void wait_load(void)
{
	int status;

	cr_assert_eq(waitpid(load_pid, &status, 0), load_pid);
	load_pid = 0;
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "load failed: %#x", status);
}

/* ---- tests ------------------------------------------------------------------------------------ */

/* Every seq 1..max arrives, none missing; first arrivals in order. */
static void expect_complete(const struct seen *s, uint64_t max)
{
	bool *got = calloc(max + 1, 1);
	uint64_t dup = 0, prev = 0, missing = 0, first = 0, disorder = 0;

	for (size_t i = 0; i < s->n; i++) {
		uint64_t q = s->order[i];

		if (q > max)
			continue;
		if (got[q]) {
			dup++;
			continue;
		}
		got[q] = true;
		if (q < prev && !disorder++)
			cr_log_error("seq %llu arrived (first) after %llu", (unsigned long long)q,
				     (unsigned long long)prev);
		prev = q;
	}
	for (uint64_t q = 1; q <= max; q++) {
		if (!got[q] && !missing++)
			first = q;
	}
	cr_expect_eq(missing, 0, "%llu of %llu events never arrived, the first %llu",
		     (unsigned long long)missing, (unsigned long long)max,
		     (unsigned long long)first);
	cr_expect_eq(disorder, 0, "%llu events arrived out of order", (unsigned long long)disorder);
	cr_log_info("%llu events, %llu duplicates after the receiver's outages",
		    (unsigned long long)max, (unsigned long long)dup);
	free(got);
}

Test(delivery, a_receiver_outage_loses_nothing)
{
	char uri[64], src[64], out[PATH_MAX + 16], sid[33];
	const char *extra[] = { "--sink", uri, NULL };
	uint16_t port = free_port();
	struct seen s;
	uint64_t max;
	pid_t rx;

	snprintf(uri, sizeof(uri), "tcp://127.0.0.1:%u?ack", port);
	snprintf(src, sizeof(src), "tcp-listen://127.0.0.1:%u", port);
	snprintf(out, sizeof(out), "%s/received.jsonl", T->tmpdir);
	rx = start_tail(src, out, port, NULL);
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
	start_load(6);
	sleep(1);
	/* the receiver stops reading for a while: egretd spools */
	kill(rx, SIGSTOP);
	sleep(2);
	kill(rx, SIGCONT);
	sleep(1);
	/* then dies mid-stream, and a new one comes up a second later */
	kill(rx, SIGKILL);
	waitpid(rx, NULL, 0);
	receivers[0] = 0;
	sleep(1);
	start_tail(src, out, port, NULL);
	wait_load();
	usleep(300000);
	max = file_max_seq(sid);
	/* a slower machine (an emulated one: tests/kernels) makes fewer events in 6 s */
	for (int i = 0; i < 10 && max <= 3000; i++) {
		start_load(2);
		wait_load();
		usleep(300000);
		max = file_max_seq(sid);
	}
	cr_assert_gt(max, 3000, "too little load: %llu events", (unsigned long long)max);
	wait_caught_up(out, sid, max, 20000);
	read_seen(out, sid, &s);
	expect_complete(&s, max);
	free(s.order);
}

static bool is_spool_loss(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_LOSS &&
	       ev->loss->source == EGRET__V1__LOSS__SOURCE__SOURCE_SPOOL &&
	       !strcmp(ev->loss->sink, arg);
}

Test(delivery, the_spool_limit_reports_exactly_what_was_evicted)
{
	char uri[64], src[64], out[PATH_MAX + 16], sid[33];
	const char *extra[] = { "--sink", uri, "--spool-max", "256K", NULL };
	uint16_t port = free_port();
	struct events evs;
	struct seen s;
	uint64_t max, lost = 0, both = 0, missing = 0, first_missing = 0;
	bool *got;
	int err;

	snprintf(uri, sizeof(uri), "tcp://127.0.0.1:%u?ack", port);
	snprintf(src, sizeof(src), "tcp-listen://127.0.0.1:%u", port);
	snprintf(out, sizeof(out), "%s/received.jsonl", T->tmpdir);
	/* no receiver yet: everything for it waits in a spool too small to hold it */
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
	start_load(3);
	wait_load();
	/* a slower machine (an emulated one: tests/kernels) needs more than 3 s to fill 256K */
	for (int i = 0; (err = events_wait(T->sink_path, is_spool_loss, uri, 5000, &evs)) && i < 10;
	     i++) {
		events_free(&evs);
		start_load(2);
		wait_load();
	}
	cr_assert_eq(err, 0, "no eviction reported");
	events_free(&evs);
	start_tail(src, out, port, NULL);
	usleep(500000);
	max = file_max_seq(sid);
	/* the sink retries with a backoff that has grown to as much as 30 s (+25% jitter) */
	wait_caught_up(out, sid, max, 45000);
	cr_assert_eq(events_read(T->sink_path, &evs), 0);
	read_seen(out, sid, &s);
	got = calloc(max + 1, 1);
	for (size_t i = 0; i < s.n; i++)
		if (s.order[i] <= max)
			got[s.order[i]] = true;
	/* every reported range: exactly what the receiver did not get */
	for (size_t i = 0; i < evs.n; i++) {
		const Egret__V1__Loss *l = evs.ev[i]->loss;

		if (!is_spool_loss(evs.ev[i], uri))
			continue;
		cr_expect_eq(l->count, l->last_seq - l->first_seq + 1);
		cr_log_info("evicted: %llu-%llu", (unsigned long long)l->first_seq,
			    (unsigned long long)l->last_seq);
		for (uint64_t q = l->first_seq; q <= l->last_seq && q <= max; q++) {
			both += got[q];
			got[q] = true;
			lost++;
		}
	}
	for (uint64_t q = 1; q <= max; q++) {
		if (!got[q] && !missing++)
			first_missing = q;
	}
	cr_expect_eq(both, 0, "%llu events reported evicted were delivered",
		     (unsigned long long)both);
	cr_expect_eq(missing, 0, "%llu events neither delivered nor reported lost, the first %llu",
		     (unsigned long long)missing, (unsigned long long)first_missing);
	cr_expect_gt(lost, 0);
	cr_log_info("%llu events, %llu evicted and reported", (unsigned long long)max,
		    (unsigned long long)lost);
	free(got);
	free(s.order);
	events_free(&evs);
}

/* egretd stops while its receiver is down; the next egretd delivers the old stream first. A
 * record cut short and garbage at the end of the spool are reported, not replayed.
 */
Test(delivery, a_restart_delivers_what_was_spooled_and_reports_damage)
{
	char uri[64], src[64], out[PATH_MAX + 16], sid[33], seg[PATH_MAX + 64];
	const char *extra[] = { "--sink", uri, NULL };
	uint16_t port = free_port();
	struct events evs;
	struct seen s;
	uint64_t max;
	int fd;

	snprintf(uri, sizeof(uri), "tcp://127.0.0.1:%u?ack", port);
	snprintf(src, sizeof(src), "tcp-listen://127.0.0.1:%u", port);
	snprintf(out, sizeof(out), "%s/received.jsonl", T->tmpdir);
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
	start_load(1);
	wait_load();
	usleep(300000);
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	max = file_max_seq(sid);
	/* the first run's segment is 00000000000000000001.seg: a half record after its end */
	snprintf(seg, sizeof(seg), "%s/%020d.seg", T->spool_dir, 1);
	fd = open(seg, O_WRONLY | O_APPEND);
	cr_assert_geq(fd, 0, "%s: %s", seg, strerror(errno));
	cr_assert_eq(write(fd, "\x80\x01partial", 9), 9);
	close(fd);
	start_tail(src, out, port, NULL);
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not restart:\n%s", harness_log(T));
	wait_caught_up(out, sid, max, 20000);
	read_seen(out, sid, &s);
	expect_complete(&s, max);
	free(s.order);
	cr_assert_eq(events_read(T->sink_path, &evs), 0);
	{
		bool damage = false;

		for (size_t i = 0; i < evs.n; i++)
			damage |= evs.ev[i]->payload_case == EGRET__V1__EVENT__PAYLOAD_LOSS &&
				  evs.ev[i]->loss->source ==
					  EGRET__V1__LOSS__SOURCE__SOURCE_SPOOL_DAMAGED &&
				  evs.ev[i]->loss->count == 9;
		cr_expect(damage, "the 9 damaged bytes were not reported");
	}
	events_free(&evs);
}

/* The highest seq of stream in the instance's file sink. */
static uint64_t stream_max_seq(const char *stream)
{
	struct events evs;
	uint64_t max = 0;

	if (events_read(T->sink_path, &evs))
		return 0;
	for (size_t i = 0; i < evs.n; i++) {
		if (!strcmp(evs.ev[i]->stream_id, stream) && evs.ev[i]->seq > max)
			max = evs.ev[i]->seq;
	}
	events_free(&evs);
	return max;
}

/* Lines of a JSON-lines file that are Loss events, or of a stream other than the two given. */
/* Loss events that lost something: a restart's gap with nothing lost (count 0) is apart. */
static void count_foreign(const char *path, const char *s1, const char *s2, size_t *loss,
			  size_t *other, size_t *gaps)
{
	FILE *f = fopen(path, "r");
	char *line = NULL, sid[33];
	size_t cap = 0;
	uint64_t seq;

	*loss = *other = *gaps = 0;
	while (f && getline(&line, &cap, f) > 0) {
		bool gap =
			strstr(line, "\"loss\":{\"source\":\"SOURCE_AGENT_GAP\",\"count\":\"0\"");

		*gaps += gap;
		*loss += !gap && strstr(line, "\"loss\":{") != NULL;
		*other += line_seq(line, sid, &seq) && strcmp(sid, s1) && strcmp(sid, s2);
	}
	free(line);
	if (f)
		fclose(f);
}

/* A second egretd on the first's paths (with only the file sink, so it would think the spool
 * delivered) while events are spooled for a tcp sink that is down: it exits 1 at once naming
 * the first. The first, restarted, then delivers its backlog to a receiver that comes up:
 * every seq of the first stream, no gap, no Loss event but the restart's (nothing lost), and
 * no event of a third stream.
 */
Test(delivery, a_second_egretd_leaves_the_backlog_alone)
{
	char uri[64], src[64], out[PATH_MAX + 16], sid[33], sid2[33], expect[PATH_MAX + 64];
	const char *extra[] = { "--sink", uri, NULL };
	uint16_t port = free_port();
	struct egret_instance second;
	size_t loss, other, gaps;
	struct seen s;
	uint64_t max;
	int rc;

	snprintf(uri, sizeof(uri), "tcp://127.0.0.1:%u?ack", port);
	snprintf(src, sizeof(src), "tcp-listen://127.0.0.1:%u", port);
	snprintf(out, sizeof(out), "%s/received.jsonl", T->tmpdir);
	/* no receiver: everything for the tcp sink waits in the spool, which grows meanwhile */
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
	start_load(4);
	sleep(1);
	cr_assert_gt(file_max_seq(sid), 100, "too little backlog");
	second = *T;
	snprintf(second.log_path, sizeof(second.log_path), "%s/second.log", T->tmpdir);
	rc = harness_start(&second, NULL);
	if (rc == 0)
		harness_stop(&second, SIGKILL);
	cr_expect_eq(rc, 1, "the second egretd: %d\n%s", rc, harness_log(&second));
	snprintf(expect, sizeof(expect), "state dir %s is in use by egretd (pid %d)", T->state_dir,
		 (int)T->egretd);
	cr_expect(strstr(harness_log(&second), expect), "expected '%s' in:\n%s", expect,
		  harness_log(&second));
	wait_load();
	usleep(300000);
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	max = stream_max_seq(sid);
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not restart:\n%s", harness_log(T));
	file_max_seq(sid2);
	start_tail(src, out, port, NULL);
	wait_caught_up(out, sid, max, 20000);
	read_seen(out, sid, &s);
	expect_complete(&s, max);
	free(s.order);
	count_foreign(out, sid, sid2, &loss, &other, &gaps);
	cr_expect_eq(loss, 0, "%zu Loss events delivered", loss);
	cr_expect_eq(other, 0, "%zu events of a third stream delivered", other);
	/* the first's restart, not the second egretd, which never ran */
	cr_expect_eq(gaps, 1, "%zu gaps reported for one restart", gaps);
}

static int connect_metadata(void *arg)
{
	(void)arg;
	return tcp_connect("169.254.169.254", 80, AF_INET, 500) == EPERM ? 0 : 1;
}

static bool rotated_twice(const char *path)
{
	char p[PATH_MAX + 16];
	struct stat st;

	snprintf(p, sizeof(p), "%s.2", path);
	return stat(p, &st) == 0;
}

/* the same from a process whose name is not UTF-8 (a surrogate, ED A0 80): protobuf requires
 * valid UTF-8 in string fields, and the receiver's decoder refuses a request without it
 */
static int connect_metadata_bad_name(void *arg)
{
	prctl(PR_SET_NAME,
	      "\xed\xa0\x80"
	      "box",
	      0, 0, 0);
	return connect_metadata(arg);
}

/* the deny record, decoded, in a receiver's output so far */
static bool otlp_deny_in(const char *out)
{
	FILE *f = fopen(out, "r");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;

	while (f && !found && getline(&line, &cap, f) > 0)
		found = strstr(line, "\"egret.net_connect\"") &&
			strstr(line, "\"egret.verdict\": \"VERDICT_DENY\"") &&
			strstr(line, "\"destination.address\": \"169.254.169.254\"");
	free(line);
	if (f)
		fclose(f);
	return found;
}

/* A gzipped sink to a receiver that refuses its first request, beside a ?compression=none one */
Test(delivery, otlp_records_decode_with_an_independent_implementation)
{
	char uri[96], out[PATH_MAX + 16], portstr[8], script[PATH_MAX];
	char uri2[128], out2[PATH_MAX + 16], portstr2[8];
	const char *extra[] = { "--sink", uri, "--sink", uri2, NULL };
	uint16_t port = free_port(), port2 = free_port();
	char *argv[] = { "/usr/bin/python3", script, EGRET_OTLP_PY_DIR, portstr, out, "1", NULL };
	char *argv2[] = { "/usr/bin/python3", script, EGRET_OTLP_PY_DIR, portstr2, out2, NULL };
	char *line = NULL;
	size_t cap = 0;
	bool deny = false, start = false, gzip = false, plain = false;
	double refused_at = 0, ok_at = 0;
	FILE *f;

	snprintf(script, sizeof(script), "%s/tests/tools/otlp_receiver.py", EGRET_SOURCE_DIR);
	snprintf(portstr, sizeof(portstr), "%u", port);
	snprintf(uri, sizeof(uri), "otlp+http://127.0.0.1:%u/v1/logs", port);
	snprintf(out, sizeof(out), "%s/otlp.jsonl", T->tmpdir);
	start_receiver(argv, out, port, NULL);
	cr_assert_neq(port2, port);
	snprintf(portstr2, sizeof(portstr2), "%u", port2);
	snprintf(uri2, sizeof(uri2), "otlp+http://127.0.0.1:%u/v1/logs?compression=none", port2);
	snprintf(out2, sizeof(out2), "%s/otlp-plain.jsonl", T->tmpdir);
	start_receiver(argv2, out2, port2, NULL);
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
	/* a denied connect from a sandbox, to the metadata address inside the test's netns */
	cr_assert_eq(netns_addr("lo", "169.254.169.254/32"), 0);
	cr_expect_eq(in_sandbox(T, "otlp-box", connect_metadata_bad_name, NULL), 0,
		     "the connect got through");
	for (int waited = 0; waited < 15000 * (int)harness_timeout_scale() && !deny;
	     waited += 250) {
		usleep(250000);
		f = fopen(out, "r");
		while (f && getline(&line, &cap, f) > 0) {
			deny |= strstr(line, "\"egret.net_connect\"") &&
				strstr(line, "\"egret.verdict\": \"VERDICT_DENY\"") &&
				strstr(line, "\"egret.sandbox.name\": \"otlp-box\"") &&
				strstr(line, "\"ocsf.class_uid\": 4001") &&
				strstr(line, "\"destination.address\": \"169.254.169.254\"") &&
				strstr(line, "\"process.pid\": ") &&
				strstr(line, "\"process.executable.name\": "
					     "\"\\ufffd\\ufffd\\ufffdbox\"") &&
				strstr(line, "\\\"event\\\":\\\"net_connect\\\"") &&
				strstr(line, "\"severity\": 13");
			start |= strstr(line, "\"egret.agent\"") &&
				 strstr(line, "\"service.name\": \"egret\"") &&
				 strstr(line, "\"host.name\"");
			if (strstr(line, "\"request\": 1,") && strstr(line, "\"status\": 503"))
				refused_at = strtod(strstr(line, "\"time\": ") + 8, NULL);
			if (strstr(line, "\"request\": 2,") && strstr(line, "\"status\": 200")) {
				ok_at = strtod(strstr(line, "\"time\": ") + 8, NULL);
				gzip = strstr(line, "\"encoding\": \"gzip\"");
			}
		}
		if (f)
			fclose(f);
	}
	free(line);
	line = NULL;
	cap = 0;
	cr_expect(deny, "no decodable deny record with its attributes; got:\n%s", out);
	cr_expect(start, "no agent start record with resource attributes");
	cr_expect(gzip, "the request was not gzipped");
	/* the plain sink's receiver decoded the same record from a request with no
	 * Content-Encoding
	 */
	for (int waited = 0; waited < 15000 * (int)harness_timeout_scale() && !otlp_deny_in(out2);
	     waited += 250)
		usleep(250000);
	cr_expect(otlp_deny_in(out2), "no decodable deny record from the plain sink");
	f = fopen(out2, "r");
	while (f && getline(&line, &cap, f) > 0)
		plain |= strstr(line, "\"status\": 200") && strstr(line, "\"encoding\": \"\"");
	if (f)
		fclose(f);
	free(line);
	cr_expect(plain, "the plain sink's requests were not sent as they are");
	cr_expect_gt(refused_at, 0, "the receiver never refused");
	cr_expect_geq(ok_at - refused_at, 0.9, "sent again %.2f s after a 503 with Retry-After: 1",
		      ok_at - refused_at);
}

Test(delivery, unix_sink_and_following_a_rotating_file)
{
	char usink[PATH_MAX + 16], usrc[PATH_MAX + 16], upath[PATH_MAX], uout[PATH_MAX + 16];
	char fsink[PATH_MAX + 32], fpath[PATH_MAX], fout[PATH_MAX + 16], sid[33];
	const char *extra[] = { "--sink", usink, "--sink", fsink, NULL };
	char *follow[] = { EGRETCTL_BIN, "tail", "--follow", fpath, NULL };
	struct seen s;
	uint64_t max;

	snprintf(upath, sizeof(upath), "%s/siem.sock", T->tmpdir);
	snprintf(usink, sizeof(usink), "unix:%s", upath);
	snprintf(usrc, sizeof(usrc), "unix-listen:%s", upath);
	snprintf(uout, sizeof(uout), "%s/unix.jsonl", T->tmpdir);
	snprintf(fpath, sizeof(fpath), "%s/rotating.pb", T->tmpdir);
	snprintf(fsink, sizeof(fsink), "file:%s?max_size=64K&keep=50", fpath);
	snprintf(fout, sizeof(fout), "%s/follow.jsonl", T->tmpdir);
	start_tail(usrc, uout, 0, upath);
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
	start_receiver(follow, fout, 0, fpath);
	start_load(2);
	wait_load();
	/* a slower machine (an emulated one: tests/kernels) needs more than 2 s to fill two files */
	for (int i = 0; i < 10 && !rotated_twice(fpath); i++) {
		start_load(2);
		wait_load();
	}
	usleep(300000);
	max = file_max_seq(sid);
	wait_caught_up(uout, sid, max, 15000);
	read_seen(uout, sid, &s);
	expect_complete(&s, max);
	free(s.order);
	wait_caught_up(fout, sid, max, 15000);
	read_seen(fout, sid, &s);
	expect_complete(&s, max);
	free(s.order);
	cr_expect(rotated_twice(fpath), "the file sink did not rotate twice");
}

static bool is_heartbeat(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_HEARTBEAT && ev->heartbeat->last_seq;
}

Test(delivery, heartbeat_and_stdout_json)
{
	const char *extra[] = { "--heartbeat", "1", "--sink", "stdout", "--format", "json", NULL };
	struct events evs;
	const Egret__V1__Heartbeat *hb;
	bool json = false;
	char buf[65536];

	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
	cr_assert_eq(events_wait(T->sink_path, is_heartbeat, NULL, 5000, &evs), 0);
	hb = events_find(&evs, is_heartbeat, NULL, NULL)->heartbeat;
	cr_expect_eq(hb->n_sinks, 2);
	cr_expect(hb->sinks[0]->up);
	cr_expect_eq(hb->spool_limit_bytes, 1ull << 30);
	cr_expect_gt(hb->n_counters, 10);
	events_free(&evs);
	/* egretd's stdout goes to the instance log */
	if (read_file(T->log_path, buf, sizeof(buf)) > 0)
		json = strstr(buf, "{\"stream_id\":\"") &&
		       strstr(buf, "\"agent\":{\"kind\":\"KIND_START\"");
	cr_expect(json, "no JSON events on stdout:\n%s", buf);
}
