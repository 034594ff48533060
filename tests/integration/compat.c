/* Compat system calls from a sandbox egret did not start: a process that joined <root>/box by
 * hand (as a runtime's --cgroup-parent places one, no egretctl run, no seccomp) makes ia32
 * calls with int $0x80 and x32 calls with bit 30 (tests/tools/int80.c), which no syscalls/
 * tracepoint sees. --compat refuse kills at the first one; --compat judge gives each the check
 * of its 64-bit twin. The positive controls: the same calls from the host's cgroup work, and a
 * native process in the sandbox is not touched.
 */
#include <errno.h>
#include <sched.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <criterion/criterion.h>

#include "cgroup.h"
#include "harness.h"
#include "util.h"

#define AF_PACKET_ "17"
#define SOCK_RAW_  "3"

TestSuite(compat, .init = harness_setup_netns, .fini = harness_teardown, .timeout = 90);

static void start_ok(const char *const extra[])
{
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
}

struct run {
	pid_t pid;
	int status; /* raw wait status */
	long ret;   /* what int80 printed */
	char out[256];
};

/* int80 with args (NULL-terminated), in <root>/box joined by hand, or where the test runs */
static void int80_in(const char *box, struct run *r, ...)
{
	char *argv[8] = { EGRET_INT80_BIN }, dir[PATH_MAX];
	int n = 1, pfd[2];
	ssize_t got = 0, k;
	va_list ap;

	va_start(ap, r);
	while (n < 7 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	if (box) {
		cr_assert_eq(sandbox_path(T, box, dir, sizeof(dir)), 0);
		cr_assert(mkdir(dir, 0755) == 0 || errno == EEXIST, "%s: %s", dir, strerror(errno));
	}
	cr_assert_eq(pipe2(pfd, O_CLOEXEC), 0);
	memset(r, 0, sizeof(*r));
	r->pid = fork();
	cr_assert(r->pid >= 0);
	if (r->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (box && cgroup__join(dir, getpid()))
			_exit(100);
		dup2(pfd[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(pfd[1]);
	while ((size_t)got + 1 < sizeof(r->out) &&
	       (k = read(pfd[0], r->out + got, sizeof(r->out) - 1 - (size_t)got)) > 0)
		got += k;
	close(pfd[0]);
	cr_assert_eq(waitpid(r->pid, &r->status, 0), r->pid);
	r->ret = strtol(r->out, NULL, 10);
}

static bool killed(const struct run *r)
{
	return WIFSIGNALED(r->status) && WTERMSIG(r->status) == SIGKILL;
}

static bool exited(const struct run *r)
{
	return WIFEXITED(r->status) && WEXITSTATUS(r->status) == 0 && r->out[0];
}

/* What the kernel says of ia32 emulation: 1 on, 0 off, -1 unknown (no /proc/config.gz). */
static int ia32_configured(void)
{
	char *zcat[] = { "zcat", "/proc/config.gz", NULL };
	static char config[1 << 20];
	char cmd[4096] = "";
	int on = -1;

	if (run_cmd(zcat, config, sizeof(config)) != 0)
		return -1;
	if (strstr(config, "\nCONFIG_IA32_EMULATION=y"))
		on = strstr(config, "\nCONFIG_IA32_EMULATION_DEFAULT_DISABLED=y") ? 0 : 1;
	else if (strstr(config, "# CONFIG_IA32_EMULATION is not set"))
		on = 0;
	read_file("/proc/cmdline", cmd, sizeof(cmd));
	if (strstr(cmd, "ia32_emulation=0") || strstr(cmd, "ia32_emulation=false"))
		on = 0;
	else if (strstr(cmd, "ia32_emulation=1") || strstr(cmd, "ia32_emulation=true"))
		on = on < 0 ? -1 : 1;
	return on;
}

/* The positive control every test starts with: int $0x80 getpid from the host's cgroup returns
 * the caller's pid. A kernel without ia32 emulation (-ENOSYS, or SIGSEGV from 6.7 on) skips,
 * unless its config says ia32 is on: then int $0x80 is broken here, and the test fails.
 */
static void require_ia32(void)
{
	struct run r;
	int conf;

	int80_in(NULL, &r, "20", NULL);
	if (exited(&r) && r.ret == r.pid)
		return;
	conf = ia32_configured();
	cr_assert_neq(conf, 1,
		      "int $0x80 getpid from the host: status %#x, printed '%s' (pid %d), yet "
		      "the kernel's config says ia32 emulation is on",
		      r.status, r.out, r.pid);
	cr_skip_test("no ia32 emulation on this kernel (int $0x80 getpid: status %#x, '%s')",
		     r.status, r.out);
}

struct tamper_want {
	Egret__V1__Tamper__Kind kind;
	pid_t pid;
};

static bool is_tamper_of(const Egret__V1__Event *ev, const void *arg)
{
	const struct tamper_want *w = arg;

	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == w->kind && ev->process && ev->process->pid == (uint32_t)w->pid;
}

/* the Tamper event of kind for process pid (waits up to 5 s); NULL when there is none */
static const Egret__V1__Event *wait_tamper(struct events *evs, Egret__V1__Tamper__Kind kind,
					   pid_t pid)
{
	struct tamper_want w = { kind, pid };

	if (events_wait(T->sink_path, is_tamper_of, &w, 5000, evs))
		return NULL;
	return events_find(evs, is_tamper_of, &w, NULL);
}

static size_t count_tamper(Egret__V1__Tamper__Kind kind, pid_t pid)
{
	struct tamper_want w = { kind, pid };
	struct events evs;
	size_t n = 0;

	if (events_read(T->sink_path, &evs) == 0)
		events_find(&evs, is_tamper_of, &w, &n);
	events_free(&evs);
	return n;
}

static void expect_compat_tamper(pid_t pid, uint64_t nr, const char *abi, bool was_killed)
{
	const Egret__V1__Event *ev;
	char want[64];
	struct events evs;

	ev = wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_COMPAT_SYSCALL, pid);
	cr_expect(ev, "no COMPAT_SYSCALL Tamper event for %s call %llu of pid %d", abi,
		  (unsigned long long)nr, pid);
	if (ev) {
		cr_expect_eq(ev->tamper->target, nr);
		cr_expect_str_eq(ev->tamper->abi, abi);
		cr_expect_eq(ev->tamper->killed, was_killed);
		snprintf(want, sizeof(want), "%s system call %llu", abi, (unsigned long long)nr);
		cr_expect(strstr(ev->tamper->detail, want), "%s", ev->tamper->detail);
		cr_expect_str_eq(ev->sandbox->name, "box");
	}
	events_free(&evs);
}

/* --compat refuse (the default): int $0x80 getpid and an x32 getpid from the sandbox are killed
 * and reported with their number and ABI; from the host they return; a native process in the
 * sandbox runs on.
 */
Test(compat, refuse_kills_a_sandboxs_first_compat_call)
{
	struct run r;

	start_ok(NULL);
	require_ia32();
	int80_in("box", &r, "20", NULL);
	cr_expect(killed(&r), "int $0x80 getpid in the sandbox: status %#x, '%s'", r.status, r.out);
	expect_compat_tamper(r.pid, 20, "i386", true);

	int80_in("box", &r, "x32", "39", NULL);
	cr_expect(killed(&r), "x32 getpid in the sandbox: status %#x, '%s'", r.status, r.out);
	expect_compat_tamper(r.pid, 39, "x32", true);

	/* positive controls: the host's compat calls, and the sandbox's native ones */
	int80_in(NULL, &r, "x32", "39", NULL);
	cr_expect(exited(&r), "x32 getpid from the host: status %#x", r.status);
	cr_expect(r.ret == r.pid || r.ret == -ENOSYS, "x32 getpid from the host: %ld", r.ret);
	int80_in("box", &r, "native", "39", NULL);
	cr_expect(exited(&r) && r.ret == r.pid, "native getpid in the sandbox: status %#x, '%s'",
		  r.status, r.out);
	cr_expect_eq(count_tamper(EGRET__V1__TAMPER__KIND__KIND_COMPAT_SYSCALL, r.pid), 0);
}

static bool is_packet_kill_of(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->hook == EGRET__V1__NET_CONNECT__HOOK__HOOK_SYSCALL &&
	       ev->net_connect->family == 17 && ev->net_connect->killed && ev->process &&
	       ev->process->pid == (uint32_t)(uintptr_t)arg;
}

static size_t count_packet_kills(pid_t pid)
{
	struct events evs;
	size_t n = 0;

	if (events_read(T->sink_path, &evs) == 0)
		events_find(&evs, is_packet_kill_of, (void *)(uintptr_t)pid, &n);
	events_free(&evs);
	return n;
}

static void expect_packet_kill(const struct run *r, const char *what)
{
	struct events evs;

	cr_expect(killed(r), "%s in the sandbox: status %#x, '%s'", what, r->status, r->out);
	cr_expect_eq(
		events_wait(T->sink_path, is_packet_kill_of, (void *)(uintptr_t)r->pid, 5000, &evs),
		0, "%s: no NetConnect event like a native AF_PACKET socket's", what);
	events_free(&evs);
}

/* --compat judge: getpid runs; AF_PACKET through socket(359), socketcall(SYS_SOCKET) and x32's
 * socket is killed with the event a native one gives; bpf and io_uring_setup likewise; mount
 * is reported; ptrace (which egret cannot judge in compat) is killed as COMPAT_SYSCALL. From
 * the host the same AF_PACKET socket is made.
 */
Test(compat, judge_checks_compat_calls_like_native_ones)
{
	const char *extra[] = { "--compat", "judge", NULL };
	const Egret__V1__Event *ev;
	struct events evs;
	struct run r;

	start_ok(extra);
	require_ia32();
	int80_in("box", &r, "20", NULL);
	cr_expect(exited(&r) && r.ret == r.pid, "int $0x80 getpid in the sandbox: status %#x, '%s'",
		  r.status, r.out);
	cr_expect_eq(count_tamper(EGRET__V1__TAMPER__KIND__KIND_COMPAT_SYSCALL, r.pid), 0);

	int80_in("box", &r, "359", AF_PACKET_, SOCK_RAW_, "0", NULL);
	expect_packet_kill(&r, "int $0x80 socket(AF_PACKET)");
	int80_in("box", &r, "socketcall", AF_PACKET_, SOCK_RAW_, "0", NULL);
	expect_packet_kill(&r, "int $0x80 socketcall(SYS_SOCKET, AF_PACKET)");
	cr_expect_eq(count_packet_kills(r.pid), 1, "one event for one socketcall");
	/* arguments egret_csys cannot read: judged at the exit, by the socket made */
	int80_in("box", &r, "socketcall-lazy", AF_PACKET_, SOCK_RAW_, "0", NULL);
	expect_packet_kill(&r, "int $0x80 socketcall(SYS_SOCKET, AF_PACKET) from a lazy page");
	int80_in("box", &r, "socketcall-lazy", "2", "2", "0", NULL);
	cr_expect(exited(&r) && r.ret >= 0, "socketcall(AF_INET) from a lazy page: %#x '%s'",
		  r.status, r.out);
	int80_in("box", &r, "x32", "41", AF_PACKET_, SOCK_RAW_, "0", NULL);
	expect_packet_kill(&r, "x32 socket(AF_PACKET)");
	int80_in("box", &r, "359", "2", "2", "0", NULL); /* AF_INET, SOCK_DGRAM: hooked */
	cr_expect(exited(&r) && r.ret >= 0, "int $0x80 socket(AF_INET): status %#x, '%s'", r.status,
		  r.out);

	int80_in("box", &r, "357", "11", "0", "0", NULL); /* BPF_PROG_GET_NEXT_ID */
	cr_expect(killed(&r), "int $0x80 bpf: status %#x, '%s'", r.status, r.out);
	ev = wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_BPF, r.pid);
	cr_expect(ev && ev->tamper->target == 11 && ev->tamper->killed, "no Tamper BPF");
	events_free(&evs);

	int80_in("box", &r, "425", "8", "0", NULL); /* io_uring_setup(8, NULL) */
	cr_expect(killed(&r), "int $0x80 io_uring_setup: status %#x, '%s'", r.status, r.out);
	cr_expect(wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_IO_URING, r.pid),
		  "no Tamper IO_URING");
	events_free(&evs);

	int80_in("box", &r, "21", "0", "0", "0", NULL); /* mount(NULL, ...): EFAULT */
	cr_expect(exited(&r), "int $0x80 mount: status %#x, '%s'", r.status, r.out);
	ev = wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_MOUNT, r.pid);
	cr_expect(ev && ev->tamper->target == 1, "no Tamper MOUNT for int $0x80 mount");
	events_free(&evs);

	int80_in("box", &r, "26", "16", "2147483647", NULL); /* ptrace(PTRACE_ATTACH, no one) */
	cr_expect(killed(&r), "int $0x80 ptrace: status %#x, '%s'", r.status, r.out);
	expect_compat_tamper(r.pid, 26, "i386", true);
	ev = wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_COMPAT_SYSCALL, r.pid);
	if (ev)
		cr_expect_str_eq(ev->tamper->syscall, "ptrace");
	events_free(&evs);

	int80_in("box", &r, "37", "0", "0", NULL); /* kill(0, 0): its own group, no signal */
	cr_expect(killed(&r), "int $0x80 kill: status %#x, '%s'", r.status, r.out);
	expect_compat_tamper(r.pid, 37, "i386", true);
	int80_in("box", &r, "x32", "521", "16", "2147483647", NULL); /* x32 ptrace */
	cr_expect(killed(&r), "x32 ptrace: status %#x, '%s'", r.status, r.out);
	expect_compat_tamper(r.pid, 521, "x32", true);
	int80_in("box", &r, "x32", "321", "11", "0", NULL); /* x32 bpf */
	cr_expect(killed(&r), "x32 bpf: status %#x, '%s'", r.status, r.out);
	cr_expect(wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_BPF, r.pid), "no Tamper BPF");
	events_free(&evs);

	/* positive control: the host's int $0x80 AF_PACKET socket */
	int80_in(NULL, &r, "359", AF_PACKET_, SOCK_RAW_, "0", NULL);
	cr_expect(exited(&r) && r.ret >= 0, "int $0x80 socket(AF_PACKET) from the host: %#x '%s'",
		  r.status, r.out);
}

