/* Package managers and their metadata, from fixtures: which command lines are managers, the
 * registry each will use, which paths mark an installed package, and what the metadata says.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "aptlist.h"
#include "metafile.h"
#include "pkgmeta.h"
#include "util.h"

Test(pkgmeta, managers)
{
	static const struct {
		const char *argv[6];
		const char *manager;
		bool installs;
	} cases[] = {
		{ { "pip", "install", "requests" }, "pip", true },
		{ { "/usr/bin/pip3.11", "install", "-r", "req.txt" }, "pip", true },
		{ { "pip", "list" }, "pip", false },
		{ { "python3", "-m", "pip", "install", "x" }, "pip", true },
		{ { "/usr/bin/python3.11", "-m", "pip", "download", "x" }, "pip", true },
		{ { "python3", "script.py" }, NULL, false },
		{ { "pipx" }, NULL, false },
		{ { "npm", "i", "left-pad" }, "npm", true },
		{ { "npm", "test" }, "npm", false },
		{ { "yarn" }, "yarn", true },
		{ { "pnpm", "add", "x" }, "pnpm", true },
		{ { "apt-get", "-y", "install", "curl" }, "apt", true },
		{ { "apt", "update" }, "apt", false },
		{ { "dpkg", "-i", "x.deb" }, "dpkg", true },
		{ { "dpkg", "-l" }, "dpkg", false },
		{ { "gem", "install", "rails" }, "gem", true },
		{ { "cargo", "install", "ripgrep" }, "cargo", true },
		{ { "go", "install", "example.com/x@latest" }, "go", true },
		{ { "go", "test" }, "go", false },
		{ { "bash", "-c", "pip install x" }, NULL, false },
		/* #! scripts, as the kernel hands them their argv */
		{ { "/usr/bin/env", "node", "/usr/bin/npm", "install", "x" }, "npm", true },
		{ { "node", "/usr/share/nodejs/npm/bin/npm-cli.js", "ci" }, "npm", true },
		{ { "/usr/bin/python3", "/usr/bin/pip3", "install", "x" }, "pip", true },
		{ { "apt-get", "-o", "Dir=/x", "install", "y" }, "apt", true },
		{ { "python3", "-m", "venv", "v" }, NULL, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t argc = 0;
		bool installs;
		const char *m;

		while (argc < 6 && cases[i].argv[argc])
			argc++;
		m = pkgmeta__manager((char *const *)cases[i].argv, argc, &installs);
		if (cases[i].manager)
			cr_expect(m && !strcmp(m, cases[i].manager), "case %zu: %s", i,
				  m ? m : "(none)");
		else
			cr_expect_null(m, "case %zu: %s", i, m);
		cr_expect_eq(installs, cases[i].installs, "case %zu", i);
	}
}

static void registry(const char *manager, const char *const *argv, const char *env, size_t envlen,
		     const char *want, const char *want_from)
{
	char out[512], from[256];
	size_t argc = 0;

	while (argv[argc])
		argc++;
	pkgmeta__registry(manager, (char *const *)argv, argc, env, envlen, "/nonexistent", out,
			  sizeof(out), from, sizeof(from));
	cr_expect_str_eq(out, want);
	cr_expect_str_eq(from, want_from);
}

Test(pkgmeta, registries)
{
	static const char env[] = "HOME=/nonexistent\0PIP_INDEX_URL=http://mirror/simple\0"
				  "npm_config_registry=http://npm.mirror/\0";
	char dir[] = "/tmp/egret-unit-XXXXXX", list[64], arg[96];

	registry("pip", (const char *[]){ "pip", "install", "-i", "http://a/simple", "x", NULL },
		 NULL, 0, "http://a/simple", "--index-url");
	registry("pip",
		 (const char *[]){ "pip", "install", "--index-url=http://b/simple", "x", NULL },
		 NULL, 0, "http://b/simple", "--index-url");
	registry("pip", (const char *[]){ "pip", "install", "x", NULL }, env, sizeof(env),
		 "http://mirror/simple", "PIP_INDEX_URL");
	registry("pip",
		 (const char *[]){ "pip", "install", "http://c/x-1.0-py3-none-any.whl", NULL },
		 NULL, 0, "http://c/x-1.0-py3-none-any.whl", "argument");
	registry("npm", (const char *[]){ "npm", "i", "--registry", "http://r/", "x", NULL }, NULL,
		 0, "http://r/", "--registry");
	registry("npm", (const char *[]){ "npm", "i", "x", NULL }, env, sizeof(env),
		 "http://npm.mirror/", "npm_config_registry");
	registry("pip", (const char *[]){ "pip", "install", "--isolated", "x", NULL }, env,
		 sizeof(env), "https://pypi.org/simple", "default");
	/* env's words set, unset or clear what the run's first exec (env's) began with */
	registry("npm",
		 (const char *[]){ "/usr/bin/env", "npm_config_registry=http://set/", "node",
				   "/usr/bin/npm", "i", "x", NULL },
		 env, sizeof(env), "http://set/", "npm_config_registry");
	registry("pip",
		 (const char *[]){ "env", "-u", "PIP_INDEX_URL", "pip", "install", "x", NULL }, env,
		 sizeof(env), "https://pypi.org/simple", "default");
	registry("pip",
		 (const char *[]){ "env", "-i", "HOME=/nonexistent", "pip", "install", "x", NULL },
		 env, sizeof(env), "https://pypi.org/simple", "default");
	registry("pip",
		 (const char *[]){ "env", "-i", "PIP_INDEX_URL=http://again/simple", "pip",
				   "install", "x", NULL },
		 env, sizeof(env), "http://again/simple", "PIP_INDEX_URL");
	registry("gem", (const char *[]){ "gem", "install", "x", NULL }, NULL, 0,
		 "https://rubygems.org", "default");
	registry("dpkg", (const char *[]){ "dpkg", "-i", "/tmp/x_1.0_all.deb", NULL }, NULL, 0,
		 "file:///tmp/x_1.0_all.deb", "argument");
	cr_assert(mkdtemp(dir));
	snprintf(list, sizeof(list), "%s/sources.list", dir);

	{
		FILE *f = fopen(list, "w");

		fputs("# local\ndeb [trusted=yes] http://192.0.2.20:8000/repo ./\n", f);
		fclose(f);
	}
	snprintf(arg, sizeof(arg), "Dir::Etc::sourcelist=%s", list);
	registry("apt", (const char *[]){ "apt-get", "-o", arg, "install", "x", NULL }, NULL, 0,
		 "http://192.0.2.20:8000/repo", list);
	unlink(list);
	rmdir(dir);
}

