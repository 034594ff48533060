/* Resolving an egret instance's cgroup root, state dir and control socket; creating the root
 * cgroup and the bpffs state dir (mounting bpffs when the host has not).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "cgroup.h"
#include "log.h"
#include "paths.h"
#include "util.h"

static int copy_path(char *dst, const char *src)
{
	size_t len = strlen(src);

	if (len == 0 || len >= PATH_MAX)
		return -ENAMETOOLONG;
	memcpy(dst, src, len + 1);
	while (len > 1 && dst[len - 1] == '/')
		dst[--len] = '\0';
	return 0;
}

/* cgroup: NULL for <mount>/egret, a path relative to the mount, or an absolute path. */
int paths__init(struct egret_paths *p, const char *cgroup, const char *state_dir,
		const char *control)
{
	int err;

	memset(p, 0, sizeof(*p));
	err = cgroup__find_v2_mount(p->cgroup_mount, sizeof(p->cgroup_mount));
	if (err) {
		log_err("no cgroup v2 file system in /proc/self/mountinfo: mount one (mount -t "
			"cgroup2 none /sys/fs/cgroup/unified) and retry");
		return err;
	}
	if (!cgroup)
		cgroup = EGRET_DEFAULT_CGROUP_NAME;
	if (cgroup[0] == '/')
		err = copy_path(p->cgroup_root, cgroup);
	else
		err = join_path(p->cgroup_root, sizeof(p->cgroup_root), p->cgroup_mount, cgroup);
	if (err)
		return err;
	err = cgroup__level(p->cgroup_mount, p->cgroup_root, &p->root_level);
	if (err || p->root_level == 0) {
		log_err("--cgroup %s must be a directory below the cgroup v2 mount %s", cgroup,
			p->cgroup_mount);
		return -EINVAL;
	}
	err = copy_path(p->state_dir, state_dir ? state_dir : EGRET_DEFAULT_STATE_DIR);
	if (!err)
		err = copy_path(p->control, control ? control : EGRET_DEFAULT_CONTROL);
	return err;
}

/* Create the root cgroup when missing, and learn its id. */
int paths__create_root(struct egret_paths *p)
{
	int err = mkdir_p(p->cgroup_root, 0755);

	if (err) {
		log_err("failed to create cgroup %s: %s", p->cgroup_root, strerror(-err));
		return err;
	}
	return paths__open_root(p);
}

int paths__open_root(struct egret_paths *p)
{
	int err = cgroup__check_v2(p->cgroup_root);

	if (err) {
		log_err("%s is not a cgroup v2 directory: %s", p->cgroup_root,
			err == -ENOTDIR ? "wrong file system" : strerror(-err));
		return err;
	}
	return cgroup__id(p->cgroup_root, &p->root_id);
}

/* <state_dir>/<sub>/<name>, or <state_dir>/<sub> when name is NULL. */
int paths__state(const struct egret_paths *p, char *out, size_t size, const char *sub,
		 const char *name)
{
	int n = name ? snprintf(out, size, "%s/%s/%s", p->state_dir, sub, name)
		     : snprintf(out, size, "%s/%s", p->state_dir, sub);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static bool on_bpffs(const char *path)
{
	struct statfs sfs;

	return statfs(path, &sfs) == 0 && sfs.f_type == BPF_FS_MAGIC;
}

/* Make sure state_dir and its links/ and maps/ exist on a bpf file system, mounting bpffs on
 * /sys/fs/bpf when the host has not and the state dir is below it.
 */
int bpffs__ensure(const char *state_dir)
{
	char sub[PATH_MAX];
	int err;

	if (str_starts_with(state_dir, EGRET_BPFFS "/") && !on_bpffs(EGRET_BPFFS)) {
		if (mount("bpf", EGRET_BPFFS, "bpf", 0, "mode=0700")) {
			err = -errno;
			log_err("failed to mount bpffs on %s: %s", EGRET_BPFFS, strerror(errno));
			return err;
		}
		log_info("mounted bpffs on %s", EGRET_BPFFS);
	}
	err = mkdir_p(state_dir, 0700);
	if (err) {
		log_err("failed to create state dir %s: %s", state_dir, strerror(-err));
		return err;
	}
	if (!on_bpffs(state_dir)) {
		log_err("state dir %s is not on a bpf file system: mount one (mount -t bpf bpf "
			"/sys/fs/bpf) or choose a --state-dir below one",
			state_dir);
		return -EXDEV;
	}
	for (const char *const *s = (const char *const[]){ "links", "maps", NULL }; *s; s++) {
		snprintf(sub, sizeof(sub), "%s/%s", state_dir, *s);
		if (mkdir(sub, 0700) && errno != EEXIST) {
			err = -errno;
			log_err("failed to create %s: %s", sub, strerror(errno));
			return err;
		}
	}
	return 0;
}

/* libbpf finds tracepoint ids under tracefs: mount it at /sys/kernel/tracing when the host has
 * not (it is not mounted on every machine).
 */
int tracefs__ensure(void)
{
	struct statfs sfs;

	if (statfs(EGRET_TRACEFS "/events", &sfs) == 0)
		return 0;
	if (mount("tracefs", EGRET_TRACEFS, "tracefs", 0, NULL)) {
		int err = -errno;

		log_err("failed to mount tracefs on %s: %s", EGRET_TRACEFS, strerror(errno));
		return err;
	}
	log_info("mounted tracefs on %s", EGRET_TRACEFS);
	return 0;
}
