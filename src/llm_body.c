/*
 * llm_body.c - the JSON body of a model request in either dialect, written
 * from the conversation's parts so that the real APIs take it (the rules
 * they enforce with a 400 are listed in docs/LLM.md), in one go or as a
 * pull stream.
 */
#include "mote/mote_llm.h"

#include <string.h>

#include "util.h"

/* ---- pieces of JSON ------------------------------------------------------ */

static void more_s(struct mote_jw *w, const char *s)
{
    mote_jw_str_more(w, s, strlen(s));
}

static bool hex4(const char *s, uint32_t *v)
{
    int i, d;

    *v = 0;
    for (i = 0; i < 4; i++) {
        if ((d = mote_hexval(s[i])) < 0)
            return false;
        *v = *v << 4 | (uint32_t)d;
    }
    return true;
}

/* The escape at s[0] == '\\' (n bytes left): its length (a surrogate pair
 * is 12), and whether it is a lone UTF-16 surrogate. */
static size_t escape_at(const char *s, size_t n, bool *lone)
{
    uint32_t v, v2;

    *lone = false;
    if (n < 2)
        return n;
    if (s[1] != 'u' || n < 6 || !hex4(s + 2, &v))
        return 2;
    if (v < 0xD800 || v > 0xDFFF)
        return 6;
    if (v <= 0xDBFF && n >= 12 && s[6] == '\\' && s[7] == 'u' && hex4(s + 8, &v2) &&
        v2 >= 0xDC00 && v2 <= 0xDFFF)
        return 12;
    *lone = true;
    return 6;
}

/* Writes JSON text `s` (a tool input, a schema: valid JSON) as a value
 * (in_string false) or into the open string (true), each \u escape of a
 * lone surrogate made \ufffd: strict readers refuse it ("no low surrogate
 * in string", for every later request of the conversation), and
 * docs/LLM.md promises U+FFFD for it. */
static void json_fixed(struct mote_jw *w, const char *s, size_t n, bool in_string)
{
    size_t i = 0, from = 0;

    if (!in_string)
        mote_jw_raw(w, "", 0); /* the separator before the value */
    while (i < n) {
        bool lone;
        size_t e;

        if (s[i] != '\\') {
            i++;
            continue;
        }
        e = escape_at(s + i, n - i, &lone);
        if (lone) {
            if (in_string) {
                mote_jw_str_more(w, s + from, i - from);
                mote_jw_str_more(w, "\\ufffd", 6);
            } else {
                mote_jw_bytes(w, s + from, i - from);
                mote_jw_bytes(w, "\\ufffd", 6);
            }
            from = i + e;
        }
        i += e;
    }
    if (in_string)
        mote_jw_str_more(w, s + from, n - from);
    else
        mote_jw_bytes(w, s + from, n - from);
}

/* Bytes of the white-space character that ends s[0..n), or 0. White space
 * is what Python's str.isspace() calls so, the widest reading of the
 * APIs' "whitespace" (ASCII, U+001C-U+001F, U+0085, U+00A0, U+1680,
 * U+2000-U+200A, U+2028, U+2029, U+202F, U+205F, U+3000). */
static size_t ws_before(const char *p, size_t n)
{
    const unsigned char *s = (const unsigned char *)p;
    unsigned char c, a, b;

    if (n == 0)
        return 0;
    c = s[n - 1];
    if (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F))
        return 1;
    if (n >= 2 && s[n - 2] == 0xC2 && (c == 0x85 || c == 0xA0))
        return 2;
    if (n < 3)
        return 0;
    a = s[n - 3];
    b = s[n - 2];
    if ((a == 0xE1 && b == 0x9A && c == 0x80) || (a == 0xE2 && b == 0x81 && c == 0x9F) ||
        (a == 0xE3 && b == 0x80 && c == 0x80) ||
        (a == 0xE2 && b == 0x80 &&
         ((c >= 0x80 && c <= 0x8A) || c == 0xA8 || c == 0xA9 || c == 0xAF)))
        return 3;
    return 0;
}

/* The length of s[0..n) without the white space that ends it (0: it is
 * all white space, or empty). */
static size_t trimmed(const char *s, size_t n)
{
    size_t k;

    while ((k = ws_before(s, n)) > 0)
        n -= k;
    return n;
}

static const char no_message[] = "the tool failed without a message";
static const char no_output[] = "(the tool gave no output)";
static const char cut_note[] = " [interrupted: the answer was cut off here]";

/* ---- tool results cut to fit the context window ------------------------------- */

/* The cap of the tool result about to be written (0: whole): the oldest
 * `old_results` of the request get old_cap, every one result_cap. Counts
 * the result. */
static uint32_t result_cap(const struct mote_llm_req *req, struct mote_llm_wstate *ws)
{
    uint32_t cap = req->result_cap;

    if (ws->nresults < req->old_results && req->old_cap > 0 && (cap == 0 || req->old_cap < cap))
        cap = req->old_cap;
    ws->nresults++;
    return cap;
}

/* Writes tool result text s[0..n) into the open string, cut to `cap`
 * bytes when it is longer: its start and its end (whole characters, a
 * line's end where one is near), and between them what was cut, said to
 * the model. The journal keeps the whole result. */