/* Refuse mode under an audit policy: the sandbox's compat calls run, the process is reported
 * once, and each call still gets its 64-bit twin's check without the kill (AF_PACKET audited).
 */
Test(compat, audit_policy_reports_compat_calls_once_without_killing)
{
	const Egret__V1__Event *ev;
	struct events evs;
	struct run r;

	cr_assert_eq(harness_policy(T, "mode audit\n"), 0);
	start_ok(NULL);
	require_ia32();
	int80_in("box", &r, "359", AF_PACKET_, SOCK_RAW_, "0", NULL);
	cr_expect(exited(&r) && r.ret >= 0, "int $0x80 AF_PACKET under audit: status %#x, '%s'",
		  r.status, r.out);
	expect_compat_tamper(r.pid, 359, "i386", false);
	ev = wait_tamper(&evs, EGRET__V1__TAMPER__KIND__KIND_COMPAT_SYSCALL, r.pid);
	if (ev)
		cr_expect_str_eq(ev->tamper->syscall, "socket");
	events_free(&evs);
	/* int80 made one compat call and exited through exit_group, a native one: one report */
	cr_expect_eq(count_tamper(EGRET__V1__TAMPER__KIND__KIND_COMPAT_SYSCALL, r.pid), 1);
}

/* Without tp_btf/sys_enter (--without-kernel-feature sys_enter_btf) compat calls are a gap:
 * enforce mode is refused unless --accept-kernel-gap compat, and then int $0x80 runs unseen.
 */
