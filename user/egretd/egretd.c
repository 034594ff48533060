/* egretd: loads and attaches egret's BPF programs to the sandbox root cgroup (fail closed),
 * streams what they see as egret.v1 events to the sinks, and serves egretctl on the control
 * socket. Stopping egretd never removes enforcement: the links stay pinned.
 */
#include <errno.h>
#include <getopt.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "collector.h"
#include "decoders.h"
#include "confine.h"
#include "control.h"
#include "dns.h"
#include "engine.h"
#include "audit.h"
#include "fileperm.h"
#include "peer.h"
#include "selfwatch.h"
#include "proc.h"
#include "redact.h"
#include "keeper.h"
#include "kfeatures.h"
#include "egret/syscalls32.h"
#include "loader.h"
#include "lockfile.h"
#include "log.h"
#include "loop.h"
#include "notify.h"
#include "paths.h"
#include "pbjson.h"
#include "pkg.h"
#include "cgroup.h"
#include "selfcg.h"
#include "selftest.h"
#include "taskseed.h"
#include "sink.h"
#include "stream.h"
#include "util.h"

#define MAX_SINKS    STREAM_MAX_SINKS
#define TICK_MS	     1000
#define DRAIN_MS     25 /* the kernel wakes egretd only when the ring fills; drain it this often */
#define RESCAN_TICKS 10 /* sandboxes whose cgroup event was lost are found within 10 s */

struct options {
	const char *policy;
	const char *live_rules;
	const char *cgroup;
	const char *state_dir;
	const char *control;
	const char *control_group;
	const char *sinks[MAX_SINKS];
	unsigned int nsinks;
	enum sink_format format;
	const char *spool;
	uint64_t spool_max;
	enum spool_sync spool_sync;
	unsigned int heartbeat_s;
	struct dns_options dns;
	struct loader_config loader;
	unsigned int patterns_given; /* bit per EGRET_PATTERN_* kind given on the command line */
	struct redactor redact;
	struct feature_options kernel; /* --accept-kernel-gap, --without-kernel-feature */
	const char *trusted_movers[EGRET_TRUSTED_MOVERS_MAX];
	unsigned int ntrusted_movers;
	bool verbose;
};

struct daemon {
	struct options opt;
	struct egret_paths paths;
	struct kernel_features kf; /* what this kernel offers, probed at start */
	struct loader loader;
	struct engine engine;
	struct resolver *resolver;
	struct stream stream;
	struct sink sinks[MAX_SINKS];
	struct collector collector;
	struct proc_cache procs;
	struct pkg_tracker pkg;
	struct control control;
	struct selfwatch self;
	struct selfcg selfcg; /* egretd's own cgroup, returned to after a pull */
	struct loop loop;
	struct watch sigw, rbw;
	struct keeper keeper; /* holds every link and map beside its pin; puts pins back */
	pid_t old_keeper;     /* a previous egretd's, until ours holds everything */
	bool uninstalled;     /* egretctl uninstall: exit EGRETD_EXIT_UNINSTALLED */
	uint64_t started_ns;
	uint64_t next_heartbeat_ns;
	char stop_reason[64];
};

static void usage(FILE *f)
{
	fprintf(f,
		"Usage: egretd [OPTIONS]\n"
		"\n"
		"Enforce default-deny egress for every sandbox under egret's root cgroup and stream\n"
		"what happens in them as egret.v1 events. Runs in the foreground; stop it with\n"
		"SIGTERM. Enforcement stays attached after egretd exits (remove it with\n"
		"'egretctl uninstall').\n"
		"\n"
		"Options:\n"
		"  --policy FILE          the policy (default: " EGRET_DEFAULT_POLICY ");\n"
		"                         SIGHUP or 'egretctl reload' re-reads it\n"
		"  --live-rules FILE      where rules added with egretctl allow/deny are kept\n"
		"                         across restarts (default: " EGRET_DEFAULT_LIVE_RULES ")\n"
		"  --cgroup PATH          sandbox root cgroup: absolute, or relative to the cgroup v2\n"
		"                         mount (default: <cgroup2 mount>/" EGRET_DEFAULT_CGROUP_NAME
		")\n"
		"  --state-dir DIR        bpffs directory for pinned links and maps\n"
		"                         (default: " EGRET_DEFAULT_STATE_DIR ")\n"
		"  --control PATH         control socket for egretctl (default: " EGRET_DEFAULT_CONTROL
		")\n"
		"  --control-group GROUP  group allowed on the control socket besides root\n"
		"  --upstream-dns ADDR[:PORT]\n"
		"                         where allowed names are resolved (default: the first\n"
		"                         nameserver of /etc/resolv.conf); [ADDR6]:PORT for IPv6\n"
		"  --dns-refuse refused|nxdomain\n"
		"                         the answer to a name no rule allows (default: refused)\n"
		"  --dns-min-ttl SECONDS  an allowed answer's addresses stay open at least this long\n"
		"                         (default: 30)\n"
		"  --dns-grace SECONDS    and this long after their TTL, so a connection opened just\n"
		"                         before expiry is not refused (default: 30)\n"
		"  --dns-max-ips N        addresses one name may open to one sandbox (default: 32)\n"
		"  --audit-scope sandbox|host\n"
		"                         whose processes, files and flows are audited (default:\n"
		"                         sandbox, everything under the root cgroup)\n"
		"  --audit-write PREFIX   report creates, writes, deletes, renames, chmods under it\n"
		"                         (repeatable; default: /)\n"
		"  --audit-read PATTERN   report reads under it, '*' standing for any one name\n"
		"                         (repeatable; default: /proc/*/environ, /root/.aws,\n"
		"                         /root/.ssh, /home/*/.aws, /home/*/.ssh, /var/run/secrets,\n"
		"                         /run/secrets)\n"
		"  --audit-skip PREFIX    report no writes under it (repeatable; default: /dev, /proc,\n"
		"                         /sys); reads named by --audit-read are still reported\n"
		"  --redact-key WORD      treat KEY=VALUE and --KEY VALUE as secret when KEY contains\n"
		"                         WORD (repeatable; added to the built-in words)\n"
		"  --redact-pattern REGEX redact whatever the POSIX extended regex matches in argv\n"
		"                         and paths (repeatable)\n"
		"  --sink URI             where events go; repeat for several (default:\n"
		"                         " EGRET_DEFAULT_SINK "). URIs:\n"
		"                           file:PATH[?max_size=SIZE&keep=N]  rotated at SIZE\n"
		"                             (default 100M) into PATH.1 ... PATH.N (default 10)\n"
		"                           stdout\n"
		"                           tcp://HOST:PORT[?ack]   ack: wait for the receiver's\n"
		"                             acknowledgements (egretctl tail sends them)\n"
		"                           unix:PATH[?ack]\n"
		"                           otlp+http://HOST[:PORT][/PATH]  OTLP/HTTP logs\n"
		"                             (default port 4318, path /v1/logs)\n"
		"  --format binary|json   what the stdout sink writes (default: binary, the\n"
		"                         varint-delimited egret.v1.Event stream; json: one event\n"
		"                         a line, for a human)\n"
		"  --spool DIR            events wait here for sinks that are down or slow, and\n"
		"                         across restarts (default: " EGRET_DEFAULT_SPOOL ")\n"
		"  --spool-max SIZE       evict the oldest events past this size, reporting the\n"
		"                         exact range as a Loss event (default: 1G; K, M, G)\n"
		"  --spool-sync never|second|batch\n"
		"                         how often the spool is fdatasync'ed (default: second; an\n"
		"                         egretd crash loses nothing either way, a power cut loses\n"
		"                         what was not synced)\n"
		"  --heartbeat SECONDS    a Heartbeat event this often; 0: none (default: 30)\n"
		"  --require-unprivileged kill a sandboxed process holding CAP_SYS_ADMIN,\n"
		"                         CAP_NET_ADMIN, CAP_SYS_PTRACE, CAP_SYS_MODULE, CAP_BPF or\n"
		"                         CAP_PERFMON over the host, at its exec or when it enters\n"
		"                         a sandbox itself (enforce mode; audit mode reports it;\n"
		"                         the policy's 'require unprivileged' does the same)\n"
		"  --trusted-mover CGROUP only writers under this cgroup (absolute, or relative to\n"
		"                         the cgroup v2 mount; repeatable) may move host processes\n"
		"                         into a sandbox; others' moves are reported (default: any\n"
		"                         writer outside every sandbox)\n"
		"  --compat refuse|judge  a 32-bit (int 0x80, sysenter) or x32 system call from a\n"
		"                         sandbox: refuse kills the process at its first one\n"
		"                         (default); judge checks it as its 64-bit twin is\n"
		"                         checked, and kills the calls it cannot check (README)\n"
		"  --kill-cross-signals   kill a sandboxed process that signals any process outside\n"
		"                         its sandbox (default: only one that signals egretd; others\n"
		"                         are reported)\n"
		"  --accept-kernel-gap NAME\n"
		"                         enforce although this kernel lacks what protection NAME\n"
		"                         needs and nothing replaces it (repeatable; README\n"
		"                         \"Kernels\"); without it egretd refuses to enforce there\n"
		"  --without-kernel-feature NAME\n"
		"                         behave as on a kernel without NAME, to try egret's\n"
		"                         fallbacks (repeatable: task_from_pid, send_signal_task,\n"
		"                         sys_exit_btf, skb_pid_tgid, skb_uid_gid, skb_comm,\n"
		"                         fchmodat2, sys_enter_btf)\n"
		"  -v, --verbose          debug logging, including the BPF verifier's output\n"
		"  -V, --version          print the version and exit\n"
		"  -h, --help             print this help and exit\n"
		"\n"
		"Exit status: 0 after a clean stop, 1 when enforcement or a sink could not be set up\n"
		"(enforcement already pinned stays in place) or another egretd holds the state dir,\n"
		"spool or control socket, 2 for a usage error.\n");
}

