/*
 * json.c - jsmn tokens, typed getters, and the JSON writer.
 *
 * jsmn (Debian libjsmn-dev) is compiled here and nowhere else, with
 * JSMN_STATIC, JSMN_STRICT and JSMN_PARENT_LINKS set once for the whole
 * build by the Makefile.
 */
#include "mote/mote_json.h"

#include <string.h>

#include "util.h"

#if !defined(JSMN_STATIC) || !defined(JSMN_STRICT) || !defined(JSMN_PARENT_LINKS)
#error "build with -DJSMN_STATIC -DJSMN_STRICT -DJSMN_PARENT_LINKS (the Makefile sets them)"
#endif
#include <jsmn.h>

/* Our token must be jsmn's token, field for field. */
typedef char tok_size_matches[sizeof(struct mote_json_tok) == sizeof(jsmntok_t) ? 1 : -1];
typedef char tok_start_matches[offsetof(struct mote_json_tok, start) ==
                                       offsetof(jsmntok_t, start) ? 1 : -1];
typedef char tok_parent_matches[offsetof(struct mote_json_tok, parent) ==
                                        offsetof(jsmntok_t, parent) ? 1 : -1];

/* True if text[from, to) holds only whitespace and quotes and, if `want`
 * is not 0, exactly one `want`. */
static bool gap_ok(const char *s, int from, int to, char want)
{
    bool seen = false;
    int i;

    for (i = from; i < to; i++) {
        char c = s[i];

        if (c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '"')
            continue;
        if (c != want || seen)
            return false;
        seen = true;
    }
    return want == 0 || seen;
}

static bool digits(const char *s, size_t n, size_t *i)
{
    size_t start = *i;

    while (*i < n && s[*i] >= '0' && s[*i] <= '9')
        (*i)++;
    return *i > start;
}

/* A primitive is true, false, null or a number in JSON's grammar. */
static bool primitive_ok(const char *s, size_t n)
{
    size_t i = 0;

    if ((n == 4 && (memcmp(s, "true", 4) == 0 || memcmp(s, "null", 4) == 0)) ||
        (n == 5 && memcmp(s, "false", 5) == 0))
        return true;
    if (i < n && s[i] == '-')
        i++;
    if (i < n && s[i] == '0')
        i++;
    else if (!digits(s, n, &i))
        return false;
    if (i < n && s[i] == '.') {
        i++;
        if (!digits(s, n, &i))
            return false;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-'))
            i++;
        if (!digits(s, n, &i))
            return false;
    }
    return i == n;
}

/* Nesting within MOTE_JSON_MAX_DEPTH levels: what the writer re-emits
 * (mote_jw_value), the reader takes, whatever the shape. */
static bool depth_ok(const struct mote_json *j)
{
    int open_end[MOTE_JSON_MAX_DEPTH]; /* where each enclosing container ends */
    int t, depth = 0;

    for (t = 0; t < j->ntok; t++) {
        const struct mote_json_tok *c = &j->tok[t];

        while (depth > 0 && open_end[depth - 1] <= c->start)
            depth--;
        if (c->type == MOTE_JSON_OBJECT || c->type == MOTE_JSON_ARRAY) {
            if (depth == MOTE_JSON_MAX_DEPTH)
                return false;
            open_end[depth++] = c->end;
        }
    }
    return true;
}

/* jsmn accepts a few malformed texts ("[1,]", "{\"a\":}"); check that
 * commas and colons sit exactly between members, that primitives are
 * JSON's, and that strings hold no raw control character. */
