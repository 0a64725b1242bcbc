/* show_text.c - untrusted text made safe to show (mote_show.h): nothing
 * in it acts on a terminal, nothing hides, invalid UTF-8 is U+FFFD. */
#include <string.h>

#include "mote/mote_show.h"
#include "show.h"

/* True for the characters that change how the text around them looks,
 * or hide text, without showing themselves: bidirectional controls, zero
 * width characters, separators, the BOM, the invisible tag letters. */
static bool invisible(uint32_t cp)
{
    return cp == 0xAD || cp == 0x61C || cp == 0x180E || (cp >= 0x200B && cp <= 0x200F) ||
           (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF ||
           (cp >= 0xFFF9 && cp <= 0xFFFB) || (cp >= 0xE0000 && cp <= 0xE007F);
}

/* "<U+XXXX>" (4 to 6 digits) into out; its length. */
static size_t u_plus(uint32_t cp, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0, d = cp > 0xFFFFF ? 6 : cp > 0xFFFF ? 5 : 4;

    memcpy(out, "<U+", 3);
    while (d-- > 0)
        out[3 + k++] = hex[(cp >> (4 * d)) & 15u];
    out[3 + k] = '>';
    return 4 + k;
}

size_t mote_show_cp(uint32_t cp, int mode, char *out, bool *visible)
{
    *visible = false;
    if ((cp == '\n' || cp == '\t') && !(cp == '\n' && mode == MOTE_SHOW_EXACT)) {
        out[0] = mode == MOTE_SHOW_ONELINE ? ' ' : (char)cp;
        return 1;
    }
    *visible = true;
    if (cp < 0x20 || cp == 0x7F) {
        out[0] = '^';
        out[1] = (char)(cp == 0x7F ? '?' : cp + 0x40);
        return 2;
    }
    if ((cp >= 0x80 && cp <= 0x9F) || (mode == MOTE_SHOW_EXACT && invisible(cp)))
        return u_plus(cp, out);
    *visible = false;
    return mote_utf8_put(cp, out);
}

/* Writes s[0..n) safe to `sink`, a run of characters shown as they are
 * at a time. Returns the last byte written or the sink's error. */
int mote_show_text(mote_sink_fn sink, void *arg, const char *s, size_t n, int mode)
{
    size_t i = 0, run = 0; /* s[i - run .. i) goes out as it is */
    int last = 0, rc;

    while (i < n) {
        char buf[MOTE_SHOW_CP_MAX];
        size_t at = i, k;
        uint32_t cp = mote_utf8_char(s, n, &i);
        bool vis;

        if (cp == '\r' && mode != MOTE_SHOW_EXACT && i < n && s[i] == '\n') {
            cp = '\n'; /* "\r\n" is a newline */
            i++;
        }
        k = mote_show_cp(cp, mode, buf, &vis);
        if (k == i - at && memcmp(buf, s + at, k) == 0) {
            run += k; /* shown as it is */
            continue;
        }
        if (run > 0 && (rc = sink(arg, s + at - run, run)) < 0)
            return rc;
        run = 0;
        if ((rc = sink(arg, buf, k)) < 0)
            return rc;
        last = (unsigned char)buf[k - 1];
    }
    if (run > 0) {
        if ((rc = sink(arg, s + n - run, run)) < 0)
            return rc;
        last = (unsigned char)s[n - 1];
    }
    return last;
}

size_t mote_show_line(char *out, size_t cap, const char *s, size_t n)
{
    size_t i = 0, o = 0;

    if (cap == 0)
        return 0;
    while (i < n) {
        char buf[MOTE_SHOW_CP_MAX];
        size_t k;
        uint32_t cp = mote_utf8_char(s, n, &i);
        bool vis;

        if (cp == '\r' && i < n && s[i] == '\n') {
            cp = '\n';
            i++;
        }
        k = mote_show_cp(cp, MOTE_SHOW_ONELINE, buf, &vis);
        if (o + k >= cap)
            break;
        memcpy(out + o, buf, k);
        o += k;
    }
    out[o] = '\0';
    return o;
}
