/*
 * agent.c - the session and its conversations (see mote_agent.h).
 *
 * A turn: user record -> request record -> model request (a job on a
 * stream slot) -> the answer streams (text held in the slot, long answers
 * spilled to the journal as pieces) -> the assistant record -> each tool
 * call: approval, tool_start, the tool's job on a run slot, tool_result ->
 * request again, until the model ends the turn. Every state change goes
 * through mote_conv_next(); effects() carries out what it returns, journal
 * first.
 *
 * Work that an API call asks for (a cancel, an approval's answer) or that
 * waits for a pool slot is done by the session's "kick": a 0 ms timer, so
 * it runs from the loop and never inside the caller's call.
 */
#include "mote/mote_agent.h"

#include <string.h>

#include "conv.h"
#include "util.h"

/* JSON tokens a record adds around one tool input (its keys, id, name,
 * the record's own fields), kept free so the reader parses it back. */
#define CALL_REC_TOKENS 32

static void next_tool(struct mote_conv *c);
static void sd_advance(struct mote_session *s);

/* ---- telling the embedder ----------------------------------------------- */

static void ev_init(struct mote_event *ev, enum mote_ev type, struct mote_conv *c)
{
    memset(ev, 0, sizeof(*ev));
    ev->type = type;
    ev->conv = c;
    ev->text = "";
    if (c != NULL)
        ev->state = c->st;
}

static void emit(struct mote_session *s, const struct mote_event *ev)
{
    s->conf.on_event(s->conf.arg, ev);
}

static void tell(struct mote_conv *c, enum mote_ev type, const char *text, int code)
{
    struct mote_event ev;

    ev_init(&ev, type, c);
    ev.text = text;
    ev.len = strlen(text);
    ev.code = code;
    emit(c->s, &ev);
}

/* Tells a state change, if there was one since the last time. */
static void tell_state(struct mote_conv *c)
{
    struct mote_event ev;

    if (c->st == c->st_told || c->s->in_api > 0)
        return; /* inside an API call: the kick tells it */
    c->st_told = c->st;
    ev_init(&ev, MOTE_EV_STATE, c);
    emit(c->s, &ev);
}

/* A failure of the turn: kept, and told from the loop. */
static void fail_msg(struct mote_conv *c, const char *a, const char *b)
{
    struct mote_sb sb;

    mote_sb_init(&sb, c->last_error, sizeof(c->last_error));
    mote_sb_s(&sb, a);
    if (b != NULL)
        mote_sb_s(&sb, b);
}

static void kick(struct mote_session *s);

static void tell_error(struct mote_conv *c, int code, bool fatal)
{
    struct mote_event ev;

    if (c->s->in_api > 0) {
        /* never inside the caller's call: the kick tells it */
        c->err_pending = true;
        c->err_code = code;
        c->err_fatal = fatal;
        kick(c->s);
        return;
    }
    ev_init(&ev, MOTE_EV_ERROR, c);
    ev.text = c->last_error;
    ev.len = strlen(c->last_error);
    ev.code = code;
    ev.fatal = fatal;
    emit(c->s, &ev);
}

/* ---- pools ---------------------------------------------------------------- */

static struct mote_stream *stream_get(struct mote_session *s, struct mote_conv *c)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_STREAMS; i++) {
        struct mote_stream *st = &s->streams[i];

        if (!st->used) {
            /* (the text, the arena and the request are written before
             * they are read: left alone, their pages stay unused) */
            memset(st, 0, offsetof(struct mote_stream, text));
            st->used = true;
            st->conv = c;
            return st;
        }
    }
    return NULL;
}

static void stream_put(struct mote_conv *c)
{
    struct mote_stream *st = c->stream;

    if (st == NULL)
        return;
    if (st->mcp_held && c->s->mcp != NULL)
        mote_mcp_unhold(c->s->mcp);
    st->used = false;
    st->conv = NULL;
    c->stream = NULL;
    kick(c->s); /* a waiting conversation may take it */
}

static struct mote_tool_run *run_get(struct mote_session *s, struct mote_conv *c)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_TOOL_RUNS; i++) {
        struct mote_tool_run *r = &s->runs[i];

        if (!r->used) {
            memset(r, 0, offsetof(struct mote_tool_run, json));
            r->used = true;
            r->conv = c;
            r->session = s;
            r->tool = NULL;
            r->out = r->out_buf;
            r->out_len = 0;
            r->out_cap = MOTE_TOOL_OUTPUT_MAX;
            r->out_dropped = 0;
            r->is_error = false;
            r->note_added = false;
            memset(&r->st, 0, sizeof(r->st));
            return r;
        }
    }
    return NULL;
}

static void run_put(struct mote_conv *c)
{
    if (c->run == NULL)
        return;
    c->run->used = false;
    c->run->conv = NULL;
    c->run = NULL;
    kick(c->s);
}

/* ---- the journal, with failures made state ------------------------------- */

static int apply(struct mote_conv *c, enum mote_conv_event e, const char *errmsg);

/* A journal write failed: the conversation cannot go on (the journal is
 * the conversation). */
static void storage_failed(struct mote_conv *c, int rc)
{
    if (c->storage_failed)
        return;
    c->storage_failed = true;
    fail_msg(c, "cannot write the conversation journal: ", mote_strerror(rc));
    if (c->s->report.storage_err == 0)
        c->s->report.storage_err = rc;
    apply(c, MOTE_CEV_STORAGE_FAILED, NULL);
    tell_error(c, rc, true);
}

static void tell_record(struct mote_conv *c, uint64_t before)
{
    struct mote_event ev;
    const struct mote_jbuf *b = c->jr.buf;

    (void)b;
    if (c->jr.size <= before)
        return;
    ev_init(&ev, MOTE_EV_RECORD, c);
    ev.offset = before;
    ev.text = c->s->jbuf.line;
    ev.len = (size_t)(c->jr.size - before - 1u);
    emit(c->s, &ev);
}

/* Checks a journal write's result: true if it went well. */
static bool jok(struct mote_conv *c, int rc, uint64_t before)
{
    if (rc == MOTE_ERR_TOO_LARGE && c->jr.err == 0)
        return false; /* refused, nothing written: the caller says why */
    if (rc < 0) {
        storage_failed(c, rc);
        return false;
    }
    tell_record(c, before);
    return true;
}

/* ---- tool results ------------------------------------------------------ */

/* Journals the result of call c->call_i (cut so that its record fits) and
 * tells it; the round moves on to the next call. */
static bool give_result(struct mote_conv *c, const char *text, size_t len, bool is_error)
{
    struct mote_conv_call *call = &c->calls[c->call_i];
    uint64_t before = c->jr.size;
    struct mote_event ev;
    int rc;

    for (;;) {
        rc = mote_journal_tool_result(&c->jr, call->id, text, len, is_error);
        if (rc != MOTE_ERR_TOO_LARGE || c->jr.err != 0 || len == 0)
            break;
        /* escaped, it did not fit one record: keep the start */
        len = len / 2;
        while (len > 0 && ((unsigned char)text[len] & 0xC0u) == 0x80u)
            len--;
    }
    if (!jok(c, rc, before))
        return false;
    call->has_result = true;
    c->call_i++;
    ev_init(&ev, MOTE_EV_TOOL_RESULT, c);
    ev.id = call->id;
    ev.name = call->name;
    ev.text = text;
    ev.len = len;
    ev.is_error = is_error;
    emit(c->s, &ev);
    return true;
}

static bool give_result_s(struct mote_conv *c, const char *text, bool is_error)
{
    return give_result(c, text, strlen(text), is_error);
}

/* ---- the answer ------------------------------------------------------------ */

/* Writes held text as text records, each cut to fit one record. */
static int spill_text(struct mote_conv *c)
{
    struct mote_stream *st = c->stream;
    size_t off = 0;

    while (off < st->text_len) {
        size_t n = st->text_len - off;
        uint64_t before = c->jr.size;
        int rc;

        for (;;) {
            rc = mote_journal_text(&c->jr, st->text + off, n);
            if (rc != MOTE_ERR_TOO_LARGE || c->jr.err != 0 || n < 8)
                break;
            n /= 2;
            while (n > 0 && ((unsigned char)st->text[off + n] & 0xC0u) == 0x80u)
                n--;
        }
        if (!jok(c, rc, before))
            return rc < 0 ? rc : MOTE_ERR_IO;
        off += n;
        st->spilled = true;
    }
    st->text_len = 0;
    return 0;
}

static void call_rec(const struct mote_conv *c, unsigned i, struct mote_call_rec *r)
{
    const struct mote_stream *st = c->stream;

    r->id = c->calls[i].id;
    r->name = c->calls[i].name;
    if (c->calls[i].bad_input || st->too_large[i]) {
        r->input = "{}"; /* unusable input: the tool refuses it */
        r->input_len = 2;
    } else {
        r->input = st->arena + st->in_off[i];
        r->input_len = st->in_len[i];
    }
}

static void check_call(struct mote_conv *c, unsigned i);

/* Writes the calls [arena_first, upto) as call records and drops their
 * inputs from the arena. Text held so far goes first, keeping the order. */
static int spill_calls(struct mote_conv *c, unsigned upto)
{
    struct mote_stream *st = c->stream;
    size_t keep_from;
    unsigned i;
    int rc;

    if (upto <= st->arena_first)
        return 0;
    if ((rc = spill_text(c)) < 0)
        return rc;
    for (i = st->arena_first; i < upto; i++) {
        struct mote_call_rec r;
        uint64_t before = c->jr.size;

        check_call(c, i); /* written early, checked as at the answer's end */
        call_rec(c, i, &r);
        rc = mote_journal_call(&c->jr, &r);
        if (!jok(c, rc, before))
            return rc < 0 ? rc : MOTE_ERR_IO;
        c->calls[i].rec_off = before;
        c->calls[i].rec_idx = -1;
        st->spilled = true;
    }
    keep_from = upto < c->ncalls ? st->in_off[upto] : st->arena_len;
    memmove(st->arena, st->arena + keep_from, st->arena_len - keep_from);
    st->arena_len -= keep_from;
    for (i = upto; i < c->ncalls; i++)
        st->in_off[i] -= (uint32_t)keep_from;
    st->arena_first = upto;
    return 0;
}

