/* http.c - HTTP/1.1 response parser (its framing by RFC 9112), request
 * heads, URLs. */
#include "mote/mote_http.h"

#include <string.h>

#include "util.h"

void mote_http_resp_init(struct mote_http_resp *r, mote_http_body_fn on_body, void *arg)
{
    memset(r, 0, sizeof(*r));
    r->on_body = on_body;
    r->arg = arg;
    r->content_length = -1;
}

static int status_line(struct mote_http_resp *r)
{
    const char *l = r->line;
    uint64_t code;

    /* "HTTP/1.x SSS reason" */
    if (r->line_len < 12 || memcmp(l, "HTTP/1.", 7) != 0 || l[8] != ' ' ||
        mote_dec_parse(l + 9, 3, &code) != 0 || (r->line_len > 12 && l[12] != ' ') || code < 100)
        return MOTE_ERR_PROTO;
    r->status = (int)code;
    r->minor = (uint8_t)(l[7] - '0');
    r->keep = l[7] != '0'; /* persistent by default from HTTP/1.1 on */
    r->close = false;
    r->no_body = code < 200 || code == 204 || code == 304;
    r->state = MOTE_HTTP_HEADERS;
    return 0;
}

/* The next element of a comma-separated header list from v[*i] on, blanks
 * around it left out, as v[*s..*e); false when none is left (empty
 * elements are allowed and skipped, RFC 9110 5.6.1). */
static bool list_next(const char *v, size_t n, size_t *i, size_t *s, size_t *e)
{
    while (*i < n && (v[*i] == ',' || v[*i] == ' ' || v[*i] == '\t'))
        (*i)++;
    if (*i == n)
        return false;
    *s = *i;
    while (*i < n && v[*i] != ',')
        (*i)++;
    *e = *i;
    while (*e > *s && (v[*e - 1] == ' ' || v[*e - 1] == '\t'))
        (*e)--;
    return true;
}

/* The tokens of a Connection header ("close", "keep-alive, Upgrade"). */
static void connection_tokens(struct mote_http_resp *r, const char *v, size_t n)
{
    size_t i = 0, s, e;

    while (list_next(v, n, &i, &s, &e)) {
        if (mote_ascii_is(v + s, e - s, "close"))
            r->close = true;
        else if (mote_ascii_is(v + s, e - s, "keep-alive"))
            r->keep = true;
    }
}

static void trim(const char **s, size_t *n)
{
    while (*n > 0 && (**s == ' ' || **s == '\t')) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && ((*s)[*n - 1] == ' ' || (*s)[*n - 1] == '\t'))
        (*n)--;
}

int mote_http_te_list(const char *v, size_t n, uint8_t *te)
{
    size_t i = 0, s, e;

    *te |= MOTE_HTTP_TE_SEEN;
    while (list_next(v, n, &i, &s, &e)) {
        if (!mote_ascii_is(v + s, e - s, "chunked")) {
            size_t k;

            for (k = s; k < e && v[k] != ';' && v[k] != ' ' && v[k] != '\t'; k++) {
            }
            /* "gzip", "x-chunked": a coding mote does not decode; with
             * parameters or a space: malformed */
            return k == e && !(*te & MOTE_HTTP_TE_CHUNKED) ? MOTE_ERR_NOTSUP : MOTE_ERR_PROTO;
        }
        if (*te & MOTE_HTTP_TE_CHUNKED)
            return MOTE_ERR_PROTO; /* chunked twice */
        *te |= MOTE_HTTP_TE_CHUNKED;
    }
    return 0;
}

static int end_of_headers(struct mote_http_resp *r)
{
    if (r->status < 200) {
        /* 1xx interim response: a real one follows. */
        r->state = MOTE_HTTP_STATUS;
        r->status = 0;
        r->te = 0;
        r->content_length = -1;
        return 0;
    }
    if (r->te != 0) {
        /* RFC 9112 6.1, 6.3: chunked, the last and only coding; never in
         * HTTP/1.0; beside a Content-Length it wins, and the connection
         * is not used again */
        if (!(r->te & MOTE_HTTP_TE_CHUNKED) || r->minor == 0)
            return MOTE_ERR_PROTO;
        r->chunked = true;
        if (r->content_length >= 0)
            r->keep = false;
    }
    if (r->close)
        r->keep = false;
    if (r->no_body)
        r->state = MOTE_HTTP_DONE;
    else if (r->chunked)
        r->state = MOTE_HTTP_CHUNK_SIZE;
    else if (r->content_length >= 0) {
        r->remaining = (uint64_t)r->content_length;
        r->state = r->remaining == 0 ? MOTE_HTTP_DONE : MOTE_HTTP_BODY_LENGTH;
    } else {
        r->state = MOTE_HTTP_BODY_EOF;
        r->keep = false; /* its end is the connection's */
    }
    return 0;
}

