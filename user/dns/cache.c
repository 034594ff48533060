/* Answers kept to answer a sandbox's repeats of a question without going upstream: a query
 * costs egretd one datagram in and one out instead of two of each (README "DNS", the cache).
 *
 * An answer is kept for the sandbox that asked (a sandbox never learns from the timing of an
 * answer what another asked), under everything its query upstream was made of but the case of
 * the name, for the least TTL of its records (at most --dns-max-ttl). Only a whole NOERROR
 * answer over UDP with a TTL is kept. A repeat is judged by the rules of the moment first (an
 * answer kept is never released for a name the rules no longer allow), then answered with the
 * TTLs counted down and its addresses opened as the first answer's were (allow.c: the same
 * bounds, a map write where one is due, before the answer is released). Bounded by --dns-cache
 * answers of at most CACHE_BLOB bytes, a quarter of them for one sandbox; what expired goes at
 * the resolver's sweep or when found; a sandbox's go with it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ldns/ldns.h>

#include "resolver.h"
#include "util.h"

/* answers one sandbox holds: a struct htab entry keyed by the sandbox and a 1 */
struct cache_per {
	uint64_t sandbox;
	uint32_t one;
	uint32_t n;
};

static struct cache_per *per(struct resolver *r, uint64_t sandbox, bool add)
{
	const struct cache_per k = { .sandbox = sandbox, .one = 1 };

	return add ? htab__insert(&r->cache_per, &k, NULL) : htab__find(&r->cache_per, &k);
}

static struct dns_addr *blob_addrs(const struct cache_entry *ce)
{
	return ce->blob;
}

static uint16_t *blob_ttls(const struct cache_entry *ce)
{
	return (uint16_t *)(blob_addrs(ce) + ce->naddrs);
}

static char *blob_cnames(const struct cache_entry *ce)
{
	return (char *)(blob_ttls(ce) + ce->nttl);
}

static uint8_t *blob_wire(const struct cache_entry *ce)
{
	return (uint8_t *)blob_cnames(ce) + ce->cnames_len;
}

/* ce goes (its key copied first: the removal shifts entries), given back to its sandbox */
static void forget(struct resolver *r, struct cache_entry *ce)
{
	const struct cache_key k = ce->key;
	struct cache_per *p = per(r, k.sandbox, false);

	free(ce->blob);
	htab__remove(&r->cache, &k);
	if (p && p->n && !--p->n) {
		const struct cache_per pk = *p;

		htab__remove(&r->cache_per, &pk);
	}
}

void cache__key(struct dns_query *q, const struct dns_question *dq)
{
	uint16_t size = dq->edns_size < 512 ? 512 : dq->edns_size;

	memset(&q->ck, 0, sizeof(q->ck));
	q->ck.sandbox = q->who.sandbox_id;
	memcpy(q->ck.digest, q->nk.digest, sizeof(q->ck.digest));
	q->ck.qtype = dq->type;
	/* the payload size as dns__bare_query sends it */
	q->ck.edns_size = dq->edns ? (size > DNS_EDNS_UDP ? DNS_EDNS_UDP : size) : 0;
	q->ck.flags = (uint8_t)((dq->rd ? CACHE_RD : 0) | (dq->ad ? CACHE_AD : 0) |
				(dq->cd ? CACHE_CD : 0) | (dq->edns ? CACHE_EDNS : 0) |
				(dq->edns && dq->edns_do ? CACHE_DO : 0));
	q->qname_len = dq->wire_len;
}

static uint8_t lower(uint8_t c)
{
	return c >= 'A' && c <= 'Z' ? (uint8_t)(c | 0x20) : c;
}

/* the same wire name but for the case of its letters */
static bool same_name(const uint8_t *a, const uint8_t *b, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		if (lower(a[i]) != lower(b[i]))
			return false;
	}
	return true;
}

bool cache__answer(struct resolver *r, struct dns_query *q, const struct dns_question *dq)
{
	struct dns_addr addrs[CACHE_ADDRS];
	uint8_t msg[DNS_EDNS_UDP];
	struct dns_answer ans;
	struct cache_entry *ce;
	unsigned int i = 0;
	uint64_t now;
	uint32_t age;
	size_t len;

	if (!r->o.cache || !(ce = htab__find(&r->cache, &q->ck)))
		return false;
	now = now_ns(CLOCK_BOOTTIME);
	if (now >= ce->expires_ns) {
		forget(r, ce);
		return false;
	}
	/* the name as this client wrote it (case and all) in the question it gets back */
	if (ce->qname_len != dq->wire_len || !same_name(blob_wire(ce) + 12, dq->wire, dq->wire_len))
		return false;
	age = (uint32_t)((now - ce->stored_ns) / 1000000000ull);
	len = ce->len;
	memcpy(msg, blob_wire(ce), len);
	memcpy(msg + 12, dq->wire, dq->wire_len);
	for (i = 0; i < ce->nttl; i++) {
		uint8_t *p = msg + blob_ttls(ce)[i];
		const uint32_t ttl = dns__get32(p);

		dns__put32(p, ttl > age ? ttl - age : 0);
	}
	ans.rcode = ce->rcode;
	ans.truncated = false;
	ans.ncnames = ce->ncnames;
	i = 0;
	for (const char *c = blob_cnames(ce); i < ce->ncnames; c += strlen(c) + 1)
		memcpy(ans.cnames[i++], c, strlen(c) + 1);
	ans.naddrs = ce->naddrs;
	ans.addrs = addrs;
	for (i = 0; i < ce->naddrs; i++) {
		addrs[i] = blob_addrs(ce)[i];
		addrs[i].ttl = addrs[i].ttl > age ? addrs[i].ttl - age : 0;
	}
	q->cached = true;
	r->st.allowed++;
	r->st.cache_hits++;
	query__answer(r, q, msg, len, &ans);
	return true;
}

