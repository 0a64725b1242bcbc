/*
 * mcp_int.h - what the MCP protocol (mcp.c) and its transports share
 * (internal): the transports' entry points, called by the protocol, and
 * the protocol's, which the transports reach through the table in struct
 * mote_mcp (so calls go one way between the files: protocol -> transport).
 */
#ifndef MOTE_MCP_INT_H
#define MOTE_MCP_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_mcp.h"
#include "util.h"

/* What the pending request is (s->req_kind). */
enum { MCP_REQ_NONE, MCP_REQ_INIT, MCP_REQ_LIST, MCP_REQ_CALL };

/* What mcp_in.c tells the protocol about the message it framed
 * (s->in_flags; cleared when the next message begins). */
#define MCP_IN_CUT 0x40u   /* a call's result was cut to fit */
#define MCP_IN_BEGAN 0x80u /* tools/list entries were taken from it already */

/* What a message queued to a server is. */
enum {
    MCP_MSG_REQUEST = 1, /* a request whose answer is awaited and that repeats no effect
                          * (tools/list): sent again once if its connection closes
                          * before any byte of the answer */
    MCP_MSG_INIT,        /* the initialize request */
    MCP_MSG_NOTE,        /* a notification, or an answer to the server's request */
    MCP_MSG_CALL,        /* tools/call: a request that acts on the world, never sent
                          * again once the server may have received it */
};

/* The protocol's side (set by mote_mcp_init; see mcp.c). */
struct mote_mcp_up {
    /* One whole JSON-RPC message came (a line, an event's data, a body). */
    void (*message)(struct mote_mcp_server *s, const char *msg, size_t len);
    /* The server cannot go on (an exit, a refusal at start): FAILED. */
    void (*failed)(struct mote_mcp_server *s, const char *why);
    /* The pending request is lost: a call ends with `why` as its error; an
     * initialize or tools/list fails the server. */
    void (*request_failed)(struct mote_mcp_server *s, const char *why);
    /* A new session replaced a lost one: its tool list is fetched again. */
    void (*renewed)(struct mote_mcp_server *s);
    /* One entry of the tools array of the tools/list answer being read
     * (its JSON text, and its name's raw bytes when the walk saw them):
     * taken into the server's tools, or skipped. */
    void (*tool)(struct mote_mcp_server *s, const char *entry, size_t len, const char *name,
                 size_t name_len);
    /* A stdio server was started again (mcp_life.c): its initialize goes. */
    void (*restarted)(struct mote_mcp_server *s);
};

/* Tells the user something about server `s` (the session's log
 * callback): a, then b and c where not NULL. */
static inline void mcp_log(struct mote_mcp_server *s, const char *a, const char *b, const char *c)
{
    char msg[320];
    struct mote_sb sb;

    if (s->m->log == NULL)
        return;
    mote_sb_init(&sb, msg, sizeof(msg));
    mote_sb_join(&sb, a, b, c);
    s->m->log(s->m->log_arg, s->name, msg);
}

/* True while the server's answers must wait unread: a new tool list is
 * on its way while a request's body is being sent with the old one
 * (mote_mcp_hold). */
static inline bool mcp_must_wait(const struct mote_mcp_server *s)
{
    return s->relisting && s->m->holds > 0;
}

/* Answers a server's request (mcp.c): {"jsonrpc", "id": rid (JSON, as
 * it is), "result": result (JSON, as it is)}. 0 or < 0 (nothing sent). */
int mote_mcp_send_result(struct mote_mcp_server *s, const char *rid, const char *result,
                         size_t len);

/* The deadline of the pending request, ms (the server's own for its kind,
 * else the session's): also what the HTTP exchanges carrying it get. */
static inline uint32_t mcp_timeout(const struct mote_mcp_server *s)
{
    return s->req_ms != 0 ? s->req_ms : s->m->timeout_ms;
}

/* ---- a tool as offered (mcp_tool.c) ---- */

/* A character of a tool name the providers take ([A-Za-z0-9_-]). */
bool mote_mcp_name_char(char c);
/* tool->name from the server's and the tool's names (tool->remote): a
 * valid name no other tool of m has (the tool is counted already). */
void mote_mcp_tool_name(struct mote_mcp_server *s, struct mote_mcp_tool *tool);
/* inputSchema `schema` of j re-encoded into out (cap bytes), "type":
 * "object" added when missing: 0, or MOTE_ERR_INVAL (not an object
 * schema), MOTE_ERR_TOO_LARGE. */
int mote_mcp_take_schema(const struct mote_json *j, int schema, char *out, size_t cap);

/* ---- deadlines, progress, restarts (mcp_life.c) ---- */

/* The server failed: a stdio server that was ready may be started again
 * by a call, no sooner than the time this sets. */
void mote_mcp_life_failed(struct mote_mcp_server *s);
/* It exited after it was ready and may still be started again: its
 * tools stay offered. */
