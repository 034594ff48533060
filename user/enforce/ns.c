/* The namespaces egretctl run gives a sandbox's command, built the way rootless container
 * runtimes build theirs, in steps split between egretctl (outside, host root) and its child:
 *
 *   egretctl: picks the sandbox's host id range and delegates its cgroup to it (ns__pick_ids),
 *     forks the child into a new pid namespace (ns__fork)
 *   child, still host root: a mount namespace of its own (owned by the host's user namespace):
 *     propagation private, /proc fresh for the pid namespace, egret's state covered by
 *     read-only empty mounts, the sandbox's cgroup over the cgroup2 mount (ns__stage); then
 *     a new user namespace with the rest (ns__unshare): its mount namespace is a copy owned by
 *     the new user namespace, so every mount made above is locked for the sandbox (it cannot
 *     unmount or remount them; it has no capability outside its user namespace)
 *   egretctl: writes the child's uid and gid maps (ns__write_maps) and moves it into the
 *     sandbox's cgroup
 *   child: becomes root of its user namespace (ns__become_root), a cgroup namespace rooted at
 *     the sandbox, loopback up in a network namespace of its own (ns__loopback_up)
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <net/if.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "array.h"
#include "ns.h"
#include "util.h"

/* ---- what is covered ------------------------------------------------------------------------ */

int ns_protect__add(struct ns_protect *p, const char *kind, const char *path)
{
	struct ns_path *v;

	if (!path || !path[0])
		return 0;
	if (ARRAY_RESERVE(p->v, p->cap, p->n + 1))
		return -ENOMEM;
	v = &p->v[p->n];
	if (strlen(path) >= sizeof(v->path) || strlen(kind) >= sizeof(v->kind))
		return -ENAMETOOLONG;
	strcpy(v->kind, kind);
	strcpy(v->path, path);
	p->n++;
	return 0;
}

/* One "protect KIND PATH" line of egretd's prepare reply. */
int ns_protect__add_line(struct ns_protect *p, const char *line)
{
	char kind[NS_KIND_MAX];
	const char *sp;
	size_t len;

	if (strncmp(line, "protect ", 8))
		return -EINVAL;
	line += 8;
	sp = strchr(line, ' ');
	len = sp ? (size_t)(sp - line) : 0;
	if (!len || len >= sizeof(kind) || sp[1] != '/')
		return -EINVAL;
	memcpy(kind, line, len);
	kind[len] = '\0';
	return ns_protect__add(p, kind, sp + 1);
}

void ns_protect__free(struct ns_protect *p)
{
	free(p->v);
	*p = (struct ns_protect){ 0 };
}

/* ---- host ids ------------------------------------------------------------------------------- */

static bool slot_of(uid_t uid, uint32_t *slot)
{
	if (uid < NS_IDS_BASE || (uid - NS_IDS_BASE) % NS_IDS_COUNT)
		return false;
	*slot = (uid - NS_IDS_BASE) / NS_IDS_COUNT;
	return *slot < NS_IDS_SLOTS;
}

/* The slots other sandboxes under root hold (their directory's owner) into used; *rival the
 * lowest cgroup id below ours holding slot want, 0 when none.
 */
static void scan_slots(const char *root, uint64_t mine, uint32_t want, uint8_t *used,
		       uint64_t *rival)
{
	struct dirent *de;
	DIR *d = opendir(root);

	*rival = 0;
	if (!d)
		return;
	while ((de = readdir(d))) {
		struct stat st;
		uint32_t slot;

		if (de->d_name[0] == '.' || fstatat(dirfd(d), de->d_name, &st, 0) ||
		    !S_ISDIR(st.st_mode) || st.st_ino == mine || !slot_of(st.st_uid, &slot))
			continue;
		used[slot / 8] |= (uint8_t)(1u << (slot % 8));
		if (slot == want && st.st_ino < mine && (!*rival || st.st_ino < *rival))
			*rival = st.st_ino;
	}
	closedir(d);
}

/* Make the sandbox's cgroup its root's to use: the directory (sub-cgroups) and the files that
 * move processes between them; its limits, cgroup.freeze and cgroup.kill stay root's.
 */
int ns__delegate(const char *dir, uid_t uid, gid_t gid)
{
	static const char *const files[] = { ".", "cgroup.procs", "cgroup.threads",
					     "cgroup.subtree_control" };
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	for (size_t i = 0; i < ARRAY_SIZE(files) && !err; i++) {
		if (fchownat(fd, files[i], uid, gid, 0) && errno != ENOENT)
			err = -errno;
	}
	close(fd);
	return err;
}

