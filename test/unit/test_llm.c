/* test_llm.c - provider stream decoding on the recorded fixtures, error
 * classification, and request bodies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "body_pull.h"
#include "fixtures.h"
#include "mote/mote_llm.h"
#include "mote/mote_sse.h"
#include "sse_steps.h"
#include "text_out.h"

/* What a decoded stream amounted to. */
struct transcript {
    char text[16384];
    size_t text_len;
    char thinking[16384];
    size_t thinking_len;
    int ncalls;
    char call_name[8][64];
    char call_id[8][128];
    char call_args[8][2048];
    int call_started[8];
    int call_ended[8];
    int over_started, over_ended; /* calls past the table (MOTE_LLM_SLOT_OVER) */
    char over_id[128];
    char stop[32];
    int stops;
    uint64_t in_tokens, out_tokens;
    uint64_t cache_read, cache_write;
    int done;
    int errors;
    char err_type[64];
    char err_msg[256];
    bool err_retryable;
    uint64_t order_hash;
};

static struct mote_sse sse;
static struct mote_llm_dec dec;

static void mix(struct transcript *t, const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t i;

    for (i = 0; i < n; i++)
        t->order_hash = (t->order_hash ^ b[i]) * 1099511628211u;
}

static int on_llm(void *arg, const struct mote_llm_event *ev)
{
    struct transcript *t = arg;

    mix(t, &ev->type, sizeof(ev->type));
    mix(t, &ev->slot, sizeof(ev->slot));
    if (ev->text != NULL)
        mix(t, ev->text, ev->len);
    switch (ev->type) {
    case MOTE_LLM_TEXT:
        assert_true(t->text_len + ev->len < sizeof(t->text));
        memcpy(t->text + t->text_len, ev->text, ev->len);
        t->text_len += ev->len;
        t->text[t->text_len] = '\0';
        break;
    case MOTE_LLM_THINKING:
        assert_true(t->thinking_len + ev->len < sizeof(t->thinking));
        memcpy(t->thinking + t->thinking_len, ev->text, ev->len);
        t->thinking_len += ev->len;
        t->thinking[t->thinking_len] = '\0';
        break;
    case MOTE_LLM_TOOL_START:
        if (ev->slot == MOTE_LLM_SLOT_OVER) {
            assert_int_equal(t->over_started, t->over_ended);
            t->over_started++;
            strcpy(t->over_id, ev->id);
            break;
        }
        assert_int_equal(ev->slot, t->ncalls);
        strcpy(t->call_name[ev->slot], ev->name);
        strcpy(t->call_id[ev->slot], ev->id);
        t->call_started[ev->slot]++;
        t->ncalls++;
        break;
    case MOTE_LLM_TOOL_ARGS:
        if (ev->slot == MOTE_LLM_SLOT_OVER) {
            assert_true(t->over_started == t->over_ended + 1);
            break;
        }
        assert_true(ev->slot < (unsigned)t->ncalls);
        assert_int_equal(t->call_ended[ev->slot], 0);
        strncat(t->call_args[ev->slot], ev->text, ev->len);
        break;
    case MOTE_LLM_TOOL_END:
        if (ev->slot == MOTE_LLM_SLOT_OVER) {
            t->over_ended++;
            break;
        }
        t->call_ended[ev->slot]++;
        break;
    case MOTE_LLM_STOP:
        strcpy(t->stop, ev->text);
        t->stops++;
        break;
    case MOTE_LLM_USAGE:
        t->in_tokens = ev->in_tokens;
        t->out_tokens = ev->out_tokens;
        t->cache_read = ev->cache_read;
        t->cache_write = ev->cache_write;
        break;
    case MOTE_LLM_ERROR:
        t->errors++;
        strcpy(t->err_type, ev->id);
        strcpy(t->err_msg, ev->text);
        t->err_retryable = ev->retryable;
        break;
    case MOTE_LLM_DONE:
        t->done++;
        break;
    case MOTE_LLM_TOOL_EXTRA:
    case MOTE_LLM_THINKING_SIG:
    case MOTE_LLM_THINKING_ID:
        break; /* (test_providers.c) */
    }
    return 0;
}

static int on_sse(void *arg, const char *event, const char *data, size_t len, const char *id)
{
    (void)arg, (void)id;
    return mote_llm_dec_event(&dec, event, data, len);
}

/* Decodes fixture `name` fed in pieces of `step` bytes (0: whole). The
 * recorded files that end without the blank line get it added (SOURCES.md:
 * an artifact of the files, not of the wire). */
static int decode(struct transcript *t, enum mote_provider prov, const char *buf, size_t n,
                  size_t step)
{
    memset(t, 0, sizeof(*t));
    mote_llm_dec_init(&dec, prov, on_llm, t);
    mote_sse_init(&sse, on_sse, NULL);
    return sse_feed_steps(&sse, buf, n, step);
}

static struct transcript t1, t2;

static char *load(const char *name, size_t *n)
{
    return fixture_read(name, n);
}

/* Decodes whole and byte by byte; both must agree. */
#define DECODE_OR_SKIP(prov, name)                                    \
    size_t n_ = 0;                                                      \
    char *buf_ = load((name), &n_);                                   \
    if (buf_ == NULL) {                                               \
        printf("skipped: fixture %s is absent\n", (name));            \
        skip();                                                       \
    }                                                                 \
    assert_int_equal(decode(&t2, (prov), buf_, n_, 1), 0);            \
    assert_int_equal(decode(&t1, (prov), buf_, n_, 0), 0);            \
    assert_true(t1.order_hash == t2.order_hash);                      \
    free(buf_)

static void assert_calls_complete(const struct transcript *t)
{
    static struct mote_json js;
    int i;

    for (i = 0; i < t->ncalls; i++) {
        assert_int_equal(t->call_started[i], 1);
        assert_int_equal(t->call_ended[i], 1);
        assert_true(t->call_id[i][0] != '\0');
        /* The assembled arguments are one JSON object. */
        assert_true(mote_json_parse(&js, t->call_args[i], strlen(t->call_args[i])) > 0);
        assert_int_equal(mote_json_type_of(&js, 0), MOTE_JSON_OBJECT);
    }
}

