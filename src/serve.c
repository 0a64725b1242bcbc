/*
 * serve.c - the API server (see mote_serve.h, docs/SERVE.md).
 *
 * Each connection is a small state machine driven by its fd watch:
 * reading a head (mote_hreq), reading a body, responding, lingering. A
 * response is a head and a body in the connection's out buffer, or a
 * stream refilled from the conversation's journal whenever the buffer
 * drains (the records of GET /v1/conversations/ID, chunked; the event
 * stream, which lasts). One timer serves every deadline; a 0 ms "kick"
 * does what must not run inside a session callback.
 */
#include "mote/mote_serve.h"

#include <string.h>

#include "mote/mote.h"
#include "util.h"

enum { CS_FREE = 0, CS_HEAD, CS_BODY, CS_RESP, CS_LINGER };
enum { ST_NONE = 0, ST_RECORDS, ST_EVENTS };

enum route {
    R_NONE = 0,
    R_HEALTH,
    R_LIST,     /* /v1/conversations */
    R_CONV,     /* /v1/conversations/ID */
    R_MESSAGES,
    R_RETRY,
    R_CANCEL,
    R_APPROVAL,
    R_EVENTS,
};

/* Accepts per listener readiness (bounded work per loop turn). */
#define ACCEPTS_PER_TURN 16
/* Refills of a stream per readiness. */
#define PUMPS_PER_TURN 8
/* The largest tool input shown inline in a state (bigger: "record" says where). */
#define INPUT_INLINE_MAX 1024

static void conn_kill(struct mote_serve *sv, struct mote_serve_conn *c);
static void conn_watch(struct mote_serve *sv, struct mote_serve_conn *c, bool poke);
static void conn_advance(struct mote_serve *sv, struct mote_serve_conn *c);
static void schedule(struct mote_serve *sv);
static void kick(struct mote_serve *sv);

static uint32_t now_ms(const struct mote_serve *sv)
{
    return mote_loop_now(sv->loop);
}

static uint32_t cfg(uint32_t v, uint32_t def)
{
    return v != 0 ? v : def;
}

static void say(struct mote_serve *sv, const char *a, const char *b, const char *c)
{
    char line[240];
    struct mote_sb sb;

    if (sv->conf.log == NULL)
        return;
    mote_sb_init(&sb, line, sizeof(line));
    mote_sb_s(&sb, "serve: ");
    mote_sb_s(&sb, a);
    if (b != NULL)
        mote_sb_s(&sb, b);
    if (c != NULL)
        mote_sb_s(&sb, c);
    sv->conf.log(sv->conf.log_arg, line);
}

/* Retention (conf.keep, conf.keep_bytes): a failure is said, and the
 * server goes on. */
static void prune(struct mote_serve *sv)
{
    struct mote_prune_report r;
    char line[120];
    struct mote_sb sb;
    int rc;

    if (sv->conf.keep == 0 && sv->conf.keep_bytes == 0)
        return;
    rc = mote_session_prune(sv->conf.session, sv->conf.keep, sv->conf.keep_bytes, &r);
    if (rc < 0) {
        say(sv, "cannot remove old conversations: ", mote_strerror(rc), NULL);
    } else if (r.count > 0) {
        mote_sb_init(&sb, line, sizeof(line));
        mote_sb_s(&sb, "removed ");
        mote_sb_u(&sb, r.count);
        mote_sb_s(&sb, r.count == 1 ? " old finished conversation (" : " old finished conversations (");
        mote_sb_u(&sb, r.bytes);
        mote_sb_s(&sb, " bytes)");
        say(sv, line, NULL, NULL);
    }
}

/* ---- buffers --------------------------------------------------------------- */

static int big_get(struct mote_serve *sv)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_BODY_BUFS; i++) {
        if (!sv->big_used[i]) {
            sv->big_used[i] = true;
            return (int)i;
        }
    }
    return -1;
}

static void big_put(struct mote_serve *sv, struct mote_serve_conn *c)
{
    if (c->big >= 0)
        sv->big_used[c->big] = false;
    c->big = -1;
    c->big_len = c->big_off = 0;
}

/* Appends to the out buffer: all or nothing. */
static bool out_put(struct mote_serve_conn *c, const char *p, size_t n)
{
    if (n > sizeof(c->io->out) - c->out_len)
        return false;
    memcpy(c->io->out + c->out_len, p, n);
    c->out_len += n;
    return true;
}

static bool out_puts(struct mote_serve_conn *c, const char *s)
{
    return out_put(c, s, strlen(s));
}

static bool out_u64(struct mote_serve_conn *c, uint64_t v)
{
    char d[24];

    return out_put(c, d, mote_u64_dec(v, d));
}

static size_t out_room(const struct mote_serve_conn *c)
{
    return sizeof(c->io->out) - c->out_len;
}

/* ---- conversations --------------------------------------------------------- */

static bool id_ok(const char *id, size_t n)
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

static void journal_name(char *out, const char *id)
{
    struct mote_sb sb;

    mote_sb_init(&sb, out, MOTE_STORAGE_NAME_MAX);
    mote_sb_s(&sb, "conversations/");
    mote_sb_s(&sb, id);
    mote_sb_s(&sb, ".jsonl");
}

static void touch(struct mote_serve *sv, const struct mote_conv *cv)
{
    size_t i = (size_t)(cv - sv->conf.session->conv);

    if (i < MOTE_MAX_CONVERSATIONS)
        sv->lru[i] = ++sv->lru_seq;
}

static struct mote_conv *find(struct mote_serve *sv, const char *id)
{
    struct mote_conv *cv = mote_conv_find(sv->conf.session, id);

    if (cv != NULL)
        touch(sv, cv);
    return cv;
}

/* A conversation slot for one more: the idle one used least recently is
 * closed if every slot is taken. Returns 0 or MOTE_ERR_FULL. */
static int make_room(struct mote_serve *sv)
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
    say(sv, "closed idle conversation ", mote_conv_id(best), " to make room");
    return mote_conv_close(best) == 0 ? 0 : MOTE_ERR_FULL;
}

/* The loaded conversation `id`, loading it (with its recovery) if it is
 * only on disk. Returns 0 or the failure. */
static int load(struct mote_serve *sv, const char *id, struct mote_conv **out, uint32_t *bad)
{
    bool repaired = false;
    int rc;

    *bad = 0;
    *out = find(sv, id);
    if (*out != NULL)
        return 0;
    if ((rc = make_room(sv)) < 0)
        return rc;
    rc = mote_conv_open(sv->conf.session, sv->conf.conv, id, out, bad, &repaired);
    if (rc < 0)
        return rc;
    touch(sv, *out);
    if (repaired)
        say(sv, "conversation ", id, " ended in a torn record: cut off, kept in ID.jsonl.torn");
    return 0;
}

/* The end of the conversation's complete records. A journal that is not
 * loaded may end in a torn line (a power cut; it is cut off when the
 * conversation is loaded): its end is after its last newline, so that a
 * stream never sends a record without its newline. The scan back from
 * the file's end is done again only when the size changed. */
static uint64_t conv_end(struct mote_serve *sv, struct mote_serve_conn *c)
{
    const struct mote_port *p = sv->port;
    struct mote_conv *cv = mote_conv_find(sv->conf.session, c->conv_id);
    uint64_t at, lo;
    int64_t n;
    char b[256];

    if (!c->gone && cv != NULL && cv->jr.h >= 0)
        return cv->jr.size;
    n = c->sh >= 0 ? p->st_size(p->ctx, c->sh) : -1;
    if (n < 0)
        return c->pos;
    if ((uint64_t)n == c->disk_size)
        return c->disk_end;
    /* complete up to disk_end already, unless the file was cut below it */
    lo = c->disk_size != UINT64_MAX && c->disk_end <= (uint64_t)n ? c->disk_end : 0;
    at = (uint64_t)n;
    c->disk_size = (uint64_t)n;
    c->disk_end = lo;
    while (at > lo) {
        size_t k = at - lo < sizeof(b) ? (size_t)(at - lo) : sizeof(b);
        int got = p->st_read(p->ctx, c->sh, at - k, b, k);

        if (got != (int)k) {
            c->disk_size = UINT64_MAX; /* try again next time */
            return lo > c->pos ? lo : c->pos;
        }
        at -= k; /* the chunk starts here */
        while (k > 0 && b[k - 1] != '\n')
            k--;
        if (k > 0) {
            c->disk_end = at + k;
            break;
        }
    }
    return c->disk_end;
}

/* The pending call's input (raw JSON) into sv->small, if it is not
 * longer than `max`. Returns its length or < 0 (then *len_out, if the
 * record could be read, has its size). */
static int pending_input(struct mote_serve *sv, struct mote_conv *cv,
                         const struct mote_conv_call *call, size_t max, size_t *len_out)
{
    const struct mote_port *p = sv->port;
    struct mote_json *js = &sv->json;
    const char *raw, *nl;
    size_t n;
    int got, t;

    *len_out = 0;
    if (cv->jr.h < 0)
        return MOTE_ERR_BADF;
    got = p->st_read(p->ctx, cv->jr.h, call->rec_off, sv->scratch, sizeof(sv->scratch));
    if (got <= 0)
        return got < 0 ? got : MOTE_ERR_CORRUPT;
    nl = memchr(sv->scratch, '\n', (size_t)got);
    if (nl == NULL || mote_json_parse(js, sv->scratch, (size_t)(nl - sv->scratch)) <= 0)
        return MOTE_ERR_CORRUPT;
    t = call->rec_idx < 0 ? 0
                          : mote_json_elem(js, mote_json_member(js, 0, "calls"), call->rec_idx);
    t = mote_json_member(js, t, "input");
    if (mote_json_type_of(js, t) != MOTE_JSON_OBJECT)
        return MOTE_ERR_CORRUPT;
    raw = mote_json_raw(js, t, &n);
    *len_out = n;
    if (n > max || n >= sizeof(sv->small))
        return MOTE_ERR_TOO_LARGE;
    memcpy(sv->small, raw, n);
    return (int)n;
}

/* "approval": {...} or null, for a loaded conversation. */
static void approval_json(struct mote_serve *sv, struct mote_conv *cv, struct mote_jw *w,
                          size_t max)
{
    const struct mote_conv_call *call;
    uint32_t ask = cv != NULL ? mote_conv_pending(cv, &call) : 0;
    size_t len = 0;
    int n;

    mote_jw_key(w, "approval");
    if (ask == 0) {
        mote_jw_null(w);
        return;
    }
    n = pending_input(sv, cv, call, max, &len);
    mote_jw_obj(w);
    mote_jw_key(w, "ask_id");
    mote_jw_int(w, ask);
    mote_jw_key(w, "call_id");
    mote_jw_str(w, call->id);
    mote_jw_key(w, "name");
    mote_jw_str(w, call->name);
    mote_jw_key(w, "record");
    mote_jw_int(w, (int64_t)call->rec_off);
    mote_jw_key(w, "input");
    if (n >= 0)
        mote_jw_raw(w, sv->small, (size_t)n);
    else
        mote_jw_null(w);
    mote_jw_key(w, "input_bytes");
    mote_jw_int(w, (int64_t)len);
    mote_jw_obj_end(w);
}

/* ---- responses ------------------------------------------------------------- */

static const char *reason_of(unsigned status)
{
    switch (status) {
    case 200: return "OK";
    case 201: return "Created";
    case 202: return "Accepted";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 414: return "URI Too Long";
    case 417: return "Expectation Failed";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 505: return "HTTP Version Not Supported";
    default: return "Unknown";
    }
}

static bool head_out(struct mote_serve_conn *c, unsigned status, const char *type,
                     const char *extra, bool with_length, uint64_t length)
{
    bool ok = out_puts(c, "HTTP/1.1 ") && out_u64(c, status) && out_puts(c, " ") &&
              out_puts(c, reason_of(status)) && out_puts(c, "\r\nContent-Type: ") &&
              out_puts(c, type) && out_puts(c, "\r\nCache-Control: no-store\r\n");

    if (ok && with_length)
        ok = out_puts(c, "Content-Length: ") && out_u64(c, length) && out_puts(c, "\r\n");
    if (ok && extra != NULL)
        ok = out_puts(c, extra);
    if (ok && !c->keep_alive)
        ok = out_puts(c, "Connection: close\r\n");
    return ok && out_puts(c, "\r\n");
}

