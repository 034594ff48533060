/* Each built-in redaction rule, what it must leave alone, and operator-added keys and
 * patterns.
 */
#include <stdio.h>
#include <string.h>

#include <criterion/criterion.h>

#include "redact.h"

static struct redactor r;

static void setup(void)
{
	redact__init(&r);
}

static void teardown(void)
{
	redact__free(&r);
}

TestSuite(redact, .init = setup, .fini = teardown);

static void expect(const char *in, const char *want)
{
	char out[4096];

	redact__string(&r, in, out, sizeof(out));
	cr_expect_str_eq(out, want, "redacting '%s'", in);
}

Test(redact, key_value_pairs)
{
	expect("--password=hunter2", "--password=[REDACTED]");
	expect("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG", "AWS_SECRET_ACCESS_KEY=[REDACTED]");
	expect("GITHUB_TOKEN=abc123", "GITHUB_TOKEN=[REDACTED]");
	expect("-Ddb.password=x", "-Ddb.password=[REDACTED]");
	expect("https://api.test/v1?api_key=s3cr3t&page=2",
	       "https://api.test/v1?api_key=[REDACTED]&page=2");
	expect("session_id=42; theme=dark", "session_id=[REDACTED]; theme=dark");
	/* keys that are not secret stay */
	expect("--name=hunter2", "--name=hunter2");
	expect("PATH=/usr/bin:/bin", "PATH=/usr/bin:/bin");
	expect("a=b", "a=b");
}

Test(redact, aws_access_key_ids)
{
	expect("AKIAIOSFODNN7EXAMPLE", "[REDACTED]");
	expect("id ASIAY34FZKBOKMUTVV7A in use", "id [REDACTED] in use");
	expect("AKIASHORT", "AKIASHORT");
	expect("XAKIAIOSFODNN7EXAMPLE", "XAKIAIOSFODNN7EXAMPLE");
}

