/* egretd's alive record (selfwatch.h): it survives a round trip, a damaged one is refused, and
 * the gap it leaves is told from the monotonic clock within a boot, from the wall clock across
 * a reboot, and says whether the previous egretd stopped or was killed.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <criterion/criterion.h>

#include "selfwatch.h"
#include "util.h"

#define SEC 1000000000ull

static const struct selfwatch_record rec = {
	.boot_id = "5f1c9a8e-2b1d-4c3e-9f7a-0123456789ab",
	.mono_ns = 100 * SEC,
	.unix_ns = 1764600000 * SEC,
	.pid = 4242,
	.stopped = false,
	.stream = "0123456789abcdef0123456789abcdef",
	.seq = 77,
};

Test(selfwatch, a_record_survives_a_round_trip)
{
	struct selfwatch_record r = rec, back;
	char buf[512];

	snprintf(r.reason, sizeof(r.reason), "Terminated");
	r.stopped = true;
	cr_assert_eq(selfwatch__format(&r, buf, sizeof(buf)), 256);
	cr_expect_eq(buf[255], '\n');
	cr_assert_eq(selfwatch__parse(buf, &back), 0, "%s", buf);
	cr_expect_str_eq(back.boot_id, r.boot_id);
	cr_expect_eq(back.mono_ns, r.mono_ns);
	cr_expect_eq(back.unix_ns, r.unix_ns);
	cr_expect_eq(back.pid, r.pid);
	cr_expect(back.stopped);
	cr_expect_str_eq(back.stream, r.stream);
	cr_expect_eq(back.seq, r.seq);
	cr_expect_str_eq(back.reason, "Terminated");
}

Test(selfwatch, a_damaged_record_is_refused)
{
	struct selfwatch_record r;
	char buf[512];

	cr_expect_eq(selfwatch__parse("", &r), -EINVAL);
	cr_expect_eq(selfwatch__parse("egretd-alive 2 boot=x", &r), -EINVAL);
	cr_assert_eq(selfwatch__format(&rec, buf, sizeof(buf)), 256);
	memcpy(strstr(buf, "running"), "runxing", 7);
	cr_expect_eq(selfwatch__parse(buf, &r), -EINVAL);
	cr_assert_eq(selfwatch__format(&rec, buf, sizeof(buf)), 256);
	buf[40] = '\0'; /* cut short */
	cr_expect_eq(selfwatch__parse(buf, &r), -EINVAL);
	cr_expect_eq(selfwatch__format(&rec, buf, 100), -ENOSPC);
}

Test(selfwatch, a_killed_egretd_leaves_a_gap_on_the_monotonic_clock)
{
	struct selfwatch_gap g;

	/* the wall clock jumped an hour meanwhile: it does not count within a boot */
	cr_assert(selfwatch__gap_since(&rec, rec.boot_id, rec.mono_ns + 7 * SEC,
				       rec.unix_ns + 3600 * SEC, &g));
	cr_expect_eq(g.duration_ns, 7 * SEC);
	cr_expect_eq(g.start_unix_ns, rec.unix_ns);
	cr_expect_not(g.rebooted);
	cr_expect(strstr(g.cause, "7.000 s") && strstr(g.cause, "pid 4242") &&
			  strstr(g.cause, "ended without stopping") && strstr(g.cause, "seq 77"),
		  "%s", g.cause);
}

Test(selfwatch, a_stopped_egretd_names_its_reason)
{
	struct selfwatch_record r = rec;
	struct selfwatch_gap g;

	r.stopped = true;
	snprintf(r.reason, sizeof(r.reason), "Terminated");
	cr_assert(selfwatch__gap_since(&r, r.boot_id, r.mono_ns + SEC / 2, r.unix_ns, &g));
	cr_expect_eq(g.duration_ns, SEC / 2);
	cr_expect(strstr(g.cause, "was stopped (Terminated)"), "%s", g.cause);
}

Test(selfwatch, a_reboot_is_measured_on_the_wall_clock)
{
	struct selfwatch_gap g;

	cr_assert(selfwatch__gap_since(&rec, "another-boot", 5 * SEC, rec.unix_ns + 90 * SEC, &g));
	cr_expect(g.rebooted);
	cr_expect_eq(g.duration_ns, 90 * SEC);
	cr_expect(strstr(g.cause, "rebooted"), "%s", g.cause);
	/* a wall clock set back: no negative gap */
	cr_assert(selfwatch__gap_since(&rec, "another-boot", 5 * SEC, rec.unix_ns - SEC, &g));
	cr_expect_eq(g.duration_ns, 0);
}

/* A loop turn 3 s late is a gap: "busy" when egretd ran most of that time, "stopped" when it
 * did not. Between gaps the process's CPU clock (a system call) is read only every
 * SELFWATCH_CPU_NS, not at each turn.
 */
Test(selfwatch, a_late_turn_is_a_gap_busy_or_stopped_and_the_cpu_clock_is_read_seldom)
{
	struct selfwatch w = { 0 };
	struct selfwatch_gap g;
	uint64_t now = now_ns(CLOCK_MONOTONIC), cpu = now_ns(CLOCK_PROCESS_CPUTIME_ID);

	w.last_turn_ns = w.cpu_read_ns = now - 3 * SEC;
	w.last_cpu_ns = cpu; /* it ran nothing in 3 s */
	cr_assert(selfwatch__turn(&w, &g));
	cr_expect(g.duration_ns >= 3 * SEC);
	cr_expect(strstr(g.cause, "it was stopped"), "%s", g.cause);

	now = now_ns(CLOCK_MONOTONIC);
	w.last_turn_ns = w.cpu_read_ns = now - 3 * SEC;
	w.last_cpu_ns = now_ns(CLOCK_PROCESS_CPUTIME_ID) - 29 * SEC / 10; /* it ran 2.9 s of 3 */
	cr_assert(selfwatch__turn(&w, &g));
	cr_expect(strstr(g.cause, "it was busy"), "%s", g.cause);
	cr_expect_eq(w.gaps, 2);

	/* on time: no gap; the CPU clock left alone until SELFWATCH_CPU_NS passed */
	w.last_turn_ns = w.cpu_read_ns = now_ns(CLOCK_MONOTONIC);
	w.last_cpu_ns = 12345;
	cr_expect_not(selfwatch__turn(&w, &g));
	cr_expect_eq(w.last_cpu_ns, 12345, "read at a turn %llu ns after the last read",
		     (unsigned long long)(now_ns(CLOCK_MONOTONIC) - w.cpu_read_ns));
	w.cpu_read_ns -= SELFWATCH_CPU_NS;
	cr_expect_not(selfwatch__turn(&w, &g));
	cr_expect_neq(w.last_cpu_ns, 12345, "read once SELFWATCH_CPU_NS passed");
}
