/*
 * serve_handlers.c - the API server's HTTP request handlers: each reads
 * the request (a JSON body, query parameters), does its action
 * (serve_api.c) and answers in JSON, or starts a stream of the journal
 * (serve_stream.c). The API is docs/SERVE.md.
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

/* A refusal for a library failure (`bad`: a damaged journal's line). */
static void fail_err(struct serve *sv, struct mote_httpd_conn *c, int rc, uint32_t bad)
{
    char m[160];
    struct mote_sb sb;

    mote_sb_init(&sb, m, sizeof(m));
    switch (rc) {
    case MOTE_ERR_NOENT:
    case MOTE_ERR_INVAL:
        mote_httpd_error(c, 404, "not_found", "no such conversation", NULL);
        return;
    case MOTE_ERR_CORRUPT:
        mote_sb_s(&sb, "the conversation is damaged at line ");
        mote_sb_u(&sb, bad);
        mote_sb_s(&sb, "; it is left as it is");
        mote_httpd_error(c, 409, "damaged", m, NULL);
        return;
    case MOTE_ERR_NOTSUP:
        mote_httpd_error(c, 409, "newer",
                         "the conversation was written by a newer mote; it is left as it is", NULL);
        return;
    case MOTE_ERR_LOCKED:
        mote_sb_s(&sb, "the conversation is open in another process");
        if (sv->conf.session->lock_holder > 0) {
            mote_sb_s(&sb, " (pid ");
            mote_sb_u(&sb, (uint64_t)sv->conf.session->lock_holder);
            mote_sb_s(&sb, ")");
        }
        mote_httpd_error(c, 409, "locked", m, NULL);
        return;
    case MOTE_ERR_FULL:
        mote_sb_s(&sb, "every conversation slot is busy (");
        mote_sb_u(&sb, MOTE_MAX_CONVERSATIONS);
        mote_sb_s(&sb, " loaded, none idle): try again when a turn ends");
        mote_httpd_error(c, 503, "busy", m, "Retry-After: 5\r\n");
        return;
    case MOTE_ERR_SHUTDOWN:
        mote_httpd_error(c, 503, "shutting_down", "mote is shutting down: no new turn starts",
                         NULL);
        return;
    case MOTE_ERR_BUSY:
        mote_httpd_error(c, 409, "busy", "a turn is running in this conversation", NULL);
        return;
    case MOTE_ERR_TOO_LARGE:
        mote_httpd_error(c, 413, "too_large", "the message is larger than a journal record holds",
                         NULL);
        return;
    default:
        mote_sb_s(&sb, "storage failed: ");
        mote_sb_s(&sb, mote_strerror(rc));
        mote_httpd_error(c, 500, "storage", m, NULL);
        return;
    }
}

/* The body as one JSON object in sv->json (an empty body is {} if
 * `empty_ok`), with no duplicate key: a client's JSON library keeps the
 * last of two, mote would read the first. Refuses (and returns false)
 * otherwise. */
static bool body_json(struct serve *sv, struct mote_httpd_conn *c, const char *body, size_t len,
                      bool empty_ok)
{
    char why[96], m[140];
    struct mote_sb sb;
    int rc;

    if (len == 0 && empty_ok)
        return mote_json_parse(&sv->json, "{}", 2) > 0;
    rc = mote_json_parse_object(&sv->json, body, len, why, sizeof(why));
    if (rc == MOTE_ERR_TOO_LARGE) {
        mote_httpd_error(c, 413, "too_large", "the JSON body has too many values", NULL);
        return false;
    }
    if (rc <= 0) {
        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_s(&sb, "the body must be one JSON object");
        if (mote_json_type_of(&sv->json, 0) == MOTE_JSON_OBJECT)
            mote_sb_join(&sb, " (", why, ")"); /* a duplicate key */
        mote_httpd_error(c, 400, "bad_json", m, NULL);
        return false;
    }
    return true;
}

/* String member `key` of the body into `out` (a C string: an id, a
 * name); false (refused) if it is there but not a string, too long, or
 * holding a NUL that would cut it. *present tells if it was there. */