static void respond_start(struct mote_serve *sv, struct mote_serve_conn *c)
{
    c->state = CS_RESP;
    c->last_io = now_ms(sv);
}

/* A complete JSON response with body `body` (len bytes). */
static void reply(struct mote_serve *sv, struct mote_serve_conn *c, unsigned status,
                  const char *body, size_t len, const char *extra)
{
    size_t mark = c->out_len;

    if (!head_out(c, status, "application/json", extra, true, len) ||
        !out_put(c, body, c->io->req.method == MOTE_HM_HEAD ? 0 : len)) {
        static const char oops[] = "{\"error\":\"internal\",\"message\":\"the response does not "
                                   "fit the connection's buffer\"}\n";

        c->out_len = mark;
        c->keep_alive = false;
        (void)head_out(c, 500, "application/json", NULL, true, sizeof(oops) - 1);
        (void)out_put(c, oops, sizeof(oops) - 1);
    }
    c->stream = ST_NONE;
    respond_start(sv, c);
}

/* A refusal: {"error": code, "message": message}. Statuses that leave the
 * request's bytes unread (or the client unwelcome) close the connection. */
static void fail(struct mote_serve *sv, struct mote_serve_conn *c, unsigned status,
                 const char *code, const char *message, const char *extra)
{
    struct mote_sb s;
    struct mote_jw w;
    char line[240];
    struct mote_sb sb;

    if (status == 400 || status == 401 || status == 408 || status == 411 || status == 413 ||
        status == 414 || status == 417 || status == 431 || status >= 500)
        c->keep_alive = false;
    mote_sb_init(&s, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &s);
    mote_jw_obj(&w);
    mote_jw_key(&w, "error");
    mote_jw_str(&w, code);
    mote_jw_key(&w, "message");
    mote_jw_str(&w, message);
    mote_jw_obj_end(&w);
    (void)mote_sb_put(&s, "\n", 1);
    reply(sv, c, status, s.p, w.err == 0 ? s.len : 0, extra);
    if (sv->conf.log != NULL) {
        mote_sb_init(&sb, line, sizeof(line));
        mote_sb_s(&sb, "serve: ");
        mote_sb_s(&sb, c->io->req.state == MOTE_HREQ_DONE ? mote_hreq_method_name(c->io->req.method)
                                                        : "-");
        mote_sb_s(&sb, " ");
        mote_sb_s(&sb, c->io->req.state == MOTE_HREQ_DONE ? c->io->req.path : "-");
        mote_sb_s(&sb, ": ");
        mote_sb_u(&sb, status);
        mote_sb_s(&sb, " ");
        mote_sb_s(&sb, message);
        sv->conf.log(sv->conf.log_arg, line);
    }
}

/* A refusal for a library failure. */
static void fail_err(struct mote_serve *sv, struct mote_serve_conn *c, int rc, uint32_t bad)
{
    char m[160];
    struct mote_sb sb;

    mote_sb_init(&sb, m, sizeof(m));
    switch (rc) {
    case MOTE_ERR_NOENT:
    case MOTE_ERR_INVAL:
        fail(sv, c, 404, "not_found", "no such conversation", NULL);
        return;
    case MOTE_ERR_CORRUPT:
        mote_sb_s(&sb, "the conversation is damaged at line ");
        mote_sb_u(&sb, bad);
        mote_sb_s(&sb, "; it is left as it is");
        fail(sv, c, 409, "damaged", m, NULL);
        return;
    case MOTE_ERR_NOTSUP:
        fail(sv, c, 409, "newer", "the conversation was written by a newer mote; it is left "
                                  "as it is",
             NULL);
        return;
    case MOTE_ERR_LOCKED:
        mote_sb_s(&sb, "the conversation is open in another process");
        if (sv->conf.session->lock_holder > 0) {
            mote_sb_s(&sb, " (pid ");
            mote_sb_u(&sb, (uint64_t)sv->conf.session->lock_holder);
            mote_sb_s(&sb, ")");
        }
        fail(sv, c, 409, "locked", m, NULL);
        return;
    case MOTE_ERR_FULL:
        mote_sb_s(&sb, "every conversation slot is busy (");
        mote_sb_u(&sb, MOTE_MAX_CONVERSATIONS);
        mote_sb_s(&sb, " loaded, none idle): try again when a turn ends");
        fail(sv, c, 503, "busy", m, "Retry-After: 5\r\n");
        return;
    case MOTE_ERR_SHUTDOWN:
        fail(sv, c, 503, "shutting_down", "mote is shutting down: no new turn starts", NULL);
        return;
    case MOTE_ERR_BUSY:
        fail(sv, c, 409, "busy", "a turn is running in this conversation", NULL);
        return;
    case MOTE_ERR_TOO_LARGE:
        fail(sv, c, 413, "too_large", "the message is larger than a journal record holds", NULL);
        return;
    default:
        mote_sb_s(&sb, "storage failed: ");
        mote_sb_s(&sb, mote_strerror(rc));
        fail(sv, c, 500, "storage", m, NULL);
        return;
    }
}

/* Chunked transfer coding of a streamed body: a chunk is opened with a
 * fixed-width size (4 hex digits: the out buffer is at most 64 KiB) and
 * patched when it is closed. */
#define CHUNK_HEAD 6

static bool chunk_open(struct mote_serve_conn *c, size_t *mark)
{
    *mark = c->out_len;
    if (!c->chunked)
        return true; /* HTTP/1.0: the body ends where the connection does */
    return out_put(c, "0000\r\n", CHUNK_HEAD);
}

static void chunk_close(struct mote_serve_conn *c, size_t mark)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = c->out_len - mark - CHUNK_HEAD;

    if (!c->chunked)
        return;
    if (n == 0) {
        c->out_len = mark; /* nothing in it: a zero-size chunk would end the body */
        return;
    }
    c->io->out[mark] = hex[(n >> 12) & 15u];
    c->io->out[mark + 1] = hex[(n >> 8) & 15u];
    c->io->out[mark + 2] = hex[(n >> 4) & 15u];
    c->io->out[mark + 3] = hex[n & 15u];
    c->io->out[c->out_len++] = '\r';
    c->io->out[c->out_len++] = '\n';
}

/* ---- request handlers ------------------------------------------------------ */

struct body {
    const char *p;
    size_t len;
};

/* The body as one JSON object in sv->json (an empty body is {} if
 * `empty_ok`). Refuses (and returns false) otherwise. */
static bool body_json(struct mote_serve *sv, struct mote_serve_conn *c, const struct body *b,
                      bool empty_ok)
{
    int rc;

    if (b->len == 0 && empty_ok) {
        rc = mote_json_parse(&sv->json, "{}", 2);
        return rc > 0;
    }
    rc = mote_json_parse(&sv->json, b->p, b->len);
    if (rc == MOTE_ERR_TOO_LARGE) {
        fail(sv, c, 413, "too_large", "the JSON body has too many values", NULL);
        return false;
    }
    if (rc <= 0 || mote_json_type_of(&sv->json, 0) != MOTE_JSON_OBJECT) {
        fail(sv, c, 400, "bad_json", "the body must be one JSON object", NULL);
        return false;
    }
    return true;
}

/* String member `key` into `out`; false (refused) if it is there but not
 * a string or too long. *present tells if it was there. */
static bool json_str_member(struct mote_serve *sv, struct mote_serve_conn *c, const char *key,
                            char *out, size_t cap, bool *present)
{
    int t = mote_json_member(&sv->json, 0, key);
    char m[80];
    struct mote_sb sb;

    *present = t >= 0 && !mote_json_is_null(&sv->json, t);
    out[0] = '\0';
    if (!*present)
        return true;
    if (mote_json_type_of(&sv->json, t) == MOTE_JSON_STRING &&
        mote_json_str(&sv->json, t, out, cap) >= 0)
        return true;
    mote_sb_init(&sb, m, sizeof(m));
    mote_sb_s(&sb, "\"");
    mote_sb_s(&sb, key);
    mote_sb_s(&sb, "\" must be a string (short enough)");
    fail(sv, c, 400, "bad_field", m, NULL);
    return false;
}

static void h_health(struct mote_serve *sv, struct mote_serve_conn *c)
{
    struct mote_session *s = sv->conf.session;
    struct mote_sb k;
    struct mote_jw w;
    unsigned i, loaded = 0, busy = 0;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        loaded += s->conv[i].used;
        busy += mote_conv_busy(&s->conv[i]);
    }
    mote_sb_init(&k, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_key(&w, "status");
    mote_jw_str(&w, sv->phase == MOTE_SERVE_RUN ? "ok" : "shutting_down");
    mote_jw_key(&w, "version");
    mote_jw_str(&w, mote_version());
    mote_jw_key(&w, "conversations");
    mote_jw_obj(&w);
    mote_jw_key(&w, "loaded");
    mote_jw_int(&w, loaded);
    mote_jw_key(&w, "busy");
    mote_jw_int(&w, busy);
    mote_jw_key(&w, "max");
    mote_jw_int(&w, MOTE_MAX_CONVERSATIONS);
    mote_jw_key(&w, "recovering");
    mote_jw_int(&w, sv->nrec);
    mote_jw_obj_end(&w);
    mote_jw_key(&w, "connections");
    mote_jw_obj(&w);
    mote_jw_key(&w, "open");
    mote_jw_int(&w, sv->nconns);
    mote_jw_key(&w, "max");
    mote_jw_int(&w, MOTE_SERVE_MAX_CONNS);
    mote_jw_key(&w, "refused");
    mote_jw_int(&w, sv->refused);
    mote_jw_obj_end(&w);
    mote_jw_obj_end(&w);
    (void)mote_sb_put(&k, "\n", 1);
    reply(sv, c, 200, k.p, k.len, NULL);
}

/* The list, a page at a time in the order of the ids: the page's ids
 * are chosen from the names alone (cheap), then each one's journal is
 * read for its state. */
struct list_ctx {
    struct mote_serve *sv;
    struct mote_sb out;
    const char *after;   /* the cursor: ids after it ("" none) */
    char (*ids)[MOTE_CONV_ID_MAX]; /* the page's ids, sorted (in sv->scratch) */
    unsigned n, cap;     /* ids kept, the page's size */
    bool more;           /* ids after the page */
    unsigned written;    /* entries in the body */
};

#define LIST_SUFFIX ".jsonl"

/* st_list: keeps the `cap` smallest ids after the cursor. */
static int list_name(void *arg, const char *name)
{
    struct list_ctx *x = arg;
    size_t n = strlen(name), k = sizeof(LIST_SUFFIX) - 1;
    char id[MOTE_CONV_ID_MAX];
    unsigned lo = 0, hi;

    if (n <= k || n - k >= sizeof(id) || strcmp(name + n - k, LIST_SUFFIX) != 0)
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
    memmove(x->ids[lo + 1], x->ids[lo], (x->n - lo) * sizeof(x->ids[0]));
    memcpy(x->ids[lo], id, n - k + 1);
    x->n++;
    return 0;
}

static const char *disk_state(const struct mote_conv_info *i)
{
    if (i->damaged)
        return "damaged";
    if (i->newer)
        return "newer";
    if (i->holder != 0)
        return "locked";
    return i->state == MOTE_RECOVER_IDLE ? "idle" : "needs_recovery";
}

static int list_one(void *arg, const struct mote_conv_info *i)
{
    struct list_ctx *x = arg;
    struct mote_serve *sv = x->sv;
    struct mote_conv *cv = i->loaded ? mote_conv_find(sv->conf.session, i->id) : NULL;
    struct mote_sb e;
    struct mote_jw w;

    mote_sb_init(&e, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &e);
    mote_jw_obj(&w);
    mote_jw_key(&w, "id");
    mote_jw_str(&w, i->id);
    mote_jw_key(&w, "state");
    mote_jw_str(&w, cv != NULL ? mote_conv_state_name(mote_conv_state(cv)) : disk_state(i));
    mote_jw_key(&w, "loaded");
    mote_jw_bool(&w, cv != NULL);
    mote_jw_key(&w, "busy");
    mote_jw_bool(&w, cv != NULL && mote_conv_busy(cv));
    mote_jw_key(&w, "bytes");
    mote_jw_int(&w, (int64_t)i->bytes);
    mote_jw_key(&w, "user_messages");
    mote_jw_int(&w, i->user_messages);
    mote_jw_key(&w, "first");
    mote_jw_str(&w, i->first);
    if (i->damaged) {
        mote_jw_key(&w, "bad_line");
        mote_jw_int(&w, i->bad_line);
    }
    if (i->holder > 0) {
        mote_jw_key(&w, "holder");
        mote_jw_int(&w, i->holder);
    }
    mote_jw_obj_end(&w);
    if (w.err != 0)
        return 0; /* cannot happen with these sizes; leave it out */
    if (mote_sb_put(&x->out, x->written > 0 ? "," : "", x->written > 0 ? 1u : 0u) < 0 ||
        mote_sb_put(&x->out, e.p, e.len) < 0)
        return 1; /* the body is full */
    x->written++;
    return 0;
}

