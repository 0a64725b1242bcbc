/*
 * serve.c - the API server's life (mote_serve.h, docs/SERVE.md): it is
 * set up on the HTTP engine (httpd.h) with the API's handlers, listens,
 * shuts down with the session, and gives the process its exit code.
 *
 * The other files of the server are listed in serve_int.h.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

_Static_assert(sizeof(struct serve) <= sizeof(((struct mote_serve *)0)->area),
               "MOTE_SERVE_AREA_SIZE (mote_serve.h) is smaller than the server's state");
_Static_assert(_Alignof(struct serve) <= _Alignof(max_align_t),
               "the server's state needs more alignment than struct mote_serve's area has");

static uint32_t or_default(uint32_t v, uint32_t def)
{
    return v != 0 ? v : def;
}

/* The engine closed everything after the shutdown. */
static void on_closed(void *app)
{
    struct serve *sv = app;

    sv->pub->phase = MOTE_SERVE_DONE;
    sv->pub->lfd[0] = sv->pub->lfd[1] = -1;
    mote_httpd_say(&sv->http, "every connection closed", NULL, NULL);
}

/* A disk turn: a budget of the journal being read and of the
 * conversation being loaded, then whatever waited for journals (lists,
 * states, messages, the walk) goes on; another turn while anything
 * still waits. */
static void disk_turn(struct serve *sv)
{
    bool more = mote_serve_disk_read(sv), loading = sv->load.active;
    unsigned i;

    more = mote_serve_load_turn(sv) || more;
    if (loading && !sv->load.active)
        mote_serve_mqtt_loaded(sv); /* MQTT requests may wait for it */
    if (sv->rec_next) {
        sv->rec_next = false;
        mote_serve_recover_soon(sv); /* the recovery queue goes on */
    }
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        struct serve_stream *st = &sv->streams[i];
        struct mote_httpd_conn *c = &sv->http.conns[i];

        if (c->state != MOTE_HTTPD_RESP)
            continue;
        if (st->kind == SERVE_STREAM_LIST || st->kind == SERVE_STREAM_WAIT)
            more = mote_serve_http_disk_turn(sv, c) || more;
        else if (st->kind == SERVE_STREAM_EVENTS && st->wants_sum)
            more = mote_serve_stream_disk_turn(sv, c) || more;
    }
    if (sv->walk.active)
        more = mote_serve_walk_turn(sv) || more;
    more = mote_serve_mqtt_disk(sv) || more;
    more = mote_serve_follow_disk_turn(sv) || more;
    if (more || sv->scanning || sv->load.active)
        mote_serve_disk_kick(sv);
}

static const struct mote_httpd_handler handler = {
    mote_serve_on_head,   mote_serve_on_request, mote_serve_door_fill,
    mote_serve_door_ping, mote_serve_door_done,  on_closed,
};

static void on_recover_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct serve *sv = arg;

    (void)loop, (void)t;
    sv->recover_timer = 0;
    mote_serve_recover_more(sv);
}

void mote_serve_recover_soon(struct serve *sv)
{
    if (sv->recover_timer == 0 && sv->pub->phase == MOTE_SERVE_RUN &&
        mote_timer_start(sv->loop, 0, on_recover_timer, sv, 0, &sv->recover_timer) < 0)
        sv->recover_timer = 0;
}

/* The pipe's client left (`mote mcp`): the server ends, cancelling what
 * runs (nobody waits for it). */
static void pipe_ended(struct serve *sv)
{
    struct mote_shutdown_req req;

    memset(&req, 0, sizeof(req));
    req.reason = "the MCP client left";
    req.mode = MOTE_SD_CANCEL;
    req.timeout_ms = sv->conf.mcp_stdio->shutdown_ms > 0 ? sv->conf.mcp_stdio->shutdown_ms : 5000;
    (void)mote_serve_shutdown(sv->pub, &req);
}

