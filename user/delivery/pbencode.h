/* A one-pass encoder for the protobuf messages egretd writes (the spool's Events): the bytes
 * protobuf-c's pack writes for the same struct, in one walk instead of two (pbencode.c).
 */
#ifndef EGRET_PBENCODE_H
#define EGRET_PBENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "wire.h"

/* a growing buffer, kept from message to message; err once memory ran out (then nothing more
 * is written). The OTLP encoder writes its requests into one with the writers below.
 */
struct pbencode_buf {
	uint8_t *p;
	size_t len, cap;
	bool err;
};

/* protobuf's wire types */
enum {
	PB_WT_VARINT = 0,
	PB_WT_I64 = 1,
	PB_WT_LEN = 2,
	PB_WT_I32 = 5,
};

/* room for n more bytes: false (b->err) when memory ran out. The slow path of pbencode__room. */
bool pbencode__grow(struct pbencode_buf *b, size_t n);

static inline bool pbencode__room(struct pbencode_buf *b, size_t n)
{
	return !b->err && (b->len + n <= b->cap || pbencode__grow(b, n));
}

static inline void pbencode__varint(struct pbencode_buf *b, uint64_t v)
{
	if (pbencode__room(b, WIRE_VARINT_MAX))
		b->len += wire__varint_put(v, b->p + b->len);
}

static inline void pbencode__raw(struct pbencode_buf *b, const void *d, size_t n)
{
	if (n && pbencode__room(b, n)) {
		memcpy(b->p + b->len, d, n);
		b->len += n;
	}
}

static inline void pbencode__tag(struct pbencode_buf *b, uint32_t field, unsigned int wt)
{
	pbencode__varint(b, (uint64_t)field << 3 | wt);
}

/* A nested message or a packed run begins, `kept` bytes kept for its length: its content's
 * offset, for pbencode__close with the same `kept`. A content whose length takes as many bytes
 * as were kept is not moved when it closes.
 */
size_t pbencode__open(struct pbencode_buf *b, size_t kept);
/* ... and ends: its length in front of it, in as many bytes as it needs */
void pbencode__close(struct pbencode_buf *b, size_t start, size_t kept);

/* m's bytes appended to b: 0, or -1 when memory ran out (b->err) */
int pbencode__pack(struct pbencode_buf *b, const ProtobufCMessage *m);
/* b emptied, then m framed as the event stream frames it (wire.h: its length as a varint, then
 * the message): the frame is b->p + *off to b->len. 0, or -1 when memory ran out.
 */
int pbencode__frame(struct pbencode_buf *b, const ProtobufCMessage *m, size_t *off);
void pbencode__buf_free(struct pbencode_buf *b);

#endif /* EGRET_PBENCODE_H */
