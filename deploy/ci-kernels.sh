#!/bin/sh
# What CI runs last (.ci/run): the integration suite under the kernels sandbox hosts run, booted
# in qemu by tests/kernels/run.sh with the build tree `deploy/bootstrap.sh test` made: Debian
# 12's 6.1 in pure cgroup v2 always, then each further kernel (6.12) only when what is left of
# CI's budget covers another run as long as the first one took. Every test that ran must pass:
# the native suite passed before this, so a FAIL here is a test that fails on that kernel only
# (a test of a feature an older kernel cannot have is marked with harness_require_kernel and
# shows as SKIP). Without a filter EGRET_CI_SHARDS guests run at once, sharing a queue of the
# suites (the largest first): each takes the next suite no guest has taken whenever it is free
# (tests/kernels/run.sh --queue), so they finish together however long a suite takes under
# emulation (dealt out beforehand by their number of tests, one guest finished 20 minutes
# after the other). Run as root after `deploy/bootstrap.sh test`; kernel packages are fetched
# into /var/cache/egret/kernels when it lacks them.
#
#   EGRET_CI_KERNELS  the runs, KERNEL:CGROUP words (default "6.1:unified 6.12:unified"; empty:
#                     none)
#   EGRET_CI_START    when CI started, seconds since the epoch (.ci/run sets it; default now)
#   EGRET_CI_BUDGET   the seconds CI may take in all (default 5400, 90 minutes)
#   EGRET_CI_FILTER   a Criterion filter for the suite (default: every test but the suites of
#                     EGRET_CI_NATIVE_ONLY)
#   EGRET_CI_NATIVE_ONLY  suites left to the native run: they test egretd's user space alone
#                     (default "delivery configmap": sinks, spool and SIEM delivery; the
#                     policy file's reload), which no kernel changes
#   EGRET_CI_SHARDS   guests per kernel run, booted side by side, taking suites from one queue
#                     (default 2: one per host core; a guest's CPUs are one qemu thread)
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
shards=${EGRET_CI_SHARDS:-2}
native_only=${EGRET_CI_NATIVE_ONLY-delivery configmap}
margin=300 # for what CI does after the last run, and a slower guest than the last

say() {
	echo "ci-kernels: $*"
}

case $shards in '' | *[!0-9]* | 0) say "EGRET_CI_SHARDS must be a number above 0, not '$shards'"; exit 2 ;; esac
# the suites for the queue, the largest first, or the one filter given
if [ -n "$filter" ]; then
	nguests=1
else
	suites=$("$build/tests/egret_integration" --list 2>/dev/null |
		sed -n 's/^\([a-z0-9_]*\): \([0-9]*\) tests\{0,1\}$/\2 \1/p' | sort -rn) ||
		{ say "cannot list the suites of $build/tests/egret_integration"; exit 2; }
	for s in $native_only; do
		suites=$(echo "$suites" | grep -v " $s\$" || true)
	done
	[ -n "$suites" ] || { say "$build/tests/egret_integration lists no suite"; exit 2; }
	[ -z "$native_only" ] || say "left to the native run (user space only): $native_only"
	suites=$(echo "$suites" | awk '{ print $2 }')
	nguests=$shards
fi

# run_one KERNEL CGROUP DIR LIMIT WHAT...: one guest (WHAT: --filter F or --queue Q); its exit
# status in DIR.rc, its report in DIR.txt and on CI's output (each line prefixed with the
# guest's directory when there are several)
run_one() {
	k=$1 c=$2 d=$3 t=$4
	shift 4
	rm -f "$d.rc"
	{
		rc=0
		"$top/tests/kernels/run.sh" "$k" --build "$build" --cgroup "$c" --out "$d" \
			--timeout "$t" "$@" || rc=$?
		echo "$rc" >"$d.rc"
	} 2>&1 | tee "$d.txt" | if [ "$nguests" -gt 1 ]; then sed -u "s|^|[${d##*/}] |"; else cat; fi
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
	say "$kernel, cgroup $cgroup ($((left / 60)) min of CI's budget left), $nguests guest(s)"
	t0=$(date +%s)
	# never longer than the budget left, less a minute for the report (10 min at least): a
	# slower machine's guests may need more than an hour of a budget that has it
	limit=$((left > 660 ? left - 60 : 600))
	runs_here=""
	if [ -n "$filter" ]; then
		run=$dir/$kernel-$cgroup
		mkdir -p "$run"
		run_one "$kernel" "$cgroup" "$run" "$limit" --filter "$filter" &
		runs_here=$run
	else
		queue=$dir/$kernel-$cgroup-queue
		rm -rf "$queue"
		mkdir -p "$queue"
		echo "$suites" >"$queue/suites"
		say "$kernel $cgroup: $(echo "$suites" | wc -l) suites queued for $nguests guests: $(echo $suites)"
		i=0
		while [ "$i" -lt "$nguests" ]; do
			i=$((i + 1))
			run=$dir/$kernel-$cgroup-$i
			[ "$nguests" -gt 1 ] || run=$dir/$kernel-$cgroup
			mkdir -p "$run"
			run_one "$kernel" "$cgroup" "$run" "$limit" --queue "$queue" &
			runs_here="$runs_here $run"
		done
	fi
	wait
	took=$(($(date +%s) - t0))
	[ -n "$first" ] || first=$took
	result=passed
	for run in $runs_here; do
		rc=$(cat "$run.rc" 2>/dev/null || echo 2)
		case $rc in
		0) r=passed ;;
		1) r="FAILED (a test failed)" ;;
		*) r="FAILED (the run could not be made, exit $rc)" ;;
		esac
		[ "$rc" = 0 ] || result=FAILED
		times=$(sed -n 's/^kernels: .*: \(boot [0-9]* s, suite [0-9]* s\),.*/\1/p' "$run.txt")
		summary="$summary
  ${run##*/}: $r${times:+ ($times)}"
	done
	[ "$result" = passed ] || failed="$failed $kernel:$cgroup"
	say "$kernel $cgroup: $result in $took s"
done
say "summary:$summary"
if [ -n "$failed" ]; then
	say "failed:$failed (files in $dir)"
	exit 1
fi
