/*
 * mote_mcp.h - MCP servers (JSON-RPC 2.0) over stdio, Streamable HTTP or
 * HTTP+SSE.
 *
 * A stdio server is a child process (through the port's process group, so
 * it runs under a supervisor and never outlives mote), driven by fd
 * watches; an HTTP server is reached through the same connections as the
 * model's (the port's net and TLS members, kept connections, proxies,
 * deadlines): JSON-RPC requests are POSTs, answered with JSON or an event
 * stream; the session's id (Mcp-Session-Id) is kept and sent, and a lost
 * session is replaced by a new one without failing the request that met
 * it; Streamable HTTP's GET stream brings the server's notifications;
 * HTTP+SSE takes everything from its event stream and POSTs to the
 * endpoint it names. Either way: initialize -> notifications/initialized
 * -> tools/list (following nextCursor) -> ready. Server pings are answered, other server requests
 * refused with -32601, notifications (also before the initialize answer)
 * accepted. Each request has a deadline. Tool calls are jobs
 * (mote_mcp_call_ops); cancelling one sends notifications/cancelled.
 *
 * Tools are offered as "SERVER__TOOL" (characters outside [A-Za-z0-9_-]
 * become '_', at most 64 bytes: the providers' rules).
 *
 * All memory is in struct mote_mcp (sizes in mote_config.h).
 */
#ifndef MOTE_MCP_H
#define MOTE_MCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_client.h"
#include "mote/mote_config.h"
#include "mote/mote_dial.h"
#include "mote/mote_json.h"
#include "mote/mote_llm.h"
#include "mote/mote_loop.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Bytes of the storage name of a server's record ("mcp/" TAG ".run", NUL;
 * see "what is left after a crash" below). */
#define MOTE_MCP_LEFT_NAME_MAX (MOTE_PROC_TAG_MAX + 12)

enum mote_mcp_state {
    MOTE_MCP_OFF = 0,
    MOTE_MCP_STARTING, /* initialize sent */
    MOTE_MCP_LISTING,  /* tools/list in progress */
    MOTE_MCP_READY,
    MOTE_MCP_FAILED,   /* could not start or initialise, or died */
    MOTE_MCP_CLOSED,   /* disconnected */
};

/* How mote reaches a server. */
enum mote_mcp_kind {
    MOTE_MCP_STDIO = 0, /* a child process: newline-delimited JSON on its stdin and stdout */
    MOTE_MCP_HTTP,      /* Streamable HTTP (MCP 2025-03-26 and later): POSTs to one URL */
    MOTE_MCP_SSE,       /* HTTP+SSE (MCP 2024-11-05): an event stream, POSTs to its endpoint */
};

struct mote_mcp_tool {
    char name[64];    /* SERVER__TOOL, offered to the model */
    char remote[MOTE_MCP_NAME_MAX]; /* the server's own name for it */
    char desc[MOTE_MCP_DESC_MAX];
    char schema[MOTE_MCP_SCHEMA_MAX];
};

struct mote_mcp_call;

struct mote_mcp_wire_ops;

/* One HTTP exchange at a time over a connection kept between them
 * (internal to the HTTP transport, src/mcp_http.c and src/mcp_wire.c). */
