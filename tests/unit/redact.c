/* Each built-in redaction rule, what it must leave alone, and operator-added keys and
 * patterns; the shapes people type (a flag's value inside sh -c, curl -u, headers, JSON, YAML,
 * a token as a URL's user, .npmrc lines, paths), each with its false-positive controls; and the
 * package tracker passing what it reads from a sandbox's environment and files through the
 * redactor.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "harness.h"
#include "loop.h"
#include "pkg.h"
#include "redact.h"
#include "sink.h"
#include "stream.h"
#include "util.h"

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
	cr_expect_str_eq(out, want, "redacting '%s': '%s'", in, out);
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
	/* the quote that closes the one opened before the key is kept (it used to be redacted) */
	expect("curl -d 'password=hunter2' x", "curl -d 'password=[REDACTED]' x");
	expect("curl -d \"password=hunter2\"", "curl -d \"password=[REDACTED]\"");
	expect("mysql --password 'my secret' db", "mysql --password [REDACTED] db");
	expect("PASSWORD=\"a b\" ./run", "PASSWORD=[REDACTED] ./run");
	expect("TOKEN='unterminated x", "TOKEN=[REDACTED]");
	expect("https://u:p@ss@host/x@y", "https://u:[REDACTED]@host/x@y");
	expect("https://a@b:c@host/", "https://a@b:[REDACTED]@host/");
}

/* ---- what people type: one table per shape, each with what must stay ---------------------- */

struct want {
	const char *in, *out;
};

static void expect_all(const struct want *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		expect(w[i].in, w[i].out);
}

#define EXPECT_ALL(table) expect_all(table, sizeof(table) / sizeof(table[0]))

/* --password X inside one sh -c argument, in every form; mysql's glued -pVALUE and the -p of
 * the commands whose -p is a password. "-p word" for mysql prompts (word is the database), and
 * -p is a port for most tools: those stay.
 */
Test(redact, password_flags_inside_one_argument)
{
	static const struct want w[] = {
		{ "mysql --password hunter2 -h db", "mysql --password [REDACTED] -h db" },
		{ "mysql --password=hunter2 -h db", "mysql --password=[REDACTED] -h db" },
		{ "mysql --password 'a b' -h db", "mysql --password [REDACTED] -h db" },
		{ "mysql --password='a b' -h db", "mysql --password=[REDACTED] -h db" },
		{ "mysql --password \"a \\\"b\\\" c\" -h db", "mysql --password [REDACTED] -h db" },
		{ "mysql -phunter2 -h db", "mysql -p[REDACTED] -h db" },
		{ "mysqldump -uroot -p'a b' db", "mysqldump -uroot -p[REDACTED] db" },
		{ "/usr/bin/mariadb -phunter2", "/usr/bin/mariadb -p[REDACTED]" },
		{ "cd /x && mysql -phunter2 db", "cd /x && mysql -p[REDACTED] db" },
		{ "sshpass -p hunter2 ssh db", "sshpass -p [REDACTED] ssh db" },
		{ "sshpass -phunter2 ssh db", "sshpass -p[REDACTED] ssh db" },
		{ "redis-cli -a hunter2 ping", "redis-cli -a [REDACTED] ping" },
		{ "redis-cli --pass hunter2 ping", "redis-cli --pass [REDACTED] ping" },
		{ "mongosh -u admin -p hunter2 db", "mongosh -u admin -p [REDACTED] db" },
		{ "docker login -u bob -p hunter2 reg.test",
		  "docker login -u bob -p [REDACTED] reg.test" },
		{ "podman login -phunter2 reg.test", "podman login -p[REDACTED] reg.test" },
		/* controls */
		{ "mysql -p hunter2", "mysql -p hunter2" },
		{ "mysql -p", "mysql -p" },
		{ "mysql -P3306 -h db", "mysql -P3306 -h db" },
		{ "ssh -p 8080 host", "ssh -p 8080 host" },
		{ "nc -p8080 host 80", "nc -p8080 host 80" },
		{ "docker run -p 8080:80 nginx", "docker run -p 8080:80 nginx" },
		{ "python3 -m http.server -p 8080", "python3 -m http.server -p 8080" },
		{ "echo password hunter2", "echo password hunter2" },
		{ "--password --verbose", "--password --verbose" },
	};

	EXPECT_ALL(w);
}