static void test_anthropic_text(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_ANTHROPIC, "anthropic-text.sse");
    assert_true(t1.text_len > 0);
    assert_int_equal(t1.ncalls, 0);
    assert_string_equal(t1.stop, "end_turn");
    assert_int_equal(t1.done, 1);
    assert_int_equal(t1.errors, 0);
    assert_true(t1.out_tokens > 0);
    printf("  text: %s\n", t1.text);
}

static void test_anthropic_tool_use(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_ANTHROPIC, "anthropic-tool-use.sse");
    assert_int_equal(t1.ncalls, 1);
    assert_calls_complete(&t1);
    assert_string_equal(t1.stop, "tool_use");
    assert_int_equal(t1.done, 1);
    printf("  %s(%s) after text \"%s\"\n", t1.call_name[0], t1.call_args[0], t1.text);
}

static void test_anthropic_parallel(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_ANTHROPIC, "anthropic-tool-use-parallel-live.sse");
    assert_int_equal(t1.ncalls, 2);
    assert_calls_complete(&t1);
    assert_string_not_equal(t1.call_id[0], t1.call_id[1]);
    assert_string_equal(t1.stop, "tool_use");
    assert_true(t1.text_len > 0);
}

static void test_anthropic_thinking_dropped(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_ANTHROPIC, "anthropic-thinking-live.sse");
    assert_int_equal(t1.ncalls, 1);
    assert_calls_complete(&t1);
    /* The stream has thinking, then a tool call, and no text block: no
     * thinking text leaks into the answer; it is told apart. */
    assert_int_equal(t1.text_len, 0);
    assert_true(t1.thinking_len > 0);
    assert_int_equal(t1.done, 1);
    assert_int_equal(t1.errors, 0);
    printf("  answer text: \"%s\"\n", t1.text);
}

/* OpenAI-compatible servers (DeepSeek, llama.cpp) put thinking in
 * reasoning_content: told as thinking, never as the answer. */
static void test_openai_reasoning_is_thinking(void **state)
{
    static struct transcript t;
    static const char *const ev[] = {
        "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"reasoning_content\":"
        "\"Let me think.\"}}]}",
        "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Four.\"}}]}",
        "{\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}",
        "[DONE]"};
    unsigned i;

    (void)state;
    memset(&t, 0, sizeof(t));
    mote_llm_dec_init(&dec, MOTE_PROVIDER_OPENAI, on_llm, &t);
    for (i = 0; i < 4; i++)
        assert_int_equal(mote_llm_dec_event(&dec, "", ev[i], strlen(ev[i])), 0);
    assert_string_equal(t.thinking, "Let me think.");
    assert_string_equal(t.text, "Four.");
    assert_int_equal(t.done, 1);
}

static void test_anthropic_max_tokens(void **state)
{
    static struct mote_json js;

    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_ANTHROPIC, "anthropic-max-tokens-partial-json.sse");
    assert_string_equal(t1.stop, "max_tokens");
    assert_true(t1.ncalls >= 1);
    /* The cut-off input is ended (no dangling call) but is not valid JSON. */
    assert_int_equal(t1.call_ended[t1.ncalls - 1], 1);
    assert_true(mote_json_parse(&js, t1.call_args[t1.ncalls - 1],
                                strlen(t1.call_args[t1.ncalls - 1])) < 0);
}

static void test_anthropic_web_search_long_line(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_ANTHROPIC, "anthropic-web-search-long-line.sse");
    assert_int_equal(t1.errors, 0);
    assert_int_equal(t1.done, 1);
    assert_int_equal(t1.ncalls, 0); /* server tool use is not ours to run */
    assert_true(t1.text_len > 100);
}

static void test_anthropic_error_event(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_ANTHROPIC, "anthropic-error-event-docs.sse");
    assert_int_equal(t1.errors, 1);
    assert_string_equal(t1.err_type, "overloaded_error");
    assert_string_equal(t1.err_msg, "Overloaded");
    assert_true(t1.err_retryable);
    assert_int_equal(t1.done, 0);
}

static void test_openai_text(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_OPENAI, "openai-chat-text.sse");
    assert_true(t1.text_len > 0);
    assert_string_equal(t1.stop, "end_turn");
    assert_int_equal(t1.done, 1);
    printf("  text: %.80s... usage %llu/%llu\n", t1.text, (unsigned long long)t1.in_tokens,
           (unsigned long long)t1.out_tokens);
}

static void test_openai_parallel(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_OPENAI, "openai-chat-tool-calls-parallel.sse");
    assert_int_equal(t1.ncalls, 2);
    assert_calls_complete(&t1);
    assert_string_equal(t1.stop, "tool_use");
    assert_true(t1.in_tokens > 0 && t1.out_tokens > 0);
    assert_int_equal(t1.done, 1);
}

static void test_openai_obfuscation(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_OPENAI, "openai-chat-parallel-obfuscation-live.sse");
    assert_int_equal(t1.ncalls, 2);
    assert_calls_complete(&t1);
    assert_true(t1.out_tokens > 0);
}

static void test_openai_n3_first_choice_only(void **state)
{
    struct transcript all;
    size_t n = 0;
    char *buf;

    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_OPENAI, "openai-chat-n3-choices.sse");
    assert_true(t1.text_len > 0);
    assert_int_equal(t1.stops, 1);
    /* The other choices' text did not get in: the answer is shorter than
     * all the content in the file. */
    buf = load("openai-chat-n3-choices.sse", &n);
    memset(&all, 0, sizeof(all));
    assert_true(t1.text_len * 2 < n);
    free(buf);
}

