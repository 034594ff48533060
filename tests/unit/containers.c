/* The growable array and the hash table of user/core, checked against a plain model. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "array.h"
#include "htab.h"

Test(containers, array_reserve_grows_and_keeps_items)
{
	uint32_t *items = NULL;
	size_t cap = 0;

	cr_assert_eq(ARRAY_RESERVE(items, cap, 1), 0);
	cr_expect_eq(cap, 8u);
	for (uint32_t i = 0; i < 1000; i++) {
		cr_assert_eq(ARRAY_RESERVE(items, cap, i + 1), 0);
		items[i] = i * 3;
	}
	cr_expect_geq(cap, 1000u);
	cr_expect_eq(cap & (cap - 1), 0u, "doubling from 8 gives powers of two");
	for (uint32_t i = 0; i < 1000; i++)
		cr_assert_eq(items[i], i * 3);
	cr_expect_eq(ARRAY_RESERVE(items, cap, 10), 0, "a smaller want changes nothing");
	cr_expect_geq(cap, 1000u);
	cr_expect_eq(ARRAY_RESERVE(items, cap, SIZE_MAX / 2), -EOVERFLOW);
	cr_expect_eq(items[999], 999u * 3, "a failed reserve keeps the items");
	free(items);
}

struct entry {
	uint64_t key;
	uint32_t value;
};

/* Random inserts and removes of keys 1, 1 + stride, ..., against a direct-indexed model; with few keys the
 * table stays at 16 slots and removes exercise the backward shift across wrap-around runs. */
static void check_against_model(size_t keys, uint64_t stride, int steps)
{
	uint32_t *model = calloc(keys, sizeof(*model)); /* 0: absent, else value */
	struct htab h;
	uint64_t seed = 42, key;
	size_t n = 0, seen = 0;

	cr_assert_not_null(model);
	cr_assert_eq(htab__init(&h, sizeof(struct entry), sizeof(uint64_t), 0), 0);
	for (int step = 0; step < steps; step++) {
		struct entry *e;
		bool added;
		size_t k;

		seed = seed * 6364136223846793005ull + 1442695040888963407ull;
		k = (size_t)((seed >> 33) % keys);
		key = k * stride + 1;
		if ((seed >> 20) % 3) {
			e = htab__insert(&h, &key, &added);
			cr_assert_not_null(e);
			cr_assert_eq(added, model[k] == 0);
			if (added)
				cr_assert_eq(e->value, 0u, "a new entry is zeroed");
			e->value = model[k] = (uint32_t)step + 1;
			n += added;
		} else {
			cr_assert_eq(htab__remove(&h, &key), model[k] != 0);
			n -= model[k] != 0;
			model[k] = 0;
		}
		if (keys < 64 || step % 10000 == 0) {
			for (size_t i = 0; i < keys; i++) {
				key = i * stride + 1;
				e = htab__find(&h, &key);
				cr_assert_eq(e ? e->value : 0, model[i], "key %zu at step %d",
					     i + 1, step);
			}
		}
	}
	cr_expect_eq(h.used, n);
	for (size_t i = 0; i < h.cap; i++)
		seen += htab__at(&h, i) != NULL;
	cr_expect_eq(seen, n, "iteration sees every entry once");
	htab__free(&h);
	free(model);
}

Test(containers, htab_matches_a_model)
{
	struct htab h;
	uint64_t zero = 0, one = 1;

	for (uint64_t stride = 1; stride <= 64; stride++)
		check_against_model(12, stride, 5000);
	check_against_model(4096, 1, 200000);
	cr_assert_eq(htab__init(&h, sizeof(struct entry), sizeof(uint64_t), 0), 0);
	cr_expect_not_null(htab__insert(&h, &one, NULL));
	cr_expect_null(htab__insert(&h, &zero, NULL), "an all-zero key cannot be stored");
	cr_expect_null(htab__find(&h, &zero));
	htab__clear(&h);
	cr_expect_eq(h.used, 0u);
	cr_expect_null(htab__find(&h, &one));
	htab__free(&h);
	cr_expect_eq(htab__init(&h, 4, 8, 0), -EINVAL, "a key larger than the entry");
}
