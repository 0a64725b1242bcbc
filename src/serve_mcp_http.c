/*
 * serve_mcp_http.c - MCP's Streamable HTTP transport at /mcp on mote
 * serve's listeners (serve_mcp.h): the Origin check (DNS rebinding), the
 * session header and the protocol version header; POST answered with
 * 202, JSON, or an event stream when a call's answer comes later (as the
 * client's Accept allows); GET as the session's stream of the server's
 * own messages; DELETE ends a session. Refusals carry a JSON-RPC error
 * without an id.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

static const char *const known_versions[] = {"2025-06-18", "2025-03-26", "2024-11-05",
                                             "2025-11-25"};

static int conn_index(const struct serve *sv, const struct mote_httpd_conn *c)
{
    return (int)(c - sv->http.conns);
}

/* A refusal: {"jsonrpc":"2.0","id":null,"error":{...}}, logged. */
static void refuse(struct serve *sv, struct mote_httpd_conn *c, unsigned status, int code,
                   const char *msg, const char *extra)
{
    char body[400];
    struct mote_sb sb;
    struct mote_jw w;

    mote_sb_init(&sb, body, sizeof(body));
    mote_jw_init(&w, mote_sb_put, &sb);
    mote_serve_rpc_error(&w, NULL, code, msg);
    if (status != 404 && status != 202)
        c->keep_alive = false;
    mote_httpd_reply(c, status, body, w.err == 0 ? sb.len : 0, extra);
    mote_httpd_say(&sv->http, "mcp: refused: ", msg, NULL);
}

/* An Origin of this device: http(s)://localhost, 127.x.y.z or [::1],
 * with any port. A web page elsewhere (a name that resolves here: DNS
 * rebinding) is refused. */
static bool loopback_origin(const char *o)
{
    const char *h, *end;
    size_t n, i;

    if (strncmp(o, "http://", 7) == 0)
        h = o + 7;
    else if (strncmp(o, "https://", 8) == 0)
        h = o + 8;
    else
        return false;
    if (strncmp(h, "[::1]", 5) == 0) {
        end = h + 5;
    } else {
        for (end = h; *end != '\0' && *end != ':' && *end != '/'; end++) {
        }
        n = (size_t)(end - h);
        if (!(n == 9 && mote_ascii_ieq(h, "localhost", 9))) {
            if (n < 7 || strncmp(h, "127.", 4) != 0)
                return false;
            for (i = 4; i < n; i++) {
                if (!((h[i] >= '0' && h[i] <= '9') || h[i] == '.'))
                    return false;
            }
        }
    }
    if (*end == ':') {
        for (end++; *end >= '0' && *end <= '9'; end++) {
        }
    }
    return *end == '\0' || (end[0] == '/' && end[1] == '\0');
}

/* True if the q parameter in p[0..n) says 0 (the type is refused). */
static bool q_zero(const char *p, size_t n)
{
    size_t i;

    for (i = 0; i + 2 < n; i++) {
        if ((p[i] == 'q' || p[i] == 'Q') && p[i + 1] == '=' && (i == 0 || p[i - 1] == ';' ||
                                                               p[i - 1] == ' ')) {
            size_t k = i + 2;

            if (p[k] != '0')
                return false;
            for (k++; k < n && (p[k] == '0' || p[k] == '.'); k++) {
            }
            return k == n || p[k] == ';' || p[k] == ' ' || p[k] == '\t';
        }
    }
    return false;
}

bool mote_serve_accepts(const char *accept, const char *type)
{
    const char *p = accept, *slash = strchr(type, '/');
    size_t fam = (size_t)(slash - type);

    if (p == NULL)
        return true;
    while (*p != '\0') {
        const char *item, *stop;
        size_t n;

        while (*p == ' ' || *p == '\t' || *p == ',')
            p++;
        item = p;
        while (*p != '\0' && *p != ',' && *p != ';' && *p != ' ' && *p != '\t')
            p++;
        n = (size_t)(p - item);
        for (stop = p; *stop != '\0' && *stop != ','; stop++) {
        }
        if (n > 0 && !q_zero(p, (size_t)(stop - p)) &&
            ((n == 3 && memcmp(item, "*/*", 3) == 0) ||
             (n == strlen(type) && mote_ascii_ieq(item, type, n)) ||
             (n == fam + 2 && mote_ascii_ieq(item, type, fam + 1) && item[n - 1] == '*')))
            return true;
        p = stop;
    }
    return false;
}

