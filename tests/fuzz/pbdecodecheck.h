/* For tests: does pbdecode (user/delivery/pbdecode.h) give protobuf-c's answer for these bytes
 * as an egret.v1.Event? Either it declines, or protobuf-c decodes them too and the two
 * messages pack to the same bytes. And does pbencode (pbencode.h) write protobuf-c's bytes for
 * a message? Header-only: the fuzz target pbdecode and the unit tests.
 */
#ifndef EGRET_PBDECODECHECK_H
#define EGRET_PBDECODECHECK_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arena.h"
#include "egret/v1/events.pb-c.h"
#include "pbdecode.h"
#include "pbencode.h"

/* 1: pbencode writes m as protobuf-c's pack does, byte for byte, framed or not; 0: not */
static inline int pbencode_check(const ProtobufCMessage *m)
{
	size_t n = protobuf_c_message_get_packed_size(m), off = 0;
	struct pbencode_buf b = { 0 }, f = { 0 };
	uint8_t *ref = malloc(n + 1), pre[16];
	int same;

	if (!ref)
		abort();
	protobuf_c_message_pack(m, ref);
	/* an empty message leaves b.p NULL: no memcmp of it */
	same = !pbencode__pack(&b, m) && b.len == n && (!n || !memcmp(b.p, ref, n));
	if (!same)
		fprintf(stderr, "pbencode: %zu bytes, protobuf-c %zu, not the same\n", b.len, n);
	if (!pbencode__frame(&f, m, &off)) {
		size_t hl = 0;

		for (uint64_t v = n; hl == 0 || v; v >>= 7)
			pre[hl++] = (uint8_t)((v & 0x7f) | (v >> 7 ? 0x80 : 0));
		if (f.len - off != hl + n || memcmp(f.p + off, pre, hl) ||
		    memcmp(f.p + off + hl, ref, n)) {
			fprintf(stderr, "pbencode: the frame is not the message's\n");
			same = 0;
		}
	} else {
		same = 0;
	}
	pbencode__buf_free(&b);
	pbencode__buf_free(&f);
	free(ref);
	return same;
}

/* 1: the same answer (*decoded: pbdecode did not decline); 0: not (what differs on stderr) */
static inline int pbdecode_check(const uint8_t *data, size_t size, bool *decoded)
{
	struct arena a;
	ProtobufCMessage *fast;
	Egret__V1__Event *ref;
	int same = 1;

	arena__init(&a);
	fast = pbdecode__unpack(&egret__v1__event__descriptor, &a.pb, size, data);
	ref = egret__v1__event__unpack(NULL, size, data);
	*decoded = fast != NULL;
	if (fast && !ref) {
		fprintf(stderr, "pbdecode: decoded what protobuf-c refuses (%zu bytes)\n", size);
		same = 0;
	} else if (fast) {
		size_t n1 = protobuf_c_message_get_packed_size(fast);
		size_t n2 = egret__v1__event__get_packed_size(ref);
		uint8_t *p1 = malloc(n1 + 1), *p2 = malloc(n2 + 1);

		if (!p1 || !p2)
			abort();
		if (n1 != n2 || protobuf_c_message_pack(fast, p1) != n1 ||
		    egret__v1__event__pack(ref, p2) != n2 || memcmp(p1, p2, n1)) {
			fprintf(stderr,
				"pbdecode: a message other than protobuf-c's (%zu, %zu bytes)\n",
				n1, n2);
			same = 0;
		}
		free(p1);
		free(p2);
	}
	if (ref && !pbencode_check(&ref->base))
		same = 0;
	if (ref)
		egret__v1__event__free_unpacked(ref, NULL);
	arena__release(&a);
	return same;
}

#endif /* EGRET_PBDECODECHECK_H */
