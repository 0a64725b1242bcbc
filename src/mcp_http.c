/*
 * mcp_http.c - MCP servers over HTTP: Streamable HTTP (each message a
 * POST, answered with JSON or an event stream; Mcp-Session-Id kept and
 * sent; the GET stream for the server's notifications; DELETE at the end)
 * and the older HTTP+SSE (an event stream that names the endpoint to POST
 * to and carries every answer). The messages wait in a queue for their
 * exchange on one of three channels (requests; notifications sent
 * meanwhile; the event stream); a lost session is replaced by a new one
 * here, so the protocol (mcp.c) sees its request answered late, not
 * failed. The exchanges themselves (connect, send, read, frame) are
 * mcp_wire.c's.
 */
#include <string.h>

#include "mcp_int.h"
#include "mcp_wire.h"
#include "mote/mote.h"

enum { DC_NONE = 0, DC_FLUSH, DC_DELETE, DC_DONE };

static void dc_pump(struct mote_mcp_server *s);

/* ---- the queue ---- */

/* Removes queued message `seq`: its bytes leave outbuf. */
static void q_remove(struct mote_mcp_server *s, uint32_t seq)
{
    struct mote_mcp_queued *e = mcp_q_find(s, seq);
    uint32_t off, len;
    unsigned i, at;

    if (e == NULL)
        return;
    if (s->res_seq == seq)
        s->res_seq = s->res_at = 0; /* (its stream is no longer resumed) */
    off = e->off;
    len = e->len;
    at = (unsigned)(e - s->q);
    memmove(s->outbuf + off, s->outbuf + off + len, s->outlen - off - len);
    s->outlen -= len;
    memmove(&s->q[at], &s->q[at + 1], (s->nq - at - 1) * sizeof(s->q[0]));
    s->nq--;
    for (i = 0; i < s->nq; i++) {
        if (s->q[i].off > off)
            s->q[i].off -= len;
    }
}

/* The request (or initialize) in the queue, if any. */
static struct mote_mcp_queued *q_request(struct mote_mcp_server *s)
{
    unsigned i;

    for (i = 0; i < s->nq; i++) {
        if (s->q[i].kind != MCP_MSG_NOTE)
            return &s->q[i];
    }
    return NULL;
}

static void kick(struct mote_mcp_server *s);

int mote_mcp_http_queued(struct mote_mcp_server *s, size_t start, int kind)
{
    struct mote_mcp_queued *e;

    if (s->nq >= MOTE_MCP_QUEUE_MAX || s->state == MOTE_MCP_FAILED) {
        s->outlen = start;
        return MOTE_ERR_FULL;
    }
    e = &s->q[s->nq++];
    memset(e, 0, sizeof(*e));
    e->seq = ++s->seq;
    if (e->seq == 0)
        e->seq = s->seq = 1; /* (0 means none) */
    e->off = (uint32_t)start;
    e->len = (uint32_t)(s->outlen - start);
    e->kind = (uint8_t)kind;
    if (kind != MCP_MSG_NOTE)
        e->id = s->next_id - 1; /* (the id request() just took) */
    if (kind == MCP_MSG_INIT && e->len <= sizeof(s->init_msg)) {
        /* Kept for a new session; its id is the one request() just took. */
        memcpy(s->init_msg, s->outbuf + start, e->len);
        s->init_len = e->len;
        s->init_id = s->next_id - 1;
    }
    kick(s);
    return 0;
}

/* ---- the timer: deadlines, retries, and a look at the queue ---- */

static void on_timer(struct mote_loop *loop, mote_timer_id t, void *arg);

/* Arms the one timer of the server at the earliest thing due. */
static void arm(struct mote_mcp_server *s)
{
    struct mote_loop *loop = s->m->loop;
    uint32_t now = mote_loop_now(loop), due = now + MOTE_LOOP_MAX_WAIT_MS * 60u;
    bool any = false;
    unsigned i;

    if (s->kicked) {
        due = now;
        any = true;
    }
    for (i = 0; i < 3; i++) {
        const struct mote_mcp_chan *ch = &s->ch[i];

        if (!ch->busy || (!ch->kick && ch->deadline == 0))
            continue; /* (an event stream has no deadline) */
        any = true;
        if (ch->kick || !mote_before(now, ch->deadline))
            due = now;
        else if (mote_before(ch->deadline, due))
            due = ch->deadline;
    }
    if (s->get_retry != 0) {
        if (mote_before(s->get_retry, due))
            due = s->get_retry;
        any = true;
    }
    if (s->res_at != 0 && !s->ch[MCP_CH_REQ].busy) {
        if (mote_before(s->res_at, due))
            due = s->res_at;
        any = true;
    }
    if (s->io_timer != 0)
        (void)mote_timer_stop(loop, s->io_timer);
    s->io_timer = 0;
    if (!any)
        return;
    if (mote_timer_start(loop, mote_before(now, due) ? due - now : 0u, on_timer, s, 0,
                         &s->io_timer) < 0) {
        s->io_timer = 0;
        mcp_log(s, "no free timer (MOTE_MAX_TIMERS): its deadlines are not kept", NULL, NULL);
    }
}

