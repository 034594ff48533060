/* Fuzz target: arbitrary bytes decoded as an egret.v1.Event (what `egretctl tail`, the stdout
 * sink's --format json and the OTLP body print) and rendered as JSON. Invariants: the output is
 * exactly one valid JSON object, all of it valid UTF-8, whatever bytes the strings held; and
 * after pbjson__make_utf8() (what the OTLP sink does) every string of the event is valid UTF-8,
 * with pbjson's own UTF-8 check agreeing with the independent one of jsoncheck.h.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "egret/v1/events.pb-c.h"
#include "jsoncheck.h"
#include "pbcheck.h"
#include "pbjson.h"

static void check_json(const Egret__V1__Event *ev)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return;
	pbjson__event(f, ev);
	fclose(f);
	if (!jsoncheck_utf8_valid(buf, len) || !jsoncheck_valid(buf, len) || buf[0] != '{' ||
	    !strstr(buf, "\"time\":\"") || !strstr(buf, "\"event\":\"")) {
		fprintf(stderr, "fuzz json: bad output: %s\n", buf);
		abort();
	}
	free(buf);
}

/* pbjson__utf8_valid() and jsoncheck agree on every string of the event */
static void check_agree(const Egret__V1__Event *ev)
{
	const char *s[] = { ev->stream_id,
			    ev->host,
			    ev->sensor_version,
			    ev->process ? ev->process->comm : NULL,
			    ev->process ? ev->process->exe : NULL,
			    ev->sandbox ? ev->sandbox->name : NULL };

	for (size_t i = 0; i < sizeof(s) / sizeof(s[0]); i++) {
		if (s[i] && pbjson__utf8_valid(s[i], strlen(s[i])) !=
				    jsoncheck_utf8_valid(s[i], strlen(s[i])))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	Egret__V1__Event *ev = egret__v1__event__unpack(NULL, size, data);

	if (!ev)
		return 0;
	check_json(ev);
	check_agree(ev);
	if (pbjson__make_utf8(&ev->base, NULL) == 0 && !pbcheck_utf8(&ev->base))
		abort();
	check_json(ev);
	egret__v1__event__free_unpacked(ev, NULL);
	return 0;
}
