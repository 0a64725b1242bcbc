/*
 * mcp_form.c - a server's question walked field by field (mote_mcp.h:
 * mote_mcp_form_*), for a frontend that reads one line per field: the
 * question's and each field's text and prompt (the server's words
 * neutralised), a typed line checked against its field and the answer's
 * content built as JSON. The form is the one mcp_elicit.c wrote (flat,
 * re-encoded); mote_mcp_elicit_answer checks the answer against it again.
 */
#include <string.h>

#include "mote/mote.h"
#include "mote/mote_mcp.h"
#include "mote/mote_show.h"
#include "util.h"

/* The answer's sink: one byte is kept for the closing brace, so that a
 * field that does not fit is refused alone and the answer stays whole. */
static int put(void *arg, const char *p, size_t n)
{
    struct mote_mcp_form *f = arg;

    if (f->len + n + (f->closing ? 0 : 1) >= sizeof(f->content))
        return MOTE_ERR_TOO_LARGE;
    memcpy(f->content + f->len, p, n);
    f->len += n;
    f->content[f->len] = '\0';
    return 0;
}

void mote_mcp_form_restart(struct mote_mcp_form *f)
{
    f->len = 0;
    f->field = 0;
    f->closing = false;
    mote_jw_init(&f->w, put, f);
    mote_jw_obj(&f->w);
}

int mote_mcp_form_begin(struct mote_mcp_form *f, const struct mote_mcp_ask *q)
{
    int n = 0;

    f->id = q->id;
    f->fields = -1;
    mote_mcp_form_restart(f);
    if (q->form_len > sizeof(q->form) || mote_json_parse(&f->js, q->form, q->form_len) <= 0 ||
        mote_json_type_of(&f->js, 0) != MOTE_JSON_OBJECT)
        return MOTE_ERR_INVAL;
    f->fields = mote_json_member(&f->js, 0, "fields");
    while (mote_json_elem(&f->js, f->fields, n) >= 0)
        n++;
    return n;
}

static int member(const struct mote_mcp_form *f, int t, const char *key)
{
    return mote_json_member(&f->js, t, key);
}

/* The choices of field t (an array), or -1. */
static int choices(const struct mote_mcp_form *f, int t)
{
    int en = member(f, t, "enum");

    return mote_json_type_of(&f->js, en) == MOTE_JSON_ARRAY ? en : -1;
}

/* String t of the form onto sb, neutralised (its first 255 bytes). */
static void put_text(struct mote_sb *sb, const struct mote_mcp_form *f, int t)
{
    char raw[256], safe[256];

    raw[0] = '\0';
    if (mote_json_str(&f->js, t, raw, sizeof(raw)) < 0 && raw[0] == '\0')
        return;
    mote_show_line(safe, sizeof(safe), raw, strlen(raw));
    mote_sb_s(sb, safe);
}

size_t mote_mcp_form_title(const struct mote_mcp_form *f, char *out, size_t cap)
{
    struct mote_sb sb;

    mote_sb_init(&sb, out, cap);
    mote_sb_s(&sb, "mcp ");
    put_text(&sb, f, member(f, 0, "server"));
    mote_sb_s(&sb, " asks: ");
    put_text(&sb, f, member(f, 0, "message"));
    return sb.len;
}

size_t mote_mcp_form_field(const struct mote_mcp_form *f, char *text, size_t tcap, char *prompt,
                           size_t pcap)
{
    int t = mote_json_elem(&f->js, f->fields, f->field), en = choices(f, t), i;
    int title = member(f, t, "title"), desc = member(f, t, "description");
    int def = member(f, t, "default");
    char type[16], safe[200];
    bool req = false;
    struct mote_sb sb;

    (void)mote_json_bool(&f->js, member(f, t, "required"), &req);
    mote_sb_init(&sb, text, tcap);
    mote_sb_s(&sb, "  ");
    put_text(&sb, f, member(f, t, "name"));
    if (title >= 0 || desc >= 0) {
        mote_sb_s(&sb, " (");
        put_text(&sb, f, title);
        mote_sb_s(&sb, title >= 0 && desc >= 0 ? ": " : "");
        put_text(&sb, f, desc);
        mote_sb_s(&sb, ")");
    }
    for (i = 0; mote_json_elem(&f->js, en, i) >= 0; i++) {
        mote_sb_num(&sb, i == 0 ? "\n    " : " ", (uint64_t)i + 1, ") ");
        put_text(&sb, f, mote_json_elem(&f->js, member(f, t, "enumTitles"), i));
    }
    mote_sb_s(&sb, "\n");
    if (mote_json_str(&f->js, member(f, t, "type"), type, sizeof(type)) < 0)
        type[0] = '\0';
    mote_sb_init(&sb, prompt, pcap);
    mote_sb_s(&sb, "  ");
    mote_sb_s(&sb, i > 0 ? "choice" : strcmp(type, "boolean") == 0 ? "y/n" : type);
    mote_sb_s(&sb, req ? ", required" : def >= 0 ? "" : ", Enter: none");
    if (def >= 0) {
        size_t dl;
        const char *d = mote_json_raw(&f->js, def, &dl);

        mote_show_line(safe, sizeof(safe), d, dl);
        mote_sb_join(&sb, req ? ", default " : ", Enter: default ", safe, NULL);
    }
    mote_sb_s(&sb, "; /decline, /cancel > ");
    return sb.len;
}

