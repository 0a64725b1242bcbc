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
 *   POST   /mcp, GET /mcp, DELETE /mcp         MCP (Streamable HTTP): the device's
 *                                              tools and its agent (`ask`)
 *   POST   /v1/chat/completions               OpenAI-compatible: a prompt to a
 *   GET    /v1/models                         conversation, its answer
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
#include "mote/mote_mqtt.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mote_serve_mqtt;

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
    /* The Unix socket opened to this group too (a name or a number the
     * port knows: mode 0660, and the group's members are served besides
     * this user), e.g. for a local web UI running as another user; NULL:
     * this user only (0600). Needs the port's net_listen_group. */
    const char *socket_group;
    /* The same session on an MQTT broker (docs/MQTT.md): with `mqtt_url`
     * (mqtt://HOST[:PORT] or mqtts://HOST[:PORT]; NULL: none), `mqtt` is
     * the front door's memory (caller-owned, a static: see below) and
     * the topics are PREFIX/status, PREFIX/in, PREFIX/out/ID and
     * PREFIX/error. Every string must outlive the server. */
    const char *mqtt_url;
    struct mote_serve_mqtt *mqtt;
    const char *mqtt_id;               /* the client id (required with mqtt_url) */
    const char *mqtt_prefix;           /* NULL: "mote/" and the client id */
    const char *mqtt_username;         /* NULL: none */
    const char *mqtt_password;         /* NULL: none (needs a user name) */
    const char *mqtt_ca_file;          /* mqtts: NULL: the port's default roots */
    uint16_t mqtt_keep_alive_s;        /* 0: MOTE_MQTT_KEEPALIVE_S */
    uint32_t mqtt_backoff_max_ms;      /* 0: MOTE_MQTT_BACKOFF_MAX_MS */
    /* Schedules (docs/SERVE.md, "Schedules"; mote_sched.h): with `sched`
     * (the runner's memory, caller-owned, a static; NULL: no schedules)
     * the server runs them, keeps their definitions in STATE/schedules.json
     * and their occurrences in STATE/schedules.jsonl, serves
     * /v1/schedules[/ID] and offers the agent a "schedule" tool. */
    struct mote_serve_sched *sched;
    const char *sched_fixed;           /* a configuration file's schedules (its text, as
                                        * {"schedules": [...]}): fixed, NULL: none */
    size_t sched_fixed_len;
    const char *sched_tz;              /* the zone of a schedule that names none (NULL:
                                        * UTC) */
    bool sched_tool;                   /* offer the agent the "schedule" tool */
    /* The MCP server (/mcp on the listeners, always): offer the tools of
     * the session's MCP servers too (conversations' conf.mcp), besides
     * the registry's and `ask`. */
    bool mcp_pass_tools;
    /* MCP over a pipe pair as well (`mote mcp`: a client that spawned
     * this process), with this memory (caller-owned, a static); NULL:
     * none. With it neither a socket nor a TCP address is needed. */
    struct mote_serve_mcp_stdio *mcp_stdio;
    /* Bytes of a tools/list page (0: MOTE_SERVE_MCP_PAGE; at most that). */
    uint32_t mcp_page_bytes;
    /* The page served at GET / (and HEAD /) on every listener, without
     * the token (every API call it makes needs the token on TCP like any
     * other), with strict headers; NULL: none (404). Must outlive the
     * server. */
    const struct mote_serve_page *page;
    /* The metrics (GET /v1/metrics) also as the retained PREFIX/stats on
     * the broker every this many ms (0: never). */
    uint32_t stats_ms;
    /* mqtts: a client certificate (PEM chain) and its key (PEM) for a
     * broker that asks for one (mutual TLS); NULL, NULL: none. */
    const char *mqtt_cert_file;
    const char *mqtt_key_file;
    /* Answers to approvals over MQTT refused (anyone who may publish to
     * PREFIX/in could approve a call: docs/MQTT.md). */
    bool mqtt_approve_off;
    /* Home Assistant's MQTT discovery under this prefix ("homeassistant"):
     * the device's agent announced as entities (retained), and PREFIX/last
     * kept; NULL or "off": none, and what an earlier run announced
     * (STATE/mqtt-discovery) is cleared. */
    const char *mqtt_discovery;
};

