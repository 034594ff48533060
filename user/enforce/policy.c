/* The policy language: parser, printer, rule-set hash. Errors name the file and line and say
 * what is wrong; a policy with an error is never partly applied (callers parse into a new
 * struct policy and swap only on success).
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <linux/types.h>

#include "array.h"
#include "egret/fnv.h"
#include "egret/policy.h"
#include "addr.h"
#include "htab.h"
#include "policy.h"
#include "reslimit.h"
#include "sha256.h"
#include "util.h"

#define LINE_MAX_LEN 4096
#define MAX_WORDS    64

void policy__init(struct policy *p)
{
	memset(p, 0, sizeof(*p));
	p->mode = POLICY_ENFORCE;
}

void policy__free(struct policy *p)
{
	free(p->rules);
	free(p->ifaces);
	free(p->budgets);
	policy__init(p);
}

int policy__copy(struct policy *dst, const struct policy *src)
{
	policy__init(dst);
	dst->mode = src->mode;
	dst->require_unpriv = src->require_unpriv;
	if (src->nifaces) {
		dst->ifaces = malloc(src->nifaces * sizeof(*src->ifaces));
		if (!dst->ifaces)
			return -ENOMEM;
		memcpy(dst->ifaces, src->ifaces, src->nifaces * sizeof(*src->ifaces));
		dst->nifaces = dst->ifaces_cap = src->nifaces;
	}
	if (src->nbudgets) {
		dst->budgets = malloc(src->nbudgets * sizeof(*src->budgets));
		if (!dst->budgets) {
			policy__free(dst);
			return -ENOMEM;
		}
		memcpy(dst->budgets, src->budgets, src->nbudgets * sizeof(*src->budgets));
		dst->nbudgets = dst->budgets_cap = src->nbudgets;
	}
	if (!src->n)
		return 0;
	dst->rules = malloc(src->n * sizeof(*src->rules));
	if (!dst->rules) {
		policy__free(dst);
		return -ENOMEM;
	}
	memcpy(dst->rules, src->rules, src->n * sizeof(*src->rules));
	dst->n = dst->cap = src->n;
	return 0;
}

int policy__add(struct policy *p, const struct rule *r)
{
	if (ARRAY_RESERVE(p->rules, p->cap, p->n + 1))
		return -ENOMEM;
	p->rules[p->n++] = *r;
	return 0;
}

void policy__remove(struct policy *p, size_t i)
{
	memmove(&p->rules[i], &p->rules[i + 1], (p->n - i - 1) * sizeof(*p->rules));
	p->n--;
}

bool rule__same(const struct rule *a, const struct rule *b)
{
	if (a->action != b->action || a->kind != b->kind || strcmp(a->sandbox, b->sandbox))
		return false;
	if (a->kind == RULE_DOMAIN)
		return strcmp(a->domain, b->domain) == 0;
	return a->proto == b->proto && a->plen == b->plen && a->port_lo == b->port_lo &&
	       a->port_hi == b->port_hi && memcmp(a->addr, b->addr, 16) == 0;
}

ssize_t policy__find(const struct policy *p, const struct rule *r)
{
	for (size_t i = 0; i < p->n; i++) {
		if (rule__same(&p->rules[i], r))
			return (ssize_t)i;
	}
	return -1;
}

ssize_t policy__find_id(const struct policy *p, uint32_t id)
{
	for (size_t i = 0; i < p->n; i++) {
		if (p->rules[i].id == id)
			return (ssize_t)i;
	}
	return -1;
}

void policy__renumber(struct policy *p)
{
	uint32_t file_id = 1, live_id = POLICY_LIVE_ID_BASE;

	for (size_t i = 0; i < p->n; i++)
		p->rules[i].id = p->rules[i].live ? live_id++ : file_id++;
}

const char *policy__intern(const char *selector)
{
	static char **pool;
	static size_t n, cap;
	char *copy;

	if (!selector || !selector[0])
		return "";
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(pool[i], selector))
			return pool[i];
	}
	if (ARRAY_RESERVE(pool, cap, n + 1))
		return NULL;
	copy = strdup(selector);
	if (copy)
		pool[n++] = copy;
	return copy;
}

/* Domains by their FNV-1a hash; one whose hash another holds goes to the overflow list. */
struct domain_slot {
	uint64_t hash;
	const char *name;
};

