/* Fuzz target: the metadata files an install leaves and the paths that name them. The first
 * byte picks what the sections after it are (the letter, or any byte by its value mod 5):
 *   p (0) path       a path pkgmeta__match() classifies
 *   i (1) dist-info  METADATA, RECORD, direct_url.json, the dist-info's name
 *   d (2) dpkg       the package name, dpkg's status, an apt Packages list, md5sums, a
 *                    registry, a .deb given to dpkg -i
 *   s (3) stanza     text, package, version ("" for any), field; the text's bytes are also
 *                    decompressed as an lz4 frame (apt's compressed lists), into at most 1 MiB
 *   g (4) gem, go    a gemspec, a go .ziphash, a registry
 * Files are written under the target's temp dir and read by pkgmeta__read(). Invariants: no
 * read outside the bytes given (ASan), every string of a result ends inside its array, and a
 * path's package has a name and lies inside the path (npm: "name" or "@scope/name"; go: a
 * module and a one-component version).
 */
#include "aptlist.h"
#include "pkgfuzz.h"
#include "pkgmeta.h"

static void check_found(const struct pkg_found *f)
{
	FUZZ_TERMINATED(f->name);
	FUZZ_TERMINATED(f->version);
	FUZZ_TERMINATED(f->source);
	FUZZ_TERMINATED(f->hash);
	FUZZ_TERMINATED(f->hash_source);
	FUZZ_TERMINATED(f->key);
	FUZZ_TERMINATED(f->root);
}

static void path(const char *p)
{
	struct pkg_found f;
	const char *slash;

	if (!pkgmeta__match(p, &f))
		return;
	check_found(&f);
	if (strncmp(p, f.root, strlen(f.root)) || !f.name[0])
		abort(); /* a root that is not the path's prefix, a package without a name */
	if (f.layout == PKG_NPM) {
		slash = strchr(f.name, '/');
		if (!f.name[0] || (slash && (f.name[0] != '@' || strchr(slash + 1, '/'))))
			abort();
	}
	if (f.layout == PKG_DPKG && strchr(f.name, '/'))
		abort();
	if (f.layout == PKG_GO && (!f.version[0] || strchr(f.version, '/') || f.name[0] == '@'))
		abort();
}

/* s as one path component: no '/', at most 100 bytes, never "." or ".." */
static void component(char *out, size_t size, const char *s, const char *fallback)
{
	snprintf(out, size, "%.100s", *s ? s : fallback);
	for (char *c = out; *c; c++) {
		if (*c == '/')
			*c = '_';
	}
	if (!strcmp(out, ".") || !strcmp(out, ".."))
		snprintf(out, size, "%s", fallback);
}

/* write, or remove when the section is empty */
static void put(const char *dir, const char *rel, const struct sections *x, int i)
{
	fuzz_put(dir, rel, x->len[i] ? x->s[i] : NULL, x->len[i]);
}

static void dist_info(const struct sections *x, const char *dir)
{
	char name[128], rel[512];
	struct pkg_found f;

	component(name, sizeof(name), x->s[3], "demo-1.0");
	snprintf(rel, sizeof(rel), "site/%s.dist-info/METADATA", name);
	put(dir, rel, x, 0);
	snprintf(rel, sizeof(rel), "site/%s.dist-info/RECORD", name);
	put(dir, rel, x, 1);
	snprintf(rel, sizeof(rel), "site/%s.dist-info/direct_url.json", name);
	put(dir, rel, x, 2);
	snprintf(rel, sizeof(rel), "%s/site/%s.dist-info/RECORD", dir, name);
	if (pkgmeta__match(rel, &f) && !pkgmeta__read(&f, NULL, 0, NULL)) /* "-1.0": no name */
		check_found(&f);
	snprintf(rel, sizeof(rel), "%s/site", dir);
	nftw(rel, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static void dpkg(const struct sections *x, const char *dir)
{
	char name[128], rel[512], deb[512];
	char *debs[] = { deb };
	struct pkg_found f;

	component(name, sizeof(name), x->s[0], "hello");
	put(dir, "r/var/lib/dpkg/status", x, 1);
	put(dir, "r/var/lib/apt/lists/mirror_dists_x_main_binary-amd64_Packages", x, 2);
	snprintf(rel, sizeof(rel), "r/var/lib/dpkg/info/%s.md5sums", name);
	put(dir, rel, x, 3);
	snprintf(deb, sizeof(deb), "%s/hello_1.0_all.deb", dir);
	put(dir, "hello_1.0_all.deb", x, 5);
	snprintf(rel, sizeof(rel), "%s/r/var/lib/dpkg/info/%s.list", dir, name);
	if (pkgmeta__match(rel, &f) && !pkgmeta__read(&f, debs, x->len[5] ? 1 : 0, x->s[4]))
		check_found(&f);
	snprintf(rel, sizeof(rel), "r/var/lib/dpkg/info/%s.md5sums", name);
	fuzz_put(dir, rel, NULL, 0);
	pkgmeta__expire(0); /* the next input's list is read again */
}

static void stanza(const struct sections *x)
{
	char out[PKG_URL_MAX], *text;
	size_t n;

	if (pkgmeta__stanza(x->s[0], x->s[1], x->len[2] ? x->s[2] : NULL, x->s[3], out,
			    sizeof(out)))
		FUZZ_TERMINATED(out);
	text = apt_list__lz4((const unsigned char *)x->exact[0], x->len[0], 1u << 20, &n);
	if (text && (n > 1u << 20 || text[n] != '\0'))
		abort();
	free(text);
}

static void gem_go(const struct sections *x, const char *dir)
{
	char p[512];
	struct pkg_found f;

	put(dir, "g/specifications/rack-3.0.8.gemspec", x, 0);
	put(dir, "go/pkg/mod/cache/download/golang.org/x/text/@v/v0.14.0.ziphash", x, 1);
	snprintf(p, sizeof(p), "%s/g/specifications/rack-3.0.8.gemspec", dir);
	if (!pkgmeta__match(p, &f))
		abort();
	if (!pkgmeta__read(&f, NULL, 0, x->s[2]))
		check_found(&f);
	snprintf(p, sizeof(p), "%s/go/pkg/mod/cache/download/golang.org/x/text/@v/v0.14.0.ziphash",
		 dir);
	if (!pkgmeta__match(p, &f))
		abort();
	if (!pkgmeta__read(&f, NULL, 0, x->s[2]))
		check_found(&f);
}

static int mode_of(uint8_t b)
{
	const char *letter = b ? strchr("pidsg", b) : NULL;

	return letter ? (int)(letter - "pidsg") : b % 5;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *dir = fuzz_tmpdir();
	struct sections x;

	if (!size)
		return 0;
	sections__split(&x, data + 1, size - 1);
	switch (mode_of(data[0])) {
	case 0:
		path(x.s[0]);
		break;
	case 1:
		dist_info(&x, dir);
		break;
	case 2:
		dpkg(&x, dir);
		break;
	case 3:
		stanza(&x);
		break;
	default:
		gem_go(&x, dir);
	}
	sections__free(&x);
	return 0;
}
