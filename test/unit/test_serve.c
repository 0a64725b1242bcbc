/*
 * test_serve.c - the API server (mote_serve.h) on the deterministic test
 * port: scripted clients on served sockets, a scripted model behind the
 * scripted sockets, simulated time, in-memory storage.
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

#include "answer_put.h"
#include "mote/mote_agent.h"
#include "mote/mote_serve.h"
#include "mote_tport.h"
#include "serve_unit.h"
#include "../../src/serve_int.h" /* the server's state, for white-box checks */

/* The body pool. */
#define POOL_USED(i) (mote_serve_state(&srv)->http.pool_used[i])
#define POOL_BUF(i) (mote_serve_state(&srv)->http.pool[i])

static char logbuf[16384];

/* ---- the scripted model ---- */

#define NRESP 16
static struct mote_tport_resp script[NRESP];
static char bodies[NRESP][8192];

/* An answer: `text` in words, then an optional call of `tool` with `input`. */
static void answer(const char *text, const char *tool, const char *input, bool stall)
{
    unsigned k = net.n;
    char *b = bodies[k];
    size_t at = put(b, sizeof(bodies[0]), 0, HEAD);
    const char *w = text;

    assert_true(k < NRESP);
    at = put(b, sizeof(bodies[0]), at,
             "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":"
             "{\"input_tokens\":5,\"output_tokens\":1}}}\n\nevent: content_block_start\ndata: "
             "{\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\","
             "\"text\":\"\"}}\n\n");
    while (*w != '\0') {
        const char *sp = strchr(w, ' ');
        size_t n = sp != NULL ? (size_t)(sp - w) + 1 : strlen(w);

        at = put(b, sizeof(bodies[0]), at,
                 "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,"
                 "\"delta\":{\"type\":\"text_delta\",\"text\":\"%.*s\"}}\n\n",
                 (int)n, w);
        w += n;
    }
    if (!stall) {
        at = put(b, sizeof(bodies[0]), at,
                 "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}\n\n");
        if (tool != NULL)
            at = put(b, sizeof(bodies[0]), at,
                     "event: content_block_start\ndata: {\"type\":\"content_block_start\","
                     "\"index\":1,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_%u\","
                     "\"name\":\"%s\",\"input\":{}}}\n\nevent: content_block_delta\ndata: "
                     "{\"type\":\"content_block_delta\",\"index\":1,\"delta\":{\"type\":"
                     "\"input_json_delta\",\"partial_json\":\"%s\"}}\n\nevent: content_block_stop\n"
                     "data: {\"type\":\"content_block_stop\",\"index\":1}\n\n",
                     k, tool, input);
        at = put(b, sizeof(bodies[0]), at,
                 "event: message_delta\ndata: {\"type\":\"message_delta\",\"delta\":{\"stop_reason\":"
                 "\"%s\"},\"usage\":{\"output_tokens\":7}}\n\nevent: message_stop\ndata: "
                 "{\"type\":\"message_stop\"}\n\n",
                 tool != NULL ? "tool_use" : "end_turn");
    }
    script[k].bytes = b;
    script[k].len = at;
    script[k].chunk = 64;
    script[k].stall = stall;
    net.n = k + 1;
}

/* ---- a scripted tool ---- */

static unsigned tool_runs;

static int probe_step(struct mote_loop *l, mote_job_id self, struct mote_tool_run *run)
{
    (void)l, (void)self;
    tool_runs++;
    mote_tool_outs(run, "probe: ok");
    return MOTE_STEP_DONE;
}

static const struct mote_tool probe = {"probe", "A probe.", "{\"type\":\"object\"}", probe_step,
                                       NULL, NULL, 0};

/* ---- setup ---- */

static void on_log(void *arg, const char *line)
{
    (void)arg;
    snprintf(logbuf + strlen(logbuf), sizeof(logbuf) - strlen(logbuf), "%s\n", line);
}

static struct mote_tool_rule rules[2];

static void start(void)
{
    vc.log = on_log;
    assert_int_equal(kit_start(&probe, 1), 0);
}

static int setup(void **state)
{
    (void)state;
    memset(script, 0, sizeof(script));
    tool_runs = 0;
    logbuf[0] = '\0';
    kit_conf(script);
    start();
    return 0;
}

/* ---- clients ---- */

static int client(const char *req)
{
    int p = mote_tport_peer_connect(&tp, false);

    assert_true(p >= 0);
    mote_tport_peer_write(&tp, p, req, strlen(req));
    return p;
}

/* A client on the events of conversation `id`, from its start: its peer. */
static int events_client(const char *id)
{
    char req[160];

    snprintf(req, sizeof(req), "GET /v1/conversations/%s/events?from=0 HTTP/1.1\r\nHost: t\r\n\r\n",
             id);
    return client(req);
}

/* One request on a new connection; turns until the server closed it.
 * Returns the status; *body points at the body. */
static int http(const char *method, const char *path, const char *body, const char **resp_body)
{
    static char req[MOTE_SERVE_BODY_MAX + 1024];
    char len[48];
    int p, status = 0;
    unsigned i;
    const char *r, *b;

    snprintf(len, sizeof(len), "Content-Length: %zu\r\n", body != NULL ? strlen(body) : 0);
    snprintf(req, sizeof(req), "%s %s HTTP/1.1\r\nHost: t\r\nConnection: close\r\n%s\r\n%s",
             method, path, body != NULL ? len : "", body != NULL ? body : "");
    p = client(req);
    for (i = 0; i < 200 && !mote_tport_peer_get(&tp, p)->server_closed; i++)
        turns(1);
    assert_true(mote_tport_peer_get(&tp, p)->server_closed);
    r = sent(p);
    assert_int_equal(sscanf(r, "HTTP/1.1 %d", &status), 1);
    b = strstr(r, "\r\n\r\n");
    assert_non_null(b);
    if (resp_body != NULL)
        *resp_body = b + 4;
    return status;
}

/* Posts a message, body `json`, to conversation `id`: the status; *b
 * the answer's body. */
static int post_message(const char *id, const char *json, const char **b)
{
    char path[128];

    snprintf(path, sizeof(path), "/v1/conversations/%s/messages", id);
    return http("POST", path, json, b);
}

/* Turns (at most `max`) until conversation `id` awaits an approval. */
static void until_asked(const char *id, unsigned max)
{
    unsigned i;

    for (i = 0; i < max; i++) {
        turns(1);
        if (mote_conv_state(mote_conv_find(&ses, id)) == MOTE_CONV_AWAITING_APPROVAL)
            break;
    }
    assert_int_equal(mote_conv_state(mote_conv_find(&ses, id)), MOTE_CONV_AWAITING_APPROVAL);
}

/* The "id" of a created conversation. */
static void create(char *id, size_t cap)
{
    const char *b, *q;

    assert_int_equal(http("POST", "/v1/conversations", NULL, &b), 201);
    q = strstr(b, "\"id\":\"");
    assert_non_null(q);
    q += 6;
    snprintf(id, cap, "%.*s", (int)(strchr(q, '"') - q), q);
}

/* ---- tests ---- */

static void test_routes_and_refusals(void **state)
{
    const char *b;
    int p;

    (void)state;
    assert_int_equal(http("GET", "/v1/health", NULL, &b), 200);
    assert_non_null(strstr(b, "\"status\":\"ok\""));
    assert_int_equal(http("GET", "/v2/nothing", NULL, &b), 404);
    assert_non_null(strstr(b, "\"error\":\"not_found\""));
    assert_int_equal(http("PUT", "/v1/health", NULL, &b), 405);
    assert_int_equal(http("POST", "/v1/conversations/x/messages", "not json", &b), 400);
    assert_non_null(strstr(b, "\"error\":\"bad_json\""));
    assert_int_equal(http("POST", "/v1/conversations/nope/messages", "{\"text\":\"hi\"}", &b),
                     404);
    assert_int_equal(http("GET", "/v1/conversations/bad!id", NULL, &b), 404);
    /* a malformed head: 400 with a JSON body, then the connection closes */
    p = client("GET /a b c\r\n\r\n");
    turns(5);
    mote_tport_advance(&tp, MOTE_SERVE_FLUSH_MS); /* it lingers a moment for the client */
    turns(2);
    assert_true(mote_tport_peer_get(&tp, p)->server_closed);
    assert_non_null(strstr(sent(p), "HTTP/1.1 400 Bad Request"));
    assert_non_null(strstr(sent(p), "\"error\":\"bad_request\""));
    /* keep-alive: two requests on one connection, answered in order */
    p = client("GET /v1/health HTTP/1.1\r\nHost: t\r\n\r\nGET /v1/nope HTTP/1.1\r\nHost: t\r\n\r\n");
    turns(5);
    assert_false(mote_tport_peer_get(&tp, p)->server_closed);
    b = strstr(sent(p), "HTTP/1.1 200");
    assert_non_null(b);
    assert_non_null(strstr(b, "HTTP/1.1 404"));
    /* a body over the limit: 413 before it is read */
    {
        char req[256];

        snprintf(req, sizeof(req), "POST /v1/conversations HTTP/1.1\r\nHost: t\r\n"
                                   "Content-Length: %d\r\n\r\n",
                 MOTE_SERVE_BODY_MAX + 1);
        p = client(req);
        turns(5);
        assert_non_null(strstr(sent(p), "HTTP/1.1 413"));
    }
}

