/*
 * serve_disk.c - the journals on disk as the API server knows them: a
 * summary of each (what opening it would find: its state, its size, its
 * user messages and their first words), read by one scanner a bounded
 * number of bytes per loop turn (MOTE_SERVE_SCAN_STEP) and kept in a
 * table (MOTE_SERVE_SUMMARIES) while the file's size and change time stay
 * the same. A request that needs a journal not read yet waits for it
 * (the disk turn answers it), so a long journal never holds the loop.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

#define JOURNAL_SUFFIX ".jsonl"

/* The summary of a file that is not a regular file (a FIFO, a link):
 * shown as damaged, never read. */
static const struct serve_sum not_file = {.rc = MOTE_ERR_NOTREG};

bool mote_serve_id_ok(const char *id, size_t n)
{
    if (n == 0 || n >= MOTE_CONV_ID_MAX)
        return false;
    if (!mote_word_chars(id, n))
        return false;
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

static void on_disk_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct serve *sv = arg;

    (void)loop, (void)t;
    sv->disk_timer = 0;
    if (sv->disk_turn != NULL)
        sv->disk_turn(sv);
}

void mote_serve_disk_kick(struct serve *sv)
{
    if (sv->disk_timer == 0 &&
        mote_timer_start(sv->loop, 0, on_disk_timer, sv, 0, &sv->disk_timer) < 0)
        sv->disk_timer = 0; /* no timer free: the next request asks again */
}

bool mote_serve_loading(const struct serve *sv, const char *id)
{
    return sv->load.active && strcmp(sv->load_id, id) == 0;
}

void mote_serve_disk_stop(struct serve *sv)
{
    if (sv->disk_timer != 0)
        (void)mote_timer_stop(sv->loop, sv->disk_timer);
    sv->disk_timer = 0;
    if (sv->scanning)
        mote_jscan_end(&sv->scan);
    sv->scanning = false;
    mote_conv_load_end(&sv->load);
}

/* The entry of `id`, or NULL. */
static struct serve_sum *sum_find(struct serve *sv, const char *id)
{
    unsigned i;

    for (i = 0; i < sv->nsums; i++) {
        if (sv->sums[i].id[0] != '\0' && strcmp(sv->sums[i].id, id) == 0)
            return &sv->sums[i];
    }
    return NULL;
}

void mote_serve_sum_drop(struct serve *sv, const char *id)
{
    struct serve_sum *e = sum_find(sv, id);

    if (e != NULL)
        e->id[0] = '\0';
}

/* The entry for `id`: its own, a free one, or the one used least recently. */
static struct serve_sum *sum_slot(struct serve *sv, const char *id)
{
    struct serve_sum *e = sum_find(sv, id), *old = &sv->sums[0];
    unsigned i;

    if (e != NULL)
        return e;
    if (sv->nsums < MOTE_SERVE_SUMMARIES)
        return &sv->sums[sv->nsums++];
    for (i = 0; i < MOTE_SERVE_SUMMARIES; i++) {
        if (sv->sums[i].id[0] == '\0')
            return &sv->sums[i];
        if (mote_before(sv->sums[i].used, old->used))
            old = &sv->sums[i];
    }
    return old;
}

/* The journal's storage name, its size, change time and lock holder (the
 * file is opened and closed). 0, or MOTE_ERR_NOENT (none, or empty),
 * MOTE_ERR_NOTREG, or a storage failure. */
static int file_key(struct serve *sv, const char *id, uint64_t *size, int64_t *mtime,
                    int64_t *holder)
{
    const struct mote_port *p = sv->port;
    char name[MOTE_STORAGE_NAME_MAX];
    int64_t n;
    int h;

    *holder = 0;
    *mtime = 0;
    mote_serve_journal_name(name, id);
    h = p->st_open(p->ctx, name, MOTE_ST_READ);
    if (h < 0)
        return h;
    n = p->st_size(p->ctx, h);
    if (n > 0 && MOTE_PORT_HAS(p, st_lock) &&
        p->st_lock(p->ctx, h, MOTE_LOCK_TEST, holder) == MOTE_ERR_LOCKED && *holder <= 0)
        *holder = -1;
    p->st_close(p->ctx, h);
    if (n < 0)
        return (int)n;
    if (n == 0)
        return MOTE_ERR_NOENT; /* a start that never wrote: as good as absent */
    *size = (uint64_t)n;
    if (MOTE_PORT_HAS(p, st_time) && p->st_time(p->ctx, name, mtime) < 0)
        *mtime = 0;
    return 0;
}

/* Starts the scanner on `id` (the file's key taken before: a change
 * while it reads makes the summary stale at once, never wrong). */
