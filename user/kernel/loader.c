/* Loading, attaching and adopting egret's BPF programs.
 *
 * Every program is attached to the root cgroup through a BPF link pinned at
 * <state>/links/<program>, and every map (but .rodata/.bss) is pinned at <state>/maps/<map>.
 * Pins keep enforcement attached when egretd exits or is killed. A starting egretd loads its
 * objects (reusing compatible pinned maps, so state survives), then for each program either
 * swaps the new program into the pinned link with BPF_LINK_UPDATE, which is atomic, or attaches
 * and pins a new link. Nothing is ever detached on the way, so there is no unprotected moment;
 * removing enforcement is loader__uninstall, called only by `egretctl uninstall`.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "egret/features.h"

#include "keeper.h"
#include "loader.h"
#include "audit.skel.h"
#include "confine.skel.h"
#include "egress.skel.h"
#include "log.h"
#include "util.h"

struct loader_unit {
	const struct unit_ops *ops;
	void *skel;
	struct bpf_object *obj;
	bool load_failed; /* bpf_object__load() refused it */
};

struct unit_ops {
	const char *name;
	int (*open)(struct loader_unit *u, const struct egret_paths *p,
		    const struct loader_config *cfg);
	void (*destroy)(void *skel);
};

/* Every object gets the sandbox level and root id (bpf/lib/sandbox.bpf.h) and the kernel's
 * switches (bpf/lib/compat.bpf.h), and loads the programs this kernel wants; p is NULL when the
 * object is only opened to list its programs.
 */
#define UNIT_OPEN(stem, extra)                                                              \
	static int stem##_open(struct loader_unit *u, const struct egret_paths *p,          \
			       const struct loader_config *cfg)                             \
	{                                                                                   \
		struct stem##_bpf *skel = stem##_bpf__open();                               \
                                                                                            \
		if (!skel)                                                                  \
			return -errno;                                                      \
		if (p) {                                                                    \
			skel->rodata->sandbox_level = p->root_level + 1;                    \
			skel->rodata->root_cgroup_id = p->root_id;                          \
		}                                                                           \
		if (cfg)                                                                    \
			extra;                                                              \
		if (cfg) {                                                                  \
			const struct kernel_features *kf = cfg->kf ? cfg->kf : &everything; \
                                                                                            \
			skel->rodata->have_task_from_pid = kf->task_from_pid;               \
			skel->rodata->have_send_signal_task = kf->send_signal_task;         \
			skel->rodata->skb_task_helpers = kf->skb_task_helpers;              \
			unit_autoload(skel->obj, kf);                                       \
		}                                                                           \
		u->skel = skel;                                                             \
		u->obj = skel->obj;                                                         \
		return 0;                                                                   \
	}                                                                                   \
	static void stem##_destroy(void *skel)                                              \
	{                                                                                   \
		stem##_bpf__destroy(skel);                                                  \
	}

/* what a kernel without a feature probe would report: everything */
static const struct kernel_features everything = {
	.task_from_pid = true,
	.send_signal_task = true,
	.sys_exit_btf = true,
	.fchmodat2 = true,
	.sys_enter_btf = true,
	.compat_judge = true,
	.skb_task_helpers = EGRET_SKB_PID_TGID | EGRET_SKB_UID_GID | EGRET_SKB_COMM,
};

/* Programs run by egretd itself (BPF_PROG_TEST_RUN), never attached: egret_selftest. */
static bool is_run_only(const struct bpf_program *prog)
{
	return bpf_program__type(prog) == BPF_PROG_TYPE_SYSCALL;
}

static void unit_autoload(struct bpf_object *obj, const struct kernel_features *kf)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		if (!is_run_only(prog))
			bpf_program__set_autoload(
				prog, kfeatures__prog_wanted(kf, bpf_program__name(prog)));
	}
}

