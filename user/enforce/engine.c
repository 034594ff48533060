/* The policy engine: see engine.h. Order of every change: parse, compile-check, build the new
 * trie beside the one in force, persist live rules (tmp file, fsync, rename), swap. A failure
 * at any step leaves the rule set in force and the live-rules file as they were. The control
 * socket's commands on the engine are in engine_cmd.c.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/types.h>

#include "egret/policy.h"
#include "engine.h"
#include "engine_int.h"
#include "fileperm.h"
#include "log.h"
#include "policy_map.h"
#include "util.h"

int engine__init(struct engine *e, const char *policy_path, const char *live_path,
		 const struct egret_paths *paths, const struct engine_maps *maps)
{
	memset(e, 0, sizeof(*e));
	e->policy_path = policy_path;
	e->live_path = live_path;
	e->paths = paths;
	e->cgroup_root = paths->cgroup_root;
	e->outer_fd = maps->outer_fd;
	e->sandboxes_fd = maps->sandboxes_fd;
	e->rule_names_fd = maps->rule_names_fd;
	e->meta_fd = maps->meta_fd;
	e->budgets_fd = maps->budgets_fd;
	e->budget_n_fd = maps->budget_n_fd;
	e->trie_fd = -1;
	policy__init(&e->pol);
	return sandbox_names__init(&e->reg, e->cgroup_root);
}

void engine__free(struct engine *e)
{
	if (e->trie_fd >= 0)
		close(e->trie_fd);
	e->trie_fd = -1;
	policy__free(&e->pol);
	sandbox_names__free(&e->reg);
}

const char *engine__installed_name(const struct engine *e, uint64_t id)
{
	const struct sandbox_entry *s = sandbox_names__entry(&e->reg, id);

	return s && (s->flags & ENGINE_SB_INSTALLED) ? s->name : NULL;
}

static bool entry_installed(const struct sandbox_entry *s)
{
	return s->id && (s->flags & ENGINE_SB_INSTALLED);
}

/* Flag the registry's entry of id as installed or not. */
void engine__mark_installed(struct engine *e, uint64_t id, bool on)
{
	struct sandbox_entry *s = sandbox_names__entry(&e->reg, id);

	if (!s || !!(s->flags & ENGINE_SB_INSTALLED) == on)
		return;
	s->flags ^= ENGINE_SB_INSTALLED;
	if (on)
		e->installed++;
	else
		e->installed--;
	engine__budget_one(e, s);
	engine__limits_one(e, s);
}

void engine__emit_change(struct engine *e, const char *action, const char *actor,
			 const struct ucred *cr, const char *detail, const char *sandbox,
			 const char *before, const char *error)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__PolicyChange pc = EGRET__V1__POLICY_CHANGE__INIT;

	if (!e->stream)
		return;
	pc.action = (char *)action;
	pc.actor = (char *)actor;
	pc.actor_uid = cr ? cr->uid : 0;
	pc.actor_pid = cr ? (uint32_t)cr->pid : (uint32_t)getpid();
	pc.detail = (char *)(detail ? detail : "");
	pc.sandbox = (char *)(sandbox ? sandbox : "");
	pc.before_hash = (char *)before;
	pc.after_hash = e->hash;
	pc.ok = error == NULL;
	pc.error = (char *)(error ? error : "");
	pc.rules = (uint32_t)e->pol.n;
	pc.mode = (char *)policy__mode_name(e->pol.mode);
	ev.class_uid = OCSF_DEVICE_CONFIG_CHANGE;
	ev.activity_id = OCSF_CONFIG_ACTIVITY_CHANGE;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE;
	ev.policy_change = &pc;
	stream__emit(e->stream, &ev);
}

