/*
 * mote_client.h - one streamed model request as a job.
 *
 * struct mote_llm_call is a task (caller-owned, about 110 KiB with the
 * default configuration) that the loop steps through: resolve, connect,
 * TLS handshake, send, response headers, stream. Nothing blocks; a cancel
 * is seen on the next step at every phase and closes the connection.
 *
 * Retries: HTTP 429, 500, 502, 503, 504, 529, an overloaded or rate-limit
 * error event before any content, and a connection reset or close before
 * the first response byte are retried with exponential backoff and jitter,
 * honouring Retry-After (capped), at most conf.max_attempts times in all.
 * Once any text or tool call reached the caller nothing is retried: the
 * call fails with a clear message. 400, 401 and 403 are never retried; a
 * 401 names the environment variable that holds the key.
 *
 * Timeouts: connect (resolve + connect + handshake), first byte (after
 * the request was sent), idle (between bytes of the stream), the gap
 * between complete events, and the whole request (conf.request_timeout_ms:
 * every attempt and backoff and the stream to its end, so a server that
 * keeps a stream alive with pings and never answers is cut off; never
 * retried).
 *
 * Kept connections: a caller that sends requests one after another (an
 * agent's stream slot) keeps a struct mote_conn and hands it to each call
 * (call->conn). The call sends its request on the connection the struct
 * holds - socket, TLS session, a proxy's CONNECT tunnel - when it is
 * idle, to the same origin (scheme, host, port, proxy, CA file) and
 * still good, else opens a new one there. A response read to its exact
 * end (its Content-Length, the chunked body's last chunk) that the
 * server lets stay open leaves the connection idle in the struct, watched
 * by the loop: the server's close is seen at once, and it is closed after
 * conf.keep_idle_ms or by mote_conn_close. A response that ends with the
 * connection, an error or a cancel in the middle of one, a timeout, or
 * "connection: close" from the server close it. A call without one has a
 * connection of its own for its attempts and asks the server to close
 * it ("connection: close").
 *
 * The race every client meets: a server may close a kept connection as a
 * request goes out. A request on a kept connection that meets its close
 * or reset before any byte of the response (while its body is being
 * sent, too) is sent again at once on a new connection, once, and that
 * does not count as an attempt. Once a response byte arrived, nothing is
 * sent again but by the retry rules above.
 *
 * TLS sessions are resumed where the port can (mote_port.tls_connect),
 * as conf.tls_resume says: in memory for the process's later connections
 * (the default), or in the port's storage too, for the next process
 * (MOTE_TLS_RESUME_DISK; docs/LLM.md says what the file holds).
 */
#ifndef MOTE_CLIENT_H
#define MOTE_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_dial.h"
#include "mote/mote_http.h"
#include "mote/mote_llm.h"
#include "mote/mote_loop.h"
#include "mote/mote_sse.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mote_llm_conf {
    enum mote_provider provider;
    const struct mote_llm_profile *profile; /* the provider's (mote_llm_profile_find); NULL:
                                             * picked from base_url (mote_llm_profile_pick) */
    const char *base_url;     /* http:// or https:// */
    const char *api_key;      /* may be "" for local servers */
    const char *key_env;      /* name of the variable it came from, for messages */
    const char *ca_file;      /* NULL: the port's default */
    uint32_t connect_timeout_ms;
    uint32_t first_byte_timeout_ms;
    uint32_t idle_timeout_ms;
    uint32_t request_timeout_ms; /* the whole request, retries included (0: none;
                                  * at most 2^31 - 1) */
    uint32_t event_timeout_ms; /* the longest gap between two complete events of the
                                * stream (a byte now and then does not extend it) */
    uint32_t max_attempts;    /* 1 = no retry */
    uint32_t backoff_ms;      /* first retry delay, doubled each time */
    uint32_t backoff_max_ms;  /* cap of the delay and of Retry-After */
    /* An HTTP proxy (mote_proxy_parse; NULL or "": none): https:// is
     * tunnelled through it with CONNECT, http:// sent to it. The caller
     * picks it (the CLI: HTTPS_PROXY, HTTP_PROXY); hosts that
     * mote_proxy_bypass() names with `no_proxy` go direct. */
    const char *proxy;
    const char *no_proxy;
    /* A kept connection idle this long is closed, ms (0: one connection
     * per request). */
    uint32_t keep_idle_ms;
    /* TLS session resumption: MOTE_TLS_RESUME_OFF, _MEMORY (the
     * process's later connections; the default) or _DISK (and the next
     * process's, through the port's storage: the file tls/HASH, mode
     * 0600, one per server; docs/LLM.md says what it holds), and the
     * oldest session offered, seconds since its full handshake (at most
     * MOTE_TLS_SESSION_MAX_S). */
    uint8_t tls_resume;
    uint32_t tls_session_max_s;
};