static bool json_str_member(struct serve *sv, struct mote_httpd_conn *c, const char *key,
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
        mote_json_cstr(&sv->json, t, out, cap) >= 0)
        return true;
    mote_sb_init(&sb, m, sizeof(m));
    mote_sb_s(&sb, "\"");
    mote_sb_s(&sb, key);
    mote_sb_s(&sb, "\" must be a string (short enough, with no NUL)");
    mote_httpd_error(c, 400, "bad_field", m, NULL);
    return false;
}

/* A JSON answer being built in sv->resp. */
static void answer_open(struct serve *sv, struct mote_sb *k, struct mote_jw *w)
{
    mote_sb_init(k, sv->resp, sizeof(sv->resp));
    mote_jw_init(w, mote_sb_put, k);
    mote_jw_obj(w);
}

static void answer_send_with(struct mote_httpd_conn *c, unsigned status, struct mote_sb *k,
                             struct mote_jw *w, const char *extra)
{
    mote_jw_obj_end(w);
    (void)mote_sb_put(k, "\n", 1);
    mote_httpd_reply(c, status, k->p, k->len, extra);
}

static void answer_send(struct mote_httpd_conn *c, unsigned status, struct mote_sb *k,
                        struct mote_jw *w)
{
    answer_send_with(c, status, k, w, NULL);
}

static bool number(const char *s, uint64_t *out)
{
    return s != NULL && mote_dec_parse(s, strlen(s), out) == 0;
}

/* ---- GET /v1/health ---------------------------------------------------------------- */

void mote_serve_http_health(struct serve *sv, struct mote_httpd_conn *c)
{
    struct mote_session *s = sv->conf.session;
    struct mote_sb k;
    struct mote_jw w;
    unsigned i, loaded = 0, busy = 0;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        loaded += s->conv[i].used;
        busy += mote_conv_busy(&s->conv[i]);
    }
    answer_open(sv, &k, &w);
    mote_jw_kstr(&w, "status", sv->pub->phase == MOTE_SERVE_RUN ? "ok" : "shutting_down");
    mote_jw_kstr(&w, "version", mote_version());
    mote_jw_kstr(&w, "model", sv->conf.conv->model != NULL ? sv->conf.conv->model : "");
    mote_jw_key(&w, "conversations");
    mote_jw_obj(&w);
    mote_jw_kint(&w, "loaded", loaded);
    mote_jw_kint(&w, "busy", busy);
    mote_jw_kint(&w, "max", MOTE_MAX_CONVERSATIONS);
    mote_jw_kint(&w, "recovering", sv->nrec);
    mote_jw_obj_end(&w);
    mote_jw_key(&w, "connections");
    mote_jw_obj(&w);
    mote_jw_kint(&w, "open", sv->http.nconns);
    mote_jw_kint(&w, "max", MOTE_SERVE_MAX_CONNS);
    mote_jw_kint(&w, "refused", sv->http.refused);
    mote_jw_obj_end(&w);
    mote_serve_budget_json(sv, &w);
    mote_serve_sched_health(sv, &w);
    answer_send(c, 200, &k, &w);
}

/* ---- GET /v1/conversations ----------------------------------------------------- */

/* Ids a list takes per disk turn when their summaries are known. */
#define LIST_PER_TURN 32

size_t mote_serve_list_entry(struct serve *sv, const char *id, const struct serve_sum *e,
                             int64_t holder)
{
    struct mote_conv *cv = mote_conv_find(sv->conf.session, id);
    struct mote_sb k;
    struct mote_jw w;

    mote_sb_init(&k, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &k);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "id", id);
    mote_jw_key(&w, "state");
    mote_jw_str(&w, cv != NULL ? mote_conv_state_name(mote_conv_state(cv))
                               : mote_serve_sum_state(e, holder));
    mote_jw_kbool(&w, "loaded", cv != NULL);
    mote_jw_kbool(&w, "busy", cv != NULL && mote_conv_busy(cv));
    mote_jw_kint(&w, "bytes", (int64_t)e->bytes);
    mote_jw_kint(&w, "user_messages", e->user_messages);
    mote_jw_kstr(&w, "first", e->first);
    if (cv == NULL && e->rc < 0 && e->rc != MOTE_ERR_NOTSUP) {
        mote_jw_kint(&w, "bad_line", e->bad_line);
    }
    if (cv == NULL && holder > 0) {
        mote_jw_kint(&w, "holder", holder);
    }
    mote_jw_obj_end(&w);
    return w.err == 0 ? k.len : 0;
}

