/*
 * agent_turn.c - the hub of a turn: it runs each transition of a
 * conversation (mote_conv_next) and carries out its effects, journal
 * first; it takes the ends of the model request's and the tools' jobs;
 * and it does the work an API call or a freed slot leaves for later (the
 * deferred work, from the loop: never inside the embedder's call).
 *
 * A turn: user record -> request record -> model request (a job on a
 * stream slot; agent_request.c) -> the answer streams (agent_answer.c)
 * -> the assistant record -> each tool call: dispatch and approval, the
 * tool's job on a run slot (agent_dispatch.c, agent_run.c), its result
 * -> request again, until the model ends the turn.
 */
#include <string.h>

#include "agent_int.h"

static void on_llm_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                        const char *errmsg, void *arg);
static void on_tool_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                         const char *errmsg, void *arg);

/* Settles c's reservation of the budget, if there is one (the hook). */
static void budget_done(struct mote_conv *c, bool answered)
{
    if (c->s->budget_done != NULL)
        c->s->budget_done(c, answered);
}

static unsigned max_turns(const struct mote_conv *c)
{
    return c->conf.max_turns > 0 ? c->conf.max_turns : MOTE_DEFAULT_MAX_TURNS;
}

/* Starts the model request, once the budget (if any) takes it; one that
 * cannot start ends the turn. */
static void start_request(struct mote_conv *c)
{
    int rc = c->s->budget_gate != NULL ? c->s->budget_gate(c) : 1;

    if (rc == 0)
        return; /* it waits for the budget (c->want_budget) */
    if (rc > 0)
        rc = mote_request_start(c, on_llm_done);
    if (rc == MOTE_ERR_SHUTDOWN) {
        budget_done(c, false);
        mote_turn_apply(c, MOTE_CEV_DRAIN_STOP, NULL);
    } else if (rc < 0) {
        budget_done(c, false);
        mote_turn_apply(c, MOTE_CEV_FAILED, c->last_error);
        mote_emit_error(c, rc, false);
    }
}

/* Journals what a cancel leaves: results for the calls that did not run,
 * then the record that ends the turn. */
static bool journal_cancel(struct mote_conv *c)
{
    uint64_t before;

    while (c->call_i < c->ncalls) {
        if (c->calls[c->call_i].has_result) {
            c->call_i++;
            continue;
        }
        if (!mote_conv_give_result_s(c, "cancelled by the user before it ran", true))
            return false;
    }
    before = c->jr.size;
    return mote_conv_journaled(c, mote_journal_cancel(&c->jr), before);
}

