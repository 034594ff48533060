/* Package managers and their metadata files (see pkgmeta.h): the table of managers
 * (managers.h) walked to recognise a run, to read its registry and to match and read the files
 * its installs leave; and what the managers' registry readers share.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "managers.h"
#include "metafile.h"
#include "util.h"

#define INTERPRETER_PYTHON "python" /* python, python3, python3.11 */
#define CONFIG_MAX	   65536    /* config files larger than this are read in part */
#define DEFAULT_HOME	   "/root"

static const struct pkg_manager *const managers[] = {
	&pkg_pip,  &pkg_npm, &pkg_yarn,	 &pkg_pnpm, &pkg_apt,
	&pkg_dpkg, &pkg_gem, &pkg_cargo, &pkg_go,
};

static const struct pkg_manager *manager_named(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(managers); i++) {
		if (!strcmp(managers[i]->name, name))
			return managers[i];
	}
	return NULL;
}

/* ---- recognising a manager ------------------------------------------------------------------ */

static bool any_of(const char *s, const char *const *words)
{
	for (; *words; words++) {
		if (!strcmp(s, *words))
			return true;
	}
	return false;
}

/* Does any argument from index i on name one of the verbs? (Options take values, so the
 * first word that is not an option is not always the verb: apt-get -o Dir=/x install.)
 */
static bool has_verb(char *const *argv, size_t argc, size_t i, const char *const *verbs)
{
	for (; i < argc; i++) {
		if (any_of(argv[i], verbs))
			return true;
	}
	return false;
}

static bool is_python(const char *program)
{
	return str_starts_with(program, INTERPRETER_PYTHON);
}

/* Past the programs that run the manager: env (its options and VAR=value words), then an
 * interpreter (node, python, ruby, perl) and its options, to the script: "/usr/bin/env node
 * /usr/bin/npm install x" is npm, as the kernel hands a #! script its argv. Returns the index
 * of the word to classify.
 */
static const char *const interpreters[] = { "node", "nodejs", "ruby", "perl", NULL };

/* Past "env" and its own words (options, -u NAME, NAME=value) when argv[0] is env: the index
 * of the command it runs (argc when none); 0 when argv[0] is not env.
 */
static size_t past_env(char *const *argv, size_t argc)
{
	size_t i = 0;

	if (!argc || strcmp(pkg_base(argv[0]), "env"))
		return 0;
	for (i = 1; i < argc && (argv[i][0] == '-' || strchr(argv[i], '=')); i++) {
		if (!strcmp(argv[i], "-u") || !strcmp(argv[i], "--unset"))
			i++;
	}
	return i < argc ? i : argc;
}

static size_t unwrap(char *const *argv, size_t argc)
{
	size_t i = past_env(argv, argc);

	if (i < argc && (any_of(pkg_base(argv[i]), interpreters) || is_python(pkg_base(argv[i])))) {
		for (i++; i < argc && argv[i][0] == '-'; i++)
			;
	}
	return i < argc ? i : 0;
}

/* python -m <module> ...: the manager of that module, its arguments after *next */
static const struct pkg_manager *python_module(char *const *argv, size_t argc, size_t *next)
{
	if (!is_python(pkg_base(argv[0])))
		return NULL;
	for (size_t i = 1; i + 1 < argc; i++) {
		if (strcmp(argv[i], "-m"))
			continue;
		for (size_t m = 0; m < ARRAY_SIZE(managers); m++) {
			if (managers[m]->module &&
			    str_starts_with(argv[i + 1], managers[m]->module)) {
				*next = i + 2;
				return managers[m];
			}
		}
	}
	return NULL;
}

static bool runs_program(const struct pkg_manager *m, const char *program)
{
	for (const char *const *p = m->programs; *p; p++) {
		const char *rest = pkg_after(program, *p);

		if (rest && (!*rest || (m->versioned && isdigit((unsigned char)*rest))))
			return true;
	}
	return false;
}

const char *pkgmeta__manager(char *const *argv, size_t argc, bool *installs)
{
	const struct pkg_manager *m;
	const char *program;
	size_t i;

	*installs = false;
	if (!argc)
		return NULL;
	m = python_module(argv, argc, &i);
	if (m) {
		*installs = has_verb(argv, argc, i, m->installs);
		return m->name;
	}
	i = unwrap(argv, argc);
	program = pkg_base(argv[i]);
	i++;
	for (size_t k = 0; k < ARRAY_SIZE(managers); k++) {
		m = managers[k];
		if (runs_program(m, program)) {
			*installs = has_verb(argv, argc, i, m->installs) ||
				    (m->bare_installs && i == argc);
			return m->name;
		}
	}
	return NULL;
}

