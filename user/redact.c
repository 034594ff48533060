/* The redactor. Built-in rules, each with a test in tests/unit/redact.c:
 *   - an argument after a flag whose name looks secret: --password hunter2
 *   - KEY=VALUE where KEY looks secret: --token=x, AWS_SECRET_ACCESS_KEY=x, ?api_key=x&
 *   - AWS access key ids (AKIA..., ASIA..., 20 characters)
 *   - GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)
 *   - Slack tokens (xoxb-, xoxp-, ...) and JSON Web Tokens (eyJ...eyJ...sig)
 *   - bearer and basic credentials: "Bearer <token>", "Basic <base64>"
 *   - private key blocks: -----BEGIN ... PRIVATE KEY----- ... -----END ...-----
 *   - URLs with a password: scheme://user:password@host
 * "Looks secret" means the key contains one of the words below (case-insensitive), or one added
 * with --redact-key. Operator regexes (--redact-pattern, POSIX extended) are applied last.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

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

/* An output buffer that never overflows: a write past the end is dropped. */
struct out {
	char *p;
	size_t len, size;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->len + n >= o->size)
		n = o->len + 1 < o->size ? o->size - 1 - o->len : 0;
	memcpy(o->p + o->len, s, n);
	o->len += n;
	o->p[o->len] = '\0';
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

/* Length of a credential starting at s that a format rule recognises; 0 when none does. *keep
 * is how much of it stays (a scheme, a "Bearer ").
 */
static size_t credential_at(const char *s, size_t n, size_t *keep)
{
	static const char *const aws[] = { "AKIA", "ASIA", "ABIA", "ACCA", "AGPA", "AIDA",
					   "AIPA", "ANPA", "ANVA", "APKA", "AROA", "ASCA" };
	static const char *const gh[] = { "ghp_", "gho_", "ghu_", "ghs_", "ghr_" };
	size_t t;

	*keep = 0;
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

		if (hdr_end && (size_t)(hdr_end - s) < n &&
		    contains_ci(s, (size_t)(hdr_end - s), "PRIVATE KEY")) {
			end = strstr(hdr_end + 5, "-----END ");
			if (end && (end = strstr(end + 9, "-----")))
				return (size_t)(end + 5 - s) <= n ? (size_t)(end + 5 - s) : n;
			return n;
		}
	}
	return 0;
}

/* scheme://user:PASSWORD@ */
static size_t url_password_at(const char *s, size_t n, size_t *keep)
{
	const char *sep = s, *end = s + n, *colon, *at;

	if (!isalpha((unsigned char)*s))
		return 0;
	while (sep < end &&
	       (isalnum((unsigned char)*sep) || *sep == '+' || *sep == '-' || *sep == '.'))
		sep++;
	if (end - sep < 3 || strncmp(sep, "://", 3))
		return 0;
	sep += 3;
	for (colon = sep; colon < end && *colon != ':' && *colon != '@' && *colon != '/'; colon++)
		;
	if (colon >= end || *colon != ':')
		return 0;
	for (at = colon + 1; at < end && *at != '@' && *at != '/' && !isspace((unsigned char)*at);
	     at++)
		;
	if (at >= end || *at != '@' || at == colon + 1)
		return 0;
	*keep = (size_t)(colon + 1 - s);
	return (size_t)(at - s);
}

/* KEY=VALUE (or KEY:VALUE in a URL query) with a secret-looking key: keep KEY=, redact VALUE up
 * to a delimiter.
 */
static size_t key_value_at(const struct redactor *r, const char *s, size_t n, bool at_start,
			   size_t *keep)
{
	size_t k, v;

	if (!at_start)
		return 0;
	k = span(s, n, is_key_char);
	if (!k || k >= n || s[k] != '=' || !redact__is_secret_key(r, s, k))
		return 0;
	for (v = k + 1; v < n && s[v] != '&' && s[v] != ';' && s[v] != ',' && s[v] != ' '; v++)
		;
	if (v == k + 1)
		return 0;
	*keep = k + 1;
	return v;
}

/* The string with every secret the rules find replaced; returns the output length. */
size_t redact__string(struct redactor *r, const char *in, char *outbuf, size_t size)
{
	struct out o = { .p = outbuf, .size = size };
	size_t n = strlen(in), i = 0;

	if (size)
		outbuf[0] = '\0';
	while (i < n) {
		bool start = i == 0 || !is_key_char((unsigned char)in[i - 1]);
		size_t keep = 0, len = 0;

		if (start)
			len = credential_at(in + i, n - i, &keep);
		if (!len && (i == 0 || !isalnum((unsigned char)in[i - 1])))
			len = url_password_at(in + i, n - i, &keep);
		if (!len && (i == 0 || strchr("?&;, \t", in[i - 1])))
			len = key_value_at(r, in + i, n - i, true, &keep);
		if (!len && (in[i] == '-' && (i == 0 || in[i - 1] == ' ')))
			len = key_value_at(r, in + i, n - i, true, &keep);
		if (len) {
			put(&o, in + i, keep);
			put(&o, REDACTED, strlen(REDACTED));
			r->redactions++;
			i += len;
			continue;
		}
		put(&o, in + i, 1);
		i++;
	}
	for (unsigned int k = 0; k < r->nregex; k++) {
		char tmp[8192];
		struct out t = { .p = tmp, .size = sizeof(tmp) };
		const char *p = outbuf;
		regmatch_t m;

		tmp[0] = '\0';
		while (*p && regexec(&r->regex[k], p, 1, &m, p == outbuf ? 0 : REG_NOTBOL) == 0 &&
		       m.rm_eo > m.rm_so) {
			put(&t, p, (size_t)m.rm_so);
			put(&t, REDACTED, strlen(REDACTED));
			r->redactions++;
			p += m.rm_eo;
		}
		if (p == outbuf)
			continue;
		put(&t, p, strlen(p));
		o.len = 0;
		put(&o, tmp, t.len);
	}
	return o.len;
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

/* Redact argv in place: args[i] are replaced by pointers into buf (the redacted copies). */
void redact__argv(struct redactor *r, char **args, size_t n, char *buf, size_t size)
{
	size_t used = 0;

	for (size_t i = 0; i < n; i++) {
		size_t len;

		if (used >= size)
			break;
		if (i > 0 && flag_is_secret(r, args[i - 1]) && args[i][0] != '-' && args[i][0]) {
			len = (size_t)snprintf(buf + used, size - used, "%s", REDACTED);
			r->redactions++;
		} else {
			len = redact__string(r, args[i], buf + used, size - used);
		}
		args[i] = buf + used;
		used += len + 1;
	}
}
