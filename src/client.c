/*
 * client.c - one streamed model request as a non-blocking job: resolve,
 * connect, TLS, send (head, then the body pulled piece by piece), read the
 * response headers, decode the stream; retries, timeouts, cancellation,
 * and the choice to keep its connection (conn.c keeps it).
 */
#include "mote/mote_client.h"

#include <string.h>

#include "conn.h"
#include "mote/mote.h"
#include "util.h"

void mote_llm_conf_defaults(struct mote_llm_conf *c)
{
    memset(c, 0, sizeof(*c));
    c->provider = MOTE_PROVIDER_ANTHROPIC;
    c->api_key = "";
    c->key_env = "the API key variable";
    c->connect_timeout_ms = MOTE_LLM_CONNECT_TIMEOUT_MS;
    c->first_byte_timeout_ms = MOTE_LLM_FIRST_BYTE_TIMEOUT_MS;
    c->idle_timeout_ms = MOTE_LLM_IDLE_TIMEOUT_MS;
    c->request_timeout_ms = MOTE_LLM_REQUEST_TIMEOUT_MS;
    c->event_timeout_ms = MOTE_LLM_EVENT_TIMEOUT_MS;
    c->max_attempts = MOTE_LLM_MAX_ATTEMPTS;
    c->backoff_ms = MOTE_LLM_BACKOFF_MS;
    c->backoff_max_ms = MOTE_LLM_BACKOFF_MAX_MS;
    c->keep_idle_ms = MOTE_LLM_KEEP_IDLE_MS;
    c->tls_resume = MOTE_TLS_RESUME_MEMORY;
    c->tls_session_max_s = MOTE_TLS_SESSION_MAX_S;
}

const char *mote_llm_phase_name(enum mote_llm_phase p)
{
    static const char *const names[] = {"idle",          "resolve", "connect",
                                        "proxy tunnel",  "TLS handshake", "send",
                                        "response headers", "stream", "backoff",
                                        "done"};

    return (unsigned)p < sizeof(names) / sizeof(names[0]) ? names[p] : "?";
}

static void msg(struct mote_llm_call *c, const char *a, const char *b, const char *d)
{
    (void)mote_str_join(c->errmsg, sizeof(c->errmsg), a, b, d);
}

/* Which connections may carry this call's requests: the same scheme,
 * host and port, through the same proxy with the same credentials,
 * trusting the same CA file. */
static uint64_t origin_of(const struct mote_llm_call *c)
{
    return mote_dial_origin(&c->url, c->via_proxy ? &c->proxy : NULL, c->proxy_auth,
                            c->conf->ca_file);
}

int mote_llm_call_init(struct mote_llm_call *call, const struct mote_llm_conf *conf,
                       const struct mote_llm_req *req, mote_llm_fn fn, void *arg)
{
    struct mote_sb sb;
    int rc;

    /* The buffers at the end (net, HTTP, SSE, decoder) are set up by their
     * own inits when the request is sent: untouched until then, their
     * pages cost no memory. */
    memset(call, 0, offsetof(struct mote_llm_call, buf));
    call->conf = conf;
    call->req = req;
    call->on_event = fn;
    call->on_event_arg = arg;
    rc = mote_url_parse(&call->url, conf->base_url != NULL ? conf->base_url : "");
    if (rc < 0) {
        msg(call, "bad base URL '", conf->base_url != NULL ? conf->base_url : "",
            "': use http://host[:port][/path] or https://...");
        return MOTE_ERR_CONFIG;
    }
    if (strlen(conf->api_key) > MOTE_LLM_KEY_MAX) {
        msg(call, "the API key is longer than MOTE_LLM_KEY_MAX", NULL, NULL);
        return MOTE_ERR_TOO_LARGE;
    }
    if (conf->proxy != NULL && conf->proxy[0] != '\0' &&
        !mote_proxy_bypass(conf->no_proxy, call->url.host, call->url.port)) {
        rc = mote_proxy_parse(&call->proxy, call->proxy_auth, sizeof(call->proxy_auth),
                              conf->proxy);
        if (rc < 0) {
            /* (the URL is not repeated: it may hold a password) */
            mote_proxy_error(rc, call->errmsg, sizeof(call->errmsg));
            return MOTE_ERR_CONFIG;
        }
        call->via_proxy = true;
    }
    call->origin = origin_of(call);
    mote_sb_init(&sb, call->auth, sizeof(call->auth));
    if (conf->api_key[0] != '\0') {
        mote_sb_s(&sb, conf->provider == MOTE_PROVIDER_ANTHROPIC ? "x-api-key: "
                                                                 : "Authorization: Bearer ");
        mote_sb_s(&sb, conf->api_key);
    }
    return 0;
}

/* Drops the job's watch and timer and a pending name lookup. */
static void stop_io(struct mote_loop *loop, struct mote_llm_call *c)
{
    if (c->watch != 0)
        (void)mote_watch_remove(loop, c->watch);
    if (c->timer != 0)
        (void)mote_timer_stop(loop, c->timer);
    c->watch = c->timer = 0;
    mote_dial_stop(&c->dial, loop->port);
}

