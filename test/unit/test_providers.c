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

#include "body_pull.h"
#include "fixtures.h"
#include "mote/mote_llm.h"
#include "mote/mote_sse.h"
#include "sse_steps.h"

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

struct buf {
    char p[20000];
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

/* The body of `req`, written whole (NUL-terminated) into a buffer kept
 * until the next call. */
static const struct buf *body_of(const struct mote_llm_req *req)
{
    static struct buf b;

    memset(&b, 0, sizeof(b));
    assert_int_equal(mote_llm_write_body(req, buf_sink, &b), 0);
    return &b;
}

/* A request to `prov` for model "m" offering one tool, "shell", its
 * conversation from `parts`. */
static void shell_req(struct mote_llm_req *req, enum mote_provider prov, mote_part_fn parts)
{
    static const struct mote_tool_def shell = {"shell", "runs", "{\"type\":\"object\"}"};

    memset(req, 0, sizeof(*req));
    req->provider = prov;
    req->model = "m";
    req->tools = &shell;
    req->ntools = 1;
    req->parts = parts;
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

/* Reasoning with what it came with: ids and blocks as they arrive. */
struct rseen {
    int n;
    char kind[16][24]; /* "T:fmt:block", "S:fmt:block", "X:slot" */
    char data[16][256];
};
static struct rseen rs;

static int on_reason(void *arg, const struct mote_llm_event *ev)
{
    (void)arg;
    if (ev->type != MOTE_LLM_THINKING && ev->type != MOTE_LLM_THINKING_SIG &&
        ev->type != MOTE_LLM_TOOL_EXTRA)
        return 0;
    assert_true(rs.n < 16);
    if (ev->type == MOTE_LLM_TOOL_EXTRA)
        snprintf(rs.kind[rs.n], sizeof(rs.kind[0]), "X:%u", ev->slot);
    else
        snprintf(rs.kind[rs.n], sizeof(rs.kind[0]), "%c:%s:%u",
                 ev->type == MOTE_LLM_THINKING ? 'T' : 'S', ev->id, ev->slot);
    snprintf(rs.data[rs.n], sizeof(rs.data[0]), "%.*s", (int)ev->len, ev->text);
    rs.n++;
    return 0;
}

static int decode_rs(enum mote_provider prov, const char *s)
{
    memset(&rs, 0, sizeof(rs));
    mote_llm_dec_init(&dec, prov, on_reason, NULL);
    mote_sse_init(&sse, on_sse, NULL);
    return mote_sse_feed(&sse, s, strlen(s));
}

/* The reasoning piece `i` seen: its kind and its text. */
static void rs_is(int i, const char *kind, const char *data)
{
    assert_string_equal(rs.kind[i], kind);
    assert_string_equal(rs.data[i], data);
}

#define AEV(name, json) "event: " name "\ndata: " json "\n\n"

static void test_reasoning_decoded_with_signatures(void **state)
{
    static const char anthropic[] =
        AEV("content_block_start", "{\"type\":\"content_block_start\",\"index\":0,"
            "\"content_block\":{\"type\":\"thinking\",\"thinking\":\"\",\"signature\":\"\"}}")
        AEV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
            "{\"type\":\"thinking_delta\",\"thinking\":\"Let me \\u00e9 see.\"}}")
        AEV("content_block_delta", "{\"type\":\"content_block_delta\",\"index\":0,\"delta\":"
            "{\"type\":\"signature_delta\",\"signature\":\"EqQBCkYI+/sig==\"}}")
        AEV("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":0}")
        AEV("content_block_start", "{\"type\":\"content_block_start\",\"index\":1,"
            "\"content_block\":{\"type\":\"redacted_thinking\",\"data\":\"EmwKAhgBEgy3va==\"}}")
        AEV("content_block_stop", "{\"type\":\"content_block_stop\",\"index\":1}");
    static const char gemini[] =
        CHUNK("{\"tool_calls\":[{\"index\":0,\"id\":\"c1\",\"function\":{\"name\":\"shell\","
              "\"arguments\":\"{}\"},\"extra_content\":{\"google\":{\"thought_signature\":"
              "\"CiQB\"}}}]}")
        CHUNK("{\"tool_calls\":[{\"index\":0,\"function\":{\"arguments\":\"\"},"
              "\"extra_content\":{\"google\":{\"thought_signature\":\"again\"}}}]}")
        FINISH("tool_calls") "data: [DONE]\n\n";

    (void)state;
    assert_int_equal(decode_rs(MOTE_PROVIDER_ANTHROPIC, anthropic), 0);
    assert_int_equal(rs.n, 3);
    rs_is(0, "T:thinking:0", "Let me \xc3\xa9 see.");
    rs_is(1, "S:thinking:0", "EqQBCkYI+/sig==");
    rs_is(2, "S:redacted:1", "EmwKAhgBEgy3va==");
    assert_true(dec.content); /* reasoning counts: never sent again after it */
    assert_int_equal(decode_rs(MOTE_PROVIDER_OPENAI, gemini), 0);
    assert_int_equal(rs.n, 1); /* once, with the call's start */
    rs_is(0, "X:0", "{\"google\":{\"thought_signature\":\"CiQB\"}}");
}

/* A conversation with reasoning, as the journal replays it. */
#define G1X "{\"google\":{\"thought_signature\":\"G1\"}}"
static const struct mote_part rs_parts[] = {
    {MOTE_ROLE_USER, MOTE_PART_TEXT, "hi", 2, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL,
     0, 0, false},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_REASONING, "old thought", 11, NULL, NULL, NULL, 0, false,
     false, NULL, 0, "thinking", 0, 0, true},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_TEXT, "hello", 5, NULL, NULL, NULL, 0, false, false, NULL, 0,
     NULL, 0, 0, false},
    {MOTE_ROLE_USER, MOTE_PART_TEXT, "list", 4, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL,
     0, 0, false},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_REASONING, "I will ", 7, NULL, NULL, NULL, 0, false, false,
     NULL, 0, "thinking", 0, 0, false},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_REASONING, "list.", 5, NULL, NULL, NULL, 0, false, false,
     NULL, 0, "thinking", 0, 0, false},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_REASONING, "SIG", 3, NULL, NULL, NULL, 0, false, false, NULL,
     0, "thinking", 0, 1, false},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_REASONING, "DATA", 4, NULL, NULL, NULL, 0, false, false, NULL,
     0, "redacted", 1, 1, false},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "c1", "shell", "{}", 2, false, false,
     G1X, sizeof(G1X) - 1, NULL, 0, 0, false},
    {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, "ok", 2, "c1", NULL, NULL, 0, false, false, NULL, 0,
     NULL, 0, 0, false},
};

