/* What egretd says about a kernel without running on it: the one line naming why a program
 * cannot load, from verifier logs and libbpf messages as 6.1 and 6.12 print them (issue 12),
 * and the user-space half of the path matcher's start-up self-test.
 */
#include <errno.h>
#include <string.h>

#include <criterion/criterion.h>

#include "audit.h"
#include "egret/audit.h"
#include "loader.h"
#include "selftest.h"

static const char *why(const char *vlog, const char *msgs)
{
	static char out[512];

	loader__explain(vlog, msgs, out, sizeof(out));
	return out;
}

Test(kernel, a_helper_the_program_type_lacks_is_named)
{
	const char *w = why("0: R1=ctx(off=0,imm=0) R10=fp0\n"
			    "; __u64 pid_tgid = bpf_get_current_pid_tgid();\n"
			    "12: (85) call bpf_get_current_pid_tgid#14\n"
			    "unknown func bpf_get_current_pid_tgid#14\n"
			    "processed 12 insns (limit 1000000) max_states_per_insn 0\n",
			    "");

	cr_expect_str_eq(w, "helper bpf_get_current_pid_tgid is not available to this program "
			    "type here");
	w = why("140: (85) call bpf_get_current_uid_gid#15\n"
		"program of this type cannot use helper bpf_get_current_uid_gid#15\n",
		NULL);
	cr_expect(strstr(w, "helper bpf_get_current_uid_gid is not available"), "%s", w);
}

Test(kernel, a_missing_kfunc_names_the_release_that_has_it)
{
	const char *w =
		why("", "libbpf: extern (func ksym) 'bpf_task_from_pid': not found in "
			"kernel or module BTFs\nlibbpf: failed to load object 'audit_bpf'\n");

	cr_expect_str_eq(w, "kfunc bpf_task_from_pid is missing from this kernel (Linux 6.3 has "
			    "it)");
	w = why("", "libbpf: extern (func ksym) 'bpf_send_signal_task': not found in kernel\n");
	cr_expect(strstr(w, "(Linux 6.13 has it)"), "%s", w);
}

Test(kernel, verifier_limits_and_references_are_named)
{
	const char *w;

	w = why("BPF program is too large. Processed 1000001 insn\n"
		"processed 1000001 insns (limit 1000000) max_states_per_insn 38\n",
		"");
	cr_expect(strstr(w, "too large"), "%s", w);
	w = why("; return 0;\n91: (b7) r0 = 0\n92: (95) exit\n"
		"Unreleased reference id=4 alloc_insn=18\n"
		"processed 93 insns (limit 1000000)\n",
		"");
	cr_expect_str_eq(w, "the verifier found a reference not released id=4 alloc_insn=18");
	w = why("35: <invalid CO-RE relocation>\nfailed to resolve CO-RE relocation <byte_off> "
		"[312] struct mm_struct.rss_stat[0].count (0:47:0:0 @ offset 736)\n",
		"");
	cr_expect(strstr(w, "a kernel type differs here: <byte_off> [312] struct "
			    "mm_struct.rss_stat[0].count"),
		  "%s", w);
}

Test(kernel, otherwise_the_verifier_s_last_word)
{
	const char *w = why("func 'sched_process_exit' doesn't have 2-th argument\n"
			    "processed 0 insns (limit 1000000) max_states_per_insn 0\n"
			    "verification time 12 usec\nstack depth 0\n",
			    "");

	cr_expect_str_eq(w, "the verifier says: func 'sched_process_exit' doesn't have 2-th "
			    "argument");
	w = why("", "libbpf: prog 'x': failed to attach: Invalid argument\n");
	cr_expect_str_eq(w, "libbpf: prog 'x': failed to attach: Invalid argument");
	w = why("", "libbpf: prog 'egret_cg_procs': BPF program load failed: Operation not "
		    "permitted\nlibbpf: prog 'egret_cg_procs': failed to load: -1\n"
		    "libbpf: failed to load object 'confine_bpf'\n");
	cr_expect_str_eq(w, "the kernel refused it: Operation not permitted");
	cr_expect_str_eq(why(NULL, NULL), "no reason given");
}

static struct egret_pattern pat[4];

