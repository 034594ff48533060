/* Fuzz target: an upstream resolver's answer (dns__parse_answer, what upstream_answer() acts
 * on), checked against the question it carries and against a fixed one.
 * Invariants: the CNAME chain is at most DNS_CNAME_DEPTH distinct names, none the name asked;
 * each address is an A (IPv4-mapped) or an AAAA record, no more than the answer holds. And the
 * TTLs the resolver's cache counts down (dns__ttl_offsets): each a 4-byte field inside the
 * message, after the header and in increasing order, the least of them no more than each.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <ldns/ldns.h>

#include "dns.h"

static void check(const struct dns_answer *a, const char *name, size_t max_addrs)
{
	if (a->ncnames > DNS_CNAME_DEPTH || a->naddrs > max_addrs)
		abort();
	for (unsigned int i = 0; i < a->ncnames; i++) {
		if (!memchr(a->cnames[i], '\0', DNS_NAME_LEN) || !strcmp(a->cnames[i], name))
			abort();
		for (unsigned int j = 0; j < i; j++) {
			if (!strcmp(a->cnames[i], a->cnames[j]))
				abort();
		}
	}
	for (size_t i = 0; i < a->naddrs; i++) {
		const struct dns_addr *d = &a->addrs[i];

		if (d->type == LDNS_RR_TYPE_A) {
			if (d->addr[0] || d->addr[1] || d->addr[2] != htonl(0xffff))
				abort();
		} else if (d->type != LDNS_RR_TYPE_AAAA) {
			abort();
		}
	}
}

static void answer_to(const uint8_t *data, size_t size, const char *name, uint16_t type,
		      size_t max_addrs)
{
	struct dns_answer a;
	int ret = dns__parse_answer(data, size, name, type, &a);

	if (ret == 0)
		check(&a, name, max_addrs);
	else if ((ret != -ENOENT && ret != -EBADMSG) || a.addrs || a.naddrs)
		abort();
	dns__answer_free(&a);
}

static void ttls(const uint8_t *data, size_t size)
{
	uint16_t offs[16];
	uint32_t min;
	int n = dns__ttl_offsets(data, size, offs, 16, &min);

	if (n < 0 && n != -EBADMSG && n != -E2BIG)
		abort();
	for (int i = 0; i < n; i++) {
		const uint32_t ttl = dns__get32(data + offs[i]);

		if (offs[i] < 12 + 1 + 4 + 1 + 4 || offs[i] + 4u > size ||
		    (i && offs[i] <= offs[i - 1] + 4u) || (!(ttl & 0x80000000u) && ttl < min))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	ldns_pkt *pkt = NULL;
	uint8_t *copy;

	ttls(data, size);
	answer_to(data, size, "www.example.com", LDNS_RR_TYPE_A, 4096);
	/* and to the question it says it answers, read as parse.c reads it: without the
	 * additional section (whose TSIG records libldns 1.8.3 loses)
	 */
	if (size < 12 || !(copy = malloc(size)))
		return 0;
	memcpy(copy, data, size);
	copy[10] = copy[11] = 0;
	if (ldns_wire2pkt(&pkt, copy, size) == LDNS_STATUS_OK && ldns_pkt_qdcount(pkt) == 1 &&
	    ldns_rr_list_rr(ldns_pkt_question(pkt), 0)) {
		ldns_rr *q = ldns_rr_list_rr(ldns_pkt_question(pkt), 0);
		char *text = ldns_rdf2str(ldns_rr_owner(q)), name[DNS_NAME_LEN];
		size_t n = ldns_pkt_answer(pkt) ? ldns_rr_list_rr_count(ldns_pkt_answer(pkt)) : 0;

		snprintf(name, sizeof(name), "%s", text ? text : "");
		free(text);
		n = strlen(name);
		if (n > 1 && name[n - 1] == '.')
			name[n - 1] = '\0';
		for (char *p = name; *p; p++)
			*p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
		answer_to(data, size, name, (uint16_t)ldns_rr_get_type(q),
			  ldns_pkt_answer(pkt) ? ldns_rr_list_rr_count(ldns_pkt_answer(pkt)) : 0);
	}
	ldns_pkt_free(pkt);
	free(copy);
	return 0;
}