static void test_llamacpp(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_OPENAI, "llamacpp-chat-tool-call.sse");
    assert_int_equal(t1.ncalls, 1);
    assert_calls_complete(&t1);
    assert_int_equal(t1.done, 1);
    printf("  %s(%s)\n", t1.call_name[0], t1.call_args[0]);
}

static void test_deepseek(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_OPENAI, "deepseek-chat-text.sse");
    assert_true(strstr(t1.text, "\xf0\x9f") != NULL); /* the 4-byte emoji survived */
    assert_true(t1.in_tokens > 0 && t1.out_tokens > 0);
    assert_string_equal(t1.stop, "end_turn");
}

static void test_openrouter_repeated_finish(void **state)
{
    (void)state;
    DECODE_OR_SKIP(MOTE_PROVIDER_OPENAI, "openrouter-chat-comments.sse");
    assert_int_equal(t1.stops, 1);
    assert_calls_complete(&t1);
    assert_int_equal(t1.done, 1);
}

static void test_error_bodies(void **state)
{
    static const struct {
        const char *file;
        int status;
        const char *type;
        bool retry;
    } cases[] = {
        {"anthropic-429-rate-limit-body.json", 429, "rate_limit_error", true},
        {"anthropic-529-overloaded-body.json", 529, "overloaded_error", true},
        {"anthropic-401-authentication-body.json", 401, "authentication_error", false},
        {"openai-401-invalid-key-body.json", 401, "invalid_request_error", false},
    };
    size_t i;
    int seen = 0;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char type[64], msg[256];
        size_t n;
        char *buf = load(cases[i].file, &n);

        if (buf == NULL)
            continue;
        assert_int_equal(mote_llm_classify_error(buf, n, cases[i].status, type, sizeof(type), msg,
                                                 sizeof(msg), &dec.json),
                         cases[i].retry);
        assert_string_equal(type, cases[i].type);
        assert_true(msg[0] != '\0');
        free(buf);
        seen++;
    }
    if (seen == 0)
        skip();
    /* Statuses alone. */
    {
        char type[64], msg[64];

        assert_true(mote_llm_classify_error("", 0, 503, type, 64, msg, 64, &dec.json));
        assert_true(mote_llm_classify_error("<html>", 6, 502, type, 64, msg, 64, &dec.json));
        assert_false(mote_llm_classify_error("", 0, 400, type, 64, msg, 64, &dec.json));
        assert_false(mote_llm_classify_error("", 0, 403, type, 64, msg, 64, &dec.json));
        assert_false(mote_llm_classify_error("", 0, 404, type, 64, msg, 64, &dec.json));
    }
}

/* Issue 13.6: an error inside a 200 stream is classified on its `code` as
 * well as its `type` (OpenAI's rate limit says type "requests" or
 * "tokens", code "rate_limit_exceeded"). */
static void test_error_code_classification(void **state)
{
    static const char rate[] = "{\"error\":{\"message\":\"Rate limit reached\","
                               "\"type\":\"requests\",\"param\":null,"
                               "\"code\":\"rate_limit_exceeded\"}}";
    static const char rate2[] = "{\"error\":{\"message\":\"slow down\","
                                "\"type\":\"some_new_kind\",\"code\":\"rate_limit_exceeded\"}}";
    static const char quota[] = "{\"error\":{\"message\":\"You exceeded your current quota\","
                                "\"type\":\"insufficient_quota\",\"code\":\"insufficient_quota\"}}";
    static const char code_only[] = "{\"error\":{\"message\":\"busy\",\"type\":null,"
                                    "\"code\":\"server_error\"}}";
    char type[64], msg[128];

    (void)state;
    assert_true(mote_llm_classify_error(rate, sizeof(rate) - 1, 200, type, sizeof(type), msg,
                                        sizeof(msg), &dec.json));
    assert_string_equal(msg, "Rate limit reached");
    assert_true(mote_llm_classify_error(rate2, sizeof(rate2) - 1, 200, type, sizeof(type), msg,
                                        sizeof(msg), &dec.json));
    assert_string_equal(type, "some_new_kind");
    assert_false(mote_llm_classify_error(quota, sizeof(quota) - 1, 429, type, sizeof(type), msg,
                                         sizeof(msg), &dec.json));
    assert_true(mote_llm_classify_error(code_only, sizeof(code_only) - 1, 200, type,
                                        sizeof(type), msg, sizeof(msg), &dec.json));
    assert_string_equal(type, "server_error");
}

