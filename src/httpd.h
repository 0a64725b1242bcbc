/*
 * httpd.h - the HTTP/1.1 server engine inside the library (internal, not
 * installed): listeners, connections, their buffers and deadlines.
 *
 * The engine knows HTTP, not what is served: it accepts connections on a
 * Unix socket and a loopback TCP port, reads each request's head
 * (mote_hreq) and body, and hands them to the application through a
 * struct mote_httpd_handler. The application answers with the functions
 * below (a reply in the connection's out buffer, or a streamed body the
 * engine asks for part by part as the socket drains). Keep-alive,
 * pipelining, chunking, 100-continue, half-closed peers, lingering closes
 * and every deadline are the engine's. One loop timer serves all
 * deadlines; all memory is in struct mote_httpd (sizes from the
 * MOTE_SERVE_* configuration).
 *
 * Everything runs on the loop's thread. The handler's functions are
 * called from the engine's fd watches and timer, never from inside
 * another handler call for the same connection.
 */
#ifndef MOTE_HTTPD_H
#define MOTE_HTTPD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_hreq.h"
#include "mote/mote_loop.h"
#include "mote/mote_port.h"

enum mote_httpd_state {
    MOTE_HTTPD_FREE = 0, /* no connection in the slot */
    MOTE_HTTPD_HEAD,     /* reading a request's head */
    MOTE_HTTPD_BODY,     /* reading its body */
    MOTE_HTTPD_RESP,     /* sending the response */
    MOTE_HTTPD_LINGER,   /* answered and our side shut: reading what still comes */
};

/* A connection's buffers (apart from its state, so that the small fields
 * stay together and untouched buffers stay out of RSS). */
struct mote_httpd_io {
    struct mote_hreq req;
    char in[MOTE_SERVE_IN_BUF];
    char out[MOTE_SERVE_OUT_BUF];
};

struct mote_httpd;

struct mote_httpd_conn {
    struct mote_httpd *h;
    uint8_t state;        /* enum mote_httpd_state */
    uint8_t listener;     /* 0: the Unix socket, 1: TCP */
    bool keep_alive;      /* another request may follow this response */
    bool peer_eof;        /* the peer closed its side */
    bool head_started;    /* a byte of the next head came (its deadline runs) */
    bool streaming;       /* the body comes from the handler's fill(), part by part */
    bool lasting;         /* streaming: an event stream, the connection's last response
                           * (what the peer sends is read and dropped; quiet: ping()) */
    bool chunked;         /* streaming: in chunks (else the body ends at the close) */
    bool pings;           /* streaming, not lasting: ping() too when it is quiet (an answer
                           * that waits long keeps its client and the proxies between) */
    bool ended;           /* streaming: the handler wrote the body's end */
    bool again;           /* more to do than one turn's share: writability is asked */
    bool deferred;        /* answered later (mote_httpd_defer): nothing written yet */
    bool body_chunked;    /* the request's body is chunked: read into `in`, decoded
                           * into the pool buffer (mote_hreq_body) */
    bool probing;         /* a lasting stream has bytes its peer has not read (the
                           * port's net_unread): it must read some by read_at +
                           * the send timeout */
    int fd;
    int pool;             /* the body pool buffer it holds (-1: none) */
    mote_watch_id watch;
    uint32_t deadline;    /* reading or lingering: the loop clock */
    uint32_t last_io;     /* last byte sent (send timeout, pings) */
    uint32_t read_at;     /* probing: when the peer was last seen reading */
    uint32_t unread_last; /* probing: net_unread when last looked (it only drops
                           * when the peer reads) */
    uint64_t body_len;    /* the request body's length */
    uint64_t body_got;    /*   and its bytes in the pool buffer */
    size_t kept_len;      /* a deferred request's body, kept until it is answered: in the
                           * pool buffer if it holds one, else at the start of `in` */
    size_t in_len;
    size_t out_len, out_off;
    size_t pool_len, pool_off; /* a response body in the pool buffer */
    struct mote_httpd_io *io;  /* its buffers (last: kept when the state is cleared) */
};

