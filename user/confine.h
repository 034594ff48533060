/* The user side of confinement: sandbox cgroups coming and going, tamper attempts. */
#ifndef EGRET_USER_CONFINE_H
#define EGRET_USER_CONFINE_H

#include <linux/types.h>
#include <stddef.h>

#include "egret/events.h"
#include "egret/confine.h"

struct collector;

void confine__on_cgroup(struct collector *c, const void *rec, size_t size);
void confine__on_tamper(struct collector *c, const void *rec, size_t size);

#endif /* EGRET_USER_CONFINE_H */
