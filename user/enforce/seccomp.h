/* The seccomp profile egretctl run puts on every sandboxed command (unless --privileged or
 * --seccomp none), and the supervisor's side of its refusals. See seccomp.c.
 */
#ifndef EGRET_SECCOMP_H
#define EGRET_SECCOMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <linux/filter.h>

/* the highest x86-64 system call number the table knows (Linux 6.17's file_setattr); higher
 * numbers are refused with ENOSYS, as a kernel without them would answer
 */
#define SECCOMP_MAX_NR	 469u
#define SECCOMP_PROG_MAX 512

/* A refused call, as the supervisor saw and answered it. */
struct seccomp_refusal {
	uint64_t id;   /* the notification's */
	uint32_t pid;  /* the calling thread, in the supervisor's pid namespace */
	uint32_t arch; /* AUDIT_ARCH_* */
	uint32_t nr;
	uint64_t args[6];
	int err; /* the errno it was answered with */
};

/* The program into out (at most max instructions): its length, or -E2BIG. With ptrace_allowed
 * (the sandbox has its own pid namespace, so ptrace reaches only its own processes) ptrace is
 * let through.
 */
int seccomp__build(bool ptrace_allowed, struct sock_filter *out, size_t max);
/* Install it on the calling thread (setting no_new_privs when it must); the listener fd, or
 * -errno.
 */
int seccomp__install_sandbox_filter(bool ptrace_allowed);
/* Take one pending notification from the listener (the caller waits in its system call until
 * it is answered): 0, or -errno (-ENOENT: it went away). Then answer it with f->err.
 */
int seccomp__receive(int fd, struct seccomp_refusal *out);
int seccomp__reply(int fd, const struct seccomp_refusal *f);
/* The errno a refused call gets, its name in the table ("" for calls of other ABIs or past the
 * table) and its ABI name ("x86_64", "i386", "x32", "other").
 */
int seccomp__errno(uint32_t arch, uint32_t nr);
const char *seccomp__name(uint32_t arch, uint32_t nr);
const char *seccomp__abi(uint32_t arch, uint32_t nr);
/* The numbers the table names, in its order, into nrs (up to max); returns how many it has. */
size_t seccomp__rules(uint32_t *nrs, size_t max);

#endif /* EGRET_SECCOMP_H */