struct mote_mcp_chan {
    struct mote_mcp_server *srv;
    const struct mote_mcp_wire_ops *ops;
    struct mote_conn conn;
    struct mote_dial dial;
    uint8_t phase;            /* internal: dial, send, response, done */
    uint8_t method;           /* GET, POST, DELETE */
    uint8_t role;             /* what the exchange is for */
    bool kept;                /* it went on a kept connection */
    bool resent;              /* the one resend after a kept connection's close */
    bool got_byte;            /* a byte of the response came */
    bool busy;                /* an exchange is under way */
    bool answered;            /* the request's answer came (the stream may end now) */
    bool kick;                /* step it again at once (bytes wait in the TLS session) */
    bool tail;                /* the answer came: the stream's end has a short deadline */
    bool in_feed;             /* inside the response parser: nothing may close it */
    bool abort;               /* close it when the parser returns */
    uint8_t body;             /* what its body is: none, JSON, an event stream, other */
    uint32_t seq;             /* the queued message it carries (0: none) */
    uint32_t deadline;
    size_t sent;              /* bytes of the head and body sent */
    mote_watch_id watch;
    mote_timer_id timer;
    /* event-stream framing, straight into msg */
    uint8_t sse_state;
    bool sse_cr, sse_data, sse_skip;
    uint8_t field_len;
    char field[8];
    char event[16];
    char *msg;                /* where a message is gathered (NULL: bodies dropped) */
    size_t msg_cap, msg_len;
    bool msg_over;            /* the message was longer than msg_cap: dropped */
    bool session_sent;        /* the request carried the session's id */
    bool once;                /* its message acts on the world (tools/call): never sent
                               * again once the server may have received it */
    bool whole;               /* the message is in `req` after the head */
    size_t head_len, req_len; /* of `req`: the head, and all of it */
    /* the stream's place, for its resumption (Streamable HTTP) */
    bool id_ok;               /* the event being read has a valid id (in id_in) */
    bool id_bad;              /* the id field being read is refused (too long, a NUL) */
    bool id_new;              /* an event id came in this exchange */
    uint8_t retry_n;          /* digits of the retry field being read (0: none, 255: bad) */
    uint16_t id_len;          /* bytes of the id field being read */
    uint32_t retry_in;        /* the retry field being read */
    uint32_t retry_ms;        /* the server's `retry:` for this stream, ms (0: none said) */
    char id_in[MOTE_MCP_EVENT_ID_MAX];   /* the id field being read */
    char last_id[MOTE_MCP_EVENT_ID_MAX]; /* the last event's id ("" none): Last-Event-ID */
    struct mote_http_resp resp;
    char req[MOTE_NET_BUF];   /* the request as it goes out, built once at its start */
};

/* A message waiting for its HTTP exchange (internal). */
struct mote_mcp_queued {
    uint32_t seq;
    uint32_t off, len;        /* its bytes in outbuf */
    uint8_t kind;             /* request, initialize, notification or answer */
    bool sending;             /* on a channel */
    bool renewed;             /* a new session was made for it once */
    int64_t id;               /* a request's JSON-RPC id (0: a notification or answer) */
};