/* GET /v1/conversations[?after=ID][&limit=N]: ids after the cursor, in
 * order, at most N (MOTE_SERVE_LIST_PAGE by default) and what fits the
 * body; "next" is the cursor for the rest (null: none). */
static void h_list(struct mote_serve *sv, struct mote_serve_conn *c)
{
    const struct mote_port *p = sv->port;
    struct list_ctx x;
    char after[MOTE_CONV_ID_MAX], q[24];
    uint64_t limit = MOTE_SERVE_LIST_PAGE;
    unsigned i, last = 0, max = (unsigned)(sizeof(sv->scratch) / MOTE_CONV_ID_MAX);
    const char *next = NULL;
    bool full = false;
    int rc;

    after[0] = '\0';
    if (mote_hreq_query(&c->io->req, "after", after, sizeof(after)) >= 0 &&
        !id_ok(after, strlen(after))) {
        fail(sv, c, 400, "bad_cursor", "\"after\" is a conversation id (the \"next\" of the "
                                       "page before)",
             NULL);
        return;
    }
    if (mote_hreq_query(&c->io->req, "limit", q, sizeof(q)) >= 0 &&
        (mote_dec_parse(q, strlen(q), &limit) < 0 || limit < 1 || limit > max)) {
        fail(sv, c, 400, "bad_limit", "\"limit\" is a number of conversations: 1 to the most a "
                                      "page holds",
             NULL);
        return;
    }
    if (c->big < 0 && (c->big = big_get(sv)) < 0) {
        fail(sv, c, 503, "busy", "no buffer free for the list: try again", "Retry-After: 1\r\n");
        return;
    }
    memset(&x, 0, sizeof(x));
    x.sv = sv;
    x.after = after;
    x.ids = (char(*)[MOTE_CONV_ID_MAX])(void *)sv->scratch;
    x.cap = (unsigned)limit;
    rc = p->st_list(p->ctx, "conversations", list_name, &x);
    if (rc < 0 && rc != MOTE_ERR_NOENT) {
        big_put(sv, c);
        fail_err(sv, c, rc, 0);
        return;
    }
    /* the end (with a cursor) always fits: room is kept for it */
    mote_sb_init(&x.out, sv->bigbuf[c->big], sizeof(sv->bigbuf[0]) - MOTE_CONV_ID_MAX - 64);
    mote_sb_s(&x.out, "{\"conversations\":[");
    for (i = 0; i < x.n; i++) {
        unsigned before = x.written;

        rc = mote_session_info(sv->conf.session, x.ids[i], list_one, &x);
        if (rc == MOTE_ERR_NOENT)
            continue; /* gone since (or empty) */
        if (rc < 0) {
            big_put(sv, c);
            fail_err(sv, c, rc, 0);
            return;
        }
        if (x.written == before) {
            full = true; /* the rest on the next page */
            break;
        }
        last = i;
    }
    if (full && x.written == 0) {
        big_put(sv, c);
        fail(sv, c, 500, "internal", "one conversation's entry does not fit the list", NULL);
        return;
    }
    if (full)
        next = x.ids[last];
    else if (x.more && x.n > 0)
        next = x.ids[x.n - 1];
    x.out.cap = sizeof(sv->bigbuf[0]);
    mote_sb_s(&x.out, next != NULL ? "],\"truncated\":true,\"next\":\"" : "],\"truncated\":false,"
                                                                      "\"next\":null}\n");
    if (next != NULL) {
        mote_sb_s(&x.out, next); /* an id: nothing to escape */
        mote_sb_s(&x.out, "\"}\n");
    }
    (void)head_out(c, 200, "application/json", NULL, true, x.out.len);
    c->big_len = x.out.len;
    c->big_off = 0;
    c->stream = ST_NONE;
    respond_start(sv, c);
}

