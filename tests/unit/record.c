/* Kernel records decoded into events without a kernel (collector__record): each record sits at
 * the very end of a page followed by an inaccessible one, so a decoder that trusts a length
 * field past the record's end faults instead of reading the ring buffer's next bytes.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <linux/types.h>

#include "collector.h"
#include "decoders.h"
#include "egret/audit.h"
#include "egret/confine.h"
#include "egret/egress.h"
#include "stream.h"

static struct stream stream;
static struct sandbox_names names;
static struct collector col;
static char *page_end;
static char last_args[256], last_path[2][256], last_env[256];
static size_t last_env_len;
static bool last_has_token; /* "TOKEN" in the event's protobuf */
static int events;
static const char *last_flow_comm;
static char last_flow_comm_buf[EGRET_COMM_LEN + 1];
static uint32_t last_flow_pid;
static uint64_t last_flow_duration, last_flow_sandbox;
static bool last_flow_unknown;

static void observe(void *ctx, const Egret__V1__Event *ev, const struct env_block *env)
{
	static uint8_t packed[65536];
	size_t len = egret__v1__event__get_packed_size(ev);

	events++;
	last_has_token = len <= sizeof(packed) && egret__v1__event__pack(ev, packed) == len &&
			 memmem(packed, len, "TOKEN", 5);
	last_env_len = env ? env->len : (size_t)-1;
	if (env && env->len <= sizeof(last_env))
		memcpy(last_env, env->vars, env->len);
	if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD_EXEC) {
		size_t n = 0;

		for (size_t i = 0; i < ev->exec->n_args; i++)
			n += (size_t)snprintf(last_args + n, sizeof(last_args) - n, "%s%s",
					      i ? " " : "", ev->exec->args[i]);
	} else if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD_FLOW) {
		snprintf(last_flow_comm_buf, sizeof(last_flow_comm_buf), "%s",
			 ev->process && ev->process->comm ? ev->process->comm : "");
		last_flow_comm = last_flow_comm_buf;
		last_flow_pid = ev->process ? ev->process->pid : 0;
		last_flow_sandbox = ev->sandbox ? ev->sandbox->cgroup_id : 0;
		last_flow_duration = ev->flow->duration_ns;
		last_flow_unknown = ev->flow->start_unknown;
	} else if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD_FILE) {
		snprintf(last_path[0], sizeof(last_path[0]), "%s", ev->file->path);
		snprintf(last_path[1], sizeof(last_path[1]), "%s",
			 ev->file->new_path ? ev->file->new_path : "");
	}
}