static uint32_t free_slot(const uint8_t *used, uint32_t from)
{
	for (uint32_t i = 0; i < NS_IDS_SLOTS; i++) {
		uint32_t s = (from + i) % NS_IDS_SLOTS;

		if (!(used[s / 8] & (1u << (s % 8))))
			return s;
	}
	return from;
}

int ns__pick_ids(const char *root, const char *name, struct sandbox_spec *s)
{
	uint8_t used[(NS_IDS_SLOTS + 7) / 8];
	char dir[PATH_MAX];
	struct stat st;
	uint32_t slot;
	uint64_t rival;
	int err = join_path(dir, sizeof(dir), root, name);

	if (err)
		return err;
	if (stat(dir, &st))
		return -errno;
	if (s->user_given)
		return ns__delegate(dir, s->uid, s->gid);
	/* a range the sandbox already has (another run in it) stays; else one from its id */
	if (!slot_of(st.st_uid, &slot))
		slot = (uint32_t)(st.st_ino % NS_IDS_SLOTS);
	memset(used, 0, sizeof(used));
	for (int tries = 0; tries < 16; tries++) {
		scan_slots(root, st.st_ino, slot, used, &rival);
		slot = free_slot(used, slot);
		s->uid = s->gid = NS_IDS_BASE + slot * NS_IDS_COUNT;
		s->ids = NS_IDS_COUNT;
		err = ns__delegate(dir, s->uid, s->gid);
		if (err)
			return err;
		/* two runs that picked the same free slot at once: the older sandbox keeps it */
		scan_slots(root, st.st_ino, slot, used, &rival);
		if (!rival)
			return 0;
	}
	return -EADDRINUSE;
}

/* ---- the child's namespaces ------------------------------------------------------------------ */

pid_t ns__fork(bool new_pid)
{
	/* egretctl forks nothing else afterwards: the new namespace is for this child only */
	pid_t pid;

	if (new_pid && unshare(CLONE_NEWPID))
		return -errno;
	pid = fork();
	return pid < 0 ? -errno : pid;
}

#define HIDE_FLAGS (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC)

/* A fresh read-only empty tmpfs over the directory path. */
static int cover_dir(const char *path)
{
	return mount("egret-hidden", path, "tmpfs", HIDE_FLAGS, "size=4k,nr_inodes=4,mode=0555")
		       ? -errno
		       : 0;
}

/* A read-only bind of src over path: an empty file, or path itself (a binary: still runs). */
static int cover_file(const char *src, const char *path)
{
	if (mount(src, path, NULL, MS_BIND, NULL))
		return -errno;
	return mount(NULL, path, NULL, MS_REMOUNT | MS_BIND | (HIDE_FLAGS & ~MS_NOEXEC), NULL)
		       ? -errno
		       : 0;
}

/* The control socket's directory, when nothing but the socket and its lock is in it. */
static bool egret_only_dir(const char *sock, char *dir, size_t size)
{
	char base[NAME_MAX + 8], tmp[PATH_MAX];
	struct dirent *de;
	bool only = true;
	DIR *d;

	snprintf(tmp, sizeof(tmp), "%s", sock);
	snprintf(base, sizeof(base), "%s", basename(tmp));
	snprintf(dir, size, "%s", dirname(tmp));
	if (!strcmp(dir, "/") || !(d = opendir(dir)))
		return false;
	while (only && (de = readdir(d))) {
		size_t n = strlen(base);

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		only = !strncmp(de->d_name, base, n) &&
		       (!de->d_name[n] || !strcmp(de->d_name + n, ".lock"));
	}
	closedir(d);
	return only;
}

/* Cover p when it is a directory (dirs true) or not (dirs false). */
static int cover(const struct ns_path *p, const char *blank, bool dirs)
{
	char real[PATH_MAX], dir[PATH_MAX];
	struct stat st;

	if (!realpath(p->path, real) || lstat(real, &st))
		return errno == ENOENT ? 0 : -errno;
	if (!strcmp(p->kind, "control") && egret_only_dir(real, dir, sizeof(dir)))
		return dirs ? cover_dir(dir) : 0;
	if (S_ISDIR(st.st_mode) != dirs)
		return 0;
	if (dirs)
		return cover_dir(real);
	return cover_file(!strcmp(p->kind, "binary") ? real : blank, real);
}

