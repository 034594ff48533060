/* A one-pass encoder for the protobuf messages egretd writes (the spool's Events): the bytes
 * protobuf-c's pack writes for the same struct, in one walk instead of two (pbencode.c).
 */
#ifndef EGRET_PBENCODE_H
#define EGRET_PBENCODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* a growing buffer, kept from message to message; err once memory ran out */
struct pbencode_buf {
	uint8_t *p;
	size_t len, cap;
	bool err;
};

/* m's bytes appended to b: 0, or -1 when memory ran out (b->err) */
int pbencode__pack(struct pbencode_buf *b, const ProtobufCMessage *m);
/* b emptied, then m framed as the event stream frames it (wire.h: its length as a varint, then
 * the message): the frame is b->p + *off to b->len. 0, or -1 when memory ran out.
 */
int pbencode__frame(struct pbencode_buf *b, const ProtobufCMessage *m, size_t *off);
void pbencode__buf_free(struct pbencode_buf *b);

#endif /* EGRET_PBENCODE_H */
