/*
 * mcp_wire.c - one HTTP exchange of an MCP server's channel (mcp_wire.h):
 * the kept connection taken or a new one dialled (mote_dial: the proxy,
 * TLS), the request built once when the exchange begins (its head, and the
 * message after it when it fits: nothing that changes meanwhile, a new
 * session id or endpoint, changes a request half sent), the response parsed
 * (mote_http_resp) and its JSON body or event stream framed straight into
 * the channel's message buffer; deadlines on connect, send, headers and
 * silence; the one resend when a kept connection turns out closed, for
 * what repeats no effect (a tools/call is never sent twice: it is
 * reported as one that may or may not have run).
 */
#include <string.h>

#include "conn.h"
#include "mcp_int.h"
#include "mcp_wire.h"
#include "mote/mote.h"

const char mote_mcp_initialized_msg[] =
    "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}";

enum { W_IDLE = 0, W_DIAL, W_SEND, W_RESP };
enum { B_UNSET = 0, B_NONE, B_JSON, B_SSE, B_OTHER, B_ERROR };
enum { S_START = 0, S_FIELD, S_SPACE, S_VALUE, S_SKIP };
enum { F_OTHER = 0, F_DATA, F_EVENT };

/* The tail an event stream may take to end after its answer came, ms. */
#define TAIL_MS 2000u

/* ---- secrets ---- */

/* True when byte `i` of JSON text is inside an escape (`\n`, `\u00e9`): a
 * secret found there is not the secret's bytes. */
static bool in_escape(const char *text, size_t i)
{
    size_t d, k;

    for (d = 1; d <= 5 && d <= i; d++) {
        if (text[i - d] != '\\' || (d > 1 && text[i - d + 1] != 'u'))
            continue;
        for (k = 0; k < i - d && text[i - d - 1 - k] == '\\'; k++) {
        }
        if (k % 2 == 0)
            return true; /* (that `\` escapes, it is not escaped) */
    }
    return false;
}

/* Blanks value v (n bytes) wherever it is in text. In JSON text (`json`)
 * a value holding `"` or `\` is written escaped, so not looked for, and
 * a match inside an escape is not one: the text stays JSON. */
static void blank(char *text, size_t len, const char *v, size_t n, bool json)
{
    size_t i;

    if (n < 8 || n > len || (json && (memchr(v, '"', n) != NULL || memchr(v, '\\', n) != NULL)))
        return;
    for (i = 0; i + n <= len; i++) {
        if (text[i] == v[0] && memcmp(text + i, v, n) == 0 && !(json && in_escape(text, i))) {
            memset(text + i, '*', n);
            i += n - 1;
        }
    }
}

static void redact(const struct mote_mcp_server *s, char *text, size_t len, bool json)
{
    size_t i;

    if (s->kind == MOTE_MCP_STDIO || s->headers == NULL)
        return;
    for (i = 0; s->headers[i] != NULL; i++) {
        const char *v = strchr(s->headers[i], ':'), *last;

        if (v == NULL)
            continue;
        for (v++; *v == ' ' || *v == '\t'; v++) {
        }
        blank(text, len, v, strlen(v), json);
        last = strrchr(v, ' ');
        if (last != NULL)
            blank(text, len, last + 1, strlen(last + 1), json);
    }
}

void mote_mcp_redact(const struct mote_mcp_server *s, char *text, size_t len)
{
    redact(s, text, len, false);
}

void mote_mcp_redact_json(const struct mote_mcp_server *s, char *text, size_t len)
{
    redact(s, text, len, true);
}

/* ---- small pieces ---- */

static uint32_t due(struct mote_mcp_server *s, uint32_t ms)
{
    uint32_t t = mote_loop_now(s->m->loop) + ms;

    return t != 0 ? t : 1; /* (0: no deadline) */
}

static void on_io(struct mote_loop *loop, mote_watch_id w, int fd, unsigned rev, void *arg);

static int watch(struct mote_mcp_server *s, struct mote_mcp_chan *ch, int fd, unsigned events)
{
    struct mote_loop *loop = s->m->loop;

    if (ch->watch != 0 && mote_watch_fd(loop, ch->watch) == fd)
        return mote_watch_set(loop, ch->watch, events);
    if (ch->watch != 0)
        (void)mote_watch_remove(loop, ch->watch);
    ch->watch = 0;
    return mote_watch_add(loop, fd, events, on_io, ch, 0, &ch->watch);
}

static void unwatch(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    if (ch->watch != 0)
        (void)mote_watch_remove(s->m->loop, ch->watch);
    ch->watch = 0;
}

/* "HOST:PORT" of the server, into sb. */
static void authority(struct mote_sb *sb, const struct mote_mcp_server *s)
{
    bool v6 = strchr(s->to.host, ':') != NULL;

    mote_sb_s(sb, v6 ? "[" : "");
    mote_sb_s(sb, s->to.host);
    mote_sb_s(sb, v6 ? "]:" : ":");
    mote_sb_u(sb, s->to.port);
}

/* The message the exchange sends, or NULL (GET, DELETE). */
static const char *body_of(struct mote_mcp_server *s, struct mote_mcp_chan *ch, size_t *len)
{
    struct mote_mcp_queued *e;

    *len = 0;
    if (ch->method != MCP_POST)
        return NULL; /* (a resumption's GET carries a request's seq, not its message) */
    switch (ch->role) {
    case MCP_ROLE_MSG:
        e = mcp_q_find(s, ch->seq);
        if (e == NULL)
            return NULL;
        *len = e->len;
        return s->outbuf + e->off;
    case MCP_ROLE_RENEW_INIT:
        *len = s->init_len;
        return s->init_msg;
    case MCP_ROLE_RENEW_NOTE:
        *len = strlen(mote_mcp_initialized_msg);
        return mote_mcp_initialized_msg;
    default:
        return NULL;
    }
}

