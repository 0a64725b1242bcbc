/*
 * agent_request.c - starting a model request: a stream slot (and the
 * connection it keeps), the request (the model, the system prompt, the
 * conversation's parts from the journal, the tools offered), and its job. A summarising request sends
 * the conversation and then the instruction to summarise it.
 */
#include <string.h>

#include "agent_int.h"

#define COMPACT_PROMPT                                                                           \
    "Summarise our conversation so far for your own later use: the user's goals and "         \
    "requests, what was done (tools used, files touched, results), decisions and facts "      \
    "established, and what is left to do. Keep names, paths, numbers and errors exact. "      \
    "Write only the summary; do not call tools."
#define COMPACT_MAX_TOKENS 2048

/* The tools offered to this request (fixed for the request's life): the
 * registry's if the conversation offers them, then the MCP servers'. */
static void gather_tools(struct mote_conv *c)
{
    struct mote_session *s = c->s;
    struct mote_stream *st = c->stream;
    unsigned n = 0, i;

    if (c->conf.tools) {
        for (i = 0; i < s->ntools; i++) {
            st->defs[n].name = s->tools[i]->name;
            st->defs[n].description = s->tools[i]->description;
            st->defs[n].schema = s->tools[i]->schema;
            n++;
        }
    }
    if (c->conf.mcp && s->mcp != NULL) {
        n += mote_mcp_tool_defs(s->mcp, st->defs + n,
                                (unsigned)(MOTE_ARRAY_LEN(st->defs) - n));
        n += mote_mcp_res_defs(s->mcp, st->defs + n, (unsigned)(MOTE_ARRAY_LEN(st->defs) - n));
    }
    st->req.ntools = n;
}

/* An attempt's body is made of the MCP servers' tool lists: they stay as
 * they are from the attempt's start (when its length is counted) until
 * its last byte is sent. */
static void on_llm_phase(void *arg, enum mote_llm_phase phase)
{
    struct mote_conv *c = arg;
    struct mote_stream *st = c->stream;
    struct mote_mcp *m = c->s->mcp;

    if (st == NULL || m == NULL || !c->conf.mcp)
        return;
    if (phase == MOTE_PHASE_RESOLVE) {
        if (!st->mcp_held)
            mote_mcp_hold(m);
        st->mcp_held = true;
        gather_tools(c); /* the list as it is now, for this attempt */
    } else if (phase == MOTE_PHASE_HEADERS && st->mcp_held) {
        st->mcp_held = false;
        mote_mcp_unhold(m);
    }
}

/* The parts of a summarising request: the conversation, then the request
 * to summarise it. */
static int compact_parts(void *arg, unsigned index, struct mote_part *p)
{
    struct mote_conv *c = arg;

    if (index < c->compact_n) {
        int rc = mote_journal_parts(&c->jr, index, p);

        if (rc != 0)
            return rc;
        c->compact_n = index; /* the conversation ends here */
    }
    if (index != c->compact_n)
        return 0;
    memset(p, 0, sizeof(*p));
    p->role = MOTE_ROLE_USER;
    p->type = MOTE_PART_TEXT;
    p->text = COMPACT_PROMPT;
    p->text_len = sizeof(COMPACT_PROMPT) - 1;
    return 1;
}

/* The model's context window, tokens: the conversation's, else what a
 * server said (0: unknown). */
static uint32_t window_of(const struct mote_conv *c)
{
    return c->conf.context_window > 0 ? c->conf.context_window : c->ctx_learned;
}

/* The tool results of the request, counted. */
static uint32_t count_results(struct mote_conv *c, const struct mote_llm_req *req)
{
    struct mote_part p;
    uint32_t n = 0;
    unsigned i;

    for (i = 0; req->parts(req->parts_arg, i, &p) > 0 && i < 0xFFFFFFu; i++)
        n += p.type == MOTE_PART_TOOL_RESULT;
    c->jr.part_valid = false;
    return n;
}

/* A summarising request over the window: its oldest tool results cut,
 * the fewest and the least that make its body fit (a quarter of them,
 * half, all; to 2 KiB, then less), the journal kept whole. The budget:
 * 60% of the window in the bytes a token took in the refused request
 * (else MOTE_CONTEXT_BYTES_PER_TOKEN), or half that request's body when
 * the window is unknown. */
