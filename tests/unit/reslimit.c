/* egretctl run's limit options as words: sizes, CPUs, durations (user/core/reslimit.c). */
#include <stdint.h>

#include <criterion/criterion.h>

#include "reslimit.h"

Test(reslimit, memory_sizes)
{
	static const struct {
		const char *text;
		uint64_t bytes;
	} good[] = { { "64M", 64ull << 20 }, { "64MiB", 64ull << 20 }, { "64MB", 64ull << 20 },
		     { "1G", 1ull << 30 },   { "4194304", 4194304 },   { "4096K", 4ull << 20 } };
	static const char *const bad[] = { "",	   "1K",   "4194303",
					   "M",	   "-64M", "64X",
					   "64 M", "1e9",  "99999999999999999999" };
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_expect_eq(limits__parse_memory(good[i].text, &v), 0, "%s", good[i].text);
		cr_expect_eq(v, good[i].bytes, "%s", good[i].text);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_neq(limits__parse_memory(bad[i], &v), 0, "'%s' taken", bad[i]);
}

Test(reslimit, cpus)
{
	static const struct {
		const char *text;
		uint32_t milli;
	} good[] = { { "0.1", 100 }, { "2", 2000 },  { "1.25", 1250 },
		     { ".5", 500 },  { "0.01", 10 }, { "1024", 1024000 } };
	static const char *const bad[] = { "",	 "0", "0.001", "0.0001", "1025",
					   "-1", "x", "1.5x",  "1,5" };
	uint32_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_expect_eq(limits__parse_cpus(good[i].text, &v), 0, "%s", good[i].text);
		cr_expect_eq(v, good[i].milli, "%s: %u", good[i].text, v);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_neq(limits__parse_cpus(bad[i], &v), 0, "'%s' taken", bad[i]);
}

Test(reslimit, durations)
{
	static const struct {
		const char *text;
		uint64_t ms;
	} good[] = { { "2", 2000 },
		     { "90s", 90000 },
		     { "500ms", 500 },
		     { "5m", 300000 },
		     { "1h", 3600000 } };
	static const char *const bad[] = { "",	   "0",	 "0s",
					   "soon", "5d", "-5",
					   "1.5s", "s",	 "99999999999999999999" };
	uint64_t v;

	for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
		cr_expect_eq(limits__parse_duration(good[i].text, &v), 0, "%s", good[i].text);
		cr_expect_eq(v, good[i].ms, "%s", good[i].text);
	}
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_neq(limits__parse_duration(bad[i], &v), 0, "'%s' taken", bad[i]);
}
