/*
 * tls_mbedtls.c - the TLS backend on mbedTLS (Debian libmbedtls-dev 2.28,
 * or the minimal build of make tiny), for any port: records go through
 * the port's net_send / net_recv (mbedtls_ssl_set_bio), roots are read
 * through its fs members or taken from memory, and every setting comes
 * from the caller (mote_tls.h). No OS header, no OS call.
 *
 * Verification is always required: the chain up to a trusted root, the
 * host name (SNI too), the validity dates. The host name is matched in
 * the server certificate's subjectAltName only: a certificate without
 * one, which names its host in the Common Name alone, is refused, as
 * browsers refuse it (RFC 6125; mbedTLS alone would match the CN). The handshake completes, or
 * fails with the reason, before a byte of the request (and so the API key)
 * is written. mbedTLS 2.28 does not match IP-address SANs, so the host
 * must be a DNS name ("localhost", not 127.0.0.1, with a test
 * certificate).
 *
 * Roots are never loaded whole (tls_roots.c): one pass over the bundle
 * picks the roots whose subject matches an issuer of the server's chain,
 * and only those are parsed. With an mbedTLS that has
 * MBEDTLS_X509_TRUSTED_CERTIFICATE_CALLBACK (make tiny) they are handed
 * to its verification as it asks (mbedtls_ssl_conf_ca_cb). Debian's build
 * lacks that callback: there the handshake runs with VERIFY_OPTIONAL,
 * and before it reports success the peer's chain is verified again by
 * mbedtls_x509_crt_verify_with_profile against the picked roots, with
 * the host name and the handshake's own key checks; any failure ends the
 * session then, still before a request byte.
 *
 * Resumption (tls_connect): a session kept from an earlier verified
 * handshake with the same server (name, port), the same ALPN and the
 * same roots - a digest of their content, read each time - is offered
 * (tls_sessions.c); a handshake that resumed it skips the certificate,
 * as its first one verified it. Whether it resumed is what mbedTLS's
 * handshake did: it is stepped here, and a handshake that entered the
 * state where the server's certificate is read (a full one, in TLS 1.2
 * and 1.3 alike), or whose chain reached the verification callback, is
 * a full handshake, verified like any other; only one that never did,
 * with a session offered, counts as resumed. Nothing is inferred from
 * secrets (TLS 1.3 leaves the TLS 1.2 master secret zero on both sides).
 * TLS 1.2 sessions are kept after the handshake, TLS 1.3 tickets as they
 * arrive after it (mbedtls_ssl_read reports each). ALPN offers what the
 * caller names ("http/1.1").
 *
 * Receiving: a session reads up to MOTE_TLS_READAHEAD bytes at a time, so
 * a record costs one net_recv, and a short read marks the socket empty:
 * the next read that finds nothing buffered says "would block" without a
 * call, and the caller waits for readiness (one poll, one recv per
 * chunk; docs/BENCHMARKS.md).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <mbedtls/version.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/oid.h>
#include <mbedtls/platform.h>
#include <mbedtls/platform_util.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#if MBEDTLS_VERSION_MAJOR >= 3
#include <psa/crypto.h>
#endif

#include "mote/mote_config.h"
#include "mote/mote_err.h"
#include "mote/mote_port.h"
#include "mote/mote_tls.h"
#include "tls_roots.h"
#include "tls_sessions.h"

/* (the record last read: a fatal alert's description is its second byte) */
#if MBEDTLS_VERSION_MAJOR >= 3
#define HS_STATE(ssl) ((ssl)->MBEDTLS_PRIVATE(state))
#define HS_OVER(ssl) mbedtls_ssl_is_handshake_over(ssl)
#define IN_MSG(ssl) ((ssl)->MBEDTLS_PRIVATE(in_msg))
#define IN_MSGTYPE(ssl) ((ssl)->MBEDTLS_PRIVATE(in_msgtype))
#define IN_MSGLEN(ssl) ((ssl)->MBEDTLS_PRIVATE(in_msglen))
#define ASKED_OWN(ssl) (-1) /* (whether a CertificateRequest came is internal) */
#else
#define HS_STATE(ssl) ((ssl)->state)
#define HS_OVER(ssl) ((ssl)->state == MBEDTLS_SSL_HANDSHAKE_OVER)
#define IN_MSG(ssl) ((ssl)->in_msg)
#define IN_MSGTYPE(ssl) ((ssl)->in_msgtype)
#define IN_MSGLEN(ssl) ((ssl)->in_msglen)
#define ASKED_OWN(ssl) ((ssl)->client_auth != 0) /* a CertificateRequest came */
#endif

#if defined(MBEDTLS_MEMORY_BUFFER_ALLOC_C)
/* Every mbedTLS allocation comes from this arena: TLS memory is bounded. */
#include <mbedtls/memory_buffer_alloc.h>
static unsigned char tls_arena[MOTE_TLS_ARENA];

#if defined(MBEDTLS_PLATFORM_STD_CALLOC)
/* port/tiny/mbedtls_config.h's defaults, replaced by the arena's own
 * before anything allocates: nothing of the C library's heap is linked. */
void *mote_tls_calloc_none(size_t n, size_t size)
{
    (void)n, (void)size;
    return NULL;
}

void mote_tls_free_none(void *p)
{
    (void)p;
}
#endif
#endif

#if defined(MBEDTLS_X509_TRUSTED_CERTIFICATE_CALLBACK)
#define USE_CA_CB 1
#else
#define USE_CA_CB 0
#if !defined(MBEDTLS_SSL_KEEP_PEER_CERTIFICATE)
#error "mbedTLS needs MBEDTLS_X509_TRUSTED_CERTIFICATE_CALLBACK or MBEDTLS_SSL_KEEP_PEER_CERTIFICATE"
#endif
#endif

#if defined(MOTE_TLS_BUILTIN_ROOTS)
/* make CA_BUNDLE=file: the bundle's DER certificates (build/ca_roots.S). */
extern const unsigned char mote_tls_builtin_roots[];
extern const unsigned char mote_tls_builtin_roots_end[];
#endif

#define PORTS 4

#if MBEDTLS_VERSION_MAJOR >= 3
#define HAS_SAN(crt) mbedtls_x509_crt_has_ext_type((crt), MBEDTLS_X509_EXT_SUBJECT_ALT_NAME)
#else
#define HAS_SAN(crt) (((crt)->ext_types & MBEDTLS_X509_EXT_SUBJECT_ALT_NAME) != 0)
#endif

