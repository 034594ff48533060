/* What egretctl run gives a sandbox: its confinement options and the words that carry them to
 * egretd, and the paths egretd names for it to cover.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include "ns.h"
#include "run.h"
#include "sandbox.h"

Test(sandbox, spec_words_round_trip)
{
	char words[SANDBOX_SPEC_WORDS][SANDBOX_SPEC_WORD];
	struct sandbox_spec s, back;

	sandbox_spec__default(&s);
	cr_expect_eq(s.ns, SANDBOX_NS_DEFAULT);
	cr_expect_not(s.ns & SANDBOX_NS_NET, "the host's network by default");
	cr_expect(s.seccomp && s.no_new_privs && !s.privileged);
	s.ns |= SANDBOX_NS_NET;
	s.uid = s.gid = 0x80000;
	s.ids = 65536;
	sandbox_spec__words(&s, words);
	cr_expect_str_eq(words[0], "ns=user,pid,mount,ipc,uts,cgroup,net");
	memset(&back, 0, sizeof(back));
	for (int i = 0; i < SANDBOX_SPEC_WORDS; i++)
		cr_expect_eq(sandbox_spec__parse_word(&back, words[i]), 0, "%s", words[i]);
	cr_expect_eq(back.ns, s.ns);
	cr_expect_eq(back.uid, s.uid);
	cr_expect_eq(back.gid, s.gid);
	cr_expect_eq(back.ids, s.ids);
	cr_expect_eq(back.seccomp, s.seccomp);
	cr_expect_eq(back.no_new_privs, s.no_new_privs);
	cr_expect_eq(back.privileged, s.privileged);
	cr_expect_eq(sandbox_spec__parse_word(&back, "ns="), 0);
	cr_expect_eq(back.ns, 0);
	static const char *const bad[] = { "ns=pid,bogus", "uid=-1", "uid=4294967296", "seccomp=x",
					   "nnp=2",	   "what=1", "privileged",     "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_neq(sandbox_spec__parse_word(&back, bad[i]), 0, "'%s' accepted", bad[i]);
}

Test(sandbox, share_lists)
{
	unsigned int m;
	const char *bad = NULL;

	cr_expect_eq(sandbox_spec__parse_ns("pid,net", &m, &bad), 0);
	cr_expect_eq(m, SANDBOX_NS_PID | SANDBOX_NS_NET);
	cr_expect_eq(sandbox_spec__parse_ns("all", &m, &bad), 0);
	cr_expect_eq(m, SANDBOX_NS_ALL);
	cr_expect_eq(sandbox_spec__parse_ns("pid,mnt", &m, &bad), -EINVAL);
	cr_expect_str_eq(bad, "mnt");
}

Test(sandbox, user_option)
{
	struct sandbox_spec s = { 0 };

	cr_expect_eq(run__parse_user("1000", &s), 0);
	cr_expect(s.uid == 1000 && s.gid == 1000 && s.ids == 1 && s.user_given);
	cr_expect_eq(run__parse_user("1000:2000", &s), 0);
	cr_expect(s.uid == 1000 && s.gid == 2000);
	static const char *const bad[] = { "0",	    "0:0", "1000:0",	 "x", "1000:",
					   ":1000", "-5",  "4294967295", "" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		cr_expect_neq(run__parse_user(bad[i], &s), 0, "--user '%s' accepted", bad[i]);
}

Test(sandbox, protect_lines)
{
	struct ns_protect p = { 0 };

	cr_expect_eq(ns_protect__add_line(&p, "protect policy /etc/egret/egret.policy"), 0);
	cr_expect_eq(ns_protect__add_line(&p, "protect sink /var/log/egret/with space.pb"), 0);
	cr_expect_eq(ns_protect__add_line(&p, "protect policy relative/path"), -EINVAL);
	cr_expect_eq(ns_protect__add_line(&p, "policy /etc/egret/egret.policy"), -EINVAL);
	cr_expect_eq(ns_protect__add_line(&p, "protect /etc/x"), -EINVAL);
	cr_assert_eq(p.n, 2);
	cr_expect_str_eq(p.v[0].kind, "policy");
	cr_expect_str_eq(p.v[1].path, "/var/log/egret/with space.pb");
	ns_protect__free(&p);
}
