/* test_util.c - the core's small helpers (src/util.h): joining messages,
 * case-blind comparison, percent-decoding, bounded copies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../../src/util.h"
#include "mote/mote_err.h"
#include "mote/mote_json.h"

static void test_join(void **state)
{
    char out[16], small[8];
    struct mote_sb sb;

    (void)state;
    assert_int_equal(mote_str_join(out, sizeof(out), "a", "bc", "d"), 4);
    assert_string_equal(out, "abcd");
    assert_int_equal(mote_str_join(out, sizeof(out), "only", NULL, "x"), 5);
    assert_string_equal(out, "onlyx");
    /* cut at the capacity, never inside a UTF-8 character */
    assert_int_equal(mote_str_join(small, sizeof(small), "abcde", "\xc3\xa9\xc3\xa9", NULL), 7);
    assert_string_equal(small, "abcde\xc3\xa9");
    mote_sb_init(&sb, out, sizeof(out));
    mote_sb_num(&sb, "got ", 42, " bytes");
    assert_string_equal(out, "got 42 bytes");
    mote_sb_init(&sb, out, sizeof(out));
    mote_sb_num(&sb, "no figure", 42, NULL);
    assert_string_equal(out, "no figure");
}

static void test_why(void **state)
{
    char err[40];

    (void)state;
    assert_int_equal(mote_why(err, sizeof(err), MOTE_ERR_BADMSG, "server '", "x", "'"),
                     MOTE_ERR_BADMSG);
    assert_string_equal(err, "server 'x'");
    assert_int_equal(mote_why_num(err, sizeof(err), MOTE_ERR_FULL, "more than ", 7, " rules"),
                     MOTE_ERR_FULL);
    assert_string_equal(err, "more than 7 rules");
    /* no room at all: nothing written, the code still returned */
    assert_int_equal(mote_why(NULL, 0, MOTE_ERR_INVAL, "a", NULL, NULL), MOTE_ERR_INVAL);
    assert_int_equal(mote_why_num(NULL, 0, MOTE_ERR_INVAL, "a", 1, "b"), MOTE_ERR_INVAL);
}

static void test_ascii_case(void **state)
{
    (void)state;
    assert_true(mote_ascii_ieq("Bearer x", "bearer", 6));
    assert_true(mote_ascii_ieq("HTTPS://h", "https://", 8));
    assert_false(mote_ascii_ieq("bear", "bearer", 6)); /* shorter */
    assert_true(mote_ascii_ieq("ab", "AB", 3));        /* both end at the NUL */
    assert_true(mote_ascii_is("Content-Length", 14, "content-length"));
    assert_false(mote_ascii_is("Content-Lengths", 15, "content-length"));
    assert_false(mote_ascii_is("Content", 7, "content-length"));
}

static void test_pct_decode(void **state)
{
    char out[8];
    size_t n = 0;

    (void)state;
    assert_int_equal(mote_pct_decode("a%41+b", 6, false, out, sizeof(out), &n), 0);
    assert_int_equal(n, 4);
    assert_memory_equal(out, "aA+b", 4);
    n = 0;
    assert_int_equal(mote_pct_decode("a%41+b", 6, true, out, sizeof(out), &n), 0);
    assert_memory_equal(out, "aA b", 4);
    n = 0;
    assert_int_equal(mote_pct_decode("%4", 2, false, out, sizeof(out), &n), MOTE_ERR_INVAL);
    n = 0;
    assert_int_equal(mote_pct_decode("%zz", 3, false, out, sizeof(out), &n), MOTE_ERR_INVAL);
    n = 6;
    assert_int_equal(mote_pct_decode("abc", 3, false, out, sizeof(out), &n), MOTE_ERR_TOO_LARGE);
}

static void test_json_object_doc(void **state)
{
    static struct mote_json js;
    char err[80];

    (void)state;
    assert_true(mote_json_parse_object(&js, "{\"a\": 1}", 8, err, sizeof(err)) > 0);
    assert_string_equal(err, "");
    assert_int_equal(mote_json_parse_object(&js, "[1]", 3, err, sizeof(err)), MOTE_ERR_BADMSG);
    assert_string_equal(err, "not a JSON object");
    assert_int_equal(mote_json_parse_object(&js, "{", 1, err, sizeof(err)), MOTE_ERR_BADMSG);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_join),
        cmocka_unit_test(test_why),
        cmocka_unit_test(test_ascii_case),
        cmocka_unit_test(test_pct_decode),
        cmocka_unit_test(test_json_object_doc),
    };

    return cmocka_run_group_tests_name("util", tests, NULL, NULL);
}
