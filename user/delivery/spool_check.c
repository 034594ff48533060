/* Segments left by an earlier run, checked when the spool opens (see spool.h): which files in
 * the directory are segments, whether their records are whole Events, cutting a damaged
 * segment where it stops being whole, setting aside a file that cannot be one, and
 * renumbering segments numbered near the top of the range.
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
#include "wire.h"

bool spool__record_ok(const uint8_t *msg, size_t len, uint64_t *seq, char stream_id[33])
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
	size_t n = strlen(name), digits = n - strlen(SPOOL_SEG_SUFFIX);
	uint64_t v = 0;

	if (n < strlen(SPOOL_SEG_SUFFIX) || strcmp(name + digits, SPOOL_SEG_SUFFIX))
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

/* The whole records at the start of buf[0, have) into seg's metadata: bytes used, and *bad
 * set when what follows them cannot be one of ours.
 */
static size_t scan_records(struct spool_seg *seg, const uint8_t *buf, size_t have, const char **bad)
{
	size_t used = 0, total, msg;
	uint64_t seq;
	char sid[33];
	int r;

	while ((r = wire__frame(buf + used, have - used, &total, &msg)) == 1) {
		if (!spool__record_ok(buf + used + msg, total - msg, &seq, sid)) {
			*bad = "not an egret event";
			return used;
		}
		if (!seg->records++) {
			seg->first_seq = seq;
			memcpy(seg->stream_id, sid, sizeof(sid));
		}
		seg->last_seq = seq;
		used += total;
	}
	if (r < 0)
		*bad = "not an event record (bad length prefix)";
	/* a record longer than the chunk cannot be one of ours */
	else if (used == 0 && have == SPOOL_SCAN_CHUNK)
		*bad = "not an event record (too long)";
	return used;
}

/* The segment's file for reading and cutting, with its size; -1 with why set when it cannot
 * be a segment (a symbolic link, not a regular file, not to be opened).
 */
static int open_segment(const char *path, uint64_t *size, char *why, size_t whysz)
{
	int fd = open(path, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	struct stat st;

	if (fd >= 0 && !fstat(fd, &st) && S_ISREG(st.st_mode)) {
		*size = (uint64_t)st.st_size;
		return fd;
	}
	if (fd < 0 && errno == ELOOP)
		snprintf(why, whysz, "is a symbolic link");
	else if (fd < 0)
		snprintf(why, whysz, "cannot be opened: %s", strerror(errno));
	else
		snprintf(why, whysz, "is not a regular file");
	if (fd >= 0)
		close(fd);
	return -1;
}

/* Walk a segment left by an earlier run: its metadata, and where it stops being whole Events.
 * Anything after that point is cut off (and reported). 1 with why set when the file cannot
 * be a segment at all (not a regular file, unreadable), -ENOMEM.
 */
static int check_segment(struct spool *s, struct spool_seg *seg, char *why, size_t whysz)
{
	char path[PATH_MAX + 32];
	uint64_t off = 0, size;
	size_t have = 0;
	const char *bad = NULL;
	uint8_t *buf;
	int fd, err = 0;

	spool__seg_path(s, seg->id, path, sizeof(path));
	buf = malloc(SPOOL_SCAN_CHUNK);
	if (!buf)
		return -ENOMEM;
	fd = open_segment(path, &size, why, whysz);
	if (fd < 0) {
		err = 1;
		goto out_buf;
	}
	while (!bad && off + have < size) {
		ssize_t n = pread(fd, buf + have, SPOOL_SCAN_CHUNK - have, (off_t)(off + have));
		size_t used;

		if (n <= 0) {
			snprintf(why, whysz, "cannot be read: %s",
				 n < 0 ? strerror(errno) : "shorter than it was");
			err = 1;
			goto out_fd;
		}
		have += (size_t)n;
		used = scan_records(seg, buf, have, &bad);
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
out_fd:
	close(fd);
out_buf:
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
	int err = ARRAY_RESERVE(*ids, *cap, *n + 1);

	if (err)
		return err;
	(*ids)[(*n)++] = id;
	return 0;
}

static int push_name(char ***v, size_t *n, size_t *cap, const char *name)
{
	int err = ARRAY_RESERVE(*v, *cap, *n + 1);

	if (err)
		return err;
	(*v)[*n] = strdup(name);
	return (*v)[*n] ? (++*n, 0) : -ENOMEM;
}

/* What only looks like a segment is set aside after the directory has been read: readdir()
 * and renames do not mix.
 */
int spool__list_segments(struct spool *s, uint64_t **ids, size_t *n)
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

/* The segments an earlier run left: checked, cut where damaged, emptied ones removed, those
 * that cannot be segments set aside.
 */
static int check_each(struct spool *s, const uint64_t *ids, size_t n)
{
	int err = 0;

	for (size_t i = 0; !err && i < n; i++) {
		struct spool_seg *seg = spool__seg_add(s, ids[i]);
		char path[PATH_MAX + 32], why[64];

		if (!seg)
			return -ENOMEM;
		err = check_segment(s, seg, why, sizeof(why));
		if (err > 0) {
			s->nsegs--;
			snprintf(path, sizeof(path), "%020llu" SPOOL_SEG_SUFFIX,
				 (unsigned long long)ids[i]);
			err = set_aside(s, path, ids[i], why);
			continue;
		}
		if (err)
			break;
		if (!seg->records) {
			spool__seg_path(s, seg->id, path, sizeof(path));
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

	spool__seg_path(s, s->segs[i].id, from, sizeof(from));
	spool__seg_path(s, to, dest, sizeof(dest));
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

int spool__check_segments(struct spool *s, const uint64_t *ids, size_t n)
{
	uint64_t total = 0;
	int err;

	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX + 32];
		struct stat st;

		spool__seg_path(s, ids[i], path, sizeof(path));
		if (!stat(path, &st))
			total += (uint64_t)st.st_size;
	}
	if (total > (16u << 20))
		log_info("spool: checking %llu MiB left by an earlier run in %s",
			 (unsigned long long)(total >> 20), s->dir);
	err = check_each(s, ids, n);
	/* this run's first segment follows every number seen (emptied ones included) */
	s->first_run_seg = n ? ids[n - 1] + 1 : 1;
	if (err || !n || ids[n - 1] < SPOOL_SEG_RENUMBER)
		return err;
	err = renumber(s);
	s->first_run_seg = s->nsegs + 1;
	return err;
}
