/* test_oauth.c - the text of an MCP server's login (examples/common:
 * sha256.c, oauth_util.c): SHA-256 and base64 against published vectors
 * (FIPS 180-4's examples, RFC 4648 10, RFC 7636 appendix B's PKCE pair)
 * and lengths around the padding's block edge (digests from Python's
 * hashlib), the redirect's query, WWW-Authenticate's parameters, whether
 * a protected resource names a server, forms. The sources are taken in
 * whole: they belong to the frontends, not to libmote. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "../../examples/common/oauth_util.c"
#include "../../examples/common/sha256.c"

static void hex(const uint8_t d[32], char out[65])
{
    int i;

    for (i = 0; i < 32; i++)
        snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void sha256_vectors(void **state)
{
    static const struct {
        size_t n;
        char c;
        const char *hex;
    } as[] = {
        {55, 'a', "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, 'a', "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {63, 'a', "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, 'a', "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, 'a', "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, 'a', "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, 'a', "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
    };
    uint8_t d[32];
    char h[65], buf[128];
    size_t i;

    (void)state;
    fe_sha256("", 0, d);
    hex(d, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    fe_sha256("abc", 3, d);
    hex(d, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    fe_sha256("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, d);
    hex(d, h);
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    for (i = 0; i < sizeof(as) / sizeof(as[0]); i++) {
        memset(buf, as[i].c, as[i].n);
        fe_sha256(buf, as[i].n, d);
        hex(d, h);
        assert_string_equal(h, as[i].hex);
    }
}

static void pkce_and_base64(void **state)
{
    static const char *const b64[][2] = {{"", ""},         {"f", "Zg=="},        {"fo", "Zm8="},
                                         {"foo", "Zm9v"},  {"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="},
                                         {"foobar", "Zm9vYmFy"}};
    const char *verifier = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk";
    uint8_t d[32], raw[2] = {0xfb, 0xff};
    char out[64];
    size_t i;

    (void)state;
    fe_sha256(verifier, strlen(verifier), d);
    assert_int_equal(fe_b64url(d, 32, out, sizeof(out)), 43);
    assert_string_equal(out, "E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM");
    for (i = 0; i < sizeof(b64) / sizeof(b64[0]); i++) {
        assert_int_equal(fe_b64((const uint8_t *)b64[i][0], strlen(b64[i][0]), out, sizeof(out)),
                         (int)strlen(b64[i][1]));
        assert_string_equal(out, b64[i][1]);
    }
    assert_int_equal(fe_b64url(raw, 2, out, sizeof(out)), 3); /* no padding, '-' and '_' */
    assert_string_equal(out, "-_8");
    assert_int_equal(fe_b64(raw, 2, out, sizeof(out)), 4);
    assert_string_equal(out, "+/8=");
    assert_int_equal(fe_b64url(d, 32, out, 43), -1); /* no room for the NUL */
}

static void redirect_query(void **state)
{
    char v[64];

    (void)state;
    assert_int_equal(fe_oauth_query("http://127.0.0.1:8976/callback?code=ab%2Fc+d&state=xyz",
                                    "code", v, sizeof(v)),
                     6);
    assert_string_equal(v, "ab/c d");
    assert_int_equal(fe_oauth_query("http://h/cb?xcode=1&code=2", "code", v, sizeof(v)), 1);
    assert_string_equal(v, "2");
    assert_int_equal(fe_oauth_query("http://h/cb?state=s#code=3", "code", v, sizeof(v)), -1);
    assert_int_equal(fe_oauth_query("http://h/cb", "code", v, sizeof(v)), -1);
    assert_int_equal(fe_oauth_query("http://h/cb?code=a%0Ab", "code", v, sizeof(v)), -1);
    assert_int_equal(fe_oauth_query("http://h/cb?code=0123456789", "code", v, 8), -1);
    assert_int_equal(fe_oauth_query("http://h/cb?code=", "code", v, sizeof(v)), 0);
}

static void www_authenticate(void **state)
{
    const char *h = "Bearer error=\"insufficient_scope\", scope=\"mcp:basic mcp:write\", "
                    "resource_metadata=\"http://h/.well-known/oauth-protected-resource/mcp\"";
    char v[128];

    (void)state;
    assert_int_equal(fe_oauth_param(h, "scope", v, sizeof(v)), 19);
    assert_string_equal(v, "mcp:basic mcp:write");
    assert_true(fe_oauth_param(h, "resource_metadata", v, sizeof(v)) > 0);
    assert_string_equal(v, "http://h/.well-known/oauth-protected-resource/mcp");
    assert_int_equal(fe_oauth_param(h, "error", v, sizeof(v)), 18);
    assert_int_equal(fe_oauth_param("Bearer xscope=\"a\"", "scope", v, sizeof(v)), -1);
    assert_int_equal(fe_oauth_param("Bearer Scope=a, b=c", "scope", v, sizeof(v)), 1);
    assert_string_equal(v, "a");
    assert_int_equal(fe_oauth_param("Bearer scope=\"a\\\"b\"", "scope", v, sizeof(v)), 3);
    assert_string_equal(v, "a\"b");
    assert_int_equal(fe_oauth_param("Bearer scope=\"open", "scope", v, sizeof(v)), -1);
    assert_int_equal(fe_oauth_param("Bearer scope=\"a\rb\"", "scope", v, sizeof(v)), -1);
    assert_int_equal(fe_oauth_param("Bearer realm=\"x\"", "scope", v, sizeof(v)), -1);
}

