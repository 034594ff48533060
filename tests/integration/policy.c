/* The egress policy engine, table-driven: every case runs the same call from a sandbox and,
 * where the sandbox must be refused, from outside egret's root too (the positive control: the
 * listener is there and reachable). Addresses live on lo inside the test's own network
 * namespace; listeners bind the wildcard there, so every call has somewhere local to go.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <grp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <linux/if_ether.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "util.h"

static const char policy_text[] = "mode enforce\n"
				  "deny 203.0.113.0/24\n"
				  "allow 203.0.113.5\n"
				  "allow 192.0.2.0/24\n"
				  "allow 198.51.100.7 tcp/443\n"
				  "allow 2001:db8::/32 udp/5000-5010 tcp/8443\n"
				  "allow 169.254.0.0/16\n"
				  "sandbox build-42 {\n"
				  "    allow 198.51.100.99 tcp/8080\n"
				  "}\n";

static const char *const local_addrs[] = {
	"192.0.2.1/32",	  "198.51.100.7/32", "198.51.100.8/32",	   "198.51.100.99/32",
	"203.0.113.5/32", "2001:db8::1/128", "169.254.169.254/32",
};
static const uint16_t tcp_ports[] = { 80, 443, 8080, 8443 };
static const uint16_t udp_ports[] = { 53, 5005, 5011 };

static int fds[64];
static int nfds;

static void keep(int fd)
{
	cr_assert(fd >= 0, "listener: %s", strerror(-fd));
	harness_close_at_teardown(&fds[nfds]);
	fds[nfds++] = fd;
}

static void netns_with_listeners(void)
{
	cr_assert_eq(netns_new(), 0);
	for (size_t i = 0; i < sizeof(local_addrs) / sizeof(local_addrs[0]); i++)
		cr_assert_eq(netns_addr("lo", local_addrs[i]), 0);
	cr_assert_eq(netns_run("sysctl -qw net.ipv4.ping_group_range='0 2147483647'"), 0);
	for (size_t i = 0; i < sizeof(tcp_ports) / sizeof(tcp_ports[0]); i++) {
		keep(tcp_listen("0.0.0.0", tcp_ports[i]));
		keep(tcp_listen("::", tcp_ports[i]));
	}
	for (size_t i = 0; i < sizeof(udp_ports) / sizeof(udp_ports[0]); i++) {
		keep(udp_bind("0.0.0.0", udp_ports[i]));
		keep(udp_bind("::", udp_ports[i]));
	}
}

static void setup(void)
{
	harness_setup(false);
	netns_with_listeners();
	harness_setup_start(policy_text, NULL);
}

TestSuite(policy, .init = setup, .fini = harness_teardown, .timeout = 120);

enum op {
	TCP,
	UDP_SENDTO,
	UDP_CONNECTED,
	TFO
};

struct pcase {
	const char *what;
	const char *sandbox;
	enum op op;
	const char *addr;
	uint16_t port;
	int family;
	int expect; /* 0 or EPERM */
};

static const struct pcase cases[] = {
	{ "allowed v4 prefix, any port", "box", TCP, "192.0.2.1", 80, AF_INET, 0 },
	{ "allowed v4 host and port", "box", TCP, "198.51.100.7", 443, AF_INET, 0 },
	{ "other port of an allowed host", "box", TCP, "198.51.100.7", 80, AF_INET, EPERM },
	{ "other address", "box", TCP, "198.51.100.8", 443, AF_INET, EPERM },
	{ "allowed v6 prefix and port", "box", TCP, "2001:db8::1", 8443, AF_INET6, 0 },
	{ "other port of an allowed v6 prefix", "box", TCP, "2001:db8::1", 80, AF_INET6, EPERM },
	{ "v6 port range, inside", "box", UDP_SENDTO, "2001:db8::1", 5005, AF_INET6, 0 },
	{ "v6 port range, outside", "box", UDP_SENDTO, "2001:db8::1", 5011, AF_INET6, EPERM },
	{ "sandbox rule in its sandbox", "build-42", TCP, "198.51.100.99", 8080, AF_INET, 0 },
	{ "sandbox rule in another sandbox", "box", TCP, "198.51.100.99", 8080, AF_INET, EPERM },
	{ "deny beats allow", "box", TCP, "203.0.113.5", 80, AF_INET, EPERM },
	{ "allow 169.254.0.0/16 leaves metadata shut", "box", TCP, "169.254.169.254", 80, AF_INET,
	  EPERM },
	{ "IPv4-mapped form of a denied address", "box", TCP, "::ffff:198.51.100.8", 443, AF_INET6,
	  EPERM },
	{ "IPv4-mapped form of an allowed address", "box", TCP, "::ffff:198.51.100.7", 443,
	  AF_INET6, 0 },
	{ "unconnected UDP to a denied address", "box", UDP_SENDTO, "198.51.100.8", 5005, AF_INET,
	  EPERM },
	{ "connected UDP to a denied address", "box", UDP_CONNECTED, "198.51.100.8", 5005, AF_INET,
	  EPERM },
	{ "unconnected UDP to an allowed address", "box", UDP_SENDTO, "192.0.2.1", 5005, AF_INET,
	  0 },
	{ "connected UDP to an allowed address", "box", UDP_CONNECTED, "192.0.2.1", 5005, AF_INET,
	  0 },
	{ "TCP Fast Open to a denied address", "box", TFO, "198.51.100.8", 80, AF_INET, EPERM },
	{ "TCP Fast Open to an allowed address", "box", TFO, "192.0.2.1", 80, AF_INET, 0 },
};

