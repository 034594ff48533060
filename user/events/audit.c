/* Audit records -> events. Strings that leave the host (argv, cwd, paths) go through the
 * redactor first; a process's exec and fork events fill the process cache that labels all its
 * later events.
 */
#include <errno.h>
#include <stddef.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "addr.h"
#include "audit.h"
#include "caps.h"
#include "cgroup.h"
#include "decoder.h"
#include "egret/ocsf.h"
#include "egret/confine.h"
#include "egret/fnv.h"
#include "redact.h"
#include "control.h"
#include "sandbox.h"
#include "util.h"

#define MAX_ARGS 1024

/* A string of the record as a C string: cut at len, redacted. */
static char *clean(struct decoder_ctx *d, const __u8 *p, size_t len, char *out, size_t size)
{
	char raw[EGRET_PATH_MAX + 1];

	if (len > EGRET_PATH_MAX)
		len = EGRET_PATH_MAX;
	memcpy(raw, p, len);
	raw[len] = '\0';
	if (d->redactor)
		redact__string(d->redactor, raw, out, size);
	else
		snprintf(out, size, "%s", raw);
	return out;
}

/* What the image holds over the host: the kernel sends 0 masks for a child user namespace */
static void posture_of(const struct egret_exec_event *r, Egret__V1__ProcessExec__Posture *p,
		       const char **caps, char (*unnamed)[8])
{
	uint64_t eff = r->userns_level ? 0 : r->cap_eff, prm = r->userns_level ? 0 : r->cap_prm;

	p->effective = eff;
	p->permitted = prm;
	p->initial_user_ns = r->userns_level == 0;
	p->user_ns_level = r->userns_level;
	p->privileged = ((eff | prm) & EGRET_CAPS_DANGER) != 0;
	p->n_capabilities = caps__list(eff | prm, caps, unnamed);
	p->capabilities = (char **)caps;
}

void audit__on_exec(struct decoder_ctx *d, const void *rec, size_t size)
{
	const struct egret_exec_event *r = rec;
	Egret__V1__ProcessExec ex = EGRET__V1__PROCESS_EXEC__INIT;
	static char argbuf[EGRET_ARGS_MAX + 1], redacted[2 * EGRET_ARGS_MAX];
	char exe[EGRET_PATH_MAX * 2], cwd[EGRET_PATH_MAX * 2];
	static char *args[MAX_ARGS];
	size_t alen = r->args_len, elen = r->exe_len, clen = r->cwd_len, vlen = r->env_len;
	size_t nargs = 0;
	struct env_block env;
	Egret__V1__ProcessExec__Posture pos = EGRET__V1__PROCESS_EXEC__POSTURE__INIT;
	const char *caps[CAPS_MAX];
	char unnamed[CAPS_MAX][8];
	struct proc_info *pi;
	struct envelope e;
	bool cut = (r->flags & EGRET_EXEC_ARGS_CUT) != 0;

	/* the four blocks are the record's data: lengths that say otherwise are not ours */
	if (alen > EGRET_ARGS_MAX || elen > EGRET_PATH_MAX || clen > EGRET_PATH_MAX ||
	    vlen >= EGRET_ENV_MAX ||
	    offsetof(struct egret_exec_event, data) + alen + elen + clen + vlen > size) {
		decoder__bad_record(d, r->hdr.type, size);
		return;
	}
	memcpy(argbuf, r->data, alen);
	argbuf[alen] = '\0';
	for (size_t i = 0; i < alen && nargs < MAX_ARGS;) {
		args[nargs++] = argbuf + i;
		i += strlen(argbuf + i) + 1;
	}
	/* redaction cuts (and marks) rather than let a secret through: a cut like the kernel's */
	if (d->redactor && redact__argv(d->redactor, args, &nargs, redacted, sizeof(redacted)))
		cut = true;
	clean(d, r->data + alen, elen, exe, sizeof(exe));
	clean(d, r->data + alen + elen, clen, cwd, sizeof(cwd));
	pi = d->procs ? proc_cache__put(d->procs, r->hdr.pid) : NULL;
	if (pi) {
		pi->ppid = r->ppid;
		pi->euid = r->euid;
		pi->exec_id = r->exec_id;
		pi->parent_exec_id = r->parent_exec_id;
		pi->inherited = false;
		pi->exec_lost = false;
		str_copy(pi->exe, sizeof(pi->exe), exe);
	}
	decoder__envelope(d, &r->hdr, &e);
	e.process.exe = exe;
	e.process.exec_id = r->exec_id;
	e.process.parent_exec_id = r->parent_exec_id;
	e.process.ppid = r->ppid;
	e.process.euid = r->euid;
	ex.n_args = nargs;
	ex.args = args;
	ex.args_truncated = cut;
	ex.cwd = cwd;
	ex.argc = r->argc;
	posture_of(r, &pos, caps, unnamed);
	ex.posture = &pos;
	e.ev.class_uid = OCSF_PROCESS_ACTIVITY;
	e.ev.activity_id = OCSF_PROCESS_ACTIVITY_LAUNCH;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXEC;
	e.ev.exec = &ex;
	env = (struct env_block){ (const char *)r->data + alen + elen + clen, vlen,
				  (r->flags & EGRET_EXEC_ENV_CUT) != 0 };
	if (env.cut) { /* the last variable, cut by the kernel, is left out */
		const char *last = memrchr(env.vars, '\0', env.len);

		env.len = last ? (size_t)(last - env.vars) + 1 : 0;
	}
	decoder__emit_env(d, &e.ev, vlen ? &env : NULL);
}

