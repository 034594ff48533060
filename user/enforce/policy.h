/* egret's policy language: parsing policy files and single rules, printing rules back in the
 * same words, and the rule-set hash reported with every change.
 *
 *   mode enforce|audit
 *   allow|deny CIDR [PROTO[/PORT[-PORT]]]...     PROTO: tcp, udp, icmp, any
 *   allow|deny domain NAME                        NAME: example.com or *.example.com
 *   sandbox SELECTOR {                            NAME, image=REF, label KEY=VALUE, ...
 *       allow|deny ...                            (sandbox.h: sandbox__parse_selector)
 *       interface DEVICE                          NAME blocks only: the sandbox's own device
 *   }                                             (a VM's tap), judged at its host side
 *   budget dns N/s | dns-names SIZE/PERIOD        global or in a block (struct policy_budget)
 *   budget egress SIZE/PERIOD | egress-total SIZE | egress-rate SIZE/PERIOD
 *   limit memory[-high] SIZE | cpus N | pids N | timeout TIME   global or in a block
 *
 * A sandbox gets the global rules and those of every block that selects it; a deny anywhere
 * beats every allow.
 */
#ifndef EGRET_POLICY_H_USER
#define EGRET_POLICY_H_USER

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "sandbox.h"

#define POLICY_ERR_LEN	    512
#define POLICY_DOMAIN_MAX   253
#define POLICY_LIVE_ID_BASE 1000000u /* live rules are numbered from here */

enum rule_kind {
	RULE_CIDR = 1,
	RULE_DOMAIN = 2,
};

/* action values are enum egret_action (EGRET_ACT_ALLOW / EGRET_ACT_DENY) */
struct rule {
	uint32_t id;	  /* 1.. for file rules in file order, POLICY_LIVE_ID_BASE.. for live */
	uint8_t action;	  /* enum egret_action */
	uint8_t kind;	  /* enum rule_kind */
	uint8_t proto;	  /* 0 any, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP */
	uint8_t plen;	  /* prefix length over the 128-bit form (IPv4 /n is 96 + n) */
	uint16_t port_lo; /* inclusive; 0-65535 for every port */
	uint16_t port_hi;
	uint8_t addr[16];    /* network order, IPv4 mapped, host bits zero */
	const char *sandbox; /* its block's selector, "" for a global rule (policy__intern) */
	const char *domain; /* RULE_DOMAIN: lower case, maybe "*." prefixed (policy__intern_domain);
			      * NULL otherwise */
	bool live;	    /* added by egretctl, kept in the live-rules file */
	unsigned int line;  /* line in its file */
};

enum policy_mode {
	POLICY_ENFORCE = 0,
	POLICY_AUDIT = 1,
};

/* 'interface DEVICE' in 'sandbox NAME {': a network device of egretd's namespace (a VM's tap,
 * a veth egret does not find by itself) whose packets are the sandbox's
 */
struct policy_iface {
	const char *sandbox; /* the block's selector, a plain name (policy__intern) */
	char name[16];	     /* IFNAMSIZ */
	unsigned int line;
};

/* 'budget KIND AMOUNT[/PERIOD]', global or in a block: what each sandbox it applies to may
 * spend per period (a sandbox under several: the tightest). Kinds:
 *   dns N/s                  queries a second to egret's resolver (a burst of twice N)
 *   dns-names SIZE/PERIOD    bytes of names the resolver sends upstream for the sandbox
 *   egress SIZE/PERIOD       bytes the sandbox sends (not to loopback), counted in the kernel
 *   egress-total SIZE        the same, in all (from the moment the budget is set)
 *   egress-rate SIZE/PERIOD  the same as a rate: a token bucket of SIZE/PERIOD a second and a
 *                            burst of a second of it (64 KiB at least); over it, dropped
 * 'limit KIND VALUE' likewise, kept with the budgets (a period of 0; the tightest: the least):
 *   memory SIZE              memory.max of each sandbox's cgroup (64M, 1G: reslimit.h)
 *   memory-high SIZE         memory.high (the kernel reclaims and throttles over it)
 *   cpus N                   cpu.max, in CPUs (0.5, 2): amount in thousandths
 *   pids N                   pids.max
 *   timeout TIME             wall clock from the sandbox's start (90s, 5m, 1h): amount in ms;
 *                            then it is frozen, reported and killed
 * egretd sets memory, cpus and pids in cgroup v2 (a runtime's cgroups, or those under egret's
 * root), or on a hybrid host in the v1 cgroups the sandbox's processes are in, never raising
 * a limit the cgroup has.
 */
