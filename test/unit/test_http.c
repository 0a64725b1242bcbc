/* test_http.c - the HTTP/1.1 response parser, request heads and URLs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"
#include "mote/mote.h"
#include "mote/mote_client.h"
#include "mote/mote_http.h"
#include "mote_tport.h"
#include "text_out.h"

static struct mote_http_resp resp;
static char body[8192];
static size_t body_len;

static int on_body(void *arg, const char *p, size_t n)
{
    (void)arg;
    if (body_len + n > sizeof(body))
        return MOTE_ERR_TOO_LARGE;
    memcpy(body + body_len, p, n);
    body_len += n;
    return 0;
}

/* Parses `in` whole (step 0) or in pieces of `step` bytes. */
static int run(const char *in, size_t n, size_t step)
{
    size_t at = 0;

    body_len = 0;
    mote_http_resp_init(&resp, on_body, NULL);
    while (at < n) {
        size_t piece = step == 0 || step > n - at ? n - at : step;
        int rc = mote_http_resp_feed(&resp, in + at, piece);

        if (rc < 0)
            return rc;
        at += (size_t)rc;
        if (mote_http_resp_done(&resp))
            break;
    }
    return 0;
}

static void expect_body(const char *in, int status, const char *want)
{
    size_t step;

    for (step = 0; step <= 7; step++) {
        assert_int_equal(run(in, strlen(in), step), 0);
        assert_int_equal(resp.status, status);
        if (!mote_http_resp_done(&resp))
            assert_int_equal(mote_http_resp_eof(&resp), 0);
        assert_int_equal(body_len, strlen(want));
        assert_memory_equal(body, want, body_len);
    }
}

