/* Networks for integration tests: the test process's own network namespace and the addresses
 * on it, and listeners, connects, datagrams, TCP Fast Open and pings with timeouts, returning
 * the errno a test asserts on. Traffic stays on loopback or inside the test's namespace.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "harness_instance.h"
#include "harness_net.h"

int netns_run(const char *cmdline)
{
	char *argv[] = { "/bin/sh", "-c", (char *)cmdline, NULL };
	char out[2048];
	int rc = run_cmd(argv, out, sizeof(out));

	if (rc)
		fprintf(stderr, "harness: '%s' failed (%d): %s\n", cmdline, rc, out);
	return rc;
}

/* Move the calling test process into a new network namespace with lo up. */
int netns_new(void)
{
	if (unshare(CLONE_NEWNET))
		return -errno;
	return netns_run("ip link set lo up") ? -EIO : 0;
}

int netns_addr(const char *dev, const char *cidr)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "ip addr add %s dev %s%s", cidr, dev,
		 strchr(cidr, ':') ? " nodad" : "");
	return netns_run(cmd) ? -EIO : 0;
}

static int resolve(const char *addr, uint16_t port, int family, struct sockaddr_storage *ss,
		   socklen_t *len)
{
	struct addrinfo hints = { .ai_family = family,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV };
	struct addrinfo *res;
	char service[8];

	snprintf(service, sizeof(service), "%u", port);
	if (getaddrinfo(addr, service, &hints, &res))
		return EINVAL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

static int bound_socket(const char *addr, uint16_t port, int type)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, one = 1;

	if (resolve(addr, port, AF_UNSPEC, &ss, &len))
		return -EINVAL;
	fd = socket(ss.ss_family, type | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ss.ss_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) || (type == SOCK_STREAM && listen(fd, 128))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

/* A listener on addr:port (IPv6 sockets v6-only); the fd, or -errno. */
int tcp_listen(const char *addr, uint16_t port)
{
	return bound_socket(addr, port, SOCK_STREAM);
}

int udp_bind(const char *addr, uint16_t port)
{
	return bound_socket(addr, port, SOCK_DGRAM);
}

/* TCP connect with a timeout: 0, or the errno (ETIMEDOUT when nothing answered). */
int tcp_connect(const char *addr, uint16_t port, int family, int timeout_ms)
{
	struct sockaddr_storage ss;
	struct pollfd p;
	socklen_t len, elen = sizeof(int);
	int fd, err = 0;

	if (resolve(addr, port, family, &ss, &len))
		return EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&ss, len) == 0)
		goto out;
	if (errno != EINPROGRESS) {
		err = errno;
		goto out;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLOUT };
	if (poll(&p, 1, timeout_ms) != 1)
		err = ETIMEDOUT;
	else
		getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen);
out:
	close(fd);
	return err;
}

/* One datagram, by sendto or by connect + send: 0 or the errno. */
static int udp_send(const char *addr, uint16_t port, int family, bool connected)
{
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, err = 0;

	if (resolve(addr, port, family, &ss, &len))
		return EINVAL;
	fd = socket(ss.ss_family, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	if (connected ? connect(fd, (struct sockaddr *)&ss, len) || send(fd, "x", 1, 0) < 0
		      : sendto(fd, "x", 1, 0, (struct sockaddr *)&ss, len) < 0)
		err = errno;
	close(fd);
	return err;
}

int udp_sendto(const char *addr, uint16_t port, int family)
{
	return udp_send(addr, port, family, false);
}

int udp_connect_send(const char *addr, uint16_t port, int family)
{
	return udp_send(addr, port, family, true);
}

/* TCP Fast Open: the data rides on the SYN, sent by sendto(MSG_FASTOPEN) without connect(). */
int tcp_fastopen(const char *addr, uint16_t port, int family)
{
	struct timeval tv = { .tv_sec = 2 };
	struct sockaddr_storage ss;
	socklen_t len;
	int fd, err = 0;

	if (resolve(addr, port, family, &ss, &len))
		return EINVAL;
	fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return errno;
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (sendto(fd, "x", 1, MSG_FASTOPEN, (struct sockaddr *)&ss, len) < 0)
		err = errno;
	close(fd);
	return err;
}

/* One ICMP echo through a ping socket: 0 when the reply came, ETIMEDOUT when none did, or the
 * errno of the send.
 */
int ping_echo(const char *addr, int timeout_ms)
{
	struct icmp_echo {
		uint8_t type, code;
		uint16_t csum, id, seq;
	} req = { .type = 8, .seq = htons(1) };
	struct sockaddr_storage ss;
	struct pollfd p;
	socklen_t len;
	char buf[256];
	int fd, err = 0;

	if (resolve(addr, 0, AF_INET, &ss, &len))
		return EINVAL;
	fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_ICMP);
	if (fd < 0)
		return errno;
	if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&ss, len) < 0) {
		err = errno;
		goto out;
	}
	p = (struct pollfd){ .fd = fd, .events = POLLIN };
	if (poll(&p, 1, timeout_ms) != 1 || recv(fd, buf, sizeof(buf), 0) <= 0)
		err = ETIMEDOUT;
out:
	close(fd);
	return err;
}

union fds_cmsg {
	char buf[CMSG_SPACE(4 * sizeof(int))];
	struct cmsghdr align;
};

int fds_send(int sock, const int *fds, unsigned int n)
{
	union fds_cmsg ctl;
	char byte = 'f';
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = CMSG_SPACE(n * sizeof(int)) };
	struct cmsghdr *c = CMSG_FIRSTHDR(&mh);

	if (n == 0 || n > 4)
		return EINVAL;
	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	return sendmsg(sock, &mh, 0) == 1 ? 0 : errno;
}

int fds_recv(int sock, int *fds, unsigned int n)
{
	union fds_cmsg ctl;
	char byte;
	struct iovec iov = { .iov_base = &byte, .iov_len = 1 };
	struct msghdr mh = { .msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl.buf) };
	struct cmsghdr *c;

	if (n == 0 || n > 4)
		return EINVAL;
	if (recvmsg(sock, &mh, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) != 1)
		return errno ? errno : EIO;
	c = CMSG_FIRSTHDR(&mh);
	if (!c || c->cmsg_type != SCM_RIGHTS || c->cmsg_len != CMSG_LEN(n * sizeof(int)))
		return EPROTO;
	memcpy(fds, CMSG_DATA(c), n * sizeof(int));
	return 0;
}