/* curl -u USER:PASSWORD (and --user, -U, --proxy-user, httpie's -a): the password */
Test(redact, curl_user_passwords)
{
	static const struct want w[] = {
		{ "curl -u user:pw https://x", "curl -u user:[REDACTED] https://x" },
		{ "curl --user user:pw https://x", "curl --user user:[REDACTED] https://x" },
		{ "curl -uuser:pw https://x", "curl -uuser:[REDACTED] https://x" },
		{ "curl --user=user:pw https://x", "curl --user=user:[REDACTED] https://x" },
		{ "curl -su 'bob:a b' https://x", "curl -su 'bob:[REDACTED]' https://x" },
		{ "curl -u user:p:w https://x", "curl -u user:[REDACTED] https://x" },
		{ "curl -x http://p -U puser:ppw https://x",
		  "curl -x http://p -U puser:[REDACTED] https://x" },
		{ "curl --proxy-user puser:ppw https://x",
		  "curl --proxy-user puser:[REDACTED] https://x" },
		{ "/usr/bin/curl -fsS -u a:b x", "/usr/bin/curl -fsS -u a:[REDACTED] x" },
		{ "http -a user:pw example.test", "http -a user:[REDACTED] example.test" },
		/* controls: no password given, or not curl's -u */
		{ "curl --user alice https://x", "curl --user alice https://x" },
		{ "curl -u alice https://x", "curl -u alice https://x" },
		{ "docker run -u 1000:1000 img", "docker run -u 1000:1000 img" },
		{ "sudo -u bob:x ls", "sudo -u bob:x ls" },
		{ "git add -u", "git add -u" },
	};

	EXPECT_ALL(w);
}

/* Headers (Authorization with any scheme or none, X-Api-Token, PRIVATE-TOKEN, ...), in one
 * argument of sh -c or as the argument after -H: the value, the scheme kept.
 */
Test(redact, secret_headers)
{
	static const struct want w[] = {
		{ "curl -H 'Authorization: Bearer abc.def' https://x",
		  "curl -H 'Authorization: Bearer [REDACTED]' https://x" },
		{ "curl -H \"Authorization: Basic dXNlcjpw\" https://x",
		  "curl -H \"Authorization: Basic [REDACTED]\" https://x" },
		{ "curl -H 'authorization: token gh1' https://x",
		  "curl -H 'authorization: token [REDACTED]' https://x" },
		{ "curl -H 'AUTHORIZATION: Digest username=\"a\", response=\"b\"' https://x",
		  "curl -H 'AUTHORIZATION: Digest [REDACTED]' https://x" },
		{ "curl -H 'Authorization: s3cr3t' https://x",
		  "curl -H 'Authorization: [REDACTED]' https://x" },
		{ "curl -H 'X-Api-Token: v' https://x",
		  "curl -H 'X-Api-Token: [REDACTED]' https://x" },
		{ "curl -H \"PRIVATE-TOKEN: v\" https://x",
		  "curl -H \"PRIVATE-TOKEN: [REDACTED]\" https://x" },
		{ "curl -H 'x-api-key: v' -H 'Accept: a/b' https://x",
		  "curl -H 'x-api-key: [REDACTED]' -H 'Accept: a/b' https://x" },
		{ "curl -H 'Cookie: session=abc; theme=dark' https://x",
		  "curl -H 'Cookie: [REDACTED]' https://x" },
		{ "curl -H 'X-Api-Token: it'\\''s' https://x",
		  "curl -H 'X-Api-Token: [REDACTED]' https://x" },
		{ "Authorization: Basic xxx", "Authorization: Basic [REDACTED]" },
		{ "Authorization: token xxx", "Authorization: token [REDACTED]" },
		{ "Proxy-Authorization: Negotiate xyz",
		  "Proxy-Authorization: Negotiate [REDACTED]" },
		{ "X-Api-Token: v", "X-Api-Token: [REDACTED]" },
		{ "Authorization:Bearer xyz", "Authorization:Bearer [REDACTED]" },
		{ "--header=Authorization: Bearer xyz",
		  "--header=Authorization: Bearer [REDACTED]" },
		{ "-HPRIVATE-TOKEN: v", "-HPRIVATE-TOKEN: [REDACTED]" },
		{ "GET / HTTP/1.1\r\nAuthorization: Basic eHg=\r\nHost: h",
		  "GET / HTTP/1.1\r\nAuthorization: Basic [REDACTED]\r\nHost: h" },
		/* controls: Authorization mentioned, no value */
		{ "Authorization", "Authorization" },
		{ "Authorization:", "Authorization:" },
		{ "Authorization: ", "Authorization: " },
		{ "the Authorization header is missing", "the Authorization header is missing" },
		{ "curl -H 'Accept: application/json' x", "curl -H 'Accept: application/json' x" },
		{ "image: auth-service:1.2", "image: auth-service:1.2" },
		{ "bearer short", "bearer short" },
	};

	EXPECT_ALL(w);
}

