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
    char state[32];  /* in words (mote_conv_info_say) */
    int64_t mtime;
    unsigned msgs;
    bool openable;   /* the picker offers it */
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
    r->msgs = c->user_messages;
    (void)mote_conv_info_say(c, r->state, sizeof(r->state));
    r->openable = !c->damaged && !c->newer && c->holder == 0;
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
        char tm[32], first[64];

        when(r->mtime, tm, sizeof(tm));
        mote_show_line(first, sizeof(first), r->first, strlen(r->first));
        if (numbered && r->openable)
            fprintf(out, "  %2u ", ++k);
        else if (numbered)
            fputs("   - ", out);
        else
            fputs("  ", out);
        fprintf(out, "%-26s %-16s %-18s %5u  %s\n", r->id, tm, r->state,
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
        if (t.row[i].openable && --k == 0)
            return t.row[i].id;
    return NULL;
}
