/* A query from a sandbox: parsed, judged by the domain rules of its sandbox, then refused here
 * or handed to upstream.c; the answer that goes back to the client (UDP or TCP); the table of
 * queries pending.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ldns/ldns.h>
#include <linux/types.h>

#include "egret/policy.h"
#include "engine.h"
#include "resolver.h"
#include "util.h"

/* Send a complete DNS message to the client: a datagram, or a length-prefixed TCP record. */
void query__reply(struct resolver *r, struct dns_query *q, const uint8_t *msg, size_t len)
{
	if (q->conn)
		conn__send(r, q->conn, msg, len);
	else if (q->udp_fd >= 0)
		sendto(q->udp_fd, msg, len, MSG_DONTWAIT, (struct sockaddr *)&q->client,
		       q->client_len);
}

/* A locally made answer: REFUSED, NXDOMAIN or SERVFAIL, with the client's question (dq; NULL
 * once it is upstream: none).
 */
void query__reply_rcode(struct resolver *r, struct dns_query *q, const struct dns_question *dq,
			uint8_t rcode)
{
	uint8_t wire[DNS_BARE_MAX];

	query__reply(r, q, wire, dns__rcode_answer(dq, q->client_id, rcode, wire));
}

void query__free(struct resolver *r, struct dns_query *q)
{
	for (struct dns_query **pp = &r->pending; *pp; pp = &(*pp)->next) {
		if (*pp == q) {
			*pp = q->next;
			r->npending--;
			break;
		}
	}
	upstream__detach(r, q);
	if (q->up.fd >= 0) {
		loop__del(r->loop, &q->up);
		close(q->up.fd);
	}
	if (q->conn)
		q->conn->pending--;
	free(q->msg);
	free(q->up_buf);
	free(q);
}

void query__answer(struct resolver *r, struct dns_query *q, uint8_t *msg, size_t len,
		   const struct dns_answer *ans)
{
	struct answer_list a; /* 17 KiB: not zeroed, its counts are */
	const char *why;

	a.n = 0;
	a.ttl = 0;
	a.opened = 0;
	/* a new name over a bound (other answers took the room since this one was asked) is
	 * refused as at the question: its addresses would not open
	 */
	why = allow__open_answers(r, q, ans, &a);

	if (why) {
		uint8_t rcode = r->o.nxdomain ? LDNS_RCODE_NXDOMAIN : LDNS_RCODE_REFUSED;

		r->st.allowed--; /* counted at its question */
		r->st.refused++;
		q->cached = false; /* refused, not answered from what was kept */
		query__reply_rcode(r, q, NULL, rcode);
		query__emit(r, q, false, rcode, NULL, why);
		query__free(r, q);
		return;
	}
	if (!q->cached)
		cache__store(r, q, msg, len, ans);
	msg[0] = (uint8_t)(q->client_id >> 8);
	msg[1] = (uint8_t)q->client_id;
	query__reply(r, q, msg, len);
	query__emit(r, q, true, ans->rcode, &a, NULL);
	query__free(r, q);
}

/* The query, in the table of pending queries (and counted against its TCP client). */
static struct dns_query *query_new(struct resolver *r, struct dns_listener *l,
				   struct dns_conn *conn, int udp_fd,
				   const struct sockaddr_storage *from, socklen_t fromlen,
				   const struct egret_dns_client *who,
				   const struct dns_question *dq)
{
	struct dns_query *q;

	if (r->npending >= MAX_PENDING || !(q = calloc(1, sizeof(*q))))
		return NULL;
	q->r = r;
	q->l = l;
	q->conn = conn;
	q->udp_fd = udp_fd;
	q->up.fd = -1;
	if (from) {
		memcpy(&q->client, from, fromlen);
		q->client_len = fromlen;
	}
	q->who = *who;
	q->client_id = dq->id;
	q->start_ns = now_ns(CLOCK_MONOTONIC);
	q->deadline_ns = q->start_ns + (uint64_t)r->o.timeout_ms * 1000000ull;
	memcpy(q->name, dq->name, sizeof(q->name));
	q->qtype = dq->type;
	q->next = r->pending;
	r->pending = q;
	r->npending++;
	if (conn)
		conn->pending++;
	return q;
}