/* The list's body is complete: its end (the cursor `next`, or null), then
 * the head, and out it goes. */
static void list_end(struct mote_httpd_conn *c, struct serve_stream *st, const char *next)
{
    char *buf = mote_httpd_pool_take(c); /* the one it holds */
    char end[MOTE_CONV_ID_MAX + 48];
    struct mote_sb out;

    MOTE_ASSERT(buf != NULL);
    mote_sb_init(&out, end, sizeof(end));
    mote_sb_s(&out, next != NULL ? "],\"truncated\":true,\"next\":\""
                                 : "],\"truncated\":false,\"next\":null}\n");
    if (next != NULL) {
        mote_sb_s(&out, next); /* an id: nothing to escape */
        mote_sb_s(&out, "\"}\n");
    }
    MOTE_ASSERT(st->body_len + out.len <= MOTE_SERVE_BODY_MAX);
    memcpy(buf + st->body_len, end, out.len);
    st->body_len += (uint32_t)out.len;
    st->kind = SERVE_STREAM_NONE;
    (void)mote_httpd_head(c, 200, "application/json", NULL, true, st->body_len);
    mote_httpd_pool_send(c, st->body_len);
    mote_httpd_respond(c, false);
}

/* A list goes on: the next ids after its cursor, in order, each as soon
 * as its journal's summary is known. Returns true while it waits. */
static bool list_turn(struct serve *sv, struct mote_httpd_conn *c, struct serve_stream *st)
{
    /* the end (with a cursor) always fits: room is kept for it */
    const size_t cap = MOTE_SERVE_BODY_MAX - MOTE_CONV_ID_MAX - 64;
    unsigned k;

    for (k = 0; k < LIST_PER_TURN; k++) {
        char id[MOTE_CONV_ID_MAX];
        const struct serve_sum *e = NULL;
        int64_t holder = 0;
        char *buf;
        size_t n;
        int rc = mote_serve_next_id(sv, st->conv_id, id);

        if (rc == 0 || (rc > 0 && st->pos >= st->end)) {
            list_end(c, st, rc > 0 ? st->conv_id : NULL); /* the page is full, or all is in */
            return false;
        }
        if (rc > 0)
            rc = mote_serve_sum(sv, id, &e, &holder);
        if (rc == MOTE_ERR_AGAIN)
            return true; /* being read */
        if (rc == MOTE_ERR_NOENT) {
            mote_str_copy(st->conv_id, sizeof(st->conv_id), id); /* gone since (or empty) */
            continue;
        }
        if (rc < 0) {
            st->kind = SERVE_STREAM_NONE;
            mote_httpd_pool_put(c);
            fail_err(sv, c, rc, 0);
            return false;
        }
        n = mote_serve_list_entry(sv, id, e, holder);
        buf = mote_httpd_pool_take(c);
        if (n == 0 || st->body_len + (st->pos > 0) + n > cap) {
            if (st->pos > 0) {
                list_end(c, st, st->conv_id); /* the rest on the next page */
                return false;
            }
            st->kind = SERVE_STREAM_NONE;
            mote_httpd_pool_put(c);
            mote_httpd_error(c, 500, "internal", "one conversation's entry does not fit the list",
                             NULL);
            return false;
        }
        if (st->pos > 0)
            buf[st->body_len++] = ',';
        memcpy(buf + st->body_len, sv->resp, n);
        st->body_len += (uint32_t)n;
        st->pos++;
        mote_str_copy(st->conv_id, sizeof(st->conv_id), id);
    }
    return true;
}

