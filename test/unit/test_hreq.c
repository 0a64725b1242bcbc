/* test_hreq.c - the HTTP/1.1 request parser (mote_hreq.h): what it takes,
 * what it refuses with which status, and that splitting never matters. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote_hreq.h"

static struct mote_hreq r;

/* Feeds `s` in one piece; returns the state and *used. */
static int feed(const char *s, size_t *used)
{
    size_t u = 0;

    mote_hreq_reset(&r);
    int rc = mote_hreq_feed(&r, s, strlen(s), &u);
    if (used != NULL)
        *used = u;
    return rc;
}

static void test_a_plain_get(void **state)
{
    size_t used;

    (void)state;
    assert_int_equal(feed("GET /v1/health HTTP/1.1\r\nHost: x\r\n\r\n", &used), MOTE_HREQ_DONE);
    assert_int_equal(used, 36);
    assert_int_equal(r.method, MOTE_HM_GET);
    assert_string_equal(r.path, "/v1/health");
    assert_string_equal(r.query, "");
    assert_string_equal(r.host, "x");
    assert_int_equal(r.minor, 1);
    assert_true(r.keep_alive);
    assert_false(r.has_length);
}

static void test_body_and_pipelined_bytes_are_left(void **state)
{
    const char *s = "POST /v1/conversations/a/messages?x=1&y=a%20b+c&n=ab%00c HTTP/1.1\r\n"
                    "host: h\r\ncontent-length: 5\r\nCONNECTION: close\r\n"
                    "Authorization: Bearer abc \r\n\r\nhelloGET / HTTP/1.1\r\n";
    char q[32];
    size_t used;

    (void)state;
    assert_int_equal(feed(s, &used), MOTE_HREQ_DONE);
    assert_memory_equal(s + used, "hello", 5); /* the body is the caller's */
    assert_int_equal(r.method, MOTE_HM_POST);
    assert_string_equal(r.path, "/v1/conversations/a/messages");
    assert_true(r.has_length);
    assert_int_equal(r.content_length, 5);
    assert_false(r.keep_alive);
    assert_string_equal(r.authorization, "Bearer abc"); /* trailing blanks trimmed */
    assert_int_equal(mote_hreq_query(&r, "y", q, sizeof(q)), 5);
    assert_string_equal(q, "a b c");
    assert_int_equal(mote_hreq_query(&r, "x", q, sizeof(q)), 1);
    assert_int_equal(mote_hreq_query(&r, "z", q, sizeof(q)), -1);
    assert_int_equal(mote_hreq_query(&r, "y", q, 3), -1); /* too long for the buffer */
    assert_int_equal(mote_hreq_query(&r, "n", q, sizeof(q)), -1); /* %00 would cut it */
}

static void test_http10_and_lf_only(void **state)
{
    (void)state;
    assert_int_equal(feed("\r\n\nGET /a HTTP/1.0\nX-A: b\n\n", NULL), MOTE_HREQ_DONE);
    assert_int_equal(r.minor, 0);
    assert_false(r.keep_alive); /* 1.0 closes unless asked */
    assert_null(r.host);        /* not needed in 1.0 */
    assert_int_equal(feed("GET /a HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", NULL),
                     MOTE_HREQ_DONE);
    assert_true(r.keep_alive);
    assert_int_equal(feed("GET /a HTTP/1.1\r\nHost: h\r\nConnection: upgrade, close\r\n\r\n", NULL),
                     MOTE_HREQ_DONE);
    assert_false(r.keep_alive);
}

struct bad {
    const char *req;
    unsigned status;
};

