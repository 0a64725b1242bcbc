/* test_json.c - JSON getters, unescaping, UTF-8 policy, and the writer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "fixtures.h"
#include "mote/mote_json.h"
#include "text_out.h"

static struct mote_json js;

static int parse(const char *s)
{
    return mote_json_parse(&js, s, strlen(s));
}

static void test_getters(void **state)
{
    const char *doc = "{\"type\":\"content_block_delta\",\"index\":2,\"delta\":{\"type\":"
                      "\"text_delta\",\"text\":\"Hi\\n\\\"there\\\"\"},\"ok\":true,\"no\":false,"
                      "\"nil\":null,\"arr\":[1,{\"x\":[\"a\",\"b\"]},-42]}";
    char buf[64];
    int64_t v;
    bool b;
    int t;

    (void)state;
    assert_true(parse(doc) > 0);
    assert_true(mote_json_eq(&js, mote_json_member(&js, 0, "type"), "content_block_delta"));
    assert_int_equal(mote_json_int(&js, mote_json_member(&js, 0, "index"), &v), 0);
    assert_int_equal(v, 2);
    t = mote_json_path(&js, 0, "delta.text");
    assert_int_equal(mote_json_str(&js, t, buf, sizeof(buf)), 10);
    assert_string_equal(buf, "Hi\n\"there\"");
    assert_int_equal(mote_json_bool(&js, mote_json_member(&js, 0, "ok"), &b), 0);
    assert_true(b);
    assert_int_equal(mote_json_bool(&js, mote_json_member(&js, 0, "no"), &b), 0);
    assert_false(b);
    assert_true(mote_json_is_null(&js, mote_json_member(&js, 0, "nil")));
    assert_true(mote_json_is_null(&js, mote_json_member(&js, 0, "missing")));
    assert_true(mote_json_eq(&js, mote_json_path(&js, 0, "arr.1.x.1"), "b"));
    assert_int_equal(mote_json_int(&js, mote_json_path(&js, 0, "arr.2"), &v), 0);
    assert_int_equal(v, -42);
    assert_int_equal(mote_json_path(&js, 0, "arr.3"), -1);
    assert_int_equal(mote_json_path(&js, 0, "delta.text.more"), -1);
    /* Wrong types. */
    assert_int_equal(mote_json_int(&js, mote_json_member(&js, 0, "type"), &v), MOTE_ERR_INVAL);
    assert_int_equal(mote_json_str(&js, mote_json_member(&js, 0, "index"), buf, 8),
                     MOTE_ERR_INVAL);
    /* Too small a buffer is an error, not a silent cut. */
    assert_int_equal(mote_json_str(&js, t, buf, 5), MOTE_ERR_TOO_LARGE);
}

static void test_unicode(void **state)
{
    char buf[64];

    (void)state;
    /* \u escapes, a surrogate pair, lone surrogates, raw invalid UTF-8. */
    assert_true(parse("[\"\\u00e9\\u4e2d\\ud83d\\ude00\"]") > 0);
    assert_int_equal(mote_json_str(&js, 1, buf, sizeof(buf)), 2 + 3 + 4);
    assert_string_equal(buf, "\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80");
    assert_true(parse("[\"a\\ud800b\\udc00c\"]") > 0);
    assert_int_equal(mote_json_str(&js, 1, buf, sizeof(buf)), 9);
    assert_string_equal(buf, "a\xef\xbf\xbd" "b\xef\xbf\xbd" "c");
    assert_int_equal(mote_json_unescape("x\xff\xc3y\xe2\x82", 6, buf, sizeof(buf)), 1 + 3 + 3 + 1 + 3 + 3);
    assert_string_equal(buf, "x\xef\xbf\xbd\xef\xbf\xbdy\xef\xbf\xbd\xef\xbf\xbd");
    /* Overlong and surrogate encodings are invalid too. */
    assert_int_equal(mote_json_unescape("\xc0\xaf", 2, buf, sizeof(buf)), 6);
    assert_int_equal(mote_json_unescape("\xed\xa0\x80", 3, buf, sizeof(buf)), 9);
}

/* Strict inputs: a duplicate key (compared unescaped, at any depth) and a
 * NUL in a string that would become a C string are refused, each with a
 * reason naming the member. */
