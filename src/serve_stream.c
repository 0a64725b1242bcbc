/*
 * serve_stream.c - a conversation's journal streamed to the API server's
 * clients: the records of GET /v1/conversations/ID, and the event stream
 * (records by their offsets, the state when a client catches up, pings,
 * the last event). A client is fed at its own pace: its stream keeps an
 * offset, and the next record is read from storage when its socket has
 * room (the engine's fill handler).
 */
#include <string.h>

#include "mote/mote.h"
#include "serve_int.h"
#include "util.h"

int mote_serve_stream_open(struct serve *sv, struct serve_stream *st, const char *id)
{
    const struct mote_port *p = sv->port;
    char name[MOTE_STORAGE_NAME_MAX];
    int h;

    MOTE_ASSERT(st->kind == SERVE_STREAM_NONE && st->sh < 0);
    mote_serve_journal_name(name, id);
    h = p->st_open(p->ctx, name, MOTE_ST_READ);
    if (h < 0)
        return h;
    st->sh = h;
    mote_str_copy(st->conv_id, sizeof(st->conv_id), id);
    st->pos = 0;
    st->gone = false;
    st->disk_size = UINT64_MAX;
    st->disk_end = 0;
    return 0;
}

/* A journal that is not loaded may end in a torn line (a power cut; it
 * is cut off when the conversation is loaded): its end is after its last
 * newline, so that a stream never sends a record without its newline.
 * The scan back from the file's end is done again only when the size
 * changed. */
uint64_t mote_serve_conv_end(struct serve *sv, struct serve_stream *st)
{
    const struct mote_port *p = sv->port;
    struct mote_conv *cv = mote_conv_find(sv->conf.session, st->conv_id);
    uint64_t at, lo;
    int64_t n;
    char b[256];

    if (!st->gone && cv != NULL && cv->jr.h >= 0)
        return cv->jr.size;
    n = st->sh >= 0 ? p->st_size(p->ctx, st->sh) : -1;
    if (n < 0)
        return st->pos;
    if ((uint64_t)n == st->disk_size)
        return st->disk_end;
    /* complete up to disk_end already, unless the file was cut below it */
    lo = st->disk_size != UINT64_MAX && st->disk_end <= (uint64_t)n ? st->disk_end : 0;
    at = (uint64_t)n;
    st->disk_size = (uint64_t)n;
    st->disk_end = lo;
    while (at > lo) {
        size_t k = at - lo < sizeof(b) ? (size_t)(at - lo) : sizeof(b);
        int got = p->st_read(p->ctx, st->sh, at - k, b, k);

        if (got != (int)k) {
            st->disk_size = UINT64_MAX; /* try again next time */
            return lo > st->pos ? lo : st->pos;
        }
        at -= k; /* the chunk starts here */
        while (k > 0 && b[k - 1] != '\n')
            k--;
        if (k > 0) {
            st->disk_end = at + k;
            break;
        }
    }
    return st->disk_end;
}

bool mote_serve_record_start(struct serve *sv, struct serve_stream *st, uint64_t off,
                             uint64_t end)
{
    const struct mote_port *p = sv->port;
    char b = 0;

    if (off > end)
        return false;
    if (off == 0)
        return true;
    return p->st_read(p->ctx, st->sh, off - 1, &b, 1) == 1 && b == '\n';
}

/* ---- the state ---------------------------------------------------------------- */

/* The pending call's input (raw JSON) into sv->small, if it is not
 * longer than `max`. Returns its length or < 0 (then *len_out, if the
 * record could be read, has its size). */
static int pending_input(struct serve *sv, struct mote_conv *cv,
                         const struct mote_conv_call *call, size_t max, size_t *len_out)
{
    size_t cap = max < sizeof(sv->small) ? max + 1 : sizeof(sv->small);

    *len_out = 0;
    return mote_journal_call_input(&cv->jr, call->rec_off, call->rec_idx, sv->small, cap, len_out);
}

