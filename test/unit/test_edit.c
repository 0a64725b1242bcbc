/* test_edit.c - the line editor (mote_edit.h), its output read by a small
 * terminal emulator: what the screen shows, where the cursor is, and the
 * line handed back. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "mote/mote_edit.h"

/* ---- a terminal: a grid of cells, a cursor, the pending wrap ---- */

#define ROWS 40
#define COLS 200

static struct term {
    unsigned cols;
    char cell[ROWS][COLS][8]; /* the UTF-8 of each cell ("" : empty; a wide
                               * character's second cell holds "\1") */
    unsigned r, c;
    int pending;
    char seq[32];
    size_t seq_len;
    unsigned char u[4];
    size_t u_len, u_need;
    char raw[1 << 16]; /* every byte written */
    size_t raw_len;
    unsigned bells;
} t;

static struct mote_edit ed;

/* The emulator's own idea of widths (a few ranges, not the library's). */
static unsigned width_of(uint32_t cp)
{
    if ((cp >= 0x300 && cp <= 0x36F) || cp == 0x200D)
        return 0;
    if ((cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3040 && cp <= 0x30FF) ||
        (cp >= 0x1F600 && cp <= 0x1F64F) || (cp >= 0xAC00 && cp <= 0xD7A3))
        return 2;
    return 1;
}

static void clear_from_cursor(void)
{
    unsigned r, c;

    for (r = t.r; r < ROWS; r++)
        for (c = (r == t.r ? t.c : 0); c < COLS; c++)
            t.cell[r][c][0] = '\0';
}

/* Past the last row: everything moves up one. */
static void scroll(void)
{
    while (t.r >= ROWS) {
        memmove(t.cell[0], t.cell[1], sizeof(t.cell) - sizeof(t.cell[0]));
        memset(t.cell[ROWS - 1], 0, sizeof(t.cell[0]));
        t.r--;
    }
}

static void put_char(const unsigned char *u, size_t n, uint32_t cp)
{
    unsigned w = width_of(cp);

    if (w == 0) { /* a mark: on the cell before */
        unsigned c = t.pending ? t.c : (t.c > 0 ? t.c - 1 : 0);

        if (t.cell[t.r][c][0] == '\1' && c > 0)
            c--;
        strncat(t.cell[t.r][c], (const char *)u, n);
        return;
    }
    if (t.pending) {
        t.r++, t.c = 0, t.pending = 0;
    }
    if (t.c + w > t.cols) {
        t.r++, t.c = 0;
    }
    scroll();
    memcpy(t.cell[t.r][t.c], u, n);
    t.cell[t.r][t.c][n] = '\0';
    if (w == 2)
        strcpy(t.cell[t.r][t.c + 1], "\1");
    t.c += w;
    if (t.c >= t.cols) {
        t.c = t.cols - 1;
        t.pending = 1;
    }
}

static void csi(void)
{
    char final = t.seq[t.seq_len - 1];
    unsigned n = 0;
    size_t i;

    for (i = 1; i + 1 < t.seq_len; i++)
        if (t.seq[i] >= '0' && t.seq[i] <= '9')
            n = n * 10 + (unsigned)(t.seq[i] - '0');
    if (t.seq[2] == '?')
        return; /* modes: bracketed paste */
    if (n == 0)
        n = 1;
    t.pending = 0;
    switch (final) {
    case 'A':
        t.r = t.r >= n ? t.r - n : 0;
        break;
    case 'B':
        t.r += n;
        break;
    case 'C':
        t.c = t.c + n < t.cols ? t.c + n : t.cols - 1;
        break;
    case 'D':
        t.c = t.c >= n ? t.c - n : 0;
        break;
    case 'J':
        if (t.seq[2] == '2')
            memset(t.cell, 0, sizeof(t.cell));
        else
            clear_from_cursor();
        break;
    case 'H':
        t.r = t.c = 0;
        break;
    default:
        fail_msg("unexpected sequence ESC%.*s", (int)t.seq_len, t.seq);
    }
}

