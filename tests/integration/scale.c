/* 100,000 rules load and are enforced: a policy of 100,000 /32 allow rules in 198.18.0.0/15
 * (RFC 2544's benchmark range), one address inside the list and one outside it on lo in the
 * test's namespace; a live edit on top of that many rules takes effect too.
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define NRULES 100000

static int listener = -1;

static void setup(void)
{
	FILE *f;

	harness_setup(true);
	cr_assert_eq(netns_addr("lo", "198.18.100.50/32"), 0);
	cr_assert_eq(netns_addr("lo", "198.19.200.1/32"), 0);
	harness_setup_listen(&listener, "0.0.0.0", 443);
	f = fopen(T->policy_path, "w");
	cr_assert(f);
	fprintf(f, "mode enforce\n");
	for (unsigned int i = 0; i < NRULES; i++)
		fprintf(f, "allow 198.%u.%u.%u tcp/443\n", 18 + (i >> 16), (i >> 8) & 0xff,
			i & 0xff);
	fclose(f);
}

TestSuite(scale, .init = setup, .fini = harness_teardown, .timeout = 300);

static int connect_listed(void *arg)
{
	return tcp_connect("198.18.100.50", 443, AF_INET, 2000);
}

static int connect_unlisted(void *arg)
{
	return tcp_connect("198.19.200.1", 443, AF_INET, 2000);
}

Test(scale, hundred_thousand_rules)
{
	struct timespec t0, t1;
	char out[4096];

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_log_info("egretd ready with %d rules in %.2f s", NRULES,
		    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	cr_expect(strstr(harness_log(T), "100000 rules"), "%s", harness_log(T));
	cr_expect_eq(in_sandbox(T, "box", connect_listed, NULL), 0, "a listed address");
	cr_expect_eq(in_sandbox(T, "box", connect_unlisted, NULL), EPERM, "an unlisted address");
	cr_expect_eq(in_sandbox(T, NULL, connect_unlisted, NULL), 0, "positive control");

	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(egretctl(T, out, sizeof(out), "allow", "198.19.200.1", "tcp/443", NULL), 0,
		     "%s", out);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	cr_log_info("a live edit over %d rules took %.2f s", NRULES,
		    (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9);
	cr_expect_eq(in_sandbox(T, "box", connect_unlisted, NULL), 0, "the live edit");
}
