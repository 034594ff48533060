/* Events into the otlp+http sink's request (otlp.h): each Event becomes a LogRecord with its
 * time, severity (WARN for denials, tamper attempts, losses and limits, INFO otherwise),
 * event_name "egret.<payload>", the whole event as JSON in the body, and its key fields as
 * attributes (OCSF class, sandbox, process, verdict, destination...) so a SIEM can search
 * without parsing the body. Every string is made valid UTF-8 first (what is not becomes
 * U+FFFD): protobuf requires it of string fields, and a collector refuses the whole request
 * otherwise.
 *
 * The request is written as protobuf bytes directly (pbencode.h's buffer and writers), field
 * by field in field order: a nested message's length put in front of it when it is closed, an
 * attribute's lengths all counted before it is written. Building protobuf-c's message structs
 * for every attribute and packing them (two walks of the tree through its descriptors) cost
 * more than the rest of the encoding. The field numbers are those of proto/opentelemetry (the
 * receivers' tests decode with protoc's code).
 */

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <libdeflate.h>

#include "arena.h"
#include "egret/v1/events.pb-c.h"
#include "otlp.h"
#include "pbdecode.h"
#include "pbencode.h"
#include "pbjson.h"
#include "util.h"
#include "wire.h"

#define MAX_LABELS 8 /* container.label.KEY attributes of one record */

/* ---- protobuf bytes ---------------------------------------------------------------------- */

/* field numbers (proto/opentelemetry/proto) */
enum {
	REQ_RESOURCE_LOGS = 1,
	RL_RESOURCE = 1,
	RL_SCOPE_LOGS = 2,
	RES_ATTRIBUTES = 1,
	SL_SCOPE = 1,
	SL_LOG_RECORDS = 2,
	SCOPE_NAME = 1,
	SCOPE_VERSION = 2,
	LR_TIME = 1,
	LR_SEVERITY_NUMBER = 2,
	LR_SEVERITY_TEXT = 3,
	LR_BODY = 5,
	LR_ATTRIBUTES = 6,
	LR_OBSERVED_TIME = 11,
	LR_EVENT_NAME = 12,
	KV_KEY = 1,
	KV_VALUE = 2,
	AV_STRING = 1,
	AV_BOOL = 2,
	AV_INT = 3,
	AV_ARRAY = 5,
	ARRAY_VALUES = 1,
};
_Static_assert(LR_ATTRIBUTES < 16 && RES_ATTRIBUTES < 16, "attr_begin writes one-byte keys");

#define REQ_HEAD_ROOM 512 /* bytes kept before the records for the request's head */
#define LR_LEN_KEPT   2	  /* bytes kept for a LogRecord's length: up to 16 KiB need not move */

#define SEVERITY_INFO 9	 /* SeverityNumber SEVERITY_NUMBER_INFO */
#define SEVERITY_WARN 13 /* SEVERITY_NUMBER_WARN */

static void pb_bytes(struct pbencode_buf *b, unsigned int field, const char *s, size_t n)
{
	pbencode__tag(b, field, PB_WT_LEN);
	pbencode__varint(b, n);
	pbencode__raw(b, s, n);
}

static void pb_str(struct pbencode_buf *b, unsigned int field, const char *s)
{
	pb_bytes(b, field, s, strlen(s));
}

static void pb_uint(struct pbencode_buf *b, unsigned int field, uint64_t v)
{
	pbencode__tag(b, field, PB_WT_VARINT);
	pbencode__varint(b, v);
}

static void pb_fixed64(struct pbencode_buf *b, unsigned int field, uint64_t v)
{
	uint8_t le[8];

	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	pbencode__tag(b, field, PB_WT_I64);
	pbencode__raw(b, le, sizeof(le));
}

/* A nested message begins, `kept` bytes kept for its length (pbencode__close with the same
 * `kept` puts it there): a LogRecord (hundreds of bytes to a few KiB) keeps two, not moved.
 */
