/*
 * edit.c - the line editor (mote_edit.h). One line at a time, redrawn
 * whole on every change: the prompt and the text may wrap over several
 * screen rows, so a redraw goes up to the prompt's row, clears to the end
 * of the screen, writes everything again and puts the cursor back. The
 * layout is computed as a terminal does it: a wide character that does
 * not fit at the end of a row goes to the next one, and a row filled to
 * its last cell leaves the cursor waiting to wrap.
 */
#include "mote/mote_edit.h"

#include <string.h>

#include "util.h"

/* ---- UTF-8 and cells ---------------------------------------------------- */

/* The code point at s[0..n) (n >= 1) and its length in *adv; an invalid
 * or incomplete sequence is one byte, returned as -1. */
static int32_t decode(const unsigned char *s, size_t n, size_t *adv)
{
    uint32_t cp;
    size_t k, need;

    *adv = 1;
    if (s[0] < 0x80)
        return s[0];
    if (s[0] >= 0xC2 && s[0] <= 0xDF)
        need = 1, cp = s[0] & 0x1Fu;
    else if (s[0] >= 0xE0 && s[0] <= 0xEF)
        need = 2, cp = s[0] & 0x0Fu;
    else if (s[0] >= 0xF0 && s[0] <= 0xF4)
        need = 3, cp = s[0] & 0x07u;
    else
        return -1;
    if (n < need + 1)
        return -1;
    for (k = 1; k <= need; k++) {
        if ((s[k] & 0xC0u) != 0x80u)
            return -1;
        cp = (cp << 6) | (s[k] & 0x3Fu);
    }
    /* overlong forms, surrogates, past U+10FFFF */
    if ((need == 2 && cp < 0x800) || (need == 3 && (cp < 0x10000 || cp > 0x10FFFF)) ||
        (cp >= 0xD800 && cp <= 0xDFFF))
        return -1;
    *adv = need + 1;
    return (int32_t)cp;
}

struct range {
    uint32_t lo, hi;
};

/* Marks drawn on the character before them, and invisible format
 * characters: no cell of their own. */
static const struct range zero_w[] = {
    {0x0300, 0x036F}, {0x0483, 0x0489}, {0x0591, 0x05BD}, {0x05BF, 0x05C7},
    {0x0610, 0x061A}, {0x064B, 0x065F}, {0x0670, 0x0670}, {0x06D6, 0x06ED},
    {0x0900, 0x0903}, {0x093A, 0x094F}, {0x0951, 0x0957}, {0x0962, 0x0963},
    {0x0E31, 0x0E31}, {0x0E34, 0x0E3A}, {0x0E47, 0x0E4E}, {0x1AB0, 0x1AFF},
    {0x1DC0, 0x1DFF}, {0x200B, 0x200F}, {0x202A, 0x202E}, {0x2060, 0x2064},
    {0x20D0, 0x20FF}, {0xFE00, 0xFE0F}, {0xFE20, 0xFE2F}, {0xFEFF, 0xFEFF},
    {0x1F3FB, 0x1F3FF}, {0xE0001, 0xE007F}, {0xE0100, 0xE01EF},
};

