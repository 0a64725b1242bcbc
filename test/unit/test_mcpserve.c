/*
 * test_mcpserve.c - mote serve's MCP server and OpenAI door
 * (serve_mcp.h) on the deterministic test port: scripted clients on
 * served sockets, simulated time (progress ticks), tools of the test's
 * own. What the real clients see is test/integration/test_mcp_server.py.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mote/mote_agent.h"
#include "mote/mote_serve.h"
#include "mote_tport.h"
#include "serve_unit.h"

static struct mote_tport_resp script[4];

/* ---- tools of the test ---- */

static unsigned runs;
static bool hang; /* a run waits until cancelled */

static int probe_step(struct mote_loop *l, mote_job_id self, struct mote_tool_run *run)
{
    bool *begun = (bool *)run->st.user;

    if (!*begun) {
        *begun = true;
        runs++;
    }
    if (mote_job_cancelled(l, self))
        return MOTE_STEP_CANCELLED;
    if (hang) {
        assert_int_equal(mote_timer_start(l, 100, NULL, NULL, self, NULL), 0);
        return MOTE_STEP_PENDING;
    }
    mote_tool_outs(run, "probe: \"ok\"\n\x01");
    return MOTE_STEP_DONE;
}

/* A long description each: the page of a small budget holds a few. */
#define LONG_DESC                                                                                  \
    "A tool of the test whose description is long enough that a small page holds only a few of " \
    "them: it reads nothing, changes nothing and answers ok."
static const struct mote_tool tools[] = {
    {"probe", LONG_DESC, "{\"type\":\"object\"}", probe_step, NULL, NULL, MOTE_TOOL_NO_APPROVAL},
    {"t1", LONG_DESC, "{\"type\":\"object\"}", probe_step, NULL, NULL, 0},
    {"t2", LONG_DESC, "{\"type\":\"object\"}", probe_step, NULL, NULL, 0},
    {"t3", LONG_DESC, "{\"type\":\"object\"}", probe_step, NULL, NULL, 0},
    {"t4", LONG_DESC, "{\"type\":\"object\"}", probe_step, NULL, NULL, 0},
    {"t5", LONG_DESC, "{\"type\":\"object\"}", probe_step, NULL, NULL, 0},
    {"t6", LONG_DESC, "{\"type\":\"object\"}", probe_step, NULL, NULL, 0},
    {"t7", LONG_DESC, "{\"type\":\"object\"}", probe_step, NULL, NULL, 0},
};

/* ---- setup ---- */

static int setup(void **state)
{
    (void)state;
    runs = 0;
    hang = false;
    kit_conf(script);
    vc.mcp_page_bytes = 1024;
    assert_int_equal(kit_start(tools, sizeof(tools) / sizeof(tools[0])), 0);
    return 0;
}

/* A POST /mcp on a new connection (`accept` its Accept); turns until
 * `until` is in what came back, or the server closed. */
static int post(const char *sid, const char *accept, const char *body, const char *until)
{
    static char req[8192];
    unsigned i;
    int p;

    snprintf(req, sizeof(req),
             "POST /mcp HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nAccept: %s\r\n"
             "%s%s%sContent-Length: %zu\r\n\r\n%s",
             accept, sid != NULL ? "Mcp-Session-Id: " : "", sid != NULL ? sid : "",
             sid != NULL ? "\r\n" : "", strlen(body), body);
    p = mote_tport_peer_connect(&tp, false);
    assert_true(p >= 0);
    mote_tport_peer_write(&tp, p, req, strlen(req));
    for (i = 0; i < 300; i++) {
        turns(1);
        if (mote_tport_peer_get(&tp, p)->server_closed ||
            (until != NULL && strstr(sent(p), until) != NULL))
            break;
    }
    return p;
}

/* The body of a chunked response in `r` (its head included), its chunks
 * joined, into out. */
static const char *dechunk(const char *r, char *out, size_t cap)
{
    const char *p = strstr(r, "\r\n\r\n");
    size_t o = 0;

    assert_non_null(p);
    p += 4;
    for (;;) {
        unsigned long n = strtoul(p, NULL, 16);

        p = strstr(p, "\r\n");
        assert_non_null(p);
        p += 2;
        if (n == 0)
            break;
        assert_true(o + n < cap);
        memcpy(out + o, p, n);
        o += n;
        p += n + 2;
    }
    out[o] = '\0';
    return out;
}

/* Initializes a session (protocol `version`): its id into sid. */
static void initialize(const char *version, char sid[40])
{
    char body[256];
    const char *h;
    int p;

    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":{"
             "\"protocolVersion\":\"%s\",\"capabilities\":{},\"clientInfo\":{\"name\":\"unit\"}}}",
             version);
    p = post(NULL, "application/json, text/event-stream", body, "\"serverInfo\"");
    h = strstr(sent(p), "Mcp-Session-Id: ");
    assert_non_null(h);
    snprintf(sid, 40, "%.32s", h + 16);
    assert_non_null(strstr(sent(p), "\"protocolVersion\":\""));
    mote_tport_peer_close(&tp, p);
    turns(2);
}