/* Writes the request's head into ch->req. Returns its length or < 0. */
static int build_head(struct mote_mcp_server *s, struct mote_mcp_chan *ch, bool body,
                      size_t body_len)
{
    const char *hdrs[MOTE_MCP_CONF_HEADERS + 13];
    char sid[MOTE_MCP_SESSION_MAX + 20], ver[sizeof(s->version) + 24];
    char lid[MOTE_MCP_EVENT_ID_MAX + 16];
    char path[MOTE_MCP_PATH_MAX + sizeof(s->to.host) + 16];
    struct mote_sb hb, sb;
    bool init = ch->role == MCP_ROLE_RENEW_INIT ||
                (ch->role == MCP_ROLE_MSG && ch->method == MCP_POST &&
                 mcp_q_find(s, ch->seq) != NULL && mcp_q_find(s, ch->seq)->kind == MCP_MSG_INIT);
    unsigned n = 0, i;
    int rc;

    for (i = 0; s->headers != NULL && s->headers[i] != NULL && i < MOTE_MCP_CONF_HEADERS; i++)
        hdrs[n++] = s->headers[i];
    if (ch->method == MCP_POST) {
        hdrs[n++] = "Content-Type: application/json";
        hdrs[n++] = "Accept: application/json, text/event-stream";
    } else if (ch->method == MCP_GET) {
        hdrs[n++] = "Accept: text/event-stream";
        hdrs[n++] = "Cache-Control: no-cache";
        if (s->kind == MOTE_MCP_HTTP && ch->last_id[0] != '\0') {
            /* where the stream broke: the server replays what came after */
            mote_str_join(lid, sizeof(lid), "Last-Event-ID: ", ch->last_id, NULL);
            hdrs[n++] = lid;
        }
    }
    ch->session_sent = false;
    if (s->kind == MOTE_MCP_HTTP && !init && s->session[0] != '\0') {
        mote_str_join(sid, sizeof(sid), "Mcp-Session-Id: ", s->session, NULL);
        hdrs[n++] = sid;
        ch->session_sent = true;
    }
    if (s->kind == MOTE_MCP_HTTP && !init && s->version[0] != '\0') {
        mote_str_join(ver, sizeof(ver), "MCP-Protocol-Version: ", s->version, NULL);
        hdrs[n++] = ver;
    }
    hdrs[n++] = "User-Agent: mote/" MOTE_VERSION_STRING;
    if (ch != &s->ch[MCP_CH_REQ] || s->m->net.keep_idle_ms == 0)
        hdrs[n++] = "Connection: close"; /* (HTTP/1.1 keeps it open without a word) */
    mote_sb_init(&sb, path, sizeof(path));
    if (s->via_proxy && !s->to.tls) {
        /* to the proxy: the request names the whole URL */
        if (s->proxy_auth[0] != '\0')
            hdrs[n++] = s->proxy_auth;
        mote_sb_s(&sb, "http://");
        authority(&sb, s);
    }
    hdrs[n] = NULL;
    mote_sb_s(&sb, ch->method == MCP_GET ? s->get_target : s->target);
    mote_sb_init(&hb, ch->req, sizeof(ch->req));
    rc = mote_http_write_head(mote_sb_put, &hb,
                              ch->method == MCP_GET    ? "GET"
                              : ch->method == MCP_POST ? "POST"
                                                       : "DELETE",
                              s->to.host, s->to.port, s->to.default_port, path, hdrs,
                              body ? (int64_t)body_len : -1);
    return rc < 0 ? rc : (int)hb.len;
}

/* ---- the end of an exchange ---- */

/* Frees the channel: its connection kept (when `keep` and the response
 * ended exactly) or closed. */
static void release(struct mote_mcp_server *s, struct mote_mcp_chan *ch, bool keep)
{
    unwatch(s, ch);
    mote_dial_stop(&ch->dial, s->m->loop->port);
    if (ch->phase != W_IDLE)
        mote_conn_release(&ch->conn, keep && ch == &s->ch[MCP_CH_REQ], s->m->net.keep_idle_ms);
    ch->phase = W_IDLE;
    ch->busy = false;
    ch->kick = false;
    ch->deadline = 0;
}

static void finish(struct mote_mcp_server *s, struct mote_mcp_chan *ch, bool keep, int rc,
                   const char *why)
{
    release(s, ch, keep);
    ch->ops->done(s, ch, rc, why);
}

void mote_mcp_wire_stop(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    if (!ch->busy)
        return;
    if (ch->in_feed) {
        ch->abort = true; /* closed when the parser returns */
        return;
    }
    release(s, ch, false);
}

/* True when the error body of the response is a JSON-RPC error whose
 * message speaks of the session ("No valid session ID provided"). */
static bool names_session(struct mote_mcp_server *s, const struct mote_mcp_chan *ch)
{
    struct mote_json *j = &s->m->json;
    char text[160];
    size_t i;

    if (ch->msg == NULL || ch->msg_len == 0 || ch->msg_over ||
        mote_json_parse(j, ch->msg, ch->msg_len) <= 0 ||
        mote_json_str(j, mote_json_path(j, 0, "error.message"), text, sizeof(text)) <= 0)
        return false;
    for (i = 0; text[i] != '\0'; i++) {
        if (mote_ascii_ieq(text + i, "session", 7))
            return true;
    }
    return false;
}

