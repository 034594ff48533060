/* The policy language and its compilation to trie entries, without the kernel: what parses, how
 * rules print back, which errors name which line, and what push-down gives each prefix.
 */
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "addr.h"
#include "policy.h"
#include "policy_map.h"

static int parse(struct policy *p, const char *text, char *err, size_t errsz)
{
	FILE *f = fmemopen((void *)text, strlen(text), "r");
	int ret;

	policy__init(p);
	ret = policy__parse(p, "test.policy", f, false, err, errsz);
	fclose(f);
	return ret;
}

static const char example[] = "mode audit                        # comment\n"
			      "deny 203.0.113.0/24               # hard deny\n"
			      "allow 192.0.2.0/24\n"
			      "allow 198.51.100.7 tcp/443\n"
			      "allow 2001:db8::/32 udp/5000-5010 tcp/8443\n"
			      "allow ::ffff:198.51.100.0/120 any/53\n"
			      "allow domain Example.COM.\n"
			      "\n"
			      "sandbox build-42 {\n"
			      "    allow 192.0.2.99 tcp/8080\n"
			      "    deny domain *.evil.example\n"
			      "}\n";

Test(policy, parses_the_documented_grammar)
{
	static const char *const want[] = {
		"deny 203.0.113.0/24",		"allow 192.0.2.0/24",
		"allow 198.51.100.7 tcp/443",	"allow 2001:db8::/32 udp/5000-5010",
		"allow 2001:db8::/32 tcp/8443", "allow 198.51.100.0/24 any/53",
		"allow domain example.com",	"allow 192.0.2.99 tcp/8080",
		"deny domain *.evil.example",
	};
	char err[POLICY_ERR_LEN] = "", text[400];
	struct policy p;

	cr_assert_eq(parse(&p, example, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(p.mode, POLICY_AUDIT);
	cr_assert_eq(p.n, sizeof(want) / sizeof(want[0]));
	for (size_t i = 0; i < p.n; i++) {
		rule__format(&p.rules[i], text, sizeof(text));
		cr_expect_str_eq(text, want[i]);
		cr_expect_eq(p.rules[i].id, i + 1);
	}
	cr_expect_str_eq(p.rules[7].sandbox, "build-42");
	cr_expect_eq(p.rules[7].line, 10);
	cr_expect_str_eq(p.rules[2].sandbox, "");
	policy__free(&p);
}

Test(policy, errors_name_the_line)
{
	static const struct {
		const char *text, *err;
	} cases[] = {
		{ "allow 1.2.3.4 tcp/0\n", "test.policy:1: bad port '0' in 'tcp/0' (1-65535)" },
		{ "\nallow 192.0.2.1/24\n",
		  "test.policy:2: '192.0.2.1/24' has host bits set (did you mean 192.0.2.0/24?)" },
		{ "allow 192.0.2.0/33\n",
		  "test.policy:1: bad prefix length in '192.0.2.0/33' (0-32)" },
		{ "allow 300.1.1.1\n",
		  "test.policy:1: '300.1.1.1' is not an IPv4 or IPv6 address" },
		{ "allow 1.2.3.4 sctp/1\n",
		  "test.policy:1: unknown protocol 'sctp' in 'sctp/1' (tcp, udp, icmp or any)" },
		{ "allow 1.2.3.4 udp/90-80\n",
		  "test.policy:1: port range in 'udp/90-80' is reversed" },
		{ "allow 1.2.3.4 icmp/1\n", "test.policy:1: icmp has no ports: 'icmp/1'" },
		{ "permit 1.2.3.4\n",
		  "test.policy:1: unknown directive 'permit' (expected mode, require, allow, deny, "
		  "interface, budget, limit, sandbox or })" },
		{ "interface tap0\n",
		  "test.policy:1: interface belongs in a 'sandbox NAME {' block (one sandbox, by "
		  "its name: a device's packets are one sandbox's)" },
		{ "sandbox image=py {\ninterface tap0\n}\n",
		  "test.policy:2: interface belongs in a 'sandbox NAME {' block (one sandbox, by "
		  "its name: a device's packets are one sandbox's)" },
		{ "sandbox vm {\ninterface\n}\n",
		  "test.policy:2: expected 'interface DEVICE' (a network device name: 1-15 "
		  "characters, no '/', ':' or spaces)" },
		{ "sandbox vm {\ninterface tap0123456789abc\n}\n",
		  "test.policy:2: expected 'interface DEVICE' (a network device name: 1-15 "
		  "characters, no '/', ':' or spaces)" },
		{ "sandbox vm {\ninterface ../eth0\n}\n",
		  "test.policy:2: expected 'interface DEVICE' (a network device name: 1-15 "
		  "characters, no '/', ':' or spaces)" },
		{ "sandbox vm {\ninterface tap0\n}\nsandbox vm2 {\ninterface tap0\n}\n",
		  "test.policy:5: interface tap0 is sandbox vm's already (line 2)" },
		{ "require root\n", "test.policy:1: expected 'require unprivileged'" },
		{ "require unprivileged\nrequire unprivileged\n",
		  "test.policy:2: require unprivileged is set twice" },
		{ "sandbox a {\nrequire unprivileged\n}\n",
		  "test.policy:2: require applies to the whole policy: put it outside sandbox "
		  "blocks" },
		{ "mode strict\n", "test.policy:1: expected 'mode enforce' or 'mode audit'" },
		{ "mode audit\nmode audit\n", "test.policy:2: mode is set twice" },
		{ "sandbox a {\n  sandbox b {\n",
		  "test.policy:2: sandbox blocks do not nest (close 'a' first)" },
		{ "sandbox a {\nallow 1.2.3.4\n", "test.policy:1: 'sandbox a {' is not closed" },
		{ "}\n", "test.policy:1: '}' without 'sandbox NAME {'" },
		{ "sandbox a{x {\n}\n",
		  "test.policy:1: bad sandbox name 'a{x' (1-255 printable characters, no space or "
		  "any of {}#=*)" },
		{ "sandbox colour=red {\n}\n",
		  "test.policy:1: unknown selector 'colour' (container, image, k8s-namespace, "
		  "k8s-pod, label)" },
		{ "sandbox label app {\n}\n",
		  "test.policy:1: expected 'sandbox label KEY=VALUE {'" },
		{ "sandbox image=py[3] {\n}\n",
		  "test.policy:1: bad value in 'image=py[3]' (printable, '*' for any)" },
		{ "sandbox a {\nmode audit\n}\n",
		  "test.policy:2: mode applies to the whole policy: put it outside sandbox blocks" },
		{ "allow domain a..b\n", "test.policy:1: empty label in domain 'a..b'" },
		{ "allow domain a b\n", "test.policy:1: expected 'allow domain NAME'" },
		{ "allow\n", "test.policy:1: allow needs an address, a prefix or 'domain NAME'" },
	};
	char err[POLICY_ERR_LEN];
	struct policy p;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		err[0] = '\0';
		cr_expect_neq(parse(&p, cases[i].text, err, sizeof(err)), 0, "accepted: %s",
			      cases[i].text);
		cr_expect_str_eq(err, cases[i].err);
		policy__free(&p);
	}
}

Test(policy, interfaces_belong_to_their_block_and_change_the_hash)
{
	static const char text[] = "sandbox vm1 {\n"
				   "  interface tap0\n"
				   "  allow 192.0.2.1\n"
				   "}\n"
				   "sandbox vm2 {\n"
				   "  interface tap1\n"
				   "}\n";
	char err[POLICY_ERR_LEN] = "", h1[65], h2[65];
	struct policy p, q;
	FILE *f;

	cr_assert_eq(parse(&p, text, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.nifaces, 2);
	cr_expect_str_eq(p.ifaces[0].name, "tap0");
	cr_expect_str_eq(p.ifaces[0].sandbox, "vm1");
	cr_expect_eq(p.ifaces[0].line, 2);
	cr_expect_str_eq(p.ifaces[1].name, "tap1");
	cr_expect_str_eq(p.ifaces[1].sandbox, "vm2");
	cr_assert_eq(policy__copy(&q, &p), 0);
	cr_expect_eq(q.nifaces, 2);
	cr_expect_str_eq(q.ifaces[1].name, "tap1");
	policy__hash(&p, h1);
	q.nifaces = 1;
	policy__hash(&q, h2);
	cr_expect_str_neq(h1, h2, "an interface less did not change the hash");
	policy__free(&q);
	/* interface lines are the file's: a live rule file may not hold one */
	f = fmemopen((void *)"sandbox vm1 {\ninterface tap9\n}\n", 31, "r");
	policy__init(&q);
	cr_expect_neq(policy__parse(&q, "live", f, true, err, sizeof(err)), 0);
	cr_expect(strstr(err, "interface lines belong in the policy file"), "%s", err);
	fclose(f);
	policy__free(&q);
	policy__free(&p);
}

Test(policy, budgets_parse_print_and_the_tightest_applies)
{
	static const char text[] = "budget dns 50/s\n"
				   "budget dns-names 1MiB/hour\n"
				   "sandbox image=python:* {\n"
				   "  budget dns 20/s\n"
				   "  budget dns-names 64KiB/min\n" /* 3.75 MiB/hour: looser */
				   "}\n"
				   "sandbox build-1 {\n"
				   "  budget dns-names 100B/day\n"
				   "}\n";
	static const struct {
		const char *text, *error;
	} bad[] = {
		{ "budget dns 20/hour\n", "counts queries a second" },
		{ "budget dns 0/s\n", "1 or more" },
		{ "budget dns -3/s\n", "not an amount" },
		{ "budget dns 5MiB/s\n", "not a number of queries" },
		{ "budget dns-names 10XB/hour\n", "not a unit" },
		{ "budget dns-names 10KiB/week\n", "not a period" },
		{ "budget dns-names 10KiB\n", "expected 'budget dns N/s'" },
		{ "budget upload 10KiB/s\n", "expected 'budget dns N/s'" },
		{ "budget dns 5/s\nbudget dns 6/s\n", "set twice here (line 1)" },
		{ "budget dns-names 2000000GiB/day\n", "more than 1 PiB" },
		{ "budget egress 10MiB\n", "expected 'budget dns N/s'" },
		{ "budget dns 1000001/s\n", "at most 1000000" },
		{ "budget egress-total 1GiB/hour\n", "expected 'budget dns N/s'" },
		{ "budget egress-rate 1MiB\n", "expected 'budget dns N/s'" },
		{ "budget egress-rate 1MiB/s\nbudget egress-rate 2MiB/s\n", "set twice here" },
	};
	struct sandbox_meta meta = { 0 };
	const struct policy_budget *b;
	char err[POLICY_ERR_LEN] = "", text_out[80], h1[65], h2[65];
	struct policy p, q;

	cr_assert_eq(parse(&p, text, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.nbudgets, 5);
	budget__format(&p.budgets[1], text_out, sizeof(text_out));
	cr_expect_str_eq(text_out, "budget dns-names 1MiB/hour");
	budget__format(&p.budgets[4], text_out, sizeof(text_out));
	cr_expect_str_eq(text_out, "budget dns-names 100B/day");
	/* a sandbox no block selects: the global ones */
	b = policy__budget(&p, BUDGET_DNS, "box", NULL);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 50);
	/* selected by image: its 20/s is tighter; its 64KiB/min is looser than 1MiB/hour */
	meta.image = "docker.io/library/python:3.12";
	b = policy__budget(&p, BUDGET_DNS, "c1", &meta);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 20);
	b = policy__budget(&p, BUDGET_DNS_NAMES, "c1", &meta);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 1u << 20);
	cr_expect_eq(b->period_s, 3600);
	b = policy__budget(&p, BUDGET_DNS_NAMES, "build-1", NULL);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 100);
	cr_assert_eq(policy__copy(&q, &p), 0);
	cr_expect_eq(q.nbudgets, 5);
	policy__hash(&p, h1);
	q.budgets[0].amount = 51;
	policy__hash(&q, h2);
	cr_expect_str_neq(h1, h2, "a budget changed and the hash did not");
	policy__free(&q);
	policy__free(&p);
	cr_assert_eq(parse(&p, "allow 192.0.2.1\n", err, sizeof(err)), 0, "%s", err);
	cr_expect_null(policy__budget(&p, BUDGET_DNS, "box", NULL), "no budget line, no budget");
	policy__free(&p);
	/* egress: per period, and in all (no period; the least amount is the tightest) */
	cr_assert_eq(parse(&p,
			   "budget egress 100MiB/hour\nbudget egress-total 2GiB\n"
			   "sandbox box {\n  budget egress-total 1GiB\n}\n",
			   err, sizeof(err)),
		     0, "%s", err);
	budget__format(&p.budgets[0], text_out, sizeof(text_out));
	cr_expect_str_eq(text_out, "budget egress 100MiB/hour");
	b = policy__budget(&p, BUDGET_EGRESS_TOTAL, "box", NULL);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 1ull << 30);
	cr_expect_eq(b->period_s, 0);
	budget__format(b, text_out, sizeof(text_out));
	cr_expect_str_eq(text_out, "budget egress-total 1GiB");
	policy__free(&p);
	/* egress-rate: a rate, the least a second the tightest whatever the period */
	cr_assert_eq(parse(&p,
			   "budget egress-rate 60MiB/min\n"
			   "sandbox box {\n  budget egress-rate 2MiB/s\n}\n"
			   "sandbox slow {\n  budget egress-rate 1GiB/day\n}\n",
			   err, sizeof(err)),
		     0, "%s", err);
	budget__format(&p.budgets[0], text_out, sizeof(text_out));
	cr_expect_str_eq(text_out, "budget egress-rate 60MiB/min");
	b = policy__budget(&p, BUDGET_EGRESS_RATE, "box", NULL);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 60ull << 20, "1 MiB/s is tighter than 2");
	b = policy__budget(&p, BUDGET_EGRESS_RATE, "slow", NULL);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 1ull << 30);
	cr_expect_eq(b->period_s, 86400);
	policy__free(&p);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_neq(parse(&p, bad[i].text, err, sizeof(err)), 0, "%s", bad[i].text);
		cr_expect(strstr(err, bad[i].error), "%s: %s", bad[i].text, err);
		policy__free(&p);
	}
}

