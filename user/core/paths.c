/* Resolving an egret instance's cgroup root, state dir and control socket; creating the root
 * cgroup and the bpffs state dir (mounting bpffs and tracefs when the host has not, once
 * however many egretds start at the same time).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include "cgroup.h"
#include "log.h"
#include "paths.h"
#include "util.h"

#define PATHS_DEPTH_MAX 16 /* EGRET_CGROUP_DEPTH */

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

int paths__cgroup_arg(const struct egret_paths *p, const char *arg, char *out, size_t size)
{
	int n;

	if (arg[0] == '/' && !cgroup__is_within(arg, p->cgroup_mount))
		n = snprintf(out, size, "%s%s", p->cgroup_mount, arg);
	else if (arg[0] == '/')
		n = snprintf(out, size, "%s", arg);
	else
		n = snprintf(out, size, "%s/%s", p->cgroup_mount, arg);
	if (n < 0 || (size_t)n >= size)
		return -ENAMETOOLONG;
	while (n > 1 && out[n - 1] == '/' && (size_t)n > strlen(p->cgroup_mount))
		out[--n] = '\0';
	return 0;
}

/* The level and id of an existing cgroup v2 directory named by an option. */
static int layout_cgroup(const struct egret_paths *p, const char *opt, const char *arg,
			 struct paths_cgroup *c)
{
	int err = paths__cgroup_arg(p, arg, c->path, sizeof(c->path));

	if (!err)
		err = cgroup__check_v2(c->path);
	if (!err)
		err = cgroup__level(p->cgroup_mount, c->path, &c->level);
	if (!err)
		err = cgroup__id(c->path, &c->id);
	if (err)
		log_err("%s %s: %s is not a cgroup v2 directory under %s (%s)", opt, arg, c->path,
			p->cgroup_mount, strerror(-err));
	else if (c->level + 2 > PATHS_DEPTH_MAX)
		log_err("%s %s: %u levels below %s; at most %u", opt, arg, c->level,
			p->cgroup_mount, PATHS_DEPTH_MAX - 2);
	return err ? err : c->level + 2 > PATHS_DEPTH_MAX ? -EINVAL : 0;
}

const char *paths__attach_path(const struct egret_paths *p)
{
	return p->attach.path[0] ? p->attach.path : p->cgroup_root;
}

uint64_t paths__attach_id(const struct egret_paths *p)
{
	return p->attach.path[0] ? p->attach.id : p->root_id;
}

int paths__layout(struct egret_paths *p, const char *attach, const char *const watch[],
		  unsigned int nwatch)
{
	int err;

	if (nwatch + 1 > PATHS_WATCH_MAX) {
		log_err("--watch: at most %d subtrees", PATHS_WATCH_MAX - 1);
		return -E2BIG;
	}
	err = layout_cgroup(p, "--attach", attach ? attach : "/", &p->attach);
	if (err)
		return err;
	err = layout_cgroup(p, "--cgroup", p->cgroup_root, &p->watch[0]);
	for (unsigned int i = 0; !err && i < nwatch; i++)
		err = layout_cgroup(p, "--watch", watch[i], &p->watch[i + 1]);
	if (err)
		return err;
	p->nwatch = nwatch + 1;
	for (unsigned int i = 0; i < p->nwatch; i++) {
		if (!cgroup__is_within(p->watch[i].path, p->attach.path)) {
			log_err("%s %s is not below --attach %s: egret's programs would not run "
				"there",
				i ? "--watch" : "--cgroup", p->watch[i].path, p->attach.path);
			return -EINVAL;
		}
	}
	return 0;
}

/* <state_dir>/<sub>/<name>, or <state_dir>/<sub> when name is NULL. */
int paths__state(const struct egret_paths *p, char *out, size_t size, const char *sub,
		 const char *name)
{
	int n = name ? snprintf(out, size, "%s/%s/%s", p->state_dir, sub, name)
		     : snprintf(out, size, "%s/%s", p->state_dir, sub);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

static bool on_fs(const char *path, long magic)
{
	struct statfs sfs;

	return statfs(path, &sfs) == 0 && sfs.f_type == magic;
}

/* Mount fstype on dir unless it is mounted there already, and say so in *mounted. Several
 * egretds may start at once, in one mount namespace or in several: each takes a flock on the
 * directory the file system is to be mounted on (one inode in every namespace that sees the
 * same /sys), checks again and mounts only if it still must, so the others, waiting, find
 * the mount instead of stacking a second one on it (or, in a namespace the mount does not
 * propagate to, mount their own). Once mounted, dir opens as the mounted root, which is
 * never locked here: only mounting waits for the lock, and never for long.
 */
static int mount_once(const char *dir, const char *fstype, long magic, const char *data,
		      bool *mounted)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;
	struct statfs sfs;

	*mounted = false;
	if (fd < 0)
		return -errno;
	if (fstatfs(fd, &sfs) == 0 && sfs.f_type == magic)
		goto out;
	if (flock(fd, LOCK_EX)) {
		err = -errno;
		goto out;
	}
	if (on_fs(dir, magic))
		goto out;
	if (mount(fstype, dir, fstype, 0, data) == 0) {
		*mounted = true;
	} else {
		err = -errno;
		if (err == -EBUSY && on_fs(dir, magic)) /* mounted by someone who does not lock */
			err = 0;
	}
out:
	close(fd);
	return err;
}

/* Mount fs on dir when the host has not, and say what was done. */
static int ensure_mounted(const char *dir, const char *fstype, const char *name, long magic,
			  const char *data)
{
	bool mounted;
	int err = mount_once(dir, fstype, magic, data, &mounted);

	if (err)
		log_err("failed to mount %s on %s: %s", name, dir, strerror(-err));
	else if (mounted)
		log_info("mounted %s on %s", name, dir);
	return err;
}

/* Make sure state_dir and its links/ and maps/ exist on a bpf file system, mounting bpffs on
 * /sys/fs/bpf when the host has not and the state dir is below it.
 */
int bpffs__ensure(const char *state_dir)
{
	char sub[PATH_MAX];
	int err;

	if (str_starts_with(state_dir, EGRET_BPFFS "/")) {
		err = ensure_mounted(EGRET_BPFFS, "bpf", "bpffs", BPF_FS_MAGIC, "mode=0700");
		if (err)
			return err;
	}
	err = mkdir_p(state_dir, 0700);
	if (err) {
		log_err("failed to create state dir %s: %s", state_dir, strerror(-err));
		return err;
	}
	if (!on_fs(state_dir, BPF_FS_MAGIC)) {
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
	return ensure_mounted(EGRET_TRACEFS, "tracefs", "tracefs", TRACEFS_MAGIC, NULL);
}
