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

/* A program egret attaches, and how: egretctl checks exactly these, read from the objects. */
struct egret_prog_spec {
	char name[16]; /* the kernel keeps 15 characters of a program's name */
	enum bpf_attach_type attach_type;
	bool cgroup; /* attached to the root cgroup (else: a tracepoint) */
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
};

int loader__specs(const struct egret_prog_spec **specs, unsigned int *n);
unsigned int loader__nprogs(void);

struct loader_unit;

enum map_origin {
	MAP_NEW,      /* created by this load */
	MAP_REUSED,   /* adopted from its pin */
	MAP_REPLACED, /* its pin held an incompatible map; swapped after the programs switch */
};

struct loader_map {
	char name[32];
	int fd;
	enum map_origin origin;
};

struct loader {
	const struct egret_paths *paths;
	const struct loader_config *cfg;
	int cgroup_fd;
	unsigned int nunits;
	struct loader_unit *units[LOADER_MAX_UNITS];
	unsigned int nmaps;
	struct loader_map maps[LOADER_MAX_MAPS];
	unsigned int nlinks;
	int link_fds[LOADER_MAX_PROGS];
	unsigned int attached; /* programs in force */
	unsigned int adopted;  /* of those, pinned links updated in place */
};

/* egretd */
int loader__open(struct loader *l, const struct egret_paths *paths,
		 const struct loader_config *cfg);
int loader__load(struct loader *l);
int loader__attach(struct loader *l);
int loader__map_fd(const struct loader *l, const char *name);
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