/* True when s is a JSON number (RFC 8259 6; `integer`: without a
 * fraction or exponent, at most 18 digits). */
static bool json_number(const char *s, bool integer)
{
    size_t d;

    s += *s == '-';
    d = strspn(s, "0123456789");
    if (d == 0 || (d > 1 && *s == '0') || (integer && (d > 18 || s[d] != '\0')))
        return false;
    s += d;
    if (*s == '.') {
        if ((d = strspn(++s, "0123456789")) == 0)
            return false;
        s += d;
    }
    if (*s == 'e' || *s == 'E') {
        s++;
        s += *s == '+' || *s == '-';
        if ((d = strspn(s, "0123456789")) == 0)
            return false;
        s += d;
    }
    return *s == '\0';
}

/* The hint for a number past one of the field's bounds (NULL: within
 * them, or not comparable: a bound or the number with a fraction). */
static const char *out_of_range(struct mote_mcp_form *f, int t, const char *line)
{
    int64_t v, lo = INT64_MIN, hi = INT64_MAX;
    bool neg = line[0] == '-';
    uint64_t u;
    struct mote_sb sb;

    (void)mote_json_int(&f->js, member(f, t, "minimum"), &lo);
    (void)mote_json_int(&f->js, member(f, t, "maximum"), &hi);
    if (!json_number(line, true) || mote_dec_parse(line + neg, strlen(line + neg), &u) < 0)
        return NULL;
    v = neg ? -(int64_t)u : (int64_t)u;
    if (v >= lo && v <= hi)
        return NULL;
    mote_sb_init(&sb, f->hint, sizeof(f->hint));
    mote_sb_s(&sb, v < lo ? "(at least " : "(at most ");
    mote_sb_i(&sb, v < lo ? lo : hi);
    mote_sb_s(&sb, ")");
    return f->hint;
}

/* The value of field t for `line` (not empty) onto the answer, or the
 * hint that refuses it. */
static const char *take(struct mote_mcp_form *f, int t, const char *line)
{
    int en = choices(f, t), e = -1, i;
    char type[16];
    uint64_t u;

    if (mote_json_str(&f->js, member(f, t, "type"), type, sizeof(type)) < 0)
        type[0] = '\0';
    if (en >= 0) {
        if (mote_dec_parse(line, strlen(line), &u) == 0 && u >= 1 && u <= 256)
            e = mote_json_elem(&f->js, en, (int)u - 1);
        for (i = 0; e < 0 && mote_json_elem(&f->js, en, i) >= 0; i++) {
            if (mote_json_eq(&f->js, mote_json_elem(&f->js, en, i), line))
                e = mote_json_elem(&f->js, en, i);
        }
        if (e < 0)
            return "(one of the choices: its number or its value)";
        mote_jw_value(&f->w, &f->js, e);
    } else if (strcmp(type, "boolean") == 0) {
        static const char *const words[] = {"y", "yes", "true", "n", "no", "false"};

        for (i = 0; i < 6 && strcmp(line, words[i]) != 0; i++) {
        }
        if (i == 6)
            return "(y or n)";
        mote_jw_bool(&f->w, i < 3);
    } else if (strcmp(type, "string") == 0) {
        mote_jw_str(&f->w, line);
    } else {
        bool integer = strcmp(type, "integer") == 0;
        const char *range = out_of_range(f, t, line);

        if (!json_number(line, integer))
            return integer ? "(a number without a fraction)" : "(a number)";
        if (range != NULL)
            return range;
        mote_jw_raw(&f->w, line, strlen(line)); /* (checked: a JSON number) */
    }
    return NULL;
}