/* East Asian wide and full-width characters, and emoji shown wide. */
static const struct range wide[] = {
    {0x1100, 0x115F},   {0x231A, 0x231B},   {0x2329, 0x232A},   {0x23E9, 0x23EC},
    {0x23F0, 0x23F0},   {0x23F3, 0x23F3},   {0x25FD, 0x25FE},   {0x2614, 0x2615},
    {0x2648, 0x2653},   {0x267F, 0x267F},   {0x2693, 0x2693},   {0x26A1, 0x26A1},
    {0x26AA, 0x26AB},   {0x26BD, 0x26BE},   {0x26C4, 0x26C5},   {0x26CE, 0x26CE},
    {0x26D4, 0x26D4},   {0x26EA, 0x26EA},   {0x26F2, 0x26F3},   {0x26F5, 0x26F5},
    {0x26FA, 0x26FA},   {0x26FD, 0x26FD},   {0x2705, 0x2705},   {0x270A, 0x270B},
    {0x2728, 0x2728},   {0x274C, 0x274C},   {0x274E, 0x274E},   {0x2753, 0x2755},
    {0x2757, 0x2757},   {0x2795, 0x2797},   {0x27B0, 0x27B0},   {0x27BF, 0x27BF},
    {0x2B1B, 0x2B1C},   {0x2B50, 0x2B50},   {0x2B55, 0x2B55},   {0x2E80, 0x303E},
    {0x3041, 0x33FF},   {0x3400, 0x4DBF},   {0x4E00, 0x9FFF},   {0xA000, 0xA4CF},
    {0xA960, 0xA97F},   {0xAC00, 0xD7A3},   {0xF900, 0xFAFF},   {0xFE10, 0xFE19},
    {0xFE30, 0xFE6F},   {0xFF00, 0xFF60},   {0xFFE0, 0xFFE6},   {0x16FE0, 0x16FE4},
    {0x17000, 0x18CFF}, {0x1B000, 0x1B2FF}, {0x1F004, 0x1F004}, {0x1F0CF, 0x1F0CF},
    {0x1F18E, 0x1F18E}, {0x1F191, 0x1F19A}, {0x1F200, 0x1F251}, {0x1F300, 0x1F320},
    {0x1F32D, 0x1F335}, {0x1F337, 0x1F37C}, {0x1F37E, 0x1F393}, {0x1F3A0, 0x1F3CA},
    {0x1F3CF, 0x1F3D3}, {0x1F3E0, 0x1F3F0}, {0x1F3F4, 0x1F3F4}, {0x1F3F8, 0x1F3FA},
    {0x1F400, 0x1F43E}, {0x1F440, 0x1F440}, {0x1F442, 0x1F4FC}, {0x1F4FF, 0x1F53D},
    {0x1F54B, 0x1F54E}, {0x1F550, 0x1F567}, {0x1F57A, 0x1F57A}, {0x1F595, 0x1F596},
    {0x1F5A4, 0x1F5A4}, {0x1F5FB, 0x1F64F}, {0x1F680, 0x1F6C5}, {0x1F6CC, 0x1F6CC},
    {0x1F6D0, 0x1F6D2}, {0x1F6D5, 0x1F6D7}, {0x1F6DC, 0x1F6DF}, {0x1F6EB, 0x1F6EC},
    {0x1F6F4, 0x1F6FC}, {0x1F7E0, 0x1F7EB}, {0x1F7F0, 0x1F7F0}, {0x1F90C, 0x1F93A},
    {0x1F93C, 0x1F945}, {0x1F947, 0x1F9FF}, {0x1FA70, 0x1FAFF}, {0x20000, 0x2FFFD},
    {0x30000, 0x3FFFD},
};

static bool in_ranges(const struct range *r, size_t n, uint32_t cp)
{
    size_t lo = 0, hi = n;

    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;

        if (cp < r[mid].lo)
            hi = mid;
        else if (cp > r[mid].hi)
            lo = mid + 1;
        else
            return true;
    }
    return false;
}

/* Cells of code point `cp` as drawn here (-1: an invalid byte, drawn as
 * U+FFFD; controls are drawn as one visible cell). */
static unsigned cp_cells(int32_t cp)
{
    if (cp < 0)
        return 1;
    if (in_ranges(zero_w, MOTE_ARRAY_LEN(zero_w), (uint32_t)cp))
        return 0;
    if (in_ranges(wide, MOTE_ARRAY_LEN(wide), (uint32_t)cp))
        return 2;
    return 1;
}

size_t mote_text_cells(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, c = 0, adv;

    while (i < n) {
        c += cp_cells(decode(u + i, n - i, &adv));
        i += adv;
    }
    return c;
}

/* ---- history ---------------------------------------------------------------- */

void mote_edit_history_add(struct mote_edit *e, const char *line, size_t n)
{
    size_t i;

    if (n == 0 || n + 1 > sizeof(e->hist))
        return;
    if (e->hist_n > 0) {
        size_t k = e->hist_used - 1; /* the newest: not again */

        while (k > 0 && e->hist[k - 1] != '\0')
            k--;
        if (e->hist_used - 1 - k == n && memcmp(e->hist + k, line, n) == 0)
            return;
    }
    while (e->hist_used + n + 1 > sizeof(e->hist)) {
        size_t first = strlen(e->hist) + 1;

        memmove(e->hist, e->hist + first, e->hist_used - first);
        e->hist_used -= first;
        e->hist_n--;
    }
    for (i = 0; i < n; i++)
        e->hist[e->hist_used + i] = line[i] == '\0' ? ' ' : line[i];
    e->hist[e->hist_used + n] = '\0';
    e->hist_used += n + 1;
    e->hist_n++;
}