/* Looks at the queue on the next turn (never from inside the protocol's
 * handling of a message: an exchange could deliver another one then). */
static void kick(struct mote_mcp_server *s)
{
    s->kicked = true;
    arm(s);
}

/* ---- the pieces of a session ---- */

static bool streamable(const struct mote_mcp_server *s)
{
    return s->kind == MOTE_MCP_HTTP;
}

/* Where a channel gathers its messages: the answers' channel the big
 * buffer, Streamable HTTP's GET stream the small one. */
static void set_buffers(struct mote_mcp_server *s)
{
    struct mote_mcp_chan *req = &s->ch[MCP_CH_REQ], *get = &s->ch[MCP_CH_GET];

    req->msg = streamable(s) ? s->inbuf : s->note;
    req->msg_cap = streamable(s) ? sizeof(s->inbuf) : sizeof(s->note);
    get->msg = streamable(s) ? s->note : s->inbuf;
    get->msg_cap = streamable(s) ? sizeof(s->note) : sizeof(s->inbuf);
    s->ch[MCP_CH_NOTE].msg = NULL;
    s->ch[MCP_CH_NOTE].msg_cap = 0;
}

/* Whether the event stream should be open (or be opened again). */
static bool get_wanted(const struct mote_mcp_server *s)
{
    if (s->state == MOTE_MCP_FAILED || s->state == MOTE_MCP_CLOSED || s->state == MOTE_MCP_OFF ||
        s->m->dc)
        return false;
    if (!streamable(s))
        return true;
    /* Streamable HTTP: once a session is up (the first initialize
     * answered), and for a new session before its `initialized` */
    return !s->get_none &&
           (s->gate || s->renew == MCP_RENEW_GET ||
            ((s->state == MOTE_MCP_LISTING || s->state == MOTE_MCP_READY) && !s->lost));
}

/* The next try of the event stream after `fails` failures in a row: the
 * server's `retry:` when it said one, doubled for each failure. */
static void get_later(struct mote_mcp_server *s)
{
    unsigned sh = s->get_fails < 6 ? s->get_fails : 6;
    uint32_t ms = s->ch[MCP_CH_GET].retry_ms != 0 ? s->ch[MCP_CH_GET].retry_ms : MOTE_MCP_RETRY_MS;
    uint32_t at = mote_loop_now(s->m->loop) + (ms << sh);

    s->get_retry = at != 0 ? at : 1;
    if (s->get_fails < 255)
        s->get_fails++;
}