int mote_turn_apply_text(struct mote_conv *c, enum mote_conv_event e, const char *arg,
                         size_t len)
{
    struct mote_conv_step step = mote_conv_next(c->st, e);
    unsigned f = step.effects;
    uint64_t before;
    int rc;

    if (f & MOTE_CEFF_JOURNAL_USER) {
        /* The user's words are durable before anything else happens. */
        before = c->jr.size;
        rc = mote_journal_user(&c->jr, arg, len);
        if (rc == MOTE_ERR_TOO_LARGE && c->jr.err == 0)
            return rc; /* refused whole: nothing was written, nothing changed */
        c->st = step.state;
        if (!mote_conv_journaled(c, rc, before))
            return rc;
    }
    if (f & MOTE_CEFF_JOURNAL_CALL) {
        /* A call from outside: its assistant record (one call, `arg` its
         * input) is durable before it is asked about or run. */
        struct mote_call_rec rec = {c->calls[0].id, c->calls[0].name, arg, len, NULL, NULL, 0};

        before = c->jr.size;
        c->calls[0].rec_off = before;
        rc = mote_journal_assistant(&c->jr, "", 0, "tool_use", false, &rec, 1);
        if ((rc == MOTE_ERR_TOO_LARGE || rc == MOTE_ERR_BADMSG) && c->jr.err == 0)
            return rc; /* refused whole: nothing was written, nothing changed */
        c->st = step.state;
        if (!mote_conv_journaled(c, rc, before))
            return rc;
    }
    c->st = step.state;
    if (f & MOTE_CEFF_JOURNAL_PARTIAL) {
        /* What streamed so far, as a closed record. A cancel always writes
         * one (it ends the turn), even before the first byte. */
        if (c->stream != NULL && (c->got_first || c->stream->text_len > 0 ||
                                  c->stream->spilled || e == MOTE_CEV_CANCELLED)) {
            rc = mote_answer_commit(c, true);
            if (rc < 0 && !c->storage_failed)
                mote_conv_storage_failed(c, rc);
        } else if (c->stream == NULL && e == MOTE_CEV_CANCELLED) {
            before = c->jr.size;
            (void)mote_conv_journaled(c, mote_journal_assistant(&c->jr, "", 0, "", true, NULL, 0),
                                      before);
        }
        if (c->storage_failed)
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_KILL_TOOLS)
        mote_conv_stop_jobs(c, e == MOTE_CEV_STORAGE_FAILED);
    if (f & MOTE_CEFF_JOURNAL_CANCEL) {
        c->want_run = false;
        if (!journal_cancel(c))
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_JOURNAL_ERROR) {
        before = c->jr.size;
        if (!mote_conv_journaled(c, mote_journal_error(&c->jr, arg != NULL ? arg : "failed"),
                                 before))
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_JOURNAL_MARK) {
        before = c->jr.size;
        if (!mote_conv_journaled(c, mote_journal_mark(&c->jr, "needs_recovery"), before))
            return MOTE_ERR_IO;
        c->s->report.conversations_marked++;
    }
    if (f & MOTE_CEFF_JOURNAL_CLOSE) {
        before = c->jr.size;
        if (!mote_conv_journaled(c, mote_recover_apply(&c->jr, &c->rec), before))
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_JOURNAL_AUTO) {
        before = c->jr.size;
        if (!mote_conv_journaled(c, mote_journal_auto(&c->jr), before))
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_JOURNAL_ANSWER) {
        rc = mote_answer_commit(c, false);
        if (rc < 0) {
            if (!c->storage_failed) {
                mote_conv_fail_msg(
                    c, "the answer is too large for the journal (MOTE_JOURNAL_LINE_MAX)", NULL);
                (void)mote_turn_apply(c, MOTE_CEV_FAILED, c->last_error);
                mote_emit_error(c, rc, false);
            }
            return rc;
        }
    }
    if (f & MOTE_CEFF_JOURNAL_COMPACT) {
        struct mote_stream *st = c->stream;

        MOTE_ASSERT(st != NULL);
        before = c->jr.size;
        rc = mote_journal_compact(&c->jr, st->text, st->text_len, c->compact_resume);
        if (!mote_conv_journaled(c, rc, before))
            return rc < 0 ? rc : MOTE_ERR_IO;
        c->compacting = false;
        memset(&c->usage, 0, sizeof(c->usage)); /* the context is small again */
        mote_stream_put(c);
    }
    if (f & MOTE_CEFF_JOURNAL_REQUEST) {
        before = c->jr.size;
        if (!mote_conv_journaled(c, mote_journal_request(&c->jr, 1), before))
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_SEND) {
        if (c->s->sd_phase != MOTE_SDP_NONE) {
            /* Shutting down: no new request; the journal says it is due. */
            return mote_turn_apply(c, MOTE_CEV_DRAIN_STOP, NULL);
        }
        mote_stream_put(c); /* the last answer's slot (pause_turn): the request takes one anew */
        start_request(c);
    }
    if (f & MOTE_CEFF_SEND_COMPACT) {
        c->compacting = true;
        start_request(c);
    }
    if (f & MOTE_CEFF_RUN_TOOLS) {
        /* From the loop, after this transition was told. */
        c->want_next = true;
        mote_session_defer(c->s);
    }
    if (f & MOTE_CEFF_ASK)
        mote_dispatch_ask(c);
    return 0;
}

int mote_turn_apply(struct mote_conv *c, enum mote_conv_event e, const char *errmsg)
{
    return mote_turn_apply_text(c, e, errmsg, errmsg != NULL ? strlen(errmsg) : 0);
}

/* ---- the model request's end ----------------------------------------------- */

static void emit_turn_end(struct mote_conv *c)
{
    struct mote_event ev;

    mote_emit_init(&ev, MOTE_EV_TURN_END, c);
    ev.stop_reason = c->stop;
    ev.usage = c->usage;
    ev.turn_usage = c->turn_usage;
    mote_emit(c->s, &ev);
}

