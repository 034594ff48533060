/* The resolver's pure functions of the bytes, which unit tests and fuzz targets call directly:
 * the upstream's address (--upstream-dns, resolv.conf), a query as a sandbox sent it, and an
 * upstream answer as the addresses it gives for the question and the CNAMEs it leads through.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "dns.h"
#include "util.h"

/* The end of the wire name at off (past its root label or its compression pointer), or 0 when
 * it runs past len or is not a name.
 */
static size_t name_end(const uint8_t *m, size_t len, size_t off)
{
	while (off < len) {
		const uint8_t c = m[off];

		if (c == 0)
			return off + 1;
		if ((c & 0xc0) == 0xc0)
			return off + 2 <= len ? off + 2 : 0;
		if (c & 0xc0)
			return 0; /* the reserved label types */
		off += 1u + c;
	}
	return 0;
}

/* What rr_walk() found in a message: the TTL fields of its records (when offs is given), the
 * least TTL, the OPT records of its additional section (the last one's type field at opt),
 * where its last whole record ends.
 */
struct rr_walk {
	uint16_t *offs;
	size_t max, n;
	uint32_t min_ttl;
	unsigned int opts;
	size_t opt, end;
};

/* The questions and records the header's counts promise: 0 when all are whole, -EBADMSG at the
 * first that is not (w says what came before it), -E2BIG at a TTL past w->max.
 */
static int rr_walk(const uint8_t *msg, size_t len, struct rr_walk *w)
{
	size_t off = 12, qd, rrs, first_additional;

	w->n = 0;
	w->opts = 0;
	w->min_ttl = UINT32_MAX;
	w->end = 0;
	if (len < 12 || len > UINT16_MAX)
		return -EBADMSG;
	qd = dns__get16(msg + 4);
	first_additional = (size_t)dns__get16(msg + 6) + dns__get16(msg + 8);
	rrs = first_additional + dns__get16(msg + 10);
	for (size_t i = 0; i < qd; i++) {
		off = name_end(msg, len, off);
		if (!off || off + 4 > len)
			return -EBADMSG;
		off += 4;
		w->end = off;
	}
	for (size_t i = 0; i < rrs; i++) {
		uint16_t type, rdlen;

		off = name_end(msg, len, off);
		if (!off || off + 10 > len)
			return -EBADMSG;
		type = dns__get16(msg + off);
		rdlen = dns__get16(msg + off + 8);
		if (off + 10 + rdlen > len)
			return -EBADMSG;
		if (type == LDNS_RR_TYPE_OPT && i >= first_additional) {
			w->opts++;
			w->opt = off;
		}
		/* OPT's "TTL" is the extended rcode and flags */
		if (type != LDNS_RR_TYPE_OPT) {
			uint32_t ttl = dns__get32(msg + off + 4);

			if (w->offs) {
				if (w->n == w->max)
					return -E2BIG;
				w->offs[w->n] = (uint16_t)(off + 4);
			}
			w->n++;
			/* a TTL with its top bit set is 0 (RFC 2181, 8) */
			ttl = ttl & 0x80000000u ? 0 : ttl;
			if (ttl < w->min_ttl)
				w->min_ttl = ttl;
		}
		off += 10u + rdlen;
		w->end = off;
	}
	return 0;
}

/* ldns_wire2pkt() of msg (len at least 12) without its additional section. libldns 1.8.3
 * (Debian 12's) keeps only the last TSIG record of an additional section and loses the others it
 * reads, where it reads them (after a known type's fields, not at its RDLENGTH): a query with
 * three TSIGs leaked 73 bytes in egretd, at every query a sandbox sent (found by the dns_answer
 * fuzz target). egret needs nothing of that section from ldns: a query's OPT record is read by
 * rr_walk(), an answer's additional records are not looked at.
 */
static ldns_status wire2pkt(ldns_pkt **p, const uint8_t *msg, size_t len)
{
	uint8_t small[1024], *copy = len <= sizeof(small) ? small : malloc(len);
	ldns_status st;

	if (!copy)
		return LDNS_STATUS_MEM_ERR;
	memcpy(copy, msg, len);
	copy[10] = copy[11] = 0; /* ARCOUNT */
	st = ldns_wire2pkt(p, copy, len);
	if (copy != small)
		free(copy);
	return st;
}

