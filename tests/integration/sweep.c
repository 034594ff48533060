/* Before any integration test: remove what crashed tests of earlier runs left behind. */
#include <criterion/criterion.h>
#include <criterion/hooks.h>

#include "harness.h"

ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	harness_sweep_stale();
}