/* What the application does for the engine. `app` is conf.app. */
struct mote_httpd_handler {
    /* A request's head is in (c->io->req, MOTE_HREQ_DONE). Refuse it with
     * mote_httpd_error (a refusal closes the connection after it when a
     * body was announced: it is not read), or return without a response
     * to have its body read and request() called. */
    void (*head)(void *app, struct mote_httpd_conn *c);
    /* The whole request: `body` (len bytes, not NUL-terminated) is valid
     * during the call only. Answer with mote_httpd_reply, or start a
     * streamed response (mote_httpd_stream_head, mote_httpd_respond). */
    void (*request)(void *app, struct mote_httpd_conn *c, const char *body, size_t len);
    /* A streamed response has room in the out buffer: write its next part
     * (and set c->ended with its last). Returns true if it wrote anything. */
    bool (*fill)(void *app, struct mote_httpd_conn *c);
    /* A lasting stream sent nothing for ping_ms: write something harmless
     * (a comment) if the stream is between two events. */
    void (*ping)(void *app, struct mote_httpd_conn *c);
    /* The response is over (sent, or the connection closes): let go of
     * what the application holds for it. */
    void (*done)(void *app, struct mote_httpd_conn *c);
    /* Everything is closed after mote_httpd_close. */
    void (*closed)(void *app);
};

struct mote_httpd_conf {
    const struct mote_httpd_handler *handler;
    void *app;
    /* Deadlines, ms (every one > 0). */
    uint32_t header_timeout_ms; /* the whole head, from its first byte; a new connection's first */
    uint32_t body_timeout_ms;   /* the body, after the head */
    uint32_t idle_timeout_ms;   /* between requests */
    uint32_t send_timeout_ms;   /* a response the client does not read (an event stream:
                                 * bytes it has not read, where the port can tell) */
    uint32_t ping_ms;           /* a quiet lasting stream */
    uint32_t flush_ms;          /* lingering after the last response */
    /* Log lines ("NAME: ..."); log may be NULL. */
    const char *name;
    void (*log)(void *arg, const char *line);
    void *log_arg;
};

struct mote_httpd {
    struct mote_loop *loop;
    const struct mote_port *port;
    struct mote_httpd_conf conf;
    int lfd[2];                  /* listeners: Unix, TCP (-1: none) */
    mote_watch_id lwatch[2];
    uint16_t tcp_port;           /* the TCP port bound */
    uint8_t paused;              /* listeners resting after an accept failure (bits) */
    bool closing;                /* mote_httpd_close: no new connection or request */
    bool settle;                 /* closing: look at every connection on the next timer */
    bool closed;                 /* every connection and listener is closed */
    mote_timer_id timer;         /* the next deadline */
    uint32_t timer_due;
    uint32_t close_until;        /* closing: when the last responses are cut */
    uint32_t pause_until;
    unsigned accept_fails;       /* failed accepts in a row (said once) */
    unsigned nconns;
    unsigned ntcp;               /* of those, on the TCP listener */
    unsigned refused;            /* connections answered 503 at accept */
    bool pool_used[MOTE_SERVE_BODY_BUFS];
    struct mote_httpd_conn conns[MOTE_SERVE_MAX_CONNS];
    /* buffers: left untouched until used */
    char pool[MOTE_SERVE_BODY_BUFS][MOTE_SERVE_BODY_MAX]; /* large bodies, in or out */
    struct mote_httpd_io io[MOTE_SERVE_MAX_CONNS];
};

/* ---- the engine (httpd.c) -------------------------------------------------- */

/* Prepares `h` on `loop` (nothing listens yet; only the small fields are
 * written). The conf is copied. */
void mote_httpd_init(struct mote_httpd *h, struct mote_loop *loop,
                     const struct mote_httpd_conf *conf);

/* Listens on the Unix socket `unix_path` and on `tcp` ("127.0.0.1:PORT",
 * "localhost:PORT", "[::1]:PORT"), either NULL for none; a listener that
 * is open already stays. Returns 0, MOTE_ERR_INVAL (`tcp` is not a
 * loopback address), MOTE_ERR_FULL (no loop watch free) or the port's
 * failure. h->tcp_port has the TCP port bound. */
int mote_httpd_listen(struct mote_httpd *h, const char *unix_path, const char *tcp);

/* Ends serving: the listeners close, connections between requests close,
 * responses under way go on (streams until their end; no further request
 * on any connection) until `until` (the loop clock), then the rest are
 * closed. handler->closed is called once everything is. Called again: a
 * new `until`. */
void mote_httpd_close(struct mote_httpd *h, uint32_t until);

/* Closes every connection and listener at once (handler->closed is not
 * called). */