static int screen(void *arg, const char *p, size_t n)
{
    size_t i;

    (void)arg;
    if (t.raw_len + n < sizeof(t.raw)) { /* the start of what was written */
        memcpy(t.raw + t.raw_len, p, n);
        t.raw_len += n;
    }
    for (i = 0; i < n; i++) {
        unsigned char b = (unsigned char)p[i];

        if (t.seq_len > 0) {
            t.seq[t.seq_len++] = (char)b;
            assert_true(t.seq_len < sizeof(t.seq));
            if (t.seq_len > 2 && b >= 0x40 && b <= 0x7e) {
                csi();
                t.seq_len = 0;
            }
            continue;
        }
        if (t.u_need > 0) {
            assert_true((b & 0xC0) == 0x80);
            t.u[t.u_len++] = b;
            if (t.u_len == t.u_need + 1) {
                uint32_t cp = t.u[0] & (0x3F >> t.u_need);
                size_t k;

                for (k = 1; k < t.u_len; k++)
                    cp = (cp << 6) | (t.u[k] & 0x3F);
                put_char(t.u, t.u_len, cp);
                t.u_need = 0;
            }
            continue;
        }
        switch (b) {
        case 0x1b:
            t.seq[0] = 0x1b;
            t.seq_len = 1;
            break;
        case '\r':
            t.c = 0, t.pending = 0;
            break;
        case '\n':
            t.r++, t.pending = 0;
            scroll();
            break;
        case '\a':
            t.bells++;
            break;
        default:
            /* Nothing else may reach the screen raw: no control
             * character, no C1, only valid UTF-8. */
            assert_true(b >= 0x20 && b != 0x7f);
            if (b < 0x80) {
                put_char(&b, 1, b);
            } else {
                assert_true(b >= 0xC2 && b <= 0xF4);
                t.u[0] = b;
                t.u_len = 1;
                t.u_need = b >= 0xF0 ? 3 : b >= 0xE0 ? 2 : 1;
            }
        }
    }
    return 0;
}

/* The text of screen row `r` (wide characters' second cells left out). */
static const char *row(unsigned r)
{
    static char b[COLS * 8];
    unsigned c;

    b[0] = '\0';
    for (c = 0; c < t.cols; c++)
        if (t.cell[r][c][0] != '\1')
            strcat(b, t.cell[r][c][0] ? t.cell[r][c] : " ");
    for (c = (unsigned)strlen(b); c > 0 && b[c - 1] == ' '; c--)
        b[c - 1] = '\0';
    return b;
}

static void term_reset(unsigned cols)
{
    memset(&t, 0, sizeof(t));
    t.cols = cols;
    mote_edit_init(&ed, screen, NULL);
    mote_edit_set_width(&ed, cols);
}

static enum mote_edit_result feed(const char *s)
{
    size_t used = 0;
    enum mote_edit_result r = mote_edit_feed(&ed, s, strlen(s), &used);

    if (r == MOTE_EDIT_MORE)
        assert_int_equal(used, strlen(s));
    return r;
}

static const char *line_of(void)
{
    size_t len;
    const char *l = mote_edit_line(&ed, &len);

    assert_int_equal(strlen(l), len);
    return l;
}

/* Keys `in` end the line being edited: it is `want`. */
static void keys_send(const char *in, const char *want)
{
    assert_int_equal(feed(in), MOTE_EDIT_LINE);
    assert_string_equal(line_of(), want);
}

/* Keys `in` leave the line still being edited, row r showing `want`. */
static void keys_show(const char *in, unsigned r, const char *want)
{
    assert_int_equal(feed(in), MOTE_EDIT_MORE);
    assert_string_equal(row(r), want);
}

/* ---- tests ---- */

static void test_typing_and_keys(void **state)
{
    (void)state;
    term_reset(80);
    mote_edit_start(&ed, "> ", 2);
    assert_true(mote_edit_started(&ed));
    assert_int_equal(feed("world"), MOTE_EDIT_MORE);
    keys_show("\x01hello \x05!", 0, "> hello world!"); /* Ctrl+A, text, Ctrl+E */
    assert_int_equal(t.c, 2 + 12);
    assert_int_equal(feed("\x1b[D\x1b[D\x1b[D"), MOTE_EDIT_MORE); /* Left x3 */
    assert_int_equal(t.c, 2 + 9);
    keys_show("\x0b", 0, "> hello wor"); /* Ctrl+K */
    keys_show("\x17", 0, "> hello"); /* Ctrl+W */
    keys_show("\x1b[H\x1b[3~\x1b[F", 0, "> ello"); /* Home, Delete, End */
    keys_show("\x1b" "b" "\x15", 0, "> ello"); /* Alt+B, Ctrl+U */
    keys_show("y \x7f", 0, "> yello"); /* Backspace */
    keys_send("\r", "yello ");
    assert_false(mote_edit_started(&ed));
    /* a "\n" after the "\r" of the same Enter, in the next read, is not a
     * second, empty line */
    mote_edit_start(&ed, "> ", 2);
    assert_int_equal(feed("\nnext"), MOTE_EDIT_MORE);
    keys_send("\r\n", "next");
}

