/*
 * mote_serve.h - the agent as a service: a small HTTP/1.1 API over a
 * session's conversations (docs/SERVE.md).
 *
 * A struct mote_serve, owned by the caller, runs on the session's loop
 * and serves, on a Unix socket (mode 0600) and optionally on a loopback
 * TCP port that requires a bearer token:
 *
 *   GET    /v1/health
 *   GET    /v1/conversations                  list (on disk and loaded)
 *   POST   /v1/conversations                  create
 *   GET    /v1/conversations/ID               state and records
 *   DELETE /v1/conversations/ID               remove a finished one
 *   POST   /v1/conversations/ID/messages      a user message: the turn starts
 *   POST   /v1/conversations/ID/retry         send the conversation again
 *   POST   /v1/conversations/ID/cancel        cancel the running turn
 *   POST   /v1/conversations/ID/approval      answer the pending tool call
 *   GET    /v1/conversations/ID/events        server-sent events
 *
 * Events come from the journal: a record's event id is its byte offset
 * in the conversation's file, so a client that reconnects with
 * Last-Event-ID (even after a restart) misses nothing; live text and
 * state changes go to clients that are caught up, without ids. A client
 * is fed at its own pace: it keeps an offset, and the next record is read
 * from storage when its socket has room, so a slow reader never makes the
 * server hold more than MOTE_SERVE_OUT_BUF for it.
 *
 * At most MOTE_MAX_CONVERSATIONS conversations are loaded; the others
 * stay on disk and are loaded when a request needs them, closing the one
 * least recently used that is idle (none idle: 503).
 *
 * All memory is in the struct (sizes in mote_config.h, MOTE_SERVE_*).
 * Every function is called from the loop's thread; none blocks (storage
 * reads aside, as everywhere in mote).
 */
#ifndef MOTE_SERVE_H
#define MOTE_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_agent.h"
#include "mote/mote_config.h"
#include "mote/mote_hreq.h"
#include "mote/mote_json.h"
#include "mote/mote_journal.h"
#include "mote/mote_loop.h"

struct mote_serve_conf {
    struct mote_session *session;      /* on the same loop; its events must reach
                                        * mote_serve_event() */
    const struct mote_conv_conf *conv; /* for every conversation created or loaded
                                        * (must outlive the server) */
    const char *socket_path;           /* the Unix socket (NULL: none) */
    const char *listen;                /* "127.0.0.1:PORT" or "[::1]:PORT" (NULL: none;
                                        * port 0: one the system picks); loopback only */
    const char *token;                 /* the bearer token TCP clients must send (required
                                        * with `listen`, at least MOTE_SERVE_TOKEN_MIN
                                        * bytes); compared in constant time */
    /* Deadlines, ms (0: the MOTE_SERVE_* default). */
    uint32_t header_timeout_ms;
    uint32_t body_timeout_ms;
    uint32_t idle_timeout_ms;
    uint32_t send_timeout_ms;
    uint32_t ping_ms;
    uint32_t flush_ms;
    /* Retention: finished conversations kept on disk, and their bytes
     * (0, 0: all), applied by mote_session_prune when the server starts
     * listening and after each conversation it creates. */
    unsigned long keep;
    uint64_t keep_bytes;
    /* One line for the log (a refusal, a failure, a conversation's
     * recovery); may be NULL. `line` is valid during the call. */
    void (*log)(void *arg, const char *line);
    void *log_arg;
};

enum mote_serve_phase {
    MOTE_SERVE_RUN = 0,  /* serving */
    MOTE_SERVE_DRAIN,    /* the session shuts down: no new turn (503); reads go on */
    MOTE_SERVE_FINAL,    /* the session is down: clients get the final event */
    MOTE_SERVE_DONE,     /* every connection and listener is closed */
};

struct mote_serve;

/* A connection's buffers (apart from its state, so that the server's
 * small fields stay together and untouched buffers stay out of RSS). */
struct mote_serve_io {
    struct mote_hreq req;
    char in[MOTE_SERVE_IN_BUF];
    char out[MOTE_SERVE_OUT_BUF];
};

