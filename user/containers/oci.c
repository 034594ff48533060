/* Reading what runtimes say of a container at its hook, and putting egret's hook into an OCI
 * config.json: see oci.h.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "oci.h"
#include "util.h"

/* the string member key of object obj into out: left as it was when there is none, or it is
 * not a string; "" when it does not fit
 */
static void member_str(const struct json_doc *d, int obj, const char *key, char *out, size_t size)
{
	int v = json__member(d, obj, key);

	if (v >= 0 && d->tok[v].type == JSON_STRING)
		json__string(d, v, out, size);
}

static int parse(struct json_doc *d, const char *what, const char *text, size_t len, char *err,
		 size_t errsz)
{
	char why[JSON_ERR_LEN];
	int ret = json__parse(d, text, len, NULL, why, sizeof(why));

	if (ret) {
		snprintf(err, errsz, "%s: %s", what, why);
		return ret;
	}
	if (d->n == 0 || d->tok[0].type != JSON_OBJECT) {
		json__free(d);
		snprintf(err, errsz, "%s: not a JSON object", what);
		return -EINVAL;
	}
	return 0;
}

/* Whether one of labels[n] (KEY=VALUE) has key klen bytes at key. */
static bool has_label(const char labels[][OCI_VALUE_MAX], unsigned int n, const char *key,
		      size_t klen)
{
	for (unsigned int i = 0; i < n; i++) {
		if (!strncmp(labels[i], key, klen) && labels[i][klen] == '=')
			return true;
	}
	return false;
}

static bool label_add(struct oci_container *c, const char *key, const char *value)
{
	int n;

	if (has_label(c->labels, c->nlabels, key, strlen(key)))
		return true; /* the first says it */
	if (c->nlabels == SANDBOX_LABELS_MAX || !key[0] || strchr(key, '='))
		return false;
	n = snprintf(c->labels[c->nlabels], OCI_VALUE_MAX, "%s=%s", key, value);
	if (n < 0 || n >= OCI_VALUE_MAX)
		return false;
	c->nlabels++;
	return true;
}

/* A JSON object of string members (labels) into c's labels; keys under skip_prefix are not
 * labels but the runtime's own.
 */
static void labels_from(struct oci_container *c, const struct json_doc *d, int obj,
			const char *skip_prefix)
{
	char key[OCI_VALUE_MAX], val[OCI_VALUE_MAX];
	int v;

	for (int k = json__first_member(d, obj, &v); k >= 0; k = json__next_member(d, k, &v)) {
		if (json__string(d, k, key, sizeof(key)) <= 0 ||
		    json__string(d, v, val, sizeof(val)) < 0)
			continue;
		if (skip_prefix && !strncmp(key, skip_prefix, strlen(skip_prefix)))
			continue;
		label_add(c, key, val);
	}
}

