/* Compat system calls (ia32 through int 0x80 or sysenter, x32 with bit 30 in the number): the
 * calls egret's native syscall tracepoints watch, by their number in each ABI, and what the
 * compat dispatcher (bpf/confine.bpf.c egret_csys, --compat judge) does with each. One list,
 * used by the BPF program's switch and by egretd for names in Tamper events; the unit test
 * checks every number against the C library's asm/unistd_32.h and asm/unistd_x32.h.
 * Numbers from arch/x86/entry/syscalls/syscall_32.tbl and syscall_64.tbl.
 */
#ifndef EGRET_SYSCALLS32_H
#define EGRET_SYSCALLS32_H

/* egret_tamper_event.abi */
enum egret_abi {
	EGRET_ABI_NATIVE = 0,
	EGRET_ABI_I386 = 1, /* TS_COMPAT in the task's thread_info.status */
	EGRET_ABI_X32 = 2,  /* EGRET_X32_BIT in the syscall number */
};

#define EGRET_X32_BIT 0x40000000u /* __X32_SYSCALL_BIT */

/* --compat: what egret_csys does with a compat call from a sandbox */
enum egret_compat_mode {
	EGRET_COMPAT_REFUSE = 0, /* kill at the first compat call */
	EGRET_COMPAT_JUDGE = 1,	 /* the native programs' checks; EGRET_CC_REFUSE_* killed */
};

/* what the dispatcher does with one call in judge mode */
enum egret_compat_action {
	EGRET_CC_ALLOW = 0,	/* nothing egret's native tracepoints watch */
	EGRET_CC_SOCKET,	/* socket(family, type, protocol): egret_socket's check */
	EGRET_CC_SOCKETCALL,	/* ia32 socketcall(SYS_SOCKET, args in user memory) */
	EGRET_CC_URING,		/* io_uring_setup: egret_uring's */
	EGRET_CC_BPF,		/* bpf: egret_bpf's */
	EGRET_CC_MOUNT,		/* audit's mount report, target 1 */
	EGRET_CC_MOVE_MOUNT,	/* 2 */
	EGRET_CC_FSMOUNT,	/* 3 */
	EGRET_CC_UMOUNT,	/* 4 */
	EGRET_CC_NETNS,		/* unshare, setns: the DNS listener check, at the call's exit */
	EGRET_CC_REFUSE_PROC,	/* ptrace, process_vm_*, pidfd_getfd: killed */
	EGRET_CC_REFUSE_SIGNAL, /* kill and kin: killed */
	/* the calls file audit watches: audited by audit.bpf.c's egret_acsys and egret_acxsys,
	 * with the arguments of their 64-bit twins (path, flags, directory fds)
	 */
	EGRET_CC_OPEN,	    /* open(path, flags) */
	EGRET_CC_CREAT,	    /* creat(path) */
	EGRET_CC_OPENAT,    /* openat(dfd, path, flags) */
	EGRET_CC_OPENAT2,   /* openat2(dfd, path, how) */
	EGRET_CC_UNLINK,    /* unlink(path) */
	EGRET_CC_UNLINKAT,  /* unlinkat(dfd, path, flags) */
	EGRET_CC_RENAME,    /* rename(old, new) */
	EGRET_CC_RENAMEAT,  /* renameat(olddfd, old, newdfd, new) */
	EGRET_CC_RENAMEAT2, /* renameat2(olddfd, old, newdfd, new, flags) */
	EGRET_CC_CHMOD,	    /* chmod(path, mode) */
	EGRET_CC_FCHMOD,    /* fchmod(fd, mode) */
	EGRET_CC_FCHMODAT,  /* fchmodat(dfd, path, mode); fchmodat2 too */
};

#define EGRET_CC_FILE_FIRST EGRET_CC_OPEN

/* X(number, action, name): ia32 */
#define EGRET_IA32_CALLS(X)                        \
	X(359, SOCKET, "socket")                   \
	X(102, SOCKETCALL, "socketcall")           \
	X(425, URING, "io_uring_setup")            \
	X(357, BPF, "bpf")                         \
	X(21, MOUNT, "mount")                      \
	X(429, MOVE_MOUNT, "move_mount")           \
	X(432, FSMOUNT, "fsmount")                 \
	X(22, UMOUNT, "umount")                    \
	X(52, UMOUNT, "umount2")                   \
	X(310, NETNS, "unshare")                   \
	X(346, NETNS, "setns")                     \
	X(26, REFUSE_PROC, "ptrace")               \
	X(347, REFUSE_PROC, "process_vm_readv")    \
	X(348, REFUSE_PROC, "process_vm_writev")   \
	X(438, REFUSE_PROC, "pidfd_getfd")         \
	X(37, REFUSE_SIGNAL, "kill")               \
	X(238, REFUSE_SIGNAL, "tkill")             \
	X(270, REFUSE_SIGNAL, "tgkill")            \
	X(178, REFUSE_SIGNAL, "rt_sigqueueinfo")   \
	X(335, REFUSE_SIGNAL, "rt_tgsigqueueinfo") \
	X(424, REFUSE_SIGNAL, "pidfd_send_signal") \
	X(5, OPEN, "open")                         \
	X(8, CREAT, "creat")                       \
	X(295, OPENAT, "openat")                   \
	X(437, OPENAT2, "openat2")                 \
	X(10, UNLINK, "unlink")                    \
	X(301, UNLINKAT, "unlinkat")               \
	X(38, RENAME, "rename")                    \
	X(302, RENAMEAT, "renameat")               \
	X(353, RENAMEAT2, "renameat2")             \
	X(15, CHMOD, "chmod")                      \
	X(94, FCHMOD, "fchmod")                    \
	X(306, FCHMODAT, "fchmodat")               \
	X(452, FCHMODAT, "fchmodat2")

