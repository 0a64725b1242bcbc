/*
 * mote_dial.h - connecting to a server as a machine the loop steps: the
 * name looked up, each of its addresses tried in turn, a proxy's CONNECT
 * tunnel (https through an HTTP proxy), the TLS handshake. Nothing
 * blocks: a step that would wait says which descriptor and events to
 * watch, and the caller steps it again when they come. The model client,
 * the MQTT client and MCP servers over HTTP connect with it.
 *
 * The caller owns the descriptors: the dial writes them to the caller's
 * slots as they open (*fdp, *tlsp) and closes nothing, so what the caller
 * does with a connection it gave up (close, keep) is its own.
 */
#ifndef MOTE_DIAL_H
#define MOTE_DIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_http.h"
#include "mote/mote_port.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mote_dial_phase {
    MOTE_DIAL_RESOLVE = 0,
    MOTE_DIAL_CONNECT,
    MOTE_DIAL_TUNNEL,    /* CONNECT through the proxy */
    MOTE_DIAL_HANDSHAKE, /* TLS */
    MOTE_DIAL_DONE,
};

struct mote_dial {
    /* the caller's, set before the first step (mote_dial_init) */
    const char *host;              /* the server */
    uint16_t port;
    bool tls;
    const struct mote_url *proxy;  /* an HTTP proxy, or NULL: direct */
    const char *proxy_auth;        /* its Proxy-Authorization line, "" without one */
    const char *who;               /* the server in messages ("the broker"), or NULL */
    struct mote_tls_peer peer;     /* ca_file, alpn, resume, session_max_s (host, port
                                    * are set from `to`) */
    int *fdp, *tlsp;               /* where the descriptors go (-1 until opened) */
    uint32_t *opened;              /* counts connections opened (NULL: not counted) */
    /* progress (read-only for the caller) */
    uint8_t phase;                 /* enum mote_dial_phase */
    bool retry;                    /* the failure may pass on another attempt (the
                                    * proxy's connection broke, it could not reach
                                    * the server) */
    bool resumed;                  /* the TLS session was a resumed one */
    int status;                    /* the proxy's answer to CONNECT when it refused */
    int wait_fd;                   /* after MOTE_ERR_AGAIN: watch this descriptor */
    unsigned wait_events;          /* for these events (MOTE_POLL_*) */
    /* internal */
    bool resolving;                /* a lookup is pending (all zero: none) */
    int resolve_req;
    unsigned naddr, addr_i;
    bool tun_sent;                 /* the CONNECT request is out */
    size_t off, len;               /* of the CONNECT request sent, then of its answer */
    struct mote_addr addrs[MOTE_MAX_ADDRS];
};

/* Prepares `d` to connect to `host`:`port` (over TLS when `tls`; through
 * `proxy` when not NULL, with `proxy_auth`), the descriptors going to
 * *fdp and *tlsp (set to -1 here). Everything it points to must outlive
 * the dial. Never fails. */
void mote_dial_init(struct mote_dial *d, const char *host, uint16_t port, bool tls,
                    const struct mote_url *proxy, const char *proxy_auth, int *fdp, int *tlsp);

/* Runs the phases until one would block, using `buf` (cap bytes, at
 * least 512) as scratch for the proxy's tunnel. Returns 0 (connected:
 * *fdp, and *tlsp for https, are ready), MOTE_ERR_AGAIN (watch
 * d->wait_fd for d->wait_events, then call again), or < 0 with one line
 * in `err` (cap err_cap) naming the server (and the proxy): MOTE_ERR_DNS,
 * the connect's error, MOTE_ERR_PROTO or MOTE_ERR_HTTP (the proxy),
 * MOTE_ERR_AUTH (the proxy wants credentials), the TLS backend's error,
 * MOTE_ERR_NOTSUP (https without TLS in the port). Never blocks. */
int mote_dial_step(struct mote_dial *d, const struct mote_port *p, char *buf, size_t cap,
                   char *err, size_t err_cap);

/* Abandons a pending name lookup (descriptors already opened stay the
 * caller's). Idempotent, and safe on an all-zero dial; call it when the
 * dial is given up. */
void mote_dial_stop(struct mote_dial *d, const struct mote_port *p);

/* An origin's fingerprint for kept connections (mote_conn_take): scheme,
 * host and port, the proxy and its credentials, and the CA file. */
uint64_t mote_dial_origin(const struct mote_url *to, const struct mote_url *proxy,
                          const char *proxy_auth, const char *ca_file);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_DIAL_H */
