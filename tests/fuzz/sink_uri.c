/* Fuzz target: a --sink URI as an operator (or a configuration tool) writes it (sink__parse),
 * and a HOST[:PORT] part (sink__parse_hostport).
 * Invariants: a URI accepted names a sink egret can open: file and unix an absolute path (a
 * unix one that fits sun_path), tcp and otlp a host and a port of 1-65535, rotation settings
 * in range; a refused one says why.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "sink.h"

static void check_port(const char *port)
{
	char *end;
	unsigned long v = strtoul(port, &end, 10);

	if (!port[0] || *end || v == 0 || v > 65535)
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct sink s;
	char uri[PATH_MAX + 16], err[160], host[256], port[16];
	size_t n = size < sizeof(uri) - 1 ? size : sizeof(uri) - 1;

	memcpy(uri, data, n);
	uri[n] = '\0';
	if (sink__parse(&s, uri, err, sizeof(err))) {
		if (!memchr(err, '\0', sizeof(err)) || !err[0])
			abort();
	} else {
		if (strcmp(s.uri, uri))
			abort();
		switch (s.kind) {
		case SINK_FILE:
			if (s.path[0] != '/' || s.keep < 1 || s.keep > 1000)
				abort();
			break;
		case SINK_UNIX:
			if (s.path[0] != '/' ||
			    strlen(s.path) >= sizeof(((struct sockaddr_un *)0)->sun_path))
				abort();
			break;
		case SINK_TCP:
		case SINK_OTLP:
			if (!s.host[0] || !memchr(s.host, '\0', sizeof(s.host)))
				abort();
			check_port(s.port);
			break;
		case SINK_STDOUT:
			break;
		default:
			abort();
		}
	}
	if (!sink__parse_hostport(uri, strlen(uri), "4318", host, port)) {
		if (!host[0] || strlen(host) >= sizeof(host))
			abort();
		check_port(port);
	}
	return 0;
}
