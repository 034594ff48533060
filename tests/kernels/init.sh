#!/bin/busybox sh
# The guest's first stage (the initramfs's /init, built by run.sh): load the modules that mount
# the root, put the host's root (9p, read only) under a tmpfs overlay, mount the run directory
# at /egret-out (and a queue of suites at /egret-queue), and switch to guest.sh (its path is on
# the kernel command line).
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
fail() {
	echo "EGRET-GUEST: $*"
	poweroff -f
}
for m in $(cat /mods/order); do
	insmod "/mods/$m" 2>/dev/null || echo "EGRET-GUEST: insmod $m failed (built in?)"
done
guest=
for w in $(cat /proc/cmdline); do
	case $w in egret.guest=*) guest=${w#egret.guest=} ;; esac
done
[ -n "$guest" ] || fail "no egret.guest= on the kernel command line"
mount -t 9p -o trans=virtio,version=9p2000.L,ro,msize=512000,cache=loose hostroot /host ||
	fail "cannot mount the host's root over 9p"
mount -t tmpfs -o size=2g tmpfs /upper || fail "tmpfs"
mkdir -p /upper/u /upper/w
mount -t overlay overlay -o lowerdir=/host,upperdir=/upper/u,workdir=/upper/w /newroot ||
	fail "cannot mount the overlay root"
mkdir -p /newroot/egret-out
mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 out /newroot/egret-out ||
	fail "cannot mount the run directory"
# the suites' queue, when this guest shares one with others (run.sh --queue)
if grep -q '^EGRET_QUEUE=.1' /newroot/egret-out/params; then
	mkdir -p /newroot/egret-queue
	mount -t 9p -o trans=virtio,version=9p2000.L,msize=512000 queue /newroot/egret-queue ||
		fail "cannot mount the queue directory"
fi
mount --move /proc /newroot/proc
mount --move /sys /newroot/sys
mount --move /dev /newroot/dev
exec switch_root /newroot /bin/sh "$guest"
