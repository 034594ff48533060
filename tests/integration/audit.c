/* The audit stream, from real commands in a sandbox: a shell script that execs, forks, writes,
 * renames, chmods, deletes, connects inside the test's network namespace and exits with a code;
 * the exact events per process, in order. Secrets in argv arrive redacted; an OOM kill and a
 * fork refused at pids.max are reported; a paused and resumed sandbox is reported; nothing from
 * outside the sandboxes appears unless the scope is the host.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include <bpf/bpf.h>
#include <sys/socket.h>

#include "cgroup.h"
#include "egret/events.h"
#include "egret/audit.h"
#include "harness.h"
#include "pbjson.h"
#include "util.h"

static int listener = -1;
static pid_t http;

static void start_http(void)
{
	int fd = tcp_listen("0.0.0.0", 8080);

	cr_assert(fd >= 0);
	http = fork();
	if (http == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		for (;;) {
			char buf[2048];
			int c = accept(fd, NULL, NULL);

			if (c < 0)
				continue;
			if (recv(c, buf, sizeof(buf), 0) > 0)
				send(c, "HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok", 40, 0);
			close(c);
		}
	}
	close(fd);
}

static void setup(void)
{
	harness_setup(true);
	harness_kill_at_teardown(&http);
	harness_close_at_teardown(&listener);
	cr_assert_eq(netns_addr("lo", "192.0.2.10/32"), 0);
	start_http();
	listener = udp_bind("192.0.2.10", 5000);
	cr_assert(listener >= 0);
	harness_setup_start("allow 192.0.2.10\n", NULL);
}

TestSuite(audit, .init = setup, .fini = harness_teardown, .timeout = 120);

/* egretd stopped and started again with extra, asserted with its log */
static void restart(const char *const extra[])
{
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start:\n%s", harness_log(T));
}

/* path made empty, with mode; asserted */
static void create_file(const char *path, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);

	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	close(fd);
}

/* The events of one process, in stream order. */
static size_t of_pid(const struct events *evs, uint32_t pid, const Egret__V1__Event **out,
		     size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < evs->n && n < max; i++) {
		if (evs->ev[i]->process && evs->ev[i]->process->pid == pid)
			out[n++] = evs->ev[i];
	}
	return n;
}

static const Egret__V1__Event *exec_of(const struct events *evs, const char *exe_suffix,
				       const char *sandbox)
{
	for (size_t i = 0; i < evs->n; i++) {
		const Egret__V1__Event *ev = evs->ev[i];
		size_t l, sl = strlen(exe_suffix);

		if (ev->payload_case != EGRET__V1__EVENT__PAYLOAD_EXEC || !ev->process->exe)
			continue;
		l = strlen(ev->process->exe);
		if (l >= sl && !strcmp(ev->process->exe + l - sl, exe_suffix) &&
		    (!sandbox || !strcmp(ev->sandbox->name, sandbox)))
			return ev;
	}
	return NULL;
}

static bool is_flow_to(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_FLOW &&
	       ev->flow->dst_port == (uint32_t)(long)arg;
}

static bool is_exit_code(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_EXIT &&
	       ev->exit->exit_code == (int32_t)(long)arg;
}

/* an exec whose executable's path ends in arg */
static bool is_exec_of(const Egret__V1__Event *ev, const void *arg)
{
	struct events one = { .ev = (Egret__V1__Event **)&ev, .n = 1 };

	return exec_of(&one, arg, NULL) != NULL;
}

