/* sha256.h - SHA-256 (FIPS 180-4) and base64url without padding (RFC
 * 4648 5), what PKCE's S256 challenge needs (RFC 7636 4.2); on every
 * build, with or without a TLS library. */
#ifndef MOTE_FE_SHA256_H
#define MOTE_FE_SHA256_H

#include <stddef.h>
#include <stdint.h>

/* The digest of n bytes at `data` into out. */
void fe_sha256(const void *data, size_t n, uint8_t out[32]);

/* n bytes as base64url without '=' into out (cap bytes, NUL-terminated).
 * Returns the length, or -1 when it does not fit. */
int fe_b64url(const uint8_t *in, size_t n, char *out, size_t cap);

/* n bytes as standard base64 with padding (HTTP Basic credentials), the
 * same way. */
int fe_b64(const uint8_t *in, size_t n, char *out, size_t cap);

#endif