static const struct pcase *cur;

static int run_case(void *arg)
{
	switch (cur->op) {
	case TCP:
		return tcp_connect(cur->addr, cur->port, cur->family, 2000);
	case UDP_SENDTO:
		return udp_sendto(cur->addr, cur->port, cur->family);
	case UDP_CONNECTED:
		return udp_connect_send(cur->addr, cur->port, cur->family);
	case TFO:
		return tcp_fastopen(cur->addr, cur->port, cur->family);
	}
	return -1;
}

Test(policy, table)
{
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int got;

		cur = &cases[i];
		got = in_sandbox(T, cur->sandbox, run_case, NULL);
		cr_expect_eq(got, cur->expect, "%s (%s port %u from %s): expected %s, got %s",
			     cur->what, cur->addr, cur->port, cur->sandbox,
			     cur->expect ? strerror(cur->expect) : "success",
			     got ? strerror(got) : "success");
		if (cur->expect) {
			got = in_sandbox(T, NULL, run_case, NULL);
			cr_expect_eq(got, 0, "%s: positive control from outside failed: %s",
				     cur->what, strerror(got));
		}
	}
}

static int raw_socket(void *arg)
{
	int fd = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);

	if (fd < 0)
		return errno;
	close(fd);
	return 0;
}

Test(policy, raw_sockets_are_refused)
{
	cr_expect_eq(in_sandbox(T, "box", raw_socket, NULL), EPERM);
	cr_expect_eq(in_sandbox(T, NULL, raw_socket, NULL), 0, "positive control");
}

static int ping_denied(void *arg)
{
	return ping_echo("198.51.100.8", 1000);
}

static int ping_allowed(void *arg)
{
	return ping_echo("192.0.2.1", 1000);
}

Test(policy, ping_socket_gets_nothing_through)
{
	int got = in_sandbox(T, "box", ping_denied, NULL);

	cr_expect(got == EPERM || got == ETIMEDOUT, "ping to a denied address: %s",
		  got ? strerror(got) : "a reply came back");
	cr_expect_eq(in_sandbox(T, NULL, ping_denied, NULL), 0, "positive control: %s",
		     strerror(in_sandbox(T, NULL, ping_denied, NULL)));
	cr_expect_eq(in_sandbox(T, "box", ping_allowed, NULL), 0,
		     "ping to an address allowed for any protocol");
}

static int packet_socket(void *arg)
{
	int fd = socket(AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));

	if (fd < 0)
		return errno;
	/* in a sandbox this point is never reached: SIGKILL lands on the way out */
	close(fd);
	return 0;
}

static bool is_packet_kill(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->hook == EGRET__V1__NET_CONNECT__HOOK__HOOK_SYSCALL &&
	       ev->net_connect->family == AF_PACKET && ev->net_connect->killed;
}

Test(policy, af_packet_is_stopped)
{
	struct events evs;
	int status = in_sandbox_status(T, "box", packet_socket, NULL);

	cr_expect(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL,
		  "AF_PACKET socket in a sandbox: status %#x", status);
	cr_expect_eq(in_sandbox(T, NULL, packet_socket, NULL), 0, "positive control");
	cr_assert_eq(events_wait(T->sink_path, is_packet_kill, NULL, 5000, &evs), 0,
		     "no event for the AF_PACKET socket");
	cr_expect_str_eq(events_find(&evs, is_packet_kill, NULL, NULL)->sandbox->name, "box");
	events_free(&evs);
}

static int connect_198_8(void *arg)
{
	return tcp_connect("198.51.100.8", 80, AF_INET, 2000);
}

