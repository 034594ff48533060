/* Packets the socket hooks never judged (issue 16): the egress backstop judges every packet a
 * sandbox's socket sends by its destination as it leaves, after NAT, routing and encapsulation.
 * Each attack runs from a sandbox with its positive control from outside egret's root (the
 * same packet, which must reach the address the test put in its own network namespace, so the
 * case can fail). And the false positive the hooks had: a connected UDP socket's datagram with
 * ancillary data (IP_TOS, IPV6_TCLASS) goes to its connected, allowed peer and must pass. A
 * source route whose first hop is the metadata address is judged by that hop; a datagram whose
 * UDP header lies past 256 bytes of IPv6 options is judged by its real port.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <sys/socket.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"

#define ALLOWED	 "198.51.100.7"
#define ALLOWED6 "2001:db8::7"
#define META	 "169.254.169.254"

static int meta_tcp = -1, meta_udp = -1, allowed_udp = -1, allowed6_udp = -1;

static const char policy[] = "allow " ALLOWED "/32 tcp/80 udp/80 udp/9\n"
			     "allow " ALLOWED6 "/128 udp/9\n";

/* The test's namespace: the allowed addresses and the metadata address on lo, a listener on
 * each, and an nftables DNAT that turns the allowed address's port 80 into the metadata's.
 */
static void setup_dnat(void)
{
	harness_setup(true);
	cr_assert_eq(netns_addr("lo", ALLOWED "/32"), 0);
	cr_assert_eq(netns_addr("lo", ALLOWED6 "/128"), 0);
	cr_assert_eq(netns_addr("lo", META "/32"), 0);
	harness_setup_listen(&meta_tcp, META, 80);
	harness_close_at_teardown(&meta_udp);
	harness_close_at_teardown(&allowed_udp);
	harness_close_at_teardown(&allowed6_udp);
	meta_udp = udp_bind(META, 80);
	allowed_udp = udp_bind(ALLOWED, 9);
	allowed6_udp = udp_bind(ALLOWED6, 9);
	cr_assert(meta_udp >= 0 && allowed_udp >= 0 && allowed6_udp >= 0, "udp listeners");
	cr_assert_eq(netns_run("nft add table ip egret_test && "
			       "nft add chain ip egret_test out "
			       "'{ type nat hook output priority -100; }' && "
			       "nft add rule ip egret_test out ip daddr " ALLOWED
			       " tcp dport 80 dnat to " META ":80 && "
			       "nft add rule ip egret_test out ip daddr " ALLOWED
			       " udp dport 80 dnat to " META ":80"),
		     0, "nft DNAT rules");
	harness_setup_start(policy, NULL);
}

/* Whether the descriptor has something to read (a connection, a datagram) within ms. */
static bool readable(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };

	return poll(&p, 1, ms) == 1;
}

/* Take what came, so the next case starts empty. */
static void drain(int fd, bool listener)
{
	char buf[512];

	while (readable(fd, 0)) {
		if (listener) {
			int c = accept(fd, NULL, NULL);

			if (c >= 0)
				close(c);
		} else if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) < 0) {
			break;
		}
	}
}

static int do_tcp_allowed(void *arg)
{
	(void)arg;
	return tcp_connect(ALLOWED, 80, AF_INET, 2000);
}

static int do_udp_allowed(void *arg)
{
	(void)arg;
	return udp_sendto(ALLOWED, 80, AF_INET);
}

static bool is_skb_meta_deny(const Egret__V1__Event *ev, const void *arg)
{
	const char *proto = arg;

	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->hook == EGRET__V1__NET_CONNECT__HOOK__HOOK_SKB_EGRESS &&
	       ev->net_connect->verdict == EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY &&
	       ev->net_connect->reason == EGRET__V1__NET_CONNECT__REASON__REASON_METADATA &&
	       !strcmp(ev->net_connect->dst_addr, META) &&
	       !strcmp(ev->net_connect->protocol, proto);
}

/* The positive control: the same DNAT'd connect (tcp) or datagram from the host reaches the
 * metadata address, so the sandbox's case can fail. What came is taken.
 */
static void dnat_control(bool tcp)
{
	int err = in_sandbox(T, NULL, tcp ? do_tcp_allowed : do_udp_allowed, NULL);

	cr_assert_eq(err, 0, "control: the DNAT'd %s from the host: %s",
		     tcp ? "connect" : "datagram", strerror(err));
	cr_assert(readable(tcp ? meta_tcp : meta_udp, 1000),
		  "control: the metadata address got no %s", tcp ? "connection" : "datagram");
	drain(tcp ? meta_tcp : meta_udp, tcp);
}

