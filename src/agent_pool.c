/*
 * agent_pool.c - the session's two pools: stream slots (a model request's
 * buffers and the connection kept between its requests) and run slots (a
 * tool call's). A conversation that finds its pool empty waits, and freed
 * slots go to the waiters in the order they asked (the deferred work
 * hands them out).
 */
#include <string.h>

#include "agent_int.h"

void mote_pool_init(struct mote_session *s)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_STREAMS; i++) {
        struct mote_stream *st = mote_stream_slot(s, i);

        mote_conn_init(&st->conn);
        st->used = false;
    }
    for (i = 0; i < MOTE_MAX_TOOL_RUNS; i++)
        s->runs[i].used = false;
}

void mote_pool_close_conns(struct mote_session *s)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_STREAMS; i++)
        mote_conn_close(&mote_stream_slot(s, i)->conn);
}

struct mote_stream *mote_stream_get(struct mote_session *s, struct mote_conv *c)
{
    unsigned i;

    MOTE_ASSERT(c->stream == NULL);
    for (i = 0; i < MOTE_MAX_STREAMS; i++) {
        struct mote_stream *st = mote_stream_slot(s, i);

        if (!st->used) {
            /* (the tool list, the text, the arena and the call are written
             * before they are read: left alone, their pages stay unused;
             * the connection stays for this request) */
            memset(&st->used, 0,
                   offsetof(struct mote_stream, defs) - offsetof(struct mote_stream, used));
            st->used = true;
            st->conv = c;
            return st;
        }
    }
    return NULL;
}

void mote_stream_put(struct mote_conv *c)
{
    struct mote_stream *st = c->stream;

    if (st == NULL)
        return;
    MOTE_ASSERT(st->used && st->conv == c);
    if (st->mcp_held && c->s->mcp != NULL)
        mote_mcp_unhold(c->s->mcp);
    st->used = false;
    st->conv = NULL;
    c->stream = NULL;
    mote_session_defer(c->s); /* a waiting conversation may take it */
}

struct mote_tool_run *mote_run_get(struct mote_session *s, struct mote_conv *c)
{
    unsigned i;

    MOTE_ASSERT(c->run == NULL);
    for (i = 0; i < MOTE_MAX_TOOL_RUNS; i++) {
        struct mote_tool_run *r = &s->runs[i];

        if (!r->used) {
            /* (the input and output buffers are written before read) */
            memset(r, 0, offsetof(struct mote_tool_run, json));
            r->used = true;
            r->conv = c;
            r->session = s;
            r->out = r->out_buf;
            r->out_cap = MOTE_TOOL_OUTPUT_MAX;
            memset(&r->st, 0, sizeof(r->st));
            return r;
        }
    }
    return NULL;
}

void mote_run_put(struct mote_conv *c)
{
    if (c->run == NULL)
        return;
    MOTE_ASSERT(c->run->used && c->run->conv == c);
    c->run->used = false;
    c->run->conv = NULL;
    c->run = NULL;
    mote_session_defer(c->s);
}

struct mote_conv *mote_pool_first_waiter(struct mote_session *s, bool stream)
{
    struct mote_conv *best = NULL;
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];

        if (!c->used || !(stream ? c->want_send : c->want_run))
            continue;
        if (best == NULL || mote_before(c->queue_seq, best->queue_seq))
            best = c;
    }
    return best;
}