/* What the annotations of the state or config.json say. */
static void annotations(struct oci_container *c, const struct json_doc *d, int ann)
{
	char key[OCI_VALUE_MAX], val[OCI_VALUE_MAX], labels[OCI_CONFIG_MAX / 64];
	struct json_doc ld = { 0 };
	char err[JSON_ERR_LEN];
	int v;

	member_str(d, ann, "io.container.manager", c->manager, sizeof(c->manager));
	/* containerd's CRI plugin */
	member_str(d, ann, "io.kubernetes.cri.container-name", c->cri.container,
		   sizeof(c->cri.container));
	member_str(d, ann, "io.kubernetes.cri.sandbox-name", c->cri.name, sizeof(c->cri.name));
	member_str(d, ann, "io.kubernetes.cri.sandbox-namespace", c->cri.namespace_,
		   sizeof(c->cri.namespace_));
	member_str(d, ann, "io.kubernetes.cri.sandbox-uid", c->cri.uid, sizeof(c->cri.uid));
	member_str(d, ann, "io.kubernetes.cri.image-name", c->cri.image, sizeof(c->cri.image));
	/* CRI-O, and the kubelet's labels it flattens into annotations */
	member_str(d, ann, "io.kubernetes.container.name", c->crio.container,
		   sizeof(c->crio.container));
	member_str(d, ann, "io.kubernetes.pod.name", c->crio.name, sizeof(c->crio.name));
	member_str(d, ann, "io.kubernetes.pod.namespace", c->crio.namespace_,
		   sizeof(c->crio.namespace_));
	member_str(d, ann, "io.kubernetes.pod.uid", c->crio.uid, sizeof(c->crio.uid));
	member_str(d, ann, "io.kubernetes.cri-o.ImageName", c->crio.image, sizeof(c->crio.image));
	v = json__member(d, ann, "io.kubernetes.cri-o.Labels");
	/* CRI-O's own record of the pod's labels, in a CRI-O container only */
	if (!strcmp(c->manager, "cri-o") && strstr(c->bundle, "-containers/") && v >= 0 &&
	    json__string(d, v, labels, sizeof(labels)) > 0 &&
	    json__parse(&ld, labels, strlen(labels), NULL, err, sizeof(err)) == 0) {
		labels_from(c, &ld, 0, "io.kubernetes.");
		json__free(&ld);
	}
	/* egret's own (oci.h says whose are taken) */
	member_str(d, ann, "io.egret.sandbox", c->sandbox_name, sizeof(c->sandbox_name));
	member_str(d, ann, "io.egret.image", c->egret_image, sizeof(c->egret_image));
	for (int k = json__first_member(d, ann, &v); k >= 0; k = json__next_member(d, k, &v)) {
		int n;

		if (json__string(d, k, key, sizeof(key)) <= 15 ||
		    strncmp(key, "io.egret.label.", 15) ||
		    json__string(d, v, val, sizeof(val)) < 0 ||
		    c->negret_labels == SANDBOX_LABELS_MAX ||
		    has_label(c->egret_labels, c->negret_labels, key + 15, strlen(key + 15)))
			continue; /* the first says it: the state's, then config.json's */
		n = snprintf(c->egret_labels[c->negret_labels], OCI_VALUE_MAX, "%s=%s", key + 15,
			     val);
		if (n <= 0 || n >= OCI_VALUE_MAX || strchr(key + 15, '='))
			continue;
		/* the state and config.json carry the same annotations: once each */
		for (unsigned int i = 0; i < c->negret_labels && n; i++)
			n = strcmp(c->egret_labels[i], c->egret_labels[c->negret_labels]) ? n : 0;
		if (n)
			c->negret_labels++;
	}
}

int oci__parse_state(struct oci_container *c, const char *text, size_t len, char *err, size_t errsz)
{
	struct json_doc d = { 0 };
	uint64_t pid = 0;
	int ret = parse(&d, "OCI state", text, len, err, errsz), v;

	if (ret)
		return ret;
	member_str(&d, 0, "id", c->id, sizeof(c->id));
	member_str(&d, 0, "status", c->status, sizeof(c->status));
	member_str(&d, 0, "bundle", c->bundle, sizeof(c->bundle));
	v = json__member(&d, 0, "pid");
	if (v >= 0 && (json__u64(&d, v, &pid) || pid > INT32_MAX)) {
		snprintf(err, errsz, "OCI state: pid is not a process id");
		ret = -EINVAL;
	}
	c->pid = (int)pid;
	annotations(c, &d, json__member(&d, 0, "annotations"));
	json__free(&d);
	if (!ret && (!c->id[0] || c->bundle[0] != '/')) {
		snprintf(err, errsz, "OCI state: no id, or no absolute bundle path");
		ret = -EINVAL;
	}
	return ret;
}

