/* The otlp+http sink; see otlp.h. This file is the exchange: a batch from the spool as one
 * HTTP request, its response, retries and Loss; otlp_encode.c turns the batch's Events into
 * the request.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http.h"
#include "log.h"
#include "opentelemetry/proto/collector/logs/v1/logs_service.pb-c.h"
#include "otlp.h"
#include "sink.h"
#include "util.h"

enum otlp_state {
	OTLP_IDLE,
	OTLP_SENDING,
	OTLP_WAITING
};

/* One batch as a whole HTTP request, and what it holds */
struct otlp_batch {
	uint8_t *req;		   /* NULL: none */
	size_t req_start, req_len; /* the request is req[req_start, req_len) */
	struct spool_pos start, end;
	size_t records;
	uint64_t first_seq, last_seq;
	char stream_id[33];
};

struct otlp {
	enum otlp_state state;
	uint8_t *req; /* the whole HTTP request of the batch in hand: req[req_start, req_len) */
	size_t req_start, req_len, req_off;
	struct spool_pos batch_end;
	size_t records;
	uint64_t first_seq, last_seq;
	char stream_id[33];
	/* the batch after it, encoded while the receiver works on this one (its answer is what
	 * an exchange mostly waits for): sent as soon as this one is answered
	 */
	struct otlp_batch ahead;
	struct otlp_encoder *enc;
	char *resp;
	size_t resp_len;
	uint64_t sent_ns;
	uint64_t requests, retries;
};

/* ---- the exchange ---------------------------------------------------------------------------- */

/* The batch from *pos on as a whole HTTP request into b; *pos normalized (past a finished
 * segment). False when there is none.
 */
static bool encode_batch(struct sink *s, struct spool_pos *pos, struct otlp_batch *b)
{
	uint8_t *body = NULL;
	size_t count, blen = 0, hlen;
	ssize_t n;
	char hdr[OTLP_HEAD_ROOM];

	n = spool__read(s->spool, pos, s->buf, OTLP_BATCH_BYTES, OTLP_BATCH_RECORDS, &count);
	if (n <= 0) {
		if (n < 0)
			sink__set_error(s, (int)n, "reading the spool: %s", strerror((int)-n));
		return false;
	}
	/* the body is encoded after room for the HTTP head, which goes in front of it */
	if (otlp__encode(s->otlp->enc, s->buf, (size_t)n, OTLP_HEAD_ROOM, &body, &blen, &b->records,
			 &b->first_seq, &b->last_seq, b->stream_id)) {
		sink__set_error(s, -ENOMEM, "cannot encode a batch");
		return false;
	}
	b->start = *pos;
	b->end = *pos;
	b->end.off += (uint64_t)n;
	hlen = (size_t)snprintf(hdr, sizeof(hdr),
				"POST %s HTTP/1.1\r\nHost: %s:%s\r\nUser-Agent: egret/%s\r\n"
				"Content-Type: application/x-protobuf\r\n%s"
				"Content-Length: %zu\r\n\r\n",
				s->path, s->host, s->port, EGRET_VERSION,
				s->plain ? "" : "Content-Encoding: gzip\r\n", blen);
	if (hlen >= sizeof(hdr)) { /* not with OTLP_URI_MAX, checked at parse */
		free(body);
		sink__set_error(s, -EINVAL, "the request's head is longer than %zu bytes",
				sizeof(hdr));
		return false;
	}
	memcpy(body + OTLP_HEAD_ROOM - hlen, hdr, hlen);
	b->req = body;
	b->req_start = OTLP_HEAD_ROOM - hlen;
	b->req_len = OTLP_HEAD_ROOM + blen;
	return true;
}

/* b becomes the batch in hand */
static void take_batch(struct sink *s, struct otlp *o, struct otlp_batch *b)
{
	/* acked may have been normalized past a finished segment */
	s->acked.seg = b->start.seg;
	s->acked.off = b->start.off;
	o->req = b->req;
	o->req_start = b->req_start;
	o->req_len = b->req_len;
	o->req_off = o->req_start;
	o->batch_end = b->end;
	o->records = b->records;
	o->first_seq = b->first_seq;
	o->last_seq = b->last_seq;
	memcpy(o->stream_id, b->stream_id, sizeof(o->stream_id));
	b->req = NULL;
}

static void drop_ahead(struct otlp *o)
{
	free(o->ahead.req);
	o->ahead.req = NULL;
}

/* The next batch from the spool as a whole HTTP request; false when there is none. The one
 * encoded ahead when it starts where the one in hand ended.
 */
