/* egretd's options as one table: each option's name, letter, value, default, help, and the kind
 * of value it takes (how it is checked and stored). The table yields getopt_long's options, the
 * defaults (taken as if given, so each is written once, here) and --help.
 */
#include <errno.h>
#include <getopt.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "audit.h"
#include "egret/dns.h"
#include "egret/syscalls32.h"
#include "engine.h"
#include "flows.h"
#include "log.h"
#include "options.h"
#include "paths.h"
#include "util.h"

#define WHY_LEN	   320
#define HELP_COL   25 /* where an option's help starts */
#define HELP_WIDTH 90 /* and where its lines end */

enum opt_kind {
	OPT_FLAG,    /* bool: true when given */
	OPT_STRING,  /* const char *: the value itself, once check accepts it */
	OPT_UINT,    /* unsigned int from min to max */
	OPT_SECONDS, /* the same, a duration in seconds */
	OPT_SIZE,    /* uint64_t: a size with a K, M or G suffix, at least min */
	OPT_WORD,    /* one of words ("a|b"): its index, into a field of size bytes */
	OPT_LIST,    /* repeatable: const char *[max], its count at count_off, once check accepts */
	OPT_ADD,     /* repeatable: each value handed to add */
	OPT_VERSION, /* print the version and exit */
	OPT_HELP,    /* print --help and exit */
};

struct opt_spec;
/* 0 when arg is a good value given what o holds; else nonzero, with why saying what is wrong. */
typedef int (*opt_check_fn)(const struct options *o, const char *arg, char *why, size_t size);
/* Take arg into o: 0, or -errno with why saying what is wrong. */
typedef int (*opt_add_fn)(struct options *o, const struct opt_spec *s, const char *arg, char *why,
			  size_t size);

struct opt_spec {
	const char *name;
	char letter;	 /* the short option, 0: none */
	const char *arg; /* the value's name in --help; NULL: no value, or OPT_WORD's words */
	enum opt_kind kind;
	size_t off, size;  /* the field in struct options */
	size_t count_off;  /* OPT_LIST: its count (unsigned int) */
	uint64_t min, max; /* OPT_UINT, OPT_SECONDS; OPT_SIZE's min; OPT_LIST's most values */
	const char *words; /* OPT_WORD: "a|b|c", stored as 0, 1, 2 */
	opt_check_fn check;
	opt_add_fn add;
	int param;		    /* for add: the kind of pattern */
	const char *def;	    /* the default, taken as if given before the command line */
	const char *const *defs;    /* repeatable: what is taken when the option is not given */
	const char *def_text;	    /* a default described rather than taken */
	const char *(*names)(void); /* the values it accepts, for --help */
	const char *help;	    /* paragraphs split by '\n'; leading spaces indent one */
};

#define FIELD(f) .off = offsetof(struct options, f), .size = sizeof(((struct options *)0)->f)
#define LIST(f, n)                                          \
	FIELD(f), .count_off = offsetof(struct options, n), \
		  .max = ARRAY_SIZE(((struct options *)0)->f)

/* ---- checks and adders ------------------------------------------------------------------- */

static int check_upstream(const struct options *o, const char *arg, char *why, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len;

	snprintf(why, size, "expected ADDR, ADDR:PORT or [ADDR6]:PORT");
	return dns__parse_server(arg, &ss, &len);
}

static int check_absolute(const struct options *o, const char *arg, char *why, size_t size)
{
	snprintf(why, size, "an absolute directory");
	return arg[0] != '/';
}

static int check_sink(const struct options *o, const char *arg, char *why, size_t size)
{
	struct sink probe;

	if (sink__parse(&probe, arg, why, size))
		return -EINVAL;
	for (unsigned int i = 0; i < o->nsinks; i++) {
		if (!strcmp(o->sinks[i], arg)) {
			snprintf(why, size, "given twice");
			return -EEXIST;
		}
	}
	return 0;
}

static int check_cgroup(const struct options *o, const char *arg, char *why, size_t size)
{
	snprintf(why, size, "a cgroup path");
	return !arg[0];
}

static int check_gap(const struct options *o, const char *arg, char *why, size_t size)
{
	snprintf(why, size, "one of %s", kfeatures__feature_names());
	return !kfeatures__is_feature(arg);
}

