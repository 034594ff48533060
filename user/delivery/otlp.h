/* The otlp+http sink: events as OTLP log records, POSTed as a gzipped protobuf
 * ExportLogsServiceRequest to an OpenTelemetry Collector, Vector, Fluent Bit, Elastic, Datadog
 * or anything else that speaks OTLP/HTTP. One request at a time on one connection (what every
 * receiver's defaults accept), the next batch encoded while the receiver works on the one sent;
 * 429, 502, 503 and 504 are
 * retried (after Retry-After when the receiver gives one), other refusals are reported as Loss
 * and not sent again, as the OTLP specification asks.
 */
#ifndef EGRET_OTLP_H
#define EGRET_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define OTLP_BATCH_RECORDS 1000
#define OTLP_BATCH_BYTES   (1u << 20)
#define OTLP_TIMEOUT_NS	   (30ull * 1000000000ull)
#define OTLP_RETRY_MAX_S   600	/* a Retry-After longer than this is cut to it */
#define OTLP_HEAD_ROOM	   1024 /* the sink's HTTP head goes before the body, in this room */
#define OTLP_URI_MAX	   768	/* a host and path longer than this are refused: the head fits */

struct sink_ops;

/* The otlp+http sink's implementation (sink.h) */
extern const struct sink_ops otlp_sink_ops;

/* What one encode leaves for the next: its buffers and deflate state (a sink encodes batch after
 * batch; allocating them afresh for each cost more than a tenth of the encoding).
 */
struct otlp_encoder;
/* gzip: each request gzipped (Content-Encoding: gzip); else sent as it is */
struct otlp_encoder *otlp__encoder_new(bool gzip);
void otlp__encoder_free(struct otlp_encoder *e);

/* Framed Events raw[0..n) as an ExportLogsServiceRequest, gzipped if e says so, after room
 * bytes left for the caller: *out (malloc'd: the request at *out + room) and the request's
 * size; the seq range and stream of the records. e: an encoder to reuse, or NULL (gzip). 0 or
 * -errno.
 */
int otlp__encode(struct otlp_encoder *e, const uint8_t *raw, size_t n, size_t room, uint8_t **out,
		 size_t *outlen, size_t *records, uint64_t *first_seq, uint64_t *last_seq,
		 char stream_id[33]);

#endif /* EGRET_OTLP_H */