struct tls_session {
    bool used;
    bool drained;   /* the last receive emptied the socket */
    bool scanned;   /* the roots for this chain were looked up */
    int fd;
    const struct mote_port *port;
    struct mote_roots_src src; /* where the roots come from */
    size_t ra_off, ra_len;
    unsigned nchild;
    const mbedtls_x509_crt *child[MOTE_TLS_CHAIN_MAX]; /* whose issuers were looked up */
    mbedtls_x509_crt found;    /* the roots found for them */
    int roots_err;             /* a failure to read the roots, for the message */
    struct mote_roots_stats stats;
    bool keyed;                /* sessions are kept under `key` */
    bool offered;              /* a kept session was offered */
    bool cert_state;           /* the handshake entered the state that reads the
                                * server's certificate: a full handshake */
    bool chain_seen;           /* the server's chain reached check_cert */
    bool resumed;              /* the handshake resumed the offered session */
    bool ticket_kept;          /* a TLS 1.3 ticket of this connection went to storage */
    bool no_san;               /* the server's certificate has no subjectAltName */
    unsigned char resume;      /* MOTE_TLS_RESUME_* */
    bool own;                  /* own_crt and own_key hold a client certificate */
    bool own_state;            /* the handshake reached the step that sends it */
    struct mote_tls_key key;
    const char *alpn[2];
    char host[256];
    mbedtls_ssl_context ssl;
    mbedtls_ssl_config conf;
#if defined(MBEDTLS_FS_IO) && defined(MBEDTLS_PK_PARSE_C)
    mbedtls_x509_crt own_crt;  /* the client certificate the server may ask for */
    mbedtls_pk_context own_key;
#endif
    unsigned char ra[MOTE_TLS_READAHEAD];
};

static struct tls_session sessions[MOTE_TLS_SESSIONS];
static struct mote_port *ports[PORTS];
static unsigned port_next;
static const unsigned char *roots_mem;
static size_t roots_len;
static struct mote_roots_buf roots_buf;
static mbedtls_entropy_context entropy;
static mbedtls_ctr_drbg_context drbg;
static bool rng_ready;

/* ---- the port below ------------------------------------------------- */

static int bio_send(void *arg, const unsigned char *buf, size_t len)
{
    struct tls_session *s = arg;
    int n = s->port->net_send(s->port->ctx, s->fd, buf, len);

    if (n >= 0)
        return n;
    if (n == MOTE_ERR_AGAIN)
        return MBEDTLS_ERR_SSL_WANT_WRITE;
    return n == MOTE_ERR_CONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_SEND_FAILED;
}

static int bio_recv(void *arg, unsigned char *buf, size_t len)
{
    struct tls_session *s = arg;
    int n;

    if (s->ra_off < s->ra_len) {
        size_t take = s->ra_len - s->ra_off < len ? s->ra_len - s->ra_off : len;

        memcpy(buf, s->ra + s->ra_off, take);
        s->ra_off += take;
        return (int)take;
    }
    if (s->drained)
        return MBEDTLS_ERR_SSL_WANT_READ; /* nothing came since: wait for readiness */
    if (len >= sizeof(s->ra)) {
        n = s->port->net_recv(s->port->ctx, s->fd, buf, len);
        if (n > 0 && (size_t)n < len)
            s->drained = true;
    } else {
        n = s->port->net_recv(s->port->ctx, s->fd, s->ra, sizeof(s->ra));
        if (n > 0) {
            s->drained = (size_t)n < sizeof(s->ra);
            s->ra_len = (size_t)n;
            s->ra_off = (size_t)n < len ? (size_t)n : len;
            memcpy(buf, s->ra, s->ra_off);
            return (int)s->ra_off;
        }
    }
    if (n >= 0)
        return n;
    if (n == MOTE_ERR_AGAIN)
        return MBEDTLS_ERR_SSL_WANT_READ;
    return n == MOTE_ERR_CONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
}

/* ---- messages -------------------------------------------------------- */

static void describe(int rc, const char *what, char *err, size_t cap)
{
#if defined(MBEDTLS_ERROR_C)
    char buf[128];

    mbedtls_strerror(rc, buf, sizeof(buf));
    snprintf(err, cap, "%s: %s (-0x%04x)", what, buf, (unsigned)-rc);
#else
    /* The minimal build has no error strings: the few that matter. */
    static const struct {
        int code;
        const char *text;
    } known[] = {
        {MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE, "the server sent a fatal alert"},
        {MBEDTLS_ERR_SSL_NO_USABLE_CIPHERSUITE, "no cipher suite in common with the server"},
        {MBEDTLS_ERR_SSL_BAD_HS_SERVER_HELLO, "a bad ServerHello (no cipher suite or version "
                                              "in common?)"},
        {MBEDTLS_ERR_SSL_BAD_HS_PROTOCOL_VERSION, "the server does not speak TLS 1.2"},
        {MBEDTLS_ERR_SSL_INVALID_RECORD, "an invalid TLS record (not a TLS server?)"},
        {MBEDTLS_ERR_SSL_ALLOC_FAILED, "out of TLS memory (MOTE_TLS_ARENA)"},
        {MBEDTLS_ERR_X509_ALLOC_FAILED, "out of TLS memory (MOTE_TLS_ARENA)"},
        {MBEDTLS_ERR_MPI_ALLOC_FAILED, "out of TLS memory (MOTE_TLS_ARENA)"},
        {MBEDTLS_ERR_CTR_DRBG_ENTROPY_SOURCE_FAILED, "no entropy source (is /dev/urandom there?)"},
        {MBEDTLS_ERR_NET_SEND_FAILED, "sending failed"},
        {MBEDTLS_ERR_NET_RECV_FAILED, "receiving failed"},
    };
    const char *text = "mbedTLS error";
    size_t i;

    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (known[i].code == rc)
            text = known[i].text;
    }
    snprintf(err, cap, "%s: %s (-0x%04x)", what, text, (unsigned)-rc);
#endif
}

