/* Sandbox cgroups for integration tests: a sandbox's cgroup under an instance's root, running a
 * function or a command in a child that joined it as `egretctl run` does, resource limits on a
 * sandbox (cgroup2, or v1 beside it on hybrid hosts), and removing cgroup trees.
 */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cgroup.h"
#include "control.h"
#include "harness_cgroup.h"
#include "harness_instance.h"
#include "util.h"

/* Kill everything in a cgroup subtree and remove it, deepest first. */
void cgroup_tree__remove(const char *path)
{
	char sub[PATH_MAX * 2];
	struct dirent *de;
	DIR *d;

	snprintf(sub, sizeof(sub), "%s/cgroup.kill", path);
	write_file(sub, "1");
	d = opendir(path);
	if (d) {
		while ((de = readdir(d))) {
			if (de->d_type != DT_DIR || de->d_name[0] == '.')
				continue;
			snprintf(sub, sizeof(sub), "%s/%s", path, de->d_name);
			cgroup_tree__remove(sub);
		}
		closedir(d);
	}
	for (int i = 0; i < 100 && rmdir(path) && errno == EBUSY; i++)
		usleep(10000);
}

/* The mount point of a v1 controller's hierarchy ("memory", "pids"), from mountinfo: a cgroup
 * (v1) mount whose super options name the controller.
 */
int cgroup_v1__mount(const char *controller, char *out, size_t size)
{
	char line[4096];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int err = -ENOENT;

	while (f && err && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - cgroup "), *tok, *save = NULL, *opts;
		int field = 0;

		if (!sep)
			continue;
		/* " - cgroup SOURCE OPTIONS": the options are the third word after the dash */
		opts = strchr(sep + 10, ' ');
		if (!opts)
			continue;
		opts++;
		opts[strcspn(opts, "\n")] = '\0';
		for (tok = strtok_r(opts, ",", &save); tok && strcmp(tok, controller);
		     tok = strtok_r(NULL, ",", &save))
			;
		if (!tok)
			continue;
		save = NULL;
		for (tok = strtok_r(line, " ", &save); tok && ++field < 5;
		     tok = strtok_r(NULL, " ", &save))
			;
		if (tok) {
			snprintf(out, size, "%s", tok);
			err = 0;
		}
	}
	if (f)
		fclose(f);
	return err;
}

/* The v1 name of a cgroup v2 limit file, or NULL when v1 has none. */
static const char *v1_file(const char *file)
{
	if (!strcmp(file, "memory.max"))
		return "memory.limit_in_bytes";
	if (!strcmp(file, "pids.max"))
		return "pids.max";
	return NULL;
}

/* Enable a controller from the v2 mount down to egret's root, so its sandboxes have it. */
static int v2_enable(struct egret_instance *e, const char *controller)
{
	char path[PATH_MAX * 2], ctl[64];
	int err;

	snprintf(ctl, sizeof(ctl), "+%s", controller);
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", e->cgroup_mount);
	write_file(path, ctl); /* systemd has usually done it */
	if (mkdir(e->cgroup_root, 0755) && errno != EEXIST)
		return -errno;
	snprintf(path, sizeof(path), "%s/cgroup.subtree_control", e->cgroup_root);
	err = write_file(path, ctl);
	if (err)
		fprintf(stderr, "harness: cannot enable the %s controller in %s: %s\n", controller,
			path, strerror(-err));
	return err;
}

static int v1_limit(struct egret_instance *e, const char *mnt, const char *sandbox,
		    const char *file, const char *value, char *out, size_t size)
{
	char path[PATH_MAX * 2];
	int slot = -1;

	for (int i = 0; i < 4 && slot < 0; i++)
		slot = e->limit_dirs[i][0] ? -1 : i;
	if (slot < 0)
		return -E2BIG;
	snprintf(path, sizeof(path), "%s/%s", mnt, e->name);
	if (mkdir(path, 0755) && errno != EEXIST)
		return -errno;
	snprintf(out, size, "%s/%s/%s", mnt, e->name, sandbox);
	if (mkdir(out, 0755) && errno != EEXIST)
		return -errno;
	snprintf(e->limit_dirs[slot], sizeof(e->limit_dirs[slot]), "%s", out);
	snprintf(e->limit_sandbox[slot], sizeof(e->limit_sandbox[slot]), "%s", sandbox);
	snprintf(path, sizeof(path), "%s/%s", out, file);
	return write_file(path, value);
}

