/* The pins under <state>: egretd pins the maps its load created and drops the pins of an
 * older layout once its programs are in force; egretctl asks which programs are in force,
 * removes every pin (uninstall) and reads a pinned map.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "keeper.h"
#include "loader_int.h"
#include "log.h"
#include "paths.h"
#include "tc.h"
#include "util.h"

/* Pin the maps this load created, replacing incompatible pins now that no program uses them. */
int loader__pin_maps(struct loader *l)
{
	char pin[PATH_MAX];

	for (unsigned int i = 0; i < l->nshared; i++) {
		struct loader_map *m = &l->shared[i];

		if (m->origin == MAP_REUSED)
			continue;
		if (paths__state(l->paths, pin, sizeof(pin), "maps", m->name))
			return -ENAMETOOLONG;
		if (m->origin == MAP_REPLACED)
			unlink(pin);
		if (bpf_obj_pin(m->fd, pin)) {
			int err = -errno;

			log_err("failed to pin map '%s' at %s: %s", m->name, pin, strerror(errno));
			return err;
		}
		m->origin = MAP_REUSED;
	}
	return 0;
}

static bool is_current_map(const struct loader *l, const char *name)
{
	return loader__shared(l, name) != NULL;
}

/* a link this egretd made (not one this kernel does without), pinned as links/<name> */
static bool is_made_link(const struct loader *l, const char *name)
{
	const struct egret_prog_spec *spec = loader__spec(l, name);

	return spec && loader__link_prog(l, spec);
}

static __u32 link_id(int fd)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

/* a second pin of a link in force (a pin renamed, which the keeper put back under its name) */
static bool is_current_link(const struct loader *l, int fd)
{
	__u32 id = link_id(fd);

	for (unsigned int i = 0; id && i < l->nlinks; i++) {
		if (link_id(l->link_fds[i]) == id)
			return true;
	}
	return false;
}

/* Links pinned by an older egretd for programs this one no longer has would go on enforcing a
 * policy nobody updates: detach them, now that everything current is in force.
 */
void loader__drop_stale_pins(struct loader *l)
{
	char dir[PATH_MAX], pin[PATH_MAX * 2];
	struct dirent *de;
	DIR *d;

	if (paths__state(l->paths, dir, sizeof(dir), "links", NULL))
		return;
	d = opendir(dir);
	if (!d)
		return;
	while ((de = readdir(d))) {
		int fd;

		if (de->d_name[0] == '.' || is_made_link(l, de->d_name))
			continue;
		snprintf(pin, sizeof(pin), "%s/%s", dir, de->d_name);
		fd = bpf_obj_get(pin);
		if (fd >= 0 && is_current_link(l, fd)) {
			close(fd);
			unlink(pin);
			log_info("removed %s, another pin of a link in force", pin);
			continue;
		}
		if (fd >= 0) {
			bpf_link_detach(fd);
			close(fd);
		}
		unlink(pin);
		log_info("detached stale link %s", pin);
	}
	closedir(d);
	/* maps of an older layout, used by nothing now */
	if (paths__state(l->paths, dir, sizeof(dir), "maps", NULL) || !(d = opendir(dir)))
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.' || is_current_map(l, de->d_name) ||
		    !strcmp(de->d_name, FEATURES_MAP))
			continue;
		snprintf(pin, sizeof(pin), "%s/%s", dir, de->d_name);
		unlink(pin);
		log_info("removed stale map pin %s", pin);
	}
	closedir(d);
}

static int prog_name_by_id(__u32 id, char *name, size_t size)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id), err = 0;

	if (fd < 0)
		return -errno;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		err = -errno;
	else
		snprintf(name, size, "%s", info.name);
	close(fd);
	return err;
}

/* The program id of our pinned link for spec, 0 when there is none. */
static __u32 pinned_prog_id(const struct egret_paths *paths, const struct egret_prog_spec *spec)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);
	char pin[PATH_MAX];
	int fd;

	if (paths__state(paths, pin, sizeof(pin), "links", spec->name))
		return 0;
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return 0;
	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		info.prog_id = 0;
	close(fd);
	return info.prog_id;
}

/* Is spec's program in force for the root cgroup: attached there or above it (egretd attaches
 * at --attach, the v2 root by default)? Our pinned link's program when there is one, else any
 * program of that name.
 */
static bool cgroup_has_prog(int cgroup_fd, const struct egret_paths *paths,
			    const struct egret_prog_spec *spec)
{
	__u32 ids[128], cnt = ARRAY_SIZE(ids), want = pinned_prog_id(paths, spec);
	char name[BPF_OBJ_NAME_LEN];

	if (bpf_prog_query(cgroup_fd, spec->attach_type, BPF_F_QUERY_EFFECTIVE, NULL, ids, &cnt) &&
	    errno != ENOSPC)
		return false;
	for (__u32 i = 0; i < cnt && i < ARRAY_SIZE(ids); i++) {
		if (want ? ids[i] == want
			 : prog_name_by_id(ids[i], name, sizeof(name)) == 0 &&
				    strcmp(name, spec->prog) == 0)
			return true;
	}
	return false;
}