static void audit_config(struct audit_bpf *skel, const struct loader_config *cfg)
{
	skel->rodata->audit_host = cfg->audit_host;
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

UNIT_OPEN(egress, (void)cfg)
UNIT_OPEN(confine, confine_config(skel, cfg))
UNIT_OPEN(audit, audit_config(skel, cfg))

static const struct unit_ops unit_table[] = {
	{ "egress", egress_open, egress_destroy },
	{ "confine", confine_open, confine_destroy },
	{ "audit", audit_open, audit_destroy },
};

static struct loader_unit unit_storage[ARRAY_SIZE(unit_table)];

static struct egret_prog_spec spec_table[LOADER_MAX_PROGS];
static unsigned int nspecs;

static bool is_cgroup_type(enum bpf_prog_type t)
{
	return t == BPF_PROG_TYPE_CGROUP_SKB || t == BPF_PROG_TYPE_CGROUP_SOCK ||
	       t == BPF_PROG_TYPE_CGROUP_SOCK_ADDR || t == BPF_PROG_TYPE_CGROUP_SOCKOPT ||
	       t == BPF_PROG_TYPE_SOCK_OPS;
}

static bool prog_spec_named(const char *name)
{
	for (unsigned int i = 0; i < nspecs; i++) {
		if (!strcmp(spec_table[i].name, name))
			return true;
	}
	return false;
}

/* The programs of every object, in order: opened (not loaded) once to read them. */
int loader__specs(const struct egret_prog_spec **specs, unsigned int *n)
{
	static bool ready;
	struct loader_unit u;
	struct bpf_program *prog;

	for (unsigned int i = 0; !ready && i < ARRAY_SIZE(unit_table); i++) {
		int err = unit_table[i].open(&u, NULL, NULL);

		if (err)
			return err;
		bpf_object__for_each_program(prog, u.obj)
		{
			struct egret_prog_spec *sp = &spec_table[nspecs];

			if (is_run_only(prog))
				continue;
			if (nspecs == LOADER_MAX_PROGS || strlen(bpf_program__name(prog)) >= 16) {
				log_err("program '%s': more than %d programs, or a name the kernel "
					"would cut",
					bpf_program__name(prog), LOADER_MAX_PROGS);
				unit_table[i].destroy(u.skel);
				nspecs = 0;
				return -E2BIG;
			}
			if (prog_spec_named(bpf_program__name(prog))) {
				/* both would be pinned as links/<name> */
				log_err("program '%s' is in two objects: rename one",
					bpf_program__name(prog));
				unit_table[i].destroy(u.skel);
				nspecs = 0;
				return -EEXIST;
			}
			snprintf(sp->name, sizeof(sp->name), "%s", bpf_program__name(prog));
			sp->attach_type = bpf_program__expected_attach_type(prog);
			sp->cgroup = is_cgroup_type(bpf_program__type(prog));
			nspecs++;
		}
		unit_table[i].destroy(u.skel);
		ready = i + 1 == ARRAY_SIZE(unit_table);
	}
	*specs = spec_table;
	*n = nspecs;
	return 0;
}

unsigned int loader__nprogs(void)
{
	const struct egret_prog_spec *s;
	unsigned int n = 0;

	return loader__specs(&s, &n) ? 0 : n;
}

static const struct egret_prog_spec *prog_spec(const char *name)
{
	const struct egret_prog_spec *s;
	unsigned int n;

	if (loader__specs(&s, &n))
		return NULL;
	for (unsigned int i = 0; i < n; i++) {
		if (strcmp(s[i].name, name) == 0)
			return &s[i];
	}
	return NULL;
}

int loader__open(struct loader *l, const struct egret_paths *paths, const struct loader_config *cfg)
{
	static const struct loader_config defaults;
	int err;

	memset(l, 0, sizeof(*l));
	l->cgroup_fd = -1; /* loader__close is safe from here on */
	l->paths = paths;
	l->cfg = cfg ? cfg : &defaults;
	if (!loader__nprogs())
		return -EINVAL;
	l->cgroup_fd = open(paths->cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (l->cgroup_fd < 0) {
		err = -errno;
		log_err("failed to open cgroup %s: %s", paths->cgroup_root, strerror(errno));
		return err;
	}
	for (unsigned int i = 0; i < ARRAY_SIZE(unit_table); i++) {
		struct loader_unit *u = &unit_storage[i];

		u->ops = &unit_table[i];
		u->load_failed = false;
		err = u->ops->open(u, paths, l->cfg);
		if (err) {
			log_err("failed to open BPF object '%s': %s", u->ops->name, strerror(-err));
			return err;
		}
		l->units[l->nunits++] = u;
	}
	return 0;
}

static struct loader_map *map_entry(struct loader *l, const char *name)
{
	for (unsigned int i = 0; i < l->nmaps; i++) {
		if (strcmp(l->maps[i].name, name) == 0)
			return &l->maps[i];
	}
	return NULL;
}

int loader__prog_fd(const struct loader *l, const char *name)
{
	for (unsigned int i = 0; i < l->nunits; i++) {
		struct bpf_program *prog = bpf_object__find_program_by_name(l->units[i]->obj, name);

		if (prog && bpf_program__fd(prog) >= 0)
			return bpf_program__fd(prog);
	}
	return -ENOENT;
}

int loader__map_fd(const struct loader *l, const char *name)
{
	for (unsigned int i = 0; i < l->nmaps; i++) {
		if (strcmp(l->maps[i].name, name) == 0)
			return l->maps[i].fd;
	}
	return -ENOENT;
}

static bool map_compatible(struct bpf_map *map, int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return false;
	return info.type == bpf_map__type(map) && info.key_size == bpf_map__key_size(map) &&
	       info.value_size == bpf_map__value_size(map) &&
	       info.max_entries == bpf_map__max_entries(map) &&
	       info.map_flags == bpf_map__map_flags(map);
}

/* Before load: share a map an earlier object created, or adopt a compatible pinned one. */
static int prepare_map(struct loader *l, struct bpf_map *map, enum map_origin *origin)
{
	const char *name = bpf_map__name(map);
	struct loader_map *m = map_entry(l, name);
	char pin[PATH_MAX];
	int fd, err;

	*origin = MAP_NEW;
	if (m)
		return bpf_map__reuse_fd(map, m->fd);
	err = paths__state(l->paths, pin, sizeof(pin), "maps", name);
	if (err)
		return err;
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!map_compatible(map, fd)) {
		log_warn("pinned map %s does not match this egretd's layout: replacing it once the "
			 "new programs are in force (its contents are lost)",
			 pin);
		*origin = MAP_REPLACED;
		close(fd);
		return 0;
	}
	err = bpf_map__reuse_fd(map, fd);
	close(fd);
	if (!err)
		*origin = MAP_REUSED;
	return err;
}

/* ---- why a program does not load ------------------------------------------------------ */

#define LOAD_LOG_SIZE  (4u << 20) /* a level-1 verifier log holds the failing path only */
#define LOAD_MSGS_SIZE 16384	  /* libbpf's own messages about one load */

static char *load_log, *load_msgs;

/* the kernel release that brought a helper or kfunc egret's programs use, when it matters */
static const struct {
	const char *sym, *since;
} sym_since[] = {
	{ "bpf_task_from_pid", "6.3" },		{ "bpf_task_release", "6.3" },
	{ "bpf_send_signal_task", "6.13" },	{ "bpf_loop", "5.17" },
	{ "bpf_get_current_task_btf", "5.11" }, { "bpf_task_storage_get", "5.11" },
};

static const char *since_of(const char *sym)
{
	for (size_t i = 0; i < ARRAY_SIZE(sym_since); i++) {
		if (!strcmp(sym_since[i].sym, sym))
			return sym_since[i].since;
	}
	return NULL;
}

/* the identifier after key in text, into word; NULL when key is not there */
static const char *word_after(const char *text, const char *key, char *word, size_t size)
{
	const char *p = text ? strstr(text, key) : NULL;
	size_t n = 0;

	if (!p)
		return NULL;
	p += strlen(key);
	while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_') && n + 1 < size)
		n++;
	memcpy(word, p, n);
	word[n] = '\0';
	return word;
}

/* the rest of the line after key in text, into out; NULL when key is not there */
static const char *line_after(const char *text, const char *key, char *out, size_t size)
{
	const char *p = text ? strstr(text, key) : NULL;
	size_t n;

	if (!p)
		return NULL;
	p += strlen(key);
	n = strcspn(p, "\n");
	snprintf(out, size, "%.*s", (int)n, p);
	return out;
}

/* The verifier's last word: its last line but the statistics. */
static void last_line(const char *log, char *out, size_t size)
{
	const char *best = NULL, *p = log;
	size_t best_len = 0;

	while (p && *p) {
		size_t n = strcspn(p, "\n");

		if (n && strncmp(p, "processed ", 10) && strncmp(p, "verification time", 17) &&
		    strncmp(p, "stack depth", 11) && strncmp(p, "-- ", 3)) {
			best = p;
			best_len = n;
		}
		p += n + (p[n] == '\n');
	}
	snprintf(out, size, "%.*s", best ? (int)best_len : 0, best ? best : "");
}

static void explain_sym(char *out, size_t size, const char *what, const char *sym, const char *tail)
{
	const char *since = since_of(sym);

	snprintf(out, size, "%s %s %s%s%s%s", what, sym, tail, since ? " (Linux " : "",
		 since ? since : "", since ? " has it)" : "");
}

/* One line saying why a program did not load, from the verifier's log and libbpf's messages. */
void loader__explain(const char *vlog, const char *msgs, char *out, size_t size)
{
	char w[128], line[256];

	if (word_after(vlog, "unknown func ", w, sizeof(w)) ||
	    word_after(vlog, "cannot use helper ", w, sizeof(w)) ||
	    word_after(vlog, "program of this type cannot use helper ", w, sizeof(w)))
		explain_sym(out, size, "helper", w, "is not available to this program type here");
	else if (word_after(msgs, "extern (func ksym) '", w, sizeof(w)))
		explain_sym(out, size, "kfunc", w, "is missing from this kernel");
	else if (vlog && strstr(vlog, "BPF program is too large"))
		snprintf(out, size,
			 "too large for this kernel's verifier (1,000,000 instructions)");
	else if (line_after(vlog, "Unreleased reference", line, sizeof(line)))
		snprintf(out, size, "the verifier found a reference not released%s", line);
	else if (line_after(vlog, "failed to resolve CO-RE relocation ", line, sizeof(line)) ||
		 line_after(msgs, "failed to resolve CO-RE relocation ", line, sizeof(line)))
		snprintf(out, size, "a kernel type differs here: %s", line);
	else if (word_after(msgs, "failed to find kernel BTF type ID of '", w, sizeof(w)))
		snprintf(out, size, "this kernel has no tracepoint or function %s", w);
	else if (last_line(vlog, line, sizeof(line)), line[0])
		snprintf(out, size, "the verifier says: %s", line);
	else if (line_after(msgs, "BPF program load failed: ", line, sizeof(line)))
		snprintf(out, size, "the kernel refused it: %s", line);
	else if (last_line(msgs, line, sizeof(line)), line[0])
		snprintf(out, size, "%s", line);
	else
		snprintf(out, size, "no reason given");
}

static void set_log_bufs(struct bpf_object *obj)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, obj)
	{
		load_log[0] = '\0';
		bpf_program__set_log_buf(prog, load_log, LOAD_LOG_SIZE);
	}
}