/* name, and when versioned name2, name3, name3.0 ... name3.19 */
static int exec_names_of(const char *name, bool versioned, int (*fn)(void *, const char *),
			 void *ctx)
{
	char v[64];
	int err = fn(ctx, name);

	for (int i = -2; versioned && !err && i < 20; i++) {
		if (i < 0)
			snprintf(v, sizeof(v), "%s%d", name, i + 4); /* 2, 3 */
		else
			snprintf(v, sizeof(v), "%s3.%d", name, i);
		err = fn(ctx, v);
	}
	return err;
}

int pkgmeta__exec_names(int (*fn)(void *ctx, const char *name), void *ctx)
{
	int err = exec_names_of("env", false, fn, ctx);

	err = err ?: exec_names_of(INTERPRETER_PYTHON, true, fn, ctx);
	for (const char *const *p = interpreters; !err && *p; p++)
		err = exec_names_of(*p, false, fn, ctx);
	for (size_t k = 0; !err && k < ARRAY_SIZE(managers); k++) {
		for (const char *const *p = managers[k]->programs; !err && *p; p++)
			err = exec_names_of(*p, managers[k]->versioned, fn, ctx);
	}
	return err;
}

/* ---- the registry ---------------------------------------------------------------------------- */

const char *pkg_cmd__option(const struct pkg_cmd *cmd, const char *const *names)
{
	for (size_t i = 1; i < cmd->argc; i++) {
		const char *arg = cmd->argv[i];

		for (const char *const *n = names; *n; n++) {
			const char *rest = pkg_after(arg, *n);

			if (!strcmp(arg, *n) && i + 1 < cmd->argc)
				return cmd->argv[i + 1];
			if (rest && *rest == '=')
				return rest + 1;
		}
	}
	return NULL;
}

static const char *env_value(const char *env, size_t len, const char *name)
{
	size_t n = strlen(name);

	for (size_t i = 0; env && i < len;) {
		const char *kv = env + i;
		size_t l = strnlen(kv, len - i);

		if (l > n && !strncmp(kv, name, n) && kv[n] == '=')
			return kv + n + 1;
		i += l + 1;
	}
	return NULL;
}

/* The variable's value as the manager sees it: an "env [-i] [-u NAME] [NAME=value]... CMD"
 * prefix (the environment the run's first exec began with is env's) sets, unsets or clears it
 * before the environment's value counts.
 */
const char *pkg_cmd__env(const struct pkg_cmd *cmd, const char *name)
{
	const char *set = NULL;
	bool gone = false;
	size_t n = strlen(name);

	for (size_t i = 0; i < cmd->npre; i++) {
		const char *w = cmd->pre[i];

		if (!strcmp(w, "-i") || !strcmp(w, "-") || !strcmp(w, "--ignore-environment")) {
			gone = true;
			set = NULL;
		} else if ((!strcmp(w, "-u") || !strcmp(w, "--unset")) && i + 1 < cmd->npre) {
			if (!strcmp(cmd->pre[++i], name)) {
				gone = true;
				set = NULL;
			}
		} else if (!strncmp(w, name, n) && w[n] == '=') {
			set = w + n + 1;
		}
	}
	if (set || gone)
		return set;
	return env_value(cmd->env, cmd->envlen, name);
}

/* "key = value" or "key=value" (or ':') in an ini-ish file (in root); the first match. */
static bool config_value(int root, const char *path, const char *key, char *out, size_t size)
{
	char buf[CONFIG_MAX], *save = NULL;
	size_t kl = strlen(key);

	if (metafile__read_small(root, path, buf, sizeof(buf)) <= 0)
		return false;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *v;

		while (isspace((unsigned char)*p))
			p++;
		if (strncmp(p, key, kl))
			continue;
		v = p + kl + strspn(p + kl, " \t");
		if (*v != '=' && *v != ':')
			continue;
		v++;
		v += strspn(v, " \t");
		v[strcspn(v, " \t\r#")] = '\0';
		if (!*v)
			continue;
		snprintf(out, size, "%s", v);
		return true;
	}
	return false;
}

