/* Printing and parsing the 16-byte address form shared with BPF (IPv4 mapped into
 * ::ffff:0:0/96), and protocol names.
 */
#ifndef EGRET_ADDR_H
#define EGRET_ADDR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ADDR_STRLEN 46 /* INET6_ADDRSTRLEN */

bool addr__is_v4(const uint8_t a[16]);
void addr__format(const uint8_t a[16], char *out, size_t size);
void addr__format_port(const uint8_t a[16], uint16_t port, char *out, size_t size);
int addr__parse(const char *s, uint8_t a[16]);
const char *addr__proto_name(uint8_t proto, char *buf, size_t size);

#endif /* EGRET_ADDR_H */
