/* What root in an `egretctl run` sandbox cannot do to the host: see egretd or any host process,
 * read or write egret's state, signal egretd, make network devices or nftables rules in the
 * host's network namespace, make 32-bit system calls, reach into host processes, pull a host
 * process into its cgroup; every refusal of the seccomp profile is a Tamper event, and the
 * start event says what the sandbox was given. Each attempt has its positive control: the same
 * with the confinement taken away (--privileged, --share ..., --no-userns) or from outside.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "ns.h"
#include "util.h"

#define POLICY_TEXT "mode enforce\nallow 192.0.2.77 tcp/7777\n"

static char shared[PATH_MAX];

static void setup(void)
{
	harness_setup(true);
	harness_setup_start(POLICY_TEXT, NULL);
	cr_assert_eq(harness_shared_dir(T, shared, sizeof(shared)), 0);
}

TestSuite(sandbox, .init = setup, .fini = harness_teardown, .timeout = 120);

/* `egretctl run --sandbox box [OPT...] -- sh -c script`; opts end at NULL (up to 3) */
static int run_sh(char *out, size_t size, const char *script, const char *o1, const char *o2,
		  const char *o3)
{
	const char *opt[3] = { o1, o2, o3 };
	int n = 0;

	while (n < 3 && opt[n])
		n++;
	switch (n) {
	case 0:
		return egretctl(T, out, size, "run", "--sandbox", "box", "--", "sh", "-c", script,
				NULL);
	case 1:
		return egretctl(T, out, size, "run", "--sandbox", "box", o1, "--", "sh", "-c",
				script, NULL);
	case 2:
		return egretctl(T, out, size, "run", "--sandbox", "box", o1, o2, "--", "sh", "-c",
				script, NULL);
	default:
		return egretctl(T, out, size, "run", "--sandbox", "box", o1, o2, o3, "--", "sh",
				"-c", script, NULL);
	}
}

static bool is_seccomp(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_SECCOMP &&
	       !strcmp(ev->tamper->syscall, (const char *)arg);
}

static bool is_abi(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_SECCOMP &&
	       !strcmp(ev->tamper->abi, (const char *)arg);
}

static bool is_started(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE &&
	       ev->sandbox_lifecycle->kind == EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_STARTED &&
	       ev->sandbox_lifecycle->confinement &&
	       ev->sandbox_lifecycle->confinement->privileged == (arg != NULL);
}

/* A host process outside every sandbox, killed at the end of the test process. */
static pid_t host_sleeper(void)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("sleep", "sleep", "60", NULL);
		_exit(127);
	}
	cr_assert_gt(pid, 0);
	return pid;
}

Test(sandbox, ps_shows_no_host_process)
{
	char out[16384];

	cr_assert_eq(run_sh(out, sizeof(out), "ps -e -o pid=,comm=", NULL, NULL, NULL), 0, "%s",
		     out);
	cr_expect_null(strstr(out, "egretd"), "egretd visible in the sandbox:\n%s", out);
	cr_expect(strstr(out, "1 egretctl-init"), "pid 1 is not the sandbox's init:\n%s", out);
	cr_expect(strstr(out, " ps\n"), "%s", out);
	/* positive control: in the host's pid namespace, egretd is there */
	cr_assert_eq(run_sh(out, sizeof(out), "ps -e -o pid=,comm=", "--share=pid", NULL, NULL), 0,
		     "%s", out);
	cr_expect(strstr(out, "egretd"), "egretd not seen from the host's pid namespace:\n%s", out);
}

/* Reads and writes egret's state dir, policy, live rules, spool, sink, log and control socket,
 * printing a word for each that worked.
 */
static void state_script(char *s, size_t size)
{
	snprintf(s, size,
		 "cat %s; echo '# appended' >> %s && echo APPENDED; cat %s; ls %s; ls %s;"
		 "touch %s/x && echo SPOOLED; test -s %s && echo SINK_READ; test -s %s && "
		 "echo LOG_READ; %s --control %s list >/dev/null 2>&1 && echo CONTROL; true",
		 T->policy_path, T->policy_path, T->live_path, T->state_dir, T->spool_dir,
		 T->spool_dir, T->sink_path, T->log_path, EGRETCTL_BIN, T->control);
}