static int check_probe(const struct options *o, const char *arg, char *why, size_t size)
{
	snprintf(why, size, "one of %s", kfeatures__probe_names());
	return !kfeatures__is_probe(arg);
}

static int add_pattern(struct options *o, const struct opt_spec *s, const char *arg, char *why,
		       size_t size)
{
	struct loader_config *l = &o->loader;

	snprintf(why, size,
		 "an absolute path of at most %d characters ('*' matches within a component), %d "
		 "patterns in all",
		 EGRET_PATTERN_LEN - 1, EGRET_PATTERNS_MAX);
	if (l->npatterns == EGRET_PATTERNS_MAX)
		return -E2BIG;
	if (audit__parse_pattern(arg, (__u8)s->param, &l->patterns[l->npatterns]))
		return -EINVAL;
	str_copy(l->pattern_text[l->npatterns++], EGRET_PATTERN_LEN, arg);
	return 0;
}

static int add_redact_key(struct options *o, const struct opt_spec *s, const char *arg, char *why,
			  size_t size)
{
	snprintf(why, size, "too many words");
	return redact__add_key(&o->redact, arg) ? -E2BIG : 0;
}

static int add_redact_pattern(struct options *o, const struct opt_spec *s, const char *arg,
			      char *why, size_t size)
{
	return redact__add_pattern(&o->redact, arg, why, size) ? -EINVAL : 0;
}

/* ---- the table --------------------------------------------------------------------------- */

static const char *const default_sinks[] = { EGRET_DEFAULT_SINK, NULL };
static const char *const default_writes[] = { "/", NULL };
static const char *const default_reads[] = { "/proc/*/environ", "/root/.aws",
					     "/root/.ssh",	"/home/*/.aws",
					     "/home/*/.ssh",	"/var/run/secrets",
					     "/run/secrets",	NULL };
static const char *const default_skips[] = { "/dev", "/proc", "/sys", NULL };

