/* test_show.c - what a person is shown (mote_show.h): untrusted text
 * made safe, and a tool call's display for its approval in both sinks
 * (plain text and the structured JSON form), every case the approval
 * work listed: blanks hiding a tail, a payload after many lines, control
 * and invisible characters, write_file's size and target, edit_file as
 * "-" and "+" lines, head and tail of a long text with what was dropped
 * counted and all of it on request, ambiguous inputs, inputs that are
 * not objects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote_agent.h"
#include "mote/mote_err.h"
#include "mote/mote_show.h"

static struct mote_json js, rd;
static char out[200000];
static size_t out_len;
static int fail_after = -1; /* the sink fails after this many calls (-1 never) */

static int to_out(void *arg, const char *p, size_t n)
{
    (void)arg;
    if (fail_after == 0)
        return MOTE_ERR_IO;
    if (fail_after > 0)
        fail_after--;
    assert_true(out_len + n < sizeof(out));
    memcpy(out + out_len, p, n);
    out_len += n;
    out[out_len] = '\0';
    return 0;
}

/* fs_stat of a port that knows two paths */
static int fake_stat(void *ctx, const char *path, struct mote_fs_stat *st)
{
    (void)ctx;
    if (strcmp(path, "/etc/old.conf") == 0) {
        st->type = MOTE_FS_FILE;
        st->size = 1234;
        return 0;
    }
    if (strcmp(path, "/dev/null") == 0) {
        st->type = MOTE_FS_OTHER;
        return 0;
    }
    return MOTE_ERR_NOENT;
}

static struct mote_port port;

/* The call's display as plain text (no colour unless `color`). */
static int plain(const char *name, const char *input, unsigned flags, bool color)
{
    struct mote_show_plain p = {to_out, NULL, color, "answer v to see all of it"};
    struct mote_show_sink s = mote_show_plain_sink(&p);

    port.fs_stat = fake_stat;
    out_len = 0;
    out[0] = '\0';
    return mote_show_call(&js, &port, name, input, strlen(input), flags, &s);
}

/* The structured form, drawn back as text: one line per element,
 * "kind key mark bytes/lines: text" with stand-ins in [[ ]], so that
 * both sinks are checked against the same expectation. */
static char drawn[200000];

static int structured(const char *name, const char *input, unsigned flags)
{
    struct mote_jw w;
    int rc, t, i, n, lines;
    size_t k = 0;
    bool cut;

    port.fs_stat = fake_stat;
    out_len = 0;
    mote_jw_init(&w, to_out, NULL);
    rc = mote_show_call_json(&js, &port, name, input, strlen(input), flags, &w);
    assert_int_equal(w.err, 0);
    if (mote_json_parse_object(&rd, out, out_len, NULL, 0) <= 0)
        fail_msg("not JSON: %.300s", out);
    assert_int_equal(mote_json_bool(&rd, mote_json_member(&rd, 0, "cut"), &cut), 0);
    assert_int_equal(cut, rc > 0);
    lines = mote_json_member(&rd, 0, "lines");
    n = rd.tok[lines].size;
    drawn[0] = '\0';
    for (i = 0; i < n; i++) {
        int l = mote_json_elem(&rd, lines, i), text = mote_json_member(&rd, l, "text"), p;
        char s[8192];
        int64_t v;

        assert_true(mote_json_str(&rd, mote_json_member(&rd, l, "kind"), s, sizeof(s)) > 0);
        k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, "%s", s);
        if ((t = mote_json_member(&rd, l, "key")) >= 0 && mote_json_str(&rd, t, s, sizeof(s)) >= 0)
            k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, " %s", s);
        if ((t = mote_json_member(&rd, l, "mark")) >= 0 && mote_json_str(&rd, t, s, sizeof(s)) >= 0)
            k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, " %s", s);
        if (mote_json_int(&rd, mote_json_member(&rd, l, "bytes"), &v) == 0)
            k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, " %lldB", (long long)v);
        if (mote_json_int(&rd, mote_json_member(&rd, l, "lines"), &v) == 0)
            k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, " %lldL", (long long)v);
        if (mote_json_bool(&rd, mote_json_member(&rd, l, "no_eol"), &cut) == 0 && cut)
            k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, " no_eol");
        if ((t = mote_json_member(&rd, l, "file")) >= 0) {
            if (mote_json_int(&rd, t, &v) == 0)
                k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, " file=%lld", (long long)v);
            else if (mote_json_str(&rd, t, s, sizeof(s)) > 0)
                k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, " file=%s", s);
        }
        if (text >= 0) {
            k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, ":");
            for (p = 0; p < rd.tok[text].size; p++) {
                assert_true(mote_json_str(&rd, mote_json_elem(&rd, text, p), s, sizeof(s)) >= 0);
                /* nothing in a piece acts: no control character but a tab */
                for (t = 0; s[t] != '\0'; t++)
                    assert_true((unsigned char)s[t] >= 0x20 || s[t] == '\t');
                k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, p % 2 ? "[[%s]]" : "%s", s);
            }
        }
        k += (size_t)snprintf(drawn + k, sizeof(drawn) - k, "\n");
        assert_true(k < sizeof(drawn) - 1);
    }
    return rc;
}

