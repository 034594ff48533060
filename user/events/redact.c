/* The redactor. Built-in rules, each with a test in tests/unit/redact.c:
 *   - an argument after a flag whose name looks secret: --password hunter2 (two arguments, or
 *     words of one: sh -c "mysql --password hunter2")
 *   - KEY=VALUE where KEY looks secret: --token=x, AWS_SECRET_ACCESS_KEY=x, ?api_key=x&,
 *     'password=x' (a quoted value, as in sh -c "...", whole: PASSWORD='a b'), an .npmrc's
 *     //host/:_authToken=x, a path's /password=x/ component, an ini file's password = x,
 *     --from-literal=password=x
 *   - KEY: VALUE where KEY looks secret (HTTP headers, YAML): Authorization: Bearer x (the
 *     scheme stays: Bearer, Basic, Digest, token, ...), X-Api-Token: x, PRIVATE-TOKEN: x,
 *     password: x. Without a blank after the colon only when KEY ends in a secret word or is
 *     an Authorization (Authorization:Bearer x, X-Api-Token:x; not auth-service:1.2).
 *   - "KEY": VALUE where KEY looks secret (JSON, Python, TOML): "password": "x", 'api_key':'x',
 *     \"token\":\"x\" (JSON in a shell's double quotes), "pin": 1234
 *   - options of commands named before them that carry a secret: curl -u/--user/-U/--proxy-user
 *     and httpie's -a, USER:PASSWORD (the password); mysql and mariadb's -pPASSWORD (glued only:
 *     "-p word" prompts, word is a database); sshpass -p, redis-cli -a/--pass, mongo/mongosh -p,
 *     and -p of docker/podman/nerdctl/buildah/skopeo/helm/oras login
 *   - AWS access key ids (AKIA..., ASIA..., 20 characters)
 *   - GitHub tokens (ghp_, gho_, ghu_, ghs_, ghr_, github_pat_)
 *   - Slack tokens (xoxb-, xoxp-, ...) and JSON Web Tokens (eyJ...eyJ...sig)
 *   - bearer and basic credentials: "Bearer <token>", "Basic <base64>"
 *   - private key blocks: -----BEGIN ... PRIVATE KEY----- ... -----END ...-----
 *   - URLs with a password: scheme://user:password@host, and the user of a URL when it looks
 *     like a token (scheme://TOKEN@host): a known token prefix and 8 more characters, or 32
 *     characters or more with a digit, or 16 or more mixing upper case, lower case and digits,
 *     or 20 or more of which a quarter are digits
 * "Looks secret" means the key contains one of the words below (case-insensitive), or one added
 * with --redact-key. Operator regexes (--redact-pattern, POSIX extended) redact what they match.
 * An unquoted value ends at whitespace (a KEY=VALUE's also at & ; , }), a quoted one at its
 * closing quote (a backslash escapes the next character; followed by one of & ; , | < > ) ] }
 * the quoted value ends), and a quote that closes a quote opened before the key ('password=x')
 * is not part of it; a KEY: VALUE runs to the end of its line (a "\n" written out ends it when
 * one came right before the key), or to the closing quote of a quote opened right before the key
 * (-H 'X-Token: v').
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

/* the key ends in a secret word (X-Api-Token, not token-service) */
static bool ends_secret(const struct redactor *r, const char *key, size_t len)
{
	for (unsigned int i = 0; i < r->nkeys; i++) {
		size_t wl = strlen(r->keys[i]);

		if (wl <= len && !strncasecmp(key + len - wl, r->keys[i], wl))
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

/* c is one of set (never the NUL that ends it) */
static bool one_of(char c, const char *set)
{
	return c && strchr(set, c);
}

static bool is_space(char c)
{
	return isspace((unsigned char)c);
}

/* ---- where rules start ------------------------------------------------------------------- */

/* What may come before a word the rules look at, besides whitespace and the string's start:
 * a flag or an option (--password x, -u x) after " ' ` (; a command's name (/usr/bin/curl,
 * x;curl) after those and / ; | &; a KEY: VALUE after those but /, and { [ , = (--header=
 * Authorization: x); a KEY=VALUE after all of those, and ? : (?token=x, //host/:_authToken=x,
 * /password=x/, --from-literal=password=x).
 */
enum {
	AT_WORD = 1,
	AT_CMD = 2,
	AT_PAIR = 4,
	AT_KV = 8,
	AT_ALL = 15
};

static const unsigned char at_after[256] = {
	[' '] = AT_ALL,
	['\t'] = AT_ALL,
	['\n'] = AT_ALL,
	['\v'] = AT_ALL,
	['\f'] = AT_ALL,
	['\r'] = AT_ALL,
	['"'] = AT_ALL,
	['\''] = AT_ALL,
	['`'] = AT_ALL,
	['('] = AT_ALL,
	['/'] = AT_CMD | AT_KV,
	[';'] = AT_CMD | AT_PAIR | AT_KV,
	['|'] = AT_CMD | AT_PAIR | AT_KV,
	['&'] = AT_CMD | AT_PAIR | AT_KV,
	['{'] = AT_PAIR | AT_KV,
	['['] = AT_PAIR | AT_KV,
	[','] = AT_PAIR | AT_KV,
	['='] = AT_PAIR | AT_KV,
	['?'] = AT_KV,
	[':'] = AT_KV,
};

/* Which words may start at in[i] (AT_*): at the start, after whitespace or the characters
 * above, or after a "\n", "\t" or "\r" written out (printf 'user: a\npassword: x').
 */
static unsigned int starts(const char *in, size_t i)
{
	if (!i)
		return AT_ALL;
	if (i >= 2 && in[i - 2] == '\\' && one_of(in[i - 1], "ntr"))
		return AT_ALL;
	return at_after[(unsigned char)in[i - 1]];
}

/* ---- values ------------------------------------------------------------------------------ */

/* The closing quote of the quoted part opened at s[q] (a backslash escapes the next character,
 * which can only make it longer); n when there is none.
 */
static size_t quote_close(const char *s, size_t n, size_t q)
{
	for (size_t i = q + 1; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == s[q])
			return i;
	}
	return n;
}

/* The next quote character c from s[from] on, backslash-escaped ones skipped; n when none. */
static size_t next_quote(const char *s, size_t n, size_t from, char c)
{
	for (size_t i = from; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (c == '\'' && n - i >= 4 && !strncmp(s + i, "'\\''", 4))
			i += 3; /* sh's quote inside single quotes: 'it'\''s' */
		else if (s[i] == c)
			return i;
	}
	return n;
}

/* A quote followed by this ends a word: it closes a quote opened before the value. */
static bool ends_word(const char *s, size_t n, size_t i)
{
	return i >= n || is_space(s[i]) || one_of(s[i], "&;,|<>)]}\"'");
}

/* Where a value starting at s[v] ends: at whitespace or a character of stops outside quotes. A
 * quoted part runs to its closing quote (PASSWORD='a b'c is one word, as sh reads it), except
 * that a quote that ends the word closes a quote opened before the value ('password=x') and is
 * not part of it. A backslash escapes the next character.
 */
static size_t value_end(const char *s, size_t n, size_t v, const char *stops)
{
	size_t i = v;

	while (i < n) {
		char c = s[i];

		if (c == '"' || c == '\'') {
			size_t close;

			if (i > v && ends_word(s, n, i + 1))
				return i;
			close = quote_close(s, n, i);
			if (close >= n)
				return n;
			i = close + 1;
			if (i < n && one_of(s[i], "&;,|<>)]}")) /* f(token='x') */
				return i;
		} else if (c == '\\') {
			i += 2;
		} else if (is_space(c) || one_of(c, stops)) {
			return i;
		} else {
			i++;
		}
	}
	return n;
}

static void mark(unsigned char *mask, size_t from, size_t to)
{
	if (to > from)
		memset(mask + from, 1, to - from);
}

/* ---- credentials by their form ------------------------------------------------------------ */

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

/* A URL's user looks like a token: see the rules at the top. */
static bool token_like(const char *u, size_t n)
{
	static const char *const prefixes[] = {
		"ghp_",	 "gho_", "ghu_",  "ghs_",  "ghr_", "github_pat_", "glpat-",
		"gldt-", "npm_", "pypi-", "hf_",   "sk-",  "sk_live_",	  "xoxb-",
		"xoxp-", "AKIA", "ASIA",  "ya29.", "AIza", "dop_v1_",	  "shpat_",
	};
	size_t lower = 0, upper = 0, digit = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)u[i];

		if (islower(c))
			lower++;
		else if (isupper(c))
			upper++;
		else if (isdigit(c))
			digit++;
		else if (!strchr("-_.~%+=", c) || !c)
			return false;
	}
	for (size_t i = 0; i < sizeof(prefixes) / sizeof(prefixes[0]); i++) {
		size_t pl = strlen(prefixes[i]);

		if (n >= pl + 8 && !strncmp(u, prefixes[i], pl))
			return true;
	}
	return (n >= 32 && digit) || (n >= 16 && lower && upper && digit) ||
	       (n >= 20 && digit * 4 >= n);
}