TestSuite(backstop_dnat, .init = setup_dnat, .fini = harness_teardown, .timeout = 60);

/* connect() to an allowed address, which the nat table turns into the metadata address after
 * the connect hook allowed it: the packet is judged where it leaves, and dropped.
 */
Test(backstop_dnat, tcp_dnat_to_metadata_is_dropped)
{
	struct events evs;
	const Egret__V1__Event *ev;
	int err;

	dnat_control(true);

	err = in_sandbox(T, "box", do_tcp_allowed, NULL);
	cr_expect_neq(err, 0, "the sandbox's DNAT'd connect reached the metadata address");
	cr_expect(!readable(meta_tcp, 500), "the metadata listener got the sandbox's connection");
	cr_assert_eq(events_wait(T->sink_path, is_skb_meta_deny, "tcp", 5000, &evs), 0,
		     "no egress-backstop denial for the DNAT'd connect");
	ev = events_find(&evs, is_skb_meta_deny, "tcp", NULL);
	cr_expect_str_eq(ev->sandbox->name, "box");
	cr_expect_eq(ev->net_connect->dst_port, 80);
	events_free(&evs);
}

Test(backstop_dnat, udp_dnat_to_metadata_is_dropped)
{
	struct events evs;
	int err;

	dnat_control(false);

	err = in_sandbox(T, "box", do_udp_allowed, NULL);
	cr_expect(!readable(meta_udp, 500), "the sandbox's DNAT'd datagram reached metadata");
	cr_expect_eq(events_wait(T->sink_path, is_skb_meta_deny, "udp", 5000, &evs), 0,
		     "no egress-backstop denial for the DNAT'd datagram (send said %s)",
		     strerror(err));
	events_free(&evs);
}

static int do_nothing(void *arg)
{
	(void)arg;
	return 0;
}

/* Root in a sandbox may make cgroups inside its own (a delegated subtree, a container's
 * systemd) and send from one: the packet's socket is then in a cgroup no one registered, and
 * the backstop must find the sandbox by walking its ancestry (sandbox_of_skb's slow path, a
 * call of its own since stop 42). Judged as the host's, the DNAT'd datagram would reach the
 * metadata address.
 */
Test(backstop_dnat, a_datagram_from_a_cgroup_nested_in_a_sandbox_is_judged_as_the_sandboxs)
{
	struct events evs;
	const Egret__V1__Event *ev;
	int err;

	dnat_control(false);

	cr_assert_eq(in_sandbox(T, "nest", do_nothing, NULL), 0, "the sandbox nest");
	err = in_sandbox(T, "nest/inner", do_udp_allowed, NULL);
	cr_expect(!readable(meta_udp, 500),
		  "a datagram from a cgroup nested in the sandbox reached metadata");
	cr_assert_eq(events_wait(T->sink_path, is_skb_meta_deny, "udp", 5000, &evs), 0,
		     "no egress-backstop denial for the nested cgroup's datagram (send said %s)",
		     strerror(err));
	ev = events_find(&evs, is_skb_meta_deny, "udp", NULL);
	cr_expect_str_eq(ev->sandbox->name, "nest", "judged as %s", ev->sandbox->name);
	events_free(&evs);
}

/* A connected UDP socket's datagram sent with ancillary data: the kernel runs sendmsg's hook
 * with no address; it goes to the peer connect() allowed.
 */
struct tos_case {
	const char *addr;
	uint16_t port;
	int family;
};

static int send_with_tos(void *arg)
{
	const struct tos_case *c = arg;
	struct sockaddr_storage ss = { 0 };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = "tos", .iov_len = 3 };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	socklen_t len;
	int fd, tos = 0x2, err = 0;

	memset(&u, 0, sizeof(u));
	if (c->family == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		s4->sin_family = AF_INET;
		s4->sin_port = htons(c->port);
		inet_pton(AF_INET, c->addr, &s4->sin_addr);
		len = sizeof(*s4);
	} else {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons(c->port);
		inet_pton(AF_INET6, c->addr, &s6->sin6_addr);
		len = sizeof(*s6);
	}
	fd = socket(c->family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&ss, len)) {
		err = errno;
		goto out;
	}
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = c->family == AF_INET ? IPPROTO_IP : IPPROTO_IPV6;
	cm->cmsg_type = c->family == AF_INET ? IP_TOS : IPV6_TCLASS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &tos, sizeof(tos));
	/* twice: the first datagram of a flow and a later one take different paths */
	for (int i = 0; i < 2 && !err; i++) {
		if (sendmsg(fd, &msg, 0) != 3)
			err = errno;
	}
out:
	close(fd);
	return err;
}

