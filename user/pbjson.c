/* Protobuf-c messages to JSON through their descriptors. */
#include <inttypes.h>
#include <string.h>

#include "pbjson.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static void print_base64(FILE *out, const uint8_t *p, size_t n)
{
	fputc('"', out);
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		fputc(b64[(v >> 18) & 63], out);
		fputc(b64[(v >> 12) & 63], out);
		fputc(i + 1 < n ? b64[(v >> 6) & 63] : '=', out);
		fputc(i + 2 < n ? b64[v & 63] : '=', out);
	}
	fputc('"', out);
}

/* Length of the valid UTF-8 sequence at p (1-4), or 0 when it is not one. */
static size_t utf8_seq(const unsigned char *p, size_t n)
{
	size_t len;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		len = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		len = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		len = 4;
	else
		return 0;
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	}
	return len;
}

/* A JSON string; bytes that are not UTF-8 become U+FFFD. */
void pbjson__string(FILE *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;

	fputc('"', out);
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(p + i, len - i);

		if (n == 0) {
			fputs("\\ufffd", out);
			i++;
		} else if (n > 1) {
			fwrite(p + i, 1, n, out);
			i += n;
		} else {
			unsigned char c = p[i++];

			if (c == '"' || c == '\\')
				fprintf(out, "\\%c", c);
			else if (c == '\n')
				fputs("\\n", out);
			else if (c == '\t')
				fputs("\\t", out);
			else if (c < 0x20 || c == 0x7f)
				fprintf(out, "\\u%04x", c);
			else
				fputc(c, out);
		}
	}
	fputc('"', out);
}

static void print_value(FILE *out, const ProtobufCFieldDescriptor *f, const void *v)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		fprintf(out, "%" PRId32, *(const int32_t *)v);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		fprintf(out, "%" PRIu32, *(const uint32_t *)v);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		fprintf(out, "%" PRId64, *(const int64_t *)v);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		fprintf(out, "%" PRIu64, *(const uint64_t *)v);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		fprintf(out, "%.9g", *(const float *)v);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		fprintf(out, "%.17g", *(const double *)v);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		fputs(*(const protobuf_c_boolean *)v ? "true" : "false", out);
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev =
			protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)v);

		if (ev)
			pbjson__string(out, ev->name, strlen(ev->name));
		else
			fprintf(out, "%d", *(const int *)v);
		break;
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)v;

		pbjson__string(out, s ? s : "", s ? strlen(s) : 0);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = v;

		print_base64(out, b->data, b->len);
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		pbjson__print(out, *(ProtobufCMessage *const *)v);
		break;
	}
}

static size_t type_size(ProtobufCType t)
{
	switch (t) {
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
	case PROTOBUF_C_TYPE_DOUBLE:
		return 8;
	case PROTOBUF_C_TYPE_STRING:
	case PROTOBUF_C_TYPE_MESSAGE:
		return sizeof(void *);
	case PROTOBUF_C_TYPE_BYTES:
		return sizeof(ProtobufCBinaryData);
	case PROTOBUF_C_TYPE_BOOL:
		return sizeof(protobuf_c_boolean);
	default:
		return 4;
	}
}

/* proto3 singular fields are present when not at their default */
static int is_default(const ProtobufCFieldDescriptor *f, const void *v)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)v;

		return !s || !*s;
	}
	case PROTOBUF_C_TYPE_BYTES:
		return ((const ProtobufCBinaryData *)v)->len == 0;
	case PROTOBUF_C_TYPE_MESSAGE:
		return *(void *const *)v == NULL;
	default: {
		static const uint8_t zero[8];

		return memcmp(v, zero, type_size(f->type)) == 0;
	}
	}
}

static int field_present(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f,
			 const void *member)
{
	const char *base = (const char *)msg;

	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return *(const uint32_t *)(base + f->quantifier_offset) == f->id;
	if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
	    f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
		return *(const protobuf_c_boolean *)(base + f->quantifier_offset);
	return !is_default(f, member);
}

void pbjson__print(FILE *out, const ProtobufCMessage *msg)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	const char *base = (const char *)msg;
	int first = 1;

	fputc('{', out);
	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		const void *member = base + f->offset;

		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			const char *arr = *(char *const *)member;

			if (!n)
				continue;
			fprintf(out, "%s\"%s\":[", first ? "" : ",", f->name);
			for (size_t j = 0; j < n; j++) {
				if (j)
					fputc(',', out);
				print_value(out, f, arr + j * type_size(f->type));
			}
			fputc(']', out);
		} else {
			if (!field_present(msg, f, member))
				continue;
			fprintf(out, "%s\"%s\":", first ? "" : ",", f->name);
			print_value(out, f, member);
		}
		first = 0;
	}
	fputc('}', out);
}