static void test_refusals_say_which_status(void **state)
{
    static const struct bad cases[] = {
        {"GET /a HTTP/1.1\r\n\r\n", 400},                                   /* no Host */
        {"GET  /a HTTP/1.1\r\nHost: h\r\n\r\n", 400},                       /* two spaces */
        {"GET a HTTP/1.1\r\nHost: h\r\n\r\n", 400},                         /* not a path */
        {"GET http://x/a HTTP/1.1\r\nHost: h\r\n\r\n", 400},                /* absolute form */
        {"GET /a\x01 HTTP/1.1\r\nHost: h\r\n\r\n", 400},                    /* control byte */
        {"GET /a HTTP/2.0\r\nHost: h\r\n\r\n", 505},
        {"GET /a HTTP/1.2\r\nHost: h\r\n\r\n", 505},
        {"GET /a HTTX/1.1\r\nHost: h\r\n\r\n", 400},
        {"G(T /a HTTP/1.1\r\nHost: h\r\n\r\n", 400},                        /* not a token */
        {"GET /a HTTP/1.1\r\nHost : h\r\n\r\n", 400},                       /* space before : */
        {"GET /a HTTP/1.1\r\nHost: h\r\n folded\r\n\r\n", 400},             /* obs-fold */
        {"GET /a HTTP/1.1\r\nHost: h\r\nX: a\x7f\r\n\r\n", 400},            /* DEL in a value */
        {"GET /a HTTP/1.1\r\nHost: h\r\nX: a\rb\r\n\r\n", 400},             /* bare CR */
        {"GET /a HTTP/1.1\r\nHost: h\r\nHost: i\r\n\r\n", 400},             /* two Hosts */
        {"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n", 400},
        {"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5, 5\r\n\r\n", 400},
        {"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: -1\r\n\r\n", 400},
        {"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 99999999999999999999\r\n\r\n", 413},
        {"POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", 400},
        {"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", 501},
        {"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: gzip\r\n\r\n", 501},
        {"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked, gzip\r\n\r\n", 400},
        {"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: xchunked\r\n\r\n", 501},
        {"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
         400},
        {"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked;a=b\r\n\r\n", 400},
        {"POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding:\r\n\r\n", 400},
        {"POST /a HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n", 400},
        {"POST /a HTTP/1.1\r\nHost: h\r\nExpect: 200-ok\r\n\r\n", 417},
        {"GET /a HTTP/1.1\r\nHost: h\r\nAuthorization: a\r\nAuthorization: b\r\n\r\n", 400},
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int rc = feed(cases[i].req, NULL);

        if (rc != MOTE_HREQ_BAD || r.status != cases[i].status)
            fail_msg("case %zu (%s): rc %d status %u", i, cases[i].req, rc, r.status);
        assert_non_null(r.why);
        assert_null(strchr(r.why, '\n'));
    }
}

/* Gives the chunked body in[0..n) to the request in pieces of at most
 * `step` bytes, while it is still reading; sets *at to the bytes it took
 * and *got to those it made in out (cap bytes). Returns its last answer. */
static int body_in_steps(const char *in, size_t n, size_t step, char *out, size_t cap,
                         size_t *at, size_t *got)
{
    int rc = MOTE_HREQ_READING;
    size_t used, made;

    *at = *got = 0;
    while (rc == MOTE_HREQ_READING && *at < n) {
        rc = mote_hreq_body(&r, in + *at, step < n - *at ? step : n - *at, &used, out + *got,
                            cap - *got, &made);
        *at += used;
        *got += made;
    }
    return rc;
}

/* RFC 9112 6: a chunked body is taken (Transfer-Encoding's list, chunked
 * last and once); with Content-Length too the chunks frame it and the
 * connection closes after the answer; the body decoded whatever its
 * split, the bytes after it left for the next request. */
static void test_chunked_bodies(void **state)
{
    static const char head[] = "POST /a HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: , Chunked\r\n\r\n";
    static const char both[] = "POST /a HTTP/1.1\r\nHost: h\r\nContent-Length: 3\r\n"
                               "Transfer-Encoding: chunked\r\n\r\n";
    static const char body[] = "5;ext=\"x\"\r\nhello\r\nA\r\n, chunked!\r\n0\r\nX-T: 1\r\n\r\nGET ";
    static const char *const bad[] = {
        "zz\r\nhello\r\n0\r\n\r\n",  /* not hex */
        "5\r\nhelloX\r\n0\r\n\r\n",  /* no CRLF after the data */
        "\r\nhello\r\n0\r\n\r\n",     /* no size */
        "5\nhello\r\n0\r\n\r\n",      /* a bare LF */
        "-5\r\nhello\r\n0\r\n\r\n",
        "5\r\nhello\r\n0\r\nX-T 1\r\n\r\n", /* a trailer that is no field */
    };
    char out[64];
    size_t used, made, step, i;
    int rc;

    (void)state;
    assert_int_equal(feed(head, &used), MOTE_HREQ_DONE);
    assert_true(r.chunked);
    assert_false(r.has_length);
    assert_true(r.keep_alive);
    assert_int_equal(feed(both, &used), MOTE_HREQ_DONE);
    assert_true(r.chunked);
    assert_false(r.has_length);
    assert_false(r.keep_alive); /* both framings: closed after the answer */
    for (step = 1; step <= sizeof(body); step++) {
        size_t at, got;

        assert_int_equal(feed(head, &used), MOTE_HREQ_DONE);
        rc = body_in_steps(body, sizeof(body) - 1, step, out, sizeof(out), &at, &got);
        assert_int_equal(rc, MOTE_HREQ_DONE);
        assert_int_equal(got, 15);
        assert_memory_equal(out, "hello, chunked!", 15);
        assert_string_equal(body + at, "GET "); /* the next request's */
    }
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(feed(head, &used), MOTE_HREQ_DONE);
        rc = mote_hreq_body(&r, bad[i], strlen(bad[i]), &used, out, sizeof(out), &made);
        if (rc != MOTE_HREQ_BAD || r.status != 400)
            fail_msg("case %zu: rc %d status %u", i, rc, r.status);
    }
    /* a fault after some of the body: how far it got is the same however
     * the bytes came (the bytes made before it are said, at once or not) */
    for (step = 1; step <= 64; step *= 4) {
        static const char tail[] = "5;e=1\r\nhello\r\n0\r\n\025X-T: 1\r\n\r\n";
        size_t at, got;

        assert_int_equal(feed(head, &used), MOTE_HREQ_DONE);
        rc = body_in_steps(tail, sizeof(tail) - 1, step, out, sizeof(out), &at, &got);
        assert_int_equal(rc, MOTE_HREQ_BAD);
        assert_int_equal(r.status, 400);
        assert_int_equal(got, 5);
        assert_int_equal(at, 17); /* up to the control character */
    }
    /* larger than the room given: 413 */
    assert_int_equal(feed(head, &used), MOTE_HREQ_DONE);
    rc = mote_hreq_body(&r, "40\r\n", 4, &used, out, 8, &made);
    assert_int_equal(rc, MOTE_HREQ_BAD);
    assert_int_equal(r.status, 413);
    assert_int_equal(feed(head, &used), MOTE_HREQ_DONE);
    rc = mote_hreq_body(&r, "fffffffffffffffff\r\n", 19, &used, out, sizeof(out), &made);
    assert_int_equal(rc, MOTE_HREQ_BAD);
    assert_int_equal(r.status, 413);
}

