/* test_sse.c - the SSE parser against the recorded fixtures and limits. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"
#include "mote/mote_sse.h"

#define MAXEV 256

struct events {
    int n;
    char name[MAXEV][MOTE_SSE_NAME_MAX];
    char id[MAXEV][MOTE_SSE_NAME_MAX];
    size_t len[MAXEV];
    char *data[MAXEV];
    uint64_t hash;
};

static struct mote_sse sse; /* 64 KiB: not on the stack */

static int collect(void *arg, const char *event, const char *data, size_t len, const char *id)
{
    struct events *e = arg;
    size_t i;

    assert_int_equal(data[len], '\0');
    for (i = 0; event[i] != '\0'; i++)
        e->hash = (e->hash ^ (unsigned char)event[i]) * 1099511628211u;
    for (i = 0; i < len; i++)
        e->hash = (e->hash ^ (unsigned char)data[i]) * 1099511628211u;
    for (i = 0; id[i] != '\0'; i++)
        e->hash = (e->hash ^ (unsigned char)id[i]) * 1099511628211u;
    e->hash = (e->hash ^ 0xFF) * 1099511628211u;
    if (e->n < MAXEV) {
        strcpy(e->name[e->n], event);
        strcpy(e->id[e->n], id);
        e->len[e->n] = len;
        e->data[e->n] = malloc(len + 1);
        memcpy(e->data[e->n], data, len + 1);
    }
    e->n++;
    return 0;
}

static void events_free(struct events *e)
{
    int i;

    for (i = 0; i < e->n && i < MAXEV; i++)
        free(e->data[i]);
    memset(e, 0, sizeof(*e));
}

/* Feeds `buf` in pieces: step 0 = whole, 1 = byte by byte, else random. */
static int feed(struct events *e, const char *buf, size_t n, int mode, unsigned seed)
{
    size_t at = 0;
    int rc = 0;

    memset(e, 0, sizeof(*e));
    e->hash = 14695981039346656037u;
    mote_sse_init(&sse, collect, e);
    while (at < n && rc == 0) {
        size_t piece = n - at;

        if (mode == 1)
            piece = 1;
        else if (mode == 2) {
            seed = seed * 1103515245u + 12345u;
            piece = 1 + (seed >> 8) % 97;
            if (piece > n - at)
                piece = n - at;
        }
        rc = mote_sse_feed(&sse, buf + at, piece);
        at += piece;
    }
    return rc;
}

/* Feeds fixture `name` as feed() does (the test is skipped when the
 * fixtures are absent); the parse must succeed. */
static void feed_fixture(struct events *e, const char *name, int mode, unsigned seed)
{
    size_t n = 0;
    char *buf;

    FIXTURE_OR_SKIP(buf, name, &n);
    assert_int_equal(feed(e, buf, n, mode, seed), 0);
    free(buf);
}

static void test_mixed_line_endings(void **state)
{
    struct events e;

    (void)state;
    feed_fixture(&e, "sse-mixed-line-endings.bin", 0, 0);
    assert_int_equal(e.n, 2);
    assert_string_equal(e.data[0], "известни");
    assert_string_equal(e.id[0], "one");
    assert_string_equal(e.data[1], "two");
    assert_string_equal(e.id[1], "one"); /* the id carries over */
    assert_true(mote_sse_pending(&sse)); /* "data:unfinished" is dropped */
    events_free(&e);
}

static int hexval(char c)
{
    return c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0';
}

static void test_utf8_split_chunks(void **state)
{
    struct events e;
    size_t n, i;
    char *buf, *line, *save = NULL;

    (void)state;
    FIXTURE_OR_SKIP(buf, "sse-utf8-split.chunks.hex", &n);
    memset(&e, 0, sizeof(e));
    mote_sse_init(&sse, collect, &e);
    /* One network chunk per line, in hex. */
    for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
        char chunk[256];
        size_t len = strlen(line) / 2;

        for (i = 0; i < len; i++)
            chunk[i] = (char)(hexval(line[2 * i]) * 16 + hexval(line[2 * i + 1]));
        assert_int_equal(mote_sse_feed(&sse, chunk, len), 0);
    }
    assert_int_equal(e.n, 1);
    assert_string_equal(e.data[0], "{\"content\":\"известни\"}");
    events_free(&e);
    free(buf);
}

