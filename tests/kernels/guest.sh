#!/bin/sh
# The guest's second stage, in this host's userland under an overlay: set the system up as a
# Debian 12 host's systemd would (cgroups in the layout asked for, bpffs, tracefs, /run, /tmp,
# the kernel's modules), check that what the suites use is there, run the integration suite,
# write its log, TAP report, exit status, timings and the egretd logs of failed tests to
# /egret-out, and power off. Nothing here needs the network: the guest has no device.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8
out=/egret-out
. "$out/params"
exec >"$out/guest.log" 2>&1
console() {
	echo "EGRET-GUEST: $*" >/dev/console
	echo "$*"
}
stamp() { # what: the guest's uptime at this point, for run.sh's boot and suite times
	echo "$1 $(cut -d' ' -f1 /proc/uptime)" >>"$out/timing"
}
finish() {
	sync
	echo o >/proc/sysrq-trigger 2>/dev/null
	poweroff -f
}
stamp guest-start

# the kernel's own modules (veth, dummy, tun, nf_tables... load on demand through modprobe)
mkdir -p "/lib/modules/$(uname -r)"
mount --bind "$EGRET_MODULES" "/lib/modules/$(uname -r)" || console "no modules at $EGRET_MODULES"

if [ "$EGRET_CGROUP" = hybrid ]; then
	# like the machines CI runs on: each v1 controller in its own hierarchy, systemd's named
	# one, cgroup2 at /sys/fs/cgroup/unified with what v1 leaves it (6.12 has no v1 memory
	# or cpuset: as systemd does, those stay on cgroup2)
	mount -t tmpfs -o mode=755 tmpfs /sys/fs/cgroup
	for c in cpu cpuacct cpuset memory devices freezer blkio pids; do
		mkdir -p "/sys/fs/cgroup/$c"
		if ! mount -t cgroup -o "$c" cgroup "/sys/fs/cgroup/$c" 2>/dev/null; then
			rmdir "/sys/fs/cgroup/$c"
			console "this kernel has no v1 $c controller: it stays on cgroup2"
		fi
	done
	mkdir -p /sys/fs/cgroup/systemd /sys/fs/cgroup/unified
	mount -t cgroup -o none,name=systemd cgroup /sys/fs/cgroup/systemd
	mount -t cgroup2 cgroup2 /sys/fs/cgroup/unified
	cg2=/sys/fs/cgroup/unified
else
	# Debian 12's default: cgroup2 alone, mounted and delegated as systemd 252 does
	mount -t cgroup2 -o nosuid,nodev,noexec,nsdelegate,memory_recursiveprot cgroup2 /sys/fs/cgroup ||
		mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup
	cg2=/sys/fs/cgroup
	# systemd enables these at the root for its slices
	for c in cpuset cpu io memory pids; do
		echo "+$c" >"$cg2/cgroup.subtree_control" || console "cannot enable the $c controller"
	done
fi
mount -t bpf -o mode=0700 bpf /sys/fs/bpf
mount -t tracefs tracefs /sys/kernel/tracing
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
# a tree under /tmp or /run (a CI clone in /tmp) stays where it is through the tmpfs put there
held=""
for d in "$EGRET_TOP" "$EGRET_BUILD"; do
	case $d in
	/tmp/* | /run/*)
		h=/mnt/egret-held/$(echo "$d" | tr / _)
		mkdir -p "$h" && mount --bind "$d" "$h" && held="$held $h:$d" ||
			console "cannot keep $d visible over the tmpfs of /tmp and /run"
		;;
	esac
done
mount -t tmpfs -o mode=755 tmpfs /run
mount -t tmpfs -o mode=1777 tmpfs /tmp
for h in $held; do
	mkdir -p "${h#*:}" && mount --bind "${h%%:*}" "${h#*:}" || console "cannot mount ${h#*:} again"
done
mkdir -p /dev/shm /dev/pts /dev/mqueue
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t devpts -o gid=5,mode=620,ptmxmode=666 devpts /dev/pts
mount -t mqueue mqueue /dev/mqueue 2>/dev/null
[ -e /dev/fd ] || ln -s /proc/self/fd /dev/fd
[ -e /dev/stdin ] || ln -s /proc/self/fd/0 /dev/stdin
[ -e /dev/stdout ] || ln -s /proc/self/fd/1 /dev/stdout
[ -e /dev/stderr ] || ln -s /proc/self/fd/2 /dev/stderr
# the overlay's lower layer is the host: nothing of the host's egret state may leak in
rm -rf /var/log/egret /var/lib/egret /etc/egret /var/tmp/egret-test-*
mkdir -p /run/egret /run/netns
hostname egret-guest
ip link set lo up
sysctl -qw net.ipv4.ping_group_range="0 2147483647"

# what the suites use, checked once so a missing piece is named here, not as 40 failures
missing=
for m in veth dummy tun nf_tables sch_ingress; do
	modprobe "$m" || missing="$missing module:$m"
done
ip link add egret-probe0 type veth peer name egret-probe1 && ip link del egret-probe0 ||
	missing="$missing veth-link"
[ -c /dev/net/tun ] || missing="$missing /dev/net/tun"
for t in dnsmasq dig curl ip nft python3 npm dpkg apt-get; do
	command -v "$t" >/dev/null || missing="$missing $t"
done
python3 -c 'import http.server, google.protobuf' || missing="$missing python3-modules"
python3 -m pip --version >/dev/null || missing="$missing pip"
[ -e /etc/egret ] && missing="$missing /etc/egret-present"
if [ -n "$missing" ]; then
	console "preflight: missing$missing (tests that need them will fail)"
else
	console "preflight: modules (veth, dummy, tun, nf_tables) load, every tool is there"
fi

console "kernel $(uname -r), cgroup $EGRET_CGROUP ($cg2: $(cat "$cg2/cgroup.subtree_control")), suite starting"
cd "$EGRET_BUILD/tests" || finish
# the CPU is emulated: egretd may take several times longer to come up than natively
export EGRET_TEST_TIMEOUT_SCALE=4 EGRET_TEST_KEEP_LOGS="$out/egretd-logs"
stamp suite-start
if [ "${EGRET_QUEUE:-0}" = 1 ]; then
	# suites from the queue shared with the other guests, one at a time, each the next
	# that no guest has taken (mkdir on the host is the claim): whichever guest is free
	# takes it, so the guests finish together however long each suite takes here
	rc=0
	: >"$out/suite.log"
	: >"$out/suite.tap"
	while read -r s; do
		mkdir "/egret-queue/taken-$s" 2>/dev/null || continue
		console "suite $s"
		t0=$(cut -d. -f1 /proc/uptime)
		./egret_integration --jobs 2 --verbose --tap="$out/tap-$s" --filter "$s/*" \
			</dev/null >>"$out/suite.log" 2>&1
		r=$?
		# each suite's time, for whoever has to fit the guests into CI's budget
		console "suite $s: exit $r in $(($(cut -d. -f1 /proc/uptime) - t0)) s"
		[ "$r" -gt "$rc" ] && rc=$r
		cat "$out/tap-$s" >>"$out/suite.tap"
	done </egret-queue/suites
	echo "$rc" >"$out/suite.rc"
else
	set -- --jobs 2 --verbose --tap="$out/suite.tap"
	[ -n "$EGRET_FILTER" ] && set -- "$@" --filter "$EGRET_FILTER"
	./egret_integration "$@" >"$out/suite.log" 2>&1
	echo $? >"$out/suite.rc"
fi
stamp suite-end
console "suite finished: exit $(cat "$out/suite.rc")"
finish
