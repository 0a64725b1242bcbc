/*
 * agent_answer.c - assembling a model's answer as it streams: text held
 * in the stream slot (a long answer goes to the journal in text records),
 * tool calls and their inputs gathered in its arena (spilled as call
 * records when it fills), each input checked and re-encoded once, and the
 * assistant record that ends the answer.
 */
#include <string.h>

#include "agent_int.h"

/* Writes the reasoning held (one piece of one block) as reason records,
 * each cut to fit one record. */
static int spill_reason(struct mote_conv *c)
{
    struct mote_stream *st = c->stream;
    size_t off = 0;

    while (off < st->rs_len) {
        struct mote_reason_rec r = {st->rs_fmt, st->rs_block, st->rs_kind, st->rs + off,
                                    st->rs_len - off};
        uint64_t before = c->jr.size;
        int rc;

        for (;;) {
            rc = mote_journal_reason(&c->jr, &r);
            if (rc != MOTE_ERR_TOO_LARGE || c->jr.err != 0 || r.len < 8)
                break;
            r.len /= 2;
            while (r.len > 0 && ((unsigned char)r.data[r.len] & 0xC0u) == 0x80u)
                r.len--;
        }
        if (!mote_conv_journaled(c, rc, before))
            return rc < 0 ? rc : MOTE_ERR_IO;
        off += r.len;
        st->spilled = true;
    }
    st->rs_len = 0;
    return 0;
}

/* A piece of reasoning (`kind` of the block ev->slot of format ev->id):
 * held, and written when the piece changes or the buffer fills, at a
 * character boundary (signatures and encrypted data are written exactly
 * as they came, in pieces that join back). */
static int add_reason(struct mote_conv *c, const struct mote_llm_event *ev, uint8_t kind)
{
    struct mote_stream *st = c->stream;
    const char *p = ev->text;
    size_t n = ev->len;
    int rc;

    if (ev->id == NULL || ev->id[0] == '\0')
        return 0;
    if (st->rs_fmt != NULL &&
        (strcmp(st->rs_fmt, ev->id) != 0 || st->rs_block != ev->slot || st->rs_kind != kind) &&
        (rc = spill_reason(c)) < 0)
        return rc;
    st->rs_fmt = ev->id; /* (the decoder's static string) */
    st->rs_block = ev->slot;
    st->rs_kind = kind;
    while (n > 0) {
        size_t room = sizeof(st->rs) - st->rs_len, take = n < room ? n : room;

        if (take == 0) {
            size_t cut = st->rs_len, left;

            while (cut > 0 && ((unsigned char)st->rs[cut - 1] & 0xC0u) == 0x80u)
                cut--;
            if (cut > 0 && ((unsigned char)st->rs[cut - 1] & 0x80u) != 0)
                cut--; /* the lead byte of a split character */
            if (cut == 0)
                cut = st->rs_len;
            left = st->rs_len - cut;
            st->rs_len = cut;
            if ((rc = spill_reason(c)) < 0)
                return rc;
            memmove(st->rs, st->rs + cut, left);
            st->rs_len = left;
            continue;
        }
        memcpy(st->rs + st->rs_len, p, take);
        st->rs_len += take;
        p += take;
        n -= take;
    }
    return 0;
}

/* Writes held text as text records, each cut to fit one record (the
 * reasoning held goes first: it came first). */
static int spill_text(struct mote_conv *c)
{
    struct mote_stream *st = c->stream;
    size_t off = 0;

    if (st->rs_len > 0) {
        int rc = spill_reason(c);

        if (rc < 0)
            return rc;
    }

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
        if (!mote_conv_journaled(c, rc, before))
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

    MOTE_ASSERT(i < c->ncalls);
    r->id = c->calls[i].id;
    r->name = c->calls[i].name;
    r->refused = NULL;
    if (c->calls[i].bad_input || st->too_large[i]) {
        /* unusable input: the call is refused, and says so in its record,
         * so that a restart refuses it too (never runs it with {}) */
        r->input = "{}";
        r->input_len = 2;
        r->refused = c->calls[i].why[0] != '\0' ? c->calls[i].why
                     : c->calls[i].cut_off      ? MOTE_REFUSED_CUT_OFF
                     : c->calls[i].too_big || st->too_large[i] ? MOTE_REFUSED_TOO_BIG
                                                                : MOTE_REFUSED_INVALID;
    } else {
        r->input = st->arena + st->in_off[i];
        r->input_len = st->in_len[i];
    }
    r->extra = st->ex_len[i] > 0 ? st->arena + st->in_off[i] - st->ex_len[i] : NULL;
    r->extra_len = st->ex_len[i];
}

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

