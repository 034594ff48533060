/* Fuzz target: what egretctl oci-hook reads of a container (user/containers/oci.c) and egret's
 * hooks put into a config.json. An input is up to four sections separated by the line "%%": the
 * OCI state, config.json, the runtime's record (podman's containers.json or Docker's
 * config.v2.json: both parsers get it), and one of the hook's arguments (its first byte's low
 * bit also makes the container exempt). Each section is copied into a buffer of its exact size,
 * so ASan sees a read one byte past it.
 *
 * Invariants: no read outside the bytes given (ASan); a state taken has an id and an absolute
 * bundle, a pid in 0..INT32_MAX; a config.json taken leaves root.path absolute or unknown;
 * every string of the container is terminated inside its field; the runtime is named. The
 * registration's words parse with sandbox_meta__parse (or oci__words said -E2BIG), in any
 * buffer size, and say what the container is: egret's own annotations never for a pod's
 * container (its name NAMESPACE/POD/CONTAINER, its image and labels the runtime's); a selector
 * made of the fourth section is judged against them without a fault. oci__inject either refuses
 * (the output untouched, an error said) or gives a config.json that parses, with egret's
 * createRuntime hook first and its poststop hook last, the rest byte for byte as it was, and
 * that a second inject leaves byte for byte as it is; oci__hooks_d's output parses.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json.h"
#include "oci.h"
#include "sandbox.h"
#include "util.h"

#define CHECK(cond)                                                                          \
	do {                                                                                 \
		if (!(cond)) {                                                               \
			fprintf(stderr, "fuzz oci: %s:%d: %s\n", __FILE__, __LINE__, #cond); \
			abort();                                                             \
		}                                                                            \
	} while (0)

#define SEP	 "\n%%\n"
#define SECTIONS 4
#define CGROUP	 "/fuzz/cgroup"

struct input {
	char *exact[SECTIONS]; /* len[i] bytes, nothing after them */
	char *str[SECTIONS];   /* the same, NUL-terminated */
	size_t len[SECTIONS];
};

static char *copy(const uint8_t *p, size_t n, bool nul)
{
	size_t want = n + (nul ? 1 : 0);
	char *c = malloc(want ? want : 1);

	CHECK(c);
	memcpy(c, p, n);
	if (nul)
		c[n] = '\0';
	return c;
}

static void split(struct input *in, const uint8_t *data, size_t size)
{
	size_t off = 0, sl = sizeof(SEP) - 1;

	for (int i = 0; i < SECTIONS; i++) {
		const uint8_t *end = off < size && i < SECTIONS - 1
					     ? memmem(data + off, size - off, SEP, sl)
					     : NULL;
		size_t n = end ? (size_t)(end - (data + off)) : off < size ? size - off : 0;

		in->exact[i] = copy(data + off, n, false);
		in->str[i] = copy(data + off, n, true);
		in->len[i] = n;
		off = end ? (size_t)(end - data) + sl : size;
	}
}

static void input_free(struct input *in)
{
	for (int i = 0; i < SECTIONS; i++) {
		free(in->exact[i]);
		free(in->str[i]);
	}
}

#define TERMINATED(field) CHECK(memchr((field), '\0', sizeof(field)))

static void check_container(const struct oci_container *c)
{
	TERMINATED(c->id);
	TERMINATED(c->status);
	TERMINATED(c->bundle);
	TERMINATED(c->rootfs);
	TERMINATED(c->runtime);
	TERMINATED(c->sandbox_name);
	TERMINATED(c->egret_image);
	TERMINATED(c->name);
	TERMINATED(c->image);
	TERMINATED(c->pod_name);
	TERMINATED(c->pod_namespace);
	TERMINATED(c->pod_uid);
	TERMINATED(c->k8s_container);
	CHECK(c->nlabels <= SANDBOX_LABELS_MAX && c->negret_labels <= SANDBOX_LABELS_MAX);
	for (unsigned int i = 0; i < c->nlabels; i++) {
		TERMINATED(c->labels[i]);
		CHECK(c->labels[i][0] != '=' && strchr(c->labels[i], '='));
	}
	for (unsigned int i = 0; i < c->negret_labels; i++) {
		TERMINATED(c->egret_labels[i]);
		CHECK(c->egret_labels[i][0] != '=' && strchr(c->egret_labels[i], '='));
	}
	CHECK(c->pid >= 0);
	CHECK(!c->rootfs[0] || c->rootfs[0] == '/');
}

/* What a registration can carry (sandbox.c's own check, written again) */
static bool sayable(const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if (*p < 0x20 || *p == 0x7f)
			return false;
	}
	return v[0] && utf8_valid(v, strlen(v));
}

static bool has_string(const char list[][OCI_VALUE_MAX], unsigned int n, const char *s)
{
	for (unsigned int i = 0; i < n; i++) {
		if (!strcmp(list[i], s))
			return true;
	}
	return false;
}