static int header_line(struct mote_http_resp *r)
{
    const char *l = r->line, *colon, *v;
    size_t nlen, vlen;
    uint64_t num;

    if (r->line_len == 0)
        return end_of_headers(r);
    if (l[0] == ' ' || l[0] == '\t')
        return MOTE_ERR_PROTO; /* obsolete line folding */
    colon = memchr(l, ':', r->line_len);
    if (colon == NULL || colon == l)
        return MOTE_ERR_PROTO;
    nlen = (size_t)(colon - l);
    v = colon + 1;
    vlen = r->line_len - nlen - 1;
    trim(&v, &vlen);
    if (r->on_header != NULL) {
        int rc = r->on_header(r->arg, l, nlen, v, vlen);

        if (rc < 0)
            return rc;
    }
    if (mote_ascii_is(l, nlen, "content-length")) {
        /* one decimal number, once (a second one, even equal, is
         * refused: two parsers could each take another) */
        if (mote_dec_parse(v, vlen, &num) != 0 || r->content_length >= 0)
            return MOTE_ERR_PROTO;
        r->content_length = (int64_t)num;
    } else if (mote_ascii_is(l, nlen, "transfer-encoding")) {
        if (mote_http_te_list(v, vlen, &r->te) < 0)
            return MOTE_ERR_PROTO;
    } else if (mote_ascii_is(l, nlen, "connection")) {
        connection_tokens(r, v, vlen);
    } else if (mote_ascii_is(l, nlen, "retry-after")) {
        if (mote_dec_parse(v, vlen, &num) == 0)
            r->retry_after_s = num > 86400u ? 86400u : (uint32_t)num;
    } else if (mote_ascii_is(l, nlen, "content-type")) {
        size_t n = vlen < sizeof(r->content_type) - 1 ? vlen : sizeof(r->content_type) - 1;

        memcpy(r->content_type, v, n);
        r->content_type[n] = '\0';
    }
    return 0;
}

static int chunk_size_line(struct mote_http_resp *r)
{
    uint64_t v = 0;
    size_t i;

    for (i = 0; i < r->line_len; i++) {
        char c = mote_lower(r->line[i]);
        unsigned d;

        if (c >= '0' && c <= '9')
            d = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            d = (unsigned)(c - 'a' + 10);
        else if (c == ';' || c == ' ' || c == '\t')
            break; /* chunk extensions are ignored */
        else
            return MOTE_ERR_PROTO;
        if (v > (UINT64_C(1) << 56))
            return MOTE_ERR_TOO_LARGE;
        v = (v << 4) | d;
    }
    if (i == 0)
        return MOTE_ERR_PROTO;
    r->remaining = v;
    r->state = v == 0 ? MOTE_HTTP_TRAILERS : MOTE_HTTP_CHUNK_DATA;
    return 0;
}

/* A complete line is in r->line. */
static int line_done(struct mote_http_resp *r)
{
    switch (r->state) {
    case MOTE_HTTP_STATUS:
        return status_line(r);
    case MOTE_HTTP_HEADERS:
        return header_line(r);
    case MOTE_HTTP_CHUNK_SIZE:
        return chunk_size_line(r);
    case MOTE_HTTP_CHUNK_END:
        if (r->line_len != 0)
            return MOTE_ERR_PROTO;
        r->state = MOTE_HTTP_CHUNK_SIZE;
        return 0;
    case MOTE_HTTP_TRAILERS:
        if (r->line_len == 0)
            r->state = MOTE_HTTP_DONE;
        return 0;
    default:
        return MOTE_ERR_PROTO;
    }
}

static bool line_state(uint8_t s)
{
    return s == MOTE_HTTP_STATUS || s == MOTE_HTTP_HEADERS || s == MOTE_HTTP_CHUNK_SIZE ||
           s == MOTE_HTTP_CHUNK_END || s == MOTE_HTTP_TRAILERS;
}

int mote_http_resp_feed(struct mote_http_resp *r, const char *buf, size_t n)
{
    size_t i = 0;

    while (i < n && r->err == 0 && r->state != MOTE_HTTP_DONE) {
        if (line_state(r->state)) {
            char c = buf[i++];

            if ((r->state <= MOTE_HTTP_HEADERS || r->state == MOTE_HTTP_TRAILERS) &&
                ++r->header_bytes > MOTE_HTTP_HEADER_MAX) {
                r->err = MOTE_ERR_TOO_LARGE;
                break;
            }
            if (c == '\n') {
                /* Lines end in CRLF; a bare LF is accepted too. */
                if (r->line_len > 0 && r->line[r->line_len - 1] == '\r')
                    r->line_len--;
                r->line[r->line_len] = '\0';
                r->err = line_done(r);
                r->line_len = 0;
                continue;
            }
            if (r->line_len + 1 >= sizeof(r->line)) {
                r->err = MOTE_ERR_TOO_LARGE;
                break;
            }
            r->line[r->line_len++] = c;
            continue;
        }
        {
            size_t take = n - i;
            int rc;

            if (r->state != MOTE_HTTP_BODY_EOF && take > r->remaining)
                take = (size_t)r->remaining;
            rc = r->on_body != NULL ? r->on_body(r->arg, buf + i, take) : 0;
            if (rc < 0) {
                r->err = rc;
                break;
            }
            i += take;
            if (r->state == MOTE_HTTP_BODY_EOF)
                continue;
            r->remaining -= take;
            if (r->remaining == 0)
                r->state = r->state == MOTE_HTTP_CHUNK_DATA ? MOTE_HTTP_CHUNK_END : MOTE_HTTP_DONE;
        }
    }
    return r->err != 0 ? r->err : (int)i;
}

