/*
 * tls_roots.h - finding trusted roots in a bundle without loading it
 * (internal to the TLS backend; the functions carry the mote_ prefix so
 * its unit tests can reach them).
 *
 * A bundle (PEM blocks, or DER certificates one after another) is read
 * once, from a file through the port's fs members or from memory, with a
 * fixed amount of scratch memory (struct mote_roots_buf); each
 * certificate is decoded on the fly and handed on only when its subject
 * matches one of the names asked for. Nothing of the bundle is kept.
 */
#ifndef MOTE_TLS_ROOTS_H
#define MOTE_TLS_ROOTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_port.h"

/* Where roots come from: the file `path` read through `port`'s fs
 * members, or (path NULL) `mem_len` bytes at `mem`. */
struct mote_roots_src {
    const struct mote_port *port;
    const char *path;
    const unsigned char *mem;
    size_t mem_len;
};

/* A DER Name: its whole TLV (tag and length included), as the issuer or
 * subject of a certificate. */
struct mote_roots_name {
    const unsigned char *p;
    size_t len;
};

struct mote_roots_stats {
    unsigned certs;   /* certificates found in the source */
    unsigned matched; /* of them, handed to the callback */
    unsigned skipped; /* over MOTE_TLS_CERT_MAX, or not a certificate */
};

/* Scratch memory of one scan. */
struct mote_roots_buf {
    unsigned char chunk[MOTE_TLS_READ_CHUNK];
    unsigned char der[MOTE_TLS_CERT_MAX];
};

/* Told each matching certificate (DER, `len` bytes, valid during the
 * call). Return 0 to go on, anything else to end the scan with it. */
typedef int (*mote_roots_fn)(void *arg, const unsigned char *der, size_t len);

/* Reads `src` once and calls `fn` for every certificate whose subject
 * matches one of `names` (mote_roots_name_match), or for every
 * certificate when `nnames` is 0. PEM blocks other than CERTIFICATE and
 * text between blocks are ignored. `st` (may be NULL) is filled. Blocks
 * (the storage it reads is local). Returns 0 when the source was read to
 * its end, fn's first non-zero return, or < 0: MOTE_ERR_NOSYS (a file,
 * but the port has no fs members), the failure of fs_open or fs_read,
 * MOTE_ERR_INVAL (a source that is neither PEM nor DER). */
int mote_roots_scan(const struct mote_roots_src *src, const struct mote_roots_name *names,
                    unsigned nnames, struct mote_roots_buf *b, mote_roots_fn fn, void *arg,
                    struct mote_roots_stats *st);

/* Finds the subject Name of DER certificate `der`. Returns 0, or
 * MOTE_ERR_BADMSG if `der` is not a certificate. */
int mote_roots_subject(const unsigned char *der, size_t len, struct mote_roots_name *out);

/* For an mbedTLS without SHA-1 (the tiny build): a root signed by itself
 * with sha1WithRSAEncryption is renamed sha256WithRSAEncryption in both
 * of its AlgorithmIdentifiers (`der` is changed in place), so mbedTLS can
 * parse it. A root's own signature is never verified (it is trusted as
 * it is), and every signature in a chain is still checked by its own
 * algorithm: SHA-1 there stays refused. Returns how many it renamed (0:
 * not such a certificate). */
unsigned mote_roots_sha1_as_sha256(unsigned char *der, size_t len);

/* True if Names `a` and `b` (TLVs) may be equal as X.509 path building
 * compares them: the same attribute types in the same order, values
 * equal ignoring ASCII case and the string type. This accepts every
 * pair mbedTLS's own comparison accepts (and a few more), so it only
 * picks the candidates; mbedTLS then decides. */
bool mote_roots_name_match(const unsigned char *a, size_t alen, const unsigned char *b,
                           size_t blen);

#endif /* MOTE_TLS_ROOTS_H */