/* The verification flags as one line. */
static void flags_msg(uint32_t flags, const struct tls_session *s, char *err, size_t cap)
{
    /* Our own words (the same in every build: the minimal mbedTLS has no
     * info strings, MBEDTLS_X509_REMOVE_INFO). */
    static const struct {
        uint32_t flag;
        const char *text;
    } reasons[] = {
        {MBEDTLS_X509_BADCERT_NOT_TRUSTED, "the chain is not correctly signed by a trusted root"},
        {MBEDTLS_X509_BADCERT_CN_MISMATCH, "the host name does not match the certificate"},
        {MBEDTLS_X509_BADCERT_EXPIRED, "the certificate has expired"},
        {MBEDTLS_X509_BADCERT_FUTURE, "the certificate is not valid yet"},
        {MBEDTLS_X509_BADCERT_REVOKED, "the certificate was revoked"},
        {MBEDTLS_X509_BADCERT_MISSING, "the server sent no certificate"},
        {MBEDTLS_X509_BADCERT_KEY_USAGE, "its key usage does not allow this"},
        {MBEDTLS_X509_BADCERT_EXT_KEY_USAGE, "its extended key usage does not allow a server"},
        {MBEDTLS_X509_BADCERT_NS_CERT_TYPE, "its Netscape type does not allow a server"},
        {MBEDTLS_X509_BADCERT_BAD_MD, "signed with a hash too weak (SHA-1, MD5)"},
        {MBEDTLS_X509_BADCERT_BAD_PK, "signed with an unacceptable algorithm"},
        {MBEDTLS_X509_BADCERT_BAD_KEY, "its key is unacceptable (curve or size)"},
        {MBEDTLS_X509_BADCERT_OTHER, "refused for another reason"},
    };
    char info[320];
    size_t i, n = 0;

    info[0] = '\0';
    for (i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
        if ((flags & reasons[i].flag) && n < sizeof(info)) {
            const char *text = reasons[i].text;
            int k;

            if (reasons[i].flag == MBEDTLS_X509_BADCERT_OTHER && s->no_san)
                text = "the server's certificate has no subjectAltName (a host named only in "
                       "its Common Name is refused, as browsers refuse it)";
            k = snprintf(info + n, sizeof(info) - n, "%s%s", n > 0 ? "; " : "", text);

            n += k > 0 ? (size_t)k : 0;
        }
    }
    if (n == 0)
        snprintf(info, sizeof(info), "flags 0x%08x", (unsigned)flags);
    if ((flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED) && s->scanned && s->stats.certs == 0)
        snprintf(err, cap, "certificate verification failed: %s (%s holds no certificate)",
                 info, s->src.path != NULL ? s->src.path : "the roots in memory");
    else
        snprintf(err, cap, "certificate verification failed: %s", info);
}

/* Each certificate of the chain as it is verified (the handshake's, and
 * verify_after's): the server's own (depth 0) must name its host in a
 * subjectAltName; mbedTLS would fall back to the Common Name. */
static int check_cert(void *arg, mbedtls_x509_crt *crt, int depth, uint32_t *flags)
{
    struct tls_session *s = arg;

    s->chain_seen = true;
    if (depth == 0 && !HAS_SAN(crt)) {
        s->no_san = true;
        *flags |= MBEDTLS_X509_BADCERT_OTHER;
    }
    return 0;
}

/* ---- roots ------------------------------------------------------------- */

static int collect(void *arg, const unsigned char *der, size_t len)
{
    int rc = mbedtls_x509_crt_parse_der(arg, der, len);

#if !defined(MBEDTLS_SHA1_C)
    if (rc == MBEDTLS_ERR_X509_UNKNOWN_SIG_ALG + MBEDTLS_ERR_OID_NOT_FOUND &&
        len <= MOTE_TLS_CERT_MAX) {
        /* A root signed by itself with SHA-1 (24 of Debian's 150): its
         * own signature is never checked, so it is parsed under another
         * name (tls_roots.h). SHA-1 in a chain stays refused. */
        static unsigned char copy[MOTE_TLS_CERT_MAX];

        memcpy(copy, der, len);
        if (mote_roots_sha1_as_sha256(copy, len) == 2)
            rc = mbedtls_x509_crt_parse_der(arg, copy, len);
    }
#endif

    /* A root mbedTLS cannot parse is passed over, as a bundle loaded
     * whole would; running out of memory is not. */
    return rc == MBEDTLS_ERR_X509_ALLOC_FAILED ? rc : 0;
}

/* Parses into `into` the roots of the session's source whose subject
 * matches one of `names`. */
static int find_roots(struct tls_session *s, const struct mote_roots_name *names, unsigned n,
                      mbedtls_x509_crt *into)
{
    int rc = mote_roots_scan(&s->src, names, n, &roots_buf, collect, into, &s->stats);

    s->scanned = true;
    if (rc < 0 && rc > -0x1000) { /* a mote_err: the bundle could not be read */
        s->roots_err = rc;
        return rc;
    }
    return rc == 0 ? 0 : MBEDTLS_ERR_X509_ALLOC_FAILED;
}

#if USE_CA_CB
/* mbedTLS asks for the trusted roots that may have signed `child`: the
 * first call (the server's first certificate) looks up the issuers of the
 * whole chain in one pass; later calls take copies of what it found. */
static int ca_cb(void *arg, mbedtls_x509_crt const *child, mbedtls_x509_crt **candidates)
{
    struct tls_session *s = arg;
    mbedtls_x509_crt *out, *f;
    unsigned i;
    int rc = 0;

    *candidates = NULL;
    if (!s->scanned) {
        struct mote_roots_name names[MOTE_TLS_CHAIN_MAX];
        const mbedtls_x509_crt *c;

        s->nchild = 0;
        for (c = child; c != NULL && s->nchild < MOTE_TLS_CHAIN_MAX; c = c->next) {
            names[s->nchild].p = c->issuer_raw.p;
            names[s->nchild].len = c->issuer_raw.len;
            s->child[s->nchild++] = c;
        }
        if ((rc = find_roots(s, names, s->nchild, &s->found)) < 0)
            return rc;
    }
    out = mbedtls_calloc(1, sizeof(*out));
    if (out == NULL)
        return MBEDTLS_ERR_X509_ALLOC_FAILED;
    mbedtls_x509_crt_init(out);
    for (i = 0; i < s->nchild && s->child[i] != child; i++) {
    }
    if (i < s->nchild) {
        for (f = &s->found; f != NULL && f->version != 0 && rc == 0; f = f->next) {
            if (mote_roots_name_match(child->issuer_raw.p, child->issuer_raw.len,
                                      f->subject_raw.p, f->subject_raw.len))
                rc = collect(out, f->raw.p, f->raw.len);
        }
    } else {
        /* a chain longer than MOTE_TLS_CHAIN_MAX: a pass of its own */
        struct mote_roots_name one = {child->issuer_raw.p, child->issuer_raw.len};

        rc = find_roots(s, &one, 1, out);
    }
    if (rc != 0 || out->version == 0) {
        mbedtls_x509_crt_free(out);
        mbedtls_free(out);
        return rc;
    }
    *candidates = out;
    return 0;
}
#else
/* The handshake ran with VERIFY_OPTIONAL: verify the server's chain now,
 * as the handshake would have, against the roots picked for it. Returns
 * 0 and the flags (0: trusted). */
