/* egretctl oci-hook: egret's OCI runtime hook, and putting it where runtimes look for hooks.
 *
 *   oci-hook createRuntime   a runtime runs it once the container's cgroup and namespaces
 *                            exist and before its first instruction: it registers the
 *                            container with egretd and waits for egretd to say the sandbox
 *                            is in force; anything else fails the container's start
 *   oci-hook poststop        the container is gone: its registration ends
 *   oci-hook inject FILE     egret's hooks into an OCI config.json (a runc bundle's, the
 *                            base spec containerd gives every container)
 *   oci-hook hooks-d STAGE   the hooks.d file podman and CRI-O read
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cgroup.h"
#include "control.h"
#include "egretctl.h"
#include "log.h"
#include "oci.h"
#include "paths.h"
#include "util.h"

#define HOOK_TIMEOUT_S	    30 /* what the runtime gives the hook; egretd answers in milliseconds */
#define DEFAULT_DOCKER_ROOT "/var/lib/docker"

static const char oci_help[] =
	"Usage: egretctl [--control PATH] oci-hook createRuntime|poststop [--docker-root DIR]\n"
	"       egretctl [--control PATH] oci-hook inject [--hook PATH] [--docker-root DIR] "
	"[--exempt-namespace NS]... FILE|-\n"
	"       egretctl [--control PATH] oci-hook hooks-d [--hook PATH] createRuntime|poststop\n"
	"\n"
	"  createRuntime  as an OCI hook (the state on stdin): register the container with\n"
	"                 egretd, its cgroup, network namespace and root passed as\n"
	"                 descriptors, and exit 0 only once egretd has it in force; exit 1\n"
	"                 (the runtime then refuses to start the container) otherwise\n"
	"  poststop       as an OCI hook: the container's registration ends\n"
	"  inject         add egret's createRuntime and poststop hooks to an OCI config.json\n"
	"                 (in place; - reads stdin and writes stdout); hooks already there are\n"
	"                 left alone\n"
	"  hooks-d        print the hooks.d file (schema 1.0.0) for podman and CRI-O\n"
	"  --hook PATH    the egretctl the runtime runs (default: this one)\n"
	"  --docker-root DIR\n"
	"                 dockerd's --data-root, where a container's name and image are read\n"
	"                 (default " DEFAULT_DOCKER_ROOT ")\n"
	"  --exempt-namespace NS\n"
	"                 a Kubernetes pod in namespace NS is the host's, not a sandbox: it is\n"
	"                 registered as exempt, and starts even when egretd does not answer\n"
	"                 (egret's own namespace, and kube-system's cluster DNS); repeatable\n";

#define EXEMPT_MAX 16

struct hook_opts {
	const char *hook;
	const char *docker_root;
	const char *exempt[EXEMPT_MAX]; /* --exempt-namespace */
	unsigned int nexempt;
};

/* A whole small file (or stdin for "-") into a malloc'd buffer. */
static char *slurp(const char *path, size_t max, size_t *len)
{
	int fd = strcmp(path, "-") ? open(path, O_RDONLY | O_CLOEXEC) : dup(STDIN_FILENO);
	char *buf = NULL;
	size_t cap = 0;

	*len = 0;
	if (fd < 0)
		return NULL;
	for (;;) {
		ssize_t n;

		if (*len == cap) {
			char *next = cap < max ? realloc(buf, cap ? cap * 2 : 65536) : NULL;

			if (!next) {
				free(buf);
				close(fd);
				errno = cap < max ? ENOMEM : EFBIG;
				return NULL;
			}
			buf = next;
			cap = cap ? cap * 2 : 65536;
		}
		n = read(fd, buf + *len, cap - *len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			int e = errno;

			close(fd);
			if (n < 0) {
				free(buf);
				errno = e;
				return NULL;
			}
			return buf;
		}
		*len += (size_t)n;
	}
}

