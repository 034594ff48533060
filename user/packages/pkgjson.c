/* The JSON reader of package metadata; see pkgjson.h. */
#include <ctype.h>
#include <string.h>

#include "pkgjson.h"

/* Skip a JSON string starting at p (on its quote); returns the char after it. */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return end;
}

static const char *skip_space(const char *p, const char *end)
{
	while (p < end && isspace((unsigned char)*p))
		p++;
	return p;
}

/* The value of key among the members of the object at depth 1 of json[0..len): its first byte,
 * never json + len (a file cut after the colon has no value).
 */
static const char *member(const char *json, size_t len, const char *key)
{
	const char *p = json, *end = json + len;
	size_t kl = strlen(key);
	int depth = 0;

	while (p < end) {
		if (*p == '"') {
			const char *s = p, *e = skip_string(p, end), *q = skip_space(e, end);

			if (depth == 1 && q < end && *q == ':' && (size_t)(e - s - 2) == kl &&
			    !memcmp(s + 1, key, kl)) {
				q = skip_space(q + 1, end);
				return q < end ? q : NULL;
			}
			p = e;
			continue;
		}
		if (*p == '{' || *p == '[')
			depth++;
		else if (*p == '}' || *p == ']')
			depth--;
		p++;
	}
	return NULL;
}

bool pkgmeta__json_string(const char *json, size_t len, const char *key, char *out, size_t size)
{
	const char *v = member(json, len, key), *e;
	size_t n = 0;

	if (!v || *v != '"')
		return false;
	e = skip_string(v, json + len);
	for (const char *p = v + 1; p < e - 1 && n + 1 < size; p++) {
		if (*p == '\\' && p + 1 < e - 1)
			p++;
		out[n++] = *p;
	}
	out[n] = '\0';
	return true;
}

bool pkgmeta__json_object(const char *json, size_t len, const char *key, const char **obj,
			  size_t *objlen)
{
	const char *v = member(json, len, key), *p, *end = json + len;
	int depth = 0;

	if (!v || *v != '{')
		return false;
	for (p = v; p < end; p++) {
		if (*p == '"') {
			p = skip_string(p, end) - 1;
			continue;
		}
		if (*p == '{')
			depth++;
		else if (*p == '}' && --depth == 0) {
			*obj = v;
			*objlen = (size_t)(p - v + 1);
			return true;
		}
	}
	return false;
}