Test(audit, a_shell_script_in_a_sandbox)
{
	char script[PATH_MAX], dir[PATH_MAX], out[8192], want[PATH_MAX * 2];
	const Egret__V1__Event *sh, *mine[256], *mv, *curl;
	struct events evs;
	size_t n, k = 0;
	FILE *f;
	int rc;

	snprintf(dir, sizeof(dir), "%s/work", T->tmpdir);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(script, sizeof(script), "%s/job.sh", T->tmpdir);
	f = fopen(script, "w");
	fprintf(f,
		"cd %s\n"
		"echo hello > created.txt\n"
		"mv created.txt renamed.txt\n"
		"chmod 600 renamed.txt\n"
		"rm renamed.txt\n"
		"curl -s --max-time 3 -o /dev/null http://192.0.2.10:8080/\n"
		"exit 3\n",
		dir);
	fclose(f);
	rc = sandbox_cmd(T, "box", out, sizeof(out), "/bin/sh", script, NULL);
	cr_assert_eq(rc, 3, "%s", out);
	/* curl's flow record is made when the connection's last end closes (the server's may
	 * close after the shell has exited), the shell's exit when it ends: both in
	 */
	cr_assert_eq(events_wait(T->sink_path, is_flow_to, (void *)8080L, 5000, &evs), 0,
		     "no flow record of curl's connection");
	events_free(&evs);
	cr_assert_eq(events_wait(T->sink_path, is_exit_code, (void *)3L, 5000, &evs), 0,
		     "no exit of the script's shell");
	events_free(&evs);
	cr_assert_eq(events_read(T->sink_path, &evs), 0);

	sh = exec_of(&evs, "/sh", "box");
	if (!sh)
		sh = exec_of(&evs, "/dash", "box");
	cr_assert(sh, "no exec event for the script's shell");
	cr_expect_eq(sh->class_uid, 1007);
	cr_expect_eq(sh->activity_id, 1);
	cr_assert_geq(sh->exec->n_args, 2);
	cr_expect_str_eq(sh->exec->args[1], script);
	cr_expect_neq(sh->process->exec_id, 0);
	cr_expect_neq(sh->process->ppid, 0);
	n = of_pid(&evs, sh->process->pid, mine, 256);
	/* the shell: exec, create, fork x4 (mv, chmod, rm, curl), exit 3, in this order */
	cr_assert_gt(n, 0);
	while (k < n && mine[k] != sh)
		k++;
	cr_assert_lt(k, n);
	k++;
	cr_assert_lt(k, n, "nothing after the exec");
	cr_expect_eq(mine[k]->payload_case, EGRET__V1__EVENT__PAYLOAD_FILE);
	if (mine[k]->payload_case == EGRET__V1__EVENT__PAYLOAD_FILE) {
		snprintf(want, sizeof(want), "%s/created.txt", dir);
		cr_expect_eq(mine[k]->file->op, EGRET__V1__FILE_ACTIVITY__OP__OP_CREATE);
		cr_expect_str_eq(mine[k]->file->path, want);
		cr_expect_geq(mine[k]->file->result, 0);
		cr_expect_eq(mine[k]->class_uid, 1001);
		cr_expect_eq(mine[k]->process->exec_id, sh->process->exec_id,
			     "a file event not linked to its image");
	}
	for (int forks = 0; forks < 4; forks++) {
		k++;
		cr_assert_lt(k, n);
		cr_expect_eq(mine[k]->payload_case, EGRET__V1__EVENT__PAYLOAD_FORK, "event %zu", k);
	}
	k++;
	cr_assert_lt(k, n);
	cr_expect_eq(mine[k]->payload_case, EGRET__V1__EVENT__PAYLOAD_EXIT);
	if (mine[k]->payload_case == EGRET__V1__EVENT__PAYLOAD_EXIT) {
		cr_expect_eq(mine[k]->exit->exit_code, 3);
		cr_expect_gt(mine[k]->exit->duration_ns, 0);
		cr_expect_eq(mine[k]->activity_id, 2);
	}

	/* mv: its own exec (child of the shell's image), the rename, its exit */
	mv = exec_of(&evs, "/mv", "box");
	cr_assert(mv);
	cr_expect_eq(mv->process->parent_exec_id, sh->process->exec_id);
	n = of_pid(&evs, mv->process->pid, mine, 256);
	k = 0;
	while (k < n && mine[k] != mv)
		k++;
	cr_assert_lt(k + 2, n);
	cr_expect_eq(mine[k + 1]->payload_case, EGRET__V1__EVENT__PAYLOAD_FILE);
	if (mine[k + 1]->payload_case == EGRET__V1__EVENT__PAYLOAD_FILE) {
		cr_expect_eq(mine[k + 1]->file->op, EGRET__V1__FILE_ACTIVITY__OP__OP_RENAME);
		snprintf(want, sizeof(want), "%s/created.txt", dir);
		cr_expect_str_eq(mine[k + 1]->file->path, want);
		snprintf(want, sizeof(want), "%s/renamed.txt", dir);
		cr_expect_str_eq(mine[k + 1]->file->new_path, want);
		cr_expect_eq(mine[k + 1]->file->result, 0);
	}
	cr_expect_eq(mine[n - 1]->payload_case, EGRET__V1__EVENT__PAYLOAD_EXIT);

	/* chmod and rm each leave their file event */
	for (size_t i = 0, chmods = 0, unlinks = 0; i <= evs.n; i++) {
		if (i == evs.n) {
			cr_expect_eq(chmods, 1);
			cr_expect_eq(unlinks, 1);
			break;
		}
		if (evs.ev[i]->payload_case != EGRET__V1__EVENT__PAYLOAD_FILE ||
		    !strstr(evs.ev[i]->file->path, "/work/renamed.txt"))
			continue;
		if (evs.ev[i]->file->op == EGRET__V1__FILE_ACTIVITY__OP__OP_CHMOD) {
			chmods++;
			cr_expect_eq(evs.ev[i]->file->flags & 0777, 0600);
		}
		unlinks += evs.ev[i]->file->op == EGRET__V1__FILE_ACTIVITY__OP__OP_UNLINK;
	}

	/* curl: the connect, then a flow record with what it carried */
	curl = exec_of(&evs, "/curl", "box");
	cr_assert(curl);
	n = of_pid(&evs, curl->process->pid, mine, 256);
	for (size_t i = 0, connects = 0, flows = 0; i <= n; i++) {
		if (i == n) {
			cr_expect_geq(connects, 1);
			cr_expect_eq(flows, 1);
			break;
		}
		if (mine[i]->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
		    !strcmp(mine[i]->net_connect->dst_addr, "192.0.2.10"))
			connects++;
		if (mine[i]->payload_case == EGRET__V1__EVENT__PAYLOAD_FLOW) {
			flows++;
			cr_expect_str_eq(mine[i]->flow->dst_addr, "192.0.2.10");
			cr_expect_eq(mine[i]->flow->dst_port, 8080);
			cr_expect_str_eq(mine[i]->flow->protocol, "tcp");
			cr_expect_gt(mine[i]->flow->bytes_out, 0);
			cr_expect_gt(mine[i]->flow->bytes_in, 0);
			cr_expect_gt(mine[i]->flow->packets_out, 0);
			cr_expect_gt(mine[i]->flow->duration_ns, 0);
			cr_expect_eq(mine[i]->class_uid, 4001);
		}
	}
	events_free(&evs);
}

