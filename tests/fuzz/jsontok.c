/* Fuzz target: the JSON tokenizer of user/core/json.c on arbitrary bytes, with the default
 * limits and with small ones. Invariants: no read outside the bytes given (ASan); it accepts
 * exactly what jsoncheck.h's independent checker accepts, but for duplicate keys (which it finds
 * when their object closes, maybe before a syntax error) and the token limit; a refusal leaves no
 * tokens and names byte offsets within the input, and the small limits refuse only what the
 * default ones do or with -E2BIG; an accepted text is valid UTF-8 (jsoncheck's own check), its
 * tokens are in text order, each inside its parent's [start, end), each container's skip is one
 * plus its children's and its size their count; every string unescapes to valid UTF-8 that
 * json__eq() matches, refused with -EINVAL only when it holds \u0000; json__member(),
 * json__member_fold() and json__path() find every key of every object (none of which are equal
 * once folded, checked pairwise here), json__elem() every element; json__u64() agrees with the
 * number's text.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "jsoncheck.h"
#include "util.h"

#define CHECK(cond)                                                                              \
	do {                                                                                     \
		if (!(cond)) {                                                                   \
			fprintf(stderr, "fuzz jsontok: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                                 \
		}                                                                                \
	} while (0)

/* Whether the raw string text[0..n) (checked JSON) has a \u0000 escape. */
static bool has_nul_escape(const char *text, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (text[i] != '\\')
			continue;
		if (i + 5 < n && !memcmp(text + i + 1, "u0000", 5))
			return true;
		i += text[i + 1] == 'u' ? 5 : 1;
	}
	return false;
}

/* Go's field-name folding on valid UTF-8, written apart from json.c's: ASCII letters and the
 * four code points whose fold is ASCII. out holds at least strlen(s) + 1 bytes. */
static void fold_utf8(const char *s, char *out)
{
	static const struct {
		const char *from, *to;
	} special[] = { { "\xc4\xb0", "i" },
			{ "\xc4\xb1", "i" },
			{ "\xc5\xbf", "s" },
			{ "\xe2\x84\xaa", "k" } };

	while (*s) {
		size_t i;

		for (i = 0; i < ARRAY_SIZE(special); i++) {
			size_t n = strlen(special[i].from);

			if (!strncmp(s, special[i].from, n)) {
				*out++ = special[i].to[0];
				s += n;
				break;
			}
		}
		if (i == ARRAY_SIZE(special)) {
			*out++ = *s >= 'A' && *s <= 'Z' ? (char)(*s + 32) : *s;
			s++;
		}
	}
	*out = '\0';
}

/* The unescaped string token t in a fresh buffer, NULL when it holds U+0000. */
static char *unescape(const struct json_doc *d, int t)
{
	const struct json_tok *tok = &d->tok[t];
	size_t raw = tok->end - tok->start;
	char *out = malloc(raw + 1);
	int rc;

	CHECK(out);
	rc = json__string(d, t, out, raw + 1);
	if (has_nul_escape(d->text + tok->start, raw)) {
		CHECK(rc == -EINVAL && out[0] == '\0');
		free(out);
		return NULL;
	}
	CHECK(rc >= 0 && (size_t)rc == strlen(out) && (size_t)rc <= raw);
	CHECK(jsoncheck_utf8_valid(out, (size_t)rc));
	CHECK(json__eq(d, t, out));
	if (rc > 0) {
		CHECK(json__string(d, t, out, (size_t)rc) == -ENAMETOOLONG && out[0] == '\0');
		CHECK(json__string(d, t, out, raw + 1) == rc);
	}
	return out;
}

static void check_token(const struct json_doc *d, int i)
{
	const struct json_tok *t = &d->tok[i], *p;

	CHECK(t->type >= JSON_OBJECT && t->type <= JSON_NULL);
	CHECK(t->start <= t->end && t->end <= d->len);
	CHECK(t->skip >= 1 && (size_t)i + t->skip <= d->n);
	if (i > 0)
		CHECK(d->tok[i - 1].start < t->start);
	if (t->type == JSON_STRING)
		CHECK(t->start > 0 && d->text[t->start - 1] == '"' && d->text[t->end] == '"');
	if (t->type != JSON_OBJECT && t->type != JSON_ARRAY)
		CHECK(t->skip == 1 && t->size == 0);
	if (t->parent < 0) {
		CHECK(i == 0 && t->skip == d->n);
		return;
	}
	CHECK(t->parent < i);
	p = &d->tok[t->parent];
	CHECK(p->type == JSON_OBJECT || p->type == JSON_ARRAY);
	CHECK(p->start < t->start && t->end < p->end);
	CHECK((size_t)i < (size_t)t->parent + p->skip);
}

