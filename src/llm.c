/*
 * llm.c - provider dialects: stream decoding, error classification, the
 * request path (the request body is llm_body.c's).
 */
#include "mote/mote_llm.h"

#include <string.h>

#include "util.h"

/* True if the base URL's path ends in a version of the API ("/v1",
 * "/v4", "/v1beta") or in "/openai" (Gemini's OpenAI-compatible root,
 * ".../v1beta/openai"): the request path goes on from there. */
static bool versioned(const char *path)
{
    const char *last = strrchr(path, '/');
    size_t i = 2;

    if (last == NULL)
        return false;
    if (strcmp(last, "/openai") == 0)
        return true;
    if (last[1] != 'v' || last[2] < '0' || last[2] > '9')
        return false;
    while (last[i] >= '0' && last[i] <= '9')
        i++;
    return last[i] == '\0' || strcmp(last + i, "beta") == 0 || strcmp(last + i, "alpha") == 0;
}

const char *mote_llm_path(enum mote_provider provider, const char *base_path)
{
    bool has_v1 = versioned(base_path);

    if (provider == MOTE_PROVIDER_ANTHROPIC)
        return has_v1 ? "/messages" : "/v1/messages";
    if (provider == MOTE_PROVIDER_OPENAI_RESPONSES)
        return has_v1 ? "/responses" : "/v1/responses";
    return has_v1 ? "/chat/completions" : "/v1/chat/completions";
}

/* ---- decoding ---------------------------------------------------------- */

/* Anthropic block kinds (mote_llm_dec.block_kind). */
enum { BK_TEXT = 1, BK_TOOL = 2, BK_THINKING = 3, BK_TOOL_WHOLE = 4 };

void mote_llm_dec_init(struct mote_llm_dec *d, enum mote_provider provider, mote_llm_fn fn,
                       void *arg)
{
    unsigned i;

    d->provider = provider;
    d->ids = provider == MOTE_PROVIDER_ANTHROPIC ? MOTE_LLM_IDS_WORD : MOTE_LLM_IDS_PRINTABLE;
    d->fn = fn;
    d->arg = arg;
    d->err = 0;
    d->done = d->content = d->stopped = d->refused = false;
    d->ncalls = d->over = d->oa_unindexed = 0;
    d->oa_last = MOTE_LLM_SLOT_OVER + 1;
    d->oa_over_open = false;
    d->id_seed = 0;
    d->rs_n = 0;
    d->rs_fmt = "";
    d->id_hash = 14695981039346656037u;
    d->wire_id = 0;
    memset(d->id_seen, 0, sizeof(d->id_seen));
    memset(d->block_kind, 0, sizeof(d->block_kind));
    memset(d->block_slot, 0, sizeof(d->block_slot));
    for (i = 0; i < MOTE_LLM_MAX_TOOL_CALLS; i++) {
        d->oa_index[i] = -1;
        d->oa_wire[i] = d->oa_name[i] = 0;
        d->oa_json[i] = 0;
    }
    d->oa_over_idx = -1;
    d->in_tokens = d->out_tokens = d->cache_read = d->cache_write = 0;
    d->stop_reason[0] = '\0';
}

static int emit(struct mote_llm_dec *d, struct mote_llm_event *ev)
{
    int rc = d->fn(d->arg, ev);

    return rc < 0 ? rc : 0;
}

static int emit_str(struct mote_llm_dec *d, int t, enum mote_llm_ev type, unsigned slot);

static int emit_simple(struct mote_llm_dec *d, enum mote_llm_ev type, unsigned slot,
                       const char *text, size_t len)
{
    struct mote_llm_event ev;

    memset(&ev, 0, sizeof(ev));
    ev.type = type;
    ev.slot = slot;
    ev.text = text;
    ev.len = len;
    ev.in_tokens = d->in_tokens;
    ev.out_tokens = d->out_tokens;
    ev.cache_read = d->cache_read;
    ev.cache_write = d->cache_write;
    if (type == MOTE_LLM_THINKING || type == MOTE_LLM_THINKING_SIG ||
        type == MOTE_LLM_THINKING_ID)
        ev.id = d->rs_fmt; /* the reasoning's format; slot: its block */
    return emit(d, &ev);
}

/* Emits string token t as a piece of reasoning block `block` of format
 * `fmt` (mote_llm_ev's THINKING, THINKING_SIG, THINKING_ID). */
static int emit_reason(struct mote_llm_dec *d, int t, enum mote_llm_ev type, const char *fmt,
                       unsigned block)
{
    d->rs_fmt = fmt;
    return emit_str(d, t, type, block);
}

/* Length of the escape sequence at s[0] == '\\' (n bytes available). */
static size_t escape_len(const char *s, size_t n)
{
    if (n < 2 || s[1] != 'u')
        return 2;
    if (n >= 12 && (s[2] == 'd' || s[2] == 'D') && (s[3] >= '8' && s[3] <= 'b') && s[6] == '\\' &&
        s[7] == 'u')
        return 12; /* a surrogate pair stays together */
    return 6;
}

/* Follows the JSON of call `slot`'s input as its fragments come
 * (OpenAI-compatible calls): oa_json[slot] keeps the depth of nesting
 * (bits 0-13), inside a string (bit 14) and after its backslash (bit
 * 15); OA_CLOSED once a whole value ended. Another fragment for a call
 * whose input is complete is another call (openai_slot). */