void audit__on_fork(struct decoder_ctx *d, const void *rec, size_t size)
{
	const struct egret_fork_event *r = rec;
	Egret__V1__ProcessFork fk = EGRET__V1__PROCESS_FORK__INIT;
	struct proc_info *parent = NULL, copy, *child;
	struct envelope e;

	if (d->procs && (r->hdr.flags & EGRET_HDR_EXEC_LOST))
		parent = proc_cache__exec_lost(d->procs, r->hdr.pid);
	else if (d->procs)
		parent = proc_cache__get(d->procs, r->hdr.pid);
	if (d->procs) {
		if (parent)
			copy = *parent;
		child = proc_cache__put(d->procs, r->child_pid);
		if (child) {
			if (parent)
				*child = copy;
			child->pid = r->child_pid;
			child->ppid = r->hdr.pid;
			/* its parent's image, or none known when the parent's exec record was lost */
			child->exec_id = child->exec_lost ? 0 : r->exec_id;
			child->inherited = !child->exec_lost;
		}
	}
	decoder__envelope(d, &r->hdr, &e);
	fk.child_pid = r->child_pid;
	e.ev.class_uid = OCSF_PROCESS_ACTIVITY;
	e.ev.activity_id = OCSF_PROCESS_ACTIVITY_LAUNCH;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_FORK;
	e.ev.fork = &fk;
	decoder__emit(d, &e.ev);
}

void audit__on_exit(struct decoder_ctx *d, const void *rec, size_t size)
{
	const struct egret_exit_event *r = rec;
	Egret__V1__ProcessExit ex = EGRET__V1__PROCESS_EXIT__INIT;
	struct envelope e;

	decoder__envelope(d, &r->hdr, &e);
	/* the kernel's wait status: (code << 8) for an exit, the signal (| 0x80 for a core) */
	if (r->exit_code & 0x7f) {
		ex.signal = (int32_t)(r->exit_code & 0x7f);
		ex.core_dumped = (r->exit_code & 0x80) != 0;
	} else {
		ex.exit_code = (int32_t)((r->exit_code >> 8) & 0xff);
	}
	ex.duration_ns = r->duration_ns;
	e.ev.class_uid = OCSF_PROCESS_ACTIVITY;
	e.ev.activity_id = OCSF_PROCESS_ACTIVITY_TERMINATE;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXIT;
	e.ev.exit = &ex;
	decoder__emit(d, &e.ev);
	if (d->procs)
		proc_cache__del(d->procs, r->hdr.pid);
}

