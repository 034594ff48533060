#!/bin/sh
# Run egret's integration suite under another Linux kernel, booted in qemu.
#
#   tests/kernels/run.sh KERNEL [--build DIR] [--cgroup unified|hybrid] [--filter PATTERN]
#                               [--queue DIR] [--timeout SECONDS] [--mem MB] [--out DIR]
#
# KERNEL is a Debian kernel package name (linux-image-6.1.0-57-amd64), a short name for the
# newest one apt offers (6.1: Debian 12's own kernel; 6.12: bookworm's 6.12), or a path to a
# linux-image .deb. Packages are fetched with apt-get download (apt-get update first when apt
# does not know the package) into $EGRET_KERNEL_CACHE (default /var/cache/egret/kernels), and
# kept there unpacked, with the initramfs built for them. The guest has no network device: its
# root is this host's file system, read only over 9p under a tmpfs overlay, so it runs the build
# tree's own egretd, egretctl and test binaries with this host's userland (dnsmasq, dig,
# python3, pip, npm...), and loads the kernel's modules from the package (bind-mounted on
# /lib/modules/VERSION: veth, dummy, tun, nf_tables... load on demand). Inside, guest.sh mounts
# cgroup2 alone (unified: Debian 12's default) or v1 controllers with cgroup2 at
# /sys/fs/cgroup/unified (hybrid: like the machines CI runs on), bpffs, tracefs, /run and /tmp
# as systemd would, and runs DIR/tests/egret_integration with the filter given (default: every
# test), or with --queue the suites named in DIR/suites (one a line) that no other guest sharing
# DIR has taken yet, one after another (deploy/ci-kernels.sh boots two such guests side by
# side). qemu emulates the CPU (TCG, no KVM): slow. Its two virtual CPUs run in one host
# thread by default (EGRET_QEMU_ACCEL, default tcg,thread=single): with a thread per CPU, 6.12
# guests died in 2 of 3 full runs with "Oops: int3" where the kernel patches its own code while
# the other CPU runs it (a tracepoint enabled by an attach), which real CPUs and one TCG thread
# do not do. The guest kernel boots with mitigations=off init_on_alloc=0 (EGRET_GUEST_APPEND
# replaces them): it runs nothing but the suite, and on an emulated CPU the page-table switch
# of every system call and the zeroing of every allocation (the verifier's states) cost a
# test about a tenth of its time (measured: 101 s with them, 91 s without, for one dns test).
#
# Prints one line per test (PASS, FAIL with the assertion and egretd's log, SKIP with the
# reason), a summary, the time to boot and to run the suite, and where the run's files are
# (console.log, guest.log, suite.log, suite.tap, egretd-logs/ of failed tests). Exits 0 when
# every test that ran passed, 1 when one failed, 2 when the run could not be made (no kernel
# package, qemu, busybox-static or kmod missing, the guest did not boot or timed out).
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/kernels
cache=${EGRET_KERNEL_CACHE:-/var/cache/egret/kernels}
accel=${EGRET_QEMU_ACCEL:-tcg,thread=single}
append=${EGRET_GUEST_APPEND-mitigations=off init_on_alloc=0}

# anything that stops the script before the report is a run that could not be made: exit 2
phase=setup
trap 'rc=$?; if [ "$phase" != reported ] && [ $rc -ne 0 ] && [ $rc -ne 2 ]; then
	echo "kernels: stopped while preparing the run ($phase, exit $rc)" >&2; exit 2; fi' EXIT
die() {
	echo "kernels: $*" >&2
	exit 2
}
usage() {
	sed -n '4,5p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}
need() { # COMMAND PACKAGE [WHAT FOR]
	command -v "$1" >/dev/null 2>&1 ||
		die "$1 missing${3:+ ($3)}: apt-get install $2 (deploy/bootstrap.sh installs deploy/packages.txt)"
}

kernel= build=$top/build cgroup=unified filter= queue= timeout=3600 mem=3072 out=
while [ $# -gt 0 ]; do
	case $1 in
	--build | --cgroup | --filter | --queue | --timeout | --mem | --out)
		[ $# -ge 2 ] || die "$1 needs a value"
		case $1 in
		--build) build=$2 ;;
		--cgroup) cgroup=$2 ;;
		--filter) filter=$2 ;;
		--queue) queue=$2 ;;
		--timeout) timeout=$2 ;;
		--mem) mem=$2 ;;
		--out) out=$2 ;;
		esac
		shift 2
		;;
	-h | --help) usage ;;
	-*) echo "kernels: unknown option $1" >&2; usage ;;
	*) [ -z "$kernel" ] || usage; kernel=$1; shift ;;
	esac
