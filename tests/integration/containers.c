/* Containers as sandboxes, with real runtimes from Debian: runc running bundles the test
 * builds (tests/tools/oci_bundle.py: busybox, or the host's /usr read-only), podman with images
 * imported from such a root file system (no registry). egret's OCI hook (egretctl oci-hook),
 * put in by `egretctl oci-hook inject` (runc's config.json) or a hooks.d file (podman), registers
 * each container before its first instruction. Each protection has its positive control.
 *
 * The instance's tree: <mount>/NAME is where egretd attaches, NAME/egret its root, NAME/ctrs the
 * runc containers' parent (not watched: registration alone makes them sandboxes), NAME/pods a
 * watched subtree (podman's --cgroup-parent). Containers join the test's network namespace,
 * where the addresses they reach are, or get an empty one of their own.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cgroup.h"
#include "harness.h"
#include "util.h"

#define SERVER	 "192.0.2.80"
#define UPSTREAM "192.0.2.53"

static int listener = -1;
static pid_t dnsmasq;
static char top[PATH_MAX];	 /* <mount>/NAME, where egretd attaches */
static char top_rel[PATH_MAX];	 /* the same from the v2 mount: /NAME */
static char runc_root[PATH_MAX]; /* runc's state, private to the test */
static char netns_path[64];	 /* the test's network namespace */

static void start_dnsmasq(void)
{
	dnsmasq = fork();
	cr_assert(dnsmasq >= 0);
	if (dnsmasq == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("dnsmasq", "dnsmasq", "-k", "--conf-file=/dev/null", "--no-resolv",
		       "--no-hosts", "--listen-address=" UPSTREAM, "--bind-interfaces", "--port=53",
		       "--user=root", "--pid-file=", "--log-facility=/dev/null",
		       "--address=/allowed.test/192.0.2.10", "--address=/allowed.test/2001:db8::10",
		       NULL);
		_exit(127);
	}
}

static void setup(void)
{
	static const char *const addrs[] = { SERVER "/32", UPSTREAM "/32", "192.0.2.10/32" };

	harness_setup(true);
	harness_kill_at_teardown(&dnsmasq);
	for (size_t i = 0; i < sizeof(addrs) / sizeof(addrs[0]); i++)
		cr_assert_eq(netns_addr("lo", addrs[i]), 0);
	cr_assert_eq(harness_nest_root(T), 0);
	snprintf(top, sizeof(top), "%s", T->attach);
	snprintf(top_rel, sizeof(top_rel), "%s", top + strlen(T->cgroup_mount));
	snprintf(runc_root, sizeof(runc_root), "%s/runc", T->tmpdir);
	snprintf(netns_path, sizeof(netns_path), "/proc/%d/ns/net", (int)getpid());
	harness_setup_listen(&listener, SERVER, 8080);
	start_dnsmasq();
}

TestSuite(containers, .init = setup, .fini = harness_teardown, .timeout = 180);

/* ---- runc ------------------------------------------------------------------------------- */

/* A bundle in T's tmpdir for container id: busybox (or the host's /usr), its cgroup under
 * NAME/ctrs, the test's network namespace (or, netns NULL, a new one), egret's hooks injected.
 * Extra words go to oci_bundle.py before "--" and the command.
 */
static void bundle(const char *id, const char *netns, const char *const extra[],
		   const char *const cmd[], char *dir, size_t size)
{
	char script[PATH_MAX], cg[PATH_MAX + 64], config[PATH_MAX + 16], out[4096];
	char *argv[64];
	int n = 0;

	snprintf(dir, size, "%s/bundle-%s", T->tmpdir, id);
	snprintf(script, sizeof(script), "%s/tests/tools/oci_bundle.py", EGRET_SOURCE_DIR);
	snprintf(cg, sizeof(cg), "%s/ctrs/%s", top_rel, id);
	argv[n++] = "python3";
	argv[n++] = script;
	argv[n++] = dir;
	argv[n++] = "--cgroups-path";
	argv[n++] = cg;
	if (netns) {
		argv[n++] = "--netns";
		argv[n++] = (char *)netns;
	}
	for (int i = 0; extra && extra[i]; i++)
		argv[n++] = (char *)extra[i];
	argv[n++] = "--";
	for (int i = 0; cmd[i]; i++)
		argv[n++] = (char *)cmd[i];
	argv[n] = NULL;
	cr_assert_eq(run_cmd(argv, out, sizeof(out)), 0, "oci_bundle.py: %s", out);
	snprintf(config, sizeof(config), "%s/config.json", dir);
	cr_assert_eq(egretctl(T, out, sizeof(out), "oci-hook", "inject", config, NULL), 0,
		     "inject: %s", out);
}

/* runc run (foreground) of a bundle: its exit status, output in out */
static int runc_run(const char *id, const char *dir, char *out, size_t size)
{
	char *argv[] = { "runc",     "--root",	  runc_root,  "run",
			 "--bundle", (char *)dir, (char *)id, NULL };

	return run_cmd(argv, out, size);
}

static bool is_container_event(const Egret__V1__Event *ev, const char *id)
{
	return ev->sandbox && ev->sandbox->container && !strcmp(ev->sandbox->container->uid, id);
}

struct want {
	const char *id;
	Egret__V1__Event__PayloadCase payload;
	int detail; /* a verdict, a tamper kind, a lifecycle kind; 0: any */
};

static bool wanted(const Egret__V1__Event *ev, const void *arg)
{
	const struct want *w = arg;

	if (!is_container_event(ev, w->id) || ev->payload_case != w->payload)
		return false;
	switch (w->payload) {
	case EGRET__V1__EVENT__PAYLOAD_NET_CONNECT:
		return !w->detail || (int)ev->net_connect->verdict == w->detail;
	case EGRET__V1__EVENT__PAYLOAD_TAMPER:
		return !w->detail || (int)ev->tamper->kind == w->detail;
	case EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE:
		return !w->detail || (int)ev->sandbox_lifecycle->kind == w->detail;
	default:
		return true;
	}
}

static const Egret__V1__Event *wait_for(struct events *evs, const char *id,
					Egret__V1__Event__PayloadCase payload, int detail)
{
	struct want w = { id, payload, detail };

	if (events_wait(T->sink_path, wanted, &w, 10000, evs))
		return NULL;
	return events_find(evs, wanted, &w, NULL);
}