static void test_hostile_streams(void **state)
{
    struct transcript t;
    static const char *const bad[] = {
        "event: content_block_delta\ndata: {not json\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":99999,"
        "\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n",
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
        "\"content_block\":{\"type\":\"tool_use\",\"id\":\"x\",\"name\":\"\"}}\n\n",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_true(decode(&t, MOTE_PROVIDER_ANTHROPIC, bad[i], strlen(bad[i]), 0) < 0);
    /* More parallel calls than the table holds: the ones past it come in
     * MOTE_LLM_SLOT_OVER, each started and ended, the stream going on. */
    {
        char buf[8192];
        size_t n = 0;
        int k;

        for (k = 0; k <= MOTE_LLM_MAX_TOOL_CALLS + 1; k++)
            n += (size_t)snprintf(buf + n, sizeof(buf) - n,
                                  "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":"
                                  "[{\"index\":%d,\"id\":\"c%d\",\"function\":{\"name\":\"f\","
                                  "\"arguments\":\"\"}}]}}]}\n\n"
                                  "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":"
                                  "[{\"index\":%d,\"function\":{\"arguments\":\"{}\"}}]}}]}\n\n",
                                  k, k, k);
        n += (size_t)snprintf(buf + n, sizeof(buf) - n,
                              "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":"
                              "\"tool_calls\"}]}\n\ndata: [DONE]\n\n");
        assert_int_equal(decode(&t, MOTE_PROVIDER_OPENAI, buf, n, 0), 0);
        assert_int_equal(t.ncalls, MOTE_LLM_MAX_TOOL_CALLS);
        assert_calls_complete(&t);
        assert_int_equal(t.over_started, 2);
        assert_int_equal(t.over_ended, 2);
        snprintf(buf, sizeof(buf), "c%d", MOTE_LLM_MAX_TOOL_CALLS + 1);
        assert_string_equal(t.over_id, buf);
        assert_int_equal(t.done, 1);
    }
    /* Unknown events and block types are skipped. */
    {
        const char *ok = "event: whatever\ndata: {\"type\":\"brand_new\"}\n\n"
                         "event: content_block_start\ndata: {\"type\":\"content_block_start\","
                         "\"index\":0,\"content_block\":{\"type\":\"hologram\"}}\n\n"
                         "event: content_block_delta\ndata: {\"type\":\"content_block_delta\","
                         "\"index\":0,\"delta\":{\"type\":\"hologram_delta\"}}\n\n"
                         "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";

        assert_int_equal(decode(&t, MOTE_PROVIDER_ANTHROPIC, ok, strlen(ok), 0), 0);
        assert_int_equal(t.done, 1);
        assert_int_equal(t.text_len, 0);
    }
}

/* ---- request bodies ---- */

struct parts {
    const struct mote_part *list;
    int n;
    int calls;
};

static int next_part(void *arg, unsigned index, struct mote_part *p)
{
    struct parts *s = arg;

    s->calls++;
    if ((int)index >= s->n)
        return 0;
    *p = s->list[index];
    return 1;
}

/* The body of `req` written in one go into o. */
static void write_whole(const struct mote_llm_req *req, struct out *o)
{
    o->n = 0;
    assert_int_equal(mote_llm_write_body(req, to_out, o), 0);
}

/* The pull stream gives the one-go writer's bytes (o), whatever the size
 * of its reads: each of caps[0..ncaps). */
static void pulls_as_written(const struct mote_llm_req *req, const struct out *o,
                             const size_t *caps, size_t ncaps)
{
    static char pulled[8192];
    size_t k;

    for (k = 0; k < ncaps; k++) {
        assert_int_equal(body_pull(req, pulled, sizeof(pulled), caps[k]), o->n);
        assert_memory_equal(pulled, o->s, o->n);
    }
}

/* Issue 13.7: OpenAI's own endpoint gets max_completion_tokens (max_tokens
 * is deprecated there and refused by reasoning models); compatible servers
 * keep max_tokens. */
static void test_openai_token_limit_field(void **state)
{
    static const struct mote_part conv[] = {
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "hi", 2, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
    };
    struct parts src = {conv, 1, 0};
    struct mote_llm_req req;
    static struct out o;

    (void)state;
    assert_true(mote_llm_openai_host("https://api.openai.com/v1"));
    assert_true(mote_llm_openai_host("https://API.OpenAI.com:443/v1"));
    assert_true(mote_llm_openai_host("https://api.openai.com"));
    assert_false(mote_llm_openai_host("https://api.openai.com.example.net/v1"));
    assert_false(mote_llm_openai_host("http://127.0.0.1:8080/v1"));
    assert_false(mote_llm_openai_host("https://openrouter.ai/api/v1"));
    assert_false(mote_llm_openai_host(NULL));
    memset(&req, 0, sizeof(req));
    req.provider = MOTE_PROVIDER_OPENAI;
    req.model = "o3-mini";
    req.max_tokens = 777;
    req.parts = next_part;
    req.parts_arg = &src;
    req.max_completion_tokens = true;
    write_whole(&req, &o);
    assert_non_null(strstr(o.s, "\"max_completion_tokens\":777"));
    assert_null(strstr(o.s, "\"max_tokens\""));
    req.max_completion_tokens = false;
    write_whole(&req, &o);
    assert_non_null(strstr(o.s, "\"max_tokens\":777"));
    assert_null(strstr(o.s, "max_completion_tokens"));
}

/* Issue 13.12: Anthropic prompt-cache breakpoints on the system prompt,
 * the last tool and the last block of the conversation; the pull stream
 * (any buffer size) gives the same bytes as the one-go writer. */
static void test_prompt_cache_breakpoints(void **state)
{
    static const struct mote_part conv[] = {
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "hi", 2, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "c1", "shell", "{}", 2, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, "out", 3, "c1", NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "and?", 4, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
    };
    static const struct mote_tool_def tools[] = {
        {"a", "A", "{\"type\":\"object\"}"},
        {"b", "B", "{\"type\":\"object\"}"},
    };
    static struct mote_json js;
    static struct out o;
    static const size_t caps[] = {1, 5, 300};
    struct parts src = {conv, 4, 0};
    struct mote_llm_req req;
    int t;

    (void)state;
    memset(&req, 0, sizeof(req));
    req.provider = MOTE_PROVIDER_ANTHROPIC;
    req.model = "m";
    req.system = "be brief";
    req.tools = tools;
    req.ntools = 2;
    req.parts = next_part;
    req.parts_arg = &src;
    req.cache = true;
    write_whole(&req, &o);
    assert_true(mote_json_parse(&js, o.s, o.n) > 0);
    t = mote_json_path(&js, 0, "system.0.cache_control.type");
    assert_true(mote_json_eq(&js, t, "ephemeral"));
    assert_int_equal(mote_json_path(&js, 0, "tools.0.cache_control"), -1);
    assert_true(mote_json_eq(&js, mote_json_path(&js, 0, "tools.1.cache_control.type"), "ephemeral"));
    /* Only the very last block of the last message carries one. */
    assert_true(mote_json_eq(&js, mote_json_path(&js, 0, "messages.2.content.1.cache_control.type"),
                             "ephemeral"));
    assert_int_equal(mote_json_path(&js, 0, "messages.2.content.0.cache_control"), -1);
    assert_int_equal(mote_json_path(&js, 0, "messages.1.content.0.cache_control"), -1);
    assert_int_equal(mote_json_path(&js, 0, "messages.0.content.0.cache_control"), -1);
    pulls_as_written(&req, &o, caps, sizeof(caps) / sizeof(caps[0]));
    /* Off: the plain forms. */
    req.cache = false;
    write_whole(&req, &o);
    assert_null(strstr(o.s, "cache_control"));
    assert_non_null(strstr(o.s, "\"system\":\"be brief\""));
}

/* Cached input tokens: Anthropic's cache_read/creation fields, OpenAI's
 * prompt_tokens_details.cached_tokens (taken out of its prompt_tokens). */
static void test_cache_usage_decoded(void **state)
{
    static const char an[] =
        "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\","
        "\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":"
        "5,\"cache_creation_input_tokens\":100,\"cache_read_input_tokens\":2000,"
        "\"output_tokens\":1}}}\n\n"
        "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
        "\"end_turn\"},\"usage\":{\"output_tokens\":7}}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    static const char oa[] =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"},\"finish_reason\":"
        "\"stop\"}]}\n\n"
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":1500,\"completion_tokens\":3,"
        "\"prompt_tokens_details\":{\"cached_tokens\":1024}}}\n\n"
        "data: [DONE]\n\n";
    struct transcript *t = &t1;

    (void)state;
    assert_int_equal(decode(t, MOTE_PROVIDER_ANTHROPIC, an, strlen(an), 0), 0);
    assert_int_equal(t->in_tokens, 5);
    assert_int_equal(t->cache_read, 2000);
    assert_int_equal(t->cache_write, 100);
    assert_int_equal(decode(t, MOTE_PROVIDER_OPENAI, oa, strlen(oa), 0), 0);
    assert_int_equal(t->in_tokens, 1500 - 1024);
    assert_int_equal(t->cache_read, 1024);
}