static int rs_parts_fn(void *arg, unsigned index, struct mote_part *p)
{
    const struct mote_part *set = arg;

    if (index >= sizeof(rs_parts) / sizeof(rs_parts[0]))
        return 0;
    *p = set[index];
    if (set != rs_parts && p->type == MOTE_PART_REASONING)
        p->fmt = "reasoning_content"; /* as an OpenAI-compatible server's (its signatures are
                                       * never sent there) */
    return 1;
}

static void test_reasoning_sent_back_where_needed(void **state)
{
    static struct mote_part openai_parts[sizeof(rs_parts) / sizeof(rs_parts[0])];
    struct mote_llm_req req;
    const struct buf *b;

    (void)state;
    shell_req(&req, MOTE_PROVIDER_ANTHROPIC, rs_parts_fn);
    req.parts_arg = (void *)rs_parts;
    req.thinking_budget = 2048;
    req.max_tokens = 1000; /* below the budget: raised */
    mote_llm_profile_req(mote_llm_profile_find("anthropic"), &req);
    b = body_of(&req);
    /* the current turn's blocks, byte for byte, before the call; the
     * earlier turn's left out; the limit above the budget */
    assert_non_null(strstr(b->p, "\"thinking\":{\"type\":\"enabled\",\"budget_tokens\":2048}"));
    assert_non_null(strstr(b->p, "\"max_tokens\":6144"));
    assert_non_null(strstr(b->p, "{\"role\":\"assistant\",\"content\":[{\"type\":\"thinking\","
                                "\"thinking\":\"I will list.\",\"signature\":\"SIG\"},{\"type\":"
                                "\"redacted_thinking\",\"data\":\"DATA\"},{\"type\":\"tool_use\""));
    assert_null(strstr(b->p, "old thought"));
    assert_null(strstr(b->p, "thought_signature")); /* Gemini's: not Anthropic's */

    /* OpenAI-compatible: reasoning_content where the profile needs it */
    memcpy(openai_parts, rs_parts, sizeof(rs_parts));
    req.provider = MOTE_PROVIDER_OPENAI;
    req.parts_arg = openai_parts;
    req.thinking_budget = 0;
    mote_llm_profile_req(mote_llm_profile_find("openai-compatible"), &req);
    b = body_of(&req);
    assert_null(strstr(b->p, "reasoning_content"));
    assert_null(strstr(b->p, "extra_content"));
    mote_llm_profile_req(mote_llm_profile_find("kimi"), &req); /* the current turn's */
    b = body_of(&req);
    assert_null(strstr(b->p, "old thought"));
    assert_non_null(strstr(b->p, "{\"role\":\"assistant\",\"reasoning_content\":\"I will list.\","
                                "\"content\":null,\"tool_calls\":[{\"id\":\"c1\""));
    mote_llm_profile_req(mote_llm_profile_find("deepseek"), &req); /* every turn's */
    b = body_of(&req);
    assert_non_null(strstr(b->p, "{\"role\":\"assistant\",\"reasoning_content\":\"old thought\","
                                "\"content\":\"hello\"}"));
    mote_llm_profile_req(mote_llm_profile_find("gemini"), &req); /* the call's extras */
    b = body_of(&req);
    assert_non_null(strstr(b->p, "\"arguments\":\"{}\"},\"extra_content\":{\"google\":"
                                "{\"thought_signature\":\"G1\"}}}"));
    assert_null(strstr(b->p, "reasoning_content"));
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
    {MOTE_ROLE_USER, MOTE_PART_TEXT, "hi", 2, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL,
     0, 0, false},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "functions.shell:0", "shell", "{}", 2,
     false, false, NULL, 0, NULL, 0, 0, false},
    {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, "ok", 2, "functions.shell:0", NULL, NULL, 0, false,
     false, NULL, 0, NULL, 0, 0, false},
};

