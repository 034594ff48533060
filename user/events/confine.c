/* Confinement records -> SandboxLifecycle and Tamper events; new sandboxes go to the engine so
 * their rules are installed. Also the Tamper events of system calls egretctl run's seccomp
 * profile refused, which never reach a tracepoint: egretctl reports them (the "seccomp"
 * control request).
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "decoder.h"
#include "egret/ocsf.h"
#include "confine.h"
#include "egret/events.h"
#include "control.h"
#include "seccomp.h"
#include "caps.h"
#include "egret/audit.h"
#include "log.h"
#include "taskseed.h"
#include "util.h"

#include "egret/syscalls32.h"

/* What each cgroup op is in the stream: the proto kind, the OCSF Application Lifecycle
 * activity, and the file whose write (or the syscall) caused it, for the reason string.
 */
static const struct {
	Egret__V1__SandboxLifecycle__Kind kind;
	int activity;
	const char *cause;
} cgroup_ops[] = {
	[EGRET_CG_CREATED] = { EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_CREATED,
			       OCSF_APP_ACTIVITY_START, "mkdir" },
	[EGRET_CG_DESTROYED] = { EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_DESTROYED,
				 OCSF_APP_ACTIVITY_STOP, "rmdir" },
	[EGRET_CG_FROZEN] = { EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_FROZEN,
			      OCSF_APP_ACTIVITY_DISABLE, "cgroup.freeze written" },
	[EGRET_CG_THAWED] = { EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_THAWED,
			      OCSF_APP_ACTIVITY_ENABLE, "cgroup.freeze written" },
};

void confine__on_cgroup(struct decoder_ctx *d, const void *rec, size_t size)
{
	const struct egret_cgroup_event *r = rec;
	Egret__V1__SandboxLifecycle sl = EGRET__V1__SANDBOX_LIFECYCLE__INIT;
	char name[EGRET_CGROUP_NAME_LEN + 1], comm[EGRET_COMM_LEN + 1], reason[128];
	struct envelope e;

	if (r->op == 0 || r->op >= sizeof(cgroup_ops) / sizeof(cgroup_ops[0])) {
		decoder__bad_record(d, r->hdr.type, sizeof(*r));
		return;
	}
	memcpy(name, r->name, EGRET_CGROUP_NAME_LEN);
	name[EGRET_CGROUP_NAME_LEN] = '\0';
	if (r->op == EGRET_CG_CREATED) {
		sandbox_names__set(d->names, r->cgroup_id, name);
		if (d->hooks.sandbox_created)
			d->hooks.sandbox_created(d->hooks.ctx, r->cgroup_id, name);
	} else if (r->op == EGRET_CG_DESTROYED) {
		flow_starts__sandbox_gone(&d->flows, r->cgroup_id, r->hdr.ts_ns);
		if (d->hooks.sandbox_destroyed)
			d->hooks.sandbox_destroyed(d->hooks.ctx, r->cgroup_id);
	}
	decoder__envelope(d, &r->hdr, &e);
	memcpy(comm, r->hdr.comm, EGRET_COMM_LEN);
	comm[EGRET_COMM_LEN] = '\0';
	snprintf(reason, sizeof(reason), "%s by %s (pid %u)", cgroup_ops[r->op].cause, comm,
		 r->hdr.pid);
	sl.kind = cgroup_ops[r->op].kind;
	sl.reason = reason;
	e.ev.class_uid = OCSF_APPLICATION_LIFECYCLE;
	e.ev.activity_id = cgroup_ops[r->op].activity;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE;
	e.ev.sandbox_lifecycle = &sl;
	decoder__emit(d, &e.ev);
	if (r->op == EGRET_CG_DESTROYED)
		sandbox_names__del(d->names, r->cgroup_id);
}

static const char *abi_name(const struct egret_tamper_event *r)
{
	return r->abi == EGRET_ABI_I386 ? "i386" : r->abi == EGRET_ABI_X32 ? "x32" : "";
}

static void compat_detail(const struct egret_tamper_event *r, char *buf, size_t size)
{
	const char *name = egret_compat_name(r->abi, (__u32)r->target);

	snprintf(buf, size, "%s system call %llu%s%s%s from inside a sandbox%s",
		 abi_name(r)[0] ? abi_name(r) : "compat", (unsigned long long)r->target,
		 name[0] ? " (" : "", name, name[0] ? ")" : "", r->killed ? ": killed" : "");
}

