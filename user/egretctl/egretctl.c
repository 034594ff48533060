/* egretctl: run commands in sandboxes, show status, decode the event stream, and remove
 * enforcement when asked to. Sub-commands as bpftool does them: a table of { name, do_verb }.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "collector.h"
#include "control.h"
#include "egretctl.h"
#include "keeper.h"
#include "kfeatures.h"
#include "loader.h"
#include "lockfile.h"
#include "log.h"
#include "paths.h"
#include "pbjson.h"
#include "run.h"
#include "sandbox.h"
#include "tail.h"
#include "util.h"
#include "wire.h"

#include "egret/v1/events.pb-c.h"

/* exit statuses of `status`; 3: enforcement holds, but there are no events, DNS answers, live
 * edits or rules for new sandboxes
 */
#define EXIT_STATUS_OK	      0 /* every egret program attached, egretd answering */
#define EXIT_STATUS_DETACHED  1 /* enforcement not attached, or it could not be checked */
#define EXIT_STATUS_NO_EGRETD 3 /* attached, egretd not answering */

struct global_opts {
	const char *cgroup;
	const char *state_dir;
	const char *control;
};

static struct global_opts gopt;
static char **self_argv; /* main's, for run's init to overwrite */
static int self_argc;

/* run's paragraph of the help, also what `egretctl run --help` prints */
static const char run_help[] =
	"  run [--sandbox NAME] [--preserve-fds N] [-q] [CONFINEMENT] [LIMITS] -- CMD [ARGS...]\n"
	"              run CMD in sandbox NAME (created when missing, generated when not\n"
	"              given); refuses unless egret's programs are attached. CMD gets a\n"
	"              user namespace (root inside is an unprivileged host uid), pid,\n"
	"              mount, ipc, uts and cgroup namespaces, egret's seccomp profile,\n"
	"              no_new_privs; egret's own files are out of its reach.\n"
	"                --sandbox NAME    the sandbox (its cgroup under the root)\n"
	"                --preserve-fds N  pass fds 3..N+2 on to CMD\n"
	"                -q, --quiet       do not print a generated sandbox's name\n"
	"                -h, --help        print this help\n"
	"              CONFINEMENT (the start event records what CMD was given):\n"
	"                --user UID[:GID]  the host ids root inside maps to (default: a\n"
	"                                  range of 65536 ids of the sandbox's own)\n"
	"                --net host|new    the host's network namespace (default; egret\n"
	"                                  judges its egress) or a private one\n"
	"                --share NS,...    keep the host's user, pid, mount, ipc, uts,\n"
	"                                  cgroup, net namespace (or all)\n"
	"                --no-userns       root inside is the host's root\n"
	"                --seccomp default|none\n"
	"                                  egret's profile (refusals are Tamper events)\n"
	"                                  or none\n"
	"                --privileged      host root, the host's namespaces, no seccomp\n"
	"                                  profile: egret's kernel hooks only\n"
	"              LIMITS (cgroup v2, or the v1 hierarchies of a hybrid host; each hit\n"
	"              is a ResourceLimit event):\n"
	"                --memory SIZE     memory (64M, 1G; swap not counted on top): over\n"
	"                                  it, the OOM killer\n"
	"                --memory-high SIZE\n"
	"                                  over it the kernel reclaims and throttles\n"
	"                                  (cgroup v2 only; reported when it starts)\n"
	"                --cpus N          CPU time, in CPUs (0.5, 2): throttled over it\n"
	"                --pids N          processes and threads: forks over it fail\n"
	"                --timeout TIME    wall clock (30, 90s, 5m, 1h): then the sandbox\n"
	"                                  is frozen and killed, and egretctl exits 124\n";

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: egretctl [OPTIONS] COMMAND [ARGS]\n"
		"\n"
		"Commands:\n"
		"%s"
		"  status [--json]\n"
		"              enforcement and egretd's state; exit 0 every program attached\n"
		"              and egretd answering, 3 attached but egretd not answering,\n"
		"              1 not attached (or it cannot be checked)\n"
		"  allow [--sandbox NAME] RULE...\n"
		"  deny [--sandbox NAME] RULE...\n"
		"              add a live rule, in the words of a policy line after allow/deny\n"
		"              (192.0.2.0/24, 198.51.100.7 tcp/443, domain example.com ...)\n"
		"  revoke [--sandbox NAME] ID|RULE...\n"
		"              remove a live rule, by id or by its words\n"
		"  list [--sandbox NAME]\n"
		"              the rules in force, with ids and where each comes from\n"
		"  reload [--discard-live]\n"
		"              re-read the policy file (atomic: a file with an error changes\n"
		"              nothing); --discard-live also drops the live rules\n"
		"  tail [-f|--follow] [FILE|-|tcp-listen://HOST:PORT|unix-listen:PATH]\n"
		"              decode an event stream (default: stdin) to one JSON object a\n"
		"              line; --follow keeps reading a file as it grows and rotates;\n"
		"              tcp-listen:// and unix-listen: receive from egretd's tcp:// and\n"
		"              unix: sinks (acknowledging what was written out, for ?ack)\n"
		"  register CGROUP [--netns PATH] [--root DIR] [KEY=VALUE...]\n"
		"              make any cgroup a sandbox (what the OCI hook does for a\n"
		"              container); egretctl register --help lists the keys\n"
		"  unregister CGROUP|id=ID|container.id=ID\n"
		"              end a registration\n"
		"  oci-hook createRuntime|poststop|inject FILE|hooks-d STAGE\n"
		"              egret's OCI runtime hook: registers a container with egretd\n"
		"              before its first instruction, failing its start when egretd\n"
		"              cannot (egretctl oci-hook --help)\n"
		"  uninstall [--force]\n"
		"              detach egret's programs and remove its pins: sandboxes are no\n"
		"              longer protected (stop egretd first, or it re-attaches on restart)\n"
		"  help        print this help\n"
		"\n"
		"Options (the same as egretd's, to drive a non-default instance):\n"
		"  --cgroup PATH      sandbox root cgroup (default: <cgroup2 mount>/" EGRET_DEFAULT_CGROUP_NAME
		")\n"
		"  --state-dir DIR    bpffs state dir (default: " EGRET_DEFAULT_STATE_DIR ")\n"
		"  --control PATH     egretd's control socket (default: " EGRET_DEFAULT_CONTROL
		")\n"
		"  -V, --version      print the version\n"
		"  -h, --help         print this help\n",
		run_help);
}