Test(policy, limits_parse_print_and_the_tightest_applies)
{
	static const char text[] = "limit memory 1G\n"
				   "limit timeout 1h\n"
				   "sandbox build-1 {\n"
				   "  limit memory 512MiB\n"
				   "  limit cpus 0.5\n"
				   "  limit pids 64\n"
				   "  limit timeout 90s\n"
				   "}\n"
				   "sandbox image=python:* {\n"
				   "  limit memory 4G\n" /* looser than the global 1G */
				   "}\n";
	static const struct {
		const char *text, *error;
	} bad[] = {
		{ "limit memory 1M\n", "not a value" }, /* under 4 MiB */
		{ "limit memory lots\n", "not a value" },
		{ "limit cpus 0\n", "not a value" },
		{ "limit cpus 2000\n", "not a value" },
		{ "limit pids 0\n", "not a value" },
		{ "limit pids 99999999\n", "not a value" },
		{ "limit timeout 0\n", "not a value" },
		{ "limit timeout 5y\n", "not a value" },
		{ "limit disk 1G\n", "expected 'limit memory SIZE'" },
		{ "limit memory\n", "expected 'limit memory SIZE'" },
		{ "limit pids 5\nlimit pids 6\n", "limit pids is set twice here (line 1)" },
		{ "limit memory-high 3M\n", "not a value" },
	};
	struct sandbox_meta meta = { 0 };
	const struct policy_budget *b;
	char err[POLICY_ERR_LEN] = "", out[80];
	const char *want[] = { "limit memory 1G",  "limit timeout 1h", "limit memory 512M",
			       "limit cpus 0.500", "limit pids 64",    "limit timeout 90s",
			       "limit memory 4G" };
	struct policy p;

	cr_assert_eq(parse(&p, text, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(p.nbudgets, 7);
	for (size_t i = 0; i < 7; i++) {
		char again[80];
		struct policy q;

		budget__format(&p.budgets[i], out, sizeof(out));
		cr_expect_str_eq(out, want[i]);
		/* what is printed parses back to the same */
		snprintf(again, sizeof(again), "%s\n", out);
		cr_assert_eq(parse(&q, again, err, sizeof(err)), 0, "%s: %s", out, err);
		cr_expect_eq(q.budgets[0].amount, p.budgets[i].amount, "%s", out);
		policy__free(&q);
	}
	b = policy__budget(&p, LIMIT_MEMORY, "build-1", NULL);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 512ull << 20);
	b = policy__budget(&p, LIMIT_TIMEOUT, "build-1", NULL);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 90000);
	b = policy__budget(&p, LIMIT_CPUS, "build-1", NULL);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 500);
	cr_expect_null(policy__budget(&p, LIMIT_CPUS, "other", NULL));
	cr_expect_null(policy__budget(&p, LIMIT_MEMORY_HIGH, "build-1", NULL));
	meta.image = "docker.io/library/python:3.12";
	b = policy__budget(&p, LIMIT_MEMORY, "c1", &meta);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 1ull << 30, "the global 1G is tighter than the block's 4G");
	policy__free(&p);
	cr_assert_eq(parse(&p, "sandbox b {\n  limit memory-high 256M\n}\n", err, sizeof(err)), 0,
		     "%s", err);
	b = policy__budget(&p, LIMIT_MEMORY_HIGH, "b", NULL);
	cr_assert_not_null(b);
	cr_expect_eq(b->amount, 256ull << 20);
	budget__format(b, out, sizeof(out));
	cr_expect_str_eq(out, "limit memory-high 256M");
	policy__free(&p);
	{
		FILE *f = fmemopen((void *)"limit pids 5\n", 13, "r");

		policy__init(&p);
		cr_expect_neq(policy__parse(&p, "live", f, true, err, sizeof(err)), 0);
		cr_expect(strstr(err, "belong in the policy file"), "%s", err);
		fclose(f);
		policy__free(&p);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_neq(parse(&p, bad[i].text, err, sizeof(err)), 0, "%s", bad[i].text);
		cr_expect(strstr(err, bad[i].error), "%s: %s", bad[i].text, err);
		policy__free(&p);
	}
}