static bool is_change(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE &&
	       !strcmp(ev->policy_change->action, arg);
}

Test(policy, live_allow_then_revoke)
{
	char out[8192], live[4096];
	struct events evs;
	const Egret__V1__Event *ev;

	cr_assert_eq(in_sandbox(T, "box", connect_198_8, NULL), EPERM);
	cr_assert_eq(egretctl(T, out, sizeof(out), "allow", "198.51.100.8", "tcp/80", NULL), 0,
		     "%s", out);
	cr_expect(strstr(out, "allowed: allow 198.51.100.8 tcp/80 (rule 1000000)"), "%s", out);
	cr_expect_eq(in_sandbox(T, "box", connect_198_8, NULL), 0,
		     "the edit was not enforced when the command returned");
	cr_assert(read_file(T->live_path, live, sizeof(live)) > 0);
	cr_expect(strstr(live, "allow 198.51.100.8 tcp/80\n"), "%s", live);
	cr_expect_eq(egretctl(T, out, sizeof(out), "list", NULL), 0, "%s", out);
	cr_expect(strstr(out, "1000000  allow 198.51.100.8 tcp/80"), "%s", out);

	/* live rules survive a restart */
	cr_assert_eq(harness_stop(T, SIGTERM), 0);
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect_eq(in_sandbox(T, "box", connect_198_8, NULL), 0, "live rule lost on restart");

	cr_expect_eq(egretctl(T, out, sizeof(out), "revoke", "198.51.100.8", "tcp/80", NULL), 0,
		     "%s", out);
	cr_expect_eq(in_sandbox(T, "box", connect_198_8, NULL), EPERM);
	cr_expect_eq(egretctl(T, out, sizeof(out), "revoke", "198.51.100.8", "tcp/80", NULL), 1,
		     "%s", out);
	cr_expect(strstr(out, "no such rule"), "%s", out);
	cr_expect_eq(egretctl(T, out, sizeof(out), "revoke", "1", NULL), 1, "%s", out);
	cr_expect(strstr(out, "comes from"), "file rules are not revocable live: %s", out);

	cr_assert_eq(events_wait(T->sink_path, is_change, "revoke", 5000, &evs), 0);
	ev = events_find(&evs, is_change, "allow", NULL);
	cr_assert(ev, "no PolicyChange for the allow");
	cr_expect(ev->policy_change->ok);
	cr_expect_str_neq(ev->policy_change->before_hash, ev->policy_change->after_hash);
	cr_expect(strstr(ev->policy_change->actor, "uid 0"), "%s", ev->policy_change->actor);
	cr_expect_str_eq(ev->policy_change->detail, "allow 198.51.100.8 tcp/80");
	events_free(&evs);
}

Test(policy, live_rule_for_one_sandbox)
{
	char out[4096];

	cr_assert_eq(egretctl(T, out, sizeof(out), "allow", "--sandbox", "only", "198.51.100.8",
			      "tcp/80", NULL),
		     0, "%s", out);
	cr_expect_eq(in_sandbox(T, "only", connect_198_8, NULL), 0);
	cr_expect_eq(in_sandbox(T, "box", connect_198_8, NULL), EPERM);
	cr_expect_eq(egretctl(T, out, sizeof(out), "list", "--sandbox", "only", NULL), 0);
	cr_expect(strstr(out, "allow 198.51.100.8 tcp/80"), "%s", out);
}

Test(policy, bad_edits_are_refused)
{
	static const char *const bad[][4] = {
		{ "allow", "198.51.100.300", NULL },
		{ "allow", "198.51.100.8/24", NULL },
		{ "allow", "198.51.100.8", "tcp/70000", NULL },
		{ "allow", "198.51.100.8", "sctp/80", NULL },
		{ "deny", NULL },
	};
	char out[4096];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cr_expect_eq(egretctl(T, out, sizeof(out), bad[i][0], bad[i][1], bad[i][2], NULL),
			     2, "%s %s: %s", bad[i][0], bad[i][1], out);
	}
	cr_expect_eq(in_sandbox(T, "box", connect_198_8, NULL), EPERM);
}