/* What a failed status says, in `why`. Returns the error. */
static int status_error(struct mote_mcp_server *s, struct mote_mcp_chan *ch, char *why, size_t cap)
{
    int st = ch->resp.status;
    struct mote_sb sb;

    mote_sb_init(&sb, why, cap);
    if (st == 404 || (st == 400 && ch->session_sent && names_session(s, ch))) {
        /* 404 is the spec's word for a session it does not know; the
         * TypeScript SDK's example servers say 400 "No valid session ID
         * provided". Any other 400 (a JSON-RPC error such as "Invalid
         * params") is the request's own error, said below. */
        if (ch->session_sent || (s->kind == MOTE_MCP_SSE && ch->method == MCP_POST)) {
            mote_sb_num(&sb, "the server does not know the session (HTTP ", (uint64_t)st, ")");
            return MCP_WIRE_SESSION;
        }
    }
    if (st == 401) {
        mote_sb_join(&sb, "the server refused the credentials (HTTP 401): log in (mote mcp login ",
                     s->name, ") or check the \"headers\" of this server in the MCP configuration");
        return MOTE_ERR_AUTH;
    }
    if (st == 403) {
        mote_sb_s(&sb, "the server refused access (HTTP 403)");
        if (s->scope[0] != '\0') {
            /* (step-up: a login that asks for more) */
            mote_sb_join(&sb, ": it wants the scope \"", s->scope, "\": log in again (mote mcp login ");
            mote_sb_join(&sb, s->name, " --scope \"", s->scope);
            mote_sb_s(&sb, "\")");
            s->scope[0] = '\0';
        }
        return MOTE_ERR_AUTH;
    }
    if (st == 405) {
        mote_sb_num(&sb, "the server does not take this request (HTTP ", (uint64_t)st, ")");
        if (ch->method == MCP_POST)
            mote_sb_s(&sb, s->kind == MOTE_MCP_HTTP
                               ? ": is it an HTTP+SSE server (\"type\": \"sse\")?"
                               : "");
        return MCP_WIRE_NOT_ALLOWED;
    }
    if (st == 404) {
        mote_sb_s(&sb, "the server has no MCP endpoint at this URL (HTTP 404)");
        return MOTE_ERR_HTTP;
    }
    if (st >= 300 && st < 400) {
        mote_sb_num(&sb, "the server redirects elsewhere (HTTP ", (uint64_t)st,
                    "): put the URL it names in the MCP configuration");
        return MOTE_ERR_HTTP;
    }
    mote_sb_num(&sb, "HTTP ", (uint64_t)st, " from the MCP server");
    if (ch->msg != NULL && ch->msg_len > 0 && !ch->msg_over) {
        /* a JSON-RPC error's message, when the body is one */
        struct mote_json *j = &s->m->json;
        char text[160];

        if (mote_json_parse(j, ch->msg, ch->msg_len) > 0 &&
            mote_json_str(j, mote_json_path(j, 0, "error.message"), text, sizeof(text)) > 0) {
            size_t i, at = sb.len + 2;

            mote_sb_s(&sb, ": ");
            mote_sb_s(&sb, text);
            for (i = at; i < sb.len; i++) {
                if ((unsigned char)why[i] < 0x20 || why[i] == 0x7f)
                    why[i] = '?';
            }
            mote_mcp_redact(s, why, sb.len);
        }
    }
    return MOTE_ERR_HTTP;
}

/* The response ended (`clean`: at its framed end with nothing after it). */
static void complete(struct mote_mcp_server *s, struct mote_mcp_chan *ch, bool clean)
{
    const struct mote_port *p = s->m->loop->port;
    int st = ch->resp.status;
    bool keep;

    if (st < 200 || st >= 300) {
        char why[240];
        int rc = status_error(s, ch, why, sizeof(why));

        finish(s, ch, false, rc, why);
        return;
    }
    if (ch->body == B_JSON && ch->msg != NULL) {
        if (ch->msg_over) {
            mote_mcp_in_reset(s);
            ch->ops->dropped(s, ch);
        } else if (ch->msg_len > 0) {
            if (ch->msg == s->inbuf)
                mote_mcp_in_end(s, ch->msg, &ch->msg_len);
            ch->msg[ch->msg_len] = '\0';
            ch->ops->message(s, ch, "message", ch->msg, ch->msg_len);
        }
        ch->msg_len = 0;
        if (!ch->busy)
            return; /* (stopped by what the message did) */
    }
    keep = clean && mote_http_resp_reusable(&ch->resp) &&
           (ch->conn.tls < 0 || !MOTE_PORT_HAS(p, tls_pending) ||
            p->tls_pending(p->ctx, ch->conn.tls) == 0);
    finish(s, ch, keep, 0, NULL);
}

static void fail(struct mote_mcp_server *s, struct mote_mcp_chan *ch, int rc, const char *why)
{
    finish(s, ch, false, rc, why);
}

static void timeout(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    char why[200];
    struct mote_sb sb;
    uint32_t ms = ch->phase == W_DIAL ? s->m->net.connect_timeout_ms : mcp_timeout(s);

    if (ch->phase == W_RESP && ch->answered) {
        complete(s, ch, false); /* its answer is in; the stream's end is not waited for */
        return;
    }
    mote_sb_init(&sb, why, sizeof(why));
    switch (ch->phase) {
    case W_DIAL:
        mote_sb_s(&sb, "could not reach ");
        authority(&sb, s);
        mote_sb_s(&sb, ch->dial.phase == MOTE_DIAL_RESOLVE     ? " (resolve)"
                       : ch->dial.phase == MOTE_DIAL_CONNECT   ? " (connect)"
                       : ch->dial.phase == MOTE_DIAL_TUNNEL    ? " (proxy tunnel)"
                                                               : " (TLS handshake)");
        break;
    case W_SEND:
        mote_sb_s(&sb, "sending to ");
        authority(&sb, s);
        mote_sb_s(&sb, " stalled");
        break;
    default:
        if (mote_http_resp_have_headers(&ch->resp))
            mote_sb_s(&sb, "the MCP server stalled: no data");
        else
            mote_sb_s(&sb, "no answer from the MCP server");
        break;
    }
    mote_sb_num(&sb, " within ", ms, " ms");
    fail(s, ch, MOTE_ERR_TIMEDOUT, why);
}

