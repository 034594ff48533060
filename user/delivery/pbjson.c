/* Protobuf-c messages to JSON through their descriptors, in the proto3 JSON mapping; see
 * pbjson.h for the rules.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pbjson.h"
#include "util.h"

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Output into a buffer, written to a stream (the sinks, tail) once an event is whole or kept
 * (OTLP's bodies): a JSON event is hundreds of bytes, and stdio's calls per run of them were
 * most of the stdout sink's and OTLP's time.
 */
typedef struct pbjson_buf jbuf;

static bool room_slow(jbuf *b, size_t n)
{
	size_t cap = b->cap ? b->cap : 1024;
	char *p;

	while (cap - b->len < n)
		cap *= 2;
	p = b->heap ? realloc(b->p, cap) : malloc(cap);
	if (!p) {
		b->err = true;
		return false;
	}
	if (!b->heap && b->len)
		memcpy(p, b->p, b->len);
	b->p = p;
	b->cap = cap;
	b->heap = true;
	return true;
}

static inline bool room(jbuf *b, size_t n)
{
	return !b->err && (b->cap - b->len >= n || room_slow(b, n));
}

static inline void put(jbuf *out, char c)
{
	if (room(out, 1))
		out->p[out->len++] = c;
}

static inline void put_n(jbuf *out, const void *p, size_t n)
{
	if (room(out, n)) {
		memcpy(out->p + out->len, p, n);
		out->len += n;
	}
}

static inline void put_s(jbuf *out, const char *s)
{
	put_n(out, s, strlen(s));
}

/* A field's name (an identifier, tens of bytes): copied as it is read, no strlen call */
static inline void put_name(jbuf *out, const char *s)
{
	size_t i = 0;

	if (!room(out, 64))
		return;
	for (; s[i] && i < 64; i++)
		out->p[out->len + i] = s[i];
	out->len += i;
	if (s[i])
		put_s(out, s + i);
}

void pbjson__buf_free(struct pbjson_buf *b)
{
	if (b->heap)
		free(b->p);
	*b = (struct pbjson_buf){ 0 };
}

/* what a FILE call builds in: on the stack, unless an event is larger */
#define STACK_JSON 4096

static void buf_write(FILE *out, jbuf *b)
{
	fwrite_unlocked(b->p, 1, b->len, out);
	pbjson__buf_free(b);
}

/* v in decimal: its digits counted by comparisons, then written in place two at a time */
static void put_u64(jbuf *out, uint64_t v)
{
	static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930"
				    "31323334353637383940414243444546474849505152535455565758596061"
				    "62636465666768697071727374757677787980818283848586878889909192"
				    "93949596979899";
	static const uint64_t tens[] = { 10ull,
					 100ull,
					 1000ull,
					 10000ull,
					 100000ull,
					 1000000ull,
					 10000000ull,
					 100000000ull,
					 1000000000ull,
					 10000000000ull,
					 100000000000ull,
					 1000000000000ull,
					 10000000000000ull,
					 100000000000000ull,
					 1000000000000000ull,
					 10000000000000000ull,
					 100000000000000000ull,
					 1000000000000000000ull,
					 10000000000000000000ull };
	size_t n = 1; /* digits */
	char *p;

	while (n < 20 && v >= tens[n - 1])
		n++;
	if (!room(out, n))
		return;
	out->len += n;
	p = out->p + out->len;
	while (v >= 100) {
		unsigned int r = (unsigned int)(v % 100);

		v /= 100;
		p -= 2;
		memcpy(p, pairs + 2 * r, 2);
	}
	if (v >= 10) {
		p -= 2;
		memcpy(p, pairs + 2 * v, 2);
	} else {
		*--p = (char)('0' + v);
	}
}

static void put_i64(jbuf *out, int64_t v)
{
	if (v < 0) {
		put(out, '-');
		put_u64(out, (uint64_t)0 - (uint64_t)v);
	} else {
		put_u64(out, (uint64_t)v);
	}
}

static void print_base64(jbuf *out, const uint8_t *p, size_t n)
{
	put(out, '"');
	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;
		char q[4];

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		q[0] = b64[(v >> 18) & 63];
		q[1] = b64[(v >> 12) & 63];
		q[2] = i + 1 < n ? b64[(v >> 6) & 63] : '=';
		q[3] = i + 2 < n ? b64[v & 63] : '=';
		put_n(out, q, 4);
	}
	put(out, '"');
}

