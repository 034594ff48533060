/* egretd's reader of the kernel's ring buffers (`events` and `bulk_events`): one epoll fd for
 * all of them, and their records handed over as one stream, in the order of the time stamp each
 * record starts with (struct egret_event_hdr.ts_ns), so that a process's file records (in one
 * ring) fall between its exec and its exit (in the other) as they happened.
 *
 * A record is handed over only once every record made before it is visible: the reader takes
 * the time first (CLOCK_BOOTTIME, the clock of bpf_ktime_get_boot_ns), then the rings' producer
 * positions, and hands over the records stamped up to that time. A task makes a record and
 * commits it before it stamps its next one, so whatever a record stamped up to that time
 * follows was committed before the positions were read; a record stamped later waits for the
 * next round.
 */
#ifndef EGRET_RINGS_H
#define EGRET_RINGS_H

#include <stddef.h>
#include <stdint.h>

#define RINGS_MAX 4

/* one record: data holds size bytes; a nonzero return stops the round (and is returned) */
typedef int (*rings_fn)(void *ctx, void *data, size_t size);

/* One ring buffer as the kernel lays it out: a page with the consumer position, a page with the
 * producer position, then the data, mapped twice in a row so that no record wraps.
 */
struct ring {
	int map_fd;		   /* -1 for a ring in memory (tests) */
	unsigned long *cons;	   /* the consumer position, written by the reader */
	const unsigned long *prod; /* the producer position */
	const uint8_t *data;
	unsigned long mask; /* data size - 1 */
	size_t map_len;	    /* of the mapping at prod (0: not mapped) */
	unsigned long cons_pos;
	unsigned long prod_pos; /* as last read */
};

struct rings {
	int epfd;
	unsigned int n;
	struct ring r[RINGS_MAX];
	rings_fn fn;
	void *ctx;
	uint64_t (*clock)(void); /* boot time in ns; tests set their own */
};

int rings__init(struct rings *rs, rings_fn fn, void *ctx);
/* A BPF_MAP_TYPE_RINGBUF map, mapped and added to the epoll fd: 0 or -errno. */
int rings__add(struct rings *rs, int map_fd);
/* A ring laid out in memory as the kernel lays out a ring buffer's pages (tests): cons and prod
 * positions, data of size bytes (a power of two) followed by its own copy.
 */
int rings__add_memory(struct rings *rs, unsigned long *cons, const unsigned long *prod,
		      const uint8_t *data, size_t size);
/* readable when a ring holds records */
int rings__fd(const struct rings *rs);
/* Records made up to now, from every ring, oldest first: how many, or the callback's nonzero
 * return. Stops after RINGS_ROUNDS rounds of new records, so a flood cannot hold egretd here.
 */
#define RINGS_ROUNDS 16
int rings__consume(struct rings *rs);
void rings__free(struct rings *rs);

#endif /* EGRET_RINGS_H */
