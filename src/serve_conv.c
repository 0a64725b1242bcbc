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

bool mote_serve_id_ok(const char *id, size_t n)
{
    size_t i;

    if (n == 0 || n >= MOTE_CONV_ID_MAX)
        return false;
    for (i = 0; i < n; i++) {
        char ch = id[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

void mote_serve_journal_name(char *out, const char *id)
{
    struct mote_sb sb;

    mote_sb_init(&sb, out, MOTE_STORAGE_NAME_MAX);
    mote_sb_s(&sb, "conversations/");
    mote_sb_s(&sb, id);
    mote_sb_s(&sb, ".jsonl");
}

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

        if (!cv->used)
            continue;
        used++;
        if (mote_conv_busy(cv) || cv->llm_job != 0 || cv->tool_job != 0)
            continue;
        if (best == NULL || mote_before(sv->lru[i], sv->lru[best - s->conv]))
            best = cv;
    }
    if (used < MOTE_MAX_CONVERSATIONS)
        return 0;
    if (best == NULL)
        return MOTE_ERR_FULL;
    mote_httpd_say(&sv->http, "closed idle conversation ", mote_conv_id(best), " to make room");
    return mote_conv_close(best) == 0 ? 0 : MOTE_ERR_FULL;
}

int mote_serve_load(struct serve *sv, const char *id, struct mote_conv **out, uint32_t *bad)
{
    bool repaired = false;
    int rc;

    *bad = 0;
    *out = mote_serve_find(sv, id);
    if (*out != NULL)
        return 0;
    if ((rc = mote_serve_make_room(sv)) < 0)
        return rc;
    rc = mote_conv_open(sv->conf.session, sv->conf.conv, id, out, bad, &repaired);
    if (rc < 0) {
        *out = NULL;
        return rc;
    }
    mote_serve_touch(sv, *out);
    if (repaired)
        mote_httpd_say(&sv->http, "conversation ", id,
                       " ended in a torn record: cut off, kept in ID.jsonl.torn");
    return 0;
}

void mote_serve_prune(struct serve *sv)
{
    struct mote_prune_report r;
    char line[120];
    struct mote_sb sb;
    int rc;

    if (sv->conf.keep == 0 && sv->conf.keep_bytes == 0)
        return;
    rc = mote_session_prune(sv->conf.session, sv->conf.keep, sv->conf.keep_bytes, &r);
    if (rc < 0) {
        mote_httpd_say(&sv->http, "cannot remove old conversations: ", mote_strerror(rc), NULL);
    } else if (r.count > 0) {
        mote_sb_init(&sb, line, sizeof(line));
        mote_sb_s(&sb, "removed ");
        mote_sb_u(&sb, r.count);
        mote_sb_s(&sb, r.count == 1 ? " old finished conversation (" : " old finished conversations (");
        mote_sb_u(&sb, r.bytes);
        mote_sb_s(&sb, " bytes)");
        mote_httpd_say(&sv->http, line, NULL, NULL);
    }
}

const char *mote_serve_disk_state(const struct mote_conv_info *i)
{
    if (i->damaged)
        return "damaged";
    if (i->newer)
        return "newer";
    if (i->holder != 0)
        return "locked";
    return i->state == MOTE_RECOVER_IDLE ? "idle" : "needs_recovery";
}

/* ---- recovery on start ------------------------------------------------------- */

/* mote_session_list: queues the conversations that need recovery. */
static int queue_for_recovery(void *arg, const struct mote_conv_info *i)
{
    struct serve *sv = arg;

    if (i->loaded || i->damaged || i->newer || i->holder != 0)
        return 0;
    if (i->state == MOTE_RECOVER_IDLE && !i->torn)
        return 0;
    if (sv->nrec < MOTE_SERVE_RECOVER_MAX)
        mote_str_copy(sv->rec[sv->nrec++], sizeof(sv->rec[0]), i->id);
    else
        sv->rec_more = true;
    return 0;
}

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
    bool opened = false;

    while (sv->pub->phase == MOTE_SERVE_RUN) {
        struct mote_conv *cv;
        uint32_t bad = 0;
        bool repaired = false;
        int rc = 0;

        MOTE_ASSERT(sv->nrec <= MOTE_SERVE_RECOVER_MAX);
        if (sv->nrec == 0) {
            if (!sv->rec_more || !opened)
                return;
            sv->rec_more = false;
            opened = false;
            if (mote_session_list(sv->conf.session, queue_for_recovery, sv) < 0 || sv->nrec == 0)
                return;
            continue;
        }
        if (mote_conv_find(sv->conf.session, sv->rec[0]) == NULL) {
            if (mote_serve_make_room(sv) < 0)
                return; /* every slot busy: again when one frees */
            rc = mote_conv_open(sv->conf.session, sv->conf.conv, sv->rec[0], &cv, &bad,
                                &repaired);
            if (rc == 0) {
                mote_serve_touch(sv, cv);
                opened = true;
                mote_httpd_say(&sv->http, "recovering conversation ", sv->rec[0], NULL);
            } else {
                mote_httpd_say(&sv->http, "cannot open conversation ", sv->rec[0], NULL);
                mote_httpd_say(&sv->http, "  ", mote_strerror(rc), NULL);
            }
        }
        sv->nrec--;
        memmove(sv->rec[0], sv->rec[1], sv->nrec * sizeof(sv->rec[0]));
    }
}

int mote_serve_recover(struct mote_serve *pub)
{
    struct serve *sv = mote_serve_state(pub);
    int rc;

    sv->nrec = 0;
    sv->rec_more = false;
    rc = mote_session_list(sv->conf.session, queue_for_recovery, sv);
    if (rc < 0)
        return rc;
    rc = (int)sv->nrec; /* (more, if rec_more, are listed again as these finish) */
    mote_serve_recover_more(sv);
    return rc;
}
