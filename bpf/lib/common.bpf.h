/* Includes and constants every egret BPF program needs; vmlinux.h has no #defines. */
#ifndef EGRET_COMMON_BPF_H
#define EGRET_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "egret/events.h"
#include "egret/fnv.h"
#include "egret/egress.h"
#include "egret/policy.h"
#include "egret/confine.h"
#include "egret/dns.h"
#include "egret/device.h"
#include "egret/audit.h"

#include "lib/compat.bpf.h"

#define AF_UNIX	       1
#define AF_INET	       2
#define AF_INET6       10
#define AF_NETLINK     16

#define SOCK_STREAM    1
#define SOCK_DGRAM     2
#define SOCK_TYPE_MASK 0xf

#define ETH_P_IP       0x0800
#define ETH_P_IPV6     0x86DD

#define IPPROTO_ICMPV6 58

#define SIGKILL	       9
#define SIGSYS	       31

#define SK_PASS	       1 /* cgroup programs: let it through */
#define SK_DROP	       0 /* cgroup programs: refuse (EPERM for socket calls) */

/* The file behind a descriptor of the current task, or NULL. The task is a trusted pointer: its
 * files and fd table are direct loads. The table's slot is a plain load too where the kernel
 * types pointers for us (rdonly_cast_ok): the slot is read as a struct kiocb, whose first
 * member is a struct file pointer (checked at load: else one read). So the result is an
 * untrusted BTF pointer there and a number on 6.1: callers read through it, compare it or
 * re-type it, and pass it to no helper that wants a trusted pointer.
 */
static __always_inline struct file *current_fd_file(long fd)
{
	struct fdtable *fdt = bpf_get_current_task_btf()->files->fdt;
	struct file *f = NULL;

	if (!fdt || fd < 0 || (__u64)fd >= fdt->max_fds)
		return NULL;
	if (rdonly_cast_ok() && bpf_core_field_offset(struct kiocb, ki_filp) == 0)
		return KERNEL_PTR(struct kiocb, &fdt->fd[fd])->ki_filp;
	if (bpf_probe_read_kernel(&f, sizeof(f), &fdt->fd[fd]))
		return NULL;
	return f;
}

#endif /* EGRET_COMMON_BPF_H */
