#!/bin/sh
# Set up egret on a Debian 12 machine, as root, from a clean clone:
#
#   deploy/bootstrap.sh run [EGRETD OPTIONS]   install packages, build, run egretd in the
#                                              foreground on the default policy and sink
#   deploy/bootstrap.sh test                   install packages, build, run every test
#   deploy/bootstrap.sh bench                  install packages, build, run the benchmarks
#
# Packages come from deploy/packages.txt (bench adds deploy/bench-packages.txt: auditd, to
# compare with); the build goes to ./build (or $EGRET_BUILD_DIR).
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
build=${EGRET_BUILD_DIR:-$top/build}

die() {
	echo "bootstrap: $*" >&2
	exit 1
}

# install_packages [LIST...]: the packages of deploy/packages.txt and the lists given
install_packages() {
	pkgs=$(cat "$top/deploy/packages.txt" "$@" | grep -v '^#' | tr '\n' ' ')
	# what is installed, and what installed packages provide (nodesource's nodejs provides
	# npm, and conflicts with Debian's)
	have=$(dpkg-query -W -f='${db:Status-Abbrev} ${Package} ${Provides}\n' |
		awk '$1 == "ii" { for (i = 2; i <= NF; i++) { t = $i; gsub(/,/, "", t)
			if (t ~ /^[a-z0-9][a-z0-9+.-]*$/) print t } }')
	missing=
	for p in $pkgs; do
		# "a|b": any of them will do; when none is there, the first is installed
		found=
		for alt in $(printf '%s\n' "$p" | tr '|' ' '); do
			if printf '%s\n' "$have" | grep -qxF "$alt"; then
				found=$alt
				break
			fi
		done
		[ -n "$found" ] || missing="$missing ${p%%|*}"
	done
	[ -z "$missing" ] && return 0
	echo "bootstrap: installing$missing"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq || die "apt-get update failed"
	# shellcheck disable=SC2086
	apt-get install -y -qq --no-install-recommends $missing >/dev/null ||
		die "apt-get install failed for:$missing"
}

# build [CMAKE OPTIONS]: configure and build into $build
build() {
	cmake -S "$top" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$build" -j "$(nproc)"
}

[ "$(id -u)" = 0 ] || die "run me as root: egret loads BPF programs and manages cgroups"
cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
run)
	install_packages
	build
	# the default policy, unless the host has one already
	if [ ! -e /etc/egret/egret.policy ]; then
		install -D -m 0644 "$top/deploy/egret.policy" /etc/egret/egret.policy
		echo "bootstrap: installed the default policy in /etc/egret/egret.policy"
	fi
	echo "bootstrap: starting egretd (Ctrl-C stops it; enforcement stays attached)"
	exec "$build/egretd" "$@"
	;;
test)
	install_packages
	# the tests build with warnings as errors, as CI does
	build -DEGRET_WERROR=ON
	cd "$build"
	exec ctest --output-on-failure --verbose
	;;
bench)
	install_packages "$top/deploy/bench-packages.txt"
	build
	for b in connect dns audit sinks pkg packet start; do
		echo "bootstrap: egret_bench_$b"
		"$build/tests/bench/egret_bench_$b" || die "egret_bench_$b failed"
	done
	;;
*)
	echo "usage: deploy/bootstrap.sh run [EGRETD OPTIONS] | test | bench" >&2
	exit 2
	;;
esac
