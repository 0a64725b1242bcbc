/*
 * llm_error.c - what a model API's error says: its reason in the
 * provider's own words whatever the shape of the body (an object, an
 * array of them, a message that is itself an object of validation
 * details, plain text or an HTML page), its kind, whether a retry
 * may help, and whether it says the request is over the model's context
 * window (and the numbers it gives).
 */
#include "mote/mote_llm.h"

#include <string.h>

#include "util.h"

/* ---- the reason, whatever the shape ---------------------------------------- */

/* Appends the unescaped string token t to sb. */
static void put_str(struct mote_sb *sb, const struct mote_json *j, int t)
{
    int n;

    if (sb->len + 1 >= sb->cap)
        return;
    n = mote_json_str(j, t, sb->p + sb->len, sb->cap - sb->len);
    if (n == MOTE_ERR_TOO_LARGE)
        sb->len += strlen(sb->p + sb->len);
    else if (n > 0)
        sb->len += (size_t)n;
    sb->p[sb->len] = '\0';
}

/* A validation detail's place, as pydantic-style servers give it (Mistral,
 * vLLM: "loc": ["body", "stream_options", "include_usage"]): its parts
 * joined with dots. */
static void put_loc(struct mote_sb *sb, const struct mote_json *j, int loc)
{
    int k, e;

    for (k = 0; (e = mote_json_elem(j, loc, k)) >= 0 && k < 8; k++) {
        size_t n;
        const char *raw = mote_json_raw(j, e, &n);

        if (k > 0)
            mote_sb_s(sb, ".");
        if (mote_json_type_of(j, e) == MOTE_JSON_STRING)
            put_str(sb, j, e);
        else
            mote_sb_n(sb, raw, n);
    }
}

/* The reason token t gives: a string as it is; an array, its first
 * element (and how many more); an object, its "loc" and "msg" (a
 * validation detail) or else the first of its members that say why. */
static void put_reason(struct mote_sb *sb, const struct mote_json *j, int t, unsigned depth)
{
    static const char *const why[] = {"message", "msg", "detail", "error", "error_message",
                                      "description", "reason"};
    enum mote_json_type ty = mote_json_type_of(j, t);
    size_t i;

    if (depth > 4)
        return;
    if (ty == MOTE_JSON_STRING) {
        put_str(sb, j, t);
        return;
    }
    if (ty == MOTE_JSON_ARRAY) {
        int first = mote_json_elem(j, t, 0);

        if (first < 0)
            return;
        put_reason(sb, j, first, depth + 1);
        if (j->tok[t].size > 1)
            mote_sb_num(sb, " (and ", (uint64_t)j->tok[t].size - 1, " more)");
        return;
    }
    if (ty != MOTE_JSON_OBJECT)
        return;
    if (mote_json_type_of(j, mote_json_member(j, t, "loc")) == MOTE_JSON_ARRAY &&
        mote_json_type_of(j, mote_json_member(j, t, "msg")) == MOTE_JSON_STRING) {
        put_loc(sb, j, mote_json_member(j, t, "loc"));
        mote_sb_s(sb, ": ");
        put_str(sb, j, mote_json_member(j, t, "msg"));
        return;
    }
    for (i = 0; i < MOTE_ARRAY_LEN(why); i++) {
        int m = mote_json_member(j, t, why[i]);
        enum mote_json_type mt = mote_json_type_of(j, m);

        if (mt == MOTE_JSON_STRING || mt == MOTE_JSON_OBJECT || mt == MOTE_JSON_ARRAY) {
            size_t before = sb->len;

            put_reason(sb, j, m, depth + 1);
            if (sb->len > before)
                return;
        }
    }
}

/* Bytes of the UTF-8 character at s (n left) when it is a valid one,
 * else 0. */
static size_t utf8_char(const char *s, size_t n)
{
    unsigned char c = (unsigned char)s[0];
    size_t k = c < 0x80u ? 1 : c >= 0xF0u ? 4 : c >= 0xE0u ? 3 : c >= 0xC0u ? 2 : 0;

    if (k == 0 || k > n)
        return 0;
    return mote_utf8_valid(s, k) ? k : 0;
}

/* Makes msg one line: control characters and runs of white space become
 * one space; no space at either end. */
static void one_line(char *msg)
{
    size_t r = 0, w = 0;
    bool space = true; /* (drops white space at the start) */

    for (; msg[r] != '\0'; r++) {
        unsigned char c = (unsigned char)msg[r];

        if (c <= 0x20u || c == 0x7Fu) {
            if (!space)
                msg[w++] = ' ';
            space = true;
            continue;
        }
        msg[w++] = (char)c;
        space = false;
    }
    while (w > 0 && msg[w - 1] == ' ')
        w--;
    msg[w] = '\0';
}

/* A body that is not JSON: plain text as it is, an HTML page by its
 * title (or its text without the tags), on one line, a byte that is not
 * UTF-8 as '?'. */
