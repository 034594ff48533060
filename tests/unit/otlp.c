/* The OTLP encoding of strings: protobuf requires valid UTF-8 in string fields and a collector
 * refuses a whole request without it, so whatever bytes an event's strings hold (process names
 * and paths come from the kernel as bytes), every string of the request must be valid UTF-8,
 * and the body valid JSON.
 */
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>
#include <zlib.h>

#include "../fuzz/jsoncheck.h"
#include "../fuzz/pbcheck.h"
#include "egret/v1/events.pb-c.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "otlp.h"
#include "wire.h"

/* overlong NUL, a surrogate, beyond U+10FFFF, a lone continuation byte, a cut sequence */
static char bad[] = "a\xc0\x80"
		    "b\xed\xa0\x80"
		    "c\xf4\x90\x80\x80"
		    "d\x80"
		    "e\xe2\x82";
static char *bad_list[] = { bad, bad };

/* Every string field of m (and of each message field, recursively) set to bad bytes. */
static void fill_bad(ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;
	char *base = (char *)m;

	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		char *member = base + f->offset;

		if (f->type == PROTOBUF_C_TYPE_STRING && f->label == PROTOBUF_C_LABEL_REPEATED) {
			*(size_t *)(base + f->quantifier_offset) = 2;
			*(char ***)member = bad_list;
		} else if (f->type == PROTOBUF_C_TYPE_STRING) {
			*(char **)member = bad;
		} else if (f->type == PROTOBUF_C_TYPE_MESSAGE &&
			   f->label != PROTOBUF_C_LABEL_REPEATED &&
			   !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)) {
			const ProtobufCMessageDescriptor *sd = f->descriptor;
			ProtobufCMessage *sub = calloc(1, sd->sizeof_message);

			protobuf_c_message_init(sd, sub);
			fill_bad(sub);
			*(ProtobufCMessage **)member = sub;
		}
	}
}

static void free_filled(ProtobufCMessage *m)
{
	const ProtobufCMessageDescriptor *d = m->descriptor;

	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		ProtobufCMessage **sub = (ProtobufCMessage **)((char *)m + f->offset);

		if (f->type == PROTOBUF_C_TYPE_MESSAGE && f->label != PROTOBUF_C_LABEL_REPEATED &&
		    !(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) && *sub) {
			free_filled(*sub);
			free(*sub);
			*sub = NULL;
		}
	}
}

/* A request's body (gz, freed) gunzipped into plain and decoded as protoc's code decodes it */
static Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *
gunzip_decode(uint8_t *gz, size_t len, uint8_t *plain, size_t cap)
{
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
	z_stream z = {
		.next_in = gz, .avail_in = (uInt)len, .next_out = plain, .avail_out = (uInt)cap
	};

	cr_assert_eq(inflateInit2(&z, 15 + 16), Z_OK);
	cr_assert_eq(inflate(&z, Z_FINISH), Z_STREAM_END);
	req = opentelemetry__proto__collector__logs__v1__export_logs_service_request__unpack(
		NULL, z.total_out, plain);
	inflateEnd(&z);
	free(gz);
	cr_assert(req);
	return req;
}

/* ev alone as a request, through encoder e (NULL: a one-shot encode), decoded again */
static Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *
encode_decode(struct otlp_encoder *e, const Egret__V1__Event *ev)
{
	static uint8_t raw[1 << 16], plain[1 << 18];
	uint8_t *gz = NULL;
	size_t len = egret__v1__event__get_packed_size(ev), n, records;
	uint64_t first, last;
	char sid[33];

	cr_assert_lt(len + WIRE_VARINT_MAX, sizeof(raw));
	n = wire__varint_put(len, raw);
	egret__v1__event__pack(ev, raw + n);
	cr_assert_eq(otlp__encode(e, raw, n + len, 0, &gz, &len, &records, &first, &last, sid), 0);
	cr_assert_eq(records, 1);
	return gunzip_decode(gz, len, plain, sizeof(plain));
}

