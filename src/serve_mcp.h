/*
 * serve_mcp.h - what the front doors for other software share (internal,
 * not installed): mote serve's MCP server (MCP sessions, JSON-RPC, the
 * device's tools offered; Streamable HTTP and stdio carry it) and its
 * OpenAI-compatible endpoint, and the turns and calls they follow for
 * their clients.
 *
 *   serve_follow.c     the turns followed for a client: a call's result,
 *                      an answer's text as it streams, its end; progress,
 *                      the elicited approval; the channel told to write
 *   serve_mcp.c        the MCP protocol: sessions, JSON-RPC messages in,
 *                      answers, the tool list, calls and `ask` started,
 *                      the messages a channel writes
 *   serve_mcp_http.c   Streamable HTTP at /mcp: POST, GET, DELETE, the
 *                      Origin check, JSON or an event stream
 *   serve_mcp_stdio.c  the same over a pipe pair (`mote mcp`)
 *   serve_mcp_out.c    what an MCP channel writes, framed by its transport
 *   serve_oai.c        POST /v1/chat/completions, GET /v1/models
 *   serve_doors.c      which door a connection's response is of
 *
 * Calls go one way: the transports and the OpenAI door call serve_mcp.c
 * and serve_follow.c; serve_follow.c calls the API's actions and tells a
 * channel it has something to write (a connection poked, the pipe's
 * watch armed), never a transport's function.
 */
#ifndef MOTE_SERVE_MCP_H
#define MOTE_SERVE_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_agent.h"
#include "mote/mote_config.h"
#include "mote/mote_loop.h"

struct serve;
struct mote_httpd_conn;
struct mote_jw;

/* The channel of the pipe pair (connections are 0..MOTE_SERVE_MAX_CONNS-1). */
#define SERVE_CHAN_STDIO (-1)
/* A follow whose client left: its answer goes nowhere. */
#define SERVE_CHAN_NONE (-2)

enum serve_follow_kind {
    SF_FREE = 0,
    SF_CALL,       /* MCP tools/call of a device tool: a call in the session's calls conversation */
    SF_ASK,        /* MCP tools/call of `ask`: a turn of a chat conversation */
    SF_OAI,        /* a chat completion, answered whole */
    SF_OAI_STREAM, /* a chat completion, streamed */
};

enum serve_follow_phase {
    SFP_WAIT = 1, /* its conversation is not ready (loading, busy, no slot free) */
    SFP_RUN,      /* the call or the turn runs */
    SFP_DONE,     /* the outcome is in: its answer is written as the channel takes it */
};

enum serve_elicit {
    SE_NONE = 0,
    SE_DUE,       /* the approval is to be asked of the client */
    SE_SENT,      /* asked: its answer awaited */
    SE_CANCEL,    /* answered elsewhere: notifications/cancelled is due */
};

/* A call or a turn followed for a client. */
struct serve_follow {
    uint8_t kind;          /* enum serve_follow_kind */
    uint8_t phase;         /* enum serve_follow_phase */
    uint8_t elicit;        /* enum serve_elicit */
    uint8_t out_part;      /* its answer being written: 0 not begun, 1 head, 2 text,
                            * 3 tail, 4 out */
    int16_t chan;          /* the connection its answer goes to, SERVE_CHAN_STDIO or
                            * SERVE_CHAN_NONE */
    int16_t sess;          /* MCP: its session's slot (-1: the pipe's) */
    uint32_t sess_gen;     /*   and that session's generation */
    uint32_t seq;          /* the order in which follows began */
    uint32_t t0;           /* when it began (loop clock) */
    bool is_error;
    bool progress_due;     /* a progress notification is due */
    bool round_new;        /* ask: the next text begins a new answer (the last one counts) */
    bool overflow;         /* the text did not fit: `dropped` bytes were left out */
    bool gone_done;        /* a client's cancel: nothing more is said */
    bool kept;             /* waiting: its input (a call's, a prompt) is kept in `text` */
    bool named;            /* ask, completion: `conv` was named by the client */
    bool role_sent;        /* a streamed completion's first chunk went */
    bool lead_comma;       /* its answer opens with a comma (a JSON batch's later one) */
    bool include_usage;    /* a streamed completion ends with a usage chunk */
    uint64_t dropped;
    uint64_t progress;     /* the last progress value sent */
    uint64_t total;        /* bytes of text so far (the progress of a turn) */
    uint32_t ask_id;       /* the approval elicited */
    int64_t elicit_id;     /* our elicitation request's id */
    uint64_t user_off;     /* OAI: the prompt's record (the completion's id) */
    int64_t created;       /* OAI: seconds of the real-time clock (0: unknown) */
    int err_code;          /* a turn's failure (enum mote_err) */
    const char *err_name;  /* its code's name when it is not mote_err_name's (static) */
    struct mote_usage usage;
    char stop[24];         /* the turn's stop reason */
    char err[MOTE_JOB_ERRMSG_LEN]; /* a streamed completion's failure (its text stays) */
    char conv[MOTE_CONV_ID_MAX];
    char call_id[MOTE_LLM_ID_MAX]; /* SF_CALL: mote's id of the call (the events') */
    char ask_call[MOTE_LLM_ID_MAX]; /* the call whose approval is elicited */
    char what[MOTE_LLM_NAME_MAX];  /* the tool it runs or waits for (progress messages) */
    char rpc_id[MOTE_SERVE_MCP_ID_MAX]; /* MCP: the request's id, raw JSON */
    char token[MOTE_SERVE_MCP_ID_MAX];  /* its progress token, raw JSON ("": none) */
    size_t text_len;
    size_t sent;           /* bytes of text out already (a stream; progress messages) */
    size_t out_off;        /* where the answer being written is, in its current part */
    char text[MOTE_SERVE_FOLLOW_TEXT]; /* a call's result, an answer's text */
};