/* GET /v1/conversations[?after=ID][&limit=N]: ids after the cursor, in
 * order, at most N (MOTE_SERVE_LIST_PAGE by default) and what fits the
 * body; "next" is the cursor for the rest (null: none). The body is built
 * in a pool buffer over as many disk turns as its journals take to read,
 * then sent whole. */
void mote_serve_http_list(struct serve *sv, struct mote_httpd_conn *c)
{
    struct serve_stream *st = mote_serve_stream_of(sv, c);
    unsigned max = (unsigned)(MOTE_SERVE_BODY_MAX / MOTE_CONV_ID_MAX);
    char after[MOTE_CONV_ID_MAX], q[24];
    uint64_t limit = MOTE_SERVE_LIST_PAGE;
    char *buf;

    after[0] = '\0';
    if (mote_hreq_query(&c->io->req, "after", after, sizeof(after)) >= 0 &&
        !mote_serve_id_ok(after, strlen(after))) {
        mote_httpd_error(c, 400, "bad_cursor",
                         "\"after\" is a conversation id (the \"next\" of the page before)", NULL);
        return;
    }
    if (mote_hreq_query(&c->io->req, "limit", q, sizeof(q)) >= 0 &&
        (mote_dec_parse(q, strlen(q), &limit) < 0 || limit < 1 || limit > max)) {
        mote_httpd_error(c, 400, "bad_limit",
                         "\"limit\" is a number of conversations: 1 to the most a page holds",
                         NULL);
        return;
    }
    if ((buf = mote_httpd_pool_take(c)) == NULL) {
        mote_httpd_error(c, 503, "busy", "no buffer free for the list: try again",
                         "Retry-After: 1\r\n");
        return;
    }
    MOTE_ASSERT(st->kind == SERVE_STREAM_NONE);
    memcpy(buf, "{\"conversations\":[", 18);
    st->body_len = 18;
    st->kind = SERVE_STREAM_LIST;
    st->pos = 0;
    st->end = limit;
    mote_str_copy(st->conv_id, sizeof(st->conv_id), after);
    mote_httpd_defer(c);
    if (list_turn(sv, c, st))
        mote_serve_disk_kick(sv);
}

/* A request that waits for its journal to be read: answered on a disk
 * turn (mote_serve_http_disk_turn). */
static void wait_disk(struct serve *sv, struct mote_httpd_conn *c, const char *id,
                      enum serve_redo redo)
{
    struct serve_stream *st = mote_serve_stream_of(sv, c);

    MOTE_ASSERT(st->kind == SERVE_STREAM_NONE);
    st->kind = SERVE_STREAM_WAIT;
    st->redo = (uint8_t)redo;
    mote_str_copy(st->conv_id, sizeof(st->conv_id), id);
    mote_httpd_defer(c);
    mote_serve_disk_kick(sv);
}

bool mote_serve_http_disk_turn(struct serve *sv, struct mote_httpd_conn *c)
{
    struct serve_stream *st = mote_serve_stream_of(sv, c);
    char id[MOTE_CONV_ID_MAX];
    uint8_t redo = st->redo;

    if (st->kind == SERVE_STREAM_LIST) {
        if (list_turn(sv, c, st))
            return true;
        mote_httpd_poke(&sv->http, c);
        return false;
    }
    MOTE_ASSERT(st->kind == SERVE_STREAM_WAIT);
    mote_str_copy(id, sizeof(id), st->conv_id);
    st->kind = SERVE_STREAM_NONE;
    if (redo == SERVE_REDO_DELETE) {
        mote_serve_http_delete(sv, c, id);
    } else if (redo == SERVE_REDO_MESSAGE || redo == SERVE_REDO_RETRY) {
        size_t len;
        const char *body = mote_httpd_body(c, &len);

        mote_serve_http_message(sv, c, id, body != NULL ? body : "", len,
                                redo == SERVE_REDO_RETRY);
    } else {
        mote_serve_http_get(sv, c, id);
    }
    if (st->kind == SERVE_STREAM_WAIT)
        return true; /* not read yet */
    mote_httpd_poke(&sv->http, c);
    return false;
}