int mote_serve_init(struct mote_serve *pub, struct mote_loop *loop,
                    const struct mote_serve_conf *conf)
{
    struct serve *sv = mote_serve_state(pub);
    const struct mote_port *p = loop != NULL ? loop->port : NULL;
    unsigned groups = MOTE_PORT_STORAGE | MOTE_PORT_SERVE, i;
    struct mote_httpd_conf hc;

    if (conf == NULL || p == NULL || conf->session == NULL || conf->conv == NULL ||
        (conf->socket_path == NULL && conf->listen == NULL && conf->mcp_stdio == NULL) ||
        (conf->socket_group != NULL && conf->socket_path == NULL) ||
        (conf->listen != NULL &&
         (conf->token == NULL || strlen(conf->token) < MOTE_SERVE_TOKEN_MIN)))
        return MOTE_ERR_INVAL;
    memset(pub, 0, offsetof(struct mote_serve, area));
    pub->lfd[0] = pub->lfd[1] = -1;
    /* Only the small fields: the buffers are used as needed (untouched
     * memory does not count in RSS). */
    memset(sv, 0, offsetof(struct serve, http));
    sv->pub = pub;
    sv->loop = loop;
    sv->port = p;
    sv->conf = *conf;
    sv->disk_turn = disk_turn;
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++)
        sv->streams[i].sh = -1;
    mote_serve_mcp_init(sv);
    mote_serve_oai_init(sv);
    sv->mcp.pipe_ended = pipe_ended;
    memset(&hc, 0, sizeof(hc));
    hc.handler = &handler;
    hc.app = sv;
    hc.header_timeout_ms = or_default(conf->header_timeout_ms, MOTE_SERVE_HEADER_TIMEOUT_MS);
    hc.body_timeout_ms = or_default(conf->body_timeout_ms, MOTE_SERVE_BODY_TIMEOUT_MS);
    hc.idle_timeout_ms = or_default(conf->idle_timeout_ms, MOTE_SERVE_IDLE_TIMEOUT_MS);
    hc.send_timeout_ms = or_default(conf->send_timeout_ms, MOTE_SERVE_SEND_TIMEOUT_MS);
    hc.ping_ms = or_default(conf->ping_ms, MOTE_SERVE_PING_MS);
    hc.flush_ms = or_default(conf->flush_ms, MOTE_SERVE_FLUSH_MS);
    hc.name = "serve";
    hc.log = conf->log;
    hc.log_arg = conf->log_arg;
    mote_httpd_init(&sv->http, loop, &hc);
    if (conf->socket_path != NULL)
        groups |= MOTE_PORT_LISTEN_UNIX;
    if (conf->listen != NULL)
        groups |= MOTE_PORT_LISTEN_TCP;
    pub->missing = mote_port_missing(p, groups);
    if (pub->missing == NULL && conf->socket_group != NULL && !MOTE_PORT_HAS(p, net_listen_group))
        pub->missing = "net_listen_group";
    if (pub->missing == NULL && conf->mcp_stdio != NULL &&
        (!MOTE_PORT_HAS(p, pipe_read) || !MOTE_PORT_HAS(p, pipe_write)))
        pub->missing = "pipe_read";
    if (pub->missing != NULL)
        return MOTE_ERR_NOSYS;
    if (conf->sched != NULL && conf->sched_tool && mote_serve_sched_tool(sv) < 0)
        return MOTE_ERR_FULL; /* the tool registry is full */
    return mote_serve_mqtt_init(sv);
}

int mote_serve_claim(const struct mote_port *p, int64_t *holder)
{
    int h, rc;

    *holder = 0;
    if (mote_port_missing(p, MOTE_PORT_STORAGE) != NULL)
        return MOTE_ERR_NOSYS;
    h = p->st_open(p->ctx, "serve.lock", MOTE_ST_READ | MOTE_ST_APPEND | MOTE_ST_CREATE);
    if (h < 0 || !MOTE_PORT_HAS(p, st_lock))
        return h;
    rc = p->st_lock(p->ctx, h, MOTE_LOCK_HOLD, holder);
    if (rc < 0) {
        p->st_close(p->ctx, h);
        return rc;
    }
    return h;
}

int mote_serve_listen(struct mote_serve *pub)
{
    struct serve *sv = mote_serve_state(pub);
    int rc = mote_httpd_listen(&sv->http, sv->conf.socket_path, sv->conf.listen);

    pub->lfd[0] = sv->http.lfd[0];
    pub->lfd[1] = sv->http.lfd[1];
    pub->tcp_port = sv->http.tcp_port;
    pub->group_failed = false;
    if (rc == 0 && sv->conf.socket_group != NULL && sv->http.lfd[0] >= 0) {
        rc = sv->port->net_listen_group(sv->port->ctx, sv->http.lfd[0], sv->conf.socket_group);
        pub->group_failed = rc < 0;
    }
    if (rc < 0)
        return rc;
    mote_serve_prune_now(sv);
    mote_serve_metrics_start(sv);
    (void)mote_serve_sched_start(sv); /* (a failure is said; the server serves without) */
    if ((rc = mote_serve_mcp_stdio_start(sv)) < 0)
        return rc;
    mote_serve_mcp_check_tools(sv); /* the tool list at the start: told when it changes */
    return mote_serve_mqtt_start(sv);
}