bool mote_mcp_restartable(const struct mote_mcp_server *s);
/* notifications/progress with `params` (a token of s->m->json): for the
 * pending call, its deadline is given again and a line may say it. */
void mote_mcp_progress(struct mote_mcp_server *s, int params);
/* Call c's server is not ready (or was started again and c's tool must
 * be found again): true when c waits (the server is, or will be, started
 * again: the call is woken when it is ready or failed); false when c
 * ended with its error in c->result. */
bool mote_mcp_restart_wait(struct mote_mcp_call *c, struct mote_mcp_server *s);
/* c's server was started again: c->tool is found by the tool's name in
 * the new list; false when the tool is gone (c ended, its error said). */
bool mote_mcp_call_refind(struct mote_mcp_call *c, struct mote_mcp_server *s);

/* ---- the answer buffer (mcp_in.c) ---- */

/* Appends byte `c` of the message being read to buf[0..*len) (cap bytes,
 * one kept for a NUL): a tools/list answer's entries are taken as they
 * come, a call's result cut to fit. False: the message is over the buffer
 * (it is dropped; mote_mcp_in_reset then). */
bool mote_mcp_in_put(struct mote_mcp_server *s, char *buf, size_t *len, size_t cap, char c);
/* The message ended: the entries of a tools/list answer still in it are
 * taken (*len shrinks), before the protocol reads what is left. */
void mote_mcp_in_end(struct mote_mcp_server *s, char *buf, size_t *len);
/* A message was dropped, or an exchange begins: nothing is being skipped. */
void mote_mcp_in_reset(struct mote_mcp_server *s);

/* ---- stdio (mcp_stdio.c) ---- */

/* Spawns the server and watches its pipes; false (the server FAILED)
 * when it cannot start. */
bool mote_mcp_stdio_start(struct mote_mcp_server *s);
/* The message at outbuf[start..outlen) is queued: framed and written as
 * far as the pipe takes. 0, or MOTE_ERR_FULL (nothing queued). */
int mote_mcp_stdio_queued(struct mote_mcp_server *s, size_t start);
/* The hold ended: read what waited. */
void mote_mcp_stdio_resume(struct mote_mcp_server *s);
/* The server exited: what is left of its process (pipes, watches) is
 * closed and its state cleared, for mote_mcp_stdio_start again. */
void mote_mcp_stdio_reset(struct mote_mcp_server *s);
/* Disconnect: close stdin (begin); one pass (term, kill: send that
 * signal; `el` ms since the begin): true once it exited; then the end. */
void mote_mcp_stdio_dc_begin(struct mote_mcp_server *s);
bool mote_mcp_stdio_dc_poll(struct mote_mcp_server *s, bool term, bool kill, uint32_t el);
void mote_mcp_stdio_dc_end(struct mote_mcp_server *s);

/* ---- HTTP: Streamable HTTP and HTTP+SSE (mcp_http.c) ---- */

bool mote_mcp_http_start(struct mote_mcp_server *s);
int mote_mcp_http_queued(struct mote_mcp_server *s, size_t start, int kind);
/* The pending request is given up (its deadline, a cancel): its exchange
 * ends now, its answer is not awaited. */
void mote_mcp_http_drop_request(struct mote_mcp_server *s);
void mote_mcp_http_resume(struct mote_mcp_server *s);
/* The server's progress for the pending call: the exchange carrying it
 * gets its deadline again. */
void mote_mcp_http_progress(struct mote_mcp_server *s);
/* Disconnect: the session ended with DELETE (Streamable HTTP), the
 * streams closed; dc_poll is true once nothing is left (force: at once). */
void mote_mcp_http_dc_begin(struct mote_mcp_server *s);
bool mote_mcp_http_dc_poll(struct mote_mcp_server *s, bool force, uint32_t el);
void mote_mcp_http_dc_end(struct mote_mcp_server *s);

/* Server `s` is ready and declared capability `cap` (MOTE_MCP_CAP_*). */
static inline bool mcp_offers(const struct mote_mcp_server *s, uint8_t cap)
{
    return s->state == MOTE_MCP_READY && (s->caps & cap) != 0;
}

/* The first server from index `from` on that offers `cap`, or m->n. */
static inline unsigned mcp_next_offering(const struct mote_mcp *m, unsigned from, uint8_t cap)
{
    while (from < m->n && !mcp_offers(&m->srv[from], cap))
        from++;
    return from;
}

/* Call `c` ends at once with `a` (then b, d where not NULL) as its error. */
static inline void mcp_refuse(struct mote_mcp_call *c, const char *a, const char *b, const char *d)
{
    struct mote_sb sb;

    mote_sb_init(&sb, c->result, sizeof(c->result));
    mote_sb_join(&sb, a, b, d);
    c->len = sb.len;
    c->is_error = true;
    c->done = true;
}

#endif /* MOTE_MCP_INT_H */
