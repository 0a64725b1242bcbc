/* util.c - small helpers shared by the core: bounded strings and the
 * string builder, numbers, case-blind comparison, byte producers. */
#include "util.h"

#include <string.h>

#include "mote/mote_err.h"
#include "mote/mote_port.h"

size_t mote_str_copy(char *dst, size_t cap, const char *src)
{
    size_t n = strlen(src);

    if (n >= cap) {
        n = cap - 1;
        /* Step back over continuation bytes so no character is cut. */
        while (n > 0 && ((unsigned char)src[n] & 0xC0u) == 0x80u)
            n--;
    }
    memcpy(dst, src, n);
    dst[n] = '\0';
    return n;
}

size_t mote_u64_dec(uint64_t v, char *out)
{
    static const uint64_t pow10[] = {
        UINT64_C(10000000000000000000), UINT64_C(1000000000000000000),
        UINT64_C(100000000000000000), UINT64_C(10000000000000000),
        UINT64_C(1000000000000000), UINT64_C(100000000000000), UINT64_C(10000000000000),
        UINT64_C(1000000000000), UINT64_C(100000000000), UINT64_C(10000000000),
        UINT64_C(1000000000), UINT64_C(100000000), UINT64_C(10000000), UINT64_C(1000000),
        UINT64_C(100000), UINT64_C(10000), UINT64_C(1000), UINT64_C(100), UINT64_C(10),
        UINT64_C(1)};
    size_t n = 0, k;

    for (k = 0; k < sizeof(pow10) / sizeof(pow10[0]); k++) {
        char d = '0';

        while (v >= pow10[k]) {
            v -= pow10[k];
            d++;
        }
        if (d != '0' || n > 0 || pow10[k] == 1)
            out[n++] = d;
    }
    return n;
}

void mote_sb_init(struct mote_sb *b, char *buf, size_t cap)
{
    b->p = buf;
    b->cap = cap;
    b->len = 0;
    buf[0] = '\0';
}

void mote_sb_s(struct mote_sb *b, const char *s)
{
    if (b->len + 1 >= b->cap)
        return;
    b->len += mote_str_copy(b->p + b->len, b->cap - b->len, s);
}

void mote_sb_n(struct mote_sb *b, const char *s, size_t n)
{
    size_t room = b->cap > b->len ? b->cap - b->len - 1 : 0;

    if (b->cap == 0)
        return;
    if (n > room)
        n = room;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void mote_sb_u(struct mote_sb *b, uint64_t v)
{
    char d[24];

    d[mote_u64_dec(v, d)] = '\0';
    mote_sb_s(b, d);
}

void mote_sb_i(struct mote_sb *b, int64_t v)
{
    if (v < 0) {
        mote_sb_s(b, "-");
        mote_sb_u(b, (uint64_t)0 - (uint64_t)v);
    } else {
        mote_sb_u(b, (uint64_t)v);
    }
}

void mote_sb_join(struct mote_sb *b, const char *s1, const char *s2, const char *s3)
{
    mote_sb_s(b, s1);
    if (s2 != NULL)
        mote_sb_s(b, s2);
    if (s3 != NULL)
        mote_sb_s(b, s3);
}

void mote_sb_num(struct mote_sb *b, const char *a, uint64_t n, const char *c)
{
    mote_sb_s(b, a);
    if (c != NULL) {
        mote_sb_u(b, n);
        mote_sb_s(b, c);
    }
}

size_t mote_str_join(char *out, size_t cap, const char *s1, const char *s2, const char *s3)
{
    struct mote_sb sb;

    mote_sb_init(&sb, out, cap);
    mote_sb_join(&sb, s1, s2, s3);
    return sb.len;
}

bool mote_ascii_ieq(const char *a, const char *b, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++) {
        if (mote_lower(a[i]) != mote_lower(b[i]))
            return false;
        if (a[i] == '\0')
            return true;
    }
    return true;
}

bool mote_ascii_is(const char *s, size_t n, const char *word)
{
    return strlen(word) == n && mote_ascii_ieq(s, word, n);
}

int mote_sb_put(void *arg, const char *s, size_t n)
{
    struct mote_sb *b = arg;

    if (b->len >= b->cap || n > b->cap - b->len - 1)
        return MOTE_ERR_TOO_LARGE;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
    return 0;
}

int mote_dec_parse(const char *s, size_t n, uint64_t *out)
{
    uint64_t v = 0;
    size_t i;

    if (n == 0)
        return MOTE_ERR_INVAL;
    for (i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            return MOTE_ERR_INVAL;
    }
    if (n > 18)
        return MOTE_ERR_RANGE;
    for (i = 0; i < n; i++)
        v = v * 10u + (uint64_t)(s[i] - '0');
    *out = v;
    return 0;
}

int mote_produce_bytes(void *arg, char *buf, size_t cap)
{
    struct mote_src_bytes *b = arg;
    size_t n = b->len - b->off < cap ? b->len - b->off : cap;

    if (n > 0x7FFFFFFF)
        n = 0x7FFFFFFF;
    memcpy(buf, b->p + b->off, n);
    b->off += n;
    return (int)n;
}

int mote_produce_range(void *arg, char *buf, size_t cap)
{
    struct mote_src_range *r = arg;
    int n;

    if (r->off >= r->end)
        return 0;
    if (cap > r->end - r->off)
        cap = (size_t)(r->end - r->off);
    n = r->port->st_read(r->port->ctx, r->h, r->off, buf, cap);
    if (n <= 0)
        return n < 0 ? n : MOTE_ERR_IO;
    r->off += (uint64_t)n;
    return n;
}

int mote_pct_decode(const char *s, size_t n, bool plus_space, char *out, size_t cap,
                    size_t *len)
{
    size_t i;

    for (i = 0; i < n; i++) {
        char c = s[i];

        if (c == '%') {
            int hi, lo;

            if (n - i < 3 || (hi = mote_hexval(s[i + 1])) < 0 || (lo = mote_hexval(s[i + 2])) < 0)
                return MOTE_ERR_INVAL;
            c = (char)(hi * 16 + lo);
            i += 2;
        } else if (c == '+' && plus_space) {
            c = ' ';
        }
        if (*len >= cap)
            return MOTE_ERR_TOO_LARGE;
        out[(*len)++] = c;
    }
    return 0;
}

int mote_why(char *err, size_t cap, int rc, const char *a, const char *b, const char *c)
{
    if (cap > 0)
        (void)mote_str_join(err, cap, a, b, c);
    return rc;
}

int mote_why_num(char *err, size_t cap, int rc, const char *a, uint64_t n, const char *b)
{
    struct mote_sb sb;

    if (cap > 0) {
        mote_sb_init(&sb, err, cap);
        mote_sb_num(&sb, a, n, b);
    }
    return rc;
}