#define OA_DEPTH 0x3FFFu
#define OA_IN_STR 0x4000u
#define OA_ESC 0x8000u
#define OA_CLOSED 0x10000u
static void args_scan(struct mote_llm_dec *d, unsigned slot, const char *p, size_t n)
{
    uint32_t st;
    size_t i;

    if (slot >= MOTE_LLM_MAX_TOOL_CALLS || d->provider == MOTE_PROVIDER_ANTHROPIC)
        return;
    st = d->oa_json[slot];
    for (i = 0; i < n && (st & OA_CLOSED) == 0; i++) {
        char ch = p[i];

        if (st & OA_ESC)
            st &= ~OA_ESC;
        else if (st & OA_IN_STR)
            st = ch == '\\' ? st | OA_ESC : ch == '"' ? st & ~OA_IN_STR : st;
        else if (ch == '"')
            st |= OA_IN_STR;
        else if ((ch == '{' || ch == '[') && (st & OA_DEPTH) < OA_DEPTH)
            st++;
        else if ((ch == '}' || ch == ']') && (st & OA_DEPTH) > 0 && (--st & OA_DEPTH) == 0)
            st |= OA_CLOSED;
    }
    d->oa_json[slot] = st;
}

/* Unescapes string token t and emits it as `type`, in pieces that fit
 * d->buf: a delta of any length passes (a 40 KB text delta, say) without
 * a buffer of its size. Pieces never split an escape or a UTF-8 sequence. */
static int emit_str(struct mote_llm_dec *d, int t, enum mote_llm_ev type, unsigned slot)
{
    size_t n, at = 0;
    const char *raw;

    if (mote_json_type_of(&d->json, t) != MOTE_JSON_STRING)
        return MOTE_ERR_BADMSG;
    raw = mote_json_raw(&d->json, t, &n);
    while (at < n) {
        /* Unescaping grows a piece at most 3 times (a bad byte -> U+FFFD). */
        size_t k = (sizeof(d->buf) - 1) / 3, i = 0;
        int got, rc;

        if (k > n - at)
            k = n - at;
        while (k < n - at && k > 0 && ((unsigned char)raw[at + k] & 0xC0u) == 0x80u)
            k--;
        while (i < k) {
            if (raw[at + i] == '\\') {
                size_t e = escape_len(raw + at + i, n - at - i);

                if (i + e > k) {
                    k = i;
                    break;
                }
                i += e;
            } else {
                i++;
            }
        }
        if (k == 0)
            return MOTE_ERR_BADMSG;
        got = mote_json_unescape(raw + at, k, d->buf, sizeof(d->buf));
        if (got < 0)
            return got;
        at += k;
        if (got == 0)
            continue;
        if (type != MOTE_LLM_THINKING_ID)
            d->content = true; /* (reasoning too: it is journaled as it comes) */
        if (type == MOTE_LLM_TOOL_ARGS)
            args_scan(d, slot, d->buf, (size_t)got);
        if ((rc = emit_simple(d, type, slot, d->buf, (size_t)got)) < 0)
            return rc;
    }
    return 0;
}

/* Copies string token t, unescaped, into `out`. One holding a NUL
 * (\u0000) is copied as its raw, still escaped, text instead: as a C
 * string it would read as the part before the NUL (a tool named
 * "shell\u0000x" as "shell"), so it is kept whole, and matches no tool. */
static int copy_str(struct mote_llm_dec *d, int t, char *out, size_t cap)
{
    int n = mote_json_cstr(&d->json, t, out, cap);
    const char *raw;
    size_t len;

    if (n == MOTE_ERR_INVAL)
        return MOTE_ERR_BADMSG;
    if (n != MOTE_ERR_BADMSG)
        return n;
    raw = mote_json_raw(&d->json, t, &len);
    if (len >= cap || len > INT32_MAX)
        return MOTE_ERR_TOO_LARGE;
    if (memchr(raw, '\0', len) != NULL)
        return MOTE_ERR_BADMSG; /* (the parser refuses raw control bytes) */
    memcpy(out, raw, len);
    out[len] = '\0';
    return (int)len;
}

static bool nonempty_str(const struct mote_json *j, int t)
{
    size_t n = 0;

    if (mote_json_type_of(j, t) != MOTE_JSON_STRING)
        return false;
    (void)mote_json_raw(j, t, &n);
    return n > 0;
}