static size_t pb_open_n(struct pbencode_buf *b, unsigned int field, size_t kept)
{
	pbencode__tag(b, field, PB_WT_LEN);
	return pbencode__open(b, kept);
}

static size_t pb_open(struct pbencode_buf *b, unsigned int field)
{
	return pb_open_n(b, field, 1);
}

static void pb_close(struct pbencode_buf *b, size_t start)
{
	pbencode__close(b, start, 1);
}

/* ---- attributes -------------------------------------------------------------------------- */

/* One record being written: its attributes go to field `field` of the message open in b */
struct rec {
	struct pbencode_buf *b;
	unsigned int field;
	const Egret__V1__Event *ev;
};

/* Attributes are written inline where they are named: each key's length is then a constant
 * and its copy a few moves (called, the copy of a key of unknown length was an inlined
 * `rep movs`, the largest single cost of building a record).
 */
#define ATTR_INLINE inline __attribute__((always_inline))

/* An attribute's key: a string literal and its length, counted when compiled */
#define K(lit) ("" lit ""), (sizeof(lit) - 1)

/* A KeyValue whose value (an AnyValue of av_len bytes) is written next, at the pointer
 * returned: every length is known before a byte is written, so nothing is closed or moved
 * after (NULL when out of memory). The record's attribute fields are below 16: one-byte keys.
 */
static ATTR_INLINE uint8_t *attr_begin(struct rec *r, const char *key, size_t kl, size_t av_len)
{
	size_t kv = 1 + wire__varint_len(kl) + kl + 1 + wire__varint_len(av_len) + av_len;
	size_t total = 1 + wire__varint_len(kv) + kv;
	struct pbencode_buf *b = r->b;
	uint8_t *p;

	if (!pbencode__room(b, total))
		return NULL;
	p = b->p + b->len;
	b->len += total;
	*p++ = (uint8_t)(r->field << 3 | PB_WT_LEN);
	p += wire__varint_put(kv, p);
	*p++ = KV_KEY << 3 | PB_WT_LEN;
	p += wire__varint_put(kl, p);
	memcpy(p, key, kl);
	p += kl;
	*p++ = KV_VALUE << 3 | PB_WT_LEN;
	p += wire__varint_put(av_len, p);
	return p;
}

static ATTR_INLINE void attr_strn(struct rec *r, const char *key, size_t kl, const char *v,
				  size_t n)
{
	uint8_t *p;

	if (!v || !n)
		return;
	p = attr_begin(r, key, kl, 1 + wire__varint_len(n) + n);
	if (!p)
		return;
	*p++ = AV_STRING << 3 | PB_WT_LEN;
	p += wire__varint_put(n, p);
	memcpy(p, v, n);
}

static ATTR_INLINE void attr_str(struct rec *r, const char *key, size_t kl, const char *v)
{
	attr_strn(r, key, kl, v, v ? strlen(v) : 0);
}

static ATTR_INLINE void attr_varint(struct rec *r, const char *key, size_t kl, unsigned int field,
				    uint64_t v)
{
	uint8_t *p = attr_begin(r, key, kl, 1 + wire__varint_len(v));

	if (p) {
		*p++ = (uint8_t)(field << 3 | PB_WT_VARINT);
		wire__varint_put(v, p);
	}
}

static ATTR_INLINE void attr_int(struct rec *r, const char *key, size_t kl, int64_t v)
{
	attr_varint(r, key, kl, AV_INT, (uint64_t)v);
}

static ATTR_INLINE void attr_bool(struct rec *r, const char *key, size_t kl, bool v)
{
	attr_varint(r, key, kl, AV_BOOL, v);
}

static ATTR_INLINE void attr_enum(struct rec *r, const char *key, size_t kl,
				  const ProtobufCEnumDescriptor *d, int v)
{
	const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);

	if (e && v)
		attr_str(r, key, kl, e->name);
}

