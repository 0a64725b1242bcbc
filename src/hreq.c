/*
 * hreq.c - the HTTP/1.1 request parser (see mote_hreq.h).
 *
 * The head is collected byte by byte until the empty line that ends it,
 * so where the input was split never matters; then it is decoded once, in
 * place (line ends become NULs).
 */
#include "mote/mote_hreq.h"

#include <string.h>

#include "mote/mote_err.h"
#include "mote/mote_http.h"
#include "util.h"

void mote_hreq_reset(struct mote_hreq *r)
{
    memset(r, 0, offsetof(struct mote_hreq, head));
    r->query = "";
}

static int bad(struct mote_hreq *r, uint16_t status, const char *why)
{
    r->state = MOTE_HREQ_BAD;
    r->status = status;
    r->why = why;
    return MOTE_HREQ_BAD;
}

/* RFC 9110 tchar */
static bool tchar(unsigned char c)
{
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'))
        return true;
    return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Case-insensitive equality of NUL-terminated `a` and lower-case `b`. */
static bool ieq(const char *a, const char *b)
{
    return mote_ascii_ieq(a, b, strlen(b) + 1);
}

const char *mote_hreq_method_name(enum mote_hreq_method m)
{
    static const char *const names[] = {"OTHER", "GET", "HEAD", "POST", "PUT", "DELETE",
                                        "OPTIONS"};

    return (unsigned)m < sizeof(names) / sizeof(names[0]) ? names[m] : "OTHER";
}

static int request_line(struct mote_hreq *r, char *line)
{
    static const enum mote_hreq_method known[] = {MOTE_HM_GET, MOTE_HM_HEAD, MOTE_HM_POST,
                                                   MOTE_HM_PUT, MOTE_HM_DELETE, MOTE_HM_OPTIONS};
    char *sp1 = strchr(line, ' '), *sp2, *t, *v;
    size_t i;

    if (sp1 == NULL || sp1 == line || sp1 - line > 15)
        return bad(r, 400, "bad request line (METHOD /path HTTP/1.1)");
    for (t = line; t < sp1; t++) {
        if (!tchar((unsigned char)*t))
            return bad(r, 400, "bad request method");
    }
    *sp1 = '\0';
    t = sp1 + 1;
    sp2 = strchr(t, ' ');
    if (sp2 == NULL || sp2 == t)
        return bad(r, 400, "bad request line (METHOD /path HTTP/1.1)");
    *sp2 = '\0';
    v = sp2 + 1;
    if (t[0] != '/')
        return bad(r, 400, "the request target must be a path starting with '/'");
    for (i = 0; t[i] != '\0'; i++) {
        unsigned char c = (unsigned char)t[i];

        if (c <= 0x20 || c >= 0x7F)
            return bad(r, 400, "bad byte in the request target");
    }
    if (strncmp(v, "HTTP/", 5) != 0 || !(v[5] >= '0' && v[5] <= '9') || v[6] != '.' ||
        !(v[7] >= '0' && v[7] <= '9') || v[8] != '\0')
        return bad(r, 400, "bad HTTP version in the request line");
    if (v[5] != '1' || (v[7] != '0' && v[7] != '1'))
        return bad(r, 505, "only HTTP/1.0 and HTTP/1.1 are served");
    r->minor = (uint8_t)(v[7] - '0');
    r->method_name = line;
    r->method = MOTE_HM_OTHER;
    for (i = 0; i < sizeof(known) / sizeof(known[0]); i++) {
        if (strcmp(line, mote_hreq_method_name(known[i])) == 0)
            r->method = known[i];
    }
    r->path = t;
    t = strchr(t, '?');
    if (t != NULL) {
        *t = '\0';
        r->query = t + 1;
    }
    return MOTE_HREQ_READING;
}

/* Keeps a single-valued field; a second one is refused. */
static int single(struct mote_hreq *r, const char **slot, const char *value, const char *why)
{
    if (*slot != NULL)
        return bad(r, 400, why);
    *slot = value;
    return MOTE_HREQ_READING;
}

/* The tokens of a comma-separated Connection value. */
static void connection(const char *v, bool *close, bool *keep)
{
    while (*v != '\0') {
        char tok[16];
        size_t n = 0;

        while (*v == ' ' || *v == '\t' || *v == ',')
            v++;
        while (*v != '\0' && *v != ',' && *v != ' ' && *v != '\t') {
            if (n < sizeof(tok) - 1)
                tok[n++] = mote_lower(*v);
            v++;
        }
        tok[n] = '\0';
        if (strcmp(tok, "close") == 0)
            *close = true;
        else if (strcmp(tok, "keep-alive") == 0)
            *keep = true;
    }
}

/* True if the parameters p..end of an Accept-Encoding element give it
 * the weight 0 (";q=0", ";q=0.000"): the coding is refused. */
static bool q_zero(const char *p, const char *end)
{
    while (p < end) {
        while (p < end && (*p == ' ' || *p == '\t' || *p == ';'))
            p++;
        if (end - p >= 2 && mote_lower(p[0]) == 'q' && p[1] == '=') {
            p += 2;
            if (p == end || *p != '0')
                return false;
            p++;
            if (p < end && *p == '.') {
                p++;
                while (p < end && *p == '0')
                    p++;
            }
            while (p < end && (*p == ' ' || *p == '\t'))
                p++;
            return p == end || *p == ';';
        }
        while (p < end && *p != ';')
            p++;
    }
    return false;
}

/* Whether an Accept-Encoding value takes gzip (the field may come more
 * than once: each adds its codings; a coding named beats "*"). */
static void accept_encoding(struct mote_hreq *r, const char *v)
{
    while (*v != '\0') {
        const char *e, *c;
        size_t n = 0;
        bool zero;

        while (*v == ' ' || *v == '\t' || *v == ',')
            v++;
        for (e = v; *e != '\0' && *e != ','; e++)
            ;
        for (c = v; c + n < e && c[n] != ';' && c[n] != ' ' && c[n] != '\t'; n++)
            ;
        zero = q_zero(c + n, e);
        if ((n == 4 && mote_ascii_ieq(c, "gzip", 4)) || (n == 6 && mote_ascii_ieq(c, "x-gzip", 6)))
            r->accept_gzip = zero ? 2 : 1;
        else if (n == 1 && c[0] == '*' && (r->accept_gzip == 0 || r->accept_gzip == 3))
            r->accept_gzip = zero ? 0 : 3;
        v = e;
    }
}

static int field(struct mote_hreq *r, char *line, bool *close, bool *keep)
{
    char *colon = line, *v, *end;

    while (tchar((unsigned char)*colon))
        colon++;
    if (colon == line || *colon != ':')
        return bad(r, 400, "bad header field (NAME: value; no space before the colon)");
    *colon = '\0';
    v = colon + 1;
    while (*v == ' ' || *v == '\t')
        v++;
    for (end = v; *end != '\0'; end++) {
        unsigned char c = (unsigned char)*end;

        if ((c < 0x20 && c != '\t') || c == 0x7F)
            return bad(r, 400, "control character in a header value");
    }
    while (end > v && (end[-1] == ' ' || end[-1] == '\t'))
        end--;
    *end = '\0';
    r->fields++;
    if (ieq(line, "content-length")) {
        uint64_t n = 0;
        int rc;

        if (*v == '\0')
            return bad(r, 400, "empty Content-Length");
        rc = mote_dec_parse(v, strlen(v), &n);
        if (rc == MOTE_ERR_RANGE)
            return bad(r, 413, "the body is larger than this server takes");
        if (rc < 0)
            return bad(r, 400, "Content-Length must be one decimal number");
        if (r->has_length)
            return bad(r, 400, "more than one Content-Length field");
        r->has_length = true;
        r->content_length = n;
    } else if (ieq(line, "transfer-encoding")) {
        int rc = mote_http_te_list(v, strlen(v), &r->te);

        if (rc == MOTE_ERR_NOTSUP)
            return bad(r, 501, "a transfer coding this server does not decode (only chunked)");
        if (rc < 0)
            return bad(r, 400, "bad Transfer-Encoding (chunked must be its last coding, once)");
    } else if (ieq(line, "connection")) {
        connection(v, close, keep);
    } else if (ieq(line, "expect")) {
        if (!ieq(v, "100-continue"))
            return bad(r, 417, "only Expect: 100-continue is understood");
        r->expect_continue = true;
    } else if (ieq(line, "host")) {
        return single(r, &r->host, v, "more than one Host field");
    } else if (ieq(line, "authorization")) {
        return single(r, &r->authorization, v, "more than one Authorization field");
    } else if (ieq(line, "last-event-id")) {
        return single(r, &r->last_event_id, v, "more than one Last-Event-ID field");
    } else if (ieq(line, "content-type")) {
        return single(r, &r->content_type, v, "more than one Content-Type field");
    } else if (ieq(line, "accept")) {
        return single(r, &r->accept, v, "more than one Accept field");
    } else if (ieq(line, "origin")) {
        return single(r, &r->origin, v, "more than one Origin field");
    } else if (ieq(line, "mcp-session-id")) {
        return single(r, &r->mcp_session_id, v, "more than one Mcp-Session-Id field");
    } else if (ieq(line, "mcp-protocol-version")) {
        return single(r, &r->mcp_protocol_version, v, "more than one MCP-Protocol-Version field");
    } else if (ieq(line, "x-mote-conversation")) {
        return single(r, &r->conversation, v, "more than one X-Mote-Conversation field");
    } else if (ieq(line, "accept-encoding")) {
        accept_encoding(r, v);
    }
    return MOTE_HREQ_READING;
}

/* Decodes the complete head (r->len bytes, ending in an empty line). */
static int decode(struct mote_hreq *r)
{
    char *p = r->head, *end = r->head + r->len;
    bool first = true, close = false, keep = false;

    while (p < end) {
        char *nl = memchr(p, '\n', (size_t)(end - p)), *line = p, *cr;
        int rc;

        if (nl == NULL)
            return bad(r, 400, "the head does not end with an empty line");
        if (memchr(line, '\0', (size_t)(nl - line)) != NULL)
            return bad(r, 400, "NUL byte in the request head");
        *nl = '\0';
        if (nl > line && nl[-1] == '\r')
            nl[-1] = '\0';
        p = nl + 1;
        cr = strchr(line, '\r');
        if (cr != NULL)
            return bad(r, 400, "a CR that does not end a line");
        if (line[0] == '\0')
            break; /* the empty line: the end */
        if (first) {
            first = false;
            rc = request_line(r, line);
        } else if (line[0] == ' ' || line[0] == '\t') {
            rc = bad(r, 400, "folded header lines are not accepted");
        } else {
            rc = field(r, line, &close, &keep);
        }
        if (rc != MOTE_HREQ_READING)
            return rc;
    }
    if (first)
        return bad(r, 400, "empty request");
    if (r->te != 0) {
        if (!(r->te & MOTE_HTTP_TE_CHUNKED))
            return bad(r, 400, "an empty Transfer-Encoding");
        if (r->minor == 0)
            return bad(r, 400, "Transfer-Encoding in an HTTP/1.0 request");
        r->chunked = true;
        if (r->has_length) {
            /* framed by the chunks; the connection ends after the answer */
            r->has_length = false;
            r->content_length = 0;
            close = true;
        }
    }
    if (r->minor == 1 && r->host == NULL)
        return bad(r, 400, "an HTTP/1.1 request needs a Host field");
    r->keep_alive = r->minor == 1 ? !close : keep && !close;
    r->state = MOTE_HREQ_DONE;
    return MOTE_HREQ_DONE;
}

int mote_hreq_feed(struct mote_hreq *r, const char *data, size_t len, size_t *used)
{
    size_t i = 0;

    *used = 0;
    if (r->state != MOTE_HREQ_READING)
        return r->state;
    /* Empty lines before the request line are ignored (RFC 9112 2.2). */
    while (r->len == 0 && i < len && (data[i] == '\r' || data[i] == '\n'))
        i++;
    while (i < len) {
        char c = data[i++];
        size_t n;

        if (r->len >= sizeof(r->head)) {
            *used = i - 1;
            return memchr(r->head, '\n', r->len) == NULL
                       ? bad(r, 414, "the request line is too long")
                       : bad(r, 431, "the request head is too large");
        }
        r->head[r->len++] = c;
        n = r->len;
        if (c == '\n' &&
            ((n >= 2 && r->head[n - 2] == '\n') ||
             (n >= 3 && r->head[n - 2] == '\r' && r->head[n - 3] == '\n'))) {
            *used = i;
            return decode(r);
        }
    }
    *used = i;
    return MOTE_HREQ_READING;
}

/* ---- a chunked body ---- */

enum { CK_SIZE = 0, CK_EXT, CK_SIZE_LF, CK_DATA, CK_DATA_CR, CK_DATA_LF, CK_TRAILER,
       CK_TRAILER_LF, CK_DONE };

#define CK_LINE_MAX 1024 /* a chunk's size line (with its extensions) */

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    c = mote_lower(c);
    return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* A refusal of a chunked body that says how far it got (what was taken
 * and made before the fault), so that the outcome of the whole body does
 * not depend on how its bytes were split. */
static int body_bad(struct mote_hreq *r, size_t i, size_t o, size_t *used, size_t *made,
                    uint16_t status, const char *why)
{
    *used = i;
    *made = o;
    return bad(r, status, why);
}

int mote_hreq_body(struct mote_hreq *r, const char *data, size_t len, size_t *used, char *out,
                   size_t cap, size_t *made)
{
    size_t i = 0, o = 0;

    *used = *made = 0;
    if (r->state == MOTE_HREQ_BAD)
        return MOTE_HREQ_BAD;
    while (i < len && r->ck_state != CK_DONE) {
        char c = data[i];
        int d;

        switch (r->ck_state) {
        case CK_SIZE:
            d = hex_digit(c);
            if (d >= 0) {
                if (r->ck_left >> 60 != 0)
                    return body_bad(r, i, o, used, made, 413, "a chunk larger than this server takes");
                r->ck_left = r->ck_left << 4 | (uint64_t)d;
                r->ck_digits++;
                break;
            }
            if (r->ck_digits == 0)
                return body_bad(r, i, o, used, made, 400, "a chunk without its size");
            if (c == '\r')
                r->ck_state = CK_SIZE_LF;
            else if (c == ';' || c == ' ' || c == '\t')
                r->ck_state = CK_EXT; /* extensions, dropped */
            else
                return body_bad(r, i, o, used, made, 400, "a bad chunk size");
            break;
        case CK_EXT:
            if (c == '\r')
                r->ck_state = CK_SIZE_LF;
            else if ((unsigned char)c < 0x20 && c != '\t')
                return body_bad(r, i, o, used, made, 400, "a control character in a chunk extension");
            break;
        case CK_SIZE_LF:
            if (c != '\n')
                return body_bad(r, i, o, used, made, 400, "a chunk's size line must end in CRLF");
            if (r->ck_left > cap - o)
                return body_bad(r, i, o, used, made, 413, "the body is larger than this server takes");
            r->ck_state = r->ck_left == 0 ? CK_TRAILER : CK_DATA;
            r->ck_line = 0;
            break;
        case CK_DATA: {
            size_t n = len - i < r->ck_left ? len - i : (size_t)r->ck_left;

            memmove(out + o, data + i, n);
            o += n;
            r->ck_left -= n;
            i += n;
            if (r->ck_left == 0)
                r->ck_state = CK_DATA_CR;
            continue;
        }
        case CK_DATA_CR:
            if (c != '\r')
                return body_bad(r, i, o, used, made, 400, "a chunk's data must end in CRLF");
            r->ck_state = CK_DATA_LF;
            break;
        case CK_DATA_LF:
            if (c != '\n')
                return body_bad(r, i, o, used, made, 400, "a chunk's data must end in CRLF");
            r->ck_state = CK_SIZE;
            r->ck_digits = 0;
            r->ck_line = 0;
            break;
        case CK_TRAILER:
            /* trailer fields, dropped: NAME: value lines up to an empty one */
            if (c == '\r') {
                r->ck_state = CK_TRAILER_LF;
                break;
            }
            if (r->ck_line != 0xFFFF && c != ':' && !tchar((unsigned char)c))
                return body_bad(r, i, o, used, made, 400, "a bad trailer field");
            if (r->ck_line == 0 && c == ':')
                return body_bad(r, i, o, used, made, 400, "a bad trailer field");
            if (r->ck_line < 0xFFFF)
                r->ck_line++;
            if ((unsigned char)c < 0x20 && c != '\t')
                return body_bad(r, i, o, used, made, 400, "a control character in a trailer field");
            if (c == ':')
                r->ck_line = 0xFFFF; /* past the name */
            break;
        case CK_TRAILER_LF:
            if (c != '\n')
                return body_bad(r, i, o, used, made, 400, "a trailer line must end in CRLF");
            if (r->ck_line == 0) {
                r->ck_state = CK_DONE;
            } else {
                if (r->ck_line != 0xFFFF)
                    return body_bad(r, i, o, used, made, 400, "a bad trailer field");
                r->ck_state = CK_TRAILER;
                r->ck_line = 0;
            }
            break;
        default:
            return body_bad(r, i, o, used, made, 400, "a bad chunked body");
        }
        i++;
        if (r->ck_state == CK_SIZE || r->ck_state == CK_EXT || r->ck_state == CK_SIZE_LF) {
            if (++r->ck_line > CK_LINE_MAX)
                return body_bad(r, i, o, used, made, 400, "a chunk's size line is too long");
        } else if (r->ck_state == CK_TRAILER || r->ck_state == CK_TRAILER_LF) {
            if (++r->ck_trailers > MOTE_SERVE_HEAD_MAX)
                return body_bad(r, i, o, used, made, 431, "the trailer fields are too large");
        }
    }
    *used = i;
    *made = o;
    return r->ck_state == CK_DONE ? MOTE_HREQ_DONE : MOTE_HREQ_READING;
}

int mote_hreq_query(const struct mote_hreq *r, const char *key, char *out, size_t cap)
{
    const char *q = r->query;
    size_t klen = strlen(key);

    while (q != NULL && *q != '\0') {
        const char *amp = strchr(q, '&'), *stop = amp != NULL ? amp : q + strlen(q);

        if ((size_t)(stop - q) >= klen && strncmp(q, key, klen) == 0 &&
            (q + klen == stop || q[klen] == '=')) {
            const char *v = q + klen + (q + klen < stop ? 1 : 0);
            size_t n = 0;

            if (cap == 0 || mote_pct_decode(v, (size_t)(stop - v), true, out, cap - 1, &n) < 0 ||
                memchr(out, '\0', n) != NULL) /* %00 would cut the C string */
                return -1;
            out[n] = '\0';
            return (int)n;
        }
        q = amp != NULL ? amp + 1 : NULL;
    }
    return -1;
}
