/* What a record decoder sees of the collector: the hooks to the rest of egretd, the process
 * cache, the redactor, the sandbox names, and four calls (envelope, emit, bad record, drain).
 * Decoders register their record types with collector__register (decoders.c registers the
 * standard set) and never see struct collector.
 */
#ifndef EGRET_DECODER_H
#define EGRET_DECODER_H

#include <linux/types.h>
#include <stddef.h>
#include <stdint.h>

#include "egret/events.h"
#include "egret/v1/events.pb-c.h"
#include "engine.h"
#include "flows.h"
#include "proc.h"
#include "redact.h"
#include "sandbox.h"
#include "util.h"

/* What the rest of egretd wants to hear from the kernel side. */
struct collector_hooks {
	void *ctx;
	void (*sandbox_created)(void *ctx, uint64_t id, const char *name);
	void (*sandbox_destroyed)(void *ctx, uint64_t id);
	const char *(*rule_text)(void *ctx, uint32_t rule_id, char *buf, size_t size);
	void (*netns_seen)(void *ctx, uint64_t cookie, uint32_t pid, uint64_t sandbox);
	/* every event from a kernel record, after it went into the stream; env: an exec's
	 * environment when the kernel read it (package managers'), else NULL
	 */
	void (*observe)(void *ctx, const Egret__V1__Event *ev, const struct env_block *env);
};

/* The context a decoder gets; the collector holds one (collector.ctx) and fills names. */
struct decoder_ctx {
	struct collector_hooks hooks;
	struct proc_cache *procs;    /* exec/fork-fed process cache, or NULL */
	struct redactor *redactor;   /* applied to argv and paths, or NULL */
	struct sandbox_names *names; /* sandbox id -> name, kept by the cgroup records */
	struct flow_starts flows;    /* open TCP flows' starters, by socket cookie */
};

/* A decoder of one record type: rec holds size bytes, at least the size it registered. */
typedef void (*decoder_fn)(struct decoder_ctx *d, const void *rec, size_t size);

/* An Event with its envelope's sub-messages and string storage. */
struct envelope {
	Egret__V1__Event ev;
	struct sandbox_pb sandbox; /* its sandbox and container */
	Egret__V1__Process process;
	char comm[EGRET_COMM_LEN + 1];
	char sandbox_name[SANDBOX_NAME_MAX + 24];
};

/* The envelope (time, sandbox, process) from a record header. */
void decoder__envelope(struct decoder_ctx *d, const struct egret_event_hdr *h, struct envelope *e);
/* Into the stream, then to the observe hook (with env, which is never in the stream). */
void decoder__emit(struct decoder_ctx *d, Egret__V1__Event *ev);
void decoder__emit_env(struct decoder_ctx *d, Egret__V1__Event *ev, const struct env_block *env);
/* A record whose header or fields make no sense: counted and reported as a decode Loss. */
void decoder__bad_record(struct decoder_ctx *d, __u32 type, size_t size);
/* What the kernel reported up to now into the stream first (no-op without a ring buffer). */
void decoder__drain(struct decoder_ctx *d);
struct control_req;
/* A control request's report about sandbox NAME (egretctl run's): h gets the sandbox's id and
 * the time, after what the kernel reported before is in the stream. -ENOENT (said to the
 * caller) when egret's root has no such sandbox.
 */
int decoder__named_sandbox(struct decoder_ctx *d, struct control_req *r, const char *name,
			   struct egret_event_hdr *h);

#endif /* EGRET_DECODER_H */
