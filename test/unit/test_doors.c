/*
 * test_doors.c - what every front door shares, in the library: the
 * session's events as stream-json lines (mote_event_json: each type,
 * hostile text escaped, an input too large for the sink, a failing
 * sink), the stops that leave an answer unfinished, a conversation's
 * state in words (mote_conv_info_say), and the chat's prompt commands
 * (mote_mcp_prompt_command: which line is one, its usage, names too
 * long, arguments that are not NAME=VALUE).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote_agent.h"
#include "mote/mote_err.h"
#include "mote/mote_mcp.h"

static char out[70000];
static size_t out_len, out_cap = sizeof(out);

static int to_out(void *arg, const char *p, size_t n)
{
    (void)arg;
    if (out_len + n >= out_cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(out + out_len, p, n);
    out_len += n;
    out[out_len] = '\0';
    return 0;
}

static const char *json_of(const struct mote_event *ev, int want)
{
    out_len = 0;
    out[0] = '\0';
    assert_int_equal(mote_event_json(to_out, NULL, ev), want);
    return out;
}

static void test_events_as_stream_json_lines(void **state)
{
    struct mote_event ev;

    (void)state;
    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_EV_TEXT;
    ev.text = "a \"b\"\n\x1b[2J\\";
    ev.len = strlen(ev.text);
    assert_string_equal(json_of(&ev, 1), "{\"type\":\"text\",\"text\":\"a \\\"b\\\"\\n\\u001b[2J\\\\\"}\n");
    ev.type = MOTE_EV_THINKING;
    ev.text = "x\0y";
    ev.len = 3; /* a NUL inside: escaped, not an end */
    assert_string_equal(json_of(&ev, 1), "{\"type\":\"thinking\",\"text\":\"x\\u0000y\"}\n");
    ev.type = MOTE_EV_TOOL_CALL;
    ev.id = "toolu_1";
    ev.name = "shell";
    ev.input = "{\"command\":\"ls\"}";
    ev.input_len = strlen(ev.input);
    assert_string_equal(json_of(&ev, 1), "{\"type\":\"tool_call\",\"id\":\"toolu_1\",\"name\":"
                                         "\"shell\",\"input\":{\"command\":\"ls\"}}\n");
    ev.type = MOTE_EV_APPROVAL;
    ev.input_len = 0;
    assert_string_equal(json_of(&ev, 1), "{\"type\":\"tool_call\",\"id\":\"toolu_1\",\"name\":"
                                         "\"shell\",\"input\":{}}\n");
    ev.type = MOTE_EV_TOOL_RESULT;
    ev.is_error = true;
    ev.text = "no\tsuch";
    ev.len = 7;
    assert_string_equal(json_of(&ev, 1), "{\"type\":\"tool_result\",\"id\":\"toolu_1\",\"name\":"
                                         "\"shell\",\"is_error\":true,\"text\":\"no\\tsuch\"}\n");
    ev.type = MOTE_EV_TURN_END;
    ev.stop_reason = "end_turn";
    ev.turn_usage.input_tokens = 12;
    ev.turn_usage.output_tokens = 3;
    assert_string_equal(json_of(&ev, 1), "{\"type\":\"turn_end\",\"stop_reason\":\"end_turn\","
                                         "\"usage\":{\"input_tokens\":12,\"output_tokens\":3}}\n");
    ev.turn_usage.cache_read_tokens = 18446744073709551ull;
    assert_string_equal(json_of(&ev, 1),
                        "{\"type\":\"turn_end\",\"stop_reason\":\"end_turn\",\"usage\":{"
                        "\"input_tokens\":12,\"output_tokens\":3,\"cache_read_input_tokens\":"
                        "18446744073709551,\"cache_creation_input_tokens\":0}}\n");
    ev.stop_reason = NULL;
    assert_non_null(strstr(json_of(&ev, 1), "\"stop_reason\":\"\""));
    ev.type = MOTE_EV_ERROR;
    ev.code = MOTE_ERR_RATE_LIMIT;
    ev.text = "slow down";
    ev.len = 9;
    assert_string_equal(json_of(&ev, 1), "{\"type\":\"error\",\"code\":\"rate_limit\","
                                         "\"message\":\"slow down\"}\n");
    ev.type = MOTE_EV_STATE;
    assert_string_equal(json_of(&ev, 0), ""); /* not in the format */
    ev.type = MOTE_EV_NOTE;
    assert_string_equal(json_of(&ev, 0), "");
}

/* A text larger than the sink takes: the sink's error, nothing more. */
static void test_a_sink_that_refuses(void **state)
{
    static char big[100000];
    struct mote_event ev;

    (void)state;
    memset(big, '"', sizeof(big)); /* each one two bytes escaped */
    memset(&ev, 0, sizeof(ev));
    ev.type = MOTE_EV_TOOL_RESULT;
    ev.id = "i";
    ev.name = "n";
    ev.text = big;
    ev.len = sizeof(big);
    json_of(&ev, MOTE_ERR_TOO_LARGE);
    assert_true(out_len < out_cap);
    out_cap = 10;
    ev.type = MOTE_EV_TEXT;
    ev.len = 1;
    json_of(&ev, MOTE_ERR_TOO_LARGE);
    out_cap = sizeof(out);
}