const char *policy__intern_domain(const char *name)
{
	static struct htab by_hash;
	static char **overflow;
	static size_t noverflow, overflow_cap;
	struct domain_slot *slot;
	uint64_t h = EGRET_FNV64_OFFSET;
	bool added;
	char *copy;

	for (const char *c = name; *c; c++)
		h = egret_fnv64_byte(h, (uint8_t)*c);
	h = h ? h : 1; /* an all-zero key is an empty slot */
	if (!by_hash.slots && htab__init(&by_hash, sizeof(*slot), sizeof(h), 0))
		return NULL;
	slot = htab__find(&by_hash, &h);
	if (slot && !strcmp(slot->name, name))
		return slot->name;
	for (size_t i = 0; slot && i < noverflow; i++) {
		if (!strcmp(overflow[i], name))
			return overflow[i];
	}
	copy = strdup(name);
	if (!copy)
		return NULL;
	if (slot) {
		if (ARRAY_RESERVE(overflow, overflow_cap, noverflow + 1)) {
			free(copy);
			return NULL;
		}
		overflow[noverflow++] = copy;
		return copy;
	}
	slot = htab__insert(&by_hash, &h, &added);
	if (!slot) {
		free(copy);
		return NULL;
	}
	slot->name = copy;
	return copy;
}

bool policy__selects(const struct policy *p, const char *name, const struct sandbox_meta *meta)
{
	for (size_t i = 0; i < p->n; i++) {
		if (p->rules[i].sandbox[0] && sandbox__selects(p->rules[i].sandbox, name, meta))
			return true;
	}
	return false;
}

size_t policy__count(const struct policy *p, bool live, const char *sandbox)
{
	size_t n = 0;

	for (size_t i = 0; i < p->n; i++) {
		if (p->rules[i].live == live && (!sandbox || !strcmp(p->rules[i].sandbox, sandbox)))
			n++;
	}
	return n;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int policy__sandboxes(const struct policy *p, const char ***sels, size_t *n)
{
	const char **v = malloc((p->n ? p->n : 1) * sizeof(*v));
	size_t count = 0, out = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < p->n; i++) {
		if (p->rules[i].sandbox[0])
			v[count++] = p->rules[i].sandbox;
	}
	qsort(v, count, sizeof(*v), cmp_names);
	for (size_t i = 0; i < count; i++) {
		if (!out || strcmp(v[out - 1], v[i]))
			v[out++] = v[i];
	}
	*sels = v;
	*n = out;
	return 0;
}

const char *policy__mode_name(enum policy_mode m)
{
	return m == POLICY_AUDIT ? "audit" : "enforce";
}

/* rules name only tcp, udp, icmp, or 0 for any */
static const char *proto_word(uint8_t proto)
{
	static char other[8];

	return proto ? addr__proto_name(proto, other, sizeof(other)) : "any";
}

/* The rule in policy words: "allow 192.0.2.0/24 tcp/443", "deny domain *.example.com". */
void rule__format(const struct rule *r, char *buf, size_t size)
{
	const char *verb = r->action == EGRET_ACT_DENY ? "deny" : "allow";
	char addr[ADDR_STRLEN], ports[32] = "";
	bool v4 = addr__is_v4(r->addr) && r->plen >= 96;
	unsigned int plen = v4 ? r->plen - 96u : r->plen;

	if (r->kind == RULE_DOMAIN) {
		snprintf(buf, size, "%s domain %s", verb, r->domain);
		return;
	}
	if (v4)
		addr__format(r->addr, addr, sizeof(addr));
	else
		inet_ntop(AF_INET6, r->addr, addr, sizeof(addr));
	if (r->port_lo == 0 && r->port_hi == 65535) {
		if (r->proto)
			snprintf(ports, sizeof(ports), " %s", proto_word(r->proto));
	} else if (r->port_lo == r->port_hi) {
		snprintf(ports, sizeof(ports), " %s/%u", proto_word(r->proto), r->port_lo);
	} else {
		snprintf(ports, sizeof(ports), " %s/%u-%u", proto_word(r->proto), r->port_lo,
			 r->port_hi);
	}
	if (plen == (v4 ? 32u : 128u))
		snprintf(buf, size, "%s %s%s", verb, addr, ports);
	else
		snprintf(buf, size, "%s %s/%u%s", verb, addr, plen, ports);
}

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errsz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errsz, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