static void test_request_bodies(void **state)
{
    static const struct mote_part conv[] = {
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "list /tmp \"now\"", 15, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, "Sure.", 5, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "call_1", "shell",
         "{\"command\":\"ls /tmp\"}", 21, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "call_2", "list_dir", "{}", 2, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, "a\nb", 3, "call_1", NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, "denied", 6, "call_2", NULL, NULL, 0, true, false, NULL, 0, NULL, 0, 0, false},
    };
    static const struct mote_tool_def tools[] = {
        {"shell", "Run a command", "{\"type\":\"object\"}"},
    };
    static struct mote_json js;
    static const size_t caps[] = {1, 7, 64, 5000};
    struct parts src = {conv, 6, 0};
    struct mote_llm_req req = {MOTE_PROVIDER_ANTHROPIC, "m1", "be brief", 1000, tools, 1,
                               next_part, &src, false, false, false, 0, 0, 0, 0, 0, 0, 0, 0};
    static struct out o;
    int m;

    (void)state;
    write_whole(&req, &o);
    assert_true(mote_json_parse(&js, o.s, o.n) > 0);
    assert_true(mote_json_eq(&js, mote_json_member(&js, 0, "system"), "be brief"));
    m = mote_json_member(&js, 0, "messages");
    assert_int_equal(js.tok[m].size, 3); /* user, assistant, user */
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "1.content.1.type"), "tool_use"));
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "1.content.1.input.command"), "ls /tmp"));
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "2.content.1.tool_use_id"), "call_2"));
    assert_int_equal(mote_json_type_of(&js, mote_json_path(&js, m, "2.content.1.is_error")),
                     MOTE_JSON_PRIMITIVE);
    assert_true(mote_json_eq(&js, mote_json_path(&js, 0, "tools.0.input_schema.type"), "object"));

    req.provider = MOTE_PROVIDER_OPENAI;
    write_whole(&req, &o);
    assert_true(mote_json_parse(&js, o.s, o.n) > 0);
    m = mote_json_member(&js, 0, "messages");
    assert_int_equal(js.tok[m].size, 5); /* system, user, assistant, tool, tool */
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "0.role"), "system"));
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "2.content"), "Sure."));
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "2.tool_calls.1.function.name"),
                             "list_dir"));
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "3.role"), "tool"));
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "4.content"), "Error: denied"));
    assert_true(mote_json_eq(&js, mote_json_path(&js, 0, "tools.0.function.name"), "shell"));
    assert_true(mote_json_eq(&js, mote_json_path(&js, 0, "stream_options.include_usage"), "") ==
                false);
    /* The pull stream gives the same bytes, whatever the buffer size. */
    pulls_as_written(&req, &o, caps, sizeof(caps) / sizeof(caps[0]));
    assert_int_equal(mote_llm_body_length(&req), (int64_t)o.n);
    assert_string_equal(mote_llm_path(MOTE_PROVIDER_OPENAI, "/v1"), "/chat/completions");
    assert_string_equal(mote_llm_path(MOTE_PROVIDER_ANTHROPIC, ""), "/v1/messages");
}

/* ---- the APIs' rules kept in what is sent ---- */

/* Writes the body of `req` over conv[0..n) one go (into o) and pulled in
 * pieces of 1 and 7 bytes (the same bytes), and parses it into js.
 * Returns its "messages" member. */
static int body_of(struct mote_llm_req *req, const struct mote_part *conv, int n, struct out *o,
                   struct mote_json *js)
{
    static const size_t caps[] = {1, 7};
    static struct parts src;

    src = (struct parts){conv, n, 0};
    req->parts = next_part;
    req->parts_arg = &src;
    write_whole(req, o);
    assert_int_equal(mote_llm_body_length(req), (int64_t)o->n);
    pulls_as_written(req, o, caps, sizeof(caps) / sizeof(caps[0]));
    assert_true(mote_json_parse(js, o->s, o->n) > 0);
    return mote_json_member(js, 0, "messages");
}

static const struct mote_tool_def one_tool[] = {{"shell", "Run", "{\"type\":\"object\"}"}};

