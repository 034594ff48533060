/* What spool.c (the queue: appending, reading, releasing) and spool_check.c (the segments an
 * earlier run left, checked at open) share; nothing outside the spool includes this.
 */
#ifndef EGRET_SPOOL_INT_H
#define EGRET_SPOOL_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spool.h"

#define SPOOL_SEG_SUFFIX ".seg"
/* segments are scanned this much at a time; a record of ours is shorter */
#define SPOOL_SCAN_CHUNK (1u << 20)

/* DIR/<20-digit id>.seg */
void spool__seg_path(const struct spool *s, uint64_t id, char *out, size_t size);
/* A new, zeroed segment record id after the others; NULL on ENOMEM. */
struct spool_seg *spool__seg_add(struct spool *s, uint64_t id);
/* An Event as this spool writes it: decodable, with a stream id and a seq (into *seq). */
bool spool__record_ok(const uint8_t *msg, size_t len, uint64_t *seq, char stream_id[33]);

/* The segment numbers in DIR, sorted, into *ids (the caller frees it); what only looks like a
 * segment is set aside.
 */
int spool__list_segments(struct spool *s, uint64_t **ids, size_t *n);
/* The segments ids (of spool__list_segments) an earlier run left: checked, cut where damaged,
 * emptied ones removed, those that cannot be segments set aside, renumbered when numbered
 * from SPOOL_SEG_RENUMBER on; sets s->first_run_seg.
 */
int spool__check_segments(struct spool *s, const uint64_t *ids, size_t n);

#endif /* EGRET_SPOOL_INT_H */