bool pbjson__utf8_valid(const char *s, size_t len)
{
	return utf8_valid(s, len);
}

/* Bytes a JSON string holds as they are: printable ASCII but the quote and the backslash */
static inline bool plain(unsigned char c)
{
	return c >= 0x20 && c < 0x7f && c != '"' && c != '\\';
}

/* A JSON string; bytes that are not UTF-8 become U+FFFD. */
static void print_string(jbuf *out, const char *s, size_t len)
{
	static const char hex[] = "0123456789abcdef";
	const unsigned char *p = (const unsigned char *)s;

	put(out, '"');
	for (size_t i = 0; i < len;) {
		size_t run = i, n;

		while (run < len && plain(p[run]))
			run++;
		if (run > i) {
			put_n(out, p + i, run - i);
			i = run;
			continue;
		}
		n = utf8_seq(p + i, len - i);
		if (n == 0) {
			put_s(out, "\\ufffd");
			i++;
		} else if (n > 1) {
			put_n(out, p + i, n);
			i += n;
		} else {
			unsigned char c = p[i++];

			if (c == '"' || c == '\\') {
				put(out, '\\');
				put(out, (char)c);
			} else if (c == '\n') {
				put_s(out, "\\n");
			} else if (c == '\t') {
				put_s(out, "\\t");
			} else {
				char u[6] = { '\\', 'u', '0', '0', hex[c >> 4], hex[c & 15] };

				put_n(out, u, sizeof(u));
			}
		}
	}
	put(out, '"');
}