/* ---- POST /v1/conversations ---------------------------------------------------- */

void mote_serve_http_create(struct serve *sv, struct mote_httpd_conn *c, const char *body,
                            size_t len)
{
    char id[MOTE_CONV_ID_MAX], where[MOTE_CONV_ID_MAX + 48];
    struct mote_conv *cv;
    bool has_id;
    struct mote_sb k, loc;
    struct mote_jw w;
    int rc;

    if (sv->pub->phase != MOTE_SERVE_RUN) {
        fail_err(sv, c, MOTE_ERR_SHUTDOWN, 0);
        return;
    }
    if (!body_json(sv, c, body, len, true) ||
        !json_str_member(sv, c, "id", id, sizeof(id), &has_id))
        return;
    if (has_id && !mote_serve_id_ok(id, strlen(id))) {
        mote_httpd_error(c, 400, "bad_id", "an id is 1 to 39 of [A-Za-z0-9_-]", NULL);
        return;
    }
    rc = mote_serve_create(sv, has_id ? id : NULL, &cv);
    if (rc == MOTE_ERR_EXIST) {
        mote_httpd_error(c, 409, "exists", "a conversation with this id exists", NULL);
        return;
    }
    if (rc < 0) {
        fail_err(sv, c, rc, 0);
        return;
    }
    answer_open(sv, &k, &w);
    mote_jw_kstr(&w, "id", mote_conv_id(cv));
    mote_jw_kstr(&w, "state", mote_conv_state_name(mote_conv_state(cv)));
    mote_sb_init(&loc, where, sizeof(where));
    mote_sb_s(&loc, "Location: /v1/conversations/");
    mote_sb_s(&loc, mote_conv_id(cv)); /* an id: nothing to escape */
    mote_sb_s(&loc, "\r\n");
    answer_send_with(c, 201, &k, &w, where);
}

/* ---- GET and DELETE /v1/conversations/ID ----------------------------------------- */

/* The state, then the records (?records=0: none; ?from=OFFSET: from a
 * record on), streamed from the journal as the socket drains. */
void mote_serve_http_get(struct serve *sv, struct mote_httpd_conn *c, const char *id)
{
    struct serve_stream *st = mote_serve_stream_of(sv, c);
    struct serve_look look;
    char q[24];
    uint64_t from = 0;
    bool records = true;
    struct mote_sb k;
    struct mote_jw w;
    size_t mark, head_mark;
    uint32_t bad = 0;
    int rc;

    rc = mote_serve_look(sv, id, &look, &bad);
    if (rc == MOTE_ERR_AGAIN) {
        wait_disk(sv, c, id, SERVE_REDO_GET);
        return;
    }
    if (rc < 0) {
        fail_err(sv, c, rc, bad);
        return;
    }
    if (mote_hreq_query(&c->io->req, "records", q, sizeof(q)) >= 0)
        records = !(strcmp(q, "0") == 0 || strcmp(q, "false") == 0 || strcmp(q, "no") == 0);
    if ((rc = mote_serve_stream_open(sv, st, id)) < 0) {
        fail_err(sv, c, rc, 0);
        return;
    }
    if (mote_hreq_query(&c->io->req, "from", q, sizeof(q)) >= 0 &&
        (!number(q, &from) || !mote_serve_record_start(sv, st, from, look.end))) {
        mote_httpd_error(c, 400, "bad_offset",
                         "\"from\" must be the offset of a record (an event id) or 0", NULL);
        return;
    }
    answer_open(sv, &k, &w);
    mote_jw_kstr(&w, "id", id);
    mote_jw_kstr(&w, "state", look.state);
    mote_jw_kbool(&w, "loaded", look.cv != NULL);
    mote_jw_kbool(&w, "busy", look.busy);
    if (look.holder > 0) {
        mote_jw_kint(&w, "holder", look.holder);
    }
    mote_jw_kint(&w, "size", (int64_t)look.end);
    mote_jw_key(&w, "last_error");
    if (look.last_error[0] != '\0')
        mote_jw_str(&w, look.last_error);
    else
        mote_jw_null(&w);
    mote_jw_key(&w, "usage");
    mote_serve_usage_json(&w, &look.usage);
    mote_serve_approval_json(sv, look.cv, &w, SERVE_INPUT_INLINE_MAX);
    if (records) {
        mote_jw_key(&w, "records");
        (void)mote_sb_put(&k, "[", 1); /* the writer's depth is left: the records follow */
    } else {
        mote_jw_obj_end(&w);
        (void)mote_sb_put(&k, "\n", 1);
    }
    head_mark = c->out_len;
    if (w.err != 0 || !mote_httpd_stream_head(c, "application/json", NULL, false) ||
        !mote_httpd_chunk_open(c, &mark) || !mote_httpd_out(c, k.p, k.len)) {
        c->out_len = head_mark; /* no part of the 200 before the 500 */
        mote_httpd_error(c, 500, "internal", "the state does not fit the connection's buffer",
                         NULL);
        return;
    }
    mote_httpd_chunk_close(c, mark);
    st->kind = SERVE_STREAM_RECORDS;
    st->pos = from;
    st->end = look.end;
    st->comma = false;
    st->in_record = false;
    if (!records) {
        c->ended = true;
        mote_httpd_chunk_end(c);
    }
    mote_httpd_respond(c, true);
}