bool mote_mcp_http_start(struct mote_mcp_server *s)
{
    const struct mote_mcp_net *net = &s->m->net;
    const char *proxy = s->to.tls ? net->https_proxy : net->http_proxy;
    const char *path = strstr(s->url, "://") + 3;
    unsigned i;
    int rc;

    if (mote_port_missing(s->m->loop->port, MOTE_PORT_NET | (s->to.tls ? MOTE_PORT_TLS : 0u)) !=
        NULL) {
        s->m->up->failed(s, s->to.tls ? "this port cannot reach https:// servers (no net or TLS)"
                                      : "this port cannot reach http:// servers (no net)");
        return false;
    }
    /* the URL's path and query, as they are (a trailing '/' too) */
    path += strcspn(path, "/?");
    if (strlen(path) + 2 > sizeof(s->target)) {
        s->m->up->failed(s, "the URL's path is longer than MOTE_MCP_PATH_MAX");
        return false;
    }
    s->target[0] = '\0';
    if (*path != '/')
        mote_str_copy(s->target, sizeof(s->target), "/");
    memcpy(s->target + strlen(s->target), path, strlen(path) + 1);
    mote_str_copy(s->get_target, sizeof(s->get_target), s->target);
    s->via_proxy = false;
    s->proxy_auth[0] = '\0';
    if (proxy != NULL && proxy[0] != '\0' &&
        !mote_proxy_bypass(net->no_proxy, s->to.host, s->to.port)) {
        rc = mote_proxy_parse(&s->proxy, s->proxy_auth, sizeof(s->proxy_auth), proxy);
        if (rc < 0) {
            char why[200];

            mote_proxy_error(rc, why, sizeof(why));
            s->m->up->failed(s, why);
            return false;
        }
        s->via_proxy = true;
    }
    s->origin = mote_dial_origin(&s->to, s->via_proxy ? &s->proxy : NULL, s->proxy_auth,
                                 net->ca_file);
    for (i = 0; i < 3; i++) {
        memset(&s->ch[i], 0, offsetof(struct mote_mcp_chan, resp));
        s->ch[i].srv = s;
        mote_conn_init(&s->ch[i].conn);
    }
    set_buffers(s);
    s->nq = 0;
    s->seq = 0;
    s->session[0] = s->version[0] = '\0';
    s->get_retry = 0;
    s->get_fails = 0;
    s->res_seq = s->res_at = 0;
    s->res_tries = 0;
    s->lost = s->gate = s->get_up = s->get_none = s->have_endpoint = false;
    s->renew = MCP_RENEW_NONE;
    if (!streamable(s))
        s->get_retry = mote_loop_now(s->m->loop) | 1u; /* HTTP+SSE: the stream comes first */
    kick(s);
    return true;
}

/* ---- the exchanges' ends ---- */

/* A request of the queue failed: the protocol hears it, if it still
 * waits for that request (its answer may have come another way). */
static void request_failed(struct mote_mcp_server *s, uint32_t seq, const char *why)
{
    struct mote_mcp_queued *e = mcp_q_find(s, seq);
    bool pending = e != NULL && e->kind != MCP_MSG_NOTE && e->id == s->req_id;

    q_remove(s, seq);
    if (pending)
        s->m->up->request_failed(s, why);
}

/* A new session could not be made: the request waiting for it fails;
 * another try comes with the next request or the stream's retry. */
static void renew_failed(struct mote_mcp_server *s, const char *why)
{
    char msg[240];
    struct mote_mcp_queued *e = q_request(s);

    s->renew = MCP_RENEW_NONE;
    mote_str_join(msg, sizeof(msg),
                  "the MCP server's session ended and no new one could be started: ", why, NULL);
    if (s->get_fails == 0)
        mcp_log(s, msg, "; tried again later", NULL); /* (said once, not at every try) */
    get_later(s);
    if (e != NULL)
        request_failed(s, e->seq, msg);
    else if (s->m->up != NULL && s->req_id != 0 && !streamable(s))
        s->m->up->request_failed(s, msg);
}

/* The session is gone (the server forgot it, restarted, or its stream
 * ended): a new one is made before anything else is sent. */
static void session_lost(struct mote_mcp_server *s, const char *how)
{
    if (s->lost || s->state == MOTE_MCP_STARTING || s->m->dc)
        return;
    mcp_log(s, how, "; a new session is started", NULL);
    if (s->res_seq != 0) /* (its stream's events were the old session's) */
        request_failed(s, s->res_seq, "the session ended during the resumption");
    s->ch[MCP_CH_GET].last_id[0] = '\0';
    s->lost = true;
    s->session[0] = '\0';
    s->have_endpoint = false;
    s->renew = MCP_RENEW_NONE;
    if (streamable(s) && s->ch[MCP_CH_GET].busy) {
        /* The event stream of the session that is gone may stay open (a
         * server that forgot the session, not the connection): it ends
         * now, so the new session's own stream can open on its channel. */
        mote_mcp_wire_stop(s, &s->ch[MCP_CH_GET]);
        s->get_up = false;
        s->gate = false;
        s->get_retry = 0;
    }
    if (!streamable(s) && q_request(s) == NULL && s->req_id != 0) {
        /* HTTP+SSE: its answer would have come on the stream that ended */
        s->m->up->request_failed(s, "the MCP server's event stream ended before the answer; "
                                    "the call may or may not have run");
    }
    kick(s);
}

