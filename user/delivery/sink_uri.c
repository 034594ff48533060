/* Sink URIs: which scheme is which kind of sink and implementation (the one file that names
 * them all), and each kind's options; see sink.h.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/un.h>

#include "otlp.h"
#include "sink.h"
#include "util.h"

static const char *const kind_names[] = {
	[SINK_FILE] = "file", [SINK_STDOUT] = "stdout",	 [SINK_TCP] = "tcp",
	[SINK_UNIX] = "unix", [SINK_OTLP] = "otlp+http",
};

const char *sink__kind_name(enum sink_kind k)
{
	return kind_names[k];
}

/* ---- URIs ------------------------------------------------------------------------------------ */

/* "?a=1&b" at the end of rest: split off, and each option handed to fn. */
static int parse_query(struct sink *s, char *rest, char *err, size_t errsz)
{
	char *q = strchr(rest, '?'), *save = NULL;

	if (!q)
		return 0;
	*q++ = '\0';
	for (char *opt = strtok_r(q, "&", &save); opt; opt = strtok_r(NULL, "&", &save)) {
		char *val = strchr(opt, '=');
		uint64_t v;

		if (val)
			*val++ = '\0';
		if (s->kind == SINK_FILE && !strcmp(opt, "max_size") && val &&
		    !parse_size(val, &v)) {
			s->max_size = v;
		} else if (s->kind == SINK_FILE && !strcmp(opt, "keep") && val &&
			   !parse_u64(val, 1000, &v) && v >= 1) {
			s->keep = (unsigned int)v;
		} else if ((s->kind == SINK_TCP || s->kind == SINK_UNIX) && !strcmp(opt, "ack") &&
			   (!val || !strcmp(val, "1"))) {
			s->ack = true;
		} else {
			snprintf(err, errsz, "option '%s%s%s' is not one a %s sink takes", opt,
				 val ? "=" : "", val ? val : "", kind_names[s->kind]);
			return -EINVAL;
		}
	}
	return 0;
}

/* An OTLP URI's query is its endpoint's (a collector may want ?token=...), but for egret's own
 * compression=gzip|none, taken out of it here.
 */
static int otlp_query(struct sink *s, char *rest, char *err, size_t errsz)
{
	char *q = strchr(rest, '?'), *save = NULL, kept[PATH_MAX] = "";
	size_t kl = 0;

	if (!q)
		return 0;
	*q++ = '\0';
	for (char *opt = strtok_r(q, "&", &save); opt; opt = strtok_r(NULL, "&", &save)) {
		if (!strncmp(opt, "compression", 11) && (opt[11] == '=' || !opt[11])) {
			if (strcmp(opt, "compression=gzip") && strcmp(opt, "compression=none")) {
				snprintf(err, errsz,
					 "option '%s' is not one an otlp+http sink takes: "
					 "compression=gzip (the default) or compression=none",
					 opt);
				return -EINVAL;
			}
			s->plain = !strcmp(opt, "compression=none");
			continue;
		}
		kl += (size_t)snprintf(kept + kl, sizeof(kept) - kl, "%c%s", kl ? '&' : '?', opt);
		if (kl >= sizeof(kept))
			return -EINVAL;
	}
	/* the endpoint's own parameters back on its path */
	if (strlen(rest) + kl >= PATH_MAX)
		return -EINVAL;
	strcat(rest, kept);
	return 0;
}