Test(backstop_dnat, connected_udp_with_ip_tos_reaches_its_allowed_peer)
{
	struct tos_case c4 = { ALLOWED, 9, AF_INET }, c6 = { ALLOWED6, 9, AF_INET6 };
	int err;

	err = in_sandbox(T, "box", send_with_tos, &c4);
	cr_expect_eq(err, 0, "sendmsg with IP_TOS on a connected, allowed UDP socket: %s",
		     strerror(err));
	cr_expect(readable(allowed_udp, 1000), "the IP_TOS datagram did not arrive");
	err = in_sandbox(T, "box", send_with_tos, &c6);
	cr_expect_eq(err, 0, "sendmsg with IPV6_TCLASS on a connected, allowed UDP socket: %s",
		     strerror(err));
	cr_expect(readable(allowed6_udp, 1000), "the IPV6_TCLASS datagram did not arrive");
}

/* A connected UDP socket to a port the policy does not allow cannot send anything, with or
 * without ancillary data: its connect is refused.
 */
Test(backstop_dnat, connected_udp_to_a_denied_port_stays_denied)
{
	struct tos_case c = { ALLOWED, 10, AF_INET };
	int err = in_sandbox(T, "box", send_with_tos, &c);

	cr_expect_eq(err, EPERM, "connect to a port no rule allows: got %s",
		     err ? strerror(err) : "success");
}

/* A DNS socket connected to a server (steered to egret's resolver at connect) sends its query
 * with IP_TOS: it reaches the resolver, which answers.
 */
static int dns_with_tos(void *arg)
{
	static const unsigned char query[] = { 0x12, 0x34, 1,	0,   0,	  1,   0,   0,	 0,   0,
					       0,    0,	   7,	'b', 'l', 'o', 'c', 'k', 'e', 'd',
					       4,    't',  'e', 's', 't', 0,   0,   1,	 0,   1 };
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(53) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;
	struct iovec iov = { .iov_base = (void *)query, .iov_len = sizeof(query) };
	struct msghdr msg = { .msg_iov = &iov,
			      .msg_iovlen = 1,
			      .msg_control = u.buf,
			      .msg_controllen = sizeof(u.buf) };
	struct cmsghdr *cm;
	unsigned char reply[512];
	int fd, tos = 0x2, err = 0;

	(void)arg;
	memset(&u, 0, sizeof(u));
	inet_pton(AF_INET, "203.0.113.53", &sa.sin_addr);
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = errno;
		goto out;
	}
	cm = CMSG_FIRSTHDR(&msg);
	cm->cmsg_level = IPPROTO_IP;
	cm->cmsg_type = IP_TOS;
	cm->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(cm), &tos, sizeof(tos));
	if (sendmsg(fd, &msg, 0) < 0) {
		err = errno;
		goto out;
	}
	if (!readable(fd, 3000) || recv(fd, reply, sizeof(reply), 0) < 12 || reply[0] != 0x12 ||
	    reply[1] != 0x34)
		err = ETIMEDOUT;
out:
	close(fd);
	return err;
}

Test(backstop_dnat, dns_query_with_ip_tos_reaches_egrets_resolver)
{
	int err = in_sandbox(T, "box", dns_with_tos, NULL);

	cr_expect_eq(err, 0, "a DNS query sent with IP_TOS on a connected socket: %s",
		     strerror(err));
}

/* A datagram to port 9 of `to` whose shape a socket option sets. */
struct opt_send {
	int family, level, name; /* the socket option that shapes the datagram */
	const void *opt;
	socklen_t len;
	const char *to; /* port 9 there */
};