static void test_turn_events_and_records(void **state)
{
    char id[64], path[128];
    const char *b, *s;
    int ev;
    unsigned i;

    (void)state;
    create(id, sizeof(id));
    ev = events_client(id);
    turns(3);
    answer("hello from the model", NULL, NULL, false);
    assert_int_equal(post_message(id, "{\"text\":\"hi \\u00e9\"}", &b), 202);
    assert_non_null(strstr(b, "\"offset\":"));
    for (i = 0; i < 100 && mote_session_busy(&ses); i++)
        turns(1);
    turns(3);
    s = sent(ev);
    assert_non_null(strstr(s, "Content-Type: text/event-stream"));
    /* the records, each with its offset as the id, in order */
    assert_non_null(strstr(s, "id: 0\nevent: record\ndata: {\"t\":\"open\""));
    b = strstr(s, "event: record\ndata: {\"t\":\"user\",\"text\":\"hi \xc3\xa9\"}");
    assert_non_null(b);
    assert_non_null(strstr(b, "event: text\ndata: {\"text\":\"hello \"}"));
    assert_non_null(strstr(b, "\"t\":\"assistant\",\"text\":\"hello from the model\""));
    assert_non_null(strstr(b, "event: turn_end"));
    assert_true(strstr(b, "event: text") < strstr(b, "\"t\":\"assistant\""));
    /* each id is the offset of its record in the journal */
    {
        char name[128];
        const struct mote_tport_file *f;
        const char *q = s;
        unsigned n = 0;

        snprintf(name, sizeof(name), "conversations/%s.jsonl", id);
        f = mote_tport_file(&tp, name);
        assert_non_null(f);
        while ((q = strstr(q, "id: ")) != NULL) {
            unsigned long off = strtoul(q + 4, NULL, 10);
            const char *data = strstr(q, "data: ") + 6;
            size_t len = (size_t)(strchr(data, '\n') - data);

            assert_true(off + len < f->len);
            assert_memory_equal(f->data + off, data, len);
            assert_int_equal(f->data[off + len], '\n');
            n++;
            q += 4;
        }
        assert_true(n >= 4); /* open, user, request, assistant */
    }
    /* GET: the state and the records */
    snprintf(path, sizeof(path), "/v1/conversations/%s", id);
    assert_int_equal(http("GET", path, NULL, &b), 200);
    assert_non_null(strstr(b, "\"state\":\"idle\""));
    assert_non_null(strstr(b, "{\"offset\":0,\"record\":{\"t\":\"open\""));
    assert_non_null(strstr(b, "\"t\":\"assistant\""));
    assert_non_null(strstr(b, "0\r\n\r\n")); /* the chunked body ended */
}

static void test_resume_with_last_event_id(void **state)
{
    char id[64], req[256];
    const char *b, *s;
    unsigned long user_off;
    int ev;
    unsigned i;

    (void)state;
    create(id, sizeof(id));
    answer("one two", NULL, NULL, false);
    assert_int_equal(post_message(id, "{\"text\":\"first\"}", &b), 202);
    user_off = strtoul(strstr(b, "\"offset\":") + 9, NULL, 10);
    for (i = 0; i < 100 && mote_session_busy(&ses); i++)
        turns(1);
    /* resume after the user record: the next record first, none before */
    snprintf(req, sizeof(req),
             "GET /v1/conversations/%s/events HTTP/1.1\r\nHost: t\r\nLast-Event-ID: %lu\r\n\r\n",
             id, user_off);
    ev = client(req);
    turns(5);
    s = sent(ev);
    b = strstr(s, "id: ");
    assert_non_null(b);
    assert_true(strtoul(b + 4, NULL, 10) > user_off);
    assert_null(strstr(s, "\"t\":\"user\""));
    assert_null(strstr(s, "\"t\":\"open\""));
    assert_non_null(strstr(s, "\"t\":\"assistant\""));
    assert_non_null(strstr(s, "event: state"));
    /* not a record's offset: refused */
    snprintf(req, sizeof(req),
             "GET /v1/conversations/%s/events HTTP/1.1\r\nHost: t\r\nLast-Event-ID: %lu\r\n\r\n",
             id, user_off + 1);
    ev = client(req);
    turns(5);
    assert_non_null(strstr(sent(ev), "HTTP/1.1 400"));
    assert_non_null(strstr(sent(ev), "bad_event_id"));
}

static void test_slow_reader_is_fed_at_its_pace(void **state)
{
    char id[64], req[1100], path[128], text[3000];
    struct mote_tport_peer *q;
    const struct mote_tport_file *f;
    const char *b;
    int ev;
    unsigned i, k;

    (void)state;
    create(id, sizeof(id));
    /* a client that takes 7 bytes at a time */
    ev = events_client(id);
    turns(3);
    q = mote_tport_peer_get(&tp, ev);
    mote_tport_peer_read(&tp, ev, (size_t)-1); /* the head and what came so far */
    q->max_unread = 0;
    q->window = 7;
    for (k = 0; k < 3; k++) {
        for (i = 0; i + 1 < sizeof(text); i++)
            text[i] = (char)('a' + (i + k) % 26);
        text[sizeof(text) - 1] = '\0';
        answer("ok", NULL, NULL, false);
        snprintf(path, sizeof(path), "/v1/conversations/%s/messages", id);
        snprintf(req, sizeof(req), "{\"text\":\"%.1000s\"}", text);
        assert_int_equal(http("POST", path, req, &b), 202);
        for (i = 0; i < 100 && mote_session_busy(&ses); i++)
            turns(1);
    }
    /* nothing piles up for it: what is unread never passes its window */
    assert_true(q->max_unread <= 7);
    /* it reads on, in small bites: everything arrives, in order */
    snprintf(path, sizeof(path), "conversations/%s.jsonl", id);
    f = mote_tport_file(&tp, path);
    {
        /* until the last record came whole */
        const char *last = (const char *)f->data + f->len - 1;
        char want[64];

        while (last > (const char *)f->data && last[-1] != '\n')
            last--;
        snprintf(want, sizeof(want), "id: %lu\n", (unsigned long)(last - (const char *)f->data));
        for (i = 0; i < 20000; i++) {
            const char *at = strstr(sent(ev), want);

            if (at != NULL && strstr(at, "\n\n") != NULL)
                break;
            mote_tport_peer_read(&tp, ev, (size_t)-1);
            turns(1);
        }
    }
    {
        /* every record of the journal, in order, each once */
        const char *s = sent(ev), *line = (const char *)f->data;
        unsigned n = 0;

        while (line < (const char *)f->data + f->len) {
            const char *nl = memchr(line, '\n', (size_t)((const char *)f->data + f->len - line));
            char want[4096];

            snprintf(want, sizeof(want), "id: %lu\nevent: record\ndata: %.*s\n\n",
                     (unsigned long)(line - (const char *)f->data), (int)(nl - line), line);
            s = strstr(s, want);
            if (s == NULL)
                fail_msg("record %u missing: %.200s\n--- sent tail: %s", n, want,
                         sent(ev) + (strlen(sent(ev)) > 600 ? strlen(sent(ev)) - 600 : 0));
            line = nl + 1;
            n++;
        }
        assert_true(n >= 10);
    }
}

/* A record longer than one turn's share of pumping (a long message)
 * replayed to a client with nothing else happening: it arrives whole. */
static void test_a_long_record_replayed_whole(void **state)
{
    static char body[MOTE_SERVE_BODY_MAX];
    char id[64];
    const char *b;
    size_t n = 0;
    unsigned i;
    int ev;

    (void)state;
    create(id, sizeof(id));
    answer("ok", NULL, NULL, false);
    n += (size_t)snprintf(body, sizeof(body), "{\"text\":\"");
    memset(body + n, 'q', 50000);
    n += 50000;
    memcpy(body + n, "\"}", 3);
    assert_int_equal(post_message(id, body, &b), 202);
    for (i = 0; i < 100 && mote_session_busy(&ses); i++)
        turns(1);
    ev = events_client(id);
    for (i = 0; i < 50 && !strstr(sent(ev), "event: state"); i++)
        turns(1);
    b = strstr(sent(ev), "\"t\":\"user\",\"text\":\"qqq");
    assert_non_null(b);
    assert_non_null(strstr(b, "qqq\"}\n\n"));
    assert_non_null(strstr(b, "\"t\":\"assistant\""));
    assert_non_null(strstr(b, "event: state"));
}

static void test_timeouts(void **state)
{
    int idle, slow, body;
    unsigned i;

    (void)state;
    idle = mote_tport_peer_connect(&tp, false);
    slow = client("G");
    body = client("POST /v1/conversations HTTP/1.1\r\nHost: t\r\nContent-Length: 10\r\n\r\n{");
    /* a byte a second for the head: dropped at the head's deadline */
    for (i = 0; i < (MOTE_SERVE_HEADER_TIMEOUT_MS / 1000) + 2; i++) {
        mote_tport_advance(&tp, 1000);
        if (!mote_tport_peer_get(&tp, slow)->server_closed)
            mote_tport_peer_write(&tp, slow, "E", 1);
        turns(2);
    }
    assert_true(mote_tport_peer_get(&tp, slow)->server_closed);
    assert_non_null(strstr(sent(slow), "HTTP/1.1 408"));
    assert_non_null(strstr(sent(slow), "\"error\":\"timeout\""));
    for (i = 0; i < 100 && !mote_tport_peer_get(&tp, body)->server_closed; i++) {
        mote_tport_advance(&tp, 1000);
        turns(1);
    }
    assert_non_null(strstr(sent(body), "HTTP/1.1 408"));
    for (i = 0; i < 100 && !mote_tport_peer_get(&tp, idle)->server_closed; i++) {
        mote_tport_advance(&tp, 1000);
        turns(1);
    }
    assert_true(mote_tport_peer_get(&tp, idle)->server_closed);
    assert_int_equal(mote_tport_peer_get(&tp, idle)->out_len, 0); /* idle: closed silently */
    assert_int_equal(mote_serve_state(&srv)->http.nconns, 0);
}