/* Load one program of the unit alone, in a fresh copy of its object: 0, or -errno with the
 * verifier's log in load_log and libbpf's messages in load_msgs.
 */
static int load_alone(struct loader *l, const struct loader_unit *u, const char *name)
{
	struct loader_unit t = { .ops = u->ops };
	struct bpf_program *prog;
	int err = u->ops->open(&t, l->paths, l->cfg);

	if (err)
		return err;
	bpf_object__for_each_program(prog, t.obj)
		bpf_program__set_autoload(prog, !strcmp(bpf_program__name(prog), name));
	set_log_bufs(t.obj);
	log_libbpf_capture(load_msgs, LOAD_MSGS_SIZE);
	err = bpf_object__load(t.obj);
	log_libbpf_capture(NULL, 0);
	u->ops->destroy(t.skel);
	return err;
}

/* After a failed load: which of the unit's programs cannot load, and why, one line each (the
 * full verifier log with --verbose). Returns how many.
 */
static unsigned int diagnose_unit(struct loader *l, const struct loader_unit *u)
{
	const struct kernel_features *kf = l->cfg->kf;
	struct bpf_program *prog;
	unsigned int bad = 0;

	bpf_object__for_each_program(prog, u->obj)
	{
		const char *name = bpf_program__name(prog);
		char why[512];

		if (!bpf_program__autoload(prog) || !load_alone(l, u, name))
			continue;
		loader__explain(load_log, load_msgs, why, sizeof(why));
		log_err("program '%s' (%s, object '%s') cannot load on Linux %s: %s", name,
			bpf_program__section_name(prog), u->ops->name, kf ? kf->release : "here",
			why);
		if (log_enabled(LOG_LVL_DEBUG))
			fprintf(stderr, "%s%s-- end of the log of '%s' --\n", load_msgs, load_log,
				name);
		bad++;
	}
	return bad;
}

