/* The addresses allowed answers open to a sandbox, in the kernel's dns_allow map and mirrored
 * here (so a repeated answer costs no map update, and expired entries are swept), and the
 * addresses each name opened to a sandbox (for the cap of max_ips per name). An answer's
 * addresses are written before the answer is released, so the connect that follows finds them.
 * The names a sandbox holds addresses for are bounded (--dns-max-names, and DNS_NAMES_MAX for
 * all): a sandbox asking names never asked before, under an allowed wildcard, would otherwise
 * grow egretd by an entry a name for as long as its addresses live.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include <bpf/bpf.h>

#include "addr.h"
#include "array.h"
#include "htab.h"
#include "log.h"
#include "resolver.h"
#include "sha256.h"
#include "util.h"

/* What a sandbox holds: its entry in r->held, made with add (zeroed) when missing; NULL when
 * missing or out of memory.
 */
static struct dns_held *held(struct resolver *r, uint64_t sandbox, bool add)
{
	const struct dns_held k = { .sandbox = sandbox, .one = 1 };

	return add ? htab__insert(&r->held, &k, NULL) : htab__find(&r->held, &k);
}

/* h's entry goes when it holds nothing (its key copied first: the removal shifts entries) */
static void held_tidy(struct resolver *r, struct dns_held *h)
{
	struct dns_held k;

	if (h->names || h->addrs)
		return;
	k = *h;
	htab__remove(&r->held, &k);
}

/* the sandbox gave up a name (name) or an address */
static void held_drop(struct resolver *r, uint64_t sandbox, bool name)
{
	struct dns_held *h = held(r, sandbox, false);

	if (!h)
		return;
	if (name && h->names)
		h->names--;
	else if (!name && h->addrs)
		h->addrs--;
	held_tidy(r, h);
}

static void note_expiry(struct resolver *r, uint64_t expires)
{
	if (expires < r->next_expiry_ns)
		r->next_expiry_ns = expires;
}

/* The mirror of the address k opened (zero expiry when new), counted against its sandbox's
 * --dns-max-addresses when bounded; NULL when the sandbox holds as many (*full set) or out of
 * memory.
 */
static struct allow_entry *allow_slot(struct resolver *r, const struct egret_dns_allow_key *k,
				      bool bounded, bool *full)
{
	struct allow_entry *ae = htab__find(&r->allow, k);
	struct dns_held *h;

	if (ae)
		return ae;
	h = held(r, k->sandbox_id, true);
	if (!h)
		return NULL;
	if (bounded && h->addrs >= r->o.max_addrs) {
		*full = true;
		held_tidy(r, h);
		return NULL;
	}
	ae = htab__insert(&r->allow, k, NULL); /* another table: h stays where it is */
	if (!ae) {
		held_tidy(r, h);
		return NULL;
	}
	h->addrs++;
	return ae;
}

/* The name's key: a digest of a secret of this egretd's and the name, so that no one can choose
 * names whose keys crowd one run of the table's slots.
 */
void allow__name_key(struct dns_query *q)
{
	uint8_t digest[32];
	struct sha256 h;

	sha256__init(&h);
	sha256__update(&h, q->r->name_salt, sizeof(q->r->name_salt));
	sha256__update(&h, q->name, strlen(q->name));
	sha256__final(&h, digest);
	q->nk.sandbox = q->who.sandbox_id;
	memcpy(q->nk.digest, digest, sizeof(q->nk.digest));
}

_Static_assert(DNS_NAMES_MAX == 131072, "name_full() says how many");

static const char *name_full(struct resolver *r, uint64_t sandbox)
{
	const struct dns_held *h;

	if (r->names.used >= DNS_NAMES_MAX)
		return "egret's resolver holds addresses for as many names as it may (131,072)";
	h = held(r, sandbox, false);
	if (h && h->names >= r->o.max_names)
		return "the sandbox holds addresses for as many names as --dns-max-names allows";
	return NULL;
}

/* At a bound: names and addresses whose time is up since the last sweep make room now, not
 * at the next periodic sweep; at most every 100 ms, and only once something has expired.
 * Whether it swept.
 */