/* JSON (and Python, TOML) "KEY": VALUE: the value's text */
Test(redact, json_keys)
{
	static const struct want w[] = {
		{ "curl -d '{\"user\":\"a\",\"password\":\"x\"}' https://x",
		  "curl -d '{\"user\":\"a\",\"password\":\"[REDACTED]\"}' https://x" },
		{ "{\"api_key\":\"x\"}", "{\"api_key\":\"[REDACTED]\"}" },
		{ "{ \"Password\" : \"a\\\"b c\" }", "{ \"Password\" : \"[REDACTED]\" }" },
		{ "{'password': 'x', 'user': 'a'}", "{'password': '[REDACTED]', 'user': 'a'}" },
		{ "{\"pin\": 1234, \"token\": 42}", "{\"pin\": 1234, \"token\": [REDACTED]}" },
		{ "{\"client_secret\":\"x y\"}", "{\"client_secret\":\"[REDACTED]\"}" },
		/* JSON in a shell's double quotes (sh -c "curl -d \"{...}\"") */
		{ "curl -d \"{\\\"password\\\":\\\"hunter2\\\"}\" x",
		  "curl -d \"{\\\"password\\\":\\\"[REDACTED]\\\"}\" x" },
		{ "curl -d \"{\\\"password\\\":\\\"a\\\\\\\"b\\\"}\" x",
		  "curl -d \"{\\\"password\\\":\\\"[REDACTED]\\\"}\" x" },
		{ "\"password\" = \"x\"", "\"password\" = \"[REDACTED]\"" },
		{ "password = hunter2", "password = [REDACTED]" },
		{ "{\"token\":\"unterminated", "{\"token\":\"[REDACTED]" },
		/* controls */
		{ "{\"user\":\"password\"}", "{\"user\":\"password\"}" },
		{ "{\"password\":\"\"}", "{\"password\":\"\"}" },
		{ "{\"name\":\"x\"}", "{\"name\":\"x\"}" },
	};

	EXPECT_ALL(w);
}

/* YAML KEY: VALUE, in a printf or a heredoc of sh -c: to the end of the line or the quote */
Test(redact, yaml_keys)
{
	static const struct want w[] = {
		{ "printf 'password: hunter2\\n' > c.yml",
		  "printf 'password: [REDACTED]' > c.yml" },
		{ "printf 'user: a\\npassword: hunter2\\n' > c.yml",
		  "printf 'user: a\\npassword: [REDACTED]\\n' > c.yml" },
		{ "cat > c.yml <<EOF\npassword: hunter2\nuser: a\nEOF",
		  "cat > c.yml <<EOF\npassword: [REDACTED]\nuser: a\nEOF" },
		{ "db:\n  password: \"a b\"\n  host: x", "db:\n  password: [REDACTED]\n  host: x" },
		{ "db:\n  secretKey:\tabc\n", "db:\n  secretKey:\t[REDACTED]\n" },
		{ "api_key: |\n  abc\n  def", "api_key: [REDACTED]" },
		{ "{password: x}", "{password: [REDACTED]" },
		/* without a \\n written out before the key, one in the value does not end it */
		{ "password: a\\nb c", "password: [REDACTED]" },
		/* controls */
		{ "password:", "password:" },
		{ "password:\nuser: a", "password:\nuser: a" },
		{ "user: alice\nhost: db", "user: alice\nhost: db" },
		{ "std::password::check", "std::password::check" },
	};

	EXPECT_ALL(w);
}