/* Every program of this unit and the ones after it that cannot load; err is the unit's. */
static void diagnose(struct loader *l, unsigned int from, int err)
{
	unsigned int bad = 0;

	for (unsigned int i = from; i < l->nunits; i++)
		bad += diagnose_unit(l, l->units[i]);
	if (!bad) {
		log_err("failed to load BPF object '%s': %s (each of its programs loads alone)",
			l->units[from]->ops->name, strerror(-err));
		return;
	}
	log_err("%u program%s cannot load on this kernel; nothing new was attached%s", bad,
		bad == 1 ? "" : "s",
		log_enabled(LOG_LVL_DEBUG) ? "" : " (run with --verbose for the verifier logs)");
}

static int load_buffers(void)
{
	if (!load_log)
		load_log = malloc(LOAD_LOG_SIZE);
	if (!load_msgs)
		load_msgs = malloc(LOAD_MSGS_SIZE);
	return load_log && load_msgs ? 0 : -ENOMEM;
}

static int load_unit(struct loader *l, struct loader_unit *u)
{
	enum map_origin origins[LOADER_MAX_MAPS];
	struct bpf_program *prog;
	struct bpf_map *map;
	unsigned int i = 0;
	int err;

	bpf_object__for_each_program(prog, u->obj)
	{
		if (!is_run_only(prog) && !prog_spec(bpf_program__name(prog))) {
			log_err("program '%s' in object '%s' is missing from loader_progs",
				bpf_program__name(prog), u->ops->name);
			return -EINVAL;
		}
	}
	bpf_object__for_each_map(map, u->obj)
	{
		if (bpf_map__is_internal(map) || i >= LOADER_MAX_MAPS)
			continue;
		err = prepare_map(l, map, &origins[i++]);
		if (err) {
			log_err("failed to adopt map '%s': %s", bpf_map__name(map), strerror(-err));
			return err;
		}
	}
	set_log_bufs(u->obj);
	log_libbpf_capture(load_msgs, LOAD_MSGS_SIZE);
	err = bpf_object__load(u->obj);
	log_libbpf_capture(NULL, 0);
	if (err) {
		u->load_failed = true;
		return err;
	}
	i = 0;
	bpf_object__for_each_map(map, u->obj)
	{
		struct loader_map *m;

		if (bpf_map__is_internal(map))
			continue;
		if (map_entry(l, bpf_map__name(map)) || i >= LOADER_MAX_MAPS) {
			i++;
			continue;
		}
		if (l->nmaps >= LOADER_MAX_MAPS)
			return -E2BIG;
		m = &l->maps[l->nmaps++];
		snprintf(m->name, sizeof(m->name), "%s", bpf_map__name(map));
		m->fd = bpf_map__fd(map);
		m->origin = origins[i++];
	}
	return 0;
}

