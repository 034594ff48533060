/* See arena.h. A block too small for an event gets another behind it; the next batch then gets
 * one block of the size they made together.
 */
#include <stdint.h>
#include <stdlib.h>

#include "arena.h"

struct arena_block {
	struct arena_block *next;
	size_t cap, used;
	max_align_t data[];
};

#define ARENA_MIN (256u << 10)

static void *arena_alloc(void *data, size_t size)
{
	struct arena *a = data;
	struct arena_block *b = a->head;

	if (size > SIZE_MAX / 2) { /* no event asks this much; its rounding would wrap */
		a->failed = true;
		return NULL;
	}
	size = (size + _Alignof(max_align_t) - 1) & ~(_Alignof(max_align_t) - 1);
	if (!b || b->cap - b->used < size) {
		size_t cap = size > ARENA_MIN ? size : ARENA_MIN;

		b = malloc(sizeof(*b) + cap);
		if (!b) {
			a->failed = true;
			return NULL;
		}
		b->cap = cap;
		b->used = 0;
		b->next = a->head;
		a->head = b;
	}
	b->used += size;
	return (char *)b->data + b->used - size;
}

static void arena_free(void *data, void *p)
{
	(void)data;
	(void)p; /* all at once, in arena__reset */
}

void arena__init(struct arena *a)
{
	*a = (struct arena){
		.pb = { .alloc = arena_alloc, .free = arena_free, .allocator_data = a }
	};
}

void arena__reset(struct arena *a)
{
	size_t total = 0;

	a->failed = false;
	if (a->head && !a->head->next) {
		a->head->used = 0;
		return;
	}
	while (a->head) {
		struct arena_block *b = a->head;

		total += b->cap;
		a->head = b->next;
		free(b);
	}
	if (total) {
		a->head = malloc(sizeof(*a->head) + total);
		if (a->head)
			*a->head = (struct arena_block){ .cap = total };
	}
}

void arena__release(struct arena *a)
{
	while (a->head) {
		struct arena_block *b = a->head;

		a->head = b->next;
		free(b);
	}
}

void arena__trim(struct arena *a, size_t keep)
{
	size_t total = 0;

	for (struct arena_block *b = a->head; b; b = b->next)
		total += b->cap;
	if (total > keep)
		arena__release(a);
}