static int verify_after(struct tls_session *s, uint32_t *flags)
{
    const mbedtls_x509_crt *peer = mbedtls_ssl_get_peer_cert(&s->ssl), *c;
    struct mote_roots_name names[MOTE_TLS_CHAIN_MAX];
    mbedtls_x509_crt trust;
    uint32_t hs = mbedtls_ssl_get_verify_result(&s->ssl);
    int rc = 0;

    if (peer == NULL) {
        *flags = MBEDTLS_X509_BADCERT_MISSING;
        return 0;
    }
    mbedtls_x509_crt_init(&trust);
    for (c = peer; c != NULL && rc == 0;) {
        unsigned n = 0;

        for (; c != NULL && n < MOTE_TLS_CHAIN_MAX; c = c->next) {
            names[n].p = c->issuer_raw.p;
            names[n++].len = c->issuer_raw.len;
        }
        rc = find_roots(s, names, n, &trust);
    }
    if (rc == 0) {
        *flags = 0;
        rc = mbedtls_x509_crt_verify_with_profile((mbedtls_x509_crt *)peer,
                                                  trust.version != 0 ? &trust : NULL, NULL,
                                                  &mbedtls_x509_crt_profile_default, s->host,
                                                  flags, check_cert, s);
        if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED)
            rc = 0;
        /* the handshake's own checks of the server's key and its usage */
        *flags |= hs & (MBEDTLS_X509_BADCERT_BAD_KEY | MBEDTLS_X509_BADCERT_KEY_USAGE |
                        MBEDTLS_X509_BADCERT_EXT_KEY_USAGE | MBEDTLS_X509_BADCERT_NS_CERT_TYPE);
    }
    mbedtls_x509_crt_free(&trust);
    return rc;
}
#endif

/* ---- the port's tls_* members ----------------------------------------- */

static struct mote_port *port_of(void *ctx)
{
    unsigned i;

    for (i = 0; i < PORTS; i++) {
        if (ports[i] != NULL && ports[i]->ctx == ctx)
            return ports[i];
    }
    return NULL;
}

/* The curves offered, fastest first (the server picks from the client's
 * order as a rule): X25519 where mbedTLS has it (Debian's build; the tiny
 * one leaves it out), then P-256. They also bound the curve of the
 * server's key. */
#if MBEDTLS_VERSION_MAJOR < 3
static const mbedtls_ecp_group_id curves[] = {
#if defined(MBEDTLS_ECP_DP_CURVE25519_ENABLED)
    MBEDTLS_ECP_DP_CURVE25519,
#endif
#if defined(MBEDTLS_ECP_DP_SECP256R1_ENABLED)
    MBEDTLS_ECP_DP_SECP256R1,
#endif
#if defined(MBEDTLS_ECP_DP_SECP384R1_ENABLED)
    MBEDTLS_ECP_DP_SECP384R1,
#endif
#if defined(MBEDTLS_ECP_DP_SECP521R1_ENABLED)
    MBEDTLS_ECP_DP_SECP521R1,
#endif
    MBEDTLS_ECP_DP_NONE,
};
#endif

/* A session for `host` on `fd` (tls_open and tls_connect): the roots
 * chosen, the configuration set, nothing sent. Returns its handle. */