static const struct opt_spec specs[] = {
	{ "policy", 0, "FILE", OPT_STRING, FIELD(policy), .def = EGRET_DEFAULT_POLICY,
	  .help = "the policy; SIGHUP or 'egretctl reload' re-reads it" },
	{ "reload-on-change", 0, NULL, OPT_FLAG, FIELD(reload_on_change),
	  .help = "re-read the policy when the file changes (looked at every second; a ConfigMap "
		  "volume's update is one): like egretctl reload, a file with an error changes "
		  "nothing and is a refused PolicyChange" },
	{ "trusted-dir", 0, "DIR", OPT_STRING, FIELD(trusted_dir), .check = check_absolute,
	  .def_text = "none: every directory up to / is checked",
	  .help = "take DIR and the directories above it as safe when checking who could write the "
		  "policy, live rules and spool (a Kubernetes ConfigMap volume, world-writable "
		  "but reachable only inside egret's own pod)" },
	{ "live-rules", 0, "FILE", OPT_STRING, FIELD(live_rules), .def = EGRET_DEFAULT_LIVE_RULES,
	  .help = "where rules added with egretctl allow/deny are kept across restarts" },
	{ "cgroup", 0, "PATH", OPT_STRING, FIELD(cgroup), .def = EGRET_DEFAULT_CGROUP_NAME,
	  .help = "sandbox root cgroup: absolute, or relative to the cgroup v2 mount" },
	{ "attach", 0, "CGROUP", OPT_STRING, FIELD(attach), .check = check_cgroup,
	  .def_text = "the cgroup v2 root",
	  .help = "attach egret's programs here (absolute, or relative to the cgroup v2 mount): "
		  "sandboxes are found anywhere below it, the root cgroup and every --watch must "
		  "be" },
	{ "watch", 0, "CGROUP", OPT_LIST, LIST(watch, nwatch), .check = check_cgroup,
	  .def_text = "the root cgroup only",
	  .help = "a subtree where every cgroup must be a registered sandbox: one not registered "
		  "yet has no network until egretd registers it (e.g. kubepods.slice, the "
		  "--cgroup-parent of containers); 7 at most" },
	{ "state-dir", 0, "DIR", OPT_STRING, FIELD(state_dir), .def = EGRET_DEFAULT_STATE_DIR,
	  .help = "bpffs directory for pinned links and maps" },
	{ "control", 0, "PATH", OPT_STRING, FIELD(control), .def = EGRET_DEFAULT_CONTROL,
	  .help = "control socket for egretctl" },
	{ "control-group", 0, "GROUP", OPT_STRING, FIELD(control_group),
	  .help = "group allowed on the control socket besides root" },
	{ "upstream-dns", 0, "ADDR[:PORT]", OPT_STRING, FIELD(dns.upstream),
	  .check = check_upstream, .def_text = "the first nameserver of /etc/resolv.conf",
	  .help = "where allowed names are resolved; [ADDR6]:PORT for IPv6" },
	{ "dns-refuse", 0, NULL, OPT_WORD, FIELD(dns.nxdomain), .words = "refused|nxdomain",
	  .def = "refused", .help = "the answer to a name no rule allows" },
	{ "dns-min-ttl", 0, "SECONDS", OPT_SECONDS, FIELD(dns.min_ttl), .max = 7 * 86400,
	  .def = "30", .help = "an allowed answer's addresses stay open at least this long" },
	{ "dns-grace", 0, "SECONDS", OPT_SECONDS, FIELD(dns.grace), .max = 7 * 86400, .def = "30",
	  .help = "and this long after their TTL, so a connection opened just before expiry is "
		  "not refused" },
	{ "dns-max-ips", 0, "N", OPT_UINT, FIELD(dns.max_ips), .min = 1, .max = 4096, .def = "32",
	  .help = "addresses one name may open to one sandbox" },
	{ "dns-max-names", 0, "N", OPT_UINT, FIELD(dns.max_names), .min = 1,
	  .max = DNS_NAMES_MAX / 8, .def = "4096",
	  .help = "names whose addresses one sandbox may hold open at once; a new name over it "
		  "is refused until some expire" },
	{ "dns-max-addresses", 0, "N", OPT_UINT, FIELD(dns.max_addrs), .min = 1,
	  .max = EGRET_DNS_ALLOW_MAX / 4, .def = "16384",
	  .help = "addresses answers may hold open to one sandbox at once (the kernel's table "
		  "holds 262,144 for all)" },
	{ "dns-max-ttl", 0, "SECONDS", OPT_SECONDS, FIELD(dns.max_ttl), .min = 1, .max = 7 * 86400,
	  .def = "86400",
	  .help = "an answer's addresses stay open at most this long (before the "
		  "grace), whatever its TTL" },
	{ "dns-cache", 0, "N", OPT_UINT, FIELD(dns.cache), .max = 65536, .def = "4096",
	  .help = "answers kept to answer a sandbox's repeated questions until their TTL ends, "
		  "a quarter of them for one sandbox; 0: every query goes upstream" },
	{ "audit-scope", 0, NULL, OPT_WORD, FIELD(loader.audit_host), .words = "sandbox|host",
	  .def = "sandbox",
	  .help = "whose processes, files and flows are audited: the sandboxes' (everything under "
		  "the root cgroup) or the whole host's" },
	{ "audit-write", 0, "PREFIX", OPT_ADD, .add = add_pattern, .param = EGRET_PATTERN_WRITE,
	  .defs = default_writes,
	  .help = "report creates, writes, deletes, renames, chmods under it" },
	{ "audit-read", 0, "PATTERN", OPT_ADD, .add = add_pattern, .param = EGRET_PATTERN_READ,
	  .defs = default_reads, .help = "report reads under it, '*' standing for any one name" },
	{ "audit-skip", 0, "PREFIX", OPT_ADD, .add = add_pattern, .param = EGRET_PATTERN_SKIP,
	  .defs = default_skips,
	  .help = "report no writes under it; reads named by --audit-read are still reported" },
	{ "max-tcp-flows", 0, "N", OPT_UINT, FIELD(max_tcp_flows), .min = 1, .max = 1u << 20,
	  .def = "131072",
	  .help = "open TCP connections of all sandboxes whose connect egretd holds, to name "
		  "who started each in its flow record when it closes (about 110 bytes each); "
		  "one opened over it has its flow reported with its start unknown" },
	{ "max-tcp-flows-per-sandbox", 0, "N", OPT_UINT, FIELD(max_tcp_flows_per_sandbox), .min = 1,
	  .max = 1u << 20, .def = "16384",
	  .help = "the same for one sandbox, so that one holding many connections open leaves "
		  "room for the others" },
	{ "file-budget", 0, "N", OPT_UINT, FIELD(loader.file_budget), .max = 100000000,
	  .def = "20000",
	  .help = "file records a second each sandbox may send (reads of secret paths have a "
		  "budget of their own); the rest are counted in the kernel and reported as Loss "
		  "events (SOURCE_BUDGET) naming the sandbox, so a sandbox writing files in a loop "
		  "cannot push out another's records; 0: no limit" },
	{ "redact-key", 0, "WORD", OPT_ADD, .add = add_redact_key,
	  .help = "treat KEY=VALUE and --KEY VALUE as secret when KEY contains WORD, besides the "
		  "built-in words" },
	{ "redact-pattern", 0, "REGEX", OPT_ADD, .add = add_redact_pattern,
	  .help = "redact whatever the POSIX extended regex matches in argv and paths" },
	{ "sink", 0, "URI", OPT_LIST, LIST(sinks, nsinks), .check = check_sink,
	  .defs = default_sinks,
	  .help = "where events go: one of these URIs, or several\n"
		  "  file:PATH[?max_size=SIZE&keep=N]: rotated at SIZE (default 100M) into PATH.1 "
		  "... PATH.N (default 10)\n"
		  "  stdout\n"
		  "  tcp://HOST:PORT[?ack]: ack waits for the receiver's acknowledgements (egretctl "
		  "tail sends them)\n"
		  "  unix:PATH[?ack]\n"
		  "  otlp+http://HOST[:PORT][/PATH][?compression=gzip|none]: OTLP/HTTP logs "
		  "(default port 4318, path /v1/logs), gzipped unless none" },
	{ "format", 0, NULL, OPT_WORD, FIELD(format), .words = "binary|json", .def = "binary",
	  .help = "what the stdout sink writes: binary, the varint-delimited egret.v1.Event "
		  "stream; json, one event a line, for a human" },
	{ "spool", 0, "DIR", OPT_STRING, FIELD(spool), .check = check_absolute,
	  .def = EGRET_DEFAULT_SPOOL,
	  .help = "events wait here for sinks that are down or slow, and across restarts" },
	{ "spool-max", 0, "SIZE", OPT_SIZE, FIELD(spool_max), .min = SPOOL_MIN_LIMIT, .def = "1G",
	  .help = "evict the oldest events past this size (K, M, G), reporting the exact range "
		  "as a Loss event" },
	{ "spool-sync", 0, NULL, OPT_WORD, FIELD(spool_sync), .words = "never|second|batch",
	  .def = "second",
	  .help = "how often the spool is fdatasync'ed: an egretd crash loses nothing either way, "
		  "a power cut loses what was not synced" },
	{ "heartbeat", 0, "SECONDS", OPT_SECONDS, FIELD(heartbeat_s), .max = 86400, .def = "30",
	  .help = "a Heartbeat event this often; 0: none" },
	{ "require-unprivileged", 0, NULL, OPT_FLAG, FIELD(loader.require_unpriv),
	  .help = "kill a sandboxed process holding CAP_SYS_ADMIN, CAP_NET_ADMIN, CAP_SYS_PTRACE, "
		  "CAP_SYS_MODULE, CAP_BPF or CAP_PERFMON over the host, at its exec or when it "
		  "enters a sandbox itself (enforce mode; audit mode reports it; the policy's "
		  "'require unprivileged' does the same)" },
	{ "trusted-mover", 0, "CGROUP", OPT_LIST, LIST(trusted_movers, ntrusted_movers),
	  .check = check_cgroup, .def_text = "any writer outside every sandbox",
	  .help = "only writers under this cgroup (absolute, or relative to the cgroup v2 mount) "
		  "may move host processes into a sandbox; others' moves are reported" },
	{ "compat", 0, NULL, OPT_WORD, FIELD(loader.compat_mode), .words = "refuse|judge",
	  .def = "refuse",
	  .help = "a 32-bit (int 0x80, sysenter) or x32 system call from a sandbox: refuse kills "
		  "the process at its first one; judge checks it as its 64-bit twin is checked, "
		  "and kills the calls it cannot check (README)" },
	{ "kill-cross-signals", 0, NULL, OPT_FLAG, FIELD(loader.kill_cross_signals),
	  .def_text = "kill only one that signals egretd, report the others",
	  .help = "kill a sandboxed process that signals any process outside its sandbox" },
	{ "accept-kernel-gap", 0, "NAME", OPT_LIST, LIST(kernel.accept, kernel.naccept),
	  .check = check_gap, .names = kfeatures__feature_names,
	  .help = "enforce although this kernel lacks what protection NAME needs and nothing "
		  "replaces it (README \"Kernels\"); without it egretd refuses to enforce there" },
	{ "without-kernel-feature", 0, "NAME", OPT_LIST, LIST(kernel.without, kernel.nwithout),
	  .check = check_probe, .names = kfeatures__probe_names,
	  .help = "behave as on a kernel without NAME, to try egret's fallbacks" },
	{ "verbose", 'v', NULL, OPT_FLAG, FIELD(verbose),
	  .help = "debug logging, including the BPF verifier's output" },
	{ "version", 'V', NULL, OPT_VERSION, .help = "print the version and exit" },
	{ "help", 'h', NULL, OPT_HELP, .help = "print this help and exit" },
};

