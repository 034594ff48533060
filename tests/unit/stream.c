/* The stream and its delivery, without root: sequence numbers from 1 without gaps, envelope
 * fields, the spool (segments, positions kept across restarts, eviction reported as the exact
 * range lost, damaged files detected), file sinks (rotation), sink URIs, and the HTTP pieces
 * of the OTLP sink.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <zlib.h>

#include "harness.h"
#include "http.h"
#include "loop.h"
#include "otlp.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "sink.h"
#include "stream.h"
#include "wire.h"

struct rig {
	char dir[64], spool[96];
	struct loop loop;
	struct stream s;
	struct sink sinks[4];
	unsigned int n;
};

static void rig_init(struct rig *r, uint64_t limit)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->dir, sizeof(r->dir), "/tmp/egret-unit-XXXXXX");
	cr_assert(mkdtemp(r->dir));
	snprintf(r->spool, sizeof(r->spool), "%s/spool", r->dir);
	cr_assert_eq(loop__init(&r->loop), 0);
	cr_assert_eq(stream__init(&r->s), 0);
	cr_assert_eq(stream__open_spool(&r->s, r->spool, limit, SPOOL_SYNC_NEVER), 0);
}

__attribute__((format(printf, 2, 3))) static struct sink *rig_sink(struct rig *r, const char *fmt,
								   ...)
{
	char uri[256], err[160];
	struct sink *k = &r->sinks[r->n++];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(uri, sizeof(uri), fmt, ap);
	va_end(ap);
	cr_assert_eq(sink__parse(k, uri, err, sizeof(err)), 0, "%s: %s", uri, err);
	cr_assert_eq(stream__add_sink(&r->s, k, &r->loop), 0);
	return k;
}

/* stop the stream as egretd does and start it again on the same spool */
static void rig_restart(struct rig *r, uint64_t limit)
{
	stream__drain(&r->s, &r->loop);
	stream__free(&r->s);
	r->n = 0;
	cr_assert_eq(stream__init(&r->s), 0);
	cr_assert_eq(stream__open_spool(&r->s, r->spool, limit, SPOOL_SYNC_NEVER), 0);
}

static void rig_free(struct rig *r)
{
	char cmd[128];

	stream__free(&r->s);
	loop__close(&r->loop);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", r->dir);
	cr_expect_eq(system(cmd), 0);
}

static void emit_n(struct stream *s, int n)
{
	for (int i = 0; i < n; i++) {
		Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
		Egret__V1__Process p = EGRET__V1__PROCESS__INIT;

		/* some bulk, so segments fill */
		p.comm = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
		ev.process = &p;
		stream__emit(s, &ev);
	}
}

static bool is_loss(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_LOSS &&
	       ev->loss->source == (Egret__V1__Loss__Source)(long)arg;
}

Test(stream, sequence_and_envelope)
{
	struct rig r;
	struct events evs;
	char path[128];

	rig_init(&r, SPOOL_DEFAULT_LIMIT);
	snprintf(path, sizeof(path), "%s/ev.pb", r.dir);
	rig_sink(&r, "file:%s", path);
	for (int i = 0; i < 3; i++) {
		Egret__V1__Event ev = EGRET__V1__EVENT__INIT;

		cr_expect_eq(stream__emit(&r.s, &ev), (uint64_t)i + 1);
	}
	stream__flush(&r.s);
	cr_assert_eq(events_read(path, &evs), 0);
	cr_assert_eq(evs.n, 3);
	for (size_t i = 0; i < 3; i++) {
		cr_expect_eq(evs.ev[i]->seq, i + 1);
		cr_expect_str_eq(evs.ev[i]->stream_id, r.s.id);
		cr_expect_str_eq(evs.ev[i]->sensor_version, EGRET_VERSION);
		cr_expect_neq(evs.ev[i]->time_unix_nano, 0);
		cr_expect_str_eq(evs.ev[i]->host, r.s.host);
	}
	cr_expect_eq(r.sinks[0].delivered, 3);
	events_free(&evs);
	rig_free(&r);
}

/* A sink that cannot write falls behind and loses nothing: the spool holds it, and a restart
 * delivers it from where the sink stopped.
 */
