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
