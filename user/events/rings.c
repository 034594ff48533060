/* The kernel's ring buffers read as one stream in time-stamp order (rings.h). The record format
 * is the kernel's (include/uapi/linux/bpf.h): an 8-byte header (length, busy and discard bits)
 * before each record, records 8-byte aligned, the positions counting bytes from the start.
 */
#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <linux/bpf.h>

#include "rings.h"

/* a stamp this far past the reader's clock is no time at all: handed over at once */
#define RINGS_FUTURE_NS (60ull * 1000000000ull)

static uint64_t boot_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int rings__init(struct rings *rs, rings_fn fn, void *ctx)
{
	memset(rs, 0, sizeof(*rs));
	rs->fn = fn;
	rs->ctx = ctx;
	rs->clock = boot_ns;
	rs->epfd = epoll_create1(EPOLL_CLOEXEC);
	return rs->epfd < 0 ? -errno : 0;
}

static struct ring *ring_new(struct rings *rs, unsigned long *cons, const unsigned long *prod,
			     const uint8_t *data, size_t size)
{
	struct ring *r = &rs->r[rs->n++];

	*r = (struct ring){ .map_fd = -1, .cons = cons, .prod = prod, .data = data };
	r->mask = size - 1;
	r->cons_pos = __atomic_load_n(cons, __ATOMIC_ACQUIRE);
	r->prod_pos = r->cons_pos;
	return r;
}

int rings__add_memory(struct rings *rs, unsigned long *cons, const unsigned long *prod,
		      const uint8_t *data, size_t size)
{
	if (rs->n == RINGS_MAX)
		return -E2BIG;
	if (!size || (size & (size - 1)))
		return -EINVAL;
	ring_new(rs, cons, prod, data, size);
	return 0;
}

int rings__add(struct rings *rs, int map_fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);
	size_t page = (size_t)sysconf(_SC_PAGESIZE), map_len;
	struct epoll_event ev = { .events = EPOLLIN };
	unsigned long *cons;
	void *prod;
	struct ring *r;

	if (rs->n == RINGS_MAX)
		return -E2BIG;
	if (bpf_obj_get_info_by_fd(map_fd, &info, &len))
		return -errno;
	if (info.type != BPF_MAP_TYPE_RINGBUF || !info.max_entries ||
	    (info.max_entries & (info.max_entries - 1)))
		return -EINVAL;
	map_len = page + 2 * (size_t)info.max_entries;
	cons = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (cons == MAP_FAILED)
		return -errno;
	prod = mmap(NULL, map_len, PROT_READ, MAP_SHARED, map_fd, (off_t)page);
	ev.data.u32 = rs->n;
	if (prod == MAP_FAILED || epoll_ctl(rs->epfd, EPOLL_CTL_ADD, map_fd, &ev)) {
		int err = -errno;

		if (prod != MAP_FAILED)
			munmap(prod, map_len);
		munmap(cons, page);
		return err;
	}
	r = ring_new(rs, cons, prod, (const uint8_t *)prod + page, info.max_entries);
	r->map_fd = map_fd;
	r->map_len = map_len;
	return 0;
}

int rings__fd(const struct rings *rs)
{
	return rs->epfd;
}

/* The record at r's position when it is committed: its bytes, length, stamp, discard bit. */
static const uint8_t *ring_head(const struct ring *r, uint32_t *len, uint64_t *ts, bool *discard)
{
	const uint32_t *hdr;
	uint32_t l;

	if (r->cons_pos >= r->prod_pos)
		return NULL;
	hdr = (const uint32_t *)(r->data + (r->cons_pos & r->mask));
	l = __atomic_load_n(hdr, __ATOMIC_ACQUIRE);
	if (l & BPF_RINGBUF_BUSY_BIT)
		return NULL;
	*discard = (l & BPF_RINGBUF_DISCARD_BIT) != 0;
	*len = l & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);
	*ts = 0;
	if (*len >= sizeof(*ts))
		memcpy(ts, (const uint8_t *)hdr + BPF_RINGBUF_HDR_SZ, sizeof(*ts));
	return (const uint8_t *)hdr + BPF_RINGBUF_HDR_SZ;
}

static void ring_advance(struct ring *r, uint32_t len)
{
	r->cons_pos += (len + BPF_RINGBUF_HDR_SZ + 7) & ~7ul;
	__atomic_store_n(r->cons, r->cons_pos, __ATOMIC_RELEASE);
}

/* The oldest record of r stamped up to now (discarded ones skipped): NULL if none. */
static const uint8_t *ring_next(struct ring *r, uint64_t now, uint32_t *len, uint64_t *ts)
{
	const uint8_t *p;
	bool discard;

	while ((p = ring_head(r, len, ts, &discard)) && discard)
		ring_advance(r, *len);
	if (p && *ts > now && *ts - now < RINGS_FUTURE_NS)
		return NULL; /* made after the positions were read: next round */
	return p;
}

/* One round: the time, then the positions, then every record stamped up to that time, oldest
 * first across the rings.
 */
static int rings_round(struct rings *rs, int *count)
{
	uint64_t now = rs->clock();

	for (unsigned int i = 0; i < rs->n; i++)
		rs->r[i].prod_pos = __atomic_load_n(rs->r[i].prod, __ATOMIC_ACQUIRE);
	for (;;) {
		struct ring *best = NULL;
		const uint8_t *rec = NULL;
		uint32_t best_len = 0;
		uint64_t best_ts = 0;
		int err;

		for (unsigned int i = 0; i < rs->n; i++) {
			uint32_t len;
			uint64_t ts;
			const uint8_t *p = ring_next(&rs->r[i], now, &len, &ts);

			if (p && (!best || ts < best_ts)) {
				best = &rs->r[i];
				rec = p;
				best_len = len;
				best_ts = ts;
			}
		}
		if (!best)
			return 0;
		err = rs->fn(rs->ctx, (void *)rec, best_len);
		ring_advance(best, best_len);
		(*count)++;
		if (err)
			return err;
	}
}

int rings__consume(struct rings *rs)
{
	int count = 0;

	for (int round = 0; round < RINGS_ROUNDS; round++) {
		int before = count, err = rings_round(rs, &count);

		if (err)
			return err;
		if (count == before)
			break;
	}
	return count;
}

void rings__free(struct rings *rs)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	for (unsigned int i = 0; i < rs->n; i++) {
		struct ring *r = &rs->r[i];

		if (r->map_fd < 0)
			continue;
		munmap((void *)r->prod, r->map_len);
		munmap(r->cons, page);
	}
	if (rs->epfd >= 0)
		close(rs->epfd);
	rs->epfd = -1;
	rs->n = 0;
}
