/* Sandbox names: validation, generated names, creating and removing a sandbox's cgroup, and the
 * cgroup id -> name table egretd uses to label events.
 */
#ifndef EGRET_SANDBOX_H
#define EGRET_SANDBOX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SANDBOX_NAME_MAX 64

bool sandbox__valid_name(const char *name);
void sandbox__generate_name(char *out, size_t size);
uint64_t sandbox__name_hash(const char *name);
int sandbox__create(const char *root, const char *name, bool *created);
int sandbox__remove(const char *root, const char *name, unsigned int wait_ms);

struct sandbox_entry {
	uint64_t id;
	char name[SANDBOX_NAME_MAX + 1];
};

struct sandbox_names {
	char root[4096];
	struct sandbox_entry *slots;
	size_t cap, used;
	uint64_t last_scan_ns;
};

int sandbox_names__init(struct sandbox_names *t, const char *root);
const char *sandbox_names__lookup(struct sandbox_names *t, uint64_t id);
void sandbox_names__set(struct sandbox_names *t, uint64_t id, const char *name);
const char *sandbox_names__get(const struct sandbox_names *t, uint64_t id);
void sandbox_names__del(struct sandbox_names *t, uint64_t id);
void sandbox_names__scan(struct sandbox_names *t);
void sandbox_names__free(struct sandbox_names *t);

#endif /* EGRET_SANDBOX_H */
