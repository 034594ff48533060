/* The policy as Kubernetes hands it to egretd's pod: a ConfigMap volume, a directory the kubelet
 * makes world-writable (it can be reached only inside egret's pod), holding egret.policy as a
 * symlink into ..data, itself a symlink the kubelet swaps to a new timestamped directory at each
 * update. With --trusted-dir that directory is taken as safe, and with --reload-on-change each
 * swap is a reload; a broken update keeps the rules in force.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define SERVER "192.0.2.80"

static int listener = -1;
static char volume[PATH_MAX];

static void setup(void)
{
	harness_setup(true);
	cr_assert_eq(netns_addr("lo", SERVER "/32"), 0);
	harness_setup_listen(&listener, SERVER, 8080);
}

TestSuite(configmap, .init = setup, .fini = harness_teardown, .timeout = 60);

/* The kubelet's update: a new ..NAME directory with the file, ..data swapped to it. */
static void publish(const char *name, const char *text)
{
	char dir[PATH_MAX + 16], file[PATH_MAX * 2], tmp[PATH_MAX + 16], data[PATH_MAX + 16];
	FILE *f;

	snprintf(dir, sizeof(dir), "%s/..%s", volume, name);
	cr_assert_eq(mkdir(dir, 0755), 0);
	snprintf(file, sizeof(file), "%s/egret.policy", dir);
	f = fopen(file, "w");
	cr_assert(f);
	fputs(text, f);
	fchmod(fileno(f), 0644);
	fclose(f);
	snprintf(tmp, sizeof(tmp), "%s/..data_tmp", volume);
	snprintf(data, sizeof(data), "%s/..data", volume);
	cr_assert_eq(symlink(dir + strlen(volume) + 1, tmp), 0);
	cr_assert_eq(rename(tmp, data), 0);
}

static bool changed_by_file(const Egret__V1__Event *ev, const void *want_ok)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE &&
	       !strcmp(ev->policy_change->actor, "egretd: the policy file changed") &&
	       ev->policy_change->ok == (want_ok != NULL);
}

static int connect_server(void *arg)
{
	return tcp_connect(SERVER, 8080, 0, 2000);
}

static int connect_until(int want)
{
	int got = -1;

	for (int i = 0; i < 40 && got != want; i++) {
		got = in_sandbox(T, "box", connect_server, NULL);
		if (got != want)
			usleep(250000);
	}
	return got;
}

Test(configmap, a_configmap_update_is_reloaded)
{
	char policy[PATH_MAX + 16], data_link[PATH_MAX + 32];
	const char *extra[] = { "--policy",	      policy, "--trusted-dir", volume,
				"--reload-on-change", NULL };
	struct events evs;

	snprintf(volume, sizeof(volume), "%s/policy", T->tmpdir);
	cr_assert_eq(mkdir(volume, 0777), 0);
	cr_assert_eq(chmod(volume, 0777), 0); /* what the kubelet makes it, whatever the umask */
	publish("2026_12_02_01", "mode enforce\n");
	snprintf(policy, sizeof(policy), "%s/egret.policy", volume);
	snprintf(data_link, sizeof(data_link), "..data/egret.policy");
	cr_assert_eq(symlink(data_link, policy), 0);
	harness_setup_start(NULL, extra);
	cr_expect_eq(in_sandbox(T, "box", connect_server, NULL), EPERM);
	publish("2026_12_02_02", "mode enforce\nallow " SERVER " tcp/8080\n");
	cr_expect_eq(connect_until(0), 0, "the update was not put in force");
	cr_assert_eq(events_wait(T->sink_path, changed_by_file, "ok", 5000, &evs), 0);
	events_free(&evs);
	/* a broken update: refused, the rules in force stay */
	publish("2026_12_02_03", "mode enforce\nallow 192.0.2.999\n");
	cr_assert_eq(events_wait(T->sink_path, changed_by_file, NULL, 5000, &evs), 0);
	events_free(&evs);
	cr_expect_eq(in_sandbox(T, "box", connect_server, NULL), 0);
	cr_expect(strstr(harness_log(T), "is refused (the rules in force stay)"), "%s",
		  harness_log(T));
	/* and the next good one is taken */
	publish("2026_12_02_04", "mode enforce\n");
	cr_expect_eq(connect_until(EPERM), EPERM, "the last update was not put in force");
}

/* Without --trusted-dir, the same world-writable directory is refused (StrictModes). */
Test(configmap, a_world_writable_directory_is_refused_unless_trusted)
{
	char policy[PATH_MAX + 16];
	const char *extra[] = { "--policy", policy, NULL };

	snprintf(volume, sizeof(volume), "%s/policy", T->tmpdir);
	cr_assert_eq(mkdir(volume, 0777), 0);
	cr_assert_eq(chmod(volume, 0777), 0);
	publish("2026_12_02_01", "mode enforce\n");
	snprintf(policy, sizeof(policy), "%s/egret.policy", volume);
	cr_assert_eq(symlink("..data/egret.policy", policy), 0);
	cr_expect_eq(harness_start(T, extra), 1, "%s", harness_log(T));
	cr_expect(strstr(harness_log(T), "writable by"), "%s", harness_log(T));
}
