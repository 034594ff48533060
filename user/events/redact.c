/* The redactor. Built-in rules, each with a test in tests/unit/redact.c:
 *   - an argument after a flag whose name looks secret: --password hunter2 (two arguments, or
 *     words of one: sh -c "mysql --password hunter2")
 *   - KEY=VALUE where KEY looks secret: --token=x, AWS_SECRET_ACCESS_KEY=x, ?api_key=x&,
 *     'password=x' (a quoted value, as in sh -c "...", whole: PASSWORD='a b')
 *   - AWS access key ids (AKIA..., ASIA..., 20 characters)
 *   - GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)
 *   - Slack tokens (xoxb-, xoxp-, ...) and JSON Web Tokens (eyJ...eyJ...sig)
 *   - bearer and basic credentials: "Bearer <token>", "Basic <base64>"
 *   - private key blocks: -----BEGIN ... PRIVATE KEY----- ... -----END ...-----
 *   - URLs with a password: scheme://user:password@host
 * "Looks secret" means the key contains one of the words below (case-insensitive), or one added
 * with --redact-key. Operator regexes (--redact-pattern, POSIX extended) redact what they match.
 * Every rule looks at every position on its own and marks the bytes it finds secret, so one
 * rule's match (a URL) never hides another's (an AWS key id in it); then the marked runs become
 * [REDACTED]. Output that does not fit is cut after redaction and ends in [TRUNCATED], so a size
 * limit never lets a secret through.
 */
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "redact.h"
#include "util.h"

static const char *const default_keys[] = {
	"password", "passwd", "pwd",	    "passphrase", "secret",  "token",  "apikey",  "api_key",
	"api-key",  "key",    "credential", "auth",	  "session", "cookie", "private",
};

void redact__init(struct redactor *r)
{
	memset(r, 0, sizeof(*r));
	for (size_t i = 0; i < sizeof(default_keys) / sizeof(default_keys[0]); i++)
		r->keys[r->nkeys++] = default_keys[i];
}

