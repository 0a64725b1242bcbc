/* fuzz_edit - the line editor (mote_edit.h) fed arbitrary keys, with a
 * history holding arbitrary bytes, split into arbitrary pieces.
 * Properties of what it draws (mote_edit.h's promise: untrusted text
 * never acts on the terminal):
 *  - valid UTF-8, with no C1 control (U+0080..U+009F) and no DEL;
 *  - no C0 control but CR, LF, BEL and ESC, and an ESC only as the start
 *    of a sequence the editor itself sends (cursor moves, erase, clear,
 *    bracketed paste on and off);
 * and of its state: the cursor within the line, the line within
 * MOTE_EDIT_LINE_MAX, a finished line NUL-terminated at its length. */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mote/mote_edit.h"
#include "mote/mote_json.h"

#define KEYS_MAX 1024 /* bytes of keys in one run */
#define LONG_KEYS 48  /*   and after a line over MOTE_EDIT_LINE_MAX */

static struct mote_edit ed;
static char paste[MOTE_EDIT_LINE_MAX + 64];

/* Length of the editor's own escape sequence at s (ESC first), or 0. */
static size_t own_sequence(const unsigned char *s, size_t n)
{
    size_t i = 2;

    if (n < 3 || s[1] != '[')
        return 0;
    if (s[i] == '?')
        i++;
    while (i < n && ((s[i] >= '0' && s[i] <= '9') || s[i] == ';'))
        i++;
    if (i < n && strchr("ABCDJHhl", s[i]) != NULL && s[i] != '\0')
        return i + 1;
    return 0;
}

static int screen(void *arg, const char *p, size_t n)
{
    const unsigned char *u = (const unsigned char *)p;
    size_t i = 0, k;

    (void)arg;
    if (!mote_utf8_valid(p, n))
        __builtin_trap(); /* a byte that is not UTF-8 reached the terminal */
    while (i < n) {
        if (u[i] == 0x1b) {
            if ((k = own_sequence(u + i, n - i)) == 0)
                __builtin_trap(); /* an escape sequence the editor does not send */
            i += k;
            continue;
        }
        if ((u[i] < 0x20 && u[i] != '\r' && u[i] != '\n' && u[i] != '\a') || u[i] == 0x7f)
            __builtin_trap(); /* a raw control character */
        if (u[i] == 0xc2 && i + 1 < n && u[i + 1] >= 0x80 && u[i + 1] <= 0x9f)
            __builtin_trap(); /* a C1 control (CSI is one) */
        i++;
    }
    return 0;
}

static void check_state(void)
{
    if (ed.pos > ed.len || ed.len > MOTE_EDIT_LINE_MAX)
        __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *in = (const char *)data, *sep;
    size_t at = 0, hist_n, k, prefill;
    unsigned mod;

    /* Each key may redraw the whole line: keys are capped so that a run
     * stays short; a long line comes from a paste made here instead. */
    if (size < 2 || size > KEYS_MAX)
        return 0;
    mote_edit_init(&ed, screen, NULL);
    mote_edit_set_width(&ed, data[0] % 8 == 0 ? 0 : 1 + data[0] % 120); /* narrow rows wrap */
    mod = data[1] % 16;
    /* a line pasted first: short, or past MOTE_EDIT_LINE_MAX (then only
     * a few keys: each redraws it all) */
    prefill = (data[1] >> 4) == 15 ? MOTE_EDIT_LINE_MAX + 64 : (size_t)(data[1] >> 4) * 100;
    in += 2;
    size -= 2;
    if (prefill > MOTE_EDIT_LINE_MAX && size > LONG_KEYS)
        size = LONG_KEYS;
    /* the history: the bytes before the first NUL, lines split at 0x01 */
    sep = memchr(in, '\0', size);
    hist_n = sep != NULL ? (size_t)(sep - in) : 0;
    for (k = 0; k < hist_n;) {
        const char *end = memchr(in + k, 0x01, hist_n - k);
        size_t len = end != NULL ? (size_t)(end - (in + k)) : hist_n - k;

        mote_edit_history_add(&ed, in + k, len);
        k += len + 1;
    }
    at = sep != NULL ? hist_n + 1 : 0;
    mote_edit_start(&ed, "> ", 2);
    if (prefill > 0) {
        size_t used;

        memset(paste, 'p', prefill);
        memcpy(paste + prefill / 2, "\xc2\x9b\xff\x1b", 4); /* inert inside a paste */
        if (mote_edit_feed(&ed, "\x1b[200~", 6, &used) != MOTE_EDIT_MORE ||
            mote_edit_feed(&ed, paste, prefill, &used) != MOTE_EDIT_MORE ||
            mote_edit_feed(&ed, "\x1b[201~", 6, &used) != MOTE_EDIT_MORE)
            __builtin_trap();
        check_state();
    }
    while (at < size) {
        size_t piece = mod == 0 ? size - at : 1 + (unsigned char)in[at] % mod, used = 0;
        enum mote_edit_result r;

        if (piece > size - at)
            piece = size - at;
        r = mote_edit_feed(&ed, in + at, piece, &used);
        if (used > piece)
            __builtin_trap();
        check_state();
        at += used;
        if (r == MOTE_EDIT_LINE) {
            size_t len;
            const char *line = mote_edit_line(&ed, &len);

            if (len > MOTE_EDIT_LINE_MAX || line[len] != '\0')
                __builtin_trap();
            mote_edit_history_add(&ed, line, len);
        }
        if (r != MOTE_EDIT_MORE) {
            mote_edit_start(&ed, "> ", 2);
        } else if (used < piece) {
            __builtin_trap(); /* MORE takes every byte */
        }
        if (r == MOTE_EDIT_MORE && (unsigned char)in[at - (used > 0)] % 61 == 7)
            mote_edit_redraw(&ed, (unsigned char)in[at - (used > 0)] % 2 == 0);
    }
    mote_edit_end(&ed);
    return 0;
}
