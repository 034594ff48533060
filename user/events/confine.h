/* The user side of confinement: sandbox cgroups coming and going, tamper attempts. */
#ifndef EGRET_USER_CONFINE_H
#define EGRET_USER_CONFINE_H

#include <linux/types.h>
#include <stdbool.h>
#include <stddef.h>

#include "egret/events.h"
#include "egret/confine.h"

struct decoder_ctx;
struct control_req;

void confine__on_cgroup(struct decoder_ctx *d, const void *rec, size_t size);
void confine__on_tamper(struct decoder_ctx *d, const void *rec, size_t size);
/* "seccomp NAME TID ARCH NR ERRNO ARG0..ARG5 SUPPRESSED": a call egretctl run's profile
 * refused, reported by egretctl, into a Tamper event; 0 or -errno (-EINVAL: a bad request)
 */
int confine__cmd_seccomp(struct decoder_ctx *d, struct control_req *r);
/* Make the protected_tgids map (map_fd) hold exactly the n tgids given: no egret program kills
 * them, and a sandbox that signals, traces or reads them is killed instead. 0 or -errno.
 */
/* --require-unprivileged at start: every process under root holding a capability of
 * EGRET_CAPS_DANGER over the host is reported (Tamper PRIVILEGED) and, with kill, killed;
 * how many
 */
int confine__scan_privileged(struct decoder_ctx *d, const char *root, int task_map_fd, bool kill);
int confine__protect(int map_fd, const __u32 *tgids, size_t n);
/* Without bpf_task_from_pid (6.1): every task already in egret's root (from each cgroup's
 * cgroup.threads) into sandbox_pids (map_fd), which the programs keep only for tasks that fork,
 * exec or move after they are attached. How many were added, or -errno.
 */
int confine__seed_pids(int map_fd, const char *root);

#endif /* EGRET_USER_CONFINE_H */