static int parse_cidr(const char *word, struct rule *r, char *err, size_t errsz)
{
	char text[128], *slash;
	unsigned int bits, max;
	uint64_t v;

	if (strlen(word) >= sizeof(text))
		return fail(err, errsz, "'%s' is not an address", word);
	strcpy(text, word);
	slash = strchr(text, '/');
	if (slash)
		*slash = '\0';
	if (addr__parse(text, r->addr))
		return fail(err, errsz, "'%s' is not an IPv4 or IPv6 address", text);
	max = addr__is_v4(r->addr) && !strchr(text, ':') ? 32 : 128;
	if (slash && (parse_u64(slash + 1, max, &v)))
		return fail(err, errsz, "bad prefix length in '%s' (0-%u)", word, max);
	bits = slash ? (unsigned int)v : max;
	r->plen = (uint8_t)(max == 32 ? 96 + bits : bits);
	/* an IPv4-mapped prefix shorter than /96 would reach beyond IPv4: keep it IPv6 */
	for (unsigned int i = r->plen; i < 128; i++) {
		if (r->addr[i / 8] & (0x80 >> (i % 8))) {
			char net[ADDR_STRLEN];

			for (unsigned int j = r->plen; j < 128; j++)
				r->addr[j / 8] &= (uint8_t) ~(0x80 >> (j % 8));
			addr__format(r->addr, net, sizeof(net));
			return fail(err, errsz, "'%s' has host bits set (did you mean %s/%u?)",
				    word, net, bits);
		}
	}
	return 0;
}

static int parse_port(const char *s, const char *spec, uint16_t *out, char *err, size_t errsz)
{
	uint64_t v;

	if (parse_u64(s, 65535, &v) || v == 0)
		return fail(err, errsz, "bad port '%s' in '%s' (1-65535)", s, spec);
	*out = (uint16_t)v;
	return 0;
}

/* PROTO[/PORT[-PORT]] */
static int parse_spec(const char *spec, struct rule *r, char *err, size_t errsz)
{
	char text[64], *slash, *dash;

	if (strlen(spec) >= sizeof(text))
		return fail(err, errsz, "bad protocol/port '%s'", spec);
	strcpy(text, spec);
	slash = strchr(text, '/');
	if (slash)
		*slash = '\0';
	if (!strcmp(text, "tcp"))
		r->proto = IPPROTO_TCP;
	else if (!strcmp(text, "udp"))
		r->proto = IPPROTO_UDP;
	else if (!strcmp(text, "icmp"))
		r->proto = IPPROTO_ICMP;
	else if (!strcmp(text, "any"))
		r->proto = 0;
	else
		return fail(err, errsz, "unknown protocol '%s' in '%s' (tcp, udp, icmp or any)",
			    text, spec);
	r->port_lo = 0;
	r->port_hi = 65535;
	if (!slash)
		return 0;
	if (r->proto == IPPROTO_ICMP)
		return fail(err, errsz, "icmp has no ports: '%s'", spec);
	dash = strchr(slash + 1, '-');
	if (dash)
		*dash = '\0';
	if (parse_port(slash + 1, spec, &r->port_lo, err, errsz))
		return -EINVAL;
	r->port_hi = r->port_lo;
	if (dash && parse_port(dash + 1, spec, &r->port_hi, err, errsz))
		return -EINVAL;
	if (r->port_hi < r->port_lo)
		return fail(err, errsz, "port range in '%s' is reversed", spec);
	return 0;
}

static int parse_domain(const char *word, struct rule *r, char *err, size_t errsz)
{
	const char *name = word;
	size_t len, label = 0;
	char lower[POLICY_DOMAIN_MAX + 3], *w;

	if (!strncmp(name, "*.", 2))
		name += 2;
	len = strlen(name);
	if (len && name[len - 1] == '.')
		len--;
	if (len == 0 || len > POLICY_DOMAIN_MAX)
		return fail(err, errsz, "'%s' is not a domain name", word);
	for (size_t i = 0; i < len; i++) {
		char c = name[i];

		if (c == '.') {
			if (label == 0)
				return fail(err, errsz, "empty label in domain '%s'", word);
			label = 0;
			continue;
		}
		if (!isalnum((unsigned char)c) && c != '-' && c != '_')
			return fail(err, errsz, "bad character '%c' in domain '%s'", c, word);
		if (++label > 63)
			return fail(err, errsz, "label longer than 63 in domain '%s'", word);
	}
	if (label == 0)
		return fail(err, errsz, "empty label in domain '%s'", word);
	snprintf(lower, sizeof(lower), "%s%.*s", name != word ? "*." : "", (int)len, name);
	for (w = lower; *w; w++)
		*w = (char)tolower((unsigned char)*w);
	r->domain = policy__intern_domain(lower);
	if (!r->domain)
		return fail(err, errsz, "out of memory");
	r->kind = RULE_DOMAIN;
	return 0;
}

/* One policy line's words: "allow|deny CIDR [SPEC...]" or "allow|deny domain NAME". Fills up to
 * max rules (one per SPEC); returns how many, or -EINVAL with err set.
 */