static void result_more(struct mote_jw *w, const struct mote_llm_req *req, uint32_t cap,
                        const char *s, size_t n)
{
    size_t head, tail, k;
    char note[160];
    struct mote_sb sb;

    if (cap == 0 || n <= cap) {
        mote_jw_str_more(w, s, n);
        return;
    }
    head = (size_t)cap * 2u / 3u;
    tail = (size_t)cap - head;
    while (head > 0 && ((unsigned char)s[head] & 0xC0u) == 0x80u)
        head--;
    for (k = head; k > head / 2 && k > 0; k--) { /* end the start at a line's end */
        if (s[k - 1] == '\n') {
            head = k;
            break;
        }
    }
    while (tail > 0 && ((unsigned char)s[n - tail] & 0xC0u) == 0x80u)
        tail--;
    mote_jw_str_more(w, s, head);
    mote_sb_init(&sb, note, sizeof(note));
    mote_sb_num(&sb, "\n[... ", (uint64_t)(n - head - tail),
                " bytes of this result cut here to fit the model's context window");
    if (req->window > 0)
        mote_sb_num(&sb, " (", req->window, " tokens)");
    mote_sb_s(&sb, "; ask for a smaller part if you need them ...]\n");
    mote_jw_str_more(w, sb.p, sb.len);
    mote_jw_str_more(w, s + n - tail, tail);
}

/* ---- reasoning: which goes back where ---------------------------------------- */

/* Formats of reasoning (mote_part.fmt), as codes the writer's state keeps. */
enum { RS_THINKING = 1, RS_REDACTED, RS_CONTENT, RS_REASONING, RS_RESPONSES };

static uint8_t rs_code(const char *fmt)
{
    static const char *const names[] = {"", "thinking", "redacted", "reasoning_content",
                                        "reasoning", "responses"};
    uint8_t i;

    for (i = 1; fmt != NULL && i < MOTE_ARRAY_LEN(names); i++) {
        if (strcmp(fmt, names[i]) == 0)
            return i;
    }
    return 0;
}

/* True if the request sends key `k` back (an extra the profile needs). */
static bool sends(const struct mote_llm_req *req, uint8_t k)
{
    return (req->add & k) != 0 && (req->omit & k) == 0;
}

/* Whether reasoning part p goes into this request, as its dialect and the
 * provider need it (docs/LLM.md, "Reasoning"): Anthropic takes its own
 * thinking blocks back (signed: never another provider's), the current
 * turn's; an OpenAI-compatible server its reasoning as the assistant
 * message's reasoning_content where the profile says it needs it (every
 * turn's where it needs them all). */
static bool rs_sent(const struct mote_llm_req *req, const struct mote_part *p)
{
    uint8_t code = rs_code(p->fmt);

    if (req->provider == MOTE_PROVIDER_ANTHROPIC)
        return (code == RS_THINKING || code == RS_REDACTED) && !p->earlier &&
               (p->kind == 0 || p->kind == 1);
    if (req->provider == MOTE_PROVIDER_OPENAI_RESPONSES)
        return code == RS_RESPONSES && p->kind == 1 && !p->earlier;
    if (req->provider == MOTE_PROVIDER_OPENAI)
        return (code == RS_CONTENT || code == RS_REASONING) && p->kind == 0 &&
               sends(req, MOTE_LLM_KEY_REASONING_CONTENT) &&
               (!p->earlier || sends(req, MOTE_LLM_KEY_REASONING_TURNS));
    return false;
}

/* ---- the head: model, limits, system prompt, tools ---------------------------- */

static void cache_mark(struct mote_jw *w);

/* Anthropic's prompt-cache breakpoints are written (not refused). */
static bool cache_on(const struct mote_llm_req *req)
{
    return req->cache && (req->omit & MOTE_LLM_KEY_CACHE_CONTROL) == 0;
}

static void write_tools(struct mote_jw *w, const struct mote_llm_req *req)
{
    unsigned i;

    if (req->ntools == 0)
        return;
    if (req->no_tool_calls && (req->omit & MOTE_LLM_KEY_TOOL_CHOICE) == 0) {
        mote_jw_key(w, "tool_choice");
        if (req->provider == MOTE_PROVIDER_ANTHROPIC) {
            mote_jw_obj(w);
            mote_jw_kstr(w, "type", "none");
            mote_jw_obj_end(w);
        } else {
            mote_jw_str(w, "none");
        }
    }
    mote_jw_key(w, "tools");
    mote_jw_arr(w);
    for (i = 0; i < req->ntools; i++) {
        const struct mote_tool_def *t = &req->tools[i];

        mote_jw_obj(w);
        if (req->provider == MOTE_PROVIDER_ANTHROPIC) {
            mote_jw_kstr(w, "name", t->name);
            mote_jw_kstr(w, "description", t->description);
            mote_jw_key(w, "input_schema");
            json_fixed(w, t->schema, strlen(t->schema), false);
            if (cache_on(req) && i + 1 == req->ntools)
                cache_mark(w); /* the tools are a prefix of every request */
        } else {
            bool flat = req->provider == MOTE_PROVIDER_OPENAI_RESPONSES;

            mote_jw_kstr(w, "type", "function");
            if (!flat) { /* chat completions nests it, the Responses API does not */
                mote_jw_key(w, "function");
                mote_jw_obj(w);
            }
            mote_jw_kstr(w, "name", t->name);
            mote_jw_kstr(w, "description", t->description);
            mote_jw_key(w, "parameters");
            json_fixed(w, t->schema, strlen(t->schema), false);
            if (!flat)
                mote_jw_obj_end(w);
        }
        mote_jw_obj_end(w);
    }
    mote_jw_arr_end(w);
}