static int add_text(struct mote_conv *c, const char *p, size_t n)
{
    struct mote_stream *st = c->stream;

    while (n > 0) {
        size_t room = sizeof(st->text) - st->text_len, take = n < room ? n : room;
        int rc;

        if (take == 0) {
            /* Full: the held text goes to the journal, at a character
             * boundary (the rest of a split character stays held). */
            size_t cut = st->text_len, left;

            while (cut > 0 && ((unsigned char)st->text[cut - 1] & 0xC0u) == 0x80u)
                cut--;
            if (cut > 0 && ((unsigned char)st->text[cut - 1] & 0x80u) != 0)
                cut--; /* the lead byte of the split character */
            if (cut == 0)
                cut = st->text_len;
            left = st->text_len - cut;
            st->text_len = cut;
            if ((rc = spill_text(c)) < 0)
                return rc;
            memmove(st->text, st->text + cut, left);
            st->text_len = left;
            continue;
        }
        memcpy(st->text + st->text_len, p, take);
        st->text_len += take;
        p += take;
        n -= take;
    }
    return 0;
}

static int add_args(struct mote_conv *c, unsigned slot, const char *p, size_t n)
{
    struct mote_stream *st = c->stream;

    if (st->too_large[slot])
        return 0;
    if (st->in_off[slot] + st->in_len[slot] != st->arena_len) {
        /* Its input is not the last one in the arena (fragments of two
         * calls interleaved): it cannot grow in place. */
        st->too_large[slot] = true;
        return 0;
    }
    if (st->arena_len + n > sizeof(st->arena) && slot > st->arena_first) {
        int rc = spill_calls(c, slot); /* room for this one */

        if (rc < 0)
            return rc;
    }
    if (st->arena_len + n > sizeof(st->arena)) {
        st->too_large[slot] = true;
        return 0;
    }
    memcpy(st->arena + st->arena_len, p, n);
    st->arena_len += n;
    st->in_len[slot] += (uint32_t)n;
    return 0;
}

static void apply_first_byte(struct mote_conv *c)
{
    if (!c->got_first) {
        c->got_first = true;
        apply(c, MOTE_CEV_FIRST_BYTE, NULL);
        tell_state(c);
    }
}

static int on_llm_event(void *arg, const struct mote_llm_event *ev)
{
    struct mote_conv *c = arg;
    struct mote_stream *st = c->stream;
    struct mote_event out;
    int rc;

    if (st == NULL || c->storage_failed)
        return MOTE_ERR_CANCELED;
    if (c->compacting) {
        /* The summary: held (never spilled: it is not an answer), not shown. */
        if (ev->type == MOTE_LLM_TEXT) {
            size_t room = sizeof(st->text) - st->text_len, k = ev->len < room ? ev->len : room;

            while (k < ev->len && k > 0 && ((unsigned char)ev->text[k] & 0xC0u) == 0x80u)
                k--;
            memcpy(st->text + st->text_len, ev->text, k);
            st->text_len += k;
        } else if (ev->type == MOTE_LLM_STOP) {
            mote_str_copy(c->stop, sizeof(c->stop), ev->text);
        }
        return 0;
    }
    switch (ev->type) {
    case MOTE_LLM_TEXT:
        apply_first_byte(c);
        if ((rc = add_text(c, ev->text, ev->len)) < 0)
            return rc;
        ev_init(&out, MOTE_EV_TEXT, c);
        out.text = ev->text;
        out.len = ev->len;
        emit(c->s, &out);
        break;
    case MOTE_LLM_THINKING:
        apply_first_byte(c);
        ev_init(&out, MOTE_EV_THINKING, c);
        out.text = ev->text;
        out.len = ev->len;
        emit(c->s, &out);
        break;
    case MOTE_LLM_TOOL_START:
        apply_first_byte(c);
        if (ev->slot >= MOTE_LLM_MAX_TOOL_CALLS)
            return MOTE_ERR_FULL;
        memset(&c->calls[ev->slot], 0, sizeof(c->calls[0]));
        mote_str_copy(c->calls[ev->slot].id, sizeof(c->calls[0].id), ev->id);
        mote_str_copy(c->calls[ev->slot].name, sizeof(c->calls[0].name), ev->name);
        st->in_off[ev->slot] = (uint32_t)st->arena_len;
        st->in_len[ev->slot] = 0;
        st->in_tok[ev->slot] = 0; /* not checked yet */
        st->too_large[ev->slot] = false;
        if (ev->slot + 1 > c->ncalls)
            c->ncalls = ev->slot + 1;
        break;
    case MOTE_LLM_TOOL_ARGS:
        if (ev->slot < c->ncalls && (rc = add_args(c, ev->slot, ev->text, ev->len)) < 0)
            return rc;
        break;
    case MOTE_LLM_STOP:
        apply_first_byte(c);
        mote_str_copy(c->stop, sizeof(c->stop), ev->text);
        break;
    case MOTE_LLM_USAGE:
        c->usage.input_tokens = ev->in_tokens;
        c->usage.output_tokens = ev->out_tokens;
        c->usage.cache_read_tokens = ev->cache_read;
        c->usage.cache_write_tokens = ev->cache_write;
        break;
    default:
        break;
    }
    return 0;
}

/* Checks call i's input once, before anything keeps it: one strict JSON
 * object (RFC 8259: no raw control characters, UTF-8; an empty input is
 * {}) that fits the reader's token limit in its record. Anything else is
 * marked bad and kept as {}: the call is refused with a clear result when
 * its turn comes. A checked call has in_tok > 0. */
/* Writes a re-encoded input over the bytes it came from: the writer's
 * output is the strict input without its insignificant white space, so
 * each byte lands at or before the one it was read from (memmove). */
struct inplace {
    char *buf;
    size_t len, cap;
};

static int inplace_sink(void *arg, const char *p, size_t n)
{
    struct inplace *o = arg;

    if (n > o->cap - o->len)
        return MOTE_ERR_TOO_LARGE; /* never: the output is no longer than the input */
    memmove(o->buf + o->len, p, n);
    o->len += n;
    return 0;
}

static void check_call(struct mote_conv *c, unsigned i)
{
    struct mote_stream *st = c->stream;
    struct mote_json *js = &c->s->jbuf.json;
    const char *in = st->arena + st->in_off[i];
    size_t n = st->in_len[i], k = 0;
    int rc;

    if (st->in_tok[i] != 0)
        return;
    c->s->jbuf.owner = NULL;
    while (k < n && (in[k] == ' ' || in[k] == '\n' || in[k] == '\r' || in[k] == '\t'))
        k++;
    st->in_tok[i] = 1;
    if (k == n && !st->too_large[i]) {
        st->in_len[i] = 0; /* no arguments at all: the empty object */
        return;
    }
    rc = st->too_large[i] ? MOTE_ERR_TOO_LARGE : mote_json_parse(js, in, n);
    if (rc > MOTE_JSON_MAX_TOKENS - CALL_REC_TOKENS)
        rc = MOTE_ERR_TOO_LARGE; /* its record would be more than the reader takes */
    if (rc > 0 && !mote_utf8_valid(in, n))
        rc = MOTE_ERR_BADMSG; /* kept as it is, it must be JSON to any parser */
    if (rc <= 0 || mote_json_type_of(js, 0) != MOTE_JSON_OBJECT) {
        c->calls[i].bad_input = true;
        c->calls[i].too_big = rc == MOTE_ERR_TOO_LARGE;
        /* the token limit ended the answer inside its input */
        c->calls[i].cut_off = strcmp(c->stop, "max_tokens") == 0 && i + 1 == c->ncalls;
    } else {
        /* Kept as mote's writer re-emits it, never as it came (issue
         * 11.1): what the journal, the next request and stream-json get
         * is JSON that mote wrote. */
        struct inplace o = {st->arena + st->in_off[i], 0, n};
        struct mote_jw w;

        mote_jw_init(&w, inplace_sink, &o);
        mote_jw_value(&w, js, 0);
        if (w.err != 0) {
            c->calls[i].bad_input = true;
            return;
        }
        if (st->in_off[i] + n == st->arena_len)
            st->arena_len = st->in_off[i] + o.len;
        st->in_len[i] = (uint32_t)o.len;
        st->in_tok[i] = (uint16_t)rc;
    }
}

static void check_calls(struct mote_conv *c)
{
    unsigned i;

    for (i = c->stream->arena_first; i < c->ncalls; i++)
        check_call(c, i);
}

/* The JSON tokens of an assistant record holding these calls (besides
 * its text): the reader must be able to parse every record it is given. */
static int answer_tokens(const struct mote_conv *c, unsigned first, unsigned n)
{
    int t = CALL_REC_TOKENS;
    unsigned i;

    for (i = 0; i < n; i++)
        t += 8 + (c->calls[first + i].bad_input ? 1 : c->stream->in_tok[first + i]);
    return t;
}

/* The answer as records: the assistant record with the rest of the text
 * and the calls still held, after as many text and call records as it
 * takes for that record to fit. */
static int commit_answer(struct mote_conv *c, bool interrupted)
{
    struct mote_stream *st = c->stream;
    struct mote_call_rec recs[MOTE_LLM_MAX_TOOL_CALLS];
    unsigned first, n, i;
    uint64_t before;
    int rc;

    if (!interrupted)
        check_calls(c);
    for (;;) {
        first = interrupted ? c->ncalls : st->arena_first;
        n = c->ncalls - first;
        for (i = 0; i < n; i++)
            call_rec(c, first + i, &recs[i]);
        if (mote_journal_assistant_size(st->text, st->text_len, c->stop, interrupted, recs, n) <=
                (int64_t)MOTE_JOURNAL_LINE_MAX &&
            answer_tokens(c, first, n) <= MOTE_JSON_MAX_TOKENS)
            break;
        if (st->text_len > 0)
            rc = spill_text(c);
        else if (n > 0)
            rc = spill_calls(c, first + 1);
        else
            return MOTE_ERR_TOO_LARGE;
        if (rc < 0)
            return rc;
    }
    before = c->jr.size;
    {
        struct mote_rec_usage u = {c->usage.input_tokens, c->usage.output_tokens,
                                   c->usage.cache_read_tokens, c->usage.cache_write_tokens};

        rc = mote_journal_answer(&c->jr, st->text, st->text_len, c->stop, interrupted, recs, n,
                                 interrupted ? NULL : &u);
    }
    if (!jok(c, rc, before))
        return rc < 0 ? rc : MOTE_ERR_IO;
    for (i = 0; i < n; i++) {
        c->calls[first + i].rec_off = before;
        c->calls[first + i].rec_idx = (int16_t)i;
    }
    st->text_len = 0;
    return 0;
}

/* ---- model requests ------------------------------------------------------ */

static void on_llm_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                        const char *errmsg, void *arg);

