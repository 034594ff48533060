/* The resolver without the kernel: its configuration parsers, the domain rules' verdicts, the
 * names it accepts as host names, and queries served end to end (resolver__serve_udp) against
 * an upstream on loopback that this test answers itself.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <ldns/ldns.h>

#include <linux/types.h>

#include "dns.h"
#include "egret/events.h"
#include "egret/dns.h"
#include "egret/policy.h"
#include "engine.h"
#include "resolver.h"
#include "loop.h"
#include "util.h"

Test(dns, upstream_server_forms)
{
	static const struct {
		const char *text;
		int family;
		const char *addr;
		unsigned int port;
	} good[] = {
		{ "192.0.2.53", AF_INET, "192.0.2.53", 53 },
		{ "192.0.2.53:5353", AF_INET, "192.0.2.53", 5353 },
		{ "2001:db8::53", AF_INET6, "2001:db8::53", 53 },
		{ "[2001:db8::53]:5353", AF_INET6, "2001:db8::53", 5353 },
		{ "[::1]", AF_INET6, "::1", 53 },
	};
	static const char *const bad[] = { "",
					   "example.com",
					   "192.0.2.53:0",
					   "192.0.2.53:70000",
					   "[2001:db8::53",
					   "[2001:db8::53]x",
					   "1.2.3.4:53:1" };
	struct sockaddr_storage ss;
	socklen_t len;
	char text[64];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_assert_eq(dns__parse_server(good[i].text, &ss, &len), 0, "%s", good[i].text);
		cr_expect_eq(ss.ss_family, good[i].family, "%s", good[i].text);
		if (ss.ss_family == AF_INET) {
			struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

			inet_ntop(AF_INET, &s4->sin_addr, text, sizeof(text));
			cr_expect_eq(ntohs(s4->sin_port), good[i].port);
		} else {
			struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

			inet_ntop(AF_INET6, &s6->sin6_addr, text, sizeof(text));
			cr_expect_eq(ntohs(s6->sin6_port), good[i].port);
		}
		cr_expect_str_eq(text, good[i].addr);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_eq(dns__parse_server(bad[i], &ss, &len), -EINVAL, "accepted '%s'",
			     bad[i]);
}

Test(dns, resolv_conf)
{
	char path[] = "/tmp/egret-unit-resolv-XXXXXX", out[64];
	int fd = mkstemp(path);
	FILE *f = fdopen(fd, "w");

	fprintf(f, "# comment\nsearch example.com\noptions ndots:2\nnameserver 10.0.0.2\n"
		   "nameserver 10.0.0.3\n");
	fclose(f);
	cr_assert_eq(dns__resolv_conf_server(path, out, sizeof(out)), 0);
	cr_expect_str_eq(out, "10.0.0.2");
	f = fopen(path, "w");
	fprintf(f, "search example.com\n");
	fclose(f);
	cr_expect_eq(dns__resolv_conf_server(path, out, sizeof(out)), -ENOENT);
	unlink(path);
	cr_expect_eq(dns__resolv_conf_server("/nonexistent/resolv.conf", out, sizeof(out)),
		     -ENOENT);
}

static void load(struct engine *e, const char *text)
{
	char err[POLICY_ERR_LEN];
	FILE *f = fmemopen((void *)text, strlen(text), "r");

	memset(e, 0, sizeof(*e));
	policy__init(&e->pol);
	cr_assert_eq(policy__parse(&e->pol, "t", f, false, err, sizeof(err)), 0, "%s", err);
	fclose(f);
}

Test(dns, domain_verdicts)
{
	static const struct {
		const char *sandbox, *name;
		int verdict;
		const char *rule;
	} cases[] = {
		{ "", "example.com", EGRET_ACT_ALLOW, "allow domain example.com" },
		{ "", "www.example.com", 0, "" },
		{ "", "api.svc.test", EGRET_ACT_ALLOW, "allow domain *.svc.test" },
		{ "", "a.b.svc.test", EGRET_ACT_ALLOW, "allow domain *.svc.test" },
		{ "", "svc.test", 0, "" },
		{ "", "evil.svc.test", EGRET_ACT_DENY, "deny domain evil.svc.test" },
		{ "", "notsvc.test", 0, "" },
		{ "", "x.example.org", 0, "" },
		{ "build", "x.example.org", EGRET_ACT_ALLOW, "allow domain *.example.org" },
		{ "build", "evil.svc.test", EGRET_ACT_DENY, "deny domain evil.svc.test" },
		{ "other", "x.example.org", 0, "" },
	};
	char rule[400];
	struct engine e;

	load(&e, "allow domain example.com\n"
		 "allow domain *.svc.test\n"
		 "deny domain evil.svc.test\n"
		 "sandbox build {\n"
		 "  allow domain *.example.org\n"
		 "}\n");
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct sandbox_entry sb = { .id = 7 };
		int v;

		snprintf(sb.name, sizeof(sb.name), "%s", cases[i].sandbox);
		v = engine__domain_verdict(&e, cases[i].sandbox[0] ? &sb : NULL, cases[i].name,
					   rule, sizeof(rule));

		cr_expect_eq(v, cases[i].verdict, "%s in '%s'", cases[i].name, cases[i].sandbox);
		cr_expect_str_eq(rule, cases[i].rule, "%s in '%s'", cases[i].name,
				 cases[i].sandbox);
	}
	policy__free(&e.pol);
}

/* Domain rules in blocks that select containers by what their registration said: a container
 * gets every block that selects it, a deny in any beats an allow in another.
 */