void mote_serve_mcp_http_head(struct serve *sv, struct mote_httpd_conn *c)
{
    const struct mote_hreq *req = &c->io->req;
    enum mote_hreq_method m = req->method;
    unsigned i;
    bool ok;

    if (req->origin != NULL && !loopback_origin(req->origin)) {
        refuse(sv, c, 403, -32000,
               "Forbidden: the Origin is not this device's (a web page elsewhere may not use it)",
               NULL);
        return;
    }
    if (m != MOTE_HM_POST && m != MOTE_HM_GET && m != MOTE_HM_DELETE) {
        refuse(sv, c, m == MOTE_HM_OTHER ? 501 : 405, -32000, "POST, GET or DELETE /mcp",
               "Allow: GET, POST, DELETE\r\n");
        return;
    }
    if (req->mcp_protocol_version != NULL) {
        for (i = 0, ok = false; i < MOTE_ARRAY_LEN(known_versions); i++)
            ok = ok || strcmp(req->mcp_protocol_version, known_versions[i]) == 0;
        if (!ok) {
            refuse(sv, c, 400, -32000,
                   "Bad Request: unsupported MCP-Protocol-Version (2025-06-18, 2025-03-26)", NULL);
            return;
        }
    }
    if (req->mcp_session_id != NULL) {
        if (mote_serve_mcp_find(sv, req->mcp_session_id) == NULL) {
            refuse(sv, c, 404, -32001, "Session not found: initialize again", NULL);
            return;
        }
    } else if (m != MOTE_HM_POST) {
        refuse(sv, c, 400, -32000, "Bad Request: Mcp-Session-Id header is required", NULL);
        return;
    }
    if (m == MOTE_HM_GET && !mote_serve_accepts(req->accept, "text/event-stream")) {
        refuse(sv, c, 406, -32000, "Not Acceptable: the client must accept text/event-stream",
               NULL);
        return;
    }
    if (m == MOTE_HM_POST) {
        if (!mote_serve_accepts(req->accept, "application/json") &&
            !mote_serve_accepts(req->accept, "text/event-stream")) {
            refuse(sv, c, 406, -32000,
                   "Not Acceptable: the client must accept application/json or "
                   "text/event-stream",
                   NULL);
            return;
        }
        if (req->content_type != NULL &&
            !mote_ascii_ieq(req->content_type, "application/json", 16)) {
            refuse(sv, c, 415, -32000, "Unsupported Media Type: the body is application/json",
                   NULL);
            return;
        }
    }
}

/* `n` bytes of the body from `p`, after the head in the out buffer: in
 * the out buffer when they fit, else in a pool buffer; in one chunk of a
 * chunked body. False: no buffer is free. */
static bool put_body(struct mote_httpd_conn *c, const char *p, size_t n)
{
    size_t mark;
    char *pool, hx[12];
    struct mote_sb sb;

    if (n == 0)
        return true;
    if (mote_httpd_room(c) >= n + 8) {
        if (!mote_httpd_chunk_open(c, &mark))
            return false;
        (void)mote_httpd_out(c, p, n);
        mote_httpd_chunk_close(c, mark);
        return true;
    }
    pool = mote_httpd_pool_take(c);
    if (pool == NULL || n + 2 > MOTE_SERVE_BODY_MAX)
        return false;
    if (c->chunked) {
        static const char hex[] = "0123456789abcdef";
        unsigned sh;
        bool lead = true;

        mote_sb_init(&sb, hx, sizeof(hx));
        for (sh = 28;; sh -= 4) {
            unsigned d = (unsigned)(n >> sh) & 15u;

            if (d != 0 || !lead || sh == 0) {
                lead = false;
                mote_sb_n(&sb, &hex[d], 1);
            }
            if (sh == 0)
                break;
        }
        mote_sb_s(&sb, "\r\n");
        if (!mote_httpd_out(c, hx, sb.len))
            return false;
    }
    memmove(pool, p, n);
    if (c->chunked) {
        pool[n] = '\r';
        pool[n + 1] = '\n';
    }
    mote_httpd_pool_send(c, n + (c->chunked ? 2u : 0u));
    return true;
}

/* The immediate answers (in sv->scratch, one a line) framed: as events,
 * or joined by commas (after `comma`), into sv->scratch again (framing
 * only grows them; they are moved from its end). Returns the length, or
 * 0 when the framing does not fit. */
static size_t frame_answers(struct serve *sv, const struct serve_mcp_in *in, bool sse,
                            bool comma)
{
    static const char ev[] = "event: message\ndata: ";
    char *buf = sv->scratch;
    size_t len = in->len, extra = sse ? in->answers * (sizeof(ev) - 1 + 1) : 0, o = 0, i = 0;

    if (len + extra + 2 > sizeof(sv->scratch))
        return 0;
    memmove(buf + extra + 2, buf, len); /* the lines, moved to the end */
    i = extra + 2;
    while (i < extra + 2 + len) {
        char *nl = memchr(buf + i, '\n', extra + 2 + len - i);
        size_t n = (size_t)(nl - (buf + i));

        if (sse) {
            memcpy(buf + o, ev, sizeof(ev) - 1);
            o += sizeof(ev) - 1;
        } else if (comma || o > 0) {
            buf[o++] = ',';
        }
        memmove(buf + o, buf + i, n);
        o += n;
        if (sse) {
            buf[o++] = '\n';
            buf[o++] = '\n';
        }
        i += n + 1;
    }
    return o;
}

