/* egretctl run: a command in a sandbox, confined like a rootless container runtime confines
 * one (see run.c), egretctl staying outside as its parent and the supervisor of its seccomp
 * refusals.
 */
#ifndef EGRET_RUN_H
#define EGRET_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "paths.h"
#include "reslimit.h"
#include "sandbox.h"

/* exit statuses of `run`, as env(1) and timeout(1) use them */
#define EXIT_TIMEOUT	 124 /* --timeout ran out: the sandbox was killed */
#define EXIT_RUN_FAILED	 125
#define EXIT_CANNOT_EXEC 126
#define EXIT_NOT_FOUND	 127

/* What `run` was asked to do. */
struct run_opts {
	const char *name; /* the sandbox; NULL: generate one */
	uint64_t keep;	  /* --preserve-fds */
	bool quiet;
	struct sandbox_spec spec;
	struct limits limits; /* --memory, --cpus, --pids, --timeout */
	char **argv;	      /* the command */
	/* egretctl's own argv, which the sandbox's init overwrites so the sandbox does not read
	 * egret's paths in its /proc/1/cmdline
	 */
	char **self_argv;
	int self_argc;
};

/* Parse --user UID[:GID] into spec (never host uid 0): 0 or -EINVAL. */
int run__parse_user(const char *arg, struct sandbox_spec *spec);
/* Run it; the exit status egretctl ends with (or a signal it raises to end like the command). */
int run__sandboxed(struct egret_paths *p, struct run_opts *o);

#endif /* EGRET_RUN_H */
