/* What the kernel lost, as Loss events: the records a ring buffer had no room for and the file
 * records over a sandbox's budget, per sandbox and record kind. The kernel counts each loss in
 * `losses` under its (sandbox, kind), then in a total of the `counters` map; egretd reads the
 * totals first, then `losses`, and reports what each holds beyond what `losses_reported` and the
 * totals' reported counters say was reported (by this egretd or an earlier one: all pinned).
 * A loss `losses` had no room for is in a total only: it is reported without a sandbox.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "array.h"
#include "collector.h"
#include "egret/policy.h"
#include "log.h"
#include "selfwatch.h"
#include "util.h"

/* `losses` of sandboxes egretd does not know (gone), fully reported, are removed this often */
#define LOSS_CLEANUP_CHECKS 60

/* Loss.RecordKind mirrors the record types (include/egret/events.h) */
_Static_assert((int)EGRET__V1__LOSS__RECORD_KIND__RECORD_EXEC == (int)EGRET_EV_EXEC &&
		       (int)EGRET__V1__LOSS__RECORD_KIND__RECORD_FILE == (int)EGRET_EV_FILE &&
		       (int)EGRET__V1__LOSS__RECORD_KIND__RECORD_LIMIT == (int)EGRET_EV_LIMIT &&
		       (int)EGRET__V1__LOSS__RECORD_KIND__RECORD_NET_CONNECT ==
			       (int)EGRET_EV_CONNECT &&
		       (int)EGRET__V1__LOSS__RECORD_KIND__RECORD_NETNS == (int)EGRET_EV_NETNS &&
		       EGRET__V1__LOSS__RECORD_KIND__RECORD_FILE_READ == EGRET_LOSS_FILE_READ,
	       "Loss.RecordKind and enum egret_event_type in step");

/* New losses of one (sandbox, kind). */
struct loss_item {
	struct egret_loss_key key;
	uint64_t ring, budget;
};

/* What one look at the kernel's counts found not reported yet. */
struct loss_take {
	struct loss_item *items;
	size_t n, cap;
	uint64_t ring, budget;		       /* all of them, itemized or not */
	uint64_t ring_unkeyed, budget_unkeyed; /* of those, without a sandbox */
};

