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
#include <fnmatch.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/types.h>

#include "egret/events.h"
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

/* FNV-1a 64 over the name, as bpf/confine.bpf.c computes it (EGRET_FNV64_*). */
uint64_t sandbox__name_hash(const char *name)
{
	uint64_t h = EGRET_FNV64_OFFSET;

	for (size_t i = 0; name[i] && i < EGRET_CGROUP_NAME_LEN; i++)
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

	if (!e || (!added && (e->flags || e->meta)))
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
	struct sandbox_entry *e = htab__find(&t->tab, &id);

	if (e && e->meta) {
		sandbox_meta__free(e->meta);
		free(e->meta);
	}
	htab__remove(&t->tab, &id);
}

void sandbox_names__free(struct sandbox_names *t)
{
	for (size_t i = 0; i < t->tab.cap; i++) {
		struct sandbox_entry *e = htab__at(&t->tab, i);

		if (e && e->meta) {
			sandbox_meta__free(e->meta);
			free(e->meta);
		}
	}
	htab__free(&t->tab);
}

/* ---- what a registration says of a container ------------------------------------------- */

bool sandbox__valid_registered_name(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > SANDBOX_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)name[i];

		if (c <= ' ' || c >= 0x7f || strchr("{}#=*", c))
			return false;
	}
	return true;
}

bool sandbox__value_ok(const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return false;
	}
	return utf8_valid(v, strlen(v));
}

struct meta_key {
	const char *key;
	size_t off; /* of the const char * in struct sandbox_meta */
};

#define META_KEY(k, f)                              \
	{                                           \
		k, offsetof(struct sandbox_meta, f) \
	}

static const struct meta_key meta_keys[] = {
	META_KEY("name", name),
	META_KEY("cgroup", cgroup),
	META_KEY("container.id", container_id),
	META_KEY("container.name", container_name),
	META_KEY("container.image.name", image),
	META_KEY("container.runtime.name", runtime),
	META_KEY("k8s.pod.name", pod_name),
	META_KEY("k8s.namespace.name", pod_namespace),
	META_KEY("k8s.pod.uid", pod_uid),
	META_KEY("k8s.container.name", k8s_container),
};

static int meta_word(struct sandbox_meta *m, const char *w, char *err, size_t errsz)
{
	const char *eq = strchr(w, '=');
	size_t klen = eq ? (size_t)(eq - w) : 0;

	/* the whole word: a label's key is as much what it says as its value */
	if (!eq || !klen || !sandbox__value_ok(w)) {
		snprintf(err, errsz, "'%.64s': expected KEY=VALUE, the value printable UTF-8", w);
		return -EINVAL;
	}
	if (klen == 6 && !strncmp(w, "exempt", 6)) {
		if (strcmp(eq + 1, "1") || m->exempt) {
			snprintf(err, errsz, "'%s': expected exempt=1, once", w);
			return -EINVAL;
		}
		m->exempt = true;
		return 0;
	}
	if (klen > 6 && !strncmp(w, "label.", 6)) {
		if (m->nlabels == SANDBOX_LABELS_MAX) {
			snprintf(err, errsz, "more than %d labels", SANDBOX_LABELS_MAX);
			return -E2BIG;
		}
		for (unsigned int i = 0; i < m->nlabels; i++) {
			if (!strncmp(m->labels[i], w + 6, klen - 6) &&
			    m->labels[i][klen - 6] == '=') {
				snprintf(err, errsz, "label '%.*s' is given twice",
					 (int)(klen - 6 > 64 ? 64 : klen - 6), w + 6);
				return -EINVAL;
			}
		}
		m->labels[m->nlabels++] = w + 6;
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(meta_keys); i++) {
		const char **f = (const char **)((char *)m + meta_keys[i].off);

		if (strlen(meta_keys[i].key) != klen || strncmp(meta_keys[i].key, w, klen))
			continue;
		if (*f) {
			snprintf(err, errsz, "'%s' is given twice", meta_keys[i].key);
			return -EINVAL;
		}
		*f = eq + 1;
		return 0;
	}
	snprintf(err, errsz, "unknown key '%.*s'", (int)(klen > 64 ? 64 : klen), w);
	return -EINVAL;
}

