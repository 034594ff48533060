/* A strict JSON checker for tests (RFC 8259, one value, nothing after it but whitespace), with
 * its own UTF-8 check (RFC 3629: no overlong forms, surrogates or code points above U+10FFFF)
 * written apart from user/delivery/pbjson.c's, so the two do not share a mistake. Header-only,
 * used by the fuzz targets and the unit tests.
 */
#ifndef EGRET_JSONCHECK_H
#define EGRET_JSONCHECK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jsoncheck {
	const unsigned char *p, *end;
	int depth;
};

/* The code point of the UTF-8 sequence at *p, advancing *p; -1 when it is not valid. */
static inline long jsoncheck_utf8(const unsigned char **pp, const unsigned char *end)
{
	const unsigned char *p = *pp;
	long cp, min;
	int n;

	if (p[0] < 0x80) {
		*pp = p + 1;
		return p[0];
	}
	if ((p[0] & 0xe0) == 0xc0) {
		n = 1, cp = p[0] & 0x1f, min = 0x80;
	} else if ((p[0] & 0xf0) == 0xe0) {
		n = 2, cp = p[0] & 0x0f, min = 0x800;
	} else if ((p[0] & 0xf8) == 0xf0) {
		n = 3, cp = p[0] & 0x07, min = 0x10000;
	} else {
		return -1;
	}
	if (end - p <= n)
		return -1;
	for (int i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return -1;
		cp = (cp << 6) | (p[i] & 0x3f);
	}
	if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
		return -1;
	*pp = p + n + 1;
	return cp;
}

static inline bool jsoncheck_utf8_valid(const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s, *end = p + len;

	while (p < end) {
		if (jsoncheck_utf8(&p, end) < 0)
			return false;
	}
	return true;
}

static inline void jsoncheck_ws(struct jsoncheck *c)
{
	while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
		c->p++;
}

static inline bool jsoncheck_lit(struct jsoncheck *c, const char *lit)
{
	for (; *lit; lit++, c->p++) {
		if (c->p == c->end || *c->p != (unsigned char)*lit)
			return false;
	}
	return true;
}

static inline int jsoncheck_hex4(struct jsoncheck *c)
{
	int v = 0;

	for (int i = 0; i < 4; i++, c->p++) {
		unsigned char h;

		if (c->p == c->end)
			return -1;
		h = *c->p;
		v <<= 4;
		if (h >= '0' && h <= '9')
			v |= h - '0';
		else if (h >= 'a' && h <= 'f')
			v |= h - 'a' + 10;
		else if (h >= 'A' && h <= 'F')
			v |= h - 'A' + 10;
		else
			return -1;
	}
	return v;
}

/* A string, from its opening quote; escaped surrogates must pair up. */
static inline bool jsoncheck_string(struct jsoncheck *c)
{
	c->p++;
	for (;;) {
		if (c->p == c->end || *c->p < 0x20)
			return false;
		if (*c->p == '"') {
			c->p++;
			return true;
		}
		if (*c->p == '\\') {
			int u;

			if (++c->p == c->end)
				return false;
			switch (*c->p++) {
			case '"':
			case '\\':
			case '/':
			case 'b':
			case 'f':
			case 'n':
			case 'r':
			case 't':
				continue;
			case 'u':
				u = jsoncheck_hex4(c);
				if (u < 0 || (u >= 0xdc00 && u <= 0xdfff))
					return false;
				if (u >= 0xd800 && u <= 0xdbff) {
					if (!jsoncheck_lit(c, "\\u"))
						return false;
					u = jsoncheck_hex4(c);
					if (u < 0xdc00 || u > 0xdfff)
						return false;
				}
				continue;
			default:
				return false;
			}
		}
		if (jsoncheck_utf8(&c->p, c->end) < 0)
			return false;
	}
}

static inline bool jsoncheck_digits(struct jsoncheck *c)
{
	const unsigned char *start = c->p;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9')
		c->p++;
	return c->p > start;
}

static inline bool jsoncheck_number(struct jsoncheck *c)
{
	if (*c->p == '-')
		c->p++;
	if (c->p < c->end && *c->p == '0')
		c->p++;
	else if (!jsoncheck_digits(c))
		return false;
	if (c->p < c->end && *c->p == '.') {
		c->p++;
		if (!jsoncheck_digits(c))
			return false;
	}
	if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
		c->p++;
		if (c->p < c->end && (*c->p == '+' || *c->p == '-'))
			c->p++;
		if (!jsoncheck_digits(c))
			return false;
	}
	return true;
}

static inline bool jsoncheck_value(struct jsoncheck *c);

/* An object or an array, from its opening bracket. */
static inline bool jsoncheck_container(struct jsoncheck *c, bool object)
{
	unsigned char close = object ? '}' : ']';

	if (++c->depth > 64)
		return false;
	c->p++;
	jsoncheck_ws(c);
	if (c->p < c->end && *c->p == close) {
		c->p++;
		c->depth--;
		return true;
	}
	for (;;) {
		if (object) {
			jsoncheck_ws(c);
			if (c->p == c->end || *c->p != '"' || !jsoncheck_string(c))
				return false;
			jsoncheck_ws(c);
			if (c->p == c->end || *c->p++ != ':')
				return false;
		}
		if (!jsoncheck_value(c))
			return false;
		jsoncheck_ws(c);
		if (c->p == c->end)
			return false;
		if (*c->p == close) {
			c->p++;
			c->depth--;
			return true;
		}
		if (*c->p++ != ',')
			return false;
	}
}

static inline bool jsoncheck_value(struct jsoncheck *c)
{
	jsoncheck_ws(c);
	if (c->p == c->end)
		return false;
	switch (*c->p) {
	case '{':
		return jsoncheck_container(c, true);
	case '[':
		return jsoncheck_container(c, false);
	case '"':
		return jsoncheck_string(c);
	case 't':
		return jsoncheck_lit(c, "true");
	case 'f':
		return jsoncheck_lit(c, "false");
	case 'n':
		return jsoncheck_lit(c, "null");
	default:
		return jsoncheck_number(c);
	}
}

/* Is s[0..len) exactly one JSON value (surrounded by whitespace at most)? */
static inline bool jsoncheck_valid(const char *s, size_t len)
{
	struct jsoncheck c = { (const unsigned char *)s, (const unsigned char *)s + len, 0 };

	if (!jsoncheck_value(&c))
		return false;
	jsoncheck_ws(&c);
	return c.p == c.end;
}

#endif /* EGRET_JSONCHECK_H */