/* An MCP session (Streamable HTTP: Mcp-Session-Id; the pipe has one). */
struct serve_mcp_sess {
    bool used;
    bool initialized;      /* notifications/initialized came */
    bool elicit;           /* the client takes elicitation/create */
    bool list_changed;     /* notifications/tools/list_changed is due */
    uint8_t version;       /* the protocol version agreed (an index) */
    int16_t get_chan;      /* its GET stream's connection (-1: none) */
    uint32_t gen;          /* bumped when the slot is taken anew */
    uint32_t used_at;      /* its last use (the least recently used is let go) */
    uint32_t list_gen;     /* the tool list it was told of */
    char id[33];           /* 32 hex digits */
    char conv[MOTE_CONV_ID_MAX]; /* its calls conversation ("" until its first call) */
    char client[40];       /* clientInfo.name, for the log */
};

/* What a connection's MCP or OpenAI response is. */
enum serve_chan_kind {
    SC_NONE = 0,
    SC_MCP_SSE,      /* POST /mcp answered as an event stream */
    SC_MCP_JSON,     /* POST /mcp answered as JSON (one answer, or an array) */
    SC_MCP_GET,      /* GET /mcp: the session's stream of the server's messages */
    SC_OAI_STREAM,   /* a streamed chat completion */
    SC_OAI_JSON,     /* a chat completion answered whole */
};

struct serve_chan {
    uint8_t kind;          /* enum serve_chan_kind */
    bool batch;            /* MCP JSON: the answers are an array */
    bool comma;            /* MCP JSON batch: an answer was written */
    bool ended;            /* its body's end is written */
    int16_t sess;          /* MCP: the session */
};

/* The front doors' state (in struct serve). */
struct serve_mcp {
    uint32_t seq;                 /* follows begun */
    uint32_t clock;               /* session uses */
    uint32_t list_gen;            /* the tool list's generation (bumped when it changes) */
    uint32_t list_sig;            /* a hash of the tool list told (to see it change) */
    int64_t next_elicit;          /* our requests' ids */
    mote_timer_id timer;          /* progress ticks while follows run */
    bool pass_mcp;                /* offer the MCP servers' tools too */
    struct serve_mcp_sess pipe;   /* the pipe's session */
    /* the pipe (conf.mcp_stdio) */
    mote_watch_id pipe_in_w, pipe_out_w;
    size_t pipe_in_len;           /* bytes of the line being read */
    size_t pipe_out_len, pipe_out_off; /* what waits to be written */
    bool pipe_skip;               /* a line too long: skipped to its end */
    bool pipe_eof;                /* the client closed its side */
    bool pipe_closed;             /* the pipe is done with */
    /* the pipe's client left: the server shuts down (serve.c's, set at init) */
    void (*pipe_ended)(struct serve *sv);
    /* a completion answered whole is ready (serve_oai.c's, set at init) */
    void (*oai_answer)(struct serve *sv, struct serve_follow *f);
    struct serve_mcp_sess sess[MOTE_SERVE_MCP_SESSIONS];
    struct serve_chan chans[MOTE_SERVE_MAX_CONNS];
    struct serve_follow follows[MOTE_SERVE_FOLLOWS];
};

