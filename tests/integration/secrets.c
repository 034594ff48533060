/* Secrets never leave the host, end to end: secrets planted in every field an event can carry
 * (argv words, one sh -c argument, curl -u and its headers, JSON in -d, URLs with a password or a
 * token as their user, the environment and an .npmrc a package manager's run is read from, a
 * cwd, file paths, an executable's path and name), then the raw bytes of the sink file grepped
 * for each planted value: none may be there, and the events that carry them redacted must be
 * (the positive control). Every secret is a marker of its own (S3CRET-a1, TOK3N-f1, ...), so a
 * match is a leak and nothing else.
 * A PyPI index on 192.0.2.20 (allowed) serves pip; 192.0.2.99 (denied) is where curl and npm
 * go, so their connections are refused and their runs still reported. Fixtures:
 * tests/tools/pkg_fixtures.sh.
 */
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "util.h"

#define ALLOWED	      "192.0.2.20"
#define DENIED	      "192.0.2.99"
#define REDACTED_MARK "[REDACTED]"

/* every planted secret: a value found anywhere in the sink is a leak */
static const char *const planted[] = {
	"S3CRET-a1",	/* --password X, two arguments */
	"S3CRET-a2",	/* --token=X */
	"S3CRET-a3",	/* API_KEY=X */
	"AKIAS3CRETA4", /* an AWS access key id */
	"S3CRET-b1",	/* sh -c "mysql --password X" */
	"S3CRET-b2",	/* sh -c "mysql -pX" */
	"S3CRET-b3",	/* sh -c "printf 'password: X\n' > c.yml" */
	"S3CRET-b4",	/* sh -c "curl -u bob:X" */
	"S3CRET-b5",	/* sh -c "curl -H 'X-Api-Token: X'" */
	"S3CRET-b6",	/* sh -c "curl -d '{\"api_key\":\"X\"}'" */
	"S3CRET-b7",	/* sh -c "curl -H 'Authorization: Basic X'" */
	"S3CRET-c1",	/* curl -u user:X */
	"S3CRET-c2",	/* curl -H "Authorization: Bearer X" */
	"S3CRET-c3",	/* curl -H "PRIVATE-TOKEN: X" */
	"S3CRET-c4",	/* curl -d '{"user":"a","password":"X"}' */
	"S3CRET-c5",	/* http://u:X@host/ */
	"S3CRET-d1",	/* curl --user=bob:X */
	"S3CRET-d2",	/* curl -H "Authorization: token X" */
	"S3CRETd3",	/* http://glpat-X...@host/: a token as a URL's user */
	"S3CRET-d4",	/* curl -H "x-api-key: X" */
	"S3CRET-e1",	/* PIP_INDEX_URL=http://user:X@host/simple/ (registry, source) */
	"TOK3N-f1",	/* .npmrc //host/:_authToken=X */
	"S3CRET-f2",	/* .npmrc registry=http://npmuser:X@host/ */
	"S3CRETg1",	/* npm_config_registry=http://npm_X...@host/ */
	"S3CRET-h1",	/* a cwd .../password=X */
	"S3CRET-i1",	/* a file .../password=X/f */
	"S3CRET-j1",	/* an executable .../token=X/true */
	"S3CRET-k1",	/* a rename to .../apikey=X */
};

static pid_t server;
static char fx[PATH_MAX];