static void test_blanks_hiding_a_tail_are_counted(void **state)
{
    char in[600];

    (void)state;
    snprintf(in, sizeof(in), "{\"command\":\"ls /tmp%300s; echo HIDDEN >> /tmp/P\"}", "");
    assert_int_equal(plain("shell", in, 0, false), 0);
    assert_string_equal(out, "* shell\n  | ls /tmp<300 spaces>; echo HIDDEN >> /tmp/P\n");
    assert_int_equal(structured("shell", in, 0), 0);
    assert_string_equal(drawn, "tool:shell\nline |:ls /tmp[[<300 spaces>]]; echo HIDDEN >> /tmp/P\n");
    /* tabs, and both; a run of 23 is drawn as it is */
    snprintf(in, sizeof(in), "{\"command\":\"a%sb \\t \\t \\t \\t \\t \\t \\t \\t \\t \\t \\t \\tc%23sd\"}",
             "\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t\\t", "");
    assert_int_equal(plain("shell", in, 0, false), 0);
    assert_string_equal(out, "* shell\n  | a<25 tabs>b<24 spaces and tabs>c                       d\n");
    /* in colour the stand-in is in reverse video */
    snprintf(in, sizeof(in), "{\"command\":\"x%30sy\"}", "");
    assert_int_equal(plain("shell", in, 0, true), 0);
    assert_non_null(strstr(out, "x\033[7m<30 spaces>\033[27my"));
}

static void test_a_payload_after_forty_lines_is_shown(void **state)
{
    static char in[4096];
    size_t k;
    int i;

    (void)state;
    k = (size_t)snprintf(in, sizeof(in), "{\"command\":\"");
    for (i = 0; i < 40; i++)
        k += (size_t)snprintf(in + k, sizeof(in) - k, "echo a\\n");
    snprintf(in + k, sizeof(in) - k, "echo PAYLOAD-AFTER-FORTY > /tmp/P\"}");
    assert_int_equal(plain("shell", in, 0, false), 0);
    for (i = 0, k = 0; strstr(out + k, "  | echo a\n") != NULL; i++)
        k = (size_t)(strstr(out + k, "  | echo a\n") - out) + 1;
    assert_int_equal(i, 40);
    assert_non_null(strstr(out, "  | echo PAYLOAD-AFTER-FORTY > /tmp/P\n"));
    assert_int_equal(structured("shell", in, 0), 0);
    assert_non_null(strstr(drawn, "line |:echo PAYLOAD-AFTER-FORTY > /tmp/P\n"));
    for (i = 0, k = 0; strstr(drawn + k, "line |:echo a\n") != NULL; i++)
        k = (size_t)(strstr(drawn + k, "line |:echo a\n") - drawn) + 1;
    assert_int_equal(i, 40);
}