/* Tamper PROC_ACCESS targets (bpf/lib/confine.bpf.h ACCESS_*) */
static const char *access_name(uint64_t kind)
{
	static const char *const names[] = { "?",
					     "ptrace",
					     "pidfd_getfd(2)",
					     "process_vm_readv(2)",
					     "process_vm_writev(2)",
					     "an open of /proc/PID/mem",
					     "an open of /proc/PID/environ" };

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : names[0];
}

static const char *tamper_detail(const struct egret_tamper_event *r, char *buf, size_t size)
{
	switch (r->kind) {
	case EGRET_TAMPER_COMPAT_SYSCALL:
		compat_detail(r, buf, size);
		break;
	case EGRET_TAMPER_BPF:
		snprintf(buf, size, "bpf(2) command %llu from inside a sandbox",
			 (unsigned long long)r->target);
		break;
	case EGRET_TAMPER_CGROUP_ESCAPE:
		snprintf(buf, size, "moved pid %u to cgroup %llu, outside its sandbox",
			 r->other_pid, (unsigned long long)r->target);
		break;
	case EGRET_TAMPER_SECCOMP:
		snprintf(buf, size, "syscall %llu refused by egretctl run's seccomp filter",
			 (unsigned long long)r->target);
		break;
	case EGRET_TAMPER_IO_URING:
		snprintf(buf, size, "io_uring_setup(2) from inside a sandbox");
		break;
	case EGRET_TAMPER_CGROUP_PULL:
		snprintf(buf, size,
			 "moved pid %u from outside into sandbox cgroup %llu; that process is "
			 "flagged foreign and never killed by egret",
			 r->other_pid, (unsigned long long)r->target);
		break;
	case EGRET_TAMPER_PRIVILEGED: {
		char names[96];

		caps__names(r->target, names, sizeof(names));
		snprintf(buf, size, "a sandboxed process holding %s over the host%s", names,
			 r->other_pid ? " entered the sandbox" : " exec'ed");
		break;
	}
	case EGRET_TAMPER_PTRACE:
		snprintf(buf, size, "ptrace of pid %u, outside the sandbox%s", r->other_pid,
			 r->killed ? ": the tracer was killed" : "");
		break;
	case EGRET_TAMPER_SIGNAL_OUT:
		snprintf(buf, size, "signal %llu (%s) to pid %u, outside the sandbox%s",
			 (unsigned long long)r->target,
			 r->target < 65 && sigabbrev_np((int)r->target)
				 ? sigabbrev_np((int)r->target)
				 : "?",
			 r->other_pid, r->killed ? ": it is egret's, the sender was killed" : "");
		break;
	case EGRET_TAMPER_PROC_ACCESS:
		snprintf(buf, size, "%s of pid %u, outside the sandbox%s", access_name(r->target),
			 r->other_pid, r->killed ? ": the process was killed" : "");
		break;
	case EGRET_TAMPER_PIN_REMOVED:
		snprintf(buf, size, "%s under the bpf file system from inside a sandbox",
			 r->target == EGRET_FILE_RENAME	 ? "rename"
			 : r->target == EGRET_FILE_RMDIR ? "rmdir"
							 : "unlink");
		break;
	default:
		snprintf(buf, size, "tamper kind %u", r->kind);
	}
	return buf;
}

void confine__on_tamper(struct decoder_ctx *d, const void *rec, size_t size)
{
	const struct egret_tamper_event *r = rec;
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
	char detail[256];
	struct envelope e;

	decoder__envelope(d, &r->hdr, &e);
	t.kind = (Egret__V1__Tamper__Kind)r->kind;
	t.target = r->target;
	t.other_pid = r->other_pid;
	t.killed = r->killed;
	t.detail = (char *)tamper_detail(r, detail, sizeof(detail));
	if (r->kind == EGRET_TAMPER_COMPAT_SYSCALL) {
		t.abi = (char *)abi_name(r);
		t.syscall = (char *)egret_compat_name(r->abi, (__u32)r->target);
	}
	e.ev.class_uid = OCSF_PROCESS_ACTIVITY;
	e.ev.activity_id = OCSF_ACTIVITY_OTHER;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	e.ev.tamper = &t;
	decoder__emit(d, &e.ev);
}