/* One connection (internal layout, public so the caller owns the memory). */
struct mote_serve_conn {
    struct mote_serve *sv;
    uint8_t state;            /* free, reading a head or a body, responding, lingering */
    uint8_t stream;           /* none, records (GET a conversation), events (SSE) */
    uint8_t listener;         /* 0: the Unix socket, 1: TCP */
    bool keep_alive;          /* another request may follow this response */
    bool peer_eof;            /* the peer closed its side */
    bool head_started;        /* a byte of the next head came (its deadline runs) */
    bool in_record;           /* a stream is in the middle of a record */
    bool skip;                /* a stream skips the record at `pos` (Last-Event-ID) */
    bool comma;               /* records: one was written (the next needs a comma) */
    bool tail;                /* records: the closing part is written */
    bool chunked;             /* records: in chunks (HTTP/1.1; 1.0: ends at the close) */
    bool told_state;          /* events: the state was told since it caught up */
    bool final;               /* events: the last event (shutdown, removed) was written */
    bool gone;                /* events: the conversation was removed: a last event, closed */
    bool again;               /* a stream has more to send than one turn's share */
    int fd;
    int sh;                   /* storage handle of a stream (-1: none) */
    int big;                  /* body pool buffer (-1: none) */
    mote_watch_id watch;
    uint32_t deadline;        /* reading or lingering: the loop clock */
    uint32_t last_io;         /* last byte sent (send timeout, pings) */
    uint64_t pos;             /* a stream's next journal byte */
    uint64_t end;             /* records: where the snapshot ends */
    uint64_t disk_size;       /* events, a journal not loaded: its size when last seen */
    uint64_t disk_end;        /*   and where its complete records end (its last newline) */
    uint64_t body_len, body_got;
    size_t in_len;
    size_t out_len, out_off;
    size_t big_len, big_off;  /* a response body in the pool buffer */
    char conv_id[MOTE_CONV_ID_MAX];
    struct mote_serve_io *io; /* its buffers (last: kept when the state is cleared) */
};

struct mote_serve {
    struct mote_loop *loop;
    const struct mote_port *port;
    struct mote_serve_conf conf;
    uint8_t phase;                     /* enum mote_serve_phase */
    const char *missing;               /* the port member a failure lacked (NOSYS) */
    int lfd[2];                        /* listeners: Unix, TCP (-1: none) */
    mote_watch_id lwatch[2];
    uint16_t tcp_port;                 /* the TCP port bound */
    mote_timer_id timer;               /* the next deadline */
    uint32_t timer_due;
    mote_timer_id kick;                /* deferred work */
    uint32_t flush_until;
    uint32_t lru_seq;
    uint32_t lru[MOTE_MAX_CONVERSATIONS]; /* last use of each session slot */
    unsigned nconns;
    unsigned ntcp;                     /* of those, on the TCP listener */
    unsigned refused;                  /* connections answered 503 (the cap) */
    uint8_t paused;                    /* listeners resting after an accept failure (bits) */
    unsigned accept_fails;             /* failed accepts in a row (said once) */
    uint32_t pause_until;
    bool big_used[MOTE_SERVE_BODY_BUFS];
    /* recovery of conversations on start */
    unsigned nrec;
    bool rec_more;                     /* more than the queue held: list again */
    char rec[MOTE_SERVE_RECOVER_MAX][MOTE_CONV_ID_MAX];
    /* the signals (mote_serve_signal) and a failure, for the exit code */
    uint8_t sig;                       /* the first signal + 1 (0: none) */
    bool forced;                       /* a later signal forced the shutdown */
    bool failed;                       /* mote_serve_exit_code was told the loop failed */
    /* the shutdown's report, for the final event */
    bool sd_timed_out;
    unsigned sd_marked;
    char sd_reason[24];
    struct mote_serve_conn conns[MOTE_SERVE_MAX_CONNS];
    /* working memory, used within one call */
    struct mote_journal peek;
    struct mote_recovery recovery;
    struct mote_json json;
    char small[1280];                  /* a pending call's input */
    char resp[MOTE_SERVE_OUT_BUF];     /* a response body being built */
    char ev[MOTE_SERVE_OUT_BUF];       /* one live event, formatted once for every client */
    char scratch[MOTE_SERVE_BODY_MAX]; /* a message's text; a record read back */
    char bigbuf[MOTE_SERVE_BODY_BUFS][MOTE_SERVE_BODY_MAX];
    struct mote_serve_io io[MOTE_SERVE_MAX_CONNS];
};

