#!/bin/sh
# report.sh RUN_DIR: the per-test result of a guest run (tests/kernels/run.sh) from its TAP
# report: a line per test that ran (PASS, FAIL with the assertion, SKIP with its reason), then
# the totals. Tests left out by --filter are not listed. Exits 1 when a test failed or the suite
# did not end cleanly, 0 otherwise.
set -eu
out=${1:?usage: report.sh RUN_DIR}
tap=$out/suite.tap
[ -f "$tap" ] || { echo "kernels: no TAP report in $out (see suite.log)" >&2; exit 1; }
awk '
/^ok - / {
	name = $3
	if (match($0, /# SKIP /)) {
		why = substr($0, RSTART + 7)
		if (why == "test was skipped" || why == "Test is disabled")
			next # not selected by the filter
		printf "SKIP %s: %s\n", name, why; skip++; next
	}
	printf "PASS %s\n", name; pass++; next
}
/^not ok - / { name = $4; failing = 1; printf "FAIL %s\n", name; fail++; next }
failing && /Assertion failed|^  - / { sub(/^ +/, ""); printf "     %s\n", $0; next }
/^  \.\.\./ { failing = 0 }
END {
	printf "kernels: %d passed, %d failed, %d skipped\n", pass, fail, skip
	exit fail > 0
}' "$tap" || exit 1
rc=$(cat "$out/suite.rc" 2>/dev/null || echo missing)
if [ "$rc" != 0 ]; then
	echo "kernels: the suite exited $rc (see $out/suite.log)"
	exit 1
fi