static void test_control_characters_are_made_visible(void **state)
{
    const char *in = "{\"command\":\"echo SAFE\\rrm -rf NOTHING \\u001b[2K; echo SEEN\\u007f\\u009b\"}";

    (void)state;
    assert_int_equal(plain("shell", in, 0, false), 0);
    assert_string_equal(out, "* shell\n  | echo SAFE^Mrm -rf NOTHING ^[[2K; echo SEEN^?<U+009B>\n");
    assert_null(strchr(out, '\033'));
    assert_null(strchr(out, '\r'));
    assert_int_equal(structured("shell", in, 0), 0);
    assert_string_equal(drawn, "tool:shell\nline |:echo SAFE[[^M]]rm -rf NOTHING [[^[]][2K; echo "
                               "SEEN[[^?]][[<U+009B>]]\n");
    /* a tool name that would act is made safe too */
    assert_int_equal(plain("x\033]0;owned\007", "{}", 0, false), 0);
    assert_string_equal(out, "* x^[]0;owned^G\n  (no input)\n");
}

static void test_invisible_characters_and_every_member(void **state)
{
    const char *in = "{\"command\":\"echo SAFE \\u202e; rm -rf X\\u200b\",\"note\":\"echo OTHER\","
                     "\"timeout\":5,\"env\":{\"A\":\"x\\u2028y\"},\"x\\u001bk\":true}";

    (void)state;
    assert_int_equal(plain("shell", in, 0, false), 0);
    assert_string_equal(out, "* shell\n"
                             "  | echo SAFE <U+202E>; rm -rf X<U+200B>\n"
                             "  note: echo OTHER\n"
                             "  timeout: 5\n"
                             "  env: {\"A\":\"x\\u2028y\"}\n"
                             "  x^[k: true\n");
    assert_int_equal(structured("shell", in, 0), 0);
    assert_string_equal(drawn, "tool:shell\n"
                               "line |:echo SAFE [[<U+202E>]]; rm -rf X[[<U+200B>]]\n"
                               "field note:echo OTHER\n"
                               "value timeout:5\n"
                               "value env:{\"A\":\"x\\u2028y\"}\n"
                               "value x^[k:true\n");
    /* UTF-8 that is shown, and bytes that are not UTF-8 */
    assert_int_equal(plain("shell", "{\"command\":\"caf\xc3\xa9 \xff \xe2\x82\"}", 0, false), 0);
    assert_string_equal(out, "* shell\n  | caf\xc3\xa9 \xef\xbf\xbd \xef\xbf\xbd\xef\xbf\xbd\n");
}

static void test_write_file_shows_its_size_target_and_content(void **state)
{
    const char *in = "{\"path\":\"/tmp/new.txt\",\"content\":\"line one\\nSECRET-PAYLOAD-LINE\\n\"}";

    (void)state;
    assert_int_equal(plain("write_file", in, 0, false), 0);
    assert_string_equal(out, "* write_file\n"
                             "  path: /tmp/new.txt (a new file)\n"
                             "  content: 29 bytes, 2 lines\n"
                             "  | line one\n"
                             "  | SECRET-PAYLOAD-LINE\n");
    assert_int_equal(structured("write_file", in, 0), 0);
    assert_string_equal(drawn, "tool:write_file\n"
                               "field path file=new:/tmp/new.txt\n"
                               "size content 29B 2L\n"
                               "line |:line one\n"
                               "line |:SECRET-PAYLOAD-LINE\n");
    in = "{\"path\":\"/etc/old.conf\",\"content\":\"a\\n\\nb\"}";
    assert_int_equal(plain("write_file", in, 0, false), 0);
    assert_string_equal(out, "* write_file\n"
                             "  path: /etc/old.conf (replaces a file of 1234 bytes)\n"
                             "  content: 4 bytes, 3 lines (no newline at the end)\n"
                             "  | a\n  | \n  | b\n");
    assert_int_equal(structured("write_file", in, 0), 0);
    assert_string_equal(drawn, "tool:write_file\n"
                               "field path file=1234:/etc/old.conf\n"
                               "size content 4B 3L no_eol\n"
                               "line |:a\nline |:\nline |:b\n");
    /* something that is not a file: no note; an empty content */
    in = "{\"path\":\"/dev/null\",\"content\":\"\"}";
    assert_int_equal(plain("write_file", in, 0, false), 0);
    assert_string_equal(out, "* write_file\n  path: /dev/null\n  content: 0 bytes, 0 lines\n"
                             "  | (empty)\n");
    assert_int_equal(structured("write_file", in, 0), 0);
    assert_string_equal(drawn, "tool:write_file\nfield path:/dev/null\nsize content 0B 0L\n"
                               "empty |\n");
    /* no port: nothing said about the target */
    {
        struct mote_show_plain p = {to_out, NULL, false, NULL};
        struct mote_show_sink s = mote_show_plain_sink(&p);
        const char *w = "{\"path\":\"/etc/old.conf\"}";

        out_len = 0;
        assert_int_equal(mote_show_call(&js, NULL, "write_file", w, strlen(w), 0, &s), 0);
        assert_string_equal(out, "* write_file\n  path: /etc/old.conf\n");
    }
}