struct mote_mcp_server {
    struct mote_mcp *m;
    char name[32];
    uint8_t kind;        /* enum mote_mcp_kind */
    uint8_t state;       /* enum mote_mcp_state */
    uint8_t caps;        /* MOTE_MCP_CAP_*: what its initialize answer declared */
    uint8_t asking;      /* a question of its (elicitation) waits for an answer */
    mote_timer_id timer; /* the pending request's deadline */
    int64_t next_id;
    int64_t req_id;      /* 0: none pending */
    uint8_t req_kind;
    uint8_t in_flags;    /* internal: the answer being read (mcp_in.c) */
    uint8_t in_rel;      /* internal: ... the levels left to skip */
    uint8_t pages;       /* tools/list pages fetched for the list being read */
    uint32_t req_deadline;
    struct mote_mcp_call *call; /* the call waiting for req_id */
    bool dropped_line;
    bool relist;         /* tools/list_changed came: list again when free */
    bool relisting;      /* the new list replaces the old one when it comes */
    bool paused;         /* its answer waits unread: a request's body is being sent */
    unsigned calls_waiting; /* calls waiting for the server to be free (they go before a
                             * new tool list) */
    /* deadlines, progress and restarts */
    uint32_t start_ms;   /* initialize and tools/list ("startup_timeout_sec"; 0: m->timeout_ms) */
    uint32_t call_ms;    /* tools/call ("tool_timeout_sec"; 0: m->timeout_ms) */
    uint32_t req_ms;     /* the pending request's deadline, ms (progress gives it again) */
    uint32_t call_t0;    /* when the pending call was sent */
    uint32_t progress_said; /* when its progress was last logged (0: not yet) */
    uint32_t restart_at; /* a stdio server that exited starts again no sooner (0: now) */
    uint8_t restarts;    /* times it was started again in this run */
    bool was_ready;      /* it was ready once: it may be started again after an exit */
    bool restarting;     /* started again: calls wait for it to be ready */
    size_t inlen, outlen;
    unsigned ntools, skipped_tools;
    char cursor[256];
    char errmsg[200];
    union {
        struct { /* MOTE_MCP_STDIO */
            const char *const *argv;
            const char *const *envp;
            int64_t pid;
            int in_fd, out_fd, err_fd;
            mote_watch_id w_in, w_out, w_err;
            mote_timer_id exit_timer;
            bool exited;
            int left_h;          /* its record's handle (mote_mcp_left_record), -1: none */
            char left_name[MOTE_MCP_LEFT_NAME_MAX];
            bool gone;           /* its stdout ended: waiting briefly for the exit */
            uint8_t gone_tries;
            int status;
            size_t outoff, loglen;
            char log[MOTE_MCP_LOG_MAX];          /* the tail of its stderr */
        };
        struct { /* MOTE_MCP_HTTP, MOTE_MCP_SSE */
            const char *url;
            const char *const *headers; /* "Name: value" lines (secrets: never shown) */
            struct mote_url to;
            struct mote_url proxy;
            bool via_proxy;
            bool have_endpoint;  /* HTTP+SSE: its endpoint event came */
            bool get_up;         /* the event stream is open (its headers came) */
            bool get_none;       /* Streamable HTTP: the server offers no GET stream */
            bool lost;           /* the session is gone: a new one is needed */
            uint8_t renew;       /* a new session being made (internal steps) */
            uint8_t dc_state;    /* disconnecting (internal) */
            uint8_t get_fails;   /* the event stream's failed attempts in a row */
            bool gate;           /* the first messages wait for the event stream */
            bool dc_delete;      /* the disconnect ends the session with DELETE */
            bool kicked;         /* the queue is looked at on the next turn */
            uint32_t seq;        /* the last message queued */
            uint32_t get_retry;  /* when to open the event stream again */
            uint32_t res_seq;    /* the request whose broken stream is resumed (0: none) */
            uint32_t res_at;     /* when its resumption GET goes (0: under way) */
            uint8_t res_tries;   /* resumptions in a row that brought no event */
            uint32_t dc_t0;      /* when the disconnect began */
            int64_t init_id;     /* the id of the initialize request */
            mote_timer_id io_timer; /* the channels' deadlines, the stream's retry */
            unsigned nq;
            uint64_t origin;
            char proxy_auth[MOTE_PROXY_AUTH_MAX];
            char target[MOTE_MCP_PATH_MAX];  /* the URL's path and query; HTTP+SSE:
                                              * the endpoint's */
            char get_target[MOTE_MCP_PATH_MAX];
            char session[MOTE_MCP_SESSION_MAX]; /* Mcp-Session-Id, "" before one */
            char scope[MOTE_MCP_SCOPE_MAX]; /* the scope a 403 asked for ("": none) */
            char version[16];    /* the protocol version the server answered */
            char init_msg[320];  /* the initialize request, for a new session */
            size_t init_len;
            struct mote_mcp_queued q[MOTE_MCP_QUEUE_MAX];
            struct mote_mcp_chan ch[3]; /* requests; notifications meanwhile; the
                                         * server's event stream (GET) */
            char note[MOTE_MCP_NOTE_MAX]; /* a message on Streamable HTTP's GET stream */
        };
    };
    struct mote_mcp_tool tools[MOTE_MCP_MAX_TOOLS];
    char outbuf[MOTE_MCP_OUT_MAX];
    char inbuf[MOTE_MCP_LINE_MAX];
};

/* The network settings of the servers over HTTP (the frontend sets them
 * after mote_mcp_init, as it does the model's: mote_llm_conf). */
struct mote_mcp_net {
    const char *ca_file;        /* NULL: the port's default roots */
    const char *https_proxy;    /* for https:// servers (mote_proxy_parse); NULL: none */
    const char *http_proxy;     /* for http:// servers */
    const char *no_proxy;       /* mote_proxy_bypass's list */
    uint32_t connect_timeout_ms; /* resolve, connect, tunnel, handshake */
    uint32_t keep_idle_ms;      /* a kept connection idle this long closes (0: none kept) */
    uint8_t tls_resume;         /* MOTE_TLS_RESUME_* */
    uint32_t tls_session_max_s;
};

/* Called for each thing worth telling the user (started, failed,
 * disconnect steps). */
typedef void (*mote_mcp_log_fn)(void *arg, const char *server, const char *msg);

struct mote_mcp_up;
struct mote_mcp_asks;

