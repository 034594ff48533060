/* Before any integration test: remove what crashed tests of earlier runs left behind. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include "harness.h"

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	harness_sweep_stale();
}

/* After the last test: what a test that crashed or timed out (no .fini ran) left, egretd's
 * keeper included, goes now rather than at the next run.
 */
ReportHook(POST_ALL)(struct criterion_global_stats *stats)
{
	harness_sweep_stale();
}
