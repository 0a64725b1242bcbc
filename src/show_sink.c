/* show_sink.c - the two sinks of a call's display (mote_show.h): plain
 * text as a terminal shows it, and the structured JSON form a web page
 * or an MQTT client draws. */
#include <string.h>

#include "mote/mote_show.h"
#include "util.h"

/* ---- plain text ---------------------------------------------------------------- */

static int p_put(const struct mote_show_plain *p, const char *s)
{
    return p->out(p->arg, s, strlen(s));
}

/* "N word" or "N words" */
static int p_count(const struct mote_show_plain *p, uint64_t n, const char *word)
{
    char b[64];
    size_t k = mote_u64_dec(n, b);

    b[k++] = ' ';
    k += mote_str_copy(b + k, sizeof(b) - k - 1, word);
    if (n != 1)
        b[k++] = 's';
    return p->out(p->arg, b, k);
}

static const char *mark_str(const struct mote_show_plain *p, char mark)
{
    if (mark == '-')
        return p->color ? "  \033[31m-\033[0m " : "  - ";
    if (mark == '+')
        return p->color ? "  \033[32m+\033[0m " : "  + ";
    return "  | ";
}

static int plain_begin(void *arg, const struct mote_show_line *l)
{
    const struct mote_show_plain *p = arg;
    int rc = 0;

    switch (l->kind) {
    case MOTE_SHOW_TOOL:
        return p_put(p, p->color ? "\033[36m* " : "* ");
    case MOTE_SHOW_WARN:
        return p_put(p, p->color ? "\033[33m  ! this input is ambiguous: "
                                 : "  ! this input is ambiguous: ");
    case MOTE_SHOW_NO_INPUT:
        return p_put(p, "  (no input)");
    case MOTE_SHOW_FIELD:
    case MOTE_SHOW_VALUE:
    case MOTE_SHOW_SIZE:
        if ((rc = p_put(p, "  ")) < 0 || (rc = p_put(p, l->key)) < 0 ||
            (rc = p_put(p, ": ")) < 0 || l->kind != MOTE_SHOW_SIZE)
            return rc;
        if ((rc = p_count(p, l->bytes, "byte")) < 0 || (rc = p_put(p, ", ")) < 0 ||
            (rc = p_count(p, l->lines, "line")) < 0)
            return rc;
        return l->no_eol ? p_put(p, " (no newline at the end)") : 0;
    case MOTE_SHOW_LINE:
        return p_put(p, mark_str(p, l->mark));
    case MOTE_SHOW_EMPTY:
        if ((rc = p_put(p, mark_str(p, l->mark))) < 0)
            return rc;
        return p_put(p, p->color ? "\033[2m(empty)\033[0m" : "(empty)");
    case MOTE_SHOW_GAP:
        if ((rc = p_put(p, p->color ? "\033[33m  ... " : "  ... ")) < 0 ||
            (rc = p_count(p, l->bytes, "byte")) < 0 || (rc = p_put(p, " (")) < 0 ||
            (rc = p_count(p, l->lines, "line")) < 0 || (rc = p_put(p, ") not shown here")) < 0)
            return rc;
        if (p->hint != NULL && ((rc = p_put(p, ": ")) < 0 || (rc = p_put(p, p->hint)) < 0))
            return rc;
        return p_put(p, " ...");
    }
    return 0;
}

static int plain_text(void *arg, const char *s, size_t n, bool visible)
{
    const struct mote_show_plain *p = arg;
    int rc;

    if (!visible || !p->color)
        return p->out(p->arg, s, n);
    if ((rc = p_put(p, "\033[7m")) < 0 || (rc = p->out(p->arg, s, n)) < 0)
        return rc;
    return p_put(p, "\033[27m");
}

static int plain_end(void *arg, const struct mote_show_line *l)
{
    const struct mote_show_plain *p = arg;
    int rc = 0;

    if (l->kind == MOTE_SHOW_FIELD && l->file == -1)
        rc = p_put(p, " (a new file)");
    else if (l->kind == MOTE_SHOW_FIELD && l->file >= 0 &&
             ((rc = p_put(p, " (replaces a file of ")) < 0 ||
              (rc = p_count(p, (uint64_t)l->file, "byte")) < 0 || (rc = p_put(p, ")")) < 0))
        return rc;
    if (rc < 0)
        return rc;
    if (p->color && (l->kind == MOTE_SHOW_TOOL || l->kind == MOTE_SHOW_WARN ||
                     l->kind == MOTE_SHOW_GAP) &&
        (rc = p_put(p, "\033[0m")) < 0)
        return rc;
    return p_put(p, "\n");
}