Test(compat, without_sys_enter_btf_compat_is_a_named_gap)
{
	const char *gap[] = { "--without-kernel-feature", "sys_enter_btf", NULL };
	const char *accepted[] = { "--without-kernel-feature", "sys_enter_btf",
				   "--accept-kernel-gap", "compat", NULL };
	char out[8192];
	struct run r;
	int rc;

	rc = harness_start(T, gap);
	cr_expect_eq(rc, 1, "egretd enforced with the compat gap: %d\n%s", rc, harness_log(T));
	if (rc == 0)
		harness_stop(T, SIGTERM);
	cr_expect(strstr(harness_log(T), "--accept-kernel-gap compat"), "%s", harness_log(T));
	start_ok(accepted);
	require_ia32();
	cr_assert_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, "compat: gap (accepted") && strstr(out, "egret_csys"), "%s", out);
	int80_in("box", &r, "20", NULL);
	cr_expect(exited(&r) && r.ret == r.pid, "the gap accepted, int $0x80 getpid: %#x '%s'",
		  r.status, r.out);
	cr_expect(!strstr(out, "NOT attached"), "status counts a program not loaded as missing: %s",
		  out);
}

struct file_want {
	Egret__V1__FileActivity__Op op;
	const char *path, *new_path;
	pid_t pid;
};