/* "192.0.2.53", "192.0.2.53:5353", "2001:db8::53", "[2001:db8::53]:5353" */
int dns__parse_server(const char *text, struct sockaddr_storage *ss, socklen_t *len)
{
	char host[INET6_ADDRSTRLEN + 2];
	const char *port = NULL, *colon = strrchr(text, ':');
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
	uint64_t p = 53;
	size_t hlen;

	memset(ss, 0, sizeof(*ss));
	if (text[0] == '[') {
		const char *end = strchr(text, ']');

		if (!end || (end[1] && end[1] != ':'))
			return -EINVAL;
		hlen = (size_t)(end - text - 1);
		if (hlen >= sizeof(host))
			return -EINVAL;
		memcpy(host, text + 1, hlen);
		host[hlen] = '\0';
		port = end[1] ? end + 2 : NULL;
	} else if (colon && strchr(text, ':') == colon) {
		hlen = (size_t)(colon - text);
		if (hlen >= sizeof(host))
			return -EINVAL;
		memcpy(host, text, hlen);
		host[hlen] = '\0';
		port = colon + 1;
	} else {
		if (strlen(text) >= sizeof(host))
			return -EINVAL;
		strcpy(host, text);
	}
	if (port && (parse_u64(port, 65535, &p) || p == 0))
		return -EINVAL;
	if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
		s4->sin_family = AF_INET;
		s4->sin_port = htons((uint16_t)p);
		*len = sizeof(*s4);
		return 0;
	}
	if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons((uint16_t)p);
		*len = sizeof(*s6);
		return 0;
	}
	return -EINVAL;
}

/* The first "nameserver" of a resolv.conf. */
int dns__resolv_conf_server(const char *path, char *out, size_t size)
{
	char line[512], word[64], addr[128];
	FILE *f = fopen(path, "re");
	int ret = -ENOENT;

	if (!f)
		return -errno;
	while (ret && fgets(line, sizeof(line), f)) {
		if (sscanf(line, " %63s %127s", word, addr) == 2 && !strcmp(word, "nameserver") &&
		    strlen(addr) < size) {
			strcpy(out, addr);
			ret = 0;
		}
	}
	fclose(f);
	return ret;
}

/* A name as ldns prints it (a dot or an odd byte in a label escaped), lower case, without the
 * final dot; "" when there is none.
 */
static void lower_name(const ldns_rdf *rdf, char *out, size_t size)
{
	char *s;
	size_t n;

	/* a host name prints as itself: no need for ldns's printer (a printf a byte) */
	if (rdf && ldns_rdf_get_type(rdf) == LDNS_RDF_TYPE_DNAME &&
	    !dns__host_name(ldns_rdf_data(rdf), ldns_rdf_size(rdf), out, size))
		return;
	s = rdf ? ldns_rdf2str(rdf) : NULL;
	snprintf(out, size, "%s", s ? s : "");
	free(s);
	n = strlen(out);
	if (n > 1 && out[n - 1] == '.')
		out[--n] = '\0';
	for (char *p = out; *p; p++)
		*p = (char)tolower((unsigned char)*p);
}

static bool host_char(uint8_t c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '-' || c == '_';
}

/* The labels of wire into out, for dns__host_name(); out is left unterminated on errors. */
static int host_labels(const uint8_t *wire, size_t len, char *out, size_t size)
{
	size_t i = 0, o = 0;

	for (;;) {
		uint8_t n;

		if (i >= len)
			return -EBADMSG; /* no root label */
		n = wire[i++];
		if (n == 0)
			break;
		if (n > 63 || n > len - i)
			return -EBADMSG;
		if (o + (o ? 1 : 0) + n > DNS_HOST_MAX || o + (o ? 1 : 0) + n >= size)
			return -EINVAL; /* longer than a host name can be */
		if (o)
			out[o++] = '.';
		for (size_t j = 0; j < n; j++) {
			uint8_t c = wire[i + j];

			if (!host_char(c))
				return -EINVAL;
			out[o++] = (char)(c >= 'A' && c <= 'Z' ? c + ('a' - 'A') : c);
		}
		i += n;
	}
	out[o] = '\0';
	if (i != len)
		return -EBADMSG;
	return o ? 0 : -EINVAL; /* the root is no host */
}

int dns__host_name(const uint8_t *wire, size_t len, char *out, size_t size)
{
	int ret = size ? host_labels(wire, len, out, size) : -EINVAL;

	if (ret && size)
		out[0] = '\0';
	return ret;
}