static void expect_none_reached(const char *out, const char *how)
{
	static const char *const words[] = { "192.0.2.77", "APPENDED",	"192.0.2.78", "links",
					     "SPOOLED",	   "SINK_READ", "LOG_READ",   "CONTROL" };

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		cr_expect_null(strstr(out, words[i]), "%s: %s reached:\n%s", how, words[i], out);
}

Test(sandbox, egret_state_is_out_of_reach)
{
	char out[16384], script[8192];

	/* readable by anyone but for the sandbox's mount namespace */
	cr_assert_eq(egretctl(T, out, sizeof(out), "allow", "192.0.2.78", NULL), 0, "%s", out);
	cr_assert_eq(chmod(T->tmpdir, 0755), 0);
	cr_assert_eq(chmod(T->spool_dir, 0755), 0);
	cr_assert_eq(chmod(T->policy_path, 0644) | chmod(T->live_path, 0644) |
			     chmod(T->sink_path, 0644) | chmod(T->log_path, 0644),
		     0);
	state_script(script, sizeof(script));
	cr_assert_eq(run_sh(out, sizeof(out), script, NULL, NULL, NULL), 0, "%s", out);
	expect_none_reached(out, "default");
	/* root of the host's user namespace in the same mount namespace is held by its mounts */
	cr_assert_eq(run_sh(out, sizeof(out), script, "--no-userns", NULL, NULL), 0, "%s", out);
	expect_none_reached(out, "--no-userns");
	cr_expect(strstr(out, "Read-only file system"), "%s", out);

	/* positive controls: the host's mount namespace shows them, and host root writes */
	cr_assert_eq(run_sh(out, sizeof(out), script, "--share=mount", NULL, NULL), 0, "%s", out);
	cr_expect(strstr(out, "192.0.2.77") && strstr(out, "192.0.2.78") &&
			  strstr(out, "SINK_READ") && strstr(out, "LOG_READ"),
		  "--share mount: %s", out);
	cr_expect_null(strstr(out, "APPENDED"), "unprivileged root appended to the policy");
	cr_assert_eq(run_sh(out, sizeof(out), script, "--privileged", NULL, NULL), 0, "%s", out);
	cr_expect(strstr(out, "APPENDED") && strstr(out, "links") && strstr(out, "SPOOLED"),
		  "--privileged: %s", out);
	cr_expect(strstr(out, "CONTROL") == NULL, "egretd served a sandboxed peer: %s", out);
	cr_expect_eq(kill(T->egretd, 0), 0, "egretd died");
}

Test(sandbox, egretd_cannot_be_signalled)
{
	char out[4096], script[256];

	snprintf(script, sizeof(script), "kill -9 %d; echo kill=$?", (int)T->egretd);
	cr_assert_eq(run_sh(out, sizeof(out), script, NULL, NULL, NULL), 0, "%s", out);
	cr_expect(strstr(out, "kill=1"), "%s", out);
	cr_assert_eq(run_sh(out, sizeof(out), script, "--share=pid", NULL, NULL), 0, "%s", out);
	cr_expect(strstr(out, "kill=1"), "%s", out);
	cr_expect_eq(kill(T->egretd, 0), 0, "egretd was killed from a sandbox");
	/* positive control: host root in the host's pid namespace reaches it (signal 0) */
	snprintf(script, sizeof(script), "kill -0 %d; echo kill=$?", (int)T->egretd);
	cr_assert_eq(run_sh(out, sizeof(out), script, "--privileged", NULL, NULL), 0, "%s", out);
	cr_expect(strstr(out, "kill=0"), "%s", out);
}

#define NETDEV_SCRIPT                                                     \
	"ip tuntap add dev egtun0 mode tun && echo TUN; "                 \
	"ip link add egvx0 type vxlan id 42 dstport 4789 && echo VXLAN; " \
	"nft add table inet egtest && echo NFT; true"

static bool host_has(const char *cmdline)
{
	char out[2048], *argv[] = { "/bin/sh", "-c", (char *)cmdline, NULL };

	return run_cmd(argv, out, sizeof(out)) == 0;
}

