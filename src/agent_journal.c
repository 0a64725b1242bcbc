/*
 * agent_journal.c - the journal writes of a turn, each checked: a write
 * that went well is told (MOTE_EV_RECORD), one that failed stops the
 * conversation (the journal is the conversation); and the tool results,
 * the records every call ends with (those past the table too).
 */
#include <string.h>

#include "agent_int.h"

void mote_conv_storage_failed(struct mote_conv *c, int rc)
{
    if (c->storage_failed)
        return;
    c->storage_failed = true;
    mote_conv_fail_msg(c, "cannot write the conversation journal: ", mote_strerror(rc));
    if (c->s->report.storage_err == 0)
        c->s->report.storage_err = rc;
    mote_conv_move(c, MOTE_CEV_STORAGE_FAILED);
    mote_emit_error(c, MOTE_ERR_STORAGE, true); /* the cause; the text says which failure */
}

static void emit_record(struct mote_conv *c, uint64_t before)
{
    struct mote_event ev;

    if (c->jr.size <= before)
        return;
    mote_emit_init(&ev, MOTE_EV_RECORD, c);
    ev.offset = before;
    ev.text = c->s->jbuf.line;
    ev.len = (size_t)(c->jr.size - before - 1u);
    mote_emit(c->s, &ev);
}

bool mote_conv_journaled(struct mote_conv *c, int rc, uint64_t before)
{
    if (rc == MOTE_ERR_TOO_LARGE && c->jr.err == 0)
        return false; /* refused, nothing written: the caller says why */
    if (rc < 0) {
        mote_conv_storage_failed(c, rc);
        return false;
    }
    emit_record(c, before);
    return true;
}

bool mote_conv_give_result(struct mote_conv *c, const char *text, size_t len, bool is_error)
{
    struct mote_conv_call *call;
    uint64_t before = c->jr.size;
    struct mote_event ev;
    int rc;

    MOTE_ASSERT(c->call_i < c->ncalls);
    call = &c->calls[c->call_i];
    for (;;) {
        rc = mote_journal_tool_result(&c->jr, call->id, text, len, is_error);
        if (rc != MOTE_ERR_TOO_LARGE || c->jr.err != 0 || len == 0)
            break;
        /* escaped, it did not fit one record: keep the start */
        len = len / 2;
        while (len > 0 && ((unsigned char)text[len] & 0xC0u) == 0x80u)
            len--;
    }
    if (!mote_conv_journaled(c, rc, before))
        return false;
    call->has_result = true;
    c->call_i++;
    mote_emit_init(&ev, MOTE_EV_TOOL_RESULT, c);
    ev.id = call->id;
    ev.name = call->name;
    ev.text = text;
    ev.len = len;
    ev.is_error = is_error;
    mote_emit(c->s, &ev);
    return true;
}

bool mote_conv_give_result_s(struct mote_conv *c, const char *text, bool is_error)
{
    return mote_conv_give_result(c, text, strlen(text), is_error);
}

bool mote_conv_answer_over(struct mote_conv *c, struct mote_over *o)
{
    uint64_t n = 0;
    char m[200];
    struct mote_sb sb;

    for (;;) {
        uint64_t before = c->jr.size;
        int rc = mote_recover_over_next(&c->jr, o);

        if (rc == 0)
            break;
        if (!mote_conv_journaled(c, rc < 0 ? rc : 0, before)) {
            if (!c->storage_failed)
                mote_conv_storage_failed(c, rc); /* (never too large: a short record) */
            return false;
        }
        n++;
    }
    if (n > 0) {
        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_num(&sb, "the model asked for more tool calls in one answer than mote runs: ", n,
                    " past the first ");
        mote_sb_u(&sb, MOTE_LLM_MAX_TOOL_CALLS);
        mote_sb_s(&sb, " were not run (MOTE_LLM_MAX_TOOL_CALLS); the model is asked to call them "
                       "again");
        mote_emit_text(c, MOTE_EV_WARNING, m, 0);
    }
    return true;
}
