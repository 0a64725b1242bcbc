/*
 * agent_budget.c - the spend budget (mote_budget.h) in front of every
 * model request of the session's conversations: reserved before the
 * request starts, settled when it ends; a conversation whose request the
 * budget refuses waits (told once), and one session timer tries the
 * waiting ones again when the budget frees.
 */
#include <string.h>

#include "agent_int.h"
#include "mote/mote_budget.h"

static void on_budget_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_session *s = arg;

    (void)loop, (void)t;
    s->budget_timer = 0;
    mote_session_defer(s); /* the hub tries the waiting conversations again */
}

/* The timer for b->until (checked at least each minute: the real-time
 * clock may be set meanwhile). */
static void arm(struct mote_session *s)
{
    int64_t left = s->budget->until - mote_budget_now(s->budget);
    uint32_t ms = left <= 1 ? 1000u : left >= 60 ? 60000u : (uint32_t)left * 1000u;

    if (s->budget_timer != 0)
        return;
    if (mote_timer_start(s->loop, ms, on_budget_timer, s, 0, &s->budget_timer) < 0)
        s->budget_timer = 0; /* no timer free: the next deferred work tries again */
}

static int gate(struct mote_conv *c)
{
    struct mote_session *s = c->s;
    uint32_t max_out = c->conf.max_tokens > 0 ? c->conf.max_tokens : 4096u;
    struct mote_event ev;
    int rc;

    if (s->budget == NULL || c->budget_id != 0)
        return 1;
    rc = mote_budget_reserve(s->budget, c->jr.id, c->conf.model, max_out, &c->budget_id);
    if (rc == 0) {
        c->want_budget = false;
        c->budget_told = false;
        return 1;
    }
    if (rc != MOTE_ERR_BUDGET) {
        mote_conv_fail_msg(c, "the budget's journal (STATE/budget.jsonl) cannot be written, so "
                              "nothing is sent: ",
                           mote_strerror(rc));
        return rc;
    }
    c->want_budget = true;
    if (s->in_api > 0) {
        mote_session_defer(s); /* told from the loop */
        return 0;
    }
    if (!c->budget_told) {
        c->budget_told = true;
        mote_emit_init(&ev, MOTE_EV_BUDGET, c);
        ev.text = s->budget->why;
        ev.len = strlen(s->budget->why);
        ev.code = MOTE_ERR_BUDGET;
        ev.until = s->budget->until;
        mote_emit(s, &ev);
    }
    arm(s);
    return 0;
}

static void done(struct mote_conv *c, bool answered)
{
    struct mote_session *s = c->s;
    const struct mote_usage *u = &c->usage;

    if (s->budget == NULL || c->budget_id == 0)
        return;
    if (answered)
        mote_budget_settle(s->budget, c->budget_id, c->conf.model, u->input_tokens,
                           u->output_tokens, u->cache_read_tokens + u->cache_write_tokens);
    else
        mote_budget_settle(s->budget, c->budget_id, c->conf.model, 0, 0, 0);
    c->budget_id = 0;
}

void mote_session_use_budget(struct mote_session *s, struct mote_budget *b)
{
    s->budget = b;
    s->budget_gate = b != NULL ? gate : NULL;
    s->budget_done = b != NULL ? done : NULL;
}
