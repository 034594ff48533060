/* The user side of egress enforcement: turning connect records into NetConnect events. */
#ifndef EGRET_USER_EGRESS_H
#define EGRET_USER_EGRESS_H

#include <linux/types.h>
#include <stddef.h>

#include "egret/events.h"
#include "egret/egress.h"

struct decoder_ctx;

void egress__on_connect(struct decoder_ctx *d, const void *rec, size_t size);

#endif /* EGRET_USER_EGRESS_H */
