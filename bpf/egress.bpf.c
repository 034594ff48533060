// SPDX-License-Identifier: GPL-2.0
/* Egress enforcement for every sandbox under egret's root cgroup: socket creation (refuses
 * socket types sandboxes may not have), connect and sendmsg (check the destination; steer DNS
 * to egret's resolver), recvmsg and getpeername (show DNS answers coming from the server asked),
 * the egress skb backstop for every packet the socket hooks did not judge, and the tc programs
 * egretd puts on sandboxes' own network devices.
 */
#define EGRET_OBJ_EGRESS /* its maps, lib/maps.bpf.h */
#include "lib/device.bpf.h"
#include "lib/egress.bpf.h"

char LICENSE[] SEC("license") = "GPL";

SEC("cgroup/sock_create")
int egret_sock_new(struct bpf_sock *sk)
{
	return egress_sock_create(sk);
}

SEC("cgroup/connect4")
int egret_connect4(struct bpf_sock_addr *ctx)
{
	return egress_sock_addr(ctx, AF_INET, EGRET_HOOK_CONNECT4);
}

SEC("cgroup/connect6")
int egret_connect6(struct bpf_sock_addr *ctx)
{
	return egress_sock_addr(ctx, AF_INET6, EGRET_HOOK_CONNECT6);
}

SEC("cgroup/sendmsg4")
int egret_sendmsg4(struct bpf_sock_addr *ctx)
{
	return egress_sock_addr(ctx, AF_INET, EGRET_HOOK_SENDMSG4);
}

SEC("cgroup/sendmsg6")
int egret_sendmsg6(struct bpf_sock_addr *ctx)
{
	return egress_sock_addr(ctx, AF_INET6, EGRET_HOOK_SENDMSG6);
}

SEC("cgroup_skb/egress")
int egret_egress(struct __sk_buff *skb)
{
	return egress_skb(skb);
}

SEC("cgroup/recvmsg4")
int egret_recvmsg4(struct bpf_sock_addr *ctx)
{
	return dns_unrewrite(ctx, AF_INET);
}

SEC("cgroup/recvmsg6")
int egret_recvmsg6(struct bpf_sock_addr *ctx)
{
	return dns_unrewrite(ctx, AF_INET6);
}

SEC("cgroup/getpeername4")
int egret_getpeer4(struct bpf_sock_addr *ctx)
{
	return dns_unrewrite(ctx, AF_INET);
}

SEC("cgroup/getpeername6")
int egret_getpeer6(struct bpf_sock_addr *ctx)
{
	return dns_unrewrite(ctx, AF_INET6);
}

SEC("tc")
int egret_dev_out(struct __sk_buff *skb)
{
	return device_out(skb);
}

SEC("tc")
int egret_dev_in(struct __sk_buff *skb)
{
	return device_in(skb);
}