/* The tools offered to this request (fixed for the request's life). */
static void gather_tools(struct mote_conv *c)
{
    struct mote_session *s = c->s;
    struct mote_stream *st = c->stream;
    unsigned n = 0, i;

    if (c->conf.tools) {
        for (i = 0; i < s->ntools; i++) {
            st->defs[n].name = s->tools[i]->name;
            st->defs[n].description = s->tools[i]->description;
            st->defs[n].schema = s->tools[i]->schema;
            n++;
        }
    }
    if (c->conf.mcp && s->mcp != NULL)
        n += mote_mcp_tool_defs(s->mcp, st->defs + n,
                                (unsigned)(MOTE_ARRAY_LEN(st->defs) - n));
    st->ntools = n;
    st->req.ntools = n;
}

/* An attempt's body is made of the MCP servers' tool lists: they stay as
 * they are from the attempt's start (when its length is counted) until
 * its last byte is sent. */
static void on_llm_phase(void *arg, enum mote_llm_phase phase)
{
    struct mote_conv *c = arg;
    struct mote_stream *st = c->stream;
    struct mote_mcp *m = c->s->mcp;

    if (st == NULL || m == NULL || !c->conf.mcp)
        return;
    if (phase == MOTE_PHASE_RESOLVE) {
        if (!st->mcp_held)
            mote_mcp_hold(m);
        st->mcp_held = true;
        gather_tools(c); /* the list as it is now, for this attempt */
    } else if (phase == MOTE_PHASE_HEADERS && st->mcp_held) {
        st->mcp_held = false;
        mote_mcp_unhold(m);
    }
}

#define COMPACT_PROMPT                                                                           \
    "Summarise our conversation so far for your own later use: the user's goals and "         \
    "requests, what was done (tools used, files touched, results), decisions and facts "      \
    "established, and what is left to do. Keep names, paths, numbers and errors exact. "      \
    "Write only the summary; do not call tools."
#define COMPACT_MAX_TOKENS 2048

/* The parts of a summarising request: the conversation, then the request
 * to summarise it. */
static int compact_parts(void *arg, unsigned index, struct mote_part *p)
{
    struct mote_conv *c = arg;

    if (index < c->compact_n) {
        int rc = mote_journal_parts(&c->jr, index, p);

        if (rc != 0)
            return rc;
        c->compact_n = index; /* the conversation ends here */
    }
    if (index != c->compact_n)
        return 0;
    memset(p, 0, sizeof(*p));
    p->role = MOTE_ROLE_USER;
    p->type = MOTE_PART_TEXT;
    p->text = COMPACT_PROMPT;
    p->text_len = sizeof(COMPACT_PROMPT) - 1;
    return 1;
}

/* Starts the model request of this turn (or the summarising one) on a
 * stream slot, or waits for one. */
static void start_request(struct mote_conv *c)
{
    struct mote_session *s = c->s;
    struct mote_stream *st;
    int rc;

    c->want_send = false;
    st = stream_get(s, c);
    if (st == NULL) {
        c->want_send = true;
        c->queue_seq = ++s->queue_seq;
        return;
    }
    c->stream = st;
    c->got_first = false;
    c->ncalls = 0;
    c->call_i = 0;
    c->stop[0] = '\0';
    memset(&c->usage, 0, sizeof(c->usage));
    memset(&st->req, 0, sizeof(st->req));
    gather_tools(c);
    st->req.provider = c->conf.llm->provider;
    st->req.model = c->conf.model;
    st->req.system = c->conf.system;
    st->req.max_tokens = c->conf.max_tokens;
    st->req.cache = c->conf.llm->provider == MOTE_PROVIDER_ANTHROPIC;
    st->req.max_completion_tokens = c->conf.llm->provider == MOTE_PROVIDER_OPENAI &&
                                    mote_llm_openai_host(c->conf.llm->base_url);
    st->req.tools = st->defs;
    st->req.parts = mote_journal_parts;
    st->req.parts_arg = &c->jr;
    if (c->compacting) {
        st->req.parts = compact_parts;
        st->req.parts_arg = c;
        st->req.no_tool_calls = true;
        c->compact_n = (unsigned)-1;
        if (st->req.max_tokens == 0 || st->req.max_tokens > COMPACT_MAX_TOKENS)
            st->req.max_tokens = COMPACT_MAX_TOKENS;
    }
    c->jr.part_valid = false;
    rc = mote_llm_call_init(&st->call, c->conf.llm, &st->req, on_llm_event, c);
    st->call.on_phase = on_llm_phase;
    if (rc == 0)
        rc = mote_job_spawn(s->loop, c->compacting ? "summary" : "model request",
                            &mote_llm_call_ops, &st->call, &c->turn, &c->llm_job);
    if (rc == 0)
        rc = mote_job_then(s->loop, c->llm_job, "agent", on_llm_done, c);
    if (rc < 0) {
        if (c->llm_job != 0)
            (void)mote_job_cancel(s->loop, c->llm_job);
        c->llm_job = 0;
        if (rc == MOTE_ERR_SHUTDOWN) {
            stream_put(c);
            apply(c, MOTE_CEV_DRAIN_STOP, NULL);
            return;
        }
        fail_msg(c, "cannot start the model request: ",
                 rc == MOTE_ERR_CONFIG ? st->call.errmsg : mote_strerror(rc));
        stream_put(c);
        apply(c, MOTE_CEV_FAILED, c->last_error);
        tell_error(c, rc, false);
        return;
    }
    c->turns++;
}

static void tell_turn_end(struct mote_conv *c)
{
    struct mote_event ev;

    ev_init(&ev, MOTE_EV_TURN_END, c);
    ev.stop_reason = c->stop;
    ev.usage = c->usage;
    ev.turn_usage = c->turn_usage;
    emit(c->s, &ev);
}

/* A note for a stop that is not a plain end of the answer. */
static void stop_note(struct mote_conv *c)
{
    const char *m = NULL;

    if (strcmp(c->stop, "max_tokens") == 0)
        m = "the answer was cut at the token limit (max_tokens): raise the limit, or ask the "
            "model to go on";
    else if (strcmp(c->stop, "refusal") == 0)
        m = "the model refused to answer";
    else if (strcmp(c->stop, "content_filter") == 0)
        m = "the provider's content filter stopped the answer";
    else if (strcmp(c->stop, "model_context_window_exceeded") == 0)
        m = "the conversation no longer fits the model's context window: compact it";
    else if (strcmp(c->stop, "pause_turn") == 0 && c->st == MOTE_CONV_IDLE)
        m = "the model paused its turn, and the turn limit was reached: retry goes on";
    if (m != NULL)
        tell(c, MOTE_EV_WARNING, m, 0);
}

/* Tokens the last request used of the model's context window. */
static bool compact_due(const struct mote_conv *c)
{
    const struct mote_usage *u = &c->usage;
    uint64_t used = u->input_tokens + u->output_tokens + u->cache_read_tokens + u->cache_write_tokens;
    unsigned pct = c->conf.compact_percent > 0 && c->conf.compact_percent <= 100
                       ? c->conf.compact_percent
                       : 80u;

    return c->conf.context_window > 0 && used * 100u >= (uint64_t)c->conf.context_window * pct;
}

static void tell_note(struct mote_conv *c, const char *a, uint64_t n, const char *b,
                      uint64_t m, const char *d)
{
    char t[200];
    struct mote_sb sb;

    mote_sb_init(&sb, t, sizeof(t));
    mote_sb_s(&sb, a);
    if (b != NULL) {
        mote_sb_u(&sb, n);
        mote_sb_s(&sb, b);
    }
    if (d != NULL) {
        mote_sb_u(&sb, m);
        mote_sb_s(&sb, d);
    }
    tell(c, MOTE_EV_NOTE, t, 0);
}

/* Starts summarising (the transition's SEND_COMPACT effect follows). */
static void compact(struct mote_conv *c, bool resume)
{
    const struct mote_usage *u = &c->usage;

    c->compact_resume = resume;
    if (c->s->in_api == 0)
        tell_note(c, "compacting the conversation: ",
                  u->input_tokens + u->output_tokens + u->cache_read_tokens +
                      u->cache_write_tokens,
                  " tokens in use of ", c->conf.context_window, c->conf.context_window > 0
                                                                    ? " in the context window"
                                                                    : NULL);
    (void)apply(c, MOTE_CEV_COMPACT, NULL);
}

static void compact_done(struct mote_conv *c, enum mote_job_state how, const char *errmsg)
{
    size_t len = c->stream->text_len;

    if (how == MOTE_JOB_CANCELLED) {
        c->compacting = false;
        apply(c, MOTE_CEV_CANCELLED, NULL);
        stream_put(c);
        if (!c->storage_failed) {
            tell_state(c);
            tell(c, MOTE_EV_CANCELLED, "cancelled", 0);
        }
        return;
    }
    if (how == MOTE_JOB_FAILED || len == 0) {
        c->compacting = false;
        fail_msg(c, "the conversation could not be summarised: ",
                 how == MOTE_JOB_FAILED ? errmsg : "the model wrote no summary");
        apply(c, MOTE_CEV_FAILED, c->last_error);
        stream_put(c);
        if (!c->storage_failed) {
            tell_state(c);
            tell_error(c, MOTE_ERR_IO, false);
        }
        return;
    }
    /* The compact record (JOURNAL_COMPACT) frees the slot; a turn that
     * goes on takes one again for its request. */
    apply(c, c->compact_resume ? MOTE_CEV_COMPACTED : MOTE_CEV_COMPACTED_IDLE, NULL);
    if (c->storage_failed)
        return;
    tell_note(c, "compacted: a summary of ", len, " bytes stands for the earlier conversation",
              0, NULL);
    tell_state(c);
}

