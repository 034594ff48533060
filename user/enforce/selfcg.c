/* egretd's own cgroup. A sandbox that writes egretd's pid into its cgroup.procs (a pull) puts
 * egretd's sockets (sinks, DNS upstream) under that sandbox's egress rules, wherever that
 * sandbox is (egret's root, a container's cgroup, a pod's); a move anywhere else may put it in a
 * frozen cgroup. egretd moves itself back to where it started, on the Tamper event of the pull
 * and, as a backstop for a lost event or any other move, at every tick.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cgroup.h"
#include "log.h"
#include "selfcg.h"

int selfcg__init(struct selfcg *s, const char *mount, const char *root)
{
	int err;

	memset(s, 0, sizeof(*s));
	s->mount = mount;
	s->root = root;
	err = cgroup__of_pid(0, mount, s->home, sizeof(s->home));
	if (err) {
		log_warn("cannot read egretd's own cgroup from /proc/self/cgroup: %s; egretd will "
			 "not return there if a sandbox pulls it in",
			 strerror(-err));
		s->home[0] = '\0';
		return err;
	}
	if (cgroup__is_within(s->home, root)) {
		log_warn("egretd started inside egret's root cgroup (%s): its own egress follows "
			 "that sandbox's rules; start it outside %s",
			 s->home, root);
		s->home[0] = '\0';
	}
	return 0;
}

/* Wherever egretd is moved (a sandbox's cgroup, egret's root or any registered container's, a
 * cgroup a sandbox froze, another host cgroup), it goes back where it started: its own egress
 * must never follow a sandbox's rules, and a move by a sandbox is never the operator's.
 */
int selfcg__check(struct selfcg *s)
{
	char now[PATH_MAX];
	int err;

	if (!s->home[0])
		return 0;
	err = cgroup__of_pid(0, s->mount, now, sizeof(now));
	if (err) {
		if (!s->unreadable)
			log_err("cannot read egretd's own cgroup from /proc/self/cgroup: %s; "
				"returning to %s anyway",
				strerror(-err), s->home);
		s->unreadable = true;
	} else {
		s->unreadable = false;
		if (!strcmp(now, s->home))
			return 0;
	}
	err = cgroup__join(s->home, getpid());
	if (err) {
		if (!s->stuck)
			log_err("egretd was moved to cgroup %s and cannot return to %s: %s; its own "
				"egress follows that cgroup's rules until it can",
				s->unreadable ? "?" : now, s->home, strerror(-err));
		s->stuck = true;
		return err;
	}
	s->stuck = false;
	if (s->unreadable)
		return 0;
	s->returns++;
	log_warn("egretd was moved to cgroup %s (%s); back in %s", now,
		 cgroup__is_within(now, s->root) ? "egret's root" : "not its own", s->home);
	return 1;
}
