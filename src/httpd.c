/*
 * httpd.c - the HTTP/1.1 server engine (httpd.h): listeners, accepting and
 * refusing connections, each connection's state machine, and deadlines.
 *
 * Each connection is driven by its fd watch: reading a head (mote_hreq),
 * reading a body, responding, lingering. A response is a head and a body
 * in the connection's out buffer (and a pool buffer), or a stream the
 * handler refills whenever the buffer drains. One timer serves every
 * deadline, and the closing's passes over the connections.
 */
#include <string.h>

#include "httpd.h"
#include "util.h"

/* Accepts per listener readiness (bounded work per loop turn). */
#define ACCEPTS_PER_TURN 16
/* Refills of a stream per readiness. */
#define PUMPS_PER_TURN 8
/* Steps per readiness (a head, a body, a response: three per request),
 * so that pipelined requests cannot keep the loop from the others. */
#define STEPS_PER_TURN 8
/* How long a listener rests after a failed accept, ms. */
#define ACCEPT_REST_MS 250u

static void schedule(struct mote_httpd *h);

static uint32_t now_ms(const struct mote_httpd *h)
{
    return mote_loop_now(h->loop);
}

static bool has_output(const struct mote_httpd_conn *c)
{
    return c->out_off < c->out_len || c->pool_off < c->pool_len;
}

/* Which readiness the connection waits for. */
static void conn_watch(struct mote_httpd *h, struct mote_httpd_conn *c, bool poke)
{
    unsigned ev = 0;

    if (c->state == MOTE_HTTPD_FREE)
        return;
    if (has_output(c) || poke || c->again)
        ev |= MOTE_POLL_OUT;
    if (!c->peer_eof && (c->state != MOTE_HTTPD_RESP || c->lasting ||
                         c->in_len < sizeof(c->io->in)))
        ev |= MOTE_POLL_IN;
    (void)mote_watch_set(h->loop, c->watch, ev);
}

void mote_httpd_poke(struct mote_httpd *h, struct mote_httpd_conn *c)
{
    conn_watch(h, c, true);
}

static void conn_kill(struct mote_httpd *h, struct mote_httpd_conn *c)
{
    const struct mote_port *p = h->port;

    if (c->state == MOTE_HTTPD_FREE)
        return;
    if (c->watch != 0)
        (void)mote_watch_remove(h->loop, c->watch);
    c->watch = 0;
    if (c->fd >= 0)
        p->net_close(p->ctx, c->fd);
    c->fd = -1;
    h->conf.handler->done(h->conf.app, c);
    mote_httpd_pool_put(c);
    c->state = MOTE_HTTPD_FREE;
    MOTE_ASSERT(h->nconns > 0 && (c->listener == 0 || h->ntcp > 0));
    h->nconns--;
    if (c->listener == 1)
        h->ntcp--;
    if (h->closing)
        h->settle = true;
}

/* Ready for the next request on the same connection. */
static void next_request(struct mote_httpd *h, struct mote_httpd_conn *c)
{
    h->conf.handler->done(h->conf.app, c);
    if (c->kept_len > 0 && c->pool < 0) {
        /* a deferred request's body, kept until it was answered */
        memmove(c->io->in, c->io->in + c->kept_len, c->in_len - c->kept_len);
        c->in_len -= c->kept_len;
    }
    c->kept_len = 0;
    mote_httpd_pool_put(c);
    mote_hreq_reset(&c->io->req);
    c->streaming = c->lasting = c->chunked = c->ended = c->deferred = c->pings =
        c->body_chunked = false;
    c->out_len = c->out_off = 0;
    c->head_started = false;
    c->state = MOTE_HTTPD_HEAD;
    c->deadline = now_ms(h) + h->conf.idle_timeout_ms;
}

static bool response_done(const struct mote_httpd_conn *c)
{
    return !has_output(c) && (!c->streaming || c->ended);
}

