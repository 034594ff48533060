/* Any protobuf-c message as one line of JSON, by reflection over its descriptor, in the proto3
 * JSON mapping: field names as in the .proto, enums by name, 64-bit integers as decimal strings
 * (jq and JavaScript lose precision above 2^53), bytes as base64, strings valid UTF-8 (what is
 * not becomes U+FFFD). Every scalar and repeated field of a message that is present is written,
 * at its default value too (0, "", false, [], the enum's zero name), so uid 0 is told from
 * "unknown"; a message field is written only when set, a oneof member only when it is the one
 * set (protojson's EmitDefaultValues).
 *
 * pbjson__event() adds two fields to an egret.v1.Event: "time" (time_unix_nano in RFC 3339, UTC,
 * nanoseconds) after time_unix_nano, and "event" (the payload's field name, "" when the payload
 * is not one this build knows) before the payload.
 */
#ifndef EGRET_PBJSON_H
#define EGRET_PBJSON_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <protobuf-c/protobuf-c.h>

#include "egret/v1/events.pb-c.h"

void pbjson__print(FILE *out, const ProtobufCMessage *msg);
void pbjson__event(FILE *out, const Egret__V1__Event *ev);
void pbjson__string(FILE *out, const char *s, size_t len);

/* JSON text built in memory: what the calls above write with one fwrite, and what OTLP's
 * bodies are (a buffer reused from event to event, no stdio between). err: out of memory, the
 * text is cut.
 */
struct pbjson_buf {
	char *p;
	size_t len, cap;
	bool err;
	bool heap; /* p is malloc'd (else the caller's, cap bytes) */
};

void pbjson__event_buf(struct pbjson_buf *b, const Egret__V1__Event *ev);
/* The same and a newline, appended: a JSON line */
void pbjson__event_line(struct pbjson_buf *b, const Egret__V1__Event *ev);
void pbjson__buf_free(struct pbjson_buf *b);

/* The name of the event's payload ("net_connect", "exec", ...), "" when none is set. */
const char *pbjson__event_name(const Egret__V1__Event *ev);

/* "2026-12-01T11:05:39.939001562Z" into buf (at least PBJSON_TIME_LEN bytes). */
#define PBJSON_TIME_LEN 40
void pbjson__rfc3339(uint64_t unix_nano, char *buf, size_t size);

/* Is s[0..len) valid UTF-8 (no overlong forms, surrogates or code points above U+10FFFF)? */
bool pbjson__utf8_valid(const char *s, size_t len);

/* Make every string of msg, and of the messages in it, valid UTF-8 in place: invalid bytes
 * become U+FFFD. For a message from protobuf-c's unpack with allocator a (NULL: the default, and
 * strings are replaced with malloc()ed ones, which free_unpacked frees). 0, or -ENOMEM.
 */
int pbjson__make_utf8(ProtobufCMessage *msg, ProtobufCAllocator *a);

#endif /* EGRET_PBJSON_H */
