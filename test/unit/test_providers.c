/* test_providers.c - what the providers a device user picks do
 * differently: their error bodies, streams without [DONE], the ids they
 * give, calls that share an index (the decoder and the body writer). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote_llm.h"
#include "mote/mote_sse.h"

struct seen {
    int ncalls, ended[8], done, errors;
    char id[8][80], name[8][64], args[8][512];
    char text[4096], thinking[4096], stop[32], err[256];
};

static struct mote_sse sse;
static struct mote_llm_dec dec;
static struct seen sn;

static int on_llm(void *arg, const struct mote_llm_event *ev)
{
    struct seen *t = arg;

    switch (ev->type) {
    case MOTE_LLM_TEXT:
        strncat(t->text, ev->text, ev->len);
        break;
    case MOTE_LLM_THINKING:
        strncat(t->thinking, ev->text, ev->len);
        break;
    case MOTE_LLM_TOOL_START:
        assert_int_equal(ev->slot, t->ncalls);
        snprintf(t->id[ev->slot], sizeof(t->id[0]), "%s", ev->id);
        snprintf(t->name[ev->slot], sizeof(t->name[0]), "%s", ev->name);
        t->ncalls++;
        break;
    case MOTE_LLM_TOOL_ARGS:
        assert_true(ev->slot < (unsigned)t->ncalls);
        assert_int_equal(t->ended[ev->slot], 0);
        strncat(t->args[ev->slot], ev->text, ev->len);
        break;
    case MOTE_LLM_TOOL_END:
        t->ended[ev->slot]++;
        break;
    case MOTE_LLM_STOP:
        snprintf(t->stop, sizeof(t->stop), "%s", ev->text);
        break;
    case MOTE_LLM_ERROR:
        t->errors++;
        snprintf(t->err, sizeof(t->err), "%s", ev->text);
        break;
    case MOTE_LLM_DONE:
        t->done++;
        break;
    default:
        break;
    }
    return 0;
}

static int on_sse(void *arg, const char *event, const char *data, size_t len, const char *id)
{
    (void)arg, (void)id;
    return mote_llm_dec_event(&dec, event, data, len);
}

static int decode(enum mote_provider prov, const char *s)
{
    memset(&sn, 0, sizeof(sn));
    mote_llm_dec_init(&dec, prov, on_llm, &sn);
    mote_sse_init(&sse, on_sse, NULL);
    return mote_sse_feed(&sse, s, strlen(s));
}

#define CHUNK(delta) "data: {\"choices\":[{\"index\":0,\"delta\":" delta "}]}\n\n"
#define FINISH(why) "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"" why "\"}]}\n\n"

/* ---- errors ---------------------------------------------------------------------- */

static void classify(const char *body, int status, char *type, char *msg, size_t cap)
{
    (void)mote_llm_classify_error(body, strlen(body), status, type, 64, msg, cap, &dec.json);
}