static bool build_request(struct sink *s, struct otlp *o)
{
	struct spool_pos pos = s->acked;
	struct otlp_batch b = { 0 };

	if (o->ahead.req) {
		if (o->ahead.start.seg == pos.seg && o->ahead.start.off == pos.off) {
			take_batch(s, o, &o->ahead);
			return true;
		}
		drop_ahead(o); /* it starts elsewhere (pos normalized past a segment): again */
	}
	if (!encode_batch(s, &pos, &b))
		return false;
	take_batch(s, o, &b);
	return true;
}

/* While the receiver works on the batch in hand: the one after it, encoded */
static void encode_ahead(struct sink *s, struct otlp *o)
{
	struct spool_pos pos = o->batch_end;

	if (o->ahead.req || !o->req)
		return;
	if (!encode_batch(s, &pos, &o->ahead))
		o->ahead.req = NULL;
}

static void drop_request(struct otlp *o)
{
	free(o->req);
	o->req = NULL;
	o->req_len = o->req_off = 0;
	o->resp_len = 0;
	o->state = OTLP_IDLE;
}

/* The connection broke: the request is sent again, on a new one, after the backoff. */
static void conn_failed(struct sink *s, struct otlp *o, int err, const char *what)
{
	o->state = OTLP_IDLE;
	o->resp_len = 0;
	o->req_off = o->req_start;
	sink__down(s, err, what);
}

static void batch_done(struct sink *s, struct otlp *o, bool delivered)
{
	s->acked = s->next = o->batch_end;
	if (delivered)
		s->delivered += o->records;
	drop_request(o);
	/* the batch encoded ahead starts at batch_end: build_request takes it */
}

static void report_rejected(struct sink *s, struct otlp *o, uint64_t count, const char *why)
{
	struct sink_loss l = { .count = count, .first_seq = o->first_seq, .last_seq = o->last_seq };

	snprintf(l.stream_id, sizeof(l.stream_id), "%s", o->stream_id);
	snprintf(l.detail, sizeof(l.detail), "%s", why);
	log_err("sink %s: %s", s->uri, why);
	if (s->on_loss)
		s->on_loss(s->loss_ctx, s, &l);
}

static void handle_response(struct sink *s, struct otlp *o, const struct http_response *r)
{
	char why[256];

	if (r->status >= 200 && r->status < 300) {
		Opentelemetry__Proto__Collector__Logs__V1__ExportLogsServiceResponse *resp = NULL;

		if (r->body_len && strstr(r->content_type, "protobuf"))
			resp = opentelemetry__proto__collector__logs__v1__export_logs_service_response__unpack(
				NULL, r->body_len, (uint8_t *)o->resp + r->body_off);
		if (resp && resp->partial_success &&
		    resp->partial_success->rejected_log_records > 0) {
			snprintf(why, sizeof(why), "the receiver rejected %lld of %zu records: %s",
				 (long long)resp->partial_success->rejected_log_records, o->records,
				 resp->partial_success->error_message);
			report_rejected(s, o, (uint64_t)resp->partial_success->rejected_log_records,
					why);
		}
		if (resp)
			opentelemetry__proto__collector__logs__v1__export_logs_service_response__free_unpacked(
				resp, NULL);
		batch_done(s, o, true);
		s->backoff_ms = 0;
		sink__clear_error(s);
	} else if (r->status == 429 || r->status == 502 || r->status == 503 || r->status == 504) {
		long wait = http__retry_after(r->retry_after, time(NULL));
		unsigned int ms;

		if (wait > OTLP_RETRY_MAX_S)
			wait = OTLP_RETRY_MAX_S;
		s->backoff_ms = sink__backoff_next(s->backoff_ms);
		ms = wait >= 0 ? (unsigned int)wait * 1000 : s->backoff_ms;
		s->retry_at_ns = now_ns(CLOCK_MONOTONIC) + ms * 1000000ull;
		o->retries++;
		o->state = OTLP_IDLE;
		o->req_off = o->req_start;
		o->resp_len = 0;
		sink__set_error(s, -EAGAIN, "HTTP %d%s%s; sending again in %u ms", r->status,
				r->retry_after[0] ? ", Retry-After " : "", r->retry_after, ms);
	} else {
		snprintf(why, sizeof(why), "HTTP %d for %zu records (seq %llu-%llu): %.*s",
			 r->status, o->records, (unsigned long long)o->first_seq,
			 (unsigned long long)o->last_seq,
			 (int)(r->body_len < 120 ? r->body_len : 120), o->resp + r->body_off);
		report_rejected(s, o, o->records, why);
		batch_done(s, o, false);
	}
	if (r->close)
		sink__disconnect(s); /* the receiver ends the connection: a new one next time */
}