struct mote_mcp {
    struct mote_loop *loop;
    const struct mote_mcp_up *up; /* internal: the protocol's side, for the transports */
    unsigned n;
    uint32_t timeout_ms;  /* per request */
    struct mote_mcp_net net; /* servers over HTTP */
    unsigned holds;       /* requests whose tool list must not change */
    /* disconnecting */
    bool dc;
    bool dc_termed, dc_killed;
    uint32_t dc_t0, dc_budget;
    mote_mcp_log_fn log;
    void *log_arg;
    struct mote_mcp_asks *asks; /* elicitation (mote_mcp_elicit_on; NULL: declined) */
    /* internal: a server's elicitation/create (request id token `id`, params `params` of
     * j) taken by mcp_elicit.c; j NULL: the server stopped (its question is over) */
    void (*ask_in)(struct mote_mcp_server *s, const struct mote_json *j, int id, int params);
    struct mote_json json;
    char text[MOTE_MCP_LINE_MAX]; /* unescape scratch */
    char scratch[MOTE_NET_BUF];   /* HTTP: a request's head, received bytes */
    struct mote_mcp_server srv[MOTE_MAX_MCP_SERVERS];
};

void mote_mcp_init(struct mote_mcp *m, struct mote_loop *loop, mote_mcp_log_fn log, void *arg);

/* Adds a server (argv and envp must outlive it; envp NULL inherits).
 * Returns its index or MOTE_ERR_FULL / MOTE_ERR_INVAL (bad name). */
int mote_mcp_add(struct mote_mcp *m, const char *name, const char *const *argv,
                 const char *const *envp);

/* Adds a server over HTTP: `kind` MOTE_MCP_HTTP (Streamable HTTP) or
 * MOTE_MCP_SSE (HTTP+SSE: `url` is its event stream's), `url`
 * "http[s]://host[:port][/path][?query]", `headers` NULL or
 * NULL-terminated "Name: value" lines sent with every request (secrets:
 * never in a message, a log line or a result; a server's text that holds
 * a value of 8 bytes or more, or its last word, has it blanked). All must
 * outlive the server. The network settings are m->net's, read when the
 * servers start. Returns its index or MOTE_ERR_FULL, MOTE_ERR_EXIST, or
 * MOTE_ERR_INVAL / MOTE_ERR_TOO_LARGE (a bad name, URL or header). Never
 * blocks. */
int mote_mcp_add_http(struct mote_mcp *m, const char *name, enum mote_mcp_kind kind,
                      const char *url, const char *const *headers);

/* Starts every server at once; returns without waiting. A server that
 * cannot be spawned is FAILED (and logged); the others go on. */
void mote_mcp_start_all(struct mote_mcp *m);

/* True when no server is still starting or listing. */
bool mote_mcp_settled(const struct mote_mcp *m);

/* Fills `defs` (up to `max`) with the tools of the ready servers. */
unsigned mote_mcp_tool_defs(const struct mote_mcp *m, struct mote_tool_def *defs, unsigned max);

/* Finds an offered tool name: server index and tool index, or false. */
bool mote_mcp_find(const struct mote_mcp *m, const char *name, unsigned *srv, unsigned *tool);

/* Keeps the offered tool lists as they are (a tools/list_changed is
 * fetched and applied only when no hold is left): a request's tool list
 * is fixed from the first byte counted to the last one sent. */
void mote_mcp_hold(struct mote_mcp *m);
void mote_mcp_unhold(struct mote_mcp *m);

/* Disconnects every server in parallel within `budget_ms`: close stdin,
 * wait, SIGTERM the group at 2/5 of the budget, SIGKILL it at 4/5, reap.
 * Each step is logged. Never waits itself: the caller's loop drives it by
 * calling mote_mcp_disconnect_poll (every few ms: a child's exit has no
 * wake-up of its own here). */
void mote_mcp_disconnect_begin(struct mote_mcp *m, uint32_t budget_ms);

/* One pass of the disconnect (with `force`: SIGKILL every group now and
 * stop waiting). Returns > 0 (servers still exiting: call again), or,
 * once done, 0 (all gone) or -N (N had not exited: their supervisors end
 * them). */
int mote_mcp_disconnect_poll(struct mote_mcp *m, bool force);

/* ---- tool calls ---- */

struct mote_mcp_call {
    struct mote_mcp *m;
    unsigned srv, tool;
    const char *args;    /* a JSON object */
    size_t args_len;
    /* Another request than tools/call (resources, prompts: mcp_res.c):
     * `method` with `params` (a JSON object) is sent to server `srv`, and
     * its result object handed to `take`, which writes c->result (and
     * c->len, c->is_error) and returns true to send it again to c->srv
     * (a list over several servers), false when done. NULL: tools/call. */
    const char *method;
    bool (*take)(struct mote_mcp_call *c, const struct mote_json *j, int result, bool cut);
    uint8_t which;       /* the take's own: what the call is */
    char params[MOTE_MCP_PARAMS_MAX];
    bool sent, done, is_error;
    bool waiting;        /* counted in its server's calls_waiting */
    bool renamed;        /* its server was started again: its tool is found by name */
    int64_t id;
    mote_job_id job;
    size_t len;
    char result[MOTE_MCP_RESULT_MAX]; /* text content, NUL-terminated */
};

