/* The seccomp profile egretctl run puts on a sandbox's command, and the supervisor side of its
 * refusals. The profile is a table of refused x86-64 system calls (at least what Docker's
 * default profile refuses to a container without CAP_SYS_ADMIN, plus the calls that reach into
 * other processes or the kernel: pidfd_getfd, process_vm_readv/writev, kcmp, userfaultfd,
 * perf_event_open, keys, io_uring...), compiled into a cBPF program that looks the number up in
 * a binary tree. Everything else is allowed. Other ABIs (i386 through int 0x80, x32) are refused
 * outright: their numbers would slip past the table, and the syscall tracepoints do not see
 * them. A refusal is SECCOMP_RET_USER_NOTIF: the call waits until egretctl, outside the
 * sandbox, answers it with the table's errno and reports it; a filter whose supervisor is gone
 * fails the call with ENOSYS, so a dead egretctl leaves nothing open. Module loading and kexec
 * are SECCOMP_RET_TRAP (no program in a sandbox makes them; the SIGSYS is reported by the
 * signal_generate tracepoint). Two calls programs make routinely are refused without a report:
 * clone3 gets ENOSYS (its flags are behind a pointer the filter cannot read; libc falls back to
 * clone(2), whose flags it checks) and get_mempolicy EPERM (ps asks for its NUMA policy; a
 * refused query gains nothing).
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>

#include "seccomp.h"
#include "util.h"

#define X32_SYSCALL_BIT 0x40000000u

/* clone(2) flags that make a namespace (CLONE_NEWTIME is clone3's and unshare's: in clone's
 * flags 0x80 is part of the exit signal)
 */
#define CLONE_NS_FLAGS	 0x7e020000u
#define TIOCSTI_	 0x5412u
#define TIOCLINUX_	 0x541cu
#define PERSONALITY_ANY_ 0xffffffffu

enum rule_kind {
	RULE_REFUSE,   /* notify, answer err */
	RULE_TRAP,     /* SIGSYS */
	RULE_QUIET,    /* err, no notification */
	RULE_FAMILY,   /* socket, socketpair: refuse families without cgroup hooks */
	RULE_NS_FLAGS, /* clone: refuse namespace flags in arg 0 */
	RULE_PERSONA,  /* personality: only the values Docker allows */
	RULE_IOCTL,    /* ioctl: refuse terminal input injection */
	RULE_PTRACE,   /* refused when the sandbox shares the host's pid namespace */
};

struct rule {
	uint32_t nr;
	const char *name;
	enum rule_kind kind;
	int err;
};

/* Sorted by number (the unit test checks). x86-64 numbers are ABI: written out, so a build on
 * older headers refuses the same calls.
 */
