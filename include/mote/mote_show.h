/*
 * mote_show.h - what a person is shown of untrusted text (the model's
 * answer, a tool's output, a server's message) and, above all, of a tool
 * call that waits for approval: all of it, exactly, so that what is
 * approved is what runs.
 *
 * Text made safe (mote_show_text, mote_show_line): nothing in it can act
 * on a terminal or hide other text. A call's display (mote_show_call):
 * every member of its input, each string whole with every control or
 * invisible character made visible, a command as its lines, write_file
 * with its size and whether it replaces a file, edit_file as "-" and "+"
 * lines, a long text as its head and tail with what lies between counted.
 * The display goes to a sink: the plain-text one draws it for a terminal
 * (the CLI), the JSON one gives a structured form that a web page or an
 * MQTT client draws (mote serve's approval event and its approval
 * endpoint). Every front door shows the same thing, made by this code.
 *
 * Nothing here allocates or blocks (but the port's fs_stat, a local file
 * system call, for write_file's path); the JSON tokens are the caller's.
 */
#ifndef MOTE_SHOW_H
#define MOTE_SHOW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_json.h"
#include "mote/mote_port.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- text made safe --------------------------------------------------------- */

/* How mote_show_text writes a text. In every mode ESC and the other C0
 * controls, DEL and a lone CR are shown in caret form ("^[", "^?", "^M"),
 * a C1 control (U+0080..U+009F) as "<U+009B>", invalid UTF-8 as U+FFFD. */
#define MOTE_SHOW_TEXT 0    /* newlines and tabs kept, "\r\n" as "\n" */
#define MOTE_SHOW_ONELINE 1 /* newlines and tabs (and "\r\n") as a space */
#define MOTE_SHOW_EXACT 2   /* for what a person approves: every byte seen. A
                             * newline is "^J" and a CR always "^M" (a caller
                             * splits lines first); the characters that act on
                             * the text around them without showing themselves
                             * (bidirectional overrides and isolates, zero-width
                             * characters, line and paragraph separators, the
                             * BOM, soft hyphen, the invisible tag letters) are
                             * shown as "<U+202E>" */

/* Writes the `n` bytes of `s` to `sink` made safe as `mode` says, in
 * pieces of whole characters. Returns the last byte written (for line
 * tracking; 0 if none) or the sink's error (< 0). */
int mote_show_text(mote_sink_fn sink, void *arg, const char *s, size_t n, int mode);

/* The same in MOTE_SHOW_ONELINE into `out` (`cap` bytes, NUL-terminated,
 * cut at a whole character): for one-line summaries. Returns the length. */
size_t mote_show_line(char *out, size_t cap, const char *s, size_t n);

/* ---- a tool call's display -------------------------------------------------- */

/* The lines of a display, in order: TOOL, then WARN if the input is
 * ambiguous, then NO_INPUT or each member of the input (FIELD, VALUE,
 * or SIZE and/or a text's LINEs, EMPTY, GAP). An input that is not a JSON
 * object is shown as one text (its LINEs). */
enum mote_show_kind {
    MOTE_SHOW_TOOL,     /* the tool's name (text) */
    MOTE_SHOW_WARN,     /* the input is ambiguous: why (text), e.g. duplicate key "command" */
    MOTE_SHOW_NO_INPUT, /* an input object without members */
    MOTE_SHOW_FIELD,    /* `key`: a short string of one line (text) */
    MOTE_SHOW_VALUE,    /* `key`: a member that is not a string, as its JSON (text) */
    MOTE_SHOW_SIZE,     /* `key`: the size of the text whose lines follow */
    MOTE_SHOW_LINE,     /* a line of a text, after `mark` (text) */
    MOTE_SHOW_EMPTY,    /* a text without a byte, after `mark` */
    MOTE_SHOW_GAP       /* the part of a long text left out between its head and tail */
};

/* What a line is; its text (where it has one) comes in pieces between
 * `begin` and `end`. */
struct mote_show_line {
    enum mote_show_kind kind;
    const char *key;     /* FIELD, VALUE, SIZE: the member's name, one line, made safe */
    char mark;           /* LINE, EMPTY: '|' a text, '-' what an edit removes, '+' what it adds */
    uint64_t bytes;      /* SIZE: the text's bytes; GAP: those left out */
    uint64_t lines;      /* SIZE: the text's lines; GAP: those left out (newlines) */
    bool no_eol;         /* SIZE: the text does not end in a newline */
    int64_t file;        /* FIELD of write_file's path: what is there now: -1 nothing (a
                          * new file), >= 0 a regular file of that many bytes, -2 other
                          * or not known */
};

/* Where a display goes. Each member returns 0, or < 0 to stop the display
 * (mote_show_call then returns that). */
struct mote_show_sink {
    int (*begin)(void *arg, const struct mote_show_line *l);
    /* A piece of the line's text, never holding a newline or a control
     * character but a tab: as it is (`visible` false), or a stand-in for what would
     * not show or would act (`visible` true: "^[", "<U+202E>", a run of
     * 24 or more blanks as "<300 spaces>", "<30 tabs>" or "<40 spaces and
     * tabs>"). A line's text is the pieces joined. */
    int (*text)(void *arg, const char *s, size_t n, bool visible);
    int (*end)(void *arg, const struct mote_show_line *l);
    void *arg;
};