/* What a server's initialize answer declared (s->caps). */
#define MOTE_MCP_CAP_RESOURCES 0x01u
#define MOTE_MCP_CAP_PROMPTS 0x02u

/* Tools mote offers for the servers' resources (list_mcp_resources,
 * list_mcp_resource_templates, read_mcp_resource; as Codex does): offered
 * while a ready server declares resources, besides its own tools. */
#define MOTE_MCP_RES_TOOLS 3u

/* Fills `defs` (up to `max`) with the resource tools when a ready server
 * declares resources; returns how many. */
unsigned mote_mcp_res_defs(const struct mote_mcp *m, struct mote_tool_def *defs, unsigned max);

/* True when `name` is a resource tool offered now (*which: which one). */
bool mote_mcp_res_find(const struct mote_mcp *m, const char *name, unsigned *which);

/* Prepares a call of resource tool `which` with the model's input (token
 * 0 of `j`, the object parsed from args[0..len)): the server it names,
 * its request. A bad input makes the call done at once with an error
 * result (the job ends DONE at its first step). Run with
 * mote_mcp_call_ops. */
void mote_mcp_res_call_init(struct mote_mcp_call *c, struct mote_mcp *m, unsigned which,
                            const struct mote_json *j, const char *args, size_t len);

/* Prompts, for a frontend's commands (their calls run with
 * mote_mcp_call_ops, the text in c->result; a bad request makes the call
 * done at once with the error in c->result).
 * mote_mcp_prompts_init: every ready server's prompts that declare them,
 * one line each: "SERVER/NAME: description (arguments: a*, b)" (* when
 * required), pages followed up to MOTE_MCP_PAGES_MAX.
 * mote_mcp_prompt_init: prompts/get of prompt `name` ("SERVER/NAME", or
 * "NAME" when one server offers prompts) with `args` (NULL or
 * NAME=VALUE words, a value with blanks in double quotes): its messages
 * as the text of one user turn (messages apart by a blank line, a role
 * other than user named, text kept, other content summarised, cut to
 * MOTE_MCP_RESULT_MAX with a note). Returns 0, or < 0 (the error is in
 * c->result too): MOTE_ERR_NOENT, MOTE_ERR_INVAL. */
void mote_mcp_prompts_init(struct mote_mcp_call *c, struct mote_mcp *m);
int mote_mcp_prompt_init(struct mote_mcp_call *c, struct mote_mcp *m, const char *name,
                         const char *args);
/* A chat's commands for them: "/prompts" (the list: returns 0) and
 * "/prompt NAME [ARG=VALUE...]" (returns 1; without a NAME the call is
 * done at once with the command's usage as its error); the call is
 * prepared as above. MOTE_ERR_NOENT: not one of them (`c` untouched).
 * `c` NULL: only says which it is. */
int mote_mcp_prompt_command(struct mote_mcp_call *c, struct mote_mcp *m, const char *line);

/* Prepares a call of tool `tool` of server `srv` with `args`. */
void mote_mcp_call_init(struct mote_mcp_call *c, struct mote_mcp *m, unsigned srv, unsigned tool,
                        const char *args, size_t args_len);

/* Task ops for the call's job; it ends DONE with c->result / c->is_error
 * (an MCP error or a dead server is a tool error, not a job failure), or
 * CANCELLED (notifications/cancelled sent). */
extern const struct mote_task_ops mote_mcp_call_ops;

/* ---- elicitation (a server's question for the user) ----
 * With mote_mcp_elicit_on, mote declares the elicitation capability (form
 * mode) and a server's elicitation/create goes to `fn` (for whoever
 * approves calls): one question at a time (another one meanwhile is
 * declined), its form flat (properties of type string - plain, "enum",
 * "oneOf" of const/title, "enumNames" -, number, integer, boolean); an
 * optional field of another type is left out, a required one declines
 * the form, as does URL mode, a schema that is not an object, more than
 * MOTE_MCP_ASK_FIELDS fields or a form over MOTE_MCP_ASK_MAX bytes.
 * Without it (or while nobody can answer) every question is declined at
 * once. The question waits `timeout_ms` (0: for ever; the call that asked
 * does not time out meanwhile), then it is answered "cancel" and `fn`
 * hears it closed; `fn` hears it closed too when its server stops. */

