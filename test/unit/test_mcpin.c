/*
 * test_mcpin.c - an MCP server's answer kept within its buffer
 * (src/mcp_in.c), fed byte by byte into small buffers: tools/list entries
 * handed over whole and in order, an entry over the buffer skipped and
 * named, a call result's strings and members cut at safe places into
 * valid JSON, hostile nesting refused. The real servers' side is
 * test/integration/test_mcp.py and test_mcp_http.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <string.h>

#include "../../src/mcp_int.h"
#include "mote/mote.h"

static struct mote_mcp m;
static struct mote_mcp_server *s = &m.srv[0];
static char entries[8192];
static size_t nentries, entries_len;
static char logged[2048];

static void up_tool(struct mote_mcp_server *srv, const char *e, size_t n, const char *name,
                    size_t name_len)
{
    (void)srv, (void)name, (void)name_len;
    assert_true(entries_len + n + 2 < sizeof(entries));
    memcpy(entries + entries_len, e, n);
    entries_len += n;
    entries[entries_len++] = '|';
    entries[entries_len] = '\0';
    nentries++;
}

static void log_fn(void *arg, const char *server, const char *msg)
{
    (void)arg, (void)server;
    strncat(logged, msg, sizeof(logged) - strlen(logged) - 2);
    strcat(logged, "\n");
}

static const struct mote_mcp_up up = {NULL, NULL, NULL, NULL, up_tool, NULL};

static void fresh(uint8_t kind)
{
    memset(&m, 0, sizeof(m));
    m.up = &up;
    m.log = log_fn;
    s->m = &m;
    mote_str_copy(s->name, sizeof(s->name), "t");
    s->req_id = 7;
    s->req_kind = kind;
    nentries = entries_len = 0;
    entries[0] = logged[0] = '\0';
}

/* Feeds `msg` into buf (cap bytes) as a transport does; the kept text's
 * length, or -1 when the message was refused. */
static long feed(const char *msg, char *buf, size_t cap)
{
    size_t len = 0, i, n = strlen(msg);

    mote_mcp_in_reset(s);
    for (i = 0; i < n; i++) {
        if (!mote_mcp_in_put(s, buf, &len, cap, msg[i]))
            return -1;
        assert_true(len < cap);
    }
    mote_mcp_in_end(s, buf, &len);
    buf[len] = '\0';
    return (long)len;
}

static void list_taken_entry_by_entry(void **state)
{
    static char msg[4096], want[4096], buf[160];
    size_t i, at = 0, wat = 0;

    (void)state;
    fresh(MCP_REQ_LIST);
    at += (size_t)snprintf(msg + at, sizeof(msg) - at, "{\"result\": {\"tools\": [ ");
    for (i = 0; i < 20; i++) {
        char one[128];

        snprintf(one, sizeof(one),
                 "{\"name\":\"t%zu\",\"description\":\"a \\\"q\\\" ] } [ {\",\"inputSchema\":"
                 "{\"type\":\"object\"}}",
                 i);
        at += (size_t)snprintf(msg + at, sizeof(msg) - at, "%s%s", i ? " ,\n" : "", one);
        wat += (size_t)snprintf(want + wat, sizeof(want) - wat, "%s|", one);
    }
    snprintf(msg + at, sizeof(msg) - at, "], \"nextCursor\": \"c2\"}, \"jsonrpc\": \"2.0\", \"id\": 7}");
    assert_true(strlen(msg) > 10 * sizeof(buf));
    assert_true(feed(msg, buf, sizeof(buf)) > 0);
    assert_int_equal(nentries, 20);
    assert_string_equal(entries, want);
    assert_string_equal(buf, "{\"result\": {\"tools\": [], \"nextCursor\": \"c2\"}, \"jsonrpc\": "
                             "\"2.0\", \"id\": 7}");
}

