/*
 * test_mcpform.c - a server's question walked field by field
 * (src/mcp_form.c, mote_mcp.h: mote_mcp_form_*): each field's text and
 * prompt with the server's words neutralised, typed lines checked
 * (choices by number and value, y/n, numbers and integers, bounds,
 * required fields and defaults, /decline and /cancel), the answer built
 * as strict JSON; hostile forms: 1,000 fields, huge strings, wrong
 * types, numbers out of range, an answer over its buffer.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote_err.h"
#include "mote/mote_mcp.h"

static struct mote_mcp_ask q;
static struct mote_mcp_form f;
static char text[1024], prompt[512];

/* Question 7 with `form` (JSON) as mcp_elicit.c hands it over. */
static int begin(const char *form)
{
    memset(&q, 0, sizeof(q));
    q.id = 7;
    q.form_len = strlen(form);
    assert_true(q.form_len < sizeof(q.form));
    memcpy(q.form, form, q.form_len);
    return mote_mcp_form_begin(&f, &q);
}

static enum mote_mcp_form_step reply(const char *line, const char *want_hint)
{
    const char *hint = "unset";
    enum mote_mcp_form_step st = mote_mcp_form_reply(&f, line, &hint);

    if (want_hint == NULL) {
        assert_null(hint);
    } else {
        assert_non_null(hint);
        assert_string_equal(hint, want_hint);
        assert_int_equal(st, MOTE_MCP_FORM_AGAIN);
    }
    return st;
}

static void field(void)
{
    size_t n = mote_mcp_form_field(&f, text, sizeof(text), prompt, sizeof(prompt));

    assert_int_equal(n, strlen(prompt));
}

static const char flat[] =
    "{\"server\":\"f\",\"message\":\"Tell me about you\",\"fields\":["
    "{\"name\":\"name\",\"type\":\"string\",\"title\":\"Name\",\"description\":\"yours\","
    "\"required\":true},"
    "{\"name\":\"age\",\"type\":\"integer\",\"minimum\":0,\"maximum\":150,\"required\":false},"
    "{\"name\":\"ok\",\"type\":\"boolean\",\"default\":true,\"required\":true},"
    "{\"name\":\"color\",\"type\":\"string\",\"required\":true,\"enum\":[\"red\",\"green\"],"
    "\"enumTitles\":[\"Red\",\"Green\"]},"
    "{\"name\":\"x\",\"type\":\"number\",\"required\":false}]}";

static void test_a_form_walked_field_by_field(void **state)
{
    (void)state;
    assert_int_equal(begin(flat), 5);
    assert_int_equal(f.id, 7);
    mote_mcp_form_title(&f, text, sizeof(text));
    assert_string_equal(text, "mcp f asks: Tell me about you");
    field();
    assert_string_equal(text, "  name (Name: yours)\n");
    assert_string_equal(prompt, "  string, required; /decline, /cancel > ");
    assert_int_equal(reply("", "(required)"), MOTE_MCP_FORM_AGAIN);
    assert_int_equal(reply("Ann \"the\" \\ one", NULL), MOTE_MCP_FORM_NEXT);
    field();
    assert_string_equal(prompt, "  integer, Enter: none; /decline, /cancel > ");
    reply("4.5", "(a number without a fraction)");
    reply("1e3", "(a number without a fraction)");
    reply("abc", "(a number without a fraction)");
    reply("007", "(a number without a fraction)");
    reply("-1", "(at least 0)");
    reply("151", "(at most 150)");
    reply("9999999999999999999999", "(a number without a fraction)");
    assert_int_equal(reply("42", NULL), MOTE_MCP_FORM_NEXT);
    field();
    assert_string_equal(prompt, "  y/n, required, default true; /decline, /cancel > ");
    reply("maybe", "(y or n)");
    assert_int_equal(reply("", NULL), MOTE_MCP_FORM_NEXT); /* the default */
    field();
    assert_string_equal(text, "  color\n    1) Red 2) Green\n");
    assert_string_equal(prompt, "  choice, required; /decline, /cancel > ");
    reply("3", "(one of the choices: its number or its value)");
    reply("0", "(one of the choices: its number or its value)");
    reply("blue", "(one of the choices: its number or its value)");
    assert_int_equal(reply("green", NULL), MOTE_MCP_FORM_NEXT);
    field();
    assert_string_equal(prompt, "  number, Enter: none; /decline, /cancel > ");
    reply("1.", "(a number)");
    reply("1e", "(a number)");
    reply("--1", "(a number)");
    assert_int_equal(reply("-1.5e+3", NULL), MOTE_MCP_FORM_DONE);
    assert_string_equal(f.content, "{\"name\":\"Ann \\\"the\\\" \\\\ one\",\"age\":42,\"ok\":true,"
                                   "\"color\":\"green\",\"x\":-1.5e+3}");
    assert_int_equal(f.len, strlen(f.content));
}

