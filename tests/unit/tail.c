/* egretctl tail on a file: every record printed as a JSON line in order, one that is not an
 * Event reported and skipped (the records after it still printed), one of megabytes printed
 * whole. Each record is decoded into the feed's arena, trimmed when a record made it large.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "arena.h"
#include "egret/v1/events.pb-c.h"
#include "tail.h"
#include "wire.h"

#define BIG_ARGS 200000 /* 1-byte arguments: an event of about 400 KB, decoded into megabytes */

static char path[] = "/tmp/egret-tail-XXXXXX";

static void remove_file(void)
{
	unlink(path);
}

static void put_event(FILE *f, uint64_t seq, const char *comm, size_t nargs)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	Egret__V1__ProcessExec x = EGRET__V1__PROCESS_EXEC__INIT;
	char **args = calloc(nargs ? nargs : 1, sizeof(char *));
	uint8_t *buf, len[WIRE_VARINT_MAX];
	size_t n;

	cr_assert(args);
	for (size_t i = 0; i < nargs; i++)
		args[i] = "a";
	p.comm = (char *)comm;
	p.pid = (uint32_t)seq;
	ev.process = &p;
	ev.seq = seq;
	ev.host = "tailtest";
	if (nargs) {
		x.n_args = nargs;
		x.args = args;
		ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXEC;
		ev.exec = &x;
	}
	buf = malloc(egret__v1__event__get_packed_size(&ev));
	cr_assert(buf);
	n = egret__v1__event__pack(&ev, buf);
	fwrite(len, 1, wire__varint_put(n, len), f);
	fwrite(buf, 1, n, f);
	free(buf);
	free(args);
}

Test(tail, a_record_that_is_not_an_event_is_skipped_and_the_rest_printed, .fini = remove_file)
{
	/* field 31 with wire type 7: no protobuf message has it */
	static const uint8_t junk[] = { 3, 0xff, 0x01, 0x02 };
	char *out = NULL, want[64], *at;
	size_t outlen = 0;
	int fd = mkstemp(path);
	FILE *f, *o;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	cr_assert(f);
	put_event(f, 1, "first", 0);
	fwrite(junk, 1, sizeof(junk), f);
	for (uint64_t i = 2; i <= 1000; i++)
		put_event(f, i, i % 2 ? "odd" : "even", i == 500 ? BIG_ARGS : 0);
	cr_assert_eq(fclose(f), 0);
	o = open_memstream(&out, &outlen);
	cr_expect_eq(tail__run(path, false, o), -EBADMSG, "the bad record is reported");
	fclose(o);
	at = out;
	for (uint64_t i = 1; i <= 1000; i++) {
		snprintf(want, sizeof(want), "\"seq\":\"%llu\"", (unsigned long long)i);
		at = strstr(at, want);
		cr_assert(at, "event %llu is printed, in order", (unsigned long long)i);
		at = strchr(at, '\n');
		cr_assert(at);
	}
	cr_expect(strstr(out, "\"comm\":\"first\""), "%.200s", out);
	at = strstr(out, "\"args\":[");
	cr_assert(at, "the big event's arguments");
	for (size_t i = 0; i < BIG_ARGS; i++, at += 4)
		cr_assert(!strncmp(at + 8, "\"a\",", i + 1 < BIG_ARGS ? 4 : 3), "argument %zu", i);
	free(out);
}

Test(tail, an_arena_is_trimmed_only_past_what_it_keeps)
{
	struct arena a;

	arena__init(&a);
	cr_assert(a.pb.alloc(a.pb.allocator_data, 100));
	arena__trim(&a, 1 << 20);
	cr_expect(a.head, "a small arena is kept");
	for (int i = 0; i < 12; i++) /* 12 blocks of 256 KiB */
		cr_assert(a.pb.alloc(a.pb.allocator_data, 200 << 10));
	arena__trim(&a, 1 << 20);
	cr_expect(!a.head, "3 MiB are not kept");
	arena__reset(&a);
	cr_expect(a.pb.alloc(a.pb.allocator_data, 100), "and it is usable after");
	arena__release(&a);
}