static void test_error_shapes(void **state)
{
    char type[64], msg[256];

    (void)state;
    /* Gemini: an array of error objects */
    classify("[{\"error\": {\"code\": 400, \"message\": \"Function call is missing a "
             "thought_signature in functionCall parts.\", \"status\": \"INVALID_ARGUMENT\"}}]",
             400, type, msg, sizeof(msg));
    assert_string_equal(type, "INVALID_ARGUMENT");
    assert_string_equal(msg, "Function call is missing a thought_signature in functionCall parts.");
    /* Mistral: the message is an object of validation details */
    classify("{\"object\":\"error\",\"message\":{\"detail\":[{\"type\":\"extra_forbidden\","
             "\"loc\":[\"body\",\"messages\",2,\"assistant\",\"reasoning_content\"],"
             "\"msg\":\"Extra inputs are not permitted\",\"input\":\"x\"},{\"type\":\"x\","
             "\"loc\":[\"body\"],\"msg\":\"y\"}]},\"type\":\"invalid_request_error\","
             "\"param\":null,\"code\":null}",
             422, type, msg, sizeof(msg));
    assert_string_equal(type, "invalid_request_error");
    assert_string_equal(msg, "body.messages.2.assistant.reasoning_content: Extra inputs are not "
                             "permitted (and 1 more)");
    /* FastAPI-style servers: {"detail": "..."}; Ollama: {"error": "..."} */
    classify("{\"detail\":\"Not Found\"}", 404, type, msg, sizeof(msg));
    assert_string_equal(msg, "Not Found");
    classify("{\"error\":\"model \\\"llama9\\\" not found, try pulling it first\"}", 404, type,
             msg, sizeof(msg));
    assert_string_equal(msg, "model \"llama9\" not found, try pulling it first");
    /* llama.cpp: a number code, the kind in type */
    classify("{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context "
             "size, try increasing it\",\"type\":\"exceed_context_size_error\","
             "\"n_prompt_tokens\":5000,\"n_ctx\":4096}}",
             400, type, msg, sizeof(msg));
    assert_string_equal(type, "exceed_context_size_error");
    assert_true(strstr(msg, "exceeds the available context size") != NULL);
    /* plain text, on one line; an HTML page by its title */
    classify("upstream connect error\r\nor disconnect/reset\tbefore headers\n", 502, type, msg,
             sizeof(msg));
    assert_string_equal(msg, "upstream connect error or disconnect/reset before headers");
    classify("<html>\n<head><title>504 Gateway Time-out</title></head><body>x</body></html>", 504,
             type, msg, sizeof(msg));
    assert_string_equal(msg, "504 Gateway Time-out");
    classify("<html><body><h1>Bad\ngateway</h1></body></html>", 502, type, msg, sizeof(msg));
    assert_string_equal(msg, "Bad gateway");
    /* bytes that are not UTF-8 */
    classify("bad \xff\xfe byte", 500, type, msg, sizeof(msg));
    assert_string_equal(msg, "bad ?? byte");
    /* a JSON body whose start only was kept */
    classify("{\"object\":\"error\",\"message\":\"Prompt contains 40000 tokens, too large for "
             "model with 32768 maximum context length\",\"type\":\"invalid_request_error\","
             "\"input\":{\"messages\":[{\"role\":\"user\",\"content\":\"aaaa",
             400, type, msg, sizeof(msg));
    assert_true(strstr(msg, "Prompt contains 40000 tokens") != NULL);
    assert_string_equal(type, "invalid_request_error");
    /* the message is cut to the room given, whole characters */
    classify("{\"error\":{\"message\":\"\\u00e9\\u00e9\\u00e9\\u00e9\"}}", 400, type, msg, 6);
    assert_string_equal(msg, "\xc3\xa9\xc3\xa9");
}

static void test_error_array_event(void **state)
{
    (void)state;
    assert_true(decode(MOTE_PROVIDER_OPENAI,
                       "data: [{\"error\":{\"code\":503,\"message\":\"The model is overloaded.\","
                       "\"status\":\"UNAVAILABLE\"}}]\n\n") <= 0);
    assert_int_equal(sn.errors, 1);
    assert_string_equal(sn.err, "The model is overloaded.");
}

/* ---- the end of a stream -------------------------------------------------------- */

static void test_finish_without_done(void **state)
{
    (void)state;
    /* text, then the finish_reason and the end: complete */
    assert_int_equal(decode(MOTE_PROVIDER_OPENAI, CHUNK("{\"content\":\"all of it\"}")
                                                      FINISH("stop")),
                     0);
    assert_int_equal(sn.done, 0);
    assert_true(mote_llm_dec_finish(&dec));
    assert_int_equal(sn.done, 1);
    assert_true(mote_llm_dec_finish(&dec)); /* (once) */
    assert_int_equal(sn.done, 1);
    /* a call, then finish_reason tool_calls: the call ends, the stream is whole */
    assert_int_equal(decode(MOTE_PROVIDER_OPENAI,
                            CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{"
                                  "\"name\":\"shell\",\"arguments\":\"{}\"}}]}")
                                FINISH("tool_calls")),
                     0);
    assert_true(mote_llm_dec_finish(&dec));
    assert_int_equal(sn.ended[0], 1);
    assert_string_equal(sn.stop, "tool_use");
    /* no finish_reason: cut */
    assert_int_equal(decode(MOTE_PROVIDER_OPENAI, CHUNK("{\"content\":\"half\"}")), 0);
    assert_false(mote_llm_dec_finish(&dec));
    assert_int_equal(sn.done, 0);
    /* Anthropic keeps to message_stop */
    assert_int_equal(decode(MOTE_PROVIDER_ANTHROPIC,
                            "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{"
                            "\"stop_reason\":\"end_turn\"},\"usage\":{\"output_tokens\":1}}\n\n"),
                     0);
    assert_false(mote_llm_dec_finish(&dec));
}

