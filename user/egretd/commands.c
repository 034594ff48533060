/* The requests egretd serves on the control socket (egretctl's commands): each handler replies
 * through control__out/control__err and returns 0 or -errno; exit_status turns that into the
 * status egretctl exits with.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit.h"
#include "confine.h"
#include "dns.h"
#include "egretd.h"
#include "pbjson.h"
#include "util.h"

/* The one place a handler's result becomes the exit status sent back: 0; 2 for a request that
 * is malformed (-EINVAL: usage); 1 for one that failed (any other -errno).
 */
static int exit_status(int err)
{
	return !err ? 0 : err == -EINVAL ? 2 : 1;
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
	const struct flow_starts *fl = &d->collector.ctx.flows;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return -ENOMEM;
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
	fprintf(f, "],\"programs\":{\"in_force\":%u,\"adopted\":%u},", d->loader.attached,
		d->loader.adopted);
	fprintf(f,
		"\"tcp_flows\":{\"open\":%zu,\"joined\":%llu,\"start_unknown\":%llu,"
		"\"over_sandbox_bound\":%llu,\"not_held\":%llu,\"made_before_gone\":%llu,"
		"\"forgotten\":%llu,\"not_a_sandbox\":%llu}}\n",
		fl->h.used, (unsigned long long)fl->joined, (unsigned long long)fl->unjoined,
		(unsigned long long)fl->over_quota, (unsigned long long)fl->not_held,
		(unsigned long long)fl->gone_before, (unsigned long long)fl->forgotten,
		(unsigned long long)fl->foreign);
	fclose(f);
	control__out(r, "%s", buf);
	free(buf);
	return 0;
}

/* TCP flows whose connect egretd holds, to fill in their flow records (events/flows.h) */
static void flows_status(const struct flow_starts *f, struct control_req *r)
{
	control__out(r,
		     "tcp flows: %zu open, %llu closed and joined to their connect, %llu with "
		     "their start unknown, %llu connects not held (%llu at a sandbox's bound of "
		     "%u, %llu at the bound of %u for all, %llu made before their sandbox went), "
		     "%llu forgotten with their sandbox, %llu closes of sockets in no sandbox "
		     "dropped\n",
		     f->h.used, (unsigned long long)f->joined, (unsigned long long)f->unjoined,
		     (unsigned long long)(f->over_quota + f->not_held + f->gone_before),
		     (unsigned long long)f->over_quota, f->max_per, (unsigned long long)f->not_held,
		     f->max, (unsigned long long)f->gone_before, (unsigned long long)f->forgotten,
		     (unsigned long long)f->foreign);
}

static int do_status(void *ctx, struct control_req *r)
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
	devices__status(&d->devices, r);
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
	flows_status(&d->collector.ctx.flows, r);
	control__status(&d->control, r);
	collector__format_counters(d->loader.maps.counters, counters, sizeof(counters));
	control__out(r, "%s", counters);
	return 0;
}

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
static int do_prepare(void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;
	int rc = engine__cmd_prepare(&d->engine, r);

	if (!rc && r->argc > 2)
		list_protected(d, r);
	return rc;
}

/* egretctl run refused a system call of a sandboxed process: a Tamper event. */
static int do_seccomp(void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;

	return confine__cmd_seccomp(&d->collector.ctx, r);
}

/* egretctl run's sandbox hit a limit no tracepoint shows (timeout, CPU throttling). */
static int do_limit(void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;

	return audit__cmd_limit(&d->collector.ctx, r);
}

/* egretctl uninstall: root outside every sandbox only. The keeper lets go, every link is
 * detached and unpinned, egretd's own handles are closed (tracepoint links end with the last),
 * and egretd exits with a status that keeps systemd from starting it again.
 */
static int do_uninstall(void *ctx, struct control_req *r)
{
	struct daemon *d = ctx;
	int err;

	if (r->peer.uid != 0 || r->place != PEER_HOST) {
		control__err(r, "uninstall: only root outside every sandbox may remove egret's "
				"enforcement\n");
		return -EPERM;
	}
	keeper__stop(&d->keeper);
	keeper__unstore(&d->keeper);
	keeper__close(&d->keeper);
	devices__uninstall(&d->devices); /* no look puts a filter back before egretd exits */
	err = loader__uninstall(&d->paths);
	loader__release_links(&d->loader);
	d->uninstalled = true;
	d->loop.stop = true;
	snprintf(d->stop_reason, sizeof(d->stop_reason), "uninstalled by pid %d", (int)r->peer.pid);
	if (err) {
		control__err(r, "uninstall from %s incomplete: %s\n", d->paths.state_dir,
			     strerror(-err));
		return -EIO; /* said why: the status is all that is left */
	}
	control__out(r,
		     "egret enforcement removed from %s (pins under %s deleted); sandboxes are no "
		     "longer protected\n",
		     d->paths.cgroup_root, d->paths.state_dir);
	return 0;
}

#define ENGINE_CMD(name)                                       \
	static int do_##name(void *ctx, struct control_req *r) \
	{                                                      \
		struct daemon *d = ctx;                        \
                                                               \
		return engine__cmd_##name(&d->engine, r);      \
	}
ENGINE_CMD(allow)
ENGINE_CMD(deny)
ENGINE_CMD(revoke)
ENGINE_CMD(list)
ENGINE_CMD(reload)

/* the control module's handler for a verb: do_VERB, its result as an exit status */
#define COMMAND(verb)                                           \
	static int cmd_##verb(void *ctx, struct control_req *r) \
	{                                                       \
		return exit_status(do_##verb(ctx, r));          \
	}
COMMAND(status)
COMMAND(allow)
COMMAND(deny)
COMMAND(revoke)
COMMAND(list)
COMMAND(reload)
COMMAND(prepare)
COMMAND(seccomp)
COMMAND(limit)
COMMAND(uninstall)

static int do_register(void *ctx, struct control_req *r)
{
	return daemon__cmd_register(ctx, r);
}

static int do_unregister(void *ctx, struct control_req *r)
{
	return daemon__cmd_unregister(ctx, r);
}

COMMAND(register)
COMMAND(unregister)

const struct control_cmd daemon_cmds[] = {
	{ "status", cmd_status },     { "allow", cmd_allow },
	{ "deny", cmd_deny },	      { "revoke", cmd_revoke },
	{ "list", cmd_list },	      { "reload", cmd_reload },
	{ "prepare", cmd_prepare },   { "seccomp", cmd_seccomp },
	{ "limit", cmd_limit },	      { "uninstall", cmd_uninstall },
	{ "register", cmd_register }, { "unregister", cmd_unregister },
};
const size_t daemon_ncmds = ARRAY_SIZE(daemon_cmds);