static void test_u2028_does_not_end_a_line(void **state)
{
    struct events e;

    (void)state;
    feed_fixture(&e, "sse-u2028-in-json.sse", 1, 0);
    assert_int_equal(e.n, 3);
    assert_string_equal(e.data[1], "{\"content\":\" \xe2\x80\xa8\"}");
    events_free(&e);
}

static void test_multiline_data(void **state)
{
    struct events e;

    (void)state;
    feed_fixture(&e, "sse-multiline-data.sse", 0, 0);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.name[0], "ping");
    assert_string_equal(e.data[0], "{\n\"foo\":\n\n\ntrue}");
    events_free(&e);
}

static void test_retry_and_priming(void **state)
{
    struct events e;

    (void)state;
    feed_fixture(&e, "sse-retry-priming.sse", 1, 0);
    /* The priming event has empty data (dispatched empty, as WHATWG says;
     * MCP readers ignore it), then the notification. */
    assert_int_equal(e.n, 2);
    assert_int_equal(e.len[0], 0);
    assert_string_equal(e.id[0], "evt-1");
    assert_string_equal(e.name[1], "message");
    assert_true(strstr(e.data[1], "\"notification\"") != NULL);
    assert_int_equal(sse.retry_ms, 3000);
    events_free(&e);
}

static void test_no_space_after_colon(void **state)
{
    struct events e;

    (void)state;
    feed_fixture(&e, "mcp-spring-sse-nospace.sse", 2, 7);
    assert_int_equal(e.n, 4);
    assert_string_equal(e.name[0], "endpoint");
    assert_string_equal(e.id[0], "b3c02e8a-7cc2-4d09-a3d5-1916c895e279");
    assert_true(strncmp(e.data[0], "/api/mcp/message?sessionId=", 27) == 0);
    assert_string_equal(e.name[1], "message");
    events_free(&e);
}

/* Every stream fixture parses to the same events whole, byte by byte and
 * split at random points. */
static void test_all_fixtures_split_invariant(void **state)
{
    static const char *const names[] = {
        "anthropic-text.sse", "anthropic-tool-use.sse", "anthropic-max-tokens-partial-json.sse",
        "anthropic-tool-use-parallel-live.sse", "anthropic-thinking-live.sse",
        "anthropic-web-search-long-line.sse",
        "openai-chat-text.sse", "openai-chat-tool-calls-parallel.sse",
        "openai-chat-n3-choices.sse", "openai-chat-parallel-obfuscation-live.sse",
        "openai-responses-function-call.sse", "openai-responses-text.sse",
        "openai-responses-text-2025-03.sse", "llamacpp-chat-tool-call.sse",
        "deepseek-chat-text.sse", "openrouter-chat-comments.sse",
    };
    size_t k;
    int parsed = 0;

    (void)state;
    for (k = 0; k < sizeof(names) / sizeof(names[0]); k++) {
        struct events whole, bytes, rnd;
        size_t n;
        char *buf = fixture_read(names[k], &n);
        unsigned seed;

        if (buf == NULL)
            continue;
        assert_int_equal(feed(&whole, buf, n, 0, 0), 0);
        assert_true(whole.n > 0);
        assert_int_equal(feed(&bytes, buf, n, 1, 0), 0);
        assert_int_equal(bytes.n, whole.n);
        assert_true(bytes.hash == whole.hash);
        for (seed = 1; seed <= 5; seed++) {
            assert_int_equal(feed(&rnd, buf, n, 2, seed), 0);
            assert_int_equal(rnd.n, whole.n);
            assert_true(rnd.hash == whole.hash);
            events_free(&rnd);
        }
        events_free(&whole);
        events_free(&bytes);
        free(buf);
        parsed++;
    }
    if (parsed == 0)
        skip();
}

/* The docs' error event has no blank line after it: it is dispatched only
 * once the stream ends the event. */
