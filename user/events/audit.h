/* The user side of the audit stream: exec, fork, exit, file, flow and limit records to events,
 * with argv and paths redacted and every event of a process linked to its image (exec_id).
 */
#ifndef EGRET_USER_AUDIT_H
#define EGRET_USER_AUDIT_H

#include <linux/types.h>
#include <stddef.h>

#include "egret/events.h"
#include "egret/audit.h"

struct decoder_ctx;
struct control_req;

void audit__on_exec(struct decoder_ctx *d, const void *rec, size_t size);
void audit__on_fork(struct decoder_ctx *d, const void *rec, size_t size);
void audit__on_exit(struct decoder_ctx *d, const void *rec, size_t size);
void audit__on_file(struct decoder_ctx *d, const void *rec, size_t size);
void audit__on_flow(struct decoder_ctx *d, const void *rec, size_t size);
void audit__on_limit(struct decoder_ctx *d, const void *rec, size_t size);
/* egretctl run's limits hit (timeout, CPU throttling): ResourceLimit events */
int audit__cmd_limit(struct decoder_ctx *d, struct control_req *r);
int audit__parse_pattern(const char *text, __u8 kind, struct egret_pattern *out);

#endif /* EGRET_USER_AUDIT_H */
