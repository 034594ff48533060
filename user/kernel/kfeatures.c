/* Kernel features: what this kernel offers egret's programs (probed before anything is loaded),
 * what each optional part of egret does with it or without it, which programs that keeps from
 * loading, and the record egretd pins for egretctl. See kfeatures.h and README "Kernels".
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>

#include "egret/features.h"
#include "kfeatures.h"
#include "log.h"
#include "pbjson.h"
#include "util.h"

/* ---- probes: one fact each, which --without-kernel-feature can deny ------------------------ */

enum probe_id {
	PROBE_TASK_FROM_PID,
	PROBE_SEND_SIGNAL_TASK,
	PROBE_SYS_EXIT_BTF,
	PROBE_SKB_PID_TGID,
	PROBE_SKB_UID_GID,
	PROBE_SKB_COMM,
	PROBE_FCHMODAT2,
	PROBE_SYS_ENTER_BTF,
	PROBE_RDONLY_CAST,
	PROBE_COUNT,
};

static const char *const probe_names[PROBE_COUNT] = {
	[PROBE_TASK_FROM_PID] = "task_from_pid", [PROBE_SEND_SIGNAL_TASK] = "send_signal_task",
	[PROBE_SYS_EXIT_BTF] = "sys_exit_btf",	 [PROBE_SKB_PID_TGID] = "skb_pid_tgid",
	[PROBE_SKB_UID_GID] = "skb_uid_gid",	 [PROBE_SKB_COMM] = "skb_comm",
	[PROBE_FCHMODAT2] = "fchmodat2",	 [PROBE_SYS_ENTER_BTF] = "sys_enter_btf",
	[PROBE_RDONLY_CAST] = "rdonly_cast",
};

static const char *const feature_names[] = { "task_from_pid", "send_signal_task", "skb_task",
					     "fchmodat2",     "compat",		  "rdonly_cast" };

static bool name_in(const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (list[i] && !strcmp(list[i], name))
			return true;
	}
	return false;
}

bool kfeatures__is_probe(const char *name)
{
	return name_in(name, probe_names, PROBE_COUNT);
}

bool kfeatures__is_feature(const char *name)
{
	return name_in(name, feature_names, ARRAY_SIZE(feature_names));
}

const char *kfeatures__probe_names(void)
{
	return "task_from_pid, send_signal_task, sys_exit_btf, skb_pid_tgid, skb_uid_gid, "
	       "skb_comm, fchmodat2, sys_enter_btf, rdonly_cast";
}

const char *kfeatures__feature_names(void)
{
	return "task_from_pid, send_signal_task, skb_task, fchmodat2, compat, rdonly_cast";
}

static bool btf_has(const struct btf *btf, const char *name, __u32 kind)
{
	return btf && btf__find_by_name_kind(btf, name, kind) > 0;
}

/* Whether a cgroup_skb program may call helper id: load one that does. (libbpf 1.1's
 * libbpf_probe_bpf_helper() takes 6.12's "program of this type cannot use helper" for a yes.)
 * The helper gets a 16-byte stack buffer and its size, which the ones asked about accept or
 * ignore.
 */
static bool skb_helper(enum bpf_func_id id)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_X,
		  .dst_reg = BPF_REG_1,
		  .src_reg = BPF_REG_10 },
		{ .code = BPF_ALU64 | BPF_ADD | BPF_K, .dst_reg = BPF_REG_1, .imm = -16 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .imm = 16 },
		{ .code = BPF_JMP | BPF_CALL, .imm = id },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 1 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd = bpf_prog_load(BPF_PROG_TYPE_CGROUP_SKB, "egret_probe", "GPL", insns,
			       ARRAY_SIZE(insns), NULL);

	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* Whether a tracepoint program may call kfunc bpf_rdonly_cast (in the kernel's BTF from 6.2; which
 * program types may call it is the kernel's to say): load one that casts NULL to a struct file.
 */
static bool tracepoint_rdonly_cast(const struct btf *btf)
{
	int func = btf ? btf__find_by_name_kind(btf, "bpf_rdonly_cast", BTF_KIND_FUNC) : -1;
	int file = btf ? btf__find_by_name_kind(btf, "file", BTF_KIND_STRUCT) : -1;
	struct bpf_insn insns[] = {
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_1, .imm = 0 },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_2, .imm = file },
		{ .code = BPF_JMP | BPF_CALL, .src_reg = BPF_PSEUDO_KFUNC_CALL, .imm = func },
		{ .code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0 },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	int fd;

	if (func <= 0 || file <= 0)
		return false;
	fd = bpf_prog_load(BPF_PROG_TYPE_TRACEPOINT, "egret_probe", "GPL", insns, ARRAY_SIZE(insns),
			   NULL);
	if (fd < 0)
		return false;
	close(fd);
	return true;
}