static void get_done(struct mote_mcp_server *s, struct mote_mcp_chan *ch, int rc, const char *why)
{
    s->get_up = false;
    if (mote_mcp_wire_refused(ch))
        ch->last_id[0] = '\0'; /* (no replay from there: the next try opens it anew) */
    if (s->gate) {
        /* no stream to wait for: the first messages go now */
        s->gate = false;
        if (rc == MCP_WIRE_NOT_ALLOWED)
            s->get_none = true;
    }
    if (s->renew == MCP_RENEW_GET)
        s->renew = MCP_RENEW_NOTE;
    if (streamable(s) && (rc == MCP_WIRE_NOT_ALLOWED ||
                          (rc != MCP_WIRE_SESSION && ch->resp.status >= 400 &&
                           ch->resp.status < 500 && s->session[0] == '\0'))) {
        /* (405, or a refusal without a session: it sends nothing unasked) */
        s->get_none = true;
        return;
    }
    if (!streamable(s) && s->state == MOTE_MCP_STARTING) {
        s->m->up->failed(s, why != NULL ? why : "the event stream ended");
        return;
    }
    if (rc == MCP_WIRE_SESSION) {
        session_lost(s, "the server no longer knows the session");
        get_later(s);
        return;
    }
    if (!streamable(s) && s->have_endpoint) {
        session_lost(s, why != NULL ? why : "the event stream ended");
        get_later(s);
        return;
    }
    if (why != NULL && s->get_fails == 0)
        mcp_log(s, why, "; the event stream is opened again later", NULL);
    get_later(s);
}

/* The event stream carrying request e broke before its answer, after an
 * event with an id: it is resumed by a GET with Last-Event-ID on the
 * requests' channel, after the server's retry (the request is never sent
 * again: it may have run). False when it is not to be resumed. */
static bool resume(struct mote_mcp_server *s, struct mote_mcp_chan *ch, struct mote_mcp_queued *e,
                   int rc)
{
    uint32_t at;

    if (!streamable(s) || e->kind == MCP_MSG_NOTE || e->id != s->req_id ||
        ch->last_id[0] == '\0' || rc == MOTE_ERR_TIMEDOUT || s->lost ||
        (mote_mcp_wire_refused(ch) && ch->resp.status != 409))
        return false; /* (409: the server has not yet seen the old stream end) */
    if (ch->method == MCP_POST || ch->id_new)
        s->res_tries = 0; /* it moved on since the last try */
    if (s->res_tries + 1 > MOTE_MCP_RESUME_MAX)
        return false;
    s->res_tries++;
    at = mote_loop_now(s->m->loop) + (ch->retry_ms != 0 ? ch->retry_ms : MOTE_MCP_RETRY_MS);
    s->res_seq = e->seq;
    s->res_at = at != 0 ? at : 1;
    if (s->res_tries == 1)
        mcp_log(s, "its event stream broke: resumed (Last-Event-ID)", NULL, NULL);
    return true;
}

/* The resumption of request `seq`'s stream failed for good: the request
 * fails (it is not sent again). */
static void resume_failed(struct mote_mcp_server *s, struct mote_mcp_queued *e, int rc,
                          const char *why)
{
    char msg[320];

    mote_str_join(msg, sizeof(msg),
                  "the event stream broke before the answer and was not resumed: ",
                  why != NULL ? why : "MOTE_MCP_RESUME_MAX tries brought nothing",
                  e->kind == MCP_MSG_CALL ? "; the call may or may not have run" : NULL);
    request_failed(s, e->seq, msg);
    if (rc == MCP_WIRE_SESSION)
        session_lost(s, "the server no longer knows the session");
}

/* Called by the wire when an exchange of channel `ch` ends: rc 0 (done),
 * or < 0 with `why` (MCP_WIRE_SESSION: the session is unknown to the
 * server; MCP_WIRE_NOT_ALLOWED: 405). */
