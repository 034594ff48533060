/* egretd's own events: the agent's start and stop (with what this kernel runs without), the
 * Heartbeat, and a pin the keeper put back.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "egret/ocsf.h"
#include "egretd.h"
#include "log.h"
#include "util.h"

/* What this kernel runs without, for the agent's start and stop events: the features that are
 * not on, each with the programs they kept from loading (words split in place in progs).
 */
static size_t agent_features(struct daemon *d, Egret__V1__KernelFeature *kf,
			     Egret__V1__KernelFeature **kfp, char progs[][FEATURE_PROGS_LEN],
			     char *words[][FEATURE_PROGS_LEN / 2])
{
	size_t n = 0;

	for (unsigned int i = 0; i < d->kf.n; i++) {
		const struct feature_status *f = &d->kf.f[i];
		Egret__V1__KernelFeature *k = &kf[n];
		char *save;

		if (f->state == FEATURE_ON)
			continue;
		egret__v1__kernel_feature__init(k);
		k->name = (char *)f->name;
		k->state = (Egret__V1__KernelFeature__State)f->state;
		k->detail = (char *)f->detail;
		k->accepted = f->accepted;
		k->not_loaded = words[n];
		str_copy(progs[n], FEATURE_PROGS_LEN, f->progs);
		for (char *w = strtok_r(progs[n], " ", &save); w; w = strtok_r(NULL, " ", &save))
			words[n][k->n_not_loaded++] = w;
		kfp[n] = k;
		n++;
	}
	return n;
}

void daemon__emit_agent(struct daemon *d, Egret__V1__AgentLifecycle__Kind kind)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__AgentLifecycle al = EGRET__V1__AGENT_LIFECYCLE__INIT;
	Egret__V1__KernelFeature kf[FEATURES_MAX], *kfp[FEATURES_MAX];
	char progs[FEATURES_MAX][FEATURE_PROGS_LEN], *words[FEATURES_MAX][FEATURE_PROGS_LEN / 2];

	al.kind = kind;
	al.kernel = d->kf.release;
	al.n_features = agent_features(d, kf, kfp, progs, words);
	al.features = kfp;
	al.cgroup_root = d->paths.cgroup_root;
	al.state_dir = d->paths.state_dir;
	al.programs = d->loader.attached;
	al.adopted = d->loader.adopted;
	al.reason = d->stop_reason;
	ev.class_uid = OCSF_APPLICATION_LIFECYCLE;
	ev.activity_id = kind == EGRET__V1__AGENT_LIFECYCLE__KIND__KIND_START
				 ? OCSF_APP_ACTIVITY_START
				 : OCSF_APP_ACTIVITY_STOP;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_AGENT;
	ev.agent = &al;
	stream__emit(&d->stream, &ev);
	stream__flush(&d->stream);
}

/* The Heartbeat: last seq, the spool, every sink, the kernel's counters. */
void daemon__emit_heartbeat(struct daemon *d)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Heartbeat hb = EGRET__V1__HEARTBEAT__INIT;
	Egret__V1__SinkState st[MAX_SINKS], *stp[MAX_SINKS];
	Egret__V1__Counter cv[COLLECTOR_COUNTERS], *cvp[COLLECTOR_COUNTERS];
	struct counter_value counters[COLLECTOR_COUNTERS];
	size_t n = collector__counters(d->loader.maps.counters, counters, COLLECTOR_COUNTERS);

	hb.last_seq = d->stream.seq;
	hb.spool_bytes = d->stream.spool.bytes;
	hb.spool_limit_bytes = d->stream.spool.limit;
	hb.lost = d->stream.lost;
	for (unsigned int i = 0; i < d->stream.nsinks; i++) {
		const struct sink *s = d->stream.sinks[i];

		egret__v1__sink_state__init(&st[i]);
		st[i].uri = (char *)s->uri;
		st[i].up = s->up;
		st[i].delivered = s->delivered;
		st[i].behind_bytes = spool__behind(&d->stream.spool, s->acked);
		st[i].error = (char *)s->error;
		stp[i] = &st[i];
	}
	hb.n_sinks = d->stream.nsinks;
	hb.sinks = stp;
	for (size_t i = 0; i < n; i++) {
		egret__v1__counter__init(&cv[i]);
		cv[i].name = counters[i].name;
		cv[i].value = counters[i].value;
		cvp[i] = &cv[i];
	}
	hb.n_counters = n;
	hb.counters = cvp;
	ev.class_uid = OCSF_APPLICATION_LIFECYCLE;
	ev.activity_id = OCSF_ACTIVITY_OTHER;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_HEARTBEAT;
	ev.heartbeat = &hb;
	stream__emit(&d->stream, &ev);
}

/* The keeper put back a pin someone removed: say which. A remover in a sandbox was killed and
 * named by the programs already (Tamper PIN_REMOVED with its process).
 */
void daemon__pin_removed(void *ctx, const char *path)
{
	struct daemon *d = ctx;
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
	char detail[PATH_MAX + 96];

	snprintf(detail, sizeof(detail), "pin %s was removed: egret's keeper put it back", path);
	t.kind = EGRET__V1__TAMPER__KIND__KIND_PIN_REMOVED;
	t.detail = detail;
	ev.class_uid = OCSF_PROCESS_ACTIVITY;
	ev.activity_id = OCSF_ACTIVITY_OTHER;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	ev.tamper = &t;
	if (d->stream.nsinks)
		stream__emit(&d->stream, &ev);
	log_warn("%s", detail);
}