/* A connection kept between requests: caller-owned, about 50 bytes. All
 * zero (or mote_conn_init) is a closed one. Single-threaded, like the
 * loop. It holds a descriptor and, idle, a watch and a timer of the loop
 * it was last used with: close it (mote_conn_close) before it or that
 * loop goes away. */
#define MOTE_CONN_CLOSED 0
#define MOTE_CONN_BUSY 1 /* a call uses it */
#define MOTE_CONN_IDLE 2

struct mote_conn {
    /* read-only for the caller */
    uint32_t opened;      /* connections it opened, in all */
    uint32_t requests;    /* requests sent on the open connection */
    bool resumed;         /* the open connection's TLS session was resumed */
    uint8_t state;        /* MOTE_CONN_* */
    /* internal */
    bool drop;            /* close it when its call ends */
    int fd, tls;
    uint64_t origin;
    struct mote_loop *loop;
    mote_watch_id watch;
    mote_timer_id timer;
};

/* A closed connection. Never fails, never blocks. */
void mote_conn_init(struct mote_conn *k);

/* Closes it now if it is idle (or open and unused); a call that uses it
 * closes it when it ends instead of keeping it. Idempotent; never blocks.
 * For shutdown, and before the struct or its loop goes away. */
void mote_conn_close(struct mote_conn *k);

/* Fills the defaults (MOTE_LLM_* in mote_config.h). */
void mote_llm_conf_defaults(struct mote_llm_conf *c);

/* The profile requests with `c` follow: c->profile, else the one its
 * provider and base URL pick. Never NULL. */
const struct mote_llm_profile *mote_llm_conf_profile(const struct mote_llm_conf *c);

/* Phases, for messages and latency measurements. */
enum mote_llm_phase {
    MOTE_PHASE_IDLE = 0,
    MOTE_PHASE_RESOLVE,
    MOTE_PHASE_CONNECT,
    MOTE_PHASE_TUNNEL, /* CONNECT through a proxy */
    MOTE_PHASE_HANDSHAKE,
    MOTE_PHASE_SEND,
    MOTE_PHASE_HEADERS,
    MOTE_PHASE_STREAM,
    MOTE_PHASE_BACKOFF,
    MOTE_PHASE_DONE,
};

const char *mote_llm_phase_name(enum mote_llm_phase p);