/* ---- the event stream, framed into the channel's buffer ---- */

static void put(struct mote_mcp_chan *ch, char c)
{
    if (ch->msg == ch->srv->inbuf && ch->body != B_ERROR) {
        /* (an answer of any size is kept within the buffer: mcp_in.c) */
        if (!ch->msg_over && !mote_mcp_in_put(ch->srv, ch->msg, &ch->msg_len, ch->msg_cap, c))
            ch->msg_over = true;
        return;
    }
    if (ch->msg == NULL || ch->msg_len + 1 >= ch->msg_cap) {
        ch->msg_over = true;
        return;
    }
    ch->msg[ch->msg_len++] = c;
}

static void dispatch(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    bool data = ch->sse_data, over = ch->msg_over;
    size_t len = ch->msg_len;

    if (ch->id_ok) {
        /* (an event with no data, a server's "priming" one, moves it too) */
        memcpy(ch->last_id, ch->id_in, (size_t)ch->id_len + 1);
        ch->id_ok = false;
        ch->id_new = true;
    }
    ch->sse_data = ch->msg_over = false;
    ch->msg_len = 0;
    if (!data)
        return;
    if (over) {
        mote_mcp_in_reset(s);
        if (ch->msg != NULL)
            ch->ops->dropped(s, ch);
        return;
    }
    if (ch->msg == s->inbuf)
        mote_mcp_in_end(s, ch->msg, &len);
    ch->msg[len] = '\0';
    ch->ops->message(s, ch, ch->event[0] != '\0' ? ch->event : "message", ch->msg, len);
    ch->event[0] = '\0';
}

static void line_end(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    uint8_t st = ch->sse_state;

    ch->sse_state = S_START;
    if (st == S_START) {
        dispatch(s, ch); /* an empty line ends the event */
        ch->event[0] = '\0';
        return;
    }
    if (st == S_FIELD && ch->field_len == 4 && memcmp(ch->field, "data", 4) == 0) {
        if (ch->sse_data) /* "data" alone: an empty line of data */
            put(ch, '\n');
        ch->sse_data = true;
    }
    if (st == S_FIELD && ch->field_len == 2 && memcmp(ch->field, "id", 2) == 0) {
        ch->id_len = 0; /* "id" alone: no id from here on */
        ch->id_in[0] = '\0';
        ch->id_ok = true;
    }
    if ((st != S_SPACE && st != S_VALUE) || ch->sse_skip)
        return;
    if (ch->field[0] == 'i' && !ch->id_bad) {
        /* taken whole or not at all: a cut id would replay the wrong events */
        ch->id_in[ch->id_len] = '\0';
        ch->id_ok = true;
    } else if (ch->field[0] == 'r' && ch->retry_n > 0 && ch->retry_n < 255) {
        uint32_t ms = ch->retry_in > MOTE_MCP_SSE_RETRY_MAX_MS ? MOTE_MCP_SSE_RETRY_MAX_MS
                                                                : ch->retry_in;

        /* (0 means none said) */
        ch->retry_ms = ms > MOTE_MCP_SSE_RETRY_MIN_MS
                           ? ms
                           : MOTE_MCP_SSE_RETRY_MIN_MS + (MOTE_MCP_SSE_RETRY_MIN_MS == 0);
    }
}

/* Event-stream bytes (WHATWG rules: CR, LF or CRLF; comments; several
 * data lines joined with LF; event names; the last event id, kept when
 * its event ends; retry, in ms). */