/* Anthropic's prompt-cache breakpoint. */
static void cache_mark(struct mote_jw *w)
{
    mote_jw_key(w, "cache_control");
    mote_jw_obj(w);
    mote_jw_kstr(w, "type", "ephemeral");
    mote_jw_obj_end(w);
}

static void write_head(struct mote_jw *w, const struct mote_llm_req *req,
                       struct mote_llm_wstate *ws)
{
    memset(ws, 0, sizeof(*ws));
    mote_jw_obj(w);
    mote_jw_kstr(w, "model", req->model);
    mote_jw_kbool(w, "stream", true);
    if (req->provider == MOTE_PROVIDER_ANTHROPIC) {
        uint32_t max = req->max_tokens > 0 ? req->max_tokens : 4096;

        /* extended thinking: its budget must stay below max_tokens */
        if (req->thinking_budget > 0 && max <= req->thinking_budget)
            max = req->thinking_budget + 4096;
        mote_jw_kint(w, "max_tokens", max);
        if (req->thinking_budget > 0) {
            mote_jw_key(w, "thinking");
            mote_jw_obj(w);
            mote_jw_kstr(w, "type", "enabled");
            mote_jw_kint(w, "budget_tokens", req->thinking_budget);
            mote_jw_obj_end(w);
        }
        if (req->system != NULL && req->system[0] != '\0') {
            mote_jw_key(w, "system");
            if (cache_on(req)) {
                mote_jw_arr(w);
                mote_jw_obj(w);
                mote_jw_kstr(w, "type", "text");
                mote_jw_kstr(w, "text", req->system);
                cache_mark(w);
                mote_jw_obj_end(w);
                mote_jw_arr_end(w);
            } else {
                mote_jw_str(w, req->system);
            }
        }
        write_tools(w, req);
        mote_jw_key(w, "messages");
        mote_jw_arr(w);
        return;
    }
    if (req->provider == MOTE_PROVIDER_OPENAI_RESPONSES) {
        /* stateless: nothing kept by the server, the reasoning items come
         * back encrypted and go back whole (docs/LLM.md, "The Responses
         * API") */
        mote_jw_kbool(w, "store", false);
        if ((req->omit & MOTE_LLM_KEY_INCLUDE) == 0) {
            mote_jw_key(w, "include");
            mote_jw_arr(w);
            mote_jw_str(w, "reasoning.encrypted_content");
            mote_jw_arr_end(w);
        }
        if (req->system != NULL && req->system[0] != '\0') {
            mote_jw_kstr(w, "instructions", req->system);
        }
        if (req->max_tokens > 0) {
            mote_jw_kint(w, "max_output_tokens", req->max_tokens);
        }
        write_tools(w, req);
        mote_jw_key(w, "input");
        mote_jw_arr(w);
        return;
    }
    if ((req->omit & MOTE_LLM_KEY_STREAM_OPTIONS) == 0) {
        mote_jw_key(w, "stream_options");
        mote_jw_obj(w);
        mote_jw_kbool(w, "include_usage", true);
        mote_jw_obj_end(w);
    }
    if (req->max_tokens > 0) {
        bool mc = (req->max_completion_tokens || (req->add & MOTE_LLM_KEY_MAX_COMPLETION) != 0) &&
                  (req->omit & MOTE_LLM_KEY_MAX_COMPLETION) == 0;

        mote_jw_key(w, mc ? "max_completion_tokens" : "max_tokens");
        mote_jw_int(w, req->max_tokens);
    }
    write_tools(w, req);
    mote_jw_key(w, "messages");
    mote_jw_arr(w);
    if (req->system != NULL && req->system[0] != '\0') {
        mote_jw_obj(w);
        mote_jw_kstr(w, "role", "system");
        mote_jw_kstr(w, "content", req->system);
        mote_jw_obj_end(w);
    }
}

/* ---- Anthropic: messages of content blocks -------------------------------------- */

/* A call's id as Anthropic takes it (^[a-zA-Z0-9_-]+$): as it is, or -
 * an id an OpenAI-compatible server gave ("functions.shell:0"), in a
 * conversation that moved to Anthropic - one made of its hash, the same
 * for the call and its result. */
static void a_id(struct mote_jw *w, const char *id)
{
    static const char hexd[] = "0123456789abcdef";
    size_t n = strlen(id), i;
    uint64_t h = 14695981039346656037u;
    char out[28];

    if (n > 0 && mote_word_chars(id, n)) {
        mote_jw_str(w, id);
        return;
    }
    for (i = 0; i < n; i++)
        h = (h ^ (unsigned char)id[i]) * 1099511628211u;
    memcpy(out, "toolu_mote_", 11);
    for (i = 0; i < 16; i++)
        out[11 + i] = hexd[(h >> (60 - 4 * i)) & 15u];
    out[27] = '\0';
    mote_jw_str(w, out);
}
/*
 * Consecutive parts of one role form one message. A message is opened by
 * its first block, so one whose parts all came to nothing is never sent
 * (the API merges the messages of one role around it). An answer's text
 * is one text block whatever its pieces; white space that ends a piece is
 * held (ws) until more text shows it is inside the answer, so no answer
 * is sent ending in white space (the final one would be refused) and an
 * answer of white space only is no block at all.
 */

