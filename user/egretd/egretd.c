/* egretd: loads and attaches egret's BPF programs to the sandbox root cgroup (fail closed),
 * streams what they see as egret.v1 events to the sinks, and serves egretctl on the control
 * socket. Stopping egretd never removes enforcement: the links stay pinned. This file is main
 * (the steps of setup.c in order, released in reverse) and the main loop.
 */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "confine.h"
#include "dns.h"
#include "egretd.h"
#include "log.h"
#include "notify.h"
#include "util.h"

#define TICK_MS	     1000
#define DRAIN_MS     25 /* the kernel wakes egretd only when the ring fills; drain it this often */
#define RESCAN_TICKS 10 /* sandboxes whose cgroup event was lost are found within 10 s */

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
		devices__tick(&d->devices);
		now = now_ns(CLOCK_MONOTONIC);
		if (now >= next_tick) {
			if (++ticks % RESCAN_TICKS == 0)
				engine__rescan(&d->engine);
			if (d->opt.reload_on_change)
				engine__reload_if_changed(&d->engine);
			check_gap(d);
			collector__check_drops(&d->collector);
			control__expire(&d->control);
			stream__sync_clock(&d->stream);
			stream__tick(&d->stream);
			selfwatch__tick(&d->self);
			selfcg__check(&d->selfcg);
			keeper__tick(&d->keeper, d->loader.maps.signal_senders);
			pkg__tick(&d->pkg);
			engine__limits_tick(&d->engine);
			if (watchdog)
				notify__send("WATCHDOG=1");
			if (d->opt.heartbeat_s && now >= d->next_heartbeat_ns) {
				daemon__emit_heartbeat(d);
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

/* Set up: the keeper takes over, the start is announced, systemd told. */
static void start(struct daemon *d)
{
	char ready[PATH_MAX + 128];

	daemon__setup_keeper(d);
	daemon__emit_agent(d, EGRET__V1__AGENT_LIFECYCLE__KIND__KIND_START);
	engine__announce(&d->engine);
	/* what execs and moves will never show: privileged processes already in sandboxes */
	if (d->opt.loader.require_unpriv || d->engine.pol.require_unpriv)
		confine__scan_privileged(&d->collector.ctx, d->paths.cgroup_root,
					 d->loader.maps.task_sandbox,
					 d->engine.pol.mode == POLICY_ENFORCE);
	daemon__setup_selfwatch(d);
	snprintf(ready, sizeof(ready), "READY=1\nMAINPID=%d\nSTATUS=enforcing on %s", getpid(),
		 d->paths.cgroup_root);
	notify__send(ready);
	log_info("ready: events to %s, control on %s", d->opt.sinks[0], d->paths.control);
}

/* Before the pipeline closes: what the ring and the package tracker still hold, and the
 * agent's stop, out to the sinks.
 */
static void farewell(struct daemon *d)
{
	notify__send("STOPPING=1");
	if (d->rbw.fd > 0)
		collector__poll(&d->collector);
	pkg__flush(&d->pkg);
	if (d->stream.nsinks) {
		daemon__emit_agent(d, EGRET__V1__AGENT_LIFECYCLE__KIND__KIND_STOP);
		stream__drain(&d->stream, &d->loop);
	}
}

/* A step after enforcement failed: enforcement stays, the previous keeper resumes, and the
 * sinks already open hear why egretd stops.
 */
static void setup_failed(struct daemon *d, int err)
{
	snprintf(d->stop_reason, sizeof(d->stop_reason), "setup failed: %s", strerror(-err));
	keeper__resume_old(d->old_keeper);
	farewell(d);
}

int main(int argc, char **argv)
{
	static struct daemon d;
	int err, status = 1;

	log_init("egretd", LOG_LVL_INFO);
	err = options__parse(&d.opt, argc, argv);
	if (err) {
		status = err == OPTIONS_EXIT ? 0 : 2;
		goto out_options;
	}
	if (d.opt.verbose)
		log_set_level(LOG_LVL_DEBUG);
	d.started_ns = now_ns(CLOCK_MONOTONIC);
	if (daemon__check_files(&d) || daemon__lock_instance(&d))
		goto out_options; /* the locks stay taken until exit */
	if (loop__init(&d.loop))
		goto out_options;
	if (daemon__setup_signals(&d) || daemon__setup_enforcement(&d))
		goto out_loop;
	err = daemon__setup_pipeline(&d);
	if (err) {
		setup_failed(&d, err);
		goto out_pipeline;
	}
	err = daemon__setup_dns(&d);
	if (err) {
		setup_failed(&d, err);
		goto out_dns;
	}
	err = daemon__setup_control(&d);
	if (err) {
		setup_failed(&d, err);
		goto out_control;
	}
	start(&d);
	run(&d);
	log_info("stopping (%s)%s", d.stop_reason,
		 d.uninstalled ? "" : "; enforcement stays attached");
	status = d.uninstalled ? EGRETD_EXIT_UNINSTALLED : 0;
	farewell(&d);
	selfwatch__stop(&d.self, d.stop_reason);
	selfwatch__close(&d.self);
out_control:
	control__close(&d.control);
out_dns:
	devices__free(&d.devices);
	resolver__free(d.resolver);
out_pipeline:
	daemon__close_pipeline(&d);
	daemon__close_enforcement(&d);
out_loop:
	loop__close(&d.loop);
out_options:
	options__free(&d.opt);
	return status;
}