struct mote_show_sink mote_show_plain_sink(struct mote_show_plain *p)
{
    struct mote_show_sink s;

    s.begin = plain_begin;
    s.text = plain_text;
    s.end = plain_end;
    s.arg = p;
    return s;
}

/* ---- JSON ------------------------------------------------------------------------ */

static const char *const kind_names[] = {"tool", "warn",  "no_input", "field", "value",
                                         "size", "line",  "empty",    "gap"};

static bool has_text(enum mote_show_kind k)
{
    return k == MOTE_SHOW_TOOL || k == MOTE_SHOW_WARN || k == MOTE_SHOW_FIELD ||
           k == MOTE_SHOW_VALUE || k == MOTE_SHOW_LINE;
}

static int json_begin(void *arg, const struct mote_show_line *l)
{
    struct mote_show_json *j = arg;
    struct mote_jw *w = j->w;
    char mark[2] = {l->mark, '\0'};

    mote_jw_obj(w);
    mote_jw_kstr(w, "kind",
                 (unsigned)l->kind < MOTE_ARRAY_LEN(kind_names) ? kind_names[l->kind] : "");
    if (l->key != NULL) {
        mote_jw_kstr(w, "key", l->key);
    }
    if (l->kind == MOTE_SHOW_LINE || l->kind == MOTE_SHOW_EMPTY) {
        mote_jw_kstr(w, "mark", mark);
    }
    if (l->kind == MOTE_SHOW_SIZE || l->kind == MOTE_SHOW_GAP) {
        mote_jw_kint(w, "bytes", (int64_t)l->bytes);
        mote_jw_kint(w, "lines", (int64_t)l->lines);
    }
    if (l->kind == MOTE_SHOW_SIZE) {
        mote_jw_kbool(w, "no_eol", l->no_eol);
    }
    if (l->kind == MOTE_SHOW_FIELD && l->file >= -1) {
        mote_jw_key(w, "file");
        if (l->file == -1)
            mote_jw_str(w, "new");
        else
            mote_jw_int(w, l->file);
    }
    if (has_text(l->kind)) {
        mote_jw_key(w, "text");
        mote_jw_arr(w);
    }
    j->open = 0;
    j->pieces = 0;
    return w->err;
}

static int json_text(void *arg, const char *s, size_t n, bool visible)
{
    struct mote_show_json *j = arg;
    int want = visible ? 2 : 1;

    if (j->open != want || visible) { /* each stand-in its own piece */
        if (j->open != 0)
            mote_jw_str_end(j->w);
        /* as-is pieces at even places, stand-ins at odd ones */
        if ((j->pieces % 2 == 0) != (want == 1)) {
            mote_jw_str(j->w, "");
            j->pieces++;
        }
        mote_jw_str_begin(j->w);
        j->pieces++;
        j->open = want;
    }
    mote_jw_str_more(j->w, s, n);
    return j->w->err;
}

static int json_end(void *arg, const struct mote_show_line *l)
{
    struct mote_show_json *j = arg;

    if (j->open != 0)
        mote_jw_str_end(j->w);
    j->open = 0;
    if (has_text(l->kind)) {
        if (j->pieces == 0)
            mote_jw_str(j->w, "");
        mote_jw_arr_end(j->w);
    }
    mote_jw_obj_end(j->w);
    return j->w->err;
}

struct mote_show_sink mote_show_json_sink(struct mote_show_json *j, struct mote_jw *w)
{
    struct mote_show_sink s;

    j->w = w;
    j->open = 0;
    j->pieces = 0;
    s.begin = json_begin;
    s.text = json_text;
    s.end = json_end;
    s.arg = j;
    return s;
}

int mote_show_call_json(struct mote_json *js, const struct mote_port *port, const char *name,
                        const char *input, size_t len, unsigned flags, struct mote_jw *w)
{
    struct mote_show_json j;
    struct mote_show_sink s = mote_show_json_sink(&j, w);
    int rc;

    mote_jw_obj(w);
    mote_jw_key(w, "lines");
    mote_jw_arr(w);
    rc = mote_show_call(js, port, name, input, len, flags, &s);
    mote_jw_arr_end(w);
    mote_jw_kbool(w, "cut", rc > 0);
    mote_jw_obj_end(w);
    return w->err != 0 ? w->err : rc;
}