static void test_edit_file_is_shown_as_a_diff(void **state)
{
    const char *in = "{\"path\":\"f.txt\",\"old_string\":\"OLD-TEXT-HERE\\nkeep\","
                     "\"new_string\":\"NEW-TEXT-THERE\\nkeep\"}";

    (void)state;
    assert_int_equal(plain("edit_file", in, 0, false), 0);
    assert_string_equal(out, "* edit_file\n  path: f.txt\n"
                             "  - OLD-TEXT-HERE\n  - keep\n"
                             "  + NEW-TEXT-THERE\n  + keep\n");
    assert_int_equal(plain("edit_file", in, 0, true), 0);
    assert_non_null(strstr(out, "  \033[31m-\033[0m OLD-TEXT-HERE\n"));
    assert_non_null(strstr(out, "  \033[32m+\033[0m NEW-TEXT-THERE\n"));
    assert_int_equal(structured("edit_file", in, 0), 0);
    assert_string_equal(drawn, "tool:edit_file\nfield path:f.txt\n"
                               "line -:OLD-TEXT-HERE\nline -:keep\n"
                               "line +:NEW-TEXT-THERE\nline +:keep\n");
    /* an edit that removes everything it names */
    in = "{\"path\":\"f.txt\",\"old_string\":\"gone\",\"new_string\":\"\"}";
    assert_int_equal(plain("edit_file", in, 0, false), 0);
    assert_string_equal(out, "* edit_file\n  path: f.txt\n  - gone\n  + (empty)\n");
}

static char big[300000];

/* {"path": "/tmp/long.txt", "content": rows} with `rows` lines "row NNN" */
static const char *long_write(int rows)
{
    size_t k = (size_t)snprintf(big, sizeof(big), "{\"path\":\"/tmp/long.txt\",\"content\":\"");
    int i;

    for (i = 0; i < rows; i++)
        k += (size_t)snprintf(big + k, sizeof(big) - k, "row %03d\\n", i);
    snprintf(big + k, sizeof(big) - k, "\"}");
    return big;
}

static void test_a_long_text_shows_head_and_tail_and_all_on_request(void **state)
{
    const char *in = long_write(200);
    char row[32];
    int i;

    (void)state;
    assert_int_equal(plain("write_file", in, 0, false), 1);
    for (i = 0; i < 200; i++) {
        snprintf(row, sizeof(row), "  | row %03d\n", i);
        if (i < 30 || i >= 190)
            assert_non_null(strstr(out, row));
        else
            assert_null(strstr(out, row));
    }
    assert_non_null(strstr(out, "  | row 029\n  ... 1280 bytes (160 lines) not shown here: answer "
                                "v to see all of it ...\n  | row 190\n"));
    assert_int_equal(plain("write_file", in, MOTE_SHOW_WHOLE, false), 0);
    for (i = 0; i < 200; i++) {
        snprintf(row, sizeof(row), "  | row %03d\n", i);
        assert_non_null(strstr(out, row));
    }
    assert_null(strstr(out, "not shown"));
    assert_int_equal(structured("write_file", in, 0), 1);
    assert_non_null(strstr(drawn, "line |:row 029\ngap 1280B 160L\nline |:row 190\n"));
    assert_null(strstr(drawn, "row 030"));
    {
        struct mote_jw w; /* (more JSON values than the reader here holds) */

        out_len = 0;
        mote_jw_init(&w, to_out, NULL);
        assert_int_equal(mote_show_call_json(&js, &port, "write_file", in, strlen(in),
                                             MOTE_SHOW_WHOLE, &w), 0);
        assert_non_null(strstr(out, "{\"kind\":\"line\",\"mark\":\"|\",\"text\":[\"row 100\"]}"));
        assert_null(strstr(out, "gap"));
        assert_non_null(strstr(out, "],\"cut\":false}"));
    }
    /* 60 lines are shown whole, 61 are cut */
    assert_int_equal(plain("write_file", long_write(60), 0, false), 0);
    assert_int_equal(plain("write_file", long_write(61), 0, false), 1);
    assert_non_null(strstr(out, "(21 lines) not shown"));
}

