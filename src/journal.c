/* journal.c - the journal's record I/O: creating, opening (checks, torn
 * tails, locks), appending records and reading them back, one line at a
 * time through the shared buffer (mote_journal.h, docs/JOURNAL.md). */
#include "mote/mote_journal.h"

#include <string.h>

#include "journal.h"
#include "util.h"

static const char *const rec_names[] = {"",           "open",        "user",
                                        "request",    "assistant",   "tool_start",
                                        "tool_result", "mark",       "auto",
                                        "error",      "text",        "call",
                                        "cancel",     "allow",       "compact",
                                        "reason"};

/* Bytes assistant_size leaves for the "usage" member (four 20-digit
 * counts and their keys take 166). */
#define USAGE_ROOM 192

static int set_err(struct mote_journal *j, int rc)
{
    if (j->err == 0 && rc < 0)
        j->err = rc;
    return rc;
}

/* conversations/ID + suffix into out; MOTE_ERR_INVAL for an id that is
 * empty, too long or holds a byte other than [A-Za-z0-9_-]. */
static int make_name(const char *id, const char *suffix, char *out, size_t cap)
{
    struct mote_sb sb;
    size_t i;

    if (id[0] == '\0' || strlen(id) >= MOTE_CONV_ID_MAX)
        return MOTE_ERR_INVAL;
    for (i = 0; id[i] != '\0'; i++) {
        char c = id[i];

        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_'))
            return MOTE_ERR_INVAL; /* no path tricks through an id */
    }
    mote_sb_init(&sb, out, cap);
    mote_sb_s(&sb, "conversations/");
    mote_sb_s(&sb, id);
    mote_sb_s(&sb, suffix);
    return sb.len + 1 < cap ? 0 : MOTE_ERR_NAMETOOLONG;
}

/* Where a torn tail is kept: ID.jsonl.torn, or the first free of
 * ID.jsonl.torn.2 .. .MOTE_JOURNAL_TORN_MAX, so a second repair never
 * overwrites the bytes the first one kept (past the last, it is reused). */
static int aside_name(struct mote_journal *j, const char *id, char *out, size_t cap)
{
    const struct mote_port *p = j->port;
    unsigned k;
    int rc = 0, h;

    for (k = 1; k <= MOTE_JOURNAL_TORN_MAX; k++) {
        char suffix[24];
        struct mote_sb sb;

        mote_sb_init(&sb, suffix, sizeof(suffix));
        mote_sb_s(&sb, ".jsonl.torn");
        if (k > 1) {
            mote_sb_s(&sb, ".");
            mote_sb_u(&sb, k);
        }
        if ((rc = make_name(id, suffix, out, cap)) < 0)
            return rc;
        h = p->st_open(p->ctx, out, MOTE_ST_READ);
        if (h == MOTE_ERR_NOENT)
            return 0;
        if (h >= 0)
            p->st_close(p->ctx, h);
    }
    return rc;
}

/* One writer per conversation (a port without st_lock has one process).
 * MOTE_LOCK_HOLD keeps the lock until the handle closes; MOTE_LOCK_TEST
 * only fills j->holder (-1: held, by a process the port cannot name). */
static int take_lock(struct mote_journal *j, unsigned how)
{
    const struct mote_port *p = j->port;
    int64_t holder = 0;
    int rc;

    if (!MOTE_PORT_HAS(p, st_lock))
        return 0;
    rc = p->st_lock(p->ctx, j->h, how, &holder);
    if (rc == MOTE_ERR_LOCKED)
        j->holder = holder > 0 ? holder : -1;
    return rc;
}

int mote_journal_lock(struct mote_journal *j)
{
    return j->h < 0 ? MOTE_ERR_BADF : take_lock(j, MOTE_LOCK_HOLD);
}

/* What creating and opening share: checks the scratch buffer, the port
 * and the id, and starts the journal afresh (closed) on `port`. */
static int start(struct mote_journal *j, const struct mote_port *port, const char *id)
{
    int rc;

    if (j->buf == NULL)
        return MOTE_ERR_INVAL;
    if (mote_port_missing(port, MOTE_PORT_STORAGE) != NULL)
        return MOTE_ERR_NOSYS;
    j->buf->owner = NULL;
    j->port = port;
    j->h = -1;
    j->err = 0;
    j->size = 0;
    j->records = 0;
    j->repaired = false;
    j->bad_line = 0;
    j->holder = 0;
    j->rd_off = 0;
    j->cur_off = 0;
    j->rd_line = 0;
    j->buf->line_len = 0;
    j->part_valid = false;
    j->version = 0;
    j->calls_only = false;
    j->last_user_end = 0;
    j->compact_off = 0;
    j->has_compact = false;
    j->next_rid = NULL;
    j->next_rid_len = 0;
    j->nrids = 0;
    if ((rc = make_name(id, ".jsonl", j->name, sizeof(j->name))) < 0)
        return rc;
    mote_str_copy(j->id, sizeof(j->id), id);
    return 0;
}

/* ---- writing ----------------------------------------------------------- */

