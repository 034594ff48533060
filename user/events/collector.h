/* The kernel side of the pipeline: drains the ring buffers (`events`, `bulk_events`) as one
 * stream in time order, turns each record into an Event (envelope from the record header,
 * payload from the record's handler) and reports what the kernel lost as Loss events, per
 * sandbox and record kind.
 */
#ifndef EGRET_COLLECTOR_H
#define EGRET_COLLECTOR_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "decoder.h"
#include "egret/events.h"
#include "rings.h"
#include "sandbox.h"
#include "stream.h"

struct loader_maps;

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
	struct rings rings;
	bool have_rings;
	int counters_fd;
	int losses_fd;	 /* `losses`: per sandbox and kind, added to by the kernel */
	int reported_fd; /* `losses_reported`: what of it this and earlier egretds reported */
	struct record_decoder decoders[COLLECTOR_DECODERS];
	size_t n_decoders;
	uint64_t records;	  /* kernel records decoded */
	uint64_t bad_records;	  /* records egretd could not decode (reported as Loss) */
	unsigned int loss_checks; /* collector__check_drops calls, for the clean-up of `losses` */
};

/* The collector without ring buffers or counters (tests feed it with collector__record).
 * names is egretd's sandbox registry (engine.reg), shared, not owned.
 */
int collector__init_offline(struct collector *c, struct stream *s, struct sandbox_names *names);
/* On the kernel's maps: events, bulk_events, counters, losses, losses_reported. */
int collector__init(struct collector *c, struct stream *s, struct sandbox_names *names,
		    const struct loader_maps *maps);
int collector__fd(const struct collector *c);
int collector__poll(struct collector *c);
/* One ring buffer record of size bytes: decoded into its event, or reported as a decode Loss. */
void collector__record(struct collector *c, const void *data, size_t size);
/* The kernel's losses not reported yet, as Loss events: one per sandbox, record kind and cause
 * (SOURCE_RINGBUF, SOURCE_BUDGET), and one without a sandbox for losses the per-sandbox map had
 * no room for. They count as reported from now on, in pinned maps, so losses made while egretd
 * was down are reported by the next egretd.
 */
void collector__check_drops(struct collector *c);
/* A time egretd did not drain the rings (selfwatch.h): a Loss event (SOURCE_AGENT_GAP) whose
 * count is every kernel record a ring dropped meanwhile, then one per sandbox and record kind
 * saying whose they were (SOURCE_AGENT_GAP with record_kind set: parts of that count), and the
 * budget losses as collector__check_drops reports them.
 */
void collector__report_gap(struct collector *c, uint64_t start_unix_ns, uint64_t duration_ns,
			   bool rebooted, const char *cause);
/* What a total's new losses (*reported of it reported before) hold beyond the itemized ones
 * taken with it: the part no (sandbox, kind) count holds. *reported advances by both. A total
 * read before the itemized counts may lag them (the kernel counts per sandbox first): then
 * nothing is unkeyed and *reported runs ahead of the total until it catches up.
 */
uint64_t collector__unkeyed(uint64_t total, uint64_t *reported, uint64_t itemized);
/* Records of this type (at least size bytes) to decode; 0, -EEXIST or -ENOSPC. */
int collector__register(struct collector *c, __u32 type, size_t size, decoder_fn decode);
int collector__counter(int counters_fd, __u32 idx, uint64_t *sum);
void collector__format_counters(int counters_fd, char *buf, size_t size);

/* The kernel's counters by name ("connect4.denied", "ringbuf_drops", ...). */
#define COLLECTOR_COUNTERS 48
struct counter_value {
	char name[32];
	uint64_t value;
};
size_t collector__counters(int counters_fd, struct counter_value *out, size_t max);
void collector__free(struct collector *c);

#endif /* EGRET_COLLECTOR_H */
