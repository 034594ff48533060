/* The little HTTP/1.1 the OTLP sink needs: a response parser and Retry-After. */
#ifndef EGRET_HTTP_H
#define EGRET_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <time.h>

#define HTTP_MAX_RESPONSE (1u << 20)

struct http_response {
	int status;
	bool close;	      /* Connection: close, or HTTP/1.0 */
	char retry_after[64]; /* the header's value, "" when absent */
	char content_type[64];
	size_t body_off; /* where the body starts in the buffer */
	size_t body_len; /* its length (chunked: decoded in place) */
};

/* 1 when buf holds a whole response (described in *r; a chunked body is decoded in place);
 * 0 when more is needed; -EBADMSG when it is not HTTP. at_eof: the connection has closed, so a
 * body without a length ends here.
 */
int http__parse_response(char *buf, size_t len, bool at_eof, struct http_response *r);
/* Seconds to wait for a Retry-After value (delta-seconds or an HTTP-date); -1 when unusable. */
long http__retry_after(const char *value, time_t now);

#endif /* EGRET_HTTP_H */