static int open_session(void *ctx, int fd, const char *host, const char *ca_file,
                        const char *alpn, char *err, size_t cap)
{
    struct mote_port *port = port_of(ctx);
    struct tls_session *s = NULL;
    int i, rc;

    if (port == NULL || !MOTE_PORT_HAS(port, net_send) || !MOTE_PORT_HAS(port, net_recv)) {
        snprintf(err, cap, "TLS: the port was not given to mote_tls_fill, or has no net_send "
                           "and net_recv");
        return MOTE_ERR_NOSYS;
    }
    if (strlen(host) >= sizeof(s->host)) {
        snprintf(err, cap, "TLS: the host name is too long");
        return MOTE_ERR_NAMETOOLONG;
    }
    for (i = 0; i < MOTE_TLS_SESSIONS; i++) {
        if (!sessions[i].used) {
            s = &sessions[i];
            break;
        }
    }
    if (s == NULL) {
        snprintf(err, cap, "too many TLS sessions at once (MOTE_TLS_SESSIONS)");
        return MOTE_ERR_FULL;
    }
    memset(s, 0, offsetof(struct tls_session, ssl));
    s->port = port;
    s->fd = fd;
    memcpy(s->host, host, strlen(host) + 1);
    s->src.port = port;
    if (ca_file != NULL && ca_file[0] != '\0') {
        s->src.path = ca_file;
    } else if (roots_mem != NULL) {
        s->src.mem = roots_mem;
        s->src.mem_len = roots_len;
#if defined(MOTE_TLS_BUILTIN_ROOTS)
    } else if (&mote_tls_builtin_roots_end[0] > &mote_tls_builtin_roots[0]) {
        s->src.mem = mote_tls_builtin_roots;
        s->src.mem_len = (size_t)(&mote_tls_builtin_roots_end[0] - &mote_tls_builtin_roots[0]);
#endif
    } else {
        s->src.path = MOTE_TLS_CA_FILE;
    }
    if (s->src.path != NULL) {
        /* Fail now, with the reason, if the file cannot be read at all. */
        struct mote_fs_stat st;

        if (!MOTE_PORT_HAS(port, fs_stat) || !MOTE_PORT_HAS(port, fs_open) ||
            !MOTE_PORT_HAS(port, fs_read) || !MOTE_PORT_HAS(port, fs_close)) {
            snprintf(err, cap, "cannot read the CA file %s: the port has no file system "
                               "(give the roots with mote_tls_set_roots)", s->src.path);
            return MOTE_ERR_NOSYS;
        }
        rc = port->fs_stat(port->ctx, s->src.path, &st);
        if (rc == 0 && st.type != MOTE_FS_FILE)
            rc = st.type == MOTE_FS_DIR ? MOTE_ERR_ISDIR : MOTE_ERR_INVAL;
        if (rc < 0) {
            snprintf(err, cap, "cannot read the CA file %s: %s", s->src.path, mote_strerror(rc));
            return MOTE_ERR_TLS;
        }
    }
    if (!rng_ready) {
#if defined(MBEDTLS_MEMORY_BUFFER_ALLOC_C)
        mbedtls_memory_buffer_alloc_init(tls_arena, sizeof(tls_arena));
#endif
#if MBEDTLS_VERSION_MAJOR >= 3
        if (psa_crypto_init() != PSA_SUCCESS) {
            snprintf(err, cap, "PSA crypto init failed");
            return MOTE_ERR_TLS;
        }
#endif
        mbedtls_entropy_init(&entropy);
        mbedtls_ctr_drbg_init(&drbg);
        rc = mbedtls_ctr_drbg_seed(&drbg, mbedtls_entropy_func, &entropy,
                                   (const unsigned char *)"mote", 4);
        if (rc != 0) {
            describe(rc, "random generator", err, cap);
            return MOTE_ERR_TLS;
        }
        rng_ready = true;
    }
    mbedtls_ssl_init(&s->ssl);
    mbedtls_ssl_config_init(&s->conf);
    mbedtls_x509_crt_init(&s->found);
    rc = mbedtls_ssl_config_defaults(&s->conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                     MBEDTLS_SSL_PRESET_DEFAULT);
    if (rc == 0) {
#if USE_CA_CB
        mbedtls_ssl_conf_authmode(&s->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
        mbedtls_ssl_conf_ca_cb(&s->conf, ca_cb, s);
#else
        /* verified by verify_after() before the handshake reports success */
        mbedtls_ssl_conf_authmode(&s->conf, MBEDTLS_SSL_VERIFY_OPTIONAL);
#endif
#if MBEDTLS_VERSION_MAJOR < 3
        mbedtls_ssl_conf_curves(&s->conf, curves);
#endif
#if defined(MBEDTLS_SSL_ALPN)
        s->alpn[0] = alpn;
        s->alpn[1] = NULL;
        if (alpn != NULL)
            rc = mbedtls_ssl_conf_alpn_protocols(&s->conf, s->alpn);
#else
        (void)alpn;
#endif
        mbedtls_ssl_conf_rng(&s->conf, mbedtls_ctr_drbg_random, &drbg);
        mbedtls_ssl_conf_verify(&s->conf, check_cert, s);
        if (rc == 0)
            rc = mbedtls_ssl_setup(&s->ssl, &s->conf);
    }
    if (rc == 0)
        rc = mbedtls_ssl_set_hostname(&s->ssl, host); /* SNI and the name check */
    if (rc != 0) {
        describe(rc, "TLS setup", err, cap);
        mbedtls_ssl_free(&s->ssl);
        mbedtls_ssl_config_free(&s->conf);
        return MOTE_ERR_TLS;
    }
    mbedtls_ssl_set_bio(&s->ssl, s, bio_send, bio_recv, NULL);
    s->used = true;
    return i;
}

static int tls_open(void *ctx, int fd, const char *host, const char *ca_file, char *err,
                    size_t cap)
{
    return open_session(ctx, fd, host, ca_file, NULL, err, cap);
}

/* SHA-256 over what `src` yields, piece by piece, into `out`. */
static int digest_of(const struct mote_roots_src *src, unsigned char out[32])
{
    const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    mbedtls_md_context_t c;
    int rc, h = -1;

    if (md == NULL)
        return MOTE_ERR_NOSYS;
    mbedtls_md_init(&c);
    rc = mbedtls_md_setup(&c, md, 0) == 0 && mbedtls_md_starts(&c) == 0 ? 0 : MOTE_ERR_NOSYS;
    if (rc == 0 && src->path == NULL) {
        rc = mbedtls_md_update(&c, src->mem, src->mem_len) == 0 ? 0 : MOTE_ERR_NOSYS;
    } else if (rc == 0) {
        const struct mote_port *p = src->port;
        uint64_t off = 0;
        int n;

        h = p->fs_open(p->ctx, src->path);
        rc = h < 0 ? h : 0;
        while (rc == 0 && (n = p->fs_read(p->ctx, h, off, roots_buf.chunk,
                                          sizeof(roots_buf.chunk))) != 0) {
            if (n < 0)
                rc = n;
            else if (mbedtls_md_update(&c, roots_buf.chunk, (size_t)n) != 0)
                rc = MOTE_ERR_NOSYS;
            off += n > 0 ? (uint64_t)n : 0;
        }
        if (h >= 0)
            p->fs_close(p->ctx, h);
    }
    if (rc == 0 && mbedtls_md_finish(&c, out) != 0)
        rc = MOTE_ERR_NOSYS;
    mbedtls_md_free(&c);
    return rc;
}

/* What the session's roots are: a digest of their content. A CA file is
 * read and hashed at each new connection (other roots of the same size
 * at the same path are other roots); roots in memory once per buffer
 * (mote_tls_set_roots: the buffer stays as it was given). */
static int trust_digest(struct tls_session *s, unsigned char out[32])
{
    static const unsigned char *last;
    static size_t last_n;
    static unsigned char last_d[32];
    int rc;

    if (s->src.path != NULL)
        return digest_of(&s->src, out);
    if (s->src.mem != last || s->src.mem_len != last_n || last == NULL) {
        if ((rc = digest_of(&s->src, last_d)) < 0)
            return rc;
        last = s->src.mem;
        last_n = s->src.mem_len;
    }
    memcpy(out, last_d, 32);
    return 0;
}

static void tls_close(void *ctx, int h);

/* The client certificate and key of `peer` for session `s` (mutual TLS):
 * read now, so a bad file is said before anything is sent. */
static int own_cert(struct tls_session *s, const struct mote_tls_peer *peer, char *err,
                    size_t cap)
{
#if defined(MBEDTLS_FS_IO) && defined(MBEDTLS_PK_PARSE_C)
    int rc;

    mbedtls_x509_crt_init(&s->own_crt);
    mbedtls_pk_init(&s->own_key);
    s->own = true;
    if (peer->key_file == NULL) {
        snprintf(err, cap, "a client certificate needs its key");
        return MOTE_ERR_INVAL;
    }
    rc = mbedtls_x509_crt_parse_file(&s->own_crt, peer->cert_file);
    if (rc != 0) {
        char why[120];

        describe(rc, "", why, sizeof(why));
        snprintf(err, cap, "cannot read the client certificate %s%s", peer->cert_file, why);
        return MOTE_ERR_TLS;
    }
#if MBEDTLS_VERSION_MAJOR >= 3
    rc = mbedtls_pk_parse_keyfile(&s->own_key, peer->key_file, NULL, mbedtls_ctr_drbg_random,
                                  &drbg);
#else
    rc = mbedtls_pk_parse_keyfile(&s->own_key, peer->key_file, NULL);
#endif
    if (rc != 0) {
        char why[120];

        describe(rc, "", why, sizeof(why));
        snprintf(err, cap, "cannot read the client key %s (PEM, unencrypted)%s",
                 peer->key_file, why);
        return MOTE_ERR_TLS;
    }
    rc = mbedtls_ssl_conf_own_cert(&s->conf, &s->own_crt, &s->own_key);
    if (rc != 0) {
        describe(rc, "the client certificate", err, cap);
        return MOTE_ERR_TLS;
    }
    return 0;
#else
    (void)s, (void)peer;
    snprintf(err, cap, "this TLS build cannot read a client certificate (MBEDTLS_FS_IO)");
    return MOTE_ERR_NOTSUP;
#endif
}

static int tls_connect(void *ctx, int fd, const struct mote_tls_peer *peer, char *err,
                       size_t cap)
{
    int h = open_session(ctx, fd, peer->host, peer->ca_file, peer->alpn, err, cap), rc;
    struct tls_session *s;
    mbedtls_ssl_session kept;
    unsigned char trust[32];

    if (h < 0)
        return h;
    s = &sessions[h];
    if (peer->cert_file != NULL && (rc = own_cert(s, peer, err, cap)) < 0) {
        tls_close(ctx, h);
        return rc;
    }
    s->resume = peer->resume;
    if (peer->resume == MOTE_TLS_RESUME_OFF) {
#if defined(MBEDTLS_SSL_SESSION_TICKETS)
        mbedtls_ssl_conf_session_tickets(&s->conf, MBEDTLS_SSL_SESSION_TICKETS_DISABLED);
#endif
        return h;
    }
#if defined(MBEDTLS_SSL_SESSION_TICKETS) && defined(MBEDTLS_SSL_PROTO_TLS1_3)
    /* TLS 1.3 tickets come after the handshake: mbedtls_ssl_read says so */
    mbedtls_ssl_conf_tls13_enable_signal_new_session_tickets(
        &s->conf, MBEDTLS_SSL_TLS1_3_SIGNAL_NEW_SESSION_TICKETS_ENABLED);
#endif
    /* (resumption is an optimisation: a full handshake when this fails) */
    if (trust_digest(s, trust) < 0 ||
        mote_tls_key_make(&s->key, peer->host, peer->port, peer->alpn, trust) < 0)
        return h;
    s->keyed = true;
    mbedtls_ssl_session_init(&kept);
    if (mote_tls_sessions_get(s->port, &s->key, peer->resume, peer->session_max_s, &kept) == 0 &&
        mbedtls_ssl_set_session(&s->ssl, &kept) == 0)
        s->offered = true;
    mbedtls_ssl_session_free(&kept); /* (zeroised by mbedTLS) */
    return h;
}

static struct tls_session *get(int h)
{
    if (h < 0 || h >= MOTE_TLS_SESSIONS || !sessions[h].used)
        return NULL;
    return &sessions[h];
}

static int want_of(struct tls_session *s, int rc, unsigned *want)
{
    if (rc == MBEDTLS_ERR_SSL_WANT_READ) {
        s->drained = false; /* the caller waits for readiness now */
        *want = MOTE_POLL_IN;
        return MOTE_ERR_AGAIN;
    }
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) {
        *want = MOTE_POLL_OUT;
        return MOTE_ERR_AGAIN;
    }
    return 0;
}