static void setup(void)
{
	char script[PATH_MAX], out[4096];
	char *argv[] = { "/bin/sh", script, fx, NULL };

	harness_setup(true);
	harness_kill_at_teardown(&server);
	snprintf(fx, sizeof(fx), "%s/fx", T->tmpdir);
	snprintf(script, sizeof(script), "%s/tests/tools/pkg_fixtures.sh", EGRET_SOURCE_DIR);
	cr_assert_eq(run_cmd(argv, out, sizeof(out)), 0, "fixtures: %s", out);
	cr_assert_eq(netns_addr("lo", ALLOWED "/32"), 0);
	cr_assert_eq(netns_addr("lo", DENIED "/32"), 0);
	server = fork();
	cr_assert(server >= 0);
	if (server == 0) {
		int null = open("/dev/null", O_WRONLY);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(null, 1);
		dup2(null, 2);
		execl("/usr/bin/python3", "python3", "-m", "http.server", "8000", "--bind", ALLOWED,
		      "--directory", fx, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100 && tcp_connect(ALLOWED, 8000, 0, 100); i++)
		usleep(50000);
	harness_setup_start("allow " ALLOWED " tcp/8000\n", NULL);
}

TestSuite(secrets, .init = setup, .fini = harness_teardown, .timeout = 180);

/* A command in the sandbox "vault": in cwd (NULL: the test's), with env as its whole
 * environment (NULL: the test's); its exit status.
 */
struct job {
	const char *cwd;
	char *const *env;
	char *const *argv;
};

static int run_job(void *arg)
{
	const struct job *j = arg;
	char out[16384];
	int rc;

	if (j->cwd && chdir(j->cwd))
		return 126;
	if (j->env) {
		clearenv();
		for (char *const *e = j->env; *e; e++)
			putenv(*e);
	}
	rc = run_cmd(j->argv, out, sizeof(out));
	if (rc && getenv("EGRET_TEST_VERBOSE"))
		fprintf(stderr, "%s: exit %d\n%s\n", j->argv[0], rc, out);
	return rc;
}

static int in_vault(const char *cwd, char *const *env, char *const *argv)
{
	struct job j = { cwd, env, argv };

	return in_sandbox(T, "vault", run_job, &j);
}

/* the whole file, malloc'd; NULL when it cannot be read */
static char *read_whole(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL;
	long size;

	if (!f)
		return NULL;
	if (!fseek(f, 0, SEEK_END) && (size = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
	    (buf = malloc((size_t)size + 1)))
		*len = fread(buf, 1, (size_t)size, f);
	fclose(f);
	return buf;
}

static bool ends_with(const char *s, const char *suffix)
{
	size_t l = strlen(s), sl = strlen(suffix);

	return l >= sl && !strcmp(s + l - sl, suffix);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

/* ---- what the events must say -------------------------------------------------------------- */

static bool is_exec_with(const Egret__V1__Event *ev, const void *arg)
{
	if (ev->payload_case != EGRET__V1__EVENT__PAYLOAD_EXEC)
		return false;
	for (size_t i = 0; i < ev->exec->n_args; i++) {
		if (strstr(ev->exec->args[i], arg))
			return true;
	}
	return false;
}

static bool is_run(const Egret__V1__Event *ev, const void *registry)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN &&
	       !strcmp(ev->package_run->registry, registry);
}

static bool is_manager_run(const Egret__V1__Event *ev, const void *manager)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN &&
	       !strcmp(ev->package_run->manager, manager);
}

static bool is_install_from(const Egret__V1__Event *ev, const void *source)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_PACKAGE_INSTALL &&
	       !strcmp(ev->package_install->source, source);
}

static bool is_denied(const Egret__V1__Event *ev, const void *addr)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->verdict == EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY &&
	       !strcmp(ev->net_connect->dst_addr, addr);
}

static bool is_cwd(const Egret__V1__Event *ev, const void *suffix)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_EXEC && ev->exec->cwd &&
	       ends_with(ev->exec->cwd, suffix);
}

static bool is_exe(const Egret__V1__Event *ev, const void *part)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_EXEC && ev->process &&
	       ev->process->exe && strstr(ev->process->exe, part);
}

static bool is_file(const Egret__V1__Event *ev, const void *part)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_FILE &&
	       ((ev->file->path && strstr(ev->file->path, part)) ||
		(ev->file->new_path && strstr(ev->file->new_path, part)));
}

static const Egret__V1__Event *must_find(const struct events *evs,
					 bool (*match)(const Egret__V1__Event *, const void *),
					 const char *arg, const char *what)
{
	const Egret__V1__Event *ev = events_find(evs, match, arg, NULL);

	cr_expect(ev, "no %s (%s)", what, arg);
	return ev;
}

static void expect_arg(const Egret__V1__Event *ev, const char *want)
{
	bool found = false;

	if (!ev)
		return;
	for (size_t i = 0; i < ev->exec->n_args; i++)
		found = found || strstr(ev->exec->args[i], want);
	cr_expect(found, "no argument with '%s'", want);
}

