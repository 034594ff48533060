/* egret_probe: one system call a sandboxed process should not get away with, for tests that run
 * it through `egretctl run` (and, for the positive controls, outside it). Prints what the call
 * returned and exits 0 when it returned at all.
 *   egret_probe bpf | packet | uring | int80 | x32 | kcmp
 *   egret_probe pidfd_getfd PID FD | vm_read PID | vm_write PID | ptrace PID | kill PID
 *   egret_probe keyctl | userfaultfd | perf | open_by_handle | unshare_user | setns PID
 *   egret_probe tiocsti | cgroup_move PID CGROUP_PROCS | module | kexec
 * int80 issues getpid through the 32-bit entry (int 0x80) of this 64-bit program, and x32
 * getpid with the x32 bit set: the syscall tracepoints do not see either.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include <arpa/inet.h>
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>

#define I386_GETPID    20
#define X32_BIT	       0x40000000L
#define KEYCTL_GET_ID_ 0
#define KEY_SPEC_USER_ (-4)

static long int80(long nr)
{
	long ret;

	/* the i386 entry: eax holds the number, the result comes back in eax */
	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr) : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

static long neg_errno(long rc)
{
	if (rc < 0 && rc > -4096) {
		errno = (int)-rc;
		return -1;
	}
	return rc;
}

static long pid_arg(int argc, char **argv, int i)
{
	return i < argc ? strtol(argv[i], NULL, 10) : 1;
}

static long probe_pidfd_getfd(int argc, char **argv)
{
	long pidfd = syscall(SYS_pidfd_open, pid_arg(argc, argv, 2), 0);

	if (pidfd < 0)
		return pidfd;
	return syscall(SYS_pidfd_getfd, pidfd, argc > 3 ? atoi(argv[3]) : 0, 0);
}

static long probe_vm(int argc, char **argv, bool write)
{
	char buf[8] = "egret";
	struct iovec local = { buf, sizeof(buf) }, remote = { (void *)&buf, sizeof(buf) };
	pid_t pid = (pid_t)pid_arg(argc, argv, 2);

	return write ? syscall(SYS_process_vm_writev, pid, &local, 1, &remote, 1, 0)
		     : syscall(SYS_process_vm_readv, pid, &local, 1, &remote, 1, 0);
}

static long probe_ptrace(int argc, char **argv)
{
	pid_t pid = (pid_t)pid_arg(argc, argv, 2);
	long rc = ptrace(PTRACE_ATTACH, pid, NULL, NULL);

	if (rc == 0) {
		waitpid(pid, NULL, __WALL);
		ptrace(PTRACE_DETACH, pid, NULL, NULL);
	}
	return rc;
}

static long probe_cgroup_move(int argc, char **argv)
{
	int fd = argc > 3 ? open(argv[3], O_WRONLY | O_CLOEXEC) : -1;
	long rc;

	if (fd < 0)
		return -1;
	rc = write(fd, argv[2], strlen(argv[2]));
	close(fd);
	return rc;
}

static long probe_perf(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.size = sizeof(a);
	a.config = PERF_COUNT_SW_CPU_CLOCK;
	return syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
}

static long probe_setns(int argc, char **argv)
{
	char path[64];
	int fd;

	snprintf(path, sizeof(path), "/proc/%ld/ns/net", pid_arg(argc, argv, 2));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? fd : setns(fd, CLONE_NEWNET);
}

static long probe_simple(const char *what)
{
	if (!strcmp(what, "bpf")) {
		union bpf_attr attr;

		memset(&attr, 0, sizeof(attr));
		return syscall(SYS_bpf, BPF_MAP_GET_NEXT_ID, &attr, sizeof(attr));
	}
	if (!strcmp(what, "packet"))
		return socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
	if (!strcmp(what, "uring")) {
		struct io_uring_params p;

		memset(&p, 0, sizeof(p));
		return syscall(SYS_io_uring_setup, 4, &p);
	}
	if (!strcmp(what, "int80"))
		return neg_errno(int80(I386_GETPID));
	if (!strcmp(what, "x32"))
		return syscall(X32_BIT | SYS_getpid);
	if (!strcmp(what, "kcmp"))
		return syscall(SYS_kcmp, getpid(), getpid(), 0, 0, 0);
	if (!strcmp(what, "keyctl"))
		return syscall(SYS_keyctl, KEYCTL_GET_ID_, KEY_SPEC_USER_, 0);
	if (!strcmp(what, "userfaultfd"))
		return syscall(SYS_userfaultfd, 0);
	if (!strcmp(what, "perf"))
		return probe_perf();
	if (!strcmp(what, "open_by_handle"))
		return syscall(SYS_open_by_handle_at, AT_FDCWD, NULL, 0);
	if (!strcmp(what, "module"))
		return syscall(SYS_finit_module, -1, "", 0);
	if (!strcmp(what, "kexec"))
		return syscall(SYS_kexec_load, 0, 0, NULL, 0);
	if (!strcmp(what, "unshare_user"))
		return unshare(CLONE_NEWUSER);
	if (!strcmp(what, "tiocsti")) {
		char c = ' ';

		return ioctl(0, TIOCSTI, &c);
	}
	errno = EINVAL;
	return -2;
}

static long probe(int argc, char **argv)
{
	const char *what = argv[1];

	if (!strcmp(what, "pidfd_getfd"))
		return probe_pidfd_getfd(argc, argv);
	if (!strcmp(what, "vm_read") || !strcmp(what, "vm_write"))
		return probe_vm(argc, argv, what[3] == 'w');
	if (!strcmp(what, "ptrace"))
		return probe_ptrace(argc, argv);
	if (!strcmp(what, "kill"))
		return kill((pid_t)pid_arg(argc, argv, 2), 0);
	if (!strcmp(what, "setns"))
		return probe_setns(argc, argv);
	if (!strcmp(what, "cgroup_move"))
		return probe_cgroup_move(argc, argv);
	return probe_simple(what);
}

int main(int argc, char **argv)
{
	long rc;

	if (argc < 2) {
		fprintf(stderr, "usage: egret_probe PROBE [ARGS]\n");
		return 2;
	}
	errno = 0;
	rc = probe(argc, argv);
	if (rc == -2 && errno == EINVAL) {
		fprintf(stderr, "egret_probe: unknown probe '%s'\n", argv[1]);
		return 2;
	}
	printf("%s returned %ld (%s)\n", argv[1], rc, rc < 0 ? strerror(errno) : "ok");
	return 0;
}