static unsigned accept_calls, accept_fails;
static int (*real_accept)(void *ctx, int lfd);

static int failing_accept(void *ctx, int lfd)
{
    accept_calls++;
    if (accept_fails > 0) {
        accept_fails--;
        return MOTE_ERR_MFILE; /* out of descriptors */
    }
    return real_accept(ctx, lfd);
}

static unsigned count_of(const char *s, const char *what)
{
    unsigned n = 0;

    while ((s = strstr(s, what)) != NULL) {
        n++;
        s++;
    }
    return n;
}

/* An accept that fails does not make the loop spin on a readable
 * listener: it rests, then serves the connection; the failure is said
 * once for what it is (not every 250 ms), and its end too. */
static void test_accept_failure_rests(void **state)
{
    const char *b;
    int p;
    unsigned i;

    (void)state;
    real_accept = tp.port.net_accept;
    tp.port.net_accept = failing_accept;
    accept_calls = 0;
    accept_fails = 1000;
    p = client("GET /v1/health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    for (i = 0; i < 20; i++)
        assert_true(mote_loop_poll(&loop, 0) >= 0);
    assert_true(accept_calls <= 2);
    for (i = 0; i < 8; i++) {
        mote_tport_advance(&tp, 260);
        turns(2);
    }
    assert_true(accept_calls >= 5); /* it tried again, 250 ms apart */
    assert_int_equal(count_of(logbuf, "cannot accept a connection: too many open files"), 1);
    accept_fails = 0;
    for (i = 0; i < 100 && !mote_tport_peer_get(&tp, p)->server_closed; i++)
        turns(1);
    assert_non_null(strstr(sent(p), "HTTP/1.1 200"));
    assert_non_null(strstr(logbuf, "accepting connections again"));
    assert_int_equal(http("GET", "/v1/health", NULL, &b), 200);
    tp.port.net_accept = real_accept;
}

static void test_connection_cap(void **state)
{
    int p[MOTE_SERVE_MAX_CONNS + 2];
    const char *b;
    unsigned i;

    (void)state;
    for (i = 0; i < MOTE_SERVE_MAX_CONNS + 2; i++) {
        p[i] = mote_tport_peer_connect(&tp, false);
        assert_true(p[i] >= 0);
        turns(1);
    }
    assert_int_equal(mote_serve_state(&srv)->http.nconns, MOTE_SERVE_MAX_CONNS);
    for (i = MOTE_SERVE_MAX_CONNS; i < MOTE_SERVE_MAX_CONNS + 2; i++) {
        assert_true(mote_tport_peer_get(&tp, p[i])->server_closed);
        assert_non_null(strstr(sent(p[i]), "HTTP/1.1 503"));
        assert_non_null(strstr(sent(p[i]), "too_many_connections"));
    }
    /* one leaves: a new one is served */
    mote_tport_peer_close(&tp, p[0]);
    turns(2);
    assert_int_equal(mote_serve_state(&srv)->http.nconns, MOTE_SERVE_MAX_CONNS - 1);
    assert_int_equal(http("GET", "/v1/health", NULL, &b), 200);
    assert_non_null(strstr(b, "\"refused\":2"));
}

static void test_slots_lru_and_busy(void **state)
{
    char ids[MOTE_MAX_CONVERSATIONS + 1][64], path[128];
    const char *b;
    unsigned i;

    (void)state;
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++)
        create(ids[i], sizeof(ids[0]));
    /* every slot taken, all idle: a fifth closes the least recently used */
    snprintf(path, sizeof(path), "/v1/conversations/%s", ids[0]);
    assert_int_equal(http("GET", path, NULL, &b), 200); /* ids[0] used: ids[1] is the oldest */
    create(ids[MOTE_MAX_CONVERSATIONS], sizeof(ids[0]));
    assert_non_null(mote_conv_find(&ses, ids[0]));
    assert_null(mote_conv_find(&ses, ids[1]));
    assert_non_null(strstr(logbuf, ids[1]));
    /* an unloaded one reads from disk, and loads when a message comes */
    snprintf(path, sizeof(path), "/v1/conversations/%s", ids[1]);
    assert_int_equal(http("GET", path, NULL, &b), 200);
    assert_non_null(strstr(b, "\"loaded\":false"));
    /* every loaded one busy (stalled answers): 503 */
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++)
        answer("wait", NULL, NULL, true);
    for (i = 0; i < MOTE_MAX_CONVERSATIONS; i++) {
        struct mote_conv *c = &ses.conv[i];

        assert_int_equal(post_message(mote_conv_id(c), "{\"text\":\"go\"}", &b), 202);
    }
    assert_int_equal(post_message(ids[1], "{\"text\":\"go\"}", &b), 503);
    assert_non_null(strstr(b, "\"error\":\"busy\""));
    assert_int_equal(http("POST", "/v1/conversations", NULL, &b), 503);
    /* a message to a busy conversation: 409 */
    assert_int_equal(post_message(mote_conv_id(&ses.conv[0]), "{\"text\":\"again\"}", &b), 409);
    /* cancel one: its slot can be taken again */
    snprintf(path, sizeof(path), "/v1/conversations/%s/cancel", mote_conv_id(&ses.conv[0]));
    assert_int_equal(http("POST", path, NULL, &b), 202);
    for (i = 0; i < 50 && mote_conv_busy(&ses.conv[0]); i++)
        turns(1);
    assert_false(mote_conv_busy(&ses.conv[0]));
    answer("done", NULL, NULL, false);
    assert_int_equal(post_message(ids[1], "{\"text\":\"go\"}", &b), 202);
}

static void test_approval_through_the_api(void **state)
{
    char id[64], path[128], body[256], call[64];
    const char *b, *q;
    unsigned i;

    (void)state;
    rules[0].name = "probe";
    rules[0].approval = MOTE_APPROVE_ASK;
    cc.rules = rules;
    cc.nrules = 1; /* the default (allow) does not decide: the rule does */
    create(id, sizeof(id));
    answer("let me look", "probe", "{\\\"what\\\":1}", false);
    answer("it said ok", NULL, NULL, false);
    assert_int_equal(post_message(id, "{\"text\":\"look\"}", &b), 202);
    until_asked(id, 100);
    assert_int_equal(tool_runs, 0);
    snprintf(path, sizeof(path), "/v1/conversations/%s?records=0", id);
    assert_int_equal(http("GET", path, NULL, &b), 200);
    assert_non_null(strstr(b, "\"state\":\"awaiting_approval\""));
    q = strstr(b, "\"call_id\":\"");
    assert_non_null(q);
    q += 11;
    snprintf(call, sizeof(call), "%.*s", (int)(strchr(q, '"') - q), q);
    assert_non_null(strstr(b, "\"name\":\"probe\",\"record\":"));
    assert_non_null(strstr(b, "\"input\":{\"what\":1}"));
    /* another call's id answers nothing */
    snprintf(path, sizeof(path), "/v1/conversations/%s/approval", id);
    assert_int_equal(http("POST", path, "{\"call_id\":\"toolu_x\",\"answer\":\"yes\"}", &b), 409);
    assert_int_equal(http("POST", path, "{\"call_id\":\"x\",\"answer\":\"maybe\"}", &b), 400);
    turns(3);
    assert_int_equal(tool_runs, 0);
    snprintf(body, sizeof(body), "{\"call_id\":\"%s\",\"answer\":\"yes\"}", call);
    assert_int_equal(http("POST", path, body, &b), 202);
    for (i = 0; i < 100 && mote_session_busy(&ses); i++)
        turns(1);
    assert_int_equal(tool_runs, 1);
    /* answered once: the same answer again is stale */
    assert_int_equal(http("POST", path, body, &b), 409);
    cc.rules = NULL;
    cc.nrules = 0;
}

static void test_shutdown_final_event(void **state)
{
    char id[64], req[256];
    struct mote_shutdown_req sd = {"test", MOTE_SD_DRAIN, 1000, false};
    const char *s;
    int ev;
    unsigned i;

    (void)state;
    create(id, sizeof(id));
    snprintf(req, sizeof(req), "GET /v1/conversations/%s/events HTTP/1.1\r\nHost: t\r\n\r\n", id);
    ev = client(req);
    turns(3);
    assert_int_equal(mote_serve_shutdown(&srv, &sd), 0);
    for (i = 0; i < 200 && !mote_serve_done(&srv); i++)
        turns(1);
    assert_true(mote_serve_done(&srv));
    s = sent(ev);
    assert_non_null(strstr(s, "event: shutdown\ndata: {\"reason\":\"test\",\"timed_out\":false"));
    assert_true(mote_tport_peer_get(&tp, ev)->server_closed);
    assert_false(ts.unix_open); /* the listener is gone */
}

