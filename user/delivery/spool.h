/* The spool: every encoded event is appended here before any sink sees it, and every sink
 * reads from here at its own position. A sink that is down or slow just falls behind; when it
 * recovers it reads on from where it was, in order. Delivered segments are deleted; at the size
 * limit the oldest segment goes even if a sink still needed it, and the caller reports exactly
 * which sequence numbers that sink lost.
 *
 * On disk: DIR/<20-digit segment number>.seg, each a plain varint-delimited Event stream
 * (`egretctl tail` reads one), one egretd run per segment or more, never two runs in one; and
 * DIR/cursors, the sinks' positions. Segments left by an earlier run are checked when the
 * spool opens: a record that is cut short or is not an Event ends the segment there, and the
 * bytes dropped are reported, never replayed. A file that only looks like a segment (a name
 * this spool does not write, such as `+0001.seg` or 20 nines, something that is not a regular
 * file or cannot be read) is moved to DIR/damaged/ and reported: a damaged spool never stops
 * egretd. Numbers from SPOOL_SEG_RENUMBER on (no spool counts that far) are renumbered from 1,
 * positions with them: numbering never wraps.
 */
#ifndef EGRET_SPOOL_H
#define EGRET_SPOOL_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SPOOL_DEFAULT_LIMIT (1ull << 30)
#define SPOOL_MIN_LIMIT	    (256ull << 10)
#define SPOOL_BUF_BYTES	    (1u << 20)	/* appends are written out when this much is held */
#define SPOOL_BUF_MAX	    (32u << 20) /* held in memory while the spool cannot be written */
#define SPOOL_MAX_DAMAGE    16
/* A segment numbered this high at start (no spool writes 2^62 segments) makes the spool
 * renumber its segments from 1.
 */
#define SPOOL_SEG_RENUMBER (1ull << 62)

enum spool_sync {
	SPOOL_SYNC_NEVER,  /* the page cache decides: an egretd crash loses nothing written */
	SPOOL_SYNC_SECOND, /* fdatasync once a second: a power loss loses at most ~1 s */
	SPOOL_SYNC_BATCH,  /* fdatasync after every write (every 25 ms of events) */
};

struct spool_pos {
	uint64_t seg; /* segment number */
	uint64_t off; /* byte offset in it, always at a record boundary */
};

struct spool_seg {
	uint64_t id;
	uint64_t bytes; /* written to the file (readable) */
	uint64_t records;
	uint64_t first_seq, last_seq;
	char stream_id[33];
};

/* Something found wrong in a segment of an earlier run, for a Loss event. */
struct spool_damage {
	uint64_t seg;
	uint64_t offset; /* where the bad bytes start */
	uint64_t bytes;	 /* dropped */
	char why[64];
	char file[64];	   /* a whole file set aside: its name in DIR ("" for a cut segment) */
	char moved_to[80]; /* and where it went, relative to DIR */
	unsigned int more; /* further damage folded into this, the last slot */
};

struct spool {
	char dir[PATH_MAX];
	uint64_t limit;	  /* bytes on disk before the oldest segment is evicted */
	uint64_t seg_max; /* a segment is closed past this size */
	enum spool_sync sync;
	int fd;			/* the tail segment, this run's newest */
	struct spool_seg *segs; /* oldest first; the last is the tail */
	size_t nsegs, segs_cap;
	uint64_t bytes; /* on disk, all segments */
	uint8_t *buf;	/* appended, not yet written */
	size_t len, cap;
	uint64_t first_run_seg; /* segments from here on were written by this run */
	bool dirty;		/* written since the last fdatasync */
	int write_err;		/* the last write's error, 0 when writing works */
	uint64_t dropped, dropped_first, dropped_last; /* not held at SPOOL_BUF_MAX */
	char dropped_stream[33];
	uint64_t writes; /* write(2) calls, for the benchmark */
	int rfd;	 /* read descriptor cache */
	uint64_t rfd_seg;
	struct spool_damage damage[SPOOL_MAX_DAMAGE];
	size_t ndamage;
};

int spool__open(struct spool *s, const char *dir, uint64_t limit, enum spool_sync sync);
/* The damage as a Loss event's detail. */
void spool__damage_text(const struct spool_damage *d, char *buf, size_t size);
/* 1 for DIR/<20 digits>.seg naming a 64-bit number (in *id), 0 for a name that
 * is no segment's (left alone), -1 for one that looks like a segment but is not one this spool
 * writes (set aside).
 */
int spool__seg_name(const char *name, uint64_t *id);
void spool__close(struct spool *s);
/* Take one framed record of stream_id/seq; -ENOSPC when it could not be held. */
int spool__append(struct spool *s, const uint8_t *rec, size_t len, uint64_t seq,
		  const char *stream_id);
int spool__flush(struct spool *s);
void spool__sync(struct spool *s);

/* Positions: the oldest record kept, and the end of what has been written. */
struct spool_pos spool__head(const struct spool *s);
struct spool_pos spool__end(const struct spool *s);
int spool__pos_cmp(struct spool_pos a, struct spool_pos b);
/* Bytes between pos and the end. */
uint64_t spool__behind(const struct spool *s, struct spool_pos pos);
/* Whole records from pos (moved past a finished segment first), at most cap bytes and max
 * records: bytes read (0 when pos is at the end), *count records; -errno on failure.
 */
ssize_t spool__read(struct spool *s, struct spool_pos *pos, uint8_t *buf, size_t cap, size_t max,
		    size_t *count);
/* pos starts a record of its segment (or is its end): a saved position that does not would
 * make a sink send bytes from the middle of a record.
 */
bool spool__at_record(struct spool *s, struct spool_pos pos);
/* The segment pos is in, or NULL when it has been evicted. */
const struct spool_seg *spool__seg(const struct spool *s, uint64_t id);
/* stream id and seq of the record at pos. */
int spool__seq_at(struct spool *s, struct spool_pos pos, uint64_t *seq, char stream_id[33]);
/* Delete every segment wholly before pos. */
void spool__release(struct spool *s, struct spool_pos pos);
/* Over the limit: the oldest segment, which spool__evict() would remove; NULL when under it
 * (or when only the segment being written is left).
 */
const struct spool_seg *spool__evictable(const struct spool *s);
void spool__evict(struct spool *s);

#endif /* EGRET_SPOOL_H */
