/* approval.c - a tool call's input on the terminal (see approval.h): all
 * of it, exactly, for the person who approves it, so that what is
 * approved is what runs; one line for a call that runs unasked. */
#define _GNU_SOURCE
#include "approval.h"

#include <string.h>
#include <sys/stat.h>

#include "mote/mote_config.h"
#include "mote/mote_json.h"
#include "render.h"

#define WHOLE_LINES 60   /* a text of at most this many lines ... */
#define WHOLE_BYTES 8192 /* ... and bytes is always shown whole */
#define HEAD_LINES 30    /* else its first lines ... */
#define HEAD_BYTES 3072
#define TAIL_LINES 10    /* ... and its last ones */
#define TAIL_BYTES 1024
#define BLANK_RUN 24     /* a run of this many blanks or more is counted, not drawn */
#define SHORT_VALUE 100  /* a one-line string up to this long goes after its key */

static struct mote_json js;
static char val[MOTE_JOURNAL_LINE_MAX + 1]; /* one string of the input, unescaped */
static char kept[MOTE_JOURNAL_LINE_MAX];    /* the input last shown, for "v" */
static size_t kept_len;
static char kept_name[MOTE_LLM_NAME_MAX];

/* One line's text: exact, with a long run of blanks as its count. */
static void line_out(FILE *f, const char *s, size_t n, bool color)
{
    size_t i = 0, start = 0;

    while (i < n) {
        size_t j = i, spaces = 0;

        if (s[i] != ' ' && s[i] != '\t') {
            i++;
            continue;
        }
        while (j < n && (s[j] == ' ' || s[j] == '\t'))
            spaces += s[j++] == ' ';
        if (j - i >= BLANK_RUN) {
            render_exact(f, s + start, i - start);
            fprintf(f, "%s<%zu %s>%s", color ? "\033[7m" : "", j - i,
                    spaces == j - i ? "spaces" : spaces == 0 ? "tabs" : "blanks and tabs",
                    color ? "\033[27m" : "");
            start = j;
        }
        i = j;
    }
    render_exact(f, s + start, n - start);
}

/* The lines of s (n bytes), each after `mark`. */
static void lines_out(FILE *f, const char *mark, const char *s, size_t n, bool color)
{
    while (n > 0) {
        const char *nl = memchr(s, '\n', n);
        size_t k = nl != NULL ? (size_t)(nl - s) : n;

        fputs(mark, f);
        line_out(f, s, k, color);
        fputc('\n', f);
        k += nl != NULL;
        s += k;
        n -= k;
    }
}

static size_t count_lines(const char *s, size_t n)
{
    size_t i, lines = 0;

    for (i = 0; i < n; i++)
        lines += s[i] == '\n';
    return lines + (n > 0 && s[n - 1] != '\n');
}

/* A text as lines after `mark`: whole, or (unless `whole`) its head and
 * its tail with what lies between counted. Returns true if a part was
 * left out. */
static bool block(FILE *f, const char *mark, const char *s, size_t n, bool color, bool whole)
{
    size_t head = n, tail = n, i, k;

    if (n == 0) {
        fprintf(f, "%s%s(empty)%s\n", mark, color ? "\033[2m" : "", color ? "\033[0m" : "");
        return false;
    }
    if (!whole && (count_lines(s, n) > WHOLE_LINES || n > WHOLE_BYTES)) {
        for (head = 0, k = 0; head < n && head < HEAD_BYTES && k < HEAD_LINES; head++)
            k += s[head] == '\n';
        for (tail = n - (s[n - 1] == '\n'), k = 0; tail > 0 && n - tail < TAIL_BYTES; tail--) {
            if (s[tail - 1] == '\n' && ++k == TAIL_LINES)
                break;
        }
        while (head > 0 && head < n && ((unsigned char)s[head] & 0xC0u) == 0x80u)
            head--; /* whole characters on both sides */
        while (tail < n && ((unsigned char)s[tail] & 0xC0u) == 0x80u)
            tail++;
        if (head >= tail)
            head = tail = n;
    }
    lines_out(f, mark, s, head, color);
    if (head == n)
        return false;
    for (i = head, k = 0; i < tail; i++)
        k += s[i] == '\n';
    fprintf(f, "%s  ... %zu bytes (%zu line%s) not shown here: answer v to see all of it ...%s\n",
            color ? "\033[33m" : "", tail - head, k, k == 1 ? "" : "s", color ? "\033[0m" : "");
    lines_out(f, mark, s + tail, n - tail, color);
    return true;
}

/* How the call shows member `key`: as lines after a mark (a command, a
 * file's content, the two sides of an edit), or NULL (after its key). */
