/* The on-disk spool; see spool.h. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "egret/v1/events.pb-c.h"
#include "log.h"
#include "spool.h"
#include "util.h"
#include "wire.h"

#define SEG_SUFFIX ".seg"
#define SCAN_CHUNK (1u << 20)
#define SEG_MIN	   (16u << 10)
#define SEG_MAX	   (64u << 20)

static void seg_path(const struct spool *s, uint64_t id, char *out, size_t size)
{
	snprintf(out, size, "%s/%020llu" SEG_SUFFIX, s->dir, (unsigned long long)id);
}

static struct spool_seg *seg_add(struct spool *s, uint64_t id)
{
	if (s->nsegs == s->segs_cap) {
		size_t cap = s->segs_cap ? s->segs_cap * 2 : 16;
		struct spool_seg *n = realloc(s->segs, cap * sizeof(*n));

		if (!n)
			return NULL;
		s->segs = n;
		s->segs_cap = cap;
	}
	memset(&s->segs[s->nsegs], 0, sizeof(s->segs[0]));
	s->segs[s->nsegs].id = id;
	return &s->segs[s->nsegs++];
}

static struct spool_seg *tail(struct spool *s)
{
	return &s->segs[s->nsegs - 1];
}

static ssize_t seg_index(const struct spool *s, uint64_t id)
{
	/* segments are few and sorted; the tail is the common case */
	for (size_t i = s->nsegs; i-- > 0;) {
		if (s->segs[i].id == id)
			return (ssize_t)i;
		if (s->segs[i].id < id)
			break;
	}
	return -1;
}

const struct spool_seg *spool__seg(const struct spool *s, uint64_t id)
{
	ssize_t i = seg_index(s, id);

	return i < 0 ? NULL : &s->segs[i];
}

/* An Event as this spool writes it: decodable, with a stream id and a seq. */
static bool record_ok(const uint8_t *msg, size_t len, uint64_t *seq, char stream_id[33])
{
	Egret__V1__Event *ev = egret__v1__event__unpack(NULL, len, msg);
	bool ok = ev && ev->seq && ev->stream_id && strlen(ev->stream_id) == 32;

	if (ok) {
		*seq = ev->seq;
		memcpy(stream_id, ev->stream_id, 33);
	}
	if (ev)
		egret__v1__event__free_unpacked(ev, NULL);
	return ok;
}

/* Damage for a Loss event; past SPOOL_MAX_DAMAGE it is folded into the last one (the log has
 * each).
 */
static void note_damage(struct spool *s, uint64_t seg, uint64_t off, uint64_t bytes,
			const char *why, const char *moved, const char *to)
{
	struct spool_damage *d;

	if (moved)
		log_err("spool: %s/%s (%llu bytes) %s; moved to %s/%s", s->dir, moved,
			(unsigned long long)bytes, why, s->dir, to);
	else
		log_err("spool: segment %llu: %llu bytes from offset %llu are %s; dropped",
			(unsigned long long)seg, (unsigned long long)bytes, (unsigned long long)off,
			why);
	if (s->ndamage == SPOOL_MAX_DAMAGE) {
		d = &s->damage[SPOOL_MAX_DAMAGE - 1];
		d->more++;
		d->bytes += bytes;
		return;
	}
	d = &s->damage[s->ndamage++];
	memset(d, 0, sizeof(*d));
	d->seg = seg;
	d->offset = off;
	d->bytes = bytes;
	snprintf(d->why, sizeof(d->why), "%s", why);
	snprintf(d->file, sizeof(d->file), "%s", moved ? moved : "");
	snprintf(d->moved_to, sizeof(d->moved_to), "%s", to ? to : "");
}

