/* render.h - untrusted text (the model's, a server's, a tool's) on a
 * terminal, with every control sequence neutralised. */
#ifndef MOTE_CLI_RENDER_H
#define MOTE_CLI_RENDER_H

#include <stddef.h>
#include <stdio.h>

/* Writes `n` bytes of `s` to `f` so that nothing in them can act on the
 * terminal: newlines and tabs are kept ("\r\n" becomes "\n"); ESC and the
 * other C0 controls, DEL and a lone CR are shown in caret form ("^["),
 * C1 controls (U+0080..U+009F) as "<U+009B>", invalid UTF-8 as U+FFFD.
 * Returns the last byte written (for line tracking), or 0 if none. */
int render_text(FILE *f, const char *s, size_t n);

/* The same into a buffer of `cap` bytes (NUL-terminated, cut at a
 * character), with newlines and tabs also made spaces: for one-line
 * summaries. Returns the length. */
size_t render_line(char *out, size_t cap, const char *s, size_t n);

/* Writes `n` bytes of `s` to `f` as render_text does, and exactly: for
 * what a person approves, every byte is seen. A newline is "^J" and a CR
 * always "^M" (the caller splits lines first); the characters that act on
 * the text around them without showing themselves (bidirectional
 * overrides and isolates, zero-width characters, line and paragraph
 * separators, the BOM, soft hyphen, the invisible tag letters) are shown
 * as "<U+202E>". */
void render_exact(FILE *f, const char *s, size_t n);

#endif