/* x32, the number without EGRET_X32_BIT; the 64-bit-only numbers of ptrace, process_vm_* and
 * the siginfo calls (x32 has its own, 512 and up) are listed too, should a kernel accept them
 */
#define EGRET_X32_CALLS(X)                                  \
	X(41, SOCKET, "socket")                             \
	X(425, URING, "io_uring_setup")                     \
	X(321, BPF, "bpf")                                  \
	X(165, MOUNT, "mount")                              \
	X(429, MOVE_MOUNT, "move_mount")                    \
	X(432, FSMOUNT, "fsmount")                          \
	X(166, UMOUNT, "umount2")                           \
	X(272, NETNS, "unshare")                            \
	X(308, NETNS, "setns")                              \
	X(521, REFUSE_PROC, "ptrace")                       \
	X(101, REFUSE_PROC, "ptrace (64-bit)")              \
	X(539, REFUSE_PROC, "process_vm_readv")             \
	X(540, REFUSE_PROC, "process_vm_writev")            \
	X(310, REFUSE_PROC, "process_vm_readv (64-bit)")    \
	X(311, REFUSE_PROC, "process_vm_writev (64-bit)")   \
	X(438, REFUSE_PROC, "pidfd_getfd")                  \
	X(62, REFUSE_SIGNAL, "kill")                        \
	X(200, REFUSE_SIGNAL, "tkill")                      \
	X(234, REFUSE_SIGNAL, "tgkill")                     \
	X(524, REFUSE_SIGNAL, "rt_sigqueueinfo")            \
	X(536, REFUSE_SIGNAL, "rt_tgsigqueueinfo")          \
	X(129, REFUSE_SIGNAL, "rt_sigqueueinfo (64-bit)")   \
	X(297, REFUSE_SIGNAL, "rt_tgsigqueueinfo (64-bit)") \
	X(424, REFUSE_SIGNAL, "pidfd_send_signal")          \
	X(2, OPEN, "open")                                  \
	X(85, CREAT, "creat")                               \
	X(257, OPENAT, "openat")                            \
	X(437, OPENAT2, "openat2")                          \
	X(87, UNLINK, "unlink")                             \
	X(263, UNLINKAT, "unlinkat")                        \
	X(82, RENAME, "rename")                             \
	X(264, RENAMEAT, "renameat")                        \
	X(316, RENAMEAT2, "renameat2")                      \
	X(90, CHMOD, "chmod")                               \
	X(91, FCHMOD, "fchmod")                             \
	X(268, FCHMODAT, "fchmodat")                        \
	X(452, FCHMODAT, "fchmodat2")

#define EGRET_CC_CASE_(nr, action, name) \
	case nr:                         \
		return EGRET_CC_##action;

/* the action for call nr of abi (x32: without the bit) */
static inline __u32 egret_compat_action(__u32 abi, __u32 nr)
{
	if (abi == EGRET_ABI_I386) {
		switch (nr) {
			EGRET_IA32_CALLS(EGRET_CC_CASE_)
		}
	} else if (abi == EGRET_ABI_X32) {
		switch (nr) {
			EGRET_X32_CALLS(EGRET_CC_CASE_)
		}
	}
	return EGRET_CC_ALLOW;
}

#ifndef __bpf__
#define EGRET_CC_NAME_(nr, action, name) \
	case nr:                         \
		return name;

/* the name of call nr of abi (x32: without the bit) when it is one of the list, else "" */
static inline const char *egret_compat_name(__u32 abi, __u32 nr)
{
	if (abi == EGRET_ABI_I386) {
		switch (nr) {
			EGRET_IA32_CALLS(EGRET_CC_NAME_)
		}
	} else if (abi == EGRET_ABI_X32) {
		switch (nr) {
			EGRET_X32_CALLS(EGRET_CC_NAME_)
		}
	}
	return "";
}
#endif

#endif /* EGRET_SYSCALLS32_H */
