/* egret's tc filters on a network device (include/egret/device.h): one at each hook, at its own
 * priority and handle in a clsact qdisc that may hold others' filters. Nothing here removes a
 * filter that is not egret's, or a qdisc.
 */
#ifndef EGRET_TC_H
#define EGRET_TC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Put prog_fd at the device's ingress (or egress), replacing egret's filter there (an older
 * egretd's program) in one step; 0, or -errno with err saying what is in the way.
 */
int tc__attach(uint32_t ifindex, bool ingress, int prog_fd, char *err, size_t errsz);
/* The id of the program of egret's filter at that hook; 0: none (or the device is gone). */
uint32_t tc__prog(uint32_t ifindex, bool ingress);
/* Whether egret's filter at that hook runs prog_fd. */
bool tc__runs(uint32_t ifindex, bool ingress, int prog_fd);
/* Remove egret's filter at that hook (a filter of another's at the same place stays); 0 when
 * there is none (any more), or -errno.
 */
int tc__detach(uint32_t ifindex, bool ingress);
/* Both of egret's filters off every device of the pinned `devices` map at pin (egretctl
 * uninstall); 0 or the first -errno.
 */
int tc__detach_pinned(const char *pin);

#endif /* EGRET_TC_H */
