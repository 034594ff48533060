#!/bin/sh
# Run egret's integration suite under another Linux kernel, booted in qemu.
#
#   tests/kernels/run.sh KERNEL [--build DIR] [--cgroup unified|hybrid] [--filter PATTERN]
#                               [--timeout SECONDS] [--mem MB] [--out DIR]
#
# KERNEL is a Debian kernel package (linux-image-6.1.0-57-amd64), a short name for the newest
# one apt offers (6.1: Debian 12's own kernel; 6.12: bookworm's 6.12), or a linux-image .deb.
# Packages are fetched with apt-get download into $EGRET_KERNEL_CACHE (default
# /var/cache/egret/kernels) and kept there. The guest has no network device: its root is this
# host's file system, read only over 9p under a tmpfs overlay, so it runs the build tree's own
# egretd, egretctl and test binaries with this host's userland (dnsmasq, dig, python3...), and
# the kernel's modules are loaded from the package. Inside, the guest mounts cgroup2 alone
# (unified, Debian 12's default) or v1 controllers plus cgroup2 at /sys/fs/cgroup/unified
# (hybrid), bpffs and tracefs as systemd would, and runs build/tests/egret_integration with the
# filter given (default: every test).
#
# Prints one line per test (PASS, FAIL, SKIP with the reason), a summary, and where the run's
# files are (console log, the suite's log, the TAP report, egretd logs of failed tests). Exits 0
# when no test failed, 1 when one did, 2 when the run itself could not be made (no kernel, qemu
# missing, the guest did not boot or timed out).
set -eu

top=$(cd "$(dirname "$0")/../.." && pwd)
here=$top/tests/kernels
cache=${EGRET_KERNEL_CACHE:-/var/cache/egret/kernels}

die() {
	echo "kernels: $*" >&2
	exit 2
}
usage() {
	sed -n '3,5p' "$0" | sed 's/^# \{0,1\}//' >&2
	exit 2
}

kernel= build=$top/build cgroup=unified filter= timeout=3600 mem=3072 out=
while [ $# -gt 0 ]; do
	case $1 in
	--build) build=$2; shift 2 ;;
	--cgroup) cgroup=$2; shift 2 ;;
	--filter) filter=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--out) out=$2; shift 2 ;;
	-h | --help) usage ;;
	-*) echo "kernels: unknown option $1" >&2; usage ;;
	*) [ -z "$kernel" ] || usage; kernel=$1; shift ;;
	esac
done
[ -n "$kernel" ] || usage
case $cgroup in unified | hybrid) ;; *) die "--cgroup must be unified or hybrid, not '$cgroup'" ;; esac
build=$(cd "$build" 2>/dev/null && pwd) || die "no build tree at $build: build egret first"
[ -x "$build/tests/egret_integration" ] || die "$build/tests/egret_integration missing: build egret first"
for p in qemu-system-x86_64:qemu-system-x86 busybox:busybox-static depmod:kmod dpkg-deb:dpkg; do
	command -v "${p%%:*}" >/dev/null || die "${p%%:*} missing: apt-get install ${p#*:}"
done
[ "$(id -u)" = 0 ] || die "run me as root (apt-get download, the guest's root share)"

# ---- the kernel package ---------------------------------------------------------------------
# newest_pkg REGEX: the newest linux-image package apt knows whose name matches REGEX
newest_pkg() {
	apt-cache pkgnames linux-image- | grep -E "$1" | sort -V | tail -n 1
}
case $kernel in
*.deb)
	deb=$(cd "$(dirname "$kernel")" && pwd)/$(basename "$kernel")
	[ -f "$deb" ] || die "$kernel: no such file"
	pkg=$(dpkg-deb -f "$deb" Package)
	;;
*)
	case $kernel in
	6.1) pkg=$(newest_pkg '^linux-image-6\.1\.0-[0-9]+-amd64$') ;;
	6.12) pkg=$(newest_pkg '^linux-image-6\.12\.[0-9]+\+deb12-amd64$') ;;
	*) pkg=$kernel ;;
	esac
	[ -n "$pkg" ] || die "apt knows no kernel package for '$kernel' (apt-get update?)"
	mkdir -p "$cache"
	deb=$(ls "$cache/${pkg}_"*.deb 2>/dev/null | sort -V | tail -n 1 || true)
	if [ -z "$deb" ]; then
		echo "kernels: fetching $pkg"
		(cd "$cache" && apt-get download "$pkg" 2>&1 | grep -v '^W: Download is performed unsandboxed') ||
			die "apt-get download $pkg failed"
		deb=$(ls "$cache/${pkg}_"*.deb | sort -V | tail -n 1)
	fi
	;;