int dns__parse_query(const uint8_t *msg, size_t len, struct dns_question *q)
{
	struct rr_walk w = { 0 };
	size_t off = 12;
	int ret;

	memset(q, 0, sizeof(*q));
	/* every record whole (by its RDLENGTH), at most one OPT (RFC 6891, 6.1.1); a query (QR
	 * 0) of opcode QUERY with one question
	 */
	if (rr_walk(msg, len, &w) || w.opts > 1 || (msg[2] & 0x80) || (msg[2] & 0x78) ||
	    dns__get16(msg + 4) != 1)
		return -EBADMSG;
	/* the question's name, whole (rr_walk) and uncompressed (nothing before it to point at) */
	while (msg[off]) {
		if (msg[off] & 0xc0)
			return -EBADMSG;
		off += 1u + msg[off];
	}
	off++;
	if (off - 12 > sizeof(q->wire))
		return -EBADMSG;
	q->wire_len = (uint8_t)(off - 12);
	memcpy(q->wire, msg + 12, q->wire_len);
	q->id = dns__get16(msg);
	q->type = dns__get16(msg + off);
	q->qclass = dns__get16(msg + off + 2);
	q->rd = !!(msg[2] & 0x01);
	q->ad = !!(msg[3] & 0x20);
	q->cd = !!(msg[3] & 0x10);
	/* OPT: its CLASS the payload size, the DO bit the top of the flags after the extended
	 * rcode and the version
	 */
	q->edns = w.opts == 1;
	q->edns_size = q->edns ? dns__get16(msg + w.opt + 2) : 0;
	q->edns_do = q->edns && (msg[w.opt + 6] & 0x80);
	ret = dns__host_name(q->wire, q->wire_len, q->name, sizeof(q->name));
	q->host = ret == 0;
	if (ret) {
		/* for the event, as ldns escapes it */
		ldns_rdf *rdf = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_DNAME, q->wire_len, q->wire);

		if (rdf)
			lower_name(rdf, q->name, sizeof(q->name));
		ldns_rdf_deep_free(rdf);
		ret = -EINVAL;
	}
	return ret;
}

/* q's question (name as asked, type, class) after a header in out: where it ends */
static size_t put_question(const struct dns_question *q, uint8_t *out)
{
	size_t n = 12;

	memcpy(out + n, q->wire, q->wire_len);
	n += q->wire_len;
	out[n++] = (uint8_t)(q->type >> 8);
	out[n++] = (uint8_t)q->type;
	out[n++] = (uint8_t)(q->qclass >> 8);
	out[n++] = (uint8_t)q->qclass;
	return n;
}

size_t dns__rcode_answer(const struct dns_question *q, uint16_t id, uint8_t rcode,
			 uint8_t out[DNS_BARE_MAX])
{
	memset(out, 0, 12);
	out[0] = (uint8_t)(id >> 8);
	out[1] = (uint8_t)id;
	out[2] = (uint8_t)(0x80 | (!q || q->rd ? 0x01 : 0)); /* QR, opcode QUERY, RD as asked */
	out[3] = (uint8_t)(0x80 | (rcode & 0x0f));	     /* RA, the rcode */
	if (!q)
		return 12;
	out[5] = 1;
	return put_question(q, out);
}

size_t dns__bare_query(const struct dns_question *q, uint8_t out[DNS_BARE_MAX])
{
	size_t n;

	memset(out, 0, 12);
	out[2] = q->rd ? 0x01 : 0; /* QR 0, opcode QUERY, RD */
	out[3] = (uint8_t)((q->ad ? 0x20 : 0) | (q->cd ? 0x10 : 0));
	out[5] = 1; /* one question */
	out[11] = q->edns ? 1 : 0;
	n = put_question(q, out);
	if (q->edns) {
		uint16_t size = q->edns_size < 512 ? 512 : q->edns_size;
		/* root name, OPT, payload size, extended rcode 0, version 0, DO, no options */
		const uint8_t opt[11] = { 0, 0, 41, 0, 0, 0, 0, q->edns_do ? 0x80 : 0, 0, 0, 0 };
		uint8_t *o = out + n;

		if (size > DNS_EDNS_UDP)
			size = DNS_EDNS_UDP;
		memcpy(o, opt, sizeof(opt));
		o[3] = (uint8_t)(size >> 8);
		o[4] = (uint8_t)size;
		n += sizeof(opt);
	}
	return n;
}

static bool in_chain(const struct dns_answer *a, const char *name, const char *n)
{
	if (!strcmp(name, n))
		return true;
	for (unsigned int i = 0; i < a->ncnames; i++) {
		if (!strcmp(a->cnames[i], n))
			return true;
	}
	return false;
}