static void anthropic_req(struct mote_llm_req *req, bool tools)
{
    memset(req, 0, sizeof(*req));
    req->provider = MOTE_PROVIDER_ANTHROPIC;
    req->model = "m";
    req->tools = one_tool;
    req->ntools = tools ? 1 : 0;
}

/* The body last written (anthropic_body, body_of) and its parse. */
static struct out o;
static struct mote_json js;

/* Conversation `conv` (n parts) as an Anthropic request's body, with one
 * tool offered or none; returns the messages array's token. */
static int anthropic_body(struct mote_llm_req *req, const struct mote_part *conv, int n,
                          bool tools)
{
    anthropic_req(req, tools);
    return body_of(req, conv, n, &o, &js);
}

/* The unescaped text of string token t. */
static const char *str_at(const struct mote_json *j, int t)
{
    static char buf[4096];

    assert_true(mote_json_str(j, t, buf, sizeof(buf)) >= 0);
    return buf;
}

/* No empty or white-space text block; an answer's pieces one block, white
 * space inside it kept exactly, none at its end; a message left with
 * nothing is not sent (the API merges the user messages around it). */
static void test_body_whitespace_rules(void **state)
{
    static const struct mote_part conv[] = {
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "hi", 2, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, "\n\n", 2, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "c1", "shell", "{}", 2, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, "", 0, "c1", NULL, NULL, 0, true, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, " \t", 2, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "again", 5, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "\xe3\x80\x80 \n", 5, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        /* one answer in pieces: white space at a piece's end is inside it */
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, "  Let me  ", 10, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, " \n ", 3, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, "search.\n\n\xc2\xa0", 11, NULL, NULL, NULL, 0,
         false, false, NULL, 0, NULL, 0, 0, false},
    };
    struct mote_llm_req req;
    int m;

    (void)state;
    m = anthropic_body(&req, conv, 10, true);
    assert_int_equal(js.tok[m].size, 4); /* user, assistant, user, assistant */
    /* the "\n\n" before the call is no block */
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "1.content.0.type"), "tool_use"));
    assert_int_equal(mote_json_path(&js, m, "1.content.1"), -1);
    /* the error result says it failed; the white-space answer and the
     * white-space user text are gone: one user message of result + "again" */
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "2.content.0.content")),
                        "the tool failed without a message");
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "2.content.1.text"), "again"));
    assert_int_equal(mote_json_path(&js, m, "2.content.2"), -1);
    /* the last answer: one block, its inner white space whole, none at the end */
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "3.content.0.text")),
                        "  Let me   \n search.");
    assert_int_equal(mote_json_path(&js, m, "3.content.1"), -1);
    assert_null(strstr(o.s, "\"text\":\"\""));
}

/* A tool result with nothing in it, both dialects; OpenAI keeps white space. */
static void test_body_empty_results(void **state)
{
    static const struct mote_part conv[] = {
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "hi", 2, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "c1", "shell", "{}", 2, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "c2", "shell", "{}", 2, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, " ", 1, "c1", NULL, NULL, 0, true, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, "", 0, "c2", NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
    };
    struct mote_llm_req req;
    int m;

    (void)state;
    m = anthropic_body(&req, conv, 5, true);
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "2.content.0.content")),
                        "the tool failed without a message");
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "2.content.1.content")),
                        "(the tool gave no output)");
    req.provider = MOTE_PROVIDER_OPENAI;
    m = body_of(&req, conv, 5, &o, &js);
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "2.content")),
                        "Error: the tool failed without a message");
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "3.content")), "");
}

/* No tools offered: the history's calls and results go as text blocks (the
 * API refuses tool blocks then); with tools, as blocks. */
static void test_body_tool_history_without_tools(void **state)
{
    static const struct mote_part conv[] = {
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "list", 4, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, "Sure.", 5, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "toolu_1", "list_dir",
         "{\"path\":\"/t\\ud800\"}", 19, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, "a\nb", 3, "toolu_1", NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "thanks", 6, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
    };
    struct mote_llm_req req;
    int m;

    (void)state;
    m = anthropic_body(&req, conv, 5, false);
    assert_null(strstr(o.s, "tool_use"));
    assert_null(strstr(o.s, "tool_result"));
    assert_int_equal(mote_json_member(&js, 0, "tools"), -1);
    assert_int_equal(js.tok[m].size, 3);
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "1.content.1.text")),
                        "[called the tool list_dir (call toolu_1) with input "
                        "{\"path\":\"/t\\ufffd\"}]");
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "2.content.0.text")),
                        "[result of call toolu_1]\na\nb");
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "2.content.1.text"), "thanks"));
}

/* Lone surrogate escapes in a tool input (and a schema) go as \ufffd; a
 * pair is kept. */
static void test_body_lone_surrogates(void **state)
{
    static const char in[] = "{\"a\":\"\\ud800 \\udc00x \\\\ud800 \\ud83d\\ude00 \\ud800\\ud800\\udc00\"}";
    static const struct mote_part conv[] = {
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "hi", 2, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "c1", "shell", in, sizeof(in) - 1,
         false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, "ok", 2, "c1", NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
    };
    static const struct mote_tool_def tool[] = {
        {"shell", "Run", "{\"type\":\"object\",\"description\":\"\\udfff\"}"}};
    static const char want[] =
        "{\"a\":\"\\ufffd \\ufffdx \\\\ud800 \\ud83d\\ude00 \\ufffd\\ud800\\udc00\"}";
    struct mote_llm_req req;

    (void)state;
    anthropic_req(&req, true);
    req.tools = tool;
    (void)body_of(&req, conv, 3, &o, &js);
    assert_non_null(strstr(o.s, want));
    assert_non_null(strstr(o.s, "\"description\":\"\\ufffd\""));
    req.provider = MOTE_PROVIDER_OPENAI;
    (void)body_of(&req, conv, 3, &o, &js);
    assert_string_equal(str_at(&js, mote_json_path(&js, 0, "messages.1.tool_calls.0.function."
                                                           "arguments")),
                        want);
    assert_non_null(strstr(o.s, "\"description\":\"\\ufffd\""));
}

