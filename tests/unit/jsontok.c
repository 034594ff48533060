/* The JSON tokenizer of user/core/json.c: what strict RFC 8259 accepts and refuses (with the
 * error naming what and where), the token layout, lookups and iteration, unescaping, duplicate
 * keys as Go's case-insensitive field match sees them, and its bounds: big objects in n log n,
 * deep nesting refused at the limit and parsed without recursion on a small stack, and every
 * input placed at the very end of a page followed by an inaccessible one, so a read one byte
 * past what it was given faults.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "json.h"
#include "util.h"

static char *page_end;
static size_t page_size;

static void guard_init(void)
{
	char *map;

	page_size = (size_t)sysconf(_SC_PAGESIZE);
	map = mmap(NULL, 2 * page_size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	cr_assert_neq(map, MAP_FAILED);
	cr_assert_eq(mprotect(map + page_size, page_size, PROT_NONE), 0);
	page_end = map + page_size;
}

TestSuite(jsontok, .init = guard_init);

/* text[0..len) copied against the guard page, then parsed; d points into that copy */
static int parse_at_end(struct json_doc *d, const char *text, size_t len,
			const struct json_limits *lim, char *err, size_t errsz)
{
	char *at = page_end - len;

	cr_assert_leq(len, page_size);
	memcpy(at, text, len);
	return json__parse(d, at, len, lim, err, errsz);
}

#define PARSE(d, lit, err) parse_at_end(d, lit, sizeof(lit) - 1, NULL, err, sizeof(err))

static double seconds_since(const struct timespec *t0)
{
	struct timespec t1;

	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9;
}

struct doc_case {
	const char *text;
	size_t len;
	int rc;
	const char *err; /* for a refusal, the whole message */
};

#define OK(lit)                             \
	{                                   \
		lit, sizeof(lit) - 1, 0, "" \
	}
#define BAD(lit, rc, msg)                     \
	{                                     \
		lit, sizeof(lit) - 1, rc, msg \
	}

