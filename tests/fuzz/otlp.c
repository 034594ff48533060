/* Fuzz target: arbitrary bytes as one record of the event stream, through the OTLP sink's
 * encoding (otlp__encode: LogRecord, attributes, JSON body, gzip). Invariants: the request
 * decodes as an ExportLogsServiceRequest, every string in it is valid UTF-8 (protobuf requires
 * it; a collector refuses the whole request otherwise), and each body is valid JSON.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include "jsoncheck.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "otlp.h"
#include "pbcheck.h"
#include "wire.h"

#define PLAIN_MAX (1u << 20) /* a 4 KiB input renders to far less */

static size_t gunzip(const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
	z_stream z = {
		.next_in = (Bytef *)in, .avail_in = (uInt)n, .next_out = out, .avail_out = (uInt)cap
	};
	size_t len;

	if (inflateInit2(&z, 15 + 16) != Z_OK)
		abort();
	if (inflate(&z, Z_FINISH) != Z_STREAM_END)
		abort();
	len = z.total_out;
	inflateEnd(&z);
	return len;
}

static void check_request(const uint8_t *plain, size_t len, size_t records)
{
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req =
		opentelemetry__proto__collector__logs__v1__export_logs_service_request__unpack(
			NULL, len, plain);
	const Opentelemetry__Proto__Logs__V1__ScopeLogs *sl;

	if (!req || req->n_resource_logs != 1 || !pbcheck_utf8(&req->base))
		abort();
	sl = req->resource_logs[0]->scope_logs[0];
	if (sl->n_log_records != records)
		abort();
	for (size_t i = 0; i < sl->n_log_records; i++) {
		const char *body = sl->log_records[i]->body->string_value;

		if (!jsoncheck_valid(body, strlen(body)))
			abort();
	}
	opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(req,
											      NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t plain[PLAIN_MAX];
	uint8_t *raw = malloc(size + WIRE_VARINT_MAX), *gz = NULL;
	size_t n, len, records;
	uint64_t first, last;
	char sid[33];

	if (!raw)
		return 0;
	n = wire__varint_put(size, raw);
	memcpy(raw + n, data, size);
	/* in turn: a one-shot encoder, one kept across inputs as the sink keeps it, and a kept one
	 * that does not gzip (?compression=none)
	 */
	static struct otlp_encoder *kept, *as_is;
	static unsigned int calls;
	unsigned int which = calls++ % 3;

	if (!kept)
		kept = otlp__encoder_new(true);
	if (!as_is)
		as_is = otlp__encoder_new(false);
	struct otlp_encoder *enc = which == 0 ? NULL : which == 1 ? kept : as_is;
	size_t room = which * 7; /* the sink's room for its HTTP head, at the front */

	if (otlp__encode(enc, raw, n + size, room, &gz, &len, &records, &first, &last, sid)) {
		free(raw);
		return 0;
	}
	if (which == 2)
		check_request(gz + room, len, records);
	else
		check_request(plain, gunzip(gz + room, len, plain, PLAIN_MAX), records);
	free(gz);
	free(raw);
	return 0;
}