/* Tgid, uid, gid and name of thread tid, from /proc (left as they are when it is gone). */
static void thread_status(uint32_t tid, struct egret_event_hdr *h)
{
	char path[64], buf[4096], *l, *save;

	snprintf(path, sizeof(path), "/proc/%u/status", tid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return;
	for (l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (!strncmp(l, "Name:\t", 6))
			snprintf((char *)h->comm, sizeof(h->comm), "%s", l + 6);
		else if (sscanf(l, "Tgid: %u", &h->pid) == 1 || sscanf(l, "Uid: %u", &h->uid) == 1)
			continue;
		else
			sscanf(l, "Gid: %u", &h->gid);
	}
}

/* seccomp NAME TID ARCH NR ERRNO ARG0..ARG5 SUPPRESSED, the words egretctl run sends. */
static int seccomp_words(struct control_req *r, uint64_t *v)
{
	static const uint64_t max[11] = { UINT32_MAX, UINT32_MAX, UINT32_MAX, 4095,
					  UINT64_MAX, UINT64_MAX, UINT64_MAX, UINT64_MAX,
					  UINT64_MAX, UINT64_MAX, UINT64_MAX };

	if (r->argc != 13 || !sandbox__valid_name(r->argv[1]))
		return -EINVAL;
	for (int i = 0; i < 11; i++) {
		if (parse_u64(r->argv[2 + i], max[i], &v[i]))
			return -EINVAL;
	}
	return 0;
}

static void seccomp_detail(const uint64_t *v, char *buf, size_t size)
{
	uint32_t arch = (uint32_t)v[1], nr = (uint32_t)v[2];
	const char *name = seccomp__name(arch, nr);
	int off;

	off = snprintf(buf, size,
		       "%s syscall %u%s%s%s refused by egretctl run's seccomp profile (%s)",
		       seccomp__abi(arch, nr), nr, name[0] ? " (" : "", name, name[0] ? ")" : "",
		       strerrorname_np((int)v[3]) ? strerrorname_np((int)v[3]) : "?");
	if (v[10] && off > 0 && (size_t)off < size)
		snprintf(buf + off, size - (size_t)off,
			 "; %llu more refusals in the sandbox were not "
			 "reported one by one",
			 (unsigned long long)v[10]);
}

int confine__cmd_seccomp(struct decoder_ctx *d, struct control_req *r)
{
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
	struct egret_event_hdr h = { .type = EGRET_EV_TAMPER };
	char detail[256];
	uint64_t v[11], args[6];
	struct envelope e;

	if (seccomp_words(r, v)) {
		control__err(r, "usage: seccomp NAME TID ARCH NR ERRNO ARG0..ARG5 SUPPRESSED\n");
		return -EINVAL;
	}
	/* what the kernel reported before (the caller's exec) goes into the stream first */
	if (decoder__named_sandbox(d, r, r->argv[1], &h))
		return -ENOENT;
	h.pid = h.tid = (uint32_t)v[0];
	thread_status(h.tid, &h);
	decoder__envelope(d, &h, &e);
	memcpy(args, v + 4, sizeof(args));
	seccomp_detail(v, detail, sizeof(detail));
	t.kind = EGRET__V1__TAMPER__KIND__KIND_SECCOMP;
	t.target = v[2];
	t.detail = detail;
	t.syscall = (char *)seccomp__name((uint32_t)v[1], (uint32_t)v[2]);
	t.abi = (char *)seccomp__abi((uint32_t)v[1], (uint32_t)v[2]);
	t.n_args = 6;
	t.args = args;
	e.ev.class_uid = OCSF_PROCESS_ACTIVITY;
	e.ev.activity_id = OCSF_ACTIVITY_OTHER;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	e.ev.tamper = &t;
	decoder__emit(d, &e.ev);
	return 0;
}

int confine__protect(int map_fd, const __u32 *tgids, size_t n)
{
	__u32 key, next, one = 1;
	bool more;

	if (map_fd < 0 || n > EGRET_PROTECTED_MAX)
		return map_fd < 0 ? map_fd : -E2BIG;
	/* a previous egretd's tgid could be anyone's now */
	more = bpf_map_get_next_key(map_fd, NULL, &key) == 0;
	while (more) {
		more = bpf_map_get_next_key(map_fd, &key, &next) == 0;
		bpf_map_delete_elem(map_fd, &key);
		key = next;
	}
	for (size_t i = 0; i < n; i++) {
		if (bpf_map_update_elem(map_fd, &tgids[i], &one, BPF_ANY))
			return -errno;
	}
	return 0;
}

/* ---- --require-unprivileged at start: processes already in sandboxes ------------------ */

struct priv_scan {
	struct decoder_ctx *d;
	int map_fd; /* task_sandbox: a pulled-in (foreign) process is not the sandbox's */
	bool kill;
	struct stat host_userns;
	unsigned int found;
};

/* CapEff | CapPrm of /proc/PID/status; 0 when it is gone */
static uint64_t status_caps(int pid)
{
	char path[64], buf[4096], *l, *save;
	unsigned long long v;
	uint64_t caps = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	if (read_file(path, buf, sizeof(buf)) <= 0)
		return 0;
	for (l = strtok_r(buf, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		if (sscanf(l, "CapEff: %llx", &v) == 1 || sscanf(l, "CapPrm: %llx", &v) == 1)
			caps |= v;
	}
	return caps;
}

static bool in_userns(int pid, const struct stat *ns)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d/ns/user", pid);
	return stat(path, &st) == 0 && st.st_ino == ns->st_ino && st.st_dev == ns->st_dev;
}

static bool is_foreign(int map_fd, int pid)
{
	struct {
		__u64 sandbox_id;
		__u32 doomed;
		__u32 flags;
	} v;
	int fd, err;

	if (map_fd < 0)
		return false;
	fd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (fd < 0)
		return false;
	err = bpf_map_lookup_elem(map_fd, &fd, &v);
	close(fd);
	return err == 0 && (v.flags & 1); /* TASK_FOREIGN */
}

static void privileged_one(void *ctx, int pid, __u64 sandbox_id)
{
	struct priv_scan *s = ctx;
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
	struct egret_event_hdr h = { .type = EGRET_EV_TAMPER };
	uint64_t mask;
	char names[96], detail[256];
	struct envelope e;

	if (pid == getpid() || !in_userns(pid, &s->host_userns))
		return;
	mask = status_caps(pid) & EGRET_CAPS_DANGER;
	if (!mask || is_foreign(s->map_fd, pid))
		return;
	h.ts_ns = now_ns(CLOCK_BOOTTIME);
	h.sandbox_id = sandbox_id;
	h.pid = h.tid = (uint32_t)pid;
	thread_status((uint32_t)pid, &h);
	t.killed = s->kill && kill(pid, SIGKILL) == 0;
	s->found++;
	caps__names(mask, names, sizeof(names));
	snprintf(detail, sizeof(detail),
		 "a sandboxed process holding %s over the host was in "
		 "the sandbox when egretd started",
		 names);
	decoder__envelope(s->d, &h, &e);
	t.kind = EGRET__V1__TAMPER__KIND__KIND_PRIVILEGED;
	t.target = mask;
	t.other_pid = (uint32_t)pid;
	t.detail = detail;
	e.ev.class_uid = OCSF_PROCESS_ACTIVITY;
	e.ev.activity_id = OCSF_ACTIVITY_OTHER;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	e.ev.tamper = &t;
	decoder__emit(s->d, &e.ev);
}

int confine__scan_privileged(struct decoder_ctx *d, const char *root, int task_map_fd, bool kill)
{
	struct priv_scan s = { .d = d, .map_fd = task_map_fd, .kill = kill };

	if (stat("/proc/self/ns/user", &s.host_userns))
		return -errno;
	taskseed__each(root, privileged_one, &s);
	if (s.found)
		log_warn("%u privileged processes were in sandboxes at start%s", s.found,
			 kill ? "; killed (--require-unprivileged)" : "");
	return (int)s.found;
}

/* The tids in dir/cgroup.threads and every cgroup below it, into sandbox_pids as sandbox id;
 * depth bounds the walk. Entries the programs wrote meanwhile are newer and kept.
 */
static int seed_dir(int map_fd, const char *dir, __u64 id, int depth)
{
	char path[PATH_MAX];
	struct dirent *de;
	unsigned int tid;
	int n = 0;
	FILE *f;
	DIR *d;

	if (snprintf(path, sizeof(path), "%s/cgroup.threads", dir) >= (int)sizeof(path))
		return 0;
	f = fopen(path, "re");
	while (f && fscanf(f, "%u", &tid) == 1) {
		if (!bpf_map_update_elem(map_fd, &tid, &id, BPF_NOEXIST))
			n++;
	}
	if (f)
		fclose(f);
	d = depth > 0 ? opendir(dir) : NULL;
	while (d && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) >= (int)sizeof(path))
			continue;
		n += seed_dir(map_fd, path, id, depth - 1);
	}
	if (d)
		closedir(d);
	return n;
}

int confine__seed_pids(int map_fd, const char *root)
{
	char path[PATH_MAX];
	struct dirent *de;
	struct stat st;
	int n;
	DIR *d;

	if (map_fd < 0)
		return map_fd;
	d = opendir(root);
	if (!d)
		return -errno;
	n = seed_dir(map_fd, root, 0, 0); /* egret's root itself is sandbox 0 */
	while ((de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.' ||
		    snprintf(path, sizeof(path), "%s/%s", root, de->d_name) >= (int)sizeof(path) ||
		    stat(path, &st))
			continue;
		n += seed_dir(map_fd, path, (__u64)st.st_ino, 16);
	}
	closedir(d);
	return n;
}