Test(stream, failing_sink_falls_behind_and_catches_up)
{
	struct rig r;
	struct events evs;
	struct sink *k;
	char good[128], cursors[160], line[256];
	FILE *f;

	rig_init(&r, SPOOL_DEFAULT_LIMIT);
	snprintf(good, sizeof(good), "%s/ev.pb", r.dir);
	k = rig_sink(&r, "file:/dev/full");
	emit_n(&r.s, 10);
	stream__flush(&r.s);
	cr_expect_eq(k->last_err, -ENOSPC);
	cr_expect_neq(k->error[0], '\0');
	cr_expect_eq(k->delivered, 0);
	cr_expect_gt(spool__behind(&r.s.spool, k->acked), 0, "nothing held for the failing sink");
	/* egretd restarts; the same spool, the sink now pointing where it can write: the key of a
	 * position is the URI, so rewrite it as an operator moving the file would
	 */
	rig_restart(&r, SPOOL_DEFAULT_LIMIT);
	snprintf(cursors, sizeof(cursors), "%s/cursors", r.spool);
	f = fopen(cursors, "r");
	cr_assert(f);
	cr_assert(fgets(line, sizeof(line), f));
	fclose(f);
	*strstr(line, "file:/dev/full") = '\0';
	f = fopen(cursors, "w");
	fprintf(f, "%sfile:%s\n", line, good);
	fclose(f);
	rig_sink(&r, "file:%s", good);
	stream__flush(&r.s);
	cr_assert_eq(events_read(good, &evs), 0);
	cr_assert_geq(evs.n, 10);
	for (size_t i = 0; i < 10; i++)
		cr_expect_eq(evs.ev[i]->seq, i + 1, "replayed out of order at %zu", i);
	events_free(&evs);
	rig_free(&r);
}

/* Past the spool's limit the oldest segment goes; the Loss event names exactly the events the
 * lagging sink did not get, and everything else reaches it.
 */
Test(stream, eviction_names_the_exact_range)
{
	struct rig r;
	struct events good, late;
	const Egret__V1__Event *loss;
	char gp[128], lp[128], cursors[160], line[256];
	uint64_t total;
	FILE *f;

	rig_init(&r, SPOOL_MIN_LIMIT);
	snprintf(gp, sizeof(gp), "%s/good.pb", r.dir);
	snprintf(lp, sizeof(lp), "%s/late.pb", r.dir);
	rig_sink(&r, "file:%s", gp);
	rig_sink(&r, "file:/dev/full");
	for (int i = 0; i < 40; i++) {
		emit_n(&r.s, 100);
		stream__flush(&r.s);
	}
	total = r.s.seq;
	cr_assert_eq(events_read(gp, &good), 0);
	loss = events_find(&good, is_loss, (void *)(long)EGRET__V1__LOSS__SOURCE__SOURCE_SPOOL,
			   NULL);
	cr_assert(loss, "no eviction reported after %llu events", (unsigned long long)total);
	cr_expect_str_eq(loss->loss->sink, "file:/dev/full");
	cr_expect_eq(loss->loss->first_seq, 1);
	cr_expect_eq(loss->loss->count, loss->loss->last_seq - loss->loss->first_seq + 1);
	cr_expect_leq(r.s.spool.bytes, SPOOL_MIN_LIMIT + SPOOL_BUF_BYTES);
	/* the lagging sink comes back: it gets everything after the evicted ranges */
	rig_restart(&r, SPOOL_MIN_LIMIT);
	snprintf(cursors, sizeof(cursors), "%s/cursors", r.spool);
	f = fopen(cursors, "r");
	cr_assert(f);
	while (fgets(line, sizeof(line), f) && !strstr(line, "/dev/full"))
		;
	fclose(f);
	*strstr(line, "file:/dev/full") = '\0';
	f = fopen(cursors, "w");
	fprintf(f, "%sfile:%s\n", line, lp);
	fclose(f);
	rig_sink(&r, "file:%s", lp);
	stream__flush(&r.s);
	cr_assert_eq(events_read(lp, &late), 0);
	{
		/* every seq of the first stream: delivered to the late sink, or in a reported range */
		bool *seen = calloc(total + 1, 1);

		for (size_t i = 0; i < late.n; i++) {
			if (!strcmp(late.ev[i]->stream_id, good.ev[0]->stream_id))
				seen[late.ev[i]->seq] = true;
		}
		for (size_t i = 0; i < good.n; i++) {
			const Egret__V1__Loss *l = good.ev[i]->loss;

			if (good.ev[i]->payload_case != EGRET__V1__EVENT__PAYLOAD_LOSS ||
			    strcmp(l->sink, "file:/dev/full"))
				continue;
			for (uint64_t q = l->first_seq; q <= l->last_seq; q++) {
				cr_expect(!seen[q], "seq %llu reported lost and delivered",
					  (unsigned long long)q);
				seen[q] = true;
			}
		}
		for (uint64_t q = 1; q <= total; q++)
			cr_expect(seen[q], "seq %llu neither delivered nor reported lost",
				  (unsigned long long)q);
		free(seen);
	}
	events_free(&good);
	events_free(&late);
	rig_free(&r);
}