static void check_field(const char *got, const char *want)
{
	if (sayable(want))
		CHECK(got && !strcmp(got, want));
	else
		CHECK(!got);
}

static void check_words(const struct oci_container *c, size_t size, const char *selector)
{
	char *buf = malloc(size ? size : 1), err[256];
	bool pod = oci__in_pod(c);
	struct sandbox_meta m;
	int n = oci__words(c, CGROUP, buf, size);

	if (n == -E2BIG) {
		free(buf);
		return;
	}
	CHECK(n > 0 && (size_t)n <= size);
	if (sandbox_meta__parse(&m, buf, (size_t)n, err, sizeof(err))) {
		fprintf(stderr, "fuzz oci: the words do not parse: %s\n", err);
		abort();
	}
	CHECK(m.exempt == c->exempt);
	check_field(m.cgroup, CGROUP);
	check_field(m.container_id, c->id);
	check_field(m.container_name, c->name[0] ? c->name : c->k8s_container);
	check_field(m.runtime, c->runtime);
	check_field(m.pod_name, c->pod_name);
	check_field(m.pod_namespace, c->pod_namespace);
	check_field(m.pod_uid, c->pod_uid);
	check_field(m.k8s_container, c->k8s_container);
	if (pod) {
		/* a pod's author says nothing of its sandbox through egret's annotations */
		size_t nslen = strlen(c->pod_namespace);

		CHECK(!m.name ||
		      (!strncmp(m.name, c->pod_namespace, nslen) && m.name[nslen] == '/'));
		check_field(m.image, c->image);
		for (unsigned int i = 0; i < m.nlabels; i++)
			CHECK(has_string(c->labels, c->nlabels, m.labels[i]));
	} else {
		CHECK(!m.name || !strcmp(m.name, c->sandbox_name));
		check_field(m.image, c->image[0] ? c->image : c->egret_image);
		for (unsigned int i = 0; i < m.nlabels; i++)
			CHECK(has_string(c->labels, c->nlabels, m.labels[i]) ||
			      has_string(c->egret_labels, c->negret_labels, m.labels[i]));
	}
	for (unsigned int i = 0; i < c->nlabels; i++) {
		size_t klen = strcspn(c->labels[i], "=");
		char key[OCI_VALUE_MAX];

		/* each label once: the runtime's says it */
		snprintf(key, sizeof(key), "%.*s", (int)klen, c->labels[i]);
		if (sayable(c->labels[i]))
			CHECK(sandbox_meta__label(&m, key) &&
			      !strcmp(sandbox_meta__label(&m, key), c->labels[i] + klen + 1));
	}
	if (selector) {
		(void)sandbox__selects(selector, m.name ? m.name : "x", &m);
		(void)sandbox__selects(selector, NULL, &m);
	}
	sandbox_meta__free(&m);
	free(buf);
}

/* ---- inject ------------------------------------------------------------------------------ */

static bool same_hook(const struct json_doc *d, int o, const struct oci_hook *h)
{
	int args = json__member_fold(d, o, "args");

	if (!json__eq(d, json__member_fold(d, o, "path"), h->path) || args < 0 ||
	    d->tok[args].type != JSON_ARRAY || d->tok[args].size != h->nargs)
		return false;
	for (unsigned int i = 0; i < h->nargs; i++) {
		if (!json__eq(d, json__elem(d, args, i), h->args[i]))
			return false;
	}
	return true;
}

/* Where h is in stage's array: its index, the array's size in *n; -1 when not there. */
static int hook_at(const struct json_doc *d, const char *stage, const struct oci_hook *h,
		   unsigned int *n)
{
	int arr = json__member_fold(d, json__member_fold(d, 0, "hooks"), stage), i = 0;

	CHECK(arr >= 0 && d->tok[arr].type == JSON_ARRAY);
	*n = d->tok[arr].size;
	for (int o = json__first(d, arr); o >= 0; o = json__next(d, o), i++) {
		if (same_hook(d, o, h))
			return i;
	}
	return -1;
}

/* [start, end) of the hooks value, or false */
static bool hooks_span(const char *text, size_t len, size_t *start, size_t *end)
{
	struct json_doc d;
	char err[JSON_ERR_LEN];
	int v;

	if (json__parse(&d, text, len, NULL, err, sizeof(err)))
		return false;
	v = json__member_fold(&d, 0, "hooks");
	if (v >= 0) {
		*start = d.tok[v].start;
		*end = d.tok[v].end;
	}
	json__free(&d);
	return v >= 0;
}