unsigned mote_serve_reconf(struct mote_serve *pub, const struct mote_conv_conf *conv)
{
    struct serve *sv = mote_serve_state(pub);
    struct mote_session *s = sv->conf.session;
    unsigned i, running = 0;

    if (conv == NULL)
        return 0;
    sv->conf.conv = conv;
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        if (s->conv[i].used && mote_conv_set_conf(&s->conv[i], conv) == MOTE_ERR_BUSY)
            running++;
    }
    mote_serve_mqtt_reconf(sv);
    return running;
}

void mote_serve_tools_changed(struct mote_serve *pub)
{
    mote_serve_mcp_tools_changed(mote_serve_state(pub));
}

int mote_serve_shutdown(struct mote_serve *pub, const struct mote_shutdown_req *req)
{
    struct serve *sv = mote_serve_state(pub);
    int rc;

    if (pub->phase == MOTE_SERVE_DONE)
        return MOTE_ERR_ALREADY;
    if (pub->phase == MOTE_SERVE_RUN) {
        pub->phase = MOTE_SERVE_DRAIN;
        mote_serve_sched_stop(sv); /* no occurrence starts from now on */
        mote_httpd_say(&sv->http, "shutting down (",
                       req != NULL && req->reason != NULL ? req->reason : "?",
                       req != NULL && req->mode == MOTE_SD_DRAIN ? ", drain)" : ", cancel)");
    }
    if (pub->phase == MOTE_SERVE_FINAL && req != NULL && req->force)
        mote_httpd_close(&sv->http, mote_loop_now(sv->loop)); /* stop waiting for slow clients */
    mote_serve_mqtt_shutdown(sv, req);
    rc = mote_shutdown_begin(sv->conf.session, req);
    return rc == MOTE_ERR_ALREADY ? 0 : rc;
}

int mote_serve_signal(struct mote_serve *pub, enum mote_signal sig, uint32_t timeout_ms)
{
    static const char *const names[] = {"SIGINT", "SIGTERM", "SIGHUP"};
    struct serve *sv = mote_serve_state(pub);
    struct mote_shutdown_req req;
    unsigned k = (unsigned)sig < 3 ? (unsigned)sig : 1u;

    memset(&req, 0, sizeof(req));
    req.reason = names[k];
    req.mode = sig == MOTE_SIG_INT ? MOTE_SD_CANCEL : MOTE_SD_DRAIN;
    req.timeout_ms = timeout_ms;
    if (pub->sig != 0) {
        req.force = true; /* a second signal: stop waiting */
        sv->forced = true;
        mote_httpd_say(&sv->http, names[k], " again: stopping now", NULL);
    } else {
        pub->sig = (uint8_t)(k + 1);
    }
    return mote_serve_shutdown(pub, &req);
}

int mote_serve_exit_code(struct mote_serve *pub, int loop_rc)
{
    struct serve *sv = mote_serve_state(pub);
    const struct mote_shutdown_report *r = &sv->conf.session->report;

    if (loop_rc < 0)
        sv->failed = true;
    if (sv->failed || r->storage_err < 0)
        return 1;
    if (pub->sig == MOTE_SIG_INT + 1)
        return 130;
    if (pub->sig != 0 && (r->timed_out || r->forced || sv->forced))
        return pub->sig == MOTE_SIG_HUP + 1 ? 129 : 143;
    return 0;
}

bool mote_serve_done(const struct mote_serve *pub)
{
    const struct serve *sv = (const struct serve *)(const void *)pub->area.bytes;

    return pub->phase == MOTE_SERVE_DONE && mote_serve_mqtt_stopped(sv) &&
           mote_serve_mcp_stdio_flushed(sv);
}

void mote_serve_deinit(struct mote_serve *pub)
{
    struct serve *sv = mote_serve_state(pub);

    mote_httpd_deinit(&sv->http);
    mote_serve_metrics_stop(sv);
    pub->phase = MOTE_SERVE_DONE;
    mote_serve_sched_stop(sv);
    mote_serve_mcp_stdio_stop(sv);
    if (sv->mcp.timer != 0)
        (void)mote_timer_stop(sv->loop, sv->mcp.timer);
    sv->mcp.timer = 0;
    mote_serve_disk_stop(sv);
    mote_serve_mqtt_deinit(sv);
    if (sv->recover_timer != 0)
        (void)mote_timer_stop(sv->loop, sv->recover_timer);
    sv->recover_timer = 0;
    pub->lfd[0] = pub->lfd[1] = -1;
    pub->phase = MOTE_SERVE_DONE;
}
