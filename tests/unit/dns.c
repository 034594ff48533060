/* The resolver's configuration parsers and the domain rules' verdicts, without the kernel. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <linux/types.h>

#include "dns.h"
#include "egret/policy.h"
#include "engine.h"

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
		int v = engine__domain_verdict(&e, cases[i].sandbox, cases[i].name, rule,
					       sizeof(rule));

		cr_expect_eq(v, cases[i].verdict, "%s in '%s'", cases[i].name, cases[i].sandbox);
		cr_expect_str_eq(rule, cases[i].rule, "%s in '%s'", cases[i].name,
				 cases[i].sandbox);
	}
	policy__free(&e.pol);
}