void spool__damage_text(const struct spool_damage *d, char *buf, size_t size)
{
	int n;

	if (d->file[0])
		n = snprintf(buf, size, "spool file %s, %llu bytes, %s: moved to %s", d->file,
			     (unsigned long long)d->bytes, d->why, d->moved_to);
	else
		n = snprintf(buf, size, "spool segment %llu, offset %llu: %llu bytes %s",
			     (unsigned long long)d->seg, (unsigned long long)d->offset,
			     (unsigned long long)d->bytes, d->why);
	if (d->more && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "; and %u more (see egretd's log)", d->more);
}

int spool__seg_name(const char *name, uint64_t *id)
{
	size_t n = strlen(name), digits = n - strlen(SEG_SUFFIX);
	uint64_t v = 0;

	if (n < strlen(SEG_SUFFIX) || strcmp(name + digits, SEG_SUFFIX))
		return 0;
	if (digits != 20)
		return -1;
	for (size_t i = 0; i < digits; i++) {
		unsigned int d = (unsigned int)(name[i] - '0');

		if (d > 9 || v > (UINT64_MAX - d) / 10)
			return -1;
		v = v * 10 + d;
	}
	*id = v;
	return 1;
}

/* rename(2) that never replaces what is there (-EEXIST) */
static int move_noreplace(int dfd, const char *from, const char *to)
{
	if (!renameat2(dfd, from, dfd, to, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL)
		return -errno;
	/* a file system without RENAME_NOREPLACE: egretd is the only writer here */
	if (!faccessat(dfd, to, F_OK, AT_SYMLINK_NOFOLLOW))
		return -EEXIST;
	return renameat(dfd, from, dfd, to) ? -errno : 0;
}

/* Move DIR/name out of the spool's way, to DIR/damaged/ (or, failing that, DIR/name.damaged),
 * and report it. An error only when it cannot be moved at all: the directory is unusable.
 */
static int set_aside(struct spool *s, const char *name, uint64_t id, const char *why)
{
	char to[NAME_MAX + 32];
	uint64_t bytes = 0;
	struct stat st;
	int dfd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = -EEXIST;

	if (dfd < 0)
		return -errno;
	if (!fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) && S_ISREG(st.st_mode))
		bytes = (uint64_t)st.st_size;
	if (mkdirat(dfd, "damaged", 0700) && errno != EEXIST)
		err = -errno;
	for (int i = 0; i < 100 && err == -EEXIST; i++) {
		snprintf(to, sizeof(to), i ? "damaged/%s.%d" : "damaged/%s", name, i);
		err = move_noreplace(dfd, name, to);
	}
	for (int i = 0; i < 100 && err; i++) {
		snprintf(to, sizeof(to), i ? "%s.damaged.%d" : "%s.damaged", name, i);
		err = move_noreplace(dfd, name, to);
		if (err != -EEXIST)
			break;
	}
	close(dfd);
	if (err) {
		log_err("spool: %s/%s %s, and it cannot be moved aside: %s", s->dir, name, why,
			strerror(-err));
		return err;
	}
	note_damage(s, id, 0, bytes, why, name, to);
	return 0;
}

/* Walk a segment left by an earlier run: its metadata, and where it stops being whole Events.
 * Anything after that point is cut off (and reported). 1 with why set when the file cannot
 * be a segment at all (not a regular file, unreadable), -ENOMEM.
 */