static void sse_feed(struct mote_mcp_server *s, struct mote_mcp_chan *ch, const char *p, size_t n)
{
    size_t i, elen;

    for (i = 0; i < n && !ch->abort; i++) {
        char c = p[i];

        if (ch->sse_cr) {
            ch->sse_cr = false;
            if (c == '\n')
                continue;
        }
        if (c == '\r' || c == '\n') {
            ch->sse_cr = c == '\r';
            line_end(s, ch);
            continue;
        }
        switch (ch->sse_state) {
        case S_START:
            ch->field_len = 0;
            if (c == ':') {
                ch->sse_state = S_SKIP; /* a comment (keep-alive) */
                break;
            }
            ch->sse_state = S_FIELD;
            /* fall through */
        case S_FIELD:
            if (c != ':') {
                if (ch->field_len < sizeof(ch->field))
                    ch->field[ch->field_len] = c;
                if (ch->field_len < 255)
                    ch->field_len++;
                break;
            }
            ch->sse_skip = true;
            if (ch->field_len == 4 && memcmp(ch->field, "data", 4) == 0) {
                if (ch->sse_data)
                    put(ch, '\n');
                ch->sse_data = true;
                ch->sse_skip = false;
                ch->field[0] = 'd';
            } else if (ch->field_len == 5 && memcmp(ch->field, "event", 5) == 0) {
                ch->event[0] = '\0';
                ch->sse_skip = false;
                ch->field[0] = 'e';
            } else if (ch->field_len == 2 && memcmp(ch->field, "id", 2) == 0) {
                /* (a refused id after a good one in the same event leaves
                 * the stream's id as it was: the event may come again) */
                ch->id_len = 0;
                ch->id_ok = ch->id_bad = ch->sse_skip = false;
                ch->field[0] = 'i';
            } else if (ch->field_len == 5 && memcmp(ch->field, "retry", 5) == 0) {
                ch->retry_in = 0;
                ch->retry_n = 0;
                ch->sse_skip = false;
                ch->field[0] = 'r';
            }
            ch->sse_state = S_SPACE;
            break;
        case S_SPACE:
            ch->sse_state = S_VALUE;
            if (c == ' ')
                break; /* one space after the colon is not the value's */
            /* fall through */
        case S_VALUE:
            if (ch->sse_skip)
                break;
            if (ch->field[0] == 'd') {
                put(ch, c);
            } else if (ch->field[0] == 'i') {
                /* visible ASCII only: it goes into a request's head */
                if ((unsigned char)c < 0x21 || (unsigned char)c > 0x7e ||
                    ch->id_len + 1u >= sizeof(ch->id_in))
                    ch->id_bad = true;
                else
                    ch->id_in[ch->id_len++] = c;
            } else if (ch->field[0] == 'r') {
                if (c < '0' || c > '9' || ch->retry_n == 255) {
                    ch->retry_n = 255; /* (not a number: ignored) */
                } else {
                    if (ch->retry_in < 100000000u)
                        ch->retry_in = ch->retry_in * 10u + (uint32_t)(c - '0');
                    if (ch->retry_n < 254)
                        ch->retry_n++;
                }
            } else {
                elen = strlen(ch->event);
                if (elen + 1 < sizeof(ch->event)) {
                    ch->event[elen] = c;
                    ch->event[elen + 1] = '\0';
                }
            }
            break;
        default:
            break;
        }
    }
}

/* ---- the response ---- */

/* Whether the exchange carries a request whose answer it brings (its
 * silence then has a deadline of its own each time a byte comes). */
static bool carries_request(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    struct mote_mcp_queued *e = ch->role == MCP_ROLE_MSG ? mcp_q_find(s, ch->seq) : NULL;

    return e != NULL && e->kind != MCP_MSG_NOTE;
}

/* The scope="..." of a 403's WWW-Authenticate (RFC 6750 3): visible
 * ASCII and spaces, whole or not at all. */
static void keep_scope(struct mote_mcp_server *s, const char *v, size_t vn)
{
    size_t i, o = 0;

    s->scope[0] = '\0';
    for (i = 0; i + 7 <= vn; i++) {
        if (memcmp(v + i, "scope=\"", 7) == 0 && (i == 0 || v[i - 1] == ' ' || v[i - 1] == ','))
            break;
    }
    for (i += 7; i < vn && v[i] != '"'; i++) {
        if (v[i] < 0x20 || v[i] > 0x7e || strchr("\\$`!", v[i]) != NULL ||
            o + 1 >= sizeof(s->scope))
            break; /* (named in a command to paste: nothing a shell would run) */
        s->scope[o++] = v[i];
    }
    s->scope[i < vn && v[i] == '"' ? o : 0] = '\0';
}

static int on_header(void *arg, const char *name, size_t n, const char *v, size_t vn)
{
    struct mote_mcp_chan *ch = arg;
    struct mote_mcp_server *s = ch->srv;
    struct mote_mcp_queued *e = ch->role == MCP_ROLE_MSG ? mcp_q_find(s, ch->seq) : NULL;
    size_t i;

    if (ch->resp.status == 403 && mote_ascii_is(name, n, "www-authenticate")) {
        keep_scope(s, v, vn);
        return 0;
    }
    if (!mote_ascii_is(name, n, "mcp-session-id") || ch->resp.status < 200 ||
        ch->resp.status >= 300 || ch->method != MCP_POST)
        return 0;
    if (ch->role != MCP_ROLE_RENEW_INIT && (e == NULL || e->kind != MCP_MSG_INIT))
        return 0; /* (a session is given by its initialize's answer) */
    if (vn == 0 || vn >= sizeof(s->session))
        return MOTE_ERR_TOO_LARGE;
    for (i = 0; i < vn; i++) {
        if ((unsigned char)v[i] < 0x21 || (unsigned char)v[i] > 0x7e)
            return MOTE_ERR_BADMSG; /* visible ASCII only: it goes into our heads */
    }
    memcpy(s->session, v, vn);
    s->session[vn] = '\0';
    return 0;
}

/* What the body is, from the status and Content-Type: what answers a
 * notification or a DELETE is not looked at. */
static uint8_t body_kind(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    const char *ct = ch->resp.content_type;
    size_t n;

    if (ch->resp.status < 200 || ch->resp.status >= 300)
        return B_ERROR;
    if (ch->resp.status != 200 || ch->role == MCP_ROLE_DELETE || ch->role == MCP_ROLE_RENEW_NOTE ||
        (s->kind == MOTE_MCP_SSE && ch->role != MCP_ROLE_GET) ||
        (ch->role == MCP_ROLE_MSG && !carries_request(s, ch)))
        return B_NONE; /* 202 Accepted, 204 */
    while (*ct == ' ')
        ct++;
    n = strcspn(ct, "; \t");
    if (n == 0)
        return ch->method == MCP_GET ? B_SSE : B_JSON;
    if (mote_ascii_is(ct, n, "text/event-stream"))
        return B_SSE;
    if (mote_ascii_is(ct, n, "application/json"))
        return B_JSON;
    return B_OTHER;
}