static bool bound_sweep(struct resolver *r)
{
	uint64_t now = now_ns(CLOCK_BOOTTIME);

	if (now < r->next_expiry_ns || now - r->swept_ns < NAMES_RESWEEP_NS)
		return false;
	r->swept_ns = now;
	r->st.early_sweeps++;
	allow__sweep(r, now);
	return true;
}

const char *allow__name_refused(struct resolver *r, const struct dns_query *q)
{
	const char *why;

	if (htab__find(&r->names, &q->nk) || !(why = name_full(r, q->who.sandbox_id)))
		return NULL;
	if (!bound_sweep(r))
		return why;
	return name_full(r, q->who.sandbox_id);
}

static const char *const out_of_memory = "egretd is out of memory";

/* The addresses the name of q opened to its sandbox (none when new); NULL and why when it may
 * not hold any (allow__name_refused, or out of memory).
 */
static struct name_entry *name_slot(struct resolver *r, const struct dns_query *q, const char **why)
{
	struct name_entry *ne;
	struct dns_held *h;
	bool added;

	*why = allow__name_refused(r, q);
	if (*why)
		return NULL;
	*why = out_of_memory;
	h = held(r, q->who.sandbox_id, true);
	if (!h)
		return NULL;
	ne = htab__insert(&r->names, &q->nk, &added); /* another table: h stays where it is */
	if (!ne) {
		held_tidy(r, h);
		return NULL;
	}
	if (added)
		h->names++;
	*why = NULL;
	return ne;
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
		if (ne->n == ne->room) {
			/* most names have one or two addresses: room for 2, doubled as they come */
			unsigned int room = ne->room ? ne->room * 2 : 2;
			void *ips;

			if (room > r->o.max_ips)
				room = r->o.max_ips;
			ips = reallocarray(ne->ips, room, sizeof(*ne->ips));
			if (!ips)
				return false;
			ne->ips = ips;
			ne->room = room;
		}
		ne->n++;
	}
	memcpy(ne->ips[slot].addr, addr, 16);
	ne->ips[slot].expires_ns = expires;
	note_expiry(r, expires);
	return true;
}

/* A failed map update, in egretd's log at most every 10 s (a full map fails every answer). */
static void warn_unopened(struct resolver *r, uint64_t sandbox, int err)
{
	uint64_t now = now_ns(CLOCK_MONOTONIC);

	if (r->warned_ns && now - r->warned_ns < 10000000000ull) {
		r->unwarned++;
		return;
	}
	log_warn("dns: cannot open an address to sandbox %llu: %s (%llu more since the last "
		 "warning)",
		 (unsigned long long)sandbox, strerror(err), (unsigned long long)r->unwarned);
	r->warned_ns = now;
	r->unwarned = 0;
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
	bool full = false;

	memcpy(k.addr, addr, 16);
	if (!ne || !name_admits(r, ne, addr, expires, now)) {
		r->st.capped++;
		return false;
	}
	/* an address the mirror cannot hold is not opened: every open one is counted and swept */
	ae = allow_slot(r, &k, true, &full);
	if (!ae) {
		if (full)
			r->st.capped++;
		else
			r->st.map_full++;
		return false;
	}
	/* already open long enough: a repeated answer does not cost a map update */
	if (ae->expires_ns + 1000000000ull >= expires)
		return true;
	v.expires_ns = expires;
	if (bpf_map_update_elem(r->m.allow_fd, &k, &v, BPF_ANY)) {
		r->st.map_full++;
		warn_unopened(r, sandbox, errno);
		if (!ae->expires_ns) { /* new: not open, so not held (ae goes; ne is elsewhere) */
			htab__remove(&r->allow, &k);
			held_drop(r, sandbox, false);
		}
		return false;
	}
	ae->expires_ns = expires;
	note_expiry(r, expires);
	r->st.opened++;
	return true;
}

static bool name_live(const struct name_entry *ne, uint64_t now)
{
	for (unsigned int j = 0; j < ne->n; j++) {
		if (ne->ips[j].expires_ns > now)
			return true;
	}
	return false;
}