/* What the runtime that made the container keeps of it besides config.json. */
static void runtime_records(struct oci_container *c, const struct hook_opts *o)
{
	char path[PATH_MAX * 2], dir[PATH_MAX], err[256];
	size_t len;
	char *text;

	if (!strcmp(c->runtime, "podman")) {
		/* .../overlay-containers/<id>/userdata: containers.json is two levels up */
		snprintf(dir, sizeof(dir), "%s", c->bundle);
		snprintf(path, sizeof(path), "%s/containers.json", dirname(dirname(dir)));
	} else if (!strcmp(c->runtime, "docker")) {
		snprintf(path, sizeof(path), "%s/containers/%s/config.v2.json", o->docker_root,
			 c->id);
	} else {
		return;
	}
	text = slurp(path, OCI_CONFIG_MAX, &len);
	if (!text) {
		log_note("oci-hook: %s: %s (the container's name and image stay unknown)", path,
			 strerror(errno));
		return;
	}
	if ((!strcmp(c->runtime, "podman") ? oci__parse_podman
					   : oci__parse_docker)(c, text, len, err, sizeof(err)))
		log_note("oci-hook: %s", err);
	free(text);
}

/* The state on stdin and the bundle's config.json. */
static int read_container(struct oci_container *c, const struct hook_opts *o)
{
	char err[512], path[PATH_MAX + 16];
	size_t len;
	char *text = slurp("-", OCI_STATE_MAX, &len);
	int ret;

	if (!text) {
		log_note("oci-hook: cannot read the OCI state on stdin: %s", strerror(errno));
		return -EIO;
	}
	ret = oci__parse_state(c, text, len, err, sizeof(err));
	free(text);
	if (ret) {
		log_note("oci-hook: %s", err);
		return ret;
	}
	snprintf(path, sizeof(path), "%s/config.json", c->bundle);
	text = slurp(path, OCI_CONFIG_MAX, &len);
	if (!text) {
		log_note("oci-hook: %s: %s", path, strerror(errno));
		return -EIO;
	}
	ret = oci__parse_config(c, text, len, err, sizeof(err));
	free(text);
	if (ret) {
		log_note("oci-hook: %s", err);
		return ret;
	}
	oci__detect_runtime(c);
	runtime_records(c, o);
	return 0;
}

/* The container's cgroup (its init's "0::" line), network namespace and root directory. */
static int open_container(const struct oci_container *c, int fds[3], char *cgroup, size_t size)
{
	char mount[PATH_MAX], path[PATH_MAX], ns[64];
	int err = cgroup__find_v2_mount(mount, sizeof(mount));

	if (!err)
		err = cgroup__of_pid(c->pid, mount, path, sizeof(path));
	if (err) {
		log_note("oci-hook: the cgroup of the container's init (pid %d): %s", c->pid,
			 strerror(-err));
		return err;
	}
	snprintf(cgroup, size, "%s", path[strlen(mount)] ? path + strlen(mount) : "/");
	fds[0] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	snprintf(ns, sizeof(ns), "/proc/%d/ns/net", c->pid);
	fds[1] = open(ns, O_RDONLY | O_CLOEXEC);
	/* before the runtime switches root, /proc/PID/root is still the host's: the bundle's
	 * root file system is the container's
	 */
	fds[2] = open(c->rootfs[0] ? c->rootfs : "/nonexistent", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fds[0] < 0 || fds[1] < 0) {
		log_note("oci-hook: cannot open the %s of the container's init (pid %d): %s",
			 fds[0] < 0 ? "cgroup" : "network namespace", c->pid, strerror(errno));
		return -errno;
	}
	return 0;
}