#define NSPECS ARRAY_SIZE(specs)

_Static_assert(SINK_BINARY == 0 && SINK_JSON == 1, "--format's words in enum order");
_Static_assert(SPOOL_SYNC_NEVER == 0 && SPOOL_SYNC_SECOND == 1 && SPOOL_SYNC_BATCH == 2,
	       "--spool-sync's words in enum order");
_Static_assert(sizeof(enum sink_format) == sizeof(uint32_t) &&
		       sizeof(enum spool_sync) == sizeof(uint32_t),
	       "an OPT_WORD field is a bool or 32 bits");
_Static_assert(EGRET_COMPAT_REFUSE == 0 && EGRET_COMPAT_JUDGE == 1,
	       "--compat's words in enum order");
_Static_assert(EGRET_FILE_BUDGET_DEFAULT == 20000, "--file-budget's default is the kernel's");
_Static_assert(FLOW_STARTS_DEFAULT == 131072, "--max-tcp-flows's default is the collector's");
_Static_assert(FLOW_STARTS_PER_SB_DEFAULT == 16384,
	       "--max-tcp-flows-per-sandbox's default is the collector's");

/* ---- --help ------------------------------------------------------------------------------ */

/* text from column at on, wrapped before HELP_WIDTH; continuation lines start at indent */
static void wrap(FILE *f, const char *text, int at, int indent)
{
	for (bool first = true; *text; first = false) {
		size_t n = strcspn(text, " ");

		if (!first && at + 1 + (int)n > HELP_WIDTH) {
			fprintf(f, "\n%*s", indent, "");
			at = indent;
		} else if (!first) {
			fputc(' ', f);
			at++;
		}
		fprintf(f, "%.*s", (int)n, text);
		at += (int)n;
		text += n;
		text += strspn(text, " ");
	}
	fputc('\n', f);
}