bool mote_stop_unfinished(const char *stop_reason)
{
    static const char *const stops[] = {"max_tokens", "refusal", "content_filter",
                                        "model_context_window_exceeded", "pause_turn"};
    size_t i;

    for (i = 0; stop_reason != NULL && i < MOTE_ARRAY_LEN(stops); i++)
        if (strcmp(stop_reason, stops[i]) == 0)
            return true;
    return false;
}

/* A warning for a stop that is not a plain end of the answer. */
static void stop_warning(struct mote_conv *c)
{
    const char *m = NULL;

    if (strcmp(c->stop, "max_tokens") == 0)
        m = "the answer was cut at the token limit (max_tokens): raise the limit, or ask the "
            "model to go on";
    else if (strcmp(c->stop, "refusal") == 0)
        m = "the model refused to answer";
    else if (strcmp(c->stop, "content_filter") == 0)
        m = "the provider's content filter stopped the answer";
    else if (strcmp(c->stop, "model_context_window_exceeded") == 0)
        m = "the conversation no longer fits the model's context window: compact it";
    else if (strcmp(c->stop, "pause_turn") == 0 && c->st == MOTE_CONV_IDLE)
        m = "the model paused its turn, and the turn limit was reached: retry goes on";
    if (m != NULL)
        mote_emit_text(c, MOTE_EV_WARNING, m, 0);
}

/* True when the last request used conf.compact_percent of the model's
 * context window. */
static bool compact_due(const struct mote_conv *c)
{
    const struct mote_usage *u = &c->usage;
    uint64_t used = u->input_tokens + u->output_tokens + u->cache_read_tokens + u->cache_write_tokens;
    unsigned pct = c->conf.compact_percent > 0 && c->conf.compact_percent <= 100
                       ? c->conf.compact_percent
                       : 80u;

    uint32_t win = c->conf.context_window > 0 ? c->conf.context_window : c->ctx_learned;

    return win > 0 && used * 100u >= (uint64_t)win * pct;
}

/* MOTE_EV_NOTE: a, then (if not NULL) the number n and b, then m and d. */
static void emit_note(struct mote_conv *c, const char *a, uint64_t n, const char *b, uint64_t m,
                      const char *d)
{
    char t[200];
    struct mote_sb sb;

    mote_sb_init(&sb, t, sizeof(t));
    mote_sb_s(&sb, a);
    if (b != NULL) {
        mote_sb_u(&sb, n);
        mote_sb_s(&sb, b);
    }
    if (d != NULL) {
        mote_sb_u(&sb, m);
        mote_sb_s(&sb, d);
    }
    mote_emit_text(c, MOTE_EV_NOTE, t, 0);
}

void mote_turn_compact(struct mote_conv *c, bool resume)
{
    const struct mote_usage *u = &c->usage;

    c->compact_resume = resume;
    if (c->s->in_api == 0)
        emit_note(c, "compacting the conversation: ",
                  u->input_tokens + u->output_tokens + u->cache_read_tokens +
                      u->cache_write_tokens,
                  " tokens in use of ", c->conf.context_window,
                  c->conf.context_window > 0 ? " in the context window" : NULL);
    (void)mote_turn_apply(c, MOTE_CEV_COMPACT, NULL); /* its effect: SEND_COMPACT */
}

/* The turn was cancelled while its request or tool ran: said so. */
static void cancelled(struct mote_conv *c)
{
    mote_turn_apply(c, MOTE_CEV_CANCELLED, NULL);
    mote_stream_put(c);
    if (!c->storage_failed) {
        mote_emit_state(c);
        mote_emit_text(c, MOTE_EV_CANCELLED, "cancelled", 0);
    }
}

/* What a request refused as over the context window says: the window
 * and the tokens it counted, and the body's length. */
static void learn_overflow(struct mote_conv *c)
{
    const struct mote_llm_call *call = &c->stream->call;

    if (call->ctx_limit > 0)
        c->ctx_learned = call->ctx_limit;
    c->ovf_used = call->ctx_used;
    c->ovf_bytes = call->body_len;
}