static void test_tcp_needs_the_token(void **state)
{
    const char *ok = "GET /v1/health HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "
                     "s3cret-s3cret-s3cret\r\n\r\n";
    const char *bad = "GET /v1/health HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer "
                      "s3cret-s3cret-s3cres\r\n\r\n";
    /* the scheme's case does not matter (RFC 9110 11.1), nor the spaces */
    const char *lower = "GET /v1/health HTTP/1.1\r\nHost: t\r\nAuthorization: bEARER  "
                        "s3cret-s3cret-s3cret\r\n\r\n";
    int p;

    (void)state;
    mote_serve_deinit(&srv);
    vc.listen = "127.0.0.1:0";
    vc.token = NULL;
    assert_int_equal(mote_serve_init(&srv, &loop, &vc), MOTE_ERR_INVAL); /* no token */
    vc.token = "s3cret-s3cret-s3cret";
    vc.listen = "10.0.0.1:80";
    assert_int_equal(mote_serve_init(&srv, &loop, &vc), 0);
    assert_int_equal(mote_serve_listen(&srv), MOTE_ERR_INVAL); /* not loopback */
    mote_serve_deinit(&srv);
    vc.listen = "127.0.0.1:0";
    assert_int_equal(mote_serve_init(&srv, &loop, &vc), 0);
    assert_int_equal(mote_serve_listen(&srv), 0);
    assert_int_equal(srv.tcp_port, 4242);
    p = mote_tport_peer_connect(&tp, true);
    mote_tport_peer_write(&tp, p, bad, strlen(bad));
    turns(3);
    assert_non_null(strstr(sent(p), "HTTP/1.1 401"));
    assert_non_null(strstr(sent(p), "WWW-Authenticate: Bearer"));
    p = mote_tport_peer_connect(&tp, true);
    mote_tport_peer_write(&tp, p, ok, strlen(ok));
    turns(3);
    assert_non_null(strstr(sent(p), "HTTP/1.1 200"));
    p = mote_tport_peer_connect(&tp, true);
    mote_tport_peer_write(&tp, p, lower, strlen(lower));
    turns(3);
    assert_non_null(strstr(sent(p), "HTTP/1.1 200"));
    /* the Unix socket needs none */
    p = client("GET /v1/health HTTP/1.1\r\nHost: t\r\n\r\n");
    turns(3);
    assert_non_null(strstr(sent(p), "HTTP/1.1 200"));
    vc.listen = NULL;
    vc.token = NULL;
}

/* A client that never reads its response is dropped after the send
 * deadline; a quiet event stream gets a comment now and then. */
static void test_send_deadline_and_pings(void **state)
{
    char id[64], req[256];
    int stuck, ev;
    unsigned i;

    (void)state;
    create(id, sizeof(id));
    snprintf(req, sizeof(req), "GET /v1/conversations/%s/events HTTP/1.1\r\nHost: t\r\n\r\n", id);
    ev = client(req);
    snprintf(req, sizeof(req), "GET /v1/conversations/%s HTTP/1.1\r\nHost: t\r\n\r\n", id);
    stuck = client(req);
    mote_tport_peer_get(&tp, stuck)->window = 16; /* takes 16 bytes, then never reads */
    turns(5);
    assert_false(mote_tport_peer_get(&tp, stuck)->server_closed);
    for (i = 0; i < 100 && !mote_tport_peer_get(&tp, stuck)->server_closed; i++) {
        mote_tport_advance(&tp, 1000);
        turns(1);
    }
    assert_true(mote_tport_peer_get(&tp, stuck)->server_closed);
    assert_non_null(strstr(logbuf, "does not read"));
    assert_true(i * 1000 >= MOTE_SERVE_SEND_TIMEOUT_MS - 2000);
    /* the event stream, quiet all that time, had its pings and is still open */
    assert_non_null(strstr(sent(ev), ": ping\n\n"));
    assert_false(mote_tport_peer_get(&tp, ev)->server_closed);
}

/* More conversations need recovery than there are slots: the first
 * MOTE_MAX_CONVERSATIONS are opened at once, the rest as slots free up. */
static void test_recovery_queue(void **state)
{
    enum { N = MOTE_MAX_CONVERSATIONS + 2 };
    char name[64], line[256];
    unsigned i, k;
    int found;

    (void)state;
    kit_stop();
    assert_int_equal(tp.port.st_mkdir(tp.port.ctx, "conversations"), 0);
    for (i = 0; i < N; i++) {
        int n = snprintf(line, sizeof(line),
                         "{\"t\":\"open\",\"v\":2,\"id\":\"r%u\"}\n{\"t\":\"user\",\"text\":\"hi %u\"}\n"
                         "{\"t\":\"request\",\"attempt\":1}\n",
                         i, i);

        snprintf(name, sizeof(name), "conversations/r%u.jsonl", i);
        assert_int_equal(mote_tport_put(&tp, name, line, (size_t)n), 0);
        answer("recovered", NULL, NULL, false);
    }
    mote_tport_serve_init(&tp, &ts);
    start();
    found = mote_serve_recover(&srv);
    assert_int_equal(found, N);
    assert_int_equal(mote_serve_state(&srv)->nrec, N - MOTE_MAX_CONVERSATIONS); /* waiting for a slot */
    for (k = 0; k < 400; k++) {
        turns(1);
        if (mote_serve_state(&srv)->nrec == 0 && !mote_session_busy(&ses))
            break;
    }
    assert_int_equal(mote_serve_state(&srv)->nrec, 0);
    for (i = 0; i < N; i++) {
        const struct mote_tport_file *f;

        snprintf(name, sizeof(name), "conversations/r%u.jsonl", i);
        f = mote_tport_file(&tp, name);
        assert_non_null(f);
        assert_non_null(memmem(f->data, f->len, "\"t\":\"auto\"", 10));
        assert_non_null(memmem(f->data, f->len, "\"text\":\"recovered\"", 18));
    }
    assert_non_null(strstr(logbuf, "recovering conversation r"));
}

static void test_port_without_serving(void **state)
{
    struct mote_serve_conf c = vc;

    (void)state;
    mote_serve_deinit(&srv);
    tp.port.net_accept = NULL;
    assert_int_equal(mote_serve_init(&srv, &loop, &c), MOTE_ERR_NOSYS);
    assert_string_equal(srv.missing, "net_accept");
    mote_tport_serve_init(&tp, &ts);
    tp.port.net_listen_unix = NULL;
    assert_int_equal(mote_serve_init(&srv, &loop, &c), MOTE_ERR_NOSYS);
    assert_string_equal(srv.missing, "net_listen_unix");
    c.socket_path = NULL;
    c.listen = "127.0.0.1:1";
    c.token = "a-token-long-enough";
    assert_int_equal(mote_serve_init(&srv, &loop, &c), 0); /* TCP only: no Unix member needed */
    tp.port.net_listen_tcp = NULL;
    assert_int_equal(mote_serve_init(&srv, &loop, &c), MOTE_ERR_NOSYS);
    assert_string_equal(srv.missing, "net_listen_tcp");
    tp.port.size = (uint32_t)offsetof(struct mote_port, net_listen_unix); /* an older port */
    assert_int_equal(mote_serve_init(&srv, &loop, &c), MOTE_ERR_NOSYS);
    assert_string_equal(srv.missing, "net_accept");
    tp.port.size = sizeof(tp.port);
    mote_tport_serve_init(&tp, &ts);
    assert_int_equal(mote_serve_init(&srv, &loop, &vc), 0);
}

static void test_token_file(void **state)
{
    char t1[65], t2[65];
    bool created;
    const struct mote_tport_file *f;

    (void)state;
    /* early boot: the generator of secrets is not seeded - nothing is
     * made from anything weaker, nothing is written */
    tp.secret_not_seeded = true;
    assert_int_equal(mote_serve_token(&tp.port, "serve.token", t1, &created), MOTE_ERR_AGAIN);
    assert_false(created);
    assert_null(mote_tport_file(&tp, "serve.token"));
    tp.secret_not_seeded = false;
    /* a port with no generator of secrets makes none (its `random` may be weak) */
    {
        struct mote_port p = tp.port;

        p.random_secret = NULL;
        assert_int_equal(mote_serve_token(&p, "serve.token", t1, &created), MOTE_ERR_NOSYS);
        assert_null(mote_tport_file(&tp, "serve.token"));
    }
    assert_int_equal(mote_serve_token(&tp.port, "serve.token", t1, &created), 0);
    assert_true(created);
    assert_int_equal(strlen(t1), 64);
    f = mote_tport_file(&tp, "serve.token");
    assert_non_null(f);
    assert_int_equal(f->len, 65);
    assert_int_equal(mote_serve_token(&tp.port, "serve.token", t2, &created), 0);
    assert_false(created);
    assert_string_equal(t1, t2);
    assert_int_equal(mote_tport_put(&tp, "serve.token", "short\n", 6), 0);
    assert_int_equal(mote_serve_token(&tp.port, "serve.token", t2, &created), MOTE_ERR_CORRUPT);
}

/* ---- regressions: each shows a defect found in the server ---- */

/* The record events of stream `s` (complete events only): each one's data
 * is the journal's line at its id, byte for byte, and each starts where
 * the one before ended (every record after the first, in order, once).
 * Returns how many; *next is where the last one ended. */