/* A page for browsers (conf.page): its bytes as sent, never copied. */
struct mote_serve_page {
    const unsigned char *body;
    size_t len;
    bool gzip;       /* `body` is gzip-compressed: sent with Content-Encoding: gzip to
                      * clients that take it, 406 to others */
    const char *csp; /* its Content-Security-Policy (the page's script and style by
                      * hash); NULL: "default-src 'none'" */
};

/* The schedules' runner's memory, bytes: an upper bound from the
 * configuration (the library's build checks that its state fits):
 * MOTE_SCHED_MAX schedules with their prompts, MOTE_SCHED_ZONES zones, a
 * zoneinfo file, a JSON document, a journal line. */
#define MOTE_SERVE_SCHED_AREA_SIZE                                                                 \
    (MOTE_SCHED_MAX * (MOTE_SCHED_PROMPT_MAX + MOTE_SCHED_RULE_MAX + 4 * MOTE_CONV_ID_MAX +        \
                       MOTE_SCHED_ID_MAX + MOTE_TZ_NAME_MAX + 96 + 48 * sizeof(uint64_t)) +        \
     MOTE_SCHED_ZONES * (MOTE_TZ_NAME_MAX + MOTE_TZ_TRANSITIONS * 9 + MOTE_TZ_TYPES * 4 + 64) +     \
     sizeof(struct mote_json) + 1024 + MOTE_TZ_FILE_MAX + MOTE_TZ_NAME_MAX + 40 * sizeof(uint64_t))

/* The schedules' runner (conf.sched): owned by the caller, a static
 * (about 80 KB with the defaults, mostly prompts and a JSON document;
 * untouched pages cost no resident memory). */
struct mote_serve_sched {
    union {
        max_align_t align;
        unsigned char bytes[MOTE_SERVE_SCHED_AREA_SIZE];
    } area;
};

/* MCP over a pipe pair (conf.mcp_stdio): newline-delimited JSON-RPC on
 * in_fd, the answers on out_fd (both non-blocking, read and written
 * through the port's pipe_read and pipe_write). When in_fd ends (the
 * client is done) the server shuts down, cancelling what runs, within
 * shutdown_ms (0: 5000). A line longer than MOTE_SERVE_BODY_MAX is
 * answered with an error and skipped. */
struct mote_serve_mcp_stdio {
    int in_fd, out_fd;
    uint32_t shutdown_ms;
    char in[MOTE_SERVE_BODY_MAX + 1];
    char out[MOTE_SERVE_BODY_MAX + 512];
};

/* The memory of the MCP server and the OpenAI endpoint in struct
 * mote_serve, bytes (an upper bound; the library's build checks it):
 * the calls and turns followed (MOTE_SERVE_FOLLOWS, each with
 * MOTE_SERVE_FOLLOW_TEXT), the sessions, a word per connection. */
#define MOTE_SERVE_MCP_SIZE                                                                        \
    (MOTE_SERVE_FOLLOWS * (MOTE_SERVE_FOLLOW_TEXT + 2 * MOTE_SERVE_MCP_ID_MAX + MOTE_CONV_ID_MAX + \
                           2 * MOTE_LLM_ID_MAX + MOTE_LLM_NAME_MAX + 40 * sizeof(uint64_t)) +       \
     (MOTE_SERVE_MCP_SESSIONS + 1) * (MOTE_CONV_ID_MAX + 96) + MOTE_SERVE_MAX_CONNS * 8 +          \
     sizeof(struct mote_conv_conf) + 24 * sizeof(uint64_t))

/* The MQTT front door's memory, bytes: an upper bound from the
 * configuration (the library's build checks that its state fits): the
 * client's settings, MOTE_SERVE_MQTT_OUTS conversations on their way
 * out, MOTE_SERVE_MQTT_WAIT messages waiting with their texts, one
 * payload being built, the topics, a reply. */
