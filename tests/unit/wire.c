/* Varint framing: round trips at the edges, and a reader that tells a clean end, a half-written
 * tail and a stream that is not egret's apart.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "wire.h"

Test(wire, varint_round_trip)
{
	static const uint64_t values[] = { 0,	       1,	  127,	 128,
					   300,	       16383,	  16384, (1ull << 32) - 1,
					   1ull << 32, UINT64_MAX };
	uint8_t buf[WIRE_VARINT_MAX];

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		size_t n = wire__varint_put(values[i], buf), used = 0;
		uint64_t v = 0;

		cr_assert_eq(wire__varint_get(buf, n, &v, &used), 0);
		cr_expect_eq(v, values[i]);
		cr_expect_eq(used, n);
		cr_expect_eq(wire__varint_len(values[i]), n);
		cr_expect_eq(wire__varint_get(buf, n - 1, &v, &used), -EAGAIN); /* cut short */
	}
	cr_expect_eq(wire__varint_put(300, buf), 2);
	cr_expect_eq(buf[0], 0xac);
	cr_expect_eq(buf[1], 0x02);
}

Test(wire, varint_longer_than_ten_bytes_is_refused)
{
	uint8_t buf[11];
	uint64_t v;
	size_t used;

	memset(buf, 0xff, sizeof(buf));
	cr_expect_eq(wire__varint_get(buf, sizeof(buf), &v, &used), -EBADMSG);
}

static FILE *stream_of(const uint8_t *bytes, size_t len)
{
	FILE *f = tmpfile();

	cr_assert(f);
	fwrite(bytes, 1, len, f);
	rewind(f);
	return f;
}

Test(wire, reader_clean_end_and_half_written_tail)
{
	/* records "ab" and "", then a record claiming 5 bytes with only 2 present */
	static const uint8_t bytes[] = { 2, 'a', 'b', 0, 5, 'x', 'y' };
	struct wire_reader r;
	const uint8_t *msg;
	size_t len;
	FILE *f = stream_of(bytes, sizeof(bytes));

	wire_reader__init(&r, f);
	cr_assert_eq(wire_reader__next(&r, &msg, &len), 1);
	cr_expect_eq(len, 2);
	cr_expect_eq(memcmp(msg, "ab", 2), 0);
	cr_assert_eq(wire_reader__next(&r, &msg, &len), 1);
	cr_expect_eq(len, 0);
	cr_expect_eq(r.offset, 4);
	cr_expect_eq(wire_reader__next(&r, &msg, &len), -EPIPE);
	wire_reader__free(&r);
	fclose(f);

	f = stream_of(bytes, 3);
	wire_reader__init(&r, f);
	cr_assert_eq(wire_reader__next(&r, &msg, &len), 1);
	cr_expect_eq(wire_reader__next(&r, &msg, &len), 0);
	wire_reader__free(&r);
	fclose(f);
}

Test(wire, reader_refuses_absurd_lengths)
{
	/* a length prefix of 2^40: not an egret record */
	static const uint8_t bytes[] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x20, 'x' };
	struct wire_reader r;
	const uint8_t *msg;
	size_t len;
	FILE *f = stream_of(bytes, sizeof(bytes));

	wire_reader__init(&r, f);
	cr_expect_eq(wire_reader__next(&r, &msg, &len), -EBADMSG);
	wire_reader__free(&r);
	fclose(f);
}