/* An event stream's peer must read some of what waits for it within the
 * send timeout. The socket's buffer would hide a peer that reads nothing
 * until it is full, which a quiet stream takes long to fill: the port
 * tells how much is unread (on Linux the memory it takes, which only our
 * sends raise and only the peer's reads lower). `sent`: just after a send
 * (else: a look before a send, or at the deadline). */
static void look_unread(struct mote_httpd *h, struct mote_httpd_conn *c, bool sent, uint32_t now)
{
    const struct mote_port *p = h->port;
    int u;

    if (!c->lasting || (!sent && !c->probing) || !MOTE_PORT_HAS(p, net_unread))
        return;
    u = p->net_unread(p->ctx, c->fd);
    if (u <= 0) {
        c->probing = false; /* all read (or the port cannot tell now) */
        return;
    }
    if (!c->probing) {
        c->probing = true;
        c->read_at = now; /* waiting from now */
    } else if (!sent && (uint32_t)u < c->unread_last) {
        c->read_at = now; /* it read some */
    }
    c->unread_last = (uint32_t)u;
}

/* True if an event stream's peer has read nothing of what waits for it
 * for the send timeout (looked at again now). */
static bool reads_nothing(struct mote_httpd *h, struct mote_httpd_conn *c, uint32_t now)
{
    if (!c->probing || mote_before(now, c->read_at + h->conf.send_timeout_ms))
        return false;
    look_unread(h, c, false, now);
    return c->probing && !mote_before(now, c->read_at + h->conf.send_timeout_ms);
}

/* Sends what is pending; has streams refilled. Returns false if it
 * closed the connection. */
static bool flush(struct mote_httpd *h, struct mote_httpd_conn *c)
{
    const struct mote_port *p = h->port;
    unsigned refills = 0;

    c->again = false;
    for (;;) {
        const char *buf;
        size_t len;
        int n;

        MOTE_ASSERT(c->out_off <= c->out_len && c->pool_off <= c->pool_len);
        if (c->out_off < c->out_len) {
            buf = c->io->out + c->out_off;
            len = c->out_len - c->out_off;
        } else if (c->pool_off < c->pool_len) {
            buf = h->pool[c->pool] + c->pool_off;
            len = c->pool_len - c->pool_off;
        } else {
            c->out_off = c->out_len = 0;
            if (c->pool_len > 0)
                mote_httpd_pool_put(c); /* its body is out */
            if (!c->streaming || c->ended)
                return true;
            if (refills++ >= PUMPS_PER_TURN) {
                c->again = true; /* more next turn: others get theirs first */
                return true;
            }
            if (h->conf.handler->fill(h->conf.app, c))
                continue;
            return true;
        }
        look_unread(h, c, false, now_ms(h));
        n = p->net_send(p->ctx, c->fd, buf, len);
        if (n == MOTE_ERR_AGAIN)
            return true;
        if (n <= 0) {
            conn_kill(h, c);
            return false;
        }
        c->last_io = now_ms(h);
        look_unread(h, c, true, c->last_io);
        if (c->out_off < c->out_len) {
            c->out_off += (size_t)n;
            if (c->out_off == c->out_len)
                c->out_off = c->out_len = 0;
        } else {
            c->pool_off += (size_t)n;
        }
        if ((size_t)n < len)
            return true; /* the socket is full: wait for it */
    }
}