/* scheme://user:PASSWORD@, all of it one word; the password runs to the last '@' before the
 * path (an unencoded '@' in it is still the password's). The user too when it looks like a
 * token (scheme://TOKEN@host).
 */
static void url_at(const char *in, size_t n, size_t i, unsigned char *mask)
{
	const char *s = in + i, *sep = s, *end = in + n, *colon, *at = NULL, *user_end;

	if (!isalpha((unsigned char)*s))
		return;
	while (sep < end &&
	       (isalnum((unsigned char)*sep) || *sep == '+' || *sep == '-' || *sep == '.'))
		sep++;
	if (end - sep < 3 || strncmp(sep, "://", 3))
		return;
	sep += 3;
	for (const char *p = sep; p < end && *p != '/' && !is_space(*p); p++) {
		if (*p == '@')
			at = p;
	}
	if (!at)
		return;
	colon = memchr(sep, ':', (size_t)(at - sep));
	if (colon)
		mark(mask, (size_t)(colon + 1 - in), (size_t)(at - in));
	user_end = colon ? colon : at;
	if (token_like(sep, (size_t)(user_end - sep)))
		mark(mask, (size_t)(sep - in), (size_t)(user_end - in));
}

/* ---- secrets by their key ----------------------------------------------------------------- */

/* KEY=VALUE with a secret-looking key: keep KEY=, redact VALUE up to a delimiter (a quoted
 * one to its closing quote).
 */
