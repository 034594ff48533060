/* egretctl run's seccomp profile, run by a small cBPF interpreter on made-up system calls: what
 * Docker's default profile refuses a container without CAP_SYS_ADMIN is refused, and the calls
 * egret adds; every other x86-64 call is allowed; other ABIs and numbers past the table are
 * refused; the supervisor answers each with the right errno. (The integration suite runs the
 * same program in the kernel.)
 */
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include <criterion/criterion.h>

#include "seccomp.h"
#include "util.h"

/* The cBPF subset the profile uses; a jump out of the program or an unknown opcode fails. */
static uint32_t run_filter(const struct sock_filter *f, int n, const struct seccomp_data *d)
{
	uint32_t a = 0;

	for (int pc = 0; pc < n; pc++) {
		const struct sock_filter *i = &f[pc];
		bool t = false;

		switch (i->code) {
		case BPF_LD | BPF_W | BPF_ABS:
			cr_assert(i->k + 4 <= sizeof(*d) && i->k % 4 == 0, "load at %u", i->k);
			memcpy(&a, (const char *)d + i->k, 4);
			continue;
		case BPF_RET | BPF_K:
			return i->k;
		case BPF_JMP | BPF_JA:
			pc += (int)i->k;
			cr_assert(pc + 1 < n, "JA out of the program at %d", pc);
			continue;
		case BPF_JMP | BPF_JEQ | BPF_K:
			t = a == i->k;
			break;
		case BPF_JMP | BPF_JGE | BPF_K:
			t = a >= i->k;
			break;
		case BPF_JMP | BPF_JGT | BPF_K:
			t = a > i->k;
			break;
		case BPF_JMP | BPF_JSET | BPF_K:
			t = (a & i->k) != 0;
			break;
		default:
			cr_assert_fail("opcode 0x%x at %d", i->code, pc);
		}
		pc += t ? i->jt : i->jf;
		cr_assert(pc + 1 < n, "jump out of the program at %d", pc);
	}
	cr_assert_fail("fell off the end");
	return 0;
}

static struct sock_filter prog[SECCOMP_PROG_MAX];
static int prog_len;

static uint32_t verdict_arch(uint32_t arch, uint32_t nr, uint64_t a0, uint64_t a1)
{
	struct seccomp_data d = { .nr = (int)nr, .arch = arch, .args = { a0, a1 } };

	return run_filter(prog, prog_len, &d);
}

static uint32_t verdict(uint32_t nr, uint64_t a0, uint64_t a1)
{
	return verdict_arch(AUDIT_ARCH_X86_64, nr, a0, a1);
}

static void build(bool ptrace_allowed)
{
	prog_len = seccomp__build(ptrace_allowed, prog, SECCOMP_PROG_MAX);
	cr_assert_gt(prog_len, 0);
}

Test(seccomp, table_is_sorted_and_the_program_fits)
{
	uint32_t nrs[256];
	size_t n = seccomp__rules(nrs, 256);

	cr_assert_leq(n, 256);
	for (size_t i = 1; i < n; i++)
		cr_expect_lt(nrs[i - 1], nrs[i], "rule %zu (%u) out of order", i, nrs[i]);
	cr_expect_leq(nrs[n - 1], SECCOMP_MAX_NR);
	build(true);
	cr_expect_leq(prog_len, BPF_MAXINSNS);
}

/* x86-64 calls Docker's default profile (moby profiles/seccomp/default.json) does not allow
 * a container with its default capabilities
 */
static const uint32_t docker_refuses[] = {
	103, 134, 136, 139, 153, 155, 156, 163, 164, 165, 166, 167, 168, 169, 170, 171,
	172, 173, 174, 175, 176, 177, 178, 179, 180, 181, 182, 183, 184, 185, 212, 227,
	236, 237, 238, 239, 246, 248, 249, 250, 256, 272, 279, 298, 300, 304, 308, 312,
	313, 320, 321, 323, 428, 429, 430, 431, 432, 433, 435, 438, 440, 442, 443, 450,
};
/* and what egret refuses besides */
static const uint32_t egret_refuses[] = {
	SYS_process_vm_readv, SYS_process_vm_writev, SYS_io_uring_setup,
	SYS_io_uring_enter,   SYS_io_uring_register, 467 /* open_tree_attr */,
};

Test(seccomp, refuses_what_docker_refuses_and_more)
{
	build(true);
	for (size_t i = 0; i < ARRAY_SIZE(docker_refuses); i++)
		cr_expect_neq(verdict(docker_refuses[i], 0, 0), SECCOMP_RET_ALLOW,
			      "syscall %u allowed", docker_refuses[i]);
	for (size_t i = 0; i < ARRAY_SIZE(egret_refuses); i++)
		cr_expect_eq(verdict(egret_refuses[i], 0, 0), SECCOMP_RET_USER_NOTIF,
			     "syscall %u not refused", egret_refuses[i]);
	/* module loading and kexec: SIGSYS; clone3 and get_mempolicy: an errno, no report */
	cr_expect_eq(verdict(SYS_finit_module, 0, 0), SECCOMP_RET_TRAP);
	cr_expect_eq(verdict(SYS_kexec_load, 0, 0), SECCOMP_RET_TRAP);
	cr_expect_eq(verdict(SYS_clone3, 0, 0), SECCOMP_RET_ERRNO | ENOSYS);
	cr_expect_eq(verdict(SYS_get_mempolicy, 0, 0), SECCOMP_RET_ERRNO | EPERM);
}