#define MOTE_SHOW_WHOLE 1u /* no text cut to its head and tail: all of it */

/* The display of call `name` with `input` (its JSON, `len` bytes, as
 * journaled) to `sink`. A string of one line and at most 100 bytes is a
 * FIELD (but a command, a file's content, an edit's sides); a longer one
 * is a text: its SIZE (but for a command and an edit) and its LINEs, each
 * after a mark; a text of more than 60 lines or 8 KiB, unless
 * MOTE_SHOW_WHOLE is in `flags`, is its first 30 lines (at most 3 KiB),
 * a GAP counting what lies between, and its last 10 lines (at most 1
 * KiB). Lines are split at "\n"; a run of 24 or more spaces or tabs is
 * counted, not drawn. `js` holds the input's tokens during the call
 * (caller-owned: an input of more JSON values than it holds is shown as
 * one text). `port` (may be NULL) tells what write_file's path names now
 * (fs_stat). Returns 1 if a part was left out (a GAP: offer to show it
 * whole), 0 if not, or a sink's error. Never blocks but in fs_stat. */
int mote_show_call(struct mote_json *js, const struct mote_port *port, const char *name,
                   const char *input, size_t len, unsigned flags, const struct mote_show_sink *sink);

/* A one-line, safe summary of a call's input for a call that runs
 * without a question: its command or path, else the start of its JSON,
 * at most 100 bytes ("..." where cut), into `out` (`cap` bytes). */
void mote_show_summary(struct mote_json *js, const char *input, size_t len, char *out, size_t cap);

/* A one-line, safe summary of a tool's result (`len` bytes of `text`):
 * its first line (at most 99 bytes), then " ... (N lines, M bytes)" when
 * there is more, into `out` (`cap` bytes, NUL-ended). Returns the length. */
size_t mote_show_result(const char *text, size_t len, char *out, size_t cap);

/* ---- the answer typed to the question ---------------------------------------- */

#define MOTE_SHOW_VIEW 3 /* "v": show the call whole, then ask again */

/* An answer typed to the approval question (a terminal, a chat): "y" or
 * "yes", "a" or "always" (for this tool), "n", "no" or nothing, in any
 * case, blanks around it ignored; "v" or "view" (only if `can_view`: the
 * display left a part out). Any other text is a no that the model reads
 * as the reason (`*reason` points into `line`, its blanks cut; NULL
 * otherwise): "you should use ls" refuses, it is not a yes. Returns
 * MOTE_ANSWER_NO, _YES, _ALWAYS (mote_agent.h: 0, 1, 2) or MOTE_SHOW_VIEW. */
int mote_show_answer(char *line, bool can_view, const char **reason);

/* ---- the plain-text sink ---------------------------------------------------- */

/* The display as a terminal shows it, written to `out`: "* shell", then
 * "  | " before each line of a command or a content, "  - " and "  + "
 * around an edit, "  key: value" for the rest, and a gap as "  ... 1370
 * bytes (160 lines) not shown here: HINT ...". `color`: ANSI colours (the
 * stand-ins in reverse video). */
struct mote_show_plain {
    mote_sink_fn out;
    void *arg;
    bool color;
    const char *hint; /* how to see all of it ("answer v to see all of it"), or NULL */
};

/* A sink drawing onto `p` (which must outlive it). */
struct mote_show_sink mote_show_plain_sink(struct mote_show_plain *p);

/* ---- the structured (JSON) sink -------------------------------------------- */

/* The display as JSON, for a page or an MQTT client to draw:
 *   [{"kind": "tool", "text": ["shell"]},
 *    {"kind": "line", "mark": "|", "text": ["ls /tmp", "<300 spaces>", "; echo x"]},
 *    {"kind": "gap", "bytes": 1370, "lines": 160}, ...]
 * `kind` is tool, warn, no_input, field, value, size, line, empty or gap;
 * `text` alternates what is shown as it is (even places, from 0) and
 * stand-ins (odd places), to be drawn apart; `key` for field, value and
 * size; `mark` for line and empty; `bytes`, `lines` for size and gap;
 * `no_eol` (size) true when the text does not end in a newline; `file`
 * (write_file's path) "new" or the size of the file it replaces. */
struct mote_show_json {
    struct mote_jw *w;
    int open;         /* the text piece under way: 0 none, 1 as is, 2 a stand-in */
    unsigned pieces;  /* pieces of the line's text begun */
};

/* A sink writing lines (array elements) to `j->w`: the caller opens the
 * array (mote_jw_arr) before the display and closes it after. */
struct mote_show_sink mote_show_json_sink(struct mote_show_json *j, struct mote_jw *w);

/* The display of a call as the JSON object {"lines": [...], "cut": BOOL}
 * written to `w`. Returns what mote_show_call returns (the writer's
 * sticky error also in w->err). */
int mote_show_call_json(struct mote_json *js, const struct mote_port *port, const char *name,
                        const char *input, size_t len, unsigned flags, struct mote_jw *w);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_SHOW_H */