/* Appends the record in b as one line, with one write. */
static int append_line(struct mote_journal *j, struct mote_sb *b, bool sync)
{
    const struct mote_port *p = j->port;
    int rc;

    if (j->err != 0)
        return j->err;
    if (j->h < 0)
        return MOTE_ERR_BADF;
    MOTE_ASSERT(b->len < b->cap); /* mote_sb_put keeps a byte: the newline goes there */
    b->p[b->len++] = '\n';
    j->buf->owner = NULL; /* the buffer holds no record now */
    rc = p->st_append(p->ctx, j->h, b->p, b->len);
    if (rc >= 0 && (size_t)rc != b->len) {
        /* A short write: cut it back so no partial line stays. */
        (void)p->st_truncate(p->ctx, j->h, j->size);
        return set_err(j, MOTE_ERR_NOSPC);
    }
    if (rc < 0) {
        (void)p->st_truncate(p->ctx, j->h, j->size);
        return set_err(j, rc);
    }
    j->size += b->len;
    j->records++;
    if (sync && (rc = p->st_sync(p->ctx, j->h)) < 0)
        return set_err(j, rc);
    return 0;
}

static void rec_begin(struct mote_journal *j, struct mote_jw *w, struct mote_sb *b,
                      enum mote_rec type)
{
    MOTE_ASSERT(type > MOTE_REC_NONE && (unsigned)type < MOTE_ARRAY_LEN(rec_names));
    mote_sb_init(b, j->buf->line, sizeof(j->buf->line));
    mote_jw_init(w, mote_sb_put, b);
    mote_jw_obj(w);
    mote_jw_kstr(w, "t", rec_names[type]);
}

static int rec_end(struct mote_journal *j, struct mote_jw *w, struct mote_sb *b, bool sync)
{
    mote_jw_obj_end(w);
    if (w->err != 0)
        return w->err; /* too large: nothing was written, not sticky */
    /* Only what the reader takes back is written: a record over its
     * token limit would read as damage (nothing written, not sticky). */
    j->buf->owner = NULL;
    if (mote_json_parse(&j->buf->json, b->p, b->len) <= 0)
        return MOTE_ERR_TOO_LARGE;
    /* ... and only UTF-8: every line is JSON to any strict parser. The
     * writer's strings are; a kept tool input was checked: this holds
     * the line whatever a caller passed. */
    if (!mote_utf8_valid(b->p, b->len))
        return MOTE_ERR_BADMSG;
    return append_line(j, b, sync);
}

/* A record whose one member `key` is `len` bytes of string `s` (key NULL:
 * no member). */
static int str_record(struct mote_journal *j, enum mote_rec type, const char *key, const char *s,
                      size_t len, bool sync)
{
    struct mote_jw w;
    struct mote_sb b;

    rec_begin(j, &w, &b, type);
    if (key != NULL) {
        mote_jw_key(&w, key);
        mote_jw_strn(&w, s, len);
    }
    return rec_end(j, &w, &b, sync);
}

static int create(struct mote_journal *j, const struct mote_port *port, const char *id,
                  bool calls)
{
    const struct mote_port *p = port;
    struct mote_jw w;
    struct mote_sb b;
    struct mote_src_bytes first;
    int rc, h;

    if ((rc = start(j, port, id)) < 0)
        return rc;
    if ((rc = p->st_mkdir(p->ctx, "conversations")) < 0)
        return rc;
    if (!MOTE_PORT_HAS(p, st_create)) {
        /* (a port without it: only one process creates at a time) */
        h = p->st_open(p->ctx, j->name, MOTE_ST_READ);
        if (h >= 0)
            p->st_close(p->ctx, h);
        if (h >= 0 || h == MOTE_ERR_NOTREG)
            return MOTE_ERR_EXIST;
    }
    /* The journal appears whole, with its open record, or not at all (a
     * crash in between leaves no empty file behind): written aside,
     * synced, put into place, the directory synced. Never over anything:
     * whatever is at its path (another process's new journal, an empty
     * file, a link, a FIFO) stays, and the id is taken. */
    rec_begin(j, &w, &b, MOTE_REC_OPEN);
    mote_jw_kint(&w, "v", calls ? MOTE_JOURNAL_VERSION : MOTE_JOURNAL_CHAT_VERSION);
    mote_jw_kstr(&w, "id", id);
    if (calls) {
        mote_jw_kstr(&w, "kind", "calls");
    }
    mote_jw_obj_end(&w);
    if (w.err != 0)
        return w.err;
    b.p[b.len++] = '\n';
    first.p = b.p;
    first.len = b.len;
    first.off = 0;
    rc = MOTE_PORT_HAS(p, st_create)
             ? p->st_create(p->ctx, j->name, mote_produce_bytes, &first)
             : p->st_write_atomic(p->ctx, j->name, mote_produce_bytes, &first);
    if (rc < 0)
        return rc;
    h = p->st_open(p->ctx, j->name, MOTE_ST_READ | MOTE_ST_APPEND);
    if (h < 0)
        return h;
    j->h = h;
    if ((rc = take_lock(j, MOTE_LOCK_HOLD)) < 0) {
        mote_journal_close(j); /* another process opened it first */
        return rc;
    }
    j->version = calls ? MOTE_JOURNAL_VERSION : MOTE_JOURNAL_CHAT_VERSION;
    j->calls_only = calls;
    j->size = b.len;
    j->records = 1;
    j->buf->owner = NULL;
    return 0;
}

