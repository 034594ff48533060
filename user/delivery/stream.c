/* The event stream: envelope, sequence numbers, encoding, the spool, the sinks' positions. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "stream.h"
#include "util.h"
#include "wire.h"

int stream__init(struct stream *s)
{
	memset(s, 0, sizeof(*s));
	random_hex(s->id, 16);
	if (gethostname(s->host, sizeof(s->host) - 1))
		snprintf(s->host, sizeof(s->host), "unknown");
	stream__sync_clock(s);
	return 0;
}

int stream__open_spool(struct stream *s, const char *dir, uint64_t limit, enum spool_sync sync)
{
	int err = spool__open(&s->spool, dir, limit, sync);

	if (err)
		return err;
	s->spool_open = true;
	snprintf(s->cursors_path, sizeof(s->cursors_path), "%s/cursors", dir);
	return 0;
}

/* Re-read the offset between boot time (kernel timestamps) and wall-clock time. */
void stream__sync_clock(struct stream *s)
{
	s->boot_to_unix = (int64_t)now_ns(CLOCK_REALTIME) - (int64_t)now_ns(CLOCK_BOOTTIME);
}

uint64_t stream__unix_ns(const struct stream *s, uint64_t boot_ns)
{
	/* modulo 2^64: a kernel timestamp is never near the end, a record's field may be */
	return boot_ns + (uint64_t)s->boot_to_unix;
}

/* Stamp, encode and spool ev; returns its sequence number. time_unix_nano is left as the
 * caller set it, or now when 0.
 */
uint64_t stream__emit(struct stream *s, Egret__V1__Event *ev)
{
	size_t off;

	if (!s->spool_open)
		return 0; /* before set-up: there is nowhere to put it */
	ev->stream_id = s->id;
	ev->seq = ++s->seq;
	ev->host = s->host;
	ev->sensor_version = (char *)EGRET_VERSION;
	if (!ev->time_unix_nano)
		ev->time_unix_nano = now_ns(CLOCK_REALTIME);
	if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD_LOSS &&
	    ev->loss->source != EGRET__V1__LOSS__SOURCE__SOURCE_SPOOL_DAMAGED)
		s->lost += ev->loss->count;
	/* one walk of the event (pbencode), framed: what protobuf-c's pack writes */
	if (pbencode__frame(&s->enc, &ev->base, &off)) {
		log_err("out of memory encoding event %llu", (unsigned long long)ev->seq);
		s->spool.dropped++;
		return ev->seq;
	}
	spool__append(&s->spool, s->enc.p + off, s->enc.len - off, ev->seq, s->id);
	return ev->seq;
}

static void emit_loss(struct stream *s, Egret__V1__Loss__Source source, uint64_t count,
		      uint64_t first, uint64_t last, const char *sink, const char *stream_id,
		      const char *detail)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Loss loss = EGRET__V1__LOSS__INIT;

	loss.source = source;
	loss.count = count;
	loss.first_seq = first;
	loss.last_seq = last;
	loss.sink = (char *)(sink ? sink : "");
	loss.stream_id = (char *)(stream_id && strcmp(stream_id, s->id) ? stream_id : "");
	loss.detail = (char *)detail;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_LOSS;
	ev.loss = &loss;
	stream__emit(s, &ev);
}

static void on_sink_loss(void *ctx, struct sink *sink, const struct sink_loss *l)
{
	emit_loss(ctx, EGRET__V1__LOSS__SOURCE__SOURCE_SINK_REJECTED, l->count, l->first_seq,
		  l->last_seq, sink->uri, l->stream_id, l->detail);
}

void stream__report_damage(struct stream *s)
{
	for (size_t i = 0; i < s->spool.ndamage; i++) {
		const struct spool_damage *d = &s->spool.damage[i];
		char detail[256];

		spool__damage_text(d, detail, sizeof(detail));
		emit_loss(s, EGRET__V1__LOSS__SOURCE__SOURCE_SPOOL_DAMAGED, d->bytes, 0, 0, NULL,
			  NULL, detail);
	}
	s->spool.ndamage = 0;
}

