/*
 * convs.c - the conversations on disk, as the CLI shows them: `--list`,
 * /conversations and the `--resume` picker.
 *
 * The rows come from mote_session_list() (which reads each journal and
 * never writes one, and gives its time of last change).
 * They live in one static table, newest first.
 */
#define _GNU_SOURCE
#include "convs.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mote/mote_show.h"

struct row {
    char id[MOTE_CONV_ID_MAX];
    char first[48];
    int64_t mtime;
    uint64_t bytes;
    int64_t holder;
    uint32_t bad_line;
    unsigned msgs;
    uint8_t state;
    bool loaded, torn, damaged, newer, not_file;
};

static struct {
    struct row row[CONVS_MAX];
    unsigned n;
    unsigned dropped; /* older ones that did not fit */
} t;

static int add(void *arg, const struct mote_conv_info *c)
{
    struct row *r;
    int64_t m = c->mtime;
    unsigned i, at;

    (void)arg;
    if (t.n == CONVS_MAX) {
        /* full: the oldest row gives way to a newer one */
        if (m <= t.row[t.n - 1].mtime) {
            t.dropped++;
            return 0;
        }
        t.n--;
        t.dropped++;
    }
    for (at = 0; at < t.n && t.row[at].mtime >= m; at++)
        ;
    for (i = t.n; i > at; i--)
        t.row[i] = t.row[i - 1];
    t.n++;
    r = &t.row[at];
    memset(r, 0, sizeof(*r));
    snprintf(r->id, sizeof(r->id), "%s", c->id);
    {
        size_t k = strnlen(c->first, sizeof(c->first));

        if (k >= sizeof(r->first))
            k = sizeof(r->first) - 1;
        while (k > 0 && ((unsigned char)c->first[k] & 0xC0) == 0x80)
            k--; /* cut at a character */
        memcpy(r->first, c->first, k);
    }
    r->mtime = m;
    r->bytes = c->bytes;
    r->holder = c->holder;
    r->bad_line = c->bad_line;
    r->msgs = c->user_messages;
    r->state = (uint8_t)c->state;
    r->loaded = c->loaded;
    r->torn = c->torn;
    r->damaged = c->damaged;
    r->newer = c->newer;
    r->not_file = c->not_file;
    return 0;
}

int convs_load(struct mote_session *s)
{
    t.n = 0;
    t.dropped = 0;
    return mote_session_list(s, add, NULL);
}

unsigned convs_count(void)
{
    return t.n;
}

const char *convs_id(unsigned i)
{
    return i < t.n ? t.row[i].id : NULL;
}

static const char *state_of(const struct row *r, char *buf, size_t cap)
{
    if (r->not_file)
        snprintf(buf, cap, "not a regular file");
    else if (r->damaged)
        snprintf(buf, cap, "damaged (line %u)", (unsigned)r->bad_line);
    else if (r->newer)
        snprintf(buf, cap, "newer format");
    else if (r->loaded)
        snprintf(buf, cap, "open here");
    else if (r->holder > 0)
        snprintf(buf, cap, "open (pid %lld)", (long long)r->holder);
    else if (r->holder != 0)
        snprintf(buf, cap, "open elsewhere");
    else if (r->state == MOTE_RECOVER_TOOL_INTERRUPTED)
        snprintf(buf, cap, "interrupted tool");
    else if (r->state != MOTE_RECOVER_IDLE || r->torn)
        snprintf(buf, cap, "needs recovery");
    else
        snprintf(buf, cap, "idle");
    return buf;
}

static void when(int64_t m, char *buf, size_t cap)
{
    time_t tt = (time_t)m;
    struct tm tm;

    if (m == 0 || localtime_r(&tt, &tm) == NULL)
        snprintf(buf, cap, "?");
    else /* (as strftime's "%Y-%m-%d %H:%M", without its 5 KB in a static build) */
        snprintf(buf, cap, "%04u-%02u-%02u %02u:%02u", (unsigned)(tm.tm_year + 1900) % 10000u,
                 (unsigned)(tm.tm_mon + 1) % 100u, (unsigned)tm.tm_mday % 100u,
                 (unsigned)tm.tm_hour % 100u, (unsigned)tm.tm_min % 100u);
}

/* The picker offers what can be opened. */
static bool openable(const struct row *r)
{
    return !r->damaged && !r->newer && r->holder == 0;
}

unsigned convs_print(FILE *out, bool numbered, unsigned max)
{
    unsigned i, k = 0, n = t.n < max ? t.n : max;

    if (t.n == 0) {
        fprintf(out, "  no conversations yet\n");
        return 0;
    }
    fprintf(out, "%s%-26s %-16s %-18s %5s  %s\n", numbered ? "     " : "  ", "id",
            "last activity", "state", "msgs", "first words");
    for (i = 0; i < n; i++) {
        const struct row *r = &t.row[i];
        char st[40], tm[32], first[64];

        when(r->mtime, tm, sizeof(tm));
        mote_show_line(first, sizeof(first), r->first, strlen(r->first));
        if (numbered && openable(r))
            fprintf(out, "  %2u ", ++k);
        else if (numbered)
            fputs("   - ", out);
        else
            fputs("  ", out);
        fprintf(out, "%-26s %-16s %-18s %5u  %s\n", r->id, tm, state_of(r, st, sizeof(st)),
                r->msgs, first);
    }
    if (t.n > n || t.dropped > 0)
        fprintf(out, "  (%u older not shown)\n", t.n - n + t.dropped);
    return k;
}

const char *convs_pick(unsigned k, unsigned max)
{
    unsigned i, n = t.n < max ? t.n : max;

    for (i = 0; i < n; i++)
        if (openable(&t.row[i]) && --k == 0)
            return t.row[i].id;
    return NULL;
}
