/* The event stream: envelope, sequence numbers, encoding, fan-out to sinks. */
#include <errno.h>
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

int stream__add_sink(struct stream *s, struct sink *sink)
{
	if (s->nsinks == STREAM_MAX_SINKS)
		return -E2BIG;
	s->sinks[s->nsinks++] = sink;
	return 0;
}

/* Re-read the offset between boot time (kernel timestamps) and wall-clock time. */
void stream__sync_clock(struct stream *s)
{
	s->boot_to_unix = (int64_t)now_ns(CLOCK_REALTIME) - (int64_t)now_ns(CLOCK_BOOTTIME);
}

uint64_t stream__unix_ns(const struct stream *s, uint64_t boot_ns)
{
	return (uint64_t)((int64_t)boot_ns + s->boot_to_unix);
}

static uint8_t *scratch(struct stream *s, size_t need)
{
	if (need > s->scratch_cap) {
		size_t cap = need < 4096 ? 4096 : need * 2;
		uint8_t *nb = realloc(s->scratch, cap);

		if (!nb)
			return NULL;
		s->scratch = nb;
		s->scratch_cap = cap;
	}
	return s->scratch;
}

/* Stamp, encode and queue ev on every sink; returns its sequence number. time_unix_nano is
 * left as the caller set it, or now when 0.
 */
uint64_t stream__emit(struct stream *s, Egret__V1__Event *ev)
{
	size_t len, hdr;
	unsigned int taken = 0;
	uint8_t *buf;

	ev->stream_id = s->id;
	ev->seq = ++s->seq;
	ev->host = s->host;
	ev->sensor_version = (char *)EGRET_VERSION;
	if (!ev->time_unix_nano)
		ev->time_unix_nano = now_ns(CLOCK_REALTIME);
	len = egret__v1__event__get_packed_size(ev);
	buf = scratch(s, len + WIRE_VARINT_MAX);
	if (!buf) {
		s->unsent++;
		log_err("out of memory encoding event %llu", (unsigned long long)ev->seq);
		return ev->seq;
	}
	hdr = wire__varint_put(len, buf);
	egret__v1__event__pack(ev, buf + hdr);
	for (unsigned int i = 0; i < s->nsinks; i++)
		taken += sink__write(s->sinks[i], buf, hdr + len) == 0;
	if (!taken)
		s->unsent++;
	return ev->seq;
}

void stream__flush(struct stream *s)
{
	for (unsigned int i = 0; i < s->nsinks; i++)
		sink__flush(s->sinks[i]);
}

void stream__free(struct stream *s)
{
	free(s->scratch);
	s->scratch = NULL;
}
