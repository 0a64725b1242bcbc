/* journal.c - the conversation journal (see mote_journal.h, docs/JOURNAL.md). */
#include "mote/mote_journal.h"

#include <string.h>

#include "util.h"

static const char *const rec_names[] = {"",           "open",        "user",
                                        "request",    "assistant",   "tool_start",
                                        "tool_result", "mark",       "auto",
                                        "error",      "text",        "call",
                                        "cancel",     "allow",       "compact"};

/* How an answer's records go into a request (the part source). */
enum { ANS_ALL = 0, ANS_TEXT_ONLY, ANS_NONE };

static int set_err(struct mote_journal *j, int rc)
{
    if (j->err == 0 && rc < 0)
        j->err = rc;
    return rc;
}

static int make_name(struct mote_journal *j, const char *id, const char *suffix, char *out,
                     size_t cap)
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
    (void)j;
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
        if ((rc = make_name(j, id, suffix, out, cap)) < 0)
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

static void reset(struct mote_journal *j, const struct mote_port *port)
{
    if (j->buf != NULL)
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
    j->last_user_end = 0;
    j->compact_off = 0;
    j->has_compact = false;
    j->ans_end = 0;
    j->ans_mode = ANS_ALL;
}

/* ---- writing ----------------------------------------------------------- */

struct linebuf {
    char *p;
    size_t cap;
    size_t len;
};