int sandbox_meta__parse(struct sandbox_meta *m, const char *words, size_t len, char *err,
			size_t errsz)
{
	int ret = 0;

	memset(m, 0, sizeof(*m));
	if (len == 0 || len > SANDBOX_META_WORDS_MAX || words[len - 1] != '\0') {
		snprintf(err, errsz, "a registration is 1 to %d bytes of NUL-terminated words",
			 SANDBOX_META_WORDS_MAX);
		return -E2BIG;
	}
	m->words = malloc(len);
	if (!m->words)
		return -ENOMEM;
	memcpy(m->words, words, len);
	m->len = len;
	for (size_t off = 0; !ret && off < len; off += strlen(m->words + off) + 1)
		ret = meta_word(m, m->words + off, err, errsz);
	if (!ret && m->name && !sandbox__valid_registered_name(m->name)) {
		snprintf(err, errsz,
			 "bad sandbox name '%.64s' (1-255 printable characters, no "
			 "space or any of {}#=*)",
			 m->name);
		ret = -EINVAL;
	}
	if (ret)
		sandbox_meta__free(m);
	return ret;
}

void sandbox_meta__free(struct sandbox_meta *m)
{
	free(m->words);
	memset(m, 0, sizeof(*m));
}

const char *sandbox_meta__label(const struct sandbox_meta *m, const char *key)
{
	size_t klen = strlen(key);

	for (unsigned int i = 0; i < m->nlabels; i++) {
		if (!strncmp(m->labels[i], key, klen) && m->labels[i][klen] == '=')
			return m->labels[i] + klen + 1;
	}
	return NULL;
}

/* ---- policy selectors -------------------------------------------------------------------- */

static const char *const selector_keys[] = { "container", "image", "k8s-namespace", "k8s-pod" };

/* A selector's value: 1-255 printable characters, '*' the only pattern character. */
static bool selector_value_ok(const char *v)
{
	size_t len = strlen(v);

	if (len == 0 || len > SANDBOX_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)v[i];

		if (c <= ' ' || c >= 0x7f || strchr("{}#?[]\\", c))
			return false;
	}
	return true;
}

/* A label selector's KEY: printable, no pattern (as a value, and no '*' either). */
static bool selector_key_ok(const char *k, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)k[i];

		if (c <= ' ' || c >= 0x7f || strchr("{}#?[]\\*", c))
			return false;
	}
	return len > 0;
}

static int selector_out(char *out, size_t size, const char *prefix, const char *sel, char *err,
			size_t errsz)
{
	int len = snprintf(out, size, "%s%s", prefix, sel);

	if (len < 0 || (size_t)len >= size) {
		snprintf(err, errsz, "sandbox selector longer than %zu characters", size - 1);
		return -EINVAL;
	}
	return 0;
}

int sandbox__parse_selector(char *const words[], int n, char *out, size_t size, char *err,
			    size_t errsz)
{
	const char *eq;

	if (n == 2 && !strcmp(words[0], "label")) {
		eq = strchr(words[1], '=');
		if (!eq || !selector_key_ok(words[1], (size_t)(eq - words[1])) ||
		    !selector_value_ok(eq + 1)) {
			snprintf(err, errsz, "expected 'sandbox label KEY=VALUE {'");
			return -EINVAL;
		}
		return selector_out(out, size, "label ", words[1], err, errsz);
	}
	if (n != 1) {
		snprintf(err, errsz,
			 "expected 'sandbox NAME {', 'sandbox KEY=VALUE {' (KEY: container, image, "
			 "k8s-namespace, k8s-pod) or 'sandbox label KEY=VALUE {'");
		return -EINVAL;
	}
	eq = strchr(words[0], '=');
	if (!eq) {
		if (!sandbox__valid_registered_name(words[0])) {
			snprintf(err, errsz,
				 "bad sandbox name '%.64s' (1-255 printable characters, no space "
				 "or any of {}#=*)",
				 words[0]);
			return -EINVAL;
		}
	} else {
		bool known = false;

		for (size_t i = 0; i < ARRAY_SIZE(selector_keys); i++)
			known |= strlen(selector_keys[i]) == (size_t)(eq - words[0]) &&
				 !strncmp(selector_keys[i], words[0], (size_t)(eq - words[0]));
		if (!known) {
			snprintf(
				err, errsz,
				"unknown selector '%.*s' (container, image, k8s-namespace, k8s-pod, "
				"label)",
				(int)(eq - words[0] > 32 ? 32 : eq - words[0]), words[0]);
			return -EINVAL;
		}
		if (!selector_value_ok(eq + 1)) {
			snprintf(err, errsz, "bad value in '%.64s' (printable, '*' for any)",
				 words[0]);
			return -EINVAL;
		}
	}
	return selector_out(out, size, "", words[0], err, errsz);
}

