/* A one-pass protobuf decoder for what egretd itself writes (pbdecode.h). protobuf-c's unpack
 * scans a message twice (once to find and count its fields, once to parse them) through its
 * descriptors' binary searches; with the OTLP sink's encoding written by hand it was the
 * largest single cost of sending an event (a quarter of the sender's CPU). This reads each
 * field once, finds its descriptor with a guess (fields come in number order, so the next one
 * is nearly always the one after the last), and counts a repeated field's entries only when
 * it meets one.
 *
 * It fills the same structs protobuf-c's unpack fills, allocated the same way, for input in
 * the shape protobuf-c and egret write: every field known, each message and oneof member once,
 * a repeated scalar packed in one run or not packed at all. Anything else (an unknown field, a
 * message field twice, which protobuf would merge, a wire type other than the field's, a group,
 * bytes that end early) is declined, and the caller hands the same
 * bytes to protobuf-c, which decides: so the result for any input is protobuf-c's (the fuzz
 * target pbdecode checks that the two agree, re-packing both).
 */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "pbdecode.h"
#include "wire.h"

enum {
	WT_VARINT = 0,
	WT_I64 = 1,
	WT_LEN = 2,
	WT_I32 = 5,
};

struct in {
	const uint8_t *p, *end;
};

/* A value's varint. A ten-byte one whose last byte holds more than the 64th bit is declined:
 * protobuf-c reads a bool as true when any of its bits is set, where the value read here would
 * have lost them (an encoder never writes one).
 */
static bool varint(struct in *in, uint64_t *v)
{
	size_t used;

	if (wire__varint_get(in->p, (size_t)(in->end - in->p), v, &used) ||
	    (used == WIRE_VARINT_MAX && in->p[used - 1] > 1))
		return false;
	in->p += used;
	return true;
}

/* A tag or a length prefix: protobuf-c reads at most five bytes of one (and lengths that fit an
 * int); what takes more than four is declined, for it to decide (egret's take one or two).
 */
#define TAG_LEN_MAX 4

static bool varint_short(struct in *in, uint64_t *v)
{
	const uint8_t *start = in->p;

	return varint(in, v) && in->p - start <= TAG_LEN_MAX;
}

/* a length prefix, and as many bytes as it says there: their start */
static bool len_data(struct in *in, const uint8_t **data, size_t *n)
{
	uint64_t v;

	if (!varint_short(in, &v) || v > (uint64_t)(in->end - in->p))
		return false;
	*n = (size_t)v;
	*data = in->p;
	in->p += v;
	return true;
}

static bool take(struct in *in, size_t n, const uint8_t **out)
{
	if ((size_t)(in->end - in->p) < n)
		return false;
	*out = in->p;
	in->p += n;
	return true;
}

/* past the value of a field of wire type wt */
static bool skip(struct in *in, unsigned int wt)
{
	const uint8_t *d;
	uint64_t v;

	switch (wt) {
	case WT_VARINT:
		return varint(in, &v);
	case WT_I64:
		return take(in, 8, &d);
	case WT_I32:
		return take(in, 4, &d);
	case WT_LEN: {
		size_t n;

		return len_data(in, &d, &n);
	}
	default:
		return false;
	}
}

/* the wire type a (non-packed) value of this type has; -1 for what this does not decode */
static int wire_type(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_BOOL:
	case PROTOBUF_C_TYPE_ENUM:
		return WT_VARINT;
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return WT_I64;
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
		return WT_I32;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_BYTES:
	case PROTOBUF_C_TYPE_MESSAGE:
		return WT_LEN;
	default:
		return -1;
	}
}

/* bytes one value of this type takes in its struct (a repeated field's array element) */
static size_t elem_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_SFIXED64:
		return sizeof(uint64_t);
	case PROTOBUF_C_TYPE_DOUBLE:
		return sizeof(double);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	case PROTOBUF_C_TYPE_STRING:
		return sizeof(char *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(ProtobufCMessage *);
	default:
		return sizeof(uint32_t);
	}
}

static void *alloc(ProtobufCAllocator *a, size_t n)
{
	return a->alloc(a->allocator_data, n);
}

struct dec {
	ProtobufCAllocator *a;
	unsigned int depth;
};

#define PBDECODE_DEPTH 16 /* egret's messages nest three deep; deeper is declined */

static ProtobufCMessage *message(struct dec *d, const ProtobufCMessageDescriptor *desc,
				 const uint8_t *p, size_t len);

