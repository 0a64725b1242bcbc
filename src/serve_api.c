/*
 * serve_api.c - the API server's actions on conversations (serve_int.h):
 * create, send a message (or again), cancel, approve, remove, look, list.
 * They know nothing of HTTP: each returns a code that a front door turns
 * into its own answer (serve_handlers.c for HTTP).
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

int mote_serve_create(struct serve *sv, const char *id, struct mote_conv **out)
{
    int rc;

    *out = NULL;
    if (sv->pub->phase != MOTE_SERVE_RUN)
        return MOTE_ERR_SHUTDOWN;
    if ((rc = mote_serve_make_room(sv)) < 0)
        return rc;
    rc = mote_conv_create(sv->conf.session, sv->conf.conv, id, out);
    if (rc < 0) {
        *out = NULL;
        return rc == MOTE_ERR_BUSY ? MOTE_ERR_EXIST : rc; /* BUSY: open already */
    }
    mote_serve_touch(sv, *out);
    mote_httpd_say(&sv->http, "created conversation ", mote_conv_id(*out), NULL);
    mote_serve_prune(sv); /* the new one is open: never removed */
    return 0;
}

int mote_serve_send(struct serve *sv, const char *id, const char *text, size_t len, bool retry,
                    struct mote_conv **out, uint64_t *offset, uint32_t *bad)
{
    struct mote_conv *cv;
    int rc;

    *out = NULL;
    *offset = 0;
    *bad = 0;
    if (sv->pub->phase != MOTE_SERVE_RUN)
        return MOTE_ERR_SHUTDOWN;
    if ((rc = mote_serve_load(sv, id, &cv, bad)) < 0)
        return rc;
    *out = cv;
    if (mote_conv_busy(cv))
        return MOTE_ERR_BUSY;
    /* a reload since its last turn: this one takes the new settings */
    if (mote_conv_set_conf(cv, sv->conf.conv) < 0 && mote_conv_busy(cv))
        return MOTE_ERR_BUSY;
    *offset = cv->jr.size;
    return retry ? mote_conv_retry(cv) : mote_conv_send(cv, text, len);
}

int mote_serve_cancel(struct serve *sv, const char *id, struct mote_conv **out)
{
    *out = mote_serve_find(sv, id);
    if (*out == NULL || mote_conv_cancel(*out) < 0)
        return MOTE_ERR_NOENT;
    return 0;
}

int mote_serve_approve(struct serve *sv, const char *id, const char *call_id, uint32_t ask,
                       enum mote_answer answer, const char *reason, struct mote_conv **out)
{
    const struct mote_conv_call *call;
    uint32_t pending;

    *out = mote_serve_find(sv, id);
    if (sv->pub->phase != MOTE_SERVE_RUN)
        return MOTE_ERR_SHUTDOWN;
    pending = *out != NULL ? mote_conv_pending(*out, &call) : 0;
    if (pending == 0)
        return MOTE_ERR_NOENT;
    /* The call's id names the question across restarts (an ask id is
     * only a counter): an answer to another call answers nothing. */
    if (strcmp(call->id, call_id) != 0 || (ask != 0 && ask != pending) ||
        mote_conv_approve(*out, pending, answer, reason) < 0)
        return MOTE_ERR_STALE;
    mote_httpd_say(&sv->http, "approval answered: ",
                   answer == MOTE_ANSWER_YES  ? "yes"
                   : answer == MOTE_ANSWER_NO ? "no"
                                              : "always",
                   NULL);
    return 0;
}

int mote_serve_remove(struct serve *sv, const char *id)
{
    struct mote_conv *cv = mote_serve_find(sv, id);
    const struct serve_sum *e = NULL;
    int64_t holder = 0;
    int rc;

    if (cv != NULL && mote_conv_close(cv) < 0)
        return MOTE_ERR_BUSY;
    rc = mote_serve_sum(sv, id, &e, &holder);
    if (rc < 0)
        return rc; /* MOTE_ERR_AGAIN: read it first */
    if (e->rc == MOTE_ERR_CORRUPT || e->rc == MOTE_ERR_NOTSUP || e->rc == MOTE_ERR_NOTREG)
        return MOTE_ERR_INPROGRESS; /* damaged: kept for the user */
    if (e->rc < 0)
        return e->rc;
    if (holder != 0)
        return MOTE_ERR_LOCKED;
    if (!mote_serve_sum_finished(e, holder))
        return MOTE_ERR_INPROGRESS; /* needs recovery */
    rc = mote_serve_disk_remove(sv, id, e);
    if (rc == MOTE_ERR_BUSY)
        return MOTE_ERR_INPROGRESS;
    if (rc < 0)
        return rc;
    mote_httpd_say(&sv->http, "removed conversation ", id, NULL);
    mote_serve_streams_gone(sv, id);
    return 0;
}

int mote_serve_look(struct serve *sv, const char *id, struct serve_look *out, uint32_t *bad)
{
    struct mote_conv *cv = mote_serve_find(sv, id);
    const struct serve_sum *e = NULL;
    int64_t holder = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    *bad = 0;
    out->cv = cv;
    if (cv != NULL) {
        out->state = mote_conv_state_name(mote_conv_state(cv));
        out->busy = mote_conv_busy(cv);
        out->end = cv->jr.size;
        mote_str_copy(out->last_error, sizeof(out->last_error), cv->last_error);
        out->usage.input = cv->total.input_tokens;
        out->usage.output = cv->total.output_tokens;
        out->usage.cache_read = cv->total.cache_read_tokens;
        out->usage.cache_write = cv->total.cache_write_tokens;
        return 0;
    }
    rc = mote_serve_sum(sv, id, &e, &holder);
    if (rc < 0)
        return rc; /* MOTE_ERR_AGAIN: read it first */
    if (e->rc < 0) {
        *bad = e->bad_line;
        return e->rc;
    }
    out->end = e->bytes;
    out->holder = holder;
    out->usage = e->usage;
    out->state = mote_serve_sum_state(e, holder);
    if (e->action == MOTE_RECOVER_IDLE && !e->cancelled)
        mote_str_copy(out->last_error, sizeof(out->last_error), e->last_error);
    return 0;
}