int oci__parse_config(struct oci_container *c, const char *text, size_t len, char *err,
		      size_t errsz)
{
	struct json_doc d = { 0 };
	char root[PATH_MAX] = "";
	int ret = parse(&d, "config.json", text, len, err, errsz), v;

	if (ret)
		return ret;
	/* Spec's fields, as runc matches them (Go: case folded); annotations is a map, exact */
	annotations(c, &d, json__member_fold(&d, 0, "annotations"));
	v = json__member_fold(&d, json__member_fold(&d, 0, "root"), "path");
	if (v >= 0 && d.tok[v].type == JSON_STRING)
		json__string(&d, v, root, sizeof(root));
	json__free(&d);
	if (root[0] == '/')
		snprintf(c->rootfs, sizeof(c->rootfs), "%s", root);
	else if (root[0] && join_path(c->rootfs, sizeof(c->rootfs), c->bundle, root))
		c->rootfs[0] = '\0';
	return 0;
}

int oci__parse_podman(struct oci_container *c, const char *text, size_t len, char *err,
		      size_t errsz)
{
	char meta[OCI_VALUE_MAX * 4], e2[JSON_ERR_LEN];
	struct json_doc d = { 0 }, md = { 0 };
	int ret, top;

	/* containers.json is an array of every container of the store */
	ret = json__parse(&d, text, len, NULL, e2, sizeof(e2));
	if (ret) {
		snprintf(err, errsz, "podman's containers.json: %s", e2);
		return ret;
	}
	top = d.n && d.tok[0].type == JSON_ARRAY ? 0 : -1;
	for (int o = json__first(&d, top); o >= 0; o = json__next(&d, o)) {
		if (!json__eq(&d, json__member(&d, o, "id"), c->id))
			continue;
		if (json__string(&d, json__elem(&d, json__member(&d, o, "names"), 0), c->name,
				 sizeof(c->name)) < 0)
			c->name[0] = '\0';
		if (json__string(&d, json__member(&d, o, "metadata"), meta, sizeof(meta)) > 0 &&
		    json__parse(&md, meta, strlen(meta), NULL, e2, sizeof(e2)) == 0) {
			if (!c->image[0])
				member_str(&md, 0, "image-name", c->image, sizeof(c->image));
			json__free(&md);
		}
		break;
	}
	json__free(&d);
	return 0;
}

int oci__parse_docker(struct oci_container *c, const char *text, size_t len, char *err,
		      size_t errsz)
{
	struct json_doc d = { 0 };
	char name[OCI_VALUE_MAX] = "";
	int ret = parse(&d, "Docker's config.v2.json", text, len, err, errsz), cfg;

	if (ret)
		return ret;
	member_str(&d, 0, "Name", name, sizeof(name));
	snprintf(c->name, sizeof(c->name), "%s", name[0] == '/' ? name + 1 : name);
	cfg = json__member(&d, 0, "Config");
	if (!c->image[0])
		member_str(&d, cfg, "Image", c->image, sizeof(c->image));
	labels_from(c, &d, json__member(&d, cfg, "Labels"), NULL);
	json__free(&d);
	return 0;
}

static void take_pod(struct oci_container *c, const struct oci_pod *p)
{
	snprintf(c->pod_name, sizeof(c->pod_name), "%s", p->name);
	snprintf(c->pod_namespace, sizeof(c->pod_namespace), "%s", p->namespace_);
	snprintf(c->pod_uid, sizeof(c->pod_uid), "%s", p->uid);
	snprintf(c->k8s_container, sizeof(c->k8s_container), "%s", p->container);
	if (p->image[0])
		snprintf(c->image, sizeof(c->image), "%s", p->image);
}

void oci__detect_runtime(struct oci_container *c)
{
	const char *rt = "runc";

	if (strstr(c->bundle, "/io.containerd.runtime.v2.task/k8s.io/")) {
		rt = "containerd";
		take_pod(c, &c->cri);
	} else if (strstr(c->bundle, "/moby/")) {
		rt = "docker";
	} else if (strstr(c->bundle, "-containers/") && !strcmp(c->manager, "cri-o")) {
		/* containers/storage: .../overlay-containers/<id>/userdata */
		rt = "cri-o";
		take_pod(c, &c->crio);
	} else if (strstr(c->bundle, "-containers/") && !strcmp(c->manager, "libpod")) {
		rt = "podman";
	}
	snprintf(c->runtime, sizeof(c->runtime), "%s", rt);
}