static size_t key_value_at(const struct redactor *r, const char *s, size_t n, size_t *keep)
{
	size_t k = span(s, n, is_key_char), eq, v, e;

	for (eq = k; eq < n && (s[eq] == ' ' || s[eq] == '\t'); eq++)
		;
	if (!k || eq >= n || s[eq] != '=' || !redact__is_secret_key(r, s, k))
		return 0;
	v = eq + 1;
	if (eq > k) /* password = x (an ini or TOML file): blanks on both sides */
		for (; v < n && (s[v] == ' ' || s[v] == '\t'); v++)
			;
	e = value_end(s, n, v, "&;,}");
	if (e == v)
		return 0;
	*keep = v;
	return e;
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
	if (!k || d + k >= n || !is_space(s[d + k]) || !redact__is_secret_key(r, s + d, k))
		return 0;
	for (v = d + k; v < n && is_space(s[v]); v++)
		;
	if (v == n || s[v] == '-')
		return 0;
	*keep = v;
	return value_end(s, n, v, "");
}

/* The authentication scheme a header value starts with, and the blanks after it: its length,
 * 0 when there is none (or nothing after it).
 */
static size_t scheme_len(const char *s, size_t n)
{
	static const char *const schemes[] = { "Bearer",    "Basic", "Digest",		"token",
					       "Negotiate", "NTLM",  "OAuth",		"Bot",
					       "ApiKey",    "SSWS",  "AWS4-HMAC-SHA256" };

	for (size_t i = 0; i < sizeof(schemes) / sizeof(schemes[0]); i++) {
		size_t l = strlen(schemes[i]), e;

		if (l >= n || strncasecmp(s, schemes[i], l) || (s[l] != ' ' && s[l] != '\t'))
			continue;
		for (e = l; e < n && (s[e] == ' ' || s[e] == '\t'); e++)
			;
		return e < n && s[e] != '\n' && s[e] != '\r' ? e : 0;
	}
	return 0;
}

/* KEY: VALUE with a secret-looking key at in[i] (an HTTP header, a YAML mapping): the value
 * after the scheme of an Authorization-like header, to the end of the line, or to the closing
 * quote of a quote opened right before the key; a quoted value to its closing quote; a YAML
 * block scalar (| or >) to the end.
 */
