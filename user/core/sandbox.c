/* Sandbox names and cgroups. A sandbox is a direct child cgroup of egret's root; its name is the
 * directory name and its id the cgroup id (the directory's inode). The table is filled by
 * scanning the root, again on a miss, but for the same id at most every SCAN_INTERVAL_NS so a
 * flood of events from a removed sandbox does not turn into a flood of directory scans. The
 * throttle is per id: neither an owner's own scans (the engine's, at a cgroup change) nor a miss
 * for another sandbox may make the lookup of a sandbox created a moment ago give up. egretctl run creates a
 * sandbox's cgroup and removes it again when its command is done.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "egret/fnv.h"
#include "sandbox.h"
#include "util.h"

#define SCAN_INTERVAL_NS 100000000ull

bool sandbox__valid_name(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > SANDBOX_NAME_MAX)
		return false;
	if (!((name[0] >= 'a' && name[0] <= 'z') || (name[0] >= 'A' && name[0] <= 'Z') ||
	      (name[0] >= '0' && name[0] <= '9')))
		return false;
	for (size_t i = 1; i < len; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '-' || c == '_' || c == '.'))
			return false;
	}
	return true;
}

void sandbox__generate_name(char *out, size_t size)
{
	char hex[17];

	random_hex(hex, 4);
	snprintf(out, size, "sbx-%s", hex);
}

/* Create <root>/NAME; *created says whether this call made it (false: it was there). */
int sandbox__create(const char *root, const char *name, bool *created)
{
	char dir[PATH_MAX];
	int err = join_path(dir, sizeof(dir), root, name);

	*created = false;
	if (err)
		return err;
	if (mkdir(dir, 0755) == 0) {
		*created = true;
		return 0;
	}
	return errno == EEXIST ? 0 : -errno;
}

/* rmdir every empty cgroup below dirfd's directory, deepest first (the command may have made
 * cgroups of its own inside the sandbox).
 */
static void remove_children(int dirfd, unsigned int depth)
{
	DIR *d;
	struct dirent *de;

	if (depth > 32 || !(d = fdopendir(dirfd)))
		return;
	while ((de = readdir(d))) {
		int sub;

		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		sub = openat(dirfd, de->d_name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (sub < 0)
			continue;
		remove_children(sub, depth + 1);
		unlinkat(dirfd, de->d_name, AT_REMOVEDIR);
	}
	closedir(d);
}

/* Remove <root>/NAME and the cgroups in it, waiting up to wait_ms for processes still in it
 * (descendants of a command that has exited) to leave. 0, -EBUSY when some stayed, -errno.
 */
int sandbox__remove(const char *root, const char *name, unsigned int wait_ms)
{
	char dir[PATH_MAX];
	int err = join_path(dir, sizeof(dir), root, name);
	uint64_t deadline = now_ns(CLOCK_MONOTONIC) + wait_ms * 1000000ull;

	if (err)
		return err;
	for (;;) {
		int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		if (fd < 0)
			return errno == ENOENT ? 0 : -errno;
		remove_children(fd, 0);
		if (rmdir(dir) == 0 || errno == ENOENT)
			return 0;
		if (errno != EBUSY)
			return -errno;
		if (now_ns(CLOCK_MONOTONIC) >= deadline)
			return -EBUSY;
		poll(NULL, 0, 10);
	}
}

/* FNV-1a 64 over the name, as bpf/lib/confine.bpf.h computes it (EGRET_FNV64_*). */
uint64_t sandbox__name_hash(const char *name)
{
	uint64_t h = EGRET_FNV64_OFFSET;

	for (size_t i = 0; name[i] && i < 64; i++)
		h = egret_fnv64_byte(h, (__u8)name[i]);
	return h;
}

int sandbox_names__init(struct sandbox_names *t, const char *root)
{
	memset(t, 0, sizeof(*t));
	snprintf(t->root, sizeof(t->root), "%s", root);
	return htab__init(&t->tab, sizeof(struct sandbox_entry), sizeof(uint64_t), 256);
}

void sandbox_names__set(struct sandbox_names *t, uint64_t id, const char *name)
{
	bool added;
	struct sandbox_entry *e = htab__insert(&t->tab, &id, &added);

	if (!e || (!added && e->flags))
		return; /* no memory: left unnamed; an entry in use keeps the name it is used under */
	snprintf(e->name, sizeof(e->name), "%.*s", SANDBOX_NAME_MAX, name);
}

/* Fill the table from the root cgroup's children. */
void sandbox_names__scan(struct sandbox_names *t)
{
	char path[8192];
	struct dirent *de;
	struct stat st;
	DIR *d = opendir(t->root);

	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		snprintf(path, sizeof(path), "%s/%s", t->root, de->d_name);
		if (stat(path, &st) == 0 && S_ISDIR(st.st_mode))
			sandbox_names__set(t, st.st_ino, de->d_name);
	}
	closedir(d);
}

/* Whether a lookup scanned for id in vain less than SCAN_INTERVAL_NS ago; if not, id is
 * recorded as scanned for now (in place of the oldest record). */
static bool missed_lately(struct sandbox_names *t, uint64_t id)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);
	size_t n = sizeof(t->missed) / sizeof(t->missed[0]);

	for (size_t i = 0; i < n; i++) {
		if (t->missed[i].id == id && now - t->missed[i].ns < SCAN_INTERVAL_NS)
			return true;
	}
	t->missed[t->missed_next].id = id;
	t->missed[t->missed_next].ns = now;
	t->missed_next = (t->missed_next + 1) % n;
	return false;
}