static void plain_reason(const char *body, size_t len, char *msg, size_t cap)
{
    struct mote_sb sb;
    size_t i = 0, end = len;
    bool html = false;

    for (i = 0; i + 7 <= len; i++) {
        if (mote_ascii_ieq(body + i, "<title>", 7)) {
            size_t k;

            for (k = i + 7; k + 8 <= len && !mote_ascii_ieq(body + k, "</title>", 8); k++)
                ;
            end = k + 8 <= len ? k : len;
            i += 7;
            break;
        }
    }
    if (i + 7 > len) {
        i = 0;
        while (i < len && (body[i] == ' ' || body[i] == '\n' || body[i] == '\r' || body[i] == '\t'))
            i++;
        html = i < len && body[i] == '<';
        i = 0;
    }
    mote_sb_init(&sb, msg, cap);
    while (i < end && sb.len + 1 < cap) {
        size_t k;

        if (html && body[i] == '<') {
            while (i < end && body[i] != '>')
                i++;
            i++;
            mote_sb_s(&sb, " ");
            continue;
        }
        k = utf8_char(body + i, end - i);
        if (k == 0) {
            mote_sb_s(&sb, "?");
            i++;
            continue;
        }
        mote_sb_n(&sb, body + i, k);
        i += k;
    }
    one_line(msg);
}

/* A JSON body cut short (only its start was kept): the string after the
 * first `"key"` and its colon, unescaped as far as it goes. */
static bool scan_str(const char *body, size_t len, const char *key, char *out, size_t cap)
{
    size_t kn = strlen(key), i, s, e;

    for (i = 0; i + kn + 2 < len; i++) {
        if (body[i] != '"' || memcmp(body + i + 1, key, kn) != 0 || body[i + 1 + kn] != '"')
            continue;
        s = i + kn + 2;
        while (s < len && (body[s] == ' ' || body[s] == ':' || body[s] == '\n' || body[s] == '\t'))
            s++;
        if (s >= len || body[s] != '"')
            continue;
        s++;
        for (e = s; e < len && body[e] != '"'; e++) {
            if (body[e] == '\\')
                e++;
        }
        if (e > len)
            e = len;
        for (;;) {
            int r = e > s ? mote_json_unescape(body + s, e - s, out, cap) : 0;

            if (r >= 0 || r == MOTE_ERR_TOO_LARGE)
                break;
            e--; /* an escape cut at the end */
        }
        return e > s;
    }
    return false;
}

/* ---- the kind ------------------------------------------------------------------ */

static bool retryable_kind(const char *k)
{
    return strcmp(k, "overloaded_error") == 0 || strcmp(k, "rate_limit_error") == 0 ||
           strcmp(k, "api_error") == 0 || strcmp(k, "rate_limit_exceeded") == 0 ||
           strcmp(k, "server_error") == 0 || strcmp(k, "tokens") == 0 ||
           strcmp(k, "requests") == 0 || strcmp(k, "RESOURCE_EXHAUSTED") == 0 ||
           strcmp(k, "UNAVAILABLE") == 0;
}

static bool final_kind(const char *k)
{
    return strcmp(k, "authentication_error") == 0 || strcmp(k, "invalid_request_error") == 0 ||
           strcmp(k, "permission_error") == 0 || strcmp(k, "invalid_api_key") == 0 ||
           strcmp(k, "insufficient_quota") == 0 || strcmp(k, "INVALID_ARGUMENT") == 0 ||
           strcmp(k, "PERMISSION_DENIED") == 0 || strcmp(k, "UNAUTHENTICATED") == 0;
}

bool mote_llm_classify_error(const char *body, size_t len, int http_status, char *type,
                             size_t type_cap, char *msg, size_t msg_cap, struct mote_json *scratch)
{
    struct mote_json *jp = scratch;
    bool retry;
    char code[64];

    mote_str_copy(type, type_cap, "");
    mote_str_copy(msg, msg_cap, "");
    code[0] = '\0';
    retry = http_status == 429 || http_status == 500 || http_status == 502 ||
            http_status == 503 || http_status == 504 || http_status == 529;
    if (len > 0 && mote_json_parse(jp, body, len) > 0) {
        int root = 0, e, t;
        struct mote_sb sb;

        /* Gemini answers with an array of error objects. */
        if (mote_json_type_of(jp, root) == MOTE_JSON_ARRAY)
            root = mote_json_elem(jp, root, 0);
        e = mote_json_member(jp, root, "error");
        if (mote_json_type_of(jp, e) != MOTE_JSON_OBJECT)
            e = mote_json_type_of(jp, e) == MOTE_JSON_STRING ? -1 : root;
        /* The kind: Anthropic names it in `type`; OpenAI in `code` (its
         * `type` may be a coarse "requests" or "tokens"); Google in
         * `status`: each counts. */
        t = mote_json_member(jp, e, "type");
        if (mote_json_type_of(jp, t) != MOTE_JSON_STRING ||
            (e == root && mote_json_eq(jp, t, "error")))
            t = mote_json_member(jp, e, "status");
        if (mote_json_type_of(jp, t) == MOTE_JSON_STRING)
            (void)mote_json_str(jp, t, type, type_cap);
        if (mote_json_type_of(jp, mote_json_member(jp, e, "code")) != MOTE_JSON_STRING ||
            mote_json_str(jp, mote_json_member(jp, e, "code"), code, sizeof(code)) < 0)
            code[0] = '\0';
        if (type[0] == '\0')
            mote_str_copy(type, type_cap, code);
        mote_sb_init(&sb, msg, msg_cap);
        put_reason(&sb, jp, e >= 0 ? e : root, 0);
        one_line(msg);
    } else if (len > 0 && (body[0] == '{' || body[0] == '[')) {
        /* JSON cut short (a long body whose start was kept). */
        if (!scan_str(body, len, "message", msg, msg_cap) &&
            !scan_str(body, len, "msg", msg, msg_cap))
            (void)scan_str(body, len, "detail", msg, msg_cap);
        (void)scan_str(body, len, "type", type, type_cap);
        if (strcmp(type, "error") == 0)
            type[0] = '\0';
        one_line(msg);
    } else if (len > 0) {
        plain_reason(body, len, msg, msg_cap);
    }
    if (retryable_kind(type) || retryable_kind(code))
        retry = true;
    if (final_kind(type) || final_kind(code) || http_status == 400 || http_status == 401 ||
        http_status == 403 || http_status == 422)
        retry = false;
    return retry;
}