static int on_body(void *arg, const char *p, size_t n)
{
    struct mote_mcp_chan *ch = arg;
    size_t i;

    if (ch->body == B_UNSET)
        ch->body = body_kind(ch->srv, ch);
    switch (ch->body) {
    case B_SSE:
        sse_feed(ch->srv, ch, p, n);
        break;
    case B_JSON:
    case B_ERROR:
        for (i = 0; i < n && !ch->msg_over; i++)
            put(ch, p[i]);
        break;
    default:
        break;
    }
    return 0;
}

/* The headers just came: a 2xx goes on; anything else is read to its end
 * for the message (an error's JSON-RPC text), HTML instead of JSON ends
 * the exchange now. Returns false when the exchange ended. */
static bool headers_in(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    char why[240];
    struct mote_sb sb;

    ch->body = body_kind(ch->srv, ch);
    if (ch->body == B_OTHER) {
        size_t i;

        mote_sb_init(&sb, why, sizeof(why));
        mote_sb_s(&sb, "the MCP server answered HTTP 200 with Content-Type ");
        mote_sb_s(&sb, ch->resp.content_type);
        mote_sb_s(&sb, ", not JSON or an event stream");
        for (i = 0; i < sb.len; i++) {
            if ((unsigned char)why[i] < 0x20 || why[i] == 0x7f)
                why[i] = '?';
        }
        mote_mcp_redact(s, why, sb.len);
        fail(s, ch, MOTE_ERR_PROTO, why);
        return false;
    }
    if (ch->body == B_ERROR && (ch->resp.status == 401 || ch->resp.status == 403)) {
        /* (its body is not shown: it might repeat the credentials) */
        int rc = status_error(s, ch, why, sizeof(why));

        mote_mcp_redact(s, why, strlen(why)); /* (the scope is the server's) */
        if (s->state == MOTE_MCP_READY)
            mcp_log(s, why, NULL, NULL); /* (a call's error is the model's; the user needs it) */
        fail(s, ch, rc, why);
        return false;
    }
    if (ch->body != B_ERROR)
        ch->ops->headers(s, ch);
    return ch->busy;
}

/* Waits for the connection to be ready for `want`: MOTE_ERR_AGAIN, or
 * the failure after the exchange ended. */
static int wait_for(struct mote_mcp_server *s, struct mote_mcp_chan *ch, unsigned want)
{
    int rc = watch(s, ch, ch->conn.fd, want);

    if (rc < 0) {
        fail(s, ch, rc, "no free watch (MOTE_MAX_WATCHES)");
        return rc;
    }
    return MOTE_ERR_AGAIN;
}

static int xsend(const struct mote_port *p, struct mote_mcp_chan *ch, const char *b, size_t n,
                 unsigned *want)
{
    *want = MOTE_POLL_OUT;
    if (ch->conn.tls >= 0)
        return p->tls_send(p->ctx, ch->conn.tls, b, n, want);
    return p->net_send(p->ctx, ch->conn.fd, b, n);
}

static int xrecv(const struct mote_port *p, struct mote_mcp_chan *ch, char *b, size_t n,
                 unsigned *want)
{
    *want = MOTE_POLL_IN;
    if (ch->conn.tls >= 0)
        return p->tls_recv(p->ctx, ch->conn.tls, b, n, want);
    return p->net_recv(p->ctx, ch->conn.fd, b, n);
}

/* A new connection for the exchange: the dial, with the server's proxy
 * and the network settings (the model's trust store). */
static void dial_new(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    const struct mote_mcp_net *net = &s->m->net;

    mote_dial_init(&ch->dial, s->to.host, s->to.port, s->to.tls, s->via_proxy ? &s->proxy : NULL,
                   s->proxy_auth, &ch->conn.fd, &ch->conn.tls);
    ch->dial.peer.ca_file = net->ca_file;
    ch->dial.peer.alpn = "http/1.1";
    ch->dial.peer.resume = net->tls_resume;
    ch->dial.peer.session_max_s = net->tls_session_max_s;
    ch->dial.opened = &ch->conn.opened;
    ch->phase = W_DIAL;
    ch->deadline = due(s, net->connect_timeout_ms);
}

/* Opens the exchange's connection: the kept one when it is still good,
 * else a new one. */
static void open_conn(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    ch->kept = mote_conn_take(&ch->conn, s->m->loop, s->origin) == 1;
    if (ch->kept) {
        ch->phase = W_SEND;
        ch->deadline = due(s, mcp_timeout(s));
        return;
    }
    dial_new(s, ch);
}

/* The request, built once: its head in ch->req, and the message after it
 * when it fits (one send, one TCP segment, one TLS record); else the
 * message is sent from the queue after the head. Returns 0, or < 0 after
 * the exchange ended. */
static int build_request(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    size_t blen;
    const char *body = body_of(s, ch, &blen);
    int rc;

    ch->whole = false;
    ch->head_len = ch->req_len = 0;
    if (ch->method == MCP_POST && body == NULL) {
        fail(s, ch, MOTE_ERR_CANCELED, "the message was given up");
        return MOTE_ERR_CANCELED;
    }
    rc = build_head(s, ch, ch->method == MCP_POST, blen);
    if (rc < 0) {
        fail(s, ch, rc,
             "the request head does not fit MOTE_NET_BUF (the \"headers\" are too long)");
        return rc;
    }
    ch->head_len = (size_t)rc;
    ch->req_len = ch->head_len + blen;
    if (ch->req_len <= sizeof(ch->req)) {
        if (blen > 0)
            memcpy(ch->req + ch->head_len, body, blen);
        ch->whole = true;
    }
    return 0;
}

