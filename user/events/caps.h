/* Capability names (CAP_SYS_ADMIN...) for the exec event's posture and Tamper details. */
#ifndef EGRET_CAPS_H
#define EGRET_CAPS_H

#include <stddef.h>
#include <stdint.h>

#define CAPS_MAX 64

/* "CAP_SYS_ADMIN", or NULL for a bit with no name (past CAP_CHECKPOINT_RESTORE) */
const char *caps__name(unsigned int bit);
/* the names of the bits of mask, lowest first, into out[] (unnamed bits as "CAP_<n>", in
 * storage of at least CAPS_MAX * 8 bytes); how many
 */
size_t caps__list(uint64_t mask, const char **out, char (*unnamed)[8]);
/* the names, comma-separated ("none" for 0), cut at size */
void caps__names(uint64_t mask, char *buf, size_t size);

#endif /* EGRET_CAPS_H */