/* One value of field f into dst (its struct member, or a repeated field's element) from
 * in. false: declined.
 */
static bool value(struct dec *d, const ProtobufCFieldDescriptor *f, struct in *in, void *dst)
{
	const uint8_t *b;
	uint64_t v;
	size_t n;

	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_ENUM:
		if (!varint(in, &v))
			return false;
		*(uint32_t *)dst = (uint32_t)v;
		return true;
	case PROTOBUF_C_TYPE_SINT32:
		if (!varint(in, &v))
			return false;
		*(int32_t *)dst = (int32_t)(((uint32_t)v >> 1) ^ -((uint32_t)v & 1));
		return true;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_UINT64:
		if (!varint(in, &v))
			return false;
		*(uint64_t *)dst = v;
		return true;
	case PROTOBUF_C_TYPE_SINT64:
		if (!varint(in, &v))
			return false;
		*(int64_t *)dst = (int64_t)((v >> 1) ^ -(v & 1));
		return true;
	case PROTOBUF_C_TYPE_BOOL:
		if (!varint(in, &v))
			return false;
		*(protobuf_c_boolean *)dst = v != 0;
		return true;
	case PROTOBUF_C_TYPE_FIXED32:
	case PROTOBUF_C_TYPE_SFIXED32:
	case PROTOBUF_C_TYPE_FLOAT:
		if (!take(in, 4, &b))
			return false;
		memcpy(dst, b, 4); /* little-endian, as x86 and arm64 */
		return true;
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		if (!take(in, 8, &b))
			return false;
		memcpy(dst, b, 8);
		return true;
	default:
		break;
	}
	if (!len_data(in, &b, &n))
		return false;
	v = n;
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING: {
		char *s = alloc(d->a, (size_t)v + 1);

		if (!s)
			return false;
		memcpy(s, b, (size_t)v);
		s[v] = '\0';
		*(char **)dst = s;
		return true;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		ProtobufCBinaryData *bd = dst;

		bd->len = (size_t)v;
		bd->data = NULL;
		if (v) {
			bd->data = alloc(d->a, (size_t)v);
			if (!bd->data)
				return false;
			memcpy(bd->data, b, (size_t)v);
		}
		return true;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		*(ProtobufCMessage **)dst = message(d, f->descriptor, b, (size_t)v);
		return *(ProtobufCMessage **)dst != NULL;
	default:
		return false;
	}
}

/* A repeated field met for the first time at in (its first value's tag just read, wire type
 * wt): its array, every entry of it in the message read now. Its entries must be all
 * unpacked, or one packed run of scalars.
 */
static bool repeated(struct dec *d, const ProtobufCFieldDescriptor *f, unsigned int wt,
		     struct in *in, uint8_t *msg)
{
	size_t *n = (size_t *)(msg + f->quantifier_offset), count = 0, es = elem_size(f->type);
	int want = wire_type(f->type);
	struct in scan = *in;
	uint8_t *arr;

	if (*n)
		return false; /* met before: a second packed run, or unpacked after packed */
	if (wt == WT_LEN && want != WT_LEN) {
		/* packed: the run's values, counted, then read */
		size_t len;
		const uint8_t *b;
		struct in run;

		if (!len_data(in, &b, &len))
			return false;
		run = (struct in){ b, b + len };
		while (run.p < run.end) {
			if (!skip(&run, (unsigned int)want))
				return false;
			count++;
		}
		arr = count ? alloc(d->a, count * es) : NULL;
		if (count && !arr)
			return false;
		run.p = b;
		for (size_t i = 0; i < count; i++) {
			if (!value(d, f, &run, arr + i * es))
				return false;
		}
		*n = count;
		*(void **)(msg + f->offset) = arr;
		return true;
	}
	if ((int)wt != want)
		return false;
	/* unpacked: this value and every later one with the field's number (the scan checks
	 * that each has the field's own wire type; the loop in message() checks the rest again)
	 */
	count = 1;
	if (!skip(&scan, wt))
		return false;
	while (scan.p < scan.end) {
		uint64_t tag;

		if (!varint_short(&scan, &tag))
			return false;
		if ((tag >> 3) == f->id) {
			if ((tag & 7) != wt)
				return false;
			count++;
		}
		if (!skip(&scan, (unsigned int)(tag & 7)))
			return false;
	}
	arr = alloc(d->a, count * es);
	if (!arr)
		return false;
	*(void **)(msg + f->offset) = arr;
	*n = count;
	/* the first now; the others as message() meets them (n_filled counts them) */
	return value(d, f, in, arr);
}