/* "repeatable; one of ...; default: ..." for s, empty when there is nothing to say */
static void help_suffix(const struct opt_spec *s, char *out, size_t size)
{
	bool repeat = s->kind == OPT_LIST || s->kind == OPT_ADD;
	size_t n = (size_t)snprintf(out, size, "%s", repeat ? "repeatable" : "");

	if (s->names)
		n += (size_t)snprintf(out + n, size - n, "%sone of %s", n ? "; " : "", s->names());
	if (s->def || s->def_text || s->defs)
		n += (size_t)snprintf(out + n, size - n, "%sdefault: %s", n ? "; " : "",
				      s->def	    ? s->def
				      : s->def_text ? s->def_text
						    : "");
	for (const char *const *d = s->defs; d && *d && n < size; d++)
		n += (size_t)snprintf(out + n, size - n, "%s%s", d == s->defs ? "" : ", ", *d);
}

/* One paragraph of help: its leading spaces indent it further. */
static void help_paragraph(FILE *f, const char *p, size_t len, int col, const char *suffix)
{
	char text[1024];
	int extra = (int)strspn(p, " ");

	snprintf(text, sizeof(text), "%.*s%s%s%s", (int)(len - (size_t)extra), p + extra,
		 suffix[0] ? " (" : "", suffix, suffix[0] ? ")" : "");
	fprintf(f, "%*s", HELP_COL + extra - col, "");
	wrap(f, text, HELP_COL + extra, HELP_COL + extra + (extra ? 2 : 0));
}