Test(policy, broken_reload_changes_nothing)
{
	char out[4096], before[4096];

	cr_assert_eq(egretctl(T, before, sizeof(before), "list", NULL), 0);
	cr_assert_eq(
		harness_policy(T, "mode enforce\nallow 0.0.0.0/0\nallow 198.51.100.8 tcp/99999\n"),
		0);
	cr_expect_eq(egretctl(T, out, sizeof(out), "reload", NULL), 1, "%s", out);
	cr_expect(strstr(out, "egret.policy:3: bad port '99999'"), "%s", out);
	cr_expect(strstr(out, "nothing changed"), "%s", out);
	cr_expect_eq(in_sandbox(T, "box", connect_198_8, NULL), EPERM, "broken file took effect");
	cr_assert_eq(egretctl(T, out, sizeof(out), "list", NULL), 0);
	cr_expect_str_eq(out, before, "the rule set changed");

	/* and a good reload takes effect at once */
	cr_assert_eq(harness_policy(T, "mode enforce\nallow 198.51.100.8 tcp/80\n"), 0);
	cr_expect_eq(egretctl(T, out, sizeof(out), "reload", NULL), 0, "%s", out);
	cr_expect_eq(in_sandbox(T, "box", connect_198_8, NULL), 0);
	cr_expect_eq(in_sandbox(T, "build-42", connect_198_8, NULL), 0);
}

static bool is_reload_by(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE &&
	       !strcmp(ev->policy_change->action, "reload") &&
	       ev->policy_change->actor_pid == (uint32_t)(uintptr_t)arg;
}

static bool is_reload(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_POLICY_CHANGE &&
	       !strcmp(ev->policy_change->action, "reload") &&
	       strstr(ev->policy_change->actor, (const char *)arg);
}

/* A reload by SIGHUP names the process that sent it, not egretd; one by egretctl reload names
 * egretctl.
 */
Test(policy, sighup_reload_names_the_sender)
{
	char out[4096], want[128];
	const Egret__V1__Event *ev;
	struct events evs;
	int go[2], status;
	pid_t sender;

	cr_assert_eq(pipe(go), 0);
	sender = fork();
	if (sender == 0) {
		char c;

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		prctl(PR_SET_NAME, "hup-sender", 0, 0, 0);
		close(go[1]);
		if (kill(T->egretd, SIGHUP))
			_exit(1);
		read(go[0], &c, 1); /* stay, so egretd can read our /proc/PID/comm */
		_exit(0);
	}
	close(go[0]);
	cr_assert_gt(sender, 0);
	cr_expect_eq(events_wait(T->sink_path, is_reload_by, (void *)(uintptr_t)sender, 5000, &evs),
		     0, "no reload attributed to pid %d", sender);
	close(go[1]);
	waitpid(sender, &status, 0);
	ev = events_find(&evs, is_reload_by, (void *)(uintptr_t)sender, NULL);
	cr_assert(ev);
	snprintf(want, sizeof(want), "SIGHUP from uid 0 pid %d (hup-sender)", sender);
	cr_expect_str_eq(ev->policy_change->actor, want);
	cr_expect_eq(ev->policy_change->actor_uid, 0);
	cr_expect(ev->policy_change->ok);
	events_free(&evs);

	cr_assert_eq(egretctl(T, out, sizeof(out), "reload", NULL), 0, "%s", out);
	cr_assert_eq(events_wait(T->sink_path, is_reload, "(egretctl)", 5000, &evs), 0);
	ev = events_find(&evs, is_reload, "(egretctl)", NULL);
	cr_expect_neq(ev->policy_change->actor_pid, (uint32_t)T->egretd,
		      "egretctl reload attributed to egretd's pid");
	events_free(&evs);
}

static bool is_allow_flow(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->verdict == EGRET__V1__NET_CONNECT__VERDICT__VERDICT_ALLOW &&
	       !strcmp(ev->net_connect->dst_addr, arg);
}

static int udp_twice(void *arg)
{
	int fd = socket(AF_INET, SOCK_DGRAM, 0);
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(5005) };

	inet_pton(AF_INET, "192.0.2.1", &sa.sin_addr);
	for (int i = 0; i < 2; i++) {
		if (sendto(fd, "x", 1, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0)
			return errno;
	}
	close(fd);
	return 0;
}

Test(policy, new_flows_are_events_once)
{
	struct events evs;
	const Egret__V1__Event *ev;
	size_t n;

	cr_assert_eq(in_sandbox(T, "box", udp_twice, NULL), 0);
	cr_assert_eq(events_wait(T->sink_path, is_allow_flow, "192.0.2.1", 5000, &evs), 0);
	usleep(200000);
	events_free(&evs);
	cr_assert_eq(events_read(T->sink_path, &evs), 0);
	ev = events_find(&evs, is_allow_flow, "192.0.2.1", &n);
	cr_expect_eq(n, 1, "two datagrams on one socket to one destination: %zu flow events", n);
	cr_expect_str_eq(ev->net_connect->rule, "allow 192.0.2.0/24");
	cr_expect_eq(ev->net_connect->reason, EGRET__V1__NET_CONNECT__REASON__REASON_ALLOW_RULE);
	cr_expect_eq(ev->net_connect->hook, EGRET__V1__NET_CONNECT__HOOK__HOOK_SENDMSG4);
	events_free(&evs);
}