/* A new trie holding the global rules and those of every registered sandbox. */
static int build_trie(struct engine *e, const struct policy *p, char *err, size_t errsz)
{
	int fd = policy_map__create(), ret;

	if (fd < 0) {
		snprintf(err, errsz, "cannot create a rule map: %s", strerror(-fd));
		return fd;
	}
	ret = policy_map__install(fd, p, NULL, NULL, 0, err, errsz);
	for (size_t i = 0; !ret && i < sandbox_names__slots(&e->reg); i++) {
		const struct sandbox_entry *s = sandbox_names__at(&e->reg, i);

		if (s && entry_installed(s))
			ret = policy_map__install(fd, p, s->name, s->meta, s->id, err, errsz);
		if (ret && s)
			engine__prefix_err(err, errsz, s);
	}
	if (ret) {
		close(fd);
		return ret;
	}
	return fd;
}

/* Write the live rules of p to the live-rules file: tmp file, fsync, rename. */
static int write_live(const struct engine *e, const struct policy *p, char *err, size_t errsz)
{
	char tmp[PATH_MAX], dir[PATH_MAX];
	FILE *f;
	int fd, ret;

	snprintf(dir, sizeof(dir), "%s", e->live_path);
	ret = mkdir_p(dirname(dir), 0750);
	if (ret) {
		snprintf(err, errsz, "cannot create the directory of %s: %s", e->live_path,
			 strerror(-ret));
		return ret;
	}
	snprintf(tmp, sizeof(tmp), "%s.tmp", e->live_path);
	/* 0600 whatever the umask, and never through a symlink left at the tmp name */
	unlink(tmp);
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		ret = -errno;
		snprintf(err, errsz, "cannot write %s: %s", tmp, strerror(errno));
		if (fd >= 0)
			close(fd);
		return ret;
	}
	ret = policy__write_live(p, f);
	if (ret)
		goto out_close;
	if (fflush(f) || fsync(fileno(f))) {
		ret = -errno;
		goto out_close;
	}
	if (fclose(f)) {
		ret = -errno;
		goto out_unlink;
	}
	if (rename(tmp, e->live_path)) {
		ret = -errno;
		goto out_unlink;
	}
	return 0;
out_close:
	fclose(f);
out_unlink:
	unlink(tmp);
	snprintf(err, errsz, "cannot save live rules to %s: %s", e->live_path, strerror(-ret));
	return ret;
}

bool engine__has_rules(const struct policy *p, const struct sandbox_entry *s)
{
	return policy__selects(p, s->name, s->meta);
}

int engine__register_id(struct engine *e, uint64_t id, bool rules)
{
	struct egret_sandbox v = { .flags = rules ? EGRET_SB_RULES : 0 };
	const struct sandbox_entry *s = sandbox_names__entry(&e->reg, id);

	if (s && (s->flags & ENGINE_SB_EXEMPT))
		v.flags = EGRET_SB_HOST;

	return bpf_map_update_elem(e->sandboxes_fd, &id, &v, BPF_ANY) ? -errno : 0;
}

/* "sandbox NAME: " before err, for an error of one sandbox's rules */
void engine__prefix_err(char *err, size_t errsz, const struct sandbox_entry *s)
{
	char msg[POLICY_ERR_LEN];

	snprintf(msg, sizeof(msg), "sandbox %s: %s", s->name, err);
	snprintf(err, errsz, "%s", msg);
}

/* Before a swap, flag the registered sandboxes that have rules in p (a flag over a scope with
 * no entries yet is harmless); after it, unflag those that have none.
 */
static void flag_sandboxes(struct engine *e, const struct policy *p, bool unflag)
{
	for (size_t i = 0; i < sandbox_names__slots(&e->reg); i++) {
		const struct sandbox_entry *s = sandbox_names__at(&e->reg, i);
		bool rules;

		if (!s || !entry_installed(s))
			continue;
		rules = engine__has_rules(p, s);
		if (rules != unflag)
			engine__register_id(e, s->id, rules);
	}
}

/* Tell the kernel which sandbox names have rules of their own (it registers the others at
 * mkdir). Names are added before the swap and dropped after it, so at no moment does a sandbox
 * with rules register without them.
 */