int loader__load(struct loader *l)
{
	int err = load_buffers();

	for (unsigned int i = 0; !err && i < l->nunits; i++) {
		err = load_unit(l, l->units[i]);
		if (err && l->units[i]->load_failed)
			diagnose(l, i, err);
	}
	free(load_log);
	free(load_msgs);
	load_log = load_msgs = NULL;
	return err;
}

enum link_state {
	LINK_OURS,    /* attached to our root cgroup with the right attach type */
	LINK_STALE,   /* its cgroup is gone, or it was detached */
	LINK_FOREIGN, /* attached to another cgroup */
};

static int link_state(int fd, const struct loader *l, const struct egret_prog_spec *spec,
		      enum link_state *state)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (!spec->cgroup) {
		*state = LINK_OURS;
		return 0;
	}
	if (info.type != BPF_LINK_TYPE_CGROUP || info.cgroup.cgroup_id == 0)
		*state = LINK_STALE;
	else if (info.cgroup.cgroup_id != l->paths->root_id ||
		 info.cgroup.attach_type != spec->attach_type)
		*state = LINK_FOREIGN;
	else
		*state = LINK_OURS;
	return 0;
}

/* Swap prog into the pinned link at pin; -ENOENT when there is no usable pinned link. */
static int attach_new(struct loader *l, struct bpf_program *prog,
		      const struct egret_prog_spec *spec, const char *pin);