bool oci__in_pod(const struct oci_container *c)
{
	return c->pod_name[0] || c->pod_uid[0] || c->pod_namespace[0];
}

static int word(char *buf, size_t size, size_t *used, const char *key, const char *val)
{
	int n;

	if (!val || !val[0] || !sandbox__value_ok(val))
		return 0;
	n = snprintf(buf + *used, size - *used, "%s=%s", key, val);
	if (n < 0 || (size_t)n + 1 > size - *used)
		return -E2BIG;
	*used += (size_t)n + 1;
	return 0;
}

/* label KEY=VALUE, the *count'th: a registration has at most SANDBOX_LABELS_MAX */
static int label_word(char *buf, size_t size, size_t *used, const char *label, unsigned int *count)
{
	int n;

	if (!sandbox__value_ok(label))
		return 0;
	if (*count == SANDBOX_LABELS_MAX)
		return -E2BIG;
	n = snprintf(buf + *used, size - *used, "label.%s", label);
	if (n < 0 || (size_t)n + 1 > size - *used)
		return -E2BIG;
	*used += (size_t)n + 1;
	(*count)++;
	return 0;
}

int oci__words(const struct oci_container *c, const char *cgroup, char *buf, size_t size)
{
	char name[SANDBOX_NAME_MAX + 1] = "";
	bool pod = oci__in_pod(c);
	unsigned int nlabels = 0;
	size_t used = 0;
	int ret = 0;

	/* a pod's container is NAMESPACE/POD/CONTAINER, the namespace and the container whole
	 * (63 characters at most in Kubernetes) and the pod's name (253) cut to fit; none when
	 * they do not fit (a namespace cut short could be another's); else the runtime's name, or
	 * egretd's
	 */
	if (c->sandbox_name[0] && !pod) {
		snprintf(name, sizeof(name), "%s", c->sandbox_name);
	} else if (c->pod_name[0] && c->pod_namespace[0]) {
		const char *ctr = c->k8s_container[0] ? c->k8s_container : "POD";
		size_t fixed = strlen(c->pod_namespace) + strlen(ctr) + 2;
		int n = fixed < sizeof(name) - 1
				? snprintf(name, sizeof(name), "%s/%.*s/%s", c->pod_namespace,
					   (int)(sizeof(name) - 1 - fixed), c->pod_name, ctr)
				: -1;

		if (n < 0 || (size_t)n >= sizeof(name))
			name[0] = '\0';
	}
	if (name[0] && !sandbox__valid_registered_name(name))
		name[0] = '\0';
	ret = ret ?: word(buf, size, &used, "exempt", c->exempt ? "1" : "");
	ret = ret ?: word(buf, size, &used, "name", name);
	ret = ret ?: word(buf, size, &used, "cgroup", cgroup);
	ret = ret ?: word(buf, size, &used, "container.id", c->id);
	ret = ret
		      ?: word(buf, size, &used, "container.name",
			      c->name[0] ? c->name : c->k8s_container);
	ret = ret
		      ?: word(buf, size, &used, "container.image.name",
			      c->image[0] || pod ? c->image : c->egret_image);
	ret = ret ?: word(buf, size, &used, "container.runtime.name", c->runtime);
	ret = ret ?: word(buf, size, &used, "k8s.pod.name", c->pod_name);
	ret = ret ?: word(buf, size, &used, "k8s.namespace.name", c->pod_namespace);
	ret = ret ?: word(buf, size, &used, "k8s.pod.uid", c->pod_uid);
	ret = ret ?: word(buf, size, &used, "k8s.container.name", c->k8s_container);
	for (unsigned int i = 0; !ret && i < c->nlabels; i++)
		ret = label_word(buf, size, &used, c->labels[i], &nlabels);
	for (unsigned int i = 0; !ret && !pod && i < c->negret_labels; i++) {
		const char *l = c->egret_labels[i];

		/* a label once: the runtime's record says it first */
		if (!has_label(c->labels, c->nlabels, l, strcspn(l, "=")))
			ret = label_word(buf, size, &used, l, &nlabels);
	}
	return ret ? ret : (int)used;
}