static void sync_rule_names(struct engine *e, const struct policy *p, bool drop_others)
{
	const char **names = NULL;
	uint64_t key, next, h;
	bool have = false;
	__u8 one = 1;
	size_t n = 0;

	if (policy__sandboxes(p, &names, &n))
		return;
	for (size_t i = 0; !drop_others && i < n; i++) {
		if (!sandbox__selector_is_name(names[i]))
			continue; /* selects registered containers only: they wait for egretd */
		h = sandbox__name_hash(names[i]);
		bpf_map_update_elem(e->rule_names_fd, &h, &one, BPF_ANY);
	}
	while (drop_others &&
	       bpf_map_get_next_key(e->rule_names_fd, have ? &key : NULL, &next) == 0) {
		bool wanted = false;

		for (size_t i = 0; i < n && !wanted; i++)
			wanted = sandbox__selector_is_name(names[i]) &&
				 sandbox__name_hash(names[i]) == next;
		if (wanted) {
			key = next;
			have = true;
		} else {
			bpf_map_delete_elem(e->rule_names_fd, &next);
		}
	}
	free(names);
}

int engine__commit(struct engine *e, struct policy *p, bool save_live, char *err, size_t errsz)
{
	int fd, ret;

	if (e->no_enforce && p->mode == POLICY_ENFORCE) {
		snprintf(err, errsz,
			 "enforce mode refused: this kernel lacks what protection %s needs (start "
			 "egretd with --accept-kernel-gap %s to enforce without it)",
			 e->no_enforce, e->no_enforce);
		return -EOPNOTSUPP;
	}
	policy__renumber(p);
	ret = policy_map__check(p, err, errsz);
	if (!ret)
		ret = engine__limits_check(e, p, err, errsz);
	if (ret)
		return ret;
	fd = build_trie(e, p, err, errsz);
	if (fd < 0)
		return fd;
	if (save_live && (ret = write_live(e, p, err, errsz))) {
		close(fd);
		return ret;
	}
	sync_rule_names(e, p, false);
	flag_sandboxes(e, p, false);
	ret = policy_map__swap(e->outer_fd, fd);
	if (ret) {
		snprintf(err, errsz, "cannot swap the rule map in: %s", strerror(-ret));
		close(fd);
		return ret;
	}
	flag_sandboxes(e, p, true);
	sync_rule_names(e, p, true);
	if (e->trie_fd >= 0)
		close(e->trie_fd);
	e->trie_fd = fd;
	policy__free(&e->pol);
	e->pol = *p;
	policy__init(p);
	policy__hash(&e->pol, e->hash);
	e->changes++;
	engine__sync_budgets(e);
	engine__sync_limits(e);
	return 0;
}

/* what the policy in force gives sandbox s; false: no egress budget */
static bool egress_budget_of(const struct engine *e, const struct sandbox_entry *s,
			     struct egret_budget *out)
{
	const struct policy_budget *per = policy__budget(&e->pol, BUDGET_EGRESS, s->name, s->meta);
	const struct policy_budget *all =
		policy__budget(&e->pol, BUDGET_EGRESS_TOTAL, s->name, s->meta);
	const struct policy_budget *rate =
		policy__budget(&e->pol, BUDGET_EGRESS_RATE, s->name, s->meta);

	memset(out, 0, sizeof(*out));
	if (per) {
		out->period_bytes = per->amount;
		out->period_ns = (uint64_t)per->period_s * 1000000000ull;
	}
	if (all)
		out->total_bytes = all->amount;
	if (rate) {
		/* bytes a second, rounded up; a burst of a second's, at least one packet of 64 KiB */
		out->rate_bps = (rate->amount + rate->period_s - 1) / rate->period_s;
		out->burst_ns = out->rate_bps >= 65536 ? 1000000000ull
						       : 65536 * 1000000000ull / out->rate_bps;
	}
	return per || all || rate;
}

