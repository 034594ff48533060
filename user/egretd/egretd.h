/* egretd's state, shared by its files: start-up and shutdown (setup.c), the control commands it
 * serves (commands.c), signals (signals.c), its own events (agent.c) and the main loop
 * (egretd.c).
 */
#ifndef EGRET_EGRETD_H
#define EGRET_EGRETD_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "collector.h"
#include "control.h"
#include "devices.h"
#include "engine.h"
#include "keeper.h"
#include "kfeatures.h"
#include "loader.h"
#include "loop.h"
#include "options.h"
#include "paths.h"
#include "pkg.h"
#include "proc.h"
#include "selfcg.h"
#include "selfwatch.h"
#include "sink.h"
#include "stream.h"

struct resolver;

struct daemon {
	struct options opt;
	struct egret_paths paths;
	struct kernel_features kf; /* what this kernel offers, probed at start */
	struct loader loader;
	struct engine engine;
	struct resolver *resolver;
	struct devices devices; /* sandboxes' own network devices */
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

/* setup.c: each step 0 or -errno (logged); the matching release is safe after its step failed
 * part way
 */
int daemon__check_files(const struct daemon *d);
int daemon__lock_instance(struct daemon *d);
int daemon__setup_enforcement(struct daemon *d); /* undoes itself when it fails */
void daemon__close_enforcement(struct daemon *d);
int daemon__setup_pipeline(struct daemon *d);
void daemon__close_pipeline(struct daemon *d);
int daemon__setup_dns(struct daemon *d);
int daemon__setup_control(struct daemon *d);
void daemon__setup_keeper(struct daemon *d);
void daemon__setup_selfwatch(struct daemon *d);
int daemon__protect_self(struct daemon *d);

/* signals.c */
int daemon__setup_signals(struct daemon *d);

/* commands.c: what egretd serves on the control socket */
/* How the control socket's and signals' peers are placed: in a sandbox (registered anywhere,
 * or below a watched cgroup) or the host (setup.c).
 */
struct peer_scope daemon__peer_scope(const struct daemon *d);

/* register.c: container runtimes' registrations (egretctl oci-hook) */
int daemon__cmd_register(void *ctx, struct control_req *r);
int daemon__cmd_unregister(void *ctx, struct control_req *r);

extern const struct control_cmd daemon_cmds[];
extern const size_t daemon_ncmds;

/* agent.c: egretd's own events */
void daemon__emit_agent(struct daemon *d, Egret__V1__AgentLifecycle__Kind kind);
void daemon__emit_heartbeat(struct daemon *d);
void daemon__pin_removed(void *ctx, const char *path);

#endif /* EGRET_EGRETD_H */
