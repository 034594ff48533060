/* The addresses allowed answers open to a sandbox, in the kernel's dns_allow map and mirrored
 * here (so a repeated answer costs no map update, and expired entries are swept), and the
 * addresses each name opened to a sandbox (for the cap of max_ips per name). An answer's
 * addresses are written before the answer is released, so the connect that follows finds them.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <bpf/bpf.h>

#include "egret/fnv.h"
#include "addr.h"
#include "log.h"
#include "resolver.h"
#include "util.h"

static uint64_t hash_bytes(const void *p, size_t n, uint64_t h)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		h = egret_fnv64_byte(h, b[i]);
	return h;
}

static struct allow_entry *allow_slot(struct resolver *r, const struct egret_dns_allow_key *k,
				      bool create)
{
	size_t mask, i;

	if (create && (r->allow_used + 1) * 2 > r->allow_cap) {
		struct allow_entry *old = r->allow;
		size_t oldcap = r->allow_cap, cap = oldcap ? oldcap * 2 : 1024;

		r->allow = calloc(cap, sizeof(*r->allow));
		if (!r->allow) {
			r->allow = old;
			return NULL;
		}
		r->allow_cap = cap;
		r->allow_used = 0;
		for (size_t j = 0; j < oldcap; j++) {
			if (old[j].used)
				*allow_slot(r, &old[j].key, true) = old[j];
		}
		free(old);
	}
	if (!r->allow_cap)
		return NULL;
	mask = r->allow_cap - 1;
	i = hash_bytes(k, sizeof(*k), EGRET_FNV64_OFFSET) & mask;
	while (r->allow[i].used && memcmp(&r->allow[i].key, k, sizeof(*k)))
		i = (i + 1) & mask;
	if (!r->allow[i].used) {
		if (!create)
			return NULL;
		r->allow[i].used = true;
		r->allow[i].key = *k;
		r->allow[i].expires_ns = 0;
		r->allow_used++;
	}
	return &r->allow[i];
}

static struct name_entry *name_slot(struct resolver *r, uint64_t sandbox, const char *name)
{
	uint64_t h = hash_bytes(name, strlen(name), hash_bytes(&sandbox, 8, EGRET_FNV64_OFFSET));
	size_t mask, i;

	if ((r->names_used + 1) * 2 > r->names_cap) {
		struct name_entry *old = r->names;
		size_t oldcap = r->names_cap, cap = oldcap ? oldcap * 2 : 256;

		r->names = calloc(cap, sizeof(*r->names));
		if (!r->names) {
			r->names = old;
			return NULL;
		}
		r->names_cap = cap;
		r->names_used = 0;
		for (size_t j = 0; j < oldcap; j++) {
			if (old[j].used)
				*name_slot(r, old[j].sandbox, old[j].name) = old[j];
		}
		free(old);
		h = hash_bytes(name, strlen(name), hash_bytes(&sandbox, 8, EGRET_FNV64_OFFSET));
	}
	mask = r->names_cap - 1;
	i = h & mask;
	while (r->names[i].used &&
	       (r->names[i].sandbox != sandbox || strcmp(r->names[i].name, name)))
		i = (i + 1) & mask;
	if (!r->names[i].used) {
		memset(&r->names[i], 0, sizeof(r->names[i]));
		r->names[i].used = true;
		r->names[i].sandbox = sandbox;
		snprintf(r->names[i].name, sizeof(r->names[i].name), "%s", name);
		r->names_used++;
	}
	return &r->names[i];
}

/* Count addr against name's cap; false when the name already holds max_ips live addresses. */
static bool name_admits(struct resolver *r, struct name_entry *ne, const uint32_t *addr,
			uint64_t expires, uint64_t now)
{
	unsigned int slot = ne->n;

	for (unsigned int i = 0; i < ne->n; i++) {
		if (!memcmp(ne->ips[i].addr, addr, 16)) {
			if (expires > ne->ips[i].expires_ns)
				ne->ips[i].expires_ns = expires;
			return true;
		}
		if (ne->ips[i].expires_ns <= now && slot == ne->n)
			slot = i; /* an expired one can be reused */
	}
	if (slot == ne->n) {
		if (ne->n >= r->o.max_ips)
			return false;
		if (!ne->ips)
			ne->ips = calloc(r->o.max_ips, sizeof(*ne->ips));
		if (!ne->ips)
			return false;
		ne->n++;
	}
	memcpy(ne->ips[slot].addr, addr, 16);
	ne->ips[slot].expires_ns = expires;
	return true;
}

/* Open addr to the sandbox until expires (boot time); the map is written before the answer is
 * released, so the connect that follows finds it.
 */
static bool open_address(struct resolver *r, uint64_t sandbox, struct name_entry *ne,
			 const uint32_t *addr, uint64_t expires, uint64_t now)
{
	struct egret_dns_allow_key k = { .sandbox_id = sandbox };
	struct egret_dns_allow v;
	struct allow_entry *ae;

	memcpy(k.addr, addr, 16);
	if (ne && !name_admits(r, ne, addr, expires, now)) {
		r->st.capped++;
		return false;
	}
	ae = allow_slot(r, &k, true);
	/* already open long enough: a repeated answer does not cost a map update */
	if (ae && ae->expires_ns + 1000000000ull >= expires)
		return true;
	v.expires_ns = expires;
	if (bpf_map_update_elem(r->m.allow_fd, &k, &v, BPF_ANY)) {
		r->st.map_full++;
		log_warn("dns: cannot open an address to sandbox %llu: %s",
			 (unsigned long long)sandbox, strerror(errno));
		return false;
	}
	if (ae)
		ae->expires_ns = expires;
	r->st.opened++;
	return true;
}