Test(pkgmeta, metadata_paths)
{
	struct pkg_found f;

	cr_assert(pkgmeta__match("/tmp/r/var/lib/dpkg/info/hello:amd64.list", &f));
	cr_expect_eq(f.layout, PKG_DPKG);
	cr_expect_str_eq(f.name, "hello");
	cr_expect_str_eq(f.root, "/tmp/r");
	cr_assert(
		pkgmeta__match("/usr/lib/python3/dist-packages/Demo_Pkg-1.2.dist-info/RECORD", &f));
	cr_expect_eq(f.layout, PKG_PIP);
	cr_expect_str_eq(f.name, "Demo_Pkg");
	cr_expect_str_eq(f.version, "1.2");
	cr_assert(pkgmeta__match("/t/site/demo_pkg-1.0.dist-info", &f));
	cr_expect_str_eq(f.root, "/t/site/demo_pkg-1.0.dist-info");
	cr_expect_str_eq(f.name, "demo_pkg");
	cr_assert(pkgmeta__match("/p/node_modules/left-pad/package.json", &f));
	cr_expect_eq(f.layout, PKG_NPM);
	cr_expect_str_eq(f.name, "left-pad");
	cr_assert(pkgmeta__match("/p/node_modules/a/node_modules/@s/b/package.json", &f));
	cr_expect_str_eq(f.name, "@s/b");
	cr_expect_not(pkgmeta__match("/p/node_modules/a/lib/package.json", &f));
	cr_expect_not(pkgmeta__match("/p/node_modules/.package-lock.json", &f));
	cr_expect_not(pkgmeta__match("/p/package.json", &f));
	cr_assert(pkgmeta__match("/g/specifications/rack-3.0.8.gemspec", &f));
	cr_expect_str_eq(f.name, "rack");
	cr_expect_str_eq(f.version, "3.0.8");
	cr_assert(pkgmeta__match("/go/pkg/mod/cache/download/golang.org/x/text/@v/v0.14.0.ziphash",
				 &f));
	cr_expect_str_eq(f.name, "golang.org/x/text");
	cr_expect_str_eq(f.version, "v0.14.0");
	cr_expect_not(pkgmeta__match("/var/lib/dpkg/status", &f));
}

/* The manager a PackageInstall names comes from the table entry whose files the path is. */
Test(pkgmeta, layouts_name_their_managers)
{
	static const struct {
		const char *path, *manager;
		enum pkg_layout layout;
	} cases[] = {
		{ "/r/var/lib/dpkg/info/hello.list", "dpkg", PKG_DPKG },
		{ "/s/demo-1.0.dist-info/METADATA", "pip", PKG_PIP },
		{ "/p/node_modules/demo/package.json", "npm", PKG_NPM },
		{ "/g/specifications/rack-3.0.8.gemspec", "gem", PKG_GEM },
		{ "/go/pkg/mod/cache/download/example.com/m/@v/v1.0.0.ziphash", "go", PKG_GO },
	};
	struct pkg_found f;

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		cr_assert(pkgmeta__match(cases[i].path, &f), "%s", cases[i].path);
		cr_expect_eq(f.layout, cases[i].layout, "%s", cases[i].path);
		cr_expect_str_eq(pkgmeta__layout_name(f.layout), cases[i].manager);
	}
	cr_expect_str_eq(pkgmeta__layout_name(PKG_NONE), "");
}

/* Paths that look like metadata but name no package: an empty name (dpkg's, a gem's, a
 * dist-info's, npm's), a go module path or version that is empty or not one component.
 */
