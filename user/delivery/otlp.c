/* The otlp+http sink; see otlp.h. Each Event becomes a LogRecord: its time, severity (WARN for
 * denials, tamper attempts, losses and limits, INFO otherwise), event_name "egret.<payload>",
 * the whole event as JSON in the body, and its key fields as attributes (OCSF class, sandbox,
 * process, verdict, destination...) so a SIEM can search without parsing the body. Every string
 * is made valid UTF-8 first (what is not becomes U+FFFD): protobuf requires it of string fields,
 * and a collector refuses the whole request otherwise.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "egret/v1/events.pb-c.h"
#include "http.h"
#include "log.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "otlp.h"
#include "pbjson.h"
#include "sink.h"
#include "util.h"
#include "wire.h"

typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Logs__V1__LogRecord LogRecord;

#define MAX_ATTRS 28

enum otlp_state {
	OTLP_IDLE,
	OTLP_SENDING,
	OTLP_WAITING
};

struct otlp {
	enum otlp_state state;
	uint8_t *req; /* the whole HTTP request of the batch in hand */
	size_t req_len, req_off;
	struct spool_pos batch_end;
	size_t records;
	uint64_t first_seq, last_seq;
	char stream_id[33];
	char *resp;
	size_t resp_len;
	uint64_t sent_ns;
	uint64_t requests, retries;
};

/* ---- Event -> LogRecord -------------------------------------------------------------------- */

struct rec {
	Egret__V1__Event *ev;
	LogRecord lr;
	AnyValue body;
	KeyValue kv[MAX_ATTRS];
	AnyValue av[MAX_ATTRS];
	KeyValue *kvp[MAX_ATTRS];
	size_t n;
	char *json, *cmdline;
	char event_name[48];
};

static AnyValue *attr(struct rec *r, const char *key)
{
	KeyValue *kv;

	if (r->n == MAX_ATTRS)
		return NULL;
	kv = &r->kv[r->n];
	opentelemetry__proto__common__v1__key_value__init(kv);
	opentelemetry__proto__common__v1__any_value__init(&r->av[r->n]);
	kv->key = (char *)key;
	kv->value = &r->av[r->n];
	r->kvp[r->n] = kv;
	r->n++;
	return kv->value;
}

static void attr_str(struct rec *r, const char *key, const char *v)
{
	AnyValue *a;

	if (!v || !*v || !(a = attr(r, key)))
		return;
	a->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
	a->string_value = (char *)v;
}

static void attr_int(struct rec *r, const char *key, int64_t v)
{
	AnyValue *a = attr(r, key);

	if (!a)
		return;
	a->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE;
	a->int_value = v;
}

static void attr_bool(struct rec *r, const char *key, bool v)
{
	AnyValue *a = attr(r, key);

	if (!a)
		return;
	a->value_case = OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_BOOL_VALUE;
	a->bool_value = v;
}

