/* Policy blocks' sandbox selectors and the registrations they select (user/core/sandbox.c):
 * sandbox__parse_selector[_text]'s forms, canonical output and messages; sandbox__selects for a
 * NAME, container=, image= (Docker's normal form both ways), k8s-namespace=, k8s-pod= and
 * label KEY=VALUE, with '*'; sandbox_meta__parse's words and refusals, sandbox_meta__label.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "sandbox.h"
#include "util.h"

/* ---- parsing selectors ------------------------------------------------------------------- */

struct sel_case {
	const char *text, *canonical; /* canonical NULL: refused, err starting with msg */
	const char *msg;
};

static const struct sel_case selectors[] = {
	{ "web", "web", NULL },
	{ "shop/web-7d9f/web", "shop/web-7d9f/web", NULL },
	{ "python:3.12", "python:3.12", NULL }, /* a sandbox NAME, as a registration may give */
	{ "label", "label", NULL },		/* so is this */
	{ "container=web", "container=web", NULL },
	{ "container=*", "container=*", NULL },
	{ "image=python:*", "image=python:*", NULL },
	{ "image=docker.io/library/python:3.12", "image=docker.io/library/python:3.12", NULL },
	{ "image=registry:5000/x@sha256:0a1b", "image=registry:5000/x@sha256:0a1b", NULL },
	{ "k8s-namespace=team-*", "k8s-namespace=team-*", NULL },
	{ "k8s-pod=api-*", "k8s-pod=api-*", NULL },
	{ "label app=web", "label app=web", NULL },
	{ "  label \t app=web*\t ", "label app=web*", NULL },
	{ "label app.kubernetes.io/name=a=b", "label app.kubernetes.io/name=a=b", NULL },
	{ "\tweb ", "web", NULL },
	{ "", NULL, "bad sandbox selector ''" },
	{ " \t ", NULL, "bad sandbox selector ' \t '" },
	{ "a b c", NULL, "bad sandbox selector 'a b c'" },
	{ "label a=b c", NULL, "bad sandbox selector 'label a=b c'" },
	{ "web other", NULL, "expected 'sandbox NAME {', 'sandbox KEY=VALUE {' (KEY: container" },
	{ "image=x y", NULL, "expected 'sandbox NAME {'" },
	{ "label app", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label =web", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label app=", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label a*=web", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label *=web", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label a{=web", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label a#b=web", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label a\x01=web", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label caf\xc3\xa9=web", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label app=we[b]", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label app=w?b", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "label app=w\\b", NULL, "expected 'sandbox label KEY=VALUE {'" },
	{ "bad{name", NULL, "bad sandbox name 'bad{name' (1-255 printable characters, no space" },
	{ "a#b", NULL, "bad sandbox name 'a#b'" },
	{ "web*", NULL, "bad sandbox name 'web*'" },
	{ "caf\xc3\xa9", NULL, "bad sandbox name" },
	{ "colour=red", NULL,
	  "unknown selector 'colour' (container, image, k8s-namespace, k8s-pod, label)" },
	{ "Image=python", NULL, "unknown selector 'Image'" },
	{ "label=x", NULL, "unknown selector 'label'" },
	{ "=x", NULL, "unknown selector ''" },
	{ "image=", NULL, "bad value in 'image=' (printable, '*' for any)" },
	{ "image=py[th]on", NULL, "bad value in 'image=py[th]on'" },
	{ "container=a?b", NULL, "bad value in 'container=a?b'" },
	{ "k8s-pod=a\\b", NULL, "bad value in 'k8s-pod=a\\b'" },
	{ "k8s-namespace=a{", NULL, "bad value in" },
	{ "container=\x7f", NULL, "bad value in" },
};

Test(selectors, parse_text)
{
	for (size_t i = 0; i < ARRAY_SIZE(selectors); i++) {
		const struct sel_case *t = &selectors[i];
		char out[SANDBOX_SELECTOR_MAX] = "", err[256] = "";
		int ret = sandbox__parse_selector_text(t->text, out, sizeof(out), err, sizeof(err));

		if (t->canonical) {
			cr_expect_eq(ret, 0, "'%s': %s", t->text, err);
			cr_expect_str_eq(out, t->canonical, "'%s'", t->text);
			cr_expect_eq(sandbox__selector_is_name(out), !strchr(out, '='));
			/* the canonical form is a fixed point */
			cr_expect_eq(sandbox__parse_selector_text(out, out, sizeof(out), err,
								  sizeof(err)),
				     0);
			cr_expect_str_eq(out, t->canonical);
		} else {
			cr_expect_eq(ret, -EINVAL, "'%s' taken as '%s'", t->text, out);
			cr_expect(!strncmp(err, t->msg, strlen(t->msg)), "'%s': '%s', not '%s...'",
				  t->text, err, t->msg);
		}
	}
}

/* As a policy file's 'sandbox ... {' line gives them: the words between. */
Test(selectors, parse_words)
{
	char *label[] = { "label", "team=ci" }, *name[] = { "web" }, *img[] = { "image=nginx:*" };
	char *three[] = { "label", "a=b", "c" }, *notlabel[] = { "labels", "a=b" };
	char out[SANDBOX_SELECTOR_MAX], err[256];

	cr_expect_eq(sandbox__parse_selector(label, 2, out, sizeof(out), err, sizeof(err)), 0);
	cr_expect_str_eq(out, "label team=ci");
	cr_expect_eq(sandbox__parse_selector(name, 1, out, sizeof(out), err, sizeof(err)), 0);
	cr_expect_str_eq(out, "web");
	cr_expect_eq(sandbox__parse_selector(img, 1, out, sizeof(out), err, sizeof(err)), 0);
	cr_expect_str_eq(out, "image=nginx:*");
	cr_expect_eq(sandbox__parse_selector(three, 3, out, sizeof(out), err, sizeof(err)),
		     -EINVAL);
	cr_expect(strstr(err, "'sandbox label KEY=VALUE {'"), "%s", err);
	cr_expect_eq(sandbox__parse_selector(notlabel, 2, out, sizeof(out), err, sizeof(err)),
		     -EINVAL);
	cr_expect_eq(sandbox__parse_selector(name, 0, out, sizeof(out), err, sizeof(err)), -EINVAL);
}

/* Lengths: a value of 255 characters, not 256; a selector that does not fit its buffer or
 * SANDBOX_SELECTOR_MAX is refused, with a message.
 */
Test(selectors, lengths)
{
	char text[1024], out[SANDBOX_SELECTOR_MAX], err[256];

	snprintf(text, sizeof(text), "image=%0255d", 7);
	cr_expect_eq(sandbox__parse_selector_text(text, out, sizeof(out), err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_str_eq(out, text);
	snprintf(text, sizeof(text), "image=%0256d", 7);
	cr_expect_eq(sandbox__parse_selector_text(text, out, sizeof(out), err, sizeof(err)),
		     -EINVAL);
	cr_expect(!strncmp(err, "bad value in", 12), "%s", err);
	memset(text, 'n', 255);
	text[255] = '\0';
	cr_expect_eq(sandbox__parse_selector_text(text, out, sizeof(out), err, sizeof(err)), 0);
	text[255] = 'n';
	text[256] = '\0';
	cr_expect_eq(sandbox__parse_selector_text(text, out, sizeof(out), err, sizeof(err)),
		     -EINVAL);
	cr_expect(!strncmp(err, "bad sandbox name", 16), "%s", err);
	memset(text, 'x', 600);
	text[600] = '\0';
	cr_expect_eq(sandbox__parse_selector_text(text, out, sizeof(out), err, sizeof(err)),
		     -EINVAL);
	cr_expect_str_eq(err, "sandbox selector longer than 320 characters");
	/* label KEY=VALUE: 319 characters fit a buffer of SANDBOX_SELECTOR_MAX bytes... */
	snprintf(text, sizeof(text), "label %060d=%0252d", 1, 2);
	cr_expect_eq(sandbox__parse_selector_text(text, out, sizeof(out), err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_str_eq(out, text);
	/* ...one more does not: refused, saying why (nothing is cut) */
	snprintf(text, sizeof(text), "label %061d=%0252d", 1, 2);
	cr_expect_eq(strlen(text), 320u);
	strcpy(err, "stale");
	cr_expect_eq(sandbox__parse_selector_text(text, out, sizeof(out), err, sizeof(err)),
		     -EINVAL);
	cr_expect_str_eq(err, "sandbox selector longer than 319 characters");
	cr_expect_eq(sandbox__parse_selector_text("container=web", out, 10, err, sizeof(err)),
		     -EINVAL);
	cr_expect_str_eq(err, "sandbox selector longer than 9 characters");
}

/* ---- what selectors select --------------------------------------------------------------- */

static struct sandbox_meta *meta_of(const char *words, size_t len)
{
	struct sandbox_meta *m = calloc(1, sizeof(*m));
	char err[256];

	cr_assert_not_null(m);
	cr_assert_eq(sandbox_meta__parse(m, words, len, err, sizeof(err)), 0, "%s", err);
	return m;
}

#define META(w) meta_of(w, sizeof(w) - 1)

static void meta_free(struct sandbox_meta *m)
{
	sandbox_meta__free(m);
	free(m);
}

struct select_case {
	const char *selector, *name;
	int meta; /* index into the metas of the test, -1 for none */
	bool selects;
};

Test(selectors, selects)
{
	struct sandbox_meta *metas[] = {
		/* 0: a pod's container, the image as containerd's CRI plugin names it */
		META("name=team-a/api-1/app\0cgroup=/k/p/c\0container.id=abc123def456\0"
		     "container.name=app\0container.image.name=docker.io/library/python:3.12\0"
		     "container.runtime.name=containerd\0k8s.pod.name=api-1\0"
		     "k8s.namespace.name=team-a\0k8s.pod.uid=u-1\0k8s.container.name=app\0"
		     "label.app=web-frontend\0label.tier=\0label.x=a=b\0"),
		/* 1: a docker container, the image as its user wrote it */
		META("container.id=82f69fc9\0container.name=build\0"
		     "container.image.name=python:3.12\0container.runtime.name=docker\0"),
		/* 2: nothing said but the cgroup */
		META("cgroup=/x\0"),
	};
	static const struct select_case t[] = {
		/* NAME: by the sandbox's name only, never by what the container is */
		{ "web", "web", -1, true },
		{ "web", "web", 1, true },
		{ "web", "web2", 1, false },
		{ "web", NULL, 1, false },
		{ "build", "sbx-1", 1, false },
		{ "82f69fc9", "sbx-1", 1, false },
		{ "python:3.12", "sbx-1", 1, false },
		{ "app", "team-a/api-1/app", 0, false },
		{ "team-a/api-1/app", "team-a/api-1/app", 0, true },
		/* the others: a registered container's meta only */
		{ "container=build", "build", -1, false },
		{ "container=build", "x", 1, true },
		{ "container=82f69fc9", "x", 1, true },
		{ "container=82f6*", "x", 1, true },
		{ "container=bui*", "x", 1, true },
		{ "container=buil", "x", 1, false },
		{ "container=*", "x", 2, false },
		{ "container=app", "x", 0, true },
		{ "k8s-namespace=team-a", "x", 0, true },
		{ "k8s-namespace=team-*", "x", 0, true },
		{ "k8s-namespace=team-b", "x", 0, false },
		{ "k8s-namespace=*", "x", 1, false },
		{ "k8s-pod=api-*", "x", 0, true },
		{ "k8s-pod=api", "x", 0, false },
		{ "k8s-pod=*", "x", 2, false },
		{ "label app=web-frontend", "x", 0, true },
		{ "label app=web*", "x", 0, true },
		{ "label app=*end", "x", 0, true },
		{ "label app=web", "x", 0, false },
		{ "label ap=*", "x", 0, false },
		{ "label tier=*", "x", 0, true },
		{ "label x=a=b", "x", 0, true },
		{ "label x=a", "x", 0, false },
		{ "label app=*", "x", 1, false },
		{ "label app=*", "x", -1, false },
		/* image= in Docker's normal form both ways */
		{ "image=python:3.12", "x", 0, true },
		{ "image=python:3.12", "x", 1, true },
		{ "image=docker.io/library/python:3.12", "x", 1, true },
		{ "image=docker.io/python:3.12", "x", 0, true },
		{ "image=docker.io/python:3.12", "x", 1, true },
		{ "image=index.docker.io/library/python:3.12", "x", 0, true },
		{ "image=library/python:3.12", "x", 1, true },
		{ "image=python:*", "x", 0, true },
		{ "image=python:*", "x", 1, true },
		{ "image=python*", "x", 0, true },
		{ "image=python*", "x", 1, true },
		{ "image=*python*", "x", 0, true },
		{ "image=docker.io/*", "x", 1, true },
		{ "image=docker.io/library/*", "x", 1, true },
		{ "image=*", "x", 1, true },
		{ "image=python", "x", 0, false },
		{ "image=python:3.1", "x", 0, false },
		{ "image=python:3.12.1", "x", 1, false },
		{ "image=ghcr.io/library/python:3.12", "x", 0, false },
		{ "image=localhost/python:3.12", "x", 1, false },
		{ "image=*", "x", 2, false },
		{ "image=python:3.12", "x", -1, false },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		const struct sandbox_meta *m = t[i].meta >= 0 ? metas[t[i].meta] : NULL;

		cr_expect_eq(sandbox__selects(t[i].selector, t[i].name, m), t[i].selects,
			     "'%s' of %s (meta %d): %s", t[i].selector, t[i].name ? t[i].name : "-",
			     t[i].meta, t[i].selects ? "not selected" : "selected");
	}
	for (size_t i = 0; i < ARRAY_SIZE(metas); i++)
		meta_free(metas[i]);
}

/* image= against references of every shape: image, pattern, whether it selects */
Test(selectors, image_normal_forms)
{
	static const struct {
		const char *image, *pattern;
		bool selects;
	} t[] = {
		{ "nginx", "nginx:latest", true },
		{ "nginx", "docker.io/library/nginx:latest", true },
		{ "nginx", "docker.io/library/nginx", true },
		{ "docker.io/library/nginx:latest", "nginx", true },
		{ "nginx:1", "nginx", false },
		{ "nginx", "nginx:1", false },
		{ "user/repo:1", "docker.io/user/repo:1", true },
		{ "docker.io/user/repo", "user/repo:latest", true },
		{ "user/repo:1", "user/repo", false },
		{ "user/repo:1", "docker.io/library/user/repo:1", false },
		{ "localhost/x:1", "localhost/x:1", true },
		{ "localhost/x:1", "docker.io/localhost/x:1", false },
		{ "localhost/x:1", "x:1", false },
		{ "localhost/x", "localhost/x:latest", true },
		{ "localhost:5000/x", "localhost:5000/x:latest", true },
		{ "registry:5000/x", "registry:5000/x:latest", true },
		{ "registry:5000/x:2", "registry:5000/x", false },
		{ "registry:5000/x", "docker.io/registry:5000/x", false },
		{ "quay.io/org/app:2", "quay.io/org/app:*", true },
		{ "quay.io/org/app:2", "org/app:2", false },
		{ "python@sha256:0a1b", "docker.io/library/python@sha256:0a1b", true },
		{ "python@sha256:0a1b", "python@*", true },
		{ "python@sha256:0a1b", "python", false },
		{ "python@sha256:0a1b", "python:*", false },
		{ "quay.io/org/app@sha256:ff", "quay.io/org/app@sha256:ff", true },
		{ "registry:5000/x@sha256:ff", "registry:5000/x@sha256:ff", true },
		{ "registry:5000/x@sha256:ff", "registry:5000/x", false },
		{ "python:3.12@sha256:ff", "docker.io/library/python:3.12@sha256:ff", true },
	};

	for (size_t i = 0; i < ARRAY_SIZE(t); i++) {
		char words[600], sel[300];
		int n = snprintf(words, sizeof(words), "container.image.name=%s", t[i].image);
		struct sandbox_meta *m = meta_of(words, (size_t)n + 1);

		snprintf(sel, sizeof(sel), "image=%s", t[i].pattern);
		cr_expect_eq(sandbox__selects(sel, "x", m), t[i].selects, "%s of %s", sel,
			     t[i].image);
		meta_free(m);
	}
}

/* An image too long for its normal form: matched as it is, not as a cut copy of it. */
Test(selectors, image_too_long)
{
	char words[SANDBOX_META_WORDS_MAX];
	struct sandbox_meta *m;
	int n = snprintf(words, sizeof(words), "container.image.name=x@");

	memset(words + n, 'a', 1100);
	n += 1100;
	n += snprintf(words + n, sizeof(words) - (size_t)n, "y");
	m = meta_of(words, (size_t)n + 1);
	cr_expect_not(sandbox__selects("image=x@*a", "x", m));
	cr_expect(sandbox__selects("image=x@*y", "x", m));
	cr_expect(sandbox__selects("image=x@a*", "x", m));
	meta_free(m);
}

/* ---- registrations --------------------------------------------------------------------- */

Test(selectors, meta_every_key)
{
	static const char w[] =
		"exempt=1\0name=ns/pod/ctr\0cgroup=/kubepods/pod1/c1\0"
		"container.id=c1\0container.name=ctr\0"
		"container.image.name=docker.io/library/nginx:1\0"
		"container.runtime.name=containerd\0k8s.pod.name=pod\0"
		"k8s.namespace.name=ns\0k8s.pod.uid=u-1\0k8s.container.name=ctr\0"
		"label.app=web\0label.tier=\0label.x=a=b\0label.caf\xc3\xa9=th\xc3\xa9\0";
	char copy[sizeof(w)];
	struct sandbox_meta m;
	char err[256];

	memcpy(copy, w, sizeof(w));
	cr_assert_eq(sandbox_meta__parse(&m, copy, sizeof(copy) - 1, err, sizeof(err)), 0, "%s",
		     err);
	memset(copy, 'z', sizeof(copy)); /* m has its own copy */
	cr_expect(m.exempt);
	cr_expect_str_eq(m.name, "ns/pod/ctr");
	cr_expect_str_eq(m.cgroup, "/kubepods/pod1/c1");
	cr_expect_str_eq(m.container_id, "c1");
	cr_expect_str_eq(m.container_name, "ctr");
	cr_expect_str_eq(m.image, "docker.io/library/nginx:1");
	cr_expect_str_eq(m.runtime, "containerd");
	cr_expect_str_eq(m.pod_name, "pod");
	cr_expect_str_eq(m.pod_namespace, "ns");
	cr_expect_str_eq(m.pod_uid, "u-1");
	cr_expect_str_eq(m.k8s_container, "ctr");
	cr_expect_eq(m.nlabels, 4u);
	cr_expect_str_eq(m.labels[0], "app=web");
	cr_expect_str_eq(sandbox_meta__label(&m, "app"), "web");
	cr_expect_str_eq(sandbox_meta__label(&m, "tier"), "");
	cr_expect_str_eq(sandbox_meta__label(&m, "x"), "a=b");
	cr_expect_str_eq(sandbox_meta__label(&m, "caf\xc3\xa9"), "th\xc3\xa9");
	cr_expect_null(sandbox_meta__label(&m, "ap"));
	cr_expect_null(sandbox_meta__label(&m, "apps"));
	cr_expect_null(sandbox_meta__label(&m, ""));
	cr_expect_null(sandbox_meta__label(&m, "a=b"));
	cr_expect_eq(m.len, sizeof(w) - 1);
	sandbox_meta__free(&m);
	cr_expect_null(m.words);
	cr_expect_null(m.name);

	cr_assert_eq(sandbox_meta__parse(&m, "cgroup=/\0", 9, err, sizeof(err)), 0, "%s", err);
	cr_expect_not(m.exempt);
	cr_expect_null(m.name);
	cr_expect_null(m.image);
	cr_expect_eq(m.nlabels, 0u);
	cr_expect_null(sandbox_meta__label(&m, "app"));
	sandbox_meta__free(&m);
}

struct meta_bad {
	const char *words;
	size_t len;
	int ret;
	const char *msg;
};

#define BAD(w, ret, msg)                   \
	{                                  \
		w, sizeof(w) - 1, ret, msg \
	}

static const struct meta_bad meta_bad[] = {
	BAD("colour=red\0", -EINVAL, "unknown key 'colour'"),
	BAD("container.ID=x\0", -EINVAL, "unknown key 'container.ID'"),
	BAD("label.=x\0", -EINVAL, "unknown key 'label.'"),
	BAD("labels=x\0", -EINVAL, "unknown key 'labels'"),
	BAD("name=a\0name=b\0", -EINVAL, "'name' is given twice"),
	BAD("container.id=a\0cgroup=/\0container.id=a\0", -EINVAL, "'container.id' is given twice"),
	BAD("label.app=a\0label.app=b\0", -EINVAL, "label 'app' is given twice"),
	BAD("label.app=a\0label.app=a\0", -EINVAL, "label 'app' is given twice"),
	BAD("noequals\0", -EINVAL, "'noequals': expected KEY=VALUE, the value printable UTF-8"),
	BAD("=x\0", -EINVAL, "'=x': expected KEY=VALUE"),
	BAD("cgroup=/\0\0", -EINVAL, "'': expected KEY=VALUE"),
	BAD("container.name=a\tb\0", -EINVAL, "'container.name=a\tb': expected KEY=VALUE"),
	BAD("container.name=a\nb\0", -EINVAL, "'container.name=a\nb': expected KEY=VALUE"),
	BAD("container.name=a\x7f\0", -EINVAL, "'container.name=a\x7f': expected KEY=VALUE"),
	BAD("container.name=\xff\0", -EINVAL, "'container.name=\xff': expected KEY=VALUE"),
	BAD("container.name=\xc0\xaf\0", -EINVAL, "'container.name="),
	BAD("container.name=\xed\xa0\x80\0", -EINVAL, "'container.name="),
	BAD("container.name=\xe2\x82\0", -EINVAL, "'container.name="),
	BAD("label.a\x01=b\0", -EINVAL, "'label.a\x01=b': expected KEY=VALUE"),
	BAD("label.\xff=b\0", -EINVAL, "'label.\xff=b': expected KEY=VALUE"),
	BAD("exempt=0\0", -EINVAL, "'exempt=0': expected exempt=1, once"),
	BAD("exempt=\0", -EINVAL, "'exempt=': expected exempt=1, once"),
	BAD("exempt=yes\0", -EINVAL, "'exempt=yes': expected exempt=1, once"),
	BAD("exempt=1\0exempt=1\0", -EINVAL, "'exempt=1': expected exempt=1, once"),
	BAD("name=a b\0", -EINVAL, "bad sandbox name 'a b' (1-255 printable characters, no space"),
	BAD("name=\0", -EINVAL, "bad sandbox name ''"),
	BAD("name=web*\0", -EINVAL, "bad sandbox name 'web*'"),
	BAD("name=a{b\0", -EINVAL, "bad sandbox name 'a{b'"),
	BAD("name=a=b\0", -EINVAL, "bad sandbox name 'a=b'"),
	BAD("name=caf\xc3\xa9\0", -EINVAL, "bad sandbox name"),
	BAD("cgroup=/", -E2BIG, "a registration is 1 to 4096 bytes of NUL-terminated words"),
	BAD("", -E2BIG, "a registration is 1 to 4096 bytes of NUL-terminated words"),
};

Test(selectors, meta_refusals)
{
	for (size_t i = 0; i < ARRAY_SIZE(meta_bad); i++) {
		const struct meta_bad *t = &meta_bad[i];
		struct sandbox_meta m;
		char err[256] = "";
		int ret = sandbox_meta__parse(&m, t->words, t->len, err, sizeof(err));

		cr_expect_eq(ret, t->ret, "#%zu '%s': %d", i, t->words, ret);
		cr_expect(!strncmp(err, t->msg, strlen(t->msg)), "#%zu: '%s', not '%s...'", i, err,
			  t->msg);
		cr_expect_null(m.words, "#%zu: a refusal keeps nothing", i);
		cr_expect_null(m.name);
		cr_expect_eq(m.nlabels, 0u);
	}
}

Test(selectors, meta_sizes)
{
	char words[SANDBOX_META_WORDS_MAX + 64], err[256];
	struct sandbox_meta m;
	size_t len = 0;

	/* 64 labels, and a 65th */
	for (unsigned int i = 0; i < SANDBOX_LABELS_MAX; i++)
		len += (size_t)sprintf(words + len, "label.k%u=v", i) + 1;
	cr_expect_eq(sandbox_meta__parse(&m, words, len, err, sizeof(err)), 0, "%s", err);
	cr_expect_eq(m.nlabels, SANDBOX_LABELS_MAX);
	cr_expect_str_eq(sandbox_meta__label(&m, "k63"), "v");
	sandbox_meta__free(&m);
	len += (size_t)sprintf(words + len, "label.k64=v") + 1;
	cr_expect_eq(sandbox_meta__parse(&m, words, len, err, sizeof(err)), -E2BIG);
	cr_expect_str_eq(err, "more than 64 labels");

	/* exactly SANDBOX_META_WORDS_MAX bytes, and one more */
	len = (size_t)sprintf(words, "container.image.name=");
	memset(words + len, 'i', SANDBOX_META_WORDS_MAX - len - 1);
	words[SANDBOX_META_WORDS_MAX - 1] = '\0';
	cr_expect_eq(sandbox_meta__parse(&m, words, SANDBOX_META_WORDS_MAX, err, sizeof(err)), 0,
		     "%s", err);
	cr_expect_eq(strlen(m.image), SANDBOX_META_WORDS_MAX - 22u);
	sandbox_meta__free(&m);
	words[SANDBOX_META_WORDS_MAX - 1] = 'i';
	words[SANDBOX_META_WORDS_MAX] = '\0';
	cr_expect_eq(sandbox_meta__parse(&m, words, SANDBOX_META_WORDS_MAX + 1, err, sizeof(err)),
		     -E2BIG);
	cr_expect_str_eq(err, "a registration is 1 to 4096 bytes of NUL-terminated words");
	/* the last byte not a NUL: the words are not read past len */
	cr_expect_eq(sandbox_meta__parse(&m, "cgroup=/x", 9, err, sizeof(err)), -E2BIG);

	/* a name of 255 characters, not 256 */
	len = (size_t)sprintf(words, "name=");
	memset(words + len, 'n', 255);
	words[len + 255] = '\0';
	cr_expect_eq(sandbox_meta__parse(&m, words, len + 256, err, sizeof(err)), 0, "%s", err);
	sandbox_meta__free(&m);
	words[len + 255] = 'n';
	words[len + 256] = '\0';
	cr_expect_eq(sandbox_meta__parse(&m, words, len + 257, err, sizeof(err)), -EINVAL);
	cr_expect(!strncmp(err, "bad sandbox name", 16), "%s", err);
}