int mote_journal_create(struct mote_journal *j, const struct mote_port *port, const char *id)
{
    return create(j, port, id, false);
}

int mote_journal_create_calls(struct mote_journal *j, const struct mote_port *port,
                              const char *id)
{
    return create(j, port, id, true);
}

void mote_journal_close(struct mote_journal *j)
{
    if (j->h >= 0)
        j->port->st_close(j->port->ctx, j->h);
    j->h = -1;
}

/* ---- request ids ---------------------------------------------------------- */

/* FNV-1a, 64 bits: the index keeps hashes, and a match is checked
 * against the record, so a collision costs a read, never a wrong answer. */
static uint64_t rid_hash(const char *rid, size_t len)
{
    uint64_t h = 14695981039346656037ULL;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= (unsigned char)rid[i];
        h *= 1099511628211ULL;
    }
    return h;
}

static void rid_note(struct mote_journal *j, const char *rid, size_t len, uint64_t off)
{
    unsigned k = j->nrids % MOTE_JOURNAL_RIDS;

    j->rid_hash[k] = rid_hash(rid, len);
    j->rid_off[k] = off;
    j->nrids++;
}

/* The "rid" of the user record in the buffer, unescaped into out[0..cap)
 * (cap > MOTE_JOURNAL_RID_MAX): its length, or -1 when it has none that a
 * front door could have set. */
static int rec_rid(const struct mote_journal *j, char *out, size_t cap)
{
    int t = mote_json_member(&j->buf->json, 0, "rid"), n;

    if (mote_json_type_of(&j->buf->json, t) != MOTE_JSON_STRING)
        return -1;
    n = mote_json_str(&j->buf->json, t, out, cap);
    return n >= 1 && n <= MOTE_JOURNAL_RID_MAX ? n : -1;
}

int mote_journal_next_rid(struct mote_journal *j, const char *rid, size_t len)
{
    j->next_rid = NULL;
    j->next_rid_len = 0;
    if (rid == NULL)
        return 0;
    if (len > MOTE_JOURNAL_RID_MAX)
        return MOTE_ERR_TOO_LARGE;
    if (len == 0 || memchr(rid, '\0', len) != NULL || !mote_utf8_valid(rid, len))
        return MOTE_ERR_INVAL;
    j->next_rid = rid;
    j->next_rid_len = len;
    return 0;
}

static int read_record(struct mote_journal *j, uint64_t off, size_t *len);

int mote_journal_rid_seen(struct mote_journal *j, const char *rid, size_t len)
{
    uint64_t h = rid_hash(rid, len);
    unsigned n = j->nrids < MOTE_JOURNAL_RIDS ? j->nrids : MOTE_JOURNAL_RIDS, i;
    char got[MOTE_JOURNAL_RID_MAX + 1];

    if (j->h < 0)
        return MOTE_ERR_BADF;
    if (len == 0 || len > MOTE_JOURNAL_RID_MAX)
        return 0; /* never journaled */
    for (i = 0; i < n; i++) {
        size_t rl = 0;
        int t, k;

        if (j->rid_hash[i] != h)
            continue;
        t = read_record(j, j->rid_off[i], &rl);
        if (t < 0)
            return t;
        k = t == MOTE_REC_USER ? rec_rid(j, got, sizeof(got)) : -1;
        if (k == (int)len && memcmp(got, rid, len) == 0)
            return 1;
    }
    return 0;
}

int mote_journal_user(struct mote_journal *j, const char *text, size_t len)
{
    const char *rid = j->next_rid;
    size_t rn = j->next_rid_len;
    uint64_t off = j->size;
    struct mote_jw w;
    struct mote_sb b;
    int rc;

    j->next_rid = NULL; /* taken, whatever happens */
    j->next_rid_len = 0;
    rec_begin(j, &w, &b, MOTE_REC_USER);
    mote_jw_key(&w, "text");
    mote_jw_strn(&w, text, len);
    if (rid != NULL) {
        mote_jw_key(&w, "rid");
        mote_jw_strn(&w, rid, rn);
    }
    rc = rec_end(j, &w, &b, true);
    if (rc == 0) {
        j->last_user_end = j->size;
        if (rid != NULL)
            rid_note(j, rid, rn, off);
    }
    return rc;
}

int mote_journal_request(struct mote_journal *j, uint32_t attempt)
{
    struct mote_jw w;
    struct mote_sb b;

    rec_begin(j, &w, &b, MOTE_REC_REQUEST);
    mote_jw_kint(&w, "attempt", attempt);
    return rec_end(j, &w, &b, true);
}