static unsigned stream_records(const char *s, const char *id, unsigned long *first,
                               unsigned long *next)
{
    char name[128];
    const struct mote_tport_file *f;
    const char *p = strstr(s, "\r\n\r\n");
    unsigned n = 0;

    snprintf(name, sizeof(name), "conversations/%s.jsonl", id);
    f = mote_tport_file(&tp, name);
    assert_non_null(f);
    assert_non_null(p);
    p += 4;
    for (;;) {
        const char *end = strstr(p, "\n\n"), *d, *idl;
        unsigned long off;
        size_t len;

        if (end == NULL)
            break; /* an event not complete yet: a client waits for the rest */
        if (strncmp(p, "id: ", 4) == 0 && (idl = strstr(p, "\nevent: record\ndata: ")) != NULL &&
            idl < end) {
            off = strtoul(p + 4, NULL, 10);
            d = idl + 21;
            len = (size_t)(end - d);
            if (off + len >= f->len || memcmp(f->data + off, d, len) != 0 ||
                f->data[off + len] != '\n')
                fail_msg("record at %lu is not the journal's line: %.*s", off,
                         (int)(len < 200 ? len : 200), d);
            if (n == 0 && first != NULL)
                *first = off;
            if (n > 0 && off != *next)
                fail_msg("record at %lu follows one that ended at %lu", off, *next);
            *next = off + len + 1;
            n++;
        } else {
            const char *r = strstr(p, "event: record");

            if (r != NULL && r < end)
                fail_msg("a record event without its id: %.100s", p);
        }
        p = end + 2;
    }
    return n;
}

static size_t journal_len(const char *id)
{
    char name[128];
    const struct mote_tport_file *f;

    snprintf(name, sizeof(name), "conversations/%s.jsonl", id);
    f = mote_tport_file(&tp, name);
    assert_non_null(f);
    return f->len;
}

/* Creates conversation `id` and sends it "hi", the model scripted to
 * answer `text` (or to stall after it). */
static void start_turn(const char *id, const char *text, bool stall)
{
    char body[96];
    const char *b;

    snprintf(body, sizeof(body), "{\"id\":\"%s\"}", id);
    assert_int_equal(http("POST", "/v1/conversations", body, &b), 201);
    answer(text, NULL, NULL, stall);
    assert_int_equal(post_message(id, "{\"text\":\"hi\"}", &b), 202);
}

static void wait_idle(void)
{
    unsigned i;

    for (i = 0; i < 200 && mote_session_busy(&ses); i++)
        turns(1);
    turns(3);
}

/* 1. A journal not loaded that ends in a torn line (a power cut): a
 * stream following it never sends the torn bytes, and once the
 * conversation is loaded (the tail cut off) and goes on, the stream goes
 * on with the real records - every one, in order, once, verbatim. */
static void test_torn_tail_never_streamed(void **state)
{
    static const char torn[] = "{\"t\":\"user\",\"text\":\"this line was torn by a power cu";
    static unsigned char data[8192];
    char path[128];
    const struct mote_tport_file *f;
    unsigned long first = 0, next = 0;
    const char *b;
    size_t good;
    int ev;

    (void)state;
    start_turn("t4", "first", false);
    wait_idle();
    /* a restart, with a torn line at the end of the journal */
    kit_stop();
    f = mote_tport_file(&tp, "conversations/t4.jsonl");
    good = f->len;
    assert_true(good + sizeof(torn) < sizeof(data));
    memcpy(data, f->data, good);
    memcpy(data + good, torn, sizeof(torn) - 1);
    assert_int_equal(mote_tport_put(&tp, "conversations/t4.jsonl", data, good + sizeof(torn) - 1),
                     0);
    mote_tport_serve_init(&tp, &ts);
    start();
    ev = events_client("t4");
    turns(10);
    assert_null(strstr(sent(ev), "torn by"));
    assert_non_null(strstr(sent(ev), "event: state"));
    assert_int_equal(stream_records(sent(ev), "t4", &first, &next), 4);
    assert_int_equal(next, good);
    /* loaded (the torn line is cut off), and a new turn */
    answer("after the repair", NULL, NULL, false);
    snprintf(path, sizeof(path), "/v1/conversations/t4/messages");
    assert_int_equal(http("POST", path, "{\"text\":\"new message\"}", &b), 202);
    wait_idle();
    assert_null(strstr(sent(ev), "torn by"));
    assert_true(stream_records(sent(ev), "t4", &first, &next) >= 7);
    assert_int_equal(first, 0);
    assert_int_equal(next, journal_len("t4"));
    assert_non_null(strstr(sent(ev), "after the repair"));
}

#define TOKEN "0123456789abcdef-token"

static void tcp_server(void)
{
    mote_serve_deinit(&srv);
    vc.listen = "127.0.0.1:0";
    vc.token = TOKEN;
    assert_int_equal(mote_serve_init(&srv, &loop, &vc), 0);
    assert_int_equal(mote_serve_listen(&srv), 0);
}

/* 2. Clients without the token cannot lock the Unix socket's clients out:
 * silent TCP connections are closed at the head's deadline (not the idle
 * one), TCP holds only its share of the connections, and a 401 closes. */
static void test_tcp_cannot_lock_out_the_socket(void **state)
{
    int p[MOTE_SERVE_MAX_CONNS], u;
    const char *two = "GET /v1/health HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer guess1\r\n\r\n"
                      "GET /v1/health HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer guess2\r\n\r\n";
    unsigned i, open_tcp = 0;

    (void)state;
    tcp_server();
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++) {
        p[i] = mote_tport_peer_connect(&tp, true);
        assert_true(p[i] >= 0);
        turns(1);
    }
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++)
        open_tcp += !mote_tport_peer_get(&tp, p[i])->server_closed;
    assert_true(open_tcp < MOTE_SERVE_MAX_CONNS);
    /* the Unix socket is still served */
    u = client("GET /v1/health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    turns(5);
    assert_non_null(strstr(sent(u), "HTTP/1.1 200"));
    /* the silent ones go at the head's deadline */
    mote_tport_advance(&tp, MOTE_SERVE_HEADER_TIMEOUT_MS + 1000);
    turns(3);
    for (i = 0; i < MOTE_SERVE_MAX_CONNS; i++)
        assert_true(mote_tport_peer_get(&tp, p[i])->server_closed);
    assert_int_equal(mote_serve_state(&srv)->http.nconns, 0);
    /* a wrong token: one 401, and the connection closes (no second guess) */
    p[0] = mote_tport_peer_connect(&tp, true);
    mote_tport_peer_write(&tp, p[0], two, strlen(two));
    for (i = 0; i < 20 && !mote_tport_peer_get(&tp, p[0])->server_closed; i++)
        turns(1);
    if (!mote_tport_peer_get(&tp, p[0])->server_closed) {
        mote_tport_advance(&tp, MOTE_SERVE_FLUSH_MS + 10);
        turns(3);
    }
    assert_true(mote_tport_peer_get(&tp, p[0])->server_closed);
    assert_non_null(strstr(sent(p[0]), "HTTP/1.1 401"));
    assert_null(strstr(strstr(sent(p[0]), "HTTP/1.1 401") + 1, "HTTP/1.1"));
    vc.listen = NULL;
    vc.token = NULL;
}

/* 2. A token too short to resist guessing is refused. */
static void test_short_token_refused(void **state)
{
    (void)state;
    mote_serve_deinit(&srv);
    vc.listen = "127.0.0.1:0";
    vc.token = "t0k";
    assert_int_equal(mote_serve_init(&srv, &loop, &vc), MOTE_ERR_INVAL);
    vc.token = TOKEN;
    assert_int_equal(mote_serve_init(&srv, &loop, &vc), 0);
    vc.listen = NULL;
    vc.token = NULL;
}

/* 3. A follower whose send buffer has no room for the approval event (it
 * reads slowly; the call's input is large) is told the state with the
 * pending approval once it has room: it never misses the question. */
static void test_slow_follower_gets_the_approval(void **state)
{
    static char input[2600];
    char req[256];
    struct mote_tport_peer *q;
    const char *s, *st;
    size_t i;
    int ev;

    (void)state;
    rules[0].name = "probe";
    rules[0].approval = MOTE_APPROVE_ASK;
    cc.rules = rules;
    cc.nrules = 1;
    assert_int_equal(http("POST", "/v1/conversations", "{\"id\":\"ap\"}", &s), 201);
    ev = client("GET /v1/conversations/ap/events HTTP/1.1\r\nHost: t\r\n\r\n");
    for (i = 0; i < 20 && strstr(sent(ev), "event: state") == NULL; i++)
        turns(1);
    assert_non_null(strstr(sent(ev), "event: state"));
    q = mote_tport_peer_get(&tp, ev);
    q->window = 1; /* it reads a byte, then nothing for a while */
    mote_tport_peer_read(&tp, ev, (size_t)-1);
    i = (size_t)snprintf(input, sizeof(input), "{\\\"pad\\\":\\\"");
    memset(input + i, 'x', 2500);
    i += 2500;
    snprintf(input + i, sizeof(input) - i, "\\\"}");
    answer("let me look", "probe", input, false);
    snprintf(req, sizeof(req), "/v1/conversations/ap/messages");
    assert_int_equal(http("POST", req, "{\"text\":\"look\"}", &s), 202);
    until_asked("ap", 200);
    turns(3);
    /* it reads on */
    q->window = 0;
    for (i = 0; i < 50; i++) {
        mote_tport_peer_read(&tp, ev, (size_t)-1);
        turns(1);
    }
    s = sent(ev);
    st = strstr(s, "event: approval\n");
    if (st == NULL) {
        /* else a state event after the last record carries the approval */
        const char *last = s, *x;

        while ((x = strstr(last + 1, "event: state\n")) != NULL)
            last = x;
        assert_true(last != s);
        assert_non_null(strstr(last, "\"state\":\"awaiting_approval\""));
        st = strstr(last, "\"approval\":{\"ask_id\":");
    }
    assert_non_null(st);
    assert_non_null(strstr(st, "\"name\":\"probe\""));
    cc.rules = NULL;
    cc.nrules = 0;
}

