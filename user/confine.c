/* Confinement records -> SandboxLifecycle and Tamper events; new sandboxes go to the engine so
 * their rules are installed.
 */
#include <stdio.h>
#include <string.h>

#include "collector.h"
#include "confine.h"

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
