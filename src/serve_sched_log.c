/*
 * serve_sched_log.c - the schedules' two files (serve_sched.h): the
 * occurrences' journal, STATE/schedules.jsonl (append-only JSON Lines: a
 * schedule armed, an occurrence claimed - synced before anything of it
 * happens -, started, done, a range skipped with its reason, a jump of
 * the clock; rewritten as one state line per schedule when it grows), and
 * the definitions' file, STATE/schedules.json (replaced atomically), with
 * the fixed ones a configuration file gives.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_sched.h"
#include "util.h"

#define LOG_FILE "schedules.jsonl"
#define DEFS_FILE "schedules.json"

void mote_sched_say(struct sched *q, const char *id, const char *a, const char *b, const char *c)
{
    char line[400];
    struct mote_sb sb;

    if (q->sv->conf.log == NULL)
        return;
    mote_sb_init(&sb, line, sizeof(line));
    mote_sb_s(&sb, "schedule ");
    if (id != NULL) {
        mote_sb_s(&sb, id);
        mote_sb_s(&sb, ": ");
    }
    mote_sb_join(&sb, a, b, c);
    q->sv->conf.log(q->sv->conf.log_arg, line);
}

static struct sched_slot *slot_of(struct sched *q, const char *id)
{
    unsigned i;

    for (i = 0; i < MOTE_SCHED_MAX; i++) {
        if (q->slots[i].used && strcmp(q->slots[i].def.id, id) == 0)
            return &q->slots[i];
    }
    return NULL;
}

/* ---- writing ------------------------------------------------------------------------ */

static void rec_open(struct sched *q, struct mote_sb *k, struct mote_jw *w, const char *t,
                     const struct sched_slot *s)
{
    mote_sb_init(k, q->line, sizeof(q->line) - 1);
    mote_jw_init(w, mote_sb_put, k);
    mote_jw_obj(w);
    mote_jw_kstr(w, "t", t);
    if (s != NULL) {
        mote_jw_kstr(w, "s", s->def.id);
    }
}

static void num(struct mote_jw *w, const char *key, int64_t v)
{
    mote_jw_key(w, key);
    mote_jw_int(w, v);
}

/* `at_ms` as "ms", null when not known. */
static void ms_of(struct mote_jw *w, int64_t at_ms)
{
    mote_jw_key(w, "ms");
    if (at_ms > 0)
        mote_jw_int(w, at_ms);
    else
        mote_jw_null(w);
}

/* Appends the record built (closing it), synced if `sync`. A failure
 * stops the runner: nothing more is claimed. */
static int rec_end(struct sched *q, struct mote_sb *k, struct mote_jw *w, bool sync)
{
    const struct mote_port *p = q->sv->port;
    int rc;

    mote_jw_obj_end(w);
    if (w->err != 0)
        return MOTE_ERR_TOO_LARGE;
    if (q->err < 0 || q->h < 0)
        return q->err < 0 ? q->err : MOTE_ERR_BADF;
    q->line[k->len] = '\n';
    rc = p->st_append(p->ctx, q->h, q->line, k->len + 1);
    if (rc >= 0 && (size_t)rc != k->len + 1)
        rc = MOTE_ERR_NOSPC;
    if (rc >= 0 && sync)
        rc = p->st_sync(p->ctx, q->h);
    if (rc < 0) {
        (void)p->st_truncate(p->ctx, q->h, q->size);
        q->err = rc;
        mote_sched_say(q, NULL, "the journal STATE/" LOG_FILE " cannot be written (",
                       mote_strerror(rc), "): no occurrence starts any more");
        return rc;
    }
    q->size += k->len + 1;
    return 0;
}

int mote_sched_log_arm(struct sched *q, struct sched_slot *s, int64_t at_ms)
{
    struct mote_sb k;
    struct mote_jw w;

    rec_open(q, &k, &w, "arm", s);
    num(&w, "k", s->def.kind == MOTE_SCHED_EVERY ? (int64_t)s->last_n : s->cursor);
    ms_of(&w, at_ms);
    return rec_end(q, &k, &w, true);
}

