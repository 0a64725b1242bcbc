/*
 * serve_conv.c - the API server's loaded conversations: which session
 * slot each holds (the least recently used idle one makes room), loading
 * one from disk when a request needs it, retention, and the recovery of
 * interrupted conversations on start.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

void mote_serve_touch(struct serve *sv, const struct mote_conv *cv)
{
    size_t i = (size_t)(cv - sv->conf.session->conv);

    if (i < MOTE_MAX_CONVERSATIONS)
        sv->lru[i] = ++sv->lru_seq;
}

struct mote_conv *mote_serve_find(struct serve *sv, const char *id)
{
    struct mote_conv *cv = mote_conv_find(sv->conf.session, id);

    if (cv != NULL)
        mote_serve_touch(sv, cv);
    return cv;
}

int mote_serve_make_room(struct serve *sv)
{
    struct mote_session *s = sv->conf.session;
    struct mote_conv *best = NULL;
    unsigned i, used = 0;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *cv = &s->conv[i];

        if (!cv->used && !cv->loading)
            continue;
        used++; /* (a slot a load holds counts, and is never closed) */
        if (cv->loading || mote_conv_busy(cv) || cv->llm_job != 0 || cv->tool_job != 0)
            continue;
        if (best == NULL || mote_before(sv->lru[i], sv->lru[best - s->conv]))
            best = cv;
    }
    if (used < MOTE_MAX_CONVERSATIONS)
        return 0;
    if (best == NULL)
        return MOTE_ERR_FULL;
    mote_httpd_say(&sv->http, "closed idle conversation ", mote_conv_id(best), " to make room");
    mote_serve_sum_usage(sv, best);
    return mote_conv_close(best) == 0 ? 0 : MOTE_ERR_FULL;
}

/* The load ended: `rc` 0 (`cv` open) or its failure. One the recovery
 * queue asked for leaves the queue; a failure of another is kept for the
 * request that waited for it. */
static void load_done(struct serve *sv, int rc, struct mote_conv *cv, uint32_t bad,
                      bool repaired)
{
    const char *id = sv->load_id;
    bool queued = sv->nrec > 0 && strcmp(sv->rec[0], id) == 0;

    sv->load_rc = 0;
    if (rc == 0) {
        mote_serve_touch(sv, cv);
        if (repaired)
            mote_httpd_say(&sv->http, "conversation ", id,
                           " ended in a torn record: cut off, kept in ID.jsonl.torn");
        if (queued)
            mote_httpd_say(&sv->http, "recovering conversation ", id, NULL);
    } else if (queued) {
        mote_httpd_say(&sv->http, "cannot open conversation ", id, NULL);
        mote_httpd_say(&sv->http, "  ", mote_strerror(rc), NULL);
    } else {
        sv->load_rc = rc;
        sv->load_bad = bad;
    }
    if (queued) {
        sv->rec_opened = sv->rec_opened || rc == 0;
        sv->nrec--;
        memmove(sv->rec[0], sv->rec[1], sv->nrec * sizeof(sv->rec[0]));
        sv->rec_next = true; /* the next one, from a disk turn */
        mote_serve_disk_kick(sv);
    }
}

/* A budget of the load under way. Returns 1 while it goes on, else what
 * it ended with (load_done has taken it). */
static int load_step(struct serve *sv)
{
    struct mote_conv *cv = NULL;
    uint32_t bad = 0;
    bool repaired = false;
    int rc = mote_conv_load_step(&sv->load, MOTE_SERVE_SCAN_STEP, &cv, &bad, &repaired);

    if (rc > 0)
        return 1;
    load_done(sv, rc, cv, bad, repaired);
    return rc;
}

bool mote_serve_load_turn(struct serve *sv)
{
    return sv->load.active && load_step(sv) > 0;
}

/* Begins loading `id` and reads its first budget: 0 (loaded at once),
 * MOTE_ERR_AGAIN (the disk turns go on with it), or its failure. */
static int load_start(struct serve *sv, const char *id)
{
    int rc = mote_serve_make_room(sv);

    if (rc == 0)
        rc = mote_conv_load_begin(sv->conf.session, sv->conf.conv, id, &sv->load);
    mote_str_copy(sv->load_id, sizeof(sv->load_id), id);
    if (rc < 0) {
        load_done(sv, rc, NULL, 0, false);
        return rc;
    }
    rc = load_step(sv);
    if (rc > 0) {
        mote_serve_disk_kick(sv);
        return MOTE_ERR_AGAIN;
    }
    return rc;
}