Test(dns, domain_verdicts_of_registered_containers)
{
	static const char words[] = "container.image.name=docker.io/library/python:3.12\0"
				    "label.app=agent\0k8s.namespace.name=ci\0";
	struct sandbox_meta m;
	struct sandbox_entry sb = { .id = 9, .name = "ctr", .meta = &m };
	char rule[400], err[256];
	struct engine e;

	cr_assert_eq(sandbox_meta__parse(&m, words, sizeof(words) - 1, err, sizeof(err)), 0, "%s",
		     err);
	load(&e, "sandbox image=python:3.12 {\n"
		 "  allow domain pypi.org\n"
		 "}\n"
		 "sandbox label app=agent {\n"
		 "  allow domain *.example.org\n"
		 "}\n"
		 "sandbox k8s-namespace=ci {\n"
		 "  deny domain bad.example.org\n"
		 "}\n"
		 "sandbox k8s-namespace=prod {\n"
		 "  allow domain prod.example.net\n"
		 "}\n");
	cr_expect_eq(engine__domain_verdict(&e, &sb, "pypi.org", rule, sizeof(rule)),
		     EGRET_ACT_ALLOW);
	cr_expect_eq(engine__domain_verdict(&e, &sb, "x.example.org", rule, sizeof(rule)),
		     EGRET_ACT_ALLOW);
	cr_expect_eq(engine__domain_verdict(&e, &sb, "bad.example.org", rule, sizeof(rule)),
		     EGRET_ACT_DENY, "a deny of one block beats another's allow");
	cr_expect_eq(engine__domain_verdict(&e, &sb, "prod.example.net", rule, sizeof(rule)), 0,
		     "another namespace's block does not apply");
	sb.meta = NULL;
	cr_expect_eq(engine__domain_verdict(&e, &sb, "pypi.org", rule, sizeof(rule)), 0,
		     "a sandbox without a container is selected by name only");
	sandbox_meta__free(&m);
	policy__free(&e.pol);
}

/* a wire name of labels of 'a' of the lengths given */
static size_t wire_of(uint8_t *w, const int *lens, int n)
{
	size_t len = 0;

	for (int i = 0; i < n; i++) {
		w[len++] = (uint8_t)lens[i];
		memset(w + len, 'a', (size_t)lens[i]);
		len += (size_t)lens[i];
	}
	w[len++] = 0;
	return len;
}