/* FNV-1a of n bytes. */
static uint64_t fnv(const char *p, size_t n)
{
    uint64_t h = 14695981039346656037u;
    size_t i;

    for (i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211u;
    return h;
}

/* The bits of id hash h in the answer's set of ids (d->id_seen). */
static unsigned seen_bit(uint64_t h, unsigned k)
{
    return (unsigned)(h >> (9u * k)) & 511u;
}

static bool id_seen(const struct mote_llm_dec *d, const char *id)
{
    uint64_t h = fnv(id, strlen(id));
    unsigned k;

    for (k = 0; k < 3; k++) {
        unsigned b = seen_bit(h, k);

        if ((d->id_seen[b / 64] & ((uint64_t)1 << (b % 64))) == 0)
            return false;
    }
    return true;
}

static void id_keep(struct mote_llm_dec *d, const char *id)
{
    uint64_t h = fnv(id, strlen(id));
    unsigned k;

    for (k = 0; k < 3; k++) {
        unsigned b = seen_bit(h, k);

        d->id_seen[b / 64] |= (uint64_t)1 << (b % 64);
    }
}

/* True if a call of the answer may keep `id` as it came: 1 to 64 bytes
 * its dialect takes back - Anthropic [A-Za-z0-9_-] (it refuses others),
 * OpenAI-compatible any printable ASCII but the space (Kimi K2's
 * "functions.shell:0" must come back as it was given) - and none of the
 * answer's calls with it so far (a request holding an id twice is
 * refused, and each call's result must name its own call). The set of
 * ids seen may say "seen" of one never seen (it keeps bits, not the
 * ids): such a call gets an id of mote's, which is as good. */
static bool id_ok(const struct mote_llm_dec *d, const char *id)
{
    size_t n = strlen(id), i;

    if (n == 0 || n > 64)
        return false;
    if (d->ids != MOTE_LLM_IDS_PRINTABLE) {
        if (!mote_word_chars(id, n))
            return false;
    } else {
        for (i = 0; i < n; i++) {
            if (id[i] < 0x21 || id[i] > 0x7E)
                return false;
        }
    }
    return !id_seen(d, id);
}

/* An id for call number `n` of the answer, which came without one or
 * with one it may not keep (id_ok): [A-Za-z0-9_] (what both APIs take
 * back), from the caller's seed, the
 * stream so far and n, so that no two calls of a conversation share one
 * (a request holding an id twice is refused). */
static void make_id(struct mote_llm_dec *d, unsigned n)
{
    static const char hexd[] = "0123456789abcdef";
    uint64_t h = (d->id_hash ^ n) * 1099511628211u;
    unsigned i;

    h ^= d->id_seed * 0x9E3779B97F4A7C15u;
    h ^= h >> 29;
    memcpy(d->id, "call_mote_", 10);
    for (i = 0; i < 16; i++)
        d->id[10 + i] = hexd[(h >> (60 - 4 * i)) & 15u];
    d->id[26] = '\0';
}

/* A call starts: its slot (past the table: MOTE_LLM_SLOT_OVER), its id
 * (made when it came without one, or with one that is not id_ok) and
 * name. The id made is the one the call has from here on: the journal
 * keeps it and every later request sends it with the call and its result
 * (neither API needs the id it sent back, only one id per call). */
static int tool_start(struct mote_llm_dec *d, int id_tok, int name_tok, unsigned *slot)
{
    struct mote_llm_event ev;
    int rc;

    if ((rc = copy_str(d, name_tok, d->name, sizeof(d->name))) < 0)
        return rc;
    if (d->name[0] == '\0')
        return MOTE_ERR_BADMSG;
    if (nonempty_str(&d->json, id_tok)) {
        size_t n;
        const char *raw = mote_json_raw(&d->json, id_tok, &n);

        d->wire_id = fnv(raw, n);
        if (copy_str(d, id_tok, d->id, sizeof(d->id)) < 0)
            d->id[0] = '\0'; /* too long, say: one of mote's */
    } else {
        d->wire_id = 0;
        d->id[0] = '\0';
    }
    if (!id_ok(d, d->id))
        make_id(d, d->ncalls + d->over);
    id_keep(d, d->id);
    if (d->ncalls < MOTE_LLM_MAX_TOOL_CALLS) {
        *slot = d->ncalls++;
    } else {
        *slot = MOTE_LLM_SLOT_OVER;
        d->over++;
    }
    d->content = true;
    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_LLM_TOOL_START;
    ev.slot = *slot;
    ev.id = d->id;
    ev.name = d->name;
    return emit(d, &ev);
}

static void read_usage(struct mote_llm_dec *d, int usage)
{
    int64_t v;

    if (mote_json_type_of(&d->json, usage) != MOTE_JSON_OBJECT)
        return;
    if (mote_json_int(&d->json, mote_json_member(&d->json, usage, "input_tokens"), &v) == 0 ||
        mote_json_int(&d->json, mote_json_member(&d->json, usage, "prompt_tokens"), &v) == 0)
        d->in_tokens = (uint64_t)v;
    if (mote_json_int(&d->json, mote_json_member(&d->json, usage, "output_tokens"), &v) == 0 ||
        mote_json_int(&d->json, mote_json_member(&d->json, usage, "completion_tokens"), &v) == 0)
        d->out_tokens = (uint64_t)v;
    /* Anthropic's input_tokens leaves out the cached ones; OpenAI's
     * prompt_tokens counts them (prompt_tokens_details.cached_tokens):
     * made the same here, input = what was neither read nor written. */
    if (mote_json_int(&d->json, mote_json_member(&d->json, usage, "cache_read_input_tokens"),
                      &v) == 0 && v >= 0)
        d->cache_read = (uint64_t)v;
    if (mote_json_int(&d->json, mote_json_member(&d->json, usage, "cache_creation_input_tokens"),
                      &v) == 0 && v >= 0)
        d->cache_write = (uint64_t)v;
    if ((mote_json_int(&d->json, mote_json_path(&d->json, usage, "prompt_tokens_details.cached_tokens"),
                       &v) == 0 ||
         mote_json_int(&d->json, mote_json_path(&d->json, usage, "input_tokens_details.cached_tokens"),
                       &v) == 0) &&
        v >= 0) {
        d->cache_read = (uint64_t)v;
        d->in_tokens = d->in_tokens > (uint64_t)v ? d->in_tokens - (uint64_t)v : 0;
    }
}

static int error_event(struct mote_llm_dec *d, int root, int http_status)
{
    char type[64], msg[256];
    struct mote_llm_event ev;
    size_t n;
    const char *raw = mote_json_raw(&d->json, root, &n);

    /* The event's text is re-read from a copy: the tokens get reused. */
    if (n >= sizeof(d->buf))
        n = sizeof(d->buf) - 1;
    memcpy(d->buf, raw, n);
    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_LLM_ERROR;
    ev.retryable = mote_llm_classify_error(d->buf, n, http_status, type, sizeof(type), msg,
                                           sizeof(msg), &d->json) &&
                   !d->content;
    /* The message lives in d->buf for the call. */
    mote_str_copy(d->buf, sizeof(d->buf), msg);
    mote_str_copy(d->id, sizeof(d->id), type);
    ev.text = d->buf;
    ev.len = strlen(d->buf);
    ev.id = d->id;
    return emit(d, &ev);
}

static int block_index(struct mote_llm_dec *d, int root, unsigned *idx)
{
    int64_t v;

    if (mote_json_int(&d->json, mote_json_member(&d->json, root, "index"), &v) < 0 || v < 0)
        return MOTE_ERR_BADMSG;
    if (v >= MOTE_LLM_MAX_BLOCKS)
        return MOTE_ERR_FULL;
    *idx = (unsigned)v;
    return 0;
}

static int anthropic_event(struct mote_llm_dec *d)
{
    const struct mote_json *j = &d->json;
    int type = mote_json_member(j, 0, "type");
    unsigned idx, slot;
    int rc, t;

    if (mote_json_eq(j, type, "content_block_delta")) {
        int delta = mote_json_member(j, 0, "delta");
        int dtype = mote_json_member(j, delta, "type");

        if ((rc = block_index(d, 0, &idx)) < 0)
            return rc;
        if (d->block_kind[idx] == BK_TEXT && mote_json_eq(j, dtype, "text_delta"))
            return emit_str(d, mote_json_member(j, delta, "text"), MOTE_LLM_TEXT, 0);
        if (d->block_kind[idx] == BK_TOOL && mote_json_eq(j, dtype, "input_json_delta"))
            return emit_str(d, mote_json_member(j, delta, "partial_json"), MOTE_LLM_TOOL_ARGS,
                            d->block_slot[idx]);
        if (d->block_kind[idx] == BK_THINKING && mote_json_eq(j, dtype, "thinking_delta"))
            return emit_reason(d, mote_json_member(j, delta, "thinking"), MOTE_LLM_THINKING,
                               "thinking", d->block_slot[idx]);
        if (d->block_kind[idx] == BK_THINKING && mote_json_eq(j, dtype, "signature_delta"))
            return emit_reason(d, mote_json_member(j, delta, "signature"), MOTE_LLM_THINKING_SIG,
                               "thinking", d->block_slot[idx]);
        return 0; /* citations, a whole input's deltas...: dropped */
    }
    if (mote_json_eq(j, type, "content_block_start")) {
        int block = mote_json_member(j, 0, "content_block");
        int btype = mote_json_member(j, block, "type");

        if ((rc = block_index(d, 0, &idx)) < 0)
            return rc;
        d->block_kind[idx] = 0;
        if (mote_json_eq(j, btype, "text")) {
            d->block_kind[idx] = BK_TEXT;
            t = mote_json_member(j, block, "text");
            return t >= 0 ? emit_str(d, t, MOTE_LLM_TEXT, 0) : 0;
        }
        if (mote_json_eq(j, btype, "thinking")) {
            /* kept with its signature, to be sent back (docs/LLM.md) */
            d->block_kind[idx] = BK_THINKING;
            d->block_slot[idx] = (uint8_t)d->rs_n++;
            t = mote_json_member(j, block, "thinking");
            if (nonempty_str(j, t) && (rc = emit_reason(d, t, MOTE_LLM_THINKING, "thinking",
                                                         d->block_slot[idx])) < 0)
                return rc;
            t = mote_json_member(j, block, "signature");
            return nonempty_str(j, t) ? emit_reason(d, t, MOTE_LLM_THINKING_SIG, "thinking",
                                                    d->block_slot[idx])
                                      : 0;
        }
        if (mote_json_eq(j, btype, "redacted_thinking")) {
            /* its encrypted data comes whole in the start */
            t = mote_json_member(j, block, "data");
            if (!nonempty_str(j, t))
                return 0;
            d->content = true;
            return emit_reason(d, t, MOTE_LLM_THINKING_SIG, "redacted", d->rs_n++ & 0xFFu);
        }
        if (mote_json_eq(j, btype, "tool_use")) {
            rc = tool_start(d, mote_json_member(j, block, "id"), mote_json_member(j, block, "name"),
                            &slot);
            if (rc < 0)
                return rc;
            d->block_kind[idx] = BK_TOOL;
            d->block_slot[idx] = (uint8_t)slot;
            /* The input whole in the start (no input_json_delta after it,
             * as some servers send it): that is the call's input. */
            t = mote_json_member(j, block, "input");
            if (mote_json_type_of(j, t) == MOTE_JSON_OBJECT && j->tok[t].size > 0) {
                size_t n;
                const char *raw = mote_json_raw(j, t, &n);

                d->block_kind[idx] = BK_TOOL_WHOLE;
                return emit_simple(d, MOTE_LLM_TOOL_ARGS, slot, raw, n);
            }
        }
        return 0; /* other block types are skipped */
    }
    if (mote_json_eq(j, type, "content_block_stop")) {
        if ((rc = block_index(d, 0, &idx)) < 0)
            return rc;
        if (d->block_kind[idx] == BK_TOOL || d->block_kind[idx] == BK_TOOL_WHOLE) {
            d->block_kind[idx] = 0;
            return emit_simple(d, MOTE_LLM_TOOL_END, d->block_slot[idx], NULL, 0);
        }
        d->block_kind[idx] = 0;
        return 0;
    }
    if (mote_json_eq(j, type, "message_start")) {
        read_usage(d, mote_json_path(j, 0, "message.usage"));
        return 0;
    }
    if (mote_json_eq(j, type, "message_delta")) {
        t = mote_json_path(j, 0, "delta.stop_reason");
        read_usage(d, mote_json_member(j, 0, "usage"));
        if (mote_json_type_of(j, t) == MOTE_JSON_STRING) {
            if ((rc = copy_str(d, t, d->stop_reason, sizeof(d->stop_reason))) < 0)
                return rc;
            d->stopped = true;
            /* A tool block the stream never closed (max_tokens) ends here. */
            for (idx = 0; idx < MOTE_LLM_MAX_BLOCKS; idx++) {
                if (d->block_kind[idx] == BK_TOOL || d->block_kind[idx] == BK_TOOL_WHOLE) {
                    d->block_kind[idx] = 0;
                    if ((rc = emit_simple(d, MOTE_LLM_TOOL_END, d->block_slot[idx], NULL, 0)) < 0)
                        return rc;
                }
            }
            if ((rc = emit_simple(d, MOTE_LLM_STOP, 0, d->stop_reason,
                                  strlen(d->stop_reason))) < 0)
                return rc;
        }
        return emit_simple(d, MOTE_LLM_USAGE, 0, NULL, 0);
    }
    if (mote_json_eq(j, type, "message_stop")) {
        d->done = true;
        return emit_simple(d, MOTE_LLM_DONE, 0, NULL, 0);
    }
    if (mote_json_eq(j, type, "error"))
        return error_event(d, 0, 200);
    return 0; /* ping and unknown types */
}

/* The slot of tool_calls element `call`. Parallel calls are keyed by
 * index - but an element with the index of a call and an id or a name
 * other than the ones that call came with is a call of its own (gateways
 * such as litellm and one-api send every call with index 0 and a new id;
 * Ollama every call with index 0 and no id): the call before it ends,
 * and the index is the new call's from here on.
 * Without an index (Ollama before late 2024 sent several whole calls in
 * one chunk so; others leave it out for a single call) an element with
 * an id or a name starts a call - unless it repeats the id of the call
 * started last - and one without goes on with the call started last.
 * Calls past the table share MOTE_LLM_SLOT_OVER, one after another. */
/* True if tool_calls element `call`'s arguments begin a JSON object. */
static bool opens(const struct mote_json *j, int call)
{
    size_t n = 0, i = 0;
    const char *raw = mote_json_raw(j, mote_json_path(j, call, "function.arguments"), &n);

    while (raw != NULL && i < n) {
        if (raw[i] == ' ')
            i++;
        else if (raw[i] == '\\' && i + 1 < n &&
                 (raw[i + 1] == 'n' || raw[i + 1] == 'r' || raw[i + 1] == 't'))
            i += 2; /* escaped white space */
        else
            break;
    }
    return raw != NULL && i < n && raw[i] == '{';
}

static int openai_slot(struct mote_llm_dec *d, int call, unsigned *slot)
{
    const struct mote_json *j = &d->json;
    int id = mote_json_member(j, call, "id"), name = mote_json_path(j, call, "function.name");
    bool starts = nonempty_str(j, id) || nonempty_str(j, name);
    bool some = d->oa_last <= MOTE_LLM_SLOT_OVER;
    int64_t idx = 0;
    unsigned i;
    int rc;

    if (mote_json_int(j, mote_json_member(j, call, "index"), &idx) == 0) {
        if (idx < 0 || idx > 0x7FFFFFFF)
            return MOTE_ERR_BADMSG;
        for (i = 0; i < d->ncalls; i++) {
            if (d->oa_index[i] == (int32_t)idx) {
                size_t n = 0, nn = 0;
                const char *raw = nonempty_str(j, id) ? mote_json_raw(j, id, &n) : NULL;
                const char *nm = nonempty_str(j, name) ? mote_json_raw(j, name, &nn) : NULL;
                bool other_id = raw != NULL && d->oa_wire[i] != 0 && d->oa_wire[i] != fnv(raw, n);
                bool other_name = nm != NULL && d->oa_name[i] != fnv(nm, nn);
                /* a call whose input is whole, and more input beginning
                 * (Ollama's calls of one name, each with index 0) */
                bool whole = (d->oa_json[i] & OA_CLOSED) != 0 && raw == NULL &&
                             (nm != NULL || opens(j, call));

                if (!other_id && !other_name && !whole) {
                    *slot = i;
                    return 0;
                }
                /* Another call with this index: the one before ends. */
                d->oa_index[i] = -2;
                if ((rc = emit_simple(d, MOTE_LLM_TOOL_END, i, NULL, 0)) < 0)
                    return rc;
                break;
            }
        }
        if (d->oa_last == MOTE_LLM_SLOT_OVER && d->oa_over_idx == (int32_t)idx && starts &&
            nonempty_str(j, id)) {
            size_t n = 0;
            const char *raw = mote_json_raw(j, id, &n);

            if (d->wire_id == fnv(raw, n)) {
                *slot = MOTE_LLM_SLOT_OVER; /* its id again: the same call past the table */
                return 0;
            }
        }
        if (!starts && d->oa_last == MOTE_LLM_SLOT_OVER) {
            *slot = MOTE_LLM_SLOT_OVER; /* more of the call past the table */
            return 0;
        }
    } else {
        size_t n = 0;
        const char *raw = nonempty_str(j, id) ? mote_json_raw(j, id, &n) : NULL;

        if (some && (!starts || (raw != NULL && d->wire_id == fnv(raw, n)))) {
            *slot = d->oa_last;
            return 0;
        }
        idx = (int64_t)(d->ncalls + d->over); /* its place among the calls */
        d->oa_unindexed++;
    }
    if (d->oa_over_open) {
        d->oa_over_open = false;
        if ((rc = emit_simple(d, MOTE_LLM_TOOL_END, MOTE_LLM_SLOT_OVER, NULL, 0)) < 0)
            return rc;
    }
    rc = tool_start(d, id, name, slot);
    if (rc < 0)
        return rc;
    if (*slot == MOTE_LLM_SLOT_OVER) {
        d->oa_over_open = true;
        d->oa_over_idx = (int32_t)idx;
    } else {
        size_t nn = 0;
        const char *nm = mote_json_raw(j, name, &nn);

        d->oa_index[*slot] = (int32_t)idx;
        d->oa_json[*slot] = 0;
        d->oa_wire[*slot] = d->wire_id;
        d->oa_name[*slot] = fnv(nm != NULL ? nm : "", nm != NULL ? nn : 0);
    }
    d->oa_last = *slot;
    return 0;
}

static int openai_end_calls(struct mote_llm_dec *d)
{
    unsigned i;
    int rc;

    if (d->oa_over_open) {
        d->oa_over_open = false;
        if ((rc = emit_simple(d, MOTE_LLM_TOOL_END, MOTE_LLM_SLOT_OVER, NULL, 0)) < 0)
            return rc;
    }
    for (i = 0; i < d->ncalls; i++) {
        if (d->oa_index[i] >= 0) {
            d->oa_index[i] = -2; /* ended */
            if ((rc = emit_simple(d, MOTE_LLM_TOOL_END, i, NULL, 0)) < 0)
                return rc;
        }
    }
    return 0;
}

static int openai_event(struct mote_llm_dec *d)
{
    const struct mote_json *j = &d->json;
    int choice = -1, choices = mote_json_member(j, 0, "choices");
    int err = mote_json_member(j, 0, "error");
    int usage = mote_json_member(j, 0, "usage");
    int k, rc;

    if (err >= 0 && !mote_json_is_null(j, err))
        return error_event(d, 0, 200);
    /* Only the first choice (index 0) is the answer. */
    for (k = 0; k < 8; k++) {
        int c = mote_json_elem(j, choices, k);
        int64_t idx = 0;

        if (c < 0)
            break;
        if (mote_json_int(j, mote_json_member(j, c, "index"), &idx) < 0 || idx == 0) {
            choice = c;
            break;
        }
    }
    if (choice >= 0) {
        int delta = mote_json_member(j, choice, "delta");
        int content = mote_json_member(j, delta, "content");
        int calls = mote_json_member(j, delta, "tool_calls");
        int fin = mote_json_member(j, choice, "finish_reason");
        int reasoning = mote_json_member(j, delta, "reasoning_content");
        int refusal = mote_json_member(j, delta, "refusal");

        /* A refusal's text is the answer the user sees (and the journal
         * keeps); the stop reason says it was a refusal. */
        if (mote_json_type_of(j, refusal) == MOTE_JSON_STRING) {
            d->refused = true;
            if ((rc = emit_str(d, refusal, MOTE_LLM_TEXT, 0)) < 0)
                return rc;
        }
        /* reasoning_content (DeepSeek, llama.cpp, Kimi) or reasoning (vLLM,
         * Groq, Ollama, OpenRouter): one block of the answer */
        const char *fmt = "reasoning_content";

        if (mote_json_type_of(j, reasoning) != MOTE_JSON_STRING) {
            reasoning = mote_json_member(j, delta, "reasoning");
            fmt = "reasoning";
        }
        if (mote_json_type_of(j, reasoning) == MOTE_JSON_STRING &&
            (rc = emit_reason(d, reasoning, MOTE_LLM_THINKING, fmt, 0)) < 0)
            return rc;
        if (mote_json_type_of(j, content) == MOTE_JSON_STRING &&
            (rc = emit_str(d, content, MOTE_LLM_TEXT, 0)) < 0)
            return rc;
        for (k = 0; mote_json_type_of(j, calls) == MOTE_JSON_ARRAY; k++) {
            int call = mote_json_elem(j, calls, k);
            int args;
            unsigned slot;

            if (call < 0)
                break;
            unsigned before = d->ncalls + d->over;
            int extra = mote_json_member(j, call, "extra_content");

            if ((rc = openai_slot(d, call, &slot)) < 0)
                return rc;
            if (slot != MOTE_LLM_SLOT_OVER && d->oa_index[slot] < 0)
                return MOTE_ERR_BADMSG; /* fragment for a call already ended */
            /* A call's extras (Gemini's thought signature), as they came:
             * sent back with the call where the provider needs them. */
            if (d->ncalls + d->over > before && slot != MOTE_LLM_SLOT_OVER &&
                mote_json_type_of(j, extra) == MOTE_JSON_OBJECT) {
                size_t n;
                const char *raw = mote_json_raw(j, extra, &n);

                if ((rc = emit_simple(d, MOTE_LLM_TOOL_EXTRA, slot, raw, n)) < 0)
                    return rc;
            }
            args = mote_json_path(j, call, "function.arguments");
            if (mote_json_type_of(j, args) == MOTE_JSON_STRING &&
                (rc = emit_str(d, args, MOTE_LLM_TOOL_ARGS, slot)) < 0)
                return rc;
        }
        if (mote_json_type_of(j, fin) == MOTE_JSON_STRING) {
            char reason[32];
            const char *mapped;

            if ((rc = copy_str(d, fin, reason, sizeof(reason))) < 0)
                return rc;
            mapped = strcmp(reason, "tool_calls") == 0 || strcmp(reason, "function_call") == 0
                         ? "tool_use"
                     : strcmp(reason, "stop") == 0   ? "end_turn"
                     : strcmp(reason, "length") == 0 ? "max_tokens"
                                                     : reason;
            if (d->refused && strcmp(mapped, "end_turn") == 0)
                mapped = "refusal";
            if ((rc = openai_end_calls(d)) < 0)
                return rc;
            if (!d->stopped || strcmp(d->stop_reason, mapped) != 0) {
                mote_str_copy(d->stop_reason, sizeof(d->stop_reason), mapped);
                d->stopped = true;
                if ((rc = emit_simple(d, MOTE_LLM_STOP, 0, d->stop_reason,
                                      strlen(d->stop_reason))) < 0)
                    return rc;
            }
        }
    }
    if (usage >= 0 && !mote_json_is_null(j, usage)) {
        read_usage(d, usage);
        return emit_simple(d, MOTE_LLM_USAGE, 0, NULL, 0);
    }
    return 0;
}

/* ---- the Responses API ----------------------------------------------------- */

/* The slot of the call that is output item `at` (-1: none). */
static int resp_slot(const struct mote_llm_dec *d, int64_t at)
{
    unsigned i;

    for (i = 0; i < d->ncalls; i++) {
        if (d->oa_index[i] == (int32_t)at)
            return (int)i;
    }
    return d->oa_over_open && d->oa_over_idx == (int32_t)at ? (int)MOTE_LLM_SLOT_OVER : -1;
}

/* A call ends (its output item done): its arguments, when none came as
 * deltas, then its end. */
static int resp_call_done(struct mote_llm_dec *d, int item, int64_t at)
{
    int s = resp_slot(d, at), rc;
    int args = mote_json_member(&d->json, item, "arguments");

    if (s < 0)
        return 0;
    if (s != (int)MOTE_LLM_SLOT_OVER && d->oa_name[s] == 1 && nonempty_str(&d->json, args) &&
        (rc = emit_str(d, args, MOTE_LLM_TOOL_ARGS, (unsigned)s)) < 0)
        return rc;
    if (s == (int)MOTE_LLM_SLOT_OVER)
        d->oa_over_open = false;
    else
        d->oa_index[s] = -2;
    return emit_simple(d, MOTE_LLM_TOOL_END, (unsigned)s, NULL, 0);
}

/* The response ended (completed, or incomplete: its reason): calls left
 * open end, the stop reason and the usage, the proper end. */
static int resp_end(struct mote_llm_dec *d, int resp, bool complete)
{
    const struct mote_json *j = &d->json;
    const char *stop = d->ncalls + d->over > 0 ? "tool_use" : d->refused ? "refusal" : "end_turn";
    unsigned i;
    int rc;

    if (!complete) {
        int why = mote_json_path(j, resp, "incomplete_details.reason");

        stop = mote_json_eq(j, why, "max_output_tokens") ? "max_tokens"
               : mote_json_eq(j, why, "content_filter") ? "content_filter"
                                                        : "incomplete";
    }
    for (i = 0; i < d->ncalls; i++) {
        if (d->oa_index[i] >= 0) {
            d->oa_index[i] = -2;
            if ((rc = emit_simple(d, MOTE_LLM_TOOL_END, i, NULL, 0)) < 0)
                return rc;
        }
    }
    if (d->oa_over_open) {
        d->oa_over_open = false;
        if ((rc = emit_simple(d, MOTE_LLM_TOOL_END, MOTE_LLM_SLOT_OVER, NULL, 0)) < 0)
            return rc;
    }
    read_usage(d, mote_json_member(j, resp, "usage"));
    mote_str_copy(d->stop_reason, sizeof(d->stop_reason), stop);
    d->stopped = true;
    if ((rc = emit_simple(d, MOTE_LLM_STOP, 0, d->stop_reason, strlen(d->stop_reason))) < 0 ||
        (rc = emit_simple(d, MOTE_LLM_USAGE, 0, NULL, 0)) < 0)
        return rc;
    d->done = true;
    return emit_simple(d, MOTE_LLM_DONE, 0, NULL, 0);
}

/* One event of the Responses API's stream: text deltas, function calls
 * (their items and argument deltas, keyed by output_index), reasoning
 * items (their summary as thinking, their encrypted_content kept to be
 * sent back), the end with its usage, errors. */
static int responses_event(struct mote_llm_dec *d)
{
    const struct mote_json *j = &d->json;
    int type = mote_json_member(j, 0, "type"), item = mote_json_member(j, 0, "item");
    int delta = mote_json_member(j, 0, "delta");
    int64_t at = -1;
    int rc, s;

    (void)mote_json_int(j, mote_json_member(j, 0, "output_index"), &at);
    if (mote_json_eq(j, type, "response.output_text.delta"))
        return emit_str(d, delta, MOTE_LLM_TEXT, 0);
    if (mote_json_eq(j, type, "response.refusal.delta")) {
        d->refused = true;
        return emit_str(d, delta, MOTE_LLM_TEXT, 0);
    }
    if (mote_json_eq(j, type, "response.reasoning_summary_text.delta") ||
        mote_json_eq(j, type, "response.reasoning_text.delta"))
        return emit_reason(d, delta, MOTE_LLM_THINKING, "responses", (unsigned)at & 0xFFu);
    if (mote_json_eq(j, type, "response.function_call_arguments.delta")) {
        s = resp_slot(d, at);
        if (s < 0)
            return MOTE_ERR_BADMSG; /* a fragment of no call */
        if (s != (int)MOTE_LLM_SLOT_OVER)
            d->oa_name[s] = 0; /* (its arguments came as deltas) */
        return emit_str(d, delta, MOTE_LLM_TOOL_ARGS, (unsigned)s);
    }
    if (mote_json_eq(j, type, "response.output_item.added") &&
        mote_json_eq(j, mote_json_member(j, item, "type"), "function_call")) {
        unsigned slot;

        if (at < 0 || at > 0x7FFFFFFF || resp_slot(d, at) >= 0)
            return MOTE_ERR_BADMSG;
        rc = tool_start(d, mote_json_member(j, item, "call_id"), mote_json_member(j, item, "name"),
                        &slot);
        if (rc < 0)
            return rc;
        if (slot == MOTE_LLM_SLOT_OVER) {
            d->oa_over_open = true;
            d->oa_over_idx = (int32_t)at;
        } else {
            d->oa_index[slot] = (int32_t)at;
            d->oa_json[slot] = 0;
            d->oa_name[slot] = 1; /* no delta yet: the done item's arguments count */
        }
        return 0;
    }
    if (mote_json_eq(j, type, "response.output_item.done")) {
        int ity = mote_json_member(j, item, "type");

        if (mote_json_eq(j, ity, "function_call"))
            return resp_call_done(d, item, at);
        if (mote_json_eq(j, ity, "reasoning") &&
            nonempty_str(j, mote_json_member(j, item, "encrypted_content")))
            return emit_reason(d, mote_json_member(j, item, "encrypted_content"),
                               MOTE_LLM_THINKING_SIG, "responses", (unsigned)at & 0xFFu);
        return 0;
    }
    if (mote_json_eq(j, type, "response.completed"))
        return resp_end(d, mote_json_member(j, 0, "response"), true);
    if (mote_json_eq(j, type, "response.incomplete"))
        return resp_end(d, mote_json_member(j, 0, "response"), false);
    if (mote_json_eq(j, type, "response.failed"))
        return error_event(d, mote_json_path(j, 0, "response.error") >= 0
                                  ? mote_json_path(j, 0, "response.error") : 0,
                           200);
    if (mote_json_eq(j, type, "error"))
        return error_event(d, 0, 200);
    return 0; /* created, in_progress, content parts, done texts, ... */
}

bool mote_llm_dec_finish(struct mote_llm_dec *d)
{
    if (d->done)
        return true;
    if (d->err != 0 || d->provider != MOTE_PROVIDER_OPENAI || !d->stopped)
        return false;
    d->err = openai_end_calls(d);
    if (d->err == 0)
        d->err = emit_simple(d, MOTE_LLM_DONE, 0, NULL, 0);
    d->done = d->err == 0;
    return d->done;
}

int mote_llm_dec_event(struct mote_llm_dec *d, const char *event, const char *data, size_t len)
{
    size_t i;
    int rc;

    if (d->err != 0)
        return d->err;
    if (d->done)
        return 0; /* anything after the end is ignored */
    if (d->provider == MOTE_PROVIDER_OPENAI && len == 6 && memcmp(data, "[DONE]", 6) == 0) {
        rc = openai_end_calls(d);
        if (rc == 0) {
            d->done = true;
            rc = emit_simple(d, MOTE_LLM_DONE, 0, NULL, 0);
        }
        return d->err = rc;
    }
    if (len == 0)
        return 0; /* keep-alive or priming event */
    for (i = 0; i < len; i++) /* what ids made for calls are made of */
        d->id_hash = (d->id_hash ^ (unsigned char)data[i]) * 1099511628211u;
    rc = mote_json_parse(&d->json, data, len);
    if (rc > 0 && d->provider != MOTE_PROVIDER_ANTHROPIC &&
        mote_json_type_of(&d->json, 0) == MOTE_JSON_ARRAY &&
        mote_json_member(&d->json, mote_json_elem(&d->json, 0, 0), "error") >= 0)
        return d->err = error_event(d, 0, 200); /* Gemini's errors come as an array */
    if (rc < 0 || mote_json_type_of(&d->json, 0) != MOTE_JSON_OBJECT) {
        /* An event too big to tokenize whose kind is ignored anyway (a
         * web search result block) is skipped; anything else fails. */
        if (rc == MOTE_ERR_TOO_LARGE && d->provider == MOTE_PROVIDER_ANTHROPIC &&
            strcmp(event, "content_block_start") != 0 && strcmp(event, "content_block_delta") != 0)
            return 0;
        return d->err = rc == MOTE_ERR_TOO_LARGE ? rc : MOTE_ERR_BADMSG;
    }
    rc = d->provider == MOTE_PROVIDER_ANTHROPIC          ? anthropic_event(d)
         : d->provider == MOTE_PROVIDER_OPENAI_RESPONSES ? responses_event(d)
                                                         : openai_event(d);
    if (rc < 0)
        d->err = rc;
    return rc;
}

/* ---- hosts ------------------------------------------------------------- */

bool mote_llm_openai_host(const char *base_url)
{
    static const char host[] = "api.openai.com";
    const char *p = base_url != NULL ? strstr(base_url, "://") : NULL;
    size_t i;

    if (p == NULL)
        return false;
    p += 3;
    for (i = 0; i < sizeof(host) - 1; i++) {
        char ch = p[i];

        if (ch >= 'A' && ch <= 'Z')
            ch = (char)(ch - 'A' + 'a');
        if (ch != host[i])
            return false;
    }
    return p[i] == '\0' || p[i] == '/' || p[i] == ':' || (p[i] == '.' && (p[i + 1] == '\0' ||
                                                                          p[i + 1] == '/'));
}

