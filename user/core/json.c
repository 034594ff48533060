/* The JSON tokenizer of json.h. One pass over the text, the open containers a chain of parent
 * links (no recursion, no stack but the tokens), each string checked where it is met (UTF-8,
 * escapes, surrogate pairs), and each object's keys checked for duplicates when it closes:
 * hashed (FNV-1a of their unescaped, folded value), sorted by hash and then by that value
 * (heapsort, in place) and compared with their neighbours: n log n comparisons of hashes, and
 * of whole keys only where hashes are equal.
 */
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "array.h"
#include "egret/fnv.h"
#include "json.h"

enum state {
	ST_VALUE,      /* the top value, or a member's after its ':' */
	ST_FIRST_ELEM, /* after '[': a value or ']' */
	ST_ELEM,       /* after ',' in an array: a value */
	ST_FIRST_KEY,  /* after '{': a key or '}' */
	ST_KEY,	       /* after ',' in an object: a key */
	ST_COLON,      /* after a key */
	ST_NEXT,       /* after a value in a container: ',' or its closing bracket */
	ST_DONE,       /* after the top value: white space only */
};

/* A key of the object being checked for duplicates. */
struct key_ref {
	uint64_t hash; /* of its folded code points */
	int tok;
};

struct parser {
	struct json_doc *d;
	const unsigned char *s;
	size_t len, pos;
	size_t comma; /* where the last ',' was */
	size_t max_tokens;
	unsigned int max_depth, depth;
	int cur; /* the innermost open container, -1 outside them all */
	enum state st;
	struct key_ref *keys; /* scratch for the duplicate check */
	size_t keys_cap;
	char *err;
	size_t errsz;
};

/* Why utf8_decode() refused a sequence. */
enum {
	U8_BAD = -1,
	U8_TRUNCATED = -2,
	U8_OVERLONG = -3,
	U8_SURROGATE = -4,
	U8_RANGE = -5,
};