void engine__budget_one(struct engine *e, const struct sandbox_entry *s)
{
	struct egret_budget want, have;

	if (e->budgets_fd < 0 || !s->id)
		return;
	if (!entry_installed(s) || !egress_budget_of(e, s, &want)) {
		bpf_map_delete_elem(e->budgets_fd, &s->id);
		return;
	}
	if (bpf_map_lookup_elem(e->budgets_fd, &s->id, &have) == 0) {
		if (have.period_bytes == want.period_bytes && have.period_ns == want.period_ns &&
		    have.total_bytes == want.total_bytes && have.rate_bps == want.rate_bps)
			return;
		/* a new budget counts on from what was sent (a new period length, afresh) */
		if (have.period_ns == want.period_ns) {
			want.window = have.window;
			want.used = have.used;
		}
		want.total_used = have.total_used;
		want.dropped = have.dropped;
		/* the same rate keeps its bucket (another budget changed); a new rate starts from a
		 * full one; a spell of drops goes on either way
		 */
		if (have.rate_bps == want.rate_bps)
			want.tat_ns = have.tat_ns;
		want.rate_drop_ns = have.rate_drop_ns;
		want.rate_refused = have.rate_refused;
	}
	if (bpf_map_update_elem(e->budgets_fd, &s->id, &want, BPF_ANY))
		log_err("sandbox %s: cannot set its egress budget in the kernel: %s", s->name,
			strerror(errno));
}

void engine__sync_budgets(struct engine *e)
{
	uint64_t key, next, on = 0;
	__u32 zero = 0;
	bool have = false;

	if (e->budgets_fd < 0 || e->budget_n_fd < 0)
		return;
	for (size_t i = 0; i < e->pol.nbudgets; i++)
		on |= e->pol.budgets[i].kind == BUDGET_EGRESS ||
		      e->pol.budgets[i].kind == BUDGET_EGRESS_TOTAL ||
		      e->pol.budgets[i].kind == BUDGET_EGRESS_RATE;
	/* budgets in the kernel before the switch that makes packets look at them; off first */
	if (!on)
		bpf_map_update_elem(e->budget_n_fd, &zero, &on, BPF_ANY);
	for (size_t i = 0; i < sandbox_names__slots(&e->reg); i++) {
		const struct sandbox_entry *s = sandbox_names__at(&e->reg, i);

		if (s)
			engine__budget_one(e, s);
	}
	while (bpf_map_get_next_key(e->budgets_fd, have ? &key : NULL, &next) == 0) {
		const struct sandbox_entry *s = sandbox_names__entry(&e->reg, next);

		if (on && s && entry_installed(s)) {
			key = next;
			have = true;
		} else {
			bpf_map_delete_elem(e->budgets_fd, &next);
		}
	}
	if (on && bpf_map_update_elem(e->budget_n_fd, &zero, &on, BPF_ANY))
		log_err("cannot switch the kernel's egress budgets on: %s", strerror(errno));
}

/* A policy or live-rules file, opened only when nobody but root could have written it (see
 * fileperm.h); -ENOENT when it is missing.
 */
static int parse_checked(struct policy *out, const char *what, const char *path, bool live,
			 char *err, size_t errsz)
{
	int fd = fileperm__open(what, path, NULL, err, errsz), ret;
	FILE *f;

	if (fd < 0)
		return fd;
	f = fdopen(fd, "r");
	if (!f) {
		ret = -errno;
		close(fd);
		snprintf(err, errsz, "%s %s: %s", what, path, strerror(-ret));
		return ret;
	}
	ret = policy__parse(out, path, f, live, err, errsz);
	fclose(f);
	return ret;
}

