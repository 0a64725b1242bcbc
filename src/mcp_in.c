/*
 * mcp_in.c - a message read into a server's answer buffer (s->inbuf) kept
 * within it, whatever its size: a tools/list answer is taken entry by
 * entry (each tool parsed on its own, its bytes then freed; a tool larger
 * than the buffer skipped and named); a tools/call result's long strings
 * are cut and, when that is not enough, the rest of the member being read
 * (its content, its structuredContent) is left out, the cut said to the
 * model. Every other message is framed as it is, and dropped when over
 * the buffer. The transports feed every byte through mote_mcp_in_put.
 */
#include <string.h>

#include "mcp_int.h"
#include "mote/mote.h"

/* s->in_flags, besides MCP_IN_CUT and MCP_IN_BEGAN (mcp_int.h) */
#define F_SKIP 0x01u  /* the bytes are being skipped (not kept) */
#define F_STR 0x02u   /* ... inside a string */
#define F_ESC 0x04u   /* ... just after its backslash */
#define F_QUOTE 0x08u /* a cut string: its closing quote is kept at the skip's end */
#define F_COMMA 0x10u /* a tools entry was taken: the ',' after it is dropped */

/* How deep a skip may nest (counted, not kept). */
#define SKIP_DEPTH 200u
/* The longest string of a call's result kept whole (raw JSON bytes). */
#define STR_KEEP (MOTE_MCP_RESULT_MAX)
/* The levels the walk knows (MOTE_JSON_MAX_DEPTH is no deeper). */
#define LEVELS 64u
/* The values of a call's answer kept (the protocol parses it whole, in
 * MOTE_JSON_MAX_TOKENS: what follows a cut member needs a few). */
#define VALUES_KEPT (MOTE_JSON_MAX_TOKENS - 32)

