/* Ring buffers -> Event. Each record type has a decoder, registered with collector__register,
 * that fills the payload; the envelope (time, sandbox, process) comes from the common record
 * header. The losses the kernel counted become Loss events in losses.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "collector.h"
#include "control.h"
#include "egret/egress.h"
#include "egret/policy.h"
#include "loader.h"
#include "log.h"
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
	c->counters_fd = c->losses_fd = c->reported_fd = -1;
	c->rings.epfd = -1;
	c->ctx.names = names;
	return flow_starts__init(&c->ctx.flows);
}

static int add_ring(struct collector *c, int fd, const char *name)
{
	int err = rings__add(&c->rings, fd);

	if (err)
		log_err("failed to open the %s ring buffer: %s", name, strerror(-err));
	return err;
}

int collector__init(struct collector *c, struct stream *s, struct sandbox_names *names,
		    const struct loader_maps *maps)
{
	int err = collector__init_offline(c, s, names);

	if (err)
		return err;
	c->counters_fd = maps->counters;
	c->losses_fd = maps->losses;
	c->reported_fd = maps->losses_reported;
	err = rings__init(&c->rings, on_record, c);
	if (err) {
		log_err("failed to make an epoll instance: %s", strerror(-err));
		return err;
	}
	c->have_rings = true;
	err = add_ring(c, maps->events, LOADER_MAP_NAME(events));
	if (!err)
		err = add_ring(c, maps->bulk_events, LOADER_MAP_NAME(bulk_events));
	return err;
}

int collector__fd(const struct collector *c)
{
	return rings__fd(&c->rings);
}

/* Drain what the rings hold now, in time order; returns the number of records or -errno. */
int collector__poll(struct collector *c)
{
	return c->have_rings ? rings__consume(&c->rings) : 0;
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

void decoder__emit_env(struct decoder_ctx *d, Egret__V1__Event *ev, const struct env_block *env)
{
	stream__emit(of_ctx(d)->stream, ev);
	if (d->hooks.observe)
		d->hooks.observe(d->hooks.ctx, ev, env);
}

void decoder__emit(struct decoder_ctx *d, Egret__V1__Event *ev)
{
	decoder__emit_env(d, ev, NULL);
}

void decoder__bad_record(struct decoder_ctx *d, __u32 type, size_t size)
{
	bad_record(of_ctx(d), type, size);
}

void decoder__drain(struct decoder_ctx *d)
{
	collector__poll(of_ctx(d));
}

int decoder__named_sandbox(struct decoder_ctx *d, struct control_req *r, const char *name,
			   struct egret_event_hdr *h)
{
	char dir[8192];
	struct stat st;

	snprintf(dir, sizeof(dir), "%s/%s", d->names->root, name);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		control__err(r, "no sandbox %s\n", name);
		return -ENOENT;
	}
	decoder__drain(d);
	h->ts_ns = now_ns(CLOCK_BOOTTIME);
	h->sandbox_id = st.st_ino;
	return 0;
}

/* The process's image from the cache; none, and not its parent's, when the kernel says the
 * record of its exec was lost (or the cache says so since).
 */
static void envelope_process(struct decoder_ctx *d, const struct egret_event_hdr *h,
			     struct envelope *e)
{
	const struct proc_info *pi = NULL;

	if (d->procs && (h->flags & EGRET_HDR_EXEC_LOST))
		pi = proc_cache__exec_lost(d->procs, h->pid);
	else if (d->procs)
		pi = proc_cache__get(d->procs, h->pid);
	if (pi) {
		e->process.exe = (char *)pi->exe;
		e->process.exec_id = pi->exec_id;
		e->process.parent_exec_id = pi->parent_exec_id;
		e->process.ppid = pi->ppid;
		e->process.euid = pi->euid;
	}
	if ((h->flags & EGRET_HDR_EXEC_LOST) || (pi && pi->exec_lost)) {
		e->process.lost_case = EGRET__V1__PROCESS__LOST_EXEC_LOST;
		e->process.exec_lost = true;
	}
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
	envelope_process(d, h, e);
}

void collector__free(struct collector *c)
{
	if (c->have_rings)
		rings__free(&c->rings);
	c->have_rings = false;
	flow_starts__free(&c->ctx.flows);
}

/* The counters map as a small table: per hook, allowed / denied / audited; then the totals of
 * loss and tamper. Used by egretd's status and by egretctl when egretd is down.
 */
static const char *const hook_names[] = EGRET_HOOK_NAMES;
static const char *const verdict_names[] = EGRET_VERDICT_NAMES;
_Static_assert(ARRAY_SIZE(hook_names) == EGRET_HOOK_MAX, "a name for every hook");
_Static_assert(ARRAY_SIZE(verdict_names) == EGRET_VERDICT_AUDIT + 1, "a name for every verdict");

/* the totals after the verdicts, in this order (collector__format_counters prints them) */
static const struct {
	const char *name;
	__u32 idx;
} totals[] = {
	{ "ringbuf_drops", EGRET_CNT_RINGBUF_DROPS },
	{ "tamper_attempts", EGRET_CNT_TAMPER },
	{ "bulk_ringbuf_drops", EGRET_CNT_BULK_DROPS },
	{ "file_budget_drops", EGRET_CNT_BUDGET_DROPS },
	{ "exec_records_lost", EGRET_CNT_EXEC_LOST },
	{ "exec_lost_unmarked", EGRET_CNT_EXEC_UNMARKED },
};

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
	for (size_t i = 0; i < ARRAY_SIZE(totals) && n < max; i++, n++) {
		snprintf(out[n].name, sizeof(out[n].name), "%s", totals[i].name);
		out[n].value = 0;
		collector__counter(counters_fd, totals[i].idx, &out[n].value);
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
	if (used < size && n == hooks + ARRAY_SIZE(totals))
		snprintf(buf + used, size - used,
			 "ring buffer drops %llu (file ring %llu), file records over budget %llu, "
			 "tamper attempts %llu\n"
			 "exec records lost %llu (processes marked exec-lost; %llu not marked)\n",
			 (unsigned long long)v[hooks].value, (unsigned long long)v[hooks + 2].value,
			 (unsigned long long)v[hooks + 3].value,
			 (unsigned long long)v[hooks + 1].value,
			 (unsigned long long)v[hooks + 4].value,
			 (unsigned long long)v[hooks + 5].value);
}