/* A URL whose user is a token: a known prefix, long, or mixing cases and digits */
Test(redact, url_users_that_look_like_tokens)
{
	static const struct want w[] = {
		{ "https://0123456789abcdef0123456789abcdef01234567@host/x",
		  "https://[REDACTED]@host/x" },
		{ "https://glpat-abcdefghij1234567890@gitlab.test/x",
		  "https://[REDACTED]@gitlab.test/x" },
		{ "https://npm_AbCdEfGh12@reg.test/", "https://[REDACTED]@reg.test/" },
		{ "https://aB3dE6gH9jK2mN5p@host/", "https://[REDACTED]@host/" },
		{ "git clone https://6ba7b810a9dad11d80b4@h/r",
		  "git clone https://[REDACTED]@h/r" },
		{ "https://abcdefghijklmnopqrstuvwxyz0123456789:@host/",
		  "https://[REDACTED]:@host/" },
		{ "registry=https://npmuser:pw@reg.test/",
		  "registry=https://npmuser:[REDACTED]@reg.test/" },
		{ "https://user:pw@host/simple", "https://user:[REDACTED]@host/simple" },
		/* controls */
		{ "https://user@example.com/", "https://user@example.com/" },
		{ "ssh://git@github.com/a/b", "ssh://git@github.com/a/b" },
		{ "https://firstname.lastname@host/", "https://firstname.lastname@host/" },
		{ "https://firstname.lastname2024@host/", "https://firstname.lastname2024@host/" },
		{ "https://me%40example.com@host/", "https://me%40example.com@host/" },
	};

	EXPECT_ALL(w);
}

/* .npmrc lines, paths with a secret-looking component, and where a KEY=VALUE's value ends */
Test(redact, npmrc_paths_and_value_ends)
{
	static const struct want w[] = {
		{ "//registry.test/:_authToken=XYZ", "//registry.test/:_authToken=[REDACTED]" },
		{ "//registry.test/:_auth=dXNlcjpw", "//registry.test/:_auth=[REDACTED]" },
		{ "//registry.test/:_password=cGFzcw==", "//registry.test/:_password=[REDACTED]" },
		{ "/tmp/x/password=hunter2/f", "/tmp/x/password=[REDACTED]" },
		{ "/srv/token=abc", "/srv/token=[REDACTED]" },
		{ "token=abc}rest", "token=[REDACTED]}rest" },
		{ "{token=abc,x=1}", "{token=[REDACTED],x=1}" },
		{ "-d \"a=1&token=abc\" x", "-d \"a=1&token=[REDACTED]\" x" },
		{ "PASSWORD='a b'c x", "PASSWORD=[REDACTED] x" },
		{ "PASSWORD=a\\ b x", "PASSWORD=[REDACTED] x" },
		{ "PASSWORD=\"a \\\" b\" x", "PASSWORD=[REDACTED] x" },
		{ "f(token='x')", "f(token=[REDACTED])" },
		{ "kubectl create secret generic s --from-literal=password=abc",
		  "kubectl create secret generic s --from-literal=password=[REDACTED]" },
		{ "docker run --env=TOKEN=abc img", "docker run --env=TOKEN=[REDACTED] img" },
		/* controls */
		{ "//registry.test/:username=bob", "//registry.test/:username=bob" },
		{ "/tmp/x/passwords/f", "/tmp/x/passwords/f" },
		{ "/tmp/x/a=b/f", "/tmp/x/a=b/f" },
	};

	EXPECT_ALL(w);
}

/* The same shapes as separate arguments: the value after curl's -u, the header after -H, a
 * password glued to mysql's -p (all the rest of it), -p after docker login.
 */