/* OpenTelemetry's container.* and k8s.* resource conventions, for a container sandbox. */
static void attr_container(struct rec *r, const Egret__V1__Container *c)
{
	const char *tag = c->image ? c->image->tag : "";
	unsigned int nl = 0;

	attr_str(r, K("container.id"), c->uid);
	attr_str(r, K("container.name"), c->name);
	attr_str(r, K("container.runtime.name"), c->runtime);
	if (c->image && c->image->name[0]) {
		size_t len = strlen(c->image->name), tl = strlen(tag);

		/* the name without ":TAG", the tag as container.image.tags */
		if (tl && len > tl + 1 && c->image->name[len - tl - 1] == ':')
			len -= tl + 1;
		attr_strn(r, K("container.image.name"), c->image->name, len);
		if (tl) {
			/* an array of one AnyValue: the tag */
			size_t one = 1 + wire__varint_len(tl) + tl;
			size_t arr = 1 + wire__varint_len(one) + one;
			uint8_t *p = attr_begin(r, K("container.image.tags"),
						1 + wire__varint_len(arr) + arr);

			if (p) {
				*p++ = AV_ARRAY << 3 | PB_WT_LEN;
				p += wire__varint_put(arr, p);
				*p++ = ARRAY_VALUES << 3 | PB_WT_LEN;
				p += wire__varint_put(one, p);
				*p++ = AV_STRING << 3 | PB_WT_LEN;
				p += wire__varint_put(tl, p);
				memcpy(p, tag, tl);
			}
		}
	}
	if (c->orchestrator[0]) {
		attr_str(r, K("k8s.pod.name"), c->pod_name);
		attr_str(r, K("k8s.namespace.name"), c->namespace_);
		attr_str(r, K("k8s.pod.uid"), c->pod_uuid);
		attr_str(r, K("k8s.container.name"), c->name);
	}
	for (size_t i = 0; i < c->n_labels && nl < MAX_LABELS; i++) {
		const char *eq = strchr(c->labels[i], '=');
		char key[96];
		int n;

		if (!eq)
			continue;
		n = snprintf(key, sizeof(key), "container.label.%.*s", (int)(eq - c->labels[i]),
			     c->labels[i]);
		/* a key cut short could end inside a UTF-8 sequence: such a label is left out */
		if (n > 0 && (size_t)n < sizeof(key))
			attr_str(r, key, (size_t)n, eq + 1);
		nl++;
	}
}

static bool is_warning(const Egret__V1__Event *ev)
{
	switch (ev->payload_case) {
	case EGRET__V1__EVENT__PAYLOAD_NET_CONNECT:
		return ev->net_connect->verdict != EGRET__V1__NET_CONNECT__VERDICT__VERDICT_ALLOW;
	case EGRET__V1__EVENT__PAYLOAD_TAMPER:
	case EGRET__V1__EVENT__PAYLOAD_LOSS:
	case EGRET__V1__EVENT__PAYLOAD_LIMIT:
		return true;
	case EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE:
		return !ev->policy_change->ok;
	default:
		return false;
	}
}

static void net_connect_attrs(struct rec *r, const Egret__V1__NetConnect *c)
{
	attr_enum(r, K("egret.verdict"), &egret__v1__net_connect__verdict__descriptor, c->verdict);
	attr_enum(r, K("egret.reason"), &egret__v1__net_connect__reason__descriptor, c->reason);
	attr_enum(r, K("egret.hook"), &egret__v1__net_connect__hook__descriptor, c->hook);
	attr_str(r, K("destination.address"), c->dst_addr);
	if (c->dst_port)
		attr_int(r, K("destination.port"), c->dst_port);
	attr_str(r, K("network.transport"), c->protocol);
	if (c->rule_id)
		attr_int(r, K("egret.rule_id"), c->rule_id);
	attr_str(r, K("egret.rule"), c->rule);
	/* a device's packet: OpenTelemetry's network.interface.name, and its source */
	attr_str(r, K("network.interface.name"), c->interface);
	attr_str(r, K("source.address"), c->src_addr);
	if (c->src_port)
		attr_int(r, K("source.port"), c->src_port);
}