/* 4. Pipelined requests (20 in one write) are all answered, in order,
 * at once; `shut`: the client shut its sending side after them. */
static void pipelined(bool shut)
{
    static char req[4096];
    const char *one = "GET /v1/health HTTP/1.1\r\nHost: t\r\n\r\n";
    const char *s;
    size_t n = 0;
    unsigned i, count;
    int p;

    for (i = 0; i < 20; i++)
        n += (size_t)snprintf(req + n, sizeof(req) - n, "%s", one);
    p = client(req);
    if (shut)
        mote_tport_peer_shutdown(&tp, p); /* shutdown(SHUT_WR) after the requests */
    turns(40);
    s = sent(p);
    for (count = 0; (s = strstr(s, "HTTP/1.1 200 OK")) != NULL; s++)
        count++;
    assert_int_equal(count, 20);
    assert_null(strstr(sent(p), "HTTP/1.1 408"));
    /* after the last answer: closed (shut), or open for more */
    assert_int_equal(mote_tport_peer_get(&tp, p)->server_closed, shut);
}

static void test_pipelined_requests_all_answered(void **state)
{
    (void)state;
    pipelined(false);
}

static void test_pipelined_then_half_close(void **state)
{
    (void)state;
    pipelined(true);
}

/* 5. Deleting a conversation ends its event streams with a last event; a
 * new conversation of the same id is never shown on an old stream. */
static void test_delete_ends_event_streams(void **state)
{
    const char *b;
    unsigned long next = 0;
    int ev;
    unsigned i;

    (void)state;
    start_turn("c5", "first life", false);
    wait_idle();
    ev = events_client("c5");
    turns(5);
    assert_int_equal(stream_records(sent(ev), "c5", NULL, &next), 4);
    assert_int_equal(http("DELETE", "/v1/conversations/c5", NULL, &b), 200);
    for (i = 0; i < 20 && !mote_tport_peer_get(&tp, ev)->server_closed; i++)
        turns(1);
    assert_true(mote_tport_peer_get(&tp, ev)->server_closed);
    b = strstr(sent(ev), "event: removed\ndata: {\"id\":\"c5\"}\n\n");
    assert_non_null(b);
    assert_string_equal(b, "event: removed\ndata: {\"id\":\"c5\"}\n\n"); /* the last */
    assert_int_equal(mote_serve_state(&srv)->http.nconns, 0);
    /* born again: a new stream has it from its own start */
    assert_int_equal(http("POST", "/v1/conversations", "{\"id\":\"c5\"}", &b), 201);
    ev = events_client("c5");
    turns(5);
    assert_int_equal(stream_records(sent(ev), "c5", NULL, &next), 1);
    assert_int_equal(next, journal_len("c5"));
}

/* 7. An HTTP/1.0 client gets a body that ends with the connection, never
 * chunks it cannot read (RFC 9112 6.1). */
static void test_http10_close_delimited(void **state)
{
    const char *b, *body;
    unsigned i;
    int p;

    (void)state;
    assert_int_equal(http("POST", "/v1/conversations", "{\"id\":\"h10\"}", &b), 201);
    p = client("GET /v1/conversations/h10 HTTP/1.0\r\n\r\n");
    for (i = 0; i < 50 && !mote_tport_peer_get(&tp, p)->server_shut &&
                !mote_tport_peer_get(&tp, p)->server_closed;
         i++)
        turns(1);
    assert_non_null(strstr(sent(p), "HTTP/1.1 200"));
    assert_null(strstr(sent(p), "Transfer-Encoding"));
    assert_non_null(strstr(sent(p), "Connection: close"));
    body = strstr(sent(p), "\r\n\r\n") + 4;
    assert_true(strncmp(body, "{\"id\":\"h10\"", 11) == 0);
    assert_non_null(strstr(body, "\"records\":[{\"offset\":0,\"record\":{\"t\":\"open\""));
    assert_string_equal(body + strlen(body) - 3, "]}\n"); /* the JSON whole, nothing after */
}

/* 7. After its last answer (Connection: close) the server ends its
 * sending side at once: the client sees the end without waiting. */