static int check_segment(struct spool *s, struct spool_seg *seg, char *why, size_t whysz)
{
	char path[PATH_MAX + 32];
	uint8_t *buf = malloc(SCAN_CHUNK);
	uint64_t off = 0, size;
	size_t have = 0;
	const char *bad = NULL;
	struct stat st;
	int fd, err = 0;

	seg_path(s, seg->id, path, sizeof(path));
	fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	if (!buf) {
		err = -ENOMEM;
		goto out;
	}
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		if (fd < 0 && errno == ELOOP)
			snprintf(why, whysz, "is a symbolic link");
		else if (fd < 0)
			snprintf(why, whysz, "cannot be opened: %s", strerror(errno));
		else
			snprintf(why, whysz, "is not a regular file");
		err = 1;
		goto out;
	}
	size = (uint64_t)st.st_size;
	while (!bad && off + have < size) {
		ssize_t n = pread(fd, buf + have, SCAN_CHUNK - have, (off_t)(off + have));
		size_t used = 0;

		if (n <= 0) {
			snprintf(why, whysz, "cannot be read: %s",
				 n < 0 ? strerror(errno) : "shorter than it was");
			err = 1;
			goto out;
		}
		have += (size_t)n;
		for (;;) {
			size_t total, msg;
			int r = wire__frame(buf + used, have - used, &total, &msg);
			uint64_t seq;
			char sid[33];

			if (r < 0) {
				bad = "not an event record (bad length prefix)";
				break;
			}
			if (r == 0) {
				/* a record longer than the chunk cannot be one of ours */
				if (used == 0 && have == SCAN_CHUNK)
					bad = "not an event record (too long)";
				break;
			}
			if (!record_ok(buf + used + msg, total - msg, &seq, sid)) {
				bad = "not an egret event";
				break;
			}
			if (!seg->records++) {
				seg->first_seq = seq;
				memcpy(seg->stream_id, sid, sizeof(sid));
			}
			seg->last_seq = seq;
			used += total;
		}
		off += used;
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	if (!bad && off < size)
		bad = "a record cut short (written when egretd stopped)";
	if (bad) {
		note_damage(s, seg->id, off, size - off, bad, NULL, NULL);
		/* if it cannot be cut, nothing past off is read anyway */
		if (ftruncate(fd, (off_t)off))
			log_err("spool: cannot cut %s at %llu: %s", path, (unsigned long long)off,
				strerror(errno));
	}
	seg->bytes = off;
out:
	if (fd >= 0)
		close(fd);
	free(buf);
	return err;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int push_id(uint64_t **ids, size_t *n, size_t *cap, uint64_t id)
{
	if (*n == *cap) {
		uint64_t *nv = realloc(*ids, (*cap ? *cap * 2 : 16) * sizeof(**ids));

		if (!nv)
			return -ENOMEM;
		*ids = nv;
		*cap = *cap ? *cap * 2 : 16;
	}
	(*ids)[(*n)++] = id;
	return 0;
}

static int push_name(char ***v, size_t *n, size_t *cap, const char *name)
{
	if (*n == *cap) {
		char **nv = realloc(*v, (*cap ? *cap * 2 : 8) * sizeof(**v));

		if (!nv)
			return -ENOMEM;
		*v = nv;
		*cap = *cap ? *cap * 2 : 8;
	}
	(*v)[*n] = strdup(name);
	return (*v)[*n] ? (++*n, 0) : -ENOMEM;
}

/* The segment numbers in the directory, sorted; what only looks like a segment is set aside
 * (after the directory has been read: readdir() and renames do not mix).
 */
static int list_segments(struct spool *s, uint64_t **ids, size_t *n)
{
	DIR *d = opendir(s->dir);
	struct dirent *de;
	char **odd = NULL;
	size_t cap = 0, nodd = 0, oddcap = 0;
	int err = 0;

	*ids = NULL;
	*n = 0;
	if (!d)
		return -errno;
	while (!err && (de = readdir(d))) {
		uint64_t id;
		int kind = spool__seg_name(de->d_name, &id);

		if (kind > 0)
			err = push_id(ids, n, &cap, id);
		else if (kind < 0)
			err = push_name(&odd, &nodd, &oddcap, de->d_name);
	}
	closedir(d);
	for (size_t i = 0; i < nodd; i++) {
		if (!err)
			err = set_aside(s, odd[i], 0, "is not named as this spool names segments");
		free(odd[i]);
	}
	free(odd);
	if (*n > 1)
		qsort(*ids, *n, sizeof(**ids), cmp_u64);
	return err;
}

static void sync_dir(const struct spool *s)
{
	int fd = open(s->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd >= 0) {
		fsync(fd);
		close(fd);
	}
}

/* Start the next segment and make it the tail. */
static int new_segment(struct spool *s, uint64_t id)
{
	char path[PATH_MAX + 32];
	int fd;

	seg_path(s, id, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (!seg_add(s, id)) {
		close(fd);
		unlink(path);
		return -ENOMEM;
	}
	if (s->fd >= 0) {
		if (s->sync != SPOOL_SYNC_NEVER)
			fdatasync(s->fd);
		close(s->fd);
	}
	s->fd = fd;
	if (s->sync != SPOOL_SYNC_NEVER)
		sync_dir(s);
	return 0;
}

/* The segments an earlier run left: checked, cut where damaged, emptied ones removed, those
 * that cannot be segments set aside.
 */
static int check_segments(struct spool *s, const uint64_t *ids, size_t n)
{
	int err = 0;

	for (size_t i = 0; !err && i < n; i++) {
		struct spool_seg *seg = seg_add(s, ids[i]);
		char path[PATH_MAX + 32], why[64];

		if (!seg)
			return -ENOMEM;
		err = check_segment(s, seg, why, sizeof(why));
		if (err > 0) {
			s->nsegs--;
			snprintf(path, sizeof(path), "%020llu" SEG_SUFFIX,
				 (unsigned long long)ids[i]);
			err = set_aside(s, path, ids[i], why);
			continue;
		}
		if (err)
			break;
		if (!seg->records) {
			seg_path(s, seg->id, path, sizeof(path));
			unlink(path);
			s->nsegs--;
			continue;
		}
		s->bytes += seg->bytes;
	}
	return err;
}

/* A saved position's segment number after renumber(): the new number of a kept segment; below
 * the first kept one, the head; anything else (a segment gone) past every segment, as before.
 */
static void renumber_pos(const uint64_t *old, size_t n, unsigned long long *seg,
			 unsigned long long *off)
{
	for (size_t i = 0; i < n; i++) {
		if (old[i] == *seg) {
			*seg = i + 1;
			return;
		}
	}
	if (n && *seg < old[0]) {
		*seg = 1;
		*off = 0;
	} else {
		*seg = ULLONG_MAX;
	}
}

/* DIR/cursors with the segment numbers renumber() gave. */
static int renumber_cursors(const struct spool *s, const uint64_t *old, size_t n)
{
	char path[PATH_MAX + 16], tmp[PATH_MAX + 24], line[PATH_MAX + 64];
	FILE *in, *out;
	int err = 0;

	snprintf(path, sizeof(path), "%s/cursors", s->dir);
	snprintf(tmp, sizeof(tmp), "%s/cursors.tmp", s->dir);
	in = fopen(path, "re");
	if (!in)
		return errno == ENOENT ? 0 : -errno;
	out = fopen(tmp, "we");
	while (out && fgets(line, sizeof(line), in)) {
		unsigned long long seg, off;
		int used = 0;

		if (sscanf(line, "%llu %llu %n", &seg, &off, &used) == 2 && used) {
			renumber_pos(old, n, &seg, &off);
			fprintf(out, "%llu %llu %s", seg, off, line + used);
		} else {
			fputs(line, out);
		}
	}
	fclose(in);
	if (!out || fflush(out) || fsync(fileno(out)) || rename(tmp, path))
		err = -errno;
	if (out)
		fclose(out);
	if (err)
		unlink(tmp);
	return err;
}

static int move_segment(struct spool *s, size_t i, uint64_t to)
{
	char from[PATH_MAX + 32], dest[PATH_MAX + 32];

	seg_path(s, s->segs[i].id, from, sizeof(from));
	seg_path(s, to, dest, sizeof(dest));
	if (rename(from, dest))
		return -errno;
	s->segs[i].id = to;
	return 0;
}

/* Kept segments numbered from 1 in their order, the saved positions with them: for numbers near
 * the top of the range (damaged or copied names; no spool counts that far), so that numbering
 * never wraps. Segment i goes to i + 1: those numbered above that move down first, in order;
 * then those numbered 0, 1... (each i) move up, last first. No move lands on a segment.
 */
static int renumber(struct spool *s)
{
	uint64_t *old = malloc((s->nsegs ? s->nsegs : 1) * sizeof(*old));
	size_t k = 0;
	int err = old ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < s->nsegs; i++)
		old[i] = s->segs[i].id;
	while (!err && k < s->nsegs && old[k] == k)
		k++;
	for (size_t i = k; !err && i < s->nsegs; i++)
		err = move_segment(s, i, i + 1);
	for (size_t i = k; !err && i-- > 0;)
		err = move_segment(s, i, i + 1);
	if (!err) {
		log_info("spool: segments in %s renumbered from 1 (the last was %llu)", s->dir,
			 (unsigned long long)(s->nsegs ? old[s->nsegs - 1] : 0));
		err = renumber_cursors(s, old, s->nsegs);
	}
	free(old);
	return err;
}

int spool__open(struct spool *s, const char *dir, uint64_t limit, enum spool_sync sync)
{
	uint64_t *ids = NULL, total = 0;
	size_t n = 0;
	int err;

	memset(s, 0, sizeof(*s));
	s->fd = s->rfd = -1;
	snprintf(s->dir, sizeof(s->dir), "%s", dir);
	s->limit = limit < SPOOL_MIN_LIMIT ? SPOOL_MIN_LIMIT : limit;
	s->seg_max = s->limit / 8 < SEG_MIN   ? SEG_MIN
		     : s->limit / 8 > SEG_MAX ? SEG_MAX
					      : s->limit / 8;
	s->sync = sync;
	err = mkdir_p(dir, 0700);
	if (!err)
		err = list_segments(s, &ids, &n);
	if (err) {
		log_err("spool: cannot use %s: %s", dir, strerror(-err));
		return err;
	}
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX + 32];
		struct stat st;

		seg_path(s, ids[i], path, sizeof(path));
		if (!stat(path, &st))
			total += (uint64_t)st.st_size;
	}
	if (total > (16u << 20))
		log_info("spool: checking %llu MiB left by an earlier run in %s",
			 (unsigned long long)(total >> 20), dir);
	err = check_segments(s, ids, n);
	/* this run's first segment follows every number seen (emptied ones included) */
	s->first_run_seg = n ? ids[n - 1] + 1 : 1;
	if (!err && n && ids[n - 1] >= SPOOL_SEG_RENUMBER) {
		err = renumber(s);
		s->first_run_seg = s->nsegs + 1;
	}
	if (!err)
		err = new_segment(s, s->first_run_seg);
	free(ids);
	if (!err) {
		s->cap = SPOOL_BUF_BYTES;
		s->buf = malloc(s->cap);
		if (!s->buf)
			err = -ENOMEM;
	}
	if (err) {
		log_err("spool: cannot open %s: %s", dir, strerror(-err));
		spool__close(s);
	}
	return err;
}