static bool is_file_of(const Egret__V1__Event *ev, const void *arg)
{
	const struct file_want *w = arg;

	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_FILE && ev->file->op == w->op &&
	       !strcmp(ev->file->path, w->path) &&
	       (!w->new_path || !strcmp(ev->file->new_path, w->new_path)) && ev->process &&
	       ev->process->pid == (uint32_t)w->pid;
}

static void expect_file(const struct run *r, Egret__V1__FileActivity__Op op, const char *path,
			const char *new_path)
{
	struct file_want w = { op, path, new_path, r->pid };
	struct events evs;

	cr_expect(exited(r) && r->ret >= 0, "int $0x80 file call on %s: status %#x, '%s'", path,
		  r->status, r->out);
	cr_expect_eq(events_wait(T->sink_path, is_file_of, &w, 5000, &evs), 0,
		     "no file event (op %d) for %s from pid %d", op, path, r->pid);
	events_free(&evs);
}

/* --compat judge: open(O_CREAT), chmod, rename and unlink through int $0x80 in the sandbox are
 * audited as their 64-bit twins are, with the same paths; the process runs on.
 */
Test(compat, judge_audits_compat_file_calls)
{
	const char *extra[] = { "--compat", "judge", NULL };
	char a[PATH_MAX], b[PATH_MAX], sa[PATH_MAX + 2], sb[PATH_MAX + 2];
	struct run r;

	start_ok(extra);
	require_ia32();
	snprintf(a, sizeof(a), "%s/compat-created", T->tmpdir);
	snprintf(b, sizeof(b), "%s/compat-renamed", T->tmpdir);
	snprintf(sa, sizeof(sa), "s:%s", a);
	snprintf(sb, sizeof(sb), "s:%s", b);
	int80_in("box", &r, "5", sa, "0101", "0600", NULL); /* open(O_CREAT | O_WRONLY) */
	expect_file(&r, EGRET__V1__FILE_ACTIVITY__OP__OP_CREATE, a, NULL);
	cr_expect_eq(access(a, F_OK), 0, "%s was not created", a);
	int80_in("box", &r, "15", sa, "0640", NULL); /* chmod */
	expect_file(&r, EGRET__V1__FILE_ACTIVITY__OP__OP_CHMOD, a, NULL);
	int80_in("box", &r, "38", sa, sb, NULL); /* rename */
	expect_file(&r, EGRET__V1__FILE_ACTIVITY__OP__OP_RENAME, a, b);
	int80_in("box", &r, "10", sb, NULL); /* unlink */
	expect_file(&r, EGRET__V1__FILE_ACTIVITY__OP__OP_UNLINK, b, NULL);
	cr_expect_neq(access(b, F_OK), 0, "%s is still there", b);
}