static void test_strict(void **state)
{
    static const char *const dup[] = {
        "{\"command\":\"echo A\",\"command\":\"echo B\"}",
        "{\"a\":1,\"b\":2,\"\\u0061\":3}",
        "{\"x\":[{\"k\":1,\"j\":{},\"k\":2}]}",
        "{\"a\xe5\":1,\"a\x9a\":2}", /* invalid bytes: U+FFFD each, to any reader */
        "{\"\\ud83d\\ude00\":1,\"\xf0\x9f\x98\x80\":2}",
    };
    char err[80], buf[32];
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(dup) / sizeof(dup[0]); i++) {
        assert_true(parse(dup[i]) > 0);
        assert_int_equal(mote_json_strict(&js, 0, MOTE_JSON_NO_DUP_KEYS, err, sizeof(err)),
                         MOTE_ERR_BADMSG);
        assert_non_null(strstr(err, "duplicate key \""));
        assert_int_equal(mote_json_parse_object(&js, dup[i], strlen(dup[i]), err, sizeof(err)),
                         MOTE_ERR_BADMSG);
    }
    assert_string_equal(err, "duplicate key \"\xf0\x9f\x98\x80\"");
    assert_true(parse(dup[0]) > 0);
    assert_int_equal(mote_json_strict(&js, 0, MOTE_JSON_NO_DUP_KEYS, err, sizeof(err)),
                     MOTE_ERR_BADMSG);
    assert_string_equal(err, "duplicate key \"command\"");
    /* keys that differ only in bytes that are not UTF-8 are one key as the
     * writer re-emits them (each such byte is U+FFFD) */
    assert_true(parse("{\"a\xa0\":1,\"a\xa1\":2}") > 0);
    assert_int_equal(mote_json_strict(&js, 0, MOTE_JSON_NO_DUP_KEYS, err, sizeof(err)),
                     MOTE_ERR_BADMSG);
    /* the same names in different objects, and near names, are fine */
    assert_true(parse("{\"a\":{\"a\":1},\"b\":[{\"a\":1},{\"a\":2}],\"ab\":0,\"\\\\a\":1}") > 0);
    assert_int_equal(mote_json_strict(&js, 0, MOTE_JSON_NO_DUP_KEYS | MOTE_JSON_NO_NUL, err,
                                      sizeof(err)), 0);
    assert_string_equal(err, "");
    /* a NUL: in a value, in a key, in an array; an escaped backslash
     * before "u0000" is no NUL */
    assert_true(parse("{\"command\":\"echo A\\u0000; echo B\"}") > 0);
    assert_int_equal(mote_json_strict(&js, 0, MOTE_JSON_NO_DUP_KEYS, err, sizeof(err)), 0);
    assert_int_equal(mote_json_strict(&js, 0, MOTE_JSON_NO_NUL, err, sizeof(err)), MOTE_ERR_BADMSG);
    assert_string_equal(err, "a NUL (\\u0000) in member \"command\"");
    assert_int_equal(mote_json_cstr(&js, 2, buf, sizeof(buf)), MOTE_ERR_BADMSG);
    assert_string_equal(buf, "");
    assert_int_equal(mote_json_str(&js, 2, buf, sizeof(buf)), 15); /* content, with its length */
    assert_true(parse("{\"a\\u0000b\":1}") > 0);
    assert_int_equal(mote_json_strict(&js, 0, MOTE_JSON_NO_NUL, err, sizeof(err)), MOTE_ERR_BADMSG);
    assert_string_equal(err, "a NUL (\\u0000) in member \"a\"");
    assert_true(parse("[\"x\",\"\\u0000\"]") > 0);
    assert_int_equal(mote_json_strict(&js, 0, MOTE_JSON_NO_NUL, err, sizeof(err)), MOTE_ERR_BADMSG);
    assert_string_equal(err, "a string holds a NUL (\\u0000)");
    assert_true(parse("[\"\\\\u0000\"]") > 0);
    assert_int_equal(mote_json_strict(&js, 0, MOTE_JSON_NO_NUL, err, sizeof(err)), 0);
    assert_int_equal(mote_json_cstr(&js, 1, buf, sizeof(buf)), 6);
    assert_string_equal(buf, "\\u0000");
    /* a reason never carries a control byte or a quote of the name */
    assert_true(parse("{\"\\u001b[2J\\\"\":1,\"\\u001b[2J\\\"\":2}") > 0);
    assert_int_equal(mote_json_strict(&js, 0, MOTE_JSON_NO_DUP_KEYS, err, sizeof(err)),
                     MOTE_ERR_BADMSG);
    assert_string_equal(err, "duplicate key \"?[2J?\"");
}