enum {
	OPT_CGROUP = 256,
	OPT_STATE,
	OPT_CONTROL,
	OPT_SANDBOX,
	OPT_PRESERVE,
	OPT_FORCE,
	OPT_JSON,
	OPT_USER,
	OPT_NO_USERNS,
	OPT_SHARE,
	OPT_NET,
	OPT_SECCOMP,
	OPT_PRIVILEGED,
	OPT_MEMORY,
	OPT_MEMORY_HIGH,
	OPT_CPUS,
	OPT_PIDS,
	OPT_TIMEOUT
};

#define GLOBAL_LONGOPTS                                              \
	{ "cgroup", required_argument, NULL, OPT_CGROUP },           \
		{ "state-dir", required_argument, NULL, OPT_STATE }, \
	{                                                            \
		"control", required_argument, NULL, OPT_CONTROL      \
	}

/* Options any command takes; returns 1 when c was one of them. */
static int global_opt(int c)
{
	switch (c) {
	case OPT_CGROUP:
		gopt.cgroup = optarg;
		return 1;
	case OPT_STATE:
		gopt.state_dir = optarg;
		return 1;
	case OPT_CONTROL:
		gopt.control = optarg;
		return 1;
	}
	return 0;
}

static int opt_error(int c, char **argv)
{
	if (c == ':')
		return log_usage("option '%s' needs a value", argv[optind - 1]);
	return log_usage("unknown option '%s'", argv[optind - 1]);
}

static int resolve_paths(struct egret_paths *p)
{
	return paths__init(p, gopt.cgroup, gopt.state_dir, gopt.control);
}