static void h_create(struct mote_serve *sv, struct mote_serve_conn *c, const struct body *b)
{
    char id[MOTE_CONV_ID_MAX];
    struct mote_conv *cv;
    bool has_id;
    struct mote_sb k;
    struct mote_jw w;
    int rc;

    if (sv->phase != MOTE_SERVE_RUN) {
        fail_err(sv, c, MOTE_ERR_SHUTDOWN, 0);
        return;
    }
    if (!body_json(sv, c, b, true) || !json_str_member(sv, c, "id", id, sizeof(id), &has_id))
        return;
    if (has_id && !id_ok(id, strlen(id))) {
        fail(sv, c, 400, "bad_id", "an id is 1 to 39 of [A-Za-z0-9_-]", NULL);
        return;
    }
    if ((rc = make_room(sv)) < 0 ||
        (rc = mote_conv_create(sv->conf.session, sv->conf.conv, has_id ? id : NULL, &cv)) < 0) {
        if (rc == MOTE_ERR_EXIST || rc == MOTE_ERR_BUSY)
            fail(sv, c, 409, "exists", "a conversation with this id exists", NULL);
        else
            fail_err(sv, c, rc, 0);
        return;
    }
    touch(sv, cv);
    say(sv, "created conversation ", mote_conv_id(cv), NULL);
    prune(sv); /* the new one is open: never removed */
    mote_sb_init(&k, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_key(&w, "id");
    mote_jw_str(&w, mote_conv_id(cv));
    mote_jw_key(&w, "state");
    mote_jw_str(&w, mote_conv_state_name(mote_conv_state(cv)));
    mote_jw_obj_end(&w);
    (void)mote_sb_put(&k, "\n", 1);
    reply(sv, c, 201, k.p, k.len, NULL);
}

/* Validates a record offset of the journal open in c->sh: `off` must be
 * 0 or follow a newline, and be at most `end`. */
static bool record_start(struct mote_serve *sv, struct mote_serve_conn *c, uint64_t off,
                         uint64_t end)
{
    const struct mote_port *p = sv->port;
    char b = 0;

    if (off > end)
        return false;
    if (off == 0)
        return true;
    return p->st_read(p->ctx, c->sh, off - 1, &b, 1) == 1 && b == '\n';
}

static bool number(const char *s, uint64_t *out)
{
    return s != NULL && mote_dec_parse(s, strlen(s), out) == 0;
}

static void h_get(struct mote_serve *sv, struct mote_serve_conn *c, const char *id)
{
    const struct mote_port *p = sv->port;
    struct mote_session *s = sv->conf.session;
    struct mote_conv *cv = find(sv, id);
    char name[MOTE_STORAGE_NAME_MAX], q[24], err[MOTE_JOB_ERRMSG_LEN];
    const char *state;
    uint64_t from = 0, end;
    bool records = true, busy = false;
    struct mote_sb k;
    struct mote_jw w;
    size_t mark, head_mark;
    int64_t holder = 0;
    int rc;

    err[0] = '\0';
    if (cv != NULL) {
        state = mote_conv_state_name(mote_conv_state(cv));
        busy = mote_conv_busy(cv);
        end = cv->jr.size;
        mote_str_copy(err, sizeof(err), cv->last_error);
    } else {
        sv->peek.buf = &s->jbuf;
        rc = mote_journal_peek(&sv->peek, p, id);
        if (rc < 0) {
            fail_err(sv, c, rc, sv->peek.bad_line);
            return;
        }
        rc = mote_recover(&sv->peek, &sv->recovery);
        end = sv->peek.size;
        mote_journal_close(&sv->peek);
        if (rc < 0) {
            fail_err(sv, c, rc, 0);
            return;
        }
        state = sv->peek.holder != 0 ? "locked"
                : sv->recovery.action != MOTE_RECOVER_IDLE ? "needs_recovery"
                : sv->recovery.last_error[0] != '\0' && !sv->recovery.cancelled ? "error"
                                                                                  : "idle";
        holder = sv->peek.holder;
        if (sv->recovery.action == MOTE_RECOVER_IDLE && !sv->recovery.cancelled)
            mote_str_copy(err, sizeof(err), sv->recovery.last_error);
    }
    if (mote_hreq_query(&c->io->req, "records", q, sizeof(q)) >= 0)
        records = !(strcmp(q, "0") == 0 || strcmp(q, "false") == 0 || strcmp(q, "no") == 0);
    journal_name(name, id);
    c->sh = p->st_open(p->ctx, name, MOTE_ST_READ);
    if (c->sh < 0) {
        rc = c->sh;
        c->sh = -1;
        fail_err(sv, c, rc, 0);
        return;
    }
    if (mote_hreq_query(&c->io->req, "from", q, sizeof(q)) >= 0 &&
        (!number(q, &from) || !record_start(sv, c, from, end))) {
        fail(sv, c, 400, "bad_offset", "\"from\" must be the offset of a record (an event id) "
                                       "or 0",
             NULL);
        return;
    }
    mote_sb_init(&k, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_key(&w, "id");
    mote_jw_str(&w, id);
    mote_jw_key(&w, "state");
    mote_jw_str(&w, state);
    mote_jw_key(&w, "loaded");
    mote_jw_bool(&w, cv != NULL);
    mote_jw_key(&w, "busy");
    mote_jw_bool(&w, busy);
    if (holder > 0) {
        mote_jw_key(&w, "holder");
        mote_jw_int(&w, holder);
    }
    mote_jw_key(&w, "size");
    mote_jw_int(&w, (int64_t)end);
    mote_jw_key(&w, "last_error");
    if (err[0] != '\0')
        mote_jw_str(&w, err);
    else
        mote_jw_null(&w);
    approval_json(sv, cv, &w, INPUT_INLINE_MAX);
    if (records) {
        mote_jw_key(&w, "records");
        (void)mote_sb_put(&k, "[", 1); /* the writer's depth is left: the records follow */
    } else {
        mote_jw_obj_end(&w);
        (void)mote_sb_put(&k, "\n", 1);
    }
    /* Chunked for HTTP/1.1; an HTTP/1.0 client cannot take it (RFC 9112
     * 6.1): its body ends when the connection closes. */
    c->chunked = c->io->req.minor >= 1;
    if (!c->chunked)
        c->keep_alive = false;
    head_mark = c->out_len;
    if (w.err != 0 ||
        !head_out(c, 200, "application/json", c->chunked ? "Transfer-Encoding: chunked\r\n" : NULL,
                  false, 0) ||
        !chunk_open(c, &mark) || !out_put(c, k.p, k.len)) {
        c->out_len = head_mark; /* no part of the 200 before the 500 */
        fail(sv, c, 500, "internal", "the state does not fit the connection's buffer", NULL);
        return;
    }
    chunk_close(c, mark);
    c->stream = ST_RECORDS;
    c->pos = from;
    c->end = end;
    c->comma = false;
    c->in_record = false;
    c->tail = !records;
    if (!records && c->chunked)
        (void)out_puts(c, "0\r\n\r\n");
    respond_start(sv, c);
}

static void h_delete(struct mote_serve *sv, struct mote_serve_conn *c, const char *id)
{
    struct mote_conv *cv = find(sv, id);
    unsigned i;
    int rc;

    if (cv != NULL && mote_conv_close(cv) < 0) {
        fail(sv, c, 409, "busy", "a turn is running in this conversation", NULL);
        return;
    }
    rc = mote_session_remove(sv->conf.session, id);
    if (rc == MOTE_ERR_BUSY) {
        fail(sv, c, 409, "unfinished", "the conversation needs recovery or is damaged: it "
                                       "stays",
             NULL);
        return;
    }
    if (rc < 0) {
        fail_err(sv, c, rc, 0);
        return;
    }
    say(sv, "removed conversation ", id, NULL);
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        struct mote_serve_conn *e = &sv->conns[i];

        if (e->state == CS_RESP && e->stream == ST_EVENTS && !e->gone &&
            strcmp(e->conv_id, id) == 0) {
            e->gone = true; /* its last event, then closed */
            conn_watch(sv, e, true);
        }
    }
    {
        struct mote_sb k;
        struct mote_jw w;

        mote_sb_init(&k, sv->resp, sizeof(sv->resp));
        mote_jw_init(&w, mote_sb_put, &k);
        mote_jw_obj(&w);
        mote_jw_key(&w, "removed");
        mote_jw_str(&w, id);
        mote_jw_obj_end(&w);
        (void)mote_sb_put(&k, "\n", 1);
        reply(sv, c, 200, k.p, k.len, NULL);
    }
}

/* {"id": ..., "state": ..., "offset": N} with 202. */
static void accepted(struct mote_serve *sv, struct mote_serve_conn *c, struct mote_conv *cv,
                     int64_t offset)
{
    struct mote_sb k;
    struct mote_jw w;

    mote_sb_init(&k, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_key(&w, "id");
    mote_jw_str(&w, mote_conv_id(cv));
    mote_jw_key(&w, "state");
    mote_jw_str(&w, mote_conv_state_name(mote_conv_state(cv)));
    if (offset >= 0) {
        mote_jw_key(&w, "offset");
        mote_jw_int(&w, offset);
    }
    mote_jw_obj_end(&w);
    (void)mote_sb_put(&k, "\n", 1);
    reply(sv, c, 202, k.p, k.len, NULL);
}

static void h_message(struct mote_serve *sv, struct mote_serve_conn *c, const char *id,
                      const struct body *b, bool retry)
{
    struct mote_conv *cv;
    uint32_t bad;
    uint64_t off;
    int t = -1, n = 0, rc;

    if (sv->phase != MOTE_SERVE_RUN) {
        fail_err(sv, c, MOTE_ERR_SHUTDOWN, 0);
        return;
    }
    if (!body_json(sv, c, b, retry))
        return;
    if (!retry) {
        t = mote_json_member(&sv->json, 0, "text");
        if (mote_json_type_of(&sv->json, t) != MOTE_JSON_STRING) {
            fail(sv, c, 400, "bad_field", "the body needs \"text\": the message, a string",
                 NULL);
            return;
        }
        n = mote_json_str(&sv->json, t, sv->scratch, sizeof(sv->scratch));
        if (n < 0) {
            fail(sv, c, 413, "too_large", "the message is too long", NULL);
            return;
        }
    }
    if ((rc = load(sv, id, &cv, &bad)) < 0) {
        fail_err(sv, c, rc, bad);
        return;
    }
    if (mote_conv_busy(cv)) {
        char m[120];
        struct mote_sb sb;

        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_s(&sb, "a turn is running in this conversation (");
        mote_sb_s(&sb, mote_conv_state_name(mote_conv_state(cv)));
        mote_sb_s(&sb, "): wait for it, or cancel it");
        fail(sv, c, 409, "busy", m, NULL);
        return;
    }
    off = cv->jr.size;
    rc = retry ? mote_conv_retry(cv) : mote_conv_send(cv, sv->scratch, (size_t)n);
    if (rc == MOTE_ERR_INVAL) {
        fail(sv, c, 400, "empty", "the message is empty", NULL);
        return;
    }
    if (rc < 0) {
        fail_err(sv, c, rc, 0);
        return;
    }
    accepted(sv, c, cv, retry ? -1 : (int64_t)off);
}

static void h_cancel(struct mote_serve *sv, struct mote_serve_conn *c, const char *id)
{
    struct mote_conv *cv = find(sv, id);

    if (cv == NULL || mote_conv_cancel(cv) < 0) {
        fail(sv, c, 409, "idle", "no turn is running in this conversation", NULL);
        return;
    }
    accepted(sv, c, cv, -1);
}

static void h_approval(struct mote_serve *sv, struct mote_serve_conn *c, const char *id,
                       const struct body *b)
{
    struct mote_conv *cv = find(sv, id);
    const struct mote_conv_call *call;
    char call_id[MOTE_LLM_ID_MAX], answer[16], reason[200];
    bool has_call, has_answer, has_reason;
    enum mote_answer a;
    int64_t ask_given = 0;
    uint32_t ask;
    int t;

    if (!body_json(sv, c, b, false) ||
        !json_str_member(sv, c, "call_id", call_id, sizeof(call_id), &has_call) ||
        !json_str_member(sv, c, "answer", answer, sizeof(answer), &has_answer) ||
        !json_str_member(sv, c, "reason", reason, sizeof(reason), &has_reason))
        return;
    if (!has_call || !has_answer) {
        fail(sv, c, 400, "bad_field", "the body needs \"call_id\" and \"answer\" (yes, no or "
                                      "always)",
             NULL);
        return;
    }
    if (strcmp(answer, "yes") == 0) {
        a = MOTE_ANSWER_YES;
    } else if (strcmp(answer, "no") == 0) {
        a = MOTE_ANSWER_NO;
    } else if (strcmp(answer, "always") == 0) {
        a = MOTE_ANSWER_ALWAYS;
    } else {
        fail(sv, c, 400, "bad_field", "\"answer\" is yes, no or always", NULL);
        return;
    }
    t = mote_json_member(&sv->json, 0, "ask_id");
    if (t >= 0 && (mote_json_int(&sv->json, t, &ask_given) < 0 || ask_given < 1 ||
                   ask_given > (int64_t)UINT32_MAX)) {
        fail(sv, c, 400, "bad_field", "\"ask_id\" must be a number from 1 to 4294967295",
             NULL);
        return;
    }
    if (sv->phase != MOTE_SERVE_RUN) {
        fail(sv, c, 503, "shutting_down", "mote is shutting down: the call stays pending and "
                                          "is asked again on the next start",
             NULL);
        return;
    }
    ask = cv != NULL ? mote_conv_pending(cv, &call) : 0;
    if (ask == 0) {
        fail(sv, c, 409, "no_question", "no tool call of this conversation waits for an answer",
             NULL);
        return;
    }
    /* The call's id names the question across restarts (an ask_id is
     * only a counter): an answer to another call answers nothing. */
    if (strcmp(call->id, call_id) != 0 || (t >= 0 && (uint32_t)ask_given != ask) ||
        mote_conv_approve(cv, ask, a, has_reason ? reason : NULL) < 0) {
        fail(sv, c, 409, "stale", "that call is not the one waiting for an answer", NULL);
        return;
    }
    say(sv, "approval answered: ", answer, NULL);
    {
        struct mote_sb k;
        struct mote_jw w;

        mote_sb_init(&k, sv->resp, sizeof(sv->resp));
        mote_jw_init(&w, mote_sb_put, &k);
        mote_jw_obj(&w);
        mote_jw_key(&w, "id");
        mote_jw_str(&w, mote_conv_id(cv));
        mote_jw_key(&w, "call_id");
        mote_jw_str(&w, call_id);
        mote_jw_key(&w, "answer");
        mote_jw_str(&w, answer);
        mote_jw_obj_end(&w);
        (void)mote_sb_put(&k, "\n", 1);
        reply(sv, c, 200, k.p, k.len, NULL);
    }
}

static void h_events(struct mote_serve *sv, struct mote_serve_conn *c, const char *id)
{
    const struct mote_port *p = sv->port;
    char name[MOTE_STORAGE_NAME_MAX], q[24];
    uint64_t n = 0, end;
    bool after = false, from = false;
    int rc;

    journal_name(name, id);
    c->sh = p->st_open(p->ctx, name, MOTE_ST_READ);
    if (c->sh < 0) {
        rc = c->sh;
        c->sh = -1;
        fail_err(sv, c, rc, 0);
        return;
    }
    mote_str_copy(c->conv_id, sizeof(c->conv_id), id);
    c->pos = 0;
    c->gone = false;
    c->disk_size = UINT64_MAX;
    c->disk_end = 0;
    end = conv_end(sv, c);
    if (c->io->req.last_event_id != NULL) {
        after = true;
        if (!number(c->io->req.last_event_id, &n))
            n = UINT64_MAX;
    } else if (mote_hreq_query(&c->io->req, "after", q, sizeof(q)) >= 0) {
        after = true;
        if (!number(q, &n))
            n = UINT64_MAX;
    } else if (mote_hreq_query(&c->io->req, "from", q, sizeof(q)) >= 0) {
        from = true;
        if (!number(q, &n))
            n = UINT64_MAX;
    } else {
        n = end; /* from now on */
    }
    if ((after || from) && (n == UINT64_MAX || !record_start(sv, c, n, end) ||
                            (after && n >= end))) {
        fail(sv, c, 400, "bad_event_id", "Last-Event-ID (or after=, from=) must be the id of a "
                                         "record of this conversation",
             NULL);
        return;
    }
    c->keep_alive = false;
    if (!head_out(c, 200, "text/event-stream", "X-Accel-Buffering: no\r\n", false, 0) ||
        !out_puts(c, "retry: 2000\n\n")) {
        fail(sv, c, 500, "internal", "cannot start the stream", NULL);
        return;
    }
    c->stream = ST_EVENTS;
    c->pos = n;
    c->skip = after;
    c->in_record = false;
    c->told_state = false;
    c->final = false;
    respond_start(sv, c);
}

/* ---- routing --------------------------------------------------------------- */

static enum route route_of(const char *path, char *id)
{
    static const char base[] = "/v1/conversations";
    static const struct {
        const char *suffix;
        enum route r;
    } subs[] = {{"", R_CONV},           {"/messages", R_MESSAGES}, {"/retry", R_RETRY},
                {"/cancel", R_CANCEL}, {"/approval", R_APPROVAL}, {"/events", R_EVENTS}};
    const char *rest, *slash;
    size_t n, i;

    if (strcmp(path, "/v1/health") == 0)
        return R_HEALTH;
    if (strncmp(path, base, sizeof(base) - 1) != 0)
        return R_NONE;
    rest = path + sizeof(base) - 1;
    if (rest[0] == '\0' || strcmp(rest, "/") == 0)
        return R_LIST;
    if (rest[0] != '/')
        return R_NONE;
    rest++;
    slash = strchr(rest, '/');
    n = slash != NULL ? (size_t)(slash - rest) : strlen(rest);
    if (!id_ok(rest, n))
        return R_NONE;
    memcpy(id, rest, n);
    id[n] = '\0';
    rest += n;
    for (i = 0; i < sizeof(subs) / sizeof(subs[0]); i++) {
        if (strcmp(rest, subs[i].suffix) == 0)
            return subs[i].r;
    }
    return R_NONE;
}

/* The methods a route takes ("Allow" for 405). */
static const char *allow_of(enum route r)
{
    switch (r) {
    case R_HEALTH: return "GET, HEAD";
    case R_LIST: return "GET, POST";
    case R_CONV: return "GET, DELETE";
    case R_EVENTS: return "GET";
    default: return "POST";
    }
}

static bool method_ok(enum route r, enum mote_hreq_method m)
{
    switch (r) {
    case R_HEALTH: return m == MOTE_HM_GET || m == MOTE_HM_HEAD;
    case R_LIST: return m == MOTE_HM_GET || m == MOTE_HM_POST;
    case R_CONV: return m == MOTE_HM_GET || m == MOTE_HM_DELETE;
    case R_EVENTS: return m == MOTE_HM_GET;
    default: return m == MOTE_HM_POST;
    }
}

/* Constant-time comparison of "Bearer TOKEN" with the server's token. */
static bool authorized(const struct mote_serve *sv, const struct mote_serve_conn *c)
{
    const char *h = c->io->req.authorization, *tok = sv->conf.token;
    size_t n, k, i;
    unsigned diff = 0;

    if (c->listener == 0)
        return true; /* the socket's mode is the Unix socket's access control */
    /* the scheme is case-insensitive (RFC 9110 11.1), then 1*SP */
    if (h == NULL || tok == NULL || !mote_ascii_ieq(h, "bearer", 6) || h[6] != ' ')
        return false;
    h += 6;
    while (*h == ' ')
        h++;
    n = strlen(h);
    k = strlen(tok);
    diff = n != k;
    for (i = 0; i < k; i++)
        diff |= (unsigned)(unsigned char)tok[i] ^ (unsigned)(unsigned char)(i < n ? h[i] : 0);
    return diff == 0;
}

/* The head is in: refuse, or get ready for the body. */
static void on_head(struct mote_serve *sv, struct mote_serve_conn *c)
{
    char id[MOTE_CONV_ID_MAX];
    enum route r;
    uint64_t cl = c->io->req.has_length ? c->io->req.content_length : 0;

    c->keep_alive = c->io->req.keep_alive && sv->phase < MOTE_SERVE_FINAL;
    if (cl > 0)
        c->keep_alive = c->keep_alive && cl <= MOTE_SERVE_BODY_MAX; /* read, or closed */
    if (!authorized(sv, c)) {
        /* closed after the answer: one guess per connection */
        fail(sv, c, 401, "unauthorized", "send Authorization: Bearer TOKEN (the token file "
                                         "or MOTE_SERVE_TOKEN)",
             "WWW-Authenticate: Bearer\r\n");
        return;
    }
    r = route_of(c->io->req.path, id);
    if (r == R_NONE) {
        c->keep_alive = c->keep_alive && cl == 0;
        fail(sv, c, 404, "not_found", "no such endpoint (see docs/SERVE.md)", NULL);
        return;
    }
    if (!method_ok(r, c->io->req.method)) {
        char allow[64];
        struct mote_sb sb;

        mote_sb_init(&sb, allow, sizeof(allow));
        mote_sb_s(&sb, "Allow: ");
        mote_sb_s(&sb, allow_of(r));
        mote_sb_s(&sb, "\r\n");
        c->keep_alive = c->keep_alive && cl == 0;
        fail(sv, c, c->io->req.method == MOTE_HM_OTHER ? 501 : 405, "method",
             "this method is not served here", allow);
        return;
    }
    if (cl > MOTE_SERVE_BODY_MAX) {
        fail(sv, c, 413, "too_large", "the body is larger than MOTE_SERVE_BODY_MAX", NULL);
        return;
    }
    c->body_len = cl;
    c->body_got = 0;
    if (cl > sizeof(c->io->in)) {
        size_t take;

        if ((c->big = big_get(sv)) < 0) {
            fail(sv, c, 503, "busy", "no buffer free for a large body: try again",
                 "Retry-After: 1\r\n");
            return;
        }
        take = c->in_len < cl ? c->in_len : (size_t)cl;
        memcpy(sv->bigbuf[c->big], c->io->in, take);
        memmove(c->io->in, c->io->in + take, c->in_len - take);
        c->in_len -= take;
        c->body_got = take;
    }
    if (cl > 0 && c->io->req.expect_continue)
        (void)out_puts(c, "HTTP/1.1 100 Continue\r\n\r\n");
    c->state = CS_BODY;
    c->deadline = now_ms(sv) + cfg(sv->conf.body_timeout_ms, MOTE_SERVE_BODY_TIMEOUT_MS);
}

static bool body_complete(const struct mote_serve_conn *c)
{
    return c->big >= 0 ? c->body_got >= c->body_len : c->in_len >= c->body_len;
}

/* The whole request is in: answer it. */
static void on_request(struct mote_serve *sv, struct mote_serve_conn *c)
{
    char id[MOTE_CONV_ID_MAX];
    enum route r = route_of(c->io->req.path, id);
    struct body b;

    b.p = c->big >= 0 ? sv->bigbuf[c->big] : c->io->in;
    b.len = (size_t)c->body_len;
    if (c->big >= 0) {
        /* The body stays where it is for this call; the buffer is free
         * again for whatever the handler needs (the list). */
        sv->big_used[c->big] = false;
        c->big = -1;
    }
    switch (r) {
    case R_HEALTH:
        h_health(sv, c);
        break;
    case R_LIST:
        if (c->io->req.method == MOTE_HM_POST)
            h_create(sv, c, &b);
        else
            h_list(sv, c);
        break;
    case R_CONV:
        if (c->io->req.method == MOTE_HM_DELETE)
            h_delete(sv, c, id);
        else
            h_get(sv, c, id);
        break;
    case R_MESSAGES:
        h_message(sv, c, id, &b, false);
        break;
    case R_RETRY:
        h_message(sv, c, id, &b, true);
        break;
    case R_CANCEL:
        h_cancel(sv, c, id);
        break;
    case R_APPROVAL:
        h_approval(sv, c, id, &b);
        break;
    case R_EVENTS:
        h_events(sv, c, id);
        break;
    default:
        fail(sv, c, 404, "not_found", "no such endpoint", NULL);
        break;
    }
    if (b.p == c->io->in) {
        /* the body is consumed: what follows is the next request */
        memmove(c->io->in, c->io->in + c->body_len, c->in_len - (size_t)c->body_len);
        c->in_len -= (size_t)c->body_len;
    }
    c->body_len = 0;
}

/* ---- streams --------------------------------------------------------------- */

/* Reads journal bytes at c->pos into the out buffer (at most `max`) and
 * takes them up to the end of the record. Returns how many were taken, 0
 * when nothing could be read; *done says the record ended (its newline
 * is left out). */
static size_t copy_record(struct mote_serve *sv, struct mote_serve_conn *c, size_t max,
                          uint64_t end, bool *done, bool keep)
{
    const struct mote_port *p = sv->port;
    uint64_t left = end - c->pos;
    size_t want = left < max ? (size_t)left : max;
    const char *nl;
    int got;

    *done = false;
    if (want == 0 || c->sh < 0)
        return 0;
    got = p->st_read(p->ctx, c->sh, c->pos, c->io->out + c->out_len, want);
    if (got <= 0)
        return 0;
    nl = memchr(c->io->out + c->out_len, '\n', (size_t)got);
    if (nl != NULL) {
        size_t n = (size_t)(nl - (c->io->out + c->out_len));

        *done = true;
        if (keep)
            c->out_len += n;
        c->pos += n + 1;
        return n + 1;
    }
    if (keep)
        c->out_len += (size_t)got;
    c->pos += (uint64_t)got;
    return (size_t)got;
}

/* Refills a records response. Returns true if it produced something. */
static bool pump_records(struct mote_serve *sv, struct mote_serve_conn *c)
{
    size_t mark, before = c->out_len;
    bool done;

    if (c->tail || out_room(c) < 96 || !chunk_open(c, &mark))
        return false;
    while (out_room(c) > 64) {
        if (!c->in_record) {
            if (c->pos >= c->end) {
                (void)out_puts(c, "]}\n");
                c->tail = true;
                break;
            }
            (void)out_puts(c, c->comma ? ",{\"offset\":" : "{\"offset\":");
            (void)out_u64(c, c->pos);
            (void)out_puts(c, ",\"record\":");
            c->in_record = true;
            c->comma = true;
        }
        if (copy_record(sv, c, out_room(c) - 8, c->end, &done, true) == 0 && !done) {
            /* the snapshot's end came early (cannot happen with a whole
             * journal): close what is open */
            (void)out_puts(c, "null}");
            c->in_record = false;
            c->pos = c->end;
            continue;
        }
        if (done) {
            (void)out_puts(c, "}");
            c->in_record = false;
        }
    }
    chunk_close(c, mark);
    if (c->tail && c->chunked)
        (void)out_puts(c, "0\r\n\r\n");
    return c->out_len > before;
}

/* event: state, for a client that just caught up. */
/* What the disk says of a conversation not loaded (state_event). */
struct disk_look {
    const char *state;
    int64_t holder;
};

static int disk_look(void *arg, const struct mote_conv_info *i)
{
    struct disk_look *d = arg;

    d->state = disk_state(i);
    d->holder = i->holder;
    return 0;
}

static bool state_event(struct mote_serve *sv, struct mote_serve_conn *c)
{
    struct mote_conv *cv = c->gone ? NULL : mote_conv_find(sv->conf.session, c->conv_id);
    struct disk_look d = {"idle", 0};
    struct mote_sb k;
    struct mote_jw w;
    unsigned i;
    bool queued = false;

    for (i = 0; cv == NULL && i < sv->nrec; i++)
        queued = queued || strcmp(sv->rec[i], c->conv_id) == 0;
    if (cv == NULL && !queued)
        (void)mote_session_info(sv->conf.session, c->conv_id, disk_look, &d); /* locked, ... */
    mote_sb_init(&k, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &k);
    (void)mote_sb_put(&k, "event: state\ndata: ", 19);
    mote_jw_obj(&w);
    mote_jw_key(&w, "state");
    mote_jw_str(&w, cv != NULL ? mote_conv_state_name(mote_conv_state(cv))
                    : queued   ? "needs_recovery"
                               : d.state);
    mote_jw_key(&w, "loaded");
    mote_jw_bool(&w, cv != NULL);
    mote_jw_key(&w, "busy");
    mote_jw_bool(&w, cv != NULL && mote_conv_busy(cv));
    if (d.holder > 0) {
        mote_jw_key(&w, "holder");
        mote_jw_int(&w, d.holder);
    }
    approval_json(sv, cv, &w, INPUT_INLINE_MAX);
    mote_jw_obj_end(&w);
    (void)mote_sb_put(&k, "\n\n", 2);
    return w.err == 0 && k.len <= out_room(c) && out_put(c, k.p, k.len);
}

static bool final_event(struct mote_serve *sv, struct mote_serve_conn *c)
{
    struct mote_sb k;
    struct mote_jw w;

    mote_sb_init(&k, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &k);
    (void)mote_sb_put(&k, "event: shutdown\ndata: ", 22);
    mote_jw_obj(&w);
    mote_jw_key(&w, "reason");
    mote_jw_str(&w, sv->sd_reason);
    mote_jw_key(&w, "timed_out");
    mote_jw_bool(&w, sv->sd_timed_out);
    mote_jw_key(&w, "marked");
    mote_jw_int(&w, sv->sd_marked);
    mote_jw_obj_end(&w);
    (void)mote_sb_put(&k, "\n\n", 2);
    return w.err == 0 && out_put(c, k.p, k.len);
}

/* event: removed, the last event of a stream whose conversation was
 * deleted. */
static bool removed_event(struct mote_serve_conn *c)
{
    return out_puts(c, "event: removed\ndata: {\"id\":\"") && out_puts(c, c->conv_id) &&
           out_puts(c, "\"}\n\n");
}

/* True when an event stream has sent every record there is. */
static bool caught_up(struct mote_serve *sv, struct mote_serve_conn *c)
{
    return !c->in_record && !c->skip && c->pos >= conv_end(sv, c);
}

/* Refills an event stream. Returns true if it produced something. */
static bool pump_events(struct mote_serve *sv, struct mote_serve_conn *c)
{
    size_t before = c->out_len;
    unsigned rounds = 0;
    bool done;

    while (out_room(c) > 96 && rounds++ < 64) {
        uint64_t end;

        if (c->gone && !c->in_record) {
            /* the conversation was removed: its last event (a new one
             * of the same id is another conversation) */
            if (!c->final)
                c->final = removed_event(c);
            break;
        }
        end = conv_end(sv, c);
        if (c->skip) {
            /* the record the client has (Last-Event-ID): read past it */
            size_t mark = c->out_len;

            if (copy_record(sv, c, out_room(c), end, &done, false) == 0 && !done)
                break;
            c->out_len = mark;
            if (done)
                c->skip = false;
            continue;
        }
        if (!c->in_record) {
            if (c->pos >= end) {
                if (!c->told_state)
                    c->told_state = state_event(sv, c);
                if (sv->phase >= MOTE_SERVE_FINAL && !c->final && c->told_state)
                    c->final = final_event(sv, c);
                break;
            }
            (void)out_puts(c, "id: ");
            (void)out_u64(c, c->pos);
            (void)out_puts(c, "\nevent: record\ndata: ");
            c->in_record = true;
        }
        if (copy_record(sv, c, out_room(c) - 2, end, &done, true) == 0 && !done) {
            /* removed in the middle of a record that can no longer be
             * read: closed without its end (a client drops an event cut
             * short) */
            if (c->gone)
                c->final = true;
            break;
        }
        if (done) {
            (void)out_puts(c, "\n\n");
            c->in_record = false;
        }
    }
    return c->out_len > before;
}

/* ---- the connection's machine ------------------------------------------------ */

static bool has_output(const struct mote_serve_conn *c)
{
    return c->out_off < c->out_len || c->big_off < c->big_len;
}

/* Which readiness the connection waits for. */
static void conn_watch(struct mote_serve *sv, struct mote_serve_conn *c, bool poke)
{
    unsigned ev = 0;

    if (c->state == CS_FREE)
        return;
    if (has_output(c) || poke || c->again)
        ev |= MOTE_POLL_OUT;
    if (!c->peer_eof && (c->state != CS_RESP || c->stream == ST_EVENTS ||
                         c->in_len < sizeof(c->io->in)))
        ev |= MOTE_POLL_IN;
    (void)mote_watch_set(sv->loop, c->watch, ev);
}

static void conn_kill(struct mote_serve *sv, struct mote_serve_conn *c)
{
    const struct mote_port *p = sv->port;

    if (c->state == CS_FREE)
        return;
    if (c->watch != 0)
        (void)mote_watch_remove(sv->loop, c->watch);
    c->watch = 0;
    if (c->fd >= 0)
        p->net_close(p->ctx, c->fd);
    c->fd = -1;
    if (c->sh >= 0)
        p->st_close(p->ctx, c->sh);
    c->sh = -1;
    big_put(sv, c);
    c->state = CS_FREE;
    sv->nconns--;
    if (c->listener == 1)
        sv->ntcp--;
    if (sv->phase >= MOTE_SERVE_FINAL)
        kick(sv);
}

/* Ready for the next request on the same connection. */
static void next_request(struct mote_serve *sv, struct mote_serve_conn *c)
{
    const struct mote_port *p = sv->port;

    if (c->sh >= 0)
        p->st_close(p->ctx, c->sh);
    c->sh = -1;
    big_put(sv, c);
    mote_hreq_reset(&c->io->req);
    c->stream = ST_NONE;
    c->out_len = c->out_off = 0;
    c->head_started = false;
    c->state = CS_HEAD;
    c->deadline = now_ms(sv) + cfg(sv->conf.idle_timeout_ms, MOTE_SERVE_IDLE_TIMEOUT_MS);
}

static bool response_done(const struct mote_serve_conn *c)
{
    if (has_output(c))
        return false;
    if (c->stream == ST_RECORDS)
        return c->tail;
    if (c->stream == ST_EVENTS)
        return c->final;
    return true;
}

/* Sends what is pending; refills streams. Returns false if it killed. */
static bool flush(struct mote_serve *sv, struct mote_serve_conn *c)
{
    const struct mote_port *p = sv->port;
    unsigned refills = 0;

    c->again = false;
    for (;;) {
        const char *buf;
        size_t len;
        int n;

        if (c->out_off < c->out_len) {
            buf = c->io->out + c->out_off;
            len = c->out_len - c->out_off;
        } else if (c->big_off < c->big_len) {
            buf = sv->bigbuf[c->big] + c->big_off;
            len = c->big_len - c->big_off;
        } else {
            c->out_off = c->out_len = 0;
            if (c->big >= 0 && c->big_len > 0)
                big_put(sv, c);
            if (refills++ >= PUMPS_PER_TURN) {
                c->again = c->stream != ST_NONE; /* more next turn: others get theirs first */
                return true;
            }
            if (c->stream == ST_RECORDS && pump_records(sv, c))
                continue;
            if (c->stream == ST_EVENTS && pump_events(sv, c))
                continue;
            return true;
        }
        n = p->net_send(p->ctx, c->fd, buf, len);
        if (n == MOTE_ERR_AGAIN)
            return true;
        if (n <= 0) {
            conn_kill(sv, c);
            return false;
        }
        c->last_io = now_ms(sv);
        if (c->out_off < c->out_len) {
            c->out_off += (size_t)n;
            if (c->out_off == c->out_len)
                c->out_off = c->out_len = 0;
        } else {
            c->big_off += (size_t)n;
        }
        if ((size_t)n < len)
            return true; /* the socket is full: wait for it */
    }
}

/* One read: into the head/body buffers, or discarded while lingering. */
static void conn_read(struct mote_serve *sv, struct mote_serve_conn *c)
{
    const struct mote_port *p = sv->port;
    char sink[512];
    char *dst;
    size_t room;
    int n;

    if (c->state == CS_LINGER || (c->state == CS_RESP && c->stream == ST_EVENTS)) {
        dst = sink;
        room = sizeof(sink);
    } else if (c->state == CS_BODY && c->big >= 0) {
        dst = sv->bigbuf[c->big] + c->body_got;
        room = (size_t)(c->body_len - c->body_got);
    } else {
        dst = c->io->in + c->in_len;
        room = sizeof(c->io->in) - c->in_len;
    }
    if (room == 0)
        return;
    n = p->net_recv(p->ctx, c->fd, dst, room);
    if (n == MOTE_ERR_AGAIN)
        return;
    if (n <= 0) {
        c->peer_eof = true;
        /* A client that closed its sending side after asking still gets
         * its answers (every request it sent, in order); one gone before
         * it asked anything whole, or from an event stream, gets nothing
         * more. */
        if (n < 0 || c->stream == ST_EVENTS || c->state == CS_LINGER ||
            (c->state != CS_RESP && !c->head_started && c->in_len == 0))
            conn_kill(sv, c);
        return;
    }
    if (dst == sink)
        return;
    if (dst == c->io->in + c->in_len)
        c->in_len += (size_t)n;
    else
        c->body_got += (uint64_t)n;
}

/* Steps per readiness (a head, a body, a response: three per request),
 * so that pipelined requests cannot keep the loop from the others. */
#define STEPS_PER_TURN 8

static void conn_advance(struct mote_serve *sv, struct mote_serve_conn *c)
{
    unsigned rounds = 0;

    while (c->state != CS_FREE) {
        if (rounds++ >= STEPS_PER_TURN) {
            /* more next turn: the watch asks for writability, which a
             * socket with room has at once (its input may never come
             * again: pipelined requests already read) */
            c->again = true;
            break;
        }
        if (c->state == CS_HEAD) {
            size_t used = 0;
            int rc;

            if (c->in_len == 0) {
                if (c->peer_eof) {
                    conn_kill(sv, c); /* every request answered, no more to come */
                    return;
                }
                break;
            }
            if (!c->head_started) {
                c->head_started = true;
                c->deadline =
                    now_ms(sv) + cfg(sv->conf.header_timeout_ms, MOTE_SERVE_HEADER_TIMEOUT_MS);
            }
            rc = mote_hreq_feed(&c->io->req, c->io->in, c->in_len, &used);
            memmove(c->io->in, c->io->in + used, c->in_len - used);
            c->in_len -= used;
            if (rc == MOTE_HREQ_READING) {
                if (c->peer_eof) {
                    conn_kill(sv, c); /* a head that can no longer end */
                    return;
                }
                break;
            }
            if (rc == MOTE_HREQ_BAD) {
                c->keep_alive = false;
                fail(sv, c, c->io->req.status, "bad_request", c->io->req.why, NULL);
                continue;
            }
            on_head(sv, c);
            continue;
        }
        if (c->state == CS_BODY) {
            if (!body_complete(c)) {
                if (c->peer_eof) {
                    conn_kill(sv, c); /* a body that can no longer come */
                    return;
                }
                if (c->out_len > 0 && !flush(sv, c))
                    return; /* the 100 Continue */
                break;
            }
            on_request(sv, c);
            continue;
        }
        if (c->state == CS_RESP) {
            if (!flush(sv, c))
                return;
            if (!response_done(c))
                break;
            if (c->stream == ST_EVENTS || !c->keep_alive || (c->peer_eof && c->in_len == 0)) {
                if (c->peer_eof || c->stream == ST_EVENTS) {
                    conn_kill(sv, c);
                    return;
                }
                /* The answer is out: end our side at once (the client
                 * sees the end of input now), and read what it may still
                 * send for a moment, so that its unread bytes do not make
                 * the close a reset that could destroy the answer. */
                if (MOTE_PORT_HAS(sv->port, net_shutdown))
                    (void)sv->port->net_shutdown(sv->port->ctx, c->fd);
                c->state = CS_LINGER;
                c->deadline = now_ms(sv) + cfg(sv->conf.flush_ms, MOTE_SERVE_FLUSH_MS);
                break;
            }
            next_request(sv, c);
            continue;
        }
        break;
    }
    conn_watch(sv, c, false);
}

static void on_conn(struct mote_loop *loop, mote_watch_id w, int fd, unsigned revents, void *arg)
{
    struct mote_serve_conn *c = arg;
    struct mote_serve *sv = c->sv;

    (void)loop, (void)w, (void)fd;
    if (c->state == CS_FREE)
        return;
    if ((revents & (MOTE_POLL_IN | MOTE_POLL_ERR)) != 0) {
        conn_read(sv, c);
        if (c->state == CS_FREE) {
            schedule(sv);
            return;
        }
    }
    conn_advance(sv, c);
    schedule(sv);
}

/* Past the connection cap (or shutting down): one 503 sent as it can go,
 * then closed. */
static void refuse(struct mote_serve *sv, int fd, const char *why)
{
    const struct mote_port *p = sv->port;
    char msg[480], body[240];
    struct mote_sb sb, bb;

    mote_sb_init(&bb, body, sizeof(body));
    mote_sb_s(&bb, "{\"error\":\"");
    mote_sb_s(&bb, sv->phase >= MOTE_SERVE_FINAL ? "shutting_down" : "too_many_connections");
    mote_sb_s(&bb, "\",\"message\":\"");
    mote_sb_s(&bb, why);
    mote_sb_s(&bb, "\"}\n");
    mote_sb_init(&sb, msg, sizeof(msg));
    mote_sb_s(&sb, "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                   "Retry-After: 1\r\nConnection: close\r\nContent-Length: ");
    mote_sb_u(&sb, bb.len);
    mote_sb_s(&sb, "\r\n\r\n");
    mote_sb_s(&sb, body);
    (void)p->net_send(p->ctx, fd, msg, sb.len);
    p->net_close(p->ctx, fd);
    sv->refused++;
}

static void on_listen(struct mote_loop *loop, mote_watch_id w, int lfd, unsigned revents,
                      void *arg)
{
    struct mote_serve *sv = arg;
    const struct mote_port *p = sv->port;
    uint8_t which = lfd == sv->lfd[1] ? 1 : 0;
    unsigned k, i;

    (void)loop, (void)w, (void)revents;
    for (k = 0; k < ACCEPTS_PER_TURN; k++) {
        struct mote_serve_conn *c = NULL;
        int fd = p->net_accept(p->ctx, lfd);

        if (fd >= 0 && sv->accept_fails > 0) {
            char n[24];

            n[mote_u64_dec(sv->accept_fails, n)] = '\0';
            say(sv, "accepting connections again (after ", n, " failed tries)");
            sv->accept_fails = 0;
        }
        if (fd == MOTE_ERR_AGAIN)
            break;
        if (fd < 0) {
            /* Out of descriptors, say: the listener would stay readable and
             * the loop spin. It rests a moment, and says so once, not at
             * every try. */
            if (sv->accept_fails++ == 0)
                say(sv, "cannot accept a connection: ", mote_strerror(fd),
                    "; trying again every 250 ms");
            (void)mote_watch_set(sv->loop, w, 0);
            sv->paused |= (uint8_t)(1u << which);
            sv->pause_until = now_ms(sv) + 250u;
            break;
        }
        if (sv->phase >= MOTE_SERVE_FINAL) {
            refuse(sv, fd, "mote is shutting down");
            continue;
        }
        if (which == 1 && sv->ntcp >= MOTE_SERVE_TCP_CONNS) {
            /* the rest is kept for the Unix socket */
            refuse(sv, fd, "the TCP connection limit (MOTE_SERVE_TCP_CONNS) is reached: try "
                           "again");
            continue;
        }
        for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
            if (sv->conns[i].state == CS_FREE) {
                c = &sv->conns[i];
                break;
            }
        }
        if (c == NULL) {
            refuse(sv, fd, "the connection limit (MOTE_SERVE_MAX_CONNS) is reached: try again");
            continue;
        }
        memset(c, 0, offsetof(struct mote_serve_conn, io));
        c->io = &sv->io[i];
        c->sv = sv;
        c->fd = fd;
        c->sh = -1;
        c->big = -1;
        c->listener = which;
        if (mote_watch_add(sv->loop, fd, MOTE_POLL_IN, on_conn, c, 0, &c->watch) < 0) {
            /* every watch is taken: MOTE_MAX_WATCHES */
            refuse(sv, fd, "every loop watch is taken (MOTE_MAX_WATCHES): try again");
            continue;
        }
        sv->nconns++;
        sv->ntcp += which;
        next_request(sv, c);
        /* A new connection has the head's deadline, not the idle one's:
         * one that never asks anything holds its slot only that long. */
        c->deadline = now_ms(sv) + cfg(sv->conf.header_timeout_ms, MOTE_SERVE_HEADER_TIMEOUT_MS);
    }
    schedule(sv);
}

/* ---- deadlines ------------------------------------------------------------- */

/* When the connection needs the timer (false: it does not). */
static bool conn_due(const struct mote_serve *sv, const struct mote_serve_conn *c, uint32_t *due)
{
    switch (c->state) {
    case CS_HEAD:
    case CS_BODY:
    case CS_LINGER:
        *due = c->deadline;
        return true;
    case CS_RESP:
        if (has_output(c)) {
            *due = c->last_io + cfg(sv->conf.send_timeout_ms, MOTE_SERVE_SEND_TIMEOUT_MS);
            return true;
        }
        if (c->stream == ST_EVENTS) {
            *due = c->last_io + cfg(sv->conf.ping_ms, MOTE_SERVE_PING_MS);
            return true;
        }
        return false;
    default:
        return false;
    }
}

static void on_timer(struct mote_loop *loop, mote_timer_id t, void *arg);

static void schedule(struct mote_serve *sv)
{
    uint32_t now = now_ms(sv), due = 0, d;
    bool any = false;
    unsigned i;

    if (sv->phase == MOTE_SERVE_DONE)
        return;
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        if (sv->conns[i].state != CS_FREE && conn_due(sv, &sv->conns[i], &d) &&
            (!any || mote_before(d, due))) {
            due = d;
            any = true;
        }
    }
    if (sv->paused != 0 && (!any || mote_before(sv->pause_until, due))) {
        due = sv->pause_until;
        any = true;
    }
    if (sv->phase == MOTE_SERVE_FINAL && (!any || mote_before(sv->flush_until, due))) {
        due = sv->flush_until;
        any = true;
    }
    if (sv->timer != 0 && any && sv->timer_due == due)
        return;
    if (sv->timer != 0)
        (void)mote_timer_stop(sv->loop, sv->timer);
    sv->timer = 0;
    if (!any)
        return;
    sv->timer_due = due;
    if (mote_timer_start(sv->loop, mote_before(now, due) ? due - now : 0u, on_timer, sv, 0,
                         &sv->timer) < 0)
        sv->timer = 0; /* no timer free: the next event reschedules */
}

static void on_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_serve *sv = arg;
    uint32_t now = mote_loop_now(loop), due;
    unsigned i;

    (void)t;
    sv->timer = 0;
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        struct mote_serve_conn *c = &sv->conns[i];

        if (c->state == CS_FREE || !conn_due(sv, c, &due) || mote_before(now, due))
            continue;
        if (c->state == CS_HEAD && !c->head_started) {
            conn_kill(sv, c); /* idle: nothing asked, nothing to say */
        } else if (c->state == CS_HEAD || c->state == CS_BODY) {
            big_put(sv, c);
            c->keep_alive = false;
            fail(sv, c, 408, "timeout", c->state == CS_HEAD
                                            ? "the request head did not arrive in time"
                                            : "the request body did not arrive in time",
                 NULL);
            conn_advance(sv, c);
        } else if (c->state == CS_LINGER) {
            conn_kill(sv, c);
        } else if (has_output(c)) {
            say(sv, "dropped a client that does not read its response", NULL, NULL);
            conn_kill(sv, c);
        } else {
            if (!c->in_record && !c->skip)
                (void)out_puts(c, ": ping\n\n"); /* never inside a record */
            c->last_io = now;
            conn_advance(sv, c);
        }
    }
    if (sv->paused != 0 && !mote_before(now, sv->pause_until)) {
        for (i = 0; i < 2; i++) {
            if ((sv->paused & (1u << i)) != 0 && sv->lwatch[i] != 0)
                (void)mote_watch_set(sv->loop, sv->lwatch[i], MOTE_POLL_IN);
        }
        sv->paused = 0;
    }
    if (sv->phase == MOTE_SERVE_FINAL && !mote_before(now, sv->flush_until))
        kick(sv);
    schedule(sv);
}