static void drop_record(struct spool *s, uint64_t seq, const char *stream_id)
{
	if (!s->dropped++) {
		s->dropped_first = seq;
		snprintf(s->dropped_stream, sizeof(s->dropped_stream), "%s", stream_id);
	}
	s->dropped_last = seq;
}

int spool__append(struct spool *s, const uint8_t *rec, size_t len, uint64_t seq,
		  const char *stream_id)
{
	struct spool_seg *t = tail(s);

	if (s->len + len > s->cap && s->len)
		spool__flush(s);
	while (s->len + len > s->cap) {
		size_t cap = s->cap * 2;
		uint8_t *nb;

		if (cap > SPOOL_BUF_MAX || !(nb = realloc(s->buf, cap))) {
			drop_record(s, seq, stream_id);
			return -ENOSPC;
		}
		s->buf = nb;
		s->cap = cap;
	}
	memcpy(s->buf + s->len, rec, len);
	s->len += len;
	if (!t->records++) {
		t->first_seq = seq;
		snprintf(t->stream_id, sizeof(t->stream_id), "%s", stream_id);
	}
	t->last_seq = seq;
	if (s->len >= SPOOL_BUF_BYTES)
		spool__flush(s);
	return 0;
}

int spool__flush(struct spool *s)
{
	struct spool_seg *t;
	size_t off = 0;
	int err = 0;

	if (!s->buf)
		return -EBADF;
	while (off < s->len) {
		ssize_t n = write(s->fd, s->buf + off, s->len - off);

		s->writes++;
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? -errno : -EIO;
			break;
		}
		off += (size_t)n;
	}
	t = tail(s);
	if (off) {
		memmove(s->buf, s->buf + off, s->len - off);
		s->len -= off;
		t->bytes += off;
		s->bytes += off;
		s->dirty = true;
		if (s->sync == SPOOL_SYNC_BATCH)
			spool__sync(s);
	}
	if (err && err != s->write_err)
		log_err("spool: writing %s failed: %s; holding %zu bytes in memory (at most %u MiB)",
			s->dir, strerror(-err), s->len, SPOOL_BUF_MAX >> 20);
	else if (!err && s->write_err)
		log_info("spool: writing %s again", s->dir);
	s->write_err = err;
	/* a full segment is closed once everything held has been written to it */
	if (!err && !s->len && t->bytes >= s->seg_max && t->id < UINT64_MAX) {
		int e = new_segment(s, t->id + 1);

		if (e)
			log_err("spool: cannot start segment %llu: %s; writing on to %llu",
				(unsigned long long)(t->id + 1), strerror(-e),
				(unsigned long long)t->id);
	}
	return err;
}

