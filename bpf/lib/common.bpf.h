/* Includes and constants every egret BPF program needs; vmlinux.h has no #defines. */
#ifndef EGRET_COMMON_BPF_H
#define EGRET_COMMON_BPF_H

#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_core_read.h>

#include "egret/events.h"
#include "egret/egress.h"

#define AF_INET	 2
#define AF_INET6 10

#define SK_PASS	 1 /* cgroup programs: let it through */
#define SK_DROP	 0 /* cgroup programs: refuse (EPERM for socket calls) */

#endif /* EGRET_COMMON_BPF_H */