static void post(struct serve *sv, struct mote_httpd_conn *c, const char *body, size_t len)
{
    const struct mote_hreq *req = &c->io->req;
    int idx = conn_index(sv, c);
    struct serve_chan *ch = &sv->mcp.chans[idx];
    struct serve_mcp_in in;
    char extra[80];
    struct mote_sb xb;
    size_t n;

    memset(&in, 0, sizeof(in));
    in.se = req->mcp_session_id != NULL ? mote_serve_mcp_find(sv, req->mcp_session_id) : NULL;
    if (req->mcp_session_id != NULL && in.se == NULL) {
        refuse(sv, c, 404, -32001, "Session not found: initialize again", NULL);
        return;
    }
    in.chan = idx;
    in.http = true;
    in.sse = mote_serve_accepts(req->accept, "text/event-stream");
    mote_serve_mcp_handle(sv, &in, body, len);
    mote_sb_init(&xb, extra, sizeof(extra));
    if (in.made != NULL)
        mote_sb_join(&xb, "Mcp-Session-Id: ", in.made->id, "\r\n");
    if (in.refused) {
        c->keep_alive = false;
        mote_httpd_reply(c, (unsigned)in.status, sv->scratch, in.len > 0 ? in.len - 1 : 0,
                         NULL);
        mote_httpd_say(&sv->http, "mcp: refused a message that is not JSON-RPC", NULL, NULL);
        return;
    }
    if (in.started == 0 && in.answers == 0) {
        mote_httpd_reply(c, 202, "", 0, xb.len > 0 ? extra : NULL);
        return;
    }
    if (in.started == 0) {
        /* JSON: the answer, or the batch's array */
        if (!in.batch) {
            n = in.len - 1;
        } else {
            n = frame_answers(sv, &in, false, false);
            memmove(sv->scratch + 1, sv->scratch, n);
            sv->scratch[0] = '[';
            sv->scratch[n + 1] = ']';
            n += 2;
        }
        if (n <= mote_httpd_room(c) / 2) {
            mote_httpd_reply(c, 200, sv->scratch, n, xb.len > 0 ? extra : NULL);
            return;
        }
        if (!mote_httpd_head(c, 200, "application/json", xb.len > 0 ? extra : NULL, true, n) ||
            !put_body(c, sv->scratch, n)) {
            c->out_len = 0;
            refuse(sv, c, 503, -32000, "busy: no buffer free for the answer; try again",
                   "Retry-After: 1\r\n");
            return;
        }
        mote_httpd_respond(c, false);
        return;
    }
    /* a call's answer comes later: an event stream, or JSON in chunks */
    memset(ch, 0, sizeof(*ch));
    ch->sess = (int16_t)(in.se == &sv->mcp.pipe ? -1 : (int)(in.se - sv->mcp.sess));
    ch->kind = in.sse ? SC_MCP_SSE : SC_MCP_JSON;
    ch->batch = in.batch;
    n = in.answers > 0 ? frame_answers(sv, &in, in.sse, false) : 0;
    if (!mote_httpd_stream_head(c, in.sse ? "text/event-stream" : "application/json",
                                xb.len > 0 ? extra : NULL, false)) {
        ch->kind = SC_NONE;
        mote_serve_follow_chan_gone(sv, idx);
        c->out_len = 0;
        refuse(sv, c, 500, -32603, "the response head does not fit", NULL);
        return;
    }
    c->pings = true;
    if (!in.sse && in.batch) {
        /* the array opens before the answers given at once */
        memmove(sv->scratch + 1, sv->scratch, n);
        sv->scratch[0] = '[';
        n++;
    }
    if (n > 0 && !put_body(c, sv->scratch, n))
        mote_httpd_say(&sv->http, "mcp: no buffer free for a batch's answers: left out", NULL,
                       NULL);
    ch->comma = !in.sse && in.answers > 0;
    mote_httpd_respond(c, true);
}

