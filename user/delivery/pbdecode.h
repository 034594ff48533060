/* A one-pass decoder for the protobuf messages egretd writes (the spool's Events), filling the
 * structs protobuf-c's generated code declares, much faster than protobuf-c's unpack. It
 * declines (NULL) any input not in the plain shape egret writes, for protobuf-c to decide
 * (pbdecode.c says which).
 */
#ifndef EGRET_PBDECODE_H
#define EGRET_PBDECODE_H

#include <stddef.h>
#include <stdint.h>

#include <protobuf-c/protobuf-c.h>

/* The message of type desc in data[0, len), allocated from a (not NULL: an arena, freed all
 * at once; a declined input may leave some of it used); NULL: declined. For proto3 messages:
 * a proto2 required field's absence is not checked (egret's have none: a unit test walks them).
 */
ProtobufCMessage *pbdecode__unpack(const ProtobufCMessageDescriptor *desc, ProtobufCAllocator *a,
				   size_t len, const uint8_t *data);
/* The same, protobuf-c's unpack deciding what this declines: protobuf-c's result for any input */
ProtobufCMessage *pbdecode__unpack_any(const ProtobufCMessageDescriptor *desc,
				       ProtobufCAllocator *a, size_t len, const uint8_t *data);

#endif /* EGRET_PBDECODE_H */
