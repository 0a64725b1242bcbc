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

/* The safe form of the character at s: into `out` (at least 12 bytes);
 * returns its length and sets *used to the input bytes it stood for. */
static size_t safe_char(const unsigned char *s, size_t n, char *out, size_t *used, int oneline)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t len = utf8_len(s, n);
    unsigned char b = s[0];

    if (len == 0) {
        *used = 1;
        memcpy(out, "\xEF\xBF\xBD", 3);
        return 3;
    }
    *used = len;
    if (len == 1) {
        if (b == '\n' || b == '\t') {
            out[0] = oneline ? ' ' : (char)b;
            return 1;
        }
        if (b == '\r') {
            if (n > 1 && s[1] == '\n') {
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
    if (len == 2 && b == 0xC2 && s[1] >= 0x80 && s[1] <= 0x9F) {
        memcpy(out, "<U+00", 5);
        out[5] = hex[s[1] >> 4];
        out[6] = hex[s[1] & 15u];
        out[7] = '>';
        return 8;
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
        size_t used, k = safe_char(p, n, buf, &used, 0);

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
        size_t used, k = safe_char(p, n, buf, &used, 1);

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