Test(pkgmeta, paths_without_a_name_are_not_packages)
{
	static const char *const paths[] = {
		"/r/var/lib/dpkg/info/:amd64.list",
		"/r/var/lib/dpkg/info/.list",
		"/g/specifications/.gemspec",
		"/g/specifications/-1.0.gemspec",
		"/s/-1.0.dist-info",
		"/s/.dist-info/RECORD",
		"/go/pkg/mod/cache/download/@v/v1.0.ziphash",
		"/go/pkg/mod/cache/download//@v/v1.0.ziphash",
		"/go/pkg/mod/cache/download/m/@v/.ziphash",
		"/go/pkg/mod/cache/download/m/@v/sub/v1.ziphash",
		/* found by CI's 30 s of the pkgfiles target: "@v/v0.14.0.d" named the module */
		"/go/pkg/mod/cache/download/@v/v0.14.0.d/@v/v0.14.0.ziphash",
		"/go/pkg/mod/cache/download/m/@v/x/@v/v1.ziphash",
		"/go/pkg/mod/cache/download/m//n/@v/v1.ziphash",
	};
	struct pkg_found f;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++)
		cr_expect_not(pkgmeta__match(paths[i], &f), "%s: name '%s' version '%s'", paths[i],
			      f.name, f.version);
	cr_assert(pkgmeta__match("/go/pkg/mod/cache/download/example.com/m/@v/v1.2.3.ziphash", &f));
	cr_expect_str_eq(f.name, "example.com/m");
	cr_expect_str_eq(f.version, "v1.2.3");
}

/* npm's path shapes around a scope, each matched from the end of a page followed by an
 * inaccessible one: a scope directory's own package.json once made the name check read past
 * the path's end (memchr of (size_t)-1 bytes).
 */
Test(pkgmeta, npm_scope_paths_stay_in_bounds)
{
	static const struct {
		const char *path, *name; /* name NULL: not a package */
	} cases[] = {
		{ "/p/node_modules/@scope/package.json", NULL },
		{ "node_modules/@scope/package.json", NULL },
		{ "/p/node_modules/@/x/package.json", NULL },
		{ "/p/node_modules/@/package.json", NULL },
		{ "/p/node_modules/@s//package.json", NULL },
		{ "/p/node_modules/@scope", NULL },
		{ "/p/node_modules/@scope/", NULL },
		{ "/p/node_modules/@scope/x/lib/package.json", NULL },
		{ "/p/node_modules/@scope/.bin/package.json", NULL },
		{ "/p/node_modules//package.json", NULL },
		{ "/node_modules/package.json", NULL },
		{ "/p/node_modules/@scope/x/package.json", "@scope/x" },
		{ "/p/node_modules/a/node_modules/@s/b/package.json", "@s/b" },
		{ "/p/node_modules/x/package.json", "x" },
	};
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *map =
		mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct pkg_found f;

	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(mprotect(map + page, page, PROT_NONE), 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		size_t len = strlen(cases[i].path) + 1;
		char *at = map + page - len;

		memcpy(at, cases[i].path, len);
		if (!cases[i].name) {
			cr_expect_not(pkgmeta__match(at, &f), "%s: matched as '%s'", at, f.name);
			continue;
		}
		cr_expect(pkgmeta__match(at, &f), "%s", at);
		cr_expect_str_eq(f.name, cases[i].name, "%s", at);
		cr_expect_eq(f.layout, PKG_NPM, "%s", at);
	}
	munmap(map, 2 * page);
}

Test(pkgmeta, json_and_stanzas)
{
	static const char lock[] =
		"{\"name\":\"proj\",\"packages\":{\"\":{\"dependencies\":{\"demo\":\"1.0.0\"}},"
		"\"node_modules/demo\":{\"version\":\"1.0.0\",\"resolved\":\"file:../demo.tgz\","
		"\"integrity\":\"sha512-abc\\/def==\"}}}";
	static const char status[] = "Package: a\nStatus: install ok installed\nVersion: 1\n\n"
				     "Package: ab\nVersion: 2.0\nSHA256: ff00\n";
	const char *obj;
	size_t len;
	char out[128];

	cr_assert(pkgmeta__json_string(lock, sizeof(lock) - 1, "name", out, sizeof(out)));
	cr_expect_str_eq(out, "proj");
	cr_assert(pkgmeta__json_object(lock, sizeof(lock) - 1, "packages", &obj, &len));
	cr_assert(pkgmeta__json_object(obj, len, "node_modules/demo", &obj, &len));
	cr_assert(pkgmeta__json_string(obj, len, "integrity", out, sizeof(out)));
	cr_expect_str_eq(out, "sha512-abc/def==");
	cr_expect_not(pkgmeta__json_string(obj, len, "dependencies", out, sizeof(out)));
	cr_assert(pkgmeta__stanza(status, "ab", "2.0", "SHA256", out, sizeof(out)));
	cr_expect_str_eq(out, "ff00");
	cr_expect_not(pkgmeta__stanza(status, "ab", "3.0", "SHA256", out, sizeof(out)));
	cr_assert(pkgmeta__stanza(status, "a", NULL, "Version", out, sizeof(out)));
	cr_expect_str_eq(out, "1");
}

/* Metadata files are written by the sandbox: the JSON reader must stay inside the bytes it is
 * given whatever they are. Every truncation of a lockfile and 20,000 random mutations of it
 * are parsed from the very end of a page followed by an inaccessible one, so reading one byte
 * too far faults.
 */