static int hook_create(const char *control, const struct hook_opts *o)
{
	struct oci_container *c = calloc(1, sizeof(*c));
	char words[SANDBOX_META_WORDS_MAX], cgroup[PATH_MAX], *argv[SANDBOX_LABELS_MAX + 16];
	int fds[3] = { -1, -1, -1 }, argc = 0, n, rc = 1;

	if (!c)
		return 1;
	if (read_container(c, o))
		goto out;
	if (c->pid <= 0) {
		log_note(
			"oci-hook: the OCI state names no process: run me as a createRuntime hook");
		goto out;
	}
	for (unsigned int i = 0; i < o->nexempt && oci__in_pod(c); i++)
		c->exempt |= !strcmp(c->pod_namespace, o->exempt[i]);
	if (open_container(c, fds, cgroup, sizeof(cgroup)))
		goto out;
	n = oci__words(c, cgroup, words, sizeof(words));
	if (n < 0) {
		log_note("oci-hook: what the runtime says of container %s does not fit a "
			 "registration",
			 c->id);
		goto out;
	}
	argv[argc++] = "register";
	argv[argc++] = fds[2] >= 0 ? "with=cgroup,net,root" : "with=cgroup,net";
	for (int off = 0; off < n && argc < (int)ARRAY_SIZE(argv);
	     off += (int)strlen(words + off) + 1)
		argv[argc++] = words + off;
	rc = control__call_fds(control, argc, argv, fds, fds[2] >= 0 ? 3 : 2, stdout, stderr,
			       HOOK_TIMEOUT_S);
	if (rc < 0 && c->exempt) {
		log_note("oci-hook: egretd is not answering on %s (%s): container %s of exempt "
			 "namespace %s starts unregistered",
			 control, strerror(-rc), c->id, c->pod_namespace);
		rc = 0;
	} else if (rc < 0) {
		log_note(
			"oci-hook: egretd is not answering on %s (%s): container %s must not start "
			"unprotected",
			control, strerror(-rc), c->id);
	}
	rc = rc ? 1 : 0;
out:
	for (int i = 0; i < 3; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	free(c);
	return rc;
}

static int hook_stop(const char *control)
{
	struct oci_container *c = calloc(1, sizeof(*c));
	char word[300], *argv[2] = { "unregister", word };
	size_t len;
	char *text = slurp("-", OCI_STATE_MAX, &len);
	char err[512];
	int rc;

	if (!c || !text || oci__parse_state(c, text, len, err, sizeof(err))) {
		log_note("oci-hook: poststop: no OCI state on stdin");
		free(text);
		free(c);
		return 0; /* nothing to undo: the cgroup's removal ends the registration too */
	}
	snprintf(word, sizeof(word), "container.id=%s", c->id);
	rc = control__call(control, 2, argv, stdout, stderr, HOOK_TIMEOUT_S);
	if (rc < 0)
		log_note("oci-hook: poststop: egretd is not answering on %s: %s", control,
			 strerror(-rc));
	free(text);
	free(c);
	return 0;
}

/* The hook as runtimes should run it: this egretctl (or --hook), egretctl's --control when it
 * is not the default, the stage, --docker-root when given.
 */
static void hook_of(struct oci_hook *h, const char **args, const char *control, const char *stage,
		    const struct hook_opts *o, char *self, size_t size)
{
	ssize_t n = o->hook ? -1 : readlink("/proc/self/exe", self, size - 1);

	if (n > 0)
		self[n] = '\0';
	h->path = o->hook ? o->hook : n > 0 ? self : "/usr/local/sbin/egretctl";
	h->nargs = 0;
	args[h->nargs++] = "egretctl";
	if (strcmp(control, EGRET_DEFAULT_CONTROL)) {
		args[h->nargs++] = "--control";
		args[h->nargs++] = control;
	}
	args[h->nargs++] = "oci-hook";
	args[h->nargs++] = stage;
	if (strcmp(o->docker_root, DEFAULT_DOCKER_ROOT)) {
		args[h->nargs++] = "--docker-root";
		args[h->nargs++] = o->docker_root;
	}
	for (unsigned int i = 0; i < o->nexempt && !strcmp(stage, "createRuntime"); i++) {
		args[h->nargs++] = "--exempt-namespace";
		args[h->nargs++] = o->exempt[i];
	}
	h->args = args;
	h->timeout_s = HOOK_TIMEOUT_S;
}

/* Write text over path: a temporary file beside it, renamed over it (the mode kept). */
static int replace_file(const char *path, const char *text, size_t len)
{
	char tmp[PATH_MAX + 16];
	struct stat st;
	int fd, ret = 0;

	snprintf(tmp, sizeof(tmp), "%s.egret-tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		  stat(path, &st) ? 0644 : st.st_mode & 07777);
	if (fd < 0)
		return -errno;
	ret = write_all(fd, text, len);
	if (!ret && fsync(fd))
		ret = -errno;
	if (close(fd) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	return ret;
}

static int do_inject(const char *control, const struct hook_opts *o, const char *file)
{
	const char *cargs[16 + 2 * EXEMPT_MAX], *sargs[16 + 2 * EXEMPT_MAX];
	char self[PATH_MAX], err[512];
	struct oci_hook create, stop;
	char *in, *out = NULL;
	size_t len, outlen;
	int ret;

	hook_of(&create, cargs, control, "createRuntime", o, self, sizeof(self));
	hook_of(&stop, sargs, control, "poststop", o, self, sizeof(self));
	in = slurp(file, OCI_CONFIG_MAX, &len);
	if (!in) {
		log_note("oci-hook inject: %s: %s", file, strerror(errno));
		return 1;
	}
	ret = oci__inject(in, len, &create, &stop, &out, &outlen, err, sizeof(err));
	free(in);
	if (ret) {
		log_note("oci-hook inject: %s: %s", file, err[0] ? err : strerror(-ret));
		return 1;
	}
	if (!strcmp(file, "-"))
		ret = write_all(STDOUT_FILENO, out, outlen);
	else
		ret = replace_file(file, out, outlen);
	free(out);
	if (ret)
		log_note("oci-hook inject: cannot write %s: %s", file, strerror(-ret));
	return ret ? 1 : 0;
}

static int do_hooks_d(const char *control, const struct hook_opts *o, const char *stage)
{
	char self[PATH_MAX], out[8192];
	const char *args[16 + 2 * EXEMPT_MAX];
	struct oci_hook h;

	hook_of(&h, args, control, stage, o, self, sizeof(self));
	if (oci__hooks_d(&h, stage, out, sizeof(out)) < 0)
		return 1;
	fputs(out, stdout);
	return 0;
}

/* ---- egretctl register / unregister: the same registration by hand ---------------------- */

/* CGROUP (absolute, or relative to the v2 mount) into its directory path and "0::" form. */
static int cgroup_arg(const char *arg, char *path, size_t size, char *rel, size_t relsize)
{
	char mount[PATH_MAX];
	int err = cgroup__find_v2_mount(mount, sizeof(mount));

	if (err)
		return err;
	if (arg[0] == '/' && cgroup__is_within(arg, mount))
		err = snprintf(path, size, "%s", arg) >= (int)size;
	else
		err = snprintf(path, size, "%s%s%s", mount, arg[0] == '/' ? "" : "/", arg) >=
		      (int)size;
	if (err)
		return -ENAMETOOLONG;
	snprintf(rel, relsize, "%s", path[strlen(mount)] ? path + strlen(mount) : "/");
	return 0;
}

int egretctl__register(int argc, char **argv, const char *control)
{
	static const struct option longopts[] = {
		{ "netns", required_argument, NULL, 'n' },
		{ "root", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	char path[PATH_MAX], rel[PATH_MAX], cgword[PATH_MAX + 8], with[32] = "with=cgroup";
	const char *netns = NULL, *root = NULL;
	char *words[CONTROL_MAX_ARGS];
	int fds[3] = { -1, -1, -1 }, nfds = 0, n = 0, c, rc = 1;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		if (c == 'n')
			netns = optarg;
		else if (c == 'r')
			root = optarg;
		else if (c == 'h') {
			printf("Usage: egretctl register CGROUP [--netns PATH] [--root DIR] "
			       "[KEY=VALUE...]\n"
			       "  make CGROUP (absolute, or relative to the cgroup v2 mount) a "
			       "sandbox, with its\n"
			       "  network namespace (egret's resolver listens there at once) and "
			       "root directory\n"
			       "  (package files are read there); KEY: name, container.id, "
			       "container.name,\n"
			       "  container.image.name, container.runtime.name, k8s.pod.name, "
			       "k8s.namespace.name,\n"
			       "  k8s.pod.uid, k8s.container.name, label.KEY\n");
			return 0;
		} else
			return log_usage("register: unknown option '%s'", argv[optind - 1]);
	}
	if (optind >= argc)
		return log_usage("register: which cgroup? (egretctl register --help)");
	if (cgroup_arg(argv[optind++], path, sizeof(path), rel, sizeof(rel)))
		return log_usage("register: no cgroup v2 mount");
	fds[nfds++] = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (netns) {
		fds[nfds++] = open(netns, O_RDONLY | O_CLOEXEC);
		strcat(with, ",net");
	}
	if (root) {
		fds[nfds++] = open(root, O_PATH | O_DIRECTORY | O_CLOEXEC);
		strcat(with, ",root");
	}
	for (int i = 0; i < nfds; i++) {
		if (fds[i] < 0) {
			log_note("register: %s: %s",
				 i == 0		   ? path
				 : i == 1 && netns ? netns
						   : root,
				 strerror(errno));
			goto out;
		}
	}
	snprintf(cgword, sizeof(cgword), "cgroup=%s", rel);
	words[n++] = "register";
	words[n++] = with;
	words[n++] = cgword;
	while (optind < argc && n < CONTROL_MAX_ARGS)
		words[n++] = argv[optind++];
	rc = control__call_fds(control, n, words, fds, nfds, stdout, stderr, HOOK_TIMEOUT_S);
	if (rc < 0)
		log_note("egretd is not answering on %s: %s", control, strerror(-rc));
	rc = rc < 0 ? 1 : rc;
out:
	for (int i = 0; i < nfds; i++) {
		if (fds[i] >= 0)
			close(fds[i]);
	}
	return rc;
}

int egretctl__unregister(int argc, char **argv, const char *control)
{
	char path[PATH_MAX], rel[PATH_MAX], word[PATH_MAX], *words[2] = { "unregister", word };
	struct stat st;
	int rc;

	if (argc != 2 || argv[1][0] == '-')
		return log_usage("usage: egretctl unregister CGROUP | id=CGROUP_ID | "
				 "container.id=ID");
	if (strchr(argv[1], '=')) {
		snprintf(word, sizeof(word), "%s", argv[1]);
	} else {
		if (cgroup_arg(argv[1], path, sizeof(path), rel, sizeof(rel)) || stat(path, &st)) {
			log_note("unregister: %s: %s", argv[1], strerror(errno));
			return 1;
		}
		snprintf(word, sizeof(word), "id=%llu", (unsigned long long)st.st_ino);
	}
	rc = control__call(control, 2, words, stdout, stderr, HOOK_TIMEOUT_S);
	if (rc < 0)
		log_note("egretd is not answering on %s: %s", control, strerror(-rc));
	return rc < 0 ? 1 : rc;
}

int egretctl__oci_hook(int argc, char **argv, const char *control)
{
	static const struct option longopts[] = {
		{ "hook", required_argument, NULL, 'H' },
		{ "docker-root", required_argument, NULL, 'D' },
		{ "exempt-namespace", required_argument, NULL, 'E' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct hook_opts o = { .docker_root = DEFAULT_DOCKER_ROOT };
	const char *verb;
	int c;

	optind = 2; /* argv[0] is "oci-hook", argv[1] the verb */
	if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
		fputs(oci_help, argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	verb = argv[1];
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		if (c == 'H')
			o.hook = optarg;
		else if (c == 'D')
			o.docker_root = optarg;
		else if (c == 'E' && o.nexempt < EXEMPT_MAX)
			o.exempt[o.nexempt++] = optarg;
		else if (c == 'h') {
			fputs(oci_help, stdout);
			return 0;
		} else
			return log_usage("oci-hook: unknown option '%s'", argv[optind - 1]);
	}
	if (!strcmp(verb, "createRuntime") && optind == argc)
		return hook_create(control, &o);
	if (!strcmp(verb, "poststop") && optind == argc)
		return hook_stop(control);
	if (!strcmp(verb, "inject") && optind + 1 == argc)
		return do_inject(control, &o, argv[optind]);
	if (!strcmp(verb, "hooks-d") && optind + 1 == argc &&
	    (!strcmp(argv[optind], "createRuntime") || !strcmp(argv[optind], "poststop")))
		return do_hooks_d(control, &o, argv[optind]);
	return log_usage("oci-hook: expected createRuntime, poststop, inject FILE or hooks-d "
			 "STAGE (egretctl oci-hook --help)");
}