int mote_sched_log_claim(struct sched *q, struct sched_slot *s)
{
    struct mote_sb k;
    struct mote_jw w;

    rec_open(q, &k, &w, "claim", s);
    num(&w, "k", s->open_key);
    mote_jw_key(&w, "at");
    if (s->open_at > 0)
        mote_jw_int(&w, s->open_at);
    else
        mote_jw_null(&w);
    ms_of(&w, s->def.kind == MOTE_SCHED_EVERY ? s->last_ms : 0);
    mote_jw_kstr(&w, "conv", s->open_conv);
    /* durable before anything of the occurrence happens */
    return rec_end(q, &k, &w, true);
}

int mote_sched_log_start(struct sched *q, struct sched_slot *s)
{
    struct mote_sb k;
    struct mote_jw w;

    rec_open(q, &k, &w, "start", s);
    num(&w, "k", s->open_key);
    return rec_end(q, &k, &w, false); /* (lost: the conversation's request id says it) */
}

int mote_sched_log_done(struct sched *q, struct sched_slot *s, const char *outcome)
{
    struct mote_sb k;
    struct mote_jw w;

    rec_open(q, &k, &w, "done", s);
    num(&w, "k", s->open_key);
    mote_jw_kstr(&w, "outcome", outcome);
    num(&w, "in", (int64_t)s->open_usage.input);
    num(&w, "out", (int64_t)s->open_usage.output);
    num(&w, "cr", (int64_t)s->open_usage.cache_read);
    num(&w, "cw", (int64_t)s->open_usage.cache_write);
    return rec_end(q, &k, &w, false); /* (lost: the conversation's state says it again) */
}

int mote_sched_log_skip(struct sched *q, struct sched_slot *s, int64_t from, int64_t to,
                        uint64_t count, const char *reason)
{
    struct mote_sb k;
    struct mote_jw w;

    rec_open(q, &k, &w, "skip", s);
    num(&w, "from", from);
    num(&w, "to", to);
    num(&w, "count", (int64_t)count);
    if (s->def.kind == MOTE_SCHED_EVERY)
        ms_of(&w, s->last_ms);
    mote_jw_kstr(&w, "reason", reason);
    return rec_end(q, &k, &w, true);
}

int mote_sched_log_clock(struct sched *q, int64_t from_ms, int64_t to_ms, int64_t by_ms)
{
    struct mote_sb k;
    struct mote_jw w;

    rec_open(q, &k, &w, "clock", NULL);
    num(&w, "from", from_ms);
    num(&w, "to", to_ms);
    num(&w, "by_ms", by_ms);
    return rec_end(q, &k, &w, true);
}

/* ---- replay ---------------------------------------------------------------------------- */

static int64_t get(const struct sched *q, const char *key, int64_t dflt)
{
    int64_t v;

    return mote_json_int(&q->json, mote_json_member(&q->json, 0, key), &v) == 0 ? v : dflt;
}

static int64_t max64(int64_t a, int64_t b)
{
    return a > b ? a : b;
}