Test(redact, argv_shapes)
{
	static const struct {
		const char *args[12];
		const char *want[12];
	} cases[] = {
		{ { "curl", "-u", "user:pw", "-H", "Authorization: Bearer abc", "-H",
		    "X-Api-Token: t", "-d", "{\"password\":\"x\"}", "--user", "alice",
		    "https://a:b@h/" },
		  { "curl", "-u", "user:[REDACTED]", "-H", "Authorization: Bearer [REDACTED]", "-H",
		    "X-Api-Token: [REDACTED]", "-d", "{\"password\":\"[REDACTED]\"}", "--user",
		    "alice", "https://a:[REDACTED]@h/" } },
		{ { "mysql", "-uroot", "-phunter2", "-p", "db" },
		  { "mysql", "-uroot", "-p[REDACTED]", "-p", "db" } },
		{ { "mysql", "-pa b" }, { "mysql", "-p[REDACTED]" } },
		{ { "sshpass", "-p", "hunter2", "ssh", "h" },
		  { "sshpass", "-p", "[REDACTED]", "ssh", "h" } },
		{ { "docker", "login", "-p", "hunter2", "r" },
		  { "docker", "login", "-p", "[REDACTED]", "r" } },
		{ { "docker", "run", "-p", "8080:80", "img" },
		  { "docker", "run", "-p", "8080:80", "img" } },
		{ { "curl", "--user=bob:pw", "-U", "p:q", "-U", "nocolon" },
		  { "curl", "--user=bob:[REDACTED]", "-U", "p:[REDACTED]", "-U", "nocolon" } },
		{ { "sudo", "-u", "alice:x", "curl", "-u", "bob:y" },
		  { "sudo", "-u", "alice:x", "curl", "-u", "bob:[REDACTED]" } },
		{ { "env", "X=1", "/usr/bin/curl", "-uuser:pw" },
		  { "env", "X=1", "/usr/bin/curl", "-uuser:[REDACTED]" } },
		{ { "sh", "-c", "curl -u user:pw https://x" },
		  { "sh", "-c", "curl -u user:[REDACTED] https://x" } },
		{ { "sh", "-c", "mysql --password hunter2 -h db" },
		  { "sh", "-c", "mysql --password [REDACTED] -h db" } },
		{ { "-phunter2", "mysql" }, { "-phunter2", "mysql" } },
	};

	for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
		char *args[12], buf[2048];
		size_t n = 0;

		while (n < 12 && cases[c].args[n]) {
			args[n] = (char *)cases[c].args[n];
			n++;
		}
		cr_expect_not(redact__argv(&r, args, &n, buf, sizeof(buf)));
		for (size_t i = 0; i < n; i++)
			cr_expect_str_eq(args[i], cases[c].want[i], "case %zu, args[%zu]", c, i);
	}
}

/* The new shapes keep the size guarantee: cut after redaction, never a piece of the value. */
Test(redact, new_shapes_cut_by_the_size_limit_never_leak)
{
	static const char *const ins[] = {
		"{\"password\":\"hunter2hunter2\"}",
		"curl -u user:hunter2hunter2 https://x",
		"curl -H 'X-Api-Token: hunter2hunter2' https://x",
		"printf 'password: hunter2hunter2\\n'",
		"mysql -phunter2hunter2",
		"https://0123456789abcdef0123456789abcdef01234567hunter2@host/",
		"//reg.test/:_authToken=hunter2hunter2",
	};
	char out[64];

	for (size_t i = 0; i < sizeof(ins) / sizeof(ins[0]); i++) {
		for (size_t size = 1; size <= sizeof(out); size++) {
			size_t len = redact__string(&r, ins[i], out, size);

			cr_assert_lt(len, size);
			cr_assert_null(strstr(out, "hunter"), "'%s' at %zu: '%s'", ins[i], size,
				       out);
			cr_assert_null(strstr(out, "0123456789abcdef"), "'%s' at %zu: '%s'", ins[i],
				       size, out);
		}
	}
	redact__string(&r, "{\"password\":\"hunter2hunter2\"}", out, 20);
	cr_expect_str_eq(out, "{\"passwo[TRUNCATED]");
}