/* The length of the question's name at offset 12 when it is a whole name, uncompressed */
static size_t question_name_len(const uint8_t *msg, size_t len)
{
	size_t off = 12;

	while (off < len && msg[off] && !(msg[off] & 0xc0))
		off += 1u + msg[off];
	return off < len && !msg[off] ? off + 1 - 12 : 0;
}

void cache__store(struct resolver *r, const struct dns_query *q, const uint8_t *msg, size_t len,
		  const struct dns_answer *ans)
{
	uint16_t offs[CACHE_TTLS];
	struct cache_entry *ce;
	struct cache_per *p = NULL;
	uint32_t min_ttl;
	size_t size, cnames_len = 0;
	bool added;
	void *blob;
	int n;

	if (!r->o.cache || q->gone || q->up_tcp || ans->rcode != LDNS_RCODE_NOERROR ||
	    ans->truncated || len > DNS_EDNS_UDP || ans->naddrs > CACHE_ADDRS ||
	    question_name_len(msg, len) != q->qname_len)
		return;
	n = dns__ttl_offsets(msg, len, offs, CACHE_TTLS, &min_ttl);
	if (n <= 0 || !min_ttl)
		return;
	if (min_ttl > r->o.max_ttl)
		min_ttl = r->o.max_ttl;
	ce = htab__find(&r->cache, &q->ck);
	if (!ce) {
		p = per(r, q->ck.sandbox, false);
		if (r->cache.used >= r->o.cache ||
		    (p && p->n >= (r->o.cache / 4 ? r->o.cache / 4 : 1))) {
			r->st.cache_full++;
			return;
		}
	}
	for (unsigned int i = 0; i < ans->ncnames; i++)
		cnames_len += strlen(ans->cnames[i]) + 1;
	size = ans->naddrs * sizeof(struct dns_addr) + (size_t)n * sizeof(uint16_t) + cnames_len +
	       len;
	if (size > CACHE_BLOB)
		return;
	blob = malloc(size);
	if (!blob)
		return;
	ce = htab__insert(&r->cache, &q->ck, &added);
	if (ce && added && !(p = per(r, q->ck.sandbox, true))) {
		htab__remove(&r->cache, &q->ck);
		ce = NULL;
	}
	if (!ce) {
		free(blob);
		return;
	}
	if (added)
		p->n++;
	else
		free(ce->blob); /* asked twice before the first answer came: the later kept */
	ce->blob = blob;
	ce->stored_ns = now_ns(CLOCK_BOOTTIME);
	ce->expires_ns = ce->stored_ns + (uint64_t)min_ttl * 1000000000ull;
	ce->len = (uint16_t)len;
	ce->nttl = (uint16_t)n;
	ce->naddrs = (uint16_t)ans->naddrs;
	ce->rcode = ans->rcode;
	ce->ncnames = (uint8_t)ans->ncnames;
	ce->cnames_len = (uint16_t)cnames_len;
	ce->qname_len = q->qname_len;
	memcpy(blob_addrs(ce), ans->addrs, ans->naddrs * sizeof(struct dns_addr));
	memcpy(blob_ttls(ce), offs, (size_t)n * sizeof(uint16_t));
	for (unsigned int i = 0, o = 0; i < ans->ncnames; i++) {
		const size_t l = strlen(ans->cnames[i]) + 1;

		memcpy(blob_cnames(ce) + o, ans->cnames[i], l);
		o += (unsigned int)l;
	}
	memcpy(blob_wire(ce), msg, len);
}

/* A removal shifts later entries back into slot i: slot i is looked at again. */
static void forget_where(struct resolver *r, bool (*gone)(const struct cache_entry *, uint64_t),
			 uint64_t arg)
{
	for (size_t i = 0; i < r->cache.cap;) {
		struct cache_entry *ce = htab__at(&r->cache, i);

		if (ce && gone(ce, arg))
			forget(r, ce);
		else
			i++;
	}
}

static bool expired(const struct cache_entry *ce, uint64_t now)
{
	return ce->expires_ns <= now;
}

static bool of_sandbox(const struct cache_entry *ce, uint64_t sandbox)
{
	return ce->key.sandbox == sandbox;
}

void cache__sweep(struct resolver *r, uint64_t now)
{
	if (r->cache.used)
		forget_where(r, expired, now);
}

void cache__sandbox_gone(struct resolver *r, uint64_t sandbox)
{
	if (per(r, sandbox, false))
		forget_where(r, of_sandbox, sandbox);
}

size_t cache__count(const struct resolver *r)
{
	return r->cache.used;
}

int cache__init(struct resolver *r)
{
	int err = htab__init(&r->cache, sizeof(struct cache_entry), sizeof(struct cache_key), 0);

	if (err)
		return err;
	err = htab__init(&r->cache_per, sizeof(struct cache_per), offsetof(struct cache_per, n), 0);
	if (err)
		htab__free(&r->cache);
	return err;
}

void cache__free(struct resolver *r)
{
	for (size_t i = 0; i < r->cache.cap; i++) {
		struct cache_entry *ce = htab__at(&r->cache, i);

		if (ce)
			free(ce->blob);
	}
	htab__free(&r->cache);
	htab__free(&r->cache_per);
}