Test(containers, runc_is_denied_by_default_and_its_policy_opens_what_it_says)
{
	/* a connect that gets through hangs on a listener that never answers: timeout ends it
	 * (143); a denied one fails at once (1, "Operation not permitted")
	 */
	static const char *const nc[] = { "sh", "-c",
					  "timeout 3 nc " SERVER " 8080 </dev/null; echo rc=$?",
					  NULL };
	char dir[PATH_MAX], out[4096];
	struct events evs;

	harness_setup_start("mode enforce\n"
			    "sandbox container=ctr-open {\n"
			    "  allow " SERVER " tcp/8080\n"
			    "}\n",
			    NULL);
	bundle("ctr-open", netns_path, NULL, nc, dir, sizeof(dir));
	cr_expect_eq(runc_run("ctr-open", dir, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "rc=143") && !strstr(out, "not permitted"),
		  "the policy's container could not connect: %s", out);
	bundle("ctr-shut", netns_path, NULL, nc, dir, sizeof(dir));
	cr_expect_eq(runc_run("ctr-shut", dir, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "Operation not permitted") && strstr(out, "rc=1"),
		  "another container reached " SERVER ": %s", out);
	cr_assert(wait_for(&evs, "ctr-shut", EGRET__V1__EVENT__PAYLOAD_NET_CONNECT,
			   EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY),
		  "no denied connect of ctr-shut");
	events_free(&evs);
	cr_assert(wait_for(&evs, "ctr-open", EGRET__V1__EVENT__PAYLOAD_NET_CONNECT,
			   EGRET__V1__NET_CONNECT__VERDICT__VERDICT_ALLOW),
		  "no allowed connect of ctr-open");
	events_free(&evs);
	/* positive control: the same connect from the host */
	cr_expect_eq(tcp_connect(SERVER, 8080, 0, 2000), 0);
}

/* The container's first instruction is a query, from a network namespace of its own: egret's
 * resolver listens there from the registration on, so it is answered at once (before, egretd
 * learned of the namespace from the refused query, and of the process that was gone by then).
 */
Test(containers, runc_first_dns_query_from_its_own_namespace_is_answered)
{
	static const char *const cmd[] = { "nslookup", "allowed.test", UPSTREAM, NULL };
	char dir[PATH_MAX], out[4096];
	struct events evs;
	const Egret__V1__Event *ev;

	harness_setup_start("mode enforce\nallow domain allowed.test\n", NULL);
	bundle("ctr-dns", NULL, NULL, cmd, dir, sizeof(dir));
	cr_expect_eq(runc_run("ctr-dns", dir, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "192.0.2.10"), "the first query was not answered: %s", out);
	ev = wait_for(&evs, "ctr-dns", EGRET__V1__EVENT__PAYLOAD_DNS_QUERY, 0);
	cr_assert(ev, "no DnsQuery of ctr-dns");
	cr_expect(ev->dns_query->allowed);
	cr_expect_str_eq(ev->dns_query->name, "allowed.test");
	events_free(&evs);
}

/* runc's init mounts the root file system, /proc, /dev... before the container's first exec:
 * not the sandbox's doing. A mount after it is.
 */
Test(containers, runc_start_is_not_tamper_but_a_later_mount_is)
{
	static const char *const quiet[] = { "true", NULL };
	static const char *const mounts[] = { "mount", "-t", "tmpfs", "none", "/mnt", NULL };
	char dir[PATH_MAX], out[4096];
	struct events evs;
	size_t n = 99;
	struct want w = { "ctr-quiet", EGRET__V1__EVENT__PAYLOAD_TAMPER,
			  EGRET__V1__TAMPER__KIND__KIND_MOUNT };

	harness_setup_start(NULL, NULL);
	bundle("ctr-quiet", netns_path, NULL, quiet, dir, sizeof(dir));
	cr_expect_eq(runc_run("ctr-quiet", dir, out, sizeof(out)), 0, "%s", out);
	bundle("ctr-mount", netns_path, NULL, mounts, dir, sizeof(dir));
	runc_run("ctr-mount", dir, out, sizeof(out));
	cr_assert(wait_for(&evs, "ctr-mount", EGRET__V1__EVENT__PAYLOAD_TAMPER,
			   EGRET__V1__TAMPER__KIND__KIND_MOUNT),
		  "the mount after the first exec was not reported");
	events_free(&evs);
	cr_assert(wait_for(&evs, "ctr-quiet", EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE,
			   EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_DESTROYED));
	events_find(&evs, wanted, &w, &n);
	cr_expect_eq(n, 0, "runc's own set-up of ctr-quiet gave %zu tamper events", n);
	events_free(&evs);
}

Test(containers, runc_events_carry_the_container)
{
	static const char *const extra[] = { "--annotation", "io.egret.image=egret-test/busybox:1",
					     "--annotation", "io.egret.label.team=blue", NULL };
	static const char *const cmd[] = { "sh", "-c", "echo hi > /tmp/x; nc -w 1 " SERVER " 9",
					   NULL };
	char dir[PATH_MAX], out[4096];
	const Egret__V1__Event *ev;
	struct events evs;
	Egret__V1__Event__PayloadCase kinds[] = { EGRET__V1__EVENT__PAYLOAD_EXEC,
						  EGRET__V1__EVENT__PAYLOAD_FILE,
						  EGRET__V1__EVENT__PAYLOAD_NET_CONNECT };

	harness_setup_start(NULL, NULL);
	bundle("ctr-meta", netns_path, extra, cmd, dir, sizeof(dir));
	runc_run("ctr-meta", dir, out, sizeof(out));
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		const Egret__V1__Container *c;

		ev = wait_for(&evs, "ctr-meta", kinds[i], 0);
		cr_assert(ev, "no event %d of ctr-meta", kinds[i]);
		c = ev->sandbox->container;
		cr_expect_str_eq(ev->sandbox->name, "ctr-meta");
		cr_expect_str_eq(c->runtime, "runc");
		cr_assert(c->image);
		cr_expect_str_eq(c->image->name, "egret-test/busybox:1");
		cr_expect_str_eq(c->image->tag, "1");
		cr_expect(c->n_labels == 1 && !strcmp(c->labels[0], "team=blue"));
		events_free(&evs);
	}
}

/* egretd down: the hook cannot register the container, and the runtime refuses to start it. */
Test(containers, runc_does_not_start_a_container_egretd_cannot_register)
{
	char marker[PATH_MAX + 16], bind[PATH_MAX * 2], dir[PATH_MAX], out[4096], cg[PATH_MAX];
	const char *extra[] = { "--bind", bind, NULL };
	static const char *const cmd[] = { "touch", "/out/ran", NULL };
	struct stat st;

	harness_setup_start(NULL, NULL);
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	snprintf(marker, sizeof(marker), "%s/out", T->tmpdir);
	cr_assert_eq(mkdir(marker, 0755), 0);
	snprintf(bind, sizeof(bind), "%s:/out", marker);
	bundle("ctr-orphan", netns_path, extra, cmd, dir, sizeof(dir));
	cr_expect_neq(runc_run("ctr-orphan", dir, out, sizeof(out)), 0,
		      "runc started a container no egretd registered: %s", out);
	cr_expect(strstr(out, "egretd is not answering"), "%s", out);
	strcat(marker, "/ran");
	cr_expect_neq(stat(marker, &st), 0, "the container's command ran");
	snprintf(cg, sizeof(cg), "%s/ctrs/ctr-orphan", top);
	cr_expect_neq(stat(cg, &st), 0, "its cgroup was left behind");
}