#define MOTE_SERVE_MQTT_AREA_SIZE                                                                  \
    (sizeof(struct mote_mqtt_conf) +                                                               \
     MOTE_SERVE_MQTT_OUTS * (MOTE_CONV_ID_MAX + 12 * sizeof(uint64_t)) +                           \
     MOTE_SERVE_MQTT_WAIT * (MOTE_JOURNAL_RID_MAX + MOTE_CONV_ID_MAX + 5 * sizeof(uint64_t)) +     \
     MOTE_SERVE_MQTT_WAIT_BYTES + MOTE_MQTT_PAYLOAD_MAX + 7 * (MOTE_MQTT_TOPIC_MAX + 1) + 512 +    \
     32 * sizeof(void *) + MOTE_SERVE_MQTT_REPLY_SIZE)

/* A reply being built (list, read: PREFIX/reply/ID), bytes: its payload,
 * its request's ids, where it reads, and Home Assistant's topics. */
#define MOTE_SERVE_MQTT_REPLY_SIZE                                                                 \
    (MOTE_MQTT_PAYLOAD_MAX + 1 + MOTE_JOURNAL_RID_MAX + 3 * MOTE_CONV_ID_MAX +                     \
     24 * sizeof(uint64_t) + 2 * (MOTE_MQTT_TOPIC_MAX + 1))

/* The MQTT front door (conf.mqtt): owned by the caller, a static (about
 * 113 KB with the defaults, mostly the client's buffers; untouched
 * buffers cost no resident memory). `client` is the library's MQTT
 * client (mote_mqtt.h), to read only; `errmsg` says why mote_serve_init
 * refused the MQTT settings. */
struct mote_serve_mqtt {
    struct mote_mqtt client;
    char errmsg[MOTE_JOB_ERRMSG_LEN];
    union {
        max_align_t align;
        unsigned char bytes[MOTE_SERVE_MQTT_AREA_SIZE];
    } area;
};

enum mote_serve_phase {
    MOTE_SERVE_RUN = 0,  /* serving */
    MOTE_SERVE_DRAIN,    /* the session shuts down: no new turn (503); reads go on */
    MOTE_SERVE_FINAL,    /* the session is down: clients get the final event */
    MOTE_SERVE_DONE,     /* every connection and listener is closed */
};

/* The memory the library keeps in struct mote_serve, bytes: an upper
 * bound from the configuration (mote_config.h), so that the caller can
 * own the struct; the library's build checks that its state fits. Per
 * connection (MOTE_SERVE_CONN_SIZE): its state, a request head, the
 * receive and send buffers. Besides: the body pool, the buffers one call
 * works in (a message, a response, a live event, a pending call's input,
 * a JSON document), the journal being read, the conversation being
 * loaded, and the summaries of those
 * read (MOTE_SERVE_SUMMARIES), the retention's and the recovery's queues,
 * and small state. */
#define MOTE_SERVE_CONN_SIZE                                                                       \
    (sizeof(struct mote_hreq) + MOTE_SERVE_IN_BUF + MOTE_SERVE_OUT_BUF + MOTE_CONV_ID_MAX +        \
     14 * sizeof(uint64_t) + 6 * sizeof(void *))
#define MOTE_SERVE_AREA_SIZE                                                                       \
    (MOTE_SERVE_MAX_CONNS * MOTE_SERVE_CONN_SIZE +                                                 \
     MOTE_SERVE_BODY_BUFS * (MOTE_SERVE_BODY_MAX + 1) + MOTE_SERVE_BODY_MAX +                      \
     2 * MOTE_SERVE_OUT_BUF + 1280 + sizeof(struct mote_jscan) + sizeof(struct mote_json) +        \
     sizeof(struct mote_conv_load) + MOTE_CONV_ID_MAX +                                            \
     MOTE_SERVE_RECOVER_MAX * MOTE_CONV_ID_MAX + MOTE_SERVE_SUMMARIES * MOTE_SERVE_SUM_SIZE +       \
     (MOTE_PRUNE_BATCH + 2) * (MOTE_CONV_ID_MAX + 3 * sizeof(uint64_t)) +                          \
     MOTE_MAX_CONVERSATIONS * sizeof(uint32_t) + sizeof(struct mote_serve_conf) +                  \
     MOTE_SERVE_MCP_SIZE + MOTE_SERVE_METRICS_SIZE + 40 * sizeof(uint64_t) + 10 * sizeof(void *))

/* What the server counts (its metrics), bytes: counters, the errors by
 * code, and each loaded conversation's tokens seen. */