static void exec_attrs(struct rec *r, const Egret__V1__ProcessExec *x)
{
	size_t len = 0;
	uint8_t *p;

	for (size_t i = 0; i < x->n_args; i++)
		len += (i ? 1 : 0) + strlen(x->args[i]);
	/* the arguments joined by spaces, written into the value as they are */
	if (len &&
	    (p = attr_begin(r, K("process.command_line"), 1 + wire__varint_len(len) + len))) {
		*p++ = AV_STRING << 3 | PB_WT_LEN;
		p += wire__varint_put(len, p);
		for (size_t i = 0; i < x->n_args; i++) {
			size_t n = strlen(x->args[i]);

			if (i)
				*p++ = ' ';
			memcpy(p, x->args[i], n);
			p += n;
		}
	}
	attr_str(r, K("process.working_directory"), x->cwd);
}

static void flow_attrs(struct rec *r, const Egret__V1__NetFlow *fl)
{
	attr_str(r, K("network.transport"), fl->protocol);
	attr_str(r, K("source.address"), fl->src_addr);
	attr_int(r, K("source.port"), fl->src_port);
	attr_str(r, K("destination.address"), fl->dst_addr);
	attr_int(r, K("destination.port"), fl->dst_port);
	attr_int(r, K("egret.flow.bytes_out"), (int64_t)fl->bytes_out);
	attr_int(r, K("egret.flow.bytes_in"), (int64_t)fl->bytes_in);
}

static void payload_attrs(struct rec *r)
{
	const Egret__V1__Event *ev = r->ev;

	switch (ev->payload_case) {
	case EGRET__V1__EVENT__PAYLOAD_NET_CONNECT:
		net_connect_attrs(r, ev->net_connect);
		break;
	case EGRET__V1__EVENT__PAYLOAD_DNS_QUERY:
		attr_str(r, K("dns.question.name"), ev->dns_query->name);
		attr_str(r, K("dns.question.type"), ev->dns_query->type);
		attr_str(r, K("dns.response_code"), ev->dns_query->rcode);
		attr_bool(r, K("egret.dns.allowed"), ev->dns_query->allowed);
		if (ev->dns_query->high_entropy)
			attr_bool(r, K("egret.dns.high_entropy"), true);
		if (ev->dns_query->cached)
			attr_bool(r, K("egret.dns.cached"), true);
		if (ev->dns_query->budget && ev->dns_query->budget[0])
			attr_str(r, K("egret.dns.budget"), ev->dns_query->budget);
		break;
	case EGRET__V1__EVENT__PAYLOAD_EXEC:
		exec_attrs(r, ev->exec);
		break;
	case EGRET__V1__EVENT__PAYLOAD_EXIT:
		attr_int(r, K("process.exit.code"), ev->exit->exit_code);
		if (ev->exit->signal)
			attr_int(r, K("egret.exit.signal"), ev->exit->signal);
		break;
	case EGRET__V1__EVENT__PAYLOAD_FILE:
		attr_enum(r, K("egret.file.op"), &egret__v1__file_activity__op__descriptor,
			  ev->file->op);
		attr_str(r, K("file.path"), ev->file->path);
		attr_str(r, K("egret.file.new_path"), ev->file->new_path);
		break;
	case EGRET__V1__EVENT__PAYLOAD_FLOW:
		flow_attrs(r, ev->flow);
		break;
	case EGRET__V1__EVENT__PAYLOAD_TAMPER:
		attr_enum(r, K("egret.tamper.kind"), &egret__v1__tamper__kind__descriptor,
			  ev->tamper->kind);
		break;
	case EGRET__V1__EVENT__PAYLOAD_LOSS:
		attr_enum(r, K("egret.loss.source"), &egret__v1__loss__source__descriptor,
			  ev->loss->source);
		attr_int(r, K("egret.loss.count"), (int64_t)ev->loss->count);
		if (ev->loss->itemized_case == EGRET__V1__LOSS__ITEMIZED_RECORD_KIND)
			attr_enum(r, K("egret.loss.record_kind"),
				  &egret__v1__loss__record_kind__descriptor, ev->loss->record_kind);
		break;
	case EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE:
		attr_enum(r, K("egret.lifecycle"), &egret__v1__sandbox_lifecycle__kind__descriptor,
			  ev->sandbox_lifecycle->kind);
		break;
	case EGRET__V1__EVENT__PAYLOAD_LIMIT:
		attr_enum(r, K("egret.limit.kind"), &egret__v1__resource_limit__kind__descriptor,
			  ev->limit->kind);
		break;
	case EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE:
		attr_str(r, K("egret.policy.action"), ev->policy_change->action);
		attr_bool(r, K("egret.policy.ok"), ev->policy_change->ok);
		break;
	default:
		break;
	}
}

