/* Fuzz target: the redactor never lets a planted secret through. The input is turned into an
 * argv of fuzz-chosen text with secrets planted at fuzz-chosen places, in every shape README's
 * "Secrets never leave the host" promises (flag values, KEY=VALUE (in a query, after a quote, in
 * an .npmrc line, as a path component, ini-style with blanks), AWS key ids, GitHub and Slack
 * tokens, JWTs, Bearer/Basic, private key blocks, URLs with a password or a token as their user,
 * the options of commands that take a secret (curl -u USER:PASSWORD, mysql -pPASSWORD, sshpass
 * -p, docker login -p, ...), headers (Authorization with its schemes, X-Api-Token, ...), JSON
 * "KEY": VALUE (in single, double or shell-escaped quotes), YAML KEY: VALUE (in a heredoc, a
 * printf, a block scalar), an operator's key and pattern), each set off by whitespace or an
 * argument boundary. A planted value has a '7' at every even position, and the text around it
 * never has one, so a '7' in any output is a piece of a secret that got through. Checked:
 * redact__argv() with the buffer egretd uses and with smaller ones, redact__string() of every
 * argument and of all of them joined with spaces (as sh -c sees them), at several output sizes;
 * a cut output is a prefix of the whole one followed by [TRUNCATED].
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "redact.h"

#define MAX_ARGS  256
#define MAX_BYTES 6144 /* more than the kernel's 4096 of argv, so cuts happen */

struct input {
	const uint8_t *p;
	size_t n;
};

static unsigned int next(struct input *in)
{
	if (!in->n)
		return 0;
	in->n--;
	return *in->p++;
}

struct argv {
	char text[MAX_BYTES + 1024]; /* args, NUL-separated */
	size_t len;
	size_t start[MAX_ARGS];
	/* a secret only with the arguments before it: the one after its flag, an option of a
	 * command named in an earlier argument
	 */
	bool after_flag[MAX_ARGS];
	size_t n;
};

static void add(struct argv *a, const char *s, size_t n)
{
	if (a->len + n < sizeof(a->text) - 1) {
		memcpy(a->text + a->len, s, n);
		a->len += n;
	}
}

static void adds(struct argv *a, const char *s)
{
	add(a, s, strlen(s));
}

static void addc(struct argv *a, char c)
{
	add(a, &c, 1);
}

static void end_arg(struct argv *a)
{
	if (a->n < MAX_ARGS) {
		addc(a, '\0');
		a->after_flag[a->n] = false;
		a->start[a->n++] = a->len;
	}
}

static bool arg_empty(const struct argv *a)
{
	return a->len == a->start[a->n - 1];
}

/* whitespace before a planted secret unless it starts an argument */
static void set_off(struct argv *a, struct input *in)
{
	if (!arg_empty(a))
		addc(a, " \t\n "[next(in) % 4]);
}

/* fuzz text without '7' (and without NUL, which ends an argument) */
static char filler_char(unsigned int b)
{
	return b == '7' ? '8' : b ? (char)b : ' ';
}

/* a character of alphabet, not '7' */
static char from(const char *alphabet, unsigned int b)
{
	size_t n = strlen(alphabet);
	char c = alphabet[b % n];

	return c == '7' ? alphabet[(b + 1) % n] : c;
}

/* a planted value: '7' at every even position, the others from alphabet; n >= 1 */
static void value(struct argv *a, struct input *in, const char *alphabet, size_t n)
{
	for (size_t i = 0; i < n; i++)
		addc(a, i % 2 ? from(alphabet, next(in)) : '7');
}

/* a value in quotes, with spaces in it as sh -c strings have them; unterminated now and then
 * (then it runs to the end of the string, and the argument ends)
 */
static bool quoted(struct argv *a, struct input *in, size_t n)
{
	unsigned int b = next(in);
	char q = b & 1 ? '"' : '\'';

	addc(a, q);
	for (size_t i = 0; i < n; i++) {
		char c = from(q == '"' ? "ab XY 01 $\t'{}@:/=&;," : "ab XY 01 $\t\"{}@:/=&;,",
			      next(in));

		addc(a, i % 2 ? c : '7');
	}
	if (b % 8 == 2)
		return false;
	addc(a, q);
	return true;
}

static void end_unless(struct argv *a, bool closed)
{
	if (!closed)
		end_arg(a);
}

