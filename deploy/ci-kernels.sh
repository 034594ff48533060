#!/bin/sh
# What CI runs last (.ci/run): the integration suite under the kernels sandbox hosts run, booted
# in qemu by tests/kernels/run.sh with the build tree `deploy/bootstrap.sh test` made: Debian
# 12's 6.1 in pure cgroup v2 always, then each further kernel (6.12) only when what is left of
# CI's budget covers another run as long as the first one took. Every test that ran must pass:
# the native suite passed before this, so a FAIL here is a test that fails on that kernel only
# (a test of a feature an older kernel cannot have is marked with harness_require_kernel and
# shows as SKIP). Run as root after `deploy/bootstrap.sh test`; kernel packages are fetched
# into /var/cache/egret/kernels when it lacks them.
#
#   EGRET_CI_KERNELS  the runs, KERNEL:CGROUP words (default "6.1:unified 6.12:unified"; empty:
#                     none)
#   EGRET_CI_START    when CI started, seconds since the epoch (.ci/run sets it; default now)
#   EGRET_CI_BUDGET   the seconds CI may take in all (default 5400, 90 minutes)
#   EGRET_CI_FILTER   a Criterion filter for the suite (default: every test)
#   EGRET_BUILD_DIR   the build tree (default ./build, as bootstrap.sh)
#   EGRET_CI_DIR      where the runs' files go: $EGRET_CI_DIR/kernels/KERNEL-CGROUP
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=${EGRET_BUILD_DIR:-$top/build}
runs=${EGRET_CI_KERNELS-6.1:unified 6.12:unified}
start=${EGRET_CI_START:-$(date +%s)}
budget=${EGRET_CI_BUDGET:-5400}
dir=${EGRET_CI_DIR:-$top/build-ci}/kernels
filter=${EGRET_CI_FILTER:-}
margin=300 # for what CI does after the last run, and a slower guest than the last

say() {
	echo "ci-kernels: $*"
}

failed="" first="" summary=""
for r in $runs; do
	kernel=${r%%:*} cgroup=${r#*:}
	[ "$cgroup" != "$r" ] || cgroup=unified
	left=$((start + budget - $(date +%s)))
	if [ -n "$first" ] && [ "$left" -lt $((first + first / 5 + margin)) ]; then
		say "SKIPPED $kernel ($cgroup): $((left / 60)) min of CI's budget left, a run takes about $((first / 60)) min"
		summary="$summary
  $kernel $cgroup: skipped, no time left in the budget"
		continue
	fi
	say "$kernel, cgroup $cgroup ($((left / 60)) min of CI's budget left)"
	t0=$(date +%s)
	run=$dir/$kernel-$cgroup
	mkdir -p "$run"
	rm -f "$run.rc"
	# its report on CI's output and in RUN.txt; never longer than the budget left (10 min at least)
	limit=$((left > 3600 ? 3600 : (left > 600 ? left : 600)))
	{
		rc=0
		"$top/tests/kernels/run.sh" "$kernel" --build "$build" --cgroup "$cgroup" --out "$run" \
			--timeout "$limit" ${filter:+--filter "$filter"} || rc=$?
		echo "$rc" >"$run.rc"
	} 2>&1 | tee "$run.txt"
	rc=$(cat "$run.rc" 2>/dev/null || echo 2)
	took=$(($(date +%s) - t0))
	[ -n "$first" ] || first=$took
	case $rc in
	0) result=passed ;;
	1) result="FAILED (a test failed)"; failed="$failed $kernel:$cgroup" ;;
	*) result="FAILED (the run could not be made, exit $rc)"; failed="$failed $kernel:$cgroup" ;;
	esac
	say "$kernel $cgroup: $result in $took s"
	times=$(sed -n 's/^kernels: .*: \(boot [0-9]* s, suite [0-9]* s\),.*/\1/p' "$run.txt")
	summary="$summary
  $kernel $cgroup: $result, $took s${times:+ ($times)}"
done
say "summary:$summary"
if [ -n "$failed" ]; then
	say "failed:$failed (files in $dir)"
	exit 1
fi