static void on_llm_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                        const char *errmsg, void *arg)
{
    struct mote_conv *c = arg;
    enum mote_conv_event e;

    (void)loop, (void)job;
    c->llm_job = 0;
    if (c->stream == NULL || c->storage_failed || c->st == MOTE_CONV_NEEDS_RECOVERY) {
        /* the shutdown cut it (and wrote what streamed), or storage failed */
        c->compacting = false;
        stream_put(c);
        tell_state(c);
        sd_advance(c->s);
        return;
    }
    if (c->compacting) {
        compact_done(c, how, errmsg);
        sd_advance(c->s);
        return;
    }
    if (how == MOTE_JOB_CANCELLED) {
        apply(c, MOTE_CEV_CANCELLED, NULL);
        stream_put(c);
        if (!c->storage_failed) {
            tell_state(c);
            tell(c, MOTE_EV_CANCELLED, "cancelled", 0);
        }
        sd_advance(c->s);
        return;
    }
    if (how == MOTE_JOB_FAILED) {
        fail_msg(c, errmsg, NULL);
        apply(c, MOTE_CEV_FAILED, errmsg);
        stream_put(c);
        if (!c->storage_failed) {
            tell_state(c);
            tell_error(c, MOTE_ERR_IO, false);
        }
        sd_advance(c->s);
        return;
    }
    /* The answer is complete: journaled before anything runs. */
    c->total.input_tokens += c->usage.input_tokens;
    c->total.output_tokens += c->usage.output_tokens;
    c->total.cache_read_tokens += c->usage.cache_read_tokens;
    c->total.cache_write_tokens += c->usage.cache_write_tokens;
    c->turn_usage.input_tokens += c->usage.input_tokens;
    c->turn_usage.output_tokens += c->usage.output_tokens;
    c->turn_usage.cache_read_tokens += c->usage.cache_read_tokens;
    c->turn_usage.cache_write_tokens += c->usage.cache_write_tokens;
    if (c->ncalls > 0)
        e = MOTE_CEV_ANSWER_TOOLS;
    else if (strcmp(c->stop, "pause_turn") == 0 &&
             c->turns < (c->conf.max_turns > 0 ? c->conf.max_turns : 25u))
        e = MOTE_CEV_ANSWER_PAUSED; /* the API asks for the turn to go on */
    else
        e = MOTE_CEV_ANSWER_DONE;
    apply(c, e, NULL);
    if (c->llm_job == 0)
        stream_put(c); /* (after pause_turn the next request holds a slot of its own) */
    if (c->storage_failed) {
        sd_advance(c->s);
        return;
    }
    tell_state(c);
    stop_note(c);
    if (c->st == MOTE_CONV_IDLE) {
        tell_turn_end(c);
        if (compact_due(c) && c->s->sd_phase == MOTE_SDP_NONE && !mote_conv_busy(c))
            compact(c, false);
    }
    sd_advance(c->s);
}

/* ---- tools ---------------------------------------------------------------- */

static const struct mote_tool *find_tool(const struct mote_session *s, const char *name)
{
    unsigned i;

    for (i = 0; i < s->ntools; i++) {
        if (strcmp(s->tools[i]->name, name) == 0)
            return s->tools[i];
    }
    return NULL;
}

/* Reads call `i`'s input from the journal into `out`; returns its length
 * or < 0. */
static int load_input(struct mote_conv *c, unsigned i, char *out, size_t cap)
{
    return mote_journal_call_input(&c->jr, c->calls[i].rec_off, c->calls[i].rec_idx, out, cap,
                                   NULL);
}

static bool allowed(const struct mote_conv *c, const char *name)
{
    unsigned i;

    for (i = 0; i < c->nallowed; i++) {
        if (strcmp(c->allowed[i], name) == 0)
            return true;
    }
    return false;
}

static const struct mote_tool_rule *rule_of(const struct mote_conv *c, const char *name)
{
    unsigned i;

    for (i = 0; c->conf.rules != NULL && i < c->conf.nrules; i++) {
        if (c->conf.rules[i].name != NULL && strcmp(c->conf.rules[i].name, name) == 0)
            return &c->conf.rules[i];
    }
    return NULL;
}

enum mote_approval mote_conv_policy(const struct mote_conv *c, const char *name)
{
    const struct mote_tool_rule *r = rule_of(c, name);
    const struct mote_tool *tool = find_tool(c->s, name);
    enum mote_approval a;

    if (r != NULL)
        a = r->approval;
    else if (tool != NULL && (tool->flags & MOTE_TOOL_NO_APPROVAL) != 0)
        a = MOTE_APPROVE_ALLOW;
    else
        a = c->conf.approval;
    /* "always" (journaled) allows what would be asked about, and what the
     * default refuses, never what a rule refuses */
    if (a != MOTE_APPROVE_ALLOW && allowed(c, name) && !(r != NULL && a == MOTE_APPROVE_DENY))
        a = MOTE_APPROVE_ALLOW;
    return a;
}

uint32_t mote_conv_pending(const struct mote_conv *c, const struct mote_conv_call **call)
{
    bool open = c->used && c->st == MOTE_CONV_AWAITING_APPROVAL && !c->answered &&
                c->ask_id != 0 && c->call_i < c->ncalls;

    if (call != NULL)
        *call = open ? &c->calls[c->call_i] : NULL;
    return open ? c->ask_id : 0;
}

static void on_tool_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                         const char *errmsg, void *arg);

static int run_step(struct mote_loop *loop, mote_job_id self, void *task)
{
    struct mote_tool_run *run = task;

    return run->tool->step(loop, self, run);
}

static void run_release(struct mote_loop *loop, void *task)
{
    struct mote_tool_run *run = task;

    if (run->tool->release != NULL)
        run->tool->release(loop, run);
}

static const struct mote_task_ops run_ops = {"tool", run_step, run_release};

/* Starts call c->call_i (approved) on a run slot. Returns 0 (its result
 * comes with on_tool_done), 1 (a result was given at once) or < 0 (storage
 * failed). */
static int start_tool(struct mote_conv *c)
{
    struct mote_session *s = c->s;
    struct mote_conv_call *call = &c->calls[c->call_i];
    const struct mote_tool *tool = find_tool(s, call->name);
    struct mote_tool_run *run;
    struct mote_event ev;
    unsigned srv = 0, mtool = 0;
    bool mcp = false;
    uint64_t before;
    int n, rc;

    if (tool == NULL && s->mcp != NULL && c->conf.mcp)
        mcp = mote_mcp_find(s->mcp, call->name, &srv, &mtool);
    run = run_get(s, c);
    if (run == NULL) {
        c->want_run = true;
        c->queue_seq = ++s->queue_seq;
        return 0;
    }
    c->want_run = false;
    c->run = run;
    run->tool = tool;
    run->call_id = call->id;
    n = load_input(c, c->call_i, run->in_buf, sizeof(run->in_buf));
    if (n < 0 || mote_json_parse(&run->json, run->in_buf, (size_t)n) <= 0) {
        run_put(c);
        if (n < 0 && n != MOTE_ERR_TOO_LARGE && n != MOTE_ERR_CORRUPT) {
            storage_failed(c, n);
            return n;
        }
        return give_result_s(c, "the tool input could not be read back", true) ? 1
                                                                                : MOTE_ERR_IO;
    }
    run->input = run->in_buf;
    run->input_len = (size_t)n;
    run->timeout_ms = s->conf.tool_timeout_ms;
    run->deadline = mote_loop_now(s->loop) + run->timeout_ms;
    /* Durable before it runs: a crash now leaves a call that recovery
     * closes with an error, never runs again. */
    before = c->jr.size;
    rc = mote_journal_tool_start(&c->jr, call->id, 0, 0, NULL);
    if (!jok(c, rc, before)) {
        run_put(c);
        return rc < 0 ? rc : MOTE_ERR_IO;
    }
    call->started = true;
    ev_init(&ev, MOTE_EV_TOOL_CALL, c);
    ev.id = call->id;
    ev.name = call->name;
    ev.input = run->input;
    ev.input_len = run->input_len;
    emit(s, &ev);
    if (mcp) {
        mote_mcp_call_init(&run->st.mcp, s->mcp, srv, mtool, run->input, run->input_len);
        rc = mote_job_spawn(s->loop, call->name, &mote_mcp_call_ops, &run->st.mcp, &c->turn,
                            &c->tool_job);
    } else {
        rc = mote_job_spawn(s->loop, call->name, &run_ops, run, &c->turn, &c->tool_job);
    }
    if (rc == 0)
        rc = mote_job_then(s->loop, c->tool_job, "agent", on_tool_done, c);
    if (rc < 0) {
        if (c->tool_job != 0)
            (void)mote_job_cancel(s->loop, c->tool_job);
        c->tool_job = 0;
        run_put(c);
        return give_result_s(c, rc == MOTE_ERR_SHUTDOWN ? "not run: mote was shutting down"
                                                        : "cannot start the tool",
                             true)
                   ? 1
                   : MOTE_ERR_IO;
    }
    return 0;
}

int mote_tool_started_process(struct mote_tool_run *run, int64_t pid)
{
    const struct mote_port *p = run->session->port;
    struct mote_conv *c = run->conv;
    int64_t g = MOTE_PORT_HAS(p, proc_group) ? p->proc_group(p->ctx, pid) : 0;
    uint64_t start = g > 0 && MOTE_PORT_HAS(p, proc_start_time) ? p->proc_start_time(p->ctx, g)
                                                                : 0;
    uint64_t before = c->jr.size;
    char tag[MOTE_PROC_TAG_MAX];
    int rc;

    tag[0] = '\0';
    if (MOTE_PORT_HAS(p, proc_tag) && p->proc_tag(p->ctx, pid, tag, sizeof(tag)) < 0)
        tag[0] = '\0';
    rc = mote_journal_tool_start(&c->jr, run->call_id, g > 0 ? g : 0, start, tag);

    return jok(c, rc, before) ? 0 : rc < 0 ? rc : MOTE_ERR_IO;
}

static void add_note(struct mote_tool_run *run, const char *a, uint64_t num, const char *b)
{
    char note[160];
    struct mote_sb sb;
    size_t n;

    mote_sb_init(&sb, note, sizeof(note));
    if (run->out_len > 0 && run->out[run->out_len - 1] != '\n')
        mote_sb_s(&sb, "\n");
    mote_sb_s(&sb, a);
    if (b != NULL) {
        mote_sb_u(&sb, num);
        mote_sb_s(&sb, b);
    }
    n = sb.len;
    /* Notes go past the output cap (the buffer has room for them). */
    if (run->out_len + n <= sizeof(run->out_buf)) {
        memcpy(run->out + run->out_len, note, n);
        run->out_len += n;
    }
}

static void on_tool_done(struct mote_loop *loop, mote_job_id job, enum mote_job_state how,
                         const char *errmsg, void *arg)
{
    struct mote_conv *c = arg;
    struct mote_tool_run *run = c->run;
    bool mcp = run != NULL && run->tool == NULL;

    (void)loop, (void)job;
    c->tool_job = 0;
    if (run == NULL || c->call_i >= c->ncalls || c->storage_failed) {
        run_put(c);
        sd_advance(c->s);
        return;
    }
    if (mcp) {
        const struct mote_mcp_call *m = &run->st.mcp;

        run->out_len = 0;
        if (how == MOTE_JOB_DONE) {
            mote_tool_out(run, m->result, m->len);
            run->is_error = m->is_error;
        }
    }
    if (how == MOTE_JOB_FAILED) {
        run->out_len = 0;
        mote_tool_outs(run, "the tool failed: ");
        mote_tool_outs(run, errmsg);
        run->is_error = true;
    } else if (how == MOTE_JOB_CANCELLED) {
        if (run->out_len == 0 || mcp)
            mote_tool_outs(run, c->st == MOTE_CONV_NEEDS_RECOVERY
                                    ? "killed: mote was shutting down"
                                    : mcp ? "cancelled by the user (the MCP server was told)"
                                          : "cancelled by the user");
        run->is_error = true;
    }
    if (run->out_dropped > 0)
        add_note(run, "[output cut: ", run->out_dropped, " more bytes not shown]");
    if (!give_result(c, run->out, run->out_len, run->is_error)) {
        run_put(c);
        sd_advance(c->s);
        return;
    }
    run_put(c);
    if (how == MOTE_JOB_CANCELLED && c->st != MOTE_CONV_NEEDS_RECOVERY) {
        apply(c, MOTE_CEV_CANCELLED, NULL);
        if (!c->storage_failed) {
            tell_state(c);
            tell(c, MOTE_EV_CANCELLED, "cancelled", 0);
        }
    } else if (c->st == MOTE_CONV_TOOL_EXECUTING) {
        next_tool(c);
    }
    sd_advance(c->s);
}