/* The attempt is over: its connection is kept (the caller's, when the
 * response ended exactly and may stay) or closed. */
static void end_conn(struct mote_loop *loop, struct mote_llm_call *c, bool keep)
{
    stop_io(loop, c);
    if (c->k == NULL)
        return;
    mote_conn_release(c->k, keep && c->k != &c->own, c->conf->keep_idle_ms);
}

static int watch(struct mote_loop *loop, mote_job_id self, struct mote_llm_call *c, int fd,
                 unsigned events)
{
    if (c->watch != 0 && mote_watch_fd(loop, c->watch) == fd)
        return mote_watch_set(loop, c->watch, events);
    if (c->watch != 0)
        (void)mote_watch_remove(loop, c->watch);
    c->watch = 0;
    return mote_watch_add(loop, fd, events, NULL, NULL, self, &c->watch);
}

static void set_deadline(struct mote_loop *loop, struct mote_llm_call *c, uint32_t ms)
{
    c->deadline = mote_loop_now(loop) + ms;
}

/* In the stream: the idle deadline from now, or the event deadline if it
 * comes first (moved on by each complete event). */
static void stream_deadline(struct mote_loop *loop, struct mote_llm_call *c)
{
    uint32_t now = mote_loop_now(loop);

    if (c->got_event) {
        c->event_deadline = now + c->conf->event_timeout_ms;
        c->got_event = false;
    }
    c->deadline = now + c->conf->idle_timeout_ms;
    c->event_cut = c->conf->event_timeout_ms > 0 && mote_before(c->event_deadline, c->deadline);
    if (c->event_cut)
        c->deadline = c->event_deadline;
}

/* The cause an error event's type names (Anthropic's "overloaded_error",
 * OpenAI's "rate_limit_exceeded", ...). */
static int event_cause(const char *type)
{
    static const struct {
        const char *part;
        int code;
    } causes[] = {
        {"overloaded", MOTE_ERR_OVERLOADED},   {"rate_limit", MOTE_ERR_RATE_LIMIT},
        {"invalid_request", MOTE_ERR_BAD_REQUEST}, {"authentication", MOTE_ERR_AUTH},
        {"permission", MOTE_ERR_AUTH},         {"api_error", MOTE_ERR_SERVER},
        {"server_error", MOTE_ERR_SERVER},
    };
    size_t i, n = type != NULL ? strlen(type) : 0, k;

    for (i = 0; i < sizeof(causes) / sizeof(causes[0]); i++) {
        size_t m = strlen(causes[i].part);

        for (k = 0; k + m <= n; k++) {
            if (memcmp(type + k, causes[i].part, m) == 0)
                return causes[i].code;
        }
    }
    return MOTE_ERR_HTTP;
}

/* Decoded events pass through; an error event stops the stream. */
static int on_decoded(void *arg, const struct mote_llm_event *ev)
{
    struct mote_llm_call *c = arg;

    if (ev->type == MOTE_LLM_ERROR) {
        struct mote_sb sb;

        mote_sb_init(&sb, c->errmsg, sizeof(c->errmsg));
        mote_sb_s(&sb, "the model API sent an error");
        if (ev->id != NULL && ev->id[0] != '\0') {
            mote_sb_s(&sb, " (");
            mote_sb_s(&sb, ev->id);
            mote_sb_s(&sb, ")");
        }
        mote_sb_s(&sb, ": ");
        mote_sb_s(&sb, ev->text != NULL && ev->text[0] != '\0' ? ev->text : "no message");
        c->result = ev->retryable && !c->content ? MOTE_ERR_AGAIN : MOTE_ERR_HTTP;
        return event_cause(ev->id);
    }
    if (ev->type == MOTE_LLM_TEXT || ev->type == MOTE_LLM_TOOL_START ||
        ev->type == MOTE_LLM_TOOL_ARGS || ev->type == MOTE_LLM_THINKING ||
        ev->type == MOTE_LLM_THINKING_SIG)
        c->content = true; /* journaled as it comes: never sent again */
    return c->on_event != NULL ? c->on_event(c->on_event_arg, ev) : 0;
}

static int on_sse(void *arg, const char *event, const char *data, size_t len, const char *id)
{
    struct mote_llm_call *c = arg;

    (void)id;
    c->got_event = true;
    return mote_llm_dec_event(&c->dec, event, data, len);
}

/* True unless the response says it is something else than an event
 * stream (no Content-Type at all is taken as one: some compatible servers
 * leave it out). */
static bool event_stream(const char *ct)
{
    static const char want[] = "text/event-stream";
    size_t i;

    while (*ct == ' ' || *ct == '\t')
        ct++;
    if (*ct == '\0')
        return true;
    for (i = 0; i < sizeof(want) - 1; i++) {
        char ch = ct[i];

        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if (ch != want[i])
            return false;
    }
    return ct[i] == '\0' || ct[i] == ';' || ct[i] == ' ' || ct[i] == '\t';
}

