/* apt (apt, apt-get, aptitude): its runs and its registry, the URIs of the sources it reads
 * (sources.list, sources.list.d/, or the list or root given with -o). Its installs leave
 * dpkg's files (dpkg.c).
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "managers.h"
#include "metafile.h"
#include "util.h"

#define SOURCES_LIST   "/etc/apt/sources.list"
#define SOURCES_DIR    "/etc/apt/sources.list.d"
#define SOURCES_FILES  8     /* sources.list and the first 7 of sources.list.d */
#define SOURCES_MAX    65536 /* a sources file is read up to this much */
#define OPT_SOURCELIST "Dir::Etc::sourcelist="
#define OPT_ROOT       "Dir="
#define ONE_LINE_ENTRY "deb "
#define DEB822_URIS    "URIs:"

static const char *const apt_installs[] = { "install",	    "reinstall", "upgrade", "dist-upgrade",
					    "full-upgrade", "build-dep", NULL };
static const char *const apt_programs[] = { "apt", "apt-get", "aptitude", NULL };

/* the sources apt reads: list, or sources.list and sources.list.d/'s *.list and *.sources (in
 * root)
 */
static size_t sources_files(int root, const char *list, char files[][PATH_MAX], size_t max)
{
	size_t nf = 0;
	DIR *d;
	struct dirent *de;

	snprintf(files[nf++], PATH_MAX, "%s", list ? list : SOURCES_LIST);
	d = list ? NULL : metafile__opendir(root, SOURCES_DIR);
	while (d && (de = readdir(d)) && nf < max) {
		size_t l = strlen(de->d_name);

		if ((l > strlen(".list") && pkg_ends_with(de->d_name, ".list")) ||
		    (l > strlen(".sources") && pkg_ends_with(de->d_name, ".sources")))
			snprintf(files[nf++], PATH_MAX, SOURCES_DIR "/%s", de->d_name);
	}
	if (d)
		closedir(d);
	return nf;
}

/* the URI of a "deb [options] URI ..." line or a "URIs: URI" field, cut in place; NULL */
static char *line_uri(char *line)
{
	char *uri = (char *)pkg_after(line, ONE_LINE_ENTRY);

	if (uri && *uri == '[') /* [trusted=yes arch=...] */
		uri = strchr(uri, ']') ? strchr(uri, ']') + 1 : uri;
	if (!uri)
		uri = (char *)pkg_after(line, DEB822_URIS);
	if (!uri)
		return NULL;
	while (*uri == ' ')
		uri++;
	uri[strcspn(uri, " \t")] = '\0';
	return uri;
}

/* The URIs of every "deb" line and URIs: field in the sources apt reads (in root), joined by
 * ','.
 */
static bool apt_sources(int root, const char *list, char *out, size_t size)
{
	char files[SOURCES_FILES][PATH_MAX], buf[SOURCES_MAX], *save = NULL;
	size_t nf = sources_files(root, list, files, SOURCES_FILES), used = 0;

	out[0] = '\0';
	for (size_t i = 0; i < nf; i++) {
		if (metafile__read_small(root, files[i], buf, sizeof(buf)) <= 0)
			continue;
		for (char *line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char *uri = line_uri(line);

			if (uri && *uri && used + strlen(uri) + 2 < size)
				used += (size_t)snprintf(out + used, size - used, "%s%s",
							 used ? "," : "", uri);
		}
	}
	return used > 0;
}

/* -o Dir::Etc::sourcelist=FILE, or -o Dir=ROOT (ROOT/etc/apt/sources.list), then the run's
 * /etc/apt (all of them in the run's root)
 */
static bool apt_registry(const struct pkg_manager *m, const struct pkg_cmd *cmd,
			 struct pkg_registry *r)
{
	char path[PATH_MAX];

	(void)m;
	for (size_t i = 1; i < cmd->argc; i++) {
		const char *o = cmd->argv[i], *v;

		if (!strcmp(o, "-o") && i + 1 < cmd->argc)
			o = cmd->argv[++i];
		else if (str_starts_with(o, "-o"))
			o += strlen("-o");
		v = pkg_after(o, OPT_SOURCELIST);
		if (v && apt_sources(cmd->root, v, r->url, r->size))
			return pkg_registry__set(r, r->url, v);
		v = pkg_after(o, OPT_ROOT);
		if (v) {
			snprintf(path, sizeof(path), "%s" SOURCES_LIST, v);
			if (apt_sources(cmd->root, path, r->url, r->size))
				return pkg_registry__set(r, r->url, path);
		}
	}
	if (apt_sources(cmd->root, NULL, r->url, r->size))
		return pkg_registry__set(r, r->url, SOURCES_LIST);
	return false;
}

const struct pkg_manager pkg_apt = {
	.name = "apt",
	.programs = apt_programs,
	.installs = apt_installs,
	.registry = apt_registry,
	.files = &pkg_dpkg_files,
};