static void patterns(void)
{
	cr_assert_eq(audit__parse_pattern("/proc/*/environ", EGRET_PATTERN_READ, &pat[0]), 0);
	cr_assert_eq(audit__parse_pattern("/", EGRET_PATTERN_WRITE, &pat[1]), 0);
	cr_assert_eq(audit__parse_pattern("/dev", EGRET_PATTERN_SKIP, &pat[2]), 0);
}

Test(kernel, the_self_test_s_own_matcher_follows_the_patterns)
{
	patterns();
	cr_expect(selftest__path_wanted(pat, 3, "/proc/12/environ", 16, EGRET_PATTERN_READ));
	cr_expect_not(selftest__path_wanted(pat, 3, "/proc/12/status", 15, EGRET_PATTERN_READ));
	cr_expect_not(selftest__path_wanted(pat, 3, "/proc/environ", 13, EGRET_PATTERN_READ));
	cr_expect(selftest__path_wanted(pat, 3, "/etc/hostname", 13, EGRET_PATTERN_WRITE));
	cr_expect_not(selftest__path_wanted(pat, 3, "/dev/null", 9, EGRET_PATTERN_WRITE),
		      "a skip pattern thins out writes");
	cr_expect_not(selftest__path_wanted(pat, 3, "/etc/hostname", 13, EGRET_PATTERN_READ));
}

Test(kernel, a_pattern_s_sample_path_is_one_it_names)
{
	char out[64];

	cr_assert_eq(selftest__sample("/proc/*/environ", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/proc/x/environ");
	patterns();
	cr_expect(selftest__path_wanted(pat, 3, out, strlen(out), EGRET_PATTERN_READ));
	cr_assert_eq(selftest__sample("/", out, sizeof(out)), 0);
	cr_expect_str_eq(out, "/");
	cr_expect_eq(selftest__sample("/a-long-component/*", out, 8), -ENAMETOOLONG);
}

/* A map's pin name is its field's: LOADER_MAP_NAME does not compile for a map the skeletons do
 * not have. */
Test(kernel, loader_map_names_are_the_typed_fields)
{
	struct loader l = { 0 };

	l.maps.signal_senders = 42;
	cr_expect_str_eq(LOADER_MAP_NAME(signal_senders), "signal_senders");
	cr_expect_str_eq(LOADER_MAP_NAME(policy_v1), "policy_v1");
	cr_expect_str_eq(LOADER_MAP_NAME(file_budgets), "file_budgets");
	cr_expect_eq(l.maps.signal_senders, 42);
}

/* the objects are only opened (parsed), which needs no root */
Test(kernel, the_program_table_lists_every_attached_program_once)
{
	static struct loader_specs s;
	bool connect4 = false, xopen = false, xopenat = false;

	cr_assert_eq(loader__specs(&s), 0);
	cr_assert_gt(s.n, 10);
	for (unsigned int i = 0; i < s.n; i++) {
		cr_expect_str_neq(s.spec[i].name, "egret_selftest", "a run-only program");
		for (unsigned int j = 0; j < i; j++)
			cr_expect_str_neq(s.spec[i].name, s.spec[j].name);
		if (!strcmp(s.spec[i].name, "egret_connect4"))
			connect4 = s.spec[i].cgroup &&
				   s.spec[i].attach_type == BPF_CGROUP_INET4_CONNECT;
		/* a link of one program to another tracepoint than its own section's */
		if (!strcmp(s.spec[i].name, "egret_xopen"))
			xopen = !strcmp(s.spec[i].prog, "egret_xopenat") &&
				!strcmp(s.spec[i].tp, "syscalls/sys_exit_open");
		if (!strcmp(s.spec[i].name, "egret_xopenat"))
			xopenat = !strcmp(s.spec[i].prog, "egret_xopenat") && !s.spec[i].tp[0];
		if (!s.spec[i].tp[0])
			cr_expect_str_eq(s.spec[i].name, s.spec[i].prog, "a program's own link");
	}
	cr_expect(connect4, "egret_connect4 attaches to the root cgroup at connect(2)");
	cr_expect(xopenat, "egret_xopenat: its own link, on its section's tracepoint");
	cr_expect(xopen, "egret_xopen: egret_xopenat on sys_exit_open");
}
