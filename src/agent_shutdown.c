/*
 * agent_shutdown.c - the one shutdown of a session (mote_shutdown_begin):
 * stop new work, cancel or drain the running turns within the timeout,
 * cut what is left (journaled, marked for recovery), close the kept
 * connections, save the input history, disconnect the MCP servers, close
 * the journals and report. A
 * state machine the caller's loop drives: its timer, and the hub calling
 * shutdown_step when work ends.
 */
#include <string.h>

#include "agent_int.h"

static void shutdown_step(struct mote_session *s);

static void on_shutdown_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_session *s = arg;

    (void)loop, (void)t;
    s->sd_timer = 0;
    shutdown_step(s);
}

static void arm_timer(struct mote_session *s, uint32_t at)
{
    int32_t left = (int32_t)(at - mote_loop_now(s->loop));

    if (s->sd_timer != 0)
        (void)mote_timer_stop(s->loop, s->sd_timer);
    s->sd_timer = 0;
    if (mote_timer_start(s->loop, left > 0 ? (uint32_t)left : 0u, on_shutdown_timer, s, 0,
                         &s->sd_timer) < 0)
        s->sd_timer = 0;
}

/* The session's jobs still active (a conversation's request or tool). */
static unsigned jobs_active(struct mote_session *s, char *names, size_t cap)
{
    unsigned i, n = 0;
    bool name_them = names != NULL;
    struct mote_sb sb;

    if (name_them)
        mote_sb_init(&sb, names, cap);
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];
        mote_job_id ids[2] = {c->llm_job, c->tool_job};
        unsigned k;

        if (!c->used)
            continue;
        for (k = 0; k < 2; k++) {
            int st = ids[k] != 0 ? mote_job_state(s->loop, ids[k]) : MOTE_ERR_STALE;

            if (st == MOTE_JOB_RUNNING || st == MOTE_JOB_CANCELLING) {
                n++;
                if (name_them) {
                    if (sb.len > 0)
                        mote_sb_s(&sb, ", ");
                    mote_sb_s(&sb, k == 0 || c->call_i >= c->ncalls ? "model request"
                                                                     : c->calls[c->call_i].name);
                    mote_sb_s(&sb, " (");
                    mote_sb_s(&sb, mote_conv_id(c));
                    mote_sb_s(&sb, ")");
                }
            }
        }
    }
    return n;
}

static void cut_turns(struct mote_session *s)
{
    unsigned i;

    s->report.timed_out = !s->sd.force || s->report.timed_out;
    (void)jobs_active(s, s->report.cut, sizeof(s->report.cut));
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];

        if (!c->used || !mote_conv_busy(c))
            continue;
        c->want_send = c->want_run = false;
        c->rec_pending = false;
        mote_turn_apply(c, MOTE_CEV_SHUTDOWN_CUT, NULL);
        mote_cancel_set(&c->turn);
        if (c->llm_job != 0 && mote_job_cancel(s->loop, c->llm_job) == 0)
            s->report.jobs_cancelled++;
        if (c->tool_job != 0 && mote_job_cancel(s->loop, c->tool_job) == 0)
            s->report.jobs_cancelled++;
        mote_emit_state(c);
    }
}

static void finish(struct mote_session *s)
{
    struct mote_event ev;
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        if (s->conv[i].used)
            mote_journal_close(&s->conv[i].jr);
    }
    mote_pool_close_conns(s); /* (one whose request outlived its cancel) */
    if (s->sd_timer != 0)
        (void)mote_timer_stop(s->loop, s->sd_timer);
    s->sd_timer = 0;
    s->sd_phase = MOTE_SDP_DONE;
    s->report.reason = s->sd.reason;
    s->report.mode = s->sd.mode;
    s->report.forced = s->sd.force;
    mote_emit_init(&ev, MOTE_EV_SHUTDOWN, NULL);
    ev.report = &s->report;
    ev.text = s->sd.reason != NULL ? s->sd.reason : "";
    ev.len = strlen(ev.text);
    mote_emit(s, &ev);
}