/* Wide characters take two cells, marks none; the cursor moves over a
 * character with its marks; a wide character that does not fit at a
 * row's end goes to the next row, as the terminal puts it. */
static void test_wide_and_combining(void **state)
{
    (void)state;
    term_reset(10);
    mote_edit_start(&ed, "> ", 2);
    /* e + U+0301, then four CJK: 2 + 1 + 8 = 11 cells, two rows */
    assert_int_equal(feed("e\xcc\x81\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c"),
                     MOTE_EDIT_MORE);
    assert_string_equal(row(0), "> e\xcc\x81\xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96");
    assert_string_equal(row(1), "\xe7\x95\x8c");
    assert_int_equal(t.r, 1);
    assert_int_equal(t.c, 2);
    assert_int_equal(feed("\x1b[D"), MOTE_EDIT_MORE); /* Left over the last CJK */
    assert_int_equal(t.r, 1);
    assert_int_equal(t.c, 0);
    assert_int_equal(feed("\x1b[D\x1b[D\x1b[D\x1b[D"), MOTE_EDIT_MORE); /* to the e with its mark */
    assert_int_equal(t.r, 0);
    assert_int_equal(t.c, 2);
    /* Delete: the e and its mark */
    keys_show("\x1b[3~", 0, "> \xe4\xbd\xa0\xe5\xa5\xbd\xe4\xb8\x96\xe7\x95\x8c");
    assert_string_equal(row(1), "");
    /* 2 + 8 = 10 cells: the row is full, the cursor waits at the next row */
    assert_int_equal(feed("\x05"), MOTE_EDIT_MORE);
    assert_int_equal(t.r, 1);
    assert_int_equal(t.c, 0);
    /* one narrow character more, then a wide one at the last cell: wraps */
    term_reset(10);
    mote_edit_start(&ed, "> ", 2);
    keys_show("abcdefg\xe4\xbd\xa0", 0, "> abcdefg");
    assert_string_equal(row(1), "\xe4\xbd\xa0");
    assert_int_equal(t.r, 1);
    assert_int_equal(t.c, 2);
    assert_int_equal(feed("\x7f"), MOTE_EDIT_MORE); /* Backspace: the whole character */
    keys_send("\r", "abcdefg");
    assert_int_equal(mote_text_cells("e\xcc\x81\xe4\xbd\xa0\xf0\x9f\x98\x80", 10), 5);
}

static void test_history_recall_and_search(void **state)
{
    (void)state;
    term_reset(80);
    mote_edit_history_add(&ed, "first", 5);
    mote_edit_history_add(&ed, "second line", 11);
    mote_edit_history_add(&ed, "second line", 11); /* not twice */
    mote_edit_history_add(&ed, "third", 5);
    mote_edit_start(&ed, "> ", 2);
    assert_int_equal(feed("draft"), MOTE_EDIT_MORE);
    keys_show("\x1b[A", 0, "> third");
    keys_show("\x1b[A\x1b[A\x1b[A\x1b[A", 0, "> first"); /* past the oldest */
    keys_show("\x1b[B\x1b[B\x1b[B", 0, "> draft"); /* back to the draft */
    keys_show("\x15\x12" "sec", 0, "(search)'sec': second line"); /* Ctrl+U, Ctrl+R sec */
    assert_int_equal(feed("\x12"), MOTE_EDIT_MORE); /* none older: a bell */
    assert_int_equal(t.bells, 1);
    keys_show("\x07", 0, ">"); /* Ctrl+G: as it was */
    assert_int_equal(feed("\x12" "fir\x05"), MOTE_EDIT_MORE); /* taken, then Ctrl+E */
    keys_send("!\r", "first!");
}

static void test_history_keeps_the_newest_that_fit(void **state)
{
    char line[1000];
    int i;

    (void)state;
    term_reset(80);
    memset(line, 'x', sizeof(line));
    for (i = 0; i < 3 * MOTE_EDIT_HISTORY_BYTES / (int)sizeof(line); i++) {
        line[0] = (char)('a' + i % 26);
        mote_edit_history_add(&ed, line, sizeof(line));
    }
    assert_true(ed.hist_used <= sizeof(ed.hist));
    assert_int_equal(ed.hist_n, MOTE_EDIT_HISTORY_BYTES / (sizeof(line) + 1));
    mote_edit_start(&ed, "> ", 2);
    assert_int_equal(feed("\x1b[A\r"), MOTE_EDIT_LINE);
    assert_int_equal(line_of()[0], 'a' + (i - 1) % 26);
}