void mote_httpd_deinit(struct mote_httpd *h);

/* Asks for the connection's writability: something was put in its out
 * buffer from outside its own callbacks (a live event). */
void mote_httpd_poke(struct mote_httpd *h, struct mote_httpd_conn *c);

/* ---- responses (httpd_out.c) ----------------------------------------------- */

/* One log line "NAME: a b c" (b, c may be NULL). */
void mote_httpd_say(const struct mote_httpd *h, const char *a, const char *b, const char *c);

/* Appends to the out buffer: all or nothing (false: no room). */
bool mote_httpd_out(struct mote_httpd_conn *c, const char *p, size_t n);
bool mote_httpd_outs(struct mote_httpd_conn *c, const char *s);
bool mote_httpd_out_u64(struct mote_httpd_conn *c, uint64_t v);
size_t mote_httpd_room(const struct mote_httpd_conn *c);

/* A response head: status line, Content-Type, Cache-Control: no-store,
 * Content-Length if `with_length`, `extra` (whole header lines), and
 * Connection: close unless c->keep_alive. False: it does not fit. */
bool mote_httpd_head(struct mote_httpd_conn *c, unsigned status, const char *type,
                     const char *extra, bool with_length, uint64_t length);

/* The response is written (or its first part, if streaming): send it.
 * Once per request, or once after mote_httpd_defer. */
void mote_httpd_respond(struct mote_httpd_conn *c, bool streaming);

/* The request is answered later: nothing is sent (and no deadline runs)
 * until the application answers it from outside the handler's calls (a
 * timer) with mote_httpd_reply, mote_httpd_error, or a head and
 * mote_httpd_respond, then mote_httpd_poke. Meanwhile fill() is asked
 * and must write nothing, and the request's body stays
 * (mote_httpd_body). A connection that closes first gets done(). */
void mote_httpd_defer(struct mote_httpd_conn *c);

/* The body of a deferred request (NULL and 0 when it has none), valid
 * until it is answered. */
const char *mote_httpd_body(const struct mote_httpd_conn *c, size_t *len);

/* A complete JSON response (no body for HEAD); a 500 if it does not fit. */
void mote_httpd_reply(struct mote_httpd_conn *c, unsigned status, const char *body, size_t len,
                      const char *extra);

/* A refusal {"error": code, "message": message}, logged. Statuses that
 * leave the request's bytes unread (or the client unwelcome) close the
 * connection after it. */
void mote_httpd_error(struct mote_httpd_conn *c, unsigned status, const char *code,
                      const char *message, const char *extra);

/* The head of a streamed response: a lasting one (an event stream) ends
 * with the connection; another is chunked for HTTP/1.1, and ends with
 * the connection for HTTP/1.0 (RFC 9112 6.1). False: it does not fit. */
bool mote_httpd_stream_head(struct mote_httpd_conn *c, const char *type, const char *extra,
                            bool lasting);

/* A chunk of a streamed body: opened (room for its size is kept), and
 * closed when its bytes are written (an empty one is taken back: a
 * zero-size chunk would end the body). Without chunking, nothing. */
bool mote_httpd_chunk_open(struct mote_httpd_conn *c, size_t *mark);
void mote_httpd_chunk_close(struct mote_httpd_conn *c, size_t mark);
/* The chunked body's end (the last chunk). */
void mote_httpd_chunk_end(struct mote_httpd_conn *c);
/* A chunk opened when at least `min` bytes are free: returns what may be
 * written into it (the chunk's tail kept free); 0 (nothing opened): not
 * now. */
size_t mote_httpd_chunk_room(struct mote_httpd_conn *c, size_t min, size_t *mark);
/* The streamed body ended (its last chunk) and c->ended set, once:
 * false when it had ended already. */
bool mote_httpd_end_once(struct mote_httpd_conn *c);

/* A body pool buffer for a large response body: the one the connection
 * holds (then its request body there is gone), or a free one. NULL: none
 * free. Fill it, then mote_httpd_pool_send. */
char *mote_httpd_pool_take(struct mote_httpd_conn *c);
/* Sends `len` bytes of the pool buffer after what is in the out buffer. */
void mote_httpd_pool_send(struct mote_httpd_conn *c, size_t len);
/* Lets go of the connection's pool buffer (if any). */
void mote_httpd_pool_put(struct mote_httpd_conn *c);

#endif /* MOTE_HTTPD_H */