static int on_body(void *arg, const char *p, size_t n)
{
    struct mote_llm_call *c = arg;

    if (c->http.status == 200 && c->dec.done)
        return 0; /* the end of the body after the stream's end event */
    if (c->http.status == 200 && !c->not_sse && !c->dec.content && c->err_len == 0 &&
        !event_stream(c->http.content_type))
        c->not_sse = true;
    if (c->http.status == 200 && !c->not_sse)
        return mote_sse_feed(&c->sse, p, n);
    /* An error body: keep its start for the message. */
    if (c->err_len < sizeof(c->err_body) - 1) {
        size_t take = n < sizeof(c->err_body) - 1 - c->err_len ? n
                                                                : sizeof(c->err_body) - 1 - c->err_len;

        memcpy(c->err_body + c->err_len, p, take);
        c->err_len += take;
        c->err_body[c->err_len] = '\0';
    }
    return 0;
}

/* host:port as a request names it (an IPv6 address in brackets). */
static void put_authority(struct mote_sb *sb, const struct mote_url *u)
{
    bool v6 = strchr(u->host, ':') != NULL;

    if (v6)
        mote_sb_s(sb, "[");
    mote_sb_s(sb, u->host);
    mote_sb_s(sb, v6 ? "]:" : ":");
    mote_sb_u(sb, u->port);
}

struct headbuf {
    char *p;
    size_t cap, len;
};

