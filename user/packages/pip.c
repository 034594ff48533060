/* pip: its runs (pip, pip3, python -m pip), its registry (--index-url, PIP_INDEX_URL, pip.conf)
 * and the *.dist-info directories its installs leave (METADATA, RECORD, direct_url.json).
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

#define DIST_INFO	 ".dist-info"
#define DIST_INFO_RECORD ".dist-info/RECORD"
#define DIST_INFO_META	 ".dist-info/METADATA"

static const char *const pip_installs[] = { "install", "download", "wheel", NULL };
static const char *const pip_programs[] = { "pip", NULL };
static const char *const pip_options[] = { "--index-url", "-i", NULL };

static bool pip_registry(const struct pkg_manager *m, const struct pkg_cmd *cmd,
			 struct pkg_registry *r)
{
	const char *v = pkg_cmd__option(cmd, pip_options), *venv;
	char conf[3][PATH_MAX];
	const char *confs[4];

	(void)m;
	if (v)
		return pkg_registry__set(r, v, "--index-url");
	/* a direct URL among the arguments */
	for (size_t i = 1; i < cmd->argc; i++) {
		if (str_starts_with(cmd->argv[i], "http://") ||
		    str_starts_with(cmd->argv[i], "https://"))
			return pkg_registry__set(r, cmd->argv[i], "argument");
	}
	/* --isolated: pip reads neither its environment variables nor the user's config */
	for (size_t i = 1; i < cmd->argc; i++) {
		if (!strcmp(cmd->argv[i], "--isolated"))
			return pkg_registry__config(r, cmd, (const char *[]){ "/etc/pip.conf" }, 1,
						    "index-url");
	}
	v = pkg_cmd__env(cmd, "PIP_INDEX_URL");
	if (v)
		return pkg_registry__set(r, v, "PIP_INDEX_URL");
	venv = pkg_cmd__env(cmd, "VIRTUAL_ENV");
	snprintf(conf[0], sizeof(conf[0]), "%s/pip.conf", venv ? venv : "");
	snprintf(conf[1], sizeof(conf[1]), "%s/.config/pip/pip.conf", cmd->home);
	snprintf(conf[2], sizeof(conf[2]), "%s/.pip/pip.conf", cmd->home);
	confs[0] = venv ? conf[0] : NULL;
	confs[1] = conf[1];
	confs[2] = conf[2];
	confs[3] = "/etc/pip.conf";
	return pkg_registry__config(r, cmd, confs, ARRAY_SIZE(confs), "index-url");
}

/* .../<dist>-<version>.dist-info/{RECORD,METADATA}, or the directory itself moved into place
 * (pip --target installs elsewhere and renames)
 */
static bool pip_match(const char *path, struct pkg_found *f)
{
	const char *dir_end, *d;
	char *dash;

	if (pkg_ends_with(path, DIST_INFO_RECORD) || pkg_ends_with(path, DIST_INFO_META))
		dir_end = strrchr(path, '/');
	else if (pkg_ends_with(path, DIST_INFO))
		dir_end = path + strlen(path);
	else
		return false;
	for (d = dir_end; d > path && d[-1] != '/'; d--)
		;
	f->layout = PKG_PIP;
	snprintf(f->root, sizeof(f->root), "%.*s", (int)(dir_end - path), path);
	snprintf(f->key, sizeof(f->key), "%s", f->root);
	snprintf(f->name, sizeof(f->name), "%.*s", (int)(dir_end - d - strlen(DIST_INFO)), d);
	dash = strrchr(f->name, '-');
	if (dash) {
		snprintf(f->version, sizeof(f->version), "%s", dash + 1);
		*dash = '\0';
	}
	return true;
}

/* pip writes "sha256=<digest>"; egret reports "sha256:<digest>" like the others */
static void pip_hash(struct pkg_found *f, char *val, const char *from)
{
	char *eq = strchr(val, '=');

	if (eq)
		*eq = ':';
	metafile__set_hash(f, "", val);
	snprintf(f->hash_source, sizeof(f->hash_source), "%s", from);
}

/* RECORD's "path,sha256=<urlsafe base64>,size" line for the METADATA file */
static bool record_hash(const char *record, const char *dist, char *out, size_t size)
{
	char want[PKG_NAME_MAX * 2];
	const char *l;

	snprintf(want, sizeof(want), "%.200s/METADATA,", dist);
	for (l = record; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *h = pkg_after(l, want);

		if (h) {
			snprintf(out, size, "%.*s", (int)strcspn(h, ",\r\n"), h);
			return out[0] != '\0';
		}
	}
	return false;
}

/* a URL or file install: the artifact and its hash */
static void pip_direct_url(int root, struct pkg_found *f)
{
	char path[8192], val[PKG_URL_MAX];
	const char *info;
	size_t len, ilen;
	char *text;

	snprintf(path, sizeof(path), "%s/direct_url.json", f->root);
	text = metafile__slurp(root, path, &len);
	if (!text)
		return;
	pkgmeta__json_string(text, len, "url", f->source, sizeof(f->source));
	if (pkgmeta__json_object(text, len, "archive_info", &info, &ilen) &&
	    pkgmeta__json_string(info, ilen, "hash", val, sizeof(val)))
		pip_hash(f, val, "pip direct_url.json");
	free(text);
}

static int pip_read(int root, struct pkg_found *f, char *const *debs, size_t ndebs,
		    const char *registry)
{
	char path[8192], val[PKG_URL_MAX];
	size_t len;
	char *text;

	(void)debs;
	(void)ndebs;
	(void)registry;
	snprintf(path, sizeof(path), "%s/METADATA", f->root);
	text = metafile__slurp(root, path, &len);
	if (!text)
		return -ENOENT;
	metafile__header(text, "Name", f->name, sizeof(f->name));
	metafile__header(text, "Version", f->version, sizeof(f->version));
	free(text);
	pip_direct_url(root, f);
	if (!f->hash[0]) {
		snprintf(path, sizeof(path), "%s/RECORD", f->root);
		text = metafile__slurp(root, path, &len);
		if (text && record_hash(text, pkg_base(f->root), val, sizeof(val)))
			pip_hash(f, val, "pip RECORD (METADATA)");
		free(text);
	}
	if (!f->hash[0]) {
		snprintf(path, sizeof(path), "%s/METADATA", f->root);
		metafile__own_hash(f, root, path, "METADATA");
	}
	return 0;
}

const struct pkg_files pkg_pip_files = {
	.layout = PKG_PIP,
	.name = "pip",
	.match = pip_match,
	.read = pip_read,
};

const struct pkg_manager pkg_pip = {
	.name = "pip",
	.programs = pip_programs,
	.versioned = true,
	.module = "pip",
	.installs = pip_installs,
	.registry = pip_registry,
	.default_registry = "https://pypi.org/simple",
	.files = &pkg_pip_files,
};