struct mote_llm_call {
    /* set by mote_llm_call_init */
    const struct mote_llm_conf *conf;
    const struct mote_llm_req *req;
    mote_llm_fn on_event;
    void *on_event_arg;
    /* Optional, set after init: told (with on_event_arg) when an attempt
     * begins (MOTE_PHASE_RESOLVE) and when its body was sent
     * (MOTE_PHASE_HEADERS), e.g. to keep what the body is made of
     * unchanged in between. */
    void (*on_phase)(void *arg, enum mote_llm_phase phase);
    /* Optional, set after init: the connection to use and keep (NULL: one
     * of the call's own, closed when it ends). While another call uses
     * it, the call uses one of its own. */
    struct mote_conn *conn;
    /* Optional, set after init: what the process's servers refused or
     * needed (NULL: learnt for this call only). A 400 or 422 that names a
     * key mote added on its own (or one it could add) is asked once
     * again with it changed, at once and not counted as an attempt
     * (mote_llm_refusal_keys), and the origin is remembered here. */
    struct mote_llm_memo *memo;
    /* progress (read-only for the caller) */
    uint8_t phase;            /* enum mote_llm_phase */
    uint32_t attempt;         /* 1-based */
    int http_status;
    int result;               /* 0 or the failure */
    bool content;             /* something reached on_event */
    bool conn_kept;           /* this attempt went on a kept connection */
    bool tls_resumed;         /* its TLS session was a resumed one */
    char errmsg[MOTE_JOB_ERRMSG_LEN];
    /* internal */
    struct mote_url url;
    struct mote_url proxy;    /* used when via_proxy */
    bool via_proxy;
    char proxy_auth[MOTE_PROXY_AUTH_MAX];
    const struct mote_port *port;
    struct mote_dial dial;    /* a new connection's: lookup, connect, tunnel, TLS */
    struct mote_conn own;     /* without a caller's connection */
    struct mote_conn *k;      /* the connection in use */
    uint64_t origin;
    bool stale;               /* a kept connection found closed before any response byte */
    bool resent;              /* the one resend after that was made */
    bool keep;                /* the response ended exactly: the connection may stay */
    bool draining;            /* the stream is complete; the response's end is awaited */
    uint32_t retry_after_s;   /* this attempt's response asked to wait so long */
    mote_watch_id watch;
    mote_timer_id timer;
    uint32_t deadline;
    uint32_t req_deadline;    /* the whole request's (request_timeout_ms) */
    bool got_byte;            /* any response byte this attempt */
    bool not_sse;             /* a 200 whose Content-Type is not an event stream */
    bool got_event;           /* an SSE event completed since the last look */
    bool event_cut;           /* the event deadline, not silence, ended it */
    uint32_t event_deadline;
    bool head_sent;
    size_t send_len, send_off;
    uint64_t body_left;      /* bytes of the body still owed to its Content-Length */
    struct mote_llm_body body;
    struct mote_llm_req rq;   /* the request as this attempt sends it (req, with what the
                               * memo and the call's refusals changed) */
    uint8_t drop, need;       /* keys this call's refusals changed */
    uint8_t tried;            /* keys changed once already */
    bool adjust;              /* a refusal named a key: ask again, changed */
    uint64_t body_len;        /* bytes of the last attempt's body */
    uint32_t ctx_limit;       /* MOTE_ERR_CONTEXT: the window the server gave (0: none) */
    uint32_t ctx_used;        /* ... and the request's tokens it counted (0: none) */
    size_t err_len;
    char err_body[1024];
    char auth[MOTE_LLM_KEY_MAX + 32];
    char buf[MOTE_NET_BUF];
    struct mote_http_resp http;
    struct mote_sse sse;
    struct mote_llm_dec dec;
};

/* Prepares `call` to send `req` with `conf` (both must outlive the job)
 * and report decoded events to `fn`; call->conn is NULL. Returns 0,
 * MOTE_ERR_CONFIG (bad URL or proxy; the reason is in call->errmsg) or
 * MOTE_ERR_TOO_LARGE (key). */
int mote_llm_call_init(struct mote_llm_call *call, const struct mote_llm_conf *conf,
                       const struct mote_llm_req *req, mote_llm_fn fn, void *arg);

/* The task ops to spawn it with: mote_job_spawn(loop, "llm",
 * &mote_llm_call_ops, call, parent, &id). The job ends DONE when the
 * stream ended properly, CANCELLED, or FAILED with call->errmsg. */
extern const struct mote_task_ops mote_llm_call_ops;

#ifdef __cplusplus
}
#endif

#endif /* MOTE_CLIENT_H */
