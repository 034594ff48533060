/* Loading egret's BPF objects, attaching them to the root cgroup through pinned BPF links, and
 * adopting the links and maps a previous egretd left pinned, without a moment in which the
 * sandboxes are unprotected. Also the checks egretctl makes before it runs anything.
 */
#ifndef EGRET_LOADER_H
#define EGRET_LOADER_H

#include <stdbool.h>
#include <bpf/bpf.h>

#include "kfeatures.h"
#include "paths.h"

#include <linux/types.h>

#include "egret/events.h"
#include "egret/audit.h"
#include "egret/confine.h"

#define LOADER_MAX_UNITS 8
#define LOADER_MAX_MAPS	 48
#define LOADER_MAX_PROGS 128

/* A link egret makes, of which program, and how: egretctl checks exactly these, read from the
 * objects. A program has a link of its own name; one attached to more tracepoints has one more
 * link for each, of the name in the loader's table (user/kernel/loader.c, also_attach).
 */
struct egret_prog_spec {
	char name[16]; /* the link's, pinned as links/<name>; a program's own: its name */
	char prog[16]; /* the program's (the kernel keeps 15 characters of it) */
	char tp[48];   /* "category/name": a tracepoint not the program's own section's */
	enum bpf_attach_type attach_type;
	bool cgroup; /* attached to the root cgroup (else: a tracepoint, or a device's) */
	bool device; /* tc, on sandboxes' own devices (user/net/devices.c), not by the loader */
};

/* Load-time configuration of the objects (their .rodata), and which optional programs load. */
struct loader_config {
	bool audit_host;	 /* --audit-scope host */
	bool kill_cross_signals; /* --kill-cross-signals */
	unsigned int npatterns;
	struct egret_pattern patterns[EGRET_PATTERNS_MAX];
	char pattern_text[EGRET_PATTERNS_MAX][EGRET_PATTERN_LEN]; /* as given, for the self-test */
	const struct kernel_features *kf; /* NULL: as on a kernel that has everything */
	bool require_unpriv;		  /* --require-unprivileged */
	unsigned int ntrusted_movers;	  /* --trusted-mover: v2 cgroup ids and levels */
	uint64_t trusted_mover_id[EGRET_TRUSTED_MOVERS_MAX];
	uint32_t trusted_mover_level[EGRET_TRUSTED_MOVERS_MAX];
	__u32 compat_mode; /* --compat: enum egret_compat_mode */
	unsigned int
		file_budget; /* --file-budget: file records a second per sandbox, 0: no limit */
};

/* The programs of the objects, in order (egretctl's checks read the same table). */
struct loader_specs {
	unsigned int n;
	struct egret_prog_spec spec[LOADER_MAX_PROGS];
};

/* The programs of every object, read from the objects opened (not loaded); 0 or -errno. */
int loader__specs(struct loader_specs *out);

/* The maps of the objects, each under the first object that declares it (the later ones share
 * its map). struct loader_maps has a field of each name, filled from the skeleton's member of
 * that name, so a map renamed in bpf/ breaks the build here instead of a lookup at run time.
 */
/* clang-format off */
#define LOADER_EGRESS_MAPS(X)                                                                \
	X(events) X(counters) X(sock_meta) X(policy_v1) X(sandboxes) X(sandbox_rules)        \
	X(sandbox_meta) X(dns_listeners) X(dns_clients) X(dns_client_gen) X(dns_allow) X(sock_flows)            \
	X(netns_reported) X(losses) X(losses_reported) X(exec_lost) X(exec_lost_n) X(devices) X(dev_nat) X(dev_listeners) X(dev_frags) X(dev_reported) \
	X(egress_budgets) X(egress_budget_n)
#define LOADER_CONFINE_MAPS(X)                                                               \
	X(task_sandbox) X(sandbox_pids) X(protected_tgids) X(doomed) X(compat_seen)          \
	X(socketcall_fam) X(signal_senders)
#define LOADER_AUDIT_MAPS(X)                                                                 \
	X(match_state) X(selftest) X(path_scratch) X(task_info) X(exec_seq) X(exec_scratch)  \
	X(bulk_events) X(file_budgets) X(env_programs)
/* clang-format on */
#define LOADER_MAPS(X) LOADER_EGRESS_MAPS(X) LOADER_CONFINE_MAPS(X) LOADER_AUDIT_MAPS(X)

/* egretd's handles of the maps, by name: -ENOENT until the object that has it is loaded */
struct loader_maps {
#define LOADER_MAP_FIELD(name) int name;
	LOADER_MAPS(LOADER_MAP_FIELD)
#undef LOADER_MAP_FIELD
};

/* a map's name, as its pin under <state>/maps has it, checked against struct loader_maps */
#define LOADER_MAP_NAME(name) ((void)sizeof(((struct loader_maps *)0)->name), #name)

struct bpf_object;
struct loader_unit_ops;

/* One BPF object: its skeleton, and whether bpf_object__load() refused it. */
struct loader_unit {
	const struct loader_unit_ops *ops;
	void *skel;
	struct bpf_object *obj;
	bool load_failed;
};

enum map_origin {
	MAP_NEW,      /* created by this load */
	MAP_REUSED,   /* adopted from its pin */
	MAP_REPLACED, /* its pin held an incompatible map; swapped after the programs switch */
};

/* Every map of the objects (but .rodata/.bss), by the name libbpf gives it: what is shared
 * between the objects and pinned.
 */
struct loader_map {
	char name[32];
	int fd;
	enum map_origin origin;
};

struct loader {
	const struct egret_paths *paths;
	const struct loader_config *cfg;
	int cgroup_fd;
	struct loader_specs specs;
	unsigned int nunits;
	struct loader_unit units[LOADER_MAX_UNITS];
	struct loader_maps maps;
	unsigned int nshared;
	struct loader_map shared[LOADER_MAX_MAPS];
	unsigned int nlinks;
	int link_fds[LOADER_MAX_PROGS];
	unsigned int attached; /* programs in force */
	unsigned int adopted;  /* of those, pinned links updated in place */
	char *load_log;	       /* while loading: a program's verifier log */
	char *load_msgs;       /* and libbpf's messages about it */
};

/* egretd */
int loader__open(struct loader *l, const struct egret_paths *paths,
		 const struct loader_config *cfg);
int loader__load(struct loader *l);
int loader__attach(struct loader *l);
int loader__prog_fd(const struct loader *l, const char *name);
void loader__release_links(struct loader *l);
void loader__close(struct loader *l);
/* why a program did not load, in one line, from its verifier log and libbpf's messages */
void loader__explain(const char *vlog, const char *msgs, char *out, size_t size);

/* egretctl */
int loader__check(const struct egret_paths *paths, char *missing, size_t size);
unsigned int loader__nexpected(const struct egret_paths *paths);
int loader__uninstall(const struct egret_paths *paths);
int loader__pinned_map(const struct egret_paths *paths, const char *name);

#endif /* EGRET_LOADER_H */
