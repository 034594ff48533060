/* Events into the otlp+http sink's request (otlp.h): each Event becomes a LogRecord with its
 * time, severity (WARN for denials, tamper attempts, losses and limits, INFO otherwise),
 * event_name "egret.<payload>", the whole event as JSON in the body, and its key fields as
 * attributes (OCSF class, sandbox, process, verdict, destination...) so a SIEM can search
 * without parsing the body. Every string is made valid UTF-8 first (what is not becomes
 * U+FFFD): protobuf requires it of string fields, and a collector refuses the whole request
 * otherwise.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zlib.h>

#include "egret/v1/events.pb-c.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "otlp.h"
#include "pbjson.h"
#include "util.h"
#include "wire.h"

typedef Opentelemetry__Proto__Common__V1__AnyValue AnyValue;
typedef Opentelemetry__Proto__Common__V1__KeyValue KeyValue;
typedef Opentelemetry__Proto__Logs__V1__LogRecord LogRecord;

#define MAX_ATTRS  44
#define MAX_LABELS 8 /* container.label.KEY attributes of one record */

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
	/* the container's: its image name without the tag, the tags array, label keys */
	char image[512];
	Opentelemetry__Proto__Common__V1__ArrayValue tags;
	AnyValue tag;
	AnyValue *tagp;
	char label_key[MAX_LABELS][96];
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

