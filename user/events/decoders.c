/* Which decoder reads which kernel record: the one place that names the egress, confine and
 * audit decoders, so the collector names none of them.
 */
#include <stddef.h>

#include "audit.h"
#include "collector.h"
#include "confine.h"
#include "decoders.h"
#include "egress.h"
#include "egret/dns.h"
#include "util.h"

/* A sandboxed process in a network namespace without a resolver listener: no event, the
 * resolver sets one up.
 */
static void on_netns(struct decoder_ctx *d, const void *rec, size_t size)
{
	const struct egret_netns_event *r = rec;

	if (d->hooks.netns_seen)
		d->hooks.netns_seen(d->hooks.ctx, r->netns, r->hdr.pid, r->hdr.sandbox_id);
}

static const struct record_decoder standard[] = {
	{ EGRET_EV_CONNECT, sizeof(struct egret_connect_event), egress__on_connect },
	{ EGRET_EV_CGROUP, sizeof(struct egret_cgroup_event), confine__on_cgroup },
	{ EGRET_EV_TAMPER, sizeof(struct egret_tamper_event), confine__on_tamper },
	{ EGRET_EV_NETNS, sizeof(struct egret_netns_event), on_netns },
	{ EGRET_EV_EXEC, offsetof(struct egret_exec_event, data), audit__on_exec },
	{ EGRET_EV_FORK, sizeof(struct egret_fork_event), audit__on_fork },
	{ EGRET_EV_EXIT, sizeof(struct egret_exit_event), audit__on_exit },
	{ EGRET_EV_FILE, offsetof(struct egret_file_event, data), audit__on_file },
	{ EGRET_EV_FLOW, sizeof(struct egret_flow_event), audit__on_flow },
	{ EGRET_EV_LIMIT, sizeof(struct egret_limit_event), audit__on_limit },
};

int decoders__register(struct collector *c)
{
	for (size_t i = 0; i < ARRAY_SIZE(standard); i++) {
		int err = collector__register(c, standard[i].type, standard[i].size,
					      standard[i].decode);

		if (err)
			return err;
	}
	return 0;
}