/* ---- recovery on start ---------------------------------------------------- */

static int collect(void *arg, const struct mote_conv_info *i)
{
    struct mote_serve *sv = arg;

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

static void recover_more(struct mote_serve *sv)
{
    bool opened = false;

    while (sv->phase == MOTE_SERVE_RUN) {
        struct mote_conv *cv;
        uint32_t bad = 0;
        bool repaired = false;
        int rc = 0;

        if (sv->nrec == 0) {
            if (!sv->rec_more || !opened)
                return;
            sv->rec_more = false;
            opened = false;
            if (mote_session_list(sv->conf.session, collect, sv) < 0 || sv->nrec == 0)
                return;
            continue;
        }
        if (mote_conv_find(sv->conf.session, sv->rec[0]) == NULL) {
            if (make_room(sv) < 0)
                return; /* every slot busy: again when one frees */
            rc = mote_conv_open(sv->conf.session, sv->conf.conv, sv->rec[0], &cv, &bad,
                                &repaired);
            if (rc == 0) {
                touch(sv, cv);
                opened = true;
                say(sv, "recovering conversation ", sv->rec[0], NULL);
            } else {
                say(sv, "cannot open conversation ", sv->rec[0], NULL);
                say(sv, "  ", mote_strerror(rc), NULL);
            }
        }
        sv->nrec--;
        memmove(sv->rec[0], sv->rec[1], sv->nrec * sizeof(sv->rec[0]));
    }
}

int mote_serve_recover(struct mote_serve *sv)
{
    int rc;

    sv->nrec = 0;
    sv->rec_more = false;
    rc = mote_session_list(sv->conf.session, collect, sv);
    if (rc < 0)
        return rc;
    rc = (int)sv->nrec; /* (more, if rec_more, are listed again as these finish) */
    recover_more(sv);
    return rc;
}

/* ---- deferred work --------------------------------------------------------- */

static void unlisten_all(struct mote_serve *sv)
{
    const struct mote_port *p = sv->port;
    unsigned i;

    for (i = 0; i < 2; i++) {
        if (sv->lfd[i] < 0)
            continue;
        if (sv->lwatch[i] != 0)
            (void)mote_watch_remove(sv->loop, sv->lwatch[i]);
        sv->lwatch[i] = 0;
        p->net_unlisten(p->ctx, sv->lfd[i]);
        sv->lfd[i] = -1;
    }
}

static void on_kick(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_serve *sv = arg;
    unsigned i;

    (void)t;
    sv->kick = 0;
    recover_more(sv);
    if (sv->phase == MOTE_SERVE_FINAL) {
        bool late = !mote_before(mote_loop_now(loop), sv->flush_until);

        unlisten_all(sv);
        for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
            struct mote_serve_conn *c = &sv->conns[i];

            if (c->state == CS_FREE)
                continue;
            if (late || c->state == CS_HEAD || c->state == CS_BODY || c->state == CS_LINGER) {
                conn_kill(sv, c);
                continue;
            }
            c->keep_alive = false;
            conn_advance(sv, c); /* streams catch up, then the final event */
        }
        if (sv->nconns == 0) {
            sv->phase = MOTE_SERVE_DONE;
            if (sv->timer != 0)
                (void)mote_timer_stop(sv->loop, sv->timer);
            sv->timer = 0;
            say(sv, "stopped", NULL, NULL);
            return;
        }
    }
    schedule(sv);
}

