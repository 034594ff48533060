/* Readiness for systemd Type=notify, without libsystemd: one datagram to $NOTIFY_SOCKET. */
#ifndef EGRET_NOTIFY_H
#define EGRET_NOTIFY_H

int notify__send(const char *state);

#endif /* EGRET_NOTIFY_H */
