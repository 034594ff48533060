/* egretd's start-up and shutdown, step by step: the instance's locks, enforcement (fail
 * closed), the event pipeline, the resolver, the control socket, the keeper and the downtime
 * record. main (egretd.c) calls the steps in order and releases them in reverse.
 */
#include <dirent.h>
#include <errno.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "cgroup.h"
#include "confine.h"
#include "decoders.h"
#include "dns.h"
#include "egretd.h"
#include "fileperm.h"
#include "lockfile.h"
#include "log.h"
#include "policy.h"
#include "selftest.h"
#include "taskseed.h"
#include "util.h"

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
 * and the directory made first (both harmless to an egretd already running on them). The locks
 * are held for egretd's life.
 */
int daemon__lock_instance(struct daemon *d)
{
	int err;

	err = paths__init(&d->paths, d->opt.cgroup, d->opt.state_dir, d->opt.control);
	if (err)
		return err;
	err = bpffs__ensure(d->paths.state_dir);
	if (err)
		return err;
	err = take_lock("state dir", d->paths.state_dir, NULL, 0, "--state-dir");
	if (err)
		return err;
	err = take_lock("spool", d->opt.spool, "/lock", 0700, "--spool");
	if (err)
		return err;
	return take_lock("control socket", d->paths.control, ".lock", 0755, "--control");
}

/* StrictModes (fileperm.h): a policy, live-rules file or spool that anyone but root could
 * write is refused before anything is touched.
 */