/* libbpf finds tracepoints under tracefs, or under debugfs where that is all there is */
static bool tracepoint_exists(const char *category, const char *event)
{
	static const char *const roots[] = { EGRET_TRACEFS, "/sys/kernel/debug/tracing" };
	char path[PATH_MAX];

	for (size_t i = 0; i < ARRAY_SIZE(roots); i++) {
		snprintf(path, sizeof(path), "%s/events/%s/%s", roots[i], category, event);
		if (access(path, F_OK) == 0)
			return true;
	}
	return false;
}

static void probe_all(const struct btf *btf, bool found[PROBE_COUNT])
{
	found[PROBE_TASK_FROM_PID] = btf_has(btf, "bpf_task_from_pid", BTF_KIND_FUNC) &&
				     btf_has(btf, "bpf_task_release", BTF_KIND_FUNC);
	found[PROBE_SEND_SIGNAL_TASK] = btf_has(btf, "bpf_send_signal_task", BTF_KIND_FUNC);
	found[PROBE_SYS_EXIT_BTF] = btf_has(btf, "btf_trace_sys_exit", BTF_KIND_TYPEDEF);
	found[PROBE_SKB_PID_TGID] = skb_helper(BPF_FUNC_get_current_pid_tgid);
	found[PROBE_SKB_UID_GID] = skb_helper(BPF_FUNC_get_current_uid_gid);
	found[PROBE_SKB_COMM] = skb_helper(BPF_FUNC_get_current_comm);
	found[PROBE_FCHMODAT2] = tracepoint_exists("syscalls", "sys_enter_fchmodat2");
	found[PROBE_SYS_ENTER_BTF] = btf_has(btf, "btf_trace_sys_enter", BTF_KIND_TYPEDEF);
	found[PROBE_RDONLY_CAST] = tracepoint_rdonly_cast(btf);
}

/* ---- the features, from the probes --------------------------------------------------------- */

