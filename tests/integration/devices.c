/* Sandboxes with their own network device (issue 16): a container's veth, a VM's tap. Their
 * packets reach the host through the host side of the device, where egret's tc programs judge
 * every one of them, however it was made: a process outside every egret cgroup (what a gVisor
 * sentry or a VMM is), a hand-made packet a tun device forwards, a vxlan's encapsulation, a
 * frame written to a tap. Each case has its positive control (the same packet before egret
 * judges the device, or to an allowed destination), so each can fail.
 *
 * The topology, all in namespaces the test makes: egretd in the test's namespace T, which
 * routes; the sandbox's namespace S behind veth vh0 (T, 10.200.0.1) - vs0 (S, 10.200.0.2); a
 * remote namespace R behind tr0 - rt0 holding 203.0.113.9 and 169.254.169.254, with listeners
 * the test makes there.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if.h>
#include <linux/if_tun.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "cgroup.h"
#include "harness.h"
#include "util.h"

#define REMOTE	     "203.0.113.9"
#define META	     "169.254.169.254"
#define UPSTREAM     "192.0.2.53"
#define ALLOWED_PORT 7000
#define DENIED_PORT  7001

static char ns_s[64], ns_r[64], ctr[PATH_MAX + 16];
static pid_t dnsmasq;

static void netns_gone(void *arg)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "ip netns del %s 2>/dev/null", (const char *)arg);
	netns_run(cmd);
}

static int ns_open(const char *name)
{
	char path[128];

	snprintf(path, sizeof(path), "/run/netns/%s", name);
	return open(path, O_RDONLY | O_CLOEXEC);
}

/* A UDP socket bound in namespace ns (the test process comes back to its own). */
static int udp_bind_in(const char *ns, const char *addr, uint16_t port)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), fd = ns_open(ns), s = -1;

	if (self >= 0 && fd >= 0 && setns(fd, CLONE_NEWNET) == 0) {
		s = udp_bind(addr, port);
		if (setns(self, CLONE_NEWNET))
			cr_assert_fail("cannot come back to the test's namespace");
	}
	if (fd >= 0)
		close(fd);
	if (self >= 0)
		close(self);
	return s;
}

/* fn(arg) in a child in namespace ns, in cgroup (NULL: the test's own): its result. */
static int run_in(const char *ns, const char *cgroup, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid == 0) {
		int fd = ns_open(ns);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cgroup && cgroup__join(cgroup, getpid()))
			_exit(250);
		if (fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(251);
		_exit(fn(arg));
	}
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct dst {
	const char *addr;
	uint16_t port;
};

static int send_udp(void *arg)
{
	const struct dst *d = arg;

	return udp_sendto(d->addr, d->port, strchr(d->addr, ':') ? AF_INET6 : AF_INET);
}