/* An answer that was cut is said to be, and the next answer's text never
 * runs into it (both dialects). */
static void test_body_cut_answer_kept_apart(void **state)
{
    static const struct mote_part conv[] = {
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "x", 1, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, "a partial answer that", 21, NULL, NULL, NULL, 0,
         false, true, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, "recovered", 9, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "y", 1, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, "", 0, NULL, NULL, NULL, 0, false, true, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "z", 1, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
    };
    struct mote_llm_req req;
    int m;

    (void)state;
    m = anthropic_body(&req, conv, 6, true);
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "1.content.0.text")),
                        "a partial answer that [interrupted: the answer was cut off here]");
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "1.content.1.text"), "recovered"));
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "3.content.0.text")),
                        "[interrupted: the answer was cut off here]");
    req.provider = MOTE_PROVIDER_OPENAI;
    m = body_of(&req, conv, 6, &o, &js);
    assert_int_equal(js.tok[m].size, 6); /* x, cut, recovered, y, cut, z */
    assert_string_equal(str_at(&js, mote_json_path(&js, m, "1.content")),
                        "a partial answer that [interrupted: the answer was cut off here]");
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "2.content"), "recovered"));
    assert_true(mote_json_eq(&js, mote_json_path(&js, m, "2.role"), "assistant"));
}

/* White space longer than the writer holds at a piece's end: the text
 * stays valid UTF-8 (whole characters), nothing ends the answer. */