int redact__add_key(struct redactor *r, const char *word)
{
	char *w;

	if (r->nkeys == REDACT_MAX_KEYS || !*word)
		return -E2BIG;
	w = strdup(word);
	if (!w)
		return -ENOMEM;
	for (char *p = w; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	r->keys[r->nkeys++] = w;
	return 0;
}

int redact__add_pattern(struct redactor *r, const char *regex, char *err, size_t errsz)
{
	int rc;

	if (r->nregex == REDACT_MAX_REGEX) {
		snprintf(err, errsz, "more than %d redaction patterns", REDACT_MAX_REGEX);
		return -E2BIG;
	}
	rc = regcomp(&r->regex[r->nregex], regex, REG_EXTENDED);
	if (rc) {
		regerror(rc, &r->regex[r->nregex], err, errsz);
		return -EINVAL;
	}
	r->nregex++;
	return 0;
}

void redact__free(struct redactor *r)
{
	free(r->mask);
	r->mask = NULL;
	r->maskcap = 0;
	for (unsigned int i = 0; i < r->nregex; i++)
		regfree(&r->regex[i]);
	for (unsigned int i = sizeof(default_keys) / sizeof(default_keys[0]); i < r->nkeys; i++)
		free((void *)r->keys[i]);
	r->nkeys = r->nregex = 0;
}

static bool contains_ci(const char *s, size_t len, const char *word)
{
	size_t wl = strlen(word);

	for (size_t i = 0; i + wl <= len; i++) {
		if (!strncasecmp(s + i, word, wl))
			return true;
	}
	return false;
}

bool redact__is_secret_key(const struct redactor *r, const char *key, size_t len)
{
	for (unsigned int i = 0; i < r->nkeys; i++) {
		if (contains_ci(key, len, r->keys[i]))
			return true;
	}
	return false;
}

static bool token_char(char c)
{
	return isalnum((unsigned char)c) || c == '-' || c == '_' || c == '.' || c == '~' ||
	       c == '+' || c == '/' || c == '=';
}

static size_t span(const char *s, size_t max, int (*cls)(int))
{
	size_t n = 0;

	while (n < max && cls((unsigned char)s[n]))
		n++;
	return n;
}

static int is_key_char(int c)
{
	return isalnum(c) || c == '_' || c == '-' || c == '.';
}

static int is_upper_digit(int c)
{
	return isupper(c) || isdigit(c);
}

static int is_token(int c)
{
	return token_char((char)c);
}

static int is_b64url(int c)
{
	return isalnum(c) || c == '_' || c == '-';
}

static int is_dash(int c)
{
	return c == '-';
}

/* Length of a credential starting at s that a format rule recognises; 0 when none does. *keep
 * is how much of it stays (a "Bearer ").
 */
static size_t credential_at(const char *s, size_t n, size_t *keep)
{
	static const char *const aws[] = { "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA",
					   "AIPA", "ANPA", "ANVA", "APKA", "AROA", "ASCA" };
	static const char *const gh[] = { "ghp_", "gho_", "ghu_", "ghs_", "ghr_" };
	size_t t;

	*keep = 0;
	if (!*s || !strchr("AgxebB-", *s)) /* what every format below starts with */
		return 0;
	for (size_t i = 0; i < sizeof(aws) / sizeof(aws[0]); i++) {
		if (n >= 20 && !strncmp(s, aws[i], 4) && span(s + 4, 16, is_upper_digit) == 16 &&
		    (n == 20 || !is_upper_digit((unsigned char)s[20])))
			return 20;
	}
	for (size_t i = 0; i < sizeof(gh) / sizeof(gh[0]); i++) {
		if (n > 4 && !strncmp(s, gh[i], 4) && (t = span(s + 4, n - 4, is_b64url)) >= 30)
			return 4 + t;
	}
	if (n > 11 && !strncmp(s, "github_pat_", 11) && (t = span(s + 11, n - 11, is_b64url)) >= 22)
		return 11 + t;
	if (n > 5 && !strncmp(s, "xox", 3) && strchr("abposr", s[3]) && s[4] == '-' &&
	    (t = span(s + 5, n - 5, is_b64url)) >= 10)
		return 5 + t;
	if (n > 10 && !strncmp(s, "eyJ", 3)) {
		size_t a = span(s, n, is_b64url), b, c;

		if (a < n && s[a] == '.' && (b = span(s + a + 1, n - a - 1, is_b64url)) &&
		    a + 1 + b < n && s[a + 1 + b] == '.' &&
		    (c = span(s + a + b + 2, n - a - b - 2, is_b64url)) >= 8)
			return a + b + c + 2;
	}
	if (n > 7 && (!strncasecmp(s, "bearer ", 7) || !strncasecmp(s, "basic ", 6))) {
		size_t k = s[1] == 'e' || s[1] == 'E' ? 7 : 6;

		if ((t = span(s + k, n - k, is_token)) >= 8) {
			*keep = k;
			return k + t;
		}
	}
	if (n > 11 && !strncmp(s, "-----BEGIN ", 11)) {
		const char *hdr_end = strstr(s + 11, "-----");
		const char *end;

		if (hdr_end && contains_ci(s, (size_t)(hdr_end - s), "PRIVATE KEY")) {
			end = strstr(hdr_end + 5, "-----END ");
			if (end && (end = strstr(end + 9, "-----")))
				return (size_t)(end + 5 - s);
			return n;
		}
	}
	return 0;
}

/* scheme://user:PASSWORD@, all of it one word; the password runs to the last '@' before the
 * path (an unencoded '@' in it is still the password's)
 */
static size_t url_password_at(const char *s, size_t n, size_t *keep)
{
	const char *sep = s, *end = s + n, *colon, *at = NULL;

	if (!isalpha((unsigned char)*s))
		return 0;
	while (sep < end &&
	       (isalnum((unsigned char)*sep) || *sep == '+' || *sep == '-' || *sep == '.'))
		sep++;
	if (end - sep < 3 || strncmp(sep, "://", 3))
		return 0;
	sep += 3;
	for (const char *p = sep; p < end && *p != '/' && !isspace((unsigned char)*p); p++) {
		if (*p == '@')
			at = p;
	}
	colon = at ? memchr(sep, ':', (size_t)(at - sep)) : NULL;
	if (!colon || at == colon + 1)
		return 0;
	*keep = (size_t)(colon + 1 - s);
	return (size_t)(at - s);
}

/* Where a value starting at s[v] ends: at its closing quote when it is quoted (or at the end),
 * otherwise at whitespace or a character of stops.
 */
static size_t value_end(const char *s, size_t n, size_t v, const char *stops)
{
	if (v < n && (s[v] == '"' || s[v] == '\'')) {
		const char *close = memchr(s + v + 1, s[v], n - v - 1);

		return close ? (size_t)(close - s) + 1 : n;
	}
	while (v < n && !strchr(stops, s[v]) && !isspace((unsigned char)s[v]))
		v++;
	return v;
}

/* KEY=VALUE with a secret-looking key: keep KEY=, redact VALUE up to a delimiter (a quoted
 * one to its closing quote).
 */
static size_t key_value_at(const struct redactor *r, const char *s, size_t n, size_t *keep)
{
	size_t k, v;

	k = span(s, n, is_key_char);
	if (!k || k >= n || s[k] != '=' || !redact__is_secret_key(r, s, k))
		return 0;
	v = value_end(s, n, k + 1, "&;,");
	if (v == k + 1)
		return 0;
	*keep = k + 1;
	return v;
}

/* "--password hunter2" inside one string (sh -c "..."): the word after a secret-looking flag,
 * unless it is an option itself.
 */
static size_t flag_value_at(const struct redactor *r, const char *s, size_t n, size_t *keep)
{
	size_t d = span(s, n, is_dash), k, v;

	if (!d || d > 2)
		return 0;
	k = span(s + d, n - d, is_key_char);
	if (!k || d + k >= n || !isspace((unsigned char)s[d + k]) ||
	    !redact__is_secret_key(r, s + d, k))
		return 0;
	for (v = d + k; v < n && isspace((unsigned char)s[v]); v++)
		;
	if (v == n || s[v] == '-')
		return 0;
	*keep = v;
	return value_end(s, n, v, "");
}

static void mark(unsigned char *mask, size_t from, size_t to)
{
	memset(mask + from, 1, to - from);
}

/* Mark what the built-in rules find, each rule at each position where it may start. */
static void mark_rules(const struct redactor *r, const char *in, size_t n, unsigned char *mask)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char prev = i ? (unsigned char)in[i - 1] : ' ';
		size_t keep = 0, len;

		if (!is_key_char(prev) && (len = credential_at(in + i, n - i, &keep)))
			mark(mask, i + keep, i + len);
		if (!isalnum(prev) && (len = url_password_at(in + i, n - i, &keep)))
			mark(mask, i + keep, i + len);
		if ((isspace(prev) || strchr("?&;,\"'`(", prev)) &&
		    (len = key_value_at(r, in + i, n - i, &keep)))
			mark(mask, i + keep, i + len);
		if (isspace(prev) && (len = flag_value_at(r, in + i, n - i, &keep)))
			mark(mask, i + keep, i + len);
	}
}

