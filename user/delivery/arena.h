/* A bump allocator for decoding a batch of spooled events: protobuf-c unpacks each event's
 * strings and messages from it, one bump each, and nothing is freed until the batch is done (a
 * malloc and a free per string and message cost more than the decoding). The OTLP sink and the
 * JSON sinks decode with one each.
 */
#ifndef EGRET_ARENA_H
#define EGRET_ARENA_H

#include <stdbool.h>
#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

struct arena_block;

struct arena {
	struct arena_block *head;
	bool failed;	       /* an allocation failed: the batch is given up */
	ProtobufCAllocator pb; /* from this arena, after arena__init */
};

void arena__init(struct arena *a);
/* Empty, its room kept: several blocks become one of their size together. */
void arena__reset(struct arena *a);
void arena__release(struct arena *a);
/* Its blocks freed when together they are more than keep bytes (a receiver's arena, after a
 * peer's huge record: not kept for the rest of the connection); before arena__reset, which
 * would join them. Usable as before.
 */
void arena__trim(struct arena *a, size_t keep);

#endif /* EGRET_ARENA_H */