/* The sandbox's name, "" for the root cgroup itself, NULL when unknown. */
const char *sandbox_names__lookup(struct sandbox_names *t, uint64_t id)
{
	const struct sandbox_entry *e;

	if (!id)
		return "";
	e = htab__find(&t->tab, &id);
	if (e)
		return e->name;
	if (missed_lately(t, id))
		return NULL;
	sandbox_names__scan(t);
	e = htab__find(&t->tab, &id);
	return e ? e->name : NULL;
}

/* The name of id without scanning; NULL when the table does not have it. */
const char *sandbox_names__get(const struct sandbox_names *t, uint64_t id)
{
	const struct sandbox_entry *e = sandbox_names__entry(t, id);

	return e ? e->name : NULL;
}

struct sandbox_entry *sandbox_names__entry(const struct sandbox_names *t, uint64_t id)
{
	return htab__find(&t->tab, &id);
}

struct sandbox_entry *sandbox_names__at(const struct sandbox_names *t, size_t i)
{
	return htab__at(&t->tab, i);
}

void sandbox_names__del(struct sandbox_names *t, uint64_t id)
{
	htab__remove(&t->tab, &id);
}

void sandbox_names__free(struct sandbox_names *t)
{
	htab__free(&t->tab);
}

static const char *const ns_names[] = { "user", "pid", "mount", "ipc", "uts", "cgroup", "net" };

void sandbox_spec__default(struct sandbox_spec *s)
{
	*s = (struct sandbox_spec){ .ns = SANDBOX_NS_DEFAULT,
				    .seccomp = true,
				    .no_new_privs = true };
}

static int ns_bit(const char *name, size_t len)
{
	for (size_t i = 0; i < sizeof(ns_names) / sizeof(ns_names[0]); i++) {
		if (strlen(ns_names[i]) == len && !strncmp(ns_names[i], name, len))
			return 1 << i;
	}
	return len == 3 && !strncmp(name, "all", 3) ? (int)SANDBOX_NS_ALL : 0;
}

int sandbox_spec__parse_ns(const char *list, unsigned int *mask, const char **bad)
{
	*mask = 0;
	for (const char *p = list; *p;) {
		size_t len = strcspn(p, ",");
		int bit = ns_bit(p, len);

		if (!bit) {
			*bad = p;
			return -EINVAL;
		}
		*mask |= (unsigned int)bit;
		p += len + (p[len] == ',');
	}
	return 0;
}

void sandbox_spec__ns_names(unsigned int mask, char *out, size_t size)
{
	size_t off = 0;

	out[0] = '\0';
	for (size_t i = 0; i < sizeof(ns_names) / sizeof(ns_names[0]); i++) {
		if (!(mask & (1u << i)) || off >= size)
			continue;
		off += (size_t)snprintf(out + off, size - off, "%s%s", off ? "," : "", ns_names[i]);
	}
}

void sandbox_spec__words(const struct sandbox_spec *s, char words[][SANDBOX_SPEC_WORD])
{
	char ns[64];

	sandbox_spec__ns_names(s->ns, ns, sizeof(ns));
	snprintf(words[0], SANDBOX_SPEC_WORD, "ns=%s", ns);
	snprintf(words[1], SANDBOX_SPEC_WORD, "uid=%u", s->uid);
	snprintf(words[2], SANDBOX_SPEC_WORD, "gid=%u", s->gid);
	snprintf(words[3], SANDBOX_SPEC_WORD, "ids=%u", s->ids);
	snprintf(words[4], SANDBOX_SPEC_WORD, "seccomp=%s", s->seccomp ? "default" : "none");
	snprintf(words[5], SANDBOX_SPEC_WORD, "nnp=%d", s->no_new_privs);
	snprintf(words[6], SANDBOX_SPEC_WORD, "privileged=%d", s->privileged);
}

static int parse_u32(const char *v, uint32_t *out)
{
	uint64_t n;
	int err = parse_u64(v, UINT32_MAX, &n);

	if (!err)
		*out = (uint32_t)n;
	return err;
}

static int parse_flag(const char *v, bool *out)
{
	if (strcmp(v, "0") && strcmp(v, "1"))
		return -EINVAL;
	*out = v[0] == '1';
	return 0;
}

int sandbox_spec__parse_word(struct sandbox_spec *s, const char *word)
{
	const char *v = strchr(word, '=');
	const char *bad;
	size_t klen;

	if (!v)
		return -EINVAL;
	klen = (size_t)(v++ - word);
	if (klen == 2 && !strncmp(word, "ns", 2))
		return sandbox_spec__parse_ns(v, &s->ns, &bad);
	if (klen == 3 && !strncmp(word, "uid", 3))
		return parse_u32(v, &s->uid);
	if (klen == 3 && !strncmp(word, "gid", 3))
		return parse_u32(v, &s->gid);
	if (klen == 3 && !strncmp(word, "ids", 3))
		return parse_u32(v, &s->ids);
	if (klen == 7 && !strncmp(word, "seccomp", 7)) {
		if (strcmp(v, "default") && strcmp(v, "none"))
			return -EINVAL;
		s->seccomp = v[0] == 'd';
		return 0;
	}
	if (klen == 3 && !strncmp(word, "nnp", 3))
		return parse_flag(v, &s->no_new_privs);
	if (klen == 10 && !strncmp(word, "privileged", 10))
		return parse_flag(v, &s->privileged);
	return -EINVAL;
}