/* Keeps the connection's session for resumption: TLS 1.2's after the
 * handshake, each TLS 1.3 ticket as it arrives (`ticket`); to storage
 * once per connection (a server sends TLS 1.3 tickets in pairs). */
static void keep_session(struct tls_session *s, bool ticket)
{
    unsigned resume = s->resume;

    if (!s->keyed)
        return;
    if (ticket && s->ticket_kept && resume == MOTE_TLS_RESUME_DISK)
        resume = MOTE_TLS_RESUME_MEMORY;
#if MBEDTLS_VERSION_MAJOR >= 3
    {
        mbedtls_ssl_session now;

        mbedtls_ssl_session_init(&now);
        if (mbedtls_ssl_get_session(&s->ssl, &now) == 0)
            mote_tls_sessions_put(s->port, &s->key, resume, &now, s->resumed);
        mbedtls_ssl_session_free(&now);
    }
#else
    mote_tls_sessions_put(s->port, &s->key, resume, mbedtls_ssl_get_session_pointer(&s->ssl),
                          s->resumed);
#endif
    if (ticket)
        s->ticket_kept = true;
}

/* Runs the handshake's steps as mbedtls_ssl_handshake would, noting
 * whether it entered the state that reads the server's certificate. */
/* A fatal alert read once the handshake sent (or would have sent) the
 * client certificate: when its description is about a certificate, the
 * server refused ours, or wanted one (RFC 5246 7.2, RFC 8446 6.2). Says
 * so in err and answers true; false for another alert. */
static bool refused_own(struct tls_session *s, int code, char *err, size_t cap)
{
    static const struct {
        unsigned char code;
        const char *text;
    } alerts[] = {
        {40, "handshake failure"},
        {42, "bad certificate"},
        {43, "unsupported certificate"},
        {44, "certificate revoked"},
        {45, "certificate expired"},
        {46, "certificate unknown"},
        {48, "unknown CA: the server does not trust its issuer"},
        {49, "access denied"},
        {116, "certificate required"},
    };
    int asked = ASKED_OWN(&s->ssl); /* 1, 0, or -1: not known */
    size_t i;

    for (i = 0; i < sizeof(alerts) / sizeof(alerts[0]); i++) {
        if (alerts[i].code != code)
            continue;
        if (s->own)
            snprintf(err, cap, "the server refused the client certificate (alert: %s)",
                     alerts[i].text);
        else if (code == 116 || asked == 1) /* (TLS 1.2 has no alert for "none was
                                             * given": a server that asked for one
                                             * ends with one of these) */
            snprintf(err, cap,
                     "the server requires a client certificate, and none was given "
                     "(alert: %s)",
                     alerts[i].text);
        else if (asked == -1)
            snprintf(err, cap,
                     "the server refused the handshake at the client certificate (alert: "
                     "%s): it may require a client certificate, and none was given",
                     alerts[i].text);
        else
            return false; /* it asked for none: another reason */
        return true;
    }
    return false;
}

