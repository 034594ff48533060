/* apt's lists, indexed once and kept while in use; see aptlist.h. */
#include <linux/types.h>

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <stdio.h>
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
#define HELPER_MS    5000	  /* a decompressor gets this long for a list */
#define LISTS_CACHED 8
#define LIST_IDLE_NS (60ull * 1000000000ull) /* an unused list is dropped after this */

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

/* ---- compressed lists ------------------------------------------------------------------------ */

#define LZ4_MAGIC      0x184D2204u
#define LZ4_SKIPPABLE  0x184D2A50u /* ...to 0x184D2A5F: skippable frames */
#define LZ4_FLG_BCSUM  0x10u	   /* a checksum after each block */
#define LZ4_FLG_SIZE   0x08u	   /* the content size in the header */
#define LZ4_FLG_CCSUM  0x04u	   /* a checksum after the last block */
#define LZ4_FLG_DICTID 0x01u
#define LZ4_RAW_BLOCK  0x80000000u /* a block stored as is */
#define LZ4_MIN_MATCH  4

static uint32_t le32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* a length's continuation bytes (255 means more): false when the input ends first */
static bool lz4_more(const unsigned char *in, size_t len, size_t *i, size_t *n)
{
	unsigned char b;

	do {
		if (*i >= len)
			return false;
		b = in[(*i)++];
		*n += b;
	} while (b == 255);
	return true;
}

/* One block's sequences appended to out[*n..cap): literals, then a match copied from what is
 * already out (the previous blocks too, for linked blocks). Every length and offset is checked
 * against what is there: false when the block lies.
 */
static bool lz4_block(const unsigned char *in, size_t len, char *out, size_t *n, size_t cap)
{
	size_t i = 0, o = *n;

	while (i < len) {
		unsigned token = in[i++];
		size_t lit = token >> 4, match = token & 15, off;

		if (lit == 15 && !lz4_more(in, len, &i, &lit))
			return false;
		if (lit > len - i || lit > cap - o)
			return false;
		memcpy(out + o, in + i, lit);
		o += lit;
		i += lit;
		if (i == len)
			break; /* the last sequence is literals only */
		if (len - i < 2)
			return false;
		off = (size_t)in[i] | (size_t)in[i + 1] << 8;
		i += 2;
		if (match == 15 && !lz4_more(in, len, &i, &match))
			return false;
		match += LZ4_MIN_MATCH;
		if (!off || off > o || match > cap - o)
			return false;
		for (size_t k = 0; k < match; k++, o++) /* may overlap itself: byte by byte */
			out[o] = out[o - off];
	}
	*n = o;
	return true;
}

/* an lz4 frame's header at in[*i]: the largest block it announces, 0 when it is not one */
static size_t lz4_header(const unsigned char *in, size_t len, size_t *i, unsigned *flg)
{
	unsigned bd, size_id;
	size_t hdr;

	if (len - *i < 3)
		return 0;
	*flg = in[*i];
	bd = in[*i + 1];
	size_id = (bd >> 4) & 7;
	if ((*flg >> 6) != 1 || size_id < 4)
		return 0; /* version 01; block sizes 64 KiB (4) to 4 MiB (7) */
	hdr = 2 + (*flg & LZ4_FLG_SIZE ? 8 : 0) + (*flg & LZ4_FLG_DICTID ? 4 : 0) + 1;
	if (len - *i < hdr)
		return 0;
	*i += hdr;
	return (size_t)1 << (8 + 2 * size_id);
}

char *apt_list__lz4(const unsigned char *in, size_t len, size_t max, size_t *outlen)
{
	size_t i = 0, n = 0, cap = 0;
	char *out = NULL;

	while (i < len) {
		uint32_t magic, bs;
		size_t bmax;
		unsigned flg = 0;

		if (len - i < 8)
			goto bad;
		magic = le32(in + i);
		i += 4;
		if ((magic & 0xFFFFFFF0u) == LZ4_SKIPPABLE) {
			bs = le32(in + i);
			if (bs > len - i - 4)
				goto bad;
			i += 4 + (size_t)bs;
			continue;
		}
		if (magic != LZ4_MAGIC || !(bmax = lz4_header(in, len, &i, &flg)))
			goto bad;
		for (;;) {
			size_t want;

			if (len - i < 4)
				goto bad;
			bs = le32(in + i);
			i += 4;
			if (!bs)
				break; /* the end mark */
			want = bs & ~LZ4_RAW_BLOCK;
			if (want > bmax || want > len - i)
				goto bad;
			/* room for the largest block (and the NUL), or up to max */
			if (cap - n < bmax + 1 &&
			    ARRAY_RESERVE(out, cap,
					  n + bmax + 1 < max + 1 ? n + bmax + 1 : max + 1))
				goto bad;
			if (bs & LZ4_RAW_BLOCK) {
				if (want > max - n)
					goto bad;
				memcpy(out + n, in + i, want);
				n += want;
			} else if (!lz4_block(in + i, want, out, &n,
					      cap - 1 < max ? cap - 1 : max)) {
				goto bad;
			}
			i += want;
			if (flg & LZ4_FLG_BCSUM) {
				if (len - i < 4)
					goto bad;
				i += 4;
			}
		}
		if (flg & LZ4_FLG_CCSUM) {
			if (len - i < 4)
				goto bad;
			i += 4;
		}
	}
	if (!out && ARRAY_RESERVE(out, cap, 1))
		return NULL;
	out[n] = '\0';
	*outlen = n;
	return out;
bad:
	free(out);
	return NULL;
}