/* A paste is one input: newlines kept ("\r\n" one), keys inside it do
 * nothing; a trailing backslash continues a typed line. */
static void test_paste_and_continuation(void **state)
{
    (void)state;
    term_reset(80);
    mote_edit_history_add(&ed, "old", 3);
    mote_edit_start(&ed, "> ", 2);
    assert_int_equal(feed("\x1b[200~one\r\ntwo\rth\x7free\x1b[A\x03\x04\x1b[201~"), MOTE_EDIT_MORE);
    assert_int_equal(feed(" \\"), MOTE_EDIT_MORE);
    assert_int_equal(feed("\r"), MOTE_EDIT_MORE); /* continued */
    keys_send("four\r", "one\ntwo\nthree \nfour");
    /* the screen shows the newlines as one visible cell each */
    assert_non_null(strstr(row(0), "one\xe2\x86\xb5two"));
}

static void test_over_the_limit_is_refused_whole(void **state)
{
    static char big[MOTE_EDIT_LINE_MAX + 100];
    size_t used;

    (void)state;
    term_reset(80);
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    mote_edit_start(&ed, "> ", 2);
    assert_int_equal(mote_edit_feed(&ed, "\x1b[200~", 6, &used), MOTE_EDIT_MORE);
    assert_int_equal(mote_edit_feed(&ed, big, sizeof(big) - 1, &used), MOTE_EDIT_MORE);
    assert_int_equal(feed("\x1b[201~\r"), MOTE_EDIT_REFUSED);
    mote_edit_start(&ed, "> ", 2);
    keys_send("small\r", "small");
}

/* Text from history (it may come from anywhere) never acts on the
 * terminal: the emulator fails on any raw control byte, C1 or invalid
 * UTF-8 reaching it. Ctrl+D on an empty line is the end of input. */
static void test_hostile_text_is_drawn_harmless(void **state)
{
    static const char evil[] = "a\x1b[2J\x07\x9b" "31m\xc2\x9b" "1m\xff\xe4\xbd" "b\x7f" "c";
    size_t used;

    (void)state;
    term_reset(40);
    mote_edit_history_add(&ed, evil, sizeof(evil) - 1);
    mote_edit_start(&ed, "> ", 2);
    assert_int_equal(feed("\x1b[A"), MOTE_EDIT_MORE);
    assert_null(strstr(t.raw, "\x1b[2J"));
    assert_string_equal(row(0), "> a [2J \xef\xbf\xbd" "31m 1m\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd" "b c");
    assert_int_equal(t.bells, 0);
    assert_int_equal(feed("\x15"), MOTE_EDIT_MORE);
    assert_int_equal(mote_edit_feed(&ed, "\x04rest", 5, &used), MOTE_EDIT_EOF);
    assert_int_equal(used, 1);
}


/* An input grown past the limit says so; emptying it (Ctrl+U) makes the
 * line usable again (it was stuck: typed text silently dropped). */
