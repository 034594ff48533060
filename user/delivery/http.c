/* HTTP/1.1 responses, as much as an OTLP exporter needs. */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "http.h"
#include "util.h"

/* The value of header name in [h, end), copied into out. */
static bool header(const char *h, const char *end, const char *name, char *out, size_t size)
{
	size_t n = strlen(name);

	for (const char *line = h; line < end;) {
		const char *eol = memchr(line, '\n', (size_t)(end - line));

		if (!eol)
			eol = end;
		if ((size_t)(eol - line) > n && !strncasecmp(line, name, n) && line[n] == ':') {
			const char *v = line + n + 1, *ve = eol;

			while (v < ve && (*v == ' ' || *v == '\t'))
				v++;
			while (ve > v && isspace((unsigned char)ve[-1]))
				ve--;
			snprintf(out, size, "%.*s", (int)(ve - v), v);
			return true;
		}
		line = eol + 1;
	}
	return false;
}

static int hex_value(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = (char)(c | 0x20);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A chunk-size line in [p, eol): hex digits, then extensions or spaces up to the end of the
 * line (ignored); -EBADMSG without digits or above HTTP_MAX_RESPONSE.
 */
static int chunk_size(const char *p, const char *eol, size_t *size)
{
	size_t v = 0;
	int d, digits = 0;

	for (; p < eol && (d = hex_value(*p)) >= 0; p++, digits++) {
		v = v * 16 + (size_t)d;
		if (v > HTTP_MAX_RESPONSE)
			return -EBADMSG;
	}
	if (!digits)
		return -EBADMSG;
	*size = v;
	return 0;
}

/* Decode a chunked body at buf[off..len) in place: 1 done, 0 incomplete, -EBADMSG. */
static int dechunk(char *buf, size_t off, size_t len, size_t *body_len)
{
	size_t in = off, out = off;

	for (;;) {
		const char *eol = memchr(buf + in, '\n', len - in);
		size_t size;

		if (!eol)
			return 0;
		if (chunk_size(buf + in, eol, &size))
			return -EBADMSG;
		in = (size_t)(eol - buf) + 1;
		if (size == 0) {
			/* trailers end at an empty line */
			const char *fin = memmem(buf + in - 2, len - (in - 2), "\r\n\r\n", 4);

			if (!fin && !(len - in >= 2 && !memcmp(buf + in, "\r\n", 2)))
				return 0;
			*body_len = out - off;
			return 1;
		}
		if (len - in < size + 2)
			return 0;
		memmove(buf + out, buf + in, size);
		out += size;
		in += size + 2;
	}
}

static bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* "HTTP/1.1 200 Reason" in [p, end), the header block: 0, or -EBADMSG. */
static int status_line(const char *p, const char *end, int *major, int *minor, int *status)
{
	const char *eol = memchr(p, '\n', (size_t)(end - p));

	if (!eol)
		eol = end;
	if (eol - p < 12 || memcmp(p, "HTTP/", 5) || !is_digit(p[5]) || p[6] != '.' ||
	    !is_digit(p[7]) || p[8] != ' ')
		return -EBADMSG;
	*major = p[5] - '0';
	*minor = p[7] - '0';
	p += 9;
	while (p < eol && *p == ' ')
		p++;
	if (eol - p < 3 || !is_digit(p[0]) || !is_digit(p[1]) || !is_digit(p[2]) ||
	    (p + 3 < eol && p[3] != ' ' && p[3] != '\r'))
		return -EBADMSG;
	*status = (p[0] - '0') * 100 + (p[1] - '0') * 10 + (p[2] - '0');
	return *status < 100 ? -EBADMSG : 0;
}

int http__parse_response(char *buf, size_t len, bool at_eof, struct http_response *r)
{
	const char *hend = memmem(buf, len, "\r\n\r\n", 4);
	char v[64];
	int major, minor, status;

	memset(r, 0, sizeof(*r));
	if (len >= 5 && strncmp(buf, "HTTP/", 5))
		return -EBADMSG;
	if (!hend)
		return len > HTTP_MAX_RESPONSE ? -EBADMSG : 0;
	if (status_line(buf, hend, &major, &minor, &status))
		return -EBADMSG;
	r->status = status;
	r->body_off = (size_t)(hend - buf) + 4;
	r->close = major == 1 && minor == 0;
	if (header(buf, hend, "Connection", v, sizeof(v)))
		r->close = !strcasecmp(v, "close");
	header(buf, hend, "Retry-After", r->retry_after, sizeof(r->retry_after));
	header(buf, hend, "Content-Type", r->content_type, sizeof(r->content_type));
	if (status == 204 || status == 304 || status < 200) {
		r->body_len = 0;
		return 1;
	}
	if (header(buf, hend, "Transfer-Encoding", v, sizeof(v)) && strcasestr(v, "chunked"))
		return dechunk(buf, r->body_off, len, &r->body_len);
	if (header(buf, hend, "Content-Length", v, sizeof(v))) {
		uint64_t cl;

		if (parse_u64(v, HTTP_MAX_RESPONSE, &cl))
			return -EBADMSG;
		if (len - r->body_off < cl)
			return 0;
		r->body_len = (size_t)cl;
		return 1;
	}
	/* no length: the body runs to the end of the connection */
	r->close = true;
	r->body_len = len - r->body_off;
	return at_eof ? 1 : 0;
}

long http__retry_after(const char *value, time_t now)
{
	struct tm tm = { 0 };
	char *end;
	long secs;

	if (!value || !*value)
		return -1;
	if (isdigit((unsigned char)*value)) {
		secs = strtol(value, &end, 10);
		return *end || secs < 0 ? -1 : secs;
	}
	end = strptime(value, "%a, %d %b %Y %H:%M:%S GMT", &tm);
	if (!end || *end)
		return -1;
	secs = (long)(timegm(&tm) - now);
	return secs < 0 ? 0 : secs;
}