Test(policy, live_rules_round_trip_and_hash)
{
	char err[POLICY_ERR_LEN], a[65], b[65], *buf = NULL;
	struct policy p, q;
	size_t len = 0;
	FILE *f;

	cr_assert_eq(parse(&p, example, err, sizeof(err)), 0);
	for (size_t i = 0; i < p.n; i++)
		p.rules[i].live = true;
	f = open_memstream(&buf, &len);
	cr_assert_eq(policy__write_live(&p, f), 0);
	fclose(f);
	f = fmemopen(buf, len, "r");
	policy__init(&q);
	cr_assert_eq(policy__parse(&q, "live", f, true, err, sizeof(err)), 0, "%s\n%s", err, buf);
	fclose(f);
	q.mode = p.mode;
	policy__hash(&p, a);
	policy__hash(&q, b);
	cr_expect_str_eq(a, b, "the written live rules read back differently:\n%s", buf);
	/* order does not matter, content does */
	policy__remove(&q, 0);
	policy__hash(&q, b);
	cr_expect_str_neq(a, b);
	free(buf);
	policy__free(&p);
	policy__free(&q);
}

static const struct policy_entry *entry_for(const struct policy_entries *set, const char *addr,
					    unsigned int plen)
{
	uint8_t a[16];

	addr__parse(addr, a);
	for (size_t i = 0; i < set->n; i++) {
		if (set->v[i].plen == plen && !memcmp(set->v[i].addr, a, 16))
			return &set->v[i];
	}
	return NULL;
}