/* Asks about call c->call_i: the question goes out with its input. */
static void ask(struct mote_conv *c)
{
    struct mote_conv_call *call = &c->calls[c->call_i];
    struct mote_event ev;
    const char *input = "{}";
    size_t len = 2;
    int n;

    c->ask_id++;
    if (c->ask_id == 0)
        c->ask_id = 1;
    c->answered = false;
    /* The input, read back into the journal's buffer: valid during the
     * event (approve() never touches the journal). */
    n = load_input(c, c->call_i, c->s->jbuf.text, sizeof(c->s->jbuf.text));
    if (n >= 0) {
        input = c->s->jbuf.text;
        len = (size_t)n;
    }
    tell_state(c);
    ev_init(&ev, MOTE_EV_APPROVAL, c);
    ev.ask_id = c->ask_id;
    ev.id = call->id;
    ev.name = call->name;
    ev.input = input;
    ev.input_len = len;
    emit(c->s, &ev);
}

/* Goes through the calls in order; ends the round when all have results. */
static void next_tool(struct mote_conv *c)
{
    struct mote_session *s = c->s;

    while (c->call_i < c->ncalls) {
        struct mote_conv_call *call = &c->calls[c->call_i];
        const struct mote_tool *tool;
        bool mcp = false;
        unsigned a, b;
        int rc;

        if (c->st != MOTE_CONV_TOOL_EXECUTING || c->tool_job != 0 || c->want_run)
            return;
        if (call->has_result) {
            c->call_i++;
            continue;
        }
        if (s->sd_phase != MOTE_SDP_NONE) {
            /* Shutting down: no new tool starts; it runs after a restart. */
            apply(c, MOTE_CEV_DRAIN_STOP, NULL);
            return;
        }
        if (call->bad_input) {
            if (!give_result_s(c, call->cut_off
                                      ? "not run: the answer reached the token limit "
                                        "(max_tokens) before this call's input was complete"
                                  : call->too_big
                                      ? "not run: the tool input is larger than mote keeps in "
                                        "one journal record (too many bytes or JSON values); "
                                        "send it in smaller parts"
                                      : "the tool input was not one valid JSON object "
                                        "(RFC 8259: complete, UTF-8, with control characters "
                                        "inside strings escaped, such as \\n for a newline)",
                               true))
                return;
            continue;
        }
        tool = c->conf.tools ? find_tool(s, call->name) : NULL;
        if (tool == NULL && c->conf.mcp && s->mcp != NULL)
            mcp = mote_mcp_find(s->mcp, call->name, &a, &b);
        if (tool == NULL && !mcp) {
            char m[MOTE_LLM_NAME_MAX + 32];
            struct mote_sb sb;

            mote_sb_init(&sb, m, sizeof(m));
            mote_sb_s(&sb, "unknown tool '");
            mote_sb_s(&sb, call->name);
            mote_sb_s(&sb, "'");
            if (!give_result_s(c, m, true))
                return;
            continue;
        }
        if (c->answered) {
            /* the user's answer to this very call's question */
            c->answered = false;
            if (c->answer == MOTE_ANSWER_NO) {
                char m[260];
                struct mote_sb sb;

                mote_sb_init(&sb, m, sizeof(m));
                mote_sb_s(&sb, "the user refused to run this tool call");
                if (c->refusal[0] != '\0') {
                    mote_sb_s(&sb, ": ");
                    mote_sb_s(&sb, c->refusal);
                }
                if (!give_result_s(c, m, true))
                    return;
                continue;
            }
        } else {
            enum mote_approval policy = mote_conv_policy(c, call->name);

            if (policy == MOTE_APPROVE_DENY) {
                if (!give_result_s(c, c->conf.deny_reason != NULL
                                          ? c->conf.deny_reason
                                          : "refused: the user's policy does not allow tools",
                                   true))
                    return;
                continue;
            }
            if (policy == MOTE_APPROVE_ASK) {
                apply(c, MOTE_CEV_ASK, NULL);
                return;
            }
        }
        rc = start_tool(c);
        if (rc < 0 || rc == 0)
            return; /* storage failed, or the result comes later */
    }
    if (c->st != MOTE_CONV_TOOL_EXECUTING)
        return;
    /* Every call has its result: the next request, or the end. */
    if (c->turns >= (c->conf.max_turns > 0 ? c->conf.max_turns : 25u)) {
        char m[120];
        struct mote_sb sb;

        mote_sb_init(&sb, m, sizeof(m));
        mote_sb_s(&sb, "stopped after ");
        mote_sb_u(&sb, c->turns);
        mote_sb_s(&sb, " model requests (the turn limit); retry goes on");
        fail_msg(c, m, NULL);
        apply(c, MOTE_CEV_TURN_LIMIT, m);
        if (!c->storage_failed) {
            tell_state(c);
            tell_error(c, MOTE_ERR_LIMIT, false);
        }
        return;
    }
    if (compact_due(c)) {
        compact(c, true); /* summarised first; the request follows */
        tell_state(c);
        return;
    }
    apply(c, MOTE_CEV_TOOLS_DONE, NULL);
    tell_state(c);
}

/* ---- the transition and its effects --------------------------------------- */

/* Journals what a cancel leaves: results for the calls that did not run,
 * then the record that ends the turn. */
static bool journal_cancel(struct mote_conv *c)
{
    uint64_t before;

    while (c->call_i < c->ncalls) {
        if (c->calls[c->call_i].has_result) {
            c->call_i++;
            continue;
        }
        if (!give_result_s(c, "cancelled by the user before it ran", true))
            return false;
    }
    before = c->jr.size;
    return jok(c, mote_journal_cancel(&c->jr), before);
}

/* Runs the transition for `e` and carries out its effects, journal first.
 * `arg` is the user's text (USER) or the error message (JOURNAL_ERROR).
 * Returns 0, or < 0 when a journal write failed (then the conversation is
 * in ERROR) or a user message was refused whole (state unchanged). */
static int apply_text(struct mote_conv *c, enum mote_conv_event e, const char *arg, size_t len)
{
    struct mote_conv_step step = mote_conv_next(c->st, e);
    enum mote_conv_state was = c->st;
    unsigned f = step.effects;
    uint64_t before;
    int rc;

    if (f & MOTE_CEFF_JOURNAL_USER) {
        /* The user's words are durable before anything else happens. */
        before = c->jr.size;
        rc = mote_journal_user(&c->jr, arg, len);
        if (rc == MOTE_ERR_TOO_LARGE && c->jr.err == 0)
            return rc; /* refused whole: nothing was written, nothing changed */
        c->st = step.state;
        if (!jok(c, rc, before))
            return rc;
    }
    c->st = step.state;
    (void)was;
    if (f & MOTE_CEFF_JOURNAL_PARTIAL) {
        /* What streamed so far, as a closed record. A cancel always writes
         * one (it ends the turn), even before the first byte. */
        if (c->stream != NULL && (c->got_first || c->stream->text_len > 0 ||
                                  c->stream->spilled || e == MOTE_CEV_CANCELLED)) {
            rc = commit_answer(c, true);
            if (rc < 0 && !c->storage_failed)
                storage_failed(c, rc);
        } else if (c->stream == NULL && e == MOTE_CEV_CANCELLED) {
            before = c->jr.size;
            (void)jok(c, mote_journal_assistant(&c->jr, "", 0, "", true, NULL, 0), before);
        }
        if (c->storage_failed)
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_KILL_TOOLS) {
        if (c->tool_job != 0)
            (void)mote_job_cancel(c->s->loop, c->tool_job);
        if (e == MOTE_CEV_STORAGE_FAILED && c->llm_job != 0)
            (void)mote_job_cancel(c->s->loop, c->llm_job);
    }
    if (f & MOTE_CEFF_JOURNAL_CANCEL) {
        c->want_run = false;
        if (!journal_cancel(c))
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_JOURNAL_ERROR) {
        before = c->jr.size;
        if (!jok(c, mote_journal_error(&c->jr, arg != NULL ? arg : "failed"), before))
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_JOURNAL_MARK) {
        before = c->jr.size;
        if (!jok(c, mote_journal_mark(&c->jr, "needs_recovery"), before))
            return MOTE_ERR_IO;
        c->s->report.conversations_marked++;
    }
    if (f & MOTE_CEFF_JOURNAL_CLOSE) {
        before = c->jr.size;
        if (!jok(c, mote_recover_apply(&c->jr, &c->rec), before))
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_JOURNAL_AUTO) {
        before = c->jr.size;
        if (!jok(c, mote_journal_auto(&c->jr), before))
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_JOURNAL_ANSWER) {
        rc = commit_answer(c, false);
        if (rc < 0) {
            if (!c->storage_failed) {
                fail_msg(c, "the answer is too large for the journal (MOTE_JOURNAL_LINE_MAX)",
                         NULL);
                (void)apply(c, MOTE_CEV_FAILED, c->last_error);
                tell_error(c, rc, false);
            }
            return rc;
        }
    }
    if (f & MOTE_CEFF_JOURNAL_COMPACT) {
        struct mote_stream *st = c->stream;

        before = c->jr.size;
        rc = mote_journal_compact(&c->jr, st->text, st->text_len, c->compact_resume);
        if (!jok(c, rc, before))
            return rc < 0 ? rc : MOTE_ERR_IO;
        c->compacting = false;
        memset(&c->usage, 0, sizeof(c->usage)); /* the context is small again */
        stream_put(c);
    }
    if (f & MOTE_CEFF_JOURNAL_REQUEST) {
        before = c->jr.size;
        if (!jok(c, mote_journal_request(&c->jr, 1), before))
            return MOTE_ERR_IO;
    }
    if (f & MOTE_CEFF_SEND) {
        if (c->s->sd_phase != MOTE_SDP_NONE) {
            /* Shutting down: no new request; the journal says it is due. */
            return apply(c, MOTE_CEV_DRAIN_STOP, NULL);
        }
        stream_put(c); /* the last answer's slot (pause_turn): the request takes one anew */
        start_request(c);
    }
    if (f & MOTE_CEFF_SEND_COMPACT) {
        c->compacting = true;
        start_request(c);
    }
    if (f & MOTE_CEFF_RUN_TOOLS) {
        /* From the loop, after this transition was told. */
        c->want_next = true;
        kick(c->s);
    }
    if (f & MOTE_CEFF_ASK)
        ask(c);
    return 0;
}

