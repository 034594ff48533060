/* What egretctl oci-hook reads of a container (user/containers/oci.c): the OCI state of runc,
 * crun, podman and docker as they were measured (/work/notes/i15-runtimes.md), the annotations
 * of containerd's CRI plugin and CRI-O, podman's containers.json and Docker's config.v2.json, the
 * registration words made of them (parsed back with sandbox_meta__parse), egret's own
 * io.egret.* annotations taken for a host user's container and ignored for a pod's; egret's
 * hooks spliced into a config.json, the rest of it byte for byte, and the hooks.d file.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "json.h"
#include "oci.h"
#include "util.h"
#include "sandbox.h"

#define CGROUP "/egret-test/ctr"

static struct oci_container *new_ctr(void)
{
	struct oci_container *c = calloc(1, sizeof(*c));

	cr_assert_not_null(c);
	return c;
}

/* ---- the OCI state --------------------------------------------------------------------- */

#define RUNC_ANN      "{\"io.egret.test\":\"hello\",\"org.example.name\":\"ctr1\"}"
#define PODMAN_ID     "489f1c0e5a7b3d2f6e8a9b0c1d2e3f40489f1c0e5a7b3d2f6e8a9b0c1d2e3f40"
#define PODMAN_BUNDLE "/var/lib/containers/storage/overlay-containers/" PODMAN_ID "/userdata"
#define PODMAN_ANN                                                                                 \
	"{\"io.container.manager\":\"libpod\",\"io.kubernetes.cri-o.Created\":"                    \
	"\"2026-12-02T03:28:37.825131654Z\",\"io.kubernetes.cri-o.TTY\":\"false\","                \
	"\"io.podman.annotations.autoremove\":\"FALSE\",\"io.podman.annotations.init\":\"FALSE\"," \
	"\"io.podman.annotations.privileged\":\"FALSE\",\"io.podman.annotations.publish-all\":"    \
	"\"FALSE\",\"org.opencontainers.image.stopSignal\":\"15\"}"
#define DOCKER_ID     "82f69fc9e2b0a4d1c3e5f7a9b1d3f5e782f69fc9e2b0a4d1c3e5f7a9b1d3f5e7"
#define DOCKER_BUNDLE "/run/docker/containerd/daemon/io.containerd.runtime.v2.task/moby/" DOCKER_ID

struct state_case {
	const char *what, *json;
	int ret;
	const char *id, *status, *bundle;
	int pid;
};

#define BAD(what, json)                            \
	{                                          \
		what, json, -EINVAL, "", "", "", 0 \
	}

static const struct state_case states[] = {
	{ "runc createRuntime",
	  "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"ctr1\",\"status\":\"creating\",\"pid\":12283,"
	  "\"bundle\":\"/var/tmp/egret-research/b1\",\"annotations\":" RUNC_ANN "}",
	  0, "ctr1", "creating", "/var/tmp/egret-research/b1", 12283 },
	{ "podman createRuntime",
	  "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"" PODMAN_ID "\",\"status\":\"creating\","
	  "\"pid\":16577,\"bundle\":\"" PODMAN_BUNDLE "\",\"annotations\":" PODMAN_ANN "}",
	  0, PODMAN_ID, "creating", PODMAN_BUNDLE, 16577 },
	{ "docker: no annotations key",
	  "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"" DOCKER_ID "\",\"status\":\"creating\","
	  "\"pid\":21715,\"bundle\":\"" DOCKER_BUNDLE "\"}",
	  0, DOCKER_ID, "creating", DOCKER_BUNDLE, 21715 },
	{ "crun: created, a root key",
	  "{\"ociVersion\":\"1.0\",\"id\":\"crun1\",\"pid\":15096,\"root\":"
	  "\"/var/tmp/egret-research/rootfs\",\"bundle\":\"/var/tmp/egret-research/b1\","
	  "\"status\":\"created\",\"annotations\":" RUNC_ANN "}",
	  0, "crun1", "created", "/var/tmp/egret-research/b1", 15096 },
	{ "runc poststop: no pid",
	  "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"ctr1\",\"status\":\"stopped\","
	  "\"bundle\":\"/var/tmp/egret-research/b1\",\"annotations\":" RUNC_ANN "}",
	  0, "ctr1", "stopped", "/var/tmp/egret-research/b1", 0 },
	{ "crun poststop: pid 0",
	  "{\"ociVersion\":\"1.0\",\"id\":\"crun1\",\"pid\":0,\"root\":\"/r\",\"bundle\":\"/b\","
	  "\"status\":\"stopped\"}",
	  0, "crun1", "stopped", "/b", 0 },
	{ "pid INT32_MAX", "{\"id\":\"a\",\"pid\":2147483647,\"bundle\":\"/b\"}", 0, "a", "", "/b",
	  2147483647 },
	{ "white space around", " \n{\"id\":\"a\",\"bundle\":\"/b\"}\n ", 0, "a", "", "/b", 0 },
	BAD("duplicate key", "{\"id\":\"a\",\"id\":\"b\",\"bundle\":\"/b\"}"),
	BAD("duplicate pid, case-folded", "{\"id\":\"a\",\"pid\":1,\"Pid\":2,\"bundle\":\"/b\"}"),
	BAD("duplicate annotation key",
	    "{\"id\":\"a\",\"bundle\":\"/b\",\"annotations\":{\"k\":\"1\",\"k\":\"2\"}}"),
	BAD("pid a fraction", "{\"id\":\"a\",\"pid\":12.5,\"bundle\":\"/b\"}"),
	BAD("pid negative", "{\"id\":\"a\",\"pid\":-1,\"bundle\":\"/b\"}"),
	BAD("pid an exponent", "{\"id\":\"a\",\"pid\":1e3,\"bundle\":\"/b\"}"),
	BAD("pid a string", "{\"id\":\"a\",\"pid\":\"12\",\"bundle\":\"/b\"}"),
	BAD("pid null", "{\"id\":\"a\",\"pid\":null,\"bundle\":\"/b\"}"),
	BAD("pid past INT32_MAX", "{\"id\":\"a\",\"pid\":2147483648,\"bundle\":\"/b\"}"),
	BAD("pid past UINT64_MAX", "{\"id\":\"a\",\"pid\":18446744073709551616,\"bundle\":\"/b\"}"),
	BAD("relative bundle", "{\"id\":\"a\",\"pid\":1,\"bundle\":\"b1\"}"),
	BAD("no bundle", "{\"id\":\"a\",\"pid\":1}"),
	BAD("bundle not a string", "{\"id\":\"a\",\"pid\":1,\"bundle\":[\"/b\"]}"),
	BAD("no id", "{\"pid\":1,\"bundle\":\"/b\"}"),
	BAD("empty id", "{\"id\":\"\",\"pid\":1,\"bundle\":\"/b\"}"),
	BAD("id holding U+0000", "{\"id\":\"a\\u0000b\",\"pid\":1,\"bundle\":\"/b\"}"),
	BAD("not an object", "[{\"id\":\"a\",\"bundle\":\"/b\"}]"),
	BAD("a string", "\"{}\""),
	BAD("trailing garbage", "{\"id\":\"a\",\"bundle\":\"/b\"} x"),
	BAD("two objects", "{\"id\":\"a\",\"bundle\":\"/b\"}{}"),
	BAD("empty", ""),
	BAD("truncated", "{\"id\":\"a\",\"bundle\":\"/b\""),
};