esac
kdir=$cache/$pkg
if [ ! -d "$kdir/boot" ]; then
	rm -rf "$kdir.tmp"
	dpkg-deb -x "$deb" "$kdir.tmp" || die "cannot unpack $deb"
	mv "$kdir.tmp" "$kdir"
fi
vmlinuz=$(ls "$kdir"/boot/vmlinuz-* | head -n 1)
kver=${vmlinuz##*/vmlinuz-}
[ -f "$kdir/lib/modules/$kver/modules.dep" ] || depmod -b "$kdir" "$kver"

# ---- the initramfs: busybox, the modules that mount the root, /init ---------------------
initrd=$cache/initrd-$kver.cpio.gz
if [ ! -f "$initrd" ] || [ "$here/init.sh" -nt "$initrd" ]; then
	w=$(mktemp -d /tmp/egret-initrd-XXXXXX)
	mkdir -p "$w/bin" "$w/mods" "$w/proc" "$w/sys" "$w/dev" "$w/host" "$w/upper" "$w/newroot"
	cp /bin/busybox "$w/bin/busybox"
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
				*.xz) xz -dc "$path" >"$w/mods/$n" ;;
				*.zst) zstd -qdc "$path" >"$w/mods/$n" ;;
				*) cp "$path" "$w/mods/$n" ;;
				esac
				echo "$n" >>"$w/mods/order"
			done
	done
	cp "$here/init.sh" "$w/init"
	chmod 755 "$w/init"
	(cd "$w" && find . | busybox cpio -o -H newc 2>/dev/null | gzip -1) >"$initrd.tmp"
	mv "$initrd.tmp" "$initrd"
	rm -rf "$w"
fi

# ---- the run ----------------------------------------------------------------------------
[ -n "$out" ] || out=$(mktemp -d "/var/tmp/egret-kernel-$kver-$cgroup-XXXXXX")
mkdir -p "$out"
out=$(cd "$out" && pwd)
# what the guest reads: sourced by guest.sh
cat >"$out/params" <<PARAMS
EGRET_TOP='$top'
EGRET_BUILD='$build'
EGRET_CGROUP='$cgroup'
EGRET_FILTER='$filter'
EGRET_MODULES='$kdir/lib/modules/$kver'
PARAMS
echo "kernels: $pkg ($kver), cgroup $cgroup, filter '${filter:-all}', build $build"
echo "kernels: booting qemu (TCG, 2 CPUs, $mem MiB, no network device); files in $out"
start=$(date +%s)
timeout --foreground -k 10 "$timeout" qemu-system-x86_64 -accel tcg -cpu max -smp 2 -m "$mem" \
	-nographic -no-reboot -nic none \
	-kernel "$vmlinuz" -initrd "$initrd" \
	-append "console=ttyS0 rdinit=/init panic=-1 quiet loglevel=3 egret.guest=$here/guest.sh" \
	-virtfs local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap \
	-virtfs local,path="$out",mount_tag=out,security_model=none \
	</dev/null >"$out/console.log" 2>&1 &
qpid=$!
# progress while the guest runs: tests finished so far
while kill -0 "$qpid" 2>/dev/null; do
	sleep 30
	kill -0 "$qpid" 2>/dev/null || break
	n=$(grep -cE '^\[(PASS|FAIL|SKIP)\]' "$out/suite.log" 2>/dev/null || true)
	echo "kernels: $(($(date +%s) - start)) s, ${n:-0} tests done"
done
set +e
wait "$qpid"
qrc=$?
set -e
secs=$(($(date +%s) - start))
if [ ! -f "$out/suite.rc" ]; then
	[ "$qrc" = 124 ] && why="timed out after $timeout s" || why="qemu exited $qrc"
	tail -n 30 "$out/console.log" >&2
	die "the guest did not finish the suite ($why); see $out/console.log"
fi
rc=0
"$here/report.sh" "$out" || rc=$?
echo "kernels: $pkg, cgroup $cgroup: $secs s in all; files in $out"
exit $rc
