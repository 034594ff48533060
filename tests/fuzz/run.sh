#!/bin/sh
# Run every libFuzzer target of a build made with -DEGRET_FUZZ=ON for SECONDS each (default 30),
# starting from the seed corpus in tests/fuzz/corpus/<name>/ (new inputs go to a scratch copy,
# never into the repository). Exits 1 at the first target that crashes, leaving the crashing
# input in the work dir and naming it.
#
#   tests/fuzz/run.sh BUILD_DIR [SECONDS] [TARGET...]
set -eu

here=$(cd "$(dirname "$0")" && pwd)
build=${1:?usage: tests/fuzz/run.sh BUILD_DIR [SECONDS] [TARGET...]}
secs=${2:-30}
[ $# -ge 2 ] && shift 2 || shift $#
work=${EGRET_FUZZ_WORK:-$(mktemp -d /tmp/egret-fuzz-XXXXXX)}

targets=$*
if [ -z "$targets" ]; then
	for f in "$here"/*.c; do
		n=$(basename "$f" .c)
		[ "$n" = replay ] || targets="$targets $n"
	done
fi
for t in $targets; do
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
done
echo "fuzz: all targets ran ${secs} s without a finding (work dir $work)"