/* The description of the fatal alert that ended the handshake, or -1:
 * the record mbedTLS read, or, when sending failed (a server that refuses
 * the client's certificate alerts and closes while the client still sends
 * its flight, whose next write then fails), the alert left unread: the
 * plaintext records still in the read-ahead and the socket. */
static int alert_of(struct tls_session *s, int rc)
{
    unsigned char b[64];
    size_t n = 0, off = 0;
    int got;

    if (rc == MBEDTLS_ERR_SSL_FATAL_ALERT_MESSAGE)
        return IN_MSGTYPE(&s->ssl) == MBEDTLS_SSL_MSG_ALERT && IN_MSGLEN(&s->ssl) >= 2 &&
                       IN_MSG(&s->ssl) != NULL
                   ? IN_MSG(&s->ssl)[1]
                   : -1;
    if (rc != MBEDTLS_ERR_NET_SEND_FAILED && rc != MBEDTLS_ERR_NET_CONN_RESET)
        return -1;
    while (n < sizeof(b) && s->ra_off < s->ra_len)
        b[n++] = s->ra[s->ra_off++];
    if (n < sizeof(b) && (got = s->port->net_recv(s->port->ctx, s->fd, b + n, sizeof(b) - n)) > 0)
        n += (size_t)got;
    /* records: type, version (2), length (2), then the fragment */
    while (off + 5 <= n) {
        size_t len = ((size_t)b[off + 3] << 8) | b[off + 4];

        if (b[off] == MBEDTLS_SSL_MSG_ALERT && len == 2 && off + 7 <= n &&
            b[off + 5] == MBEDTLS_SSL_ALERT_LEVEL_FATAL)
            return b[off + 6];
        off += 5 + len;
    }
    return -1;
}

static int handshake_steps(struct tls_session *s)
{
    int rc = 0;

    while (!HS_OVER(&s->ssl)) {
        if (HS_STATE(&s->ssl) == MBEDTLS_SSL_SERVER_CERTIFICATE)
            s->cert_state = true;
        if (HS_STATE(&s->ssl) == MBEDTLS_SSL_CLIENT_CERTIFICATE)
            s->own_state = true;
        if ((rc = mbedtls_ssl_handshake_step(&s->ssl)) != 0)
            break;
    }
    return rc;
}

static int tls_handshake(void *ctx, int h, unsigned *want, char *err, size_t cap)
{
    struct tls_session *s = get(h);
    uint32_t flags;
    int rc, code;

    (void)ctx;
    if (s == NULL)
        return MOTE_ERR_BADF;
    rc = handshake_steps(s);
    if (want_of(s, rc, want) == MOTE_ERR_AGAIN)
        return MOTE_ERR_AGAIN;
    /* Resumed: a session was offered and the handshake never read a
     * certificate of the server's (TLS 1.2's abbreviated handshake, TLS
     * 1.3's PSK key exchange). Anything else was a full handshake, and is
     * verified as one. */
    s->resumed = rc == 0 && s->offered && !s->cert_state && !s->chain_seen;
    if (rc != 0 && s->offered && rc != MBEDTLS_ERR_NET_CONN_RESET &&
        rc != MBEDTLS_ERR_SSL_CONN_EOF && rc != MBEDTLS_ERR_NET_RECV_FAILED &&
        rc != MBEDTLS_ERR_NET_SEND_FAILED)
        /* refused with the kept session offered: the next one is full */
        mote_tls_sessions_forget(s->port, &s->key, s->resume);
#if !USE_CA_CB
    if (rc == 0 && !s->resumed) { /* (a resumed session was verified when it was made) */
        rc = verify_after(s, &flags);
        if (rc == 0 && flags != 0) {
            (void)mbedtls_ssl_send_alert_message(&s->ssl, MBEDTLS_SSL_ALERT_LEVEL_FATAL,
                                                 (flags & MBEDTLS_X509_BADCERT_NOT_TRUSTED)
                                                     ? MBEDTLS_SSL_ALERT_MSG_UNKNOWN_CA
                                                     : MBEDTLS_SSL_ALERT_MSG_BAD_CERT);
            flags_msg(flags, s, err, cap);
            return MOTE_ERR_TLS_VERIFY;
        }
    }
#endif
#if USE_CA_CB
    /* (mbedTLS verified a full handshake itself, VERIFY_REQUIRED: a
     * failure ended it; this only keeps the rule in one place) */
    if (rc == 0 && !s->resumed && mbedtls_ssl_get_verify_result(&s->ssl) != 0) {
        flags_msg(mbedtls_ssl_get_verify_result(&s->ssl), s, err, cap);
        return MOTE_ERR_TLS_VERIFY;
    }
#endif
    mbedtls_x509_crt_free(&s->found); /* what the handshake needed of the roots */
    mbedtls_x509_crt_init(&s->found);
    if (rc == 0) {
#if MBEDTLS_VERSION_MAJOR >= 3 && defined(MBEDTLS_SSL_PROTO_TLS1_3)
        if (mbedtls_ssl_get_version_number(&s->ssl) == MBEDTLS_SSL_VERSION_TLS1_3)
            return 0; /* its tickets come after the handshake (tls_recv) */
#endif
        keep_session(s, false);
        return 0;
    }
    if (s->roots_err < 0) {
        snprintf(err, cap, "cannot read the trusted roots %s: %s",
                 s->src.path != NULL ? s->src.path : "in memory", mote_strerror(s->roots_err));
        return MOTE_ERR_TLS_VERIFY; /* nothing to verify the server against */
    }
    flags = mbedtls_ssl_get_verify_result(&s->ssl);
    if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags != 0 && flags != (uint32_t)-1) {
        flags_msg(flags, s, err, cap);
        return MOTE_ERR_TLS_VERIFY;
    }
    if (s->own_state && (code = alert_of(s, rc)) >= 0 && refused_own(s, code, err, cap))
        return MOTE_ERR_TLS;
    if (rc == MBEDTLS_ERR_NET_CONN_RESET || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY ||
        rc == MBEDTLS_ERR_SSL_CONN_EOF) {
        snprintf(err, cap, "the server closed the connection during the TLS handshake");
        return MOTE_ERR_TLS; /* a handshake that failed, whatever the server's reason */
    }
    describe(rc, "TLS handshake failed", err, cap);
    return MOTE_ERR_TLS;
}