int policy__parse_words(char **words, int n, const char *sandbox, struct rule *out, int max,
			char *err, size_t errsz)
{
	struct rule base = { .kind = RULE_CIDR, .port_hi = 65535 };
	int count = 0;

	if (n < 1 || (strcmp(words[0], "allow") && strcmp(words[0], "deny")))
		return fail(err, errsz, "a rule starts with allow or deny");
	base.action = strcmp(words[0], "deny") ? EGRET_ACT_ALLOW : EGRET_ACT_DENY;
	base.sandbox = policy__intern(sandbox);
	if (!base.sandbox)
		return fail(err, errsz, "out of memory");
	if (n < 2)
		return fail(err, errsz, "%s needs an address, a prefix or 'domain NAME'", words[0]);
	if (!strcmp(words[1], "domain")) {
		if (n != 3)
			return fail(err, errsz, "expected '%s domain NAME'", words[0]);
		if (parse_domain(words[2], &base, err, errsz))
			return -EINVAL;
		out[0] = base;
		return 1;
	}
	if (parse_cidr(words[1], &base, err, errsz))
		return -EINVAL;
	if (n == 2) {
		out[0] = base;
		return 1;
	}
	for (int i = 2; i < n; i++) {
		if (count == max)
			return fail(err, errsz, "more than %d protocol/port specs on one line",
				    max);
		out[count] = base;
		if (parse_spec(words[i], &out[count], err, errsz))
			return -EINVAL;
		count++;
	}
	return count;
}

