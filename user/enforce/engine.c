/* The policy engine: see engine.h. Order of every change: parse, compile-check, build the new
 * trie beside the one in force, persist live rules (tmp file, fsync, rename), swap. A failure
 * at any step leaves the rule set in force and the live-rules file as they were.
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
#include "fileperm.h"
#include "log.h"
#include "policy_map.h"
#include "util.h"

#define MAX_RULE_WORDS 64

int engine__init(struct engine *e, const char *policy_path, const char *live_path,
		 const char *cgroup_root, int outer_fd, int sandboxes_fd, int rule_names_fd)
{
	memset(e, 0, sizeof(*e));
	e->policy_path = policy_path;
	e->live_path = live_path;
	e->cgroup_root = cgroup_root;
	e->outer_fd = outer_fd;
	e->sandboxes_fd = sandboxes_fd;
	e->rule_names_fd = rule_names_fd;
	e->trie_fd = -1;
	policy__init(&e->pol);
	return sandbox_names__init(&e->reg, cgroup_root);
}

void engine__free(struct engine *e)
{
	if (e->trie_fd >= 0)
		close(e->trie_fd);
	e->trie_fd = -1;
	policy__free(&e->pol);
	sandbox_names__free(&e->reg);
}

/* The name of a sandbox whose rules are installed, NULL for any other. */
static const char *installed_name(const struct engine *e, uint64_t id)
{
	const struct sandbox_entry *s = sandbox_names__entry(&e->reg, id);

	return s && (s->flags & ENGINE_SB_INSTALLED) ? s->name : NULL;
}

static bool entry_installed(const struct sandbox_entry *s)
{
	return s->id && (s->flags & ENGINE_SB_INSTALLED);
}

/* Flag the registry's entry of id as installed or not. */
static void mark_installed(struct engine *e, uint64_t id, bool on)
{
	struct sandbox_entry *s = sandbox_names__entry(&e->reg, id);

	if (!s || !!(s->flags & ENGINE_SB_INSTALLED) == on)
		return;
	s->flags ^= ENGINE_SB_INSTALLED;
	if (on)
		e->installed++;
	else
		e->installed--;
}

static void emit_change(struct engine *e, const char *action, const char *actor,
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
	ret = policy_map__install(fd, p, NULL, 0, err, errsz);
	for (size_t i = 0; !ret && i < e->reg.cap; i++) {
		const struct sandbox_entry *s = &e->reg.slots[i];

		if (entry_installed(s))
			ret = policy_map__install(fd, p, s->name, s->id, err, errsz);
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
	if (!ret && (fflush(f) || fsync(fileno(f))))
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, e->live_path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		snprintf(err, errsz, "cannot save live rules to %s: %s", e->live_path,
			 strerror(-ret));
	}
	return ret;
}

static bool has_rules(const struct policy *p, const char *name)
{
	return policy__count(p, false, name) || policy__count(p, true, name);
}

/* Register a sandbox; its flags tell the kernel whether to look up its own scope. */
static int register_id(struct engine *e, uint64_t id, bool rules)
{
	struct egret_sandbox v = { .flags = rules ? EGRET_SB_RULES : 0 };

	return bpf_map_update_elem(e->sandboxes_fd, &id, &v, BPF_ANY) ? -errno : 0;
}

/* Before a swap, flag the registered sandboxes that have rules in p (a flag over a scope with
 * no entries yet is harmless); after it, unflag those that have none.
 */
static void flag_sandboxes(struct engine *e, const struct policy *p, bool unflag)
{
	for (size_t i = 0; i < e->reg.cap; i++) {
		const struct sandbox_entry *s = &e->reg.slots[i];
		bool rules;

		if (!entry_installed(s))
			continue;
		rules = has_rules(p, s->name);
		if (rules != unflag)
			register_id(e, s->id, rules);
	}
}

/* Tell the kernel which sandbox names have rules of their own (it registers the others at
 * mkdir). Names are added before the swap and dropped after it, so at no moment does a sandbox
 * with rules register without them.
 */