/* ---- tests ---- */

/* tools/list in pages of the budget, each tool once, the one that
 * changes nothing marked read-only; a cursor of a list that changed is
 * refused, and the session's GET stream hears the change. */
static void test_list_pages_cursor_and_list_changed(void **state)
{
    char sid[40], body[256], cursor[48] = "", seen[1024] = "";
    unsigned pages = 0, i;
    int p, g;

    (void)state;
    initialize("2025-06-18", sid);
    do {
        const char *r, *nc, *t;

        if (cursor[0] != '\0')
            snprintf(body, sizeof(body),
                     "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\",\"params\":{"
                     "\"cursor\":\"%s\"}}",
                     cursor);
        else
            snprintf(body, sizeof(body), "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
        p = post(sid, "application/json", body, "\"tools\"");
        r = strstr(sent(p), "\r\n\r\n");
        assert_non_null(r);
        assert_true(strlen(r) < 1024 + 600); /* a page holds about its budget */
        for (t = r; (t = strstr(t, "{\"name\":\"")) != NULL; t++) {
            char name[32];

            snprintf(name, sizeof(name), "%.*s|", (int)(strchr(t + 9, '"') - (t + 9)), t + 9);
            assert_null(strstr(seen, name)); /* each tool once */
            strcat(seen, name);
        }
        nc = strstr(r, "\"nextCursor\":\"");
        cursor[0] = '\0';
        if (nc != NULL)
            snprintf(cursor, sizeof(cursor), "%.*s", (int)(strchr(nc + 14, '"') - (nc + 14)),
                     nc + 14);
        if (pages == 0)
            assert_non_null(strstr(r, "\"name\":\"probe\",\"description\":\"" LONG_DESC
                                      "\",\"inputSchema\":{\"type\":\"object\"},\"annotations\":"
                                      "{\"readOnlyHint\":true}}"));
        mote_tport_peer_close(&tp, p);
        pages++;
    } while (cursor[0] != '\0' && pages < 20);
    assert_true(pages >= 3);
    for (i = 0; i < sizeof(tools) / sizeof(tools[0]); i++) {
        char name[32];

        snprintf(name, sizeof(name), "%s|", tools[i].name);
        assert_non_null(strstr(seen, name));
    }
    assert_non_null(strstr(seen, "ask|"));
    /* the session's GET stream, then a new list: told; an old cursor refused */
    snprintf(body, sizeof(body),
             "GET /mcp HTTP/1.1\r\nHost: t\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\n\r\n",
             sid);
    g = mote_tport_peer_connect(&tp, false);
    mote_tport_peer_write(&tp, g, body, strlen(body));
    turns(3);
    assert_non_null(strstr(sent(g), "Content-Type: text/event-stream"));
    p = post(sid, "application/json", "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}",
             NULL);
    assert_non_null(strstr(sent(p), "HTTP/1.1 202 Accepted"));
    p = post(sid, "application/json", "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/list\"}",
             "nextCursor");
    {
        const char *nc = strstr(sent(p), "\"nextCursor\":\"");

        assert_non_null(nc);
        snprintf(cursor, sizeof(cursor), "%.*s", (int)(strchr(nc + 14, '"') - (nc + 14)), nc + 14);
    }
    mote_serve_tools_changed(&srv);
    turns(3);
    assert_non_null(strstr(sent(g), "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":"
                                    "\"notifications/tools/list_changed\"}\n\n"));
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/list\",\"params\":{\"cursor\":\"%s\"}}",
             cursor);
    p = post(sid, "application/json", body, "\"error\"");
    assert_non_null(strstr(sent(p), "\"code\":-32602"));
}

/* A call with a progress token on simulated time: a notification each
 * MOTE_SERVE_MCP_PROGRESS_MS saying what runs, the progress growing;
 * notifications/cancelled stops the tool and no answer follows. */
