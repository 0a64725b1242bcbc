/* tnet.c - scripted sockets for the test port (see mote_tport.h). */
#include <string.h>

#include "mote/mote_err.h"
#include "mote_tport.h"

#define RESOLVE_FD 46
#define CONN_FD0 48

static struct mote_tport_conn *conn_of(struct mote_tport *tp, int fd)
{
    unsigned i;

    for (i = 0; tp->net != NULL && i < MOTE_TPORT_CONNS; i++) {
        if (tp->net->conns[i].used && tp->net->conns[i].fd == fd)
            return &tp->net->conns[i];
    }
    return NULL;
}

static int tn_resolve(void *ctx, const char *host, uint16_t port, int *wait_fd)
{
    (void)host, (void)port;
    *wait_fd = RESOLVE_FD;
    mote_tport_fd_ready(ctx, RESOLVE_FD, MOTE_POLL_IN);
    return 0;
}

static int tn_resolve_result(void *ctx, int req, struct mote_addr *out, unsigned max)
{
    (void)ctx, (void)req;
    if (max == 0)
        return MOTE_ERR_INVAL;
    memset(out, 0, sizeof(*out));
    out->family = 4;
    out->port = 80;
    out->addr[0] = 127;
    out->addr[3] = 1;
    return 1;
}

static void tn_resolve_end(void *ctx, int req)
{
    (void)req;
    mote_tport_fd_ready(ctx, RESOLVE_FD, 0);
}

static int tn_connect(void *ctx, const struct mote_addr *a)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_net *n = tp->net;
    unsigned i;

    (void)a;
    if (n->next >= n->n)
        return MOTE_ERR_CONNREFUSED;
    for (i = 0; i < MOTE_TPORT_CONNS; i++) {
        struct mote_tport_conn *c = &n->conns[i];

        if (c->used)
            continue;
        memset(c, 0, sizeof(*c));
        c->used = true;
        c->fd = CONN_FD0 + (int)i;
        c->index = n->next++;
        n->connects++;
        mote_tport_fd_ready(tp, c->fd, MOTE_POLL_OUT);
        return c->fd;
    }
    return MOTE_ERR_FULL;
}

static int tn_connect_done(void *ctx, int fd)
{
    return conn_of(ctx, fd) != NULL ? 0 : MOTE_ERR_BADF;
}

static int tn_send(void *ctx, int fd, const void *buf, size_t len)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_conn *c = conn_of(tp, fd);
    size_t take;

    if (c == NULL)
        return MOTE_ERR_BADF;
    take = MOTE_TPORT_SENT_MAX - 1 - c->sent_len;
    if (take > len)
        take = len;
    memcpy(c->sent + c->sent_len, buf, take);
    c->sent_len += take;
    c->sent[c->sent_len] = '\0';
    if (c->index < 16) {
        memcpy(tp->net->requests[c->index], c->sent, c->sent_len + 1);
        if (c->index + 1 > tp->net->nrequests)
            tp->net->nrequests = c->index + 1;
    }
    /* Readable once the request is in: the answer may come. */
    mote_tport_fd_ready(tp, fd, MOTE_POLL_OUT | MOTE_POLL_IN);
    return (int)len;
}

static int tn_recv(void *ctx, int fd, void *buf, size_t len)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_conn *c = conn_of(tp, fd);
    const struct mote_tport_resp *r;
    size_t left, take;

    if (c == NULL)
        return MOTE_ERR_BADF;
    r = &tp->net->script[c->index];
    left = r->len - c->off;
    if (left == 0) {
        if (r->stall) {
            mote_tport_fd_ready(tp, fd, MOTE_POLL_OUT);
            return MOTE_ERR_AGAIN;
        }
        return 0;
    }
    if (c->last_wait == tp->waits && c->off > 0 && !r->flood)
        return MOTE_ERR_AGAIN; /* one read per turn: the next after a wait */
    c->last_wait = tp->waits;
    take = r->chunk > 0 && r->chunk < left ? r->chunk : left;
    if (take > len)
        take = len;
    memcpy(buf, r->bytes + c->off, take);
    c->off += take;
    if (c->off == r->len && r->stall)
        mote_tport_fd_ready(tp, fd, MOTE_POLL_OUT);
    return (int)take;
}

static void tn_close(void *ctx, int fd)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_conn *c = conn_of(tp, fd);

    if (c != NULL)
        c->used = false;
    mote_tport_fd_ready(tp, fd, 0);
}

void mote_tport_net_init(struct mote_tport *tp, struct mote_tport_net *net,
                         const struct mote_tport_resp *script, unsigned n)
{
    memset(net, 0, sizeof(*net));
    net->script = script;
    net->n = n;
    tp->net = net;
    tp->port.net_resolve = tn_resolve;
    tp->port.net_resolve_result = tn_resolve_result;
    tp->port.net_resolve_end = tn_resolve_end;
    tp->port.net_connect = tn_connect;
    tp->port.net_connect_done = tn_connect_done;
    tp->port.net_send = tn_send;
    tp->port.net_recv = tn_recv;
    tp->port.net_close = tn_close;
}
