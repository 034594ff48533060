/* Loading egret's objects: before each load, every map is shared with the object before it
 * that has one of that name, or adopted from a compatible pin a previous egretd left (so state
 * survives a restart); a pin of another layout is replaced once the new programs are in force
 * (loader_pins.c). A failed load is explained by loader_diag.c.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "loader_int.h"
#include "log.h"
#include "paths.h"

struct loader_map *loader__shared(const struct loader *l, const char *name)
{
	for (unsigned int i = 0; i < l->nshared; i++) {
		if (strcmp(l->shared[i].name, name) == 0)
			return (struct loader_map *)&l->shared[i];
	}
	return NULL;
}

static bool map_compatible(struct bpf_map *map, int fd)
{
	struct bpf_map_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return false;
	return info.type == bpf_map__type(map) && info.key_size == bpf_map__key_size(map) &&
	       info.value_size == bpf_map__value_size(map) &&
	       info.max_entries == bpf_map__max_entries(map) &&
	       info.map_flags == bpf_map__map_flags(map);
}

/* Before load: share a map an earlier object created, or adopt a compatible pinned one. */
static int prepare_map(struct loader *l, struct bpf_map *map, enum map_origin *origin)
{
	const char *name = bpf_map__name(map);
	struct loader_map *m = loader__shared(l, name);
	char pin[PATH_MAX];
	int fd, err;

	*origin = MAP_NEW;
	if (m)
		return bpf_map__reuse_fd(map, m->fd);
	err = paths__state(l->paths, pin, sizeof(pin), "maps", name);
	if (err)
		return err;
	fd = bpf_obj_get(pin);
	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	if (!map_compatible(map, fd)) {
		log_warn("pinned map %s does not match this egretd's layout: replacing it once the "
			 "new programs are in force (its contents are lost)",
			 pin);
		*origin = MAP_REPLACED;
		close(fd);
		return 0;
	}
	err = bpf_map__reuse_fd(map, fd);
	close(fd);
	if (!err)
		*origin = MAP_REUSED;
	return err;
}

/* every program of the unit is one loader__specs listed */
static int check_progs(const struct loader *l, const struct loader_unit *u)
{
	struct bpf_program *prog;

	bpf_object__for_each_program(prog, u->obj)
	{
		if (!loader__run_only(prog) && !loader__spec(l, bpf_program__name(prog))) {
			log_err("program '%s' in object '%s' is missing from loader_progs",
				bpf_program__name(prog), u->ops->name);
			return -EINVAL;
		}
	}
	return 0;
}

static int prepare_maps(struct loader *l, const struct loader_unit *u, enum map_origin *origins)
{
	struct bpf_map *map;
	unsigned int i = 0;

	bpf_object__for_each_map(map, u->obj)
	{
		int err;

		if (bpf_map__is_internal(map) || i >= LOADER_MAX_MAPS)
			continue;
		err = prepare_map(l, map, &origins[i++]);
		if (err) {
			log_err("failed to adopt map '%s': %s", bpf_map__name(map), strerror(-err));
			return err;
		}
	}
	return 0;
}

/* After load: the maps this unit has first, for the objects after it and for the pins. */
static int share_maps(struct loader *l, const struct loader_unit *u, const enum map_origin *origins)
{
	struct bpf_map *map;
	unsigned int i = 0;

	bpf_object__for_each_map(map, u->obj)
	{
		struct loader_map *m;

		if (bpf_map__is_internal(map))
			continue;
		if (loader__shared(l, bpf_map__name(map)) || i >= LOADER_MAX_MAPS) {
			i++;
			continue;
		}
		if (l->nshared >= LOADER_MAX_MAPS)
			return -E2BIG;
		m = &l->shared[l->nshared++];
		snprintf(m->name, sizeof(m->name), "%s", bpf_map__name(map));
		m->fd = bpf_map__fd(map);
		m->origin = origins[i++];
	}
	return 0;
}

static int load_unit(struct loader *l, struct loader_unit *u)
{
	enum map_origin origins[LOADER_MAX_MAPS];
	int err;

	err = check_progs(l, u);
	if (err)
		return err;
	err = prepare_maps(l, u, origins);
	if (err)
		return err;
	err = loader__diag_load(l, u->obj);
	if (err) {
		u->load_failed = true;
		return err;
	}
	err = share_maps(l, u, origins);
	if (err)
		return err;
	u->ops->fill_maps(u->skel, &l->maps);
	return 0;
}

int loader__load(struct loader *l)
{
	int err = loader__diag_init(l);

	for (unsigned int i = 0; !err && i < l->nunits; i++) {
		err = load_unit(l, &l->units[i]);
		if (err && l->units[i].load_failed)
			loader__diagnose(l, i, err);
	}
	loader__diag_free(l);
	return err;
}