done
[ -n "$kernel" ] || usage
case $cgroup in unified | hybrid) ;; *) die "--cgroup must be unified or hybrid, not '$cgroup'" ;; esac
case $timeout in *[!0-9]* | '') die "--timeout takes seconds, not '$timeout'" ;; esac
case $mem in *[!0-9]* | '') die "--mem takes MiB, not '$mem'" ;; esac
[ "$(id -u)" = 0 ] || die "run me as root (apt-get download, the guest's share of /)"
if [ -n "$queue" ]; then
	[ -z "$filter" ] || die "--filter and --queue: one or the other"
	queue=$(cd "$queue" 2>/dev/null && pwd) || die "no queue directory at $queue"
	[ -s "$queue/suites" ] || die "$queue/suites names no suite"
fi
b=$(cd "$build" 2>/dev/null && pwd) || die "no build tree at $build: build egret first"
build=$b
for b in tests/egret_integration egretd egretctl; do
	[ -x "$build/$b" ] || die "$build/$b missing: build egret first (cmake --build $build)"
done
need qemu-system-x86_64 qemu-system-x86 "boots the kernel"
need busybox busybox-static "the initramfs"
need modprobe kmod "the kernel's modules"
need depmod kmod "the kernel's modules"
need dpkg-deb dpkg
need flock util-linux
bb=$(command -v busybox)
# the initramfs has no libc: only the static busybox of busybox-static runs there
if ldd "$bb" >/dev/null 2>&1; then
	if [ -x /bin/busybox ] && ! ldd /bin/busybox >/dev/null 2>&1; then
		bb=/bin/busybox
	else
		die "$bb is linked dynamically: apt-get install busybox-static"
	fi
fi

# ---- the kernel package (cached; one run at a time prepares the cache) ---------------------
mkdir -p "$cache"
exec 9>"$cache/.lock"
flock 9
phase="fetching the kernel package"

# the package names a short name stands for
short_regex() {
	case $1 in
	6.1) echo '^linux-image-6\.1\.0-[0-9]+-amd64$' ;;
	6.12) echo '^linux-image-6\.12\.[0-9]+\+deb12-amd64$' ;;
	esac
}
# newest_pkg REGEX: the newest linux-image package apt can install whose name matches REGEX
newest_pkg() {
	apt-cache pkgnames linux-image- | grep -E "$1" | sort -V | while read -r p; do
		apt_has "$p" && echo "$p"
	done | tail -n 1
}
# newest_cached REGEX: the same among the packages in the cache
newest_cached() {
	for f in "$cache"/linux-image-*_*.deb; do
		[ -f "$f" ] || continue
		f=${f##*/}
		echo "${f%%_*}"
	done | grep -E "$1" | sort -V | tail -n 1
}
# apt_has PKG: apt has a version of PKG to download
apt_has() {
	apt-cache policy "$1" 2>/dev/null | grep -q '^  Candidate: [^(]'
}
resolve_pkg() {
	case $kernel in
	6.1 | 6.12) newest_pkg "$(short_regex "$kernel")" ;;
	*) apt_has "$kernel" && echo "$kernel" ;;
	esac
}
cached_deb() {
	ls "$cache/${1}_"*.deb 2>/dev/null | sort -V | tail -n 1
}