static void test_framings(void **state)
{
    (void)state;
    expect_body("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, "hello");
    expect_body("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                "5;ext=1\r\nhello\r\n1A\r\nabcdefghijklmnopqrstuvwxyz\r\n0\r\nX-T: 1\r\n\r\n",
                200, "helloabcdefghijklmnopqrstuvwxyz");
    expect_body("HTTP/1.0 200 OK\nContent-Type: text/event-stream\n\ndata: x\n\n", 200,
                "data: x\n\n");
    expect_body("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 204 No Content\r\n\r\n", 204, "");
    expect_body("HTTP/1.1 429 Too Many Requests\r\nretry-after: 16\r\ncontent-length: 2\r\n\r\n{}",
                429, "{}");
    assert_int_equal(resp.retry_after_s, 16);
    expect_body("HTTP/1.1 200\r\ncontent-length: 0\r\n\r\n", 200, "");
    assert_string_equal(resp.content_type, "");
}

/* Whether a response leaves its connection for the next request: read to
 * its exact end, HTTP/1.1 (or 1.0 with keep-alive), no "close". */
static void keeps(const char *in, bool want)
{
    size_t step;

    for (step = 0; step <= 5; step++) {
        assert_int_equal(run(in, strlen(in), step), 0);
        if (!mote_http_resp_done(&resp))
            (void)mote_http_resp_eof(&resp);
        assert_int_equal(mote_http_resp_reusable(&resp), want);
    }
}

static void test_keep_alive(void **state)
{
    (void)state;
    keeps("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", true);
    keeps("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n", true);
    keeps("HTTP/1.1 204 No Content\r\n\r\n", true);
    keeps("HTTP/1.1 100 Continue\r\nConnection: close\r\n\r\nHTTP/1.1 200 OK\r\n"
          "Content-Length: 0\r\n\r\n", true); /* (the interim response's headers are its own) */
    keeps("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 5\r\n\r\nhello", false);
    keeps("HTTP/1.1 200 OK\r\nconnection: Keep-Alive, CLOSE\r\nContent-Length: 0\r\n\r\n", false);
    keeps("HTTP/1.1 200 OK\r\nConnection: close, keep-alive\r\nContent-Length: 0\r\n\r\n", false);
    keeps("HTTP/1.1 200 OK\r\nConnection: upgrade,  close \r\nContent-Length: 0\r\n\r\n", false);
    keeps("HTTP/1.1 200 OK\r\nConnection: closed\r\nContent-Length: 0\r\n\r\n", true);
    keeps("HTTP/1.0 200 OK\r\nContent-Length: 5\r\n\r\nhello", false);
    keeps("HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 5\r\n\r\nhello", true);
    /* framed by the end of the connection: that end is the response's */
    keeps("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\ndata: x\n\n", false);
    /* not complete */
    keeps("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello", false);
    keeps("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n", false);
    /* bytes after the end are not taken: the caller sees them left over */
    assert_int_equal(run("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokHTTP/1.1", 48, 0), 0);
    assert_true(mote_http_resp_reusable(&resp));
    mote_http_resp_init(&resp, on_body, NULL);
    assert_int_equal(mote_http_resp_feed(&resp, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokXY",
                                         42),
                     40);
}

/* RFC 9112 6.1 and 6.3: Transfer-Encoding is a list whose last coding
 * must be chunked (the only one understood), once; with Content-Length
 * too the response is framed by its chunks and the connection closes
 * after it (a smuggling shape); Content-Length given twice, even with
 * the same value, or as a list, is refused. */
static void test_framing_rfc9112(void **state)
{
    static const char *const refused[] = {
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: xchunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: x-chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, chunked\r\n\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\nTransfer-Encoding: chunked\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: gzip\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked;x=1\r\n\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: \r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked gzip\r\n\r\n",
        "HTTP/1.0 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nContent-Length: 5, 5\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nContent-Length: +5\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nContent-Length: \r\n\r\n",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
        print_message("refused: %s\n", refused[i]);
        assert_int_equal(run(refused[i], strlen(refused[i]), 0), MOTE_ERR_PROTO);
    }
    /* a list with empty elements, any case, chunked last: chunked */
    expect_body("HTTP/1.1 200 OK\r\nTransfer-Encoding: , CHUNKED ,\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
                200, "hello");
    /* Content-Length and Transfer-Encoding: framed by the chunks, and the
     * connection is not kept */
    expect_body("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
                "5\r\nhello\r\n0\r\n\r\n",
                200, "hello");
    keeps("HTTP/1.1 200 OK\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n"
          "5\r\nhello\r\n0\r\n\r\n",
          false);
    keeps("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Length: 3\r\n\r\n"
          "5\r\nhello\r\n0\r\n\r\n",
          false);
}

static void test_cut_short(void **state)
{
    static const char *const cuts[] = {
        "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nhello",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhel",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n",
        "HTTP/1.1 200 OK\r\nContent-Le",
        "",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cuts) / sizeof(cuts[0]); i++) {
        assert_int_equal(run(cuts[i], strlen(cuts[i]), 3), 0);
        assert_int_equal(mote_http_resp_eof(&resp), MOTE_ERR_PROTO);
    }
}

static void test_malformed(void **state)
{
    static const char *const bad[] = {
        "HTTP/2 200 OK\r\n\r\n",
        "HTTP/1.1 2x0 OK\r\n\r\n",
        "SSH-2.0-OpenSSH\r\n\r\n",
        "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: -1\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabX\r\n",
        "HTTP/1.1 200 OK\r\n folded: header\r\n\r\n",
    };
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(run(bad[i], strlen(bad[i]), 0), MOTE_ERR_PROTO);
}