Test(seccomp, everything_else_is_allowed)
{
	uint32_t nrs[256];
	size_t n = seccomp__rules(nrs, 256), k = 0;

	build(true);
	for (uint32_t nr = 0; nr <= SECCOMP_MAX_NR; nr++) {
		if (k < n && nrs[k] == nr) {
			k++;
			continue;
		}
		cr_expect_eq(verdict(nr, 0, 0), SECCOMP_RET_ALLOW, "syscall %u refused", nr);
	}
	cr_expect_eq(k, n);
}

Test(seccomp, arguments)
{
	build(true);
	cr_expect_eq(verdict(SYS_socket, AF_INET, 0), SECCOMP_RET_ALLOW);
	cr_expect_eq(verdict(SYS_socket, AF_INET6, 0), SECCOMP_RET_ALLOW);
	cr_expect_eq(verdict(SYS_socket, AF_UNIX, 0), SECCOMP_RET_ALLOW);
	cr_expect_eq(verdict(SYS_socket, AF_NETLINK, 0), SECCOMP_RET_ALLOW);
	cr_expect_eq(verdict(SYS_socket, AF_PACKET, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_socket, AF_VSOCK, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_socketpair, AF_PACKET, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_clone, SIGCHLD, 0), SECCOMP_RET_ALLOW);
	cr_expect_eq(verdict(SYS_clone, CLONE_VM | CLONE_THREAD | CLONE_SIGHAND, 0),
		     SECCOMP_RET_ALLOW);
	cr_expect_eq(verdict(SYS_clone, CLONE_NEWUSER | SIGCHLD, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_clone, CLONE_NEWNS, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_clone, CLONE_NEWNET, 0), SECCOMP_RET_USER_NOTIF);
	/* unshare and setns whatever the flags, as Docker does */
	cr_expect_eq(verdict(SYS_unshare, CLONE_NEWUSER, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_unshare, CLONE_FILES, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_setns, 3, CLONE_NEWNET), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_personality, 0xffffffff, 0), SECCOMP_RET_ALLOW);
	cr_expect_eq(verdict(SYS_personality, 0, 0), SECCOMP_RET_ALLOW);
	cr_expect_eq(verdict(SYS_personality, 0x0040000 /* ADDR_NO_RANDOMIZE */, 0),
		     SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_ioctl, 0, TCGETS), SECCOMP_RET_ALLOW);
	cr_expect_eq(verdict(SYS_ioctl, 0, TIOCSTI), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_ioctl, 0, TIOCLINUX), SECCOMP_RET_USER_NOTIF);
	/* only the low 32 bits of an int argument count, as the kernel reads them */
	cr_expect_eq(verdict(SYS_ioctl, 0, 0x100000000ull | TIOCSTI), SECCOMP_RET_USER_NOTIF);
}

Test(seccomp, ptrace_only_with_a_pid_namespace_of_its_own)
{
	build(true);
	cr_expect_eq(verdict(SYS_ptrace, 16, 1), SECCOMP_RET_ALLOW);
	build(false);
	cr_expect_eq(verdict(SYS_ptrace, 16, 1), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SYS_getpid, 0, 0), SECCOMP_RET_ALLOW);
}

Test(seccomp, other_abis_and_unknown_numbers)
{
	build(true);
	cr_expect_eq(verdict_arch(AUDIT_ARCH_I386, 20, 0, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict_arch(AUDIT_ARCH_I386, SYS_getpid, 0, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(0x40000000u | SYS_getpid, 0, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(SECCOMP_MAX_NR + 1, 0, 0), SECCOMP_RET_USER_NOTIF);
	cr_expect_eq(verdict(0xffffffffu, 0, 0), SECCOMP_RET_USER_NOTIF);
}

Test(seccomp, answers_and_names)
{
	cr_expect_eq(seccomp__errno(AUDIT_ARCH_X86_64, SYS_bpf), EPERM);
	cr_expect_eq(seccomp__errno(AUDIT_ARCH_X86_64, SYS_io_uring_setup), ENOSYS);
	cr_expect_eq(seccomp__errno(AUDIT_ARCH_I386, 20), ENOSYS);
	cr_expect_eq(seccomp__errno(AUDIT_ARCH_X86_64, 0x40000000u | 39), ENOSYS);
	cr_expect_eq(seccomp__errno(AUDIT_ARCH_X86_64, SECCOMP_MAX_NR + 1), ENOSYS);
	cr_expect_str_eq(seccomp__name(AUDIT_ARCH_X86_64, SYS_pidfd_getfd), "pidfd_getfd");
	cr_expect_str_eq(seccomp__name(AUDIT_ARCH_X86_64, SYS_getpid), "");
	cr_expect_str_eq(seccomp__name(AUDIT_ARCH_I386, SYS_bpf), "");
	cr_expect_str_eq(seccomp__abi(AUDIT_ARCH_I386, 20), "i386");
	cr_expect_str_eq(seccomp__abi(AUDIT_ARCH_X86_64, 0x40000000u | 39), "x32");
	cr_expect_str_eq(seccomp__abi(AUDIT_ARCH_X86_64, 39), "x86_64");
}