Test(policy, push_down_gives_each_prefix_every_rule_that_covers_it)
{
	char err[POLICY_ERR_LEN] = "";
	struct policy_entries set;
	const struct policy_entry *e;
	struct policy p;

	cr_assert_eq(parse(&p,
			   "mode audit\n"
			   "allow 10.0.0.0/8 tcp/80\n"
			   "allow 10.1.0.0/16 tcp/443 tcp/444 tcp/81\n"
			   "deny 10.1.2.0/24\n"
			   "allow 10.1.2.3\n",
			   err, sizeof(err)),
		     0, "%s", err);
	cr_assert_eq(policy_map__compile(&p, NULL, &set, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(set.n, 5, "::/0 and four prefixes");
	e = entry_for(&set, "::", 0);
	cr_assert(e);
	cr_expect_eq(e->val.flags, EGRET_POL_AUDIT);
	cr_expect_eq(e->val.nrules, 0);
	e = entry_for(&set, "10.1.0.0", 96 + 16);
	cr_assert(e);
	cr_expect_eq(e->val.flags, EGRET_POL_AUDIT, "mode not pushed down");
	/* tcp/80 from the /8, merged with tcp/81; tcp/443-444 merged */
	cr_assert_eq(e->val.nrules, 2);
	cr_expect_eq(e->val.rules[0].port_lo, 80);
	cr_expect_eq(e->val.rules[0].port_hi, 81);
	cr_expect_eq(e->val.rules[1].port_lo, 443);
	cr_expect_eq(e->val.rules[1].port_hi, 444);
	e = entry_for(&set, "10.1.2.3", 128);
	cr_assert(e);
	cr_expect_eq(e->val.rules[0].action, EGRET_ACT_DENY, "the covering deny comes first");
	cr_expect_eq(e->val.rules[0].rule_id, 5, "rules 2-4 are the three specs of line 3");
	free(set.v);

	cr_assert_eq(policy_map__compile(&p, "nobody", &set, err, sizeof(err)), 0);
	cr_expect_eq(set.n, 0, "a sandbox without rules has no entries");
	free(set.v);
	policy__free(&p);
}

Test(policy, too_many_port_rules_under_one_prefix)
{
	char text[4096] = "allow 10.0.0.0/8", err[POLICY_ERR_LEN] = "";
	struct policy_entries set = { 0 };
	struct policy p;

	for (int port = 1; port <= 2 * EGRET_PORT_RULES + 1; port += 2)
		sprintf(text + strlen(text), " tcp/%d", port);
	strcat(text, "\n");
	cr_assert_eq(parse(&p, text, err, sizeof(err)), 0, "%s", err);
	cr_expect_neq(policy_map__compile(&p, NULL, &set, err, sizeof(err)), 0);
	cr_expect(strstr(err, "10.0.0.0/8 has more than 16 port rules"), "%s", err);
	cr_expect_neq(policy_map__check(&p, err, sizeof(err)), 0);
	free(set.v);
	policy__free(&p);
}
