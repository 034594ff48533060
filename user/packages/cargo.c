/* cargo: its runs and its registry (--index, --registry). egret reads none of the files its
 * installs leave.
 */
#include "managers.h"

static const char *const cargo_installs[] = { "install", "add", "build", "fetch", NULL };
static const char *const cargo_programs[] = { "cargo", NULL };
static const char *const cargo_options[] = { "--index", "--registry", NULL };

static bool cargo_registry(const struct pkg_manager *m, const struct pkg_cmd *cmd,
			   struct pkg_registry *r)
{
	const char *v = pkg_cmd__option(cmd, cargo_options);

	(void)m;
	return v && pkg_registry__set(r, v, "--index");
}

const struct pkg_manager pkg_cargo = {
	.name = "cargo",
	.programs = cargo_programs,
	.installs = cargo_installs,
	.registry = cargo_registry,
	.default_registry = "https://crates.io",
};
