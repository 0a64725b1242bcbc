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
 *   serve_live.c     one live event to a conversation's streams and MQTT
 *   serve_elicit.c   an MCP server's question to whoever approves the calls
 *   serve_token.c    the TCP listener's token file
 *   serve_disk.c     the journals on disk as the server knows them: each
 *                    one's summary, read in bounded steps and kept
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
#include "serve_mcp.h"

/* The largest tool input shown inline in a state (bigger: "record" says where). */
#define SERVE_INPUT_INLINE_MAX 1024

/* Bytes of a summary's last error (a recovery's last_error). */
#define SERVE_SUM_ERROR_MAX sizeof(((struct mote_recovery *)0)->last_error)

enum serve_stream_kind {
    SERVE_STREAM_NONE = 0,
    SERVE_STREAM_RECORDS, /* GET /v1/conversations/ID: the records of a snapshot */
    SERVE_STREAM_EVENTS,  /* GET /v1/conversations/ID/events: lasts */
    SERVE_STREAM_LIST,    /* GET /v1/conversations: its body built as journals are read */
    SERVE_STREAM_WAIT,    /* a request answered once a journal is read (`redo`) */
    SERVE_STREAM_PAGE,    /* GET /: the page's bytes from `pos` */
};

/* The request a SERVE_STREAM_WAIT answers when its journal is read. */
enum serve_redo {
    SERVE_REDO_GET = 1,   /* GET /v1/conversations/ID */
    SERVE_REDO_DELETE,    /* DELETE /v1/conversations/ID */
    SERVE_REDO_MESSAGE,   /* POST .../messages (its body kept by the engine) */
    SERVE_REDO_RETRY,     /* POST .../retry */
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
    bool wants_sum;       /* events: the state waits for the journal's summary */
    uint32_t body_len;    /* list: the body's bytes so far (in the pool buffer) */
    uint8_t redo;         /* wait: enum serve_redo */
    int sh;               /* storage handle of the journal (-1: none) */
    uint64_t pos;         /* the next journal byte */
    uint64_t end;         /* records: where the snapshot ends */
    uint64_t disk_size;   /* events, a journal not loaded: its size when last seen */
    uint64_t disk_end;    /*   and where its complete records end (its last newline) */
    char conv_id[MOTE_CONV_ID_MAX]; /* list: the cursor, the last id written */
};

/* What the server knows of a journal it does not hold (serve_disk.c):
 * what opening it would find, read once in bounded steps and kept while
 * the file's size and change time stay the same. */
struct serve_sum {
    char id[MOTE_CONV_ID_MAX]; /* "": a free entry */
    uint64_t file_size;        /* the file's size and change time when it was read: */
    int64_t mtime;             /*   the summary holds while both are the same */
    uint32_t used;             /* its last use (the least recently used is replaced) */
    bool once;                 /* a read failure: told once, then read again */
    bool live;                 /* kept current from a loaded conversation's records: its
                                * count and size hold, not what opening it would do */
    int rc;                    /* 0, or why it cannot be opened: MOTE_ERR_CORRUPT
                                * (bad_line), MOTE_ERR_NOTSUP, MOTE_ERR_NOTREG, a read failure */
    uint32_t bad_line;
    uint64_t bytes;            /* of its complete records */
    uint8_t action;            /* enum mote_recovery_action: what opening it would do */
    bool torn;                 /* it ends in a torn record */
    bool cancelled;            /* its last turn ended by a cancel */
    unsigned user_messages;
    char first[MOTE_JSCAN_FIRST];
    char last_error[SERVE_SUM_ERROR_MAX];
    struct mote_rec_usage usage; /* tokens of every request journaled */
};

/* A pass over every journal, in the order of their ids, a few per loop
 * turn: retention (the oldest finished ones noted, then removed) and the
 * conversations that need recovery queued. */