/* each payload in turn, with bad bytes in every string of it, the envelope, sandbox, process;
 * one encoder for them all, as a sink reuses it batch after batch
 */
Test(otlp, every_string_is_valid_utf8_whatever_the_event_held)
{
	const ProtobufCMessageDescriptor *d = &egret__v1__event__descriptor;
	struct otlp_encoder *enc = otlp__encoder_new(true);
	unsigned int payloads = 0;

	cr_assert(enc);
	for (unsigned int i = 0; i < d->n_fields; i++) {
		const ProtobufCFieldDescriptor *f = &d->fields[i];
		Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
		Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
		const Opentelemetry__Proto__Logs__V1__LogRecord *lr;
		ProtobufCMessage *payload;

		if (!(f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF))
			continue;
		fill_bad(&ev.base);
		cr_assert_not(pbcheck_utf8(&ev.base));
		payload = calloc(
			1, ((const ProtobufCMessageDescriptor *)f->descriptor)->sizeof_message);
		protobuf_c_message_init(f->descriptor, payload);
		fill_bad(payload);
		ev.payload_case = (Egret__V1__Event__PayloadCase)f->id;
		*(ProtobufCMessage **)((char *)&ev + f->offset) = payload;
		req = encode_decode(enc, &ev);
		cr_expect(pbcheck_utf8(&req->base), "%s: a string of the request is not UTF-8",
			  f->name);
		lr = req->resource_logs[0]->scope_logs[0]->log_records[0];
		cr_expect(jsoncheck_valid(lr->body->string_value, strlen(lr->body->string_value)),
			  "%s: body %s", f->name, lr->body->string_value);
		cr_expect(strstr(lr->body->string_value, "a\xef\xbf\xbd\xef\xbf\xbd"
							 "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"),
			  "%s: body %s", f->name, lr->body->string_value);
		opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(
			req, NULL);
		free_filled(payload);
		free(payload);
		free_filled(&ev.base);
		payloads++;
	}
	cr_expect_eq(payloads, 16);
	otlp__encoder_free(enc);
}

/* ?compression=none: the request is the protobuf itself, as a collector decodes it without a
 * Content-Encoding, with the records a gzipped one has
 */
Test(otlp, a_plain_encoder_sends_the_protobuf_as_it_is)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	struct otlp_encoder *plain = otlp__encoder_new(false);
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
	static uint8_t raw[1 << 12];
	uint8_t *out = NULL;
	size_t len, n, records;
	uint64_t first, last;
	char sid[33];

	cr_assert(plain);
	p.comm = "box";
	ev.process = &p;
	ev.seq = 7;
	len = egret__v1__event__get_packed_size(&ev);
	n = wire__varint_put(len, raw);
	egret__v1__event__pack(&ev, raw + n);
	cr_assert_eq(otlp__encode(plain, raw, n + len, 0, &out, &len, &records, &first, &last, sid),
		     0);
	cr_expect_eq(records, 1);
	cr_expect_eq(first, 7);
	cr_expect_neq(out[0], 0x1f, "gzip's magic number: the request was gzipped");
	req = opentelemetry__proto__collector__logs__v1__export_logs_service_request__unpack(
		NULL, len, out);
	cr_assert(req, "the request is not a protobuf ExportLogsServiceRequest as it is");
	cr_expect_eq(req->resource_logs[0]->scope_logs[0]->n_log_records, 1);
	opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(req,
											      NULL);
	free(out);
	otlp__encoder_free(plain);
}