Test(oci, parse_state)
{
	for (size_t i = 0; i < ARRAY_SIZE(states); i++) {
		const struct state_case *t = &states[i];
		struct oci_container *c = new_ctr();
		char err[256] = "";
		int ret = oci__parse_state(c, t->json, strlen(t->json), err, sizeof(err));

		cr_expect_eq(ret, t->ret, "%s: %d (%s)", t->what, ret, err);
		if (t->ret) {
			cr_expect(err[0] && !strncmp(err, "OCI state: ", 11), "%s: err '%s'",
				  t->what, err);
		} else {
			cr_expect_str_eq(c->id, t->id, "%s", t->what);
			cr_expect_str_eq(c->status, t->status, "%s", t->what);
			cr_expect_str_eq(c->bundle, t->bundle, "%s", t->what);
			cr_expect_eq(c->pid, t->pid, "%s", t->what);
		}
		free(c);
	}
}

Test(oci, parse_state_messages)
{
	struct oci_container *c = new_ctr();
	char err[256];
	const char *s = "{\"id\":\"a\",\"pid\":2147483648,\"bundle\":\"/b\"}";

	cr_assert_eq(oci__parse_state(c, s, strlen(s), err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "OCI state: pid is not a process id");
	s = "{\"id\":\"a\",\"pid\":1,\"bundle\":\"b\"}";
	cr_assert_eq(oci__parse_state(c, s, strlen(s), err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "OCI state: no id, or no absolute bundle path");
	s = "[]";
	cr_assert_eq(oci__parse_state(c, s, strlen(s), err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "OCI state: not a JSON object");
	s = "{\"pid\":1,\"Pid\":1}";
	cr_assert_eq(oci__parse_state(c, s, strlen(s), err, sizeof(err)), -EINVAL);
	cr_expect(strstr(err, "OCI state: ") == err && strstr(err, "uplicate"), "%s", err);
	free(c);
}

/* The state is read within the length given, not to a NUL. */
Test(oci, parse_state_reads_len_bytes)
{
	static const char s[] = "{\"id\":\"a\",\"bundle\":\"/b\"}garbage";
	struct oci_container *c = new_ctr();
	char err[256];

	cr_expect_eq(oci__parse_state(c, s, 24, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(oci__parse_state(c, s, 23, err, sizeof(err)), -EINVAL);
	free(c);
}

/* ---- what runtimes say of a container, as registration words ---------------------------- */

#define CRI_ID	   "5b2d7c4e9a1f03b68e2c5d7a9b1f3e4c5b2d7c4e9a1f03b68e2c5d7a9b1f3e4c"
#define CRI_BUNDLE "/run/containerd/io.containerd.runtime.v2.task/k8s.io/" CRI_ID
#define CRI_UID	   "1f0c2b4e-8a7d-4c3b-9e1f-0a2b3c4d5e6f"
#define CRI_ANN                                                              \
	"\"io.kubernetes.cri.container-type\":\"container\","                \
	"\"io.kubernetes.cri.container-name\":\"web\","                      \
	"\"io.kubernetes.cri.image-name\":\"docker.io/library/nginx:1.25\"," \
	"\"io.kubernetes.cri.sandbox-id\":\"9e1f0a2b3c4d\","                 \
	"\"io.kubernetes.cri.sandbox-name\":\"web-7d9f\","                   \
	"\"io.kubernetes.cri.sandbox-namespace\":\"shop\","                  \
	"\"io.kubernetes.cri.sandbox-uid\":\"" CRI_UID "\""
/* what a pod's author may put among the annotations (CRI-O copies a pod's; containerd those its
 * pod_annotations list lets through): not egret's to take
 */
#define EGRET_ANN                                                              \
	"\"io.egret.sandbox\":\"trusted\",\"io.egret.image\":\"python:3.12\"," \
	"\"io.egret.label.team\":\"infra\""
#define CRI_WORDS                                                                             \
	"name=shop/web-7d9f/web\0cgroup=" CGROUP "\0container.id=" CRI_ID "\0"                \
	"container.name=web\0container.image.name=docker.io/library/nginx:1.25\0"             \
	"container.runtime.name=containerd\0k8s.pod.name=web-7d9f\0k8s.namespace.name=shop\0" \
	"k8s.pod.uid=" CRI_UID "\0k8s.container.name=web\0"

#define CRIO_ID	    "c0ffee00aabbccddeeff00112233445566778899aabbccddeeff001122334455"
#define CRIO_BUNDLE "/run/containers/storage/overlay-containers/" CRIO_ID "/userdata"
#define CRIO_UID    "7a6b5c4d-3e2f-4a1b-8c9d-0e1f2a3b4c5d"
#define CRIO_ANN                                                                               \
	"\"io.container.manager\":\"cri-o\",\"io.kubernetes.container.name\":\"api\","         \
	"\"io.kubernetes.pod.name\":\"api-5c8d\",\"io.kubernetes.pod.namespace\":\"billing\"," \
	"\"io.kubernetes.pod.uid\":\"" CRIO_UID "\","                                          \
	"\"io.kubernetes.cri-o.ContainerID\":\"" CRIO_ID "\","                                 \
	"\"io.kubernetes.cri-o.Image\":\"quay.io/acme/api:2.1\","                              \
	"\"io.kubernetes.cri-o.ImageName\":\"quay.io/acme/api:2.1\","                          \
	"\"io.kubernetes.cri-o.Labels\":\"{\\\"io.kubernetes.container.name\\\":\\\"api\\\","  \
	"\\\"io.kubernetes.pod.name\\\":\\\"api-5c8d\\\",\\\"io.kubernetes.pod.namespace\\\":" \
	"\\\"billing\\\",\\\"io.kubernetes.pod.uid\\\":\\\"" CRIO_UID "\\\",\\\"tier\\\":"     \
	"\\\"backend\\\"}\",\"io.kubernetes.cri-o.Metadata\":\"{\\\"name\\\":\\\"api\\\"}\","  \
	"\"io.kubernetes.container.hash\":\"9a1b2c3d\",\"io.kubernetes.cri-o.TTY\":\"false\""
#define CRIO_WORDS                                                                          \
	"name=billing/api-5c8d/api\0cgroup=" CGROUP "\0container.id=" CRIO_ID "\0"          \
	"container.name=api\0container.image.name=quay.io/acme/api:2.1\0"                   \
	"container.runtime.name=cri-o\0k8s.pod.name=api-5c8d\0k8s.namespace.name=billing\0" \
	"k8s.pod.uid=" CRIO_UID "\0k8s.container.name=api\0label.tier=backend\0"

#define PODMAN_RECORD                                                                           \
	"[{\"id\":\"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef\","        \
	"\"names\":[\"other\"],\"image\":\"\",\"metadata\":\"{\\\"image-name\\\":"              \
	"\\\"docker.io/library/alpine:3\\\",\\\"name\\\":\\\"other\\\"}\"},"                    \
	"{\"id\":\"" PODMAN_ID "\",\"names\":[\"egr-p10\"],\"image\":\"4431881e\","             \
	"\"layer\":\"ab12\",\"metadata\":\"{\\\"image-name\\\":\\\"localhost/busybox:test\\\"," \
	"\\\"image-id\\\":\\\"4431881e\\\",\\\"name\\\":\\\"egr-p10\\\",\\\"created-at\\\":"    \
	"1796182182}\",\"created\":\"2026-12-02T03:28:37.8Z\",\"flags\":{\"MountLabel\":\"\"}}]"
#define PODMAN_WORDS                                                            \
	"name=egr-p10-sbx\0cgroup=" CGROUP "\0container.id=" PODMAN_ID "\0"     \
	"container.name=egr-p10\0container.image.name=localhost/busybox:test\0" \
	"container.runtime.name=podman\0label.owner=alice\0"

#define DOCKER_CONFIG                                                                             \
	"{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"args\":[\"/bin/sh\"]},\"root\":{\"path\":"  \
	"\"/var/lib/docker/overlay2/4f1e/merged\"},\"hostname\":\"82f69fc9e2b0\","                \
	"\"hooks\":{\"prestart\":[{\"path\":\"/proc/1234/exe\",\"args\":[\"libnetwork-setkey\","  \
	"\"-exec-root=/run/docker\",\"" DOCKER_ID "\",\"4d2e6c8a0b1f\"]}]},\"annotations\":null," \
	"\"linux\":{\"cgroupsPath\":\"/docker/" DOCKER_ID "\"}}"
#define DOCKER_RECORD                                                                            \
	"{\"StreamConfig\":{},\"State\":{\"Running\":false,\"Pid\":0},\"ID\":\"" DOCKER_ID "\"," \
	"\"Created\":\"2026-12-02T04:00:00Z\",\"Path\":\"/bin/sh\",\"Args\":[],\"Config\":"      \
	"{\"Hostname\":\"82f69fc9e2b0\",\"Image\":\"localhost/busybox:test\",\"Labels\":"        \
	"{\"egret.label\":\"L1\",\"com.example.team\":\"web\"}},\"Image\":\"sha256:b724\","      \
	"\"Name\":\"/egr-d3\",\"Driver\":\"overlay2\"}"
#define DOCKER_WORDS                                                                   \
	"cgroup=" CGROUP "\0container.id=" DOCKER_ID "\0container.name=egr-d3\0"       \
	"container.image.name=localhost/busybox:test\0container.runtime.name=docker\0" \
	"label.egret.label=L1\0label.com.example.team=web\0"

#define RUNC_EGRET_ANN                                                           \
	"{\"io.egret.sandbox\":\"ci-build\",\"io.egret.image\":\"python:3.12\"," \
	"\"io.egret.label.team\":\"ci\",\"io.egret.label.job\":\"42\","          \
	"\"org.example.name\":\"ctr1\"}"
#define RUNC_WORDS                                                                       \
	"name=ci-build\0cgroup=" CGROUP "\0container.id=build-42\0"                      \
	"container.image.name=python:3.12\0container.runtime.name=runc\0label.team=ci\0" \
	"label.job=42\0"

struct runtime_case {
	const char *what;
	const char *state, *config;
	const char *podman, *docker; /* the runtime's record, or NULL */
	const char *words;	     /* what oci__words() gives, exactly */
	size_t nwords;		     /* its bytes */
	const char *runtime, *rootfs;
	bool pod;
};

#define WORDS(w) w, sizeof(w) - 1

static const struct runtime_case runtimes[] = {
	{ "containerd CRI",
	  "{\"ociVersion\":\"1.1.0\",\"id\":\"" CRI_ID "\",\"status\":\"creating\",\"pid\":4242,"
	  "\"bundle\":\"" CRI_BUNDLE "\",\"annotations\":{" CRI_ANN "}}",
	  "{\"ociVersion\":\"1.1.0\",\"process\":{\"args\":[\"nginx\"]},\"root\":{\"path\":"
	  "\"rootfs\"},\"annotations\":{" CRI_ANN "},\"linux\":{\"cgroupsPath\":"
	  "\"kubepods-besteffort-pod1f0c.slice:cri-containerd:" CRI_ID "\"}}",
	  NULL, NULL, WORDS(CRI_WORDS), "containerd", CRI_BUNDLE "/rootfs", true },
	{ "containerd CRI, egret's annotations by the pod's author",
	  "{\"ociVersion\":\"1.1.0\",\"id\":\"" CRI_ID "\",\"status\":\"creating\",\"pid\":4242,"
	  "\"bundle\":\"" CRI_BUNDLE "\",\"annotations\":{" EGRET_ANN "," CRI_ANN "}}",
	  "{\"root\":{\"path\":\"rootfs\"},\"annotations\":{" CRI_ANN "," EGRET_ANN "}}", NULL,
	  NULL, WORDS(CRI_WORDS), "containerd", CRI_BUNDLE "/rootfs", true },
	{ "CRI-O",
	  "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"" CRIO_ID "\",\"status\":\"creating\","
	  "\"pid\":5151,\"bundle\":\"" CRIO_BUNDLE "\",\"annotations\":{" CRIO_ANN "}}",
	  "{\"ociVersion\":\"1.0.2-dev\",\"root\":{\"path\":\"/var/lib/containers/storage/overlay/"
	  "9f8e/merged\"},\"annotations\":{" EGRET_ANN "," CRIO_ANN "}}",
	  NULL, NULL, WORDS(CRIO_WORDS), "cri-o", "/var/lib/containers/storage/overlay/9f8e/merged",
	  true },
	{ "podman",
	  "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"" PODMAN_ID "\",\"status\":\"creating\","
	  "\"pid\":16577,\"bundle\":\"" PODMAN_BUNDLE "\",\"annotations\":" PODMAN_ANN "}",
	  "{\"ociVersion\":\"1.0.2-dev\",\"root\":{\"path\":\"/var/lib/containers/storage/overlay/"
	  "77aa/merged\"},\"annotations\":{\"io.egret.sandbox\":\"egr-p10-sbx\","
	  "\"io.egret.label.owner\":\"alice\",\"io.container.manager\":\"libpod\"}}",
	  PODMAN_RECORD, NULL, WORDS(PODMAN_WORDS), "podman",
	  "/var/lib/containers/storage/overlay/77aa/merged", false },
	{ "docker",
	  "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"" DOCKER_ID "\",\"status\":\"creating\","
	  "\"pid\":21715,\"bundle\":\"" DOCKER_BUNDLE "\"}",
	  DOCKER_CONFIG, NULL, DOCKER_RECORD, WORDS(DOCKER_WORDS), "docker",
	  "/var/lib/docker/overlay2/4f1e/merged", false },
	{ "runc with egret's annotations (in the state and config.json both)",
	  "{\"ociVersion\":\"1.0.2-dev\",\"id\":\"build-42\",\"status\":\"creating\",\"pid\":12283,"
	  "\"bundle\":\"/var/tmp/b1\",\"annotations\":" RUNC_EGRET_ANN "}",
	  "{\"ociVersion\":\"1.0.2-dev\",\"root\":{\"path\":\"rootfs\",\"readonly\":true},"
	  "\"annotations\":" RUNC_EGRET_ANN "}",
	  NULL, NULL, WORDS(RUNC_WORDS), "runc", "/var/tmp/b1/rootfs", false },
	{ "runc, root.path as runc reads it (Go folds case)",
	  "{\"id\":\"r2\",\"pid\":7,\"bundle\":\"/var/tmp/b2\"}",
	  "{\"Root\":{\"Path\":\"rfs\"},\"Annotations\":{\"io.egret.sandbox\":\"r2-sbx\"}}", NULL,
	  NULL,
	  WORDS("name=r2-sbx\0cgroup=" CGROUP "\0container.id=r2\0container.runtime.name=runc\0"),
	  "runc", "/var/tmp/b2/rfs", false },
	{ "runc without annotations", "{\"id\":\"plain\",\"pid\":7,\"bundle\":\"/b\"}",
	  "{\"root\":{\"path\":\"/abs/rootfs\"}}", NULL, NULL,
	  WORDS("cgroup=" CGROUP "\0container.id=plain\0container.runtime.name=runc\0"), "runc",
	  "/abs/rootfs", false },
	{ "containerd CRI before image-name (1.4): the pod's io.egret.image is not its image",
	  "{\"id\":\"x1\",\"pid\":7,\"bundle\":\"/run/containerd/io.containerd.runtime.v2.task/"
	  "k8s.io/x1\"}",
	  "{\"annotations\":{\"io.kubernetes.cri.sandbox-name\":\"p\","
	  "\"io.kubernetes.cri.sandbox-namespace\":\"n\",\"io.kubernetes.cri.container-name\":"
	  "\"c\"," EGRET_ANN "}}",
	  NULL, NULL,
	  WORDS("name=n/p/c\0cgroup=" CGROUP "\0container.id=x1\0container.name=c\0"
		"container.runtime.name=containerd\0k8s.pod.name=p\0k8s.namespace.name=n\0"
		"k8s.container.name=c\0"),
	  "containerd", "", true },
	{ "the pod's sandbox container (no container name): POD",
	  "{\"id\":\"x2\",\"pid\":7,\"bundle\":\"/run/containerd/io.containerd.runtime.v2.task/"
	  "k8s.io/x2\"}",
	  "{\"annotations\":{\"io.kubernetes.cri.container-type\":\"sandbox\","
	  "\"io.kubernetes.cri.sandbox-name\":\"p\",\"io.kubernetes.cri.sandbox-namespace\":"
	  "\"n\"}}",
	  NULL, NULL,
	  WORDS("name=n/p/POD\0cgroup=" CGROUP "\0container.id=x2\0"
		"container.runtime.name=containerd\0k8s.pod.name=p\0k8s.namespace.name=n\0"),
	  "containerd", "", true },
};

/* The words in oci__words()'s order, from what sandbox_meta__parse() made of them. */
static size_t words_from_meta(const struct sandbox_meta *m, char *buf, size_t size)
{
	const struct {
		const char *key, *val;
	} w[] = {
		{ "exempt", m->exempt ? "1" : NULL },
		{ "name", m->name },
		{ "cgroup", m->cgroup },
		{ "container.id", m->container_id },
		{ "container.name", m->container_name },
		{ "container.image.name", m->image },
		{ "container.runtime.name", m->runtime },
		{ "k8s.pod.name", m->pod_name },
		{ "k8s.namespace.name", m->pod_namespace },
		{ "k8s.pod.uid", m->pod_uid },
		{ "k8s.container.name", m->k8s_container },
	};
	size_t used = 0;

	for (size_t i = 0; i < ARRAY_SIZE(w); i++) {
		if (w[i].val)
			used += (size_t)snprintf(buf + used, size - used, "%s=%s", w[i].key,
						 w[i].val) +
				1;
	}
	for (unsigned int i = 0; i < m->nlabels; i++)
		used += (size_t)snprintf(buf + used, size - used, "label.%s", m->labels[i]) + 1;
	return used;
}

/* a value of c as its words carry it: not at all when a registration cannot (oci.c) */
static void expect_field(const char *what, const char *key, const char *got, const char *want)
{
	if (!want || !want[0] || !sandbox__value_ok(want))
		cr_expect_null(got, "%s: %s is '%s'", what, key, got ? got : "");
	else
		cr_expect(got && !strcmp(got, want), "%s: %s is '%s', not '%s'", what, key,
			  got ? got : "(none)", want);
}

/* c's words: parsed back, each field what c says, and made again from the parse, the same */
static void check_words(const char *what, const struct oci_container *c, const char *want,
			size_t nwant)
{
	char buf[SANDBOX_META_WORDS_MAX], again[SANDBOX_META_WORDS_MAX], err[256];
	struct sandbox_meta m;
	bool pod = oci__in_pod(c);
	int n = oci__words(c, CGROUP, buf, sizeof(buf));

	cr_assert_gt(n, 0, "%s: %d", what, n);
	if (want) {
		cr_expect_eq((size_t)n, nwant, "%s: %d bytes, not %zu", what, n, nwant);
		cr_expect(!memcmp(buf, want, nwant < (size_t)n ? nwant : (size_t)n),
			  "%s: other words", what);
	}
	cr_assert_eq(sandbox_meta__parse(&m, buf, (size_t)n, err, sizeof(err)), 0, "%s: %s", what,
		     err);
	expect_field(what, "cgroup", m.cgroup, CGROUP);
	expect_field(what, "container.id", m.container_id, c->id);
	expect_field(what, "container.name", m.container_name,
		     c->name[0] ? c->name : c->k8s_container);
	expect_field(what, "container.image.name", m.image,
		     c->image[0] || pod ? c->image : c->egret_image);
	expect_field(what, "container.runtime.name", m.runtime, c->runtime);
	expect_field(what, "k8s.pod.name", m.pod_name, c->pod_name);
	expect_field(what, "k8s.namespace.name", m.pod_namespace, c->pod_namespace);
	expect_field(what, "k8s.pod.uid", m.pod_uid, c->pod_uid);
	expect_field(what, "k8s.container.name", m.k8s_container, c->k8s_container);
	cr_expect_eq(m.exempt, c->exempt, "%s", what);
	if (pod) {
		cr_expect(!m.name ||
				  (!strncmp(m.name, c->pod_namespace, strlen(c->pod_namespace)) &&
				   m.name[strlen(c->pod_namespace)] == '/'),
			  "%s: a pod's container named '%s'", what, m.name);
	} else {
		expect_field(what, "name", m.name,
			     sandbox__valid_registered_name(c->sandbox_name) ? c->sandbox_name
									     : NULL);
	}
	cr_expect_eq(words_from_meta(&m, again, sizeof(again)), (size_t)n, "%s", what);
	cr_expect(!memcmp(again, buf, (size_t)n), "%s: the words do not round-trip", what);
	sandbox_meta__free(&m);
}

static void read_runtime(const struct runtime_case *t, struct oci_container *c)
{
	char err[256] = "";

	cr_assert_eq(oci__parse_state(c, t->state, strlen(t->state), err, sizeof(err)), 0,
		     "%s: state: %s", t->what, err);
	cr_assert_eq(oci__parse_config(c, t->config, strlen(t->config), err, sizeof(err)), 0,
		     "%s: config.json: %s", t->what, err);
	oci__detect_runtime(c);
	if (t->podman)
		cr_assert_eq(oci__parse_podman(c, t->podman, strlen(t->podman), err, sizeof(err)),
			     0, "%s: containers.json: %s", t->what, err);
	if (t->docker)
		cr_assert_eq(oci__parse_docker(c, t->docker, strlen(t->docker), err, sizeof(err)),
			     0, "%s: config.v2.json: %s", t->what, err);
}

Test(oci, runtimes)
{
	for (size_t i = 0; i < ARRAY_SIZE(runtimes); i++) {
		const struct runtime_case *t = &runtimes[i];
		struct oci_container *c = new_ctr();

		read_runtime(t, c);
		cr_expect_str_eq(c->runtime, t->runtime, "%s", t->what);
		cr_expect_str_eq(c->rootfs, t->rootfs, "%s", t->what);
		cr_expect_eq(oci__in_pod(c), t->pod, "%s", t->what);
		check_words(t->what, c, t->words, t->nwords);
		c->exempt = true;
		check_words(t->what, c, NULL, 0);
		free(c);
	}
}

Test(oci, exempt_word_first)
{
	struct oci_container *c = new_ctr();
	char buf[SANDBOX_META_WORDS_MAX];
	static const char want[] =
		"exempt=1\0name=kube-system/coredns-1/coredns\0cgroup=/k\0"
		"container.name=coredns\0k8s.pod.name=coredns-1\0k8s.namespace.name=kube-system\0"
		"k8s.container.name=coredns\0";

	snprintf(c->pod_name, sizeof(c->pod_name), "coredns-1");
	snprintf(c->pod_namespace, sizeof(c->pod_namespace), "kube-system");
	snprintf(c->k8s_container, sizeof(c->k8s_container), "coredns");
	c->exempt = true;
	cr_assert_eq(oci__words(c, "/k", buf, sizeof(buf)), (int)sizeof(want) - 1);
	cr_expect(!memcmp(buf, want, sizeof(want) - 1));
	free(c);
}

/* podman's and Docker's records: the container's own entry, what is missing left unknown */
Test(oci, runtime_records)
{
	struct oci_container *c = new_ctr();
	char err[256];
	const char *s;

	snprintf(c->id, sizeof(c->id), "abc");
	s = "[{\"id\":\"abd\",\"names\":[\"no\"]},{\"id\":\"abc\",\"names\":[],\"metadata\":"
	    "\"{\\\"image-name\\\":\\\"\\\"}\"}]";
	cr_expect_eq(oci__parse_podman(c, s, strlen(s), err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(c->name, "");
	cr_expect_str_eq(c->image, "");
	s = "[{\"id\":\"abc\",\"names\":[\"n1\",\"n2\"],\"metadata\":\"not json\"}]";
	cr_expect_eq(oci__parse_podman(c, s, strlen(s), err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(c->name, "n1");
	cr_expect_str_eq(c->image, "");
	s = "{\"id\":\"abc\"}";
	cr_expect_eq(oci__parse_podman(c, s, strlen(s), err, sizeof(err)), 0, "%s", err);
	s = "[{\"id\":\"abc\"},";
	cr_expect_eq(oci__parse_podman(c, s, strlen(s), err, sizeof(err)), -EINVAL);
	cr_expect(!strncmp(err, "podman's containers.json: ", 26), "%s", err);

	memset(c, 0, sizeof(*c));
	s = "{\"Name\":\"plain\",\"Config\":{\"Labels\":{\"a\":\"1\",\"b=c\":\"2\",\"\":\"3\","
	    "\"n\":5,\"a2\":\"x\"}}}";
	cr_expect_eq(oci__parse_docker(c, s, strlen(s), err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(c->name, "plain");
	cr_expect_str_eq(c->image, "");
	cr_expect_eq(c->nlabels, 2u);
	cr_expect_str_eq(c->labels[0], "a=1");
	cr_expect_str_eq(c->labels[1], "a2=x");
	s = "{\"Name\":\"/x\",\"name\":\"/y\"}";
	cr_expect_eq(oci__parse_docker(c, s, strlen(s), err, sizeof(err)), -EINVAL);
	cr_expect(!strncmp(err, "Docker's config.v2.json: ", 25), "%s", err);
	s = "[]";
	cr_expect_eq(oci__parse_docker(c, s, strlen(s), err, sizeof(err)), -EINVAL);
	cr_expect_str_eq(err, "Docker's config.v2.json: not a JSON object");
	free(c);
}

Test(oci, config_refusals)
{
	static const char *const bad[] = {
		"",
		"[]",
		"{\"annotations\":{\"a\":\"1\",\"a\":\"2\"}}",
		"{\"annotations\":{},\"Annotations\":{}}",
		"{\"root\":{\"path\":\"a\",\"Path\":\"b\"}}",
		"{} {}",
		"{\"annotations\":{\"a\":\"\\ud800\"}}",
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		struct oci_container *c = new_ctr();
		char err[256] = "";

		cr_expect_eq(oci__parse_config(c, bad[i], strlen(bad[i]), err, sizeof(err)),
			     -EINVAL, "'%s'", bad[i]);
		cr_expect(!strncmp(err, "config.json: ", 13), "'%s': %s", bad[i], err);
		free(c);
	}
}

/* What cannot be said in a registration is left out, not sent for egretd to refuse. */
Test(oci, words_only_what_a_registration_carries)
{
	struct oci_container *c = new_ctr();
	char err[256];
	const char *cfg = "{\"annotations\":{\"io.egret.sandbox\":\"bad name\","
			  "\"io.egret.image\":\"img\\u0007\",\"io.egret.label.ok\":\"1\","
			  "\"io.egret.label.nl\":\"a\\nb\",\"io.egret.label.del\":\"\x7f\","
			  "\"io.egret.label.k\\u0001\":\"v\",\"io.egret.label.\":\"empty key\"}}";

	snprintf(c->id, sizeof(c->id), "ctr\t1");
	snprintf(c->bundle, sizeof(c->bundle), "/b");
	cr_assert_eq(oci__parse_config(c, cfg, strlen(cfg), err, sizeof(err)), 0, "%s", err);
	oci__detect_runtime(c);
	snprintf(c->name, sizeof(c->name), "caf\xc3\xa9");
	check_words("bad values", c,
		    "cgroup=" CGROUP "\0container.name=caf\xc3\xa9\0container.runtime.name=runc\0"
		    "label.ok=1\0",
		    sizeof("cgroup=" CGROUP "\0container.name=caf\xc3\xa9\0"
			   "container.runtime.name=runc\0label.ok=1\0") -
			    1);
	free(c);
}

Test(oci, words_too_big)
{
	struct oci_container *c = new_ctr();
	char buf[SANDBOX_META_WORDS_MAX], err[256];
	struct sandbox_meta m;
	int n;

	snprintf(c->id, sizeof(c->id), "x");
	for (unsigned int i = 0; i < SANDBOX_LABELS_MAX; i++)
		snprintf(c->labels[c->nlabels++], OCI_VALUE_MAX, "k%u=v", i);
	n = oci__words(c, CGROUP, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_expect_eq(sandbox_meta__parse(&m, buf, (size_t)n, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(m.nlabels, SANDBOX_LABELS_MAX);
	sandbox_meta__free(&m);
	/* one more of egret's, the 65th label: too many for a registration */
	snprintf(c->egret_labels[c->negret_labels++], OCI_VALUE_MAX, "extra=1");
	cr_expect_eq(oci__words(c, CGROUP, buf, sizeof(buf)), -E2BIG);
	/* one of egret's with a key the runtime's has already: the runtime's says it */
	snprintf(c->egret_labels[0], OCI_VALUE_MAX, "k3=other");
	n = oci__words(c, CGROUP, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_expect_eq(sandbox_meta__parse(&m, buf, (size_t)n, err, sizeof(err)), 0, "%s", err);
	cr_expect_str_eq(sandbox_meta__label(&m, "k3"), "v");
	sandbox_meta__free(&m);
	/* past the buffer */
	c->nlabels = 0;
	c->negret_labels = 0;
	memset(c->image, 'i', sizeof(c->image) - 1);
	cr_expect_eq(oci__words(c, CGROUP, buf, 100), -E2BIG);
	cr_expect_gt(oci__words(c, CGROUP, buf, sizeof(buf)), 0);
	for (unsigned int i = 0; i < 8; i++)
		memset(c->labels[c->nlabels++], 'l', OCI_VALUE_MAX - 1);
	cr_expect_eq(oci__words(c, CGROUP, buf, sizeof(buf)), -E2BIG);
	free(c);
}

/* A long pod name is cut to fit a sandbox name; still a valid one. */
Test(oci, pod_name_cut)
{
	struct oci_container *c = new_ctr();
	char buf[SANDBOX_META_WORDS_MAX], err[256];
	struct sandbox_meta m;
	int n;

	memset(c->pod_name, 'p', 253);
	memset(c->pod_namespace, 'n', 63);
	memset(c->k8s_container, 'c', 63);
	n = oci__words(c, CGROUP, buf, sizeof(buf));
	cr_assert_gt(n, 0);
	cr_assert_eq(sandbox_meta__parse(&m, buf, (size_t)n, err, sizeof(err)), 0, "%s", err);
	cr_assert_not_null(m.name);
	cr_expect_leq(strlen(m.name), SANDBOX_NAME_MAX);
	cr_expect(sandbox__valid_registered_name(m.name));
	sandbox_meta__free(&m);
	free(c);
}

/* The state's and config.json's annotations both: egret's labels once each. */
Test(oci, egret_labels_once)
{
	struct oci_container *c = new_ctr();
	const char *s =
		"{\"id\":\"a\",\"bundle\":\"/b\",\"annotations\":{\"io.egret.label.x\":\"1\"}}";
	const char *cfg =
		"{\"annotations\":{\"io.egret.label.x\":\"1\",\"io.egret.label.y\":\"2\"}}";
	char err[256];

	cr_assert_eq(oci__parse_state(c, s, strlen(s), err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(oci__parse_config(c, cfg, strlen(cfg), err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(c->negret_labels, 2u);
	cr_expect_str_eq(c->egret_labels[0], "x=1");
	cr_expect_str_eq(c->egret_labels[1], "y=2");
	free(c);
}

/* ---- egret's hooks into a config.json ---------------------------------------------------- */

static const char *const create_args[] = { "egretctl", "oci-hook", "createRuntime" };
static const char *const stop_args[] = { "egretctl", "oci-hook", "poststop" };
static const struct oci_hook create_hook = { "/usr/local/sbin/egretctl", create_args, 3, 30 };
static const struct oci_hook stop_hook = { "/usr/local/sbin/egretctl", stop_args, 3, 30 };

#define CREATE                                                                        \
	"{\"path\":\"/usr/local/sbin/egretctl\",\"args\":[\"egretctl\",\"oci-hook\"," \
	"\"createRuntime\"],\"timeout\":30}"
#define STOP                                                                          \
	"{\"path\":\"/usr/local/sbin/egretctl\",\"args\":[\"egretctl\",\"oci-hook\"," \
	"\"poststop\"],\"timeout\":30}"
#define BOTH "\"poststop\":[" STOP "],\"createRuntime\":[" CREATE "]"

struct inject_case {
	const char *what, *in, *out;
};

#define PRESTART                                                                                   \
	"{\"path\":\"/proc/1234/exe\",\"args\":[\"libnetwork-setkey\",\"-exec-root=/run/docker\"," \
	"\"82f6\",\"4d2e\"]}"
#define PRETTY_HEAD \
	"{\n\t\"ociVersion\": \"1.0.2\",\n\t\"hostname\": \"caf\\u00e9 \\ud83d\\ude00\",\n"
#define PRETTY_TAIL ",\n\t\"linux\": {\"namespaces\": [ {\"type\": \"pid\"} ]}\n}\n"

static const struct inject_case injects[] = {
	{ "no hooks", "{\"ociVersion\":\"1.0.2-dev\",\"process\":{\"args\":[\"sh\"]}}",
	  "{\"hooks\":{" BOTH "},\"ociVersion\":\"1.0.2-dev\",\"process\":{\"args\":[\"sh\"]}}" },
	{ "hooks null", "{\"ociVersion\":\"1.0.2\",\"hooks\":null}",
	  "{\"ociVersion\":\"1.0.2\",\"hooks\":{" BOTH "}}" },
	{ "an empty object", "{}", "{\"hooks\":{" BOTH "}}" },
	{ "white space", " \n{ }\n", " \n{\"hooks\":{" BOTH "} }\n" },
	{ "docker's prestart hook",
	  "{\"hooks\":{\"prestart\":[" PRESTART "]},\"annotations\":null}",
	  "{\"hooks\":{" BOTH ",\"prestart\":[" PRESTART "]},\"annotations\":null}" },
	{ "createRuntime and poststop there: ours first and last",
	  "{\"hooks\":{\"createRuntime\":[{\"path\":\"/usr/bin/nvidia-hook\"}],"
	  "\"poststop\":[{\"path\":\"/bin/true\",\"args\":[\"true\"]}]}}",
	  "{\"hooks\":{\"createRuntime\":[" CREATE ",{\"path\":\"/usr/bin/nvidia-hook\"}],"
	  "\"poststop\":[{\"path\":\"/bin/true\",\"args\":[\"true\"]}," STOP "]}}" },
	{ "empty arrays, null stage", "{\"hooks\":{\"createRuntime\":[ ],\"poststop\":null}}",
	  "{\"hooks\":{\"createRuntime\":[" CREATE " ],\"poststop\":[" STOP "]}}" },
	{ "pretty, escapes kept",
	  PRETTY_HEAD
	  "\t\"hooks\": {\n\t\t\"createRuntime\": [\n\t\t\t{\"path\": \"/x\"}\n\t\t]\n\t}" PRETTY_TAIL,
	  PRETTY_HEAD "\t\"hooks\": {\"poststop\":[" STOP "],\n\t\t\"createRuntime\": [" CREATE
		      ",\n\t\t\t{\"path\": \"/x\"}\n\t\t]\n\t}" PRETTY_TAIL },
	{ "ours there already (escaped differently)",
	  "{\"hooks\":{\"createRuntime\":[{\"path\":\"\\/usr/local/sbin/egretctl\",\"args\":"
	  "[\"egretctl\",\"oci-hook\",\"create\\u0052untime\"]}],\"poststop\":[" STOP "]}}",
	  "{\"hooks\":{\"createRuntime\":[{\"path\":\"\\/usr/local/sbin/egretctl\",\"args\":"
	  "[\"egretctl\",\"oci-hook\",\"create\\u0052untime\"]}],\"poststop\":[" STOP "]}}" },
	{ "as runc reads it: Go folds the case of hooks, stages, path and args",
	  "{\"Hooks\":{\"CreateRuntime\":[{\"Path\":\"/usr/local/sbin/egretctl\",\"ARGS\":"
	  "[\"egretctl\",\"oci-hook\",\"createRuntime\"]}]}}",
	  "{\"Hooks\":{\"poststop\":[" STOP "],\"CreateRuntime\":[{\"Path\":"
	  "\"/usr/local/sbin/egretctl\",\"ARGS\":[\"egretctl\",\"oci-hook\",\"createRuntime\"]}]}}" },
	{ "another hook of the same path, other args",
	  "{\"hooks\":{\"createRuntime\":[{\"path\":\"/usr/local/sbin/egretctl\",\"args\":"
	  "[\"egretctl\",\"oci-hook\"]}]}}",
	  "{\"hooks\":{\"poststop\":[" STOP "],\"createRuntime\":[" CREATE ","
	  "{\"path\":\"/usr/local/sbin/egretctl\",\"args\":[\"egretctl\",\"oci-hook\"]}]}}" },
};

/* [start, end) of the hooks member's value in a parsed config, or false */
static bool hooks_span(const char *text, size_t len, size_t *start, size_t *end)
{
	struct json_doc d;
	char err[JSON_ERR_LEN];
	int v;

	cr_assert_eq(json__parse(&d, text, len, NULL, err, sizeof(err)), 0, "%s", err);
	v = json__member_fold(&d, 0, "hooks");
	if (v >= 0) {
		*start = d.tok[v].start;
		*end = d.tok[v].end;
	}
	json__free(&d);
	return v >= 0;
}

static int count_hooks(const struct json_doc *d, int arr, const struct oci_hook *h, int *at)
{
	int n = 0, i = 0;

	for (int o = json__first(d, arr); o >= 0; o = json__next(d, o), i++) {
		int args = json__member(d, o, "args");
		uint64_t timeout = 0;
		bool same = json__eq(d, json__member(d, o, "path"), h->path) && args >= 0 &&
			    d->tok[args].size == h->nargs;

		for (unsigned int k = 0; same && k < h->nargs; k++)
			same = json__eq(d, json__elem(d, args, k), h->args[k]);
		if (!same)
			continue;
		if (json__member(d, o, "timeout") >= 0) { /* ours, or one there already */
			cr_expect_eq(json__u64(d, json__member(d, o, "timeout"), &timeout), 0);
			cr_expect_eq(timeout, h->timeout_s);
		}
		*at = i;
		n++;
	}
	return n;
}

/* out parses, with ours once in createRuntime (first) and poststop (last); everything else
 * as in: the hooks value aside, byte for byte
 */
static void check_injected(const char *what, const char *in, const char *out, size_t outlen,
			   bool folded)
{
	size_t inlen = strlen(in), is = 0, ie = 0, os = 0, oe = 0;
	struct json_doc d;
	char err[JSON_ERR_LEN];
	int hooks, arr, at = -1;
	bool had = hooks_span(in, inlen, &is, &ie);

	cr_assert_eq(json__parse(&d, out, outlen, NULL, err, sizeof(err)), 0, "%s: %s", what, err);
	hooks = json__member_fold(&d, 0, "hooks");
	arr = json__member_fold(&d, hooks, "createRuntime");
	if (!folded) {
		cr_expect_eq(count_hooks(&d, arr, &create_hook, &at), 1, "%s", what);
		cr_expect_eq(at, 0, "%s: ours is not the first createRuntime hook", what);
		arr = json__member_fold(&d, hooks, "poststop");
		cr_expect_eq(count_hooks(&d, arr, &stop_hook, &at), 1, "%s", what);
		cr_expect_eq(at, (int)d.tok[arr].size - 1, "%s: not the last poststop hook", what);
	}
	json__free(&d);
	cr_assert(hooks_span(out, outlen, &os, &oe));
	if (had) {
		cr_expect_eq(os, is, "%s", what);
		cr_expect(!memcmp(in, out, is), "%s: before hooks", what);
		cr_expect_eq(inlen - ie, outlen - oe, "%s", what);
		cr_expect(!memcmp(in + ie, out + oe, inlen - ie), "%s: after hooks", what);
	} else {
		/* "hooks":{...}, put at the head of the top object */
		size_t brace = (size_t)(strchr(in, '{') - in) + 1, added = outlen - inlen;

		cr_expect(!memcmp(in, out, brace), "%s", what);
		cr_expect(!strncmp(out + brace, "\"hooks\":", 8), "%s", what);
		cr_expect(!strcmp(out + brace + added, in + brace), "%s: after hooks", what);
	}
}

Test(oci, inject)
{
	for (size_t i = 0; i < ARRAY_SIZE(injects); i++) {
		const struct inject_case *t = &injects[i];
		char *out = NULL, *again = NULL, err[256] = "";
		size_t outlen = 0, againlen = 0;
		int ret = oci__inject(t->in, strlen(t->in), &create_hook, &stop_hook, &out, &outlen,
				      err, sizeof(err));

		cr_assert_eq(ret, 0, "%s: %s", t->what, err);
		cr_expect_eq(strlen(out), outlen, "%s", t->what);
		cr_expect_str_eq(out, t->out, "%s", t->what);
		check_injected(t->what, t->in, out, outlen, strstr(t->what, "folds") != NULL);
		ret = oci__inject(out, outlen, &create_hook, &stop_hook, &again, &againlen, err,
				  sizeof(err));
		cr_assert_eq(ret, 0, "%s (again): %s", t->what, err);
		cr_expect(againlen == outlen && !memcmp(again, out, outlen),
			  "%s: a second inject changed it", t->what);
		free(again);
		free(out);
	}
}

Test(oci, inject_without_poststop)
{
	const char *in = "{\"hooks\":{}}";
	char *out = NULL, err[256];
	size_t outlen;

	cr_assert_eq(
		oci__inject(in, strlen(in), &create_hook, NULL, &out, &outlen, err, sizeof(err)), 0,
		"%s", err);
	cr_expect_str_eq(out, "{\"hooks\":{\"createRuntime\":[" CREATE "]}}");
	free(out);
}

/* Arguments that need escaping, no timeout: what the document says is what the hook is. */
Test(oci, inject_escapes)
{
	static const char *const args[] = { "egretctl", "--control", "/run/a \"b\"\\c\n\x01",
					    "caf\xc3\xa9", "" };
	const struct oci_hook h = { "/opt/egret/bin/egretctl", args, 5, 0 };
	const char *in = "{}";
	char *out = NULL, *again = NULL, err[256], val[64];
	size_t outlen, againlen;
	struct json_doc d;
	int o, a;

	cr_assert_eq(oci__inject(in, 2, &h, &h, &out, &outlen, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(json__parse(&d, out, outlen, NULL, err, sizeof(err)), 0, "%s: %s", out, err);
	o = json__elem(&d, json__path(&d, 0, "hooks.createRuntime"), 0);
	cr_expect_eq(json__member(&d, o, "timeout"), -1);
	a = json__member(&d, o, "args");
	cr_assert_eq(d.tok[a].size, 5u);
	for (unsigned int i = 0; i < 5; i++) {
		cr_expect_geq(json__string(&d, json__elem(&d, a, i), val, sizeof(val)), 0);
		cr_expect_str_eq(val, args[i]);
	}
	json__free(&d);
	cr_assert_eq(oci__inject(out, outlen, &h, &h, &again, &againlen, err, sizeof(err)), 0);
	cr_expect(againlen == outlen && !memcmp(again, out, outlen));
	free(again);
	free(out);
}

Test(oci, inject_refusals)
{
	static const struct {
		const char *in, *err;
	} bad[] = {
		{ "{\"hooks\":[]}", "config.json: hooks is not an object" },
		{ "{\"hooks\":\"x\"}", "config.json: hooks is not an object" },
		{ "{\"hooks\":0}", "config.json: hooks is not an object" },
		{ "{\"hooks\":{\"createRuntime\":{}}}",
		  "config.json: hooks.createRuntime is not an array" },
		{ "{\"hooks\":{\"poststop\":\"/bin/true\"}}",
		  "config.json: hooks.poststop is not an array" },
		{ "not json", "config.json: " },
		{ "", "config.json: " },
		{ "[]", "config.json: not a JSON object" },
		{ "{\"a\":1,\"a\":2}", "config.json: " },
		{ "{\"hooks\":{},\"HOOKS\":{}}", "config.json: " },
		{ "{\"hooks\":{\"poststop\":[],\"postStop\":[]}}", "config.json: " },
		{ "{\"hooks\":{}", "config.json: " },
	};

	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		char *out = NULL, err[256] = "";
		size_t outlen = 0;

		cr_expect_eq(oci__inject(bad[i].in, strlen(bad[i].in), &create_hook, &stop_hook,
					 &out, &outlen, err, sizeof(err)),
			     -EINVAL, "'%s'", bad[i].in);
		cr_expect(!strncmp(err, bad[i].err, strlen(bad[i].err)), "'%s': '%s'", bad[i].in,
			  err);
		cr_expect_null(out);
	}
}

/* A config.json at the tokenizer's limit: what comes out is one egret can read again, or an
 * error.
 */
Test(oci, inject_at_the_token_limit)
{
	/* "hooks":{} takes 2 tokens, each hook 12: the createRuntime step still parses, the
	 * poststop one puts it past the limit
	 */
	size_t n = JSON_MAX_TOKENS - 20, len;
	char *in = malloc(2 * n + 16), *out = NULL, err[256];
	size_t outlen;
	struct json_doc d;
	int ret;

	cr_assert_not_null(in);
	/* n - 3 elements: "0,0,...": the object, its key and the array are the other three */
	len = (size_t)sprintf(in, "{\"a\":[");
	for (size_t i = 0; i < n - 3; i++)
		len += (size_t)sprintf(in + len, i ? ",0" : "0");
	len += (size_t)sprintf(in + len, "]}");
	cr_assert_eq(json__parse(&d, in, len, NULL, err, sizeof(err)), 0, "%s", err);
	cr_assert_eq(d.n, n);
	json__free(&d);
	ret = oci__inject(in, len, &create_hook, &stop_hook, &out, &outlen, err, sizeof(err));
	if (!ret) {
		cr_expect_eq(json__parse(&d, out, outlen, NULL, err, sizeof(err)), 0,
			     "inject made a config.json egret cannot read: %s", err);
		json__free(&d);
	} else {
		cr_expect_eq(ret, -E2BIG);
	}
	free(out);
	free(in);
}

Test(oci, hooks_d)
{
	static const char *const stages[] = { "createRuntime", "poststop" };
	char out[4096], val[64], err[JSON_ERR_LEN];
	struct json_doc d;
	uint64_t timeout;
	int n, h, a;

	for (size_t i = 0; i < ARRAY_SIZE(stages); i++) {
		n = oci__hooks_d(&create_hook, stages[i], out, sizeof(out));
		cr_assert_gt(n, 0);
		cr_expect_eq((size_t)n, strlen(out));
		cr_assert_eq(json__parse(&d, out, (size_t)n, NULL, err, sizeof(err)), 0, "%s: %s",
			     out, err);
		cr_expect(json__eq(&d, json__member(&d, 0, "version"), "1.0.0"));
		a = json__member(&d, 0, "stages");
		cr_assert_eq(d.tok[a].type, JSON_ARRAY);
		cr_expect_eq(d.tok[a].size, 1u);
		cr_expect(json__eq(&d, json__elem(&d, a, 0), stages[i]));
		cr_expect_eq(d.tok[json__path(&d, 0, "when.always")].type, JSON_TRUE);
		cr_expect_eq(d.tok[json__member(&d, 0, "when")].size, 1u);
		h = json__member(&d, 0, "hook");
		cr_expect(json__eq(&d, json__member(&d, h, "path"), create_hook.path));
		a = json__member(&d, h, "args");
		cr_assert_eq(d.tok[a].size, create_hook.nargs);
		for (unsigned int k = 0; k < create_hook.nargs; k++) {
			cr_expect_geq(json__string(&d, json__elem(&d, a, k), val, sizeof(val)), 0);
			cr_expect_str_eq(val, create_hook.args[k]);
		}
		cr_assert_eq(json__u64(&d, json__member(&d, h, "timeout"), &timeout), 0);
		cr_expect_eq(timeout, 30u);
		cr_expect_eq(d.tok[0].size, 4u, "version, hook, when, stages");
		json__free(&d);
	}
	cr_expect_eq(oci__hooks_d(&create_hook, "poststop", out, (size_t)n), -E2BIG);
	cr_expect_eq(oci__hooks_d(&create_hook, "poststop", out, (size_t)n + 1), n);
}

/* Each runtime's own annotations are believed for its containers only: a pod author whose
 * annotations containerd passes through cannot claim another namespace (an exempt one) with
 * CRI-O's keys, and a container runc runs by hand is no pod whatever its annotations say.
 */
Test(oci, pod_identity_comes_from_the_runtime_that_made_the_container)
{
	static const char cri_state[] = "{\"id\":\"s1\",\"pid\":9,\"bundle\":\"/run/containerd/"
					"io.containerd.runtime.v2.task/k8s.io/s1\"}";
	static const char runc_state[] = "{\"id\":\"s2\",\"pid\":9,\"bundle\":\"/var/b2\"}";
	static const char spoof[] =
		"{\"annotations\":{\"io.kubernetes.cri.sandbox-name\":\"web\","
		"\"io.kubernetes.cri.sandbox-namespace\":\"shop\","
		"\"io.kubernetes.pod.namespace\":\"egret-system\",\"io.kubernetes.pod.name\":\"x\","
		"\"io.container.manager\":\"cri-o\",\"io.kubernetes.cri-o.ImageName\":\"evil:1\","
		"\"io.kubernetes.cri-o.Labels\":\"{\\\"tier\\\":\\\"trusted\\\"}\"}}";
	struct oci_container *c = calloc(1, sizeof(*c));
	char err[256];

	cr_assert(c);
	cr_assert_eq(oci__parse_state(c, cri_state, strlen(cri_state), err, sizeof(err)), 0);
	cr_assert_eq(oci__parse_config(c, spoof, strlen(spoof), err, sizeof(err)), 0, "%s", err);
	oci__detect_runtime(c);
	cr_expect_str_eq(c->runtime, "containerd");
	cr_expect_str_eq(c->pod_namespace, "shop", "CRI-O's key claimed the namespace");
	cr_expect_str_eq(c->pod_name, "web");
	cr_expect_str_neq(c->image, "evil:1");
	cr_expect_eq(c->nlabels, 0, "CRI-O's labels were taken in a containerd pod");
	memset(c, 0, sizeof(*c));
	cr_assert_eq(oci__parse_state(c, runc_state, strlen(runc_state), err, sizeof(err)), 0);
	cr_assert_eq(oci__parse_config(c, spoof, strlen(spoof), err, sizeof(err)), 0, "%s", err);
	oci__detect_runtime(c);
	cr_expect_str_eq(c->runtime, "runc");
	cr_expect_not(oci__in_pod(c), "a container runc runs by hand claimed a pod");
	free(c);
}
