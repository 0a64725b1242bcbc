/*
 * tls_none.c - the TLS backend of a build without a TLS library
 * (make TLS=none): every https:// connection fails with a message that
 * names the build option; http:// works.
 */
#include <stdio.h>

#include "mote/mote_err.h"
#include "mote/mote_port.h"
#include "mote/mote_tls.h"

static int none_open(void *ctx, int fd, const char *host, const char *ca_file, char *err,
                     size_t err_cap)
{
    (void)ctx, (void)fd, (void)host, (void)ca_file;
    snprintf(err, err_cap, "this mote was built with TLS=none: https:// needs a build with "
                           "TLS=mbedtls (only http:// URLs work)");
    return MOTE_ERR_NOTSUP;
}

void mote_tls_fill(struct mote_port *port)
{
    port->tls_open = none_open;
    port->tls_handshake = NULL;
    port->tls_send = NULL;
    port->tls_recv = NULL;
    port->tls_pending = NULL;
    port->tls_close = NULL;
    port->tls_connect = NULL; /* (tls_open says why) */
    port->tls_info = NULL;
}

int mote_tls_set_roots(const void *data, size_t len)
{
    (void)data, (void)len;
    return MOTE_ERR_NOTSUP;
}

int mote_tls_sign_es256(const void *key, size_t len, const uint8_t hash[32], uint8_t sig[64],
                        char *err, size_t cap)
{
    (void)key, (void)len, (void)hash, (void)sig;
    snprintf(err, cap, "this mote was built with TLS=none: signing (ES256) needs TLS=mbedtls");
    return MOTE_ERR_NOTSUP;
}