static void exchange_done(struct mote_mcp_server *s, struct mote_mcp_chan *ch, int rc,
                          const char *why)
{
    uint8_t role = ch->role;
    uint32_t seq = ch->seq;
    struct mote_mcp_queued *e = seq != 0 ? mcp_q_find(s, seq) : NULL;

    ch->seq = 0;
    switch (role) {
    case MCP_ROLE_GET:
        get_done(s, ch, rc, why);
        break;
    case MCP_ROLE_DELETE:
        s->dc_state = DC_DONE;
        if (rc == 0)
            mcp_log(s, "the session ended (DELETE answered)", NULL, NULL);
        else if (rc == MCP_WIRE_NOT_ALLOWED)
            mcp_log(s, "the server keeps the session until it expires (DELETE: HTTP 405)", NULL,
                    NULL);
        else
            mcp_log(s, "ending the session failed: ", why, NULL);
        break;
    case MCP_ROLE_RENEW_INIT:
        if (rc < 0) {
            renew_failed(s, why);
            break;
        }
        if (!streamable(s)) {
            if (s->renew == MCP_RENEW_INIT)
                s->renew = MCP_RENEW_WAIT; /* the answer comes on the stream */
            break;
        }
        if (s->renew == MCP_RENEW_INIT) /* (the answer came with it) */
            renew_failed(s, "the server did not answer initialize");
        break;
    case MCP_ROLE_RENEW_NOTE:
        if (rc < 0) {
            renew_failed(s, why);
            break;
        }
        s->renew = MCP_RENEW_NONE;
        s->lost = false;
        s->get_fails = 0;
        s->m->up->renewed(s);
        break;
    default: /* a queued message */
        if (e == NULL)
            break; /* (given up meanwhile) */
        if (ch->answered) {
            q_remove(s, seq); /* its answer is in: what came after does not matter */
            break;
        }
        if (resume(s, ch, e, rc))
            break;
        if (ch->method == MCP_GET) {
            resume_failed(s, e, rc, why);
            break;
        }
        if (rc == MCP_WIRE_SESSION && (e->kind == MCP_MSG_REQUEST || e->kind == MCP_MSG_CALL) &&
            !e->renewed) {
            /* The server lost the session: sent again in a new one.
             * (MCP_WIRE_SESSION is only said of a message sent in a
             * session, or posted to an HTTP+SSE endpoint. The loss may be
             * known already, from the GET stream's answer: the session is
             * then blank, and the call waits for the new one all the
             * same.) */
            e->renewed = true;
            e->sending = false;
            session_lost(s, "the server no longer knows the session");
            break;
        }
        if (rc == MCP_WIRE_SESSION && e->kind == MCP_MSG_NOTE) {
            q_remove(s, seq);
            session_lost(s, "the server no longer knows the session");
            break;
        }
        if (rc < 0) {
            if (e->kind == MCP_MSG_NOTE) {
                q_remove(s, seq);
                mcp_log(s, "a notification was not delivered: ", why, NULL);
            } else {
                request_failed(s, seq, why);
            }
            break;
        }
        if (e->kind != MCP_MSG_NOTE && streamable(s) && !ch->answered && s->req_id != 0)
            request_failed(s, seq, "the MCP server ended its answer without the JSON-RPC answer");
        else
            q_remove(s, seq);
        break;
    }
    kick(s);
}

/* ---- messages that came ---- */

/* One message from channel `ch`: a new session's initialize answer is
 * taken here, everything else goes to the protocol. */
static void on_message(struct mote_mcp_server *s, struct mote_mcp_chan *ch, const char *msg,
                       size_t len)
{
    int64_t before = s->req_id;

    if ((s->renew == MCP_RENEW_INIT || s->renew == MCP_RENEW_WAIT) &&
        mote_mcp_wire_answer_of(s, msg, len, s->init_id)) {
        int err = mote_json_member(&s->m->json, 0, "error");

        if (err >= 0) {
            renew_failed(s, "the server refused initialize");
            return;
        }
        s->renew = streamable(s) && !s->get_none ? MCP_RENEW_GET : MCP_RENEW_NOTE;
        if (s->renew == MCP_RENEW_GET)
            s->get_retry = mote_loop_now(s->m->loop) | 1u; /* open it at once */
        kick(s);
        return;
    }
    s->m->up->message(s, msg, len);
    if (before != 0 && s->req_id != before) {
        struct mote_mcp_queued *e = ch->role == MCP_ROLE_MSG ? mcp_q_find(s, ch->seq) : NULL;
        struct mote_mcp_queued *r = mcp_q_find(s, s->res_seq);

        if (r != NULL && r->id == before && ch->seq != s->res_seq) {
            /* answered on another stream: its own is not resumed */
            if (s->ch[MCP_CH_REQ].seq == s->res_seq)
                mote_mcp_wire_stop(s, &s->ch[MCP_CH_REQ]);
            q_remove(s, s->res_seq);
            kick(s);
        }

        /* The exchange that carried its request is answered: it gets only
         * a short tail for its end. Not the event stream (HTTP+SSE brings
         * every answer on it): it stays open, with no deadline. */
        if (ch->role != MCP_ROLE_GET)
            ch->answered = true;
        if (e != NULL && e->kind == MCP_MSG_INIT && streamable(s) && !s->get_none) {
            /* The session is up: its event stream opens before anything
             * else goes out (a server may speak as soon as it hears
             * `initialized`, server-everything does). */
            s->gate = true;
            s->get_retry = mote_loop_now(s->m->loop) | 1u;
        }
    }
}