/* The address of ae closes: out of the map and the mirror, given back to its sandbox. */
static void allow_forget(struct resolver *r, struct allow_entry *ae)
{
	struct egret_dns_allow_key k = ae->key; /* the removal shifts entries over ae */

	bpf_map_delete_elem(r->m.allow_fd, &k);
	htab__remove(&r->allow, &k);
	held_drop(r, k.sandbox_id, false);
}

/* The name of ne goes, given back to its sandbox. */
static void name_forget(struct resolver *r, struct name_entry *ne)
{
	struct name_key k = ne->key;

	free(ne->ips);
	htab__remove(&r->names, &k);
	held_drop(r, k.sandbox, true);
}

/* Delete expired addresses from the map (the kernel already ignores them), and forget names
 * whose addresses all expired. A removal shifts later entries back into slot i, so slot i is
 * looked at again; an entry shifted round from the start may be looked at twice, which is
 * harmless.
 */
void allow__sweep(struct resolver *r, uint64_t now)
{
	uint64_t next = UINT64_MAX;

	for (size_t i = 0; i < r->allow.cap;) {
		struct allow_entry *ae = htab__at(&r->allow, i);

		if (!ae || ae->expires_ns > now) {
			if (ae && ae->expires_ns < next)
				next = ae->expires_ns;
			i++;
			continue;
		}
		allow_forget(r, ae);
	}
	for (size_t i = 0; i < r->names.cap;) {
		struct name_entry *ne = htab__at(&r->names, i);

		if (!ne || name_live(ne, now)) {
			/* the earliest of its addresses: no name goes before that */
			for (unsigned int j = 0; ne && j < ne->n; j++) {
				if (ne->ips[j].expires_ns > now && ne->ips[j].expires_ns < next)
					next = ne->ips[j].expires_ns;
			}
			i++;
			continue;
		}
		name_forget(r, ne);
	}
	r->next_expiry_ns = next;
}

void allow__sandbox_gone(struct resolver *r, uint64_t sandbox)
{
	/* its queries still upstream open nothing when answered */
	for (struct dns_query *q = r->pending; q; q = q->next) {
		if (q->who.sandbox_id == sandbox)
			q->gone = true;
	}
	if (!held(r, sandbox, false))
		return; /* it holds nothing: no walk */
	for (size_t i = 0; i < r->allow.cap;) {
		struct allow_entry *ae = htab__at(&r->allow, i);

		if (ae && ae->key.sandbox_id == sandbox)
			allow_forget(r, ae); /* slot i holds the next entry now */
		else
			i++;
	}
	for (size_t i = 0; i < r->names.cap;) {
		struct name_entry *ne = htab__at(&r->names, i);

		if (ne && ne->key.sandbox == sandbox)
			name_forget(r, ne);
		else
			i++;
	}
}

/* Entries a previous egretd left in the pinned map: learn the live ones (not bounded again, but
 * open no longer than this egretd's --dns-max-ttl and grace allow), delete the rest and any
 * this one cannot hold (every open address is mirrored here: counted and swept).
 */
void allow__adopt(struct resolver *r)
{
	struct egret_dns_allow_key k, next, *dead = NULL, *cut = NULL;
	size_t ndead = 0, dcap = 0, ncut = 0, ccap = 0;
	const uint64_t now = now_ns(CLOCK_BOOTTIME);
	const uint64_t latest = now + ((uint64_t)r->o.max_ttl + r->o.grace) * 1000000000ull;
	struct egret_dns_allow v;
	bool have = false;

	while (bpf_map_get_next_key(r->m.allow_fd, have ? &k : NULL, &next) == 0) {
		k = next;
		have = true;
		if (bpf_map_lookup_elem(r->m.allow_fd, &k, &v) == 0 && v.expires_ns > now) {
			struct allow_entry *ae = allow_slot(r, &k, false, NULL);

			if (ae) {
				ae->expires_ns = v.expires_ns < latest ? v.expires_ns : latest;
				note_expiry(r, ae->expires_ns);
				/* the map's copy cut too (else the sweep deletes it at latest) */
				if (v.expires_ns > latest && !ARRAY_RESERVE(cut, ccap, ncut + 1))
					cut[ncut++] = k;
				continue;
			}
		}
		if (ARRAY_RESERVE(dead, dcap, ndead + 1)) {
			log_warn(
				"dns: out of memory adopting the addresses an egretd before opened: "
				"some stay open until they expire, unmirrored");
			break;
		}
		dead[ndead++] = k;
	}
	for (size_t i = 0; i < ndead; i++)
		bpf_map_delete_elem(r->m.allow_fd, &dead[i]);
	v.expires_ns = latest;
	for (size_t i = 0; i < ncut; i++)
		bpf_map_update_elem(r->m.allow_fd, &cut[i], &v, BPF_EXIST);
	free(dead);
	free(cut);
}

