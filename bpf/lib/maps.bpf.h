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

static __always_inline void counter_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&counters, &idx);

	if (v)
		*v += 1;
}

#endif /* EGRET_MAPS_BPF_H */
