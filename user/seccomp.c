/* A seccomp filter for commands egretctl runs in a sandbox. The tracepoints of
 * bpf/confine.bpf.c kill a process that calls bpf(2) or creates a packet socket, but only on its
 * way back from the call, which has then run; a seccomp filter stops the call before it runs.
 * Refused with SIGSYS (so the attempt is reported, by the signal_generate tracepoint): bpf,
 * socket and socketpair of families without inet cgroup hooks, kernel module loading, kexec.
 * Refused with ENOSYS, silently, so runtimes fall back: io_uring, whose socket op would bypass
 * the socket syscall. Other ABIs than x86-64 (i386, x32) are refused outright: their syscall
 * numbers would slip past the filter.
 */
#include <errno.h>
#include <stddef.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "seccomp.h"

#define X32_SYSCALL_BIT 0x40000000

#define LOAD(field)	BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, field))
#define ON(nr, action) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, action)
#define RET(action) BPF_STMT(BPF_RET | BPF_K, (action))

#define TRAP	    SECCOMP_RET_TRAP
#define NOSYS	    (SECCOMP_RET_ERRNO | ENOSYS)
#define ALLOW	    SECCOMP_RET_ALLOW

int seccomp__install_sandbox_filter(void)
{
#if defined(__x86_64__)
	struct sock_filter filter[] = {
		LOAD(arch),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0),
		RET(NOSYS),
		LOAD(nr),
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1),
		RET(NOSYS),
		ON(SYS_bpf, TRAP),
		ON(SYS_init_module, TRAP),
		ON(SYS_finit_module, TRAP),
		ON(SYS_delete_module, TRAP),
		ON(SYS_kexec_load, TRAP),
		ON(SYS_kexec_file_load, TRAP),
		ON(SYS_io_uring_setup, NOSYS),
		ON(SYS_io_uring_enter, NOSYS),
		ON(SYS_io_uring_register, NOSYS),
		/* socket / socketpair: only families with cgroup hooks, or that stay on the host */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socket, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_socketpair, 0, 7),
		LOAD(args[0]),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_UNIX, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_INET6, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AF_NETLINK, 0, 1),
		RET(ALLOW),
		RET(TRAP),
		RET(ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) == 0)
		return 0;
	if (errno != EACCES)
		return -errno;
	/* without CAP_SYS_ADMIN a filter needs no_new_privs */
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -errno;
	return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) ? -errno : 0;
#else
	return -EOPNOTSUPP;
#endif
}