static void pair_at(const struct redactor *r, const char *in, size_t n, size_t i,
		    unsigned char *mask)
{
	size_t k = span(in + i, n - i, is_key_char), c = i + k + 1, v, e, keep;
	char opener = i && (in[i - 1] == '"' || in[i - 1] == '\'') ? in[i - 1] : 0;

	if (!k || i + k >= n || in[i + k] != ':' || (c < n && in[c] == ':') ||
	    !redact__is_secret_key(r, in + i, k))
		return;
	for (v = c; v < n && (in[v] == ' ' || in[v] == '\t'); v++)
		;
	if (v == n || in[v] == '\n' || in[v] == '\r')
		return;
	if (v == c && !ends_secret(r, in + i, k) && !contains_ci(in + i, k, "authorization"))
		return; /* image: auth-service:1.2 */
	keep = scheme_len(in + v, n - v);
	if (in[v] == '"' || in[v] == '\'') {
		e = value_end(in, n, v, "");
	} else if (in[v] == '|' || in[v] == '>') {
		e = opener ? next_quote(in, n, v, opener) : n;
	} else if (opener) {
		e = next_quote(in, n, v, opener);
	} else {
		/* after a "\n" written out (printf 'a: b\npassword: x\n'), the next one ends it */
		bool written = i >= 2 && in[i - 2] == '\\' && one_of(in[i - 1], "nr");

		for (e = v; e < n && in[e] != '\n' && in[e] != '\r'; e++) {
			if (written && in[e] == '\\' && e + 1 < n && one_of(in[e + 1], "nr"))
				break;
		}
	}
	mark(mask, v + keep, e);
}

/* Where a \"...\" value in a shell's double quotes ends (JSON in sh -c "curl -d '...'"): at a
 * quote after one backslash, or after none or an even number (the shell string ends there); one
 * after 3, 5, ... backslashes is an escaped quote in the value. *end: where the value's text
 * ends. n when there is none.
 */
static size_t escaped_close(const char *s, size_t n, size_t from, size_t *end)
{
	for (size_t i = from; i < n; i++) {
		size_t b = 0;

		if (s[i] != '"')
			continue;
		while (i - b > from && s[i - b - 1] == '\\')
			b++;
		if (b >= 3 && b % 2)
			continue;
		*end = b == 1 ? i - 1 : i;
		return i;
	}
	*end = n;
	return n;
}

/* "KEY": VALUE or "KEY" = VALUE with a secret-looking key, the key's quote at in[i] ('KEY',
 * \"KEY\" in a shell's double quotes): a quoted value's text, or a bare one to whitespace or
 * , } ] or a quote.
 */
static void quoted_key_at(const struct redactor *r, const char *in, size_t n, size_t i,
			  unsigned char *mask)
{
	bool esc = in[i] == '\\';
	size_t j = i + esc, k, e;
	char q;

	if (j >= n || (esc && in[j] != '"'))
		return;
	q = in[j++];
	if (q != '"' && q != '\'')
		return;
	k = span(in + j, n - j, is_key_char);
	if (!k || !redact__is_secret_key(r, in + j, k))
		return;
	j += k;
	if (esc) {
		if (j + 1 >= n || in[j] != '\\' || in[j + 1] != '"')
			return;
		j += 2;
	} else {
		if (j >= n || in[j] != q)
			return;
		j++;
	}
	for (; j < n && is_space(in[j]); j++)
		;
	if (j >= n || (in[j] != ':' && in[j] != '='))
		return;
	for (j++; j < n && is_space(in[j]); j++)
		;
	if (j >= n)
		return;
	if (in[j] == '\\' && j + 1 < n && in[j + 1] == '"') {
		escaped_close(in, n, j + 2, &e);
		mark(mask, j + 2, e);
	} else if (in[j] == '"' || in[j] == '\'') {
		mark(mask, j + 1, quote_close(in, n, j));
	} else {
		for (e = j; e < n && !is_space(in[e]) && !one_of(in[e], ",}]\"'"); e++)
			;
		mark(mask, j, e);
	}
}

/* ---- options of the commands that take secrets in them ------------------------------------- */

