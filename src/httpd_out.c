/*
 * httpd_out.c - what the HTTP engine sends (httpd.h): the connection's out
 * buffer, response heads, JSON replies and refusals (each refusal logged),
 * chunked streamed bodies, and the pool of large body buffers.
 */
#include <string.h>

#include "httpd.h"
#include "mote/mote_json.h"
#include "util.h"

/* The largest error body: a code and a one-line message. */
#define ERROR_BODY_MAX 480

/* Chunked transfer coding of a streamed body: a chunk is opened with a
 * fixed-width size (4 hex digits: the out buffer is at most 64 KiB) and
 * patched when it is closed. */
#define CHUNK_HEAD 6

void mote_httpd_say(const struct mote_httpd *h, const char *a, const char *b, const char *c)
{
    char line[240];
    struct mote_sb sb;

    if (h->conf.log == NULL)
        return;
    mote_sb_init(&sb, line, sizeof(line));
    mote_sb_s(&sb, h->conf.name);
    mote_sb_s(&sb, ": ");
    mote_sb_s(&sb, a);
    if (b != NULL)
        mote_sb_s(&sb, b);
    if (c != NULL)
        mote_sb_s(&sb, c);
    h->conf.log(h->conf.log_arg, line);
}

/* ---- the out buffer ---------------------------------------------------------- */

bool mote_httpd_out(struct mote_httpd_conn *c, const char *p, size_t n)
{
    MOTE_ASSERT(c->out_len <= sizeof(c->io->out));
    if (n > sizeof(c->io->out) - c->out_len)
        return false;
    memcpy(c->io->out + c->out_len, p, n);
    c->out_len += n;
    return true;
}

bool mote_httpd_outs(struct mote_httpd_conn *c, const char *s)
{
    return mote_httpd_out(c, s, strlen(s));
}

bool mote_httpd_out_u64(struct mote_httpd_conn *c, uint64_t v)
{
    char d[24];

    return mote_httpd_out(c, d, mote_u64_dec(v, d));
}

size_t mote_httpd_room(const struct mote_httpd_conn *c)
{
    return sizeof(c->io->out) - c->out_len;
}

/* ---- heads and replies ----------------------------------------------------- */

static const char *reason_of(unsigned status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 406: return "Not Acceptable";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 415: return "Unsupported Media Type";
    case 417: return "Expectation Failed";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

/* The head's lines, without the empty line that ends it. */
static bool head_lines(struct mote_httpd_conn *c, unsigned status, const char *type,
                       const char *extra, bool with_length, uint64_t length)
{
    bool ok = mote_httpd_outs(c, "HTTP/1.1 ") && mote_httpd_out_u64(c, status) &&
              mote_httpd_outs(c, " ") && mote_httpd_outs(c, reason_of(status)) &&
              mote_httpd_outs(c, "\r\nContent-Type: ") && mote_httpd_outs(c, type) &&
              mote_httpd_outs(c, "\r\nCache-Control: no-store\r\n"
                                 "X-Content-Type-Options: nosniff\r\n");

    if (ok && with_length)
        ok = mote_httpd_outs(c, "Content-Length: ") && mote_httpd_out_u64(c, length) &&
             mote_httpd_outs(c, "\r\n");
    if (ok && extra != NULL)
        ok = mote_httpd_outs(c, extra);
    return ok;
}

bool mote_httpd_head(struct mote_httpd_conn *c, unsigned status, const char *type,
                     const char *extra, bool with_length, uint64_t length)
{
    return head_lines(c, status, type, extra, with_length, length) &&
           (c->keep_alive || mote_httpd_outs(c, "Connection: close\r\n")) &&
           mote_httpd_outs(c, "\r\n");
}

void mote_httpd_respond(struct mote_httpd_conn *c, bool streaming)
{
    /* one per request */
    MOTE_ASSERT(c->state == MOTE_HTTPD_HEAD || c->state == MOTE_HTTPD_BODY || c->deferred);
    c->deferred = false;
    c->streaming = streaming;
    if (!streaming)
        c->lasting = c->chunked = c->ended = c->pings = false;
    c->state = MOTE_HTTPD_RESP;
    c->last_io = mote_loop_now(c->h->loop);
}

void mote_httpd_defer(struct mote_httpd_conn *c)
{
    MOTE_ASSERT(c->state == MOTE_HTTPD_HEAD || c->state == MOTE_HTTPD_BODY || c->deferred);
    c->lasting = c->chunked = c->ended = c->pings = false;
    c->streaming = true; /* not over until it is answered */
    c->deferred = true;
    c->state = MOTE_HTTPD_RESP;
}

const char *mote_httpd_body(const struct mote_httpd_conn *c, size_t *len)
{
    *len = c->deferred ? c->kept_len : 0;
    if (*len == 0)
        return NULL;
    return c->pool >= 0 ? c->h->pool[c->pool] : c->io->in;
}

void mote_httpd_reply(struct mote_httpd_conn *c, unsigned status, const char *body, size_t len,
                      const char *extra)
{
    size_t mark = c->out_len;

    if (!mote_httpd_head(c, status, "application/json", extra, true, len) ||
        !mote_httpd_out(c, body, c->io->req.method == MOTE_HM_HEAD ? 0 : len)) {
        static const char oops[] = "{\"error\":\"internal\",\"message\":\"the response does not "
                                   "fit the connection's buffer\"}\n";

        c->out_len = mark;
        c->keep_alive = false;
        (void)mote_httpd_head(c, 500, "application/json", NULL, true, sizeof(oops) - 1);
        (void)mote_httpd_out(c, oops, sizeof(oops) - 1);
    }
    mote_httpd_respond(c, false);
}

void mote_httpd_error(struct mote_httpd_conn *c, unsigned status, const char *code,
                      const char *message, const char *extra)
{
    const struct mote_httpd *h = c->h;
    const struct mote_hreq *req = &c->io->req;
    char body[ERROR_BODY_MAX];
    struct mote_sb s;
    struct mote_jw w;
    char line[240];
    struct mote_sb sb;

    if (status == 400 || status == 401 || status == 403 || status == 408 || status == 411 ||
        status == 413 || status == 414 || status == 417 || status == 431 || status >= 500)
        c->keep_alive = false;
    mote_sb_init(&s, body, sizeof(body));
    mote_jw_init(&w, mote_sb_put, &s);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "error", code);
    mote_jw_kstr(&w, "message", message);
    mote_jw_obj_end(&w);
    (void)mote_sb_put(&s, "\n", 1);
    mote_httpd_reply(c, status, s.p, w.err == 0 ? s.len : 0, extra);
    if (h->conf.log != NULL) {
        mote_sb_init(&sb, line, sizeof(line));
        mote_sb_s(&sb, h->conf.name);
        mote_sb_s(&sb, ": ");
        mote_sb_s(&sb, req->state == MOTE_HREQ_DONE ? mote_hreq_method_name(req->method) : "-");
        mote_sb_s(&sb, " ");
        mote_sb_s(&sb, req->state == MOTE_HREQ_DONE ? req->path : "-");
        mote_sb_s(&sb, ": ");
        mote_sb_u(&sb, status);
        mote_sb_s(&sb, " ");
        mote_sb_s(&sb, message);
        h->conf.log(h->conf.log_arg, line);
    }
}

