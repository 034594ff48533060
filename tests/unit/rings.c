/* The ring buffer reader (user/events/rings.c) on rings laid out in memory as the kernel lays
 * them out: records of two rings come out as one stream in time-stamp order; a record stamped
 * after the reader's clock waits for the next round; a record being written (busy) holds back
 * its ring only; discarded records are skipped; positions wrap around the data.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include <linux/bpf.h>

#include "rings.h"

#define SIZE 4096 /* a ring's data, a power of two */

struct mem_ring {
	unsigned long cons, prod;
	uint8_t data[2 * SIZE]; /* the second half stands for the kernel's second mapping */
};

static struct mem_ring mr[2];
static struct rings rs;
static uint64_t clock_now;
static uint64_t got[64];
static size_t ngot;

static uint64_t fake_clock(void)
{
	return clock_now;
}

/* what the reader hands over: each record's stamp */
static int take(void *ctx, void *data, size_t size)
{
	uint64_t ts = 0;

	if (size >= sizeof(ts))
		memcpy(&ts, data, sizeof(ts));
	if (ngot < sizeof(got) / sizeof(got[0]))
		got[ngot++] = ts;
	return 0;
}

static void setup(void)
{
	memset(mr, 0, sizeof(mr));
	memset(got, 0, sizeof(got));
	ngot = 0;
	clock_now = 1000;
	cr_assert_eq(rings__init(&rs, take, NULL), 0);
	rs.clock = fake_clock;
	for (int i = 0; i < 2; i++)
		cr_assert_eq(rings__add_memory(&rs, &mr[i].cons, &mr[i].prod, mr[i].data, SIZE), 0);
}

static void teardown(void)
{
	rings__free(&rs);
}

TestSuite(rings, .init = setup, .fini = teardown);

/* A record of len bytes (at least the stamp) at ring i's producer position; its header's
 * flags (BPF_RINGBUF_BUSY_BIT, BPF_RINGBUF_DISCARD_BIT) as given. Returns where it is.
 */
static uint32_t *push(int i, uint64_t ts, uint32_t len, uint32_t flags)
{
	struct mem_ring *r = &mr[i];
	uint8_t *at = r->data + (r->prod & (SIZE - 1));
	uint32_t *hdr = (uint32_t *)at;

	cr_assert_geq(len, sizeof(ts));
	hdr[0] = len | flags;
	hdr[1] = 0;
	memset(at + BPF_RINGBUF_HDR_SZ, 0, len);
	memcpy(at + BPF_RINGBUF_HDR_SZ, &ts, sizeof(ts));
	r->prod += (len + BPF_RINGBUF_HDR_SZ + 7) & ~7ul;
	return hdr;
}

static void expect(const uint64_t *want, size_t n)
{
	cr_assert_eq(ngot, n, "%zu records handed over, %zu expected", ngot, n);
	for (size_t i = 0; i < n; i++)
		cr_expect_eq(got[i], want[i], "record %zu: stamp %llu, %llu expected", i,
			     (unsigned long long)got[i], (unsigned long long)want[i]);
}

Test(rings, two_rings_are_one_stream_in_time_order)
{
	static const uint64_t want[] = { 10, 20, 30, 40, 50, 60 };

	push(0, 10, 8, 0);   /* exec */
	push(1, 20, 100, 0); /* file */
	push(1, 30, 100, 0);
	push(0, 40, 16, 0); /* fork */
	push(0, 50, 16, 0); /* exit */
	push(1, 60, 8, 0);
	cr_expect_eq(rings__consume(&rs), 6);
	expect(want, 6);
	cr_expect_eq(mr[0].cons, mr[0].prod, "the consumer position is not written back");
	cr_expect_eq(mr[1].cons, mr[1].prod);
	cr_expect_eq(rings__consume(&rs), 0);
}

/* a record stamped after the reader's clock was made after the positions were read: what it
 * follows may not be visible yet, so it waits for the next round
 */
Test(rings, a_record_stamped_after_the_clock_waits)
{
	static const uint64_t want[] = { 10, 20, 1500 };

	push(0, 10, 8, 0);
	push(0, 1500, 8, 0);
	push(1, 20, 8, 0);
	clock_now = 1000;
	cr_expect_eq(rings__consume(&rs), 2);
	expect(want, 2);
	clock_now = 2000;
	cr_expect_eq(rings__consume(&rs), 1);
	expect(want, 3);
}

/* a record being written holds back its own ring, not the other */
Test(rings, a_busy_record_holds_back_its_ring_only)
{
	static const uint64_t want[] = { 10, 30, 20, 40 };
	uint32_t *busy;

	push(0, 10, 8, 0);
	busy = push(0, 20, 8, BPF_RINGBUF_BUSY_BIT);
	push(0, 40, 8, 0);
	push(1, 30, 8, 0);
	cr_expect_eq(rings__consume(&rs), 2);
	expect(want, 2);
	*busy &= ~BPF_RINGBUF_BUSY_BIT; /* committed */
	cr_expect_eq(rings__consume(&rs), 2);
	expect(want, 4);
}

Test(rings, discarded_records_are_skipped)
{
	static const uint64_t want[] = { 10, 30 };

	push(0, 10, 8, 0);
	push(0, 20, 24, BPF_RINGBUF_DISCARD_BIT);
	push(0, 30, 8, 0);
	cr_expect_eq(rings__consume(&rs), 2);
	expect(want, 2);
	cr_expect_eq(mr[0].cons, mr[0].prod);
}

/* positions count on past the data's size; a record that runs past its end continues in the
 * second mapping
 */
Test(rings, positions_wrap_around_the_data)
{
	uint64_t ts = 1;

	for (int round = 0; round < 5; round++) {
		ngot = 0;
		for (int i = 0; i < 3; i++)
			push(0, ts++, 1000, 0);
		cr_expect_eq(rings__consume(&rs), 3);
		cr_expect_eq(ngot, 3);
		cr_expect_eq(got[2], ts - 1);
	}
	cr_expect_gt(mr[0].prod, SIZE, "the test never wrapped");
}

/* a stamp far past the clock is no time at all: it must not hold its ring for good */
Test(rings, a_bogus_future_stamp_does_not_hold_a_ring)
{
	static const uint64_t want[] = { UINT64_MAX, 20 };

	push(0, UINT64_MAX, 8, 0);
	push(0, 20, 8, 0);
	cr_expect_eq(rings__consume(&rs), 2);
	expect(want, 2);
}

/* a record shorter than a stamp is handed over at once, as stamped 0 */
Test(rings, a_record_without_a_stamp_goes_first)
{
	uint8_t *at = mr[1].data;
	uint32_t *hdr = (uint32_t *)at;

	static const uint64_t want[] = { 0, 10 };

	push(0, 10, 8, 0);
	hdr[0] = 4;
	hdr[1] = 0;
	memset(at + BPF_RINGBUF_HDR_SZ, 0xff, 4);
	mr[1].prod += 16;
	cr_expect_eq(rings__consume(&rs), 2);
	expect(want, 2);
	cr_expect_eq(mr[1].cons, 16);
}