Test(sandbox, no_network_devices_or_nftables_in_the_host_namespace)
{
	char out[8192];

	cr_assert_eq(run_sh(out, sizeof(out), NETDEV_SCRIPT, NULL, NULL, NULL), 0, "%s", out);
	cr_expect_null(strstr(out, "TUN"), "%s", out);
	cr_expect_null(strstr(out, "VXLAN"), "%s", out);
	cr_expect_null(strstr(out, "NFT"), "%s", out);
	cr_expect_not(host_has("ip link show egtun0 >/dev/null 2>&1"));
	cr_expect_not(host_has("ip link show egvx0 >/dev/null 2>&1"));
	cr_expect_not(host_has("nft list table inet egtest >/dev/null 2>&1"));
	/* in a network namespace of its own it may (a tun device where /dev/net/tun lets its
	 * uid open it): nothing of it reaches the host's
	 */
	cr_assert_eq(run_sh(out, sizeof(out), NETDEV_SCRIPT, "--net=new", NULL, NULL), 0, "%s",
		     out);
	cr_expect(strstr(out, "VXLAN") && strstr(out, "NFT"), "%s", out);
	cr_expect_not(host_has("ip link show egtun0 >/dev/null 2>&1"));
	cr_expect_not(host_has("ip link show egvx0 >/dev/null 2>&1"));
	cr_expect_not(host_has("nft list table inet egtest >/dev/null 2>&1"));
	/* positive control: --privileged makes them in the host's (the test's) namespace */
	cr_assert_eq(run_sh(out, sizeof(out), NETDEV_SCRIPT, "--privileged", NULL, NULL), 0, "%s",
		     out);
	cr_expect(strstr(out, "TUN") && strstr(out, "VXLAN") && strstr(out, "NFT"), "%s", out);
	cr_expect(host_has("ip link show egtun0 >/dev/null 2>&1"));
	netns_run("ip link del egtun0; ip link del egvx0; nft delete table inet egtest");
}

Test(sandbox, thirty_two_bit_system_calls_are_refused)
{
	char out[4096];
	const Egret__V1__Event *ev;
	struct events evs;

	cr_assert_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--", EGRET_PROBE_BIN,
			      "int80", NULL),
		     0, "%s", out);
	cr_expect(strstr(out, "int80 returned -1 (Function not implemented)"), "%s", out);
	cr_assert_eq(events_wait(T->sink_path, is_abi, "i386", 5000, &evs), 0, "no i386 refusal");
	ev = events_find(&evs, is_abi, "i386", NULL);
	cr_expect_eq(ev->tamper->target, 20, "i386 getpid is 20");
	cr_expect_str_eq(ev->process->comm, "egret_probe");
	events_free(&evs);
	cr_assert_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--", EGRET_PROBE_BIN,
			      "x32", NULL),
		     0, "%s", out);
	cr_expect(strstr(out, "x32 returned -1"), "%s", out);
	cr_expect_eq(events_wait(T->sink_path, is_abi, "x32", 5000, &evs), 0, "no x32 refusal");
	events_free(&evs);
	/* without the profile egret's kernel hook (egret_csys, --compat refuse) kills it; the
	 * positive control: outside the sandboxes the 32-bit entry answers (getpid)
	 */
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--privileged", "--",
			      EGRET_PROBE_BIN, "int80", NULL),
		     128 + SIGKILL, "%s", out);
	{
		char *argv[] = { EGRET_PROBE_BIN, "int80", NULL };

		cr_expect_eq(run_cmd(argv, out, sizeof(out)), 0, "%s", out);
		cr_expect(strstr(out, "(ok)"), "%s", out);
	}
}

static void probe_script(char *s, size_t size, pid_t target)
{
	snprintf(s, size, "%s pidfd_getfd %d 0; %s vm_read %d; %s vm_write %d; %s ptrace %d",
		 EGRET_PROBE_BIN, (int)target, EGRET_PROBE_BIN, (int)target, EGRET_PROBE_BIN,
		 (int)target, EGRET_PROBE_BIN, (int)target);
}

