/* Readiness and the fd store for systemd Type=notify, without libsystemd: one datagram to
 * $NOTIFY_SOCKET, with a file descriptor for FDSTORE=1.
 */
#ifndef EGRET_NOTIFY_H
#define EGRET_NOTIFY_H

int notify__send(const char *state);
int notify__send_fd(const char *state, int fd);
int notify__listen_fds(const char **names, int max);
int notify__listen_fd(int i);

#endif /* EGRET_NOTIFY_H */