static int run_opt(int c, struct run_opts *o, char **argv)
{
	struct sandbox_spec *s = &o->spec;
	unsigned int mask;
	const char *bad;

	switch (c) {
	case OPT_SANDBOX:
		o->name = optarg;
		return 0;
	case OPT_PRESERVE:
		return parse_u64(optarg, 1024, &o->keep)
			       ? log_usage("bad --preserve-fds '%s': expected a count", optarg)
			       : 0;
	case 'q':
		o->quiet = true;
		return 0;
	case 'h':
		printf("Usage: egretctl [OPTIONS] run [RUN OPTIONS] -- CMD [ARGS...]\n\n%s",
		       run_help);
		return -1;
	case OPT_USER:
		s->ns |= SANDBOX_NS_USER;
		return run__parse_user(optarg, s)
			       ? log_usage("bad --user '%s': expected UID[:GID], "
					   "not 0 (the host's root)",
					   optarg)
			       : 0;
	case OPT_NO_USERNS:
		s->ns &= ~SANDBOX_NS_USER;
		return 0;
	case OPT_SHARE:
		if (sandbox_spec__parse_ns(optarg, &mask, &bad))
			return log_usage("bad --share '%s': expected a list of user, pid, mount, "
					 "ipc, uts, cgroup, net (or all)",
					 optarg);
		s->ns &= ~mask;
		return 0;
	case OPT_NET:
		if (strcmp(optarg, "host") && strcmp(optarg, "new"))
			return log_usage("bad --net '%s': expected host or new", optarg);
		s->ns = optarg[0] == 'n' ? s->ns | SANDBOX_NS_NET : s->ns & ~SANDBOX_NS_NET;
		return 0;
	case OPT_SECCOMP:
		if (strcmp(optarg, "default") && strcmp(optarg, "none"))
			return log_usage("bad --seccomp '%s': expected default or none", optarg);
		s->seccomp = optarg[0] == 'd';
		return 0;
	case OPT_PRIVILEGED:
		s->ns = 0;
		s->seccomp = s->no_new_privs = false;
		return 0;
	case OPT_MEMORY:
		return limits__parse_memory(optarg, &o->limits.memory)
			       ? log_usage("bad --memory '%s': expected bytes with K, M or G "
					   "(64M, 1G), at least 4M",
					   optarg)
			       : 0;
	case OPT_MEMORY_HIGH:
		return limits__parse_memory(optarg, &o->limits.memory_high)
			       ? log_usage("bad --memory-high '%s': expected bytes with K, M or G "
					   "(64M, 1G), at least 4M",
					   optarg)
			       : 0;
	case OPT_CPUS:
		return limits__parse_cpus(optarg, &o->limits.cpu_milli)
			       ? log_usage("bad --cpus '%s': expected CPUs, 0.01 to 1024 (0.5, 2)",
					   optarg)
			       : 0;
	case OPT_PIDS: {
		uint64_t n;

		if (parse_u64(optarg, 4194304, &n) || n == 0)
			return log_usage(
				"bad --pids '%s': expected a count of processes, 1 or more",
				optarg);
		o->limits.pids = (uint32_t)n;
		return 0;
	}
	case OPT_TIMEOUT:
		return limits__parse_duration(optarg, &o->limits.timeout_ms)
			       ? log_usage("bad --timeout '%s': expected seconds, or a number with "
					   "ms, s, m or h (90s, 5m)",
					   optarg)
			       : 0;
	}
	return opt_error(c, argv);
}

static int run_check(struct run_opts *o, int argc, char **argv)
{
	struct sandbox_spec *s = &o->spec;

	if (optind >= argc)
		return log_usage("%s", "run needs a command: egretctl run [--sandbox NAME] -- CMD");
	if (o->name && !sandbox__valid_name(o->name))
		return log_usage("bad sandbox name '%s': 1-64 of [A-Za-z0-9._-], starting with a "
				 "letter or digit",
				 o->name);
	if (s->user_given && !(s->ns & SANDBOX_NS_USER))
		return log_usage("%s",
				 "--user maps root of the sandbox's user namespace: it does not "
				 "go with --no-userns, --share user or --privileged");
	/* host root with the host's capabilities and no profile: nothing but egret's hooks */
	s->privileged = !(s->ns & SANDBOX_NS_USER) && !s->seccomp;
	o->argv = argv + optind;
	return 0;
}