/* The first pattern of a kind given on the command line replaces that kind's defaults. */
static int add_pattern(struct options *o, __u8 kind, const char *text)
{
	struct loader_config *l = &o->loader;

	if (!(o->patterns_given & (1u << kind))) {
		unsigned int out = 0;

		for (unsigned int i = 0; i < l->npatterns; i++) {
			if (l->patterns[i].kind == kind)
				continue;
			l->patterns[out] = l->patterns[i];
			memmove(l->pattern_text[out++], l->pattern_text[i], EGRET_PATTERN_LEN);
		}
		l->npatterns = out;
		o->patterns_given |= 1u << kind;
	}
	if (l->npatterns == EGRET_PATTERNS_MAX)
		return -E2BIG;
	if (audit__parse_pattern(text, kind, &l->patterns[l->npatterns]))
		return -EINVAL;
	str_copy(l->pattern_text[l->npatterns++], EGRET_PATTERN_LEN, text);
	return 0;
}

static void default_pattern(struct loader_config *l, const char *text, __u8 kind)
{
	audit__parse_pattern(text, kind, &l->patterns[l->npatterns]);
	str_copy(l->pattern_text[l->npatterns++], EGRET_PATTERN_LEN, text);
}

/* Writes, creates, deletes anywhere but /dev, /proc and /sys; reads of secrets only. */
static void default_patterns(struct options *o)
{
	static const char *const writes[] = { "/" };
	static const char *const reads[] = { "/proc/*/environ", "/root/.aws",	"/root/.ssh",
					     "/home/*/.aws",	"/home/*/.ssh", "/var/run/secrets",
					     "/run/secrets" };
	static const char *const skips[] = { "/dev", "/proc", "/sys" };
	struct loader_config *l = &o->loader;

	for (size_t i = 0;
	     !(o->patterns_given & (1u << EGRET_PATTERN_WRITE)) && i < ARRAY_SIZE(writes); i++)
		default_pattern(l, writes[i], EGRET_PATTERN_WRITE);
	for (size_t i = 0;
	     !(o->patterns_given & (1u << EGRET_PATTERN_READ)) && i < ARRAY_SIZE(reads); i++)
		default_pattern(l, reads[i], EGRET_PATTERN_READ);
	for (size_t i = 0;
	     !(o->patterns_given & (1u << EGRET_PATTERN_SKIP)) && i < ARRAY_SIZE(skips); i++)
		default_pattern(l, skips[i], EGRET_PATTERN_SKIP);
}