/* Tracepoint links cannot be updated in place: attach the new program beside the old one, move
 * the pin over with rename(2), then let the old link go. Both run for a moment; neither is
 * ever missing.
 */
static int replace_link(struct loader *l, struct bpf_program *prog,
			const struct egret_prog_spec *spec, const char *pin, int old_fd)
{
	char tmp[PATH_MAX + 8];
	int err;

	snprintf(tmp, sizeof(tmp), "%s_next", pin); /* bpffs names take no dots */
	unlink(tmp);
	err = attach_new(l, prog, spec, tmp);
	if (err)
		return err;
	if (rename(tmp, pin)) {
		err = -errno;
		log_err("failed to move pin %s to %s: %s", tmp, pin, strerror(errno));
		return err;
	}
	close(old_fd);
	l->adopted++;
	return 0;
}

static int adopt_link(struct loader *l, struct bpf_program *prog,
		      const struct egret_prog_spec *spec, const char *pin)
{
	enum link_state state = LINK_STALE;
	int fd, err;

	fd = bpf_obj_get(pin);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	err = link_state(fd, l, spec, &state);
	if (!err && state == LINK_FOREIGN) {
		log_err("pinned link %s is attached to another cgroup than %s: give each cgroup "
			"root its own --state-dir",
			pin, l->paths->cgroup_root);
		err = -EXDEV;
	} else if (!err && state == LINK_STALE) {
		log_info("pinned link %s is no longer attached: replacing it", pin);
		unlink(pin);
		err = -ENOENT;
	} else if (!err && !spec->cgroup) {
		err = replace_link(l, prog, spec, pin, fd);
		return err ? (close(fd), err) : 0;
	} else if (!err && bpf_link_update(fd, bpf_program__fd(prog), NULL)) {
		err = -errno;
		log_err("failed to update pinned link %s with '%s' on %s: %s", pin, spec->name,
			l->paths->cgroup_root, strerror(errno));
	}
	if (err) {
		close(fd);
		return err;
	}
	l->link_fds[l->nlinks++] = fd;
	l->adopted++;
	return 0;
}

static int attach_new(struct loader *l, struct bpf_program *prog,
		      const struct egret_prog_spec *spec, const char *pin)
{
	struct bpf_link *link;
	int err;

	if (spec->cgroup)
		link = bpf_program__attach_cgroup(prog, l->cgroup_fd);
	else
		link = bpf_program__attach(prog);
	if (!link) {
		err = -errno;
		if (spec->cgroup)
			log_err("failed to attach '%s' to %s: %s", spec->name,
				l->paths->cgroup_root, strerror(-err));
		else
			log_err("failed to attach '%s' to its tracepoint (%s): %s", spec->name,
				bpf_program__section_name(prog), strerror(-err));
		return err;
	}
	err = bpf_link__pin(link, pin);
	if (err) {
		log_err("failed to pin link '%s' at %s: %s", spec->name, pin, strerror(-err));
		bpf_link__destroy(link);
		return err;
	}
	/* keep the fd in our table; a disconnected bpf_link is freed without closing it */
	l->link_fds[l->nlinks++] = bpf_link__fd(link);
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	return 0;
}

static int attach_prog(struct loader *l, struct bpf_program *prog)
{
	const struct egret_prog_spec *spec = prog_spec(bpf_program__name(prog));
	char pin[PATH_MAX];
	int err;

	if (l->nlinks >= LOADER_MAX_PROGS)
		return -E2BIG;
	err = paths__state(l->paths, pin, sizeof(pin), "links", spec->name);
	if (err)
		return err;
	err = adopt_link(l, prog, spec, pin);
	if (err == -ENOENT)
		err = attach_new(l, prog, spec, pin);
	if (!err)
		l->attached++;
	return err;
}