/* a wire name from a string literal, whose NUL is the root label */
#define W(s) s, sizeof(s)

Test(dns, host_names_are_labels_of_host_characters)
{
	static const struct {
		const char *wire; /* labels as "\003www\007example\003com" */
		size_t len;
		int ret;
		const char *name;
	} cases[] = {
		{ W("\003www\007example\003com"), 0, "www.example.com" },
		{ W("\003WwW\007Example\003COM"), 0, "www.example.com" },
		{ W("\004_sip\004_tcp\001x\002io"), 0, "_sip._tcp.x.io" },
		{ W("\003a-b\0010"), 0, "a-b.0" },
		/* a label holding a dot would read as two labels */
		{ W("\011a.example\003org"), -EINVAL, "" },
		{ W("\003a b\003org"), -EINVAL, "" },
		{ W("\003a\000b\003org"), -EINVAL, "" },
		{ W("\003a\\b\003org"), -EINVAL, "" },
		{ W("\003\303\251t\003org"), -EINVAL, "" },
		{ W("\001*\007example\003org"), -EINVAL, "" },
		{ "", 1, -EINVAL, "" },		     /* the root */
		{ "\003www", 4, -EBADMSG, "" },	     /* no root label */
		{ "\003www\000x", 6, -EBADMSG, "" }, /* bytes after it */
		{ "\077", 1, -EBADMSG, "" },	     /* a label past the end */
		{ "\100xx", 4, -EBADMSG, "" },	     /* 64: a pointer or worse, never a label */
	};
	char out[DNS_NAME_LEN];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int ret = dns__host_name((const uint8_t *)cases[i].wire, cases[i].len, out,
					 sizeof(out));

		cr_expect_eq(ret, cases[i].ret, "case %zu: %d", i, ret);
		if (!ret)
			cr_expect_str_eq(out, cases[i].name, "case %zu", i);
	}
	/* the longest host name (253) fits, in a buffer that holds it */
	{
		static const int longest[] = { 63, 63, 63, 61 }, too_long[] = { 63, 63, 63, 62 };
		uint8_t w[300];
		size_t n = wire_of(w, longest, 4);

		cr_expect_eq(dns__host_name(w, n, out, sizeof(out)), 0);
		cr_expect_eq(strlen(out), 253);
		cr_expect_eq(dns__host_name(w, n, out, 253), -EINVAL, "cut to fit");
		n = wire_of(w, too_long, 4);
		cr_expect_eq(dns__host_name(w, n, out, sizeof(out)), -EINVAL, "254 characters");
	}
}

/* A query for the name given as wire labels (llen counts the root label). */
static size_t make_query(uint8_t *buf, uint16_t id, const char *labels, size_t llen, uint16_t type)
{
	static const uint8_t hdr[] = { 0, 0, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0 };
	size_t n = sizeof(hdr);

	memcpy(buf, hdr, n);
	buf[0] = (uint8_t)(id >> 8);
	buf[1] = (uint8_t)id;
	memcpy(buf + n, labels, llen);
	n += llen;
	buf[n++] = (uint8_t)(type >> 8);
	buf[n++] = (uint8_t)type;
	buf[n++] = 0;
	buf[n++] = 1; /* IN */
	return n;
}

