/* cgroup v2 plumbing: finding the v2 mount, creating and joining cgroups, and naming the
 * sandbox a cgroup id belongs to.
 */
#ifndef EGRET_CGROUP_H
#define EGRET_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define CGROUP2_SUPER_MAGIC_ 0x63677270
#define CGROUP_PROC_FILE_MAX (1u << 20) /* a /proc/PID/cgroup longer than this is refused */

int cgroup__parse_mountinfo(FILE *f, char *out, size_t size);
int cgroup__find_v2_mount(char *out, size_t size);
int cgroup__check_v2(const char *path);
int cgroup__level(const char *mount, const char *path, unsigned int *level);
int cgroup__id(const char *path, uint64_t *id);
int cgroup__join(const char *path, pid_t pid);
/* The v2 cgroup directory of pid (0: the caller), from /proc/PID/cgroup read whole; -errno on
 * any doubt (cut short, malformed, no or two v2 lines, outside the caller's cgroup namespace).
 */
int cgroup__of_pid(pid_t pid, const char *mount, char *out, size_t size);
/* The v2 path (from the hierarchy's root, "/" for it) in len bytes of /proc/PID/cgroup text:
 * 0, -EBADMSG (cut short or malformed), -ENOENT (no v2 line), -EXDEV (outside the reader's
 * cgroup namespace), -ENAMETOOLONG.
 */
int cgroup__parse_proc_cgroup(const char *text, size_t len, char *out, size_t size);
/* /proc/PID/cgroup of pid (0: the caller) read whole and checked as cgroup__of_pid checks it,
 * NUL-terminated, malloc'd into *text: 0 or -errno.
 */
int cgroup__proc_text(pid_t pid, char **text, size_t *len);
/* The mount point of the v1 hierarchy (mounted at its root) whose /proc/PID/cgroup controllers
 * field is the clen bytes at ctrls ("freezer", "cpu,cpuacct", "name=systemd"): 0 or -errno.
 */
int cgroup__v1_mount(const char *ctrls, size_t clen, char *out, size_t size);
bool cgroup__is_within(const char *path, const char *root);

#endif /* EGRET_CGROUP_H */