static void test_progress_then_cancel(void **state)
{
    char sid[40];
    const char *s;
    int p, c;
    unsigned k;

    (void)state;
    hang = true;
    initialize("2025-06-18", sid);
    p = post(sid, "application/json, text/event-stream",
             "{\"jsonrpc\":\"2.0\",\"id\":\"call-1\",\"method\":\"tools/call\",\"params\":{\"name\":"
             "\"t1\",\"arguments\":{\"x\":1},\"_meta\":{\"progressToken\":\"tok\"}}}",
             "text/event-stream");
    turns(5);
    assert_int_equal(runs, 1);
    for (k = 0; k < 3; k++) {
        mote_tport_advance(&tp, MOTE_SERVE_MCP_PROGRESS_MS);
        turns(3);
    }
    s = sent(p);
    assert_non_null(strstr(s, "\"progressToken\":\"tok\",\"progress\":1,\"message\":\"running t1"));
    assert_non_null(strstr(s, "\"progress\":3,"));
    assert_null(strstr(s, "\"result\""));
    c = post(sid, "application/json",
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{\"requestId\":"
             "\"call-1\",\"reason\":\"test\"}}",
             NULL);
    assert_non_null(strstr(sent(c), "HTTP/1.1 202"));
    for (k = 0; k < 20 && !mote_tport_peer_get(&tp, p)->server_closed &&
                strstr(sent(p), "\r\n0\r\n\r\n") == NULL;
         k++)
        turns(2);
    assert_non_null(strstr(sent(p), "\r\n0\r\n\r\n")); /* the body ended */
    assert_null(strstr(sent(p), "\"result\"")); /* no answer to a cancelled call */
    assert_null(strstr(sent(p), "\"id\":\"call-1\"")); /* nor an error */
}

/* 2025-03-26 batches: answered at once, and with a call among them as
 * chunked JSON for a client that takes no event stream (the call's
 * answer after the others', in one array); a batch in 2025-06-18 is
 * refused whole. The call's result is escaped JSON. */
static void test_batches(void **state)
{
    static char body[8192];
    char sid[40], sid2[40];
    const char *s;
    int p;

    (void)state;
    initialize("2025-03-26", sid);
    p = post(sid, "application/json",
             "[{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"},{\"jsonrpc\":\"2.0\",\"id\":6,"
             "\"method\":\"tools/call\",\"params\":{\"name\":\"probe\"}},{\"jsonrpc\":\"2.0\","
             "\"method\":\"notifications/initialized\"}]",
             "\r\n0\r\n\r\n");
    assert_non_null(strstr(sent(p), "Content-Type: application/json"));
    assert_non_null(strstr(sent(p), "Transfer-Encoding: chunked"));
    s = dechunk(sent(p), body, sizeof(body));
    assert_string_equal(s, "[{\"jsonrpc\":\"2.0\",\"id\":5,\"result\":{}},{\"jsonrpc\":\"2.0\","
                           "\"id\":6,\"result\":{\"content\":[{\"type\":\"text\",\"text\":"
                           "\"probe: \\\"ok\\\"\\n\\u0001\"}],\"isError\":false}}]");
    assert_int_equal(runs, 1);
    initialize("2025-06-18", sid2);
    p = post(sid2, "application/json", "[{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}]", NULL);
    assert_non_null(strstr(sent(p), "HTTP/1.1 400"));
    assert_non_null(strstr(sent(p), "\"code\":-32600"));
}

/* Sessions are bounded: the one used least recently is let go (404
 * after), and a client that never initializes is refused (400). */
static void test_sessions_bounded(void **state)
{
    char sids[MOTE_SERVE_MCP_SESSIONS + 1][40];
    unsigned i;
    int p;

    (void)state;
    for (i = 0; i <= MOTE_SERVE_MCP_SESSIONS; i++)
        initialize("2025-06-18", sids[i]);
    p = post(sids[0], "application/json", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", NULL);
    assert_non_null(strstr(sent(p), "HTTP/1.1 404"));
    p = post(sids[MOTE_SERVE_MCP_SESSIONS], "application/json",
             "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", "\"result\"");
    assert_non_null(strstr(sent(p), "HTTP/1.1 200"));
    p = post(NULL, "application/json", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", NULL);
    assert_non_null(strstr(sent(p), "HTTP/1.1 400"));
}

/* /v1/models and a chat completion's refusals in OpenAI's format. */
static void test_openai_refusals(void **state)
{
    static const char *const bad[] = {
        "{\"messages\":[]}",
        "{\"messages\":[{\"role\":\"assistant\",\"content\":\"x\"}]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":[{\"type\":\"image_url\"}]}]}",
        "{\"messages\":[{\"role\":\"user\",\"content\":\"x\"}],\"stream\":\"yes\"}",
    };
    char req[512];
    unsigned i;
    int p;

    (void)state;
    p = mote_tport_peer_connect(&tp, false);
    mote_tport_peer_write(&tp, p, "GET /v1/models HTTP/1.1\r\nHost: t\r\n\r\n", 36);
    turns(3);
    assert_non_null(strstr(sent(p), "{\"object\":\"list\",\"data\":[{\"id\":\"m\",\"object\":\"model\""));
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(req, sizeof(req),
                 "POST /v1/chat/completions HTTP/1.1\r\nHost: t\r\nContent-Length: %zu\r\n\r\n%s",
                 strlen(bad[i]), bad[i]);
        p = mote_tport_peer_connect(&tp, false);
        mote_tport_peer_write(&tp, p, req, strlen(req));
        turns(3);
        assert_non_null(strstr(sent(p), "HTTP/1.1 400"));
        assert_non_null(strstr(sent(p), "\"type\":\"invalid_request_error\""));
    }
}

int main(void)
{
    const struct CMUnitTest t[] = {
        cmocka_unit_test_setup_teardown(test_list_pages_cursor_and_list_changed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_progress_then_cancel, setup, teardown),
        cmocka_unit_test_setup_teardown(test_batches, setup, teardown),
        cmocka_unit_test_setup_teardown(test_sessions_bounded, setup, teardown),
        cmocka_unit_test_setup_teardown(test_openai_refusals, setup, teardown),
    };

    return cmocka_run_group_tests_name("mcpserve", t, NULL, NULL);
}