/* ---- egret's hook into a config.json ------------------------------------------------------ */

static void json_quoted(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(f, "\\%c", *p);
		else if (*p < 0x20)
			fprintf(f, "\\u%04x", *p);
		else
			fputc(*p, f);
	}
	fputc('"', f);
}

static void hook_json(FILE *f, const struct oci_hook *h)
{
	fputs("{\"path\":", f);
	json_quoted(f, h->path);
	fputs(",\"args\":[", f);
	for (unsigned int i = 0; i < h->nargs; i++) {
		if (i)
			fputc(',', f);
		json_quoted(f, h->args[i]);
	}
	fputc(']', f);
	if (h->timeout_s)
		fprintf(f, ",\"timeout\":%u", h->timeout_s);
	fputc('}', f);
}

/* Is the hook object at token o egret's h: the same path and arguments? */
static bool same_hook(const struct json_doc *d, int o, const struct oci_hook *h)
{
	int args = json__member_fold(d, o, "args");

	if (!json__eq(d, json__member_fold(d, o, "path"), h->path) ||
	    (args >= 0 && d->tok[args].type != JSON_ARRAY) ||
	    (args < 0 ? 0u : d->tok[args].size) != h->nargs)
		return false;
	for (unsigned int i = 0; i < h->nargs; i++) {
		if (!json__eq(d, json__elem(d, args, i), h->args[i]))
			return false;
	}
	return true;
}

/* One edit of the document: insert text at byte off, or replace [off, end). */
struct edit {
	size_t off, end;
	char *text;
};

