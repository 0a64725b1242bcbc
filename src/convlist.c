/*
 * convlist.c - the conversations on disk: a listing with what opening
 * each would do (in words too: mote_conv_info_say) (read only: a journal another process is writing is never
 * touched), and the removal of finished ones (retention).
 */
#include <string.h>

#include "mote/mote_agent.h"
#include "util.h"

#define DIR_NAME "conversations"
#define SUFFIX ".jsonl"

_Static_assert(sizeof(((struct mote_conv_info *)0)->first) == MOTE_JSCAN_FIRST,
               "a listing's first words are a scan's");

struct walk {
    struct mote_session *s;
    int (*fn)(void *arg, const struct mote_conv_info *c);
    void *arg;
    int rc;
    struct mote_jscan scan;
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

/* Reads a scan to its end (a listing here is one call). */
static int scan_all(struct mote_jscan *sc)
{
    int rc;

    while ((rc = mote_jscan_step(sc, MOTE_JOURNAL_LINE_MAX * 16)) > 0)
        ;
    return rc;
}

/* One file of the conversations directory: its journal's row, if it is one. */
static int list_file(void *arg, const char *name)
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
    if (MOTE_PORT_HAS(w->s->port, st_time)) {
        char path[MOTE_STORAGE_NAME_MAX];
        struct mote_sb sb;

        mote_sb_init(&sb, path, sizeof(path));
        mote_sb_s(&sb, DIR_NAME "/");
        mote_sb_s(&sb, name);
        if (sb.len < sizeof(path) - 1 &&
            w->s->port->st_time(w->s->port->ctx, path, &c->mtime) < 0)
            c->mtime = 0;
    }
    rc = mote_jscan_begin(&w->scan, &w->s->jbuf, w->s->port, id);
    if (rc == MOTE_ERR_NOENT)
        return 0; /* empty: a start that never wrote (counts as absent) */
    if (rc == 0) {
        c->holder = w->scan.j.holder;
        rc = scan_all(&w->scan);
        if (rc == 0) {
            c->bytes = w->scan.j.size;
            c->torn = w->scan.j.repaired;
            c->state = w->scan.r.action;
            c->user_messages = w->scan.user_messages;
            c->calls = w->scan.r.calls_only;
            memcpy(c->first, w->scan.first, sizeof(c->first));
        }
        mote_jscan_end(&w->scan);
    }
    if (rc == MOTE_ERR_CORRUPT) {
        c->damaged = true;
        c->bad_line = w->scan.j.bad_line;
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
    rc = s->port->st_list(s->port->ctx, DIR_NAME, list_file, &w);
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
    (void)list_file(&w, name);
    return w.rc;
}

int mote_session_remove(struct mote_session *s, const char *id)
{
    const struct mote_port *p = s->port;
    /* Big (a recovery decision): on the stack for this call only. */
    struct mote_jscan sc;
    char name[MOTE_STORAGE_NAME_MAX];
    struct mote_sb sb;
    int rc;

    if (loaded(s, id))
        return MOTE_ERR_BUSY;
    memset(&sc, 0, sizeof(sc));
    rc = mote_jscan_begin(&sc, &s->jbuf, p, id);
    /* Held while it is judged and removed: no other process opens it in
     * between (one that has it open keeps it). */
    if (rc == 0 && (rc = mote_journal_lock(&sc.j)) == 0 && (rc = scan_all(&sc)) == 0 &&
        (sc.r.action != MOTE_RECOVER_IDLE || sc.j.repaired))
        rc = MOTE_ERR_BUSY; /* unfinished: recovery needs it */
    if (rc == MOTE_ERR_CORRUPT || rc == MOTE_ERR_NOTSUP || rc == MOTE_ERR_NOTREG)
        rc = MOTE_ERR_BUSY; /* kept for the user */
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
    mote_jscan_end(&sc);
    return rc;
}

bool mote_conv_info_finished(const struct mote_conv_info *c)
{
    return !c->loaded && !c->damaged && !c->newer && !c->torn && c->holder == 0 &&
           c->state == MOTE_RECOVER_IDLE;
}

/* ---- retention ---- */

struct tally {
    const struct mote_port *p;
    unsigned long count;
    uint64_t bytes;
};

struct prune {
    struct mote_session *s;
    unsigned long count; /* journals (the cheap pass) or finished ones */
    uint64_t bytes;
    unsigned n;          /* the oldest finished ones, oldest first */
    struct {
        char id[MOTE_CONV_ID_MAX];
        int64_t mtime;
        uint64_t bytes;
    } old[MOTE_PRUNE_BATCH];
};

/* st_list: a journal's size counted (an empty file is none). */
static int tally(void *arg, const char *name)
{
    struct tally *t = arg;
    size_t n = strlen(name), k = sizeof(SUFFIX) - 1;
    char path[MOTE_STORAGE_NAME_MAX];
    struct mote_sb sb;
    int64_t size;
    int h;

    if (n <= k || strcmp(name + n - k, SUFFIX) != 0)
        return 0;
    mote_sb_init(&sb, path, sizeof(path));
    mote_sb_s(&sb, DIR_NAME "/");
    mote_sb_s(&sb, name);
    if (sb.len >= sizeof(path) - 1 || (h = t->p->st_open(t->p->ctx, path, MOTE_ST_READ)) < 0)
        return 0; /* not one the listing would show either */
    size = t->p->st_size(t->p->ctx, h);
    t->p->st_close(t->p->ctx, h);
    if (size > 0) {
        t->count++;
        t->bytes += (uint64_t)size;
    }
    return 0;
}

int mote_session_tally(const struct mote_session *s, unsigned long *count, uint64_t *bytes)
{
    struct tally t = {.p = s->port};
    int rc = s->port->st_list(s->port->ctx, DIR_NAME, tally, &t);

    *count = t.count;
    *bytes = t.bytes;
    return rc;
}

static bool before(const struct prune *w, unsigned i, const struct mote_conv_info *c)
{
    return c->mtime < w->old[i].mtime ||
           (c->mtime == w->old[i].mtime && strcmp(c->id, w->old[i].id) < 0);
}

/* The full pass: the finished ones counted, the oldest noted. */
static int note(void *arg, const struct mote_conv_info *c)
{
    struct prune *w = arg;
    unsigned at = w->n;

    if (!mote_conv_info_finished(c))
        return 0;
    w->count++;
    w->bytes += c->bytes;
    while (at > 0 && before(w, at - 1, c))
        at--;
    if (at >= MOTE_PRUNE_BATCH)
        return 0;
    if (w->n < MOTE_PRUNE_BATCH)
        w->n++;
    memmove(&w->old[at + 1], &w->old[at], (w->n - 1 - at) * sizeof(w->old[0]));
    mote_str_copy(w->old[at].id, sizeof(w->old[at].id), c->id);
    w->old[at].mtime = c->mtime;
    w->old[at].bytes = c->bytes;
    return 0;
}

static bool over(const struct prune *w, unsigned long keep, uint64_t keep_bytes)
{
    return (keep > 0 && w->count > keep) || (keep_bytes > 0 && w->bytes > keep_bytes);
}

int mote_session_prune(struct mote_session *s, unsigned long keep, uint64_t keep_bytes,
                       struct mote_prune_report *out)
{
    struct prune w;
    unsigned i, removed = 1;
    int rc;