static int parse_options(int argc, char **argv, struct options *o)
{
	enum {
		OPT_CGROUP = 256,
		OPT_STATE,
		OPT_CONTROL,
		OPT_CONTROL_GROUP,
		OPT_SINK,
		OPT_POLICY,
		OPT_LIVE,
		OPT_UPSTREAM,
		OPT_REFUSE,
		OPT_MIN_TTL,
		OPT_GRACE,
		OPT_MAX_IPS,
		OPT_SCOPE,
		OPT_AWRITE,
		OPT_AREAD,
		OPT_ASKIP,
		OPT_RKEY,
		OPT_RPATTERN,
		OPT_FORMAT,
		OPT_SPOOL,
		OPT_SPOOL_MAX,
		OPT_SPOOL_SYNC,
		OPT_HEARTBEAT,
		OPT_ACCEPT_GAP,
		OPT_WITHOUT,
		OPT_REQUIRE_UNPRIV,
		OPT_TRUSTED_MOVER,
		OPT_COMPAT,
		OPT_CROSS_SIGNALS,
	};
	static const struct option longopts[] = {
		{ "upstream-dns", required_argument, NULL, OPT_UPSTREAM },
		{ "audit-scope", required_argument, NULL, OPT_SCOPE },
		{ "audit-write", required_argument, NULL, OPT_AWRITE },
		{ "audit-read", required_argument, NULL, OPT_AREAD },
		{ "audit-skip", required_argument, NULL, OPT_ASKIP },
		{ "redact-key", required_argument, NULL, OPT_RKEY },
		{ "redact-pattern", required_argument, NULL, OPT_RPATTERN },
		{ "dns-refuse", required_argument, NULL, OPT_REFUSE },
		{ "dns-min-ttl", required_argument, NULL, OPT_MIN_TTL },
		{ "dns-grace", required_argument, NULL, OPT_GRACE },
		{ "dns-max-ips", required_argument, NULL, OPT_MAX_IPS },
		{ "policy", required_argument, NULL, OPT_POLICY },
		{ "live-rules", required_argument, NULL, OPT_LIVE },
		{ "cgroup", required_argument, NULL, OPT_CGROUP },
		{ "state-dir", required_argument, NULL, OPT_STATE },
		{ "control", required_argument, NULL, OPT_CONTROL },
		{ "control-group", required_argument, NULL, OPT_CONTROL_GROUP },
		{ "sink", required_argument, NULL, OPT_SINK },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "spool", required_argument, NULL, OPT_SPOOL },
		{ "spool-max", required_argument, NULL, OPT_SPOOL_MAX },
		{ "spool-sync", required_argument, NULL, OPT_SPOOL_SYNC },
		{ "heartbeat", required_argument, NULL, OPT_HEARTBEAT },
		{ "accept-kernel-gap", required_argument, NULL, OPT_ACCEPT_GAP },
		{ "without-kernel-feature", required_argument, NULL, OPT_WITHOUT },
		{ "require-unprivileged", no_argument, NULL, OPT_REQUIRE_UNPRIV },
		{ "trusted-mover", required_argument, NULL, OPT_TRUSTED_MOVER },
		{ "compat", required_argument, NULL, OPT_COMPAT },
		{ "kill-cross-signals", no_argument, NULL, OPT_CROSS_SIGNALS },
		{ "verbose", no_argument, NULL, 'v' },
		{ "version", no_argument, NULL, 'V' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, ":vVh", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_UPSTREAM: {
			struct sockaddr_storage ss;
			socklen_t len;

			if (dns__parse_server(optarg, &ss, &len))
				return log_usage(
					"bad --upstream-dns '%s': expected ADDR, ADDR:PORT or "
					"[ADDR6]:PORT",
					optarg);
			o->dns.upstream = optarg;
			break;
		}
		case OPT_REFUSE:
			if (strcmp(optarg, "refused") && strcmp(optarg, "nxdomain"))
				return log_usage("bad --dns-refuse '%s': refused or nxdomain",
						 optarg);
			o->dns.nxdomain = !strcmp(optarg, "nxdomain");
			break;
		case OPT_MIN_TTL:
		case OPT_GRACE:
		case OPT_MAX_IPS: {
			uint64_t v;

			if (parse_u64(optarg, c == OPT_MAX_IPS ? 4096 : 86400 * 7, &v) ||
			    (c == OPT_MAX_IPS && v == 0))
				return log_usage(
					"bad %s '%s': expected %s", argv[optind - 1], optarg,
					c == OPT_MAX_IPS ? "1-4096" : "seconds, up to a week");
			*(c == OPT_MIN_TTL ? &o->dns.min_ttl
			  : c == OPT_GRACE ? &o->dns.grace
					   : &o->dns.max_ips) = (unsigned int)v;
			break;
		}
		case OPT_SCOPE:
			if (strcmp(optarg, "sandbox") && strcmp(optarg, "host"))
				return log_usage("bad --audit-scope '%s': sandbox or host", optarg);
			o->loader.audit_host = !strcmp(optarg, "host");
			break;
		case OPT_AWRITE:
		case OPT_AREAD:
		case OPT_ASKIP:
			if (add_pattern(o,
					c == OPT_AWRITE	 ? EGRET_PATTERN_WRITE
					: c == OPT_AREAD ? EGRET_PATTERN_READ
							 : EGRET_PATTERN_SKIP,
					optarg))
				return log_usage("bad %s '%s': an absolute path of at most %d "
						 "characters ('*' matches within a component), %d "
						 "patterns in all",
						 argv[optind - 1], optarg, EGRET_PATTERN_LEN - 1,
						 EGRET_PATTERNS_MAX);
			break;
		case OPT_RKEY:
			if (redact__add_key(&o->redact, optarg))
				return log_usage("too many --redact-key words");
			break;
		case OPT_RPATTERN: {
			char err[256];

			if (redact__add_pattern(&o->redact, optarg, err, sizeof(err)))
				return log_usage("bad --redact-pattern '%s': %s", optarg, err);
			break;
		}
		case OPT_POLICY:
			o->policy = optarg;
			break;
		case OPT_LIVE:
			o->live_rules = optarg;
			break;
		case OPT_CGROUP:
			o->cgroup = optarg;
			break;
		case OPT_STATE:
			o->state_dir = optarg;
			break;
		case OPT_CONTROL:
			o->control = optarg;
			break;
		case OPT_CONTROL_GROUP:
			o->control_group = optarg;
			break;
		case OPT_SINK: {
			struct sink probe;
			char err[160];

			if (o->nsinks == MAX_SINKS)
				return log_usage("at most %d --sink options", MAX_SINKS);
			if (sink__parse(&probe, optarg, err, sizeof(err)))
				return log_usage("bad --sink '%s': %s", optarg, err);
			for (unsigned int i = 0; i < o->nsinks; i++) {
				if (!strcmp(o->sinks[i], optarg))
					return log_usage("--sink '%s' given twice", optarg);
			}
			o->sinks[o->nsinks++] = optarg;
			break;
		}
		case OPT_FORMAT:
			if (strcmp(optarg, "binary") && strcmp(optarg, "json"))
				return log_usage("bad --format '%s': binary or json", optarg);
			o->format = strcmp(optarg, "json") ? SINK_BINARY : SINK_JSON;
			break;
		case OPT_SPOOL:
			if (optarg[0] != '/')
				return log_usage("bad --spool '%s': an absolute directory", optarg);
			o->spool = optarg;
			break;
		case OPT_SPOOL_MAX:
			if (parse_size(optarg, &o->spool_max) || o->spool_max < SPOOL_MIN_LIMIT)
				return log_usage(
					"bad --spool-max '%s': a size of at least %lluK (K, M, "
					"G suffixes)",
					optarg, SPOOL_MIN_LIMIT >> 10);
			break;
		case OPT_SPOOL_SYNC:
			if (!strcmp(optarg, "never"))
				o->spool_sync = SPOOL_SYNC_NEVER;
			else if (!strcmp(optarg, "second"))
				o->spool_sync = SPOOL_SYNC_SECOND;
			else if (!strcmp(optarg, "batch"))
				o->spool_sync = SPOOL_SYNC_BATCH;
			else
				return log_usage("bad --spool-sync '%s': never, second or batch",
						 optarg);
			break;
		case OPT_HEARTBEAT: {
			uint64_t v;

			if (parse_u64(optarg, 86400, &v))
				return log_usage("bad --heartbeat '%s': seconds, 0 to 86400",
						 optarg);
			o->heartbeat_s = (unsigned int)v;
			break;
		}
		case OPT_ACCEPT_GAP:
			if (!kfeatures__is_feature(optarg) || o->kernel.naccept == FEATURES_MAX)
				return log_usage("bad --accept-kernel-gap '%s': one of %s", optarg,
						 kfeatures__feature_names());
			o->kernel.accept[o->kernel.naccept++] = optarg;
			break;
		case OPT_WITHOUT:
			if (!kfeatures__is_probe(optarg) ||
			    o->kernel.nwithout == FEATURES_PROBES_MAX)
				return log_usage("bad --without-kernel-feature '%s': one of %s",
						 optarg, kfeatures__probe_names());
			o->kernel.without[o->kernel.nwithout++] = optarg;
			break;
		case OPT_REQUIRE_UNPRIV:
			o->loader.require_unpriv = true;
			break;
		case OPT_TRUSTED_MOVER:
			if (o->ntrusted_movers == EGRET_TRUSTED_MOVERS_MAX)
				return log_usage("at most %d --trusted-mover options",
						 EGRET_TRUSTED_MOVERS_MAX);
			if (!optarg[0])
				return log_usage("bad --trusted-mover '': a cgroup path");
			o->trusted_movers[o->ntrusted_movers++] = optarg;
			break;
		case OPT_COMPAT:
			if (strcmp(optarg, "refuse") && strcmp(optarg, "judge"))
				return log_usage("bad --compat '%s': refuse or judge", optarg);
			o->kernel.compat_judge = !strcmp(optarg, "judge");
			o->loader.compat_mode =
				o->kernel.compat_judge ? EGRET_COMPAT_JUDGE : EGRET_COMPAT_REFUSE;
			break;
		case OPT_CROSS_SIGNALS:
			o->loader.kill_cross_signals = true;
			break;
		case 'v':
			o->verbose = true;
			break;
		case 'V':
			printf("egretd %s\n", EGRET_VERSION);
			exit(0);
		case 'h':
			usage(stdout);
			exit(0);
		case ':':
			return log_usage("option '%s' needs a value", argv[optind - 1]);
		default:
			return log_usage("unknown option '%s'", argv[optind - 1]);
		}
	}
	if (optind < argc)
		return log_usage("unexpected argument '%s'", argv[optind]);
	if (!o->nsinks)
		o->sinks[o->nsinks++] = EGRET_DEFAULT_SINK;
	if (!o->spool)
		o->spool = EGRET_DEFAULT_SPOOL;
	default_patterns(o);
	if (!o->policy)
		o->policy = EGRET_DEFAULT_POLICY;
	if (!o->dns.max_ips)
		o->dns.max_ips = DNS_DEFAULT_MAX_IPS;
	if (!o->live_rules)
		o->live_rules = EGRET_DEFAULT_LIVE_RULES;
	return 0;
}

/* What this kernel runs without, for the agent's start and stop events: the features that are
 * not on, each with the programs they kept from loading (words split in place in progs).
 */
static size_t agent_features(struct daemon *d, Egret__V1__KernelFeature *kf,
			     Egret__V1__KernelFeature **kfp, char progs[][FEATURE_PROGS_LEN],
			     char *words[][FEATURE_PROGS_LEN / 2])
{
	size_t n = 0;

	for (unsigned int i = 0; i < d->kf.n; i++) {
		const struct feature_status *f = &d->kf.f[i];
		Egret__V1__KernelFeature *k = &kf[n];
		char *save;

		if (f->state == FEATURE_ON)
			continue;
		egret__v1__kernel_feature__init(k);
		k->name = (char *)f->name;
		k->state = (Egret__V1__KernelFeature__State)f->state;
		k->detail = (char *)f->detail;
		k->accepted = f->accepted;
		k->not_loaded = words[n];
		str_copy(progs[n], FEATURE_PROGS_LEN, f->progs);
		for (char *w = strtok_r(progs[n], " ", &save); w; w = strtok_r(NULL, " ", &save))
			words[n][k->n_not_loaded++] = w;
		kfp[n] = k;
		n++;
	}
	return n;
}