/* ---- serve_follow.c ------------------------------------------------------------ */

/* Prepares the state (the server's init). */
void mote_serve_follow_init(struct serve *sv);
/* A free follow of `kind` for channel `chan`, or NULL (all in use). */
struct serve_follow *mote_serve_follow_new(struct serve *sv, enum serve_follow_kind kind,
                                           int chan);
/* Lets go of it. */
void mote_serve_follow_free(struct serve *sv, struct serve_follow *f);
/* Starts what `f` follows once its conversation is ready: a call
 * (SF_CALL: `name`, `input` are the call's) or a prompt (the others:
 * `input` the text). Returns 0 (running, or waiting: SFP_WAIT), or < 0
 * with f->text saying why (the follow is DONE with an error). */
int mote_serve_follow_start(struct serve *sv, struct serve_follow *f, const char *name,
                            const char *input, size_t len);
/* Every event of the session. */
void mote_serve_follow_event(struct serve *sv, const struct mote_event *ev);
/* A disk turn: follows waiting for their conversation try again. True
 * while one waits for a load. */
bool mote_serve_follow_disk_turn(struct serve *sv);
/* The client of channel `chan` left (its connection closed): its follows
 * drop their answers; a chat completion's turn is cancelled (the client
 * stopped it); an MCP call goes on (MCP: a cancel is a message). */
void mote_serve_follow_chan_gone(struct serve *sv, int chan);
/* Cancels follow `f`'s call or turn (a client's notifications/cancelled,
 * a session ended): no answer is written. */
void mote_serve_follow_cancel(struct serve *sv, struct serve_follow *f);
/* Tells channel `chan` it has something to write. */
void mote_serve_chan_poke(struct serve *sv, int chan);
/* The follows of channel `chan` not yet written out. */
unsigned mote_serve_follow_pending(const struct serve *sv, int chan);
/* The shutdown began: follows still running end with an error. */
void mote_serve_follow_shutdown(struct serve *sv);

/* Writes follow f's answer into out (room bytes), from where it stopped:
 * `head` (hn bytes, made alike at each call), its text as JSON string
 * content, `tail`; f->out_part is 4 once all of it is out. Returns the
 * bytes written. */
size_t mote_serve_follow_write(struct serve_follow *f, const char *head, size_t hn,
                               const char *tail, size_t tn, char *out, size_t room);

/* Writes JSON string content of text[*off..len) into out (room bytes):
 * escaped, whole characters only (invalid UTF-8 as \ufffd); *off moves
 * past what went. Returns the bytes written. */
size_t mote_serve_json_piece(const char *text, size_t len, size_t *off, char *out, size_t room);

/* ---- serve_mcp.c ---------------------------------------------------------------- */

/* Prepares the state (the server's init). */
void mote_serve_mcp_init(struct serve *sv);

/* What one POST body (or one line of the pipe) brought, and where its
 * answers go. */
struct serve_mcp_in {
    struct serve_mcp_sess *se;  /* its session (NULL: none yet) */
    int chan;                   /* where later answers go */
    bool sse;                   /* those may come as events (the client takes a stream) */
    bool http;                  /* Streamable HTTP (else the pipe) */
    /* results */
    struct serve_mcp_sess *made; /* an initialize made this session */
    unsigned answers;           /* immediate answers, in sv->scratch, one a line */
    size_t len;                 /*   their bytes */
    unsigned started;           /* follows begun on `chan` (their answers come later) */
    bool batch;                 /* the body was an array */
    bool refused;               /* the whole body was refused (HTTP 400): answers[0] says why */
    int status;                 /* HTTP: the status of a refusal (400, 404) */
};

/* Handles `body` (len bytes: one JSON-RPC message, or an array of them):
 * notifications and answers taken, requests answered (immediate answers
 * into sv->scratch, one a line, in `in`) or begun (follows on in->chan). */
void mote_serve_mcp_handle(struct serve *sv, struct serve_mcp_in *in, const char *body,
                           size_t len);

/* Opens a JSON-RPC message: {"jsonrpc":"2.0","id":ID (raw JSON; NULL or
 * "": null); the caller adds its member and closes it. */
