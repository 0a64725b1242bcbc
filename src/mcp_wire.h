/*
 * mcp_wire.h - one HTTP exchange of an MCP server's channel (internal):
 * connect or reuse the kept connection, send the head and the message,
 * read the response, frame its JSON body or event stream into messages.
 * mcp_http.c starts exchanges and hears of them through struct
 * mote_mcp_wire_ops.
 */
#ifndef MOTE_MCP_WIRE_H
#define MOTE_MCP_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_mcp.h"

/* The channels of a server (s->ch[]). */
enum { MCP_CH_REQ = 0, MCP_CH_NOTE = 1, MCP_CH_GET = 2 };

/* What an exchange is for (ch->role). */
enum {
    MCP_ROLE_MSG = 1,    /* a queued message (ch->seq) */
    MCP_ROLE_RENEW_INIT, /* a new session's initialize (s->init_msg) */
    MCP_ROLE_RENEW_NOTE, /* a new session's `initialized` */
    MCP_ROLE_GET,        /* the event stream */
    MCP_ROLE_DELETE,     /* the session's end */
};

enum { MCP_GET = 1, MCP_POST, MCP_DELETE };

/* The making of a new session (s->renew). */
enum {
    MCP_RENEW_NONE = 0,
    MCP_RENEW_INIT, /* its initialize to send, or sent */
    MCP_RENEW_WAIT, /* HTTP+SSE: its answer awaited on the stream */
    MCP_RENEW_GET,  /* Streamable HTTP: its event stream opening */
    MCP_RENEW_NOTE, /* its `initialized` to send */
};

/* How an exchange failed, besides the errors of the connection. */
#define MCP_WIRE_SESSION MOTE_ERR_STALE      /* the server does not know the session */
#define MCP_WIRE_NOT_ALLOWED MOTE_ERR_NOTSUP /* 405: the method is not offered */

struct mote_mcp_wire_ops {
    /* A whole event (`event` "message" unless named) or JSON body
     * ("message"): `len` bytes, NUL-terminated. */
    void (*message)(struct mote_mcp_server *s, struct mote_mcp_chan *ch, const char *event,
                    const char *data, size_t len);
    /* The response's headers came with a 2xx status. */
    void (*headers)(struct mote_mcp_server *s, struct mote_mcp_chan *ch);
    /* The exchange ended: 0, or < 0 with one line saying why. Not called
     * for an exchange stopped by mote_mcp_wire_stop. */
    void (*done)(struct mote_mcp_server *s, struct mote_mcp_chan *ch, int rc, const char *why);
    /* A message over the channel's buffer was dropped. */
    void (*dropped)(struct mote_mcp_server *s, struct mote_mcp_chan *ch);
    /* The channel wants a step soon (ch->kick): the server's timer. */
    void (*kicked)(struct mote_mcp_server *s);
};

/* The queued message `seq` of `s`, or NULL. */
static inline struct mote_mcp_queued *mcp_q_find(struct mote_mcp_server *s, uint32_t seq)
{
    unsigned i;

    for (i = 0; i < s->nq; i++) {
        if (s->q[i].seq == seq)
            return &s->q[i];
    }
    return NULL;
}

/* The `initialized` notification of a new session. */
extern const char mote_mcp_initialized_msg[];

/* Starts the exchange ch->role, ch->method and ch->seq describe. */
void mote_mcp_wire_begin(struct mote_mcp_server *s, struct mote_mcp_chan *ch,
                    const struct mote_mcp_wire_ops *ops);

/* Steps it (its deadline, bytes waiting): from the server's timer. */
void mote_mcp_wire_run(struct mote_mcp_server *s, struct mote_mcp_chan *ch);

/* Ends its exchange now, without ops->done: the connection closes. Safe
 * from inside the exchange's own callbacks (then it closes when the
 * parser returns). */
void mote_mcp_wire_stop(struct mote_mcp_server *s, struct mote_mcp_chan *ch);

/* True when the exchange's response was refused (not 2xx) or was neither
 * JSON nor an event stream (after its end too, until the next begin). */
bool mote_mcp_wire_refused(const struct mote_mcp_chan *ch);

/* Parses `msg` into s->m->json: true when it is an answer (result or
 * error) to request `id`. */
bool mote_mcp_wire_answer_of(struct mote_mcp_server *s, const char *msg, size_t len, int64_t id);

/* Blanks in text[0..len) the values of the server's configured headers
 * (whole, and their last word: the credential of "Bearer TOKEN") where
 * they are 8 bytes or more: a server's text never shows them. */
void mote_mcp_redact(const struct mote_mcp_server *s, char *text, size_t len);
/* The same in JSON text (a tool's inputSchema as mote re-encoded it): the
 * text stays valid JSON. */
void mote_mcp_redact_json(const struct mote_mcp_server *s, char *text, size_t len);

#endif /* MOTE_MCP_WIRE_H */