enum {
	CMD_CURL = 1 << 0,     /* curl */
	CMD_HTTPIE = 1 << 1,   /* http, https */
	CMD_MYSQL = 1 << 2,    /* mysql*, mariadb* */
	CMD_SSHPASS = 1 << 3,  /* sshpass */
	CMD_REDIS = 1 << 4,    /* redis-cli */
	CMD_MONGO = 1 << 5,    /* mongo* (mongosh, mongodump, ...) */
	CMD_REGISTRY = 1 << 6, /* docker, podman, ...: -p only after "login" */
	CMD_LOGIN = 1 << 7,    /* "login" after one of those */
};

static const struct {
	const char *name;
	bool prefix; /* mysqldump, mariadb-dump */
	unsigned int cmd;
} commands[] = {
	{ "curl", false, CMD_CURL },	    { "http", false, CMD_HTTPIE },
	{ "https", false, CMD_HTTPIE },	    { "mysql", true, CMD_MYSQL },
	{ "mariadb", true, CMD_MYSQL },	    { "sshpass", false, CMD_SSHPASS },
	{ "redis-cli", false, CMD_REDIS },  { "mongo", true, CMD_MONGO },
	{ "docker", false, CMD_REGISTRY },  { "podman", false, CMD_REGISTRY },
	{ "nerdctl", false, CMD_REGISTRY }, { "buildah", false, CMD_REGISTRY },
	{ "skopeo", false, CMD_REGISTRY },  { "helm", false, CMD_REGISTRY },
	{ "oras", false, CMD_REGISTRY },
};

/* The options: short ones (-u) glued (-uVALUE) or apart (-u VALUE, -su VALUE); long ones
 * (--user) with '=' or apart. colon: the value is USER:PASSWORD, the password is secret.
 */
static const struct {
	unsigned int cmd;
	const char *name;
	bool glued, apart, colon;
} options[] = {
	{ CMD_CURL, "-u", true, true, true },	    { CMD_CURL, "-U", true, true, true },
	{ CMD_CURL, "--user", true, true, true },   { CMD_CURL, "--proxy-user", true, true, true },
	{ CMD_HTTPIE, "-a", true, true, true },	    { CMD_MYSQL, "-p", true, false, false },
	{ CMD_SSHPASS, "-p", true, true, false },   { CMD_REDIS, "-a", true, true, false },
	{ CMD_REDIS, "--pass", true, true, false }, { CMD_MONGO, "-p", true, true, false },
	{ CMD_LOGIN, "-p", true, true, false },
};

/* The commands the word at s names, added to cmds. */
static unsigned int command_word(const char *s, size_t n, unsigned int cmds)
{
	size_t w = 0;

	if (!n || !one_of(s[0], "bcdhlmnoprs")) /* what the names below start with */
		return cmds;
	while (w < n && !is_space(s[w]) && !one_of(s[w], ";|&()<>\"'`/="))
		w++;
	if (w == 5 && !strncmp(s, "login", 5) && (cmds & CMD_REGISTRY))
		return cmds | CMD_LOGIN;
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
		size_t l;

		if (s[0] != commands[i].name[0])
			continue;
		l = strlen(commands[i].name);
		if ((w == l || (commands[i].prefix && w > l)) && !strncmp(s, commands[i].name, l))
			return cmds | commands[i].cmd;
	}
	return cmds;
}

/* The commands the words of s name, added to cmds. */
static unsigned int commands_in(const char *s, size_t n, unsigned int cmds)
{
	for (size_t i = 0; i < n; i++) {
		if (!is_space(s[i]) && (starts(s, i) & AT_CMD))
			cmds = command_word(s + i, n - i, cmds);
	}
	return cmds;
}

/* What a word says of a secret value. The options of several commands may match it (-a is
 * httpie's USER:PASSWORD and redis-cli's password, -pa is mysql's password "a" and ends a
 * cluster): each meaning is kept, a USER:PASSWORD only when every match says so.
 */
struct opt_value {
	bool next; /* the next word is a value */
	bool here; /* one is glued to the option, from here_off */
	bool next_colon, here_colon;
	size_t here_off;
};

static void value_next(struct opt_value *o, bool colon)
{
	o->next_colon = o->next ? o->next_colon && colon : colon;
	o->next = true;
}

static void value_here(struct opt_value *o, size_t off, bool colon)
{
	o->here_colon = o->here ? o->here_colon && colon : colon;
	o->here_off = o->here && o->here_off < off ? o->here_off : off;
	o->here = true;
}