static int line_sink(void *arg, const char *p, size_t n)
{
    struct linebuf *b = arg;

    if (b->len + n + 1 > b->cap) /* room for the newline */
        return MOTE_ERR_TOO_LARGE;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

/* Appends the record in b as one line, with one write. */
static int append_line(struct mote_journal *j, struct linebuf *b, bool sync)
{
    const struct mote_port *p = j->port;
    int rc;

    if (j->err != 0)
        return j->err;
    if (j->h < 0)
        return MOTE_ERR_BADF;
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

static void rec_begin(struct mote_journal *j, struct mote_jw *w, struct linebuf *b,
                      enum mote_rec type)
{
    b->p = j->buf->line;
    b->cap = sizeof(j->buf->line);
    b->len = 0;
    mote_jw_init(w, line_sink, b);
    mote_jw_obj(w);
    mote_jw_key(w, "t");
    mote_jw_str(w, rec_names[type]);
}

static int rec_end(struct mote_journal *j, struct mote_jw *w, struct linebuf *b, bool sync)
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

/* Gives the open record, once, to st_write_atomic. */
struct first_line {
    const char *p;
    size_t len, off;
};

static int first_line_produce(void *arg, char *buf, size_t cap)
{
    struct first_line *f = arg;
    size_t n = f->len - f->off < cap ? f->len - f->off : cap;

    memcpy(buf, f->p + f->off, n);
    f->off += n;
    return (int)n;
}

int mote_journal_create(struct mote_journal *j, const struct mote_port *port, const char *id)
{
    const struct mote_port *p = port;
    struct mote_jw w;
    struct linebuf b;
    struct first_line fl;
    int rc, h;

    if (j->buf == NULL)
        return MOTE_ERR_INVAL;
    if (mote_port_missing(port, MOTE_PORT_STORAGE) != NULL)
        return MOTE_ERR_NOSYS;
    reset(j, port);
    if ((rc = make_name(j, id, ".jsonl", j->name, sizeof(j->name))) < 0)
        return rc;
    mote_str_copy(j->id, sizeof(j->id), id);
    if ((rc = p->st_mkdir(p->ctx, "conversations")) < 0)
        return rc;
    h = p->st_open(p->ctx, j->name, MOTE_ST_READ);
    if (h >= 0) {
        int64_t sz = p->st_size(p->ctx, h);

        p->st_close(p->ctx, h);
        if (sz != 0)
            return MOTE_ERR_EXIST; /* an empty one is as good as absent */
    }
    /* The journal appears whole, with its open record, or not at all (a
     * crash in between leaves no empty file behind): written aside,
     * synced, renamed into place, the directory synced. */
    rec_begin(j, &w, &b, MOTE_REC_OPEN);
    mote_jw_key(&w, "v");
    mote_jw_int(&w, MOTE_JOURNAL_VERSION);
    mote_jw_key(&w, "id");
    mote_jw_str(&w, id);
    mote_jw_obj_end(&w);
    if (w.err != 0)
        return w.err;
    b.p[b.len++] = '\n';
    fl.p = b.p;
    fl.len = b.len;
    fl.off = 0;
    if ((rc = p->st_write_atomic(p->ctx, j->name, first_line_produce, &fl)) < 0)
        return rc;
    h = p->st_open(p->ctx, j->name, MOTE_ST_READ | MOTE_ST_APPEND);
    if (h < 0)
        return h;
    j->h = h;
    if ((rc = take_lock(j, MOTE_LOCK_HOLD)) < 0) {
        mote_journal_close(j); /* another process opened it first */
        return rc;
    }
    j->version = MOTE_JOURNAL_VERSION;
    j->size = b.len;
    j->records = 1;
    j->buf->owner = NULL;
    return 0;
}

void mote_journal_close(struct mote_journal *j)
{
    if (j->h >= 0)
        j->port->st_close(j->port->ctx, j->h);
    j->h = -1;
}

int mote_journal_user(struct mote_journal *j, const char *text, size_t len)
{
    struct mote_jw w;
    struct linebuf b;

    int rc;

    rec_begin(j, &w, &b, MOTE_REC_USER);
    mote_jw_key(&w, "text");
    mote_jw_strn(&w, text, len);
    rc = rec_end(j, &w, &b, true);
    if (rc == 0)
        j->last_user_end = j->size;
    return rc;
}

int mote_journal_request(struct mote_journal *j, uint32_t attempt)
{
    struct mote_jw w;
    struct linebuf b;

    rec_begin(j, &w, &b, MOTE_REC_REQUEST);
    mote_jw_key(&w, "attempt");
    mote_jw_int(&w, attempt);
    return rec_end(j, &w, &b, true);
}

static void write_call(struct mote_jw *w, const struct mote_call_rec *c)
{
    mote_jw_key(w, "id");
    mote_jw_str(w, c->id);
    mote_jw_key(w, "name");
    mote_jw_str(w, c->name);
    mote_jw_key(w, "input");
    mote_jw_raw(w, c->input_len > 0 ? c->input : "{}", c->input_len > 0 ? c->input_len : 2);
}

static void write_answer(struct mote_jw *w, const char *text, size_t len, const char *stop,
                         bool interrupted, const struct mote_call_rec *calls, unsigned ncalls,
                         const struct mote_rec_usage *u)
{
    unsigned i;

    mote_jw_key(w, "text");
    mote_jw_strn(w, text, len);
    mote_jw_key(w, "stop");
    mote_jw_str(w, stop != NULL ? stop : "");
    if (interrupted) {
        mote_jw_key(w, "interrupted");
        mote_jw_bool(w, true);
    }
    if (u != NULL) {
        mote_jw_key(w, "usage");
        mote_jw_obj(w);
        mote_jw_key(w, "in");
        mote_jw_int(w, (int64_t)u->input);
        mote_jw_key(w, "out");
        mote_jw_int(w, (int64_t)u->output);
        if (u->cache_read > 0 || u->cache_write > 0) {
            mote_jw_key(w, "cache_read");
            mote_jw_int(w, (int64_t)u->cache_read);
            mote_jw_key(w, "cache_write");
            mote_jw_int(w, (int64_t)u->cache_write);
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

/* Tool inputs go in as they are: each must be one JSON object, or the
 * line would not parse back. The caller replaces a broken one first. */
static int check_inputs(struct mote_journal *j, const struct mote_call_rec *calls, unsigned n)
{
    unsigned i;

    for (i = 0; i < n; i++) {
        if (calls[i].input_len > 0 &&
            (mote_json_parse(&j->buf->json, calls[i].input, calls[i].input_len) <= 0 ||
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
    struct linebuf b;
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
    mote_jw_key(&w, "t");
    mote_jw_str(&w, rec_names[MOTE_REC_ASSISTANT]);
    write_answer(&w, text, len, stop, interrupted, calls, ncalls, NULL);
    mote_jw_obj_end(&w);
    /* with its newline, and room for a usage object */
    return w.err < 0 ? w.err : n + 1 + 160;
}

int mote_journal_text(struct mote_journal *j, const char *text, size_t len)
{
    struct mote_jw w;
    struct linebuf b;

    rec_begin(j, &w, &b, MOTE_REC_TEXT);
    mote_jw_key(&w, "text");
    mote_jw_strn(&w, text, len);
    return rec_end(j, &w, &b, false);
}

int mote_journal_call(struct mote_journal *j, const struct mote_call_rec *call)
{
    struct mote_jw w;
    struct linebuf b;
    int rc = check_inputs(j, call, 1);

    if (rc < 0)
        return rc;
    rec_begin(j, &w, &b, MOTE_REC_CALL);
    write_call(&w, call);
    return rec_end(j, &w, &b, false);
}

int mote_journal_cancel(struct mote_journal *j)
{
    struct mote_jw w;
    struct linebuf b;

    rec_begin(j, &w, &b, MOTE_REC_CANCEL);
    return rec_end(j, &w, &b, true);
}

int mote_journal_compact(struct mote_journal *j, const char *summary, size_t len, bool resume)
{
    struct mote_jw w;
    struct linebuf b;
    uint64_t at = j->size;
    int rc;

    rec_begin(j, &w, &b, MOTE_REC_COMPACT);
    mote_jw_key(&w, "summary");
    mote_jw_strn(&w, summary, len);
    mote_jw_key(&w, "resume");
    mote_jw_bool(&w, resume);
    rc = rec_end(j, &w, &b, true);
    if (rc == 0) {
        j->compact_off = at;
        j->has_compact = true;
    }
    return rc;
}

int mote_journal_allow(struct mote_journal *j, const char *tool)
{
    struct mote_jw w;
    struct linebuf b;

    rec_begin(j, &w, &b, MOTE_REC_ALLOW);
    mote_jw_key(&w, "tool");
    mote_jw_str(&w, tool);
    return rec_end(j, &w, &b, true);
}

int mote_journal_tool_start(struct mote_journal *j, const char *call_id, int64_t pgid,
                            uint64_t start_time, const char *tag)
{
    struct mote_jw w;
    struct linebuf b;

    rec_begin(j, &w, &b, MOTE_REC_TOOL_START);
    mote_jw_key(&w, "id");
    mote_jw_str(&w, call_id);
    mote_jw_key(&w, "pgid");
    mote_jw_int(&w, pgid);
    mote_jw_key(&w, "start");
    mote_jw_int(&w, (int64_t)start_time);
    if (tag != NULL && tag[0] != '\0') {
        mote_jw_key(&w, "tag");
        mote_jw_str(&w, tag);
    }
    return rec_end(j, &w, &b, true); /* durable before the tool runs */
}

int mote_journal_tool_result(struct mote_journal *j, const char *call_id, const char *text,
                             size_t len, bool is_error)
{
    struct mote_jw w;
    struct linebuf b;

    rec_begin(j, &w, &b, MOTE_REC_TOOL_RESULT);
    mote_jw_key(&w, "id");
    mote_jw_str(&w, call_id);
    mote_jw_key(&w, "text");
    mote_jw_strn(&w, text, len);
    mote_jw_key(&w, "error");
    mote_jw_bool(&w, is_error);
    return rec_end(j, &w, &b, true);
}

int mote_journal_mark(struct mote_journal *j, const char *state)
{
    struct mote_jw w;
    struct linebuf b;

    rec_begin(j, &w, &b, MOTE_REC_MARK);
    mote_jw_key(&w, "state");
    mote_jw_str(&w, state);
    return rec_end(j, &w, &b, true);
}

int mote_journal_auto(struct mote_journal *j)
{
    struct mote_jw w;
    struct linebuf b;

    rec_begin(j, &w, &b, MOTE_REC_AUTO);
    return rec_end(j, &w, &b, true);
}

int mote_journal_error(struct mote_journal *j, const char *message)
{
    struct mote_jw w;
    struct linebuf b;

    rec_begin(j, &w, &b, MOTE_REC_ERROR);
    mote_jw_key(&w, "message");
    mote_jw_str(&w, message);
    return rec_end(j, &w, &b, true);
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

/* Reads the line at j->rd_off into j->buf->line. Returns its length (without
 * the newline), MOTE_ERR_NOENT at the end of the file, MOTE_ERR_PROTO for
 * an unterminated last line, MOTE_ERR_TOO_LARGE for a line over the
 * limit. */
static int read_line(struct mote_journal *j, uint64_t limit)
{
    const struct mote_port *p = j->port;
    size_t want = sizeof(j->buf->line), have = 0;
    const char *nl = NULL;
    /* A small first read: most records are short, and touching the whole
     * line buffer for each would cost resident memory for nothing. */
    size_t step = 4096 < want ? 4096 : want;
    int n;

    if (j->rd_off >= limit)
        return MOTE_ERR_NOENT;
    if (want > limit - j->rd_off)
        want = (size_t)(limit - j->rd_off);
    while (nl == NULL && have < want) {
        size_t ask = have == 0 ? (step < want ? step : want) : want - have;

        n = p->st_read(p->ctx, j->h, j->rd_off + have, j->buf->line + have, ask);
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

void mote_journal_rewind(struct mote_journal *j)
{
    j->rd_off = 0;
    j->rd_line = 0;
    j->part_valid = false;
}

int mote_journal_next(struct mote_journal *j)
{
    int n, t;

    if (j->h < 0)
        return MOTE_ERR_BADF;
    n = read_line(j, j->size);
    if (n == MOTE_ERR_NOENT)
        return 0;
    if (n < 0)
        return n;
    j->cur_off = j->rd_off;
    j->rd_off += (uint64_t)n + 1u;
    j->rd_line++;
    t = parse_line(j);
    if (t < 0) {
        j->buf->owner = NULL;
        return MOTE_ERR_CORRUPT;
    }
    j->buf->owner = j;
    j->buf->owner_off = j->cur_off;
    return t;
}

static int open_journal(struct mote_journal *j, const struct mote_port *port, const char *id,
                        bool peek)
{
    const struct mote_port *p = port;
    uint64_t good = 0, file_size;
    uint32_t line = 0;
    int64_t sz;
    int rc, h;

    if (j->buf == NULL)
        return MOTE_ERR_INVAL;
    if (mote_port_missing(port, MOTE_PORT_STORAGE) != NULL)
        return MOTE_ERR_NOSYS;
    reset(j, port);
    if ((rc = make_name(j, id, ".jsonl", j->name, sizeof(j->name))) < 0)
        return rc;
    mote_str_copy(j->id, sizeof(j->id), id);
    h = p->st_open(p->ctx, j->name, peek ? MOTE_ST_READ : MOTE_ST_READ | MOTE_ST_APPEND);
    if (h < 0)
        return h;
    j->h = h;
    /* Before anything is read or repaired: a conversation another process
     * writes is never touched (a peek reads it and says who holds it). */
    rc = take_lock(j, peek ? MOTE_LOCK_TEST : MOTE_LOCK_HOLD);
    if (rc < 0 && !(peek && rc == MOTE_ERR_LOCKED)) {
        mote_journal_close(j);
        return rc;
    }
    sz = p->st_size(p->ctx, h);
    if (sz < 0) {
        mote_journal_close(j);
        return (int)sz;
    }
    if (sz == 0) {
        /* Left by an older mote killed between creating a journal and
         * its first record: nothing was ever said in it. */
        mote_journal_close(j);
        return MOTE_ERR_NOENT;
    }
    file_size = (uint64_t)sz;
    /* Check every line; remember where the last good one ends. */
    j->rd_off = 0;
    for (;;) {
        int n = read_line(j, file_size), t;

        if (n == MOTE_ERR_NOENT)
            break;
        if (n >= 0) {
            line++;
            t = parse_line(j);
            if (t > 0 && (line > 1 || t == MOTE_REC_OPEN)) {
                j->rd_off += (uint64_t)n + 1u;
                good = j->rd_off;
                j->records++;
                if (t == MOTE_REC_USER)
                    j->last_user_end = good;
                if (t == MOTE_REC_COMPACT) {
                    j->compact_off = good - (uint64_t)n - 1u;
                    j->has_compact = true;
                }
                if (t == MOTE_REC_OPEN && line == 1) {
                    int64_t v = 0;

                    (void)mote_json_int(&j->buf->json, mote_json_member(&j->buf->json, 0, "v"),
                                        &v);
                    j->version = v > 0 && v < 0x7FFFFFFF ? (uint32_t)v : 0;
                }
                continue;
            }
            /* A bad complete line: the tail only if nothing follows it. */
            if (j->rd_off + (uint64_t)n + 1u < file_size) {
                j->bad_line = line;
                mote_journal_close(j);
                return MOTE_ERR_CORRUPT;
            }
            break;
        }
        if (n == MOTE_ERR_PROTO || n == MOTE_ERR_TOO_LARGE) {
            /* Unterminated (or endless) last line: a torn append. A line
             * over the limit followed by more lines is damage. */
            if (n == MOTE_ERR_TOO_LARGE) {
                uint64_t off = j->rd_off + sizeof(j->buf->line);
                char c;
                bool more = false;

                while (off < file_size) {
                    if (p->st_read(p->ctx, h, off, &c, 1) == 1 && c == '\n') {
                        more = off + 1 < file_size;
                        break;
                    }
                    off++;
                }
                if (more) {
                    j->bad_line = line + 1;
                    mote_journal_close(j);
                    return MOTE_ERR_CORRUPT;
                }
            }
            break;
        }
        mote_journal_close(j);
        return n; /* a read failure */
    }
    if (j->version > MOTE_JOURNAL_VERSION) {
        /* A newer mote's format: not read further, never written to. */
        mote_journal_close(j);
        return MOTE_ERR_NOTSUP;
    }
    if (good < file_size && peek) {
        j->repaired = true; /* it would be: said, not done */
    } else if (good < file_size) {
        /* the torn tail is copied aside (ID.jsonl.torn) before it is cut */
        struct mote_src_range tc = {j->port, h, good, file_size};
        char aside[MOTE_STORAGE_NAME_MAX];

        if ((rc = aside_name(j, id, aside, sizeof(aside))) < 0 ||
            (rc = p->st_write_atomic(p->ctx, aside, mote_produce_range, &tc)) < 0 ||
            (rc = p->st_truncate(p->ctx, h, good)) < 0) {
            mote_journal_close(j);
            return rc;
        }
        j->repaired = true;
    }
    if (j->records == 0) {
        mote_journal_close(j);
        j->bad_line = 1;
        return MOTE_ERR_CORRUPT; /* not even a header */
    }
    j->size = good;
    j->rd_off = 0;
    j->buf->owner = NULL; /* the scan left no record to rely on */
    return 0;
}

int mote_journal_open(struct mote_journal *j, const struct mote_port *port, const char *id)
{
    return open_journal(j, port, id, false);
}

int mote_journal_peek(struct mote_journal *j, const struct mote_port *port, const char *id)
{
    return open_journal(j, port, id, true);
}

/* ---- the part source --------------------------------------------------- */

/* Unescapes member `key` of object `obj` into the text arena at *used. */
static const char *arena_str(struct mote_journal *j, int obj, const char *key, size_t *used,
                             size_t *len)
{
    int t = mote_json_member(&j->buf->json, obj, key);
    int n;

    if (mote_json_type_of(&j->buf->json, t) != MOTE_JSON_STRING || *used >= sizeof(j->buf->text))
        return NULL;
    n = mote_json_str(&j->buf->json, t, j->buf->text + *used, sizeof(j->buf->text) - *used);
    if (n < 0)
        return NULL;
    {
        const char *s = j->buf->text + *used;

        *used += (size_t)n + 1u;
        if (len != NULL)
            *len = (size_t)n;
        return s;
    }
}

static bool rec_bool(const struct mote_journal *j, int obj, const char *key)
{
    bool b = false;

    (void)mote_json_bool(&j->buf->json, mote_json_member(&j->buf->json, obj, key), &b);
    return b;
}

/* An answer is its text and call records, then its assistant record. In
 * a request it goes:
 *  - whole, when it is complete;
 *  - as its text only when it was interrupted (a cancel, a failure, a
 *    shutdown) and a user message follows it: its calls never ran;
 *  - not at all when it was interrupted and nothing the user said follows
 *    (the request is that very turn again: the model answers anew), or
 *    when its pieces have no assistant record (a crash while streaming). */
static uint8_t answer_mode(const struct mote_journal *j)
{
    if (!rec_bool(j, 0, "interrupted"))
        return ANS_ALL;
    return j->cur_off >= j->last_user_end ? ANS_NONE : ANS_TEXT_ONLY;
}

/* The record just read is the first piece of an answer: finds how the
 * answer ends (its assistant record, or anything else), sets ans_end and
 * ans_mode, and reads the piece again. Returns its type or < 0. */
static int classify_answer(struct mote_journal *j)
{
    uint64_t start = j->cur_off;
    int t;

    j->ans_mode = ANS_NONE;
    for (;;) {
        uint64_t at = j->rd_off;

        t = mote_journal_next(j);
        if (t < 0)
            return t;
        if (t == MOTE_REC_TEXT || t == MOTE_REC_CALL)
            continue;
        if (t == MOTE_REC_ASSISTANT) {
            j->ans_mode = answer_mode(j);
            j->ans_end = j->rd_off;
        } else {
            j->ans_end = at; /* unfinished: the pieces end here */
        }
        break;
    }
    j->rd_off = start;
    return mote_journal_next(j);
}

static size_t raw_len(const struct mote_journal *j, const char *key)
{
    size_t n = 0;

    (void)mote_json_raw(&j->buf->json, mote_json_member(&j->buf->json, 0, key), &n);
    return n;
}

/* How many parts the record just read yields (it may read ahead). */
static int parts_of(struct mote_journal *j, int *type)
{
    int t = *type;

    if (t == MOTE_REC_USER || t == MOTE_REC_TOOL_RESULT || t == MOTE_REC_COMPACT)
        return 1;
    if (t == MOTE_REC_TEXT || t == MOTE_REC_CALL) {
        if (j->cur_off >= j->ans_end) {
            t = classify_answer(j);
            if (t < 0)
                return t;
            if (t != *type)
                return MOTE_ERR_CORRUPT;
        }
        if (t == MOTE_REC_TEXT)
            return j->ans_mode != ANS_NONE && raw_len(j, "text") > 0 ? 1 : 0;
        return j->ans_mode == ANS_ALL ? 1 : 0;
    }
    if (t == MOTE_REC_ASSISTANT) {
        int calls = mote_json_member(&j->buf->json, 0, "calls");
        unsigned k = mote_json_type_of(&j->buf->json, calls) == MOTE_JSON_ARRAY
                         ? (unsigned)j->buf->json.tok[calls].size
                         : 0u;

        if (j->cur_off >= j->ans_end) {
            j->ans_mode = answer_mode(j); /* no pieces before it */
            j->ans_end = j->rd_off;
        }
        if (j->ans_mode == ANS_NONE)
            return 0;
        return (raw_len(j, "text") > 0 ? 1 : 0) + (j->ans_mode == ANS_ALL ? (int)k : 0);
    }
    return 0;
}

static int fill_call(struct mote_journal *j, int call, struct mote_part *p, size_t *used)
{
    int in = mote_json_member(&j->buf->json, call, "input");

    p->role = MOTE_ROLE_ASSISTANT;
    p->type = MOTE_PART_TOOL_CALL;
    p->id = arena_str(j, call, "id", used, NULL);
    p->name = arena_str(j, call, "name", used, NULL);
    p->input = mote_json_raw(&j->buf->json, in, &p->input_len);
    if (mote_json_type_of(&j->buf->json, in) != MOTE_JSON_OBJECT)
        return MOTE_ERR_CORRUPT;
    return p->id != NULL && p->name != NULL ? 1 : MOTE_ERR_CORRUPT;
}

static int fill_part(struct mote_journal *j, int type, unsigned sub, struct mote_part *p)
{
    size_t used = 0;

    memset(p, 0, sizeof(*p));
    if (type == MOTE_REC_COMPACT) {
        /* The earlier conversation, as the model summarised it. */
        static const char head[] = "[The conversation so far, summarised]\n";
        size_t n = sizeof(head) - 1;

        memcpy(j->buf->text, head, n);
        used = n;
        if (arena_str(j, 0, "summary", &used, &p->text_len) == NULL)
            return MOTE_ERR_CORRUPT;
        p->role = MOTE_ROLE_USER;
        p->type = MOTE_PART_TEXT;
        p->text = j->buf->text;
        p->text_len += n;
        return 1;
    }
    if (type == MOTE_REC_USER || type == MOTE_REC_TEXT) {
        p->role = type == MOTE_REC_USER ? MOTE_ROLE_USER : MOTE_ROLE_ASSISTANT;
        p->type = MOTE_PART_TEXT;
        p->text = arena_str(j, 0, "text", &used, &p->text_len);
        return p->text != NULL ? 1 : MOTE_ERR_CORRUPT;
    }
    if (type == MOTE_REC_TOOL_RESULT) {
        p->role = MOTE_ROLE_USER;
        p->type = MOTE_PART_TOOL_RESULT;
        p->id = arena_str(j, 0, "id", &used, NULL);
        p->text = arena_str(j, 0, "text", &used, &p->text_len);
        p->is_error = rec_bool(j, 0, "error");
        return p->id != NULL && p->text != NULL ? 1 : MOTE_ERR_CORRUPT;
    }
    if (type == MOTE_REC_CALL)
        return fill_call(j, 0, p, &used);
    /* assistant: text first (if any), then the calls */
    p->role = MOTE_ROLE_ASSISTANT;
    if (raw_len(j, "text") > 0) {
        if (sub == 0) {
            p->type = MOTE_PART_TEXT;
            p->text = arena_str(j, 0, "text", &used, &p->text_len);
            return p->text != NULL ? 1 : MOTE_ERR_CORRUPT;
        }
        sub--;
    }
    return fill_call(j, mote_json_elem(&j->buf->json, mote_json_member(&j->buf->json, 0, "calls"),
                                       (int)sub),
                     p, &used);
}

int mote_journal_parts(void *arg, unsigned index, struct mote_part *p)
{
    struct mote_journal *j = arg;

    if (!j->part_valid || index < j->part_base) {
        mote_journal_rewind(j);
        if (j->has_compact)
            j->rd_off = j->compact_off; /* what came before is in its summary */
        j->part_base = 0;
        j->part_n = 0;
        j->part_valid = true;
        j->part_type = 0;
        j->ans_end = 0;
        j->ans_mode = ANS_ALL;
    }
    if (j->part_n > 0 && index < j->part_base + j->part_n &&
        (j->buf->owner != j || j->buf->owner_off != j->cur_off)) {
        /* The shared buffer holds another record now: read ours again. */
        int t;

        j->rd_off = j->cur_off;
        t = mote_journal_next(j);
        if (t < 0)
            return t;
        if (t != j->part_type)
            return MOTE_ERR_CORRUPT;
    }
    while (index >= j->part_base + j->part_n) {
        int t = mote_journal_next(j), n;

        if (t == 0)
            return 0;
        if (t < 0)
            return t;
        n = parts_of(j, &t);
        if (n < 0)
            return n;
        j->part_base += j->part_n;
        j->part_n = (unsigned)n;
        j->part_type = t;
    }
    return fill_part(j, j->part_type, index - j->part_base, p);
}

/* ---- recovery ---------------------------------------------------------- */

static void take_call(struct mote_journal *j, int call, uint64_t off, int idx,
                      struct mote_rec_call *c)
{
    size_t used = 0;
    const char *id = arena_str(j, call, "id", &used, NULL);
    const char *name = arena_str(j, call, "name", &used, NULL);

    memset(c, 0, sizeof(*c));
    mote_str_copy(c->id, sizeof(c->id), id != NULL ? id : "");
    mote_str_copy(c->name, sizeof(c->name), name != NULL ? name : "");
    c->rec_off = off;
    c->rec_idx = (int16_t)idx;
}

int mote_recover(struct mote_journal *j, struct mote_recovery *r)
{
    static const unsigned max = MOTE_LLM_MAX_TOOL_CALLS;
    struct mote_rec_call pend[MOTE_LLM_MAX_TOOL_CALLS]; /* call records before their answer */
    unsigned npend = 0, i;
    int last = MOTE_REC_NONE, t;
    bool compact_resume = false, paused = false;

    memset(r, 0, sizeof(*r));
    mote_journal_rewind(j);
    while ((t = mote_journal_next(j)) > 0) {
        size_t used = 0;

        switch (t) {
        case MOTE_REC_USER:
            r->autos = 0;
            r->ncalls = 0;
            npend = 0;
            last = t;
            break;
        case MOTE_REC_REQUEST:
        case MOTE_REC_MARK:
        case MOTE_REC_CANCEL:
            npend = 0;
            last = t;
            break;
        case MOTE_REC_AUTO:
            npend = 0;
            r->autos++;
            break;
        case MOTE_REC_ERROR: {
            const char *m = arena_str(j, 0, "message", &used, NULL);

            mote_str_copy(r->last_error, sizeof(r->last_error), m != NULL ? m : "");
            npend = 0;
            last = t;
            break;
        }
        case MOTE_REC_TEXT:
            last = t;
            break;
        case MOTE_REC_CALL:
            if (npend < max)
                take_call(j, 0, j->cur_off, -1, &pend[npend++]);
            last = t;
            break;
        case MOTE_REC_COMPACT:
            /* the round before it was complete; the context is small again */
            r->ncalls = 0;
            npend = 0;
            r->compactions++;
            memset(&r->last, 0, sizeof(r->last));
            compact_resume = rec_bool(j, 0, "resume");
            last = t;
            break;
        case MOTE_REC_ASSISTANT: {
            int calls = mote_json_member(&j->buf->json, 0, "calls");
            int u = mote_json_member(&j->buf->json, 0, "usage");

            if (mote_json_type_of(&j->buf->json, u) == MOTE_JSON_OBJECT) {
                static const char *const keys[4] = {"in", "out", "cache_read", "cache_write"};
                uint64_t *dst[4] = {&r->last.input, &r->last.output, &r->last.cache_read,
                                    &r->last.cache_write};
                uint64_t *sum[4] = {&r->total.input, &r->total.output, &r->total.cache_read,
                                    &r->total.cache_write};
                unsigned k;

                for (k = 0; k < 4; k++) {
                    int64_t v = 0;

                    (void)mote_json_int(&j->buf->json, mote_json_member(&j->buf->json, u, keys[k]),
                                        &v);
                    *dst[k] = v > 0 ? (uint64_t)v : 0u;
                    *sum[k] += *dst[k];
                }
            }
            r->ncalls = 0;
            if (!rec_bool(j, 0, "interrupted")) {
                /* an interrupted answer's calls never run */
                for (i = 0; i < npend && r->ncalls < max; i++)
                    r->calls[r->ncalls++] = pend[i];
                for (i = 0; r->ncalls < max; i++) {
                    int c = mote_json_elem(&j->buf->json, calls, (int)i);

                    if (c < 0)
                        break;
                    take_call(j, c, j->cur_off, (int)i, &r->calls[r->ncalls++]);
                }
            }
            /* pause_turn: the turn goes on with another request */
            paused = !rec_bool(j, 0, "interrupted") && r->ncalls == 0 &&
                     mote_json_eq(&j->buf->json, mote_json_member(&j->buf->json, 0, "stop"),
                                  "pause_turn");
            npend = 0;
            last = t;
            break;
        }
        case MOTE_REC_TOOL_START:
        case MOTE_REC_TOOL_RESULT: {
            const char *id = arena_str(j, 0, "id", &used, NULL);

            for (i = 0; id != NULL && i < r->ncalls; i++) {
                struct mote_rec_call *c = &r->calls[i];

                if (strcmp(c->id, id) != 0)
                    continue;
                if (t == MOTE_REC_TOOL_RESULT) {
                    c->has_result = true;
                } else {
                    c->started = true;
                    (void)mote_json_int(&j->buf->json, mote_json_member(&j->buf->json, 0, "pgid"),
                                        &c->pgid);
                    (void)mote_json_int(&j->buf->json, mote_json_member(&j->buf->json, 0, "start"),
                                        (int64_t *)&c->start);
                    if (mote_json_str(&j->buf->json, mote_json_member(&j->buf->json, 0, "tag"),
                                      c->tag, sizeof(c->tag)) < 0)
                        c->tag[0] = '\0';
                }
            }
            if (t == MOTE_REC_TOOL_RESULT)
                last = t;
            break;
        }
        case MOTE_REC_ALLOW: {
            const char *tool = arena_str(j, 0, "tool", &used, NULL);
            bool known = false;

            for (i = 0; tool != NULL && i < r->nallowed; i++)
                known = known || strcmp(r->allowed[i], tool) == 0;
            if (tool != NULL && !known && r->nallowed < MOTE_CONV_ALLOWED_MAX)
                mote_str_copy(r->allowed[r->nallowed++], sizeof(r->allowed[0]), tool);
            break;
        }
        default:
            break;
        }
    }
    if (t < 0)
        return t;
    for (i = 0; i < r->ncalls; i++) {
        const struct mote_rec_call *c = &r->calls[i];

        if (c->has_result)
            continue;
        r->nmissing++;
        if (!c->started)
            continue;
        r->nstarted++;
        /* A tool that began and has no result may still run: its group. */
        if (c->pgid > 0 || c->tag[0] != '\0') {
            r->kill_pgid[r->nkill] = c->pgid;
            r->kill_start[r->nkill] = c->start;
            memcpy(r->kill_tag[r->nkill], c->tag, sizeof(c->tag));
            r->nkill++;
        }
    }
    r->cancelled = last == MOTE_REC_CANCEL;
    paused = paused && last == MOTE_REC_ASSISTANT;
    if (r->nmissing > 0 && r->nstarted > 0)
        r->action = MOTE_RECOVER_TOOL_INTERRUPTED;
    else if (r->nmissing > 0)
        r->action = r->autos >= MOTE_MAX_AUTO_CONTINUES ? MOTE_RECOVER_LIMIT
                                                         : MOTE_RECOVER_RESUME_TOOLS;
    else if (last == MOTE_REC_USER || last == MOTE_REC_REQUEST || last == MOTE_REC_MARK ||
             last == MOTE_REC_TOOL_RESULT || last == MOTE_REC_TEXT || last == MOTE_REC_CALL ||
             (last == MOTE_REC_COMPACT && compact_resume) || paused)
        r->action = r->autos >= MOTE_MAX_AUTO_CONTINUES ? MOTE_RECOVER_LIMIT
                                                         : MOTE_RECOVER_CONTINUE;
    else
        r->action = MOTE_RECOVER_IDLE; /* an answer, an error, a cancel, nothing */
    return 0;
}

int mote_recover_apply(struct mote_journal *j, const struct mote_recovery *r)
{
    unsigned i;
    int rc;

    if (r->nmissing == 0 ||
        (r->action != MOTE_RECOVER_TOOL_INTERRUPTED && r->action != MOTE_RECOVER_LIMIT))
        return 0;
    for (i = 0; i < r->ncalls; i++) {
        const struct mote_rec_call *c = &r->calls[i];
        const char *m = c->started ? MOTE_INTERRUPTED_TOOL : MOTE_NOT_RUN_TOOL;

        if (c->has_result)
            continue;
        rc = mote_journal_tool_result(j, c->id, m, strlen(m), true);
        if (rc < 0)
            return rc;
    }
    /* The turn ends here: the user decides (/retry), nothing runs again. */
    return mote_journal_error(j, r->action == MOTE_RECOVER_TOOL_INTERRUPTED
                                     ? "a tool was interrupted: " MOTE_INTERRUPTED_TOOL
                                     : "stopped after automatic continues in a row; the tool "
                                       "calls left were not run");
}

/* ---- the state machine ------------------------------------------------- */

struct mote_conv_step mote_conv_next(enum mote_conv_state s, enum mote_conv_event e)
{
    struct mote_conv_step r = {s, 0};
    bool talking = s == MOTE_CONV_LLM_REQUESTING || s == MOTE_CONV_STREAMING;
    bool tools = s == MOTE_CONV_TOOL_EXECUTING || s == MOTE_CONV_AWAITING_APPROVAL;
    bool compacting = s == MOTE_CONV_COMPACTING;
    bool active = talking || tools || compacting;
    bool resting = s == MOTE_CONV_IDLE || s == MOTE_CONV_ERROR || s == MOTE_CONV_NEEDS_RECOVERY;

    switch (e) {
    case MOTE_CEV_USER:
        if (resting) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_USER | MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_RETRY:
        if (resting) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_FIRST_BYTE:
        if (s == MOTE_CONV_LLM_REQUESTING)
            r.state = MOTE_CONV_STREAMING;
        break;
    case MOTE_CEV_ANSWER_DONE:
        if (talking) {
            r.state = MOTE_CONV_IDLE;
            r.effects = MOTE_CEFF_JOURNAL_ANSWER;
        }
        break;
    case MOTE_CEV_ANSWER_TOOLS:
        if (talking) {
            r.state = MOTE_CONV_TOOL_EXECUTING;
            r.effects = MOTE_CEFF_JOURNAL_ANSWER | MOTE_CEFF_RUN_TOOLS;
        }
        break;
    case MOTE_CEV_ASK:
        if (s == MOTE_CONV_TOOL_EXECUTING) {
            r.state = MOTE_CONV_AWAITING_APPROVAL;
            r.effects = MOTE_CEFF_ASK;
        }
        break;
    case MOTE_CEV_ANSWERED:
        if (s == MOTE_CONV_AWAITING_APPROVAL) {
            r.state = MOTE_CONV_TOOL_EXECUTING;
            r.effects = MOTE_CEFF_RUN_TOOLS;
        }
        break;
    case MOTE_CEV_TOOLS_DONE:
        if (s == MOTE_CONV_TOOL_EXECUTING) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_TURN_LIMIT:
        if (s == MOTE_CONV_TOOL_EXECUTING) {
            r.state = MOTE_CONV_ERROR;
            r.effects = MOTE_CEFF_JOURNAL_ERROR;
        }
        break;
    case MOTE_CEV_FAILED:
        if (active) {
            r.state = MOTE_CONV_ERROR;
            r.effects = (talking ? MOTE_CEFF_JOURNAL_PARTIAL
                         : tools ? MOTE_CEFF_KILL_TOOLS
                                 : 0u) |
                        MOTE_CEFF_JOURNAL_ERROR;
        }
        break;
    case MOTE_CEV_CANCELLED:
        if (active) {
            /* a summary being written is not an answer: nothing partial */
            r.state = MOTE_CONV_IDLE;
            r.effects = talking ? MOTE_CEFF_JOURNAL_PARTIAL
                        : tools ? MOTE_CEFF_KILL_TOOLS | MOTE_CEFF_JOURNAL_CANCEL
                                : MOTE_CEFF_JOURNAL_CANCEL;
        }
        break;
    case MOTE_CEV_SHUTDOWN_CUT:
        if (active) {
            r.state = MOTE_CONV_NEEDS_RECOVERY;
            r.effects = (talking ? MOTE_CEFF_JOURNAL_PARTIAL
                         : tools ? MOTE_CEFF_KILL_TOOLS
                                 : 0u) |
                        MOTE_CEFF_JOURNAL_MARK;
        }
        break;
    case MOTE_CEV_ANSWER_PAUSED:
        if (talking) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_ANSWER | MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_COMPACT:
        if (s == MOTE_CONV_IDLE || s == MOTE_CONV_ERROR || s == MOTE_CONV_TOOL_EXECUTING) {
            r.state = MOTE_CONV_COMPACTING;
            r.effects = MOTE_CEFF_SEND_COMPACT;
        }
        break;
    case MOTE_CEV_COMPACTED:
        if (compacting) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_COMPACT | MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_COMPACTED_IDLE:
        if (compacting) {
            r.state = MOTE_CONV_IDLE;
            r.effects = MOTE_CEFF_JOURNAL_COMPACT;
        }
        break;
    case MOTE_CEV_DRAIN_STOP:
        if (active) {
            r.state = MOTE_CONV_NEEDS_RECOVERY;
            r.effects = MOTE_CEFF_JOURNAL_MARK;
        }
        break;
    case MOTE_CEV_STORAGE_FAILED:
        if (s != MOTE_CONV_ERROR) {
            r.state = MOTE_CONV_ERROR;
            r.effects = MOTE_CEFF_KILL_TOOLS; /* nothing can be journaled any more */
        }
        break;
    case MOTE_CEV_RECOVER_CONTINUE:
        if (s == MOTE_CONV_NEEDS_RECOVERY) {
            r.state = MOTE_CONV_LLM_REQUESTING;
            r.effects = MOTE_CEFF_JOURNAL_AUTO | MOTE_CEFF_JOURNAL_REQUEST | MOTE_CEFF_SEND;
        }
        break;
    case MOTE_CEV_RECOVER_TOOLS:
        if (s == MOTE_CONV_NEEDS_RECOVERY) {
            r.state = MOTE_CONV_TOOL_EXECUTING;
            r.effects = MOTE_CEFF_JOURNAL_AUTO | MOTE_CEFF_RUN_TOOLS;
        }
        break;
    case MOTE_CEV_RECOVER_CLOSE:
        if (s == MOTE_CONV_NEEDS_RECOVERY) {
            r.state = MOTE_CONV_ERROR;
            r.effects = MOTE_CEFF_JOURNAL_CLOSE;
        }
        break;
    case MOTE_CEV_RECOVER_IDLE:
        if (s == MOTE_CONV_NEEDS_RECOVERY)
            r.state = MOTE_CONV_IDLE;
        break;
    case MOTE_CEV_RECOVER_ERROR:
        if (s == MOTE_CONV_NEEDS_RECOVERY)
            r.state = MOTE_CONV_ERROR;
        break;
    }
    return r;
}

const char *mote_conv_state_name(enum mote_conv_state s)
{
    static const char *const names[] = {"idle",  "llm_requesting", "streaming",
                                        "tool_executing", "error", "needs_recovery",
                                        "awaiting_approval", "compacting"};

    return (unsigned)s < MOTE_ARRAY_LEN(names) ? names[s] : "?";
}
