#!/bin/sh
# The guest's second stage, in this host's userland under an overlay: set the system up as a
# Debian 12 host's systemd would (cgroups in the layout asked for, bpffs, tracefs, /run, the
# kernel's modules), run the integration suite, write its log, TAP report and exit status to
# /egret-out, and power off. Nothing here needs the network: the guest has no device.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
out=/egret-out
. "$out/params"
exec >"$out/guest.log" 2>&1
console() {
	echo "EGRET-GUEST: $*" >/dev/console
	echo "$*"
}
finish() {
	sync
	echo o >/proc/sysrq-trigger 2>/dev/null
	poweroff -f
}

# the kernel's own modules (veth, dummy, tun, nf_tables... load on demand through modprobe)
mkdir -p "/lib/modules/$(uname -r)"
mount --bind "$EGRET_MODULES" "/lib/modules/$(uname -r)" || console "no modules at $EGRET_MODULES"

if [ "$EGRET_CGROUP" = hybrid ]; then
	# like the machines CI runs on: v1 controllers, cgroup2 at /sys/fs/cgroup/unified
	mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup
	for c in cpu,cpuacct cpuset memory devices freezer blkio pids; do
		mkdir -p "/sys/fs/cgroup/$c"
		mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c"
	done
	mkdir -p /sys/fs/cgroup/systemd /sys/fs/cgroup/unified
	mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
	mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
	cg2=/sys/fs/cgroup/unified
else
	mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
	cg2=/sys/fs/cgroup
	# systemd enables the controllers for its slices; tests want them in their sandboxes
	for c in cpu memory pids io; do
		echo "+$c" >"$cg2/cgroup.subtree_control" 2>/dev/null
	done
fi
mount -t bpf -o mode=0700 bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
mkdir -p /dev/shm /dev/pts /dev/mqueue
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
# the overlay's lower layer is the host: nothing of the host's egret state may leak in
rm -rf /var/log/egret /var/lib/egret /etc/egret
mkdir -p /run/egret /run/netns
hostname egret-guest
ip link set lo up
sysctl -qw net.ipv4.ping_group_range="0 2147483647"

console "kernel $(uname -r), cgroup $EGRET_CGROUP ($cg2), suite starting"
cd "$EGRET_BUILD/tests" || finish
set -- --jobs 2 --verbose --tap="$out/suite.tap"
[ -n "$EGRET_FILTER" ] && set -- "$@" --filter "$EGRET_FILTER"
EGRET_TEST_KEEP_LOGS="$out/egretd-logs" ./egret_integration "$@" >"$out/suite.log" 2>&1
echo $? >"$out/suite.rc"
console "suite finished: exit $(cat "$out/suite.rc")"
finish