void mote_serve_approval_json(struct serve *sv, struct mote_conv *cv, struct mote_jw *w,
                              size_t max)
{
    mote_jw_key(w, "approval");
    if (cv == NULL || mote_conv_pending(cv, NULL) == 0) {
        mote_jw_null(w);
        return;
    }
    mote_jw_obj(w);
    mote_serve_question_json(sv, cv, w, max);
    mote_jw_obj_end(w);
}

void mote_serve_question_json(struct serve *sv, struct mote_conv *cv, struct mote_jw *w,
                              size_t max)
{
    const struct mote_conv_call *call;
    uint32_t ask = mote_conv_pending(cv, &call);
    size_t len = 0;
    int n;

    if (ask == 0)
        return;
    n = pending_input(sv, cv, call, max, &len);
    mote_jw_kint(w, "ask_id", ask);
    mote_jw_kstr(w, "call_id", call->id);
    mote_jw_kstr(w, "name", call->name);
    mote_jw_kint(w, "record", (int64_t)call->rec_off);
    mote_jw_key(w, "input");
    if (n >= 0)
        mote_jw_raw(w, sv->small, (size_t)n);
    else
        mote_jw_null(w);
    mote_jw_kint(w, "input_bytes", (int64_t)len);
    mote_serve_deadline_json(sv, cv, w);
    if (n >= 0)
        (void)mote_serve_show_into(sv, w, 1024, call->name, sv->small, (size_t)n);
}

void mote_serve_deadline_json(struct serve *sv, const struct mote_conv *cv, struct mote_jw *w)
{
    uint32_t now = mote_loop_now(sv->loop);

    mote_jw_kint(w, "timeout_ms", cv->ask_timed ? cv->conf.approval_timeout_ms : 0);
    if (!cv->ask_timed)
        return;
    mote_jw_key(w, "expires_in_ms"); /* from now: the deadline is on the monotonic clock */
    mote_jw_int(w, mote_before(now, cv->ask_deadline) ? (int64_t)(cv->ask_deadline - now) : 0);
}

/* event: state, for a client that just caught up (with the pending
 * approval, so that a client that was behind never misses the question). */
static bool state_event(struct serve *sv, struct mote_httpd_conn *c, struct serve_stream *st)
{
    struct mote_conv *cv = st->gone ? NULL : mote_conv_find(sv->conf.session, st->conv_id);
    bool queued = cv == NULL && mote_serve_queued(sv, st->conv_id);
    const char *state = "idle";
    const struct serve_sum *e = NULL;
    int64_t holder = 0;
    struct mote_sb k;
    struct mote_jw w;

    if (cv == NULL && !queued) {
        /* on disk: what its journal says (locked, ...), once it is read */
        int rc = mote_serve_sum(sv, st->conv_id, &e, &holder);

        if (rc == MOTE_ERR_AGAIN) {
            st->wants_sum = true;
            mote_serve_disk_kick(sv);
            return false;
        }
        if (rc == 0)
            state = mote_serve_sum_state(e, holder);
        else
            holder = 0;
    }
    mote_sb_init(&k, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &k);
    (void)mote_sb_put(&k, "event: state\ndata: ", 19);
    mote_jw_obj(&w);
    mote_jw_key(&w, "state");
    mote_jw_str(&w, cv != NULL ? mote_conv_state_name(mote_conv_state(cv))
                    : queued   ? "needs_recovery"
                               : state);
    mote_jw_kbool(&w, "loaded", cv != NULL);
    mote_jw_kbool(&w, "busy", cv != NULL && mote_conv_busy(cv));
    if (holder > 0) {
        mote_jw_kint(&w, "holder", holder);
    }
    mote_serve_approval_json(sv, cv, &w, SERVE_INPUT_INLINE_MAX);
    mote_jw_obj_end(&w);
    (void)mote_sb_put(&k, "\n\n", 2);
    if (w.err != 0 || !mote_httpd_out(c, k.p, k.len))
        return false;
    /* an MCP server's open question too (serve_elicit.c; no room: the
     * state and the question again later) */
    return sv->elicit_tell == NULL || sv->elicit_tell(sv, c, st->conv_id);
}

