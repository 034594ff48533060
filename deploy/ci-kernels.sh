#!/bin/sh
# What CI runs last (.ci/run): the integration suite under the kernels sandbox hosts run, booted
# in qemu by tests/kernels/run.sh with the build tree `deploy/bootstrap.sh test` made: Debian
# 12's 6.1 in pure cgroup v2 always, then each further kernel (6.12) only when what is left of
# CI's budget covers another run as long as the first one took. Every test that ran must pass:
# the native suite passed before this, so a FAIL here is a test that fails on that kernel only
# (a test of a feature an older kernel cannot have is marked with harness_require_kernel and
# shows as SKIP). Without a filter the suites are dealt to EGRET_CI_SHARDS guests that run at
# once (the largest suite first, each to the guest with the fewest tests so far): the whole
# suite in one emulated guest took over an hour. Run as root after `deploy/bootstrap.sh test`; kernel packages are fetched
# into /var/cache/egret/kernels when it lacks them.
#
#   EGRET_CI_KERNELS  the runs, KERNEL:CGROUP words (default "6.1:unified 6.12:unified"; empty:
#                     none)
#   EGRET_CI_START    when CI started, seconds since the epoch (.ci/run sets it; default now)
#   EGRET_CI_BUDGET   the seconds CI may take in all (default 5400, 90 minutes)
#   EGRET_CI_FILTER   a Criterion filter for the suite (default: every test)
#   EGRET_CI_SHARDS   guests per kernel run, booted side by side, each running a share of the
#                     suites (default 2: one per host core; a guest's CPUs are one qemu thread)
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
margin=300 # for what CI does after the last run, and a slower guest than the last

say() {
	echo "ci-kernels: $*"
}

case $shards in '' | *[!0-9]* | 0) say "EGRET_CI_SHARDS must be a number above 0, not '$shards'"; exit 2 ;; esac
# the filters of the shards, one per line: every suite (egret_integration --list) in one of them
if [ -n "$filter" ] || [ "$shards" = 1 ]; then
	filters=${filter:-*}
else
	suites=$("$build/tests/egret_integration" --list 2>/dev/null |
		sed -n 's/^\([a-z0-9_]*\): \([0-9]*\) tests\{0,1\}$/\2 \1/p' | sort -rn) ||
		{ say "cannot list the suites of $build/tests/egret_integration"; exit 2; }
	[ -n "$suites" ] || { say "$build/tests/egret_integration lists no suite"; exit 2; }
	filters=$(echo "$suites" | awk -v n="$shards" '
		{ best = 1
		  for (i = 2; i <= n; i++) if (load[i] < load[best]) best = i
		  load[best] += $1; names[best] = names[best] (names[best] == "" ? "" : "|") $2 }
		END { for (i = 1; i <= n; i++) if (names[i] != "") printf "@(%s)/*\n", names[i] }')
fi
nfilters=$(echo "$filters" | grep -c .)

# run_one KERNEL CGROUP DIR LIMIT FILTER: one guest; its exit status in DIR.rc, its report in
# DIR.txt and on CI's output (each line prefixed with the guest's directory when there are
# several)
run_one() {
	rm -f "$3.rc"
	{
		rc=0
		"$top/tests/kernels/run.sh" "$1" --build "$build" --cgroup "$2" --out "$3" \
			--timeout "$4" ${5:+--filter "$5"} || rc=$?
		echo "$rc" >"$3.rc"
	} 2>&1 | tee "$3.txt" | if [ "$nfilters" -gt 1 ]; then sed -u "s|^|[${3##*/}] |"; else cat; fi
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
	say "$kernel, cgroup $cgroup ($((left / 60)) min of CI's budget left), $nfilters guest(s)"
	t0=$(date +%s)
	# never longer than the budget left, less a minute for the report (10 min at least): a
	# slower machine's guests may need more than an hour of a budget that has it
	limit=$((left > 660 ? left - 60 : 600))
	i=0 runs_here=""
	set -f # the filters are patterns for Criterion, not for the shell
	for f in $filters; do
		i=$((i + 1))
		run=$dir/$kernel-$cgroup
		[ "$nfilters" -gt 1 ] && run=$run-$i && say "$kernel $cgroup guest $i: $f"
		mkdir -p "$run"
		[ "$f" = "*" ] && f=
		run_one "$kernel" "$cgroup" "$run" "$limit" "$f" &
		runs_here="$runs_here $run"
	done
	set +f
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
