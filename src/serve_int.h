/*
 * serve_int.h - what the API server's files (src/serve*.c) share, and
 * nothing else uses (internal, not installed): the server's state inside
 * struct mote_serve's area, and each file's functions for the others.
 *
 *   serve.c          the server's life: init, listen, shutdown, exit code
 *   serve_conv.c     the loaded conversations: slots, loading, retention,
 *                    recovery on start
 *   serve_api.c      the API's actions on conversations, apart from HTTP
 *   serve_http.c     the HTTP front door: routes, authorization, dispatch
 *   serve_handlers.c the HTTP request handlers: JSON in, an action, JSON out
 *   serve_stream.c   the journal streamed to clients (records, event streams)
 *   serve_events.c   the session's live events to the event streams
 *   serve_token.c    the TCP listener's token file
 *   serve_mqtt.c     the MQTT front door: requests from a broker, the
 *                    conversations' events and the status to it
 *
 * The HTTP engine under them is httpd.h; it knows nothing of this file.
 */
#ifndef MOTE_SERVE_INT_H
#define MOTE_SERVE_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "httpd.h"
#include "mote/mote_serve.h"

/* The largest tool input shown inline in a state (bigger: "record" says where). */
#define SERVE_INPUT_INLINE_MAX 1024

enum serve_stream_kind {
    SERVE_STREAM_NONE = 0,
    SERVE_STREAM_RECORDS, /* GET /v1/conversations/ID: the records of a snapshot */
    SERVE_STREAM_EVENTS,  /* GET /v1/conversations/ID/events: lasts */
};

/* What a connection's response follows in a conversation's journal (the
 * connection of the same index in the engine). */
struct serve_stream {
    uint8_t kind;         /* enum serve_stream_kind */
    bool in_record;       /* in the middle of a record */
    bool skip;            /* the record at `pos` is skipped (Last-Event-ID) */
    bool comma;           /* records: one was written (the next needs a comma) */
    bool told_state;      /* events: the state was told since it caught up */
    bool gone;            /* events: the conversation was removed: a last event, closed */
    int sh;               /* storage handle of the journal (-1: none) */
    uint64_t pos;         /* the next journal byte */
    uint64_t end;         /* records: where the snapshot ends */
    uint64_t disk_size;   /* events, a journal not loaded: its size when last seen */
    uint64_t disk_end;    /*   and where its complete records end (its last newline) */
    char conv_id[MOTE_CONV_ID_MAX];
};

/* The server's state: struct mote_serve's `area`. */
struct serve {
    struct mote_serve *pub;            /* the caller's struct (phase, sig, ...) */
    struct mote_loop *loop;
    const struct mote_port *port;
    struct mote_serve_conf conf;
    mote_timer_id recover_timer;       /* recovery of more conversations, soon */
    uint32_t lru_seq;
    uint32_t lru[MOTE_MAX_CONVERSATIONS]; /* last use of each session slot */
    /* recovery of conversations on start */
    unsigned nrec;
    bool rec_more;                     /* more than the queue held: list again */
    char rec[MOTE_SERVE_RECOVER_MAX][MOTE_CONV_ID_MAX];
    /* for the exit code */
    bool forced;                       /* a later signal forced the shutdown */
    bool failed;                       /* mote_serve_exit_code was told the loop failed */
    /* the shutdown's report, for the final event */
    bool sd_timed_out;
    unsigned sd_marked;
    char sd_reason[24];
    struct serve_stream streams[MOTE_SERVE_MAX_CONNS];
    struct mote_httpd http;            /* the engine (its buffers last) */
    /* working memory, used within one call */
    struct mote_journal peek;
    struct mote_recovery recovery;
    struct mote_json json;
    char small[1280];                  /* a pending call's input */
    char resp[MOTE_SERVE_OUT_BUF];     /* a response body being built */
    char ev[MOTE_SERVE_OUT_BUF];       /* one live event, formatted once for every client */
    char scratch[MOTE_SERVE_BODY_MAX]; /* a message's text; a record read back; list ids */
};

/* The state in the caller's struct. */
static inline struct serve *mote_serve_state(struct mote_serve *sv)
{
    return (struct serve *)(void *)sv->area.bytes;
}

/* The engine's connection `c` and its stream. */
static inline struct serve_stream *mote_serve_stream_of(struct serve *sv,
                                                        const struct mote_httpd_conn *c)
{
    return &sv->streams[c - sv->http.conns];
}

/* ---- serve.c ------------------------------------------------------------------ */