/* the host's decompressors for the other formats apt may keep, reading standard input */
static const struct decompressor {
	const char *ext;
	const char *program;
	const char *args[3];
} decompressors[] = {
	{ ".gz", "gzip", { "-dcq" } },
	{ ".xz", "xz", { "-dcq" } },
	{ ".lzma", "xz", { "-dcq", "--format=lzma" } },
	{ ".zst", "zstd", { "-dcq" } },
	{ ".bz2", "bzip2", { "-dcq" } },
};

static const struct decompressor *decompressor_of(const char *path, char *program, size_t size)
{
	static const char *const dirs[] = { "/usr/bin/", "/bin/" };

	for (size_t i = 0; i < ARRAY_SIZE(decompressors); i++) {
		if (!pkg_ends_with(path, decompressors[i].ext))
			continue;
		for (size_t d = 0; d < ARRAY_SIZE(dirs); d++) {
			snprintf(program, size, "%s%s", dirs[d], decompressors[i].program);
			if (!access(program, X_OK))
				return &decompressors[i];
		}
		return NULL;
	}
	return NULL;
}

/* fd (the list, opened in the sandbox's root) through the host's decompressor as its stdin */
static char *helper_cat(int fd, const char *path, size_t *len)
{
	char program[64], *argv[5], *buf = NULL;
	const struct decompressor *d = decompressor_of(path, program, sizeof(program));
	posix_spawn_file_actions_t fa;
	int pfd[2], status, argc = 0;
	pid_t pid = -1;

	if (!d || pipe2(pfd, O_CLOEXEC))
		return NULL;
	argv[argc++] = program;
	for (size_t i = 0; i < ARRAY_SIZE(d->args) && d->args[i]; i++)
		argv[argc++] = (char *)d->args[i];
	argv[argc] = NULL;
	if (!posix_spawn_file_actions_init(&fa)) {
		if (!posix_spawn_file_actions_adddup2(&fa, fd, 0) &&
		    !posix_spawn_file_actions_adddup2(&fa, pfd[1], 1) &&
		    !posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0) &&
		    posix_spawn(&pid, program, &fa, NULL, argv, (char *[]){ NULL }))
			pid = -1;
		posix_spawn_file_actions_destroy(&fa);
	}
	close(pfd[1]);
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

/* A compressed list, from its descriptor: lz4 here, the rest by the host's tools. */
static char *list_decompress(int fd, const char *path, size_t *len)
{
	size_t n = 0;
	char *raw, *text;

	if (!pkg_ends_with(path, ".lz4"))
		return helper_cat(fd, path, len);
	raw = metafile__read_fd(fd, LIST_MAX, 0, &n);
	if (!raw)
		return NULL;
	text = apt_list__lz4((const unsigned char *)raw, n, LIST_MAX, len);
	free(raw);
	return text;
}

/* ---- the index ------------------------------------------------------------------------------- */

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

const struct apt_list *apt_list__get(int root, const char *path, bool compressed)
{
	struct apt_list *l = &lists[0];
	struct stat st;
	size_t len = 0;
	int fd;

	if (strlen(path) >= sizeof(l->path))
		return NULL;
	fd = metafile__open(root, path, NULL);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st)) {
		close(fd);
		return NULL;
	}
	/* the same path and the same file (roots differ in their devices or inodes) */
	for (int i = 0; i < LISTS_CACHED; i++) {
		if (lists[i].text && !strcmp(lists[i].path, path)) {
			if (same_file(&lists[i].st, &st)) {
				close(fd);
				lists[i].used_ns = now_ns(CLOCK_MONOTONIC);
				return &lists[i];
			}
			list_drop(&lists[i]); /* rewritten since (apt update), or another root's */
		}
		if (lists[i].used_ns < l->used_ns)
			l = &lists[i];
	}
	list_drop(l);
	l->text = compressed ? list_decompress(fd, path, &len)
			     : metafile__read_fd(fd, LIST_MAX, 0, &len);
	close(fd);
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