/* event: shutdown, the last event once the session is down. */
static bool final_event(struct serve *sv, struct mote_httpd_conn *c)
{
    struct mote_sb k;
    struct mote_jw w;

    mote_sb_init(&k, sv->resp, sizeof(sv->resp));
    mote_jw_init(&w, mote_sb_put, &k);
    (void)mote_sb_put(&k, "event: shutdown\ndata: ", 22);
    mote_jw_obj(&w);
    mote_jw_kstr(&w, "reason", sv->sd_reason);
    mote_jw_kbool(&w, "timed_out", sv->sd_timed_out);
    mote_jw_kint(&w, "marked", sv->sd_marked);
    mote_jw_obj_end(&w);
    (void)mote_sb_put(&k, "\n\n", 2);
    return w.err == 0 && mote_httpd_out(c, k.p, k.len);
}

/* event: removed, the last event of a stream whose conversation was
 * deleted. */
static bool removed_event(struct mote_httpd_conn *c, const struct serve_stream *st)
{
    return mote_httpd_outs(c, "event: removed\ndata: {\"id\":\"") &&
           mote_httpd_outs(c, st->conv_id) && mote_httpd_outs(c, "\"}\n\n");
}

/* ---- refilling ------------------------------------------------------------------ */

/* Reads journal bytes at st->pos into the out buffer (at most `max`) and
 * takes them up to the end of the record (`keep`: else they are read
 * past, not sent). Returns how many were taken, 0 when nothing could be
 * read; *done says the record ended (its newline is left out). */
static size_t copy_record(struct serve *sv, struct mote_httpd_conn *c, struct serve_stream *st,
                          size_t max, uint64_t end, bool *done, bool keep)
{
    const struct mote_port *p = sv->port;
    char *at = c->io->out + c->out_len;
    uint64_t left = end - st->pos;
    size_t want = left < max ? (size_t)left : max;
    const char *nl;
    int got;

    *done = false;
    if (want == 0 || st->sh < 0)
        return 0;
    MOTE_ASSERT(want <= mote_httpd_room(c));
    got = p->st_read(p->ctx, st->sh, st->pos, at, want);
    if (got <= 0)
        return 0;
    nl = memchr(at, '\n', (size_t)got);
    if (nl != NULL) {
        size_t n = (size_t)(nl - at);

        *done = true;
        if (keep)
            c->out_len += n;
        st->pos += n + 1;
        return n + 1;
    }
    if (keep)
        c->out_len += (size_t)got;
    st->pos += (uint64_t)got;
    return (size_t)got;
}

/* Refills a records response. Returns true if it produced something. */
static bool pump_records(struct serve *sv, struct mote_httpd_conn *c, struct serve_stream *st)
{
    size_t mark, before = c->out_len;
    bool done;

    if (c->ended || mote_httpd_room(c) < 96 || !mote_httpd_chunk_open(c, &mark))
        return false;
    while (mote_httpd_room(c) > 64) {
        if (!st->in_record) {
            if (st->pos >= st->end) {
                (void)mote_httpd_outs(c, "]}\n");
                c->ended = true;
                break;
            }
            (void)mote_httpd_outs(c, st->comma ? ",{\"offset\":" : "{\"offset\":");
            (void)mote_httpd_out_u64(c, st->pos);
            (void)mote_httpd_outs(c, ",\"record\":");
            st->in_record = true;
            st->comma = true;
        }
        if (copy_record(sv, c, st, mote_httpd_room(c) - 8, st->end, &done, true) == 0 &&
            !done) {
            /* the snapshot's end came early (cannot happen with a whole
             * journal): close what is open */
            (void)mote_httpd_outs(c, "null}");
            st->in_record = false;
            st->pos = st->end;
            continue;
        }
        if (done) {
            (void)mote_httpd_outs(c, "}");
            st->in_record = false;
        }
    }
    mote_httpd_chunk_close(c, mark);
    if (c->ended)
        mote_httpd_chunk_end(c);
    return c->out_len > before;
}

bool mote_serve_caught_up(struct serve *sv, struct serve_stream *st)
{
    return !st->in_record && !st->skip && st->pos >= mote_serve_conv_end(sv, st);
}

