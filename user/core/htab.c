/* The hash table of htab.h. Keys hash with FNV-1a over their bytes. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "egret/fnv.h"
#include "htab.h"

#define MIN_CAP 16

static unsigned char *slot(const struct htab *h, size_t i)
{
	return h->slots + i * h->entry_size;
}

static bool is_empty(const struct htab *h, const unsigned char *e)
{
	for (size_t i = 0; i < h->key_size; i++) {
		if (e[i])
			return false;
	}
	return true;
}

static size_t home(const struct htab *h, const void *key)
{
	const unsigned char *k = key;
	uint64_t x = EGRET_FNV64_OFFSET;

	for (size_t i = 0; i < h->key_size; i++)
		x = egret_fnv64_byte(x, k[i]);
	return (size_t)(x ^ (x >> 32)) & (h->cap - 1);
}

/* The slot holding key, or the empty slot where it would go. */
static size_t probe(const struct htab *h, const void *key)
{
	size_t i = home(h, key);

	while (!is_empty(h, slot(h, i)) && memcmp(slot(h, i), key, h->key_size))
		i = (i + 1) & (h->cap - 1);
	return i;
}

int htab__init(struct htab *h, size_t entry_size, size_t key_size, size_t cap_hint)
{
	size_t cap = MIN_CAP;

	memset(h, 0, sizeof(*h));
	if (!key_size || key_size > entry_size)
		return -EINVAL;
	while (cap < cap_hint && cap < SIZE_MAX / 4 / entry_size)
		cap *= 2;
	h->slots = calloc(cap, entry_size);
	if (!h->slots)
		return -ENOMEM;
	h->cap = cap;
	h->entry_size = entry_size;
	h->key_size = key_size;
	return 0;
}

void *htab__find(const struct htab *h, const void *key)
{
	size_t i;

	if (!h->slots || is_empty(h, key))
		return NULL;
	i = probe(h, key);
	return is_empty(h, slot(h, i)) ? NULL : slot(h, i);
}

static int grow(struct htab *h)
{
	struct htab bigger = *h;

	if (h->cap > SIZE_MAX / 2 / h->entry_size)
		return -ENOMEM;
	bigger.cap = h->cap * 2;
	bigger.slots = calloc(bigger.cap, h->entry_size);
	if (!bigger.slots)
		return -ENOMEM;
	for (size_t i = 0; i < h->cap; i++) {
		if (!is_empty(h, slot(h, i)))
			memcpy(slot(&bigger, probe(&bigger, slot(h, i))), slot(h, i),
			       h->entry_size);
	}
	free(h->slots);
	*h = bigger;
	return 0;
}

void *htab__insert(struct htab *h, const void *key, bool *added)
{
	unsigned char *e;
	size_t i;

	if (added)
		*added = false;
	if (!h->slots || is_empty(h, key))
		return NULL;
	i = probe(h, key);
	if (!is_empty(h, slot(h, i)))
		return slot(h, i);
	if ((h->used + 1) * 4 > h->cap * 3) {
		if (grow(h) && (h->used + 2) > h->cap)
			return NULL; /* cannot grow and one free slot must stay for probes to end */
		i = probe(h, key);
	}
	e = slot(h, i);
	memset(e, 0, h->entry_size);
	memcpy(e, key, h->key_size);
	h->used++;
	if (added)
		*added = true;
	return e;
}

bool htab__remove(struct htab *h, const void *key)
{
	size_t mask = h->cap - 1, hole, i;

	if (!h->slots || is_empty(h, key))
		return false;
	hole = probe(h, key);
	if (is_empty(h, slot(h, hole)))
		return false;
	memset(slot(h, hole), 0, h->entry_size);
	h->used--;
	/* shift later entries of the run back into the hole unless their home is in (hole, i] */
	for (i = (hole + 1) & mask; !is_empty(h, slot(h, i)); i = (i + 1) & mask) {
		size_t at = home(h, slot(h, i));
		bool stays = hole <= i ? (at > hole && at <= i) : (at > hole || at <= i);

		if (stays)
			continue;
		memcpy(slot(h, hole), slot(h, i), h->entry_size);
		memset(slot(h, i), 0, h->entry_size);
		hole = i;
	}
	return true;
}

void *htab__at(const struct htab *h, size_t i)
{
	return i < h->cap && !is_empty(h, slot(h, i)) ? slot(h, i) : NULL;
}

void htab__clear(struct htab *h)
{
	if (h->slots)
		memset(h->slots, 0, h->cap * h->entry_size);
	h->used = 0;
}

void htab__free(struct htab *h)
{
	free(h->slots);
	memset(h, 0, sizeof(*h));
}