/* Open each address of the answer to the sandbox for its TTL (at least the floor) plus the
 * grace period; the event lists the CNAMEs and addresses.
 */
const char *allow__open_answers(struct resolver *r, struct dns_query *q,
				const struct dns_answer *ans, struct answer_list *out)
{
	uint64_t now = now_ns(CLOCK_BOOTTIME);
	struct name_entry *ne = NULL;
	unsigned int min_ttl = UINT32_MAX;
	const struct dns_held *h;
	const char *why = NULL;

	if (q->gone)
		return "the sandbox went while its query was upstream";
	/* at the address bound, what expired makes room first */
	h = held(r, q->who.sandbox_id, false);
	if (ans->naddrs && h && h->addrs + ans->naddrs > r->o.max_addrs)
		bound_sweep(r);
	/* a name whose answer holds no address takes no room */
	if (ans->naddrs && !(ne = name_slot(r, q, &why))) {
		if (why == out_of_memory)
			r->st.map_full++;
		else
			r->st.names_full++;
		return why;
	}

	for (unsigned int i = 0; i < ans->ncnames; i++) {
		out->text[out->n] = out->store[out->n];
		snprintf(out->store[out->n], sizeof(out->store[0]), "CNAME %s", ans->cnames[i]);
		out->n += out->n < MAX_ANSWERS - 1;
	}
	for (size_t i = 0; i < ans->naddrs; i++) {
		const struct dns_addr *d = &ans->addrs[i];
		/* the TTL at least --dns-min-ttl and at most --dns-max-ttl (which wins) */
		uint32_t ttl = d->ttl < r->o.min_ttl ? r->o.min_ttl : d->ttl;

		if (ttl > r->o.max_ttl)
			ttl = r->o.max_ttl;
		const uint64_t expires = now + ((uint64_t)ttl + r->o.grace) * 1000000000ull;

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
	/* a name left with no address (out of memory for its first): gone at the next sweep */
	if (ne && !ne->n)
		note_expiry(r, now);
	out->ttl = out->opened ? min_ttl + r->o.grace : 0;
	return NULL;
}

int allow__init(struct resolver *r)
{
	int err = htab__init(&r->allow, sizeof(struct allow_entry),
			     sizeof(struct egret_dns_allow_key), 1024);

	if (err)
		return err;
	err = htab__init(&r->names, sizeof(struct name_entry), sizeof(struct name_key), 256);
	if (err)
		goto err_allow;
	err = htab__init(&r->held, sizeof(struct dns_held), offsetof(struct dns_held, names), 64);
	if (err)
		goto err_names;
	if (getrandom(r->name_salt, sizeof(r->name_salt), 0) != (ssize_t)sizeof(r->name_salt))
		arc4random_buf(r->name_salt, sizeof(r->name_salt));
	r->next_expiry_ns = UINT64_MAX;
	return 0;

err_names:
	htab__free(&r->names);
err_allow:
	htab__free(&r->allow);
	return err;
}

size_t allow__count(const struct resolver *r)
{
	return r->allow.used;
}

size_t allow__names(const struct resolver *r)
{
	return r->names.used;
}

void allow__free(struct resolver *r)
{
	for (size_t i = 0; i < r->names.cap; i++) {
		struct name_entry *ne = htab__at(&r->names, i);

		if (ne)
			free(ne->ips);
	}
	htab__free(&r->names);
	htab__free(&r->held);
	htab__free(&r->allow);
}