static void attr_enum(struct rec *r, const char *key, const ProtobufCEnumDescriptor *d, int v)
{
	const ProtobufCEnumValue *e = protobuf_c_enum_descriptor_get_value(d, v);

	if (e && v)
		attr_str(r, key, e->name);
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

static void payload_attrs(struct rec *r)
{
	const Egret__V1__Event *ev = r->ev;

	switch (ev->payload_case) {
	case EGRET__V1__EVENT__PAYLOAD_NET_CONNECT: {
		const Egret__V1__NetConnect *c = ev->net_connect;

		attr_enum(r, "egret.verdict", &egret__v1__net_connect__verdict__descriptor,
			  c->verdict);
		attr_enum(r, "egret.reason", &egret__v1__net_connect__reason__descriptor,
			  c->reason);
		attr_enum(r, "egret.hook", &egret__v1__net_connect__hook__descriptor, c->hook);
		attr_str(r, "destination.address", c->dst_addr);
		if (c->dst_port)
			attr_int(r, "destination.port", c->dst_port);
		attr_str(r, "network.transport", c->protocol);
		if (c->rule_id)
			attr_int(r, "egret.rule_id", c->rule_id);
		attr_str(r, "egret.rule", c->rule);
		break;
	}
	case EGRET__V1__EVENT__PAYLOAD_DNS_QUERY:
		attr_str(r, "dns.question.name", ev->dns_query->name);
		attr_str(r, "dns.question.type", ev->dns_query->type);
		attr_str(r, "dns.response_code", ev->dns_query->rcode);
		attr_bool(r, "egret.dns.allowed", ev->dns_query->allowed);
		break;
	case EGRET__V1__EVENT__PAYLOAD_EXEC: {
		size_t len = 0;
		FILE *f = open_memstream(&r->cmdline, &len);

		for (size_t i = 0; f && i < ev->exec->n_args; i++)
			fprintf(f, "%s%s", i ? " " : "", ev->exec->args[i]);
		if (f)
			fclose(f);
		attr_str(r, "process.command_line", r->cmdline);
		attr_str(r, "process.working_directory", ev->exec->cwd);
		break;
	}
	case EGRET__V1__EVENT__PAYLOAD_EXIT:
		attr_int(r, "process.exit.code", ev->exit->exit_code);
		if (ev->exit->signal)
			attr_int(r, "egret.exit.signal", ev->exit->signal);
		break;
	case EGRET__V1__EVENT__PAYLOAD_FILE:
		attr_enum(r, "egret.file.op", &egret__v1__file_activity__op__descriptor,
			  ev->file->op);
		attr_str(r, "file.path", ev->file->path);
		attr_str(r, "egret.file.new_path", ev->file->new_path);
		break;
	case EGRET__V1__EVENT__PAYLOAD_FLOW:
		attr_str(r, "network.transport", ev->flow->protocol);
		attr_str(r, "source.address", ev->flow->src_addr);
		attr_int(r, "source.port", ev->flow->src_port);
		attr_str(r, "destination.address", ev->flow->dst_addr);
		attr_int(r, "destination.port", ev->flow->dst_port);
		attr_int(r, "egret.flow.bytes_out", (int64_t)ev->flow->bytes_out);
		attr_int(r, "egret.flow.bytes_in", (int64_t)ev->flow->bytes_in);
		break;
	case EGRET__V1__EVENT__PAYLOAD_TAMPER:
		attr_enum(r, "egret.tamper.kind", &egret__v1__tamper__kind__descriptor,
			  ev->tamper->kind);
		break;
	case EGRET__V1__EVENT__PAYLOAD_LOSS:
		attr_enum(r, "egret.loss.source", &egret__v1__loss__source__descriptor,
			  ev->loss->source);
		attr_int(r, "egret.loss.count", (int64_t)ev->loss->count);
		break;
	case EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE:
		attr_enum(r, "egret.lifecycle", &egret__v1__sandbox_lifecycle__kind__descriptor,
			  ev->sandbox_lifecycle->kind);
		break;
	case EGRET__V1__EVENT__PAYLOAD_LIMIT:
		attr_enum(r, "egret.limit.kind", &egret__v1__resource_limit__kind__descriptor,
			  ev->limit->kind);
		break;
	case EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE:
		attr_str(r, "egret.policy.action", ev->policy_change->action);
		attr_bool(r, "egret.policy.ok", ev->policy_change->ok);
		break;
	default:
		break;
	}
}

static void to_log_record(struct rec *r, uint64_t now)
{
	const Egret__V1__Event *ev = r->ev;
	const char *name = pbjson__event_name(ev);
	bool warn = is_warning(ev);
	size_t len = 0;
	FILE *f;

	opentelemetry__proto__logs__v1__log_record__init(&r->lr);
	opentelemetry__proto__common__v1__any_value__init(&r->body);
	snprintf(r->event_name, sizeof(r->event_name), "egret.%s", *name ? name : "event");
	r->lr.time_unix_nano = ev->time_unix_nano;
	r->lr.observed_time_unix_nano = now;
	r->lr.severity_number =
		warn ? OPENTELEMETRY__PROTO__LOGS__V1__SEVERITY_NUMBER__SEVERITY_NUMBER_WARN
		     : OPENTELEMETRY__PROTO__LOGS__V1__SEVERITY_NUMBER__SEVERITY_NUMBER_INFO;
	r->lr.severity_text = warn ? "WARN" : "INFO";
	r->lr.event_name = r->event_name;
	f = open_memstream(&r->json, &len);
	if (f) {
		pbjson__event(f, ev);
		fclose(f);
		r->body.value_case =
			OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
		r->body.string_value = r->json;
		r->lr.body = &r->body;
	}
	attr_str(r, "egret.stream_id", ev->stream_id);
	attr_int(r, "egret.seq", (int64_t)ev->seq);
	attr_str(r, "egret.event", name);
	if (ev->class_uid)
		attr_int(r, "ocsf.class_uid", ev->class_uid);
	if (ev->activity_id)
		attr_int(r, "ocsf.activity_id", ev->activity_id);
	if (ev->sandbox) {
		attr_str(r, "egret.sandbox.name", ev->sandbox->name);
		attr_int(r, "egret.sandbox.cgroup_id", (int64_t)ev->sandbox->cgroup_id);
	}
	if (ev->process) {
		attr_int(r, "process.pid", ev->process->pid);
		if (ev->process->ppid)
			attr_int(r, "process.parent_pid", ev->process->ppid);
		attr_str(r, "process.executable.name", ev->process->comm);
		attr_str(r, "process.executable.path", ev->process->exe);
		attr_int(r, "process.real_user.id", ev->process->uid);
		if (ev->process->exec_id)
			attr_int(r, "egret.exec_id", (int64_t)ev->process->exec_id);
	}
	payload_attrs(r);
	r->lr.n_attributes = r->n;
	r->lr.attributes = r->kvp;
}

static int gzip(const uint8_t *in, size_t n, uint8_t **out, size_t *outlen)
{
	z_stream z = { 0 };
	size_t cap;

	if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	cap = deflateBound(&z, n) + 64;
	*out = malloc(cap);
	if (!*out) {
		deflateEnd(&z);
		return -ENOMEM;
	}
	z.next_in = (Bytef *)in;
	z.avail_in = (uInt)n;
	z.next_out = *out;
	z.avail_out = (uInt)cap;
	if (deflate(&z, Z_FINISH) != Z_STREAM_END) {
		deflateEnd(&z);
		free(*out);
		*out = NULL;
		return -EIO;
	}
	*outlen = z.total_out;
	deflateEnd(&z);
	return 0;
}

int otlp__encode(const uint8_t *raw, size_t n, uint8_t **out, size_t *outlen, size_t *records,
		 uint64_t *first_seq, uint64_t *last_seq, char stream_id[33])
{
	Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceRequest req =
		OPENTELEMETRY__PROTO__COLLECTOR__LOGS__V1__EXPORT_LOGS_SERVICE_REQUEST__INIT;
	Opentelemetry__Proto__Logs__V1__ResourceLogs
		rl = OPENTELEMETRY__PROTO__LOGS__V1__RESOURCE_LOGS__INIT,
		*rlp = &rl;
	Opentelemetry__Proto__Logs__V1__ScopeLogs
		sl = OPENTELEMETRY__PROTO__LOGS__V1__SCOPE_LOGS__INIT,
		*slp = &sl;
	Opentelemetry__Proto__Resource__V1__Resource res =
		OPENTELEMETRY__PROTO__RESOURCE__V1__RESOURCE__INIT;
	Opentelemetry__Proto__Common__V1__InstrumentationScope scope =
		OPENTELEMETRY__PROTO__COMMON__V1__INSTRUMENTATION_SCOPE__INIT;
	struct rec resattr = { 0 }, *recs;
	LogRecord **lrp;
	size_t total, msg, off = 0, nrec = 0, max = n / 2 + 1, packed;
	uint64_t now = now_ns(CLOCK_REALTIME);
	uint8_t *pb = NULL;
	int err = 0;

	recs = calloc(max, sizeof(*recs));
	lrp = calloc(max, sizeof(*lrp));
	if (!recs || !lrp) {
		err = -ENOMEM;
		goto out;
	}
	*first_seq = *last_seq = 0;
	stream_id[0] = '\0';
	while (off < n && wire__frame(raw + off, n - off, &total, &msg) == 1) {
		struct rec *r = &recs[nrec];

		r->ev = egret__v1__event__unpack(NULL, total - msg, raw + off + msg);
		off += total;
		if (!r->ev)
			continue;
		/* protobuf requires valid UTF-8 in string fields; kernel bytes need not be */
		if (pbjson__make_utf8(&r->ev->base)) {
			egret__v1__event__free_unpacked(r->ev, NULL);
			err = -ENOMEM;
			goto out;
		}
		to_log_record(r, now);
		lrp[nrec++] = &r->lr;
		if (!*first_seq) {
			*first_seq = r->ev->seq;
			snprintf(stream_id, 33, "%s", r->ev->stream_id);
		}
		*last_seq = r->ev->seq;
	}
	*records = nrec;
	attr_str(&resattr, "service.name", "egret");
	attr_str(&resattr, "service.version", EGRET_VERSION);
	if (nrec)
		attr_str(&resattr, "host.name", recs[0].ev->host);
	res.n_attributes = resattr.n;
	res.attributes = resattr.kvp;
	scope.name = "egret";
	scope.version = EGRET_VERSION;
	sl.scope = &scope;
	sl.n_log_records = nrec;
	sl.log_records = lrp;
	rl.resource = &res;
	rl.n_scope_logs = 1;
	rl.scope_logs = &slp;
	req.n_resource_logs = 1;
	req.resource_logs = &rlp;
	packed =
		opentelemetry__proto__collector__logs__v1__export_logs_service_request__get_packed_size(
			&req);
	pb = malloc(packed ? packed : 1);
	if (!pb) {
		err = -ENOMEM;
		goto out;
	}
	opentelemetry__proto__collector__logs__v1__export_logs_service_request__pack(&req, pb);
	err = gzip(pb, packed, out, outlen);
out:
	for (size_t i = 0; recs && i < nrec; i++) {
		free(recs[i].json);
		free(recs[i].cmdline);
		egret__v1__event__free_unpacked(recs[i].ev, NULL);
	}
	free(pb);
	free(recs);
	free(lrp);
	return err;
}

/* ---- the exchange ---------------------------------------------------------------------------- */

/* The next batch from the spool as a whole HTTP request; false when there is none. */
static bool build_request(struct sink *s, struct otlp *o)
{
	struct spool_pos pos = s->acked;
	uint8_t *body = NULL;
	size_t count, blen = 0, hlen;
	ssize_t n;
	char hdr[1024];

	n = spool__read(s->spool, &pos, s->buf, OTLP_BATCH_BYTES, OTLP_BATCH_RECORDS, &count);
	if (n <= 0) {
		if (n < 0)
			sink__set_error(s, (int)n, "reading the spool: %s", strerror((int)-n));
		return false;
	}
	if (otlp__encode(s->buf, (size_t)n, &body, &blen, &o->records, &o->first_seq, &o->last_seq,
			 o->stream_id)) {
		sink__set_error(s, -ENOMEM, "cannot encode a batch");
		return false;
	}
	/* acked may have been normalized past a finished segment */
	s->acked.seg = pos.seg;
	s->acked.off = pos.off;
	pos.off += (uint64_t)n;
	o->batch_end = pos;
	hlen = (size_t)snprintf(hdr, sizeof(hdr),
				"POST %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: egret/%s\r\n"
				"Content-Type: application/x-protobuf\r\nContent-Encoding: gzip\r\n"
				"Content-Length: %zu\r\n\r\n",
				s->path, s->host, s->port, EGRET_VERSION, blen);
	o->req = malloc(hlen + blen);
	if (!o->req) {
		free(body);
		return false;
	}
	memcpy(o->req, hdr, hlen);
	memcpy(o->req + hlen, body, blen);
	free(body);
	o->req_len = hlen + blen;
	o->req_off = 0;
	return true;
}

static void drop_request(struct otlp *o)
{
	free(o->req);
	o->req = NULL;
	o->req_len = o->req_off = 0;
	o->resp_len = 0;
	o->state = OTLP_IDLE;
}

/* The connection broke: the request is sent again, on a new one, after the backoff. */
static void conn_failed(struct sink *s, struct otlp *o, int err, const char *what)
{
	o->state = OTLP_IDLE;
	o->resp_len = 0;
	o->req_off = 0;
	sink__down(s, err, what);
}

static void batch_done(struct sink *s, struct otlp *o, bool delivered)
{
	s->acked = s->next = o->batch_end;
	if (delivered)
		s->delivered += o->records;
	drop_request(o);
}

static void report_rejected(struct sink *s, struct otlp *o, uint64_t count, const char *why)
{
	struct sink_loss l = { .count = count, .first_seq = o->first_seq, .last_seq = o->last_seq };

	snprintf(l.stream_id, sizeof(l.stream_id), "%s", o->stream_id);
	snprintf(l.detail, sizeof(l.detail), "%s", why);
	log_err("sink %s: %s", s->uri, why);
	if (s->on_loss)
		s->on_loss(s->loss_ctx, s, &l);
}

static void handle_response(struct sink *s, struct otlp *o, const struct http_response *r)
{
	char why[256];

	if (r->status >= 200 && r->status < 300) {
		Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceResponse *resp = NULL;

		if (r->body_len && strstr(r->content_type, "protobuf"))
			resp = opentelemetry__proto__collector__logs__v1__export_logs_service_response__unpack(
				NULL, r->body_len, (uint8_t *)o->resp + r->body_off);
		if (resp && resp->partial_success &&
		    resp->partial_success->rejected_log_records > 0) {
			snprintf(why, sizeof(why), "the receiver rejected %lld of %zu records: %s",
				 (long long)resp->partial_success->rejected_log_records, o->records,
				 resp->partial_success->error_message);
			report_rejected(s, o, (uint64_t)resp->partial_success->rejected_log_records,
					why);
		}
		if (resp)
			opentelemetry__proto__collector__logs__v1__export_logs_service_response__free_unpacked(
				resp, NULL);
		batch_done(s, o, true);
		s->backoff_ms = 0;
		sink__clear_error(s);
	} else if (r->status == 429 || r->status == 502 || r->status == 503 || r->status == 504) {
		long wait = http__retry_after(r->retry_after, time(NULL));
		unsigned int ms;

		if (wait > OTLP_RETRY_MAX_S)
			wait = OTLP_RETRY_MAX_S;
		s->backoff_ms = sink__backoff_next(s->backoff_ms);
		ms = wait >= 0 ? (unsigned int)wait * 1000 : s->backoff_ms;
		s->retry_at_ns = now_ns(CLOCK_MONOTONIC) + ms * 1000000ull;
		o->retries++;
		o->state = OTLP_IDLE;
		o->req_off = 0;
		o->resp_len = 0;
		sink__set_error(s, -EAGAIN, "HTTP %d%s%s; sending again in %u ms", r->status,
				r->retry_after[0] ? ", Retry-After " : "", r->retry_after, ms);
	} else {
		snprintf(why, sizeof(why), "HTTP %d for %zu records (seq %llu-%llu): %.*s",
			 r->status, o->records, (unsigned long long)o->first_seq,
			 (unsigned long long)o->last_seq,
			 (int)(r->body_len < 120 ? r->body_len : 120), o->resp + r->body_off);
		report_rejected(s, o, o->records, why);
		batch_done(s, o, false);
	}
	if (r->close)
		sink__disconnect(s); /* the receiver ends the connection: a new one next time */
}

/* Read what the receiver said; false when the connection is gone. */
static bool read_response(struct sink *s, struct otlp *o)
{
	struct http_response r;
	bool eof = false;
	int rc;

	for (;;) {
		ssize_t n;

		if (o->resp_len == HTTP_MAX_RESPONSE) {
			conn_failed(s, o, -EMSGSIZE, "response too large");
			return false;
		}
		n = recv(s->fd, o->resp + o->resp_len, HTTP_MAX_RESPONSE - o->resp_len,
			 MSG_DONTWAIT);
		if (n > 0) {
			o->resp_len += (size_t)n;
			continue;
		}
		if (n == 0)
			eof = true;
		else if (errno != EAGAIN && errno != EINTR) {
			conn_failed(s, o, -errno, "read");
			return false;
		}
		break;
	}
	rc = http__parse_response(o->resp, o->resp_len, eof, &r);
	if (rc < 0) {
		conn_failed(s, o, -EBADMSG, "the receiver's answer is not HTTP");
		return false;
	}
	if (rc == 0) {
		if (eof) {
			conn_failed(s, o, -ECONNRESET, "the receiver closed the connection");
			return false;
		}
		if (now_ns(CLOCK_MONOTONIC) - o->sent_ns > OTLP_TIMEOUT_NS) {
			conn_failed(s, o, -ETIMEDOUT, "no answer");
			return false;
		}
		return true;
	}
	o->state = OTLP_IDLE;
	if (eof)
		r.close = true;
	handle_response(s, o, &r);
	return true;
}

static void otlp_pump(struct sink *s)
{
	struct otlp *o = s->otlp;

	for (int round = 0; round < 64; round++) {
		if (o->state == OTLP_IDLE) {
			if (now_ns(CLOCK_MONOTONIC) < s->retry_at_ns)
				return;
			if (!o->req && !build_request(s, o))
				return;
			if (!s->up && !s->connecting && sink__connect(s))
				return;
			if (s->connecting) {
				if (now_ns(CLOCK_MONOTONIC) - s->connect_started_ns >
				    OTLP_TIMEOUT_NS / 3)
					conn_failed(s, o, -ETIMEDOUT, "connect");
				return;
			}
			o->state = OTLP_SENDING;
			o->req_off = 0;
			o->resp_len = 0;
			o->requests++;
		}
		if (o->state == OTLP_SENDING) {
			while (o->req_off < o->req_len) {
				ssize_t n =
					send(s->fd, o->req + o->req_off, o->req_len - o->req_off,
					     MSG_NOSIGNAL | MSG_DONTWAIT);

				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0 && errno == EAGAIN) {
					sink__watch(s, EPOLLOUT);
					return;
				}
				if (n < 0) {
					conn_failed(s, o, -errno, "send");
					return;
				}
				o->req_off += (size_t)n;
			}
			o->state = OTLP_WAITING;
			o->sent_ns = now_ns(CLOCK_MONOTONIC);
			sink__watch(s, EPOLLIN);
		}
		if (o->state == OTLP_WAITING) {
			if (!read_response(s, o) || o->state == OTLP_WAITING)
				return;
		}
	}
}