struct serve_walk {
    bool active;
    bool prune;                /* retention */
    bool recover;              /* queue what needs recovery */
    bool again_prune;          /* asked for again while it ran */
    bool again_recover;
    bool sync;                 /* driven to its end at once (the start) */
    char cursor[MOTE_CONV_ID_MAX]; /* the last id visited ("": none yet) */
    unsigned long count;       /* finished ones seen, */
    uint64_t bytes;            /*   and their bytes */
    unsigned n;                /* the oldest finished ones, oldest first */
    unsigned removed;          /* by this walk */
    uint64_t removed_bytes;
    struct {
        char id[MOTE_CONV_ID_MAX];
        int64_t mtime;
        uint64_t bytes, file_size;
    } old[MOTE_PRUNE_BATCH];
};

/* Error codes the metrics count apart (more: counted as "other"). */
#define SERVE_MET_CODES 16

/* What the server counts (serve_metrics.c). */
struct serve_metrics {
    uint32_t started;               /* the loop's time at listen */
    uint64_t turns_answered, turns_cancelled, turns_failed;
    uint64_t model_requests;        /* request records: attempts sent to the model */
    uint64_t tokens[4];             /* input, output, cache read, cache write */
    uint64_t tokens_day[4];         /* the same since the day began (UTC; or the start) */
    int64_t day;                    /* that day (days since 1970; -1: no real-time clock) */
    uint64_t tool_calls, tool_errors;
    uint64_t approvals_asked, approvals_expired;
    uint64_t questions, questions_policy; /* MCP servers' questions: asked, answered by the
                                           * policy (nobody there, the deadline) */
    uint64_t http_requests, mqtt_requests;
    uint64_t errors_other;
    unsigned ncodes;
    struct {
        int code;
        uint64_t n;
    } errors[SERVE_MET_CODES];
    /* each session slot's tokens already counted, and whose they were */
    struct mote_usage seen[MOTE_MAX_CONVERSATIONS];
    char seen_id[MOTE_MAX_CONVERSATIONS][MOTE_CONV_ID_MAX];
    /* the loop's lag, from a timer every second */
    mote_timer_id tick;
    uint32_t tick_due;
    uint32_t lag_ms, lag_max_ms;    /* the last tick's, and the most since the last stats */
    uint32_t stats_left_ms;         /* until the next PREFIX/stats */
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
    struct serve_metrics met;          /* (serve_metrics.c) */
    /* the shutdown's report, for the final event */
    bool sd_timed_out;
    unsigned sd_marked;
    char sd_reason[24];
    struct serve_stream streams[MOTE_SERVE_MAX_CONNS];
    /* the journals on disk (serve_disk.c) */
    mote_timer_id disk_timer;          /* the disk work's next turn */
    void (*disk_turn)(struct serve *sv); /* what a turn does (serve.c sets it) */
    uint32_t sum_seq;
    unsigned nsums;                    /* sums[] used so far (the rest untouched) */
    bool scanning;                     /* `scan` reads scan_id */
    char scan_id[MOTE_CONV_ID_MAX];
    int64_t scan_mtime;
    struct serve_walk walk;
    struct mote_httpd http;            /* the engine (its buffers last) */
    struct serve_sum sums[MOTE_SERVE_SUMMARIES]; /* touched as they are used */
    struct mote_jscan scan;
    /* the conversation being loaded from disk, a budget a disk turn */
    struct mote_conv_load load;        /* load.active: under way */
    char load_id[MOTE_CONV_ID_MAX];    /* its id, or that of the last load that failed */
    int load_rc;                       /* that failure, for the request that waited (0: none) */
    uint32_t load_bad;                 /*   and its damaged line */
    bool rec_opened;                   /* the recovery queue opened one since it was listed */
    bool rec_next;                     /* a load took one off the queue: the next, soon */
    /* working memory, used within one call */
    struct mote_json json;             /* a request's body; an approval's display (serve_show.c)
                                        * reuses it in event callbacks: a handler reads the
                                        * body before it calls an action */
    char small[1280];                  /* a pending call's input */
    char resp[MOTE_SERVE_OUT_BUF];     /* a response body being built */
    char ev[MOTE_SERVE_OUT_BUF];       /* one live event, formatted once for every client */
    char scratch[MOTE_SERVE_BODY_MAX]; /* a message's text; a record read back; list ids */
    struct serve_mcp mcp;              /* the MCP server and the OpenAI door (serve_mcp.h) */
    /* MCP servers' questions (serve_elicit.c): the caller's memory, one per
     * struct mote_mcp, and the hook that tells a stream that caught up */
    struct mote_serve_asks *asks;
    bool (*elicit_tell)(struct serve *sv, struct mote_httpd_conn *c, const char *id);
};