void mote_mcp_wire_begin(struct mote_mcp_server *s, struct mote_mcp_chan *ch,
                    const struct mote_mcp_wire_ops *ops)
{
    ch->ops = ops;
    ch->busy = true;
    ch->resent = ch->got_byte = ch->answered = ch->kick = ch->abort = ch->in_feed = false;
    ch->tail = false;
    ch->sent = 0;
    ch->body = B_UNSET;
    ch->msg_len = 0;
    if (ch->msg == s->inbuf)
        mote_mcp_in_reset(s);
    ch->msg_over = ch->sse_cr = ch->sse_data = false;
    ch->sse_state = S_START;
    ch->event[0] = '\0';
    ch->id_ok = ch->id_new = false;
    if (ch->method != MCP_GET) {
        /* a new stream (a GET goes on from where its stream broke) */
        ch->last_id[0] = '\0';
        ch->retry_ms = 0;
    }
    ch->once = ch->role == MCP_ROLE_MSG && ch->method == MCP_POST &&
               mcp_q_find(s, ch->seq) != NULL && mcp_q_find(s, ch->seq)->kind == MCP_MSG_CALL;
    if (build_request(s, ch) < 0)
        return;
    open_conn(s, ch);
    mote_mcp_wire_run(s, ch);
}

/* The kept connection was closed by the server before any byte of the
 * response (the race every client meets): the request goes again, once,
 * on a new connection. */
static bool resend(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    if (!ch->kept || ch->resent || ch->got_byte || ch->once)
        return false;
    ch->resent = true;
    unwatch(s, ch);
    mote_conn_drop(&ch->conn);
    ch->sent = 0;
    ch->kept = false;
    dial_new(s, ch);
    return true;
}

static void conn_broke(struct mote_mcp_server *s, struct mote_mcp_chan *ch, const char *what,
                       int rc)
{
    char why[200];
    struct mote_sb sb;

    mote_sb_init(&sb, why, sizeof(why));
    mote_sb_s(&sb, what);
    authority(&sb, s);
    mote_sb_s(&sb, ": ");
    mote_sb_s(&sb, mote_strerror(rc));
    if (ch->once && ch->sent > 0 && !ch->got_byte)
        mote_sb_s(&sb, "; the call may or may not have run (it is not sent again)");
    fail(s, ch, rc, why);
}

/* Sends the head and the message, as far as the socket takes them.
 * Returns > 0 (bytes moved), 0 (all sent), or MOTE_ERR_AGAIN (waiting),
 * or < 0 after the exchange ended. */
static int send_some(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    const struct mote_port *p = s->m->loop->port;
    size_t blen = ch->req_len - ch->head_len, n;
    const char *from;
    unsigned want;
    int rc;

    if (ch->sent >= ch->req_len)
        return 0;
    if (ch->whole || ch->sent < ch->head_len) {
        from = ch->req + ch->sent;
        n = (ch->whole ? ch->req_len : ch->head_len) - ch->sent;
    } else {
        /* the message from the queue (its bytes stay as they were; only
         * where they are in the queue may move) */
        size_t now;
        const char *body = body_of(s, ch, &now);

        if (body == NULL || now != blen) {
            fail(s, ch, MOTE_ERR_CANCELED, "the message was given up");
            return MOTE_ERR_CANCELED;
        }
        from = body + (ch->sent - ch->head_len);
        n = blen - (ch->sent - ch->head_len);
    }
    rc = xsend(p, ch, from, n, &want);
    if (rc == MOTE_ERR_AGAIN)
        return wait_for(s, ch, want);
    if (rc <= 0) {
        if (resend(s, ch))
            return 1;
        conn_broke(s, ch, "the connection broke while sending to ",
                   rc == 0 ? MOTE_ERR_CONNRESET : rc);
        return rc == 0 ? MOTE_ERR_CONNRESET : rc;
    }
    ch->sent += (size_t)rc;
    ch->deadline = due(s, mcp_timeout(s));
    return rc;
}

/* Reads and parses what came. Returns > 0 (bytes), MOTE_ERR_AGAIN, or
 * another value < 0 once the exchange ended. */