static void compact_done(struct mote_conv *c, enum mote_job_state how, const char *errmsg,
                         int cause)
{
    size_t len = c->stream->text_len;

    if (how == MOTE_JOB_CANCELLED) {
        c->compacting = false;
        cancelled(c);
        return;
    }
    if (how == MOTE_JOB_FAILED && !c->compact_shrink && cause == MOTE_ERR_CONTEXT) {
        /* Even the summary request is over the window: its oldest tool
         * results are cut to fit (the journal keeps them), once. */
        learn_overflow(c);
        c->compact_shrink = true;
        mote_stream_put(c);
        emit_note(c, "the summary request is over the context window too: its oldest tool "
                     "results are cut to fit",
                  0, NULL, 0, NULL);
        start_request(c);
        return;
    }
    if (how == MOTE_JOB_FAILED || len == 0) {
        c->compacting = false;
        mote_conv_fail_msg(c, "the conversation could not be summarised: ",
                           how == MOTE_JOB_FAILED ? errmsg : "the model wrote no summary");
        mote_turn_apply(c, MOTE_CEV_FAILED, c->last_error);
        mote_stream_put(c);
        if (!c->storage_failed) {
            mote_emit_state(c);
            mote_emit_error(c, how == MOTE_JOB_FAILED && cause < 0 ? cause : MOTE_ERR_IO, false);
        }
        return;
    }
    /* The compact record (JOURNAL_COMPACT) frees the slot; a turn that
     * goes on takes one again for its request. */
    mote_turn_apply(c, c->compact_resume ? MOTE_CEV_COMPACTED : MOTE_CEV_COMPACTED_IDLE, NULL);
    if (c->storage_failed)
        return;
    emit_note(c, "compacted: a summary of ", len, " bytes stands for the earlier conversation", 0,
              NULL);
    mote_emit_state(c);
}

static void add_usage(struct mote_usage *to, const struct mote_usage *u)
{
    to->input_tokens += u->input_tokens;
    to->output_tokens += u->output_tokens;
    to->cache_read_tokens += u->cache_read_tokens;
    to->cache_write_tokens += u->cache_write_tokens;
}

/* The answer is complete: journaled before anything runs. */
static void answer_done(struct mote_conv *c)
{
    enum mote_conv_event e;

    add_usage(&c->total, &c->usage);
    add_usage(&c->turn_usage, &c->usage);
    if (c->ncalls > 0)
        e = MOTE_CEV_ANSWER_TOOLS;
    else if (strcmp(c->stop, "pause_turn") == 0 && c->turns < max_turns(c))
        e = MOTE_CEV_ANSWER_PAUSED; /* the API asks for the turn to go on */
    else
        e = MOTE_CEV_ANSWER_DONE;
    mote_turn_apply(c, e, NULL);
    if (c->llm_job == 0)
        mote_stream_put(c); /* (after pause_turn the next request holds a slot of its own) */
    if (c->storage_failed)
        return;
    mote_emit_state(c);
    stop_warning(c);
    if (c->st == MOTE_CONV_IDLE) {
        emit_turn_end(c);
        if (compact_due(c) && c->s->sd_phase == MOTE_SDP_NONE && !mote_conv_busy(c))
            mote_turn_compact(c, false);
    }
}

static void on_llm_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                        const char *errmsg, void *arg)
{
    struct mote_conv *c = arg;

    c->llm_job = 0;
    budget_done(c, true); /* (what it used, if anything came) */
    if (c->stream == NULL || c->storage_failed || c->st == MOTE_CONV_NEEDS_RECOVERY) {
        /* the shutdown cut it (and wrote what streamed), or storage failed */
        c->compacting = false;
        mote_stream_put(c);
        mote_emit_state(c);
    } else if (c->compacting) {
        compact_done(c, how, errmsg, mote_job_result(loop, job));
    } else if (how == MOTE_JOB_CANCELLED) {
        cancelled(c);
    } else if (how == MOTE_JOB_FAILED && mote_job_result(loop, job) == MOTE_ERR_CONTEXT &&
               !c->ovf_tried && c->st == MOTE_CONV_LLM_REQUESTING &&
               c->s->sd_phase == MOTE_SDP_NONE) {
        /* Over the model's context window: summarised (the oldest tool
         * results cut where even that would not fit), then asked again,
         * once a turn. */
        learn_overflow(c);
        c->ovf_tried = true;
        c->compact_shrink = true;
        mote_stream_put(c);
        if (c->ctx_learned > 0)
            emit_note(c, "the conversation is over the model's context window (",
                      c->ctx_learned, " tokens): compacting it, then asking again", 0, NULL);
        else
            emit_note(c, "the conversation is over the model's context window: compacting it, "
                         "then asking again",
                      0, NULL, 0, NULL);
        c->compact_resume = true;
        mote_turn_apply(c, MOTE_CEV_OVERFLOW, NULL); /* its effect: SEND_COMPACT */
        mote_emit_state(c);
    } else if (how == MOTE_JOB_FAILED) {
        int cause = mote_job_result(loop, job); /* the request's code: its cause */

        mote_conv_fail_msg(c, errmsg, NULL);
        mote_turn_apply(c, MOTE_CEV_FAILED, errmsg);
        mote_stream_put(c);
        if (!c->storage_failed) {
            mote_emit_state(c);
            mote_emit_error(c, cause < 0 ? cause : MOTE_ERR_IO, false);
        }
    } else {
        answer_done(c);
    }
    mote_shutdown_poll(c->s);
}