/* Is the word at s an option of one of cmds that carries a secret? The value the next word
 * (whole: the option must be all of s, an argument), or glued to it.
 */
static void option_at(unsigned int cmds, const char *s, size_t n, bool whole, struct opt_value *o)
{
	memset(o, 0, sizeof(*o));
	for (size_t i = 0; i < sizeof(options) / sizeof(options[0]); i++) {
		size_t l = strlen(options[i].name), j;
		bool colon = options[i].colon;

		if (!(cmds & options[i].cmd))
			continue;
		if (options[i].name[1] == '-') {
			if (n < l || strncmp(s, options[i].name, l))
				continue;
			if (options[i].apart && (l == n || (!whole && is_space(s[l]))))
				value_next(o, colon);
			if (options[i].glued && l < n && s[l] == '=')
				value_here(o, l + 1, colon);
			continue;
		}
		if (options[i].glued && n > 2 && s[0] == '-' && s[1] == options[i].name[1] &&
		    !is_space(s[2]))
			value_here(o, 2, colon);
		for (j = 1; j < n && isalpha((unsigned char)s[j]); j++)
			;
		if (options[i].apart && s[0] == '-' && j >= 2 && s[j - 1] == options[i].name[1] &&
		    (j == n || (!whole && is_space(s[j]))))
			value_next(o, colon);
	}
}

/* Mark the secret of the value in[v, e): all of it, or what follows USER: (up to the quote
 * that closes a quoted 'USER:PASSWORD')
 */
static void mark_value(const char *in, size_t v, size_t e, bool colon, unsigned char *mask)
{
	const char *c = colon ? memchr(in + v, ':', e - v) : NULL;

	if (!colon)
		mark(mask, v, e);
	else if (c && (in[v] == '"' || in[v] == '\'') && in[e - 1] == in[v] && in + e - 1 > c)
		mark(mask, (size_t)(c + 1 - in), e - 1);
	else if (c)
		mark(mask, (size_t)(c + 1 - in), e);
}

/* An option of a command named before it, at in[i], inside one string (sh -c "curl -u a:b"). */
static void option_value_at(unsigned int cmds, const char *in, size_t n, size_t i,
			    unsigned char *mask)
{
	struct opt_value o;
	size_t v;

	option_at(cmds, in + i, n - i, false, &o);
	if (o.here) {
		v = i + o.here_off;
		mark_value(in, v, value_end(in, n, v, ""), o.here_colon, mask);
	}
	if (o.next) {
		for (v = i; v < n && !is_space(in[v]); v++)
			;
		for (; v < n && is_space(in[v]); v++)
			;
		if (v < n && in[v] != '-')
			mark_value(in, v, value_end(in, n, v, ""), o.next_colon, mask);
	}
}

/* ---- the mask ----------------------------------------------------------------------------- */

/* Mark what the built-in rules find, each rule at each position where it may start. cmds: the
 * commands named before the string (earlier arguments), as the string's own words add to them.
 */
static void mark_rules(const struct redactor *r, const char *in, size_t n, unsigned char *mask,
		       unsigned int cmds)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char prev = i ? (unsigned char)in[i - 1] : ' ', c = (unsigned char)in[i];
		unsigned int at = starts(in, i);
		size_t keep = 0, len;
		bool glued;

		if (!is_key_char(prev) && (len = credential_at(in + i, n - i, &keep)))
			mark(mask, i + keep, i + len);
		if (!isalnum(prev))
			url_at(in, n, i, mask);
		if (c == '"' || c == '\'' || c == '\\')
			quoted_key_at(r, in, n, i, mask);
		/* -HAuthorization: x */
		glued = i >= 2 && in[i - 1] == 'H' && in[i - 2] == '-' &&
			(starts(in, i - 2) & AT_WORD);
		if ((!at && !glued) ||
		    !is_key_char(c)) /* the rest start with a key, a name, a dash */
			continue;
		if ((at & AT_KV) && (len = key_value_at(r, in + i, n - i, &keep)))
			mark(mask, i + keep, i + len);
		if ((at & AT_PAIR) || glued)
			pair_at(r, in, n, i, mask);
		if (at & AT_CMD)
			cmds = command_word(in + i, n - i, cmds);
		if (c == '-' && (at & AT_WORD)) {
			if ((len = flag_value_at(r, in + i, n - i, &keep)))
				mark(mask, i + keep, i + len);
			if (cmds)
				option_value_at(cmds, in, n, i, mask);
		}
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
static unsigned char *mask_of(struct redactor *r, const char *in, size_t n, unsigned int cmds)
{
	if (ARRAY_RESERVE(r->mask, r->maskcap, n + 1))
		return NULL;
	memset(r->mask, 0, n + 1);
	mark_rules(r, in, n, r->mask, cmds);
	mark_patterns(r, in, n, r->mask);
	return r->mask;
}