Test(audit, secrets_in_argv_arrive_redacted)
{
	char out[4096];
	const Egret__V1__Event *ev;
	struct events evs;

	cr_assert_eq(sandbox_cmd(T, "box", out, sizeof(out), "/bin/true", "--password", "hunter2",
				 "--token=abc123", "AKIAIOSFODNN7EXAMPLE", "API_KEY=s3cr3t",
				 "https://u:pw@example.test/", "plain", NULL),
		     0, "%s", out);
	cr_assert_eq(events_wait(T->sink_path, is_exec_of, "/true", 5000, &evs), 0,
		     "no exec of /true");
	events_free(&evs);
	cr_assert_eq(events_read(T->sink_path, &evs), 0);
	ev = exec_of(&evs, "/true", "box");
	cr_assert(ev);
	cr_assert_eq(ev->exec->n_args, 8);
	cr_expect_str_eq(ev->exec->args[1], "--password");
	cr_expect_str_eq(ev->exec->args[2], "[REDACTED]");
	cr_expect_str_eq(ev->exec->args[3], "--token=[REDACTED]");
	cr_expect_str_eq(ev->exec->args[4], "[REDACTED]");
	cr_expect_str_eq(ev->exec->args[5], "API_KEY=[REDACTED]");
	cr_expect_str_eq(ev->exec->args[6], "https://u:[REDACTED]@example.test/");
	cr_expect_str_eq(ev->exec->args[7], "plain");
	for (size_t i = 0; i < evs.n; i++) {
		char *buf = NULL;
		size_t len = 0;
		FILE *m = open_memstream(&buf, &len);

		pbjson__print(m, &evs.ev[i]->base);
		fclose(m);
		cr_expect_null(strstr(buf, "hunter2"), "a secret left the host: %s", buf);
		cr_expect_null(strstr(buf, "AKIAIOSFODNN7EXAMPLE"), "%s", buf);
		free(buf);
	}
	events_free(&evs);
}

static int hog(void *arg)
{
	size_t size = 256u << 20;
	char *p;

	p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return 91;
	for (size_t i = 0; i < size; i += 4096)
		p[i] = 1;
	return 0; /* not killed: no OOM */
}

static bool is_oom(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_LIMIT &&
	       ev->limit->kind == EGRET__V1__RESOURCE_LIMIT__KIND__KIND_OOM_KILL &&
	       ev->process->pid == *(const uint32_t *)arg;
}

static int hog_reporting_pid(void *arg)
{
	*(volatile pid_t *)arg = getpid();
	return hog(NULL);
}

/* The limit is the sandbox's own (memory.max in it on pure v2, a v1 memory cgroup it is in
 * on a hybrid host); the hog starts inside, as egretctl run would start it.
 */
Test(audit, an_oom_kill_is_reported)
{
	char memcg[PATH_MAX];
	struct events evs;
	const Egret__V1__Event *ev;
	volatile pid_t *shared;
	uint32_t pid;
	int status;

	cr_assert_eq(
		harness_sandbox_limit(T, "hungry", "memory.max", "33554432", memcg, sizeof(memcg)),
		0, "no memory controller to limit the sandbox with");
	shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1,
		      0);
	cr_assert_neq(shared, MAP_FAILED);
	status = in_sandbox_status(T, "hungry", hog_reporting_pid, (void *)shared);
	pid = (uint32_t)*shared;
	munmap((void *)shared, sizeof(*shared));
	cr_assert(status != -1 && WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "the hog was not OOM-killed (status %#x)", status);
	cr_assert_eq(events_wait(T->sink_path, is_oom, &pid, 5000, &evs), 0, "no OOM event");
	ev = events_find(&evs, is_oom, &pid, NULL);
	cr_expect_str_eq(ev->sandbox->name, "hungry");
	cr_expect_eq(ev->limit->limit, 32u << 20);
	cr_expect_gt(ev->limit->usage, 16u << 20);
	cr_expect_str_eq(ev->limit->cgroup, strrchr(memcg, '/') + 1);
	events_free(&evs);
}

static int fork_bomb(void *arg)
{
	pid_t kids[16];
	int n = 0, failed = 0;

	for (int i = 0; i < 16; i++) {
		pid_t p = fork();

		if (p == 0) {
			pause();
			_exit(0);
		}
		if (p < 0)
			failed++;
		else
			kids[n++] = p;
	}
	for (int i = 0; i < n; i++)
		kill(kids[i], SIGKILL);
	while (wait(NULL) > 0)
		;
	return failed ? 0 : 1;
}

static bool is_pids(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_LIMIT &&
	       ev->limit->kind == EGRET__V1__RESOURCE_LIMIT__KIND__KIND_PIDS;
}

/* pids.max on the sandbox (in it on pure v2, a v1 pids cgroup beside it on a hybrid host) */
Test(audit, a_fork_refused_at_pids_max_is_reported)
{
	char pidcg[PATH_MAX];
	const Egret__V1__Event *ev;
	struct events evs;

	cr_assert_eq(harness_sandbox_limit(T, "forky", "pids.max", "5", pidcg, sizeof(pidcg)), 0,
		     "no pids controller to limit the sandbox with");
	cr_assert_eq(in_sandbox(T, "forky", fork_bomb, NULL), 0, "no fork failed");
	cr_assert_eq(events_wait(T->sink_path, is_pids, NULL, 5000, &evs), 0, "no pids event");
	ev = events_find(&evs, is_pids, NULL, NULL);
	cr_expect_eq(ev->limit->limit, 5);
	cr_expect_eq(ev->limit->usage, 5);
	cr_expect_str_eq(ev->limit->cgroup, strrchr(pidcg, '/') + 1);
	cr_expect_str_eq(ev->sandbox->name, "forky");
	events_free(&evs);
}

static bool is_life(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE &&
	       ev->sandbox_lifecycle->kind == (Egret__V1__SandboxLifecycle__Kind)(long)arg;
}

Test(audit, a_paused_and_resumed_sandbox_is_reported)
{
	char dir[PATH_MAX], file[PATH_MAX + 16];
	struct events evs;
	const Egret__V1__Event *ev;

	cr_assert_eq(sandbox_path(T, "pausable", dir, sizeof(dir)), 0);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(file, sizeof(file), "%s/cgroup.freeze", dir);
	cr_assert_eq(write_file(file, "1"), 0);
	cr_assert_eq(write_file(file, "0"), 0);
	cr_assert_eq(events_wait(T->sink_path, is_life,
				 (void *)(long)EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_THAWED,
				 5000, &evs),
		     0);
	ev = events_find(&evs, is_life,
			 (void *)(long)EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_FROZEN, NULL);
	cr_assert(ev, "no frozen event");
	cr_expect_str_eq(ev->sandbox->name, "pausable");
	cr_expect(strstr(ev->sandbox_lifecycle->reason, "cgroup.freeze written by egret_integrati"),
		  "%s", ev->sandbox_lifecycle->reason);
	cr_expect(events_find(&evs, is_life,
			      (void *)(long)EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_CREATED,
			      NULL));
	events_free(&evs);
}