int daemon__check_files(const struct daemon *d)
{
	char err[FILEPERM_ERR_LEN];
	int ret;

	fileperm__trust(d->opt.trusted_dir);
	ret = fileperm__check_instance(d->opt.policy, d->opt.live_rules, d->opt.spool, err,
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
int daemon__protect_self(struct daemon *d)
{
	__u32 tgids[2] = { (__u32)getpid() };
	pid_t keeper = d->keeper.pid ? d->keeper.pid : d->old_keeper;
	int err;

	if (keeper > 0)
		tgids[1] = (__u32)keeper;
	err = confine__protect(d->loader.maps.protected_tgids, tgids, keeper > 0 ? 2 : 1);
	if (err)
		log_err("failed to write egretd's pid into protected_tgids: %s", strerror(-err));
	return err;
}

/* One --trusted-mover path into the cgroup v2 directory path, its level and id. */
static int trusted_mover(struct daemon *d, const char *arg, char *path, unsigned int *level,
			 uint64_t *id)
{
	int err;

	if (arg[0] == '/')
		err = snprintf(path, PATH_MAX, "%s", arg) >= PATH_MAX;
	else
		err = snprintf(path, PATH_MAX, "%s/%s", d->paths.cgroup_mount, arg) >= PATH_MAX;
	if (err)
		return -ENAMETOOLONG;
	err = cgroup__check_v2(path);
	if (err)
		return err;
	err = cgroup__level(d->paths.cgroup_mount, path, level);
	if (err)
		return err;
	return cgroup__id(path, id);
}

/* --trusted-mover paths -> the cgroup ids and levels the kernel compares writers with */
static int trusted_movers(struct daemon *d)
{
	struct loader_config *l = &d->opt.loader;

	for (unsigned int i = 0; i < d->opt.ntrusted_movers; i++) {
		const char *arg = d->opt.trusted_movers[i];
		char path[PATH_MAX];
		unsigned int level;
		int err = trusted_mover(d, arg, path, &level, &l->trusted_mover_id[i]);

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
	int n = confine__seed_pids(d->loader.maps.sandbox_pids, d->paths.cgroup_root);

	if (n < 0)
		log_err("failed to seed sandbox_pids from %s: %s", d->paths.cgroup_root,
			strerror(-n));
	else
		log_info("sandbox_pids: %d tasks already in sandboxes", n);
}

/* What enforcement needs before any program loads: the root cgroup, the trusted movers'
 * cgroups, tracefs, what this kernel offers.
 */
static int prepare_enforcement(struct daemon *d)
{
	int err = paths__create_root(&d->paths);

	if (!err)
		err = paths__layout(&d->paths, d->opt.attach, d->opt.watch, d->opt.nwatch);
	if (err)
		return err;
	selfcg__init(&d->selfcg, d->paths.cgroup_mount, d->paths.cgroup_root);
	err = trusted_movers(d);
	if (err)
		return err;
	err = tracefs__ensure();
	if (err)
		return err;
	d->opt.loader.kf = &d->kf;
	return kfeatures__probe(&d->kf, &d->opt.kernel);
}

static int env_program(void *ctx, const char *name)
{
	char key[EGRET_ENV_NAME_LEN] = { 0 };
	__u8 one = 1;

	str_copy(key, sizeof(key), name); /* the kernel's copy of a longer name is cut alike */
	if (bpf_map_update_elem(*(int *)ctx, key, &one, BPF_ANY)) {
		int err = -errno;

		log_err("cannot add %s to env_programs: %s", name, strerror(-err));
		return err;
	}
	return 0;
}

/* The programs loaded, the managers' execs told to carry their environment, and the path
 * matcher checked; loader__close undoes it, also part way.
 */
static int load_programs(struct daemon *d)
{
	int err;

	err = loader__open(&d->loader, &d->paths, &d->opt.loader);
	if (err)
		return err;
	err = loader__load(&d->loader);
	if (err)
		return err;
	err = pkgmeta__exec_names(env_program, &d->loader.maps.env_programs);
	if (err)
		return err;
	return selftest__path_matcher(loader__prog_fd(&d->loader, "egret_selftest"),
				      d->loader.maps.selftest, &d->opt.loader);
}

/* The rules in force, then the programs that read them attached, then what they must know of
 * the tasks already in sandboxes.
 */
static int arm_enforcement(struct daemon *d)
{
	int err;

	err = daemon__protect_self(d);
	if (err)
		return err;
	err = kfeatures__check_gaps(&d->kf, policy_enforces(d->opt.policy));
	d->engine.no_enforce = kfeatures__gap(&d->kf); /* nor later by a reload */
	if (err)
		return err;
	/* a rule set is in force before any program that reads it */
	err = engine__start(&d->engine);
	if (err)
		return err;
	engine__exempt_self(&d->engine);
	err = kfeatures__pin(&d->kf, &d->paths);
	if (err)
		return err;
	err = loader__attach(&d->loader);
	if (err)
		return err;
	engine__rescan(&d->engine);
	taskseed__run(&(struct taskseed){ d->loader.maps.task_sandbox, d->loader.maps.sandboxes,
					  &d->paths });
	if (!d->kf.task_from_pid)
		seed_pids(d);
	return 0;
}

/* Enforcement first: nothing else matters if it cannot be set up. On failure, what this step
 * opened is closed again and the previous egretd's keeper resumes.
 */
int daemon__setup_enforcement(struct daemon *d)
{
	int err;

	/* before any pin changes: the previous keeper would put back what this egretd replaces */
	d->old_keeper = keeper__quiesce_old(d->paths.state_dir);
	keeper__restore(d->paths.state_dir);
	err = prepare_enforcement(d);
	if (err)
		goto fail;
	err = load_programs(d);
	if (err)
		goto out_loader;
	err = engine__init(&d->engine, d->opt.policy, d->opt.live_rules, &d->paths,
			   &(struct engine_maps){ .outer_fd = d->loader.maps.policy_v1,
						  .sandboxes_fd = d->loader.maps.sandboxes,
						  .rule_names_fd = d->loader.maps.sandbox_rules,
						  .meta_fd = d->loader.maps.sandbox_meta,
						  .budgets_fd = d->loader.maps.egress_budgets,
						  .budget_n_fd = d->loader.maps.egress_budget_n });
	d->engine.spool_dir = d->opt.spool;
	if (err)
		goto out_engine;
	err = arm_enforcement(d);
	if (err)
		goto out_engine;
	log_info("%u programs in force on %s (%u adopted), pinned under %s", d->loader.attached,
		 d->paths.cgroup_root, d->loader.adopted, d->paths.state_dir);
	return 0;
out_engine:
	engine__free(&d->engine);
out_loader:
	loader__close(&d->loader);
fail:
	log_err("enforcement is not set up; exiting (whatever a previous egretd pinned under "
		"%s stays in force)",
		d->paths.state_dir[0] ? d->paths.state_dir : EGRET_DEFAULT_STATE_DIR);
	keeper__resume_old(d->old_keeper);
	return err;
}

/* egretd's handles on enforcement (and the keeper's copies); the pins keep it in force */
void daemon__close_enforcement(struct daemon *d)
{
	engine__free(&d->engine);
	keeper__close(&d->keeper);
	loader__close(&d->loader);
}

static void on_sandbox_created(void *ctx, uint64_t id, const char *name)
{
	struct daemon *d = ctx;

	engine__sandbox_seen(&d->engine, id, name, true);
}

static void on_sandbox_destroyed(void *ctx, uint64_t id)
{
	struct daemon *d = ctx;

	engine__sandbox_destroyed(&d->engine, id);
	if (d->resolver) {
		resolver__sandbox_gone(d->resolver, id);
		devices__sync(&d->devices);
	}
	pkg__set_sandbox_root(&d->pkg, id, -1);
}

/* A sandbox went: its TCP connects held go some time after (flows.h). An unregistered one's
 * sockets are the host's from now on; the cgroup record of a removed one told the collector
 * already, with the kernel's time (the first time counts).
 */
static void on_sandbox_gone(void *ctx, uint64_t id)
{
	struct daemon *d = ctx;

	flow_starts__sandbox_gone(&d->collector.ctx.flows, id, now_ns(CLOCK_BOOTTIME));
}

static const char *on_rule_text(void *ctx, uint32_t id, char *buf, size_t size)
{
	struct daemon *d = ctx;

	return engine__rule_text(&d->engine, id, buf, size);
}

static void on_netns_seen(void *ctx, uint64_t cookie, uint32_t pid, uint64_t sandbox)
{
	struct daemon *d = ctx;

	if (d->resolver) {
		resolver__netns_seen(d->resolver, cookie, pid, sandbox);
		devices__sync(&d->devices); /* the namespace's veth, if it has one */
	}
}

static void on_observe(void *ctx, const Egret__V1__Event *ev, const struct env_block *env)
{
	struct daemon *d = ctx;

	pkg__observe(&d->pkg, ev, env);
	/* a sandbox pulled egretd into its cgroup: back home at once */
	if (ev->payload_case == EGRET__V1__EVENT__PAYLOAD_TAMPER &&
	    ev->tamper->kind == EGRET__V1__TAMPER__KIND__KIND_CGROUP_PULL &&
	    ev->tamper->other_pid == (uint32_t)getpid())
		selfcg__check(&d->selfcg);
}

static void on_ringbuf(struct watch *w, uint32_t events)
{
	struct daemon *d = w->data;

	collector__poll(&d->collector);
}

/* The package tracker's events name the sandbox as every other event does: with its container. */
static const Egret__V1__Sandbox *pkg_sandbox(void *ctx, uint64_t id, const char *name)
{
	static struct sandbox_pb pb;
	struct daemon *d = ctx;
	const struct sandbox_entry *s = engine__sandbox(&d->engine, id);

	sandbox_pb__fill(&pb, id, s ? s->name : name, s ? s->meta : NULL);
	return &pb.sb;
}

/* A process in cgroup dir (or below it, depth levels at most) whose mount namespace is mnt_ns. */
static uint32_t ns_member_in(const char *dir, uint32_t mnt_ns, unsigned int depth)
{
	char path[PATH_MAX], line[32];
	struct dirent *de;
	uint32_t found = 0;
	struct stat st;
	FILE *f;
	DIR *d;

	if (snprintf(path, sizeof(path), "%s/cgroup.procs", dir) >= (int)sizeof(path))
		return 0;
	f = fopen(path, "re");
	while (f && !found && fgets(line, sizeof(line), f)) {
		uint32_t pid = (uint32_t)strtoul(line, NULL, 10);

		snprintf(path, sizeof(path), "/proc/%u/ns/mnt", pid);
		if (pid && stat(path, &st) == 0 && st.st_ino == mnt_ns)
			found = pid;
	}
	if (f)
		fclose(f);
	d = found || !depth ? NULL : opendir(dir);
	while (d && !found && (de = readdir(d))) {
		if (de->d_type != DT_DIR || de->d_name[0] == '.')
			continue;
		if (snprintf(path, sizeof(path), "%s/%s", dir, de->d_name) < (int)sizeof(path))
			found = ns_member_in(path, mnt_ns, depth - 1);
	}
	if (d)
		closedir(d);
	return found;
}

static uint32_t pkg_ns_member(void *ctx, uint64_t id, uint32_t mnt_ns)
{
	struct daemon *d = ctx;
	char dir[PATH_MAX];

	if (engine__sandbox_path(&d->engine, id, dir, sizeof(dir)))
		return 0;
	return ns_member_in(dir, mnt_ns, 8);
}

/* The spool, the sinks, the collector on the ring buffer, the package tracker. Part way set up
 * is closed like whole (daemon__close_pipeline).
 */
int daemon__setup_pipeline(struct daemon *d)
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
	err = collector__init(&d->collector, &d->stream, &d->engine.reg, &d->loader.maps);
	if (err)
		return err;
	err = decoders__register(&d->collector);
	if (err)
		return err;
	d->collector.ctx.flows.max = d->opt.max_tcp_flows;
	d->collector.ctx.flows.max_per = d->opt.max_tcp_flows_per_sandbox;
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
	d->pkg.sandbox_pb = pkg_sandbox;
	d->pkg.ns_member = pkg_ns_member;
	d->pkg.sandbox_ctx = d;
	d->pkg.redact = redact__cb; /* registries, sources: secrets in URLs and .npmrc */
	d->pkg.redact_ctx = &d->opt.redact;
	d->engine.stream = &d->stream;
	d->engine.sandbox_gone = on_sandbox_gone;
	d->engine.sandbox_gone_ctx = d;
	d->rbw = (struct watch){ .fd = collector__fd(&d->collector), .fn = on_ringbuf, .data = d };
	return loop__add(&d->loop, &d->rbw, EPOLLIN);
}

void daemon__close_pipeline(struct daemon *d)
{
	if (d->rbw.fd > 0)
		collector__free(&d->collector);
	proc_cache__free(&d->procs);
	pkg__free(&d->pkg);
	stream__free(&d->stream);
}

/* The resolver: a DNS egret cannot serve is a setup failure like any other. A resolver made
 * stays in d->resolver for resolver__free, also when listening failed.
 */
int daemon__setup_dns(struct daemon *d)
{
	struct dns_maps m = {
		.listeners_fd = d->loader.maps.dns_listeners,
		.clients_fd = d->loader.maps.dns_clients,
		.client_gen_fd = d->loader.maps.dns_client_gen,
		.allow_fd = d->loader.maps.dns_allow,
		.dev_nat_fd = d->loader.maps.dev_nat,
		.dev_listeners_fd = d->loader.maps.dev_listeners,
	};
	int err = resolver__new(&d->resolver, &d->opt.dns, &m, &d->loop, &d->engine);

	if (err)
		return err;
	resolver__set_stream(d->resolver, &d->stream);
	err = resolver__listen_here(d->resolver);
	if (err)
		return err;
	resolver__scan(d->resolver, d->paths.cgroup_root);
	err = devices__init(&d->devices, &d->loop, &d->engine, d->resolver, d->loader.maps.devices,
			    loader__prog_fd(&d->loader, "egret_dev_out"),
			    loader__prog_fd(&d->loader, "egret_dev_in"));
	if (err) {
		log_err("sandboxes' network devices cannot be judged: %s", strerror(-err));
		return err;
	}
	devices__sync(&d->devices);
	return 0;
}

static bool peer_in_sandbox(const void *ctx, const char *cgroup)
{
	return engine__cgroup_in_sandbox(ctx, cgroup);
}

struct peer_scope daemon__peer_scope(const struct daemon *d)
{
	return (struct peer_scope){ .cgroup_mount = d->paths.cgroup_mount,
				    .cgroup_root = d->paths.cgroup_root,
				    .in_sandbox = peer_in_sandbox,
				    .ctx = &d->engine };
}

/* The control socket; control__close undoes it, also part way. */
int daemon__setup_control(struct daemon *d)
{
	struct control *c = &d->control;

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
	c->in_sandbox = peer_in_sandbox;
	c->in_sandbox_ctx = &d->engine;
	c->cmds = daemon_cmds;
	c->ncmds = daemon_ncmds;
	c->ctx = d;
	return control__listen(c, &d->loop, d->paths.control);
}

static void on_keeper_started(void *ctx, pid_t pid)
{
	daemon__protect_self(ctx);
}

/* A keeper holds every pin from now on; the previous egretd's, if any, goes. Without one,
 * egretd still runs (its own fds and the pins hold enforcement), and says so.
 */
void daemon__setup_keeper(struct daemon *d)
{
	d->keeper.on_removed = daemon__pin_removed;
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

/* The gap since the previous egretd, if it left an alive record: a Loss event. */
void daemon__setup_selfwatch(struct daemon *d)
{
	struct selfwatch_gap g;

	if (selfwatch__open(&d->self, &d->stream, d->opt.spool))
		return; /* logged; gaps go unreported, nothing else changes */
	if (selfwatch__downtime(&d->self, &g))
		collector__report_gap(&d->collector, g.start_unix_ns, g.duration_ns, g.rebooted,
				      g.cause);
}