/* One read: into the head/body buffers, or discarded while lingering. */
static void conn_read(struct mote_httpd *h, struct mote_httpd_conn *c)
{
    const struct mote_port *p = h->port;
    char sink[512];
    char *dst;
    size_t room;
    int n;

    if (c->state == MOTE_HTTPD_LINGER || (c->state == MOTE_HTTPD_RESP && c->lasting)) {
        dst = sink;
        room = sizeof(sink);
    } else if (c->state == MOTE_HTTPD_BODY && c->pool >= 0 && !c->body_chunked) {
        dst = h->pool[c->pool] + c->body_got;
        room = (size_t)(c->body_len - c->body_got);
    } else {
        dst = c->io->in + c->in_len;
        room = sizeof(c->io->in) - c->in_len;
    }
    if (room == 0)
        return;
    n = p->net_recv(p->ctx, c->fd, dst, room);
    if (n == MOTE_ERR_AGAIN)
        return;
    if (n <= 0) {
        c->peer_eof = true;
        /* A client that closed its sending side after asking still gets
         * its answers (every request it sent, in order); one gone before
         * it asked anything whole, or from a lasting stream, gets nothing
         * more. */
        if (n < 0 || c->lasting || c->state == MOTE_HTTPD_LINGER ||
            (c->state != MOTE_HTTPD_RESP && !c->head_started && c->in_len == 0))
            conn_kill(h, c);
        return;
    }
    if (dst == sink)
        return;
    if (dst == c->io->in + c->in_len)
        c->in_len += (size_t)n;
    else
        c->body_got += (uint64_t)n;
}

/* The head is in: the handler refuses it, or the body is read. */
static void head_in(struct mote_httpd *h, struct mote_httpd_conn *c)
{
    const struct mote_hreq *req = &c->io->req;
    uint64_t cl = req->has_length ? req->content_length : 0;
    bool keep = req->keep_alive && !h->closing && cl <= MOTE_SERVE_BODY_MAX;

    /* A refusal now leaves the body unread: the connection closes after it. */
    c->keep_alive = keep && cl == 0 && !req->chunked;
    h->conf.handler->head(h->conf.app, c);
    if (c->state != MOTE_HTTPD_HEAD)
        return; /* refused */
    c->keep_alive = keep;
    if (req->chunked) {
        /* its length is known at its end: decoded into a pool buffer */
        if (mote_httpd_pool_take(c) == NULL) {
            c->keep_alive = false;
            mote_httpd_error(c, 503, "busy", "no buffer free for a chunked body: try again",
                             "Retry-After: 1\r\n");
            return;
        }
        c->body_chunked = true;
        c->body_len = UINT64_MAX;
        c->body_got = 0;
        if (req->expect_continue)
            (void)mote_httpd_outs(c, "HTTP/1.1 100 Continue\r\n\r\n");
        c->state = MOTE_HTTPD_BODY;
        c->deadline = now_ms(h) + h->conf.body_timeout_ms;
        return;
    }
    if (cl > MOTE_SERVE_BODY_MAX) {
        mote_httpd_error(c, 413, "too_large", "the body is larger than MOTE_SERVE_BODY_MAX", NULL);
        return;
    }
    c->body_len = cl;
    c->body_got = 0;
    if (cl > sizeof(c->io->in)) {
        char *buf = mote_httpd_pool_take(c);
        size_t take;

        if (buf == NULL) {
            mote_httpd_error(c, 503, "busy", "no buffer free for a large body: try again",
                             "Retry-After: 1\r\n");
            return;
        }
        take = c->in_len < cl ? c->in_len : (size_t)cl;
        memcpy(buf, c->io->in, take);
        memmove(c->io->in, c->io->in + take, c->in_len - take);
        c->in_len -= take;
        c->body_got = take;
    }
    if (cl > 0 && req->expect_continue)
        (void)mote_httpd_outs(c, "HTTP/1.1 100 Continue\r\n\r\n");
    c->state = MOTE_HTTPD_BODY;
    c->deadline = now_ms(h) + h->conf.body_timeout_ms;
}

/* Decodes what came of a chunked body into the pool buffer. Returns
 * false if the body was refused (the answer is under way). */