/* Ends the answer text being written; white space held is dropped. */
static void a_end_text(struct mote_jw *w, struct mote_llm_wstate *ws)
{
    if (ws->text_open) {
        mote_jw_str_end(w);
        ws->text_open = false;
    }
    ws->ws_len = 0;
    ws->in_text = false;
}

/* Opens a content block in a message of `role`, closing the block and the
 * message before it as needed. */
static void a_block(struct mote_jw *w, struct mote_llm_wstate *ws, enum mote_role role,
                    const char *type)
{
    if (ws->block_open) {
        mote_jw_obj_end(w);
        ws->block_open = false;
    }
    if ((int)role != ws->open_role) {
        if (ws->open_role != 0) {
            mote_jw_arr_end(w);
            mote_jw_obj_end(w);
        }
        mote_jw_obj(w);
        mote_jw_kstr(w, "role", role == MOTE_ROLE_USER ? "user" : "assistant");
        mote_jw_key(w, "content");
        mote_jw_arr(w);
        ws->open_role = (int)role;
    }
    mote_jw_obj(w);
    ws->block_open = true; /* closed by the next block, or by the tail */
    mote_jw_kstr(w, "type", type);
}

/* Keeps the last MOTE_LLM_WS_HOLD bytes of the white space held and s[0..n)
 * (whole characters). */
static void hold(struct mote_llm_wstate *ws, const char *s, size_t n)
{
    size_t cap = sizeof(ws->ws), k = 0;

    if (n >= cap) {
        s += n - cap;
        n = cap;
        ws->ws_len = 0;
    } else if (ws->ws_len + n > cap) {
        size_t drop = ws->ws_len + n - cap;

        memmove(ws->ws, ws->ws + drop, ws->ws_len - drop);
        ws->ws_len = (uint8_t)(ws->ws_len - drop);
    }
    memcpy(ws->ws + ws->ws_len, s, n);
    ws->ws_len = (uint8_t)(ws->ws_len + n);
    while (k < ws->ws_len && ((unsigned char)ws->ws[k] & 0xC0u) == 0x80u)
        k++; /* a character cut at the front goes whole */
    memmove(ws->ws, ws->ws + k, ws->ws_len - k);
    ws->ws_len = (uint8_t)(ws->ws_len - k);
}

/* A piece of an answer's text. */
static void a_answer_text(struct mote_jw *w, struct mote_llm_wstate *ws, const struct mote_part *p)
{
    size_t body = trimmed(p->text, p->text_len);

    if (body > 0) {
        if (!ws->text_open) {
            a_block(w, ws, MOTE_ROLE_ASSISTANT, "text");
            mote_jw_key(w, "text");
            mote_jw_str_begin(w);
            ws->text_open = true;
        } else if (ws->ws_len > 0) {
            mote_jw_str_more(w, ws->ws, ws->ws_len);
        }
        ws->ws_len = 0;
        mote_jw_str_more(w, p->text, body);
    }
    if (ws->text_open)
        hold(ws, p->text + body, p->text_len - body);
    /* else: white space before any text of the answer is left out */
    ws->in_text = true;
    if (p->cut) {
        if (!ws->text_open) {
            a_block(w, ws, MOTE_ROLE_ASSISTANT, "text");
            mote_jw_kstr(w, "text", cut_note + 1);
        } else {
            mote_jw_str_more(w, cut_note, sizeof(cut_note) - 1);
        }
        a_end_text(w, ws);
    }
}

/* A tool call or result as text, for a request that offers no tools (the
 * API refuses tool blocks then: "Requests which include `tool_use` or
 * `tool_result` blocks must define tools."): the model still reads what
 * was called, with what, and what came back. */
static void a_tool_as_text(struct mote_jw *w, const struct mote_llm_req *req,
                           struct mote_llm_wstate *ws, const struct mote_part *p)
{
    bool call = p->type == MOTE_PART_TOOL_CALL;
    size_t body = call ? 0 : trimmed(p->text, p->text_len);

    a_block(w, ws, p->role, "text");
    mote_jw_key(w, "text");
    mote_jw_str_begin(w);
    if (call) {
        more_s(w, "[called the tool ");
        more_s(w, p->name);
        more_s(w, " (call ");
        more_s(w, p->id);
        more_s(w, ") with input ");
        if (p->input_len > 0)
            json_fixed(w, p->input, p->input_len, true);
        else
            more_s(w, "{}");
        more_s(w, "]");
    } else {
        more_s(w, p->is_error ? "[error from call " : "[result of call ");
        more_s(w, p->id);
        more_s(w, "]\n");
        if (body > 0)
            result_more(w, req, result_cap(req, ws), p->text, p->text_len);
        else if (p->is_error)
            mote_jw_str_more(w, no_message, sizeof(no_message) - 1);
        else
            mote_jw_str_more(w, no_output, sizeof(no_output) - 1);
    }
    mote_jw_str_end(w);
}

