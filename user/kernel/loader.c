/* Loading, attaching and adopting egret's BPF programs: the objects themselves (opening them,
 * their load-time configuration, the programs they hold) and the handles egretd gets of them.
 *
 * Every program is attached to the root cgroup through a BPF link pinned at
 * <state>/links/<program>, and every map (but .rodata/.bss) is pinned at <state>/maps/<map>.
 * Pins keep enforcement attached when egretd exits or is killed. A starting egretd loads its
 * objects (reusing compatible pinned maps, so state survives: loader_load.c), then for each
 * program either swaps the new program into the pinned link with BPF_LINK_UPDATE, which is
 * atomic, or attaches and pins a new link (loader_attach.c). Nothing is ever detached on the
 * way, so there is no unprotected moment; removing enforcement is loader__uninstall
 * (loader_pins.c), called only by `egretctl uninstall`.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "egret/features.h"
#include "egret/policy.h"

#include "loader_int.h"
#include "audit.skel.h"
#include "confine.skel.h"
#include "egress.skel.h"
#include "log.h"
#include "util.h"

/* what a kernel without a feature probe would report: everything */
static const struct kernel_features everything = {
	.task_from_pid = true,
	.send_signal_task = true,
	.sys_exit_btf = true,
	.fchmodat2 = true,
	.sys_enter_btf = true,
	.rdonly_cast = true,
	.compat_judge = true,
	.skb_task_helpers = EGRET_SKB_PID_TGID | EGRET_SKB_UID_GID | EGRET_SKB_COMM,
};

bool loader__run_only(const struct bpf_program *prog)
{
	return bpf_program__type(prog) == BPF_PROG_TYPE_SYSCALL;
}

static void unit_autoload(struct bpf_object *obj, const struct kernel_features *kf)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		if (!loader__run_only(prog))
			bpf_program__set_autoload(
				prog, kfeatures__prog_wanted(kf, bpf_program__name(prog)));
	}
}

/* The watched subtrees (bpf/lib/sandbox.bpf.h): egret's root first, then each --watch. */
static void unit_layout(const volatile __u32 *level, const volatile __u64 *id,
			const volatile __u32 *n, const struct egret_paths *p)
{
	unsigned int nw = p->nwatch ? p->nwatch : 1;

	_Static_assert(PATHS_WATCH_MAX == EGRET_WATCH_MAX, "one watch table");
	for (unsigned int i = 0; i < nw && i < EGRET_WATCH_MAX; i++) {
		((__u32 *)level)[i] = p->nwatch ? p->watch[i].level : p->root_level;
		((__u64 *)id)[i] = p->nwatch ? p->watch[i].id : p->root_id;
	}
	*(__u32 *)n = nw;
}

/* Every object gets the watched subtrees (bpf/lib/sandbox.bpf.h) and the kernel's
 * switches (bpf/lib/compat.bpf.h), and loads the programs this kernel wants; p is NULL when the
 * object is only opened to list its programs. After load, the maps of list fill struct
 * loader_maps from the skeleton's members of their names.
 */
#define UNIT_OPS(stem, extra, list)                                                            \
	static int stem##_open(struct loader_unit *u, const struct egret_paths *p,             \
			       const struct loader_config *cfg)                                \
	{                                                                                      \
		struct stem##_bpf *skel = stem##_bpf__open();                                  \
                                                                                               \
		if (!skel)                                                                     \
			return -errno;                                                         \
		if (p)                                                                         \
			unit_layout(skel->rodata->watch_level, skel->rodata->watch_id,         \
				    &skel->rodata->watch_n, p);                                \
		if (cfg)                                                                       \
			extra;                                                                 \
		if (cfg) {                                                                     \
			const struct kernel_features *kf = cfg->kf ? cfg->kf : &everything;    \
                                                                                               \
			skel->rodata->have_task_from_pid = kf->task_from_pid;                  \
			skel->rodata->have_send_signal_task = kf->send_signal_task;            \
			skel->rodata->skb_task_helpers = kf->skb_task_helpers;                 \
			skel->rodata->have_rdonly_cast = kf->rdonly_cast;                      \
			unit_autoload(skel->obj, kf);                                          \
		}                                                                              \
		u->skel = skel;                                                                \
		u->obj = skel->obj;                                                            \
		return 0;                                                                      \
	}                                                                                      \
	static void stem##_destroy(void *skel)                                                 \
	{                                                                                      \
		stem##_bpf__destroy(skel);                                                     \
	}                                                                                      \
	static void stem##_fill_maps(const void *skel, struct loader_maps *maps)               \
	{                                                                                      \
		const struct stem##_bpf *s = skel;                                             \
                                                                                               \
		list(FILL_MAP)                                                                 \
	}                                                                                      \
	static const struct loader_unit_ops stem##_ops = { #stem, stem##_open, stem##_destroy, \
							   stem##_fill_maps };