enum mote_mcp_action { MOTE_MCP_ACCEPT, MOTE_MCP_DECLINE, MOTE_MCP_CANCEL };

enum { MOTE_MCP_F_STRING = 1, MOTE_MCP_F_NUMBER, MOTE_MCP_F_INTEGER, MOTE_MCP_F_BOOLEAN };

struct mote_mcp_ask {
    uint32_t id;           /* the open question (0: none) */
    uint8_t srv;           /* its server's index */
    uint8_t nfields;
    mote_timer_id timer;
    char rid[64];          /* its JSON-RPC id, re-encoded */
    struct {
        uint16_t at;       /* its name in names[], its choices after it (each NUL-ended) */
        uint8_t type;      /* MOTE_MCP_F_* */
        uint8_t nchoices;  /* an enum's values (0: any) */
        bool required;
    } f[MOTE_MCP_ASK_FIELDS];
    uint16_t names_len;
    char names[MOTE_MCP_ASK_MAX / 2];
    /* The question as the frontend gets it (JSON): {"server", "message",
     * "fields": [{"name", "type" (string, number, integer, boolean),
     * "title", "description", "required", "enum": [values], "enumTitles":
     * [titles], "default", "minimum", "maximum", "format"}]}: the server's
     * text (untrusted: shown neutralised), re-encoded. */
    size_t form_len;
    char form[MOTE_MCP_ASK_MAX];
};

/* Told of a question (`closed` false), or that it ended without the
 * frontend's answer (`closed` true: its deadline, its server gone). */
typedef void (*mote_mcp_ask_fn)(void *arg, const struct mote_mcp_ask *q, bool closed);

struct mote_mcp_asks {
    struct mote_mcp_ask q;
    mote_mcp_ask_fn fn;
    void *arg;
    uint32_t timeout_ms;
    uint32_t next_id;
    /* Set after mote_mcp_elicit_on, before the servers start: the
     * capability is not declared (nobody is asked: a frontend that answers
     * by a policy alone), a question a server asks anyway still goes to fn. */
    bool undeclared;
};

/* Takes the servers' questions (before mote_mcp_start_all: the capability
 * is declared in initialize); `a` must outlive `m`. */
void mote_mcp_elicit_on(struct mote_mcp *m, struct mote_mcp_asks *a, mote_mcp_ask_fn fn,
                        void *arg, uint32_t timeout_ms);

/* Answers question `id`: MOTE_MCP_ACCEPT with `content` (a JSON object of
 * the form's fields: each a known one of its type, an enum's value one of
 * its values, every required one there; re-encoded, never sent raw), or
 * MOTE_MCP_DECLINE / MOTE_MCP_CANCEL (content NULL). Returns 0, or
 * MOTE_ERR_NOENT (no such question open: answered or expired),
 * MOTE_ERR_INVAL (content does not fit the form: the question stays
 * open; `err` (cap bytes, may be NULL) says why), MOTE_ERR_FULL (the
 * server's queue is full: nothing sent, the question stays open), or
 * another failure to send it (its server gone: the question is over). */
int mote_mcp_elicit_answer(struct mote_mcp *m, uint32_t id, enum mote_mcp_action action,
                           const char *content, size_t len, char *err, size_t cap);

/* ---- a question asked field by field ----
 * For a frontend that reads one line per field (a terminal, a chat over
 * HTTP or MQTT): the question's and each field's text and prompt (the
 * server's words neutralised, mote_show_line), a typed line checked
 * against its field (a choice by its number or its value, y/n, a JSON
 * number - an integer without a fraction -, within the field's minimum
 * and maximum where the bound and the number are integers; Enter: the
 * field's default (the form comes filled with them, SEP-1034), else
 * nothing for an optional field; /decline and /cancel) and the
 * answer's content built for mote_mcp_elicit_answer (which checks it
 * again). The caller owns the struct (the form parsed, the answer). */