/* History line `i` (0: the oldest). */
static const char *hist_line(const struct mote_edit *e, size_t i)
{
    const char *p = e->hist;

    while (i-- > 0)
        p += strlen(p) + 1;
    return p;
}

/* ---- the screen ----------------------------------------------------------------- */

static void put(struct mote_edit *e, const char *s, size_t n)
{
    if (n > 0)
        (void)e->out(e->arg, s, n);
}

static void puts_(struct mote_edit *e, const char *s)
{
    put(e, s, strlen(s));
}

/* ESC [ k dir */
static void move(struct mote_edit *e, char dir, size_t k)
{
    char b[32];
    struct mote_sb sb;

    if (k == 0)
        return;
    mote_sb_init(&sb, b, sizeof(b));
    mote_sb_s(&sb, "\033[");
    mote_sb_u(&sb, k);
    mote_sb_n(&sb, &dir, 1);
    put(e, b, sb.len);
}

/* Where text goes on the screen: a row and a cell in it, and whether the
 * cursor waits to wrap (the row's last cell was written). */
struct at {
    size_t row, col;
};

/* A character of `cells` that does not fit in the row goes to the next
 * one (the terminal wraps before drawing it). */
static void wrap_before(struct at *a, unsigned w, unsigned cells)
{
    if (cells > 0 && a->col + cells > w) {
        a->row++;
        a->col = 0;
    }
}

static void advance(struct at *a, unsigned w, unsigned cells)
{
    wrap_before(a, w, cells);
    a->col += cells;
    if (a->col >= w) {
        a->row++;
        a->col = 0;
    }
}

/* Draws text[0..n) with what must not act on the terminal made visible,
 * and returns the screen position after it and where the character at
 * `cur` is drawn. */
static void draw_text(struct mote_edit *e, const char *text, size_t n, size_t cur, struct at *end,
                      struct at *cursor)
{
    const unsigned char *u = (const unsigned char *)text;
    size_t i = 0, from = 0, adv;

    while (i < n) {
        int32_t cp = decode(u + i, n - i, &adv);
        bool shown = cp >= 0x20 && cp != 0x7F && !(cp >= 0x80 && cp < 0xA0);
        unsigned cells = shown ? cp_cells(cp) : 1;

        if (i == cur) {
            *cursor = *end;
            wrap_before(cursor, e->cols, cells);
        }
        advance(end, e->cols, cells);
        if (!shown) {
            put(e, text + from, i - from);
            if (cp == '\n')
                puts_(e, "\xe2\x86\xb5"); /* U+21B5: a newline in the line */
            else if (cp < 0)
                puts_(e, "\xef\xbf\xbd"); /* U+FFFD: not UTF-8 */
            else
                put(e, " ", 1); /* a tab or a control character: one cell */
            from = i + adv;
        }
        i += adv;
    }
    put(e, text + from, n - from);
    if (cur >= n)
        *cursor = *end;
}

/* Where byte `upto` of the line is on the screen (the prompt before it):
 * the cell a character there is drawn in. */
static struct at locate(const struct mote_edit *e, size_t upto)
{
    const unsigned char *u = (const unsigned char *)e->buf;
    struct at a;
    size_t i = 0, adv;

    a.row = e->prompt_w / e->cols;
    a.col = e->prompt_w % e->cols;
    while (i < e->len) {
        int32_t cp = decode(u + i, e->len - i, &adv);
        bool shown = cp >= 0x20 && cp != 0x7F && !(cp >= 0x80 && cp < 0xA0);
        unsigned cells = shown ? cp_cells(cp) : 1;

        if (i >= upto) {
            wrap_before(&a, e->cols, cells);
            break;
        }
        advance(&a, e->cols, cells);
        i += adv;
    }
    return a;
}

/* From the cursor's cell `from` to `to`, by relative moves. */
static void move_cursor(struct mote_edit *e, struct at from, struct at to)
{
    if (to.row < from.row)
        move(e, 'A', from.row - to.row);
    else if (to.row > from.row)
        move(e, 'B', to.row - from.row);
    puts_(e, "\r");
    move(e, 'C', to.col);
    e->rows_above = to.row;
}

/* After writing up to a row's last cell the terminal waits to wrap:
 * "\r\n" takes the cursor to where the layout says it is. */