#define FILL_MAP(name) maps->name = bpf_map__fd(s->maps.name);

static void audit_config(struct audit_bpf *skel, const struct loader_config *cfg)
{
	skel->rodata->audit_host = cfg->audit_host;
	skel->rodata->file_budget = cfg->file_budget;
	skel->rodata->npatterns = cfg->npatterns;
	for (unsigned int i = 0; i < cfg->npatterns && i < EGRET_PATTERNS_MAX; i++) {
		memcpy((void *)&skel->rodata->patterns[i], &cfg->patterns[i],
		       sizeof(cfg->patterns[i]));
		if (cfg->patterns[i].kind == EGRET_PATTERN_READ)
			skel->rodata->have_read_patterns = true;
	}
}

static void confine_config(struct confine_bpf *skel, const struct loader_config *cfg)
{
	skel->rodata->require_unpriv = cfg->require_unpriv;
	skel->rodata->ntrusted_movers = cfg->ntrusted_movers;
	for (unsigned int i = 0; i < cfg->ntrusted_movers && i < EGRET_TRUSTED_MOVERS_MAX; i++) {
		((__u64 *)skel->rodata->trusted_mover_id)[i] = cfg->trusted_mover_id[i];
		((__u32 *)skel->rodata->trusted_mover_level)[i] = cfg->trusted_mover_level[i];
	}
	skel->rodata->compat_mode = cfg->compat_mode;
	skel->rodata->kill_cross_signals = cfg->kill_cross_signals;
}

UNIT_OPS(egress, (void)cfg, LOADER_EGRESS_MAPS)
UNIT_OPS(confine, confine_config(skel, cfg), LOADER_CONFINE_MAPS)
UNIT_OPS(audit, audit_config(skel, cfg), LOADER_AUDIT_MAPS)

static const struct loader_unit_ops *const unit_table[] = { &egress_ops, &confine_ops, &audit_ops };
_Static_assert(ARRAY_SIZE(unit_table) <= LOADER_MAX_UNITS, "LOADER_MAX_UNITS is too small");

/* Every handle reads -ENOENT until its object is loaded. */
static void maps_unset(struct loader_maps *maps)
{
#define MAP_UNSET(name) maps->name = -ENOENT;
	LOADER_MAPS(MAP_UNSET)
#undef MAP_UNSET
}

static bool is_cgroup_type(enum bpf_prog_type t)
{
	return t == BPF_PROG_TYPE_CGROUP_SKB || t == BPF_PROG_TYPE_CGROUP_SOCK ||
	       t == BPF_PROG_TYPE_CGROUP_SOCK_ADDR || t == BPF_PROG_TYPE_CGROUP_SOCKOPT ||
	       t == BPF_PROG_TYPE_SOCK_OPS;
}

static const struct egret_prog_spec *spec_named(const struct loader_specs *s, const char *name)
{
	for (unsigned int i = 0; i < s->n; i++) {
		if (!strcmp(s->spec[i].name, name))
			return &s->spec[i];
	}
	return NULL;
}

/* Tracepoints a program is attached to besides its own section's: the sys_exit programs of
 * bpf/ whose body is the same whichever call it ends are one program each, verified once (each
 * copy cost 50-150 ms of verification at every start, seconds under an emulated CPU), with a
 * link per tracepoint, pinned under the name the copy for that call had.
 */