#define MOTE_SERVE_METRICS_SIZE                                                                    \
    (80 * sizeof(uint64_t) + MOTE_MAX_CONVERSATIONS * (MOTE_CONV_ID_MAX + 4 * sizeof(uint64_t)))

/* What the server keeps of a journal it does not hold (its summary), bytes. */
#define MOTE_SERVE_SUM_SIZE                                                                        \
    (MOTE_CONV_ID_MAX + MOTE_JSCAN_FIRST + sizeof(((struct mote_recovery *)0)->last_error) +       \
     12 * sizeof(uint64_t))

/* The server: owned by the caller (a static: it is large, mostly
 * buffers, MOTE_SERVE_AREA_SIZE), used through the functions below. The
 * named fields are what the library reports for the caller to read;
 * `area` is the library's own state (its layout is not part of the API). */
struct mote_serve {
    uint8_t phase;        /* enum mote_serve_phase */
    uint8_t sig;          /* the first signal given to mote_serve_signal, + 1 (0: none yet) */
    uint16_t tcp_port;    /* after mote_serve_listen: the TCP port bound */
    int lfd[2];           /* after mote_serve_listen: the listeners' descriptors, the Unix
                           * socket's and the TCP one (-1: not listening, so after a
                           * failure lfd[0] < 0 says the Unix socket failed); -1 once
                           * done */
    const char *missing;  /* after MOTE_ERR_NOSYS: the port member that lacks */
    bool group_failed;    /* after mote_serve_listen failed: it was the socket's group */
    union {
        max_align_t align;
        unsigned char bytes[MOTE_SERVE_AREA_SIZE];
    } area;
};

/* Prepares `sv` on `loop` (the session's). Nothing listens yet. Returns
 * 0, MOTE_ERR_INVAL (no session or conv conf, `listen` without a token
 * or with one shorter than MOTE_SERVE_TOKEN_MIN, or neither a socket nor
 * a TCP address), MOTE_ERR_CONFIG (the MQTT settings: a bad URL, client
 * id or prefix, no conf.mqtt; conf.mqtt->errmsg says which), or
 * MOTE_ERR_NOSYS (the port cannot serve: sv->missing names the member). */
int mote_serve_init(struct mote_serve *sv, struct mote_loop *loop,
                    const struct mote_serve_conf *conf) MOTE_MUST_CHECK;

/* Opens the listeners (and, with conf.mqtt_url, starts the MQTT client's
 * job: it connects, and reconnects, by itself). Returns 0, or the
 * failure of the one that failed
 * (sv->missing names a port member for MOTE_ERR_NOSYS; MOTE_ERR_INVAL: a
 * `listen` address that is not loopback; MOTE_ERR_ADDRINUSE: another
 * server has the socket; MOTE_ERR_EXIST: the socket path is not ours;
 * MOTE_ERR_NOENT or MOTE_ERR_PERM: the socket_group is unknown, or this
 * user may not give it the socket - then sv->group_failed is true).
 * sv->tcp_port has the TCP port bound. */
int mote_serve_listen(struct mote_serve *sv) MOTE_MUST_CHECK;

/* Opens every conversation on disk that needs recovery (as many as there
 * are slots; the rest as slots free up): each continues by itself or
 * closes its interrupted tools, and its records and events reach its
 * clients. Returns how many were found, or a storage failure. */
int mote_serve_recover(struct mote_serve *sv);

/* New settings for the conversations (a reload): `conv` becomes conf.conv
 * (it must outlive the server, or the next reload), for conversations
 * created or loaded from now on and for each loaded one's next turn; a
 * turn that runs keeps the settings it began with until it ends. The
 * broker's status is published again (its model). Returns how many
 * loaded conversations have a turn running on the old settings (they
 * take the new ones with their next turn). Never blocks. */
unsigned mote_serve_reconf(struct mote_serve *sv, const struct mote_conv_conf *conv);

/* The session's events: call it from the session's event callback with
 * every event. */
void mote_serve_event(struct mote_serve *sv, const struct mote_event *ev);