static void kick(struct mote_serve *sv)
{
    if (sv->kick == 0 && mote_timer_start(sv->loop, 0, on_kick, sv, 0, &sv->kick) < 0)
        sv->kick = 0;
}

/* ---- the session's events ----------------------------------------------------- */

static void ev_open(struct mote_serve *sv, struct mote_sb *k, struct mote_jw *w, const char *name)
{
    mote_sb_init(k, sv->ev, sizeof(sv->ev) - 2);
    (void)mote_sb_put(k, "event: ", 7);
    (void)mote_sb_put(k, name, strlen(name));
    (void)mote_sb_put(k, "\ndata: ", 7);
    mote_jw_init(w, mote_sb_put, k);
    mote_jw_obj(w);
}

/* Sends the event to every client of conversation `id` that is caught up
 * (one that is not gets the records when it reads on, never a live event
 * out of order). */
static void ev_send(struct mote_serve *sv, struct mote_sb *k, struct mote_jw *w, const char *id)
{
    unsigned i;

    mote_jw_obj_end(w);
    if (w->err != 0)
        return; /* larger than a live event may be: the record has it */
    k->cap += 2;
    (void)mote_sb_put(k, "\n\n", 2);
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        struct mote_serve_conn *c = &sv->conns[i];

        if (c->state != CS_RESP || c->stream != ST_EVENTS || c->gone ||
            strcmp(c->conv_id, id) != 0 || !c->told_state || !caught_up(sv, c))
            continue;
        /* No room (a slow reader): it is behind now, and is told the
         * state (with a pending approval) once it has room. */
        if (!out_put(c, k->p, k->len))
            c->told_state = false;
        conn_watch(sv, c, true);
    }
}