void mote_serve_http_delete(struct serve *sv, struct mote_httpd_conn *c, const char *id)
{
    struct mote_sb k;
    struct mote_jw w;
    int rc = mote_serve_remove(sv, id);

    if (rc == MOTE_ERR_AGAIN) {
        wait_disk(sv, c, id, SERVE_REDO_DELETE);
        return;
    }
    if (rc == MOTE_ERR_INPROGRESS) {
        mote_httpd_error(c, 409, "unfinished",
                         "the conversation needs recovery or is damaged: it stays", NULL);
        return;
    }
    if (rc < 0) {
        fail_err(sv, c, rc, 0);
        return;
    }
    answer_open(sv, &k, &w);
    mote_jw_kstr(&w, "removed", id);
    answer_send(c, 200, &k, &w);
}

/* ---- the turn: message, retry, cancel, approval ------------------------------------ */

/* {"id": ..., "state": ..., "offset": N} with 202 (offset < 0: none;
 * state NULL: the conversation's now). */
static void accepted(struct serve *sv, struct mote_httpd_conn *c, struct mote_conv *cv,
                     const char *state, int64_t offset)
{
    struct mote_sb k;
    struct mote_jw w;

    answer_open(sv, &k, &w);
    mote_jw_kstr(&w, "id", mote_conv_id(cv));
    mote_jw_kstr(&w, "state", state != NULL ? state : mote_conv_state_name(mote_conv_state(cv)));
    if (offset >= 0) {
        mote_jw_kint(&w, "offset", offset);
    }
    answer_send(c, 202, &k, &w);
}