/* ---- the tool round --------------------------------------------------------- */

/* Every call has its result: the next request, or the end of the turn. */
static void round_done(struct mote_conv *c)
{
    if (c->jr.calls_only) {
        /* a call from outside: its result is the turn's end */
        mote_str_copy(c->stop, sizeof(c->stop), "call");
        mote_turn_apply(c, MOTE_CEV_CALL_DONE, NULL);
        mote_emit_state(c);
        emit_turn_end(c);
        return;
    }
    if (c->turns >= max_turns(c)) {
        char m[120];
        struct mote_sb sb;

        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_num(&sb, "stopped after ", c->turns, " model requests (the turn limit); retry goes on");
        mote_conv_fail_msg(c, m, NULL);
        mote_turn_apply(c, MOTE_CEV_TURN_LIMIT, m);
        if (!c->storage_failed) {
            mote_emit_state(c);
            mote_emit_error(c, MOTE_ERR_LIMIT, false);
        }
        return;
    }
    if (compact_due(c)) {
        mote_turn_compact(c, true); /* summarised first; the request follows */
        mote_emit_state(c);
        return;
    }
    mote_turn_apply(c, MOTE_CEV_TOOLS_DONE, NULL);
    mote_emit_state(c);
}

/* Goes on with the round: the calls in order, until one runs, waits for
 * an answer, or every call has its result. */
static void next_tool(struct mote_conv *c)
{
    for (;;) {
        switch (mote_dispatch_next(c)) {
        case MOTE_DISPATCH_RUN:
            if (mote_dispatch_start(c, on_tool_done) <= 0)
                return; /* storage failed, or the result comes later */
            break;      /* a result was given at once: the next call */
        case MOTE_DISPATCH_ASK:
            mote_turn_apply(c, MOTE_CEV_ASK, NULL);
            return;
        case MOTE_DISPATCH_DRAIN:
            mote_turn_apply(c, MOTE_CEV_DRAIN_STOP, NULL);
            return;
        case MOTE_DISPATCH_ROUND_DONE:
            round_done(c);
            return;
        case MOTE_DISPATCH_WAIT:
        default:
            return;
        }
    }
}

static void on_tool_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                         const char *errmsg, void *arg)
{
    struct mote_conv *c = arg;
    struct mote_tool_run *run = c->run;

    (void)loop, (void)job;
    c->tool_job = 0;
    if (run == NULL || c->call_i >= c->ncalls || c->storage_failed) {
        mote_run_put(c);
        mote_shutdown_poll(c->s);
        return;
    }
    mote_run_finish(run, how, errmsg, c->st == MOTE_CONV_NEEDS_RECOVERY);
    if (!mote_conv_give_result(c, run->out, run->out_len, run->is_error)) {
        mote_run_put(c);
        mote_shutdown_poll(c->s);
        return;
    }
    mote_run_put(c);
    if (how == MOTE_JOB_CANCELLED && c->st != MOTE_CONV_NEEDS_RECOVERY) {
        mote_turn_apply(c, MOTE_CEV_CANCELLED, NULL);
        if (!c->storage_failed) {
            mote_emit_state(c);
            mote_emit_text(c, MOTE_EV_CANCELLED, "cancelled", 0);
        }
    } else if (c->st == MOTE_CONV_TOOL_EXECUTING) {
        next_tool(c);
    }
    mote_shutdown_poll(c->s);
}

/* ---- the deferred work ------------------------------------------------------ */

