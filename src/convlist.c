/*
 * convlist.c - the conversations on disk: a listing with what opening
 * each would do (read only: a journal another process is writing is never
 * touched), and the removal of finished ones (retention).
 */
#include <string.h>

#include "mote/mote_agent.h"
#include "util.h"

#define DIR_NAME "conversations"
#define SUFFIX ".jsonl"

struct walk {
    struct mote_session *s;
    int (*fn)(void *arg, const struct mote_conv_info *c);
    void *arg;
    int rc;
    struct mote_journal j;
    struct mote_recovery r;
    struct mote_conv_info info;
};

static bool loaded(const struct mote_session *s, const char *id)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        if (s->conv[i].used && strcmp(s->conv[i].jr.id, id) == 0)
            return true;
    }
    return false;
}

/* The first user message's first words, on one line. */
static void first_words(struct mote_journal *j, struct mote_conv_info *c)
{
    int t;

    mote_journal_rewind(j);
    while ((t = mote_journal_next(j)) > 0) {
        const struct mote_json *js = &j->buf->json;
        const char *raw;
        size_t len, i;

        if (t == MOTE_REC_USER)
            c->user_messages++;
        if (t != MOTE_REC_USER || c->first[0] != '\0')
            continue;
        raw = mote_json_raw(js, mote_json_member(js, 0, "text"), &len);
        if (raw == NULL)
            continue;
        if (len > 3 * sizeof(c->first))
            len = 3 * sizeof(c->first); /* escapes take room: enough to fill it */
        (void)mote_json_unescape(raw, len, c->first, sizeof(c->first));
        c->first[sizeof(c->first) - 1] = '\0';
        for (i = 0; c->first[i] != '\0'; i++) {
            if ((unsigned char)c->first[i] < 0x20)
                c->first[i] = ' ';
        }
    }
}

static int one(void *arg, const char *name)
{
    struct walk *w = arg;
    struct mote_conv_info *c = &w->info;
    size_t n = strlen(name), k = sizeof(SUFFIX) - 1;
    char id[MOTE_CONV_ID_MAX];
    int rc;

    if (n <= k || n - k >= sizeof(id) || strcmp(name + n - k, SUFFIX) != 0)
        return 0; /* not a journal (a .torn copy, a temporary file) */
    memcpy(id, name, n - k);
    id[n - k] = '\0';
    memset(c, 0, sizeof(*c));
    c->id = id;
    c->loaded = loaded(w->s, id);
    w->j.buf = &w->s->jbuf;
    rc = mote_journal_peek(&w->j, w->s->port, id);
    if (rc == MOTE_ERR_NOENT)
        return 0; /* empty: a start that never wrote (counts as absent) */
    if (rc == 0) {
        c->bytes = w->j.size;
        c->torn = w->j.repaired;
        c->holder = w->j.holder;
        rc = mote_recover(&w->j, &w->r);
        if (rc == 0) {
            c->state = w->r.action;
            first_words(&w->j, c);
        }
        mote_journal_close(&w->j);
    }
    if (rc == MOTE_ERR_CORRUPT) {
        c->damaged = true;
        c->bad_line = w->j.bad_line;
    } else if (rc == MOTE_ERR_NOTREG) {
        /* A FIFO or a link where a journal should be: shown, never opened,
         * and the listing goes on (one such name stops nothing). */
        c->damaged = c->not_file = true;
    } else if (rc == MOTE_ERR_NOTSUP) {
        c->newer = true;
    } else if (rc < 0) {
        w->rc = rc; /* a read failure: the listing stops with it */
        return 1;
    }
    if (w->rc == MOTE_ERR_NOENT)
        w->rc = 0; /* mote_session_info: found */
    return w->fn(w->arg, c) != 0 ? 1 : 0;
}

int mote_session_list(struct mote_session *s, int (*fn)(void *arg, const struct mote_conv_info *c),
                      void *arg)
{
    /* Big (a recovery decision and a journal): in the caller's walk, on
     * its stack for this call only. */
    struct walk w;
    int rc;

    memset(&w, 0, sizeof(w));
    w.s = s;
    w.fn = fn;
    w.arg = arg;
    rc = s->port->st_list(s->port->ctx, DIR_NAME, one, &w);
    if (rc == MOTE_ERR_NOENT)
        return 0; /* no conversation yet */
    return rc < 0 ? rc : w.rc;
}

int mote_session_info(struct mote_session *s, const char *id,
                      int (*fn)(void *arg, const struct mote_conv_info *c), void *arg)
{
    struct walk w;
    char name[MOTE_CONV_ID_MAX + sizeof(SUFFIX)];
    size_t n = strlen(id);

    if (n == 0 || n >= MOTE_CONV_ID_MAX || strchr(id, '/') != NULL)
        return MOTE_ERR_INVAL;
    memset(&w, 0, sizeof(w));
    w.s = s;
    w.fn = fn;
    w.arg = arg;
    w.rc = MOTE_ERR_NOENT; /* until fn is called */
    memcpy(name, id, n);
    memcpy(name + n, SUFFIX, sizeof(SUFFIX));
    (void)one(&w, name);
    return w.rc;
}

int mote_session_remove(struct mote_session *s, const char *id)
{
    const struct mote_port *p = s->port;
    struct mote_journal j;
    struct mote_recovery r;
    char name[MOTE_STORAGE_NAME_MAX];
    struct mote_sb sb;
    int rc;

    if (loaded(s, id))
        return MOTE_ERR_BUSY;
    memset(&j, 0, sizeof(j));
    j.buf = &s->jbuf;
    rc = mote_journal_peek(&j, p, id);
    if (rc < 0)
        return rc == MOTE_ERR_CORRUPT || rc == MOTE_ERR_NOTSUP || rc == MOTE_ERR_NOTREG
                   ? MOTE_ERR_BUSY
                   : rc; /* kept for the user */
    /* Held while it is judged and removed: no other process opens it in
     * between (one that has it open keeps it). */
    if ((rc = mote_journal_lock(&j)) == 0 && (rc = mote_recover(&j, &r)) == 0 &&
        (r.action != MOTE_RECOVER_IDLE || j.repaired))
        rc = MOTE_ERR_BUSY; /* unfinished: recovery needs it */
    if (rc == 0) {
        mote_sb_init(&sb, name, sizeof(name));
        mote_sb_s(&sb, DIR_NAME "/");
        mote_sb_s(&sb, id);
        mote_sb_s(&sb, SUFFIX ".torn");
        if (sb.len < sizeof(name) - 1) {
            /* the repaired tails kept aside, if any */
            size_t base = sb.len;
            unsigned k;

            (void)p->st_remove(p->ctx, name);
            for (k = 2; k <= MOTE_JOURNAL_TORN_MAX; k++) {
                sb.len = base;
                name[base] = '\0';
                mote_sb_s(&sb, ".");
                mote_sb_u(&sb, k);
                if (sb.len < sizeof(name) - 1)
                    (void)p->st_remove(p->ctx, name);
            }
            sb.len = base;
        }
        name[sb.len - 5] = '\0';
        rc = p->st_remove(p->ctx, name);
    }
    mote_journal_close(&j);
    return rc;
}