/* One Event as a LogRecord (field log_records of the ScopeLogs being written in b). */
static void log_record(struct pbencode_buf *b, const Egret__V1__Event *ev, uint64_t now,
		       struct pbjson_buf *j)
{
	const char *name = pbjson__event_name(ev);
	bool warn = is_warning(ev);
	struct rec r = { .b = b, .field = LR_ATTRIBUTES, .ev = ev };
	size_t lr = pb_open_n(b, SL_LOG_RECORDS, LR_LEN_KEPT);
	char event_name[48];

	/* in field order, as protobuf's own encoders write them */
	pb_fixed64(b, LR_TIME, ev->time_unix_nano);
	pb_uint(b, LR_SEVERITY_NUMBER, warn ? SEVERITY_WARN : SEVERITY_INFO);
	pb_str(b, LR_SEVERITY_TEXT, warn ? "WARN" : "INFO");
	j->len = 0;
	pbjson__event_buf(j, ev);
	if (j->err) {
		b->err = true;
	} else {
		uint8_t v[WIRE_VARINT_MAX];

		/* the body's AnyValue: its length known before it is written */
		pbencode__tag(b, LR_BODY, PB_WT_LEN);
		pbencode__varint(b, 1 + wire__varint_put(j->len, v) + j->len);
		pb_bytes(b, AV_STRING, j->p, j->len);
	}
	attr_str(&r, K("egret.stream_id"), ev->stream_id);
	attr_int(&r, K("egret.seq"), (int64_t)ev->seq);
	attr_str(&r, K("egret.event"), name);
	if (ev->class_uid)
		attr_int(&r, K("ocsf.class_uid"), ev->class_uid);
	if (ev->activity_id)
		attr_int(&r, K("ocsf.activity_id"), ev->activity_id);
	if (ev->sandbox) {
		attr_str(&r, K("egret.sandbox.name"), ev->sandbox->name);
		attr_int(&r, K("egret.sandbox.cgroup_id"), (int64_t)ev->sandbox->cgroup_id);
		if (ev->sandbox->container)
			attr_container(&r, ev->sandbox->container);
	}
	if (ev->process) {
		attr_int(&r, K("process.pid"), ev->process->pid);
		if (ev->process->ppid)
			attr_int(&r, K("process.parent_pid"), ev->process->ppid);
		attr_str(&r, K("process.executable.name"), ev->process->comm);
		attr_str(&r, K("process.executable.path"), ev->process->exe);
		attr_int(&r, K("process.real_user.id"), ev->process->uid);
		if (ev->process->exec_id)
			attr_int(&r, K("egret.exec_id"), (int64_t)ev->process->exec_id);
		if (ev->process->lost_case == EGRET__V1__PROCESS__LOST_EXEC_LOST &&
		    ev->process->exec_lost)
			attr_bool(&r, K("egret.exec_lost"), true);
	}
	payload_attrs(&r);
	pb_fixed64(b, LR_OBSERVED_TIME, now);
	snprintf(event_name, sizeof(event_name), "egret.%s", *name ? name : "event");
	pb_str(b, LR_EVENT_NAME, event_name);
	pbencode__close(b, lr, LR_LEN_KEPT);
}