/* A datagram sent with a socket option set: 0 or the errno. */
static int send_with_option(void *arg)
{
	const struct opt_send *o = arg;
	struct sockaddr_storage ss = { .ss_family = (sa_family_t)o->family };
	struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
	struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
	int fd = socket(o->family, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;
	socklen_t len = o->family == AF_INET ? sizeof(*s4) : sizeof(*s6);

	if (o->family == AF_INET) {
		s4->sin_port = htons(9);
		inet_pton(AF_INET, o->to, &s4->sin_addr);
	} else {
		s6->sin6_port = htons(9);
		inet_pton(AF_INET6, o->to, &s6->sin6_addr);
	}
	if (fd < 0)
		return errno;
	if (setsockopt(fd, o->level, o->name, o->opt, o->len) ||
	    sendto(fd, "opt", 3, 0, (struct sockaddr *)&ss, len) != 3)
		err = errno;
	close(fd);
	return err;
}

/* A datagram to ALLOWED:9 with an IPv4 loose source route whose first hop is the metadata
 * address: the packet leaves for 169.254.169.254 (the route's first hop is its destination on
 * the wire) and carries ALLOWED as the final one. sendmsg's hook saw only ALLOWED:9; the
 * backstop judges the header's destination, and a packet with options that route is never
 * passed as its socket's known flow. (This kernel drops the packet where it arrives, source
 * routing being off: the control watches it leave, on the namespace's loopback.) The option:
 * NOP, then LSRR (131), length 7, pointer 4, the first hop (META); the kernel puts the final
 * destination (sendto's) in the slot it keeps at the end.
 */
static const unsigned char lsrr_via_meta[8] = { 1, 131, 7, 4, 169, 254, 169, 254 };
static const struct opt_send source_routed = {
	AF_INET, IPPROTO_IP, IP_OPTIONS, lsrr_via_meta, sizeof(lsrr_via_meta), ALLOWED
};

static bool is_skb_meta_udp_deny(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return is_skb_meta_deny(ev, "udp") && ev->net_connect->dst_port == 9;
}

/* An AF_PACKET socket on the namespace's loopback: what leaves for the metadata address. */
static int sniff_open(void)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET,
				   .sll_protocol = htons(ETH_P_IP),
				   .sll_ifindex = 1 };
	int fd = socket(AF_PACKET, SOCK_DGRAM | SOCK_CLOEXEC, htons(ETH_P_IP));

	if (fd >= 0 && bind(fd, (struct sockaddr *)&sll, sizeof(sll))) {
		close(fd);
		return -1;
	}
	return fd;
}

/* Whether a UDP packet to META:9 went by within ms (its options skipped by the header length). */
static bool sniffed_to_meta(int fd, int ms)
{
	unsigned char pkt[256];
	struct in_addr meta;

	inet_pton(AF_INET, META, &meta);
	while (readable(fd, ms)) {
		ssize_t n = recv(fd, pkt, sizeof(pkt), 0);
		size_t ihl;

		if (n < 20)
			continue;
		ihl = (size_t)(pkt[0] & 0xf) * 4;
		if (pkt[9] == IPPROTO_UDP && !memcmp(&pkt[16], &meta, 4) && (size_t)n >= ihl + 4 &&
		    pkt[ihl + 2] == 0 && pkt[ihl + 3] == 9)
			return true;
	}
	return false;
}

Test(backstop_dnat, a_source_route_through_metadata_is_dropped)
{
	struct events evs;
	int err, sniff = sniff_open();

	harness_own_fd(sniff);
	cr_assert(sniff >= 0, "AF_PACKET socket on lo: %s", strerror(errno));
	err = in_sandbox(T, NULL, send_with_option, (void *)&source_routed);
	cr_assert_eq(err, 0, "control: the source-routed datagram from the host: %s",
		     strerror(err));
	cr_assert(sniffed_to_meta(sniff, 1000),
		  "control: no packet left for the metadata address (the route's first hop)");

	err = in_sandbox(T, "box", send_with_option, (void *)&source_routed);
	cr_expect(!sniffed_to_meta(sniff, 500),
		  "the sandbox's datagram left for the metadata address (sendto: %s)",
		  strerror(err));
	cr_assert_eq(events_wait(T->sink_path, is_skb_meta_udp_deny, NULL, 5000, &evs), 0,
		     "no egress-backstop denial of the source-routed datagram's first hop");
	events_free(&evs);
}

/* An IPv6 datagram whose UDP header lies past the first 256 bytes (a 248-byte destination
 * options header: one unknown option the receiver skips) is judged by its real port, read
 * with the helper instead of in place: to an allowed port it arrives.
 */
static const unsigned char long_dstopts[248] = { 0, 30, 0x1e, 244 }; /* (30 + 1) * 8 bytes;
									 * option 0x1e: skip */
static const struct opt_send long_options = { AF_INET6,	    IPPROTO_IPV6,	  IPV6_DSTOPTS,
					      long_dstopts, sizeof(long_dstopts), ALLOWED6 };

Test(backstop_dnat, an_ipv6_datagram_with_long_options_reaches_its_allowed_port)
{
	int err;

	drain(allowed6_udp, false);
	err = in_sandbox(T, NULL, send_with_option, (void *)&long_options);
	cr_assert_eq(err, 0, "control: from the host: %s", strerror(err));
	cr_assert(readable(allowed6_udp, 1000), "control: the datagram did not arrive");
	drain(allowed6_udp, false);

	err = in_sandbox(T, "box", send_with_option, (void *)&long_options);
	cr_expect_eq(err, 0, "sendto from the sandbox: %s", strerror(err));
	cr_expect(readable(allowed6_udp, 1000),
		  "the sandbox's datagram with 248 bytes of options did not arrive");
}