Test(pkgmeta, hostile_json_stays_in_bounds)
{
	static const char lock[] =
		"{\"name\":\"p\\\"q\",\"packages\":{\"node_modules/demo\":{\"version\":\"1.0.0\","
		"\"resolved\":\"http://r/demo.tgz\",\"integrity\":\"sha512-abc\\/d\\u0041==\","
		"\"deps\":[1,{\"a\":[\"}\"]},true,null]}}}";
	size_t page = (size_t)sysconf(_SC_PAGESIZE), n = sizeof(lock) - 1;
	char *map =
		mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char mut[sizeof(lock)], out[64] = "";
	const char *obj;
	size_t olen;
	unsigned int seed = 7;

	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(mprotect(map + page, page, PROT_NONE), 0);
	for (size_t len = 0; len <= n; len++) {
		char *at = map + page - len;

		memcpy(at, lock, len);
		pkgmeta__json_string(at, len, "name", out, sizeof(out));
		if (pkgmeta__json_object(at, len, "packages", &obj, &olen)) {
			cr_assert(obj >= at && obj + olen <= at + len);
			if (pkgmeta__json_object(obj, olen, "node_modules/demo", &obj, &olen))
				pkgmeta__json_string(obj, olen, "integrity", out, sizeof(out));
		}
	}
	for (int i = 0; i < 20000; i++) {
		size_t len = (size_t)rand_r(&seed) % (n + 1);
		char *at = map + page - len;

		memcpy(mut, lock, n);
		for (int k = rand_r(&seed) % 4; k >= 0; k--)
			mut[rand_r(&seed) % n] = "{}[]\"\\:,u0 "[rand_r(&seed) % 12];
		memcpy(at, mut, len);
		pkgmeta__json_string(at, len, "name", out, sizeof(out));
		cr_assert_lt(strlen(out), sizeof(out));
		if (pkgmeta__json_object(at, len, "packages", &obj, &olen)) {
			cr_assert(obj >= at && obj + olen <= at + len);
			pkgmeta__json_string(obj, olen, "version", out, sizeof(out));
		}
	}
	/* the whole, unharmed, still reads */
	memcpy(map + page - n, lock, n);
	cr_assert(pkgmeta__json_string(map + page - n, n, "name", out, sizeof(out)));
	cr_expect_str_eq(out, "p\"q");
	munmap(map, 2 * page);
}