struct otlp_encoder {
	struct pbencode_buf recs, req;	  /* lengths 0 between encodes, their room kept */
	struct pbjson_buf json;		  /* an event's body, its room kept */
	struct arena arena;		  /* the batch's events are unpacked into it */
	struct libdeflate_compressor *gz; /* made at the first request */
	bool gzip;
};

struct otlp_encoder *otlp__encoder_new(bool gzip)
{
	struct otlp_encoder *e = calloc(1, sizeof(struct otlp_encoder));

	if (e) {
		arena__init(&e->arena);
		e->gzip = gzip;
	}
	return e;
}

void otlp__encoder_free(struct otlp_encoder *e)
{
	if (!e)
		return;
	if (e->gz)
		libdeflate_free_compressor(e->gz);
	arena__release(&e->arena);
	pbjson__buf_free(&e->json);
	free(e->recs.p);
	free(e->req.p);
	free(e);
}

/* The request gzipped whole (libdeflate: one call over the buffer, at level 1 about three times
 * zlib's speed at that level, and smaller; any gzip reader takes it), or copied as it is, after
 * room bytes for the caller's head.
 */
static int compress_request(struct otlp_encoder *e, const uint8_t *in, size_t n, size_t room,
			    uint8_t **out, size_t *outlen)
{
	size_t cap;

	if (!e->gzip) { /* ?compression=none: as it is */
		*out = malloc(room + n + 1);
		if (!*out)
			return -ENOMEM;
		memcpy(*out + room, in, n);
		*outlen = n;
		return 0;
	}
	if (!e->gz) {
		e->gz = libdeflate_alloc_compressor(1);
		if (!e->gz)
			return -ENOMEM;
	}
	cap = libdeflate_gzip_compress_bound(e->gz, n);
	*out = malloc(room + cap);
	if (!*out)
		return -ENOMEM;
	*outlen = libdeflate_gzip_compress(e->gz, in, n, *out + room, cap);
	if (!*outlen) {
		free(*out);
		*out = NULL;
		return -EIO;
	}
	return 0;
}

/* The Events framed in raw[0, n) as LogRecords into recs (what is no Event skipped): how many
 * into *nrec, their seq range, stream id and host (malloc'd, the first record's: whole, a cut
 * one could end inside a UTF-8 sequence).
 */
static int encode_records(struct otlp_encoder *e, const uint8_t *raw, size_t n, size_t *nrec,
			  uint64_t *first_seq, uint64_t *last_seq, char stream_id[33], char **host)
{
	struct pbencode_buf *recs = &e->recs;
	uint64_t now = now_ns(CLOCK_REALTIME);
	size_t total, msg, off = 0;
	int err = 0;

	*first_seq = *last_seq = 0;
	stream_id[0] = '\0';
	*host = NULL;
	while (!err && off < n && wire__frame(raw + off, n - off, &total, &msg) == 1) {
		Egret__V1__Event *ev = (Egret__V1__Event *)pbdecode__unpack_any(
			&egret__v1__event__descriptor, &e->arena.pb, total - msg, raw + off + msg);

		off += total;
		if (e->arena.failed) {
			err = -ENOMEM;
			break;
		}
		if (!ev)
			continue;
		/* protobuf requires valid UTF-8 in string fields; kernel bytes need not be */
		err = pbjson__make_utf8(&ev->base, &e->arena.pb);
		if (!err) {
			log_record(recs, ev, now, &e->json);
			err = recs->err ? -ENOMEM : 0;
		}
		if (!err) {
			if (!*nrec) {
				*first_seq = ev->seq;
				snprintf(stream_id, 33, "%s", ev->stream_id);
				*host = strdup(ev->host);
				err = *host ? 0 : -ENOMEM;
			}
			*last_seq = ev->seq;
			(*nrec)++;
		}
	}
	arena__reset(&e->arena);
	return err;
}

