/* For tests: does every string field of a protobuf-c message, and of the messages inside it,
 * hold valid UTF-8 (as protobuf requires of string fields)? By reflection over the descriptor,
 * with jsoncheck.h's UTF-8 check. Header-only.
 */
#ifndef EGRET_PBCHECK_H
#define EGRET_PBCHECK_H

#include <string.h>

#include <protobuf-c/protobuf-c.h>

#include "jsoncheck.h"

static inline bool pbcheck_utf8(const ProtobufCMessage *m);

static inline bool pbcheck_member(const ProtobufCFieldDescriptor *f, const void *v)
{
	if (f->type == PROTOBUF_C_TYPE_STRING) {
		const char *s = *(char *const *)v;

		return !s || jsoncheck_utf8_valid(s, strlen(s));
	}
	if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(ProtobufCMessage *const *)v)
		return pbcheck_utf8(*(ProtobufCMessage *const *)v);
	return true;
}

static inline bool pbcheck_utf8(const ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	const char *base = (const char *)m;

	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const char *member = base + f->offset;

		if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if ((f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) &&
		    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			char *const *arr = *(char **const *)member;

			for (size_t j = 0; j < n; j++) {
				if (!pbcheck_member(f, &arr[j]))
					return false;
			}
		} else if (!pbcheck_member(f, member)) {
			return false;
		}
	}
	return true;
}

#endif /* EGRET_PBCHECK_H */