static int read_secret_and_not(void *arg)
{
	char buf[256];
	int fd = open("/proc/self/environ", O_RDONLY);

	if (fd >= 0) {
		if (read(fd, buf, sizeof(buf)) < 0)
			buf[0] = 0;
		close(fd);
	}
	fd = open("/etc/hostname", O_RDONLY);
	if (fd >= 0)
		close(fd);
	return 0;
}

static bool is_read(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_FILE &&
	       ev->file->op == EGRET__V1__FILE_ACTIVITY__OP__OP_READ && strstr(ev->file->path, arg);
}

Test(audit, reads_of_secrets_only)
{
	struct events evs;

	cr_assert_eq(in_sandbox(T, "box", read_secret_and_not, NULL), 0);
	cr_assert_eq(events_wait(T->sink_path, is_read, "/environ", 5000, &evs), 0,
		     "no event for reading /proc/self/environ");
	cr_expect_null(events_find(&evs, is_read, "/etc/hostname", NULL),
		       "an ordinary read was reported");
	events_free(&evs);
}

struct secret_paths {
	char dir[PATH_MAX], file[PATH_MAX + 16], missing[PATH_MAX + 16];
};

/* as nobody: the root-only file (EACCES), a file that is not there (ENOENT) */
static int read_secrets_denied(void *arg)
{
	const struct secret_paths *sp = arg;
	if (setgid(65534) || setuid(65534))
		return 100;
	if (open(sp->file, O_RDONLY) >= 0 || errno != EACCES)
		return 101;
	if (open(sp->missing, O_RDONLY) >= 0 || errno != ENOENT)
		return 102;
	return 0;
}

static bool is_read_result(const Egret__V1__Event *ev, const void *arg)
{
	const char *path = arg;

	return is_read(ev, path) && !strcmp(ev->file->path, path);
}

/* A failed read of a secret path is reported like a successful one, its result the error. */
Test(audit, failed_reads_of_secrets_are_reported)
{
	const char *extra[] = { "--audit-read", NULL, NULL };
	static struct secret_paths sp;
	const Egret__V1__Event *ev;
	struct events evs;
	int fd;

	snprintf(sp.dir, sizeof(sp.dir), "%s/secrets", T->tmpdir);
	snprintf(sp.file, sizeof(sp.file), "%s/key", sp.dir);
	snprintf(sp.missing, sizeof(sp.missing), "%s/missing", sp.dir);
	cr_assert_eq(chmod(T->tmpdir, 0755), 0);
	cr_assert_eq(mkdir(sp.dir, 0755), 0);
	create_file(sp.file, 0600);
	extra[1] = sp.dir;
	restart(extra);
	fd = in_sandbox(T, "box", read_secrets_denied, &sp);
	cr_assert_eq(fd, 0, "the reads as nobody: %d", fd);
	cr_assert_eq(events_wait(T->sink_path, is_read_result, sp.missing, 5000, &evs), 0,
		     "no event for the failed read of %s", sp.missing);
	ev = events_find(&evs, is_read_result, sp.missing, NULL);
	cr_expect_eq(ev->file->result, -ENOENT);
	ev = events_find(&evs, is_read_result, sp.file, NULL);
	cr_assert(ev, "no event for the refused read of %s", sp.file);
	cr_expect_eq(ev->file->result, -EACCES);
	cr_expect_eq(ev->process->uid, 65534);
	events_free(&evs);
}

/* Secret files reached by other names: a symlink from another top directory (and mount), `..`
 * absolute and relative, a symlink into another mount; reported by the path the kernel opened.
 */
struct secret_names {
	char dir[PATH_MAX], key[PATH_MAX + 16], other[PATH_MAX + 16];
	char shm[PATH_MAX], key2[PATH_MAX + 16], shm_link[PATH_MAX + 16];
	char link[PATH_MAX + 16], link2[PATH_MAX + 16], dotdot[PATH_MAX * 2], plain[PATH_MAX + 16];
};

static int open_close(const char *path)
{
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return -1;
	close(fd);
	return 0;
}

static int read_secrets_by_other_names(void *arg)
{
	const struct secret_names *sn = arg;

	if (open_close(sn->key) || open_close(sn->shm_link) || open_close(sn->link) ||
	    open_close(sn->dotdot))
		return 101;
	if (chdir(sn->other) || open_close("../secrets/key"))
		return 102;
	if (open_close(sn->key2) || open_close(sn->link2))
		return 103;
	/* not secrets: one under the same top directory, one under another */
	if (open_close(sn->plain) || open_close("/etc/hostname"))
		return 104;
	return 0;
}

static void remove_shm(void *arg)
{
	const struct secret_names *sn = arg;

	unlink(sn->shm_link);
	unlink(sn->key2);
	rmdir(sn->shm);
}

static bool is_read_of(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_FILE &&
	       ev->file->op == EGRET__V1__FILE_ACTIVITY__OP__OP_READ &&
	       !strcmp(ev->file->path, arg);
}

/* The reads of secret_reads_are_reported_by_any_name; without: a kernel feature egretd is to do
 * without (--without-kernel-feature), or NULL
 */
