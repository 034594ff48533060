/* The HTTP response parser of the OTLP sink against bytes a receiver sends: every input is
 * placed at the very end of a page followed by an inaccessible one, so a parser that reads one
 * byte past what it was given faults (the buffer it gets is not NUL-terminated).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "http.h"

static char *page_end;

static void guard_init(void)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	char *map =
		mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(mprotect(map + page, page, PROT_NONE), 0);
	page_end = map + page;
}

TestSuite(http, .init = guard_init);

/* text[0..len) copied against the guard page, then parsed */
static int parse_at_end(const char *text, size_t len, bool eof, struct http_response *r)
{
	char *at = page_end - len;

	memcpy(at, text, len);
	return http__parse_response(at, len, eof, r);
}

#define PARSE(lit, eof, r) parse_at_end(lit, sizeof(lit) - 1, eof, r)

Test(http, the_status_line_is_read_within_the_buffer)
{
	struct http_response r;

	/* sscanf() went on past "HTTP/1.1" through the blank line, looking for a status */
	cr_expect_eq(PARSE("HTTP/1.1\r\n\r\n", true, &r), -EBADMSG);
	cr_expect_eq(PARSE("HTTP/1.1 \r\n\r\n", true, &r), -EBADMSG);
	cr_expect_eq(PARSE("HTTP/1.1 2\r\n\r\n", true, &r), -EBADMSG);
	cr_expect_eq(PARSE("HTTP/1.1 20000000000000000000 OK\r\n\r\n", true, &r), -EBADMSG);
	cr_expect_eq(PARSE("HTTP/1.1 099 Low\r\n\r\n", true, &r), -EBADMSG);
	cr_expect_eq(PARSE("HTTP/x.1 200 OK\r\n\r\n", true, &r), -EBADMSG);
	cr_assert_eq(PARSE("HTTP/1.1 204\r\n\r\n", true, &r), 1, "no reason phrase is fine");
	cr_expect_eq(r.status, 204);
	cr_assert_eq(PARSE("HTTP/1.0 202 Accepted\r\n\r\n", true, &r), 1);
	cr_expect_eq(r.status, 202);
	cr_expect(r.close);
}

Test(http, chunk_sizes_are_read_within_the_line)
{
	struct http_response r;

	/* strtoul() skipped the newline as white space and read on past the end */
	cr_expect_eq(PARSE("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n\n", false, &r),
		     -EBADMSG);
	cr_expect_eq(PARSE("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n \n1", false, &r),
		     -EBADMSG);
	cr_expect_eq(
		PARSE("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-1\r\n", false, &r),
		-EBADMSG);
	cr_expect_eq(PARSE("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			   "fffffffffffffffff\r\n",
			   false, &r),
		     -EBADMSG);
	cr_assert_eq(PARSE("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
			   "A;ext=1\r\n0123456789\r\n0\r\n\r\n",
			   false, &r),
		     1, "a chunk extension is ignored");
	cr_expect_eq(r.body_len, 10);
}

Test(http, content_length_is_a_plain_number)
{
	struct http_response r;

	cr_expect_eq(PARSE("HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n", false, &r), -EBADMSG);
	cr_expect_eq(PARSE("HTTP/1.1 200 OK\r\nContent-Length: 3x\r\n\r\nabc", false, &r),
		     -EBADMSG);
	cr_expect_eq(
		PARSE("HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999\r\n\r\n", false, &r),
		-EBADMSG);
	cr_assert_eq(PARSE("HTTP/1.1 200 OK\r\nContent-Length:  3 \r\n\r\nabc", false, &r), 1);
	cr_expect_eq(r.body_len, 3);
}

/* Every cut of good responses, and random damage to them, stays within the bytes given and
 * describes a body inside them.
 */
Test(http, cut_and_damaged_responses_stay_in_bounds)
{
	static const char *const good[] = {
		"HTTP/1.1 200 OK\r\nContent-Type: application/x-protobuf\r\n"
		"Content-Length: 3\r\n\r\nabc",
		"HTTP/1.1 400 Bad Request\r\nTransfer-Encoding: chunked\r\n\r\n"
		"3\r\nbad\r\n4\r\n req\r\n0\r\nX-T: 1\r\n\r\n",
		"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 7\r\nConnection: close\r\n"
		"Content-Length: 0\r\n\r\n",
		"HTTP/1.0 200 OK\r\n\r\nall of it",
	};
	char mut[512];
	struct http_response r;
	unsigned int seed = 11;

	for (size_t g = 0; g < sizeof(good) / sizeof(good[0]); g++) {
		size_t n = strlen(good[g]);

		for (size_t len = 0; len <= n; len++) {
			for (int eof = 0; eof < 2; eof++) {
				int ret = parse_at_end(good[g], len, eof, &r);

				cr_assert(ret == 0 || ret == 1 || ret == -EBADMSG);
				if (ret == 1)
					cr_assert_leq(r.body_off + r.body_len, len);
			}
		}
		cr_expect_eq(parse_at_end(good[g], n, true, &r), 1, "%s", good[g]);
		for (int i = 0; i < 5000; i++) {
			size_t len = (size_t)rand_r(&seed) % (n + 1);
			int ret;

			memcpy(mut, good[g], n);
			for (int k = rand_r(&seed) % 4; k >= 0; k--)
				mut[rand_r(&seed) % n] = "\r\n: 0a-;\tHTTP/1."[rand_r(&seed) % 16];
			ret = parse_at_end(mut, len, rand_r(&seed) & 1, &r);
			cr_assert(ret == 0 || ret == 1 || ret == -EBADMSG);
			if (ret == 1)
				cr_assert_leq(r.body_off + r.body_len, len);
		}
	}
}