/* Ends the reasoning block being written (its open string). */
static void end_reason(struct mote_jw *w, struct mote_llm_wstate *ws)
{
    if (ws->rs_open == 1 || ws->rs_open == 3)
        mote_jw_str_end(w);
    ws->rs_open = 0;
}

/* A piece of an Anthropic thinking block (its "thinking" text, then its
 * "signature") or redacted_thinking block (its "data"): written byte for
 * byte as it came, the signature over it must match. */
static void a_reason(struct mote_jw *w, struct mote_llm_wstate *ws, const struct mote_part *p)
{
    uint8_t code = rs_code(p->fmt);

    if (ws->rs_open == 0 || ws->rs_block != p->block || ws->rs_code != code) {
        end_reason(w, ws);
        a_block(w, ws, MOTE_ROLE_ASSISTANT, code == RS_THINKING ? "thinking" : "redacted_thinking");
        ws->rs_open = 2;
        ws->rs_code = code;
        ws->rs_block = p->block;
        ws->rs_text = false;
        ws->last_thinking = true;
    }
    if (p->kind == 0 && code == RS_THINKING) {
        if (ws->rs_open != 1) {
            if (ws->rs_open == 3)
                return; /* (text after its signature: never from a stream) */
            mote_jw_key(w, "thinking");
            mote_jw_str_begin(w);
            ws->rs_open = 1;
            ws->rs_text = true;
        }
        mote_jw_str_more(w, p->text, p->text_len);
        return;
    }
    if (p->kind != 1)
        return;
    if (ws->rs_open != 3) {
        if (ws->rs_open == 1)
            mote_jw_str_end(w);
        if (code == RS_THINKING && !ws->rs_text) {
            mote_jw_kstr(w, "thinking", "");
        }
        mote_jw_key(w, code == RS_THINKING ? "signature" : "data");
        mote_jw_str_begin(w);
        ws->rs_open = 3;
    }
    mote_jw_str_more(w, p->text, p->text_len);
}

/* Opens the tool block of a call or result, with its id under `id_key`: 0
 * when it is open, 1 when the part went out as text (the request offers no
 * tools), <0 when the part stands under the wrong role. */
static int a_tool_open(struct mote_jw *w, const struct mote_llm_req *req,
                       struct mote_llm_wstate *ws, const struct mote_part *p, enum mote_role role,
                       const char *type, const char *id_key)
{
    if (p->role != role)
        return MOTE_ERR_INVAL;
    if (req->ntools == 0) {
        a_tool_as_text(w, req, ws, p);
        return 1;
    }
    a_block(w, ws, role, type);
    mote_jw_key(w, id_key);
    a_id(w, p->id);
    return 0;
}

static int anthropic_part(struct mote_jw *w, const struct mote_llm_req *req,
                          struct mote_llm_wstate *ws, const struct mote_part *p)
{
    int rc;

    if (p->type == MOTE_PART_REASONING) {
        if (p->role != MOTE_ROLE_ASSISTANT)
            return MOTE_ERR_INVAL;
        if (rs_sent(req, p)) {
            a_end_text(w, ws);
            a_reason(w, ws, p);
        }
        return 0;
    }
    end_reason(w, ws);
    ws->last_thinking = false;
    if (p->role == MOTE_ROLE_ASSISTANT && p->type == MOTE_PART_TEXT) {
        if (!ws->in_text)
            a_end_text(w, ws);
        a_answer_text(w, ws, p);
        return 0;
    }
    a_end_text(w, ws);
    switch (p->type) {
    case MOTE_PART_TEXT:
        if (trimmed(p->text, p->text_len) == 0)
            return 0; /* a block of white space is refused; nothing is lost */
        a_block(w, ws, p->role, "text");
        mote_jw_key(w, "text");
        mote_jw_strn(w, p->text, p->text_len);
        return 0;
    case MOTE_PART_TOOL_CALL:
        rc = a_tool_open(w, req, ws, p, MOTE_ROLE_ASSISTANT, "tool_use", "id");
        if (rc != 0)
            return rc < 0 ? rc : 0;
        mote_jw_kstr(w, "name", p->name);
        mote_jw_key(w, "input");
        json_fixed(w, p->input_len > 0 ? p->input : "{}", p->input_len > 0 ? p->input_len : 2,
                   false);
        return 0;
    case MOTE_PART_TOOL_RESULT:
        rc = a_tool_open(w, req, ws, p, MOTE_ROLE_USER, "tool_result", "tool_use_id");
        if (rc != 0)
            return rc < 0 ? rc : 0;
        mote_jw_key(w, "content");
        /* "content cannot be empty if `is_error` is true"; an empty or
         * white-space content would be a text block the API refuses. */
        if (trimmed(p->text, p->text_len) > 0) {
            uint32_t cap = result_cap(req, ws);

            mote_jw_str_begin(w);
            result_more(w, req, cap, p->text, p->text_len);
            mote_jw_str_end(w);
        } else {
            ws->nresults++;
            mote_jw_str(w, p->is_error ? no_message : no_output);
        }
        if (p->is_error) {
            mote_jw_kbool(w, "is_error", true);
        }
        return 0;
    default:
        return MOTE_ERR_INVAL;
    }
}