static void shrink(struct mote_conv *c, struct mote_llm_req *req)
{
    static const uint32_t caps[] = {2048, 1024, 512, 256, 128};
    static const unsigned parts4[] = {1, 2, 4};
    uint32_t win = window_of(c), n = count_results(c, req);
    uint32_t sent = c->ovf_bytes < 0x7FFFFFFFu ? (uint32_t)c->ovf_bytes : 0x7FFFFFFFu;
    uint32_t bpt = c->ovf_used > 0 ? sent / c->ovf_used : 0; /* (32-bit: small cores) */
    uint32_t budget;
    size_t i, k;

    if (bpt == 0 || bpt > 16)
        bpt = MOTE_CONTEXT_BYTES_PER_TOKEN;
    if (win > 100000000u)
        win = 100000000u;
    budget = win > 0 ? win / 10u * 6u * bpt : sent / 2u;
    if (n == 0 || budget == 0)
        return;
    for (i = 0; i < MOTE_ARRAY_LEN(caps); i++) {
        for (k = 0; k < MOTE_ARRAY_LEN(parts4); k++) {
            int64_t len;

            req->old_cap = caps[i];
            req->old_results = (n * parts4[k] + 3u) / 4u;
            len = mote_llm_body_length(req);
            c->jr.part_valid = false;
            if (len >= 0 && len <= (int64_t)budget)
                return;
        }
    }
    /* nothing fits: the least there is (the server says if it is too much) */
}

int mote_request_start(struct mote_conv *c, mote_cont_fn done)
{
    struct mote_session *s = c->s;
    struct mote_stream *st;
    int rc;

    c->want_send = false;
    st = mote_stream_get(s, c);
    if (st == NULL) {
        c->want_send = true;
        c->queue_seq = ++s->queue_seq;
        return 0;
    }
    c->stream = st;
    c->got_first = false;
    c->ncalls = 0;
    c->call_i = 0;
    c->stop[0] = '\0';
    memset(&c->usage, 0, sizeof(c->usage));
    memset(&st->req, 0, sizeof(st->req));
    gather_tools(c);
    st->req.provider = c->conf.llm->provider;
    st->req.model = c->conf.model;
    st->req.system = c->conf.system;
    st->req.max_tokens = c->conf.max_tokens;
    /* What the provider takes beyond its dialect (its profile). */
    mote_llm_profile_req(mote_llm_conf_profile(c->conf.llm), &st->req);
    if (c->conf.llm->provider == MOTE_PROVIDER_ANTHROPIC)
        st->req.thinking_budget = c->conf.thinking_budget;
    st->req.tools = st->defs;
    st->req.parts = mote_journal_parts;
    st->req.parts_arg = &c->jr;
    /* The journal only grows, and every request follows a record of its
     * own (the request, or the answer before it): its size now is this
     * answer's alone, for the ids of calls that come without one. */
    st->req.id_seed = c->jr.size;
    /* A tool result is cut to a share of the context window before it is
     * sent (the journal keeps it whole). */
    st->req.window = window_of(c);
    if (st->req.window > 0)
        st->req.result_cap = (st->req.window < 100000000u ? st->req.window : 100000000u) / 100u *
                             MOTE_CONTEXT_RESULT_SHARE * MOTE_CONTEXT_BYTES_PER_TOKEN;
    if (c->compacting) {
        st->req.parts = compact_parts;
        st->req.parts_arg = c;
        st->req.no_tool_calls = true;
        st->req.thinking_budget = 0; /* a summary needs none */
        c->compact_n = (unsigned)-1;
        if (st->req.max_tokens == 0 || st->req.max_tokens > COMPACT_MAX_TOKENS)
            st->req.max_tokens = COMPACT_MAX_TOKENS;
        /* the summary fits beside the conversation in a small window */
        if (st->req.window > 0 && st->req.max_tokens > st->req.window / 3u)
            st->req.max_tokens = st->req.window / 3u > 64u ? st->req.window / 3u : 64u;
        if (c->compact_shrink)
            shrink(c, &st->req);
    }
    c->jr.part_valid = false;
    rc = mote_llm_call_init(&st->call, c->conf.llm, &st->req, mote_answer_event, c);
    st->call.on_phase = on_llm_phase;
    st->call.conn = &st->conn; /* the slot's: the turn's requests go on one connection */
    st->call.memo = &s->llm_memo; /* what the process's servers refused or needed */
    if (rc == 0)
        rc = mote_job_spawn(s->loop, c->compacting ? "summary" : "model request",
                            &mote_llm_call_ops, &st->call, &c->turn, &c->llm_job);
    if (rc == 0)
        rc = mote_job_then(s->loop, c->llm_job, "agent", done, c);
    if (rc < 0) {
        if (c->llm_job != 0)
            (void)mote_job_cancel(s->loop, c->llm_job);
        c->llm_job = 0;
        if (rc != MOTE_ERR_SHUTDOWN)
            mote_conv_fail_msg(c, "cannot start the model request: ",
                               rc == MOTE_ERR_CONFIG ? st->call.errmsg : mote_strerror(rc));
        mote_stream_put(c);
        return rc;
    }
    c->turns++;
    return 0;
}