/* the attributes a SIEM searches by carry the replaced string */
Test(otlp, attributes_carry_the_replacement_character)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
	const Opentelemetry__Proto__Logs__V1__LogRecord *lr;
	bool found = false;

	p.comm = "\xed\xa0\x80"
		 "box";
	ev.process = &p;
	req = encode_decode(NULL, &ev);
	lr = req->resource_logs[0]->scope_logs[0]->log_records[0];
	for (size_t i = 0; i < lr->n_attributes; i++) {
		if (!strcmp(lr->attributes[i]->key, "process.executable.name"))
			found = !strcmp(lr->attributes[i]->value->string_value,
					"\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
					"box");
	}
	cr_expect(found);
	opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(req,
											      NULL);
}

static const Opentelemetry__Proto__Common__V1__AnyValue *
find_attr(const Opentelemetry__Proto__Logs__V1__LogRecord *lr, const char *key)
{
	for (size_t i = 0; i < lr->n_attributes; i++) {
		if (!strcmp(lr->attributes[i]->key, key))
			return lr->attributes[i]->value;
	}
	return NULL;
}

/* A container sandbox's event carries OpenTelemetry's container.* and k8s.* attributes: the
 * image's name without its tag and the tag in container.image.tags, each label as
 * container.label.KEY.
 */
Test(otlp, container_sandboxes_carry_container_and_k8s_attributes)
{
	static char *labels[] = { "app=agent", "team=blue" }, long_tag[200], long_image[300];
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	Egret__V1__Container c = EGRET__V1__CONTAINER__INIT;
	Egret__V1__ContainerImage img = EGRET__V1__CONTAINER_IMAGE__INIT;
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
	const Opentelemetry__Proto__Logs__V1__LogRecord *lr;
	const Opentelemetry__Proto__Common__V1__AnyValue *v;
	static const struct {
		const char *key, *value;
	} want[] = {
		{ "container.id", "0123abcd" },
		{ "container.name", "main" },
		{ "container.runtime.name", "containerd" },
		{ "container.image.name", "docker.io/library/python" },
		{ "k8s.pod.name", "agent-7" },
		{ "k8s.namespace.name", "ci" },
		{ "k8s.pod.uid", "5f0e-77" },
		{ "k8s.container.name", "main" },
		{ "container.label.app", "agent" },
		{ "container.label.team", "blue" },
		{ "egret.sandbox.name", "ci/agent-7/main" },
	};

	img.name = "docker.io/library/python:3.12";
	img.tag = "3.12";
	c.uid = "0123abcd";
	c.name = "main";
	c.image = &img;
	c.runtime = "containerd";
	c.orchestrator = "kubernetes";
	c.pod_uuid = "5f0e-77";
	c.pod_name = "agent-7";
	c.namespace_ = "ci";
	c.n_labels = 2;
	c.labels = labels;
	sb.cgroup_id = 42;
	sb.name = "ci/agent-7/main";
	sb.container = &c;
	ev.sandbox = &sb;
	req = encode_decode(NULL, &ev);
	lr = req->resource_logs[0]->scope_logs[0]->log_records[0];
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		v = find_attr(lr, want[i].key);
		cr_expect(v && v->string_value && !strcmp(v->string_value, want[i].value),
			  "%s: want %s", want[i].key, want[i].value);
	}
	v = find_attr(lr, "container.image.tags");
	cr_expect(v && v->array_value && v->array_value->n_values == 1 &&
			  !strcmp(v->array_value->values[0]->string_value, "3.12"),
		  "container.image.tags");
	opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(req,
											      NULL);
	/* a tag of 199 bytes: each length of the array around it takes two */
	memset(long_tag, 't', sizeof(long_tag) - 1);
	snprintf(long_image, sizeof(long_image), "registry.example/app:%s", long_tag);
	img.name = long_image;
	img.tag = long_tag;
	req = encode_decode(NULL, &ev);
	lr = req->resource_logs[0]->scope_logs[0]->log_records[0];
	v = find_attr(lr, "container.image.tags");
	cr_expect(v && v->array_value && v->array_value->n_values == 1 &&
			  !strcmp(v->array_value->values[0]->string_value, long_tag),
		  "a 199-byte tag");
	v = find_attr(lr, "container.image.name");
	cr_expect(v && !strcmp(v->string_value, "registry.example/app"), "%s",
		  v ? v->string_value : "(none)");
	opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(req,
											      NULL);
}