static void sync_rule_names(struct engine *e, const struct policy *p, bool drop_others)
{
	char(*names)[SANDBOX_NAME_MAX + 1] = NULL;
	uint64_t key, next, h;
	bool have = false;
	__u8 one = 1;
	size_t n = 0;

	if (policy__sandboxes(p, &names, &n))
		return;
	for (size_t i = 0; !drop_others && i < n; i++) {
		h = sandbox__name_hash(names[i]);
		bpf_map_update_elem(e->rule_names_fd, &h, &one, BPF_ANY);
	}
	while (drop_others &&
	       bpf_map_get_next_key(e->rule_names_fd, have ? &key : NULL, &next) == 0) {
		bool wanted = false;

		for (size_t i = 0; i < n && !wanted; i++)
			wanted = sandbox__name_hash(names[i]) == next;
		if (wanted) {
			key = next;
			have = true;
		} else {
			bpf_map_delete_elem(e->rule_names_fd, &next);
		}
	}
	free(names);
}

/* Put p (taken over on success) in force; on failure nothing changes. */
static int commit(struct engine *e, struct policy *p, bool save_live, char *err, size_t errsz)
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
	return 0;
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

/* The policy file's rules plus the live rules of live (if any). */
static int read_policy(struct engine *e, struct policy *out, const struct policy *live, char *err,
		       size_t errsz)
{
	int ret;

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

static bool sandbox_dir_id(const struct engine *e, const char *name, uint64_t *id)
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
		if (installed_name(e, next)) {
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
	for (size_t i = 0; i < e->reg.cap; i++)
		mark_installed(e, e->reg.slots[i].id, true);
	ret = commit(e, &p, false, err, sizeof(err));
	policy__free(&p);
	if (ret) {
		log_err("policy %s: %s", e->policy_path, err);
		return ret;
	}
	for (size_t i = 0; i < e->reg.cap; i++) {
		if (entry_installed(&e->reg.slots[i]) &&
		    register_id(e, e->reg.slots[i].id, has_rules(&e->pol, e->reg.slots[i].name)))
			log_err("cannot register sandbox %s: %s", e->reg.slots[i].name,
				strerror(errno));
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
	emit_change(e, "load", "egretd", NULL, e->policy_path, NULL, "", NULL);
}

void engine__sandbox_created(struct engine *e, uint64_t id, const char *name)
{
	char err[POLICY_ERR_LEN];
	uint64_t real;

	if (installed_name(e, id))
		return;
	/* trust the directory, not the event: the name may have been cut or reused */
	if (!sandbox_dir_id(e, name, &real) || real != id)
		return;
	if (policy_map__install(e->trie_fd, &e->pol, name, id, err, sizeof(err))) {
		log_err("sandbox %s stays without network: %s", name, err);
		return;
	}
	if (register_id(e, id, has_rules(&e->pol, name))) {
		log_err("cannot register sandbox %s: %s", name, strerror(errno));
		policy_map__remove(e->trie_fd, &e->pol, name, id);
		return;
	}
	sandbox_names__set(&e->reg, id, name);
	mark_installed(e, id, true);
	log_debug("sandbox %s (cgroup %llu) registered", name, (unsigned long long)id);
}

void engine__sandbox_destroyed(struct engine *e, uint64_t id)
{
	const char *name = installed_name(e, id);

	if (!name)
		return;
	bpf_map_delete_elem(e->sandboxes_fd, &id);
	policy_map__remove(e->trie_fd, &e->pol, name, id);
	/* the entry stays: the collector names the sandbox's last events with it */
	mark_installed(e, id, false);
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
		if (de->d_name[0] != '.' && sandbox_dir_id(e, de->d_name, &id))
			engine__sandbox_created(e, id, de->d_name);
	}
	closedir(d);
	for (size_t i = 0; i < e->reg.cap; i++) {
		struct sandbox_entry *s = &e->reg.slots[i];

		if (entry_installed(s) && (!sandbox_dir_id(e, s->name, &id) || id != s->id))
			engine__sandbox_destroyed(e, s->id);
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
	if (!ret)
		ret = read_policy(e, &p, discard_live ? NULL : &e->pol, err, errsz);
	if (!ret) {
		ret = commit(e, &p, discard_live, err, errsz);
		policy__free(&p);
	}
	emit_change(e, "reload", actor, cr, e->policy_path, NULL, before, ret ? err : NULL);
	return ret;
}

/* A reload egretd will not do for this requester: a refused PolicyChange, nothing changed. */
void engine__refuse_reload(struct engine *e, const char *actor, const struct ucred *cr,
			   const char *why)
{
	emit_change(e, "reload", actor, cr, e->policy_path, NULL, e->hash, why);
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
int engine__domain_verdict(const struct engine *e, const char *sandbox, const char *name,
			   char *rule, size_t size)
{
	int verdict = 0;

	rule[0] = '\0';
	for (size_t i = 0; i < e->pol.n; i++) {
		const struct rule *r = &e->pol.rules[i];

		if (r->kind != RULE_DOMAIN || (r->sandbox[0] && strcmp(r->sandbox, sandbox)) ||
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
	return id ? installed_name(e, id) : "";
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

/* [--sandbox NAME] [--] WORDS...: the index of the first word, or -1 after replying. */
static int rule_args(struct control_req *r, const char **sandbox)
{
	int i = 1;

	*sandbox = "";
	for (; i < r->argc; i++) {
		if (!strcmp(r->argv[i], "--sandbox") && i + 1 < r->argc) {
			*sandbox = r->argv[++i];
			if (!sandbox__valid_name(*sandbox)) {
				control__err(r, "bad sandbox name '%s'\n", *sandbox);
				return -1;
			}
		} else if (!strcmp(r->argv[i], "--")) {
			return i + 1;
		} else if (!strncmp(r->argv[i], "--", 2)) {
			control__err(r, "unknown option '%s'\n", r->argv[i]);
			return -1;
		} else {
			break;
		}
	}
	return i;
}

static void join_words(char **w, int n, char *out, size_t size)
{
	size_t used = 0;

	out[0] = '\0';
	for (int i = 0; i < n && used < size; i++)
		used += (size_t)snprintf(out + used, size - used, "%s%s", i ? " " : "", w[i]);
}

/* allow / deny: the request words are a policy line's. */
static int cmd_add(struct engine *e, struct control_req *r)
{
	char err[POLICY_ERR_LEN], actor[128], detail[1024], before[65], text[400];
	struct rule rules[MAX_RULE_WORDS];
	const char *sandbox;
	struct policy p;
	int first, n, added = 0, ret;

	first = rule_args(r, &sandbox);
	if (first < 0)
		return 2;
	/* argv[first - 1] is the verb's slot: reuse it so the words read "allow ..." */
	r->argv[first - 1] = r->argv[0];
	n = policy__parse_words(r->argv + first - 1, r->argc - first + 1, sandbox, rules,
				MAX_RULE_WORDS, err, sizeof(err));
	join_words(r->argv + first - 1, r->argc - first + 1, detail, sizeof(detail));
	if (n < 0) {
		control__err(r, "%s\n", err);
		return 2;
	}
	engine__actor_of(&r->peer, actor, sizeof(actor));
	memcpy(before, e->hash, sizeof(before));
	if (policy__copy(&p, &e->pol))
		return 1;
	for (int i = 0; i < n; i++) {
		ssize_t at = policy__find(&p, &rules[i]);

		rules[i].live = true;
		if (at >= 0) {
			rule__format(&rules[i], text, sizeof(text));
			control__out(r, "already in force: %s%s%s (rule %u)\n", text,
				     sandbox[0] ? " in sandbox " : "", sandbox, p.rules[at].id);
			continue;
		}
		if (policy__add(&p, &rules[i])) {
			policy__free(&p);
			return 1;
		}
		added++;
	}
	ret = added ? commit(e, &p, true, err, sizeof(err)) : 0;
	policy__free(&p);
	if (ret) {
		control__err(r, "%s: nothing changed\n", err);
		emit_change(e, r->argv[0], actor, &r->peer, detail, sandbox, before, err);
		return 1;
	}
	for (int i = 0; added && i < n; i++) {
		ssize_t at = policy__find(&e->pol, &rules[i]);

		rule__format(&rules[i], text, sizeof(text));
		control__out(r, "%s: %s%s%s (rule %u)\n",
			     rules[i].action == EGRET_ACT_DENY ? "denied" : "allowed", text,
			     sandbox[0] ? " in sandbox " : "", sandbox,
			     at >= 0 ? e->pol.rules[at].id : 0);
	}
	if (added)
		emit_change(e, r->argv[0], actor, &r->peer, detail, sandbox, before, NULL);
	return 0;
}

int engine__cmd_allow(void *ctx, struct control_req *r)
{
	return cmd_add(ctx, r);
}

int engine__cmd_deny(void *ctx, struct control_req *r)
{
	return cmd_add(ctx, r);
}

/* The live rule a revoke names: an id, or the rule's words (allow assumed). */
static ssize_t revoke_target(struct engine *e, struct control_req *r, int first,
			     const char *sandbox, char *err, size_t errsz)
{
	struct rule rules[MAX_RULE_WORDS];
	char *words[CONTROL_MAX_ARGS + 1];
	uint64_t id;
	ssize_t at;
	int n = 0;

	if (r->argc - first == 1 && parse_u64(r->argv[first], UINT32_MAX, &id) == 0) {
		at = policy__find_id(&e->pol, (uint32_t)id);
		if (at < 0)
			snprintf(err, errsz, "no rule %llu (egretctl list shows the rules)",
				 (unsigned long long)id);
	} else {
		if (first < r->argc && strcmp(r->argv[first], "allow") &&
		    strcmp(r->argv[first], "deny"))
			words[n++] = "allow";
		for (int i = first; i < r->argc; i++)
			words[n++] = r->argv[i];
		n = policy__parse_words(words, n, sandbox, rules, MAX_RULE_WORDS, err, errsz);
		if (n < 0)
			return -2;
		if (n != 1) {
			snprintf(err, errsz, "revoke one rule at a time");
			return -2;
		}
		at = policy__find(&e->pol, &rules[0]);
		if (at < 0)
			snprintf(err, errsz, "no such rule%s%s (egretctl list shows the rules)",
				 sandbox[0] ? " in sandbox " : "", sandbox);
	}
	if (at >= 0 && !e->pol.rules[at].live) {
		snprintf(err, errsz,
			 "rule %u comes from %s:%u: edit the file and run egretctl "
			 "reload",
			 e->pol.rules[at].id, e->policy_path, e->pol.rules[at].line);
		return -1;
	}
	return at;
}

int engine__cmd_revoke(void *ctx, struct control_req *r)
{
	struct engine *e = ctx;
	char err[POLICY_ERR_LEN], actor[128], detail[1024], before[65], text[400];
	const char *sandbox;
	struct policy p;
	struct rule gone;
	ssize_t at;
	int first, ret;

	first = rule_args(r, &sandbox);
	if (first < 0)
		return 2;
	if (first >= r->argc) {
		control__err(r, "revoke needs a rule id or the rule's words\n");
		return 2;
	}
	join_words(r->argv + first, r->argc - first, detail, sizeof(detail));
	at = revoke_target(e, r, first, sandbox, err, sizeof(err));
	if (at < 0) {
		control__err(r, "%s\n", err);
		return at == -2 ? 2 : 1;
	}
	engine__actor_of(&r->peer, actor, sizeof(actor));
	memcpy(before, e->hash, sizeof(before));
	gone = e->pol.rules[at];
	if (policy__copy(&p, &e->pol))
		return 1;
	policy__remove(&p, (size_t)at);
	ret = commit(e, &p, true, err, sizeof(err));
	policy__free(&p);
	if (ret) {
		control__err(r, "%s: nothing changed\n", err);
		emit_change(e, "revoke", actor, &r->peer, detail, gone.sandbox, before, err);
		return 1;
	}
	rule__format(&gone, text, sizeof(text));
	control__out(r, "revoked: %s%s%s (was rule %u)\n", text,
		     gone.sandbox[0] ? " in sandbox " : "", gone.sandbox, gone.id);
	emit_change(e, "revoke", actor, &r->peer, text, gone.sandbox, before, NULL);
	return 0;
}

static void list_rules(struct engine *e, struct control_req *r, const char *sandbox)
{
	char text[400], origin[PATH_MAX + 16];

	for (size_t i = 0; i < e->pol.n; i++) {
		const struct rule *ru = &e->pol.rules[i];

		if (strcmp(ru->sandbox, sandbox))
			continue;
		rule__format(ru, text, sizeof(text));
		if (ru->live)
			snprintf(origin, sizeof(origin), "live");
		else
			snprintf(origin, sizeof(origin), "%s:%u", e->policy_path, ru->line);
		control__out(r, "%s%8u  %-44s %s\n", sandbox[0] ? "  " : "", ru->id, text, origin);
	}
}

int engine__cmd_list(void *ctx, struct control_req *r)
{
	char(*names)[SANDBOX_NAME_MAX + 1] = NULL;
	struct engine *e = ctx;
	const char *only = NULL;
	size_t n = 0;

	if (r->argc == 3 && !strcmp(r->argv[1], "--sandbox"))
		only = r->argv[2];
	else if (r->argc != 1) {
		control__err(r, "usage: list [--sandbox NAME]\n");
		return 2;
	}
	control__out(r, "mode %s\nrule set %s\n", policy__mode_name(e->pol.mode), e->hash);
	if (!only) {
		control__out(r, "global rules (%zu file, %zu live):\n",
			     policy__count(&e->pol, false, ""), policy__count(&e->pol, true, ""));
		list_rules(e, r, "");
	}
	if (policy__sandboxes(&e->pol, &names, &n))
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (only && strcmp(only, names[i]))
			continue;
		control__out(r, "sandbox %s:\n", names[i]);
		list_rules(e, r, names[i]);
	}
	if (only && !policy__count(&e->pol, false, only) && !policy__count(&e->pol, true, only))
		control__out(r, "sandbox %s has no rules of its own; the global rules apply\n",
			     only);
	free(names);
	return 0;
}

int engine__cmd_reload(void *ctx, struct control_req *r)
{
	struct engine *e = ctx;
	char err[POLICY_ERR_LEN], actor[128];
	bool discard = false;

	for (int i = 1; i < r->argc; i++) {
		if (strcmp(r->argv[i], "--discard-live")) {
			control__err(r, "usage: reload [--discard-live]\n");
			return 2;
		}
		discard = true;
	}
	engine__actor_of(&r->peer, actor, sizeof(actor));
	if (engine__reload(e, actor, &r->peer, discard, err, sizeof(err))) {
		control__err(r, "%s: nothing changed\n", err);
		return 1;
	}
	control__out(r, "reloaded %s: mode %s, %zu rules (%zu live), rule set %s\n", e->policy_path,
		     policy__mode_name(e->pol.mode), e->pol.n, policy__count(&e->pol, true, NULL),
		     e->hash);
	return 0;
}

/* egretctl run is starting a command in sandbox id: what it is given. */
static void emit_started(struct engine *e, uint64_t id, const char *name,
			 const struct sandbox_spec *s, const struct ucred *cr)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	Egret__V1__Process proc = EGRET__V1__PROCESS__INIT;
	Egret__V1__SandboxLifecycle sl = EGRET__V1__SANDBOX_LIFECYCLE__INIT;
	Egret__V1__Confinement cf = EGRET__V1__CONFINEMENT__INIT;
	char names[64], *ns[8], comm[64] = "", path[64], reason[160];
	size_t n = 0;
	int len;

	if (!e->stream)
		return;
	sandbox_spec__ns_names(s->ns, names, sizeof(names));
	for (char *save, *w = strtok_r(names, ",", &save); w && n < 8;
	     w = strtok_r(NULL, ",", &save))
		ns[n++] = w;
	cf.privileged = s->privileged;
	cf.user_namespace = s->ns & SANDBOX_NS_USER;
	cf.uid = cf.user_namespace ? s->uid : 0;
	cf.gid = cf.user_namespace ? s->gid : 0;
	cf.id_count = cf.user_namespace ? s->ids : 0;
	cf.n_namespaces = n;
	cf.namespaces = ns;
	cf.seccomp = (char *)(s->seccomp ? "default" : "none");
	cf.no_new_privs = s->no_new_privs;
	snprintf(path, sizeof(path), "/proc/%d/comm", cr->pid);
	len = read_file(path, comm, sizeof(comm));
	if (len > 0 && comm[len - 1] == '\n')
		comm[len - 1] = '\0';
	snprintf(reason, sizeof(reason), "egretctl run by uid %u (pid %d)", cr->uid, cr->pid);
	sl.kind = EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_STARTED;
	sl.reason = reason;
	sl.confinement = &cf;
	sb.cgroup_id = id;
	sb.name = (char *)name;
	proc.pid = proc.tid = (uint32_t)cr->pid;
	proc.uid = cr->uid;
	proc.gid = cr->gid;
	proc.comm = comm;
	ev.sandbox = &sb;
	ev.process = &proc;
	ev.class_uid = OCSF_APPLICATION_LIFECYCLE;
	ev.activity_id = OCSF_APP_ACTIVITY_START;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE;
	ev.sandbox_lifecycle = &sl;
	stream__emit(e->stream, &ev);
}

/* The confinement words of a prepare request into s; -1 after replying when one is bad. */
static int prepare_spec(struct control_req *r, struct sandbox_spec *s)
{
	sandbox_spec__default(s);
	for (int i = 2; i < r->argc; i++) {
		if (sandbox_spec__parse_word(s, r->argv[i])) {
			control__err(r, "bad confinement '%s' in prepare\n", r->argv[i]);
			return -1;
		}
	}
	return 0;
}

/* egretctl run, before it starts a command in NAME: install the sandbox's rules now; with the
 * words saying what the command is given (egretctl's confinement), report its start.
 */
int engine__cmd_prepare(void *ctx, struct control_req *r)
{
	struct engine *e = ctx;
	struct sandbox_spec spec;
	uint64_t id;

	if (r->argc < 2 || !sandbox__valid_name(r->argv[1])) {
		control__err(r, "usage: prepare NAME [KEY=VALUE...]\n");
		return 2;
	}
	if (prepare_spec(r, &spec))
		return 2;
	if (!sandbox_dir_id(e, r->argv[1], &id)) {
		control__err(r, "no sandbox cgroup %s/%s\n", e->cgroup_root, r->argv[1]);
		return 1;
	}
	engine__sandbox_created(e, id, r->argv[1]);
	if (!installed_name(e, id)) {
		control__err(r, "sandbox %s could not be registered (see egretd's log)\n",
			     r->argv[1]);
		return 1;
	}
	if (r->argc > 2)
		emit_started(e, id, r->argv[1], &spec, &r->peer);
	return 0;
}

void engine__status(struct engine *e, struct control_req *r)
{
	control__out(r,
		     "policy: %s, mode %s, %zu rules (%zu live in %s), %zu sandboxes, rule "
		     "set %s\n",
		     e->policy_path, policy__mode_name(e->pol.mode), e->pol.n,
		     policy__count(&e->pol, true, NULL), e->live_path, e->installed, e->hash);
}