enum mote_mcp_form_step {
    MOTE_MCP_FORM_DONE,    /* every field answered: content[] is the answer */
    MOTE_MCP_FORM_NEXT,    /* taken: the next field is asked */
    MOTE_MCP_FORM_AGAIN,   /* refused: the same field again (*hint says why) */
    MOTE_MCP_FORM_DECLINE, /* the user typed /decline */
    MOTE_MCP_FORM_CANCEL   /* the user typed /cancel */
};

struct mote_mcp_form {
    uint32_t id;           /* the question's (for mote_mcp_elicit_answer) */
    int fields;            /* the form's "fields" token */
    int field;             /* the field being asked (index) */
    bool closing;          /* the answer's closing brace is written */
    struct mote_jw w;      /* the answer as it grows */
    size_t len;            /* content's bytes */
    char content[MOTE_MCP_ASK_MAX];
    char hint[MOTE_MCP_FORM_HINT_MAX];
    struct mote_json js;   /* the form */
};

/* Starts the walk of question q's form. Returns its number of fields (0:
 * it asks for a yes only: mote_mcp_form_reply with any line is DONE), or
 * MOTE_ERR_INVAL (not a form: decline it). */
int mote_mcp_form_begin(struct mote_mcp_form *f, const struct mote_mcp_ask *q);
/* Back to the first field, the answer emptied (when the server's form
 * refused the answer). */
void mote_mcp_form_restart(struct mote_mcp_form *f);
/* "mcp SERVER asks: MESSAGE" into out (cap bytes, NUL-ended); its length. */
size_t mote_mcp_form_title(const struct mote_mcp_form *f, char *out, size_t cap);
/* The field being asked: its text ("  NAME (TITLE: DESCRIPTION)", its
 * choices numbered on a second line, a newline at the end) into text,
 * and the prompt for its line ("  integer, required, default 3; /decline,
 * /cancel > ", "  integer, Enter: default 3; ...") into prompt; each NUL-ended within its cap. Returns the
 * prompt's length. */
size_t mote_mcp_form_field(const struct mote_mcp_form *f, char *text, size_t tcap, char *prompt,
                           size_t pcap);
/* The line typed for the field being asked (without its newline). */
enum mote_mcp_form_step mote_mcp_form_reply(struct mote_mcp_form *f, const char *line,
                                            const char **hint);
/* Question q answered by a policy alone, with nobody asked (`mote -p
 * --yes`, `mote serve --approval allow` with nobody connected): its form
 * filled with the server's own defaults (SEP-1034), the only values
 * nobody has to type. Returns 0: every field has a default that fits it
 * (its type, an enum's choices), f->content (f->len bytes) is the answer
 * to accept; or MOTE_ERR_INVAL: decline it, `why` (cap bytes, NUL-ended,
 * may be NULL) says why: `field "NAME" has no default` (the first such
 * field, required or not, its name neutralised), `field "NAME"'s default
 * does not fit its type or choices`, "a form mote cannot read", "its
 * defaults are over MOTE_MCP_ASK_MAX bytes". */
int mote_mcp_form_defaults(struct mote_mcp_form *f, const struct mote_mcp_ask *q, char *why,
                           size_t cap);

/* ---- configuration files ----
 * The format Claude Code's .mcp.json has: {"mcpServers": {"NAME":
 * {"command": "...", "args": [...], "env": {...}}}} for a process;
 * {"type": "http" (Streamable HTTP; "streamable-http" too) or "sse"
 * (HTTP+SSE), "url": "...", "headers": {"Name": "value"}} for a server
 * over HTTP (a "url" without a "type" is Streamable HTTP). Parsed from a
 * buffer (the frontend reads the file). A process's environment is
 * `base_env` (the frontend's minimal one: PATH, HOME, LANG) plus what its
 * "env" names: never the API keys unless it names them.
 *
 * ${VAR} and ${VAR:-default} in "command", "args", "env" values, "url"
 * and "headers" values are replaced by what cf->env returns for VAR (set
 * it before parsing; NULL: nothing is expanded). A variable it does not
 * know (NULL) without a default refuses the file, naming the variable.
 * "startup_timeout_sec" and "tool_timeout_sec" (numbers of seconds above
 * 0, at most MOTE_MCP_DEADLINE_MAX_MS) set the server's start_ms and
 * call_ms. */

/* Looks variable `name` up for the expansion: its value (kept by the
 * caller until parsing returns), or NULL when it is not set. `secret`:
 * the value goes into a header, a "url" or a process's "env" value, where
 * credentials go (the caller may take it out of the environment, as
 * mote's frontends do, so no tool sees it); "command" and "args" are not
 * secrets (a command line is visible to every process anyway). */