static const char *mark_of(const char *tool, const char *key, bool color)
{
    if (strcmp(tool, "shell") == 0 && strcmp(key, "command") == 0)
        return "  | ";
    if (strcmp(tool, "write_file") == 0 && strcmp(key, "content") == 0)
        return "  | ";
    if (strcmp(tool, "edit_file") == 0 && strcmp(key, "old_string") == 0)
        return color ? "  \033[31m-\033[0m " : "  - ";
    if (strcmp(tool, "edit_file") == 0 && strcmp(key, "new_string") == 0)
        return color ? "  \033[32m+\033[0m " : "  + ";
    return NULL;
}

/* What a write_file's path names now: a file it replaces, or none. */
static void path_note(FILE *f, const char *path)
{
    struct stat sb;

    if (stat(path, &sb) != 0)
        fputs(" (a new file)", f);
    else if (S_ISREG(sb.st_mode))
        fprintf(f, " (replaces a file of %lld bytes)", (long long)sb.st_size);
}

/* Member (key token k, value k + 1) of the input. Returns true if a part
 * was left out. */
static bool member(FILE *f, const char *tool, int k, bool color, bool whole)
{
    char key[64];
    const char *mark;
    size_t n;
    int v = k + 1, got;

    (void)mote_json_str(&js, k, val, sizeof(val)); /* a key too long: its head */
    render_line(key, sizeof(key), val, strlen(val));
    if (mote_json_type_of(&js, v) != MOTE_JSON_STRING) {
        const char *raw = mote_json_raw(&js, v, &n);

        fprintf(f, "  %s: ", key);
        render_exact(f, raw, n);
        fputc('\n', f);
        return false;
    }
    got = mote_json_str(&js, v, val, sizeof(val));
    n = got > 0 ? (size_t)got : 0;
    mark = mark_of(tool, key, color);
    if (mark == NULL && memchr(val, '\n', n) == NULL && n <= SHORT_VALUE) {
        fprintf(f, "  %s: ", key);
        line_out(f, val, n, color);
        if (strcmp(tool, "write_file") == 0 && strcmp(key, "path") == 0)
            path_note(f, val);
        fputc('\n', f);
        return false;
    }
    if (mark == NULL || strcmp(tool, "write_file") == 0) {
        size_t lines = count_lines(val, n);

        fprintf(f, "  %s: %zu byte%s, %zu line%s%s\n", key, n, n == 1 ? "" : "s", lines,
                lines == 1 ? "" : "s",
                n > 0 && val[n - 1] != '\n' ? " (no newline at the end)" : "");
    }
    return block(f, mark != NULL ? mark : "  | ", val, n, color, whole);
}

bool approval_show(FILE *f, const char *name, const char *input, size_t len, bool color,
                   bool whole)
{
    char shown[MOTE_LLM_NAME_MAX + 16], why[120];
    bool cut = false;
    int i, k;

    if (input != kept) {
        kept_len = len <= sizeof(kept) ? len : 0;
        memcpy(kept, input, kept_len);
        (void)snprintf(kept_name, sizeof(kept_name), "%s", name);
    }
    render_line(shown, sizeof(shown), name, strlen(name));
    fprintf(f, color ? "\033[36m* %s\033[0m\n" : "* %s\n", shown);
    if (mote_json_parse(&js, input, len) <= 0 || mote_json_type_of(&js, 0) != MOTE_JSON_OBJECT) {
        return block(f, "  | ", input, len, color, whole); /* not an object: as it came */
    }
    if (mote_json_strict(&js, 0, MOTE_JSON_NO_DUP_KEYS | MOTE_JSON_NO_NUL, why, sizeof(why)) < 0) {
        fprintf(f, "%s  ! this input is ambiguous: %s%s\n", color ? "\033[33m" : "", why,
                color ? "\033[0m" : "");
    }
    if (js.tok[0].size == 0)
        fputs("  (no input)\n", f);
    for (i = 0, k = 1; i < js.tok[0].size && k < js.ntok; i++, k = mote_json_skip(&js, k + 1))
        cut |= member(f, name, k, color, whole);
    return cut;
}

void approval_show_again(FILE *f, bool color)
{
    (void)approval_show(f, kept_name, kept, kept_len, color, true);
}

void approval_summary(const char *input, size_t len, char *out, size_t cap)
{
    const char *keys[] = {"command", "path"};
    size_t i;
    int n = -1;

    if (mote_json_parse(&js, input, len) > 0) {
        for (i = 0; i < 2 && n < 0; i++)
            n = mote_json_str(&js, mote_json_member(&js, 0, keys[i]), val, 1024);
    }
    if (n >= 0)
        render_line(out, cap < 104 ? cap : 104, val, (size_t)n);
    else
        render_line(out, cap < 84 ? cap : 84, input, len < 80 ? len : 80);
    if (strlen(out) > 100)
        strcpy(out + 97, "...");
}