static void list_entry_over_the_buffer_skipped(void **state)
{
    static char msg[8192], buf[256], big[1200];
    static const char *where[] = {"first", "middle", "last"};
    int w;

    (void)state;
    memset(big, 'x', sizeof(big) - 1);
    for (w = 0; w < 3; w++) {
        const char *a = "{\"name\":\"a\"}", *b = "{\"name\":\"b\"}";
        char huge[1400];

        fresh(MCP_REQ_LIST);
        snprintf(huge, sizeof(huge), "{\"name\":\"huge\",\"d\":[\"%s\\\"]\",{\"k\":[1,2]}]}", big);
        if (w == 0)
            snprintf(msg, sizeof(msg), "{\"id\":7,\"result\":{\"tools\":[%s,%s,%s]}}", huge, a, b);
        else if (w == 1)
            snprintf(msg, sizeof(msg), "{\"id\":7,\"result\":{\"tools\":[%s,%s,%s]}}", a, huge, b);
        else
            snprintf(msg, sizeof(msg), "{\"id\":7,\"result\":{\"tools\":[%s,%s,%s]}}", a, b, huge);
        assert_true(feed(msg, buf, sizeof(buf)) > 0);
        assert_string_equal(entries, "{\"name\":\"a\"}|{\"name\":\"b\"}|");
        assert_string_equal(buf, "{\"id\":7,\"result\":{\"tools\":[]}}");
        assert_non_null(strstr(logged, "skipped the tool huge: its entry in tools/list is over"));
        assert_int_equal(s->skipped_tools, 1);
        (void)where;
    }
}

/* The text of result.content.0.text in buf, unescaped into out. */
static int text_of(const char *buf, char *out, size_t cap)
{
    int rc = mote_json_parse(&m.json, buf, strlen(buf));

    if (rc <= 0)
        return -1;
    return mote_json_str(&m.json, mote_json_path(&m.json, 0, "result.content.0.text"), out, cap);
}