static void settle(struct mote_edit *e, struct at end)
{
    if (end.col == 0 && end.row > 0)
        puts_(e, "\r\n");
}

static const char too_long_note[] = " [too long: Enter refuses it, Ctrl+U clears it]";

static void refresh(struct mote_edit *e)
{
    const char *text = e->buf;
    size_t tlen = e->len, tpos = e->pos;
    struct at end = {0, 0}, cur = {0, 0}, dummy;

    move(e, 'A', e->rows_above);
    puts_(e, "\r\033[J");
    if (e->search) {
        /* the query is typed bytes: drawn as the line is, never raw */
        const char *label = e->search_failed ? "(failed search)'" : "(search)'";

        text = e->hit < e->hist_n ? hist_line(e, e->hit) : "";
        tlen = strlen(text);
        tpos = tlen;
        draw_text(e, label, strlen(label), SIZE_MAX, &end, &dummy);
        draw_text(e, e->query, e->qlen, SIZE_MAX, &end, &dummy);
        draw_text(e, "': ", 3, SIZE_MAX, &end, &dummy);
    } else {
        puts_(e, e->prompt);
        end.row = e->prompt_w / e->cols;
        end.col = e->prompt_w % e->cols;
    }
    draw_text(e, text, tlen, tpos, &end, &cur);
    if (e->too_long && !e->search)
        draw_text(e, too_long_note, sizeof(too_long_note) - 1, sizeof(too_long_note), &end,
                  &dummy);
    if (end.row > 0 || end.col > 0)
        settle(e, end);
    move_cursor(e, end, cur);
    e->dirty = e->search; /* leaving the search redraws the line */
    e->shown_len = e->len;
    e->shown_pos = e->pos;
}

/* Brings the screen up to date with as little output as it takes (a
 * console at 115,200 baud must not get the whole line per key): text
 * typed at the end is written as it is, a cursor move is a move; any
 * other change redraws the line. */
static void draw(struct mote_edit *e)
{
    if (e->dirty || e->search || e->too_long) {
        refresh(e);
        return;
    }
    if (e->len > e->shown_len && e->pos == e->len && e->shown_pos == e->shown_len) {
        const unsigned char *u = (const unsigned char *)e->buf;
        size_t i = e->shown_len, adv;

        while (i < e->len) { /* only what is written as it is */
            int32_t cp = decode(u + i, e->len - i, &adv);

            if (cp < 0x20 || cp == 0x7F || (cp >= 0x80 && cp < 0xA0))
                break;
            i += adv;
        }
        if (i < e->len) {
            refresh(e);
            return;
        }
        put(e, e->buf + e->shown_len, e->len - e->shown_len);
        {
            struct at end = locate(e, e->len);

            settle(e, end);
            e->rows_above = end.row;
        }
        e->shown_len = e->shown_pos = e->len;
        return;
    }
    if (e->len != e->shown_len) {
        refresh(e);
        return;
    }
    if (e->pos != e->shown_pos) {
        move_cursor(e, locate(e, e->shown_pos), locate(e, e->pos));
        e->shown_pos = e->pos;
    }
}

/* ---- the line ------------------------------------------------------------------ */

void mote_edit_init(struct mote_edit *e, mote_sink_fn out, void *arg)
{
    memset(e, 0, offsetof(struct mote_edit, buf));
    e->buf[0] = e->draft[0] = e->hist[0] = '\0';
    e->out = out;
    e->arg = arg;
    e->cols = 80;
}

void mote_edit_set_width(struct mote_edit *e, unsigned cols)
{
    e->cols = cols == 0 ? 80 : cols;
}

bool mote_edit_started(const struct mote_edit *e)
{
    return e->started;
}

void mote_edit_start(struct mote_edit *e, const char *prompt, size_t width)
{
    e->prompt = prompt;
    e->prompt_w = width;
    e->len = e->pos = 0;
    e->buf[0] = '\0';
    e->too_long = false;
    e->esc_len = 0;
    e->paste = false;
    e->browsing = false;
    e->search = false;
    e->hist_at = e->hist_n;
    e->started = true;
    e->dirty = false;
    e->shown_len = e->shown_pos = 0;
    /* The cursor's row after the prompt (a prompt that fills its last
     * row leaves the cursor on that row, waiting to wrap). */
    e->rows_above = width / e->cols;
    if (width % e->cols == 0 && e->rows_above > 0)
        e->rows_above--;
    puts_(e, prompt);
    if (!e->paste_on)
        puts_(e, "\033[?2004h"); /* after the prompt: what is before it stays as it was */
    e->paste_on = true;
    if (width > 0 && width % e->cols == 0)
        e->dirty = true; /* the first key redraws (out of the pending wrap) */
}

