/* Fuzz target: a DNS query as a sandbox sends it to egret's resolver (dns__parse_query, the
 * parse query__handle() runs before any rule is looked at), and the same bytes as a wire name
 * (dns__host_name).
 * Invariants: a query read has one question and QR 0, opcode QUERY, and the REFUSED made for
 * it (dns__rcode_answer) is an answer ldns reads back with that question; a name accepted is a host name (labels of 1-63 letters, digits, '-', '_', at most
 * 253 characters, lower case) that stands for exactly the labels of the question; the domain
 * rules' verdict on it is the verdict of the same rules matched label by label; what goes
 * upstream for it (dns__bare_query) is a query of that question alone, with no answer, authority
 * or additional record but an OPT without options when the client sent one.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>
#include <linux/types.h>

#include "dns.h"
#include "egret/policy.h"
#include "engine.h"

static struct engine eng;

static const char rules[] = "allow domain *.example.org\n"
			    "allow domain a.example.com\n"
			    "deny domain evil.example.org\n"
			    "allow domain *.b-c_d.test\n";

static void setup(void)
{
	char err[POLICY_ERR_LEN];
	FILE *f = fmemopen((void *)rules, strlen(rules), "r");

	policy__init(&eng.pol);
	if (!f || policy__parse(&eng.pol, "fuzz", f, false, err, sizeof(err)))
		abort();
	fclose(f);
}

static void check_host_name(const char *name)
{
	size_t label = 0, len = strlen(name);

	if (!len || len > 253 || name[0] == '.' || name[len - 1] == '.')
		abort();
	for (const char *p = name; *p; p++) {
		if (*p == '.') {
			if (!label)
				abort();
			label = 0;
			continue;
		}
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' ||
		      *p == '_') ||
		    ++label > 63)
			abort();
	}
}

/* does rule (a domain, maybe "*."-prefixed) cover name, comparing whole labels? */
static bool covers_by_labels(const char *rule, const char *name)
{
	bool wild = !strncmp(rule, "*.", 2);
	const char *base = wild ? rule + 2 : rule;
	size_t bl = strlen(base), nl = strlen(name);

	if (!wild)
		return !strcmp(base, name);
	return nl > bl + 1 && name[nl - bl - 1] == '.' && !strcmp(name + nl - bl, base);
}

static int verdict_by_labels(const char *name)
{
	int v = 0;

	for (size_t i = 0; i < eng.pol.n; i++) {
		const struct rule *r = &eng.pol.rules[i];

		if (r->domain && covers_by_labels(r->domain, name) && v != EGRET_ACT_DENY)
			v = r->action;
	}
	return v;
}

static void check_bare(const struct dns_question *q, const ldns_rdf *owner)
{
	uint8_t bare[DNS_BARE_MAX];
	size_t n = dns__bare_query(q, bare);
	uint16_t size = q->edns_size < 512 ? 512 : q->edns_size;
	ldns_pkt *p = NULL;
	ldns_rr *qrr;

	if (size > DNS_EDNS_UDP)
		size = DNS_EDNS_UDP;
	/* ldns takes the OPT record out of the additional section */
	if (n > DNS_BARE_MAX || ldns_wire2pkt(&p, bare, n) != LDNS_STATUS_OK || ldns_pkt_qr(p) ||
	    ldns_pkt_qdcount(p) != 1 || ldns_pkt_ancount(p) || ldns_pkt_nscount(p) ||
	    ldns_pkt_arcount(p) || ldns_pkt_edns(p) != q->edns || ldns_pkt_edns_data(p) ||
	    (q->edns && (ldns_pkt_edns_udp_size(p) != size || ldns_pkt_edns_do(p) != q->edns_do)) ||
	    ldns_pkt_rd(p) != q->rd || ldns_pkt_ad(p) != q->ad || ldns_pkt_cd(p) != q->cd ||
	    !(qrr = ldns_rr_list_rr(ldns_pkt_question(p), 0)) ||
	    ldns_dname_compare(ldns_rr_owner(qrr), owner) != 0 ||
	    memcmp(bare + 12, q->wire, q->wire_len) != 0 /* the name as asked, its case kept */ ||
	    ldns_rr_get_type(qrr) != q->type || ldns_rr_get_class(qrr) != q->qclass)
		abort();
	ldns_pkt_free(p);
}

/* ldns's reading of the same message without its additional section (whose TSIG records
 * libldns 1.8.3 loses), as an oracle for the question: NULL when ldns cannot read it (it checks
 * the records' fields, which egret's walk does not look at)
 */
static ldns_pkt *ldns_reading(const uint8_t *data, size_t size)
{
	ldns_pkt *p = NULL;
	uint8_t *copy = size >= 12 ? malloc(size) : NULL;

	if (!copy)
		return NULL;
	memcpy(copy, data, size);
	copy[10] = copy[11] = 0;
	if (ldns_wire2pkt(&p, copy, size) != LDNS_STATUS_OK) {
		ldns_pkt_free(p);
		p = NULL;
	}
	free(copy);
	return p;
}

/* does ldns end every record of the message where its RDLENGTH says? libldns 1.8.3 reads a known
 * type's fields and goes on from where they end, so where it does not, it reads other records
 * than egret's walk (rr_walk) does and its reading of the OPT record is no oracle
 */