static void setup(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *map =
		mmap(NULL, 8 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(mprotect(map + 7 * page, page, PROT_NONE), 0);
	page_end = map + 7 * page;
	stream__init(&stream);
	cr_assert_eq(sandbox_names__init(&names, "/nonexistent/egret-unit"), 0);
	cr_assert_eq(collector__init_offline(&col, &stream, &names), 0);
	cr_assert_eq(decoders__register(&col), 0);
	col.ctx.hooks.observe = observe;
}

static void teardown(void)
{
	collector__free(&col);
	sandbox_names__free(&names);
	stream__free(&stream);
}

TestSuite(record, .init = setup, .fini = teardown);

/* rec[0..size) handed over as the ring buffer would (8-byte aligned), ending where the
 * readable memory ends when size is a multiple of 8
 */
static void feed(const void *rec, size_t size)
{
	char *at = page_end - ((size + 7) & ~(size_t)7);

	memcpy(at, rec, size);
	collector__record(&col, at, size);
}

static void hdr(struct egret_event_hdr *h, __u32 type)
{
	memset(h, 0, sizeof(*h));
	h->type = type;
	h->pid = 42;
	memcpy(h->comm, "sh", 2);
}

Test(record, exec_lengths_past_the_record_are_a_bad_record)
{
	static struct egret_exec_event e;
	static const char args[] = "sh\0-c\0true"; /* 11 bytes, with 7 + 6 more: 8-aligned */
	size_t base = offsetof(struct egret_exec_event, data);
	uint64_t bad;

	hdr(&e.hdr, EGRET_EV_EXEC);
	e.args_len = sizeof(args);
	e.exe_len = 7;
	e.cwd_len = 6;
	memcpy(e.data, args, sizeof(args));
	memcpy(e.data + sizeof(args), "/bin/sh/tmp/x", 13);
	cr_assert_eq((base + sizeof(args) + 13) % 8, 0);
	feed(&e, base + sizeof(args) + 13);
	cr_expect_eq(events, 1);
	cr_expect_str_eq(last_args, "sh -c true");
	bad = col.bad_records;
	/* the lengths claim more than the record holds */
	e.cwd_len = 1000;
	feed(&e, base + sizeof(args) + 13);
	e.cwd_len = 6;
	e.args_len = 4000;
	feed(&e, base + sizeof(args) + 13);
	e.args_len = EGRET_ARGS_MAX + 1;
	feed(&e, sizeof(e));
	cr_expect_eq(col.bad_records, bad + 3, "bad records: %llu",
		     (unsigned long long)(col.bad_records - bad));
	cr_expect_eq(events, 1, "an exec event from a record that does not hold its strings");
}

/* A manager's exec carries its environment after the cwd: to the observer only, never into
 * the event; cut by the kernel, its last (partial) variable is left out.
 */
Test(record, an_exec_environment_goes_to_the_observer_only)
{
	static struct egret_exec_event e;
	static const char args[] = "pip\0install";   /* 12 bytes */
	static const char env[] = "A=1\0TOKEN=s3cr"; /* 15 bytes with its NUL */
	size_t base = offsetof(struct egret_exec_event, data), n;
	uint64_t bad;

	hdr(&e.hdr, EGRET_EV_EXEC);
	e.args_len = sizeof(args);
	e.exe_len = 7;
	e.cwd_len = 1;
	memcpy(e.data, args, sizeof(args));
	memcpy(e.data + sizeof(args), "/bin/sh/", 8);
	memcpy(e.data + sizeof(args) + 8, env, sizeof(env) - 1);
	n = base + sizeof(args) + 8 + sizeof(env) - 1; /* 14 bytes of environment */
	e.env_len = sizeof(env) - 1;
	events = 0;
	feed(&e, n + (8 - n % 8) % 8);
	cr_assert_eq(events, 1);
	cr_expect_str_eq(last_args, "pip install");
	cr_assert_eq(last_env_len, 14);
	cr_expect_eq(memcmp(last_env, env, 14), 0);
	cr_expect_not(last_has_token, "the environment in the event");
	e.flags = EGRET_EXEC_ENV_CUT;
	feed(&e, n + (8 - n % 8) % 8);
	cr_expect_eq(last_env_len, 4, "the cut variable kept: %zu bytes", last_env_len);
	/* no environment: NULL; one past the record or of EGRET_ENV_MAX: a bad record */
	e.flags = 0;
	e.env_len = 0;
	feed(&e, n + (8 - n % 8) % 8);
	cr_expect_eq(last_env_len, (size_t)-1);
	bad = col.bad_records;
	e.env_len = 100;
	feed(&e, n + (8 - n % 8) % 8);
	e.env_len = EGRET_ENV_MAX;
	feed(&e, sizeof(e));
	cr_expect_eq(col.bad_records, bad + 2);
	cr_expect_eq(events, 3);
}

Test(record, file_paths_past_the_record_are_a_bad_record)
{
	static struct egret_file_event f;
	size_t base = offsetof(struct egret_file_event, data);
	uint64_t bad;

	hdr(&f.hdr, EGRET_EV_FILE);
	f.op = EGRET_FILE_RENAME;
	f.path_len = 8;
	f.path2_len = 8;
	memcpy(f.data, "/tmp/aaa", 8);
	memcpy(f.data + EGRET_PATH_MAX, "/tmp/bbb", 8);
	feed(&f, base + EGRET_PATH_MAX + 8);
	cr_expect_eq(events, 1);
	cr_expect_str_eq(last_path[0], "/tmp/aaa");
	cr_expect_str_eq(last_path[1], "/tmp/bbb");
	bad = col.bad_records;
	/* a rename whose record ends after the first path (the kernel sends the new path at a
	 * fixed offset); paths longer than the record
	 */
	feed(&f, base + 8);
	f.op = EGRET_FILE_CREATE;
	f.path_len = 600;
	feed(&f, base + 8);
	f.path_len = EGRET_PATH_MAX + 1;
	feed(&f, sizeof(f));
	cr_expect_eq(col.bad_records, bad + 3);
	cr_expect_eq(events, 1);
}

Test(record, short_and_unknown_records_are_bad_records)
{
	struct egret_event_hdr h;
	uint64_t bad = col.bad_records;

	hdr(&h, EGRET_EV_EXIT);
	feed(&h, sizeof(h)); /* an exit record is longer than its header */
	feed(&h, 3);
	hdr(&h, 999);
	feed(&h, sizeof(h));
	cr_expect_eq(col.bad_records, bad + 3);
	cr_expect_eq(events, 0);
}

/* A timestamp no kernel sends (the record's field is just bytes) overflowed the conversion to
 * Unix time, undefined behaviour (UBSan stops the unit suite's sanitizer build on it).
 */
Test(record, any_timestamp_converts)
{
	struct egret_fork_event f;

	hdr(&f.hdr, EGRET_EV_FORK);
	f.exec_id = 1;
	f.child_pid = 43;
	f.pad = 0;
	f.hdr.ts_ns = INT64_MAX - 5;
	feed(&f, sizeof(f));
	f.hdr.ts_ns = UINT64_MAX;
	feed(&f, sizeof(f));
	cr_expect_eq(events, 2);
}

/* an allowed TCP connect by pid in sandbox at ts, its socket's cookie in the record */
static void tcp_connect_rec(uint64_t cookie, uint64_t ts, uint32_t pid, uint64_t sandbox)
{
	struct egret_connect_event c;

	memset(&c, 0, sizeof(c));
	hdr(&c.hdr, EGRET_EV_CONNECT);
	c.hdr.ts_ns = ts;
	c.hdr.pid = c.hdr.tid = pid;
	c.hdr.sandbox_id = sandbox;
	c.family = 2;
	c.protocol = 6;
	c.hook = EGRET_HOOK_CONNECT4;
	c.verdict = EGRET_VERDICT_ALLOW;
	c.reason = EGRET_REASON_ALLOW_RULE;
	c.cookie = cookie;
	feed(&c, sizeof(c));
}

/* the socket's flow record at ts as the kernel sends it: by cookie, no starter, or pid's from
 * the socket's storage; an event or none
 */
static void tcp_flow_rec_any(uint64_t cookie, uint64_t ts, uint32_t pid, uint64_t sandbox)
{
	struct egret_flow_event f;

	memset(&f, 0, sizeof(f));
	hdr(&f.hdr, EGRET_EV_FLOW);
	f.hdr.ts_ns = ts;
	f.hdr.sandbox_id = sandbox;
	f.hdr.pid = f.hdr.tid = pid;
	if (!pid)
		memset(f.hdr.comm, 0, sizeof(f.hdr.comm));
	f.duration_ns = pid ? 123 : 0;
	f.protocol = 6;
	f.family = 2;
	f.by_cookie = !pid;
	f.cookie = cookie;
	f.bytes_out = 10;
	feed(&f, sizeof(f));
}

/* the same, and its event */
static void tcp_flow_rec(uint64_t cookie, uint64_t ts, uint32_t pid, uint64_t sandbox)
{
	last_flow_comm = NULL;
	tcp_flow_rec_any(cookie, ts, pid, sandbox);
	cr_assert(last_flow_comm, "no flow event");
}

Test(record, a_tcp_flow_is_joined_to_its_connect_by_cookie)
{
	const struct flow_starts *fl = &col.ctx.flows;

	tcp_connect_rec(7, 1000, 42, 5);
	tcp_connect_rec(7, 2000, 43, 5); /* retried: the first connect started the flow */
	cr_expect_eq(fl->h.used, 1);
	tcp_flow_rec(7, 5000, 0, 5);
	cr_expect_eq(last_flow_pid, 42);
	cr_expect_str_eq(last_flow_comm, "sh");
	cr_expect_eq(last_flow_duration, 4000);
	cr_expect_eq(last_flow_sandbox, 5);
	cr_expect_not(last_flow_unknown);
	cr_expect_eq(fl->h.used, 0, "the connect is forgotten once its flow closed");
	cr_expect_eq(fl->joined, 1);
	/* the same cookie again, or one never seen: a flow whose start egretd does not hold */
	tcp_flow_rec(7, 6000, 0, 5);
	cr_expect(last_flow_unknown);
	cr_expect_eq(last_flow_pid, 0);
	cr_expect_eq(last_flow_duration, 0);
	cr_expect_eq(last_flow_sandbox, 5, "the sandbox comes from the socket's cgroup");
	cr_expect_eq(fl->unjoined, 1);
	/* a socket with storage (a connect's record was dropped) and a connect held: the earlier
	 * started the flow (the storage's began at 8000 - 123), and the held connect goes
	 */
	tcp_connect_rec(9, 7950, 44, 5);
	tcp_flow_rec(9, 8000, 50, 5);
	cr_expect_eq(last_flow_pid, 50);
	cr_expect_eq(last_flow_duration, 123);
	cr_expect_not(last_flow_unknown);
	cr_expect_eq(fl->h.used, 0);
	tcp_connect_rec(9, 7000, 44, 5);
	tcp_flow_rec(9, 8000, 50, 5);
	cr_expect_eq(last_flow_pid, 44);
	cr_expect_eq(last_flow_duration, 1000);
	cr_expect_eq(fl->h.used, 0);
	/* a socket in no sandbox, its cgroup removed, that egretd held nothing for: no event */
	last_flow_comm = "none";
	tcp_flow_rec_any(12, 9000, 0, ~0ull);
	cr_expect_str_eq(last_flow_comm, "none", "a flow of a socket in no sandbox was reported");
	cr_expect_eq(fl->foreign, 1);
}

static void sandbox_gone(uint64_t sandbox, uint64_t ts)
{
	struct egret_cgroup_event c;

	memset(&c, 0, sizeof(c));
	hdr(&c.hdr, EGRET_EV_CGROUP);
	c.hdr.ts_ns = ts;
	c.cgroup_id = sandbox;
	c.op = EGRET_CG_DESTROYED;
	memcpy(c.name, "box", 3);
	feed(&c, sizeof(c));
}

/* A sandbox holding many connections open cannot grow egretd past --max-tcp-flows; a gone
 * sandbox's connects are forgotten once its sockets had time to close.
 */
Test(record, one_sandbox_holds_no_more_than_its_share)
{
	struct flow_starts *fl = &col.ctx.flows;

	fl->max_per = 2;
	for (uint64_t cookie = 1; cookie <= 4; cookie++)
		tcp_connect_rec(cookie, 1000 + cookie, 42, 5);
	tcp_connect_rec(20, 2000, 43, 6);
	cr_expect_eq(fl->h.used, 3, "another sandbox's connect was not held");
	cr_expect_eq(fl->over_quota, 2);
	tcp_flow_rec(3, 3000, 0, 5);
	cr_expect(last_flow_unknown);
	tcp_flow_rec(1, 3000, 0, 5);
	cr_expect_not(last_flow_unknown);
	/* room again: held */
	tcp_connect_rec(30, 3100, 42, 5);
	tcp_flow_rec(30, 3200, 0, 5);
	cr_expect_not(last_flow_unknown);
	cr_expect_eq(last_flow_duration, 100);
}

/* A sandbox whose first connect came while all held the bound for all gets its share once
 * there is room (its count did not go wrong on the refusal).
 */
Test(record, a_sandbox_refused_at_the_bound_for_all_is_held_later)
{
	struct flow_starts *fl = &col.ctx.flows;

	fl->max = 2;
	tcp_connect_rec(1, 1000, 42, 5);
	tcp_connect_rec(2, 1001, 42, 5);
	tcp_connect_rec(3, 1002, 43, 6);
	cr_expect_eq(fl->not_held, 1);
	tcp_flow_rec(1, 2000, 0, 5);
	tcp_connect_rec(4, 2001, 43, 6);
	cr_expect_eq(fl->h.used, 2);
	cr_expect_eq(fl->over_quota, 0);
	tcp_flow_rec(4, 3001, 0, 6);
	cr_expect_not(last_flow_unknown);
	cr_expect_eq(last_flow_pid, 43);
	cr_expect_eq(last_flow_duration, 1000);
}

/* Unregistered: a connect made before (read after) is not held, as its close would never come;
 * one made after a registration again is, and is not forgotten with the old registration.
 */
Test(record, connects_from_before_a_sandbox_went_are_not_held)
{
	struct flow_starts *fl = &col.ctx.flows;

	flow_starts__sandbox_gone(fl, 5, 5000);
	tcp_connect_rec(1, 4000, 42, 5);
	cr_expect_eq(fl->gone_before, 1);
	cr_expect_eq(fl->h.used, 0);
	tcp_connect_rec(2, 6000, 42, 5);
	cr_expect_eq(fl->h.used, 1);
	tcp_connect_rec(3, 5000 + FLOW_STARTS_LINGER, 44, 6);
	cr_expect_eq(fl->forgotten, 0);
	tcp_flow_rec(2, 7000 + FLOW_STARTS_LINGER, 0, 5);
	cr_expect_not(last_flow_unknown);
	cr_expect_eq(last_flow_pid, 42);
}

/* A socket whose cgroup was removed, in no sandbox now (by_cookie 2, its cgroup's own id): its
 * flow is reported (start unknown when nothing was held) if that cgroup was a sandbox's.
 */
Test(record, a_removed_cgroups_socket_is_reported_if_it_was_a_sandbox)
{
	struct egret_flow_event f;

	sandbox_names__set(&names, 77, "gone-ctr");
	memset(&f, 0, sizeof(f));
	hdr(&f.hdr, EGRET_EV_FLOW);
	memset(f.hdr.comm, 0, sizeof(f.hdr.comm));
	f.hdr.pid = f.hdr.tid = 0;
	f.hdr.ts_ns = 1000;
	f.hdr.sandbox_id = 77;
	f.protocol = 6;
	f.family = 2;
	f.by_cookie = 2;
	f.cookie = 5;
	last_flow_comm = NULL;
	feed(&f, sizeof(f));
	cr_assert(last_flow_comm, "a removed sandbox's flow was not reported");
	cr_expect(last_flow_unknown);
	cr_expect_eq(last_flow_sandbox, 77);
	f.hdr.sandbox_id = 78; /* never a sandbox: the host's */
	f.cookie = 6;
	last_flow_comm = NULL;
	feed(&f, sizeof(f));
	cr_expect_null(last_flow_comm, "a removed host cgroup's socket was reported");
	cr_expect_eq(col.ctx.flows.foreign, 1);
}

/* Thousands of connects of a few sandboxes: one gone, after the linger exactly its connects are
 * forgotten (removals in the middle of runs and across the table's end), the others' joined.
 */
Test(record, a_gone_sandboxs_connects_are_forgotten_among_many)
{
	struct flow_starts *fl = &col.ctx.flows;
	const uint64_t n = 3000;

	for (uint64_t c = 1; c <= n; c++)
		tcp_connect_rec(c, 1000, (uint32_t)(100 + c % 3), 7 + c % 3);
	cr_assert_eq(fl->h.used, n);
	sandbox_gone(8, 2000);
	tcp_connect_rec(n + 1, 2000 + FLOW_STARTS_LINGER, 99, 7);
	cr_expect_eq(fl->forgotten, n / 3);
	cr_expect_eq(fl->h.used, n - n / 3 + 1);
	for (uint64_t c = 1; c <= n; c++) {
		tcp_flow_rec(c, 3000 + FLOW_STARTS_LINGER, 0, 7 + c % 3);
		if (last_flow_unknown != (c % 3 == 1))
			cr_assert_fail("cookie %llu: start %s", (unsigned long long)c,
				       last_flow_unknown ? "unknown" : "known");
	}
	cr_expect_eq(fl->h.used, 1);
}
Test(record, tcp_flows_held_are_bounded_and_go_with_their_sandbox)
{
	struct flow_starts *fl = &col.ctx.flows;

	fl->max = 3;
	for (uint64_t cookie = 1; cookie <= 5; cookie++)
		tcp_connect_rec(cookie, 1000 + cookie, 42, 5);
	cr_expect_eq(fl->h.used, 3);
	cr_expect_eq(fl->not_held, 2);
	tcp_flow_rec(5, 2000, 0, 5);
	cr_expect(last_flow_unknown, "a flow over the bound has its start unknown");
	tcp_flow_rec(1, 2000, 0, 5);
	cr_expect_not(last_flow_unknown);
	tcp_connect_rec(10, 3000, 60, 6);
	cr_expect_eq(fl->h.used, 3);
	/* sandbox 5 goes: a socket closing soon after is still joined */
	sandbox_gone(5, 4000);
	tcp_flow_rec(2, 5000, 0, 5);
	cr_expect_not(last_flow_unknown);
	cr_expect_eq(fl->h.used, 2);
	/* long after, its connects are forgotten, another sandbox's are not */
	tcp_connect_rec(11, 4000 + FLOW_STARTS_LINGER, 61, 6);
	cr_expect_eq(fl->forgotten, 1);
	cr_expect_eq(fl->h.used, 2);
	tcp_flow_rec(3, 5000 + FLOW_STARTS_LINGER, 0, 5);
	cr_expect(last_flow_unknown);
	tcp_flow_rec(10, 5000 + FLOW_STARTS_LINGER, 0, 6);
	cr_expect_not(last_flow_unknown);
	cr_expect_eq(last_flow_pid, 60);
}

/* More sandboxes gone than the list holds: the oldest's connects are forgotten early, none
 * is lost track of
 */
Test(record, many_sandboxes_gone_at_once)
{
	struct flow_starts *fl = &col.ctx.flows;

	for (uint64_t sb = 1; sb <= FLOW_STARTS_GONE + 2; sb++) {
		tcp_connect_rec(100 + sb, 1000, 42, sb);
		sandbox_gone(sb, 2000);
	}
	cr_expect_eq(fl->n_gone, FLOW_STARTS_GONE);
	cr_expect_eq(fl->forgotten, 2);
	cr_expect_eq(fl->h.used, FLOW_STARTS_GONE);
	tcp_connect_rec(1, 2000 + FLOW_STARTS_LINGER, 42, 1000);
	cr_expect_eq(fl->n_gone, 0);
	cr_expect_eq(fl->h.used, 1);
	cr_expect_eq(fl->forgotten, FLOW_STARTS_GONE + 2);
}