static const struct also_attach {
	const char *link, *prog, *tp;
} also_attach[] = {
	{ "egret_xopen", "egret_xopenat", "syscalls/sys_exit_open" },
	{ "egret_xcreat", "egret_xopenat", "syscalls/sys_exit_creat" },
	{ "egret_xopenat2", "egret_xopenat", "syscalls/sys_exit_openat2" },
	{ "egret_xunlinkat", "egret_xopenat", "syscalls/sys_exit_unlinkat" },
	{ "egret_xunlink", "egret_xopenat", "syscalls/sys_exit_unlink" },
	{ "egret_xrename2", "egret_xopenat", "syscalls/sys_exit_renameat2" },
	{ "egret_xrenameat", "egret_xopenat", "syscalls/sys_exit_renameat" },
	{ "egret_xrename", "egret_xopenat", "syscalls/sys_exit_rename" },
	{ "egret_xfchmodat", "egret_xopenat", "syscalls/sys_exit_fchmodat" },
	{ "egret_xfchmod2", "egret_xopenat", "syscalls/sys_exit_fchmodat2" },
	{ "egret_xchmod", "egret_xopenat", "syscalls/sys_exit_chmod" },
	{ "egret_xfchmod", "egret_xopenat", "syscalls/sys_exit_fchmod" },
	{ "egret_pmopen", "egret_pmopenat", "syscalls/sys_exit_open" },
	{ "egret_pmopenat2", "egret_pmopenat", "syscalls/sys_exit_openat2" },
	{ "egret_xtkill", "egret_xkill", "syscalls/sys_exit_tkill" },
	{ "egret_xtgkill", "egret_xkill", "syscalls/sys_exit_tgkill" },
	{ "egret_xsigq", "egret_xkill", "syscalls/sys_exit_rt_sigqueueinfo" },
	{ "egret_xtgsigq", "egret_xkill", "syscalls/sys_exit_rt_tgsigqueueinfo" },
	{ "egret_xpidfdsig", "egret_xkill", "syscalls/sys_exit_pidfd_send_signal" },
};

static int add_spec(struct loader_specs *out, const struct bpf_program *prog, const char *name,
		    const char *tp)
{
	const char *pname = bpf_program__name(prog);
	struct egret_prog_spec *sp = &out->spec[out->n];

	if (out->n == LOADER_MAX_PROGS || strlen(name) >= sizeof(sp->name) ||
	    strlen(pname) >= sizeof(sp->prog)) {
		log_err("program '%s' (link '%s'): more than %d links, or a name the kernel "
			"would cut",
			pname, name, LOADER_MAX_PROGS);
		return -E2BIG;
	}
	if (spec_named(out, name)) {
		/* both would be pinned as links/<name> */
		log_err("link '%s' is made twice (program '%s'): rename one", name, pname);
		return -EEXIST;
	}
	snprintf(sp->name, sizeof(sp->name), "%s", name);
	snprintf(sp->prog, sizeof(sp->prog), "%s", pname);
	snprintf(sp->tp, sizeof(sp->tp), "%s", tp);
	sp->attach_type = bpf_program__expected_attach_type(prog);
	sp->cgroup = is_cgroup_type(bpf_program__type(prog));
	sp->device = bpf_program__type(prog) == BPF_PROG_TYPE_SCHED_CLS;
	out->n++;
	return 0;
}

/* The links of one object's programs, after those of the objects before it. */
static int unit_specs(struct bpf_object *obj, struct loader_specs *out)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		const char *name = bpf_program__name(prog);
		int err;

		if (loader__run_only(prog))
			continue;
		err = add_spec(out, prog, name, "");
		for (size_t i = 0; i < ARRAY_SIZE(also_attach) && !err; i++) {
			if (!strcmp(also_attach[i].prog, name))
				err = add_spec(out, prog, also_attach[i].link, also_attach[i].tp);
		}
		if (err)
			return err;
	}
	return 0;
}

