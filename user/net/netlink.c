/* rtnetlink requests of the device datapath: a dump of links, a namespace id, a monitor. */
#include <errno.h>
#include <linux/if_link.h>
#include <linux/net_namespace.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "array.h"
#include "netlink.h"

#define NL_BUF 32768

static int nl_open(uint32_t groups)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK, .nl_groups = groups };
	int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | (groups ? SOCK_NONBLOCK : 0),
			NETLINK_ROUTE);

	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static int nl_send(int fd, struct nlmsghdr *h)
{
	struct sockaddr_nl to = { .nl_family = AF_NETLINK };

	return sendto(fd, h, h->nlmsg_len, 0, (struct sockaddr *)&to, sizeof(to)) < 0 ? -errno : 0;
}

/* Each message of the answer to request seq, to fn (which returns 0 to go on); 0 at its end,
 * or -errno (the kernel's error, a read's).
 */
static int nl_recv(int fd, uint32_t seq, int (*fn)(const struct nlmsghdr *, void *), void *arg)
{
	char *buf = malloc(NL_BUF);
	int err = 0;
	bool done = false;

	if (!buf)
		return -ENOMEM;
	while (!done && !err) {
		ssize_t len = recv(fd, buf, NL_BUF, 0);
		struct nlmsghdr *h;

		if (len < 0) {
			err = errno == EINTR ? 0 : -errno;
			continue;
		}
		for (h = (struct nlmsghdr *)buf; NLMSG_OK(h, (size_t)len) && !done && !err;
		     h = NLMSG_NEXT(h, len)) {
			if (h->nlmsg_seq != seq)
				continue;
			if (h->nlmsg_type == NLMSG_DONE) {
				done = true;
			} else if (h->nlmsg_type == NLMSG_ERROR) {
				const struct nlmsgerr *e = NLMSG_DATA(h);

				err = e->error;
				done = true;
			} else {
				err = fn(h, arg);
				done = !(h->nlmsg_flags & NLM_F_MULTI);
			}
		}
	}
	free(buf);
	return err;
}

struct links {
	struct nl_link *v;
	size_t n, cap;
};

static void link_info_kind(const struct rtattr *info, size_t len, char *kind, size_t size)
{
	for (const struct rtattr *a = RTA_DATA(info); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		size_t n = RTA_PAYLOAD(a);

		if (a->rta_type != IFLA_INFO_KIND)
			continue;
		if (n >= size)
			n = size - 1;
		memcpy(kind, RTA_DATA(a), n);
		kind[n] = '\0';
		kind[strnlen(kind, n)] = '\0';
	}
}

static int on_link(const struct nlmsghdr *h, void *arg)
{
	const struct ifinfomsg *ifi = NLMSG_DATA(h);
	struct links *ls = arg;
	struct nl_link *l;
	size_t len;

	if (h->nlmsg_type != RTM_NEWLINK || h->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)))
		return 0;
	if (ARRAY_RESERVE(ls->v, ls->cap, ls->n + 1))
		return -ENOMEM;
	l = &ls->v[ls->n++];
	memset(l, 0, sizeof(*l));
	l->ifindex = (uint32_t)ifi->ifi_index;
	l->type = ifi->ifi_type;
	l->link_netnsid = -1;
	len = h->nlmsg_len - NLMSG_LENGTH(sizeof(*ifi));
	for (const struct rtattr *a = IFLA_RTA(ifi); RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		size_t n = RTA_PAYLOAD(a);

		switch (a->rta_type) {
		case IFLA_IFNAME:
			memcpy(l->name, RTA_DATA(a), n < sizeof(l->name) ? n : sizeof(l->name) - 1);
			break;
		case IFLA_ADDRESS:
			if (n == sizeof(l->mac))
				memcpy(l->mac, RTA_DATA(a), n);
			break;
		case IFLA_MASTER:
			if (n == 4)
				memcpy(&l->master, RTA_DATA(a), 4);
			break;
		case IFLA_LINK_NETNSID:
			if (n == 4)
				memcpy(&l->link_netnsid, RTA_DATA(a), 4);
			break;
		case IFLA_LINKINFO:
			link_info_kind(a, n, l->kind, sizeof(l->kind));
			break;
		}
	}
	return 0;
}

int nl__links(struct nl_link **out, size_t *n)
{
	struct {
		struct nlmsghdr h;
		struct ifinfomsg ifi;
	} req = { .h = { .nlmsg_len = sizeof(req),
			 .nlmsg_type = RTM_GETLINK,
			 .nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP,
			 .nlmsg_seq = 1 },
		  .ifi = { .ifi_family = AF_UNSPEC } };
	struct links ls = { 0 };
	int fd = nl_open(0), err;

	if (fd < 0)
		return fd;
	err = nl_send(fd, &req.h);
	if (!err)
		err = nl_recv(fd, 1, on_link, &ls);
	close(fd);
	if (err) {
		free(ls.v);
		return err;
	}
	*out = ls.v;
	*n = ls.n;
	return 0;
}

static int on_nsid(const struct nlmsghdr *h, void *arg)
{
	const struct rtgenmsg *g = NLMSG_DATA(h);
	size_t len;

	if (h->nlmsg_type != RTM_NEWNSID || h->nlmsg_len < NLMSG_LENGTH(sizeof(*g)))
		return 0;
	len = h->nlmsg_len - NLMSG_LENGTH(NLMSG_ALIGN(sizeof(*g)));
	for (const struct rtattr *a =
		     (const struct rtattr *)((const char *)g + NLMSG_ALIGN(sizeof(*g)));
	     RTA_OK(a, len); a = RTA_NEXT(a, len)) {
		if (a->rta_type == NETNSA_NSID && RTA_PAYLOAD(a) == 4)
			memcpy(arg, RTA_DATA(a), 4);
	}
	return 0;
}

int nl__netns_id(int nsfd)
{
	struct {
		struct nlmsghdr h;
		struct rtgenmsg g;
		char pad[3];
		struct rtattr a;
		uint32_t fd;
	} req;
	int32_t id = -1;
	int fd = nl_open(0), err;

	if (fd < 0)
		return fd;
	memset(&req, 0, sizeof(req));
	req.h.nlmsg_len = sizeof(req);
	req.h.nlmsg_type = RTM_GETNSID;
	req.h.nlmsg_flags = NLM_F_REQUEST;
	req.h.nlmsg_seq = 2;
	req.g.rtgen_family = AF_UNSPEC;
	req.a.rta_type = NETNSA_FD;
	req.a.rta_len = RTA_LENGTH(sizeof(uint32_t));
	req.fd = (uint32_t)nsfd;
	err = nl_send(fd, &req.h);
	if (!err)
		err = nl_recv(fd, 2, on_nsid, &id);
	close(fd);
	if (err)
		return err;
	return id >= 0 ? id : -ENOENT;
}

int nl__monitor(void)
{
	return nl_open(RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR);
}

int nl__drain(int fd)
{
	char buf[8192];

	for (;;) {
		if (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
			continue;
		if (errno == EAGAIN || errno == EWOULDBLOCK)
			return 0;
		if (errno == ENOBUFS)
			continue; /* missed some: the caller looks at everything anyway */
		if (errno != EINTR)
			return -errno;
	}
}