/* ---- registration by hand, watched subtrees ---------------------------------------------- */

static int connect_server(void *arg)
{
	return tcp_connect(SERVER, 8080, 0, 2000);
}

/* fn in a child that joined the cgroup (absolute path): its result */
static int in_cgroup(const char *cgroup, int (*fn)(void *))
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cgroup__join(cgroup, getpid()))
			_exit(250);
		_exit(fn(NULL));
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static bool pending_deny(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->reason == EGRET__V1__NET_CONNECT__REASON__REASON_SANDBOX_PENDING;
}

/* A cgroup in a watched subtree that nobody registered (a runtime without egret's hook, a
 * process placed there by hand) has no network; registered, it has its sandbox's rules.
 */
Test(containers, a_cgroup_in_a_watched_subtree_has_no_network_until_registered)
{
	char pods[PATH_MAX + 8], pod[PATH_MAX + 16], out[4096], watch[PATH_MAX + 8];
	const char *extra[] = { "--watch", watch, NULL };
	struct events evs;

	snprintf(pods, sizeof(pods), "%s/pods", top);
	snprintf(pod, sizeof(pod), "%s/unhooked", pods);
	cr_assert_eq(mkdir(pods, 0755), 0);
	cr_assert_eq(mkdir(pod, 0755), 0);
	snprintf(watch, sizeof(watch), "%s", pods);
	harness_setup_start("mode enforce\n"
			    "sandbox unhooked {\n"
			    "  allow " SERVER " tcp/8080\n"
			    "}\n",
			    extra);
	cr_expect_eq(in_cgroup(pod, connect_server), EPERM, "an unregistered cgroup connected");
	cr_assert_eq(events_wait(T->sink_path, pending_deny, NULL, 5000, &evs), 0);
	events_free(&evs);
	cr_assert_eq(egretctl(T, out, sizeof(out), "register", pod, "name=unhooked", NULL), 0, "%s",
		     out);
	cr_expect_eq(in_cgroup(pod, connect_server), 0, "the registered cgroup could not connect");
	/* positive control: the host */
	cr_expect_eq(tcp_connect(SERVER, 8080, 0, 2000), 0);
	/* an exempt cgroup in the watched subtree is the host's */
	snprintf(pod, sizeof(pod), "%s/infra", pods);
	cr_assert_eq(mkdir(pod, 0755), 0);
	cr_expect_eq(in_cgroup(pod, connect_server), EPERM);
	cr_assert_eq(egretctl(T, out, sizeof(out), "register", pod, "exempt=1", NULL), 0, "%s",
		     out);
	cr_expect_eq(in_cgroup(pod, connect_server), 0, "an exempt cgroup is the host's");
}

/* A registered container's connection, handed to the test over handoff[1] */
static int handoff[2] = { -1, -1 };

static int connection_handed_out(void *arg)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(8080) };
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	(void)arg;
	prctl(PR_SET_NAME, "ctrstart");
	inet_pton(AF_INET, SERVER, &sa.sin_addr);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)))
		return 1;
	return fds_send(handoff[1], &fd, 1) ? 2 : 0;
}

static bool is_flow_to_server(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_FLOW && ev->flow->dst_port == 8080;
}

static bool is_connect_to_server(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->dst_port == 8080 && !strcmp(ev->process->comm, "ctrstart");
}

static bool is_destroyed(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE &&
	       ev->sandbox_lifecycle->kind == EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_DESTROYED &&
	       ev->sandbox && !strcmp(ev->sandbox->name, arg);
}

/* The registered container "leaving" in *pod (under the instance's tree, no watched subtree),
 * with a connection to the server its process made, handed to the test in leaving_fd.
 */
static int leaving_fd = -1;

static void leaving_container(char *pod, size_t size)
{
	char out[4096];

	harness_close_at_teardown(&handoff[0]);
	harness_close_at_teardown(&handoff[1]);
	harness_close_at_teardown(&leaving_fd);
	snprintf(pod, size, "%s/leaving", top);
	cr_assert_eq(mkdir(pod, 0755), 0);
	harness_setup_start("mode enforce\n"
			    "sandbox leaving {\n"
			    "  allow " SERVER " tcp/8080\n"
			    "}\n",
			    NULL);
	cr_assert_eq(egretctl(T, out, sizeof(out), "register", pod, "name=leaving", NULL), 0, "%s",
		     out);
	cr_assert_eq(socketpair(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0, handoff), 0);
	cr_assert_eq(in_cgroup(pod, connection_handed_out), 0);
	cr_assert_eq(fds_recv(handoff[0], &leaving_fd, 1), 0);
}

/* Its cgroup removed (egretd says so), then the connection closed: its flow and connect events */
static void container_gone_then_closed(const char *pod, struct events *evs,
				       const Egret__V1__Event **conn, const Egret__V1__Event **ev)
{
	cr_assert_eq(rmdir(pod), 0, "%s", strerror(errno));
	cr_assert_eq(events_wait(T->sink_path, is_destroyed, "leaving", 5000, evs), 0);
	events_free(evs);
	close(leaving_fd);
	leaving_fd = -1;
	cr_assert_eq(events_wait(T->sink_path, is_flow_to_server, NULL, 5000, evs), 0,
		     "no flow for the gone container's connection");
	*ev = events_find(evs, is_flow_to_server, NULL, NULL);
	*conn = events_find(evs, is_connect_to_server, NULL, NULL);
	cr_assert(*conn && (*conn)->sandbox && (*ev)->sandbox);
}

/* A container gone (its cgroup removed, its registration with it) while its connection is still
 * closing: the kernel keeps nothing on the socket, and the flow is still reported, naming the
 * process that started it (the kernel sends the close of a socket whose cgroup went; egretd
 * held the connect).
 */
Test(containers, a_connection_closing_after_its_container_went_has_its_flow)
{
	const Egret__V1__Event *ev, *conn;
	char pod[PATH_MAX + 16];
	struct events evs;

	leaving_container(pod, sizeof(pod));
	container_gone_then_closed(pod, &evs, &conn, &ev);
	cr_expect_not(ev->flow->start_unknown);
	cr_expect_str_eq(ev->process->comm, "ctrstart");
	cr_expect_eq(ev->process->pid, conn->process->pid);
	cr_expect_eq(ev->sandbox->cgroup_id, conn->sandbox->cgroup_id);
	cr_expect_str_eq(conn->sandbox->name, "leaving");
	events_free(&evs);
}

/* The same with egretd restarted before the container goes: the new egretd never held the
 * connect, and the flow is still reported, its start unknown, with the container's cgroup.
 */
