/* Who started each open TCP flow, by socket cookie (flows.h). */
#include <errno.h>
#include <string.h>
#include <sys/random.h>

#include "flows.h"

/* the no-sandbox id (bpf/lib/sandbox.bpf.h NOT_A_SANDBOX) */
#define NO_SANDBOX (~0ull)

int flow_starts__init(struct flow_starts *f)
{
	uint64_t secret[3];
	int err;

	memset(f, 0, sizeof(*f));
	f->max = FLOW_STARTS_DEFAULT;
	f->max_per = FLOW_STARTS_PER_SB_DEFAULT;
	if (getrandom(secret, sizeof(secret), 0) != (ssize_t)sizeof(secret))
		return -EIO;
	f->k0 = secret[0];
	f->k1 = secret[1];
	f->mul = secret[2] | 1; /* odd: a bijection of 64-bit words */
	err = htab__init(&f->h, sizeof(struct flow_start_entry), sizeof(uint64_t), 0);
	if (!err)
		err = htab__init(&f->per, sizeof(struct flow_quota), sizeof(uint64_t), 0);
	if (err)
		flow_starts__free(f);
	return err;
}

void flow_starts__free(struct flow_starts *f)
{
	htab__free(&f->h);
	htab__free(&f->per);
}

/* The cookie under the keyed permutation: distinct cookies, distinct keys; 0 is not a key. */
static uint64_t flow_key(const struct flow_starts *f, uint64_t cookie)
{
	uint64_t x = (cookie ^ f->k0) * f->mul;

	return (x ^ (x >> 29)) ^ f->k1;
}

static struct flow_quota *quota_of(struct flow_starts *f, uint64_t sandbox_id, bool add)
{
	uint64_t k = sandbox_id + 1;

	return add ? htab__insert(&f->per, &k, NULL) : htab__find(&f->per, &k);
}

/* one held connect of sandbox_id fewer; its entry goes with its last */
static void quota_drop(struct flow_starts *f, uint64_t sandbox_id)
{
	struct flow_quota *q = quota_of(f, sandbox_id, false);
	uint64_t k = sandbox_id + 1;

	if (q && (q->n <= 1 || --q->n == 0))
		htab__remove(&f->per, &k);
}

/* Forget every held connect of the gone sandboxes whose time came (the first n of gone[]),
 * those noted before each went, in one pass over the table (none when they hold nothing); a
 * table left empty gives its memory back.
 */
static void forget_gone(struct flow_starts *f, uint32_t n)
{
	bool any = false;
	size_t i = 0;

	for (uint32_t g = 0; g < n && !any; g++)
		any = quota_of(f, f->gone[g].sandbox_id, false) != NULL;
	/* a removal shifts later entries back into slot i: look at it again */
	while (any && i < f->h.cap) {
		const struct flow_start_entry *e = htab__at(&f->h, i);
		bool due = false;

		for (uint32_t g = 0; e && g < n && !due; g++)
			due = e->sandbox_id == f->gone[g].sandbox_id &&
			      e->start_ns <= f->gone[g].at_ns;
		if (due) {
			uint64_t key = e->key, sandbox_id = e->sandbox_id;

			htab__remove(&f->h, &key);
			quota_drop(f, sandbox_id);
			f->forgotten++;
			continue;
		}
		i++;
	}
	f->n_gone -= n;
	memmove(&f->gone[0], &f->gone[n], f->n_gone * sizeof(f->gone[0]));
	if (!f->h.used && f->h.cap > 1024) {
		struct htab small;

		if (!htab__init(&small, sizeof(struct flow_start_entry), sizeof(uint64_t), 0)) {
			htab__free(&f->h);
			f->h = small;
		}
	}
}

void flow_starts__expire(struct flow_starts *f, uint64_t now_ns)
{
	uint32_t n = 0;

	/* records come in time order only nearly (two rings, several CPUs): one a little
	 * older than the sandbox's going does not wrap around
	 */
	while (n < f->n_gone && (int64_t)(now_ns - f->gone[n].at_ns) >= (int64_t)FLOW_STARTS_LINGER)
		n++;
	if (n)
		forget_gone(f, n);
}

/* when sandbox_id went, if it did lately; 0 if not */
static uint64_t gone_at(const struct flow_starts *f, uint64_t sandbox_id)
{
	for (uint32_t g = 0; g < f->n_gone; g++) {
		if (f->gone[g].sandbox_id == sandbox_id)
			return f->gone[g].at_ns;
	}
	return 0;
}

