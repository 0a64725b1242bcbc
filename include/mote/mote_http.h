/*
 * mote_http.h - HTTP/1.1 response parsing and request heads.
 *
 * The response parser is incremental: feed bytes as they arrive, split
 * anywhere. It reads the status line and headers (each line at most
 * MOTE_HTTP_LINE_MAX bytes, all of them at most MOTE_HTTP_HEADER_MAX), then
 * a body framed by Content-Length, chunked transfer coding, or the end of
 * the connection, and hands body bytes to a callback as they come; nothing
 * of the body is kept. Over a limit the parser fails with
 * MOTE_ERR_TOO_LARGE; malformed input gives MOTE_ERR_PROTO. Both stick.
 *
 * Framing (RFC 9112 6): Transfer-Encoding is a list (its header lines
 * joined) whose only coding, last and once, must be chunked: any other
 * coding, chunked twice or not last, parameters, or Transfer-Encoding in
 * an HTTP/1.0 response is MOTE_ERR_PROTO. Content-Length is one decimal
 * number given once (a second field, even with the same value, is
 * refused). With both, the chunks frame the body and the connection is
 * not used again (the shape of request smuggling).
 *
 * Persistent connections: a response read to its exact end (its
 * Content-Length, or the chunked body's last chunk and trailers) leaves
 * the connection ready for another request, unless it is HTTP/1.0
 * without "Connection: keep-alive", says "Connection: close", had both
 * framings, or its body ran to the end of the connection
 * (mote_http_resp_reusable).
 */
#ifndef MOTE_HTTP_H
#define MOTE_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_err.h"
#include "mote/mote_json.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Body bytes (already de-chunked). Return 0 or < 0 to stop with it. */
typedef int (*mote_http_body_fn)(void *arg, const char *p, size_t n);

/* One response header: its name (n bytes, as sent) and its value (v,
 * vn bytes, spaces around it removed); valid during the call. Return 0,
 * or < 0 to stop the parser with it. */
typedef int (*mote_http_header_fn)(void *arg, const char *name, size_t n, const char *v,
                                   size_t vn);

enum mote_http_state {
    MOTE_HTTP_STATUS = 0,
    MOTE_HTTP_HEADERS,
    MOTE_HTTP_BODY_LENGTH,
    MOTE_HTTP_CHUNK_SIZE,
    MOTE_HTTP_CHUNK_DATA,
    MOTE_HTTP_CHUNK_END,
    MOTE_HTTP_TRAILERS,
    MOTE_HTTP_BODY_EOF,
    MOTE_HTTP_DONE,
};

struct mote_http_resp {
    mote_http_body_fn on_body;
    void *arg;
    /* Optional, set after init: sees every header of the final response
     * (those of a 1xx response too), with `arg`. */
    mote_http_header_fn on_header;
    int err;                  /* first error, sticky */
    uint8_t state;            /* enum mote_http_state */
    bool chunked;
    uint8_t te;               /* MOTE_HTTP_TE_*: what Transfer-Encoding said so far */
    uint8_t minor;            /* HTTP/1.minor of the status line */
    bool no_body;             /* HEAD-like: 1xx, 204, 304 */
    bool keep;                /* the server lets the connection serve another request */
    bool close;               /* it said "Connection: close" */
    int status;               /* 0 until the status line is read */
    int64_t content_length;   /* -1 if none */
    uint64_t remaining;       /* body or chunk bytes still to come */
    uint32_t retry_after_s;   /* Retry-After in seconds, 0 if none */
    uint32_t header_bytes;
    size_t line_len;
    char content_type[64];
    char line[MOTE_HTTP_LINE_MAX];
};

void mote_http_resp_init(struct mote_http_resp *r, mote_http_body_fn on_body, void *arg);

/* What a Transfer-Encoding value told (mote_http_te_list). */
#define MOTE_HTTP_TE_SEEN 0x1u    /* the field was there */
#define MOTE_HTTP_TE_CHUNKED 0x2u /* chunked, the last coding so far */

