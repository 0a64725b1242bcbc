/*
 * mqtt.c - the MQTT client's connection as a loop job: resolve, connect,
 * TLS, then the session (mqtt_session.c) over the socket with keep-alive;
 * reconnects with capped exponential backoff and jitter; a clean
 * DISCONNECT on request. Never blocks; bounded work per step.
 */
#include <string.h>

#include "mote/mote_mqtt.h"
#include "util.h"

const char *mote_mqtt_phase_name(enum mote_mqtt_phase p)
{
    static const char *const names[] = {"idle",    "resolve", "connect", "TLS handshake",
                                        "MQTT",    "backoff", "done"};

    return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

static void msg(struct mote_mqtt *c, const char *a, const char *b, const char *d)
{
    (void)mote_str_join(c->errmsg, sizeof(c->errmsg), a, b, d);
}

/* "WHAT HOST:PORT" then `sep` and `why` (a message naming the broker) */
static void conn_msg(struct mote_mqtt *c, const char *what, const char *sep, const char *why)
{
    struct mote_sb sb;
    bool v6 = strchr(c->host, ':') != NULL;

    mote_sb_init(&sb, c->errmsg, sizeof(c->errmsg));
    mote_sb_s(&sb, what);
    mote_sb_s(&sb, v6 ? " [" : " ");
    mote_sb_s(&sb, c->host);
    mote_sb_s(&sb, v6 ? "]:" : ":");
    mote_sb_u(&sb, c->port);
    mote_sb_s(&sb, sep);
    mote_sb_s(&sb, why);
}

/* mqtt://HOST[:PORT] or mqtts://HOST[:PORT] (IPv6 in brackets; a "/" at
 * the end is allowed, nothing after it). */
static int parse_url(struct mote_mqtt *c, const char *url)
{
    const char *p, *h, *hend;
    size_t hn;

    if (strncmp(url, "mqtts://", 8) == 0) {
        c->tls = true;
        c->port = 8883;
        p = url + 8;
    } else if (strncmp(url, "mqtt://", 7) == 0) {
        c->tls = false;
        c->port = 1883;
        p = url + 7;
    } else {
        return MOTE_ERR_INVAL;
    }
    if (*p == '[') {
        h = p + 1;
        hend = strchr(h, ']');
        if (hend == NULL)
            return MOTE_ERR_INVAL;
        p = hend + 1;
    } else {
        h = p;
        while (*p != '\0' && *p != ':' && *p != '/')
            p++;
        hend = p;
    }
    hn = (size_t)(hend - h);
    if (hn == 0 || hn >= sizeof(c->host))
        return MOTE_ERR_INVAL;
    memcpy(c->host, h, hn);
    c->host[hn] = '\0';
    if (strpbrk(c->host, " @/?#\r\n\t") != NULL)
        return MOTE_ERR_INVAL;
    if (*p == ':') {
        uint64_t port;
        const char *ps = ++p;

        while (*p >= '0' && *p <= '9')
            p++;
        if (mote_dec_parse(ps, (size_t)(p - ps), &port) < 0 || port == 0 || port > 65535)
            return MOTE_ERR_INVAL;
        c->port = (uint16_t)port;
    }
    if (*p == '/')
        p++;
    return *p == '\0' ? 0 : MOTE_ERR_INVAL;
}

int mote_mqtt_init(struct mote_mqtt *c, const struct mote_mqtt_conf *conf, mote_mqtt_event_fn fn,
                   void *arg)
{
    int rc;

    memset(c, 0, offsetof(struct mote_mqtt, sess));
    c->conf = conf;
    c->fd = c->tlsh = -1;
    if (conf->url == NULL || parse_url(c, conf->url) < 0) {
        /* (the URL is not repeated: a user may have put a password in it) */
        msg(c, "bad broker URL: use mqtt://HOST[:PORT] or mqtts://HOST[:PORT]", NULL, NULL);
        return MOTE_ERR_CONFIG;
    }
    if ((conf->cert_file != NULL || conf->key_file != NULL) &&
        (!c->tls || conf->cert_file == NULL || conf->key_file == NULL)) {
        msg(c, "a client certificate needs its key, and an mqtts:// URL", NULL, NULL);
        return MOTE_ERR_CONFIG;
    }
    if (conf->connect_timeout_ms == 0 || conf->backoff_ms == 0 ||
        conf->backoff_max_ms < conf->backoff_ms) {
        msg(c, "the connect timeout and the backoff must be at least 1 ms, the backoff's cap "
               "at least the backoff",
            NULL, NULL);
        return MOTE_ERR_CONFIG;
    }
    rc = mote_mqtt_sess_init(&c->sess, conf, fn, arg);
    if (rc < 0)
        msg(c, c->sess.errmsg, NULL, NULL);
    return rc;
}

/* ---- the connection ---------------------------------------------------------- */

static void close_conn(struct mote_mqtt *c)
{
    const struct mote_port *p = c->loop->port;

    if (c->watch != 0)
        (void)mote_watch_remove(c->loop, c->watch);
    c->watch = 0;
    if (c->tlsh >= 0 && MOTE_PORT_HAS(p, tls_close))
        p->tls_close(p->ctx, c->tlsh);
    if (c->fd >= 0)
        p->net_close(p->ctx, c->fd);
    mote_dial_stop(&c->dial, p);
    c->tlsh = c->fd = -1;
    c->r_off = c->r_len = 0;
    c->want = 0;
}

/* Watches `fd` for `events`; none: no watch (a paused reader must not be
 * woken by a hang-up again and again; its timer still runs). */
static int watch(struct mote_mqtt *c, int fd, unsigned events)
{
    struct mote_loop *loop = c->loop;

    if (events == 0) {
        if (c->watch != 0)
            (void)mote_watch_remove(loop, c->watch);
        c->watch = 0;
        return 0;
    }
    if (c->watch != 0 && mote_watch_revents(loop, c->watch) >= 0 &&
        loop->watches[c->watch & 0xFFu].fd == fd)
        return mote_watch_set(loop, c->watch, events);
    if (c->watch != 0)
        (void)mote_watch_remove(loop, c->watch);
    c->watch = 0;
    return mote_watch_add(loop, fd, events, NULL, NULL, c->job, &c->watch);
}

static void emit_offline(struct mote_mqtt *c, int err, uint32_t retry_ms)
{
    struct mote_mqtt_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_MQTT_EV_OFFLINE;
    ev.text = c->errmsg;
    ev.err = err;
    ev.retry_ms = retry_ms;
    if (c->sess.on_event != NULL)
        (void)c->sess.on_event(c->sess.arg, &ev);
}

static void new_attempt(struct mote_mqtt *c, uint32_t now)
{
    close_conn(c);
    mote_dial_init(&c->dial, c->host, c->port, c->tls, NULL, NULL, &c->fd, &c->tlsh);
    c->dial.who = "the broker";
    c->dial.peer.ca_file = c->conf->ca_file; /* (no ALPN, no session kept) */
    c->dial.peer.cert_file = c->conf->cert_file;
    c->dial.peer.key_file = c->conf->key_file;
    c->phase = MOTE_MQTT_PH_RESOLVE;
    c->online_at = 0;
    c->was_online = false;
    c->deadline = now + c->conf->connect_timeout_ms;
    c->errmsg[0] = '\0';
}

/* The delay before the next attempt: doubled per failure in a row, capped,
 * then d/2..d (jitter: a fleet that lost its broker does not come back at
 * the same instant). */
static uint32_t backoff(struct mote_mqtt *c)
{
    uint32_t d = c->conf->backoff_ms, cap = c->conf->backoff_max_ms, r = 0, i;

    for (i = 1; i < c->fails && d < cap; i++)
        d = d > UINT32_MAX / 2 ? cap : d * 2u;
    if (d > cap)
        d = cap;
    if (MOTE_PORT_HAS(c->loop->port, random))
        (void)c->loop->port->random(c->loop->port->ctx, &r, sizeof(r));
    return d / 2u + r % (d - d / 2u + 1u);
}

/* The connection ended or the attempt failed (c->errmsg says why). */
static void lost(struct mote_mqtt *c, int err, uint32_t now)
{
    uint32_t d;

    if (c->was_online && now - c->online_at >= c->conf->backoff_max_ms)
        c->fails = 0; /* it lasted: start again from the first delay */
    c->fails++;
    close_conn(c);
    mote_mqtt_sess_lost(&c->sess);
    d = backoff(c);
    c->phase = MOTE_MQTT_PH_BACKOFF;
    c->deadline = now + d;
    c->was_online = false;
    if (c->errmsg[0] == '\0')
        msg(c, "the connection to the broker failed: ", mote_strerror(err), NULL);
    emit_offline(c, err, d);
}

static int xsend(const struct mote_port *p, struct mote_mqtt *c, const uint8_t *b, size_t n,
                 unsigned *want)
{
    *want = MOTE_POLL_OUT;
    if (c->tlsh >= 0)
        return p->tls_send(p->ctx, c->tlsh, b, n, want);
    return p->net_send(p->ctx, c->fd, b, n);
}

static int xrecv(const struct mote_port *p, struct mote_mqtt *c, unsigned *want)
{
    *want = MOTE_POLL_IN;
    if (c->tlsh >= 0)
        return p->tls_recv(p->ctx, c->tlsh, c->rbuf, sizeof(c->rbuf), want);
    return p->net_recv(p->ctx, c->fd, c->rbuf, sizeof(c->rbuf));
}

/* The session over the connection: write what it has, read and feed what
 * comes, at most MOTE_STEP_IO_BYTES of each per step. Returns 0 when the
 * session is done (DISCONNECT sent), MOTE_ERR_AGAIN to wait, or < 0 when
 * the connection must go (c->errmsg). */
static int pump(struct mote_loop *loop, mote_job_id self, struct mote_mqtt *c)
{
    const struct mote_port *p = loop->port;
    size_t wrote = 0, read = 0;
    unsigned wr_want = 0, rd_want = MOTE_POLL_IN;
    bool progress = true;
    int64_t t;
    int rc;

    while (progress) {
        uint32_t now = mote_loop_now(loop);
        uint8_t before = c->sess.state;

        progress = false;
        wr_want = 0;
        /* A message waiting for a free slot is tried again at each turn
         * (an ack that went out frees one); one the application put off
         * only when it asks (mote_mqtt_resume). */
        if (c->sess.held == MOTE_MQTT_HOLD_ROOM ||
            (c->sess.held == MOTE_MQTT_HOLD_APP && c->resume)) {
            c->resume = false;
            if ((rc = mote_mqtt_sess_resume(&c->sess, now)) < 0) {
                msg(c, c->sess.errmsg, NULL, NULL);
                return rc;
            }
            progress = !mote_mqtt_sess_paused(&c->sess);
        }
        t = mote_mqtt_sess_tick(&c->sess, now);
        if (t < 0) {
            msg(c, c->sess.errmsg, NULL, NULL);
            return (int)t;
        }
        while (wrote < MOTE_STEP_IO_BYTES) {
            const uint8_t *b;
            size_t n = mote_mqtt_sess_out(&c->sess, now, &b);

            if (n == 0)
                break;
            rc = xsend(p, c, b, n, &wr_want);
            if (rc == MOTE_ERR_AGAIN || rc == 0)
                break; /* (0: nothing taken, as "would block") */
            wr_want = 0;
            if (rc < 0) {
                conn_msg(c, "the connection to the broker", ": ", mote_strerror(rc));
                return rc;
            }
            mote_mqtt_sess_sent(&c->sess, now, (size_t)rc);
            wrote += (size_t)rc;
            progress = true;
            if (c->sess.state == MOTE_MQTT_S_DONE)
                return 0;
        }
        while (read < MOTE_STEP_IO_BYTES && !mote_mqtt_sess_paused(&c->sess)) {
            if (c->r_off < c->r_len) {
                rc = mote_mqtt_sess_feed(&c->sess, now, c->rbuf + c->r_off, c->r_len - c->r_off);
                if (rc < 0) {
                    msg(c, c->sess.errmsg, NULL, NULL);
                    return rc;
                }
                c->r_off += (uint32_t)rc;
                if (c->r_off == c->r_len)
                    c->r_off = c->r_len = 0;
                progress = progress || rc > 0;
                continue;
            }
            rc = xrecv(p, c, &rd_want);
            if (rc == MOTE_ERR_AGAIN)
                break;
            rd_want = MOTE_POLL_IN;
            if (rc == 0) {
                conn_msg(c, "the broker", " ", "closed the connection");
                return MOTE_ERR_CONNRESET;
            }
            if (rc < 0) {
                conn_msg(c, "the connection to the broker", ": ", mote_strerror(rc));
                return rc;
            }
            c->r_off = 0;
            c->r_len = (uint32_t)rc;
            read += (size_t)rc;
            progress = true;
        }
        if (before != MOTE_MQTT_S_ONLINE && c->sess.state == MOTE_MQTT_S_ONLINE) {
            c->online_at = now;
            c->was_online = true;
            c->connects++;
        }
        if (wrote >= MOTE_STEP_IO_BYTES || read >= MOTE_STEP_IO_BYTES) {
            /* Enough for one step: the loop takes signals, timers and
             * other jobs, then steps this one again at once. */
            (void)mote_job_wake(loop, self);
            break;
        }
    }
    rc = watch(c, c->fd, (mote_mqtt_sess_paused(&c->sess) ? 0u : rd_want) | wr_want);
    return rc < 0 ? rc : MOTE_ERR_AGAIN;
}

/* Runs the phases until one would block (MOTE_ERR_AGAIN), the session is
 * done (0), or the attempt or connection failed (< 0, c->errmsg). */
static int advance(struct mote_loop *loop, mote_job_id self, struct mote_mqtt *c)
{
    const struct mote_port *p = loop->port;
    int rc;

    for (;;) {
        switch (c->phase) {
        case MOTE_MQTT_PH_RESOLVE:
        case MOTE_MQTT_PH_CONNECT:
        case MOTE_MQTT_PH_HANDSHAKE:
            /* lookup, connect, TLS (dial.c) */
            rc = mote_dial_step(&c->dial, p, (char *)c->rbuf, sizeof(c->rbuf), c->errmsg,
                                sizeof(c->errmsg));
            c->phase = c->dial.phase == MOTE_DIAL_RESOLVE   ? MOTE_MQTT_PH_RESOLVE
                       : c->dial.phase == MOTE_DIAL_CONNECT ? MOTE_MQTT_PH_CONNECT
                                                            : MOTE_MQTT_PH_HANDSHAKE;
            if (rc == MOTE_ERR_AGAIN)
                return (rc = watch(c, c->dial.wait_fd, c->dial.wait_events)) < 0 ? rc
                                                                                  : MOTE_ERR_AGAIN;
            if (rc < 0)
                return rc;
            c->phase = MOTE_MQTT_PH_MQTT;
            mote_mqtt_sess_start(&c->sess, mote_loop_now(loop));
            break;
        case MOTE_MQTT_PH_MQTT:
            return pump(loop, self, c);
        default:
            return MOTE_ERR_INVAL;
        }
    }
}

static void timeout_msg(struct mote_mqtt *c)
{
    struct mote_sb sb;
    bool v6 = strchr(c->host, ':') != NULL;

    mote_sb_init(&sb, c->errmsg, sizeof(c->errmsg));
    mote_sb_s(&sb, c->phase == MOTE_MQTT_PH_MQTT ? "no CONNACK from the broker "
                                                 : "could not reach the broker ");
    mote_sb_s(&sb, v6 ? "[" : "");
    mote_sb_s(&sb, c->host);
    mote_sb_s(&sb, v6 ? "]:" : ":");
    mote_sb_u(&sb, c->port);
    if (c->phase != MOTE_MQTT_PH_MQTT) {
        mote_sb_s(&sb, " (");
        mote_sb_s(&sb, mote_mqtt_phase_name((enum mote_mqtt_phase)c->phase));
        mote_sb_s(&sb, ")");
    }
    mote_sb_s(&sb, " within ");
    mote_sb_u(&sb, c->conf->connect_timeout_ms);
    mote_sb_s(&sb, " ms");
}

/* Ends the job: the connection closed (without DISCONNECT unless the
 * session sent it), the caller told. */
static int finish(struct mote_mqtt *c, const char *why, enum mote_step how)
{
    close_conn(c);
    mote_mqtt_sess_lost(&c->sess);
    c->phase = MOTE_MQTT_PH_DONE;
    msg(c, why, NULL, NULL);
    emit_offline(c, how == MOTE_STEP_CANCELLED ? MOTE_ERR_CANCELED : 0, 0);
    return how;
}

static int mq_step(struct mote_loop *loop, mote_job_id self, void *task)
{
    struct mote_mqtt *c = task;
    uint32_t now = mote_loop_now(loop), due;
    int64_t t;
    int rc;

    c->loop = loop;
    c->job = self;
    if (mote_job_cancelled(loop, self))
        return finish(c, "stopped (cancelled): the connection closed without DISCONNECT",
                      MOTE_STEP_CANCELLED);
    if (c->phase == MOTE_MQTT_PH_IDLE) {
        unsigned need = MOTE_PORT_NET | (c->tls ? MOTE_PORT_TLS : 0u);

        if (mote_port_missing(loop->port, need) != NULL) {
            msg(c, "this port has no ", mote_port_missing(loop->port, need),
                c->tls ? " (mqtts:// needs net and TLS)" : " (mqtt:// needs the net group)");
            (void)mote_job_set_error(loop, self, c->errmsg);
            c->phase = MOTE_MQTT_PH_DONE;
            return MOTE_ERR_NOSYS;
        }
        new_attempt(c, now);
    }
    if (c->stopping) {
        if (c->phase != MOTE_MQTT_PH_MQTT || c->sess.state != MOTE_MQTT_S_ONLINE)
            return finish(c, "disconnected (not connected: no DISCONNECT sent)", MOTE_STEP_DONE);
        if (!mote_before(now, c->stop_deadline))
            return finish(c, "the clean disconnect did not complete in time: the connection "
                             "closed without DISCONNECT",
                          MOTE_STEP_DONE);
    }
    if (c->phase == MOTE_MQTT_PH_BACKOFF) {
        if (mote_before(now, c->deadline))
            goto wait;
        new_attempt(c, now);
    }
    rc = advance(loop, self, c);
    if (rc == 0)
        return finish(c, "disconnected cleanly", MOTE_STEP_DONE);
    now = mote_loop_now(loop);
    if (rc == MOTE_ERR_AGAIN) {
        bool connecting = c->phase != MOTE_MQTT_PH_MQTT || c->sess.state != MOTE_MQTT_S_ONLINE;

        if (connecting && !mote_before(now, c->deadline)) {
            timeout_msg(c);
            lost(c, MOTE_ERR_TIMEDOUT, now);
        }
    } else {
        lost(c, rc, now);
    }
wait:
    /* One timer: the attempt's or the backoff's deadline, keep-alive, the
     * end of a clean stop; the watch wakes the job earlier on I/O. */
    if (c->phase == MOTE_MQTT_PH_MQTT && c->sess.state == MOTE_MQTT_S_ONLINE) {
        t = mote_mqtt_sess_tick(&c->sess, now);
        due = now + (t < 0 ? 0u : t > MOTE_LOOP_MAX_WAIT_MS ? (uint32_t)MOTE_LOOP_MAX_WAIT_MS
                                                            : (uint32_t)t);
    } else {
        due = c->deadline;
    }
    if (c->stopping && mote_before(c->stop_deadline, due))
        due = c->stop_deadline;
    if (c->timer != 0)
        (void)mote_timer_stop(loop, c->timer);
    c->timer = 0;
    {
        int32_t left = (int32_t)(due - now);

        if (mote_timer_start(loop, left > 0 ? (uint32_t)left : 0u, NULL, NULL, self, &c->timer) <
            0) {
            close_conn(c);
            mote_mqtt_sess_lost(&c->sess);
            c->phase = MOTE_MQTT_PH_DONE;
            msg(c, "no free timer (MOTE_MAX_TIMERS)", NULL, NULL);
            (void)mote_job_set_error(loop, self, c->errmsg);
            return MOTE_ERR_FULL;
        }
    }
    return MOTE_STEP_PENDING;
}

static void mq_release(struct mote_loop *loop, void *task)
{
    struct mote_mqtt *c = task;

    c->loop = loop;
    close_conn(c);
    c->timer = 0;
}

const struct mote_task_ops mote_mqtt_ops = {"mqtt", mq_step, mq_release};

/* ---- the application's side ----------------------------------------------------- */

static void wake(struct mote_mqtt *c)
{
    if (c->loop != NULL && c->job != 0)
        (void)mote_job_wake(c->loop, c->job);
}

int mote_mqtt_start(struct mote_mqtt *c, struct mote_loop *loop, const struct mote_cancel *parent,
                    mote_job_id *job)
{
    int rc;

    if (c->job != 0)
        return MOTE_ERR_ALREADY;
    c->loop = loop;
    rc = mote_job_spawn(loop, "mqtt", &mote_mqtt_ops, c, parent, &c->job);
    if (rc == 0 && job != NULL)
        *job = c->job;
    return rc;
}

int mote_mqtt_publish(struct mote_mqtt *c, const char *topic, const void *payload, size_t len,
                      unsigned qos, bool retain)
{
    int rc = mote_mqtt_sess_publish(&c->sess, topic, payload, len, qos, retain);

    if (rc >= 0)
        wake(c);
    return rc;
}

int mote_mqtt_ack(struct mote_mqtt *c, uint32_t ack)
{
    int rc = mote_mqtt_sess_ack(&c->sess, ack);

    if (rc == 0)
        wake(c);
    return rc;
}

int mote_mqtt_resume(struct mote_mqtt *c)
{
    c->resume = true;
    wake(c);
    return 0;
}

int mote_mqtt_disconnect(struct mote_mqtt *c, uint32_t timeout_ms)
{
    if (c->stopping)
        return MOTE_ERR_ALREADY;
    c->stopping = true;
    c->stop_deadline = (c->loop != NULL ? mote_loop_now(c->loop) : 0u) + timeout_ms;
    mote_mqtt_sess_disconnect(&c->sess);
    wake(c);
    return 0;
}

bool mote_mqtt_online(const struct mote_mqtt *c)
{
    return c->phase == MOTE_MQTT_PH_MQTT && c->sess.state == MOTE_MQTT_S_ONLINE;
}