void mote_edit_end(struct mote_edit *e)
{
    if (e->paste_on)
        puts_(e, "\033[?2004l");
    e->paste_on = false;
}

void mote_edit_redraw(struct mote_edit *e, bool new_row)
{
    if (new_row) {
        puts_(e, "\r\n");
        e->rows_above = 0;
    }
    if (e->paste_on)
        puts_(e, "\033[?2004h");
    if (e->started)
        refresh(e);
}

const char *mote_edit_line(const struct mote_edit *e, size_t *len)
{
    *len = e->len;
    return e->buf;
}

static void insert(struct mote_edit *e, const char *s, size_t n)
{
    if (e->too_long || e->len + n > MOTE_EDIT_LINE_MAX) {
        if (!e->too_long)
            put(e, "\a", 1);
        e->too_long = true; /* refused whole at Enter, unless it is cleared */
        return;
    }
    if (e->pos < e->len)
        e->dirty = true; /* in the middle: what follows moves */
    memmove(e->buf + e->pos + n, e->buf + e->pos, e->len - e->pos);
    memcpy(e->buf + e->pos, s, n);
    e->len += n;
    e->pos += n;
}

static bool cont_byte(unsigned char c)
{
    return (c & 0xC0u) == 0x80u;
}

/* The code point starting at `at`, or -1. */
static int32_t cp_at(const struct mote_edit *e, size_t at, size_t *adv)
{
    return decode((const unsigned char *)e->buf + at, e->len - at, adv);
}

/* The start of the code point before `at`. */
static size_t prev_cp(const struct mote_edit *e, size_t at)
{
    size_t k = 0;

    while (at > 0 && k < 4) {
        at--;
        k++;
        if (!cont_byte((unsigned char)e->buf[at]))
            break;
    }
    return at;
}

/* A character: a code point and the marks that go with it. */
static size_t prev_char(const struct mote_edit *e, size_t at)
{
    size_t adv;

    while (at > 0) {
        at = prev_cp(e, at);
        if (at == 0 || cp_cells(cp_at(e, at, &adv)) != 0)
            break;
    }
    return at;
}

static size_t next_char(const struct mote_edit *e, size_t at)
{
    size_t adv;

    if (at >= e->len)
        return e->len;
    (void)cp_at(e, at, &adv);
    at += adv;
    while (at < e->len) {
        int32_t cp = cp_at(e, at, &adv);

        if (cp < 0 || cp_cells(cp) != 0)
            break;
        at += adv;
    }
    return at;
}

/* Removes buf[from..to); an emptied line is no longer too long. */
static void cut(struct mote_edit *e, size_t from, size_t to)
{
    if (to <= from)
        return;
    memmove(e->buf + from, e->buf + to, e->len - to);
    e->len -= to - from;
    if (e->pos > to)
        e->pos -= to - from;
    else if (e->pos > from)
        e->pos = from;
    e->dirty = true;
    if (e->len == 0)
        e->too_long = false;
}

static bool is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\n';
}

static void set_text(struct mote_edit *e, const char *s, size_t n)
{
    if (n > MOTE_EDIT_LINE_MAX)
        n = MOTE_EDIT_LINE_MAX;
    memmove(e->buf, s, n);
    e->len = e->pos = n;
    e->dirty = true;
    e->too_long = false;
}

static void recall(struct mote_edit *e, int dir)
{
    if (dir < 0 && e->hist_at == 0)
        return;
    if (dir > 0 && e->hist_at >= e->hist_n)
        return;
    if (!e->browsing) {
        memcpy(e->draft, e->buf, e->len);
        e->draft_len = e->len;
        e->browsing = true;
    }
    e->hist_at = dir < 0 ? e->hist_at - 1 : e->hist_at + 1;
    if (e->hist_at == e->hist_n) {
        set_text(e, e->draft, e->draft_len);
        e->browsing = false;
    } else {
        const char *h = hist_line(e, e->hist_at);

        set_text(e, h, strlen(h));
    }
}

static bool contains(const char *s, size_t n, const char *q, size_t qn)
{
    size_t i;

    if (qn == 0)
        return true;
    for (i = 0; i + qn <= n; i++) {
        if (s[i] == q[0] && memcmp(s + i, q, qn) == 0)
            return true;
    }
    return false;
}