Test(sandbox, host_processes_are_out_of_reach)
{
	char out[8192], script[2048];
	pid_t target = host_sleeper();
	struct events evs;

	probe_script(script, sizeof(script), target);
	cr_assert_eq(run_sh(out, sizeof(out), script, NULL, NULL, NULL), 0, "%s", out);
	cr_expect_null(strstr(out, "(ok)"), "default: %s", out);
	cr_expect_null(strstr(out, "Bad address"), "default: vm reached the process: %s", out);
	/* a host pid it can see (the host's pid namespace): the profile refuses */
	cr_assert_eq(run_sh(out, sizeof(out), script, "--share=pid", NULL, NULL), 0, "%s", out);
	cr_expect_null(strstr(out, "(ok)"), "--share pid: %s", out);
	cr_expect(strstr(out, "pidfd_getfd returned -1 (Operation not permitted)"), "%s", out);
	cr_expect(strstr(out, "ptrace returned -1 (Operation not permitted)"), "%s", out);
	cr_expect(strstr(out, "vm_write returned -1 (Operation not permitted)"), "%s", out);
	cr_expect_eq(events_wait(T->sink_path, is_seccomp, "pidfd_getfd", 5000, &evs), 0);
	events_free(&evs);
	cr_expect_eq(events_wait(T->sink_path, is_seccomp, "ptrace", 5000, &evs), 0);
	events_free(&evs);
	/* without the profile, egret's kernel hooks kill each call's maker (tests procs.c) */
	cr_expect_eq(run_sh(out, sizeof(out), script, "--privileged", NULL, NULL), 128 + SIGKILL,
		     "%s", out);
	cr_expect_null(strstr(out, "returned"), "--privileged: %s", out);
	/* positive control: host root outside every sandbox reaches it */
	cr_assert_eq(run_cmd((char *[]){ "sh", "-c", script, NULL }, out, sizeof(out)), 0, "%s",
		     out);
	cr_expect(strstr(out, "pidfd_getfd returned ") && !strstr(out, "pidfd_getfd returned -1"),
		  "%s", out);
	cr_expect(strstr(out, "vm_read returned -1 (Bad address)"), "%s", out);
	cr_expect(strstr(out, "ptrace returned 0 (ok)"), "%s", out);
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
}

Test(sandbox, no_host_process_into_its_cgroup)
{
	char out[4096], script[1024], before[8192], after[8192], path[64];
	pid_t target = host_sleeper();

	snprintf(path, sizeof(path), "/proc/%d/cgroup", (int)target);
	cr_assert_gt(read_file(path, before, sizeof(before)), 0);
	snprintf(script, sizeof(script),
		 "mkdir %s/inner && echo $$ > %s/inner/cgroup.procs && echo MOVED_SELF; "
		 "echo %d > %s/inner/cgroup.procs && echo MOVED_HOST; "
		 "echo %d > %s/cgroup.procs && echo MOVED_HOST; true",
		 T->cgroup_mount, T->cgroup_mount, (int)target, T->cgroup_mount, (int)target,
		 T->cgroup_mount);
	cr_assert_eq(run_sh(out, sizeof(out), script, NULL, NULL, NULL), 0, "%s", out);
	/* positive control: its own processes it may move (its cgroup is delegated to it) */
	cr_expect(strstr(out, "MOVED_SELF"), "%s", out);
	cr_expect_null(strstr(out, "MOVED_HOST"), "%s", out);
	/* where it can see the host pid and the host's cgroup tree */
	snprintf(script, sizeof(script), "echo %d > %s/box/cgroup.procs && echo MOVED_HOST; true",
		 (int)target, T->cgroup_root);
	cr_assert_eq(run_sh(out, sizeof(out), script, "--share=pid,cgroup,mount", NULL, NULL), 0,
		     "%s", out);
	cr_expect_null(strstr(out, "MOVED_HOST"), "%s", out);
	cr_assert_gt(read_file(path, after, sizeof(after)), 0);
	cr_expect_str_eq(before, after, "the host process was moved");
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
}

/* each probe: the name of the system call the profile refuses */
static const struct {
	const char *probe, *syscall;
} refused[] = {
	{ "kcmp", "kcmp" },
	{ "keyctl", "keyctl" },
	{ "perf", "perf_event_open" },
	{ "userfaultfd", "userfaultfd" },
	{ "open_by_handle", "open_by_handle_at" },
	{ "unshare_user", "unshare" },
	{ "packet", "socket" },
	{ "bpf", "bpf" },
	{ "uring", "io_uring_setup" },
	{ "vm_write", "process_vm_writev" },
	{ "setns", "setns" },
};