Test(dns, a_label_with_a_dot_is_no_host_name)
{
	uint8_t msg[512];
	size_t n = make_query(msg, 7, "\011a.example\003org", 15, LDNS_RR_TYPE_A);
	struct dns_question q;
	char rule[400];
	struct engine e;

	cr_expect_eq(dns__parse_query(msg, n, &q), -EINVAL);
	cr_expect_not(q.host);
	cr_expect_str_eq(q.name, "a\\.example.org", "the event names it escaped: %s", q.name);
	cr_expect_eq(q.id, 7);
	/* as text it would pass for a name *.example.org allows: hence the check on labels */
	load(&e, "allow domain *.example.org\n");
	cr_expect_eq(engine__domain_verdict(&e, NULL, q.name, rule, sizeof(rule)), EGRET_ACT_ALLOW);
	policy__free(&e.pol);
	n = make_query(msg, 8, "\001a\007example\003org", 15, LDNS_RR_TYPE_AAAA);
	cr_expect_eq(dns__parse_query(msg, n, &q), 0);
	cr_expect(q.host);
	cr_expect_str_eq(q.name, "a.example.org");
	cr_expect_eq(q.type, LDNS_RR_TYPE_AAAA);
	msg[2] |= 0x80; /* an answer is no query */
	cr_expect_eq(dns__parse_query(msg, n, &q), -EBADMSG);
}

/* An answer as an upstream might send it, its names in mixed case and one owner a label with a
 * dot: names are compared lowered, the odd owner (text "www\.example.com", not the host
 * www.example.com) opens nothing, and the CNAME chain is followed whatever the case.
 */
Test(dns, answer_names_are_compared_lowered_and_escaped)
{
	static const char *const rrs[] = {
		"WWW.Example.COM. 60 IN CNAME Alias.EXAMPLE.com.",
		"alias.example.COM. 60 IN A 192.0.2.1",
		"www\\.example.com. 60 IN A 192.0.2.66",
		"other.example.com. 60 IN A 192.0.2.67",
	};
	ldns_pkt *p = ldns_pkt_query_new(ldns_dname_new_frm_str("www.example.com."), LDNS_RR_TYPE_A,
					 LDNS_RR_CLASS_IN, 0);
	struct dns_answer a;
	uint8_t *wire = NULL;
	size_t len = 0;

	cr_assert_not_null(p);
	ldns_pkt_set_qr(p, true);
	for (size_t i = 0; i < sizeof(rrs) / sizeof(rrs[0]); i++) {
		ldns_rr *rr = NULL;

		cr_assert_eq(ldns_rr_new_frm_str(&rr, rrs[i], 0, NULL, NULL), LDNS_STATUS_OK, "%s",
			     rrs[i]);
		cr_assert(ldns_pkt_push_rr(p, LDNS_SECTION_ANSWER, rr));
	}
	cr_assert_eq(ldns_pkt2wire(&wire, p, &len), LDNS_STATUS_OK);
	ldns_pkt_free(p);
	cr_assert_eq(dns__parse_answer(wire, len, "www.example.com", LDNS_RR_TYPE_A, &a), 0);
	cr_expect_eq(a.ncnames, 1);
	cr_expect_str_eq(a.cnames[0], "alias.example.com");
	cr_assert_eq(a.naddrs, 1, "only the chain's address: %zu", a.naddrs);
	cr_expect_eq(a.addrs[0].addr[3], inet_addr("192.0.2.1"));
	dns__answer_free(&a);
	cr_expect_eq(dns__parse_answer(wire, len, "www.example.org", LDNS_RR_TYPE_A, &a), -ENOENT,
		     "an answer to another question");
	free(wire);
}

/* A query stuffed with what a tunnel would hide in it: an answer record, an authority record,
 * an EDNS option of 40 bytes and a TXT record in the additional section. What goes upstream is
 * the question alone, with an OPT record of no options (the DO bit kept).
 */