static const struct doc_case cases[] = {
	OK("{}"),
	OK("[]"),
	OK("0"),
	OK("-0"),
	OK("-12.5e+10"),
	OK("1E-3"),
	OK("0.0"),
	OK("\"\""),
	OK("true"),
	OK("false"),
	OK("null"),
	OK(" \t\r\n[1, 2]\r\n\t "),
	OK("{\"a\":[{},[],{\"a\":1}],\"b\":{\"a\":2}}"),
	OK("[\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"]"),
	OK("\"\\u00e9\\u20AC\\ud83d\\ude00\\u0000\""),
	OK("\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\x7f\""),
	OK("\"\xed\x9f\xbf\xee\x80\x80\xef\xbf\xbf\xf4\x8f\xbf\xbf\""), /* D7FF E000 FFFF 10FFFF */
	OK("{\"\":0,\"a\":{\"a\":{}}}"),
	OK("{\"pid\":1,\"pie\":2,\"PIF\":3}"),
	/* nothing, or not JSON at all */
	BAD("", -EINVAL, "unexpected end of input at byte 0, expected a value"),
	BAD(" \n ", -EINVAL, "unexpected end of input at byte 3, expected a value"),
	BAD("\xef\xbb\xbf{}", -EINVAL, "expected a value at byte 0, found byte 0xef"),
	BAD("NaN", -EINVAL, "expected a value at byte 0, found 'N'"),
	BAD("[Infinity]", -EINVAL, "expected a value at byte 1, found 'I'"),
	BAD("-Infinity", -EINVAL, "number without digits at byte 0"),
	BAD("True", -EINVAL, "expected a value at byte 0, found 'T'"),
	BAD("nul", -EINVAL, "invalid literal at byte 0"),
	BAD("[tru]", -EINVAL, "invalid literal at byte 1"),
	BAD("'a'", -EINVAL, "expected a value at byte 0, found '''"),
	/* comments */
	BAD("// c\n1", -EINVAL, "comment at byte 0"),
	BAD("[1/*x*/]", -EINVAL, "comment at byte 2"),
	BAD("{\"a\":1 # x\n}", -EINVAL, "expected ',' or '}' at byte 7, found '#'"),
	/* numbers */
	BAD("01", -EINVAL, "number with a leading zero at byte 0"),
	BAD("[1,-00]", -EINVAL, "number with a leading zero at byte 3"),
	BAD("-", -EINVAL, "number without digits at byte 0"),
	BAD("+1", -EINVAL, "expected a value at byte 0, found '+'"),
	BAD(".5", -EINVAL, "expected a value at byte 0, found '.'"),
	BAD("1.", -EINVAL, "number without a digit after '.' at byte 2"),
	BAD("[1.e5]", -EINVAL, "number without a digit after '.' at byte 3"),
	BAD("1e", -EINVAL, "number without a digit in its exponent at byte 2"),
	BAD("1e+", -EINVAL, "number without a digit in its exponent at byte 3"),
	BAD("0x10", -EINVAL, "trailing data at byte 1"),
	BAD("1.5.3", -EINVAL, "trailing data at byte 3"),
	/* structure */
	BAD("[1,]", -EINVAL, "trailing comma at byte 2"),
	BAD("{\"a\":1 , }", -EINVAL, "trailing comma at byte 7"),
	BAD("[,1]", -EINVAL, "expected a value at byte 1, found ','"),
	BAD("{,}", -EINVAL, "expected a string key at byte 1, found ','"),
	BAD("{a:1}", -EINVAL, "expected a string key at byte 1, found 'a'"),
	BAD("{\"a\" 1}", -EINVAL, "expected ':' at byte 5, found '1'"),
	BAD("{\"a\":}", -EINVAL, "expected a value at byte 5, found '}'"),
	BAD("[1 2]", -EINVAL, "expected ',' or ']' at byte 3, found '2'"),
	BAD("[1}", -EINVAL, "expected ',' or ']' at byte 2, found '}'"),
	BAD("{\"a\":1]", -EINVAL, "expected ',' or '}' at byte 6, found ']'"),
	BAD("[", -EINVAL, "unexpected end of input at byte 1, expected a value or ']'"),
	BAD("[1,", -EINVAL, "unexpected end of input at byte 3, expected a value"),
	BAD("{", -EINVAL, "unexpected end of input at byte 1, expected a string key or '}'"),
	BAD("{\"a\"", -EINVAL, "unexpected end of input at byte 4, expected ':'"),
	BAD("{\"a\":1", -EINVAL, "unexpected end of input at byte 6, expected ',' or '}'"),
	BAD("1 2", -EINVAL, "trailing data at byte 2"),
	BAD("{} x", -EINVAL, "trailing data at byte 3"),
	BAD("truex", -EINVAL, "trailing data at byte 4"),
	BAD("[]]", -EINVAL, "trailing data at byte 2"),
	BAD("1\x00", -EINVAL, "trailing data at byte 1"),
	/* strings: UTF-8 */
	BAD("\"\xc0\xaf\"", -EINVAL, "overlong UTF-8 sequence at byte 1"),
	BAD("\"\xe0\x80\xaf\"", -EINVAL, "overlong UTF-8 sequence at byte 1"),
	BAD("\"\xf0\x80\x80\xaf\"", -EINVAL, "overlong UTF-8 sequence at byte 1"),
	BAD("\"\xed\xa0\x80\"", -EINVAL, "UTF-8-encoded surrogate at byte 1"),
	BAD("[\"ok\",\"\xed\xbf\xbf\"]", -EINVAL, "UTF-8-encoded surrogate at byte 7"),
	BAD("\"\xf4\x90\x80\x80\"", -EINVAL, "UTF-8 sequence past U+10FFFF at byte 1"),
	BAD("\"\xf7\xbf\xbf\xbf\"", -EINVAL, "UTF-8 sequence past U+10FFFF at byte 1"),
	BAD("\"a\xe2\x82\"", -EINVAL, "truncated UTF-8 sequence at byte 2"),
	BAD("\"\xf0\x9f\x98", -EINVAL, "truncated UTF-8 sequence at byte 1"),
	BAD("\"\x80\"", -EINVAL, "invalid UTF-8 byte 0x80 at byte 1"),
	BAD("\"\xff\"", -EINVAL, "invalid UTF-8 byte 0xff at byte 1"),
	BAD("{\"\xfe\":1}", -EINVAL, "invalid UTF-8 byte 0xfe at byte 2"),
	/* strings: control characters and escapes */
	BAD("[\"a\nb\"]", -EINVAL, "control character 0x0a in a string at byte 3"),
	BAD("\"\t\"", -EINVAL, "control character 0x09 in a string at byte 1"),
	BAD("\"\x00\"", -EINVAL, "control character 0x00 in a string at byte 1"),
	BAD("\"\\x\"", -EINVAL, "bad escape '\\x' at byte 1"),
	BAD("\"\\'\"", -EINVAL, "bad escape '\\'' at byte 1"),
	BAD("\"\\\x01\"", -EINVAL, "bad escape at byte 1"),
	BAD("\"\\u12G4\"", -EINVAL, "bad \\u escape at byte 1"),
	BAD("\"\\u0\"", -EINVAL, "bad \\u escape at byte 1"),
	BAD("\"\\ud83d\\ude0\"", -EINVAL, "bad \\u escape at byte 7"),
	BAD("\"\\U0041\"", -EINVAL, "bad escape '\\U' at byte 1"),
	BAD("\"\\ud83d\"", -EINVAL, "unpaired surrogate \\uD83D at byte 1"),
	BAD("\"ab\\ud83dx\"", -EINVAL, "unpaired surrogate \\uD83D at byte 3"),
	BAD("\"\\ud83d\\n\"", -EINVAL, "unpaired surrogate \\uD83D at byte 1"),
	BAD("\"\\ud83d\\u0041\"", -EINVAL, "unpaired surrogate \\uD83D at byte 1"),
	BAD("\"\\ud83d\\ud83d\"", -EINVAL, "unpaired surrogate \\uD83D at byte 1"),
	BAD("\"\\ud83d\\uzzzz\"", -EINVAL, "bad \\u escape at byte 7"),
	BAD("\"\\ude00\"", -EINVAL, "lone low surrogate \\uDE00 at byte 1"),
	BAD("\"\\ude00\\ud83d\"", -EINVAL, "lone low surrogate \\uDE00 at byte 1"),
	BAD("\"abc", -EINVAL, "unterminated string at byte 0"),
	BAD("[\"a\\", -EINVAL, "unterminated string at byte 1"),
	BAD("\"\\u00", -EINVAL, "unterminated string at byte 0"),
	BAD("\"\\ud83d\\ude", -EINVAL, "unterminated string at byte 0"),
	/* duplicate keys: unescaped, and as Go's case-insensitive field match sees them */
	BAD("{\"a\":1,\"a\":2}", -EINVAL, "duplicate key \"a\" at byte 7 (of \"a\" at byte 1)"),
	BAD("{\"pid\":1,\"PID\":2}", -EINVAL,
	    "duplicate key \"PID\" at byte 9 (of \"pid\" at byte 1)"),
	BAD("{\"a\":1,\"\\u0041\":2}", -EINVAL,
	    "duplicate key \"\\u0041\" at byte 7 (of \"a\" at byte 1)"),
	BAD("{\"\\u0061\":1,\"a\":2}", -EINVAL,
	    "duplicate key \"a\" at byte 12 (of \"\\u0061\" at byte 1)"),
	BAD("{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}", -EINVAL,
	    "duplicate key \"\xf0\x9f\x98\x80\" at byte 18 (of \"\\ud83d\\ude00\" at byte 1)"),
	BAD("{\"status\":1,\"\xc5\xbftatus\":2}", -EINVAL,
	    "duplicate key \"\xc5\xbftatus\" at byte 12 (of \"status\" at byte 1)"),
	BAD("{\"p\xc4\xb1"
	    "d\":1,\"pid\":2}",
	    -EINVAL,
	    "duplicate key \"pid\" at byte 10 (of \"p\xc4\xb1"
	    "d\" at byte 1)"),
	BAD("{\"\\u212a\":1,\"k\":2}", -EINVAL,
	    "duplicate key \"k\" at byte 12 (of \"\\u212a\" at byte 1)"),
	BAD("{\"a\":1,\"b\":{\"c\":[1,{}]},\"A\":2}", -EINVAL,
	    "duplicate key \"A\" at byte 24 (of \"a\" at byte 1)"),
	BAD("{\"a\":{\"x\":1,\"y\":2},\"b\":{\"x\":1,\"X\":2}}", -EINVAL,
	    "duplicate key \"X\" at byte 30 (of \"x\" at byte 24)"),
	BAD("[{\"a\":1},{\"b\":1,\"c\":2,\"B\":3}]", -EINVAL,
	    "duplicate key \"B\" at byte 22 (of \"b\" at byte 10)"),
};

