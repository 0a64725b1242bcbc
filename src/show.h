/* show.h - what the display's files share (internal): one character made
 * safe. */
#ifndef MOTE_SHOW_INT_H
#define MOTE_SHOW_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Room for one character's safe form ("<U+10FFFF>" is the longest). */
#define MOTE_SHOW_CP_MAX 12

/* The safe form of code point `cp` in `mode` (MOTE_SHOW_*) into `out`
 * (MOTE_SHOW_CP_MAX bytes); its length. *visible: it is a stand-in ("^[",
 * "<U+202E>"), not the character. A CR is "^M" here: "\r\n" in TEXT and
 * ONELINE is the caller's. */
size_t mote_show_cp(uint32_t cp, int mode, char *out, bool *visible);

#endif /* MOTE_SHOW_INT_H */