static void help_option(FILE *f, const struct opt_spec *s)
{
	const char *value = s->arg ? s->arg : s->words, *p = s->help;
	char suffix[WHY_LEN + 256];
	int col;

	if (s->letter)
		col = fprintf(f, "  -%c, --%s", s->letter, s->name);
	else
		col = fprintf(f, "  --%s", s->name);
	if (value)
		col += fprintf(f, " %s", value);
	if (col > HELP_COL - 2) {
		fputc('\n', f);
		col = 0;
	}
	help_suffix(s, suffix, sizeof(suffix));
	for (bool first = true; *p; first = false) {
		size_t len = strcspn(p, "\n");

		help_paragraph(f, p, len, col, first ? suffix : "");
		col = 0;
		p += len;
		p += *p == '\n';
	}
}

static void usage(FILE *f)
{
	fputs("Usage: egretd [OPTIONS]\n"
	      "\n"
	      "Enforce default-deny egress for every sandbox under egret's root cgroup and stream\n"
	      "what happens in them as egret.v1 events. Runs in the foreground; stop it with\n"
	      "SIGTERM. Enforcement stays attached after egretd exits (remove it with\n"
	      "'egretctl uninstall').\n"
	      "\n"
	      "Options:\n",
	      f);
	for (size_t i = 0; i < NSPECS; i++)
		help_option(f, &specs[i]);
	fputs("\n"
	      "Exit status: 0 after a clean stop, 1 when enforcement or a sink could not be set up\n"
	      "(enforcement already pinned stays in place) or another egretd holds the state dir,\n"
	      "spool or control socket, 2 for a usage error.\n",
	      f);
}

/* ---- parsing ----------------------------------------------------------------------------- */

static void *field(struct options *o, const struct opt_spec *s)
{
	return (char *)o + s->off;
}

/* "a, b or c" of "a|b|c" */
static void words_list(const char *words, char *out, size_t size)
{
	size_t n = 0;

	for (const char *w = words; *w;) {
		size_t len = strcspn(w, "|");
		const char *sep = !n ? "" : w[len] ? ", " : " or ";

		n += snprintf(out + n, size > n ? size - n : 0, "%s%.*s", sep, (int)len, w);
		w += len + (w[len] == '|');
	}
}

static int take_word(struct options *o, const struct opt_spec *s, const char *arg, char *why,
		     size_t size)
{
	unsigned int i = 0;

	for (const char *w = s->words; *w; i++) {
		size_t len = strcspn(w, "|");

		if (strlen(arg) == len && !strncmp(w, arg, len)) {
			if (s->size == sizeof(bool))
				*(bool *)field(o, s) = i;
			else
				*(uint32_t *)field(o, s) = i;
			return 0;
		}
		w += len + (w[len] == '|');
	}
	snprintf(why, size, "expected ");
	words_list(s->words, why + strlen(why), size - strlen(why));
	return -EINVAL;
}

static int take_number(struct options *o, const struct opt_spec *s, const char *arg, char *why,
		       size_t size)
{
	uint64_t v;

	if (s->kind == OPT_SIZE) {
		snprintf(why, size, "expected a size of at least %lluK (K, M, G suffixes)",
			 (unsigned long long)s->min >> 10);
		if (parse_size(arg, &v) || v < s->min)
			return -EINVAL;
		*(uint64_t *)field(o, s) = v;
		return 0;
	}
	snprintf(why, size, "expected %s from %llu to %llu",
		 s->kind == OPT_SECONDS ? "seconds" : "a number", (unsigned long long)s->min,
		 (unsigned long long)s->max);
	if (parse_u64(arg, s->max, &v) || v < s->min)
		return -EINVAL;
	*(unsigned int *)field(o, s) = (unsigned int)v;
	return 0;
}

static int take_list(struct options *o, const struct opt_spec *s, const char *arg, char *why,
		     size_t size)
{
	unsigned int *n = (unsigned int *)((char *)o + s->count_off);

	if (*n == s->max) {
		snprintf(why, size, "at most %llu --%s options", (unsigned long long)s->max,
			 s->name);
		return -E2BIG;
	}
	if (s->check && s->check(o, arg, why, size))
		return -EINVAL;
	((const char **)field(o, s))[(*n)++] = arg;
	return 0;
}

/* arg (NULL for an option without a value; dflt: the table's default) into o: 0, or a usage
 * error's status
 */