static bool structure_ok(const struct mote_json *j)
{
    int t;

    for (t = 0; t < j->ntok; t++) {
        const struct mote_json_tok *c = &j->tok[t];
        int pos = c->start + 1, k, i;

        if (c->type == MOTE_JSON_PRIMITIVE &&
            !primitive_ok(j->text + c->start, (size_t)(c->end - c->start)))
            return false;
        if (c->type == MOTE_JSON_STRING) {
            /* RFC 8259: control characters in a string must be escaped. */
            for (k = c->start; k < c->end; k++) {
                if ((unsigned char)j->text[k] < 0x20)
                    return false;
            }
            continue;
        }
        if (c->type != MOTE_JSON_OBJECT && c->type != MOTE_JSON_ARRAY)
            continue;
        k = t + 1;
        for (i = 0; i < c->size; i++) {
            if (k >= j->ntok || !gap_ok(j->text, pos, j->tok[k].start, i == 0 ? 0 : ','))
                return false;
            if (c->type == MOTE_JSON_OBJECT) {
                if (j->tok[k].type != MOTE_JSON_STRING || j->tok[k].size != 1 || k + 1 >= j->ntok ||
                    !gap_ok(j->text, j->tok[k].end, j->tok[k + 1].start, ':'))
                    return false;
                k++;
            }
            pos = j->tok[k].end;
            k = mote_json_skip(j, k);
        }
        if (!gap_ok(j->text, pos, c->end - 1, 0))
            return false;
    }
    return true;
}

int mote_json_parse(struct mote_json *j, const char *text, size_t len)
{
    jsmn_parser p;
    size_t i;
    int n;

    j->text = text;
    j->len = len;
    j->ntok = 0;
    if (len > 0x7FFFFFFFu)
        return MOTE_ERR_TOO_LARGE;
    jsmn_init(&p);
    n = jsmn_parse(&p, text, len, (jsmntok_t *)(void *)j->tok, MOTE_JSON_MAX_TOKENS);
    if (n == JSMN_ERROR_NOMEM)
        return MOTE_ERR_TOO_LARGE;
    if (n == JSMN_ERROR_PART) {
        /* A bare number or literal is a whole text (RFC 8259), but strict
         * jsmn wants a delimiter after it: one token, checked here. */
        size_t a = 0, b = len;

        while (a < b && (text[a] == ' ' || text[a] == '\t' || text[a] == '\r' || text[a] == '\n'))
            a++;
        while (b > a && (text[b - 1] == ' ' || text[b - 1] == '\t' || text[b - 1] == '\r' ||
                         text[b - 1] == '\n'))
            b--;
        if (b > a && primitive_ok(text + a, b - a)) {
            j->tok[0].type = MOTE_JSON_PRIMITIVE;
            j->tok[0].start = (int)a;
            j->tok[0].end = (int)b;
            j->tok[0].size = 0;
            j->tok[0].parent = -1;
            j->ntok = 1;
            return 1;
        }
        return MOTE_ERR_BADMSG;
    }
    if (n <= 0)
        return MOTE_ERR_BADMSG;
    /* One complete value: the root spans every token, and nothing but
     * whitespace comes before it (jsmn skips a stray ':' or ',' there) or
     * after it. */
    j->ntok = n;
    if (mote_json_skip(j, 0) != n || !structure_ok(j))
        return MOTE_ERR_BADMSG;
    for (i = 0; i + (j->tok[0].type == MOTE_JSON_STRING) < (size_t)j->tok[0].start; i++) {
        char c = text[i];

        if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
            return MOTE_ERR_BADMSG;
    }
    if (!depth_ok(j))
        return MOTE_ERR_TOO_LARGE;
    for (i = (size_t)j->tok[0].end; i < len; i++) {
        char c = text[i];

        if (c != ' ' && c != '\t' && c != '\r' && c != '\n')
            return MOTE_ERR_BADMSG;
    }
    return n;
}

int mote_json_parse_object(struct mote_json *j, const char *text, size_t len, char *err,
                           size_t cap)
{
    int rc = mote_json_parse(j, text, len);

    if (cap > 0)
        err[0] = '\0';
    if (rc == MOTE_ERR_TOO_LARGE)
        return mote_why_num(err, cap, rc, "more than ", MOTE_JSON_MAX_TOKENS,
                            " JSON values (MOTE_JSON_MAX_TOKENS)");
    if (rc <= 0 || mote_json_type_of(j, 0) != MOTE_JSON_OBJECT)
        return mote_why(err, cap, MOTE_ERR_BADMSG, "not a JSON object", NULL, NULL);
    if (mote_json_strict(j, 0, MOTE_JSON_NO_DUP_KEYS, err, cap) < 0)
        return MOTE_ERR_BADMSG;
    return rc;
}