/* Looks for conversations to recover on the next loop turn (a slot may be free). */
void mote_serve_recover_soon(struct serve *sv);

/* ---- serve_conv.c -------------------------------------------------------------- */

/* True if id[0..n) is a conversation id: 1..MOTE_CONV_ID_MAX-1 of [A-Za-z0-9_-]. */
bool mote_serve_id_ok(const char *id, size_t n);
/* The journal's storage name of conversation `id` (MOTE_STORAGE_NAME_MAX bytes). */
void mote_serve_journal_name(char *out, const char *id);
/* Notes a use of loaded conversation `cv` (the slot kept longest). */
void mote_serve_touch(struct serve *sv, const struct mote_conv *cv);
/* The loaded conversation `id` (a use), or NULL. */
struct mote_conv *mote_serve_find(struct serve *sv, const char *id);
/* A slot for one more conversation: the idle one used least recently is
 * closed if every slot is taken. Returns 0 or MOTE_ERR_FULL. */
int mote_serve_make_room(struct serve *sv);
/* The loaded conversation `id`, loading it (with its recovery) if it is
 * only on disk. Returns 0 or mote_conv_open's failure (*bad: its line). */
int mote_serve_load(struct serve *sv, const char *id, struct mote_conv **out, uint32_t *bad);
/* Retention (conf.keep, conf.keep_bytes); a failure is said. */
void mote_serve_prune(struct serve *sv);
/* The state name of a conversation on disk, not loaded. */
const char *mote_serve_disk_state(const struct mote_conv_info *i);
/* True if conversation `id` waits in the recovery queue. */
bool mote_serve_queued(const struct serve *sv, const char *id);
/* Opens queued conversations as slots allow (the server running). */
void mote_serve_recover_more(struct serve *sv);

/* ---- serve_api.c: the actions --------------------------------------------------
 * Each is what one API request does, whatever carried it; none writes a
 * response. *out is the conversation (loaded) when there is one, also on
 * most failures. */

/* A new conversation (`id`, or one made up when NULL). Returns 0,
 * MOTE_ERR_SHUTDOWN, MOTE_ERR_FULL (every slot busy), MOTE_ERR_EXIST, or
 * a storage failure. */
int mote_serve_create(struct serve *sv, const char *id, struct mote_conv **out);

/* A user message `text` (len bytes) to conversation `id`, or the
 * conversation sent again (`retry`). *offset: where its records start.
 * Returns 0; MOTE_ERR_SHUTDOWN; a failure to load it (*out NULL, *bad
 * the damaged line for MOTE_ERR_CORRUPT); MOTE_ERR_BUSY (a turn runs);
 * or mote_conv_send's or mote_conv_retry's failure (MOTE_ERR_INVAL: the
 * message is empty). */
int mote_serve_send(struct serve *sv, const char *id, const char *text, size_t len, bool retry,
                    struct mote_conv **out, uint64_t *offset, uint32_t *bad);

/* Cancels the running turn of `id`. Returns 0 or MOTE_ERR_NOENT (not
 * loaded, or no turn runs). */
int mote_serve_cancel(struct serve *sv, const char *id, struct mote_conv **out);

/* Answers the tool call of `id` waiting for approval: `call_id` must be
 * its call, `ask` its question (0: any). Returns 0, MOTE_ERR_SHUTDOWN
 * (the call stays pending), MOTE_ERR_NOENT (no call waits) or
 * MOTE_ERR_STALE (another call waits, or the answer came too late). */
int mote_serve_approve(struct serve *sv, const char *id, const char *call_id, uint32_t ask,
                       enum mote_answer answer, const char *reason, struct mote_conv **out);

/* Removes conversation `id` (its event streams get a last event).
 * Returns 0, MOTE_ERR_BUSY (a turn runs), MOTE_ERR_INPROGRESS (it is
 * unfinished: it needs recovery or is damaged, and stays),
 * MOTE_ERR_NOENT, or a storage failure. */
int mote_serve_remove(struct serve *sv, const char *id);

/* What a conversation is now, loaded or only on disk. */
struct serve_look {
    struct mote_conv *cv;  /* loaded: it; else NULL */
    const char *state;     /* a state name (mote_conv_state_name, or from disk) */
    bool busy;
    int64_t holder;        /* another process holds it (its pid), else 0 */
    uint64_t end;          /* the journal's size */
    char last_error[MOTE_JOB_ERRMSG_LEN];
};
/* Returns 0, or the failure of reading it from disk (*bad: a damaged line). */
int mote_serve_look(struct serve *sv, const char *id, struct serve_look *out, uint32_t *bad);