/* the descriptor of field number id, after the one at *hint (updated) */
static const ProtobufCFieldDescriptor *field_of(const ProtobufCMessageDescriptor *desc, uint32_t id,
						unsigned int *hint)
{
	const ProtobufCFieldDescriptor *f;

	if (*hint < desc->n_fields && desc->fields[*hint].id == id)
		f = &desc->fields[*hint];
	else
		f = protobuf_c_message_descriptor_get_field(desc, id);
	if (f)
		*hint = (unsigned int)(f - desc->fields) + 1;
	return f;
}

#define PBDECODE_REPEATED 16 /* repeated fields met in one message; more are declined */

static ProtobufCMessage *message(struct dec *d, const ProtobufCMessageDescriptor *desc,
				 const uint8_t *p, size_t len)
{
	struct in in = { p, p + len };
	/* the repeated fields met so far: each one's index and entries read */
	struct {
		unsigned int fi;
		size_t filled;
	} rep[PBDECODE_REPEATED];
	unsigned int hint = 0, nrep = 0, r;
	uint8_t *msg;

	if (++d->depth > PBDECODE_DEPTH)
		goto declined;
	msg = alloc(d->a, desc->sizeof_message);
	if (!msg)
		goto declined;
	desc->message_init((ProtobufCMessage *)msg);
	while (in.p < in.end) {
		const ProtobufCFieldDescriptor *f;
		uint64_t tag;
		unsigned int wt, fi;
		void *dst;

		if (!varint_short(&in, &tag) || tag >> 3 == 0)
			goto declined;
		wt = (unsigned int)(tag & 7);
		f = field_of(desc, (uint32_t)(tag >> 3), &hint);
		if (!f)
			goto declined; /* unknown: protobuf-c keeps it */
		fi = (unsigned int)(f - desc->fields);
		dst = msg + f->offset;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n;

			for (r = 0; r < nrep && rep[r].fi != fi; r++)
				;
			if (r == nrep) {
				if (nrep == PBDECODE_REPEATED || !repeated(d, f, wt, &in, msg))
					goto declined;
				/* a packed run was read whole; an unpacked field's first entry */
				rep[nrep].fi = fi;
				rep[nrep++].filled =
					wire_type(f->type) == (int)wt
						? 1
						: *(size_t *)(msg + f->quantifier_offset);
				continue;
			}
			n = *(size_t *)(msg + f->quantifier_offset);
			if ((int)wt != wire_type(f->type) || rep[r].filled >= n)
				goto declined;
			if (!value(d, f, &in,
				   *(uint8_t **)dst + rep[r].filled * elem_size(f->type)))
				goto declined;
			rep[r].filled++;
			continue;
		}
		if ((int)wt != wire_type(f->type))
			goto declined;
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
			uint32_t *which = (uint32_t *)(msg + f->quantifier_offset);

			if (*which) /* a member again, or another: protobuf-c replaces or merges */
				goto declined;
			*which = f->id;
		} else if (f->label == PROTOBUF_C_LABEL_OPTIONAL &&
			   f->type != PROTOBUF_C_TYPE_MESSAGE &&
			   f->type != PROTOBUF_C_TYPE_STRING) {
			*(protobuf_c_boolean *)(msg + f->quantifier_offset) = 1;
		}
		/* protobuf merges a message met twice (message_init left it NULL) */
		if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(void **)dst)
			goto declined;
		if (!value(d, f, &in, dst))
			goto declined;
	}
	/* each repeated field filled to the count its scan made */
	for (r = 0; r < nrep; r++) {
		if (rep[r].filled != *(size_t *)(msg + desc->fields[rep[r].fi].quantifier_offset))
			goto declined;
	}
	d->depth--;
	return (ProtobufCMessage *)msg;
declined:
	d->depth--;
	return NULL;
}

ProtobufCMessage *pbdecode__unpack(const ProtobufCMessageDescriptor *desc, ProtobufCAllocator *a,
				   size_t len, const uint8_t *data)
{
	struct dec d = { .a = a };

	return message(&d, desc, data, len);
}

ProtobufCMessage *pbdecode__unpack_any(const ProtobufCMessageDescriptor *desc,
				       ProtobufCAllocator *a, size_t len, const uint8_t *data)
{
	ProtobufCMessage *m = a ? pbdecode__unpack(desc, a, len, data) : NULL;

	return m ? m : protobuf_c_message_unpack(desc, a, len, data);
}