/* What the policy file's path names now, to see it change. */
static void policy_seen(const struct engine *e, struct engine_file_seen *out)
{
	struct stat st;

	memset(out, 0, sizeof(*out));
	if (stat(e->policy_path, &st))
		return;
	out->dev = st.st_dev;
	out->ino = st.st_ino;
	out->size = (uint64_t)st.st_size;
	out->mtime_ns = (uint64_t)st.st_mtim.tv_sec * 1000000000ull + (uint64_t)st.st_mtim.tv_nsec;
	out->ctime_ns = (uint64_t)st.st_ctim.tv_sec * 1000000000ull + (uint64_t)st.st_ctim.tv_nsec;
}

void engine__reload_if_changed(struct engine *e)
{
	struct engine_file_seen now;
	char err[POLICY_ERR_LEN];

	policy_seen(e, &now);
	if (!memcmp(&now, &e->seen, sizeof(now)))
		return;
	if (!engine__reload(e, "egretd: the policy file changed", NULL, false, err, sizeof(err)))
		log_info("policy %s changed: reloaded, %zu rules, rule set %s", e->policy_path,
			 e->pol.n, e->hash);
	else
		log_err("policy %s changed but is refused (the rules in force stay): %s",
			e->policy_path, err);
	e->seen = now; /* a refused file is not read again until it changes again */
}

/* The policy file's rules plus the live rules of live (if any). */
static int read_policy(struct engine *e, struct policy *out, const struct policy *live, char *err,
		       size_t errsz)
{
	int ret;

	policy_seen(e, &e->seen);
	policy__init(out);
	ret = parse_checked(out, "policy", e->policy_path, false, err, errsz);
	for (size_t i = 0; !ret && live && i < live->n; i++) {
		if (live->rules[i].live)
			ret = policy__add(out, &live->rules[i]);
	}
	if (ret)
		policy__free(out);
	return ret;
}

bool engine__sandbox_dir_id(const struct engine *e, const char *name, uint64_t *id)
{
	char path[PATH_MAX];
	struct stat st;

	if (join_path(path, sizeof(path), e->cgroup_root, name) || stat(path, &st) ||
	    !S_ISDIR(st.st_mode))
		return false;
	*id = st.st_ino;
	return true;
}

/* Drop registrations of sandboxes that are gone (left by an earlier egretd). */
static void unregister_stale(struct engine *e)
{
	uint64_t kept = 0, next;
	bool have_kept = false;

	while (bpf_map_get_next_key(e->sandboxes_fd, have_kept ? &kept : NULL, &next) == 0) {
		const struct sandbox_entry *s = sandbox_names__entry(&e->reg, next);

		if (engine__installed_name(e, next) || (s && (s->flags & ENGINE_SB_EXEMPT))) {
			kept = next;
			have_kept = true;
		} else {
			bpf_map_delete_elem(e->sandboxes_fd, &next);
		}
	}
}

/* Load the policy file and the live rules, and put them in force for every sandbox that exists
 * now. Called before the programs are attached: there is a rule set before anything enforces.
 */
int engine__start(struct engine *e)
{
	char err[POLICY_ERR_LEN];
	struct policy p, live;
	int ret;

	policy__init(&live);
	ret = parse_checked(&live, "live rules", e->live_path, true, err, sizeof(err));
	if (ret && ret != -ENOENT) {
		if (str_starts_with(err, "live rules "))
			log_err("%s", err); /* StrictModes: names the file, its owner and mode */
		else
			log_err("live rules: %s (fix or remove the file; egretd rewrites it on "
				"every edit)",
				err);
		policy__free(&live);
		return ret;
	}
	ret = read_policy(e, &p, &live, err, sizeof(err));
	policy__free(&live);
	if (ret) {
		if (str_starts_with(err, "policy "))
			log_err("%s", err); /* already names the file */
		else
			log_err("policy: %s", err);
		return ret;
	}
	sandbox_names__scan(&e->reg);
	engine__load_registrations(e);
	for (size_t i = 0; i < sandbox_names__slots(&e->reg); i++) {
		struct sandbox_entry *s = sandbox_names__at(&e->reg, i);

		if (s && !(s->flags & ENGINE_SB_EXEMPT) && engine__claims(e, &p, s, false))
			engine__mark_installed(e, s->id, true);
	}
	ret = engine__commit(e, &p, false, err, sizeof(err));
	policy__free(&p);
	if (ret) {
		log_err("policy %s: %s", e->policy_path, err);
		return ret;
	}
	for (size_t i = 0; i < sandbox_names__slots(&e->reg); i++) {
		const struct sandbox_entry *s = sandbox_names__at(&e->reg, i);

		if (s && (entry_installed(s) || (s->flags & ENGINE_SB_EXEMPT)) &&
		    engine__register_id(e, s->id,
					entry_installed(s) && engine__has_rules(&e->pol, s)))
			log_err("cannot register sandbox %s: %s", s->name, strerror(errno));
	}
	unregister_stale(e);
	log_info("policy %s: mode %s, %zu rules (%zu live), %zu sandboxes", e->policy_path,
		 policy__mode_name(e->pol.mode), e->pol.n, policy__count(&e->pol, true, NULL),
		 e->installed);
	return 0;
}

