/* The wire framing of the event stream: each egret.v1.Event preceded by its length as a
 * base-128 varint. Encoding for sinks, and a reader for egretctl tail and the tests.
 */
#ifndef EGRET_WIRE_H
#define EGRET_WIRE_H

#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define WIRE_VARINT_MAX 10
#define WIRE_RECORD_MAX (16u << 20) /* larger length prefixes mean "not an egret stream" */

/* v as a varint at out (room for WIRE_VARINT_MAX bytes): its size. Inline, as the reader:
 * the encoders write every field's tag and length with it.
 */
static inline size_t wire__varint_put(uint64_t v, uint8_t *out)
{
	size_t n = 0;

	while (v >= 0x80) {
		out[n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	out[n++] = (uint8_t)v;
	return n;
}

/* The size of v as a varint */
static inline size_t wire__varint_len(uint64_t v)
{
	size_t n = 1;

	while (v >= 0x80) {
		v >>= 7;
		n++;
	}
	return n;
}

/* The varint at the start of buf[0, len): 0 with its value and size; -EAGAIN when buf ends
 * inside it; -EBADMSG past WIRE_VARINT_MAX bytes. Inline: pbdecode reads every field with it.
 */
static inline int wire__varint_get(const uint8_t *buf, size_t len, uint64_t *v, size_t *used)
{
	uint64_t val = 0;

	for (size_t i = 0; i < WIRE_VARINT_MAX; i++) {
		if (i == len)
			return -EAGAIN;
		val |= (uint64_t)(buf[i] & 0x7f) << (7 * i);
		if (!(buf[i] & 0x80)) {
			*v = val;
			*used = i + 1;
			return 0;
		}
	}
	return -EBADMSG;
}
/* The record at the start of buf: 1 with its total size (prefix + message) and the message's
 * offset; 0 when buf ends inside it; -EBADMSG when the prefix cannot start an egret record.
 */
int wire__frame(const uint8_t *buf, size_t len, size_t *total, size_t *msg_off);
/* Whole records at the start of buf, at most max of them: their bytes, and *count. */
size_t wire__whole(const uint8_t *buf, size_t len, size_t max, size_t *count);

struct wire_reader {
	FILE *f;
	uint8_t *buf;
	size_t cap;
	uint64_t offset; /* stream offset of the next record */
};

void wire_reader__init(struct wire_reader *r, FILE *f);
int wire_reader__next(struct wire_reader *r, const uint8_t **msg, size_t *len);
void wire_reader__free(struct wire_reader *r);

#endif /* EGRET_WIRE_H */