Test(jsontok, accepts_rfc8259_and_refuses_the_rest_naming_what_and_where)
{
	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		const struct doc_case *c = &cases[i];
		struct json_doc d;
		char err[JSON_ERR_LEN];
		int rc;

		memset(err, 'x', sizeof(err));
		rc = parse_at_end(&d, c->text, c->len, NULL, err, sizeof(err));
		cr_expect_eq(rc, c->rc, "case %zu (%.*s): %d, expected %d (%s)", i, (int)c->len,
			     c->text, rc, c->rc, err);
		cr_expect_str_eq(err, c->err, "case %zu (%.*s)", i, (int)c->len, c->text);
		if (rc) {
			cr_expect_eq(d.n, 0u, "a refused document holds no tokens");
			cr_expect_null(d.tok);
		} else {
			cr_expect_gt(d.n, 0u);
			cr_expect_eq(d.tok[0].skip, d.n, "the top token spans them all");
		}
		json__free(&d);
	}
}

Test(jsontok, limits_on_depth_and_tokens)
{
	struct json_limits two_deep = { .max_depth = 2 }, three_tokens = { .max_tokens = 3 };
	char deep[65 * 2 + 1], err[JSON_ERR_LEN];
	struct json_doc d;

	for (int depth = 64; depth <= 65; depth++) {
		memset(deep, '[', (size_t)depth);
		memset(deep + depth, ']', (size_t)depth);
		cr_expect_eq(parse_at_end(&d, deep, 2 * (size_t)depth, NULL, err, sizeof(err)),
			     depth == 64 ? 0 : -E2BIG, "depth %d", depth);
		json__free(&d);
	}
	cr_expect_str_eq(err, "nesting deeper than 64 at byte 64");
	cr_expect_eq(parse_at_end(&d, "[{\"a\":1}]", 9, &two_deep, err, sizeof(err)), 0);
	json__free(&d);
	cr_expect_eq(parse_at_end(&d, "[{\"a\":[]}]", 10, &two_deep, err, sizeof(err)), -E2BIG);
	cr_expect_str_eq(err, "nesting deeper than 2 at byte 6");
	cr_expect_eq(parse_at_end(&d, "[1,2]", 5, &three_tokens, err, sizeof(err)), 0);
	json__free(&d);
	cr_expect_eq(parse_at_end(&d, "[1,2,3]", 7, &three_tokens, err, sizeof(err)), -E2BIG);
	cr_expect_str_eq(err, "more than 3 tokens at byte 5");
	cr_expect_eq(d.n, 0u);
	cr_expect_eq(parse_at_end(&d, "[1,]", 4, NULL, NULL, 0), -EINVAL, "no err buffer");
}

