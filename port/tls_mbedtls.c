/*
 * tls_mbedtls.c - the TLS backend on mbedTLS (Debian libmbedtls-dev 2.28;
 * also compiles against 3.6), running on the port's own non-blocking
 * socket through mbedtls_ssl_set_bio.
 *
 * Verification is always required: the CA bundle (the --ca-file,
 * $SSL_CERT_FILE, or /etc/ssl/certs/ca-certificates.crt), SNI and the host
 * name, the validity period. The handshake completes, or fails with the
 * reason, before a byte of the request (and so the API key) is written.
 * Note: mbedTLS 2.28 does not match IP-address SANs, so the host must be a
 * DNS name (use "localhost", not 127.0.0.1, with a test certificate).
 *
 * The parsed CA bundle is kept for the life of the process and shared by
 * the sessions; each session costs about 40 KiB of mbedTLS state plus its
 * record buffers (docs/BENCHMARKS.md).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <mbedtls/version.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#if MBEDTLS_VERSION_MAJOR >= 3
#include <psa/crypto.h>
#endif

#include "mote/mote_err.h"
#include "mote/mote_port.h"
#include "posix/posix_internal.h"

#if defined(MBEDTLS_MEMORY_BUFFER_ALLOC_C)
/* The tiny build: every mbedTLS allocation comes from this arena, so TLS
 * memory is bounded; a CA bundle too large for it fails with a message. */
#include <mbedtls/memory_buffer_alloc.h>
#ifndef MOTE_TLS_ARENA
#define MOTE_TLS_ARENA (160 * 1024)
#endif
static unsigned char tls_arena[MOTE_TLS_ARENA];
#endif

#define TLS_SESSIONS 4
#define DEFAULT_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

struct tls_session {
    bool used;
    int fd;
    mbedtls_ssl_context ssl;
    mbedtls_ssl_config conf;
};

static struct tls_session sessions[TLS_SESSIONS];
static mbedtls_entropy_context entropy;
static mbedtls_ctr_drbg_context drbg;
static bool rng_ready;
static mbedtls_x509_crt ca;
static char ca_path[1024];
static bool ca_ready;

static int bio_send(void *arg, const unsigned char *buf, size_t len)
{
    struct tls_session *s = arg;
    ssize_t n = send(s->fd, buf, len, MSG_NOSIGNAL);

    if (n >= 0)
        return (int)n;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return MBEDTLS_ERR_SSL_WANT_WRITE;
    return MBEDTLS_ERR_NET_SEND_FAILED;
}

static int bio_recv(void *arg, unsigned char *buf, size_t len)
{
    struct tls_session *s = arg;
    ssize_t n = recv(s->fd, buf, len, 0);

    if (n >= 0)
        return (int)n;
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)
        return MBEDTLS_ERR_SSL_WANT_READ;
    return errno == ECONNRESET ? MBEDTLS_ERR_NET_CONN_RESET : MBEDTLS_ERR_NET_RECV_FAILED;
}

static void describe(int rc, const char *what, char *err, size_t cap)
{
    char buf[128];

    mbedtls_strerror(rc, buf, sizeof(buf));
    snprintf(err, cap, "%s: %s (-0x%04x)", what, buf, (unsigned)-rc);
}

static int load_ca(const char *path, char *err, size_t cap)
{
    int rc;

    if (ca_ready && strcmp(ca_path, path) == 0)
        return 0;
    if (ca_ready)
        mbedtls_x509_crt_free(&ca);
    mbedtls_x509_crt_init(&ca);
    ca_ready = false;
    rc = mbedtls_x509_crt_parse_file(&ca, path);
    if (rc < 0 || ca.version == 0) {
        /* rc > 0 counts certificates that failed to parse: fine if some did. */
#if defined(MBEDTLS_MEMORY_BUFFER_ALLOC_C)
        snprintf(err, cap, "cannot load the CA bundle %s into the TLS arena of %d bytes "
                           "(give --ca-file just the roots you need)",
                 path, MOTE_TLS_ARENA);
#else
        snprintf(err, cap, "cannot load the CA bundle %s (set --ca-file or SSL_CERT_FILE)", path);
#endif
        mbedtls_x509_crt_free(&ca);
        return MOTE_ERR_TLS;
    }
    snprintf(ca_path, sizeof(ca_path), "%s", path);
    ca_ready = true;
    return 0;
}