/* The rule set loaded at start, as the stream's first PolicyChange. */
void engine__announce(struct engine *e)
{
	engine__emit_change(e, "load", "egretd", NULL, e->policy_path, NULL, "", NULL);
}

void engine__sandbox_created(struct engine *e, uint64_t id, const char *name)
{
	const struct sandbox_entry *s;
	char err[POLICY_ERR_LEN];
	uint64_t real;

	if (engine__installed_name(e, id))
		return;
	/* trust the directory, not the event: the name may have been cut or reused */
	if (!engine__sandbox_dir_id(e, name, &real) || real != id)
		return;
	if (policy_map__install(e->trie_fd, &e->pol, name, NULL, id, err, sizeof(err))) {
		log_err("sandbox %s stays without network: %s", name, err);
		return;
	}
	s = &(struct sandbox_entry){ .id = id };
	snprintf(((struct sandbox_entry *)s)->name, sizeof(s->name), "%s", name);
	if (engine__register_id(e, id, engine__has_rules(&e->pol, s))) {
		log_err("cannot register sandbox %s: %s", name, strerror(errno));
		policy_map__remove(e->trie_fd, &e->pol, name, NULL, id);
		return;
	}
	sandbox_names__set(&e->reg, id, name);
	engine__mark_installed(e, id, true);
	log_debug("sandbox %s (cgroup %llu) registered", name, (unsigned long long)id);
}

void engine__sandbox_destroyed(struct engine *e, uint64_t id)
{
	const struct sandbox_entry *s = engine__sandbox(e, id);

	if (!s)
		return;
	engine__limits_gone(e, id);
	bpf_map_delete_elem(e->sandboxes_fd, &id);
	bpf_map_delete_elem(e->meta_fd, &id);
	policy_map__remove(e->trie_fd, &e->pol, s->name, s->meta, id);
	/* the entry stays: the collector names the sandbox's last events with it */
	engine__mark_installed(e, id, false);
	if (e->sandbox_gone)
		e->sandbox_gone(e->sandbox_gone_ctx, id);
}

/* Register sandboxes created while nobody listened, forget those removed. */
void engine__rescan(struct engine *e)
{
	struct dirent *de;
	DIR *d = opendir(e->cgroup_root);
	uint64_t id;

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] != '.' && engine__sandbox_dir_id(e, de->d_name, &id))
			engine__sandbox_seen(e, id, de->d_name, false);
	}
	closedir(d);
	for (size_t i = 0; i < sandbox_names__slots(&e->reg); i++) {
		struct sandbox_entry *s = sandbox_names__at(&e->reg, i);

		if (s && entry_installed(s) && !engine__sandbox_exists(e, s))
			engine__sandbox_destroyed(e, s->id);
		else if (s && (s->flags & ENGINE_SB_EXEMPT) && !engine__sandbox_exists(e, s))
			engine__exempt_gone(e, s->id);
	}
}

