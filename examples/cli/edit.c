/*
 * edit.c - the line editor (see edit.h). One line at a time, redrawn
 * whole on every change: the prompt and the text may wrap over several
 * screen rows, so a redraw goes up to the prompt's row, clears to the end
 * of the screen and writes everything again, then puts the cursor back.
 * A newline in the text (from a paste or a `\` continuation) is shown as
 * U+21B5 so that the line stays one run of cells.
 */
#define _GNU_SOURCE
#include "edit.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct {
    bool active, started, paste_on;
    int in_fd, out_fd;
    struct termios saved;
    char buf[ED_LINE_MAX + 1];
    size_t len, pos;
    bool too_long;
    const char *prompt;
    size_t prompt_w;
    size_t rows_above; /* the cursor's row below the prompt's, last drawn */
    /* escape sequence being read */
    char esc[16];
    size_t esc_len;
    bool paste;
    /* history browsing: hist_at is the line shown (hist_n: the new one) */
    size_t hist_at;
    char draft[ED_LINE_MAX + 1]; /* the new line, kept while browsing */
    size_t draft_len;
    bool browsing;
    /* Ctrl+R */
    bool search;
    char query[256];
    size_t qlen;
    size_t hit; /* index of the history line found, or hist_n */
} ed;

/* The history: lines packed one after the other, each ending in '\0';
 * the oldest are dropped to make room. */
static struct {
    char text[ED_HISTORY_BYTES];
    size_t used;
    size_t n;
} hist;

/* ---- history ---- */

void ed_history_add(const char *line, size_t n)
{
    size_t i;

    if (n == 0 || n + 1 > sizeof(hist.text))
        return;
    if (hist.n > 0) {
        /* the same as the newest: not again */
        size_t k = hist.used - 1;

        while (k > 0 && hist.text[k - 1] != '\0')
            k--;
        if (hist.used - 1 - k == n && memcmp(hist.text + k, line, n) == 0)
            return;
    }
    while (hist.used + n + 1 > sizeof(hist.text)) {
        size_t first = strlen(hist.text) + 1;

        memmove(hist.text, hist.text + first, hist.used - first);
        hist.used -= first;
        hist.n--;
    }
    for (i = 0; i < n; i++)
        hist.text[hist.used + i] = line[i] == '\0' ? ' ' : line[i];
    hist.text[hist.used + n] = '\0';
    hist.used += n + 1;
    hist.n++;
}

/* History line `i` (0: the oldest). */
static const char *hist_line(size_t i)
{
    const char *p = hist.text;

    while (i-- > 0)
        p += strlen(p) + 1;
    return p;
}

/* ---- the screen ---- */