enum budget_kind {
	BUDGET_DNS = 1,
	BUDGET_DNS_NAMES = 2,
	BUDGET_EGRESS = 3,
	BUDGET_EGRESS_TOTAL = 4,
	LIMIT_MEMORY = 5,
	LIMIT_CPUS = 6,
	LIMIT_PIDS = 7,
	LIMIT_TIMEOUT = 8,
	LIMIT_MEMORY_HIGH = 9,
	BUDGET_EGRESS_RATE = 10,
};

struct policy_budget {
	const char *sandbox; /* the block's selector, "" global (policy__intern) */
	uint8_t kind;	     /* enum budget_kind */
	uint64_t amount;     /* queries, bytes, thousandths of a CPU, processes or ms */
	uint32_t period_s;   /* 1, 60, 3600 or 86400; 0: in all (egress-total) */
	unsigned int line;
};

struct policy {
	enum policy_mode mode;
	bool require_unpriv; /* 'require unprivileged' */
	struct rule *rules;
	size_t n, cap;
	struct policy_iface *ifaces;
	size_t nifaces, ifaces_cap;
	struct policy_budget *budgets;
	size_t nbudgets, budgets_cap;
};

void policy__init(struct policy *p);
void policy__free(struct policy *p);
int policy__copy(struct policy *dst, const struct policy *src);
int policy__parse(struct policy *p, const char *name, FILE *f, bool live, char *err, size_t errsz);
int policy__parse_file(struct policy *p, const char *path, bool live, char *err, size_t errsz);
int policy__parse_words(char **words, int n, const char *sandbox, struct rule *out, int max,
			char *err, size_t errsz);
int policy__add(struct policy *p, const struct rule *r);
void policy__remove(struct policy *p, size_t i);
ssize_t policy__find(const struct policy *p, const struct rule *r);
ssize_t policy__find_id(const struct policy *p, uint32_t id);
void policy__renumber(struct policy *p);
/* The distinct selectors of p's sandbox blocks, sorted; the caller frees *sels (not the
 * strings).
 */
int policy__sandboxes(const struct policy *p, const char ***sels, size_t *n);
/* Rules (live or from the file) of the block with this selector, or of every block (NULL). */
size_t policy__count(const struct policy *p, bool live, const char *sandbox);
/* Whether any rule of p applies to the sandbox name (with meta, or NULL) beyond the global
 * ones: a block selects it.
 */
bool policy__selects(const struct policy *p, const char *name, const struct sandbox_meta *meta);
/* The one copy of a selector string every rule shares; "" for NULL or "". Kept for egretd's
 * life (there are as many as distinct selectors an operator ever typed); NULL: no memory.
 */
const char *policy__intern(const char *selector);
/* The one copy of a domain rule's name (never freed: a rule is 48 bytes, not 300, and rules are
 * copied freely); NULL when out of memory.
 */
const char *policy__intern_domain(const char *name);
void policy__hash(const struct policy *p, char out[65]);
/* The budget of this kind the sandbox (name, meta or NULL) spends from: the tightest of the
 * global one and those of the blocks that select it (the least per second); NULL: none.
 */
const struct policy_budget *policy__budget(const struct policy *p, enum budget_kind kind,
					   const char *name, const struct sandbox_meta *meta);
/* "budget dns-names 64KiB/hour", "limit cpus 0.5", as the policy has it */
void budget__format(const struct policy_budget *b, char *buf, size_t size);
int policy__write_live(const struct policy *p, FILE *f);

void rule__format(const struct rule *r, char *buf, size_t size);
bool rule__same(const struct rule *a, const struct rule *b);
const char *policy__mode_name(enum policy_mode m);

#endif /* EGRET_POLICY_H_USER */