/* Batches larger than the encoder's first arena block (an event of 400 bytes of path, 1,000
 * of them), three times through one encoder: each request holds every record, its sequence
 * numbers in order and each path whole (the blocks merged after the first batch are reused).
 */
Test(otlp, one_encoder_carries_large_batches_one_after_another)
{
	enum {
		EVENTS = 1000
	};
	static uint8_t plain[1 << 22];
	struct otlp_encoder *enc = otlp__encoder_new(true);
	size_t cap = EVENTS * 600, n = 0;
	uint8_t *raw = malloc(cap);
	char path[401];

	cr_assert(enc && raw);
	memset(path, 'p', 400);
	path[400] = '\0';
	for (int round = 0; round < 3; round++) {
		Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
		uint64_t first, last;
		size_t len, records;
		uint8_t *gz = NULL;
		char sid[33];

		n = 0;
		for (int i = 0; i < EVENTS; i++) {
			Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
			Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
			size_t l;

			p.exe = path;
			ev.process = &p;
			ev.seq = (uint64_t)(round * EVENTS + i + 1);
			ev.host = "h";
			l = egret__v1__event__get_packed_size(&ev);
			cr_assert_lt(n + l + WIRE_VARINT_MAX, cap);
			n += wire__varint_put(l, raw + n);
			n += egret__v1__event__pack(&ev, raw + n);
		}
		cr_assert_eq(otlp__encode(enc, raw, n, 0, &gz, &len, &records, &first, &last, sid),
			     0);
		cr_expect_eq(records, EVENTS);
		cr_expect_eq(first, (uint64_t)round * EVENTS + 1);
		cr_expect_eq(last, (uint64_t)(round + 1) * EVENTS);
		req = gunzip_decode(gz, len, plain, sizeof(plain));
		cr_assert_eq(req->resource_logs[0]->scope_logs[0]->n_log_records, EVENTS);
		for (size_t i = 0; i < EVENTS; i++) {
			const Opentelemetry__Proto__Logs__V1__LogRecord *lr =
				req->resource_logs[0]->scope_logs[0]->log_records[i];

			cr_assert(strstr(lr->body->string_value, path), "record %zu of round %d", i,
				  round);
		}
		opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(
			req, NULL);
	}
	free(raw);
	otlp__encoder_free(enc);
}

/* A LogRecord's length is written in the two bytes kept for it, or the record moves: one over
 * 16 KiB (three bytes; none is under 128: an empty event's JSON body alone is 160); a host name
 * longer than the room kept before the records for the request's head moves them all. Every
 * record decodes, in order, whole.
 */
