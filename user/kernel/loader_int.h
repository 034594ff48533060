/* What the loader's files (loader.c: the objects; loader_load.c: loading them and sharing their
 * maps; loader_diag.c: why a program does not load; loader_attach.c: the links; loader_pins.c:
 * the pins) share with each other, and no other unit needs.
 */
#ifndef EGRET_LOADER_INT_H
#define EGRET_LOADER_INT_H

#include <bpf/libbpf.h>

#include "loader.h"

/* One of egret's objects, behind its skeleton's functions. */
struct loader_unit_ops {
	const char *name;
	/* open the object, set its .rodata from cfg and p; both NULL: only to list its programs */
	int (*open)(struct loader_unit *u, const struct egret_paths *p,
		    const struct loader_config *cfg);
	void (*destroy)(void *skel);
	/* after load: the fields of struct loader_maps this object declares first */
	void (*fill_maps)(const void *skel, struct loader_maps *maps);
};

/* loader.c */
/* programs run by egretd itself (BPF_PROG_TEST_RUN), never attached: egret_selftest */
bool loader__run_only(const struct bpf_program *prog);
const struct egret_prog_spec *loader__spec(const struct loader *l, const char *name);
/* the program of spec's link when this load makes the link, else NULL */
struct bpf_program *loader__link_prog(const struct loader *l, const struct egret_prog_spec *spec);

/* loader_load.c */
struct loader_map *loader__shared(const struct loader *l, const char *name);

/* loader_diag.c */
int loader__diag_init(struct loader *l);
void loader__diag_free(struct loader *l);
/* bpf_object__load(obj), its verifier logs in l->load_log, libbpf's messages in l->load_msgs */
int loader__diag_load(struct loader *l, struct bpf_object *obj);
/* units from on, after unit from failed to load with err: which programs cannot load, and why */
void loader__diagnose(struct loader *l, unsigned int from, int err);

/* loader_pins.c */
int loader__pin_maps(struct loader *l);
void loader__drop_stale_pins(struct loader *l);

#endif /* EGRET_LOADER_INT_H */