static int run_as_nobody(void *arg)
{
	char out[1024], *argv[] = { EGRETCTL_BIN, "--control", T->control, "list", NULL };
	int rc;

	if (setgroups(0, NULL) || setgid(65534) || setuid(65534))
		return 99;
	rc = run_cmd(argv, out, sizeof(out));
	return rc == 1 && (strstr(out, "Permission denied") || strstr(out, "not allowed")) ? 0 : 98;
}

Test(policy, control_socket_refuses_others)
{
	char out[4096];

	/* file permissions keep an ordinary user out ... */
	cr_expect_eq(in_sandbox(T, NULL, run_as_nobody, NULL), 0);
	/* ... and SO_PEERCRED does when the socket is opened up by mistake */
	cr_assert_eq(chmod(T->control, 0666), 0);
	cr_assert_eq(chmod(T->tmpdir, 0755), 0);
	cr_expect_eq(in_sandbox(T, NULL, run_as_nobody, NULL), 0);
	/* root inside a sandbox is refused too: egretd refuses a sandboxed peer (a runtime's
	 * privileged sandbox), and egretctl run's sandboxes do not even reach the socket
	 */
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--privileged", "--",
			      EGRETCTL_BIN, "--control", T->control, "allow", "0.0.0.0/0", NULL),
		     1, "%s", out);
	cr_expect(strstr(out, "requests from inside a sandbox are refused"), "%s", out);
	cr_expect_eq(egretctl(T, out, sizeof(out), "run", "--sandbox", "box", "--", EGRETCTL_BIN,
			      "--control", T->control, "allow", "0.0.0.0/0", NULL),
		     1, "%s", out);
	cr_expect(strstr(out, "egretd is not answering"), "%s", out);
	cr_expect_eq(in_sandbox(T, "box", connect_198_8, NULL), EPERM);
}

static bool is_audit(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->verdict == EGRET__V1__NET_CONNECT__VERDICT__VERDICT_AUDIT &&
	       !strcmp(ev->net_connect->dst_addr, "198.51.100.8");
}

Test(policy, audit_mode_passes_and_reports)
{
	char out[4096];
	struct events evs;

	cr_assert_eq(harness_policy(T, "mode audit\nallow 192.0.2.0/24\n"), 0);
	cr_assert_eq(egretctl(T, out, sizeof(out), "reload", NULL), 0, "%s", out);
	cr_expect_eq(in_sandbox(T, "box", connect_198_8, NULL), 0);
	cr_expect_eq(in_sandbox(T, "box", raw_socket, NULL), 0);
	cr_assert_eq(events_wait(T->sink_path, is_audit, NULL, 5000, &evs), 0,
		     "no audit event for the would-be denial");
	cr_expect_eq(events_find(&evs, is_audit, NULL, NULL)->net_connect->reason,
		     EGRET__V1__NET_CONNECT__REASON__REASON_DEFAULT_DENY);
	events_free(&evs);
	/* the metadata endpoint stays shut in audit mode */
	cur = &cases[11];
	cr_expect_eq(in_sandbox(T, "box", run_case, NULL), EPERM);
}

static int connect_192(void *arg)
{
	return tcp_connect("192.0.2.1", 80, AF_INET, 2000);
}

/* A sandbox whose name has rules of its own gets no network until egretd has installed them;
 * one without is registered by the kernel when its cgroup is made, egretd or not.
 */
Test(policy, sandbox_rules_are_in_before_its_network)
{
	char dir[PATH_MAX];

	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	cr_assert_eq(sandbox_path(T, "build-42", dir, sizeof(dir)), 0);
	cr_assert_eq(mkdir(dir, 0755), 0);
	cr_expect_eq(in_sandbox(T, "build-42", connect_192, NULL), EPERM,
		     "a sandbox with rules of its own got network before egretd installed them");
	cr_expect_eq(in_sandbox(T, "plain", connect_192, NULL), 0,
		     "a sandbox without rules of its own waited for egretd");
	cr_assert_eq(harness_start(T, NULL), 0, "%s", harness_log(T));
	cr_expect_eq(in_sandbox(T, "build-42", connect_192, NULL), 0);
}