/* The layout json.h promises: text order, offsets inside quotes and around brackets, parents,
 * member and element counts, subtree sizes. */
Test(jsontok, token_layout_of_a_nested_document)
{
	static const char text[] = "{\"a\":[1,{\"b\":null}],\"c\":\"x\\ny\"}";
	static const struct json_tok want[] = {
		{ .start = 0, .end = 31, .parent = -1, .size = 2, .skip = 9, .type = JSON_OBJECT },
		{ .start = 2, .end = 3, .parent = 0, .size = 0, .skip = 1, .type = JSON_STRING },
		{ .start = 5, .end = 19, .parent = 0, .size = 2, .skip = 5, .type = JSON_ARRAY },
		{ .start = 6, .end = 7, .parent = 2, .size = 0, .skip = 1, .type = JSON_NUMBER },
		{ .start = 8, .end = 18, .parent = 2, .size = 1, .skip = 3, .type = JSON_OBJECT },
		{ .start = 10, .end = 11, .parent = 4, .size = 0, .skip = 1, .type = JSON_STRING },
		{ .start = 13, .end = 17, .parent = 4, .size = 0, .skip = 1, .type = JSON_NULL },
		{ .start = 21, .end = 22, .parent = 0, .size = 0, .skip = 1, .type = JSON_STRING },
		{ .start = 25, .end = 29, .parent = 0, .size = 0, .skip = 1, .type = JSON_STRING },
	};
	struct json_doc d;
	char err[JSON_ERR_LEN];

	cr_assert_eq(PARSE(&d, text, err), 0, "%s", err);
	cr_assert_eq(d.n, ARRAY_SIZE(want));
	cr_expect_eq(d.text, page_end - (sizeof(text) - 1), "tokens point into the caller's text");
	for (size_t i = 0; i < d.n; i++) {
		const struct json_tok *t = &d.tok[i], *w = &want[i];

		cr_expect_eq(t->start, w->start, "token %zu start", i);
		cr_expect_eq(t->end, w->end, "token %zu end", i);
		cr_expect_eq(t->parent, w->parent, "token %zu parent", i);
		cr_expect_eq(t->size, w->size, "token %zu size", i);
		cr_expect_eq(t->skip, w->skip, "token %zu skip", i);
		cr_expect_eq(t->type, w->type, "token %zu type", i);
	}
	json__free(&d);
	cr_expect_eq(d.n, 0u);
	cr_expect_null(d.tok);
	json__free(&d); /* twice is fine */
}

