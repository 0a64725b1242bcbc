/* edit.h - the line editor of the interactive CLI on a terminal: written
 * for mote (no readline, so the static musl build has it too), UTF-8
 * aware, with history recall and search, bracketed paste and `\`
 * continuation lines. Ctrl+C and Ctrl+Z stay signals (ISIG is kept on);
 * Ctrl+D on an empty line is the end of input. */
#ifndef MOTE_CLI_EDIT_H
#define MOTE_CLI_EDIT_H

#include <stdbool.h>
#include <stddef.h>

#define ED_LINE_MAX (64 * 1024)  /* a longer input is refused whole */
#define ED_HISTORY_BYTES (64 * 1024) /* history recall keeps the newest lines that fit */

enum ed_result {
    ED_MORE = 0, /* the input was used; no line yet */
    ED_LINE,     /* a line is complete */
    ED_EOF,      /* Ctrl+D on an empty line */
    ED_REFUSED,  /* Enter on an input over ED_LINE_MAX: refused whole */
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
