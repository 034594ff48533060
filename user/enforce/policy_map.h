/* Compiling rules into the BPF rule trie (include/egret/policy.h) and swapping tries. */
#ifndef EGRET_POLICY_MAP_H
#define EGRET_POLICY_MAP_H

#include <stddef.h>
#include <stdint.h>

#include <linux/types.h>

#include "egret/policy.h"
#include "policy.h"

/* one trie entry: a prefix and every port rule that applies under it */
struct policy_entry {
	uint8_t addr[16];
	uint8_t plen;
	struct egret_policy_val val;
};

struct policy_entries {
	struct policy_entry *v;
	size_t n, cap;
};

/* The entries of the global rules (sandbox NULL or "") or of one block's alone (its selector),
 * as a check compiles them; the caller frees set->v.
 */
int policy_map__compile(const struct policy *p, const char *sandbox, struct policy_entries *set,
			char *err, size_t errsz);
int policy_map__create(void);
/* A sandbox's scope gets the rules of every block that selects it (name, meta; name NULL: the
 * global rules); installed under scope, or removed from it.
 */
int policy_map__install(int trie_fd, const struct policy *p, const char *name,
			const struct sandbox_meta *meta, uint64_t scope, char *err, size_t errsz);
int policy_map__remove(int trie_fd, const struct policy *p, const char *name,
		       const struct sandbox_meta *meta, uint64_t scope);
int policy_map__swap(int outer_fd, int trie_fd);
int policy_map__check(const struct policy *p, char *err, size_t errsz);

#endif /* EGRET_POLICY_MAP_H */