/* Checks a tool input once, before anything keeps it: one strict JSON
 * object (RFC 8259: no raw control characters, UTF-8) that fits the
 * reader's token limit in its record, with no member named twice and no
 * NUL (\u0000) in any string: JSON readers differ on which of two members
 * counts, and a string becomes a C string (a command, a path) that ends
 * at its NUL, so either would let what runs differ from what was shown
 * and approved. A good input is re-encoded in place as mote's writer
 * emits it, never kept as it came: what the journal, the next request and
 * stream-json get is JSON that mote wrote. Returns its JSON tokens with
 * *len its new length (0 tokens, *len 0: no arguments at all, the empty
 * object), or MOTE_ERR_TOO_LARGE (more than a record's reader takes) or
 * MOTE_ERR_BADMSG (not one object of UTF-8; or ambiguous, and then `why`,
 * `cap` bytes, names the member: "" otherwise). */
static int clean_input(struct mote_conv *c, char *in, size_t *len, char *why, size_t cap)
{
    struct mote_json *js = &c->s->jbuf.json;
    size_t n = *len, k = 0;
    struct inplace o = {in, 0, n};
    struct mote_jw w;
    int rc;

    if (cap > 0)
        why[0] = '\0';
    c->s->jbuf.owner = NULL;
    while (k < n && (in[k] == ' ' || in[k] == '\n' || in[k] == '\r' || in[k] == '\t'))
        k++;
    if (k == n) {
        *len = 0;
        return 0;
    }
    rc = mote_json_parse(js, in, n);
    if (rc > MOTE_JSON_MAX_TOKENS - MOTE_CALL_REC_TOKENS)
        return MOTE_ERR_TOO_LARGE; /* its record would be more than the reader takes */
    if (rc > 0 && !mote_utf8_valid(in, n))
        return MOTE_ERR_BADMSG; /* kept as it is, it must be JSON to any parser */
    if (rc <= 0 || mote_json_type_of(js, 0) != MOTE_JSON_OBJECT)
        return rc < 0 ? rc : MOTE_ERR_BADMSG;
    if (mote_json_strict(js, 0, MOTE_JSON_NO_DUP_KEYS | MOTE_JSON_NO_NUL, why, cap) < 0)
        return MOTE_ERR_BADMSG;
    mote_jw_init(&w, inplace_sink, &o);
    mote_jw_value(&w, js, 0);
    if (w.err != 0)
        return MOTE_ERR_BADMSG;
    *len = o.len;
    return rc;
}

/* Checks call i's input (clean_input), once. Anything but a good input is
 * marked bad and kept as {}: the call is refused with a clear result when
 * its turn comes. A checked call has in_tok > 0. */
static void check_call(struct mote_conv *c, unsigned i)
{
    struct mote_stream *st = c->stream;
    size_t n = st->in_len[i];
    int rc;

    MOTE_ASSERT(i < c->ncalls);
    if (st->in_tok[i] != 0)
        return;
    st->in_tok[i] = 1;
    rc = st->too_large[i] ? MOTE_ERR_TOO_LARGE
                          : clean_input(c, st->arena + st->in_off[i], &n, c->calls[i].why,
                                        sizeof(c->calls[i].why));
    if (rc < 0) {
        c->calls[i].bad_input = true;
        c->calls[i].too_big = rc == MOTE_ERR_TOO_LARGE;
        /* the token limit ended the answer inside its input */
        c->calls[i].cut_off = strcmp(c->stop, "max_tokens") == 0 && i + 1 == c->ncalls;
        return;
    }
    if (st->in_off[i] + st->in_len[i] == st->arena_len)
        st->arena_len = st->in_off[i] + n;
    st->in_len[i] = (uint32_t)n;
    if (rc > 0)
        st->in_tok[i] = (uint16_t)rc;
}

