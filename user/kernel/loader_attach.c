/* Attaching: each program egretd loaded either goes into the link a previous egretd pinned at
 * <state>/links/<program> (BPF_LINK_UPDATE, atomic; a tracepoint's link is replaced beside the
 * old one) or is attached through a new link pinned there. Nothing is detached on the way.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "loader_int.h"
#include "log.h"
#include "paths.h"

enum link_state {
	LINK_OURS,    /* attached to our root cgroup with the right attach type */
	LINK_STALE,   /* its cgroup is gone, or it was detached */
	LINK_FOREIGN, /* attached to another cgroup */
};

static int link_state(int fd, const struct loader *l, const struct egret_prog_spec *spec,
		      enum link_state *state)
{
	struct bpf_link_info info = {};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(fd, &info, &len))
		return -errno;
	if (!spec->cgroup) {
		*state = LINK_OURS;
		return 0;
	}
	if (info.type != BPF_LINK_TYPE_CGROUP || info.cgroup.cgroup_id == 0)
		*state = LINK_STALE;
	else if (info.cgroup.cgroup_id != paths__attach_id(l->paths) ||
		 info.cgroup.attach_type != spec->attach_type)
		*state = LINK_FOREIGN;
	else
		*state = LINK_OURS;
	return 0;
}

/* Swap prog into the pinned link at pin; -ENOENT when there is no usable pinned link. */
static int attach_new(struct loader *l, struct bpf_program *prog,
		      const struct egret_prog_spec *spec, const char *pin);

/* Tracepoint links cannot be updated in place: attach the new program beside the old one, move
 * the pin over with rename(2), then let the old link go. Both run for a moment; neither is
 * ever missing.
 */
static int replace_link(struct loader *l, struct bpf_program *prog,
			const struct egret_prog_spec *spec, const char *pin, int old_fd)
{
	char tmp[PATH_MAX + 8];
	int err;

	snprintf(tmp, sizeof(tmp), "%s_next", pin); /* bpffs names take no dots */
	unlink(tmp);
	err = attach_new(l, prog, spec, tmp);
	if (err)
		return err;
	if (rename(tmp, pin)) {
		err = -errno;
		log_err("failed to move pin %s to %s: %s", tmp, pin, strerror(errno));
		return err;
	}
	close(old_fd);
	l->adopted++;
	return 0;
}

static int adopt_link(struct loader *l, struct bpf_program *prog,
		      const struct egret_prog_spec *spec, const char *pin)
{
	enum link_state state = LINK_STALE;
	int fd, err;

	fd = bpf_obj_get(pin);
	if (fd < 0)
		return errno == ENOENT ? -ENOENT : -errno;
	err = link_state(fd, l, spec, &state);
	if (err)
		goto fail;
	if (state == LINK_FOREIGN) {
		log_err("pinned link %s is attached to another cgroup than %s: give each cgroup "
			"root its own --state-dir",
			pin, paths__attach_path(l->paths));
		err = -EXDEV;
		goto fail;
	}
	if (state == LINK_STALE) {
		log_info("pinned link %s is no longer attached: replacing it", pin);
		unlink(pin);
		err = -ENOENT;
		goto fail;
	}
	if (!spec->cgroup) {
		err = replace_link(l, prog, spec, pin, fd); /* closes fd once replaced */
		if (err)
			goto fail;
		return 0;
	}
	if (bpf_link_update(fd, bpf_program__fd(prog), NULL)) {
		err = -errno;
		log_err("failed to update pinned link %s with '%s' on %s: %s", pin, spec->name,
			paths__attach_path(l->paths), strerror(errno));
		goto fail;
	}
	l->link_fds[l->nlinks++] = fd;
	l->adopted++;
	return 0;
fail:
	close(fd);
	return err;
}

static int attach_new(struct loader *l, struct bpf_program *prog,
		      const struct egret_prog_spec *spec, const char *pin)
{
	struct bpf_link *link;
	int err;

	if (spec->cgroup) {
		link = bpf_program__attach_cgroup(prog, l->cgroup_fd);
	} else if (spec->tp[0]) {
		char cat[sizeof(spec->tp)];
		char *tp = strchr(strcpy(cat, spec->tp), '/');

		if (tp)
			*tp++ = '\0';
		link = tp ? bpf_program__attach_tracepoint(prog, cat, tp) : NULL;
		if (!tp)
			errno = EINVAL;
	} else {
		link = bpf_program__attach(prog);
	}
	if (!link) {
		err = -errno;
		if (spec->cgroup)
			log_err("failed to attach '%s' to %s: %s", spec->name,
				paths__attach_path(l->paths), strerror(-err));
		else
			log_err("failed to attach '%s' (program '%s') to its tracepoint (%s): %s",
				spec->name, spec->prog,
				spec->tp[0] ? spec->tp : bpf_program__section_name(prog),
				strerror(-err));
		return err;
	}
	err = bpf_link__pin(link, pin);
	if (err) {
		log_err("failed to pin link '%s' at %s: %s", spec->name, pin, strerror(-err));
		bpf_link__destroy(link);
		return err;
	}
	/* keep the fd in our table; a disconnected bpf_link is freed without closing it */
	l->link_fds[l->nlinks++] = bpf_link__fd(link);
	bpf_link__disconnect(link);
	bpf_link__destroy(link);
	return 0;
}

static int attach_prog(struct loader *l, struct bpf_program *prog,
		       const struct egret_prog_spec *spec)
{
	char pin[PATH_MAX];
	int err;

	if (l->nlinks >= LOADER_MAX_PROGS)
		return -E2BIG;
	err = paths__state(l->paths, pin, sizeof(pin), "links", spec->name);
	if (err)
		return err;
	err = adopt_link(l, prog, spec, pin);
	if (err == -ENOENT)
		err = attach_new(l, prog, spec, pin);
	if (!err)
		l->attached++;
	return err;
}

/* The programs that end a socket's flow are attached before the rest: they read both the
 * socket storage an older egretd's connect hooks leave and the cookie of this one's connect
 * records, so while an upgrade replaces the connect hooks after them no connection loses its
 * flow (the other order left a TCP connection opened and closed in between without one). One
 * that fails to attach does not keep enforcement from attaching: the error is returned after.
 */
static bool attach_first(const struct egret_prog_spec *spec)
{
	return !strcmp(spec->prog, "egret_tcp_end") || !strcmp(spec->prog, "egret_sock_end");
}

int loader__attach(struct loader *l)
{
	int err, first_err = 0;

	for (int pass = 0; pass < 2; pass++) {
		for (unsigned int i = 0; i < l->specs.n; i++) {
			const struct egret_prog_spec *spec = &l->specs.spec[i];
			struct bpf_program *prog = loader__link_prog(l, spec);

			/* a device's programs go on devices, one by one (user/net/devices.c) */
			if (!prog || spec->device || attach_first(spec) != (pass == 0))
				continue;
			err = attach_prog(l, prog, spec);
			if (err && pass == 0) {
				first_err = first_err ? first_err : err;
				continue;
			}
			if (err)
				return err;
		}
	}
	if (first_err)
		return first_err;
	err = loader__pin_maps(l);
	if (err)
		return err;
	loader__drop_stale_pins(l);
	return 0;
}