static void test_too_long_then_cleared(void **state)
{
    static char big[MOTE_EDIT_LINE_MAX + 10];
    size_t used;

    (void)state;
    term_reset(80);
    memset(big, 'b', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    mote_edit_start(&ed, "> ", 2);
    assert_int_equal(mote_edit_feed(&ed, big, sizeof(big) - 1, &used), MOTE_EDIT_MORE);
    assert_non_null(strstr(row(t.r), "too long: Enter refuses it"));
    assert_int_equal(feed("\x15" "short"), MOTE_EDIT_MORE);
    keys_send("\r", "short");
}

/* Ctrl+R with a query nothing matches: no line is shown and Enter sends
 * the line as it was (it sent the newest history line). */
static void test_failed_search_sends_nothing_else(void **state)
{
    (void)state;
    term_reset(80);
    mote_edit_history_add(&ed, "rm -rf build", 12);
    mote_edit_start(&ed, "> ", 2);
    keys_show("\x12", 0, "(search)'':");
    keys_show("xyz", 0, "(failed search)'xyz':");
    keys_send("\r", "");
    /* Backspace back to a query that matches finds it again */
    mote_edit_start(&ed, "> ", 2);
    keys_show("\x12rmx\x7f", t.r, "(search)'rm': rm -rf build");
}

/* A prompt wider than the screen (the approval question on a narrow
 * terminal) is drawn once, however the line changes. */
static void test_a_wrapping_prompt_is_drawn_once(void **state)
{
    static const char q[] = "  run it? [y/N] (a: always for this tool; other text: no, and why) ";
    unsigned r;
    int seen = 0;

    (void)state;
    term_reset(40);
    mote_edit_start(&ed, q, sizeof(q) - 1);
    assert_int_equal(feed("n\x01"), MOTE_EDIT_MORE); /* a redraw at the first key */
    assert_int_equal(feed("\x05o\x7f\x7fyes"), MOTE_EDIT_MORE);
    for (r = 0; r < ROWS; r++)
        seen += strstr(row(r), "run it?") != NULL;
    assert_int_equal(seen, 1);
    assert_string_equal(row(0), "  run it? [y/N] (a: always for this tool");
    assert_string_equal(row(1), "; other text: no, and why) yes");
}

/* Slow consoles: typing at the end writes the text alone, a cursor key a
 * short move, not the whole 20 KB line. */
static void test_small_output_per_key(void **state)
{
    static char text[20000];
    size_t before;

    (void)state;
    term_reset(80);
    memset(text, 'w', sizeof(text) - 1);
    text[sizeof(text) - 1] = '\0';
    mote_edit_start(&ed, "> ", 2);
    assert_int_equal(feed(text), MOTE_EDIT_MORE);
    t.raw_len = 0;
    assert_int_equal(feed("x"), MOTE_EDIT_MORE);
    assert_true(t.raw_len <= 4);
    before = t.raw_len;
    assert_int_equal(feed("\x1b[D"), MOTE_EDIT_MORE);
    assert_true(t.raw_len - before <= 16);
    before = t.raw_len;
    assert_int_equal(feed("\x01"), MOTE_EDIT_MORE); /* Ctrl+A: up 250 rows, one move */
    assert_true(t.raw_len - before <= 16);
    assert_int_equal(t.c, 2);
}

/* Whatever the keys, the screen after the small updates is the screen a
 * whole redraw makes (random keys, wide and combining text, three widths). */
static void test_small_updates_match_a_redraw(void **state)
{
    static const char *keys[] = {
        "a", "b c", "\xe4\xbd\xa0", "e\xcc\x81", "\xf0\x9f\x98\x80", "\x1b[D", "\x1b[C", "\x01",
        "\x05", "\x7f", "\x0b", "\x17", "\x1b[3~", "\x1b" "b", "\x1b" "f", "\x1b[A", "\x1b[B",
        "\x1b[200~x\ny\x1b[201~", "\\", "0123456789",
    };
    static char snap[ROWS][COLS * 8];
    unsigned width[] = {7, 13, 40}, w, r, sr, sc;
    uint32_t seed = 12345;
    int k;

    (void)state;
    for (w = 0; w < 3; w++) {
        term_reset(width[w]);
        mote_edit_history_add(&ed, "history \xe4\xbd\xa0 line", 16);
        mote_edit_start(&ed, "mote> ", 6);
        for (k = 0; k < 400; k++) {
            seed = seed * 1103515245u + 12345u;
            assert_int_equal(feed(keys[(seed >> 16) % (sizeof(keys) / sizeof(keys[0]))]),
                             MOTE_EDIT_MORE);
            if (k % 7 != 0)
                continue;
            for (r = 0; r < ROWS; r++)
                strcpy(snap[r], row(r));
            sr = t.r, sc = t.c;
            mote_edit_redraw(&ed, false);
            for (r = 0; r < ROWS; r++)
                assert_string_equal(snap[r], row(r));
            assert_int_equal(sr, t.r);
            assert_int_equal(sc, t.c);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_typing_and_keys),
        cmocka_unit_test(test_wide_and_combining),
        cmocka_unit_test(test_history_recall_and_search),
        cmocka_unit_test(test_history_keeps_the_newest_that_fit),
        cmocka_unit_test(test_paste_and_continuation),
        cmocka_unit_test(test_over_the_limit_is_refused_whole),
        cmocka_unit_test(test_hostile_text_is_drawn_harmless),
        cmocka_unit_test(test_too_long_then_cleared),
        cmocka_unit_test(test_failed_search_sends_nothing_else),
        cmocka_unit_test(test_a_wrapping_prompt_is_drawn_once),
        cmocka_unit_test(test_small_output_per_key),
        cmocka_unit_test(test_small_updates_match_a_redraw),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
