/* egret's tc filters on sandboxes' devices, through libbpf's netlink tc API (which works from
 * Linux 5.x on, 6.1 included). A filter is egret's when its program is one of the device
 * programs of bpf/egress.bpf.c, by name.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <linux/types.h>

#include "egret/events.h"
#include "egret/dns.h"
#include "egret/device.h"
#include "tc.h"

/* libbpf prints the kernel's answer to every tc request that fails, and most of ours are
 * questions whose answer is "none" (no qdisc yet, no filter yet): quiet while we ask.
 */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

static void tc_hook(struct bpf_tc_hook *h, uint32_t ifindex, bool ingress)
{
	memset(h, 0, sizeof(*h));
	h->sz = sizeof(*h);
	h->ifindex = (int)ifindex;
	h->attach_point = ingress ? BPF_TC_INGRESS : BPF_TC_EGRESS;
}

static void tc_place(struct bpf_tc_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->sz = sizeof(*o);
	o->handle = EGRET_TC_HANDLE;
	o->priority = EGRET_TC_PRIORITY;
}

static bool prog_is_egrets(uint32_t id)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);
	int fd = bpf_prog_get_fd_by_id(id);
	bool ours;

	if (fd < 0)
		return false;
	ours = bpf_obj_get_info_by_fd(fd, &info, &len) == 0 &&
	       (!strcmp(info.name, "egret_dev_out") || !strcmp(info.name, "egret_dev_in"));
	close(fd);
	return ours;
}

static uint32_t prog_id(int fd)
{
	struct bpf_prog_info info = {};
	__u32 len = sizeof(info);

	return bpf_obj_get_info_by_fd(fd, &info, &len) ? 0 : info.id;
}

uint32_t tc__prog(uint32_t ifindex, bool ingress)
{
	libbpf_print_fn_t was = libbpf_set_print(quiet);
	struct bpf_tc_hook h;
	struct bpf_tc_opts o;
	int r;

	tc_hook(&h, ifindex, ingress);
	tc_place(&o);
	r = bpf_tc_query(&h, &o);
	libbpf_set_print(was);
	return r ? 0 : o.prog_id;
}

bool tc__runs(uint32_t ifindex, bool ingress, int prog_fd)
{
	uint32_t id = tc__prog(ifindex, ingress);

	return id && id == prog_id(prog_fd);
}

int tc__attach(uint32_t ifindex, bool ingress, int prog_fd, char *err, size_t errsz)
{
	const char *hook = ingress ? "ingress" : "egress";
	struct bpf_tc_hook h;
	struct bpf_tc_opts o;
	libbpf_print_fn_t was;
	uint32_t there;
	int r;

	tc_hook(&h, ifindex, ingress);
	was = libbpf_set_print(quiet);
	r = bpf_tc_hook_create(&h);
	libbpf_set_print(was);
	if (r && r != -EEXIST) {
		snprintf(err, errsz,
			 "cannot add a clsact qdisc (%s): a qdisc that is not clsact holds "
			 "its place, or the device is gone",
			 strerror(-r));
		return r;
	}
	there = tc__prog(ifindex, ingress);
	if (there && !prog_is_egrets(there)) {
		snprintf(err, errsz,
			 "%s filter priority %u handle 0x%x holds another's program (id %u): "
			 "egret does not replace it",
			 hook, EGRET_TC_PRIORITY, EGRET_TC_HANDLE, there);
		return -EEXIST;
	}
	if (there && there == prog_id(prog_fd))
		return 0;
	tc_place(&o);
	o.prog_fd = prog_fd;
	o.flags = there ? BPF_TC_F_REPLACE : 0;
	r = bpf_tc_attach(&h, &o);
	if (r)
		snprintf(err, errsz, "cannot attach at %s: %s", hook, strerror(-r));
	return r;
}

int tc__detach(uint32_t ifindex, bool ingress)
{
	uint32_t there = tc__prog(ifindex, ingress);
	struct bpf_tc_hook h;
	struct bpf_tc_opts o;
	int r;

	if (!there || !prog_is_egrets(there))
		return 0;
	tc_hook(&h, ifindex, ingress);
	tc_place(&o);
	r = bpf_tc_detach(&h, &o);
	return r == -ENOENT || r == -ENODEV ? 0 : r;
}

int tc__detach_pinned(const char *pin)
{
	__u32 key, next;
	int fd = bpf_obj_get(pin), err = 0, r;
	bool first = true;

	if (fd < 0)
		return errno == ENOENT ? 0 : -errno;
	while (bpf_map_get_next_key(fd, first ? NULL : &key, &next) == 0) {
		first = false;
		key = next;
		r = tc__detach(key, true);
		if (!r)
			r = tc__detach(key, false);
		if (r && !err)
			err = r;
	}
	close(fd);
	return err;
}
