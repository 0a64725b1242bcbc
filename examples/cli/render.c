/* render.c - untrusted text (the model's, a server's, a tool's) on a terminal,
 * every control sequence neutralised (see render.h). */
#include "render.h"

#include <string.h>

/* Length of the valid UTF-8 character at s (1..4), or 0. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len, k;
    unsigned char b = s[0];

    if (b < 0x80)
        return 1;
    len = (b >> 5) == 6 ? 2 : (b >> 4) == 14 ? 3 : (b >> 3) == 30 ? 4 : 0;
    if (len == 0 || len > n)
        return 0;
    for (k = 1; k < len; k++) {
        if ((s[k] & 0xC0u) != 0x80u)
            return 0;
    }
    if (len == 2 && b < 0xC2)
        return 0; /* overlong */
    return len;
}

enum { TEXT = 0, ONELINE = 1, EXACT = 2 };

/* True for the characters that change how the text around them looks,
 * or hide text, without showing themselves: bidirectional controls, zero
 * width characters, separators, the BOM, the invisible tag letters. */
static int invisible(unsigned long cp)
{
    return cp == 0xAD || cp == 0x61C || cp == 0x180E || (cp >= 0x200B && cp <= 0x200F) ||
           (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2060 && cp <= 0x206F) || cp == 0xFEFF ||
           (cp >= 0xFFF9 && cp <= 0xFFFB) || (cp >= 0xE0000 && cp <= 0xE007F);
}

/* "<U+XXXX>" (4 to 6 digits) into out; its length. */
static size_t u_plus(unsigned long cp, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t k = 0, d = cp > 0xFFFFF ? 6 : cp > 0xFFFF ? 5 : 4;

    memcpy(out, "<U+", 3);
    while (d-- > 0)
        out[3 + k++] = hex[(cp >> (4 * d)) & 15u];
    out[3 + k] = '>';
    return 4 + k;
}

/* The safe form of the character at s: into `out` (at least 12 bytes);
 * returns its length and sets *used to the input bytes it stood for. */
static size_t safe_char(const unsigned char *s, size_t n, char *out, size_t *used, int mode)
{
    size_t len = utf8_len(s, n);
    unsigned char b = s[0];
    int oneline = mode == ONELINE;

    if (len == 0) {
        *used = 1;
        memcpy(out, "\xEF\xBF\xBD", 3);
        return 3;
    }
    *used = len;
    if (len == 1) {
        if (b == '\n' && mode == EXACT) {
            memcpy(out, "^J", 2);
            return 2;
        }
        if (b == '\n' || b == '\t') {
            out[0] = oneline ? ' ' : (char)b;
            return 1;
        }
        if (b == '\r') {
            if (n > 1 && s[1] == '\n' && mode != EXACT) {
                *used = 2;
                out[0] = oneline ? ' ' : '\n';
                return 1;
            }
            memcpy(out, "^M", 2);
            return 2;
        }
        if (b < 0x20 || b == 0x7F) {
            out[0] = '^';
            out[1] = (char)(b == 0x7F ? '?' : b + 0x40);
            return 2;
        }
        out[0] = (char)b;
        return 1;
    }
    if (len == 2 && b == 0xC2 && s[1] >= 0x80 && s[1] <= 0x9F)
        return u_plus(s[1], out);
    if (mode == EXACT) {
        unsigned long cp = b & (len == 2 ? 0x1Fu : len == 3 ? 0x0Fu : 0x07u);
        size_t k;

        for (k = 1; k < len; k++)
            cp = (cp << 6) | (s[k] & 0x3Fu);
        if (invisible(cp))
            return u_plus(cp, out);
    }
    memcpy(out, s, len);
    return len;
}

int render_text(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    int last = 0;

    while (n > 0) {
        char buf[12];
        size_t used, k = safe_char(p, n, buf, &used, TEXT);

        fwrite(buf, 1, k, f);
        last = (unsigned char)buf[k - 1];
        p += used;
        n -= used;
    }
    return last;
}

size_t render_line(char *out, size_t cap, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;
    size_t o = 0;

    if (cap == 0)
        return 0;
    while (n > 0) {
        char buf[12];
        size_t used, k = safe_char(p, n, buf, &used, ONELINE);

        if (o + k >= cap)
            break;
        memcpy(out + o, buf, k);
        o += k;
        p += used;
        n -= used;
    }
    out[o] = '\0';
    return o;
}

void render_exact(FILE *f, const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s;

    while (n > 0) {
        char buf[12];
        size_t used, k = safe_char(p, n, buf, &used, EXACT);

        fwrite(buf, 1, k, f);
        p += used;
        n -= used;
    }
}