static int parts_fn(void *arg, unsigned index, struct mote_part *p)
{
    (void)arg;
    if (index >= sizeof(conv_parts) / sizeof(conv_parts[0]))
        return 0;
    *p = conv_parts[index];
    return 1;
}


static void test_foreign_ids_fit_anthropic(void **state)
{
    struct mote_llm_req req;
    const struct buf *b;
    const char *a, *c;

    (void)state;
    shell_req(&req, MOTE_PROVIDER_ANTHROPIC, parts_fn);
    b = body_of(&req);
    a = strstr(b->p, "\"id\":\"toolu_mote_");
    c = strstr(b->p, "\"tool_use_id\":\"toolu_mote_");
    assert_non_null(a);
    assert_non_null(c);
    assert_memory_equal(a + 6, c + 15, 27); /* the same id for the call and its result */
    assert_null(strstr(b->p, "functions.shell"));
    /* OpenAI-compatible: as it came */
    req.provider = MOTE_PROVIDER_OPENAI;
    b = body_of(&req);
    assert_non_null(strstr(b->p, "\"id\":\"functions.shell:0\""));
    assert_non_null(strstr(b->p, "\"tool_call_id\":\"functions.shell:0\""));
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

        assert_true(p->name[0] != '\0' && p->hosts != NULL);
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
    struct mote_llm_req req;
    const struct buf *b;

    (void)state;
    shell_req(&req, MOTE_PROVIDER_OPENAI, parts_fn);
    req.max_tokens = 100;
    req.no_tool_calls = true;
    /* OpenAI's own: as ever */
    mote_llm_profile_req(mote_llm_profile_find("openai"), &req);
    b = body_of(&req);
    assert_non_null(strstr(b->p, "\"stream_options\":{\"include_usage\":true}"));
    assert_non_null(strstr(b->p, "\"max_completion_tokens\":100"));
    assert_non_null(strstr(b->p, "\"tool_choice\":\"none\""));
    /* Mistral's: no stream_options, max_tokens */
    mote_llm_profile_req(mote_llm_profile_find("mistral"), &req);
    b = body_of(&req);
    assert_null(strstr(b->p, "stream_options"));
    assert_non_null(strstr(b->p, "\"max_tokens\":100"));
    /* a refused tool_choice */
    req.omit |= MOTE_LLM_KEY_TOOL_CHOICE;
    b = body_of(&req);
    assert_null(strstr(b->p, "tool_choice"));
    /* Anthropic: the cache breakpoints, unless refused */
    req.provider = MOTE_PROVIDER_ANTHROPIC;
    req.system = "sys";
    mote_llm_profile_req(mote_llm_profile_find("anthropic"), &req);
    b = body_of(&req);
    assert_non_null(strstr(b->p, "cache_control"));
    req.omit |= MOTE_LLM_KEY_CACHE_CONTROL;
    b = body_of(&req);
    assert_null(strstr(b->p, "cache_control"));
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

/* ---- over the context window ----------------------------------------------------- */

static void test_overflow_detected(void **state)
{
    static const struct {
        const char *body;
        uint32_t limit, used;
    } yes[] = {
        {"{\"error\":{\"code\":400,\"message\":\"the request exceeds the available context "
         "size, try increasing it\",\"type\":\"exceed_context_size_error\",\"n_prompt_tokens\":"
         "5120,\"n_ctx\":4096}}", 4096, 5120},
        {"{\"error\":{\"message\":\"This model's maximum context length is 128000 tokens. "
         "However, your messages resulted in 130021 tokens. Please reduce the length of the "
         "messages.\",\"type\":\"invalid_request_error\",\"param\":\"messages\",\"code\":"
         "\"context_length_exceeded\"}}", 128000, 130021},
        {"{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":"
         "\"prompt is too long: 210000 tokens > 200000 maximum\"}}", 200000, 210000},
        {"[{\"error\":{\"code\":400,\"message\":\"The input token count (1048577) exceeds the "
         "maximum number of tokens allowed (1048576).\",\"status\":\"INVALID_ARGUMENT\"}}]",
         1048576, 1048577},
        {"{\"object\":\"error\",\"message\":\"Prompt contains 40000 tokens, too large for model "
         "with 32768 maximum context length\",\"type\":\"invalid_request_error\"}", 32768, 40000},
        {"{\"object\":\"error\",\"message\":\"This model's maximum context length is 8192 "
         "tokens. However, you requested 9000 tokens (8000 in the messages, 1000 in the "
         "completion).\",\"type\":\"BadRequestError\",\"code\":400}", 8192, 9000},
        /* Kimi on Moonshot's API (MoonshotAI/kimi-cli #2011) */
        {"{\"error\":{\"message\":\"Invalid request: Your request exceeded model token limit: "
         "262144 (requested: 269030)\",\"type\":\"invalid_request_error\"}}", 262144, 269030},
    };
    static const char *const no[] = {
        "{\"error\":{\"message\":\"max_tokens is too large\",\"type\":\"invalid_request_error\"}}",
        "{\"type\":\"error\",\"error\":{\"type\":\"invalid_request_error\",\"message\":"
        "\"messages: text content blocks must be non-empty\"}}",
        "",
    };
    uint32_t limit, used;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        assert_true(mote_llm_overflow(yes[i].body, strlen(yes[i].body), &limit, &used));
        assert_int_equal(limit, yes[i].limit);
        assert_int_equal(used, yes[i].used);
    }
    for (i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        assert_false(mote_llm_overflow(no[i], strlen(no[i]), &limit, &used));
}

static const struct mote_part cut_parts[] = {
    {MOTE_ROLE_USER, MOTE_PART_TEXT, "go", 2, NULL, NULL, NULL, 0, false, false, NULL, 0, NULL,
     0, 0, false},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "c1", "shell", "{}", 2, false, false,
     NULL, 0, NULL, 0, 0, false},
    {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, NULL, 0, "c1", NULL, NULL, 0, false, false, NULL, 0,
     NULL, 0, 0, false},
    {MOTE_ROLE_ASSISTANT, MOTE_PART_TOOL_CALL, NULL, 0, "c2", "shell", "{}", 2, false, false,
     NULL, 0, NULL, 0, 0, false},
    {MOTE_ROLE_USER, MOTE_PART_TOOL_RESULT, NULL, 0, "c2", NULL, NULL, 0, false, false, NULL, 0,
     NULL, 0, 0, false},
};