static void test_close_ends_our_side_at_once(void **state)
{
    struct mote_tport_peer *q;
    int p;

    (void)state;
    p = client("GET /v1/health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    q = mote_tport_peer_get(&tp, p);
    turns(5); /* 50 ms at most: far less than MOTE_SERVE_FLUSH_MS */
    assert_non_null(strstr(sent(p), "HTTP/1.1 200"));
    assert_true(q->server_shut || q->server_closed);
    mote_tport_peer_close(&tp, p); /* the client, having read it all, closes */
    turns(3);
    assert_true(q->server_closed);
    assert_int_equal(mote_serve_state(&srv)->http.nconns, 0);
}

/* A conversation waiting for the approval of a probe call; its call id
 * into `call`. */
static void pending_probe(const char *id, char *call, size_t cap)
{
    char path[128], body[64];
    const char *b, *q;

    rules[0].name = "probe";
    rules[0].approval = MOTE_APPROVE_ASK;
    cc.rules = rules;
    cc.nrules = 1;
    snprintf(body, sizeof(body), "{\"id\":\"%s\"}", id);
    assert_int_equal(http("POST", "/v1/conversations", body, &b), 201);
    answer("let me look", "probe", "{}", false);
    assert_int_equal(post_message(id, "{\"text\":\"look\"}", &b), 202);
    until_asked(id, 100);
    snprintf(path, sizeof(path), "/v1/conversations/%s?records=0", id);
    assert_int_equal(http("GET", path, NULL, &b), 200);
    q = strstr(b, "\"call_id\":\"");
    assert_non_null(q);
    q += 11;
    snprintf(call, cap, "%.*s", (int)(strchr(q, '"') - q), q);
}

/* 7. An ask_id out of range is refused, never cut to 32 bits. */
static void test_ask_id_out_of_range(void **state)
{
    char call[64], body[160];
    const char *b;

    (void)state;
    pending_probe("ak", call, sizeof(call));
    snprintf(body, sizeof(body), "{\"call_id\":\"%s\",\"answer\":\"yes\",\"ask_id\":%llu}", call,
             1ULL + 4294967296ULL);
    assert_int_equal(http("POST", "/v1/conversations/ak/approval", body, &b), 400);
    snprintf(body, sizeof(body), "{\"call_id\":\"%s\",\"answer\":\"yes\",\"ask_id\":0}", call);
    assert_int_equal(http("POST", "/v1/conversations/ak/approval", body, &b), 400);
    snprintf(body, sizeof(body), "{\"call_id\":\"%s\",\"answer\":\"yes\",\"ask_id\":-4294967295}",
             call);
    assert_int_equal(http("POST", "/v1/conversations/ak/approval", body, &b), 400);
    turns(3);
    assert_int_equal(tool_runs, 0);
    answer("it said ok", NULL, NULL, false);
    snprintf(body, sizeof(body), "{\"call_id\":\"%s\",\"answer\":\"yes\",\"ask_id\":1}", call);
    assert_int_equal(http("POST", "/v1/conversations/ak/approval", body, &b), 202);
    wait_idle();
    assert_int_equal(tool_runs, 1);
    cc.rules = NULL;
    cc.nrules = 0;
}

/* 7. An answer during the drain is refused as the shutdown (503), and
 * runs nothing: the call stays pending, to be asked again on the next
 * start. */
static void test_approval_during_drain(void **state)
{
    struct mote_shutdown_req sd = {"SIGTERM", MOTE_SD_DRAIN, 5000, false};
    char call[64], body[160];
    const char *b;

    (void)state;
    pending_probe("dr", call, sizeof(call));
    /* another turn stalls: the drain waits for it */
    start_turn("st", "stalled", true);
    turns(5);
    assert_int_equal(mote_serve_shutdown(&srv, &sd), 0);
    turns(3);
    assert_int_equal(srv.phase, MOTE_SERVE_DRAIN);
    snprintf(body, sizeof(body), "{\"call_id\":\"%s\",\"answer\":\"yes\"}", call);
    assert_int_equal(http("POST", "/v1/conversations/dr/approval", body, &b), 503);
    assert_non_null(strstr(b, "\"error\":\"shutting_down\""));
    turns(3);
    assert_int_equal(tool_runs, 0);
    cc.rules = NULL;
    cc.nrules = 0;
}

/* 7. The exit code's rules (mote_serve_exit_code): a drain that finished
 * 0; a signal that cut a turn 143 (SIGTERM) or 129 (SIGHUP); SIGINT 130;
 * a failure 1, also when a signal's code would say otherwise. */
static void test_exit_codes(void **state)
{
    const char *b;
    unsigned i;

    (void)state;
    assert_int_equal(mote_serve_exit_code(&srv, 0), 0);
    /* a stalled turn, SIGTERM, then a second signal forces */
    assert_int_equal(http("POST", "/v1/conversations", "{\"id\":\"x\"}", &b), 201);
    answer("stalled", NULL, NULL, true);
    assert_int_equal(http("POST", "/v1/conversations/x/messages", "{\"text\":\"go\"}", &b), 202);
    turns(5);
    assert_int_equal(mote_serve_signal(&srv, MOTE_SIG_TERM, 60000), 0);
    turns(3);
    assert_false(mote_serve_done(&srv));
    assert_int_equal(mote_serve_signal(&srv, MOTE_SIG_INT, 60000), 0);
    for (i = 0; i < 300 && !mote_serve_done(&srv); i++) {
        mote_tport_advance(&tp, 100);
        turns(1);
    }
    assert_true(mote_serve_done(&srv));
    assert_non_null(strstr(logbuf, "SIGINT again: stopping now"));
    assert_int_equal(mote_serve_exit_code(&srv, 0), 143);
    srv.sig = MOTE_SIG_HUP + 1;
    assert_int_equal(mote_serve_exit_code(&srv, 0), 129);
    srv.sig = MOTE_SIG_INT + 1;
    assert_int_equal(mote_serve_exit_code(&srv, 0), 130);
    /* a journal's storage failed during it: 1 wins */
    srv.sig = MOTE_SIG_TERM + 1;
    ses.report.storage_err = MOTE_ERR_NOSPC;
    assert_int_equal(mote_serve_exit_code(&srv, 0), 1);
    ses.report.storage_err = 0;
    /* the loop failed: 1, not a signal's code */
    assert_int_equal(mote_serve_exit_code(&srv, MOTE_ERR_IO), 1);
}

/* 7. A drain with nothing running ends at once: exit 0, not 143. */
static void test_exit_code_after_a_clean_drain(void **state)
{
    unsigned i;

    (void)state;
    assert_int_equal(mote_serve_signal(&srv, MOTE_SIG_TERM, 60000), 0);
    for (i = 0; i < 300 && !mote_serve_done(&srv); i++) {
        mote_tport_advance(&tp, 100);
        turns(1);
    }
    assert_true(mote_serve_done(&srv));
    assert_int_equal(mote_serve_exit_code(&srv, 0), 0);
}

/* A journal of one record, put straight on the disk. */
static void put_journal(const char *id)
{
    char name[96], line[128];
    int n = snprintf(line, sizeof(line), "{\"t\":\"open\",\"v\":2,\"id\":\"%s\"}\n", id);

    snprintf(name, sizeof(name), "conversations/%s.jsonl", id);
    assert_int_equal(mote_tport_put(&tp, name, line, (size_t)n), 0);
}

/* 7. The list comes in pages, in the order of the ids: every
 * conversation can be found, following "next". */
static void test_list_pages(void **state)
{
    static const char *const ids[] = {"p5", "p0", "p3", "p6", "p1", "p4", "p2"};
    /* each page: what it holds and what it must not */
    static const struct {
        const char *url;
        const char *has[4];
        const char *not_has;
    } pages[] = {
        {"/v1/conversations?limit=3",
         {"{\"conversations\":[{\"id\":\"p0\"", "},{\"id\":\"p1\"", "},{\"id\":\"p2\"",
          "],\"truncated\":true,\"next\":\"p2\"}"},
         "\"p3\""},
        {"/v1/conversations?after=p2&limit=3", {"[{\"id\":\"p3\"", "\"next\":\"p5\"}"}, "\"p2\""},
        {"/v1/conversations?after=p5&limit=3",
         {"[{\"id\":\"p6\"", "],\"truncated\":false,\"next\":null}"},
         NULL},
        /* without a limit: the default page, here all of them */
        {"/v1/conversations", {"\"p0\"", "\"p6\"", "\"truncated\":false"}, NULL},
    };
    const char *b;
    unsigned i, k;

    (void)state;
    assert_int_equal(tp.port.st_mkdir(tp.port.ctx, "conversations"), 0);
    for (i = 0; i < 7; i++)
        put_journal(ids[i]);
    for (i = 0; i < sizeof(pages) / sizeof(pages[0]); i++) {
        assert_int_equal(http("GET", pages[i].url, NULL, &b), 200);
        for (k = 0; k < 4 && pages[i].has[k] != NULL; k++)
            if (strstr(b, pages[i].has[k]) == NULL)
                fail_msg("%s: no %s in %s", pages[i].url, pages[i].has[k], b);
        if (pages[i].not_has != NULL && strstr(b, pages[i].not_has) != NULL)
            fail_msg("%s: %s in %s", pages[i].url, pages[i].not_has, b);
    }
    assert_int_equal(http("GET", "/v1/conversations?limit=0", NULL, &b), 400);
    assert_int_equal(http("GET", "/v1/conversations?after=..%2Fx", NULL, &b), 400);
}

/* A finished journal `id` of about `size` bytes (turns of 4 KiB answers). */
static void put_big_journal(const char *id, size_t size)
{
    static char buf[1 << 20];
    char name[96];
    size_t n = (size_t)snprintf(buf, sizeof(buf), "{\"t\":\"open\",\"v\":2,\"id\":\"%s\"}\n", id);

    assert_true(size < sizeof(buf) - 8192);
    while (n < size) {
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "{\"t\":\"user\",\"text\":\"q%zu\"}\n", n);
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "{\"t\":\"assistant\",\"text\":\"");
        memset(buf + n, 'a', 4096);
        n += 4096;
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, "\",\"stop\":\"end_turn\"}\n");
    }
    snprintf(name, sizeof(name), "conversations/%s.jsonl", id);
    assert_int_equal(mote_tport_put(&tp, name, buf, n), 0);
}

/* Journals longer than a step are read over several loop turns: a list
 * and a GET of a conversation not loaded wait for them while health is
 * answered at once; what was read is kept, so the same list again needs
 * no reading. */
static void test_long_journals_read_in_steps(void **state)
{
    const char *b;
    unsigned i, list_turns;
    int lp, hp;

    (void)state;
    assert_int_equal(tp.port.st_mkdir(tp.port.ctx, "conversations"), 0);
    for (i = 0; i < 3; i++) {
        char id[8];

        snprintf(id, sizeof(id), "big%u", i);
        put_big_journal(id, 4 * MOTE_SERVE_SCAN_STEP);
    }
    lp = client("GET /v1/conversations HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    turns(2);
    assert_null(strstr(sent(lp), "HTTP/1.1")); /* still reading */
    hp = client("GET /v1/health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    for (i = 0; i < 10 && strstr(sent(hp), "\"status\":\"ok\"") == NULL; i++)
        turns(1);
    assert_non_null(strstr(sent(hp), "HTTP/1.1 200"));
    assert_non_null(strstr(sent(hp), "\"status\":\"ok\""));
    assert_null(strstr(sent(lp), "HTTP/1.1")); /* health first: the list still reads */
    for (list_turns = 4; list_turns < 200 && strstr(sent(lp), "\"truncated\"") == NULL;
         list_turns++)
        turns(1);
    assert_true(list_turns >= 12); /* 3 journals of 4 steps, at least */
    b = strstr(sent(lp), "\r\n\r\n");
    assert_non_null(strstr(sent(lp), "HTTP/1.1 200"));
    assert_non_null(b);
    assert_non_null(strstr(b, "{\"id\":\"big0\",\"state\":\"idle\""));
    assert_non_null(strstr(b, "\"id\":\"big2\""));
    assert_non_null(strstr(b, "\"truncated\":false"));
    /* read once: the same list is answered from what was kept */
    lp = client("GET /v1/conversations HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    for (i = 0; i < 10 && strstr(sent(lp), "\"truncated\"") == NULL; i++)
        turns(1);
    assert_true(i < 10);
    assert_non_null(strstr(sent(lp), "\"id\":\"big1\""));
    /* a changed journal is read again: a GET waits for it, then answers */
    put_big_journal("big1", 5 * MOTE_SERVE_SCAN_STEP);
    lp = client("GET /v1/conversations/big1?records=0 HTTP/1.1\r\nHost: t\r\n"
                "Connection: close\r\n\r\n");
    turns(2);
    assert_null(strstr(sent(lp), "HTTP/1.1"));
    for (i = 0; i < 200 && strstr(sent(lp), "\"approval\"") == NULL; i++)
        turns(1);
    assert_non_null(strstr(sent(lp), "\"id\":\"big1\",\"state\":\"idle\""));
    /* and a DELETE too */
    assert_int_equal(http("DELETE", "/v1/conversations/big2", NULL, &b), 200);
    assert_null(mote_tport_file(&tp, "conversations/big2.jsonl"));
}

/* A loaded conversation's summary is kept current from its records: the
 * list counts its messages and its size as they are written, without
 * reading the journal again. */