/* Mark every match of the operator's patterns (an empty match marks nothing). */
static void mark_patterns(const struct redactor *r, const char *in, size_t n, unsigned char *mask)
{
	for (unsigned int k = 0; k < r->nregex; k++) {
		size_t off = 0;
		regmatch_t m;

		while (off < n && !regexec(&r->regex[k], in + off, 1, &m, off ? REG_NOTBOL : 0)) {
			mark(mask, off + (size_t)m.rm_so, off + (size_t)m.rm_eo);
			off += (size_t)(m.rm_eo > m.rm_so ? m.rm_eo : m.rm_so + 1);
		}
	}
}

/* The mask of in's secret bytes, in r's scratch space; NULL when there is no memory. */
static unsigned char *mask_of(struct redactor *r, const char *in, size_t n)
{
	if (ARRAY_RESERVE(r->mask, r->maskcap, n + 1))
		return NULL;
	memset(r->mask, 0, n + 1);
	mark_rules(r, in, n, r->mask);
	mark_patterns(r, in, n, r->mask);
	return r->mask;
}

/* Length of the next piece of the output at in[i]: a marked run (becomes [REDACTED]), or one
 * character (a UTF-8 sequence is not split).
 */
static size_t piece(const char *in, size_t n, const unsigned char *mask, size_t i)
{
	size_t j = i + 1;

	if (mask[i]) {
		while (j < n && mask[j])
			j++;
		return j - i;
	}
	while (j < n && !mask[j] && ((unsigned char)in[j] & 0xc0) == 0x80)
		j++;
	return j - i;
}