case $kernel in
*.deb | */*)
	[ -f "$kernel" ] || die "$kernel: no such file"
	deb=$(cd "$(dirname "$kernel")" && pwd)/$(basename "$kernel")
	pkg=$(dpkg-deb -f "$deb" Package) || die "$kernel is not a .deb"
	;;
*)
	# a package cached before needs no apt at all (a short name takes the newest cached)
	case $kernel in
	6.1 | 6.12) pkg=$(newest_cached "$(short_regex "$kernel")") ;;
	*) pkg=$kernel ;;
	esac
	# a short name follows apt to a newer kernel when apt knows one
	want=$(resolve_pkg || true)
	if [ -z "$want" ] && [ -z "$(cached_deb "$pkg")" ]; then
		echo "kernels: apt does not know '$kernel' yet: apt-get update"
		apt-get update -qq || die "apt-get update failed"
		want=$(resolve_pkg || true)
	fi
	[ -n "$want" ] && pkg=$want
	[ -n "$want" ] || [ -n "$(cached_deb "$pkg")" ] ||
		die "apt knows no kernel package '$kernel' (KERNEL: a linux-image-* package, 6.1, 6.12 or a .deb)"
	deb=$(cached_deb "$pkg")
	if [ -z "$deb" ]; then
		echo "kernels: fetching $pkg into $cache"
		dl=$(mktemp -d "$cache/.download-XXXXXX")
		(cd "$dl" && apt-get download -q "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed') || true
		f=$(ls "$dl"/*.deb 2>/dev/null | head -n 1)
		[ -n "$f" ] || { rm -rf "$dl"; die "apt-get download $pkg failed"; }
		mv "$f" "$cache/"
		rm -rf "$dl"
		deb=$(cached_deb "$pkg")
	fi
	;;
esac
phase="unpacking $deb"
kdir=$cache/$pkg
if [ ! -d "$kdir/boot" ]; then
	t=$(mktemp -d "$kdir.unpack-XXXXXX")
	dpkg-deb -x "$deb" "$t" || { rm -rf "$t"; die "cannot unpack $deb"; }
	rm -rf "$kdir"
	mv "$t" "$kdir"
fi
vmlinuz=$(ls "$kdir"/boot/vmlinuz-* 2>/dev/null | head -n 1)
[ -n "$vmlinuz" ] || die "$deb holds no /boot/vmlinuz-*: not a kernel image package"
kver=${vmlinuz##*/vmlinuz-}
[ -f "$kdir/lib/modules/$kver/modules.dep" ] || depmod -b "$kdir" "$kver"

# ---- the initramfs: busybox, the modules that mount the root, /init (cached) ---------------
phase="building the initramfs"
initrd=$cache/initrd-$kver.cpio.gz
if [ ! -f "$initrd" ] || [ "$here/init.sh" -nt "$initrd" ] || [ "$0" -nt "$initrd" ]; then
	w=$(mktemp -d /tmp/egret-initrd-XXXXXX)
	mkdir -p "$w/bin" "$w/mods" "$w/proc" "$w/sys" "$w/dev" "$w/host" "$w/upper" "$w/newroot"
	cp "$bb" "$w/bin/busybox"
	: >"$w/mods/order"
	for m in virtio_pci 9pnet_virtio 9p overlay; do
		modprobe -d "$kdir" -S "$kver" --show-depends "$m" 2>/dev/null |
			while read -r kind path _; do
				[ "$kind" = insmod ] || continue
				n=${path##*/}
				n=${n%.xz}
				n=${n%.zst}
				grep -qx "$n" "$w/mods/order" && continue
				case $path in
				*.xz) need xz xz-utils "compressed modules"; xz -dc "$path" >"$w/mods/$n" ;;
				*.zst) need zstd zstd "compressed modules"; zstd -qdc "$path" >"$w/mods/$n" ;;
				*) cp "$path" "$w/mods/$n" ;;
				esac
				echo "$n" >>"$w/mods/order"
			done
	done
	cp "$here/init.sh" "$w/init"
	chmod 755 "$w/init"
	(cd "$w" && find . | "$bb" cpio -o -H newc 2>/dev/null | gzip -1) >"$initrd.$$"
	mv "$initrd.$$" "$initrd"
	rm -rf "$w"
fi
flock -u 9