void mote_serve_http_message(struct serve *sv, struct mote_httpd_conn *c, const char *id,
                             const char *body, size_t len, bool retry)
{
    struct mote_conv *cv;
    uint64_t off;
    uint32_t bad;
    int n = 0, rc;

    if (sv->pub->phase != MOTE_SERVE_RUN) {
        fail_err(sv, c, MOTE_ERR_SHUTDOWN, 0);
        return;
    }
    if (!body_json(sv, c, body, len, retry))
        return;
    if (!retry) {
        int t = mote_json_member(&sv->json, 0, "text");

        if (mote_json_type_of(&sv->json, t) != MOTE_JSON_STRING) {
            mote_httpd_error(c, 400, "bad_field", "the body needs \"text\": the message, a string",
                             NULL);
            return;
        }
        n = mote_json_str(&sv->json, t, sv->scratch, sizeof(sv->scratch));
        if (n < 0) {
            mote_httpd_error(c, 413, "too_large", "the message is too long", NULL);
            return;
        }
    }
    rc = mote_serve_send(sv, id, sv->scratch, (size_t)n, retry, &cv, &off, &bad);
    if (rc == MOTE_ERR_AGAIN) {
        /* a long journal being loaded: answered once it is (the engine
         * keeps the body meanwhile) */
        wait_disk(sv, c, id, retry ? SERVE_REDO_RETRY : SERVE_REDO_MESSAGE);
        return;
    }
    if (rc == MOTE_ERR_BUSY && cv != NULL && mote_conv_busy(cv)) {
        char m[120];
        struct mote_sb sb;

        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_s(&sb, "a turn is running in this conversation (");
        mote_sb_s(&sb, mote_conv_state_name(mote_conv_state(cv)));
        mote_sb_s(&sb, "): wait for it, or cancel it");
        mote_httpd_error(c, 409, "busy", m, NULL);
        return;
    }
    if (rc == MOTE_ERR_INVAL && cv != NULL) {
        mote_httpd_error(c, 400, "empty", "the message is empty", NULL);
        return;
    }
    if (rc == MOTE_ERR_NOTSUP && cv != NULL) {
        mote_httpd_error(c, 409, "calls_only",
                         "this conversation holds an MCP client's tool calls: it takes no message",
                         NULL);
        return;
    }
    if (rc == MOTE_ERR_ALREADY && retry) {
        mote_httpd_error(c, 409, "nothing_to_retry",
                         "the last turn is finished (or nothing was said): send a message", NULL);
        return;
    }
    if (rc < 0) {
        fail_err(sv, c, rc, bad);
        return;
    }
    accepted(sv, c, cv, NULL, retry ? -1 : (int64_t)off);
}

void mote_serve_http_cancel(struct serve *sv, struct mote_httpd_conn *c, const char *id)
{
    struct mote_conv *cv;

    if (mote_serve_cancel(sv, id, &cv) < 0) {
        mote_httpd_error(c, 409, "idle", "no turn is running in this conversation", NULL);
        return;
    }
    /* The state the cancel leaves: the turn ends (a running request or
     * tool stops on its next step; the cancelled event and the records
     * follow), whatever it was doing. */
    accepted(sv, c, cv, mote_conv_state_name(MOTE_CONV_IDLE), -1);
}

void mote_serve_http_approval(struct serve *sv, struct mote_httpd_conn *c, const char *id,
                              const char *body, size_t len)
{
    char call_id[MOTE_LLM_ID_MAX], answer[16], reason[200];
    bool has_call, has_answer, has_reason;
    struct mote_conv *cv;
    enum mote_answer a;
    int64_t ask = 0;
    struct mote_sb k;
    struct mote_jw w;
    int t, rc;

    if (!body_json(sv, c, body, len, false) ||
        !json_str_member(sv, c, "call_id", call_id, sizeof(call_id), &has_call) ||
        !json_str_member(sv, c, "answer", answer, sizeof(answer), &has_answer) ||
        !json_str_member(sv, c, "reason", reason, sizeof(reason), &has_reason))
        return;
    if (!has_call || !has_answer) {
        mote_httpd_error(c, 400, "bad_field",
                         "the body needs \"call_id\" and \"answer\" (yes, no or always)", NULL);
        return;
    }
    if (strcmp(answer, "yes") == 0) {
        a = MOTE_ANSWER_YES;
    } else if (strcmp(answer, "no") == 0) {
        a = MOTE_ANSWER_NO;
    } else if (strcmp(answer, "always") == 0) {
        a = MOTE_ANSWER_ALWAYS;
    } else {
        mote_httpd_error(c, 400, "bad_field", "\"answer\" is yes, no or always", NULL);
        return;
    }
    t = mote_json_member(&sv->json, 0, "ask_id");
    if (t >= 0 &&
        (mote_json_int(&sv->json, t, &ask) < 0 || ask < 1 || ask > (int64_t)UINT32_MAX)) {
        mote_httpd_error(c, 400, "bad_field", "\"ask_id\" must be a number from 1 to 4294967295",
                         NULL);
        return;
    }
    rc = mote_serve_approve(sv, id, call_id, (uint32_t)ask, a, has_reason ? reason : NULL, &cv);
    if (rc == MOTE_ERR_SHUTDOWN) {
        mote_httpd_error(c, 503, "shutting_down",
                         "mote is shutting down: the call stays pending and is asked again on "
                         "the next start",
                         NULL);
        return;
    }
    if (rc == MOTE_ERR_NOENT) {
        mote_httpd_error(c, 409, "no_question",
                         "no tool call of this conversation waits for an answer", NULL);
        return;
    }
    if (rc < 0) {
        mote_httpd_error(c, 409, "stale", "that call is not the one waiting for an answer",
                         NULL);
        return;
    }
    answer_open(sv, &k, &w);
    mote_jw_kstr(&w, "id", mote_conv_id(cv));
    mote_jw_kstr(&w, "call_id", call_id);
    mote_jw_kstr(&w, "answer", answer);
    answer_send(c, 202, &k, &w); /* taken: the call runs (or is refused) from here */
}

