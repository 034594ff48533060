/* egretd's own cgroup: recorded at start, and returned to whenever something moved egretd
 * elsewhere (a sandbox's pull), so its own egress is never judged by a sandbox's rules.
 */
#ifndef EGRET_SELFCG_H
#define EGRET_SELFCG_H

#include <limits.h>
#include <stdbool.h>

struct selfcg {
	char home[PATH_MAX]; /* "" when egretd started inside egret's root: nowhere to return */
	const char *mount;
	const char *root; /* egret's root cgroup */
	unsigned int returns;
	bool stuck;	 /* the last return failed (logged once until one works) */
	bool unreadable; /* /proc/self/cgroup could not be read (logged once) */
};

int selfcg__init(struct selfcg *s, const char *mount, const char *root);
/* back home if egretd is anywhere else now: 1 moved, 0 where it belongs, -errno */
int selfcg__check(struct selfcg *s);

#endif /* EGRET_SELFCG_H */