int mote_json_skip(const struct mote_json *j, int t)
{
    int k = t + 1;

    if (t < 0 || t >= j->ntok)
        return j->ntok;
    while (k < j->ntok && j->tok[k].start < j->tok[t].end)
        k++;
    return k;
}

enum mote_json_type mote_json_type_of(const struct mote_json *j, int t)
{
    if (t < 0 || t >= j->ntok)
        return MOTE_JSON_NONE;
    return (enum mote_json_type)j->tok[t].type;
}

bool mote_json_eq(const struct mote_json *j, int t, const char *s)
{
    size_t n = strlen(s);

    return mote_json_type_of(j, t) == MOTE_JSON_STRING &&
           (size_t)(j->tok[t].end - j->tok[t].start) == n &&
           memcmp(j->text + j->tok[t].start, s, n) == 0;
}

int mote_json_member(const struct mote_json *j, int obj, const char *key)
{
    int k, i;

    if (mote_json_type_of(j, obj) != MOTE_JSON_OBJECT)
        return -1;
    k = obj + 1;
    for (i = 0; i < j->tok[obj].size && k < j->ntok; i++) {
        int v = k + 1;

        if (v >= j->ntok)
            return -1;
        if (mote_json_eq(j, k, key))
            return v;
        k = mote_json_skip(j, v);
    }
    return -1;
}

int mote_json_elem(const struct mote_json *j, int arr, int idx)
{
    int k, i;

    if (mote_json_type_of(j, arr) != MOTE_JSON_ARRAY || idx < 0 || idx >= j->tok[arr].size)
        return -1;
    k = arr + 1;
    for (i = 0; i < idx; i++)
        k = mote_json_skip(j, k);
    return k < j->ntok ? k : -1;
}

int mote_json_path(const struct mote_json *j, int t, const char *path)
{
    char part[64];

    while (t >= 0 && *path != '\0') {
        size_t n = 0;

        while (*path != '\0' && *path != '.') {
            if (n + 1 >= sizeof(part))
                return -1;
            part[n++] = *path++;
        }
        part[n] = '\0';
        if (*path == '.')
            path++;
        if (mote_json_type_of(j, t) == MOTE_JSON_ARRAY) {
            int idx = 0;
            size_t i;

            for (i = 0; i < n; i++) {
                if (part[i] < '0' || part[i] > '9' || idx > 100000)
                    return -1;
                idx = idx * 10 + (part[i] - '0');
            }
            t = n == 0 ? -1 : mote_json_elem(j, t, idx);
        } else {
            t = mote_json_member(j, t, part);
        }
    }
    return t;
}

const char *mote_json_raw(const struct mote_json *j, int t, size_t *len)
{
    if (t < 0 || t >= j->ntok) {
        *len = 0;
        return "";
    }
    *len = (size_t)(j->tok[t].end - j->tok[t].start);
    return j->text + j->tok[t].start;
}

bool mote_json_is_null(const struct mote_json *j, int t)
{
    size_t n;
    const char *r;

    if (t < 0 || t >= j->ntok)
        return true;
    r = mote_json_raw(j, t, &n);
    return j->tok[t].type == MOTE_JSON_PRIMITIVE && n == 4 && memcmp(r, "null", 4) == 0;
}

int mote_json_bool(const struct mote_json *j, int t, bool *out)
{
    size_t n;
    const char *r;

    if (mote_json_type_of(j, t) != MOTE_JSON_PRIMITIVE)
        return MOTE_ERR_INVAL;
    r = mote_json_raw(j, t, &n);
    if (n == 4 && memcmp(r, "true", 4) == 0)
        *out = true;
    else if (n == 5 && memcmp(r, "false", 5) == 0)
        *out = false;
    else
        return MOTE_ERR_INVAL;
    return 0;
}