/* Prepares `sv` on `loop` (the session's). Nothing listens yet. Returns
 * 0, MOTE_ERR_INVAL (no session or conv conf, `listen` without a token
 * or with one shorter than MOTE_SERVE_TOKEN_MIN, or neither a socket nor
 * a TCP address), or MOTE_ERR_NOSYS (the port
 * cannot serve: sv->missing names the member). */
int mote_serve_init(struct mote_serve *sv, struct mote_loop *loop,
                    const struct mote_serve_conf *conf) MOTE_MUST_CHECK;

/* Opens the listeners. Returns 0, or the failure of the one that failed
 * (sv->missing names a port member for MOTE_ERR_NOSYS; MOTE_ERR_INVAL: a
 * `listen` address that is not loopback; MOTE_ERR_ADDRINUSE: another
 * server has the socket; MOTE_ERR_EXIST: the socket path is not ours).
 * sv->tcp_port has the TCP port bound. */
int mote_serve_listen(struct mote_serve *sv) MOTE_MUST_CHECK;

/* Opens every conversation on disk that needs recovery (as many as there
 * are slots; the rest as slots free up): each continues by itself or
 * closes its interrupted tools, and its records and events reach its
 * clients. Returns how many were found, or a storage failure. */
int mote_serve_recover(struct mote_serve *sv);

/* The session's events: call it from the session's event callback with
 * every event. */
void mote_serve_event(struct mote_serve *sv, const struct mote_event *ev);

/* Starts the shutdown: new turns are refused (503), the session shuts
 * down with `req` (a later call forwards a force or a cancel), then every
 * event stream gets a final event, the listeners close and the socket
 * file is removed. Drive the loop until mote_serve_done(). Returns what
 * mote_shutdown_begin returns. */
int mote_serve_shutdown(struct mote_serve *sv, const struct mote_shutdown_req *req);

/* Maps a signal to the shutdown (call it from the loop's signal
 * callback, mote_loop_on_signal): the first SIGTERM or SIGHUP drains,
 * letting running turns finish for `timeout_ms`; SIGINT cancels them;
 * any later signal forces (stop waiting now). The first signal is kept
 * for mote_serve_exit_code. Returns what mote_serve_shutdown returns. */
int mote_serve_signal(struct mote_serve *sv, enum mote_signal sig, uint32_t timeout_ms);

/* The process's exit code once the server is done (docs/SERVE.md): 1
 * when the loop failed (`loop_rc` < 0: what mote_loop_poll returned) or a
 * journal's storage failed (a failure is never hidden behind a signal's
 * code); else 130 after SIGINT; 143 (SIGTERM) or 129 (SIGHUP) when the
 * drain was cut (its timeout passed, or a second signal forced it); else
 * 0. Never blocks. */
int mote_serve_exit_code(struct mote_serve *sv, int loop_rc);

/* True once everything is closed after the shutdown. */
bool mote_serve_done(const struct mote_serve *sv);

/* Closes every connection and listener at once (after mote_serve_done,
 * or to give up). */
void mote_serve_deinit(struct mote_serve *sv);

/* The bearer token kept in storage file `name` (one line of 64 hex
 * digits): read, or made from the port's random bytes and written
 * atomically (mode 0600 where it applies) when there is none. Returns 0
 * (*created tells which), or a storage failure; MOTE_ERR_CORRUPT if the
 * file holds something else. `out` needs 65 bytes. */
int mote_serve_token(const struct mote_port *port, const char *name, char out[65], bool *created);

#endif /* MOTE_SERVE_H */