/* The state in the caller's struct. */
static inline struct serve *mote_serve_state(struct mote_serve *sv)
{
    return (struct serve *)(void *)sv->area.bytes;
}

/* The MCP session of slot `i` (-1: the pipe's), or NULL. */
static inline struct serve_mcp_sess *mote_serve_mcp_sess(struct serve *sv, int i)
{
    if (i == -1)
        return &sv->mcp.pipe;
    return i >= 0 && i < MOTE_SERVE_MCP_SESSIONS ? &sv->mcp.sess[i] : NULL;
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

/* Notes a use of loaded conversation `cv` (the slot kept longest). */
void mote_serve_touch(struct serve *sv, const struct mote_conv *cv);
/* The loaded conversation `id` (a use), or NULL. */
struct mote_conv *mote_serve_find(struct serve *sv, const char *id);
/* A slot for one more conversation: the idle one used least recently is
 * closed if every slot is taken. Returns 0 or MOTE_ERR_FULL. */
int mote_serve_make_room(struct serve *sv);
/* The loaded conversation `id`, loading it (with its recovery) if it is
 * only on disk: a short journal at once, a long one over the next disk
 * turns (one load at a time). Returns 0, MOTE_ERR_AGAIN (being loaded, or
 * waiting for the load under way: ask again on a later disk turn), or
 * mote_conv_open's failure (*bad: its line). */
int mote_serve_load(struct serve *sv, const char *id, struct mote_conv **out, uint32_t *bad);
/* One disk turn of the load under way. Returns true while it goes on. */
bool mote_serve_load_turn(struct serve *sv);
/* Retention (conf.keep, conf.keep_bytes): when the journals' count or
 * size is over, a walk removes the oldest finished ones over the next
 * disk turns; a failure is said. */
void mote_serve_prune(struct serve *sv);
/* The same, driven to its end at once (the start, before serving). */
void mote_serve_prune_now(struct serve *sv);
/* True if conversation `id` waits in the recovery queue. */
bool mote_serve_queued(const struct serve *sv, const char *id);
/* Opens queued conversations as slots allow (the server running). */
void mote_serve_recover_more(struct serve *sv);

/* Starts a walk over the journals (or asks for another once the one
 * running ends): retention (`prune`) and the recovery queue (`recover`).
 * The disk turns do it, a few journals a turn. */
void mote_serve_walk_start(struct serve *sv, bool prune, bool recover);
/* One turn of the walk. Returns true while it goes on. */
bool mote_serve_walk_turn(struct serve *sv);

/* ---- serve_disk.c: the journals on disk ---------------------------------------- */

/* True if id[0..n) is a conversation id: 1..MOTE_CONV_ID_MAX-1 of [A-Za-z0-9_-]. */
bool mote_serve_id_ok(const char *id, size_t n);
/* The journal's storage name of conversation `id` (MOTE_STORAGE_NAME_MAX bytes). */
void mote_serve_journal_name(char *out, const char *id);

/* The summary of journal `id` when it is current: 0 (*out; *holder the
 * process holding its lock, -1 one the port cannot name, 0 none);
 * MOTE_ERR_AGAIN when the journal must be read first (its reading starts,
 * or waits for the one under way: ask again on a later disk turn);
 * MOTE_ERR_NOENT (none, or empty); or a storage failure. A file that is
 * not a regular file has a summary with rc MOTE_ERR_NOTREG. *out stays
 * valid until the next call of this file. */
int mote_serve_sum(struct serve *sv, const char *id, const struct serve_sum **out,
                   int64_t *holder);
/* The state a conversation not loaded shows: newer, damaged, locked,
 * needs_recovery, error (its last turn failed) or idle. */
const char *mote_serve_sum_state(const struct serve_sum *e, int64_t holder);
/* True if the journal is finished: whole, nothing for recovery to do, open
 * nowhere (not loaded: the caller's to check). */
bool mote_serve_sum_finished(const struct serve_sum *e, int64_t holder);
/* Loaded conversation cv is about to close: its summary, if it was kept
 * current from its records, takes its usage. */
void mote_serve_sum_usage(struct serve *sv, const struct mote_conv *cv);
/* Forgets the summary of `id` (its journal is written or removed here). */
void mote_serve_sum_drop(struct serve *sv, const char *id);
/* A record was appended to loaded conversation `id` at `off` (`len`
 * bytes, without its newline): its summary, if it ends there, is kept
 * current (size, user messages, first words) instead of read again. */
void mote_serve_sum_record(struct serve *sv, const char *id, uint64_t off, const char *text,
                           size_t len);
/* True if conversation `id` is being loaded (serve_conv.c's load). */
bool mote_serve_loading(const struct serve *sv, const char *id);
/* A disk turn soon: something waits for a journal. */
void mote_serve_disk_kick(struct serve *sv);
/* The reading of one turn: a budget of the journal under way (its summary
 * kept when it is done). Returns true while it reads. */
bool mote_serve_disk_read(struct serve *sv);
/* Stops the disk work (the server ends). */
void mote_serve_disk_stop(struct serve *sv);
/* The smallest journal id after `after` ("": the first) into out: 1, 0
 * when there is none, or a storage failure. */
int mote_serve_next_id(struct serve *sv, const char *after, char out[MOTE_CONV_ID_MAX]);
/* Removes journal `id`, not loaded, as its current summary `e` knows it:
 * it must be finished, and unchanged since it was read (its lock held
 * meanwhile). Returns 0; MOTE_ERR_BUSY (not finished), MOTE_ERR_LOCKED
 * (another process has it), MOTE_ERR_AGAIN (it changed: read it again),
 * MOTE_ERR_NOENT, or a storage failure. */
int mote_serve_disk_remove(struct serve *sv, const char *id, const struct serve_sum *e);

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
 * MOTE_ERR_ALREADY (a retry with nothing to retry: the last turn is
 * finished, or nothing was said); or mote_conv_send's or
 * mote_conv_retry's failure (MOTE_ERR_INVAL: the message is empty). */
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
 * MOTE_ERR_LOCKED, MOTE_ERR_AGAIN (its journal must be read first: ask
 * again on a later disk turn), MOTE_ERR_NOENT, or a storage failure. */
int mote_serve_remove(struct serve *sv, const char *id);

/* What a conversation is now, loaded or only on disk. */
struct serve_look {
    struct mote_conv *cv;  /* loaded: it; else NULL */
    const char *state;     /* a state name (mote_conv_state_name, or from disk) */
    bool busy;
    int64_t holder;        /* another process holds it (its pid), else 0 */
    uint64_t end;          /* the journal's size */
    char last_error[MOTE_JOB_ERRMSG_LEN];
    struct mote_rec_usage usage; /* tokens of every request journaled */
};
/* Returns 0; MOTE_ERR_AGAIN when its journal must be read first (ask
 * again on a later disk turn); or the failure of reading it (*bad: a
 * damaged line). */
int mote_serve_look(struct serve *sv, const char *id, struct serve_look *out, uint32_t *bad);

/* ---- serve_http.c: the engine's head and request handlers ------------------------- */

void mote_serve_on_head(void *app, struct mote_httpd_conn *c);
void mote_serve_on_request(void *app, struct mote_httpd_conn *c, const char *body, size_t len);

/* ---- serve_budget.c: the spend budget as the API shows it ----------------------------- */

/* "budget": the session's budget (its limits, the hour's and the day's
 * use, whether it waits and until when), or null. */
void mote_serve_budget_json(struct serve *sv, struct mote_jw *w);
/* "usage": tokens of a conversation's requests. */
void mote_serve_usage_json(struct mote_jw *w, const struct mote_rec_usage *u);

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
/* GET and POST /v1/conversations/ID/elicitation: an MCP server's question. */
void mote_serve_http_elicit(struct serve *sv, struct mote_httpd_conn *c, const char *id,
                            const char *body, size_t len);
/* One conversation's entry of a list (GET /v1/conversations, MQTT's
 * list), a JSON object in sv->resp: its length, 0 if it does not fit. */
size_t mote_serve_list_entry(struct serve *sv, const char *id, const struct serve_sum *e,
                             int64_t holder);
/* A disk turn for a request waiting for journals (a list being built, a
 * GET or DELETE waiting for its journal): true while it still waits. */
bool mote_serve_http_disk_turn(struct serve *sv, struct mote_httpd_conn *c);

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
/* A disk turn for an event stream whose state waits for its journal:
 * true while it still waits. */
bool mote_serve_stream_disk_turn(struct serve *sv, struct mote_httpd_conn *c);
/* ---- serve_page.c: browsers ------------------------------------------------------ */

/* False for a browser's request from a page of another site (its Origin
 * names another host than the one it was sent to, or is "null"): refused
 * whatever its token. */
bool mote_serve_origin_ok(const struct mote_hreq *r);
/* GET / and HEAD /: the page (conf.page), or a refusal. */
void mote_serve_http_page(struct serve *sv, struct mote_httpd_conn *c);
/* The page's next bytes into the connection's out buffer. */
bool mote_serve_page_fill(struct serve *sv, struct mote_httpd_conn *c, struct serve_stream *st);

/* ---- serve_show.c: the call waiting for approval as mote shows it ---------------- */

/* Writes "display": the call's display (mote_show_call_json) to `w`, a
 * writer onto a struct mote_sb, if it fits with `reserve` bytes left
 * after it; else "display": null (and returns false). */
bool mote_serve_show_into(struct serve *sv, struct mote_jw *w, size_t reserve, const char *name,
                          const char *input, size_t len);
/* GET /v1/conversations/ID/approval[?whole=1][&format=text]. */
void mote_serve_http_show(struct serve *sv, struct mote_httpd_conn *c, const char *id);

/* "approval": {...} or null, for loaded conversation `cv` (or NULL). */
void mote_serve_approval_json(struct serve *sv, struct mote_conv *cv, struct mote_jw *w,
                              size_t max);
/* The members of loaded conversation cv's pending question (nothing if
 * none): ask_id, call_id, name, record, input (inline up to `max` bytes,
 * else null), input_bytes and the deadline's. */
void mote_serve_question_json(struct serve *sv, struct mote_conv *cv, struct mote_jw *w,
                              size_t max);
/* The pending question's deadline members: "timeout_ms" (0: none) and,
 * with one, "expires_in_ms". */
void mote_serve_deadline_json(struct serve *sv, const struct mote_conv *cv, struct mote_jw *w);

/* ---- serve_metrics.c: what the server counts ---------------------------------------- */

/* Counting starts (the server listens): the loop's tick. */
void mote_serve_metrics_start(struct serve *sv);
/* Counting stops (the server ends). */
void mote_serve_metrics_stop(struct serve *sv);
/* Every event of the session. */
void mote_serve_metrics_event(struct serve *sv, const struct mote_event *ev);
/* GET /v1/metrics: the Prometheus text format (0.0.4). */
void mote_serve_http_metrics(struct serve *sv, struct mote_httpd_conn *c);
/* The same numbers as one JSON object (PREFIX/stats). */
void mote_serve_metrics_json(struct serve *sv, struct mote_jw *w);

/* ---- serve_sched.c: the schedules (conf.sched; each does nothing without) ---------- */

/* Starts the runner (the server listens): the definitions read, the
 * journal replayed, what a crash left open picked up, the first look.
 * Returns 0 or a failure (said in the log: the server serves without). */
int mote_serve_sched_start(struct serve *sv);
/* Every event of the session (a turn's end finishes an occurrence). */
void mote_serve_sched_event(struct serve *sv, const struct mote_event *ev);
/* Stops it (shutdown, deinit): no occurrence starts any more. */
void mote_serve_sched_stop(struct serve *sv);
/* "schedules": how many, running, the clock, for the health. */
void mote_serve_sched_health(struct serve *sv, struct mote_jw *w);
/* The HTTP handlers of /v1/schedules (`id` NULL) and /v1/schedules/ID. */
void mote_serve_http_schedules(struct serve *sv, struct mote_httpd_conn *c, const char *id,
                               const char *body, size_t len);
/* An MQTT request's "schedule" (put) or "schedule_delete" member:
 * 0 (done), or < 0 with the error's code and message. */
int mote_serve_sched_request(struct serve *sv, const struct mote_json *j, int obj,
                             const char **code, char *msg, size_t cap);
/* The schedules as one JSON document into buf (cap bytes): its length,
 * or < 0 (does not fit). */
int mote_serve_sched_list(struct serve *sv, char *buf, size_t cap);
/* Registers the agent's "schedule" tool (conf.sched_tool). */
int mote_serve_sched_tool(struct serve *sv);

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
/* A disk turn: a reply that waits for a journal's summary goes on.
 * Returns true while it waits. */
bool mote_serve_mqtt_disk(struct serve *sv);
/* A conversation's load from disk ended (loaded, or failed): requests
 * waiting for it, or for the load to end, are tried again. */
void mote_serve_mqtt_loaded(struct serve *sv);
/* True with --mqtt: *online while connected, *connects so far. */
bool mote_serve_mqtt_info(const struct serve *sv, bool *online, uint32_t *connects);
/* The stats are due (the metrics' tick): the retained PREFIX/stats, its
 * JSON written by `json` (the metrics' own, passed in: the MQTT door does
 * not call the metrics, which call it). */
void mote_serve_mqtt_stats(struct serve *sv, void (*json)(struct serve *, struct mote_jw *));
/* The conversations' settings changed (a reload): the status again. */
void mote_serve_mqtt_reconf(struct serve *sv);
/* The shutdown began (or was forced). */
void mote_serve_mqtt_shutdown(struct serve *sv, const struct mote_shutdown_req *req);
/* True once the client's job ended (or never started). */
bool mote_serve_mqtt_stopped(const struct serve *sv);
/* Lets go of everything (the timer, the journals read). */
void mote_serve_mqtt_deinit(struct serve *sv);

/* ---- serve_live.c: one live event --------------------------------------------------- */

/* The event stream of connection i following conversation `id`, or NULL. */
struct serve_stream *mote_serve_follower(struct serve *sv, unsigned i, const char *id);

struct mote_sb;
/* A live event `name` opened in sv->ev (its JSON object open in w). */
void mote_serve_ev_open(struct serve *sv, struct mote_sb *k, struct mote_jw *w, const char *name);
/* Closes it and sends it to every client of conversation `id` that is
 * caught up (one that is not gets the records when it reads on, never a
 * live event out of order) and to MQTT. False: larger than a live event
 * may be, sent to nobody. */
bool mote_serve_ev_send(struct serve *sv, struct mote_sb *k, struct mote_jw *w, const char *id);

/* ---- serve_elicit.c: an MCP server's question -------------------------------------- */

/* Answers conversation `id`'s open question (`ask`: its ask_id, 0: any)
 * for `by` (the door: "client", "mqtt"). Returns 0, MOTE_ERR_NOENT (none
 * open), MOTE_ERR_STALE (another ask_id), MOTE_ERR_INVAL (content does
 * not fit the form: `err` says why, the question stays open),
 * MOTE_ERR_FULL (the server's queue is full: try again), or another
 * failure to send it (the question is over). */
int mote_serve_elicit_answer(struct serve *sv, const char *id, uint32_t ask,
                             enum mote_mcp_action action, const char *content, size_t len,
                             char *err, size_t cap, const char *by);
/* The answer to conversation `id`'s question in object t of js
 * ({"action", "content", "ask_id"}, from door `by`): NULL when it was
 * sent (*action: its name), else the refusal's code ("bad_field",
 * "bad_content", "no_question", "stale", "busy", "mcp_failed") with
 * msg (cap bytes) saying why. */
const char *mote_serve_elicit_take(struct serve *sv, const struct mote_json *js, int t,
                                   const char *id, const char *by, char *msg, size_t cap,
                                   const char **action);
/* Conversation `id`'s open question into w ({"ask_id", "server",
 * "message", "fields", "timeout_ms", "expires_in_ms"} members); false: none. */
bool mote_serve_elicit_json(struct serve *sv, const char *id, struct mote_jw *w);

#endif /* MOTE_SERVE_INT_H */
