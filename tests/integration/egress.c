/* The built-in hard-deny set: from a sandbox, TCP connect and UDP send to the cloud metadata
 * endpoints and link-local ranges fail with EPERM in every encoding, while the same calls from
 * outside egret's root cgroup reach the listeners the test put on those addresses inside its
 * own network namespace (the positive control that makes each case able to fail).
 */
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>
#include <criterion/parameterized.h>

#include "harness.h"

#define PORT 80

/* addresses put on lo inside the test namespace, with a TCP and a UDP listener each */
static const char *const hard_deny_addrs[] = {
	"169.254.169.254/32", "169.254.1.1/32",		"100.100.100.200/32",
	"192.0.0.192/32",     "168.63.129.16/32",	"fd00:ec2::254/128",
	"fe80::1/64",	      "64:ff9b::a9fe:a9fe/128", "::a9fe:a9fe/128",
};

struct target {
	const char *label;
	const char *addr; /* as the client names it */
	int family;
};

static const struct target targets[] = {
	{ "aws/gcp metadata", "169.254.169.254", AF_INET },
	{ "metadata as one decimal number", "2852039166", AF_INET },
	{ "metadata in hex", "0xa9fea9fe", AF_INET },
	{ "metadata in octal", "0251.0376.0251.0376", AF_INET },
	{ "metadata in a.b.c form", "169.254.43518", AF_INET },
	{ "metadata IPv4-mapped on an IPv6 socket", "::ffff:169.254.169.254", AF_INET6 },
	{ "metadata IPv4-mapped, hex words", "::ffff:a9fe:a9fe", AF_INET6 },
	{ "rest of 169.254.0.0/16", "169.254.1.1", AF_INET },
	{ "alibaba metadata", "100.100.100.200", AF_INET },
	{ "oracle metadata", "192.0.0.192", AF_INET },
	{ "azure wireserver", "168.63.129.16", AF_INET },
	{ "aws metadata over IPv6", "fd00:ec2::254", AF_INET6 },
	{ "IPv6 link-local", "fe80::1%lo", AF_INET6 },
	{ "metadata behind the NAT64 prefix", "64:ff9b::a9fe:a9fe", AF_INET6 },
	{ "metadata IPv4-compatible", "::a9fe:a9fe", AF_INET6 },
};

static int listeners[64];
static int nlisteners;

static void add_listener(int fd)
{
	cr_assert(fd >= 0, "listener: %s", strerror(-fd));
	harness_close_at_teardown(&listeners[nlisteners]);
	listeners[nlisteners++] = fd;
}

static void setup(void)
{
	char addr[64];

	harness_setup(true);
	for (size_t i = 0; i < sizeof(hard_deny_addrs) / sizeof(hard_deny_addrs[0]); i++) {
		cr_assert_eq(netns_addr("lo", hard_deny_addrs[i]), 0);
		snprintf(addr, sizeof(addr), "%s", hard_deny_addrs[i]);
		*strchr(addr, '/') = '\0';
		if (strcmp(addr, "fe80::1") == 0)
			strcat(addr, "%lo");
		add_listener(tcp_listen(addr, PORT));
		add_listener(udp_bind(addr, PORT));
	}
	harness_setup_start(NULL, NULL);
}

static const struct target *cur;

static int do_tcp(void *arg)
{
	return tcp_connect(cur->addr, PORT, cur->family, 2000);
}

static int do_udp(void *arg)
{
	return udp_sendto(cur->addr, PORT, cur->family);
}

static int do_udp_connected(void *arg)
{
	return udp_connect_send(cur->addr, PORT, cur->family);
}

TestSuite(hard_deny, .init = setup, .fini = harness_teardown, .timeout = 60);

Test(hard_deny, every_target_every_call)
{
	static int (*const calls[])(void *) = { do_tcp, do_udp, do_udp_connected };
	static const char *const call_names[] = { "tcp connect", "udp sendto", "udp connect+send" };

	for (size_t i = 0; i < sizeof(targets) / sizeof(targets[0]); i++) {
		cur = &targets[i];
		for (size_t c = 0; c < 3; c++) {
			int outside = in_sandbox(T, NULL, calls[c], NULL);
			int inside = in_sandbox(T, "box", calls[c], NULL);

			cr_expect_eq(outside, 0, "%s to %s (%s) from outside the sandbox: %s",
				     call_names[c], cur->addr, cur->label, strerror(outside));
			cr_expect_eq(inside, EPERM, "%s to %s (%s) from a sandbox: got %s",
				     call_names[c], cur->addr, cur->label,
				     inside ? strerror(inside) : "success");
		}
	}
}

static bool is_metadata_deny(const Egret__V1__Event *ev, const void *arg)
{
	const char *addr = arg;

	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->verdict == EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY &&
	       ev->net_connect->reason == EGRET__V1__NET_CONNECT__REASON__REASON_METADATA &&
	       strcmp(ev->net_connect->dst_addr, addr) == 0;
}

Test(hard_deny, denials_are_events)
{
	struct events evs;
	const Egret__V1__Event *ev;

	cur = &targets[5]; /* the IPv4-mapped form */
	cr_assert_eq(in_sandbox(T, "box", do_tcp, NULL), EPERM);
	cr_assert_eq(events_wait(T->sink_path, is_metadata_deny, "169.254.169.254", 5000, &evs), 0,
		     "no deny event for 169.254.169.254");
	ev = events_find(&evs, is_metadata_deny, "169.254.169.254", NULL);
	cr_expect_str_eq(ev->sandbox->name, "box");
	cr_expect_neq(ev->sandbox->cgroup_id, 0);
	cr_expect_neq(ev->process->pid, 0);
	cr_expect_str_eq(ev->process->comm, "egret_integrati");
	cr_expect_eq(ev->net_connect->dst_port, PORT);
	cr_expect_str_eq(ev->net_connect->protocol, "tcp");
	cr_expect(ev->net_connect->v4_mapped);
	cr_expect_eq(ev->net_connect->hook, EGRET__V1__NET_CONNECT__HOOK__HOOK_CONNECT6);
	cr_expect_eq(ev->class_uid, 4001);
	cr_expect_eq(ev->activity_id, 5);
	events_free(&evs);
}