static void test_reasoning_field_is_thinking(void **state)
{
    (void)state;
    /* vLLM, Groq, Ollama, OpenRouter: delta.reasoning */
    assert_int_equal(decode(MOTE_PROVIDER_OPENAI, CHUNK("{\"reasoning\":\"hmm, \"}")
                                                      CHUNK("{\"reasoning\":\"four\"}")
                                                          CHUNK("{\"content\":\"4\"}")
                                                              FINISH("stop") "data: [DONE]\n\n"),
                     0);
    assert_string_equal(sn.thinking, "hmm, four");
    assert_string_equal(sn.text, "4");
}

/* ---- ids and indexes ------------------------------------------------------------- */

static void test_ids_kept_for_the_dialect(void **state)
{
    static const char kimi[] =
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"functions.shell:0\",\"function\":{"
              "\"name\":\"shell\",\"arguments\":\"{}\"}}]}")
        CHUNK("{\"tool_calls\":[{\"index\":1,\"id\":\"has space\",\"function\":{"
              "\"name\":\"shell\",\"arguments\":\"{}\"}}]}")
        FINISH("tool_calls") "data: [DONE]\n\n";

    (void)state;
    assert_int_equal(decode(MOTE_PROVIDER_OPENAI, kimi), 0);
    assert_int_equal(sn.ncalls, 2);
    assert_string_equal(sn.id[0], "functions.shell:0");
    assert_int_equal(strncmp(sn.id[1], "call_mote_", 10), 0);
    assert_int_equal(decode(MOTE_PROVIDER_ANTHROPIC,
                            "event: content_block_start\ndata: {\"type\":\"content_block_start\","
                            "\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":"
                            "\"functions.shell:0\",\"name\":\"shell\",\"input\":{}}}\n\n"),
                     0);
    assert_int_equal(strncmp(sn.id[0], "call_mote_", 10), 0);
}

static void test_calls_sharing_an_index(void **state)
{
    /* a gateway: index 0 for every call, each with an id of its own */
    static const char gateway[] =
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_a\",\"function\":{"
              "\"name\":\"read_file\",\"arguments\":\"\"}}]}")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"{\\\"path\\\":\\\"a\\\"}\"}}]}")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"call_b\",\"function\":{"
              "\"name\":\"read_file\",\"arguments\":\"{\\\"path\\\"\"}}]}")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\":\\\"b\\\"}\"}}]}")
        FINISH("tool_calls") "data: [DONE]\n\n";
    /* Ollama: index 0, no id, whole calls */
    static const char noid[] =
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"read_file\","
              "\"arguments\":\"{\\\"path\\\":\\\"p0\\\"}\"}}]}")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"write_file\","
              "\"arguments\":\"{\\\"path\\\":\\\"p1\\\"}\"}}]}")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"name\":\"write_file\","
              "\"arguments\":\" {\\\"path\\\":\\\"p2\\\"}\"}}]}")
        FINISH("tool_calls") "data: [DONE]\n\n";
    /* a server that repeats the call's id and name with every fragment */
    static const char repeats[] =
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"c9\",\"function\":{\"name\":\"shell\","
              "\"arguments\":\"{\\\"command\\\":\"}}]}")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"c9\",\"function\":{\"name\":\"shell\","
              "\"arguments\":\"\\\"ls\\\"}\"}}]}")
        FINISH("tool_calls") "data: [DONE]\n\n";

    (void)state;
    assert_int_equal(decode(MOTE_PROVIDER_OPENAI, gateway), 0);
    assert_int_equal(sn.ncalls, 2);
    assert_string_equal(sn.id[0], "call_a");
    assert_string_equal(sn.id[1], "call_b");
    assert_string_equal(sn.args[0], "{\"path\":\"a\"}");
    assert_string_equal(sn.args[1], "{\"path\":\"b\"}");
    assert_int_equal(sn.ended[0], 1);
    assert_int_equal(sn.ended[1], 1);

    assert_int_equal(decode(MOTE_PROVIDER_OPENAI, noid), 0);
    assert_int_equal(sn.ncalls, 3);
    assert_string_equal(sn.args[0], "{\"path\":\"p0\"}");
    assert_string_equal(sn.args[1], "{\"path\":\"p1\"}");
    assert_string_equal(sn.args[2], " {\"path\":\"p2\"}");
    assert_true(strcmp(sn.id[1], sn.id[2]) != 0);

    assert_int_equal(decode(MOTE_PROVIDER_OPENAI, repeats), 0);
    assert_int_equal(sn.ncalls, 1);
    assert_string_equal(sn.args[0], "{\"command\":\"ls\"}");
}