static const struct rule rules[] = {
	{ 16, "ioctl", RULE_IOCTL, EPERM },
	{ 41, "socket", RULE_FAMILY, EPERM },
	{ 53, "socketpair", RULE_FAMILY, EPERM },
	{ 56, "clone", RULE_NS_FLAGS, EPERM },
	{ 101, "ptrace", RULE_PTRACE, EPERM },
	{ 103, "syslog", RULE_REFUSE, EPERM },
	{ 134, "uselib", RULE_REFUSE, EPERM },
	{ 135, "personality", RULE_PERSONA, EPERM },
	{ 136, "ustat", RULE_REFUSE, EPERM },
	{ 139, "sysfs", RULE_REFUSE, EPERM },
	{ 153, "vhangup", RULE_REFUSE, EPERM },
	{ 155, "pivot_root", RULE_REFUSE, EPERM },
	{ 156, "_sysctl", RULE_REFUSE, EPERM },
	{ 163, "acct", RULE_REFUSE, EPERM },
	{ 164, "settimeofday", RULE_REFUSE, EPERM },
	{ 165, "mount", RULE_REFUSE, EPERM },
	{ 166, "umount2", RULE_REFUSE, EPERM },
	{ 167, "swapon", RULE_REFUSE, EPERM },
	{ 168, "swapoff", RULE_REFUSE, EPERM },
	{ 169, "reboot", RULE_REFUSE, EPERM },
	{ 170, "sethostname", RULE_REFUSE, EPERM },
	{ 171, "setdomainname", RULE_REFUSE, EPERM },
	{ 172, "iopl", RULE_REFUSE, EPERM },
	{ 173, "ioperm", RULE_REFUSE, EPERM },
	{ 174, "create_module", RULE_REFUSE, EPERM },
	{ 175, "init_module", RULE_TRAP, EPERM },
	{ 176, "delete_module", RULE_TRAP, EPERM },
	{ 177, "get_kernel_syms", RULE_REFUSE, EPERM },
	{ 178, "query_module", RULE_REFUSE, EPERM },
	{ 179, "quotactl", RULE_REFUSE, EPERM },
	{ 180, "nfsservctl", RULE_REFUSE, EPERM },
	{ 181, "getpmsg", RULE_REFUSE, EPERM },
	{ 182, "putpmsg", RULE_REFUSE, EPERM },
	{ 183, "afs_syscall", RULE_REFUSE, EPERM },
	{ 184, "tuxcall", RULE_REFUSE, EPERM },
	{ 185, "security", RULE_REFUSE, EPERM },
	{ 212, "lookup_dcookie", RULE_REFUSE, EPERM },
	{ 227, "clock_settime", RULE_REFUSE, EPERM },
	{ 236, "vserver", RULE_REFUSE, EPERM },
	{ 237, "mbind", RULE_REFUSE, EPERM },
	{ 238, "set_mempolicy", RULE_REFUSE, EPERM },
	{ 239, "get_mempolicy", RULE_QUIET, EPERM },
	{ 246, "kexec_load", RULE_TRAP, EPERM },
	{ 248, "add_key", RULE_REFUSE, EPERM },
	{ 249, "request_key", RULE_REFUSE, EPERM },
	{ 250, "keyctl", RULE_REFUSE, EPERM },
	{ 256, "migrate_pages", RULE_REFUSE, EPERM },
	{ 272, "unshare", RULE_REFUSE, EPERM },
	{ 279, "move_pages", RULE_REFUSE, EPERM },
	{ 298, "perf_event_open", RULE_REFUSE, EPERM },
	{ 300, "fanotify_init", RULE_REFUSE, EPERM },
	{ 304, "open_by_handle_at", RULE_REFUSE, EPERM },
	{ 308, "setns", RULE_REFUSE, EPERM },
	{ 310, "process_vm_readv", RULE_REFUSE, EPERM },
	{ 311, "process_vm_writev", RULE_REFUSE, EPERM },
	{ 312, "kcmp", RULE_REFUSE, EPERM },
	{ 313, "finit_module", RULE_TRAP, EPERM },
	{ 320, "kexec_file_load", RULE_TRAP, EPERM },
	{ 321, "bpf", RULE_REFUSE, EPERM },
	{ 323, "userfaultfd", RULE_REFUSE, EPERM },
	{ 425, "io_uring_setup", RULE_REFUSE, ENOSYS },
	{ 426, "io_uring_enter", RULE_REFUSE, ENOSYS },
	{ 427, "io_uring_register", RULE_REFUSE, ENOSYS },
	{ 428, "open_tree", RULE_REFUSE, EPERM },
	{ 429, "move_mount", RULE_REFUSE, EPERM },
	{ 430, "fsopen", RULE_REFUSE, EPERM },
	{ 431, "fsconfig", RULE_REFUSE, EPERM },
	{ 432, "fsmount", RULE_REFUSE, EPERM },
	{ 433, "fspick", RULE_REFUSE, EPERM },
	{ 435, "clone3", RULE_QUIET, ENOSYS },
	{ 438, "pidfd_getfd", RULE_REFUSE, EPERM },
	{ 440, "process_madvise", RULE_REFUSE, EPERM },
	{ 442, "mount_setattr", RULE_REFUSE, EPERM },
	{ 443, "quotactl_fd", RULE_REFUSE, EPERM },
	{ 450, "set_mempolicy_home_node", RULE_REFUSE, EPERM },
	{ 467, "open_tree_attr", RULE_REFUSE, EPERM },
};

size_t seccomp__rules(uint32_t *nrs, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(rules) && n < max; i++)
		nrs[n++] = rules[i].nr;
	return ARRAY_SIZE(rules);
}

/* ---- the program ---------------------------------------------------------------------------- */

struct prog {
	struct sock_filter *insn;
	size_t n, max;
	bool overflow;
};

static size_t emit(struct prog *p, struct sock_filter f)
{
	if (p->n == p->max) {
		p->overflow = true;
		return p->n - 1;
	}
	p->insn[p->n] = f;
	return p->n++;
}