static void test_unfinished_stops(void **state)
{
    (void)state;
    assert_true(mote_stop_unfinished("max_tokens"));
    assert_true(mote_stop_unfinished("refusal"));
    assert_true(mote_stop_unfinished("content_filter"));
    assert_true(mote_stop_unfinished("model_context_window_exceeded"));
    assert_true(mote_stop_unfinished("pause_turn"));
    assert_false(mote_stop_unfinished("end_turn"));
    assert_false(mote_stop_unfinished("tool_use"));
    assert_false(mote_stop_unfinished("max_tokens "));
    assert_false(mote_stop_unfinished(""));
    assert_false(mote_stop_unfinished(NULL));
}

static void test_a_conversations_state_in_words(void **state)
{
    struct mote_conv_info c;
    char buf[32], small[8];

    (void)state;
    memset(&c, 0, sizeof(c));
    assert_string_equal(mote_conv_info_say(&c, buf, sizeof(buf)), "idle");
    c.torn = true;
    assert_string_equal(mote_conv_info_say(&c, buf, sizeof(buf)), "needs recovery");
    c.torn = false;
    c.state = MOTE_RECOVER_TOOL_INTERRUPTED;
    assert_string_equal(mote_conv_info_say(&c, buf, sizeof(buf)), "interrupted tool");
    c.holder = -1;
    assert_string_equal(mote_conv_info_say(&c, buf, sizeof(buf)), "open elsewhere");
    c.holder = INT64_MAX;
    assert_string_equal(mote_conv_info_say(&c, buf, sizeof(buf)), "open (pid 9223372036854775807)");
    c.loaded = true;
    assert_string_equal(mote_conv_info_say(&c, buf, sizeof(buf)), "open here");
    c.newer = true;
    assert_string_equal(mote_conv_info_say(&c, buf, sizeof(buf)), "newer format");
    c.damaged = true;
    c.bad_line = UINT32_MAX;
    assert_string_equal(mote_conv_info_say(&c, buf, sizeof(buf)), "damaged (line 4294967295)");
    c.not_file = true;
    assert_string_equal(mote_conv_info_say(&c, buf, sizeof(buf)), "not a regular file");
    assert_string_equal(mote_conv_info_say(&c, small, sizeof(small)), "not a r");
}

static struct mote_mcp m; /* no servers */
static struct mote_mcp_call call;

static void test_prompt_commands(void **state)
{
    static char line[4096];

    (void)state;
    assert_int_equal(mote_mcp_prompt_command(NULL, NULL, "/prompts"), 0);
    assert_int_equal(mote_mcp_prompt_command(NULL, NULL, "/prompt x"), 1);
    assert_int_equal(mote_mcp_prompt_command(NULL, NULL, "/prompt"), 1);
    assert_int_equal(mote_mcp_prompt_command(NULL, NULL, "/prompt\tx"), 1);
    assert_int_equal(mote_mcp_prompt_command(NULL, NULL, "/promptx"), MOTE_ERR_NOENT);
    assert_int_equal(mote_mcp_prompt_command(NULL, NULL, "/prompts x"), MOTE_ERR_NOENT);
    assert_int_equal(mote_mcp_prompt_command(NULL, NULL, "prompt x"), MOTE_ERR_NOENT);
    assert_int_equal(mote_mcp_prompt_command(NULL, NULL, ""), MOTE_ERR_NOENT);
    /* with no server offering prompts: each ends at once with why */
    assert_int_equal(mote_mcp_prompt_command(&call, &m, "/prompts"), 0);
    assert_true(call.done && call.is_error);
    assert_non_null(strstr(call.result, "no MCP server offers prompts"));
    assert_int_equal(mote_mcp_prompt_command(&call, &m, "/prompt  \t "), 1);
    assert_true(call.done && call.is_error);
    assert_string_equal(call.result, "/prompt NAME [ARG=VALUE...] (/prompts lists them)");
    assert_int_equal(mote_mcp_prompt_command(&call, &m, "/prompt  srv/greet a=1 b=\"x y\""), 1);
    assert_true(call.done && call.is_error);
    assert_non_null(strstr(call.result, "named so: srv/greet"));
    memset(line, 'n', sizeof(line) - 1);
    memcpy(line, "/prompt ", 8);
    assert_int_equal(mote_mcp_prompt_command(&call, &m, line), 1);
    assert_true(call.done && call.is_error);
    assert_string_equal(call.result, "the prompt's name is too long");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_events_as_stream_json_lines),
        cmocka_unit_test(test_a_sink_that_refuses),
        cmocka_unit_test(test_unfinished_stops),
        cmocka_unit_test(test_a_conversations_state_in_words),
        cmocka_unit_test(test_prompt_commands),
    };

    return cmocka_run_group_tests_name("doors", tests, NULL, NULL);
}
