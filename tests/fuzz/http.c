/* Fuzz target: an HTTP response as an OTLP receiver sends it (http__parse_response), in a
 * buffer of exactly its size, with and without the connection closed after it; and its
 * Retry-After value (http__retry_after).
 * Invariants: a whole response's body lies inside the bytes received; its status is 100-999.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "http.h"

static void parse(const uint8_t *data, size_t size, bool eof)
{
	char *buf = malloc(size ? size : 1);
	struct http_response r;
	int ret;

	if (!buf)
		return;
	memcpy(buf, data, size);
	ret = http__parse_response(buf, size, eof, &r);
	if (ret != 0 && ret != 1 && ret != -EBADMSG)
		abort();
	if (ret == 1) {
		if (r.body_off > size || r.body_len > size - r.body_off || r.status < 100 ||
		    r.status > 999)
			abort();
		if (!memchr(r.retry_after, '\0', sizeof(r.retry_after)) ||
		    !memchr(r.content_type, '\0', sizeof(r.content_type)))
			abort();
		if (http__retry_after(r.retry_after, 1700000000) < -1)
			abort();
	}
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char value[128];
	size_t n = size < sizeof(value) - 1 ? size : sizeof(value) - 1;

	parse(data, size, false);
	parse(data, size, true);
	memcpy(value, data, n);
	value[n] = '\0';
	if (http__retry_after(value, 1700000000) < -1)
		abort();
	return 0;
}