static int take(struct options *o, const struct opt_spec *s, const char *arg, bool dflt)
{
	char why[WHY_LEN] = "";
	int err = 0;

	switch (s->kind) {
	case OPT_FLAG:
		*(bool *)field(o, s) = true;
		return 0;
	case OPT_STRING:
		if (s->check && s->check(o, arg, why, sizeof(why)))
			err = -EINVAL;
		else
			*(const char **)field(o, s) = arg;
		break;
	case OPT_UINT:
	case OPT_SECONDS:
	case OPT_SIZE:
		err = take_number(o, s, arg, why, sizeof(why));
		break;
	case OPT_WORD:
		err = take_word(o, s, arg, why, sizeof(why));
		break;
	case OPT_LIST:
		err = take_list(o, s, arg, why, sizeof(why));
		if (err == -E2BIG)
			return log_usage("%s", why);
		break;
	case OPT_ADD:
		err = s->add(o, s, arg, why, sizeof(why));
		break;
	case OPT_VERSION:
		printf("egretd %s\n", EGRET_VERSION);
		return OPTIONS_EXIT;
	case OPT_HELP:
		usage(stdout);
		return OPTIONS_EXIT;
	}
	if (err)
		return log_usage("bad --%s %s'%s': %s", s->name, dflt ? "default " : "", arg, why);
	return 0;
}

/* getopt_long's view of the table: a long-only option's val is 256 + its index */
static void getopt_table(struct option *longopts, char *shortopts)
{
	size_t n = 0;

	shortopts[n++] = ':';
	for (size_t i = 0; i < NSPECS; i++) {
		const struct opt_spec *s = &specs[i];
		bool value = s->arg || s->words;

		longopts[i] = (struct option){ s->name, value ? required_argument : no_argument,
					       NULL, s->letter ? s->letter : 256 + (int)i };
		if (s->letter) {
			shortopts[n++] = s->letter;
			if (value)
				shortopts[n++] = ':';
		}
	}
	longopts[NSPECS] = (struct option){ 0 };
	shortopts[n] = '\0';
}

static const struct opt_spec *spec_of(int c)
{
	for (size_t i = 0; i < NSPECS; i++) {
		if (specs[i].letter ? c == specs[i].letter : c == 256 + (int)i)
			return &specs[i];
	}
	return NULL;
}

static int parse_argv(struct options *o, int argc, char **argv, bool *given)
{
	struct option longopts[NSPECS + 1];
	char shortopts[2 * NSPECS + 2];
	int c, ret;

	getopt_table(longopts, shortopts);
	opterr = 0;
	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		const struct opt_spec *s = spec_of(c);

		if (c == ':')
			return log_usage("option '%s' needs a value", argv[optind - 1]);
		if (!s)
			return log_usage("unknown option '%s'", argv[optind - 1]);
		ret = take(o, s, optarg, false);
		if (ret)
			return ret;
		given[s - specs] = true;
	}
	if (optind < argc)
		return log_usage("unexpected argument '%s'", argv[optind]);
	return 0;
}

/* What no option sets, and the single defaults, before the command line. */
static int take_defaults(struct options *o)
{
	int err = 0;

	memset(o, 0, sizeof(*o));
	redact__init(&o->redact);
	o->dns.timeout_ms = DNS_DEFAULT_TIMEOUT_MS;
	for (size_t i = 0; !err && i < NSPECS; i++) {
		if (specs[i].def)
			err = take(o, &specs[i], specs[i].def, true);
	}
	return err;
}

/* The repeatable options' defaults, for those not given, after the command line. */
static int take_repeated_defaults(struct options *o, const bool *given)
{
	int err = 0;

	for (size_t i = 0; i < NSPECS; i++) {
		for (const char *const *d = specs[i].defs; !given[i] && d && *d && !err; d++)
			err = take(o, &specs[i], *d, true);
	}
	return err;
}

int options__parse(struct options *o, int argc, char **argv)
{
	bool given[NSPECS] = { false };
	int ret;

	ret = take_defaults(o);
	if (!ret)
		ret = parse_argv(o, argc, argv, given);
	if (!ret)
		ret = take_repeated_defaults(o, given);
	if (ret)
		return ret == OPTIONS_EXIT ? OPTIONS_EXIT : -EINVAL;
	o->kernel.compat_judge = o->loader.compat_mode == EGRET_COMPAT_JUDGE;
	return 0;
}

void options__free(struct options *o)
{
	redact__free(&o->redact);
}
