/* Fuzz target: the redactor never lets a planted secret through. The input is turned into an
 * argv of fuzz-chosen text with secrets planted at fuzz-chosen places, in every shape README's
 * "Secrets never leave the host" promises (flag values, KEY=VALUE, AWS key ids, GitHub and Slack
 * tokens, JWTs, Bearer/Basic, private key blocks, URLs with a password, an operator's key and
 * pattern), each set off by whitespace or an argument boundary. A planted value has a '7' at
 * every even position, and the text around it never has one, so a '7' in any output is a piece
 * of a secret that got through. Checked: redact__argv() with the buffer egretd uses and with
 * smaller ones, redact__string() of every argument and of all of them joined with spaces (as
 * sh -c sees them), at several output sizes; a cut output is a prefix of the whole one followed
 * by [TRUNCATED].
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
	bool after_flag[MAX_ARGS]; /* a secret only as the argument after its flag */
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

	if (b & 1) { /* in a query: ...?KEY=VALUE&, or in quotes: 'KEY=VALUE' */
		for (unsigned int i = next(in) % 6; i; i--)
			addc(a, from(VALUE, next(in)));
		addc(a, "?&;,\"'`("[next(in) % 8]);
	}
	adds(a, PICK(dashes, in));
	for (unsigned int i = next(in) % 4; i; i--)
		addc(a, from(KEYCH, next(in)));
	adds(a, PICK(words, in));
	for (unsigned int i = next(in) % 4; i; i--)
		addc(a, from(KEYCH, next(in)));
	addc(a, '=');
	if (b & 4) {
		end_unless(a, quoted(a, in, 1 + next(in) % 24));
		return;
	}
	value(a, in, VALUE, 1 + next(in) % 24);
	if (b & 2)
		addc(a, "&;,"[next(in) % 3]);
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

static void pattern(struct argv *a, struct input *in)
{
	adds(a, "acct-");
	value(a, in, "0123456789", 6);
}

static void plant(struct argv *a, struct input *in)
{
	static void (*const shapes[])(struct argv *, struct input *) = {
		key_value, aws, github, slack, jwt, bearer, private_key, url, flag, pattern,
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