void spool__sync(struct spool *s)
{
	if (s->dirty && s->fd >= 0 && !fdatasync(s->fd))
		s->dirty = false;
}

struct spool_pos spool__head(const struct spool *s)
{
	return (struct spool_pos){ .seg = s->segs[0].id, .off = 0 };
}

struct spool_pos spool__end(const struct spool *s)
{
	const struct spool_seg *t = &s->segs[s->nsegs - 1];

	return (struct spool_pos){ .seg = t->id, .off = t->bytes };
}

int spool__pos_cmp(struct spool_pos a, struct spool_pos b)
{
	if (a.seg != b.seg)
		return a.seg < b.seg ? -1 : 1;
	return a.off < b.off ? -1 : a.off > b.off;
}

uint64_t spool__behind(const struct spool *s, struct spool_pos pos)
{
	uint64_t n = 0;

	for (size_t i = 0; i < s->nsegs; i++) {
		const struct spool_seg *g = &s->segs[i];

		if (g->id > pos.seg)
			n += g->bytes;
		else if (g->id == pos.seg && g->bytes > pos.off)
			n += g->bytes - pos.off;
	}
	return n;
}

/* Move pos past segments it has finished (never past the tail). */
static ssize_t normalize(const struct spool *s, struct spool_pos *pos)
{
	ssize_t i = seg_index(s, pos->seg);

	if (i < 0)
		return -ENOENT;
	while ((size_t)i + 1 < s->nsegs && pos->off >= s->segs[i].bytes) {
		i++;
		pos->seg = s->segs[i].id;
		pos->off = 0;
	}
	return i;
}

