/*
 * mote_hreq.h - an HTTP/1.1 request parser for servers (RFC 9112).
 *
 * Incremental and bounded: a request's head (the request line and the
 * header fields) is fed as it arrives, split anywhere, and kept in the
 * caller-owned struct (MOTE_SERVE_HEAD_MAX bytes); once the empty line
 * that ends it is in, the request line and the fields a server needs are
 * decoded in place. The body is not kept here: content_length says how
 * many bytes follow the head.
 *
 * Strict where laxness is an attack (request smuggling, header
 * injection): a field name must be a token followed directly by ':', no
 * line folding, no control character but TAB in a value, Content-Length
 * given once, Transfer-Encoding a list whose only coding is chunked, last
 * and once (another coding: 501; chunked not last, twice, with
 * parameters, or in HTTP/1.0: 400), an HTTP/1.1 request needs Host. A
 * request with both Content-Length and Transfer-Encoding is framed by its
 * chunks and its connection closes after the answer (RFC 9112 6.3).
 * Lenient where it costs nothing: bare LF line ends of the head, empty
 * lines before the request line.
 *
 * A chunked body is decoded by mote_hreq_body as it arrives (chunk
 * extensions and trailer fields read and dropped; lines end in CRLF).
 *
 * Nothing blocks, nothing is allocated; the result depends only on the
 * bytes, never on how they were split.
 */
#ifndef MOTE_HREQ_H
#define MOTE_HREQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mote_hreq_method {
    MOTE_HM_OTHER = 0, /* a well-formed method mote does not serve (405 or 501) */
    MOTE_HM_GET,
    MOTE_HM_HEAD,
    MOTE_HM_POST,
    MOTE_HM_PUT,
    MOTE_HM_DELETE,
    MOTE_HM_OPTIONS,
};

enum mote_hreq_state {
    MOTE_HREQ_READING = 0, /* the head is not complete yet */
    MOTE_HREQ_DONE,        /* the head is in and decoded */
    MOTE_HREQ_BAD,         /* refused: `status` and `why` say how to answer */
};

struct mote_hreq {
    uint8_t state;          /* enum mote_hreq_state */
    uint16_t status;        /* BAD: the status to answer (400, 411, 414, 417, 431, 501, 505) */
    const char *why;        /* BAD: a static, one-line explanation */
    /* the request (DONE); strings point into `head`, NUL-terminated */
    enum mote_hreq_method method;
    const char *method_name;
    const char *path;       /* the request target up to '?' ("/v1/x"); always starts
                             * with '/', no space or control byte */
    const char *query;      /* after '?' ("" if none) */
    uint8_t minor;          /* HTTP/1.minor: 0 or 1 */
    bool chunked;           /* the body is chunked (mote_hreq_body decodes it) */
    bool has_length;        /* Content-Length was given (and no chunked) */
    uint64_t content_length;
    bool keep_alive;        /* the connection may serve another request */
    bool expect_continue;   /* Expect: 100-continue */
    const char *host;       /* NULL if absent */
    const char *authorization;
    const char *last_event_id;
    const char *content_type;
    const char *accept;
    const char *origin;     /* a browser's Origin (NULL if absent) */
    uint8_t accept_gzip;    /* Accept-Encoding: 1 gzip named, 3 taken through "*", 2 gzip
                             * refused ("gzip;q=0"), 0 not said: bit 0 set, gzip is taken */
    const char *mcp_session_id;       /* Mcp-Session-Id (MCP's Streamable HTTP) */
    const char *mcp_protocol_version; /* MCP-Protocol-Version */
    const char *conversation;         /* X-Mote-Conversation */
    unsigned fields;        /* header fields in the head */
    /* the chunked body's decoder */
    uint8_t te;             /* MOTE_HTTP_TE_* of the head */
    uint8_t ck_state;
    uint8_t ck_digits;
    uint16_t ck_line;       /* bytes of the current line (size line, trailer) */
    uint32_t ck_trailers;   /* trailer bytes so far */
    uint64_t ck_left;       /* of the chunk's data */
    /* input */
    size_t len;             /* bytes of `head` in use */
    char head[MOTE_SERVE_HEAD_MAX];
};

/* Makes `r` ready for a request (also between requests of a connection). */
void mote_hreq_reset(struct mote_hreq *r);

/* Feeds `len` bytes. Sets *used to how many were taken: bytes after the
 * head (the body, or a pipelined request) are left to the caller. Returns
 * MOTE_HREQ_READING (feed more), MOTE_HREQ_DONE or MOTE_HREQ_BAD. Once it
 * returned DONE or BAD, further calls take nothing until reset. */
int mote_hreq_feed(struct mote_hreq *r, const char *data, size_t len, size_t *used);

/* Decodes a chunked body (after DONE with r->chunked): takes `len` bytes
 * of `data` (sets *used; what follows the body is left for the next
 * request) and writes the body's bytes to out[0..cap) (sets *made; out
 * may overlap data at or before it, as memmove). Returns
 * MOTE_HREQ_READING (feed more, with the room that is left),
 * MOTE_HREQ_DONE (the last chunk and its trailers are in), or
 * MOTE_HREQ_BAD: status 400 (malformed) or 413 (more than `cap`). Never
 * blocks; the result does not depend on how the bytes were split. */
int mote_hreq_body(struct mote_hreq *r, const char *data, size_t len, size_t *used, char *out,
                   size_t cap, size_t *made);

/* The value of query parameter `key` into `out` (cap bytes,
 * NUL-terminated, %XX and '+' decoded). Returns its length, or -1 if
 * absent, too long, or badly encoded (a %00 among them: the value is a
 * C string). */
int mote_hreq_query(const struct mote_hreq *r, const char *key, char *out, size_t cap);

/* "GET", ..., for logs. */
const char *mote_hreq_method_name(enum mote_hreq_method m);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_HREQ_H */