static void test_a_long_line_is_cut_at_whole_characters(void **state)
{
    size_t k;
    int i;
    uint64_t shown = 0;
    char *g;

    (void)state;
    /* one line of 5,000 three-byte characters (15,000 bytes) */
    k = (size_t)snprintf(big, sizeof(big), "{\"command\":\"");
    for (i = 0; i < 5000; i++)
        k += (size_t)snprintf(big + k, sizeof(big) - k, "\xe2\x82\xac");
    snprintf(big + k, sizeof(big) - k, "\"}");
    assert_int_equal(plain("shell", big, 0, false), 1);
    /* head: 1024 whole characters (3,072 bytes); tail: 341 (1,023 bytes) */
    g = strstr(out, "  ... ");
    assert_non_null(g);
    assert_true(strncmp(g, "  ... 10905 bytes (0 lines) not shown here", 42) == 0);
    for (i = 0; out[i] != '\0'; i++)
        shown += ((unsigned char)out[i] & 0xC0u) != 0x80u && (unsigned char)out[i] == 0xE2;
    assert_int_equal(shown, 1024 + 341);
    assert_int_equal(structured("shell", big, 0), 1);
    assert_non_null(strstr(drawn, "gap 10905B 0L\n"));
}

static void test_ambiguous_inputs_are_marked(void **state)
{
    const char *in = "{\"command\":\"echo FIRST\",\"command\":\"echo LAST\"}";

    (void)state;
    assert_int_equal(plain("shell", in, 0, false), 0);
    assert_string_equal(out, "* shell\n  ! this input is ambiguous: duplicate key \"command\"\n"
                             "  | echo FIRST\n  | echo LAST\n");
    assert_int_equal(structured("shell", in, 0), 0);
    assert_string_equal(drawn, "tool:shell\nwarn:duplicate key \"command\"\n"
                               "line |:echo FIRST\nline |:echo LAST\n");
    in = "{\"command\":\"rm -rf /tmp/x\\u0000 /\"}";
    assert_int_equal(plain("shell", in, 0, false), 0);
    assert_string_equal(out, "* shell\n  ! this input is ambiguous: a NUL (\\u0000) in member "
                             "\"command\"\n  | rm -rf /tmp/x^@ /\n");
}

static void test_inputs_that_are_not_objects(void **state)
{
    (void)state;
    assert_int_equal(plain("shell", "[1,2]", 0, false), 0);
    assert_string_equal(out, "* shell\n  | [1,2]\n");
    assert_int_equal(plain("shell", "not json\n\033[2Jline 2", 0, false), 0);
    assert_string_equal(out, "* shell\n  | not json\n  | ^[[2Jline 2\n");
    assert_int_equal(structured("shell", "not json\n\033[2Jline 2", 0), 0);
    assert_string_equal(drawn, "tool:shell\nline |:not json\nline |:[[^[]][2Jline 2\n");
    assert_int_equal(plain("shell", "", 0, false), 0);
    assert_string_equal(out, "* shell\n  | (empty)\n");
    assert_int_equal(plain("shell", "{}", 0, false), 0);
    assert_string_equal(out, "* shell\n  (no input)\n");
    assert_int_equal(structured("shell", "{}", 0), 0);
    assert_string_equal(drawn, "tool:shell\nno_input\n");
}