static char big_result[6000];

static int cut_parts_fn(void *arg, unsigned index, struct mote_part *p)
{
    (void)arg;
    if (index >= sizeof(cut_parts) / sizeof(cut_parts[0]))
        return 0;
    *p = cut_parts[index];
    if (p->type == MOTE_PART_TOOL_RESULT) {
        p->text = big_result;
        p->text_len = sizeof(big_result);
    }
    return 1;
}

static void test_results_cut_to_fit(void **state)
{
    struct mote_llm_req req;
    const struct buf *b;
    size_t i;
    const char *a, *z;

    (void)state;
    for (i = 0; i < sizeof(big_result); i++)
        big_result[i] = i % 10 == 9 ? '\n' : (char)('0' + (i / 10) % 10);
    shell_req(&req, MOTE_PROVIDER_OPENAI, cut_parts_fn);
    req.result_cap = 1200;
    req.window = 1500;
    b = body_of(&req);
    a = strstr(b->p, "bytes of this result cut here to fit the model's context window (1500 tokens)");
    assert_non_null(a);
    assert_non_null(strstr(a + 1, "cut here")); /* both results */
    assert_true(b->n < 2 * 1400 + 1000);
    /* the oldest only, harder */
    req.result_cap = 0;
    req.old_results = 1;
    req.old_cap = 300;
    b = body_of(&req);
    a = strstr(b->p, "cut here");
    assert_non_null(a);
    assert_null(strstr(a + 1, "cut here"));
    z = strstr(b->p, "\"tool_call_id\":\"c2\"");
    assert_true(z != NULL && z > a);
    assert_true(b->n > sizeof(big_result)); /* the newest whole */
    /* the same through the pull stream, any piece size */
    {
        static char got[20000];

        assert_int_equal(body_pull(&req, got, sizeof(got), 7), b->n);
        assert_memory_equal(got, b->p, b->n);
    }
}