static void test_error_event_needs_terminator(void **state)
{
    struct events e;

    (void)state;
    feed_fixture(&e, "anthropic-error-event-docs.sse", 0, 0);
    assert_int_equal(e.n, 0);
    assert_int_equal(mote_sse_feed(&sse, "\n", 1), 0);
    assert_int_equal(e.n, 1);
    assert_string_equal(e.name[0], "error");
    assert_true(strstr(e.data[0], "overloaded_error") != NULL);
    events_free(&e);
}

static void test_long_line_and_limit(void **state)
{
    static char big[MOTE_SSE_DATA_MAX + 64];
    struct events e;
    size_t n = 0;

    (void)state;
    /* A data line of exactly the limit passes. */
    memcpy(big, "data: ", 6);
    memset(big + 6, 'x', MOTE_SSE_DATA_MAX);
    memcpy(big + 6 + MOTE_SSE_DATA_MAX, "\n\n", 2);
    n = 6 + MOTE_SSE_DATA_MAX + 2;
    assert_int_equal(feed(&e, big, n, 2, 3), 0);
    assert_int_equal(e.n, 1);
    assert_int_equal(e.len[0], MOTE_SSE_DATA_MAX);
    events_free(&e);
    /* One byte more fails cleanly, and stays failed. */
    memset(big + 6, 'x', MOTE_SSE_DATA_MAX + 1);
    memcpy(big + 7 + MOTE_SSE_DATA_MAX, "\n\n", 2);
    assert_int_equal(feed(&e, big, n + 1, 0, 0), MOTE_ERR_TOO_LARGE);
    assert_int_equal(e.n, 0);
    assert_int_equal(mote_sse_feed(&sse, "data: a\n\n", 9), MOTE_ERR_TOO_LARGE);
    /* Joined data lines count too. */
    memset(&e, 0, sizeof(e));
    mote_sse_init(&sse, collect, &e);
    {
        int i, rc = 0;
        char line[1030];

        memcpy(line, "data: ", 6);
        memset(line + 6, 'y', 1023);
        line[1029] = '\n';
        for (i = 0; i < 200 && rc == 0; i++)
            rc = mote_sse_feed(&sse, line, sizeof(line));
        assert_int_equal(rc, MOTE_ERR_TOO_LARGE);
    }
}

static int stop_cb(void *arg, const char *event, const char *data, size_t len, const char *id)
{
    (void)arg, (void)event, (void)data, (void)len, (void)id;
    return MOTE_ERR_PROTO;
}

static void test_edge_cases(void **state)
{
    static const char in[] = ": comment only\n\nevent: a\n\n"  /* no data: nothing */
                             "data\n\n"                        /* no colon: empty data */
                             "dat\n\n"                         /* unknown field */
                             "event:x\ndata:1\ndata:2\r\n\r\n"
                             "retry: 12a\nretry: 250\nid: 9\ndata: z\r\r";
    struct events e;

    (void)state;
    assert_int_equal(feed(&e, in, sizeof(in) - 1, 1, 0), 0);
    assert_int_equal(e.n, 3);
    assert_int_equal(e.len[0], 0);
    assert_string_equal(e.name[0], "message"); /* the "a" name did not leak */
    assert_string_equal(e.name[1], "x");
    assert_string_equal(e.data[1], "1\n2");
    assert_string_equal(e.data[2], "z");
    assert_string_equal(e.id[2], "9");
    assert_int_equal(sse.retry_ms, 250);
    events_free(&e);
    /* The callback's error stops the parser. */
    mote_sse_init(&sse, stop_cb, NULL);
    assert_int_equal(mote_sse_feed(&sse, "data: 1\n\ndata: 2\n\n", 18), MOTE_ERR_PROTO);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_line_endings),
        cmocka_unit_test(test_utf8_split_chunks),
        cmocka_unit_test(test_u2028_does_not_end_a_line),
        cmocka_unit_test(test_multiline_data),
        cmocka_unit_test(test_retry_and_priming),
        cmocka_unit_test(test_no_space_after_colon),
        cmocka_unit_test(test_all_fixtures_split_invariant),
        cmocka_unit_test(test_error_event_needs_terminator),
        cmocka_unit_test(test_long_line_and_limit),
        cmocka_unit_test(test_edge_cases),
    };

    return cmocka_run_group_tests_name("sse", tests, NULL, NULL);
}