/* ---- request bodies ---------------------------------------------------------- */

static const struct mote_part conv_parts[] = {
    {MOTE_ROLE_USER, MOTE_PART_TEXT, "hi", 2, NULL, NULL, NULL, 0, false, false},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "functions.shell:0", "shell", "{}", 2,
     false, false},
    {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, "ok", 2, "functions.shell:0", NULL, NULL, 0, false,
     false},
};

static int parts_fn(void *arg, unsigned index, struct mote_part *p)
{
    (void)arg;
    if (index >= sizeof(conv_parts) / sizeof(conv_parts[0]))
        return 0;
    *p = conv_parts[index];
    return 1;
}

struct buf {
    char p[8192];
    size_t n;
};

static int buf_sink(void *arg, const char *p, size_t n)
{
    struct buf *b = arg;

    assert_true(b->n + n < sizeof(b->p));
    memcpy(b->p + b->n, p, n);
    b->n += n;
    b->p[b->n] = '\0';
    return 0;
}

static void test_foreign_ids_fit_anthropic(void **state)
{
    static const struct mote_tool_def tool = {"shell", "runs", "{\"type\":\"object\"}"};
    struct mote_llm_req req;
    static struct buf b;
    const char *a, *c;

    (void)state;
    memset(&req, 0, sizeof(req));
    req.provider = MOTE_PROVIDER_ANTHROPIC;
    req.model = "m";
    req.tools = &tool;
    req.ntools = 1;
    req.parts = parts_fn;
    memset(&b, 0, sizeof(b));
    assert_int_equal(mote_llm_write_body(&req, buf_sink, &b), 0);
    a = strstr(b.p, "\"id\":\"toolu_mote_");
    c = strstr(b.p, "\"tool_use_id\":\"toolu_mote_");
    assert_non_null(a);
    assert_non_null(c);
    assert_memory_equal(a + 6, c + 15, 27); /* the same id for the call and its result */
    assert_null(strstr(b.p, "functions.shell"));
    /* OpenAI-compatible: as it came */
    req.provider = MOTE_PROVIDER_OPENAI;
    memset(&b, 0, sizeof(b));
    assert_int_equal(mote_llm_write_body(&req, buf_sink, &b), 0);
    assert_non_null(strstr(b.p, "\"id\":\"functions.shell:0\""));
    assert_non_null(strstr(b.p, "\"tool_call_id\":\"functions.shell:0\""));
}

/* ---- profiles ------------------------------------------------------------------ */