/* ---- the package tracker: strings from the environment and config files -------------------- */

struct pkg_rig {
	char dir[64], out[96];
	struct loop loop;
	struct stream s;
	struct sink sink;
	struct pkg_tracker t;
	pid_t child;
};

static void pkg_rig_init(struct pkg_rig *g, bool redacting)
{
	char uri[128], err[160], spool[96];

	memset(g, 0, sizeof(*g));
	snprintf(g->dir, sizeof(g->dir), "/tmp/egret-unit-XXXXXX");
	cr_assert(mkdtemp(g->dir));
	snprintf(spool, sizeof(spool), "%s/spool", g->dir);
	snprintf(g->out, sizeof(g->out), "%s/ev.pb", g->dir);
	cr_assert_eq(loop__init(&g->loop), 0);
	cr_assert_eq(stream__init(&g->s), 0);
	cr_assert_eq(stream__open_spool(&g->s, spool, SPOOL_DEFAULT_LIMIT, SPOOL_SYNC_NEVER), 0);
	snprintf(uri, sizeof(uri), "file:%s", g->out);
	cr_assert_eq(sink__parse(&g->sink, uri, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(stream__add_sink(&g->s, &g->sink, &g->loop), 0);
	cr_assert_eq(pkg__init(&g->t, &g->s), 0);
	if (redacting) {
		g->t.redact = redact__cb;
		g->t.redact_ctx = &r;
	}
}

static void pkg_rig_free(struct pkg_rig *g)
{
	char cmd[128];

	if (g->child > 0) {
		kill(g->child, SIGKILL);
		waitpid(g->child, NULL, 0);
	}
	pkg__free(&g->t);
	stream__free(&g->s);
	loop__close(&g->loop);
	snprintf(cmd, sizeof(cmd), "rm -rf %s", g->dir);
	cr_expect_eq(system(cmd), 0);
}

/* the manager's process: a sleep with env as its environment, its environ readable */
static void pkg_rig_manager(struct pkg_rig *g, char *const env[])
{
	char path[64], buf[4096];

	g->child = fork();
	cr_assert_geq(g->child, 0);
	if (!g->child) {
		execle("/bin/sleep", "sleep", "60", (char *)NULL, env);
		_exit(127);
	}
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)g->child);
	for (int i = 0; i < 200; i++) {
		ssize_t n = read_file(path, buf, sizeof(buf));

		if (n > 0 && memmem(buf, (size_t)n, env[0], strlen(env[0])))
			return;
		usleep(10000);
	}
	cr_assert_fail("the manager's environment never showed");
}

static void pkg_event(struct pkg_rig *g, Egret__V1__Event *ev)
{
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	Egret__V1__Process p = EGRET__V1__PROCESS__INIT;

	sb.cgroup_id = 77;
	sb.name = "box";
	p.pid = (uint32_t)g->child;
	p.exec_id = 3003;
	p.comm = "mgr";
	ev->sandbox = &sb;
	ev->process = &p;
	pkg__observe(&g->t, ev, NULL);
}

static void pkg_exec(struct pkg_rig *g, char **argv, size_t argc, const char *cwd)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__ProcessExec x = EGRET__V1__PROCESS_EXEC__INIT;

	x.n_args = argc;
	x.args = argv;
	x.cwd = (char *)cwd;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXEC;
	ev.exec = &x;
	pkg_event(g, &ev);
}

static void pkg_file(struct pkg_rig *g, const char *path)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__FileActivity fa = EGRET__V1__FILE_ACTIVITY__INIT;

	fa.op = EGRET__V1__FILE_ACTIVITY__OP__OP_CREATE;
	fa.path = (char *)path;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_FILE;
	ev.file = &fa;
	pkg_event(g, &ev);
}

static void pkg_exit(struct pkg_rig *g)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__ProcessExit x = EGRET__V1__PROCESS_EXIT__INIT;

	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_EXIT;
	ev.exit = &x;
	pkg_event(g, &ev);
}

static void write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	cr_assert(f, "%s", path);
	fputs(text, f);
	fclose(f);
}