static void put(const char *s, size_t n)
{
    while (n > 0) {
        ssize_t w = write(ed.out_fd, s, n);

        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

static void puts_(const char *s)
{
    put(s, strlen(s));
}

static size_t width(void)
{
    struct winsize ws;

    if (ioctl(ed.out_fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    return 80;
}

static bool cont_byte(unsigned char c)
{
    return (c & 0xC0u) == 0x80u;
}

/* Cells of buf[0..n): one per character (combining and wide characters
 * are not told apart). */
static size_t cells(const char *s, size_t n)
{
    size_t i, c = 0;

    for (i = 0; i < n; i++)
        c += !cont_byte((unsigned char)s[i]);
    return c;
}

static void move(const char *dir, size_t k)
{
    char b[24];

    if (k == 0)
        return;
    snprintf(b, sizeof(b), "\033[%zu%s", k, dir);
    puts_(b);
}

/* Writes the text with what must not act on the terminal made visible. */
static void draw_text(const char *s, size_t n)
{
    size_t i, from = 0;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if (c >= 0x20 && c != 0x7f)
            continue;
        put(s + from, i - from);
        from = i + 1;
        if (c == '\n')
            puts_("\xe2\x86\xb5"); /* U+21B5 */
        else
            put(" ", 1); /* a tab or a control character: one cell */
    }
    put(s + from, n - from);
}

static void refresh(void)
{
    size_t w = width(), total, cur, rows_now;
    const char *text = ed.buf;
    size_t tlen = ed.len, tpos = ed.pos;
    char head[320];
    size_t hw = ed.prompt_w;

    if (ed.search) {
        const char *h = ed.hit < hist.n ? hist_line(ed.hit) : "";

        snprintf(head, sizeof(head), "(search)'%.*s': ", (int)ed.qlen, ed.query);
        hw = cells(head, strlen(head));
        text = h;
        tlen = strlen(h);
        tpos = tlen;
    }
    move("A", ed.rows_above);
    puts_("\r\033[J");
    if (ed.search)
        puts_(head);
    else
        puts_(ed.prompt);
    draw_text(text, tlen);
    total = hw + cells(text, tlen);
    cur = hw + cells(text, tpos);
    if (total > 0 && total % w == 0)
        puts_("\r\n"); /* out of the pending wrap, to the next row's start */
    rows_now = total / w;
    move("A", rows_now - cur / w);
    puts_("\r");
    move("C", cur % w);
    ed.rows_above = cur / w;
}

/* ---- the terminal ---- */

int ed_enter(int in_fd, int out_fd)
{
    struct termios t;

    if (ed.active)
        return 0;
    if (tcgetattr(in_fd, &ed.saved) < 0)
        return -1;
    t = ed.saved;
    t.c_lflag &= ~(tcflag_t)(ICANON | ECHO | IEXTEN);
    t.c_iflag &= ~(tcflag_t)(IXON | ICRNL | INLCR);
    t.c_cc[VMIN] = 1;
    t.c_cc[VTIME] = 0;
    if (tcsetattr(in_fd, TCSANOW, &t) < 0)
        return -1;
    ed.in_fd = in_fd;
    ed.out_fd = out_fd;
    ed.active = true;
    return 0;
}

void ed_leave(void)
{
    if (!ed.active)
        return;
    if (ed.paste_on)
        puts_("\033[?2004l");
    ed.paste_on = false;
    (void)tcsetattr(ed.in_fd, TCSANOW, &ed.saved);
    ed.active = false;
}

bool ed_active(void)
{
    return ed.active;
}

bool ed_started(void)
{
    return ed.started;
}

void ed_start(const char *prompt, size_t w)
{
    ed.prompt = prompt;
    ed.prompt_w = w;
    ed.len = ed.pos = 0;
    ed.too_long = false;
    ed.rows_above = 0;
    ed.esc_len = 0;
    ed.paste = false;
    ed.browsing = false;
    ed.search = false;
    ed.hist_at = hist.n;
    ed.started = true;
    puts_(prompt);
    if (!ed.paste_on)
        puts_("\033[?2004h"); /* after the prompt: what is before it stays as it was */
    ed.paste_on = true;
}

/* ---- editing ---- */

static void insert(const char *s, size_t n)
{
    if (ed.too_long || ed.len + n > ED_LINE_MAX) {
        ed.too_long = true; /* refused whole at Enter */
        return;
    }
    memmove(ed.buf + ed.pos + n, ed.buf + ed.pos, ed.len - ed.pos);
    memcpy(ed.buf + ed.pos, s, n);
    ed.len += n;
    ed.pos += n;
}

static size_t prev_char(size_t at)
{
    while (at > 0 && cont_byte((unsigned char)ed.buf[--at]))
        ;
    return at;
}

static size_t next_char(size_t at)
{
    if (at < ed.len)
        at++;
    while (at < ed.len && cont_byte((unsigned char)ed.buf[at]))
        at++;
    return at;
}

static void cut(size_t from, size_t to)
{
    memmove(ed.buf + from, ed.buf + to, ed.len - to);
    ed.len -= to - from;
    if (ed.pos > to)
        ed.pos -= to - from;
    else if (ed.pos > from)
        ed.pos = from;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n';
}

static void set_text(const char *s, size_t n)
{
    if (n > ED_LINE_MAX)
        n = ED_LINE_MAX;
    memcpy(ed.buf, s, n);
    ed.len = ed.pos = n;
}

static void recall(int dir)
{
    if (dir < 0 && ed.hist_at == 0)
        return;
    if (dir > 0 && ed.hist_at >= hist.n)
        return;
    if (!ed.browsing) {
        memcpy(ed.draft, ed.buf, ed.len);
        ed.draft_len = ed.len;
        ed.browsing = true;
    }
    ed.hist_at = dir < 0 ? ed.hist_at - 1 : ed.hist_at + 1;
    if (ed.hist_at == hist.n) {
        set_text(ed.draft, ed.draft_len);
        ed.browsing = false;
    } else {
        const char *h = hist_line(ed.hist_at);

        set_text(h, strlen(h));
    }
}

/* Ctrl+R: the newest history line before `from` holding the query. */
static void search_from(size_t from)
{
    size_t i = from;

    while (i-- > 0) {
        if (ed.qlen == 0 || memmem(hist_line(i), strlen(hist_line(i)), ed.query, ed.qlen) != NULL) {
            ed.hit = i;
            return;
        }
    }
    put("\a", 1); /* nothing older: the hit stays */
}

static void search_end(bool keep)
{
    if (keep && ed.hit < hist.n) {
        const char *h = hist_line(ed.hit);

        set_text(h, strlen(h));
        ed.hist_at = ed.hit;
    }
    ed.search = false;
}

static enum ed_result finish_line(char *out, size_t *len)
{
    ed.pos = ed.len;
    refresh();
    puts_("\r\n");
    ed.started = false;
    ed.rows_above = 0;
    if (ed.too_long)
        return ED_REFUSED;
    memcpy(out, ed.buf, ed.len);
    out[ed.len] = '\0';
    *len = ed.len;
    return ED_LINE;
}

/* An escape sequence is complete: act on it. */
static void escape(void)
{
    const char *s = ed.esc + 1; /* after ESC */
    size_t n = ed.esc_len - 1;

#define IS(lit) (n == sizeof(lit) - 1 && memcmp(s, lit, n) == 0)
    if (IS("[200~")) {
        ed.paste = true;
        return;
    }
    if (IS("[201~")) {
        ed.paste = false;
        refresh();
        return;
    }
    if (ed.search)
        search_end(true);
    if (IS("[A") || IS("OA"))
        recall(-1);
    else if (IS("[B") || IS("OB"))
        recall(1);
    else if (IS("[C") || IS("OC"))
        ed.pos = next_char(ed.pos);
    else if (IS("[D") || IS("OD"))
        ed.pos = prev_char(ed.pos);
    else if (IS("[H") || IS("OH") || IS("[1~") || IS("[7~"))
        ed.pos = 0;
    else if (IS("[F") || IS("OF") || IS("[4~") || IS("[8~"))
        ed.pos = ed.len;
    else if (IS("[3~"))
        cut(ed.pos, next_char(ed.pos));
    else if (IS("b") || IS("[1;5D")) { /* Alt+B, Ctrl+Left: a word back */
        while (ed.pos > 0 && is_space(ed.buf[ed.pos - 1]))
            ed.pos--;
        while (ed.pos > 0 && !is_space(ed.buf[ed.pos - 1]))
            ed.pos--;
    } else if (IS("f") || IS("[1;5C")) { /* Alt+F, Ctrl+Right: a word on */
        while (ed.pos < ed.len && is_space(ed.buf[ed.pos]))
            ed.pos++;
        while (ed.pos < ed.len && !is_space(ed.buf[ed.pos]))
            ed.pos++;
    }
#undef IS
    refresh();
}

/* True when the sequence in ed.esc is complete. */
static bool esc_done(void)
{
    char last = ed.esc[ed.esc_len - 1];

    if (ed.esc_len < 2)
        return false;
    if (ed.esc[1] == '[')
        return ed.esc_len > 2 && last >= 0x40 && last <= 0x7e;
    if (ed.esc[1] == 'O')
        return ed.esc_len == 3;
    return true; /* Alt+key */
}

enum ed_result ed_feed(const char *in, size_t n, size_t *used, char *out, size_t *len)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];

        if (ed.esc_len > 0) {
            if (ed.esc_len < sizeof(ed.esc))
                ed.esc[ed.esc_len++] = (char)c;
            if (esc_done() || ed.esc_len == sizeof(ed.esc)) {
                escape();
                ed.esc_len = 0;
            }
            continue;
        }
        if (c == 0x1b) {
            ed.esc[0] = (char)c;
            ed.esc_len = 1;
            continue;
        }
        if (ed.paste) {
            /* Pasted: text, newlines and tabs kept, nothing acts. */
            if (c == '\r' || c == '\n') {
                /* "\r\n" is one newline */
                if (!(c == '\n' && ed.pos > 0 && ed.buf[ed.pos - 1] == '\n' && i > 0 &&
                      in[i - 1] == '\r'))
                    insert("\n", 1);
            } else if (c >= 0x20 || c == '\t') {
                insert((const char *)&c, 1);
            }
            continue; /* drawn once, at the paste's end */
        }
        if (ed.search) {
            if (c >= 0x20 && c != 0x7f) {
                if (ed.qlen < sizeof(ed.query))
                    ed.query[ed.qlen++] = (char)c;
                search_from(ed.hit < hist.n ? ed.hit + 1 : hist.n);
                refresh();
                continue;
            }
            if (c == 0x12) { /* Ctrl+R again: an older one */
                search_from(ed.hit < hist.n ? ed.hit : hist.n);
                refresh();
                continue;
            }
            if (c == 0x7f || c == 0x08) {
                if (ed.qlen > 0)
                    ed.qlen--;
                refresh();
                continue;
            }
            if (c == 0x07) { /* Ctrl+G: back to the line as it was */
                search_end(false);
                refresh();
                continue;
            }
            search_end(true); /* any other key takes the line found, then acts */
        }
        switch (c) {
        case '\r':
        case '\n':
            if (c == '\n' && i > 0 && in[i - 1] == '\r')
                break; /* "\r\n" from a terminal that sends both */
            if (ed.len > 0 && ed.buf[ed.len - 1] == '\\' && ed.pos == ed.len) {
                ed.buf[ed.len - 1] = '\n'; /* continued on the next line */
                refresh();
                break;
            }
            *used = i + 1;
            return finish_line(out, len);
        case 0x01: /* Ctrl+A */
            ed.pos = 0;
            break;
        case 0x05: /* Ctrl+E */
            ed.pos = ed.len;
            break;
        case 0x02: /* Ctrl+B */
            ed.pos = prev_char(ed.pos);
            break;
        case 0x06: /* Ctrl+F */
            ed.pos = next_char(ed.pos);
            break;
        case 0x0b: /* Ctrl+K */
            ed.len = ed.pos;
            break;
        case 0x15: /* Ctrl+U */
            cut(0, ed.pos);
            break;
        case 0x17: { /* Ctrl+W: the word before the cursor */
            size_t from = ed.pos;

            while (from > 0 && is_space(ed.buf[from - 1]))
                from--;
            while (from > 0 && !is_space(ed.buf[from - 1]))
                from--;
            cut(from, ed.pos);
            break;
        }
        case 0x7f:
        case 0x08: /* Backspace */
            cut(prev_char(ed.pos), ed.pos);
            break;
        case 0x04: /* Ctrl+D */
            if (ed.len == 0) {
                *used = i + 1;
                puts_("\r\n");
                ed.started = false;
                return ED_EOF;
            }
            cut(ed.pos, next_char(ed.pos));
            break;
        case 0x10: /* Ctrl+P */
            recall(-1);
            break;
        case 0x0e: /* Ctrl+N */
            recall(1);
            break;
        case 0x12: /* Ctrl+R */
            ed.search = true;
            ed.qlen = 0;
            ed.hit = hist.n;
            search_from(hist.n);
            break;
        case 0x0c: /* Ctrl+L */
            puts_("\033[H\033[2J");
            ed.rows_above = 0;
            break;
        case '\t':
            insert("\t", 1);
            break;
        default:
            if (c >= 0x20)
                insert((const char *)&c, 1);
            else
                continue; /* other control keys: nothing */
        }
        if (i + 1 == n || (c < 0x20 || c == 0x7f))
            refresh();
    }
    *used = n;
    return ED_MORE;
}
