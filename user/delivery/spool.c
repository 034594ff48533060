/* The on-disk spool; see spool.h. This file is the queue: segments appended to, read at
 * positions, released and evicted; spool_check.c checks what an earlier run left.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "egret/v1/events.pb-c.h"
#include "log.h"
#include "spool.h"
#include "spool_int.h"
#include "util.h"
#include "wire.h"

#define SEG_MIN (16u << 10)
#define SEG_MAX (64u << 20)

void spool__seg_path(const struct spool *s, uint64_t id, char *out, size_t size)
{
	snprintf(out, size, "%s/%020llu" SPOOL_SEG_SUFFIX, s->dir, (unsigned long long)id);
}

struct spool_seg *spool__seg_add(struct spool *s, uint64_t id)
{
	if (ARRAY_RESERVE(s->segs, s->segs_cap, s->nsegs + 1))
		return NULL;
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

	spool__seg_path(s, id, path, sizeof(path));
	fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	if (!spool__seg_add(s, id)) {
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

int spool__open(struct spool *s, const char *dir, uint64_t limit, enum spool_sync sync)
{
	uint64_t *ids = NULL;
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
		err = spool__list_segments(s, &ids, &n);
	if (err) {
		log_err("spool: cannot use %s: %s", dir, strerror(-err));
		free(ids);
		return err;
	}
	err = spool__check_segments(s, ids, n);
	free(ids);
	if (err)
		goto fail;
	err = new_segment(s, s->first_run_seg);
	if (err)
		goto fail;
	s->cap = SPOOL_BUF_BYTES;
	s->buf = malloc(s->cap);
	if (!s->buf) {
		err = -ENOMEM;
		goto fail;
	}
	return 0;
fail:
	log_err("spool: cannot open %s: %s", dir, strerror(-err));
	spool__close(s);
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
	/* the buffer doubles from SPOOL_BUF_BYTES up to SPOOL_BUF_MAX */
	if (s->len + len > SPOOL_BUF_MAX || ARRAY_RESERVE(s->buf, s->cap, s->len + len)) {
		drop_record(s, seq, stream_id);
		return -ENOSPC;
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
	spool__seg_path(s, id, path, sizeof(path));
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
	buf = fd >= 0 ? malloc(SPOOL_SCAN_CHUNK) : NULL;
	/* a checked segment's records are whole and shorter than SPOOL_SCAN_CHUNK */
	while (buf && off < pos.off) {
		uint64_t left = g->bytes - off;
		ssize_t n =
			pread(fd, buf, left < SPOOL_SCAN_CHUNK ? (size_t)left : SPOOL_SCAN_CHUNK,
			      (off_t)off);
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
	return spool__record_ok(buf + msg, total - msg, seq, stream_id) ? 0 : -EBADMSG;
}

static void remove_oldest(struct spool *s)
{
	char path[PATH_MAX + 32];

	spool__seg_path(s, s->segs[0].id, path, sizeof(path));
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