static void on_record(struct mote_serve *sv, const char *id, uint64_t off, const char *text,
                      size_t len)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        struct mote_serve_conn *c = &sv->conns[i];
        char d[24];
        size_t nd;

        if (c->state != CS_RESP || c->stream != ST_EVENTS || c->gone ||
            strcmp(c->conv_id, id) != 0)
            continue;
        if (!c->in_record && !c->skip && c->told_state && c->pos == off) {
            nd = mote_u64_dec(off, d);
            if (out_room(c) >= 4 + nd + 21 + len + 2) {
                (void)out_puts(c, "id: ");
                (void)out_put(c, d, nd);
                (void)out_puts(c, "\nevent: record\ndata: ");
                (void)out_put(c, text, len);
                (void)out_puts(c, "\n\n");
                c->pos = off + len + 1;
            } else {
                c->told_state = false; /* behind: read from the journal, state told again */
            }
        }
        conn_watch(sv, c, true);
    }
}

static const char *action_name(int a)
{
    switch (a) {
    case MOTE_RECOVER_CONTINUE: return "continue";
    case MOTE_RECOVER_TOOL_INTERRUPTED: return "tool_interrupted";
    case MOTE_RECOVER_LIMIT: return "limit";
    case MOTE_RECOVER_RESUME_TOOLS: return "resume_tools";
    default: return "idle";
    }
}

