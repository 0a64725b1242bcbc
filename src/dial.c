/*
 * dial.c - connecting to a server as a loop-stepped machine (mote_dial.h):
 * name lookup, connect (each address in turn), a proxy's CONNECT tunnel,
 * the TLS handshake.
 */
#include "mote/mote_dial.h"

#include <string.h>

#include "mote/mote.h"
#include "util.h"

void mote_dial_init(struct mote_dial *d, const char *host, uint16_t port, bool tls,
                    const struct mote_url *proxy, const char *proxy_auth, int *fdp, int *tlsp)
{
    memset(d, 0, sizeof(*d));
    d->host = host;
    d->port = port;
    d->tls = tls;
    d->proxy = proxy;
    d->proxy_auth = proxy_auth != NULL ? proxy_auth : "";
    d->fdp = fdp;
    d->tlsp = tlsp;
    d->wait_fd = -1;
    *fdp = *tlsp = -1;
}

void mote_dial_stop(struct mote_dial *d, const struct mote_port *p)
{
    if (d->resolving)
        p->net_resolve_end(p->ctx, d->resolve_req);
    d->resolving = false;
}

/* FNV-1a, 64 bits, of a string and its terminating NUL onto h. */
static uint64_t fnv(uint64_t h, const char *s)
{
    do {
        h = (h ^ (uint8_t)*s) * UINT64_C(0x100000001b3);
    } while (*s++ != '\0');
    return h;
}

uint64_t mote_dial_origin(const struct mote_url *to, const struct mote_url *proxy,
                          const char *proxy_auth, const char *ca_file)
{
    char num[24];
    uint64_t h = UINT64_C(0xcbf29ce484222325);

    num[mote_u64_dec((uint64_t)to->port * 4u + (to->tls ? 2u : 0u) + (proxy != NULL), num)] = '\0';
    h = fnv(fnv(h, num), to->host);
    if (proxy != NULL) {
        num[mote_u64_dec(proxy->port, num)] = '\0';
        h = fnv(fnv(fnv(h, num), proxy->host), proxy_auth != NULL ? proxy_auth : "");
    }
    return fnv(h, ca_file != NULL ? ca_file : "");
}

/* host:port as a request names it (an IPv6 address in brackets). */
static void put_hostport(struct mote_sb *sb, const char *host, uint16_t port)
{
    bool v6 = strchr(host, ':') != NULL;

    if (v6)
        mote_sb_s(sb, "[");
    mote_sb_s(sb, host);
    mote_sb_s(sb, v6 ? "]:" : ":");
    mote_sb_u(sb, port);
}

static void put_authority(struct mote_sb *sb, const struct mote_url *u)
{
    put_hostport(sb, u->host, u->port);
}

/* "WHAT [WHO ]HOST:PORT[ through the proxy P:PP]: REASON" */
static int conn_msg(const struct mote_dial *d, char *err, size_t cap, const char *what, int rc)
{
    struct mote_sb sb;

    mote_sb_init(&sb, err, cap);
    mote_sb_s(&sb, what);
    mote_sb_s(&sb, " ");
    if (d->who != NULL) {
        mote_sb_s(&sb, d->who);
        mote_sb_s(&sb, " ");
    }
    put_hostport(&sb, d->host, d->port);
    if (d->proxy != NULL) {
        mote_sb_s(&sb, " through the proxy ");
        put_authority(&sb, d->proxy);
    }
    mote_sb_s(&sb, ": ");
    mote_sb_s(&sb, mote_strerror(rc));
    return rc;
}

/* Adds to a TLS failure's message that it happened through the proxy's
 * tunnel (a proxy that closes it at once, or that answers TLS itself,
 * looks like a server that does). */