bool pkg_registry__config(struct pkg_registry *r, const struct pkg_cmd *cmd,
			  const char *const *paths, size_t n, const char *key)
{
	for (size_t i = 0; i < n; i++) {
		if (paths[i] && config_value(cmd->root, paths[i], key, r->url, r->size)) {
			snprintf(r->from, r->fromsz, "%s", paths[i]);
			return true;
		}
	}
	return false;
}

bool pkg_registry__set(struct pkg_registry *r, const char *val, const char *from)
{
	if (val != r->url)
		snprintf(r->url, r->size, "%s", val);
	snprintf(r->from, r->fromsz, "%s", from);
	return true;
}

void pkgmeta__registry_in(int root, const char *manager, char *const *argv, size_t argc,
			  const char *env, size_t envlen, const char *cwd, char *out, size_t size,
			  char *from, size_t fromsz)
{
	const struct pkg_manager *m = manager_named(manager);
	struct pkg_registry r = { out, size, from, fromsz };
	struct pkg_cmd cmd = { .env = env, .envlen = envlen, .cwd = cwd, .root = root };
	size_t i;
	const char *home;

	/* the manager's own words (its options are not env's or python's); env's before them */
	if (argc && python_module(argv, argc, &i))
		i--;
	else
		i = argc ? unwrap(argv, argc) : 0;
	cmd.argv = argv + i;
	cmd.argc = argc - i;
	if (past_env(argv, argc)) {
		cmd.pre = argv + 1;
		cmd.npre = past_env(argv, argc) - 1;
	}
	home = pkg_cmd__env(&cmd, "HOME");
	cmd.home = home ? home : DEFAULT_HOME;

	out[0] = from[0] = '\0';
	if (!m || m->registry(m, &cmd, &r))
		return; /* not a manager, or the run says its registry */
	if (m->default_registry)
		pkg_registry__set(&r, m->default_registry, "default");
}

void pkgmeta__registry(const char *manager, char *const *argv, size_t argc, const char *env,
		       size_t envlen, const char *cwd, char *out, size_t size, char *from,
		       size_t fromsz)
{
	pkgmeta__registry_in(PKG_ROOT_HOST, manager, argv, argc, env, envlen, cwd, out, size, from,
			     fromsz);
}

/* ---- metadata files -------------------------------------------------------------------------- */

/* The layouts of the table, each once (apt and dpkg leave the same files); NULL after the last. */
static const struct pkg_files *files_at(size_t *k)
{
	for (; *k < ARRAY_SIZE(managers); (*k)++) {
		const struct pkg_files *files = managers[*k]->files;
		bool seen = false;

		for (size_t j = 0; files && j < *k; j++)
			seen = seen || managers[j]->files == files;
		if (files && !seen)
			return managers[(*k)++]->files;
	}
	return NULL;
}

static const struct pkg_files *files_of(enum pkg_layout layout)
{
	for (size_t k = 0; k < ARRAY_SIZE(managers); k++) {
		if (managers[k]->files && managers[k]->files->layout == layout)
			return managers[k]->files;
	}
	return NULL;
}

const char *pkgmeta__layout_name(enum pkg_layout layout)
{
	const struct pkg_files *files = files_of(layout);

	return files ? files->name : "";
}

bool pkgmeta__match(const char *path, struct pkg_found *f)
{
	const struct pkg_files *files;
	size_t k = 0;

	memset(f, 0, sizeof(*f));
	while ((files = files_at(&k))) {
		if (files->match(path, f))
			return f->name[0];
	}
	return false;
}

int pkgmeta__read_in(int root, struct pkg_found *f, char *const *debs, size_t ndebs,
		     const char *registry)
{
	const struct pkg_files *files = files_of(f->layout);

	if (!files || files->read(root, f, debs, ndebs, registry))
		return -ENOENT;
	if (!f->source[0] && registry)
		snprintf(f->source, sizeof(f->source), "%s", registry);
	return 0;
}

int pkgmeta__read(struct pkg_found *f, char *const *debs, size_t ndebs, const char *registry)
{
	return pkgmeta__read_in(PKG_ROOT_HOST, f, debs, ndebs, registry);
}