/* ---- OpenAI: chat messages --------------------------------------------------------- */

static void openai_close_assistant(struct mote_jw *w, struct mote_llm_wstate *ws)
{
    if (ws->text_open) {
        mote_jw_str_end(w);
        ws->text_open = false;
    }
    end_reason(w, ws);
    if (!ws->content_done) {
        mote_jw_key(w, "content"); /* (an answer of reasoning only) */
        mote_jw_str(w, "");
    }
    if (ws->in_calls)
        mote_jw_arr_end(w);
    mote_jw_obj_end(w);
    ws->in_assistant = ws->in_calls = ws->have_text = ws->content_done = false;
}

/* Opens an assistant message: its role (its content comes with the first
 * text or call). */
static void openai_open_assistant(struct mote_jw *w, struct mote_llm_wstate *ws)
{
    mote_jw_obj(w);
    mote_jw_kstr(w, "role", "assistant");
    ws->in_assistant = true;
    ws->content_done = false;
}

/* A piece of an answer's reasoning, as its assistant message's
 * reasoning_content (DeepSeek, Kimi: needed back). */
static void openai_reason(struct mote_jw *w, struct mote_llm_wstate *ws, const struct mote_part *p)
{
    if (ws->text_open) {
        mote_jw_str_end(w);
        ws->text_open = false;
    }
    /* reasoning after the message's content or calls: the next answer's */
    if (ws->in_assistant && (ws->content_done || ws->in_calls ||
                             (ws->rs_open != 0 && ws->rs_block != p->block)))
        openai_close_assistant(w, ws);
    if (!ws->in_assistant)
        openai_open_assistant(w, ws);
    if (ws->rs_open != 1) {
        mote_jw_key(w, "reasoning_content");
        mote_jw_str_begin(w);
        ws->rs_open = 1;
        ws->rs_block = p->block;
    }
    mote_jw_str_more(w, p->text, p->text_len);
}

/* After the text of an answer that was cut: said, and the string closed
 * (an answer that follows is a message of its own). */
static void openai_cut(struct mote_jw *w, struct mote_llm_wstate *ws, const struct mote_part *p)
{
    if (!p->cut)
        return;
    mote_jw_str_more(w, cut_note, sizeof(cut_note) - 1);
    mote_jw_str_end(w);
    ws->text_open = false;
}

/* User text is one message each; an assistant turn is one message with
 * "content" and "tool_calls"; each tool result is a "tool" message. */
static int openai_part(struct mote_jw *w, const struct mote_llm_req *req,
                       struct mote_llm_wstate *ws, const struct mote_part *p)
{
    bool assistant = p->role == MOTE_ROLE_ASSISTANT;

    if (p->type == MOTE_PART_REASONING) {
        if (!assistant)
            return MOTE_ERR_INVAL;
        if (rs_sent(req, p))
            openai_reason(w, ws, p);
        return 0;
    }
    end_reason(w, ws);
    /* Pieces of one answer's text are one content string. */
    if (assistant && p->type == MOTE_PART_TEXT && ws->text_open) {
        mote_jw_str_more(w, p->text, p->text_len);
        openai_cut(w, ws, p);
        return 0;
    }
    if (ws->text_open) {
        mote_jw_str_end(w);
        ws->text_open = false;
    }
    /* An assistant message ends with its turn, or when text follows. */
    if (ws->in_assistant &&
        (!assistant || (p->type == MOTE_PART_TEXT && (ws->in_calls || ws->have_text))))
        openai_close_assistant(w, ws);
    if (assistant) {
        if (!ws->in_assistant)
            openai_open_assistant(w, ws);
        if (!ws->content_done) {
            mote_jw_key(w, "content");
            ws->content_done = true;
            if (p->type == MOTE_PART_TEXT) {
                mote_jw_str_begin(w);
                mote_jw_str_more(w, p->text, p->text_len);
                ws->text_open = true;
                ws->have_text = true;
                openai_cut(w, ws, p);
                return 0;
            }
            mote_jw_null(w);
        }
        if (p->type != MOTE_PART_TOOL_CALL)
            return MOTE_ERR_INVAL;
        if (!ws->in_calls) {
            mote_jw_key(w, "tool_calls");
            mote_jw_arr(w);
            ws->in_calls = true;
        }
        mote_jw_obj(w);
        mote_jw_kstr(w, "id", p->id);
        mote_jw_kstr(w, "type", "function");
        mote_jw_key(w, "function");
        mote_jw_obj(w);
        mote_jw_kstr(w, "name", p->name);
        mote_jw_key(w, "arguments");
        mote_jw_str_begin(w);
        json_fixed(w, p->input_len > 0 ? p->input : "{}", p->input_len > 0 ? p->input_len : 2,
                   true);
        mote_jw_str_end(w);
        mote_jw_obj_end(w);
        if (p->extra != NULL && p->extra_len > 0 && sends(req, MOTE_LLM_KEY_EXTRA_CONTENT)) {
            /* the call's extras as they came (Gemini's thought signature) */
            mote_jw_key(w, "extra_content");
            json_fixed(w, p->extra, p->extra_len, false);
        }
        mote_jw_obj_end(w);
        return 0;
    }
    mote_jw_obj(w);
    if (p->type == MOTE_PART_TEXT) {
        mote_jw_kstr(w, "role", "user");
        mote_jw_key(w, "content");
        mote_jw_strn(w, p->text, p->text_len);
    } else if (p->type == MOTE_PART_TOOL_RESULT) {
        mote_jw_kstr(w, "role", "tool");
        mote_jw_kstr(w, "tool_call_id", p->id);
        mote_jw_key(w, "content");
        /* chat completions has no error flag: it is said in the text */
        if (p->is_error && trimmed(p->text, p->text_len) == 0) {
            ws->nresults++;
            mote_jw_str2(w, "Error: ", 7, no_message, sizeof(no_message) - 1);
        } else {
            uint32_t cap = result_cap(req, ws);

            mote_jw_str_begin(w);
            if (p->is_error)
                mote_jw_str_more(w, "Error: ", 7);
            result_more(w, req, cap, p->text, p->text_len);
            mote_jw_str_end(w);
        }
    } else {
        return MOTE_ERR_INVAL;
    }
    mote_jw_obj_end(w);
    return 0;
}