static void recover_now(struct mote_conv *c)
{
    mote_turn_apply(c, mote_conv_recover_begin(c), NULL);
    mote_conv_recover_end(c);
}

/* What one conversation left for the loop: an error or a warning to
 * tell, its recovery, a cancel, an approval's answer, the tool round. */
static void conv_deferred(struct mote_conv *c)
{
    if (c->err_pending) {
        c->err_pending = false;
        mote_emit_state(c);
        mote_emit_error(c, c->err_code, c->err_fatal);
    }
    if (c->current_failed) {
        c->current_failed = false;
        mote_emit_text(c, MOTE_EV_WARNING,
                       "cannot record the most recent conversation (STATE/current): --continue "
                       "may pick an older one",
                       0);
    }
    if (c->rec_pending) {
        c->rec_pending = false;
        recover_now(c);
    }
    if (c->want_cancel) {
        c->want_cancel = false;
        if (c->st == MOTE_CONV_AWAITING_APPROVAL || c->want_send || c->want_run ||
            c->want_budget || (c->st == MOTE_CONV_TOOL_EXECUTING && c->tool_job == 0)) {
            c->want_send = false;
            c->want_run = false;
            c->want_budget = false;
            c->budget_told = false;
            budget_done(c, false); /* (a reservation waiting for a slot) */
            mote_turn_apply(c, MOTE_CEV_CANCELLED, NULL);
            if (!c->storage_failed) {
                mote_emit_state(c);
                mote_emit_text(c, MOTE_EV_CANCELLED, "cancelled", 0);
            }
        }
    }
    if (c->want_budget) {
        /* the budget refused the request: again (it may have freed) */
        c->want_budget = false;
        if (c->s->sd_phase != MOTE_SDP_NONE)
            mote_turn_apply(c, MOTE_CEV_DRAIN_STOP, NULL); /* it goes on after a restart */
        else
            start_request(c);
    }
    if (c->answered && c->st == MOTE_CONV_AWAITING_APPROVAL) {
        const char *name;

        MOTE_ASSERT(c->call_i < c->ncalls);
        name = c->calls[c->call_i].name;
        if (c->answer == MOTE_ANSWER_ALWAYS && !mote_dispatch_always(c, name)) {
            uint64_t before = c->jr.size;

            /* kept in the journal: a reopening allows it too */
            if (mote_conv_journaled(c, mote_journal_allow(&c->jr, name), before) &&
                c->nallowed < MOTE_CONV_ALLOWED_MAX)
                mote_str_copy(c->allowed[c->nallowed++], sizeof(c->allowed[0]), name);
        }
        if (!c->storage_failed)
            (void)mote_turn_apply(c, MOTE_CEV_ANSWERED, NULL); /* next_tool takes the answer */
    }
    if (c->want_next) {
        c->want_next = false;
        next_tool(c);
    }
    mote_emit_state(c);
}

/* Free slots go to the waiters, oldest first; while shutting down, a
 * waiter starts nothing (its turn is marked for recovery). */
static void serve_waiters(struct mote_session *s)
{
    struct mote_conv *w;

    while ((w = mote_pool_first_waiter(s, true)) != NULL) {
        if (s->sd_phase != MOTE_SDP_NONE) {
            w->want_send = false;
            budget_done(w, false); /* never sent */
            mote_turn_apply(w, MOTE_CEV_DRAIN_STOP, NULL);
            mote_emit_state(w);
            continue;
        }
        start_request(w);
        if (w->want_send)
            break; /* still no slot */
    }
    while ((w = mote_pool_first_waiter(s, false)) != NULL) {
        if (s->sd_phase != MOTE_SDP_NONE) {
            w->want_run = false;
            mote_turn_apply(w, MOTE_CEV_DRAIN_STOP, NULL);
            mote_emit_state(w);
            continue;
        }
        w->want_run = false;
        if (mote_dispatch_start(w, on_tool_done) > 0)
            next_tool(w);
        else if (w->want_run)
            break;
        mote_emit_state(w);
    }
}

static void run_deferred(struct mote_session *s)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        if (s->conv[i].used)
            conv_deferred(&s->conv[i]);
    }
    serve_waiters(s);
    mote_shutdown_poll(s);
}

void mote_turn_attach(struct mote_session *s)
{
    s->run_deferred = run_deferred;
}