static void secret_reads(const char *without)
{
	const char *extra[] = {
		"--audit-read", NULL, "--audit-read", NULL, "--without-kernel-feature",
		without,	NULL
	};
	static struct secret_names sn;
	char out[8192], want[64];
	struct events evs;
	size_t n = 0;
	int rc;

	snprintf(sn.dir, sizeof(sn.dir), "%s/secrets", T->tmpdir);
	snprintf(sn.key, sizeof(sn.key), "%s/key", sn.dir);
	snprintf(sn.other, sizeof(sn.other), "%s/other", T->tmpdir);
	snprintf(sn.plain, sizeof(sn.plain), "%s/plain", T->tmpdir);
	snprintf(sn.link, sizeof(sn.link), "%s/link-key", T->tmpdir);
	snprintf(sn.dotdot, sizeof(sn.dotdot), "%s/../secrets/key", sn.other);
	snprintf(sn.shm, sizeof(sn.shm), "/dev/shm/%s", strrchr(T->tmpdir, '/') + 1);
	snprintf(sn.key2, sizeof(sn.key2), "%s/key2", sn.shm);
	snprintf(sn.shm_link, sizeof(sn.shm_link), "%s-link", sn.shm);
	snprintf(sn.link2, sizeof(sn.link2), "%s/link-key2", T->tmpdir);
	harness_at_teardown(remove_shm, &sn);
	cr_assert_eq(mkdir(sn.dir, 0755), 0);
	cr_assert_eq(mkdir(sn.other, 0755), 0);
	cr_assert_eq(mkdir(sn.shm, 0755), 0, "%s: %s", sn.shm, strerror(errno));
	create_file(sn.key, 0644);
	create_file(sn.key2, 0644);
	create_file(sn.plain, 0644);
	/* named from /dev (another top directory, another mount), from the same directory, and
	 * a name in /run for a file on /dev/shm
	 */
	cr_assert_eq(symlink(sn.key, sn.shm_link), 0);
	cr_assert_eq(symlink(sn.key, sn.link), 0);
	cr_assert_eq(symlink(sn.key2, sn.link2), 0);
	extra[1] = sn.dir;
	extra[3] = sn.shm;
	if (!without)
		extra[4] = NULL;
	restart(extra);
	if (without) {
		snprintf(want, sizeof(want), "{\"name\":\"%s\",\"state\":\"fallback\"", without);
		cr_assert_eq(egretctl(T, out, sizeof(out), "status", "--json", NULL), 0, "%s", out);
		cr_assert(strstr(out, want), "%s is not in its fallback: %s", without, out);
	}
	rc = in_sandbox(T, "box", read_secrets_by_other_names, &sn);
	cr_assert_eq(rc, 0, "the reads: %d", rc);
	/* both reads of key2, the sandbox's last secret reads: waiting for the first alone raced
	 * the second to the sink (CI, 6.1 in an emulated guest)
	 */
	events_wait_count(T->sink_path, is_read_of, sn.key2, 2, 5000, &evs);
	events_free(&evs);
	/* the stream is in order: the reads of key came first */
	cr_assert_eq(events_read(T->sink_path, &evs), 0);
	events_find(&evs, is_read_of, sn.key, &n);
	cr_expect_eq(n, 5, "%zu reads of %s reported, of 5 (direct, two symlinks, .. twice)", n,
		     sn.key);
	events_find(&evs, is_read_of, sn.key2, &n);
	cr_expect_eq(n, 2, "%zu reads of %s reported, of 2 (direct, a symlink)", n, sn.key2);
	cr_expect_null(events_find(&evs, is_read_of, sn.plain, NULL), "an ordinary read reported");
	cr_expect_null(events_find(&evs, is_read_of, "/etc/hostname", NULL),
		       "an ordinary read reported");
	events_free(&evs);
}

Test(audit, secret_reads_are_reported_by_any_name)
{
	secret_reads(NULL);
}

/* the same where paths are walked with bpf_probe_read_kernel (6.1, no bpf_rdonly_cast) */
Test(audit, secret_reads_are_reported_by_any_name_with_probe_reads)
{
	secret_reads("rdonly_cast");
}

static int tamper(void *arg)
{
	pid_t outside = *(pid_t *)arg;
	int fd;

	/* a mount namespace of its own, so the host's /mnt is left alone (the tracepoint sees the
	 * mount wherever it lands)
	 */
	if (unshare(CLONE_NEWNS) == 0)
		mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL);
	mount("none", "/mnt", "tmpfs", 0, NULL);
	fd = open("/sys/fs/bpf/egret-tamper-probe", O_WRONLY | O_CREAT, 0600);
	if (fd >= 0) {
		close(fd);
		unlink("/sys/fs/bpf/egret-tamper-probe");
	}
	ptrace(PTRACE_ATTACH, outside, NULL, NULL); /* last: egret kills the tracer */
	return 0;
}

static bool is_tamper(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	       ev->tamper->kind == (Egret__V1__Tamper__Kind)(long)arg;
}

Test(audit, tamper_attempts_are_reported)
{
	char out[256];
	struct events evs;
	int status;
	pid_t outside;

	/* the sandbox's code has started: its first exec (mounts before it are its runtime's) */
	cr_assert_eq(sandbox_cmd(T, "box", out, sizeof(out), "/bin/true", NULL), 0, "%s", out);
	outside = fork();

	if (outside == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		pause();
		_exit(0);
	}
	status = in_sandbox_status(T, "box", tamper, &outside);
	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "the tracer of a host process was not killed: %d", status);
	kill(outside, SIGKILL);
	waitpid(outside, NULL, 0);
	/* the ptrace is the last of the three: the others are in the stream before it */
	cr_assert_eq(events_wait(T->sink_path, is_tamper,
				 (void *)(long)EGRET__V1__TAMPER__KIND__KIND_PTRACE, 5000, &evs),
		     0, "ptrace not reported");
	cr_expect(events_find(&evs, is_tamper, (void *)(long)EGRET__V1__TAMPER__KIND__KIND_BPFFS,
			      NULL),
		  "the bpffs write not reported");
	cr_expect(events_find(&evs, is_tamper, (void *)(long)EGRET__V1__TAMPER__KIND__KIND_MOUNT,
			      NULL),
		  "mount not reported");
	events_free(&evs);
}

