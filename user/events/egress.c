/* Egress events: struct egret_connect_event -> egret.v1.NetConnect. */
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>

#include "addr.h"
#include "decoder.h"
#include "egret/ocsf.h"
#include "egress.h"
#include "egret/policy.h"

void egress__on_connect(struct decoder_ctx *d, const void *rec, size_t size)
{
	const struct egret_connect_event *r = rec;
	Egret__V1__NetConnect nc = EGRET__V1__NET_CONNECT__INIT;
	char dst[ADDR_STRLEN], src[ADDR_STRLEN], proto[8], rule[400], ifname[IF_NAMESIZE + 16];
	struct envelope e;

	/* an allowed TCP connect: its flow record, when the socket goes, names it by cookie */
	if (r->cookie)
		flow_starts__note(&d->flows, r);
	decoder__envelope(d, &r->hdr, &e);
	addr__format(r->daddr, dst, sizeof(dst));
	nc.verdict = (Egret__V1__NetConnect__Verdict)r->verdict;
	nc.reason = (Egret__V1__NetConnect__Reason)r->reason;
	nc.hook = (Egret__V1__NetConnect__Hook)r->hook;
	nc.protocol = (char *)addr__proto_name(r->protocol, proto, sizeof(proto));
	nc.dst_addr = dst;
	nc.dst_port = r->dport;
	nc.v4_mapped = r->v4_mapped;
	nc.family = r->family;
	nc.rule_id = r->rule_id;
	if (r->rule_id && d->hooks.rule_text)
		nc.rule = (char *)d->hooks.rule_text(d->hooks.ctx, r->rule_id, rule, sizeof(rule));
	nc.sock_type = r->sock_type;
	nc.socket_cookie = r->cookie;
	nc.killed = r->killed;
	if (r->hook == EGRET_HOOK_DEVICE) {
		/* a device gone since is named by its index */
		if (!if_indextoname(r->ifindex, ifname))
			snprintf(ifname, sizeof(ifname), "ifindex %u", r->ifindex);
		addr__format(r->saddr, src, sizeof(src));
		nc.interface = ifname;
		nc.src_addr = src;
		nc.src_port = r->sport;
	}
	e.ev.class_uid = OCSF_NETWORK_ACTIVITY;
	e.ev.activity_id = r->verdict == EGRET_VERDICT_DENY ? OCSF_NET_ACTIVITY_REFUSE
							    : OCSF_NET_ACTIVITY_OPEN;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_NET_CONNECT;
	e.ev.net_connect = &nc;
	decoder__emit(d, &e.ev);
}