/* The output with marked runs replaced, into out[size] when out is not NULL, at most limit
 * bytes of it; its length.
 */
static size_t render(const char *in, size_t n, const unsigned char *mask, char *out, size_t limit,
		     unsigned long long *runs)
{
	size_t len = 0;

	for (size_t i = 0, p; i < n; i += p) {
		size_t w;

		p = piece(in, n, mask, i);
		w = mask[i] ? sizeof(REDACTED) - 1 : p;
		if (len + w > limit)
			break;
		if (out)
			memcpy(out + len, mask[i] ? REDACTED : in + i, w);
		if (runs && mask[i])
			(*runs)++;
		len += w;
	}
	return len;
}

#define MUST_CUT SIZE_MAX /* a fit that nothing meets */

/* in[0..n) with the mask applied into out[size]: whole when that takes at most fit bytes,
 * otherwise cut and ended with [TRUNCATED] (*cut). The length written.
 */
static size_t emit(struct redactor *r, const char *in, size_t n, const unsigned char *mask,
		   char *out, size_t size, size_t fit, bool *cut)
{
	const size_t mlen = sizeof(REDACT_TRUNCATED) - 1;
	size_t len;

	*cut = fit == MUST_CUT || render(in, n, mask, NULL, SIZE_MAX, NULL) > fit;
	if (!size)
		return 0;
	if (!*cut) {
		len = render(in, n, mask, out, fit, &r->redactions);
	} else {
		len = render(in, n, mask, out, size - 1 > mlen ? size - 1 - mlen : 0,
			     &r->redactions);
		len += str_copy(out + len, size - len, REDACT_TRUNCATED);
	}
	out[len] = '\0';
	return len;
}

/* One string redacted into out[size] (all of it when all: the value after a secret flag),
 * whole when it takes at most fit bytes. Without memory for the mask, all of it is redacted.
 */
static size_t redact_one(struct redactor *r, const char *in, bool all, char *out, size_t size,
			 size_t fit, bool *cut)
{
	static const unsigned char one = 1;
	size_t n = strlen(in);
	const unsigned char *mask = all ? NULL : mask_of(r, in, n);

	if (!mask) /* one marked byte: one [REDACTED] */
		return emit(r, in, n ? 1 : 0, &one, out, size, fit, cut);
	return emit(r, in, n, mask, out, size, fit, cut);
}

size_t redact__string(struct redactor *r, const char *in, char *out, size_t size)
{
	bool cut;

	return redact_one(r, in, false, out, size, size ? size - 1 : 0, &cut);
}

static bool flag_is_secret(const struct redactor *r, const char *arg)
{
	const char *name = arg;

	if (*name != '-')
		return false;
	while (*name == '-')
		name++;
	return *name && !strchr(name, '=') && redact__is_secret_key(r, name, strlen(name));
}

/* Room kept free after each argument but the last, so that a cut one can say so. */
#define ARGV_RESERVE (sizeof(REDACT_TRUNCATED))

bool redact__argv(struct redactor *r, char **args, size_t *n, char *buf, size_t size)
{
	static char empty[1];
	size_t used = 0, kept = 0;
	bool cut = false, after_flag = false;

	while (kept < *n && !cut && used < size) {
		const char *arg = args[kept];
		size_t room = size - used - 1, reserve = kept + 1 < *n ? ARGV_RESERVE : 0;
		bool value = after_flag && arg[0] && arg[0] != '-';
		char *at = buf + used;

		after_flag = flag_is_secret(r, arg);
		used += redact_one(r, arg, value, at, size - used,
				   room >= reserve ? room - reserve : MUST_CUT, &cut) +
			1;
		args[kept++] = at;
	}
	cut |= kept < *n;
	for (size_t i = kept; i < *n; i++)
		args[i] = empty;
	*n = kept;
	return cut;
}
