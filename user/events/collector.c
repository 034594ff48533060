/* Ring buffer -> Event. Each record type has a decoder, registered with collector__register,
 * that fills the payload; the envelope (time, sandbox, process) comes from the common record
 * header.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "collector.h"
#include "egret/egress.h"
#include "egret/policy.h"
#include "log.h"
#include "selfwatch.h"
#include "util.h"

int collector__register(struct collector *c, __u32 type, size_t size, decoder_fn decode)
{
	for (size_t i = 0; i < c->n_decoders; i++)
		if (c->decoders[i].type == type)
			return -EEXIST;
	if (c->n_decoders == ARRAY_SIZE(c->decoders))
		return -ENOSPC;
	c->decoders[c->n_decoders++] = (struct record_decoder){ type, size, decode };
	return 0;
}

static struct collector *of_ctx(struct decoder_ctx *d)
{
	return (struct collector *)((char *)d - offsetof(struct collector, ctx));
}

static void bad_record(struct collector *c, __u32 type, size_t size)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Loss loss = EGRET__V1__LOSS__INIT;
	char detail[96];

	c->bad_records++;
	snprintf(detail, sizeof(detail), "kernel record of type %u and %zu bytes not decodable",
		 type, size);
	loss.source = EGRET__V1__LOSS__SOURCE__SOURCE_DECODE;
	loss.count = 1;
	loss.detail = detail;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_LOSS;
	ev.loss = &loss;
	stream__emit(c->stream, &ev);
}

void collector__record(struct collector *c, const void *data, size_t size)
{
	const struct egret_event_hdr *h = data;

	if (size >= sizeof(*h)) {
		for (size_t i = 0; i < c->n_decoders; i++) {
			if (c->decoders[i].type != h->type || size < c->decoders[i].size)
				continue;
			c->decoders[i].decode(&c->ctx, data, size);
			c->records++;
			return;
		}
	}
	bad_record(c, size >= sizeof(*h) ? h->type : 0, size);
}

static int on_record(void *ctx, void *data, size_t size)
{
	collector__record(ctx, data, size);
	return 0;
}

int collector__init_offline(struct collector *c, struct stream *s, struct sandbox_names *names)
{
	memset(c, 0, sizeof(*c));
	c->stream = s;
	c->counters_fd = -1;
	c->ctx.names = names;
	return 0;
}

int collector__init(struct collector *c, struct stream *s, struct sandbox_names *names,
		    int events_fd, int counters_fd)
{
	int err = collector__init_offline(c, s, names);

	if (err)
		return err;
	c->counters_fd = counters_fd;
	c->rb = ring_buffer__new(events_fd, on_record, c, NULL);
	if (!c->rb) {
		err = -errno;
		log_err("failed to open the events ring buffer: %s", strerror(errno));
		return err;
	}
	return 0;
}

int collector__fd(const struct collector *c)
{
	return ring_buffer__epoll_fd(c->rb);
}

/* Drain what the ring holds now; returns the number of records or -errno. */
int collector__poll(struct collector *c)
{
	return ring_buffer__consume(c->rb);
}

/* Sum of a per-CPU counter. */
int collector__counter(int counters_fd, __u32 idx, uint64_t *sum)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t vals[ncpu > 0 ? ncpu : 1];

	if (ncpu <= 0)
		return ncpu ? ncpu : -EINVAL;
	if (bpf_map_lookup_elem(counters_fd, &idx, vals))
		return -errno;
	*sum = 0;
	for (int i = 0; i < ncpu; i++)
		*sum += vals[i];
	return 0;
}

static int counter_store(int counters_fd, __u32 idx, uint64_t v)
{
	int ncpu = libbpf_num_possible_cpus();
	uint64_t vals[ncpu > 0 ? ncpu : 1];

	if (ncpu <= 0)
		return -EINVAL;
	memset(vals, 0, sizeof(vals));
	vals[0] = v;
	return bpf_map_update_elem(counters_fd, &idx, vals, BPF_ANY) ? -errno : 0;
}

/* Ring buffer drops not yet reported, now counted as reported. The reported total lives in the
 * pinned counters map, so drops while egretd was down are reported by the next egretd.
 */
