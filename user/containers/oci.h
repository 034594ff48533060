/* What egretctl oci-hook learns of a container when its runtime runs the hook: the OCI state
 * on stdin, the bundle's config.json, and the records of the runtime that made the container
 * (its annotations for containerd's and CRI-O's Kubernetes pods, podman's containers.json,
 * Docker's config.v2.json). Also egret's hook put into an OCI config.json (a runc bundle,
 * containerd's base spec, the Docker runtime wrapper) and the hooks.d file podman and CRI-O
 * read. Runtimes are Go programs that read JSON case-insensitively and take the last of
 * duplicate keys: the tokenizer (json.h) refuses such documents, so egret never reads a
 * container's config differently than its runtime did.
 */
#ifndef EGRET_OCI_H
#define EGRET_OCI_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>

#include "sandbox.h"

#define OCI_STATE_MAX  (1u << 20) /* bytes of OCI state on stdin */
#define OCI_CONFIG_MAX (8u << 20) /* bytes of a config.json, containers.json, config.v2.json */
#define OCI_VALUE_MAX  512

/* What one Kubernetes runtime's own annotations say of a pod's container. */
struct oci_pod {
	char name[OCI_VALUE_MAX]; /* the pod's */
	char namespace_[OCI_VALUE_MAX];
	char uid[OCI_VALUE_MAX];
	char container[OCI_VALUE_MAX]; /* the container's name in the pod spec */
	char image[OCI_VALUE_MAX];
};

struct oci_container {
	char id[256];	 /* the runtime's container id */
	char status[32]; /* creating, created, stopped */
	int pid;	 /* the container's init on the host (0 at poststop) */
	char bundle[PATH_MAX];
	char rootfs[PATH_MAX]; /* config.json root.path, made absolute */
	/* what the registration says (user/core/sandbox.h); "" unknown */
	char runtime[32];
	char manager[32]; /* io.container.manager: libpod, cri-o */
	/* containerd's CRI annotations and CRI-O's: each is believed only when the container is
	 * that runtime's (its bundle's place, oci__detect_runtime), so a pod author who can pass
	 * annotations through cannot claim another pod, namespace or image
	 */
	struct oci_pod cri, crio;
	/* egret's own annotations (io.egret.sandbox, io.egret.image, io.egret.label.KEY): taken
	 * for a container a host user made (runc, podman, docker), not for a pod's, whose
	 * annotations its author writes
	 */
	char sandbox_name[SANDBOX_NAME_MAX + 1];
	char egret_image[OCI_VALUE_MAX];
	char egret_labels[SANDBOX_LABELS_MAX][OCI_VALUE_MAX];
	unsigned int negret_labels;
	bool exempt; /* the host's (egretctl oci-hook --exempt-namespace) */
	char name[OCI_VALUE_MAX];
	char image[OCI_VALUE_MAX];
	char pod_name[OCI_VALUE_MAX];
	char pod_namespace[OCI_VALUE_MAX];
	char pod_uid[OCI_VALUE_MAX];
	char k8s_container[OCI_VALUE_MAX];
	char labels[SANDBOX_LABELS_MAX][OCI_VALUE_MAX]; /* KEY=VALUE */
	unsigned int nlabels;
};

/* The OCI state a hook gets on stdin: id, status, pid, bundle, and its annotations. */
int oci__parse_state(struct oci_container *c, const char *text, size_t len, char *err,
		     size_t errsz);
/* The bundle's config.json (read from the bundle the state named): annotations, root.path. */
int oci__parse_config(struct oci_container *c, const char *text, size_t len, char *err,
		      size_t errsz);
/* podman's record of the container (containers.json beside the bundle): name and image. */
int oci__parse_podman(struct oci_container *c, const char *text, size_t len, char *err,
		      size_t errsz);
/* Docker's (<data-root>/containers/<id>/config.v2.json): name, image, labels. */
int oci__parse_docker(struct oci_container *c, const char *text, size_t len, char *err,
		      size_t errsz);
/* Which runtime made the container: "containerd" (a CRI pod's: its bundle is under the
 * io.containerd.runtime.v2.task/k8s.io namespace), "docker" (.../moby/), "cri-o" and "podman"
 * (containers/storage bundles, by io.container.manager), else "runc"; fills c->runtime, and
 * the pod fields from that runtime's own annotations only.
 */
void oci__detect_runtime(struct oci_container *c);
/* Whether the container is a Kubernetes pod's (its runtime's annotations name a pod). */
bool oci__in_pod(const struct oci_container *c);
/* The registration's words for egretd: KEY=VALUE, NUL-terminated one after the other, with
 * the container's v2 cgroup path; the bytes used, or -E2BIG.
 */
int oci__words(const struct oci_container *c, const char *cgroup, char *buf, size_t size);

/* The hook as it goes into a config.json: egretctl at path, with args (argv[0] first). */
struct oci_hook {
	const char *path;
	const char *const *args;
	unsigned int nargs;
	unsigned int timeout_s; /* 0: none */
};

/* config (len bytes) with egret's hooks added: create at the head of hooks.createRuntime,
 * stop at the end of hooks.poststop (NULL: none), the rest of the document byte for byte.
 * Hooks already there (the same path and arguments) are not added twice. *out is malloc'd.
 */
int oci__inject(const char *config, size_t len, const struct oci_hook *create,
		const struct oci_hook *stop, char **out, size_t *outlen, char *err, size_t errsz);
/* The hooks.d file (schema 1.0.0) that runs hook at the given OCI stage for every container. */
int oci__hooks_d(const struct oci_hook *hook, const char *stage, char *out, size_t size);

#endif /* EGRET_OCI_H */
