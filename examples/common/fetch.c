/*
 * fetch.c - one HTTP request and its whole answer, blocking (fetch.h):
 * the library's dial (name lookup, proxy tunnel, TLS with its
 * verification) stepped with the port's wait until a deadline, the
 * library's response parser, the body kept up to the caller's buffer.
 * One connection per request ("Connection: close"): these exchanges are
 * rare (a login, a token refreshed at start).
 */
#define _GNU_SOURCE
#include "fetch.h"

#include "mote/mote_dial.h"
#include "mote/mote_err.h"
#include "mote/mote_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct io {
    const struct mote_port *p;
    struct fe_fetch *f;
    int fd, tls;
    uint32_t end;   /* the deadline (now_ms) */
    char head[4096];
    size_t head_len;
    bool over;      /* the body did not fit */
};

static int32_t left_ms(const struct io *x)
{
    uint32_t now = x->p->now_ms(x->p->ctx);

    return (int32_t)(x->end - now) > 0 ? (int32_t)(x->end - now) : 0;
}

/* Waits for `events` on fd until the deadline: 0, or MOTE_ERR_TIMEDOUT. */
static int wait_for(struct io *x, int fd, unsigned events)
{
    struct mote_pollfd pf;
    int32_t ms = left_ms(x);
    int rc;

    if (ms == 0)
        return MOTE_ERR_TIMEDOUT;
    pf.fd = fd;
    pf.events = (uint16_t)events;
    pf.revents = 0;
    rc = x->p->wait(x->p->ctx, &pf, 1, ms);
    if (rc < 0)
        return rc;
    return rc == 0 && left_ms(x) == 0 ? MOTE_ERR_TIMEDOUT : 0;
}

static int head_sink(void *arg, const char *s, size_t n)
{
    struct io *x = arg;

    if (x->head_len + n >= sizeof(x->head))
        return MOTE_ERR_TOO_LARGE;
    memcpy(x->head + x->head_len, s, n);
    x->head_len += n;
    return 0;
}

static int on_body(void *arg, const char *s, size_t n)
{
    struct io *x = arg;
    struct fe_fetch *f = x->f;

    if (f->len + n >= f->cap) {
        x->over = true;
        return MOTE_ERR_TOO_LARGE;
    }
    memcpy(f->out + f->len, s, n);
    f->len += n;
    f->out[f->len] = '\0';
    return 0;
}

static void keep_value(char *dst, size_t cap, const char *v, size_t vn)
{
    if (dst[0] != '\0' || cap == 0)
        return; /* the first one */
    if (vn >= cap)
        vn = cap - 1;
    memcpy(dst, v, vn);
    dst[vn] = '\0';
}

static int on_header(void *arg, const char *name, size_t n, const char *v, size_t vn)
{
    struct io *x = arg;

    if (n == 16 && strncasecmp(name, "WWW-Authenticate", n) == 0)
        keep_value(x->f->www_auth, sizeof(x->f->www_auth), v, vn);
    else if (n == 8 && strncasecmp(name, "Location", n) == 0)
        keep_value(x->f->location, sizeof(x->f->location), v, vn);
    else if (n == 12 && strncasecmp(name, "Content-Type", n) == 0)
        keep_value(x->f->content_type, sizeof(x->f->content_type), v, vn);
    else if (n == 14 && strncasecmp(name, "Mcp-Session-Id", n) == 0)
        keep_value(x->f->session, sizeof(x->f->session), v, vn);
    return 0;
}

/* Sends n bytes of `b` whole. */
static int send_all(struct io *x, const char *b, size_t n)
{
    size_t off = 0;

    while (off < n) {
        unsigned want = MOTE_POLL_OUT;
        int rc = x->tls >= 0 ? x->p->tls_send(x->p->ctx, x->tls, b + off, n - off, &want)
                             : x->p->net_send(x->p->ctx, x->fd, b + off, n - off);

        if (rc == MOTE_ERR_AGAIN) {
            if ((rc = wait_for(x, x->fd, want)) < 0)
                return rc;
            continue;
        }
        if (rc < 0)
            return rc;
        off += (size_t)rc;
    }
    return 0;
}

static int fail(struct fe_fetch *f, int rc, const char *what)
{
    if (f->err[0] == '\0')
        snprintf(f->err, sizeof(f->err), "%s: %s", what, mote_strerror(rc));
    return rc;
}

/* Where the request goes: the URL's path and query ("/" if none), into
 * target; the URL without them must parse as mote_url. */
static int split_url(const char *url, struct mote_url *u, char *target, size_t cap)
{
    char base[600];
    const char *s = strstr(url, "://"), *path;
    size_t n;

    if (s == NULL)
        return MOTE_ERR_INVAL;
    path = s + 3 + strcspn(s + 3, "/?#");
    n = (size_t)(path - url);
    if (n >= sizeof(base))
        return MOTE_ERR_TOO_LARGE;
    memcpy(base, url, n);
    base[n] = '\0';
    if (mote_url_parse(u, base) < 0)
        return MOTE_ERR_INVAL;
    n = strcspn(path, "#");
    if (n + 2 > cap)
        return MOTE_ERR_TOO_LARGE;
    if (path[0] != '/')
        *target++ = '/';
    memcpy(target, path, n);
    target[n] = '\0';
    for (; *target != '\0'; target++) {
        if ((unsigned char)*target <= 0x20 || (unsigned char)*target >= 0x7f)
            return MOTE_ERR_INVAL;
    }
    return 0;
}