static bool chunks_in(struct mote_httpd_conn *c)
{
    struct mote_hreq *req = &c->io->req;
    size_t used = 0, made = 0;
    int rc = mote_hreq_body(req, c->io->in, c->in_len, &used,
                            c->h->pool[c->pool] + c->body_got,
                            MOTE_SERVE_BODY_MAX - (size_t)c->body_got, &made);

    memmove(c->io->in, c->io->in + used, c->in_len - used);
    c->in_len -= used;
    c->body_got += made;
    if (rc == MOTE_HREQ_BAD) {
        c->keep_alive = false; /* where the body ends is not known */
        c->body_chunked = false;
        c->body_len = 0;
        mote_httpd_error(c, req->status, req->status == 413 ? "too_large" : "bad_request",
                         req->why, NULL);
        return false;
    }
    if (rc == MOTE_HREQ_DONE)
        c->body_len = c->body_got;
    return true;
}

static bool body_complete(const struct mote_httpd_conn *c)
{
    return c->pool >= 0 ? c->body_got >= c->body_len : c->in_len >= c->body_len;
}

/* The whole request is in: the handler answers it. The body's buffer is
 * held until the handler returns (the body is valid during the call), or
 * until a request it deferred is answered (mote_httpd_body). */
static void request_in(struct mote_httpd *h, struct mote_httpd_conn *c)
{
    bool pooled = c->pool >= 0;
    size_t len = (size_t)c->body_len;

    MOTE_ASSERT(pooled || c->body_len <= c->in_len);
    h->conf.handler->request(h->conf.app, c, pooled ? h->pool[c->pool] : c->io->in, len);
    if (c->deferred && len > 0) {
        c->kept_len = len; /* consumed once answered (next_request) */
        c->body_len = 0;
        return;
    }
    if (pooled && c->pool_len == 0)
        mote_httpd_pool_put(c); /* not taken for the response */
    if (!pooled) {
        /* the body is consumed: what follows is the next request */
        memmove(c->io->in, c->io->in + len, c->in_len - len);
        c->in_len -= len;
    }
    c->body_len = 0;
}

/* The response is out and no other request may follow. */
static void conn_end(struct mote_httpd *h, struct mote_httpd_conn *c)
{
    if (c->peer_eof || c->lasting) {
        conn_kill(h, c);
        return;
    }
    /* End our side at once (the client sees the end of input now), and
     * read what it may still send for a moment, so that its unread bytes
     * do not make the close a reset that could destroy the answer. */
    if (MOTE_PORT_HAS(h->port, net_shutdown))
        (void)h->port->net_shutdown(h->port->ctx, c->fd);
    c->state = MOTE_HTTPD_LINGER;
    c->deadline = now_ms(h) + h->conf.flush_ms;
}

static void conn_advance(struct mote_httpd *h, struct mote_httpd_conn *c)
{
    unsigned rounds = 0;

    while (c->state != MOTE_HTTPD_FREE) {
        if (rounds++ >= STEPS_PER_TURN) {
            /* more next turn: the watch asks for writability, which a
             * socket with room has at once (its input may never come
             * again: pipelined requests already read) */
            c->again = true;
            break;
        }
        if (c->state == MOTE_HTTPD_HEAD) {
            size_t used = 0;
            int rc;

            if (c->in_len == 0) {
                if (c->peer_eof) {
                    conn_kill(h, c); /* every request answered, no more to come */
                    return;
                }
                break;
            }
            if (!c->head_started) {
                c->head_started = true;
                c->deadline = now_ms(h) + h->conf.header_timeout_ms;
            }
            rc = mote_hreq_feed(&c->io->req, c->io->in, c->in_len, &used);
            memmove(c->io->in, c->io->in + used, c->in_len - used);
            c->in_len -= used;
            if (rc == MOTE_HREQ_READING) {
                if (c->peer_eof) {
                    conn_kill(h, c); /* a head that can no longer end */
                    return;
                }
                break;
            }
            if (rc == MOTE_HREQ_BAD) {
                c->keep_alive = false;
                mote_httpd_error(c, c->io->req.status, "bad_request", c->io->req.why, NULL);
                continue;
            }
            head_in(h, c);
            continue;
        }
        if (c->state == MOTE_HTTPD_BODY) {
            if (c->body_chunked && c->in_len > 0 && !body_complete(c) && !chunks_in(c))
                continue; /* refused */
            if (!body_complete(c)) {
                if (c->peer_eof) {
                    conn_kill(h, c); /* a body that can no longer come */
                    return;
                }
                if (c->out_len > 0 && !flush(h, c))
                    return; /* the 100 Continue */
                break;
            }
            request_in(h, c);
            continue;
        }
        if (c->state == MOTE_HTTPD_RESP) {
            if (!flush(h, c))
                return;
            if (!response_done(c))
                break;
            if (c->lasting || !c->keep_alive || (c->peer_eof && c->in_len == 0)) {
                conn_end(h, c);
                if (c->state == MOTE_HTTPD_FREE)
                    return;
                break;
            }
            next_request(h, c);
            continue;
        }
        break;
    }
    conn_watch(h, c, false);
}

