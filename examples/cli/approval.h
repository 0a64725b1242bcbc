/* approval.h - a tool call's input on the terminal: all of it for a call
 * a person approves (approval.c), one line for a call that just runs. */
#ifndef MOTE_CLI_APPROVAL_H
#define MOTE_CLI_APPROVAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Shows call `name` with `input` (its JSON as journaled, `len` bytes) to
 * `f` for an approval: every member of the input, each string whole with
 * every control or invisible character made visible and a long run of
 * blanks counted ("<300 spaces>"); a command as its lines; write_file as
 * its path, whether it replaces a file, the content's size and its text;
 * edit_file as its path and the edit as "-" and "+" lines. A text longer
 * than a screen or two is shown as its head and its tail with the count of
 * lines and bytes between, unless `whole`; the input is kept, so that
 * approval_show_again can show it whole. `color`: ANSI colours. Returns
 * true if a part was left out (the question then offers "v"). */
bool approval_show(FILE *f, const char *name, const char *input, size_t len, bool color,
                   bool whole);

/* The last call approval_show showed, again, whole. */
void approval_show_again(FILE *f, bool color);

/* A short, one-line, safe form of a call's input (its command or path,
 * else the start of its JSON) into out (cap bytes): for a call that runs
 * without a question. */
void approval_summary(const char *input, size_t len, char *out, size_t cap);

#endif