/* The network namespace cookie of process pid (0 when it cannot be read). */
static uint64_t netns_cookie_of(pid_t pid)
{
	char path[64];
	uint64_t cookie = 0;
	int pfd[2], status;
	pid_t child;

	snprintf(path, sizeof(path), "/proc/%d/ns/net", (int)pid);
	cr_assert_eq(pipe(pfd), 0);
	child = fork();
	if (child == 0) {
		socklen_t len = sizeof(cookie);
		int ns = open(path, O_RDONLY | O_CLOEXEC), fd;

		if (ns < 0 || setns(ns, CLONE_NEWNET))
			_exit(1);
		fd = socket(AF_INET, SOCK_DGRAM, 0);
		if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_NETNS_COOKIE, &cookie, &len))
			_exit(2);
		_exit(write(pfd[1], &cookie, sizeof(cookie)) == sizeof(cookie) ? 0 : 3);
	}
	close(pfd[1]);
	if (read(pfd[0], &cookie, sizeof(cookie)) != sizeof(cookie))
		cookie = 0;
	close(pfd[0]);
	waitpid(child, &status, 0);
	return cookie;
}

/* whether egretd has a DNS listener in the namespace of cookie, within 5 s */
static bool listener_appears(uint64_t cookie)
{
	char pin[PATH_MAX + 32];
	uint8_t value[256];
	int fd;
	bool found = false;

	snprintf(pin, sizeof(pin), "%s/maps/dns_listeners", T->state_dir);
	fd = bpf_obj_get(pin);
	cr_assert(fd >= 0, "%s: %s", pin, strerror(errno));
	for (int i = 0; i < 50 && !found; i++) {
		found = bpf_map_lookup_elem(fd, &cookie, value) == 0;
		if (!found)
			usleep(100000);
	}
	close(fd);
	return found;
}