Test(containers, a_gone_containers_connection_is_reported_after_a_restart)
{
	const Egret__V1__Event *ev, *conn;
	char pod[PATH_MAX + 16];
	struct events evs;

	leaving_container(pod, sizeof(pod));
	cr_assert_eq(events_wait(T->sink_path, is_connect_to_server, NULL, 5000, &evs), 0);
	events_free(&evs);
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	container_gone_then_closed(pod, &evs, &conn, &ev);
	cr_expect(ev->flow->start_unknown);
	cr_expect_eq(ev->flow->socket_cookie, conn->net_connect->socket_cookie);
	cr_expect_eq(ev->sandbox->cgroup_id, conn->sandbox->cgroup_id);
	events_free(&evs);
}

Test(containers, registration_is_refused_where_it_would_not_hold)
{
	char out[4096], here[PATH_MAX];

	harness_setup_start(NULL, NULL);
	/* the v2 root: above the attach point */
	cr_expect_neq(egretctl(T, out, sizeof(out), "register", "/", NULL), 0);
	cr_expect(strstr(out, "is not below"), "%s", out);
	/* egret's root itself, and the attach point above it */
	cr_expect_neq(egretctl(T, out, sizeof(out), "register", T->cgroup_root, NULL), 0);
	cr_expect(strstr(out, "egret's root"), "%s", out);
	cr_expect_neq(egretctl(T, out, sizeof(out), "register", top, NULL), 0);
	/* words egretd does not know */
	snprintf(here, sizeof(here), "%s/ctrs", top);
	cr_assert_eq(mkdir(here, 0755), 0);
	cr_expect_neq(egretctl(T, out, sizeof(out), "register", here, "colour=red", NULL), 0);
	cr_expect(strstr(out, "unknown key 'colour'"), "%s", out);
	cr_expect_neq(egretctl(T, out, sizeof(out), "register", here, "name=a b", NULL), 0);
	/* nothing was registered by the refusals */
	cr_expect_eq(in_cgroup(here, connect_server), 0, "a refused cgroup is still the host's");
}