static void test_profile_pick(void **state)
{
    static const struct {
        int dialect;
        const char *url, *name;
    } cases[] = {
        {MOTE_PROVIDER_OPENAI, "https://api.openai.com/v1", "openai"},
        {MOTE_PROVIDER_OPENAI, "https://API.OpenAI.com:443/v1", "openai"},
        {MOTE_PROVIDER_OPENAI, "https://api.openai.com.evil.example/v1", "openai-compatible"},
        {MOTE_PROVIDER_OPENAI, "https://xapi.openai.com/v1", "openai-compatible"},
        {MOTE_PROVIDER_OPENAI, "https://generativelanguage.googleapis.com/v1beta/openai",
         "gemini"},
        {MOTE_PROVIDER_OPENAI, "https://api.deepseek.com", "deepseek"},
        {MOTE_PROVIDER_OPENAI, "https://api.mistral.ai/v1", "mistral"},
        {MOTE_PROVIDER_OPENAI, "https://api.groq.com/openai/v1", "groq"},
        {MOTE_PROVIDER_OPENAI, "https://openrouter.ai/api/v1", "openrouter"},
        {MOTE_PROVIDER_OPENAI, "https://api.moonshot.cn/v1", "kimi"},
        {MOTE_PROVIDER_OPENAI, "http://raspberrypi.local:11434/v1", "ollama"},
        {MOTE_PROVIDER_OPENAI, "http://192.168.1.9:8080/v1", "openai-compatible"},
        {MOTE_PROVIDER_OPENAI, "not a url", "openai-compatible"},
        {MOTE_PROVIDER_ANTHROPIC, "https://api.anthropic.com", "anthropic"},
        {MOTE_PROVIDER_ANTHROPIC, "https://api.deepseek.com/anthropic", "anthropic-compatible"},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const struct mote_llm_profile *p = mote_llm_profile_pick(cases[i].dialect, cases[i].url);

        assert_non_null(p);
        if (strcmp(p->name, cases[i].name) != 0)
            fail_msg("%s picked %s, not %s", cases[i].url, p->name, cases[i].name);
        assert_ptr_equal(mote_llm_profile_find(cases[i].name), p);
    }
    assert_null(mote_llm_profile_find("nonesuch"));
    assert_null(mote_llm_profile_find(NULL));
    /* every row has what the frontends and the writer read */
    for (i = 0; mote_llm_profile_at((unsigned)i) != NULL; i++) {
        const struct mote_llm_profile *p = mote_llm_profile_at((unsigned)i);

        assert_true(p->name[0] != '\0' && p->hosts != NULL && p->url != NULL &&
                    p->model != NULL);
        assert_true(p->ids == MOTE_LLM_IDS_WORD || p->ids == MOTE_LLM_IDS_PRINTABLE);
        assert_true(p->usage == MOTE_LLM_USAGE_ASKED || p->usage == MOTE_LLM_USAGE_ALWAYS);
        /* a provider that reports usage only when asked takes the asking */
        assert_true(p->usage != MOTE_LLM_USAGE_ASKED || p->dialect != MOTE_PROVIDER_OPENAI ||
                    (p->keys & MOTE_LLM_KEY_STREAM_OPTIONS) != 0);
    }
    /* the request path after a base URL that names a version */
    assert_string_equal(mote_llm_path(MOTE_PROVIDER_OPENAI, "/v1beta/openai"),
                        "/chat/completions");
    assert_string_equal(mote_llm_path(MOTE_PROVIDER_OPENAI, "/api/paas/v4"), "/chat/completions");
    assert_string_equal(mote_llm_path(MOTE_PROVIDER_OPENAI, ""), "/v1/chat/completions");
    assert_string_equal(mote_llm_path(MOTE_PROVIDER_OPENAI, "/vx"), "/v1/chat/completions");
    assert_string_equal(mote_llm_path(MOTE_PROVIDER_ANTHROPIC, "/anthropic"), "/v1/messages");
}