static const char oci_state[] =
	"{\"ociVersion\":\"1.0.2\",\"id\":\"ctr\\u002d1\",\"status\":\"running\",\"pid\":4242,"
	"\"bundle\":\"/run/containerd/b\",\"annotations\":{\"io.kubernetes.cri.sandbox-id\":\"s\","
	"\"empty\":{}},\"linux\":{\"cgroupsPath\":\"/sys/fs/cgroup/x\",\"namespaces\":["
	"{\"type\":\"pid\"},{\"type\":\"network\",\"path\":\"/proc/1/ns/net\"},[],7]}}";

Test(jsontok, member_path_elem_and_iteration)
{
	static const char *const keys[] = { "ociVersion", "id",		 "status", "pid",
					    "bundle",	  "annotations", "linux" };
	struct json_doc d;
	char err[JSON_ERR_LEN], s[64];
	uint64_t pid;
	int ns, v, k, i, e;

	cr_assert_eq(PARSE(&d, oci_state, err), 0, "%s", err);
	cr_expect_eq(json__u64(&d, json__member(&d, 0, "pid"), &pid), 0);
	cr_expect_eq(pid, 4242u);
	cr_expect_eq(json__string(&d, json__member(&d, 0, "id"), s, sizeof(s)), 5);
	cr_expect_str_eq(s, "ctr-1");
	cr_expect(json__eq(&d, json__path(&d, 0, "linux.cgroupsPath"), "/sys/fs/cgroup/x"));
	cr_expect(json__eq(&d,
			   json__member(&d, json__member(&d, 0, "annotations"),
					"io.kubernetes.cri.sandbox-id"),
			   "s"),
		  "a key holding dots, by json__member");
	cr_expect_eq(json__path(&d, 0, "annotations.io.kubernetes.cri.sandbox-id"), -1);
	cr_expect_eq(json__path(&d, 0, "linux.nope"), -1);
	cr_expect_eq(json__path(&d, 0, "nope.cgroupsPath"), -1);
	cr_expect_eq(json__path(&d, 0, "pid.x"), -1, "a step through a number");
	cr_expect_eq(json__path(&d, 0, "linux."), -1);
	cr_expect_eq(json__path(&d, -1, "linux"), -1);
	cr_expect_eq(json__path(&d, 0, "pid"), json__member(&d, 0, "pid"));
	cr_expect_eq(json__member(&d, json__member(&d, 0, "missing"), "x"), -1, "chains");
	cr_expect_eq(json__member(&d, 0, "PID"), -1, "exact");
	cr_expect_eq(json__member_fold(&d, 0, "PID"), json__member(&d, 0, "pid"));
	cr_expect_eq(json__member_fold(&d, 0, "\xc5\xbftatus"), json__member(&d, 0, "status"),
		     "Go matches U+017F to s");
	cr_expect_eq(json__member_fold(&d, 0, "pi"), -1);
	cr_expect_eq(json__member(&d, 0, "pi"), -1, "a prefix is not the key");
	cr_expect_eq(json__member(&d, 0, "pidx"), -1);
	cr_expect_eq(json__member(&d, 1, "x"), -1, "a string is not an object");
	cr_expect_eq(json__member(&d, 100000, "x"), -1);

	ns = json__path(&d, 0, "linux.namespaces");
	cr_assert_geq(ns, 0);
	cr_expect_eq(json__member(&d, ns, "type"), -1, "an array is not an object");
	cr_expect(json__eq(&d, json__member(&d, json__elem(&d, ns, 0), "type"), "pid"));
	cr_expect(json__eq(&d, json__member(&d, json__elem(&d, ns, 1), "path"), "/proc/1/ns/net"));
	cr_expect_eq(d.tok[json__elem(&d, ns, 2)].type, JSON_ARRAY);
	cr_expect_eq(json__u64(&d, json__elem(&d, ns, 3), &pid), 0);
	cr_expect_eq(pid, 7u);
	cr_expect_eq(json__elem(&d, ns, 4), -1);
	cr_expect_eq(json__elem(&d, 0, 0), -1, "an object is not an array");
	cr_expect_eq(json__elem(&d, -1, 0), -1);

	i = 0;
	for (e = json__first(&d, ns); e >= 0; e = json__next(&d, e))
		cr_expect_eq(e, json__elem(&d, ns, (size_t)i++));
	cr_expect_eq(i, 4, "the elements of namespaces");
	cr_expect_eq(json__first(&d, json__elem(&d, ns, 2)), -1, "an empty array");
	cr_expect_eq(json__first(&d, json__path(&d, 0, "annotations.empty")), -1);
	cr_expect_eq(json__first(&d, json__member(&d, 0, "pid")), -1, "a number has no child");
	cr_expect_eq(json__next(&d, 0), -1, "the top has no sibling");
	cr_expect_eq(json__next(&d, -1), -1);

	i = 0;
	for (k = json__first_member(&d, 0, &v); k >= 0; k = json__next_member(&d, k, &v)) {
		cr_assert_lt((size_t)i, ARRAY_SIZE(keys));
		cr_expect(json__eq(&d, k, keys[i]), "member %d", i);
		cr_expect_eq(v, json__member(&d, 0, keys[i]));
		cr_expect_eq(json__next(&d, k), v, "json__next of a key is its value");
		i++;
	}
	cr_expect_eq(i, (int)ARRAY_SIZE(keys));
	cr_expect_eq(json__first_member(&d, ns, &v), -1, "an array has no members");
	cr_expect_eq(json__first_member(&d, json__path(&d, 0, "annotations.empty"), &v), -1);
	json__free(&d);
}

