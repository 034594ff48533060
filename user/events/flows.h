/* Who started each open TCP flow: a sandbox's allowed TCP connect record carries the socket's
 * cookie, and so does the flow record the kernel sends when the socket goes
 * (bpf/lib/flow.bpf.h), without the starter: the kernel keeps no storage on the socket. egretd
 * notes the connect here and fills the flow record in from it.
 *
 * Bounded: at most max (egretd --max-tcp-flows) flows at once. A connect over the bound, one noted by an
 * egretd before this one, or one whose sandbox went long enough ago, leaves its flow record
 * with the sandbox and the close but no starter and no duration (counted as unjoined). A flow
 * record that was lost (the ring full: a counted Loss) leaves its connect here until its
 * sandbox goes.
 */
#ifndef EGRET_FLOWS_H
#define EGRET_FLOWS_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "egret/events.h"
#include "egret/audit.h"
#include "egret/egress.h"
#include "htab.h"

#define FLOW_STARTS_DEFAULT 262144u /* --max-tcp-flows */
/* a sandbox's flows are forgotten this long after it goes: its sockets may close later */
#define FLOW_STARTS_LINGER (10 * 60 * 1000000000ull)
#define FLOW_STARTS_GONE   64 /* sandboxes gone whose flows wait to be forgotten */

struct flow_start_entry {
	uint64_t cookie; /* the key; never 0 */
	uint64_t start_ns;
	uint64_t sandbox_id;
	uint32_t pid, uid, gid;
	uint8_t comm[EGRET_COMM_LEN];
};

struct flow_starts {
	struct htab h;
	uint32_t max; /* FLOW_STARTS_DEFAULT unless set */
	struct {
		uint64_t sandbox_id;
		uint64_t at_ns; /* the close-record clock (boot time) when it went */
	} gone[FLOW_STARTS_GONE];
	uint32_t n_gone;
	uint64_t noted;	    /* connects noted */
	uint64_t joined;    /* flow records filled in from one */
	uint64_t unjoined;  /* flow records by cookie with no connect noted */
	uint64_t not_held;  /* connects not noted: at the bound, or no memory */
	uint64_t forgotten; /* noted connects of sandboxes long gone, dropped */
};

int flow_starts__init(struct flow_starts *f);
void flow_starts__free(struct flow_starts *f);
/* An allowed TCP connect with a cookie: its starter, unless the socket has one already (a
 * connect retried keeps the first, as the kernel's storage did).
 */
void flow_starts__note(struct flow_starts *f, const struct egret_connect_event *r);
/* A flow record with a cookie: out is r, filled in from its connect when it was by cookie;
 * the connect is forgotten. False for a flow record by cookie whose connect is not here
 * (out is r unchanged: no starter, no duration).
 */
bool flow_starts__take(struct flow_starts *f, const struct egret_flow_event *r,
		       struct egret_flow_event *out);
/* A sandbox went at now_ns (boot clock): its flows are forgotten FLOW_STARTS_LINGER later. */
void flow_starts__sandbox_gone(struct flow_starts *f, uint64_t sandbox_id, uint64_t now_ns);
/* Forget the flows of sandboxes gone long enough before now_ns. */
void flow_starts__expire(struct flow_starts *f, uint64_t now_ns);

#endif /* EGRET_FLOWS_H */
