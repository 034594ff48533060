/* The arithmetic of loss reports (user/events/losses.c): a total's new losses beyond the ones
 * counted per sandbox and kind are reported without a sandbox, each loss once; a total read
 * before the per-sandbox counts caught up with it reports nothing twice.
 */
#include <stdint.h>

#include <criterion/criterion.h>

#include "collector.h"

/* every loss in a (sandbox, kind) count: none without a sandbox */
Test(losses, itemized_losses_leave_nothing_unkeyed)
{
	uint64_t reported = 100;

	cr_expect_eq(collector__unkeyed(150, &reported, 50), 0);
	cr_expect_eq(reported, 150);
	cr_expect_eq(collector__unkeyed(150, &reported, 0), 0, "reported twice");
	cr_expect_eq(reported, 150);
}

/* the per-sandbox map was full: the rest of the total has no sandbox */
Test(losses, what_no_count_holds_is_unkeyed)
{
	uint64_t reported = 0;

	cr_expect_eq(collector__unkeyed(70, &reported, 50), 20);
	cr_expect_eq(reported, 70);
	/* an older egretd's unreported drops, with no per-sandbox map at all */
	cr_expect_eq(collector__unkeyed(90, &reported, 0), 20);
	cr_expect_eq(reported, 90);
}

/* The kernel counts per sandbox first, then the total: read in the other order, the counts may
 * hold losses the total does not yet. They are reported once, now; the total's later increase
 * is no new loss.
 */
Test(losses, a_lagging_total_reports_nothing_twice)
{
	uint64_t reported = 10;

	cr_expect_eq(collector__unkeyed(12, &reported, 5), 0);
	cr_expect_eq(reported, 15, "reported runs ahead of the total");
	cr_expect_eq(collector__unkeyed(15, &reported, 0), 0, "the lagging losses again");
	cr_expect_eq(reported, 15);
	cr_expect_eq(collector__unkeyed(16, &reported, 0), 1);
	cr_expect_eq(reported, 16);
}

/* counters wrap in 64 bits: the difference is what counts */
Test(losses, wrapped_counters)
{
	uint64_t reported = UINT64_MAX - 4;

	cr_expect_eq(collector__unkeyed(5, &reported, 3), 7);
	cr_expect_eq(reported, 5);
}
