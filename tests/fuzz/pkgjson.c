/* Fuzz target: the JSON reader of package.json and npm's lockfile, on its own and through the
 * files an npm install leaves. Sections: package.json, node_modules/.package-lock.json, a key.
 * Invariants: no read outside the bytes given (ASan), an object found lies inside them and is
 * {...}, every string read ends inside its buffer.
 */
#include "pkgfuzz.h"
#include "pkgmeta.h"

static void check_object(const char *json, size_t len, const char *obj, size_t olen)
{
	if (obj < json || olen < 2 || olen > len || obj > json + len - olen || obj[0] != '{' ||
	    obj[olen - 1] != '}')
		abort();
}

/* The reader on the exact bytes: the keys npm's files have, nested as the lockfile nests. */
static void reader(const char *json, size_t len, const char *key)
{
	static const char *const keys[] = { "name",	"version",   "_resolved", "_integrity",
					    "resolved", "integrity", "url",	  "hash" };
	const char *obj, *inner;
	size_t olen, ilen;
	char out[96];

	for (size_t i = 0; i < ARRAY_SIZE(keys); i++) {
		if (pkgmeta__json_string(json, len, keys[i], out, sizeof(out)))
			FUZZ_TERMINATED(out);
	}
	if (pkgmeta__json_object(json, len, "packages", &obj, &olen)) {
		check_object(json, len, obj, olen);
		if (pkgmeta__json_object(obj, olen, key, &inner, &ilen)) {
			check_object(obj, olen, inner, ilen);
			if (pkgmeta__json_string(inner, ilen, "integrity", out, sizeof(out)))
				FUZZ_TERMINATED(out);
		}
	}
	if (pkgmeta__json_object(json, len, key, &obj, &olen))
		check_object(json, len, obj, olen);
}

/* The files of an npm install: node_modules/<name>/package.json and the hidden lockfile. */
static void files(const struct sections *x)
{
	const char *dir = fuzz_tmpdir();
	char path[4096];
	struct pkg_found f;

	fuzz_put(dir, "p/node_modules/demo/package.json", x->s[0], x->len[0]);
	fuzz_put(dir, "p/node_modules/.package-lock.json", x->s[1], x->len[1]);
	snprintf(path, sizeof(path), "%s/p/node_modules/demo/package.json", dir);
	if (!pkgmeta__match(path, &f))
		abort();
	if (!pkgmeta__read(&f, NULL, 0, x->s[2])) {
		FUZZ_TERMINATED(f.name);
		FUZZ_TERMINATED(f.version);
		FUZZ_TERMINATED(f.source);
		FUZZ_TERMINATED(f.hash);
		FUZZ_TERMINATED(f.hash_source);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sections x;

	sections__split(&x, data, size);
	reader(x.exact[0], x.len[0], x.s[2]);
	reader(x.exact[1], x.len[1], x.s[2]);
	files(&x);
	sections__free(&x);
	return 0;
}
