/* Where events go. Every sink reads the spool from its own position and moves that position on
 * only when the receiver has the events: a file when write(2) took them, a unix socket when
 * the receiver has read them (SIOCOUTQ), a TCP socket when the peer's TCP acknowledged them or,
 * with ?ack, when the receiver said so, an OTLP endpoint when it answered 2xx. A sink that is
 * down retries with exponential backoff and jitter and then goes on from its position.
 *
 * URIs:
 *   file:PATH[?max_size=BYTES&keep=N]  rotated at max_size (default 100M) keeping N (default 10)
 *   stdout
 *   tcp://HOST:PORT[?ack]              ack: the receiver acknowledges (see README)
 *   unix:PATH[?ack]
 *   otlp+http://HOST:PORT[/PATH][?compression=gzip|none]
 *                                      OTLP/HTTP logs, protobuf, gzipped unless none (PATH
 *                                      default /v1/logs)
 */
#ifndef EGRET_SINK_H
#define EGRET_SINK_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loop.h"
#include "pbjson.h"
#include "spool.h"

#define SINK_READ_BYTES	    (1u << 20) /* spool bytes taken per write */
#define SINK_INFLIGHT	    256	       /* writes a socket sink tracks until confirmed */
#define SINK_BACKOFF_MIN_MS 100
#define SINK_BACKOFF_MAX_MS 30000
#define SINK_DEFAULT_ROTATE (100ull << 20)
#define SINK_DEFAULT_KEEP   10

enum sink_kind {
	SINK_FILE,
	SINK_STDOUT,
	SINK_TCP,
	SINK_UNIX,
	SINK_OTLP
};
enum sink_format {
	SINK_BINARY,
	SINK_JSON
};

struct sink;
struct otlp;

/* One implementation of a sink: what sink__start, sink__pump, sink__skip and sink__close do
 * for it. sink.c's carries the framed stream (file, stdout, tcp, unix), otlp.c's OTLP/HTTP;
 * sink__parse picks one by the URI's scheme (sink_uri.c).
 */
struct sink_ops {
	int (*start)(struct sink *s);  /* open or begin connecting; 0 or -errno */
	void (*pump)(struct sink *s);  /* move events along */
	void (*reset)(struct sink *s); /* NULL, or: forget what is in hand (the spool evicted it) */
	void (*close)(struct sink *s); /* NULL, or: free what start made */
};
extern const struct sink_ops sink_framed_ops;

/* What a sink tells the stream: events it will never deliver. */
struct sink_loss {
	uint64_t count, first_seq, last_seq;
	char stream_id[33];
	char detail[256];
};
typedef void (*sink_loss_fn)(void *ctx, struct sink *s, const struct sink_loss *l);

/* one write to a socket, confirmed when the receiver has all of its bytes (or records) */
struct sink_inflight {
	uint64_t conn_bytes;   /* the connection's byte count after it */
	uint64_t conn_records; /* and record count */
	struct spool_pos end;  /* spool position after it */
};

struct arena;

struct sink {
	const struct sink_ops *ops;
	enum sink_kind kind;
	enum sink_format format;
	char uri[PATH_MAX];  /* as configured; the key of its position in the spool */
	char path[PATH_MAX]; /* file, unix: the path; otlp: the request path */
	char host[256], port[16];
	uint64_t max_size; /* file rotation */
	unsigned int keep;
	bool plain; /* otlp: ?compression=none, requests not gzipped */
	bool ack;   /* tcp, unix: the receiver acknowledges records */

	struct spool *spool;
	struct loop *loop;
	struct watch w; /* sockets: readiness */
	sink_loss_fn on_loss;
	void *loss_ctx;

	int fd;
	bool up;	 /* connected / open */
	bool connecting; /* a non-blocking connect is under way */
	uint32_t wanted; /* epoll events registered */
	uint64_t retry_at_ns, connect_started_ns;
	unsigned int backoff_ms;

	struct spool_pos acked; /* delivered: everything before it */
	struct spool_pos next;	/* read from the spool: everything before it */
	uint8_t *buf;		/* bytes taken from the spool, not yet written */
	struct pbjson_buf json; /* or, for --format json, their JSON lines (room kept) */
	struct arena *arena;	/* --format json: the batch's events are decoded into it */
	size_t len, off;	/* of what is being written */
	size_t buf_records;
	uint64_t file_bytes; /* the open file's size, for rotation */

	struct sink_inflight q[SINK_INFLIGHT];
	unsigned int qhead, qlen;
	uint64_t conn_bytes, conn_records, peer_acked;
	uint64_t conn_confirmed; /* records of this connection confirmed */
	uint8_t ackbuf[16];	 /* a partial ack varint */
	size_t acklen;

	struct otlp *otlp; /* the OTLP sink's own state */

	uint64_t delivered; /* records confirmed since start */
	uint64_t connects, failures;
	int last_err;
	char error[160]; /* the last error, "" when healthy */
};

/* 0 when uri names a sink egret can open; otherwise -EINVAL and why in err. */
int sink__parse(struct sink *s, const char *uri, char *err, size_t errsz);
/* Start: open or begin connecting. Failures to reach a receiver are retried, not fatal; a
 * file that cannot be created is (-errno).
 */
int sink__start(struct sink *s, struct spool *spool, struct loop *loop, struct spool_pos from,
		sink_loss_fn on_loss, void *ctx);
/* Move events along: connect when due, write what the spool has, collect confirmations. */
void sink__pump(struct sink *s);
/* SIGHUP: files are reopened (after an outside rotation); others are left alone. */
void sink__reopen(struct sink *s);
/* Stop: what is confirmed stays confirmed; the rest will be sent again next time. */
void sink__close(struct sink *s);
const char *sink__kind_name(enum sink_kind k);
/* "HOST:PORT" or "[V6]:PORT" in hp[0..n); the port may be left out when dflt is given. */
int sink__parse_hostport(const char *hp, size_t n, const char *dflt, char host[256], char port[16]);

/* Helpers shared with the OTLP sink and the tests */
unsigned int sink__backoff_next(unsigned int ms);
void sink__set_error(struct sink *s, int err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void sink__clear_error(struct sink *s);
void sink__down(struct sink *s, int err, const char *what);
/* Close the connection or file, keeping positions (no backoff, no error). */
void sink__disconnect(struct sink *s);
/* The spool evicted what the sink had not delivered: go on from pos, dropping whatever was
 * in flight (it is counted as lost).
 */
void sink__skip(struct sink *s, struct spool_pos pos);
int sink__connect(struct sink *s);
void sink__watch(struct sink *s, uint32_t events);

#endif /* EGRET_SINK_H */