static int split_words(char *line, char **words, int max)
{
	char *hash = strchr(line, '#'), *save = NULL, *w;
	int n = 0;

	if (hash)
		*hash = '\0';
	for (w = strtok_r(line, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
		if (n == max)
			return -E2BIG;
		words[n++] = w;
	}
	return n;
}

struct parse_state {
	const char *name;
	unsigned int line;
	bool in_block, mode_seen, require_seen;
	unsigned int block_line;
	char sandbox[SANDBOX_SELECTOR_MAX];
};

/* A network device name as the kernel takes it: 1-15 bytes, no '/', ':' or white space, not
 * "." or "..".
 */
static bool ifname_ok(const char *name)
{
	size_t len = strlen(name);

	if (len == 0 || len > 15 || !strcmp(name, ".") || !strcmp(name, ".."))
		return false;
	for (const char *c = name; *c; c++) {
		if (*c == '/' || *c == ':' || *c <= ' ' || *c == 0x7f)
			return false;
	}
	return true;
}

/* 'interface DEVICE' in a 'sandbox NAME {' block */
static int parse_interface(struct policy *p, const struct parse_state *st, char **w, int n,
			   bool live, char *err, size_t errsz)
{
	struct policy_iface *ifc;

	if (live)
		return fail(err, errsz, "interface lines belong in the policy file");
	if (!st->in_block || !sandbox__selector_is_name(st->sandbox))
		return fail(err, errsz,
			    "interface belongs in a 'sandbox NAME {' block (one sandbox, by its "
			    "name: a device's packets are one sandbox's)");
	if (n != 2 || !ifname_ok(w[1]))
		return fail(err, errsz,
			    "expected 'interface DEVICE' (a network device name: 1-15 "
			    "characters, no '/', ':' or spaces)");
	for (size_t i = 0; i < p->nifaces; i++) {
		if (!strcmp(p->ifaces[i].name, w[1]))
			return fail(err, errsz, "interface %s is sandbox %s's already (line %u)",
				    w[1], p->ifaces[i].sandbox, p->ifaces[i].line);
	}
	if (ARRAY_RESERVE(p->ifaces, p->ifaces_cap, p->nifaces + 1))
		return -ENOMEM;
	ifc = &p->ifaces[p->nifaces];
	ifc->sandbox = policy__intern(st->sandbox);
	if (!ifc->sandbox)
		return -ENOMEM;
	snprintf(ifc->name, sizeof(ifc->name), "%s", w[1]);
	ifc->line = st->line;
	p->nifaces++;
	return 0;
}

static const struct {
	const char *word;
	uint8_t kind;
	bool bytes; /* an amount of bytes with a unit (B, KiB, MiB, GiB), else a count */
	bool per_second_only;
	bool total; /* no period: in all */
} budget_kinds[] = {
	{ "dns", BUDGET_DNS, false, true, false },
	{ "dns-names", BUDGET_DNS_NAMES, true, false, false },
	{ "egress", BUDGET_EGRESS, true, false, false },
	{ "egress-total", BUDGET_EGRESS_TOTAL, true, false, true },
	{ "egress-rate", BUDGET_EGRESS_RATE, true, false, false },
};

static const struct {
	const char *word;
	uint32_t seconds;
} budget_periods[] = {
	{ "s", 1 },	  { "second", 1 }, { "min", 60 },    { "minute", 60 },
	{ "hour", 3600 }, { "h", 3600 },   { "day", 86400 }, { "d", 86400 },
};

static const struct {
	const char *word;
	uint64_t mult;
} byte_units[] = { { "B", 1 },
		   { "KiB", 1ull << 10 },
		   { "MiB", 1ull << 20 },
		   { "GiB", 1ull << 30 },
		   { "TiB", 1ull << 40 } };

#define BUDGET_AMOUNT_MAX (1ull << 50)

/* b, in the block being parsed (or global), unless this place sets its kind already */
static int add_budget(struct policy *p, const struct parse_state *st, struct policy_budget *b,
		      const char *what, const char *kind, char *err, size_t errsz)
{
	b->sandbox = policy__intern(st->in_block ? st->sandbox : "");
	if (!b->sandbox)
		return -ENOMEM;
	for (size_t i = 0; i < p->nbudgets; i++) {
		if (p->budgets[i].kind == b->kind && p->budgets[i].sandbox == b->sandbox)
			return fail(err, errsz, "%s %s is set twice here (line %u)", what, kind,
				    p->budgets[i].line);
	}
	if (ARRAY_RESERVE(p->budgets, p->budgets_cap, p->nbudgets + 1))
		return -ENOMEM;
	p->budgets[p->nbudgets++] = *b;
	return 0;
}

/* 'budget KIND AMOUNT/PERIOD' */
static int parse_budget(struct policy *p, const struct parse_state *st, char **w, int n, bool live,
			char *err, size_t errsz)
{
	static const char usage[] =
		"expected 'budget dns N/s', 'budget dns-names SIZE/PERIOD', "
		"'budget egress SIZE/PERIOD', 'budget egress-total SIZE' or "
		"'budget egress-rate SIZE/PERIOD' "
		"(SIZE: a number and B, KiB, MiB, GiB or TiB; PERIOD: s, min, hour "
		"or day)";
	struct policy_budget b = { .line = st->line };
	size_t k = 0, u = 0;
	const char *slash;
	char *end;

	if (live)
		return fail(err, errsz, "budget lines belong in the policy file");
	if (n != 3)
		return fail(err, errsz, "%s", usage);
	while (k < ARRAY_SIZE(budget_kinds) && strcmp(budget_kinds[k].word, w[1]))
		k++;
	slash = strchr(w[2], '/');
	if (k == ARRAY_SIZE(budget_kinds) || !slash != budget_kinds[k].total)
		return fail(err, errsz, "%s", usage);
	if (!slash)
		slash = w[2] + strlen(w[2]); /* the size ends the word */
	b.kind = budget_kinds[k].kind;
	errno = 0;
	b.amount = strtoull(w[2], &end, 10);
	if (end == w[2] || *w[2] == '-' || errno)
		return fail(err, errsz, "budget %s: '%s' is not an amount: %s", w[1], w[2], usage);
	if (budget_kinds[k].bytes) {
		while (u < ARRAY_SIZE(byte_units) &&
		       ((size_t)(slash - end) != strlen(byte_units[u].word) ||
			strncmp(end, byte_units[u].word, (size_t)(slash - end))))
			u++;
		if (u == ARRAY_SIZE(byte_units))
			return fail(err, errsz,
				    "budget %s: '%.*s' is not a unit (B, KiB, MiB, GiB, TiB)", w[1],
				    (int)(slash - end), end);
		if (b.amount > BUDGET_AMOUNT_MAX / byte_units[u].mult)
			return fail(err, errsz, "budget %s: %s is more than 1 PiB", w[1], w[2]);
		b.amount *= byte_units[u].mult;
	} else if (end != slash) {
		return fail(err, errsz, "budget %s: '%s' is not a number of queries: %s", w[1],
			    w[2], usage);
	}
	if (b.amount == 0 || b.amount > BUDGET_AMOUNT_MAX)
		return fail(err, errsz, "budget %s: the amount must be 1 or more (and not absurd)",
			    w[1]);
	for (size_t i = 0; *slash && i < ARRAY_SIZE(budget_periods); i++) {
		if (!strcmp(slash + 1, budget_periods[i].word))
			b.period_s = budget_periods[i].seconds;
	}
	if (!b.period_s && !budget_kinds[k].total)
		return fail(err, errsz, "budget %s: '%s' is not a period (s, min, hour or day)",
			    w[1], slash + 1);
	if (b.kind == BUDGET_DNS && b.amount > 1000000)
		return fail(err, errsz, "budget dns: at most 1000000 queries a second");
	if (budget_kinds[k].per_second_only && b.period_s != 1)
		return fail(err, errsz, "budget %s counts queries a second: 'budget %s N/s'", w[1],
			    w[1]);
	return add_budget(p, st, &b, "budget", w[1], err, errsz);
}

static const struct {
	const char *word;
	uint8_t kind;
} limit_kinds[] = {
	{ "memory", LIMIT_MEMORY }, { "memory-high", LIMIT_MEMORY_HIGH }, { "cpus", LIMIT_CPUS },
	{ "pids", LIMIT_PIDS },	    { "timeout", LIMIT_TIMEOUT },
};

#define LIMIT_PIDS_MAX 4194304 /* the kernel's pid_max limit */

/* 'limit KIND VALUE' */
static int parse_limit(struct policy *p, const struct parse_state *st, char **w, int n, bool live,
		       char *err, size_t errsz)
{
	static const char usage[] = "expected 'limit memory SIZE' (64M, 1G), 'limit memory-high "
				    "SIZE', 'limit cpus N' "
				    "(0.5, 2), 'limit pids N' or 'limit timeout TIME' (90s, 5m, "
				    "1h)";
	struct policy_budget b = { .line = st->line };
	uint32_t milli;
	size_t k = 0;
	int bad;

	if (live)
		return fail(err, errsz, "limit lines belong in the policy file");
	if (n != 3)
		return fail(err, errsz, "%s", usage);
	while (k < ARRAY_SIZE(limit_kinds) && strcmp(limit_kinds[k].word, w[1]))
		k++;
	if (k == ARRAY_SIZE(limit_kinds))
		return fail(err, errsz, "%s", usage);
	b.kind = limit_kinds[k].kind;
	switch (b.kind) {
	case LIMIT_MEMORY:
	case LIMIT_MEMORY_HIGH:
		bad = limits__parse_memory(w[2], &b.amount);
		break;
	case LIMIT_CPUS:
		bad = limits__parse_cpus(w[2], &milli);
		b.amount = milli;
		break;
	case LIMIT_PIDS:
		bad = parse_u64(w[2], LIMIT_PIDS_MAX, &b.amount) || !b.amount;
		break;
	default:
		bad = limits__parse_duration(w[2], &b.amount);
		break;
	}
	if (bad)
		return fail(err, errsz, "limit %s: '%s' is not a value: %s", w[1], w[2], usage);
	return add_budget(p, st, &b, "limit", w[1], err, errsz);
}

/* the word of a budget kind; NULL for a limit's */
static const char *budget_word(uint8_t kind)
{
	for (size_t k = 0; k < ARRAY_SIZE(budget_kinds); k++) {
		if (budget_kinds[k].kind == kind)
			return budget_kinds[k].word;
	}
	return NULL;
}

static void limit_format(const struct policy_budget *b, char *buf, size_t size)
{
	const char *word = "?";
	uint64_t v = b->amount;

	for (size_t k = 0; k < ARRAY_SIZE(limit_kinds); k++) {
		if (limit_kinds[k].kind == b->kind)
			word = limit_kinds[k].word;
	}
	if (b->kind == LIMIT_MEMORY || b->kind == LIMIT_MEMORY_HIGH) {
		static const char units[] = "GMK";
		int u = 0;

		while (u < 3 && v % (1ull << (10 * (3 - u))))
			u++;
		snprintf(buf, size, "limit %s %llu%.*s", word,
			 (unsigned long long)(v >> (10 * (3 - u))), u < 3, &units[u < 3 ? u : 0]);
	} else if (b->kind == LIMIT_CPUS)
		snprintf(buf, size, "limit %s %llu.%03llu", word, (unsigned long long)(v / 1000),
			 (unsigned long long)(v % 1000));
	else if (b->kind == LIMIT_TIMEOUT)
		snprintf(buf, size, "limit %s %llu%s", word,
			 (unsigned long long)(v % 1000	    ? v
					      : v % 60000   ? v / 1000
					      : v % 3600000 ? v / 60000
							    : v / 3600000),
			 v % 1000      ? "ms"
			 : v % 60000   ? "s"
			 : v % 3600000 ? "m"
				       : "h");
	else
		snprintf(buf, size, "limit %s %llu", word, (unsigned long long)v);
}

void budget__format(const struct policy_budget *b, char *buf, size_t size)
{
	const char *period = "?", *unit = "", *word = budget_word(b->kind);
	uint64_t amount = b->amount;

	if (!word) {
		limit_format(b, buf, size);
		return;
	}
	for (size_t i = 0; i < ARRAY_SIZE(budget_periods); i += 2) {
		if (budget_periods[i].seconds == b->period_s)
			period = budget_periods[i].word;
	}
	if (b->kind != BUDGET_DNS) {
		unit = "B";
		for (size_t u = ARRAY_SIZE(byte_units); u-- > 1;) {
			if (amount % byte_units[u].mult == 0) {
				amount /= byte_units[u].mult;
				unit = byte_units[u].word;
				break;
			}
		}
	}
	if (!b->period_s)
		snprintf(buf, size, "budget %s %llu%s", word, (unsigned long long)amount, unit);
	else
		snprintf(buf, size, "budget %s %llu%s/%s", word, (unsigned long long)amount, unit,
			 period);
}

const struct policy_budget *policy__budget(const struct policy *p, enum budget_kind kind,
					   const char *name, const struct sandbox_meta *meta)
{
	const struct policy_budget *best = NULL;

	for (size_t i = 0; i < p->nbudgets; i++) {
		const struct policy_budget *b = &p->budgets[i];

		if (b->kind != kind || (b->sandbox[0] && !sandbox__selects(b->sandbox, name, meta)))
			continue;
		/* the least per second: amount / period, compared without dividing (a total has
		 * no period: the least amount)
		 */
		if (!best || (b->period_s ? (unsigned __int128)b->amount * best->period_s <
						    (unsigned __int128)best->amount * b->period_s
					  : b->amount < best->amount))
			best = b;
	}
	return best;
}

static int parse_line(struct policy *p, struct parse_state *st, char **w, int n, bool live,
		      char *err, size_t errsz)
{
	struct rule rules[MAX_WORDS];
	int count;

	if (!strcmp(w[0], "}")) {
		if (!st->in_block || n != 1)
			return fail(err, errsz,
				    n != 1 ? "'}' stands alone on its line"
					   : "'}' without 'sandbox NAME {'");
		st->in_block = false;
		return 0;
	}
	if (!strcmp(w[0], "sandbox")) {
		if (st->in_block)
			return fail(err, errsz, "sandbox blocks do not nest (close '%s' first)",
				    st->sandbox);
		if (n < 3 || strcmp(w[n - 1], "{"))
			return fail(err, errsz, "expected 'sandbox SELECTOR {'");
		if (sandbox__parse_selector(&w[1], n - 2, st->sandbox, sizeof(st->sandbox), err,
					    errsz))
			return -EINVAL;
		st->in_block = true;
		st->block_line = st->line;
		return 0;
	}
	if (!strcmp(w[0], "mode")) {
		if (st->in_block)
			return fail(err, errsz,
				    "mode applies to the whole policy: put it outside "
				    "sandbox blocks");
		if (n != 2 || (strcmp(w[1], "enforce") && strcmp(w[1], "audit")))
			return fail(err, errsz, "expected 'mode enforce' or 'mode audit'");
		if (st->mode_seen)
			return fail(err, errsz, "mode is set twice");
		st->mode_seen = true;
		p->mode = strcmp(w[1], "audit") ? POLICY_ENFORCE : POLICY_AUDIT;
		return 0;
	}
	if (!strcmp(w[0], "require")) {
		if (st->in_block)
			return fail(err, errsz,
				    "require applies to the whole policy: put it outside "
				    "sandbox blocks");
		if (n != 2 || strcmp(w[1], "unprivileged"))
			return fail(err, errsz, "expected 'require unprivileged'");
		if (st->require_seen)
			return fail(err, errsz, "require unprivileged is set twice");
		st->require_seen = true;
		p->require_unpriv = true;
		return 0;
	}
	if (!strcmp(w[0], "interface"))
		return parse_interface(p, st, w, n, live, err, errsz);
	if (!strcmp(w[0], "budget"))
		return parse_budget(p, st, w, n, live, err, errsz);
	if (!strcmp(w[0], "limit"))
		return parse_limit(p, st, w, n, live, err, errsz);
	if (strcmp(w[0], "allow") && strcmp(w[0], "deny"))
		return fail(err, errsz,
			    "unknown directive '%s' (expected mode, require, allow, deny, "
			    "interface, budget, limit, sandbox or })",
			    w[0]);
	count = policy__parse_words(w, n, st->in_block ? st->sandbox : "", rules, MAX_WORDS, err,
				    errsz);
	for (int i = 0; i < count; i++) {
		rules[i].live = live;
		rules[i].line = st->line;
		if (policy__add(p, &rules[i]))
			return -ENOMEM;
	}
	return count < 0 ? count : 0;
}

/* Parse a whole policy into p (which the caller initialised); on error p is half-filled and
 * must be freed, err holds "NAME:LINE: what is wrong".
 */
int policy__parse(struct policy *p, const char *name, FILE *f, bool live, char *err, size_t errsz)
{
	struct parse_state st = { .name = name };
	char line[LINE_MAX_LEN + 2], msg[POLICY_ERR_LEN], *words[MAX_WORDS];
	int n, ret;

	while (fgets(line, sizeof(line), f)) {
		st.line++;
		if (strlen(line) > LINE_MAX_LEN) {
			snprintf(err, errsz, "%s:%u: line longer than %d characters", name, st.line,
				 LINE_MAX_LEN);
			return -EINVAL;
		}
		n = split_words(line, words, MAX_WORDS);
		if (n == 0)
			continue;
		ret = n < 0 ? fail(msg, sizeof(msg), "more than %d words", MAX_WORDS)
			    : parse_line(p, &st, words, n, live, msg, sizeof(msg));
		if (ret) {
			snprintf(err, errsz, "%s:%u: %s", name, st.line, msg);
			return ret;
		}
	}
	if (ferror(f)) {
		snprintf(err, errsz, "%s: read error", name);
		return -EIO;
	}
	if (st.in_block) {
		snprintf(err, errsz, "%s:%u: 'sandbox %s {' is not closed", name, st.block_line,
			 st.sandbox);
		return -EINVAL;
	}
	policy__renumber(p);
	return 0;
}

int policy__parse_file(struct policy *p, const char *path, bool live, char *err, size_t errsz)
{
	FILE *f = fopen(path, "re");
	int ret;

	if (!f) {
		ret = -errno;
		snprintf(err, errsz, "%s: %s", path, strerror(errno));
		return ret;
	}
	ret = policy__parse(p, path, f, live, err, errsz);
	fclose(f);
	return ret;
}

static int cmp_lines(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* SHA-256 over the mode and the sorted rule lines: the same rules give the same hash whatever
 * their order or origin.
 */
void policy__hash(const struct policy *p, char out[65])
{
	char **lines = calloc(p->n ? p->n : 1, sizeof(char *));
	struct sha256 s;
	uint8_t digest[32];
	char text[SANDBOX_SELECTOR_MAX + 512];

	sha256__init(&s);
	sha256__update(&s, policy__mode_name(p->mode), strlen(policy__mode_name(p->mode)));
	if (p->require_unpriv)
		sha256__update(&s, "|require unprivileged", 21);
	for (size_t i = 0; lines && i < p->n; i++) {
		char rule[400];

		rule__format(&p->rules[i], rule, sizeof(rule));
		snprintf(text, sizeof(text), "%s|%s\n", p->rules[i].sandbox, rule);
		lines[i] = strdup(text);
	}
	if (lines)
		qsort(lines, p->n, sizeof(char *), cmp_lines);
	for (size_t i = 0; lines && i < p->n; i++) {
		if (lines[i])
			sha256__update(&s, lines[i], strlen(lines[i]));
		free(lines[i]);
	}
	free(lines);
	/* in file order: a device is one sandbox's, and the parser refuses a second claim */
	for (size_t i = 0; i < p->nifaces; i++) {
		snprintf(text, sizeof(text), "|interface %s %s\n", p->ifaces[i].sandbox,
			 p->ifaces[i].name);
		sha256__update(&s, text, strlen(text));
	}
	/* in file order too: a kind is set once per block */
	for (size_t i = 0; i < p->nbudgets; i++) {
		char b[80];

		budget__format(&p->budgets[i], b, sizeof(b));
		snprintf(text, sizeof(text), "|%s %s\n", p->budgets[i].sandbox, b);
		sha256__update(&s, text, strlen(text));
	}
	sha256__final(&s, digest);
	sha256__hex(digest, out);
}

static void write_rules(const struct policy *p, FILE *f, const char *sandbox, const char *indent)
{
	char text[400];

	for (size_t i = 0; i < p->n; i++) {
		if (!p->rules[i].live || strcmp(p->rules[i].sandbox, sandbox))
			continue;
		rule__format(&p->rules[i], text, sizeof(text));
		fprintf(f, "%s%s\n", indent, text);
	}
}

/* The live rules in policy syntax, global ones first, then one block per sandbox. */
int policy__write_live(const struct policy *p, FILE *f)
{
	const char **names = NULL;
	size_t n = 0;

	fprintf(f, "# egret live rules: written by egretd, replayed when it starts.\n"
		   "# Change them with egretctl allow, deny and revoke, not by hand.\n");
	write_rules(p, f, "", "");
	if (policy__sandboxes(p, &names, &n))
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (!policy__count(p, true, names[i]))
			continue;
		fprintf(f, "sandbox %s {\n", names[i]);
		write_rules(p, f, names[i], "\t");
		fprintf(f, "}\n");
	}
	free(names);
	return ferror(f) ? -EIO : 0;
}