static void on_conn(struct mote_loop *loop, mote_watch_id w, int fd, unsigned revents, void *arg)
{
    struct mote_httpd_conn *c = arg;
    struct mote_httpd *h = c->h;

    (void)loop, (void)w, (void)fd;
    if (c->state == MOTE_HTTPD_FREE)
        return;
    if ((revents & (MOTE_POLL_IN | MOTE_POLL_ERR)) != 0) {
        conn_read(h, c);
        if (c->state == MOTE_HTTPD_FREE) {
            schedule(h);
            return;
        }
    }
    conn_advance(h, c);
    schedule(h);
}

/* ---- listeners ------------------------------------------------------------- */

/* Past a connection cap (or closing): one 503 sent as it can go, then
 * closed. */
static void refuse(struct mote_httpd *h, int fd, const char *code, const char *why)
{
    const struct mote_port *p = h->port;
    char msg[480], body[240];
    struct mote_sb sb, bb;

    mote_sb_init(&bb, body, sizeof(body));
    mote_sb_s(&bb, "{\"error\":\"");
    mote_sb_s(&bb, code);
    mote_sb_s(&bb, "\",\"message\":\"");
    mote_sb_s(&bb, why);
    mote_sb_s(&bb, "\"}\n");
    mote_sb_init(&sb, msg, sizeof(msg));
    mote_sb_s(&sb, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                   "Retry-After: 1\r\nConnection: close\r\nContent-Length: ");
    mote_sb_u(&sb, bb.len);
    mote_sb_s(&sb, "\r\n\r\n");
    mote_sb_s(&sb, body);
    (void)p->net_send(p->ctx, fd, msg, sb.len);
    p->net_close(p->ctx, fd);
    h->refused++;
}

/* A connection slot for `fd`, or a refusal. */
static void take(struct mote_httpd *h, int fd, uint8_t which)
{
    struct mote_httpd_conn *c = NULL;
    unsigned i;

    if (h->closing) {
        refuse(h, fd, "shutting_down", "mote is shutting down");
        return;
    }
    if (which == 1 && h->ntcp >= MOTE_SERVE_TCP_CONNS) {
        /* the rest is kept for the Unix socket */
        refuse(h, fd, "too_many_connections",
               "the TCP connection limit (MOTE_SERVE_TCP_CONNS) is reached: try again");
        return;
    }
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        if (h->conns[i].state == MOTE_HTTPD_FREE) {
            c = &h->conns[i];
            break;
        }
    }
    if (c == NULL) {
        refuse(h, fd, "too_many_connections",
               "the connection limit (MOTE_SERVE_MAX_CONNS) is reached: try again");
        return;
    }
    memset(c, 0, offsetof(struct mote_httpd_conn, io));
    c->io = &h->io[i];
    c->h = h;
    c->fd = fd;
    c->pool = -1;
    c->listener = which;
    if (mote_watch_add(h->loop, fd, MOTE_POLL_IN, on_conn, c, 0, &c->watch) < 0) {
        refuse(h, fd, "too_many_connections",
               "every loop watch is taken (MOTE_MAX_WATCHES): try again");
        return;
    }
    h->nconns++;
    h->ntcp += which;
    c->state = MOTE_HTTPD_HEAD;
    mote_hreq_reset(&c->io->req);
    /* The head's deadline, not the idle one's: a connection that never
     * asks anything holds its slot only that long. */
    c->deadline = now_ms(h) + h->conf.header_timeout_ms;
}