static void test_limits(void **state)
{
    static char big[MOTE_HTTP_HEADER_MAX + 512];
    size_t n = 0;

    (void)state;
    /* One line over MOTE_HTTP_LINE_MAX. */
    n = (size_t)snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nX-Long: ");
    memset(big + n, 'a', MOTE_HTTP_LINE_MAX);
    n += MOTE_HTTP_LINE_MAX;
    assert_int_equal(run(big, n, 0), MOTE_ERR_TOO_LARGE);
    /* Many short headers over MOTE_HTTP_HEADER_MAX. */
    n = (size_t)snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\n");
    while (n + 16 < sizeof(big))
        n += (size_t)snprintf(big + n, sizeof(big) - n, "X-A: 0123456\r\n");
    assert_int_equal(run(big, n, 100), MOTE_ERR_TOO_LARGE);
    /* Trailer fields count with the head: endless ones are refused. */
    n = (size_t)snprintf(big, sizeof(big), "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                                           "2\r\n{}\r\n0\r\n");
    while (n + 16 < sizeof(big))
        n += (size_t)snprintf(big + n, sizeof(big) - n, "X-T: 0123456\r\n");
    assert_int_equal(run(big, n, 100), MOTE_ERR_TOO_LARGE);
    /* A huge chunk size is refused, not wrapped. */
    assert_int_equal(run("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                         "ffffffffffffffffffff\r\n", 71, 0),
                     MOTE_ERR_TOO_LARGE);
}

static void test_fixture_429_headers(void **state)
{
    size_t n = 0;
    char *buf;

    (void)state;
    FIXTURE_OR_SKIP(buf, "anthropic-429-rate-limit.http", &n);
    assert_int_equal(run(buf, n, 5), 0);
    assert_int_equal(resp.status, 429);
    assert_int_equal(resp.retry_after_s, 16);
    assert_true(mote_http_resp_have_headers(&resp));
    free(buf);
}

static void test_request_head(void **state)
{
    const char *const hdrs[] = {"x-api-key: k", "content-type: application/json", NULL};
    const char *const evil[] = {"x: a\r\nInjected: 1", NULL};
    struct out o = {{0}, 0};

    (void)state;
    assert_int_equal(mote_http_write_head(to_out, &o, "POST", "api.example.com", 443, true,
                                          "/v1/messages", hdrs, 1234),
                     0);
    assert_string_equal(o.s, "POST /v1/messages HTTP/1.1\r\nHost: api.example.com\r\n"
                             "x-api-key: k\r\ncontent-type: application/json\r\n"
                             "Content-Length: 1234\r\n\r\n");
    o.n = 0;
    assert_int_equal(mote_http_write_head(to_out, &o, "GET", "::1", 8080, false, "", NULL, -1), 0);
    assert_string_equal(o.s, "GET / HTTP/1.1\r\nHost: [::1]:8080\r\n\r\n");
    assert_int_equal(mote_http_write_head(to_out, &o, "GET", "h", 80, true, "/", evil, -1),
                     MOTE_ERR_INVAL);
}

static void test_urls(void **state)
{
    struct mote_url u;

    (void)state;
    assert_int_equal(mote_url_parse(&u, "https://api.anthropic.com"), 0);
    assert_true(u.tls);
    assert_int_equal(u.port, 443);
    assert_true(u.default_port);
    assert_string_equal(u.host, "api.anthropic.com");
    assert_string_equal(u.path, "");
    assert_int_equal(mote_url_parse(&u, "http://127.0.0.1:11434/v1/"), 0);
    assert_false(u.tls);
    assert_int_equal(u.port, 11434);
    assert_string_equal(u.path, "/v1");
    assert_int_equal(mote_url_parse(&u, "http://[::1]:8080"), 0);
    assert_string_equal(u.host, "::1");
    assert_int_equal(u.port, 8080);
    assert_int_equal(mote_url_parse(&u, "ftp://x"), MOTE_ERR_INVAL);
    assert_int_equal(mote_url_parse(&u, "https://"), MOTE_ERR_INVAL);
    assert_int_equal(mote_url_parse(&u, "http://h:0"), MOTE_ERR_INVAL);
    assert_int_equal(mote_url_parse(&u, "http://h:99999"), MOTE_ERR_INVAL);
    assert_int_equal(mote_url_parse(&u, "http://user@h"), MOTE_ERR_INVAL);
    assert_int_equal(mote_url_parse(&u, "http://h/a b"), MOTE_ERR_INVAL);
    assert_int_equal(mote_url_parse(&u, "api.openai.com"), MOTE_ERR_INVAL);
}

static void test_proxy_urls(void **state)
{
    struct mote_url u;
    char auth[MOTE_PROXY_AUTH_MAX];
    char big[400];

    (void)state;
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "http://proxy.lan:3128"), 0);
    assert_string_equal(u.host, "proxy.lan");
    assert_int_equal(u.port, 3128);
    assert_string_equal(auth, "");
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "proxy.lan"), 0);
    assert_int_equal(u.port, 1080); /* curl's default */
    /* credentials percent-decoded; the last '@' ends them */
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "http://Aladdin:open%20sesame@10.0.0.1:8080/"), 0);
    assert_string_equal(auth, "Proxy-Authorization: Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
    assert_string_equal(u.host, "10.0.0.1");
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "http://u:p@ss@h:1"), 0);
    assert_string_equal(auth, "Proxy-Authorization: Basic dTpwQHNz");
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "http://user@[::1]:3128"), 0);
    assert_string_equal(u.host, "::1");
    assert_string_equal(auth, "Proxy-Authorization: Basic dXNlcjo=");
    /* refused */
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "https://p:443"), MOTE_ERR_NOTSUP);
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "socks5://p:1080"), MOTE_ERR_NOTSUP);
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "http://p:3128/path"), MOTE_ERR_INVAL);
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "http://u:%zz@p:1"), MOTE_ERR_INVAL);
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "http://u:%2@p:1"), MOTE_ERR_INVAL);
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "http://@p:1"), MOTE_ERR_INVAL);
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "http://p:99999"), MOTE_ERR_INVAL);
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), ""), MOTE_ERR_INVAL);
    memset(big, 'x', sizeof(big) - 1);
    memcpy(big, "http://", 7);
    big[300] = '@';
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), big), MOTE_ERR_TOO_LARGE);
    assert_string_equal(auth, "");
}