static void test_profile_bodies(void **state)
{
    static const struct mote_tool_def tool = {"shell", "runs", "{\"type\":\"object\"}"};
    struct mote_llm_req req;
    static struct buf b;

    (void)state;
    memset(&req, 0, sizeof(req));
    req.provider = MOTE_PROVIDER_OPENAI;
    req.model = "m";
    req.max_tokens = 100;
    req.tools = &tool;
    req.ntools = 1;
    req.no_tool_calls = true;
    req.parts = parts_fn;
    /* OpenAI's own: as ever */
    mote_llm_profile_req(mote_llm_profile_find("openai"), &req);
    memset(&b, 0, sizeof(b));
    assert_int_equal(mote_llm_write_body(&req, buf_sink, &b), 0);
    assert_non_null(strstr(b.p, "\"stream_options\":{\"include_usage\":true}"));
    assert_non_null(strstr(b.p, "\"max_completion_tokens\":100"));
    assert_non_null(strstr(b.p, "\"tool_choice\":\"none\""));
    /* Mistral's: no stream_options, max_tokens */
    mote_llm_profile_req(mote_llm_profile_find("mistral"), &req);
    memset(&b, 0, sizeof(b));
    assert_int_equal(mote_llm_write_body(&req, buf_sink, &b), 0);
    assert_null(strstr(b.p, "stream_options"));
    assert_non_null(strstr(b.p, "\"max_tokens\":100"));
    /* a refused tool_choice */
    req.omit |= MOTE_LLM_KEY_TOOL_CHOICE;
    memset(&b, 0, sizeof(b));
    assert_int_equal(mote_llm_write_body(&req, buf_sink, &b), 0);
    assert_null(strstr(b.p, "tool_choice"));
    /* Anthropic: the cache breakpoints, unless refused */
    req.provider = MOTE_PROVIDER_ANTHROPIC;
    req.system = "sys";
    mote_llm_profile_req(mote_llm_profile_find("anthropic"), &req);
    memset(&b, 0, sizeof(b));
    assert_int_equal(mote_llm_write_body(&req, buf_sink, &b), 0);
    assert_non_null(strstr(b.p, "cache_control"));
    req.omit |= MOTE_LLM_KEY_CACHE_CONTROL;
    memset(&b, 0, sizeof(b));
    assert_int_equal(mote_llm_write_body(&req, buf_sink, &b), 0);
    assert_null(strstr(b.p, "cache_control"));
}

