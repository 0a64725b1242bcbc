/* tserve.c - served connections for the test port (see mote_tport.h). */
#include <string.h>

#include "mote/mote_err.h"
#include "mote_tport.h"

#define LFD_UNIX 60
#define LFD_TCP 61
#define PEER_FD0 64

static struct mote_tport_peer *peer_of(struct mote_tport *tp, int fd)
{
    unsigned i;

    if (tp->serve == NULL || fd < PEER_FD0)
        return NULL;
    for (i = 0; i < MOTE_TPORT_PEERS; i++) {
        struct mote_tport_peer *p = &tp->serve->peers[i];

        if (p->used && p->accepted && !p->server_closed && p->fd == fd)
            return p;
    }
    return NULL;
}

static size_t room(const struct mote_tport_peer *p)
{
    size_t unread = p->out_len - p->out_read, cap = MOTE_TPORT_PEER_OUT - p->out_len;

    if (p->window > 0)
        cap = unread >= p->window ? 0 : (p->window - unread < cap ? p->window - unread : cap);
    return cap;
}

/* What the server's side of the peer is ready for. */
static void refresh(struct mote_tport *tp, struct mote_tport_peer *p)
{
    unsigned r = 0;

    if (!p->accepted || p->server_closed)
        return;
    if (p->in_off < p->in_len || p->client_closed || p->client_shut)
        r |= MOTE_POLL_IN;
    if (room(p) > 0 || p->client_closed)
        r |= MOTE_POLL_OUT;
    mote_tport_fd_ready(tp, p->fd, r);
}

static void listeners_ready(struct mote_tport *tp)
{
    struct mote_tport_serve *s = tp->serve;
    bool u = false, t = false;
    unsigned i;

    for (i = 0; i < s->nqueue; i++) {
        if (s->peers[s->queue[i]].tcp)
            t = true;
        else
            u = true;
    }
    mote_tport_fd_ready(tp, LFD_UNIX, u && s->unix_open ? MOTE_POLL_IN : 0);
    mote_tport_fd_ready(tp, LFD_TCP, t && s->tcp_open ? MOTE_POLL_IN : 0);
}

static int ts_listen_unix(void *ctx, const char *path)
{
    struct mote_tport *tp = ctx;

    (void)path;
    if (tp->serve->unix_open)
        return MOTE_ERR_ADDRINUSE;
    tp->serve->unix_open = true;
    tp->serve->listens++;
    return LFD_UNIX;
}

static int ts_listen_tcp(void *ctx, const struct mote_addr *a, struct mote_addr *bound)
{
    struct mote_tport *tp = ctx;

    if (tp->serve->tcp_open)
        return MOTE_ERR_ADDRINUSE;
    tp->serve->tcp_open = true;
    tp->serve->listens++;
    *bound = *a;
    if (bound->port == 0)
        bound->port = 4242;
    return LFD_TCP;
}

static int ts_accept(void *ctx, int lfd)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_serve *s = tp->serve;
    unsigned i;

    for (i = 0; i < s->nqueue; i++) {
        struct mote_tport_peer *p = &s->peers[s->queue[i]];

        if (p->tcp != (lfd == LFD_TCP))
            continue;
        memmove(&s->queue[i], &s->queue[i + 1], (s->nqueue - i - 1) * sizeof(s->queue[0]));
        s->nqueue--;
        p->accepted = true;
        refresh(tp, p);
        listeners_ready(tp);
        return p->fd;
    }
    return MOTE_ERR_AGAIN;
}

static void ts_unlisten(void *ctx, int lfd)
{
    struct mote_tport *tp = ctx;

    if (lfd == LFD_UNIX)
        tp->serve->unix_open = false;
    if (lfd == LFD_TCP)
        tp->serve->tcp_open = false;
    mote_tport_fd_ready(tp, lfd, 0);
}

static int ts_send(void *ctx, int fd, const void *buf, size_t n)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_peer *p = peer_of(tp, fd);
    size_t k, unread;

    if (p == NULL)
        return tp->serve->send != NULL ? tp->serve->send(ctx, fd, buf, n) : MOTE_ERR_BADF;
    if (p->client_closed)
        return MOTE_ERR_PIPE;
    k = room(p);
    if (k == 0) {
        refresh(tp, p);
        return MOTE_ERR_AGAIN;
    }
    if (k > n)
        k = n;
    memcpy(p->out + p->out_len, buf, k);
    p->out_len += k;
    unread = p->out_len - p->out_read;
    if (unread > p->max_unread)
        p->max_unread = unread;
    refresh(tp, p);
    return (int)k;
}