int mote_json_int(const struct mote_json *j, int t, int64_t *out)
{
    size_t n, i = 0;
    const char *r;
    uint64_t v = 0;
    bool neg = false;

    if (mote_json_type_of(j, t) != MOTE_JSON_PRIMITIVE)
        return MOTE_ERR_INVAL;
    r = mote_json_raw(j, t, &n);
    if (n > 0 && r[0] == '-') {
        neg = true;
        i = 1;
    }
    if (i == n)
        return MOTE_ERR_INVAL;
    for (; i < n; i++) {
        if (r[i] < '0' || r[i] > '9')
            return MOTE_ERR_INVAL;
        /* No 64-bit division: small targets have no instruction for it. */
        if (v > UINT64_C(922337203685477580) ||
            (v == UINT64_C(922337203685477580) && r[i] > '7'))
            return MOTE_ERR_RANGE;
        v = v * 10u + (uint64_t)(r[i] - '0');
    }
    *out = neg ? -(int64_t)v : (int64_t)v;
    return 0;
}

/* ---- UTF-8 ---- */

/* Length of a valid UTF-8 sequence at s (n bytes available), or 0. */
static size_t utf8_valid(const unsigned char *s, size_t n)
{
    uint32_t cp;
    size_t len, i;

    if (s[0] < 0x80)
        return 1;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) {
        len = 2;
        cp = s[0] & 0x1Fu;
    } else if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        len = 3;
        cp = s[0] & 0x0Fu;
    } else if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        len = 4;
        cp = s[0] & 0x07u;
    } else {
        return 0;
    }
    if (n < len)
        return 0;
    for (i = 1; i < len; i++) {
        if ((s[i] & 0xC0u) != 0x80u)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3Fu);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) ||
        (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
        return 0;
    return len;
}

bool mote_utf8_valid(const char *s, size_t n)
{
    size_t i = 0, v;

    while (i < n) {
        if ((unsigned char)s[i] < 0x80) {
            i++;
            continue;
        }
        v = utf8_valid((const unsigned char *)s + i, n - i);
        if (v == 0)
            return false;
        i += v;
    }
    return true;
}

