/* A growable array: one reserve call in place of a realloc-doubling block in every module. The
 * caller keeps the items pointer and its capacity; ARRAY_RESERVE(items, cap, want) makes room
 * for at least want items, doubling (from 8), and leaves both untouched when it fails.
 */
#ifndef EGRET_ARRAY_H
#define EGRET_ARRAY_H

#include <stddef.h>

/* 0, or -ENOMEM, or -EOVERFLOW when want * size does not fit in a size_t. */
int array__reserve(void **items, size_t *cap, size_t want, size_t size);

#define ARRAY_RESERVE(items, cap, want) \
	array__reserve((void **)&(items), &(cap), (want), sizeof(*(items)))

#endif /* EGRET_ARRAY_H */