static const char *env_first(const char *a, const char *b)
{
    const char *v = getenv(a);

    if (v == NULL || v[0] == '\0')
        v = getenv(b);
    return v != NULL && v[0] != '\0' ? v : NULL;
}

static int exchange(struct io *x, struct mote_dial *d, struct mote_http_resp *r)
{
    const struct mote_port *p = x->p;
    struct fe_fetch *f = x->f;
    char scratch[1024], buf[4096], why[256];
    int rc;

    for (;;) {
        why[0] = '\0';
        rc = mote_dial_step(d, p, scratch, sizeof(scratch), why, sizeof(why));
        if (rc != MOTE_ERR_AGAIN)
            break;
        if ((rc = wait_for(x, d->wait_fd, d->wait_events)) < 0)
            return fail(f, rc, "connecting");
    }
    if (rc < 0) {
        snprintf(f->err, sizeof(f->err), "%s", why[0] != '\0' ? why : mote_strerror(rc));
        return rc;
    }
    if ((rc = send_all(x, x->head, x->head_len)) < 0 ||
        (f->body != NULL && (rc = send_all(x, f->body, f->body_len)) < 0))
        return fail(f, rc, "sending the request");
    while (!mote_http_resp_done(r)) {
        unsigned want = MOTE_POLL_IN;

        if (left_ms(x) == 0) /* (a server that never stops sending) */
            return fail(f, MOTE_ERR_TIMEDOUT, "waiting for the answer");
        int n = x->tls >= 0 ? p->tls_recv(p->ctx, x->tls, buf, sizeof(buf), &want)
                            : p->net_recv(p->ctx, x->fd, buf, sizeof(buf));

        if (n == MOTE_ERR_AGAIN) {
            if ((rc = wait_for(x, x->fd, want)) < 0)
                return fail(f, rc, "waiting for the answer");
            continue;
        }
        if (n < 0)
            return fail(f, n, "reading the answer");
        if (n == 0) {
            if ((rc = mote_http_resp_eof(r)) < 0)
                return fail(f, rc, "the answer was cut short");
            break;
        }
        rc = mote_http_resp_feed(r, buf, (size_t)n);
        if (rc < 0) {
            if (x->over) {
                snprintf(f->err, sizeof(f->err), "the answer is larger than %zu bytes",
                         f->cap - 1);
                return MOTE_ERR_TOO_LARGE;
            }
            return fail(f, rc, "a malformed answer");
        }
    }
    f->status = r->status;
    return 0;
}

void fe_fetch_init(struct fe_fetch *f, const char *method, const char *url,
                   const char *const *headers, const char *body, size_t body_len, char *out,
                   size_t cap)
{
    memset(f, 0, sizeof(*f));
    f->method = method;
    f->url = url;
    f->headers = headers;
    f->body = body;
    f->body_len = body_len;
    f->out = out;
    f->cap = cap;
}

int fe_fetch(const struct mote_port *p, struct fe_fetch *f)
{
    static struct io x;
    static struct mote_dial d;
    static struct mote_http_resp r;
    struct mote_url u, proxy;
    char target[1200], auth[MOTE_PROXY_AUTH_MAX];
    const char *lines[24];
    const char *pv;
    bool via = false;
    size_t i = 0;
    int rc;

    f->status = 0;
    f->len = 0;
    f->www_auth[0] = f->location[0] = f->content_type[0] = f->session[0] = f->err[0] = '\0';
    if (f->cap == 0)
        return MOTE_ERR_INVAL;
    f->out[0] = '\0';
    if ((rc = split_url(f->url, &u, target, sizeof(target))) < 0) {
        snprintf(f->err, sizeof(f->err), "not an http(s) address: %.200s", f->url);
        return rc;
    }
    auth[0] = '\0';
    pv = u.tls ? env_first("https_proxy", "HTTPS_PROXY") : env_first("http_proxy", "HTTP_PROXY");
    if (pv != NULL && !mote_proxy_bypass(env_first("no_proxy", "NO_PROXY"), u.host, u.port)) {
        if ((rc = mote_proxy_parse(&proxy, auth, sizeof(auth), pv)) < 0) {
            mote_proxy_error(rc, f->err, sizeof(f->err));
            return rc;
        }
        via = true;
    }
    memset(&x, 0, sizeof(x));
    x.p = p;
    x.f = f;
    x.end = p->now_ms(p->ctx) + (f->timeout_ms != 0 ? f->timeout_ms : 30000u);
    for (; f->headers != NULL && f->headers[i] != NULL && i < 20; i++)
        lines[i] = f->headers[i];
    lines[i++] = "Connection: close";
    lines[i++] = "User-Agent: mote";
    lines[i] = NULL;
    if ((rc = mote_http_write_head(head_sink, &x, f->method, u.host, u.port, u.default_port,
                                   target, lines, f->body != NULL ? (int64_t)f->body_len : -1)) < 0)
        return fail(f, rc, "the request");
    mote_dial_init(&d, u.host, u.port, u.tls, via ? &proxy : NULL, auth, &x.fd, &x.tls);
    d.peer.ca_file = f->ca_file;
    d.peer.alpn = "http/1.1";
    d.who = NULL;
    mote_http_resp_init(&r, on_body, &x);
    r.on_header = on_header;
    rc = exchange(&x, &d, &r);
    mote_dial_stop(&d, p);
    if (x.tls >= 0)
        p->tls_close(p->ctx, x.tls);
    if (x.fd >= 0)
        p->net_close(p->ctx, x.fd);
    memset(auth, 0, sizeof(auth));
    return rc;
}
