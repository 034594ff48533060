/* deploy/kubernetes/ as kubectl reads it: `kubectl create --dry-run=client --validate=false`
 * maps every object's kind to a resource of the API, which takes discovery, so each test talks to
 * tests/tools/fake_kube_api.py (discovery documents for the kinds the manifests use, 404 for
 * everything else) through a kubeconfig of its own. Every object must be recognised and named,
 * a misspelled kind must fail, and kubectl's JSON of the objects must hold what the DaemonSet is
 * for: host PID namespace, the bpffs mount propagated both ways, every taint tolerated, rolling
 * updates, the PriorityClass of the manifests, probes running `egretctl status`, the policy
 * ConfigMap mounted where egretd reads it; and that policy must parse.
 *
 * kubectl is whatever `kubectl` is first in PATH, or $EGRET_KUBECTL; without one the tests fail
 * (CI installs Debian's kubernetes-client, deploy/packages.txt). The server and kubectl's cache
 * and HOME live in a temp dir removed at the end, the server killed and reaped by .fini, which
 * runs when an assertion fails too.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <criterion/criterion.h>

#include "policy.h"
#include "util.h"

#define MANIFESTS     EGRET_SOURCE_DIR "/deploy/kubernetes/"
#define FAKE_API      EGRET_SOURCE_DIR "/tests/tools/fake_kube_api.py"
#define PYTHON3	      "/usr/bin/python3" /* Debian's (deploy/packages.txt) */
#define OUT_MAX	      (1 << 20)
#define NAMESPACE     "egret-system"
#define PRIORITY_MAX  1000000000L /* the highest value of a user-defined PriorityClass */
#define POLICY_MOUNT  "/etc/egret/policy"
#define POLICY_KEY    "egret.policy"
#define BPFFS	      "/sys/fs/bpf"
#define SERVER_WAIT_S 10

static char tmpdir[64];
static char kubeconfig[PATH_MAX];
static pid_t server;
static int port;

static void stop_server(void)
{
	if (server > 0) {
		kill(server, SIGKILL);
		waitpid(server, NULL, 0);
		server = 0;
	}
}