    memset(out, 0, sizeof(*out));
    if (keep == 0 && keep_bytes == 0)
        return 0;
    memset(&w, 0, sizeof(w));
    w.s = s;
    rc = mote_session_tally(s, &w.count, &w.bytes);
    if (rc == MOTE_ERR_NOENT || (rc == 0 && !over(&w, keep, keep_bytes)))
        return 0; /* within the limits: no journal needs reading */
    if (rc < 0)
        return rc;
    /* Each pass removes the oldest it noted while the rest is over; more
     * than a batch over takes more passes. */
    while (removed > 0) {
        w.count = 0;
        w.bytes = 0;
        w.n = 0;
        removed = 0;
        if ((rc = mote_session_list(s, note, &w)) < 0)
            return rc;
        for (i = 0; i < w.n && over(&w, keep, keep_bytes); i++) {
            rc = mote_session_remove(s, w.old[i].id);
            if (rc == MOTE_ERR_BUSY || rc == MOTE_ERR_LOCKED || rc == MOTE_ERR_NOENT)
                continue; /* changed since it was listed: it stays */
            if (rc < 0)
                return rc;
            w.count--;
            w.bytes -= w.old[i].bytes;
            out->count++;
            out->bytes += w.old[i].bytes;
            removed++;
        }
        if (!over(&w, keep, keep_bytes))
            break;
    }
    return 0;
}

const char *mote_conv_info_say(const struct mote_conv_info *c, char *buf, size_t cap)
{
    struct mote_sb sb;

    mote_sb_init(&sb, buf, cap);
    if (c->not_file)
        mote_sb_s(&sb, "not a regular file");
    else if (c->damaged)
        mote_sb_num(&sb, "damaged (line ", c->bad_line, ")");
    else if (c->newer)
        mote_sb_s(&sb, "newer format");
    else if (c->loaded)
        mote_sb_s(&sb, "open here");
    else if (c->holder > 0)
        mote_sb_num(&sb, "open (pid ", (uint64_t)c->holder, ")");
    else if (c->holder != 0)
        mote_sb_s(&sb, "open elsewhere");
    else if (c->state == MOTE_RECOVER_TOOL_INTERRUPTED)
        mote_sb_s(&sb, "interrupted tool");
    else if (c->state != MOTE_RECOVER_IDLE || c->torn)
        mote_sb_s(&sb, "needs recovery");
    else
        mote_sb_s(&sb, "idle");
    return buf;
}