/* Starts the shutdown: new turns are refused (503; MQTT messages are
 * left with the broker), the session shuts down with `req` (a later call
 * forwards a force or a cancel), then every event stream gets a final
 * event, the listeners close and the socket file is removed; the broker
 * gets the conversations' last events and the "offline" status, then
 * DISCONNECT (within MOTE_SERVE_MQTT_STOP_MS; a force closes the
 * connection at once: the broker publishes the will). Drive the loop
 * until mote_serve_done(). Returns what mote_shutdown_begin returns. */
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

/* True once everything is closed after the shutdown (the MQTT client's
 * job included). */
bool mote_serve_done(const struct mote_serve *sv);

/* Closes every connection and listener at once (after mote_serve_done,
 * or to give up). */
void mote_serve_deinit(struct mote_serve *sv);

/* One server per storage (a state directory): takes the exclusive lock of
 * storage file "serve.lock" (created if missing), held while the handle
 * stays open; a process's end, kill -9 included, lets it go. Call it
 * before anything of the session reads or writes the storage. Never
 * blocks. Returns the handle (>= 0: close it with the port's st_close
 * once the server is done, or leave that to the process's end),
 * MOTE_ERR_LOCKED (another process serves there: *holder its process id
 * where the port can tell, else 0), or a storage failure. A port without
 * st_lock locks nothing (a handle all the same). */
int mote_serve_claim(const struct mote_port *port, int64_t *holder) MOTE_MUST_CHECK;

/* The tools offered changed (a new configuration, tools registered or
 * taken away): MCP sessions are told (notifications/tools/list_changed).
 * The MCP servers' own changes are seen by the server itself. */
void mote_serve_tools_changed(struct mote_serve *sv);

/* The bearer token kept in storage file `name` (one line of 64 hex
 * digits): read, or made from the port's bytes for secrets
 * (random_secret: never a weaker fallback) and written atomically (mode
 * 0600 where it applies) when there is none. Never blocks. Returns 0
 * (*created tells which), or a storage failure; MOTE_ERR_CORRUPT if the
 * file holds something else; MOTE_ERR_AGAIN when the port's generator is
 * not seeded yet (early boot: nothing written; call again once
 * random_secret's wait descriptor is readable, or a little later);
 * MOTE_ERR_NOSYS when the port has no random_secret. `out` needs 65
 * bytes. */
int mote_serve_token(const struct mote_port *port, const char *name, char out[65], bool *created);

/* ---- an MCP server's question (elicitation) under the server ----
 * A question an MCP server asks during a conversation's tool call goes
 * to whoever approves that conversation's calls (docs/SERVE.md,
 * "Questions of MCP servers"): the `elicitation` event on its event
 * streams and MQTT (PREFIX/out/ID), answered by POST
 * /v1/conversations/ID/elicitation or MQTT's "elicit", within the
 * conversation's approval deadline. Nobody following the conversation
 * (no event stream, MQTT offline or its approvals off), the deadline
 * passed, or a form larger than an event: declined, except that a
 * conversation whose approval policy is MOTE_APPROVE_ALLOW answers with
 * the form's own defaults when every field has one
 * (mote_mcp_form_defaults), as `mote -p --yes` does. One per struct
 * mote_mcp (caller-owned, a static; it must outlive the server and `m`). */
struct mote_serve_asks {
    struct mote_mcp_asks a;      /* the library's question (mote_mcp.h) */
    struct mote_mcp_form form;   /* its form, parsed */
    struct mote_serve *srv;
    struct mote_mcp *m;
    struct mote_serve_asks *next; /* the server's list */
    uint32_t ask;                /* the open question (0: none) */
    uint32_t timeout_ms;         /* its deadline (the conversation's approval_timeout_ms) */
    uint32_t t0;                 /* when it was asked (loop clock) */
    mote_timer_id timer;
    char conv[MOTE_CONV_ID_MAX]; /* the conversation asked */
};

/* Sends the questions of MCP servers `m` to the server's front doors;
 * before mote_mcp_start_all (the capability is declared in initialize). */
void mote_serve_elicit_on(struct mote_serve *sv, struct mote_serve_asks *sa, struct mote_mcp *m);

/* `m` is going away (a reload replaced it): its open question is
 * answered cancel and forgotten, and `sa` leaves the server's list. */
void mote_serve_elicit_off(struct mote_serve *sv, struct mote_serve_asks *sa);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_SERVE_H */