/* Pin the maps this load created, replacing incompatible pins now that no program uses them. */
static int pin_maps(struct loader *l)
{
	char pin[PATH_MAX];

	for (unsigned int i = 0; i < l->nmaps; i++) {
		struct loader_map *m = &l->maps[i];

		if (m->origin == MAP_REUSED)
			continue;
		if (paths__state(l->paths, pin, sizeof(pin), "maps", m->name))
			return -ENAMETOOLONG;
		if (m->origin == MAP_REPLACED)
			unlink(pin);
		if (bpf_obj_pin(m->fd, pin)) {
			int err = -errno;

			log_err("failed to pin map '%s' at %s: %s", m->name, pin, strerror(errno));
			return err;
		}
		m->origin = MAP_REUSED;
	}
	return 0;
}

static bool is_current_map(const struct loader *l, const char *name)
{
	return map_entry((struct loader *)l, name) != NULL;
}

/* a program this egretd attached (not one this kernel does without) */
static bool is_current_prog(const struct loader *l, const char *name)
{
	for (unsigned int i = 0; i < l->nunits; i++) {
		struct bpf_program *prog = bpf_object__find_program_by_name(l->units[i]->obj, name);

		if (prog && bpf_program__autoload(prog))
			return true;
	}
	return false;
}

static __u32 link_id(int fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* a second pin of a link in force (a pin renamed, which the keeper put back under its name) */
static bool is_current_link(const struct loader *l, int fd)
{
	__u32 id = link_id(fd);

	for (unsigned int i = 0; id && i < l->nlinks; i++) {
		if (link_id(l->link_fds[i]) == id)
			return true;
	}
	return false;
}

/* Links pinned by an older egretd for programs this one no longer has would go on enforcing a
 * policy nobody updates: detach them, now that everything current is in force.
 */
static void drop_stale_pins(struct loader *l)
{
	char dir[PATH_MAX], pin[PATH_MAX * 2];
	struct dirent *de;
	DIR *d;

	if (paths__state(l->paths, dir, sizeof(dir), "links", NULL))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd;

		if (de->d_name[0] == '.' || is_current_prog(l, de->d_name))
			continue;
		snprintf(pin, sizeof(pin), "%s/%s", dir, de->d_name);
		fd = bpf_obj_get(pin);
		if (fd >= 0 && is_current_link(l, fd)) {
			close(fd);
			unlink(pin);
			log_info("removed %s, another pin of a link in force", pin);
			continue;
		}
		if (fd >= 0) {
			bpf_link_detach(fd);
			close(fd);
		}
		unlink(pin);
		log_info("detached stale link %s", pin);
	}
	closedir(d);
	/* maps of an older layout, used by nothing now */
	if (paths__state(l->paths, dir, sizeof(dir), "maps", NULL) || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || is_current_map(l, de->d_name) ||
		    !strcmp(de->d_name, FEATURES_MAP))
			continue;
		snprintf(pin, sizeof(pin), "%s/%s", dir, de->d_name);
		unlink(pin);
		log_info("removed stale map pin %s", pin);
	}
	closedir(d);
}

int loader__attach(struct loader *l)
{
	struct bpf_program *prog;
	int err;

	for (unsigned int i = 0; i < l->nunits; i++) {
		bpf_object__for_each_program(prog, l->units[i]->obj)
		{
			if (!bpf_program__autoload(prog) || is_run_only(prog))
				continue;
			err = attach_prog(l, prog);
			if (err)
				return err;
		}
	}
	err = pin_maps(l);
	if (err)
		return err;
	drop_stale_pins(l);
	return 0;
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
		l->units[i]->ops->destroy(l->units[i]->skel);
	if (l->cgroup_fd >= 0)
		close(l->cgroup_fd);
	memset(l, 0, sizeof(*l));
	l->cgroup_fd = -1;
}

static int prog_name_by_id(__u32 id, char *name, size_t size)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id), err = 0;

	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	else
		snprintf(name, size, "%s", info.name);
	close(fd);
	return err;
}

static bool cgroup_has_prog(int cgroup_fd, const struct egret_prog_spec *spec)
{
	__u32 ids[64], cnt = ARRAY_SIZE(ids);
	char name[BPF_OBJ_NAME_LEN];

	if (bpf_prog_query(cgroup_fd, spec->attach_type, 0, NULL, ids, &cnt))
		return false;
	for (__u32 i = 0; i < cnt; i++) {
		if (prog_name_by_id(ids[i], name, sizeof(name)) == 0 &&
		    strcmp(name, spec->name) == 0)
			return true;
	}
	return false;
}