static void on_listen(struct mote_loop *loop, mote_watch_id w, int lfd, unsigned revents,
                      void *arg)
{
    struct mote_httpd *h = arg;
    const struct mote_port *p = h->port;
    uint8_t which = lfd == h->lfd[1] ? 1 : 0;
    unsigned k;

    (void)loop, (void)revents;
    for (k = 0; k < ACCEPTS_PER_TURN; k++) {
        int fd = p->net_accept(p->ctx, lfd);

        if (fd >= 0 && h->accept_fails > 0) {
            char n[24];

            n[mote_u64_dec(h->accept_fails, n)] = '\0';
            mote_httpd_say(h, "accepting connections again (after ", n, " failed tries)");
            h->accept_fails = 0;
        }
        if (fd == MOTE_ERR_AGAIN)
            break;
        if (fd < 0) {
            /* Out of descriptors, say: the listener would stay readable and
             * the loop spin. It rests a moment, and says so once, not at
             * every try. */
            if (h->accept_fails++ == 0)
                mote_httpd_say(h, "cannot accept a connection: ", mote_strerror(fd),
                               "; trying again every 250 ms");
            (void)mote_watch_set(h->loop, w, 0);
            h->paused |= (uint8_t)(1u << which);
            h->pause_until = now_ms(h) + ACCEPT_REST_MS;
            break;
        }
        take(h, fd, which);
    }
    schedule(h);
}

static void unlisten_all(struct mote_httpd *h)
{
    const struct mote_port *p = h->port;
    unsigned i;

    for (i = 0; i < 2; i++) {
        if (h->lfd[i] < 0)
            continue;
        if (h->lwatch[i] != 0)
            (void)mote_watch_remove(h->loop, h->lwatch[i]);
        h->lwatch[i] = 0;
        p->net_unlisten(p->ctx, h->lfd[i]);
        h->lfd[i] = -1;
    }
}

/* "127.0.0.1:PORT", "localhost:PORT", "[::1]:PORT": loopback only. */
static int parse_listen(const char *s, struct mote_addr *a)
{
    const char *colon;
    uint64_t port = 0;
    size_t i;

    memset(a, 0, sizeof(*a));
    if (strncmp(s, "[::1]:", 6) == 0) {
        a->family = 6;
        a->addr[15] = 1;
        colon = s + 5;
    } else if (strncmp(s, "localhost:", 10) == 0) {
        a->family = 4;
        a->addr[0] = 127;
        a->addr[3] = 1;
        colon = s + 9;
    } else {
        unsigned part = 0, val = 0, digits = 0;

        for (i = 0; s[i] != '\0' && s[i] != ':'; i++) {
            if (s[i] == '.') {
                if (digits == 0 || part >= 3)
                    return MOTE_ERR_INVAL;
                a->addr[part++] = (uint8_t)val;
                val = digits = 0;
            } else if (s[i] >= '0' && s[i] <= '9' && digits < 3) {
                val = val * 10 + (unsigned)(s[i] - '0');
                digits++;
                if (val > 255)
                    return MOTE_ERR_INVAL;
            } else {
                return MOTE_ERR_INVAL;
            }
        }
        if (s[i] != ':' || part != 3 || digits == 0)
            return MOTE_ERR_INVAL;
        a->addr[3] = (uint8_t)val;
        a->family = 4;
        if (a->addr[0] != 127)
            return MOTE_ERR_INVAL; /* loopback only: 127.0.0.0/8 */
        colon = s + i;
    }
    if (mote_dec_parse(colon + 1, strlen(colon + 1), &port) < 0 || port > 65535)
        return MOTE_ERR_INVAL;
    a->port = (uint16_t)port;
    return 0;
}