static void via_proxy_note(const struct mote_dial *d, char *err, size_t cap)
{
    struct mote_sb sb;

    sb.p = err; /* appended to what is there */
    sb.cap = cap;
    sb.len = strlen(err);
    mote_sb_s(&sb, "; through the proxy ");
    put_authority(&sb, d->proxy);
    mote_sb_s(&sb, " (its tunnel to ");
    put_hostport(&sb, d->host, d->port);
    mote_sb_s(&sb, ")");
}

/* Where the head in b[0..n) ends: just past the empty line that closes it,
 * or 0 if it is not complete yet. Lines end in CRLF or, as curl accepts
 * from proxies, a bare LF. */
static size_t head_end(const char *b, size_t n)
{
    size_t i;

    for (i = 0; i + 1 < n; i++) {
        if (b[i] != '\n')
            continue;
        if (b[i + 1] == '\n')
            return i + 2;
        if (b[i + 1] == '\r' && i + 2 < n && b[i + 2] == '\n')
            return i + 3;
    }
    return 0;
}

static int wait_for(struct mote_dial *d, int fd, unsigned events)
{
    d->wait_fd = fd;
    d->wait_events = events;
    return MOTE_ERR_AGAIN;
}

/* The proxy's refusal of CONNECT (status line in buf): said with its
 * status line (control bytes removed), never the proxy URL. */
static int refused(struct mote_dial *d, const char *buf, unsigned status, char *err, size_t cap)
{
    char line[96];
    struct mote_sb sb;
    size_t ln = strcspn(buf, "\r\n"), i;

    ln = ln > 9 ? ln - 9 : 0; /* "403 Forbidden" */
    if (ln > sizeof(line) - 1)
        ln = sizeof(line) - 1;
    for (i = 0; i < ln; i++) {
        unsigned char ch = (unsigned char)buf[9 + i];

        line[i] = ch < 0x20 || ch >= 0x7f ? '?' : (char)ch;
    }
    line[ln] = '\0';
    mote_sb_init(&sb, err, cap);
    mote_sb_s(&sb, "the proxy ");
    put_authority(&sb, d->proxy);
    if (status != 407)
        mote_sb_s(&sb, " refused the tunnel to ");
    else if (d->proxy_auth[0] != '\0')
        mote_sb_s(&sb, " refused the credentials in the proxy URL (");
    else
        mote_sb_s(&sb, " wants credentials: put them in the proxy URL (");
    if (status != 407) {
        put_hostport(&sb, d->host, d->port);
        mote_sb_s(&sb, " (");
    }
    mote_sb_s(&sb, line);
    mote_sb_s(&sb, ")");
    d->status = (int)status;
    d->retry = status == 502 || status == 503 || status == 504; /* it could not reach it */
    return status == 407 ? MOTE_ERR_AUTH : MOTE_ERR_HTTP;
}

/* CONNECT host:port through the proxy: the request, once, then its
 * answer's head (nothing may follow it: the server speaks only after our
 * TLS hello). Returns 0 when the tunnel is up. */