static bool pin_has_prog(const struct egret_paths *paths, const struct egret_prog_spec *spec)
{
	struct bpf_link_info info = {};
	char pin[PATH_MAX], name[BPF_OBJ_NAME_LEN];
	__u32 len = sizeof(info);
	bool ok = false;
	int fd;

	if (paths__state(paths, pin, sizeof(pin), "links", spec->name))
		return false;
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return false;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
	    prog_name_by_id(info.prog_id, name, sizeof(name)) == 0)
		ok = strcmp(name, spec->name) == 0;
	close(fd);
	return ok;
}

/* Number of egret programs not in force on the root cgroup (0: fully protected), their names
 * space-separated in missing; a negative errno when the kernel cannot be asked.
 */
int loader__check(const struct egret_paths *paths, char *missing, size_t size)
{
	size_t used = 0;
	int fd, n = 0;

	missing[0] = '\0';
	fd = open(paths->cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	const struct egret_prog_spec *specs;
	struct kernel_features kf;
	unsigned int nsp;
	bool have_kf;

	if (loader__specs(&specs, &nsp)) {
		close(fd);
		return -EINVAL;
	}
	have_kf = kfeatures__read_pinned(paths, &kf) == 0;
	for (unsigned int i = 0; i < nsp; i++) {
		const struct egret_prog_spec *spec = &specs[i];
		bool ok = spec->cgroup ? cgroup_has_prog(fd, spec) : pin_has_prog(paths, spec);

		/* a program egretd did not load on this kernel, on purpose, is not missing */
		if (ok || (have_kf && kfeatures__prog_skipped(&kf, spec->name)))
			continue;
		n++;
		used += snprintf(missing + used, used < size ? size - used : 0, "%s%s",
				 used ? " " : "", spec->name);
	}
	close(fd);
	return n;
}

/* The programs egretd attaches on this kernel: all but those its pinned kernel_features
 * record says it did without.
 */
unsigned int loader__nexpected(const struct egret_paths *paths)
{
	struct kernel_features kf;
	unsigned int n = loader__nprogs(), skipped = 0;

	if (kfeatures__read_pinned(paths, &kf) == 0)
		skipped = kfeatures__nskipped(&kf);
	return skipped < n ? n - skipped : 0;
}

/* Detach every pinned link (BPF_LINK_DETACH takes effect even while egretd still holds the
 * link) and remove the pins of links and maps.
 */
int loader__uninstall(const struct egret_paths *paths)
{
	static const char *const subs[] = { "links", "maps" };
	char dir[PATH_MAX], pin[PATH_MAX * 2];
	int err = 0;

	for (unsigned int s = 0; s < ARRAY_SIZE(subs); s++) {
		struct dirent *de;
		DIR *d;

		if (paths__state(paths, dir, sizeof(dir), subs[s], NULL))
			return -ENAMETOOLONG;
		d = opendir(dir);
		if (!d) {
			if (errno != ENOENT)
				err = -errno;
			continue;
		}
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(pin, sizeof(pin), "%s/%s", dir, de->d_name);
			if (s == 0) {
				int fd = bpf_obj_get(pin);

				/* tracepoint links cannot be detached: unpinning releases them */
				if (fd >= 0 && bpf_link_detach(fd) && errno != EINVAL &&
				    errno != EOPNOTSUPP)
					err = -errno;
				if (fd >= 0)
					close(fd);
			}
			if (unlink(pin) && !err)
				err = -errno;
		}
		closedir(d);
		rmdir(dir);
	}
	if (!paths__state(paths, pin, sizeof(pin), KEEPER_LINK, NULL))
		unlink(pin);
	rmdir(paths->state_dir);
	return err;
}

/* A pinned map of a running or past egretd, for egretctl's counters; -errno on failure. */
int loader__pinned_map(const struct egret_paths *paths, const char *name)
{
	char pin[PATH_MAX];
	int fd;

	if (paths__state(paths, pin, sizeof(pin), "maps", name))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(pin);
	return fd < 0 ? -errno : fd;
}