static void write_call(struct mote_jw *w, const struct mote_call_rec *c)
{
    mote_jw_kstr(w, "id", c->id);
    mote_jw_kstr(w, "name", c->name);
    mote_jw_key(w, "input");
    mote_jw_raw(w, c->input_len > 0 ? c->input : "{}", c->input_len > 0 ? c->input_len : 2);
    if (c->refused != NULL) {
        mote_jw_kstr(w, "refused", c->refused);
    }
    if (c->extra != NULL && c->extra_len > 0) {
        mote_jw_key(w, "extra");
        mote_jw_raw(w, c->extra, c->extra_len);
    }
}

static void write_answer(struct mote_jw *w, const char *text, size_t len, const char *stop,
                         bool interrupted, const struct mote_call_rec *calls, unsigned ncalls,
                         const struct mote_rec_usage *u)
{
    unsigned i;

    mote_jw_key(w, "text");
    mote_jw_strn(w, text, len);
    mote_jw_kstr(w, "stop", stop != NULL ? stop : "");
    if (interrupted) {
        mote_jw_kbool(w, "interrupted", true);
    }
    if (u != NULL) {
        /* the names of the API's turn_end (docs/JOURNAL.md: older
         * journals say in, out, cache_read, cache_write; both are read) */
        mote_jw_key(w, "usage");
        mote_jw_obj(w);
        mote_jw_kint(w, "input_tokens", (int64_t)u->input);
        mote_jw_kint(w, "output_tokens", (int64_t)u->output);
        if (u->cache_read > 0 || u->cache_write > 0) {
            mote_jw_kint(w, "cache_read_tokens", (int64_t)u->cache_read);
            mote_jw_kint(w, "cache_write_tokens", (int64_t)u->cache_write);
        }
        mote_jw_obj_end(w);
    }
    if (ncalls > 0) {
        mote_jw_key(w, "calls");
        mote_jw_arr(w);
        for (i = 0; i < ncalls; i++) {
            mote_jw_obj(w);
            write_call(w, &calls[i]);
            mote_jw_obj_end(w);
        }
        mote_jw_arr_end(w);
    }
}

/* Tool inputs (and a call's extras) go in as they are: each must be one
 * JSON object, or the line would not parse back. The caller replaces a
 * broken one first. */
static int check_inputs(struct mote_journal *j, const struct mote_call_rec *calls, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        if (calls[i].input_len > 0 &&
            (mote_json_parse(&j->buf->json, calls[i].input, calls[i].input_len) <= 0 ||
             mote_json_type_of(&j->buf->json, 0) != MOTE_JSON_OBJECT))
            return MOTE_ERR_BADMSG;
        if (calls[i].extra != NULL && calls[i].extra_len > 0 &&
            (mote_json_parse(&j->buf->json, calls[i].extra, calls[i].extra_len) <= 0 ||
             mote_json_type_of(&j->buf->json, 0) != MOTE_JSON_OBJECT))
            return MOTE_ERR_BADMSG;
    }
    j->buf->owner = NULL;
    return 0;
}

int mote_journal_answer(struct mote_journal *j, const char *text, size_t len, const char *stop,
                        bool interrupted, const struct mote_call_rec *calls, unsigned ncalls,
                        const struct mote_rec_usage *usage)
{
    struct mote_jw w;
    struct mote_sb b;
    int rc = check_inputs(j, calls, ncalls);

    if (rc < 0)
        return rc;
    rec_begin(j, &w, &b, MOTE_REC_ASSISTANT);
    write_answer(&w, text, len, stop, interrupted, calls, ncalls, usage);
    return rec_end(j, &w, &b, true);
}

int mote_journal_assistant(struct mote_journal *j, const char *text, size_t len,
                           const char *stop, bool interrupted, const struct mote_call_rec *calls,
                           unsigned ncalls)
{
    return mote_journal_answer(j, text, len, stop, interrupted, calls, ncalls, NULL);
}

static int count_sink(void *arg, const char *p, size_t n)
{
    (void)p;
    *(int64_t *)arg += (int64_t)n;
    return 0;
}

int64_t mote_journal_assistant_size(const char *text, size_t len, const char *stop,
                                    bool interrupted, const struct mote_call_rec *calls,
                                    unsigned ncalls)
{
    struct mote_jw w;
    int64_t n = 0;

    mote_jw_init(&w, count_sink, &n);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "t", rec_names[MOTE_REC_ASSISTANT]);
    write_answer(&w, text, len, stop, interrupted, calls, ncalls, NULL);
    mote_jw_obj_end(&w);
    /* with its newline, and room for a usage member */
    return w.err < 0 ? w.err : n + 1 + USAGE_ROOM;
}

int mote_journal_text(struct mote_journal *j, const char *text, size_t len)
{
    return str_record(j, MOTE_REC_TEXT, "text", text, len, false);
}

int mote_journal_call(struct mote_journal *j, const struct mote_call_rec *call)
{
    struct mote_jw w;
    struct mote_sb b;
    int rc = check_inputs(j, call, 1);

    if (rc < 0)
        return rc;
    rec_begin(j, &w, &b, MOTE_REC_CALL);
    write_call(&w, call);
    return rec_end(j, &w, &b, false);
}

