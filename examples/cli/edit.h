/* edit.h - the interactive CLI's terminal for the line editor of the
 * library (mote_edit.h): the terminal's modes, its width, and the
 * screen as a file descriptor. Ctrl+C and Ctrl+Z stay signals (ISIG is
 * kept on); Ctrl+D on an empty line is the end of input. */
#ifndef MOTE_CLI_EDIT_H
#define MOTE_CLI_EDIT_H

#include <stdbool.h>
#include <stddef.h>

#include "mote/mote_edit.h"

#define ED_LINE_MAX MOTE_EDIT_LINE_MAX /* a longer input is refused whole */

enum ed_result {
    ED_MORE = MOTE_EDIT_MORE,       /* the input was used; no line yet */
    ED_LINE = MOTE_EDIT_LINE,       /* a line is complete */
    ED_EOF = MOTE_EDIT_EOF,         /* Ctrl+D on an empty line */
    ED_REFUSED = MOTE_EDIT_REFUSED, /* Enter on an input over ED_LINE_MAX: refused whole */
};

/* Takes terminal `in_fd` (echoing to `out_fd`) into the editor's mode:
 * no echo, no line discipline, signals kept, bracketed paste on. Returns
 * 0, or -1 if it is not a terminal. ed_leave() restores it as it was (and
 * is safe to call more than once, or without ed_enter). */
int ed_enter(int in_fd, int out_fd);
void ed_leave(void);
bool ed_active(void);

/* Starts a new line after `prompt` (shown; `width` is its width on
 * screen, escape sequences excluded). */
void ed_start(const char *prompt, size_t width);
bool ed_started(void);

/* Feeds typed bytes. Returns what they made (ED_*) and how many were used
 * in *used (the rest belongs to what comes after the line). A complete
 * line is copied into out (NUL-terminated; cap >= ED_LINE_MAX + 1), its
 * length in *len; a line holds '\n' where a paste or a `\` continuation
 * put one. */
enum ed_result ed_feed(const char *in, size_t n, size_t *used, char *out, size_t *len);

/* Adds a line to the recall history (newest last). */
void ed_history_add(const char *line, size_t n);

#endif