static void test_optional_fields_left_out_and_choices_by_number(void **state)
{
    (void)state;
    assert_int_equal(begin(flat), 5);
    reply("Bo", NULL);
    reply("", NULL); /* optional: left out */
    reply("n", NULL);
    reply("1", NULL);
    assert_int_equal(reply("", NULL), MOTE_MCP_FORM_DONE);
    assert_string_equal(f.content, "{\"name\":\"Bo\",\"ok\":false,\"color\":\"red\"}");
    /* the server refused it: the walk starts again, the answer empty */
    mote_mcp_form_restart(&f);
    assert_string_equal(f.content, "{");
    field();
    assert_string_equal(text, "  name (Name: yours)\n");
    reply("Cy", NULL);
    reply("0", NULL);
    reply("yes", NULL);
    reply("red", NULL);
    assert_int_equal(reply("0", NULL), MOTE_MCP_FORM_DONE);
    assert_string_equal(f.content,
                        "{\"name\":\"Cy\",\"age\":0,\"ok\":true,\"color\":\"red\",\"x\":0}");
}

/* The form comes filled with its defaults (SEP-1034): Enter keeps an
 * optional field's default too; one without a default is left out. */
static void test_enter_keeps_an_optional_fields_default(void **state)
{
    (void)state;
    assert_int_equal(begin("{\"server\":\"d\",\"message\":\"ok?\",\"fields\":["
                           "{\"name\":\"name\",\"type\":\"string\",\"default\":\"John Doe\","
                           "\"required\":false},"
                           "{\"name\":\"age\",\"type\":\"integer\",\"default\":30,\"required\":false},"
                           "{\"name\":\"note\",\"type\":\"string\",\"required\":false},"
                           "{\"name\":\"score\",\"type\":\"number\",\"default\":95.5,\"required\":false},"
                           "{\"name\":\"status\",\"type\":\"string\",\"default\":\"active\","
                           "\"required\":false,\"enum\":[\"active\",\"pending\"],"
                           "\"enumTitles\":[\"Active\",\"Pending\"]},"
                           "{\"name\":\"verified\",\"type\":\"boolean\",\"default\":true,"
                           "\"required\":false}]}"),
                     6);
    field();
    assert_string_equal(prompt, "  string, Enter: default John Doe; /decline, /cancel > ");
    assert_int_equal(reply("", NULL), MOTE_MCP_FORM_NEXT);
    field();
    assert_string_equal(prompt, "  integer, Enter: default 30; /decline, /cancel > ");
    assert_int_equal(reply("31", NULL), MOTE_MCP_FORM_NEXT); /* typed: the default replaced */
    field();
    assert_string_equal(prompt, "  string, Enter: none; /decline, /cancel > ");
    assert_int_equal(reply("", NULL), MOTE_MCP_FORM_NEXT);
    reply("", NULL);
    reply("", NULL);
    assert_int_equal(reply("", NULL), MOTE_MCP_FORM_DONE);
    assert_string_equal(f.content, "{\"name\":\"John Doe\",\"age\":31,\"score\":95.5,"
                                   "\"status\":\"active\",\"verified\":true}");
}

