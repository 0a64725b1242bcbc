/*
 * tls_sessions.h - TLS sessions kept for resumption (internal to the
 * mbedTLS backend; the functions carry the mote_ prefix as every symbol
 * of the library does).
 *
 * A session is kept under a key that binds it to the server's name (SNI
 * and the name its certificate was verified for), its port, the ALPN
 * offered, and the trust it was verified with (a digest of the roots'
 * content): a session is never offered to another server, or
 * under other roots than those that verified it (resuming skips the
 * certificate). Kept in memory for the process (MOTE_TLS_SESSION_CACHE
 * servers, the least recently used replaced) and, with
 * MOTE_TLS_RESUME_DISK, in the port's storage as tls/HASH (mode 0600): a
 * file is used only if it is this user's, nobody else may read it, it is
 * whole (a checksum) and fresh; anything else is passed over and
 * replaced by the next full handshake's session.
 */
#ifndef MOTE_TLS_SESSIONS_H
#define MOTE_TLS_SESSIONS_H

#include <stdbool.h>
#include <stdint.h>

#include <mbedtls/ssl.h>

#include "mote/mote_port.h"

struct mote_tls_key {
    unsigned char d[32]; /* SHA-256 of what the session is bound to */
};

/* The key of a session with `host` on `port`, with ALPN `alpn` (NULL:
 * none), verified with the roots whose content has the SHA-256 digest
 * `trust` (and mote's rules for a verified server). Returns 0 or < 0 (no
 * SHA-256, a name over 255 bytes). */
int mote_tls_key_make(struct mote_tls_key *k, const char *host, uint16_t port, const char *alpn,
                      const unsigned char trust[32]);

/* Loads the session kept under `k` (memory, then storage when `resume`
 * is MOTE_TLS_RESUME_DISK) into `out` (initialised by the caller) unless
 * it is older than `max_s` seconds since its full handshake (0: only
 * MOTE_TLS_SESSION_MAX_S) or than its ticket's lifetime. Returns 0, or
 * MOTE_ERR_NOENT (none to offer). Blocks on local storage only. */
int mote_tls_sessions_get(const struct mote_port *port, const struct mote_tls_key *k,
                          unsigned resume, uint32_t max_s, mbedtls_ssl_session *out);

/* Keeps the session of a verified handshake (`resumed`: an abbreviated
 * one, whose session keeps the age of the first). Written to storage
 * (MOTE_TLS_RESUME_DISK) only when it changed: a new session, or a new
 * ticket; written behind where the port can (no wait for the disk), and
 * tls/ swept then. Failures are passed over (the next run handshakes in
 * full). */
void mote_tls_sessions_put(const struct mote_port *port, const struct mote_tls_key *k,
                           unsigned resume, const mbedtls_ssl_session *s, bool resumed);

/* Forgets the session kept under `k` (a handshake that offered it
 * failed), in storage too with MOTE_TLS_RESUME_DISK. */
void mote_tls_sessions_forget(const struct mote_port *port, const struct mote_tls_key *k,
                              unsigned resume);

#endif /* MOTE_TLS_SESSIONS_H */