/* skip is one plus the children's, size their count, elements found by index */
static void check_container(const struct json_doc *d, int c)
{
	const struct json_tok *t = &d->tok[c];
	uint32_t skip = 1, children = 0;

	if (t->type != JSON_OBJECT && t->type != JSON_ARRAY)
		return;
	CHECK(d->text[t->start] == (t->type == JSON_OBJECT ? '{' : '['));
	CHECK(d->text[t->end - 1] == (t->type == JSON_OBJECT ? '}' : ']'));
	for (int k = json__first(d, c); k >= 0; k = json__next(d, k)) {
		CHECK(d->tok[k].parent == c);
		if (t->type == JSON_ARRAY)
			CHECK(json__elem(d, c, children) == k);
		else if (children % 2 == 0)
			CHECK(d->tok[k].type == JSON_STRING);
		skip += d->tok[k].skip;
		children++;
	}
	CHECK(skip == t->skip);
	CHECK(children == (t->type == JSON_OBJECT ? 2 * t->size : t->size));
	if (t->type == JSON_ARRAY)
		CHECK(json__elem(d, c, t->size) == -1);
}

/* every key found by each lookup; no two equal once folded (pairwise, for small objects) */
static void check_members(const struct json_doc *d, int obj)
{
	char *keys[64];
	size_t n = 0;
	int v;

	if (d->tok[obj].type != JSON_OBJECT)
		return;
	for (int k = json__first_member(d, obj, &v); k >= 0; k = json__next_member(d, k, &v)) {
		char *key = unescape(d, k);

		CHECK(v == k + 1 && d->tok[v].parent == obj);
		if (!key)
			continue;
		CHECK(json__member(d, obj, key) == v);
		CHECK(json__member_fold(d, obj, key) == v);
		if (!strchr(key, '.'))
			CHECK(json__path(d, obj, key) == v);
		if (n < ARRAY_SIZE(keys)) {
			keys[n] = malloc(strlen(key) + 1);
			CHECK(keys[n]);
			fold_utf8(key, keys[n++]);
		}
		free(key);
	}
	for (size_t i = 0; i < n; i++) {
		for (size_t j = i + 1; j < n; j++)
			CHECK(strcmp(keys[i], keys[j]) != 0);
	}
	for (size_t i = 0; i < n; i++)
		free(keys[i]);
}

static void check_number(const struct json_doc *d, int t)
{
	const struct json_tok *tok = &d->tok[t];
	char buf[24];
	uint64_t v;
	int rc;

	if (tok->type != JSON_NUMBER)
		return;
	rc = json__u64(d, t, &v);
	if (rc == 0) {
		snprintf(buf, sizeof(buf), "%llu", (unsigned long long)v);
		CHECK(strlen(buf) == tok->end - tok->start);
		CHECK(!memcmp(buf, d->text + tok->start, strlen(buf)));
	} else {
		CHECK(rc == -EINVAL || rc == -ERANGE);
	}
}

static void check_doc(const struct json_doc *d)
{
	char *s;

	CHECK(d->n >= 1);
	CHECK(jsoncheck_utf8_valid(d->text, d->len));
	for (size_t i = 0; i < d->n; i++)
		check_token(d, (int)i);
	for (size_t i = 0; i < d->n; i++) {
		check_container(d, (int)i);
		check_members(d, (int)i);
		check_number(d, (int)i);
		if (d->tok[i].type == JSON_STRING && (s = unescape(d, (int)i)))
			free(s);
	}
}

/* every "at byte N" of a refusal within the input (of a duplicate key, the last: the keys it
 * quotes may hold the words too) */
static void check_refusal(const struct json_doc *d, const char *err, size_t len)
{
	bool dup = !strncmp(err, "duplicate key ", 14);
	const char *at = err, *last = NULL;

	CHECK(d->n == 0 && d->tok == NULL);
	while ((at = strstr(at, " at byte "))) {
		at += strlen(" at byte ");
		if (!dup)
			CHECK(strtoull(at, NULL, 10) <= len);
		last = at;
	}
	CHECK(last && strtoull(last, NULL, 10) <= len);
	if (dup)
		CHECK(strcmp(last + strspn(last, "0123456789"), ")") == 0);
}

static bool same_token(const struct json_tok *a, const struct json_tok *b)
{
	return a->start == b->start && a->end == b->end && a->parent == b->parent &&
	       a->size == b->size && a->skip == b->skip && a->type == b->type;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const struct json_limits small = { .max_tokens = 64, .max_depth = 4 };
	const char *text = (const char *)data;
	char err[JSON_ERR_LEN], err_small[JSON_ERR_LEN];
	struct json_doc d, ds;
	int rc, rc_small;

	rc = json__parse(&d, text, size, NULL, err, sizeof(err));
	rc_small = json__parse(&ds, text, size, &small, err_small, sizeof(err_small));
	CHECK(rc == 0 || rc == -EINVAL || rc == -E2BIG);
	/* a duplicate is found where its object closes, maybe before a syntax error */
	if (rc == 0)
		CHECK(jsoncheck_valid(text, size));
	else if (strncmp(err, "duplicate key ", 14) && strncmp(err, "more than ", 10))
		CHECK(!jsoncheck_valid(text, size));
	if (rc == 0)
		check_doc(&d);
	else
		check_refusal(&d, err, size);
	if (rc_small == 0) {
		CHECK(rc == 0 && ds.n == d.n);
		for (size_t i = 0; i < d.n; i++)
			CHECK(same_token(&ds.tok[i], &d.tok[i]));
	} else {
		check_refusal(&ds, err_small, size);
		CHECK(rc_small == -E2BIG || (rc_small == rc && !strcmp(err, err_small)));
	}
	json__free(&d);
	json__free(&ds);
	return 0;
}