Test(jsontok, strings_unescape)
{
	static const char text[] =
		"[\"\\n\\\"\\\\\\/\\b\\f\\r\\t\",\"\\u00e9\\u20AC\\ud83d\\ude00\","
		"\"\xc3\xa9\",\"a\\u0000b\",\"\\u0061bc\",\"\",5,\"\\uDBFF\\uDFFF\"]";
	struct json_doc d;
	char err[JSON_ERR_LEN], s[16];

	cr_assert_eq(PARSE(&d, text, err), 0, "%s", err);
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 0), s, sizeof(s)), 8);
	cr_expect_str_eq(s, "\n\"\\/\b\f\r\t");
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 1), s, sizeof(s)), 9);
	cr_expect_str_eq(s, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80", "a pair is one 4-byte UTF-8");
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 2), s, sizeof(s)), 2);
	cr_expect_str_eq(s, "\xc3\xa9");
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 7), s, sizeof(s)), 4);
	cr_expect_str_eq(s, "\xf4\x8f\xbf\xbf");

	strcpy(s, "junk");
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 3), s, sizeof(s)), -EINVAL, "U+0000");
	cr_expect_str_eq(s, "");
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 4), s, 4), 3, "exactly fits");
	cr_expect_str_eq(s, "abc");
	strcpy(s, "junk");
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 4), s, 3), -ENAMETOOLONG);
	cr_expect_str_eq(s, "");
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 1), s, 9), -ENAMETOOLONG);
	cr_expect_str_eq(s, "");
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 5), s, 1), 0);
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 5), s, 0), -ENAMETOOLONG);
	strcpy(s, "junk");
	cr_expect_eq(json__string(&d, json__elem(&d, 0, 6), s, sizeof(s)), -EINVAL, "a number");
	cr_expect_str_eq(s, "");
	cr_expect_eq(json__string(&d, 0, s, sizeof(s)), -EINVAL, "an array");
	cr_expect_eq(json__string(&d, -1, s, sizeof(s)), -EINVAL);

	cr_expect(json__eq(&d, json__elem(&d, 0, 4), "abc"));
	cr_expect_not(json__eq(&d, json__elem(&d, 0, 4), "ab"));
	cr_expect_not(json__eq(&d, json__elem(&d, 0, 4), "abcd"));
	cr_expect_not(json__eq(&d, json__elem(&d, 0, 4), "ABC"));
	cr_expect_not(json__eq(&d, json__elem(&d, 0, 3), "a"), "U+0000 does not end it");
	cr_expect(json__eq(&d, json__elem(&d, 0, 5), ""));
	cr_expect(json__eq(&d, json__elem(&d, 0, 1), "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80"));
	cr_expect_not(json__eq(&d, json__elem(&d, 0, 6), "5"), "a number is not a string");
	json__free(&d);
}