void mote_serve_rpc_open(struct mote_jw *w, const char *id);
/* A whole JSON-RPC error message: the head above, then
 * "error":{"code":CODE,"message":MSG}. */
void mote_serve_rpc_error(struct mote_jw *w, const char *id, int code, const char *msg);

/* The session of HTTP id `id` (NULL: none, or unknown). */
struct serve_mcp_sess *mote_serve_mcp_find(struct serve *sv, const char *id);
/* Ends session `se` (DELETE, or let go): its follows are cancelled. */
void mote_serve_mcp_end(struct serve *sv, struct serve_mcp_sess *se);
/* (mote_serve_mcp_sess, the session of a slot, is in serve_int.h) */

/* Framing of a channel's messages. */
enum serve_frame {
    SF_FRAME_SSE = 0,  /* "event: message\ndata: MSG\n\n" */
    SF_FRAME_JSON,     /* MSG (a batch: ",MSG" after the first) */
    SF_FRAME_LINE,     /* MSG "\n" (the pipe) */
};

/* Writes what channel `chan` has to say into out (room bytes): whole
 * small messages (progress, an elicitation, notifications), an answer in
 * parts. *idle: nothing is left for it now (a POST's stream may end).
 * Returns the bytes written. */
size_t mote_serve_mcp_fill(struct serve *sv, int chan, enum serve_frame frame, bool *comma,
                           char *out, size_t room, bool *idle);

/* The tool list changed (MCP servers, or the configuration): sessions
 * are told. */
void mote_serve_mcp_tools_changed(struct serve *sv);
/* An MCP server's story line came (MOTE_EV_MCP): the list may have changed. */
void mote_serve_mcp_check_tools(struct serve *sv);

/* ---- serve_mcp_http.c ------------------------------------------------------------ */

/* True if Accept value `accept` (NULL: none, which takes anything) takes
 * media type `type`: the type, its family's wildcard or * / *, with a q
 * above 0. */
bool mote_serve_accepts(const char *accept, const char *type);
/* The head of a request to /mcp (Origin, session, version checked). */
void mote_serve_mcp_http_head(struct serve *sv, struct mote_httpd_conn *c);
/* The request. */
void mote_serve_mcp_http_request(struct serve *sv, struct mote_httpd_conn *c, const char *body,
                                 size_t len);
/* The engine's fill, ping and done for /mcp's responses. */
bool mote_serve_mcp_http_fill(struct serve *sv, struct mote_httpd_conn *c);
void mote_serve_mcp_http_ping(struct serve *sv, struct mote_httpd_conn *c);
void mote_serve_mcp_http_done(struct serve *sv, struct mote_httpd_conn *c);

/* ---- serve_doors.c ---------------------------------------------------------------- */

/* The engine's fill, ping and done: to the door the response is of. */
bool mote_serve_door_fill(void *app, struct mote_httpd_conn *c);
void mote_serve_door_ping(void *app, struct mote_httpd_conn *c);
void mote_serve_door_done(void *app, struct mote_httpd_conn *c);

/* ---- serve_mcp_stdio.c ------------------------------------------------------------ */

/* Starts reading the pipe (conf.mcp_stdio). Returns 0 or MOTE_ERR_FULL. */
int mote_serve_mcp_stdio_start(struct serve *sv);
/* Stops it (the server ends). */
void mote_serve_mcp_stdio_stop(struct serve *sv);
/* True when nothing waits to be written to the pipe (or it is closed). */
bool mote_serve_mcp_stdio_flushed(const struct serve *sv);

/* ---- serve_oai.c ----------------------------------------------------------------- */

void mote_serve_oai_models(struct serve *sv, struct mote_httpd_conn *c);
void mote_serve_oai_request(struct serve *sv, struct mote_httpd_conn *c, const char *body,
                            size_t len);
/* An OpenAI-format refusal {"error": {"message", "type", "param", "code"}}. */
void mote_serve_oai_error(struct serve *sv, struct mote_httpd_conn *c, unsigned status,
                          const char *code, const char *message, const char *extra);
/* Prepares the door (sets the follows' oai_answer hook). */
void mote_serve_oai_init(struct serve *sv);
bool mote_serve_oai_fill(struct serve *sv, struct mote_httpd_conn *c);
void mote_serve_oai_ping(struct serve *sv, struct mote_httpd_conn *c);
void mote_serve_oai_done(struct serve *sv, struct mote_httpd_conn *c);

#endif /* MOTE_SERVE_MCP_H */