static int private_mount(void *arg)
{
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return 1;
	return mount("none", "/mnt", "tmpfs", 0, NULL) ? 2 : 0;
}

/* A runtime prepares a container's file system (runc's init mounts its rootfs, /proc, /dev...)
 * in the container's cgroup before the container's first exec: that is not the sandbox's code.
 * After the first exec, a mount is the sandbox's and is reported.
 */
Test(audit, mounts_before_the_first_exec_are_the_runtimes)
{
	char out[256];
	struct events evs;

	cr_assert_eq(in_sandbox(T, "setup", private_mount, NULL), 0);
	cr_assert_eq(sandbox_cmd(T, "setup", out, sizeof(out), "/bin/true", NULL), 0, "%s", out);
	cr_assert_eq(in_sandbox(T, "setup", private_mount, NULL), 0);
	/* the two calls after it (making / private, then the tmpfs) */
	cr_assert_eq(events_wait_count(T->sink_path, is_tamper,
				       (void *)(long)EGRET__V1__TAMPER__KIND__KIND_MOUNT, 2,
				       5000 * harness_timeout_scale(), &evs),
		     0, "the mounts after the first exec were not reported");
	events_free(&evs);
	/* and none of the two before: nothing more comes */
	usleep(500000);
	size_t n = 0;

	cr_assert_eq(events_read(T->sink_path, &evs), 0);
	events_find(&evs, is_tamper, (void *)(long)EGRET__V1__TAMPER__KIND__KIND_MOUNT, &n);
	cr_expect_eq(n, 2, "only the mounts after the first exec are the sandbox's, got %zu", n);
	events_free(&evs);
}

static int udp_flow(void *arg)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(5000) };

	inet_pton(AF_INET, "192.0.2.10", &sa.sin_addr);
	for (int i = 0; i < 3; i++)
		sendto(fd, "12345678", 8, 0, (struct sockaddr *)&sa, sizeof(sa));
	close(fd);
	return 0;
}

static bool is_udp_flow(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_FLOW &&
	       !strcmp(ev->flow->protocol, "udp") && ev->flow->dst_port == 5000;
}

Test(audit, udp_flows_are_measured)
{
	struct events evs;
	const Egret__V1__Event *ev;

	cr_assert_eq(in_sandbox(T, "box", udp_flow, NULL), 0);
	cr_assert_eq(events_wait(T->sink_path, is_udp_flow, NULL, 5000, &evs), 0);
	ev = events_find(&evs, is_udp_flow, NULL, NULL);
	cr_expect_eq(ev->flow->packets_out, 3);
	cr_expect_eq(ev->flow->bytes_out, 3 * (20 + 8 + 8));
	cr_expect_str_eq(ev->flow->dst_addr, "192.0.2.10");
	cr_expect_neq(ev->flow->src_port, 0);
	events_free(&evs);
}

/* A TCP connection and a UDP socket started by a process named "flowstart", handed to a child
 * that takes another name and uid and closes them last: the flow records must name the starter.
 */
static int flows_handed_over(void *arg)
{
	struct sockaddr_in web = { .sin_family = AF_INET, .sin_port = htons(8080) },
			   dgram = { .sin_family = AF_INET, .sin_port = htons(5000) };
	int tcp = socket(AF_INET, SOCK_STREAM, 0), udp = socket(AF_INET, SOCK_DGRAM, 0), status;
	char buf[64];
	pid_t kid;

	(void)arg;
	inet_pton(AF_INET, "192.0.2.10", &web.sin_addr);
	inet_pton(AF_INET, "192.0.2.10", &dgram.sin_addr);
	prctl(PR_SET_NAME, "flowstart");
	if (tcp < 0 || udp < 0 || connect(tcp, (struct sockaddr *)&web, sizeof(web)) ||
	    send(tcp, "GET / HTTP/1.0\r\n\r\n", 18, 0) != 18 ||
	    recv(tcp, buf, sizeof(buf), 0) <= 0 ||
	    sendto(udp, "12345678", 8, 0, (struct sockaddr *)&dgram, sizeof(dgram)) != 8)
		return 1;
	kid = fork();
	if (kid == 0) {
		prctl(PR_SET_NAME, "flowend");
		if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
			_exit(2);
		usleep(100 * 1000); /* the parent's copies are closed: these are the last */
		close(tcp);
		close(udp);
		_exit(0);
	}
	close(tcp);
	close(udp);
	if (kid < 0 || waitpid(kid, &status, 0) != kid || !WIFEXITED(status))
		return 3;
	return WEXITSTATUS(status);
}

Test(audit, a_flow_record_names_who_started_it_not_who_closed_it)
{
	const Egret__V1__Event *conn = NULL, *ev;
	struct events evs;

	cr_assert_eq(in_sandbox(T, "box", flows_handed_over, NULL), 0);
	cr_assert_eq(events_wait(T->sink_path, is_flow_to, (void *)5000L, 5000, &evs), 0);
	events_free(&evs);
	cr_assert_eq(events_wait(T->sink_path, is_flow_to, (void *)8080L, 5000, &evs), 0);
	for (size_t i = 0; i < evs.n && !conn; i++) {
		ev = evs.ev[i];
		if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
		    ev->net_connect->dst_port == 8080 && !strcmp(ev->process->comm, "flowstart"))
			conn = ev;
	}
	cr_assert(conn, "no connect record of flowstart's connection");
	for (long port = 8080; port >= 5000; port -= 3080) {
		ev = events_find(&evs, is_flow_to, (void *)port, NULL);
		cr_assert(ev);
		cr_expect_str_eq(ev->process->comm, "flowstart", "port %ld", port);
		cr_expect_eq(ev->process->pid, conn->process->pid, "port %ld", port);
		cr_expect_eq(ev->process->uid, conn->process->uid, "port %ld", port);
		cr_expect_eq(ev->process->gid, conn->process->gid, "port %ld", port);
		cr_expect_neq(ev->process->uid, 65534, "port %ld: the closer's uid", port);
		cr_expect_gt(ev->flow->duration_ns, 0);
		cr_expect_gt(ev->flow->bytes_out, 0);
		cr_assert(ev->sandbox && conn->sandbox);
		cr_expect_eq(ev->sandbox->cgroup_id, conn->sandbox->cgroup_id);
	}
	events_free(&evs);
}