/* The CNAMEs that lead on from name, however the answer orders them. */
static void answer_chain(const ldns_rr_list *ans, size_t n, const char *name, struct dns_answer *a)
{
	char owner[DNS_NAME_LEN], target[DNS_NAME_LEN];
	bool grew = true;

	while (grew && a->ncnames < DNS_CNAME_DEPTH) {
		grew = false;
		for (size_t i = 0; i < n && a->ncnames < DNS_CNAME_DEPTH; i++) {
			ldns_rr *rr = ldns_rr_list_rr(ans, i);

			if (ldns_rr_get_type(rr) != LDNS_RR_TYPE_CNAME || !ldns_rr_rdf(rr, 0))
				continue;
			lower_name(ldns_rr_owner(rr), owner, sizeof(owner));
			if (!in_chain(a, name, owner))
				continue;
			lower_name(ldns_rr_rdf(rr, 0), target, sizeof(target));
			if (in_chain(a, name, target))
				continue;
			memcpy(a->cnames[a->ncnames++], target, sizeof(target));
			grew = true;
		}
	}
}

/* The A and AAAA records owned by name or a name of its CNAME chain. */
static void answer_addrs(const ldns_rr_list *ans, size_t n, const char *name, struct dns_answer *a)
{
	char owner[DNS_NAME_LEN];

	a->addrs = n ? calloc(n, sizeof(*a->addrs)) : NULL;
	for (size_t i = 0; a->addrs && i < n; i++) {
		ldns_rr *rr = ldns_rr_list_rr(ans, i);
		ldns_rr_type t = ldns_rr_get_type(rr);
		const ldns_rdf *rd = ldns_rr_rdf(rr, 0);
		struct dns_addr *d = &a->addrs[a->naddrs];

		if ((t != LDNS_RR_TYPE_A && t != LDNS_RR_TYPE_AAAA) || !rd)
			continue;
		lower_name(ldns_rr_owner(rr), owner, sizeof(owner));
		if (!in_chain(a, name, owner))
			continue;
		d->addr[2] = htonl(0xffff);
		if (t == LDNS_RR_TYPE_A && ldns_rdf_size(rd) == 4)
			memcpy(&d->addr[3], ldns_rdf_data(rd), 4);
		else if (t == LDNS_RR_TYPE_AAAA && ldns_rdf_size(rd) == 16)
			memcpy(d->addr, ldns_rdf_data(rd), 16);
		else
			continue;
		d->ttl = ldns_rr_ttl(rr);
		d->type = (uint16_t)t;
		a->naddrs++;
	}
}

int dns__parse_answer(const uint8_t *msg, size_t len, const char *name, uint16_t type,
		      struct dns_answer *a)
{
	char qname[DNS_NAME_LEN];
	const ldns_rr_list *ans;
	ldns_pkt *resp = NULL;
	ldns_rr *qrr;
	size_t n;
	int ret = 0;

	memset(a, 0, sizeof(*a));
	if (len < 12 || wire2pkt(&resp, msg, len) != LDNS_STATUS_OK || !ldns_pkt_qr(resp) ||
	    ldns_pkt_qdcount(resp) != 1 || !(qrr = ldns_rr_list_rr(ldns_pkt_question(resp), 0))) {
		ldns_pkt_free(resp);
		return -EBADMSG;
	}
	lower_name(ldns_rr_owner(qrr), qname, sizeof(qname));
	if (strcmp(qname, name) || ldns_rr_get_type(qrr) != type) {
		ret = -ENOENT;
		goto out;
	}
	a->rcode = (uint8_t)ldns_pkt_get_rcode(resp);
	a->truncated = ldns_pkt_tc(resp);
	ans = ldns_pkt_answer(resp);
	n = ans ? ldns_rr_list_rr_count(ans) : 0;
	answer_chain(ans, n, name, a);
	answer_addrs(ans, n, name, a);
out:
	ldns_pkt_free(resp);
	return ret;
}

void dns__answer_free(struct dns_answer *a)
{
	free(a->addrs);
	a->addrs = NULL;
	a->naddrs = 0;
}

int dns__ttl_offsets(const uint8_t *msg, size_t len, uint16_t *offs, size_t max, uint32_t *min_ttl)
{
	struct rr_walk w = { .offs = offs, .max = max };
	int err = rr_walk(msg, len, &w);

	if (err)
		return err;
	if (dns__get16(msg + 4) != 1 || w.end != len)
		return -EBADMSG;
	*min_ttl = w.n ? w.min_ttl : 0;
	return (int)w.n;
}
