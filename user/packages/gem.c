/* gem: its runs, its registry (--source) and the specifications/<name>-<version>.gemspec files
 * its installs leave, hashed by egret.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "managers.h"
#include "metafile.h"

#define SPECIFICATIONS "/specifications/"
#define GEMSPEC	       ".gemspec"

static const char *const gem_installs[] = { "install", "update", NULL };
static const char *const gem_programs[] = { "gem", NULL };
static const char *const gem_options[] = { "--source", "-s", NULL };

static bool gem_registry(const struct pkg_manager *m, const struct pkg_cmd *cmd,
			 struct pkg_registry *r)
{
	const char *v = pkg_cmd__option(cmd, gem_options);

	(void)m;
	return v && pkg_registry__set(r, v, "--source");
}

/* .../specifications/<name>-<version>.gemspec */
static bool gem_match(const char *path, struct pkg_found *f)
{
	const char *p = strstr(path, SPECIFICATIONS), *spec;
	char *dash;

	if (!pkg_ends_with(path, GEMSPEC) || !p)
		return false;
	spec = p + strlen(SPECIFICATIONS);
	if (strchr(spec, '/'))
		return false;
	f->layout = PKG_GEM;
	snprintf(f->name, sizeof(f->name), "%.*s", (int)(strlen(spec) - strlen(GEMSPEC)), spec);
	dash = strrchr(f->name, '-');
	if (dash) {
		snprintf(f->version, sizeof(f->version), "%s", dash + 1);
		*dash = '\0';
	}
	snprintf(f->key, sizeof(f->key), "%s", path);
	return true;
}

static int gem_read(int root, struct pkg_found *f, char *const *debs, size_t ndebs,
		    const char *registry)
{
	(void)debs;
	(void)ndebs;
	(void)registry;
	if (!metafile__exists(root, f->key))
		return -ENOENT;
	metafile__own_hash(f, root, f->key, "the gemspec");
	return 0;
}

const struct pkg_files pkg_gem_files = {
	.layout = PKG_GEM,
	.name = "gem",
	.match = gem_match,
	.read = gem_read,
};

const struct pkg_manager pkg_gem = {
	.name = "gem",
	.programs = gem_programs,
	.installs = gem_installs,
	.registry = gem_registry,
	.default_registry = "https://rubygems.org",
	.files = &pkg_gem_files,
};