/* fake_kube_api.py on a free port of 127.0.0.1, which it prints on stdout; 0, or -1 with why */
static int start_server(char *why, size_t whysz)
{
	char log[PATH_MAX], line[32] = "";
	struct pollfd pfd;
	int fds[2];
	size_t n = 0;

	snprintf(log, sizeof(log), "%s/fake_kube_api.log", tmpdir);
	if (pipe2(fds, O_CLOEXEC)) {
		snprintf(why, whysz, "pipe: %s", strerror(errno));
		return -1;
	}
	server = fork();
	if (server == 0) {
		dup2(fds[1], 1);
		execl(PYTHON3, "python3", FAKE_API, "--port", "0", "--log", log, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	if (server < 0) {
		close(fds[0]);
		snprintf(why, whysz, "fork: %s", strerror(errno));
		return -1;
	}
	pfd = (struct pollfd){ .fd = fds[0], .events = POLLIN };
	while (n + 1 < sizeof(line) && !strchr(line, '\n') &&
	       poll(&pfd, 1, SERVER_WAIT_S * 1000) > 0) {
		ssize_t got = read(fds[0], line + n, sizeof(line) - 1 - n);

		if (got <= 0)
			break;
		n += (size_t)got;
		line[n] = '\0';
	}
	close(fds[0]);
	port = atoi(line);
	if (!strchr(line, '\n') || port <= 0 || port > 65535) {
		snprintf(why, whysz, "%s printed no port within %d s (got '%s'; no " PYTHON3 "?)",
			 FAKE_API, SERVER_WAIT_S, line);
		return -1;
	}
	return 0;
}

/* path with text, created or replaced; 0 or -errno */
static int put_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int err = 0;

	if (!f)
		return -errno;
	if (fputs(text, f) < 0)
		err = -EIO;
	if (fclose(f) && !err)
		err = -errno;
	return err;
}

static void teardown(void);

/* .init: Criterion runs no .fini after a failed .init, so undo what was done before failing */
static void setup(void)
{
	char why[512] = "", text[1024];
	int ok;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/egret-unit-kube-XXXXXX");
	cr_assert(mkdtemp(tmpdir), "mkdtemp: %s", strerror(errno));
	ok = start_server(why, sizeof(why)) == 0;
	if (!ok)
		teardown();
	cr_assert(ok, "%s", why);
	/* a cluster, a user without credentials, a context: kubectl needs nothing else */
	snprintf(kubeconfig, sizeof(kubeconfig), "%s/kubeconfig", tmpdir);
	snprintf(text, sizeof(text),
		 "apiVersion: v1\nkind: Config\n"
		 "clusters:\n- name: fake\n  cluster:\n    server: http://127.0.0.1:%d\n"
		 "users:\n- name: fake\n  user: {}\n"
		 "contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n"
		 "current-context: fake\n",
		 port);
	ok = put_file(kubeconfig, text) == 0;
	if (!ok)
		teardown();
	cr_assert(ok, "cannot write %s", kubeconfig);
}

static void teardown(void)
{
	char *argv[] = { "/bin/rm", "-rf", tmpdir, NULL };
	pid_t pid;

	stop_server();
	if (!tmpdir[0])
		return;
	pid = fork();
	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	if (pid > 0)
		waitpid(pid, NULL, 0);
	tmpdir[0] = '\0';
}

TestSuite(kubernetes, .init = setup, .fini = teardown, .timeout = 120);

/* The kubectl to test: $EGRET_KUBECTL, or the first kubectl in PATH; NULL when there is none. */
static const char *find_kubectl(char *buf, size_t size)
{
	const char *env = getenv("EGRET_KUBECTL"), *path = getenv("PATH");

	if (env && *env)
		return access(env, X_OK) == 0 ? env : NULL;
	for (const char *p = path ? path : "/usr/bin:/bin"; *p;) {
		size_t len = strcspn(p, ":");

		snprintf(buf, size, "%.*s/kubectl", (int)len, p);
		if (len && access(buf, X_OK) == 0)
			return buf;
		p += len + (p[len] == ':');
	}
	return NULL;
}

struct result {
	int status;	 /* exit status, 128 + signal, or -errno */
	char *out, *err; /* stdout, stderr (NUL-terminated, at most OUT_MAX) */
};

static void result_free(struct result *r)
{
	free(r->out);
	free(r->err);
}

/* kubectl --kubeconfig <ours> --cache-dir <ours> ARGS..., HOME in the temp dir, no KUBECONFIG */
static void kubectl(struct result *r, const char *const args[])
{
	char bin[PATH_MAX], cache[PATH_MAX], errpath[PATH_MAX], cachearg[PATH_MAX + 16],
		kcarg[PATH_MAX + 16];
	const char *k = find_kubectl(bin, sizeof(bin));
	const char *argv[32];
	size_t n = 0, used = 0;
	int fds[2], status;
	pid_t pid;

	cr_assert(k,
		  "kubectl is not installed: %s. Install Debian's kubernetes-client "
		  "(deploy/bootstrap.sh installs deploy/packages.txt), or name one in "
		  "EGRET_KUBECTL",
		  getenv("EGRET_KUBECTL") ? "EGRET_KUBECTL is not an executable" : "none in PATH");
	snprintf(cache, sizeof(cache), "%s/kube-cache", tmpdir);
	snprintf(errpath, sizeof(errpath), "%s/kubectl.stderr", tmpdir);
	snprintf(kcarg, sizeof(kcarg), "--kubeconfig=%s", kubeconfig);
	snprintf(cachearg, sizeof(cachearg), "--cache-dir=%s", cache);
	argv[n++] = k;
	argv[n++] = kcarg;
	argv[n++] = cachearg;
	for (size_t i = 0; args[i] && n + 1 < sizeof(argv) / sizeof(argv[0]); i++)
		argv[n++] = args[i];
	argv[n] = NULL;

	r->out = calloc(1, OUT_MAX + 1);
	r->err = calloc(1, OUT_MAX + 1);
	cr_assert(r->out && r->err);
	cr_assert_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	cr_assert_geq(pid, 0, "fork: %s", strerror(errno));
	if (pid == 0) {
		int efd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

		if (efd < 0 || dup2(fds[1], 1) < 0 || dup2(efd, 2) < 0)
			_exit(126);
		unsetenv("KUBECONFIG");
		setenv("HOME", tmpdir, 1);
		execv(k, (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	for (;;) {
		char tmp[8192];
		ssize_t got = read(fds[0], tmp, sizeof(tmp));

		if (got <= 0)
			break;
		if (used < OUT_MAX) {
			size_t take = (size_t)got < OUT_MAX - used ? (size_t)got : OUT_MAX - used;

			memcpy(r->out + used, tmp, take);
			used += take;
		}
	}
	close(fds[0]);
	if (waitpid(pid, &status, 0) < 0)
		r->status = -errno;
	else
		r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	if (read_file(errpath, r->err, OUT_MAX + 1) < 0)
		r->err[0] = '\0';
}

/* --- just enough JSON to walk kubectl's output: a value is the span [p, end) of its text --- */

struct jv {
	const char *p, *end; /* p NULL: no such value */
};

static const char *ws(const char *p, const char *end)
{
	while (p < end && (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r'))
		p++;
	return p;
}

/* past the string at p (at its '"'), NULL when it does not end */
static const char *skip_string(const char *p, const char *end)
{
	for (p++; p < end; p++) {
		if (*p == '\\')
			p++;
		else if (*p == '"')
			return p + 1;
	}
	return NULL;
}

/* past the value at p, NULL when it is not one */
static const char *skip_value(const char *p, const char *end, int depth)
{
	p = ws(p, end);
	if (p >= end || depth > 64)
		return NULL;
	if (*p == '"')
		return skip_string(p, end);
	if (*p == '{' || *p == '[') {
		char close = *p == '{' ? '}' : ']';

		p = ws(p + 1, end);
		if (p < end && *p == close)
			return p + 1;
		for (;;) {
			if (close == '}') {
				if (p >= end || *p != '"' || !(p = skip_string(p, end)))
					return NULL;
				p = ws(p, end);
				if (p >= end || *p != ':')
					return NULL;
				p++;
			}
			if (!(p = skip_value(p, end, depth + 1)))
				return NULL;
			p = ws(p, end);
			if (p < end && *p == ',') {
				p = ws(p + 1, end);
				continue;
			}
			return p < end && *p == close ? p + 1 : NULL;
		}
	}
	while (p < end && (isalnum((unsigned char)*p) || (*p && strchr("+-.", *p))))
		p++;
	return p;
}

static struct jv jv_of(const char *p, const char *end)
{
	const char *start = ws(p, end), *stop = skip_value(start, end, 0);

	return stop && stop > start ? (struct jv){ start, stop } : (struct jv){ NULL, NULL };
}

/* Member key of an object, or element i (key NULL) of an array. */
static struct jv member(struct jv v, const char *key, size_t i)
{
	const char *p, *end = v.end;
	size_t klen = key ? strlen(key) : 0, at = 0;

	if (!v.p || *v.p != (key ? '{' : '['))
		return (struct jv){ NULL, NULL };
	p = ws(v.p + 1, end);
	while (p < end && *p != '}' && *p != ']') {
		const char *k = NULL, *kend = NULL;
		struct jv item;

		if (key) {
			k = p + 1;
			if (!(kend = skip_string(p, end)))
				break;
			p = ws(kend, end);
			if (p >= end || *p != ':')
				break;
			p++;
		}
		item = jv_of(p, end);
		if (!item.p)
			break;
		if (key ? (size_t)(kend - 1 - k) == klen && !memcmp(k, key, klen) : at == i)
			return item;
		at++;
		p = ws(item.end, end);
		if (p < end && *p == ',')
			p = ws(p + 1, end);
	}
	return (struct jv){ NULL, NULL };
}

/* The value at a path of object keys and array indexes: "spec/template/spec/hostPID",
 * "spec/containers/0/name".
 */
static struct jv at(struct jv v, const char *path)
{
	char part[128];

	while (v.p && *path) {
		size_t len = strcspn(path, "/");
		char *num_end;
		unsigned long idx;

		snprintf(part, sizeof(part), "%.*s", (int)len, path);
		idx = strtoul(part, &num_end, 10);
		v = *part && !*num_end ? member(v, NULL, idx) : member(v, part, 0);
		path += len + (path[len] == '/');
	}
	return v;
}

static bool is_literal(struct jv v, const char *text)
{
	return v.p && (size_t)(v.end - v.p) == strlen(text) && !memcmp(v.p, text, strlen(text));
}

/* the string value v, its escapes undone, into out; false when v is not a string */
static bool str_of(struct jv v, char *out, size_t size)
{
	size_t n = 0;

	if (!v.p || *v.p != '"' || !size)
		return false;
	for (const char *p = v.p + 1; p < v.end - 1 && n + 4 < size; p++) {
		if (*p != '\\') {
			out[n++] = *p;
			continue;
		}
		switch (*++p) {
		case 'n':
			out[n++] = '\n';
			break;
		case 't':
			out[n++] = '\t';
			break;
		case 'r':
			out[n++] = '\r';
			break;
		case 'b':
			out[n++] = '\b';
			break;
		case 'f':
			out[n++] = '\f';
			break;
		case 'u': {
			unsigned int c = 0;

			sscanf(p + 1, "%4x", &c);
			p += 4;
			if (c < 0x80) {
				out[n++] = (char)c;
			} else if (c < 0x800) {
				out[n++] = (char)(0xc0 | c >> 6);
				out[n++] = (char)(0x80 | (c & 0x3f));
			} else {
				out[n++] = (char)(0xe0 | c >> 12);
				out[n++] = (char)(0x80 | ((c >> 6) & 0x3f));
				out[n++] = (char)(0x80 | (c & 0x3f));
			}
			break;
		}
		default: /* " \ / */
			out[n++] = *p;
		}
	}
	out[n] = '\0';
	return true;
}

static bool str_is(struct jv v, const char *want)
{
	char buf[512];

	return str_of(v, buf, sizeof(buf)) && !strcmp(buf, want);
}

static long num_of(struct jv v)
{
	return v.p && (isdigit((unsigned char)*v.p) || *v.p == '-') ? strtol(v.p, NULL, 10) : -1;
}

/* The objects kubectl printed: one JSON object after another, or a List of them. */
struct objects {
	struct jv item[32];
	size_t n;
};

static void split_objects(const char *json, struct objects *o)
{
	const char *p = json, *end = json + strlen(json);

	o->n = 0;
	for (struct jv v = jv_of(p, end); v.p && o->n < 32; v = jv_of(p, end)) {
		if (str_is(member(v, "kind", 0), "List")) {
			struct jv items = member(v, "items", 0);

			for (size_t i = 0; o->n < 32 && member(items, NULL, i).p; i++)
				o->item[o->n++] = member(items, NULL, i);
		} else {
			o->item[o->n++] = v;
		}
		p = v.end;
	}
}

static struct jv find_kind(const struct objects *o, const char *kind)
{
	for (size_t i = 0; i < o->n; i++)
		if (str_is(member(o->item[i], "kind", 0), kind))
			return o->item[i];
	return (struct jv){ NULL, NULL };
}

/* element i of array v whose member key is the string want */
static struct jv find_by(struct jv array, const char *key, const char *want)
{
	struct jv e;

	for (size_t i = 0; (e = member(array, NULL, i)).p; i++)
		if (str_is(at(e, key), want))
			return e;
	return (struct jv){ NULL, NULL };
}

/* does the string array v hold an element whose text contains want? */
static bool strings_contain(struct jv v, const char *want)
{
	char buf[4096];
	struct jv e;

	for (size_t i = 0; (e = member(v, NULL, i)).p; i++)
		if (str_of(e, buf, sizeof(buf)) && strstr(buf, want))
			return true;
	return false;
}

static const char *const create_json[] = {
	"create", "--dry-run=client", "--validate=false", "-f", MANIFESTS, "-o", "json", NULL
};

static void manifests_as_json(struct result *r, struct objects *o)
{
	kubectl(r, create_json);
	cr_assert_eq(r->status, 0, "kubectl create -o json: exit %d\n%s", r->status, r->err);
	split_objects(r->out, o);
	cr_assert_geq(o->n, 5, "%zu objects in kubectl's JSON:\n%.2000s", o->n, r->out);
}

Test(kubernetes, kubectl_recognises_every_object)
{
	static const char *const args[] = {
		"create", "--dry-run=client", "--validate=false", "-f", MANIFESTS, "-o", "name",
		NULL
	};
	static const char *const want[] = {
		"namespace/" NAMESPACE "\n",
		"priorityclass.scheduling.k8s.io/egret-node-critical\n",
		"serviceaccount/egret\n",
		"configmap/egret-policy\n",
		"daemonset.apps/egret\n",
	};
	struct result r;

	kubectl(&r, args);
	cr_expect_eq(r.status, 0,
		     "kubectl create --dry-run=client: exit %d\nstdout:\n%s\nstderr:\n%s", r.status,
		     r.out, r.err);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		cr_expect(strstr(r.out, want[i]),
			  "kubectl did not print %s; stdout:\n%s\nstderr:\n%s", want[i], r.out,
			  r.err);
	result_free(&r);
}

Test(kubernetes, a_misspelled_kind_fails)
{
	static const char bad[] = "apiVersion: v1\n"
				  "kind: ConfigMap\n"
				  "metadata:\n  name: good\n  namespace: " NAMESPACE "\n"
				  "data:\n  a: b\n"
				  "---\n"
				  "apiVersion: apps/v1\n"
				  "kind: DaemonSett\n"
				  "metadata:\n  name: bad\n  namespace: " NAMESPACE "\n"
				  "spec: {}\n";
	char dir[PATH_MAX], file[PATH_MAX];
	const char *args[] = {
		"create", "--dry-run=client", "--validate=false", "-f", dir, "-o", "name", NULL
	};
	struct result r;

	snprintf(dir, sizeof(dir), "%s/bad", tmpdir);
	snprintf(file, sizeof(file), "%s/manifest.yaml", dir);
	cr_assert_eq(mkdir(dir, 0700), 0);
	cr_assert_eq(put_file(file, bad), 0);
	kubectl(&r, args);
	cr_expect_neq(r.status, 0, "kubectl accepted kind DaemonSett:\n%s", r.out);
	/* refused for its kind, by a server that answered: not for want of one */
	cr_expect(strstr(r.err, "no matches for kind \"DaemonSett\""), "stderr:\n%s", r.err);
	cr_expect(strstr(r.out, "configmap/good\n"), "the good object beside it: stdout:\n%s\n%s",
		  r.out, r.err);
	result_free(&r);
}

Test(kubernetes, the_daemonset_is_what_egretd_needs)
{
	char pc_name[256], sa_name[256], bpf_volume[256], policy_volume[256];
	struct jv ds, pod, egretd, v, e, mount;
	struct objects o;
	struct result r;
	bool found;

	manifests_as_json(&r, &o);
	ds = find_kind(&o, "DaemonSet");
	cr_assert(ds.p, "no DaemonSet in:\n%.2000s", r.out);
	pod = at(ds, "spec/template/spec");
	cr_assert(pod.p);

	cr_expect(str_is(at(ds, "metadata/namespace"), NAMESPACE));
	cr_expect(is_literal(at(pod, "hostPID"), "true"), "hostPID");
	cr_expect(is_literal(at(pod, "hostNetwork"), "true"), "hostNetwork");
	cr_expect(str_is(at(pod, "dnsPolicy"), "ClusterFirstWithHostNet"));

	/* a toleration of every taint: operator Exists with no key and no effect */
	found = false;
	for (size_t i = 0; (e = member(at(pod, "tolerations"), NULL, i)).p; i++)
		found |= str_is(at(e, "operator"), "Exists") && !at(e, "key").p &&
			 !at(e, "effect").p;
	cr_expect(found, "no toleration {operator: Exists} of every taint");

	cr_expect(str_is(at(ds, "spec/updateStrategy/type"), "RollingUpdate"));
	cr_expect_eq(num_of(at(ds, "spec/updateStrategy/rollingUpdate/maxUnavailable")), 1);

	/* the PriorityClass of these manifests, with a value a user-defined one may have */
	v = find_kind(&o, "PriorityClass");
	cr_assert(v.p, "no PriorityClass");
	cr_assert(str_of(at(v, "metadata/name"), pc_name, sizeof(pc_name)));
	cr_expect(str_is(at(pod, "priorityClassName"), pc_name),
		  "the DaemonSet's priorityClassName is not %s", pc_name);
	cr_expect(num_of(at(v, "value")) > 0 && num_of(at(v, "value")) <= PRIORITY_MAX,
		  "PriorityClass value %ld", num_of(at(v, "value")));

	/* the ServiceAccount, without a token */
	v = find_kind(&o, "ServiceAccount");
	cr_assert(v.p, "no ServiceAccount");
	cr_assert(str_of(at(v, "metadata/name"), sa_name, sizeof(sa_name)));
	cr_expect(str_is(at(pod, "serviceAccountName"), sa_name));
	cr_expect(is_literal(at(v, "automountServiceAccountToken"), "false"));
	cr_expect(is_literal(at(pod, "automountServiceAccountToken"), "false"));

	egretd = find_by(at(pod, "containers"), "name", "egretd");
	cr_assert(egretd.p, "no container egretd");
	cr_expect(is_literal(at(egretd, "securityContext/privileged"), "true"));

	/* bpffs from the host, mounted with Bidirectional propagation: pins outlive the pod */
	e = find_by(at(pod, "volumes"), "hostPath/path", BPFFS);
	cr_assert(e.p, "no hostPath volume of " BPFFS);
	cr_assert(str_of(at(e, "name"), bpf_volume, sizeof(bpf_volume)));
	mount = find_by(at(egretd, "volumeMounts"), "name", bpf_volume);
	cr_assert(mount.p, "egretd does not mount volume %s", bpf_volume);
	cr_expect(str_is(at(mount, "mountPath"), BPFFS));
	cr_expect(str_is(at(mount, "mountPropagation"), "Bidirectional"),
		  "volume %s is not mounted Bidirectional", bpf_volume);

	/* probes: egretctl status (0 only when attached and egretd answers) */
	v = at(egretd, "readinessProbe/exec/command");
	cr_expect(strings_contain(v, "egretctl") && strings_contain(v, "status"),
		  "readiness probe: %.*s", v.p ? (int)(v.end - v.p) : 4, v.p ? v.p : "none");
	v = at(egretd, "livenessProbe/exec/command");
	cr_expect(strings_contain(v, "egretctl") && strings_contain(v, "status"),
		  "liveness probe: %.*s", v.p ? (int)(v.end - v.p) : 4, v.p ? v.p : "none");

	/* the policy ConfigMap, mounted where egretd's command reads it from */
	e = find_by(at(pod, "volumes"), "configMap/name", "egret-policy");
	cr_assert(e.p, "no volume of ConfigMap egret-policy");
	cr_assert(str_of(at(e, "name"), policy_volume, sizeof(policy_volume)));
	mount = find_by(at(egretd, "volumeMounts"), "name", policy_volume);
	cr_assert(mount.p, "egretd does not mount volume %s", policy_volume);
	cr_expect(str_is(at(mount, "mountPath"), POLICY_MOUNT));
	v = at(egretd, "command");
	cr_expect(strings_contain(v, "--policy " POLICY_MOUNT "/" POLICY_KEY),
		  "egretd's command does not read " POLICY_MOUNT "/" POLICY_KEY);
	cr_expect(strings_contain(v, "--reload-on-change"));

	/* every object but the Namespace (and the cluster-wide PriorityClass) in it */
	for (size_t i = 0; i < o.n; i++) {
		if (str_is(at(o.item[i], "kind"), "Namespace")) {
			cr_expect(str_is(at(o.item[i], "metadata/name"), NAMESPACE));
			continue;
		}
		if (!str_is(at(o.item[i], "kind"), "PriorityClass"))
			cr_expect(str_is(at(o.item[i], "metadata/namespace"), NAMESPACE),
				  "object %zu is not in namespace " NAMESPACE, i);
	}
	result_free(&r);
}

Test(kubernetes, the_configmap_policy_parses)
{
	static char text[65536];
	char err[POLICY_ERR_LEN] = "";
	struct objects o;
	struct policy p;
	struct result r;
	struct jv cm;
	FILE *f;
	int ret;

	manifests_as_json(&r, &o);
	cm = find_kind(&o, "ConfigMap");
	cr_assert(cm.p, "no ConfigMap");
	cr_assert(str_of(at(cm, "data/" POLICY_KEY), text, sizeof(text)),
		  "ConfigMap has no key " POLICY_KEY);
	f = fmemopen(text, strlen(text), "r");
	cr_assert(f);
	policy__init(&p);
	ret = policy__parse(&p, POLICY_KEY, f, false, err, sizeof(err));
	fclose(f);
	cr_expect_eq(ret, 0, "egretd would refuse the ConfigMap's policy: %s", err);
	cr_expect_eq(p.mode, POLICY_ENFORCE, "the default policy is not mode enforce");
	cr_expect_gt(p.n, 0);
	policy__free(&p);
	result_free(&r);
}