uint64_t collector__unkeyed(uint64_t total, uint64_t *reported, uint64_t itemized)
{
	int64_t pending = (int64_t)(total - *reported);
	uint64_t unkeyed =
		pending > 0 && (uint64_t)pending > itemized ? (uint64_t)pending - itemized : 0;

	*reported += itemized + unkeyed;
	return unkeyed;
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

static const char *kind_name(uint32_t kind)
{
	switch (kind) {
	case EGRET_EV_CONNECT:
		return "connect";
	case EGRET_EV_CGROUP:
		return "sandbox lifecycle";
	case EGRET_EV_TAMPER:
		return "tamper";
	case EGRET_EV_NETNS:
		return "network namespace";
	case EGRET_EV_EXEC:
		return "exec";
	case EGRET_EV_FORK:
		return "fork";
	case EGRET_EV_EXIT:
		return "exit";
	case EGRET_EV_FILE:
		return "file";
	case EGRET_EV_FLOW:
		return "flow";
	case EGRET_EV_LIMIT:
		return "resource limit";
	case EGRET_LOSS_FILE_READ:
		return "file read";
	}
	return NULL;
}

/* A sandbox egretd no longer knows, all of whose losses were reported: its counts go, with
 * what the kernel added since they were read (reported now, not lost).
 */
static bool forget(struct collector *c, const struct egret_loss_key *k, const struct egret_loss *r,
		   struct egret_loss *v)
{
	if (k->sandbox_id == EGRET_NO_SANDBOX || !k->sandbox_id ||
	    sandbox_names__get(c->ctx.names, k->sandbox_id))
		return false;
	if (bpf_map_lookup_and_delete_elem(c->losses_fd, k, v))
		return false;
	bpf_map_delete_elem(c->reported_fd, k);
	return v->ring != r->ring || v->budget != r->budget;
}

/* One (sandbox, kind): what it holds beyond what was reported, noted as reported. */
static void take_key(struct collector *c, const struct egret_loss_key *k, bool cleanup,
		     struct loss_take *t)
{
	struct egret_loss v, r = { 0, 0 };
	struct loss_item *it;
	bool forgotten = false;

	if (ARRAY_RESERVE(t->items, t->cap, t->n + 1))
		return; /* no memory: taken at the next look */
	if (bpf_map_lookup_elem(c->losses_fd, k, &v))
		return;
	bpf_map_lookup_elem(c->reported_fd, k, &r);
	if (v.ring == r.ring && v.budget == r.budget) {
		if (!cleanup || !forget(c, k, &r, &v))
			return;
		forgotten = true;
	}
	if (!forgotten && bpf_map_update_elem(c->reported_fd, k, &v, BPF_ANY))
		log_warn("cannot note losses as reported: %s", strerror(errno));
	it = &t->items[t->n++];
	it->key = *k;
	it->ring = v.ring > r.ring ? v.ring - r.ring : 0;
	it->budget = v.budget > r.budget ? v.budget - r.budget : 0;
	t->ring += it->ring;
	t->budget += it->budget;
}

/* One total against its reported counter: what no (sandbox, kind) count holds. */
static uint64_t take_total(struct collector *c, __u32 reported_idx, uint64_t total,
			   uint64_t itemized)
{
	uint64_t reported = 0, unkeyed;

	collector__counter(c->counters_fd, reported_idx, &reported);
	unkeyed = collector__unkeyed(total, &reported, itemized);
	counter_store(c->counters_fd, reported_idx, reported);
	return unkeyed;
}

/* The keys of `losses`, all read before any is removed (a removed key restarts a walk). */
static size_t loss_keys(int fd, struct egret_loss_key **keys)
{
	struct egret_loss_key k, prev;
	size_t n = 0, cap = 0;

	*keys = NULL;
	while (fd >= 0 && !bpf_map_get_next_key(fd, n ? &prev : NULL, &k)) {
		if (ARRAY_RESERVE(*keys, cap, n + 1))
			break; /* no memory: the rest at the next look */
		(*keys)[n++] = k;
		prev = k;
	}
	return n;
}

/* Everything not reported yet, noted as reported (before the events are made: a crash in
 * between loses their report, never doubles it).
 */
static void take_losses(struct collector *c, struct loss_take *t)
{
	bool cleanup = ++c->loss_checks % LOSS_CLEANUP_CHECKS == 0;
	uint64_t ring = 0, budget = 0;
	struct egret_loss_key *keys;
	size_t n;

	memset(t, 0, sizeof(*t));
	if (c->counters_fd < 0)
		return;
	/* the totals first: whatever they hold is in `losses` by now (events.bpf.h) */
	collector__counter(c->counters_fd, EGRET_CNT_RINGBUF_DROPS, &ring);
	collector__counter(c->counters_fd, EGRET_CNT_BUDGET_DROPS, &budget);
	n = loss_keys(c->losses_fd, &keys);
	for (size_t i = 0; i < n; i++)
		take_key(c, &keys[i], cleanup, t);
	free(keys);
	t->ring_unkeyed = take_total(c, EGRET_CNT_DROPS_REPORTED, ring, t->ring);
	t->budget_unkeyed = take_total(c, EGRET_CNT_BUDGET_REPORTED, budget, t->budget);
	t->ring += t->ring_unkeyed;
	t->budget += t->budget_unkeyed;
}

/* A Loss event about a sandbox (key) or none (key NULL): the Loss message is the caller's. */
static void emit(struct collector *c, const struct egret_loss_key *key, Egret__V1__Loss *loss)
{
	struct egret_event_hdr h = { .ts_ns = now_ns(CLOCK_BOOTTIME) };
	struct envelope e;

	h.sandbox_id = key ? key->sandbox_id : EGRET_NO_SANDBOX;
	decoder__envelope(&c->ctx, &h, &e);
	e.ev.process = NULL;
	if (key && kind_name(key->kind)) {
		loss->itemized_case = EGRET__V1__LOSS__ITEMIZED_RECORD_KIND;
		loss->record_kind = (Egret__V1__Loss__RecordKind)key->kind;
	}
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_LOSS;
	e.ev.loss = loss;
	stream__emit(c->stream, &e.ev);
}

/* "sandbox NAME" as an event of it names it, or "the host" */
static void whose(struct collector *c, uint64_t id, char *out, size_t size)
{
	const char *name = id == EGRET_NO_SANDBOX ? NULL : sandbox_names__lookup(c->ctx.names, id);

	if (id == EGRET_NO_SANDBOX)
		snprintf(out, size, "the host");
	else if (name)
		snprintf(out, size, "sandbox %s", name);
	else
		snprintf(out, size, "sandbox cgroup-%llu", (unsigned long long)id);
}

static void emit_item(struct collector *c, const struct loss_item *it, bool budget,
		      const struct selfwatch_gap *gap)
{
	Egret__V1__Loss loss = EGRET__V1__LOSS__INIT;
	const char *kind = kind_name(it->key.kind);
	char who[SANDBOX_NAME_MAX + 32], detail[SANDBOX_NAME_MAX + 160];
	uint64_t n = budget ? it->budget : it->ring;

	whose(c, it->key.sandbox_id, who, sizeof(who));
	if (budget)
		snprintf(detail, sizeof(detail),
			 "%llu %s records of %s over its file budget (--file-budget): counted, not "
			 "sent",
			 (unsigned long long)n, kind ? kind : "kernel", who);
	else
		snprintf(detail, sizeof(detail), "%llu %s records of %s lost: ring buffer full%s",
			 (unsigned long long)n, kind ? kind : "kernel", who,
			 gap ? " while egretd was not draining it" : "");
	loss.source = budget ? EGRET__V1__LOSS__SOURCE__SOURCE_BUDGET
		      : gap  ? EGRET__V1__LOSS__SOURCE__SOURCE_AGENT_GAP
			     : EGRET__V1__LOSS__SOURCE__SOURCE_RINGBUF;
	loss.count = n;
	loss.detail = detail;
	if (gap && !budget) {
		loss.gap_ns = gap->duration_ns;
		loss.gap_start_unix_nano = gap->start_unix_ns;
	}
	emit(c, &it->key, &loss);
}

/* Losses without a sandbox: what `losses` had no room for (or an older egretd left) */
static void emit_unkeyed(struct collector *c, uint64_t n, bool budget)
{
	Egret__V1__Loss loss = EGRET__V1__LOSS__INIT;
	char detail[160];

	if (!n)
		return;
	snprintf(detail, sizeof(detail),
		 budget ? "%llu file records over their sandbox's budget, sandbox not recorded"
			: "ring buffer full: %llu kernel records lost, sandbox not recorded",
		 (unsigned long long)n);
	loss.source = budget ? EGRET__V1__LOSS__SOURCE__SOURCE_BUDGET
			     : EGRET__V1__LOSS__SOURCE__SOURCE_RINGBUF;
	loss.count = n;
	loss.detail = detail;
	emit(c, NULL, &loss);
}

/* Every item's losses of one cause, gap for ring losses that fell in one. */
static void emit_items(struct collector *c, const struct loss_take *t, bool budget,
		       const struct selfwatch_gap *gap)
{
	for (size_t i = 0; i < t->n; i++) {
		if (budget ? t->items[i].budget : t->items[i].ring)
			emit_item(c, &t->items[i], budget, gap);
	}
}

void collector__check_drops(struct collector *c)
{
	struct loss_take t;

	take_losses(c, &t);
	if (t.ring || t.budget)
		log_warn("kernel records lost: %llu (ring buffer full), %llu over a sandbox's file "
			 "budget; Loss events name the sandboxes and kinds",
			 (unsigned long long)t.ring, (unsigned long long)t.budget);
	emit_items(c, &t, false, NULL);
	emit_unkeyed(c, t.ring_unkeyed, false);
	emit_items(c, &t, true, NULL);
	emit_unkeyed(c, t.budget_unkeyed, true);
	free(t.items);
}

/* A time egretd was not draining the rings: one Loss event carrying the ring losses not yet
 * reported, which fall in it (the last check before it was at most a second earlier), then whose
 * they were. What the rings kept is not lost: it is in the stream, with the time each record was
 * made.
 */
void collector__report_gap(struct collector *c, uint64_t start_unix_ns, uint64_t duration_ns,
			   bool rebooted, const char *cause)
{
	Egret__V1__Loss loss = EGRET__V1__LOSS__INIT;
	struct selfwatch_gap gap = { .start_unix_ns = start_unix_ns, .duration_ns = duration_ns };
	char detail[SELFWATCH_CAUSE_LEN + 128];
	struct loss_take t;

	take_losses(c, &t);
	if (rebooted)
		snprintf(detail, sizeof(detail), "%s", cause);
	else if (t.ring)
		snprintf(detail, sizeof(detail),
			 "%s; %llu kernel records lost (the ring was full; what it kept is in the "
			 "stream)",
			 cause, (unsigned long long)t.ring);
	else
		snprintf(detail, sizeof(detail),
			 "%s; no kernel record lost (the ring kept them: they are in the stream)",
			 cause);
	loss.source = EGRET__V1__LOSS__SOURCE__SOURCE_AGENT_GAP;
	loss.count = t.ring;
	loss.detail = detail;
	loss.gap_ns = duration_ns;
	loss.gap_start_unix_nano = start_unix_ns;
	emit(c, NULL, &loss);
	log_warn("%s", detail);
	emit_items(c, &t, false, &gap);
	emit_items(c, &t, true, NULL);
	emit_unkeyed(c, t.budget_unkeyed, true);
	free(t.items);
}
