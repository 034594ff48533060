/* A small hash table: open addressing, linear probing, backward-shift delete, entries stored in
 * place. An entry's first key_size bytes are its key and an all-zero key marks an empty slot, so
 * a key of all zero bytes cannot be stored. The table grows at 3/4 load; an insert may move
 * entries, so a pointer into the table is valid only until the next insert.
 */
#ifndef EGRET_HTAB_H
#define EGRET_HTAB_H

#include <stdbool.h>
#include <stddef.h>

struct htab {
	unsigned char *slots;
	size_t cap;  /* slots, a power of two */
	size_t used; /* entries */
	size_t entry_size, key_size;
};

/* 0 or -EINVAL (key larger than the entry, or empty) or -ENOMEM. cap_hint 0 means a small table. */
int htab__init(struct htab *h, size_t entry_size, size_t key_size, size_t cap_hint);
void *htab__find(const struct htab *h, const void *key);
/* The entry for key, added (zeroed but for the key) when missing, with *added saying which (added
 * may be NULL). NULL for an all-zero key or when the table is full and cannot grow. */
void *htab__insert(struct htab *h, const void *key, bool *added);
/* Whether key was there. */
bool htab__remove(struct htab *h, const void *key);
/* Slot i when it holds an entry, else NULL: for (size_t i = 0; i < h->cap; i++). */
void *htab__at(const struct htab *h, size_t i);
void htab__clear(struct htab *h);
void htab__free(struct htab *h);

#endif /* EGRET_HTAB_H */