/* ---- the Responses API ------------------------------------------------------------ */

static int decode_file(const char *name, size_t step)
{
    size_t n = 0;
    char *buf = fixture_read(name, &n);
    int rc;

    if (buf == NULL)
        return 1;
    memset(&sn, 0, sizeof(sn));
    mote_llm_dec_init(&dec, MOTE_PROVIDER_OPENAI_RESPONSES, on_llm, &sn);
    mote_sse_init(&sse, on_sse, NULL);
    rc = sse_feed_steps(&sse, buf, n, step);
    free(buf);
    return rc;
}

static void test_responses_recorded(void **state)
{
    static struct seen whole;
    size_t steps[] = {0, 1, 97};
    size_t i;

    (void)state;
    if (decode_file("openai-responses-function-call.sse", 0) == 1) {
        printf("skipped: the recordings are absent\n");
        skip();
    }
    for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
        assert_int_equal(decode_file("openai-responses-function-call.sse", steps[i]), 0);
        assert_int_equal(sn.ncalls, 1);
        assert_string_equal(sn.id[0], "call_nYgMM3oZuxort2H8Ky4uP5RE");
        assert_string_equal(sn.name[0], "weather");
        assert_string_equal(sn.args[0], "{\"location\":\"Florence, Italy\"}");
        assert_int_equal(sn.ended[0], 1);
        assert_string_equal(sn.stop, "tool_use");
        assert_int_equal(sn.done, 1);
        assert_string_equal(sn.thinking, ""); /* (no summary asked, no encrypted content) */
    }
    assert_int_equal(decode_file("openai-responses-text.sse", 0), 0);
    whole = sn;
    assert_true(strlen(whole.text) > 20 && whole.done == 1);
    assert_string_equal(whole.stop, "end_turn");
    assert_int_equal(decode_file("openai-responses-text.sse", 1), 0);
    assert_string_equal(sn.text, whole.text);
    assert_int_equal(decode_file("openai-responses-text-2025-03.sse", 0), 0);
    assert_string_equal(sn.text, "Hi there! How can I assist you today?");
    assert_int_equal(sn.done, 1);
}