/* OCSF File System Activity ids for each op */
static const uint32_t file_activity[] = {
	[EGRET_FILE_CREATE] = OCSF_FILE_ACTIVITY_CREATE,
	[EGRET_FILE_WRITE] = OCSF_FILE_ACTIVITY_UPDATE,
	[EGRET_FILE_READ] = OCSF_FILE_ACTIVITY_READ,
	[EGRET_FILE_UNLINK] = OCSF_FILE_ACTIVITY_DELETE,
	[EGRET_FILE_RMDIR] = OCSF_FILE_ACTIVITY_DELETE,
	[EGRET_FILE_RENAME] = OCSF_FILE_ACTIVITY_RENAME,
	[EGRET_FILE_CHMOD] = OCSF_FILE_ACTIVITY_SET_SECURITY,
};

/* The path, and a rename's new path at its fixed offset, lie inside the record. */
static bool file_lengths_ok(const struct egret_file_event *r, size_t size)
{
	size_t data = size - offsetof(struct egret_file_event, data);

	if (r->path_len > EGRET_PATH_MAX || r->path_len > data)
		return false;
	return r->op != EGRET_FILE_RENAME ||
	       (r->path2_len <= EGRET_PATH_MAX && EGRET_PATH_MAX + (size_t)r->path2_len <= data);
}

void audit__on_file(struct decoder_ctx *d, const void *rec, size_t size)
{
	const struct egret_file_event *r = rec;
	Egret__V1__FileActivity fa = EGRET__V1__FILE_ACTIVITY__INIT;
	char path[EGRET_PATH_MAX * 2], newpath[EGRET_PATH_MAX * 2];
	struct envelope e;

	if (!file_lengths_ok(r, size)) {
		decoder__bad_record(d, r->hdr.type, size);
		return;
	}
	decoder__envelope(d, &r->hdr, &e);
	e.process.mnt_ns = r->hdr.mnt_ns;
	clean(d, r->data, r->path_len, path, sizeof(path));
	fa.op = (Egret__V1__FileActivity__Op)r->op;
	fa.path = path;
	if (r->op == EGRET_FILE_RENAME)
		fa.new_path =
			clean(d, r->data + EGRET_PATH_MAX, r->path2_len, newpath, sizeof(newpath));
	fa.result = r->result;
	fa.flags = r->flags;
	fa.path_truncated = (r->cut & (EGRET_FILE_PATH_CUT | EGRET_FILE_PATH2_CUT)) != 0;
	e.ev.class_uid = OCSF_FILE_SYSTEM_ACTIVITY;
	e.ev.activity_id =
		r->op < ARRAY_SIZE(file_activity) ? file_activity[r->op] : OCSF_ACTIVITY_OTHER;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_FILE;
	e.ev.file = &fa;
	decoder__emit(d, &e.ev);
	if (r->cut & EGRET_FILE_BPFFS) {
		Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
		char detail[EGRET_PATH_MAX * 2 + 64];
		struct envelope e2;

		decoder__envelope(d, &r->hdr, &e2);
		snprintf(detail, sizeof(detail), "write under the bpf file system: %s", path);
		t.kind = EGRET__V1__TAMPER__KIND__KIND_BPFFS;
		t.detail = detail;
		e2.ev.class_uid = OCSF_PROCESS_ACTIVITY;
		e2.ev.activity_id = OCSF_ACTIVITY_OTHER;
		e2.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
		e2.ev.tamper = &t;
		decoder__emit(d, &e2.ev);
	}
}