/* Garbage or a half-written record at the end of a spool segment is found when the spool
 * opens, reported, and never replayed.
 */
Test(stream, damaged_spool_is_reported_not_replayed)
{
	static const char garbage[] = "\x05hello\xff\xff\xff";
	struct rig r;
	struct events evs;
	char path[128], seg[160];
	const Egret__V1__Event *loss;
	int fd;

	rig_init(&r, SPOOL_DEFAULT_LIMIT);
	rig_sink(&r, "file:/dev/full"); /* keeps everything in the spool */
	emit_n(&r.s, 5);
	stream__flush(&r.s);
	snprintf(seg, sizeof(seg), "%s/%020llu.seg", r.spool,
		 (unsigned long long)r.s.spool.segs[r.s.spool.nsegs - 1].id);
	rig_restart(&r, SPOOL_DEFAULT_LIMIT);
	stream__free(&r.s);
	fd = open(seg, O_WRONLY | O_APPEND);
	cr_assert_geq(fd, 0, "%s", seg);
	cr_assert_eq(write(fd, garbage, sizeof(garbage) - 1), (ssize_t)sizeof(garbage) - 1);
	close(fd);
	cr_assert_eq(stream__init(&r.s), 0);
	cr_assert_eq(stream__open_spool(&r.s, r.spool, SPOOL_DEFAULT_LIMIT, SPOOL_SYNC_NEVER), 0);
	cr_assert_eq(r.s.spool.ndamage, 1);
	/* an operator points the sink elsewhere, as above: its position moves with it */
	{
		char cursors[160], line[256];
		FILE *f;

		snprintf(cursors, sizeof(cursors), "%s/cursors", r.spool);
		snprintf(path, sizeof(path), "%s/ev.pb", r.dir);
		f = fopen(cursors, "r");
		cr_assert(fgets(line, sizeof(line), f));
		fclose(f);
		*strstr(line, "file:/dev/full") = '\0';
		f = fopen(cursors, "w");
		fprintf(f, "%sfile:%s\n", line, path);
		fclose(f);
	}
	rig_sink(&r, "file:%s", path);
	stream__report_damage(&r.s);
	stream__flush(&r.s);
	cr_assert_eq(events_read(path, &evs), 0, "the replayed stream is not whole");
	cr_expect_eq(evs.n, 5 + 1, "5 good events and the loss report");
	for (size_t i = 0; i < 5; i++)
		cr_expect_eq(evs.ev[i]->seq, i + 1);
	loss = events_find(&evs, is_loss,
			   (void *)(long)EGRET__V1__LOSS__SOURCE__SOURCE_SPOOL_DAMAGED, NULL);
	cr_assert(loss);
	cr_expect_eq(loss->loss->count, sizeof(garbage) - 1);
	events_free(&evs);
	rig_free(&r);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static bool exists(const char *dir, const char *name)
{
	char path[PATH_MAX];
	struct stat st;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	return lstat(path, &st) == 0;
}

/* Names that only look like segments, and segments that are not files, stopped egretd
 * starting (strtoull took "+0000000000000000001" and 20 nines, a directory failed to open);
 * now each is moved to DIR/damaged/, reported, and the spool opens.
 */
Test(stream, damaged_spool_names_are_set_aside)
{
	static const char *const aside[] = {
		"99999999999999999999.seg",
		"+0000000000000000001.seg",
		" 0000000000000000001.seg",
		"-0000000000000000001.seg",
		"+0001.seg",
		"18446744073709551615.seg",
		"00000000000000000003.seg",
		"00000000000000000004.seg",
	};
	struct rig r;
	struct events evs;
	char path[PATH_MAX], target[PATH_MAX], text[64] = "";
	size_t nloss = 0;
	FILE *f;

	memset(&r, 0, sizeof(r));
	snprintf(r.dir, sizeof(r.dir), "/tmp/egret-unit-XXXXXX");
	cr_assert(mkdtemp(r.dir));
	snprintf(r.spool, sizeof(r.spool), "%s/spool", r.dir);
	cr_assert_eq(mkdir(r.spool, 0700), 0);
	for (size_t i = 0; i < 6; i++) {
		snprintf(path, sizeof(path), "%s/%s", r.spool, aside[i]);
		write_file(path, "not events");
	}
	snprintf(path, sizeof(path), "%s/%s", r.spool, aside[6]);
	cr_assert_eq(mkdir(path, 0700), 0);
	/* a symlink named as a segment: never followed (checking cuts what is not events) */
	snprintf(target, sizeof(target), "%s/precious", r.dir);
	write_file(target, "precious bytes");
	snprintf(path, sizeof(path), "%s/%s", r.spool, aside[7]);
	cr_assert_eq(symlink(target, path), 0);
	snprintf(path, sizeof(path), "%s/notes.txt", r.spool);
	write_file(path, "an operator's notes");
	cr_assert_eq(loop__init(&r.loop), 0);
	cr_assert_eq(stream__init(&r.s), 0);
	cr_assert_eq(stream__open_spool(&r.s, r.spool, SPOOL_DEFAULT_LIMIT, SPOOL_SYNC_NEVER), 0,
		     "a damaged spool stopped the start");
	cr_expect_eq(r.s.spool.ndamage, 8);
	snprintf(path, sizeof(path), "%s/damaged", r.spool);
	for (size_t i = 0; i < 8; i++) {
		cr_expect_not(exists(r.spool, aside[i]), "%s left in place", aside[i]);
		/* UINT64_MAX is a segment's name: its bytes are not events, so it is cut (empty) */
		cr_expect_eq(exists(path, aside[i]), i != 5, "%s in damaged/", aside[i]);
	}
	cr_expect(exists(r.spool, "notes.txt"), "a file that is no segment was touched");
	f = fopen(target, "r");
	cr_assert(f);
	cr_expect(fgets(text, sizeof(text), f));
	fclose(f);
	cr_expect_str_eq(text, "precious bytes", "the symlink's target was cut");
	cr_expect_eq(r.s.spool.segs[r.s.spool.nsegs - 1].id, 1,
		     "after UINT64_MAX, numbering starts over");
	/* reported, and the spool works */
	snprintf(path, sizeof(path), "%s/ev.pb", r.dir);
	rig_sink(&r, "file:%s", path);
	stream__report_damage(&r.s);
	emit_n(&r.s, 3);
	stream__flush(&r.s);
	cr_assert_eq(events_read(path, &evs), 0);
	cr_assert(events_find(&evs, is_loss,
			      (void *)(long)EGRET__V1__LOSS__SOURCE__SOURCE_SPOOL_DAMAGED, &nloss));
	cr_expect_eq(nloss, 8);
	cr_expect(strstr(events_find(&evs, is_loss,
				     (void *)(long)EGRET__V1__LOSS__SOURCE__SOURCE_SPOOL_DAMAGED,
				     NULL)
				 ->loss->detail,
			 "moved to damaged/"));
	cr_expect_eq(evs.n, 8 + 3);
	events_free(&evs);
	/* and the next start finds nothing wrong */
	rig_restart(&r, SPOOL_DEFAULT_LIMIT);
	cr_expect_eq(r.s.spool.ndamage, 0);
	rig_free(&r);
}

/* The offset after the first two records of a segment file. */
static size_t two_records(const char *seg)
{
	uint8_t buf[4096];
	size_t off = 0, total, msg;
	FILE *f = fopen(seg, "r");
	size_t n;

	cr_assert(f, "%s", seg);
	n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	for (int i = 0; i < 2; i++) {
		cr_assert_eq(wire__frame(buf + off, n - off, &total, &msg), 1);
		off += total;
	}
	return off;
}

/* A segment numbered UINT64_MAX wrapped the next number to 0, and from then on every start
 * failed with EEXIST. Segments numbered that high (from SPOOL_SEG_RENUMBER on) are renumbered
 * from 1 in their order, the sinks' saved positions with them, and delivered.
 */
Test(stream, segment_numbers_never_wrap)
{
	static const uint64_t tops[] = { UINT64_MAX, SPOOL_SEG_RENUMBER };

	for (size_t t = 0; t < sizeof(tops) / sizeof(tops[0]); t++) {
		struct rig r;
		struct events evs;
		char from[PATH_MAX], to[PATH_MAX], cursors[160], path[128];
		FILE *f;

		rig_init(&r, SPOOL_DEFAULT_LIMIT);
		rig_sink(&r, "file:/dev/full");
		emit_n(&r.s, 5);
		stream__flush(&r.s);
		snprintf(from, sizeof(from), "%s/%020llu.seg", r.spool,
			 (unsigned long long)r.s.spool.segs[0].id);
		stream__drain(&r.s, &r.loop);
		stream__free(&r.s);
		/* the segment renamed to the top, a sink's position after its second record */
		snprintf(to, sizeof(to), "%s/%020llu.seg", r.spool, (unsigned long long)tops[t]);
		cr_assert_eq(rename(from, to), 0);
		snprintf(cursors, sizeof(cursors), "%s/cursors", r.spool);
		snprintf(path, sizeof(path), "%s/ev.pb", r.dir);
		f = fopen(cursors, "w");
		fprintf(f, "%llu %zu file:%s\n", (unsigned long long)tops[t], two_records(to),
			path);
		fclose(f);
		for (int start = 0; start < 3; start++) {
			cr_assert_eq(stream__init(&r.s), 0);
			cr_assert_eq(stream__open_spool(&r.s, r.spool, SPOOL_DEFAULT_LIMIT,
							SPOOL_SYNC_NEVER),
				     0, "segment %llu: start %d failed",
				     (unsigned long long)tops[t], start);
			cr_expect_eq(r.s.spool.ndamage, 0, "start %d", start);
			for (size_t i = 0; i < r.s.spool.nsegs; i++)
				cr_expect_lt(r.s.spool.segs[i].id, 8, "segment %llu",
					     (unsigned long long)r.s.spool.segs[i].id);
			if (start == 0) {
				rig_sink(&r, "file:%s", path);
				stream__flush(&r.s);
			}
			emit_n(&r.s, 2);
			stream__drain(&r.s, &r.loop);
			stream__free(&r.s);
			r.n = 0;
		}
		cr_assert_eq(events_read(path, &evs), 0);
		cr_assert_geq(evs.n, 3);
		cr_expect_eq(evs.ev[0]->seq, 3, "delivered from its saved position: seq %llu",
			     (unsigned long long)evs.ev[0]->seq);
		events_free(&evs);
		rig_free(&r);
	}
}

/* Renumbering moves each segment to its place in order without landing on another: here 0 and
 * 1 move up while the top one moves down.
 */
Test(stream, renumbering_keeps_every_segment_in_order)
{
	static const uint64_t to[] = { 0, 1, SPOOL_SEG_RENUMBER + 7 };
	struct rig r;
	struct events evs;
	char from[PATH_MAX], dest[PATH_MAX], cursors[160], path[128], first[33];
	FILE *f;

	rig_init(&r, SPOOL_DEFAULT_LIMIT);
	for (int run = 0; run < 3; run++) {
		if (run)
			rig_restart(&r, SPOOL_DEFAULT_LIMIT);
		rig_sink(&r, "file:/dev/full");
		if (!run)
			snprintf(first, sizeof(first), "%s", r.s.id);
		emit_n(&r.s, 2);
		stream__flush(&r.s);
	}
	stream__drain(&r.s, &r.loop);
	stream__free(&r.s);
	for (int i = 0; i < 3; i++) {
		snprintf(from, sizeof(from), "%s/%020d.seg", r.spool, i + 1);
		snprintf(dest, sizeof(dest), "%s/%020llu.seg", r.spool, (unsigned long long)to[i]);
		cr_assert_eq(rename(from, dest), 0, "%s", from);
	}
	snprintf(cursors, sizeof(cursors), "%s/cursors", r.spool);
	snprintf(path, sizeof(path), "%s/ev.pb", r.dir);
	f = fopen(cursors, "w");
	fprintf(f, "0 0 file:%s\n", path);
	fclose(f);
	cr_assert_eq(stream__init(&r.s), 0);
	cr_assert_eq(stream__open_spool(&r.s, r.spool, SPOOL_DEFAULT_LIMIT, SPOOL_SYNC_NEVER), 0);
	cr_assert_eq(r.s.spool.nsegs, 4);
	for (uint64_t i = 0; i < 4; i++)
		cr_expect_eq(r.s.spool.segs[i].id, i + 1);
	r.n = 0;
	rig_sink(&r, "file:%s", path);
	stream__flush(&r.s);
	cr_assert_eq(events_read(path, &evs), 0);
	cr_assert_eq(evs.n, 6, "%zu events delivered", evs.n);
	cr_expect_str_eq(evs.ev[0]->stream_id, first, "the oldest run first");
	for (size_t i = 0; i < 6; i++)
		cr_expect_eq(evs.ev[i]->seq, i % 2 + 1);
	events_free(&evs);
	rig_free(&r);
}

/* A saved position in the middle of a record (a damaged cursors file) made the sink send
 * bytes from there; it delivers that segment from its start instead.
 */
Test(stream, a_saved_position_inside_a_record_is_not_used)
{
	struct rig r;
	struct events evs;
	char cursors[160], path[128];
	FILE *f;

	rig_init(&r, SPOOL_DEFAULT_LIMIT);
	rig_sink(&r, "file:/dev/full");
	emit_n(&r.s, 5);
	stream__flush(&r.s);
	rig_restart(&r, SPOOL_DEFAULT_LIMIT);
	snprintf(cursors, sizeof(cursors), "%s/cursors", r.spool);
	snprintf(path, sizeof(path), "%s/ev.pb", r.dir);
	f = fopen(cursors, "w");
	fprintf(f, "%llu 7 file:%s\n", (unsigned long long)r.s.spool.segs[0].id, path);
	fclose(f);
	rig_sink(&r, "file:%s", path);
	stream__flush(&r.s);
	cr_assert_eq(events_read(path, &evs), 0, "the sink sent a cut record");
	cr_expect_eq(evs.n, 5);
	events_free(&evs);
	rig_free(&r);
}

Test(stream, file_rotation_keeps_whole_streams)
{
	struct rig r;
	char path[128], p[160];
	uint64_t seen = 0, last = 0;
	struct stat st;

	rig_init(&r, SPOOL_DEFAULT_LIMIT);
	snprintf(path, sizeof(path), "%s/ev.pb", r.dir);
	rig_sink(&r, "file:%s?max_size=4K&keep=3", path);
	for (int i = 0; i < 20; i++) {
		emit_n(&r.s, 10);
		stream__flush(&r.s);
	}
	/* the oldest files went; what is left: PATH.3 (oldest) .. PATH, each a whole stream */
	for (int i = 3; i >= 0; i--) {
		struct events evs;

		if (i)
			snprintf(p, sizeof(p), "%s.%d", path, i);
		else
			snprintf(p, sizeof(p), "%s", path);
		cr_assert_eq(stat(p, &st), 0, "%s missing", p);
		cr_expect_leq(st.st_size, 4096, "%s is %lld bytes", p, (long long)st.st_size);
		cr_assert_eq(events_read(p, &evs), 0, "%s is not a whole stream", p);
		for (size_t k = 0; k < evs.n; k++) {
			if (last)
				cr_expect_eq(evs.ev[k]->seq, last + 1, "gap in %s", p);
			last = evs.ev[k]->seq;
			seen++;
		}
		events_free(&evs);
	}
	snprintf(p, sizeof(p), "%s.4", path);
	cr_expect_neq(stat(p, &st), 0, "more files kept than keep=3");
	cr_expect_eq(last, 200);
	cr_expect_gt(seen, 20);
	rig_free(&r);
}

/* --format json: batch after batch of events, each decoded into the sink's arena, as one JSON
 * line each, in order; one event larger than the arena's first block among them.
 */
Test(stream, json_lines_batch_after_batch)
{
	static char big[300000];
	struct rig r;
	struct sink *k;
	char path[128], *line = NULL;
	size_t cap = 0, lines = 0;
	bool big_seen = false;
	ssize_t n;
	FILE *f;

	memset(big, 'b', sizeof(big) - 1);
	rig_init(&r, SPOOL_DEFAULT_LIMIT);
	snprintf(path, sizeof(path), "%s/ev.jsonl", r.dir);
	k = rig_sink(&r, "file:%s", path);
	k->format = SINK_JSON;
	for (int i = 0; i < 30; i++) {
		emit_n(&r.s, 100);
		if (i == 10) {
			Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
			Egret__V1__Process p = EGRET__V1__PROCESS__INIT;

			p.exe = big;
			ev.process = &p;
			stream__emit(&r.s, &ev);
		}
		stream__flush(&r.s);
	}
	stream__drain(&r.s, &r.loop);
	f = fopen(path, "r");
	cr_assert(f, "%s", path);
	while ((n = getline(&line, &cap, f)) > 0) {
		char want[32];

		lines++;
		snprintf(want, sizeof(want), "\"seq\":\"%zu\"", lines);
		cr_expect(strstr(line, want), "line %zu is not seq %zu", lines, lines);
		cr_expect(line[0] == '{' && line[n - 1] == '\n', "line %zu", lines);
		big_seen |= strstr(line, big) != NULL;
	}
	free(line);
	fclose(f);
	cr_expect_eq(lines, 3001);
	cr_expect(big_seen, "the 300 KB event's line");
	rig_free(&r);
}

Test(stream, sink_uris)
{
	static const struct {
		const char *uri;
		int ok;
	} cases[] = {
		{ "file:/var/log/egret/events.pb", 1 },
		{ "file:/x?max_size=10M&keep=3", 1 },
		{ "file:relative", 0 },
		{ "file:/x?keep=0", 0 },
		{ "file:/x?ack", 0 },
		{ "stdout", 1 },
		{ "tcp://127.0.0.1:5170", 1 },
		{ "tcp://[::1]:5170?ack", 1 },
		{ "tcp://siem.example:5170?ack=1", 1 },
		{ "tcp://127.0.0.1", 0 },
		{ "tcp://127.0.0.1:0", 0 },
		{ "tcp://127.0.0.1:70000", 0 },
		{ "tcp://:80", 0 },
		{ "unix:/run/egret/siem.sock?ack", 1 },
		{ "unix:sock", 0 },
		{ "otlp+http://127.0.0.1:4318/v1/logs", 1 },
		{ "otlp+http://collector", 1 },
		{ "otlp+https://collector", 0 },
		{ "otlp+http://collector/v1/logs?compression=none", 1 },
		{ "otlp+http://collector?compression=gzip", 1 },
		{ "otlp+http://collector?compression=zstd", 0 },
		{ "otlp+http://collector?compression", 0 },
		{ "file:/x?compression=none", 0 },
		{ "ftp://x", 0 },
		{ "", 0 },
	};
	struct sink k;
	char err[160];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int rc = sink__parse(&k, cases[i].uri, err, sizeof(err));

		cr_expect_eq(rc == 0, cases[i].ok, "%s: %s", cases[i].uri, rc ? err : "accepted");
	}
	cr_assert_eq(sink__parse(&k, "otlp+http://collector", err, sizeof(err)), 0);
	cr_expect_str_eq(k.port, "4318");
	cr_expect_str_eq(k.path, "/v1/logs");
	cr_expect_not(k.plain, "gzip is the default");
	cr_assert_eq(sink__parse(&k, "otlp+http://collector/in?compression=none", err, sizeof(err)),
		     0);
	cr_expect(k.plain);
	cr_expect_str_eq(k.path, "/in");
	cr_expect_neq(sink__parse(&k, "otlp+http://collector?compression=zstd", err, sizeof(err)),
		      0);
	cr_expect(strstr(err, "compression=zstd"), "the error names the option: %s", err);
	/* the endpoint's own query stays on its path */
	cr_assert_eq(sink__parse(&k, "otlp+http://c/v1/logs?token=a&compression=none&x", err,
				 sizeof(err)),
		     0);
	cr_expect(k.plain);
	cr_expect_str_eq(k.path, "/v1/logs?token=a&x");
	/* a path the request's head would not hold is refused, not cut */
	{
		char uri[1024];

		snprintf(uri, sizeof(uri), "otlp+http://c/%0*d", 800, 0);
		cr_expect_neq(sink__parse(&k, uri, err, sizeof(err)), 0);
		cr_expect(strstr(err, "longer than"), "%s", err);
		snprintf(uri, sizeof(uri), "otlp+http://c/%0*d", 700, 0);
		cr_expect_eq(sink__parse(&k, uri, err, sizeof(err)), 0, "%s", err);
	}
	cr_assert_eq(sink__parse(&k, "tcp://[::1]:5170?ack", err, sizeof(err)), 0);
	cr_expect_str_eq(k.host, "::1");
	cr_expect(k.ack);
	cr_assert_eq(sink__parse(&k, "file:/x?max_size=10M&keep=3", err, sizeof(err)), 0);
	cr_expect_eq(k.max_size, 10u << 20);
	cr_expect_eq(k.keep, 3);
	/* a trailing space was read as a unit of 2^50 */
	cr_expect_eq(sink__parse(&k, "file:/x?max_size=5 ", err, sizeof(err)), -EINVAL,
		     "max_size %llu", (unsigned long long)k.max_size);
	cr_assert_eq(sink__parse(&k, "file:/x?max_size=5k", err, sizeof(err)), 0);
	cr_expect_eq(k.max_size, 5u << 10);
}

