/* fuzz_http - the HTTP/1.1 response parser, the URL and proxy parsers.
 * Properties: the response parser's outcome (status, body bytes and their
 * hash, where it stopped, whether the connection may stay) does not
 * depend on how the bytes are split; a response framed by chunks that also
 * had a Content-Length never leaves its connection for another request;
 * Transfer-Encoding's list parser agrees with itself on the value in one
 * piece and in two fields. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote_http.h"

static struct mote_http_resp resp;

struct seen {
    size_t total;
    uint32_t hash;
};

static int on_body(void *arg, const char *p, size_t n)
{
    struct seen *s = arg;
    size_t i;

    for (i = 0; i < n; i++)
        s->hash = (s->hash ^ (unsigned char)p[i]) * 16777619u;
    s->total += n;
    return 0;
}

/* Feeds data in pieces (1 + data[at] % mod bytes; mod 0: all at once). */
static bool keep_of;

static int feed(const uint8_t *data, size_t size, unsigned mod, struct seen *s, int *status)
{
    size_t at = 0;
    int rc = 0;

    memset(s, 0, sizeof(*s));
    mote_http_resp_init(&resp, on_body, s);
    while (at < size) {
        size_t piece = mod == 0 ? size - at : 1 + (data[at] % mod);

        if (piece > size - at)
            piece = size - at;
        rc = mote_http_resp_feed(&resp, (const char *)data + at, piece);
        if (rc < 0)
            break;
        at += (size_t)rc;
        if (mote_http_resp_done(&resp))
            break;
        if (rc == 0)
            break; /* no progress: the parser holds what it can */
    }
    if (rc >= 0 && !mote_http_resp_done(&resp))
        rc = mote_http_resp_eof(&resp);
    keep_of = mote_http_resp_reusable(&resp);
    if (keep_of && resp.chunked && resp.content_length >= 0)
        __builtin_trap(); /* both framings, and kept */
    if (resp.chunked && (resp.te & MOTE_HTTP_TE_CHUNKED) == 0)
        __builtin_trap();
    *status = resp.status;
    return rc < 0 ? rc : (mote_http_resp_done(&resp) ? 1 : 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct mote_url u;
    struct seen a, b;
    char url[300], auth[MOTE_PROXY_AUTH_MAX];
    int sa, sb, ra, rb;

    bool ka, kb;

    ra = feed(data, size, 0, &a, &sa);
    ka = keep_of;
    rb = feed(data, size, 17, &b, &sb);
    kb = keep_of;
    if (ra != rb || sa != sb || a.total != b.total || a.hash != b.hash || ka != kb)
        __builtin_trap(); /* the split changed the outcome */
    {
        /* one list in one field, or cut at a comma into two */
        const char *v = (const char *)data, *comma = memchr(v, ',', size);
        uint8_t t1 = 0, t2 = 0;
        int r1 = mote_http_te_list(v, size, &t1), r2 = 0;

        if (comma != NULL) {
            r2 = mote_http_te_list(v, (size_t)(comma - v), &t2);
            if (r2 == 0)
                r2 = mote_http_te_list(comma + 1, size - (size_t)(comma - v) - 1, &t2);
            if ((r1 == 0) != (r2 == 0) || (r1 == 0 && t1 != t2))
                __builtin_trap();
        }
    }
    if (size < sizeof(url)) {
        memcpy(url, data, size);
        url[size] = '\0';
        (void)mote_url_parse(&u, url);
        if (mote_proxy_parse(&u, auth, sizeof(auth), url) == 0 &&
            (strlen(auth) >= sizeof(auth) || strchr(auth, '\n') != NULL))
            __builtin_trap();
        (void)mote_proxy_bypass(url, "api.example.com", 443);
        (void)mote_proxy_bypass("example.com, .lan, 10.0.0.0/8", url, 443);
    }
    return 0;
}
