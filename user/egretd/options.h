/* egretd's command line: every option once, in one table (options.c) that yields the
 * getopt_long parser, the defaults and --help.
 */
#ifndef EGRET_EGRETD_OPTIONS_H
#define EGRET_EGRETD_OPTIONS_H

#include <stdbool.h>
#include <stdint.h>

#include "dns.h"
#include "kfeatures.h"
#include "loader.h"
#include "redact.h"
#include "sink.h"
#include "spool.h"
#include "stream.h"

#define MAX_SINKS STREAM_MAX_SINKS

struct options {
	const char *policy;
	const char *live_rules;
	bool reload_on_change;
	const char *trusted_dir;
	const char *cgroup;
	const char *attach;
	const char *watch[7];
	unsigned int nwatch;
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
	unsigned int max_tcp_flows; /* --max-tcp-flows: open TCP flows whose starter egretd holds */
	unsigned int max_tcp_flows_per_sandbox; /* --max-tcp-flows-per-sandbox */
	struct dns_options dns;
	struct loader_config loader;
	struct redactor redact;
	struct feature_options kernel; /* --accept-kernel-gap, --without-kernel-feature */
	const char *trusted_movers[EGRET_TRUSTED_MOVERS_MAX];
	unsigned int ntrusted_movers;
	bool verbose;
};

#define OPTIONS_EXIT 1 /* options__parse printed --help or --version: exit 0 */

/* argv into o, the table's defaults for what is not given: 0, OPTIONS_EXIT, or -EINVAL after
 * a one-line error naming the option and the value. Call options__free after any return.
 */
int options__parse(struct options *o, int argc, char **argv);
void options__free(struct options *o);

#endif /* EGRET_EGRETD_OPTIONS_H */
