/* test_client.c - the model client's retries and kept connections on the
 * test port's scripted sockets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote.h"
#include "mote/mote_client.h"
#include "mote_tport.h"
#include "../one_part.h"

static struct mote_tport tp;
static struct mote_tport_net tn;
static struct mote_loop loop;
static struct mote_llm_call call;
static struct mote_llm_conf conf;
static struct mote_llm_req req;

#define SSE_OK                                                                                   \
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ncontent-length: 125\r\n\r\n"         \
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\n" \
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
#define SSE_EVENTS                                                                               \
    "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\"}}\n\n" \
    "event: message_stop\ndata: {\"type\":\"message_stop\"}\n\n"
#define SSE_CHUNKED_HEAD                                                                         \
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n" \
    "7d\r\n" SSE_EVENTS "\r\n"
#define R429 "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 20\r\nContent-Length: 0\r\n\r\n"

/* Connections of the script whose sending fails (a broken pipe). */
static unsigned fail_send_mask;
static int (*tn_send)(void *ctx, int fd, const void *buf, size_t n);

static int failing_send(void *ctx, int fd, const void *buf, size_t n)
{
    unsigned i;

    for (i = 0; i < MOTE_TPORT_CONNS; i++) {
        if (tn.conns[i].used && tn.conns[i].fd == fd && tn.conns[i].index < 32 &&
            (fail_send_mask & (1u << tn.conns[i].index)))
            return MOTE_ERR_PIPE;
    }
    return tn_send(ctx, fd, buf, n);
}

static void setup_script(const struct mote_tport_resp *script, unsigned n, unsigned fail_mask)
{
    mote_tport_init(&tp, 0);
    mote_tport_net_init(&tp, &tn, script, n);
    tn_send = tp.port.net_send;
    tp.port.net_send = failing_send;
    fail_send_mask = fail_mask;
    assert_int_equal(mote_loop_init(&loop, &tp.port), 0);
    mote_llm_conf_defaults(&conf);
    conf.base_url = "http://model.test";
    conf.backoff_ms = 10;
    conf.backoff_max_ms = 30000;
    memset(&req, 0, sizeof(req));
    req.model = "m";
    req.parts = one_part;
}

/* Runs one call to its end; returns its state and the simulated time it
 * took, ms. */
static int run_call(uint32_t *took)
{
    uint32_t t0 = mote_loop_now(&loop);
    mote_job_id job;
    int turns = 0;

    assert_int_equal(mote_llm_call_init(&call, &conf, &req, NULL, NULL), 0);
    assert_int_equal(mote_job_spawn(&loop, "llm", &mote_llm_call_ops, &call, NULL, &job), 0);
    while (mote_job_state(&loop, job) == MOTE_JOB_RUNNING && turns++ < 100000)
        (void)mote_loop_poll(&loop, 100);
    *took = mote_loop_now(&loop) - t0;
    return mote_job_state(&loop, job);
}

static void resp(struct mote_tport_resp *r, const char *bytes)
{
    memset(r, 0, sizeof(*r));
    r->bytes = bytes;
    r->len = strlen(bytes);
}

/* A Retry-After is the response's that carries it: an attempt that
 * failed before its own response (the body could not be sent) waits its
 * own backoff, not the 20 s an earlier attempt's 429 asked for. */
static void test_retry_after_of_an_earlier_attempt(void **state)
{
    struct mote_tport_resp script[3];
    uint32_t took;

    (void)state;
    resp(&script[0], R429);
    resp(&script[1], ""); /* (its sending fails) */
    resp(&script[2], SSE_OK);
    setup_script(script, 3, 1u << 1);
    conf.max_attempts = 3;
    assert_int_equal(run_call(&took), MOTE_JOB_DONE);
    assert_int_equal(call.attempt, 3);
    /* 20 s after the 429, then about 20 ms: not 20 s twice */
    assert_true(took >= 20000);
    assert_true(took < 25000);
    mote_loop_deinit(&loop);
    mote_tport_deinit(&tp);
}

/* The same for a later request on the same call struct: the Retry-After
 * of the request before is not this one's. */