static int read_some(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    const struct mote_port *p = s->m->loop->port;
    bool had = mote_http_resp_have_headers(&ch->resp);
    unsigned want;
    int rc, used;

    if (mcp_must_wait(s) && ch->msg == s->inbuf) {
        /* A new tool list is on its way while a request's body is being
         * sent with the old one: it waits unread until the body is out
         * (mote_mcp_unhold). */
        unwatch(s, ch);
        s->paused = true;
        return MOTE_ERR_AGAIN;
    }
    rc = xrecv(p, ch, s->m->scratch, sizeof(s->m->scratch), &want);
    if (rc == MOTE_ERR_AGAIN)
        return wait_for(s, ch, want);
    if (rc <= 0) {
        if (!ch->got_byte) {
            if (resend(s, ch))
                return 1;
            conn_broke(s, ch, "the connection closed before any answer from ",
                       rc == 0 ? MOTE_ERR_CONNRESET : rc);
            return MOTE_ERR_CONNRESET;
        }
        if (mote_http_resp_eof(&ch->resp) == 0 || ch->answered) {
            if (ch->body == B_SSE)
                line_end(s, ch); /* (an unfinished event is dropped, as the standard says) */
            complete(s, ch, false);
            return MOTE_ERR_CONNRESET;
        }
        if (ch->role == MCP_ROLE_GET) {
            fail(s, ch, MOTE_ERR_CONNRESET, "the server ended its event stream");
            return MOTE_ERR_CONNRESET;
        }
        conn_broke(s, ch, "the connection closed in the middle of the answer from ",
                   MOTE_ERR_CONNRESET);
        return MOTE_ERR_CONNRESET;
    }
    ch->got_byte = true;
    ch->in_feed = true;
    used = mote_http_resp_feed(&ch->resp, s->m->scratch, (size_t)rc);
    ch->in_feed = false;
    if (ch->abort) {
        release(s, ch, false); /* given up from inside: no word back */
        return MOTE_ERR_CANCELED;
    }
    if (used < 0) {
        char why[160];

        mote_str_join(why, sizeof(why),
                      mote_http_resp_have_headers(&ch->resp)
                          ? "malformed HTTP body from the MCP server: "
                          : "malformed HTTP response from the MCP server: ",
                      mote_strerror(used), NULL);
        fail(s, ch, used, why);
        return used;
    }
    if (!had && mote_http_resp_have_headers(&ch->resp) && !headers_in(s, ch))
        return MOTE_ERR_CANCELED;
    /* The deadlines: the headers within the request's from its end; then
     * a request's answer may take its time while bytes come (the
     * protocol's deadline bounds it), anything else has one deadline in
     * all, the event stream none (it may be quiet for hours); after the
     * answer, a short tail for the stream's end. */
    if (ch->answered && !ch->tail) {
        ch->tail = true;
        ch->deadline = due(s, mcp_timeout(s) < TAIL_MS ? mcp_timeout(s) : TAIL_MS);
    } else if (!ch->answered && mote_http_resp_have_headers(&ch->resp)) {
        if (ch->role == MCP_ROLE_GET)
            ch->deadline = 0;
        else if (carries_request(s, ch))
            ch->deadline = due(s, mcp_timeout(s));
    }
    if (mote_http_resp_done(&ch->resp)) {
        if (ch->body == B_SSE)
            line_end(s, ch);
        if (ch->busy)
            complete(s, ch, used == rc);
        return MOTE_ERR_CANCELED;
    }
    if (ch->conn.tls >= 0 && MOTE_PORT_HAS(p, tls_pending) &&
        p->tls_pending(p->ctx, ch->conn.tls) > 0)
        return rc; /* more is decrypted and waiting */
    if (ch->conn.tls < 0 && (size_t)rc < sizeof(s->m->scratch)) {
        /* A short read emptied the socket: wait for more rather than ask
         * again only to hear "would block". */
        return wait_for(s, ch, MOTE_POLL_IN);
    }
    return rc;
}

void mote_mcp_wire_run(struct mote_mcp_server *s, struct mote_mcp_chan *ch)
{
    const struct mote_port *p = s->m->loop->port;
    size_t moved = 0;
    char why[240];
    int rc;

    if (!ch->busy)
        return;
    ch->kick = false;
    if (ch->deadline != 0 && !mote_before(mote_loop_now(s->m->loop), ch->deadline)) {
        timeout(s, ch);
        return;
    }
    while (ch->busy) {
        if (moved >= MOTE_STEP_IO_BYTES) {
            /* Enough for one step: the loop takes signals, cancels and
             * other servers, then this one goes on. */
            ch->kick = true;
            ch->ops->kicked(s);
            return;
        }
        switch (ch->phase) {
        case W_DIAL:
            why[0] = '\0';
            rc = mote_dial_step(&ch->dial, p, s->m->scratch, sizeof(s->m->scratch), why,
                                sizeof(why));
            if (rc == MOTE_ERR_AGAIN) {
                if ((rc = watch(s, ch, ch->dial.wait_fd, ch->dial.wait_events)) < 0)
                    fail(s, ch, rc, "no free watch (MOTE_MAX_WATCHES)");
                return;
            }
            if (rc < 0) {
                mote_mcp_redact(s, why, strlen(why));
                fail(s, ch, rc, why);
                return;
            }
            ch->conn.resumed = ch->dial.resumed;
            ch->phase = W_SEND;
            ch->deadline = due(s, mcp_timeout(s));
            break;
        case W_SEND:
            rc = send_some(s, ch);
            if (rc == 0) {
                ch->conn.requests++;
                ch->phase = W_RESP;
                mote_http_resp_init(&ch->resp, on_body, ch);
                ch->resp.on_header = on_header;
                ch->deadline = due(s, mcp_timeout(s));
                if ((rc = watch(s, ch, ch->conn.fd, MOTE_POLL_IN)) < 0) {
                    fail(s, ch, rc, "no free watch (MOTE_MAX_WATCHES)");
                    return;
                }
                break;
            }
            if (rc < 0)
                return;
            moved += (size_t)rc;
            break;
        case W_RESP:
            rc = read_some(s, ch);
            if (rc < 0)
                return;
            moved += (size_t)rc;
            break;
        default:
            return;
        }
    }
}

static void on_io(struct mote_loop *loop, mote_watch_id w, int fd, unsigned rev, void *arg)
{
    struct mote_mcp_chan *ch = arg;

    (void)loop, (void)w, (void)fd, (void)rev;
    mote_mcp_wire_run(ch->srv, ch);
    if (ch->busy)
        ch->ops->kicked(ch->srv); /* (its deadline moved) */
}

bool mote_mcp_wire_answer_of(struct mote_mcp_server *s, const char *msg, size_t len, int64_t id)
{
    struct mote_json *j = &s->m->json;
    int64_t got;

    if (mote_json_parse(j, msg, len) <= 0 || mote_json_type_of(j, 0) != MOTE_JSON_OBJECT ||
        mote_json_member(j, 0, "method") >= 0 ||
        mote_json_int(j, mote_json_member(j, 0, "id"), &got) < 0)
        return false;
    return got == id &&
           (mote_json_member(j, 0, "result") >= 0 || mote_json_member(j, 0, "error") >= 0);
}

bool mote_mcp_wire_refused(const struct mote_mcp_chan *ch)
{
    return ch->body == B_ERROR || ch->body == B_OTHER;
}