static void replay_line(struct sched *q)
{
    const struct mote_json *j = &q->json;
    int t = mote_json_member(j, 0, "t");
    char id[MOTE_SCHED_ID_MAX];
    struct sched_slot *s;
    int64_t k = get(q, "k", 0), ms = get(q, "ms", 0);
    bool every;

    if (mote_json_eq(j, t, "clock")) {
        q->jumps++;
        return;
    }
    if (mote_json_str(j, mote_json_member(j, 0, "s"), id, sizeof(id)) <= 0 ||
        (s = slot_of(q, id)) == NULL)
        return; /* a schedule deleted since */
    every = s->def.kind == MOTE_SCHED_EVERY;
    if (mote_json_eq(j, t, "arm")) {
        if (every) {
            s->last_ms = ms;
            s->last_n = (uint64_t)max64((int64_t)s->last_n, k);
        } else {
            s->cursor = k;
            s->has_cursor = true;
        }
    } else if (mote_json_eq(j, t, "claim")) {
        s->open = SO_CLAIMED;
        s->open_key = k;
        s->open_at = get(q, "at", 0);
        s->open_usage = (struct mote_rec_usage){0, 0, 0, 0};
        (void)mote_json_str(j, mote_json_member(j, 0, "conv"), s->open_conv,
                            sizeof(s->open_conv));
        if (every) {
            s->last_n = (uint64_t)max64((int64_t)s->last_n, k);
            s->last_ms = ms;
        } else {
            s->cursor = s->has_cursor ? max64(s->cursor, k) : k;
            s->has_cursor = true;
        }
    } else if (mote_json_eq(j, t, "start")) {
        if (s->open != SO_NONE && s->open_key == k)
            s->open = SO_STARTED;
    } else if (mote_json_eq(j, t, "done")) {
        if (s->open != SO_NONE && s->open_key == k) {
            s->open = SO_NONE;
            (void)mote_json_str(j, mote_json_member(j, 0, "outcome"), s->last_outcome,
                                sizeof(s->last_outcome));
            if (strcmp(s->last_outcome, "ok") == 0)
                s->runs++;
            else
                s->failed++;
            s->has_last = true;
            s->last_key = k;
            s->last_at = s->open_at;
            s->usage.input += (uint64_t)get(q, "in", 0);
            s->usage.output += (uint64_t)get(q, "out", 0);
            s->usage.cache_read += (uint64_t)get(q, "cr", 0);
            s->usage.cache_write += (uint64_t)get(q, "cw", 0);
        }
    } else if (mote_json_eq(j, t, "skip")) {
        int64_t from = get(q, "from", 0), to = get(q, "to", 0);

        s->skips += (uint64_t)get(q, "count", 0);
        if (s->open != SO_NONE && s->open_key >= from && s->open_key <= to)
            s->open = SO_NONE;
        if (every) {
            s->last_n = (uint64_t)max64((int64_t)s->last_n, to);
            if (ms > 0)
                s->last_ms = ms;
        } else {
            s->cursor = s->has_cursor ? max64(s->cursor, to) : to;
            s->has_cursor = true;
        }
    } else if (mote_json_eq(j, t, "state")) {
        s->has_cursor = get(q, "has_cursor", 0) != 0;
        s->cursor = get(q, "cursor", 0);
        s->last_n = (uint64_t)get(q, "n", 0);
        s->last_ms = ms;
        s->runs = (uint64_t)get(q, "runs", 0);
        s->skips = (uint64_t)get(q, "skips", 0);
        s->failed = (uint64_t)get(q, "failed", 0);
        s->usage.input = (uint64_t)get(q, "in", 0);
        s->usage.output = (uint64_t)get(q, "out", 0);
        s->usage.cache_read = (uint64_t)get(q, "cr", 0);
        s->usage.cache_write = (uint64_t)get(q, "cw", 0);
        s->has_last = get(q, "last_key", -1) >= 0;
        s->last_key = get(q, "last_key", 0);
        s->last_at = get(q, "last_at", 0);
        (void)mote_json_str(j, mote_json_member(j, 0, "outcome"), s->last_outcome,
                            sizeof(s->last_outcome));
    }
}

int mote_sched_log_open(struct sched *q)
{
    const struct mote_port *p = q->sv->port;
    uint64_t off = 0;
    int64_t sz;

    q->h = p->st_open(p->ctx, LOG_FILE, MOTE_ST_READ | MOTE_ST_APPEND | MOTE_ST_CREATE);
    if (q->h < 0)
        return q->h;
    sz = p->st_size(p->ctx, q->h);
    if (sz < 0)
        return (int)sz;
    q->size = (uint64_t)sz;
    while (off < q->size) {
        size_t want = q->size - off < sizeof(q->line) ? (size_t)(q->size - off) : sizeof(q->line);
        int got = p->st_read(p->ctx, q->h, off, q->line, want);
        char *nl;
        size_t n;

        if (got <= 0)
            return got < 0 ? got : MOTE_ERR_IO;
        nl = memchr(q->line, '\n', (size_t)got);
        if (nl == NULL) {
            if (off + (uint64_t)got >= q->size) {
                /* a record torn by a power cut: never acted on (a claim is
                 * synced before its occurrence starts) */
                mote_sched_say(q, NULL, "the journal's last line was torn (a power cut): cut "
                                        "off", NULL, NULL);
                q->size = off;
                return p->st_truncate(p->ctx, q->h, off);
            }
            off += (uint64_t)got; /* longer than any record: not ours */
            continue;
        }
        n = (size_t)(nl - q->line);
        off += n + 1;
        if (mote_json_parse(&q->json, q->line, n) > 0 &&
            mote_json_type_of(&q->json, 0) == MOTE_JSON_OBJECT)
            replay_line(q);
    }
    return 0;
}