# ---- the run ----------------------------------------------------------------------------
phase="starting qemu"
[ -n "$out" ] || out=$(mktemp -d "/var/tmp/egret-kernel-$kver-$cgroup-XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)
rm -rf "$out/suite.tap" "$out/suite.rc" "$out/suite.log" "$out/egretd-logs" "$out/timing" "$out"/tap-*
# what the guest reads: sourced by guest.sh
cat >"$out/params" <<PARAMS
EGRET_TOP='$top'
EGRET_BUILD='$build'
EGRET_CGROUP='$cgroup'
EGRET_FILTER='$filter'
EGRET_QUEUE='${queue:+1}'
EGRET_MODULES='$kdir/lib/modules/$kver'
PARAMS
if [ -n "$queue" ]; then
	echo "kernels: $pkg ($kver), cgroup $cgroup, suites from the queue $queue, build $build"
else
	echo "kernels: $pkg ($kver), cgroup $cgroup, filter '${filter:-all}', build $build"
fi
echo "kernels: booting qemu ($accel, 2 CPUs, $mem MiB, no network device); files in $out"
start=$(date +%s)
timeout --foreground -k 10 "$timeout" qemu-system-x86_64 -accel "$accel" -cpu max -smp 2 \
	-m "$mem" -nographic -no-reboot -nic none \
	-kernel "$vmlinuz" -initrd "$initrd" \
	-append "console=ttyS0 rdinit=/init panic=-1 quiet loglevel=3 $append egret.guest=$here/guest.sh" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs local,path="$out",mount_tag=out,security_model=none \
	${queue:+-virtfs local,path="$queue",mount_tag=queue,security_model=none} \
	</dev/null >"$out/console.log" 2>&1 &
qpid=$!
phase="running the guest"
# progress while the guest runs: tests finished so far, once a minute
last=-1
while kill -0 "$qpid" 2>/dev/null; do
	for _ in 1 2 3 4 5 6 7 8 9 10 11 12; do
		sleep 5
		kill -0 "$qpid" 2>/dev/null || break 2
	done
	# a test --filter leaves out is a SKIP "Test is disabled": not one done
	n=$(grep -E '^\[(PASS|FAIL|SKIP)\]' "$out/suite.log" 2>/dev/null |
		grep -cv ': Test is disabled$' || true)
	[ "${n:-0}" = "$last" ] && continue
	last=${n:-0}
	echo "kernels: $(($(date +%s) - start)) s, $last tests done"
done
set +e
wait "$qpid"
qrc=$?
set -e
secs=$(($(date +%s) - start))
if [ ! -f "$out/suite.rc" ]; then
	[ "$qrc" = 124 ] && why="timed out after $timeout s" || why="qemu exited $qrc"
	echo "kernels: last lines of the console:" >&2
	tail -n 20 "$out/console.log" >&2
	if [ -f "$out/guest.log" ]; then
		echo "kernels: last lines of guest.log:" >&2
		tail -n 10 "$out/guest.log" >&2
	fi
	# what did finish (the suites taken from a queue and done): their results all the same
	if [ -s "$out/suite.tap" ]; then
		echo "kernels: the tests that finished before the end:" >&2
		"$here/report.sh" "$out" >&2 || true
	fi
	die "the guest did not finish the suite ($why); see $out/console.log"
fi
phase=reported
# each queued suite's time in the guest (guest.sh), the longest first
times=$(sed -n 's/^suite \([a-z0-9_]*\): exit [0-9]* in \([0-9]*\) s$/\2 \1/p' "$out/guest.log" |
	sort -rn | awk '{ printf "%s%s %s s", (NR > 1 ? ", " : ""), $2, $1 }')
[ -z "$times" ] || echo "kernels: suites by time: $times"
rc=0
"$here/report.sh" "$out" || rc=$?
# the suite's own time, from the guest's clock; the rest is booting and setting up
suite=$(awk '$1 == "suite-start" { s = $2 } $1 == "suite-end" { e = $2 }
	END { if (s != "" && e != "") printf "%d", e - s + 0.5 }' "$out/timing" 2>/dev/null || true)
if [ -n "$suite" ]; then
	echo "kernels: $pkg, cgroup $cgroup: boot $((secs - suite)) s, suite $suite s, $secs s in all"
else
	echo "kernels: $pkg, cgroup $cgroup: $secs s in all"
fi
echo "kernels: files in $out"
exit $rc