static int tls_open(void *ctx, int fd, const char *host, const char *ca_file, char *err,
                    size_t cap)
{
    const char *path = ca_file;
    struct tls_session *s = NULL;
    int i, rc;

    (void)ctx;
    if (path == NULL || path[0] == '\0')
        path = getenv("SSL_CERT_FILE");
    if (path == NULL || path[0] == '\0')
        path = DEFAULT_BUNDLE;
    for (i = 0; i < TLS_SESSIONS; i++) {
        if (!sessions[i].used) {
            s = &sessions[i];
            break;
        }
    }
    if (s == NULL) {
        snprintf(err, cap, "too many TLS sessions at once");
        return MOTE_ERR_FULL;
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
    if ((rc = load_ca(path, err, cap)) < 0)
        return rc;
    memset(s, 0, sizeof(*s));
    s->fd = fd;
    mbedtls_ssl_init(&s->ssl);
    mbedtls_ssl_config_init(&s->conf);
    rc = mbedtls_ssl_config_defaults(&s->conf, MBEDTLS_SSL_IS_CLIENT, MBEDTLS_SSL_TRANSPORT_STREAM,
                                     MBEDTLS_SSL_PRESET_DEFAULT);
    if (rc == 0) {
        mbedtls_ssl_conf_authmode(&s->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
        mbedtls_ssl_conf_ca_chain(&s->conf, &ca, NULL);
        mbedtls_ssl_conf_rng(&s->conf, mbedtls_ctr_drbg_random, &drbg);
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

static struct tls_session *get(int h)
{
    if (h < 0 || h >= TLS_SESSIONS || !sessions[h].used)
        return NULL;
    return &sessions[h];
}

static int want_of(int rc, unsigned *want)
{
    if (rc == MBEDTLS_ERR_SSL_WANT_READ) {
        *want = MOTE_POLL_IN;
        return MOTE_ERR_AGAIN;
    }
    if (rc == MBEDTLS_ERR_SSL_WANT_WRITE) {
        *want = MOTE_POLL_OUT;
        return MOTE_ERR_AGAIN;
    }
    return 0;
}

static int tls_handshake(void *ctx, int h, unsigned *want, char *err, size_t cap)
{
    struct tls_session *s = get(h);
    uint32_t flags;
    int rc;

    (void)ctx;
    if (s == NULL)
        return MOTE_ERR_BADF;
    rc = mbedtls_ssl_handshake(&s->ssl);
    if (rc == 0)
        return 0;
    if (want_of(rc, want) == MOTE_ERR_AGAIN)
        return MOTE_ERR_AGAIN;
    flags = mbedtls_ssl_get_verify_result(&s->ssl);
    if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags != 0 && flags != (uint32_t)-1) {
        char info[256];
        size_t n;

        mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags);
        n = strlen(info);
        while (n > 0 && (info[n - 1] == '\n' || info[n - 1] == ' '))
            info[--n] = '\0';
        for (size_t i = 0; i < n; i++) {
            if (info[i] == '\n')
                info[i] = ';';
        }
        snprintf(err, cap, "certificate verification failed: %s", info);
        return MOTE_ERR_TLS;
    }
    if (rc == MBEDTLS_ERR_NET_CONN_RESET || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY) {
        snprintf(err, cap, "the server closed the connection during the TLS handshake");
        return MOTE_ERR_CONNRESET;
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
    if (rc >= 0)
        return rc;
    if (want_of(rc, want) == MOTE_ERR_AGAIN)
        return MOTE_ERR_AGAIN;
    return rc == MBEDTLS_ERR_NET_CONN_RESET ? MOTE_ERR_CONNRESET : MOTE_ERR_PIPE;
}

static int tls_recv(void *ctx, int h, void *buf, size_t n, unsigned *want)
{
    struct tls_session *s = get(h);
    int rc;

    (void)ctx;
    if (s == NULL)
        return MOTE_ERR_BADF;
    rc = mbedtls_ssl_read(&s->ssl, buf, n);
    if (rc >= 0)
        return rc;
    if (rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY)
        return 0;
    if (want_of(rc, want) == MOTE_ERR_AGAIN)
        return MOTE_ERR_AGAIN;
    return rc == MBEDTLS_ERR_NET_CONN_RESET ? MOTE_ERR_CONNRESET : MOTE_ERR_PROTO;
}

static int tls_pending(void *ctx, int h)
{
    struct tls_session *s = get(h);

    (void)ctx;
    return s == NULL ? 0 : (int)mbedtls_ssl_get_bytes_avail(&s->ssl);
}

static void tls_close(void *ctx, int h)
{
    struct tls_session *s = get(h);

    (void)ctx;
    if (s == NULL)
        return;
    mbedtls_ssl_free(&s->ssl);
    mbedtls_ssl_config_free(&s->conf);
    s->used = false;
}

void mote_tls_fill(struct mote_port *port)
{
    port->tls_open = tls_open;
    port->tls_handshake = tls_handshake;
    port->tls_send = tls_send;
    port->tls_recv = tls_recv;
    port->tls_pending = tls_pending;
    port->tls_close = tls_close;
}