/* ---- the Responses API: input items -------------------------------------------------- */

/* Ends the open item: its string and its object. */
static void r_close(struct mote_jw *w, struct mote_llm_wstate *ws)
{
    if (ws->text_open || ws->rs_open == 3)
        mote_jw_str_end(w);
    if (ws->in_assistant || ws->rs_open != 0)
        mote_jw_obj_end(w);
    ws->text_open = ws->in_assistant = false;
    ws->rs_open = 0;
}

/* A message item of `role` whose content is the string opened here. */
static void r_message(struct mote_jw *w, struct mote_llm_wstate *ws, const char *role)
{
    r_close(w, ws);
    mote_jw_obj(w);
    mote_jw_kstr(w, "role", role);
    mote_jw_key(w, "content");
    mote_jw_str_begin(w);
    ws->in_assistant = ws->text_open = true;
}

/* Parts as the Responses API's input items: messages, reasoning items
 * (their encrypted_content, the current turn's), function calls and
 * their outputs. Without tools, a call and its output as text. */
static int responses_part(struct mote_jw *w, const struct mote_llm_req *req,
                          struct mote_llm_wstate *ws, const struct mote_part *p)
{
    bool assistant = p->role == MOTE_ROLE_ASSISTANT;

    if (p->type == MOTE_PART_REASONING) {
        if (!assistant)
            return MOTE_ERR_INVAL;
        if (rs_sent(req, p)) {
            if (ws->rs_open != 3 || ws->rs_block != p->block) {
                r_close(w, ws);
                mote_jw_obj(w);
                mote_jw_kstr(w, "type", "reasoning");
                mote_jw_key(w, "summary");
                mote_jw_arr(w);
                mote_jw_arr_end(w);
                mote_jw_key(w, "encrypted_content");
                mote_jw_str_begin(w);
                ws->rs_open = 3;
                ws->rs_block = p->block;
            }
            mote_jw_str_more(w, p->text, p->text_len);
        }
        return 0;
    }
    if (p->type == MOTE_PART_TEXT) {
        if (!(assistant && ws->text_open && ws->in_text)) /* (an answer's pieces: one text) */
            r_message(w, ws, assistant ? "assistant" : "user");
        mote_jw_str_more(w, p->text, p->text_len);
        ws->in_text = assistant && !p->cut;
        if (p->cut)
            mote_jw_str_more(w, cut_note, sizeof(cut_note) - 1);
        return 0;
    }
    ws->in_text = false;
    if ((p->type == MOTE_PART_TOOL_CALL) != assistant || (p->type != MOTE_PART_TOOL_CALL &&
                                                          p->type != MOTE_PART_TOOL_RESULT))
        return MOTE_ERR_INVAL;
    if (req->ntools == 0) {
        r_message(w, ws, assistant ? "assistant" : "user");
        more_s(w, assistant ? "[called the tool " : p->is_error ? "[error from call "
                                                                : "[result of call ");
        more_s(w, assistant ? p->name : p->id);
        if (assistant) {
            more_s(w, " (call ");
            more_s(w, p->id);
            more_s(w, ") with input ");
            json_fixed(w, p->input_len > 0 ? p->input : "{}", p->input_len > 0 ? p->input_len : 2,
                       true);
        }
        more_s(w, "]\n");
        if (!assistant)
            result_more(w, req, result_cap(req, ws), p->text, p->text_len);
        return 0;
    }
    r_close(w, ws);
    mote_jw_obj(w);
    mote_jw_kstr(w, "type", assistant ? "function_call" : "function_call_output");
    mote_jw_kstr(w, "call_id", p->id);
    if (assistant) {
        mote_jw_kstr(w, "name", p->name);
        mote_jw_key(w, "arguments");
        mote_jw_str_begin(w);
        json_fixed(w, p->input_len > 0 ? p->input : "{}", p->input_len > 0 ? p->input_len : 2,
                   true);
    } else {
        uint32_t cap = result_cap(req, ws);

        mote_jw_key(w, "output");
        mote_jw_str_begin(w);
        if (p->is_error)
            mote_jw_str_more(w, "Error: ", 7);
        if (trimmed(p->text, p->text_len) > 0)
            result_more(w, req, cap, p->text, p->text_len);
        else
            more_s(w, p->is_error ? no_message : no_output);
    }
    mote_jw_str_end(w);
    mote_jw_obj_end(w);
    return 0;
}

