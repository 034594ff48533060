/* deploy/containers/egret-runc, the runtime wrapper Docker runs: for create and run it puts
 * egret's hook into the bundle's config.json (however the bundle is named on its command line)
 * and then runs runc with runc's own arguments only; other sub-commands go straight to runc; a
 * failed injection fails the container. A fake egretctl and runc record what they were given.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "util.h"

static char dir[64];
static char log_path[128], ctl[128], runc[128], wrapper[PATH_MAX];

static void setup(void)
{
	FILE *f;

	snprintf(dir, sizeof(dir), "/tmp/egret-unit-wrapper-XXXXXX");
	cr_assert(mkdtemp(dir));
	snprintf(log_path, sizeof(log_path), "%s/log", dir);
	snprintf(ctl, sizeof(ctl), "%s/egretctl", dir);
	snprintf(runc, sizeof(runc), "%s/runc", dir);
	snprintf(wrapper, sizeof(wrapper), "%s/deploy/containers/egret-runc", EGRET_SOURCE_DIR);
	/* each records its arguments, one line a call; egretctl fails for a bundle named "bad" */
	f = fopen(ctl, "w");
	cr_assert(f);
	fprintf(f,
		"#!/bin/sh\necho \"egretctl $*\" >> %s\ncase \"$*\" in *bad/config.json) exit 1;; esac\n",
		log_path);
	fclose(f);
	f = fopen(runc, "w");
	cr_assert(f);
	fprintf(f, "#!/bin/sh\necho \"runc $*\" >> %s\n", log_path);
	fclose(f);
	cr_assert_eq(chmod(ctl, 0755), 0);
	cr_assert_eq(chmod(runc, 0755), 0);
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	if (system(cmd))
		fprintf(stderr, "cannot remove %s\n", dir);
}

TestSuite(wrapper, .init = setup, .fini = teardown);

/* The wrapper with its own options and then runc's words; its status, the log in out. */
static int wrap(char *out, size_t size, const char *words)
{
	char cmd[1024];
	char *argv[] = { "sh", "-c", cmd, NULL };
	int rc;

	unlink(log_path);
	snprintf(cmd, sizeof(cmd),
		 "%s --egret-egretctl=%s --egret-runc=%s --egret-control=/run/x.sock "
		 "--egret-docker-root=/var/lib/d %s",
		 wrapper, ctl, runc, words);
	rc = run_cmd(argv, NULL, 0);
	out[0] = '\0';
	read_file(log_path, out, size);
	return rc;
}

Test(wrapper, create_gets_the_hook_in_whatever_form_the_bundle_is_named)
{
	static const struct {
		const char *words, *bundle;
	} cases[] = {
		{ "--root /r --log /l/log.json --log-format json create --bundle /b1 --pid-file /b1/p "
		  "id1",
		  "/b1" },
		{ "--root /r create -b /b2 id2", "/b2" },
		{ "--root /r create --bundle=/b3 id3", "/b3" },
		{ "--debug run --bundle /b4 id4", "/b4" },
		/* a global option's value that reads like a sub-command is not one */
		{ "--log create --log-format json create --bundle /b5 id5", "/b5" },
	};
	char out[4096], want[256];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		cr_expect_eq(wrap(out, sizeof(out), cases[i].words), 0, "%s", cases[i].words);
		snprintf(want, sizeof(want),
			 "egretctl --control /run/x.sock oci-hook inject --docker-root /var/lib/d "
			 "%s/config.json\nrunc %s\n",
			 cases[i].bundle, cases[i].words);
		cr_expect_str_eq(out, want, "%s", cases[i].words);
	}
}

Test(wrapper, other_commands_go_straight_to_runc)
{
	static const char *const words[] = { "--root /r --log /l start id1", "delete --force id1",
					     "state id1", "--version" };
	char out[4096], want[256];

	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		cr_expect_eq(wrap(out, sizeof(out), words[i]), 0);
		snprintf(want, sizeof(want), "runc %s\n", words[i]);
		cr_expect_str_eq(out, want, "%s", words[i]);
	}
}

Test(wrapper, a_failed_injection_fails_the_container)
{
	char out[4096];

	cr_expect_neq(wrap(out, sizeof(out), "create --bundle bad id9"), 0);
	cr_expect_null(strstr(out, "runc "), "runc ran after egret's hook could not be put in: %s",
		       out);
}