/* The programs of every object, in order: each opened (not loaded) to read them. */
int loader__specs(struct loader_specs *out)
{
	struct loader_unit u;

	out->n = 0;
	for (size_t i = 0; i < ARRAY_SIZE(unit_table); i++) {
		int err = unit_table[i]->open(&u, NULL, NULL);

		if (err)
			return err;
		err = unit_specs(u.obj, out);
		unit_table[i]->destroy(u.skel);
		if (err) {
			out->n = 0;
			return err;
		}
	}
	for (size_t i = 0; i < ARRAY_SIZE(also_attach); i++) {
		if (!spec_named(out, also_attach[i].link)) {
			log_err("link '%s': its program '%s' is in no object", also_attach[i].link,
				also_attach[i].prog);
			out->n = 0;
			return -EINVAL;
		}
	}
	return 0;
}

const struct egret_prog_spec *loader__spec(const struct loader *l, const char *name)
{
	return spec_named(&l->specs, name);
}

int loader__open(struct loader *l, const struct egret_paths *paths, const struct loader_config *cfg)
{
	static const struct loader_config defaults;
	int err;

	memset(l, 0, sizeof(*l));
	l->cgroup_fd = -1; /* loader__close is safe from here on */
	maps_unset(&l->maps);
	l->paths = paths;
	l->cfg = cfg ? cfg : &defaults;
	if (loader__specs(&l->specs) || !l->specs.n)
		return -EINVAL;
	l->cgroup_fd = open(paths__attach_path(paths), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->cgroup_fd < 0) {
		err = -errno;
		log_err("failed to open cgroup %s: %s", paths__attach_path(paths), strerror(errno));
		return err;
	}
	for (size_t i = 0; i < ARRAY_SIZE(unit_table); i++) {
		struct loader_unit *u = &l->units[i];

		u->ops = unit_table[i];
		err = u->ops->open(u, paths, l->cfg);
		if (err) {
			log_err("failed to open BPF object '%s': %s", u->ops->name, strerror(-err));
			return err;
		}
		l->nunits++;
	}
	return 0;
}

/* The program of spec's link when this load makes the link: the program loads on this kernel,
 * and so does a link of it to another tracepoint (kfeatures.c's cond_progs); else NULL.
 */
struct bpf_program *loader__link_prog(const struct loader *l, const struct egret_prog_spec *spec)
{
	for (unsigned int i = 0; i < l->nunits; i++) {
		struct bpf_program *prog =
			bpf_object__find_program_by_name(l->units[i].obj, spec->prog);

		if (prog)
			return bpf_program__autoload(prog) &&
					       (!spec->tp[0] ||
						kfeatures__prog_wanted(l->cfg->kf, spec->name))
				       ? prog
				       : NULL;
	}
	return NULL;
}

int loader__prog_fd(const struct loader *l, const char *name)
{
	for (unsigned int i = 0; i < l->nunits; i++) {
		struct bpf_program *prog = bpf_object__find_program_by_name(l->units[i].obj, name);

		if (prog && bpf_program__fd(prog) >= 0)
			return bpf_program__fd(prog);
	}
	return -ENOENT;
}

/* After uninstall: egretd's handles of the links go, so tracepoint links (which cannot be
 * detached) end now rather than when egretd exits.
 */
void loader__release_links(struct loader *l)
{
	for (unsigned int i = 0; i < l->nlinks; i++)
		close(l->link_fds[i]);
	l->nlinks = 0;
}

/* Close egretd's handles. Pins keep every link attached and every map alive. */
void loader__close(struct loader *l)
{
	for (unsigned int i = 0; i < l->nlinks; i++)
		close(l->link_fds[i]);
	for (unsigned int i = 0; i < l->nunits; i++)
		l->units[i].ops->destroy(l->units[i].skel);
	if (l->cgroup_fd >= 0)
		close(l->cgroup_fd);
	loader__diag_free(l);
	memset(l, 0, sizeof(*l));
	maps_unset(&l->maps);
	l->cgroup_fd = -1;
}