static int tunnel(struct mote_dial *d, const struct mote_port *p, char *buf, size_t cap, char *err,
                  size_t err_cap)
{
    size_t end;
    int rc;

    if (!d->tun_sent && d->len == 0) {
        struct mote_sb sb;

        mote_sb_init(&sb, buf, cap);
        mote_sb_s(&sb, "CONNECT ");
        for (rc = 0; rc < 2; rc++) { /* the target, in the request line and in Host */
            put_hostport(&sb, d->host, d->port);
            mote_sb_s(&sb, rc == 0 ? " HTTP/1.1\r\nHost: " : "\r\n");
        }
        if (d->proxy_auth[0] != '\0') {
            mote_sb_s(&sb, d->proxy_auth);
            mote_sb_s(&sb, "\r\n");
        }
        mote_sb_s(&sb, "User-Agent: mote/" MOTE_VERSION_STRING "\r\n\r\n");
        d->len = sb.len;
        d->off = 0;
    }
    while (!d->tun_sent) {
        rc = p->net_send(p->ctx, *d->fdp, buf + d->off, d->len - d->off);
        if (rc == MOTE_ERR_AGAIN)
            return wait_for(d, *d->fdp, MOTE_POLL_OUT);
        if (rc < 0) {
            d->retry = true;
            return conn_msg(d, err, err_cap, "the proxy connection broke while asking for", rc);
        }
        d->off += (size_t)rc;
        if (d->off == d->len) {
            d->tun_sent = true; /* the buffer takes the answer */
            d->off = d->len = 0;
        }
    }
    for (;;) {
        if (d->len + 1 >= cap)
            return mote_why(err, err_cap, MOTE_ERR_PROTO,
                            "the proxy's answer to CONNECT is too long", NULL, NULL);
        rc = p->net_recv(p->ctx, *d->fdp, buf + d->len, cap - 1 - d->len);
        if (rc == MOTE_ERR_AGAIN)
            return wait_for(d, *d->fdp, MOTE_POLL_IN);
        if (rc <= 0) {
            d->retry = true;
            conn_msg(d, err, err_cap, "the proxy closed the connection before a tunnel to",
                     rc == 0 ? MOTE_ERR_CONNRESET : rc);
            return MOTE_ERR_CONNRESET;
        }
        d->len += (size_t)rc;
        buf[d->len] = '\0';
        if ((end = head_end(buf, d->len)) != 0)
            break;
    }
    if (memchr(buf, '\0', end) != NULL)
        return mote_why(err, err_cap, MOTE_ERR_PROTO,
                        "the proxy's answer to CONNECT has a NUL byte in its head", NULL, NULL);
    {
        /* "HTTP/1.1 200 Connection established" */
        unsigned status = 0, i;

        if (strncmp(buf, "HTTP/1.", 7) != 0 || buf[8] != ' ')
            return mote_why(err, err_cap, MOTE_ERR_PROTO,
                            "the proxy did not answer CONNECT in HTTP", NULL, NULL);
        for (i = 9; i < 12 && buf[i] >= '0' && buf[i] <= '9'; i++)
            status = status * 10 + (unsigned)(buf[i] - '0');
        if (i != 12)
            return mote_why(err, err_cap, MOTE_ERR_PROTO,
                            "the proxy did not answer CONNECT in HTTP", NULL, NULL);
        if (status / 100 != 2)
            return refused(d, buf, status, err, err_cap);
        if (end != d->len)
            return mote_why(err, err_cap, MOTE_ERR_PROTO,
                            "the proxy sent bytes before the tunnel was up", NULL, NULL);
        d->off = d->len = 0;
        return 0;
    }
}

/* Opens the TLS session on the connection: for this server (its port
 * too, which binds a kept session to it), offering a kept session and the
 * caller's ALPN where the port can. */
static int tls_start(struct mote_dial *d, const struct mote_port *p, char *err, size_t cap)
{
    if (MOTE_PORT_HAS(p, tls_connect)) {
        d->peer.host = d->host;
        d->peer.port = d->port;
        return p->tls_connect(p->ctx, *d->fdp, &d->peer, err, cap);
    }
    if (!MOTE_PORT_HAS(p, tls_open))
        return mote_why(err, cap, MOTE_ERR_NOTSUP, "this port has no TLS: https:// cannot be used",
                        NULL, NULL);
    if (d->peer.cert_file != NULL)
        return mote_why(err, cap, MOTE_ERR_NOTSUP,
                        "this port's TLS cannot present a client certificate (no tls_connect)",
                        NULL, NULL);
    return p->tls_open(p->ctx, *d->fdp, d->host, d->peer.ca_file, err, cap);
}

