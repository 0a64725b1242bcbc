/*
 * mote_edit.h - a line editor for a terminal on any byte stream: a
 * terminal on Linux, a UART console, a telnet session. Bytes typed go in
 * (mote_edit_feed), what the screen needs comes out through a sink
 * (VT100/ANSI sequences), and a finished line is handed back. It never
 * reads or writes a device itself, never blocks and allocates nothing:
 * struct mote_edit, owned by the caller, holds the line, a copy of it
 * while history is browsed, and the recall history (about
 * 2 x MOTE_EDIT_LINE_MAX + MOTE_EDIT_HISTORY_BYTES).
 *
 * Keys: printable text and UTF-8 (wide CJK and emoji take two cells,
 * combining marks none; the cursor moves over whole characters), Left,
 * Right, Home, End, Delete, Backspace, Ctrl+A/E/B/F/K/U/W/D/L,
 * Alt+B/F and Ctrl+Left/Right (a word), Up/Down and Ctrl+P/N (history),
 * Ctrl+R (search the history backwards; again for an older match,
 * Ctrl+G to leave it; a query that matches nothing shows no line), bracketed paste (a pasted block is one input,
 * newlines kept, nothing in it acts), and a line ending in `\` continues
 * on the next line. Ctrl+D on an empty line is the end of input; Ctrl+C
 * is left to the terminal's signals (the caller keeps ISIG on).
 *
 * Untrusted text never acts on the terminal: control characters (C0 and
 * C1), DEL and invalid UTF-8 are drawn as visible replacements. Output is
 * kept small for slow consoles: typing at the end of the line writes just
 * the text, a cursor key just a move; other edits redraw the line. An
 * input grown past MOTE_EDIT_LINE_MAX says so on screen; emptying the line
 * (Ctrl+U) clears that.
 */
#ifndef MOTE_EDIT_H
#define MOTE_EDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_json.h"

#ifdef __cplusplus
extern "C" {
#endif

enum mote_edit_result {
    MOTE_EDIT_MORE = 0, /* the bytes were used; no line yet */
    MOTE_EDIT_LINE,     /* a line is complete: mote_edit_line() */
    MOTE_EDIT_EOF,      /* Ctrl+D on an empty line */
    MOTE_EDIT_REFUSED,  /* Enter on an input over MOTE_EDIT_LINE_MAX: refused whole */
};

struct mote_edit {
    mote_sink_fn out;        /* the screen (its errors are ignored: a gone screen
                              * must not stop the input) */
    void *arg;
    unsigned cols;           /* the screen's width, cells */
    bool started;            /* a line is being edited */
    bool paste_on;           /* bracketed paste mode was asked of the terminal */
    bool too_long;
    bool paste;              /* inside a paste */
    bool browsing;           /* the line shown is a history line; draft holds the new one */
    bool search;             /* Ctrl+R */
    bool last_cr;            /* the last byte fed was '\r' (a "\r\n" is one Enter) */
    bool search_failed;      /* Ctrl+R: the query matches no line */
    bool dirty;              /* the screen no longer shows the line: redraw it whole */
    size_t shown_len, shown_pos; /* what the screen shows: bytes of the line, the cursor */
    const char *prompt;
    size_t prompt_w;
    size_t rows_above;       /* the cursor's row below the prompt's, as last drawn */
    char esc[16];            /* an escape sequence being read */
    size_t esc_len;
    size_t len, pos;         /* of buf; pos at a character boundary */
    size_t draft_len;
    size_t hist_at;          /* the history line shown (hist_n: the new one) */
    size_t hist_used, hist_n;
    size_t qlen, hit;        /* Ctrl+R: the query, the line found (hist_n: none) */
    char query[256];
    char buf[MOTE_EDIT_LINE_MAX + 1];
    char draft[MOTE_EDIT_LINE_MAX + 1];
    char hist[MOTE_EDIT_HISTORY_BYTES]; /* lines, oldest first, each ending in '\0' */
};

/* Prepares `e`; `out` receives what the screen must show. */
void mote_edit_init(struct mote_edit *e, mote_sink_fn out, void *arg);

/* The screen's width in cells (0: 80). Call when it changes (SIGWINCH);
 * the next redraw uses it. */
void mote_edit_set_width(struct mote_edit *e, unsigned cols);

/* Starts a new line after `prompt` (shown now; it must stay valid while
 * the line is edited; `width` is its width in cells, escape sequences
 * left out), and turns bracketed paste on. */
void mote_edit_start(struct mote_edit *e, const char *prompt, size_t width);

/* True while a line is being edited (between start and its end). */
bool mote_edit_started(const struct mote_edit *e);

/* Feeds `n` typed bytes. Returns what they made (MOTE_EDIT_*); *used
 * says how many were taken (the rest belongs after the line: feed them
 * again once a new line starts). A sequence split between two calls is
 * kept. After MOTE_EDIT_LINE, the line is mote_edit_line(). */
enum mote_edit_result mote_edit_feed(struct mote_edit *e, const char *in, size_t n, size_t *used);

/* The line MOTE_EDIT_LINE finished (NUL-terminated; '\n' where a paste or
 * a `\` continuation put one), valid until the next mote_edit_start. */
const char *mote_edit_line(const struct mote_edit *e, size_t *len);

/* Turns bracketed paste off again (before the terminal is given back). */
void mote_edit_end(struct mote_edit *e);

/* Draws the line again, for instance after a change of width, or (with
 * `new_row`, on a fresh row) after the program was suspended and the
 * screen is no longer what it was. Bracketed paste is asked for again if
 * it was on. */
void mote_edit_redraw(struct mote_edit *e, bool new_row);

/* Adds a line to the recall history (newest last; the same as the newest
 * is not added twice; the oldest make room). NULs become spaces. */
void mote_edit_history_add(struct mote_edit *e, const char *line, size_t n);

/* Cells that UTF-8 text `s` of `n` bytes takes on a terminal (wide
 * characters 2, combining marks 0, an invalid byte 1). */
size_t mote_text_cells(const char *s, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_EDIT_H */
