/* The event stream for integration tests: reading an instance's sink file (length-delimited
 * Event records), finding and counting the events a predicate matches, and polling the file
 * until they arrive or a timeout passes.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "array.h"
#include "harness_events.h"
#include "harness_instance.h"
#include "wire.h"

int events_read(const char *path, struct events *out)
{
	struct wire_reader r;
	const uint8_t *msg;
	size_t len, cap = 0;
	FILE *f = fopen(path, "re");
	int n;

	out->ev = NULL;
	out->n = 0;
	if (!f)
		return -errno;
	wire_reader__init(&r, f);
	while ((n = wire_reader__next(&r, &msg, &len)) == 1) {
		Egret__V1__Event *ev = egret__v1__event__unpack(NULL, len, msg);

		if (!ev) {
			n = -EBADMSG;
			break;
		}
		n = ARRAY_RESERVE(out->ev, cap, out->n + 1);
		if (n) {
			egret__v1__event__free_unpacked(ev, NULL);
			break;
		}
		out->ev[out->n++] = ev;
	}
	wire_reader__free(&r);
	fclose(f);
	/* a record still being written is not an error for a reader racing the writer */
	return n == -EPIPE ? 0 : n;
}

void events_free(struct events *ev)
{
	for (size_t i = 0; i < ev->n; i++)
		egret__v1__event__free_unpacked(ev->ev[i], NULL);
	free(ev->ev);
	ev->ev = NULL;
	ev->n = 0;
}

const Egret__V1__Event *events_find(const struct events *ev,
				    bool (*match)(const Egret__V1__Event *, const void *),
				    const void *arg, size_t *count)
{
	const Egret__V1__Event *first = NULL;
	size_t n = 0;

	for (size_t i = 0; i < ev->n; i++) {
		if (!match(ev->ev[i], arg))
			continue;
		if (!first)
			first = ev->ev[i];
		n++;
	}
	if (count)
		*count = n;
	return first;
}

/* Poll the event file until count events match; 0 with every event read so far in out. */
int events_wait_count(const char *path, bool (*match)(const Egret__V1__Event *, const void *),
		      const void *arg, size_t count, int timeout_ms, struct events *out)
{
	timeout_ms *= (int)harness_timeout_scale(); /* an emulated guest is slower */
	for (int waited = 0;; waited += 50) {
		int err = events_read(path, out);
		size_t n = 0;

		if (!err)
			events_find(out, match, arg, &n);
		if (!err && n >= count)
			return 0;
		if (waited >= timeout_ms)
			return err ? err : -ETIMEDOUT;
		events_free(out);
		usleep(50000);
	}
}

/* Poll the event file until an event matches; 0 with every event read so far in out. */
int events_wait(const char *path, bool (*match)(const Egret__V1__Event *, const void *),
		const void *arg, int timeout_ms, struct events *out)
{
	timeout_ms *= (int)harness_timeout_scale(); /* an emulated guest is slower */
	for (int waited = 0;; waited += 50) {
		int err = events_read(path, out);

		if (!err && events_find(out, match, arg, NULL))
			return 0;
		if (waited >= timeout_ms)
			return err ? err : -ETIMEDOUT;
		events_free(out);
		usleep(50000);
	}
}