static void test_retry_after_of_an_earlier_request(void **state)
{
    struct mote_tport_resp script[3];
    uint32_t took;

    (void)state;
    resp(&script[0], R429);
    resp(&script[1], "");
    resp(&script[2], SSE_OK);
    setup_script(script, 3, 1u << 1);
    conf.max_attempts = 1;
    assert_int_equal(run_call(&took), MOTE_JOB_FAILED); /* the 429, not retried */
    conf.max_attempts = 2;
    assert_int_equal(run_call(&took), MOTE_JOB_DONE);
    assert_int_equal(call.attempt, 2);
    assert_true(took < 5000);
    mote_loop_deinit(&loop);
    mote_tport_deinit(&tp);
}

/* A response read to its exact end stays as an idle kept connection;
 * one whose last chunk never comes ends the call (its answer is whole)
 * after MOTE_LLM_TAIL_MS and costs the connection; bytes after the end,
 * or "connection: close", cost it too. */
static void test_kept_only_when_read_to_its_end(void **state)
{
    static const struct {
        const char *bytes;
        bool stall;
        bool kept;
    } cases[] = {
        {SSE_CHUNKED_HEAD "0\r\n\r\n", true, true},
        {SSE_OK, true, true},
        {SSE_CHUNKED_HEAD, true, false},                 /* the last chunk never comes */
        {SSE_CHUNKED_HEAD "0\r\n\r\nHTTP/1.1", true, false}, /* bytes after the end */
        {"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-type: text/event-stream\r\n"
         "content-length: 125\r\n\r\n" SSE_EVENTS, true, false},
        {"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n" SSE_EVENTS, false,
         false}, /* framed by the connection's end */
    };
    static struct mote_conn conn;
    struct mote_tport_resp script[1];
    uint32_t took;
    unsigned i;
    mote_job_id job;
    int turns = 0;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        resp(&script[0], cases[i].bytes);
        script[0].stall = cases[i].stall;
        setup_script(script, 1, 0);
        mote_conn_init(&conn);
        assert_int_equal(mote_llm_call_init(&call, &conf, &req, NULL, NULL), 0);
        call.conn = &conn;
        assert_int_equal(mote_job_spawn(&loop, "llm", &mote_llm_call_ops, &call, NULL, &job), 0);
        turns = 0;
        while (mote_job_state(&loop, job) == MOTE_JOB_RUNNING && turns++ < 100000)
            (void)mote_loop_poll(&loop, 100);
        took = mote_loop_now(&loop);
        assert_int_equal(mote_job_state(&loop, job), MOTE_JOB_DONE);
        assert_int_equal(conn.state, cases[i].kept ? MOTE_CONN_IDLE : MOTE_CONN_CLOSED);
        assert_int_equal(conn.opened, 1);
        if (i == 2)
            assert_true(took >= MOTE_LLM_TAIL_MS && took < MOTE_LLM_TAIL_MS + 500);
        else
            assert_true(took < 500);
        /* the request said nothing of closing: it may stay */
        assert_null(strstr(tn.requests[0], "connection: close"));
        mote_conn_close(&conn);
        assert_int_equal(conn.state, MOTE_CONN_CLOSED);
        mote_loop_deinit(&loop);
        mote_tport_deinit(&tp);
    }
}

/* Without a kept connection the request asks the server to close. */
static void test_own_connection_says_close(void **state)
{
    struct mote_tport_resp script[1];
    uint32_t took;

    (void)state;
    resp(&script[0], SSE_OK);
    setup_script(script, 1, 0);
    assert_int_equal(run_call(&took), MOTE_JOB_DONE);
    assert_non_null(strstr(tn.requests[0], "connection: close\r\n"));
    mote_loop_deinit(&loop);
    mote_tport_deinit(&tp);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_retry_after_of_an_earlier_attempt),
        cmocka_unit_test(test_retry_after_of_an_earlier_request),
        cmocka_unit_test(test_kept_only_when_read_to_its_end),
        cmocka_unit_test(test_own_connection_says_close),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
