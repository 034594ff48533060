/* npm, yarn and pnpm: their runs, their registry (--registry, npm_config_registry, .npmrc) and
 * the node_modules/[@scope/]<name>/package.json files their installs leave, with the hashes of
 * the installed package.json or npm's hidden lockfile (node_modules/.package-lock.json).
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "managers.h"
#include "metafile.h"
#include "pkgjson.h"
#include "util.h"

#define NODE_MODULES	"/node_modules/"
#define PACKAGE_JSON	"/package.json"
#define HIDDEN_LOCKFILE "node_modules/.package-lock.json"

static const char *const npm_installs[] = { "install", "i",	 "add", "ci",
					    "isntall", "update", "up",	NULL };
static const char *const npm_options[] = { "--registry", NULL };
static const char *const npm_programs[] = { "npm", "npm-cli.js", NULL };
static const char *const yarn_programs[] = { "yarn", "yarn.js", NULL };
static const char *const pnpm_programs[] = { "pnpm", "pnpm.cjs", NULL };

static bool npm_registry(const struct pkg_manager *m, const struct pkg_cmd *cmd,
			 struct pkg_registry *r)
{
	const char *v = pkg_cmd__option(cmd, npm_options);
	char conf[2][PATH_MAX];
	const char *confs[3];

	(void)m;
	if (v)
		return pkg_registry__set(r, v, "--registry");
	v = pkg_cmd__env(cmd, "npm_config_registry");
	if (!v)
		v = pkg_cmd__env(cmd, "NPM_CONFIG_REGISTRY");
	if (v)
		return pkg_registry__set(r, v, "npm_config_registry");
	snprintf(conf[0], sizeof(conf[0]), "%s/.npmrc", cmd->cwd ? cmd->cwd : ".");
	snprintf(conf[1], sizeof(conf[1]), "%s/.npmrc", cmd->home);
	confs[0] = conf[0];
	confs[1] = conf[1];
	confs[2] = "/etc/npmrc";
	return pkg_registry__config(r, cmd, confs, ARRAY_SIZE(confs), "registry");
}

/* the last "/node_modules/" in s, NULL when none */
static const char *last_node_modules(const char *s)
{
	const char *last = NULL;

	for (const char *q = s; (q = strstr(q, NODE_MODULES)); q++)
		last = q;
	return last;
}

/* Is [p, end) a package's directory under node_modules: "name" or "@scope/name", neither part
 * empty nor hidden, nothing deeper (a package's own subdirectories have package.json files too)?
 */
static bool npm_name(const char *p, const char *end)
{
	const char *sep;

	if (end <= p || p[0] == '.')
		return false;
	sep = memchr(p, '/', (size_t)(end - p));
	if (p[0] != '@')
		return !sep;
	return sep && sep > p + 1 && sep + 1 < end && sep[1] != '.' &&
	       !memchr(sep + 1, '/', (size_t)(end - sep - 1));
}

/* .../node_modules/[@scope/]<name>/package.json, not node_modules/.package-lock.json */
static bool npm_match(const char *path, struct pkg_found *f)
{
	const char *nm, *p, *slash;

	if (!pkg_ends_with(path, PACKAGE_JSON) || !(nm = last_node_modules(path)))
		return false;
	p = nm + strlen(NODE_MODULES);
	slash = strrchr(path, '/');
	if (!npm_name(p, slash))
		return false;
	f->layout = PKG_NPM;
	snprintf(f->name, sizeof(f->name), "%.*s", (int)(slash - p), p);
	snprintf(f->root, sizeof(f->root), "%.*s", (int)(slash - path), path);
	snprintf(f->key, sizeof(f->key), "%s", f->root);
	return true;
}

/* npm 7+: node_modules/.package-lock.json, "packages": {"node_modules/<name>": {...}} */
static void npm_lockfile(int root, struct pkg_found *f, const char *last)
{
	char path[8192], key[PKG_NAME_MAX + 16];
	const char *entry;
	size_t len, elen;
	char *text;

	snprintf(path, sizeof(path), "%.*s/" HIDDEN_LOCKFILE, (int)(last - f->root), f->root);
	text = metafile__slurp(root, path, &len);
	snprintf(key, sizeof(key), "node_modules/%s", f->name);
	if (text && pkgmeta__json_object(text, len, "packages", &entry, &elen) &&
	    pkgmeta__json_object(entry, elen, key, &entry, &elen)) {
		pkgmeta__json_string(entry, elen, "resolved", f->source, sizeof(f->source));
		if (pkgmeta__json_string(entry, elen, "integrity", f->hash, sizeof(f->hash)))
			snprintf(f->hash_source, sizeof(f->hash_source), "npm lockfile integrity");
	}
	free(text);
}

static int npm_read(int root, struct pkg_found *f, char *const *debs, size_t ndebs,
		    const char *registry)
{
	const char *last = last_node_modules(f->root);
	char path[8192];
	size_t len;
	char *text;

	(void)debs;
	(void)ndebs;
	(void)registry;
	snprintf(path, sizeof(path), "%s" PACKAGE_JSON, f->root);
	text = metafile__slurp(root, path, &len);
	if (!text)
		return -ENOENT;
	pkgmeta__json_string(text, len, "name", f->name, sizeof(f->name));
	pkgmeta__json_string(text, len, "version", f->version, sizeof(f->version));
	/* older npm writes these into the installed package.json */
	pkgmeta__json_string(text, len, "_resolved", f->source, sizeof(f->source));
	if (pkgmeta__json_string(text, len, "_integrity", f->hash, sizeof(f->hash)))
		snprintf(f->hash_source, sizeof(f->hash_source), "package.json _integrity");
	free(text);
	if (!f->hash[0] && last)
		npm_lockfile(root, f, last);
	if (!f->hash[0]) {
		snprintf(path, sizeof(path), "%s" PACKAGE_JSON, f->root);
		metafile__own_hash(f, root, path, "package.json");
	}
	return 0;
}

const struct pkg_files pkg_npm_files = {
	.layout = PKG_NPM,
	.name = "npm",
	.match = npm_match,
	.read = npm_read,
};

const struct pkg_manager pkg_npm = {
	.name = "npm",
	.programs = npm_programs,
	.installs = npm_installs,
	.registry = npm_registry,
	.default_registry = "https://registry.npmjs.org/",
	.files = &pkg_npm_files,
};

const struct pkg_manager pkg_yarn = {
	.name = "yarn",
	.programs = yarn_programs,
	.installs = npm_installs,
	.bare_installs = true,
	.registry = npm_registry,
	.default_registry = "https://registry.yarnpkg.com",
	.files = &pkg_npm_files,
};

const struct pkg_manager pkg_pnpm = {
	.name = "pnpm",
	.programs = pnpm_programs,
	.installs = npm_installs,
	.registry = npm_registry,
	.default_registry = "https://registry.npmjs.org/",
	.files = &pkg_npm_files,
};
