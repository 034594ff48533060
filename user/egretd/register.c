/* Container runtimes' registrations (egretctl oci-hook): the register and unregister requests.
 * A registration passes the container's cgroup directory, and its network namespace and root
 * directory when it has them, as descriptors (the runtime's init may be in another pid
 * namespace than egretd, and a descriptor cannot name another cgroup or namespace later). It
 * is answered only when the sandbox is in force: its rules in the kernel, egret's resolver
 * listening in its network namespace, so the container's first instruction and first query
 * find everything in place. Anything that fails undoes the registration and says why; the hook
 * then fails the container's start (fail closed).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "egretd.h"
#include "util.h"

enum reg_fd {
	REG_CGROUP,
	REG_NET,
	REG_ROOT,
	REG_NFDS
};

static const char *const reg_fd_names[REG_NFDS] = { "cgroup", "net", "root" };

/* with=cgroup,net,root: which descriptor is which, in the order they came */
static int reg_fds(struct control_req *r, const char *with, int fds[REG_NFDS])
{
	char list[64], *save = NULL;
	int i = 0;

	for (int k = 0; k < REG_NFDS; k++)
		fds[k] = -1;
	snprintf(list, sizeof(list), "%s", with);
	for (char *w = strtok_r(list, ",", &save); w; w = strtok_r(NULL, ",", &save), i++) {
		int k = 0;

		while (k < REG_NFDS && strcmp(reg_fd_names[k], w))
			k++;
		if (k == REG_NFDS || i >= r->nfds || fds[k] >= 0) {
			control__err(r,
				     "register: with=%s does not name the descriptors passed "
				     "(cgroup, net, root; %d came)\n",
				     with, r->nfds);
			return -EINVAL;
		}
		fds[k] = r->fds[i];
	}
	if (fds[REG_CGROUP] < 0) {
		control__err(r, "register: the container's cgroup directory must be passed\n");
		return -EINVAL;
	}
	return 0;
}

/* The request's KEY=VALUE words, one after the other with their NULs. */
static int reg_words(struct control_req *r, int first, char *buf, size_t size, size_t *len)
{
	*len = 0;
	for (int i = first; i < r->argc; i++) {
		size_t n = strlen(r->argv[i]) + 1;

		if (*len + n > size) {
			control__err(r, "register: more than %zu bytes of words\n", size);
			return -E2BIG;
		}
		memcpy(buf + *len, r->argv[i], n);
		*len += n;
	}
	if (!*len) {
		control__err(r, "register: no words (name=, container.id=, ...)\n");
		return -EINVAL;
	}
	return 0;
}

/* A root directory fd for the package tracker: it takes it over. */
static void keep_root(struct daemon *d, struct control_req *r, int fds[REG_NFDS], uint64_t id)
{
	for (int i = 0; i < r->nfds; i++) {
		if (r->fds[i] == fds[REG_ROOT])
			r->fds[i] = -1;
	}
	pkg__set_sandbox_root(&d->pkg, id, fds[REG_ROOT]);
}

int daemon__cmd_register(void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;
	char words[SANDBOX_META_WORDS_MAX], err[512];
	int fds[REG_NFDS], first = 1, ret;
	uint64_t id;
	size_t len;

	if (r->argc > 1 && !strncmp(r->argv[1], "with=", 5))
		first = 2;
	ret = reg_fds(r, first == 2 ? r->argv[1] + 5 : "cgroup", fds);
	if (!ret)
		ret = reg_words(r, first, words, sizeof(words), &len);
	if (ret)
		return ret;
	ret = engine__register(&d->engine, fds[REG_CGROUP], words, len, &id, err, sizeof(err));
	if (ret) {
		control__err(r, "register: %s\n", err);
		return ret;
	}
	if (fds[REG_NET] >= 0 && d->resolver) {
		ret = resolver__listen_in(d->resolver, fds[REG_NET], id);
		if (ret) {
			control__err(r,
				     "register: egret's resolver cannot listen in the container's "
				     "network namespace: %s\n",
				     strerror(-ret));
			engine__unregister(&d->engine, id, "its DNS could not be set up");
			return ret;
		}
	}
	/* the container's veth (when its runtime made it already): judged before it answers */
	if (fds[REG_NET] >= 0 && d->resolver)
		devices__sync(&d->devices);
	if (fds[REG_ROOT] >= 0)
		keep_root(d, r, fds, id);
	if (engine__sandbox(&d->engine, id))
		control__out(r, "registered %s (cgroup %llu)\n",
			     engine__sandbox(&d->engine, id)->name, (unsigned long long)id);
	else
		control__out(r, "exempt: cgroup %llu is the host's\n", (unsigned long long)id);
	return 0;
}

/* The registered sandbox a word names: id=N (its cgroup id) or container.id=ID. */
static uint64_t reg_find(struct daemon *d, const char *word)
{
	const struct sandbox_names *reg = &d->engine.reg;
	uint64_t id = 0;

	if (!strncmp(word, "id=", 3))
		return parse_u64(word + 3, UINT64_MAX, &id) ? 0 : id;
	if (strncmp(word, "container.id=", 13) || !word[13])
		return 0;
	for (size_t i = 0; i < sandbox_names__slots(reg); i++) {
		const struct sandbox_entry *s = sandbox_names__at(reg, i);

		if (s && s->meta && s->meta->container_id &&
		    !strcmp(s->meta->container_id, word + 13) && engine__sandbox(&d->engine, s->id))
			return s->id;
	}
	return 0;
}

int daemon__cmd_unregister(void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;
	char why[96];
	uint64_t id;

	if (r->argc != 2) {
		control__err(r, "usage: unregister id=CGROUP_ID | container.id=ID\n");
		return -EINVAL;
	}
	id = reg_find(d, r->argv[1]);
	snprintf(why, sizeof(why), "unregistered by pid %d", (int)r->peer.pid);
	if (!id || engine__unregister(&d->engine, id, why)) {
		control__out(r, "no registered sandbox %s (already gone)\n", r->argv[1]);
		return 0;
	}
	if (d->resolver) {
		resolver__sandbox_gone(d->resolver, id);
		devices__sync(&d->devices);
	}
	pkg__set_sandbox_root(&d->pkg, id, -1);
	control__out(r, "unregistered %s\n", r->argv[1]);
	return 0;
}
