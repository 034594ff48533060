/* Events to JSON in the proto3 JSON mapping: field names as in the .proto, enums by name,
 * 64-bit integers as strings, every scalar of a present message written (0 too), "time" and
 * "event" beside the event's fields, strings escaped and made valid UTF-8 (overlong forms,
 * surrogates and code points above U+10FFFF are not).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "../fuzz/jsoncheck.h"
#include "../fuzz/pbcheck.h"
#include "pbjson.h"
#include "egret/v1/events.pb-c.h"

static char *json_of(const ProtobufCMessage *m)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	pbjson__print(f, m);
	fclose(f);
	cr_expect(jsoncheck_valid(buf, len), "not JSON: %s", buf);
	return buf;
}

static char *event_json(const Egret__V1__Event *ev)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	pbjson__event(f, ev);
	fclose(f);
	cr_expect(jsoncheck_valid(buf, len), "not JSON: %s", buf);
	return buf;
}

Test(pbjson, net_connect_event)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__NetConnect nc = EGRET__V1__NET_CONNECT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	char *json;

	ev.stream_id = "abc";
	ev.seq = 7;
	ev.time_unix_nano = 1796017379939001562ull;
	sb.cgroup_id = 42;
	sb.name = "build-1";
	ev.sandbox = &sb;
	ev.class_uid = 4001;
	nc.verdict = EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY;
	nc.dst_addr = "169.254.169.254";
	nc.dst_port = 80;
	nc.v4_mapped = 1;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_NET_CONNECT;
	ev.net_connect = &nc;
	json = event_json(&ev);
	cr_expect_str_eq(json,
			 "{\"stream_id\":\"abc\",\"seq\":\"7\",\"time_unix_nano\":"
			 "\"1796017379939001562\",\"time\":\"2026-11-30T05:42:59.939001562Z\","
			 "\"host\":\"\",\"sensor_version\":\"\",\"sandbox\":{\"cgroup_id\":\"42\","
			 "\"name\":\"build-1\"},\"class_uid\":4001,\"activity_id\":0,"
			 "\"event\":\"net_connect\",\"net_connect\":{\"verdict\":\"VERDICT_DENY\","
			 "\"reason\":\"REASON_UNSPECIFIED\",\"hook\":\"HOOK_UNSPECIFIED\","
			 "\"protocol\":\"\",\"dst_addr\":\"169.254.169.254\",\"dst_port\":80,"
			 "\"v4_mapped\":true,\"family\":0,\"rule_id\":0,\"rule\":\"\","
			 "\"sock_type\":0,\"killed\":false,\"interface\":\"\",\"src_addr\":\"\","
			 "\"src_port\":0,\"socket_cookie\":\"0\"}}");
	free(json);
}

/* jq and JavaScript read numbers as doubles: 2^53 + 1 must survive, so it is a string */
Test(pbjson, sixty_four_bit_integers_are_strings)
{
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	Egret__V1__ProcessExit x = EGRET__V1__PROCESS_EXIT__INIT;
	char *json;

	p.exec_id = 9007199254740993ull;
	p.parent_exec_id = UINT64_MAX;
	json = json_of(&p.base);
	cr_expect(strstr(json, "\"exec_id\":\"9007199254740993\""), "%s", json);
	cr_expect(strstr(json, "\"parent_exec_id\":\"18446744073709551615\""), "%s", json);
	free(json);
	x.exit_code = -1;
	x.duration_ns = 0;
	json = json_of(&x.base);
	cr_expect_str_eq(json, "{\"exit_code\":-1,\"signal\":0,\"core_dumped\":false,"
			       "\"duration_ns\":\"0\"}");
	free(json);
}

/* Numbers are written two digits at a time after counting them: every count of digits, on
 * both sides of each power of ten, as printf writes them.
 */