static void shutdown_step(struct mote_session *s)
{
    uint32_t now = mote_loop_now(s->loop);

    switch (s->sd_phase) {
    case MOTE_SDP_WAIT:
        if (!s->sd.force && mote_session_busy(s) && mote_before(now, s->sd_deadline))
            return; /* the timer comes back at the deadline */
        if (mote_session_busy(s))
            cut_turns(s);
        s->sd_phase = MOTE_SDP_CUT;
        /* A moment for the cut jobs to stop (their sockets closed, their
         * process groups killed): they see the flag on their next step. */
        s->sd_cut_until = now + (s->sd.force ? 0u : MOTE_SHUTDOWN_GRACE_MS);
        arm_timer(s, s->sd_cut_until);
        /* fall through */
    case MOTE_SDP_CUT:
        if (jobs_active(s, NULL, 0) > 0 && !s->sd.force && mote_before(now, s->sd_cut_until))
            return;
        s->report.jobs_left = jobs_active(s, s->report.left, sizeof(s->report.left));
        s->report.history_err = s->history_used ? mote_history_save(s) : 0;
        s->sd_phase = MOTE_SDP_MCP;
        if (s->mcp != NULL) {
            uint32_t budget = s->sd.force ? 0u
                              : s->sd.timeout_ms < MOTE_MCP_DISCONNECT_MS ? s->sd.timeout_ms
                                                                         : MOTE_MCP_DISCONNECT_MS;

            mote_mcp_disconnect_begin(s->mcp, budget);
        }
        /* fall through */
    case MOTE_SDP_MCP:
        if (s->mcp != NULL) {
            int left = mote_mcp_disconnect_poll(s->mcp, s->sd.force);

            if (left > 0) {
                arm_timer(s, now + 5u); /* processes have no wake-up of their own here */
                return;
            }
            s->report.mcp_left = left < 0 ? (unsigned)-left : 0u;
        }
        finish(s);
        return;
    default:
        return;
    }
}

/* Settles c's reservation of the budget, if there is one (the hook). */
static void budget_done(struct mote_conv *c, bool answered)
{
    if (c->s->budget_done != NULL)
        c->s->budget_done(c, answered);
}

int mote_shutdown_begin(struct mote_session *s, const struct mote_shutdown_req *req)
{
    unsigned i;

    if (s->sd_phase == MOTE_SDP_DONE)
        return MOTE_ERR_ALREADY;
    if (req == NULL)
        return MOTE_ERR_INVAL;
    if (s->sd_phase != MOTE_SDP_NONE) {
        /* A later request: force, or a drain turned into a cancel. */
        if (req->force && !s->sd.force) {
            s->sd.force = true;
            if (s->mcp != NULL && s->sd_phase == MOTE_SDP_MCP)
                (void)mote_mcp_disconnect_poll(s->mcp, true);
        }
        if (req->mode == MOTE_SD_CANCEL && s->sd.mode == MOTE_SD_DRAIN) {
            s->sd.mode = MOTE_SD_CANCEL;
            for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
                if (mote_conv_busy(&s->conv[i]) && mote_conv_cancel(&s->conv[i]) == 0)
                    s->report.jobs_cancelled++;
            }
        }
        mote_session_defer(s);
        return 0;
    }
    s->sd = *req;
    memset(&s->report, 0, sizeof(s->report));
    s->sd_phase = MOTE_SDP_WAIT;
    s->shutdown_step = shutdown_step; /* the hub calls it when work ends */
    s->sd_deadline = mote_loop_now(s->loop) + req->timeout_ms;
    mote_loop_stop_spawns(s->loop); /* the continuation chain ends here */
    /* No request starts from now on: idle connections close now, those
     * in use when their request ends (a drained answer's too). */
    mote_pool_close_conns(s);
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];

        if (!c->used)
            continue;
        c->rec_pending = false; /* a recovery not begun waits for the next start */
        if (!mote_conv_busy(c))
            continue;
        if (req->mode == MOTE_SD_CANCEL) {
            if (mote_conv_cancel(c) == 0)
                s->report.jobs_cancelled++;
        } else if (c->st == MOTE_CONV_AWAITING_APPROVAL || c->want_send || c->want_run ||
                   c->want_budget) {
            /* waiting for someone (or the budget): it goes on after a restart */
            c->want_send = c->want_run = c->want_budget = false;
            budget_done(c, false); /* a reservation waiting for a slot: never sent */
            s->in_api++;
            (void)mote_turn_apply(c, MOTE_CEV_DRAIN_STOP, NULL);
            s->in_api--;
        }
    }
    arm_timer(s, s->sd_deadline);
    mote_session_defer(s);
    return 0;
}

int mote_shutdown(struct mote_session *s, const struct mote_shutdown_req *req,
                  struct mote_shutdown_report *out)
{
    int rc;

    if (s->loop->polling)
        return MOTE_ERR_BUSY;
    if (req != NULL && s->sd_phase != MOTE_SDP_NONE && s->sd_phase != MOTE_SDP_DONE) {
        /* One already runs (a signal's): it is joined as it is, a drain
         * stays a drain; only `force` changes it. */
        struct mote_shutdown_req join = s->sd;

        join.force = req->force;
        rc = req->force ? mote_shutdown_begin(s, &join) : 0;
    } else {
        rc = mote_shutdown_begin(s, req);
    }
    if (rc < 0 && rc != MOTE_ERR_ALREADY)
        return rc;
    while (s->sd_phase != MOTE_SDP_DONE) {
        rc = mote_loop_poll(s->loop, -1);
        if (rc < 0)
            return rc;
    }
    if (out != NULL)
        *out = s->report;
    return 0;
}

bool mote_shutdown_done(const struct mote_session *s)
{
    return s->sd_phase == MOTE_SDP_DONE;
}

bool mote_shutting_down(const struct mote_session *s)
{
    return s->sd_phase != MOTE_SDP_NONE;
}