int engine__reload(struct engine *e, const char *actor, const struct ucred *cr, bool discard_live,
		   char *err, size_t errsz)
{
	char before[65];
	struct policy p;
	int ret;

	memcpy(before, e->hash, sizeof(before));
	/* a file someone else could have written is refused, and the rules in force stay */
	ret = fileperm__check_instance(e->policy_path, e->live_path, e->spool_dir, err, errsz);
	if (ret)
		goto out;
	ret = read_policy(e, &p, discard_live ? NULL : &e->pol, err, errsz);
	if (ret)
		goto out;
	ret = engine__commit(e, &p, discard_live, err, errsz);
	policy__free(&p);
out:
	engine__emit_change(e, "reload", actor, cr, e->policy_path, NULL, before, ret ? err : NULL);
	return ret;
}

/* A reload egretd will not do for this requester: a refused PolicyChange, nothing changed. */
void engine__refuse_reload(struct engine *e, const char *actor, const struct ucred *cr,
			   const char *why)
{
	engine__emit_change(e, "reload", actor, cr, e->policy_path, NULL, e->hash, why);
}

/* Does a domain rule (text "example.com" or "*.example.com") cover name (lower case, no final
 * dot)? The wildcard covers names below the domain, not the domain itself.
 */
static bool domain_covers(const char *rule, const char *name)
{
	size_t rlen, nlen = strlen(name);

	if (strncmp(rule, "*.", 2))
		return strcmp(rule, name) == 0;
	rule += 1; /* ".example.com" */
	rlen = strlen(rule);
	return nlen > rlen && strcmp(name + nlen - rlen, rule) == 0;
}

/* The domain rules' verdict on name for a sandbox: EGRET_ACT_DENY, EGRET_ACT_ALLOW, or 0 when
 * no rule covers it. A deny beats an allow; the deciding rule's words go to rule.
 */
int engine__domain_verdict(const struct engine *e, const struct sandbox_entry *sandbox,
			   const char *name, char *rule, size_t size)
{
	int verdict = 0;

	rule[0] = '\0';
	for (size_t i = 0; i < e->pol.n; i++) {
		const struct rule *r = &e->pol.rules[i];

		if (r->kind != RULE_DOMAIN ||
		    (r->sandbox[0] &&
		     (!sandbox || !sandbox__selects(r->sandbox, sandbox->name, sandbox->meta))) ||
		    !domain_covers(r->domain, name) || verdict == EGRET_ACT_DENY)
			continue;
		if (verdict == 0 || r->action == EGRET_ACT_DENY) {
			verdict = r->action;
			rule__format(r, rule, size);
		}
	}
	return verdict;
}

/* The name of a registered sandbox, "" for the root cgroup itself, NULL when unknown. */
const char *engine__sandbox_name(const struct engine *e, uint64_t id)
{
	return id ? engine__installed_name(e, id) : "";
}

const struct sandbox_entry *engine__sandbox(const struct engine *e, uint64_t id)
{
	const struct sandbox_entry *s = id ? sandbox_names__entry(&e->reg, id) : NULL;

	return s && entry_installed(s) ? s : NULL;
}

const char *engine__rule_text(const struct engine *e, uint32_t id, char *buf, size_t size)
{
	ssize_t i = id ? policy__find_id(&e->pol, id) : -1;

	if (i < 0)
		return NULL;
	rule__format(&e->pol.rules[i], buf, size);
	return buf;
}

/* "uid 0 pid 4242 (egretctl)": who asked, with its command name from /proc */
void engine__actor_of(const struct ucred *cr, char *out, size_t size)
{
	char path[64], comm[64] = "?";
	int n;

	snprintf(path, sizeof(path), "/proc/%d/comm", cr->pid);
	n = read_file(path, comm, sizeof(comm));
	if (n > 0 && comm[n - 1] == '\n')
		comm[n - 1] = '\0';
	snprintf(out, size, "uid %u pid %d (%s)", cr->uid, cr->pid, comm);
}