static void resource_names_server(void **state)
{
    (void)state;
    assert_true(fe_oauth_resource_ok("http://localhost:8080/mcp", "http://localhost:8080/mcp"));
    assert_true(fe_oauth_resource_ok("http://localhost:8080", "http://localhost:8080/mcp"));
    assert_true(fe_oauth_resource_ok("http://LOCALHOST:8080/mcp/", "http://localhost:8080/mcp"));
    assert_true(fe_oauth_resource_ok("https://h/a", "https://h/a/b?x=1"));
    assert_false(fe_oauth_resource_ok("https://other.example.com/mcp", "http://localhost:8080/mcp"));
    assert_false(fe_oauth_resource_ok("http://localhost:8081/mcp", "http://localhost:8080/mcp"));
    assert_false(fe_oauth_resource_ok("https://localhost:8080/mcp", "http://localhost:8080/mcp"));
    assert_false(fe_oauth_resource_ok("http://localhost:8080/mc", "http://localhost:8080/mcp"));
    assert_false(fe_oauth_resource_ok("http://localhost:8080/mcp/x", "http://localhost:8080/mcp"));
    assert_false(fe_oauth_resource_ok("urn:x", "http://localhost:8080/mcp"));
}

static void forms_and_json(void **state)
{
    char b[64];
    size_t at = 0;

    (void)state;
    assert_true(oa_param(b, sizeof(b), &at, "a", "x y&z=é"));
    assert_true(oa_param(b, sizeof(b), &at, "b", "-._~"));
    assert_string_equal(b, "a=x%20y%26z%3D%C3%A9&b=-._~");
    at = 0;
    assert_true(oa_json_str(b, sizeof(b), &at, "q\"\\\n"));
    assert_string_equal(b, "\"q\\\"\\\\\\u000a\"");
    at = 0;
    assert_false(oa_param(b, 8, &at, "name", "value")); /* does not fit */
    assert_true(oa_has_word("openid offline_access", "offline_access"));
    assert_false(oa_has_word("offline_accessx", "offline_access"));
    oa_join3(b, sizeof(b), "http://h", "/.well-known/x", "/t");
    assert_string_equal(b, "http://h/.well-known/x/t");
    oa_join3(b, 10, "http://h", "/.well-known/x", "");
    assert_string_equal(b, "");
}

static void documents_refuse_control_bytes(void **state)
{
    /* an authorization server's strings reach messages, files and
     * headers: one with a control character (an escape sequence, a line
     * break) is refused, and a list holds words only */
    static const char doc[] = "{\"issuer\":\"http://h\",\"token_endpoint\":\"http://h/t\\n\","
                              "\"error\":\"x\\u001b[31m\",\"scopes_supported\":[\"a\",\"b\"],"
                              "\"s2\":[\"a\",\"\"],\"s3\":[\"a b\"],\"s4\":[\"a\\tb\"]}";
    char v[64];

    (void)state;
    assert_true(mote_json_parse_object(&oa_js, doc, sizeof(doc) - 1, NULL, 0) > 0);
    assert_true(oa_doc_str("issuer", v, sizeof(v)));
    assert_string_equal(v, "http://h");
    assert_false(oa_doc_str("token_endpoint", v, sizeof(v)));
    assert_string_equal(v, "");
    assert_false(oa_doc_str("error", v, sizeof(v)));
    assert_true(oa_doc_str("absent", v, sizeof(v)));
    assert_string_equal(v, "");
    assert_true(oa_doc_list("scopes_supported", v, sizeof(v)));
    assert_string_equal(v, "a b");
    assert_false(oa_doc_list("s2", v, sizeof(v)));
    assert_false(oa_doc_list("s3", v, sizeof(v)));
    assert_false(oa_doc_list("s4", v, sizeof(v)));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sha256_vectors),   cmocka_unit_test(pkce_and_base64),
        cmocka_unit_test(redirect_query),   cmocka_unit_test(www_authenticate),
        cmocka_unit_test(resource_names_server), cmocka_unit_test(forms_and_json),
        cmocka_unit_test(documents_refuse_control_bytes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