int mote_journal_reason(struct mote_journal *j, const struct mote_reason_rec *r)
{
    static const char *const kinds[] = {"text", "sig", "id"};
    struct mote_jw w;
    struct mote_sb b;

    if (r->kind >= MOTE_ARRAY_LEN(kinds) || r->fmt == NULL)
        return MOTE_ERR_INVAL;
    rec_begin(j, &w, &b, MOTE_REC_REASON);
    mote_jw_kstr(&w, "fmt", r->fmt);
    mote_jw_kint(&w, "b", r->block);
    mote_jw_key(&w, kinds[r->kind]);
    mote_jw_strn(&w, r->data, r->len);
    return rec_end(j, &w, &b, false);
}

int mote_journal_cancel(struct mote_journal *j)
{
    return str_record(j, MOTE_REC_CANCEL, NULL, NULL, 0, true);
}

int mote_journal_compact(struct mote_journal *j, const char *summary, size_t len, bool resume)
{
    struct mote_jw w;
    struct mote_sb b;
    uint64_t at = j->size;
    int rc;

    rec_begin(j, &w, &b, MOTE_REC_COMPACT);
    mote_jw_key(&w, "summary");
    mote_jw_strn(&w, summary, len);
    mote_jw_kbool(&w, "resume", resume);
    rc = rec_end(j, &w, &b, true);
    if (rc == 0) {
        j->compact_off = at;
        j->has_compact = true;
    }
    return rc;
}

int mote_journal_allow(struct mote_journal *j, const char *tool)
{
    return str_record(j, MOTE_REC_ALLOW, "tool", tool, strlen(tool), true);
}

int mote_journal_tool_start(struct mote_journal *j, const char *call_id, int64_t pgid,
                            uint64_t start_time, const char *tag)
{
    struct mote_jw w;
    struct mote_sb b;

    rec_begin(j, &w, &b, MOTE_REC_TOOL_START);
    mote_jw_kstr(&w, "id", call_id);
    mote_jw_kint(&w, "pgid", pgid);
    mote_jw_kint(&w, "start", (int64_t)start_time);
    if (tag != NULL && tag[0] != '\0') {
        mote_jw_kstr(&w, "tag", tag);
    }
    return rec_end(j, &w, &b, true); /* durable before the tool runs */
}

int mote_journal_tool_result(struct mote_journal *j, const char *call_id, const char *text,
                             size_t len, bool is_error)
{
    struct mote_jw w;
    struct mote_sb b;

    rec_begin(j, &w, &b, MOTE_REC_TOOL_RESULT);
    mote_jw_kstr(&w, "id", call_id);
    mote_jw_key(&w, "text");
    mote_jw_strn(&w, text, len);
    mote_jw_kbool(&w, "error", is_error);
    return rec_end(j, &w, &b, true);
}

int mote_journal_mark(struct mote_journal *j, const char *state)
{
    return str_record(j, MOTE_REC_MARK, "state", state, strlen(state), true);
}

int mote_journal_auto(struct mote_journal *j)
{
    return str_record(j, MOTE_REC_AUTO, NULL, NULL, 0, true);
}

int mote_journal_error(struct mote_journal *j, const char *message)
{
    return str_record(j, MOTE_REC_ERROR, "message", message, strlen(message), true);
}

/* ---- reading ----------------------------------------------------------- */

static int rec_type(const struct mote_journal *j)
{
    int t = mote_json_member(&j->buf->json, 0, "t");
    unsigned i;

    for (i = 1; i < MOTE_ARRAY_LEN(rec_names); i++) {
        if (mote_json_eq(&j->buf->json, t, rec_names[i]))
            return (int)i;
    }
    return MOTE_ERR_BADMSG;
}

/* Reads the line at `off` (not past `limit`) into j->buf->line. Returns
 * its length (without the newline), MOTE_ERR_NOENT at the limit or the
 * end of the file, MOTE_ERR_PROTO for an unterminated last line,
 * MOTE_ERR_TOO_LARGE for a line over the buffer, or a read failure. */
static int read_line(struct mote_journal *j, uint64_t off, uint64_t limit)
{
    const struct mote_port *p = j->port;
    size_t want = sizeof(j->buf->line), have = 0;
    const char *nl = NULL;
    /* A small first read: most records are short, and touching the whole
     * line buffer for each would cost resident memory for nothing. */
    size_t step = 4096 < want ? 4096 : want;
    int n;

    if (off >= limit)
        return MOTE_ERR_NOENT;
    j->buf->owner = NULL; /* the buffer is overwritten from here on */
    if (want > limit - off)
        want = (size_t)(limit - off);
    while (nl == NULL && have < want) {
        size_t ask = have == 0 ? (step < want ? step : want) : want - have;

        n = p->st_read(p->ctx, j->h, off + have, j->buf->line + have, ask);
        if (n < 0)
            return n;
        if (n == 0)
            break;
        nl = memchr(j->buf->line + have, '\n', (size_t)n);
        have += (size_t)n;
    }
    if (have == 0)
        return MOTE_ERR_NOENT;
    if (nl == NULL)
        return have == sizeof(j->buf->line) ? MOTE_ERR_TOO_LARGE : MOTE_ERR_PROTO;
    j->buf->line_len = (size_t)(nl - j->buf->line);
    return (int)j->buf->line_len;
}

