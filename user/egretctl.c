/* egretctl: run commands in sandboxes, show status, decode the event stream, and remove
 * enforcement when asked to. Sub-commands as bpftool does them: a table of { name, do_verb }.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "collector.h"
#include "control.h"
#include "loader.h"
#include "lockfile.h"
#include "log.h"
#include "paths.h"
#include "pbjson.h"
#include "sandbox.h"
#include "seccomp.h"
#include "tail.h"
#include "util.h"
#include "wire.h"

#include "egret/v1/events.pb-c.h"

/* exit statuses of `run`, as env(1) and timeout(1) use them */
#define EXIT_RUN_FAILED	 125
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND	 127

struct global_opts {
	const char *cgroup;
	const char *state_dir;
	const char *control;
};

static struct global_opts gopt;

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: egretctl [OPTIONS] COMMAND [ARGS]\n"
		"\n"
		"Commands:\n"
		"  run [--sandbox NAME] [--preserve-fds N] [-q] -- CMD [ARGS...]\n"
		"              run CMD in sandbox NAME (created when missing, generated when not\n"
		"              given); refuses unless egret's programs are attached\n"
		"  status      is enforcement attached (exit 0) or not (exit 1); egretd's state\n"
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
		"  -h, --help         print this help\n");
}

enum {
	OPT_CGROUP = 256,
	OPT_STATE,
	OPT_CONTROL,
	OPT_SANDBOX,
	OPT_PRESERVE,
	OPT_FORCE
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

/* Close inherited descriptors above 2, except the first `keep` of them: a socket opened
 * outside the sandbox would not be subject to its hooks.
 */
static void close_inherited(int keep)
{
	DIR *d = opendir("/proc/self/fd");
	struct dirent *de;

	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd = atoi(de->d_name);

		if (de->d_name[0] != '.' && fd > 2 + keep && fd != dirfd(d))
			fcntl(fd, F_SETFD, FD_CLOEXEC);
	}
	closedir(d);
}

static int create_sandbox(const struct egret_paths *p, const char *name)
{
	char dir[PATH_MAX];
	int err;

	err = join_path(dir, sizeof(dir), p->cgroup_root, name);
	if (err)
		return err;
	if (mkdir(dir, 0755) && errno != EEXIST) {
		err = -errno;
		fprintf(stderr, "egretctl: failed to create sandbox cgroup %s: %s\n", dir,
			strerror(errno));
		return err;
	}
	return 0;
}

/* Ask egretd to install the sandbox's rules now. Without egretd the sandbox still runs under
 * enforcement, with no network until egretd registers it (its sockets are denied meanwhile).
 */
static int prepare_sandbox(const struct egret_paths *p, const char *name)
{
	char *req[] = { "prepare", (char *)name };
	int rc = control__call(p->control, 2, req, stdout, stderr, 30);

	if (rc < 0)
		fprintf(stderr,
			"egretctl: warning: egretd is not answering on %s (%s): sandbox %s "
			"has no network until egretd registers it\n",
			p->control, strerror(-rc), name);
	else if (rc > 0)
		fprintf(stderr, "egretctl: egretd could not prepare sandbox %s\n", name);
	return rc > 0 ? -EPERM : 0;
}

static int enter_sandbox(const struct egret_paths *p, const char *name)
{
	char dir[PATH_MAX], self[PATH_MAX];
	int err;

	err = join_path(dir, sizeof(dir), p->cgroup_root, name);
	if (err)
		return err;
	err = cgroup__join(dir, getpid());
	if (err) {
		fprintf(stderr, "egretctl: failed to move into sandbox cgroup %s: %s\n", dir,
			strerror(-err));
		return err;
	}
	err = cgroup__of_pid(0, p->cgroup_mount, self, sizeof(self));
	if (err || strcmp(self, dir) != 0) {
		fprintf(stderr, "egretctl: not in sandbox cgroup %s after joining it (in %s)\n",
			dir, err ? strerror(-err) : self);
		return -EPERM;
	}
	return 0;
}

/* Refuse unless every egret program is attached to the root cgroup. */
static int require_enforcement(const struct egret_paths *p)
{
	char missing[1024];
	int n;

	if (paths__open_root((struct egret_paths *)p)) {
		fprintf(stderr,
			"egretctl: refusing to run: egret's root cgroup %s does not exist "
			"(is egretd running?)\n",
			p->cgroup_root);
		return -ENOENT;
	}
	n = loader__check(p, missing, sizeof(missing));
	if (n < 0) {
		fprintf(stderr, "egretctl: refusing to run: cannot check enforcement on %s: %s\n",
			p->cgroup_root, strerror(-n));
		return n;
	}
	if (n > 0) {
		fprintf(stderr,
			"egretctl: refusing to run: egret enforcement is not attached to %s "
			"(missing: %s); start egretd first\n",
			p->cgroup_root, missing);
		return -ENOLINK;
	}
	return 0;
}

