/* The stream: sequence numbers from 1 without gaps, one stream id, envelope fields, framing a
 * reader can decode; a sink that cannot write keeps what it was given.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "sink.h"
#include "stream.h"

Test(stream, sequence_and_envelope)
{
	char dir[] = "/tmp/egret-unit-XXXXXX", uri[64], path[64];
	struct stream s;
	struct sink sink;
	struct events evs;

	cr_assert(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ev.pb", dir);
	snprintf(uri, sizeof(uri), "file:%s", path);
	cr_assert_eq(stream__init(&s), 0);
	cr_assert_eq(sink__open(&sink, uri), 0);
	cr_assert_eq(stream__add_sink(&s, &sink), 0);
	for (int i = 0; i < 3; i++) {
		Egret__V1__Event ev = EGRET__V1__EVENT__INIT;

		cr_expect_eq(stream__emit(&s, &ev), (uint64_t)i + 1);
	}
	stream__flush(&s);
	cr_assert_eq(events_read(path, &evs), 0);
	cr_assert_eq(evs.n, 3);
	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(evs.ev[i]->seq, i + 1);
		cr_expect_str_eq(evs.ev[i]->stream_id, s.id);
		cr_expect_str_eq(evs.ev[i]->sensor_version, EGRET_VERSION);
		cr_expect_neq(evs.ev[i]->time_unix_nano, 0);
		cr_expect_str_eq(evs.ev[i]->host, s.host);
	}
	events_free(&evs);
	sink__close(&sink);
	stream__free(&s);
	unlink(path);
	rmdir(dir);
}

Test(stream, failing_sink_keeps_records)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	struct stream s;
	struct sink sink;

	cr_assert_eq(stream__init(&s), 0);
	cr_assert_eq(sink__open(&sink, "file:/dev/full"), 0);
	stream__add_sink(&s, &sink);
	stream__emit(&s, &ev);
	stream__emit(&s, &ev);
	cr_expect_eq(sink__flush(&sink), -ENOSPC);
	cr_expect_eq(sink.last_err, -ENOSPC);
	cr_expect_gt(sink.len, 0, "records were dropped on a failed write");
	cr_expect_eq(sink.records, 2);
	sink.len = 0; /* nothing to write on close */
	sink__close(&sink);
	stream__free(&s);
}

Test(stream, unknown_sink_is_refused)
{
	struct sink sink;

	cr_expect_eq(sink__open(&sink, "ftp://x"), -EINVAL);
	cr_expect_eq(sink__check_uri("file:"), -EINVAL);
	cr_expect_eq(sink__check_uri("file:/x"), 0);
}