static bool ldns_walks_as_egret(const uint8_t *data, size_t size)
{
	size_t pos = 12, records = 0;

	for (int i = 0; i < 4; i++)
		records += (size_t)(data[4 + 2 * i] << 8 | data[5 + 2 * i]);
	for (size_t i = 0; i < records; i++) {
		ldns_rdf *owner = NULL;
		ldns_rr *rr = NULL;
		size_t at = pos, end;
		bool same;

		if (ldns_wire2dname(&owner, data, size, &at) != LDNS_STATUS_OK)
			return false;
		ldns_rdf_deep_free(owner);
		if (i && at + 10 > size)
			return false;
		end = i ? at + 10 + (size_t)(data[at + 8] << 8 | data[at + 9]) : at + 4;
		if (ldns_wire2rr(&rr, data, size, &pos,
				 i ? LDNS_SECTION_ADDITIONAL : LDNS_SECTION_QUESTION) !=
		    LDNS_STATUS_OK)
			return false;
		same = ldns_rr_get_type(rr) != LDNS_RR_TYPE_TSIG;
		ldns_rr_free(rr);
		if (!same || pos != end)
			return false;
	}
	return true;
}

static void fuzz_query(const uint8_t *data, size_t size)
{
	struct dns_question q;
	char rule[400];
	int ret = dns__parse_query(data, size, &q);

	if (ret != 0 && ret != -EINVAL && ret != -EBADMSG)
		abort();
	if (!memchr(q.name, '\0', sizeof(q.name)))
		abort();
	if (ret != -EBADMSG) {
		/* one question, a query: as ldns reads the header too */
		uint8_t a[DNS_BARE_MAX];
		size_t n;
		ldns_pkt *r = NULL;

		if (size < 12 || (data[2] & 0xf8) || data[4] || data[5] != 1)
			abort();
		/* the answer made here for it (REFUSED) is a whole answer to that question */
		n = dns__rcode_answer(&q, q.id, LDNS_RCODE_REFUSED, a);
		if (n > DNS_BARE_MAX || ldns_wire2pkt(&r, a, n) != LDNS_STATUS_OK ||
		    !ldns_pkt_qr(r) || ldns_pkt_get_rcode(r) != LDNS_RCODE_REFUSED ||
		    ldns_pkt_qdcount(r) != 1 || ldns_pkt_id(r) != q.id || ldns_pkt_rd(r) != q.rd ||
		    ldns_pkt_ancount(r) ||
		    ldns_rr_get_type(ldns_rr_list_rr(ldns_pkt_question(r), 0)) != q.type)
			abort();
		ldns_pkt_free(r);
	}
	if (ret == 0) {
		ldns_rdf *owner = ldns_rdf_new_frm_data(LDNS_RDF_TYPE_DNAME, q.wire_len, q.wire);
		ldns_pkt *p = ldns_reading(data, size);
		ldns_rdf *again = NULL;
		ldns_rr *qrr;

		if (!q.host || !owner)
			abort();
		check_host_name(q.name);
		/* the text names exactly the labels asked */
		if (ldns_str2rdf_dname(&again, q.name) != LDNS_STATUS_OK ||
		    ldns_dname_compare(again, owner) != 0)
			abort();
		ldns_rdf_deep_free(again);
		/* where ldns reads the message, it reads the same question and flags */
		if (p && (!(qrr = ldns_rr_list_rr(ldns_pkt_question(p), 0)) ||
			  ldns_dname_compare(ldns_rr_owner(qrr), owner) != 0 ||
			  ldns_rr_get_type(qrr) != q.type || ldns_rr_get_class(qrr) != q.qclass ||
			  ldns_pkt_id(p) != q.id || ldns_pkt_rd(p) != q.rd ||
			  ldns_pkt_ad(p) != q.ad || ldns_pkt_cd(p) != q.cd))
			abort();
		ldns_pkt_free(p);
		p = NULL;
		/* and the OPT record: where ldns reads the records egret reads and no TSIG (whose
		 * records it loses) is among them, it reads the additional section too
		 */
		if (ldns_walks_as_egret(data, size) &&
		    ldns_wire2pkt(&p, data, size) == LDNS_STATUS_OK &&
		    (ldns_pkt_edns(p) != q.edns ||
		     (q.edns && (ldns_pkt_edns_udp_size(p) != q.edns_size ||
				 ldns_pkt_edns_do(p) != q.edns_do))))
			abort();
		ldns_pkt_free(p);
		check_bare(&q, owner);
		ldns_rdf_deep_free(owner);
		if (engine__domain_verdict(&eng, NULL, q.name, rule, sizeof(rule)) !=
		    verdict_by_labels(q.name))
			abort();
	} else if (q.host) {
		abort();
	}
}

/* the input itself as a wire name */
static void fuzz_name(const uint8_t *data, size_t size)
{
	char out[DNS_NAME_LEN];
	int ret = dns__host_name(data, size, out, sizeof(out));

	if (ret == 0) {
		size_t i = 0;

		check_host_name(out);
		/* the labels, lower case, are the input */
		for (const char *p = out; i < size;) {
			size_t n = strcspn(p, ".");

			if (data[i] != n)
				abort();
			for (size_t j = 0; j < n; j++) {
				uint8_t c = data[i + 1 + j];

				if ((c >= 'A' && c <= 'Z' ? c + 32 : c) != (uint8_t)p[j])
					abort();
			}
			i += 1 + n;
			p += n + (p[n] == '.');
			if (!n)
				break;
		}
		if (i != size)
			abort();
	} else if ((ret != -EINVAL && ret != -EBADMSG) || out[0]) {
		abort(); /* an error leaves no name behind */
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;

	if (!ready++)
		setup();
	fuzz_query(data, size);
	fuzz_name(data, size);
	return 0;
}