int mote_httpd_listen(struct mote_httpd *h, const char *unix_path, const char *tcp)
{
    const struct mote_port *p = h->port;
    int fd;

    if (unix_path != NULL && h->lfd[0] < 0) {
        fd = p->net_listen_unix(p->ctx, unix_path);
        if (fd < 0)
            return fd;
        if (mote_watch_add(h->loop, fd, MOTE_POLL_IN, on_listen, h, 0, &h->lwatch[0]) < 0) {
            p->net_unlisten(p->ctx, fd);
            return MOTE_ERR_FULL;
        }
        h->lfd[0] = fd;
    }
    if (tcp != NULL && h->lfd[1] < 0) {
        struct mote_addr a, bound;

        if (parse_listen(tcp, &a) < 0)
            return MOTE_ERR_INVAL;
        fd = p->net_listen_tcp(p->ctx, &a, &bound);
        if (fd < 0)
            return fd;
        if (mote_watch_add(h->loop, fd, MOTE_POLL_IN, on_listen, h, 0, &h->lwatch[1]) < 0) {
            p->net_unlisten(p->ctx, fd);
            return MOTE_ERR_FULL;
        }
        h->lfd[1] = fd;
        h->tcp_port = bound.port;
    }
    return 0;
}

/* ---- deadlines and the closing --------------------------------------------- */

/* When the connection needs the timer (false: it does not). */
static bool conn_due(const struct mote_httpd *h, const struct mote_httpd_conn *c, uint32_t *due)
{
    switch (c->state) {
    case MOTE_HTTPD_HEAD:
    case MOTE_HTTPD_BODY:
    case MOTE_HTTPD_LINGER:
        *due = c->deadline;
        return true;
    case MOTE_HTTPD_RESP:
        if (has_output(c)) {
            *due = c->last_io + h->conf.send_timeout_ms;
            return true;
        }
        if (c->streaming && (c->lasting || (c->pings && !c->deferred && !c->ended))) {
            *due = c->last_io + h->conf.ping_ms;
            if (c->probing && mote_before(c->read_at + h->conf.send_timeout_ms, *due))
                *due = c->read_at + h->conf.send_timeout_ms;
            return true;
        }
        return false;
    default:
        return false;
    }
}

static void on_timer(struct mote_loop *loop, mote_timer_id t, void *arg);

static void schedule(struct mote_httpd *h)
{
    uint32_t now = now_ms(h), due = 0, d;
    bool any = false;
    unsigned i;

    if (h->closed)
        return;
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        if (h->conns[i].state != MOTE_HTTPD_FREE && conn_due(h, &h->conns[i], &d) &&
            (!any || mote_before(d, due))) {
            due = d;
            any = true;
        }
    }
    if (h->paused != 0 && (!any || mote_before(h->pause_until, due))) {
        due = h->pause_until;
        any = true;
    }
    if (h->closing) {
        d = h->settle ? now : h->close_until;
        if (!any || mote_before(d, due))
            due = d;
        any = true;
    }
    if (h->timer != 0 && any && h->timer_due == due)
        return;
    if (h->timer != 0)
        (void)mote_timer_stop(h->loop, h->timer);
    h->timer = 0;
    if (!any)
        return;
    h->timer_due = due;
    if (mote_timer_start(h->loop, mote_before(now, due) ? due - now : 0u, on_timer, h, 0,
                         &h->timer) < 0)
        h->timer = 0; /* no timer free: the next event reschedules */
}

/* Closing: connections between requests close, responses under way are
 * finished (streams to their end) until close_until, then everything
 * closes. Returns true once nothing is left. */