Test(sandbox, each_refusal_is_a_tamper_event)
{
	char out[16384], script[8192];
	const Egret__V1__Event *ev;
	struct events evs;
	size_t off = 0;

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
		off += (size_t)snprintf(script + off, sizeof(script) - off, "%s %s $$; ",
					EGRET_PROBE_BIN, refused[i].probe);
	cr_assert_eq(run_sh(out, sizeof(out), script, NULL, NULL, NULL), 0, "%s", out);
	cr_expect_null(strstr(out, "(ok)"), "a refused call went through: %s", out);
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		size_t n = 0;

		cr_assert_eq(events_wait(T->sink_path, is_seccomp, refused[i].syscall, 5000, &evs),
			     0, "no Tamper event for %s:\n%s", refused[i].syscall, out);
		ev = events_find(&evs, is_seccomp, refused[i].syscall, &n);
		cr_expect_eq(n, 1, "%s: %zu events", refused[i].syscall, n);
		cr_expect_str_eq(ev->tamper->abi, "x86_64");
		cr_expect_str_eq(ev->sandbox->name, "box");
		cr_expect_str_eq(ev->process->comm, "egret_probe");
		cr_expect_geq(ev->process->uid, NS_IDS_BASE, "uid %u", ev->process->uid);
		cr_expect_eq(ev->tamper->n_args, 6);
		cr_expect_not(ev->tamper->killed);
		cr_expect(strstr(ev->tamper->detail, refused[i].syscall), "%s", ev->tamper->detail);
		events_free(&evs);
	}
}

Test(sandbox, start_event_says_what_it_was_given)
{
	char out[4096], owner[PATH_MAX + 16];
	const Egret__V1__Confinement *cf;
	const Egret__V1__Event *ev;
	struct events evs;
	struct stat st;

	snprintf(owner, sizeof(owner), "%s/mine", shared);
	cr_assert_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--", "touch", owner,
			      NULL),
		     0, "%s", out);
	cr_assert_eq(events_wait(T->sink_path, is_started, NULL, 5000, &evs), 0);
	ev = events_find(&evs, is_started, NULL, NULL);
	cf = ev->sandbox_lifecycle->confinement;
	cr_expect_str_eq(ev->sandbox->name, "box");
	cr_expect(cf->user_namespace);
	cr_expect_geq(cf->uid, NS_IDS_BASE);
	cr_expect_eq(cf->id_count, NS_IDS_COUNT);
	cr_expect_eq(cf->n_namespaces, 6);
	cr_expect_str_eq(cf->namespaces[0], "user");
	cr_expect_str_eq(cf->seccomp, "default");
	cr_expect(cf->no_new_privs);
	/* root inside wrote the file as that host uid */
	cr_assert_eq(stat(owner, &st), 0);
	cr_expect_eq(st.st_uid, cf->uid);
	events_free(&evs);

	cr_assert_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--privileged", "--",
			      "true", NULL),
		     0, "%s", out);
	cr_assert_eq(events_wait(T->sink_path, is_started, "privileged", 5000, &evs), 0);
	cf = events_find(&evs, is_started, "privileged", NULL)->sandbox_lifecycle->confinement;
	cr_expect_not(cf->user_namespace);
	cr_expect_eq(cf->n_namespaces, 0);
	cr_expect_str_eq(cf->seccomp, "none");
	events_free(&evs);
}

Test(sandbox, user_picks_the_host_ids)
{
	char out[4096], owner[PATH_MAX + 16], script[PATH_MAX + 64];
	struct stat st;

	snprintf(owner, sizeof(owner), "%s/picked", shared);
	snprintf(script, sizeof(script), "id -u; touch %s", owner);
	cr_assert_eq(run_sh(out, sizeof(out), script, "--user=40000:40001", NULL, NULL), 0, "%s",
		     out);
	cr_expect(!strncmp(out, "0\n", 2), "not root inside: %s", out);
	cr_assert_eq(stat(owner, &st), 0);
	cr_expect(st.st_uid == 40000 && st.st_gid == 40001, "owner %u:%u", st.st_uid, st.st_gid);
	cr_expect_eq(run_sh(out, sizeof(out), "true", "--user=0", NULL, NULL), 2, "%s", out);
	cr_expect_eq(run_sh(out, sizeof(out), "true", "--user=1000", "--no-userns", NULL), 2, "%s",
		     out);
}

/* egretctl run in the background: its pid. The command, knowing that pid, tries to signal and
 * trace it and a refused call, then after a while the refused call again; results into path.
 */