static void on_otlp_io(struct watch *w, uint32_t events)
{
	struct sink *s = w->data;

	(void)events;
	if (s->connecting) {
		int soerr = 0;
		socklen_t l = sizeof(soerr);

		s->connecting = false;
		if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &soerr, &l) || soerr) {
			conn_failed(s, s->otlp, -(soerr ? soerr : errno), "connect");
			return;
		}
		s->up = true;
	}
	otlp_pump(s);
}

static int otlp_start(struct sink *s)
{
	s->otlp = calloc(1, sizeof(*s->otlp));
	if (!s->otlp)
		return -ENOMEM;
	s->otlp->resp = malloc(HTTP_MAX_RESPONSE + 1);
	if (!s->otlp->resp) {
		free(s->otlp);
		s->otlp = NULL;
		return -ENOMEM;
	}
	s->w.fn = on_otlp_io;
	return 0;
}

static void otlp_reset(struct sink *s)
{
	if (s->otlp)
		drop_request(s->otlp);
}

static void otlp_close(struct sink *s)
{
	if (!s->otlp)
		return;
	free(s->otlp->req);
	free(s->otlp->resp);
	free(s->otlp);
	s->otlp = NULL;
}

const struct sink_ops otlp_sink_ops = {
	.start = otlp_start, .pump = otlp_pump, .reset = otlp_reset, .close = otlp_close
};
