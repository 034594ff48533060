/* Who started each open TCP flow, by socket cookie (flows.h). */
#include <string.h>

#include "flows.h"

int flow_starts__init(struct flow_starts *f)
{
	memset(f, 0, sizeof(*f));
	f->max = FLOW_STARTS_DEFAULT;
	return htab__init(&f->h, sizeof(struct flow_start_entry), sizeof(uint64_t), 0);
}

void flow_starts__free(struct flow_starts *f)
{
	htab__free(&f->h);
}

/* forget every flow of the first gone sandbox, and it */
static void forget_first_gone(struct flow_starts *f)
{
	uint64_t sandbox_id = f->gone[0].sandbox_id;
	size_t i = 0;

	/* a removal shifts later entries back into slot i: look at it again */
	while (i < f->h.cap) {
		const struct flow_start_entry *e = htab__at(&f->h, i);

		if (e && e->sandbox_id == sandbox_id) {
			uint64_t cookie = e->cookie;

			htab__remove(&f->h, &cookie);
			f->forgotten++;
			continue;
		}
		i++;
	}
	memmove(&f->gone[0], &f->gone[1], --f->n_gone * sizeof(f->gone[0]));
}

void flow_starts__expire(struct flow_starts *f, uint64_t now_ns)
{
	/* records come in time order only nearly (two rings, several CPUs): one a little
	 * older than the sandbox's going does not wrap around
	 */
	while (f->n_gone && (int64_t)(now_ns - f->gone[0].at_ns) >= (int64_t)FLOW_STARTS_LINGER)
		forget_first_gone(f);
}

void flow_starts__sandbox_gone(struct flow_starts *f, uint64_t sandbox_id, uint64_t now_ns)
{
	flow_starts__expire(f, now_ns);
	if (f->n_gone == FLOW_STARTS_GONE)
		forget_first_gone(f); /* sooner than its time: the list has no room */
	f->gone[f->n_gone].sandbox_id = sandbox_id;
	f->gone[f->n_gone].at_ns = now_ns;
	f->n_gone++;
}

void flow_starts__note(struct flow_starts *f, const struct egret_connect_event *r)
{
	struct flow_start_entry *e;
	bool added;

	flow_starts__expire(f, r->hdr.ts_ns);
	if (f->h.used >= f->max && !htab__find(&f->h, &r->cookie)) {
		f->not_held++;
		return;
	}
	e = htab__insert(&f->h, &r->cookie, &added);
	if (!e) {
		f->not_held++;
		return;
	}
	if (!added)
		return; /* the first connect started the flow */
	e->start_ns = r->hdr.ts_ns;
	e->sandbox_id = r->hdr.sandbox_id;
	e->pid = r->hdr.pid;
	e->uid = r->hdr.uid;
	e->gid = r->hdr.gid;
	memcpy(e->comm, r->hdr.comm, sizeof(e->comm));
	f->noted++;
}

bool flow_starts__take(struct flow_starts *f, const struct egret_flow_event *r,
		       struct egret_flow_event *out)
{
	const struct flow_start_entry *e = htab__find(&f->h, &r->cookie);
	struct flow_start_entry st;

	*out = *r;
	if (!e) {
		if (r->by_cookie)
			f->unjoined++;
		return !r->by_cookie;
	}
	st = *e;
	htab__remove(&f->h, &r->cookie);
	if (!r->by_cookie)
		return true; /* the socket's storage had the start (its first connect's record
			      * was lost); this one came after */
	out->hdr.sandbox_id = st.sandbox_id;
	out->hdr.pid = st.pid;
	out->hdr.tid = st.pid; /* as the kernel's storage has it: the process */
	out->hdr.uid = st.uid;
	out->hdr.gid = st.gid;
	memcpy(out->hdr.comm, st.comm, sizeof(out->hdr.comm));
	out->duration_ns = r->hdr.ts_ns > st.start_ns ? r->hdr.ts_ns - st.start_ns : 0;
	f->joined++;
	return true;
}