static int run_parse(int argc, char **argv, struct run_opts *o)
{
	static const struct option longopts[] = {
		GLOBAL_LONGOPTS,
		{ "sandbox", required_argument, NULL, OPT_SANDBOX },
		{ "preserve-fds", required_argument, NULL, OPT_PRESERVE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "user", required_argument, NULL, OPT_USER },
		{ "no-userns", no_argument, NULL, OPT_NO_USERNS },
		{ "share", required_argument, NULL, OPT_SHARE },
		{ "net", required_argument, NULL, OPT_NET },
		{ "seccomp", required_argument, NULL, OPT_SECCOMP },
		{ "privileged", no_argument, NULL, OPT_PRIVILEGED },
		{ "memory", required_argument, NULL, OPT_MEMORY },
		{ "memory-high", required_argument, NULL, OPT_MEMORY_HIGH },
		{ "cpus", required_argument, NULL, OPT_CPUS },
		{ "pids", required_argument, NULL, OPT_PIDS },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c, err;

	sandbox_spec__default(&o->spec);
	optind = 1;
	while ((c = getopt_long(argc, argv, "+:qh", longopts, NULL)) != -1) {
		if (global_opt(c))
			continue;
		err = run_opt(c, o, argv);
		if (err)
			return err;
	}
	return run_check(o, argc, argv);
}

static int do_run(int argc, char **argv)
{
	struct run_opts o = { .self_argv = self_argv, .self_argc = self_argc };
	struct egret_paths p;
	int err;

	err = run_parse(argc, argv, &o);
	if (err)
		return err < 0 ? 0 : err; /* < 0: --help was printed */
	if (resolve_paths(&p))
		return EXIT_RUN_FAILED;
	return run__sandboxed(&p, &o);
}

/* What `status` found: the kernel's view, and egretd's answer. */
struct status {
	struct egret_paths p;
	bool have_root;	    /* the root cgroup exists */
	int check;	    /* loader__check(): 0 all attached, > 0 how many missing, -errno */
	char missing[1024]; /* names of the missing programs, space-separated */
	int call;	    /* control__call(): egretd's status (>= 0), or -errno: not answering */
	char *reply, *errs; /* what egretd said */
	size_t reply_len, errs_len;
	struct kernel_features kf; /* what the kernel lacks, as egretd last pinned it */
};

static int status_code(const struct status *st)
{
	if (!st->have_root || st->check != 0)
		return EXIT_STATUS_DETACHED;
	return st->call < 0 ? EXIT_STATUS_NO_EGRETD : EXIT_STATUS_OK;
}

static const char *status_name(int code)
{
	return code == EXIT_STATUS_OK	       ? "attached"
	       : code == EXIT_STATUS_NO_EGRETD ? "attached, egretd not answering"
					       : "not attached";
}

static void status_gather(struct status *st, bool json)
{
	char *req[] = { "status", "--json" };
	FILE *out = open_memstream(&st->reply, &st->reply_len);
	FILE *err = open_memstream(&st->errs, &st->errs_len);

	st->have_root = paths__open_root(&st->p) == 0;
	kfeatures__read_pinned(&st->p, &st->kf);
	st->check =
		st->have_root ? loader__check(&st->p, st->missing, sizeof(st->missing)) : -ENOENT;
	st->call =
		out && err ? control__call(st->p.control, json ? 2 : 1, req, out, err, 5) : -ENOMEM;
	if (out)
		fclose(out);
	if (err)
		fclose(err);
}

static void print_counters(const struct egret_paths *p)
{
	int fd = loader__pinned_map(p, LOADER_MAP_NAME(counters));
	char buf[2048];

	if (fd < 0)
		return;
	collector__format_counters(fd, buf, sizeof(buf));
	fputs(buf, stdout);
	close(fd);
}

static void status_text(const struct status *st)
{
	const struct egret_paths *p = &st->p;

	if (!st->have_root)
		printf("enforcement: NOT attached (no cgroup %s)\n", p->cgroup_root);
	else if (st->check == 0)
		printf("enforcement: attached to %s (%u programs)\n", p->cgroup_root,
		       loader__nexpected(p));
	else if (st->check > 0)
		printf("enforcement: NOT attached to %s (missing: %s)\n", p->cgroup_root,
		       st->missing);
	else
		printf("enforcement: unknown on %s: %s\n", p->cgroup_root, strerror(-st->check));
	printf("state dir: %s\n", p->state_dir);
	kfeatures__print(stdout, &st->kf);
	if (st->call < 0) {
		printf("egretd: not running (no answer on %s: %s)\n", p->control,
		       strerror(-st->call));
		print_counters(p);
	} else {
		fwrite(st->reply, 1, st->reply_len, stdout);
		fwrite(st->errs, 1, st->errs_len, stderr);
	}
}

static void json_str(const char *key, const char *v)
{
	printf("\"%s\":", key);
	pbjson__string(stdout, v, strlen(v));
}

static void status_json_enforcement(const struct status *st)
{
	char missing[sizeof(st->missing)];
	bool first = true;

	printf("\"enforcement\":{\"attached\":%s,\"programs\":%u,",
	       st->have_root && st->check == 0 ? "true" : "false", loader__nexpected(&st->p));
	json_str("error",
		 st->have_root ? (st->check < 0 ? strerror(-st->check) : "") : "no root cgroup");
	printf(",\"missing\":[");
	snprintf(missing, sizeof(missing), "%s", st->check > 0 ? st->missing : "");
	for (char *save, *w = strtok_r(missing, " ", &save); w; w = strtok_r(NULL, " ", &save)) {
		printf("%s", first ? "" : ",");
		pbjson__string(stdout, w, strlen(w));
		first = false;
	}
	printf("]}");
}

/* The counters map as "name":value pairs (read from the kernel whether egretd runs or not). */
static void status_json_counters(const struct status *st)
{
	struct counter_value v[COLLECTOR_COUNTERS];
	int fd = loader__pinned_map(&st->p, LOADER_MAP_NAME(counters));
	size_t n = fd >= 0 ? collector__counters(fd, v, COLLECTOR_COUNTERS) : 0;

	printf("\"counters\":{");
	for (size_t i = 0; i < n; i++) {
		printf("%s", i ? "," : "");
		pbjson__string(stdout, v[i].name, strlen(v[i].name));
		printf(":%llu", (unsigned long long)v[i].value);
	}
	printf("}");
	if (fd >= 0)
		close(fd);
}

/* One JSON object: state and exit code, enforcement, egretd (with its own status merged in
 * when it answers), counters.
 */
static void status_json(const struct status *st)
{
	int code = status_code(st);
	bool answered = st->call >= 0 && st->reply_len > 2 && st->reply[0] == '{';

	printf("{");
	json_str("state", status_name(code));
	printf(",\"exit_code\":%d,", code);
	json_str("cgroup", st->p.cgroup_root);
	printf(",");
	json_str("state_dir", st->p.state_dir);
	printf(",");
	status_json_enforcement(st);
	printf(",");
	kfeatures__json(stdout, &st->kf);
	printf(",\"egretd\":{\"answering\":%s,", st->call >= 0 ? "true" : "false");
	json_str("control", st->p.control);
	printf(",");
	json_str("error", st->call < 0 ? strerror(-st->call) : "");
	if (answered) /* egretd's object, without its braces and newline */
		printf(",%.*s", (int)(st->reply_len - 2 - (st->reply[st->reply_len - 1] == '\n')),
		       st->reply + 1);
	printf("},");
	status_json_counters(st);
	printf("}\n");
}

static int do_status(int argc, char **argv)
{
	static const struct option longopts[] = { GLOBAL_LONGOPTS,
						  { "json", no_argument, NULL, OPT_JSON },
						  { 0 } };
	struct status st = { 0 };
	bool json = false;
	int c, code;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:", longopts, NULL)) != -1) {
		if (c == OPT_JSON)
			json = true;
		else if (!global_opt(c))
			return opt_error(c, argv);
	}
	if (optind < argc)
		return log_usage("unexpected argument '%s'", argv[optind]);
	if (resolve_paths(&st.p))
		return EXIT_STATUS_DETACHED;
	status_gather(&st, json);
	code = status_code(&st);
	if (json)
		status_json(&st);
	else
		status_text(&st);
	free(st.reply);
	free(st.errs);
	return code;
}