static void test_body_long_whitespace_between_pieces(void **state)
{
    static char a[300], b[] = "end";
    static struct mote_part conv[] = {
        {MOTE_ROLE_USER, MOTE_PART_TEXT, "x", 1, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, a, 0, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
        {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, b, 3, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL, 0, 0, false},
    };
    struct mote_llm_req req;
    const char *got;
    size_t i, n = 0;

    (void)state;
    a[n++] = 'w';
    for (i = 0; i < 70; i++) { /* U+3000, 3 bytes each: 210 bytes of white space */
        memcpy(a + n, "\xe3\x80\x80", 3);
        n += 3;
    }
    conv[1].text_len = n;
    anthropic_req(&req, true);
    (void)body_of(&req, conv, 3, &o, &js);
    assert_true(mote_utf8_valid(o.s, o.n));
    got = str_at(&js, mote_json_path(&js, 0, "messages.1.content.0.text"));
    assert_int_equal(got[0], 'w');
    assert_int_equal(strlen(got), 1 + (MOTE_LLM_WS_HOLD / 3) * 3 + 3);
    assert_string_equal(got + strlen(got) - 3, "end");
    /* as the final message: nothing after the last text */
    (void)body_of(&req, conv, 2, &o, &js);
    assert_string_equal(str_at(&js, mote_json_path(&js, 0, "messages.1.content.0.text")), "w");
}

/* Decoding: OpenAI calls without index in one chunk, without id, an
 * Anthropic input whole in its start. */
static void test_tool_calls_odd_shapes(void **state)
{
    static const char several[] =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":["
        "{\"id\":\"a\",\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":1}\"}},"
        "{\"id\":\"b\",\"type\":\"function\",\"function\":{\"name\":\"g\",\"arguments\":\"{\\\"y\\\":\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":[{\"function\":{\"arguments\":"
        "\"2}\"}}]},\"finish_reason\":\"tool_calls\"}]}\n\n"
        "data: [DONE]\n\n";
    static const char no_id[] =
        "data: {\"id\":\"chatcmpl-1\",\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":["
        "{\"index\":0,\"type\":\"function\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
        "data: [DONE]\n\n";
    static const char whole[] =
        "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,"
        "\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_w\",\"name\":\"f\",\"input\":"
        "{\"path\":\"/tmp\",\"n\":[1,2]}}}\n\n"
        "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
        "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{\\\"again\\\":1}\"}}\n\n"
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n"
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
    char first[128];
    size_t i;

    (void)state;
    assert_int_equal(decode(&t1, MOTE_PROVIDER_OPENAI, several, strlen(several), 0), 0);
    assert_int_equal(t1.ncalls, 2);
    assert_calls_complete(&t1);
    assert_string_equal(t1.call_args[0], "{\"x\":1}");
    assert_string_equal(t1.call_args[1], "{\"y\":2}");
    assert_string_equal(t1.call_name[1], "g");

    assert_int_equal(decode(&t1, MOTE_PROVIDER_OPENAI, no_id, strlen(no_id), 0), 0);
    assert_int_equal(t1.ncalls, 1);
    assert_calls_complete(&t1);
    for (i = 0; t1.call_id[0][i] != '\0'; i++)
        assert_true((t1.call_id[0][i] >= 'a' && t1.call_id[0][i] <= 'z') ||
                    (t1.call_id[0][i] >= '0' && t1.call_id[0][i] <= '9') || t1.call_id[0][i] == '_');
    strcpy(first, t1.call_id[0]);
    assert_int_equal(decode(&t1, MOTE_PROVIDER_OPENAI, no_id, strlen(no_id), 0), 0);
    assert_string_equal(t1.call_id[0], first); /* the same stream, the same id... */
    memset(&t1, 0, sizeof(t1));
    mote_llm_dec_init(&dec, MOTE_PROVIDER_OPENAI, on_llm, &t1);
    dec.id_seed = 12345; /* ...but another answer's seed, another id */
    mote_sse_init(&sse, on_sse, NULL);
    assert_int_equal(mote_sse_feed(&sse, no_id, strlen(no_id)), 0);
    assert_int_equal(t1.ncalls, 1);
    assert_true(strcmp(t1.call_id[0], first) != 0);

    assert_int_equal(decode(&t1, MOTE_PROVIDER_ANTHROPIC, whole, strlen(whole), 0), 0);
    assert_int_equal(t1.ncalls, 1);
    assert_calls_complete(&t1);
    assert_string_equal(t1.call_args[0], "{\"path\":\"/tmp\",\"n\":[1,2]}");
}

/* Each call of an answer has an id of its own that both APIs take back:
 * an id repeated in one answer, one with characters Anthropic refuses,
 * and one that is empty get ids of mote's (the first of a repeated one
 * keeps it); a name holding a NUL is kept whole (escaped) so it names no
 * tool, where as a C string it would be its prefix ("shell"). Calls
 * without an index that repeat the id (as sent) of the call before still
 * go on with it. */
static void test_call_ids_unique(void **state)
{
#define TOOL_BLOCK(i, id, name)                                                                  \
    "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":" #i ","       \
    "\"content_block\":{\"type\":\"tool_use\",\"id\":\"" id "\",\"name\":\"" name "\","          \
    "\"input\":{}}}\n\n"                                                                         \
    "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":" #i ","       \
    "\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"{}\"}}\n\n"                      \
    "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":" #i "}\n\n"
    static const char anthropic[] =
        TOOL_BLOCK(0, "toolu_same", "shell") TOOL_BLOCK(1, "toolu_same", "shell")
        TOOL_BLOCK(2, "", "shell") TOOL_BLOCK(3, "bad id!", "shell")
        TOOL_BLOCK(4, "toolu_other", "shell\\u0000x")
        "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n";
#undef TOOL_BLOCK
    static const char openai[] =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":["
        "{\"index\":0,\"id\":\"call_1\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}},"
        "{\"index\":1,\"id\":\"call_1\",\"function\":{\"name\":\"f\",\"arguments\":\"{}\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"tool_calls\"}]}\n\n"
        "data: [DONE]\n\n";
    static const char unindexed[] =
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":["
        "{\"id\":\"fn.a:0\",\"function\":{\"name\":\"f\",\"arguments\":\"{\\\"x\\\":\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":["
        "{\"id\":\"fn.a:0\",\"function\":{\"arguments\":\"1}\"}}]}}]}\n\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"tool_calls\":["
        "{\"function\":{\"name\":\"g\",\"arguments\":\"{}\"}}]}}]}\n\n"
        "data: [DONE]\n\n";
    int i, k;

    (void)state;
    assert_int_equal(decode(&t1, MOTE_PROVIDER_ANTHROPIC, anthropic, strlen(anthropic), 0), 0);
    assert_int_equal(t1.ncalls, 5);
    assert_calls_complete(&t1);
    assert_string_equal(t1.call_id[0], "toolu_same");
    assert_string_equal(t1.call_id[4], "toolu_other");
    for (i = 0; i < t1.ncalls; i++) {
        for (k = 0; t1.call_id[i][k] != '\0'; k++)
            assert_true(strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-",
                               t1.call_id[i][k]) != NULL);
        for (k = 0; k < i; k++)
            assert_true(strcmp(t1.call_id[i], t1.call_id[k]) != 0);
    }
    assert_string_equal(t1.call_name[0], "shell");
    assert_string_equal(t1.call_name[4], "shell\\u0000x");

    assert_int_equal(decode(&t1, MOTE_PROVIDER_OPENAI, openai, strlen(openai), 0), 0);
    assert_int_equal(t1.ncalls, 2);
    assert_string_equal(t1.call_id[0], "call_1");
    assert_true(strcmp(t1.call_id[1], "call_1") != 0 && t1.call_id[1][0] != '\0');

    assert_int_equal(decode(&t1, MOTE_PROVIDER_OPENAI, unindexed, strlen(unindexed), 0), 0);
    /* the id as sent, repeated, went on with the first (whose id is kept
     * as it came: an OpenAI-compatible server's ids go back to it); a
     * name began one */
    assert_int_equal(t1.ncalls, 2);
    assert_string_equal(t1.call_args[0], "{\"x\":1}");
    assert_string_equal(t1.call_id[0], "fn.a:0");
    assert_true(strcmp(t1.call_id[1], t1.call_id[0]) != 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anthropic_text),
        cmocka_unit_test(test_anthropic_tool_use),
        cmocka_unit_test(test_anthropic_parallel),
        cmocka_unit_test(test_anthropic_thinking_dropped),
        cmocka_unit_test(test_anthropic_max_tokens),
        cmocka_unit_test(test_anthropic_web_search_long_line),
        cmocka_unit_test(test_anthropic_error_event),
        cmocka_unit_test(test_openai_text),
        cmocka_unit_test(test_openai_parallel),
        cmocka_unit_test(test_openai_obfuscation),
        cmocka_unit_test(test_openai_n3_first_choice_only),
        cmocka_unit_test(test_llamacpp),
        cmocka_unit_test(test_deepseek),
        cmocka_unit_test(test_openai_reasoning_is_thinking),
        cmocka_unit_test(test_openrouter_repeated_finish),
        cmocka_unit_test(test_error_code_classification),
        cmocka_unit_test(test_openai_token_limit_field),
        cmocka_unit_test(test_prompt_cache_breakpoints),
        cmocka_unit_test(test_cache_usage_decoded),
        cmocka_unit_test(test_error_bodies),
        cmocka_unit_test(test_hostile_streams),
        cmocka_unit_test(test_request_bodies),
        cmocka_unit_test(test_body_whitespace_rules),
        cmocka_unit_test(test_body_empty_results),
        cmocka_unit_test(test_body_tool_history_without_tools),
        cmocka_unit_test(test_body_lone_surrogates),
        cmocka_unit_test(test_body_cut_answer_kept_apart),
        cmocka_unit_test(test_body_long_whitespace_between_pieces),
        cmocka_unit_test(test_tool_calls_odd_shapes),
        cmocka_unit_test(test_call_ids_unique),
    };

    return cmocka_run_group_tests_name("llm", tests, NULL, NULL);
}