void mote_sched_log_close(struct sched *q)
{
    if (q->h >= 0)
        q->sv->port->st_close(q->sv->port->ctx, q->h);
    q->h = -1;
}

/* ---- the rewrite: a state line per schedule ------------------------------------------- */

struct tidy {
    struct sched *q;
    unsigned i;
};

static int tidy_line(void *arg, char *buf, size_t cap)
{
    struct tidy *t = arg;
    struct sched *q = t->q;
    struct mote_sb k;
    struct mote_jw w;

    while (t->i < MOTE_SCHED_MAX && !q->slots[t->i].used)
        t->i++;
    if (t->i >= MOTE_SCHED_MAX)
        return 0;
    {
        const struct sched_slot *s = &q->slots[t->i++];

        rec_open(q, &k, &w, "state", s);
        num(&w, "has_cursor", s->has_cursor);
        num(&w, "cursor", s->cursor);
        num(&w, "n", (int64_t)s->last_n);
        ms_of(&w, s->last_ms);
        num(&w, "runs", (int64_t)s->runs);
        num(&w, "skips", (int64_t)s->skips);
        num(&w, "failed", (int64_t)s->failed);
        num(&w, "in", (int64_t)s->usage.input);
        num(&w, "out", (int64_t)s->usage.output);
        num(&w, "cr", (int64_t)s->usage.cache_read);
        num(&w, "cw", (int64_t)s->usage.cache_write);
        num(&w, "last_key", s->has_last ? s->last_key : -1);
        num(&w, "last_at", s->last_at);
        mote_jw_kstr(&w, "outcome", s->last_outcome);
        mote_jw_obj_end(&w);
    }
    if (w.err != 0 || k.len + 1 > cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(buf, q->line, k.len);
    buf[k.len] = '\n';
    return (int)k.len + 1;
}

void mote_sched_log_tidy(struct sched *q)
{
    const struct mote_port *p = q->sv->port;
    struct tidy t = {q, 0};
    unsigned i;
    int64_t sz;

    if (q->size <= MOTE_SCHED_LOG_MAX || q->err < 0 || q->h < 0)
        return;
    for (i = 0; i < MOTE_SCHED_MAX; i++) {
        if (q->slots[i].used && q->slots[i].open != SO_NONE)
            return; /* an occurrence under way keeps its records */
    }
    if (p->st_write_atomic(p->ctx, LOG_FILE, tidy_line, &t) < 0)
        return; /* the long one stays, whole */
    mote_sched_log_close(q);
    q->h = p->st_open(p->ctx, LOG_FILE, MOTE_ST_READ | MOTE_ST_APPEND | MOTE_ST_CREATE);
    if (q->h < 0 || (sz = p->st_size(p->ctx, q->h)) < 0) {
        q->err = q->h < 0 ? q->h : MOTE_ERR_IO;
        return;
    }
    q->size = (uint64_t)sz;
}

/* ---- the definitions ------------------------------------------------------------------ */

/* Takes the schedules of document text[0..len) ({"schedules": [...]})
 * into free slots, with `origin`. */
static int defs_take(struct sched *q, const char *text, size_t len, uint8_t origin,
                     const char *where)
{
    char err[160];
    int arr, i, k, rc;

    rc = mote_json_parse_object(&q->json, text, len, err, sizeof(err));
    if (rc <= 0) {
        mote_sched_say(q, NULL, where, ": ", err[0] != '\0' ? err : "not one JSON object");
        return MOTE_ERR_BADMSG;
    }
    arr = mote_json_member(&q->json, 0, "schedules");
    if (arr < 0 || mote_json_type_of(&q->json, arr) != MOTE_JSON_ARRAY) {
        mote_sched_say(q, NULL, where, ": {\"schedules\": [...]} was expected", NULL);
        return MOTE_ERR_BADMSG;
    }
    for (i = 0, k = arr + 1; i < q->json.tok[arr].size; i++, k = mote_json_skip(&q->json, k)) {
        struct sched_slot *s = NULL;
        struct mote_sched def;
        unsigned n;

        if (mote_sched_parse(&def, &q->json, k, NULL, err, sizeof(err)) < 0) {
            mote_sched_say(q, NULL, where, ": a schedule left out: ", err);
            continue;
        }
        if (slot_of(q, def.id) != NULL) {
            mote_sched_say(q, def.id, where, ": given twice: the first one counts", NULL);
            continue;
        }
        for (n = 0; n < MOTE_SCHED_MAX && s == NULL; n++)
            s = q->slots[n].used ? NULL : &q->slots[n];
        if (s == NULL) {
            mote_sched_say(q, def.id, where, ": left out: more than MOTE_SCHED_MAX schedules",
                           NULL);
            continue;
        }
        memset(s, 0, sizeof(*s));
        s->used = true;
        s->def = def;
        s->def.origin = def.created_by[0] != '\0' && origin == MOTE_SCHED_API ? MOTE_SCHED_AGENT
                                                                              : origin;
        s->zone = -1;
    }
    return 0;
}

int mote_sched_defs_read(struct sched *q, const char *fixed, size_t fixed_len)
{
    const struct mote_port *p = q->sv->port;
    char *buf = q->sv->scratch;
    size_t len = 0;
    int h, got;

    if (fixed != NULL)
        (void)defs_take(q, fixed, fixed_len, MOTE_SCHED_FILE, "the schedules' file");
    h = p->st_open(p->ctx, DEFS_FILE, MOTE_ST_READ);
    if (h == MOTE_ERR_NOENT)
        return 0;
    if (h < 0) {
        mote_sched_say(q, NULL, "cannot read STATE/" DEFS_FILE ": ", mote_strerror(h), NULL);
        return h;
    }
    while (len < sizeof(q->sv->scratch) &&
           (got = p->st_read(p->ctx, h, len, buf + len, sizeof(q->sv->scratch) - len)) > 0)
        len += (size_t)got;
    p->st_close(p->ctx, h);
    if (len == sizeof(q->sv->scratch)) {
        mote_sched_say(q, NULL, "STATE/" DEFS_FILE " is larger than MOTE_SERVE_BODY_MAX: not read",
                       NULL, NULL);
        return MOTE_ERR_TOO_LARGE;
    }
    return len == 0 ? 0 : defs_take(q, buf, len, MOTE_SCHED_API, "STATE/" DEFS_FILE);
}

/* STATE/schedules.json's bytes, built whole in sv->scratch first. */
int mote_sched_defs_write(struct sched *q)
{
    const struct mote_port *p = q->sv->port;
    struct mote_src_bytes src;
    struct mote_sb k;
    struct mote_jw w;
    unsigned i;

    mote_sb_init(&k, q->sv->scratch, sizeof(q->sv->scratch));
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_key(&w, "schedules");
    mote_jw_arr(&w);
    for (i = 0; i < MOTE_SCHED_MAX; i++) {
        if (q->slots[i].used && q->slots[i].def.origin != MOTE_SCHED_FILE) {
            mote_jw_obj(&w);
            mote_sched_write(&q->slots[i].def, &w);
            mote_jw_obj_end(&w);
        }
    }
    mote_jw_arr_end(&w);
    mote_jw_obj_end(&w);
    if (w.err != 0 || k.len + 1 >= sizeof(q->sv->scratch))
        return MOTE_ERR_TOO_LARGE;
    q->sv->scratch[k.len++] = '\n';
    src.p = q->sv->scratch;
    src.len = k.len;
    src.off = 0;
    return p->st_write_atomic(p->ctx, DEFS_FILE, mote_produce_bytes, &src);
}