Test(otlp, records_of_every_length_and_a_long_host_decode)
{
	static uint8_t raw[1 << 17], plain[1 << 19];
	static char big[20000], host[700], e126[127], e127[128];
	/* the host of the first record is the resource's; a value of 126 bytes has a one-byte
	 * length in an AnyValue whose own takes two, one of 127 two in both
	 */
	const char *exes[] = { NULL, NULL, big, "/usr/bin/true", e126, e127 };
	const size_t nexes = sizeof(exes) / sizeof(exes[0]);
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
	Opentelemetry__Proto__Logs__V1__ScopeLogs *sl;
	struct otlp_encoder *enc = otlp__encoder_new(true);
	size_t n = 0, len, records;
	uint64_t first, last;
	uint8_t *gz = NULL;
	char sid[33];
	bool host_seen = false;

	cr_assert(enc);
	memset(big, 'b', sizeof(big) - 1);
	memset(e126, 'x', sizeof(e126) - 1);
	memset(e127, 'y', sizeof(e127) - 1);
	memset(host, 'h', sizeof(host) - 1);
	for (size_t i = 0; i < nexes; i++) {
		Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
		Egret__V1__Process p = EGRET__V1__PROCESS__INIT;
		size_t l;

		if (exes[i]) {
			p.exe = (char *)exes[i];
			ev.process = &p;
		}
		ev.seq = i + 1;
		ev.host = i == 1 ? "h" : host;
		l = egret__v1__event__get_packed_size(&ev);
		cr_assert_lt(n + l + WIRE_VARINT_MAX, sizeof(raw));
		n += wire__varint_put(l, raw + n);
		n += egret__v1__event__pack(&ev, raw + n);
	}
	for (int round = 0; round < 2; round++) { /* the second with the encoder's kept room */
		cr_assert_eq(otlp__encode(enc, raw, n, 0, &gz, &len, &records, &first, &last, sid),
			     0);
		cr_assert_eq(records, nexes);
		req = gunzip_decode(gz, len, plain, sizeof(plain));
		cr_assert_eq(req->n_resource_logs, 1);
		for (size_t i = 0; i < req->resource_logs[0]->resource->n_attributes; i++) {
			const Opentelemetry__Proto__Common__V1__KeyValue *kv =
				req->resource_logs[0]->resource->attributes[i];

			if (!strcmp(kv->key, "host.name"))
				host_seen = !strcmp(kv->value->string_value, host);
		}
		cr_expect(host_seen, "host.name is the 699-byte host");
		cr_assert_eq(req->resource_logs[0]->n_scope_logs, 1);
		sl = req->resource_logs[0]->scope_logs[0];
		cr_assert_eq(sl->n_log_records, nexes);
		cr_expect_str_eq(sl->scope->name, "egret");
		cr_expect_gt(opentelemetry__proto__logs__v1__log_record__get_packed_size(
				     sl->log_records[2]),
			     16384, "the third is one whose length takes three");
		for (size_t i = 0; i < nexes; i++) {
			const Opentelemetry__Proto__Logs__V1__LogRecord *lr = sl->log_records[i];

			const Opentelemetry__Proto__Common__V1__AnyValue *v =
				find_attr(lr, "process.executable.path");

			cr_expect(!exes[i] || strstr(lr->body->string_value, exes[i]),
				  "record %zu's body", i);
			/* a value of 19,999 bytes: its lengths take three bytes, the KeyValue's too */
			cr_expect(!exes[i] || (v && !strcmp(v->string_value, exes[i])),
				  "record %zu's process.executable.path", i);
			cr_expect_eq(lr->time_unix_nano, 0);
		}
		opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(
			req, NULL);
		host_seen = false;
	}
	otlp__encoder_free(enc);
}

/* process.command_line is the arguments joined by spaces, written with its lengths counted
 * first: short, and long enough that every length takes two bytes
 */
Test(otlp, command_lines_of_any_length)
{
	static char long_arg[300], want[400];
	char *shorts[] = { "python3", "-m", "pip" }, *longs[] = { "sh", "-c", long_arg };
	Egret__V1__ProcessExec x = EGRET__V1__PROCESS_EXEC__INIT;
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;

	memset(long_arg, 'L', sizeof(long_arg) - 1);
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXEC;
	ev.exec = &x;
	for (int round = 0; round < 2; round++) {
		Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest *req;
		const Opentelemetry__Proto__Common__V1__AnyValue *v;

		x.args = round ? longs : shorts;
		x.n_args = 3;
		snprintf(want, sizeof(want), "%s %s %s", x.args[0], x.args[1], x.args[2]);
		req = encode_decode(NULL, &ev);
		v = find_attr(req->resource_logs[0]->scope_logs[0]->log_records[0],
			      "process.command_line");
		cr_expect(v && v->string_value && !strcmp(v->string_value, want),
			  "round %d: process.command_line", round);
		opentelemetry__proto__collector__logs__v1__export_logs_service_request__free_unpacked(
			req, NULL);
	}
}