/* The domain rules of the query's sandbox on its name (q->rule: the rule that decided). */
static bool query_allowed(struct resolver *r, struct dns_query *q)
{
	const struct sandbox_entry *s = engine__sandbox(r->engine, q->who.sandbox_id);

	/* a sandbox not registered (yet) asks in vain; one in a watched cgroup itself (id 0) has
	 * the global rules
	 */
	if (!s && q->who.sandbox_id)
		return false;
	return engine__domain_verdict(r->engine, s, q->name, q->rule, sizeof(q->rule)) ==
	       EGRET_ACT_ALLOW;
}

/* Why the question is refused before any rule is looked at: a name that is not a host name, a
 * class other than IN (16 bits the sandbox would choose in every query upstream); NULL: the
 * rules decide.
 */
static const char *question_refused(const struct dns_question *dq)
{
	if (!dq->host)
		return "not a host name (a label holds a byte other than a letter, a digit, '-' or "
		       "'_')";
	if (dq->qclass != LDNS_RR_CLASS_IN)
		return "a class other than IN";
	return NULL;
}

/* Answered here: REFUSED (or NXDOMAIN with the option); why: the event's error, if any. */
static void query_refuse(struct resolver *r, struct dns_query *q, const struct dns_question *dq,
			 const char *why)
{
	uint8_t rcode = r->o.nxdomain ? LDNS_RCODE_NXDOMAIN : LDNS_RCODE_REFUSED;

	r->st.refused++;
	r->st.not_host += !dq->host;
	query__reply_rcode(r, q, dq, rcode);
	query__emit(r, q, false, rcode, NULL, why);
	query__free(r, q);
}

static bool opens_addresses(uint16_t type)
{
	return type == LDNS_RR_TYPE_A || type == LDNS_RR_TYPE_AAAA || type == LDNS_RR_TYPE_ANY;
}

/* Allowed: the question alone goes upstream (dns__bare_query), not the client's message. */
static void query_forward(struct resolver *r, struct dns_query *q, const struct dns_question *dq)
{
	r->st.allowed++;
	q->msg = malloc(DNS_BARE_MAX);
	if (!q->msg) {
		query__free(r, q);
		return;
	}
	q->msg_len = dns__bare_query(dq, q->msg);
	if (upstream__send(r, q, false))
		upstream__failed(r, q, "cannot reach the upstream resolver");
}

/* One query from a sandbox. msg is the client's; who says which sandbox sent it. */
void query__handle(struct resolver *r, struct dns_listener *l, struct dns_conn *conn, int udp_fd,
		   const struct sockaddr_storage *from, socklen_t fromlen, const uint8_t *msg,
		   size_t len, const struct egret_dns_client *who)
{
	struct dns_question dq;
	struct dns_query *q;
	const char *why;

	r->st.queries++;
	if (dns__parse_query(msg, len, &dq) == -EBADMSG) {
		r->st.malformed++;
		return;
	}
	q = query_new(r, l, conn, udp_fd, from, fromlen, who, &dq);
	why = question_refused(&dq);
	/* every query draws on the sandbox's 'budget dns'; only what goes upstream on its
	 * 'budget dns-names' (the bytes a tunnel carries out)
	 */
	if (q && !why && budget__over_queries(r, q))
		why = "over the sandbox's DNS query budget";
	if (q && (why || !query_allowed(r, q))) {
		budget__entropy(q);
		query_refuse(r, q, &dq, why);
	} else if (q) {
		budget__entropy(q);
		allow__name_key(q);
		cache__key(q, &dq);
		/* a question whose answer opens addresses (A, AAAA, ANY) needs room for its name
		 * (any other that brings some anyway is bounded at the answer, allow.c), before the
		 * name is charged to the budget of what goes upstream
		 */
		if (opens_addresses(q->qtype) && (why = allow__name_refused(r, q))) {
			r->st.names_full++;
			query_refuse(r, q, &dq, why);
		} else if (cache__answer(r, q, &dq)) {
			/* answered as its sandbox was before: nothing goes upstream, nothing is
			 * charged to what does
			 */
		} else if (budget__over_names(r, q, dq.wire_len)) {
			query_refuse(r, q, &dq, "over the sandbox's DNS name budget");
		} else {
			query_forward(r, q, &dq);
		}
	}
}

void resolver__serve_udp(struct resolver *r, int fd, const struct sockaddr_storage *from,
			 socklen_t fromlen, const uint8_t *msg, size_t len,
			 const struct egret_dns_client *who)
{
	query__handle(r, NULL, NULL, fd, from, fromlen, msg, len, who);
}
