/*
 * agent_recover.c - applying recovery to a conversation just opened: what
 * mote_recover decided from its journal's tail becomes the
 * conversation's state (the transition is the hub's to run), leftover
 * tool processes are ended, and the embedder is told what happened
 * (MOTE_EV_RECOVERY).
 */
#include <string.h>

#include "agent_int.h"

static void recovery_note(struct mote_conv *c, const char *a, uint64_t n, const char *b)
{
    char m[200];
    struct mote_sb sb;

    mote_sb_init(&sb, m, sizeof(m));
    mote_sb_s(&sb, a);
    if (b != NULL) {
        mote_sb_u(&sb, n);
        mote_sb_s(&sb, b);
    }
    mote_emit_text(c, MOTE_EV_RECOVERY, m, (int)c->rec.action);
}

/* Kills what is left of tools that were running when mote died: only the
 * very processes that were recorded (a reused pid has another start time;
 * a tool's members carry its tag even when its leader is gone). */
static void kill_leftovers(struct mote_conv *c)
{
    const struct mote_port *p = c->s->port;
    unsigned i;

    if (MOTE_PORT_HAS(p, proc_kill_recorded)) {
        for (i = 0; i < c->rec.nkill; i++) {
            int n = p->proc_kill_recorded(p->ctx, c->rec.kill_pgid[i], c->rec.kill_start[i],
                                          c->rec.kill_tag[i]);

            if (n > 0)
                recovery_note(c, "ended ", (uint64_t)n,
                              " leftover process(es) of an interrupted tool");
        }
        return;
    }
    if (!MOTE_PORT_HAS(p, proc_start_time) || !MOTE_PORT_HAS(p, proc_signal))
        return;
    for (i = 0; i < c->rec.nkill; i++) {
        uint64_t now_start = p->proc_start_time(p->ctx, c->rec.kill_pgid[i]);

        if (now_start != 0 && now_start == c->rec.kill_start[i] &&
            p->proc_signal(p->ctx, c->rec.kill_pgid[i], MOTE_PROC_KILL) == 0)
            recovery_note(c, "killed the leftover tool process group ",
                          (uint64_t)c->rec.kill_pgid[i], "");
    }
}

void mote_conv_recover_load(struct mote_conv *c)
{
    unsigned i;

    c->autos = c->rec.autos;
    for (i = 0; i < c->rec.nallowed; i++)
        mote_str_copy(c->allowed[i], sizeof(c->allowed[0]), c->rec.allowed[i]);
    c->nallowed = c->rec.nallowed;
    c->total.input_tokens = c->rec.total.input;
    c->total.output_tokens = c->rec.total.output;
    c->total.cache_read_tokens = c->rec.total.cache_read;
    c->total.cache_write_tokens = c->rec.total.cache_write;
    /* the round of the last answer, as the recovery sees it */
    c->ncalls = c->rec.ncalls;
    c->call_i = 0;
    MOTE_ASSERT(c->ncalls <= MOTE_LLM_MAX_TOOL_CALLS);
    for (i = 0; i < c->ncalls; i++) {
        const struct mote_rec_call *r = &c->rec.calls[i];
        struct mote_conv_call *k = &c->calls[i];

        memset(k, 0, sizeof(*k));
        mote_str_copy(k->id, sizeof(k->id), r->id);
        mote_str_copy(k->name, sizeof(k->name), r->name);
        k->rec_off = r->rec_off;
        k->rec_idx = r->rec_idx;
        k->started = r->started;
        k->has_result = r->has_result;
        if (r->refused[0] != '\0') {
            k->bad_input = true;
            k->cut_off = strcmp(r->refused, MOTE_REFUSED_CUT_OFF) == 0;
            k->too_big = strcmp(r->refused, MOTE_REFUSED_TOO_BIG) == 0;
            if (!k->cut_off && !k->too_big && strcmp(r->refused, MOTE_REFUSED_INVALID) != 0)
                mote_str_copy(k->why, sizeof(k->why), r->refused);
        }
    }
}

/* A turn that goes on by itself starts afresh. */
static void new_turn(struct mote_conv *c)
{
    c->turns = 0;
    memset(&c->turn_usage, 0, sizeof(c->turn_usage));
    mote_cancel_init(&c->turn, &c->s->cancel);
}

enum mote_conv_event mote_conv_recover_begin(struct mote_conv *c)
{
    const struct mote_recovery *r = &c->rec;

    kill_leftovers(c);
    /* Calls past the table of the last answer still without their result
     * (a crash right after its assistant record): answered first, whatever
     * comes next, so no request carries a call without its result. (A
     * failed write stops the conversation: the transition does nothing.) */
    if (r->action != MOTE_RECOVER_IDLE && c->rec.over.left > 0)
        (void)mote_conv_answer_over(c, &c->rec.over);
    switch (r->action) {
    case MOTE_RECOVER_TOOL_INTERRUPTED:
    case MOTE_RECOVER_LIMIT:
        return MOTE_CEV_RECOVER_CLOSE;
    case MOTE_RECOVER_RESUME_TOOLS:
        if (r->nmissing > 0)
            recovery_note(c, "", r->nmissing,
                          " tool call(s) of the interrupted turn had not run yet: the turn goes "
                          "on with them");
        new_turn(c);
        return MOTE_CEV_RECOVER_TOOLS;
    case MOTE_RECOVER_CONTINUE:
        recovery_note(c, "continuing the interrupted turn", 0, NULL);
        new_turn(c);
        return MOTE_CEV_RECOVER_CONTINUE;
    case MOTE_RECOVER_IDLE:
    default:
        return r->last_error[0] != '\0' && !r->cancelled ? MOTE_CEV_RECOVER_ERROR
                                                         : MOTE_CEV_RECOVER_IDLE;
    }
}

void mote_conv_recover_end(struct mote_conv *c)
{
    const struct mote_recovery *r = &c->rec;

    switch (r->action) {
    case MOTE_RECOVER_TOOL_INTERRUPTED:
        if (c->storage_failed)
            break;
        mote_str_copy(c->last_error, sizeof(c->last_error), "interrupted tool");
        mote_emit_state(c);
        if (r->calls_only) {
            recovery_note(c,
                          r->nstarted > 0 ? "a call from outside was interrupted while it ran "
                                            "(it may or may not have run); it is not run again"
                                          : "a call from outside had not started when mote "
                                            "stopped; it was not run",
                          0, NULL);
            break;
        }
        recovery_note(c,
                      "the last turn was interrupted while a tool ran (it may or may not have "
                      "run); retry to go on",
                      0, NULL);
        if (r->nmissing > r->nstarted)
            recovery_note(c, "", r->nmissing - r->nstarted,
                          " tool call(s) after it had not run; they were not run");
        break;
    case MOTE_RECOVER_LIMIT:
        if (c->storage_failed)
            break;
        mote_emit_state(c);
        recovery_note(c,
                      "the last turn was interrupted again; not continuing by itself (",
                      r->autos, " automatic continues in a row): retry to go on");
        break;
    default:
        mote_emit_state(c);
        break;
    }
}