/* n bytes of d put in front of *at, which moves back over them */
static void put_before(uint8_t **at, const void *d, size_t n)
{
	*at -= n;
	memcpy(*at, d, n);
}

static void varint_before(uint8_t **at, uint64_t v)
{
	uint8_t tmp[WIRE_VARINT_MAX];

	put_before(at, tmp, wire__varint_put(v, tmp));
}

/* One ExportLogsServiceRequest of the records (egret's resource and scope), gzipped (unless
 * the sink says none), after caller_room bytes. The records were written after REQ_HEAD_ROOM
 * bytes of recs: what goes before them (the ResourceLogs and ScopeLogs that hold them, whose
 * lengths are known only now) is put there, so that the records are not copied again.
 */
static int pack_request(struct otlp_encoder *e, const char *host, size_t caller_room, uint8_t **out,
			size_t *outlen)
{
	struct pbencode_buf *recs = &e->recs, *b = &e->req;
	struct rec res = { .b = b, .field = RES_ATTRIBUTES };
	size_t body = recs->len - REQ_HEAD_ROOM, room = REQ_HEAD_ROOM, r, sc, res_len, sl, rl, head;
	uint8_t tmp[WIRE_VARINT_MAX], *at;

	/* the Resource and the InstrumentationScope, whole, into req */
	b->len = 0;
	b->err = false;
	r = pb_open(b, RL_RESOURCE);
	attr_str(&res, K("service.name"), "egret");
	attr_str(&res, K("service.version"), EGRET_VERSION);
	attr_str(&res, K("host.name"), host);
	pb_close(b, r);
	res_len = b->len;
	sc = pb_open(b, SL_SCOPE);
	pb_str(b, SCOPE_NAME, "egret");
	pb_str(b, SCOPE_VERSION, EGRET_VERSION);
	pb_close(b, sc);
	if (b->err)
		return -ENOMEM;
	sl = b->len - res_len + body;			   /* the ScopeLogs' length */
	rl = res_len + 1 + wire__varint_put(sl, tmp) + sl; /* the ResourceLogs' */
	head = 1 + wire__varint_put(rl, tmp) + rl - body;
	if (head > room) { /* a host name of hundreds of bytes: the records move */
		if (!pbencode__room(recs, head - room))
			return -ENOMEM;
		memmove(recs->p + head, recs->p + room, body);
		recs->len += head - room;
		room = head;
	}
	at = recs->p + room;
	put_before(&at, b->p + res_len, b->len - res_len);
	varint_before(&at, sl);
	varint_before(&at, (uint64_t)RL_SCOPE_LOGS << 3 | PB_WT_LEN);
	put_before(&at, b->p, res_len);
	varint_before(&at, rl);
	varint_before(&at, (uint64_t)REQ_RESOURCE_LOGS << 3 | PB_WT_LEN);
	return compress_request(e, at, head + body, caller_room, out, outlen);
}

int otlp__encode(struct otlp_encoder *e, const uint8_t *raw, size_t n, size_t room, uint8_t **out,
		 size_t *outlen, size_t *records, uint64_t *first_seq, uint64_t *last_seq,
		 char stream_id[33])
{
	struct otlp_encoder *once = NULL;
	size_t nrec = 0;
	char *host = NULL;
	int err;

	if (!e && !(e = once = otlp__encoder_new(true)))
		return -ENOMEM;
	e->recs.len = 0;
	e->recs.err = false;
	if (pbencode__room(&e->recs,
			   REQ_HEAD_ROOM)) /* the request's head goes before the records */
		e->recs.len = REQ_HEAD_ROOM;
	err = e->recs.err ? -ENOMEM
			  : encode_records(e, raw, n, &nrec, first_seq, last_seq, stream_id, &host);
	if (!err) {
		*records = nrec;
		err = pack_request(e, host ? host : "", room, out, outlen);
	}
	free(host);
	otlp__encoder_free(once);
	return err;
}