static pid_t spawn_orphan(const char *path)
{
	pid_t pid = fork();

	if (pid == 0) {
		char script[8192], log[PATH_MAX + 16];
		int fd, me = (int)getpid();

		snprintf(script, sizeof(script),
			 "%s kill %d > %s; %s ptrace %d >> %s; %s kcmp >> %s; "
			 "until [ -e %s.go ]; do sleep 0.05; done; %s kcmp >> %s",
			 EGRET_PROBE_BIN, me, path, EGRET_PROBE_BIN, me, path, EGRET_PROBE_BIN,
			 path, path, EGRET_PROBE_BIN, path);
		snprintf(log, sizeof(log), "%s/run.log", T->tmpdir);
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fd, 1);
		dup2(fd, 2);
		execl(EGRETCTL_BIN, EGRETCTL_BIN, "--cgroup", T->cgroup_root, "--state-dir",
		      T->state_dir, "--control", T->control, "run", "-q", "--sandbox", "orphan",
		      "--", "sh", "-c", script, (char *)NULL);
		_exit(127);
	}
	return pid;
}

static bool wait_lines(const char *path, int lines, int ms, char *buf, size_t size)
{
	for (ms *= (int)harness_timeout_scale(); ms > 0; ms -= 50) {
		int n = read_file(path, buf, size), count = 0;

		for (int i = 0; i < n; i++)
			count += buf[i] == '\n';
		if (count >= lines)
			return true;
		usleep(50000);
	}
	return false;
}

/* The sandbox cannot signal or trace egretctl (outside its pid namespace); with egretctl gone,
 * what the profile refuses stays refused (ENOSYS: the listener has no supervisor).
 */
Test(sandbox, a_dead_egretctl_leaves_refusals_in_place)
{
	char out[4096], path[PATH_MAX + 16], go[PATH_MAX + 32];
	pid_t pid;

	snprintf(path, sizeof(path), "%s/out", shared);
	pid = spawn_orphan(path);
	cr_assert_gt(pid, 0);
	cr_assert(wait_lines(path, 3, 10000, out, sizeof(out)), "the command did not start: %s",
		  out);
	cr_expect(strstr(out, "kill returned -1 (No such process)"), "%s", out);
	cr_expect(strstr(out, "ptrace returned -1 (No such process)"), "%s", out);
	cr_expect(strstr(out, "kcmp returned -1 (Operation not permitted)"), "%s", out);
	cr_assert_eq(kill(pid, SIGKILL), 0);
	cr_assert_eq(waitpid(pid, NULL, 0), pid);
	/* egretctl is gone: the command makes its last call */
	snprintf(go, sizeof(go), "%s.go", path);
	cr_assert_eq(close(open(go, O_WRONLY | O_CREAT | O_CLOEXEC, 0644)), 0);
	cr_assert(wait_lines(path, 4, 10000, out, sizeof(out)), "%s", out);
	cr_expect(strstr(out, "kcmp returned -1 (Function not implemented)"),
		  "a refused call after egretctl died: %s", out);
}

static bool is_sigsys(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_SECCOMP &&
	       ev->tamper->target == (uint32_t)(uintptr_t)arg;
}

/* Module loading and kexec end the caller with SIGSYS, reported by the kernel hook; without
 * the profile the kernel answers them itself (EPERM to root without CAP_SYS_MODULE in the
 * host's user namespace, ENOSYS from a kernel without modules).
 */
Test(sandbox, module_and_kexec_calls_are_a_tamper_event)
{
	char out[4096];
	struct events evs;

	cr_expect_eq(run_sh(out, sizeof(out), EGRET_PROBE_BIN " module", NULL, NULL, NULL),
		     128 + SIGSYS, "%s", out);
	cr_expect_eq(events_wait(T->sink_path, is_sigsys, (void *)(uintptr_t)SYS_finit_module, 5000,
				 &evs),
		     0, "no Tamper event for finit_module");
	events_free(&evs);
	cr_expect_eq(run_sh(out, sizeof(out), EGRET_PROBE_BIN " kexec", NULL, NULL, NULL),
		     128 + SIGSYS, "%s", out);
	cr_expect_eq(
		events_wait(T->sink_path, is_sigsys, (void *)(uintptr_t)SYS_kexec_load, 5000, &evs),
		0, "no Tamper event for kexec_load");
	events_free(&evs);
	/* positive control: --seccomp none lets them reach the kernel, which answers */
	cr_expect_eq(
		run_sh(out, sizeof(out), EGRET_PROBE_BIN " module", "--seccomp=none", NULL, NULL),
		0, "%s", out);
	cr_expect(strstr(out, "module returned -1 ("), "%s", out);
}

