/*
 * serve_page.c - what the API server does for browsers: the page at
 * GET / (conf.page: its bytes, sent as they are with strict headers,
 * without the token: every API call it makes needs the token like any
 * other), and the Origin check that refuses a request a page of another
 * site makes, whatever token it carries.
 */
#include <string.h>

#include "serve_int.h"
#include "util.h"

/* The page's headers (besides every answer's no-store and nosniff): no
 * framing, no referrer, its own window, then its CSP (the page's, else
 * nothing may run). */
#define PAGE_HEADERS                                                                               \
    "X-Frame-Options: DENY\r\n"                                                                    \
    "Referrer-Policy: no-referrer\r\n"                                                             \
    "Cross-Origin-Opener-Policy: same-origin\r\n"                                                  \
    "Cross-Origin-Resource-Policy: same-origin\r\n"                                                \
    "Vary: Accept-Encoding\r\n"

bool mote_serve_origin_ok(const struct mote_hreq *r)
{
    const char *o = r->origin, *host = r->host;
    size_t n;

    if (o == NULL)
        return true; /* not a browser's cross-origin request (curl, a same-origin GET) */
    if (strncmp(o, "http://", 7) == 0)
        o += 7;
    else if (strncmp(o, "https://", 8) == 0)
        o += 8;
    else
        return false; /* "null" (a sandboxed frame, a file), another scheme */
    n = strlen(o);
    /* the page's origin is the host it was loaded from: the Host the
     * browser sends with the request (a reverse proxy must pass it on) */
    return host != NULL && n == strlen(host) && n > 0 && mote_ascii_ieq(o, host, n);
}

void mote_serve_http_page(struct serve *sv, struct mote_httpd_conn *c)
{
    const struct mote_serve_page *pg = sv->conf.page;
    struct serve_stream *st = mote_serve_stream_of(sv, c);
    char csp[1024];
    struct mote_sb sb;

    if (pg == NULL) {
        mote_httpd_error(c, 404, "not_found",
                         "this server has no page (built without it): the API is under /v1/",
                         NULL);
        return;
    }
    if (pg->gzip && !(c->io->req.accept_gzip & 1u)) {
        mote_httpd_error(c, 406, "not_acceptable",
                         "the page is sent gzip-compressed: open it in a browser (or curl "
                         "--compressed)",
                         "Vary: Accept-Encoding\r\n");
        return;
    }
    mote_sb_init(&sb, csp, sizeof(csp));
    mote_sb_s(&sb, PAGE_HEADERS "Content-Security-Policy: ");
    mote_sb_s(&sb, pg->csp != NULL ? pg->csp : "default-src 'none'; frame-ancestors 'none'");
    mote_sb_s(&sb, pg->gzip ? "\r\nContent-Encoding: gzip\r\n" : "\r\n");
    if (sb.len + 1 >= sizeof(csp) ||
        !mote_httpd_head(c, 200, "text/html; charset=utf-8", csp, true, pg->len)) {
        mote_httpd_error(c, 500, "internal", "the page's headers do not fit", NULL);
        return;
    }
    if (c->io->req.method == MOTE_HM_HEAD || pg->len == 0) {
        mote_httpd_respond(c, false);
        return;
    }
    st->kind = SERVE_STREAM_PAGE;
    st->pos = 0;
    mote_httpd_respond(c, true); /* the body from fill(), as the socket takes it */
    (void)mote_serve_page_fill(sv, c, st);
}

bool mote_serve_page_fill(struct serve *sv, struct mote_httpd_conn *c, struct serve_stream *st)
{
    const struct mote_serve_page *pg = sv->conf.page;
    size_t room = mote_httpd_room(c), n;

    if (c->ended || room == 0)
        return false;
    n = pg->len - (size_t)st->pos < room ? pg->len - (size_t)st->pos : room;
    (void)mote_httpd_out(c, (const char *)pg->body + st->pos, n);
    st->pos += n;
    if (st->pos >= pg->len) {
        c->ended = true;
        st->kind = SERVE_STREAM_NONE;
    }
    return n > 0;
}