/* ---- sink positions, kept across restarts ---------------------------------------------- */

static bool saved_pos(struct stream *s, const char *uri, struct spool_pos *pos)
{
	FILE *f = fopen(s->cursors_path, "re");
	char line[PATH_MAX + 64];
	bool found = false;

	while (f && !found && fgets(line, sizeof(line), f)) {
		unsigned long long seg, off;
		int n = 0;

		line[strcspn(line, "\n")] = '\0';
		if (sscanf(line, "%llu %llu %n", &seg, &off, &n) == 2 && n &&
		    !strcmp(line + n, uri)) {
			pos->seg = seg;
			pos->off = off;
			found = true;
		}
	}
	if (f)
		fclose(f);
	return found;
}

static void save_positions(struct stream *s, bool force)
{
	char tmp[sizeof(s->cursors_path) + 8];
	bool changed = force;
	FILE *f;

	for (unsigned int i = 0; i < s->nsinks; i++)
		changed |= spool__pos_cmp(s->saved[i], s->sinks[i]->acked) != 0;
	if (!changed || !s->spool_open)
		return;
	snprintf(tmp, sizeof(tmp), "%s.tmp", s->cursors_path);
	f = fopen(tmp, "we");
	if (!f) {
		log_err("spool: cannot write %s: %s", tmp, strerror(errno));
		return;
	}
	for (unsigned int i = 0; i < s->nsinks; i++) {
		fprintf(f, "%llu %llu %s\n", (unsigned long long)s->sinks[i]->acked.seg,
			(unsigned long long)s->sinks[i]->acked.off, s->sinks[i]->uri);
		s->saved[i] = s->sinks[i]->acked;
	}
	if (fflush(f) || (s->spool.sync != SPOOL_SYNC_NEVER && fdatasync(fileno(f))) || fclose(f) ||
	    rename(tmp, s->cursors_path)) {
		log_err("spool: cannot save sink positions in %s: %s", s->cursors_path,
			strerror(errno));
		unlink(tmp);
	}
}

int stream__add_sink(struct stream *s, struct sink *sink, struct loop *loop)
{
	struct spool_pos pos = spool__end(&s->spool), head = spool__head(&s->spool);
	const struct spool_seg *seg;
	int err;

	if (s->nsinks == STREAM_MAX_SINKS)
		return -E2BIG;
	if (saved_pos(s, sink->uri, &pos)) {
		/* a segment that is gone was delivered, or evicted and reported */
		seg = spool__seg(&s->spool, pos.seg);
		if (pos.seg < head.seg)
			pos = head;
		else if (!seg || pos.off > seg->bytes)
			pos = spool__end(&s->spool);
		else if (!spool__at_record(&s->spool, pos)) {
			log_err("sink %s: saved position %llu:%llu is not at a record; delivering "
				"segment %llu from its start",
				sink->uri, (unsigned long long)pos.seg, (unsigned long long)pos.off,
				(unsigned long long)pos.seg);
			pos.off = 0;
		} else if (spool__behind(&s->spool, pos))
			log_info("sink %s: %llu bytes spooled by an earlier run to deliver",
				 sink->uri, (unsigned long long)spool__behind(&s->spool, pos));
	}
	err = sink__start(sink, &s->spool, loop, pos, on_sink_loss, s);
	if (err)
		return err;
	s->saved[s->nsinks] = pos;
	s->sinks[s->nsinks++] = sink;
	return 0;
}

/* ---- moving events along ------------------------------------------------------------------- */

/* At the size limit the oldest segment goes; every sink that had not delivered all of it
 * hears exactly which events it lost.
 */
