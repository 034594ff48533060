/* The event stream for integration tests (see harness_events.c): an instance's sink file read,
 * searched and waited on. Included through harness.h.
 */
#ifndef EGRET_TEST_HARNESS_EVENTS_H
#define EGRET_TEST_HARNESS_EVENTS_H

#include <stdbool.h>
#include <stddef.h>

#include "egret/v1/events.pb-c.h"

struct events {
	Egret__V1__Event **ev;
	size_t n;
};
int events_read(const char *path, struct events *out);
void events_free(struct events *ev);
int events_wait(const char *path, bool (*match)(const Egret__V1__Event *, const void *),
		const void *arg, int timeout_ms, struct events *out);
int events_wait_count(const char *path, bool (*match)(const Egret__V1__Event *, const void *),
		      const void *arg, size_t count, int timeout_ms, struct events *out);
const Egret__V1__Event *events_find(const struct events *ev,
				    bool (*match)(const Egret__V1__Event *, const void *),
				    const void *arg, size_t *count);

#endif /* EGRET_TEST_HARNESS_EVENTS_H */