/* Refills an event stream. Returns true if it produced something. */
static bool pump_events(struct serve *sv, struct mote_httpd_conn *c, struct serve_stream *st)
{
    size_t before = c->out_len;
    unsigned rounds = 0;
    bool done;

    while (mote_httpd_room(c) > 96 && rounds++ < 64) {
        uint64_t end;

        if (st->gone && !st->in_record) {
            /* the conversation was removed: its last event (a new one
             * of the same id is another conversation) */
            c->ended = removed_event(c, st);
            break;
        }
        end = mote_serve_conv_end(sv, st);
        if (st->skip) {
            /* the record the client has (Last-Event-ID): read past it */
            if (copy_record(sv, c, st, mote_httpd_room(c), end, &done, false) == 0 && !done)
                break;
            if (done)
                st->skip = false;
            continue;
        }
        if (!st->in_record) {
            if (st->pos >= end) {
                if (!st->told_state)
                    st->told_state = state_event(sv, c, st);
                if (sv->pub->phase >= MOTE_SERVE_FINAL && st->told_state)
                    c->ended = final_event(sv, c);
                break;
            }
            (void)mote_httpd_outs(c, "id: ");
            (void)mote_httpd_out_u64(c, st->pos);
            (void)mote_httpd_outs(c, "\nevent: record\ndata: ");
            st->in_record = true;
        }
        if (copy_record(sv, c, st, mote_httpd_room(c) - 2, end, &done, true) == 0 && !done) {
            /* removed in the middle of a record that can no longer be
             * read: closed without its end (a client drops an event cut
             * short) */
            if (st->gone)
                c->ended = true;
            break;
        }
        if (done) {
            (void)mote_httpd_outs(c, "\n\n");
            st->in_record = false;
        }
    }
    return c->out_len > before;
}

/* ---- the engine's stream handlers ------------------------------------------------- */

bool mote_serve_stream_fill(void *app, struct mote_httpd_conn *c)
{
    struct serve *sv = app;
    struct serve_stream *st = mote_serve_stream_of(sv, c);

    MOTE_ASSERT(st->kind != SERVE_STREAM_NONE); /* only streams are filled */
    if (st->kind == SERVE_STREAM_RECORDS)
        return pump_records(sv, c, st);
    if (st->kind == SERVE_STREAM_PAGE)
        return mote_serve_page_fill(sv, c, st);
    if (st->kind != SERVE_STREAM_EVENTS || st->wants_sum)
        return false; /* waits for a journal: a disk turn answers */
    return pump_events(sv, c, st);
}

bool mote_serve_stream_disk_turn(struct serve *sv, struct mote_httpd_conn *c)
{
    struct serve_stream *st = mote_serve_stream_of(sv, c);
    const struct serve_sum *e;
    int64_t holder;

    if (mote_serve_sum(sv, st->conv_id, &e, &holder) == MOTE_ERR_AGAIN)
        return true;
    st->wants_sum = false;
    mote_httpd_poke(&sv->http, c); /* the state event now */
    return false;
}

void mote_serve_stream_ping(void *app, struct mote_httpd_conn *c)
{
    struct serve *sv = app;
    struct serve_stream *st = mote_serve_stream_of(sv, c);

    if (!st->in_record && !st->skip)
        (void)mote_httpd_outs(c, ": ping\n\n"); /* a comment, never inside an event */
}

void mote_serve_stream_done(void *app, struct mote_httpd_conn *c)
{
    struct serve *sv = app;
    struct serve_stream *st = mote_serve_stream_of(sv, c);

    if (st->sh >= 0)
        sv->port->st_close(sv->port->ctx, st->sh);
    memset(st, 0, sizeof(*st));
    st->sh = -1;
}

void mote_serve_streams_gone(struct serve *sv, const char *id)
{
    unsigned i;

    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        struct serve_stream *st = &sv->streams[i];

        if (st->kind == SERVE_STREAM_EVENTS && !st->gone && strcmp(st->conv_id, id) == 0) {
            MOTE_ASSERT(sv->http.conns[i].state == MOTE_HTTPD_RESP);
            st->gone = true; /* its last event, then closed */
            mote_httpd_poke(&sv->http, &sv->http.conns[i]);
        }
    }
}