static void check_calls(struct mote_conv *c)
{
    unsigned i;

    for (i = c->stream->arena_first; i < c->ncalls; i++)
        check_call(c, i);
}

/* Writes the calls [arena_first, upto) as call records and drops their
 * inputs from the arena. Text held so far goes first, keeping the order. */
static int spill_calls(struct mote_conv *c, unsigned upto)
{
    struct mote_stream *st = c->stream;
    size_t keep_from;
    unsigned i;
    int rc;

    MOTE_ASSERT(upto <= c->ncalls);
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
        if (!mote_conv_journaled(c, rc, before))
            return rc < 0 ? rc : MOTE_ERR_IO;
        c->calls[i].rec_off = before;
        c->calls[i].rec_idx = -1;
        st->spilled = true;
    }
    keep_from = upto < c->ncalls ? st->in_off[upto] - st->ex_len[upto] : st->arena_len;
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

/* A fragment of call `slot`'s input. The inputs of the calls in the
 * arena lie one after another in the order of the calls, so a fragment
 * for a call that is not the last (OpenAI interleaves the fragments of
 * parallel calls, keyed by index) goes in after its input, moving the
 * inputs after it up: a copy of at most the arena per fragment. A
 * fragment for a call already journaled (spilled when the arena filled)
 * cannot join it: the call is refused when its turn comes. */
static int add_args(struct mote_conv *c, unsigned slot, const char *p, size_t n)
{
    struct mote_stream *st = c->stream;
    size_t end;
    unsigned i;

    MOTE_ASSERT(slot < c->ncalls);
    if (slot < st->arena_first) {
        c->calls[slot].bad_input = true;
        c->calls[slot].too_big = true;
        return 0;
    }
    if (st->too_large[slot])
        return 0;
    if (st->arena_len + n > sizeof(st->arena) && slot > st->arena_first) {
        int rc = spill_calls(c, slot); /* room for this one */

        if (rc < 0)
            return rc;
    }
    if (st->arena_len + n > sizeof(st->arena)) {
        st->too_large[slot] = true;
        return 0;
    }
    end = st->in_off[slot] + st->in_len[slot];
    memmove(st->arena + end + n, st->arena + end, st->arena_len - end);
    memcpy(st->arena + end, p, n);
    st->arena_len += n;
    st->in_len[slot] += (uint32_t)n;
    for (i = slot + 1; i < c->ncalls; i++)
        st->in_off[i] += (uint32_t)n;
    return 0;
}

_Static_assert(MOTE_JOURNAL_LINE_MAX > MOTE_LLM_ID_MAX + MOTE_LLM_NAME_MAX,
               "the arena holds a call's id and name (MOTE_JOURNAL_LINE_MAX)");

/* The call past the table that streamed last ends: journaled as a call
 * record (its input checked as any; one that is not good, or too large,
 * is kept as {}), and the arena is free again. */
static int over_end(struct mote_conv *c)
{
    struct mote_stream *st = c->stream;
    struct mote_call_rec r;
    uint64_t before = c->jr.size;
    size_t n = st->arena_len - st->over_in;
    int rc;

    if (!st->over_open)
        return 0;
    st->over_open = false;
    r.id = st->arena;
    r.name = st->arena + strlen(st->arena) + 1;
    r.input = st->arena + st->over_in;
    r.refused = NULL; /* past the table: answered unrun whatever its input */
    r.extra = NULL;
    r.extra_len = 0;
    if (st->over_big || clean_input(c, st->arena + st->over_in, &n, NULL, 0) < 0) {
        r.input = "{}"; /* never run: what it asked matters less than that it is answered */
        n = 2;
    }
    r.input_len = n;
    rc = mote_journal_call(&c->jr, &r);
    if ((rc == MOTE_ERR_TOO_LARGE || rc == MOTE_ERR_BADMSG) && c->jr.err == 0) {
        r.input = "{}";
        r.input_len = 2;
        rc = mote_journal_call(&c->jr, &r);
    }
    if (!mote_conv_journaled(c, rc, before))
        return rc < 0 ? rc : MOTE_ERR_IO;
    if (st->nover++ == 0)
        st->over_off = before;
    st->spilled = true;
    st->arena_len = 0;
    return 0;
}

/* A call past the table starts. The decoder gives one only when every
 * slot of the table is taken: the table's calls are journaled now (a
 * fragment for one of them after this is refused), the arena is this
 * call's. */