/* The scheme in any case, an empty
 * user with a password as curl takes it, and credentials over the limit
 * told apart from a bad URL, with the limit in the message. */
static void test_proxy_url_forms(void **state)
{
    struct mote_url u;
    char auth[MOTE_PROXY_AUTH_MAX], url[MOTE_PROXY_CRED_MAX + 64], why[240];
    size_t n;

    (void)state;
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "HTTP://proxy.lan:3128"), 0);
    assert_string_equal(u.host, "proxy.lan");
    assert_int_equal(u.port, 3128);
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "Http://u:p@proxy.lan:1"), 0);
    assert_string_equal(auth, "Proxy-Authorization: Basic dTpw");
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "HTTPS://p:443"), MOTE_ERR_NOTSUP);
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "SOCKS5://p:1080"), MOTE_ERR_NOTSUP);
    /* ":pw@": an empty user and a password, sent as ":pw" (curl does) */
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), "http://:pw@proxy.lan:1"), 0);
    assert_string_equal(auth, "Proxy-Authorization: Basic OnB3");
    assert_string_equal(u.host, "proxy.lan");
    /* user:password of exactly MOTE_PROXY_CRED_MAX bytes fits; one more
     * does not, and says so */
    memcpy(url, "http://u:", 9);
    n = 9 + MOTE_PROXY_CRED_MAX - 2;
    memset(url + 9, 'p', n - 9);
    memcpy(url + n, "@h:1", 5);
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), url), 0);
    assert_string_equal(u.host, "h");
    assert_true(strlen(auth) > (size_t)MOTE_PROXY_CRED_MAX);
    memmove(url + n + 1, url + n, 5);
    url[n] = 'p';
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), url), MOTE_ERR_TOO_LARGE);
    mote_proxy_error(MOTE_ERR_TOO_LARGE, why, sizeof(why));
    assert_non_null(strstr(why, "too long"));
    assert_non_null(strstr(why, "at most 256 bytes"));
    assert_null(strstr(why, "bad proxy URL"));
    /* a host name over the limit is not called "credentials too long" */
    memset(url, 'h', sizeof(url) - 1);
    memcpy(url, "http://", 7);
    url[sizeof(url) - 1] = '\0';
    assert_int_equal(mote_proxy_parse(&u, auth, sizeof(auth), url), MOTE_ERR_NAMETOOLONG);
    mote_proxy_error(MOTE_ERR_INVAL, why, sizeof(why));
    assert_non_null(strstr(why, "bad proxy URL"));
    mote_proxy_error(MOTE_ERR_NOTSUP, why, sizeof(why));
    assert_non_null(strstr(why, "only an http:// proxy"));
}

/* ---- CONNECT through the test port's scripted sockets ---- */

static int tls_result; /* what the fake handshake says */

static int fake_tls_open(void *ctx, int fd, const char *host, const char *ca, char *err,
                         size_t cap)
{
    (void)ctx, (void)fd, (void)host, (void)ca, (void)err, (void)cap;
    return 0;
}