/* The endpoint event of HTTP+SSE: the path to POST to, on the same
 * server (an absolute URL elsewhere is refused: the headers would go
 * there). */
static void on_endpoint(struct mote_mcp_server *s, const char *data, size_t len)
{
    char path[MOTE_MCP_PATH_MAX];
    size_t i, skip = 0;

    if (len >= sizeof(path)) {
        s->m->up->failed(s, "the server's endpoint is longer than MOTE_MCP_PATH_MAX");
        return;
    }
    memcpy(path, data, len);
    path[len] = '\0';
    if (strncmp(path, "http://", 7) == 0 || strncmp(path, "https://", 8) == 0) {
        struct mote_url u;
        char base[sizeof(path)];
        size_t n = strcspn(path, "?#");

        memcpy(base, path, n);
        base[n] = '\0';
        if (mote_url_parse(&u, base) < 0 || u.tls != s->to.tls || u.port != s->to.port ||
            !mote_ascii_ieq(u.host, s->to.host, sizeof(u.host))) {
            s->m->up->failed(s, "the server's endpoint is on another server: refused");
            return;
        }
        skip = (size_t)(strstr(path, "://") - path) + 3;
        skip += strcspn(path + skip, "/?");
    }
    for (i = skip; path[i] != '\0'; i++) {
        if ((unsigned char)path[i] <= 0x20 || (unsigned char)path[i] >= 0x7f) {
            /* (a request's target is ASCII: others are percent-encoded) */
            s->m->up->failed(s, "the server's endpoint is not a URL path");
            return;
        }
    }
    if (path[skip] != '/') {
        s->m->up->failed(s, "the server's endpoint is not a URL path");
        return;
    }
    mote_str_copy(s->target, sizeof(s->target), path + skip);
    s->have_endpoint = true;
    if (s->lost && s->renew == MCP_RENEW_NONE)
        s->renew = MCP_RENEW_INIT;
    s->get_fails = 0;
    kick(s);
}

/* ---- the wire's view of the server ---- */

static void w_message(struct mote_mcp_server *s, struct mote_mcp_chan *ch, const char *event,
                      const char *data, size_t len)
{
    if (ch->role == MCP_ROLE_GET && !streamable(s) && strcmp(event, "endpoint") == 0) {
        on_endpoint(s, data, len);
        return;
    }
    if (strcmp(event, "message") != 0 || len == 0)
        return; /* other events, and the empty ones that only carry an id */
    on_message(s, ch, data, len);
}

static void w_headers(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    if (ch->role == MCP_ROLE_GET) {
        s->get_up = true;
        if (s->gate) {
            s->gate = false; /* the stream is open: the first messages go */
            kick(s);
        }
        if (s->renew == MCP_RENEW_GET) {
            s->renew = MCP_RENEW_NOTE;
            kick(s);
        }
        if (streamable(s))
            s->get_fails = 0;
    }
}

static void w_dropped(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    mcp_log(s, "dropped a message over the size limit (", ch->msg == s->inbuf ? "MOTE_MCP_LINE_MAX)"
                                                                            : "MOTE_MCP_NOTE_MAX)",
            NULL);
    if (ch->msg == s->inbuf && s->req_id != 0)
        s->m->up->request_failed(s, "the MCP server's answer was over the size limit "
                                    "(MOTE_MCP_LINE_MAX)");
}

static void w_kicked(struct mote_mcp_server *s)
{
    arm(s);
}

static const struct mote_mcp_wire_ops wire_ops = {w_message, w_headers, exchange_done, w_dropped,
                                                  w_kicked};

/* ---- starting exchanges ---- */

static void start(struct mote_mcp_server *s, unsigned c, uint8_t role, uint8_t method,
                  uint32_t seq)
{
    struct mote_mcp_chan *ch = &s->ch[c];

    ch->role = role;
    ch->method = method;
    ch->seq = seq;
    if (seq != 0)
        mcp_q_find(s, seq)->sending = true;
    mote_mcp_wire_begin(s, ch, &wire_ops);
}