Test(stream, http_responses)
{
	char ok[] = "HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
		    "Content-Length: 3\r\n\r\nabc";
	char part[] = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
	char retry[] = "HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\n"
		       "Connection: close\r\nContent-Length: 0\r\n\r\n";
	char chunked[] = "HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n"
			 "3\r\nbad\r\n4\r\n req\r\n0\r\n\r\n";
	char eof[] = "HTTP/1.0 200 OK\r\n\r\nall of it";
	char junk[] = "SSH-2.0-OpenSSH\r\n\r\n";
	struct http_response r;

	cr_assert_eq(http__parse_response(ok, sizeof(ok) - 1, false, &r), 1);
	cr_expect_eq(r.status, 200);
	cr_expect_eq(r.body_len, 3);
	cr_expect_str_eq(r.content_type, "application/x-protobuf");
	cr_expect(!r.close);
	cr_expect_eq(http__parse_response(part, sizeof(part) - 1, false, &r), 0);
	cr_assert_eq(http__parse_response(retry, sizeof(retry) - 1, false, &r), 1);
	cr_expect_eq(r.status, 503);
	cr_expect_str_eq(r.retry_after, "7");
	cr_expect(r.close);
	cr_assert_eq(http__parse_response(chunked, sizeof(chunked) - 1, false, &r), 1);
	cr_expect_eq(r.status, 400);
	cr_expect_eq(r.body_len, 7);
	cr_expect_eq(memcmp(chunked + r.body_off, "bad req", 7), 0);
	cr_expect_eq(http__parse_response(eof, sizeof(eof) - 1, false, &r), 0);
	cr_assert_eq(http__parse_response(eof, sizeof(eof) - 1, true, &r), 1);
	cr_expect_eq(r.body_len, 9);
	cr_expect_eq(http__parse_response(junk, sizeof(junk) - 1, false, &r), -EBADMSG);
	cr_expect_eq(http__retry_after("120", 0), 120);
	cr_expect_eq(http__retry_after("Wed, 21 Oct 2015 07:28:00 GMT", 1445412480 - 30), 30);
	cr_expect_eq(http__retry_after("soon", 0), -1);
	cr_expect_eq(http__retry_after("", 0), -1);
}