/* ---- streamed bodies --------------------------------------------------------- */

bool mote_httpd_stream_head(struct mote_httpd_conn *c, const char *type, const char *extra,
                            bool lasting)
{
    c->lasting = lasting;
    c->ended = false;
    /* HTTP/1.0 cannot take chunks (RFC 9112 6.1): its body ends when the
     * connection closes, as a lasting stream's does. */
    c->chunked = !lasting && c->io->req.minor >= 1;
    if (!c->chunked)
        c->keep_alive = false;
    return head_lines(c, 200, type, extra, false, 0) &&
           (!c->chunked || mote_httpd_outs(c, "Transfer-Encoding: chunked\r\n")) &&
           (c->keep_alive || mote_httpd_outs(c, "Connection: close\r\n")) &&
           mote_httpd_outs(c, "\r\n");
}

bool mote_httpd_chunk_open(struct mote_httpd_conn *c, size_t *mark)
{
    *mark = c->out_len;
    if (!c->chunked)
        return true;
    return mote_httpd_out(c, "0000\r\n", CHUNK_HEAD);
}

void mote_httpd_chunk_close(struct mote_httpd_conn *c, size_t mark)
{
    static const char hex[] = "0123456789abcdef";
    size_t n;

    if (!c->chunked)
        return;
    MOTE_ASSERT(c->out_len >= mark + CHUNK_HEAD);
    n = c->out_len - mark - CHUNK_HEAD;
    if (n == 0) {
        c->out_len = mark; /* nothing in it: a zero-size chunk would end the body */
        return;
    }
    MOTE_ASSERT(n <= 0xffff && mote_httpd_room(c) >= 2);
    c->io->out[mark] = hex[(n >> 12) & 15u];
    c->io->out[mark + 1] = hex[(n >> 8) & 15u];
    c->io->out[mark + 2] = hex[(n >> 4) & 15u];
    c->io->out[mark + 3] = hex[n & 15u];
    c->io->out[c->out_len++] = '\r';
    c->io->out[c->out_len++] = '\n';
}

void mote_httpd_chunk_end(struct mote_httpd_conn *c)
{
    if (c->chunked)
        (void)mote_httpd_outs(c, "0\r\n\r\n");
}

size_t mote_httpd_chunk_room(struct mote_httpd_conn *c, size_t min, size_t *mark)
{
    if (mote_httpd_room(c) < min || !mote_httpd_chunk_open(c, mark))
        return 0;
    return mote_httpd_room(c) - (c->chunked ? 2u : 0u);
}

bool mote_httpd_end_once(struct mote_httpd_conn *c)
{
    if (c->ended)
        return false;
    mote_httpd_chunk_end(c);
    c->ended = true;
    return true;
}

/* ---- the body pool ------------------------------------------------------------ */

char *mote_httpd_pool_take(struct mote_httpd_conn *c)
{
    struct mote_httpd *h = c->h;
    unsigned i;

    if (c->pool >= 0)
        return h->pool[c->pool];
    for (i = 0; i < MOTE_SERVE_BODY_BUFS; i++) {
        if (!h->pool_used[i]) {
            h->pool_used[i] = true;
            c->pool = (int)i;
            c->pool_len = c->pool_off = 0;
            return h->pool[i];
        }
    }
    return NULL;
}

void mote_httpd_pool_send(struct mote_httpd_conn *c, size_t len)
{
    MOTE_ASSERT(c->pool >= 0 && len <= sizeof(c->h->pool[0]));
    c->pool_len = len;
    c->pool_off = 0;
}

void mote_httpd_pool_put(struct mote_httpd_conn *c)
{
    if (c->pool >= 0) {
        MOTE_ASSERT(c->pool < MOTE_SERVE_BODY_BUFS && c->h->pool_used[c->pool]);
        c->h->pool_used[c->pool] = false;
    }
    c->pool = -1;
    c->pool_len = c->pool_off = 0;
}