/* int80 hold args...: started in <root>/box, its first line read; *in its stdin (close it) */
static pid_t int80_held(int *in, long *ret, const char *a1, const char *a2, const char *a3)
{
	char *argv[] = { EGRET_INT80_BIN, "hold", (char *)a1, (char *)a2, (char *)a3, NULL };
	char dir[PATH_MAX], line[64] = "";
	int ipipe[2], opipe[2];
	pid_t pid;

	cr_assert_eq(sandbox_path(T, "box", dir, sizeof(dir)), 0);
	cr_assert(mkdir(dir, 0755) == 0 || errno == EEXIST);
	cr_assert_eq(pipe2(ipipe, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(opipe, O_CLOEXEC), 0);
	pid = fork();
	cr_assert(pid >= 0);
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cgroup__join(dir, getpid()))
			_exit(100);
		dup2(ipipe[0], 0);
		dup2(opipe[1], 1);
		execv(argv[0], argv);
		_exit(127);
	}
	close(ipipe[0]);
	close(opipe[1]);
	cr_expect_gt(read(opipe[0], line, sizeof(line) - 1), 0, "int80 hold %s: no answer", a1);
	close(opipe[0]);
	*ret = strtol(line, NULL, 10);
	*in = ipipe[1];
	return pid;
}

static void end_held(pid_t pid, int in)
{
	int status;

	close(in);
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_expect(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x", status);
}

/* --compat judge: an unshare(CLONE_NEWNET) through int $0x80 in the sandbox gets a DNS
 * listener in its new namespace, as a native unshare does (the positive control: the same
 * process natively).
 */
Test(compat, judge_gives_a_compat_unshare_its_dns_listener)
{
	const char *extra[] = { "--compat", "judge", NULL };
	char newnet[16];
	long ret;
	int in;
	pid_t pid;

	start_ok(extra);
	require_ia32();
	snprintf(newnet, sizeof(newnet), "%d", CLONE_NEWNET);
	pid = int80_held(&in, &ret, "native", "272", newnet); /* x86-64 unshare */
	cr_expect_eq(ret, 0, "native unshare(CLONE_NEWNET): %ld", ret);
	cr_expect(listener_appears(netns_cookie_of(pid)), "no listener after a native unshare");
	end_held(pid, in);

	pid = int80_held(&in, &ret, "310", newnet, NULL); /* ia32 unshare */
	cr_expect_eq(ret, 0, "int $0x80 unshare(CLONE_NEWNET): %ld", ret);
	cr_expect(listener_appears(netns_cookie_of(pid)),
		  "no listener in the namespace of an int $0x80 unshare");
	end_held(pid, in);
}

static bool is_packet_audit_of(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->hook == EGRET__V1__NET_CONNECT__HOOK__HOOK_SYSCALL &&
	       ev->net_connect->family == 17 && !ev->net_connect->killed && ev->process &&
	       ev->process->pid == (uint32_t)(uintptr_t)arg;
}

/* --compat judge under an audit policy: socketcall(AF_PACKET) runs and is reported once,
 * though both its entry and its exit are judged; from a page egret_csys cannot read, once too
 */
Test(compat, judge_under_an_audit_policy_reports_a_socketcall_once)
{
	const char *extra[] = { "--compat", "judge", NULL };
	const char *modes[] = { "socketcall", "socketcall-lazy" };
	struct events evs;
	size_t n = 0;
	struct run r;

	cr_assert_eq(harness_policy(T, "mode audit\n"), 0);
	start_ok(extra);
	require_ia32();
	for (int i = 0; i < 2; i++) {
		int80_in("box", &r, modes[i], AF_PACKET_, SOCK_RAW_, "0", NULL);
		cr_expect(exited(&r) && r.ret >= 0, "%s AF_PACKET under audit: %#x '%s'", modes[i],
			  r.status, r.out);
		cr_expect_eq(events_wait(T->sink_path, is_packet_audit_of, (void *)(uintptr_t)r.pid,
					 5000, &evs),
			     0, "%s: no audited NetConnect", modes[i]);
		events_free(&evs);
		usleep(300000); /* both records were in the ring before int80 exited */
		cr_assert_eq(events_read(T->sink_path, &evs), 0);
		events_find(&evs, is_packet_audit_of, (void *)(uintptr_t)r.pid, &n);
		events_free(&evs);
		cr_expect_eq(n, 1, "%s: %zu events for one call", modes[i], n);
	}
}