static bool ws(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* The longest prefix of string bytes p[0..n) of at most `max` bytes that
 * ends between two characters: never inside an escape, a UTF-8 sequence
 * or a surrogate pair. */
static size_t safe_cut(const char *p, size_t n, size_t max)
{
    size_t i = 0, best = 0;

    while (i < n && i <= max) {
        unsigned char c = (unsigned char)p[i];
        size_t step = 1;

        if (c == '\\') {
            step = i + 1 < n && p[i + 1] == 'u' ? 6 : 2;
            if (step == 6 && i + 12 <= n && (p[i + 2] == 'd' || p[i + 2] == 'D') &&
                strchr("89abAB", p[i + 3]) != NULL && p[i + 6] == '\\')
                step = 12; /* a high surrogate and its low one */
        } else if (c >= 0xc0) {
            step = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : 2;
        }
        if (i + step > max || i + step > n)
            break;
        i += step;
        best = i;
    }
    return best;
}

static bool key_is(const char *buf, size_t at, size_t n, const char *key)
{
    return at != 0 && n == strlen(key) && memcmp(buf + at, key, n) == 0;
}

/* A tools/list entry too large for the buffer: said, with its name when
 * it came before the buffer filled. */
static void skipped(struct mote_mcp_server *s, const char *buf, size_t name, size_t n)
{
    char shown[65];
    size_t i;

    if (n >= sizeof(shown))
        n = sizeof(shown) - 1;
    for (i = 0; i < n && name != 0; i++)
        shown[i] = buf[name + i] >= 0x20 && buf[name + i] < 0x7f ? buf[name + i] : '?';
    shown[name != 0 ? n : 0] = '\0';
    s->skipped_tools++;
    mcp_log(s, "skipped the tool ", name != 0 ? shown : "(its name did not come first)",
            ": its entry in tools/list is over MOTE_MCP_LINE_MAX bytes");
}

/*
 * Walks the message in buf[0..*len) (a part of it, when `end` is false:
 * the buffer is full) and frees what it can: a tools/list answer's whole
 * entries are handed to the protocol and removed; a call result's long
 * strings are cut. When the buffer is full and that is not enough, the
 * entry or the string or the member being read is left out, the rest of
 * it skipped as it comes (s->in_flags). At the end (`end`), a call
 * answer's member in which the values pass VALUES_KEPT is cut there.
 * True when room was made (`end`: when a member was cut).
 */
static bool walk(struct mote_mcp_server *s, char *buf, size_t *lenp, size_t cap, bool end)
{
    enum { NONE, LIST, CALL } mode = NONE;
    size_t len = *lenp, start_len = *lenp, i, str = 0, vals = 0;
    char prev = '\0'; /* the last structural byte */
    size_t k1 = 0, k1n = 0, k2 = 0, k2n = 0, k4 = 0, k4n = 0, name = 0, namen = 0;
    size_t body = 0, upto = 0, es = 0, p = 0;
    uint64_t arr = 0, val = 0, parr = 0; /* per level: an array; a member's value is next */
    unsigned d = 0, pd = 0;
    bool in_str = false, esc = false, result = false, tools = false, closed = false;
    bool sepless = false, cut = false;
    /* a call's member is cut no later than here: a quarter of the buffer freed */
    size_t keep_to = end ? len : cap > 4 * LEVELS ? cap - cap / 4 - LEVELS : 0;
    /* a call's string is cut to this (raw bytes); not at the end: it fit */
    size_t str_keep = end ? len : STR_KEEP < cap / 2 ? STR_KEEP : cap / 2;

    if (s->req_id != 0 && s->req_kind == MCP_REQ_LIST)
        mode = LIST;
    else if (s->req_id != 0 && s->req_kind == MCP_REQ_CALL)
        mode = CALL;
    if (mode == NONE)
        return false;
    for (i = 0; i < len; i++) {
        char c = buf[i];
        uint64_t bit = d > 0 ? (uint64_t)1 << (d - 1) : 0;

        if (in_str) {
            if (esc) {
                esc = false;
            } else if (c == '\\') {
                esc = true;
            } else if (c == '"') {
                size_t n = i - str - 1;

                in_str = false;
                if (d > 0 && !(arr & bit) && !(val & bit)) { /* a key */
                    if (d == 1)
                        k1 = str + 1, k1n = n;
                    else if (d == 2)
                        k2 = str + 1, k2n = n;
                    else if (d == 4)
                        k4 = str + 1, k4n = n;
                    continue;
                }
                if (tools && d == 4 && key_is(buf, k4, k4n, "name"))
                    name = str + 1, namen = n;
                if (mode == CALL && result && d >= 2 && n > str_keep) {
                    size_t keep = safe_cut(buf + str + 1, n, str_keep);

                    memmove(buf + str + 1 + keep, buf + i, len - i);
                    len -= n - keep;
                    i = str + 1 + keep;
                    cut = true;
                }
            }
            continue;
        }
        if (c == '"' || c == '{' || c == '[' ||
            ((prev == '[' || prev == ',' || prev == ':') && !ws(c) && c != ']'))
            vals++; /* (a scalar counted at its first byte) */
        if (!ws(c))
            prev = c;
        switch (c) {
        case '"':
            in_str = true;
            str = i;
            if (tools && d == 3 && es == 0)
                es = i;
            break;
        case '{':
        case '[':
            if (d >= LEVELS)
                return false;
            if (tools && d == 3 && es == 0)
                es = i;
            if (d == 1 && c == '{' && (val & bit) && key_is(buf, k1, k1n, "result"))
                result = true;
            if (mode == LIST && d == 2 && c == '[' && result && (val & bit) &&
                key_is(buf, k2, k2n, "tools")) {
                tools = true;
                body = i + 1;
            }
            d++;
            bit = (uint64_t)1 << (d - 1);
            arr = c == '[' ? arr | bit : arr & ~bit;
            val &= ~bit;
            if (d == 4)
                k4 = 0;
            if (mode == CALL && result && d >= 3 && i + 1 <= keep_to && vals <= VALUES_KEPT)
                p = i + 1, pd = d, parr = arr;
            break;
        case '}':
        case ']':
            if (d == 0)
                return false;
            d--;
            if (tools && d == 3 && es != 0) {
                s->m->up->tool(s, buf + es, i + 1 - es, name > es ? buf + name : NULL, namen);
                es = 0;
                sepless = true;
            } else if (tools && d == 2) {
                if (es != 0)
                    s->m->up->tool(s, buf + es, i - es, NULL, 0); /* (not an object) */
                tools = false;
                closed = true;
                upto = i;
                es = 0;
            }
            if (d == 1)
                result = false;
            if (mode == CALL && result && d >= 3 && i + 1 <= keep_to && vals <= VALUES_KEPT) {
                p = i + 1, pd = d, parr = arr;
            } else if (d < 3) {
                if (end && mode == CALL && d == 2 && p != 0 && vals > VALUES_KEPT) {
                    /* This member passed the values kept: cut at the last
                     * place before, closed, and what follows it kept. */
                    size_t at = p;
                    unsigned l;

                    for (l = pd; l >= 3; l--)
                        buf[at++] = (parr & ((uint64_t)1 << (l - 1))) ? ']' : '}';
                    memmove(buf + at, buf + i + 1, len - i - 1);
                    *lenp = at + len - i - 1;
                    s->in_flags |= MCP_IN_CUT;
                    return true;
                }
                p = 0;
            }
            break;
        case ':':
            val |= bit;
            break;
        case ',':
            val &= ~bit;
            if (tools && d == 3) {
                if (es != 0)
                    s->m->up->tool(s, buf + es, i - es, NULL, 0); /* (not an object) */
                es = 0;
                sepless = false;
            }
            if (mode == CALL && result && d >= 3 && i <= keep_to && vals <= VALUES_KEPT)
                p = i, pd = d, parr = arr;
            break;
        default:
            if (tools && d == 3 && es == 0 && !ws(c))
                es = i;
            break;
        }
    }
    if (mode == LIST && body != 0) {
        /* The entries taken leave the buffer (the array keeps its '['). */
        if (!closed)
            upto = es != 0 ? es : len;
        if (upto > body) {
            memmove(buf + body, buf + upto, len - upto);
            len -= upto - body;
            if (es != 0)
                es = body;
            if (!closed && es == 0 && sepless)
                s->in_flags |= F_COMMA;
        }
        if (!end && len == start_len && tools && es != 0) {
            /* One entry fills the buffer: skipped to its end. */
            unsigned rel = d - 3;

            if (rel == 0 && !in_str)
                return false;
            skipped(s, buf, name > es ? name : 0, namen);
            len = es;
            s->in_rel = (uint8_t)rel;
            s->in_flags |= F_SKIP | F_COMMA | (in_str ? F_STR : 0u) | (esc ? F_ESC : 0u);
        }
    }
    if (end) {
        if (cut)
            s->in_flags |= MCP_IN_CUT;
        *lenp = len;
        return false;
    }
    if (mode == CALL && in_str && result && d >= 2 &&
        ((arr & ((uint64_t)1 << (d - 1))) != 0 || (val & ((uint64_t)1 << (d - 1))) != 0)) {
        size_t n = len - str - 1;

        if (n > str_keep) {
            /* a long string still coming: its start kept, the rest skipped */
            len = str + 1 + safe_cut(buf + str + 1, n, str_keep);
            s->in_rel = 0;
            s->in_flags |= F_SKIP | F_STR | F_QUOTE | (esc ? F_ESC : 0u);
            cut = true;
        }
    }
    if (mode == CALL && !end && !(s->in_flags & F_SKIP) && start_len - len < cap / 4 && p != 0 &&
        d >= 3) {
        /* Still too full: the member being read ends at the last whole
         * value, the rest of it skipped as it comes. */
        unsigned l;

        len = p;
        for (l = pd; l >= 3; l--)
            buf[len++] = (parr & ((uint64_t)1 << (l - 1))) ? ']' : '}';
        s->in_rel = (uint8_t)(d - 2);
        s->in_flags |= F_SKIP | (in_str ? F_STR : 0u) | (esc ? F_ESC : 0u);
        cut = true;
    }
    if (cut)
        s->in_flags |= MCP_IN_CUT;
    *lenp = len;
    return len < start_len || (s->in_flags & F_SKIP);
}

bool mote_mcp_in_put(struct mote_mcp_server *s, char *buf, size_t *len, size_t cap, char c)
{
    uint8_t f;

    if (*len == 0 && !(s->in_flags & F_SKIP)) /* a new message */
        s->in_flags &= (uint8_t)~(F_COMMA | MCP_IN_BEGAN | MCP_IN_CUT);
    f = s->in_flags;
    if (f & F_SKIP) {
        if (f & F_STR) {
            if (f & F_ESC)
                f &= (uint8_t)~F_ESC;
            else if (c == '\\')
                f |= F_ESC;
            else if (c == '"')
                f &= (uint8_t)~F_STR;
            if (!(f & F_STR) && s->in_rel == 0) {
                f &= (uint8_t)~F_SKIP;
                if (f & F_QUOTE) {
                    f &= (uint8_t)~F_QUOTE;
                    buf[(*len)++] = '"'; /* (room: the string was cut) */
                }
            }
        } else if (c == '"') {
            f |= F_STR;
        } else if (c == '{' || c == '[') {
            if (s->in_rel >= SKIP_DEPTH)
                return false;
            s->in_rel++;
        } else if ((c == '}' || c == ']') && s->in_rel > 0 && --s->in_rel == 0) {
            f &= (uint8_t)~F_SKIP;
        }
        s->in_flags = f;
        return true;
    }
    if (f & F_COMMA) {
        if (ws(c))
            return true;
        s->in_flags &= (uint8_t)~F_COMMA;
        if (c == ',')
            return true;
    }
    if (*len + 1 >= cap) {
        if (!walk(s, buf, len, cap, false))
            return false;
        return mote_mcp_in_put(s, buf, len, cap, c); /* (once: room was made) */
    }
    buf[(*len)++] = c;
    return true;
}

void mote_mcp_in_end(struct mote_mcp_server *s, char *buf, size_t *len)
{
    unsigned n;

    /* (a call's members cut one by one, as long as the values are too many) */
    for (n = 0; n < 8 && !(s->in_flags & F_SKIP) && walk(s, buf, len, *len + 1, true); n++) {
    }
    s->in_flags &= (uint8_t)~(F_SKIP | F_STR | F_ESC | F_QUOTE | F_COMMA);
    s->in_rel = 0;
}

void mote_mcp_in_reset(struct mote_mcp_server *s)
{
    s->in_flags = 0;
    s->in_rel = 0;
}
