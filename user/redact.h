/* Secrets never leave the host: every captured string (argv, paths) passes the redactor before
 * it is encoded. Values of arguments and KEY=VALUE pairs whose key looks like a secret, and
 * well-known credential formats, become [REDACTED].
 */
#ifndef EGRET_REDACT_H
#define EGRET_REDACT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#define REDACTED	 "[REDACTED]"
#define REDACT_MAX_KEYS	 64
#define REDACT_MAX_REGEX 32

struct redactor {
	const char *keys[REDACT_MAX_KEYS]; /* lower-case words; a key containing one is secret */
	unsigned int nkeys;
	regex_t regex[REDACT_MAX_REGEX]; /* operator patterns: every match is redacted */
	unsigned int nregex;
	unsigned long long redactions; /* values replaced so far */
};

void redact__init(struct redactor *r);
int redact__add_key(struct redactor *r, const char *word);
int redact__add_pattern(struct redactor *r, const char *regex, char *err, size_t errsz);
bool redact__is_secret_key(const struct redactor *r, const char *key, size_t len);
size_t redact__string(struct redactor *r, const char *in, char *out, size_t size);
void redact__argv(struct redactor *r, char **args, size_t n, char *buf, size_t size);
void redact__free(struct redactor *r);

#endif /* EGRET_REDACT_H */
