/*
 * serve_token.c - the bearer token of the API server's TCP listener, kept
 * in a storage file (mote_serve_token): read, or made from the port's
 * bytes for secrets (random_secret, never a weaker fallback) when there
 * is none.
 */
#include <string.h>

#include "mote/mote_serve.h"
#include "util.h"

int mote_serve_token(const struct mote_port *port, const char *name, char out[65], bool *created)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char r[32];
    char line[80];
    struct mote_src_bytes src = {line, 65, 0};
    int h, n, i, rc;

    *created = false;
    out[0] = '\0';
    h = port->st_open(port->ctx, name, MOTE_ST_READ);
    if (h >= 0) {
        n = port->st_read(port->ctx, h, 0, line, sizeof(line) - 1);
        port->st_close(port->ctx, h);
        if (n < 0)
            return n;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (n != 64)
            return MOTE_ERR_CORRUPT;
        for (i = 0; i < 64; i++) {
            if (strchr(hex, line[i]) == NULL || line[i] == '\0')
                return MOTE_ERR_CORRUPT;
        }
        memcpy(out, line, 64);
        out[64] = '\0';
        return 0;
    }
    if (h != MOTE_ERR_NOENT)
        return h;
    if (!MOTE_PORT_HAS(port, random_secret))
        return MOTE_ERR_NOSYS;
    /* A credential: from the seeded generator or not at all (early boot:
     * MOTE_ERR_AGAIN, nothing written, the caller asks again later). */
    if ((rc = port->random_secret(port->ctx, r, sizeof(r), &h)) < 0) {
        memset(r, 0, sizeof(r));
        return rc;
    }
    for (i = 0; i < 32; i++) {
        line[2 * i] = hex[r[i] >> 4];
        line[2 * i + 1] = hex[r[i] & 15u];
    }
    line[64] = '\n';
    line[65] = '\0';
    memset(r, 0, sizeof(r));
    rc = port->st_write_atomic(port->ctx, name, mote_produce_bytes, &src);
    if (rc < 0)
        return rc;
    memcpy(out, line, 64);
    out[64] = '\0';
    *created = true;
    return 0;
}