int mote_serve_load(struct serve *sv, const char *id, struct mote_conv **out, uint32_t *bad)
{
    int rc;

    *bad = 0;
    *out = mote_serve_find(sv, id);
    if (*out != NULL)
        return 0;
    if (sv->load.active)
        return MOTE_ERR_AGAIN; /* this one, or another: one at a time */
    if (sv->load_rc != 0 && strcmp(sv->load_id, id) == 0) {
        /* its load, begun for another request, failed: told once */
        rc = sv->load_rc;
        *bad = sv->load_bad;
        sv->load_rc = 0;
        return rc;
    }
    rc = load_start(sv, id);
    if (rc < 0) {
        if (rc != MOTE_ERR_AGAIN) {
            *bad = sv->load_bad;
            sv->load_rc = 0; /* told now */
        }
        return rc;
    }
    *out = mote_serve_find(sv, id);
    return *out != NULL ? 0 : MOTE_ERR_AGAIN;
}

/* ---- the walk: retention and the recovery queue --------------------------------- */

/* Journals a turn of the walk looks at when their summaries are known. */
#define WALK_PER_TURN 32

static bool over(const struct serve *sv, unsigned long count, uint64_t bytes)
{
    return (sv->conf.keep > 0 && count > sv->conf.keep) ||
           (sv->conf.keep_bytes > 0 && bytes > sv->conf.keep_bytes);
}

void mote_serve_walk_start(struct serve *sv, bool prune, bool recover)
{
    struct serve_walk *w = &sv->walk;

    if (w->active) {
        w->again_prune = w->again_prune || prune;
        w->again_recover = w->again_recover || recover;
        return;
    }
    memset(w, 0, sizeof(*w));
    w->active = true;
    w->prune = prune;
    w->recover = recover;
    mote_serve_disk_kick(sv);
}

void mote_serve_prune(struct serve *sv)
{
    unsigned long count;
    uint64_t bytes;
    int rc;

    if (sv->conf.keep == 0 && sv->conf.keep_bytes == 0)
        return;
    rc = mote_session_tally(sv->conf.session, &count, &bytes);
    if (rc < 0 && rc != MOTE_ERR_NOENT)
        mote_httpd_say(&sv->http, "cannot remove old conversations: ", mote_strerror(rc), NULL);
    else if (rc == 0 && over(sv, count, bytes))
        mote_serve_walk_start(sv, true, false); /* the journals must be read: in turns */
}

/* A journal the walk has a summary of. */
static void visit(struct serve *sv, const char *id, const struct serve_sum *e, int64_t holder)
{
    struct serve_walk *w = &sv->walk;
    unsigned at;

    if (w->recover && e->rc == 0 && holder == 0 &&
        (e->action != MOTE_RECOVER_IDLE || e->torn) && !mote_serve_queued(sv, id)) {
        if (sv->nrec < MOTE_SERVE_RECOVER_MAX)
            mote_str_copy(sv->rec[sv->nrec++], sizeof(sv->rec[0]), id);
        else
            sv->rec_more = true;
    }
    if (!w->prune || !mote_serve_sum_finished(e, holder))
        return;
    w->count++;
    w->bytes += e->bytes;
    /* the oldest by last change (then by id), oldest first */
    at = w->n;
    while (at > 0 && (e->mtime < w->old[at - 1].mtime ||
                      (e->mtime == w->old[at - 1].mtime && strcmp(id, w->old[at - 1].id) < 0)))
        at--;
    if (at >= MOTE_PRUNE_BATCH)
        return;
    if (w->n < MOTE_PRUNE_BATCH)
        w->n++;
    memmove(&w->old[at + 1], &w->old[at], (w->n - 1 - at) * sizeof(w->old[0]));
    mote_str_copy(w->old[at].id, sizeof(w->old[at].id), id);
    w->old[at].mtime = e->mtime;
    w->old[at].bytes = e->bytes;
    w->old[at].file_size = e->file_size;
}

/* The walk saw every journal: the oldest finished ones go while the rest
 * is over the limits. Returns true if another pass is needed. */
static bool prune_end(struct serve *sv)
{
    struct serve_walk *w = &sv->walk;
    bool removed = false;
    unsigned i;

    for (i = 0; i < w->n && over(sv, w->count, w->bytes); i++) {
        struct serve_sum e;
        int rc;

        if (mote_conv_find(sv->conf.session, w->old[i].id) != NULL)
            continue; /* loaded since: it stays */
        memset(&e, 0, sizeof(e));
        e.file_size = w->old[i].file_size;
        e.mtime = w->old[i].mtime;
        rc = mote_serve_disk_remove(sv, w->old[i].id, &e);
        if (rc == MOTE_ERR_BUSY || rc == MOTE_ERR_LOCKED || rc == MOTE_ERR_NOENT ||
            rc == MOTE_ERR_AGAIN)
            continue; /* changed since it was read: it stays */
        if (rc < 0) {
            mote_httpd_say(&sv->http, "cannot remove old conversations: ", mote_strerror(rc),
                           NULL);
            return false;
        }
        w->count--;
        w->bytes -= w->old[i].bytes;
        w->removed++;
        w->removed_bytes += w->old[i].bytes;
        removed = true;
    }
    return removed && over(sv, w->count, w->bytes);
}