Test(jsontok, unsigned_integers)
{
	static const char text[] = "[0,42,18446744073709551615,18446744073709551616,-1,-0,1.0,1e3,"
				   "\"5\",99999999999999999999999.5]";
	struct json_doc d;
	char err[JSON_ERR_LEN];
	uint64_t v = 7;

	cr_assert_eq(PARSE(&d, text, err), 0, "%s", err);
	cr_expect_eq(json__u64(&d, json__elem(&d, 0, 0), &v), 0);
	cr_expect_eq(v, 0u);
	cr_expect_eq(json__u64(&d, json__elem(&d, 0, 1), &v), 0);
	cr_expect_eq(v, 42u);
	cr_expect_eq(json__u64(&d, json__elem(&d, 0, 2), &v), 0);
	cr_expect_eq(v, UINT64_MAX);
	cr_expect_eq(json__u64(&d, json__elem(&d, 0, 3), &v), -ERANGE);
	for (size_t i = 4; i < 10; i++)
		cr_expect_eq(json__u64(&d, json__elem(&d, 0, i), &v), -EINVAL, "element %zu", i);
	cr_expect_eq(v, UINT64_MAX, "untouched on an error");
	json__free(&d);
}

/* {"k0":0,"k1":1,...} with the keys prefix<i>, and dup appended as the last key when set */
static char *big_object(size_t keys, const char *prefix, const char *dup, size_t *len)
{
	size_t cap = keys * (strlen(prefix) + 24) + 64, n = 0;
	char *s = malloc(cap);

	cr_assert_not_null(s);
	s[n++] = '{';
	for (size_t i = 0; i < keys; i++)
		n += (size_t)snprintf(s + n, cap - n, "%s\"%s%zu\":%zu", i ? "," : "", prefix, i,
				      i);
	if (dup)
		n += (size_t)snprintf(s + n, cap - n, ",\"%s\":0", dup);
	s[n++] = '}';
	*len = n;
	return s;
}

Test(jsontok, duplicates_in_a_big_object_are_found_in_n_log_n)
{
	struct json_limits lim = { .max_tokens = 200000 };
	char err[JSON_ERR_LEN], want[JSON_ERR_LEN];
	struct timespec t0;
	struct json_doc d;
	size_t len;
	char *s;
	double t;

	s = big_object(50000, "k", NULL, &len);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_assert_eq(json__parse(&d, s, len, &lim, err, sizeof(err)), 0, "%s", err);
	t = seconds_since(&t0);
	cr_expect_lt(t, 1.0, "50,000 keys in %.3f s", t);
	cr_expect_eq(d.tok[0].size, 50000u);
	cr_expect_eq(json__u64(&d, json__member(&d, 0, "k49999"), &(uint64_t){ 0 }), 0);
	json__free(&d);
	cr_expect_eq(json__parse(&d, s, len, NULL, err, sizeof(err)), -E2BIG, "the default limit");
	free(s);

	/* keys sharing a long prefix, the duplicate folded and escaped */
	s = big_object(50000, "io.kubernetes.container.annotation-",
		       "IO.kubernetes.container.annotation-\\u00312345", &len);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	cr_expect_eq(json__parse(&d, s, len, &lim, err, sizeof(err)), -EINVAL);
	t = seconds_since(&t0);
	cr_expect_lt(t, 1.0, "50,000 long keys in %.3f s", t);
	snprintf(want, sizeof(want),
		 "duplicate key \"IO.kubernetes.container.annotation-\\u003\" at byte %zu (of "
		 "\"io.kubernetes.container.annotation-12345\" at byte %zu)",
		 (size_t)(strstr(s, "\"IO.") - s),
		 (size_t)(strstr(s, "\"io.kubernetes.container.annotation-12345\"") - s));
	cr_expect_str_eq(err, want);
	free(s);
}