static int do_tail(int argc, char **argv)
{
	static const struct option longopts[] = { GLOBAL_LONGOPTS,
						  { "follow", no_argument, NULL, 'f' },
						  { 0 } };
	const char *src = "-";
	bool follow = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:f", longopts, NULL)) != -1) {
		if (c == 'f')
			follow = true;
		else if (!global_opt(c))
			return opt_error(c, argv);
	}
	if (optind < argc)
		src = argv[optind++];
	if (optind < argc)
		return log_usage("unexpected argument '%s'", argv[optind]);
	return tail__run(src, follow, stdout) ? 1 : 0;
}

/* egretd holds its state dir's lock for its life (see egretd's setup_instance): while it is
 * held, a running egretd would attach again when it restarts. Taken, the lock keeps an egretd
 * from starting on the state dir while its pins are removed. 0 when the lock is ours or there
 * is no state dir.
 */
static int lock_state_dir(const struct egret_paths *p)
{
	struct lock_holder h;
	char who[64];
	int fd = lockfile__take_dir(p->state_dir, &h);

	if (fd >= 0 || fd == -ENOENT)
		return 0;
	if (fd == -EWOULDBLOCK)
		log_note("state dir %s is in use by %s, which would attach again when it "
			 "restarts: stop it first, or pass --force",
			 p->state_dir, lockfile__describe(&h, who, sizeof(who)));
	else
		log_note("cannot lock state dir %s: %s", p->state_dir, strerror(-fd));
	return fd;
}