typedef const char *(*mote_mcp_env_fn)(void *arg, const char *name, bool secret);

struct mote_mcp_conf {
    /* set by the caller before mote_mcp_conf_parse (zero: none) */
    mote_mcp_env_fn env;
    void *env_arg;
    /* internal */
    size_t used;
    char arena[MOTE_MCP_CONF_ARENA];  /* the strings argv, envp, URLs and headers point to */
    const char *argv[MOTE_MAX_MCP_SERVERS][MOTE_MCP_CONF_ARGS + 2];
    const char *envp[MOTE_MAX_MCP_SERVERS][MOTE_MCP_CONF_ENV + MOTE_MCP_CONF_ENV + 1];
    const char *headers[MOTE_MAX_MCP_SERVERS][MOTE_MCP_CONF_HEADERS + 1];
    struct mote_json json;
};

/* Adds the servers of configuration `text` (len bytes) to `m` (with
 * mote_mcp_add and mote_mcp_add_http); `cf` must outlive `m`. `base_env`
 * (NULL-terminated "NAME=VALUE" strings, at most MOTE_MCP_CONF_ENV; may be
 * NULL) starts every process's environment. Returns 0, or < 0 with one
 * line of explanation in `err` (cap bytes; never a header's value or a
 * URL): MOTE_ERR_BADMSG (not the format, or a header's value with a
 * control character), MOTE_ERR_TOO_LARGE (over MOTE_JSON_MAX_TOKENS values
 * or the arena), MOTE_ERR_FULL (more than MOTE_MAX_MCP_SERVERS, or
 * MOTE_MCP_CONF_HEADERS), MOTE_ERR_EXIST (two servers of one name),
 * MOTE_ERR_INVAL (a bad server name or URL), MOTE_ERR_NOENT (a variable
 * that is not set and has no default). Never blocks. */
int mote_mcp_conf_parse(struct mote_mcp_conf *cf, struct mote_mcp *m, const char *text,
                        size_t len, const char *const *base_env, char *err, size_t cap);

/* ---- what is left after a crash ----
 * The port's supervisor ends a server's processes when the server exits
 * or mote goes away; when mote, the supervisors and the servers are all
 * killed at once, a process the server started in a session of its own
 * (`setsid`) would be left running. So each running stdio server's
 * process tag is recorded in the state: "mcp/TAG.run" (one JSON line: "server",
 * "tag", "pgid", "start"), written and synced before the server is
 * talked to, held locked while it runs (st_lock) and removed when it
 * ends; on the next start, what a record names whose mote no longer
 * holds it is ended through proc_kill_recorded (the group only while its
 * leader has the recorded start time; any process of this user carrying
 * the tag) and the record removed. Storage names below the port's root. */

/* Told, by a sweep, that `ended` processes left by server `server` ("" if
 * the record did not say) were ended. */
typedef void (*mote_mcp_left_fn)(void *arg, const char *server, unsigned ended);

/* Records server `server`'s process `pid` (a proc_spawn handle): its
 * record's name goes into `name` (`cap` bytes, MOTE_MCP_LEFT_NAME_MAX),
 * and the returned handle holds the record's lock until
 * mote_mcp_left_clear. Returns the handle (>= 0), MOTE_ERR_NOSYS (the
 * port has no tags or no leftover-kill path: nothing to record), or a
 * storage failure (nothing is left on disk). Blocks for one synced
 * write. */
int mote_mcp_left_record(const struct mote_port *p, const char *server, int64_t pid, char *name,
                         size_t cap) MOTE_MUST_CHECK;

/* The server of a record ended (its processes are gone): the record is
 * removed, then its handle closed. Nothing when `h` < 0. */
void mote_mcp_left_clear(const struct mote_port *p, int h, const char *name);

/* Ends what the records of earlier motes name (records that a running
 * mote holds are left alone) and removes those records; `scratch` holds
 * a record's JSON tokens while it is read; `said` (may be NULL) hears
 * each server whose processes were ended. Returns how many processes
 * were ended, or < 0 when the records could not be listed (or a kill
 * failed and none was ended). Blocks while it reads the records and the
 * port looks for the tags (on POSIX, /proc). */
int mote_mcp_left_sweep(const struct mote_port *p, struct mote_json *scratch,
                        mote_mcp_left_fn said, void *arg);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_MCP_H */