/* Whether a datagram came to fd within ms (and take it). */
static bool got(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	char buf[2048];

	if (poll(&p, 1, ms) != 1)
		return false;
	return recv(fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0;
}

static void ip(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void ip(const char *fmt, ...)
{
	char cmd[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	cr_assert_eq(netns_run(cmd), 0, "%s", cmd);
}

static void start_dnsmasq(void)
{
	dnsmasq = fork();
	cr_assert(dnsmasq >= 0);
	if (dnsmasq == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		execlp("dnsmasq", "dnsmasq", "-k", "--conf-file=/dev/null", "--no-resolv",
		       "--no-hosts", "--listen-address=" UPSTREAM, "--bind-interfaces", "--port=53",
		       "--user=root", "--pid-file=", "--log-facility=/dev/null",
		       "--address=/allowed.test/203.0.113.9", NULL);
		_exit(127);
	}
}

static void setup(void)
{
	harness_setup(true);
	cr_assert_eq(harness_nest_root(T), 0);
	snprintf(ns_s, sizeof(ns_s), "egret-%d-s", (int)getpid());
	snprintf(ns_r, sizeof(ns_r), "egret-%d-r", (int)getpid());
	harness_at_teardown(netns_gone, ns_s);
	harness_at_teardown(netns_gone, ns_r);
	harness_kill_at_teardown(&dnsmasq);
	ip("ip netns add %s && ip netns add %s", ns_s, ns_r);
	/* T routes, between S and R, and from a tap */
	ip("sysctl -qw net.ipv4.ip_forward=1 net.ipv4.conf.all.rp_filter=0 "
	   "net.ipv4.conf.default.rp_filter=0");
	ip("ip link add vh0 type veth peer name vs0 netns %s", ns_s);
	ip("ip addr add 10.200.0.1/24 dev vh0 && ip link set vh0 up");
	ip("ip -n %s link set lo up && ip -n %s addr add 10.200.0.2/24 dev vs0 && "
	   "ip -n %s link set vs0 up && ip -n %s route add default via 10.200.0.1",
	   ns_s, ns_s, ns_s, ns_s);
	ip("ip link add tr0 type veth peer name rt0 netns %s", ns_r);
	ip("ip addr add 203.0.113.1/24 dev tr0 && ip link set tr0 up");
	ip("ip -n %s link set lo up && ip -n %s addr add " REMOTE "/24 dev rt0 && "
	   "ip -n %s link set rt0 up && ip -n %s route add default via 203.0.113.1 && "
	   "ip -n %s addr add " META "/32 dev lo",
	   ns_r, ns_r, ns_r, ns_r, ns_r);
	ip("ip route add " META "/32 via " REMOTE);
	ip("ip route add 10.99.0.0/24 via 10.200.0.2");
	cr_assert_eq(netns_addr("lo", UPSTREAM "/32"), 0);
	start_dnsmasq();
	/* the container: a cgroup beside egret's root, registered with S */
	snprintf(ctr, sizeof(ctr), "%s/ctr1", T->attach);
	cr_assert_eq(mkdir(ctr, 0755), 0);
}

static void start(const char *policy)
{
	char up[64];
	const char *extra[] = { "--upstream-dns", up, NULL };

	snprintf(up, sizeof(up), UPSTREAM ":53");
	harness_setup_start(policy, extra);
}

/* The container's init: a process in its cgroup and namespace, as long as the test runs. */
static pid_t ctr_init;

static void start_ctr_init(void)
{
	harness_kill_at_teardown(&ctr_init);
	ctr_init = fork();
	cr_assert(ctr_init >= 0);
	if (ctr_init == 0) {
		int fd = ns_open(ns_s);

		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (cgroup__join(ctr, getpid()) || fd < 0 || setns(fd, CLONE_NEWNET))
			_exit(1);
		for (;;)
			pause();
	}
}

static void register_ctr(void)
{
	char out[4096], netns[128];

	snprintf(netns, sizeof(netns), "/run/netns/%s", ns_s);
	cr_assert_eq(
		egretctl(T, out, sizeof(out), "register", "--netns", netns, ctr, "name=ctr1", NULL),
		0, "register: %s", out);
}

/* egretctl status says the device is in force */
static bool device_in_force(const char *dev)
{
	char out[16384], want[64];

	snprintf(want, sizeof(want), "  %s (", dev);
	if (egretctl(T, out, sizeof(out), "status", NULL))
		return false;
	return strstr(out, want) && strstr(strstr(out, want), "in force") &&
	       !strstr(strstr(out, want), "NOT in force");
}

static bool device_deny(const Egret__V1__Event *ev, const void *arg)
{
	const struct dst *d = arg;

	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->hook == EGRET__V1__NET_CONNECT__HOOK__HOOK_DEVICE &&
	       ev->net_connect->verdict == EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY &&
	       !strcmp(ev->net_connect->dst_addr, d->addr) && ev->net_connect->dst_port == d->port;
}

TestSuite(devices, .init = setup, .fini = harness_teardown, .timeout = 120);

static const char ctr_policy[] = "mode enforce\n"
				 "sandbox ctr1 {\n"
				 "  allow " REMOTE "/32 udp/7000\n"
				 "}\n";

/* A process in the container's namespace that is in no egret cgroup (what a gVisor sentry is,
 * or anything a runtime runs there): before registration its packets go anywhere; after, the
 * container's policy holds at vh0.
 */
Test(devices, a_veth_sandbox_is_judged_at_its_host_side)
{
	struct dst allowed = { REMOTE, ALLOWED_PORT }, denied = { REMOTE, DENIED_PORT },
		   meta = { META, 80 };
	int r_ok = udp_bind_in(ns_r, REMOTE, ALLOWED_PORT),
	    r_no = udp_bind_in(ns_r, REMOTE, DENIED_PORT), r_meta = udp_bind_in(ns_r, META, 80);
	struct events evs;
	const Egret__V1__Event *ev;
	char status[16384], *dns;

	harness_own_fd(r_ok);
	harness_own_fd(r_no);
	harness_own_fd(r_meta);
	cr_assert(r_ok >= 0 && r_no >= 0 && r_meta >= 0, "listeners in R");
	start(ctr_policy);
	/* control: nothing judges vh0 yet */
	cr_assert_eq(run_in(ns_s, NULL, send_udp, &denied), 0);
	cr_assert(got(r_no, 2000), "control: S's datagram did not reach R");
	cr_assert_eq(run_in(ns_s, NULL, send_udp, &meta), 0);
	cr_assert(got(r_meta, 2000), "control: S's datagram did not reach R's metadata address");

	register_ctr();
	cr_assert(device_in_force("vh0"), "vh0 is not in force after the registration");
	/* the container's DNS goes to egret's resolver on vh0's own address, a port of its own */
	cr_assert_eq(egretctl(T, status, sizeof(status), "status", NULL), 0, "%s", status);
	dns = strstr(status, "DNS to 10.200.0.1:");
	cr_expect(dns && dns[18] >= '1' && dns[18] <= '9', "%s", status);
	cr_expect_eq(run_in(ns_s, NULL, send_udp, &allowed), 0);
	cr_expect(got(r_ok, 2000), "an allowed datagram did not pass vh0");
	cr_expect_eq(run_in(ns_s, NULL, send_udp, &denied), 0);
	cr_expect(!got(r_no, 1000), "a denied datagram passed vh0");
	cr_expect_eq(run_in(ns_s, NULL, send_udp, &meta), 0);
	cr_expect(!got(r_meta, 1000), "a datagram to the metadata address passed vh0");
	cr_assert_eq(events_wait(T->sink_path, device_deny, &denied, 5000, &evs), 0,
		     "no device denial for " REMOTE ":7001");
	ev = events_find(&evs, device_deny, &denied, NULL);
	cr_expect_str_eq(ev->sandbox->name, "ctr1");
	cr_expect_str_eq(ev->net_connect->interface, "vh0");
	cr_expect_str_eq(ev->net_connect->src_addr, "10.200.0.2");
	cr_expect_eq(ev->net_connect->reason, EGRET__V1__NET_CONNECT__REASON__REASON_DEFAULT_DENY);
	events_free(&evs);
	cr_expect_eq(events_wait(T->sink_path, device_deny, &meta, 5000, &evs), 0,
		     "no device denial for the metadata address");
	ev = events_find(&evs, device_deny, &meta, NULL);
	if (ev)
		cr_expect_eq(ev->net_connect->reason,
			     EGRET__V1__NET_CONNECT__REASON__REASON_METADATA);
	events_free(&evs);
}

static int send_udp_times(void *arg)
{
	const struct dst *d = arg;

	int sent = 0;

	/* over the budget the cgroup hook drops: sendto fails (EPERM) */
	for (int i = 0; i < 12; i++) {
		sent += udp_sendto(d->addr, d->port, AF_INET) == 0;
		usleep(20000);
	}
	return sent ? 0 : 1;
}

/* A container's socket traffic is counted once against its egress budget: at its sockets
 * (cgroup_skb), not again at the veth to its namespace. Under 'budget egress-total 290B', ten
 * of twelve 29-byte datagrams arrive (counted twice, five would).
 */
Test(devices, a_containers_veth_does_not_count_its_sockets_twice)
{
	static const char policy[] = "mode enforce\n"
				     "sandbox ctr1 {\n"
				     "  allow " REMOTE "/32 udp/7000\n"
				     "  budget egress-total 290B\n"
				     "}\n";
	struct dst allowed = { REMOTE, ALLOWED_PORT };
	int r_ok = udp_bind_in(ns_r, REMOTE, ALLOWED_PORT), arrived = 0;

	harness_own_fd(r_ok);
	cr_assert(r_ok >= 0, "listener in R");
	start(policy);
	register_ctr();
	cr_assert(device_in_force("vh0"), "vh0 is not in force after the registration");
	cr_assert_eq(run_in(ns_s, ctr, send_udp_times, &allowed), 0);
	while (got(r_ok, 1000))
		arrived++;
	cr_expect_eq(arrived, 10, "%d of the container's 12 datagrams arrived under its budget",
		     arrived);
}

/* ---- packets no socket of the sandbox sent ------------------------------------------------ */

static uint16_t ip_csum(const void *data, size_t len)
{
	const uint8_t *p = data;
	uint32_t sum = 0;

	for (size_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	if (len & 1)
		sum += (uint32_t)p[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return htons((uint16_t)~sum);
}

/* An IPv4 UDP datagram from src:sport to dst:dport carrying payload (no UDP checksum). */
static size_t udp4(uint8_t *buf, const char *src, uint16_t sport, const char *dst, uint16_t dport,
		   const void *payload, size_t plen)
{
	uint16_t total = (uint16_t)(20 + 8 + plen), ulen = (uint16_t)(8 + plen), csum;

	memset(buf, 0, 28);
	buf[0] = 0x45;
	buf[2] = (uint8_t)(total >> 8);
	buf[3] = (uint8_t)total;
	buf[5] = 0x2a; /* id */
	buf[8] = 64;   /* ttl */
	buf[9] = IPPROTO_UDP;
	inet_pton(AF_INET, src, buf + 12);
	inet_pton(AF_INET, dst, buf + 16);
	csum = ip_csum(buf, 20);
	memcpy(buf + 10, &csum, 2);
	buf[20] = (uint8_t)(sport >> 8);
	buf[21] = (uint8_t)sport;
	buf[22] = (uint8_t)(dport >> 8);
	buf[23] = (uint8_t)dport;
	buf[24] = (uint8_t)(ulen >> 8);
	buf[25] = (uint8_t)ulen;
	memcpy(buf + 28, payload, plen);
	return total;
}

/* An fd of the tun or tap device name (in the caller's namespace). */
static int tun_open(const char *name, short flags)
{
	struct ifreq ifr = { 0 };
	int fd = open("/dev/net/tun", O_RDWR | O_CLOEXEC);

	if (fd < 0)
		return -errno;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	ifr.ifr_flags = (short)(flags | IFF_NO_PI);
	if (ioctl(fd, TUNSETIFF, &ifr)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* In S: a hand-made datagram from 10.99.0.5 written to tun0, which S forwards out of vs0. */
static int tun_inject(void *arg)
{
	const struct dst *d = arg;
	uint8_t pkt[128];
	size_t len = udp4(pkt, "10.99.0.5", 5555, d->addr, d->port, "tun", 3);
	int fd = tun_open("tun0", IFF_TUN);

	if (fd < 0)
		return -fd;
	if (write(fd, pkt, len) != (ssize_t)len)
		return errno;
	usleep(200 * 1000); /* the device goes with the fd: let the packet leave first */
	close(fd);
	return 0;
}

Test(devices, a_packet_a_tun_device_forwards_is_judged)
{
	struct dst allowed = { REMOTE, ALLOWED_PORT }, denied = { REMOTE, DENIED_PORT };
	int r_ok = udp_bind_in(ns_r, REMOTE, ALLOWED_PORT),
	    r_no = udp_bind_in(ns_r, REMOTE, DENIED_PORT);

	harness_own_fd(r_ok);
	harness_own_fd(r_no);
	cr_assert(r_ok >= 0 && r_no >= 0, "listeners in R");
	ip("ip -n %s tuntap add tun0 mode tun && ip -n %s addr add 10.99.0.1/24 dev tun0 && "
	   "ip -n %s link set tun0 up && ip netns exec %s sysctl -qw net.ipv4.ip_forward=1 "
	   "net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.tun0.rp_filter=0",
	   ns_s, ns_s, ns_s, ns_s);
	start(ctr_policy);
	cr_assert_eq(run_in(ns_s, NULL, tun_inject, &denied), 0);
	cr_assert(got(r_no, 2000), "control: the forwarded packet did not reach R");

	register_ctr();
	cr_assert(device_in_force("vh0"));
	cr_expect_eq(run_in(ns_s, NULL, tun_inject, &allowed), 0);
	cr_expect(got(r_ok, 2000), "a forwarded packet to an allowed destination was dropped");
	cr_expect_eq(run_in(ns_s, NULL, tun_inject, &denied), 0);
	cr_expect(!got(r_no, 1000), "a forwarded packet to a denied destination passed vh0");
}

/* A vxlan device in the container's namespace wraps an allowed datagram into one to a denied
 * remote: the kernel's socket sends it, not the container's.
 */
static int send_inner(void *arg)
{
	struct dst inner = { "10.98.0.2", ALLOWED_PORT };

	(void)arg;
	return send_udp(&inner);
}

static bool vxlan_deny(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->verdict == EGRET__V1__NET_CONNECT__VERDICT__VERDICT_DENY &&
	       !strcmp(ev->net_connect->dst_addr, REMOTE) && ev->net_connect->dst_port == 4789;
}

Test(devices, a_vxlan_to_a_denied_remote_is_judged)
{
	int r_vx = udp_bind_in(ns_r, REMOTE, 4789), err;
	struct events evs;
	const Egret__V1__Event *ev;

	harness_own_fd(r_vx);
	cr_assert(r_vx >= 0, "listener in R");
	ip("ip -n %s link add vx0 type vxlan id 42 remote " REMOTE " dstport 4789 dev vs0 && "
	   "ip netns exec %s sysctl -qw net.ipv6.conf.vx0.disable_ipv6=1 && "
	   "ip -n %s addr add 10.98.0.1/24 dev vx0 && ip -n %s link set vx0 up && "
	   "ip -n %s neigh add 10.98.0.2 lladdr 02:00:00:00:00:02 dev vx0",
	   ns_s, ns_s, ns_s, ns_s, ns_s);
	start("mode enforce\n"
	      "sandbox ctr1 {\n"
	      "  allow 10.98.0.0/24 udp/7000\n"
	      "}\n");
	cr_assert_eq(run_in(ns_s, NULL, send_inner, NULL), 0);
	cr_assert(got(r_vx, 2000), "control: the vxlan packet did not reach R");

	while (got(r_vx, 200))
		; /* anything else vx0 sent */
	register_ctr();
	cr_assert(device_in_force("vh0"));
	err = run_in(ns_s, ctr, send_inner, NULL);
	cr_expect_eq(err, 0, "the container's datagram to the allowed inner address: %s",
		     strerror(err));
	cr_expect(!got(r_vx, 1000), "the vxlan packet to a denied remote left");
	cr_assert_eq(events_wait(T->sink_path, vxlan_deny, NULL, 5000, &evs), 0,
		     "no denial of the vxlan packet");
	ev = events_find(&evs, vxlan_deny, NULL, NULL);
	/* which hook: the cgroup's sees only what the container's own sockets send */
	cr_expect_eq(ev->net_connect->hook, EGRET__V1__NET_CONNECT__HOOK__HOOK_DEVICE,
		     "the vxlan packet was stopped by hook %d", ev->net_connect->hook);
	events_free(&evs);
}

/* ---- a VM's tap, named by the policy ------------------------------------------------------ */

static const char vm_policy[] = "mode enforce\n"
				"sandbox vm1 {\n"
				"  interface tap0\n"
				"  allow " REMOTE "/32 udp/7000\n"
				"  allow domain allowed.test\n"
				"}\n";

static const uint8_t vm_mac[6] = { 0x02, 0, 0, 0, 0, 0x02 };

/* The taps made: tapN's fd, its Ethernet address (frames from its VM go there), its VM's
 * address.
 */
static struct tap {
	int fd;
	uint8_t mac[6];
	char vm[16];
} taps[2];

static const struct tap *tap_of(int fd)
{
	for (size_t i = 0; i < sizeof(taps) / sizeof(taps[0]); i++) {
		if (taps[i].vm[0] && taps[i].fd == fd)
			return &taps[i];
	}
	cr_assert_fail("fd %d is no tap of the test's", fd);
	return NULL;
}

/* tapN in T with 10.20(1+N).0.1, its VM at 10.20(1+N).0.2 (its address known: no ARP), the
 * sandbox's cgroup made (the VMM would run there); the fd the VM's frames are written to.
 */
static int tap_make(int n, const char *sandbox)
{
	struct tap *t = &taps[n];
	char path[PATH_MAX];
	struct ifreq ifr = { 0 };
	int s;

	ip("ip tuntap add tap%d mode tap && ip addr add 10.%d.0.1/24 dev tap%d && "
	   "ip link set tap%d up && ip neigh add 10.%d.0.2 lladdr 02:00:00:00:00:02 dev tap%d "
	   "nud permanent",
	   n, 201 + n, n, n, 201 + n, n);
	cr_assert_eq(sandbox_path(T, sandbox, path, sizeof(path)), 0);
	cr_assert_eq(mkdir_p(path, 0755), 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "tap%d", n);
	t->fd = tun_open(ifr.ifr_name, IFF_TAP);
	cr_assert(t->fd >= 0, "cannot open %s: %s", ifr.ifr_name, strerror(-t->fd));
	s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	cr_assert_eq(ioctl(s, SIOCGIFHWADDR, &ifr), 0);
	memcpy(t->mac, ifr.ifr_hwaddr.sa_data, 6);
	close(s);
	snprintf(t->vm, sizeof(t->vm), "10.%d.0.2", 201 + n);
	return t->fd;
}

/* tap0, sandbox vm1's */
static int tap_setup(void)
{
	return tap_make(0, "vm1");
}

/* A frame from the VM: Ethernet to its tap, then the IP packet. */
static void vm_send(int tap, uint16_t ethertype, const uint8_t *pkt, size_t len)
{
	uint8_t frame[1600];

	memcpy(frame, tap_of(tap)->mac, 6);
	memcpy(frame + 6, vm_mac, 6);
	frame[12] = (uint8_t)(ethertype >> 8);
	frame[13] = (uint8_t)ethertype;
	memcpy(frame + 14, pkt, len);
	cr_assert_eq(write(tap, frame, 14 + len), (ssize_t)(14 + len), "write to tap0: %s",
		     strerror(errno));
}

static void vm_udp(int tap, const char *dst, uint16_t port)
{
	uint8_t pkt[128];

	vm_send(tap, 0x0800, pkt, udp4(pkt, tap_of(tap)->vm, 4444, dst, port, "vm", 2));
}

/* Drop what the tap has for its VM. */
static void tap_drain(int tap)
{
	struct pollfd p = { .fd = tap, .events = POLLIN };
	uint8_t frame[2048];

	while (poll(&p, 1, 200) == 1 && read(tap, frame, sizeof(frame)) > 0)
		;
}

/* A DNS query (id 0xbeef) for name's A record into q (256 bytes); its length. */
static size_t dns_query(uint8_t *q, const char *name)
{
	size_t n = 12;
	const char *label = name;

	memset(q, 0, 256);
	q[0] = 0xbe;
	q[1] = 0xef;
	q[2] = 1; /* RD */
	q[5] = 1; /* one question */
	while (*label) {
		const char *dot = strchr(label, '.');
		size_t len = dot ? (size_t)(dot - label) : strlen(label);

		q[n++] = (uint8_t)len;
		memcpy(q + n, label, len);
		n += len;
		label += len + (dot ? 1 : 0);
	}
	q[n++] = 0;
	q[n++] = 0;
	q[n++] = 1; /* A */
	q[n++] = 0;
	q[n++] = 1; /* IN */
	return n;
}

/* An answer the VM got: from where, its rcode, its first address (A) */
struct vm_reply {
	char src[INET_ADDRSTRLEN];
	uint16_t sport;
	uint8_t rcode;
	char addr[INET_ADDRSTRLEN];
};

/* The next answer to DNS id its tap gives the VM at port 5353 (other frames are passed by),
 * waiting at most ms: 0, or -1 when none came.
 */
static int vm_answer(int tap, uint16_t id, struct vm_reply *a, int ms)
{
	uint8_t frame[2048];

	for (int i = 0; i < ms / 100; i++) {
		struct pollfd p = { .fd = tap, .events = POLLIN };
		const uint8_t *ip4, *udp, *dns;
		ssize_t len;

		if (poll(&p, 1, 100) != 1)
			continue;
		len = read(tap, frame, sizeof(frame));
		if (len < 14 + 20 + 8 + 12 || frame[12] != 0x08 || frame[13] != 0x00)
			continue;
		ip4 = frame + 14;
		udp = ip4 + (ip4[0] & 0x0f) * 4;
		dns = udp + 8;
		if (ip4[9] != IPPROTO_UDP || (udp[2] << 8 | udp[3]) != 5353 ||
		    (dns[0] << 8 | dns[1]) != id)
			continue;
		inet_ntop(AF_INET, ip4 + 12, a->src, sizeof(a->src));
		a->sport = (uint16_t)(udp[0] << 8 | udp[1]);
		a->rcode = dns[3] & 0x0f;
		a->addr[0] = '\0';
		/* the first answer's address: the last 4 bytes when it is one A record */
		if (a->rcode == 0 && dns[7] >= 1)
			inet_ntop(AF_INET, frame + len - 4, a->addr, sizeof(a->addr));
		return 0;
	}
	return -1;
}

/* A DNS query for name from the VM to server:53; the answer's first address (A), read from
 * the frames its tap gives the VM: 0 when the server it asked answered, -2 when the answer
 * came from elsewhere, -1 when nothing came.
 */
static int vm_resolve(int tap, const char *server, const char *name, char *addr, size_t size,
		      uint8_t *rcode)
{
	uint8_t q[256], pkt[320];
	size_t n = dns_query(q, name);
	struct vm_reply a;

	vm_send(tap, 0x0800, pkt, udp4(pkt, tap_of(tap)->vm, 5353, server, 53, q, n));
	if (vm_answer(tap, 0xbeef, &a, 5000))
		return -1;
	/* the answer comes from the server the VM asked, port 53 */
	if (strcmp(a.src, server) || a.sport != 53)
		return -2;
	*rcode = a.rcode;
	snprintf(addr, size, "%s", a.addr);
	return 0;
}

Test(devices, a_vms_tap_named_by_the_policy_is_judged)
{
	int r_ok = udp_bind_in(ns_r, REMOTE, ALLOWED_PORT),
	    r_no = udp_bind_in(ns_r, REMOTE, DENIED_PORT), r_meta = udp_bind_in(ns_r, META, 80),
	    r_dns = udp_bind_in(ns_r, REMOTE, 7002), tap;
	struct dst denied = { REMOTE, DENIED_PORT };
	char addr[64];
	uint8_t rcode = 0xff;
	struct events evs;
	const Egret__V1__Event *ev;

	harness_own_fd(r_ok);
	harness_own_fd(r_no);
	harness_own_fd(r_meta);
	harness_own_fd(r_dns);
	cr_assert(r_ok >= 0 && r_no >= 0 && r_meta >= 0 && r_dns >= 0, "listeners in R");
	tap = tap_setup();
	harness_own_fd(tap);
	/* control: before egret, the VM's frames are routed to R */
	vm_udp(tap, REMOTE, DENIED_PORT);
	cr_assert(got(r_no, 2000), "control: the VM's datagram did not reach R");

	start(vm_policy);
	cr_assert(device_in_force("tap0"), "tap0 is not in force");
	vm_udp(tap, REMOTE, ALLOWED_PORT);
	cr_expect(got(r_ok, 2000), "the VM's datagram to an allowed destination was dropped");
	vm_udp(tap, REMOTE, DENIED_PORT);
	cr_expect(!got(r_no, 1000), "the VM's datagram to a denied port passed");
	vm_udp(tap, META, 80);
	cr_expect(!got(r_meta, 1000), "the VM's datagram to the metadata address passed");
	cr_expect_eq(events_wait(T->sink_path, device_deny, &denied, 5000, &evs), 0);
	ev = events_find(&evs, device_deny, &denied, NULL);
	if (ev) {
		cr_expect_str_eq(ev->sandbox->name, "vm1");
		cr_expect_str_eq(ev->net_connect->interface, "tap0");
		cr_expect_str_eq(ev->net_connect->src_addr, "10.201.0.2");
		cr_expect_eq(ev->net_connect->src_port, 4444);
	}
	events_free(&evs);

	/* its DNS goes to egret's resolver, whatever server it names; a name it may not have is
	 * refused, an allowed one answered, and the answer opens its address to the VM
	 */
	vm_udp(tap, REMOTE, 7002);
	cr_expect(!got(r_dns, 1000), "the VM reached an address no rule or answer gave it");
	cr_assert_eq(vm_resolve(tap, "203.0.113.53", "denied.test", addr, sizeof(addr), &rcode), 0,
		     "no answer to the VM's query from the server it asked");
	cr_expect_eq(rcode, 5, "a name the policy does not allow: rcode %u, not REFUSED", rcode);
	cr_assert_eq(vm_resolve(tap, "203.0.113.53", "allowed.test", addr, sizeof(addr), &rcode), 0,
		     "no answer to the VM's query for an allowed name");
	cr_expect_eq(rcode, 0);
	cr_expect_str_eq(addr, REMOTE);
	vm_udp(tap, REMOTE, 7002);
	cr_expect(got(r_dns, 2000), "the address an allowed answer gave the VM stays shut");
}

/* ---- two VMs: the resolver's address and port are no way to be taken for the other -------- */

static const char two_vms_policy[] = "mode enforce\n"
				     "sandbox vm1 {\n"
				     "  interface tap0\n"
				     "  allow 10.201.0.1/32\n" /* its gateway, any port */
				     "  allow 10.202.0.1/32\n" /* the other VM's gateway too */
				     "}\n"
				     "sandbox vm2 {\n"
				     "  interface tap1\n"
				     "  allow domain *.allowed.test\n"
				     "}\n";

static bool dns_named(const Egret__V1__Event *ev, const void *arg)
{
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_DNS_QUERY &&
	       !strcmp(ev->dns_query->name, arg);
}

/* The port egret's resolver listens on at gw for its devices, as egretctl status says it
 * ("DNS to gw:port"); 0 when it says none.
 */
static uint16_t resolver_port(const char *gw)
{
	char out[16384], want[64];
	const char *at;
	unsigned int port = 0;

	snprintf(want, sizeof(want), "DNS to %s:", gw);
	cr_assert_eq(egretctl(T, out, sizeof(out), "status", NULL), 0, "%s", out);
	at = strstr(out, want);
	if (!at || sscanf(at + strlen(want), "%u", &port) != 1 || port > 65535)
		return 0;
	return (uint16_t)port;
}

/* The attack: vm1, allowed to reach both gateways on any port, sends a query straight to the
 * port egret's resolver listens on for each VM, from vm2's address and the port vm2's last
 * query came from. The resolver knew a device's sandbox by that address and port (what the
 * kernel recorded at vm2's query): it took vm1's query for vm2's, with vm2's names and budget.
 * Now a packet a device sends to any of those ports is steered like one to port 53, and
 * recorded as its own device's.
 */
Test(devices, a_query_sent_to_the_resolvers_port_is_judged_as_its_device)
{
	struct {
		const char *gw;
		uint16_t port;
	} to[2] = { { "10.201.0.1", 0 }, { "10.202.0.1", 0 } };
	const Egret__V1__Event *ev;
	uint8_t q[256], pkt[320], rcode = 0xff;
	char addr[64], name[64];
	struct events evs;
	int tap0, tap1;

	tap0 = tap_make(0, "vm1");
	harness_own_fd(tap0);
	tap1 = tap_make(1, "vm2");
	harness_own_fd(tap1);
	start(two_vms_policy);
	cr_assert(device_in_force("tap0") && device_in_force("tap1"), "the taps are not in force");
	for (int i = 0; i < 2; i++) {
		to[i].port = resolver_port(to[i].gw);
		cr_assert_neq(to[i].port, 0, "no resolver for the VMs at %s", to[i].gw);
	}
	for (int i = 0; i < 2; i++) {
		/* vm2 asks from 10.202.0.2:5353: answered as vm2 (the control), and the kernel's
		 * record of that address and port is vm2's again before each attack (the answer to
		 * the attack before went to vm2's address, from where vm1 sent it: not read as
		 * this one's)
		 */
		tap_drain(tap1);
		snprintf(name, sizeof(name), "a%d.allowed.test", i);
		cr_assert_eq(vm_resolve(tap1, "203.0.113.53", name, addr, sizeof(addr), &rcode), 0,
			     "no answer to vm2's query");
		cr_expect_eq(rcode, 0, "vm2's allowed name: rcode %u", rcode);
		cr_assert_eq(events_wait(T->sink_path, dns_named, name, 5000, &evs), 0);
		ev = events_find(&evs, dns_named, name, NULL);
		cr_expect_str_eq(ev->sandbox->name, "vm2");
		cr_expect(ev->dns_query->allowed);
		events_free(&evs);

		snprintf(name, sizeof(name), "x%d.allowed.test", i);
		vm_send(tap0, 0x0800, pkt,
			udp4(pkt, "10.202.0.2", 5353, to[i].gw, to[i].port, q, dns_query(q, name)));
		cr_assert_eq(events_wait(T->sink_path, dns_named, name, 5000, &evs), 0,
			     "vm1's query to %s:%u never reached the resolver", to[i].gw,
			     to[i].port);
		ev = events_find(&evs, dns_named, name, NULL);
		cr_expect_str_eq(ev->sandbox->name, "vm1",
				 "vm1's query to %s:%u, from vm2's address and port, was taken "
				 "for %s's",
				 to[i].gw, to[i].port, ev->sandbox->name);
		cr_expect_not(ev->dns_query->allowed, "vm1 has no domain rule: %s was allowed",
			      name);
		events_free(&evs);
	}
}

/* The attack: while vm2's query waits for its upstream, vm1 sends a query from vm2's address
 * and port (to port 53: steered, judged as vm1). The kernel's record of that address and port
 * was one for both uses: it then named vm1's device, and vm2's answer, leaving egret's resolver
 * for vm2's tap, was not given back the server vm2 asked (vm2's resolver discards it): vm2's
 * DNS denied for as long as vm1 kept sending. Now each device has its own record for the way
 * back.
 */
Test(devices, another_vm_sending_from_a_vms_address_does_not_take_its_answer_away)
{
	static const char policy[] = "mode enforce\n"
				     "sandbox vm1 {\n"
				     "  interface tap0\n"
				     "}\n"
				     "sandbox vm2 {\n"
				     "  interface tap1\n"
				     "  allow domain *.allowed.test\n"
				     "}\n";
	/* an upstream that never answers: vm2's query waits for egret's 5 s timeout (SERVFAIL) */
	int hole = udp_bind_in(ns_r, REMOTE, 5399), tap0, tap1;
	const char *extra[] = { "--upstream-dns", REMOTE ":5399", NULL };
	uint8_t q[256], pkt[320];
	struct vm_reply a;
	size_t n;

	harness_own_fd(hole);
	cr_assert(hole >= 0, "the silent upstream in R");
	tap0 = tap_make(0, "vm1");
	harness_own_fd(tap0);
	tap1 = tap_make(1, "vm2");
	harness_own_fd(tap1);
	harness_setup_start(policy, extra);
	cr_assert(device_in_force("tap0") && device_in_force("tap1"), "the taps are not in force");
	n = dns_query(q, "b.allowed.test");
	vm_send(tap1, 0x0800, pkt, udp4(pkt, "10.202.0.2", 5353, "203.0.113.53", 53, q, n));
	/* egretd has taken vm2's query (and judged it as vm2's) before vm1 sends */
	usleep(500000 * harness_timeout_scale());
	n = dns_query(q, "y.allowed.test");
	q[0] = 0x12; /* another id: its REFUSED, sent to vm2's address, is not read as vm2's */
	q[1] = 0x34;
	vm_send(tap0, 0x0800, pkt, udp4(pkt, "10.202.0.2", 5353, "203.0.113.53", 53, q, n));
	cr_assert_eq(vm_answer(tap1, 0xbeef, &a, 10000 * (int)harness_timeout_scale()), 0,
		     "vm2 got no answer");
	/* SERVFAIL at the timeout; REFUSED if egretd took vm2's query only after vm1's had
	 * moved the resolver's record (the race README states): the way back is the same
	 */
	cr_expect(a.rcode == 2 || a.rcode == 5, "vm2's answer: rcode %u", a.rcode);
	cr_expect(!strcmp(a.src, "203.0.113.53") && a.sport == 53,
		  "vm2's answer came from %s:%u, not from the server it asked: vm1's query from "
		  "its address took the way back",
		  a.src, a.sport);
}

/* An IPv6 UDP datagram from src:4444 to dst:dport behind nopts destination options headers
 * (each 8 bytes of padding), its checksum right; its length.
 */
static size_t udp6_opts(uint8_t *buf, const char *src, const char *dst, uint16_t dport, int nopts,
			const void *payload, size_t plen)
{
	size_t ulen = 8 + plen, off = 40;
	uint8_t *u;
	uint32_t sum = 0;

	memset(buf, 0, 40 + (size_t)nopts * 8 + 8);
	buf[0] = 0x60;
	buf[4] = (uint8_t)(((size_t)nopts * 8 + ulen) >> 8);
	buf[5] = (uint8_t)((size_t)nopts * 8 + ulen);
	buf[6] = nopts ? 60 : IPPROTO_UDP;
	buf[7] = 64;
	inet_pton(AF_INET6, src, buf + 8);
	inet_pton(AF_INET6, dst, buf + 24);
	for (int i = 0; i < nopts; i++, off += 8) {
		buf[off] = i + 1 < nopts ? 60 : IPPROTO_UDP;
		buf[off + 2] = 1; /* PadN, 4 bytes */
		buf[off + 3] = 4;
	}
	u = buf + off;
	u[0] = 4444 >> 8;
	u[1] = 4444 & 0xff;
	u[2] = (uint8_t)(dport >> 8);
	u[3] = (uint8_t)dport;
	u[4] = (uint8_t)(ulen >> 8);
	u[5] = (uint8_t)ulen;
	memcpy(u + 8, payload, plen);
	/* the pseudo-header (addresses, length, protocol), then the datagram */
	for (int i = 8; i < 40; i += 2)
		sum += (uint32_t)(buf[i] << 8 | buf[i + 1]);
	sum += (uint32_t)ulen + IPPROTO_UDP;
	for (size_t i = 0; i < ulen; i += 2)
		sum += (uint32_t)(u[i] << 8 | (i + 1 < ulen ? u[i + 1] : 0));
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	sum = ~sum & 0xffff;
	u[6] = (uint8_t)((sum ? sum : 0xffff) >> 8);
	u[7] = (uint8_t)(sum ? sum : 0xffff);
	return off + ulen;
}

/* The VM's datagram of udp6_opts (one options header, 48 bytes of data that read as an options
 * header running past the packet's end) to [fd00:201::1]:7003 in two fragments: the options and UDP headers, then the data.
 */
static void vm_send_fragmented(int tap)
{
	uint8_t data[48], whole[128], frag[128];
	size_t len;

	for (size_t i = 0; i < sizeof(data); i += 2) {
		data[i] = 60;	   /* next header: destination options */
		data[i + 1] = 255; /* of 2 KiB: read as a header, past the packet's end */
	}
	len = udp6_opts(whole, "fd00:201::2", "fd00:201::1", 7003, 1, data, sizeof(data));
	cr_assert_eq(len, 40 + 8 + 8 + sizeof(data));
	for (int n = 0; n < 2; n++) {
		size_t from = n ? 56 : 40, part = n ? len - 56 : 16;

		memcpy(frag, whole, 40);
		frag[4] = (uint8_t)((8 + part) >> 8);
		frag[5] = (uint8_t)(8 + part);
		frag[6] = 44; /* a fragment header */
		memset(frag + 40, 0, 8);
		frag[40] = 60;	       /* what the fragmentable part begins with */
		frag[43] = n ? 16 : 1; /* offset 16 bytes (2 units << 3), or more fragments */
		frag[47] = 0x2a;       /* identification */
		memcpy(frag + 48, whole + from, part);
		vm_send(tap, 0x86dd, frag, 48 + part);
	}
}

/* The attack: behind more IPv6 extension headers than egret walked, a datagram was judged as
 * the last header read (protocol 60, port 0): a rule for any protocol passed it, and a DNS
 * query to the gateway reached egret's resolver unsteered. A chain egret does not read to its
 * end is dropped now; one it reads passes as before (the controls).
 */
Test(devices, a_datagram_behind_a_long_ipv6_header_chain_is_dropped)
{
	static const char policy[] =
		"mode enforce\n"
		"sandbox vm1 {\n"
		"  interface tap0\n"
		"  allow fd00:201::1/128\n" /* its gateway: any protocol, any port */
		"}\n";
	uint8_t pkt[256];
	int tap, r;

	tap = tap_setup();
	harness_own_fd(tap);
	ip("ip -6 addr add fd00:201::1/64 dev tap0 nodad");
	r = udp_bind("fd00:201::1", 7003);
	harness_own_fd(r);
	cr_assert(r >= 0, "a listener on the gateway");
	start(policy);
	cr_assert(device_in_force("tap0"), "tap0 is not in force");
	for (int n = 0; n <= 4; n += 4) {
		vm_send(tap, 0x86dd, pkt,
			udp6_opts(pkt, "fd00:201::2", "fd00:201::1", 7003, n, "vm", 2));
		cr_expect(got(r, 2000),
			  "control: behind %d options headers the datagram was dropped", n);
	}
	vm_send(tap, 0x86dd, pkt, udp6_opts(pkt, "fd00:201::2", "fd00:201::1", 7003, 7, "vm", 2));
	cr_expect(!got(r, 1000), "behind 7 options headers the datagram passed unjudged");
	/* control: a fragmented datagram whose options header is in its fragmentable part: the
	 * later fragment says next header 60 and then holds only data (here bytes that read as
	 * more options headers): it passes with its first fragment, not walked as headers
	 */
	vm_send_fragmented(tap);
	cr_expect(got(r, 2000), "a fragmented datagram with an options header was dropped");
}

static bool vm1_budget(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_LIMIT &&
	       ev->limit->kind == EGRET__V1__RESOURCE_LIMIT__KIND__KIND_EGRESS_BUDGET &&
	       ev->sandbox && !strcmp(ev->sandbox->name, "vm1");
}

/* What a VM sends through its tap counts against its sandbox's egress budget, as a socket's
 * packets do: under 'budget egress-total 300B' ten of the VM's 30-byte datagrams (IP bytes) to
 * an allowed destination arrive, the rest are dropped, and the crossing is one event.
 */
Test(devices, a_vms_tap_counts_against_its_egress_budget)
{
	static const char policy[] = "mode enforce\n"
				     "sandbox vm1 {\n"
				     "  interface tap0\n"
				     "  allow " REMOTE "/32 udp/7000\n"
				     "  budget egress-total 300B\n"
				     "}\n";
	int r_ok = udp_bind_in(ns_r, REMOTE, ALLOWED_PORT), tap, arrived = 0;
	struct events evs;
	const Egret__V1__Event *ev;

	harness_own_fd(r_ok);
	cr_assert(r_ok >= 0, "listener in R");
	tap = tap_setup();
	harness_own_fd(tap);
	start(policy);
	cr_assert(device_in_force("tap0"), "tap0 is not in force");
	for (int i = 0; i < 20; i++) {
		vm_udp(tap, REMOTE, ALLOWED_PORT);
		arrived += got(r_ok, i < 10 ? 2000 : 300);
	}
	cr_expect_eq(arrived, 10, "%d of the VM's 20 datagrams arrived under its budget", arrived);
	cr_expect_eq(events_wait(T->sink_path, vm1_budget, NULL, 5000, &evs), 0,
		     "no budget event of vm1");
	ev = events_find(&evs, vm1_budget, NULL, NULL);
	if (ev) {
		cr_expect_eq(ev->limit->limit, 300);
		cr_expect_eq(ev->limit->usage, 330);
	}
	events_free(&evs);
}

static bool protocol_deny(const Egret__V1__Event *ev, const void *arg)
{
	(void)arg;
	return ev->payload_case == EGRET__V1__EVENT__PAYLOAD_NET_CONNECT &&
	       ev->net_connect->hook == EGRET__V1__NET_CONNECT__HOOK__HOOK_DEVICE &&
	       ev->net_connect->reason == EGRET__V1__NET_CONNECT__REASON__REASON_PROTOCOL &&
	       ev->net_connect->dst_port == 0x88b5 && !strcmp(ev->net_connect->interface, "tap0");
}

/* Frames that are not IP, or IPv6 to the metadata address: dropped and reported. */
Test(devices, a_vms_other_frames_are_dropped_and_reported)
{
	static const uint8_t v6[48] = {
		0x60, 0,    0,	  0,	0, 8, IPPROTO_UDP, 64, 0xfd, 0x00, 0, 0,
		0,    0,    0,	  0,	0, 0, 0,	   0,  0,    0,	   0, 2, /* fd00::2 */
		0xfd, 0x00, 0x0e, 0xc2, 0, 0, 0,	   0,  0,    0,	   0, 0,
		0,    0,    0x02, 0x54, /* fd00:ec2::254 */
		0x11, 0x5c, 0,	  80,	0, 8, 0,	   0,
	};
	static const uint8_t odd[46] = { 'e', 'g', 'r', 'e', 't' };
	struct dst meta6 = { "fd00:ec2::254", 80 };
	int tap = tap_setup();
	struct events evs;

	harness_own_fd(tap);
	start(vm_policy);
	cr_assert(device_in_force("tap0"));
	vm_send(tap, 0x86dd, v6, sizeof(v6));
	vm_send(tap, 0x88b5, odd, sizeof(odd));
	cr_expect_eq(events_wait(T->sink_path, device_deny, &meta6, 5000, &evs), 0,
		     "no denial of the VM's IPv6 datagram to fd00:ec2::254");
	events_free(&evs);
	cr_expect_eq(events_wait(T->sink_path, protocol_deny, NULL, 5000, &evs), 0,
		     "no denial of the VM's frame of ethertype 0x88b5");
	events_free(&evs);
}

/* ---- living with others' filters, egretd's restarts, uninstall ---------------------------- */

/* How many lines of `tc filter show dev DEV HOOK` hold needle. */
static int tc_count(const char *dev, const char *hook, const char *needle)
{
	char cmd[128], out[8192];
	char *argv[] = { "/bin/sh", "-c", cmd, NULL };
	int n = 0;

	snprintf(cmd, sizeof(cmd), "tc filter show dev %s %s", dev, hook);
	if (run_cmd(argv, out, sizeof(out)))
		return -1;
	for (const char *p = out; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* A filter of another's on the same device (after egret's, which lets packets go on) is left
 * as it is by egret's attach, its restart and its uninstall.
 */
Test(devices, anothers_filter_stays_through_attach_restart_and_uninstall)
{
	struct dst denied = { REMOTE, DENIED_PORT };
	int r_no = udp_bind_in(ns_r, REMOTE, DENIED_PORT);
	char out[4096], up[64];
	const char *extra[] = { "--upstream-dns", up, NULL };

	snprintf(up, sizeof(up), UPSTREAM ":53");
	harness_own_fd(r_no);
	cr_assert(r_no >= 0);
	ip("tc qdisc add dev vh0 clsact && tc filter add dev vh0 ingress prio 5 handle 5 bpf da "
	   "bytecode '1,6 0 0 4294967295'");
	start(ctr_policy);
	start_ctr_init();
	register_ctr();
	cr_assert(device_in_force("vh0"));
	cr_expect_eq(tc_count("vh0", "ingress", "handle 0xe9e7"), 1);
	cr_expect_eq(tc_count("vh0", "egress", "handle 0xe9e7"), 1);
	cr_expect_eq(tc_count("vh0", "ingress", "bytecode"), 1, "another's filter is gone");
	cr_expect_eq(run_in(ns_s, NULL, send_udp, &denied), 0);
	cr_expect(!got(r_no, 1000), "a denied datagram passed vh0");

	/* egretd killed: the filter stays and still drops; the next egretd replaces its program */
	cr_assert_eq(harness_stop(T, SIGKILL), 128 + SIGKILL);
	cr_expect_eq(run_in(ns_s, NULL, send_udp, &denied), 0);
	cr_expect(!got(r_no, 1000), "with egretd gone a denied datagram passed vh0");
	cr_assert_eq(harness_start(T, extra), 0, "egretd did not start again:\n%s", harness_log(T));
	cr_assert(device_in_force("vh0"), "vh0 is not in force after the restart");
	cr_expect_eq(tc_count("vh0", "ingress", "handle 0xe9e7"), 1, "not one egret filter");
	cr_expect_eq(tc_count("vh0", "ingress", "bytecode"), 1, "another's filter is gone");

	cr_expect_eq(egretctl(T, out, sizeof(out), "uninstall", NULL), 0, "%s", out);
	cr_expect_eq(tc_count("vh0", "ingress", "handle 0xe9e7"), 0, "uninstall left its filter");
	cr_expect_eq(tc_count("vh0", "egress", "handle 0xe9e7"), 0, "uninstall left its filter");
	cr_expect_eq(tc_count("vh0", "ingress", "bytecode"), 1, "uninstall took another's filter");
	cr_expect_eq(run_in(ns_s, NULL, send_udp, &denied), 0);
	cr_expect(got(r_no, 2000), "after uninstall vh0 still drops");
}

/* Another's filter at egret's own place: egret does not replace it, and says the device is not
 * in force.
 */
Test(devices, a_filter_of_anothers_in_egrets_place_is_not_replaced)
{
	char out[16384];

	ip("tc qdisc add dev vh0 clsact && tc filter add dev vh0 ingress prio 1 handle 0xe9e7 bpf "
	   "da bytecode '1,6 0 0 4294967295'");
	start(ctr_policy);
	register_ctr();
	cr_expect(!device_in_force("vh0"), "egret says vh0 is in force");
	cr_assert_eq(egretctl(T, out, sizeof(out), "status", NULL), 0);
	cr_expect(strstr(out, "vh0") && strstr(out, "NOT in force"), "%s", out);
	cr_expect_eq(tc_count("vh0", "ingress", "bytecode"), 1, "another's filter was replaced");
	cr_expect(strstr(harness_log(T), "device vh0"), "egretd did not log it:\n%s",
		  harness_log(T));
}