/* Delete expired addresses from the map (the kernel already ignores them), and forget names
 * whose addresses all expired.
 */
void allow__sweep(struct resolver *r, uint64_t now)
{
	struct allow_entry *old = r->allow;
	struct name_entry *old_names = r->names;
	size_t oldcap = r->allow_cap, old_names_cap = r->names_cap;

	r->allow = NULL;
	r->allow_cap = r->allow_used = 0;
	for (size_t i = 0; i < oldcap; i++) {
		struct allow_entry *ae;

		if (!old[i].used)
			continue;
		if (old[i].expires_ns <= now) {
			bpf_map_delete_elem(r->m.allow_fd, &old[i].key);
			continue;
		}
		ae = allow_slot(r, &old[i].key, true);
		if (ae)
			ae->expires_ns = old[i].expires_ns;
	}
	free(old);
	r->names = NULL;
	r->names_cap = r->names_used = 0;
	for (size_t i = 0; i < old_names_cap; i++) {
		struct name_entry *ne = &old_names[i], *kept;
		bool live = false;

		for (unsigned int j = 0; ne->used && j < ne->n; j++)
			live |= ne->ips[j].expires_ns > now;
		if (!live || !(kept = name_slot(r, ne->sandbox, ne->name))) {
			free(ne->ips);
			continue;
		}
		kept->n = ne->n;
		kept->ips = ne->ips;
	}
	free(old_names);
}

/* Entries a previous egretd left in the pinned map: learn the live ones, delete the rest. */
void allow__adopt(struct resolver *r)
{
	struct egret_dns_allow_key k, next, *dead = NULL;
	size_t ndead = 0, cap = 0;
	struct egret_dns_allow v;
	bool have = false;
	uint64_t now = now_ns(CLOCK_BOOTTIME);

	while (bpf_map_get_next_key(r->m.allow_fd, have ? &k : NULL, &next) == 0) {
		k = next;
		have = true;
		if (bpf_map_lookup_elem(r->m.allow_fd, &k, &v) == 0 && v.expires_ns > now) {
			struct allow_entry *ae = allow_slot(r, &k, true);

			if (ae)
				ae->expires_ns = v.expires_ns;
			continue;
		}
		if (ndead == cap) {
			struct egret_dns_allow_key *nd;

			cap = cap ? cap * 2 : 256;
			nd = realloc(dead, cap * sizeof(*nd));
			if (!nd)
				break;
			dead = nd;
		}
		dead[ndead++] = k;
	}
	for (size_t i = 0; i < ndead; i++)
		bpf_map_delete_elem(r->m.allow_fd, &dead[i]);
	free(dead);
}

/* Open each address of the answer to the sandbox for its TTL (at least the floor) plus the
 * grace period; the event lists the CNAMEs and addresses.
 */
void allow__open_answers(struct resolver *r, struct dns_query *q, const struct dns_answer *ans,
			 struct answer_list *out)
{
	uint64_t now = now_ns(CLOCK_BOOTTIME);
	struct name_entry *ne = name_slot(r, q->who.sandbox_id, q->name);
	unsigned int min_ttl = UINT32_MAX;

	for (unsigned int i = 0; i < ans->ncnames; i++) {
		out->text[out->n] = out->store[out->n];
		snprintf(out->store[out->n], sizeof(out->store[0]), "CNAME %s", ans->cnames[i]);
		out->n += out->n < MAX_ANSWERS - 1;
	}
	for (size_t i = 0; i < ans->naddrs; i++) {
		const struct dns_addr *d = &ans->addrs[i];
		uint32_t ttl = d->ttl < r->o.min_ttl ? r->o.min_ttl : d->ttl;
		uint64_t expires = now + ((uint64_t)ttl + r->o.grace) * 1000000000ull;

		if (open_address(r, q->who.sandbox_id, ne, d->addr, expires, now)) {
			out->opened++;
			if (ttl < min_ttl)
				min_ttl = ttl;
		}
		if (out->n < MAX_ANSWERS - 1) {
			char a[ADDR_STRLEN];

			addr__format((const uint8_t *)d->addr, a, sizeof(a));
			out->text[out->n] = out->store[out->n];
			snprintf(out->store[out->n], sizeof(out->store[0]), "%s %s",
				 d->type == LDNS_RR_TYPE_A ? "A" : "AAAA", a);
			out->n++;
		}
	}
	out->ttl = out->opened ? min_ttl + r->o.grace : 0;
}

size_t allow__count(const struct resolver *r)
{
	return r->allow_used;
}

void allow__free(struct resolver *r)
{
	for (size_t i = 0; i < r->names_cap; i++)
		free(r->names[i].ips);
	free(r->names);
	free(r->allow);
}