static int apply(struct mote_conv *c, enum mote_conv_event e, const char *errmsg)
{
    return apply_text(c, e, errmsg, errmsg != NULL ? strlen(errmsg) : 0);
}

/* ---- the kick: deferred work --------------------------------------------- */

static void recover_now(struct mote_conv *c);

static void on_kick(struct mote_loop *loop, mote_timer_id t, void *arg);

static void kick(struct mote_session *s)
{
    if (s->kick == 0 && mote_timer_start(s->loop, 0, on_kick, s, 0, &s->kick) < 0)
        s->kick = 0; /* no timer free: the next event runs it (see on_kick's callers) */
}

/* The waiter that asked first for a slot of either pool. */
static struct mote_conv *first_waiter(struct mote_session *s, bool stream)
{
    struct mote_conv *best = NULL;
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];

        if (!c->used || !(stream ? c->want_send : c->want_run))
            continue;
        if (best == NULL || mote_before(c->queue_seq, best->queue_seq))
            best = c;
    }
    return best;
}

static void run_deferred(struct mote_session *s)
{
    unsigned i;
    struct mote_conv *w;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];

        if (!c->used)
            continue;
        if (c->err_pending) {
            c->err_pending = false;
            tell_state(c);
            tell_error(c, c->err_code, c->err_fatal);
        }
        if (c->current_failed) {
            c->current_failed = false;
            tell(c, MOTE_EV_WARNING,
                 "cannot record the most recent conversation (STATE/current): --continue may "
                 "pick an older one",
                 0);
        }
        if (c->rec_pending) {
            c->rec_pending = false;
            recover_now(c);
        }
        if (c->want_cancel) {
            c->want_cancel = false;
            if (c->st == MOTE_CONV_AWAITING_APPROVAL || c->want_send || c->want_run ||
                (c->st == MOTE_CONV_TOOL_EXECUTING && c->tool_job == 0)) {
                c->want_send = false;
                c->want_run = false;
                apply(c, MOTE_CEV_CANCELLED, NULL);
                if (!c->storage_failed) {
                    tell_state(c);
                    tell(c, MOTE_EV_CANCELLED, "cancelled", 0);
                }
            }
        }
        if (c->answered && c->st == MOTE_CONV_AWAITING_APPROVAL) {
            const char *name = c->calls[c->call_i].name;

            if (c->answer == MOTE_ANSWER_ALWAYS && !allowed(c, name)) {
                uint64_t before = c->jr.size;

                /* kept in the journal: a reopening allows it too */
                if (jok(c, mote_journal_allow(&c->jr, name), before) &&
                    c->nallowed < MOTE_CONV_ALLOWED_MAX)
                    mote_str_copy(c->allowed[c->nallowed++], sizeof(c->allowed[0]), name);
            }
            if (!c->storage_failed)
                (void)apply(c, MOTE_CEV_ANSWERED, NULL); /* next_tool takes the answer */
        }
        if (c->want_next) {
            c->want_next = false;
            next_tool(c);
        }
        tell_state(c);
    }
    /* Free slots go to the waiters, oldest first. */
    while ((w = first_waiter(s, true)) != NULL) {
        bool was = w->want_send;

        if (s->sd_phase != MOTE_SDP_NONE) {
            w->want_send = false;
            apply(w, MOTE_CEV_DRAIN_STOP, NULL);
            tell_state(w);
            continue;
        }
        start_request(w);
        if (w->want_send && was)
            break; /* still no slot */
    }
    while ((w = first_waiter(s, false)) != NULL) {
        if (s->sd_phase != MOTE_SDP_NONE) {
            w->want_run = false;
            apply(w, MOTE_CEV_DRAIN_STOP, NULL);
            tell_state(w);
            continue;
        }
        w->want_run = false;
        if (start_tool(w) > 0) {
            next_tool(w);
        } else if (w->want_run) {
            break;
        }
        tell_state(w);
    }
    sd_advance(s);
}

static void on_kick(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_session *s = arg;

    (void)loop, (void)t;
    s->kick = 0;
    run_deferred(s);
}

/* ---- recovery --------------------------------------------------------------- */

static void note(struct mote_conv *c, const char *a, uint64_t n, const char *b)
{
    char m[200];
    struct mote_sb sb;

    mote_sb_init(&sb, m, sizeof(m));
    mote_sb_s(&sb, a);
    if (b != NULL) {
        mote_sb_u(&sb, n);
        mote_sb_s(&sb, b);
    }
    tell(c, MOTE_EV_RECOVERY, m, (int)c->rec.action);
}

/* Kills what is left of tools that were running when mote died: only the
 * very processes that were recorded (a reused pid has another start time;
 * a tool's members carry its tag even when its leader is gone). */
static void kill_leftovers(struct mote_conv *c)
{
    const struct mote_port *p = c->s->port;
    unsigned i;

    if (MOTE_PORT_HAS(p, proc_kill_recorded)) {
        for (i = 0; i < c->rec.nkill; i++) {
            int n = p->proc_kill_recorded(p->ctx, c->rec.kill_pgid[i], c->rec.kill_start[i],
                                          c->rec.kill_tag[i]);

            if (n > 0)
                note(c, "ended ", (uint64_t)n, " leftover process(es) of an interrupted tool");
        }
        return;
    }
    if (!MOTE_PORT_HAS(p, proc_start_time) || !MOTE_PORT_HAS(p, proc_signal))
        return;
    for (i = 0; i < c->rec.nkill; i++) {
        uint64_t now_start = p->proc_start_time(p->ctx, c->rec.kill_pgid[i]);

        if (now_start != 0 && now_start == c->rec.kill_start[i] &&
            p->proc_signal(p->ctx, c->rec.kill_pgid[i], MOTE_PROC_KILL) == 0)
            note(c, "killed the leftover tool process group ", (uint64_t)c->rec.kill_pgid[i],
                 "");
    }
}

/* Sets up the round of the last answer from the recovery's view of it. */
static void restore_calls(struct mote_conv *c)
{
    unsigned i;

    c->ncalls = c->rec.ncalls;
    c->call_i = 0;
    for (i = 0; i < c->ncalls; i++) {
        const struct mote_rec_call *r = &c->rec.calls[i];
        struct mote_conv_call *k = &c->calls[i];

        memset(k, 0, sizeof(*k));
        mote_str_copy(k->id, sizeof(k->id), r->id);
        mote_str_copy(k->name, sizeof(k->name), r->name);
        k->rec_off = r->rec_off;
        k->rec_idx = r->rec_idx;
        k->started = r->started;
        k->has_result = r->has_result;
    }
}

static void recover_now(struct mote_conv *c)
{
    struct mote_recovery *r = &c->rec;

    kill_leftovers(c);
    switch (r->action) {
    case MOTE_RECOVER_TOOL_INTERRUPTED:
        apply(c, MOTE_CEV_RECOVER_CLOSE, NULL);
        if (c->storage_failed)
            break;
        mote_str_copy(c->last_error, sizeof(c->last_error), "interrupted tool");
        tell_state(c);
        note(c,
             "the last turn was interrupted while a tool ran (" MOTE_INTERRUPTED_TOOL
             "); retry to go on",
             0, NULL);
        if (r->nmissing > r->nstarted)
            note(c, "", r->nmissing - r->nstarted,
                 " tool call(s) after it had not run; they were not run");
        break;
    case MOTE_RECOVER_RESUME_TOOLS:
        note(c, "", r->nmissing,
             " tool call(s) of the interrupted turn had not run yet: the turn goes on with them");
        c->turns = 0;
        memset(&c->turn_usage, 0, sizeof(c->turn_usage));
        mote_cancel_init(&c->turn, &c->s->cancel);
        apply(c, MOTE_CEV_RECOVER_TOOLS, NULL);
        tell_state(c);
        break;
    case MOTE_RECOVER_CONTINUE:
        note(c, "continuing the interrupted turn", 0, NULL);
        c->turns = 0;
        memset(&c->turn_usage, 0, sizeof(c->turn_usage));
        mote_cancel_init(&c->turn, &c->s->cancel);
        apply(c, MOTE_CEV_RECOVER_CONTINUE, NULL);
        tell_state(c);
        break;
    case MOTE_RECOVER_LIMIT:
        apply(c, MOTE_CEV_RECOVER_CLOSE, NULL);
        if (c->storage_failed)
            break;
        tell_state(c);
        note(c, "the last turn was interrupted again; not continuing by itself (", r->autos,
             " automatic continues in a row): retry to go on");
        break;
    case MOTE_RECOVER_IDLE:
        apply(c, r->last_error[0] != '\0' && !r->cancelled ? MOTE_CEV_RECOVER_ERROR
                                                           : MOTE_CEV_RECOVER_IDLE,
              NULL);
        tell_state(c);
        break;
    }
}

/* ---- the session ------------------------------------------------------------ */

int mote_session_init(struct mote_session *s, struct mote_loop *loop,
                      const struct mote_session_conf *conf)
{
    const struct mote_port *p = loop != NULL ? loop->port : NULL;

    if (conf == NULL || conf->on_event == NULL || p == NULL)
        return MOTE_ERR_INVAL;
    if (mote_port_missing(p, MOTE_PORT_STORAGE) != NULL)
        return MOTE_ERR_NOSYS; /* conversations live in storage */
    /* The pools' and the journal's buffers are prepared when taken (a
     * session is most of a megabyte with the default limits; what a turn
     * does not use stays out of memory). */
    memset(s, 0, offsetof(struct mote_session, jbuf));
    memset(&s->jbuf, 0, offsetof(struct mote_jbuf, line));
    memset(s->conv, 0, sizeof(s->conv));
    for (unsigned i = 0; i < MOTE_MAX_STREAMS; i++)
        s->streams[i].used = false;
    for (unsigned i = 0; i < MOTE_MAX_TOOL_RUNS; i++)
        s->runs[i].used = false;
    s->loop = loop;
    s->port = p;
    s->conf = *conf;
    if (s->conf.tool_timeout_ms == 0)
        s->conf.tool_timeout_ms = MOTE_TOOL_TIMEOUT_MS;
    mote_cancel_init(&s->cancel, &loop->root);
    return 0;
}

