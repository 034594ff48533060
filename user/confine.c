/* Confinement records -> SandboxLifecycle and Tamper events; new sandboxes go to the engine so
 * their rules are installed. Also the Tamper events of system calls egretctl run's seccomp
 * profile refused, which never reach a tracepoint: egretctl reports them (the "seccomp"
 * control request).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <bpf/bpf.h>

#include "collector.h"
#include "confine.h"
#include "egret/events.h"
#include "egret/audit.h"
#include "control.h"
#include "seccomp.h"
#include "util.h"

_Static_assert(sizeof(struct egret_cgroup_event) == 136, "egret_cgroup_event layout");
_Static_assert(sizeof(struct egret_tamper_event) == 80, "egret_tamper_event layout");

/* What each cgroup op is in the stream: the proto kind, the OCSF Application Lifecycle
 * activity, and the file whose write (or the syscall) caused it, for the reason string.
 */
static const struct {
	Egret__V1__SandboxLifecycle__Kind kind;
	int activity;
	const char *cause;
} cgroup_ops[] = {
	[EGRET_CG_CREATED] = { EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_CREATED, 3, "mkdir" },
	[EGRET_CG_DESTROYED] = { EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_DESTROYED, 4, "rmdir" },
	[EGRET_CG_FROZEN] = { EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_FROZEN, 7,
			      "cgroup.freeze written" },
	[EGRET_CG_THAWED] = { EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_THAWED, 6,
			      "cgroup.freeze written" },
};

void confine__on_cgroup(struct collector *c, const void *rec, size_t size)
{
	const struct egret_cgroup_event *r = rec;
	Egret__V1__SandboxLifecycle sl = EGRET__V1__SANDBOX_LIFECYCLE__INIT;
	char name[EGRET_CGROUP_NAME_LEN + 1], comm[EGRET_COMM_LEN + 1], reason[128];
	struct envelope e;

	if (r->op == 0 || r->op >= sizeof(cgroup_ops) / sizeof(cgroup_ops[0])) {
		collector__bad_record(c, r->hdr.type, sizeof(*r));
		return;
	}
	memcpy(name, r->name, EGRET_CGROUP_NAME_LEN);
	name[EGRET_CGROUP_NAME_LEN] = '\0';
	if (r->op == EGRET_CG_CREATED) {
		sandbox_names__set(&c->names, r->cgroup_id, name);
		if (c->hooks.sandbox_created)
			c->hooks.sandbox_created(c->hooks.ctx, r->cgroup_id, name);
	} else if (r->op == EGRET_CG_DESTROYED && c->hooks.sandbox_destroyed) {
		c->hooks.sandbox_destroyed(c->hooks.ctx, r->cgroup_id);
	}
	collector__envelope(c, &r->hdr, &e);
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
	collector__emit(c, &e.ev);
	if (r->op == EGRET_CG_DESTROYED)
		sandbox_names__del(&c->names, r->cgroup_id);
}

static const char *tamper_detail(const struct egret_tamper_event *r, char *buf, size_t size)
{
	switch (r->kind) {
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

void confine__on_tamper(struct collector *c, const void *rec, size_t size)
{
	const struct egret_tamper_event *r = rec;
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
	char detail[160];
	struct envelope e;

	collector__envelope(c, &r->hdr, &e);
	t.kind = (Egret__V1__Tamper__Kind)r->kind;
	t.target = r->target;
	t.other_pid = r->other_pid;
	t.killed = r->killed;
	t.detail = (char *)tamper_detail(r, detail, sizeof(detail));
	e.ev.class_uid = OCSF_PROCESS_ACTIVITY;
	e.ev.activity_id = 99; /* Other */
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	e.ev.tamper = &t;
	collector__emit(c, &e.ev);
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

int confine__cmd_seccomp(struct collector *c, struct control_req *r)
{
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
	struct egret_event_hdr h = { .type = EGRET_EV_TAMPER };
	char dir[8192], detail[256];
	uint64_t v[11], args[6];
	struct envelope e;
	struct stat st;

	if (seccomp_words(r, v)) {
		control__err(r, "usage: seccomp NAME TID ARCH NR ERRNO ARG0..ARG5 SUPPRESSED\n");
		return 2;
	}
	snprintf(dir, sizeof(dir), "%s/%s", c->names.root, r->argv[1]);
	if (stat(dir, &st) || !S_ISDIR(st.st_mode)) {
		control__err(r, "no sandbox %s\n", r->argv[1]);
		return 1;
	}
	/* what the kernel reported before (the caller's exec) goes into the stream first */
	if (c->rb)
		collector__poll(c);
	h.ts_ns = now_ns(CLOCK_BOOTTIME);
	h.sandbox_id = st.st_ino;
	h.pid = h.tid = (uint32_t)v[0];
	thread_status(h.tid, &h);
	collector__envelope(c, &h, &e);
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
	e.ev.activity_id = 99; /* Other */
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	e.ev.tamper = &t;
	collector__emit(c, &e.ev);
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