static int write_part(struct mote_jw *w, const struct mote_llm_req *req,
                      struct mote_llm_wstate *ws, const struct mote_part *p)
{
    return req->provider == MOTE_PROVIDER_ANTHROPIC           ? anthropic_part(w, req, ws, p)
           : req->provider == MOTE_PROVIDER_OPENAI_RESPONSES ? responses_part(w, req, ws, p)
                                                             : openai_part(w, req, ws, p);
}

static void write_tail(struct mote_jw *w, const struct mote_llm_req *req,
                       struct mote_llm_wstate *ws)
{
    if (req->provider == MOTE_PROVIDER_ANTHROPIC) {
        a_end_text(w, ws); /* the last answer's text ends here: no white space after it */
        end_reason(w, ws);
        if (ws->block_open) {
            /* The conversation so far is cached up to its last block: the
             * next request of a tool loop reads it instead of paying again
             * (a thinking block takes no breakpoint of its own). */
            if (cache_on(req) && !ws->last_thinking)
                cache_mark(w);
            mote_jw_obj_end(w);
            ws->block_open = false;
        }
        if (ws->open_role != 0) {
            mote_jw_arr_end(w);
            mote_jw_obj_end(w);
        }
    } else if (req->provider == MOTE_PROVIDER_OPENAI_RESPONSES) {
        r_close(w, ws);
    } else if (ws->in_assistant) {
        openai_close_assistant(w, ws);
    }
    mote_jw_arr_end(w); /* messages, input */
    mote_jw_obj_end(w);
}

/* ---- in one go, counted, or pulled --------------------------------------------------- */

int mote_llm_write_body(const struct mote_llm_req *req, mote_sink_fn sink, void *arg)
{
    struct mote_jw w;
    struct mote_llm_wstate ws;
    struct mote_part p;
    unsigned i;
    int rc;

    if (req->parts == NULL || req->model == NULL)
        return MOTE_ERR_INVAL;
    mote_jw_init(&w, sink, arg);
    write_head(&w, req, &ws);
    for (i = 0; w.err == 0 && (rc = req->parts(req->parts_arg, i, &p)) != 0; i++) {
        if (rc < 0)
            return rc;
        if ((rc = write_part(&w, req, &ws, &p)) < 0)
            return rc;
    }
    write_tail(&w, req, &ws);
    return w.err;
}

static int count_bytes(void *arg, const char *p, size_t n)
{
    (void)p;
    *(int64_t *)arg += (int64_t)n;
    return 0;
}

int64_t mote_llm_body_length(const struct mote_llm_req *req)
{
    int64_t n = 0;
    int rc = mote_llm_write_body(req, count_bytes, &n);

    return rc < 0 ? rc : n;
}

void mote_llm_body_init(struct mote_llm_body *b, const struct mote_llm_req *req)
{
    memset(b, 0, sizeof(*b));
    b->req = req;
}

/* A sink that skips the bytes already read and fills the caller's buffer;
 * when it is full the generation stops with FULL_STOP. */
#define FULL_STOP (-20000)
struct capture {
    uint64_t skip;
    char *buf;
    size_t cap;
    size_t got;
};

static int capture_sink(void *arg, const char *p, size_t n)
{
    struct capture *c = arg;
    size_t take;

    if (c->skip >= n) {
        c->skip -= n;
        return 0;
    }
    p += c->skip;
    n -= (size_t)c->skip;
    c->skip = 0;
    take = n < c->cap - c->got ? n : c->cap - c->got;
    memcpy(c->buf + c->got, p, take);
    c->got += take;
    return take < n ? FULL_STOP : 0;
}

int mote_llm_body_read(struct mote_llm_body *b, char *buf, size_t cap)
{
    size_t total = 0;

    while (!b->done && total < cap) {
        struct capture c = {b->off, buf + total, cap - total, 0};
        struct mote_jw w = b->jw;
        struct mote_llm_wstate ws = b->ws;
        int rc = 0;

        w.sink = capture_sink;
        w.arg = &c;
        if (b->unit == 0) {
            mote_jw_init(&w, capture_sink, &c);
            write_head(&w, b->req, &ws);
        } else if (!b->tail) {
            struct mote_part p;

            rc = b->req->parts(b->req->parts_arg, b->unit - 1, &p);
            if (rc < 0)
                return rc;
            if (rc == 0) {
                b->tail = true; /* no such part: the tail comes next */
                continue;
            }
            rc = write_part(&w, b->req, &ws, &p);
            if (rc < 0)
                return rc;
        } else {
            write_tail(&w, b->req, &ws);
        }
        total += c.got;
        if (w.err == FULL_STOP) {
            b->off += c.got; /* this unit goes on in the next read */
            break;
        }
        if (w.err < 0)
            return w.err;
        /* The unit is complete: its end state starts the next one. */
        b->jw = w;
        b->ws = ws;
        b->off = 0;
        if (b->tail)
            b->done = true;
        else
            b->unit++;
    }
    return (int)total;
}
