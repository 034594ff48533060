/* Package managers and their metadata files; see pkgmeta.h. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pkgmeta.h"
#include "sha256.h"
#include "util.h"

/* The files read here are written by sandboxes: only regular files are opened, and only so
 * much of them is read or hashed, so that a FIFO, a device or a huge file cannot stall egretd.
 */
#define META_MAX     (4u << 20)	    /* metadata files larger than this are not read */
#define LIST_MAX     (256u << 20)   /* apt lists (Debian main is ~50 MiB uncompressed) */
#define HASH_MAX     (512ull << 20) /* .debs larger than this are not hashed by egret */
#define HELPER_MS    5000	    /* apt-helper gets this long to decompress a list */
#define LISTS_CACHED 8
#define LIST_IDLE_NS (60ull * 1000000000ull) /* an unused list is dropped after this */

/* Open path for reading if it is a regular file; its size in *size. */
static int open_regular(const char *path, uint64_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	if (size)
		*size = (uint64_t)st.st_size;
	return fd;
}

/* read_file() for files a sandbox may have put there */
static int read_small(const char *path, char *buf, size_t size)
{
	int fd = open_regular(path, NULL);
	ssize_t n;

	if (fd < 0)
		return fd;
	n = read(fd, buf, size - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	buf[n] = '\0';
	return (int)n;
}

/* ---- recognising a manager ------------------------------------------------------------------ */

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

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

/* Past the programs that run the manager: env (its options and VAR=value words), then an
 * interpreter (node, python, ruby, perl) and its options, to the script: "/usr/bin/env node
 * /usr/bin/npm install x" is npm, as the kernel hands a #! script its argv. Returns the index
 * of the word to classify.
 */
static size_t unwrap(char *const *argv, size_t argc)
{
	static const char *const interpreters[] = { "node", "nodejs", "ruby", "perl", NULL };
	size_t i = 0;

	if (i < argc && !strcmp(base(argv[i]), "env")) {
		for (i++; i < argc && (argv[i][0] == '-' || strchr(argv[i], '=')); i++)
			;
	}
	if (i < argc &&
	    (any_of(base(argv[i]), interpreters) || !strncmp(base(argv[i]), "python", 6))) {
		for (i++; i < argc && argv[i][0] == '-'; i++)
			;
	}
	return i < argc ? i : 0;
}

const char *pkgmeta__manager(char *const *argv, size_t argc, bool *installs)
{
	static const char *const pip_install[] = { "install", "download", "wheel", NULL };
	static const char *const npm_install[] = { "install", "i",	"add", "ci",
						   "isntall", "update", "up",  NULL };
	static const char *const apt_install[] = {
		"install", "reinstall", "upgrade", "dist-upgrade", "full-upgrade", "build-dep", NULL
	};
	static const char *const dpkg_install[] = { "-i", "--install", "--unpack", NULL };
	static const char *const gem_install[] = { "install", "update", NULL };
	static const char *const cargo_install[] = { "install", "add", "build", "fetch", NULL };
	static const char *const go_install[] = { "get", "install", "mod", "build", NULL };
	const char *b;
	size_t i;

	*installs = false;
	if (!argc)
		return NULL;
	/* python -m pip ..., python3.11 -m pip ... */
	if (!strncmp(base(argv[0]), "python", 6)) {
		for (i = 1; i + 1 < argc; i++) {
			if (!strcmp(argv[i], "-m") && !strncmp(argv[i + 1], "pip", 3)) {
				*installs = has_verb(argv, argc, i + 2, pip_install);
				return "pip";
			}
		}
	}
	i = unwrap(argv, argc);
	b = base(argv[i]);
	i++;
	if (!strncmp(b, "pip", 3) && (!b[3] || isdigit((unsigned char)b[3]))) {
		*installs = has_verb(argv, argc, i, pip_install);
		return "pip";
	}
	if (!strcmp(b, "npm") || !strcmp(b, "npm-cli.js") || !strcmp(b, "yarn") ||
	    !strcmp(b, "yarn.js") || !strcmp(b, "pnpm") || !strcmp(b, "pnpm.cjs")) {
		*installs = has_verb(argv, argc, i, npm_install) || (b[0] == 'y' && i == argc);
		return b[0] == 'n' ? "npm" : b[0] == 'y' ? "yarn" : "pnpm";
	}
	if (!strcmp(b, "apt") || !strcmp(b, "apt-get") || !strcmp(b, "aptitude")) {
		*installs = has_verb(argv, argc, i, apt_install);
		return "apt";
	}
	if (!strcmp(b, "dpkg")) {
		*installs = has_verb(argv, argc, i, dpkg_install);
		return "dpkg";
	}
	if (!strcmp(b, "gem")) {
		*installs = has_verb(argv, argc, i, gem_install);
		return "gem";
	}
	if (!strcmp(b, "cargo")) {
		*installs = has_verb(argv, argc, i, cargo_install);
		return "cargo";
	}
	if (!strcmp(b, "go")) {
		*installs = has_verb(argv, argc, i, go_install);
		return "go";
	}
	return NULL;
}

/* ---- the registry ---------------------------------------------------------------------------- */

/* The value of an option: "--opt V", "--opt=V", or for short options "-o V". */
static const char *opt_value(char *const *argv, size_t argc, const char *const *names)
{
	for (size_t i = 1; i < argc; i++) {
		for (const char *const *n = names; *n; n++) {
			size_t l = strlen(*n);

			if (!strcmp(argv[i], *n) && i + 1 < argc)
				return argv[i + 1];
			if (!strncmp(argv[i], *n, l) && argv[i][l] == '=')
				return argv[i] + l + 1;
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

/* "key = value" or "key=value" in an ini-ish file; the first match. */
static bool config_value(const char *path, const char *key, char *out, size_t size)
{
	char buf[65536], *save = NULL;
	size_t kl = strlen(key);

	if (read_small(path, buf, sizeof(buf)) <= 0)
		return false;
	for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *p = line, *v;

		while (isspace((unsigned char)*p))
			p++;
		if (strncmp(p, key, kl))
			continue;
		v = p + kl;
		while (*v == ' ' || *v == '\t')
			v++;
		if (*v != '=' && *v != ':')
			continue;
		v++;
		while (*v == ' ' || *v == '\t')
			v++;
		v[strcspn(v, " \t\r#")] = '\0';
		if (!*v)
			continue;
		snprintf(out, size, "%s", v);
		return true;
	}
	return false;
}

/* apt: the URIs of every "deb" line and URIs: field in the sources it reads. */
static bool apt_sources(const char *list, char *out, size_t size)
{
	char files[8][PATH_MAX], buf[65536], *save = NULL;
	size_t nf = 0, used = 0;
	DIR *d;
	struct dirent *de;

	snprintf(files[nf++], PATH_MAX, "%s", list ? list : "/etc/apt/sources.list");
	d = list ? NULL : opendir("/etc/apt/sources.list.d");
	while (d && (de = readdir(d)) && nf < 8) {
		size_t l = strlen(de->d_name);

		if ((l > 5 && !strcmp(de->d_name + l - 5, ".list")) ||
		    (l > 8 && !strcmp(de->d_name + l - 8, ".sources")))
			snprintf(files[nf++], PATH_MAX, "/etc/apt/sources.list.d/%s", de->d_name);
	}
	if (d)
		closedir(d);
	out[0] = '\0';
	for (size_t i = 0; i < nf; i++) {
		if (read_small(files[i], buf, sizeof(buf)) <= 0)
			continue;
		for (char *line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			char *uri = NULL;

			if (!strncmp(line, "deb ", 4)) {
				uri = line + 4;
				if (*uri == '[') /* [trusted=yes arch=...] */
					uri = strchr(uri, ']') ? strchr(uri, ']') + 1 : uri;
			} else if (!strncmp(line, "URIs:", 5)) {
				uri = line + 5;
			}
			if (!uri)
				continue;
			while (*uri == ' ')
				uri++;
			uri[strcspn(uri, " \t")] = '\0';
			if (*uri && used + strlen(uri) + 2 < size)
				used += (size_t)snprintf(out + used, size - used, "%s%s",
							 used ? "," : "", uri);
		}
	}
	return used > 0;
}

/* The first of n config files (NULL: skipped) that sets key: its value in out and its path in
 * from.
 */
static bool first_config(const char *const *paths, size_t n, const char *key, char *out,
			 size_t size, char *from, size_t fromsz)
{
	for (size_t i = 0; i < n; i++) {
		if (paths[i] && config_value(paths[i], key, out, size)) {
			snprintf(from, fromsz, "%s", paths[i]);
			return true;
		}
	}
	return false;
}

/* out (unless val is out already) and where it came from */
static void found(char *out, size_t size, const char *val, char *from, size_t fromsz,
		  const char *where)
{
	if (val != out)
		snprintf(out, size, "%s", val);
	snprintf(from, fromsz, "%s", where);
}

void pkgmeta__registry(const char *manager, char *const *argv, size_t argc, const char *env,
		       size_t envlen, const char *cwd, char *out, size_t size, char *from,
		       size_t fromsz)
{
	static const char *const pip_opts[] = { "--index-url", "-i", NULL };
	static const char *const npm_opts[] = { "--registry", NULL };
	static const char *const gem_opts[] = { "--source", "-s", NULL };
	static const char *const cargo_opts[] = { "--index", "--registry", NULL };
	const char *v = NULL, *home = env_value(env, envlen, "HOME");
	char path[PATH_MAX], conf[3][PATH_MAX];
	const char *confs[4];

	out[0] = from[0] = '\0';
	if (!home)
		home = "/root";
#define FOUND(val, where)                                   \
	do {                                                \
		found(out, size, val, from, fromsz, where); \
		return;                                     \
	} while (0)
	if (!strcmp(manager, "pip")) {
		if ((v = opt_value(argv, argc, pip_opts)))
			FOUND(v, "--index-url");
		/* a direct URL among the arguments */
		for (size_t i = 1; i < argc; i++) {
			if (!strncmp(argv[i], "http://", 7) || !strncmp(argv[i], "https://", 8))
				FOUND(argv[i], "argument");
		}
		if ((v = env_value(env, envlen, "PIP_INDEX_URL")))
			FOUND(v, "PIP_INDEX_URL");
		v = env_value(env, envlen, "VIRTUAL_ENV");
		snprintf(conf[0], sizeof(conf[0]), "%s/pip.conf", v ? v : "");
		snprintf(conf[1], sizeof(conf[1]), "%s/.config/pip/pip.conf", home);
		snprintf(conf[2], sizeof(conf[2]), "%s/.pip/pip.conf", home);
		confs[0] = v ? conf[0] : NULL;
		confs[1] = conf[1];
		confs[2] = conf[2];
		confs[3] = "/etc/pip.conf";
		if (first_config(confs, 4, "index-url", out, size, from, fromsz))
			return;
		FOUND("https://pypi.org/simple", "default");
	}
	if (!strcmp(manager, "npm") || !strcmp(manager, "yarn") || !strcmp(manager, "pnpm")) {
		if ((v = opt_value(argv, argc, npm_opts)))
			FOUND(v, "--registry");
		if ((v = env_value(env, envlen, "npm_config_registry")) ||
		    (v = env_value(env, envlen, "NPM_CONFIG_REGISTRY")))
			FOUND(v, "npm_config_registry");
		snprintf(conf[0], sizeof(conf[0]), "%s/.npmrc", cwd ? cwd : ".");
		snprintf(conf[1], sizeof(conf[1]), "%s/.npmrc", home);
		confs[0] = conf[0];
		confs[1] = conf[1];
		confs[2] = "/etc/npmrc";
		if (first_config(confs, 3, "registry", out, size, from, fromsz))
			return;
		FOUND(!strcmp(manager, "yarn") ? "https://registry.yarnpkg.com"
					       : "https://registry.npmjs.org/",
		      "default");
	}
	if (!strcmp(manager, "apt")) {
		/* -o Dir::Etc::sourcelist=FILE, or -o Dir=ROOT (ROOT/etc/apt/sources.list) */
		for (size_t i = 1; i < argc; i++) {
			const char *o = argv[i];

			if (!strcmp(o, "-o") && i + 1 < argc)
				o = argv[++i];
			else if (!strncmp(o, "-o", 2))
				o += 2;
			if (!strncmp(o, "Dir::Etc::sourcelist=", 21) &&
			    apt_sources(o + 21, out, size))
				FOUND(out, o + 21);
			if (!strncmp(o, "Dir=", 4)) {
				snprintf(path, sizeof(path), "%s/etc/apt/sources.list", o + 4);
				if (apt_sources(path, out, size))
					FOUND(out, path);
			}
		}
		if (apt_sources(NULL, out, size))
			FOUND(out, "/etc/apt/sources.list");
		return;
	}
	if (!strcmp(manager, "dpkg")) {
		for (size_t i = 1; i < argc; i++) {
			size_t l = strlen(argv[i]);

			if (l > 4 && !strcmp(argv[i] + l - 4, ".deb")) {
				if (argv[i][0] == '/')
					snprintf(path, sizeof(path), "file://%s", argv[i]);
				else
					snprintf(path, sizeof(path), "file://%s/%s", cwd ? cwd : "",
						 argv[i]);
				FOUND(path, "argument");
			}
		}
		return;
	}
	if (!strcmp(manager, "gem")) {
		if ((v = opt_value(argv, argc, gem_opts)))
			FOUND(v, "--source");
		FOUND("https://rubygems.org", "default");
	}
	if (!strcmp(manager, "cargo")) {
		if ((v = opt_value(argv, argc, cargo_opts)))
			FOUND(v, "--index");
		FOUND("https://crates.io", "default");
	}
	if (!strcmp(manager, "go")) {
		if ((v = env_value(env, envlen, "GOPROXY")))
			FOUND(v, "GOPROXY");
		FOUND("https://proxy.golang.org,direct", "default");
	}
#undef FOUND
}

/* ---- metadata files -------------------------------------------------------------------------- */

static bool ends_with(const char *s, const char *suffix)
{
	size_t a = strlen(s), b = strlen(suffix);

	return a >= b && !strcmp(s + a - b, suffix);
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

/* Which layout path is, and what it tells; the name may come out empty. */
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

static bool match_layout(const char *path, struct pkg_found *f)
{
	const char *p, *slash;

	memset(f, 0, sizeof(*f));
	/* <root>/var/lib/dpkg/info/<pkg>[:arch].list */
	if ((p = strstr(path, "/var/lib/dpkg/info/")) && ends_with(path, ".list")) {
		const char *n = p + 19;
		size_t len = strlen(n) - 5;

		if (strchr(n, '/') || !len || len >= sizeof(f->name))
			return false;
		f->layout = PKG_DPKG;
		snprintf(f->name, sizeof(f->name), "%.*s", (int)len, n);
		f->name[strcspn(f->name, ":")] = '\0';
		snprintf(f->root, sizeof(f->root), "%.*s", (int)(p - path), path);
		snprintf(f->key, sizeof(f->key), "%s", path);
		return true;
	}
	/* .../<dist>-<version>.dist-info/{RECORD,METADATA}, or the directory itself moved into
	 * place (pip --target installs elsewhere and renames)
	 */
	if (((ends_with(path, ".dist-info/RECORD") || ends_with(path, ".dist-info/METADATA")) &&
	     (slash = strrchr(path, '/'))) ||
	    (ends_with(path, ".dist-info") && (slash = path + strlen(path)))) {
		const char *d = slash;

		while (d > path && d[-1] != '/')
			d--;
		f->layout = PKG_PIP;
		snprintf(f->root, sizeof(f->root), "%.*s", (int)(slash - path), path);
		snprintf(f->key, sizeof(f->key), "%s", f->root);
		snprintf(f->name, sizeof(f->name), "%.*s", (int)(slash - d - 10), d);
		{
			char *dash = strrchr(f->name, '-');

			if (dash) {
				snprintf(f->version, sizeof(f->version), "%s", dash + 1);
				*dash = '\0';
			}
		}
		return true;
	}
	/* .../node_modules/[@scope/]<name>/package.json, not node_modules/.package-lock.json */
	if (ends_with(path, "/package.json") && (p = strstr(path, "/node_modules/"))) {
		const char *last = NULL, *q = path;

		while ((q = strstr(q, "/node_modules/")))
			last = q++;
		p = last + 14;
		slash = strrchr(path, '/');
		if (!npm_name(p, slash))
			return false;
		f->layout = PKG_NPM;
		snprintf(f->name, sizeof(f->name), "%.*s", (int)(slash - p), p);
		snprintf(f->root, sizeof(f->root), "%.*s", (int)(slash - path), path);
		snprintf(f->key, sizeof(f->key), "%s", f->root);
		return true;
	}
	/* .../specifications/<name>-<version>.gemspec */
	if (ends_with(path, ".gemspec") && (p = strstr(path, "/specifications/")) &&
	    !strchr(p + 16, '/')) {
		char *dash;

		f->layout = PKG_GEM;
		snprintf(f->name, sizeof(f->name), "%.*s", (int)(strlen(p + 16) - 8), p + 16);
		dash = strrchr(f->name, '-');
		if (dash) {
			snprintf(f->version, sizeof(f->version), "%s", dash + 1);
			*dash = '\0';
		}
		snprintf(f->key, sizeof(f->key), "%s", path);
		return true;
	}
	/* .../pkg/mod/cache/download/<module>/@v/<version>.ziphash */
	if (ends_with(path, ".ziphash") && (p = strstr(path, "/pkg/mod/cache/download/")) &&
	    (slash = strstr(p + 24, "/@v/")) && slash > p + 24 && !strchr(slash + 4, '/') &&
	    strlen(slash + 4) > 8 && go_module_path(p + 24, slash)) {
		f->layout = PKG_GO;
		snprintf(f->name, sizeof(f->name), "%.*s", (int)(slash - p - 24), p + 24);
		snprintf(f->version, sizeof(f->version), "%.*s", (int)(strlen(slash + 4) - 8),
			 slash + 4);
		snprintf(f->key, sizeof(f->key), "%s", path);
		return true;
	}
	return false;
}

bool pkgmeta__match(const char *path, struct pkg_found *f)
{
	return match_layout(path, f) && f->name[0];
}

int pkgmeta__sha256_file(const char *path, uint64_t max, char *hex)
{
	uint8_t buf[65536], digest[32];
	struct sha256 s;
	uint64_t size = 0;
	int fd = open_regular(path, &size);
	ssize_t n;

	if (fd < 0)
		return fd;
	if (size > max) {
		close(fd);
		return -EFBIG;
	}
	sha256__init(&s);
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		sha256__update(&s, buf, (size_t)n);
	close(fd);
	if (n < 0)
		return -EIO;
	sha256__final(&s, digest);
	sha256__hex(digest, hex);
	return 0;
}

/* A whole (small) file into a malloc'd, NUL-terminated buffer. */
/* All of fd (up to max bytes) into a malloc'd, NUL-terminated buffer; NULL when deadline
 * (CLOCK_MONOTONIC ns, 0: none) passes before the end, or on no memory.
 */
static char *read_fd(int fd, size_t max, uint64_t deadline, size_t *len)
{
	size_t cap = 65536, n = 0;
	char *buf = malloc(cap + 1);
	ssize_t r;

	while (buf) {
		if (deadline) {
			struct pollfd p = { .fd = fd, .events = POLLIN };
			uint64_t now = now_ns(CLOCK_MONOTONIC);

			if (now >= deadline ||
			    poll(&p, 1, (int)((deadline - now) / 1000000ull) + 1) <= 0) {
				free(buf);
				return NULL;
			}
		}
		r = read(fd, buf + n, cap - n);
		if (r <= 0)
			break;
		n += (size_t)r;
		if (n == cap) {
			char *nb = cap * 2 <= max ? realloc(buf, cap * 2 + 1) : NULL;

			if (!nb)
				break; /* the first max bytes */
			buf = nb;
			cap *= 2;
		}
	}
	if (buf) {
		buf[n] = '\0';
		*len = n;
	}
	return buf;
}

static char *slurp_max(const char *path, size_t max, size_t *len)
{
	int fd = open_regular(path, NULL);
	char *buf;

	if (fd < 0)
		return NULL;
	buf = read_fd(fd, max, 0, len);
	close(fd);
	return buf;
}

static char *slurp(const char *path, size_t *len)
{
	return slurp_max(path, META_MAX, len);
}

/* "Key: value" of an RFC 822-style header block (METADATA), the first. */
static bool header_value(const char *text, const char *key, char *out, size_t size)
{
	size_t kl = strlen(key);

	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (*l == '\n')
			return false; /* the body starts */
		if (!strncmp(l, key, kl) && l[kl] == ':') {
			const char *v = l + kl + 1;

			while (*v == ' ')
				v++;
			snprintf(out, size, "%.*s", (int)strcspn(v, "\r\n"), v);
			return true;
		}
	}
	return false;
}

/* The stanza at s, when it is pkg's (at version, unless NULL) and has field. header_value
 * stops at the blank line, so nothing is copied.
 */
static bool stanza_at(const char *s, const char *pkg, const char *version, const char *field,
		      char *out, size_t size)
{
	size_t pl = strlen(pkg);
	char want[PKG_VER_MAX + 16];

	if (strncmp(s, "Package: ", 9) || strncmp(s + 9, pkg, pl) || s[9 + pl] != '\n')
		return false;
	if (version && (!header_value(s, "Version", want, sizeof(want)) || strcmp(want, version)))
		return false;
	return header_value(s, field, out, size);
}

bool pkgmeta__stanza(const char *text, const char *pkg, const char *version, const char *field,
		     char *out, size_t size)
{
	for (const char *s = text; s && *s;) {
		const char *end = strstr(s, "\n\n");

		if (stanza_at(s, pkg, version, field, out, size))
			return true;
		s = end ? end + 2 : NULL;
	}
	return false;
}

/* ---- apt's lists, indexed once --------------------------------------------------------------- */

/* A package's stanzas are found in an apt list by the hash of its name; a list is read and
 * indexed once and kept while it is in use and unchanged (device, inode, size, mtime), so an
 * install of many packages reads a 50 MiB list once, not once per package.
 */
struct list_entry {
	uint64_t hash;
	uint32_t off;
};

static struct apt_list {
	char path[PATH_MAX];
	struct stat st;
	char *text;
	struct list_entry *ix;
	size_t nix;
	uint64_t used_ns;
} lists[LISTS_CACHED];

static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ull;

	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ull;
	return h;
}

static int by_hash(const void *a, const void *b)
{
	const struct list_entry *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static void list_drop(struct apt_list *l)
{
	free(l->text);
	free(l->ix);
	memset(l, 0, sizeof(*l));
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

static char *apt_cat(const char *path, size_t *len);

static bool list_index(struct apt_list *l)
{
	size_t cap = 0;

	for (const char *s = l->text; s && *s;) {
		const char *end = strstr(s, "\n\n");

		if (!strncmp(s, "Package: ", 9)) {
			if (l->nix == cap) {
				struct list_entry *n;

				cap = cap ? cap * 2 : 4096;
				n = realloc(l->ix, cap * sizeof(*n));
				if (!n)
					return false;
				l->ix = n;
			}
			l->ix[l->nix].hash = name_hash(s + 9, strcspn(s + 9, "\n"));
			l->ix[l->nix++].off = (uint32_t)(s - l->text);
		}
		s = end ? end + 2 : NULL;
	}
	if (l->nix)
		qsort(l->ix, l->nix, sizeof(*l->ix), by_hash);
	return true;
}

static const struct apt_list *list_get(const char *path, bool compressed)
{
	struct apt_list *l = &lists[0];
	struct stat st;
	size_t len = 0;

	if (strlen(path) >= sizeof(l->path) || stat(path, &st) || !S_ISREG(st.st_mode))
		return NULL;
	for (int i = 0; i < LISTS_CACHED; i++) {
		if (lists[i].text && !strcmp(lists[i].path, path)) {
			if (same_file(&lists[i].st, &st)) {
				lists[i].used_ns = now_ns(CLOCK_MONOTONIC);
				return &lists[i];
			}
			list_drop(&lists[i]);
		}
		if (lists[i].used_ns < l->used_ns)
			l = &lists[i];
	}
	list_drop(l);
	l->text = compressed ? apt_cat(path, &len) : slurp_max(path, LIST_MAX, &len);
	if (!l->text)
		return NULL;
	if (!list_index(l)) {
		list_drop(l);
		return NULL;
	}
	memcpy(l->path, path, strlen(path) + 1);
	l->st = st;
	l->used_ns = now_ns(CLOCK_MONOTONIC);
	return l;
}

static bool list_stanza(const struct apt_list *l, const char *pkg, const char *version,
			const char *field, char *out, size_t size)
{
	uint64_t h = name_hash(pkg, strlen(pkg));
	size_t lo = 0, hi = l->nix;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->ix[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < l->nix && l->ix[lo].hash == h; lo++) {
		if (stanza_at(l->text + l->ix[lo].off, pkg, version, field, out, size))
			return true;
	}
	return false;
}

void pkgmeta__expire(uint64_t now)
{
	for (int i = 0; i < LISTS_CACHED; i++) {
		if (lists[i].text && (!now || now - lists[i].used_ns >= LIST_IDLE_NS))
			list_drop(&lists[i]);
	}
}

/* ---- JSON, as much as package.json and lockfiles need ----------------------------------- */

/* Skip a JSON string starting at p (on its quote); returns the char after it. */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return end;
}

/* The value of key among the members of the object at depth 1 of json[0..len): its first byte,
 * never json + len (a file cut after the colon has no value).
 */
static const char *member(const char *json, size_t len, const char *key)
{
	const char *p = json, *end = json + len;
	size_t kl = strlen(key);
	int depth = 0;

	while (p < end) {
		if (*p == '"') {
			const char *s = p, *e = skip_string(p, end), *q = e;

			while (q < end && isspace((unsigned char)*q))
				q++;
			if (depth == 1 && q < end && *q == ':' && (size_t)(e - s - 2) == kl &&
			    !memcmp(s + 1, key, kl)) {
				for (q++; q < end && isspace((unsigned char)*q); q++)
					;
				return q < end ? q : NULL;
			}
			p = e;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			depth--;
		p++;
	}
	return NULL;
}

bool pkgmeta__json_string(const char *json, size_t len, const char *key, char *out, size_t size)
{
	const char *v = member(json, len, key), *e;
	size_t n = 0;

	if (!v || *v != '"')
		return false;
	e = skip_string(v, json + len);
	for (const char *p = v + 1; p < e - 1 && n + 1 < size; p++) {
		if (*p == '\\' && p + 1 < e - 1)
			p++;
		out[n++] = *p;
	}
	out[n] = '\0';
	return true;
}

bool pkgmeta__json_object(const char *json, size_t len, const char *key, const char **obj,
			  size_t *objlen)
{
	const char *v = member(json, len, key), *p, *end = json + len;
	int depth = 0;

	if (!v || *v != '{')
		return false;
	for (p = v; p < end; p++) {
		if (*p == '"') {
			p = skip_string(p, end) - 1;
			continue;
		}
		if (*p == '{')
			depth++;
		else if (*p == '}' && --depth == 0) {
			*obj = v;
			*objlen = (size_t)(p - v + 1);
			return true;
		}
	}
	return false;
}

/* ---- reading an installed package ------------------------------------------------------------ */

static void set_hash(struct pkg_found *f, const char *prefix, const char *val)
{
	size_t n = str_copy(f->hash, sizeof(f->hash), prefix);

	str_copy(f->hash + n, sizeof(f->hash) - n, val);
}

/* pip writes "sha256=<digest>"; egret reports "sha256:<digest>" like the others */
static void pip_hash(struct pkg_found *f, char *val, const char *from)
{
	char *eq = strchr(val, '=');

	if (eq)
		*eq = ':';
	set_hash(f, "", val);
	snprintf(f->hash_source, sizeof(f->hash_source), "%s", from);
}

static void own_hash(struct pkg_found *f, const char *path, const char *what)
{
	char hex[65];

	if (!pkgmeta__sha256_file(path, META_MAX, hex)) {
		snprintf(f->hash, sizeof(f->hash), "sha256:%s", hex);
		snprintf(f->hash_source, sizeof(f->hash_source), "egret sha256 of %s", what);
	}
}

/* A compressed apt list (lz4, gz, xz, zstd, as apt was configured to keep them), through
 * apt's own helper; NULL when there is none.
 */
static char *apt_cat(const char *path, size_t *len)
{
	static const char helper[] = "/usr/lib/apt/apt-helper";
	char *buf = NULL;
	int pfd[2], status;
	pid_t pid;
	int fd = open_regular(path, NULL);

	if (fd < 0)
		return NULL;
	close(fd);
	if (access(helper, X_OK) || pipe2(pfd, O_CLOEXEC))
		return NULL;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(pfd[1], 1);
		dup2(null, 2);
		execl(helper, helper, "cat-file", path, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	/* the file may have become a FIFO since it was checked: the helper then waits */
	if (pid > 0)
		buf = read_fd(pfd[0], LIST_MAX, now_ns(CLOCK_MONOTONIC) + HELPER_MS * 1000000ull,
			      len);
	close(pfd[0]);
	if (pid > 0) {
		kill(pid, SIGKILL); /* done with it, or it is stuck */
		waitpid(pid, &status, 0);
	}
	return buf;
}

static int read_dpkg(struct pkg_found *f, char *const *debs, size_t ndebs, const char *registry)
{
	char path[8192], val[256];
	size_t len;
	char *status;
	DIR *d;
	struct dirent *de;

	snprintf(path, sizeof(path), "%s/var/lib/dpkg/status", f->root);
	status = slurp(path, &len);
	if (!status)
		return -ENOENT;
	if (!pkgmeta__stanza(status, f->name, NULL, "Version", f->version, sizeof(f->version)) ||
	    !pkgmeta__stanza(status, f->name, NULL, "Status", val, sizeof(val)) ||
	    strncmp(val, "install ok ", 11) || strstr(val, "not-installed") ||
	    strstr(val, "config-files")) {
		free(status);
		return -ENOENT;
	}
	free(status);
	/* the .deb's SHA256 as apt's lists have it */
	snprintf(path, sizeof(path), "%s/var/lib/apt/lists", f->root);
	d = opendir(path);
	while (d && (de = readdir(d)) && !f->hash[0]) {
		char lp[8448];
		const struct apt_list *list;

		if (!strstr(de->d_name, "_Packages"))
			continue;
		snprintf(lp, sizeof(lp), "%s/%s", path, de->d_name);
		list = list_get(lp, !ends_with(de->d_name, "_Packages"));
		if (list && list_stanza(list, f->name, f->version, "SHA256", val, sizeof(val))) {
			set_hash(f, "sha256:", val);
			snprintf(f->hash_source, sizeof(f->hash_source), "apt lists (%s)",
				 de->d_name);
			if (list_stanza(list, f->name, f->version, "Filename", val, sizeof(val)))
				snprintf(f->source, sizeof(f->source), "%s%s%s",
					 registry && *registry ? registry : "",
					 registry && *registry && !ends_with(registry, "/") ? "/"
											    : "",
					 val);
		}
	}
	if (d)
		closedir(d);
	/* dpkg -i FILE.deb: that file's sha256 */
	for (size_t i = 0; i < ndebs && !f->hash[0]; i++) {
		char want[PKG_NAME_MAX + PKG_VER_MAX + 4], hex[65];
		const char *b = base(debs[i]);

		snprintf(want, sizeof(want), "%s_", f->name);
		if ((ndebs == 1 || !strncmp(b, want, strlen(want))) &&
		    !pkgmeta__sha256_file(debs[i], HASH_MAX, hex)) {
			snprintf(f->hash, sizeof(f->hash), "sha256:%s", hex);
			snprintf(f->hash_source, sizeof(f->hash_source), "sha256 of the .deb");
			snprintf(f->source, sizeof(f->source), "file://%s", debs[i]);
		}
	}
	if (!f->hash[0]) {
		snprintf(path, sizeof(path), "%s/var/lib/dpkg/info/%s.md5sums", f->root, f->name);
		own_hash(f, path, "dpkg's md5sums");
	}
	if (!f->source[0] && registry)
		snprintf(f->source, sizeof(f->source), "%s", registry);
	return 0;
}

/* RECORD's "path,sha256=<urlsafe base64>,size" line for the METADATA file */
static bool record_hash(const char *record, const char *dist, char *out, size_t size)
{
	char want[PKG_NAME_MAX * 2];
	const char *l;

	snprintf(want, sizeof(want), "%.200s/METADATA,", dist);
	for (l = record; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (!strncmp(l, want, strlen(want))) {
			const char *h = l + strlen(want);

			snprintf(out, size, "%.*s", (int)strcspn(h, ",\r\n"), h);
			return out[0] != '\0';
		}
	}
	return false;
}

static int read_pip(struct pkg_found *f)
{
	char path[8192], val[PKG_URL_MAX];
	const char *dist = base(f->root), *info;
	size_t len, ilen;
	char *text;

	snprintf(path, sizeof(path), "%s/METADATA", f->root);
	text = slurp(path, &len);
	if (!text)
		return -ENOENT;
	header_value(text, "Name", f->name, sizeof(f->name));
	header_value(text, "Version", f->version, sizeof(f->version));
	free(text);
	/* a URL or file install: the artifact and its hash */
	snprintf(path, sizeof(path), "%s/direct_url.json", f->root);
	text = slurp(path, &len);
	if (text) {
		pkgmeta__json_string(text, len, "url", f->source, sizeof(f->source));
		if (pkgmeta__json_object(text, len, "archive_info", &info, &ilen) &&
		    pkgmeta__json_string(info, ilen, "hash", val, sizeof(val)))
			pip_hash(f, val, "pip direct_url.json");
		free(text);
	}
	if (!f->hash[0]) {
		snprintf(path, sizeof(path), "%s/RECORD", f->root);
		text = slurp(path, &len);
		if (text && record_hash(text, dist, val, sizeof(val)))
			pip_hash(f, val, "pip RECORD (METADATA)");
		free(text);
	}
	if (!f->hash[0]) {
		snprintf(path, sizeof(path), "%s/METADATA", f->root);
		own_hash(f, path, "METADATA");
	}
	return 0;
}

static int read_npm(struct pkg_found *f)
{
	char path[8192], key[PKG_NAME_MAX + 16];
	const char *nm = strstr(f->root, "/node_modules/"), *entry, *last = nm;
	size_t len, elen;
	char *text;

	while (last && (nm = strstr(last + 1, "/node_modules/")))
		last = nm;
	snprintf(path, sizeof(path), "%s/package.json", f->root);
	text = slurp(path, &len);
	if (!text)
		return -ENOENT;
	pkgmeta__json_string(text, len, "name", f->name, sizeof(f->name));
	pkgmeta__json_string(text, len, "version", f->version, sizeof(f->version));
	/* older npm writes these into the installed package.json */
	pkgmeta__json_string(text, len, "_resolved", f->source, sizeof(f->source));
	if (pkgmeta__json_string(text, len, "_integrity", f->hash, sizeof(f->hash)))
		snprintf(f->hash_source, sizeof(f->hash_source), "package.json _integrity");
	free(text);
	/* npm 7+: node_modules/.package-lock.json, "packages": {"node_modules/<name>": {...}} */
	if (!f->hash[0] && last) {
		snprintf(path, sizeof(path), "%.*s/node_modules/.package-lock.json",
			 (int)(last - f->root), f->root);
		text = slurp(path, &len);
		snprintf(key, sizeof(key), "node_modules/%s", f->name);
		if (text && pkgmeta__json_object(text, len, "packages", &entry, &elen) &&
		    pkgmeta__json_object(entry, elen, key, &entry, &elen)) {
			pkgmeta__json_string(entry, elen, "resolved", f->source, sizeof(f->source));
			if (pkgmeta__json_string(entry, elen, "integrity", f->hash,
						 sizeof(f->hash)))
				snprintf(f->hash_source, sizeof(f->hash_source),
					 "npm lockfile integrity");
		}
		free(text);
	}
	if (!f->hash[0]) {
		snprintf(path, sizeof(path), "%s/package.json", f->root);
		own_hash(f, path, "package.json");
	}
	return 0;
}

int pkgmeta__read(struct pkg_found *f, char *const *debs, size_t ndebs, const char *registry)
{
	char buf[PKG_HASH_MAX];

	switch (f->layout) {
	case PKG_DPKG:
		return read_dpkg(f, debs, ndebs, registry);
	case PKG_PIP:
		if (read_pip(f))
			return -ENOENT;
		break;
	case PKG_NPM:
		if (read_npm(f))
			return -ENOENT;
		break;
	case PKG_GEM:
		if (access(f->key, R_OK))
			return -ENOENT;
		own_hash(f, f->key, "the gemspec");
		break;
	case PKG_GO:
		/* go's own hash of the module zip: "h1:<base64 sha256 of the file tree>" */
		if (read_small(f->key, buf, sizeof(buf)) <= 0)
			return -ENOENT;
		buf[strcspn(buf, "\r\n")] = '\0';
		snprintf(f->hash, sizeof(f->hash), "%s", buf);
		snprintf(f->hash_source, sizeof(f->hash_source), "go module cache .ziphash");
		break;
	default:
		return -ENOENT;
	}
	if (!f->source[0] && registry)
		snprintf(f->source, sizeof(f->source), "%s", registry);
	return 0;
}
