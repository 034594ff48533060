/* A 64-bit program that makes one compat system call, for the compat suite
 * (tests/integration/compat.c): a sandbox's ia32 and x32 calls, which the syscalls/ tracepoints
 * never see.
 *
 *   int80 NR [ARG1 [ARG2 [ARG3 [ARG4]]]]   int $0x80: eax NR, ebx ecx edx esi the args
 *   int80 socketcall FAMILY TYPE PROTO     int $0x80 socketcall(SYS_SOCKET, args below 4 GiB)
 *   int80 socketcall-lazy FAMILY TYPE PROTO  the same, the args in a page of a file mapping
 *                                          not touched yet (a BPF program cannot read it)
 *   int80 x32 NR [ARG1 [ARG2 [ARG3]]]      syscall with NR | 0x40000000 (the x32 bit)
 *   int80 native NR [ARG1 [ARG2 [ARG3]]]   a plain 64-bit syscall (the positive control)
 *   int80 hold ...                         any of these, then wait until stdin is closed
 *
 * Prints the call's return value (a negative errno on failure) and exits 0; exit 2 for bad
 * arguments. Numbers are decimal, 0x hex or 0 octal; an argument s:TEXT is a pointer to TEXT
 * (placed below 4 GiB, where an ia32 call can point).
 */
#define _GNU_SOURCE
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define X32_BIT	   0x40000000L
#define SOCKETCALL 102
#define SYS_SOCKET 1

static long int80(long nr, long a1, long a2, long a3, long a4)
{
	long ret;

	__asm__ volatile("int $0x80"
			 : "=a"(ret)
			 : "a"(nr), "b"(a1), "c"(a2), "d"(a3), "S"(a4)
			 : "r8", "r9", "r10", "r11", "memory");
	return ret;
}

static long x32_call(long nr, long a1, long a2, long a3)
{
	long ret;

	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr | X32_BIT), "D"(a1), "S"(a2), "d"(a3)
			 : "rcx", "r11", "memory");
	return ret;
}

/* memory an ia32 call can point to: below 4 GiB */
static void *low_page(void)
{
	void *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT,
		       -1, 0);

	if (p == MAP_FAILED) {
		perror("int80: mmap MAP_32BIT");
		exit(2);
	}
	return p;
}

static long arg(int argc, char **argv, int i)
{
	if (i >= argc)
		return 0;
	if (!strncmp(argv[i], "s:", 2)) {
		char *p = low_page();

		snprintf(p, 4096, "%s", argv[i] + 2);
		return (long)(unsigned long)p;
	}
	return strtol(argv[i], NULL, 0);
}

/* socketcall's argument block must be addressable with 32 bits */
static long socketcall_socket(long family, long type, long proto)
{
	unsigned int *words = low_page();

	words[0] = (unsigned int)family;
	words[1] = (unsigned int)type;
	words[2] = (unsigned int)proto;
	return int80(SOCKETCALL, SYS_SOCKET, (long)(unsigned long)words, 0, 0);
}

/* the block in a memfd's page, mapped but never touched: the kernel faults it in, a BPF
 * program's bpf_probe_read_user() cannot
 */
static long socketcall_lazy(long family, long type, long proto)
{
	unsigned int words[3] = { (unsigned int)family, (unsigned int)type, (unsigned int)proto };
	int fd = memfd_create("int80", 0);
	void *p;

	if (fd < 0 || write(fd, words, sizeof(words)) != sizeof(words)) {
		perror("int80: memfd");
		exit(2);
	}
	p = mmap(NULL, 4096, PROT_READ, MAP_SHARED | MAP_32BIT, fd, 0);
	if (p == MAP_FAILED) {
		perror("int80: mmap memfd");
		exit(2);
	}
	return int80(SOCKETCALL, SYS_SOCKET, (long)(unsigned long)p, 0, 0);
}

int main(int argc, char **argv)
{
	bool hold = argc > 1 && !strcmp(argv[1], "hold");
	char c;
	long ret;

	if (hold) {
		argv++;
		argc--;
	}
	if (argc < 2) {
		fprintf(stderr, "usage: int80 NR [ARGS] | socketcall FAMILY TYPE PROTO | x32 NR "
				"[ARGS]\n");
		return 2;
	}
	if (!strcmp(argv[1], "native") && argc >= 3)
		ret = syscall(arg(argc, argv, 2), arg(argc, argv, 3), arg(argc, argv, 4),
			      arg(argc, argv, 5));
	else if (!strcmp(argv[1], "x32") && argc >= 3)
		ret = x32_call(arg(argc, argv, 2), arg(argc, argv, 3), arg(argc, argv, 4),
			       arg(argc, argv, 5));
	else if (!strcmp(argv[1], "socketcall-lazy") && argc == 5)
		ret = socketcall_lazy(arg(argc, argv, 2), arg(argc, argv, 3), arg(argc, argv, 4));
	else if (!strcmp(argv[1], "socketcall") && argc == 5)
		ret = socketcall_socket(arg(argc, argv, 2), arg(argc, argv, 3), arg(argc, argv, 4));
	else
		ret = int80(arg(argc, argv, 1), arg(argc, argv, 2), arg(argc, argv, 3),
			    arg(argc, argv, 4), arg(argc, argv, 5));
	printf("%ld\n", ret);
	fflush(stdout);
	while (hold && read(0, &c, 1) > 0)
		;
	return 0;
}