void mote_serve_mcp_http_request(struct serve *sv, struct mote_httpd_conn *c, const char *body,
                                 size_t len)
{
    const struct mote_hreq *req = &c->io->req;
    struct serve_mcp_sess *se;
    int idx = conn_index(sv, c);

    if (req->method == MOTE_HM_POST) {
        post(sv, c, body, len);
        return;
    }
    se = mote_serve_mcp_find(sv, req->mcp_session_id);
    if (se == NULL) {
        refuse(sv, c, 404, -32001, "Session not found: initialize again", NULL);
        return;
    }
    if (req->method == MOTE_HM_DELETE) {
        mote_httpd_say(&sv->http, "mcp: the client ended the session of ",
                       se->client[0] != '\0' ? se->client : "a client", NULL);
        mote_serve_mcp_end(sv, se);
        mote_httpd_reply(c, 200, "{}", 2, NULL);
        return;
    }
    /* GET: the session's stream of the server's messages; a new one
     * takes the place of the old */
    if (se->get_chan >= 0) {
        sv->mcp.chans[se->get_chan].ended = true;
        mote_serve_chan_poke(sv, se->get_chan);
    }
    memset(&sv->mcp.chans[idx], 0, sizeof(sv->mcp.chans[idx]));
    sv->mcp.chans[idx].kind = SC_MCP_GET;
    sv->mcp.chans[idx].sess = (int16_t)(se - sv->mcp.sess);
    se->get_chan = (int16_t)idx;
    if (!mote_httpd_stream_head(c, "text/event-stream", NULL, true) ||
        !mote_httpd_outs(c, ": mote\n\n")) {
        sv->mcp.chans[idx].kind = SC_NONE;
        se->get_chan = -1;
        c->out_len = 0;
        refuse(sv, c, 500, -32603, "the response head does not fit", NULL);
        return;
    }
    mote_httpd_respond(c, true);
}

/* True when an answer on channel `chan` is half written (nothing else
 * may go between its parts). */
static bool mid_answer(const struct serve *sv, int chan)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_FOLLOWS; i++) {
        const struct serve_follow *f = &sv->mcp.follows[i];

        if (f->kind != SF_FREE && f->chan == chan && f->out_part > 0 && f->out_part < 4)
            return true;
    }
    return false;
}

bool mote_serve_mcp_http_fill(struct serve *sv, struct mote_httpd_conn *c)
{
    int idx = conn_index(sv, c);
    struct serve_chan *ch = &sv->mcp.chans[idx];
    struct serve_mcp_sess *se = ch->kind == SC_MCP_GET ? mote_serve_mcp_sess(sv, ch->sess) : NULL;
    size_t mark, room, n;
    bool idle = false;

    if (ch->kind == SC_MCP_GET && (se == NULL || !se->used || se->get_chan != idx))
        ch->ended = true; /* its session ended, or a newer stream took its place */
    if (ch->ended && !mid_answer(sv, idx)) {
        if (!c->ended && ch->kind == SC_MCP_JSON && ch->batch &&
            mote_httpd_chunk_room(c, 16, &mark) > 0) {
            (void)mote_httpd_out(c, "]", 1); /* the batch's array closed */
            mote_httpd_chunk_close(c, mark);
        }
        return mote_httpd_end_once(c);
    }
    room = mote_httpd_chunk_room(c, 64, &mark);
    if (room == 0)
        return false;
    n = mote_serve_mcp_fill(sv, idx, ch->kind == SC_MCP_JSON ? SF_FRAME_JSON : SF_FRAME_SSE,
                            &ch->comma, c->io->out + c->out_len, room, &idle);
    c->out_len += n;
    mote_httpd_chunk_close(c, mark);
    if (n == 0 && idle && ch->kind != SC_MCP_GET) {
        ch->ended = true; /* every answer is out: the body ends */
        return mote_serve_mcp_http_fill(sv, c);
    }
    return n > 0;
}

void mote_serve_mcp_http_ping(struct serve *sv, struct mote_httpd_conn *c)
{
    int idx = conn_index(sv, c);
    const struct serve_chan *ch = &sv->mcp.chans[idx];
    size_t mark;

    if (ch->ended || mid_answer(sv, idx) || !mote_httpd_chunk_open(c, &mark))
        return;
    /* an event stream's comment; JSON's insignificant white space */
    (void)mote_httpd_outs(c, ch->kind == SC_MCP_JSON ? "\n" : ": ping\n\n");
    mote_httpd_chunk_close(c, mark);
}

void mote_serve_mcp_http_done(struct serve *sv, struct mote_httpd_conn *c)
{
    int idx = conn_index(sv, c);
    struct serve_chan *ch = &sv->mcp.chans[idx];

    if (ch->kind == SC_MCP_GET) {
        struct serve_mcp_sess *se = mote_serve_mcp_sess(sv, ch->sess);

        if (se != NULL && se->get_chan == idx)
            se->get_chan = -1;
    } else {
        mote_serve_follow_chan_gone(sv, idx);
    }
    memset(ch, 0, sizeof(*ch));
}