Test(redact, github_tokens)
{
	expect("ghp_1234567890abcdefghijklmnopqrstuvwxyz", "[REDACTED]");
	expect("git clone https://x:gho_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789@github.com/a/b",
	       "git clone https://x:[REDACTED]@github.com/a/b");
	expect("github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "[REDACTED]");
	expect("ghp_short", "ghp_short");
}

Test(redact, slack_tokens_and_jwts)
{
	expect("xoxb-123456789012-abcdefghijkl", "[REDACTED]");
	expect("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NSJ9.SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV",
	       "[REDACTED]");
}

Test(redact, bearer_and_basic_credentials)
{
	expect("Authorization: Bearer abcdef0123456789.xyz", "Authorization: Bearer [REDACTED]");
	expect("-H authorization: basic dXNlcjpwYXNzd29yZA==",
	       "-H authorization: basic [REDACTED]");
	expect("bearer short", "bearer short");
}

Test(redact, private_key_blocks)
{
	expect("-----BEGIN RSA PRIVATE KEY-----\nMIIEow...\n-----END RSA PRIVATE KEY----- tail",
	       "[REDACTED] tail");
	expect("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk", "[REDACTED]");
	expect("-----BEGIN CERTIFICATE-----\nMIIB", "-----BEGIN CERTIFICATE-----\nMIIB");
}

Test(redact, urls_with_a_password)
{
	expect("postgres://app:s3cret@db.internal:5432/prod",
	       "postgres://app:[REDACTED]@db.internal:5432/prod");
	expect("https://user@example.com/", "https://user@example.com/");
	expect("http://example.com:8080/x", "http://example.com:8080/x");
}

Test(redact, argv_flags_and_values)
{
	char *args[] = { "mysql",   "--user",	   "root",	"--password",
			 "hunter2", "--token=abc", "--verbose", "plain" };
	char buf[1024];
	size_t n = 8;

	cr_expect_not(redact__argv(&r, args, &n, buf, sizeof(buf)));
	cr_expect_eq(n, 8);
	cr_expect_str_eq(args[2], "root");
	cr_expect_str_eq(args[4], "[REDACTED]");
	cr_expect_str_eq(args[5], "--token=[REDACTED]");
	cr_expect_str_eq(args[7], "plain");
	cr_expect_geq(r.redactions, 2);
}

Test(redact, operator_keys_and_patterns)
{
	char err[256];

	expect("--pin=1234", "--pin=1234");
	cr_assert_eq(redact__add_key(&r, "PIN"), 0);
	expect("--pin=1234", "--pin=[REDACTED]");
	cr_assert_eq(redact__add_pattern(&r, "acct-[0-9]{6}", err, sizeof(err)), 0, "%s", err);
	expect("move acct-123456 to acct-654321", "move [REDACTED] to [REDACTED]");
	cr_expect_neq(redact__add_pattern(&r, "([unclosed", err, sizeof(err)), 0);
	cr_expect_neq(strlen(err), 0);
}

/* A URL's user part does not span words: the AWS key id between "s3://b" and "x:y@z" was kept
 * verbatim as if it were the user of one long URL. Every secret is found on its own.
 */
Test(redact, each_secret_is_found_independently_of_urls)
{
	expect("s3://b AKIAIOSFODNN7EXAMPLE x:y@z", "s3://b [REDACTED] x:y@z");
	expect("s3://b --token=abc x:y@z", "s3://b --token=[REDACTED] x:y@z");
	expect("https://ghp_1234567890abcdefghijklmnopqrstuvwxyz:x-oauth-basic@github.com/a",
	       "https://[REDACTED]:[REDACTED]@github.com/a");
}

/* A full output buffer cut the argv short and left every later argument pointing at the
 * unredacted original. Now the argv is cut where it stops fitting, and says so.
 */
Test(redact, a_full_buffer_never_lets_a_secret_through)
{
	static char *args[602];
	char buf[8192];
	size_t n = 602;

	for (int i = 0; i < 600; i++)
		args[i] = "key=x";
	args[600] = "--password=hunter2";
	args[601] = "AKIAIOSFODNN7EXAMPLE";
	cr_expect(redact__argv(&r, args, &n, buf, sizeof(buf)));
	for (int i = 0; i < 602; i++) {
		cr_assert_null(strstr(args[i], "hunter2"), "args[%d] '%s'", i, args[i]);
		cr_assert_null(strstr(args[i], "AKIA"), "args[%d] '%s'", i, args[i]);
	}
	cr_assert_gt(n, 0);
	cr_expect_lt(n, 602);
	cr_expect_str_eq(args[0], "key=[REDACTED]");
	cr_expect_str_eq(args[n - 1] + strlen(args[n - 1]) - strlen(REDACT_TRUNCATED),
			 REDACT_TRUNCATED);
	cr_expect_str_eq(args[n], "");
}

/* The same for one string: cut after redaction, never a piece of a secret, marked as cut. */
Test(redact, a_string_too_long_for_its_buffer_is_cut_and_marked)
{
	char out[32], big[256];
	size_t len;

	len = redact__string(&r, "key=x key=x key=x --password=hunter2", out, sizeof(out));
	cr_expect_str_eq(out, "key=[REDACTED] key=[TRUNCATED]");
	cr_expect_eq(len, strlen(out));
	redact__string(&r, "password=hunter2", out, 14);
	cr_expect_str_eq(out, "pa[TRUNCATED]");
	/* whole when it fits exactly */
	redact__string(&r, "a token=x", big, sizeof("a token=[REDACTED]"));
	cr_expect_str_eq(big, "a token=[REDACTED]");
	/* an operator pattern is matched before the cut, not against what is left of it */
	cr_assert_eq(redact__add_pattern(&r, "acct-[0-9]{6}", big, sizeof(big)), 0);
	redact__string(&r, "key=x move acct-123456", out, 28);
	cr_expect_str_eq(out, "key=[REDACTED] m[TRUNCATED]");
	/* a UTF-8 character is not split */
	redact__string(&r, "caf\xc3\xa9 ok and more", out, 4 + sizeof(REDACT_TRUNCATED));
	cr_expect_str_eq(out, "caf[TRUNCATED]");
}

/* sh -c "mysql --password hunter2": the flag and its value as words of one argument */
Test(redact, flag_values_inside_one_argument)
{
	expect("mysql -u root --password hunter2 db", "mysql -u root --password [REDACTED] db");
	expect("x --token\tabc", "x --token\t[REDACTED]");
	expect("--password --verbose", "--password --verbose");
	expect("--name joe", "--name joe");
	expect("a--password x", "a--password x");
}

/* Shell strings (sh -c "..."): a key after a quote, a quoted value with spaces in it, a URL
 * password with an unencoded '@' are redacted whole.
 */
Test(redact, quoted_values_and_at_signs)
{
	expect("curl -d 'password=hunter2' x", "curl -d 'password=[REDACTED] x");
	expect("curl -d \"password=hunter2\"", "curl -d \"password=[REDACTED]");
	expect("mysql --password 'my secret' db", "mysql --password [REDACTED] db");
	expect("PASSWORD=\"a b\" ./run", "PASSWORD=[REDACTED] ./run");
	expect("TOKEN='unterminated x", "TOKEN=[REDACTED]");
	expect("https://u:p@ss@host/x@y", "https://u:[REDACTED]@host/x@y");
	expect("https://a@b:c@host/", "https://a@b:[REDACTED]@host/");
}
