/*
 * agent_event.c - what the embedder is told: the events of a session and
 * its conversations, delivered through its one callback and never inside
 * the embedder's own call (what arises there waits for the deferred work,
 * which runs from the loop).
 */
#include <string.h>

#include "agent_int.h"

void mote_emit_init(struct mote_event *ev, enum mote_ev type, struct mote_conv *c)
{
    memset(ev, 0, sizeof(*ev));
    ev->type = type;
    ev->conv = c;
    ev->text = "";
    if (c != NULL)
        ev->state = c->st;
}

void mote_emit(struct mote_session *s, const struct mote_event *ev)
{
    s->conf.on_event(s->conf.arg, ev);
}

void mote_emit_text(struct mote_conv *c, enum mote_ev type, const char *text, int code)
{
    struct mote_event ev;

    mote_emit_init(&ev, type, c);
    ev.text = text;
    ev.len = strlen(text);
    ev.code = code;
    mote_emit(c->s, &ev);
}

void mote_emit_state(struct mote_conv *c)
{
    struct mote_event ev;

    if (c->st == c->st_told || c->s->in_api > 0)
        return; /* inside an API call: the deferred work tells it */
    /* A tool round not dispatched yet: whether its call runs or is asked
     * about is not known; the dispatch tells the state it leads to (a
     * call waiting for approval is never told as running first). */
    if (c->st == MOTE_CONV_TOOL_EXECUTING && c->want_next)
        return;
    c->st_told = c->st;
    mote_emit_init(&ev, MOTE_EV_STATE, c);
    mote_emit(c->s, &ev);
}

void mote_conv_fail_msg(struct mote_conv *c, const char *a, const char *b)
{
    struct mote_sb sb;

    mote_sb_init(&sb, c->last_error, sizeof(c->last_error));
    mote_sb_s(&sb, a);
    if (b != NULL)
        mote_sb_s(&sb, b);
}

void mote_emit_error(struct mote_conv *c, int code, bool fatal)
{
    struct mote_event ev;

    if (c->s->in_api > 0) {
        /* never inside the caller's call: the deferred work tells it */
        c->err_pending = true;
        c->err_code = code;
        c->err_fatal = fatal;
        mote_session_defer(c->s);
        return;
    }
    mote_emit_init(&ev, MOTE_EV_ERROR, c);
    ev.text = c->last_error;
    ev.len = strlen(c->last_error);
    ev.code = code;
    ev.fatal = fatal;
    mote_emit(c->s, &ev);
}

static void on_defer_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_session *s = arg;

    (void)loop, (void)t;
    s->defer_timer = 0;
    MOTE_ASSERT(s->run_deferred != NULL);
    s->run_deferred(s);
}

void mote_session_defer(struct mote_session *s)
{
    if (s->defer_timer == 0 &&
        mote_timer_start(s->loop, 0, on_defer_timer, s, 0, &s->defer_timer) < 0)
        s->defer_timer = 0; /* no timer free: the work waits for the next defer that gets one */
}