#define STMT(code, k)	      ((struct sock_filter)BPF_STMT((code), (k)))
#define JUMP(code, k, jt, jf) ((struct sock_filter)BPF_JUMP((code), (k), (jt), (jf)))
#define LOAD_ARG_LO(i)	      STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, args[i]))

static void ret(struct prog *p, uint32_t action)
{
	emit(p, STMT(BPF_RET | BPF_K, action));
}

/* Allow A when it equals one of vals, else notify. */
static void allow_only(struct prog *p, const uint32_t *vals, size_t n)
{
	for (size_t i = 0; i < n; i++)
		emit(p, JUMP(BPF_JMP | BPF_JEQ | BPF_K, vals[i], (uint8_t)(n - i), 0));
	ret(p, SECCOMP_RET_USER_NOTIF);
	ret(p, SECCOMP_RET_ALLOW);
}

/* Notify when A has any of mask's bits, else allow. */
static void refuse_bits(struct prog *p, uint32_t mask)
{
	emit(p, JUMP(BPF_JMP | BPF_JSET | BPF_K, mask, 0, 1));
	ret(p, SECCOMP_RET_USER_NOTIF);
	ret(p, SECCOMP_RET_ALLOW);
}

/* The instructions after a match on r's number; each path ends in a return. */
static void rule_body(struct prog *p, const struct rule *r)
{
	static const uint32_t families[] = { AF_UNIX, AF_INET, AF_INET6, AF_NETLINK };
	static const uint32_t personas[] = { 0, 8, 0x20000, 0x20008, PERSONALITY_ANY_ };
	static const uint32_t ioctls[] = { TIOCSTI_, TIOCLINUX_ };

	switch (r->kind) {
	case RULE_TRAP:
		return ret(p, SECCOMP_RET_TRAP);
	case RULE_QUIET:
		return ret(p, SECCOMP_RET_ERRNO | (uint32_t)r->err);
	case RULE_FAMILY:
		emit(p, LOAD_ARG_LO(0));
		return allow_only(p, families, ARRAY_SIZE(families));
	case RULE_NS_FLAGS:
		emit(p, LOAD_ARG_LO(0));
		return refuse_bits(p, CLONE_NS_FLAGS);
	case RULE_PERSONA:
		emit(p, LOAD_ARG_LO(0));
		return allow_only(p, personas, ARRAY_SIZE(personas));
	case RULE_IOCTL:
		/* refused values notify; the rest fall to allow (reversed allow_only) */
		emit(p, LOAD_ARG_LO(1));
		for (size_t i = 0; i < ARRAY_SIZE(ioctls); i++)
			emit(p, JUMP(BPF_JMP | BPF_JEQ | BPF_K, ioctls[i],
				     (uint8_t)(ARRAY_SIZE(ioctls) - i), 0));
		ret(p, SECCOMP_RET_ALLOW);
		return ret(p, SECCOMP_RET_USER_NOTIF);
	default:
		return ret(p, SECCOMP_RET_USER_NOTIF);
	}
}

static bool rule_on(const struct rule *r, bool ptrace_allowed)
{
	return r->kind != RULE_PTRACE || !ptrace_allowed;
}

/* A holds the number: a match on rules[i] runs its body, a miss goes on. */
static void rule_leaf(struct prog *p, const struct rule *r)
{
	size_t at = emit(p, JUMP(BPF_JMP | BPF_JEQ | BPF_K, r->nr, 0, 0));

	rule_body(p, r);
	p->insn[at].jf = (uint8_t)(p->n - at - 1);
}

/* rules[lo, hi) as a binary tree on the number in A, ending in allow. */
static void rule_tree(struct prog *p, size_t lo, size_t hi, bool ptrace_allowed)
{
	size_t mid = lo + (hi - lo) / 2, ja;

	if (hi - lo <= 4) {
		for (size_t i = lo; i < hi; i++) {
			if (rule_on(&rules[i], ptrace_allowed))
				rule_leaf(p, &rules[i]);
		}
		return ret(p, SECCOMP_RET_ALLOW);
	}
	/* nr >= rules[mid].nr: over the left half (a JA, whose offset is not limited to 255) */
	emit(p, JUMP(BPF_JMP | BPF_JGE | BPF_K, rules[mid].nr, 0, 1));
	ja = emit(p, STMT(BPF_JMP | BPF_JA, 0));
	rule_tree(p, lo, mid, ptrace_allowed);
	p->insn[ja].k = (uint32_t)(p->n - ja - 1);
	rule_tree(p, mid, hi, ptrace_allowed);
}

