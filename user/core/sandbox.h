/* Sandbox names: validation, generated names, creating and removing a sandbox's cgroup, the
 * cgroup id -> name table egretd uses to label events, what a runtime's registration says of a
 * container sandbox (its meta) and which policy blocks select it, and the confinement egretctl
 * run gives a sandbox's command (its spec), which egretctl sends egretd when it registers the
 * sandbox.
 */
#ifndef EGRET_SANDBOX_H
#define EGRET_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "htab.h"

#define SANDBOX_NAME_MAX       255 /* a cgroup directory name (NAME_MAX) */
#define SANDBOX_LABELS_MAX     64
#define SANDBOX_META_WORDS_MAX 4096 /* bytes of a registration's words (EGRET_SANDBOX_META_LEN) */
#define SANDBOX_SELECTOR_MAX   320  /* "label KEY=VALUE" */

bool sandbox__valid_name(const char *name);
void sandbox__generate_name(char *out, size_t size);
uint64_t sandbox__name_hash(const char *name);
int sandbox__create(const char *root, const char *name, bool *created);
int sandbox__remove(const char *root, const char *name, unsigned int wait_ms);

/* What a registration (egretctl oci-hook, a runtime's createRuntime hook) says of a sandbox
 * besides its cgroup: the container in it and its pod, where known. The registration is a list
 * of KEY=VALUE words, keyed by OpenTelemetry's attribute names; egretd keeps them as they came
 * (pinned, so a restarted egretd knows its containers) and every string here points into them.
 */
struct sandbox_meta {
	char *words; /* NUL-separated KEY=VALUE words */
	size_t len;
	const char *name;	    /* "name": the sandbox's name */
	const char *cgroup;	    /* "cgroup": its v2 path as /proc/PID/cgroup gives it */
	const char *container_id;   /* "container.id", in full */
	const char *container_name; /* "container.name" */
	const char *image;	    /* "container.image.name", as the runtime has it */
	const char *runtime;	    /* "container.runtime.name": runc, podman, docker... */
	const char *pod_name;	    /* "k8s.pod.name" */
	const char *pod_namespace;  /* "k8s.namespace.name" */
	const char *pod_uid;	    /* "k8s.pod.uid" */
	const char *k8s_container;  /* "k8s.container.name" */
	const char *labels[SANDBOX_LABELS_MAX]; /* "label.KEY=VALUE" words, past "label." */
	unsigned int nlabels;
	bool exempt; /* "exempt=1": the cgroup is the host's, not a sandbox (egretd's own pod) */
};

/* words (len bytes of NUL-terminated KEY=VALUE words, the last NUL included) into m, copied:
 * 0, or -EINVAL naming the word in err (an unknown key, a key twice, a value that is not
 * printable UTF-8 without control characters, a bad name), -E2BIG, -ENOMEM.
 */
int sandbox_meta__parse(struct sandbox_meta *m, const char *words, size_t len, char *err,
			size_t errsz);
void sandbox_meta__free(struct sandbox_meta *m);
/* A value a registration may carry: valid UTF-8 without control characters. */
bool sandbox__value_ok(const char *v);
/* the value of label KEY, NULL when it has none */
const char *sandbox_meta__label(const struct sandbox_meta *m, const char *key);
/* A sandbox name a registration may give: 1-255 printable ASCII characters but space, '{',
 * '}', '#', '=' and '*' (container names, and "NAMESPACE/POD/CONTAINER" for a pod's).
 */
bool sandbox__valid_registered_name(const char *name);

struct sandbox_entry {
	uint64_t id;	/* the key: first */
	uint32_t flags; /* the owner's state of the sandbox (engine.c: rules installed) */
	char name[SANDBOX_NAME_MAX + 1];
	struct sandbox_meta *meta; /* a registered container's, or NULL (the owner frees it) */
	/* the owner's, CLOCK_BOOTTIME ns (0: unknown, none): when its cgroup was made; when its
	 * timeout ends and from when it counts (the policy's or a run's, whichever ends first);
	 * the end and start of a run's own timeout
	 */
	uint64_t born_ns, deadline_ns, deadline_from_ns, run_deadline_ns, run_from_ns;
	uint64_t high_count;  /* the owner's: memory.events "high" when it last looked */
	uint64_t cpu_stat[3]; /* the owner's: cpu.stat's periods, throttled and throttled ns */
};

