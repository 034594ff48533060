/* Sandbox names, addresses, control requests: the small parsers egretd and egretctl share. */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include "addr.h"
#include "control.h"
#include "sandbox.h"

Test(names, sandbox_names)
{
	static const char *const good[] = { "a", "build-42", "A.b_c-9", "0start" };
	static const char *const bad[] = {
		"",	   ".",
		"..",	   "-x",
		"a/b",	   "../escape",
		"a b",	   "x\n",
		"_hidden", "12345678901234567890123456789012345678901234567890123456789012345"
	};
	char gen[32], gen2[32];

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++)
		cr_expect(sandbox__valid_name(good[i]), "'%s' should be valid", good[i]);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_not(sandbox__valid_name(bad[i]), "'%s' should be refused", bad[i]);
	sandbox__generate_name(gen, sizeof(gen));
	sandbox__generate_name(gen2, sizeof(gen2));
	cr_expect(sandbox__valid_name(gen));
	cr_expect_eq(strlen(gen), 12);
	cr_expect_str_neq(gen, gen2);
}

Test(names, sandbox_table)
{
	struct sandbox_names t;

	cr_assert_eq(sandbox_names__init(&t, "/nonexistent"), 0);
	for (uint64_t id = 1; id <= 1000; id++)
		sandbox_names__set(&t, id * 7919, id % 2 ? "odd" : "even");
	cr_expect_str_eq(sandbox_names__lookup(&t, 7919), "odd");
	cr_expect_str_eq(sandbox_names__lookup(&t, 2 * 7919), "even");
	cr_expect_str_eq(sandbox_names__lookup(&t, 0), "");
	cr_expect_null(sandbox_names__lookup(&t, 5));
	sandbox_names__free(&t);
}

Test(names, addresses)
{
	uint8_t a[16], b[16];
	char out[ADDR_STRLEN];

	cr_assert_eq(addr__parse("169.254.169.254", a), 0);
	cr_assert_eq(addr__parse("::ffff:169.254.169.254", b), 0);
	cr_expect_eq(memcmp(a, b, 16), 0, "mapped and plain IPv4 differ");
	cr_expect(addr__is_v4(a));
	addr__format(b, out, sizeof(out));
	cr_expect_str_eq(out, "169.254.169.254");
	cr_assert_eq(addr__parse("fd00:ec2:0:0::254", a), 0);
	cr_expect_not(addr__is_v4(a));
	addr__format(a, out, sizeof(out));
	cr_expect_str_eq(out, "fd00:ec2::254");
	cr_expect_eq(addr__parse("169.254.169.254.1", a), -EINVAL);
	cr_expect_eq(addr__parse("", a), -EINVAL);
}

Test(names, control_requests)
{
	char ok[] = "allow\0--sandbox\0b\0", unterminated[] = { 'a', 'b' }, *argv[8];

	cr_assert_eq(control__parse_request(ok, sizeof(ok) - 1, argv, 8), 3);
	cr_expect_str_eq(argv[0], "allow");
	cr_expect_str_eq(argv[2], "b");
	cr_expect_eq(control__parse_request(unterminated, 2, argv, 8), -EINVAL);
	cr_expect_eq(control__parse_request(ok, 0, argv, 8), -EINVAL);
	cr_expect_eq(control__parse_request(ok, sizeof(ok) - 1, argv, 2), -E2BIG);
}