/* ---- over the context window ------------------------------------------------ */

/* Where `word` (any case) is in s[0..len), or -1. */
static long find_i(const char *s, size_t len, const char *word)
{
    size_t n = strlen(word), i;

    for (i = 0; i + n <= len; i++) {
        if (mote_ascii_ieq(s + i, word, n))
            return (long)i;
    }
    return -1;
}

/* The first number at or after s[at] (within 48 bytes), or 0. */
static uint32_t number_after(const char *s, size_t len, long at)
{
    size_t i, end;
    uint64_t v = 0;

    if (at < 0)
        return 0;
    end = (size_t)at + 48 < len ? (size_t)at + 48 : len;
    for (i = (size_t)at; i < end && (s[i] < '0' || s[i] > '9'); i++)
        ;
    for (; i < end && s[i] >= '0' && s[i] <= '9' && v < 0xFFFFFFFFu; i++)
        v = v * 10u + (uint64_t)(s[i] - '0');
    return v > 0xFFFFFFFFu ? 0xFFFFFFFFu : (uint32_t)v;
}

bool mote_llm_overflow(const char *body, size_t len, uint32_t *limit, uint32_t *used)
{
    /* How each server says it (docs/LLM.md, "Over the context window"). */
    static const char *const says[] = {
        "exceed_context_size_error",       /* llama.cpp */
        "context_length_exceeded",         /* OpenAI, Groq */
        "prompt is too long",              /* Anthropic */
        "maximum context length",          /* vLLM, DeepSeek, OpenRouter, Mistral */
        "exceeds the available context",   /* llama.cpp's message */
        "exceeds the maximum number of tokens", /* Gemini */
        "context window",                  /* others' "exceeds the context window" */
        "exceeded model token limit",      /* Moonshot (Kimi) */
        "too many tokens",
        "reduce the length of the messages",
    };
    size_t i;
    long at;

    *limit = *used = 0;
    for (i = 0; i < MOTE_ARRAY_LEN(says); i++) {
        if (find_i(body, len, says[i]) >= 0)
            break;
    }
    if (i == MOTE_ARRAY_LEN(says))
        return false;
    /* The numbers, where the server gives them. */
    if ((at = find_i(body, len, "\"n_ctx\"")) >= 0) { /* llama.cpp */
        *limit = number_after(body, len, at);
        *used = number_after(body, len, find_i(body, len, "\"n_prompt_tokens\""));
    } else if ((at = find_i(body, len, "maximum context length is")) >= 0) {
        /* OpenAI, vLLM: "... is 4096 tokens. However, you requested 5000 tokens" */
        *limit = number_after(body, len, at);
        *used = number_after(body, len, find_i(body, len, "resulted in"));
        if (*used == 0)
            *used = number_after(body, len, find_i(body, len, "requested"));
    } else if ((at = find_i(body, len, "prompt is too long")) >= 0) {
        /* Anthropic: "prompt is too long: 210000 tokens > 200000 maximum" */
        *used = number_after(body, len, at);
        *limit = number_after(body, len, find_i(body, len, " > "));
    } else if ((at = find_i(body, len, "input token count")) >= 0) {
        /* Gemini: "The input token count (5000) exceeds the maximum number of
         * tokens allowed (4096)" */
        *used = number_after(body, len, at);
        *limit = number_after(body, len, find_i(body, len, "tokens allowed"));
    } else if ((at = find_i(body, len, "exceeded model token limit")) >= 0) {
        /* Moonshot: "Your request exceeded model token limit: 262144
         * (requested: 269030)" */
        *limit = number_after(body, len, at);
        *used = number_after(body, len, find_i(body, len, "requested"));
    } else if ((at = find_i(body, len, "prompt contains")) >= 0) {
        /* Mistral: "Prompt contains 40000 tokens, too large for model with 32768
         * maximum context length" */
        *used = number_after(body, len, at);
        *limit = number_after(body, len, find_i(body, len, "model with"));
    }
    return true;
}
