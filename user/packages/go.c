/* go: its runs (go get, install, mod, build), its registry (GOPROXY) and the module cache's
 * pkg/mod/cache/download/<module>/@v/<version>.ziphash files, go's own hash of a module.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "managers.h"
#include "metafile.h"

#define GO_DOWNLOAD "/pkg/mod/cache/download/"
#define GO_VERSIONS "/@v/"
#define ZIPHASH	    ".ziphash"

static const char *const go_installs[] = { "get", "install", "mod", "build", NULL };
static const char *const go_programs[] = { "go", NULL };

static bool go_registry(const struct pkg_manager *m, const struct pkg_cmd *cmd,
			struct pkg_registry *r)
{
	const char *v = pkg_cmd__env(cmd, "GOPROXY");

	(void)m;
	return v && pkg_registry__set(r, v, "GOPROXY");
}

/* A module path in Go's download cache, [start, end): no empty component, and no component
 * starting with '@' (the cache's "@v" directories are not part of a module's name).
 */
static bool go_module_path(const char *start, const char *end)
{
	for (const char *c = start; c < end; c++) {
		if ((c == start || c[-1] == '/') && (*c == '@' || *c == '/'))
			return false;
	}
	return true;
}

/* .../pkg/mod/cache/download/<module>/@v/<version>.ziphash */
static bool go_match(const char *path, struct pkg_found *f)
{
	const char *p = strstr(path, GO_DOWNLOAD), *module, *v, *version;

	if (!pkg_ends_with(path, ZIPHASH) || !p)
		return false;
	module = p + strlen(GO_DOWNLOAD);
	v = strstr(module, GO_VERSIONS);
	if (!v || v == module)
		return false;
	version = v + strlen(GO_VERSIONS);
	if (strchr(version, '/') || strlen(version) <= strlen(ZIPHASH) ||
	    !go_module_path(module, v))
		return false;
	f->layout = PKG_GO;
	snprintf(f->name, sizeof(f->name), "%.*s", (int)(v - module), module);
	snprintf(f->version, sizeof(f->version), "%.*s", (int)(strlen(version) - strlen(ZIPHASH)),
		 version);
	snprintf(f->key, sizeof(f->key), "%s", path);
	return true;
}

/* go's own hash of the module zip: "h1:<base64 sha256 of the file tree>" */
static int go_read(int root, struct pkg_found *f, char *const *debs, size_t ndebs,
		   const char *registry)
{
	char buf[PKG_HASH_MAX];

	(void)debs;
	(void)ndebs;
	(void)registry;
	if (metafile__read_small(root, f->key, buf, sizeof(buf)) <= 0)
		return -ENOENT;
	buf[strcspn(buf, "\r\n")] = '\0';
	snprintf(f->hash, sizeof(f->hash), "%s", buf);
	snprintf(f->hash_source, sizeof(f->hash_source), "go module cache .ziphash");
	return 0;
}

const struct pkg_files pkg_go_files = {
	.layout = PKG_GO,
	.name = "go",
	.match = go_match,
	.read = go_read,
};

const struct pkg_manager pkg_go = {
	.name = "go",
	.programs = go_programs,
	.installs = go_installs,
	.registry = go_registry,
	.default_registry = "https://proxy.golang.org,direct",
	.files = &pkg_go_files,
};