static struct feature_status *feature_add(struct kernel_features *kf, const char *name,
					  enum feature_state state, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static struct feature_status *feature_add(struct kernel_features *kf, const char *name,
					  enum feature_state state, const char *fmt, ...)
{
	struct feature_status *f = &kf->f[kf->n++];
	va_list ap;

	memset(f, 0, sizeof(*f));
	str_copy(f->name, sizeof(f->name), name);
	f->state = state;
	va_start(ap, fmt);
	vsnprintf(f->detail, sizeof(f->detail), fmt, ap);
	va_end(ap);
	return f;
}

static void task_from_pid_feature(struct kernel_features *kf)
{
	if (kf->task_from_pid)
		feature_add(kf, "task_from_pid", FEATURE_ON,
			    "kfunc bpf_task_from_pid: the target of a ptrace or process_vm_* call "
			    "is found by its pid");
	else
		feature_add(
			kf, "task_from_pid", FEATURE_FALLBACK,
			"no kfunc bpf_task_from_pid (Linux 6.3): the target of a ptrace or "
			"process_vm_* call is placed through sandbox_pids, which egretd seeds "
			"at start and egret's fork, exec, exit and cgroup-move programs keep (a "
			"pid missing there is taken for a host process)");
}

static void send_signal_task_feature(struct kernel_features *kf)
{
	if (kf->send_signal_task)
		feature_add(
			kf, "send_signal_task", FEATURE_ON,
			"kfunc bpf_send_signal_task: a process moved out of its sandbox by "
			"another, or put outside by clone3(CLONE_INTO_CGROUP), is killed at once; "
			"a sandbox's SIGSTOP to egretd is answered with SIGCONT");
	else if (kf->sys_exit_btf)
		feature_add(
			kf, "send_signal_task", FEATURE_FALLBACK,
			"no kfunc bpf_send_signal_task (Linux 6.13): a process moved out of its "
			"sandbox by another is killed from its own context on its way back from "
			"its current syscall, a clone3(CLONE_INTO_CGROUP) child before its first "
			"instruction (egret_reap, at every syscall exit); a sandbox's SIGSTOP to "
			"egretd kills the sender but leaves egretd stopped (systemd's watchdog "
			"restarts it)");
	else
		feature_add(
			kf, "send_signal_task", FEATURE_GAP,
			"no kfunc bpf_send_signal_task (Linux 6.13) and no sys_exit tracepoint "
			"with BTF: a process moved out of its sandbox by another, or put outside "
			"by clone3(CLONE_INTO_CGROUP), survives there (the mover is killed)");
}

static void skb_task_feature(struct kernel_features *kf)
{
	static const struct {
		__u32 bit;
		const char *helper, *loses;
	} h[] = {
		{ EGRET_SKB_PID_TGID, "bpf_get_current_pid_tgid", "pid" },
		{ EGRET_SKB_UID_GID, "bpf_get_current_uid_gid", "uid, gid" },
		{ EGRET_SKB_COMM, "bpf_get_current_comm", "comm" },
	};
	char helpers[160] = "", loses[64] = "";

	if (kf->skb_task_helpers == (EGRET_SKB_PID_TGID | EGRET_SKB_UID_GID | EGRET_SKB_COMM)) {
		feature_add(kf, "skb_task", FEATURE_ON,
			    "cgroup_skb programs may ask for the current task: the skb backstop's "
			    "records name the process");
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(h); i++) {
		if (kf->skb_task_helpers & h[i].bit)
			continue;
		snprintf(helpers + strlen(helpers), sizeof(helpers) - strlen(helpers), "%s%s",
			 helpers[0] ? ", " : "", h[i].helper);
		snprintf(loses + strlen(loses), sizeof(loses) - strlen(loses), "%s%s",
			 loses[0] ? ", " : "", h[i].loses);
	}
	feature_add(kf, "skb_task", FEATURE_REDUCED,
		    "cgroup_skb programs may not call %s here (6.18 allows them): the skb "
		    "backstop's records (ping sockets, source-routed packets) carry no %s",
		    helpers, loses);
}

static void fchmodat2_feature(struct kernel_features *kf)
{
	if (kf->fchmodat2)
		feature_add(kf, "fchmodat2", FEATURE_ON, "fchmodat2 is audited");
	else
		feature_add(kf, "fchmodat2", FEATURE_NOT_NEEDED,
			    "no tracepoint syscalls/sys_enter_fchmodat2: this kernel has no "
			    "fchmodat2 syscall (Linux 6.6), so there is nothing to audit");
}

static void compat_feature(struct kernel_features *kf)
{
	if (!kf->sys_enter_btf)
		feature_add(kf, "compat", FEATURE_GAP,
			    "no sys_enter tracepoint with BTF: a 32-bit (int 0x80, sysenter) or "
			    "x32 system call from a sandbox egret did not start is not seen (its "
			    "socket, io_uring_setup, bpf, mount and file calls go unjudged)");
	else if (kf->compat_judge)
		feature_add(
			kf, "compat", FEATURE_ON,
			"--compat judge: a sandbox's 32-bit and x32 system calls get the checks "
			"of their 64-bit twins; those egret cannot check there are killed (bpf(2) is "
			"judged here too, so egret_bpf is not loaded)");
	else
		feature_add(
			kf, "compat", FEATURE_ON,
			"--compat refuse: a sandbox's first 32-bit or x32 system call kills it (bpf(2) "
			"is judged here too, so egret_bpf is not loaded)");
}

static void rdonly_cast_feature(struct kernel_features *kf)
{
	if (kf->rdonly_cast)
		feature_add(
			kf, "rdonly_cast", FEATURE_ON,
			"kfunc bpf_rdonly_cast: paths and open files are read with plain loads");
	else
		feature_add(kf, "rdonly_cast", FEATURE_FALLBACK,
			    "no kfunc bpf_rdonly_cast for tracepoints (Linux 6.2): paths and open "
			    "files are read with bpf_probe_read_kernel, the same records at about "
			    "0.2 us more an open and 0.3 us more an exec");
}

/* Programs loaded on some kernels only, and the feature whose record names them when not. */
static bool want_fchmodat2(const struct kernel_features *kf)
{
	return kf->fchmodat2;
}

static bool want_reap(const struct kernel_features *kf)
{
	return !kf->send_signal_task && kf->sys_exit_btf;
}

static bool want_csys(const struct kernel_features *kf)
{
	return kf->sys_enter_btf;
}

/* bpf(2)'s own tracepoint, where egret_csys does not judge bpf(2) */
static bool want_bpf_tp(const struct kernel_features *kf)
{
	return !want_csys(kf);
}

static bool want_cxsys(const struct kernel_features *kf)
{
	return kf->sys_enter_btf && kf->sys_exit_btf && kf->compat_judge;
}

static bool want_cexit(const struct kernel_features *kf)
{
	return !kf->task_from_pid || want_reap(kf);
}

static const struct cond_prog {
	const char *prog;
	const char *feature;
	bool (*wanted)(const struct kernel_features *kf);
} cond_progs[] = {
	{ "egret_fchmodat2", "fchmodat2", want_fchmodat2 },
	{ "egret_xfchmod2", "fchmodat2", want_fchmodat2 },
	{ "egret_reap", "send_signal_task", want_reap },
	{ "egret_cexit", "task_from_pid", want_cexit },
	{ "egret_csys", "compat", want_csys },
	{ "egret_bpf", "compat", want_bpf_tp },
	{ "egret_cxsys", "compat", want_cxsys },
	{ "egret_acsys", "compat", want_cxsys },
	{ "egret_acxsys", "compat", want_cxsys },
};

static struct feature_status *feature_by_name(struct kernel_features *kf, const char *name)
{
	for (unsigned int i = 0; i < kf->n; i++) {
		if (!strcmp(kf->f[i].name, name))
			return &kf->f[i];
	}
	return NULL;
}

static void note_skipped(struct kernel_features *kf)
{
	for (size_t i = 0; i < ARRAY_SIZE(cond_progs); i++) {
		struct feature_status *f = feature_by_name(kf, cond_progs[i].feature);
		size_t used;

		if (!f || cond_progs[i].wanted(kf))
			continue;
		used = strlen(f->progs);
		snprintf(f->progs + used, sizeof(f->progs) - used, "%s%s", used ? " " : "",
			 cond_progs[i].prog);
	}
}

static void release_of(char *out, size_t size)
{
	struct utsname u;

	str_copy(out, size, uname(&u) ? "unknown" : u.release);
}

int kfeatures__probe(struct kernel_features *kf, const struct feature_options *o)
{
	bool found[PROBE_COUNT];
	struct btf *btf = btf__load_vmlinux_btf();

	memset(kf, 0, sizeof(*kf));
	release_of(kf->release, sizeof(kf->release));
	if (!btf) {
		log_err("kernel %s has no BTF (/sys/kernel/btf/vmlinux): egret's CO-RE programs "
			"need a kernel built with CONFIG_DEBUG_INFO_BTF",
			kf->release);
		return -ENOENT;
	}
	probe_all(btf, found);
	btf__free(btf);
	for (unsigned int i = 0; o && i < o->nwithout; i++) {
		for (int p = 0; p < PROBE_COUNT; p++)
			found[p] = found[p] && strcmp(o->without[i], probe_names[p]) != 0;
	}
	kf->task_from_pid = found[PROBE_TASK_FROM_PID];
	kf->send_signal_task = found[PROBE_SEND_SIGNAL_TASK];
	kf->sys_exit_btf = found[PROBE_SYS_EXIT_BTF];
	kf->fchmodat2 = found[PROBE_FCHMODAT2];
	kf->sys_enter_btf = found[PROBE_SYS_ENTER_BTF];
	kf->rdonly_cast = found[PROBE_RDONLY_CAST];
	kf->compat_judge = o && o->compat_judge;
	kf->skb_task_helpers = (found[PROBE_SKB_PID_TGID] ? EGRET_SKB_PID_TGID : 0) |
			       (found[PROBE_SKB_UID_GID] ? EGRET_SKB_UID_GID : 0) |
			       (found[PROBE_SKB_COMM] ? EGRET_SKB_COMM : 0);
	task_from_pid_feature(kf);
	send_signal_task_feature(kf);
	skb_task_feature(kf);
	fchmodat2_feature(kf);
	compat_feature(kf);
	rdonly_cast_feature(kf);
	note_skipped(kf);
	for (unsigned int i = 0; o && i < o->naccept; i++) {
		struct feature_status *f = feature_by_name(kf, o->accept[i]);

		if (f && f->state == FEATURE_GAP)
			f->accepted = 1;
	}
	return 0;
}

const char *kfeatures__state_name(enum feature_state s)
{
	switch (s) {
	case FEATURE_ON:
		return "on";
	case FEATURE_FALLBACK:
		return "fallback";
	case FEATURE_REDUCED:
		return "reduced";
	case FEATURE_NOT_NEEDED:
		return "not needed";
	case FEATURE_GAP:
		return "gap";
	}
	return "unknown";
}

/* Log what is not on; a gap nobody accepted stops egretd in enforce mode. */
int kfeatures__check_gaps(const struct kernel_features *kf, bool enforce)
{
	int refused = 0;

	for (unsigned int i = 0; i < kf->n; i++) {
		const struct feature_status *f = &kf->f[i];

		if (f->state == FEATURE_ON)
			continue;
		if (f->state != FEATURE_GAP || f->accepted || !enforce) {
			log_msg(f->state == FEATURE_GAP ? LOG_LVL_WARN : LOG_LVL_INFO,
				"kernel %s: %s: %s%s: %s", kf->release, f->name,
				kfeatures__state_name(f->state), f->accepted ? " (accepted)" : "",
				f->detail);
			continue;
		}
		log_err("kernel %s lacks what a protection needs: %s: %s; run a newer kernel, or "
			"start egretd with --accept-kernel-gap %s to enforce without it",
			kf->release, f->name, f->detail, f->name);
		refused++;
	}
	return refused ? -EOPNOTSUPP : 0;
}

/* The first gap the operator did not accept, or NULL. */
const char *kfeatures__gap(const struct kernel_features *kf)
{
	for (unsigned int i = 0; i < kf->n; i++) {
		if (kf->f[i].state == FEATURE_GAP && !kf->f[i].accepted)
			return kf->f[i].name;
	}
	return NULL;
}

bool kfeatures__prog_wanted(const struct kernel_features *kf, const char *prog)
{
	for (size_t i = 0; kf && i < ARRAY_SIZE(cond_progs); i++) {
		if (!strcmp(cond_progs[i].prog, prog))
			return cond_progs[i].wanted(kf);
	}
	return true;
}

static bool word_in(const char *words, const char *w)
{
	size_t n = strlen(w);

	for (const char *p = words; (p = strstr(p, w)); p += n) {
		if ((p == words || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\0'))
			return true;
	}
	return false;
}

bool kfeatures__prog_skipped(const struct kernel_features *kf, const char *prog)
{
	for (unsigned int i = 0; kf && i < kf->n; i++) {
		if (word_in(kf->f[i].progs, prog))
			return true;
	}
	return false;
}

unsigned int kfeatures__nskipped(const struct kernel_features *kf)
{
	unsigned int n = 0;

	for (unsigned int i = 0; kf && i < kf->n; i++) {
		for (const char *p = kf->f[i].progs; *p; p++)
			n += p == kf->f[i].progs || (p[-1] == ' ' && *p != ' ');
	}
	return n;
}

/* ---- the pinned record --------------------------------------------------------------------- */

static int features_map(const struct kernel_features *kf)
{
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, FEATURES_MAP, sizeof(__u32),
				sizeof(struct feature_status), FEATURES_MAX, NULL);

	if (fd < 0)
		return -errno;
	for (__u32 i = 0; i < kf->n; i++) {
		if (bpf_map_update_elem(fd, &i, &kf->f[i], BPF_ANY)) {
			int err = -errno;

			close(fd);
			return err;
		}
	}
	return fd;
}

/* Replace <state>/maps/kernel_features (a new pin renamed over the old: never absent). */
int kfeatures__pin(const struct kernel_features *kf, const struct egret_paths *p)
{
	char pin[PATH_MAX], tmp[PATH_MAX + 8];
	int fd, err = 0;

	if (paths__state(p, pin, sizeof(pin), "maps", FEATURES_MAP))
		return -ENAMETOOLONG;
	snprintf(tmp, sizeof(tmp), "%s_next", pin);
	fd = features_map(kf);
	if (fd < 0) {
		log_err("failed to create map '%s': %s", FEATURES_MAP, strerror(-fd));
		return fd;
	}
	unlink(tmp);
	if (bpf_obj_pin(fd, tmp) || rename(tmp, pin)) {
		err = -errno;
		log_err("failed to pin map '%s' at %s: %s", FEATURES_MAP, pin, strerror(errno));
		unlink(tmp);
	}
	close(fd);
	return err;
}

int kfeatures__read_pinned(const struct egret_paths *p, struct kernel_features *kf)
{
	char pin[PATH_MAX];
	int fd;

	memset(kf, 0, sizeof(*kf));
	release_of(kf->release, sizeof(kf->release));
	if (paths__state(p, pin, sizeof(pin), "maps", FEATURES_MAP))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return -errno;
	for (__u32 i = 0; i < FEATURES_MAX; i++) {
		struct feature_status *f = &kf->f[kf->n];

		if (bpf_map_lookup_elem(fd, &i, f) || !f->name[0])
			break;
		f->name[sizeof(f->name) - 1] = '\0';
		f->detail[sizeof(f->detail) - 1] = '\0';
		f->progs[sizeof(f->progs) - 1] = '\0';
		kf->n++;
	}
	close(fd);
	return 0;
}

/* ---- reports -------------------------------------------------------------------------------- */

/* `status`: the kernel, then each optional part that is not on, and why. */
void kfeatures__print(FILE *f, const struct kernel_features *kf)
{
	unsigned int off = 0;

	for (unsigned int i = 0; i < kf->n; i++)
		off += kf->f[i].state != FEATURE_ON;
	fprintf(f, "kernel: %s, %s\n", kf->release,
		!kf->n ? "features unknown (no kernel_features pin)"
		: off  ? "optional parts off or replaced:"
		       : "every optional part on");
	for (unsigned int i = 0; i < kf->n; i++) {
		const struct feature_status *s = &kf->f[i];

		if (s->state == FEATURE_ON)
			continue;
		fprintf(f, "  %s: %s%s: %s%s%s%s\n", s->name, kfeatures__state_name(s->state),
			s->accepted ? " (accepted with --accept-kernel-gap)" : "", s->detail,
			s->progs[0] ? " (not loaded: " : "", s->progs, s->progs[0] ? ")" : "");
	}
}

static void json_words(FILE *f, const char *words)
{
	char buf[FEATURE_PROGS_LEN], *save;
	bool first = true;

	str_copy(buf, sizeof(buf), words);
	fputc('[', f);
	for (char *w = strtok_r(buf, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		fputs(first ? "" : ",", f);
		pbjson__string(f, w, strlen(w));
		first = false;
	}
	fputc(']', f);
}

/* `status --json`: "kernel":{"release":...,"features":[{...}]}, every feature with its state */
void kfeatures__json(FILE *f, const struct kernel_features *kf)
{
	fputs("\"kernel\":{\"release\":", f);
	pbjson__string(f, kf->release, strlen(kf->release));
	fputs(",\"features\":[", f);
	for (unsigned int i = 0; i < kf->n; i++) {
		const struct feature_status *s = &kf->f[i];
		const char *state = kfeatures__state_name(s->state);

		fputs(i ? ",{\"name\":" : "{\"name\":", f);
		pbjson__string(f, s->name, strlen(s->name));
		fputs(",\"state\":", f);
		pbjson__string(f, state, strlen(state));
		fprintf(f, ",\"accepted\":%s,\"detail\":", s->accepted ? "true" : "false");
		pbjson__string(f, s->detail, strlen(s->detail));
		fputs(",\"not_loaded\":", f);
		json_words(f, s->progs);
		fputc('}', f);
	}
	fputs("]}", f);
}