/* No egretd answers: its keeper, which would put every pin back, goes first. */
static void stop_keeper(const struct egret_paths *p)
{
	pid_t pid = keeper__find(p->state_dir);

	if (!pid)
		return;
	keeper__kill(pid, 3000);
	if (kill(pid, 0) == 0)
		log_note("egret's keeper (pid %d) did not exit", (int)pid);
}

static int do_uninstall(int argc, char **argv)
{
	static const struct option longopts[] = {
		GLOBAL_LONGOPTS,
		{ "force", no_argument, NULL, OPT_FORCE },
		{ 0 },
	};
	struct egret_paths p;
	bool force = false;
	int c, err;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:", longopts, NULL)) != -1) {
		if (global_opt(c))
			continue;
		if (c != OPT_FORCE)
			return opt_error(c, argv);
		force = true;
	}
	if (optind < argc)
		return log_usage("unexpected argument '%s'", argv[optind]);
	if (resolve_paths(&p))
		return 1;
	/* a running egretd does it (its keeper would put the pins back), and then exits */
	err = control__call(p.control, 1, (char *const[]){ "uninstall", NULL }, stdout, stderr, 30);
	if (err >= 0)
		return err;
	if (!force && lock_state_dir(&p))
		return 1;
	stop_keeper(&p);
	err = loader__uninstall(&p);
	if (err) {
		log_note("uninstall from %s incomplete: %s", p.state_dir, strerror(-err));
		return 1;
	}
	printf("egret enforcement removed from %s (pins under %s deleted); sandboxes are no "
	       "longer protected\n",
	       p.cgroup_root, p.state_dir);
	return 0;
}

/* Policy commands are egretd's: forward the words, minus egretctl's own options. */
static int do_forward(int argc, char **argv)
{
	char *words[CONTROL_MAX_ARGS];
	struct egret_paths p;
	int n = 0, rc;

	for (int i = 0; i < argc && n < CONTROL_MAX_ARGS; i++) {
		bool global = !strcmp(argv[i], "--cgroup") || !strcmp(argv[i], "--state-dir") ||
			      !strcmp(argv[i], "--control");

		if (global && i + 1 < argc) {
			optarg = argv[++i];
			global_opt(!strcmp(argv[i - 1], "--cgroup")	 ? OPT_CGROUP
				   : !strcmp(argv[i - 1], "--state-dir") ? OPT_STATE
									 : OPT_CONTROL);
			continue;
		}
		words[n++] = argv[i];
	}
	if (resolve_paths(&p))
		return 1;
	rc = control__call(p.control, n, words, stdout, stderr, 120);
	if (rc < 0) {
		log_note("egretd is not answering on %s: %s", p.control, strerror(-rc));
		return 1;
	}
	return rc;
}

static int do_oci_hook(int argc, char **argv)
{
	return egretctl__oci_hook(argc, argv, gopt.control ? gopt.control : EGRET_DEFAULT_CONTROL);
}

static int do_register(int argc, char **argv)
{
	return egretctl__register(argc, argv, gopt.control ? gopt.control : EGRET_DEFAULT_CONTROL);
}

static int do_unregister(int argc, char **argv)
{
	return egretctl__unregister(argc, argv,
				    gopt.control ? gopt.control : EGRET_DEFAULT_CONTROL);
}

static int do_help(int argc, char **argv)
{
	usage(stdout);
	return 0;
}

static const struct cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
} cmds[] = {
	{ "run", do_run },	     { "status", do_status },
	{ "tail", do_tail },	     { "uninstall", do_uninstall },
	{ "allow", do_forward },     { "deny", do_forward },
	{ "revoke", do_forward },    { "list", do_forward },
	{ "reload", do_forward },    { "oci-hook", do_oci_hook },
	{ "register", do_register }, { "unregister", do_unregister },
	{ "help", do_help },
};

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		GLOBAL_LONGOPTS,
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	log_init("egretctl", LOG_LVL_WARN);
	self_argv = argv;
	self_argc = argc;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:Vh", longopts, NULL)) != -1) {
		if (global_opt(c))
			continue;
		if (c == 'V') {
			printf("egretctl %s\n", EGRET_VERSION);
			return 0;
		}
		if (c == 'h') {
			usage(stdout);
			return 0;
		}
		return opt_error(c, argv);
	}
	if (optind >= argc) {
		usage(stderr);
		return 2;
	}
	for (size_t i = 0; i < ARRAY_SIZE(cmds); i++) {
		if (strcmp(cmds[i].name, argv[optind]) == 0)
			return cmds[i].fn(argc - optind, argv + optind);
	}
	return log_usage("unknown command '%s'", argv[optind]);
}
