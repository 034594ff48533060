/* Fuzz target: recognising a package manager from its argv, and the registry a run will use
 * from its arguments, environment and config files. Sections: argv (one word a line), the
 * environment (K=V a line), then the files pip.conf (user), pip.conf (virtualenv), .npmrc and
 * an apt sources.list, written under the target's temp dir (HOME, VIRTUAL_ENV and the apt
 * options point there). Invariants: no read outside the bytes given (ASan), a registry and
 * where it came from end inside their buffers, and every manager but apt and dpkg says where
 * its registry came from (an option, a variable, a file or "default").
 */
#include "pkgfuzz.h"
#include "pkgmeta.h"

#define MAX_WORDS 64

/* split s at each newline into at most max words */
static size_t words_of(char *s, char **words, size_t max)
{
	size_t n = 0;

	for (char *w = s; n < max;) {
		char *nl = strchr(w, '\n');

		words[n++] = w;
		if (!nl)
			break;
		*nl = '\0';
		w = nl + 1;
	}
	return n;
}

/* the environment as the kernel has it: "K=V\0K=V\0", with HOME and VIRTUAL_ENV first */
static size_t environment(const char *lines, const char *dir, char *env, size_t size)
{
	size_t n =
		(size_t)snprintf(env, size, "HOME=%s/home%cVIRTUAL_ENV=%s/venv%c", dir, 0, dir, 0);

	for (const char *c = lines; *c && n + 1 < size; c++)
		env[n++] = *c == '\n' ? '\0' : *c;
	env[n++] = '\0';
	return n;
}

static void registry(const char *manager, char **argv, size_t argc, const char *env, size_t envlen,
		     const char *cwd)
{
	char out[PKG_URL_MAX], from[256];

	pkgmeta__registry(manager, argv, argc, env, envlen, cwd, out, sizeof(out), from,
			  sizeof(from));
	FUZZ_TERMINATED(out);
	FUZZ_TERMINATED(from);
	/* what it is may be "" (--index-url=), where it came from is always said */
	if (strcmp(manager, "apt") && strcmp(manager, "dpkg") && !from[0]) {
		fprintf(stderr, "pkgargv: %s: a registry '%s' from nowhere\n", manager, out);
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char *const managers[] = { "pip",	"npm", "yarn",	"pnpm", "apt",
						"dpkg", "gem", "cargo", "go" };
	const char *dir = fuzz_tmpdir(), *m;
	char *argv[MAX_WORDS + 2], env[8192], list[512], cwd[512];
	size_t argc, envlen;
	struct sections x;
	bool installs;

	sections__split(&x, data, size);
	fuzz_put(dir, "home/.config/pip/pip.conf", x.s[2], x.len[2]);
	fuzz_put(dir, "venv/pip.conf", x.s[3], x.len[3]);
	fuzz_put(dir, "home/.npmrc", x.s[4], x.len[4]);
	fuzz_put(dir, "etc/apt/sources.list", x.s[5], x.len[5]);
	argc = words_of(x.s[0], argv, MAX_WORDS);
	m = pkgmeta__manager(argv, argc, &installs);
	if (m && !*m)
		abort();
	envlen = environment(x.s[1], dir, env, sizeof(env));
	snprintf(cwd, sizeof(cwd), "%s/home", dir);
	/* apt reads the list under -o Dir=, not the host's */
	snprintf(list, sizeof(list), "Dir=%s", dir);
	argv[argc] = "-o";
	argv[argc + 1] = list;
	for (size_t i = 0; i < ARRAY_SIZE(managers); i++)
		registry(managers[i], argv, argc + (strcmp(managers[i], "apt") ? 0 : 2), env,
			 envlen, cwd);
	sections__free(&x);
	return 0;
}
