/*
 * agent_state.c - a conversation's state below the hub: the transitions
 * that carry no journal effect (the answer's first byte, a storage
 * failure), stopping a conversation's jobs, and what the embedder may ask
 * about the state.
 */
#include "agent_int.h"

void mote_conv_stop_jobs(struct mote_conv *c, bool request)
{
    if (c->tool_job != 0)
        (void)mote_job_cancel(c->s->loop, c->tool_job);
    if (request && c->llm_job != 0)
        (void)mote_job_cancel(c->s->loop, c->llm_job);
}

void mote_conv_move(struct mote_conv *c, enum mote_conv_event e)
{
    struct mote_conv_step step = mote_conv_next(c->st, e);

    MOTE_ASSERT((step.effects & ~MOTE_CEFF_KILL_TOOLS) == 0);
    c->st = step.state;
    if (step.effects & MOTE_CEFF_KILL_TOOLS)
        mote_conv_stop_jobs(c, e == MOTE_CEV_STORAGE_FAILED);
}

bool mote_conv_busy(const struct mote_conv *c)
{
    return c->used && (c->st == MOTE_CONV_LLM_REQUESTING || c->st == MOTE_CONV_STREAMING ||
                       c->st == MOTE_CONV_TOOL_EXECUTING ||
                       c->st == MOTE_CONV_AWAITING_APPROVAL || c->st == MOTE_CONV_COMPACTING ||
                       c->rec_pending);
}

bool mote_session_busy(const struct mote_session *s)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        if (mote_conv_busy(&s->conv[i]))
            return true;
    }
    return false;
}

enum mote_conv_state mote_conv_state(const struct mote_conv *c)
{
    return c->st;
}

const char *mote_conv_id(const struct mote_conv *c)
{
    return c->jr.id;
}