void mote_session_deinit(struct mote_session *s)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        if (s->conv[i].used)
            mote_journal_close(&s->conv[i].jr);
    }
    if (s->kick != 0)
        (void)mote_timer_stop(s->loop, s->kick);
    if (s->sd_timer != 0)
        (void)mote_timer_stop(s->loop, s->sd_timer);
    s->kick = s->sd_timer = 0;
}

static void mcp_log(void *arg, const char *server, const char *msg)
{
    struct mote_session *s = arg;
    struct mote_event ev;

    ev_init(&ev, MOTE_EV_MCP, NULL);
    ev.name = server;
    ev.text = msg;
    ev.len = strlen(msg);
    emit(s, &ev);
}

void mote_session_use_mcp(struct mote_session *s, struct mote_mcp *m)
{
    s->mcp = m;
    if (m != NULL) {
        m->log = mcp_log;
        m->log_arg = s;
    }
}

bool mote_conv_busy(const struct mote_conv *c)
{
    return c->used && (c->st == MOTE_CONV_LLM_REQUESTING || c->st == MOTE_CONV_STREAMING ||
                       c->st == MOTE_CONV_TOOL_EXECUTING ||
                       c->st == MOTE_CONV_AWAITING_APPROVAL || c->st == MOTE_CONV_COMPACTING ||
                       c->rec_pending);
}

bool mote_session_busy(const struct mote_session *s)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        if (mote_conv_busy(&s->conv[i]))
            return true;
    }
    return false;
}

int mote_session_add_tool(struct mote_session *s, const struct mote_tool *tool)
{
    size_t i, n;

    if (tool == NULL || tool->name == NULL || tool->step == NULL || tool->schema == NULL)
        return MOTE_ERR_INVAL;
    n = strlen(tool->name);
    if (n == 0 || n > 64)
        return MOTE_ERR_INVAL;
    for (i = 0; i < n; i++) {
        char ch = tool->name[i];

        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '_' || ch == '-'))
            return MOTE_ERR_INVAL;
    }
    if (find_tool(s, tool->name) != NULL)
        return MOTE_ERR_EXIST;
    if (s->ntools >= MOTE_MAX_TOOLS)
        return MOTE_ERR_FULL;
    s->tools[s->ntools++] = tool;
    return 0;
}

/* ---- conversations ----------------------------------------------------------- */

static struct mote_conv *conv_slot(struct mote_session *s, const struct mote_conv_conf *conf)
{
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];

        if (!c->used) {
            memset(c, 0, sizeof(*c));
            c->s = s;
            c->conf = *conf;
            c->jr.buf = &s->jbuf;
            c->jr.h = -1;
            mote_cancel_init(&c->turn, &s->cancel);
            return c;
        }
    }
    return NULL;
}

struct mote_conv *mote_conv_find(struct mote_session *s, const char *id)
{
    unsigned i;

    for (i = 0; id != NULL && i < MOTE_MAX_CONVERSATIONS; i++) {
        if (s->conv[i].used && strcmp(s->conv[i].jr.id, id) == 0)
            return &s->conv[i];
    }
    return NULL;
}

/* Records `id` as the most recent conversation. A failure is only a
 * warning: --continue then finds an older one. */
static void set_current(struct mote_conv *c)
{
    const struct mote_port *p = c->s->port;
    char line[MOTE_CONV_ID_MAX + 2];
    struct mote_src_bytes src;
    struct mote_sb sb;

    mote_sb_init(&sb, line, sizeof(line));
    mote_sb_s(&sb, c->jr.id);
    mote_sb_s(&sb, "\n");
    src.p = line;
    src.len = sb.len;
    src.off = 0;
    if (p->st_write_atomic(p->ctx, "current", mote_produce_bytes, &src) < 0) {
        c->current_failed = true; /* a warning, from the loop */
        kick(c->s);
    }
}

int mote_session_recent(struct mote_session *s, char *id, size_t cap)
{
    const struct mote_port *p = s->port;
    int h, n;
    size_t i;

    if (cap < 2)
        return MOTE_ERR_INVAL;
    h = p->st_open(p->ctx, "current", MOTE_ST_READ);
    if (h < 0)
        return h;
    n = p->st_read(p->ctx, h, 0, id, cap - 1);
    p->st_close(p->ctx, h);
    if (n < 0)
        return n;
    id[n] = '\0';
    for (i = 0; i < (size_t)n && id[i] != '\n' && id[i] != '\r'; i++) {
    }
    id[i] = '\0';
    return i == 0 ? MOTE_ERR_NOENT : 0;
}

static void make_id(struct mote_session *s, char *out)
{
    static const char hex[] = "0123456789abcdef";
    unsigned char r[8];
    unsigned i;

    memset(r, 0, sizeof(r));
    if (MOTE_PORT_HAS(s->port, random))
        (void)s->port->random(s->port->ctx, r, sizeof(r));
    for (i = 0; i < sizeof(r); i++) {
        out[2 * i] = hex[r[i] >> 4];
        out[2 * i + 1] = hex[r[i] & 15u];
    }
    out[2 * sizeof(r)] = '\0';
}

int mote_conv_create(struct mote_session *s, const struct mote_conv_conf *conf, const char *id,
                     struct mote_conv **out)
{
    struct mote_conv *c;
    char gen[24];
    int rc;

    *out = NULL;
    if (s->sd_phase != MOTE_SDP_NONE)
        return MOTE_ERR_SHUTDOWN;
    if (conf == NULL || conf->llm == NULL || conf->model == NULL)
        return MOTE_ERR_INVAL;
    if (id == NULL) {
        make_id(s, gen);
        id = gen;
    }
    if (mote_conv_find(s, id) != NULL)
        return MOTE_ERR_BUSY;
    c = conv_slot(s, conf);
    if (c == NULL)
        return MOTE_ERR_FULL;
    rc = mote_journal_create(&c->jr, s->port, id);
    if (rc < 0)
        return rc;
    c->used = true;
    c->st = c->st_told = MOTE_CONV_IDLE;
    set_current(c);
    *out = c;
    return 0;
}

int mote_conv_open(struct mote_session *s, const struct mote_conv_conf *conf, const char *id,
                   struct mote_conv **out, uint32_t *bad_line, bool *repaired)
{
    char recent[MOTE_CONV_ID_MAX + 2];
    struct mote_conv *c;
    unsigned i;
    int rc;

    *out = NULL;
    if (bad_line != NULL)
        *bad_line = 0;
    if (repaired != NULL)
        *repaired = false;
    if (s->sd_phase != MOTE_SDP_NONE)
        return MOTE_ERR_SHUTDOWN;
    if (conf == NULL || conf->llm == NULL || conf->model == NULL)
        return MOTE_ERR_INVAL;
    if (id == NULL) {
        rc = mote_session_recent(s, recent, sizeof(recent));
        if (rc < 0)
            return rc;
        id = recent;
    }
    if (mote_conv_find(s, id) != NULL)
        return MOTE_ERR_BUSY;
    c = conv_slot(s, conf);
    if (c == NULL)
        return MOTE_ERR_FULL;
    rc = mote_journal_open(&c->jr, s->port, id);
    if (rc < 0) {
        if (bad_line != NULL)
            *bad_line = c->jr.bad_line;
        s->lock_holder = c->jr.holder; /* MOTE_ERR_LOCKED: recovery never ran */
        return rc;
    }
    if (repaired != NULL)
        *repaired = c->jr.repaired;
    rc = mote_recover(&c->jr, &c->rec);
    if (rc < 0) {
        mote_journal_close(&c->jr);
        return rc;
    }
    c->used = true;
    c->st = c->st_told = MOTE_CONV_NEEDS_RECOVERY;
    c->autos = c->rec.autos;
    for (i = 0; i < c->rec.nallowed; i++)
        mote_str_copy(c->allowed[i], sizeof(c->allowed[0]), c->rec.allowed[i]);
    c->nallowed = c->rec.nallowed;
    c->total.input_tokens = c->rec.total.input;
    c->total.output_tokens = c->rec.total.output;
    c->total.cache_read_tokens = c->rec.total.cache_read;
    c->total.cache_write_tokens = c->rec.total.cache_write;
    restore_calls(c);
    if (c->rec.action == MOTE_RECOVER_IDLE) {
        /* nothing to do: settled now (no effect, no event needed) */
        bool err = c->rec.last_error[0] != '\0' && !c->rec.cancelled;

        s->in_api++;
        (void)apply(c, err ? MOTE_CEV_RECOVER_ERROR : MOTE_CEV_RECOVER_IDLE, NULL);
        s->in_api--;
        c->st_told = c->st;
        if (err)
            mote_str_copy(c->last_error, sizeof(c->last_error), c->rec.last_error);
    } else {
        c->rec_pending = true; /* applied and told from the loop */
        kick(s);
    }
    set_current(c);
    *out = c;
    return 0;
}

static void begin_turn(struct mote_conv *c)
{
    mote_cancel_init(&c->turn, &c->s->cancel);
    c->turns = 0;
    memset(&c->turn_usage, 0, sizeof(c->turn_usage));
    c->last_error[0] = '\0';
    c->answered = false;
}

int mote_conv_send(struct mote_conv *c, const char *text, size_t len)
{
    size_t i;
    int rc;

    if (c->s->sd_phase != MOTE_SDP_NONE)
        return MOTE_ERR_SHUTDOWN;
    if (c->storage_failed)
        return c->jr.err != 0 ? c->jr.err : MOTE_ERR_IO;
    if (mote_conv_busy(c) || (mote_conv_next(c->st, MOTE_CEV_USER).effects &
                              MOTE_CEFF_JOURNAL_USER) == 0)
        return MOTE_ERR_BUSY;
    for (i = 0; i < len; i++) {
        if (text[i] != ' ' && text[i] != '\t' && text[i] != '\n' && text[i] != '\r')
            break;
    }
    if (i == len)
        return MOTE_ERR_INVAL; /* nothing to say */
    begin_turn(c);
    c->s->in_api++;
    rc = apply_text(c, MOTE_CEV_USER, text, len);
    c->s->in_api--;
    kick(c->s); /* the state change is told from the loop */
    return rc;
}

int mote_conv_retry(struct mote_conv *c)
{
    int rc;

    if (c->s->sd_phase != MOTE_SDP_NONE)
        return MOTE_ERR_SHUTDOWN;
    if (c->storage_failed)
        return c->jr.err != 0 ? c->jr.err : MOTE_ERR_IO;
    if (mote_conv_busy(c))
        return MOTE_ERR_BUSY;
    begin_turn(c);
    c->s->in_api++;
    rc = apply(c, MOTE_CEV_RETRY, NULL);
    c->s->in_api--;
    kick(c->s);
    return rc;
}