uint64_t collector__take_drops(struct collector *c)
{
	uint64_t drops = 0, reported = 0;

	if (collector__counter(c->counters_fd, EGRET_CNT_RINGBUF_DROPS, &drops) ||
	    collector__counter(c->counters_fd, EGRET_CNT_DROPS_REPORTED, &reported) ||
	    drops <= reported)
		return 0;
	counter_store(c->counters_fd, EGRET_CNT_DROPS_REPORTED, drops);
	return drops - reported;
}

static void emit_loss(struct collector *c, Egret__V1__Loss *loss)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;

	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_LOSS;
	ev.loss = loss;
	stream__emit(c->stream, &ev);
}

/* Ring buffer drops not yet reported become one Loss event. */
void collector__check_drops(struct collector *c)
{
	Egret__V1__Loss loss = EGRET__V1__LOSS__INIT;
	uint64_t lost = collector__take_drops(c);
	char detail[96];

	if (!lost)
		return;
	snprintf(detail, sizeof(detail), "events ring buffer full: %llu kernel records lost",
		 (unsigned long long)lost);
	loss.source = EGRET__V1__LOSS__SOURCE__SOURCE_RINGBUF;
	loss.count = lost;
	loss.detail = detail;
	emit_loss(c, &loss);
	log_warn("%s", detail);
}

/* A time egretd was not draining the ring: one Loss event carrying the drops not yet reported,
 * which fall in it (the last check before it was at most a second earlier). What the ring kept
 * is not lost: it is in the stream, with the time each record was made.
 */
void collector__report_gap(struct collector *c, uint64_t start_unix_ns, uint64_t duration_ns,
			   bool rebooted, const char *cause)
{
	Egret__V1__Loss loss = EGRET__V1__LOSS__INIT;
	uint64_t lost = collector__take_drops(c);
	char detail[SELFWATCH_CAUSE_LEN + 128];

	if (rebooted)
		snprintf(detail, sizeof(detail), "%s", cause);
	else if (lost)
		snprintf(detail, sizeof(detail),
			 "%s; %llu kernel records lost (the ring was full; what it kept is in the "
			 "stream)",
			 cause, (unsigned long long)lost);
	else
		snprintf(detail, sizeof(detail),
			 "%s; no kernel record lost (the ring kept them: they are in the stream)",
			 cause);
	loss.source = EGRET__V1__LOSS__SOURCE__SOURCE_AGENT_GAP;
	loss.count = lost;
	loss.detail = detail;
	loss.gap_ns = duration_ns;
	loss.gap_start_unix_nano = start_unix_ns;
	emit_loss(c, &loss);
	log_warn("%s", detail);
}

void decoder__emit(struct decoder_ctx *d, Egret__V1__Event *ev)
{
	stream__emit(of_ctx(d)->stream, ev);
	if (d->hooks.observe)
		d->hooks.observe(d->hooks.ctx, ev);
}

void decoder__bad_record(struct decoder_ctx *d, __u32 type, size_t size)
{
	bad_record(of_ctx(d), type, size);
}

void decoder__drain(struct decoder_ctx *d)
{
	struct collector *c = of_ctx(d);

	if (c->rb)
		collector__poll(c);
}

