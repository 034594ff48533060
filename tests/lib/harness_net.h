/* Networks for integration tests (see harness_net.c): the test process's network namespace and
 * its addresses, and sockets with timeouts. Included through harness.h.
 */
#ifndef EGRET_TEST_HARNESS_NET_H
#define EGRET_TEST_HARNESS_NET_H

#include <stdint.h>

/* network namespace of the calling test process */
int netns_new(void);
int netns_addr(const char *dev, const char *cidr);
int netns_run(const char *cmdline);

/* sockets: 0 or an errno */
int tcp_listen(const char *addr, uint16_t port);
int udp_bind(const char *addr, uint16_t port);
int tcp_connect(const char *addr, uint16_t port, int family, int timeout_ms);
int udp_sendto(const char *addr, uint16_t port, int family);
int udp_connect_send(const char *addr, uint16_t port, int family);
int tcp_fastopen(const char *addr, uint16_t port, int family);
int ping_echo(const char *addr, int timeout_ms);

/* n descriptors (at most 4) over a unix socket, with one byte: 0 or an errno. fds_recv's are
 * close-on-exec (an egretd the test starts later must not hold them open).
 */
int fds_send(int sock, const int *fds, unsigned int n);
int fds_recv(int sock, int *fds, unsigned int n);

#endif /* EGRET_TEST_HARNESS_NET_H */
