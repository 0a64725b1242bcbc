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
    int rc;

    if (cv != NULL && mote_conv_close(cv) < 0)
        return MOTE_ERR_BUSY;
    rc = mote_session_remove(sv->conf.session, id);
    if (rc == MOTE_ERR_BUSY)
        return MOTE_ERR_INPROGRESS; /* needs recovery, or damaged */
    if (rc < 0)
        return rc;
    mote_httpd_say(&sv->http, "removed conversation ", id, NULL);
    mote_serve_streams_gone(sv, id);
    return 0;
}

int mote_serve_look(struct serve *sv, const char *id, struct serve_look *out, uint32_t *bad)
{
    const struct mote_recovery *r = &sv->recovery;
    struct mote_conv *cv = mote_serve_find(sv, id);
    int rc;

    memset(out, 0, sizeof(*out));
    *bad = 0;
    out->cv = cv;
    if (cv != NULL) {
        out->state = mote_conv_state_name(mote_conv_state(cv));
        out->busy = mote_conv_busy(cv);
        out->end = cv->jr.size;
        mote_str_copy(out->last_error, sizeof(out->last_error), cv->last_error);
        return 0;
    }
    sv->peek.buf = &sv->conf.session->jbuf;
    rc = mote_journal_peek(&sv->peek, sv->port, id);
    if (rc < 0) {
        *bad = sv->peek.bad_line;
        return rc;
    }
    rc = mote_recover(&sv->peek, &sv->recovery);
    out->end = sv->peek.size;
    mote_journal_close(&sv->peek);
    if (rc < 0)
        return rc;
    out->holder = sv->peek.holder;
    if (out->holder != 0)
        out->state = "locked";
    else if (r->action != MOTE_RECOVER_IDLE)
        out->state = "needs_recovery";
    else if (r->last_error[0] != '\0' && !r->cancelled)
        out->state = "error";
    else
        out->state = "idle";
    if (r->action == MOTE_RECOVER_IDLE && !r->cancelled)
        mote_str_copy(out->last_error, sizeof(out->last_error), r->last_error);
    return 0;
}

/* ---- the list ---------------------------------------------------------------- */

/* A page of the list: its ids are chosen from the names alone (cheap). */
struct list_page {
    const char *after;             /* ids after it ("" none) */
    char (*ids)[MOTE_CONV_ID_MAX]; /* the page's ids, sorted */
    unsigned n, cap;               /* ids kept, the page's size */
    bool more;                     /* ids after the page */
};

#define JOURNAL_SUFFIX ".jsonl"

/* st_list: keeps the `cap` smallest ids after the cursor. */
static int list_name(void *arg, const char *name)
{
    struct list_page *x = arg;
    size_t n = strlen(name), k = sizeof(JOURNAL_SUFFIX) - 1;
    char id[MOTE_CONV_ID_MAX];
    unsigned lo = 0, hi;

    if (n <= k || n - k >= sizeof(id) || strcmp(name + n - k, JOURNAL_SUFFIX) != 0)
        return 0; /* not a journal */
    memcpy(id, name, n - k);
    id[n - k] = '\0';
    if (strcmp(id, x->after) <= 0)
        return 0;
    hi = x->n;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;

        if (strcmp(x->ids[mid], id) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo >= x->cap) {
        x->more = true; /* after the page */
        return 0;
    }
    if (x->n == x->cap) {
        x->n--; /* the largest leaves the page */
        x->more = true;
    }
    MOTE_ASSERT(x->n < x->cap && lo <= x->n);
    memmove(x->ids[lo + 1], x->ids[lo], (x->n - lo) * sizeof(x->ids[0]));
    memcpy(x->ids[lo], id, n - k + 1);
    x->n++;
    return 0;
}

int mote_serve_list_ids(struct serve *sv, const char *after, char (*ids)[MOTE_CONV_ID_MAX],
                        unsigned cap, unsigned *n, bool *more)
{
    const struct mote_port *p = sv->port;
    struct list_page x;
    int rc;

    memset(&x, 0, sizeof(x));
    x.after = after;
    x.ids = ids;
    x.cap = cap;
    rc = p->st_list(p->ctx, "conversations", list_name, &x);
    *n = x.n;
    *more = x.more;
    return rc < 0 && rc != MOTE_ERR_NOENT ? rc : 0;
}