void audit__on_flow(struct decoder_ctx *d, const void *rec, size_t size)
{
	const struct egret_flow_event *r = rec;
	Egret__V1__NetFlow nf = EGRET__V1__NET_FLOW__INIT;
	char src[ADDR_STRLEN], dst[ADDR_STRLEN], proto[8];
	struct egret_flow_event joined;
	struct envelope e;

	/* a TCP flow: who started it, and when, from its connect record (flows.h) */
	if (r->cookie) {
		enum flow_join j = flow_starts__take(&d->flows, r, d->names, &joined);

		if (j == FLOW_NOT_SANDBOX)
			return;
		nf.start_unknown = j == FLOW_START_UNKNOWN;
		nf.socket_cookie = r->cookie;
		r = &joined;
	}
	decoder__envelope(d, &r->hdr, &e);
	addr__format((const uint8_t *)r->saddr, src, sizeof(src));
	addr__format((const uint8_t *)r->daddr, dst, sizeof(dst));
	nf.protocol = (char *)addr__proto_name(r->protocol, proto, sizeof(proto));
	nf.src_addr = src;
	nf.src_port = r->sport;
	nf.dst_addr = dst;
	nf.dst_port = r->dport;
	nf.bytes_out = r->bytes_out;
	nf.bytes_in = r->bytes_in;
	nf.packets_out = r->packets_out;
	nf.packets_in = r->packets_in;
	nf.duration_ns = r->duration_ns;
	e.ev.class_uid = OCSF_NETWORK_ACTIVITY;
	e.ev.activity_id = OCSF_NET_ACTIVITY_CLOSE;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_FLOW;
	e.ev.flow = &nf;
	decoder__emit(d, &e.ev);
}

void audit__on_limit(struct decoder_ctx *d, const void *rec, size_t size)
{
	const struct egret_limit_event *r = rec;
	Egret__V1__ResourceLimit rl = EGRET__V1__RESOURCE_LIMIT__INIT;
	char cgroup[EGRET_CGROUP_NAME_LEN + 1];
	struct envelope e;

	decoder__envelope(d, &r->hdr, &e);
	e.ev.class_uid = OCSF_PROCESS_ACTIVITY;
	if (r->kind == EGRET_LIMIT_OOM_KILL) {
		rl.kind = EGRET__V1__RESOURCE_LIMIT__KIND__KIND_OOM_KILL;
		/* no limit configured reads as PAGE_COUNTER_MAX pages */
		rl.limit = r->limit < (1ull << 62) ? r->limit : 0;
		rl.usage = r->usage;
		e.ev.activity_id = OCSF_PROCESS_ACTIVITY_TERMINATE;
	} else if (r->kind == EGRET_LIMIT_EGRESS_BUDGET || r->kind == EGRET_LIMIT_EGRESS_RATE) {
		rl.kind = r->kind == EGRET_LIMIT_EGRESS_RATE
				  ? EGRET__V1__RESOURCE_LIMIT__KIND__KIND_EGRESS_RATE
				  : EGRET__V1__RESOURCE_LIMIT__KIND__KIND_EGRESS_BUDGET;
		rl.limit = r->limit;
		rl.usage = r->usage;
		rl.budget_period_s = r->period_s;
		e.ev.class_uid = OCSF_NETWORK_ACTIVITY;
		e.ev.activity_id = OCSF_NET_ACTIVITY_REFUSE;
	} else {
		rl.kind = EGRET__V1__RESOURCE_LIMIT__KIND__KIND_PIDS;
		rl.limit = r->limit;
		rl.usage = r->usage;
		e.ev.activity_id = OCSF_ACTIVITY_OTHER;
	}
	memcpy(cgroup, r->cgroup, EGRET_CGROUP_NAME_LEN);
	cgroup[EGRET_CGROUP_NAME_LEN] = '\0';
	rl.cgroup = cgroup;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_LIMIT;
	e.ev.limit = &rl;
	decoder__emit(d, &e.ev);
}

/* egretctl run's limits, which no tracepoint shows (user/enforce/run.c, report_limit):
 *   limit NAME timeout LIMIT_MS RAN_MS 0 0 0
 *   limit NAME cpu-throttled|cpu-summary MILLI_CPUS RAN_MS PERIODS THROTTLED THROTTLED_NS
 * a ResourceLimit event of the sandbox.
 */