static int tls_send(void *ctx, int h, const void *buf, size_t n, unsigned *want)
{
    struct tls_session *s = get(h);
    int rc;

    (void)ctx;
    if (s == NULL)
        return MOTE_ERR_BADF;
    rc = mbedtls_ssl_write(&s->ssl, buf, n);
#if defined(MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
    while (rc == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET) {
        /* (a ticket read before this write took it up first) */
        keep_session(s, true);
        rc = mbedtls_ssl_write(&s->ssl, buf, n);
    }
#endif
    if (rc >= 0)
        return rc;
    if (want_of(s, rc, want) == MOTE_ERR_AGAIN)
        return MOTE_ERR_AGAIN;
    return rc == MBEDTLS_ERR_NET_CONN_RESET ? MOTE_ERR_CONNRESET : MOTE_ERR_PIPE;
}

/* mbedtls_ssl_read, through TLS 1.3's messages after the handshake: a
 * NewSessionTicket it meets makes it say "want read" with the message
 * still in hand (it takes it up at the next call), then report the
 * ticket; each ticket is kept and the read goes on. */
static int read_some(struct tls_session *s, void *buf, size_t n)
{
    int rc, i;

    for (i = 0; i < 8; i++) {
        bool over = HS_STATE(&s->ssl) == MBEDTLS_SSL_HANDSHAKE_OVER;

        rc = mbedtls_ssl_read(&s->ssl, buf, n);
#if defined(MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET)
        if (rc == MBEDTLS_ERR_SSL_RECEIVED_NEW_SESSION_TICKET) {
            keep_session(s, true);
            continue;
        }
#endif
        if (rc == MBEDTLS_ERR_SSL_WANT_READ && over &&
            HS_STATE(&s->ssl) != MBEDTLS_SSL_HANDSHAKE_OVER)
            continue; /* a message after the handshake began: its turn now */
        break;
    }
    return rc;
}

static int tls_recv(void *ctx, int h, void *buf, size_t n, unsigned *want)
{
    struct tls_session *s = get(h);
    int rc;

    (void)ctx;
    if (s == NULL)
        return MOTE_ERR_BADF;
    rc = read_some(s, buf, n);
    if (rc >= 0)
        return rc;
    if (rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY)
        return 0;
    if (want_of(s, rc, want) == MOTE_ERR_AGAIN)
        return MOTE_ERR_AGAIN;
    return rc == MBEDTLS_ERR_NET_CONN_RESET ? MOTE_ERR_CONNRESET : MOTE_ERR_PROTO;
}

static int tls_pending(void *ctx, int h)
{
    struct tls_session *s = get(h);

    (void)ctx;
    if (s == NULL)
        return 0;
    return (int)mbedtls_ssl_get_bytes_avail(&s->ssl) + (int)(s->ra_len - s->ra_off) +
           mbedtls_ssl_check_pending(&s->ssl);
}

static int tls_info(void *ctx, int h, struct mote_tls_info *info)
{
    struct tls_session *s = get(h);
    const char *v;

    (void)ctx;
    memset(info, 0, sizeof(*info));
    if (s == NULL)
        return MOTE_ERR_BADF;
    info->resumed = s->resumed;
    v = mbedtls_ssl_get_version(&s->ssl);
    snprintf(info->version, sizeof(info->version), "%s", v != NULL ? v : "");
#if defined(MBEDTLS_SSL_ALPN)
    v = mbedtls_ssl_get_alpn_protocol(&s->ssl);
    snprintf(info->alpn, sizeof(info->alpn), "%s", v != NULL ? v : "");
#endif
    return 0;
}

static void tls_close(void *ctx, int h)
{
    struct tls_session *s = get(h);

    (void)ctx;
    if (s == NULL)
        return;
    mbedtls_x509_crt_free(&s->found);
    mbedtls_ssl_free(&s->ssl);
    mbedtls_ssl_config_free(&s->conf);
#if defined(MBEDTLS_FS_IO) && defined(MBEDTLS_PK_PARSE_C)
    if (s->own) {
        mbedtls_x509_crt_free(&s->own_crt);
        mbedtls_pk_free(&s->own_key); /* (zeroised by mbedTLS) */
    }
#endif
    s->own = false;
    s->used = false;
}

void mote_tls_fill(struct mote_port *port)
{
    unsigned i;

    for (i = 0; i < PORTS && ports[i] != port && (ports[i] == NULL || ports[i]->ctx != port->ctx);
         i++) {
    }
    if (i == PORTS) {
        i = port_next;
        port_next = (port_next + 1) % PORTS;
    }
    ports[i] = port;
    port->tls_open = tls_open;
    port->tls_handshake = tls_handshake;
    port->tls_send = tls_send;
    port->tls_recv = tls_recv;
    port->tls_pending = tls_pending;
    port->tls_close = tls_close;
    port->tls_connect = tls_connect;
    port->tls_info = tls_info;
}

int mote_tls_set_roots(const void *data, size_t len)
{
    const unsigned char *p = data;
    size_t i = 0;

    if (data == NULL || len == 0) {
        roots_mem = NULL;
        roots_len = 0;
        return 0;
    }
    static const char marker[] = "-----BEGIN CERTIFICATE-----";

    while (i < len && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n'))
        i++;
    if (i == len)
        return MOTE_ERR_INVAL;
    if (p[i] != 0x30u) { /* not DER: PEM, if a certificate block is there */
        for (; i + sizeof(marker) - 1 <= len; i++) {
            if (memcmp(p + i, marker, sizeof(marker) - 1) == 0)
                break;
        }
        if (i + sizeof(marker) - 1 > len)
            return MOTE_ERR_INVAL;
    }
    roots_mem = p;
    roots_len = len;
    return 0;
}
