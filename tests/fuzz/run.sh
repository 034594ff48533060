#!/bin/sh
# Run every libFuzzer target of a build made with -DEGRET_FUZZ=ON for SECONDS each (default 30),
# starting from the seed corpus in tests/fuzz/corpus/<name>/ (new inputs go to a scratch copy,
# never into the repository), EGRET_FUZZ_JOBS targets at once (default: one per CPU). Exits 1
# when a target crashes, leaving the crashing input in the work dir and naming it.
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS] [TARGET...]
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: tests/fuzz/run.sh BUILD_DIR [SECONDS] [TARGET...]}
secs=${2:-30}
[ $# -ge 2 ] && shift 2 || shift $#
jobs=${EGRET_FUZZ_JOBS:-$(nproc)}
case $jobs in '' | *[!0-9]* | 0) echo "fuzz: EGRET_FUZZ_JOBS must be a number above 0, not '$jobs'" >&2; exit 2 ;; esac

# one target (the script calls itself with EGRET_FUZZ_ONE set, under xargs -P)
if [ -n "${EGRET_FUZZ_ONE:-}" ]; then
	t=$1 work=$EGRET_FUZZ_WORK
	bin=$build/tests/fuzz/egret_fuzz_$t
	[ -x "$bin" ] || { echo "fuzz: $bin missing: build with -DEGRET_FUZZ=ON" >&2; exit 1; }
	mkdir -p "$work/$t/corpus" "$work/$t/crash"
	[ -d "$here/corpus/$t" ] && cp -r "$here/corpus/$t/." "$work/$t/corpus/"
	echo "fuzz: $t for ${secs} s"
	if ! "$bin" -max_total_time="$secs" -print_final_stats=1 -artifact_prefix="$work/$t/crash/" \
		"$work/$t/corpus" >"$work/$t/log" 2>&1; then
		tail -n 60 "$work/$t/log" >&2
		echo "fuzz: $t failed; the input is in $work/$t/crash/" >&2
		exit 1
	fi
	grep -E '^stat::number_of_executed_units|^stat::new_units_added' "$work/$t/log" |
		sed "s/^/fuzz: $t: /"
	exit 0
fi

EGRET_FUZZ_WORK=${EGRET_FUZZ_WORK:-$(mktemp -d /tmp/egret-fuzz-XXXXXX)}
export EGRET_FUZZ_WORK
targets=$*
if [ -z "$targets" ]; then
	for f in "$here"/*.c; do
		n=$(basename "$f" .c)
		[ "$n" = replay ] || targets="$targets $n"
	done
fi
# xargs exits 123 when any target failed; each failing target said which above
if ! printf '%s\n' $targets | EGRET_FUZZ_ONE=1 xargs -P "$jobs" -I{} "$0" "$build" "$secs" {}; then
	echo "fuzz: a target failed (work dir $EGRET_FUZZ_WORK)" >&2
	exit 1
fi
echo "fuzz: all targets ran ${secs} s without a finding, $jobs at once (work dir $EGRET_FUZZ_WORK)"