static void scan_start(struct serve *sv, const char *id, int64_t mtime)
{
    struct serve_sum *e;
    int rc;

    memset(&sv->scan, 0, sizeof(sv->scan));
    rc = mote_jscan_begin(&sv->scan, &sv->conf.session->jbuf, sv->port, id);
    mote_str_copy(sv->scan_id, sizeof(sv->scan_id), id);
    sv->scan_mtime = mtime;
    if (rc == 0) {
        sv->scanning = true;
        return;
    }
    if (rc == MOTE_ERR_NOENT)
        return; /* gone meanwhile: the next look says so */
    e = sum_slot(sv, id);
    memset(e, 0, sizeof(*e));
    mote_str_copy(e->id, sizeof(e->id), id);
    e->rc = rc;
    e->once = true;
    e->used = ++sv->sum_seq;
}

/* The scanner is done (rc 0) or failed: its summary is kept. */
static void scan_done(struct serve *sv, int rc)
{
    const struct mote_jscan *s = &sv->scan;
    struct serve_sum *e = sum_slot(sv, sv->scan_id);

    memset(e, 0, sizeof(*e));
    mote_str_copy(e->id, sizeof(e->id), sv->scan_id);
    e->file_size = s->check.file_size;
    e->mtime = sv->scan_mtime;
    e->used = ++sv->sum_seq;
    e->rc = rc;
    /* damage and a newer format are what the file is; a read failure
     * is told once and read again */
    e->once = rc < 0 && rc != MOTE_ERR_CORRUPT && rc != MOTE_ERR_NOTSUP;
    e->bad_line = s->j.bad_line;
    if (rc == 0) {
        e->bytes = s->j.size;
        e->torn = s->j.repaired;
        e->action = (uint8_t)s->r.action;
        e->cancelled = s->r.cancelled;
        e->user_messages = s->user_messages;
        e->usage = s->r.total;
        memcpy(e->first, s->first, sizeof(e->first));
        mote_str_copy(e->last_error, sizeof(e->last_error), s->r.last_error);
    }
    mote_jscan_end(&sv->scan);
    sv->scanning = false;
}

bool mote_serve_disk_read(struct serve *sv)
{
    int rc;

    if (!sv->scanning)
        return false;
    rc = mote_jscan_step(&sv->scan, MOTE_SERVE_SCAN_STEP);
    if (rc > 0)
        return true;
    scan_done(sv, rc);
    return false;
}

int mote_serve_sum(struct serve *sv, const char *id, const struct serve_sum **out,
                   int64_t *holder)
{
    struct serve_sum *e;
    uint64_t size = 0;
    int64_t mtime = 0;
    int rc;

    *out = NULL;
    *holder = 0;
    if (mote_serve_loading(sv, id))
        return MOTE_ERR_AGAIN; /* loaded soon (its lock is the load's, not a stranger's) */
    rc = file_key(sv, id, &size, &mtime, holder);
    if (rc == MOTE_ERR_NOTREG) {
        *out = &not_file;
        return 0;
    }
    if (rc < 0)
        return rc;
    e = sum_find(sv, id);
    if (e != NULL && e->once) {
        /* a read failure, told once */
        rc = e->rc;
        e->id[0] = '\0';
        return rc;
    }
    /* (one kept current from a loaded conversation's records says
     * nothing of what opening it would do: read again once it is closed) */
    if (e != NULL && e->file_size == size && e->mtime == mtime &&
        (!e->live || mote_conv_find(sv->conf.session, id) != NULL)) {
        e->used = ++sv->sum_seq;
        *out = e;
        return 0;
    }
    if (!sv->scanning) {
        scan_start(sv, id, mtime);
        mote_serve_disk_kick(sv);
    }
    return MOTE_ERR_AGAIN;
}

void mote_serve_sum_usage(struct serve *sv, const struct mote_conv *cv)
{
    struct serve_sum *e = sum_find(sv, mote_conv_id(cv));

    if (e != NULL && e->live) {
        e->usage.input = cv->total.input_tokens;
        e->usage.output = cv->total.output_tokens;
        e->usage.cache_read = cv->total.cache_read_tokens;
        e->usage.cache_write = cv->total.cache_write_tokens;
    }
}

/* The start of a user record as the journal writes it, and its end. */
#define USER_HEAD "{\"t\":\"user\",\"text\":\""
#define USER_TAIL "\"}"