static int head_sink(void *arg, const char *p, size_t n)
{
    struct headbuf *h = arg;

    if (h->len + n > h->cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(h->p + h->len, p, n);
    h->len += n;
    return 0;
}

static int start_send(struct mote_llm_call *c)
{
    const char *hdrs[9];
    char path[600];
    struct headbuf hb = {c->buf, sizeof(c->buf), 0};
    struct mote_sb sb;
    int64_t len;
    unsigned n = 0;
    int rc;

    /* The request as this attempt sends it: what the process's servers
     * at this origin, and this call's refusals, changed. */
    c->rq = *c->req;
    mote_llm_memo_apply(c->memo, c->origin, &c->rq);
    c->rq.omit = (uint8_t)((c->rq.omit | c->drop) & ~c->need);
    c->rq.add = (uint8_t)((c->rq.add | c->need) & ~c->drop);
    if (c->drop & MOTE_LLM_KEY_MAX_COMPLETION)
        c->rq.max_completion_tokens = false;
    len = mote_llm_body_length(&c->rq);
    c->body_len = len > 0 ? (uint64_t)len : 0;

    if (len < 0) {
        msg(c, "cannot build the request body", NULL, NULL);
        return (int)len;
    }
    if (c->auth[0] != '\0')
        hdrs[n++] = c->auth;
    if (c->conf->provider == MOTE_PROVIDER_ANTHROPIC)
        hdrs[n++] = "anthropic-version: 2023-06-01";
    hdrs[n++] = "content-type: application/json";
    hdrs[n++] = "accept: text/event-stream";
    hdrs[n++] = "user-agent: mote/" MOTE_VERSION_STRING;
    if (c->k == &c->own || c->conf->keep_idle_ms == 0)
        hdrs[n++] = "connection: close"; /* (HTTP/1.1 keeps it open without a word) */
    mote_sb_init(&sb, path, sizeof(path));
    if (c->via_proxy && !c->url.tls) {
        /* to the proxy: the request names the whole URL */
        if (c->proxy_auth[0] != '\0')
            hdrs[n++] = c->proxy_auth;
        mote_sb_s(&sb, "http://");
        put_authority(&sb, &c->url);
    }
    hdrs[n] = NULL;
    mote_sb_s(&sb, c->url.path);
    mote_sb_s(&sb, mote_llm_path(c->conf->provider, c->url.path));
    rc = mote_http_write_head(head_sink, &hb, "POST", c->url.host, c->url.port,
                              c->url.default_port, path, hdrs, len);
    if (rc < 0) {
        msg(c, "the request head does not fit MOTE_NET_BUF", NULL, NULL);
        return rc;
    }
    c->send_len = hb.len;
    c->send_off = 0;
    c->body_left = (uint64_t)len;
    c->head_sent = true;
    c->k->requests++;
    mote_llm_body_init(&c->body, &c->rq);
    return 0;
}

static int xsend(const struct mote_port *p, struct mote_llm_call *c, unsigned *want)
{
    *want = MOTE_POLL_OUT;
    if (c->k->tls >= 0)
        return p->tls_send(p->ctx, c->k->tls, c->buf + c->send_off, c->send_len - c->send_off,
                           want);
    return p->net_send(p->ctx, c->k->fd, c->buf + c->send_off, c->send_len - c->send_off);
}

static int xrecv(const struct mote_port *p, struct mote_llm_call *c, unsigned *want)
{
    *want = MOTE_POLL_IN;
    if (c->k->tls >= 0)
        return p->tls_recv(p->ctx, c->k->tls, c->buf, sizeof(c->buf), want);
    return p->net_recv(p->ctx, c->k->fd, c->buf, sizeof(c->buf));
}

static void conn_msg(struct mote_llm_call *c, const char *what, int rc)
{
    struct mote_sb sb;

    mote_sb_init(&sb, c->errmsg, sizeof(c->errmsg));
    mote_sb_s(&sb, what);
    mote_sb_s(&sb, " ");
    mote_sb_s(&sb, c->url.host);
    mote_sb_s(&sb, ":");
    mote_sb_u(&sb, c->url.port);
    if (c->via_proxy) {
        mote_sb_s(&sb, " through the proxy ");
        mote_sb_s(&sb, c->proxy.host);
        mote_sb_s(&sb, ":");
        mote_sb_u(&sb, c->proxy.port);
    }
    mote_sb_s(&sb, ": ");
    mote_sb_s(&sb, mote_strerror(rc));
}

/* A non-200 response is complete (or cut): say why, decide on a retry. */
static int status_error(struct mote_llm_call *c)
{
    char type[64], text[256];
    bool retry = mote_llm_classify_error(c->err_body, c->err_len, c->http.status, type,
                                         sizeof(type), text, sizeof(text), &c->dec.json);
    struct mote_sb sb;
    int st = c->http.status;

    c->retry_after_s = c->http.retry_after_s; /* this response's, for the backoff */
    if (st == 400 || st == 422) {
        /* A key mote added on its own that the server refuses (or one it
         * needs): asked once again with it changed, and remembered. */
        uint8_t drop, need;

        if (mote_llm_refusal_keys(&c->rq, c->err_body, c->err_len, c->tried, &drop, &need)) {
            c->tried |= (uint8_t)(drop | need);
            c->drop = (uint8_t)((c->drop | drop) & ~need);
            c->need = (uint8_t)((c->need | need) & ~drop);
            mote_llm_memo_keep(c->memo, c->origin, drop, need);
            c->adjust = true;
        }
    }
    mote_sb_init(&sb, c->errmsg, sizeof(c->errmsg));
    mote_sb_s(&sb, "HTTP ");
    mote_sb_u(&sb, (uint64_t)st);
    mote_sb_s(&sb, " from the model API");
    if (type[0] != '\0') {
        mote_sb_s(&sb, " (");
        mote_sb_s(&sb, type);
        mote_sb_s(&sb, ")");
    }
    if (text[0] != '\0') {
        mote_sb_s(&sb, ": ");
        mote_sb_s(&sb, text);
    }
    if ((st == 400 || st == 413 || st == 422) &&
        mote_llm_overflow(c->err_body, c->err_len, &c->ctx_limit, &c->ctx_used)) {
        /* over the model's context window: the caller shortens the
         * conversation (compacts it) and asks again; never retried as it is */
        c->result = MOTE_ERR_HTTP;
        return MOTE_ERR_CONTEXT;
    }
    if (st == 401 || st == 403) {
        mote_sb_s(&sb, "; check ");
        mote_sb_s(&sb, c->conf->key_env);
        c->result = MOTE_ERR_AUTH;
        return MOTE_ERR_AUTH;
    }
    c->result = retry ? MOTE_ERR_AGAIN : MOTE_ERR_HTTP;
    return st == 429               ? MOTE_ERR_RATE_LIMIT
           : st == 529 || st == 503 ? MOTE_ERR_OVERLOADED
           : st == 400 || st == 422 ? MOTE_ERR_BAD_REQUEST
           : st >= 500 && st <= 599 ? MOTE_ERR_SERVER
                                    : MOTE_ERR_HTTP;
}

/* The response ended without the stream's proper end: an error, never a
 * success - but for a stream whose answer is complete without it
 * (mote_llm_dec_finish): 0. */
static int stream_cut(struct mote_llm_call *c)
{
    if (c->not_sse) {
        /* A proxy's login page, a JSON answer to a non-streaming request:
         * say what arrived, not that a stream ended. */
        struct mote_sb sb;
        size_t i;

        mote_sb_init(&sb, c->errmsg, sizeof(c->errmsg));
        mote_sb_s(&sb, "the model API answered HTTP 200 with Content-Type ");
        mote_sb_s(&sb, c->http.content_type);
        mote_sb_s(&sb, ", not an event stream");
        if (c->err_len > 0) {
            for (i = 0; i < c->err_len; i++) {
                unsigned char ch = (unsigned char)c->err_body[i];

                if (ch < 0x20 || ch == 0x7f)
                    c->err_body[i] = ' ';
            }
            mote_sb_s(&sb, ": ");
            mote_sb_n(&sb, c->err_body, c->err_len < 200 ? c->err_len : 200);
        }
        return MOTE_ERR_PROTO;
    }
    if (mote_llm_dec_finish(&c->dec))
        return 0; /* a finish_reason and no [DONE]: complete */
    if (c->dec.err != 0 && c->errmsg[0] != '\0')
        return c->dec.err;
    msg(c, c->dec.content ? "the stream was cut off in the middle of the answer"
                          : "the stream ended before the answer",
        c->conf->provider == MOTE_PROVIDER_ANTHROPIC          ? " (no message_stop)"
        : c->conf->provider == MOTE_PROVIDER_OPENAI_RESPONSES ? " (no response.completed)"
                                                              : " (no [DONE])",
        NULL);
    return MOTE_ERR_CUT_OFF;
}

/* Runs the phases until one would block (MOTE_ERR_AGAIN), the stream is
 * complete (0) or something failed (< 0; c->result MOTE_ERR_AGAIN marks a
 * retryable one). */
static int advance(struct mote_loop *loop, mote_job_id self, struct mote_llm_call *c)
{
    const struct mote_port *p = loop->port;
    size_t moved = 0; /* bytes sent and received in this step */
    size_t got;       /* bytes of the last receive */
    unsigned want;
    int rc;

    for (;;) {
        if (moved >= MOTE_STEP_IO_BYTES) {
            /* Enough for one step: the loop takes signals, cancels and
             * deadlines, then steps this job again at once. */
            (void)mote_job_wake(loop, self);
            return MOTE_ERR_AGAIN;
        }
        switch (c->phase) {
        case MOTE_PHASE_RESOLVE:
        case MOTE_PHASE_CONNECT:
        case MOTE_PHASE_TUNNEL:
        case MOTE_PHASE_HANDSHAKE:
            /* a new connection (dial.c): lookup, connect, tunnel, TLS */
            rc = mote_dial_step(&c->dial, p, c->buf, sizeof(c->buf), c->errmsg,
                                sizeof(c->errmsg));
            if (c->dial.phase < MOTE_DIAL_DONE)
                c->phase = (uint8_t)(MOTE_PHASE_RESOLVE + c->dial.phase);
            if (rc == MOTE_ERR_AGAIN) {
                if ((rc = watch(loop, self, c, c->dial.wait_fd, c->dial.wait_events)) < 0)
                    return rc;
                return MOTE_ERR_AGAIN;
            }
            if (rc < 0) {
                if (c->dial.retry)
                    c->result = MOTE_ERR_AGAIN; /* the proxy's tunnel broke, or it could not
                                                 * reach the server: retried */
                if (c->dial.status != 0)
                    c->http_status = c->dial.status;
                return rc;
            }
            c->k->resumed = c->dial.resumed;
            c->tls_resumed = c->k->resumed;
            c->phase = MOTE_PHASE_SEND;
            set_deadline(loop, c, c->conf->idle_timeout_ms);
            break;
        case MOTE_PHASE_SEND:
            if (!c->head_sent) {
                if ((rc = start_send(c)) < 0)
                    return rc;
                set_deadline(loop, c, c->conf->idle_timeout_ms);
            }
            if (c->send_off == c->send_len) {
                rc = mote_llm_body_read(&c->body, c->buf, sizeof(c->buf));
                if (rc < 0) {
                    msg(c, "cannot build the request body", NULL, NULL);
                    return rc;
                }
                if ((uint64_t)rc > c->body_left || (rc == 0 && c->body_left != 0)) {
                    /* What was counted is what is sent, or nothing more:
                     * a body that changed would be cut or overrun by the
                     * server's reading of Content-Length. */
                    msg(c, "the request body changed while it was sent (its parts must stay as "
                           "they are from the counting to the last byte)", NULL, NULL);
                    return MOTE_ERR_PROTO;
                }
                c->body_left -= (uint64_t)rc;
                if (rc == 0) {
                    mote_http_resp_init(&c->http, on_body, c);
                    mote_sse_init(&c->sse, on_sse, c);
                    mote_llm_dec_init(&c->dec, c->conf->provider, on_decoded, c);
                    c->dec.id_seed = c->req->id_seed;
                    c->dec.ids = mote_llm_conf_profile(c->conf)->ids;
                    c->phase = MOTE_PHASE_HEADERS;
                    if (c->on_phase != NULL)
                        c->on_phase(c->on_event_arg, MOTE_PHASE_HEADERS); /* body sent */
                    set_deadline(loop, c, c->conf->first_byte_timeout_ms);
                    if ((rc = watch(loop, self, c, c->k->fd, MOTE_POLL_IN)) < 0)
                        return rc;
                    break;
                }
                c->send_len = (size_t)rc;
                c->send_off = 0;
            }
            rc = xsend(p, c, &want);
            if (rc == MOTE_ERR_AGAIN) {
                if ((rc = watch(loop, self, c, c->k->fd, want)) < 0)
                    return rc;
                return MOTE_ERR_AGAIN;
            }
            if (rc < 0) {
                conn_msg(c, "the connection broke while sending to", rc);
                c->result = MOTE_ERR_AGAIN; /* nothing came back yet: retry */
                c->stale = c->conn_kept;
                return rc;
            }
            c->send_off += (size_t)rc;
            moved += (size_t)rc;
            set_deadline(loop, c, c->conf->idle_timeout_ms);
            break;
        case MOTE_PHASE_HEADERS:
        case MOTE_PHASE_STREAM:
            rc = xrecv(p, c, &want);
            if (rc == MOTE_ERR_AGAIN) {
                if ((rc = watch(loop, self, c, c->k->fd, want)) < 0)
                    return rc;
                return MOTE_ERR_AGAIN;
            }
            if (rc <= 0) {
                /* The connection ended (or broke) before the stream's end. */
                if (c->draining)
                    return 0; /* the answer is whole; only the connection is lost */
                if (!c->got_byte) {
                    conn_msg(c, "the connection closed before any response from",
                             rc == 0 ? MOTE_ERR_CONNRESET : rc);
                    c->result = MOTE_ERR_AGAIN;
                    c->stale = c->conn_kept;
                    return MOTE_ERR_CONNRESET;
                }
                if (c->http.status != 200 && mote_http_resp_have_headers(&c->http))
                    return status_error(c);
                return stream_cut(c);
            }
            c->got_byte = true;
            moved += (size_t)rc;
            got = (size_t)rc;
            /* The headers have one deadline from the request's end: a
             * server sending them a byte at a time is not waited for
             * forever. In the stream, silence has the idle deadline and
             * the gap between whole events its own. */
            if (c->phase == MOTE_PHASE_STREAM && !c->draining)
                stream_deadline(loop, c);
            rc = mote_http_resp_feed(&c->http, c->buf, got);
            if (mote_http_resp_done(&c->http))
                /* Framed to its end: the connection may stay if nothing
                 * came after it (here, or decrypted and waiting). */
                c->keep = mote_http_resp_reusable(&c->http) && rc == (int)got &&
                          (c->k->tls < 0 || !MOTE_PORT_HAS(p, tls_pending) ||
                           p->tls_pending(p->ctx, c->k->tls) == 0);
            if (rc < 0 && rc == c->dec.err && c->errmsg[0] != '\0')
                return rc; /* an error event, already explained */
            if (rc < 0) {
                struct mote_sb sb;

                mote_sb_init(&sb, c->errmsg, sizeof(c->errmsg));
                mote_sb_s(&sb, !mote_http_resp_have_headers(&c->http) ? "malformed HTTP response: "
                                                                      : "malformed model stream: ");
                mote_sb_s(&sb, mote_strerror(rc));
                if (rc == MOTE_ERR_TOO_LARGE)
                    mote_sb_s(&sb, " (a line or event over the configured limit)");
                if (rc == MOTE_ERR_FULL)
                    mote_sb_s(&sb, " (more parallel tool calls than MOTE_LLM_MAX_TOOL_CALLS)");
                return rc;
            }
            if (c->phase == MOTE_PHASE_HEADERS && mote_http_resp_have_headers(&c->http)) {
                c->phase = MOTE_PHASE_STREAM;
                c->http_status = c->http.status;
                c->event_deadline = mote_loop_now(loop) + c->conf->event_timeout_ms;
                c->got_event = false;
                stream_deadline(loop, c);
            } else if (c->phase == MOTE_PHASE_STREAM && c->got_event && !c->draining) {
                stream_deadline(loop, c);
            }
            if (c->http.status == 200 && c->dec.done) {
                if (mote_http_resp_done(&c->http))
                    return 0;
                if (!c->draining) {
                    /* The answer is whole; the rest of the response (the
                     * last chunk) decides whether the connection stays. */
                    uint32_t tail = c->conf->idle_timeout_ms < MOTE_LLM_TAIL_MS
                                        ? c->conf->idle_timeout_ms
                                        : MOTE_LLM_TAIL_MS;

                    c->draining = true;
                    set_deadline(loop, c, tail);
                }
            }
            if (mote_http_resp_done(&c->http)) {
                if (c->http.status != 200)
                    return status_error(c);
                return stream_cut(c);
            }
            if (c->k->tls < 0 && got < sizeof(c->buf)) {
                /* A short read emptied the socket: wait for more rather
                 * than ask again only to hear "would block" (TLS: the
                 * backend knows the same from its own reads). */
                if ((rc = watch(loop, self, c, c->k->fd, MOTE_POLL_IN)) < 0)
                    return rc;
                return MOTE_ERR_AGAIN;
            }
            break;
        default:
            return MOTE_ERR_INVAL;
        }
    }
}

/* Starts an attempt (`count`: a new one; else the one resend after a
 * kept connection was found closed): on the kept connection when it is
 * still good, else on a new one. */
static void start_attempt(struct mote_loop *loop, struct mote_llm_call *c, bool count)
{
    int rc;

    stop_io(loop, c);
    if (count)
        c->attempt++;
    c->k = c->conn != NULL ? c->conn : &c->own;
    rc = mote_conn_take(c->k, loop, c->origin);
    if (rc < 0) { /* another call has it: one of our own */
        c->k = &c->own;
        rc = mote_conn_take(c->k, loop, c->origin);
    }
    c->conn_kept = rc == 1;
    c->tls_resumed = c->conn_kept && c->k->resumed;
    c->phase = c->conn_kept ? MOTE_PHASE_SEND : MOTE_PHASE_RESOLVE;
    if (!c->conn_kept) {
        /* a new one: through the proxy when there is one, trusting the
         * caller's CA file, offering a kept TLS session and ALPN */
        mote_dial_init(&c->dial, c->url.host, c->url.port, c->url.tls,
                       c->via_proxy ? &c->proxy : NULL, c->proxy_auth, &c->k->fd, &c->k->tls);
        c->dial.peer.ca_file = c->conf->ca_file;
        c->dial.peer.alpn = "http/1.1";
        c->dial.peer.resume = c->conf->tls_resume;
        c->dial.peer.session_max_s = c->conf->tls_session_max_s;
        c->dial.opened = &c->k->opened;
    }
    if (c->on_phase != NULL)
        c->on_phase(c->on_event_arg, MOTE_PHASE_RESOLVE); /* an attempt begins */
    c->got_byte = c->head_sent = c->not_sse = c->got_event = c->event_cut = false;
    c->stale = c->keep = c->draining = false;
    c->retry_after_s = 0;
    c->send_len = c->send_off = 0;
    c->err_len = 0;
    c->err_body[0] = '\0';
    c->errmsg[0] = '\0';
    c->result = 0;
    c->http_status = 0;
    set_deadline(loop, c, c->conn_kept ? c->conf->idle_timeout_ms : c->conf->connect_timeout_ms);
}

static uint32_t backoff_delay(struct mote_loop *loop, const struct mote_llm_call *c)
{
    uint32_t d = c->conf->backoff_ms, cap = c->conf->backoff_max_ms, jitter = 0;
    uint32_t i;

    for (i = 1; i < c->attempt && d < cap; i++)
        d *= 2u;
    if (d > cap)
        d = cap;
    if (MOTE_PORT_HAS(loop->port, random) &&
        loop->port->random(loop->port->ctx, &jitter, sizeof(jitter)) == 0 && d > 1)
        d += jitter % (d / 2u + 1u);
    if (c->retry_after_s > 0 && c->retry_after_s * 1000u > d)
        d = c->retry_after_s * 1000u;
    return d > cap ? cap : d;
}

/* Says which deadline passed; returns its code. */
static int timeout_msg(struct mote_llm_call *c)
{
    struct mote_sb sb;
    uint32_t ms = c->phase <= MOTE_PHASE_HANDSHAKE ? c->conf->connect_timeout_ms
                  : c->phase == MOTE_PHASE_HEADERS ? c->conf->first_byte_timeout_ms
                  : c->phase == MOTE_PHASE_STREAM && c->event_cut ? c->conf->event_timeout_ms
                                                   : c->conf->idle_timeout_ms;

    mote_sb_init(&sb, c->errmsg, sizeof(c->errmsg));
    switch (c->phase) {
    case MOTE_PHASE_HEADERS:
        mote_sb_s(&sb, c->got_byte ? "the model API's response headers did not complete within "
                                   : "no response from the model API within ");
        break;
    case MOTE_PHASE_STREAM:
        mote_sb_s(&sb, c->event_cut ? "the model API stalled: no complete event for "
                                    : "the model API stalled: no data for ");
        break;
    case MOTE_PHASE_SEND:
        mote_sb_s(&sb, "sending the request stalled for ");
        break;
    default:
        mote_sb_s(&sb, "could not reach ");
        mote_sb_s(&sb, c->url.host);
        mote_sb_s(&sb, " (");
        mote_sb_s(&sb, mote_llm_phase_name((enum mote_llm_phase)c->phase));
        mote_sb_s(&sb, ") within ");
        break;
    }
    mote_sb_u(&sb, ms);
    mote_sb_s(&sb, " ms");
    return c->phase <= MOTE_PHASE_HANDSHAKE        ? MOTE_ERR_CONNECT_TIMEOUT
           : c->phase == MOTE_PHASE_HEADERS        ? MOTE_ERR_FIRST_BYTE_TIMEOUT
           : c->phase == MOTE_PHASE_STREAM && c->event_cut ? MOTE_ERR_EVENT_TIMEOUT
                                                   : MOTE_ERR_IDLE_TIMEOUT;
}

/* The request's overall deadline (request_timeout_ms), if it has one. */
static bool has_req_deadline(const struct mote_llm_call *c)
{
    return c->conf->request_timeout_ms > 0;
}

static void req_timeout_msg(struct mote_llm_call *c)
{
    struct mote_sb sb;

    mote_sb_init(&sb, c->errmsg, sizeof(c->errmsg));
    mote_sb_s(&sb, "the model request did not complete within ");
    mote_sb_u(&sb, c->conf->request_timeout_ms);
    mote_sb_s(&sb, " ms (its overall deadline; the last phase: ");
    mote_sb_s(&sb, mote_llm_phase_name((enum mote_llm_phase)c->phase));
    mote_sb_s(&sb, ")");
}

static int call_step(struct mote_loop *loop, mote_job_id self, void *task)
{
    struct mote_llm_call *c = task;
    uint32_t now;
    int rc;

    if (mote_job_cancelled(loop, self)) {
        end_conn(loop, c, false);
        c->result = MOTE_ERR_CANCELED;
        c->phase = MOTE_PHASE_DONE;
        return MOTE_STEP_CANCELLED;
    }
    if (c->phase == MOTE_PHASE_IDLE) {
        c->port = loop->port;
        if (mote_port_missing(loop->port, MOTE_PORT_NET |
                                              (c->url.tls ? MOTE_PORT_TLS : 0u)) != NULL) {
            msg(c, "this port has no ", mote_port_missing(loop->port, MOTE_PORT_NET |
                                             (c->url.tls ? MOTE_PORT_TLS : 0u)), NULL);
            (void)mote_job_set_error(loop, self, c->errmsg);
            return MOTE_ERR_NOSYS;
        }
        c->req_deadline = mote_loop_now(loop) +
                          (c->conf->request_timeout_ms < 0x7fffffffu ? c->conf->request_timeout_ms
                                                                     : 0x7fffffffu);
        start_attempt(loop, c, true);
    }
    now = mote_loop_now(loop);
    if (has_req_deadline(c) && !mote_before(now, c->req_deadline)) {
        if (c->draining) {
            /* the answer is whole; only its response's end was awaited */
            end_conn(loop, c, false);
            c->phase = MOTE_PHASE_DONE;
            c->result = 0;
            return MOTE_STEP_DONE;
        }
        /* Over: never sent again, the connection not kept. */
        req_timeout_msg(c);
        c->stale = c->keep = false;
        c->result = rc = MOTE_ERR_TIMEDOUT;
        goto failed;
    }
    if (c->phase == MOTE_PHASE_BACKOFF) {
        if (mote_before(now, c->deadline))
            goto wait;
        start_attempt(loop, c, true);
    }
    rc = advance(loop, self, c);
    if (rc == MOTE_ERR_AGAIN && c->draining && !mote_before(mote_loop_now(loop), c->deadline))
        rc = 0; /* the answer is whole; its response did not end: not kept */
    if (rc == 0) {
        end_conn(loop, c, c->keep);
        c->phase = MOTE_PHASE_DONE;
        c->result = 0;
        return MOTE_STEP_DONE;
    }
    if (rc == MOTE_ERR_AGAIN) {
        if (!mote_before(mote_loop_now(loop), c->deadline)) {
            rc = timeout_msg(c);
            goto failed;
        }
        goto wait;
    }
failed:
    if (c->adjust && !c->content) {
        /* The server named a key to change: the request goes again at
         * once, changed (not an attempt: nothing was wrong but a key). */
        c->adjust = false;
        end_conn(loop, c, c->keep);
        start_attempt(loop, c, false);
        (void)mote_job_wake(loop, self);
        goto wait;
    }
    if (c->stale && !c->resent && !c->content) {
        /* The kept connection had been closed by the server: the request
         * goes again, at once, on a new one (once). */
        c->resent = true;
        end_conn(loop, c, false);
        start_attempt(loop, c, false);
        (void)mote_job_wake(loop, self);
        goto wait;
    }
    if (c->result == MOTE_ERR_AGAIN && !c->content && c->attempt < c->conf->max_attempts) {
        uint32_t d = backoff_delay(loop, c);

        /* (no retry that would begin past the request's deadline) */
        if (!has_req_deadline(c) || mote_before(mote_loop_now(loop) + d, c->req_deadline)) {
            end_conn(loop, c, c->keep);
            c->phase = MOTE_PHASE_BACKOFF;
            set_deadline(loop, c, d);
            goto wait;
        }
    }
    if (c->result == MOTE_ERR_AGAIN && c->attempt > 1) {
        char first[MOTE_JOB_ERRMSG_LEN];
        struct mote_sb sb;

        mote_str_copy(first, sizeof(first), c->errmsg);
        mote_sb_init(&sb, c->errmsg, sizeof(c->errmsg));
        mote_sb_s(&sb, "gave up after ");
        mote_sb_u(&sb, c->attempt);
        mote_sb_s(&sb, " attempts: ");
        mote_sb_s(&sb, first);
    }
    if (c->errmsg[0] == '\0')
        msg(c, "the model request failed: ", mote_strerror(rc), NULL);
    end_conn(loop, c, c->keep);
    c->phase = MOTE_PHASE_DONE;
    c->result = rc;
    (void)mote_job_set_error(loop, self, c->errmsg);
    return rc;

wait:
    /* Wake at the deadline (the watch wakes earlier on I/O). */
    if (c->timer != 0)
        (void)mote_timer_stop(loop, c->timer);
    c->timer = 0;
    {
        uint32_t at = has_req_deadline(c) && mote_before(c->req_deadline, c->deadline)
                          ? c->req_deadline
                          : c->deadline;
        int32_t left = (int32_t)(at - mote_loop_now(loop));

        if (mote_timer_start(loop, left > 0 ? (uint32_t)left : 0u, NULL, NULL, self, &c->timer) <
            0) {
            msg(c, "no free timer (MOTE_MAX_TIMERS)", NULL, NULL);
            end_conn(loop, c, false);
            (void)mote_job_set_error(loop, self, c->errmsg);
            return MOTE_ERR_FULL;
        }
    }
    return MOTE_STEP_PENDING;
}

static void call_release(struct mote_loop *loop, void *task)
{
    end_conn(loop, task, false); /* (a connection already kept stays kept) */
}

const struct mote_task_ops mote_llm_call_ops = {"llm", call_step, call_release};