/* Takes one Transfer-Encoding field's value (n bytes; the fields of a
 * message are one list, so call it for each with the same *te, 0 at
 * first): its elements, empty ones skipped, case-insensitive. Returns 0
 * (chunked and nothing after it, or nothing yet), MOTE_ERR_NOTSUP (a
 * coding other than chunked: mote decodes none) or MOTE_ERR_PROTO
 * (malformed, parameters, chunked twice, a coding after chunked). An
 * empty list leaves *te without MOTE_HTTP_TE_CHUNKED: the framing is
 * unknown. Never fails otherwise; no state but *te. */
int mote_http_te_list(const char *v, size_t n, uint8_t *te);

/* Parses `n` bytes. Returns how many were used (fewer than n only once the
 * response is complete) or the sticky error. */
int mote_http_resp_feed(struct mote_http_resp *r, const char *buf, size_t n);

/* The connection closed. Returns 0 if the response is complete (a body
 * framed by the end of the connection completes here), else
 * MOTE_ERR_PROTO (cut short). */
int mote_http_resp_eof(struct mote_http_resp *r);

static inline bool mote_http_resp_done(const struct mote_http_resp *r)
{
    return r->state == MOTE_HTTP_DONE;
}

/* True if the response is complete and the connection may carry the
 * next request: framed by its length or chunks, and the server did not
 * ask to close (bytes that came after its end are the caller's to
 * check: they make the connection unusable). */
static inline bool mote_http_resp_reusable(const struct mote_http_resp *r)
{
    return r->err == 0 && r->state == MOTE_HTTP_DONE && r->keep;
}

/* True once the status line and every header are in. */
static inline bool mote_http_resp_have_headers(const struct mote_http_resp *r)
{
    return r->state > MOTE_HTTP_HEADERS;
}

/* Writes a request head to `sink`: the request line, Host, the given
 * header lines ("Name: value", no CRLF; NULL-terminated array),
 * Content-Length if `content_length` >= 0, and the blank line. Returns 0
 * or the sink's error. A header with CR or LF in it is refused
 * (MOTE_ERR_INVAL): no header injection. */
int mote_http_write_head(mote_sink_fn sink, void *arg, const char *method, const char *host,
                         uint16_t port, bool default_port, const char *path,
                         const char *const *headers, int64_t content_length);

/* A URL split into parts (pointers into `buf`). */
struct mote_url {
    bool tls;          /* https */
    uint16_t port;
    bool default_port; /* no port in the URL */
    char host[256];
    char path[256];    /* base path without a trailing '/', may be "" */
};

/* Parses "http[s]://host[:port][/path]" (IPv6 hosts in brackets).
 * Returns 0, MOTE_ERR_INVAL (not such a URL) or MOTE_ERR_TOO_LARGE. */
int mote_url_parse(struct mote_url *u, const char *url);

/* A proxy URL, "http://[user[:password]@]host[:port][/]" (the scheme in
 * any case, or none; port 1080 when none is given, as curl), into `u`,
 * and the Proxy-Authorization header line for its credentials
 * (percent-decoded; the user may be empty when a password follows, as
 * ":pw@host") into auth (cap >= MOTE_PROXY_AUTH_MAX; "" without
 * credentials). Returns 0, MOTE_ERR_NOTSUP (https:// or socks proxies),
 * MOTE_ERR_TOO_LARGE (user:password over MOTE_PROXY_CRED_MAX bytes once
 * decoded), MOTE_ERR_NAMETOOLONG (the host) or MOTE_ERR_INVAL. */
int mote_proxy_parse(struct mote_url *u, char *auth, size_t cap, const char *proxy);

/* What mote_proxy_parse's error `rc` means, for the user: one line into
 * buf (cap bytes; 200 is enough), never the URL (it may hold a password).
 * Never blocks. */
void mote_proxy_error(int rc, char *buf, size_t cap);

/* Whether `host` (a name or an address, IPv6 without brackets) is reached
 * without the proxy: loopback always (localhost, *.localhost, 127/8,
 * ::1), else by `no_proxy` (NULL: none), a list separated by commas or
 * spaces of "*" (all), names (a name matches itself and its subdomains;
 * ".example.com" the same), addresses, IPv4 CIDR blocks ("10.0.0.0/8"),
 * each optionally with ":PORT" ("[::1]:8080" for IPv6). Case-insensitive. */
bool mote_proxy_bypass(const char *no_proxy, const char *host, uint16_t port);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_HTTP_H */
