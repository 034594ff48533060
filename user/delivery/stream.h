/* The event stream: stamps every Event with the stream id, the next sequence number, host and
 * version, encodes it once and appends it to the spool; the sinks take it from there (see
 * spool.h, sink.h). The stream also turns what the spool and the sinks lose into Loss events,
 * and keeps each sink's position in the spool across restarts.
 */
#ifndef EGRET_STREAM_H
#define EGRET_STREAM_H

#include <stdint.h>

#include "egret/ocsf.h" /* the class and activity hints every event carries */
#include "egret/v1/events.pb-c.h"
#include "pbencode.h"
#include "sink.h"
#include "spool.h"

#define STREAM_MAX_SINKS 8
#define STREAM_STOP_NS	 (3ull * 1000000000ull) /* a graceful stop waits this long for sinks */

struct stream {
	char id[33];  /* 32 hex digits, random per start */
	uint64_t seq; /* last sequence number assigned */
	char host[256];
	int64_t boot_to_unix; /* add to CLOCK_BOOTTIME ns for Unix time ns */
	struct spool spool;
	bool spool_open;
	unsigned int nsinks;
	struct sink *sinks[STREAM_MAX_SINKS];
	struct pbencode_buf enc; /* each event is encoded here, kept from event to event */
	uint64_t lost;		 /* events reported lost since start, every source */
	char cursors_path[PATH_MAX + 16];
	struct spool_pos saved[STREAM_MAX_SINKS]; /* positions last written to cursors_path */
};

int stream__init(struct stream *s);
int stream__open_spool(struct stream *s, const char *dir, uint64_t limit, enum spool_sync sync);
/* Start a parsed sink at its saved position (new sinks: at the end of the spool). */
int stream__add_sink(struct stream *s, struct sink *sink, struct loop *loop);
/* Loss events for what the spool found damaged when it opened. */
void stream__report_damage(struct stream *s);
uint64_t stream__emit(struct stream *s, Egret__V1__Event *ev);
/* Write out what was emitted and move it along to the sinks. */
void stream__flush(struct stream *s);
/* Once a second: the spool's sync policy, the sinks' saved positions. */
void stream__tick(struct stream *s);
/* A graceful stop: flush, give the sinks up to STREAM_STOP_NS, save positions. */
void stream__drain(struct stream *s, struct loop *loop);
void stream__sync_clock(struct stream *s);
uint64_t stream__unix_ns(const struct stream *s, uint64_t boot_ns);
void stream__free(struct stream *s);

#endif /* EGRET_STREAM_H */
