/* show_call.c - a tool call's display (mote_show_call, mote_show_summary,
 * mote_show_result in mote_show.h): every member of its input, exactly, as lines to a
 * sink. Strings are read a character at a time from the JSON text (no
 * buffer the size of the input); a long text is shown as its head and
 * tail with what lies between counted. */
#include <string.h>

#include "mote/mote_err.h"
#include "mote/mote_show.h"
#include "show.h"
#include "util.h"

#define WHOLE_LINES 60   /* a text of at most this many lines ... */
#define WHOLE_BYTES 8192 /* ... and bytes is always shown whole */
#define HEAD_LINES 30    /* else its first lines ... */
#define HEAD_BYTES 3072
#define TAIL_LINES 10    /* ... and its last ones */
#define TAIL_BYTES 1024
#define BLANK_RUN 24     /* a run of this many blanks or more is counted, not drawn */
#define SHORT_VALUE 100  /* a one-line string up to this long goes after its key */
#define KEY_MAX 64       /* a member's name as shown, bytes with the NUL */

/* A text: the body of a JSON string (escapes decoded as it is read) or
 * bytes as they are. Positions are in `s`; a character's decoded length
 * is what counts as its bytes. */
struct txt {
    const char *s;
    size_t n;
    bool json;
};

static uint32_t next(const struct txt *t, size_t *i)
{
    return t->json ? mote_json_char(t->s, t->n, i) : mote_utf8_char(t->s, t->n, i);
}

/* The next character of t, and the bytes it counts for: its UTF-8
 * length in a JSON string (as unescaped), the bytes it takes in raw
 * text (an invalid byte is one, shown as U+FFFD). */
static uint32_t step(const struct txt *t, size_t *i, size_t *len)
{
    size_t at = *i;
    uint32_t cp = next(t, i);

    *len = !t->json ? *i - at : cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
    return cp;
}

/* One display under way: text shown as it is is gathered, stand-ins go
 * at once; the first sink error stops everything. */
struct show {
    const struct mote_show_sink *sink;
    int err;
    size_t len;
    char buf[128];
};

static void flush(struct show *sh)
{
    int rc;

    if (sh->len > 0 && sh->err == 0 &&
        (rc = sh->sink->text(sh->sink->arg, sh->buf, sh->len, false)) < 0)
        sh->err = rc;
    sh->len = 0;
}

static void put(struct show *sh, const char *s, size_t n, bool visible)
{
    int rc;

    if (sh->err != 0)
        return;
    if (visible) {
        flush(sh);
        if (sh->err == 0 && (rc = sh->sink->text(sh->sink->arg, s, n, true)) < 0)
            sh->err = rc;
        return;
    }
    if (sh->len + n > sizeof(sh->buf))
        flush(sh);
    memcpy(sh->buf + sh->len, s, n);
    sh->len += n;
}

static void begin(struct show *sh, const struct mote_show_line *l)
{
    int rc;

    if (sh->err == 0 && (rc = sh->sink->begin(sh->sink->arg, l)) < 0)
        sh->err = rc;
}

static void end(struct show *sh, const struct mote_show_line *l)
{
    int rc;

    flush(sh);
    if (sh->err == 0 && (rc = sh->sink->end(sh->sink->arg, l)) < 0)
        sh->err = rc;
}

static void put_cp(struct show *sh, uint32_t cp, int mode)
{
    char o[MOTE_SHOW_CP_MAX];
    bool vis;
    size_t k = mote_show_cp(cp, mode, o, &vis);

    put(sh, o, k, vis);
}

/* t's characters a..b, each made safe in `mode` (no blank counted). */
static void put_txt(struct show *sh, const struct txt *t, int mode)
{
    size_t i = 0;

    while (i < t->n && sh->err == 0)
        put_cp(sh, next(t, &i), mode);
}

/* The text of one line, t[a..b) (no newline in it): exact, with a long
 * run of blanks as its count. */
