/* Protobuf-c messages to JSON through their descriptors, in the proto3 JSON mapping; see
 * pbjson.h for the rules.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pbjson.h"
#include "util.h"

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

bool pbjson__utf8_valid(const char *s, size_t len)
{
	return utf8_valid(s, len);
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

/* JSON has no NaN or infinities: the proto3 mapping writes them as strings. */
static void print_double(FILE *out, double v, int digits)
{
	if (isnan(v))
		fputs("\"NaN\"", out);
	else if (isinf(v))
		fputs(v > 0 ? "\"Infinity\"" : "\"-Infinity\"", out);
	else
		fprintf(out, "%.*g", digits, v);
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
		fprintf(out, "\"%" PRId64 "\"", *(const int64_t *)v);
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		fprintf(out, "\"%" PRIu64 "\"", *(const uint64_t *)v);
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		print_double(out, *(const float *)v, 9);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		print_double(out, *(const double *)v, 17);
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

/* Written? Scalars and repeated fields always; messages when set; oneof members and proto3 `optional` fields when
 * they are the ones set.
 */
static bool field_written(const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f,
			  const void *member)
{
	const char *base = (const char *)msg;

	if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
		return *(const uint32_t *)(base + f->quantifier_offset) == f->id;
	if (f->label == PROTOBUF_C_LABEL_REPEATED)
		return true;
	if (f->type == PROTOBUF_C_TYPE_MESSAGE)
		return *(void *const *)member != NULL;
	if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->quantifier_offset &&
	    f->type != PROTOBUF_C_TYPE_STRING)
		return *(const protobuf_c_boolean *)(base + f->quantifier_offset);
	return true;
}

static void print_field(FILE *out, const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f)
{
	const char *base = (const char *)msg;
	const void *member = base + f->offset;

	fprintf(out, "\"%s\":", f->name);
	if (f->label != PROTOBUF_C_LABEL_REPEATED) {
		print_value(out, f, member);
		return;
	}
	{
		size_t n = *(const size_t *)(base + f->quantifier_offset);
		const char *arr = *(char *const *)member;

		fputc('[', out);
		for (size_t j = 0; j < n; j++) {
			if (j)
				fputc(',', out);
			print_value(out, f, arr + j * type_size(f->type));
		}
		fputc(']', out);
	}
}

/* An Event's own fields, beside those of its descriptor. */
static void print_event_extra(FILE *out, const ProtobufCMessage *msg,
			      const ProtobufCFieldDescriptor *f,
			      const ProtobufCFieldDescriptor *next)
{
	const Egret__V1__Event *ev = (const Egret__V1__Event *)msg;

	if (f && !strcmp(f->name, "time_unix_nano")) {
		char t[PBJSON_TIME_LEN];

		pbjson__rfc3339(ev->time_unix_nano, t, sizeof(t));
		fprintf(out, ",\"time\":\"%s\"", t);
	}
	/* before the first member of the payload oneof, or at the end when it has none */
	if ((f && !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) &&
	    (!next || next->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) {
		const char *name = pbjson__event_name(ev);

		fputs(",\"event\":", out);
		pbjson__string(out, name, strlen(name));
	}
}

static void print_message(FILE *out, const ProtobufCMessage *msg, bool event)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	bool first = true;

	fputc('{', out);
	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		bool written = field_written(msg, f, (const char *)msg + f->offset);

		if (written) {
			if (!first)
				fputc(',', out);
			print_field(out, msg, f);
			first = false;
		}
		if (event && !first)
			print_event_extra(out, msg, f, i + 1 < d->n_fields ? f + 1 : NULL);
	}
	fputc('}', out);
}

void pbjson__print(FILE *out, const ProtobufCMessage *msg)
{
	print_message(out, msg, false);
}

void pbjson__event(FILE *out, const Egret__V1__Event *ev)
{
	print_message(out, &ev->base, true);
}

const char *pbjson__event_name(const Egret__V1__Event *ev)
{
	const ProtobufCFieldDescriptor *f;

	if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD__NOT_SET)
		return "";
	f = protobuf_c_message_descriptor_get_field(&egret__v1__event__descriptor,
						    (unsigned int)ev->payload_case);
	return f ? f->name : "";
}

void pbjson__rfc3339(uint64_t unix_nano, char *buf, size_t size)
{
	time_t secs = (time_t)(unix_nano / 1000000000ull);
	char text[96]; /* room for any int in each field, so the format cannot be cut */
	struct tm tm;

	if (!gmtime_r(&secs, &tm)) {
		snprintf(buf, size, "1970-01-01T00:00:00.000000000Z");
		return;
	}
	snprintf(text, sizeof(text), "%04d-%02d-%02dT%02d:%02d:%02d.%09uZ", tm.tm_year + 1900,
		 tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 (unsigned int)(unix_nano % 1000000000ull));
	snprintf(buf, size, "%s", text);
}

/* ---- making strings valid ------------------------------------------------------------------ */

/* A malloc()ed copy of s with every invalid byte replaced by U+FFFD; NULL when out of memory. */
static char *utf8_fixed(const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), o = 0;
	char *out = malloc(len * 3 + 1);

	if (!out)
		return NULL;
	for (size_t i = 0; i < len;) {
		size_t n = utf8_seq(p + i, len - i);

		if (n) {
			memcpy(out + o, p + i, n);
			o += n;
			i += n;
		} else {
			memcpy(out + o, "\xef\xbf\xbd", 3);
			o += 3;
			i++;
		}
	}
	out[o] = '\0';
	return out;
}

static int fix_string(char **sp)
{
	char *fixed;

	if (!*sp || pbjson__utf8_valid(*sp, strlen(*sp)))
		return 0;
	fixed = utf8_fixed(*sp);
	if (!fixed)
		return -ENOMEM;
	free(*sp);
	*sp = fixed;
	return 0;
}

static int fix_member(const ProtobufCFieldDescriptor *f, void *v)
{
	if (f->type == PROTOBUF_C_TYPE_STRING)
		return fix_string(v);
	if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(ProtobufCMessage **)v)
		return pbjson__make_utf8(*(ProtobufCMessage **)v);
	return 0;
}

int pbjson__make_utf8(ProtobufCMessage *msg)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	char *base = (char *)msg;
	int err = 0;

	for (unsigned int i = 0; i < d->n_fields && !err; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		char *member = base + f->offset;

		if (f->type != PROTOBUF_C_TYPE_STRING && f->type != PROTOBUF_C_TYPE_MESSAGE)
			continue;
		if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF &&
		    *(const uint32_t *)(base + f->quantifier_offset) != f->id)
			continue;
		if (f->label == PROTOBUF_C_LABEL_REPEATED) {
			size_t n = *(const size_t *)(base + f->quantifier_offset);
			char *arr = *(char **)member;

			for (size_t j = 0; j < n && !err; j++)
				err = fix_member(f, arr + j * sizeof(void *));
		} else {
			err = fix_member(f, member);
		}
	}
	return err;
}