static void test_bad_documents(void **state)
{
    static const char *const bad[] = {"", "{", "{\"a\":}", "[1,]", "{\"a\" 1}", "tru",
                                      "{\"a\":1} x", "\"unterminated", "[1] [2]", "{a:1}",
                                      "[,1]", "[1,,2]", "{,\"a\":1}", "{\"a\":1,}",
                                      /* before the value (found by fuzz_body) */
                                      ":{}", ",{}", ": {\"a\":1}", ":[1]", ",\"s\"", ", 1",
                                      "{\"a\"::1}", "[1:2]", "[01]", "[1.]", "[-]", "[1e]", "[nul]", "{\"a\":1 \"b\":2}"};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(mote_json_parse(&js, bad[i], strlen(bad[i])), MOTE_ERR_BADMSG);
    assert_true(parse(" {\"a\":1}\n") > 0);
    assert_true(parse("[0,-1.5e+3,2E-2,true,false,null]") > 0);
    assert_true(parse("{\"a\": [ 1 , {\"b\" : \"\"} ] , \"c\":[]}") > 0);
}

/* RFC 8259 - a raw control character inside a string (a
 * literal newline, tab or ESC, as local models send in multi-line file
 * content) makes the text invalid, in a value and in a key; escaped ones
 * are fine. */
static void test_raw_control_characters_refused(void **state)
{
    static const char *const bad[] = {"{\"a\":\"x\ny\"}", "{\"a\":\"x\ty\"}",
                                      "[\"\x1b[31m\"]", "{\"k\ney\":1}", "\"\x01\"",
                                      "{\"content\":\"line 1\r\nline 2\"}"};
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(mote_json_parse(&js, bad[i], strlen(bad[i])), MOTE_ERR_BADMSG);
    assert_true(parse("{\"a\":\"x\\ny\\t\\u001b\"}") > 0);
    /* Whitespace between tokens is not inside a string. */
    assert_true(parse("{\n\t\"a\":\r\n1}") > 0);
}

/* mote_jw_value re-emits a parsed value canonically (escapes kept, any
 * invalid UTF-8 as \ufffd) so the result parses again, strictly. */
static char rout[512];
static size_t rlen;

static int rsink(void *arg, const char *p, size_t n)
{
    (void)arg;
    if (rlen + n >= sizeof(rout))
        return MOTE_ERR_TOO_LARGE;
    memcpy(rout + rlen, p, n);
    rlen += n;
    rout[rlen] = '\0';
    return 0;
}

/* The escaper against a byte-at-a-time one, on strings of every length
 * and alignment mixing plain bytes with every kind that needs care: the
 * fast path over eight plain bytes at once changes nothing. (Bytes
 * >= 0x80 come as valid two-byte UTF-8, kept as they are.) */
static size_t ref_escape(const char *s, size_t n, char *out)
{
    static const char hexd[] = "0123456789abcdef";
    size_t i, o = 0;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c == '"' || c == '\\') {
            out[o++] = '\\';
            out[o++] = (char)c;
        } else if (c == '\n' || c == '\t' || c == '\r') {
            out[o++] = '\\';
            out[o++] = c == '\n' ? 'n' : c == '\t' ? 't' : 'r';
        } else if (c < 0x20) {
            memcpy(out + o, "\\u00", 4);
            out[o + 4] = hexd[c >> 4];
            out[o + 5] = hexd[c & 15];
            o += 6;
        } else {
            out[o++] = (char)c;
        }
    }
    return o;
}

