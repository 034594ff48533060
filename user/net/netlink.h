/* rtnetlink, as the device datapath needs it (devices.c): the links of egretd's network
 * namespace with what says whose they are, the id this namespace gives another, and a socket
 * that wakes egretd when links or addresses change.
 */
#ifndef EGRET_NETLINK_H
#define EGRET_NETLINK_H

#include <stddef.h>
#include <stdint.h>

struct nl_link {
	uint32_t ifindex;
	uint32_t master;      /* the bridge (or other master) it is a port of; 0: none */
	int32_t link_netnsid; /* a veth: the namespace its peer is in (nl__netns_id); -1: none */
	uint16_t type;	      /* ARPHRD_* */
	uint8_t mac[6];
	char name[16]; /* IFNAMSIZ */
	char kind[16]; /* "veth", "tun", "bridge"...; "" for a device without one */
};

/* Every link of egretd's network namespace: *out (free() it) and *n; 0 or -errno. */
int nl__links(struct nl_link **out, size_t *n);
/* The id egretd's namespace gives the namespace of nsfd: >= 0, -ENOENT when it has none (no
 * device of ours is linked to it), or -errno.
 */
int nl__netns_id(int nsfd);
/* A socket told of link and address changes (readable when one came; nl__drain empties it),
 * or -errno.
 */
int nl__monitor(void);
/* Read what came; 0, or -errno when the socket failed. */
int nl__drain(int fd);

#endif /* EGRET_NETLINK_H */
