/* Fuzz target: kernel records as egretd's collector receives them from the ring buffer, of any
 * type and length, decoded into events (egress, confinement, audit) without a kernel: the
 * record is handed to collector__record() in a buffer of exactly its size, and every event it
 * makes is packed and unpacked again, which reads each of its strings to the end.
 * Invariants: a decoded event packs and unpacks; a record is either decoded or counted bad.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "collector.h"
#include "decoders.h"
#include "log.h"
#include "proc.h"
#include "redact.h"
#include "stream.h"

static struct stream stream;
static struct sandbox_names names;
static struct collector col;
static struct proc_cache procs;
static struct redactor red;
static uint8_t packed[1 << 20];

static const char *rule_text(void *ctx, uint32_t id, char *buf, size_t size)
{
	snprintf(buf, size, "allow 192.0.2.%u", id & 0xff);
	return id & 1 ? buf : NULL;
}

static void observe(void *ctx, const Egret__V1__Event *ev, const struct env_block *env)
{
	size_t n = egret__v1__event__get_packed_size(ev);
	Egret__V1__Event *back;

	if (n > sizeof(packed) || egret__v1__event__pack(ev, packed) != n)
		abort();
	back = egret__v1__event__unpack(NULL, n, packed);
	if (!back || back->payload_case != ev->payload_case)
		abort();
	egret__v1__event__free_unpacked(back, NULL);
}

static void setup(void)
{
	log_init("fuzz", LOG_LVL_ERR);
	stream__init(&stream);
	if (proc_cache__init(&procs))
		abort();
	redact__init(&red);
	if (sandbox_names__init(&names, "/nonexistent/egret-fuzz") ||
	    collector__init_offline(&col, &stream, &names) || decoders__register(&col))
		abort();
	col.ctx.procs = &procs;
	col.ctx.redactor = &red;
	col.ctx.hooks = (struct collector_hooks){ .rule_text = rule_text, .observe = observe };
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	uint8_t *rec = malloc(size ? size : 1);
	uint64_t before;

	if (!ready++)
		setup();
	if (!rec)
		return 0;
	memcpy(rec, data, size);
	before = col.records + col.bad_records;
	collector__record(&col, rec, size);
	if (col.records + col.bad_records <= before)
		abort();
	free(rec);
	return 0;
}