static void check_inject(const char *config, size_t len, const char *arg)
{
	const char *cargs[] = { "egretctl", "oci-hook", "createRuntime", "--exempt-namespace",
				arg };
	const char *sargs[] = { "egretctl", "oci-hook", "poststop" };
	const struct oci_hook create = { "/usr/local/sbin/egretctl", cargs, arg ? 5 : 3, 30 };
	const struct oci_hook stop = { "/usr/local/sbin/egretctl", sargs, 3, 0 };
	char *out = NULL, *again = NULL, err[256] = "";
	size_t outlen = 0, againlen = 0, is = 0, ie = 0, os = 0, oe = 0;
	struct json_doc d;
	unsigned int n;
	int ret = oci__inject(config, len, &create, &stop, &out, &outlen, err, sizeof(err)), at;

	if (ret) {
		CHECK(!out && err[0]);
		return;
	}
	CHECK(out && strlen(out) == outlen);
	if (json__parse(&d, out, outlen, NULL, err, sizeof(err))) {
		fprintf(stderr, "fuzz oci: inject's output does not parse: %s\n", err);
		abort();
	}
	at = hook_at(&d, "createRuntime", &create, &n);
	CHECK(at >= 0);
	at = hook_at(&d, "poststop", &stop, &n);
	CHECK(at >= 0);
	json__free(&d);
	/* the rest as it was: the hooks value aside, or "hooks":{...}, put after the top '{' */
	if (hooks_span(config, len, &is, &ie)) {
		CHECK(hooks_span(out, outlen, &os, &oe));
		CHECK(os == is && !memcmp(config, out, is));
		CHECK(len - ie == outlen - oe && !memcmp(config + ie, out + oe, len - ie));
	} else {
		const char *brace = memchr(config, '{', len);
		size_t head, added = outlen - len;

		CHECK(brace && outlen > len);
		head = (size_t)(brace - config) + 1;
		CHECK(!memcmp(config, out, head) && !strncmp(out + head, "\"hooks\":", 8));
		CHECK(!memcmp(config + head, out + head + added, len - head));
	}
	ret = oci__inject(out, outlen, &create, &stop, &again, &againlen, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "fuzz oci: inject refuses its own output: %s\n", err);
		abort();
	}
	CHECK(againlen == outlen && !memcmp(again, out, outlen));
	free(again);
	free(out);
}

static void check_hooks_d(const char *arg)
{
	const char *args[] = { "egretctl", "oci-hook", "createRuntime", arg };
	const struct oci_hook h = { "/usr/local/sbin/egretctl", args, arg ? 4 : 3, 30 };
	char out[4096], err[JSON_ERR_LEN];
	struct json_doc d;
	int n = oci__hooks_d(&h, "createRuntime", out, sizeof(out));

	if (n == -E2BIG)
		return;
	CHECK(n > 0 && (size_t)n == strlen(out));
	if (json__parse(&d, out, (size_t)n, NULL, err, sizeof(err))) {
		fprintf(stderr, "fuzz oci: the hooks.d file does not parse: %s\n", err);
		abort();
	}
	CHECK(json__eq(&d, json__member(&d, 0, "version"), "1.0.0"));
	CHECK(same_hook(&d, json__member(&d, 0, "hook"), &h));
	json__free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct oci_container *c = calloc(1, sizeof(*c));
	char err[512], sel[SANDBOX_SELECTOR_MAX], serr[256];
	const char *arg, *selector = NULL;
	struct input in;
	int ret;

	CHECK(c);
	split(&in, data, size);
	/* the fourth section: a hook argument (JSON says only UTF-8), a selector */
	arg = in.len[3] && strlen(in.str[3]) == in.len[3] && utf8_valid(in.str[3], in.len[3])
		      ? in.str[3]
		      : NULL;
	if (!sandbox__parse_selector_text(in.str[3], sel, sizeof(sel), serr, sizeof(serr)))
		selector = sel;

	ret = oci__parse_state(c, in.exact[0], in.len[0], err, sizeof(err));
	if (ret) {
		CHECK(ret == -EINVAL || ret == -E2BIG);
		CHECK(err[0]);
		memset(c, 0, sizeof(*c));
		snprintf(c->id, sizeof(c->id), "fuzz");
		snprintf(c->bundle, sizeof(c->bundle), "/run/fuzz");
	} else {
		CHECK(c->id[0] && c->bundle[0] == '/');
	}
	check_container(c);
	ret = oci__parse_config(c, in.exact[1], in.len[1], err, sizeof(err));
	CHECK(!ret || ((ret == -EINVAL || ret == -E2BIG) && err[0]));
	check_container(c);
	oci__detect_runtime(c);
	CHECK(c->runtime[0]);
	/* both records' parsers on the third section, whichever runtime it is */
	ret = oci__parse_podman(c, in.exact[2], in.len[2], err, sizeof(err));
	CHECK(!ret || err[0]);
	check_container(c);
	ret = oci__parse_docker(c, in.exact[2], in.len[2], err, sizeof(err));
	CHECK(!ret || err[0]);
	check_container(c);
	c->exempt = in.len[3] && (in.str[3][0] & 1);

	check_words(c, SANDBOX_META_WORDS_MAX, selector);
	check_words(c, (size * 131) % SANDBOX_META_WORDS_MAX, NULL);
	check_inject(in.exact[1], in.len[1], arg);
	check_hooks_d(arg);
	input_free(&in);
	free(c);
	return 0;
}