int seccomp__build(bool ptrace_allowed, struct sock_filter *out, size_t max)
{
	struct prog p = { .insn = out, .max = max };

	emit(&p, STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)));
	emit(&p, JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_X86_64, 1, 0));
	ret(&p, SECCOMP_RET_USER_NOTIF);
	emit(&p, STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)));
	emit(&p, JUMP(BPF_JMP | BPF_JGE | BPF_K, X32_SYSCALL_BIT, 0, 1));
	ret(&p, SECCOMP_RET_USER_NOTIF);
	emit(&p, JUMP(BPF_JMP | BPF_JGT | BPF_K, SECCOMP_MAX_NR, 0, 1));
	ret(&p, SECCOMP_RET_USER_NOTIF);
	rule_tree(&p, 0, ARRAY_SIZE(rules), ptrace_allowed);
	return p.overflow ? -E2BIG : (int)p.n;
}

/* ---- installing it ---------------------------------------------------------------------------- */

int seccomp__install_sandbox_filter(bool ptrace_allowed)
{
#if defined(__x86_64__)
	struct sock_filter filter[SECCOMP_PROG_MAX];
	struct sock_fprog prog = { .filter = filter };
	int n = seccomp__build(ptrace_allowed, filter, ARRAY_SIZE(filter)), fd;

	if (n < 0)
		return n;
	prog.len = (unsigned short)n;
	fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
			  &prog);
	/* without CAP_SYS_ADMIN in its user namespace a task needs no_new_privs for a filter */
	if (fd < 0 && errno == EACCES && !prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER,
				  SECCOMP_FILTER_FLAG_NEW_LISTENER, &prog);
	return fd < 0 ? -errno : fd;
#else
	(void)ptrace_allowed;
	return -EOPNOTSUPP;
#endif
}

/* ---- the supervisor ---------------------------------------------------------------------------- */

static const struct rule *rule_of(uint32_t nr)
{
	size_t lo = 0, hi = ARRAY_SIZE(rules);

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (rules[mid].nr == nr)
			return &rules[mid];
		if (rules[mid].nr < nr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

static bool native(uint32_t arch, uint32_t nr)
{
	return arch == AUDIT_ARCH_X86_64 && !(nr & X32_SYSCALL_BIT);
}

const char *seccomp__abi(uint32_t arch, uint32_t nr)
{
	if (arch == AUDIT_ARCH_X86_64)
		return nr & X32_SYSCALL_BIT ? "x32" : "x86_64";
	return arch == AUDIT_ARCH_I386 ? "i386" : "other";
}

const char *seccomp__name(uint32_t arch, uint32_t nr)
{
	const struct rule *r = native(arch, nr) ? rule_of(nr) : NULL;

	return r ? r->name : "";
}

int seccomp__errno(uint32_t arch, uint32_t nr)
{
	const struct rule *r = native(arch, nr) ? rule_of(nr) : NULL;

	/* other ABIs and numbers past the table answer as a kernel without them would */
	if (!r)
		return native(arch, nr) && nr <= SECCOMP_MAX_NR ? EPERM : ENOSYS;
	return r->err;
}

int seccomp__receive(int fd, struct seccomp_refusal *out)
{
	struct seccomp_notif req;

	memset(&req, 0, sizeof(req));
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_RECV, &req))
		return -errno;
	out->id = req.id;
	out->pid = req.pid;
	out->arch = req.data.arch;
	out->nr = (uint32_t)req.data.nr;
	memcpy(out->args, req.data.args, sizeof(out->args));
	out->err = seccomp__errno(out->arch, out->nr);
	return 0;
}

int seccomp__reply(int fd, const struct seccomp_refusal *f)
{
	struct seccomp_notif_resp resp;

	memset(&resp, 0, sizeof(resp));
	resp.id = f->id;
	resp.error = -f->err;
	/* ENOENT: the caller is gone or was interrupted; it did not get the call either way */
	if (ioctl(fd, SECCOMP_IOCTL_NOTIF_SEND, &resp) && errno != ENOENT)
		return -errno;
	return 0;
}