static void test_nul_in_the_head_is_refused(void **state)
{
    static const char s[] = "GET /a HTTP/1.1\r\nHost: h\0x\r\n\r\n";
    size_t used = 0;

    (void)state;
    mote_hreq_reset(&r);
    assert_int_equal(mote_hreq_feed(&r, s, sizeof(s) - 1, &used), MOTE_HREQ_BAD);
    assert_int_equal(r.status, 400);
}

static void test_sizes(void **state)
{
    static char big[MOTE_SERVE_HEAD_MAX + 64];
    size_t used;

    (void)state;
    /* a request line longer than the head: 414 */
    memset(big, 'a', sizeof(big) - 1);
    memcpy(big, "GET /", 5);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(feed(big, &used), MOTE_HREQ_BAD);
    assert_int_equal(r.status, 414);
    assert_int_equal(used, MOTE_SERVE_HEAD_MAX); /* it stopped there */
    /* headers over the head: 431 */
    strcpy(big, "GET / HTTP/1.1\r\nHost: h\r\nX: ");
    memset(big + strlen(big), 'b', sizeof(big) - 1 - strlen(big));
    assert_int_equal(feed(big, NULL), MOTE_HREQ_BAD);
    assert_int_equal(r.status, 431);
    /* exactly at the limit: taken */
    memset(big, 0, sizeof(big));
    strcpy(big, "GET / HTTP/1.1\r\nHost: h\r\nX: ");
    memset(big + strlen(big), 'c', MOTE_SERVE_HEAD_MAX - strlen(big) - 4);
    strcat(big, "\r\n\r\n");
    assert_int_equal(strlen(big), MOTE_SERVE_HEAD_MAX);
    assert_int_equal(feed(big, NULL), MOTE_HREQ_DONE);
}

/* The same outcome for every split: byte by byte, and each cut point. */
static void outcome(const char *s, size_t n, size_t cut, char *out, size_t cap)
{
    size_t used = 0, off = 0, u;
    int rc = MOTE_HREQ_READING;

    mote_hreq_reset(&r);
    if (cut == 0) {
        while (off < n && rc == MOTE_HREQ_READING) {
            rc = mote_hreq_feed(&r, s + off, 1, &u);
            off += u;
        }
    } else {
        rc = mote_hreq_feed(&r, s, cut < n ? cut : n, &u);
        off = u;
        if (rc == MOTE_HREQ_READING && cut < n) {
            rc = mote_hreq_feed(&r, s + off, n - off, &u);
            off += u;
        }
    }
    used = off;
    if (rc == MOTE_HREQ_DONE)
        snprintf(out, cap, "done %zu %d %s?%s %d %llu %d %s %s %s", used, r.method, r.path,
                 r.query, r.minor, (unsigned long long)r.content_length, r.keep_alive,
                 r.host != NULL ? r.host : "-", r.authorization ? r.authorization : "-",
                 r.last_event_id ? r.last_event_id : "-");
    else
        snprintf(out, cap, "%d %u", rc, r.status);
}