static void line_text(struct show *sh, const struct txt *t, size_t a, size_t b)
{
    size_t i = a;

    while (i < b && sh->err == 0) {
        size_t at = i, k, count = 0, spaces = 0;
        uint32_t cp = next(t, &i);

        if (cp != ' ' && cp != '\t') {
            put_cp(sh, cp, MOTE_SHOW_EXACT);
            continue;
        }
        for (k = at; k < b;) {
            size_t p = k;
            uint32_t c = next(t, &k);

            if (c != ' ' && c != '\t') {
                k = p;
                break;
            }
            count++;
            spaces += c == ' ';
        }
        if (count >= BLANK_RUN) {
            char o[40];
            size_t n = 1;

            o[0] = '<';
            n += mote_u64_dec(count, o + 1);
            n += mote_str_copy(o + n, sizeof(o) - n,
                               spaces == count ? " spaces>" : spaces == 0 ? " tabs>"
                                                                          : " spaces and tabs>");
            put(sh, o, n, true);
        } else {
            for (i = at; i < k;)
                put_cp(sh, next(t, &i), MOTE_SHOW_EXACT);
        }
        i = k;
    }
}

/* The lines of t[a..b), each a LINE after `mark`. */
static void lines_out(struct show *sh, char mark, const struct txt *t, size_t a, size_t b)
{
    struct mote_show_line l;

    memset(&l, 0, sizeof(l));
    l.kind = MOTE_SHOW_LINE;
    l.mark = mark;
    l.file = -2;
    while (a < b && sh->err == 0) {
        size_t i = a, eol = b;

        while (i < b) {
            size_t p = i;

            if (next(t, &i) == '\n') {
                eol = p;
                break;
            }
        }
        begin(sh, &l);
        line_text(sh, t, a, eol);
        end(sh, &l);
        a = i;
    }
}

/* Where a long text is cut (positions in t->s): after its head, and at
 * the start of its tail; *hd and *td their places in decoded bytes.
 * `n` is the text's decoded length. */
static void cut_points(const struct txt *t, uint64_t n, size_t *head, size_t *tail, uint64_t *hd,
                       uint64_t *td)
{
    struct {
        size_t at;
        uint64_t d;
    } ring[TAIL_LINES + 1];
    uint64_t d = 0, lim = n > TAIL_BYTES ? n - TAIL_BYTES : 0;
    size_t cnt = 0; /* newlines seen (size_t: no 64-bit division on small targets) */
    size_t i = 0, tb = t->n;
    uint64_t tbd = n;
    unsigned k = 0;
    uint32_t cp = 0;

    /* the head: whole characters, up to HEAD_LINES lines and HEAD_BYTES */
    while (i < t->n && k < HEAD_LINES) {
        size_t p = i, cl;

        cp = step(t, &i, &cl);
        if (d + cl > HEAD_BYTES) {
            i = p;
            break;
        }
        d += cl;
        k += cp == '\n';
    }
    *head = i;
    *hd = d;
    /* the tail: from after its TAIL_LINES-th last newline (one ending the
     * text not counted), at most its last TAIL_BYTES */
    for (i = 0, d = 0; i < t->n;) {
        size_t cl;

        if (tb == t->n && d >= lim) {
            tb = i;
            tbd = d;
        }
        cp = step(t, &i, &cl);
        d += cl;
        if (cp == '\n') {
            ring[cnt % (TAIL_LINES + 1)].at = i;
            ring[cnt % (TAIL_LINES + 1)].d = d;
            cnt++;
        }
    }
    cnt -= cp == '\n';
    *tail = tb;
    *td = tbd;
    if (cnt >= TAIL_LINES && ring[(cnt - TAIL_LINES) % (TAIL_LINES + 1)].d > tbd) {
        *tail = ring[(cnt - TAIL_LINES) % (TAIL_LINES + 1)].at;
        *td = ring[(cnt - TAIL_LINES) % (TAIL_LINES + 1)].d;
    }
}

/* Decoded bytes, lines and whether t ends with a newline. */
static void stats(const struct txt *t, uint64_t *bytes, uint64_t *lines, bool *has_nl,
                  bool *ends_nl)
{
    size_t i = 0;
    uint32_t cp = 0;

    *bytes = *lines = 0;
    while (i < t->n) {
        size_t cl;

        cp = step(t, &i, &cl);
        *bytes += cl;
        *lines += cp == '\n';
    }
    *has_nl = *lines > 0;
    *ends_nl = cp == '\n' && t->n > 0;
    *lines += t->n > 0 && !*ends_nl;
}

/* A text as LINEs after `mark`: whole, or (unless `whole`) its head, a
 * GAP and its tail. Returns true if a part was left out. */
