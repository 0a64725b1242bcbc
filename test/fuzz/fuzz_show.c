/* fuzz_show - a tool call's display (mote_show.h) of any input.
 * Properties:
 *  - the plain text holds no control byte but newlines, nothing that is
 *    not UTF-8, and every line it writes is whole;
 *  - the JSON form is valid JSON (strict: no duplicate key) with the same
 *    line count as the text, and the same answer to "was a part left
 *    out";
 *  - with MOTE_SHOW_WHOLE nothing is left out;
 *  - untrusted text made safe (TEXT, ONELINE) has no control byte but
 *    newlines and tabs (none in ONELINE) and is UTF-8.
 * The first byte picks the tool and the flags; the rest is the input. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote_show.h"
#include "fuzz_buf.h"

static struct mote_json js, rd;
static char txt[1 << 22], jsn[1 << 23];

static void no_controls(const char *s, size_t n, bool tabs)
{
    size_t i;

    for (i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];

        if ((c < 0x20 && c != '\n' && !(tabs && c == '\t')) || c == 0x7F)
            __builtin_trap();
    }
    if (!mote_utf8_valid(s, n))
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const tools[] = {"shell", "write_file", "edit_file", "other"};
    struct buf t = {txt, sizeof(txt), 0}, j = {jsn, sizeof(jsn), 0};
    struct mote_show_plain p = {sink, &t, false, "more"};
    struct mote_show_sink s = mote_show_plain_sink(&p);
    const char *in = (const char *)data + 1;
    size_t n = size > 0 ? size - 1 : 0, lines = 0, i;
    unsigned flags;
    struct mote_jw w;
    int rc, rc2, l;
    char line[64];

    if (size == 0)
        return 0;
    flags = (data[0] & 4) ? MOTE_SHOW_WHOLE : 0;
    rc = mote_show_call(&js, NULL, tools[data[0] & 3], in, n, flags, &s);
    if (rc < 0)
        __builtin_trap(); /* the buffers hold any display of an input this size */
    if (flags != 0 && rc != 0)
        __builtin_trap();
    no_controls(txt, t.len, true);
    if (t.len == 0 || txt[t.len - 1] != '\n')
        __builtin_trap();
    for (i = 0; i < t.len; i++)
        lines += txt[i] == '\n';
    mote_jw_init(&w, sink, &j);
    rc2 = mote_show_call_json(&js, NULL, tools[data[0] & 3], in, n, flags, &w);
    if (rc2 != rc || w.err != 0)
        __builtin_trap();
    /* valid JSON (when the reader's tokens hold it) with as many lines */
    if (mote_json_parse_object(&rd, jsn, j.len, NULL, 0) > 0) {
        l = mote_json_member(&rd, 0, "lines");
        if (l < 0 || (size_t)rd.tok[l].size != lines)
            __builtin_trap();
    } else if (mote_json_parse(&rd, jsn, j.len) != MOTE_ERR_TOO_LARGE) {
        __builtin_trap();
    }
    /* any text made safe */
    t.len = 0;
    rc = mote_show_text(sink, &t, in, n, MOTE_SHOW_TEXT);
    if (rc < 0)
        __builtin_trap();
    no_controls(txt, t.len, true);
    (void)mote_show_line(line, sizeof(line), in, n);
    no_controls(line, strlen(line), false);
    for (i = 0; line[i] != '\0'; i++) {
        if (line[i] == '\n')
            __builtin_trap();
    }
    return 0;
}