/* Kept even for a sandbox holding nothing now: an unregistered one's connects from before may
 * still be in the ring, and are not held (their close would never come).
 */
void flow_starts__sandbox_gone(struct flow_starts *f, uint64_t sandbox_id, uint64_t now_ns)
{
	flow_starts__expire(f, now_ns);
	if (gone_at(f, sandbox_id))
		return; /* unregistered, then its cgroup removed: the first counts */
	if (f->n_gone == FLOW_STARTS_GONE)
		forget_gone(f, 1); /* sooner than its time: the list has no room */
	f->gone[f->n_gone].sandbox_id = sandbox_id;
	f->gone[f->n_gone].at_ns = now_ns;
	f->n_gone++;
}

void flow_starts__note(struct flow_starts *f, const struct egret_connect_event *r)
{
	uint64_t key = flow_key(f, r->cookie);
	struct flow_start_entry *e;
	struct flow_quota *q;

	uint64_t gone;

	flow_starts__expire(f, r->hdr.ts_ns);
	if (!key || r->hdr.sandbox_id == NO_SANDBOX) {
		f->not_held++;
		return;
	}
	if (htab__find(&f->h, &key))
		return; /* the first connect started the flow */
	/* made before its sandbox went (read after an unregistration): not held */
	gone = f->n_gone ? gone_at(f, r->hdr.sandbox_id) : 0;
	if (gone && (int64_t)(r->hdr.ts_ns - gone) <= 0) {
		f->gone_before++;
		return;
	}
	q = quota_of(f, r->hdr.sandbox_id, false);
	if (q && q->n >= f->max_per) {
		f->over_quota++;
		return;
	}
	if (f->h.used >= f->max || (!q && !(q = quota_of(f, r->hdr.sandbox_id, true)))) {
		f->not_held++;
		return;
	}
	e = htab__insert(&f->h, &key, NULL);
	if (!e) {
		if (!q->n)
			quota_drop(f, r->hdr.sandbox_id);
		f->not_held++;
		return;
	}
	q->n++;
	e->start_ns = r->hdr.ts_ns;
	e->sandbox_id = r->hdr.sandbox_id;
	e->pid = r->hdr.pid;
	e->uid = r->hdr.uid;
	e->gid = r->hdr.gid;
	memcpy(e->comm, r->hdr.comm, sizeof(e->comm));
	f->noted++;
}

/* out's starter from st */
static void fill_start(struct egret_flow_event *out, const struct flow_start_entry *st)
{
	out->hdr.sandbox_id = st->sandbox_id;
	out->hdr.pid = st->pid;
	out->hdr.tid = st->pid; /* as the kernel's storage has it: the process */
	out->hdr.uid = st->uid;
	out->hdr.gid = st->gid;
	memcpy(out->hdr.comm, st->comm, sizeof(out->hdr.comm));
	out->duration_ns = out->hdr.ts_ns > st->start_ns ? out->hdr.ts_ns - st->start_ns : 0;
}

enum flow_join flow_starts__take(struct flow_starts *f, const struct egret_flow_event *r,
				 const struct sandbox_names *names, struct egret_flow_event *out)
{
	uint64_t key = flow_key(f, r->cookie);
	const struct flow_start_entry *e = key ? htab__find(&f->h, &key) : NULL;
	struct flow_start_entry st;

	*out = *r;
	if (!e) {
		if (!r->by_cookie)
			return FLOW_KNOWN;
		/* a socket whose cgroup went: reported if that cgroup was a sandbox's (one gone
		 * lately, or still named)
		 */
		if (r->hdr.sandbox_id == NO_SANDBOX ||
		    (r->by_cookie == 2 && !gone_at(f, r->hdr.sandbox_id) &&
		     !sandbox_names__entry(names, r->hdr.sandbox_id))) {
			f->foreign++;
			return FLOW_NOT_SANDBOX;
		}
		f->unjoined++;
		return FLOW_START_UNKNOWN;
	}
	st = *e;
	htab__remove(&f->h, &key);
	quota_drop(f, st.sandbox_id);
	/* the socket's storage had a start too (a later connect's record was dropped): the
	 * earlier of the two started the flow
	 */
	if (!r->by_cookie && r->hdr.ts_ns - r->duration_ns <= st.start_ns)
		return FLOW_KNOWN;
	fill_start(out, &st);
	f->joined++;
	return FLOW_KNOWN;
}