/* What the OTLP sink sends decodes as an ExportLogsServiceRequest with the event's fields as
 * attributes (the integration test checks the same with Python's protobuf).
 */
Test(stream, otlp_encoding)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__NetConnect nc = EGRET__V1__NET_CONNECT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	uint8_t raw[4096], *gz = NULL;
	size_t len, n, records;
	uint64_t first, last;
	char sid[33];

	ev.stream_id = "0123456789abcdef0123456789abcdef";
	ev.seq = 42;
	ev.class_uid = 4001;
	sb.name = "build-7";
	ev.sandbox = &sb;
	nc.verdict = EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY;
	nc.dst_addr = "169.254.169.254";
	nc.dst_port = 80;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_NET_CONNECT;
	ev.net_connect = &nc;
	len = egret__v1__event__get_packed_size(&ev);
	n = wire__varint_put(len, raw);
	egret__v1__event__pack(&ev, raw + n);
	cr_assert_eq(otlp__encode(NULL, raw, n + len, 0, &gz, &len, &records, &first, &last, sid),
		     0);
	cr_expect_eq(records, 1);
	cr_expect_eq(first, 42);
	cr_expect_str_eq(sid, ev.stream_id);
	cr_expect_gt(len, 18);
	cr_expect_eq(gz[0], 0x1f, "not gzip");
	cr_expect_eq(gz[1], 0x8b, "not gzip");
	{
		static uint8_t plain[1 << 16];
		z_stream z = { .next_in = gz,
			       .avail_in = (uInt)len,
			       .next_out = plain,
			       .avail_out = sizeof(plain) };
		Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
		Opentelemetry__Proto__Logs__V1__LogRecord *lr;
		bool verdict = false, sandbox = false;

		cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
		cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
		req = opentelemetry__proto__collector__logs__v1__export_logs_service_request__unpack(
			NULL, z.total_out, plain);
		inflateEnd(&z);
		cr_assert(req);
		cr_assert_eq(req->n_resource_logs, 1);
		cr_assert_eq(req->resource_logs[0]->n_scope_logs, 1);
		cr_assert_eq(req->resource_logs[0]->scope_logs[0]->n_log_records, 1);
		lr = req->resource_logs[0]->scope_logs[0]->log_records[0];
		cr_expect_str_eq(lr->event_name, "egret.net_connect");
		cr_expect_eq(lr->severity_number,
			     OPENTELEMETRY__PROTO__LOGS__V1__SEVERITY_NUMBER__SEVERITY_NUMBER_WARN);
		for (size_t i = 0; i < lr->n_attributes; i++) {
			const char *k = lr->attributes[i]->key;

			if (!strcmp(k, "egret.verdict"))
				verdict = !strcmp(lr->attributes[i]->value->string_value,
						  "VERDICT_DENY");
			if (!strcmp(k, "egret.sandbox.name"))
				sandbox =
					!strcmp(lr->attributes[i]->value->string_value, "build-7");
		}
		cr_expect(verdict && sandbox);
		cr_expect(strstr(lr->body->string_value, "169.254.169.254"));
		opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(
			req, NULL);
	}
	free(gz);
}