static void test_split_anywhere(void **state)
{
    static const char *const reqs[] = {
        "POST /v1/conversations/x/messages?a=1 HTTP/1.1\r\nHost: h\r\nContent-Length: 12\r\n"
        "Last-Event-ID: 1234\r\nAuthorization: Bearer t\r\n\r\n{\"text\":\"x\"}",
        "\r\nGET /v1/health HTTP/1.0\n\nrest",
        "GET /v1/health HTTP/1.1\r\nHost: h\r\nX: a\r\rb\r\n\r\n",
        "GET /v1/health HTTP/1.1\r\nHost: h\r\n",
    };
    size_t i, cut;
    char want[512], got[512];

    (void)state;
    for (i = 0; i < sizeof(reqs) / sizeof(reqs[0]); i++) {
        size_t n = strlen(reqs[i]);

        outcome(reqs[i], n, n, want, sizeof(want));
        for (cut = 0; cut < n; cut++) {
            outcome(reqs[i], n, cut, got, sizeof(got));
            if (strcmp(want, got) != 0)
                fail_msg("request %zu cut at %zu: %s vs %s", i, cut, got, want);
        }
    }
}

static void test_reset_between_requests(void **state)
{
    size_t used;

    (void)state;
    assert_int_equal(feed("GET /a HTTP/1.1\r\nHost: h\r\nLast-Event-ID: 7\r\n\r\n", &used),
                     MOTE_HREQ_DONE);
    assert_string_equal(r.last_event_id, "7");
    /* after DONE nothing more is taken */
    assert_int_equal(mote_hreq_feed(&r, "xyz", 3, &used), MOTE_HREQ_DONE);
    assert_int_equal(used, 0);
    assert_int_equal(feed("GET /b HTTP/1.1\r\nHost: h\r\n\r\n", &used), MOTE_HREQ_DONE);
    assert_null(r.last_event_id);
    assert_string_equal(r.path, "/b");
    assert_string_equal(mote_hreq_method_name(MOTE_HM_DELETE), "DELETE");
}

/* A browser's Origin (once) and whether gzip is taken (Accept-Encoding,
 * a coding named beats "*", q=0 refuses). */
static void test_origin_and_accept_encoding(void **state)
{
    static const struct {
        const char *fields;
        unsigned gzip;
    } ae[] = {
        {"", 0},
        {"Accept-Encoding: gzip, deflate, br\r\n", 1},
        {"Accept-Encoding: br;q=1.0, GZIP;q=0.5\r\n", 1},
        {"Accept-Encoding: identity\r\n", 0},
        {"Accept-Encoding: *\r\n", 3},
        {"Accept-Encoding: gzip;q=0\r\n", 2},
        {"Accept-Encoding: gzip; q=0.000, *\r\n", 2},
        {"Accept-Encoding: *;q=0\r\n", 0},
        {"Accept-Encoding: gzip ; q=0.001\r\n", 1},
        {"Accept-Encoding: x-gzip\r\n", 1},
        {"Accept-Encoding: gzipper, gzi\r\n", 0},
        {"Accept-Encoding: deflate\r\nAccept-Encoding: gzip\r\n", 1},
    };
    char head[256];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(ae) / sizeof(ae[0]); i++) {
        snprintf(head, sizeof(head), "GET / HTTP/1.1\r\nHost: h\r\n%s\r\n", ae[i].fields);
        assert_int_equal(feed(head, NULL), MOTE_HREQ_DONE);
        if (r.accept_gzip != ae[i].gzip)
            fail_msg("%s: %u, not %u", ae[i].fields, r.accept_gzip, ae[i].gzip);
    }
    assert_int_equal(feed("GET / HTTP/1.1\r\nHost: h:1\r\nOrigin: http://h:1\r\n\r\n", NULL),
                     MOTE_HREQ_DONE);
    assert_string_equal(r.origin, "http://h:1");
    assert_int_equal(feed("GET / HTTP/1.1\r\nHost: h\r\n\r\n", NULL), MOTE_HREQ_DONE);
    assert_null(r.origin);
    /* two Origins: which one would a check read? refused */
    assert_int_equal(feed("GET / HTTP/1.1\r\nHost: h\r\nOrigin: http://h\r\n"
                          "Origin: http://evil\r\n\r\n", NULL),
                     MOTE_HREQ_BAD);
    assert_int_equal(r.status, 400);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_plain_get),
        cmocka_unit_test(test_body_and_pipelined_bytes_are_left),
        cmocka_unit_test(test_http10_and_lf_only),
        cmocka_unit_test(test_refusals_say_which_status),
        cmocka_unit_test(test_chunked_bodies),
        cmocka_unit_test(test_nul_in_the_head_is_refused),
        cmocka_unit_test(test_sizes),
        cmocka_unit_test(test_split_anywhere),
        cmocka_unit_test(test_reset_between_requests),
        cmocka_unit_test(test_origin_and_accept_encoding),
    };

    return cmocka_run_group_tests_name("hreq", tests, NULL, NULL);
}