/* ---- the output --------------------------------------------------------------------------- */

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
#define NOT_ALL	 SIZE_MAX /* no part of a string is secret as a whole */

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

/* One string redacted into out[size], whole when it takes at most fit bytes: what the rules
 * find (cmds: the commands named by the arguments before it), and everything from in[from] on
 * (0: the value after a secret flag; NOT_ALL: nothing). Without memory for the mask, all of it
 * is redacted.
 */
static size_t redact_one(struct redactor *r, const char *in, unsigned int cmds, size_t from,
			 char *out, size_t size, size_t fit, bool *cut)
{
	static const unsigned char one = 1;
	size_t n = strlen(in);
	unsigned char *mask = from == 0 ? NULL : mask_of(r, in, n, cmds);

	if (!mask) /* one marked byte: one [REDACTED] */
		return emit(r, in, n ? 1 : 0, &one, out, size, fit, cut);
	if (from < n)
		mark(mask, from, n);
	return emit(r, in, n, mask, out, size, fit, cut);
}

size_t redact__string(struct redactor *r, const char *in, char *out, size_t size)
{
	bool cut;

	return redact_one(r, in, 0, NOT_ALL, out, size, size ? size - 1 : 0, &cut);
}

size_t redact__cb(void *ctx, const char *in, char *out, size_t size)
{
	return redact__string(ctx, in, out, size);
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

/* What the argument after a flag holds: nothing secret, all of it, or a USER:PASSWORD */
enum {
	NEXT_PLAIN,
	NEXT_SECRET,
	NEXT_COLON
};

/* Where the secret part of an argument starts, given what the one before it said; NOT_ALL. */
static size_t secret_from(const char *arg, int next)
{
	const char *colon;

	if (next == NEXT_SECRET && arg[0] && arg[0] != '-')
		return 0;
	if (next == NEXT_COLON && (colon = strchr(arg, ':')))
		return (size_t)(colon + 1 - arg);
	return NOT_ALL;
}

/* Room kept free after each argument but the last, so that a cut one can say so. */
#define ARGV_RESERVE (sizeof(REDACT_TRUNCATED))

bool redact__argv(struct redactor *r, char **args, size_t *n, char *buf, size_t size)
{
	static char empty[1];
	size_t used = 0, kept = 0;
	bool cut = false;
	int next = NEXT_PLAIN;
	unsigned int cmds = 0;

	while (kept < *n && !cut && used < size) {
		const char *arg = args[kept];
		size_t room = size - used - 1, reserve = kept + 1 < *n ? ARGV_RESERVE : 0;
		size_t len = strlen(arg), from = secret_from(arg, next);
		struct opt_value o;
		char *at = buf + used;

		next = flag_is_secret(r, arg) ? NEXT_SECRET : NEXT_PLAIN;
		option_at(cmds, arg, len, true, &o);
		if (o.next && next == NEXT_PLAIN)
			next = o.next_colon ? NEXT_COLON : NEXT_SECRET;
		else if (o.next)
			next = NEXT_SECRET;
		if (o.here) { /* the whole rest of the argument: -pa b is the password "a b" */
			const char *c = arg + o.here_off;

			if (o.here_colon)
				c = memchr(c, ':', len - o.here_off);
			if (c && (size_t)(c - arg) + o.here_colon < from)
				from = (size_t)(c - arg) + o.here_colon;
		}
		used += redact_one(r, arg, cmds, from, at, size - used,
				   room >= reserve ? room - reserve : MUST_CUT, &cut) +
			1;
		cmds = commands_in(arg, len, cmds);
		args[kept++] = at;
	}
	cut |= kept < *n;
	for (size_t i = kept; i < *n; i++)
		args[i] = empty;
	*n = kept;
	return cut;
}
