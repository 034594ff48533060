/* Sandboxes' own network devices (include/egret/device.h): which devices of egretd's network
 * namespace are whose, with egret's tc programs on each and its resolver listening for their
 * DNS. A device is a sandbox's when
 *   - the policy names it: 'interface tap0' in 'sandbox NAME {' (a VM's tap; a device egret
 *     cannot find by itself), or
 *   - it is the host end of a veth whose other end is in a network namespace a sandbox's
 *     processes are in (a container's, registered or seen by the resolver); a pod's
 *     containers share one, up to EGRET_DEV_SANDBOXES sandboxes a device.
 * Everything is looked at again when links or addresses change, the policy or the sandboxes
 * change, and every few seconds; what is found is put in force before the look returns. A
 * device egretd stops judging loses egret's filters; egretd leaving leaves them (and the
 * pinned `devices` map) in force until the next egretd or egretctl uninstall.
 */
#ifndef EGRET_DEVICES_H
#define EGRET_DEVICES_H

#include <stdbool.h>
#include <stdint.h>

#include <linux/types.h>

#include "egret/events.h"
#include "egret/dns.h"
#include "egret/device.h"
#include "loop.h"

struct engine;
struct resolver;
struct control_req;

/* a device egretd judges, or one the policy names that it cannot yet */
struct dev_entry {
	uint32_t ifindex;
	char name[16];		       /* IFNAMSIZ */
	const char *source;	       /* "policy" or "namespace" */
	struct egret_device v;	       /* what `devices` holds for it */
	uint32_t steer4[4], steer6[4]; /* the resolver listeners it holds (IPv4 mapped) */
	uint16_t port4, port6;	       /* and their ports, network order; 0: none held */
	bool attached;
	bool want;     /* this look found it */
	char err[200]; /* why it is not (wholly) in force */
};

struct devices {
	struct engine *engine;
	struct resolver *resolver;
	struct loop *loop;
	int map_fd;	       /* `devices` */
	int prog_out, prog_in; /* egret_dev_out, egret_dev_in */
	struct watch mon;      /* link and address changes */
	struct dev_entry *e;
	size_t n, cap;
	char missing[512]; /* interfaces the policy names that do not exist */
	uint64_t next_ns;  /* the next look, at the latest */
	bool adopted;	   /* the map's entries of a previous egretd looked at */
	uint64_t syncs, attach_errors;
};

/* Set up (the map and programs of the loaded egress object); the first look is devices__sync. */
int devices__init(struct devices *d, struct loop *loop, struct engine *e, struct resolver *r,
		  int map_fd, int prog_out, int prog_in);
/* Look now: every device that is a sandbox's in force, every other of egret's off. */
void devices__sync(struct devices *d);
/* The periodic look, when it is time. */
void devices__tick(struct devices *d);
/* For egretctl status: the devices and what is wrong with any. */
void devices__status(struct devices *d, struct control_req *r);
/* egretctl uninstall: egret's filters off every device egretd judges, and no look again. */
void devices__uninstall(struct devices *d);
/* egretd exits: memory only (the filters stay in force). */
void devices__free(struct devices *d);

#endif /* EGRET_DEVICES_H */