/* Every bpffs mount point (from mountinfo, whose paths escape space, tab, newline, \ as \ooo). */
static int cover_bpffs(void)
{
	FILE *f = fopen("/proc/self/mountinfo", "re");
	char line[8192], mnt[PATH_MAX], fstype[64];
	int err = 0;

	if (!f)
		return -errno;
	while (!err && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");
		size_t o = 0;

		if (!sep || sscanf(sep, " - %63s", fstype) != 1 || strcmp(fstype, "bpf") ||
		    sscanf(line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		for (size_t i = 0; mnt[i]; i++) {
			unsigned int c;

			if (mnt[i] == '\\' && sscanf(mnt + i + 1, "%3o", &c) == 1) {
				mnt[o++] = (char)c;
				i += 3;
			} else {
				mnt[o++] = mnt[i];
			}
		}
		mnt[o] = '\0';
		err = cover_dir(mnt);
		if (err == -ENOENT)
			err = 0;
	}
	fclose(f);
	return err;
}

/* The empty file the covers of files are binds of, in a tmpfs over the state dir (which is
 * covered anyway), made read-only once every bind is in place.
 */
static int blank_make(const char *state_dir, char *blank, size_t size)
{
	int fd;

	if (mount("egret-hidden", state_dir, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "size=4k,nr_inodes=4,mode=0555"))
		return -errno;
	if (join_path(blank, size, state_dir, ".empty"))
		return -ENAMETOOLONG;
	fd = open(blank, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	if (fd < 0)
		return -errno;
	close(fd);
	return 0;
}

static int blank_seal(const char *state_dir)
{
	return mount(NULL, state_dir, NULL, MS_REMOUNT | HIDE_FLAGS,
		     "size=4k,nr_inodes=4,mode=0555")
		       ? -errno
		       : 0;
}

/* Files first (binds of the blank file, which is then sealed), then directories. */
static int stage_covers(const struct ns_stage *st, char *what, size_t size)
{
	char blank[PATH_MAX];
	int err;

	snprintf(what, size, "%s", st->state_dir);
	err = blank_make(st->state_dir, blank, sizeof(blank));
	for (int dirs = 0; dirs < 2; dirs++) {
		for (size_t i = 0; !err && i < st->protect->n; i++) {
			snprintf(what, size, "%s", st->protect->v[i].path);
			err = cover(&st->protect->v[i], blank, dirs);
		}
		if (!err && !dirs) {
			snprintf(what, size, "%s", st->state_dir);
			err = blank_seal(st->state_dir);
		}
	}
	if (!err) {
		snprintf(what, size, "bpffs");
		err = cover_bpffs();
	}
	return err;
}

int ns__stage(const struct ns_stage *st, char *what, size_t size)
{
	int err;

	snprintf(what, size, "a mount namespace");
	if (unshare(CLONE_NEWNS) || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL))
		return -errno;
	snprintf(what, size, "/proc");
	if ((st->spec->ns & SANDBOX_NS_PID) &&
	    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL))
		return -errno;
	err = stage_covers(st, what, size);
	if (err)
		return err;
	snprintf(what, size, "%s", st->cgroup_mount);
	if ((st->spec->ns & SANDBOX_NS_CGROUP) &&
	    (mount(st->sandbox_dir, st->cgroup_mount, NULL, MS_BIND, NULL) ||
	     mount(NULL, st->cgroup_mount, NULL,
		   MS_REMOUNT | MS_BIND | MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL)))
		return -errno;
	return 0;
}

int ns__unshare(const struct sandbox_spec *s)
{
	int flags = 0;

	if (s->ns & SANDBOX_NS_USER)
		flags |= CLONE_NEWUSER | (s->ns & SANDBOX_NS_MOUNT ? CLONE_NEWNS : 0);
	if (s->ns & SANDBOX_NS_IPC)
		flags |= CLONE_NEWIPC;
	if (s->ns & SANDBOX_NS_UTS)
		flags |= CLONE_NEWUTS;
	if (s->ns & SANDBOX_NS_NET)
		flags |= CLONE_NEWNET;
	return flags && unshare(flags) ? -errno : 0;
}

int ns__write_maps(pid_t pid, const struct sandbox_spec *s)
{
	char path[64], map[64];
	int err;

	snprintf(map, sizeof(map), "0 %u %u\n", s->uid, s->ids);
	snprintf(path, sizeof(path), "/proc/%d/uid_map", (int)pid);
	err = write_file(path, map);
	if (err)
		return err;
	snprintf(map, sizeof(map), "0 %u %u\n", s->gid, s->ids);
	snprintf(path, sizeof(path), "/proc/%d/gid_map", (int)pid);
	return write_file(path, map);
}

int ns__become_root(void)
{
	if (setresgid(0, 0, 0) || setgroups(0, NULL) || setresuid(0, 0, 0))
		return -errno;
	return 0;
}

int ns__loopback_up(void)
{
	struct ifreq ifr = { .ifr_name = "lo" };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return -errno;
	if (ioctl(fd, SIOCGIFFLAGS, &ifr) < 0) {
		err = -errno;
		goto out;
	}
	ifr.ifr_flags |= IFF_UP;
	if (ioctl(fd, SIOCSIFFLAGS, &ifr) < 0)
		err = -errno;
out:
	close(fd);
	return err;
}