static void test_long_strings_of_other_members_are_texts(void **state)
{
    char in[400];

    (void)state;
    snprintf(in, sizeof(in), "{\"query\":\"%0150d\",\"two\":\"a\\nb\"}", 7);
    assert_int_equal(plain("search", in, 0, false), 0);
    assert_non_null(strstr(out, "  query: 150 bytes, 1 line (no newline at the end)\n  | 000"));
    assert_non_null(strstr(out, "  two: 3 bytes, 2 lines (no newline at the end)\n  | a\n  | b\n"));
    assert_int_equal(structured("search", in, 0), 0);
    assert_non_null(strstr(drawn, "size two 3B 2L no_eol\nline |:a\nline |:b\n"));
}

static void test_a_failing_sink_stops_the_display(void **state)
{
    struct mote_show_plain p = {to_out, NULL, false, NULL};
    struct mote_show_sink s = mote_show_plain_sink(&p);
    const char *in = long_write(100);
    int n;

    (void)state;
    for (n = 0; n < 40; n++) {
        fail_after = n;
        out_len = 0;
        assert_int_equal(mote_show_call(&js, NULL, "write_file", in, strlen(in), 0, &s),
                         MOTE_ERR_IO);
    }
    fail_after = -1;
}

static void test_the_json_form_is_bounded_by_its_writer(void **state)
{
    struct mote_jw w;
    const char *in = long_write(20);

    (void)state;
    /* a writer whose sink refuses: the display stops with its error */
    fail_after = 3;
    out_len = 0;
    mote_jw_init(&w, to_out, NULL);
    assert_true(mote_show_call_json(&js, NULL, "write_file", in, strlen(in), 0, &w) < 0);
    assert_true(w.err < 0);
    fail_after = -1;
}

static void test_text_made_safe(void **state)
{
    char line[32];

    (void)state;
    out_len = 0;
    assert_int_equal(mote_show_text(to_out, NULL, "a\r\nb\033[31m\tc\n", 12, MOTE_SHOW_TEXT),
                     '\n');
    assert_string_equal(out, "a\nb^[[31m\tc\n");
    out_len = 0;
    assert_int_equal(mote_show_text(to_out, NULL, "x\xc2\x9b\xe2\x80\xae", 6, MOTE_SHOW_TEXT),
                     0xAE);
    assert_string_equal(out, "x<U+009B>\xe2\x80\xae"); /* U+202E shown only in EXACT */
    out_len = 0;
    assert_int_equal(mote_show_text(to_out, NULL, "x\xe2\x80\xae\n\r", 6, MOTE_SHOW_EXACT), 'M');
    assert_string_equal(out, "x<U+202E>^J^M");
    out_len = 0;
    assert_int_equal(mote_show_text(to_out, NULL, "", 0, MOTE_SHOW_TEXT), 0);
    assert_int_equal(out_len, 0);
    assert_int_equal(mote_show_line(line, sizeof(line), "a\nb\tc\r\nd\001", 9), 9);
    assert_string_equal(line, "a b c d^A");
    /* cut at a whole character */
    assert_int_equal(mote_show_line(line, 5, "ab\xe2\x82\xac", 5), 2);
    assert_string_equal(line, "ab");
    assert_int_equal(mote_show_line(line, 0, "ab", 2), 0);
}

static void test_a_summary_is_one_safe_line(void **state)
{
    char s[128];
    size_t k;
    int i;

    (void)state;
    mote_show_summary(&js, "{\"command\":\"ls -la\\n\\u001b[2J\"}", 31, s, sizeof(s));
    assert_string_equal(s, "ls -la ^[[2J");
    mote_show_summary(&js, "{\"path\":\"/etc/x\",\"content\":\"...\"}", 33, s, sizeof(s));
    assert_string_equal(s, "/etc/x");
    mote_show_summary(&js, "{\"q\":1}", 7, s, sizeof(s));
    assert_string_equal(s, "{\"q\":1}");
    k = (size_t)snprintf(big, sizeof(big), "{\"command\":\"");
    for (i = 0; i < 100; i++)
        k += (size_t)snprintf(big + k, sizeof(big) - k, "\xc3\xa9");
    snprintf(big + k, sizeof(big) - k, "\"}");
    mote_show_summary(&js, big, strlen(big), s, sizeof(s));
    assert_int_equal(strlen(s), 96 + 3); /* 48 whole characters, then "..." */
    assert_string_equal(s + 96, "...");
    mote_show_summary(&js, big, strlen(big), s, 10);
    assert_int_equal(strlen(s), 8);
}


