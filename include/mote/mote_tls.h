/*
 * mote_tls.h - TLS for any port: the backend chosen at build time
 * (port/tls_mbedtls.c; port/tls_none.c in a TLS=none build).
 *
 * The backend makes no OS call of its own. Its sessions send and receive
 * through the port's net_send / net_recv, and it reads trust roots
 * through the port's fs_open / fs_read (or from memory), so a port that
 * has the net group (and the file-system group, or roots in memory) gets
 * https by calling mote_tls_fill(); port/posix does it in
 * mote_posix_init().
 *
 * Trust: every session verifies the server's chain, its host name and
 * the validity dates, and the handshake fails before a byte of the
 * request is written. The roots are, first found:
 *   1. the CA file a request names (mote_llm_conf.ca_file), PEM or DER;
 *   2. the roots given to mote_tls_set_roots();
 *   3. the roots built in (make CA_BUNDLE=file.pem);
 *   4. MOTE_TLS_CA_FILE, the system bundle.
 * A bundle is never loaded whole: for each certificate of the server's
 * chain only the roots whose subject matches its issuer are parsed,
 * found by one pass over the bundle (MOTE_TLS_READ_CHUNK bytes at a
 * time), so the system's 140 roots cost no more memory than one.
 *
 * Resumption (the port's tls_connect): a session kept from an earlier
 * verified handshake with the same server - its name, its port, under
 * the same roots - is offered, and a handshake that resumes it skips the
 * certificate (its first handshake verified it). Sessions are kept in
 * memory (MOTE_TLS_SESSION_CACHE servers) and, with MOTE_TLS_RESUME_DISK,
 * in the port's storage as tls/HASH, mode 0600, used only when they are
 * this user's alone, whole and younger than their ticket's lifetime and
 * the caller's cap (docs/LLM.md). ALPN offers what the caller names.
 *
 * One backend serves the whole process (its sessions are a static table
 * of MOTE_TLS_SESSIONS); ports filled with it may be used together.
 */
#ifndef MOTE_TLS_H
#define MOTE_TLS_H

#include <stddef.h>
#include <stdint.h>

#include "mote/mote_port.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The system's bundle of trusted roots, read when nothing else is named
 * (Debian's and most distributions' path). */
#ifndef MOTE_TLS_CA_FILE
#define MOTE_TLS_CA_FILE "/etc/ssl/certs/ca-certificates.crt"
#endif

/* Sets the tls_* members of `port` to the backend's, running over the
 * port's own net_send/net_recv/net_close and fs_open/fs_read/fs_close
 * (found through `port`, which must stay where it is while sessions use
 * it). Call it after the port's other members are set. At most 4 ports
 * (different ctx) at a time; a fifth replaces the oldest. Never fails. */
void mote_tls_fill(struct mote_port *port);

/* Trusted roots in memory, used when a request names no CA file: `data`
 * holds PEM certificates ("-----BEGIN CERTIFICATE-----" blocks, other
 * text ignored) or DER certificates one after another, `len` bytes. The
 * caller keeps the buffer alive and unchanged while sessions may start;
 * NULL (or len 0) goes back to the built-in roots or MOTE_TLS_CA_FILE.
 * Nothing is parsed here: returns 0, MOTE_ERR_INVAL when `data` starts
 * with neither, or MOTE_ERR_NOTSUP in a TLS=none build. */
int mote_tls_set_roots(const void *data, size_t len);

/* Signs a SHA-256 digest with an EC P-256 private key (`key`, len bytes:
 * PEM with its NUL counted in len, or DER; unencrypted) the way ES256
 * wants it (RFC 7518 3.4: r then s, 32 bytes each, big-endian) into sig:
 * a client's assertion (private_key_jwt, RFC 7523). Returns 0,
 * MOTE_ERR_INVAL (not such a key: err says why), MOTE_ERR_TLS, or
 * MOTE_ERR_NOTSUP (a TLS=none build, or a library without ECDSA). */
int mote_tls_sign_es256(const void *key, size_t len, const uint8_t hash[32], uint8_t sig[64],
                        char *err, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_TLS_H */