static void emit_agent(struct daemon *d, Egret__V1__AgentLifecycle__Kind kind)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__AgentLifecycle al = EGRET__V1__AGENT_LIFECYCLE__INIT;
	Egret__V1__KernelFeature kf[FEATURES_MAX], *kfp[FEATURES_MAX];
	char progs[FEATURES_MAX][FEATURE_PROGS_LEN], *words[FEATURES_MAX][FEATURE_PROGS_LEN / 2];

	al.kind = kind;
	al.kernel = d->kf.release;
	al.n_features = agent_features(d, kf, kfp, progs, words);
	al.features = kfp;
	al.cgroup_root = d->paths.cgroup_root;
	al.state_dir = d->paths.state_dir;
	al.programs = d->loader.attached;
	al.adopted = d->loader.adopted;
	al.reason = d->stop_reason;
	ev.class_uid = OCSF_APPLICATION_LIFECYCLE;
	ev.activity_id = kind == EGRET__V1__AGENT_LIFECYCLE__KIND__KIND_START
				 ? OCSF_APP_ACTIVITY_START
				 : OCSF_APP_ACTIVITY_STOP;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_AGENT;
	ev.agent = &al;
	stream__emit(&d->stream, &ev);
	stream__flush(&d->stream);
}

/* The Heartbeat: last seq, the spool, every sink, the kernel's counters. */
static void emit_heartbeat(struct daemon *d)
{
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Heartbeat hb = EGRET__V1__HEARTBEAT__INIT;
	Egret__V1__SinkState st[MAX_SINKS], *stp[MAX_SINKS];
	Egret__V1__Counter cv[COLLECTOR_COUNTERS], *cvp[COLLECTOR_COUNTERS];
	struct counter_value counters[COLLECTOR_COUNTERS];
	size_t n = collector__counters(loader__map_fd(&d->loader, "counters"), counters,
				       COLLECTOR_COUNTERS);

	hb.last_seq = d->stream.seq;
	hb.spool_bytes = d->stream.spool.bytes;
	hb.spool_limit_bytes = d->stream.spool.limit;
	hb.lost = d->stream.lost;
	for (unsigned int i = 0; i < d->stream.nsinks; i++) {
		const struct sink *s = d->stream.sinks[i];

		egret__v1__sink_state__init(&st[i]);
		st[i].uri = (char *)s->uri;
		st[i].up = s->up;
		st[i].delivered = s->delivered;
		st[i].behind_bytes = spool__behind(&d->stream.spool, s->acked);
		st[i].error = (char *)s->error;
		stp[i] = &st[i];
	}
	hb.n_sinks = d->stream.nsinks;
	hb.sinks = stp;
	for (size_t i = 0; i < n; i++) {
		egret__v1__counter__init(&cv[i]);
		cv[i].name = counters[i].name;
		cv[i].value = counters[i].value;
		cvp[i] = &cv[i];
	}
	hb.n_counters = n;
	hb.counters = cvp;
	ev.class_uid = OCSF_APPLICATION_LIFECYCLE;
	ev.activity_id = OCSF_ACTIVITY_OTHER;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_HEARTBEAT;
	ev.heartbeat = &hb;
	stream__emit(&d->stream, &ev);
}

static void json_str(FILE *f, const char *key, const char *v)
{
	fprintf(f, "\"%s\":", key);
	pbjson__string(f, v ? v : "", v ? strlen(v) : 0);
}

/* `status --json`: the same facts as one JSON object (egretctl status --json merges it into
 * its own); numbers as JSON numbers, all far below 2^53.
 */
static int status_json(struct daemon *d, struct control_req *r)
{
	const struct engine *e = &d->engine;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return 1;
	fprintf(f, "{\"pid\":%d,\"uptime_s\":%llu,", getpid(),
		(unsigned long long)((now_ns(CLOCK_MONOTONIC) - d->started_ns) / 1000000000ull));
	json_str(f, "version", EGRET_VERSION);
	fputs(",\"policy\":{", f);
	json_str(f, "path", e->policy_path);
	fputc(',', f);
	json_str(f, "mode", policy__mode_name(e->pol.mode));
	fprintf(f, ",\"rules\":%zu,\"live_rules\":%zu,", e->pol.n,
		policy__count(&e->pol, true, NULL));
	json_str(f, "live_path", e->live_path);
	fprintf(f, ",\"sandboxes\":%zu,", e->installed);
	json_str(f, "hash", e->hash);
	fputs("},\"stream\":{", f);
	json_str(f, "id", d->stream.id);
	fprintf(f, ",\"last_seq\":%llu,\"lost\":%llu},\"spool\":{",
		(unsigned long long)d->stream.seq, (unsigned long long)d->stream.lost);
	json_str(f, "dir", d->stream.spool.dir);
	fprintf(f, ",\"bytes\":%llu,\"limit\":%llu},\"sinks\":[",
		(unsigned long long)d->stream.spool.bytes,
		(unsigned long long)d->stream.spool.limit);
	for (unsigned int i = 0; i < d->stream.nsinks; i++) {
		const struct sink *s = d->stream.sinks[i];

		fputs(i ? ",{" : "{", f);
		json_str(f, "uri", s->uri);
		fprintf(f, ",\"up\":%s,\"delivered\":%llu,\"behind_bytes\":%llu,",
			s->up ? "true" : "false", (unsigned long long)s->delivered,
			(unsigned long long)spool__behind(&d->stream.spool, s->acked));
		json_str(f, "error", s->error);
		fputc('}', f);
	}
	fprintf(f, "],\"programs\":{\"in_force\":%u,\"adopted\":%u}}\n", d->loader.attached,
		d->loader.adopted);
	fclose(f);
	control__out(r, "%s", buf);
	free(buf);
	return 0;
}

static int cmd_status(void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;
	char counters[2048];

	if (r->argc == 2 && !strcmp(r->argv[1], "--json"))
		return status_json(d, r);

	control__out(
		r, "egretd: running (pid %d, up %llus, version %s)\n", getpid(),
		(unsigned long long)((now_ns(CLOCK_MONOTONIC) - d->started_ns) / 1000000000ull),
		EGRET_VERSION);
	engine__status(&d->engine, r);
	resolver__status(d->resolver, r);
	control__out(r, "stream: %s, last seq %llu, %llu events reported lost\n", d->stream.id,
		     (unsigned long long)d->stream.seq, (unsigned long long)d->stream.lost);
	control__out(r, "spool: %s, %llu of %llu bytes\n", d->stream.spool.dir,
		     (unsigned long long)d->stream.spool.bytes,
		     (unsigned long long)d->stream.spool.limit);
	for (unsigned int i = 0; i < d->stream.nsinks; i++) {
		struct sink *s = d->stream.sinks[i];

		control__out(r, "sink: %s, %s, %llu delivered, %llu bytes behind%s%s\n", s->uri,
			     s->up ? "up" : "down", (unsigned long long)s->delivered,
			     (unsigned long long)spool__behind(&d->stream.spool, s->acked),
			     s->error[0] ? ", " : "", s->error);
	}
	control__out(r, "programs: %u in force, %u adopted from a previous egretd\n",
		     d->loader.attached, d->loader.adopted);
	control__status(&d->control, r);
	collector__format_counters(loader__map_fd(&d->loader, "counters"), counters,
				   sizeof(counters));
	control__out(r, "%s", counters);
	return 0;
}

static int cmd_engine(control_fn fn, void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;

	return fn(&d->engine, r);
}

