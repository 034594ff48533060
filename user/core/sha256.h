/* SHA-256 (FIPS 180-4), for rule-set hashes and hashes of installed package metadata. */
#ifndef EGRET_SHA256_H
#define EGRET_SHA256_H

#include <stddef.h>
#include <stdint.h>

struct sha256 {
	uint32_t h[8];
	uint64_t len; /* bytes hashed so far */
	uint8_t buf[64];
	size_t used;
};

void sha256__init(struct sha256 *s);
void sha256__update(struct sha256 *s, const void *data, size_t len);
void sha256__final(struct sha256 *s, uint8_t out[32]);
void sha256__hex(const uint8_t digest[32], char out[65]);

#endif /* EGRET_SHA256_H */