int sink__parse_hostport(const char *hp, size_t n, const char *dflt, char host[256], char port[16])
{
	const char *colon;
	size_t hlen;

	if (n && hp[0] == '[') {
		const char *close = memchr(hp, ']', n);

		if (!close)
			return -EINVAL;
		hlen = (size_t)(close - hp - 1);
		if (hlen >= 256)
			return -EINVAL;
		memcpy(host, hp + 1, hlen);
		colon = close + 1 < hp + n && close[1] == ':' ? close + 1 : NULL;
		if (!colon && close + 1 != hp + n)
			return -EINVAL;
	} else {
		colon = memrchr(hp, ':', n);
		hlen = colon ? (size_t)(colon - hp) : n;
		if (hlen >= 256)
			return -EINVAL;
		memcpy(host, hp, hlen);
	}
	if (!hlen)
		return -EINVAL;
	host[hlen] = '\0';
	if (colon) {
		size_t plen = n - (size_t)(colon + 1 - hp);
		uint64_t v;
		char p[16];

		if (!plen || plen >= sizeof(p))
			return -EINVAL;
		memcpy(p, colon + 1, plen);
		p[plen] = '\0';
		if (parse_u64(p, 65535, &v) || !v)
			return -EINVAL;
		snprintf(port, 16, "%s", p);
	} else if (dflt) {
		snprintf(port, 16, "%s", dflt);
	} else {
		return -EINVAL;
	}
	return 0;
}

int sink__parse(struct sink *s, const char *uri, char *err, size_t errsz)
{
	char rest[PATH_MAX];
	int e = 0;

	memset(s, 0, sizeof(*s));
	s->ops = &sink_framed_ops;
	s->fd = -1;
	s->max_size = SINK_DEFAULT_ROTATE;
	s->keep = SINK_DEFAULT_KEEP;
	snprintf(err, errsz,
		 "expected file:PATH, stdout, tcp://HOST:PORT, unix:PATH or "
		 "otlp+http://HOST:PORT/PATH");
	if (strlen(uri) >= sizeof(s->uri))
		return -EINVAL;
	snprintf(s->uri, sizeof(s->uri), "%s", uri);
	if (!strcmp(uri, "stdout")) {
		s->kind = SINK_STDOUT;
		return 0;
	}
	if (str_starts_with(uri, "file:"))
		s->kind = SINK_FILE;
	else if (str_starts_with(uri, "unix:"))
		s->kind = SINK_UNIX;
	else if (str_starts_with(uri, "tcp://"))
		s->kind = SINK_TCP;
	else if (str_starts_with(uri, "otlp+http://"))
		s->kind = SINK_OTLP;
	else
		return -EINVAL;
	if (s->kind == SINK_OTLP)
		s->ops = &otlp_sink_ops;
	snprintf(rest, sizeof(rest), "%s", strchr(uri, ':') + 1);
	e = s->kind == SINK_OTLP ? otlp_query(s, rest, err, errsz)
				 : parse_query(s, rest, err, errsz);
	if (e)
		return e;
	switch (s->kind) {
	case SINK_FILE:
	case SINK_UNIX:
		if (rest[0] != '/') {
			snprintf(err, errsz, "%s needs an absolute path", kind_names[s->kind]);
			return -EINVAL;
		}
		if (s->kind == SINK_UNIX &&
		    strlen(rest) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
			snprintf(err, errsz, "unix socket path longer than %zu bytes",
				 sizeof(((struct sockaddr_un *)0)->sun_path) - 1);
			return -EINVAL;
		}
		snprintf(s->path, sizeof(s->path), "%s", rest);
		return 0;
	case SINK_TCP:
		if (sink__parse_hostport(rest + 2, strlen(rest + 2), NULL, s->host, s->port)) {
			snprintf(err, errsz, "expected tcp://HOST:PORT[?ack]");
			return -EINVAL;
		}
		return 0;
	case SINK_OTLP: {
		const char *hp = rest + 2, *slash = strchr(hp, '/');
		size_t n = slash ? (size_t)(slash - hp) : strlen(hp);

		if (sink__parse_hostport(hp, n, "4318", s->host, s->port)) {
			snprintf(err, errsz, "expected otlp+http://HOST[:PORT][/PATH]");
			return -EINVAL;
		}
		snprintf(s->path, sizeof(s->path), "%s", slash ? slash : "/v1/logs");
		/* the request's head, with them, must fit the room the encoder keeps for it */
		if (strlen(s->path) + strlen(s->host) > OTLP_URI_MAX) {
			snprintf(err, errsz, "otlp+http host and path longer than %d bytes",
				 OTLP_URI_MAX);
			return -EINVAL;
		}
		return 0;
	}
	default:
		return -EINVAL;
	}
}