static void test_escape_fast_path(void **state)
{
    static const char odd[] = {'"', '\\', '\n', '\t', '\r', 0x01, 0x1f, 0x00, 0x7f, ' ', '~'};
    char buf[72], want[64 * 6 + 1];
    uint32_t r = 12345;
    int round;

    (void)state;
    for (round = 0; round < 4000; round++) {
        size_t n = 0, len, wn, k;
        char *in = buf + round % 8; /* every alignment */

        r = r * 1103515245u + 12345u;
        len = (r >> 8) % 48;
        while (n < len) {
            r = r * 1103515245u + 12345u;
            k = (r >> 16) % 64;
            if (k < 6 && n + 2 <= len) {
                in[n++] = (char)0xc3; /* U+00E9, valid UTF-8 */
                in[n++] = (char)0xa9;
            } else if (k >= 6 && k < 6 + sizeof(odd)) {
                in[n++] = odd[k - 6];
            } else {
                in[n++] = (char)('a' + k % 26);
            }
        }
        wn = ref_escape(in, n, want);
        rlen = 0;
        rout[0] = '\0';
        assert_int_equal(mote_json_escape_to(rsink, NULL, in, n), 0);
        assert_int_equal(rlen, wn);
        assert_memory_equal(rout, want, wn);
    }
}

static void test_value_reencoded(void **state)
{
    static const char in[] = " { \"a\" : [ 1 , -2.5e3 , true , null , \"x\\n\\\"y\\u00e9\" ] ,"
                             " \"b\\u0041\" : { } , \"c\" : \"\xff\xfe\" } ";
    struct mote_jw w;
    static struct mote_json again;

    (void)state;
    assert_true(parse(in) > 0);
    rlen = 0;
    mote_jw_init(&w, rsink, NULL);
    mote_jw_value(&w, &js, 0);
    assert_int_equal(w.err, 0);
    assert_string_equal(rout, "{\"a\":[1,-2.5e3,true,null,\"x\\n\\\"y\\u00e9\"],\"b\\u0041\":{},"
                              "\"c\":\"\\ufffd\\ufffd\"}");
    assert_true(mote_json_parse(&again, rout, rlen) > 0);
    /* Inside a container the writer's commas still hold. */
    rlen = 0;
    mote_jw_init(&w, rsink, NULL);
    mote_jw_arr(&w);
    mote_jw_int(&w, 7);
    mote_jw_value(&w, &js, mote_json_member(&js, 0, "b\\u0041") >= 0 ? 0 : 0);
    mote_jw_arr_end(&w);
    assert_int_equal(w.err, 0);
    assert_true(strncmp(rout, "[7,{", 4) == 0);
}

/* The parser and the writer keep to the same depth, MOTE_JSON_MAX_DEPTH:
 * a text at it is read and re-emitted the same; one deeper is refused as
 * too large by both (never a text read but not re-emitted). */
static void test_depth_limit(void **state)
{
    static char doc[4 * MOTE_JSON_MAX_DEPTH + 16];
    static struct mote_json again;
    struct mote_jw w;
    int depth;

    (void)state;
    for (depth = MOTE_JSON_MAX_DEPTH; depth <= MOTE_JSON_MAX_DEPTH + 1; depth++) {
        size_t n = 0;
        int i;

        for (i = 0; i < depth; i++) { /* {"k":[{"k":[ ... */
            if (i % 2) {
                doc[n++] = '[';
            } else {
                memcpy(doc + n, "{\"k\":", 5);
                n += 5;
            }
        }
        doc[n++] = '1';
        for (i = depth - 1; i >= 0; i--)
            doc[n++] = i % 2 ? ']' : '}';
        doc[n] = '\0';
        if (depth > MOTE_JSON_MAX_DEPTH) {
            assert_int_equal(mote_json_parse(&js, doc, n), MOTE_ERR_TOO_LARGE);
            continue;
        }
        assert_true(mote_json_parse(&js, doc, n) > 0);
        rlen = 0;
        mote_jw_init(&w, rsink, NULL);
        mote_jw_value(&w, &js, 0);
        assert_int_equal(w.err, 0);
        assert_int_equal(rlen, n);
        assert_memory_equal(rout, doc, n);
        assert_true(mote_json_parse(&again, rout, rlen) > 0);
    }
}

static void test_too_many_tokens(void **state)
{
    static char doc[MOTE_JSON_MAX_TOKENS * 2 + 8];
    size_t i, n = 0;

    (void)state;
    doc[n++] = '[';
    for (i = 0; i < MOTE_JSON_MAX_TOKENS; i++) {
        doc[n++] = '1';
        doc[n++] = ',';
    }
    doc[n - 1] = ']';
    assert_int_equal(mote_json_parse(&js, doc, n), MOTE_ERR_TOO_LARGE);
}

