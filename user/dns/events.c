/* The DnsQuery event of each query a sandbox sent: the name and type asked, the verdict and the
 * rule that gave it, the rcode, the answers and the addresses they opened.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <ldns/ldns.h>
#include <linux/types.h>

#include "egret/events.h"
#include "egret/ocsf.h"
#include "addr.h"
#include "engine.h"
#include "resolver.h"
#include "stream.h"
#include "util.h"

/* The type's and rcode's names as ldns prints them, without its allocation for the known ones */
static const char *type_name(uint16_t type, char *buf, size_t size)
{
	const ldns_rr_descriptor *d = ldns_rr_descript(type);
	char *s;

	if (d && d->_name && d->_type == type)
		return d->_name;
	s = ldns_rr_type2str((ldns_rr_type)type);
	snprintf(buf, size, "%s", s ? s : "?");
	free(s);
	return buf;
}

static const char *rcode_name(uint8_t rcode, char *buf, size_t size)
{
	const ldns_lookup_table *lt = ldns_lookup_by_id(ldns_rcodes, rcode);
	char *s;

	if (lt && lt->name)
		return lt->name;
	s = ldns_pkt_rcode2str((ldns_pkt_rcode)rcode);
	snprintf(buf, size, "%s", s ? s : "?");
	free(s);
	return buf;
}

void query__emit(struct resolver *r, const struct dns_query *q, bool allowed, uint8_t rcode,
		 const struct answer_list *a, const char *error)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	struct sandbox_pb sb;
	const struct sandbox_entry *s;
	Egret__V1__Process pr = EGRET__V1__PROCESS__INIT;
	Egret__V1__DnsQuery dq = EGRET__V1__DNS_QUERY__INIT;
	char tname[16], rname[16], server[ADDR_STRLEN + 8], comm[EGRET_COMM_LEN + 1];
	char sbname[SANDBOX_NAME_MAX + 24];
	const char *name;

	if (!r->stream)
		return;
	s = engine__sandbox(r->engine, q->who.sandbox_id);
	name = q->who.sandbox_id ? (s ? s->name : NULL) : "";
	if (!name) {
		snprintf(sbname, sizeof(sbname), "cgroup-%llu",
			 (unsigned long long)q->who.sandbox_id);
		name = sbname;
	}
	sandbox_pb__fill(&sb, q->who.sandbox_id, name, s ? s->meta : NULL);
	memcpy(comm, q->who.comm, EGRET_COMM_LEN);
	comm[EGRET_COMM_LEN] = '\0';
	pr.pid = q->who.pid;
	pr.tid = q->who.tid;
	pr.comm = comm;
	addr__format_port((const uint8_t *)q->who.orig_addr, q->who.orig_port, server,
			  sizeof(server));
	dq.name = (char *)q->name;
	dq.type = (char *)type_name(q->qtype, tname, sizeof(tname));
	dq.rcode = (char *)rcode_name(rcode, rname, sizeof(rname));
	dq.allowed = allowed;
	dq.latency_us = (now_ns(CLOCK_MONOTONIC) - q->start_ns) / 1000;
	dq.server = server;
	dq.transport = (char *)(q->conn ? "tcp" : "udp");
	dq.rule = (char *)q->rule;
	dq.error = (char *)(error ? error : "");
	dq.budget = (char *)q->budget;
	dq.name_entropy = q->entropy;
	dq.high_entropy = q->high_entropy;
	dq.cached = q->cached;
	if (a) {
		dq.n_answers = a->n;
		dq.answers = (char **)a->text;
		dq.ttl = a->ttl;
		dq.addresses_opened = a->opened;
	}
	ev.time_unix_nano = 0;
	ev.sandbox = &sb.sb;
	ev.process = &pr;
	ev.class_uid = OCSF_DNS_ACTIVITY;
	ev.activity_id = OCSF_DNS_ACTIVITY_RESPONSE;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_DNS_QUERY;
	ev.dns_query = &dq;
	stream__emit(r->stream, &ev);
}