static const Egret__V1__Event *pkg_find(const struct events *evs, int payload)
{
	for (size_t i = 0; i < evs->n; i++) {
		if ((int)evs->ev[i]->payload_case == payload)
			return evs->ev[i];
	}
	return NULL;
}

/* pip with PIP_INDEX_URL=https://user:PASSWORD@host (its run's registry), installing a wheel
 * whose direct_url.json names https://tok:PASSWORD@host/... (the install's source).
 */
static void pip_run(struct pkg_rig *g, const char *url, struct events *evs)
{
	static char *env[] = { "PIP_INDEX_URL=https://user:S3CRET-u1@192.0.2.1/simple",
			       "HOME=/nonexistent", NULL };
	char *argv[] = { "pip", "install", "--target", NULL, "demo" };
	char site[96], dist[128], path[192], json[2048];

	snprintf(site, sizeof(site), "%s/site", g->dir);
	snprintf(dist, sizeof(dist), "%s/demo-1.0.dist-info", site);
	cr_assert_eq(mkdir(site, 0755), 0);
	cr_assert_eq(mkdir(dist, 0755), 0);
	snprintf(path, sizeof(path), "%s/direct_url.json", dist);
	snprintf(json, sizeof(json), "{\"url\": \"%s\"}", url);
	write_text(path, json);
	snprintf(path, sizeof(path), "%s/METADATA", dist);
	write_text(path, "Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n");
	argv[3] = site;
	pkg_rig_manager(g, env);
	pkg_exec(g, argv, 5, "/");
	pkg_file(g, path);
	pkg_exit(g);
	stream__flush(&g->s);
	cr_assert_eq(events_read(g->out, evs), 0);
}

Test(redact, package_strings_from_the_environment_and_files_are_redacted)
{
	const Egret__V1__Event *run, *inst;
	struct pkg_rig g;
	struct events evs;

	pkg_rig_init(&g, true);
	pip_run(&g, "https://tok:S3CRET-s2@192.0.2.1/demo-1.0.whl", &evs);
	run = pkg_find(&evs, EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN);
	inst = pkg_find(&evs, EGRET__V1__EVENT__PAYLOAD_PACKAGE_INSTALL);
	cr_assert(run, "no PackageRun");
	cr_assert(inst, "no PackageInstall");
	cr_expect_str_eq(run->package_run->registry, "https://user:[REDACTED]@192.0.2.1/simple");
	cr_expect_str_eq(run->package_run->registry_from, "PIP_INDEX_URL");
	cr_expect_str_eq(inst->package_install->source,
			 "https://tok:[REDACTED]@192.0.2.1/demo-1.0.whl");
	cr_expect_str_eq(inst->package_install->name, "demo");
	cr_expect_str_eq(inst->package_install->version, "1.0");
	events_free(&evs);
	pkg_rig_free(&g);
}

/* A source longer than PackageInstall holds is cut by its reader before egretd sees it, inside
 * the password here (no '@' left for the URL rule): its last word is redacted whole.
 */
Test(redact, a_package_string_its_reader_cut_never_shows_a_piece_of_a_secret)
{
	const Egret__V1__Event *inst;
	struct pkg_rig g;
	struct events evs;
	char url[1100];

	snprintf(url, sizeof(url), "https://tok:%01000d@192.0.2.1/demo-1.0.whl", 7);
	pkg_rig_init(&g, true);
	pip_run(&g, url, &evs);
	inst = pkg_find(&evs, EGRET__V1__EVENT__PAYLOAD_PACKAGE_INSTALL);
	cr_assert(inst, "no PackageInstall");
	cr_expect_null(strstr(inst->package_install->source, "00000"), "%s",
		       inst->package_install->source);
	cr_expect_str_eq(inst->package_install->source, "[REDACTED][TRUNCATED]");
	events_free(&evs);
	pkg_rig_free(&g);
}

/* An environment larger than the tracker reads: the variable its read cuts (inside the
 * password here) is left out, never reported in part.
 */