/* The end of a pass over the journals. */
static void walk_end(struct serve *sv)
{
    struct serve_walk *w = &sv->walk;
    bool prune = w->again_prune, recover = w->again_recover;
    char line[120];
    struct mote_sb sb;

    if (w->prune && prune_end(sv)) {
        /* more than a batch over: another pass (the count kept for the log) */
        memset(w->cursor, 0, sizeof(w->cursor));
        w->count = 0;
        w->bytes = 0;
        w->n = 0;
        return;
    }
    if (w->prune && w->removed > 0) {
        mote_sb_init(&sb, line, sizeof(line));
        mote_sb_s(&sb, "removed ");
        mote_sb_u(&sb, w->removed);
        mote_sb_s(&sb, w->removed == 1 ? " old finished conversation ("
                                       : " old finished conversations (");
        mote_sb_u(&sb, w->removed_bytes);
        mote_sb_s(&sb, " bytes)");
        mote_httpd_say(&sv->http, line, NULL, NULL);
    }
    w->active = false;
    if (w->recover && !w->sync)
        mote_serve_recover_more(sv); /* may ask for another pass */
    if (prune || recover)
        mote_serve_walk_start(sv, prune, recover);
}

bool mote_serve_walk_turn(struct serve *sv)
{
    struct serve_walk *w = &sv->walk;
    unsigned k;

    for (k = 0; w->active && k < WALK_PER_TURN; k++) {
        char id[MOTE_CONV_ID_MAX];
        const struct serve_sum *e = NULL;
        int64_t holder = 0;
        int rc = mote_serve_next_id(sv, w->cursor, id);

        if (rc < 0) {
            mote_httpd_say(&sv->http, "cannot list the conversations: ", mote_strerror(rc), NULL);
            w->active = false;
            break;
        }
        if (rc == 0) {
            walk_end(sv);
            continue;
        }
        if (mote_conv_find(sv->conf.session, id) == NULL) {
            rc = mote_serve_sum(sv, id, &e, &holder);
            if (rc == MOTE_ERR_AGAIN)
                return true; /* being read: on a later turn */
            if (rc == 0)
                visit(sv, id, e, holder);
        }
        mote_str_copy(w->cursor, sizeof(w->cursor), id); /* loaded ones: neither */
    }
    return w->active;
}

/* Drives the walk to its end at once: for the start, before the loop
 * serves anyone. */
static void walk_finish(struct serve *sv)
{
    sv->walk.sync = true;
    while (sv->walk.active) {
        while (mote_serve_disk_read(sv))
            ;
        (void)mote_serve_walk_turn(sv);
    }
}

void mote_serve_prune_now(struct serve *sv)
{
    mote_serve_prune(sv);
    walk_finish(sv);
}

/* ---- recovery on start ------------------------------------------------------- */

bool mote_serve_queued(const struct serve *sv, const char *id)
{
    unsigned i;

    for (i = 0; i < sv->nrec; i++) {
        if (strcmp(sv->rec[i], id) == 0)
            return true;
    }
    return false;
}

void mote_serve_recover_more(struct serve *sv)
{
    unsigned k;

    /* (each pass loads one, or drops one already loaded: bounded) */
    for (k = 0; k <= MOTE_SERVE_RECOVER_MAX && sv->pub->phase == MOTE_SERVE_RUN; k++) {
        MOTE_ASSERT(sv->nrec <= MOTE_SERVE_RECOVER_MAX);
        if (sv->nrec == 0) {
            if (sv->rec_more && sv->rec_opened) {
                /* more than the queue held: list again, in turns */
                sv->rec_more = false;
                sv->rec_opened = false;
                mote_serve_walk_start(sv, false, true);
            }
            return;
        }
        if (mote_conv_find(sv->conf.session, sv->rec[0]) != NULL) {
            sv->nrec--; /* loaded meanwhile: its recovery ran */
            memmove(sv->rec[0], sv->rec[1], sv->nrec * sizeof(sv->rec[0]));
            continue;
        }
        if (sv->load.active)
            return; /* one load at a time: the queue goes on when it ends */
        if (mote_serve_make_room(sv) < 0)
            return; /* every slot busy: again when one frees */
        if (load_start(sv, sv->rec[0]) == MOTE_ERR_AGAIN)
            return; /* a long one: the disk turns load it, then the queue goes on */
        /* (load_done took it off the queue) */
    }
}

int mote_serve_recover(struct mote_serve *pub)
{
    struct serve *sv = mote_serve_state(pub);
    int rc;

    sv->nrec = 0;
    sv->rec_more = false;
    sv->rec_opened = false;
    mote_serve_walk_start(sv, false, true);
    walk_finish(sv);
    rc = (int)sv->nrec; /* (more, if rec_more, are listed again as these finish) */
    mote_serve_recover_more(sv);
    return rc;
}