static int fake_tls_handshake(void *ctx, int h, unsigned *want, char *err, size_t cap)
{
    (void)ctx, (void)h, (void)want;
    strncpy(err, "the server closed the connection during the TLS handshake", cap - 1);
    err[cap - 1] = '\0';
    return tls_result;
}

static int fake_tls_io(void *ctx, int h, void *buf, size_t n, unsigned *want)
{
    (void)ctx, (void)h, (void)buf, (void)n, (void)want;
    return MOTE_ERR_PIPE;
}

static int fake_tls_send(void *ctx, int h, const void *buf, size_t n, unsigned *want)
{
    (void)ctx, (void)h, (void)buf, (void)n, (void)want;
    return MOTE_ERR_PIPE;
}

static int fake_tls_pending(void *ctx, int h)
{
    (void)ctx, (void)h;
    return 0;
}

static void fake_tls_close(void *ctx, int h)
{
    (void)ctx, (void)h;
}

/* One https call through proxy.test:3128 whose CONNECT is answered with
 * `answer`; the job's error (it always fails: the fake TLS does). */
static const char *through(const char *answer, size_t len, int handshake,
                           struct mote_tport_net *tn)
{
    static struct mote_tport tp;
    static struct mote_loop loop;
    static struct mote_llm_call call;
    static struct mote_llm_conf conf;
    static struct mote_llm_req req;
    static char err[MOTE_JOB_ERRMSG_LEN];
    struct mote_tport_resp r;
    mote_job_id job;
    int turns = 0;

    memset(&r, 0, sizeof(r));
    r.bytes = answer;
    r.len = len;
    r.stall = true; /* the tunnel stays open: only its head is judged */
    mote_tport_init(&tp, 0);
    mote_tport_net_init(&tp, tn, &r, 1);
    tp.port.tls_open = fake_tls_open;
    tp.port.tls_handshake = fake_tls_handshake;
    tp.port.tls_send = fake_tls_send;
    tp.port.tls_recv = fake_tls_io;
    tp.port.tls_pending = fake_tls_pending;
    tp.port.tls_close = fake_tls_close;
    tls_result = handshake;
    assert_int_equal(mote_loop_init(&loop, &tp.port), 0);
    mote_llm_conf_defaults(&conf);
    conf.base_url = "https://model.test";
    conf.proxy = "http://proxy.test:3128";
    conf.max_attempts = 1;
    conf.connect_timeout_ms = 2000;
    memset(&req, 0, sizeof(req));
    req.model = "m";
    assert_int_equal(mote_llm_call_init(&call, &conf, &req, NULL, NULL), 0);
    assert_int_equal(mote_job_spawn(&loop, "llm", &mote_llm_call_ops, &call, NULL, &job), 0);
    while (mote_job_state(&loop, job) == MOTE_JOB_RUNNING && turns++ < 1000) {
        (void)mote_loop_poll(&loop, 10); /* (the test clock moves on in waits) */
    }
    assert_int_equal(mote_job_state(&loop, job), MOTE_JOB_FAILED);
    strncpy(err, mote_job_error(&loop, job), sizeof(err) - 1);
    mote_loop_deinit(&loop);
    mote_tport_deinit(&tp);
    assert_ptr_equal(strstr(tn->requests[0], "CONNECT model.test:443 HTTP/1.1\r\n"), tn->requests[0]);
    return err;
}

#define A(lit) lit, sizeof(lit) - 1

/* A proxy answering CONNECT with
 * bare LF line ends is understood at once (as curl does), not waited on
 * until the connect timeout; a NUL in the head is refused; a tunnel the
 * proxy closes during the TLS handshake names the proxy. */
static void test_connect_answers(void **state)
{
    static struct mote_tport_net tn;
    const char *e;

    (void)state;
    /* the tunnel is up: the handshake is reached (and fails as scripted) */
    e = through(A("HTTP/1.1 200 Connection established\r\n\r\n"), MOTE_ERR_TLS, &tn);
    assert_non_null(strstr(e, "during the TLS handshake"));
    e = through(A("HTTP/1.1 200 Connection established\n\n"), MOTE_ERR_TLS, &tn);
    assert_non_null(strstr(e, "during the TLS handshake"));
    assert_null(strstr(e, "within"));
    e = through(A("HTTP/1.0 200 OK\nProxy-agent: x\r\n\n"), MOTE_ERR_TLS, &tn);
    assert_non_null(strstr(e, "during the TLS handshake"));
    /* the proxy is named when the handshake through its tunnel fails */
    e = through(A("HTTP/1.1 200 Connection established\r\n\r\n"), MOTE_ERR_CONNRESET, &tn);
    assert_non_null(strstr(e, "through the proxy proxy.test:3128"));
    /* a NUL byte in the head: refused at once, not waited on */
    e = through(A("HTTP/1.1 200 OK\r\nX: a\0b\r\n\r\n"), MOTE_ERR_TLS, &tn);
    assert_non_null(strstr(e, "NUL byte"));
}

