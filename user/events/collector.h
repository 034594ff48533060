/* The kernel side of the pipeline: drains the events ring buffer, turns each record into an
 * Event (envelope from the record header, payload from the record's handler) and reports ring
 * buffer drops as Loss events.
 */
#ifndef EGRET_COLLECTOR_H
#define EGRET_COLLECTOR_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "decoder.h"
#include "egret/events.h"
#include "sandbox.h"
#include "stream.h"

struct ring_buffer;

/* A decoder per record type, registered by whoever assembles the pipeline (decoders.h). */
#define COLLECTOR_DECODERS 16
struct record_decoder {
	__u32 type;
	size_t size; /* minimum record size */
	decoder_fn decode;
};

struct collector {
	struct decoder_ctx ctx; /* what decoders see; egretd sets hooks, procs and redactor */
	struct stream *stream;
	struct ring_buffer *rb;
	int counters_fd;
	struct record_decoder decoders[COLLECTOR_DECODERS];
	size_t n_decoders;
	uint64_t records;     /* kernel records decoded */
	uint64_t bad_records; /* records egretd could not decode (reported as Loss) */
};

/* The collector without a ring buffer or counters (tests feed it with collector__record).
 * names is egretd's sandbox registry (engine.reg), shared, not owned.
 */
int collector__init_offline(struct collector *c, struct stream *s, struct sandbox_names *names);
int collector__init(struct collector *c, struct stream *s, struct sandbox_names *names,
		    int events_fd, int counters_fd);
int collector__fd(const struct collector *c);
int collector__poll(struct collector *c);
/* One ring buffer record of size bytes: decoded into its event, or reported as a decode Loss. */
void collector__record(struct collector *c, const void *data, size_t size);
void collector__check_drops(struct collector *c);
/* Ring buffer drops not reported yet; they count as reported from now on. */
uint64_t collector__take_drops(struct collector *c);
/* A time egretd did not drain the ring (selfwatch.h): a Loss event with the drops in it. */
void collector__report_gap(struct collector *c, uint64_t start_unix_ns, uint64_t duration_ns,
			   bool rebooted, const char *cause);
/* Records of this type (at least size bytes) to decode; 0, -EEXIST or -ENOSPC. */
int collector__register(struct collector *c, __u32 type, size_t size, decoder_fn decode);
int collector__counter(int counters_fd, __u32 idx, uint64_t *sum);
void collector__format_counters(int counters_fd, char *buf, size_t size);

/* The kernel's counters by name ("connect4.denied", "ringbuf_drops", ...). */
#define COLLECTOR_COUNTERS 32
struct counter_value {
	char name[32];
	uint64_t value;
};
size_t collector__counters(int counters_fd, struct counter_value *out, size_t max);
void collector__free(struct collector *c);

#endif /* EGRET_COLLECTOR_H */