static bool pin_has_prog(const struct egret_paths *paths, const struct egret_prog_spec *spec)
{
	struct bpf_link_info info = {};
	char pin[PATH_MAX], name[BPF_OBJ_NAME_LEN];
	__u32 len = sizeof(info);
	bool ok = false;
	int fd;

	if (paths__state(paths, pin, sizeof(pin), "links", spec->name))
		return false;
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return false;
	if (bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
	    prog_name_by_id(info.prog_id, name, sizeof(name)) == 0)
		ok = strcmp(name, spec->prog) == 0;
	close(fd);
	return ok;
}

/* Number of egret programs not in force on the root cgroup (0: fully protected), their names
 * space-separated in missing; a negative errno when the kernel cannot be asked.
 */
int loader__check(const struct egret_paths *paths, char *missing, size_t size)
{
	struct loader_specs specs;
	struct kernel_features kf;
	size_t used = 0;
	bool have_kf;
	int fd, n = 0;

	missing[0] = '\0';
	fd = open(paths->cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (loader__specs(&specs)) {
		close(fd);
		return -EINVAL;
	}
	have_kf = kfeatures__read_pinned(paths, &kf) == 0;
	for (unsigned int i = 0; i < specs.n; i++) {
		const struct egret_prog_spec *spec = &specs.spec[i];
		bool ok = spec->device || (spec->cgroup ? cgroup_has_prog(fd, paths, spec)
							: pin_has_prog(paths, spec));

		/* a program egretd did not load on this kernel, on purpose, is not missing */
		if (ok || (have_kf && kfeatures__prog_skipped(&kf, spec->name)))
			continue;
		n++;
		used += snprintf(missing + used, used < size ? size - used : 0, "%s%s",
				 used ? " " : "", spec->name);
	}
	close(fd);
	return n;
}

/* The programs egretd attaches on this kernel: all but those its pinned kernel_features
 * record says it did without.
 */
unsigned int loader__nexpected(const struct egret_paths *paths)
{
	struct loader_specs specs;
	struct kernel_features kf;
	unsigned int n = 0, skipped = 0;

	if (loader__specs(&specs))
		specs.n = 0;
	/* not a device's programs: they are in force per device, not on the root */
	for (unsigned int i = 0; i < specs.n; i++)
		n += !specs.spec[i].device;
	if (kfeatures__read_pinned(paths, &kf) == 0)
		skipped = kfeatures__nskipped(&kf);
	return skipped < n ? n - skipped : 0;
}

/* Take egret's filters off sandboxes' devices, detach every pinned link (BPF_LINK_DETACH takes
 * effect even while egretd still holds the link) and remove the pins of links and maps.
 */
int loader__uninstall(const struct egret_paths *paths)
{
	static const char *const subs[] = { "links", "maps" };
	char dir[PATH_MAX], pin[PATH_MAX * 2];
	int err = 0;

	/* sandboxes' devices first: their filters name no pin, the devices map does */
	if (paths__state(paths, dir, sizeof(dir), "maps", "devices") == 0)
		err = tc__detach_pinned(dir);

	for (unsigned int s = 0; s < ARRAY_SIZE(subs); s++) {
		struct dirent *de;
		DIR *d;

		if (paths__state(paths, dir, sizeof(dir), subs[s], NULL))
			return -ENAMETOOLONG;
		d = opendir(dir);
		if (!d) {
			if (errno != ENOENT)
				err = -errno;
			continue;
		}
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			snprintf(pin, sizeof(pin), "%s/%s", dir, de->d_name);
			if (s == 0) {
				int fd = bpf_obj_get(pin);

				/* tracepoint links cannot be detached: unpinning releases them */
				if (fd >= 0 && bpf_link_detach(fd) && errno != EINVAL &&
				    errno != EOPNOTSUPP)
					err = -errno;
				if (fd >= 0)
					close(fd);
			}
			if (unlink(pin) && !err)
				err = -errno;
		}
		closedir(d);
		rmdir(dir);
	}
	if (!paths__state(paths, pin, sizeof(pin), KEEPER_LINK, NULL))
		unlink(pin);
	rmdir(paths->state_dir);
	return err;
}

/* A pinned map of a running or past egretd, for egretctl's counters; -errno on failure. */
int loader__pinned_map(const struct egret_paths *paths, const char *name)
{
	char pin[PATH_MAX];
	int fd;

	if (paths__state(paths, pin, sizeof(pin), "maps", name))
		return -ENAMETOOLONG;
	fd = bpf_obj_get(pin);
	return fd < 0 ? -errno : fd;
}