int mote_http_resp_eof(struct mote_http_resp *r)
{
    if (r->err != 0)
        return r->err;
    if (r->state == MOTE_HTTP_BODY_EOF)
        r->state = MOTE_HTTP_DONE;
    return r->state == MOTE_HTTP_DONE ? 0 : MOTE_ERR_PROTO;
}

static int put_s(mote_sink_fn sink, void *arg, const char *s)
{
    return sink(arg, s, strlen(s));
}

static int put_u(mote_sink_fn sink, void *arg, uint64_t v)
{
    char b[24];

    return sink(arg, b, mote_u64_dec(v, b));
}

static bool clean(const char *s)
{
    return strchr(s, '\r') == NULL && strchr(s, '\n') == NULL;
}

int mote_http_write_head(mote_sink_fn sink, void *arg, const char *method, const char *host,
                         uint16_t port, bool default_port, const char *path,
                         const char *const *headers, int64_t content_length)
{
    int rc;
    size_t i;

    if (!clean(method) || !clean(host) || !clean(path))
        return MOTE_ERR_INVAL;
    for (i = 0; headers != NULL && headers[i] != NULL; i++) {
        if (!clean(headers[i]))
            return MOTE_ERR_INVAL;
    }
    if ((rc = put_s(sink, arg, method)) < 0 || (rc = put_s(sink, arg, " ")) < 0 ||
        (rc = put_s(sink, arg, path[0] != '\0' ? path : "/")) < 0 ||
        (rc = put_s(sink, arg, " HTTP/1.1\r\nHost: ")) < 0)
        return rc;
    if (strchr(host, ':') != NULL) { /* IPv6 literal */
        if ((rc = put_s(sink, arg, "[")) < 0 || (rc = put_s(sink, arg, host)) < 0 ||
            (rc = put_s(sink, arg, "]")) < 0)
            return rc;
    } else if ((rc = put_s(sink, arg, host)) < 0) {
        return rc;
    }
    if (!default_port && ((rc = put_s(sink, arg, ":")) < 0 || (rc = put_u(sink, arg, port)) < 0))
        return rc;
    if ((rc = put_s(sink, arg, "\r\n")) < 0)
        return rc;
    for (i = 0; headers != NULL && headers[i] != NULL; i++) {
        if ((rc = put_s(sink, arg, headers[i])) < 0 || (rc = put_s(sink, arg, "\r\n")) < 0)
            return rc;
    }
    if (content_length >= 0 &&
        ((rc = put_s(sink, arg, "Content-Length: ")) < 0 ||
         (rc = put_u(sink, arg, (uint64_t)content_length)) < 0 ||
         (rc = put_s(sink, arg, "\r\n")) < 0))
        return rc;
    return put_s(sink, arg, "\r\n");
}

/* Copies n bytes of a URL's part into `out` (cap bytes, NUL-terminated),
 * refusing any byte of `bad`. */
static int url_part(char *out, size_t cap, const char *s, size_t n, const char *bad)
{
    if (n >= cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(out, s, n);
    out[n] = '\0';
    return strpbrk(out, bad) != NULL ? MOTE_ERR_INVAL : 0;
}

int mote_url_parse(struct mote_url *u, const char *url)
{
    const char *p, *host, *hend, *path;
    size_t hn;
    int rc;

    memset(u, 0, sizeof(*u));
    if (strncmp(url, "https://", 8) == 0) {
        u->tls = true;
        u->port = 443;
        p = url + 8;
    } else if (strncmp(url, "http://", 7) == 0) {
        u->port = 80;
        p = url + 7;
    } else {
        return MOTE_ERR_INVAL;
    }
    u->default_port = true;
    if (*p == '[') {
        host = p + 1;
        hend = strchr(host, ']');
        if (hend == NULL)
            return MOTE_ERR_INVAL;
        p = hend + 1;
    } else {
        host = p;
        while (*p != '\0' && *p != ':' && *p != '/' && *p != '?' && *p != '#')
            p++;
        hend = p;
    }
    hn = (size_t)(hend - host);
    if (hn == 0)
        return MOTE_ERR_INVAL;
    if ((rc = url_part(u->host, sizeof(u->host), host, hn, " @\r\n\t")) < 0)
        return rc;
    if (*p == ':') {
        uint64_t port;
        const char *ps = ++p;

        while (*p >= '0' && *p <= '9')
            p++;
        if (mote_dec_parse(ps, (size_t)(p - ps), &port) != 0 || port == 0 || port > 65535)
            return MOTE_ERR_INVAL;
        u->port = (uint16_t)port;
        u->default_port = false;
    }
    if (*p != '\0' && *p != '/')
        return MOTE_ERR_INVAL;
    path = p;
    hn = strlen(path);
    while (hn > 0 && path[hn - 1] == '/')
        hn--;
    return url_part(u->path, sizeof(u->path), path, hn, " \r\n\t?#");
}