static void evict(struct stream *s)
{
	const struct spool_seg *old;

	while ((old = spool__evictable(&s->spool))) {
		struct spool_seg seg = *old;
		struct spool_pos after = { .seg = s->spool.segs[1].id, .off = 0 };

		for (unsigned int i = 0; i < s->nsinks; i++) {
			struct sink *k = s->sinks[i];
			uint64_t first = seg.first_seq;
			char sid[33], detail[200];

			if (k->acked.seg > seg.id ||
			    (k->acked.seg == seg.id && k->acked.off >= seg.bytes))
				continue;
			if (k->acked.seg == seg.id &&
			    spool__seq_at(&s->spool, k->acked, &first, sid))
				first = seg.first_seq;
			snprintf(detail, sizeof(detail),
				 "the spool reached its limit of %llu bytes while this sink was "
				 "behind; its oldest %llu bytes were evicted",
				 (unsigned long long)s->spool.limit, (unsigned long long)seg.bytes);
			emit_loss(s, EGRET__V1__LOSS__SOURCE__SOURCE_SPOOL,
				  seg.last_seq - first + 1, first, seg.last_seq, k->uri,
				  seg.stream_id, detail);
			sink__skip(k, after);
		}
		spool__evict(&s->spool);
	}
}

void stream__flush(struct stream *s)
{
	struct spool_pos min;

	if (!s->spool_open)
		return;
	spool__flush(&s->spool);
	if (s->spool.dropped && !s->spool.write_err) {
		uint64_t n = s->spool.dropped, first = s->spool.dropped_first,
			 last = s->spool.dropped_last;
		char detail[160], sid[33];

		snprintf(sid, sizeof(sid), "%s", s->spool.dropped_stream);
		s->spool.dropped = 0;
		snprintf(detail, sizeof(detail),
			 "the spool could not be written and %u MiB were held in memory",
			 SPOOL_BUF_MAX >> 20);
		emit_loss(s, EGRET__V1__LOSS__SOURCE__SOURCE_SPOOL_WRITE, n, first, last, NULL, sid,
			  detail);
		spool__flush(&s->spool);
	}
	evict(s);
	spool__flush(&s->spool); /* what evict() reported */
	for (unsigned int i = 0; i < s->nsinks; i++)
		sink__pump(s->sinks[i]);
	min = spool__end(&s->spool);
	for (unsigned int i = 0; i < s->nsinks; i++) {
		if (spool__pos_cmp(s->sinks[i]->acked, min) < 0)
			min = s->sinks[i]->acked;
	}
	spool__release(&s->spool, min);
}

void stream__tick(struct stream *s)
{
	if (!s->spool_open)
		return;
	if (s->spool.sync == SPOOL_SYNC_SECOND)
		spool__sync(&s->spool);
	save_positions(s, false);
}

/* every sink that can take events has them all */
static bool all_delivered(struct stream *s)
{
	for (unsigned int i = 0; i < s->nsinks; i++) {
		if (spool__behind(&s->spool, s->sinks[i]->acked) && s->sinks[i]->up)
			return false;
	}
	return true;
}

void stream__drain(struct stream *s, struct loop *loop)
{
	uint64_t until = now_ns(CLOCK_MONOTONIC) + STREAM_STOP_NS;

	if (!s->spool_open)
		return;
	do {
		stream__flush(s);
		if (all_delivered(s))
			break;
		loop__run_once(loop, 10);
	} while (now_ns(CLOCK_MONOTONIC) < until);
	for (unsigned int i = 0; i < s->nsinks; i++) {
		uint64_t behind = spool__behind(&s->spool, s->sinks[i]->acked);

		if (behind)
			log_info("sink %s: %llu bytes stay spooled in %s for the next start",
				 s->sinks[i]->uri, (unsigned long long)behind, s->spool.dir);
	}
	save_positions(s, true);
	spool__sync(&s->spool);
}

void stream__free(struct stream *s)
{
	for (unsigned int i = 0; i < s->nsinks; i++)
		sink__close(s->sinks[i]);
	s->nsinks = 0;
	if (s->spool_open)
		spool__close(&s->spool);
	s->spool_open = false;
	pbencode__buf_free(&s->enc);
}
