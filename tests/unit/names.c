/* Sandbox names, addresses, control requests: the small parsers egretd and egretctl share. */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "addr.h"
#include "control.h"
#include "sandbox.h"

Test(names, sandbox_names)
{
	static const char *const good[] = { "a", "build-42", "A.b_c-9", "0start" };
	const char *bad[] = {
		"",	     ".",   "..",  "-x",      "a/b",
		"../escape", "a b", "x\n", "_hidden", NULL /* 256 characters: one past NAME_MAX */
	};
	char toolong[257];
	char gen[32], gen2[32];

	memset(toolong, 'a', 256);
	toolong[256] = '\0';
	bad[sizeof(bad) / sizeof(bad[0]) - 1] = toolong;
	toolong[255] = '\0';
	cr_expect(sandbox__valid_name(toolong), "255 characters are a name");
	toolong[255] = 'a';
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

static uint64_t dir_ino(const char *path)
{
	struct stat st;

	cr_assert_eq(stat(path, &st), 0, "stat %s", path);
	return st.st_ino;
}

/* The table several owners share (the engine and the collector): an entry in use keeps the name
 * it is used under, growing keeps the flags, and an owner's own scan does not stop a lookup's
 * miss from scanning for a sandbox made a moment later. */
Test(names, sandbox_table_kept_names_and_scans)
{
	char root[] = "/tmp/egret-names-XXXXXX", a[64], b[64];
	struct sandbox_names t;
	struct sandbox_entry *e;
	uint64_t ida, idb;

	cr_assert_not_null(mkdtemp(root));
	snprintf(a, sizeof(a), "%s/alpha", root);
	snprintf(b, sizeof(b), "%s/beta", root);
	cr_assert_eq(mkdir(a, 0700), 0);
	ida = dir_ino(a);
	cr_assert_eq(sandbox_names__init(&t, root), 0);
	cr_expect_str_eq(sandbox_names__lookup(&t, ida), "alpha", "a miss scans the root");

	e = sandbox_names__entry(&t, ida);
	cr_assert_not_null(e);
	e->flags = 1;
	sandbox_names__set(&t, ida, "renamed");
	cr_expect_str_eq(sandbox_names__get(&t, ida), "alpha", "an entry in use keeps its name");
	for (uint64_t id = 1; id <= 2000; id++)
		sandbox_names__set(&t, (id << 32) | 1, "filler");
	e = sandbox_names__entry(&t, ida);
	cr_assert_not_null(e, "growing lost an entry");
	cr_expect_eq(e->flags, 1u, "growing lost the flags");
	cr_expect_str_eq(e->name, "alpha");

	sandbox_names__scan(&t); /* an owner's scan, then a sandbox appears */
	cr_assert_eq(mkdir(b, 0700), 0);
	idb = dir_ino(b);
	cr_expect_str_eq(sandbox_names__lookup(&t, idb), "beta",
			 "an owner's scan throttled the next miss");
	cr_expect_null(sandbox_names__lookup(&t, 12345), "unknown id");

	sandbox_names__del(&t, ida);
	cr_expect_null(sandbox_names__get(&t, ida));
	cr_expect_str_eq(sandbox_names__get(&t, idb), "beta", "delete moved a neighbour away");
	sandbox_names__free(&t);
	rmdir(b);
	rmdir(a);
	rmdir(root);
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

/* addr__format and addr__format_port write what inet_ntop and "%s:%u" / "[%s]:%u" would, for
 * every octet value in every place, IPv6 forms and every size of buffer down to one byte
 */
Test(names, addresses_with_ports_as_snprintf_writes_them)
{
	static const char *const v6[] = {
		"::", "::1", "fd00:ec2::254", "2001:db8::ffff:0:1", "::ffff:0:0", "1:2:3:4:5:6:7:8"
	};
	uint8_t a[16] = { [10] = 0xff, [11] = 0xff };
	char want[ADDR_STRLEN + 8], got[ADDR_STRLEN + 8], text[ADDR_STRLEN];
	unsigned int n = 0;

	for (unsigned int v = 0; v < 256 + sizeof(v6) / sizeof(v6[0]); v++) {
		bool four = v < 256;
		uint16_t port = (uint16_t)(v * 257u + (v & 1) * 65535u);

		if (four) {
			a[12 + v % 4] = (uint8_t)v;
			a[12 + (v + 1) % 4] = (uint8_t)(255 - v);
			a[12 + (v + 2) % 4] = (uint8_t)(v % 10);
			a[12 + (v + 3) % 4] = (uint8_t)(v % 100);
			inet_ntop(AF_INET, a + 12, text, sizeof(text));
		} else {
			cr_assert_eq(inet_pton(AF_INET6, v6[v - 256], a), 1);
			inet_ntop(AF_INET6, a, text, sizeof(text));
			four = addr__is_v4(a);
			if (four)
				inet_ntop(AF_INET, a + 12, text, sizeof(text));
		}
		for (size_t size = 1; size <= sizeof(got); size++) {
			snprintf(want, size, four ? "%s:%u" : "[%s]:%u", text, port);
			addr__format_port(a, port, got, size);
			cr_expect_str_eq(got, want, "size %zu", size);
			if (size > sizeof(text))
				continue;
			snprintf(want, size, "%s", text);
			addr__format(a, got, size);
			cr_expect_str_eq(got, want, "size %zu", size);
			n++;
		}
	}
	cr_expect_gt(n, 256 * 40);
	/* no room at all: nothing written */
	got[0] = 'x';
	addr__format_port(a, 53, got, 0);
	addr__format(a, got, 0);
	cr_expect_eq(got[0], 'x');
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