static int do_run(int argc, char **argv)
{
	static const struct option longopts[] = {
		GLOBAL_LONGOPTS,
		{ "sandbox", required_argument, NULL, OPT_SANDBOX },
		{ "preserve-fds", required_argument, NULL, OPT_PRESERVE },
		{ "quiet", no_argument, NULL, 'q' },
		{ 0 },
	};
	const char *name = NULL;
	char generated[32];
	struct egret_paths p;
	uint64_t keep = 0;
	bool quiet = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:q", longopts, NULL)) != -1) {
		if (global_opt(c))
			continue;
		if (c == OPT_SANDBOX)
			name = optarg;
		else if (c == OPT_PRESERVE && parse_u64(optarg, 1024, &keep))
			return log_usage("bad --preserve-fds '%s': expected a count", optarg);
		else if (c == 'q')
			quiet = true;
		else if (c != OPT_PRESERVE)
			return opt_error(c, argv);
	}
	if (optind >= argc)
		return log_usage("%s", "run needs a command: egretctl run [--sandbox NAME] -- CMD");
	if (name && !sandbox__valid_name(name))
		return log_usage("bad sandbox name '%s': 1-64 of [A-Za-z0-9._-], starting with a "
				 "letter or digit",
				 name);
	if (resolve_paths(&p) || require_enforcement(&p))
		return EXIT_RUN_FAILED;
	if (!name) {
		sandbox__generate_name(generated, sizeof(generated));
		name = generated;
		if (!quiet)
			fprintf(stderr, "egretctl: sandbox %s\n", name);
	}
	/* last look before joining: once inside, bpf(2) is a tamper attempt (and links are
	 * pinned, so only an explicit uninstall could detach them meanwhile)
	 */
	if (create_sandbox(&p, name) || prepare_sandbox(&p, name) || require_enforcement(&p) ||
	    enter_sandbox(&p, name))
		return EXIT_RUN_FAILED;
	c = seccomp__install_sandbox_filter();
	if (c) {
		fprintf(stderr, "egretctl: cannot install the sandbox's seccomp filter: %s\n",
			strerror(-c));
		return EXIT_RUN_FAILED;
	}
	close_inherited((int)keep);
	execvp(argv[optind], argv + optind);
	fprintf(stderr, "egretctl: cannot run %s: %s\n", argv[optind], strerror(errno));
	return errno == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXEC;
}

static void print_counters(const struct egret_paths *p)
{
	int fd = loader__pinned_map(p, "counters");
	char buf[2048];

	if (fd < 0)
		return;
	collector__format_counters(fd, buf, sizeof(buf));
	fputs(buf, stdout);
	close(fd);
}

static int do_status(int argc, char **argv)
{
	static const struct option longopts[] = { GLOBAL_LONGOPTS, { 0 } };
	char missing[1024], *req[] = { "status" };
	struct egret_paths p;
	int c, n, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:", longopts, NULL)) != -1) {
		if (!global_opt(c))
			return opt_error(c, argv);
	}
	if (optind < argc)
		return log_usage("unexpected argument '%s'", argv[optind]);
	if (resolve_paths(&p))
		return 1;
	if (paths__open_root(&p)) {
		printf("enforcement: NOT attached (no cgroup %s)\n", p.cgroup_root);
		return 1;
	}
	n = loader__check(&p, missing, sizeof(missing));
	if (n == 0)
		printf("enforcement: attached to %s (%u programs)\n", p.cgroup_root,
		       loader__nprogs());
	else if (n > 0)
		printf("enforcement: NOT attached to %s (missing: %s)\n", p.cgroup_root, missing);
	else
		printf("enforcement: unknown on %s: %s\n", p.cgroup_root, strerror(-n));
	printf("state dir: %s\n", p.state_dir);
	rc = control__call(p.control, 1, req, stdout, stderr, 5);
	if (rc < 0) {
		printf("egretd: not running (no answer on %s: %s)\n", p.control, strerror(-rc));
		print_counters(&p);
	}
	return n == 0 ? 0 : 1;
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
	return tail__run(src, follow, stdout);
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
		fprintf(stderr,
			"egretctl: state dir %s is in use by %s, which would attach again when it "
			"restarts: stop it first, or pass --force\n",
			p->state_dir, lockfile__describe(&h, who, sizeof(who)));
	else
		fprintf(stderr, "egretctl: cannot lock state dir %s: %s\n", p->state_dir,
			strerror(-fd));
	return fd;
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
	if (resolve_paths(&p) || (!force && lock_state_dir(&p)))
		return 1;
	err = loader__uninstall(&p);
	if (err) {
		fprintf(stderr, "egretctl: uninstall from %s incomplete: %s\n", p.state_dir,
			strerror(-err));
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
		fprintf(stderr, "egretctl: egretd is not answering on %s: %s\n", p.control,
			strerror(-rc));
		return 1;
	}
	return rc;
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
	{ "run", do_run },	  { "status", do_status },
	{ "tail", do_tail },	  { "uninstall", do_uninstall },
	{ "allow", do_forward },  { "deny", do_forward },
	{ "revoke", do_forward }, { "list", do_forward },
	{ "reload", do_forward }, { "help", do_help },
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