/* /proc/self/status and /proc/self/uid_map lines of the command, and its network namespace */
#define SELF_SCRIPT                                                                           \
	"grep -E '^(Seccomp|NoNewPrivs|CapEff):' /proc/self/status; cat /proc/self/uid_map; " \
	"readlink /proc/self/ns/net; ip -o link show | cut -d' ' -f2,3"

static void host_net(char *out, size_t size)
{
	ssize_t n = readlink("/proc/self/ns/net", out, size - 1);

	cr_assert_gt(n, 0);
	out[n] = '\0';
}

/* the line of uid_map that maps root inside: the first host id and how many */
static bool ids_mapped(const char *out, unsigned int *first, unsigned int *count)
{
	unsigned int inside;

	for (const char *l = out; l; l = strchr(l, '\n'), l = l ? l + 1 : NULL)
		if (sscanf(l, " %u %u %u", &inside, first, count) == 3 && inside == 0)
			return true;
	return false;
}

/* the test's own "CapEff:\t..." line */
static void own_caps(char *out, size_t size)
{
	char status[8192], *l;

	cr_assert_gt(read_file("/proc/self/status", status, sizeof(status)), 0);
	l = strstr(status, "CapEff:");
	cr_assert(l);
	snprintf(out, size, "%.*s", (int)strcspn(l, "\n"), l);
}

Test(sandbox, net_new_and_privileged_as_documented)
{
	char out[8192], net[64], caps[64];
	unsigned int first = 0, count = 0;

	host_net(net, sizeof(net));
	/* the default: the test's network namespace, the profile, no_new_privs, mapped ids */
	cr_assert_eq(run_sh(out, sizeof(out), SELF_SCRIPT, NULL, NULL, NULL), 0, "%s", out);
	cr_expect(strstr(out, "Seccomp:\t2") && strstr(out, "NoNewPrivs:\t1"), "%s", out);
	cr_expect(ids_mapped(out, &first, &count) && first >= NS_IDS_BASE && count == NS_IDS_COUNT,
		  "uid_map: %s", out);
	cr_expect(strstr(out, net), "not in the host's network namespace: %s", out);
	/* --net new: a namespace of its own, loopback up and nothing else */
	cr_assert_eq(run_sh(out, sizeof(out), SELF_SCRIPT, "--net", "new", NULL), 0, "%s", out);
	cr_expect_null(strstr(out, net), "--net new shares the host's network namespace: %s", out);
	cr_expect(strstr(out, "lo: <LOOPBACK,UP,LOWER_UP>"), "loopback not up: %s", out);
	cr_expect_null(strstr(out, "veth"), "%s", out);
	cr_expect(strstr(out, "Seccomp:\t2"), "%s", out);
	/* --privileged: host root, the host's namespaces, no profile, no no_new_privs */
	cr_assert_eq(run_sh(out, sizeof(out), SELF_SCRIPT, "--privileged", NULL, NULL), 0, "%s",
		     out);
	cr_expect(strstr(out, "Seccomp:\t0") && strstr(out, "NoNewPrivs:\t0"), "%s", out);
	own_caps(caps, sizeof(caps));
	cr_expect(strstr(out, caps), "not the test's capabilities (%s): %s", caps, out);
	cr_expect(strstr(out, "0 4294967295"), "not the host's user namespace: %s", out);
	cr_expect(strstr(out, net), "%s", out);
}

Test(sandbox, run_help_lists_the_options)
{
	static const char *const opts[] = { "--sandbox",   "--preserve-fds", "--quiet",
					    "--user",	   "--net",	     "--share",
					    "--no-userns", "--seccomp",	     "--privileged" };
	char out[8192];

	cr_assert_eq(egretctl(T, out, sizeof(out), "run", "--help", NULL), 0, "%s", out);
	for (size_t i = 0; i < sizeof(opts) / sizeof(opts[0]); i++)
		cr_expect(strstr(out, opts[i]), "%s missing from run --help:\n%s", opts[i], out);
	/* and nothing was run */
	cr_expect_null(strstr(out, "egretctl: sandbox"), "%s", out);
}