void decoder__envelope(struct decoder_ctx *d, const struct egret_event_hdr *h, struct envelope *e)
{
	struct collector *c = of_ctx(d);
	const char *name;

	const struct sandbox_entry *sb;

	*e = (struct envelope){ .ev = EGRET__V1__EVENT__INIT, .process = EGRET__V1__PROCESS__INIT };
	e->ev.time_unix_nano = stream__unix_ns(c->stream, h->ts_ns);
	memcpy(e->comm, h->comm, EGRET_COMM_LEN);
	e->comm[EGRET_COMM_LEN] = '\0';
	if (d->redactor) { /* a program named token=VALUE */
		char raw[EGRET_COMM_LEN + 1];

		memcpy(raw, e->comm, sizeof(raw));
		redact__string(d->redactor, raw, e->comm, sizeof(e->comm));
	}
	e->process.pid = h->pid;
	e->process.tid = h->tid;
	e->process.uid = h->uid;
	e->process.gid = h->gid;
	e->process.comm = e->comm;
	e->ev.process = &e->process;
	if (h->sandbox_id != EGRET_NO_SANDBOX) { /* the host's own (audit scope host): none */
		name = sandbox_names__lookup(d->names, h->sandbox_id);
		sb = h->sandbox_id ? sandbox_names__entry(d->names, h->sandbox_id) : NULL;
		if (name)
			snprintf(e->sandbox_name, sizeof(e->sandbox_name), "%s", name);
		else
			snprintf(e->sandbox_name, sizeof(e->sandbox_name), "cgroup-%llu",
				 (unsigned long long)h->sandbox_id);
		sandbox_pb__fill(&e->sandbox, h->sandbox_id, e->sandbox_name, sb ? sb->meta : NULL);
		e->ev.sandbox = &e->sandbox.sb;
	}
	if (d->procs) {
		const struct proc_info *pi = proc_cache__get(d->procs, h->pid);

		if (pi) {
			e->process.exe = (char *)pi->exe;
			e->process.exec_id = pi->exec_id;
			e->process.parent_exec_id = pi->parent_exec_id;
			e->process.ppid = pi->ppid;
			e->process.euid = pi->euid;
		}
	}
}

void collector__free(struct collector *c)
{
	ring_buffer__free(c->rb);
	c->rb = NULL;
}

/* The counters map as a small table: per hook, allowed / denied / audited; then the totals of
 * loss and tamper. Used by egretd's status and by egretctl when egretd is down.
 */
static const char *const hook_names[] = EGRET_HOOK_NAMES;
static const char *const verdict_names[] = EGRET_VERDICT_NAMES;
_Static_assert(ARRAY_SIZE(hook_names) == EGRET_HOOK_MAX, "a name for every hook");
_Static_assert(ARRAY_SIZE(verdict_names) == EGRET_VERDICT_AUDIT + 1, "a name for every verdict");

size_t collector__counters(int counters_fd, struct counter_value *out, size_t max)
{
	size_t n = 0;

	for (__u32 h = 1; h < ARRAY_SIZE(hook_names); h++) {
		for (__u32 verdict = 1; verdict <= 3 && n < max; verdict++, n++) {
			snprintf(out[n].name, sizeof(out[n].name), "%s.%s", hook_names[h],
				 verdict_names[verdict]);
			out[n].value = 0;
			collector__counter(counters_fd, EGRET_CNT_VERDICT(h, verdict),
					   &out[n].value);
		}
	}
	if (n + 2 <= max) {
		snprintf(out[n].name, sizeof(out[n].name), "ringbuf_drops");
		collector__counter(counters_fd, EGRET_CNT_RINGBUF_DROPS, &out[n++].value);
		snprintf(out[n].name, sizeof(out[n].name), "tamper_attempts");
		collector__counter(counters_fd, EGRET_CNT_TAMPER, &out[n++].value);
	}
	return n;
}

void collector__format_counters(int counters_fd, char *buf, size_t size)
{
	struct counter_value v[COLLECTOR_COUNTERS];
	size_t n = collector__counters(counters_fd, v, COLLECTOR_COUNTERS), used = 0, hooks;

	hooks = (ARRAY_SIZE(hook_names) - 1) * 3;
	used += (size_t)snprintf(buf + used, size - used, "%-12s %10s %10s %10s\n", "hook",
				 "allowed", "denied", "audited");
	for (size_t i = 0; i + 2 < hooks && i + 2 < n && used < size; i += 3)
		used += (size_t)snprintf(buf + used, size - used, "%-12s %10llu %10llu %10llu\n",
					 hook_names[i / 3 + 1], (unsigned long long)v[i].value,
					 (unsigned long long)v[i + 1].value,
					 (unsigned long long)v[i + 2].value);
	if (used < size && n == hooks + 2)
		snprintf(buf + used, size - used, "ring buffer drops %llu, tamper attempts %llu\n",
			 (unsigned long long)v[hooks].value,
			 (unsigned long long)v[hooks + 1].value);
}
