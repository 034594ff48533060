/* Varint-delimited framing of egret.v1.Event messages. */
#include <errno.h>
#include <stdlib.h>

#include "array.h"
#include "wire.h"

int wire__frame(const uint8_t *buf, size_t len, size_t *total, size_t *msg_off)
{
	uint64_t size;
	size_t used;
	int err = wire__varint_get(buf, len, &size, &used);

	if (err == -EAGAIN)
		return 0;
	if (err || size > WIRE_RECORD_MAX)
		return -EBADMSG;
	if (used + size > len)
		return 0;
	*total = used + (size_t)size;
	*msg_off = used;
	return 1;
}

size_t wire__whole(const uint8_t *buf, size_t len, size_t max, size_t *count)
{
	size_t off = 0, n = 0, total, msg;

	while (n < max && wire__frame(buf + off, len - off, &total, &msg) == 1) {
		off += total;
		n++;
	}
	*count = n;
	return off;
}

void wire_reader__init(struct wire_reader *r, FILE *f)
{
	r->f = f;
	r->buf = NULL;
	r->cap = 0;
	r->offset = 0;
}

/* 1 and the next record; 0 at a clean end of stream; -EPIPE when the stream ends inside a
 * record (a half-written tail); -EBADMSG for a length prefix that cannot be an egret record;
 * -errno for read errors.
 */
int wire_reader__next(struct wire_reader *r, const uint8_t **msg, size_t *len)
{
	uint8_t hdr[WIRE_VARINT_MAX];
	uint64_t size = 0;
	size_t n = 0, used;
	int c, err = -EAGAIN;

	while (err == -EAGAIN) {
		c = getc(r->f);
		if (c == EOF)
			return ferror(r->f) ? -EIO : (n == 0 ? 0 : -EPIPE);
		hdr[n++] = (uint8_t)c;
		err = wire__varint_get(hdr, n, &size, &used);
	}
	if (err || size > WIRE_RECORD_MAX)
		return -EBADMSG;
	err = ARRAY_RESERVE(r->buf, r->cap, size);
	if (err)
		return err;
	if (size && fread(r->buf, 1, size, r->f) != size)
		return ferror(r->f) ? -EIO : -EPIPE;
	r->offset += used + size;
	*msg = r->buf;
	*len = size;
	return 1;
}

void wire_reader__free(struct wire_reader *r)
{
	free(r->buf);
	r->buf = NULL;
	r->cap = 0;
}
