/*
 * conn.c - a connection kept between model requests (struct mote_conn):
 * taken by a request when it is idle, alive and to the same origin,
 * watched while idle (the server's close is seen at once, the idle limit
 * closes it), closed on demand.
 */
#include <string.h>

#include "conn.h"
#include "mote/mote_client.h"

void mote_conn_init(struct mote_conn *k)
{
    memset(k, 0, sizeof(*k));
}

/* Closes the descriptors and forgets the idle watch and timer. */
static void shut(struct mote_conn *k)
{
    const struct mote_port *p;

    if (k->state == MOTE_CONN_CLOSED || k->loop == NULL || k->loop->port == NULL) {
        /* (a loop deinitialised first took its port: nothing to close with) */
        k->state = MOTE_CONN_CLOSED;
        return;
    }
    p = k->loop->port;
    if (k->watch != 0)
        (void)mote_watch_remove(k->loop, k->watch);
    if (k->timer != 0)
        (void)mote_timer_stop(k->loop, k->timer);
    k->watch = k->timer = 0;
    if (k->tls >= 0 && MOTE_PORT_HAS(p, tls_close))
        p->tls_close(p->ctx, k->tls);
    if (k->fd >= 0)
        p->net_close(p->ctx, k->fd);
    k->fd = k->tls = -1;
    k->requests = 0;
    k->resumed = false;
    k->drop = false;
    k->state = MOTE_CONN_CLOSED;
}

void mote_conn_close(struct mote_conn *k)
{
    if (k->state == MOTE_CONN_BUSY)
        k->drop = true; /* its request closes it when it ends */
    else
        shut(k);
}

/* Whether an idle connection whose socket is readable is still good: on
 * a plain one, anything there (the end, a reset, bytes nobody asked for)
 * ends it; through TLS it may be a record that carries no data (the
 * backend's first read can answer from what it knew, so two). */
static bool still_good(struct mote_conn *k)
{
    const struct mote_port *p = k->loop->port;
    char b;
    unsigned want;
    int i;

    if (k->tls < 0)
        return false;
    for (i = 0; i < 2; i++) {
        if (p->tls_recv(p->ctx, k->tls, &b, 1, &want) != MOTE_ERR_AGAIN)
            return false;
    }
    return true;
}

static void idle_readable(struct mote_loop *loop, mote_watch_id w, int fd, unsigned revents,
                          void *arg)
{
    struct mote_conn *k = arg;

    (void)loop, (void)w, (void)fd;
    if ((revents & MOTE_POLL_ERR) || !still_good(k))
        shut(k);
}

static void idle_expired(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_conn *k = arg;

    (void)loop, (void)t;
    k->timer = 0; /* (fired: nothing to stop) */
    shut(k);
}

/* A look without waiting: is something (the end, a reset, bytes) already
 * waiting on the idle socket? */
static bool alive(struct mote_conn *k)
{
    const struct mote_port *p = k->loop->port;
    struct mote_pollfd pf;

    pf.fd = k->fd;
    pf.events = MOTE_POLL_IN;
    pf.revents = 0;
    if (p->wait(p->ctx, &pf, 1, 0) <= 0 || pf.revents == 0)
        return true;
    return (pf.revents & MOTE_POLL_ERR) == 0 && still_good(k);
}

int mote_conn_take(struct mote_conn *k, struct mote_loop *loop, uint64_t origin)
{
    if (k->state == MOTE_CONN_BUSY)
        return MOTE_ERR_BUSY;
    if (k->state == MOTE_CONN_IDLE && (k->loop != loop || k->origin != origin || !alive(k)))
        shut(k);
    if (k->state == MOTE_CONN_IDLE) {
        if (k->watch != 0)
            (void)mote_watch_remove(loop, k->watch);
        if (k->timer != 0)
            (void)mote_timer_stop(loop, k->timer);
        k->watch = k->timer = 0;
        k->state = MOTE_CONN_BUSY;
        return 1;
    }
    k->loop = loop;
    k->origin = origin;
    k->fd = k->tls = -1;
    k->requests = 0;
    k->resumed = false;
    k->drop = false;
    k->state = MOTE_CONN_BUSY;
    return 0;
}

void mote_conn_drop(struct mote_conn *k)
{
    bool busy = k->state == MOTE_CONN_BUSY;

    shut(k);
    if (busy) {
        /* still the request's, to open again */
        k->state = MOTE_CONN_BUSY;
        k->fd = k->tls = -1;
    }
}

void mote_conn_release(struct mote_conn *k, bool keep, uint32_t idle_ms)
{
    if (k->state != MOTE_CONN_BUSY)
        return;
    if (!keep || k->drop || idle_ms == 0 || k->fd < 0 ||
        mote_watch_add(k->loop, k->fd, MOTE_POLL_IN, idle_readable, k, 0, &k->watch) < 0 ||
        mote_timer_start(k->loop, idle_ms, idle_expired, k, 0, &k->timer) < 0) {
        shut(k);
        return;
    }
    k->state = MOTE_CONN_IDLE;
}