/* ---- an MCP server's question: GET and POST /v1/conversations/ID/elicitation ------- */

void mote_serve_http_elicit(struct serve *sv, struct mote_httpd_conn *c, const char *id,
                            const char *body, size_t len)
{
    const char *code, *action = "";
    char m[260];
    struct mote_sb k;
    struct mote_jw w;

    if (c->io->req.method == MOTE_HM_GET) {
        answer_open(sv, &k, &w);
        mote_jw_kstr(&w, "id", id);
        if (!mote_serve_elicit_json(sv, id, &w)) {
            mote_httpd_error(c, 409, "no_question",
                             "no MCP server's question waits in this conversation", NULL);
            return;
        }
        if (w.err != 0) {
            mote_httpd_error(c, 413, "too_large", "the question is larger than a response",
                             NULL);
            return;
        }
        answer_send(c, 200, &k, &w);
        return;
    }
    if (!body_json(sv, c, body, len, false))
        return;
    code = mote_serve_elicit_take(sv, &sv->json, 0, id, "client", m, sizeof(m), &action);
    if (code != NULL) {
        mote_httpd_error(c, code[0] == 'b' && code[1] == 'a'   ? 400
                            : code[0] == 'n' || code[0] == 's' ? 409
                            : code[0] == 'b'                   ? 503
                                                               : 502,
                         code, m, code[0] == 'b' && code[1] == 'u' ? "Retry-After: 1\r\n" : NULL);
        return;
    }
    answer_open(sv, &k, &w);
    mote_jw_kstr(&w, "id", id);
    mote_jw_kstr(&w, "action", action);
    answer_send(c, 202, &k, &w);
}

/* ---- GET /v1/conversations/ID/events ------------------------------------------------ */

/* Server-sent events: the records after Last-Event-ID (or ?after=), from
 * ?from=, or from now on; then live events, pings, and a last event. */
void mote_serve_http_events(struct serve *sv, struct mote_httpd_conn *c, const char *id)
{
    struct serve_stream *st = mote_serve_stream_of(sv, c);
    char q[24];
    uint64_t n = 0, end;
    bool after = false, from = false;
    int rc;

    if ((rc = mote_serve_stream_open(sv, st, id)) < 0) {
        fail_err(sv, c, rc, 0);
        return;
    }
    end = mote_serve_conv_end(sv, st);
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
    if ((after || from) && (n == UINT64_MAX || !mote_serve_record_start(sv, st, n, end) ||
                            (after && n >= end))) {
        mote_httpd_error(c, 400, "bad_event_id",
                         "Last-Event-ID (or after=, from=) must be the id of a record of this "
                         "conversation",
                         NULL);
        return;
    }
    if (!mote_httpd_stream_head(c, "text/event-stream", "X-Accel-Buffering: no\r\n", true) ||
        !mote_httpd_outs(c, "retry: 2000\n\n")) {
        mote_httpd_error(c, 500, "internal", "cannot start the stream", NULL);
        return;
    }
    st->kind = SERVE_STREAM_EVENTS;
    st->pos = n;
    st->skip = after;
    st->in_record = false;
    st->told_state = false;
    mote_httpd_respond(c, true);
}
