/* test_http.c - the HTTP/1.1 response parser, request heads and URLs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"
#include "mote/mote_http.h"

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

struct out {
    char s[1024];
    size_t n;
};

static int to_out(void *arg, const char *p, size_t n)
{
    struct out *o = arg;

    memcpy(o->s + o->n, p, n);
    o->n += n;
    o->s[o->n] = '\0';
    return 0;
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
        cmocka_unit_test(test_malformed),        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_fixture_429_headers), cmocka_unit_test(test_request_head),
        cmocka_unit_test(test_urls),             cmocka_unit_test(test_proxy_urls),
        cmocka_unit_test(test_no_proxy),
    };

    return cmocka_run_group_tests_name("http", tests, NULL, NULL);
}