/* One page of the list: the `cap` smallest ids after `after` ("" from the
 * start), sorted, into ids[] (n of them); *more says there are ids after
 * the page. Returns 0 or a storage failure. */
int mote_serve_list_ids(struct serve *sv, const char *after, char (*ids)[MOTE_CONV_ID_MAX],
                        unsigned cap, unsigned *n, bool *more);

/* ---- serve_http.c: the engine's head and request handlers ------------------------- */

void mote_serve_on_head(void *app, struct mote_httpd_conn *c);
void mote_serve_on_request(void *app, struct mote_httpd_conn *c, const char *body, size_t len);

/* ---- serve_handlers.c ---------------------------------------------------------------- */

void mote_serve_http_health(struct serve *sv, struct mote_httpd_conn *c);
void mote_serve_http_list(struct serve *sv, struct mote_httpd_conn *c);
void mote_serve_http_create(struct serve *sv, struct mote_httpd_conn *c, const char *body,
                         size_t len);
void mote_serve_http_get(struct serve *sv, struct mote_httpd_conn *c, const char *id);
void mote_serve_http_delete(struct serve *sv, struct mote_httpd_conn *c, const char *id);
void mote_serve_http_message(struct serve *sv, struct mote_httpd_conn *c, const char *id,
                          const char *body, size_t len, bool retry);
void mote_serve_http_cancel(struct serve *sv, struct mote_httpd_conn *c, const char *id);
void mote_serve_http_approval(struct serve *sv, struct mote_httpd_conn *c, const char *id,
                           const char *body, size_t len);
void mote_serve_http_events(struct serve *sv, struct mote_httpd_conn *c, const char *id);

/* ---- serve_stream.c --------------------------------------------------------------- */

/* The engine's fill, ping and done handlers for the streams. */
bool mote_serve_stream_fill(void *app, struct mote_httpd_conn *c);
void mote_serve_stream_ping(void *app, struct mote_httpd_conn *c);
void mote_serve_stream_done(void *app, struct mote_httpd_conn *c);

/* Opens conversation `id`'s journal for stream `st`. Returns 0 or the
 * storage failure. */
int mote_serve_stream_open(struct serve *sv, struct serve_stream *st, const char *id);
/* The end of the complete records of the journal stream `st` follows. */
uint64_t mote_serve_conv_end(struct serve *sv, struct serve_stream *st);
/* True if `off` is where a record of st's journal starts, at most `end`. */
bool mote_serve_record_start(struct serve *sv, struct serve_stream *st, uint64_t off,
                             uint64_t end);
/* True when an event stream has sent every record there is. */
bool mote_serve_caught_up(struct serve *sv, struct serve_stream *st);
/* Event streams of conversation `id`: a last event, then closed. */
void mote_serve_streams_gone(struct serve *sv, const char *id);
/* "approval": {...} or null, for loaded conversation `cv` (or NULL). */
void mote_serve_approval_json(struct serve *sv, struct mote_conv *cv, struct mote_jw *w,
                              size_t max);

/* ---- serve_mqtt.c: the MQTT front door (docs/MQTT.md) ---------------------------
 * Each does nothing without conf.mqtt_url. */

/* Checks the settings and prepares the client. Returns 0 or
 * MOTE_ERR_CONFIG (conf.mqtt->errmsg says why). */
int mote_serve_mqtt_init(struct serve *sv);
/* Starts the client's job (the server listens). Returns 0 or the spawn's failure. */
int mote_serve_mqtt_start(struct serve *sv);
/* Every event of the session (records go out, waiting messages are tried). */
void mote_serve_mqtt_event(struct serve *sv, const struct mote_event *ev);
/* A live event of conversation `id`, as the event streams get it:
 * "event: NAME\ndata: JSON\n\n" (`len` bytes). */
void mote_serve_mqtt_live(struct serve *sv, const char *id, const char *frame, size_t len);
/* The shutdown began (or was forced). */
void mote_serve_mqtt_shutdown(struct serve *sv, const struct mote_shutdown_req *req);
/* True once the client's job ended (or never started). */
bool mote_serve_mqtt_stopped(const struct serve *sv);
/* Lets go of everything (the timer, the journals read). */
void mote_serve_mqtt_deinit(struct serve *sv);

#endif /* MOTE_SERVE_INT_H */
