/* The compiled egress policy as BPF sees it, shared by bpf/lib/policy.bpf.h and
 * user/enforce/policy_map.c.
 *
 * One LPM trie holds every rule set: the key is (scope, address prefix), scope 0 for global rules
 * and the sandbox's cgroup id for that sandbox's rules, so a global and a sandbox rule are one
 * lookup each. egretd pushes every prefix's port rules down into the longer prefixes it covers,
 * so the longest match carries all that apply. The trie sits in slot 0 of an array-of-maps;
 * a reload builds a new trie and swaps the slot, which is atomic for every reader.
 */
#ifndef EGRET_POLICY_H
#define EGRET_POLICY_H

#define EGRET_POLICY_MAX_ENTRIES (1u << 20) /* prefixes over all scopes */
#define EGRET_PORT_RULES	 16	    /* port rules per prefix after push-down */
#define EGRET_SANDBOXES_MAX	 65536	    /* registered sandboxes */
#define EGRET_SCOPE_BITS	 64	    /* key bits taken by the scope */
#define EGRET_WATCH_MAX		 8	    /* watched subtrees: egret's root and each --watch */
#define EGRET_CGROUP_DEPTH	 16	    /* levels below the v2 root a sandbox may sit at */
#define EGRET_NO_SANDBOX	 (~0ull)    /* a record's sandbox_id for the host's own tasks */

/* egret_port_rule.action */
enum egret_action {
	EGRET_ACT_ALLOW = 1,
	EGRET_ACT_DENY = 2,
};

/* egret_policy_val.flags, carried by the global scope's entries (pushed down from ::/0) */
#define EGRET_POL_AUDIT 0x1 /* audit mode: would-be denials pass and are reported */
#define EGRET_POL_REQUIRE_UNPRIV \
	0x2 /* 'require unprivileged': no sandboxed process may hold host capabilities */

struct egret_policy_key {
	__u32 prefixlen; /* EGRET_SCOPE_BITS + address prefix bits */
	__u32 scope[2];	 /* 0: global; else the sandbox cgroup id, low word first */
	__u8 addr[16];	 /* network order, IPv4 mapped into ::ffff:0:0/96 */
};

struct egret_port_rule {
	__u32 rule_id; /* egretd's rule id, reported with the verdict */
	__u16 port_lo; /* host order, inclusive; ICMP has port 0 */
	__u16 port_hi;
	__u8 proto;  /* 0 any, IPPROTO_TCP, IPPROTO_UDP, IPPROTO_ICMP (ICMP and ICMPv6) */
	__u8 action; /* enum egret_action */
	__u8 pad[2];
};

struct egret_policy_val {
	__u32 flags;  /* EGRET_POL_* */
	__u32 nrules; /* valid entries in rules[] */
	struct egret_port_rule rules[EGRET_PORT_RULES];
};

/* `sandbox_rules` holds the FNV-1a 64 hash (include/egret/fnv.h) of every sandbox name that
 * has rules of its own. A sandbox cgroup whose name is not there is registered by the kernel the
 * moment it is created (the global rules are all it needs); one whose name is waits, denied,
 * until egretd has installed its rules.
 */

/* `sandboxes` map, keyed by cgroup id: the registered sandboxes (bpf/lib/sandbox.bpf.h). Each
 * is a cgroup, and every cgroup below it is in it; a task under a watched subtree that is in no
 * registered sandbox is denied everything (fail closed) until egretd registers its sandbox.
 */
struct egret_sandbox {
	__u32 flags; /* EGRET_SB_* */
	__u32 pad;
};

#define EGRET_SB_RULES 0x1 /* the trie has entries in this sandbox's scope */
#define EGRET_SB_HOST \
	0x2 /* exempt: this cgroup and those below it are the host's (egretd's
			    * own pod, an operator's --exempt) even under a watched subtree */

/* `sandbox_meta`, keyed by cgroup id: what a runtime's registration said of a sandbox, its
 * KEY=VALUE words (user/core/sandbox.h), pinned so that a restarted egretd knows its containers.
 * No program reads it.
 */
#define EGRET_SANDBOX_META_LEN 4096

struct egret_sandbox_meta {
	__u32 len; /* bytes of words used */
	__u32 pad;
	__u8 words[EGRET_SANDBOX_META_LEN]; /* NUL-terminated words, one after the other */
};

/* `egress_budgets`, keyed by sandbox id: what a sandbox may send (the policy's 'budget egress
 * SIZE/PERIOD', 'budget egress-total SIZE' and 'budget egress-rate SIZE/PERIOD'), set by egretd,
 * counted by the kernel at cgroup_skb/egress after the verdict (loopback not counted). A packet
 * that would take a count over its budget is dropped; the one packet whose bytes cross the line
 * makes the one EGRET_EV_LIMIT record of that period (or of the total). The rate is a token
 * bucket kept as a time (GCRA): tat_ns is when what passed would have gone at rate_bps; a packet
 * passes when the backlog it makes is within burst_ns (or the bucket is full), else it is
 * dropped, and the first drop after a second without one makes an EGRET_EV_LIMIT record.
 * `egress_budget_n` (one __u64): the policy has egress budgets; while 0 a packet costs one array
 * load.
 */
struct egret_budget {
	__u64 period_bytes; /* per period; 0: none */
	__u64 period_ns;
	__u64 total_bytes;  /* since the budget was set; 0: none */
	__u64 window;	    /* the period counted: boot time / period_ns */
	__u64 used;	    /* bytes sent in that period, and those refused */
	__u64 total_used;   /* bytes sent since the budget was set, and those refused */
	__u64 dropped;	    /* packets dropped over a budget or the rate */
	__u64 rate_bps;	    /* egress-rate: bytes a second; 0: none */
	__u64 burst_ns;	    /* the bucket: what may go at once, as time at rate_bps */
	__u64 tat_ns;	    /* boot time at which what passed would have gone at the rate */
	__u64 rate_drop_ns; /* the rate's last drop (boot time) */
	__u64 rate_refused; /* bytes the rate refused since it was set */
};

#endif /* EGRET_POLICY_H */