/* Read what the receiver said; false when the connection is gone. */
static bool read_response(struct sink *s, struct otlp *o)
{
	struct http_response r;
	bool eof = false;
	int rc;

	for (;;) {
		ssize_t n;

		if (o->resp_len == HTTP_MAX_RESPONSE) {
			conn_failed(s, o, -EMSGSIZE, "response too large");
			return false;
		}
		n = recv(s->fd, o->resp + o->resp_len, HTTP_MAX_RESPONSE - o->resp_len,
			 MSG_DONTWAIT);
		if (n > 0) {
			o->resp_len += (size_t)n;
			continue;
		}
		if (n == 0)
			eof = true;
		else if (errno != EAGAIN && errno != EINTR) {
			conn_failed(s, o, -errno, "read");
			return false;
		}
		break;
	}
	rc = http__parse_response(o->resp, o->resp_len, eof, &r);
	if (rc < 0) {
		conn_failed(s, o, -EBADMSG, "the receiver's answer is not HTTP");
		return false;
	}
	if (rc == 0) {
		if (eof) {
			conn_failed(s, o, -ECONNRESET, "the receiver closed the connection");
			return false;
		}
		if (now_ns(CLOCK_MONOTONIC) - o->sent_ns > OTLP_TIMEOUT_NS) {
			conn_failed(s, o, -ETIMEDOUT, "no answer");
			return false;
		}
		return true;
	}
	o->state = OTLP_IDLE;
	if (eof)
		r.close = true;
	handle_response(s, o, &r);
	return true;
}

static void otlp_pump(struct sink *s)
{
	struct otlp *o = s->otlp;

	for (int round = 0; round < 64; round++) {
		if (o->state == OTLP_IDLE) {
			if (now_ns(CLOCK_MONOTONIC) < s->retry_at_ns)
				return;
			if (!o->req && !build_request(s, o))
				return;
			if (!s->up && !s->connecting && sink__connect(s))
				return;
			if (s->connecting) {
				if (now_ns(CLOCK_MONOTONIC) - s->connect_started_ns >
				    OTLP_TIMEOUT_NS / 3)
					conn_failed(s, o, -ETIMEDOUT, "connect");
				return;
			}
			o->state = OTLP_SENDING;
			o->req_off = o->req_start;
			o->resp_len = 0;
			o->requests++;
		}
		if (o->state == OTLP_SENDING) {
			while (o->req_off < o->req_len) {
				ssize_t n =
					send(s->fd, o->req + o->req_off, o->req_len - o->req_off,
					     MSG_NOSIGNAL | MSG_DONTWAIT);

				if (n < 0 && errno == EINTR)
					continue;
				if (n < 0 && errno == EAGAIN) {
					sink__watch(s, EPOLLOUT);
					return;
				}
				if (n < 0) {
					conn_failed(s, o, -errno, "send");
					return;
				}
				o->req_off += (size_t)n;
			}
			o->state = OTLP_WAITING;
			o->sent_ns = now_ns(CLOCK_MONOTONIC);
			sink__watch(s, EPOLLIN);
			encode_ahead(s, o);
		}
		if (o->state == OTLP_WAITING) {
			if (!read_response(s, o) || o->state == OTLP_WAITING)
				return;
		}
	}
}

static void on_otlp_io(struct watch *w, uint32_t events)
{
	struct sink *s = w->data;

	(void)events;
	if (s->connecting) {
		int soerr = 0;
		socklen_t l = sizeof(soerr);

		s->connecting = false;
		if (getsockopt(s->fd, SOL_SOCKET, SO_ERROR, &soerr, &l) || soerr) {
			conn_failed(s, s->otlp, -(soerr ? soerr : errno), "connect");
			return;
		}
		s->up = true;
	}
	otlp_pump(s);
}

static int otlp_start(struct sink *s)
{
	s->otlp = calloc(1, sizeof(*s->otlp));
	if (!s->otlp)
		return -ENOMEM;
	s->otlp->resp = malloc(HTTP_MAX_RESPONSE + 1);
	s->otlp->enc = otlp__encoder_new(!s->plain);
	if (!s->otlp->resp || !s->otlp->enc) {
		free(s->otlp->resp);
		otlp__encoder_free(s->otlp->enc);
		free(s->otlp);
		s->otlp = NULL;
		return -ENOMEM;
	}
	s->w.fn = on_otlp_io;
	return 0;
}

static void otlp_reset(struct sink *s)
{
	if (s->otlp) {
		drop_request(s->otlp);
		drop_ahead(s->otlp);
	}
}

static void otlp_close(struct sink *s)
{
	if (!s->otlp)
		return;
	free(s->otlp->req);
	drop_ahead(s->otlp);
	free(s->otlp->resp);
	otlp__encoder_free(s->otlp->enc);
	free(s->otlp);
	s->otlp = NULL;
}

const struct sink_ops otlp_sink_ops = {
	.start = otlp_start, .pump = otlp_pump, .reset = otlp_reset, .close = otlp_close
};