/* A blocking TCP connection to the test's web server, or -1 */
static int web_connection(void)
{
	struct sockaddr_in web = { .sin_family = AF_INET, .sin_port = htons(8080) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	inet_pton(AF_INET, "192.0.2.10", &web.sin_addr);
	if (fd >= 0 && connect(fd, (struct sockaddr *)&web, sizeof(web))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* A TCP connection and a UDP socket made in the sandbox, each after some traffic, handed to the
 * test over the socketpair arg points at (SCM_RIGHTS): the test closes them when it chooses.
 */
static int sockets_handed_out(void *arg)
{
	struct sockaddr_in dgram = { .sin_family = AF_INET, .sin_port = htons(5000) };
	int fds[2], udp = socket(AF_INET, SOCK_DGRAM, 0);
	char buf[64];

	inet_pton(AF_INET, "192.0.2.10", &dgram.sin_addr);
	prctl(PR_SET_NAME, "flowstart");
	fds[0] = web_connection();
	fds[1] = udp;
	if (fds[0] < 0 || udp < 0 || send(fds[0], "GET / HTTP/1.0\r\n\r\n", 18, 0) != 18 ||
	    recv(fds[0], buf, sizeof(buf), 0) <= 0 ||
	    sendto(udp, "12345678", 8, 0, (struct sockaddr *)&dgram, sizeof(dgram)) != 8)
		return 1;
	return fds_send(*(int *)arg, fds, 2) ? 2 : 0;
}

/* The two sockets sockets_handed_out made, into fds[0] (TCP) and fds[1] (UDP). */
static void take_sandbox_sockets(int fds[2])
{
	int sp[2];

	cr_assert_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, sp), 0);
	cr_assert_eq(in_sandbox(T, "box", sockets_handed_out, &sp[1]), 0);
	cr_assert_eq(fds_recv(sp[0], fds, 2), 0);
	close(sp[0]);
	close(sp[1]);
}

static bool is_flowstart_connect(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->dst_port == 8080 && !strcmp(ev->process->comm, "flowstart");
}

/* Close the sockets take_sandbox_sockets gave; the TCP connection's flow event and its connect
 * event, in evs.
 */
static void close_sandbox_sockets(int fds[2], struct events *evs, const Egret__V1__Event **conn,
				  const Egret__V1__Event **ev)
{
	close(fds[0]);
	close(fds[1]);
	cr_assert_eq(events_wait(T->sink_path, is_flow_to, (void *)8080L, 5000, evs), 0);
	*conn = events_find(evs, is_flowstart_connect, NULL, NULL);
	*ev = events_find(evs, is_flow_to, (void *)8080L, NULL);
	cr_assert(*conn && *ev);
}

/* The kernel keeps nothing on a sandbox's TCP socket for its flow (the connect record names who
 * started it, egretd joins the two by the socket's cookie), and the flow record still names the
 * starter; a UDP socket keeps its storage (the lookup finds it: the test can see storage).
 */
Test(audit, a_tcp_flow_keeps_nothing_on_its_socket)
{
	const Egret__V1__Event *conn, *ev;
	struct egret_flow fl;
	char pin[PATH_MAX];
	struct events evs;
	int fds[2], map;

	snprintf(pin, sizeof(pin), "%s/maps/sock_flows", T->state_dir);
	map = bpf_obj_get(pin);
	cr_assert(map >= 0, "%s: %s", pin, strerror(errno));
	take_sandbox_sockets(fds);
	cr_expect_eq(bpf_map_lookup_elem(map, &fds[1], &fl), 0, "the UDP socket has no storage");
	cr_expect_neq(bpf_map_lookup_elem(map, &fds[0], &fl), 0, "the TCP socket has storage");
	cr_expect_eq(errno, ENOENT);
	close(map);
	close_sandbox_sockets(fds, &evs, &conn, &ev);
	cr_expect_str_eq(ev->process->comm, "flowstart");
	cr_expect_eq(ev->process->pid, conn->process->pid);
	cr_expect_not(ev->flow->start_unknown);
	cr_expect_gt(ev->flow->duration_ns, 0);
	cr_expect_gt(ev->flow->bytes_out, 0);
	cr_assert(ev->sandbox && conn->sandbox);
	cr_expect_eq(ev->sandbox->cgroup_id, conn->sandbox->cgroup_id);
	events_free(&evs);
}

/* the id of the link pinned at the instance's links/name (ids grow in the order made) */
static __u32 link_id(const char *name)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	char pin[PATH_MAX + 64];
	int fd;

	snprintf(pin, sizeof(pin), "%s/links/%s", T->state_dir, name);
	fd = bpf_obj_get(pin);
	cr_assert_geq(fd, 0, "%s: %s", pin, strerror(errno));
	cr_assert_eq(bpf_obj_get_info_by_fd(fd, &info, &len), 0);
	close(fd);
	return info.id;
}

/* An upgrade from an egretd whose connect hooks kept a TCP flow's start in the socket: the
 * new close (which reads both) is in force before the new connect hooks (which keep nothing),
 * so no connection in between loses its flow. A first start attaches in the same order.
 */
