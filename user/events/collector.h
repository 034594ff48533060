/* The kernel side of the pipeline: drains the events ring buffer, turns each record into an
 * Event (envelope from the record header, payload from the record's handler) and reports ring
 * buffer drops as Loss events.
 */
#ifndef EGRET_COLLECTOR_H
#define EGRET_COLLECTOR_H

#include <linux/types.h>
#include <stdbool.h>
#include <stdint.h>

#include "egret/events.h"
#include "proc.h"
#include "redact.h"
#include "sandbox.h"
#include "stream.h"

struct ring_buffer;

/* What the rest of egretd wants to hear from the kernel side. */
struct collector_hooks {
	void *ctx;
	void (*sandbox_created)(void *ctx, uint64_t id, const char *name);
	void (*sandbox_destroyed)(void *ctx, uint64_t id);
	const char *(*rule_text)(void *ctx, uint32_t rule_id, char *buf, size_t size);
	void (*netns_seen)(void *ctx, uint64_t cookie, uint32_t pid, uint64_t sandbox);
	/* every event from a kernel record, after it went into the stream */
	void (*observe)(void *ctx, const Egret__V1__Event *ev);
};

struct collector {
	struct collector_hooks hooks;
	struct proc_cache *procs;  /* exec/fork-fed process cache, or NULL */
	struct redactor *redactor; /* applied to argv and paths, or NULL */
	struct stream *stream;
	struct sandbox_names names;
	struct ring_buffer *rb;
	int counters_fd;
	uint64_t records;     /* kernel records decoded */
	uint64_t bad_records; /* records egretd could not decode (reported as Loss) */
};

/* An Event with its envelope's sub-messages and string storage. */
struct envelope {
	Egret__V1__Event ev;
	Egret__V1__Sandbox sandbox;
	Egret__V1__Process process;
	char comm[EGRET_COMM_LEN + 1];
	char sandbox_name[SANDBOX_NAME_MAX + 24];
};

int collector__init(struct collector *c, struct stream *s, const char *cgroup_root, int events_fd,
		    int counters_fd);
int collector__fd(const struct collector *c);
int collector__poll(struct collector *c);
/* One ring buffer record of size bytes: decoded into its event, or reported as a decode Loss. */
void collector__record(struct collector *c, const void *data, size_t size);
void collector__check_drops(struct collector *c);
/* Ring buffer drops not reported yet; they count as reported from now on. */
uint64_t collector__take_drops(struct collector *c);
/* A time egretd did not drain the ring (selfwatch.h): a Loss event with the drops in it. */
void collector__report_gap(struct collector *c, uint64_t start_unix_ns, uint64_t duration_ns,
			   bool rebooted, const char *cause);
/* A record whose header or fields make no sense: counted and reported as a decode Loss. */
void collector__bad_record(struct collector *c, __u32 type, size_t size);
int collector__counter(int counters_fd, __u32 idx, uint64_t *sum);
void collector__envelope(struct collector *c, const struct egret_event_hdr *h, struct envelope *e);
/* Into the stream, then to the observe hook. */
void collector__emit(struct collector *c, Egret__V1__Event *ev);
void collector__format_counters(int counters_fd, char *buf, size_t size);

/* The kernel's counters by name ("connect4.denied", "ringbuf_drops", ...). */
#define COLLECTOR_COUNTERS 32
struct counter_value {
	char name[32];
	uint64_t value;
};
size_t collector__counters(int counters_fd, struct counter_value *out, size_t max);
void collector__free(struct collector *c);

#endif /* EGRET_COLLECTOR_H */