Test(pbjson, integers_of_every_length)
{
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	Egret__V1__ProcessExit x = EGRET__V1__PROCESS_EXIT__INIT;
	char want[128], *json;
	uint64_t ten = 1;

	for (int k = 0; k < 20; k++, ten *= 10) {
		/* k = 19: 10^19 * 5 + 7 wraps, to another 20-digit value */
		const uint64_t vs[] = { ten - 1, ten, ten + 1, ten * 5 + 7 };

		for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
			p.exec_id = vs[i];
			json = json_of(&p.base);
			snprintf(want, sizeof(want), "\"exec_id\":\"%llu\"",
				 (unsigned long long)vs[i]);
			cr_expect(strstr(json, want), "%s in %s", want, json);
			free(json);
		}
	}
	p.exec_id = UINT64_MAX;
	json = json_of(&p.base);
	cr_expect(strstr(json, "\"exec_id\":\"18446744073709551615\""), "%s", json);
	free(json);
	p.exec_id = UINT64_MAX - 1;
	json = json_of(&p.base);
	cr_expect(strstr(json, "\"exec_id\":\"18446744073709551614\""), "%s", json);
	free(json);
	x.exit_code = INT32_MIN;
	json = json_of(&x.base);
	cr_expect(strstr(json, "\"exit_code\":-2147483648,"), "%s", json);
	free(json);
}

/* a root process has uid 0: it must be there, not missing like an unknown one */
Test(pbjson, zero_values_are_written)
{
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	char *json;

	p.pid = 1;
	p.comm = "init";
	json = json_of(&p.base);
	cr_expect_str_eq(json, "{\"pid\":1,\"tid\":0,\"ppid\":0,\"uid\":0,\"gid\":0,\"comm\":"
			       "\"init\",\"exe\":\"\",\"exec_id\":\"0\",\"parent_exec_id\":\"0\","
			       "\"euid\":0,\"mnt_ns\":0}");
	free(json);
}

/* repeated fields are [] when empty; unset messages and oneof members are left out */
Test(pbjson, repeated_messages_and_oneof)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Heartbeat hb = EGRET__V1__HEARTBEAT__INIT;
	char *json;

	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_HEARTBEAT;
	ev.heartbeat = &hb;
	json = event_json(&ev);
	cr_expect(strstr(json, "\"heartbeat\":{\"last_seq\":\"0\",\"spool_bytes\":\"0\","
			       "\"spool_limit_bytes\":\"0\",\"sinks\":[],\"counters\":[],"
			       "\"lost\":\"0\"}"),
		  "%s", json);
	cr_expect_null(strstr(json, "\"sandbox\""), "%s", json);
	cr_expect_null(strstr(json, "\"process\""), "%s", json);
	cr_expect_null(strstr(json, "\"agent\""), "%s", json);
	cr_expect(strstr(json, "\"event\":\"heartbeat\""), "%s", json);
	free(json);
}

/* an event without a payload this build knows still says what it is: "" */
Test(pbjson, event_without_payload)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	char *json = event_json(&ev);

	cr_expect_str_eq(json, "{\"stream_id\":\"\",\"seq\":\"0\",\"time_unix_nano\":\"0\","
			       "\"time\":\"1970-01-01T00:00:00.000000000Z\",\"host\":\"\","
			       "\"sensor_version\":\"\",\"class_uid\":0,\"activity_id\":0,"
			       "\"event\":\"\"}");
	free(json);
}

Test(pbjson, event_names_are_the_payload_fields)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;

	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXEC;
	cr_expect_str_eq(pbjson__event_name(&ev), "exec");
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_PACKAGE_INSTALL;
	cr_expect_str_eq(pbjson__event_name(&ev), "package_install");
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD__NOT_SET;
	cr_expect_str_eq(pbjson__event_name(&ev), "");
}

Test(pbjson, rfc3339_times)
{
	char t[PBJSON_TIME_LEN];

	pbjson__rfc3339(0, t, sizeof(t));
	cr_expect_str_eq(t, "1970-01-01T00:00:00.000000000Z");
	pbjson__rfc3339(951782400000000001ull, t, sizeof(t)); /* a leap day */
	cr_expect_str_eq(t, "2000-02-29T00:00:00.000000001Z");
	pbjson__rfc3339(UINT64_MAX, t, sizeof(t));
	cr_expect_str_eq(t, "2554-07-21T23:34:33.709551615Z");
}

Test(pbjson, strings_are_escaped_and_utf8)
{
	Egret__V1__Sandbox s = EGRET__V1__SANDBOX__INIT;
	char *json;

	s.name = "a\"b\\c\n\x01\xff\xc3\xa9";
	json = json_of(&s.base);
	cr_expect_str_eq(json, "{\"cgroup_id\":\"0\",\"name\":\"a\\\"b\\\\c\\n\\u0001\\ufffd"
			       "\xc3\xa9\"}");
	free(json);
}