#define ENGINE_CMD(name)                                        \
	static int cmd_##name(void *ctx, struct control_req *r) \
	{                                                       \
		return cmd_engine(engine__cmd_##name, ctx, r);  \
	}
ENGINE_CMD(allow)
ENGINE_CMD(deny)
ENGINE_CMD(revoke)
ENGINE_CMD(list)
ENGINE_CMD(reload)

/* One "protect KIND PATH" line of prepare's reply, the path made absolute (egretd's cwd). */
static void protect(struct control_req *r, const char *kind, const char *path, const char *sfx)
{
	char cwd[PATH_MAX] = "";

	if (path[0] != '/' && !getcwd(cwd, sizeof(cwd)))
		return;
	control__out(r, "protect %s %s%s%s%s\n", kind, cwd, cwd[0] ? "/" : "", path, sfx);
}

/* Where egretd's log goes when it is a file (its stdout or stderr). */
static void protect_log(struct control_req *r, int fd)
{
	char link[64], path[PATH_MAX];
	struct stat st;
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	n = readlink(link, path, sizeof(path) - 1);
	if (n <= 0 || fstat(fd, &st) || !S_ISREG(st.st_mode))
		return;
	path[n] = '\0';
	if (path[0] == '/')
		protect(r, "log", path, "");
}

/* The files of this instance a sandbox must not reach, for egretctl run's mount namespace. */
static void list_protected(struct daemon *d, struct control_req *r)
{
	char self[PATH_MAX], sfx[16];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	protect(r, "policy", d->engine.policy_path, "");
	protect(r, "live-rules", d->engine.live_path, "");
	protect(r, "spool", d->stream.spool.dir, "");
	protect(r, "control", d->paths.control, "");
	protect(r, "control", d->paths.control, ".lock");
	for (unsigned int i = 0; i < d->stream.nsinks; i++) {
		const struct sink *k = d->stream.sinks[i];

		if (k->kind != SINK_FILE && k->kind != SINK_UNIX)
			continue;
		protect(r, "sink", k->path, "");
		for (unsigned int j = 1; k->kind == SINK_FILE && j <= k->keep; j++) {
			snprintf(sfx, sizeof(sfx), ".%u", j);
			protect(r, "sink", k->path, sfx);
		}
	}
	protect_log(r, STDOUT_FILENO);
	protect_log(r, STDERR_FILENO);
	if (n > 0) {
		self[n] = '\0';
		protect(r, "binary", self, "");
	}
}

/* Registration by egretctl run; with its confinement words, also what it must keep out of the
 * sandbox's reach.
 */
static int cmd_prepare(void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;
	int rc = engine__cmd_prepare(&d->engine, r);

	if (!rc && r->argc > 2)
		list_protected(d, r);
	return rc;
}

/* egretctl run refused a system call of a sandboxed process: a Tamper event. */
static int cmd_seccomp(void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;

	return confine__cmd_seccomp(&d->collector.ctx, r);
}

static int cmd_uninstall(void *ctx, struct control_req *r);

static const struct control_cmd control_cmds[] = {
	{ "status", cmd_status },   { "allow", cmd_allow },	{ "deny", cmd_deny },
	{ "revoke", cmd_revoke },   { "list", cmd_list },	{ "reload", cmd_reload },
	{ "prepare", cmd_prepare }, { "seccomp", cmd_seccomp }, { "uninstall", cmd_uninstall },
};

/* Who sent a SIGHUP: the process that called kill(2) (its pid and uid from the signal, its
 * command from /proc), or the kernel (a terminal hangup).
 */
static void hup_sender(const struct signalfd_siginfo *si, struct ucred *cr, char *actor,
		       size_t size)
{
	char who[128];

	*cr = (struct ucred){ .pid = (pid_t)si->ssi_pid, .uid = si->ssi_uid, .gid = 0 };
	if (si->ssi_code == SI_KERNEL || !si->ssi_pid) {
		*cr = (struct ucred){ 0 }; /* pid 0: no process sent it */
		snprintf(actor, size, "SIGHUP from the kernel");
		return;
	}
	engine__actor_of(cr, who, sizeof(who));
	snprintf(actor, size, "SIGHUP from %s", who);
}

/* The sandbox cgroup the kernel recorded for this signal's sender when it sent it
 * (signal_senders, written by egret_sigsys for sandboxed senders only) into out; false when
 * there is no record of this sender. The record is used up.
 */
static bool signal_recorded(struct daemon *d, const struct signalfd_siginfo *si, char *out,
			    size_t size)
{
	struct egret_signal_key k = { .tgid = (__u32)getpid(), .sig = si->ssi_signo };
	int fd = loader__map_fd(&d->loader, "signal_senders");
	struct egret_signal_sender v;
	const char *name;

	if (fd < 0 || bpf_map_lookup_elem(fd, &k, &v) || v.tgid != si->ssi_pid)
		return false;
	bpf_map_delete_elem(fd, &k);
	name = sandbox_names__lookup(&d->engine.reg, v.sandbox_id);
	if (name && name[0])
		return snprintf(out, size, "%s/%s", d->paths.cgroup_root, name) < (int)size;
	return snprintf(out, size, "%s/(sandbox %llu)", d->paths.cgroup_root,
			(unsigned long long)v.sandbox_id) < (int)size;
}

/* Where a signal's sender was: the kernel's record of its sandbox at send time first, else its
 * /proc entry now. A sender that is gone (reaped) cannot be told from a sandboxed one:
 * PEER_UNKNOWN.
 */
static void signal_sender(struct daemon *d, const struct signalfd_siginfo *si, struct peer *p)
{
	struct peer_scope scope = { .cgroup_mount = d->paths.cgroup_mount,
				    .cgroup_root = d->paths.cgroup_root };
	char recorded[PATH_MAX];

	peer__of_signal((pid_t)si->ssi_pid, si->ssi_uid,
			signal_recorded(d, si, recorded, sizeof(recorded)) ? recorded : NULL,
			&scope, p);
}

static void comm_of(pid_t pid, char *out, size_t size)
{
	char path[64];
	int n;

	snprintf(path, sizeof(path), "/proc/%d/comm", (int)pid);
	n = read_file(path, out, size);
	if (n <= 0)
		snprintf(out, size, "?");
	else
		out[strcspn(out, "\n")] = '\0';
}

/* A signal from a sandbox that egretd refused: a Tamper event naming the sender. */
static void emit_signal_tamper(struct daemon *d, const struct peer *p, int sig, const char *actor,
			       const char *outcome)
{
	struct peer_scope scope = { .cgroup_mount = d->paths.cgroup_mount,
				    .cgroup_root = d->paths.cgroup_root };
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
	Egret__V1__Process pr = EGRET__V1__PROCESS__INIT;
	Egret__V1__Sandbox sb = EGRET__V1__SANDBOX__INIT;
	char name[256], dir[PATH_MAX], comm[64], detail[512];
	struct stat st;

	peer__sandbox(p, &scope, name, sizeof(name));
	if (!join_path(dir, sizeof(dir), d->paths.cgroup_root, name) && !stat(dir, &st))
		sb.cgroup_id = st.st_ino;
	sb.name = name;
	comm_of(p->cred.pid, comm, sizeof(comm));
	pr.pid = pr.tid = (uint32_t)p->cred.pid;
	pr.uid = p->cred.uid;
	pr.comm = comm;
	snprintf(detail, sizeof(detail), "%s in sandbox %s: refused, %s", actor, name, outcome);
	t.kind = EGRET__V1__TAMPER__KIND__KIND_SIGNAL;
	t.target = (uint64_t)sig;
	t.detail = detail;
	ev.sandbox = &sb;
	ev.process = &pr;
	ev.class_uid = OCSF_PROCESS_ACTIVITY;
	ev.activity_id = OCSF_ACTIVITY_OTHER;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	ev.tamper = &t;
	stream__emit(&d->stream, &ev);
	log_warn("%s", detail);
}

/* SIGHUP: reload, and reopen the sinks (log rotation), for a sender outside every sandbox. One
 * in a sandbox is ignored and reported; one egretd cannot identify any more (it exited and was
 * reaped before egretd read the signal) is refused, since it may have been in a sandbox:
 * `egretctl reload` is the way that always works.
 */
static void on_hup(struct daemon *d, const struct signalfd_siginfo *si)
{
	char err[POLICY_ERR_LEN], actor[160], why[320];
	struct ucred cr;
	struct peer p = { .place = PEER_HOST };

	hup_sender(si, &cr, actor, sizeof(actor));
	if (cr.pid)
		signal_sender(d, si, &p);
	if (p.place == PEER_SANDBOX) {
		emit_signal_tamper(d, &p, SIGHUP, actor, "the policy was not reloaded");
		return;
	}
	if (p.place == PEER_UNKNOWN) {
		snprintf(why, sizeof(why),
			 "the sender could not be identified (%s), so it may have been in a "
			 "sandbox: not reloaded (use egretctl reload)",
			 p.why);
		engine__refuse_reload(&d->engine, actor, &cr, why);
		log_err("reload on %s: %s", actor, why);
	} else if (engine__reload(&d->engine, actor, &cr, false, err, sizeof(err))) {
		log_err("reload on %s: %s: nothing changed", actor, err);
	} else {
		log_info("reloaded %s on %s", d->opt.policy, actor);
	}
	for (unsigned int i = 0; i < d->stream.nsinks; i++)
		sink__reopen(d->stream.sinks[i]);
}

/* SIGTERM, SIGINT or SIGQUIT the kernel saw a sandboxed process send (its sender is dead by
 * now): egretd does not stop, and reports it.
 */
static bool stop_from_sandbox(struct daemon *d, const struct signalfd_siginfo *si)
{
	struct peer_scope scope = { .cgroup_mount = d->paths.cgroup_mount,
				    .cgroup_root = d->paths.cgroup_root };
	char recorded[PATH_MAX], actor[160], who[128];
	struct peer p;
	struct ucred cr = { .pid = (pid_t)si->ssi_pid, .uid = si->ssi_uid };

	if (!signal_recorded(d, si, recorded, sizeof(recorded)))
		return false;
	peer__of_signal(cr.pid, cr.uid, recorded, &scope, &p);
	if (p.place != PEER_SANDBOX)
		return false;
	engine__actor_of(&cr, who, sizeof(who));
	snprintf(actor, sizeof(actor), "%s from %s", sigabbrev_np((int)si->ssi_signo) ?: "signal",
		 who);
	emit_signal_tamper(d, &p, (int)si->ssi_signo, actor, "egretd did not stop");
	return true;
}

static void on_signal(struct watch *w, uint32_t events)
{
	struct daemon *d = w->data;
	struct signalfd_siginfo si;

	while (read(w->fd, &si, sizeof(si)) == sizeof(si)) {
		if (si.ssi_signo == SIGHUP) {
			on_hup(d, &si);
			continue;
		}
		if (stop_from_sandbox(d, &si))
			continue;
		snprintf(d->stop_reason, sizeof(d->stop_reason), "%s",
			 strsignal((int)si.ssi_signo));
		d->loop.stop = true;
	}
}

static void on_ringbuf(struct watch *w, uint32_t events)
{
	struct daemon *d = w->data;

	collector__poll(&d->collector);
}

static int setup_signals(struct daemon *d)
{
	sigset_t set;
	int fd;

	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGQUIT);
	sigprocmask(SIG_BLOCK, &set, NULL);
	fd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return -errno;
	d->sigw = (struct watch){ .fd = fd, .fn = on_signal, .data = d };
	return loop__add(&d->loop, &d->sigw, EPOLLIN);
}

