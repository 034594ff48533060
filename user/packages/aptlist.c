/* apt's lists, indexed once and kept while in use; see aptlist.h. */
#include <linux/types.h>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "aptlist.h"
#include "array.h"
#include "egret/fnv.h"
#include "metafile.h"
#include "pkgmeta.h"
#include "util.h"

#define LIST_MAX     (256u << 20) /* apt lists (Debian main is ~50 MiB uncompressed) */
#define HELPER_MS    5000	  /* apt-helper gets this long to decompress a list */
#define LISTS_CACHED 8
#define LIST_IDLE_NS (60ull * 1000000000ull) /* an unused list is dropped after this */

static const char apt_helper[] = "/usr/lib/apt/apt-helper";

struct list_entry {
	uint64_t hash;
	uint32_t off;
};

struct apt_list {
	char path[PATH_MAX];
	struct stat st;
	char *text;
	struct list_entry *ix;
	size_t nix;
	uint64_t used_ns;
};

static struct apt_list lists[LISTS_CACHED];

static uint64_t name_hash(const char *s, size_t n)
{
	uint64_t h = EGRET_FNV64_OFFSET;

	for (size_t i = 0; i < n; i++)
		h = egret_fnv64_byte(h, (__u8)s[i]);
	return h;
}

static int by_hash(const void *a, const void *b)
{
	const struct list_entry *x = a, *y = b;

	if (x->hash != y->hash)
		return x->hash < y->hash ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

static void list_drop(struct apt_list *l)
{
	free(l->text);
	free(l->ix);
	memset(l, 0, sizeof(*l));
}

static bool same_file(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* A compressed apt list (lz4, gz, xz, zstd, as apt was configured to keep them), through
 * apt's own helper; NULL when there is none.
 */
static char *apt_cat(const char *path, size_t *len)
{
	char *buf = NULL;
	int pfd[2], status;
	pid_t pid;
	int fd = metafile__open(path, NULL);

	if (fd < 0)
		return NULL;
	close(fd);
	if (access(apt_helper, X_OK) || pipe2(pfd, O_CLOEXEC))
		return NULL;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_WRONLY);

		dup2(pfd[1], 1);
		dup2(null, 2);
		execl(apt_helper, apt_helper, "cat-file", path, (char *)NULL);
		_exit(127);
	}
	close(pfd[1]);
	/* the file may have become a FIFO since it was checked: the helper then waits */
	if (pid > 0)
		buf = metafile__read_fd(pfd[0], LIST_MAX,
					now_ns(CLOCK_MONOTONIC) + HELPER_MS * 1000000ull, len);
	close(pfd[0]);
	if (pid > 0) {
		kill(pid, SIGKILL); /* done with it, or it is stuck */
		waitpid(pid, &status, 0);
	}
	return buf;
}

static bool list_index(struct apt_list *l)
{
	size_t cap = 0;

	for (const char *s = l->text; s && *s; s = metafile__next_stanza(s)) {
		const char *name = pkg_after(s, STANZA_START);

		if (!name)
			continue;
		if (ARRAY_RESERVE(l->ix, cap, l->nix + 1))
			return false;
		l->ix[l->nix].hash = name_hash(name, strcspn(name, "\n"));
		l->ix[l->nix++].off = (uint32_t)(s - l->text);
	}
	if (l->nix)
		qsort(l->ix, l->nix, sizeof(*l->ix), by_hash);
	return true;
}

const struct apt_list *apt_list__get(const char *path, bool compressed)
{
	struct apt_list *l = &lists[0];
	struct stat st;
	size_t len = 0;

	if (strlen(path) >= sizeof(l->path) || stat(path, &st) || !S_ISREG(st.st_mode))
		return NULL;
	for (int i = 0; i < LISTS_CACHED; i++) {
		if (lists[i].text && !strcmp(lists[i].path, path)) {
			if (same_file(&lists[i].st, &st)) {
				lists[i].used_ns = now_ns(CLOCK_MONOTONIC);
				return &lists[i];
			}
			list_drop(&lists[i]);
		}
		if (lists[i].used_ns < l->used_ns)
			l = &lists[i];
	}
	list_drop(l);
	l->text = compressed ? apt_cat(path, &len) : metafile__slurp_max(path, LIST_MAX, &len);
	if (!l->text)
		return NULL;
	if (!list_index(l)) {
		list_drop(l);
		return NULL;
	}
	memcpy(l->path, path, strlen(path) + 1);
	l->st = st;
	l->used_ns = now_ns(CLOCK_MONOTONIC);
	return l;
}

bool apt_list__stanza(const struct apt_list *l, const char *pkg, const char *version,
		      const char *field, char *out, size_t size)
{
	uint64_t h = name_hash(pkg, strlen(pkg));
	size_t lo = 0, hi = l->nix;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (l->ix[mid].hash < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < l->nix && l->ix[lo].hash == h; lo++) {
		if (metafile__stanza_at(l->text + l->ix[lo].off, pkg, version, field, out, size))
			return true;
	}
	return false;
}

void pkgmeta__expire(uint64_t now)
{
	for (int i = 0; i < LISTS_CACHED; i++) {
		if (lists[i].text && (!now || now - lists[i].used_ns >= LIST_IDLE_NS))
			list_drop(&lists[i]);
	}
}