static const struct {
	const char *bytes;
	bool valid;
} utf8_cases[] = {
	{ "\xc3\xa9", true },	       /* U+00E9 */
	{ "\xe0\xa0\x80", true },      /* U+0800, the first 3-byte form */
	{ "\xed\x9f\xbf", true },      /* U+D7FF, below the surrogates */
	{ "\xee\x80\x80", true },      /* U+E000, above them */
	{ "\xf0\x90\x80\x80", true },  /* U+10000 */
	{ "\xf4\x8f\xbf\xbf", true },  /* U+10FFFF, the last */
	{ "\xc0\x80", false },	       /* overlong NUL */
	{ "\xc1\xbf", false },	       /* overlong U+007F */
	{ "\xe0\x80\x80", false },     /* overlong NUL, 3 bytes */
	{ "\xe0\x9f\xbf", false },     /* overlong U+07FF */
	{ "\xf0\x80\x80\x80", false }, /* overlong NUL, 4 bytes */
	{ "\xf0\x8f\xbf\xbf", false }, /* overlong U+FFFF */
	{ "\xed\xa0\x80", false },     /* U+D800, a surrogate */
	{ "\xed\xbf\xbf", false },     /* U+DFFF */
	{ "\xf4\x90\x80\x80", false }, /* U+110000 */
	{ "\xf5\x80\x80\x80", false }, /* beyond */
	{ "\xe2\x82", false },	       /* cut short */
	{ "\x80", false },	       /* a lone continuation byte */
};

Test(pbjson, utf8_validity_rejects_overlong_surrogates_and_beyond_u10ffff)
{
	for (size_t i = 0; i < sizeof(utf8_cases) / sizeof(utf8_cases[0]); i++) {
		const char *b = utf8_cases[i].bytes;
		Egret__V1__Sandbox s = EGRET__V1__SANDBOX__INIT;
		char *json;

		cr_expect_eq(pbjson__utf8_valid(b, strlen(b)), utf8_cases[i].valid, "case %zu", i);
		cr_expect_eq(jsoncheck_utf8_valid(b, strlen(b)), utf8_cases[i].valid,
			     "jsoncheck case %zu", i);
		s.name = (char *)b;
		json = json_of(&s.base);
		cr_expect(jsoncheck_utf8_valid(json, strlen(json)), "case %zu: %s", i, json);
		cr_expect_eq(strstr(json, "\\ufffd") == NULL, utf8_cases[i].valid, "case %zu: %s",
			     i, json);
		free(json);
	}
}

/* What the OTLP sink does before it encodes strings: every string of a decoded event valid */
Test(pbjson, make_utf8_fixes_every_string_in_place)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT, *got;
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	Egret__V1__ProcessExec x = EGRET__V1__PROCESS_EXEC__INIT;
	char *args[] = { "ok", "\xed\xa0\x80", "\xe0\x80\x80z" };
	uint8_t buf[512];
	size_t n;

	ev.host = "h\xf4\x90\x80\x80";
	p.comm = "\xc0\x80";
	p.exe = "/bin/sh";
	ev.process = &p;
	x.n_args = 3;
	x.args = args;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXEC;
	ev.exec = &x;
	n = egret__v1__event__pack(&ev, buf);
	got = egret__v1__event__unpack(NULL, n, buf);
	cr_assert(got);
	cr_expect_not(pbcheck_utf8(&got->base));
	cr_assert_eq(pbjson__make_utf8(&got->base, NULL), 0);
	cr_expect(pbcheck_utf8(&got->base));
	cr_expect_str_eq(got->host, "h\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd");
	cr_expect_str_eq(got->process->comm, "\xef\xbf\xbd\xef\xbf\xbd");
	cr_expect_str_eq(got->process->exe, "/bin/sh");
	cr_expect_str_eq(got->exec->args[0], "ok");
	cr_expect_str_eq(got->exec->args[2], "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdz");
	egret__v1__event__free_unpacked(got, NULL);
}

Test(pbjson, empty_message)
{
	Egret__V1__Loss l = EGRET__V1__LOSS__INIT;
	char *json = json_of(&l.base);

	cr_expect_str_eq(json, "{\"source\":\"SOURCE_UNSPECIFIED\",\"count\":\"0\","
			       "\"first_seq\":\"0\",\"last_seq\":\"0\",\"detail\":\"\","
			       "\"sink\":\"\",\"stream_id\":\"\",\"gap_ns\":\"0\","
			       "\"gap_start_unix_nano\":\"0\"}");
	free(json);
}
