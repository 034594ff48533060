/* The layout of every struct bpf/ and user/ share (include/egret/), asserted in one place: a
 * change that moves a field or the size of one fails the build here instead of decoding garbage
 * at run time. The sizes are those the BPF objects' BTF reports. Nothing here is linked.
 */
#include <linux/types.h>

#include "egret/events.h" /* first: the others' records start with its header */

#include "egret/audit.h"
#include "egret/confine.h"
#include "egret/dns.h"
#include "egret/device.h"
#include "egret/egress.h"
#include "egret/policy.h"

#define EGRET_ABI_SIZE(name, size) _Static_assert(sizeof(struct name) == (size), #name " layout")

/* records in the events ring buffer, each after the 56-byte header */
EGRET_ABI_SIZE(egret_event_hdr, 56);
EGRET_ABI_SIZE(egret_connect_event, 120);
EGRET_ABI_SIZE(egret_cgroup_event, 72 + EGRET_CGROUP_NAME_LEN);
EGRET_ABI_SIZE(egret_tamper_event, 80);
EGRET_ABI_SIZE(egret_netns_event, 56 + 8);
EGRET_ABI_SIZE(egret_exec_event, 56 + 64 + EGRET_ARGS_MAX + 2 * EGRET_PATH_MAX + EGRET_ENV_MAX);
EGRET_ABI_SIZE(egret_fork_event, 56 + 16);
EGRET_ABI_SIZE(egret_exit_event, 56 + 24);
EGRET_ABI_SIZE(egret_file_event, 56 + 24 + 2 * EGRET_PATH_MAX);
EGRET_ABI_SIZE(egret_flow_event, 56 + 96);
EGRET_ABI_SIZE(egret_limit_event, 56 + 32 + EGRET_CGROUP_NAME_LEN);
EGRET_ABI_SIZE(egret_budget, 96);

/* map keys and values */
EGRET_ABI_SIZE(egret_sock_meta, 56);
EGRET_ABI_SIZE(egret_policy_key, 28);
EGRET_ABI_SIZE(egret_policy_val, 200);
EGRET_ABI_SIZE(egret_port_rule, 12);
EGRET_ABI_SIZE(egret_sandbox, 8);
EGRET_ABI_SIZE(egret_sandbox_meta, 8 + EGRET_SANDBOX_META_LEN);
EGRET_ABI_SIZE(egret_flow_start, 48);
EGRET_ABI_SIZE(egret_flow, 48 + 72);
EGRET_ABI_SIZE(egret_pattern, 72);
EGRET_ABI_SIZE(egret_task_info, 56);
EGRET_ABI_SIZE(egret_loss_key, 16);
EGRET_ABI_SIZE(egret_loss, 16);
EGRET_ABI_SIZE(egret_signal_key, 8);
EGRET_ABI_SIZE(egret_signal_sender, 24);
EGRET_ABI_SIZE(egret_selftest, 264);
EGRET_ABI_SIZE(egret_dns_listener, 24);
EGRET_ABI_SIZE(egret_dns_client_key, 32);
EGRET_ABI_SIZE(egret_dns_client, 64);
EGRET_ABI_SIZE(egret_dns_allow_key, 24);
EGRET_ABI_SIZE(egret_dns_allow, 8);
EGRET_ABI_SIZE(egret_device, 64);
EGRET_ABI_SIZE(egret_dev_nat_key, 24);
EGRET_ABI_SIZE(egret_dev_nat, 72);
EGRET_ABI_SIZE(egret_dev_listener_key, 20);
EGRET_ABI_SIZE(egret_dev_frag_key, 24);
EGRET_ABI_SIZE(egret_dev_report_key, 24);