static void test_decline_cancel_and_a_form_without_fields(void **state)
{
    (void)state;
    begin(flat);
    reply("Ann", NULL);
    assert_int_equal(reply("/decline", NULL), MOTE_MCP_FORM_DECLINE);
    begin(flat);
    assert_int_equal(reply("/cancel", NULL), MOTE_MCP_FORM_CANCEL);
    assert_int_equal(begin("{\"server\":\"s\",\"message\":\"ok?\",\"fields\":[]}"), 0);
    assert_int_equal(reply("", NULL), MOTE_MCP_FORM_DONE);
    assert_string_equal(f.content, "{}");
}

/* The server's words shown: escapes and controls neutralised, one line. */
static void test_the_servers_words_are_neutralised(void **state)
{
    (void)state;
    assert_int_equal(begin("{\"server\":\"s\\u001b[2J\",\"message\":\"a\\nb\\u009b\","
                           "\"fields\":[{\"name\":\"n\\u001b]0;x\\u0007\",\"type\":\"string\","
                           "\"title\":\"t\\r\\nu\",\"default\":\"\\u001b[31m\",\"required\":false}]}"),
                     1);
    mote_mcp_form_title(&f, text, sizeof(text));
    assert_null(strchr(text, '\033'));
    assert_null(strchr(text, '\n'));
    assert_non_null(strstr(text, "<U+009B>")); /* a C1 control (CSI) */
    field();
    assert_null(strchr(text, '\033'));
    assert_null(strchr(text, '\a'));
    assert_null(strchr(text, '\r'));
    assert_int_equal(strchr(text, '\n') - text, (long)strlen(text) - 1); /* only at the end */
    assert_null(strchr(prompt, '\033'));
}

/* Forms that are not what mcp_elicit.c writes: refused or walked safely. */
static void test_hostile_forms(void **state)
{
    static char big[64 * 1024];
    size_t k = 0;
    int i;

    (void)state;
    assert_int_equal(begin(""), MOTE_ERR_INVAL);
    assert_int_equal(begin("[1,2]"), MOTE_ERR_INVAL);
    assert_int_equal(begin("{\"fields\":"), MOTE_ERR_INVAL);
    /* a form length past its buffer */
    begin("{}");
    q.form_len = sizeof(q.form) + 1;
    assert_int_equal(mote_mcp_form_begin(&f, &q), MOTE_ERR_INVAL);
    /* 1,000 fields: more tokens than the parser holds */
    k += (size_t)snprintf(big + k, sizeof(big) - k, "{\"fields\":[");
    for (i = 0; i < 1000; i++)
        k += (size_t)snprintf(big + k, sizeof(big) - k, "%s{\"name\":\"f%d\",\"type\":\"string\"}",
                              i > 0 ? "," : "", i);
    snprintf(big + k, sizeof(big) - k, "]}");
    memset(&q, 0, sizeof(q));
    memcpy(q.form, big, sizeof(q.form));
    q.form_len = sizeof(q.form); /* (cut to the buffer: not JSON) */
    assert_int_equal(mote_mcp_form_begin(&f, &q), MOTE_ERR_INVAL);
    k = (size_t)snprintf(big, sizeof(big), "{\"fields\":[");
    for (i = 0; i < 1000 && k + 40 < sizeof(q.form); i++)
        k += (size_t)snprintf(big + k, sizeof(big) - k, "%s{\"name\":\"%d\"}", i > 0 ? "," : "", i);
    snprintf(big + k, sizeof(big) - k, "]}");
    assert_true(begin(big) < 0 || begin(big) > 100);
    /* wrong types: fields not an array, a field not an object, a name not
     * a string, a type unknown, bounds that are not numbers */
    assert_int_equal(begin("{\"fields\":{\"a\":1}}"), 0);
    assert_int_equal(reply("x", NULL), MOTE_MCP_FORM_DONE);
    assert_int_equal(begin("{\"fields\":[7,\"s\",null]}"), 3);
    field();
    assert_int_equal(reply("x", "(a number)"), MOTE_MCP_FORM_AGAIN);
    assert_int_equal(reply("1", NULL), MOTE_MCP_FORM_NEXT);
    assert_int_equal(begin("{\"fields\":[{\"name\":5,\"type\":[\"string\"],\"required\":\"yes\","
                           "\"minimum\":\"a\",\"maximum\":{},\"enum\":7,\"title\":false}]}"),
                     1);
    field();
    assert_int_equal(reply("3", NULL), MOTE_MCP_FORM_DONE);
    assert_string_equal(f.content, "{\"\":3}");
    /* a huge string in the form: shown cut, the buffers kept */
    k = (size_t)snprintf(big, sizeof(big), "{\"server\":\"s\",\"message\":\"");
    memset(big + k, 'm', 3000);
    k += 3000;
    snprintf(big + k, sizeof(big) - k, "\",\"fields\":[{\"name\":\"n\",\"type\":\"string\"}]}");
    assert_int_equal(begin(big), 1);
    assert_true(mote_mcp_form_title(&f, text, 40) < 40);
    assert_int_equal(strlen(text), 39);
    mote_mcp_form_title(&f, text, sizeof(text));
    assert_true(strlen(text) < 300);
    assert_true(mote_mcp_form_field(&f, text, 8, prompt, 8) < 8);
}