static int read_fd(struct spool *s, uint64_t id)
{
	char path[PATH_MAX + 32];

	if (s->rfd >= 0 && s->rfd_seg == id)
		return s->rfd;
	if (s->rfd >= 0)
		close(s->rfd);
	seg_path(s, id, path, sizeof(path));
	s->rfd = open(path, O_RDONLY | O_CLOEXEC);
	s->rfd_seg = id;
	return s->rfd < 0 ? -errno : s->rfd;
}

ssize_t spool__read(struct spool *s, struct spool_pos *pos, uint8_t *buf, size_t cap, size_t max,
		    size_t *count)
{
	ssize_t i = normalize(s, pos), n;
	uint64_t avail;
	size_t want, whole;
	int fd;

	*count = 0;
	if (i < 0)
		return i;
	avail = s->segs[i].bytes - pos->off;
	if (!avail || !max)
		return 0;
	want = avail < cap ? (size_t)avail : cap;
	fd = read_fd(s, pos->seg);
	if (fd < 0)
		return fd;
	n = pread(fd, buf, want, (off_t)pos->off);
	if (n < 0)
		return -errno;
	whole = wire__whole(buf, (size_t)n, max, count);
	if (!whole && (size_t)n == cap)
		return -EMSGSIZE; /* one record larger than the caller's buffer */
	return (ssize_t)whole;
}

