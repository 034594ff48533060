/* The restrictions of deploy/egretd.service.in that are not about mounts, for running egretd
 * outside systemd (the test machines' PID 1 is not systemd): the capability bounding set,
 * SystemCallArchitectures=native, the SystemCallFilter= deny list and what ProtectClock=,
 * ProtectKernelModules=, ProtectKernelLogs=, PrivateDevices= and ProtectHostname= add to it,
 * RestrictNamespaces=net, RestrictAddressFamilies=, MemoryDenyWriteExecute=, RestrictSUIDSGID=
 * (chmod) and LockPersonality=, each refused with EPERM (SystemCallErrorNumber=EPERM) as
 * systemd does, then exec.
 *
 * Used to check the unit takes away nothing egretd needs: build it in place of the egretd the
 * integration tests run, with the real one beside it as egretd.real, and run the suites:
 *
 *   mv build/egretd build/egretd.real
 *   cc -O2 -o build/egretd tests/tools/unit_filter.c
 *   build/tests/egret_integration      # every suite
 *   rm build/egretd && mv build/egretd.real build/egretd
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#define X32_SYSCALL_BIT 0x40000000
#define NS_FLAGS                                                                    \
	(CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | \
	 CLONE_NEWCGROUP | 0x80 /* CLONE_NEWTIME */)

#define LD(field) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define LD_ARG(n) BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[n]))
#define LD_NR	  LD(nr)
#define RET(v)	  BPF_STMT(BPF_RET | BPF_K, (v))
#define EPERM_	  (SECCOMP_RET_ERRNO | EPERM)
#define DENY(nr)  BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), RET(EPERM_)
/* syscall nr: when arg n has any of bits, refuse */
#define DENY_BITS(nr, n, bits)                                      \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 3), LD_ARG(n), \
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, (bits), 0, 1), RET(EPERM_), LD_NR

static const int capabilities[] = { CAP_BPF,	    CAP_PERFMON,      CAP_NET_ADMIN, CAP_SYS_ADMIN,
				    CAP_SYS_PTRACE, CAP_DAC_OVERRIDE, CAP_CHOWN };

static int drop_capabilities(void)
{
	for (int c = 0; c <= CAP_LAST_CAP; c++) {
		bool keep = false;

		for (size_t i = 0; i < sizeof(capabilities) / sizeof(capabilities[0]); i++)
			keep |= capabilities[i] == c;
		if (!keep && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) && errno != EINVAL)
			return -1;
	}
	return 0;
}

static struct sock_filter filter[] = {
	LD(arch),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
	RET(EPERM_),
	LD(nr),
	BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1),
	RET(EPERM_),
	/* @clock, @cpu-emulation, @module, @obsolete, @raw-io, @reboot, @swap, @resources (the
	 * x86-64 ones), syslog (ProtectKernelLogs), sethostname/setdomainname (ProtectHostname)
	 */
	DENY(SYS_adjtimex),
	DENY(SYS_clock_adjtime),
	DENY(SYS_clock_settime),
	DENY(SYS_settimeofday),
	DENY(SYS_modify_ldt),
	DENY(SYS_delete_module),
	DENY(SYS_finit_module),
	DENY(SYS_init_module),
	DENY(SYS__sysctl),
	DENY(SYS_afs_syscall),
	DENY(SYS_create_module),
	DENY(SYS_get_kernel_syms),
	DENY(SYS_getpmsg),
	DENY(SYS_putpmsg),
	DENY(SYS_query_module),
	DENY(SYS_security),
	DENY(SYS_sysfs),
	DENY(SYS_tuxcall),
	DENY(SYS_uselib),
	DENY(SYS_ustat),
	DENY(SYS_vserver),
	DENY(SYS_ioperm),
	DENY(SYS_iopl),
	DENY(SYS_kexec_file_load),
	DENY(SYS_kexec_load),
	DENY(SYS_reboot),
	DENY(SYS_swapoff),
	DENY(SYS_swapon),
	DENY(SYS_ioprio_set),
	DENY(SYS_mbind),
	DENY(SYS_migrate_pages),
	DENY(SYS_move_pages),
	DENY(SYS_sched_setaffinity),
	DENY(SYS_sched_setattr),
	DENY(SYS_sched_setparam),
	DENY(SYS_sched_setscheduler),
	DENY(SYS_set_mempolicy),
	DENY(SYS_setpriority),
	DENY(SYS_setrlimit),
	DENY(SYS_syslog),
	DENY(SYS_sethostname),
	DENY(SYS_setdomainname),
	/* RestrictNamespaces=net: no other namespace created; setns only into a network one */
	DENY_BITS(SYS_unshare, 0, NS_FLAGS),
	DENY_BITS(SYS_clone, 0, NS_FLAGS),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_clone3, 0, 1),
	RET(SECCOMP_RET_ERRNO | ENOSYS),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setns, 0, 3),
	LD_ARG(1),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, CLONE_NEWNET, 1, 0),
	RET(EPERM_),
	LD_NR,
	/* RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 0, 7),
	LD_ARG(0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 4, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 3, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 1, 0),
	RET(SECCOMP_RET_ERRNO | EAFNOSUPPORT),
	LD_NR,
	/* MemoryDenyWriteExecute=: no W+X mapping, no X added later */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_mmap, 0, 5),
	LD_ARG(2),
	BPF_STMT(BPF_ALU | BPF_AND | BPF_K, PROT_WRITE | PROT_EXEC),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PROT_WRITE | PROT_EXEC, 0, 1),
	RET(EPERM_),
	LD_NR,
	DENY_BITS(SYS_mprotect, 2, PROT_EXEC),
	DENY_BITS(SYS_pkey_mprotect, 2, PROT_EXEC),
	/* RestrictSUIDSGID= (for chmod; systemd also covers creating such files) */
	DENY_BITS(SYS_chmod, 1, S_ISUID | S_ISGID),
	DENY_BITS(SYS_fchmod, 1, S_ISUID | S_ISGID),
	DENY_BITS(SYS_fchmodat, 2, S_ISUID | S_ISGID),
	/* LockPersonality=: querying (0xffffffff) and PER_LINUX only */
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_personality, 0, 4),
	LD_ARG(0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0xffffffff, 2, 0),
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 1, 0),
	RET(EPERM_),
	RET(SECCOMP_RET_ALLOW),
};

int main(int argc, char **argv)
{
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };
	char real[PATH_MAX];

	(void)argc;
	snprintf(real, sizeof(real), "%s.real", argv[0]);
	if (drop_capabilities() || prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog)) {
		perror("unit_filter");
		return 1;
	}
	execv(real, argv);
	perror(real);
	return 127;
}