/* The length of the UTF-8 sequence at s (avail bytes), its code point in *cp, or a U8_ reason. */
static int utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp)
{
	static const uint32_t min[] = { 0, 0, 0x80, 0x800, 0x10000 };
	uint32_t c = s[0];
	int n;

	if (c < 0x80) {
		*cp = c;
		return 1;
	}
	if (c < 0xc0 || c >= 0xf8)
		return U8_BAD;
	if (c < 0xc2)
		return U8_OVERLONG;
	n = c < 0xe0 ? 2 : c < 0xf0 ? 3 : 4;
	c &= 0x7fu >> n;
	for (int i = 1; i < n; i++) {
		if ((size_t)i >= avail || (s[i] & 0xc0) != 0x80)
			return U8_TRUNCATED;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (c < min[n])
		return U8_OVERLONG;
	if (c >= 0xd800 && c <= 0xdfff)
		return U8_SURROGATE;
	if (c > 0x10ffff)
		return U8_RANGE;
	*cp = c;
	return n;
}

static size_t utf8_put(uint32_t c, unsigned char *b)
{
	if (c < 0x80) {
		b[0] = (unsigned char)c;
		return 1;
	}
	if (c < 0x800) {
		b[0] = (unsigned char)(0xc0 | c >> 6);
		b[1] = (unsigned char)(0x80 | (c & 0x3f));
		return 2;
	}
	if (c < 0x10000) {
		b[0] = (unsigned char)(0xe0 | c >> 12);
		b[1] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
		b[2] = (unsigned char)(0x80 | (c & 0x3f));
		return 3;
	}
	b[0] = (unsigned char)(0xf0 | c >> 18);
	b[1] = (unsigned char)(0x80 | (c >> 12 & 0x3f));
	b[2] = (unsigned char)(0x80 | (c >> 6 & 0x3f));
	b[3] = (unsigned char)(0x80 | (c & 0x3f));
	return 4;
}

/* The four hex digits at s (avail bytes), -1 when one is not, -2 when the bytes end first. */
static int hex4(const unsigned char *s, size_t avail)
{
	int v = 0;

	for (size_t i = 0; i < 4; i++) {
		int c;

		if (i >= avail)
			return -2;
		c = s[i] | 0x20;
		if (s[i] >= '0' && s[i] <= '9')
			v = v << 4 | (s[i] - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (c - 'a' + 10);
		else
			return -1;
	}
	return v;
}

/* Go's encoding/json folding of a field name (unicode.ToUpper(unicode.ToLower(r))), for the
 * letters whose fold is ASCII; other code points stay what they are. */
static uint32_t fold(uint32_t c)
{
	if (c >= 'A' && c <= 'Z')
		return c + ('a' - 'A');
	if (c == 0x130 || c == 0x131) /* capital I with dot, dotless i */
		return 'i';
	if (c == 0x17f) /* long s */
		return 's';
	if (c == 0x212a) /* Kelvin sign */
		return 'k';
	return c;
}

static bool is_digit(unsigned char c)
{
	return c >= '0' && c <= '9';
}

/* The code points of a string token, unescaped; the parser checked its text. */
struct str_it {
	const unsigned char *p, *end;
};

static void str_it_init(struct str_it *it, const struct json_doc *d, int tok)
{
	it->p = (const unsigned char *)d->text + d->tok[tok].start;
	it->end = (const unsigned char *)d->text + d->tok[tok].end;
}

static bool str_it_more(const struct str_it *it)
{
	return it->p < it->end;
}

/* \uXXXX at it->p, or a surrogate pair as one */
static uint32_t str_it_unicode(struct str_it *it)
{
	const unsigned char *s = it->p;
	size_t left = (size_t)(it->end - s);
	int hi = hex4(s + 2, left - 2), lo;

	if (hi < 0) {
		it->p = it->end;
		return 0xfffd;
	}
	if (hi >= 0xd800 && hi <= 0xdbff && left >= 12 && s[6] == '\\' && s[7] == 'u') {
		lo = hex4(s + 8, left - 8);
		if (lo >= 0xdc00 && lo <= 0xdfff) {
			it->p += 12;
			return 0x10000 + ((uint32_t)(hi - 0xd800) << 10) + (uint32_t)(lo - 0xdc00);
		}
	}
	it->p += 6;
	return (uint32_t)hi;
}

static uint32_t str_it_next(struct str_it *it)
{
	static const char esc[] = "b\bf\fn\nr\rt\t";
	const unsigned char *s = it->p;
	const char *e;
	uint32_t c;
	int n;

	if (s[0] != '\\') {
		n = utf8_decode(s, (size_t)(it->end - s), &c);
		it->p += n > 0 ? n : 1;
		return n > 0 ? c : 0xfffd;
	}
	if (it->end - s < 2) {
		it->p = it->end;
		return '\\';
	}
	if (s[1] == 'u')
		return str_it_unicode(it);
	e = strchr(esc, s[1]);
	it->p += 2;
	return e && s[1] ? (unsigned char)e[1] : s[1]; /* \" \\ \/ stand for themselves */
}

/* String token tok unescaped is s[0..n), byte for byte. */
static bool str_equal(const struct json_doc *d, int tok, const char *s, size_t n)
{
	struct str_it it;
	unsigned char b[4];
	size_t i = 0, k;

	str_it_init(&it, d, tok);
	while (str_it_more(&it)) {
		k = utf8_put(str_it_next(&it), b);
		if (k > n - i || memcmp(s + i, b, k))
			return false;
		i += k;
	}
	return i == n;
}

/* String token tok unescaped is s[0..n) (UTF-8) when both are folded. */
static bool str_fold_equal(const struct json_doc *d, int tok, const char *s, size_t n)
{
	const unsigned char *k = (const unsigned char *)s, *end = k + n;
	struct str_it it;
	uint32_t c;
	int m;

	str_it_init(&it, d, tok);
	while (str_it_more(&it) && k < end) {
		m = utf8_decode(k, (size_t)(end - k), &c);
		if (m <= 0 || fold(c) != fold(str_it_next(&it)))
			return false;
		k += m;
	}
	return !str_it_more(&it) && k == end;
}

/* The order of two string tokens by their folded, unescaped code points. */
static int key_cmp(const struct json_doc *d, int a, int b)
{
	struct str_it x, y;
	uint32_t cx, cy;

	str_it_init(&x, d, a);
	str_it_init(&y, d, b);
	while (str_it_more(&x) && str_it_more(&y)) {
		cx = fold(str_it_next(&x));
		cy = fold(str_it_next(&y));
		if (cx != cy)
			return cx < cy ? -1 : 1;
	}
	return (int)str_it_more(&x) - (int)str_it_more(&y);
}

static uint64_t key_hash(const struct json_doc *d, int tok)
{
	uint64_t h = EGRET_FNV64_OFFSET;
	unsigned char b[4];
	struct str_it it;
	size_t n;

	str_it_init(&it, d, tok);
	while (str_it_more(&it)) {
		n = utf8_put(fold(str_it_next(&it)), b);
		for (size_t i = 0; i < n; i++)
			h = egret_fnv64_byte(h, b[i]);
	}
	return h;
}

static int ref_cmp(const struct json_doc *d, const struct key_ref *a, const struct key_ref *b)
{
	if (a->hash != b->hash)
		return a->hash < b->hash ? -1 : 1;
	return key_cmp(d, a->tok, b->tok);
}

static void ref_swap(struct key_ref *a, struct key_ref *b)
{
	struct key_ref t = *a;

	*a = *b;
	*b = t;
}

static void keys_sift(const struct json_doc *d, struct key_ref *k, size_t i, size_t n)
{
	size_t c;

	while ((c = 2 * i + 1) < n) {
		if (c + 1 < n && ref_cmp(d, &k[c], &k[c + 1]) < 0)
			c++;
		if (ref_cmp(d, &k[i], &k[c]) >= 0)
			return;
		ref_swap(&k[i], &k[c]);
		i = c;
	}
}

static void keys_sort(const struct json_doc *d, struct key_ref *k, size_t n)
{
	for (size_t i = n / 2; i-- > 0;)
		keys_sift(d, k, i, n);
	for (size_t end = n; end-- > 1;) {
		ref_swap(&k[0], &k[end]);
		keys_sift(d, k, 0, end);
	}
}

__attribute__((format(printf, 3, 4))) static int fail(struct parser *p, int rc, const char *fmt,
						      ...)
{
	va_list ap;

	if (p->err && p->errsz) {
		va_start(ap, fmt);
		vsnprintf(p->err, p->errsz, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* What was found at p->pos where what was expected. */
static int unexpected(struct parser *p, const char *what)
{
	unsigned char c;

	if (p->pos >= p->len)
		return fail(p, -EINVAL, "unexpected end of input at byte %zu, expected %s", p->pos,
			    what);
	c = p->s[p->pos];
	if (c > ' ' && c < 0x7f)
		return fail(p, -EINVAL, "expected %s at byte %zu, found '%c'", what, p->pos, c);
	return fail(p, -EINVAL, "expected %s at byte %zu, found byte 0x%02x", what, p->pos, c);
}

/* A new token in the innermost container: its index or a negative errno. */
static int add(struct parser *p, enum json_type type, size_t start, size_t end, bool key)
{
	struct json_doc *d = p->d;
	int rc;

	if (d->n >= p->max_tokens)
		return fail(p, -E2BIG, "more than %zu tokens at byte %zu", p->max_tokens, start);
	rc = ARRAY_RESERVE(d->tok, d->cap, d->n + 1);
	if (rc)
		return fail(p, rc, "out of memory at byte %zu", start);
	d->tok[d->n] = (struct json_tok){ .start = (uint32_t)start,
					  .end = (uint32_t)end,
					  .parent = p->cur,
					  .skip = 1,
					  .type = (uint8_t)type };
	if (p->cur >= 0 && (key || d->tok[p->cur].type == JSON_ARRAY))
		d->tok[p->cur].size++;
	return (int)d->n++;
}

static int utf8_refused(struct parser *p, int why, size_t at)
{
	switch (why) {
	case U8_TRUNCATED:
		return fail(p, -EINVAL, "truncated UTF-8 sequence at byte %zu", at);
	case U8_OVERLONG:
		return fail(p, -EINVAL, "overlong UTF-8 sequence at byte %zu", at);
	case U8_SURROGATE:
		return fail(p, -EINVAL, "UTF-8-encoded surrogate at byte %zu", at);
	case U8_RANGE:
		return fail(p, -EINVAL, "UTF-8 sequence past U+10FFFF at byte %zu", at);
	}
	return fail(p, -EINVAL, "invalid UTF-8 byte 0x%02x at byte %zu", p->s[at], at);
}

/* The length of the escape at byte q of the string opened at p->pos, or a negative errno. */
static int scan_escape(struct parser *p, size_t q)
{
	const unsigned char *s = p->s + q;
	size_t left = p->len - q;
	int hi, lo;

	if (left < 2)
		return fail(p, -EINVAL, "unterminated string at byte %zu", p->pos);
	if (s[1] && strchr("\"\\/bfnrt", s[1]))
		return 2;
	if (s[1] != 'u') {
		if (s[1] > ' ' && s[1] < 0x7f)
			return fail(p, -EINVAL, "bad escape '\\%c' at byte %zu", s[1], q);
		return fail(p, -EINVAL, "bad escape at byte %zu", q);
	}
	hi = hex4(s + 2, left - 2);
	if (hi == -2)
		return fail(p, -EINVAL, "unterminated string at byte %zu", p->pos);
	if (hi < 0)
		return fail(p, -EINVAL, "bad \\u escape at byte %zu", q);
	if (hi >= 0xdc00 && hi <= 0xdfff)
		return fail(p, -EINVAL, "lone low surrogate \\u%04X at byte %zu", (unsigned int)hi,
			    q);
	if (hi < 0xd800 || hi > 0xdbff)
		return 6;
	if ((left > 6 && s[6] != '\\') || (left > 7 && s[7] != 'u'))
		return fail(p, -EINVAL, "unpaired surrogate \\u%04X at byte %zu", (unsigned int)hi,
			    q);
	lo = left < 8 ? -2 : hex4(s + 8, left - 8);
	if (lo == -2)
		return fail(p, -EINVAL, "unterminated string at byte %zu", p->pos);
	if (lo < 0)
		return fail(p, -EINVAL, "bad \\u escape at byte %zu", q + 6);
	if (lo < 0xdc00 || lo > 0xdfff)
		return fail(p, -EINVAL, "unpaired surrogate \\u%04X at byte %zu", (unsigned int)hi,
			    q);
	return 12;
}

/* The string opened at p->pos: [*start, *end) inside its quotes, p->pos past the closing one. */
static int scan_string(struct parser *p, size_t *start, size_t *end)
{
	size_t q = p->pos + 1;
	uint32_t cp;
	int n;

	while (q < p->len) {
		unsigned char c = p->s[q];

		if (c == '"') {
			*start = p->pos + 1;
			*end = q;
			p->pos = q + 1;
			return 0;
		}
		if (c == '\\') {
			n = scan_escape(p, q);
			if (n < 0)
				return n;
		} else if (c < ' ') {
			return fail(p, -EINVAL, "control character 0x%02x in a string at byte %zu",
				    c, q);
		} else {
			n = utf8_decode(p->s + q, p->len - q, &cp);
			if (n < 0)
				return utf8_refused(p, n, q);
		}
		q += (size_t)n;
	}
	return fail(p, -EINVAL, "unterminated string at byte %zu", p->pos);
}

static size_t skip_digits(const unsigned char *s, size_t q, size_t len)
{
	while (q < len && is_digit(s[q]))
		q++;
	return q;
}

/* The number at p->pos (RFC 8259's grammar); *end past it. */
static int scan_number(struct parser *p, size_t *end)
{
	const unsigned char *s = p->s;
	size_t q = p->pos + (s[p->pos] == '-'), len = p->len;

	if (q >= len || !is_digit(s[q]))
		return fail(p, -EINVAL, "number without digits at byte %zu", p->pos);
	if (s[q] == '0' && q + 1 < len && is_digit(s[q + 1]))
		return fail(p, -EINVAL, "number with a leading zero at byte %zu", p->pos);
	q = skip_digits(s, q, len);
	if (q < len && s[q] == '.') {
		if (++q >= len || !is_digit(s[q]))
			return fail(p, -EINVAL, "number without a digit after '.' at byte %zu", q);
		q = skip_digits(s, q, len);
	}
	if (q < len && (s[q] == 'e' || s[q] == 'E')) {
		q++;
		if (q < len && (s[q] == '+' || s[q] == '-'))
			q++;
		if (q >= len || !is_digit(s[q]))
			return fail(p, -EINVAL,
				    "number without a digit in its exponent at byte %zu", q);
		q = skip_digits(s, q, len);
	}
	*end = q;
	return 0;
}

static void after_value(struct parser *p)
{
	p->st = p->cur < 0 ? ST_DONE : ST_NEXT;
}

static int open_container(struct parser *p, enum json_type type)
{
	int t;

	if (p->depth >= p->max_depth)
		return fail(p, -E2BIG, "nesting deeper than %u at byte %zu", p->max_depth, p->pos);
	t = add(p, type, p->pos, p->pos, false);
	if (t < 0)
		return t;
	p->depth++;
	p->cur = t;
	p->pos++;
	p->st = type == JSON_OBJECT ? ST_FIRST_KEY : ST_FIRST_ELEM;
	return 0;
}

/* How much of key k's text an error message quotes: 40 bytes at most, whole characters. */
static int key_quote_len(const struct json_doc *d, int k)
{
	size_t n = d->tok[k].end - d->tok[k].start;

	if (n > 40) {
		n = 40;
		while (n && ((unsigned char)d->text[d->tok[k].start + n] & 0xc0) == 0x80)
			n--;
	}
	return (int)n;
}

static int duplicate(struct parser *p, int a, int b)
{
	const struct json_doc *d = p->d;
	int first = a < b ? a : b, second = a < b ? b : a;

	return fail(p, -EINVAL, "duplicate key \"%.*s\" at byte %u (of \"%.*s\" at byte %u)",
		    key_quote_len(d, second), d->text + d->tok[second].start,
		    d->tok[second].start - 1, key_quote_len(d, first),
		    d->text + d->tok[first].start, d->tok[first].start - 1);
}

/* No two keys of object obj (closed) are the same once unescaped and folded. */
static int check_keys(struct parser *p, int obj)
{
	const struct json_doc *d = p->d;
	size_t n = d->tok[obj].size, i = 0;
	int rc = ARRAY_RESERVE(p->keys, p->keys_cap, n);

	if (rc)
		return fail(p, rc, "out of memory at byte %zu", p->pos);
	for (int k = obj + 1; i < n; k += 1 + (int)d->tok[k + 1].skip)
		p->keys[i++] = (struct key_ref){ .hash = key_hash(d, k), .tok = k };
	keys_sort(d, p->keys, n);
	for (i = 1; i < n; i++) {
		if (ref_cmp(d, &p->keys[i - 1], &p->keys[i]) == 0)
			return duplicate(p, p->keys[i - 1].tok, p->keys[i].tok);
	}
	return 0;
}

static int close_container(struct parser *p)
{
	struct json_tok *t = &p->d->tok[p->cur];
	int rc;

	t->end = (uint32_t)p->pos + 1;
	t->skip = (uint32_t)(p->d->n - (size_t)p->cur);
	if (t->type == JSON_OBJECT && t->size > 1) {
		rc = check_keys(p, p->cur);
		if (rc)
			return rc;
	}
	p->cur = t->parent;
	p->depth--;
	p->pos++;
	after_value(p);
	return 0;
}

static int literal(struct parser *p, enum json_type type, const char *word)
{
	size_t n = strlen(word), start = p->pos;
	int t;

	if (p->len - p->pos < n || memcmp(p->s + p->pos, word, n))
		return fail(p, -EINVAL, "invalid literal at byte %zu", p->pos);
	p->pos += n;
	t = add(p, type, start, p->pos, false);
	return t < 0 ? t : 0;
}

static int value(struct parser *p)
{
	unsigned char c = p->s[p->pos];
	size_t start = p->pos, end = p->pos;
	int rc;

	if (c == '{' || c == '[')
		return open_container(p, c == '{' ? JSON_OBJECT : JSON_ARRAY);
	if (c == '"') {
		rc = scan_string(p, &start, &end);
		if (!rc)
			rc = add(p, JSON_STRING, start, end, false);
	} else if (c == '-' || is_digit(c)) {
		rc = scan_number(p, &end);
		if (!rc) {
			p->pos = end;
			rc = add(p, JSON_NUMBER, start, end, false);
		}
	} else if (c == 't') {
		rc = literal(p, JSON_TRUE, "true");
	} else if (c == 'f') {
		rc = literal(p, JSON_FALSE, "false");
	} else if (c == 'n') {
		rc = literal(p, JSON_NULL, "null");
	} else {
		return unexpected(p, "a value");
	}
	if (rc < 0)
		return rc;
	after_value(p);
	return 0;
}

static int key(struct parser *p)
{
	size_t start = p->pos, end = p->pos;
	int rc;

	if (p->s[p->pos] != '"')
		return unexpected(p, "a string key");
	rc = scan_string(p, &start, &end);
	if (!rc)
		rc = add(p, JSON_STRING, start, end, true);
	if (rc < 0)
		return rc;
	p->st = ST_COLON;
	return 0;
}

static int trailing_comma(struct parser *p)
{
	return fail(p, -EINVAL, "trailing comma at byte %zu", p->comma);
}

/* One step from the byte at p->pos (not white space). */
static int step(struct parser *p)
{
	unsigned char c = p->s[p->pos];
	bool array;

	switch (p->st) {
	case ST_VALUE:
		return value(p);
	case ST_FIRST_ELEM:
		return c == ']' ? close_container(p) : value(p);
	case ST_ELEM:
		return c == ']' ? trailing_comma(p) : value(p);
	case ST_FIRST_KEY:
		return c == '}' ? close_container(p) : key(p);
	case ST_KEY:
		return c == '}' ? trailing_comma(p) : key(p);
	case ST_COLON:
		if (c != ':')
			return unexpected(p, "':'");
		p->pos++;
		p->st = ST_VALUE;
		return 0;
	case ST_NEXT:
		array = p->d->tok[p->cur].type == JSON_ARRAY;
		if (c == ',') {
			p->comma = p->pos++;
			p->st = array ? ST_ELEM : ST_KEY;
			return 0;
		}
		if (c == (array ? ']' : '}'))
			return close_container(p);
		return unexpected(p, array ? "',' or ']'" : "',' or '}'");
	case ST_DONE:
		break;
	}
	return fail(p, -EINVAL, "trailing data at byte %zu", p->pos);
}

/* What the parser wants when the input ends in state st. */
static const char *wanted(const struct parser *p)
{
	switch (p->st) {
	case ST_FIRST_ELEM:
		return "a value or ']'";
	case ST_FIRST_KEY:
		return "a string key or '}'";
	case ST_KEY:
		return "a string key";
	case ST_COLON:
		return "':'";
	case ST_NEXT:
		return p->d->tok[p->cur].type == JSON_ARRAY ? "',' or ']'" : "',' or '}'";
	default:
		return "a value";
	}
}

static int parse(struct parser *p)
{
	int rc = 0;

	for (;;) {
		while (p->pos < p->len && (p->s[p->pos] == ' ' || p->s[p->pos] == '\t' ||
					   p->s[p->pos] == '\n' || p->s[p->pos] == '\r'))
			p->pos++;
		if (p->pos == p->len)
			break;
		if (p->s[p->pos] == '/')
			return fail(p, -EINVAL, "comment at byte %zu", p->pos);
		rc = step(p);
		if (rc)
			return rc;
	}
	return p->st == ST_DONE ? 0 : unexpected(p, wanted(p));
}

int json__parse(struct json_doc *d, const char *text, size_t len, const struct json_limits *lim,
		char *err, size_t errsz)
{
	struct parser p = {
		.d = d,
		.s = (const unsigned char *)text,
		.len = len,
		.max_tokens = lim && lim->max_tokens ? lim->max_tokens : JSON_MAX_TOKENS,
		.max_depth = lim && lim->max_depth ? lim->max_depth : JSON_MAX_DEPTH,
		.cur = -1,
		.st = ST_VALUE,
		.err = err,
		.errsz = errsz,
	};
	int rc;

	*d = (struct json_doc){ .text = text, .len = len };
	if (err && errsz)
		err[0] = '\0';
	if (p.max_tokens > INT32_MAX)
		p.max_tokens = INT32_MAX;
	if (len >= UINT32_MAX)
		rc = fail(&p, -E2BIG, "text of %zu bytes, longer than %u", len, UINT32_MAX - 1);
	else
		rc = parse(&p);
	free(p.keys);
	if (rc)
		json__free(d);
	return rc;
}

void json__free(struct json_doc *d)
{
	free(d->tok);
	*d = (struct json_doc){ 0 };
}

/* Token i when it is of type type, else NULL. */
static const struct json_tok *tok_of(const struct json_doc *d, int i, enum json_type type)
{
	if (!d || i < 0 || (size_t)i >= d->n || d->tok[i].type != type)
		return NULL;
	return &d->tok[i];
}

int json__first(const struct json_doc *d, int container)
{
	const struct json_tok *t = tok_of(d, container, JSON_OBJECT);

	if (!t)
		t = tok_of(d, container, JSON_ARRAY);
	return t && t->size ? container + 1 : -1;
}

int json__next(const struct json_doc *d, int tok)
{
	size_t j;

	if (!d || tok < 0 || (size_t)tok >= d->n)
		return -1;
	j = (size_t)tok + d->tok[tok].skip;
	return j < d->n && d->tok[j].parent == d->tok[tok].parent ? (int)j : -1;
}

int json__first_member(const struct json_doc *d, int obj, int *val)
{
	const struct json_tok *t = tok_of(d, obj, JSON_OBJECT);

	if (!t || !t->size)
		return -1;
	if (val)
		*val = obj + 2;
	return obj + 1;
}

int json__next_member(const struct json_doc *d, int key, int *val)
{
	int next;

	if (!d || key < 0 || (size_t)key + 1 >= d->n || !tok_of(d, d->tok[key].parent, JSON_OBJECT))
		return -1;
	next = json__next(d, key + 1);
	if (next >= 0 && val)
		*val = next + 1;
	return next;
}

static int member(const struct json_doc *d, int obj, const char *key, size_t n, bool folded)
{
	int v;

	for (int k = json__first_member(d, obj, &v); k >= 0; k = json__next_member(d, k, &v)) {
		if (folded ? str_fold_equal(d, k, key, n) : str_equal(d, k, key, n))
			return v;
	}
	return -1;
}

int json__member(const struct json_doc *d, int obj, const char *key)
{
	return member(d, obj, key, strlen(key), false);
}

int json__member_fold(const struct json_doc *d, int obj, const char *key)
{
	return member(d, obj, key, strlen(key), true);
}

int json__path(const struct json_doc *d, int obj, const char *dotted)
{
	const char *dot;

	for (;;) {
		dot = strchr(dotted, '.');
		obj = member(d, obj, dotted, dot ? (size_t)(dot - dotted) : strlen(dotted), false);
		if (!dot || obj < 0)
			return obj;
		dotted = dot + 1;
	}
}

int json__elem(const struct json_doc *d, int arr, size_t i)
{
	const struct json_tok *t = tok_of(d, arr, JSON_ARRAY);
	size_t e;

	if (!t || i >= t->size)
		return -1;
	for (e = (size_t)arr + 1; i; i--)
		e += d->tok[e].skip;
	return (int)e;
}

int json__string(const struct json_doc *d, int tok, char *out, size_t size)
{
	struct str_it it;
	unsigned char b[4];
	size_t n = 0, k;
	uint32_t c;

	if (size)
		out[0] = '\0';
	if (!tok_of(d, tok, JSON_STRING))
		return -EINVAL;
	str_it_init(&it, d, tok);
	while (str_it_more(&it)) {
		c = str_it_next(&it);
		k = utf8_put(c, b);
		if (!c || k >= size - n) {
			if (size)
				out[0] = '\0';
			return c ? -ENAMETOOLONG : -EINVAL;
		}
		memcpy(out + n, b, k);
		n += k;
	}
	if (n >= size || n > INT_MAX) {
		if (size)
			out[0] = '\0';
		return -ENAMETOOLONG;
	}
	out[n] = '\0';
	return (int)n;
}

bool json__eq(const struct json_doc *d, int tok, const char *s)
{
	return tok_of(d, tok, JSON_STRING) && str_equal(d, tok, s, strlen(s));
}

int json__u64(const struct json_doc *d, int tok, uint64_t *v)
{
	const struct json_tok *t = tok_of(d, tok, JSON_NUMBER);
	uint64_t x = 0;
	unsigned int digit;

	if (!t)
		return -EINVAL;
	for (uint32_t i = t->start; i < t->end; i++) {
		if (!is_digit((unsigned char)d->text[i]))
			return -EINVAL;
	}
	for (uint32_t i = t->start; i < t->end; i++) {
		digit = (unsigned int)(d->text[i] - '0');
		if (x > (UINT64_MAX - digit) / 10)
			return -ERANGE;
		x = x * 10 + digit;
	}
	*v = x;
	return 0;
}