static size_t utf8_put(uint32_t cp, char *o)
{
    if (cp < 0x80) {
        o[0] = (char)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (char)(0xC0 | (cp >> 6));
        o[1] = (char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (char)(0xE0 | (cp >> 12));
        o[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (char)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (char)(0xF0 | (cp >> 18));
    o[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

static int hex4(const char *s, uint32_t *out)
{
    uint32_t v = 0;
    int i;

    for (i = 0; i < 4; i++) {
        char c = s[i];

        v <<= 4;
        if (c >= '0' && c <= '9')
            v |= (uint32_t)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v |= (uint32_t)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v |= (uint32_t)(c - 'A' + 10);
        else
            return -1;
    }
    *out = v;
    return 0;
}

uint32_t mote_utf8_char(const char *s, size_t n, size_t *i)
{
    const unsigned char *u = (const unsigned char *)s + *i;
    size_t v = utf8_valid(u, n - *i);
    uint32_t cp;

    if (v == 0) {
        (*i)++;
        return 0xFFFD;
    }
    *i += v;
    if (v == 1)
        return u[0];
    cp = u[0] & (v == 2 ? 0x1Fu : v == 3 ? 0x0Fu : 0x07u);
    while (--v > 0)
        cp = (cp << 6) | (*++u & 0x3Fu);
    return cp;
}

size_t mote_utf8_put(uint32_t cp, char *out)
{
    return utf8_put(cp, out);
}

/* The character at s[*i] of a JSON string body (len bytes), escapes
 * decoded: a surrogate pair is one character, a lone surrogate or a
 * byte that is not UTF-8 is U+FFFD. Advances *i past it. */
static uint32_t next_char(const char *s, size_t len, size_t *i)
{
    const unsigned char *u = (const unsigned char *)s + *i;
    uint32_t cp;

    if (u[0] == '\\' && *i + 1 < len) {
        char e = s[*i + 1];

        *i += 2;
        switch (e) {
        case 'n': return '\n';
        case 't': return '\t';
        case 'r': return '\r';
        case 'b': return '\b';
        case 'f': return '\f';
        case 'u':
            if (*i + 4 > len || hex4(s + *i, &cp) < 0)
                return 0xFFFD;
            *i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                uint32_t lo;

                if (*i + 6 <= len && s[*i] == '\\' && s[*i + 1] == 'u' &&
                    hex4(s + *i + 2, &lo) == 0 && lo >= 0xDC00 && lo <= 0xDFFF) {
                    *i += 6;
                    return 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                }
                return 0xFFFD; /* lone high surrogate */
            }
            return cp >= 0xDC00 && cp <= 0xDFFF ? 0xFFFD : cp; /* lone low surrogate */
        default: /* \" \\ \/ (strict jsmn takes no other escape) */
            return (unsigned char)e;
        }
    }
    return mote_utf8_char(s, len, i);
}

uint32_t mote_json_char(const char *s, size_t len, size_t *i)
{
    return next_char(s, len, i);
}

int mote_json_unescape(const char *s, size_t len, char *out, size_t cap)
{
    size_t i = 0, o = 0;

    if (cap == 0)
        return MOTE_ERR_TOO_LARGE;
    while (i < len) {
        char tmp[4];
        size_t tn = utf8_put(next_char(s, len, &i), tmp);

        if (o + tn >= cap) {
            out[o] = '\0'; /* the prefix that fits */
            return MOTE_ERR_TOO_LARGE;
        }
        memcpy(out + o, tmp, tn);
        o += tn;
    }
    out[o] = '\0';
    return (int)o;
}

/* True if string tokens a and b are the same text once unescaped, as
 * the writer re-emits them (a byte that is not UTF-8 is U+FFFD there:
 * two keys that differ only in such bytes are the same key). */
static bool same_text(const struct mote_json *j, int a, int b)
{
    size_t an, bn, i = 0, k = 0;
    const char *as = mote_json_raw(j, a, &an), *bs = mote_json_raw(j, b, &bn);

    /* Bytes compared as they are only where each is its own character:
     * no escape, and valid UTF-8 (an invalid byte reads as U+FFFD, so
     * "a\xE5" and "a\x9A" are one name to any reader that replaces it). */
    if (memchr(as, '\\', an) == NULL && memchr(bs, '\\', bn) == NULL &&
        mote_utf8_valid(as, an) && mote_utf8_valid(bs, bn))
        return an == bn && memcmp(as, bs, an) == 0;
    while (i < an && k < bn) {
        if (next_char(as, an, &i) != next_char(bs, bn, &k))
            return false;
    }
    return i == an && k == bn;
}

/* True if string token t holds U+0000 once unescaped. */
static bool holds_nul(const struct mote_json *j, int t)
{
    size_t n, i = 0;
    const char *r = mote_json_raw(j, t, &n);

    if (memchr(r, '\\', n) == NULL)
        return false; /* raw control bytes are refused by the parser */
    while (i < n) {
        if (next_char(r, n, &i) == 0)
            return true;
    }
    return false;
}

/* The reason `what` "NAME" into err, NAME being string token t's text
 * (cut to a few words, control bytes and quotes as '?'). */
static int strict_why(const struct mote_json *j, int t, const char *what, char *err, size_t cap)
{
    char name[48];
    size_t n;
    const char *r = mote_json_raw(j, t, &n);
    struct mote_sb sb;

    (void)mote_json_unescape(r, n, name, sizeof(name)); /* too long: the prefix that fits */
    for (n = 0; name[n] != '\0'; n++) {
        if ((unsigned char)name[n] < 0x20 || name[n] == '"')
            name[n] = '?';
    }
    if (cap > 0) {
        mote_sb_init(&sb, err, cap);
        mote_sb_s(&sb, what);
        mote_sb_s(&sb, " \"");
        mote_sb_s(&sb, name);
        mote_sb_s(&sb, "\"");
    }
    return MOTE_ERR_BADMSG;
}

int mote_json_strict(const struct mote_json *j, int t, unsigned flags, char *err, size_t cap)
{
    int end = mote_json_skip(j, t), k;

    if (cap > 0)
        err[0] = '\0';
    if (t < 0 || t >= j->ntok)
        return 0;
    for (k = t; k < end; k++) {
        const struct mote_json_tok *c = &j->tok[k];

        if ((flags & MOTE_JSON_NO_NUL) && c->type == MOTE_JSON_STRING && holds_nul(j, k)) {
            /* name the member whose key or value it is */
            int key = c->size == 1 ? k : (c->parent >= 0 && j->tok[c->parent].type ==
                                          MOTE_JSON_STRING ? c->parent : -1);

            if (key >= 0)
                return strict_why(j, key, "a NUL (\\u0000) in member", err, cap);
            return mote_why(err, cap, MOTE_ERR_BADMSG, "a string holds a NUL (\\u0000)", NULL,
                            NULL);
        }
        if ((flags & MOTE_JSON_NO_DUP_KEYS) && c->type == MOTE_JSON_OBJECT) {
            int a = k + 1, i, b, m;

            for (i = 0; i < c->size && a < end; i++) {
                for (b = mote_json_skip(j, a + 1), m = i + 1; m < c->size && b < end; m++) {
                    if (same_text(j, a, b))
                        return strict_why(j, b, "duplicate key", err, cap);
                    b = mote_json_skip(j, b + 1);
                }
                a = mote_json_skip(j, a + 1);
            }
        }
    }
    return 0;
}

int mote_json_cstr(const struct mote_json *j, int t, char *out, size_t cap)
{
    if (mote_json_type_of(j, t) == MOTE_JSON_STRING && holds_nul(j, t)) {
        if (cap > 0)
            out[0] = '\0';
        return MOTE_ERR_BADMSG;
    }
    return mote_json_str(j, t, out, cap);
}

int mote_json_str(const struct mote_json *j, int t, char *out, size_t cap)
{
    size_t n;
    const char *r;

    if (mote_json_type_of(j, t) != MOTE_JSON_STRING)
        return MOTE_ERR_INVAL;
    r = mote_json_raw(j, t, &n);
    return mote_json_unescape(r, n, out, cap);
}

/* ---- writer ---- */

/* Eight bytes at once: true when none of them needs escaping or a UTF-8
 * check (all are ASCII, none is below 0x20, '"' or '\\'). A body's long
 * strings are mostly such bytes, and a long one is escaped again at each
 * read of a request body (mote_llm_body_read skips what was sent). */
static bool plain8(const char *p)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t v, q, b;

    memcpy(&v, p, sizeof(v));
    q = v ^ (ones * '"');
    b = v ^ (ones * '\\');
    return ((v | ((v - ones * 0x20) & ~v) | ((q - ones) & ~q) | ((b - ones) & ~b)) & highs) == 0;
}

int mote_json_escape_to(mote_sink_fn sink, void *arg, const char *s, size_t n)
{
    static const char hexd[] = "0123456789abcdef";
    size_t i = 0, run = 0;
    int rc;

    while (i < n) {
        unsigned char c;
        char esc[8];
        size_t en = 0, v;

        while (n - i >= 8 && plain8(s + i)) {
            run += 8;
            i += 8;
        }
        if (i == n)
            break;
        c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            run++;
            i++;
            continue;
        }
        if (c >= 0x80) {
            v = utf8_valid((const unsigned char *)s + i, n - i);
            if (v > 0) {
                run += v;
                i += v;
                continue;
            }
        }
        if (run > 0 && (rc = sink(arg, s + i - run, run)) < 0)
            return rc;
        run = 0;
        if (c == '"' || c == '\\') {
            esc[0] = '\\';
            esc[1] = (char)c;
            en = 2;
        } else if (c == '\n') {
            memcpy(esc, "\\n", 2);
            en = 2;
        } else if (c == '\t') {
            memcpy(esc, "\\t", 2);
            en = 2;
        } else if (c == '\r') {
            memcpy(esc, "\\r", 2);
            en = 2;
        } else if (c < 0x20) {
            memcpy(esc, "\\u00", 4);
            esc[4] = hexd[c >> 4];
            esc[5] = hexd[c & 15];
            en = 6;
        } else {
            memcpy(esc, "\\ufffd", 6); /* invalid UTF-8 byte */
            en = 6;
        }
        if ((rc = sink(arg, esc, en)) < 0)
            return rc;
        i++;
    }
    if (run > 0 && (rc = sink(arg, s + n - run, run)) < 0)
        return rc;
    return 0;
}

void mote_jw_init(struct mote_jw *w, mote_sink_fn sink, void *arg)
{
    memset(w, 0, sizeof(*w));
    w->sink = sink;
    w->arg = arg;
}

static void put(struct mote_jw *w, const char *p, size_t n)
{
    int rc;

    if (w->err != 0 || n == 0)
        return;
    rc = w->sink(w->arg, p, n);
    if (rc < 0)
        w->err = rc;
    else
        w->written += n;
}

void mote_jw_bytes(struct mote_jw *w, const char *p, size_t n)
{
    put(w, p, n);
}

/* The writer's sink, with the bytes it took counted. */
static int counted_sink(void *arg, const char *p, size_t n)
{
    struct mote_jw *w = arg;
    int rc;

    rc = w->sink(w->arg, p, n);
    if (rc >= 0)
        w->written += n;
    return rc;
}

/* Comma before a value or key, unless it follows a key. */
static void sep(struct mote_jw *w)
{
    if (w->after_key) {
        w->after_key = false;
        return;
    }
    if (w->depth > 0 && (w->has_items & (1u << (w->depth - 1))))
        put(w, ",", 1);
    if (w->depth > 0)
        w->has_items |= 1u << (w->depth - 1);
}

static void open_c(struct mote_jw *w, char c)
{
    sep(w);
    if (w->depth >= 32) {
        w->err = MOTE_ERR_TOO_LARGE;
        return;
    }
    put(w, &c, 1);
    w->depth++;
    w->has_items &= ~(1u << (w->depth - 1));
}

static void close_c(struct mote_jw *w, char c)
{
    if (w->depth == 0) {
        w->err = MOTE_ERR_INVAL;
        return;
    }
    w->depth--;
    put(w, &c, 1);
}

void mote_jw_obj(struct mote_jw *w) { open_c(w, '{'); }
void mote_jw_obj_end(struct mote_jw *w) { close_c(w, '}'); }
void mote_jw_arr(struct mote_jw *w) { open_c(w, '['); }
void mote_jw_arr_end(struct mote_jw *w) { close_c(w, ']'); }

void mote_jw_strn(struct mote_jw *w, const char *s, size_t n)
{
    int rc;

    sep(w);
    put(w, "\"", 1);
    if (w->err == 0 && (rc = mote_json_escape_to(counted_sink, w, s, n)) < 0)
        w->err = rc;
    put(w, "\"", 1);
}

void mote_jw_str_begin(struct mote_jw *w)
{
    sep(w);
    put(w, "\"", 1);
}

void mote_jw_str_more(struct mote_jw *w, const char *s, size_t n)
{
    int rc;

    if (w->err == 0 && (rc = mote_json_escape_to(counted_sink, w, s, n)) < 0)
        w->err = rc;
}

void mote_jw_str_end(struct mote_jw *w)
{
    put(w, "\"", 1);
}

void mote_jw_str2(struct mote_jw *w, const char *a, size_t an, const char *b, size_t bn)
{
    int rc;

    sep(w);
    put(w, "\"", 1);
    if (w->err == 0 && (rc = mote_json_escape_to(counted_sink, w, a, an)) < 0)
        w->err = rc;
    if (w->err == 0 && (rc = mote_json_escape_to(counted_sink, w, b, bn)) < 0)
        w->err = rc;
    put(w, "\"", 1);
}

void mote_jw_str(struct mote_jw *w, const char *s)
{
    mote_jw_strn(w, s, strlen(s));
}

void mote_jw_key(struct mote_jw *w, const char *key)
{
    mote_jw_strn(w, key, strlen(key));
    put(w, ":", 1);
    w->after_key = true;
}

void mote_jw_int(struct mote_jw *w, int64_t v)
{
    char buf[24];
    size_t n = 0;

    if (v < 0)
        buf[n++] = '-';
    n += mote_u64_dec(v < 0 ? (uint64_t)0 - (uint64_t)v : (uint64_t)v, buf + n);
    sep(w);
    put(w, buf, n);
}

void mote_jw_bool(struct mote_jw *w, bool v)
{
    sep(w);
    put(w, v ? "true" : "false", v ? 4 : 5);
}

void mote_jw_null(struct mote_jw *w)
{
    sep(w);
    put(w, "null", 4);
}

void mote_jw_kstr(struct mote_jw *w, const char *key, const char *s)
{
    mote_jw_key(w, key);
    mote_jw_str(w, s);
}

void mote_jw_kint(struct mote_jw *w, const char *key, int64_t v)
{
    mote_jw_key(w, key);
    mote_jw_int(w, v);
}

void mote_jw_kbool(struct mote_jw *w, const char *key, bool v)
{
    mote_jw_key(w, key);
    mote_jw_bool(w, v);
}

void mote_jw_raw(struct mote_jw *w, const char *json, size_t n)
{
    sep(w);
    put(w, json, n);
}

/* A string token's raw body re-encoded: escapes kept (the tokenizer
 * checked them), raw control characters escaped, invalid UTF-8 as \ufffd. */
static void reenc_string(struct mote_jw *w, const char *s, size_t n)
{
    static const char hexd[] = "0123456789abcdef";
    size_t i = 0, run = 0;

    put(w, "\"", 1);
    while (i < n) {
        unsigned char c = (unsigned char)s[i];
        size_t v;

        if (c == '\\' && i + 1 < n) {
            run += 2;
            i += 2;
            continue;
        }
        if (c >= 0x20 && c < 0x7f && c != '"') {
            run++;
            i++;
            continue;
        }
        if (c >= 0x80 && (v = utf8_valid((const unsigned char *)s + i, n - i)) > 0) {
            run += v;
            i += v;
            continue;
        }
        if (run > 0)
            put(w, s + i - run, run);
        run = 0;
        if (c >= 0x80) {
            put(w, "\\ufffd", 6);
        } else {
            char esc[6] = {'\\', 'u', '0', '0', hexd[c >> 4], hexd[c & 15]};

            put(w, esc, sizeof(esc));
        }
        i++;
    }
    if (run > 0)
        put(w, s + n - run, run);
    put(w, "\"", 1);
}

static void reenc(struct mote_jw *w, const struct mote_json *j, int t, unsigned depth)
{
    const struct mote_json_tok *k;
    int i, c;

    if (w->err != 0)
        return;
    if (t < 0 || t >= j->ntok) {
        w->err = MOTE_ERR_INVAL;
        return;
    }
    k = &j->tok[t];
    switch (k->type) {
    case MOTE_JSON_OBJECT:
    case MOTE_JSON_ARRAY:
        if (depth >= MOTE_JSON_MAX_DEPTH) {
            w->err = MOTE_ERR_INVAL; /* the parser never takes one this deep */
            return;
        }
        put(w, k->type == MOTE_JSON_OBJECT ? "{" : "[", 1);
        for (i = 0, c = t + 1; i < k->size && w->err == 0; i++) {
            if (i > 0)
                put(w, ",", 1);
            if (k->type == MOTE_JSON_OBJECT) {
                if (c >= j->ntok || j->tok[c].type != MOTE_JSON_STRING) {
                    w->err = MOTE_ERR_INVAL;
                    return;
                }
                reenc_string(w, j->text + j->tok[c].start,
                             (size_t)(j->tok[c].end - j->tok[c].start));
                put(w, ":", 1);
                c++;
            }
            reenc(w, j, c, depth + 1);
            c = mote_json_skip(j, c);
        }
        put(w, k->type == MOTE_JSON_OBJECT ? "}" : "]", 1);
        break;
    case MOTE_JSON_STRING:
        reenc_string(w, j->text + k->start, (size_t)(k->end - k->start));
        break;
    case MOTE_JSON_PRIMITIVE:
        if (!primitive_ok(j->text + k->start, (size_t)(k->end - k->start))) {
            w->err = MOTE_ERR_INVAL;
            return;
        }
        put(w, j->text + k->start, (size_t)(k->end - k->start));
        break;
    default:
        w->err = MOTE_ERR_INVAL;
    }
}

void mote_jw_value(struct mote_jw *w, const struct mote_json *j, int t)
{
    sep(w);
    reenc(w, j, t, 0);
}
