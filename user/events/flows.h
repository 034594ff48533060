/* Who started each open TCP flow: a sandbox's allowed TCP connect record carries the socket's
 * cookie, and so does the flow record the kernel sends when the socket goes
 * (bpf/lib/flow.bpf.h), without the starter: the kernel keeps no storage on the socket. egretd
 * notes the connect here and fills the flow record in from it.
 *
 * Bounded: a sandbox holds at most max_per connects (--max-tcp-flows-per-sandbox), all of them
 * at most max (--max-tcp-flows). A connect over a bound, one an egretd before this one read,
 * or one whose sandbox went long ago, leaves its flow record with the sandbox and the close but
 * no starter and no duration (counted as unjoined); the stream's NetConnect with the same
 * cookie still names the starter. A flow record the ring dropped (a counted Loss) leaves its
 * connect here until its sandbox goes.
 *
 * Keys are the cookies under a keyed permutation (a secret of this egretd's), so a sandbox
 * that reads its sockets' cookies (SO_COOKIE) cannot choose ones that collide in the table.
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
#include "sandbox.h"

#define FLOW_STARTS_DEFAULT	   131072u /* --max-tcp-flows */
#define FLOW_STARTS_PER_SB_DEFAULT 16384u  /* --max-tcp-flows-per-sandbox */
/* a sandbox's flows are forgotten this long after it goes: its sockets may close later */
#define FLOW_STARTS_LINGER (10 * 60 * 1000000000ull)
#define FLOW_STARTS_GONE   64 /* sandboxes gone whose flows wait to be forgotten */

struct flow_start_entry {
	uint64_t key; /* the cookie, permuted (flow_key); never 0 */
	uint64_t start_ns;
	uint64_t sandbox_id;
	uint32_t pid, uid, gid;
	uint8_t comm[EGRET_COMM_LEN];
};

/* what a sandbox holds */
struct flow_quota {
	uint64_t sandbox_id; /* the key: a sandbox's id is never 0 here (+1, see flows.c) */
	uint32_t n;
	uint32_t pad;
};

struct flow_starts {
	struct htab h;	      /* struct flow_start_entry */
	struct htab per;      /* struct flow_quota */
	uint64_t k0, k1, mul; /* the permutation's secret */
	uint32_t max;	      /* FLOW_STARTS_DEFAULT unless set */
	uint32_t max_per;     /* FLOW_STARTS_PER_SB_DEFAULT unless set */
	struct {
		uint64_t sandbox_id;
		uint64_t at_ns; /* the close-record clock (boot time) when it went */
	} gone[FLOW_STARTS_GONE];
	uint32_t n_gone;
	uint64_t noted;	      /* connects noted */
	uint64_t joined;      /* flow records filled in from one */
	uint64_t unjoined;    /* flow records by cookie with no connect noted */
	uint64_t over_quota;  /* connects not noted: their sandbox held max_per */
	uint64_t not_held;    /* connects not noted: all held max, or no memory */
	uint64_t forgotten;   /* noted connects of sandboxes long gone, dropped */
	uint64_t foreign;     /* flow records of sockets in no sandbox egretd held nothing for */
	uint64_t gone_before; /* connects read after their sandbox went (unregistered), not held */
};

/* What flow_starts__take made of a flow record */
enum flow_join {
	FLOW_KNOWN,	    /* its starter is in it */
	FLOW_START_UNKNOWN, /* by cookie, with no connect held: reported with start_unknown */
	FLOW_NOT_SANDBOX,   /* a socket in no sandbox (its cgroup went): not reported */
};

int flow_starts__init(struct flow_starts *f);
void flow_starts__free(struct flow_starts *f);
/* An allowed TCP connect with a cookie: its starter, unless the socket has one already (a
 * connect retried keeps the first, as the kernel's storage did).
 */
void flow_starts__note(struct flow_starts *f, const struct egret_connect_event *r);
/* A flow record with a cookie: out is r, filled in from its connect when there is one; the
 * connect is forgotten. names: egretd's sandboxes, to tell whether a removed cgroup was one.
 */
enum flow_join flow_starts__take(struct flow_starts *f, const struct egret_flow_event *r,
				 const struct sandbox_names *names, struct egret_flow_event *out);
/* A sandbox went (its cgroup removed, or unregistered) at now_ns (boot clock): its flows are
 * forgotten FLOW_STARTS_LINGER later.
 */
void flow_starts__sandbox_gone(struct flow_starts *f, uint64_t sandbox_id, uint64_t now_ns);
/* Forget the flows of sandboxes gone long enough before now_ns. */
void flow_starts__expire(struct flow_starts *f, uint64_t now_ns);

#endif /* EGRET_FLOWS_H */