int harness_sandbox_limit(struct egret_instance *e, const char *sandbox, const char *file,
			  const char *value, char *out, size_t size)
{
	char controller[32], mnt[PATH_MAX], path[PATH_MAX * 2];
	const char *old = v1_file(file);
	int err;

	snprintf(controller, sizeof(controller), "%.*s", (int)strcspn(file, "."), file);
	if (old && cgroup_v1__mount(controller, mnt, sizeof(mnt)) == 0)
		return v1_limit(e, mnt, sandbox, old, value, out, size);
	/* pure v2 (or a hybrid host with the controller on v2): the sandbox cgroup itself */
	err = v2_enable(e, controller);
	if (err)
		return err;
	if (sandbox_path(e, sandbox, out, size) || (mkdir(out, 0755) && errno != EEXIST))
		return -errno ? -errno : -ENAMETOOLONG;
	snprintf(path, sizeof(path), "%s/%s", out, file);
	return write_file(path, value);
}

/* A process entering a sandbox joins the v1 limit cgroups made for it. */
static int join_limits(struct egret_instance *e, const char *sandbox)
{
	for (int i = 0; i < 4; i++) {
		if (e->limit_dirs[i][0] && !strcmp(e->limit_sandbox[i], sandbox) &&
		    cgroup__join(e->limit_dirs[i], getpid()))
			return -1;
	}
	return 0;
}

/* The v1 cgroups of an instance: <controller mount>/<name> and what is under it. */
void cgroup_v1__remove_limits(const char *name)
{
	static const char *const controllers[] = { "memory", "pids", "cpu" };
	char mnt[PATH_MAX], path[PATH_MAX * 2];

	for (size_t i = 0; i < sizeof(controllers) / sizeof(controllers[0]); i++) {
		if (cgroup_v1__mount(controllers[i], mnt, sizeof(mnt)))
			continue;
		snprintf(path, sizeof(path), "%s/%s", mnt, name);
		if (access(path, F_OK) == 0)
			cgroup_tree__remove(path);
	}
}

int sandbox_path(struct egret_instance *e, const char *sandbox, char *out, size_t size)
{
	return join_path(out, size, e->cgroup_root, sandbox);
}

/* Join the sandbox as egretctl run does: create it, have egretd install its rules (when egretd
 * runs), move in.
 */
static int enter(struct egret_instance *e, const char *sandbox)
{
	char *req[] = { "prepare", (char *)sandbox }, dir[PATH_MAX];
	FILE *null = fopen("/dev/null", "w");

	if (sandbox_path(e, sandbox, dir, sizeof(dir)) || (mkdir(dir, 0755) && errno != EEXIST))
		return -1;
	if (e->egretd && null)
		control__call(e->control, 2, req, null, null, 10);
	if (null)
		fclose(null);
	if (cgroup__join(dir, getpid()))
		return -1;
	return join_limits(e, sandbox);
}

/* fn in a child in the sandbox; the child's raw wait status, or -1. */
int in_sandbox_status(struct egret_instance *e, const char *sandbox, int (*fn)(void *), void *arg)
{
	int status;
	pid_t pid = fork();

	if (pid < 0)
		return -1;
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (sandbox && enter(e, sandbox))
			_exit(255);
		_exit(fn(arg) & 0xff);
	}
	if (waitpid(pid, &status, 0) < 0)
		return -1;
	return status;
}

int in_sandbox(struct egret_instance *e, const char *sandbox, int (*fn)(void *), void *arg)
{
	int status = in_sandbox_status(e, sandbox, fn, arg);

	return status >= 0 && WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

struct cmd_arg {
	char **argv;
	char *out;
	size_t outsz;
};

static int exec_captured(void *arg)
{
	struct cmd_arg *c = arg;

	return run_cmd(c->argv, c->out, c->outsz);
}

/* A command (NULL-terminated args) in a sandbox (NULL: outside), output captured; its exit
 * status. The child writes the output into a shared mapping.
 */
int sandbox_cmd(struct egret_instance *e, const char *sandbox, char *out, size_t outsz, ...)
{
	char *argv[64];
	va_list ap;
	int n = 0;

	va_start(ap, outsz);
	while (n < 63 && (argv[n] = va_arg(ap, char *)))
		n++;
	va_end(ap);
	argv[n] = NULL;
	return sandbox_cmdv(e, sandbox, out, outsz, argv);
}

int sandbox_cmdv(struct egret_instance *e, const char *sandbox, char *out, size_t outsz,
		 char *const argv[])
{
	char *shared;
	struct cmd_arg c;
	int rc;

	shared = mmap(NULL, outsz, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (shared == MAP_FAILED)
		return -1;
	shared[0] = '\0';
	c = (struct cmd_arg){ .argv = (char **)argv, .out = shared, .outsz = outsz };
	rc = in_sandbox(e, sandbox, exec_captured, &c);
	snprintf(out, outsz, "%s", shared);
	munmap(shared, outsz);
	return rc;
}