Test(redact, a_variable_cut_by_the_environment_read_is_left_out)
{
	static char pad[65536 - 100], var[400];
	char *env[] = { pad, var, NULL };
	char *argv[] = { "pip", "install", "demo" };
	const Egret__V1__Event *run;
	struct pkg_rig g;
	struct events evs;

	memset(pad, 'x', sizeof(pad) - 1);
	memcpy(pad, "PAD=", 4);
	snprintf(var, sizeof(var), "PIP_INDEX_URL=https://user:%0300d@192.0.2.1/simple", 7);
	pkg_rig_init(&g, true);
	g.child = fork();
	cr_assert_geq(g.child, 0);
	if (!g.child) {
		execle("/bin/sleep", "sleep", "60", (char *)NULL, env);
		_exit(127);
	}
	usleep(200000);
	pkg_exec(&g, argv, 3, "/");
	pkg_exit(&g);
	stream__flush(&g.s);
	cr_assert_eq(events_read(g.out, &evs), 0);
	run = pkg_find(&evs, EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN);
	cr_assert(run, "no PackageRun");
	cr_expect_null(strstr(run->package_run->registry, "00000"), "%s",
		       run->package_run->registry);
	cr_expect_str_neq(run->package_run->registry_from, "PIP_INDEX_URL");
	events_free(&evs);
	pkg_rig_free(&g);
}

/* the control: without a redactor (unit tests of the tracker) the strings are as read */
Test(redact, package_strings_without_a_redactor_are_as_read)
{
	const Egret__V1__Event *run;
	struct pkg_rig g;
	struct events evs;

	pkg_rig_init(&g, false);
	pip_run(&g, "https://tok:S3CRET-s2@192.0.2.1/demo-1.0.whl", &evs);
	run = pkg_find(&evs, EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN);
	cr_assert(run, "no PackageRun");
	cr_expect_str_eq(run->package_run->registry, "https://user:S3CRET-u1@192.0.2.1/simple");
	events_free(&evs);
	pkg_rig_free(&g);
}

/* npm's registry from an .npmrc in its cwd; a registry too long for the event, cut inside its
 * password by the size limit, never shows a piece of it
 */
Test(redact, package_registries_from_config_files_are_redacted)
{
	static char *env[] = { "HOME=/nonexistent", NULL };
	char *argv[] = { "npm", "install", "left-pad" };
	char path[128], line[1200];
	const Egret__V1__Event *run;
	struct pkg_rig g;
	struct events evs;

	pkg_rig_init(&g, true);
	snprintf(path, sizeof(path), "%s/.npmrc", g.dir);
	write_text(path, "//reg.test/:_authToken=TOK3N-n1\n"
			 "registry=https://npmuser:S3CRET-n2@reg.test/\n");
	pkg_rig_manager(&g, env);
	pkg_exec(&g, argv, 3, g.dir);
	pkg_exit(&g);
	stream__flush(&g.s);
	cr_assert_eq(events_read(g.out, &evs), 0);
	run = pkg_find(&evs, EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN);
	cr_assert(run, "no PackageRun");
	cr_expect_str_eq(run->package_run->registry, "https://npmuser:[REDACTED]@reg.test/");
	cr_expect_str_eq(run->package_run->registry_from, path);
	events_free(&evs);

	/* 1,000 bytes of password: more than PackageRun.registry holds */
	snprintf(line, sizeof(line), "registry=https://npmuser:%01000d@reg.test/\n", 7);
	write_text(path, line);
	pkg_exec(&g, argv, 3, g.dir);
	pkg_exit(&g);
	stream__flush(&g.s);
	cr_assert_eq(events_read(g.out, &evs), 0);
	run = NULL;
	for (size_t i = 0; i < evs.n; i++) {
		if (evs.ev[i]->payload_case == EGRET__V1__EVENT__PAYLOAD_PACKAGE_RUN)
			run = evs.ev[i];
	}
	cr_assert(run);
	cr_expect_null(strstr(run->package_run->registry, "00000"), "%s",
		       run->package_run->registry);
	cr_expect_str_eq(run->package_run->registry, "https://npmuser:[REDACTED]@reg.test/");
	events_free(&evs);
	pkg_rig_free(&g);
}
