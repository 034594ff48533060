/* The event stream: stamps every Event with the stream id, the next sequence number, host and
 * version, encodes it once and hands the framed record to every sink.
 */
#ifndef EGRET_STREAM_H
#define EGRET_STREAM_H

#include <stdint.h>

#include "egret/v1/events.pb-c.h"
#include "sink.h"

#define STREAM_MAX_SINKS 8

/* OCSF class_uid / activity_id hints carried by the envelope */
#define OCSF_FILE_SYSTEM_ACTIVITY  1001
#define OCSF_PROCESS_ACTIVITY	   1007
#define OCSF_NETWORK_ACTIVITY	   4001
#define OCSF_DNS_ACTIVITY	   4003
#define OCSF_DEVICE_CONFIG_CHANGE  5019
#define OCSF_APPLICATION_LIFECYCLE 6002
#define OCSF_NET_ACTIVITY_OPEN	   1
#define OCSF_NET_ACTIVITY_REFUSE   5
#define OCSF_APP_ACTIVITY_START	   3
#define OCSF_APP_ACTIVITY_STOP	   4

struct stream {
	char id[33];  /* 32 hex digits, random per start */
	uint64_t seq; /* last sequence number assigned */
	char host[256];
	int64_t boot_to_unix; /* add to CLOCK_BOOTTIME ns for Unix time ns */
	unsigned int nsinks;
	struct sink *sinks[STREAM_MAX_SINKS];
	uint8_t *scratch;
	size_t scratch_cap;
	uint64_t unsent; /* events no sink took */
};

int stream__init(struct stream *s);
int stream__add_sink(struct stream *s, struct sink *sink);
uint64_t stream__emit(struct stream *s, Egret__V1__Event *ev);
void stream__flush(struct stream *s);
void stream__sync_clock(struct stream *s);
uint64_t stream__unix_ns(const struct stream *s, uint64_t boot_ns);
void stream__free(struct stream *s);

#endif /* EGRET_STREAM_H */