/* Parses the line in j->buf->line as a record; returns its type or < 0. */
static int parse_line(struct mote_journal *j)
{
    if (memchr(j->buf->line, '\0', j->buf->line_len) != NULL)
        return MOTE_ERR_BADMSG;
    if (mote_json_parse(&j->buf->json, j->buf->line, j->buf->line_len) <= 0 ||
        mote_json_type_of(&j->buf->json, 0) != MOTE_JSON_OBJECT)
        return MOTE_ERR_BADMSG;
    return rec_type(j);
}

/* Reads and parses the record at `off` into the buffer (the reading
 * cursor stays). Returns its type, 0 past the last record,
 * MOTE_ERR_CORRUPT for a line that is no record, or a read failure;
 * *len gets the line's length without its newline. */
static int read_record(struct mote_journal *j, uint64_t off, size_t *len)
{
    int n = read_line(j, off, j->size), t;

    if (n == MOTE_ERR_NOENT)
        return 0;
    if (n < 0)
        return n;
    t = parse_line(j);
    if (t < 0)
        return MOTE_ERR_CORRUPT;
    j->buf->owner = j;
    j->buf->owner_off = off;
    *len = (size_t)n;
    return t;
}

void mote_journal_rewind(struct mote_journal *j)
{
    j->rd_off = 0;
    j->rd_line = 0;
    j->part_valid = false;
}

int mote_journal_next(struct mote_journal *j)
{
    size_t len = 0;
    int t;

    if (j->h < 0)
        return MOTE_ERR_BADF;
    t = read_record(j, j->rd_off, &len);
    if (t <= 0)
        return t;
    j->cur_off = j->rd_off;
    j->rd_off += (uint64_t)len + 1u;
    j->rd_line++;
    return t;
}