static void test_responses_events(void **state)
{
    static const char stream[] =
        AEV("response.output_item.added", "{\"type\":\"response.output_item.added\","
            "\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[]}}")
        AEV("response.reasoning_summary_text.delta", "{\"type\":"
            "\"response.reasoning_summary_text.delta\",\"output_index\":0,\"delta\":\"Hm.\"}")
        AEV("response.output_item.done", "{\"type\":\"response.output_item.done\","
            "\"output_index\":0,\"item\":{\"type\":\"reasoning\",\"id\":\"rs_1\",\"summary\":[],"
            "\"encrypted_content\":\"gAAAAB==\"}}")
        AEV("response.output_item.added", "{\"type\":\"response.output_item.added\","
            "\"output_index\":1,\"item\":{\"type\":\"function_call\",\"id\":\"fc_1\","
            "\"call_id\":\"call_a\",\"name\":\"shell\",\"arguments\":\"\"}}")
        AEV("response.output_item.added", "{\"type\":\"response.output_item.added\","
            "\"output_index\":2,\"item\":{\"type\":\"function_call\",\"id\":\"fc_2\","
            "\"call_id\":\"call_b\",\"name\":\"list_dir\",\"arguments\":\"\"}}")
        AEV("response.function_call_arguments.delta", "{\"type\":"
            "\"response.function_call_arguments.delta\",\"output_index\":2,\"delta\":\"{}\"}")
        AEV("response.output_item.done", "{\"type\":\"response.output_item.done\","
            "\"output_index\":1,\"item\":{\"type\":\"function_call\",\"call_id\":\"call_a\","
            "\"name\":\"shell\",\"arguments\":\"{\\\"command\\\":\\\"ls\\\"}\"}}")
        AEV("response.output_item.done", "{\"type\":\"response.output_item.done\","
            "\"output_index\":2,\"item\":{\"type\":\"function_call\",\"call_id\":\"call_b\","
            "\"name\":\"list_dir\",\"arguments\":\"{}\"}}")
        AEV("response.incomplete", "{\"type\":\"response.incomplete\",\"response\":{"
            "\"incomplete_details\":{\"reason\":\"max_output_tokens\"},\"usage\":{"
            "\"input_tokens\":100,\"input_tokens_details\":{\"cached_tokens\":60},"
            "\"output_tokens\":7}}}");
    static const char failed[] =
        AEV("response.failed", "{\"type\":\"response.failed\",\"response\":{\"error\":{"
            "\"code\":\"server_error\",\"message\":\"The model had a hiccup.\"}}}");

    (void)state;
    memset(&rs, 0, sizeof(rs));
    assert_int_equal(decode(MOTE_PROVIDER_OPENAI_RESPONSES, stream), 0);
    assert_string_equal(sn.thinking, "Hm.");
    assert_int_equal(sn.ncalls, 2);
    assert_string_equal(sn.args[0], "{\"command\":\"ls\"}"); /* whole in its done item */
    assert_string_equal(sn.args[1], "{}");                  /* from its delta, not twice */
    assert_string_equal(sn.stop, "max_tokens");
    assert_int_equal(sn.done, 1);
    assert_int_equal(decode_rs(MOTE_PROVIDER_OPENAI_RESPONSES, stream), 0);
    rs_is(1, "S:responses:0", "gAAAAB==");
    (void)decode(MOTE_PROVIDER_OPENAI_RESPONSES, failed); /* (the test callback goes on) */
    assert_int_equal(sn.errors, 1);
    assert_string_equal(sn.err, "The model had a hiccup.");
    assert_true(mote_llm_responses_only("gpt-5-codex"));
    assert_true(mote_llm_responses_only("gpt-5.1-codex-mini"));
    assert_true(mote_llm_responses_only("gpt-5-pro"));
    assert_true(mote_llm_responses_only("o3-pro-2025-06-10"));
    assert_false(mote_llm_responses_only("gpt-5"));
    assert_false(mote_llm_responses_only("gpt-5-mini"));
    assert_false(mote_llm_responses_only("gpt-4o"));
    assert_false(mote_llm_responses_only("gpt-5-protect")); /* (no such model; not "-pro") */
    assert_string_equal(mote_llm_path(MOTE_PROVIDER_OPENAI_RESPONSES, "/v1"), "/responses");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_shapes),
        cmocka_unit_test(test_error_array_event),
        cmocka_unit_test(test_finish_without_done),
        cmocka_unit_test(test_reasoning_field_is_thinking),
        cmocka_unit_test(test_reasoning_decoded_with_signatures),
        cmocka_unit_test(test_reasoning_sent_back_where_needed),
        cmocka_unit_test(test_ids_kept_for_the_dialect),
        cmocka_unit_test(test_calls_sharing_an_index),
        cmocka_unit_test(test_foreign_ids_fit_anthropic),
        cmocka_unit_test(test_profile_pick),
        cmocka_unit_test(test_profile_bodies),
        cmocka_unit_test(test_refusals_teach),
        cmocka_unit_test(test_overflow_detected),
        cmocka_unit_test(test_results_cut_to_fit),
        cmocka_unit_test(test_responses_recorded),
        cmocka_unit_test(test_responses_events),
    };

    return cmocka_run_group_tests_name("providers", tests, NULL, NULL);
}