/* Numbers out of range of a field's bounds, and bounds at int64's ends. */
static void test_numbers_out_of_range(void **state)
{
    (void)state;
    assert_int_equal(begin("{\"fields\":[{\"name\":\"a\",\"type\":\"integer\",\"minimum\":-5,"
                           "\"required\":true},{\"name\":\"b\",\"type\":\"number\",\"maximum\":10,"
                           "\"required\":true},{\"name\":\"c\",\"type\":\"integer\",\"minimum\":1.5,"
                           "\"maximum\":99999999999999999999,\"required\":true}]}"),
                     3);
    reply("-6", "(at least -5)");
    reply("-999999999999999999", "(at least -5)");
    reply("1000000000000000000", "(a number without a fraction)"); /* 19 digits */
    assert_int_equal(reply("-5", NULL), MOTE_MCP_FORM_NEXT);
    reply("11", "(at most 10)");
    assert_int_equal(reply("10.5", NULL), MOTE_MCP_FORM_NEXT); /* (a fraction: the server checks) */
    assert_int_equal(reply("-999999999999999999", NULL), MOTE_MCP_FORM_DONE); /* no int bounds */
    assert_string_equal(f.content, "{\"a\":-5,\"b\":10.5,\"c\":-999999999999999999}");
}

/* Typed lines that would make the answer pass its buffer: refused alone,
 * the answer before them kept whole. */
static void test_an_answer_over_its_buffer(void **state)
{
    static char line[sizeof(f.content) * 2];

    (void)state;
    assert_int_equal(begin("{\"fields\":[{\"name\":\"a\",\"type\":\"string\",\"required\":true},"
                           "{\"name\":\"b\",\"type\":\"string\",\"required\":true}]}"),
                     2);
    memset(line, 'x', sizeof(line) - 1);
    line[sizeof(line) - 1] = '\0';
    reply(line, "(too long: the whole answer has at most MOTE_MCP_ASK_MAX bytes)");
    assert_int_equal(f.len, 1);
    line[sizeof(f.content) - 20] = '\0';
    assert_int_equal(reply(line, NULL), MOTE_MCP_FORM_NEXT);
    reply("yyyyyyyyyyyy", "(too long: the whole answer has at most MOTE_MCP_ASK_MAX bytes)");
    assert_int_equal(reply("y", NULL), MOTE_MCP_FORM_DONE);
    assert_int_equal(f.len, strlen(f.content));
    assert_int_equal(f.content[f.len - 1], '}');
    assert_true(f.len < sizeof(f.content));
}