int mote_dial_step(struct mote_dial *d, const struct mote_port *p, char *buf, size_t cap,
                   char *err, size_t err_cap)
{
    unsigned want;
    int rc, fd;

    for (;;) {
        switch (d->phase) {
        case MOTE_DIAL_RESOLVE:
            if (!d->resolving) {
                rc = d->proxy != NULL ? p->net_resolve(p->ctx, d->proxy->host, d->proxy->port, &fd)
                                      : p->net_resolve(p->ctx, d->host, d->port, &fd);
                if (rc < 0)
                    return conn_msg(d, err, err_cap, "cannot resolve", rc);
                d->resolve_req = rc;
                d->resolving = true;
                d->wait_fd = fd;
                d->wait_events = MOTE_POLL_IN;
            }
            rc = p->net_resolve_result(p->ctx, d->resolve_req, d->addrs, MOTE_MAX_ADDRS);
            if (rc == MOTE_ERR_AGAIN)
                return rc; /* (the lookup's descriptor, set above) */
            mote_dial_stop(d, p);
            if (rc <= 0) {
                struct mote_sb sb;

                mote_sb_init(&sb, err, err_cap);
                mote_sb_s(&sb, "cannot resolve ");
                if (d->proxy != NULL)
                    mote_sb_s(&sb, "the proxy's");
                else if (d->who != NULL)
                    mote_sb_join(&sb, d->who, "'s", NULL);
                else
                    mote_sb_s(&sb, "the");
                mote_sb_join(&sb, " host name '", d->proxy != NULL ? d->proxy->host : d->host,
                             "'");
                return MOTE_ERR_DNS;
            }
            d->naddr = (unsigned)rc;
            d->addr_i = 0;
            d->phase = MOTE_DIAL_CONNECT;
            break;
        case MOTE_DIAL_CONNECT:
            if (*d->fdp < 0) {
                rc = p->net_connect(p->ctx, &d->addrs[d->addr_i]);
                if (rc < 0) {
                    if (++d->addr_i < d->naddr)
                        break;
                    return conn_msg(d, err, err_cap, "cannot connect to", rc);
                }
                *d->fdp = rc;
                if (d->opened != NULL)
                    (*d->opened)++;
            }
            rc = p->net_connect_done(p->ctx, *d->fdp);
            if (rc == MOTE_ERR_AGAIN)
                return wait_for(d, *d->fdp, MOTE_POLL_OUT);
            if (rc < 0) {
                p->net_close(p->ctx, *d->fdp);
                *d->fdp = -1;
                if (++d->addr_i < d->naddr)
                    break; /* the next address (IPv6, then IPv4, say) */
                return conn_msg(d, err, err_cap, "cannot connect to", rc);
            }
            d->phase = d->tls && d->proxy != NULL ? MOTE_DIAL_TUNNEL
                       : d->tls                   ? MOTE_DIAL_HANDSHAKE
                                                      : MOTE_DIAL_DONE;
            break;
        case MOTE_DIAL_TUNNEL:
            if ((rc = tunnel(d, p, buf, cap, err, err_cap)) < 0)
                return rc;
            d->phase = MOTE_DIAL_HANDSHAKE;
            break;
        case MOTE_DIAL_HANDSHAKE:
            if (*d->tlsp < 0) {
                if ((rc = tls_start(d, p, err, err_cap)) < 0)
                    return rc;
                *d->tlsp = rc;
            }
            rc = p->tls_handshake(p->ctx, *d->tlsp, &want, err, err_cap);
            if (rc == MOTE_ERR_AGAIN)
                return wait_for(d, *d->fdp, want);
            if (rc < 0) {
                if (d->proxy != NULL)
                    via_proxy_note(d, err, err_cap);
                return rc; /* verification failures are not retried */
            }
            if (MOTE_PORT_HAS(p, tls_info)) {
                struct mote_tls_info info;

                d->resumed = p->tls_info(p->ctx, *d->tlsp, &info) == 0 && info.resumed;
            }
            d->phase = MOTE_DIAL_DONE;
            break;
        case MOTE_DIAL_DONE:
            return 0;
        default:
            return MOTE_ERR_INVAL;
        }
    }
}
