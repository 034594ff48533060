/* A bounded JSON tokenizer for the files container runtimes and package managers write (OCI
 * state and config.json, podman's containers.json, Docker's config.v2.json, package.json):
 * strict RFC 8259, no recursion, the text parsed once into a flat array of tokens that point
 * into it (jsmn-like). It refuses what two readers could read differently: invalid UTF-8, lone
 * surrogates, and duplicate keys in one object, also keys that differ only in what Go's
 * encoding/json ignores when it matches a key to a struct field (ASCII case, and the four
 * non-ASCII letters that fold to ASCII: U+0130, U+0131, U+017F, U+212A), taking the last of
 * them. That holds for every object, those Go reads into maps (annotations, labels) too.
 *
 * Tokens are in text order. A container's children follow it: an array's elements, an
 * object's members each as a key token (a JSON_STRING) and right after it the value's
 * subtree; the next sibling of token i is i + tok[i].skip.
 */
#ifndef EGRET_JSON_H
#define EGRET_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JSON_MAX_TOKENS 65536
#define JSON_MAX_DEPTH	64
#define JSON_ERR_LEN	160 /* holds every error message */

enum json_type {
	JSON_OBJECT = 1,
	JSON_ARRAY,
	JSON_STRING,
	JSON_NUMBER,
	JSON_TRUE,
	JSON_FALSE,
	JSON_NULL,
};

struct json_tok {
	uint32_t start, end; /* [start, end) in the text: a string's inside its quotes, an
				object's or array's with its brackets */
	int32_t parent;	     /* the containing object or array, -1 for the top */
	uint32_t size;	     /* object: members; array: elements; else 0 */
	uint32_t skip;	     /* tokens in this subtree, itself included */
	uint8_t type;	     /* enum json_type */
};

struct json_doc {
	const char *text; /* the caller's, not copied: it must outlive the document */
	size_t len;
	struct json_tok *tok;
	size_t n, cap;
};

/* A zero field takes its default (JSON_MAX_TOKENS, JSON_MAX_DEPTH). */
struct json_limits {
	size_t max_tokens;
	unsigned int max_depth; /* nested objects and arrays; the top one is depth 1 */
};

/* Parse text[0..len) (not NUL-terminated, never read past len), which must be one JSON value
 * with optional white space around it, into d (overwritten: json__free() an earlier one
 * first). lim NULL for the defaults. 0, -EINVAL for text that is not strict JSON or has a
 * duplicate key, -E2BIG past a limit, -ENOMEM; on an error d holds no tokens and err says what
 * and at which byte offset. */
int json__parse(struct json_doc *d, const char *text, size_t len, const struct json_limits *lim,
		char *err, size_t errsz);
void json__free(struct json_doc *d);

/* Lookups return a token index or -1, and take -1 (or any index that is not of the right type)
 * for obj or arr, returning -1, so calls chain. */

/* The value of the member of object obj whose unescaped key is key, exactly. */
int json__member(const struct json_doc *d, int obj, const char *key);
/* The same with key matched as Go's encoding/json matches a struct field's name (ASCII case
 * and the four letters above folded): what a Go runtime reads for that field. */
int json__member_fold(const struct json_doc *d, int obj, const char *key);
/* json__member() along "linux.cgroupsPath": each dot-separated name in turn. */
int json__path(const struct json_doc *d, int obj, const char *dotted);
/* Element i of array arr (walks the i before it: use json__first/json__next to loop). */
int json__elem(const struct json_doc *d, int arr, size_t i);

/* The first child of a container and the next sibling of a token: an array's elements, or an
 * object's key and value tokens alternately. -1 when there is none. */
int json__first(const struct json_doc *d, int container);
int json__next(const struct json_doc *d, int tok);
/* An object's members: the key token, *val its value's.
 *   for (int k = json__first_member(d, obj, &v); k >= 0; k = json__next_member(d, k, &v)) */
int json__first_member(const struct json_doc *d, int obj, int *val);
int json__next_member(const struct json_doc *d, int key, int *val);

/* The unescaped UTF-8 of string token tok into out[size], NUL-terminated: its length, or
 * -EINVAL when tok is not a string or holds U+0000, -ENAMETOOLONG when it does not fit (out
 * then holds the empty string, as for -EINVAL). */
int json__string(const struct json_doc *d, int tok, char *out, size_t size);
/* Whether tok is a string whose unescaped value is s. */
bool json__eq(const struct json_doc *d, int tok, const char *s);
/* A number token that is a non-negative integer without fraction or exponent: 0, -EINVAL
 * (not one), -ERANGE (past UINT64_MAX). */
int json__u64(const struct json_doc *d, int tok, uint64_t *v);

#endif /* EGRET_JSON_H */