/* Ctrl+R: the newest history line before `from` holding the query (an
 * empty query finds nothing). False if there is none. */
static bool search_from(struct mote_edit *e, size_t from)
{
    size_t i = from;

    if (e->qlen == 0)
        return false;
    while (i-- > 0) {
        const char *h = hist_line(e, i);

        if (contains(h, strlen(h), e->query, e->qlen)) {
            e->hit = i;
            return true;
        }
    }
    return false;
}

static void search_end(struct mote_edit *e, bool keep)
{
    if (keep && e->hit < e->hist_n) {
        const char *h = hist_line(e, e->hit);

        set_text(e, h, strlen(h));
        e->hist_at = e->hit;
    }
    e->search = false;
    e->dirty = true;
}

static enum mote_edit_result finish_line(struct mote_edit *e)
{
    e->pos = e->len;
    draw(e);
    puts_(e, "\r\n");
    e->started = false;
    e->rows_above = 0;
    if (e->too_long) {
        e->len = e->pos = 0;
        e->buf[0] = '\0';
        return MOTE_EDIT_REFUSED;
    }
    e->buf[e->len] = '\0';
    return MOTE_EDIT_LINE;
}

static void word_back(struct mote_edit *e)
{
    while (e->pos > 0 && is_space(e->buf[e->pos - 1]))
        e->pos--;
    while (e->pos > 0 && !is_space(e->buf[e->pos - 1]))
        e->pos--;
}

static void word_on(struct mote_edit *e)
{
    while (e->pos < e->len && is_space(e->buf[e->pos]))
        e->pos++;
    while (e->pos < e->len && !is_space(e->buf[e->pos]))
        e->pos++;
}

/* An escape sequence is complete: act on it. */
static void escape(struct mote_edit *e)
{
    const char *s = e->esc + 1; /* after ESC */
    size_t n = e->esc_len - 1;

#define IS(lit) (n == sizeof(lit) - 1 && memcmp(s, lit, n) == 0)
    if (IS("[200~")) {
        e->paste = true;
        return;
    }
    if (IS("[201~")) {
        e->paste = false;
        draw(e);
        return;
    }
    if (e->paste)
        return; /* a key sequence inside pasted text: nothing acts */
    if (e->search)
        search_end(e, true);
    if (IS("[A") || IS("OA"))
        recall(e, -1);
    else if (IS("[B") || IS("OB"))
        recall(e, 1);
    else if (IS("[C") || IS("OC"))
        e->pos = next_char(e, e->pos);
    else if (IS("[D") || IS("OD"))
        e->pos = prev_char(e, e->pos);
    else if (IS("[H") || IS("OH") || IS("[1~") || IS("[7~"))
        e->pos = 0;
    else if (IS("[F") || IS("OF") || IS("[4~") || IS("[8~"))
        e->pos = e->len;
    else if (IS("[3~"))
        cut(e, e->pos, next_char(e, e->pos));
    else if (IS("b") || IS("[1;5D") || IS("[1;3D"))
        word_back(e);
    else if (IS("f") || IS("[1;5C") || IS("[1;3C"))
        word_on(e);
#undef IS
    draw(e);
}

/* True when the sequence in e->esc is complete. */
static bool esc_done(const struct mote_edit *e)
{
    char last = e->esc[e->esc_len - 1];

    if (e->esc_len < 2)
        return false;
    if (e->esc[1] == '[')
        return e->esc_len > 2 && last >= 0x40 && last <= 0x7e;
    if (e->esc[1] == 'O')
        return e->esc_len == 3;
    return true; /* Alt+key */
}

/* One byte inside a paste: text, newlines and tabs kept, nothing acts,
 * other control characters dropped. */
static void paste_byte(struct mote_edit *e, unsigned char c, bool cr_before)
{
    if (c == '\r' || c == '\n') {
        if (!(c == '\n' && cr_before)) /* "\r\n" is one newline */
            insert(e, "\n", 1);
    } else if ((c >= 0x20 && c != 0x7f) || c == '\t') {
        insert(e, (const char *)&c, 1);
    }
}

/* One byte while Ctrl+R searches; false: it ended the search and acts
 * as a key of its own. A query nothing matches shows no line, and
 * taking it leaves the line as it was. */
