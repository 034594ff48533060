/* The control socket's commands on the engine (see engine.h): allow, deny, revoke, list,
 * reload, prepare (egretctl run's registration of a sandbox) and the status line.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <linux/types.h>

#include "egret/policy.h"
#include "engine.h"
#include "engine_int.h"
#include "util.h"

#define MAX_RULE_WORDS 64

/* [--sandbox SELECTOR] [--] WORDS...: the index of the first word, or -1 after replying. The
 * selector is a sandbox name or any selector a policy block takes ("image=python:*").
 */
static int rule_args(struct control_req *r, const char **sandbox)
{
	char sel[SANDBOX_SELECTOR_MAX], err[256];
	int i = 1;

	*sandbox = "";
	for (; i < r->argc; i++) {
		if (!strcmp(r->argv[i], "--sandbox") && i + 1 < r->argc) {
			if (sandbox__parse_selector_text(r->argv[++i], sel, sizeof(sel), err,
							 sizeof(err))) {
				control__err(r, "%s\n", err);
				return -1;
			}
			*sandbox = policy__intern(sel);
			if (!*sandbox)
				return -1;
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
		return -EINVAL;
	/* argv[first - 1] is the verb's slot: reuse it so the words read "allow ..." */
	r->argv[first - 1] = r->argv[0];
	n = policy__parse_words(r->argv + first - 1, r->argc - first + 1, sandbox, rules,
				MAX_RULE_WORDS, err, sizeof(err));
	join_words(r->argv + first - 1, r->argc - first + 1, detail, sizeof(detail));
	if (n < 0) {
		control__err(r, "%s\n", err);
		return -EINVAL;
	}
	engine__actor_of(&r->peer, actor, sizeof(actor));
	memcpy(before, e->hash, sizeof(before));
	if (policy__copy(&p, &e->pol))
		return -ENOMEM;
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
			return -ENOMEM;
		}
		added++;
	}
	ret = added ? engine__commit(e, &p, true, err, sizeof(err)) : 0;
	policy__free(&p);
	if (ret) {
		control__err(r, "%s: nothing changed\n", err);
		engine__emit_change(e, r->argv[0], actor, &r->peer, detail, sandbox, before, err);
		return -ECANCELED;
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
		engine__emit_change(e, r->argv[0], actor, &r->peer, detail, sandbox, before, NULL);
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
		return -EINVAL;
	if (first >= r->argc) {
		control__err(r, "revoke needs a rule id or the rule's words\n");
		return -EINVAL;
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
		return -ENOMEM;
	policy__remove(&p, (size_t)at);
	ret = engine__commit(e, &p, true, err, sizeof(err));
	policy__free(&p);
	if (ret) {
		control__err(r, "%s: nothing changed\n", err);
		engine__emit_change(e, "revoke", actor, &r->peer, detail, gone.sandbox, before,
				    err);
		return -ECANCELED;
	}
	rule__format(&gone, text, sizeof(text));
	control__out(r, "revoked: %s%s%s (was rule %u)\n", text,
		     gone.sandbox[0] ? " in sandbox " : "", gone.sandbox, gone.id);
	engine__emit_change(e, "revoke", actor, &r->peer, text, gone.sandbox, before, NULL);
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
	const char **names = NULL;
	struct engine *e = ctx;
	const char *only = NULL;
	char sel[SANDBOX_SELECTOR_MAX], err[256];
	size_t n = 0;

	if (r->argc == 3 && !strcmp(r->argv[1], "--sandbox")) {
		if (sandbox__parse_selector_text(r->argv[2], sel, sizeof(sel), err, sizeof(err))) {
			control__err(r, "%s\n", err);
			return -EINVAL;
		}
		only = sel;
	} else if (r->argc != 1) {
		control__err(r, "usage: list [--sandbox NAME]\n");
		return -EINVAL;
	}
	control__out(r, "mode %s\nrule set %s\n", policy__mode_name(e->pol.mode), e->hash);
	if (!only) {
		control__out(r, "global rules (%zu file, %zu live):\n",
			     policy__count(&e->pol, false, ""), policy__count(&e->pol, true, ""));
		list_rules(e, r, "");
	}
	if (policy__sandboxes(&e->pol, &names, &n))
		return -ENOMEM;
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
			return -EINVAL;
		}
		discard = true;
	}
	engine__actor_of(&r->peer, actor, sizeof(actor));
	if (engine__reload(e, actor, &r->peer, discard, err, sizeof(err))) {
		control__err(r, "%s: nothing changed\n", err);
		return -ECANCELED;
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
/* The confinement words; timeout=MS (egretctl run --timeout: egretd enforces it) and
 * watch=cpu (egretctl reports its CPU limit's throttling itself)
 */
static int prepare_spec(struct control_req *r, struct sandbox_spec *s, uint64_t *timeout_ms,
			bool *cpu_watched)
{
	sandbox_spec__default(s);
	*timeout_ms = 0;
	*cpu_watched = false;
	for (int i = 2; i < r->argc; i++) {
		if (!strcmp(r->argv[i], "watch=cpu")) {
			*cpu_watched = true;
		} else if (!strncmp(r->argv[i], "timeout=", 8)) {
			if (parse_u64(r->argv[i] + 8, UINT32_MAX, timeout_ms) || !*timeout_ms) {
				control__err(r, "bad timeout '%s' in prepare\n", r->argv[i]);
				return -1;
			}
		} else if (sandbox_spec__parse_word(s, r->argv[i])) {
			control__err(r, "bad confinement '%s' in prepare\n", r->argv[i]);
			return -1;
		}
	}
	return 0;
}

/* egretctl run, before it starts a command in NAME: install the sandbox's rules now; with the
 * words saying what the command is given (egretctl's confinement), report its start; with
 * timeout=MS, end it then (engine__run_timeout), whatever becomes of egretctl.
 */
int engine__cmd_prepare(void *ctx, struct control_req *r)
{
	struct engine *e = ctx;
	struct sandbox_spec spec;
	uint64_t id, timeout_ms;
	bool cpu_watched;

	if (r->argc < 2 || !sandbox__valid_name(r->argv[1])) {
		control__err(r, "usage: prepare NAME [KEY=VALUE...] [timeout=MS] [watch=cpu]\n");
		return -EINVAL;
	}
	if (prepare_spec(r, &spec, &timeout_ms, &cpu_watched))
		return -EINVAL;
	if (!engine__sandbox_dir_id(e, r->argv[1], &id)) {
		control__err(r, "no sandbox cgroup %s/%s\n", e->cgroup_root, r->argv[1]);
		return -ENOENT;
	}
	engine__sandbox_created(e, id, r->argv[1]);
	if (!engine__installed_name(e, id)) {
		control__err(r, "sandbox %s could not be registered (see egretd's log)\n",
			     r->argv[1]);
		return -ECANCELED;
	}
	engine__run_limits(e, id, timeout_ms, cpu_watched);
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