/* Starts what can start: the event stream, a new session's steps, the
 * queued messages in order (a notification may go on the second channel
 * while a request waits for its answer on the first). */
static void pump(struct mote_mcp_server *s)
{
    struct mote_mcp_chan *req = &s->ch[MCP_CH_REQ], *note = &s->ch[MCP_CH_NOTE];
    uint32_t now = mote_loop_now(s->m->loop);
    unsigned i, n;

    if (s->m->dc) {
        dc_pump(s);
        return;
    }
    if (s->state == MOTE_MCP_FAILED || s->state == MOTE_MCP_CLOSED)
        return;
    if (!s->ch[MCP_CH_GET].busy && get_wanted(s) && s->get_retry != 0 &&
        !mote_before(now, s->get_retry)) {
        s->get_retry = 0;
        start(s, MCP_CH_GET, MCP_ROLE_GET, MCP_GET, 0);
    }
    if (s->res_at != 0 && !req->busy && !s->lost && !mote_before(now, s->res_at)) {
        s->res_at = 0; /* the broken stream of the request goes on */
        start(s, MCP_CH_REQ, MCP_ROLE_MSG, MCP_GET, s->res_seq);
    }
    if (s->lost) {
        if (req->busy)
            return;
        if (streamable(s) && s->renew == MCP_RENEW_NONE && (q_request(s) != NULL ||
                                                            s->get_retry == 0 ||
                                                            !mote_before(now, s->get_retry))) {
            s->renew = MCP_RENEW_INIT;
            s->get_retry = 0;
        }
        if (s->init_len == 0) {
            s->m->up->failed(s, "the session ended and its initialize was not kept");
            return;
        }
        if (s->renew == MCP_RENEW_INIT)
            start(s, MCP_CH_REQ, MCP_ROLE_RENEW_INIT, MCP_POST, 0);
        else if (s->renew == MCP_RENEW_NOTE)
            start(s, MCP_CH_REQ, MCP_ROLE_RENEW_NOTE, MCP_POST, 0);
        return;
    }
    /* The first message not on its way goes next, if a channel is free
     * for it; looked at again after each start (an exchange may end at
     * once, and what it brought may change the queue). */
    for (n = 0; n < 4u * MOTE_MCP_QUEUE_MAX; n++) {
        struct mote_mcp_queued *e = NULL;

        if (s->gate || s->lost || (!streamable(s) && !s->have_endpoint) ||
            s->state == MOTE_MCP_FAILED || s->state == MOTE_MCP_CLOSED || s->m->dc)
            return;
        for (i = 0; i < s->nq && e == NULL; i++) {
            if (!s->q[i].sending)
                e = &s->q[i];
        }
        if (e == NULL)
            return;
        if (!req->busy && s->res_seq == 0)
            start(s, MCP_CH_REQ, MCP_ROLE_MSG, MCP_POST, e->seq);
        else if (e->kind == MCP_MSG_NOTE && streamable(s) && !note->busy)
            start(s, MCP_CH_NOTE, MCP_ROLE_MSG, MCP_POST, e->seq);
        else
            return; /* in order: what comes after it waits too */
    }
    kick(s); /* (the rest on the next turn) */
}

static void on_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_mcp_server *s = arg;
    unsigned i;

    (void)loop, (void)t;
    s->io_timer = 0;
    s->kicked = false;
    for (i = 0; i < 3; i++) {
        if (s->ch[i].busy)
            mote_mcp_wire_run(s, &s->ch[i]); /* its deadline, or bytes waiting in TLS */
    }
    pump(s);
    arm(s);
}

/* ---- the protocol's calls ---- */

void mote_mcp_http_drop_request(struct mote_mcp_server *s)
{
    struct mote_mcp_queued *e = q_request(s);
    unsigned i;

    if (s->state == MOTE_MCP_FAILED) {
        /* the end of it all: every exchange stops */
        for (i = 0; i < 3; i++) {
            mote_mcp_wire_stop(s, &s->ch[i]);
            mote_conn_close(&s->ch[i].conn);
        }
        s->nq = 0;
        s->outlen = 0;
        s->get_retry = 0;
        s->kicked = false;
        arm(s);
        return;
    }
    if (e != NULL) {
        if (e->sending && s->ch[MCP_CH_REQ].seq == e->seq)
            mote_mcp_wire_stop(s, &s->ch[MCP_CH_REQ]);
        q_remove(s, e->seq);
    } else if (s->renew != MCP_RENEW_NONE && s->ch[MCP_CH_REQ].busy) {
        /* the request waited for a new session; the session's making goes on */
    }
    s->paused = false;
    kick(s);
}