/* Lock one of the instance's paths for egretd's life (the fd is never closed): the directory
 * path itself when suffix is NULL, else the file path+suffix, whose directory is created with
 * mode when missing. What and option name the path in the errors.
 */
static int take_lock(const char *what, const char *path, const char *suffix, mode_t mode,
		     const char *option)
{
	char file[PATH_MAX + 8], dir[PATH_MAX + 8], who[64];
	struct lock_holder h;
	int fd;

	snprintf(file, sizeof(file), "%s%s", path, suffix ? suffix : "");
	snprintf(dir, sizeof(dir), "%s", file);
	fd = suffix ? mkdir_p(dirname(dir), mode) : 0;
	if (!fd)
		fd = suffix ? lockfile__take(file, &h) : lockfile__take_dir(path, &h);
	if (fd == -EWOULDBLOCK)
		log_err("%s %s is in use by %s: stop it first, or give this instance its own %s",
			what, path, lockfile__describe(&h, who, sizeof(who)), option);
	else if (fd < 0)
		log_err("cannot lock %s %s (%s): %s", what, path, file, strerror(-fd));
	return fd < 0 ? fd : 0;
}

/* The instance's state dir, spool and control socket are this egretd's alone: lock each
 * before anything else touches it, so a second egretd on any of them exits here having
 * changed nothing (no program swapped, no event written, no file removed). The state dir
 * lives on bpffs, which holds no plain file: its directory is the lock, so bpffs is mounted
 * and the directory made first (both harmless to an egretd already running on them).
 */
static int setup_instance(struct daemon *d)
{
	int err;

	err = paths__init(&d->paths, d->opt.cgroup, d->opt.state_dir, d->opt.control);
	if (!err)
		err = bpffs__ensure(d->paths.state_dir);
	if (!err)
		err = take_lock("state dir", d->paths.state_dir, NULL, 0, "--state-dir");
	if (!err)
		err = take_lock("spool", d->opt.spool, "/lock", 0700, "--spool");
	if (!err)
		err = take_lock("control socket", d->paths.control, ".lock", 0755, "--control");
	return err;
}

/* StrictModes (fileperm.h): a policy, live-rules file or spool that anyone but root could
 * write is refused before anything is touched.
 */
static int check_files(const struct daemon *d)
{
	char err[FILEPERM_ERR_LEN];
	int ret = fileperm__check_instance(d->opt.policy, d->opt.live_rules, d->opt.spool, err,
					   sizeof(err));

	if (ret)
		log_err("%s", err);
	return ret;
}

/* Whether the policy file asks for enforce mode, read before it is applied: a kernel gap
 * refuses enforce mode before anything changes. A file that does not parse counts as enforce
 * (engine__start then says what is wrong with it).
 */
static bool policy_enforces(const char *path)
{
	char err[POLICY_ERR_LEN];
	struct policy p;
	bool enforce;

	policy__init(&p);
	enforce = policy__parse_file(&p, path, false, err, sizeof(err)) || p.mode == POLICY_ENFORCE;
	policy__free(&p);
	return enforce;
}

/* egretd and its keeper are never killed by egret's programs, even if a sandbox pulled them
 * into its cgroup
 */
static int protect_self(struct daemon *d)
{
	__u32 tgids[2] = { (__u32)getpid() };
	pid_t keeper = d->keeper.pid ? d->keeper.pid : d->old_keeper;
	int err;

	if (keeper > 0)
		tgids[1] = (__u32)keeper;
	err = confine__protect(loader__map_fd(&d->loader, "protected_tgids"), tgids,
			       keeper > 0 ? 2 : 1);
	if (err)
		log_err("failed to write egretd's pid into protected_tgids: %s", strerror(-err));
	return err;
}

/* --trusted-mover paths -> the cgroup ids and levels the kernel compares writers with */
static int trusted_movers(struct daemon *d)
{
	struct loader_config *l = &d->opt.loader;

	for (unsigned int i = 0; i < d->opt.ntrusted_movers; i++) {
		const char *arg = d->opt.trusted_movers[i];
		char path[PATH_MAX];
		unsigned int level;
		int err;

		if (arg[0] == '/')
			err = snprintf(path, sizeof(path), "%s", arg) >= (int)sizeof(path);
		else
			err = snprintf(path, sizeof(path), "%s/%s", d->paths.cgroup_mount, arg) >=
			      (int)sizeof(path);
		if (err)
			err = -ENAMETOOLONG;
		if (!err)
			err = cgroup__check_v2(path);
		if (!err)
			err = cgroup__level(d->paths.cgroup_mount, path, &level);
		if (!err)
			err = cgroup__id(path, &l->trusted_mover_id[i]);
		if (err) {
			log_err("--trusted-mover %s: %s is not a cgroup v2 directory under %s (%s)",
				arg, path, d->paths.cgroup_mount, strerror(-err));
			return err;
		}
		l->trusted_mover_level[i] = level;
		l->ntrusted_movers = i + 1;
	}
	return 0;
}

/* Without bpf_task_from_pid the programs place a pid through sandbox_pids: the tasks already
 * in sandboxes go in now, or the programs would take them for host processes.
 */
static void seed_pids(struct daemon *d)
{
	int n = confine__seed_pids(loader__map_fd(&d->loader, "sandbox_pids"),
				   d->paths.cgroup_root);

	if (n < 0)
		log_err("failed to seed sandbox_pids from %s: %s", d->paths.cgroup_root,
			strerror(-n));
	else
		log_info("sandbox_pids: %d tasks already in sandboxes", n);
}

