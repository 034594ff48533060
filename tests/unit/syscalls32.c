/* The compat dispatcher's tables (include/egret/syscalls32.h): every ia32 and x32 number is
 * the one the C library's asm/unistd_32.h, unistd_x32.h (and unistd_64.h for the 64-bit-only
 * numbers listed for x32) give the call of that name, or is past their last for a call newer
 * than the headers; a call outside the tables is allowed; a
 * number means different calls in the two ABIs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include <criterion/criterion.h>

#include "egret/syscalls32.h"

#define ASM_DIR "/usr/include/x86_64-linux-gnu/asm/"

/* the number of __NR_name in header (name NULL: the largest below x32's own, 512), -1 when
 * absent; x32's are written (BIT + n), as n
 */
static long header_nr(const char *header, const char *name)
{
	char path[256], line[256], want[96];
	FILE *f;
	long nr = -1, max = -1;

	snprintf(path, sizeof(path), ASM_DIR "%s", header);
	f = fopen(path, "r");
	cr_assert(f, "%s: the C library's syscall numbers (linux-libc-dev) are needed", path);
	snprintf(want, sizeof(want), "#define __NR_%s%s", name ? name : "", name ? " " : "");
	while (nr < 0 && fgets(line, sizeof(line), f)) {
		const char *v = strchr(line + strlen("#define __NR_"), ' '), *plus;

		if (strncmp(line, want, strlen(want)) || !v)
			continue;
		plus = strchr(v, '+');
		if (name)
			nr = strtol(plus ? plus + 1 : v, NULL, 10);
		else if (strtol(plus ? plus + 1 : v, NULL, 10) > max &&
			 strtol(plus ? plus + 1 : v, NULL, 10) < 512)
			max = strtol(plus ? plus + 1 : v, NULL, 10);
	}
	fclose(f);
	return name ? nr : max;
}

struct entry {
	__u32 nr, action;
	const char *name;
};

#define ENTRY_(nr, action, name) { nr, EGRET_CC_##action, name },
static const struct entry ia32[] = { EGRET_IA32_CALLS(ENTRY_) };
static const struct entry x32[] = { EGRET_X32_CALLS(ENTRY_) };

static void check(const struct entry *t, size_t n, __u32 abi, const char *header)
{
	for (size_t i = 0; i < n; i++) {
		char name[64];
		const char *h = header;
		char *suffix;

		snprintf(name, sizeof(name), "%s", t[i].name);
		suffix = strstr(name, " (64-bit)");
		if (suffix) {
			*suffix = '\0';
			h = "unistd_64.h";
		}
		/* a call newer than the headers (fchmodat2 in Debian 12's): past their last */
		if (header_nr(h, name) < 0)
			cr_expect_gt((long)t[i].nr, header_nr(h, NULL), "%s: no %s in %s", header,
				     name, h);
		else
			cr_expect_eq(header_nr(h, name), (long)t[i].nr,
				     "%s: %s is %ld in %s, not %u", header, name,
				     header_nr(h, name), h, t[i].nr);
		cr_expect_eq(egret_compat_action(abi, t[i].nr), t[i].action, "%s %u", name,
			     t[i].nr);
		cr_expect_str_eq(egret_compat_name(abi, t[i].nr), t[i].name);
	}
}

Test(syscalls32, ia32_numbers_match_the_c_library)
{
	check(ia32, sizeof(ia32) / sizeof(ia32[0]), EGRET_ABI_I386, "unistd_32.h");
}

Test(syscalls32, x32_numbers_match_the_c_library)
{
	check(x32, sizeof(x32) / sizeof(x32[0]), EGRET_ABI_X32, "unistd_x32.h");
}

Test(syscalls32, other_calls_are_allowed_and_abis_differ)
{
	cr_expect_eq(egret_compat_action(EGRET_ABI_I386, header_nr("unistd_32.h", "getpid")),
		     EGRET_CC_ALLOW);
	cr_expect_eq(egret_compat_action(EGRET_ABI_X32, header_nr("unistd_x32.h", "getpid")),
		     EGRET_CC_ALLOW);
	cr_expect_eq(egret_compat_action(EGRET_ABI_NATIVE, 41), EGRET_CC_ALLOW);
	cr_expect_str_eq(egret_compat_name(EGRET_ABI_I386, 20), "");
	/* 41 is socket in x32 (and x86-64), dup in ia32 */
	cr_expect_eq(egret_compat_action(EGRET_ABI_X32, 41), EGRET_CC_SOCKET);
	cr_expect_eq(egret_compat_action(EGRET_ABI_I386, 41), EGRET_CC_ALLOW);
	cr_expect_eq(egret_compat_action(EGRET_ABI_I386, 102), EGRET_CC_SOCKETCALL);
}