/* A policy block's selector (policy.h: 'sandbox SELECTOR {'), from the words between
 * "sandbox" and "{": a sandbox NAME; container=NAME, image=REF, k8s-namespace=NS,
 * k8s-pod=NAME (values may hold '*' for any characters); or "label" "KEY=VALUE". Written to
 * out in its one canonical form ("label KEY=VALUE" with one space); -EINVAL with err.
 */
int sandbox__parse_selector(char *const words[], int n, char *out, size_t size, char *err,
			    size_t errsz);
/* The same from one string ("image=python:*", "label app=agent"), as egretctl's --sandbox. */
int sandbox__parse_selector_text(const char *text, char *out, size_t size, char *err, size_t errsz);
/* Does the canonical selector choose sandbox name (with meta, or NULL)? A NAME selector only
 * by name; the others only a registered container's meta. An image reference matches in
 * Docker's normal form too (python:3.12 is docker.io/library/python:3.12).
 */
bool sandbox__selects(const char *selector, const char *name, const struct sandbox_meta *meta);
/* Whether a selector is a plain sandbox name (which the kernel's mkdir check knows). */
bool sandbox__selector_is_name(const char *selector);

struct sandbox_names {
	char root[4096];
	struct htab tab; /* of struct sandbox_entry */
	struct {
		uint64_t id, ns;
	} missed[8]; /* ids a lookup scanned for in vain lately, and when */
	unsigned int missed_next;
};

int sandbox_names__init(struct sandbox_names *t, const char *root);
const char *sandbox_names__lookup(struct sandbox_names *t, uint64_t id);
void sandbox_names__set(struct sandbox_names *t, uint64_t id, const char *name);
const char *sandbox_names__get(const struct sandbox_names *t, uint64_t id);
/* The entry of id without scanning, NULL when the table does not have it. */
struct sandbox_entry *sandbox_names__entry(const struct sandbox_names *t, uint64_t id);
/* Entry i of the table when it is used, for iterating: i < sandbox_names__slots(t). */
struct sandbox_entry *sandbox_names__at(const struct sandbox_names *t, size_t i);
#define sandbox_names__slots(t) ((t)->tab.cap)
void sandbox_names__del(struct sandbox_names *t, uint64_t id);
void sandbox_names__scan(struct sandbox_names *t);
void sandbox_names__free(struct sandbox_names *t);

/* The namespaces of its own a command egretctl run starts gets (sandbox_spec.ns). */
enum sandbox_ns {
	SANDBOX_NS_USER = 1 << 0,
	SANDBOX_NS_PID = 1 << 1,
	SANDBOX_NS_MOUNT = 1 << 2,
	SANDBOX_NS_IPC = 1 << 3,
	SANDBOX_NS_UTS = 1 << 4,
	SANDBOX_NS_CGROUP = 1 << 5,
	SANDBOX_NS_NET = 1 << 6,
};
#define SANDBOX_NS_ALL 0x7fu
#define SANDBOX_NS_DEFAULT \
	(SANDBOX_NS_ALL & ~SANDBOX_NS_NET) /* the host's network: egret judges it */

/* What egretctl run gives a command; recorded in the sandbox's start event. */
struct sandbox_spec {
	unsigned int ns;   /* SANDBOX_NS_*: namespaces of its own */
	uint32_t uid, gid; /* SANDBOX_NS_USER: the host ids root inside maps to */
	uint32_t ids;	   /* SANDBOX_NS_USER: ids mapped from uid and gid on */
	bool seccomp;	   /* egret's seccomp profile (user/enforce/seccomp.c) */
	bool no_new_privs; /* PR_SET_NO_NEW_PRIVS */
	bool privileged;   /* --privileged: host root, host namespaces, no profile */
	bool user_given;   /* --user picked uid and gid */
};

#define SANDBOX_SPEC_WORDS 7 /* sandbox_spec__words() */
#define SANDBOX_SPEC_WORD  96

void sandbox_spec__default(struct sandbox_spec *s);
/* "pid,mount,net" (or "all") into SANDBOX_NS_* bits; -EINVAL naming an unknown one in *bad */
int sandbox_spec__parse_ns(const char *list, unsigned int *mask, const char **bad);
/* the names of mask's namespaces, comma-separated ("" for none) */
void sandbox_spec__ns_names(unsigned int mask, char *out, size_t size);
/* The spec as KEY=VALUE words for a prepare request, and one such word back into a spec. */
void sandbox_spec__words(const struct sandbox_spec *s, char words[][SANDBOX_SPEC_WORD]);
int sandbox_spec__parse_word(struct sandbox_spec *s, const char *word);

#endif /* EGRET_SANDBOX_H */