static void test_loaded_summary_kept_current(void **state)
{
    char path[96], want[96];
    const char *b;
    unsigned reads;

    (void)state;
    start_turn("kc", "one", false);
    wait_idle();
    assert_int_equal(http("GET", "/v1/conversations", NULL, &b), 200);
    assert_non_null(strstr(b, "\"user_messages\":1,\"first\":\"hi\""));
    answer("two", NULL, NULL, false);
    snprintf(path, sizeof(path), "/v1/conversations/kc/messages");
    assert_int_equal(http("POST", path, "{\"text\":\"second\"}", &b), 202);
    wait_idle();
    reads = tp.st_reads;
    assert_int_equal(http("GET", "/v1/conversations", NULL, &b), 200);
    assert_int_equal(tp.st_reads, reads); /* nothing read again */
    snprintf(want, sizeof(want), "\"bytes\":%zu,\"user_messages\":2,\"first\":\"hi\"",
             journal_len("kc"));
    assert_non_null(strstr(b, want));
}

static int lock_held(void *ctx, int h, unsigned how, int64_t *holder)
{
    struct mote_tport *t = ctx;

    (void)how;
    if (h >= 0 && h < MOTE_TPORT_HANDLES && t->handles[h] > 0 &&
        strstr(t->files[t->handles[h] - 1].name, "held") != NULL) {
        *holder = 4242;
        return MOTE_ERR_LOCKED;
    }
    *holder = 0;
    return 0;
}

/* 7. A conversation another process has open is "locked" on its event
 * stream and in its state, not "idle". */
static void test_locked_elsewhere_is_said(void **state)
{
    const char *b;
    int ev;

    (void)state;
    assert_int_equal(tp.port.st_mkdir(tp.port.ctx, "conversations"), 0);
    put_journal("held");
    tp.port.st_lock = lock_held;
    ev = events_client("held");
    turns(5);
    assert_non_null(strstr(sent(ev), "event: state\ndata: {\"state\":\"locked\",\"loaded\":false,"
                                     "\"busy\":false,\"holder\":4242"));
    assert_int_equal(http("GET", "/v1/conversations/held?records=0", NULL, &b), 200);
    assert_non_null(strstr(b, "\"state\":\"locked\""));
    assert_non_null(strstr(b, "\"holder\":4242"));
    tp.port.st_lock = NULL;
}

/* The --policy format, parsed by the library (no frontend copies it). */
static int policy(struct mote_policy *pol, const char *text, char *err)
{
    return mote_policy_parse(pol, text, strlen(text), err, 200);
}

static void test_policy_parse(void **state)
{
    static struct mote_policy pol;
    static char big[8192];
    char err[200];
    const char *ok = "{\"default\": \"deny\", \"tools\": {\"shell\": \"allow\", "
                     "\"write_file\": \"ask\"}}";
    size_t n = 0;
    unsigned i;

    (void)state;
    assert_int_equal(mote_policy_parse(&pol, ok, strlen(ok), err, sizeof(err)), 0);
    assert_true(pol.has_default);
    assert_int_equal(pol.approval, MOTE_APPROVE_DENY);
    assert_int_equal(pol.nrules, 2);
    assert_string_equal(pol.rules[0].name, "shell");
    assert_int_equal(pol.rules[0].approval, MOTE_APPROVE_ALLOW);
    assert_string_equal(pol.rules[1].name, "write_file");
    assert_int_equal(pol.rules[1].approval, MOTE_APPROVE_ASK);
    assert_int_equal(mote_policy_parse(&pol, "{}", 2, err, sizeof(err)), 0);
    assert_false(pol.has_default);
    assert_int_equal(pol.nrules, 0);
    assert_int_equal(mote_policy_parse(&pol, "[1]", 3, err, sizeof(err)), MOTE_ERR_BADMSG);
    assert_int_equal(policy(&pol, "{\"tools\": {\"shell\": \"sometimes\"}}", err), MOTE_ERR_BADMSG);
    assert_non_null(strstr(err, "ask, allow or deny"));
    assert_int_equal(policy(&pol, "{\"default\": 1}", err), MOTE_ERR_BADMSG);
    assert_int_equal(policy(&pol, "{\"tools\": {\"\": \"ask\"}}", err), MOTE_ERR_BADMSG);
    assert_int_equal(policy(&pol, "{\"tools\": [\"shell\"]}", err), MOTE_ERR_BADMSG);
    /* strict: one reading only, and no name or answer cut at a NUL */
    assert_int_equal(policy(&pol, "{\"tools\": {\"shell\": \"deny\", \"shell\": \"allow\"}}", err),
                     MOTE_ERR_BADMSG);
    assert_string_equal(err, "duplicate key \"shell\"");
    assert_int_equal(policy(&pol, "{\"default\": \"ask\", \"default\": \"allow\"}", err),
                     MOTE_ERR_BADMSG);
    assert_int_equal(policy(&pol, "{\"tools\": {\"shell\\u0000x\": \"allow\"}}", err),
                     MOTE_ERR_BADMSG);
    assert_non_null(strstr(err, "NUL"));
    assert_int_equal(policy(&pol, "{\"tools\": {\"shell\": \"allow\\u0000no\"}}", err),
                     MOTE_ERR_BADMSG);
    n = (size_t)snprintf(big, sizeof(big), "{\"tools\": {");
    for (i = 0; i <= MOTE_SERVE_RULES_MAX; i++)
        n += (size_t)snprintf(big + n, sizeof(big) - n, "%s\"t%u\": \"ask\"", i ? "," : "", i);
    n += (size_t)snprintf(big + n, sizeof(big) - n, "}}");
    assert_int_equal(mote_policy_parse(&pol, big, n, err, sizeof(err)), MOTE_ERR_FULL);
    assert_non_null(strstr(err, "MOTE_SERVE_RULES_MAX"));
}

/* A request's body in a pool buffer is its handler's for the whole call:
 * while the handler runs, another connection may take any free buffer and
 * fill it, so the body's must not be free then. Seen from inside the
 * handler (its log line): the buffer holding the body is still taken. */
static int body_buf; /* the taken pool buffer that holds the body (-1: none) */
static bool body_looked;

static void log_and_look(void *arg, const char *line)
{
    unsigned i;

    on_log(arg, line);
    if (strstr(line, "created conversation held") == NULL)
        return;
    body_looked = true;
    for (i = 0; i < MOTE_SERVE_BODY_BUFS; i++) {
        if (POOL_USED(i) && memmem(POOL_BUF(i), MOTE_SERVE_BODY_MAX, "\"pad\":\"ppp", 10) != NULL)
            body_buf = (int)i;
    }
}

static void test_body_buffer_held_while_handled(void **state)
{
    static char body[MOTE_SERVE_IN_BUF * 2];
    const char *b;
    size_t n;
    unsigned i;

    (void)state;
    mote_serve_deinit(&srv);
    vc.log = log_and_look;
    assert_int_equal(mote_serve_init(&srv, &loop, &vc), 0);
    assert_int_equal(mote_serve_listen(&srv), 0);
    body_buf = -1;
    body_looked = false;
    /* larger than a connection's receive buffer: it goes to the pool */
    n = (size_t)snprintf(body, sizeof(body), "{\"id\":\"held\",\"pad\":\"");
    memset(body + n, 'p', MOTE_SERVE_IN_BUF);
    n += MOTE_SERVE_IN_BUF;
    memcpy(body + n, "\"}", 3);
    assert_int_equal(http("POST", "/v1/conversations", body, &b), 201);
    assert_true(body_looked);
    assert_true(body_buf >= 0);
    /* answered: every buffer is free again */
    for (i = 0; i < MOTE_SERVE_BODY_BUFS; i++)
        assert_false(POOL_USED(i));
    vc.log = on_log;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_routes_and_refusals, setup, teardown),
        cmocka_unit_test_setup_teardown(test_turn_events_and_records, setup, teardown),
        cmocka_unit_test_setup_teardown(test_resume_with_last_event_id, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_reader_is_fed_at_its_pace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_a_long_record_replayed_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(test_timeouts, setup, teardown),
        cmocka_unit_test_setup_teardown(test_connection_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_accept_failure_rests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slots_lru_and_busy, setup, teardown),
        cmocka_unit_test_setup_teardown(test_approval_through_the_api, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_final_event, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tcp_needs_the_token, setup, teardown),
        cmocka_unit_test_setup_teardown(test_send_deadline_and_pings, setup, teardown),
        cmocka_unit_test_setup_teardown(test_recovery_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_port_without_serving, setup, teardown),
        cmocka_unit_test_setup_teardown(test_token_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_torn_tail_never_streamed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_tcp_cannot_lock_out_the_socket, setup, teardown),
        cmocka_unit_test_setup_teardown(test_short_token_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_slow_follower_gets_the_approval, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_requests_all_answered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_then_half_close, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_ends_event_streams, setup, teardown),
        cmocka_unit_test_setup_teardown(test_http10_close_delimited, setup, teardown),
        cmocka_unit_test_setup_teardown(test_close_ends_our_side_at_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_ask_id_out_of_range, setup, teardown),
        cmocka_unit_test_setup_teardown(test_approval_during_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_codes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_exit_code_after_a_clean_drain, setup, teardown),
        cmocka_unit_test_setup_teardown(test_list_pages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_journals_read_in_steps, setup, teardown),
        cmocka_unit_test_setup_teardown(test_loaded_summary_kept_current, setup, teardown),
        cmocka_unit_test_setup_teardown(test_locked_elsewhere_is_said, setup, teardown),
        cmocka_unit_test_setup_teardown(test_body_buffer_held_while_handled, setup, teardown),
        cmocka_unit_test(test_policy_parse),
    };

    return cmocka_run_group_tests_name("serve", tests, NULL, NULL);
}