/* A tool's result in one line: its first line, what else it holds counted. */
static void test_a_result_is_one_safe_line(void **state)
{
    char s[160], text[5000];

    (void)state;
    assert_int_equal(mote_show_result("ok", 2, s, sizeof(s)), 2);
    assert_string_equal(s, "ok");
    mote_show_result("ok\n", 3, s, sizeof(s));
    assert_string_equal(s, "ok");
    mote_show_result("", 0, s, sizeof(s));
    assert_string_equal(s, "");
    mote_show_result("a\x1b[2Jb\nc\n\nd", 11, s, sizeof(s));
    assert_string_equal(s, "a^[[2Jb ... (4 lines, 11 bytes)");
    memset(text, 'x', sizeof(text));
    text[10] = '\n';
    mote_show_result(text, sizeof(text), s, sizeof(s));
    assert_string_equal(s, "xxxxxxxxxx ... (2 lines, 5000 bytes)");
    mote_show_result(text + 11, sizeof(text) - 11, s, sizeof(s));
    assert_int_equal(strlen(s), 99); /* a first line cut, one line in all */
    assert_true(mote_show_result(text, sizeof(text), s, 8) < 8);
}

/* The answer typed to the approval question. */
static void test_an_answer_typed_to_the_question(void **state)
{
    static const struct {
        const char *typed;
        bool view;
        int want;
        const char *reason;
    } cases[] = {
        {"y", false, MOTE_ANSWER_YES, NULL},       {" YES \t", false, MOTE_ANSWER_YES, NULL},
        {"a", false, MOTE_ANSWER_ALWAYS, NULL},    {"Always", false, MOTE_ANSWER_ALWAYS, NULL},
        {"", false, MOTE_ANSWER_NO, NULL},         {"  ", false, MOTE_ANSWER_NO, NULL},
        {"No", false, MOTE_ANSWER_NO, NULL},       {"n", false, MOTE_ANSWER_NO, NULL},
        {"v", true, MOTE_SHOW_VIEW, NULL},         {" View ", true, MOTE_SHOW_VIEW, NULL},
        {"v", false, MOTE_ANSWER_NO, "v"},         {"yes please", false, MOTE_ANSWER_NO, "yes please"},
        {" you should use ls ", false, MOTE_ANSWER_NO, "you should use ls"},
        {"yy", false, MOTE_ANSWER_NO, "yy"},       {"alwaysx", true, MOTE_ANSWER_NO, "alwaysx"},
    };
    char line[64];
    const char *why;
    size_t i;

    (void)state;
    for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        snprintf(line, sizeof(line), "%s", cases[i].typed);
        assert_int_equal(mote_show_answer(line, cases[i].view, &why), cases[i].want);
        if (cases[i].reason == NULL)
            assert_null(why);
        else
            assert_string_equal(why, cases[i].reason);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_blanks_hiding_a_tail_are_counted),
        cmocka_unit_test(test_a_payload_after_forty_lines_is_shown),
        cmocka_unit_test(test_control_characters_are_made_visible),
        cmocka_unit_test(test_invisible_characters_and_every_member),
        cmocka_unit_test(test_write_file_shows_its_size_target_and_content),
        cmocka_unit_test(test_edit_file_is_shown_as_a_diff),
        cmocka_unit_test(test_a_long_text_shows_head_and_tail_and_all_on_request),
        cmocka_unit_test(test_a_long_line_is_cut_at_whole_characters),
        cmocka_unit_test(test_ambiguous_inputs_are_marked),
        cmocka_unit_test(test_inputs_that_are_not_objects),
        cmocka_unit_test(test_long_strings_of_other_members_are_texts),
        cmocka_unit_test(test_a_failing_sink_stops_the_display),
        cmocka_unit_test(test_the_json_form_is_bounded_by_its_writer),
        cmocka_unit_test(test_text_made_safe),
        cmocka_unit_test(test_a_summary_is_one_safe_line),
        cmocka_unit_test(test_a_result_is_one_safe_line),
        cmocka_unit_test(test_an_answer_typed_to_the_question),
    };

    return cmocka_run_group_tests_name("show", tests, NULL, NULL);
}