enum mote_mcp_form_step mote_mcp_form_reply(struct mote_mcp_form *f, const char *line,
                                            const char **hint)
{
    int t = mote_json_elem(&f->js, f->fields, f->field);
    bool req = false;
    char name[256];
    size_t at = f->len;
    struct mote_jw was = f->w;

    *hint = NULL;
    if (strcmp(line, "/decline") == 0)
        return MOTE_MCP_FORM_DECLINE;
    if (strcmp(line, "/cancel") == 0)
        return MOTE_MCP_FORM_CANCEL;
    if (t >= 0) {
        (void)mote_json_bool(&f->js, member(f, t, "required"), &req);
        if (mote_json_cstr(&f->js, member(f, t, "name"), name, sizeof(name)) < 0)
            name[0] = '\0';
        if (line[0] == '\0' && member(f, t, "default") >= 0) {
            /* the form comes filled with its defaults (SEP-1034): Enter keeps one */
            mote_jw_key(&f->w, name); /* (the default, re-encoded) */
            mote_jw_value(&f->w, &f->js, member(f, t, "default"));
        } else if (line[0] == '\0' && req) {
            *hint = "(required)";
        } else if (line[0] != '\0') {
            /* (empty, optional, no default: left out) */
            mote_jw_key(&f->w, name);
            *hint = take(f, t, line);
        }
        if (*hint == NULL && f->w.err != 0)
            *hint = "(too long: the whole answer has at most MOTE_MCP_ASK_MAX bytes)";
        if (*hint != NULL) {
            f->w = was; /* the answer as it was before this line */
            f->len = at;
            f->content[at] = '\0';
            return MOTE_MCP_FORM_AGAIN;
        }
        if (mote_json_elem(&f->js, f->fields, ++f->field) >= 0)
            return MOTE_MCP_FORM_NEXT;
    }
    f->closing = true;
    mote_jw_obj_end(&f->w);
    return MOTE_MCP_FORM_DONE;
}

/* True when default d fits field t (its type; an enum's value one of its
 * choices), so that the answer mote_mcp_elicit_answer checks is taken. */
static bool default_fits(const struct mote_mcp_form *f, int t, int d)
{
    int en = choices(f, t), i;
    const struct mote_json *j = &f->js;
    char type[16];
    int64_t v;
    bool b;

    if (mote_json_str(j, member(f, t, "type"), type, sizeof(type)) < 0)
        return false;
    if (strcmp(type, "string") == 0) {
        if (mote_json_type_of(j, d) != MOTE_JSON_STRING)
            return false;
        if (en < 0)
            return true;
        for (i = 0; mote_json_elem(j, en, i) >= 0; i++) {
            size_t n, m;
            const char *a = mote_json_raw(j, mote_json_elem(j, en, i), &n);
            const char *c = mote_json_raw(j, d, &m);

            if (n == m && memcmp(a, c, n) == 0) /* (both re-encoded by mcp_elicit.c) */
                return true;
        }
        return false;
    }
    if (mote_json_type_of(j, d) != MOTE_JSON_PRIMITIVE || mote_json_is_null(j, d))
        return false;
    if (strcmp(type, "boolean") == 0)
        return mote_json_bool(j, d, &b) == 0;
    if (mote_json_bool(j, d, &b) == 0)
        return false;
    return strcmp(type, "integer") != 0 || mote_json_int(j, d, &v) == 0;
}

int mote_mcp_form_defaults(struct mote_mcp_form *f, const struct mote_mcp_ask *q, char *why,
                           size_t cap)
{
    int n = mote_mcp_form_begin(f, q), i, t;
    const char *hint, *said = NULL, *what = NULL;
    char raw[256], name[128];
    struct mote_sb sb;

    if (n < 0)
        said = "a form mote cannot read";
    for (i = 0; said == NULL && i < n; i++) {
        t = mote_json_elem(&f->js, f->fields, i);
        if (member(f, t, "default") < 0)
            what = " has no default";
        else if (!default_fits(f, t, member(f, t, "default")))
            what = "'s default does not fit its type or choices";
        if (what == NULL)
            continue;
        raw[0] = '\0';
        if (mote_json_cstr(&f->js, member(f, t, "name"), raw, sizeof(raw)) < 0)
            raw[0] = '\0';
        mote_show_line(name, sizeof(name), raw, strlen(raw));
        said = "";
    }
    while (said == NULL && mote_mcp_form_reply(f, "", &hint) == MOTE_MCP_FORM_NEXT) {
    }
    if (said == NULL && (f->w.err != 0 || !f->closing))
        said = "its defaults are over MOTE_MCP_ASK_MAX bytes";
    if (said == NULL)
        return 0;
    if (why != NULL && cap > 0) {
        mote_sb_init(&sb, why, cap);
        if (what != NULL)
            mote_sb_join(&sb, "field \"", name, "\"");
        mote_sb_s(&sb, what != NULL ? what : said);
    }
    f->len = 0;
    f->content[0] = '\0';
    return MOTE_ERR_INVAL;
}
