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

int cgroup__parse_mountinfo(FILE *f, char *out, size_t size);
int cgroup__find_v2_mount(char *out, size_t size);
int cgroup__check_v2(const char *path);
int cgroup__level(const char *mount, const char *path, unsigned int *level);
int cgroup__id(const char *path, uint64_t *id);
int cgroup__join(const char *path, pid_t pid);
int cgroup__of_pid(pid_t pid, const char *mount, char *out, size_t size);
bool cgroup__is_within(const char *path, const char *root);

#endif /* EGRET_CGROUP_H */