Test(dns, only_the_question_goes_upstream)
{
	static const uint8_t txt_rr[] = { 0xc0, 12, 0, 16, 0,	1,   0,	  0,   0,
					  60,	0,  6, 5,  'e', 'x', 'f', 'i', 'l' };
	uint8_t msg[512], bare[DNS_BARE_MAX];
	size_t n = make_query(msg, 9, "\003WwW\007example\003org", 17, LDNS_RR_TYPE_A), qend = n;
	struct dns_question q;
	size_t b;

	msg[3] |= 0x10;		       /* CD */
	msg[7] = msg[9] = msg[11] = 1; /* one answer, one authority, and (below) two additional */
	memcpy(msg + n, txt_rr, sizeof(txt_rr));
	n += sizeof(txt_rr);
	memcpy(msg + n, txt_rr, sizeof(txt_rr));
	n += sizeof(txt_rr);
	memcpy(msg + n, txt_rr, sizeof(txt_rr));
	n += sizeof(txt_rr);
	/* OPT: payload 4096, DO, one option (code 65001) of 40 bytes */
	{
		const uint8_t opt[] = {
			0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 44, 0xfd, 0xe9, 0, 40
		};

		memcpy(msg + n, opt, sizeof(opt));
		n += sizeof(opt);
		memset(msg + n, 'x', 40);
		n += 40;
	}
	msg[11] = 2;
	cr_assert_eq(dns__parse_query(msg, n, &q), 0);
	cr_expect(q.edns && q.edns_do && q.cd && q.rd);
	b = dns__bare_query(&q, bare);
	cr_assert_eq(b, qend + 11, "question and a bare OPT only: %zu bytes", b);
	cr_expect_eq(memcmp(bare + 12, msg + 12, qend - 12), 0,
		     "the question as asked (case kept)");
	cr_expect_eq(bare[2], 0x01, "RD");
	cr_expect_eq(bare[3], 0x10, "CD, no rcode");
	cr_expect(bare[5] == 1 && bare[7] == 0 && bare[9] == 0 && bare[11] == 1, "counts 1/0/0/1");
	cr_expect(bare[qend + 2] == 41 && bare[qend + 3] == (DNS_EDNS_UDP >> 8) &&
			  bare[qend + 4] == (DNS_EDNS_UDP & 0xff),
		  "OPT with egret's payload size");
	cr_expect_eq(bare[qend + 7], 0x80, "the client's DO bit");
	cr_expect(bare[qend + 9] == 0 && bare[qend + 10] == 0, "no options");
	cr_expect_null(memmem(bare, b, "exfil", 5));
	cr_expect_null(memmem(bare, b, "xxxx", 4));
	/* without EDNS from the client, none is added */
	n = make_query(msg, 10, "\001a\007example\003org", 15, LDNS_RR_TYPE_AAAA);
	cr_assert_eq(dns__parse_query(msg, n, &q), 0);
	b = dns__bare_query(&q, bare);
	cr_expect_eq(b, n);
	cr_expect_eq(memcmp(bare + 2, msg + 2, n - 2), 0, "a plain query goes as it was");
	/* the client's payload size, between 512 and egret's: the answer goes back as it comes */
	{
		const uint16_t sizes[][2] = { { 700, 700 }, { 100, 512 }, { 4096, DNS_EDNS_UDP } };

		for (size_t i = 0; i < 3; i++) {
			n = make_query(msg, 11, "\001a\007example\003org", 15, LDNS_RR_TYPE_A);
			msg[11] = 1;
			memcpy(msg + n, "\0\0\051", 3); /* root, OPT */
			msg[n + 3] = (uint8_t)(sizes[i][0] >> 8);
			msg[n + 4] = (uint8_t)sizes[i][0];
			memset(msg + n + 5, 0, 6);
			n += 11;
			cr_assert_eq(dns__parse_query(msg, n, &q), 0);
			b = dns__bare_query(&q, bare);
			cr_expect_eq(bare[b - 8] << 8 | bare[b - 7], sizes[i][1], "%u: %u",
				     sizes[i][0], bare[b - 8] << 8 | bare[b - 7]);
		}
	}
}

/* --- a resolver with an upstream on loopback -------------------------------------------- */

struct up_rig {
	struct loop loop;
	struct engine e;
	struct resolver *r;
	int upstream, listener, client; /* UDP sockets on 127.0.0.1 */
	struct sockaddr_storage client_addr;
	socklen_t client_len;
	unsigned int asked; /* queries the upstream received */
	uint16_t ports[64]; /* source ports it saw them from */
	unsigned int nports;
};