Test(audit, flow_ends_are_attached_before_the_connect_hooks)
{
	static const char *const ends[] = { "egret_tcp_end", "egret_sock_end" };
	static const char *const hooks[] = { "egret_connect4", "egret_connect6", "egret_sendmsg4",
					     "egret_sendmsg6" };

	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		for (size_t j = 0; j < sizeof(hooks) / sizeof(hooks[0]); j++)
			cr_expect_lt(link_id(ends[i]), link_id(hooks[j]), "%s after %s", ends[i],
				     hooks[j]);
}

/* A TCP connection open across an egretd restart: the new egretd never saw its connect, and
 * reports its flow with the sandbox (from the socket's cgroup), the bytes, and its start unknown
 * rather than not at all or with a made-up starter.
 */
Test(audit, a_tcp_flow_open_across_a_restart_has_its_start_unknown)
{
	const Egret__V1__Event *conn, *ev;
	struct events evs;
	char out[4096];
	int fds[2];

	take_sandbox_sockets(fds);
	cr_assert_eq(events_wait(T->sink_path, is_flowstart_connect, NULL, 5000, &evs), 0);
	events_free(&evs);
	restart(NULL);
	close_sandbox_sockets(fds, &evs, &conn, &ev);
	cr_expect(ev->flow->start_unknown);
	cr_expect_eq(ev->process->pid, 0);
	cr_expect_eq(ev->flow->duration_ns, 0);
	/* the connect event names the starter, with the same cookie */
	cr_expect_neq(ev->flow->socket_cookie, 0);
	cr_expect_eq(ev->flow->socket_cookie, conn->net_connect->socket_cookie);
	cr_expect_gt(ev->flow->bytes_out, 0);
	cr_assert(ev->sandbox && conn->sandbox);
	cr_expect_eq(ev->sandbox->cgroup_id, conn->sandbox->cgroup_id);
	/* the UDP socket's storage outlived the restart: its starter is known */
	events_free(&evs);
	cr_assert_eq(events_wait(T->sink_path, is_flow_to, (void *)5000L, 5000, &evs), 0);
	ev = events_find(&evs, is_flow_to, (void *)5000L, NULL);
	cr_expect_str_eq(ev->process->comm, "flowstart");
	cr_expect_not(ev->flow->start_unknown);
	events_free(&evs);
	cr_assert_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out, "tcp flows: 0 open, 0 closed and joined to their connect, 1 with "
			      "their start unknown"),
		  "%s", out);
}

/* A sandbox holding more connections open than --max-tcp-flows-per-sandbox cannot grow egretd
 * past it: the connects over it are not held, and their flows are reported with their start
 * unknown and the socket's cookie, which their connect event carries too (a SIEM joins them).
 * Nothing stays held once they closed.
 */
static int three_connections(void *arg)
{
	int fd[3];

	(void)arg;
	for (int i = 0; i < 3; i++) {
		fd[i] = web_connection();
		if (fd[i] < 0)
			return 1;
	}
	usleep(200 * 1000); /* all three open while egretd reads their connects */
	for (int i = 0; i < 3; i++)
		close(fd[i]);
	return 0;
}

Test(audit, tcp_flows_egretd_holds_are_bounded)
{
	const char *bound[] = { "--max-tcp-flows-per-sandbox", "2", NULL };
	const Egret__V1__Event *conn = NULL, *ev;
	struct events evs;
	size_t unknown = 0;
	char out[4096];

	restart(bound);
	cr_assert_eq(in_sandbox(T, "box", three_connections, NULL), 0);
	cr_assert_eq(events_wait_count(T->sink_path, is_flow_to, (void *)8080L, 3,
				       5000 * harness_timeout_scale(), &evs),
		     0);
	for (size_t i = 0; i < evs.n; i++) {
		ev = evs.ev[i];
		if (!is_flow_to(ev, (void *)8080L) || !ev->flow->start_unknown)
			continue;
		unknown++;
		cr_expect_neq(ev->flow->socket_cookie, 0);
		for (size_t j = 0; j < i && !conn; j++) {
			if (evs.ev[j]->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
			    evs.ev[j]->net_connect->socket_cookie == ev->flow->socket_cookie)
				conn = evs.ev[j];
		}
	}
	cr_expect_eq(unknown, 1, "%zu flows with their start unknown", unknown);
	cr_expect(conn, "no connect event with the unknown flow's cookie");
	events_free(&evs);
	cr_assert_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	cr_expect(strstr(out,
			 "tcp flows: 0 open, 2 closed and joined to their connect, 1 with "
			 "their start unknown, 1 connects not held (1 at a sandbox's bound of 2"),
		  "%s", out);
}

static bool is_exec_of_marker(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_EXEC && ev->exec->n_args > 1 &&
	       !strcmp(ev->exec->args[1], arg);
}

Test(audit, the_host_is_audited_only_when_asked)
{
	const char *host[] = { "--audit-scope", "host", NULL };
	char out[1024];
	struct events evs;

	cr_assert_eq(sandbox_cmd(T, NULL, out, sizeof(out), "/bin/echo", "outside-1", NULL), 0);
	cr_assert_eq(sandbox_cmd(T, "box", out, sizeof(out), "/bin/echo", "inside-1", NULL), 0);
	cr_assert_eq(events_wait(T->sink_path, is_exec_of_marker, "inside-1", 5000, &evs), 0);
	cr_expect_null(events_find(&evs, is_exec_of_marker, "outside-1", NULL),
		       "a process outside the sandboxes was audited");
	events_free(&evs);

	restart(host);
	cr_assert_eq(sandbox_cmd(T, NULL, out, sizeof(out), "/bin/echo", "outside-2", NULL), 0);
	cr_expect_eq(events_wait(T->sink_path, is_exec_of_marker, "outside-2", 5000, &evs), 0,
		     "--audit-scope host did not audit the host");
	events_free(&evs);
}