static bool search_byte(struct mote_edit *e, unsigned char c)
{
    if (c >= 0x20 && c != 0x7f) {
        if (e->qlen < sizeof(e->query))
            e->query[e->qlen++] = (char)c;
        if (!search_from(e, e->hit < e->hist_n ? e->hit + 1 : e->hist_n)) {
            e->hit = e->hist_n;
            e->search_failed = true;
        }
    } else if (c == 0x12) { /* Ctrl+R again: an older one */
        if (!search_from(e, e->hit < e->hist_n ? e->hit : e->hist_n))
            put(e, "\a", 1); /* nothing older: the hit stays */
    } else if (c == 0x7f || c == 0x08) {
        while (e->qlen > 0 && cont_byte((unsigned char)e->query[--e->qlen]))
            ;
        e->hit = e->hist_n;
        e->search_failed = e->qlen > 0 && !search_from(e, e->hist_n);
    } else if (c == 0x07) { /* Ctrl+G: back to the line as it was */
        search_end(e, false);
    } else {
        search_end(e, true); /* any other key takes the line found, then acts */
        return false;
    }
    draw(e);
    return true;
}

enum mote_edit_result mote_edit_feed(struct mote_edit *e, const char *in, size_t n, size_t *used)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)in[i];
        bool cr_before = e->last_cr;

        e->last_cr = c == '\r';
        if (e->esc_len > 0) {
            if (e->esc_len < sizeof(e->esc))
                e->esc[e->esc_len++] = (char)c;
            if (esc_done(e) || e->esc_len == sizeof(e->esc)) {
                escape(e);
                e->esc_len = 0;
            }
            continue;
        }
        if (c == 0x1b) {
            e->esc[0] = (char)c;
            e->esc_len = 1;
            continue;
        }
        if (e->paste) {
            paste_byte(e, c, cr_before);
            continue; /* drawn once, at the paste's end */
        }
        if (e->search && search_byte(e, c))
            continue;
        switch (c) {
        case '\r':
        case '\n':
            if (c == '\n' && cr_before)
                break; /* "\r\n" from a terminal that sends both */
            if (e->len > 0 && e->buf[e->len - 1] == '\\' && e->pos == e->len) {
                e->buf[e->len - 1] = '\n'; /* continued on the next line */
                e->dirty = true;
                break;
            }
            *used = i + 1;
            return finish_line(e);
        case 0x01: /* Ctrl+A */
            e->pos = 0;
            break;
        case 0x05: /* Ctrl+E */
            e->pos = e->len;
            break;
        case 0x02: /* Ctrl+B */
            e->pos = prev_char(e, e->pos);
            break;
        case 0x06: /* Ctrl+F */
            e->pos = next_char(e, e->pos);
            break;
        case 0x0b: /* Ctrl+K */
            cut(e, e->pos, e->len);
            break;
        case 0x15: /* Ctrl+U */
            cut(e, 0, e->pos);
            break;
        case 0x17: { /* Ctrl+W: the word before the cursor */
            size_t to = e->pos;

            word_back(e);
            cut(e, e->pos, to);
            break;
        }
        case 0x7f:
        case 0x08: /* Backspace */
            cut(e, prev_char(e, e->pos), e->pos);
            break;
        case 0x04: /* Ctrl+D */
            if (e->len == 0) {
                *used = i + 1;
                puts_(e, "\r\n");
                e->started = false;
                return MOTE_EDIT_EOF;
            }
            cut(e, e->pos, next_char(e, e->pos));
            break;
        case 0x10: /* Ctrl+P */
            recall(e, -1);
            break;
        case 0x0e: /* Ctrl+N */
            recall(e, 1);
            break;
        case 0x12: /* Ctrl+R */
            e->search = true;
            e->search_failed = false;
            e->qlen = 0;
            e->hit = e->hist_n;
            break;
        case 0x0c: /* Ctrl+L */
            puts_(e, "\033[H\033[2J");
            e->rows_above = 0;
            e->dirty = true;
            break;
        case '\t':
            insert(e, "\t", 1);
            break;
        default:
            if (c >= 0x20)
                insert(e, (const char *)&c, 1);
            else
                continue; /* other control keys: nothing */
        }
        /* Typed text is drawn once per feed; an edit at once. */
        if (i + 1 == n || c < 0x20 || c == 0x7f)
            draw(e);
    }
    *used = n;
    return MOTE_EDIT_MORE;
}