/* The test. The commands run one after the other; then the sink's bytes are read whole. */
Test(secrets, planted_secrets_never_reach_the_sink)
{
	char dir[PATH_MAX + 64], file[PATH_MAX + 96], exe[PATH_MAX + 64], cwd[PATH_MAX + 64],
		npm[PATH_MAX + 16], home[PATH_MAX + 16], target[PATH_MAX + 16],
		c_yml[PATH_MAX + 16], npmrc[PATH_MAX + 32], cache[PATH_MAX + 16],
		home_env[PATH_MAX + 16], renamed[PATH_MAX + 96], shc[PATH_MAX + 512];
	const Egret__V1__Event *ev;
	struct events evs;
	char *raw;
	size_t rawlen;
	int rc;

	snprintf(home, sizeof(home), "%s/home", T->tmpdir);
	cr_assert_eq(mkdir(home, 0755), 0);
	snprintf(home_env, sizeof(home_env), "HOME=%s", home);

	/* argv words */
	{
		char *argv[] = { "/bin/true",
				 "--password",
				 "S3CRET-a1",
				 "--token=S3CRET-a2",
				 "API_KEY=S3CRET-a3",
				 "AKIAS3CRETA4ZZZZZZZZ",
				 NULL };

		cr_assert_eq(in_vault(NULL, NULL, argv), 0);
	}
	/* one sh -c argument holding each shape */
	snprintf(c_yml, sizeof(c_yml), "%s/c.yml", T->tmpdir);
	snprintf(shc, sizeof(shc),
		 "echo mysql --password S3CRET-b1 -h db >/dev/null; "
		 "echo mysql -uroot -pS3CRET-b2 db >/dev/null; "
		 "printf 'password: S3CRET-b3\\n' > %s; "
		 "echo curl -u bob:S3CRET-b4 -H 'X-Api-Token: S3CRET-b5' "
		 "-d '{\"api_key\":\"S3CRET-b6\"}' -H 'Authorization: Basic S3CRET-b7' >/dev/null",
		 c_yml);
	{
		char *argv[] = { "/bin/sh", "-c", shc, NULL };

		cr_assert_eq(in_vault(NULL, NULL, argv), 0);
	}
	/* curl with a password, headers, JSON and URLs, to a denied address */
	{
		char *argv[] = { "curl",
				 "-s",
				 "--max-time",
				 "2",
				 "-u",
				 "user:S3CRET-c1",
				 "-H",
				 "Authorization: Bearer S3CRET-c2",
				 "-H",
				 "PRIVATE-TOKEN: S3CRET-c3",
				 "-d",
				 "{\"user\":\"a\",\"password\":\"S3CRET-c4\"}",
				 "http://u:S3CRET-c5@" DENIED ":8080/",
				 NULL };

		cr_assert_neq(in_vault(NULL, NULL, argv), 0, "curl reached a denied address");
	}
	{
		char *argv[] = { "curl",
				 "-s",
				 "--max-time",
				 "2",
				 "--user=bob:S3CRET-d1",
				 "-H",
				 "Authorization: token S3CRET-d2",
				 "-H",
				 "x-api-key: S3CRET-d4",
				 "http://glpat-S3CRETd3abcdefgh@" DENIED ":8080/",
				 NULL };

		cr_assert_neq(in_vault(NULL, NULL, argv), 0, "curl reached a denied address");
	}
	/* pip, its index (with a password) from the environment: installs from the allowed index */
	snprintf(target, sizeof(target), "%s/site", T->tmpdir);
	{
		char *env[] = { "PATH=/usr/bin:/bin",
				"PIP_INDEX_URL=http://user:S3CRET-e1@" ALLOWED ":8000/simple/",
				"PIP_CONFIG_FILE=/dev/null", home_env, NULL };
		char *argv[] = { "/usr/bin/python3",
				 "-m",
				 "pip",
				 "install",
				 "--no-cache-dir",
				 "--no-deps",
				 "--disable-pip-version-check",
				 "--no-input",
				 "--break-system-packages",
				 "--trusted-host",
				 ALLOWED,
				 "--target",
				 target,
				 "demo-pkg",
				 NULL };

		cr_assert_eq(in_vault(NULL, env, argv), 0, "pip install failed");
	}
	/* npm, its registry (with a password) and a token from an .npmrc in its cwd; then its
	 * registry from the environment, a token as the URL's user. Both are refused.
	 */
	snprintf(npm, sizeof(npm), "%s/npmproj", T->tmpdir);
	cr_assert_eq(mkdir(npm, 0755), 0);
	snprintf(npmrc, sizeof(npmrc), "%s/.npmrc", npm);
	write_text(npmrc, "//" DENIED ":8000/:_authToken=TOK3N-f1\n"
			  "registry=http://npmuser:S3CRET-f2@" DENIED ":8000/\n");
	snprintf(cache, sizeof(cache), "--cache=%s/npmcache", T->tmpdir);
	{
		char *env[] = { "PATH=/usr/bin:/bin", home_env, NULL };
		char *env2[] = { "PATH=/usr/bin:/bin", home_env,
				 "npm_config_registry=http://npm_S3CRETg1abcdefgh@" DENIED ":8000/",
				 NULL };
		char *argv[] = { "/usr/bin/npm",
				 "install",
				 "left-pad",
				 "--no-audit",
				 "--no-fund",
				 "--no-update-notifier",
				 "--fetch-retries=0",
				 "--fetch-timeout=2000",
				 cache,
				 NULL };

		cr_assert_neq(in_vault(npm, env, argv), 0, "npm reached a denied registry");
		cr_assert_neq(in_vault(npm, env2, argv), 0, "npm reached a denied registry");
	}
	/* a cwd, a file, an executable and a rename whose paths hold secrets */
	snprintf(cwd, sizeof(cwd), "%s/password=S3CRET-h1", T->tmpdir);
	cr_assert_eq(mkdir(cwd, 0755), 0);
	{
		char *argv[] = { "/bin/true", NULL };

		cr_assert_eq(in_vault(cwd, NULL, argv), 0);
	}
	snprintf(dir, sizeof(dir), "%s/x/password=S3CRET-i1", T->tmpdir);
	snprintf(file, sizeof(file), "%s/f", dir);
	snprintf(renamed, sizeof(renamed), "%s/x/apikey=S3CRET-k1", T->tmpdir);
	snprintf(exe, sizeof(exe), "%s/token=S3CRET-j1", T->tmpdir);
	{
		char *argv[] = { "/bin/sh",
				 "-c",
				 "mkdir -p \"$1\" \"$4\" && echo x > \"$2\" && mv \"$2\" \"$3\" && "
				 "cp /bin/true \"$4/true\" && \"$4/true\"",
				 "sh",
				 dir,
				 file,
				 renamed,
				 exe,
				 NULL };

		rc = in_vault(NULL, NULL, argv);
		cr_assert_eq(rc, 0, "the file commands failed: %d", rc);
	}

	/* the two runs of npm (each reported when npm ends), then the last exec of all: the secret
	 * executable's (the stream is in time order: every earlier event is in by then)
	 */
	cr_assert_eq(events_wait_count(T->sink_path, is_manager_run, "npm", 2, 20000, &evs), 0,
		     "no PackageRun of the second npm");
	events_free(&evs);
	cr_assert_eq(events_wait(T->sink_path, is_exe, "/token=[REDACTED]", 5000, &evs), 0,
		     "no exec of the secret executable");
	events_free(&evs);
	usleep(300000);

	/* the grep: none of the planted values in the sink's raw bytes */
	raw = read_whole(T->sink_path, &rawlen);
	cr_assert(raw, "cannot read %s", T->sink_path);
	cr_assert_gt(rawlen, 0);
	for (size_t i = 0; i < sizeof(planted) / sizeof(planted[0]); i++)
		cr_expect_null(memmem(raw, rawlen, planted[i], strlen(planted[i])),
			       "the secret %s left the host", planted[i]);
	cr_expect_not_null(memmem(raw, rawlen, REDACTED_MARK, strlen(REDACTED_MARK)));
	free(raw);

	/* the positive control: the events that carry them, redacted */
	cr_assert_eq(events_read(T->sink_path, &evs), 0);
	ev = must_find(&evs, is_exec_with, "API_KEY=[REDACTED]", "exec with argv words");
	expect_arg(ev, "--token=[REDACTED]");
	if (ev)
		cr_expect_str_eq(ev->exec->args[2], "[REDACTED]");
	ev = must_find(&evs, is_exec_with, "mysql --password [REDACTED] -h db", "sh -c exec");
	expect_arg(ev, "mysql -uroot -p[REDACTED] db");
	expect_arg(ev, "printf 'password: [REDACTED]'");
	expect_arg(ev, "curl -u bob:[REDACTED] -H 'X-Api-Token: [REDACTED]'");
	expect_arg(ev, "-d '{\"api_key\":\"[REDACTED]\"}'");
	expect_arg(ev, "-H 'Authorization: Basic [REDACTED]'");
	ev = must_find(&evs, is_exec_with, "user:[REDACTED]", "curl exec");
	expect_arg(ev, "Authorization: Bearer [REDACTED]");
	expect_arg(ev, "PRIVATE-TOKEN: [REDACTED]");
	expect_arg(ev, "{\"user\":\"a\",\"password\":\"[REDACTED]\"}");
	expect_arg(ev, "http://u:[REDACTED]@" DENIED ":8080/");
	ev = must_find(&evs, is_exec_with, "--user=bob:[REDACTED]", "the second curl exec");
	expect_arg(ev, "Authorization: token [REDACTED]");
	expect_arg(ev, "x-api-key: [REDACTED]");
	expect_arg(ev, "http://[REDACTED]@" DENIED ":8080/");
	must_find(&evs, is_denied, DENIED, "refused connection");
	ev = must_find(&evs, is_run, "http://user:[REDACTED]@" ALLOWED ":8000/simple/",
		       "pip's PackageRun");
	if (ev)
		cr_expect_str_eq(ev->package_run->registry_from, "PIP_INDEX_URL");
	ev = must_find(&evs, is_install_from, "http://user:[REDACTED]@" ALLOWED ":8000/simple/",
		       "pip's PackageInstall");
	if (ev)
		cr_expect_str_eq(ev->package_install->name, "demo-pkg");
	ev = must_find(&evs, is_run, "http://npmuser:[REDACTED]@" DENIED ":8000/",
		       "npm's PackageRun");
	if (ev)
		cr_expect_str_eq(ev->package_run->registry_from, npmrc);
	ev = must_find(&evs, is_run, "http://[REDACTED]@" DENIED ":8000/", "npm's second run");
	if (ev)
		cr_expect_str_eq(ev->package_run->registry_from, "npm_config_registry");
	must_find(&evs, is_cwd, "/password=[REDACTED]", "exec in the secret cwd");
	must_find(&evs, is_file, "/x/password=[REDACTED]", "file event of the secret path");
	must_find(&evs, is_file, "/x/apikey=[REDACTED]", "rename to the secret path");
	must_find(&evs, is_exe, "/token=[REDACTED]", "exec of the secret executable");
	events_free(&evs);
}

/* A program's name is the process's comm in every event's envelope: a program named like a
 * secret (token=VALUE) must not carry the value out either.
 */
Test(secrets, a_program_named_like_a_secret)
{
	char exe[PATH_MAX + 32];
	char *raw;
	size_t rawlen;
	struct events evs;

	snprintf(exe, sizeof(exe), "%s/token=S3CRET-m1", T->tmpdir);
	{
		char *argv[] = { "/bin/cp", "/bin/true", exe, NULL };

		cr_assert_eq(in_vault(NULL, NULL, argv), 0);
	}
	{
		char *argv[] = { exe, NULL };

		cr_assert_eq(in_vault(NULL, NULL, argv), 0);
	}
	cr_assert_eq(events_wait(T->sink_path, is_exe, "/token=[REDACTED]", 10000, &evs), 0,
		     "no exec of the program");
	events_free(&evs);
	usleep(300000);
	raw = read_whole(T->sink_path, &rawlen);
	cr_assert(raw);
	cr_expect_null(memmem(raw, rawlen, "S3CRET-m1", 9), "the secret in comm left the host");
	free(raw);
}