/* OpenTelemetry's container.* and k8s.* resource conventions, for a container sandbox. */
static void attr_container(struct rec *r, const Egret__V1__Container *c)
{
	const char *tag = c->image ? c->image->tag : "";
	unsigned int nl = 0;
	AnyValue *a;

	attr_str(r, "container.id", c->uid);
	attr_str(r, "container.name", c->name);
	attr_str(r, "container.runtime.name", c->runtime);
	if (c->image && c->image->name[0]) {
		size_t len = strlen(c->image->name), tl = strlen(tag);

		/* the name without ":TAG", the tag as container.image.tags */
		if (tl && len > tl + 1 && c->image->name[len - tl - 1] == ':')
			len -= tl + 1;
		snprintf(r->image, sizeof(r->image), "%.*s", (int)len, c->image->name);
		attr_str(r, "container.image.name", r->image);
		if (tl && (a = attr(r, "container.image.tags"))) {
			opentelemetry__proto__common__v1__array_value__init(&r->tags);
			opentelemetry__proto__common__v1__any_value__init(&r->tag);
			r->tag.value_case =
				OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE;
			r->tag.string_value = (char *)tag;
			r->tagp = &r->tag;
			r->tags.n_values = 1;
			r->tags.values = &r->tagp;
			a->value_case =
				OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE;
			a->array_value = &r->tags;
		}
	}
	if (c->orchestrator[0]) {
		attr_str(r, "k8s.pod.name", c->pod_name);
		attr_str(r, "k8s.namespace.name", c->namespace_);
		attr_str(r, "k8s.pod.uid", c->pod_uuid);
		attr_str(r, "k8s.container.name", c->name);
	}
	for (size_t i = 0; i < c->n_labels && nl < MAX_LABELS; i++) {
		const char *eq = strchr(c->labels[i], '=');

		if (!eq)
			continue;
		snprintf(r->label_key[nl], sizeof(r->label_key[nl]), "container.label.%.*s",
			 (int)(eq - c->labels[i]), c->labels[i]);
		attr_str(r, r->label_key[nl++], eq + 1);
	}
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

static void net_connect_attrs(struct rec *r, const Egret__V1__NetConnect *c)
{
	attr_enum(r, "egret.verdict", &egret__v1__net_connect__verdict__descriptor, c->verdict);
	attr_enum(r, "egret.reason", &egret__v1__net_connect__reason__descriptor, c->reason);
	attr_enum(r, "egret.hook", &egret__v1__net_connect__hook__descriptor, c->hook);
	attr_str(r, "destination.address", c->dst_addr);
	if (c->dst_port)
		attr_int(r, "destination.port", c->dst_port);
	attr_str(r, "network.transport", c->protocol);
	if (c->rule_id)
		attr_int(r, "egret.rule_id", c->rule_id);
	attr_str(r, "egret.rule", c->rule);
	/* a device's packet: OpenTelemetry's network.interface.name, and its source */
	attr_str(r, "network.interface.name", c->interface);
	attr_str(r, "source.address", c->src_addr);
	if (c->src_port)
		attr_int(r, "source.port", c->src_port);
}

static void exec_attrs(struct rec *r, const Egret__V1__ProcessExec *x)
{
	size_t len = 0;
	FILE *f = open_memstream(&r->cmdline, &len);

	for (size_t i = 0; f && i < x->n_args; i++)
		fprintf(f, "%s%s", i ? " " : "", x->args[i]);
	if (f)
		fclose(f);
	attr_str(r, "process.command_line", r->cmdline);
	attr_str(r, "process.working_directory", x->cwd);
}

static void flow_attrs(struct rec *r, const Egret__V1__NetFlow *fl)
{
	attr_str(r, "network.transport", fl->protocol);
	attr_str(r, "source.address", fl->src_addr);
	attr_int(r, "source.port", fl->src_port);
	attr_str(r, "destination.address", fl->dst_addr);
	attr_int(r, "destination.port", fl->dst_port);
	attr_int(r, "egret.flow.bytes_out", (int64_t)fl->bytes_out);
	attr_int(r, "egret.flow.bytes_in", (int64_t)fl->bytes_in);
}

static void payload_attrs(struct rec *r)
{
	const Egret__V1__Event *ev = r->ev;

	switch (ev->payload_case) {
	case EGRET__V1__EVENT__PAYLOAD_NET_CONNECT:
		net_connect_attrs(r, ev->net_connect);
		break;
	case EGRET__V1__EVENT__PAYLOAD_DNS_QUERY:
		attr_str(r, "dns.question.name", ev->dns_query->name);
		attr_str(r, "dns.question.type", ev->dns_query->type);
		attr_str(r, "dns.response_code", ev->dns_query->rcode);
		attr_bool(r, "egret.dns.allowed", ev->dns_query->allowed);
		break;
	case EGRET__V1__EVENT__PAYLOAD_EXEC:
		exec_attrs(r, ev->exec);
		break;
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
		flow_attrs(r, ev->flow);
		break;
	case EGRET__V1__EVENT__PAYLOAD_TAMPER:
		attr_enum(r, "egret.tamper.kind", &egret__v1__tamper__kind__descriptor,
			  ev->tamper->kind);
		break;
	case EGRET__V1__EVENT__PAYLOAD_LOSS:
		attr_enum(r, "egret.loss.source", &egret__v1__loss__source__descriptor,
			  ev->loss->source);
		attr_int(r, "egret.loss.count", (int64_t)ev->loss->count);
		if (ev->loss->itemized_case == EGRET__V1__LOSS__ITEMIZED_RECORD_KIND)
			attr_enum(r, "egret.loss.record_kind",
				  &egret__v1__loss__record_kind__descriptor, ev->loss->record_kind);
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
		if (ev->sandbox->container)
			attr_container(r, ev->sandbox->container);
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
		if (ev->process->lost_case == EGRET__V1__PROCESS__LOST_EXEC_LOST &&
		    ev->process->exec_lost)
			attr_bool(r, "egret.exec_lost", true);
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

/* The Events framed in raw[0, n) as log records into recs and lrp (each of at least n / 2 + 1):
 * how many into *nrec (what is no Event skipped), their seq range and stream id.
 */
static int decode_records(const uint8_t *raw, size_t n, struct rec *recs, LogRecord **lrp,
			  size_t *nrec, uint64_t *first_seq, uint64_t *last_seq, char stream_id[33])
{
	uint64_t now = now_ns(CLOCK_REALTIME);
	size_t total, msg, off = 0;

	*first_seq = *last_seq = 0;
	stream_id[0] = '\0';
	while (off < n && wire__frame(raw + off, n - off, &total, &msg) == 1) {
		struct rec *r = &recs[*nrec];

		r->ev = egret__v1__event__unpack(NULL, total - msg, raw + off + msg);
		off += total;
		if (!r->ev)
			continue;
		/* protobuf requires valid UTF-8 in string fields; kernel bytes need not be */
		if (pbjson__make_utf8(&r->ev->base)) {
			egret__v1__event__free_unpacked(r->ev, NULL);
			r->ev = NULL;
			return -ENOMEM;
		}
		to_log_record(r, now);
		lrp[(*nrec)++] = &r->lr;
		if (!*first_seq) {
			*first_seq = r->ev->seq;
			snprintf(stream_id, 33, "%s", r->ev->stream_id);
		}
		*last_seq = r->ev->seq;
	}
	return 0;
}

/* One ExportLogsServiceRequest of the nrec records (egret's resource and scope), gzipped. */
static int pack_request(const struct rec *recs, LogRecord **lrp, size_t nrec, uint8_t **out,
			size_t *outlen)
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
	struct rec resattr = { 0 };
	size_t packed;
	uint8_t *pb;
	int err;

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
	if (!pb)
		return -ENOMEM;
	opentelemetry__proto__collector__logs__v1__export_logs_service_request__pack(&req, pb);
	err = gzip(pb, packed, out, outlen);
	free(pb);
	return err;
}

int otlp__encode(const uint8_t *raw, size_t n, uint8_t **out, size_t *outlen, size_t *records,
		 uint64_t *first_seq, uint64_t *last_seq, char stream_id[33])
{
	size_t nrec = 0, max = n / 2 + 1;
	struct rec *recs;
	LogRecord **lrp;
	int err = -ENOMEM;

	recs = calloc(max, sizeof(*recs));
	if (!recs)
		return -ENOMEM;
	lrp = calloc(max, sizeof(*lrp));
	if (!lrp)
		goto out_recs;
	err = decode_records(raw, n, recs, lrp, &nrec, first_seq, last_seq, stream_id);
	if (err)
		goto out_lrp;
	*records = nrec;
	err = pack_request(recs, lrp, nrec, out, outlen);
out_lrp:
	free(lrp);
out_recs:
	for (size_t i = 0; i < nrec; i++) {
		free(recs[i].json);
		free(recs[i].cmdline);
		egret__v1__event__free_unpacked(recs[i].ev, NULL);
	}
	free(recs);
	return err;
}
