#!/bin/sh
# What CI runs after the test command (README, "Tests"): builds the other compilers and build
# types must pass warning-free. Run as root after `deploy/bootstrap.sh test` (the packages are
# installed then). Build trees go under $EGRET_CI_DIR (default ./build-ci).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
ci=${EGRET_CI_DIR:-$top/build-ci}

step() {
	echo "ci: $*"
}

# warning-free with clang as Release, besides the default gcc RelWithDebInfo build
step "clang Release build, warnings as errors"
CC=clang cmake -S "$top" -B "$ci/clang-release" -DCMAKE_BUILD_TYPE=Release -DEGRET_WERROR=ON \
	>/dev/null
cmake --build "$ci/clang-release" -j "$(nproc)"

# the unit suite under ASan and UBSan (gcc), and the fuzz corpora replayed by it
step "unit suite under AddressSanitizer and UndefinedBehaviorSanitizer"
cmake -S "$top" -B "$ci/sanitize" -DCMAKE_BUILD_TYPE=Debug -DEGRET_WERROR=ON \
	-DEGRET_SANITIZE=address,undefined >/dev/null
cmake --build "$ci/sanitize" -j "$(nproc)"
(cd "$ci/sanitize" && ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1 \
	ctest --output-on-failure -E '^integration$')

# every libFuzzer target for a short time (EGRET_FUZZ_SECONDS, default 30) from its seeds
step "fuzz targets, ${EGRET_FUZZ_SECONDS:-30} s each"
CC=clang cmake -S "$top" -B "$ci/fuzz" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DEGRET_FUZZ=ON \
	>/dev/null
cmake --build "$ci/fuzz" -j "$(nproc)"
"$top/tests/fuzz/run.sh" "$ci/fuzz" "${EGRET_FUZZ_SECONDS:-30}"