int sandbox__parse_selector_text(const char *text, char *out, size_t size, char *err, size_t errsz)
{
	char copy[SANDBOX_SELECTOR_MAX + 1], *words[3], *save = NULL;
	int n = 0;

	if (strlen(text) >= sizeof(copy)) {
		snprintf(err, errsz, "sandbox selector longer than %d characters",
			 SANDBOX_SELECTOR_MAX);
		return -EINVAL;
	}
	snprintf(copy, sizeof(copy), "%s", text);
	for (char *w = strtok_r(copy, " \t", &save); w && n < 3; w = strtok_r(NULL, " \t", &save))
		words[n++] = w;
	if (n == 0 || n == 3) {
		snprintf(err, errsz, "bad sandbox selector '%.64s'", text);
		return -EINVAL;
	}
	return sandbox__parse_selector(words, n, out, size, err, errsz);
}

bool sandbox__selector_is_name(const char *selector)
{
	return !strchr(selector, '=');
}

/* Docker's normal form of an image reference: a registry first (docker.io when the first
 * component names none: no '.' or ':' in it and not localhost; index.docker.io is docker.io),
 * library/ for docker.io's own images, :latest when it has neither tag nor digest (nor, in a
 * pattern, a '*' in its last component, which may stand for the tag). false when it does not
 * fit out.
 */
static bool image_normal(const char *ref, char *out, size_t size)
{
	const char *slash = strchr(ref, '/'), *last = strrchr(ref, '/'), *rest = ref;
	size_t first = slash ? (size_t)(slash - ref) : 0;
	bool registry = slash && (memchr(ref, '.', first) || memchr(ref, ':', first) ||
				  (first == 9 && !strncmp(ref, "localhost", 9)));
	bool tagged = strpbrk(last ? last + 1 : ref, ":*") || strchr(ref, '@');
	int n;

	if (registry && ((first == 9 && !strncmp(ref, "docker.io", 9)) ||
			 (first == 15 && !strncmp(ref, "index.docker.io", 15)))) {
		registry = false;
		rest = slash + 1;
	}
	n = snprintf(out, size, "%s%s%s%s", registry ? "" : "docker.io/",
		     !registry && !strchr(rest, '/') ? "library/" : "", rest,
		     tagged ? "" : ":latest");
	return n >= 0 && (size_t)n < size;
}

/* pattern against the image as given and in its normal form, and in its own normal form
 * against the image's; an image too long for its normal form to fit only as given
 */
static bool image_matches(const char *pattern, const char *image)
{
	char np[1024], ni[1024];

	if (!fnmatch(pattern, image, 0))
		return true;
	if (!image_normal(image, ni, sizeof(ni)))
		return false;
	return !fnmatch(pattern, ni, 0) ||
	       (image_normal(pattern, np, sizeof(np)) && !fnmatch(np, ni, 0));
}

static bool value_matches(const char *pattern, const char *value)
{
	return value && !fnmatch(pattern, value, 0);
}

bool sandbox__selects(const char *selector, const char *name, const struct sandbox_meta *meta)
{
	const char *eq = strchr(selector, '=');
	size_t klen = eq ? (size_t)(eq - selector) : 0;

	if (!eq)
		return name && !strcmp(selector, name);
	if (!meta)
		return false;
	if (!strncmp(selector, "label ", 6)) {
		char key[SANDBOX_SELECTOR_MAX];

		snprintf(key, sizeof(key), "%.*s", (int)(klen - 6), selector + 6);
		return value_matches(eq + 1, sandbox_meta__label(meta, key));
	}
	if (klen == 5 && !strncmp(selector, "image", 5))
		return meta->image && image_matches(eq + 1, meta->image);
	if (klen == 9 && !strncmp(selector, "container", 9))
		return value_matches(eq + 1, meta->container_name) ||
		       value_matches(eq + 1, meta->container_id);
	if (klen == 13 && !strncmp(selector, "k8s-namespace", 13))
		return value_matches(eq + 1, meta->pod_namespace);
	if (klen == 7 && !strncmp(selector, "k8s-pod", 7))
		return value_matches(eq + 1, meta->pod_name);
	return false;
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