static void call_string_cut_at_safe_places(void **state)
{
    static char msg[300000], buf[MOTE_MCP_RESULT_MAX * 2 + 512], out[MOTE_MCP_RESULT_MAX * 2];
    static char whole[300000];
    /* escapes, UTF-8 of 2, 3 and 4 bytes, surrogate pairs */
    static const char *pieces[] = {"ab", "\\\"", "\\\\", "\\u00e9", "\xc3\xa9", "\xe2\x82\xac",
                                   "\xf0\x9f\x98\x80", "\\ud83d\\ude00", "\\n", "z"};
    size_t at, wat, shift;

    (void)state;
    for (shift = 0; shift < 12; shift++) {
        size_t k = shift;
        int n;

        fresh(MCP_REQ_CALL);
        at = (size_t)snprintf(msg, sizeof(msg), "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"");
        wat = 0;
        while (at < 200000) {
            const char *p = pieces[k++ % 10];

            memcpy(msg + at, p, strlen(p));
            at += strlen(p);
            (void)wat;
        }
        at += (size_t)snprintf(msg + at, sizeof(msg) - at,
                               "\"}],\"isError\":false},\"jsonrpc\":\"2.0\",\"id\":7}");
        /* the whole text, as the parser reads it (for the prefix check) */
        {
            static struct mote_json j2;
            size_t i;

            (void)i;
            assert_true(mote_json_parse(&j2, msg, strlen(msg)) > 0);
            assert_true(mote_json_str(&j2, mote_json_path(&j2, 0, "result.content.0.text"), whole,
                                      sizeof(whole)) > 0);
        }
        assert_true(feed(msg, buf, sizeof(buf)) > 0);
        assert_true(s->in_flags & MCP_IN_CUT);
        n = text_of(buf, out, sizeof(out));
        assert_true(n > 1000);
        assert_memory_equal(out, whole, (size_t)n); /* a prefix, cut between characters */
        assert_non_null(strstr(buf, "\"isError\":false},\"jsonrpc\":\"2.0\",\"id\":7}"));
    }
}

static void call_member_cut_into_valid_json(void **state)
{
    static char msg[400000], buf[65536], out[4096];
    size_t at, i, cap;
    int kind;

    (void)state;
    /* over the buffer (4 KiB), or within it with more values than the
     * protocol's parse takes (MOTE_JSON_MAX_TOKENS: cut at the end) */
    for (kind = 0; kind < 6; kind++) {
        cap = kind < 3 ? 4096 : sizeof(buf);
        fresh(MCP_REQ_CALL);
        if (kind % 3 == 0) { /* many small items */
            at = (size_t)snprintf(msg, sizeof(msg), "{\"result\":{\"content\":[");
            for (i = 0; i < (kind < 3 ? 2000u : 1000u); i++)
                at += (size_t)snprintf(msg + at, sizeof(msg) - at,
                                       "%s{\"type\":\"text\",\"text\":\"item %zu\"}", i ? "," : "", i);
            at += (size_t)snprintf(msg + at, sizeof(msg) - at, "]");
        } else { /* a structuredContent of many values, nested */
            at = (size_t)snprintf(msg, sizeof(msg),
                                  "{\"result\":{\"content\":[{\"type\":\"text\",\"text\":\"head\"}],"
                                  "\"structuredContent\":{\"rows\":[");
            for (i = 0; i < (kind < 3 ? 3000u : 1500u); i++)
                at += (size_t)snprintf(msg + at, sizeof(msg) - at,
                                       kind % 3 == 1 ? "%s{\"n\":%zu,\"v\":[true,null,\"s\"]}"
                                                 : "%s[[[%zu]]]",
                                       i ? "," : "", i);
            at += (size_t)snprintf(msg + at, sizeof(msg) - at, "]}");
        }
        snprintf(msg + at, sizeof(msg) - at, ",\"isError\":true},\"jsonrpc\":\"2.0\",\"id\":7}");
        assert_true(kind < 3 || strlen(msg) < cap);
        assert_true(feed(msg, buf, cap) > 0);
        assert_true(s->in_flags & MCP_IN_CUT);
        if (mote_json_parse(&m.json, buf, strlen(buf)) <= 0)
            fail_msg("kind %d: %zu: %s", kind, strlen(buf), buf + (strlen(buf) > 300 ? strlen(buf) - 300 : 0));
        assert_non_null(strstr(buf, ",\"isError\":true},\"jsonrpc\":\"2.0\",\"id\":7}"));
        assert_true(text_of(buf, out, sizeof(out)) > 0);
        assert_string_equal(out, kind % 3 == 0 ? "item 0" : "head");
    }
}

static void hostile_messages_refused(void **state)
{
    static char msg[100000], buf[512];
    size_t i, at;

    (void)state;
    /* a skipped entry nesting without end */
    fresh(MCP_REQ_LIST);
    at = (size_t)snprintf(msg, sizeof(msg), "{\"result\":{\"tools\":[{\"name\":\"x\",\"d\":");
    for (i = 0; i < 5000; i++)
        msg[at++] = '[';
    msg[at] = '\0';
    assert_int_equal(feed(msg, buf, sizeof(buf)), -1);
    /* a large message that is not an answer: dropped as before */
    fresh(MCP_REQ_CALL);
    at = (size_t)snprintf(msg, sizeof(msg), "{\"method\":\"notifications/message\",\"params\":{\"data\":\"");
    memset(msg + at, 'n', 5000);
    snprintf(msg + at + 5000, sizeof(msg) - at - 5000, "\"}}");
    assert_int_equal(feed(msg, buf, sizeof(buf)), -1);
    /* no request pending: nothing taken */
    fresh(MCP_REQ_LIST);
    s->req_id = 0;
    assert_int_equal(feed("{\"result\":{\"tools\":[{\"name\":\"a\"}]}}", buf, sizeof(buf)), 35);
    assert_int_equal(nentries, 0);
    /* a small answer is kept as it came */
    fresh(MCP_REQ_CALL);
    assert_int_equal(feed("{\"result\":{\"content\":[]},\"id\":7}", buf, sizeof(buf)), 32);
    assert_false(s->in_flags & MCP_IN_CUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(list_taken_entry_by_entry),
        cmocka_unit_test(list_entry_over_the_buffer_skipped),
        cmocka_unit_test(call_string_cut_at_safe_places),
        cmocka_unit_test(call_member_cut_into_valid_json),
        cmocka_unit_test(hostile_messages_refused),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
