/* Secrets never leave the host: every captured string (argv, paths, and what egretd reads from a
 * sandbox's environment and config files) passes the redactor before it is encoded. Values of
 * arguments, KEY=VALUE, KEY: VALUE and "KEY": VALUE pairs whose key looks like a secret, of the
 * options of known commands that carry one (curl -u USER:PASSWORD, mysql -pPASSWORD), and
 * well-known credential formats become [REDACTED] (the rules: redact.c). What does not fit the
 * output is cut after redaction and marked [TRUNCATED]: a size limit never lets a secret through.
 */
#ifndef EGRET_REDACT_H
#define EGRET_REDACT_H

#include <regex.h>
#include <stdbool.h>
#include <stddef.h>

#define REDACTED	 "[REDACTED]"
#define REDACT_TRUNCATED "[TRUNCATED]"
#define REDACT_MAX_KEYS	 64
#define REDACT_MAX_REGEX 32

struct redactor {
	const char *keys[REDACT_MAX_KEYS]; /* lower-case words; a key containing one is secret */
	unsigned int nkeys;
	regex_t regex[REDACT_MAX_REGEX]; /* operator patterns: every match is redacted */
	unsigned int nregex;
	unsigned long long redactions; /* values replaced so far */
	unsigned char *mask;	       /* scratch: which bytes of a string are secret */
	size_t maskcap;
};

void redact__init(struct redactor *r);
int redact__add_key(struct redactor *r, const char *word);
int redact__add_pattern(struct redactor *r, const char *regex, char *err, size_t errsz);
bool redact__is_secret_key(const struct redactor *r, const char *key, size_t len);
/* in redacted into out[size] (cut and ending in [TRUNCATED] when it does not fit); its length */
size_t redact__string(struct redactor *r, const char *in, char *out, size_t size);
/* redact__string(ctx, ...), for a library that cannot link this one (struct pkg_tracker.redact) */
size_t redact__cb(void *ctx, const char *in, char *out, size_t size);
/* Redact argv in place: args[i] become pointers to redacted copies in buf[size], each redacted
 * as redact__string does and with what the arguments before it say (the value after --password,
 * after curl's -u, glued to mysql's -p). When they do not all fit, the last one kept is cut and
 * ends in [TRUNCATED], *n becomes the number kept (the rest point to ""), and the return is true.
 */
bool redact__argv(struct redactor *r, char **args, size_t *n, char *buf, size_t size);
void redact__free(struct redactor *r);

#endif /* EGRET_REDACT_H */
