/* The keeper's second line (see keeper.h): under systemd, every pinned link and map of the
 * state dir is also kept in the service's fd store, one fd per name, which survives egretd and
 * the keeper; a pin that is gone at start is put back from it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "keeper.h"
#include "log.h"
#include "notify.h"

#define STORE_NAME_LEN 300 /* "link-" or "map-" and a pin's name */

/* "link-NAME" or "map-NAME" for a pin's path; NULL for anything else */
static const char *store_name(const char *path, char *out, size_t size)
{
	const char *base = strrchr(path, '/');

	if (!base || base - path < 6)
		return NULL;
	if (!strncmp(base - 6, "/links", 6))
		snprintf(out, size, "link-%s", base + 1);
	else if (!strncmp(base - 5, "/maps", 5))
		snprintf(out, size, "map-%s", base + 1);
	else
		return NULL;
	return out;
}

/* The names of the fds systemd passed at start (keeper__restore): those this egretd does not
 * store again (a program it no longer loads: egret_bpf where egret_csys judges bpf(2), a
 * program an older egretd had) are removed from the store, or systemd would keep an old
 * tracepoint's link, which no detach ends, attached for as long as the service lives.
 */
static char passed[KEEPER_MAX_ITEMS][STORE_NAME_LEN];
static unsigned int npassed;

static bool stored_now(const struct keeper *k, const char *name)
{
	char mine[STORE_NAME_LEN];

	for (unsigned int i = 0; i < k->nitems; i++) {
		if (store_name(k->items[i].path, mine, sizeof(mine)) && !strcmp(mine, name))
			return true;
	}
	return false;
}

/* Only a service systemd started (it sets $INVOCATION_ID) has a store: another supervisor's
 * notify socket (a test harness, one that only waits for READY=1) would get hundreds of
 * datagrams it does not read, and READY=1 would wait behind them.
 */
static void store_each(const struct keeper *k, bool add)
{
	char name[STORE_NAME_LEN], msg[STORE_NAME_LEN + 40];
	int err;

	if (!getenv("INVOCATION_ID"))
		return;
	for (unsigned int i = 0; add && i < npassed; i++) {
		if (stored_now(k, passed[i]))
			continue;
		snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", passed[i]);
		err = notify__send(msg);
		if (err)
			log_warn("systemd's fd store: %s: %s", passed[i], strerror(-err));
		else
			log_info("systemd's fd store: %s removed, this egretd has no such object",
				 passed[i]);
	}
	npassed = 0;
	for (unsigned int i = 0; i < k->nitems; i++) {
		if (!store_name(k->items[i].path, name, sizeof(name)))
			continue;
		/* a previous egretd's fds of that name go first: one per name */
		snprintf(msg, sizeof(msg), "FDSTOREREMOVE=1\nFDNAME=%s", name);
		err = notify__send(msg);
		snprintf(msg, sizeof(msg), "FDSTORE=1\nFDNAME=%s", name);
		if (!err && add)
			err = notify__send_fd(msg, k->items[i].fd);
		if (err) {
			log_warn("systemd's fd store: %s: %s", name, strerror(-err));
			return;
		}
	}
}

void keeper__store(const struct keeper *k)
{
	store_each(k, true);
}

void keeper__unstore(const struct keeper *k)
{
	store_each(k, false);
}

/* At start: a pin that is gone but whose object systemd kept is put back, so the loader adopts
 * it (rather than attach a second link beside the one the store holds). Every passed fd is
 * closed: the fds this egretd stores replace them.
 */
void keeper__restore(const char *state_dir)
{
	const char *names[KEEPER_MAX_ITEMS];
	int n = notify__listen_fds(names, KEEPER_MAX_ITEMS);
	char path[PATH_MAX + 320];

	for (int i = 0; i < n; i++) {
		int fd = notify__listen_fd(i), cur;
		const char *sub = !strncmp(names[i], "link-", 5)  ? "links"
				  : !strncmp(names[i], "map-", 4) ? "maps"
								  : NULL;

		if (sub && strlen(names[i]) < STORE_NAME_LEN && npassed < KEEPER_MAX_ITEMS)
			snprintf(passed[npassed++], STORE_NAME_LEN, "%s", names[i]);

		if (sub && snprintf(path, sizeof(path), "%s/%s/%s", state_dir, sub,
				    strchr(names[i], '-') + 1) < (int)sizeof(path)) {
			cur = bpf_obj_get(path);
			if (cur >= 0)
				close(cur);
			else if (errno == ENOENT && !bpf_obj_pin(fd, path))
				log_warn("pin %s was gone: put back from systemd's fd store", path);
		}
		close(fd);
	}
	unsetenv("LISTEN_FDS");
	unsetenv("LISTEN_PID");
	unsetenv("LISTEN_FDNAMES");
}
