#!/bin/sh
# report.sh RUN_DIR: the per-test result of a guest run (tests/kernels/run.sh) from its TAP
# report: a line per test that ran (PASS; FAIL with why, the failed assertions and the last
# words of egretd's log, kept in RUN_DIR/egretd-logs; SKIP with its reason), then the totals.
# Tests left out by --filter are not listed. Exits 1 when a test failed or the suite did not
# end cleanly, 0 otherwise.
set -eu
out=${1:?usage: report.sh RUN_DIR}
tap=$out/suite.tap
[ -f "$tap" ] || { echo "kernels: no TAP report in $out (see suite.log)" >&2; exit 1; }
rc=0
awk -v logs="$out/egretd-logs" '
# the first complaint egretd wrote about itself (not libbpf, not the verifier log), and
# where its log is
function egretd_said(suite_test,    f, line, last, found) {
	f = logs "/" suite_test ".log"
	last = ""
	found = 0
	while ((getline line < f) > 0) {
		found = 1
		if (last == "" && line ~ /^egretd: / &&
		    line ~ /fail|cannot|error|refus|not |missing|unknown|invalid|denied/)
			last = line
	}
	close(f)
	if (last != "")
		printf "     %s\n", substr(last, 1, 300)
	if (found)
		printf "     egretd log: %s\n", f
}
function flush() {
	if (failing != "")
		egretd_said(failing)
	failing = ""
}
/^ok - / {
	flush()
	name = $3
	if (match($0, /# SKIP /)) {
		why = substr($0, RSTART + 7)
		if (why == "test was skipped" || why == "Test is disabled")
			next # not selected by the filter
		printf "SKIP %s: %s\n", name, why; skip++; next
	}
	printf "PASS %s\n", name; pass++; next
}
/^not ok - / {
	flush()
	name = $4
	why = $0
	sub(/^not ok - [^ ]+ */, "", why)
	sub(/ *\([0-9.]+s\)$/, "", why)
	printf "FAIL %s%s\n", name, why == "" ? "" : ": " why
	fail++
	failing = name
	sub(/::/, ".", failing)
	next
}
failing != "" && /Assertion failed/ { sub(/^ +/, ""); printf "     %s\n", substr($0, 1, 300); next }
END {
	flush()
	printf "kernels: %d passed, %d failed, %d skipped\n", pass, fail, skip
	exit fail > 0
}' "$tap" || rc=1
status=$(cat "$out/suite.rc" 2>/dev/null || echo missing)
if [ "$status" != 0 ] && [ $rc = 0 ]; then
	echo "kernels: the suite exited $status with no failed test (see $out/suite.log)"
	rc=1
fi
exit $rc