void mote_serve_sum_record(struct serve *sv, const char *id, uint64_t off, const char *text,
                           size_t len)
{
    struct serve_sum *e = sum_find(sv, id);
    const size_t hl = sizeof(USER_HEAD) - 1, tl = sizeof(USER_TAIL) - 1;
    char name[MOTE_STORAGE_NAME_MAX];

    if (e == NULL)
        return;
    if (e->rc != 0 || e->once || e->file_size != off) {
        e->id[0] = '\0'; /* not the file it read: read it again when asked */
        return;
    }
    e->file_size = off + len + 1u;
    e->bytes = e->file_size;
    e->live = true;
    if (len >= hl + tl && memcmp(text, USER_HEAD, hl) == 0 &&
        memcmp(text + len - tl, USER_TAIL, tl) == 0) {
        e->user_messages++;
        if (e->first[0] == '\0') {
            size_t n = len - hl - tl, i;

            if (n > 3 * sizeof(e->first))
                n = 3 * sizeof(e->first); /* escapes take room: enough to fill it */
            (void)mote_json_unescape(text + hl, n, e->first, sizeof(e->first));
            e->first[sizeof(e->first) - 1] = '\0';
            for (i = 0; e->first[i] != '\0'; i++) {
                if ((unsigned char)e->first[i] < 0x20)
                    e->first[i] = ' ';
            }
        }
    }
    mote_serve_journal_name(name, id);
    if (!MOTE_PORT_HAS(sv->port, st_time) || sv->port->st_time(sv->port->ctx, name, &e->mtime) < 0)
        e->mtime = 0;
}

const char *mote_serve_sum_state(const struct serve_sum *e, int64_t holder)
{
    if (e->rc == MOTE_ERR_NOTSUP)
        return "newer";
    if (e->rc < 0)
        return "damaged";
    if (holder != 0)
        return "locked";
    if (e->action != MOTE_RECOVER_IDLE || e->torn)
        return "needs_recovery";
    if (e->last_error[0] != '\0' && !e->cancelled)
        return "error";
    return "idle";
}

bool mote_serve_sum_finished(const struct serve_sum *e, int64_t holder)
{
    return e->rc == 0 && !e->torn && holder == 0 && e->action == MOTE_RECOVER_IDLE;
}

/* ---- the names -------------------------------------------------------------- */

struct next_id {
    const char *after;
    char *out;
    bool found;
};

/* st_list: keeps the smallest journal id after the cursor. */
static int next_name(void *arg, const char *name)
{
    struct next_id *x = arg;
    size_t n = strlen(name), k = sizeof(JOURNAL_SUFFIX) - 1;
    char id[MOTE_CONV_ID_MAX];

    if (n <= k || n - k >= sizeof(id) || strcmp(name + n - k, JOURNAL_SUFFIX) != 0)
        return 0; /* not a journal (a .torn copy, a temporary file) */
    memcpy(id, name, n - k);
    id[n - k] = '\0';
    if (!mote_serve_id_ok(id, n - k) || strcmp(id, x->after) <= 0 ||
        (x->found && strcmp(id, x->out) >= 0))
        return 0;
    memcpy(x->out, id, n - k + 1);
    x->found = true;
    return 0;
}

int mote_serve_next_id(struct serve *sv, const char *after, char out[MOTE_CONV_ID_MAX])
{
    const struct mote_port *p = sv->port;
    struct next_id x = {after, out, false};
    int rc = p->st_list(p->ctx, "conversations", next_name, &x);

    if (rc < 0 && rc != MOTE_ERR_NOENT)
        return rc;
    return x.found ? 1 : 0;
}

/* ---- removal ---------------------------------------------------------------- */

int mote_serve_disk_remove(struct serve *sv, const char *id, const struct serve_sum *e)
{
    const struct mote_port *p = sv->port;
    char name[MOTE_STORAGE_NAME_MAX], torn[MOTE_STORAGE_NAME_MAX];
    int64_t holder = 0, mtime = 0, size;
    struct mote_sb sb;
    unsigned k;
    int h, rc;

    if (!mote_serve_sum_finished(e, 0))
        return MOTE_ERR_BUSY;
    mote_serve_journal_name(name, id);
    h = p->st_open(p->ctx, name, MOTE_ST_READ);
    if (h < 0)
        return h;
    /* Held while it is removed: no other process opens it in between,
     * and one that has it open keeps it. Removed only as it was read. */
    rc = MOTE_PORT_HAS(p, st_lock) ? p->st_lock(p->ctx, h, MOTE_LOCK_HOLD, &holder) : 0;
    size = p->st_size(p->ctx, h);
    if (rc == 0 && MOTE_PORT_HAS(p, st_time) && p->st_time(p->ctx, name, &mtime) < 0)
        mtime = 0;
    if (rc == 0 && (size < 0 || (uint64_t)size != e->file_size || mtime != e->mtime))
        rc = MOTE_ERR_AGAIN; /* changed since it was read */
    if (rc == 0) {
        for (k = 1; k <= MOTE_JOURNAL_TORN_MAX; k++) {
            /* the repaired tails kept aside, if any */
            mote_sb_init(&sb, torn, sizeof(torn));
            mote_sb_s(&sb, name);
            mote_sb_s(&sb, ".torn");
            if (k > 1) {
                mote_sb_s(&sb, ".");
                mote_sb_u(&sb, k);
            }
            if (sb.len < sizeof(torn) - 1)
                (void)p->st_remove(p->ctx, torn);
        }
        rc = p->st_remove(p->ctx, name);
        mote_serve_sum_drop(sv, id);
    }
    p->st_close(p->ctx, h);
    return rc;
}