static void test_no_proxy(void **state)
{
    (void)state;
    /* loopback never goes through a proxy */
    assert_true(mote_proxy_bypass(NULL, "localhost", 80));
    assert_true(mote_proxy_bypass(NULL, "api.localhost", 80));
    assert_true(mote_proxy_bypass(NULL, "127.0.0.1", 80));
    assert_true(mote_proxy_bypass(NULL, "127.9.9.9", 80));
    assert_true(mote_proxy_bypass(NULL, "::1", 80));
    assert_false(mote_proxy_bypass(NULL, "api.anthropic.com", 443));
    assert_false(mote_proxy_bypass("", "api.anthropic.com", 443));
    /* names: themselves and their subdomains, at a label boundary */
    assert_true(mote_proxy_bypass("example.com", "example.com", 443));
    assert_true(mote_proxy_bypass("example.com", "API.Example.COM", 443));
    assert_true(mote_proxy_bypass(".example.com", "a.example.com", 443));
    assert_true(mote_proxy_bypass(".example.com", "example.com", 443));
    assert_false(mote_proxy_bypass("example.com", "badexample.com", 443));
    assert_false(mote_proxy_bypass("a.example.com", "example.com", 443));
    /* lists, spaces, "*" */
    assert_true(mote_proxy_bypass("foo, bar.org ,example.com", "x.example.com", 443));
    assert_false(mote_proxy_bypass("foo,,bar", "baz", 443));
    assert_true(mote_proxy_bypass("*", "anything", 1));
    assert_false(mote_proxy_bypass("*.example.com", "a.example.com", 443)); /* not a glob */
    /* ports */
    assert_true(mote_proxy_bypass("example.com:8443", "example.com", 8443));
    assert_false(mote_proxy_bypass("example.com:8443", "example.com", 443));
    assert_true(mote_proxy_bypass("[2001:db8::1]:443", "2001:db8::1", 443));
    assert_false(mote_proxy_bypass("[2001:db8::1]:443", "2001:db8::1", 80));
    assert_true(mote_proxy_bypass("2001:db8::1", "2001:db8::1", 80));
    /* addresses and IPv4 CIDR */
    assert_true(mote_proxy_bypass("10.1.2.3", "10.1.2.3", 80));
    assert_false(mote_proxy_bypass("10.1.2.3", "10.1.2.4", 80));
    assert_true(mote_proxy_bypass("10.0.0.0/8", "10.200.1.1", 80));
    assert_false(mote_proxy_bypass("10.0.0.0/8", "11.0.0.1", 80));
    assert_true(mote_proxy_bypass("192.168.1.0/24", "192.168.1.77", 80));
    assert_false(mote_proxy_bypass("192.168.1.0/24", "192.168.2.77", 80));
    assert_false(mote_proxy_bypass("10.0.0.0/33", "10.0.0.1", 80));
    assert_false(mote_proxy_bypass("10.0.0.0/8", "example.com", 80));
    assert_false(mote_proxy_bypass("256.0.0.0/8", "0.0.0.1", 80));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_framings),         cmocka_unit_test(test_cut_short),
        cmocka_unit_test(test_framing_rfc9112),
        cmocka_unit_test(test_malformed),        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_fixture_429_headers), cmocka_unit_test(test_request_head),
        cmocka_unit_test(test_urls),             cmocka_unit_test(test_proxy_urls),
        cmocka_unit_test(test_no_proxy),         cmocka_unit_test(test_proxy_url_forms),
        cmocka_unit_test(test_connect_answers),  cmocka_unit_test(test_keep_alive),
    };

    return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