void mote_mcp_http_progress(struct mote_mcp_server *s)
{
    struct mote_mcp_chan *ch = &s->ch[MCP_CH_REQ];
    uint32_t at = mote_loop_now(s->m->loop) + mcp_timeout(s);

    if (ch->busy && ch->deadline != 0 && !ch->answered && !ch->tail) {
        ch->deadline = at != 0 ? at : 1;
        arm(s);
    }
}

void mote_mcp_http_resume(struct mote_mcp_server *s)
{
    if (s->paused) {
        s->paused = false;
        s->ch[streamable(s) ? MCP_CH_REQ : MCP_CH_GET].kick = true;
        kick(s);
    }
}

/* ---- disconnect ---- */

/* The disconnect's steps: the notifications still queued (a cancel's),
 * then DELETE when there is a session to end. */
static void dc_pump(struct mote_mcp_server *s)
{
    if (s->dc_state != DC_FLUSH || s->ch[MCP_CH_REQ].busy || s->ch[MCP_CH_NOTE].busy)
        return;
    if (s->nq > 0 && (streamable(s) || s->have_endpoint)) {
        start(s, MCP_CH_REQ, MCP_ROLE_MSG, MCP_POST, s->q[0].seq);
        return;
    }
    s->nq = 0;
    s->outlen = 0;
    if (s->dc_delete) {
        s->dc_state = DC_DELETE;
        start(s, MCP_CH_REQ, MCP_ROLE_DELETE, MCP_DELETE, 0);
        return;
    }
    s->dc_state = DC_DONE;
}

void mote_mcp_http_dc_begin(struct mote_mcp_server *s)
{
    struct mote_mcp_queued *e;

    if (s->state == MOTE_MCP_OFF || s->state == MOTE_MCP_FAILED) {
        s->dc_state = DC_DONE; /* (a failed server's exchanges ended when it failed) */
        return;
    }
    mote_mcp_wire_stop(s, &s->ch[MCP_CH_GET]);
    mote_mcp_wire_stop(s, &s->ch[MCP_CH_NOTE]);
    while ((e = q_request(s)) != NULL) {
        if (s->ch[MCP_CH_REQ].seq == e->seq)
            mote_mcp_wire_stop(s, &s->ch[MCP_CH_REQ]);
        q_remove(s, e->seq); /* (requests end with the session) */
    }
    s->renew = MCP_RENEW_NONE;
    s->get_retry = 0;
    s->dc_delete = streamable(s) && s->session[0] != '\0' && !s->lost &&
                   (s->state == MOTE_MCP_READY || s->state == MOTE_MCP_LISTING);
    s->state = MOTE_MCP_CLOSED;
    s->dc_state = DC_FLUSH;
    mcp_log(s, s->dc_delete ? "disconnecting: DELETE ends the session" : "disconnecting", NULL,
            NULL);
    dc_pump(s);
    arm(s);
}

bool mote_mcp_http_dc_poll(struct mote_mcp_server *s, bool force, uint32_t el)
{
    unsigned i;

    (void)el;
    if (s->dc_state == DC_DONE || s->dc_state == DC_NONE)
        return true;
    if (!force)
        return false;
    for (i = 0; i < 3; i++)
        mote_mcp_wire_stop(s, &s->ch[i]);
    mcp_log(s, s->dc_state == DC_DELETE ? "the session's DELETE was not answered in time"
                                        : "its last notifications were not sent in time",
            NULL, NULL);
    s->dc_state = DC_DONE;
    return true;
}

void mote_mcp_http_dc_end(struct mote_mcp_server *s)
{
    unsigned i;

    for (i = 0; i < 3 && s->state != MOTE_MCP_OFF; i++) {
        mote_mcp_wire_stop(s, &s->ch[i]);
        mote_conn_close(&s->ch[i].conn);
    }
    if (s->io_timer != 0)
        (void)mote_timer_stop(s->m->loop, s->io_timer);
    s->io_timer = 0;
    s->kicked = false;
}