static int over_start(struct mote_conv *c, const struct mote_llm_event *ev)
{
    struct mote_stream *st = c->stream;
    size_t idn = strlen(ev->id) + 1, nn = strlen(ev->name) + 1;
    int rc;

    if ((rc = over_end(c)) < 0 || (rc = spill_calls(c, c->ncalls)) < 0)
        return rc;
    MOTE_ASSERT(st->arena_len == 0 && idn <= MOTE_LLM_ID_MAX && nn <= MOTE_LLM_NAME_MAX);
    memcpy(st->arena, ev->id, idn);
    memcpy(st->arena + idn, ev->name, nn);
    st->over_in = (uint32_t)(idn + nn);
    st->arena_len = st->over_in;
    st->over_big = false;
    st->over_open = true;
    return 0;
}

static void over_args(struct mote_stream *st, const char *p, size_t n)
{
    if (!st->over_open || st->over_big)
        return;
    if (n > sizeof(st->arena) - st->arena_len) {
        st->over_big = true;
        return;
    }
    memcpy(st->arena + st->arena_len, p, n);
    st->arena_len += n;
}

/* Call `slot`'s provider extras (a JSON object, right after its start):
 * checked and re-encoded as any input, kept in the arena before its
 * input. Extras that are not one strict object, or do not fit, are left
 * out (the call itself stands). */
static void add_extra(struct mote_conv *c, unsigned slot, const char *p, size_t n)
{
    struct mote_stream *st = c->stream;
    size_t len = n;
    int tok;

    if (slot < st->arena_first || st->in_len[slot] != 0 || st->ex_len[slot] != 0 ||
        st->in_off[slot] != st->arena_len || n > sizeof(st->arena) - st->arena_len ||
        n > 0xFFFFu)
        return;
    memcpy(st->arena + st->arena_len, p, n);
    tok = clean_input(c, st->arena + st->arena_len, &len, NULL, 0);
    if (tok <= 0 || len == 0)
        return;
    st->ex_len[slot] = (uint16_t)len;
    st->ex_tok[slot] = (uint8_t)(tok < 255 ? tok : 255);
    st->arena_len += len;
    st->in_off[slot] += (uint32_t)len;
}

static void first_byte(struct mote_conv *c)
{
    if (!c->got_first) {
        c->got_first = true;
        mote_conv_move(c, MOTE_CEV_FIRST_BYTE);
        mote_emit_state(c);
    }
}

/* The summary of a summarising request: held (never spilled: it is not
 * an answer), not shown. */
static void add_summary(struct mote_conv *c, const struct mote_llm_event *ev)
{
    struct mote_stream *st = c->stream;

    if (ev->type == MOTE_LLM_TEXT) {
        size_t room = sizeof(st->text) - st->text_len, k = ev->len < room ? ev->len : room;

        while (k < ev->len && k > 0 && ((unsigned char)ev->text[k] & 0xC0u) == 0x80u)
            k--;
        memcpy(st->text + st->text_len, ev->text, k);
        st->text_len += k;
    } else if (ev->type == MOTE_LLM_STOP) {
        mote_str_copy(c->stop, sizeof(c->stop), ev->text);
    }
}