static void *parse_deep(void *arg)
{
	const char *text = arg;
	struct json_limits lim = { .max_tokens = 200000, .max_depth = 100000 };
	struct json_doc d;
	intptr_t rc;

	rc = json__parse(&d, text, strlen(text), &lim, NULL, 0);
	if (!rc)
		rc = d.n == 50001 && d.tok[50000].parent == 49999 && d.tok[0].skip == 50001 ? 0 : 1;
	json__free(&d);
	return (void *)rc;
}

/* 50,001 nested arrays: refused at the default depth, and parsed with a higher limit on a
 * thread of 64 KiB of stack, which a parser recursing once per level would overflow. */
Test(jsontok, deep_nesting_needs_no_stack)
{
	size_t depth = 50001;
	char *s = malloc(2 * depth + 1), err[JSON_ERR_LEN];
	pthread_attr_t attr;
	struct json_doc d;
	pthread_t th;
	void *rc;

	cr_assert_not_null(s);
	memset(s, '[', depth);
	memset(s + depth, ']', depth);
	s[2 * depth] = '\0';
	cr_expect_eq(json__parse(&d, s, 2 * depth, NULL, err, sizeof(err)), -E2BIG);
	cr_expect_str_eq(err, "nesting deeper than 64 at byte 64");
	cr_assert_eq(pthread_attr_init(&attr), 0);
	cr_assert_eq(pthread_attr_setstacksize(&attr, 64 * 1024), 0);
	cr_assert_eq(pthread_create(&th, &attr, parse_deep, s), 0);
	cr_assert_eq(pthread_join(th, &rc), 0);
	cr_expect_null(rc, "parsed 50,001 levels on 64 KiB of stack");
	pthread_attr_destroy(&attr);
	free(s);
}

/* A config.json fragment cut at every byte, each prefix against the guard page: every one is
 * refused (the document is an object), none read past its end, and the whole parses. */
Test(jsontok, every_prefix_is_refused_within_its_bytes)
{
	static const char text[] =
		"{\"ociVersion\":\"1.2.0\",\"process\":{\"terminal\":false,\"user\":{\"uid\":0,"
		"\"gid\":0},\"args\":[\"sh\",\"-c\",\"echo \\\"h\xc3\xa9llo\\\" \\u263a "
		"\\ud83d\\ude00\"],\"env\":[\"PATH=/usr/bin\"]},\"root\":{\"path\":\"rootfs\","
		"\"readonly\":true},\"annotations\":{\"org.opencontainers.image.title\":"
		"\"\xe2\x82\xac\"},\"linux\":{\"cgroupsPath\":\"/egret/x\",\"resources\":"
		"{\"memory\":{\"limit\":-1.5e3}},\"maskedPaths\":null}}";
	struct json_doc d;
	char err[JSON_ERR_LEN];

	for (size_t n = 0; n < sizeof(text) - 1; n++) {
		int rc = parse_at_end(&d, text, n, NULL, err, sizeof(err));

		cr_expect_eq(rc, -EINVAL, "prefix of %zu bytes: %d", n, rc);
		cr_expect(strstr(err, " at byte "), "prefix of %zu bytes: %s", n, err);
		json__free(&d);
	}
	cr_assert_eq(PARSE(&d, text, err), 0, "%s", err);
	cr_expect(json__eq(&d, json__path(&d, 0, "linux.cgroupsPath"), "/egret/x"));
	cr_expect_eq(d.tok[json__path(&d, 0, "root.readonly")].type, JSON_TRUE);
	cr_expect_eq(d.tok[json__path(&d, 0, "linux.maskedPaths")].type, JSON_NULL);
	json__free(&d);

	/* and a top-level scalar, whose prefixes may be valid */
	for (size_t n = 0; n <= 8; n++) {
		int rc = parse_at_end(&d, "-12.5e+3", n, NULL, err, sizeof(err));

		cr_expect_eq(rc, n == 2 || n == 3 || n == 5 || n == 8 ? 0 : -EINVAL, "%zu", n);
		json__free(&d);
	}
}