/* Enforcement first: nothing else matters if it cannot be set up. */
static int setup_enforcement(struct daemon *d)
{
	int err;

	/* before any pin changes: the previous keeper would put back what this egretd replaces */
	d->old_keeper = keeper__quiesce_old(d->paths.state_dir);
	keeper__restore(d->paths.state_dir);
	err = paths__create_root(&d->paths);
	if (!err)
		selfcg__init(&d->selfcg, d->paths.cgroup_mount, d->paths.cgroup_root);
	if (!err)
		err = trusted_movers(d);
	if (!err)
		err = tracefs__ensure();
	if (!err)
		err = kfeatures__probe(&d->kf, &d->opt.kernel);
	d->opt.loader.kf = &d->kf;
	if (!err)
		err = loader__open(&d->loader, &d->paths, &d->opt.loader);
	if (!err)
		err = loader__load(&d->loader);
	if (!err)
		err = selftest__path_matcher(loader__prog_fd(&d->loader, "egret_selftest"),
					     loader__map_fd(&d->loader, "selftest"),
					     &d->opt.loader);
	if (!err)
		err = engine__init(&d->engine, d->opt.policy, d->opt.live_rules,
				   d->paths.cgroup_root, loader__map_fd(&d->loader, "policy_v1"),
				   loader__map_fd(&d->loader, "sandboxes"),
				   loader__map_fd(&d->loader, "sandbox_rules"));
	d->engine.spool_dir = d->opt.spool;
	if (!err)
		err = protect_self(d);
	if (!err)
		err = kfeatures__check_gaps(&d->kf, policy_enforces(d->opt.policy));
	d->engine.no_enforce = kfeatures__gap(&d->kf); /* nor later by a reload */
	/* a rule set is in force before any program that reads it */
	if (!err)
		err = engine__start(&d->engine);
	if (!err)
		err = kfeatures__pin(&d->kf, &d->paths);
	if (!err)
		err = loader__attach(&d->loader);
	if (!err)
		engine__rescan(&d->engine);
	if (!err)
		taskseed__run(loader__map_fd(&d->loader, "task_sandbox"), d->paths.cgroup_root);
	if (!err && !d->kf.task_from_pid)
		seed_pids(d);
	if (err) {
		log_err("enforcement is not set up; exiting (whatever a previous egretd pinned under "
			"%s stays in force)",
			d->paths.state_dir[0] ? d->paths.state_dir : EGRET_DEFAULT_STATE_DIR);
		return err;
	}
	log_info("%u programs in force on %s (%u adopted), pinned under %s", d->loader.attached,
		 d->paths.cgroup_root, d->loader.adopted, d->paths.state_dir);
	return 0;
}

static void on_sandbox_created(void *ctx, uint64_t id, const char *name)
{
	struct daemon *d = ctx;

	engine__sandbox_created(&d->engine, id, name);
}

static void on_sandbox_destroyed(void *ctx, uint64_t id)
{
	struct daemon *d = ctx;

	engine__sandbox_destroyed(&d->engine, id);
	if (d->resolver)
		resolver__sandbox_gone(d->resolver, id);
}

static const char *on_rule_text(void *ctx, uint32_t id, char *buf, size_t size)
{
	struct daemon *d = ctx;

	return engine__rule_text(&d->engine, id, buf, size);
}

static void on_netns_seen(void *ctx, uint64_t cookie, uint32_t pid, uint64_t sandbox)
{
	struct daemon *d = ctx;

	if (d->resolver)
		resolver__netns_seen(d->resolver, cookie, pid, sandbox);
}

static void on_observe(void *ctx, const Egret__V1__Event *ev)
{
	struct daemon *d = ctx;

	pkg__observe(&d->pkg, ev);
	/* a sandbox pulled egretd into its cgroup: back home at once */
	if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	    ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_CGROUP_PULL &&
	    ev->tamper->other_pid == (uint32_t)getpid())
		selfcg__check(&d->selfcg);
}

static int setup_pipeline(struct daemon *d)
{
	int err;

	stream__init(&d->stream);
	err = stream__open_spool(&d->stream, d->opt.spool, d->opt.spool_max, d->opt.spool_sync);
	if (err)
		return err;
	for (unsigned int i = 0; i < d->opt.nsinks; i++) {
		char why[160];

		err = sink__parse(&d->sinks[i], d->opt.sinks[i], why, sizeof(why));
		if (err)
			return err;
		if (d->sinks[i].kind == SINK_STDOUT)
			d->sinks[i].format = d->opt.format;
		err = stream__add_sink(&d->stream, &d->sinks[i], &d->loop);
		if (err)
			return err;
	}
	stream__report_damage(&d->stream);
	err = collector__init(&d->collector, &d->stream, &d->engine.reg,
			      loader__map_fd(&d->loader, "events"),
			      loader__map_fd(&d->loader, "counters"));
	if (err)
		return err;
	err = decoders__register(&d->collector);
	if (err)
		return err;
	d->collector.ctx.procs = proc_cache__init(&d->procs) ? NULL : &d->procs;
	d->collector.ctx.redactor = &d->opt.redact;
	d->collector.ctx.hooks = (struct collector_hooks){
		.ctx = d,
		.sandbox_created = on_sandbox_created,
		.sandbox_destroyed = on_sandbox_destroyed,
		.rule_text = on_rule_text,
		.netns_seen = on_netns_seen,
		.observe = on_observe,
	};
	err = pkg__init(&d->pkg, &d->stream);
	if (err)
		return err;
	d->engine.stream = &d->stream;
	d->rbw = (struct watch){ .fd = collector__fd(&d->collector), .fn = on_ringbuf, .data = d };
	return loop__add(&d->loop, &d->rbw, EPOLLIN);
}

/* The resolver: a DNS egret cannot serve is a setup failure like any other. */
static int setup_dns(struct daemon *d)
{
	struct dns_maps m = {
		.listeners_fd = loader__map_fd(&d->loader, "dns_listeners"),
		.clients_fd = loader__map_fd(&d->loader, "dns_clients"),
		.allow_fd = loader__map_fd(&d->loader, "dns_allow"),
	};
	int err = resolver__new(&d->resolver, &d->opt.dns, &m, &d->loop, &d->engine);

	if (err)
		return err;
	resolver__set_stream(d->resolver, &d->stream);
	err = resolver__listen_here(d->resolver);
	if (!err)
		resolver__scan(d->resolver, d->paths.cgroup_root);
	return err;
}

static int setup_control(struct daemon *d)
{
	struct control *c = &d->control;

	c->listen.fd = -1;
	if (d->opt.control_group) {
		struct group *g = getgrnam(d->opt.control_group);

		if (!g) {
			log_err("--control-group %s: no such group", d->opt.control_group);
			return -ENOENT;
		}
		c->has_group = true;
		c->group = g->gr_gid;
	}
	c->cgroup_mount = d->paths.cgroup_mount;
	c->cgroup_root = d->paths.cgroup_root;
	c->cmds = control_cmds;
	c->ncmds = ARRAY_SIZE(control_cmds);
	c->ctx = d;
	return control__listen(c, &d->loop, d->paths.control);
}

/* The keeper put back a pin someone removed: say which. A remover in a sandbox was killed and
 * named by the programs already (Tamper PIN_REMOVED with its process).
 */
static void on_pin_removed(void *ctx, const char *path)
{
	struct daemon *d = ctx;
	Egret__V1__Event ev = EGRET__V1__EVENT__INIT;
	Egret__V1__Tamper t = EGRET__V1__TAMPER__INIT;
	char detail[PATH_MAX + 96];

	snprintf(detail, sizeof(detail), "pin %s was removed: egret's keeper put it back", path);
	t.kind = EGRET__V1__TAMPER__KIND__KIND_PIN_REMOVED;
	t.detail = detail;
	ev.class_uid = OCSF_PROCESS_ACTIVITY;
	ev.activity_id = OCSF_ACTIVITY_OTHER;
	ev.payload_case = EGRET__V1__EVENT__PAYLOAD_TAMPER;
	ev.tamper = &t;
	if (d->stream.nsinks)
		stream__emit(&d->stream, &ev);
	log_warn("%s", detail);
}

static void on_keeper_started(void *ctx, pid_t pid)
{
	protect_self(ctx);
}

/* A keeper holds every pin from now on; the previous egretd's, if any, goes. Without one,
 * egretd still runs (its own fds and the pins hold enforcement), and says so.
 */
