/* Capability names, as <linux/capability.h> numbers them. */
#include <stdio.h>
#include <string.h>

#include "caps.h"

static const char *const names[] = {
	"CAP_CHOWN",
	"CAP_DAC_OVERRIDE",
	"CAP_DAC_READ_SEARCH",
	"CAP_FOWNER",
	"CAP_FSETID",
	"CAP_KILL",
	"CAP_SETGID",
	"CAP_SETUID",
	"CAP_SETPCAP",
	"CAP_LINUX_IMMUTABLE",
	"CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST",
	"CAP_NET_ADMIN",
	"CAP_NET_RAW",
	"CAP_IPC_LOCK",
	"CAP_IPC_OWNER",
	"CAP_SYS_MODULE",
	"CAP_SYS_RAWIO",
	"CAP_SYS_CHROOT",
	"CAP_SYS_PTRACE",
	"CAP_SYS_PACCT",
	"CAP_SYS_ADMIN",
	"CAP_SYS_BOOT",
	"CAP_SYS_NICE",
	"CAP_SYS_RESOURCE",
	"CAP_SYS_TIME",
	"CAP_SYS_TTY_CONFIG",
	"CAP_MKNOD",
	"CAP_LEASE",
	"CAP_AUDIT_WRITE",
	"CAP_AUDIT_CONTROL",
	"CAP_SETFCAP",
	"CAP_MAC_OVERRIDE",
	"CAP_MAC_ADMIN",
	"CAP_SYSLOG",
	"CAP_WAKE_ALARM",
	"CAP_BLOCK_SUSPEND",
	"CAP_AUDIT_READ",
	"CAP_PERFMON",
	"CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
};

const char *caps__name(unsigned int bit)
{
	return bit < sizeof(names) / sizeof(names[0]) ? names[bit] : NULL;
}

size_t caps__list(uint64_t mask, const char **out, char (*unnamed)[8])
{
	size_t n = 0;

	for (unsigned int bit = 0; bit < CAPS_MAX; bit++) {
		if (!(mask & (1ull << bit)))
			continue;
		out[n] = caps__name(bit);
		if (!out[n]) {
			snprintf(unnamed[n], sizeof(unnamed[n]), "CAP_%u", bit);
			out[n] = unnamed[n];
		}
		n++;
	}
	return n;
}

void caps__names(uint64_t mask, char *buf, size_t size)
{
	const char *list[CAPS_MAX];
	char unnamed[CAPS_MAX][8];
	size_t n = caps__list(mask, list, unnamed), off = 0;

	if (!size)
		return;
	snprintf(buf, size, "%s", n ? "" : "none");
	for (size_t i = 0; i < n && off < size; i++) {
		int w = snprintf(buf + off, size - off, "%s%s", i ? "," : "", list[i]);

		if (w < 0)
			break;
		off += (size_t)w;
	}
}