static int udp_loopback(struct sockaddr_storage *ss, socklen_t *len)
{
	struct sockaddr_in sa = { .sin_family = AF_INET,
				  .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t l = sizeof(sa);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	int big = 4 << 20;

	cr_assert(fd >= 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
	cr_assert_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	cr_assert_eq(getsockname(fd, (struct sockaddr *)&sa, &l), 0);
	if (ss) {
		memcpy(ss, &sa, sizeof(sa));
		*len = sizeof(sa);
	}
	return fd;
}

static void up_rig_init(struct up_rig *u, const char *policy)
{
	struct sockaddr_storage up;
	struct sockaddr_in *up4 = (struct sockaddr_in *)&up;
	struct dns_options o = { .min_ttl = 30, .grace = 30, .max_ips = 32, .timeout_ms = 5000 };
	struct dns_maps m = { .listeners_fd = -1,
			      .clients_fd = -1,
			      .client_gen_fd = -1,
			      .allow_fd = -1,
			      .dev_nat_fd = -1,
			      .dev_listeners_fd = -1 };
	char server[64];
	socklen_t len;

	memset(u, 0, sizeof(*u));
	cr_assert_eq(loop__init(&u->loop), 0);
	load(&u->e, policy);
	u->upstream = udp_loopback(&up, &len);
	u->listener = udp_loopback(NULL, NULL);
	u->client = udp_loopback(&u->client_addr, &u->client_len);
	snprintf(server, sizeof(server), "127.0.0.1:%u", ntohs(up4->sin_port));
	o.upstream = server;
	cr_assert_eq(resolver__new(&u->r, &o, &m, &u->loop, &u->e), 0);
}

static void up_rig_free(struct up_rig *u)
{
	resolver__free(u->r);
	policy__free(&u->e.pol);
	close(u->upstream);
	close(u->listener);
	close(u->client);
	loop__close(&u->loop);
}

/* The upstream answers every query it has: NOERROR, no records. */
static void upstream_answers(struct up_rig *u)
{
	uint8_t buf[1500];
	struct sockaddr_in from;
	socklen_t flen = sizeof(from);
	ssize_t n;

	while ((n = recvfrom(u->upstream, buf, sizeof(buf), 0, (struct sockaddr *)&from, &flen)) >=
	       12) {
		bool known = false;

		u->asked++;
		for (unsigned int i = 0; i < u->nports; i++)
			known |= u->ports[i] == from.sin_port;
		if (!known && u->nports < 64)
			u->ports[u->nports++] = from.sin_port;
		buf[2] |= 0x80; /* QR */
		buf[3] = 0x80;	/* RA, NOERROR */
		sendto(u->upstream, buf, (size_t)n, 0, (struct sockaddr *)&from, flen);
		flen = sizeof(from);
	}
}

/* Serve one query as if the kernel had steered it from sandbox 0 (the root's rules). */
static void ask(struct up_rig *u, uint16_t id, const char *labels, size_t llen)
{
	struct egret_dns_client who = { .pid = 1, .orig_port = 53 };
	uint8_t msg[512];
	size_t n = make_query(msg, id, labels, llen, LDNS_RR_TYPE_A);

	resolver__serve_udp(u->r, u->listener, &u->client_addr, u->client_len, msg, n, &who);
}

/* Run the loop and the upstream until the client has `want` answers (or 10 s passed); the
 * answers' ids are counted in seen[] and the last one's rcode kept.
 */
static unsigned int collect(struct up_rig *u, unsigned int want, uint8_t *seen, int *rcode)
{
	uint64_t deadline = now_ns(CLOCK_MONOTONIC) + 10000000000ull;
	unsigned int got = 0;

	while (got < want && now_ns(CLOCK_MONOTONIC) < deadline) {
		uint8_t buf[1500];
		ssize_t n;

		upstream_answers(u);
		loop__run_once(&u->loop, 5);
		resolver__tick(u->r);
		while ((n = recv(u->client, buf, sizeof(buf), 0)) >= 12) {
			uint16_t id = (uint16_t)(buf[0] << 8 | buf[1]);

			if (seen && seen[id]++)
				cr_expect_fail("answer %u came twice", id);
			if (rcode)
				*rcode = buf[3] & 0x0f;
			got++;
		}
	}
	return got;
}

Test(dns, pooled_upstream_sockets_rotate_while_answers_are_pending, .timeout = 120)
{
	static const char name[] = "\001q\004pool\004test";
	/* 8 sockets, each replaced after 4,096 queries: every socket rotates while its last
	 * queries are still upstream, and the answer to the last one retires it inside on_pool()
	 */
	const unsigned int total = 8 * 4096 + 800, batch = 100;
	static uint8_t seen[65536];
	struct up_rig u;
	unsigned int sent = 0, got = 0;

	up_rig_init(&u, "allow domain *.pool.test\n");
	memset(seen, 0, sizeof(seen));
	while (sent < total) {
		unsigned int n = total - sent < batch ? total - sent : batch;

		for (unsigned int i = 0; i < n; i++)
			ask(&u, (uint16_t)(sent + i), name, sizeof(name));
		got += collect(&u, n, seen, NULL);
		sent += n;
	}
	cr_expect_eq(got, total, "%u of %u queries answered", got, total);
	cr_expect_eq(u.asked, total, "the upstream was asked %u times", u.asked);
	cr_expect_geq(u.nports, 16, "the pool did not rotate: %u source ports", u.nports);
	up_rig_free(&u);
}

Test(dns, a_name_that_is_no_host_name_is_refused_locally)
{
	static const char dotted[] = "\011a.example\003org", plain[] = "\001a\007example\003org";
	struct up_rig u;
	int rcode = -1;

	up_rig_init(&u, "allow domain *.example.org\n");
	ask(&u, 1, dotted, sizeof(dotted));
	cr_assert_eq(collect(&u, 1, NULL, &rcode), 1);
	cr_expect_eq(rcode, LDNS_RCODE_REFUSED);
	cr_expect_eq(u.asked, 0, "a label holding a dot reached the upstream");
	/* positive control: the same labels as a host name are asked upstream */
	ask(&u, 2, plain, sizeof(plain));
	cr_assert_eq(collect(&u, 1, NULL, &rcode), 1);
	cr_expect_eq(rcode, LDNS_RCODE_NOERROR);
	cr_expect_eq(u.asked, 1);
	up_rig_free(&u);
}

/* The entropy of what the client chose: left of the wildcard its rule matched, nothing of an
 * exact name, all but the last two labels when no rule matched.
 */
Test(dns, the_entropy_is_of_the_part_the_client_chose)
{
	static const struct {
		const char *name, *rule;
		bool high;
		float lo, hi;
	} cases[] = {
		{ "k7q2x9zp4m1v8b3n6c5l0j2h4g7f9d1s.allowed.test", "allow domain *.allowed.test",
		  true, 4.3f, 5.0f },
		{ "www.allowed.test", "allow domain *.allowed.test", false, 0.0f, 0.1f },
		{ "files.pythonhosted.org", "allow domain files.pythonhosted.org", false, 0.0f,
		  0.0f },
		{ "abcdefghijklmnopqrstu.evil.example", "", true, 4.3f, 4.5f },
		{ "registry-mirror-eu-west.allowed.test", "allow domain *.allowed.test", false,
		  2.5f, 3.5f },
		{ "deadbeefcafe.allowed.test", "allow domain *.allowed.test", false, 2.0f, 3.0f },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		static struct dns_query q;

		memset(&q, 0, sizeof(q));
		snprintf(q.name, sizeof(q.name), "%s", cases[i].name);
		snprintf(q.rule, sizeof(q.rule), "%s", cases[i].rule);
		budget__entropy(&q);
		cr_expect_eq(q.high_entropy, cases[i].high, "%s: %.2f", cases[i].name, q.entropy);
		cr_expect(q.entropy >= cases[i].lo && q.entropy <= cases[i].hi, "%s: %.2f",
			  cases[i].name, q.entropy);
	}
}

/* The TTLs of an answer, for the resolver's cache to count down: every record's but OPT's
 * (its "TTL" holds the DO bit), the least of them, and nothing from a message that is not
 * whole.
 */
Test(dns, the_ttls_of_an_answer_are_found_but_opts)
{
	static const uint8_t q[] = { 0x12, 0x34, 0x81, 0x80, 0,	  1,   0,   2,	 0,   0,   0,
				     1,	   3,	 'w',  'w',  'w', 7,   'e', 'x', 'a', 'm', 'p',
				     'l',  'e',	 3,    'o',  'r', 'g', 0,   0,	 1,   0,   1 };
	static const uint8_t a300[] = { 0xc0, 12, 0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 1 };
	static const uint8_t a60[] = { 0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 2 };
	static const uint8_t opt[] = { 0, 0, 41, 0x10, 0, 0, 0, 0x80, 0, 0, 0 };
	uint8_t msg[512];
	uint16_t offs[8];
	uint32_t min;
	size_t n = 0;

	memcpy(msg, q, sizeof(q));
	n += sizeof(q);
	memcpy(msg + n, a300, sizeof(a300));
	n += sizeof(a300);
	memcpy(msg + n, a60, sizeof(a60));
	n += sizeof(a60);
	memcpy(msg + n, opt, sizeof(opt));
	n += sizeof(opt);
	cr_assert_eq(dns__ttl_offsets(msg, n, offs, 8, &min), 2);
	cr_expect_eq(min, 60);
	cr_expect_eq(offs[0], sizeof(q) + 6);
	cr_expect_eq(offs[1], sizeof(q) + sizeof(a300) + 6);
	cr_expect(msg[offs[0] + 2] == 1 && msg[offs[0] + 3] == 44, "300 there");
	cr_expect_eq(dns__ttl_offsets(msg, n, offs, 1, &min), -E2BIG);
	cr_expect_eq(dns__ttl_offsets(msg, n - 1, offs, 8, &min), -EBADMSG, "cut");
	msg[n] = 0;
	cr_expect_eq(dns__ttl_offsets(msg, n + 1, offs, 8, &min), -EBADMSG, "a byte after");
	/* a TTL with its top bit set counts as 0 */
	msg[sizeof(q) + 6] = 0x80;
	cr_expect_eq(dns__ttl_offsets(msg, n, offs, 8, &min), 2);
	cr_expect_eq(min, 0);
	msg[sizeof(q) + 6] = 0;
	/* a label of the reserved kinds, a name running past the end, no question */
	msg[sizeof(q)] = 0x80;
	cr_expect_eq(dns__ttl_offsets(msg, n, offs, 8, &min), -EBADMSG);
	msg[sizeof(q)] = 0xc0;
	cr_expect_eq(dns__ttl_offsets(msg, 13, offs, 8, &min), -EBADMSG);
	msg[5] = 0;
	cr_expect_eq(dns__ttl_offsets(msg, n, offs, 8, &min), -EBADMSG);
	/* counts that promise more records than there are */
	msg[5] = 1;
	msg[7] = 3;
	cr_expect_eq(dns__ttl_offsets(msg, n, offs, 8, &min), -EBADMSG);
	/* no record: no TTL */
	cr_expect_eq(dns__ttl_offsets(q, sizeof(q) - 0, offs, 8, &min), -EBADMSG, "counts say 3");
	memcpy(msg, q, sizeof(q));
	msg[7] = msg[11] = 0;
	cr_expect_eq(dns__ttl_offsets(msg, sizeof(q), offs, 8, &min), 0);
	cr_expect_eq(min, 0);
}