static const char B64URL[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-";
static const char B64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/=";
static const char UPPER_DIGIT[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
static const char TOKEN[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~+/=";
static const char KEYCH[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.";
/* what a KEY=VALUE's value, a flag's value, a URL's password may hold */
static const char VALUE[] = "abcXYZ0189!\"#$%'()*+-./:<=>?@[\\]^_`{|}~\x80\xc3\xa9";
/* a KEY=VALUE's: '}' ends one (as & ; , and whitespace do) */
static const char KV_VALUE[] = "abcXYZ0189!\"#$%'()*+-./:<=>?@[\\]^_`{|~\x80\xc3\xa9";
/* a bare JSON value's: whitespace , } ] and quotes end one */
static const char BARE[] = "abcXYZ0189.+-_:@/!#$%()*<=>?^`|~";
static const char PASSWORD[] = "abcXYZ0189!\"#$%'()*+-.:<=>?[\\]^_`{|}~&;,@\xc3\xa9";

static const char *pick(const char *const *list, size_t n, struct input *in)
{
	return list[next(in) % n];
}

#define PICK(list, in) pick(list, sizeof(list) / sizeof(list[0]), in)

static void key_value(struct argv *a, struct input *in)
{
	static const char *const words[] = { "password", "TOKEN",  "secret",	 "api_key",
					     "Passwd",	 "apikey", "credential", "session",
					     "auth",	 "KEY",	   "private",	 "pin" };
	static const char *const dashes[] = { "", "-", "--" };
	unsigned int b = next(in);

	if (b & 1) { /* in a query: ...?KEY=VALUE&, in quotes: 'KEY=VALUE', in an .npmrc line:
		      * //host/:_authToken=VALUE, a path: /tmp/password=VALUE/f, an option's value:
		      * --from-literal=password=VALUE
		      */
		for (unsigned int i = next(in) % 6; i; i--)
			addc(a, from(VALUE, next(in)));
		addc(a, "?&;,\"'`(:/{[|="[next(in) % 14]);
	}
	adds(a, PICK(dashes, in));
	for (unsigned int i = next(in) % 4; i; i--)
		addc(a, from(KEYCH, next(in)));
	adds(a, PICK(words, in));
	for (unsigned int i = next(in) % 4; i; i--)
		addc(a, from(KEYCH, next(in)));
	adds(a, b & 8 ? " = " : "="); /* an ini file's password = x */
	if (b & 4) {
		end_unless(a, quoted(a, in, 1 + next(in) % 24));
		return;
	}
	value(a, in, KV_VALUE, 1 + next(in) % 24);
	if (b & 2)
		addc(a, "&;,}"[next(in) % 4]);
}

static void aws(struct argv *a, struct input *in)
{
	static const char *const prefixes[] = { "AKIA", "ASIA", "AROA", "AIDA", "ANPA", "ASCA" };

	adds(a, PICK(prefixes, in));
	value(a, in, UPPER_DIGIT, 16);
}

static void github(struct argv *a, struct input *in)
{
	static const char *const prefixes[] = { "ghp_", "gho_", "ghu_", "ghs_", "ghr_" };

	if (next(in) % 4) {
		adds(a, PICK(prefixes, in));
		value(a, in, B64URL, 30 + next(in) % 16);
	} else {
		adds(a, "github_pat_");
		value(a, in, B64URL, 22 + next(in) % 64);
	}
}

static void slack(struct argv *a, struct input *in)
{
	adds(a, "xox");
	addc(a, "abposr"[next(in) % 6]);
	addc(a, '-');
	value(a, in, B64URL, 10 + next(in) % 40);
}

static void jwt(struct argv *a, struct input *in)
{
	adds(a, "eyJ");
	value(a, in, B64URL, 1 + next(in) % 30);
	addc(a, '.');
	value(a, in, B64URL, 1 + next(in) % 30);
	addc(a, '.');
	value(a, in, B64URL, 8 + next(in) % 40);
}

static void bearer(struct argv *a, struct input *in)
{
	static const char *const schemes[] = { "Bearer ", "bearer ", "BEARER ", "Basic ",
					       "basic " };

	adds(a, PICK(schemes, in));
	value(a, in, TOKEN, 8 + next(in) % 40);
}

/* ends the argument when the block is cut (it then runs to the end of the string) */
static void private_key(struct argv *a, struct input *in)
{
	static const char *const labels[] = { "", "RSA ", "EC ", "OPENSSH ", "ENCRYPTED " };
	const char *label = PICK(labels, in);
	bool cut = next(in) % 4 == 0;

	adds(a, "-----BEGIN ");
	adds(a, label);
	adds(a, "PRIVATE KEY-----\n");
	for (unsigned int lines = 1 + next(in) % 4; lines; lines--) {
		value(a, in, B64, 1 + next(in) % 64);
		addc(a, '\n');
	}
	if (cut) {
		end_arg(a);
		return;
	}
	adds(a, "-----END ");
	adds(a, label);
	adds(a, "PRIVATE KEY-----");
}

static void url(struct argv *a, struct input *in)
{
	static const char *const schemes[] = { "https",	  "http",  "postgres", "s3",
					       "git+ssh", "redis", "amqp",     "x-y.z" };

	adds(a, PICK(schemes, in));
	adds(a, "://");
	for (unsigned int i = next(in) % 8; i; i--)
		addc(a, from("abcXYZ019._-~!$&'()*+,;=%@", next(in)));
	addc(a, ':');
	value(a, in, PASSWORD, 1 + next(in) % 24);
	addc(a, '@');
	for (unsigned int i = next(in) % 12; i; i--)
		addc(a, from("abcxyz0189.-:/[]?#", next(in)));
}

/* --password X: as two arguments, or as words of one */
static void flag(struct argv *a, struct input *in)
{
	static const char *const flags[] = { "--password",   "--token", "-secret",     "--api-key",
					     "--passphrase", "--pin",	"--db-passwd", "-auth" };
	const char *f = PICK(flags, in);

	if ((next(in) & 1) && a->n + 2 < MAX_ARGS) { /* room for two more arguments */
		if (!arg_empty(a))
			end_arg(a);
		adds(a, f);
		end_arg(a);
		a->after_flag[a->n - 1] = true;
	} else {
		adds(a, f);
		addc(a, " \t"[next(in) % 2]);
	}
	if (next(in) % 4 == 0)
		end_unless(a, quoted(a, in, 1 + next(in) % 24));
	else
		value(a, in, VALUE, 1 + next(in) % 24);
}

/* scheme://TOKEN@host: a user that looks like a token (a known prefix, or 32 characters and more
 * with a digit)
 */
static void url_token(struct argv *a, struct input *in)
{
	static const char *const schemes[] = { "https", "http", "git+https", "npm" };
	static const char *const prefixes[] = { "glpat-", "npm_", "pypi-", "hf_", "ya29.", "AIza" };
	unsigned int b = next(in);

	adds(a, PICK(schemes, in));
	adds(a, "://");
	if (b & 1) {
		adds(a, PICK(prefixes, in));
		value(a, in, B64URL, 8 + next(in) % 32);
	} else {
		value(a, in, B64URL, 32 + next(in) % 32);
	}
	if (b & 2)
		addc(a, ':');
	addc(a, '@');
	for (unsigned int i = next(in) % 12; i; i--)
		addc(a, from("abcxyz0189.-:/[]?#", next(in)));
}

/* the user of a USER:PASSWORD: no ':', no blank, no quote, not an option */
static void user_part(struct argv *a, struct input *in)
{
	for (unsigned int i = next(in) % 8; i; i--)
		addc(a, from("abcXYZ019._", next(in)));
}

/* a command and its option that takes a secret, glued (-pVALUE, --user=U:P) or apart (-p VALUE,
 * as words of one argument or as arguments of their own), the command in the same argument or
 * an earlier one
 */
static void option(struct argv *a, struct input *in)
{
	static const struct {
		const char *cmd, *opt;
		bool glued, apart, colon;
	} opts[] = {
		{ "curl", "-u", true, true, true },
		{ "/usr/bin/curl -fsS", "--user", true, true, true },
		{ "curl", "-U", true, true, true },
		{ "curl", "--proxy-user", true, true, true },
		{ "curl -L", "-su", false, true, true },
		{ "http", "-a", true, true, true },
		{ "mysql -h db -uroot", "-p", true, false, false },
		{ "mariadb-dump", "-p", true, false, false },
		{ "sshpass", "-p", true, true, false },
		{ "redis-cli", "-a", true, true, false },
		{ "redis-cli", "--pass", true, true, false },
		{ "mongosh -u admin", "-p", true, true, false },
		{ "docker login -u bob", "-p", true, true, false },
		{ "helm registry login", "-p", true, true, false },
	};
	unsigned int b = next(in), k = next(in) % (sizeof(opts) / sizeof(opts[0]));
	bool split = (b & 1) && a->n + 3 < MAX_ARGS, glued;
	char q = b & 8 ? '\'' : '"';

	adds(a, opts[k].cmd);
	if (split) { /* the option in an argument of its own: it needs the command before it */
		end_arg(a);
		a->after_flag[a->n - 1] = true;
	} else {
		addc(a, ' ');
	}
	glued = opts[k].glued && (!opts[k].apart || (b & 2));
	adds(a, opts[k].opt);
	if (glued) {
		if (opts[k].opt[1] == '-')
			addc(a, '=');
	} else if (split && (b & 4)) {
		end_arg(a);
		a->after_flag[a->n - 1] = true;
	} else {
		addc(a, " \t"[next(in) % 2]);
	}
	if (b & 16) { /* quoted, with blanks: 'USER:PASS WORD' */
		addc(a, q);
		if (opts[k].colon) {
			user_part(a, in);
			addc(a, ':');
		}
		for (size_t i = 0, n = 1 + next(in) % 24; i < n; i++)
			addc(a, i % 2 ? from(q == '"' ? "ab XY 01 $\t'{}@:/=&;,"
						      : "ab XY 01 $\t\"{}@:/=&;,",
					     next(in))
				      : '7');
		if (b & 32)
			addc(a, q);
		else
			end_arg(a); /* unterminated: it runs to the end */
		return;
	}
	if (opts[k].colon) {
		user_part(a, in);
		addc(a, ':');
	}
	value(a, in, VALUE, 1 + next(in) % 24);
}

/* a header: -H 'NAME: [SCHEME ]VALUE', -H as an argument and the header the next one,
 * --header=NAME: VALUE, -HNAME: VALUE
 */
static void header(struct argv *a, struct input *in)
{
	static const char *const names[] = { "Authorization", "authorization",
					     "AUTHORIZATION", "Proxy-Authorization",
					     "X-Api-Token",   "PRIVATE-TOKEN",
					     "x-api-key",     "Cookie",
					     "X-Auth-Token",  "X-Pin" };
	static const char *const schemes[] = { "",	  "Bearer ",  "Basic ", "token ",
					       "Digest ", "bearer\t", "NTLM ",	"" };
	unsigned int b = next(in), how = next(in) % 4;
	char q = 0;

	if (how == 0 && a->n + 2 < MAX_ARGS) { /* -H, then the header as an argument */
		if (!arg_empty(a))
			end_arg(a);
		adds(a, "-H");
		end_arg(a);
	} else if (how == 1) {
		adds(a, "--header=");
	} else if (how == 2) {
		adds(a, "-H");
	} else {
		adds(a, "-H ");
		if (b & 1)
			q = b & 2 ? '"' : '\'';
		if (q)
			addc(a, q);
	}
	adds(a, PICK(names, in));
	adds(a, b & 4 ? ":" : ": ");
	adds(a, PICK(schemes, in));
	if (!q) {
		value(a, in, VALUE, 1 + next(in) % 24);
		return;
	}
	for (size_t i = 0, n = 1 + next(in) % 24; i < n; i++) {
		unsigned int c = next(in);

		if (!(i % 2))
			addc(a, '7');
		else if (q == '\'' && c % 8 == 0)
			adds(a, "'\\''"); /* sh's quote in single quotes */
		else
			addc(a, from(q == '"' ? "ab XY 01 $\t'{}@:/=&;,\\"
					      : "ab XY 01 $\t\"{}@:/=&;,\\",
				     c));
	}
	if (b & 8)
		addc(a, q);
	else
		end_arg(a);
}

/* JSON "KEY": VALUE, in double, single or shell-escaped (\") quotes; a string or a bare value */
static void json(struct argv *a, struct input *in)
{
	static const char *const words[] = { "password", "TOKEN", "secret", "api_key", "Passwd",
					     "apikey",	 "auth",  "KEY",    "pin" };
	static const char *const quotes[] = { "\"", "'", "\\\"" };
	unsigned int b = next(in);
	const char *q = PICK(quotes, in), *vq = b & 1 ? q : quotes[(b >> 1) % 2];

	addc(a, '{');
	if (b & 4) {
		adds(a, q);
		adds(a, "user");
		adds(a, q);
		adds(a, ":");
		adds(a, q);
		adds(a, "a");
		adds(a, q);
		adds(a, ",");
	}
	adds(a, q);
	for (unsigned int i = next(in) % 3; i; i--)
		addc(a, from(KEYCH, next(in)));
	adds(a, PICK(words, in));
	for (unsigned int i = next(in) % 3; i; i--)
		addc(a, from(KEYCH, next(in)));
	adds(a, q);
	adds(a, b & 8 ? " " : "");
	addc(a, b & 16 ? '=' : ':');
	adds(a, b & 32 ? " " : "");
	if (b & 64) { /* bare */
		value(a, in, BARE, 1 + next(in) % 24);
		addc(a, '}');
		return;
	}
	adds(a, vq);
	for (size_t i = 0, n = 1 + next(in) % 24; i < n; i++) {
		unsigned int c = next(in);

		if (!(i % 2))
			addc(a, '7');
		else if (c % 8 == 0) /* an escaped quote */
			adds(a, !strcmp(vq, "\\\"") ? "\\\\\\\"" : vq[0] == '"' ? "\\\"" : "\\'");
		else
			addc(a, from("ab XY 01 $\t{}[]@:/=&;,", c));
	}
	if (b & 128) {
		end_arg(a); /* unterminated */
		return;
	}
	adds(a, vq);
	addc(a, '}');
}

/* YAML KEY: VALUE on a line of its own (a heredoc), in printf '...' after the quote or after a
 * written-out \n, or a block scalar
 */
static void yaml(struct argv *a, struct input *in)
{
	static const char *const words[] = { "password", "TOKEN", "secret",	"api_key", "Passwd",
					     "apikey",	 "auth",  "credential", "KEY",	   "pin" };
	unsigned int b = next(in), how = next(in) % 4;

	if (how == 1)
		adds(a, "printf '");
	else if (how == 2)
		adds(a, "printf 'user: a\\n");
	for (unsigned int i = next(in) % 3; i; i--)
		addc(a, from("abcXYZ019_", next(in)));
	adds(a, PICK(words, in));
	for (unsigned int i = next(in) % 3; i; i--)
		addc(a, from(KEYCH, next(in)));
	adds(a, b & 1 ? ":\t" : ": ");
	if (how == 3) { /* a block scalar: everything after it */
		adds(a, b & 2 ? "|\n  " : ">-\n  ");
		value(a, in, VALUE, 1 + next(in) % 24);
		adds(a, "\n  ");
		value(a, in, VALUE, 1 + next(in) % 24);
		return;
	}
	if (how == 1) { /* to the closing quote: none in the value */
		for (size_t i = 0, n = 1 + next(in) % 24; i < n; i++) {
			unsigned int c = next(in);

			if (!(i % 2))
				addc(a, '7');
			else if (c % 8 == 0)
				adds(a, "'\\''"); /* sh's quote in single quotes */
			else
				addc(a, from("ab XY 01 $\t\"{}@:/=&;,", c));
		}
		if (b & 4)
			adds(a, "\\n' > c.yml");
		else
			end_arg(a);
		return;
	}
	value(a, in, VALUE, 1 + next(in) % 24);
	if (how == 2)
		adds(a, "\\n' > c.yml");
}

static void pattern(struct argv *a, struct input *in)
{
	adds(a, "acct-");
	value(a, in, "0123456789", 6);
}

static void plant(struct argv *a, struct input *in)
{
	static void (*const shapes[])(struct argv *, struct input *) = {
		key_value, aws,	    github,    slack,  jwt,    bearer, private_key, url,
		flag,	   pattern, url_token, option, header, json,   yaml,
	};

	set_off(a, in);
	shapes[next(in) % (sizeof(shapes) / sizeof(shapes[0]))](a, in);
	if (!arg_empty(a) && a->text[a->len - 1] != '\0') /* and whitespace after it */
		addc(a, " \t\n "[next(in) % 4]);
}

static void build(struct argv *a, struct input *in)
{
	a->len = 0;
	a->start[0] = 0;
	a->after_flag[0] = false;
	a->n = 1;
	while (in->n && a->len < MAX_BYTES && a->n < MAX_ARGS) {
		unsigned int op = next(in) % 12;

		if (op < 5) {
			for (unsigned int i = 1 + next(in) % 32; i && in->n; i--)
				addc(a, filler_char(next(in)));
		} else if (op == 5) {
			end_arg(a);
		} else if (op == 6) {
			addc(a, " \t\n"[next(in) % 3]);
		} else {
			plant(a, in);
		}
	}
	if (!arg_empty(a) || a->n == 1)
		end_arg(a);
	a->n--; /* the last start is past the end */
}

static void no_secret(const char *what, const char *s)
{
	const char *seven = strchr(s, '7');

	if (seven) {
		const char *from = seven - s > 60 ? seven - 60 : s;

		fprintf(stderr, "redact: a planted secret survived in %s, at %zu: '%.100s'\n", what,
			(size_t)(seven - s), from);
		abort();
	}
}

/* out is whole, or a prefix of whole ended by [TRUNCATED] */
static void check_cut(const char *whole, const char *out, size_t size)
{
	size_t ml = strlen(REDACT_TRUNCATED), ol = strlen(out), wl = strlen(whole);

	if (ol >= size)
		abort();
	if (wl < size ? strcmp(out, whole)
		      : size > ml && (ol < ml || strcmp(out + ol - ml, REDACT_TRUNCATED) ||
				      strncmp(out, whole, ol - ml)))
		abort();
}

static struct redactor r;

static void setup(void)
{
	char err[128];

	redact__init(&r);
	if (redact__add_key(&r, "pin") ||
	    redact__add_pattern(&r, "acct-[0-9]{6}", err, sizeof(err)))
		abort();
}

static void check_strings(const struct argv *a, size_t size)
{
	static char whole[65536], out[8192];
	static char joined[sizeof(((struct argv *)0)->text)];

	for (size_t i = 0; i < a->n; i++) {
		const char *s = a->text + a->start[i];

		redact__string(&r, s, whole, sizeof(whole));
		redact__string(&r, s, out, size);
		check_cut(whole, out, size);
		if (a->after_flag[i])
			continue;
		no_secret("a string", whole);
		no_secret("a cut string", out);
	}
	memcpy(joined, a->text, a->len);
	for (size_t i = 0; i + 1 < a->len; i++) {
		if (!joined[i])
			joined[i] = ' ';
	}
	joined[a->len ? a->len - 1 : 0] = '\0';
	redact__string(&r, joined, whole, sizeof(whole));
	no_secret("the joined argv", whole);
	redact__string(&r, joined, out, 2048);
	no_secret("the joined argv, cut at 2048", out);
	check_cut(whole, out, 2048);
}

static void check_argv(const struct argv *a, size_t size)
{
	static char copy[sizeof(((struct argv *)0)->text)], buf[8192];
	char *args[MAX_ARGS];
	size_t n = a->n, ml = strlen(REDACT_TRUNCATED);
	bool cut;

	memcpy(copy, a->text, a->len);
	for (size_t i = 0; i < n; i++)
		args[i] = copy + a->start[i];
	if (getenv("EGRET_FUZZ_DUMP")) { /* triage: the argv built from an input */
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, "arg %zu: '%s'\n", i, args[i]);
	}
	cut = redact__argv(&r, args, &n, buf, size);
	if (n > a->n || (!cut && n != a->n))
		abort();
	for (size_t i = 0; i < a->n; i++)
		no_secret("an argument", args[i]);
	if (cut && size >= 2 * sizeof(REDACT_TRUNCATED) &&
	    (!n || strlen(args[n - 1]) < ml ||
	     strcmp(args[n - 1] + strlen(args[n - 1]) - ml, REDACT_TRUNCATED)))
		abort(); /* cut without saying so */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const size_t sizes[] = { 8192, 8192, 8192, 4096, 1024, 256, 64, 24 };
	static struct argv a;
	struct input in = { data, size };
	size_t bufsize;

	if (!r.nkeys)
		setup();
	bufsize = sizes[next(&in) % 8];
	build(&a, &in);
	check_argv(&a, bufsize);
	check_strings(&a, bufsize == 8192 ? 2048 : bufsize);
	return 0;
}
