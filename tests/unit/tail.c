/* egretctl tail on a file: every record printed as a JSON line in order, one that is not an
 * Event reported and skipped (the records after it still printed), each decoded into one
 * arena that is emptied after it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "egret/v1/events.pb-c.h"
#include "tail.h"
#include "wire.h"

static void put_event(FILE *f, uint64_t seq, const char *comm)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	uint8_t buf[4096], len[WIRE_VARINT_MAX];
	size_t n;

	p.comm = (char *)comm;
	p.pid = (uint32_t)seq;
	ev.process = &p;
	ev.seq = seq;
	ev.host = "tailtest";
	n = egret__v1__event__pack(&ev, buf);
	cr_assert_lt(n, sizeof(buf));
	fwrite(len, 1, wire__varint_put(n, len), f);
	fwrite(buf, 1, n, f);
}

Test(tail, a_record_that_is_not_an_event_is_skipped_and_the_rest_printed)
{
	/* field 31 with wire type 7: no protobuf message has it */
	static const uint8_t junk[] = { 3, 0xff, 0x01, 0x02 };
	char path[] = "/tmp/egret-tail-XXXXXX", *out = NULL, want[64], *at;
	size_t outlen = 0;
	int fd = mkstemp(path);
	FILE *f, *o;

	cr_assert_geq(fd, 0);
	f = fdopen(fd, "w");
	put_event(f, 1, "first");
	fwrite(junk, 1, sizeof(junk), f);
	for (uint64_t i = 2; i <= 1000; i++)
		put_event(f, i, i % 2 ? "odd" : "even");
	fclose(f);
	o = open_memstream(&out, &outlen);
	cr_expect_eq(tail__run(path, false, o), -EBADMSG, "the bad record is reported");
	fclose(o);
	unlink(path);
	at = out;
	for (uint64_t i = 1; i <= 1000; i++) {
		snprintf(want, sizeof(want), "\"seq\":\"%llu\"", (unsigned long long)i);
		at = strstr(at, want);
		cr_assert(at, "event %llu is printed, in order", (unsigned long long)i);
		at = strchr(at, '\n');
		cr_assert(at);
	}
	cr_expect(strstr(out, "\"comm\":\"first\""), "%.200s", out);
	free(out);
}