void mote_serve_event(struct mote_serve *sv, const struct mote_event *ev)
{
    const char *id = ev->conv != NULL ? mote_conv_id(ev->conv) : "";
    struct mote_sb k;
    struct mote_jw w;

    if (ev->conv != NULL)
        touch(sv, ev->conv);
    switch (ev->type) {
    case MOTE_EV_RECORD:
        on_record(sv, id, ev->offset, ev->text, ev->len);
        return;
    case MOTE_EV_TEXT:
    case MOTE_EV_THINKING:
        ev_open(sv, &k, &w, ev->type == MOTE_EV_TEXT ? "text" : "thinking");
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        break;
    case MOTE_EV_STATE:
        ev_open(sv, &k, &w, "state");
        mote_jw_key(&w, "state");
        mote_jw_str(&w, mote_conv_state_name(ev->state));
        mote_jw_key(&w, "loaded");
        mote_jw_bool(&w, true);
        mote_jw_key(&w, "busy");
        mote_jw_bool(&w, mote_conv_busy(ev->conv));
        if (!mote_conv_busy(ev->conv))
            kick(sv); /* a slot may be free for a conversation waiting for recovery */
        break;
    case MOTE_EV_APPROVAL:
        ev_open(sv, &k, &w, "approval");
        mote_jw_key(&w, "ask_id");
        mote_jw_int(&w, ev->ask_id);
        mote_jw_key(&w, "call_id");
        mote_jw_str(&w, ev->id);
        mote_jw_key(&w, "name");
        mote_jw_str(&w, ev->name);
        mote_jw_key(&w, "input");
        if (ev->input_len > 0 && ev->input_len + 512 < sizeof(sv->ev))
            mote_jw_raw(&w, ev->input, ev->input_len);
        else
            mote_jw_null(&w);
        mote_jw_key(&w, "input_bytes");
        mote_jw_int(&w, (int64_t)ev->input_len);
        say(sv, "conversation ", id, " waits for an approval");
        break;
    case MOTE_EV_TOOL_CALL:
        ev_open(sv, &k, &w, "tool_call");
        mote_jw_key(&w, "call_id");
        mote_jw_str(&w, ev->id);
        mote_jw_key(&w, "name");
        mote_jw_str(&w, ev->name);
        break;
    case MOTE_EV_TOOL_RESULT:
        ev_open(sv, &k, &w, "tool_result");
        mote_jw_key(&w, "call_id");
        mote_jw_str(&w, ev->id);
        mote_jw_key(&w, "name");
        mote_jw_str(&w, ev->name);
        mote_jw_key(&w, "is_error");
        mote_jw_bool(&w, ev->is_error);
        mote_jw_key(&w, "bytes");
        mote_jw_int(&w, (int64_t)ev->len);
        break;
    case MOTE_EV_TURN_END:
        ev_open(sv, &k, &w, "turn_end");
        mote_jw_key(&w, "stop_reason");
        mote_jw_str(&w, ev->stop_reason != NULL ? ev->stop_reason : "");
        mote_jw_key(&w, "usage");
        mote_jw_obj(&w);
        mote_jw_key(&w, "input_tokens");
        mote_jw_int(&w, (int64_t)ev->turn_usage.input_tokens);
        mote_jw_key(&w, "output_tokens");
        mote_jw_int(&w, (int64_t)ev->turn_usage.output_tokens);
        mote_jw_key(&w, "cache_read_tokens");
        mote_jw_int(&w, (int64_t)ev->turn_usage.cache_read_tokens);
        mote_jw_key(&w, "cache_write_tokens");
        mote_jw_int(&w, (int64_t)ev->turn_usage.cache_write_tokens);
        mote_jw_obj_end(&w);
        kick(sv);
        break;
    case MOTE_EV_CANCELLED:
        ev_open(sv, &k, &w, "cancelled");
        break;
    case MOTE_EV_RECOVERY:
        ev_open(sv, &k, &w, "recovery");
        mote_jw_key(&w, "action");
        mote_jw_str(&w, action_name(ev->code));
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        say(sv, id, ": ", ev->text);
        break;
    case MOTE_EV_WARNING:
    case MOTE_EV_NOTE:
        ev_open(sv, &k, &w, ev->type == MOTE_EV_WARNING ? "warning" : "note");
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        break;
    case MOTE_EV_ERROR:
        ev_open(sv, &k, &w, "error");
        mote_jw_key(&w, "code");
        mote_jw_str(&w, mote_strerror(ev->code));
        mote_jw_key(&w, "text");
        mote_jw_strn(&w, ev->text, ev->len);
        mote_jw_key(&w, "fatal");
        mote_jw_bool(&w, ev->fatal);
        say(sv, id, ": ", ev->text);
        kick(sv);
        break;
    case MOTE_EV_SHUTDOWN:
        if (ev->report != NULL) {
            sv->sd_timed_out = ev->report->timed_out;
            sv->sd_marked = ev->report->conversations_marked;
        }
        mote_str_copy(sv->sd_reason, sizeof(sv->sd_reason), ev->text);
        if (sv->phase < MOTE_SERVE_FINAL) {
            sv->phase = MOTE_SERVE_FINAL;
            sv->flush_until = now_ms(sv) + cfg(sv->conf.flush_ms, MOTE_SERVE_FLUSH_MS);
        }
        kick(sv);
        return;
    default:
        return;
    }
    ev_send(sv, &k, &w, id);
}

/* ---- the server ----------------------------------------------------------- */

/* "127.0.0.1:PORT", "localhost:PORT", "[::1]:PORT": loopback only. */
static int parse_listen(const char *s, struct mote_addr *a)
{
    const char *colon;
    uint64_t port = 0;
    size_t i;

    memset(a, 0, sizeof(*a));
    if (strncmp(s, "[::1]:", 6) == 0) {
        a->family = 6;
        a->addr[15] = 1;
        colon = s + 5;
    } else if (strncmp(s, "localhost:", 10) == 0) {
        a->family = 4;
        a->addr[0] = 127;
        a->addr[3] = 1;
        colon = s + 9;
    } else {
        unsigned part = 0, val = 0, digits = 0;

        for (i = 0; s[i] != '\0' && s[i] != ':'; i++) {
            if (s[i] == '.') {
                if (digits == 0 || part >= 3)
                    return MOTE_ERR_INVAL;
                a->addr[part++] = (uint8_t)val;
                val = digits = 0;
            } else if (s[i] >= '0' && s[i] <= '9' && digits < 3) {
                val = val * 10 + (unsigned)(s[i] - '0');
                digits++;
                if (val > 255)
                    return MOTE_ERR_INVAL;
            } else {
                return MOTE_ERR_INVAL;
            }
        }
        if (s[i] != ':' || part != 3 || digits == 0)
            return MOTE_ERR_INVAL;
        a->addr[3] = (uint8_t)val;
        a->family = 4;
        if (a->addr[0] != 127)
            return MOTE_ERR_INVAL; /* loopback only: 127.0.0.0/8 */
        colon = s + i;
    }
    if (!number(colon + 1, &port) || port > 65535)
        return MOTE_ERR_INVAL;
    a->port = (uint16_t)port;
    return 0;
}

int mote_serve_init(struct mote_serve *sv, struct mote_loop *loop,
                    const struct mote_serve_conf *conf)
{
    const struct mote_port *p = loop != NULL ? loop->port : NULL;
    unsigned groups = MOTE_PORT_STORAGE | MOTE_PORT_SERVE, i;

    if (conf == NULL || p == NULL || conf->session == NULL || conf->conv == NULL ||
        (conf->socket_path == NULL && conf->listen == NULL) ||
        (conf->listen != NULL &&
         (conf->token == NULL || strlen(conf->token) < MOTE_SERVE_TOKEN_MIN)))
        return MOTE_ERR_INVAL;
    /* Only the small fields: the buffers are used as needed (untouched
     * memory does not count in RSS). */
    memset(sv, 0, offsetof(struct mote_serve, peek));
    sv->loop = loop;
    sv->port = p;
    sv->conf = *conf;
    sv->lfd[0] = sv->lfd[1] = -1;
    if (conf->socket_path != NULL)
        groups |= MOTE_PORT_LISTEN_UNIX;
    if (conf->listen != NULL)
        groups |= MOTE_PORT_LISTEN_TCP;
    sv->missing = mote_port_missing(p, groups);
    if (sv->missing != NULL)
        return MOTE_ERR_NOSYS;
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        memset(&sv->conns[i], 0, sizeof(sv->conns[i]));
        sv->conns[i].fd = sv->conns[i].sh = sv->conns[i].big = -1;
        sv->conns[i].sv = sv;
        sv->conns[i].io = &sv->io[i];
    }
    return 0;
}

int mote_serve_listen(struct mote_serve *sv)
{
    const struct mote_port *p = sv->port;
    int fd;

    if (sv->conf.socket_path != NULL && sv->lfd[0] < 0) {
        fd = p->net_listen_unix(p->ctx, sv->conf.socket_path);
        if (fd < 0)
            return fd;
        if (mote_watch_add(sv->loop, fd, MOTE_POLL_IN, on_listen, sv, 0, &sv->lwatch[0]) < 0) {
            p->net_unlisten(p->ctx, fd);
            return MOTE_ERR_FULL;
        }
        sv->lfd[0] = fd;
    }
    if (sv->conf.listen != NULL && sv->lfd[1] < 0) {
        struct mote_addr a, bound;

        if (parse_listen(sv->conf.listen, &a) < 0)
            return MOTE_ERR_INVAL;
        fd = p->net_listen_tcp(p->ctx, &a, &bound);
        if (fd < 0)
            return fd;
        if (mote_watch_add(sv->loop, fd, MOTE_POLL_IN, on_listen, sv, 0, &sv->lwatch[1]) < 0) {
            p->net_unlisten(p->ctx, fd);
            return MOTE_ERR_FULL;
        }
        sv->lfd[1] = fd;
        sv->tcp_port = bound.port;
    }
    prune(sv);
    return 0;
}

int mote_serve_shutdown(struct mote_serve *sv, const struct mote_shutdown_req *req)
{
    int rc;

    if (sv->phase == MOTE_SERVE_DONE)
        return MOTE_ERR_ALREADY;
    if (sv->phase == MOTE_SERVE_RUN) {
        sv->phase = MOTE_SERVE_DRAIN;
        say(sv, "shutting down (", req != NULL && req->reason != NULL ? req->reason : "?",
            req != NULL && req->mode == MOTE_SD_DRAIN ? ", drain)" : ", cancel)");
    }
    if (sv->phase == MOTE_SERVE_FINAL && req != NULL && req->force) {
        sv->flush_until = now_ms(sv); /* stop waiting for slow clients */
        kick(sv);
    }
    rc = mote_shutdown_begin(sv->conf.session, req);
    return rc == MOTE_ERR_ALREADY ? 0 : rc;
}

int mote_serve_signal(struct mote_serve *sv, enum mote_signal sig, uint32_t timeout_ms)
{
    static const char *const names[] = {"SIGINT", "SIGTERM", "SIGHUP"};
    struct mote_shutdown_req req;
    unsigned k = (unsigned)sig < 3 ? (unsigned)sig : 1u;

    memset(&req, 0, sizeof(req));
    req.reason = names[k];
    req.mode = sig == MOTE_SIG_INT ? MOTE_SD_CANCEL : MOTE_SD_DRAIN;
    req.timeout_ms = timeout_ms;
    if (sv->sig != 0) {
        req.force = true; /* a second signal: stop waiting */
        sv->forced = true;
        say(sv, names[k], " again: stopping now", NULL);
    } else {
        sv->sig = (uint8_t)(k + 1);
    }
    return mote_serve_shutdown(sv, &req);
}

int mote_serve_exit_code(struct mote_serve *sv, int loop_rc)
{
    const struct mote_shutdown_report *r = &sv->conf.session->report;

    if (loop_rc < 0)
        sv->failed = true;
    if (sv->failed || r->storage_err < 0)
        return 1;
    if (sv->sig == MOTE_SIG_INT + 1)
        return 130;
    if (sv->sig != 0 && (r->timed_out || r->forced || sv->forced))
        return sv->sig == MOTE_SIG_HUP + 1 ? 129 : 143;
    return 0;
}

bool mote_serve_done(const struct mote_serve *sv)
{
    return sv->phase == MOTE_SERVE_DONE;
}

void mote_serve_deinit(struct mote_serve *sv)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++)
        conn_kill(sv, &sv->conns[i]);
    unlisten_all(sv);
    if (sv->timer != 0)
        (void)mote_timer_stop(sv->loop, sv->timer);
    if (sv->kick != 0)
        (void)mote_timer_stop(sv->loop, sv->kick);
    sv->timer = sv->kick = 0;
    sv->phase = MOTE_SERVE_DONE;
}

/* ---- the token ------------------------------------------------------------ */

int mote_serve_token(const struct mote_port *port, const char *name, char out[65], bool *created)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char r[32];
    char line[80];
    struct mote_src_bytes src = {line, 65, 0};
    int h, n, i, rc;

    *created = false;
    out[0] = '\0';
    h = port->st_open(port->ctx, name, MOTE_ST_READ);
    if (h >= 0) {
        n = port->st_read(port->ctx, h, 0, line, sizeof(line) - 1);
        port->st_close(port->ctx, h);
        if (n < 0)
            return n;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            n--;
        if (n != 64)
            return MOTE_ERR_CORRUPT;
        for (i = 0; i < 64; i++) {
            if (strchr(hex, line[i]) == NULL || line[i] == '\0')
                return MOTE_ERR_CORRUPT;
        }
        memcpy(out, line, 64);
        out[64] = '\0';
        return 0;
    }
    if (h != MOTE_ERR_NOENT)
        return h;
    if (!MOTE_PORT_HAS(port, random))
        return MOTE_ERR_NOSYS;
    if ((rc = port->random(port->ctx, r, sizeof(r))) < 0)
        return rc;
    for (i = 0; i < 32; i++) {
        line[2 * i] = hex[r[i] >> 4];
        line[2 * i + 1] = hex[r[i] & 15u];
    }
    line[64] = '\n';
    line[65] = '\0';
    memset(r, 0, sizeof(r));
    rc = port->st_write_atomic(port->ctx, name, mote_produce_bytes, &src);
    if (rc < 0)
        return rc;
    memcpy(out, line, 64);
    out[64] = '\0';
    *created = true;
    return 0;
}