/* A restarted egretd knows the containers registered before it (pinned) and keeps their rules. */
Test(containers, registrations_survive_an_egretd_restart)
{
	static const char *const sleeper[] = { "sleep", "60", NULL };
	char dir[PATH_MAX], out[4096], line[PATH_MAX * 3];
	char *exec[] = { "runc",     "--root",
			 runc_root,  "exec",
			 "ctr-long", "sh",
			 "-c",	     "timeout 3 nc " SERVER " 8080 </dev/null; echo rc=$?",
			 NULL };
	char *run[] = { "sh", "-c", line, NULL };
	struct events evs;

	harness_setup_start("mode enforce\n"
			    "sandbox container=ctr-long {\n"
			    "  allow " SERVER " tcp/8080\n"
			    "}\n",
			    NULL);
	bundle("ctr-long", netns_path, NULL, sleeper, dir, sizeof(dir));
	/* detached, its stdio elsewhere than our pipe */
	snprintf(line, sizeof(line),
		 "runc --root %s run -d --bundle %s ctr-long </dev/null >%s/ctr-long.out 2>&1 || "
		 "{ cat %s/ctr-long.out; exit 1; }",
		 runc_root, dir, T->tmpdir, T->tmpdir);
	cr_assert_eq(run_cmd(run, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect(strstr(harness_log(T), "1 kept from the previous egretd"), "%s", harness_log(T));
	cr_expect_eq(run_cmd(exec, out, sizeof(out)), 0, "%s", out);
	cr_expect(strstr(out, "rc=143") && !strstr(out, "not permitted"),
		  "the container lost its rules: %s", out);
	cr_assert(wait_for(&evs, "ctr-long", EGRET__V1__EVENT__PAYLOAD_NET_CONNECT,
			   EGRET__V1__NET_CONNECT__VERDICT__VERDICT_ALLOW),
		  "events after the restart do not name the container");
	events_free(&evs);
}

/* ---- podman --------------------------------------------------------------------------------- */

static char podman_base[PATH_MAX]; /* storage, run and temp dirs, private to the test */

/* podman with the test's own storage (vfs: no mounts), runc (crun refuses hybrid cgroup hosts),
 * cgroupfs, then the words given; the run's limits within what this host lets it raise
 */
static int podman(char *out, size_t size, const char *const words[])
{
	char root[PATH_MAX + 8], run[PATH_MAX + 8], tmp[PATH_MAX + 8];
	char *argv[64] = { "podman", "--root",		 root,	     "--runroot",
			   run,	     "--tmpdir",	 tmp,	     "--storage-driver",
			   "vfs",    "--cgroup-manager", "cgroupfs", "--events-backend",
			   "none",   "--runtime",	 "runc" };
	int n = 15;

	snprintf(root, sizeof(root), "%s/root", podman_base);
	snprintf(run, sizeof(run), "%s/run", podman_base);
	snprintf(tmp, sizeof(tmp), "%s/tmp", podman_base);
	for (int i = 0; words[i] && n < 63; i++)
		argv[n++] = (char *)words[i];
	argv[n] = NULL;
	return run_cmd(argv, out, size);
}

static void podman_cleanup(void *arg)
{
	static const char *const rm[] = { "rm", "--all", "--force", "--time", "0", NULL };
	char out[4096];

	podman(out, sizeof(out), rm);
}

/* An image localhost/egret-test:1 of busybox, imported from a tar of the root file system. */
static void podman_image(void)
{
	char script[PATH_MAX], dir[PATH_MAX + 8], tar[PATH_MAX + 16], out[4096];
	char *mk[] = { "python3", script, dir, "--", "true", NULL };
	char *pack[] = { "tar", "-C", NULL, "-cf", tar, ".", NULL };
	const char *import[] = { "import", tar, "localhost/egret-test:1", NULL };
	char rootfs[PATH_MAX + 16];

	char conf[PATH_MAX + 32];
	FILE *f;

	snprintf(podman_base, sizeof(podman_base), "%s/podman", T->tmpdir);
	cr_assert_eq(mkdir(podman_base, 0700), 0);
	harness_at_teardown(podman_cleanup, NULL);
	/* podman's default net.ipv4.ping_group_range sysctl, which runc refuses in a network
	 * namespace the container joins (the test's)
	 */
	snprintf(conf, sizeof(conf), "%s/containers.conf", podman_base);
	f = fopen(conf, "w");
	cr_assert(f);
	fputs("[containers]\ndefault_sysctls = []\n", f);
	fclose(f);
	setenv("CONTAINERS_CONF", conf, 1);
	snprintf(script, sizeof(script), "%s/tests/tools/oci_bundle.py", EGRET_SOURCE_DIR);
	snprintf(dir, sizeof(dir), "%s/image", T->tmpdir);
	snprintf(tar, sizeof(tar), "%s/image.tar", T->tmpdir);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	pack[2] = rootfs;
	cr_assert_eq(run_cmd(mk, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(run_cmd(pack, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(podman(out, sizeof(out), import), 0, "podman import: %s", out);
}

/* A hooks.d directory holding egret's createRuntime hook (empty: hooks false). */
static void hooks_dir(char *dir, size_t size, bool hooks)
{
	char file[PATH_MAX + 16], out[8192];
	FILE *f;

	snprintf(dir, size, "%s/hooks.d%s", T->tmpdir, hooks ? "" : "-empty");
	cr_assert_eq(mkdir(dir, 0755), 0);
	if (!hooks)
		return;
	cr_assert_eq(egretctl(T, out, sizeof(out), "oci-hook", "hooks-d", "createRuntime", NULL), 0,
		     "%s", out);
	snprintf(file, sizeof(file), "%s/egret.json", dir);
	f = fopen(file, "w");
	cr_assert(f);
	fputs(out, f);
	fclose(f);
}

/* podman run --rm of the test image under NAME/pods (watched), in netns (NULL: none of its own
 * network); the command's output and status
 */
static int podman_run(const char *name, const char *hooks, const char *netns, const char *cmd,
		      char *out, size_t size)
{
	char parent[PATH_MAX + 8], net[96], nofile[64], nproc[64];
	struct rlimit nf, np;
	const char *words[] = { "--hooks-dir",
				hooks,
				"run",
				"--rm",
				"--pull",
				"never",
				"--name",
				name,
				"--cgroup-parent",
				parent,
				"--network",
				net,
				"--ulimit",
				nofile,
				"--ulimit",
				nproc,
				"localhost/egret-test:1",
				"sh",
				"-c",
				cmd,
				NULL };

	getrlimit(RLIMIT_NOFILE, &nf);
	getrlimit(RLIMIT_NPROC, &np);
	snprintf(nofile, sizeof(nofile), "nofile=%llu:%llu", (unsigned long long)nf.rlim_max,
		 (unsigned long long)nf.rlim_max);
	snprintf(nproc, sizeof(nproc), "nproc=4096:4096");
	snprintf(parent, sizeof(parent), "%s/pods", top_rel);
	snprintf(net, sizeof(net), "%s%s", netns ? "ns:" : "none", netns ? netns : "");
	return podman(out, size, words);
}

static bool podman_event(const Egret__V1__Event *ev, const void *arg)
{
	const char *name = arg;

	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT && ev->sandbox &&
	       ev->sandbox->container && !strcmp(ev->sandbox->container->name, name);
}

static void podman_setup(const char *policy, char *watch, size_t size)
{
	const char *extra[] = { "--watch", watch, NULL };

	snprintf(watch, size, "%s/pods", top);
	cr_assert_eq(mkdir(watch, 0755), 0);
	podman_image();
	harness_setup_start(policy, extra);
}

/* podman's container, named and made from an image, is registered through a hooks.d file: its
 * image's policy block opens what it says, and its events name it, its image and podman.
 */
Test(containers, podman_is_registered_with_its_name_and_image)
{
	char watch[PATH_MAX + 8], hooks[PATH_MAX + 16], out[8192];
	const Egret__V1__Container *c;
	struct events evs;

	podman_setup("mode enforce\n"
		     "sandbox image=localhost/egret-test:1 {\n"
		     "  allow " SERVER " tcp/8080\n"
		     "}\n",
		     watch, sizeof(watch));
	hooks_dir(hooks, sizeof(hooks), true);
	podman_run("egret-pod-a", hooks, netns_path,
		   "timeout 3 nc " SERVER " 8080 </dev/null; echo rc=$?; "
		   "nc -w 1 " SERVER " 8081 </dev/null; echo rc2=$?",
		   out, sizeof(out));
	cr_expect(strstr(out, "rc=143"), "the image's rule did not open " SERVER ":8080: %s", out);
	cr_expect(strstr(out, "Operation not permitted") && strstr(out, "rc2=1"),
		  "a port the rule does not name was reached: %s", out);
	cr_assert_eq(events_wait(T->sink_path, podman_event, "egret-pod-a", 10000, &evs), 0);
	c = events_find(&evs, podman_event, "egret-pod-a", NULL)->sandbox->container;
	cr_expect_eq(strlen(c->uid), 64, "the full container id: %s", c->uid);
	cr_expect_str_eq(c->runtime, "podman");
	cr_assert(c->image);
	cr_expect_str_eq(c->image->name, "localhost/egret-test:1");
	events_free(&evs);
}

/* A container podman starts without egret's hook (a host whose hooks.d lost the file: podman
 * drops a hook it cannot run without a word) in the watched subtree has no network.
 */
Test(containers, podman_without_egrets_hook_has_no_network)
{
	char watch[PATH_MAX + 8], hooks[PATH_MAX + 16], out[8192];
	struct events evs;

	podman_setup("mode enforce\nallow " SERVER " tcp/8080\n", watch, sizeof(watch));
	hooks_dir(hooks, sizeof(hooks), false);
	podman_run("egret-pod-b", hooks, netns_path,
		   "timeout 3 nc " SERVER " 8080 </dev/null; echo rc=$?", out, sizeof(out));
	cr_expect(strstr(out, "Operation not permitted"), "an unregistered container connected: %s",
		  out);
	cr_assert_eq(events_wait(T->sink_path, pending_deny, NULL, 5000, &evs), 0);
	events_free(&evs);
	/* positive control: the same container with the hook */
	hooks_dir(hooks, sizeof(hooks), true);
	podman_run("egret-pod-c", hooks, netns_path,
		   "timeout 3 nc " SERVER " 8080 </dev/null; echo rc=$?", out, sizeof(out));
	cr_expect(strstr(out, "rc=143"), "%s", out);
}

Test(containers, podman_first_dns_query_from_its_own_namespace_is_answered)
{
	char watch[PATH_MAX + 8], hooks[PATH_MAX + 16], out[8192];

	podman_setup("mode enforce\nallow domain allowed.test\n", watch, sizeof(watch));
	hooks_dir(hooks, sizeof(hooks), true);
	cr_expect_eq(podman_run("egret-pod-d", hooks, NULL, "nslookup allowed.test " UPSTREAM, out,
				sizeof(out)),
		     0, "%s", out);
	cr_expect(strstr(out, "192.0.2.10"), "the first query was not answered: %s", out);
}

/* ---- docker --------------------------------------------------------------------------------- */

/* dockerd has no hook configuration: deploy/containers/egret-runc, registered as its default
 * runtime, puts egret's hook into each container's config.json before runc runs. dockerd runs
 * in a cgroup of the instance's tree (so the teardown ends it and its containerd), with
 * storage, state and socket in the test's directory, no bridge and no firewall rules.
 */
static char docker_dir[PATH_MAX];
static char docker_host[PATH_MAX + 16];

static int docker(char *out, size_t size, const char *const words[])
{
	char *argv[64] = { "/usr/bin/docker", "--host", docker_host };
	int n = 3;

	for (int i = 0; words[i] && n < 63; i++)
		argv[n++] = (char *)words[i];
	argv[n] = NULL;
	return run_cmd(argv, out, size);
}

/* what dockerd left mounted under its directories, detached */
static void docker_cleanup(void *arg)
{
	static const char *const rm[] = { "rm",		  "--force",	  "egret-dock-a",
					  "egret-dock-b", "egret-dock-c", NULL };
	char out[4096], line[PATH_MAX * 2];
	pid_t *pid = arg;
	FILE *f;

	docker(out, sizeof(out), rm);
	if (*pid > 0) {
		kill(*pid, SIGTERM);
		for (int i = 0; i < 100 && waitpid(*pid, NULL, WNOHANG) == 0; i++)
			usleep(100000);
		kill(*pid, SIGKILL);
		waitpid(*pid, NULL, 0);
		*pid = 0;
	}
	for (int pass = 0; pass < 4; pass++) {
		f = fopen("/proc/self/mountinfo", "r");
		while (f && fgets(line, sizeof(line), f)) {
			char mnt[PATH_MAX];

			if (sscanf(line, "%*s %*s %*s %*s %4095s", mnt) == 1 &&
			    !strncmp(mnt, docker_dir, strlen(docker_dir)))
				umount2(mnt, MNT_DETACH);
		}
		if (f)
			fclose(f);
	}
}

static void docker_start(pid_t *dockerd)
{
	char conf[PATH_MAX + 16], cg[PATH_MAX + 16], out[4096];
	static const char *const version[] = { "version", NULL };
	FILE *f;

	snprintf(docker_dir, sizeof(docker_dir), "%s/docker", T->tmpdir);
	snprintf(docker_host, sizeof(docker_host), "unix://%s/sock", docker_dir);
	snprintf(cg, sizeof(cg), "%s/dockerd", top);
	cr_assert_eq(mkdir(docker_dir, 0700), 0);
	cr_assert_eq(mkdir(cg, 0755), 0);
	snprintf(conf, sizeof(conf), "%s/daemon.json", docker_dir);
	f = fopen(conf, "w");
	cr_assert(f);
	fprintf(f,
		"{\"runtimes\": {\"egret\": {\"path\": \"%s/deploy/containers/egret-runc\",\n"
		"  \"runtimeArgs\": [\"--egret-egretctl=%s\", \"--egret-control=%s\",\n"
		"                  \"--egret-docker-root=%s/data\"]}},\n"
		" \"default-runtime\": \"egret\", \"iptables\": false, \"ip6tables\": false,\n"
		" \"ip-masq\": false, \"bridge\": \"none\", \"storage-driver\": \"vfs\",\n"
		" \"data-root\": \"%s/data\", \"exec-root\": \"%s/exec\",\n"
		" \"pidfile\": \"%s/pid\", \"hosts\": [\"%s\"]}\n",
		EGRET_SOURCE_DIR, EGRETCTL_BIN, T->control, docker_dir, docker_dir, docker_dir,
		docker_dir, docker_host);
	fclose(f);
	harness_at_teardown(docker_cleanup, dockerd);
	*dockerd = fork();
	cr_assert(*dockerd >= 0);
	if (*dockerd == 0) {
		char log[PATH_MAX + 16];
		int fd;

		snprintf(log, sizeof(log), "%s/dockerd.log", docker_dir);
		fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (fd < 0 || cgroup__join(cg, getpid()))
			_exit(126);
		dup2(fd, 1);
		dup2(fd, 2);
		execl("/usr/sbin/dockerd", "dockerd", "--config-file", conf, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 300; i++) {
		if (docker(out, sizeof(out), version) == 0)
			return;
		usleep(100000);
	}
	cr_assert_fail("dockerd did not come up: %s", out);
}

/* the busybox image, as docker import makes it */
static void docker_image(void)
{
	char script[PATH_MAX], dir[PATH_MAX + 8], tar[PATH_MAX + 16], rootfs[PATH_MAX + 16];
	char out[4096];
	char *mk[] = { "python3", script, dir, "--", "true", NULL };
	char *pack[] = { "tar", "-C", rootfs, "-cf", tar, ".", NULL };
	const char *import[] = { "import", tar, "egret-test/busybox:2", NULL };

	snprintf(script, sizeof(script), "%s/tests/tools/oci_bundle.py", EGRET_SOURCE_DIR);
	snprintf(dir, sizeof(dir), "%s/image", T->tmpdir);
	snprintf(tar, sizeof(tar), "%s/image.tar", T->tmpdir);
	snprintf(rootfs, sizeof(rootfs), "%s/rootfs", dir);
	cr_assert_eq(run_cmd(mk, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(run_cmd(pack, out, sizeof(out)), 0, "%s", out);
	cr_assert_eq(docker(out, sizeof(out), import), 0, "docker import: %s", out);
}

static int docker_run(const char *name, const char *cmd, char *out, size_t size)
{
	char parent[PATH_MAX + 8];
	const char *words[] = { "run",
				"--rm",
				"--name",
				name,
				"--network",
				"none",
				"--cgroup-parent",
				parent,
				"--label",
				"team=green",
				"egret-test/busybox:2",
				"sh",
				"-c",
				cmd,
				NULL };

	snprintf(parent, sizeof(parent), "%s/dock", top_rel);
	return docker(out, size, words);
}

static bool docker_event(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_DNS_QUERY && ev->sandbox &&
	       ev->sandbox->container && !strcmp(ev->sandbox->container->name, arg);
}

/* A Docker container in a network namespace of its own (--network none): a connect its policy
 * allows has no route there (ENETUNREACH), one it does not is refused by egret (EPERM); its
 * first query is answered; its events name it, its image, its labels and docker.
 */
Test(containers, docker_through_the_runtime_wrapper)
{
	char out[8192];
	const Egret__V1__Container *c;
	struct events evs;
	static pid_t dockerd;

	harness_setup_start("mode enforce\n"
			    "allow domain allowed.test\n"
			    "sandbox label team=green {\n"
			    "  allow 198.51.100.0/24 tcp/80\n"
			    "}\n",
			    NULL);
	docker_start(&dockerd);
	docker_image();
	cr_expect_eq(
		docker_run("egret-dock-a",
			   "nslookup allowed.test " UPSTREAM "; "
			   "nc -w 1 198.51.100.7 80 </dev/null; nc -w 1 198.51.100.7 81 </dev/null",
			   out, sizeof(out)),
		1, "%s", out);
	cr_expect(strstr(out, "192.0.2.10"), "the first query was not answered: %s", out);
	cr_expect(strstr(out, "Network is unreachable"), "the allowed connect was refused: %s",
		  out);
	cr_expect(strstr(out, "Operation not permitted"), "the other port was not refused: %s",
		  out);
	cr_assert_eq(events_wait(T->sink_path, docker_event, "egret-dock-a", 10000, &evs), 0);
	c = events_find(&evs, docker_event, "egret-dock-a", NULL)->sandbox->container;
	cr_expect_eq(strlen(c->uid), 64, "%s", c->uid);
	cr_expect_str_eq(c->runtime, "docker");
	cr_assert(c->image);
	cr_expect_str_eq(c->image->name, "egret-test/busybox:2");
	cr_expect(c->n_labels == 1 && !strcmp(c->labels[0], "team=green"));
	events_free(&evs);
}

/* ---- deploy/containers/install-hook.sh ------------------------------------------------------ */

static bool file_has(const char *path, const char *needle)
{
	char buf[65536];
	int n = read_file(path, buf, sizeof(buf));

	return n > 0 && strstr(buf, needle);
}

/* What install-hook.sh writes for each runtime, under a host root of the test's: the hooks.d
 * file podman and CRI-O read, Docker's runtime (an existing daemon.json kept), and containerd's
 * base spec, which is then the config.json of a real runc container: egret registers it.
 */
Test(containers, install_hook_writes_what_each_runtime_reads)
{
	char host[PATH_MAX + 8], script[PATH_MAX], path[PATH_MAX * 2], out[16384], dir[PATH_MAX];
	char *argv[] = { "sh",		 script,       "--host-root",
			 host,		 "--egretctl", EGRETCTL_BIN,
			 "--control",	 T->control,   "--exempt-namespace",
			 "egret-system", "podman",     "crio",
			 "docker",	 "containerd", NULL };
	char *again[] = { "sh",	    script,	  "--host-root",
			  host,	    "--egretctl", "/nonexistent/egretctl",
			  "podman", NULL };
	static const char *const cmd[] = { "true", NULL };
	char *patch[] = {
		"python3",
		"-c",
		"import json,sys; b=json.load(open(sys.argv[1])); "
		"c=json.load(open(sys.argv[2])); c['process']=b['process']; "
		"c['root']=b['root']; c['linux']['cgroupsPath']=b['linux']['cgroupsPath']; "
		"c['mounts']=b['mounts']; json.dump(c, open(sys.argv[1], 'w'))",
		NULL,
		NULL,
		NULL
	};
	char bundle_cfg[PATH_MAX + 16], spec[PATH_MAX * 2];
	struct events evs;
	FILE *f;

	harness_setup_start(NULL, NULL);
	snprintf(host, sizeof(host), "%s/host", T->tmpdir);
	snprintf(script, sizeof(script), "%s/deploy/containers/install-hook.sh", EGRET_SOURCE_DIR);
	/* the host's egretctl, at the path the hooks name */
	snprintf(path, sizeof(path), "%s%s", host, EGRETCTL_BIN);
	cr_assert_eq(mkdir_p(path, 0755), 0);
	rmdir(path);
	cr_assert_eq(symlink(EGRETCTL_BIN, path), 0);
	/* an operator's daemon.json, which must keep what it had */
	snprintf(path, sizeof(path), "%s/etc/docker", host);
	cr_assert_eq(mkdir_p(path, 0755), 0);
	strcat(path, "/daemon.json");
	f = fopen(path, "w");
	cr_assert(f);
	fputs("{\"log-level\": \"warn\"}\n", f);
	fclose(f);
	cr_assert_eq(run_cmd(argv, out, sizeof(out)), 0, "install-hook.sh: %s", out);
	cr_expect(file_has(path, "\"log-level\": \"warn\"") && file_has(path, "egret-runc") &&
			  file_has(path, "\"default-runtime\": \"egret\""),
		  "daemon.json: %s", out);
	snprintf(path, sizeof(path), "%s/usr/share/containers/oci/hooks.d/egret.json", host);
	cr_expect(file_has(path, "\"createRuntime\"") && file_has(path, "--exempt-namespace"),
		  "podman's hooks.d");
	snprintf(path, sizeof(path), "%s/etc/containers/oci/hooks.d/egret.json", host);
	cr_expect(file_has(path, "\"createRuntime\""), "CRI-O's hooks.d");
	snprintf(path, sizeof(path), "%s/usr/local/sbin/egret-runc", host);
	cr_expect_eq(access(path, X_OK), 0, "the Docker wrapper");
	cr_expect(strstr(out, "base_runtime_spec"), "containerd's configuration is not named: %s",
		  out);
	/* a hook binary that is not there is not installed: podman would drop it silently */
	cr_expect_neq(run_cmd(again, out, sizeof(out)), 0);
	cr_expect(strstr(out, "is not an executable"), "%s", out);
	/* containerd's base spec, as a runc container's config: its hook registers it */
	snprintf(spec, sizeof(spec), "%s/etc/containerd/egret-base-spec.json", host);
	bundle("ctr-base", netns_path, NULL, cmd, dir, sizeof(dir));
	snprintf(bundle_cfg, sizeof(bundle_cfg), "%s/config.json", dir);
	patch[3] = bundle_cfg;
	patch[4] = spec;
	cr_assert_eq(run_cmd(patch, out, sizeof(out)), 0, "%s", out);
	cr_expect_eq(runc_run("ctr-base", dir, out, sizeof(out)), 0, "%s", out);
	cr_assert(wait_for(&evs, "ctr-base", EGRET__V1__EVENT__PAYLOAD_SANDBOX_LIFECYCLE,
			   EGRET__V1__SANDBOX_LIFECYCLE__KIND__KIND_REGISTERED),
		  "the base spec's hook did not register the container");
	events_free(&evs);
}

/* ---- identity ------------------------------------------------------------------------------- */

static bool named(const Egret__V1__Event *ev, const void *name)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT && ev->sandbox &&
	       !strcmp(ev->sandbox->name, name);
}

/* A sandbox's name is its directory name in full (Docker's 64-hex ids, podman's libpod-<64>
 * were cut at 63 characters), and a cgroup made inside a sandbox is in that sandbox.
 */
Test(containers, names_are_whole_and_nested_cgroups_are_the_sandboxs)
{
	char name[80], nested[PATH_MAX + 128];
	struct events evs;

	memset(name, 0, sizeof(name));
	memcpy(name, "libpod-", 7);
	memset(name + 7, 'f', 64);
	harness_setup_start(NULL, NULL);
	cr_expect_eq(in_sandbox(T, name, connect_server, NULL), EPERM);
	cr_assert_eq(events_wait(T->sink_path, named, name, 5000, &evs), 0,
		     "no event names the sandbox in full");
	events_free(&evs);
	/* a cgroup the sandbox made inside itself: the same sandbox, the same rules */
	snprintf(nested, sizeof(nested), "%s/%s/inner", T->cgroup_root, name);
	cr_assert_eq(mkdir(nested, 0755), 0);
	cr_expect_eq(in_cgroup(nested, connect_server), EPERM);
	cr_assert_eq(egretctl(T, NULL, 0, "allow", "--sandbox", name, SERVER, "tcp/8080", NULL), 0);
	cr_expect_eq(in_cgroup(nested, connect_server), 0,
		     "the nested cgroup did not get its sandbox's rule");
}

/* A process that showed egretd a network namespace without a resolver (a setns, a dig) is gone
 * before egretd looks: egretd finds the namespace from another process of the sandbox still in
 * it, and listens there.
 */
Test(containers, a_namespace_is_found_again_when_its_reporter_is_gone)
{
	char out[4096], nsref[64], box[PATH_MAX];
	int fd[2];
	static pid_t holder; /* read at teardown */

	harness_setup_start("mode enforce\nallow domain allowed.test\n", NULL);
	cr_assert_eq(sandbox_path(T, "netbox", box, sizeof(box)), 0);
	mkdir(box, 0755);
	cr_assert_eq(pipe(fd), 0);
	/* the namespace is made outside the sandbox (no report), its holder then joins it */
	holder = fork();
	if (holder == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (unshare(CLONE_NEWNET) || cgroup__join(box, getpid()))
			_exit(1);
		write(fd[1], "x", 1);
		pause();
		_exit(0);
	}
	harness_kill_at_teardown(&holder);
	cr_assert_eq(read(fd[0], out, 1), 1);
	snprintf(nsref, sizeof(nsref), "--net=/proc/%d/ns/net", (int)holder);
	/* a short-lived process enters it and is gone at once: egretd learns of the namespace
	 * from its setns, too late to open it through that process
	 */
	cr_expect_eq(sandbox_cmd(T, "netbox", out, sizeof(out), "nsenter", nsref, "true", NULL), 0,
		     "%s", out);
	/* egretd listens there without anyone asking again (its own namespace and this one) */
	for (int i = 0; i < 30 && !strstr(out, ", 2 namespaces,"); i++) {
		usleep(100000);
		egretctl(T, out, sizeof(out), "status", NULL);
	}
	cr_expect(strstr(out, ", 2 namespaces,"), "no resolver in the namespace: %s", out);
	/* so the next process's first query there is answered */
	cr_expect_eq(sandbox_cmd(T, "netbox", out, sizeof(out), "nsenter", nsref, "dig", "+time=2",
				 "+tries=1", "@" UPSTREAM, "allowed.test", NULL),
		     0, "%s", out);
	cr_expect(strstr(out, "192.0.2.10"), "the namespace never got a resolver: %s", out);
}

/* ---- packages -------------------------------------------------------------------------------- */

static pid_t pkg_server;

static bool container_install(const Egret__V1__Event *ev, const void *id)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_PACKAGE_INSTALL &&
	       is_container_event(ev, id) && !strcmp(ev->package_install->name, "demo-pkg");
}

/* pip in a container (python3 and pip are the host's /usr, read-only; what it installs goes to
 * a tmpfs of the container's own over a directory where the host holds another version of the
 * same package): the event is the container's package, read in its root, never the host's.
 */
Test(containers, runc_pip_install_reports_the_containers_package)
{
	char fx[PATH_MAX + 8], script[PATH_MAX], out[16384], target[PATH_MAX + 8];
	char decoy[PATH_MAX + 64], meta[PATH_MAX + 80], hash[128], dir[PATH_MAX];
	char *fixtures[] = { "/bin/sh", script, fx, NULL };
	const char *extra[] = { "--rootfs", "host", "--tmpfs", target, "--tmpfs", "/tmp", NULL };
	const char *cmd[] = { "/usr/bin/python3",
			      "-m",
			      "pip",
			      "install",
			      "--isolated",
			      "--no-cache-dir",
			      "--no-deps",
			      "--disable-pip-version-check",
			      "--no-input",
			      "--break-system-packages",
			      "--trusted-host",
			      "192.0.2.20",
			      "--target",
			      target,
			      "--index-url",
			      "http://192.0.2.20:8000/simple/",
			      "demo-pkg",
			      NULL };
	const Egret__V1__PackageInstall *pi;
	struct events evs;
	FILE *f;

	snprintf(fx, sizeof(fx), "%s/fx", T->tmpdir);
	snprintf(script, sizeof(script), "%s/tests/tools/pkg_fixtures.sh", EGRET_SOURCE_DIR);
	cr_assert_eq(run_cmd(fixtures, out, sizeof(out)), 0, "fixtures: %s", out);
	cr_assert_eq(netns_addr("lo", "192.0.2.20/32"), 0);
	harness_kill_at_teardown(&pkg_server);
	pkg_server = fork();
	if (pkg_server == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execl("/usr/bin/python3", "python3", "-m", "http.server", "8000", "--bind",
		      "192.0.2.20", "--directory", fx, (char *)NULL);
		_exit(127);
	}
	for (int i = 0; i < 100 && tcp_connect("192.0.2.20", 8000, 0, 100); i++)
		usleep(50000);
	/* the host's decoy at the very path the container installs to */
	snprintf(target, sizeof(target), "%s/site", T->tmpdir);
	snprintf(decoy, sizeof(decoy), "%s/demo_pkg-1.0.dist-info", target);
	cr_assert_eq(mkdir_p(decoy, 0755), 0);
	snprintf(meta, sizeof(meta), "%s/METADATA", decoy);
	f = fopen(meta, "w");
	cr_assert(f);
	fputs("Metadata-Version: 2.1\nName: demo-pkg\nVersion: 6.6.6-host\n", f);
	fclose(f);
	harness_setup_start("mode enforce\n"
			    "sandbox container=ctr-pip {\n"
			    "  allow 192.0.2.20 tcp/8000\n"
			    "}\n",
			    NULL);
	bundle("ctr-pip", netns_path, extra, cmd, dir, sizeof(dir));
	cr_expect_eq(runc_run("ctr-pip", dir, out, sizeof(out)), 0, "pip: %s", out);
	cr_assert_eq(events_wait(T->sink_path, container_install, "ctr-pip", 20000, &evs), 0,
		     "no PackageInstall of the container's");
	pi = events_find(&evs, container_install, "ctr-pip", NULL)->package_install;
	cr_expect_str_eq(pi->version, "1.0", "the host's package was reported: %s", pi->version);
	snprintf(script, sizeof(script), "%s/metadata.hash", fx);
	cr_assert_gt(read_file(script, hash, sizeof(hash)), 0);
	hash[strcspn(hash, "\n")] = '\0';
	cr_expect_str_eq(pi->hash, hash);
	cr_expect_str_eq(pi->installer, "pip");
	events_free(&evs);
}