int mote_conv_compact(struct mote_conv *c)
{
    if (c->s->sd_phase != MOTE_SDP_NONE)
        return MOTE_ERR_SHUTDOWN;
    if (mote_conv_busy(c))
        return MOTE_ERR_BUSY;
    if (c->jr.last_user_end == 0)
        return MOTE_ERR_ALREADY; /* nothing said yet */
    begin_turn(c);
    c->s->in_api++;
    compact(c, false);
    c->s->in_api--;
    kick(c->s);
    return c->storage_failed ? MOTE_ERR_IO : 0;
}

int mote_conv_cancel(struct mote_conv *c)
{
    if (!mote_conv_busy(c))
        return MOTE_ERR_ALREADY;
    mote_cancel_set(&c->turn);
    if (c->llm_job != 0)
        (void)mote_job_cancel(c->s->loop, c->llm_job);
    else if (c->tool_job != 0)
        (void)mote_job_cancel(c->s->loop, c->tool_job);
    else {
        c->want_cancel = true; /* nothing runs: the kick ends the turn */
        kick(c->s);
    }
    return 0;
}

int mote_conv_approve(struct mote_conv *c, uint32_t ask_id, enum mote_answer a,
                      const char *reason)
{
    if (c->st != MOTE_CONV_AWAITING_APPROVAL || ask_id == 0 || ask_id != c->ask_id ||
        c->answered)
        return MOTE_ERR_STALE;
    c->answered = true;
    c->answer = a;
    mote_str_copy(c->refusal, sizeof(c->refusal), reason != NULL ? reason : "");
    kick(c->s);
    return 0;
}

enum mote_conv_state mote_conv_state(const struct mote_conv *c)
{
    return c->st;
}

const char *mote_conv_id(const struct mote_conv *c)
{
    return c->jr.id;
}

int mote_conv_close(struct mote_conv *c)
{
    if (mote_conv_busy(c) || c->llm_job != 0 || c->tool_job != 0)
        return MOTE_ERR_BUSY;
    mote_journal_close(&c->jr);
    c->used = false;
    return 0;
}

/* ---- shutdown ----------------------------------------------------------------- */

static void on_sd_timer(struct mote_loop *loop, mote_timer_id t, void *arg)
{
    struct mote_session *s = arg;

    (void)loop, (void)t;
    s->sd_timer = 0;
    sd_advance(s);
}

static void sd_arm(struct mote_session *s, uint32_t at)
{
    int32_t left = (int32_t)(at - mote_loop_now(s->loop));

    if (s->sd_timer != 0)
        (void)mote_timer_stop(s->loop, s->sd_timer);
    s->sd_timer = 0;
    if (mote_timer_start(s->loop, left > 0 ? (uint32_t)left : 0u, on_sd_timer, s, 0,
                         &s->sd_timer) < 0)
        s->sd_timer = 0;
}

/* The session's jobs still active (a conversation's request or tool). */
static unsigned jobs_active(struct mote_session *s, char *names, size_t cap)
{
    unsigned i, n = 0;
    bool name_them = names != NULL;
    struct mote_sb sb;

    if (name_them)
        mote_sb_init(&sb, names, cap);
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];
        mote_job_id ids[2] = {c->llm_job, c->tool_job};
        unsigned k;

        if (!c->used)
            continue;
        for (k = 0; k < 2; k++) {
            int st = ids[k] != 0 ? mote_job_state(s->loop, ids[k]) : MOTE_ERR_STALE;

            if (st == MOTE_JOB_RUNNING || st == MOTE_JOB_CANCELLING) {
                n++;
                if (name_them) {
                    if (sb.len > 0)
                        mote_sb_s(&sb, ", ");
                    mote_sb_s(&sb, k == 0 || c->call_i >= c->ncalls ? "model request"
                                                                     : c->calls[c->call_i].name);
                    mote_sb_s(&sb, " (");
                    mote_sb_s(&sb, mote_conv_id(c));
                    mote_sb_s(&sb, ")");
                }
            }
        }
    }
    return n;
}

static void sd_cut(struct mote_session *s)
{
    unsigned i;

    s->report.timed_out = !s->sd.force || s->report.timed_out;
    (void)jobs_active(s, s->report.cut, sizeof(s->report.cut));
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];

        if (!c->used || !mote_conv_busy(c))
            continue;
        c->want_send = c->want_run = false;
        c->rec_pending = false;
        apply(c, MOTE_CEV_SHUTDOWN_CUT, NULL);
        mote_cancel_set(&c->turn);
        if (c->llm_job != 0 && mote_job_cancel(s->loop, c->llm_job) == 0)
            s->report.jobs_cancelled++;
        if (c->tool_job != 0 && mote_job_cancel(s->loop, c->tool_job) == 0)
            s->report.jobs_cancelled++;
        tell_state(c);
    }
}

static void sd_finish(struct mote_session *s)
{
    struct mote_event ev;
    unsigned i;

    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        if (s->conv[i].used)
            mote_journal_close(&s->conv[i].jr);
    }
    if (s->sd_timer != 0)
        (void)mote_timer_stop(s->loop, s->sd_timer);
    s->sd_timer = 0;
    s->sd_phase = MOTE_SDP_DONE;
    s->report.reason = s->sd.reason;
    s->report.mode = s->sd.mode;
    s->report.forced = s->sd.force;
    ev_init(&ev, MOTE_EV_SHUTDOWN, NULL);
    ev.report = &s->report;
    ev.text = s->sd.reason != NULL ? s->sd.reason : "";
    ev.len = strlen(ev.text);
    emit(s, &ev);
}

static void sd_advance(struct mote_session *s)
{
    uint32_t now = mote_loop_now(s->loop);

    switch (s->sd_phase) {
    case MOTE_SDP_WAIT:
        if (!s->sd.force && mote_session_busy(s) && mote_before(now, s->sd_deadline))
            return; /* the timer comes back at the deadline */
        if (mote_session_busy(s))
            sd_cut(s);
        s->sd_phase = MOTE_SDP_CUT;
        /* A moment for the cut jobs to stop (their sockets closed, their
         * process groups killed): they see the flag on their next step. */
        s->sd_cut_until = now + (s->sd.force ? 0u : MOTE_SHUTDOWN_GRACE_MS);
        sd_arm(s, s->sd_cut_until);
        /* fall through */
    case MOTE_SDP_CUT:
        if (jobs_active(s, NULL, 0) > 0 && !s->sd.force && mote_before(now, s->sd_cut_until))
            return;
        s->report.jobs_left = jobs_active(s, s->report.left, sizeof(s->report.left));
        s->report.history_err = s->history_used ? mote_history_save(s) : 0;
        s->sd_phase = MOTE_SDP_MCP;
        if (s->mcp != NULL) {
            uint32_t budget = s->sd.force ? 0u
                              : s->sd.timeout_ms < MOTE_MCP_DISCONNECT_MS ? s->sd.timeout_ms
                                                                         : MOTE_MCP_DISCONNECT_MS;

            mote_mcp_disconnect_begin(s->mcp, budget);
        }
        /* fall through */
    case MOTE_SDP_MCP:
        if (s->mcp != NULL) {
            int left = mote_mcp_disconnect_poll(s->mcp, s->sd.force);

            if (left > 0) {
                sd_arm(s, now + 5u); /* processes have no wake-up of their own here */
                return;
            }
            s->report.mcp_left = left < 0 ? (unsigned)-left : 0u;
        }
        sd_finish(s);
        return;
    default:
        return;
    }
}

int mote_shutdown_begin(struct mote_session *s, const struct mote_shutdown_req *req)
{
    unsigned i;

    if (s->sd_phase == MOTE_SDP_DONE)
        return MOTE_ERR_ALREADY;
    if (req == NULL)
        return MOTE_ERR_INVAL;
    if (s->sd_phase != MOTE_SDP_NONE) {
        /* A later request: force, or a drain turned into a cancel. */
        if (req->force && !s->sd.force) {
            s->sd.force = true;
            if (s->mcp != NULL && s->sd_phase == MOTE_SDP_MCP)
                (void)mote_mcp_disconnect_poll(s->mcp, true);
        }
        if (req->mode == MOTE_SD_CANCEL && s->sd.mode == MOTE_SD_DRAIN) {
            s->sd.mode = MOTE_SD_CANCEL;
            for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
                if (mote_conv_busy(&s->conv[i]) && mote_conv_cancel(&s->conv[i]) == 0)
                    s->report.jobs_cancelled++;
            }
        }
        kick(s);
        return 0;
    }
    s->sd = *req;
    memset(&s->report, 0, sizeof(s->report));
    s->sd_phase = MOTE_SDP_WAIT;
    s->sd_deadline = mote_loop_now(s->loop) + req->timeout_ms;
    mote_loop_stop_spawns(s->loop); /* the continuation chain ends here */
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &s->conv[i];

        if (!c->used)
            continue;
        c->rec_pending = false; /* a recovery not begun waits for the next start */
        if (!mote_conv_busy(c))
            continue;
        if (req->mode == MOTE_SD_CANCEL) {
            if (mote_conv_cancel(c) == 0)
                s->report.jobs_cancelled++;
        } else if (c->st == MOTE_CONV_AWAITING_APPROVAL || c->want_send || c->want_run) {
            /* waiting for someone: it goes on after a restart */
            c->want_send = c->want_run = false;
            s->in_api++;
            (void)apply(c, MOTE_CEV_DRAIN_STOP, NULL);
            s->in_api--;
        }
    }
    sd_arm(s, s->sd_deadline);
    kick(s);
    return 0;
}

int mote_shutdown(struct mote_session *s, const struct mote_shutdown_req *req,
                  struct mote_shutdown_report *out)
{
    int rc;

    if (s->loop->polling)
        return MOTE_ERR_BUSY;
    rc = mote_shutdown_begin(s, req);
    if (rc < 0 && rc != MOTE_ERR_ALREADY)
        return rc;
    while (s->sd_phase != MOTE_SDP_DONE) {
        rc = mote_loop_poll(s->loop, -1);
        if (rc < 0)
            return rc;
    }
    if (out != NULL)
        *out = s->report;
    return 0;
}

bool mote_shutdown_done(const struct mote_session *s)
{
    return s->sd_phase == MOTE_SDP_DONE;
}

bool mote_shutting_down(const struct mote_session *s)
{
    return s->sd_phase != MOTE_SDP_NONE;
}
