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

/* n in decimal at p; returns the end */
static char *put_decimal(char *p, unsigned int n)
{
	char digits[10];
	int i = 0;

	do
		digits[i++] = (char)('0' + n % 10);
	while ((n /= 10));
	while (i)
		*p++ = digits[--i];
	return p;
}

/* the text into out (size bytes), cut short where it does not fit */
static void put_text(const char *text, size_t len, char *out, size_t size)
{
	if (!size)
		return;
	if (len >= size)
		len = size - 1;
	memcpy(out, text, len);
	out[len] = '\0';
}

/* the address as text at p (room for ADDR_STRLEN); returns the end. A dotted quad is written
 * here: glibc's inet_ntop formats one with sprintf, a visible cost on a DNS query's event.
 */
static char *put_addr(const uint8_t a[16], char *p)
{
	if (!addr__is_v4(a)) {
		inet_ntop(AF_INET6, a, p, ADDR_STRLEN);
		return p + strlen(p);
	}
	for (int i = 12; i < 16; i++) {
		p = put_decimal(p, a[i]);
		*p++ = '.';
	}
	return p - 1;
}

/* IPv4 (and IPv4-mapped) as dotted quad, the rest as RFC 5952 IPv6. */
void addr__format(const uint8_t a[16], char *out, size_t size)
{
	char text[ADDR_STRLEN];

	put_text(text, (size_t)(put_addr(a, text) - text), out, size);
}

/* "a.b.c.d:port" or "[v6]:port" */
void addr__format_port(const uint8_t a[16], uint16_t port, char *out, size_t size)
{
	char text[ADDR_STRLEN + 8], *p = text;
	bool v6 = !addr__is_v4(a);

	if (v6)
		*p++ = '[';
	p = put_addr(a, p);
	if (v6)
		*p++ = ']';
	*p++ = ':';
	p = put_decimal(p, port);
	put_text(text, (size_t)(p - text), out, size);
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
