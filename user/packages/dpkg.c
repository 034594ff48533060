/* dpkg: its runs (dpkg -i), its registry (the .debs it was given), and the files a dpkg or apt
 * install leaves: <root>/var/lib/dpkg/info/<pkg>.list, read with dpkg's status (version, and
 * whether it is installed) and hashed from apt's lists, the .deb given, or dpkg's md5sums.
 */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aptlist.h"
#include "managers.h"
#include "metafile.h"
#include "util.h"

#define DPKG_INFO	 "/var/lib/dpkg/info/"
#define DPKG_LIST	 ".list"
#define DPKG_STATUS	 "/var/lib/dpkg/status"
#define APT_LISTS	 "/var/lib/apt/lists"
#define APT_PACKAGES	 "_Packages" /* in the name of an apt list of packages */
#define STATUS_INSTALLED "install ok "
#define DEB		 ".deb"

static const char *const dpkg_installs[] = { "-i", "--install", "--unpack", NULL };
static const char *const dpkg_programs[] = { "dpkg", NULL };

/* the first .deb among the arguments, as a file:// URL */
static bool dpkg_registry(const struct pkg_manager *m, const struct pkg_cmd *cmd,
			  struct pkg_registry *r)
{
	char path[PATH_MAX];

	(void)m;
	for (size_t i = 1; i < cmd->argc; i++) {
		const char *arg = cmd->argv[i];

		if (strlen(arg) <= strlen(DEB) || !pkg_ends_with(arg, DEB))
			continue;
		if (arg[0] == '/')
			snprintf(path, sizeof(path), "file://%s", arg);
		else
			snprintf(path, sizeof(path), "file://%s/%s", cmd->cwd ? cmd->cwd : "", arg);
		return pkg_registry__set(r, path, "argument");
	}
	return false;
}

/* <root>/var/lib/dpkg/info/<pkg>[:arch].list */
static bool dpkg_match(const char *path, struct pkg_found *f)
{
	const char *p = strstr(path, DPKG_INFO), *n;
	size_t len;

	if (!p || !pkg_ends_with(path, DPKG_LIST))
		return false;
	n = p + strlen(DPKG_INFO);
	len = strlen(n) - strlen(DPKG_LIST);
	if (strchr(n, '/') || !len || len >= sizeof(f->name))
		return false;
	f->layout = PKG_DPKG;
	snprintf(f->name, sizeof(f->name), "%.*s", (int)len, n);
	f->name[strcspn(f->name, ":")] = '\0';
	snprintf(f->root, sizeof(f->root), "%.*s", (int)(p - path), path);
	snprintf(f->key, sizeof(f->key), "%s", path);
	return true;
}

/* dpkg's status: f's version, 0 when f is installed (not half-installed, not removed) */
static int dpkg_status(int root, struct pkg_found *f)
{
	char path[8192], val[256];
	size_t len;
	char *status;
	int err = -ENOENT;

	snprintf(path, sizeof(path), "%s" DPKG_STATUS, f->root);
	status = metafile__slurp(root, path, &len);
	if (!status)
		return -ENOENT;
	if (pkgmeta__stanza(status, f->name, NULL, "Version", f->version, sizeof(f->version)) &&
	    pkgmeta__stanza(status, f->name, NULL, "Status", val, sizeof(val)) &&
	    str_starts_with(val, STATUS_INSTALLED) && !strstr(val, "not-installed") &&
	    !strstr(val, "config-files"))
		err = 0;
	free(status);
	return err;
}

/* the .deb's SHA256 as an apt list has it, and its URL under the registry */
static void dpkg_list_hash(int root, struct pkg_found *f, const char *dir, const char *name,
			   const char *registry)
{
	char lp[8448], val[256];
	const struct apt_list *list;
	bool slash;

	snprintf(lp, sizeof(lp), "%s/%s", dir, name);
	list = apt_list__get(root, lp, !pkg_ends_with(name, APT_PACKAGES));
	if (!list || !apt_list__stanza(list, f->name, f->version, "SHA256", val, sizeof(val)))
		return;
	metafile__set_hash(f, "sha256:", val);
	snprintf(f->hash_source, sizeof(f->hash_source), "apt lists (%s)", name);
	if (!apt_list__stanza(list, f->name, f->version, "Filename", val, sizeof(val)))
		return;
	if (!registry)
		registry = "";
	slash = *registry && !pkg_ends_with(registry, "/");
	snprintf(f->source, sizeof(f->source), "%s%s%s", registry, slash ? "/" : "", val);
}

static void dpkg_lists_hash(int root, struct pkg_found *f, const char *registry)
{
	char path[8192];
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s" APT_LISTS, f->root);
	d = metafile__opendir(root, path);
	while (d && (de = readdir(d)) && !f->hash[0]) {
		if (strstr(de->d_name, APT_PACKAGES))
			dpkg_list_hash(root, f, path, de->d_name, registry);
	}
	if (d)
		closedir(d);
}

/* dpkg -i FILE.deb: that file's sha256 (the one named <pkg>_... when there are several) */
static void dpkg_deb_hash(int root, struct pkg_found *f, char *const *debs, size_t ndebs)
{
	char want[PKG_NAME_MAX + PKG_VER_MAX + 4], hex[65];

	snprintf(want, sizeof(want), "%s_", f->name);
	for (size_t i = 0; i < ndebs && !f->hash[0]; i++) {
		if ((ndebs == 1 || str_starts_with(pkg_base(debs[i]), want)) &&
		    !pkgmeta__sha256_file(root, debs[i], HASH_MAX, hex)) {
			snprintf(f->hash, sizeof(f->hash), "sha256:%s", hex);
			snprintf(f->hash_source, sizeof(f->hash_source), "sha256 of the .deb");
			snprintf(f->source, sizeof(f->source), "file://%s", debs[i]);
		}
	}
}

static int dpkg_read(int root, struct pkg_found *f, char *const *debs, size_t ndebs,
		     const char *registry)
{
	char path[8192];

	if (dpkg_status(root, f))
		return -ENOENT;
	dpkg_lists_hash(root, f, registry);
	dpkg_deb_hash(root, f, debs, ndebs);
	if (!f->hash[0]) {
		snprintf(path, sizeof(path), "%s" DPKG_INFO "%s.md5sums", f->root, f->name);
		metafile__own_hash(f, root, path, "dpkg's md5sums");
	}
	return 0;
}

const struct pkg_files pkg_dpkg_files = {
	.layout = PKG_DPKG,
	.name = "dpkg",
	.match = dpkg_match,
	.read = dpkg_read,
};

const struct pkg_manager pkg_dpkg = {
	.name = "dpkg",
	.programs = dpkg_programs,
	.installs = dpkg_installs,
	.registry = dpkg_registry,
	.files = &pkg_dpkg_files,
};