/* Answered by a policy alone (mote_mcp_form_defaults): every field of
 * each type with a default, required or not, is accepted with exactly
 * those values. */
static void test_defaults_fill_every_field_of_each_type(void **state)
{
    char why[128] = "unset";

    (void)state;
    memset(&q, 0, sizeof(q));
    q.id = 9;
    strcpy(q.form, "{\"server\":\"d\",\"message\":\"ok?\",\"fields\":["
                   "{\"name\":\"name\",\"type\":\"string\",\"default\":\"John \\\"J\\\" Doe\","
                   "\"required\":true},"
                   "{\"name\":\"age\",\"type\":\"integer\",\"default\":-30,\"required\":false},"
                   "{\"name\":\"score\",\"type\":\"number\",\"default\":95.5e1,\"required\":true},"
                   "{\"name\":\"status\",\"type\":\"string\",\"default\":\"pending\","
                   "\"required\":false,\"enum\":[\"active\",\"pending\"],"
                   "\"enumTitles\":[\"Active\",\"Pending\"]},"
                   "{\"name\":\"verified\",\"type\":\"boolean\",\"default\":false,"
                   "\"required\":true}]}");
    q.form_len = strlen(q.form);
    assert_int_equal(mote_mcp_form_defaults(&f, &q, why, sizeof(why)), 0);
    assert_string_equal(why, "unset"); /* (nothing said when taken) */
    assert_int_equal(f.id, 9);
    assert_string_equal(f.content, "{\"name\":\"John \\\"J\\\" Doe\",\"age\":-30,\"score\":95.5e1,"
                                   "\"status\":\"pending\",\"verified\":false}");
    assert_int_equal(f.len, strlen(f.content));
    /* a form without fields asks for a yes only */
    assert_int_equal(begin("{\"server\":\"d\",\"message\":\"go?\",\"fields\":[]}"), 0);
    assert_int_equal(mote_mcp_form_defaults(&f, &q, NULL, 0), 0);
    assert_string_equal(f.content, "{}");
}

/* A field without a default, required or optional: refused, the reason
 * naming the first such field (neutralised), the answer left empty. */
static void test_defaults_refused_naming_the_field(void **state)
{
    char why[128];

    (void)state;
    begin("{\"fields\":[{\"name\":\"ok\",\"type\":\"boolean\",\"default\":true,\"required\":true},"
          "{\"name\":\"age\",\"type\":\"integer\",\"required\":true},"
          "{\"name\":\"note\",\"type\":\"string\",\"required\":false}]}");
    assert_int_equal(mote_mcp_form_defaults(&f, &q, why, sizeof(why)), MOTE_ERR_INVAL);
    assert_string_equal(why, "field \"age\" has no default");
    assert_int_equal(f.len, 0);
    assert_string_equal(f.content, "");
    begin("{\"fields\":[{\"name\":\"ok\",\"type\":\"boolean\",\"default\":true,\"required\":true},"
          "{\"name\":\"note\",\"type\":\"string\",\"required\":false}]}");
    assert_int_equal(mote_mcp_form_defaults(&f, &q, why, sizeof(why)), MOTE_ERR_INVAL);
    assert_string_equal(why, "field \"note\" has no default"); /* optional: nobody to fill it */
    begin("{\"fields\":[{\"name\":\"a\\u001b[31mb\\nc\",\"type\":\"string\",\"required\":true}]}");
    assert_int_equal(mote_mcp_form_defaults(&f, &q, why, sizeof(why)), MOTE_ERR_INVAL);
    assert_null(strchr(why, '\033'));
    assert_null(strchr(why, '\n'));
    assert_non_null(strstr(why, "\" has no default"));
    /* a short buffer: cut, NUL-ended */
    begin("{\"fields\":[{\"name\":\"age\",\"type\":\"integer\",\"required\":true}]}");
    assert_int_equal(mote_mcp_form_defaults(&f, &q, why, 8), MOTE_ERR_INVAL);
    assert_true(strlen(why) < 8);
    assert_int_equal(mote_mcp_form_defaults(&f, &q, NULL, 0), MOTE_ERR_INVAL);
    /* not a form */
    memset(&q, 0, sizeof(q));
    strcpy(q.form, "[1,2");
    q.form_len = strlen(q.form);
    assert_int_equal(mote_mcp_form_defaults(&f, &q, why, sizeof(why)), MOTE_ERR_INVAL);
    assert_string_equal(why, "a form mote cannot read");
}

