/* Event sinks. Records are buffered in memory and written on flush (after every ring buffer
 * batch), so a burst costs one write(2), not one per event. While a sink cannot write, records
 * stay buffered up to SINK_BUF_MAX; beyond that they are refused and counted, never dropped
 * silently.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "sink.h"
#include "util.h"

static int file_open(struct sink *s, const char *path)
{
	char dir[PATH_MAX];
	int err;

	snprintf(dir, sizeof(dir), "%s", path);
	err = mkdir_p(dirname(dir), 0750);
	if (err) {
		log_err("failed to create directory for sink %s: %s", path, strerror(-err));
		return err;
	}
	s->fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0640);
	if (s->fd < 0) {
		err = -errno;
		log_err("failed to open sink %s: %s", path, strerror(errno));
		return err;
	}
	return 0;
}

static int fd_write_out(struct sink *s, const uint8_t *buf, size_t len)
{
	ssize_t n = write(s->fd, buf, len);

	if (n < 0)
		return errno == EINTR ? 0 : -errno;
	return (int)n;
}

static void fd_close(struct sink *s)
{
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

static const struct sink_ops sink_table[] = {
	{ "file", file_open, fd_write_out, fd_close },
};

static const struct sink_ops *sink_ops_for(const char *uri, const char **arg)
{
	for (size_t i = 0; i < ARRAY_SIZE(sink_table); i++) {
		size_t n = strlen(sink_table[i].scheme);

		if (strncmp(uri, sink_table[i].scheme, n) == 0 && uri[n] == ':' && uri[n + 1]) {
			*arg = uri + n + 1;
			return &sink_table[i];
		}
	}
	return NULL;
}

/* 0 when uri names a sink egret can open (without opening it). */
int sink__check_uri(const char *uri)
{
	const char *arg;

	return sink_ops_for(uri, &arg) ? 0 : -EINVAL;
}

int sink__open(struct sink *s, const char *uri)
{
	const char *arg;
	int err;

	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->ops = sink_ops_for(uri, &arg);
	if (!s->ops) {
		log_err("unknown sink '%s': expected file:PATH", uri);
		return -EINVAL;
	}
	snprintf(s->uri, sizeof(s->uri), "%s", uri);
	s->cap = SINK_BUF_BYTES;
	s->buf = malloc(s->cap);
	if (!s->buf)
		return -ENOMEM;
	err = s->ops->open(s, arg);
	if (err) {
		free(s->buf);
		s->buf = NULL;
	}
	return err;
}

static int sink_grow(struct sink *s, size_t need)
{
	size_t cap = s->cap;
	uint8_t *nb;

	while (cap < need)
		cap *= 2;
	if (cap > SINK_BUF_MAX)
		return -ENOBUFS;
	nb = realloc(s->buf, cap);
	if (!nb)
		return -ENOMEM;
	s->buf = nb;
	s->cap = cap;
	return 0;
}

/* Take one framed record; -ENOBUFS when it cannot be held (counted in refused). */
int sink__write(struct sink *s, const uint8_t *rec, size_t len)
{
	if (s->len + len > SINK_BUF_BYTES / 2)
		sink__flush(s);
	if (s->len + len > s->cap && sink_grow(s, s->len + len)) {
		s->refused++;
		return -ENOBUFS;
	}
	memcpy(s->buf + s->len, rec, len);
	s->len += len;
	s->records++;
	return 0;
}

/* Write out what is buffered; keeps what the sink did not take. */
int sink__flush(struct sink *s)
{
	size_t off = 0;
	int n = 0;

	if (!s->len)
		return 0;
	while (off < s->len) {
		n = s->ops->write_out(s, s->buf + off, s->len - off);
		if (n < 0)
			break;
		off += (size_t)n;
	}
	if (off) {
		memmove(s->buf, s->buf + off, s->len - off);
		s->len -= off;
	}
	if (n < 0 && n != s->last_err)
		log_err("sink %s: write failed: %s (keeping %zu bytes buffered)", s->uri,
			strerror(-n), s->len);
	else if (n >= 0 && s->last_err)
		log_info("sink %s: writing again", s->uri);
	s->last_err = n < 0 ? n : 0;
	return n < 0 ? n : 0;
}

void sink__close(struct sink *s)
{
	if (!s->ops)
		return;
	sink__flush(s);
	if (s->len)
		log_err("sink %s: closing with %zu bytes not written", s->uri, s->len);
	s->ops->close(s);
	free(s->buf);
	s->buf = NULL;
	s->ops = NULL;
}