static void test_refusals_teach(void **state)
{
    struct mote_llm_req req;
    struct mote_llm_memo memo;
    uint8_t drop, need;
    static const char mistral[] =
        "{\"object\":\"error\",\"message\":{\"detail\":[{\"type\":\"extra_forbidden\","
        "\"loc\":[\"body\",\"stream_options\",\"include_usage\"],\"msg\":\"Extra inputs are "
        "not permitted\",\"input\":true}]},\"type\":\"invalid_request_error\"}";
    static const char openai_mt[] =
        "{\"error\":{\"message\":\"Unsupported parameter: 'max_tokens' is not supported with "
        "this model. Use 'max_completion_tokens' instead.\",\"type\":\"invalid_request_error\","
        "\"param\":\"max_tokens\",\"code\":\"unsupported_parameter\"}}";
    static const char deepseek[] =
        "{\"error\":{\"message\":\"Missing `reasoning_content` field in the assistant message "
        "at message index 2.\",\"type\":\"invalid_request_error\"}}";
    static const char gemini[] =
        "[{\"error\":{\"code\":400,\"message\":\"Function call is missing a thought_signature "
        "in functionCall parts.\",\"status\":\"INVALID_ARGUMENT\"}}]";
    static const char other[] =
        "{\"error\":{\"message\":\"max_tokens_limit is unknown\",\"type\":\"x\"}}";

    (void)state;
    memset(&req, 0, sizeof(req));
    req.provider = MOTE_PROVIDER_OPENAI;
    req.max_tokens = 100;
    mote_llm_profile_req(mote_llm_profile_find("openai-compatible"), &req);
    assert_int_equal(mote_llm_refusal_keys(&req, mistral, strlen(mistral), 0, &drop, &need),
                     MOTE_LLM_KEY_STREAM_OPTIONS);
    assert_int_equal(drop, MOTE_LLM_KEY_STREAM_OPTIONS);
    /* tried already: nothing more */
    assert_int_equal(mote_llm_refusal_keys(&req, mistral, strlen(mistral),
                                           MOTE_LLM_KEY_STREAM_OPTIONS, &drop, &need),
                     0);
    /* not sent: nothing to drop */
    req.omit |= MOTE_LLM_KEY_STREAM_OPTIONS;
    assert_int_equal(mote_llm_refusal_keys(&req, mistral, strlen(mistral), 0, &drop, &need), 0);
    /* max_tokens refused, max_completion_tokens named */
    assert_int_equal(mote_llm_refusal_keys(&req, openai_mt, strlen(openai_mt), 0, &drop, &need),
                     MOTE_LLM_KEY_MAX_COMPLETION);
    assert_int_equal(need, MOTE_LLM_KEY_MAX_COMPLETION);
    /* extras a server needs */
    assert_int_equal(mote_llm_refusal_keys(&req, deepseek, strlen(deepseek), 0, &drop, &need),
                     MOTE_LLM_KEY_REASONING_CONTENT);
    assert_int_equal(mote_llm_refusal_keys(&req, gemini, strlen(gemini), 0, &drop, &need),
                     MOTE_LLM_KEY_EXTRA_CONTENT);
    /* a name that only contains a key's name */
    assert_int_equal(mote_llm_refusal_keys(&req, other, strlen(other), 0, &drop, &need), 0);
    /* Anthropic's cache_control refused by a compatible server */
    req.provider = MOTE_PROVIDER_ANTHROPIC;
    mote_llm_profile_req(mote_llm_profile_find("anthropic-compatible"), &req);
    {
        static const char cc[] = "{\"error\":{\"message\":\"system.0.cache_control: Extra "
                                 "inputs are not permitted\"}}";

        assert_int_equal(mote_llm_refusal_keys(&req, cc, strlen(cc), 0, &drop, &need),
                         MOTE_LLM_KEY_CACHE_CONTROL);
    }

    /* the memo: per origin, the least recently used goes */
    memset(&memo, 0, sizeof(memo));
    mote_llm_memo_keep(&memo, 1, MOTE_LLM_KEY_STREAM_OPTIONS, 0);
    mote_llm_memo_keep(&memo, 2, 0, MOTE_LLM_KEY_REASONING_CONTENT);
    memset(&req, 0, sizeof(req));
    mote_llm_memo_apply(&memo, 1, &req);
    assert_int_equal(req.omit, MOTE_LLM_KEY_STREAM_OPTIONS);
    memset(&req, 0, sizeof(req));
    mote_llm_memo_apply(&memo, 2, &req);
    assert_int_equal(req.add, MOTE_LLM_KEY_REASONING_CONTENT);
    mote_llm_memo_keep(&memo, 3, 1, 0);
    mote_llm_memo_keep(&memo, 4, 1, 0);
    mote_llm_memo_apply(&memo, 1, &req); /* 1 used last: 2 goes next */
    mote_llm_memo_keep(&memo, 5, 4, 0);
    memset(&req, 0, sizeof(req));
    mote_llm_memo_apply(&memo, 2, &req);
    assert_int_equal(req.add, 0);
    memset(&req, 0, sizeof(req));
    mote_llm_memo_apply(&memo, 1, &req);
    assert_int_equal(req.omit, MOTE_LLM_KEY_STREAM_OPTIONS);
    mote_llm_memo_apply(NULL, 1, &req);
    mote_llm_memo_keep(NULL, 1, 1, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_shapes),
        cmocka_unit_test(test_error_array_event),
        cmocka_unit_test(test_finish_without_done),
        cmocka_unit_test(test_reasoning_field_is_thinking),
        cmocka_unit_test(test_ids_kept_for_the_dialect),
        cmocka_unit_test(test_calls_sharing_an_index),
        cmocka_unit_test(test_foreign_ids_fit_anthropic),
        cmocka_unit_test(test_profile_pick),
        cmocka_unit_test(test_profile_bodies),
        cmocka_unit_test(test_refusals_teach),
    };

    return cmocka_run_group_tests_name("providers", tests, NULL, NULL);
}