int mote_journal_call_input(struct mote_journal *j, uint64_t rec_off, int rec_idx, char *out,
                            size_t cap, size_t *full_len)
{
    const struct mote_json *js = &j->buf->json;
    const char *raw;
    size_t len = 0;
    int t;

    if (full_len != NULL)
        *full_len = 0;
    if (j->h < 0)
        return MOTE_ERR_BADF;
    t = read_record(j, rec_off, &len);
    if (t < 0)
        return t;
    if (t != (rec_idx < 0 ? MOTE_REC_CALL : MOTE_REC_ASSISTANT))
        return MOTE_ERR_CORRUPT; /* past the end, or not a record with calls */
    t = rec_idx < 0 ? 0 : mote_json_elem(js, mote_json_member(js, 0, "calls"), rec_idx);
    t = mote_json_member(js, t, "input");
    if (mote_json_type_of(js, t) != MOTE_JSON_OBJECT)
        return MOTE_ERR_CORRUPT;
    raw = mote_json_raw(js, t, &len);
    if (full_len != NULL)
        *full_len = len;
    if (len >= cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(out, raw, len);
    out[len] = '\0';
    return (int)len;
}

/* Records looked at, from the end, to tell whether a turn can be sent
 * again (the ones that add nothing to a request are passed over). */
#define RETRY_LOOK_BACK 16

/* Where the record ending at `end` (its newline at end - 1) starts: after
 * the newline before it, or 0. Reads back through j->buf->text. */
static int64_t record_start_before(struct mote_journal *j, uint64_t end)
{
    const struct mote_port *p = j->port;
    char *b = j->buf->text;
    uint64_t at = end - 1, floor = at > sizeof(j->buf->line) ? at - sizeof(j->buf->line) : 0;
    size_t i;

    while (at > floor) {
        size_t k = at - floor < sizeof(j->buf->text) ? (size_t)(at - floor) : sizeof(j->buf->text);
        int n = p->st_read(p->ctx, j->h, at - k, b, k);

        if (n < 0)
            return n;
        if ((size_t)n != k)
            return MOTE_ERR_CORRUPT;
        for (i = k; i > 0; i--) {
            if (b[i - 1] == '\n')
                return (int64_t)(at - k + i);
        }
        at -= k;
    }
    return floor == 0 ? 0 : MOTE_ERR_CORRUPT;
}

int mote_journal_retryable(struct mote_journal *j)
{
    uint64_t end = j->size;
    unsigned k;

    if (j->h < 0)
        return MOTE_ERR_BADF;
    for (k = 0; k < RETRY_LOOK_BACK && end > 0; k++) {
        int64_t start = record_start_before(j, end);
        size_t len = 0;
        int t;

        if (start < 0)
            return (int)start;
        t = read_record(j, (uint64_t)start, &len);
        if (t < 0)
            return t;
        switch (t) {
        case MOTE_REC_USER:
        case MOTE_REC_TOOL_RESULT:
        case MOTE_REC_COMPACT:
            return 1; /* the request ends with what the model answers */
        case MOTE_REC_ASSISTANT:
            /* an interrupted answer is left out of the request (nothing
             * follows it); a complete one would be sent as its end: the
             * model would continue its own finished answer */
            if (mote_jrec_bool(j, 0, "interrupted"))
                break;
            return mote_json_eq(&j->buf->json, mote_json_member(&j->buf->json, 0, "stop"),
                                "pause_turn")
                       ? 1
                       : 0;
        case MOTE_REC_OPEN:
            return 0; /* nothing said yet */
        default:
            break; /* adds nothing to a request: look further back */
        }
        end = (uint64_t)start;
    }
    return 1; /* far back: as the caller asks */
}

const char *mote_jrec_str(struct mote_journal *j, int obj, const char *key, size_t *used,
                          size_t *len)
{
    int t = mote_json_member(&j->buf->json, obj, key);
    const char *s;
    int n;

    if (mote_json_type_of(&j->buf->json, t) != MOTE_JSON_STRING || *used >= sizeof(j->buf->text))
        return NULL;
    s = j->buf->text + *used;
    n = mote_json_str(&j->buf->json, t, j->buf->text + *used, sizeof(j->buf->text) - *used);
    if (n < 0)
        return NULL;
    *used += (size_t)n + 1u;
    if (len != NULL)
        *len = (size_t)n;
    return s;
}

bool mote_jrec_bool(const struct mote_journal *j, int obj, const char *key)
{
    bool b = false;

    (void)mote_json_bool(&j->buf->json, mote_json_member(&j->buf->json, obj, key), &b);
    return b;
}

/* ---- opening ----------------------------------------------------------- */

/* The format version of the open record in the buffer: 0 when it has
 * none or not a positive integer (read as the first format); a number
 * past 32 bits gives UINT32_MAX (newer than any this mote knows). */
static uint32_t header_version(const struct mote_journal *j)
{
    int v_tok = mote_json_member(&j->buf->json, 0, "v");
    int64_t v = 0;
    int rc = mote_json_int(&j->buf->json, v_tok, &v);

    if (rc == MOTE_ERR_RANGE)
        return UINT32_MAX;
    if (rc < 0 || v <= 0)
        return 0;
    return v < (int64_t)UINT32_MAX ? (uint32_t)v : UINT32_MAX;
}

/* A line over the line limit (its first MOTE_JOURNAL_LINE_MAX bytes hold
 * no newline) is read past one chunk of the text buffer per call, so a
 * hostile file costs one read per chunk, never one per byte, and a step
 * of a scan stays bounded: 1 if a newline ends it with more bytes after
 * it (damage, not a torn tail), 0 if it runs to the end of the file,
 * MOTE_ERR_AGAIN after a chunk without a newline (call again), or a read
 * failure. */
static int long_line_chunk(struct mote_journal *j, struct mote_jcheck *c, size_t *spent)
{
    const struct mote_port *p = j->port;
    char *chunk = j->buf->text;
    size_t want = sizeof(j->buf->text);
    const char *nl;
    int n;

    if (c->long_off >= c->file_size)
        return 0;
    if (want > c->file_size - c->long_off)
        want = (size_t)(c->file_size - c->long_off);
    n = p->st_read(p->ctx, j->h, c->long_off, chunk, want);
    if (n < 0)
        return n;
    if (n == 0)
        return 0; /* shorter than its size said: nothing follows */
    *spent += (size_t)n;
    nl = memchr(chunk, '\n', (size_t)n);
    if (nl != NULL)
        return c->long_off + (uint64_t)(nl - chunk) + 1u < c->file_size ? 1 : 0;
    c->long_off += (uint64_t)n;
    return MOTE_ERR_AGAIN;
}

/* Fails an opening: the journal is closed, `rc` returned. */
static int open_failed(struct mote_journal *j, int rc)
{
    mote_journal_close(j);
    return rc;
}

static void jcheck_begin(struct mote_jcheck *c, uint64_t file_size)
{
    memset(c, 0, sizeof(*c));
    c->file_size = file_size;
}

int mote_jcheck_next(struct mote_journal *j, struct mote_jcheck *c, size_t *spent)
{
    int n, t, rc;

    if (c->done)
        return 0;
    if (c->in_long) {
        /* A line over the limit: a torn append when it runs to the end,
         * damage when more lines follow it. */
        rc = long_line_chunk(j, c, spent);
        if (rc == MOTE_ERR_AGAIN || rc < 0)
            return rc;
        c->in_long = false;
        c->done = true;
        if (rc > 0) {
            j->bad_line = c->line + 1;
            return MOTE_ERR_CORRUPT;
        }
        return 0;
    }
    n = read_line(j, j->rd_off, c->file_size);
    if (n == MOTE_ERR_NOENT || n == MOTE_ERR_PROTO) {
        c->done = true; /* the end, or an unterminated last line: a torn append */
        return 0;
    }
    if (n == MOTE_ERR_TOO_LARGE) {
        *spent += sizeof(j->buf->line);
        c->in_long = true;
        c->long_off = j->rd_off + sizeof(j->buf->line);
        return MOTE_ERR_AGAIN;
    }
    if (n < 0)
        return n; /* a read failure */
    *spent += (size_t)n + 1u;
    c->line++;
    t = parse_line(j);
    if (t > 0 && (c->line > 1 || t == MOTE_REC_OPEN)) {
        j->cur_off = j->rd_off;
        j->rd_off += (uint64_t)n + 1u;
        c->good = j->rd_off;
        j->records++;
        if (t == MOTE_REC_USER) {
            char rid[MOTE_JOURNAL_RID_MAX + 1];
            int rn = rec_rid(j, rid, sizeof(rid));

            j->last_user_end = c->good;
            if (rn > 0)
                rid_note(j, rid, (size_t)rn, j->cur_off);
        }
        if (t == MOTE_REC_COMPACT) {
            j->compact_off = j->cur_off;
            j->has_compact = true;
        }
        if (t == MOTE_REC_OPEN && c->line == 1) {
            j->version = header_version(j);
            j->calls_only = mote_json_eq(&j->buf->json,
                                         mote_json_member(&j->buf->json, 0, "kind"), "calls");
        }
        return t;
    }
    c->done = true;
    /* A bad complete line: the tail only if nothing follows it. */
    if (j->rd_off + (uint64_t)n + 1u < c->file_size) {
        j->bad_line = c->line;
        return MOTE_ERR_CORRUPT;
    }
    return 0;
}

int mote_jcheck_start(struct mote_journal *j, const struct mote_port *port, const char *id,
                      bool peek, struct mote_jcheck *c)
{
    const struct mote_port *p = port;
    int64_t sz;
    int rc, h;

    if ((rc = start(j, port, id)) < 0)
        return rc;
    h = p->st_open(p->ctx, j->name, peek ? MOTE_ST_READ : MOTE_ST_READ | MOTE_ST_APPEND);
    if (h < 0)
        return h;
    j->h = h;
    /* Before anything is read or repaired: a conversation another process
     * writes is never touched (a peek reads it and says who holds it). */
    rc = take_lock(j, peek ? MOTE_LOCK_TEST : MOTE_LOCK_HOLD);
    if (rc < 0 && !(peek && rc == MOTE_ERR_LOCKED))
        return open_failed(j, rc);
    sz = p->st_size(p->ctx, h);
    if (sz < 0)
        return open_failed(j, (int)sz);
    /* An empty file holds nothing ever said (a crash between creating a
     * file and its first record, where journals are not created whole):
     * as good as absent. */
    if (sz == 0)
        return open_failed(j, MOTE_ERR_NOENT);
    j->rd_off = 0;
    jcheck_begin(c, (uint64_t)sz);
    return 0;
}

int mote_jcheck_finish(struct mote_journal *j, struct mote_jcheck *c, bool peek)
{
    const struct mote_port *p = j->port;
    uint64_t good = c->good;
    int rc;

    MOTE_ASSERT(c->done);
    if (j->version > MOTE_JOURNAL_VERSION) /* a newer mote's format: left alone */
        return open_failed(j, MOTE_ERR_NOTSUP);
    if (good < c->file_size && peek) {
        j->repaired = true; /* it would be: said, not done */
    } else if (good < c->file_size) {
        /* the torn tail is copied aside (ID.jsonl.torn) before it is cut */
        struct mote_src_range torn = {j->port, j->h, good, c->file_size};
        char aside[MOTE_STORAGE_NAME_MAX];

        if ((rc = aside_name(j, j->id, aside, sizeof(aside))) < 0 ||
            (rc = p->st_write_atomic(p->ctx, aside, mote_produce_range, &torn)) < 0 ||
            (rc = p->st_truncate(p->ctx, j->h, good)) < 0)
            return open_failed(j, rc);
        j->repaired = true;
    }
    if (j->records == 0) {
        j->bad_line = 1;
        return open_failed(j, MOTE_ERR_CORRUPT); /* not even a header */
    }
    j->size = good;
    j->rd_off = 0;
    j->buf->owner = NULL; /* the scan left no record to rely on */
    return 0;
}

/* Checks every line (remembering where the last good one ends), then
 * finishes the opening. */
static int open_journal(struct mote_journal *j, const struct mote_port *port, const char *id,
                        bool peek)
{
    struct mote_jcheck c;
    size_t spent = 0;
    int rc;

    if ((rc = mote_jcheck_start(j, port, id, peek, &c)) < 0)
        return rc;
    while ((rc = mote_jcheck_next(j, &c, &spent)) != 0) {
        if (rc < 0 && rc != MOTE_ERR_AGAIN)
            return open_failed(j, rc);
    }
    return mote_jcheck_finish(j, &c, peek);
}

int mote_journal_open(struct mote_journal *j, const struct mote_port *port, const char *id)
{
    return open_journal(j, port, id, false);
}

int mote_journal_peek(struct mote_journal *j, const struct mote_port *port, const char *id)
{
    return open_journal(j, port, id, true);
}