static void test_int_range(void **state)
{
    int64_t v;

    (void)state;
    assert_true(parse("[9223372036854775807,-9223372036854775807,9223372036854775808,1.5]") > 0);
    assert_int_equal(mote_json_int(&js, 1, &v), 0);
    assert_true(v == INT64_MAX);
    assert_int_equal(mote_json_int(&js, 2, &v), 0);
    assert_true(v == -INT64_MAX);
    assert_int_equal(mote_json_int(&js, 3, &v), MOTE_ERR_RANGE);
    assert_int_equal(mote_json_int(&js, 4, &v), MOTE_ERR_INVAL);
}

static int counter(void *arg, const char *p, size_t n)
{
    (void)p;
    *(size_t *)arg += n;
    return 0;
}

static void write_doc(struct mote_jw *w)
{
    mote_jw_obj(w);
    mote_jw_key(w, "model");
    mote_jw_str(w, "m\"1\\");
    mote_jw_key(w, "n");
    mote_jw_int(w, -1234567890123LL);
    mote_jw_key(w, "zero");
    mote_jw_int(w, 0);
    mote_jw_key(w, "list");
    mote_jw_arr(w);
    mote_jw_str(w, "line\nnext\ttab\x01\x7f");
    mote_jw_bool(w, true);
    mote_jw_null(w);
    mote_jw_obj(w);
    mote_jw_obj_end(w);
    mote_jw_raw(w, "{\"a\":[1]}", 9);
    mote_jw_strn(w, "bad\xff\xe9", 5);
    mote_jw_arr_end(w);
    mote_jw_obj_end(w);
}

static void test_writer(void **state)
{
    struct out o = {{0}, 0};
    struct mote_jw w;
    size_t counted = 0;

    (void)state;
    mote_jw_init(&w, to_out, &o);
    write_doc(&w);
    assert_int_equal(w.err, 0);
    assert_string_equal(o.s, "{\"model\":\"m\\\"1\\\\\",\"n\":-1234567890123,\"zero\":0,\"list\":"
                             "[\"line\\nnext\\ttab\\u0001\x7f\",true,null,{},{\"a\":[1]},"
                             "\"bad\\ufffd\\ufffd\"]}");
    assert_int_equal(w.written, o.n);
    /* The counting pass gives the same length (Content-Length). */
    mote_jw_init(&w, counter, &counted);
    write_doc(&w);
    assert_int_equal(counted, o.n);
    /* What we write parses back. */
    assert_true(mote_json_parse(&js, o.s, o.n) > 0);
    /* A sink failure is sticky. */
    o.n = sizeof(o.s) - 4;
    mote_jw_init(&w, to_out, &o);
    write_doc(&w);
    assert_int_equal(w.err, MOTE_ERR_TOO_LARGE);
}

static void test_mcp_fixtures_parse(void **state)
{
    static const char *const files[] = {"mcp-spec-2025-06-18.jsonl", "mcp-go-sdk-tools.client.jsonl",
                                        "mcp-go-sdk-tools.server.jsonl"};
    size_t k;
    int lines = 0;

    (void)state;
    for (k = 0; k < 3; k++) {
        size_t n;
        char *buf = fixture_read(files[k], &n), *p, *nl;

        if (buf == NULL)
            continue;
        for (p = buf; p < buf + n; p = nl + 1) {
            nl = memchr(p, '\n', (size_t)(buf + n - p));
            if (nl == NULL)
                nl = buf + n;
            if (nl == p)
                continue;
            assert_true(mote_json_parse(&js, p, (size_t)(nl - p)) > 0);
            assert_true(mote_json_eq(&js, mote_json_member(&js, 0, "jsonrpc"), "2.0"));
            lines++;
        }
        free(buf);
    }
    if (lines == 0)
        skip();
    assert_true(lines >= 13);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_getters),         cmocka_unit_test(test_unicode),
        cmocka_unit_test(test_raw_control_characters_refused),
        cmocka_unit_test(test_value_reencoded),
        cmocka_unit_test(test_bad_documents),   cmocka_unit_test(test_too_many_tokens),
        cmocka_unit_test(test_depth_limit),
        cmocka_unit_test(test_int_range),       cmocka_unit_test(test_writer),
        cmocka_unit_test(test_mcp_fixtures_parse), cmocka_unit_test(test_strict),
        cmocka_unit_test(test_escape_fast_path),
    };

    return cmocka_run_group_tests_name("json", tests, NULL, NULL);
}