int audit__cmd_limit(struct decoder_ctx *d, struct control_req *r)
{
	Egret__V1__ResourceLimit rl = EGRET__V1__RESOURCE_LIMIT__INIT;
	struct egret_event_hdr h = { .type = EGRET_EV_LIMIT };
	char dir[8192];
	uint64_t v[5];
	struct envelope e;
	bool ok = r->argc == 8 && sandbox__valid_name(r->argv[1]);

	for (int i = 0; ok && i < 5; i++)
		ok = parse_u64(r->argv[3 + i], UINT64_MAX, &v[i]) == 0;
	if (ok && !strcmp(r->argv[2], "timeout")) {
		rl.kind = EGRET__V1__RESOURCE_LIMIT__KIND__KIND_TIMEOUT;
		rl.phase = EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_HIT;
	} else if (ok && !strcmp(r->argv[2], "cpu-throttled")) {
		rl.kind = EGRET__V1__RESOURCE_LIMIT__KIND__KIND_CPU_THROTTLE;
		rl.phase = EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_STARTED;
	} else if (ok && !strcmp(r->argv[2], "cpu-summary")) {
		rl.kind = EGRET__V1__RESOURCE_LIMIT__KIND__KIND_CPU_THROTTLE;
		rl.phase = EGRET__V1__RESOURCE_LIMIT__PHASE__PHASE_SUMMARY;
	} else {
		control__err(r, "usage: limit NAME timeout|cpu-throttled|cpu-summary LIMIT USAGE "
				"PERIODS THROTTLED THROTTLED_NS\n");
		return -EINVAL;
	}
	if (decoder__named_sandbox(d, r, r->argv[1], &h))
		return -ENOENT;
	snprintf(dir, sizeof(dir), "%s/%s", d->names->root, r->argv[1]);
	decoder__envelope(d, &h, &e);
	rl.limit = v[0];
	rl.usage = v[1];
	rl.periods = v[2];
	rl.throttled_periods = v[3];
	rl.throttled_ns = v[4];
	rl.cgroup = dir;
	e.ev.class_uid = OCSF_PROCESS_ACTIVITY;
	e.ev.activity_id = rl.kind == EGRET__V1__RESOURCE_LIMIT__KIND__KIND_TIMEOUT
				   ? OCSF_PROCESS_ACTIVITY_TERMINATE
				   : OCSF_ACTIVITY_OTHER;
	e.ev.payload_case = EGRET__V1__EVENT__PAYLOAD_LIMIT;
	e.ev.limit = &rl;
	decoder__emit(d, &e.ev);
	return 0;
}

/* A path pattern for the kernel: an absolute prefix of at most EGRET_PATTERN_DEPTH
 * components, each a name or '*' (any one name); "/" alone matches every path.
 */
int audit__parse_pattern(const char *text, __u8 kind, struct egret_pattern *out)
{
	const char *p = text;

	if (text[0] != '/' || strlen(text) >= EGRET_PATTERN_LEN)
		return -EINVAL;
	memset(out, 0, sizeof(*out));
	out->kind = kind;
	while (*p) {
		const char *end;
		uint64_t h = EGRET_FNV64_OFFSET;

		while (*p == '/')
			p++;
		if (!*p)
			break;
		end = strchr(p, '/');
		if (!end)
			end = p + strlen(p);
		if (out->ncomp == EGRET_PATTERN_DEPTH)
			return -E2BIG;
		if (end - p == 1 && *p == '*') {
			out->wild |= (uint8_t)(1u << out->ncomp);
		} else {
			if (memchr(p, '*', (size_t)(end - p)))
				return -EINVAL; /* '*' stands for a whole component only */
			for (const char *q = p; q < end; q++)
				h = egret_fnv64_byte(h, (__u8)*q);
		}
		out->hash[out->ncomp++] = h;
		p = end;
	}
	return 0;
}
