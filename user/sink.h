/* Where encoded events go. A sink takes framed records (varint length + Event) and buffers them
 * until sink__flush. URIs: file:PATH.
 */
#ifndef EGRET_SINK_H
#define EGRET_SINK_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#define SINK_BUF_BYTES (1u << 20)  /* flushed when half full */
#define SINK_BUF_MAX   (64u << 20) /* held while the sink cannot write; beyond: refused */

struct sink;

struct sink_ops {
	const char *scheme; /* "file" */
	int (*open)(struct sink *s, const char *arg);
	int (*write_out)(struct sink *s, const uint8_t *buf,
			 size_t len); /* bytes taken or -errno */
	void (*close)(struct sink *s);
};

struct sink {
	const struct sink_ops *ops;
	char uri[PATH_MAX];
	int fd;
	uint8_t *buf;
	size_t len, cap;
	uint64_t records; /* records accepted */
	uint64_t refused; /* records refused: buffer full while the sink could not write */
	int last_err;	  /* last write error, 0 when healthy */
};

int sink__open(struct sink *s, const char *uri);
int sink__write(struct sink *s, const uint8_t *rec, size_t len);
int sink__flush(struct sink *s);
void sink__close(struct sink *s);
int sink__check_uri(const char *uri);

#endif /* EGRET_SINK_H */
