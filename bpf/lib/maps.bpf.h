/* Maps every egret BPF object shares. Each object declares them; egretd loads the first object
 * that owns them, pins them under its state dir and hands the same map to the other objects, so
 * there is one ring buffer, one counter array and one socket store per egret instance.
 */
#ifndef EGRET_MAPS_BPF_H
#define EGRET_MAPS_BPF_H

#include "lib/common.bpf.h"

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, EGRET_RINGBUF_BYTES);
} events SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, EGRET_CNT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct egret_sock_meta);
} sock_meta SEC(".maps");

/* The rule trie; see include/egret/policy.h. Renamed (policy_vN) whenever its key or value
 * layout changes, so an egretd of another layout never adopts it.
 */
struct policy_trie {
	__uint(type, BPF_MAP_TYPE_LPM_TRIE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__uint(max_entries, EGRET_POLICY_MAX_ENTRIES);
	__uint(key_size, sizeof(struct egret_policy_key));
	__uint(value_size, sizeof(struct egret_policy_val));
};

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY_OF_MAPS);
	__uint(max_entries, 1);
	__type(key, __u32);
	__array(values, struct policy_trie);
} policy_v1 SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_SANDBOXES_MAX);
	__type(key, __u64);
	__type(value, struct egret_sandbox);
} sandboxes SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_SANDBOXES_MAX);
	__type(key, __u64);
	__type(value, __u8);
} sandbox_rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_DNS_LISTENERS_MAX);
	__type(key, __u64);
	__type(value, struct egret_dns_listener);
} dns_listeners SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, EGRET_DNS_CLIENTS_MAX);
	__type(key, struct egret_dns_client_key);
	__type(value, struct egret_dns_client);
} dns_clients SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, EGRET_DNS_ALLOW_MAX);
	__type(key, struct egret_dns_allow_key);
	__type(value, struct egret_dns_allow);
} dns_allow SEC(".maps");

/* a sandboxed socket's traffic, from its first allowed connect or send to its close; kept with
 * the socket, so it needs no key, no eviction and no clean-up
 */
struct {
	__uint(type, BPF_MAP_TYPE_SK_STORAGE);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, int);
	__type(value, struct egret_flow);
} sock_flows SEC(".maps");

/* network namespaces already reported as lacking a listener (rate limit) */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 1024);
	__type(key, __u64);
	__type(value, __u64);
} netns_reported SEC(".maps");

static __always_inline void counter_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

static __always_inline void counter_verdict(__u8 hook, __u8 verdict)
{
	counter_inc(EGRET_CNT_VERDICT(hook, verdict));
}

#endif /* EGRET_MAPS_BPF_H */