static char *hook_text(const struct oci_hook *h, const char *before, const char *after)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		return NULL;
	fputs(before, f);
	hook_json(f, h);
	fputs(after, f);
	if (fclose(f)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* The edit that puts h into stage's array of the hooks object (-1: there is none); at_head
 * for the array's start, else its end. No edit (text NULL, 0) when it is there already.
 * Member names as runc matches them (Go folds their case): "CreateRuntime" is createRuntime.
 */
static int stage_edit(const struct json_doc *d, int hooks, const char *stage,
		      const struct oci_hook *h, bool at_head, struct edit *e, char *err,
		      size_t errsz)
{
	int arr = json__member_fold(d, hooks, stage);
	char key[64];

	e->text = NULL;
	if (arr >= 0 && d->tok[arr].type == JSON_ARRAY) {
		for (int o = json__first(d, arr); o >= 0; o = json__next(d, o)) {
			if (same_hook(d, o, h))
				return 0;
		}
		if (d->tok[arr].size == 0) {
			e->off = e->end = d->tok[arr].start + 1;
			e->text = hook_text(h, "", "");
		} else if (at_head) {
			e->off = e->end = d->tok[arr].start + 1;
			e->text = hook_text(h, "", ",");
		} else {
			e->off = e->end = d->tok[arr].end - 1;
			e->text = hook_text(h, ",", "");
		}
	} else if (arr >= 0 && d->tok[arr].type != JSON_NULL) {
		snprintf(err, errsz, "config.json: hooks.%s is not an array", stage);
		return -EINVAL;
	} else if (arr >= 0) { /* "stage": null */
		e->off = d->tok[arr].start;
		e->end = d->tok[arr].end;
		e->text = hook_text(h, "[", "]");
	} else {
		/* a new member at the head of the hooks object */
		snprintf(key, sizeof(key), "\"%s\":[", stage);
		e->off = e->end = d->tok[hooks].start + 1;
		e->text = hook_text(h, key, d->tok[hooks].size ? "]," : "]");
	}
	return e->text ? 0 : -ENOMEM;
}

static int apply(const char *in, size_t len, const struct edit *e, char **out, size_t *outlen)
{
	size_t tlen = strlen(e->text);
	char *buf = malloc(len - (e->end - e->off) + tlen + 1);

	if (!buf)
		return -ENOMEM;
	memcpy(buf, in, e->off);
	memcpy(buf + e->off, e->text, tlen);
	memcpy(buf + e->off + tlen, in + e->end, len - e->end);
	*outlen = len - (e->end - e->off) + tlen;
	buf[*outlen] = '\0';
	*out = buf;
	return 0;
}

/* One step of oci__inject on the document in *text (replaced by the result): an empty hooks
 * object where there is none (stage NULL), or h in stage's array.
 */
static int inject_step(char **text, size_t *len, const char *stage, const struct oci_hook *h,
		       bool at_head, char *err, size_t errsz)
{
	struct json_doc d = { 0 };
	struct edit e = { 0 };
	char *next = NULL;
	size_t nlen = 0;
	int ret = parse(&d, "config.json", *text, *len, err, errsz), hooks;

	if (ret)
		return ret;
	hooks = json__member_fold(&d, 0, "hooks");
	if (!stage) {
		if (hooks < 0) {
			e.off = e.end = d.tok[0].start + 1;
			e.text = strdup(d.tok[0].size ? "\"hooks\":{}," : "\"hooks\":{}");
		} else if (d.tok[hooks].type == JSON_NULL) {
			e.off = d.tok[hooks].start;
			e.end = d.tok[hooks].end;
			e.text = strdup("{}");
		} else if (d.tok[hooks].type != JSON_OBJECT) {
			snprintf(err, errsz, "config.json: hooks is not an object");
			ret = -EINVAL;
		}
	} else {
		ret = stage_edit(&d, hooks, stage, h, at_head, &e, err, errsz);
	}
	json__free(&d);
	if (!ret && !stage && (e.off || e.end) && !e.text)
		ret = -ENOMEM; /* strdup */
	if (!ret && e.text)
		ret = apply(*text, *len, &e, &next, &nlen);
	free(e.text);
	if (!ret && next) {
		free(*text);
		*text = next;
		*len = nlen;
	}
	return ret;
}

int oci__inject(const char *config, size_t len, const struct oci_hook *create,
		const struct oci_hook *stop, char **out, size_t *outlen, char *err, size_t errsz)
{
	char *text = malloc(len + 1);
	int ret;

	if (!text)
		return -ENOMEM;
	memcpy(text, config, len);
	text[len] = '\0';
	*outlen = len;
	ret = inject_step(&text, outlen, NULL, NULL, false, err, errsz);
	if (!ret)
		ret = inject_step(&text, outlen, "createRuntime", create, true, err, errsz);
	if (!ret && stop)
		ret = inject_step(&text, outlen, "poststop", stop, false, err, errsz);
	if (!ret) {
		/* what egret's hook reads again: not past the tokenizer's limits, say */
		struct json_doc d = { 0 };

		ret = parse(&d, "config.json with egret's hooks", text, *outlen, err, errsz);
		json__free(&d);
	}
	if (ret) {
		free(text);
		return ret;
	}
	*out = text;
	return 0;
}

int oci__hooks_d(const struct oci_hook *hook, const char *stage, char *out, size_t size)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	int n;

	if (!f)
		return -ENOMEM;
	fputs("{\n  \"version\": \"1.0.0\",\n  \"hook\": ", f);
	hook_json(f, hook);
	fprintf(f, ",\n  \"when\": {\"always\": true},\n  \"stages\": [\"%s\"]\n}\n", stage);
	if (fclose(f)) {
		free(buf);
		return -ENOMEM;
	}
	n = snprintf(out, size, "%s", buf);
	free(buf);
	return n < 0 || (size_t)n >= size ? -E2BIG : n;
}