static void setup_keeper(struct daemon *d)
{
	d->keeper.on_removed = on_pin_removed;
	d->keeper.on_started = on_keeper_started;
	d->keeper.ctx = d;
	if (keeper__start(&d->keeper, &d->loop, d->paths.state_dir)) {
		log_err("no keeper: removed pins of %s are not put back while egretd is down",
			d->paths.state_dir);
		return;
	}
	keeper__store(&d->keeper);
	if (d->old_keeper)
		keeper__kill(d->old_keeper, 3000);
	d->old_keeper = 0;
}

/* egretctl uninstall: root outside every sandbox only. The keeper lets go, every link is
 * detached and unpinned, egretd's own handles are closed (tracepoint links end with the last),
 * and egretd exits with a status that keeps systemd from starting it again.
 */
static int cmd_uninstall(void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;
	int err;

	if (r->peer.uid != 0 || r->place != PEER_HOST) {
		control__err(r, "uninstall: only root outside every sandbox may remove egret's "
				"enforcement\n");
		return 1;
	}
	keeper__stop(&d->keeper);
	keeper__unstore(&d->keeper);
	keeper__close(&d->keeper);
	err = loader__uninstall(&d->paths);
	loader__release_links(&d->loader);
	d->uninstalled = true;
	d->loop.stop = true;
	snprintf(d->stop_reason, sizeof(d->stop_reason), "uninstalled by pid %d", (int)r->peer.pid);
	if (err) {
		control__err(r, "uninstall from %s incomplete: %s\n", d->paths.state_dir,
			     strerror(-err));
		return 1;
	}
	control__out(r,
		     "egret enforcement removed from %s (pins under %s deleted); sandboxes are no "
		     "longer protected\n",
		     d->paths.cgroup_root, d->paths.state_dir);
	return 0;
}

/* The gap since the previous egretd, if it left an alive record: a Loss event. */
static void setup_selfwatch(struct daemon *d)
{
	struct selfwatch_gap g;

	if (selfwatch__open(&d->self, &d->stream, d->opt.spool))
		return; /* logged; gaps go unreported, nothing else changes */
	if (selfwatch__downtime(&d->self, &g))
		collector__report_gap(&d->collector, g.start_unix_ns, g.duration_ns, g.rebooted,
				      g.cause);
}

/* Stopped, frozen or starved since the last look: say how long, and what the ring lost
 * meanwhile. Looked at after each wait and again right before the ring's drops are counted, so
 * a stop that lands anywhere in a turn is a gap, never a plain ring loss.
 */
static void check_gap(struct daemon *d)
{
	struct selfwatch_gap gap;

	if (selfwatch__turn(&d->self, &gap))
		collector__report_gap(&d->collector, gap.start_unix_ns, gap.duration_ns, false,
				      gap.cause);
}

static void run(struct daemon *d)
{
	uint64_t next_tick = 0, next_flush = 0, ticks = 0;
	/* systemd's WatchdogSec: a stopped (SIGSTOP) or hung egretd is restarted */
	bool watchdog = getenv("WATCHDOG_USEC") != NULL;

	d->next_heartbeat_ns = now_ns(CLOCK_MONOTONIC) + d->opt.heartbeat_s * 1000000000ull;

	while (!d->loop.stop) {
		uint64_t now;

		loop__run_once(&d->loop, DRAIN_MS);
		check_gap(d);
		collector__poll(&d->collector);
		resolver__tick(d->resolver);
		now = now_ns(CLOCK_MONOTONIC);
		if (now >= next_tick) {
			if (++ticks % RESCAN_TICKS == 0)
				engine__rescan(&d->engine);
			check_gap(d);
			collector__check_drops(&d->collector);
			control__expire(&d->control);
			stream__sync_clock(&d->stream);
			stream__tick(&d->stream);
			selfwatch__tick(&d->self);
			selfcg__check(&d->selfcg);
			keeper__tick(&d->keeper, loader__map_fd(&d->loader, "signal_senders"));
			pkg__tick(&d->pkg);
			if (watchdog)
				notify__send("WATCHDOG=1");
			if (d->opt.heartbeat_s && now >= d->next_heartbeat_ns) {
				emit_heartbeat(d);
				d->next_heartbeat_ns = now + d->opt.heartbeat_s * 1000000000ull;
			}
			next_tick = now + TICK_MS * 1000000ull;
		}
		/* one write per drain period, not per event (a sink also writes when half full) */
		if (now >= next_flush) {
			stream__flush(&d->stream);
			next_flush = now + DRAIN_MS * 1000000ull;
		}
	}
}

static void shutdown_daemon(struct daemon *d)
{
	notify__send("STOPPING=1");
	if (d->rbw.fd > 0)
		collector__poll(&d->collector);
	pkg__flush(&d->pkg);
	if (d->stream.nsinks) {
		emit_agent(d, EGRET__V1__AGENT_LIFECYCLE__KIND__KIND_STOP);
		stream__drain(&d->stream, &d->loop);
	}
	control__close(&d->control);
	selfwatch__stop(&d->self, d->stop_reason);
	selfwatch__close(&d->self);
	if (d->rbw.fd > 0)
		collector__free(&d->collector);
	proc_cache__free(&d->procs);
	pkg__free(&d->pkg);
	redact__free(&d->opt.redact);
	stream__free(&d->stream);
	resolver__free(d->resolver);
	d->resolver = NULL;
	engine__free(&d->engine);
	keeper__close(&d->keeper);
	loader__close(&d->loader);
	loop__close(&d->loop);
}

int main(int argc, char **argv)
{
	static struct daemon d;
	char ready[PATH_MAX + 128];
	int err;

	d.loader.cgroup_fd = -1;
	d.control.listen.fd = -1;
	d.self.alive_fd = -1;
	d.engine.trie_fd = -1;
	d.opt.dns = (struct dns_options){ .min_ttl = DNS_DEFAULT_MIN_TTL,
					  .grace = DNS_DEFAULT_GRACE,
					  .timeout_ms = DNS_DEFAULT_TIMEOUT_MS };
	redact__init(&d.opt.redact);
	d.opt.spool_max = SPOOL_DEFAULT_LIMIT;
	d.opt.spool_sync = SPOOL_SYNC_SECOND;
	d.opt.heartbeat_s = 30;
	log_init("egretd", LOG_LVL_INFO);
	err = parse_options(argc, argv, &d.opt);
	if (err)
		return err;
	if (d.opt.verbose)
		log_set_level(LOG_LVL_DEBUG);
	d.started_ns = now_ns(CLOCK_MONOTONIC);
	if (check_files(&d) || setup_instance(&d))
		return 1;
	err = loop__init(&d.loop);
	if (!err)
		err = setup_signals(&d);
	if (!err)
		err = setup_enforcement(&d);
	if (err) {
		keeper__resume_old(d.old_keeper);
		engine__free(&d.engine);
		loader__close(&d.loader);
		return 1;
	}
	err = setup_pipeline(&d);
	if (!err)
		err = setup_dns(&d);
	if (!err)
		err = setup_control(&d);
	if (err) {
		snprintf(d.stop_reason, sizeof(d.stop_reason), "setup failed: %s", strerror(-err));
		keeper__resume_old(d.old_keeper);
		shutdown_daemon(&d);
		return 1;
	}
	setup_keeper(&d);
	emit_agent(&d, EGRET__V1__AGENT_LIFECYCLE__KIND__KIND_START);
	engine__announce(&d.engine);
	/* what execs and moves will never show: privileged processes already in sandboxes */
	if (d.opt.loader.require_unpriv || d.engine.pol.require_unpriv)
		confine__scan_privileged(&d.collector.ctx, d.paths.cgroup_root,
					 loader__map_fd(&d.loader, "task_sandbox"),
					 d.engine.pol.mode == POLICY_ENFORCE);
	setup_selfwatch(&d);
	snprintf(ready, sizeof(ready), "READY=1\nMAINPID=%d\nSTATUS=enforcing on %s", getpid(),
		 d.paths.cgroup_root);
	notify__send(ready);
	log_info("ready: events to %s, control on %s", d.opt.sinks[0], d.paths.control);
	run(&d);
	log_info("stopping (%s)%s", d.stop_reason,
		 d.uninstalled ? "" : "; enforcement stays attached");
	shutdown_daemon(&d);
	return d.uninstalled ? EGRETD_EXIT_UNINSTALLED : 0;
}