/* A default the form's own checks would refuse (its type, an enum's
 * choices): refused here, naming the field, rather than sent. */
static void test_defaults_that_do_not_fit_their_field(void **state)
{
    static const char *const bad[] = {
        "{\"name\":\"f\",\"type\":\"integer\",\"default\":\"7\",\"required\":true}",
        "{\"name\":\"f\",\"type\":\"integer\",\"default\":7.5,\"required\":true}",
        "{\"name\":\"f\",\"type\":\"number\",\"default\":true,\"required\":true}",
        "{\"name\":\"f\",\"type\":\"boolean\",\"default\":\"true\",\"required\":true}",
        "{\"name\":\"f\",\"type\":\"boolean\",\"default\":1,\"required\":true}",
        "{\"name\":\"f\",\"type\":\"string\",\"default\":3,\"required\":false}",
        "{\"name\":\"f\",\"type\":\"string\",\"default\":\"blue\",\"required\":true,"
        "\"enum\":[\"red\",\"green\"],\"enumTitles\":[\"Red\",\"Green\"]}",
    };
    char form[512], why[128];
    unsigned i;

    (void)state;
    for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        snprintf(form, sizeof(form), "{\"fields\":[%s]}", bad[i]);
        assert_int_equal(begin(form), 1);
        assert_int_equal(mote_mcp_form_defaults(&f, &q, why, sizeof(why)), MOTE_ERR_INVAL);
        assert_string_equal(why, "field \"f\"'s default does not fit its type or choices");
        assert_int_equal(f.len, 0);
    }
    /* the same fields with defaults that fit */
    assert_int_equal(begin("{\"fields\":[{\"name\":\"i\",\"type\":\"integer\",\"default\":7},"
                           "{\"name\":\"n\",\"type\":\"number\",\"default\":7},"
                           "{\"name\":\"b\",\"type\":\"boolean\",\"default\":true},"
                           "{\"name\":\"c\",\"type\":\"string\",\"default\":\"green\","
                           "\"enum\":[\"red\",\"green\"]}]}"),
                     4);
    assert_int_equal(mote_mcp_form_defaults(&f, &q, why, sizeof(why)), 0);
    assert_string_equal(f.content, "{\"i\":7,\"n\":7,\"b\":true,\"c\":\"green\"}");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_form_walked_field_by_field),
        cmocka_unit_test(test_optional_fields_left_out_and_choices_by_number),
        cmocka_unit_test(test_enter_keeps_an_optional_fields_default),
        cmocka_unit_test(test_decline_cancel_and_a_form_without_fields),
        cmocka_unit_test(test_the_servers_words_are_neutralised),
        cmocka_unit_test(test_hostile_forms),
        cmocka_unit_test(test_numbers_out_of_range),
        cmocka_unit_test(test_an_answer_over_its_buffer),
        cmocka_unit_test(test_defaults_fill_every_field_of_each_type),
        cmocka_unit_test(test_defaults_refused_naming_the_field),
        cmocka_unit_test(test_defaults_that_do_not_fit_their_field),
    };

    return cmocka_run_group_tests_name("mcpform", tests, NULL, NULL);
}
