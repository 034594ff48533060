/* The 16-byte address form and protocol names. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>

#include "addr.h"

static const uint8_t v4_prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

bool addr__is_v4(const uint8_t a[16])
{
	return memcmp(a, v4_prefix, sizeof(v4_prefix)) == 0;
}

/* IPv4 (and IPv4-mapped) as dotted quad, the rest as RFC 5952 IPv6. */
void addr__format(const uint8_t a[16], char *out, size_t size)
{
	if (addr__is_v4(a))
		inet_ntop(AF_INET, a + 12, out, size);
	else
		inet_ntop(AF_INET6, a, out, size);
}

/* Dotted-quad IPv4 or any IPv6 text form; IPv4 and ::ffff:a.b.c.d give the same bytes. */
int addr__parse(const char *s, uint8_t a[16])
{
	struct in_addr v4;

	if (inet_pton(AF_INET, s, &v4) == 1) {
		memcpy(a, v4_prefix, sizeof(v4_prefix));
		memcpy(a + 12, &v4, 4);
		return 0;
	}
	return inet_pton(AF_INET6, s, a) == 1 ? 0 : -EINVAL;
}

const char *addr__proto_name(uint8_t proto, char *buf, size_t size)
{
	switch (proto) {
	case IPPROTO_TCP:
		return "tcp";
	case IPPROTO_UDP:
		return "udp";
	case IPPROTO_ICMP:
		return "icmp";
	case IPPROTO_ICMPV6:
		return "icmpv6";
	case IPPROTO_SCTP:
		return "sctp";
	default:
		snprintf(buf, size, "%u", proto);
		return buf;
	}
}