static int ts_recv(void *ctx, int fd, void *buf, size_t n)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_peer *p = peer_of(tp, fd);
    size_t k;

    if (p == NULL)
        return tp->serve->recv != NULL ? tp->serve->recv(ctx, fd, buf, n) : MOTE_ERR_BADF;
    if (p->in_off == p->in_len) {
        refresh(tp, p);
        return p->client_closed || p->client_shut ? 0 : MOTE_ERR_AGAIN;
    }
    k = p->in_len - p->in_off < n ? p->in_len - p->in_off : n;
    memcpy(buf, p->in + p->in_off, k);
    p->in_off += k;
    refresh(tp, p);
    return (int)k;
}

static void ts_close(void *ctx, int fd)
{
    struct mote_tport *tp = ctx;
    struct mote_tport_peer *p = peer_of(tp, fd);

    if (p == NULL) {
        if (tp->serve->close != NULL)
            tp->serve->close(ctx, fd);
        return;
    }
    p->server_closed = true;
    mote_tport_fd_ready(tp, fd, 0);
}

static int ts_shutdown(void *ctx, int fd)
{
    struct mote_tport_peer *p = peer_of(ctx, fd);

    if (p == NULL)
        return MOTE_ERR_BADF;
    p->server_shut = true;
    return 0;
}

void mote_tport_serve_init(struct mote_tport *tp, struct mote_tport_serve *s)
{
    /* Called again (a fresh start): the members underneath stay those of
     * the scripted sockets, never our own. */
    bool again = tp->port.net_send == ts_send && tp->serve != NULL;
    int (*snd)(void *, int, const void *, size_t) = again ? tp->serve->send : tp->port.net_send;
    int (*rcv)(void *, int, void *, size_t) = again ? tp->serve->recv : tp->port.net_recv;
    void (*cls)(void *, int) = again ? tp->serve->close : tp->port.net_close;

    memset(s, 0, sizeof(*s));
    tp->serve = s;
    s->send = snd;
    s->recv = rcv;
    s->close = cls;
    tp->port.net_send = ts_send;
    tp->port.net_recv = ts_recv;
    tp->port.net_close = ts_close;
    tp->port.net_listen_unix = ts_listen_unix;
    tp->port.net_listen_tcp = ts_listen_tcp;
    tp->port.net_accept = ts_accept;
    tp->port.net_unlisten = ts_unlisten;
    tp->port.net_shutdown = ts_shutdown;
}

int mote_tport_peer_connect(struct mote_tport *tp, bool tcp)
{
    struct mote_tport_serve *s = tp->serve;
    bool fd_used[MOTE_TPORT_FDS - PEER_FD0];
    unsigned i, k;

    if (!(tcp ? s->tcp_open : s->unix_open))
        return -1;
    memset(fd_used, 0, sizeof(fd_used));
    for (i = 0; i < MOTE_TPORT_PEERS; i++) {
        if (s->peers[i].used && !s->peers[i].server_closed)
            fd_used[s->peers[i].fd - PEER_FD0] = true;
    }
    for (i = 0; i < MOTE_TPORT_PEERS; i++) {
        struct mote_tport_peer *p = &s->peers[i];

        if (p->used && !p->server_closed)
            continue;
        for (k = 0; k < MOTE_TPORT_FDS - PEER_FD0 && fd_used[k]; k++) {
        }
        if (k == MOTE_TPORT_FDS - PEER_FD0)
            return -1;
        memset(p, 0, offsetof(struct mote_tport_peer, in));
        p->used = true;
        p->tcp = tcp;
        p->fd = PEER_FD0 + (int)k;
        s->queue[s->nqueue++] = (int)i;
        listeners_ready(tp);
        return (int)i;
    }
    return -1;
}

void mote_tport_peer_write(struct mote_tport *tp, int peer, const char *data, size_t n)
{
    struct mote_tport_peer *p = &tp->serve->peers[peer];

    if (n > MOTE_TPORT_PEER_IN - p->in_len)
        n = MOTE_TPORT_PEER_IN - p->in_len;
    memcpy(p->in + p->in_len, data, n);
    p->in_len += n;
    refresh(tp, p);
}

void mote_tport_peer_read(struct mote_tport *tp, int peer, size_t n)
{
    struct mote_tport_peer *p = &tp->serve->peers[peer];
    size_t unread = p->out_len - p->out_read;

    p->out_read += n < unread ? n : unread;
    refresh(tp, p);
}

void mote_tport_peer_close(struct mote_tport *tp, int peer)
{
    struct mote_tport_peer *p = &tp->serve->peers[peer];

    p->client_closed = true;
    refresh(tp, p);
}

void mote_tport_peer_shutdown(struct mote_tport *tp, int peer)
{
    struct mote_tport_peer *p = &tp->serve->peers[peer];

    p->client_shut = true;
    refresh(tp, p);
}

struct mote_tport_peer *mote_tport_peer_get(struct mote_tport *tp, int peer)
{
    return &tp->serve->peers[peer];
}