bool spool__at_record(struct spool *s, struct spool_pos pos)
{
	const struct spool_seg *g = spool__seg(s, pos.seg);
	uint64_t off = 0;
	uint8_t *buf;
	int fd;

	if (!g || pos.off > g->bytes)
		return false;
	if (pos.off == 0 || pos.off == g->bytes)
		return true;
	fd = read_fd(s, pos.seg);
	buf = fd >= 0 ? malloc(SCAN_CHUNK) : NULL;
	/* a checked segment's records are whole and shorter than SCAN_CHUNK */
	while (buf && off < pos.off) {
		uint64_t left = g->bytes - off;
		ssize_t n =
			pread(fd, buf, left < SCAN_CHUNK ? (size_t)left : SCAN_CHUNK, (off_t)off);
		size_t used = 0, total, msg;

		if (n <= 0)
			break;
		while (off + used < pos.off &&
		       wire__frame(buf + used, (size_t)n - used, &total, &msg) == 1)
			used += total;
		if (!used)
			break;
		off += used;
	}
	free(buf);
	return off == pos.off;
}

int spool__seq_at(struct spool *s, struct spool_pos pos, uint64_t *seq, char stream_id[33])
{
	uint8_t buf[64 << 10];
	size_t total, msg;
	ssize_t i = normalize(s, &pos), n;
	int fd;

	if (i < 0)
		return (int)i;
	fd = read_fd(s, pos.seg);
	if (fd < 0)
		return fd;
	n = pread(fd, buf, sizeof(buf), (off_t)pos.off);
	if (n <= 0 || wire__frame(buf, (size_t)n, &total, &msg) != 1)
		return -ENODATA;
	return record_ok(buf + msg, total - msg, seq, stream_id) ? 0 : -EBADMSG;
}

static void remove_oldest(struct spool *s)
{
	char path[PATH_MAX + 32];

	seg_path(s, s->segs[0].id, path, sizeof(path));
	if (unlink(path) && errno != ENOENT)
		log_err("spool: cannot remove %s: %s", path, strerror(errno));
	if (s->rfd >= 0 && s->rfd_seg == s->segs[0].id) {
		close(s->rfd);
		s->rfd = -1;
	}
	s->bytes -= s->segs[0].bytes;
	memmove(s->segs, s->segs + 1, (s->nsegs - 1) * sizeof(s->segs[0]));
	s->nsegs--;
}

void spool__release(struct spool *s, struct spool_pos pos)
{
	if (normalize(s, &pos) < 0)
		return;
	while (s->nsegs > 1 && s->segs[0].id < pos.seg)
		remove_oldest(s);
}

const struct spool_seg *spool__evictable(const struct spool *s)
{
	return s->nsegs < 2 || s->bytes + s->len <= s->limit ? NULL : &s->segs[0];
}

void spool__evict(struct spool *s)
{
	if (spool__evictable(s))
		remove_oldest(s);
}

void spool__close(struct spool *s)
{
	if (s->buf && s->fd >= 0) {
		spool__flush(s);
		if (s->sync != SPOOL_SYNC_NEVER)
			spool__sync(s);
	}
	if (s->fd >= 0)
		close(s->fd);
	if (s->rfd >= 0)
		close(s->rfd);
	s->fd = s->rfd = -1;
	free(s->buf);
	free(s->segs);
	s->buf = NULL;
	s->segs = NULL;
	s->nsegs = 0;
}
