/* JSON, as much as package.json, npm's lockfile and pip's direct_url.json need: a string or an
 * object member of an object, found by its key among the members at depth 1. Bounded by len,
 * so a file cut anywhere is read safely (no NUL needed).
 */
#ifndef EGRET_PKGJSON_H
#define EGRET_PKGJSON_H

#include <stdbool.h>
#include <stddef.h>

/* the string member key (its escapes undone, cut at size) */
bool pkgmeta__json_string(const char *json, size_t len, const char *key, char *out, size_t size);
/* the object member key: where it starts ('{') and its length up to its '}' */
bool pkgmeta__json_object(const char *json, size_t len, const char *key, const char **obj,
			  size_t *objlen);

#endif /* EGRET_PKGJSON_H */
