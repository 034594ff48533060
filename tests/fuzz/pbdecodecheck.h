/* For tests: does pbdecode (user/delivery/pbdecode.h) give protobuf-c's answer for these bytes
 * as an egret.v1.Event? Either it declines, or protobuf-c decodes them too and the two
 * messages pack to the same bytes. Header-only: the fuzz target pbdecode and the unit tests.
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
	if (ref)
		egret__v1__event__free_unpacked(ref, NULL);
	arena__release(&a);
	return same;
}

#endif /* EGRET_PBDECODECHECK_H */