static bool block(struct show *sh, char mark, const struct txt *t, bool whole)
{
    struct mote_show_line l;
    uint64_t n, lines, hd = 0, td = 0;
    size_t head = t->n, tail = t->n, i;
    bool has_nl, ends_nl;

    memset(&l, 0, sizeof(l));
    l.file = -2;
    l.mark = mark;
    if (t->n == 0) {
        l.kind = MOTE_SHOW_EMPTY;
        begin(sh, &l);
        end(sh, &l);
        return false;
    }
    stats(t, &n, &lines, &has_nl, &ends_nl);
    if (!whole && (lines > WHOLE_LINES || n > WHOLE_BYTES)) {
        cut_points(t, n, &head, &tail, &hd, &td);
        if (head >= tail)
            head = tail = t->n;
    }
    lines_out(sh, mark, t, 0, head);
    if (head == t->n)
        return false;
    l.kind = MOTE_SHOW_GAP;
    l.bytes = td - hd;
    for (i = head; i < tail;)
        l.lines += next(t, &i) == '\n';
    begin(sh, &l);
    end(sh, &l);
    lines_out(sh, mark, t, tail, t->n);
    return true;
}

/* t made safe in `mode` into out (cap bytes, NUL-terminated, whole
 * characters). Returns the length. */
static size_t safe_into(char *out, size_t cap, const struct txt *t, int mode)
{
    size_t i = 0, o = 0;

    while (i < t->n) {
        char c[MOTE_SHOW_CP_MAX];
        bool vis;
        size_t k = mote_show_cp(next(t, &i), mode, c, &vis);

        if (o + k >= cap)
            break;
        memcpy(out + o, c, k);
        o += k;
    }
    out[o] = '\0';
    return o;
}

static struct txt tok_txt(const struct mote_json *js, int t)
{
    struct txt x;

    x.s = mote_json_raw(js, t, &x.n);
    x.json = mote_json_type_of(js, t) == MOTE_JSON_STRING;
    return x;
}

/* How a call shows member `key`: as lines after a mark (a command, a
 * file's content, the two sides of an edit), or 0 (after its key). */
static char mark_of(const char *tool, const char *key)
{
    if ((strcmp(tool, "shell") == 0 && strcmp(key, "command") == 0) ||
        (strcmp(tool, "write_file") == 0 && strcmp(key, "content") == 0))
        return '|';
    if (strcmp(tool, "edit_file") == 0 && strcmp(key, "old_string") == 0)
        return '-';
    if (strcmp(tool, "edit_file") == 0 && strcmp(key, "new_string") == 0)
        return '+';
    return 0;
}

/* What path string token t names now: -1 nothing, a regular file's
 * size, -2 other or not known. */
static int64_t file_there(const struct mote_port *port, const struct mote_json *js, int t)
{
    char path[SHORT_VALUE + 8];
    struct mote_fs_stat st;
    int n = mote_json_cstr(js, t, path, sizeof(path)), rc;

    if (n <= 0 || port == NULL || port->fs_stat == NULL)
        return -2;
    memset(&st, 0, sizeof(st));
    rc = port->fs_stat(port->ctx, path, &st);
    if (rc == MOTE_ERR_NOENT)
        return -1;
    return rc == 0 && st.type == MOTE_FS_FILE ? (int64_t)st.size : -2;
}

/* Member (key token k, value k + 1) of the input. Returns true if a part
 * was left out. */
static bool member(struct show *sh, const struct mote_json *js, const struct mote_port *port,
                   const char *tool, int k, bool whole)
{
    char key[KEY_MAX];
    struct mote_show_line l;
    struct txt kt = tok_txt(js, k), v = tok_txt(js, k + 1);
    uint64_t n, lines;
    bool has_nl, ends_nl;
    char mark;

    memset(&l, 0, sizeof(l));
    l.file = -2;
    l.key = key;
    (void)safe_into(key, sizeof(key), &kt, MOTE_SHOW_ONELINE);
    if (!v.json) {
        l.kind = MOTE_SHOW_VALUE;
        begin(sh, &l);
        line_text(sh, &v, 0, v.n);
        end(sh, &l);
        return false;
    }
    stats(&v, &n, &lines, &has_nl, &ends_nl);
    mark = mark_of(tool, key);
    if (mark == 0 && !has_nl && n <= SHORT_VALUE) {
        l.kind = MOTE_SHOW_FIELD;
        if (strcmp(tool, "write_file") == 0 && strcmp(key, "path") == 0)
            l.file = file_there(port, js, k + 1);
        begin(sh, &l);
        line_text(sh, &v, 0, v.n);
        end(sh, &l);
        return false;
    }
    if (mark == 0 || strcmp(tool, "write_file") == 0) {
        l.kind = MOTE_SHOW_SIZE;
        l.bytes = n;
        l.lines = lines;
        l.no_eol = n > 0 && !ends_nl;
        begin(sh, &l);
        end(sh, &l);
    }
    return block(sh, mark != 0 ? mark : '|', &v, whole);
}