static void put(const char *dir, const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* The config files each manager reads, in its order: pip prefers the virtualenv's pip.conf to
 * the user's, npm the project's .npmrc to the user's.
 */
Test(pkgmeta, registries_from_config_files)
{
	char dir[] = "/tmp/egret-unit-XXXXXX", p[256], env[512], out[256], from[256], want[320];
	char *pip[] = { "pip", "install", "x" }, *npm[] = { "npm", "install", "x" };
	int envlen;

	cr_assert(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/home/.config/pip", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "pip.conf", "[global]\ntimeout = 5\nindex-url = http://user/simple # mirror\n");
	snprintf(p, sizeof(p), "%s/home", dir);
	put(p, ".npmrc", "registry=http://user-npm/\n");
	envlen = snprintf(env, sizeof(env), "HOME=%s/home%cVIRTUAL_ENV=%s/venv", dir, 0, dir) + 1;

	pkgmeta__registry("pip", pip, 3, env, (size_t)envlen, "/", out, sizeof(out), from,
			  sizeof(from));
	cr_expect_str_eq(out, "http://user/simple");
	snprintf(want, sizeof(want), "%s/home/.config/pip/pip.conf", dir);
	cr_expect_str_eq(from, want);

	snprintf(p, sizeof(p), "%s/venv", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "pip.conf", "[global]\nindex-url=http://venv/simple\n");
	pkgmeta__registry("pip", pip, 3, env, (size_t)envlen, "/", out, sizeof(out), from,
			  sizeof(from));
	cr_expect_str_eq(out, "http://venv/simple");

	snprintf(want, sizeof(want), "%s/home", dir);
	pkgmeta__registry("npm", npm, 3, env, (size_t)envlen, want, out, sizeof(out), from,
			  sizeof(from));
	cr_expect_str_eq(out, "http://user-npm/");
	snprintf(p, sizeof(p), "%s/proj", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, ".npmrc", "registry = http://project-npm/\n");
	pkgmeta__registry("npm", npm, 3, env, (size_t)envlen, p, out, sizeof(out), from,
			  sizeof(from));
	cr_expect_str_eq(out, "http://project-npm/");
	snprintf(want, sizeof(want), "%s/proj/.npmrc", dir);
	cr_expect_str_eq(from, want);

	snprintf(p, sizeof(p), "rm -rf %s", dir);
	cr_expect_eq(system(p), 0);
}

Test(pkgmeta, reading_installed_packages)
{
	char dir[] = "/tmp/egret-unit-XXXXXX", p[512], cmd[64];
	struct pkg_found f;

	cr_assert(mkdtemp(dir));
	/* pip: direct_url.json's archive hash wins; without it, RECORD's METADATA line */
	snprintf(p, sizeof(p), "%s/site/demo_pkg-1.0.dist-info", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "METADATA", "Metadata-Version: 2.1\nName: demo-pkg\nVersion: 1.0\n\nbody\n");
	put(p, "RECORD",
	    "demo_pkg/__init__.py,sha256=AAA,0\n"
	    "demo_pkg-1.0.dist-info/METADATA,sha256=MmMm,52\n");
	snprintf(p, sizeof(p), "%s/site/demo_pkg-1.0.dist-info/RECORD", dir);
	cr_assert(pkgmeta__match(p, &f));
	cr_assert_eq(pkgmeta__read(&f, NULL, 0, "http://idx/simple"), 0);
	cr_expect_str_eq(f.name, "demo-pkg");
	cr_expect_str_eq(f.version, "1.0");
	cr_expect_str_eq(f.hash, "sha256:MmMm");
	cr_expect_str_eq(f.hash_source, "pip RECORD (METADATA)");
	cr_expect_str_eq(f.source, "http://idx/simple");
	snprintf(p, sizeof(p), "%s/site/demo_pkg-1.0.dist-info", dir);
	put(p, "direct_url.json",
	    "{\"archive_info\": {\"hash\": \"sha256=0123abcd\", \"hashes\": {\"sha256\": "
	    "\"0123abcd\"}}, \"url\": \"http://h/demo_pkg-1.0-py3-none-any.whl\"}");
	snprintf(p, sizeof(p), "%s/site/demo_pkg-1.0.dist-info/RECORD", dir);
	cr_assert(pkgmeta__match(p, &f));
	cr_assert_eq(pkgmeta__read(&f, NULL, 0, NULL), 0);
	cr_expect_str_eq(f.hash, "sha256:0123abcd");
	cr_expect_str_eq(f.source, "http://h/demo_pkg-1.0-py3-none-any.whl");
	/* npm: the hidden lockfile's integrity and resolved */
	snprintf(p, sizeof(p), "%s/proj/node_modules/demo", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "package.json",
	    "{\"name\": \"demo\", \"version\": \"1.0.0\", \"author\": "
	    "{\"name\": \"x\"}}");
	snprintf(p, sizeof(p), "%s/proj/node_modules", dir);
	put(p, ".package-lock.json",
	    "{\"packages\": {\"node_modules/demo\": {\"version\": \"1.0.0\", \"resolved\": "
	    "\"http://reg/demo/-/demo-1.0.0.tgz\", \"integrity\": \"sha512-QQ==\"}}}");
	snprintf(p, sizeof(p), "%s/proj/node_modules/demo/package.json", dir);
	cr_assert(pkgmeta__match(p, &f));
	cr_assert_eq(pkgmeta__read(&f, NULL, 0, NULL), 0);
	cr_expect_str_eq(f.name, "demo");
	cr_expect_str_eq(f.version, "1.0.0");
	cr_expect_str_eq(f.hash, "sha512-QQ==");
	cr_expect_str_eq(f.source, "http://reg/demo/-/demo-1.0.0.tgz");
	/* dpkg: status for the version, apt's lists for the .deb's SHA256 */
	snprintf(p, sizeof(p), "%s/root/var/lib/dpkg/info", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "hello.md5sums", "d41d8cd98f00b204e9800998ecf8427e  usr/share/hello\n");
	snprintf(p, sizeof(p), "%s/root/var/lib/dpkg", dir);
	put(p, "status", "Package: hello\nStatus: install ok installed\nVersion: 2.10-3\n\n");
	snprintf(p, sizeof(p), "%s/root/var/lib/apt/lists", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "192.0.2.20:8000_repo_._Packages",
	    "Package: hello\nVersion: 2.10-3\nFilename: ./hello_2.10-3_all.deb\nSHA256: beef\n");
	snprintf(p, sizeof(p), "%s/root/var/lib/dpkg/info/hello.list", dir);
	cr_assert(pkgmeta__match(p, &f));
	cr_assert_eq(pkgmeta__read(&f, NULL, 0, "http://192.0.2.20:8000/repo"), 0);
	cr_expect_str_eq(f.version, "2.10-3");
	cr_expect_str_eq(f.hash, "sha256:beef");
	cr_expect_str_eq(f.source, "http://192.0.2.20:8000/repo/./hello_2.10-3_all.deb");
	/* not installed (any more): nothing to report */
	snprintf(p, sizeof(p), "%s/root/var/lib/dpkg/info/gone.list", dir);
	cr_assert(pkgmeta__match(p, &f));
	cr_expect_eq(pkgmeta__read(&f, NULL, 0, NULL), -ENOENT);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	cr_expect_eq(system(cmd), 0);
}

/* apt's lists are indexed once: a list of 60,000 stanzas with two versions of the package
 * answers for the installed version; rewritten, it is read again.
 */
Test(pkgmeta, apt_lists_indexed_and_reread)
{
	char dir[] = "/tmp/egret-unit-XXXXXX", p[256], list[320];
	struct pkg_found f;
	FILE *out;

	cr_assert(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/var/lib/dpkg/info", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/var/lib/dpkg", dir);
	put(p, "status", "Package: zz-late\nStatus: install ok installed\nVersion: 2.0\n");
	snprintf(p, sizeof(p), "%s/var/lib/apt/lists", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	snprintf(list, sizeof(list), "%s/mirror_dists_x_main_binary-amd64_Packages", p);
	out = fopen(list, "w");
	cr_assert(out);
	for (int i = 0; i < 60000; i++)
		fprintf(out,
			"Package: pkg%05d\nVersion: 1\nFilename: pool/p%d.deb\nSHA256: %064d\n\n",
			i, i, i);
	fputs("Package: zz-late\nVersion: 1.0\nFilename: pool/zz_1.0.deb\nSHA256: 10\n\n"
	      "Package: zz-late\nVersion: 2.0\nFilename: pool/zz_2.0.deb\nSHA256: 20\n",
	      out);
	fclose(out);
	snprintf(p, sizeof(p), "%s/var/lib/dpkg/info/zz-late.list", dir);
	cr_assert(pkgmeta__match(p, &f));
	cr_assert_eq(pkgmeta__read(&f, NULL, 0, "http://mirror/debian"), 0);
	cr_expect_str_eq(f.version, "2.0");
	cr_expect_str_eq(f.hash, "sha256:20");
	cr_expect_str_eq(f.source, "http://mirror/debian/pool/zz_2.0.deb");

	/* apt update brought a new list: same name, other contents */
	out = fopen(list, "w");
	cr_assert(out);
	fputs("Package: zz-late\nVersion: 2.0\nFilename: pool/zz_2.0.deb\nSHA256: 21\n", out);
	fclose(out);
	cr_assert(pkgmeta__match(p, &f));
	cr_assert_eq(pkgmeta__read(&f, NULL, 0, "http://mirror/debian"), 0);
	cr_expect_str_eq(f.hash, "sha256:21");
	pkgmeta__expire(0);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	cr_expect_eq(system(p), 0);
}

/* A sandbox names the files egretd reads: FIFOs where metadata should be are not opened (an
 * open would wait for a writer forever), and the package is reported from what can be read.
 */
Test(pkgmeta, a_fifo_for_metadata_does_not_block, .timeout = 10)
{
	char dir[] = "/tmp/egret-unit-XXXXXX", p[256], q[320];
	struct pkg_found f;

	cr_assert(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/node_modules/evil", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	snprintf(q, sizeof(q), "%s/package.json", p);
	cr_assert_eq(mkfifo(q, 0644), 0);
	cr_assert(pkgmeta__match(q, &f));
	cr_expect_eq(pkgmeta__read(&f, NULL, 0, NULL), -ENOENT);

	/* a dist-info whose METADATA is real and RECORD is a FIFO: read, hashed by egret */
	snprintf(p, sizeof(p), "%s/site/evil-1.0.dist-info", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "METADATA", "Name: evil\nVersion: 1.0\n");
	snprintf(q, sizeof(q), "%s/RECORD", p);
	cr_assert_eq(mkfifo(q, 0644), 0);
	snprintf(q, sizeof(q), "%s/direct_url.json", p);
	cr_assert_eq(mkfifo(q, 0644), 0);
	cr_assert(pkgmeta__match(q, &f) || pkgmeta__match(p, &f));
	cr_assert_eq(pkgmeta__read(&f, NULL, 0, NULL), 0);
	cr_expect_str_eq(f.name, "evil");
	cr_expect(!strncmp(f.hash_source, "egret sha256 of", 15), "%s", f.hash_source);

	/* a FIFO for a .deb given to dpkg is not hashed */
	snprintf(q, sizeof(q), "%s/x.deb", dir);
	cr_assert_eq(mkfifo(q, 0644), 0);
	cr_expect_eq(pkgmeta__sha256_file(PKG_ROOT_HOST, q, 1u << 30, p), -EINVAL);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	cr_expect_eq(system(p), 0);
}

/* ---- reading inside a sandbox's root --------------------------------------------------------- */

static int open_root(const char *dir)
{
	int fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);

	cr_assert_geq(fd, 0, "%s", dir);
	return fd;
}

static void symlink_at(const char *target, const char *dir, const char *name)
{
	char path[512];

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	cr_assert_eq(symlink(target, path), 0, "%s", path);
}

/* A root "root" with a dist-info and an etc/passwd of its own: every path, absolute symlink and
 * ".." resolves inside it, never in egretd's own file system.
 */
Test(pkgmeta, reads_stay_inside_the_root, .timeout = 10)
{
	char dir[] = "/tmp/egret-unit-XXXXXX", root[64], p[256], buf[256];
	size_t len;
	char *text;
	int rfd;

	cr_assert(mkdtemp(dir));
	snprintf(root, sizeof(root), "%s/root", dir);
	snprintf(p, sizeof(p), "%s/usr/lib/x-1.0.dist-info", root);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "METADATA", "Name: x\nVersion: 1.0\n");
	snprintf(p, sizeof(p), "%s/etc", root);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "passwd", "inside:x:0:0::/:/bin/sh\n");
	snprintf(p, sizeof(p), "%s/usr/lib", root);
	symlink_at("/etc/passwd", p, "abs");			   /* absolute: root/etc/passwd */
	symlink_at("../../../../../../../../etc/passwd", p, "up"); /* climbs to root, not past */
	symlink_at("/etc/hostname", p, "hostonly");		   /* only the host has one */
	symlink_at("/", p, "slash");
	cr_assert_eq(mkfifo(strcat(p, "/fifo"), 0644), 0);
	rfd = open_root(root);

	text = metafile__slurp(rfd, "/usr/lib/x-1.0.dist-info/METADATA", &len);
	cr_assert(text);
	cr_expect_str_eq(text, "Name: x\nVersion: 1.0\n");
	free(text);
	cr_expect_gt(metafile__read_small(rfd, "/usr/lib/abs", buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "inside:x:0:0::/:/bin/sh\n", "an absolute symlink left the root");
	cr_expect_gt(metafile__read_small(rfd, "/usr/lib/up", buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "inside:x:0:0::/:/bin/sh\n", "a relative symlink left the root");
	cr_expect_gt(metafile__read_small(rfd, "/../../../../etc/passwd", buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "inside:x:0:0::/:/bin/sh\n", "\"..\" left the root");
	cr_expect_gt(metafile__read_small(rfd, "usr/lib/slash/etc/passwd", buf, sizeof(buf)), 0);
	cr_expect_str_eq(buf, "inside:x:0:0::/:/bin/sh\n");
	cr_expect_lt(metafile__read_small(rfd, "/usr/lib/hostonly", buf, sizeof(buf)), 0,
		     "read the host's /etc/hostname: %s", buf);
	cr_expect_eq(metafile__open(rfd, "/usr/lib/fifo", NULL), -EINVAL, "a FIFO was opened");
	cr_expect(metafile__exists(rfd, "/usr/lib/abs"));
	cr_expect_not(metafile__exists(rfd, "/usr/lib/hostonly"));
	/* nothing at all without a root */
	cr_expect_eq(metafile__open(PKG_ROOT_NONE, "/usr/lib/abs", NULL), -ENOENT);
	cr_expect_eq(metafile__open(PKG_ROOT_NONE, p, NULL), -ENOENT);
	close(rfd);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	cr_expect_eq(system(p), 0);
}

/* Magic links (/proc/PID/fd/N, /proc/PID/root) are refused, whoever's root it is: through them a
 * sandbox could name a file of any process, egretd's own open files among them.
 */
Test(pkgmeta, magic_links_are_refused)
{
	char dir[] = "/tmp/egret-unit-XXXXXX", p[256], link[64], buf[64];
	int secret, slash;

	cr_assert(mkdtemp(dir));
	put(dir, "secret", "Name: secret\nVersion: 6.6.6\n");
	snprintf(p, sizeof(p), "%s/secret", dir);
	secret = open(p, O_RDONLY | O_CLOEXEC);
	cr_assert_geq(secret, 0);
	snprintf(link, sizeof(link), "/proc/self/fd/%d", secret);
	symlink_at(link, dir, "METADATA");
	snprintf(p, sizeof(p), "%s/METADATA", dir);
	cr_assert_gt(read_file(p, buf, sizeof(buf)), 0, "the control: open(2) follows it");
	cr_expect_eq(metafile__open(PKG_ROOT_HOST, p, NULL), -ELOOP);
	cr_expect_eq(metafile__open(PKG_ROOT_HOST, link, NULL), -ELOOP);
	slash = open_root("/");
	cr_expect_eq(metafile__open(slash, p, NULL), -ELOOP);
	cr_expect_eq(metafile__open(slash, "/proc/self/root/etc/passwd", NULL), -ELOOP);
	close(slash);
	close(secret);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	cr_expect_eq(system(p), 0);
}

/* A package, its registry's config files and apt's sources, all read in the root given. */
Test(pkgmeta, packages_and_config_read_in_the_root)
{
	char dir[] = "/tmp/egret-unit-XXXXXX", root[64], p[256], out[256], from[256];
	char *pip[] = { "pip", "install", "x" }, *apt[] = { "apt-get", "install", "x" };
	struct pkg_found f;
	int rfd;

	cr_assert(mkdtemp(dir));
	snprintf(root, sizeof(root), "%s/root", dir);
	snprintf(p, sizeof(p), "%s/site/demo-2.0.dist-info", root);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "METADATA", "Name: demo\nVersion: 2.0-in-root\n");
	snprintf(p, sizeof(p), "%s/etc/apt/sources.list.d", root);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	put(p, "x.list", "deb http://root-apt/debian bookworm main\n");
	snprintf(p, sizeof(p), "%s/etc", root);
	put(p, "pip.conf", "[global]\nindex-url = http://root-pip/simple\n");
	rfd = open_root(root);

	/* the path is the sandbox's: /site/..., which egretd's / does not have */
	cr_assert(pkgmeta__match("/site/demo-2.0.dist-info/METADATA", &f));
	cr_assert_eq(pkgmeta__read_in(rfd, &f, NULL, 0, NULL), 0);
	cr_expect_str_eq(f.version, "2.0-in-root");
	cr_expect(!strncmp(f.hash_source, "egret sha256 of", 15), "%s", f.hash_source);
	cr_assert(pkgmeta__match("/site/demo-2.0.dist-info/METADATA", &f));
	cr_expect_eq(pkgmeta__read_in(PKG_ROOT_NONE, &f, NULL, 0, NULL), -ENOENT);

	pkgmeta__registry_in(rfd, "pip", pip, 3, NULL, 0, "/", out, sizeof(out), from,
			     sizeof(from));
	cr_expect_str_eq(out, "http://root-pip/simple");
	cr_expect_str_eq(from, "/etc/pip.conf");
	pkgmeta__registry_in(rfd, "apt", apt, 3, NULL, 0, "/", out, sizeof(out), from,
			     sizeof(from));
	cr_expect_str_eq(out, "http://root-apt/debian");
	/* no root: no config file is read */
	pkgmeta__registry_in(PKG_ROOT_NONE, "pip", pip, 3, NULL, 0, "/", out, sizeof(out), from,
			     sizeof(from));
	cr_expect_str_eq(from, "default");
	close(rfd);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	cr_expect_eq(system(p), 0);
}

/* a whole small file, malloc'd */
static char *read_all(const char *path, size_t *len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *buf;

	if (fd < 0)
		return NULL;
	buf = metafile__read_fd(fd, 1 << 20, 0, len);
	close(fd);
	return buf;
}

/* apt's compressed lists are decompressed from the descriptor opened in the root: lz4 by egret
 * (linked 64 KiB blocks; every truncation of a frame refused or read, never read past), gz by
 * the host's gzip.
 */
Test(pkgmeta, compressed_apt_lists_in_the_root)
{
	char dir[] = "/tmp/egret-unit-XXXXXX", lists[128], p[512], cmd[1024];
	const char *list = "Package: zz\nVersion: 1.0\nFilename: pool/zz_1.0.deb\nSHA256: 4242\n";
	struct pkg_found f;
	size_t len, n;
	char *lz, *text;
	FILE *big;
	int rfd;

	if (access("/usr/bin/lz4", X_OK) || access("/usr/bin/gzip", X_OK))
		cr_skip_test("needs lz4 and gzip to make the lists");
	cr_assert(mkdtemp(dir));
	snprintf(p, sizeof(p), "%s/var/lib/dpkg/info", dir);
	cr_assert_eq(mkdir_p(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/var/lib/dpkg", dir);
	put(p, "status",
	    "Package: zz\nStatus: install ok installed\nVersion: 1.0\n\n"
	    "Package: yy\nStatus: install ok installed\nVersion: 2.0\n");
	snprintf(lists, sizeof(lists), "%s/var/lib/apt/lists", dir);
	cr_assert_eq(mkdir_p(lists, 0755), 0);
	/* 400 KiB: several blocks, matches reaching into the block before */
	snprintf(p, sizeof(p), "%s/plain", lists);
	big = fopen(p, "w");
	cr_assert(big);
	for (int i = 0; i < 5000; i++)
		fprintf(big, "Package: p%d\nVersion: 1\nFilename: pool/p%d.deb\nSHA256: %d\n\n", i,
			i, i);
	fputs(list, big);
	fclose(big);
	snprintf(cmd, sizeof(cmd),
		 "lz4 -q -z -B4 -BD --content-size %s/plain %s/m_main_binary-amd64_Packages.lz4 && "
		 "printf 'Package: yy\\nVersion: 2.0\\nSHA256: 77\\n' | gzip -c "
		 ">%s/n_main_binary-amd64_Packages.gz && rm %s/plain",
		 lists, lists, lists, lists);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	rfd = open_root(dir);

	cr_assert(pkgmeta__match("/var/lib/dpkg/info/zz.list", &f));
	cr_assert_eq(pkgmeta__read_in(rfd, &f, NULL, 0, "http://m"), 0);
	cr_expect_str_eq(f.hash, "sha256:4242");
	cr_expect_str_eq(f.hash_source, "apt lists (m_main_binary-amd64_Packages.lz4)");
	cr_expect_str_eq(f.source, "http://m/pool/zz_1.0.deb");
	cr_assert(pkgmeta__match("/var/lib/dpkg/info/yy.list", &f));
	cr_assert_eq(pkgmeta__read_in(rfd, &f, NULL, 0, NULL), 0);
	cr_expect_str_eq(f.hash, "sha256:77");
	pkgmeta__expire(0);

	snprintf(p, sizeof(p), "%s/m_main_binary-amd64_Packages.lz4", lists);
	lz = read_all(p, &len);
	cr_assert(lz);
	text = apt_list__lz4((unsigned char *)lz, len, 1 << 20, &n);
	cr_assert(text);
	cr_expect_eq(n, strlen(text));
	cr_expect(n > 300000 && !strcmp(text + n - strlen(list), list));
	free(text);
	cr_expect_null(apt_list__lz4((unsigned char *)lz, len, 100000, &n),
		       "more than max was decompressed");
	free(lz);
	/* a small one, cut everywhere */
	put(lists, "small", list);
	snprintf(cmd, sizeof(cmd), "lz4 -q -z %s/small %s/small.lz4", lists, lists);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	snprintf(p, sizeof(p), "%s/small.lz4", lists);
	lz = read_all(p, &len);
	cr_assert(lz);
	text = apt_list__lz4((unsigned char *)lz, len, 1 << 20, &n);
	cr_assert(text);
	cr_expect_str_eq(text, list);
	free(text);
	for (size_t cut = 0; cut < len; cut++) {
		unsigned char *exact = malloc(cut ? cut : 1);

		memcpy(exact, lz, cut);
		text = apt_list__lz4(exact, cut, 1 << 20, &n);
		cr_expect(!text || n <= strlen(list));
		free(text);
		free(exact);
	}
	free(lz);
	close(rfd);
	snprintf(p, sizeof(p), "rm -rf %s", dir);
	cr_expect_eq(system(p), 0);
}