int mote_answer_event(void *arg, const struct mote_llm_event *ev)
{
    struct mote_conv *c = arg;
    struct mote_stream *st = c->stream;
    struct mote_event out;
    int rc;

    if (st == NULL || c->storage_failed)
        return MOTE_ERR_CANCELED;
    if (c->compacting) {
        add_summary(c, ev);
        return 0;
    }
    switch (ev->type) {
    case MOTE_LLM_TEXT:
        first_byte(c);
        if ((rc = add_text(c, ev->text, ev->len)) < 0)
            return rc;
        mote_emit_init(&out, MOTE_EV_TEXT, c);
        out.text = ev->text;
        out.len = ev->len;
        mote_emit(c->s, &out);
        break;
    case MOTE_LLM_THINKING:
        first_byte(c);
        if ((rc = add_reason(c, ev, MOTE_REASON_TEXT)) < 0)
            return rc;
        mote_emit_init(&out, MOTE_EV_THINKING, c);
        out.text = ev->text;
        out.len = ev->len;
        mote_emit(c->s, &out);
        break;
    case MOTE_LLM_THINKING_SIG:
    case MOTE_LLM_THINKING_ID:
        first_byte(c);
        return add_reason(c, ev, ev->type == MOTE_LLM_THINKING_SIG ? MOTE_REASON_SIG
                                                                    : MOTE_REASON_ID);
    case MOTE_LLM_TOOL_EXTRA:
        if (ev->slot < c->ncalls)
            add_extra(c, ev->slot, ev->text, ev->len);
        break;
    case MOTE_LLM_TOOL_START:
        first_byte(c);
        if (ev->slot == MOTE_LLM_SLOT_OVER)
            return over_start(c, ev);
        if (ev->slot >= MOTE_LLM_MAX_TOOL_CALLS || st->nover > 0 || st->over_open)
            return MOTE_ERR_FULL; /* (never: the decoder fills the table first) */
        memset(&c->calls[ev->slot], 0, sizeof(c->calls[0]));
        mote_str_copy(c->calls[ev->slot].id, sizeof(c->calls[0].id), ev->id);
        mote_str_copy(c->calls[ev->slot].name, sizeof(c->calls[0].name), ev->name);
        st->in_off[ev->slot] = (uint32_t)st->arena_len;
        st->in_len[ev->slot] = 0;
        st->in_tok[ev->slot] = 0; /* not checked yet */
        st->ex_len[ev->slot] = 0;
        st->ex_tok[ev->slot] = 0;
        st->too_large[ev->slot] = false;
        if (ev->slot + 1 > c->ncalls)
            c->ncalls = ev->slot + 1;
        break;
    case MOTE_LLM_TOOL_ARGS:
        if (ev->slot == MOTE_LLM_SLOT_OVER)
            over_args(st, ev->text, ev->len);
        else if (ev->slot < c->ncalls && (rc = add_args(c, ev->slot, ev->text, ev->len)) < 0)
            return rc;
        break;
    case MOTE_LLM_TOOL_END:
        if (ev->slot == MOTE_LLM_SLOT_OVER && (rc = over_end(c)) < 0)
            return rc;
        break;
    case MOTE_LLM_STOP:
        first_byte(c);
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

/* The JSON tokens of an assistant record holding these calls (besides
 * its text): the reader must be able to parse every record it is given. */
static int answer_tokens(const struct mote_conv *c, unsigned first, unsigned n)
{
    int t = MOTE_CALL_REC_TOKENS;
    unsigned i;

    for (i = 0; i < n; i++)
        t += 8 + (c->calls[first + i].bad_input ? 1 : c->stream->in_tok[first + i]) +
             c->stream->ex_tok[first + i];
    return t;
}

int mote_answer_commit(struct mote_conv *c, bool interrupted)
{
    struct mote_stream *st = c->stream;
    struct mote_call_rec recs[MOTE_LLM_MAX_TOOL_CALLS];
    struct mote_rec_usage u = {c->usage.input_tokens, c->usage.output_tokens,
                               c->usage.cache_read_tokens, c->usage.cache_write_tokens};
    unsigned first, n, i;
    uint64_t before;
    int rc;

    MOTE_ASSERT(st != NULL && st->conv == c);
    if (st->rs_len > 0 && (rc = spill_reason(c)) < 0)
        return rc; /* the reasoning before the rest of its answer */
    if (!interrupted) {
        if ((rc = over_end(c)) < 0)
            return rc;
        check_calls(c);
    }
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
    rc = mote_journal_answer(&c->jr, st->text, st->text_len, c->stop, interrupted, recs, n,
                             interrupted ? NULL : &u);
    if (!mote_conv_journaled(c, rc, before))
        return rc < 0 ? rc : MOTE_ERR_IO;
    for (i = 0; i < n; i++) {
        c->calls[first + i].rec_off = before;
        c->calls[first + i].rec_idx = (int16_t)i;
    }
    st->text_len = 0;
    if (!interrupted && st->nover > 0) {
        /* The calls past the table are answered before any call runs. */
        struct mote_over o = {st->over_off, -1, 0, st->nover};

        st->nover = 0;
        if (!mote_conv_answer_over(c, &o))
            return MOTE_ERR_IO;
    }
    return 0;
}