int mote_show_call(struct mote_json *js, const struct mote_port *port, const char *name,
                   const char *input, size_t len, unsigned flags, const struct mote_show_sink *sink)
{
    struct show sh;
    struct mote_show_line l;
    struct txt t;
    char why[120];
    bool cut = false, whole = (flags & MOTE_SHOW_WHOLE) != 0;
    int i, k;

    memset(&sh, 0, sizeof(sh));
    sh.sink = sink;
    memset(&l, 0, sizeof(l));
    l.file = -2;
    l.kind = MOTE_SHOW_TOOL;
    t.s = name;
    t.n = strlen(name);
    t.json = false;
    begin(&sh, &l);
    put_txt(&sh, &t, MOTE_SHOW_ONELINE);
    end(&sh, &l);
    t.s = input;
    t.n = len;
    if (mote_json_parse(js, input, len) <= 0 || mote_json_type_of(js, 0) != MOTE_JSON_OBJECT) {
        cut = block(&sh, '|', &t, whole); /* not an object: as it came */
        return sh.err < 0 ? sh.err : cut;
    }
    if (mote_json_strict(js, 0, MOTE_JSON_NO_DUP_KEYS | MOTE_JSON_NO_NUL, why, sizeof(why)) < 0) {
        l.kind = MOTE_SHOW_WARN;
        t.s = why;
        t.n = strlen(why);
        begin(&sh, &l);
        put_txt(&sh, &t, MOTE_SHOW_ONELINE);
        end(&sh, &l);
    }
    if (js->tok[0].size == 0) {
        l.kind = MOTE_SHOW_NO_INPUT;
        begin(&sh, &l);
        end(&sh, &l);
    }
    for (i = 0, k = 1; i < js->tok[0].size && k < js->ntok && sh.err == 0;
         i++, k = mote_json_skip(js, k + 1))
        cut |= member(&sh, js, port, name, k, whole);
    return sh.err < 0 ? sh.err : cut;
}

void mote_show_summary(struct mote_json *js, const char *input, size_t len, char *out, size_t cap)
{
    static const char *const keys[] = {"command", "path"};
    size_t i, n;
    int t = -1;
    struct txt x;

    if (cap == 0)
        return;
    if (mote_json_parse(js, input, len) > 0 && mote_json_type_of(js, 0) == MOTE_JSON_OBJECT) {
        for (i = 0; i < MOTE_ARRAY_LEN(keys) && t < 0; i++) {
            t = mote_json_member(js, 0, keys[i]);
            if (mote_json_type_of(js, t) != MOTE_JSON_STRING)
                t = -1;
        }
    }
    if (t >= 0) {
        x = tok_txt(js, t);
    } else {
        x.s = input;
        x.n = len < 80 ? len : 80;
        x.json = false;
    }
    n = safe_into(out, cap < 104 ? cap : 104, &x, MOTE_SHOW_ONELINE);
    if (n > 100) {
        n = 97; /* a whole character before "..." */
        while (n > 0 && ((unsigned char)out[n] & 0xC0u) == 0x80u)
            n--;
        memcpy(out + n, "...", 4);
    }
}

size_t mote_show_result(const char *text, size_t len, char *out, size_t cap)
{
    char first[100];
    unsigned lines = 0;
    size_t i, n = 0;
    struct mote_sb sb;

    for (i = 0; i < len; i++)
        lines += text[i] == '\n';
    lines += len > 0 && text[len - 1] != '\n';
    while (n < len && text[n] != '\n')
        n++;
    mote_show_line(first, sizeof(first), text, n);
    mote_sb_init(&sb, out, cap);
    mote_sb_s(&sb, first);
    if (lines > 1 || (n < len && n + 1 < len)) {
        mote_sb_num(&sb, " ... (", lines, " lines, ");
        mote_sb_num(&sb, "", len, " bytes)");
    }
    return sb.len;
}