/* JSON has no NaN or infinities: the proto3 mapping writes them as strings. */
static void print_double(jbuf *out, double v, int digits)
{
	if (isnan(v))
		put_s(out, "\"NaN\"");
	else if (isinf(v))
		put_s(out, v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
	else if (room(out, 32))
		out->len += (size_t)snprintf(out->p + out->len, 32, "%.*g", digits, v);
}

static void print_message(jbuf *out, const ProtobufCMessage *msg, bool event);

static void print_value(jbuf *out, const ProtobufCFieldDescriptor *f, const void *v)
{
	switch (f->type) {
	case PROTOBUF_C_TYPE_INT32:
	case PROTOBUF_C_TYPE_SINT32:
	case PROTOBUF_C_TYPE_SFIXED32:
		put_i64(out, *(const int32_t *)v);
		break;
	case PROTOBUF_C_TYPE_UINT32:
	case PROTOBUF_C_TYPE_FIXED32:
		put_u64(out, *(const uint32_t *)v);
		break;
	case PROTOBUF_C_TYPE_INT64:
	case PROTOBUF_C_TYPE_SINT64:
	case PROTOBUF_C_TYPE_SFIXED64:
		/* 64-bit integers are strings in the proto3 JSON mapping */
		put(out, '"');
		put_i64(out, *(const int64_t *)v);
		put(out, '"');
		break;
	case PROTOBUF_C_TYPE_UINT64:
	case PROTOBUF_C_TYPE_FIXED64:
		put(out, '"');
		put_u64(out, *(const uint64_t *)v);
		put(out, '"');
		break;
	case PROTOBUF_C_TYPE_FLOAT:
		print_double(out, *(const float *)v, 9);
		break;
	case PROTOBUF_C_TYPE_DOUBLE:
		print_double(out, *(const double *)v, 17);
		break;
	case PROTOBUF_C_TYPE_BOOL:
		put_s(out, *(const protobuf_c_boolean *)v ? "true" : "false");
		break;
	case PROTOBUF_C_TYPE_ENUM: {
		const ProtobufCEnumValue *ev =
			protobuf_c_enum_descriptor_get_value(f->descriptor, *(const int *)v);

		if (ev)
			print_string(out, ev->name, strlen(ev->name));
		else
			put_i64(out, *(const int *)v);
		break;
	}
	case PROTOBUF_C_TYPE_STRING: {
		const char *s = *(char *const *)v;

		print_string(out, s ? s : "", s ? strlen(s) : 0);
		break;
	}
	case PROTOBUF_C_TYPE_BYTES: {
		const ProtobufCBinaryData *b = v;

		print_base64(out, b->data, b->len);
		break;
	}
	case PROTOBUF_C_TYPE_MESSAGE:
		print_message(out, *(ProtobufCMessage *const *)v, false);
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

/* Written? Scalars and repeated fields always; messages when set; oneof members and proto3
 * `optional` fields when they are the ones set.
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

/* A field's JSON key, its name quoted and the colon after, in a buffer of KEY_ROOM bytes that
 * is copied whole (a fixed-size move) and advanced by len: built once for each message type, at
 * its first print (the printers run on one thread: egretd's loop, egretctl).
 */
#define KEY_ROOM  48
#define KEY_TYPES 128 /* message types remembered; the rest print their keys byte by byte */

struct jkey {
	char s[KEY_ROOM];
	size_t len; /* 0: too long, printed byte by byte */
};

static struct {
	const ProtobufCMessageDescriptor *d;
	struct jkey *keys;
} key_types[KEY_TYPES];

static const struct jkey *keys_of(const ProtobufCMessageDescriptor *d)
{
	size_t h = ((uintptr_t)d >> 4) % KEY_TYPES;
	struct jkey *k;

	for (size_t i = 0; i < KEY_TYPES; i++, h = (h + 1) % KEY_TYPES) {
		if (key_types[h].d == d)
			return key_types[h].keys;
		if (!key_types[h].d)
			break;
	}
	if (key_types[h].d || !(k = calloc(d->n_fields ? d->n_fields : 1, sizeof(*k))))
		return NULL; /* full, or out of memory: byte by byte */
	for (unsigned int i = 0; i < d->n_fields; i++) {
		size_t n = strlen(d->fields[i].name);

		if (n + 3 > KEY_ROOM)
			continue;
		k[i].s[0] = '"';
		memcpy(k[i].s + 1, d->fields[i].name, n);
		memcpy(k[i].s + 1 + n, "\":", 2);
		k[i].len = n + 3;
	}
	key_types[h].d = d;
	key_types[h].keys = k;
	return k;
}

static void print_field(jbuf *out, const ProtobufCMessage *msg, const ProtobufCFieldDescriptor *f,
			const struct jkey *key)
{
	const char *base = (const char *)msg;
	const void *member = base + f->offset;

	if (key && key->len) {
		if (room(out, KEY_ROOM)) {
			memcpy(out->p + out->len, key->s, KEY_ROOM);
			out->len += key->len;
		}
	} else {
		/* field names are identifiers: nothing to escape */
		put(out, '"');
		put_name(out, f->name);
		put_n(out, "\":", 2);
	}
	if (f->label != PROTOBUF_C_LABEL_REPEATED) {
		print_value(out, f, member);
		return;
	}
	{
		size_t n = *(const size_t *)(base + f->quantifier_offset);
		const char *arr = *(char *const *)member;

		put(out, '[');
		for (size_t j = 0; j < n; j++) {
			if (j)
				put(out, ',');
			print_value(out, f, arr + j * type_size(f->type));
		}
		put(out, ']');
	}
}

/* An Event's own fields, beside those of its descriptor. */
static void print_event_extra(jbuf *out, const ProtobufCMessage *msg,
			      const ProtobufCFieldDescriptor *f,
			      const ProtobufCFieldDescriptor *next)
{
	const Egret__V1__Event *ev = (const Egret__V1__Event *)msg;

	if (f && f->offset == offsetof(Egret__V1__Event, time_unix_nano)) {
		char t[PBJSON_TIME_LEN];

		pbjson__rfc3339(ev->time_unix_nano, t, sizeof(t));
		put_s(out, ",\"time\":\"");
		put_s(out, t);
		put(out, '"');
	}
	/* before the first member of the payload oneof, or at the end when it has none */
	if ((f && !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) &&
	    (!next || next->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) {
		const char *name = pbjson__event_name(ev);

		put_s(out, ",\"event\":");
		print_string(out, name, strlen(name));
	}
}

static void print_message(jbuf *out, const ProtobufCMessage *msg, bool event)
{
	const ProtobufCMessageDescriptor *d = msg->descriptor;
	const struct jkey *keys = keys_of(d);
	bool first = true;

	put(out, '{');
	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		bool written = field_written(msg, f, (const char *)msg + f->offset);

		if (written) {
			if (!first)
				put(out, ',');
			print_field(out, msg, f, keys ? &keys[i] : NULL);
			first = false;
		}
		if (event && !first)
			print_event_extra(out, msg, f, i + 1 < d->n_fields ? f + 1 : NULL);
	}
	put(out, '}');
}

void pbjson__print(FILE *out, const ProtobufCMessage *msg)
{
	char stack[STACK_JSON];
	jbuf b = { .p = stack, .cap = sizeof(stack) };

	print_message(&b, msg, false);
	buf_write(out, &b);
}

void pbjson__event(FILE *out, const Egret__V1__Event *ev)
{
	char stack[STACK_JSON];
	jbuf b = { .p = stack, .cap = sizeof(stack) };

	print_message(&b, &ev->base, true);
	buf_write(out, &b);
}

void pbjson__string(FILE *out, const char *s, size_t len)
{
	char stack[STACK_JSON];
	jbuf b = { .p = stack, .cap = sizeof(stack) };

	print_string(&b, s, len);
	buf_write(out, &b);
}

void pbjson__event_buf(struct pbjson_buf *b, const Egret__V1__Event *ev)
{
	print_message(b, &ev->base, true);
}

void pbjson__event_line(struct pbjson_buf *b, const Egret__V1__Event *ev)
{
	print_message(b, &ev->base, true);
	put(b, '\n');
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

/* v as exactly n decimal digits at p (v < 10^n) */
static void digits(char *p, unsigned int v, int n)
{
	while (n--) {
		p[n] = (char)('0' + v % 10);
		v /= 10;
	}
}

void pbjson__rfc3339(uint64_t unix_nano, char *buf, size_t size)
{
	time_t secs = (time_t)(unix_nano / 1000000000ull);
	char text[] = "1970-01-01T00:00:00.000000000Z";
	struct tm tm;

	/* years past 9999 cannot be written in four digits: the epoch, as for no time */
	if (gmtime_r(&secs, &tm) && tm.tm_year + 1900 <= 9999) {
		digits(text, (unsigned int)(tm.tm_year + 1900), 4);
		digits(text + 5, (unsigned int)tm.tm_mon + 1, 2);
		digits(text + 8, (unsigned int)tm.tm_mday, 2);
		digits(text + 11, (unsigned int)tm.tm_hour, 2);
		digits(text + 14, (unsigned int)tm.tm_min, 2);
		digits(text + 17, (unsigned int)tm.tm_sec, 2);
		digits(text + 20, (unsigned int)(unix_nano % 1000000000ull), 9);
	}
	snprintf(buf, size, "%s", text);
}

/* ---- making strings valid ------------------------------------------------------------------ */

/* A copy of s (from a, or malloc()) with every invalid byte replaced by U+FFFD; NULL when out
 * of memory.
 */
static char *utf8_fixed(const char *s, ProtobufCAllocator *a)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = strlen(s), o = 0;
	char *out = a ? a->alloc(a->allocator_data, len * 3 + 1) : malloc(len * 3 + 1);

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

static int fix_string(char **sp, ProtobufCAllocator *a)
{
	char *fixed;

	const unsigned char *p = (const unsigned char *)*sp;

	if (!p)
		return 0;
	while (*p && *p < 0x80) /* ASCII, most strings whole: no more to check */
		p++;
	if (!*p || utf8_valid((const char *)p, strlen((const char *)p)))
		return 0;
	fixed = utf8_fixed(*sp, a);
	if (!fixed)
		return -ENOMEM;
	if (a)
		a->free(a->allocator_data, *sp);
	else
		free(*sp);
	*sp = fixed;
	return 0;
}

static int fix_member(const ProtobufCFieldDescriptor *f, void *v, ProtobufCAllocator *a)
{
	if (f->type == PROTOBUF_C_TYPE_STRING)
		return fix_string(v, a);
	if (f->type == PROTOBUF_C_TYPE_MESSAGE && *(ProtobufCMessage **)v)
		return pbjson__make_utf8(*(ProtobufCMessage **)v, a);
	return 0;
}

int pbjson__make_utf8(ProtobufCMessage *msg, ProtobufCAllocator *a)
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
				err = fix_member(f, arr + j * sizeof(void *), a);
		} else {
			err = fix_member(f, member, a);
		}
	}
	return err;
}