static bool close_pass(struct mote_httpd *h, uint32_t now)
{
    bool late = !mote_before(now, h->close_until);
    unsigned i;

    h->settle = false;
    unlisten_all(h);
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        struct mote_httpd_conn *c = &h->conns[i];

        if (c->state == MOTE_HTTPD_FREE)
            continue;
        if (late || c->state != MOTE_HTTPD_RESP) {
            conn_kill(h, c);
            continue;
        }
        c->keep_alive = false;
        conn_advance(h, c);
    }
    if (h->nconns > 0)
        return false;
    h->closed = true;
    if (h->timer != 0)
        (void)mote_timer_stop(h->loop, h->timer);
    h->timer = 0;
    return true;
}

static void on_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_httpd *h = arg;
    uint32_t now = mote_loop_now(loop), due;
    unsigned i;

    (void)t;
    h->timer = 0;
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        struct mote_httpd_conn *c = &h->conns[i];

        if (c->state == MOTE_HTTPD_FREE || !conn_due(h, c, &due) || mote_before(now, due))
            continue;
        if (c->state == MOTE_HTTPD_HEAD && !c->head_started) {
            conn_kill(h, c); /* idle: nothing asked, nothing to say */
        } else if (c->state == MOTE_HTTPD_HEAD || c->state == MOTE_HTTPD_BODY) {
            mote_httpd_pool_put(c);
            c->keep_alive = false;
            mote_httpd_error(c, 408, "timeout",
                             c->state == MOTE_HTTPD_HEAD ? "the request head did not arrive in time"
                                                         : "the request body did not arrive in time",
                             NULL);
            conn_advance(h, c);
        } else if (c->state == MOTE_HTTPD_LINGER) {
            conn_kill(h, c);
        } else if (has_output(c)) {
            mote_httpd_say(h, "dropped a client that does not read its response", NULL, NULL);
            conn_kill(h, c);
        } else if (reads_nothing(h, c, now)) {
            mote_httpd_say(h, "dropped a client that does not read its events", NULL, NULL);
            conn_kill(h, c);
        } else if (!mote_before(now, c->last_io + h->conf.ping_ms)) {
            h->conf.handler->ping(h->conf.app, c);
            c->last_io = now;
            conn_advance(h, c);
        }
    }
    if (h->paused != 0 && !mote_before(now, h->pause_until)) {
        for (i = 0; i < 2; i++) {
            if ((h->paused & (1u << i)) != 0 && h->lwatch[i] != 0)
                (void)mote_watch_set(h->loop, h->lwatch[i], MOTE_POLL_IN);
        }
        h->paused = 0;
    }
    if (h->closing && (h->settle || !mote_before(now, h->close_until)) && close_pass(h, now)) {
        h->conf.handler->closed(h->conf.app);
        return;
    }
    schedule(h);
}

void mote_httpd_close(struct mote_httpd *h, uint32_t until)
{
    if (h->closed)
        return;
    h->closing = true;
    h->settle = true;
    h->close_until = until;
    schedule(h);
}

/* ---- the engine ------------------------------------------------------------ */

void mote_httpd_init(struct mote_httpd *h, struct mote_loop *loop,
                     const struct mote_httpd_conf *conf)
{
    unsigned i;

    MOTE_ASSERT(conf->handler != NULL && conf->name != NULL);
    /* Only the small fields: the buffers are used as needed (untouched
     * memory does not count in RSS). */
    memset(h, 0, offsetof(struct mote_httpd, pool));
    h->loop = loop;
    h->port = loop->port;
    h->conf = *conf;
    h->lfd[0] = h->lfd[1] = -1;
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        h->conns[i].fd = h->conns[i].pool = -1;
        h->conns[i].h = h;
        h->conns[i].io = &h->io[i];
    }
}

void mote_httpd_deinit(struct mote_httpd *h)
{
    unsigned i;

    if (h->loop == NULL)
        return; /* never set up */
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++)
        conn_kill(h, &h->conns[i]);
    unlisten_all(h);
    if (h->timer != 0)
        (void)mote_timer_stop(h->loop, h->timer);
    h->timer = 0;
    h->closed = true;
}
