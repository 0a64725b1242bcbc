/*
 * convs.c - the conversations on disk, as the CLI shows them: `--list`,
 * /conversations, the `--resume` picker and the retention limit.
 *
 * The rows come from mote_session_list() (which reads each journal and
 * never writes one), with the file's time of last change from stat().
 * They live in one static table, newest first.
 */
#define _GNU_SOURCE
#include "convs.h"

#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "render.h"

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
    const char *dir;
} t;

static int64_t mtime_of(const char *id)
{
    char path[1200];
    struct stat st;

    snprintf(path, sizeof(path), "%s/conversations/%s.jsonl", t.dir, id);
    return stat(path, &st) == 0 ? (int64_t)st.st_mtime : 0;
}

static int add(void *arg, const struct mote_conv_info *c)
{
    struct row *r;
    int64_t m = mtime_of(c->id);
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

int convs_load(struct mote_session *s, const char *state_dir)
{
    t.n = 0;
    t.dropped = 0;
    t.dir = state_dir;
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

/* Finished: nothing for recovery to do, and no one has it open. */
static bool finished(const struct row *r)
{
    return !r->damaged && !r->newer && !r->torn && r->holder == 0 && r->state == MOTE_RECOVER_IDLE;
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
    else
        strftime(buf, cap, "%Y-%m-%d %H:%M", &tm);
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
        render_line(first, sizeof(first), r->first, strlen(r->first));
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

/* A cheap look before the journals are read: how many there are and
 * their size. */
static void tally(const char *state_dir, unsigned long *count, unsigned long long *bytes)
{
    char path[1200];
    DIR *d;
    struct dirent *e;

    *count = 0;
    *bytes = 0;
    snprintf(path, sizeof(path), "%s/conversations", state_dir);
    if ((d = opendir(path)) == NULL)
        return;
    while ((e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        struct stat st;

        if (n <= 6 || strcmp(e->d_name + n - 6, ".jsonl") != 0)
            continue;
        snprintf(path, sizeof(path), "%s/conversations/%s", state_dir, e->d_name);
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0) {
            (*count)++;
            *bytes += (unsigned long long)st.st_size;
        }
    }
    closedir(d);
}

int convs_prune(struct mote_session *s, const char *state_dir, unsigned long keep,
                unsigned long keep_bytes, struct convs_pruned *out)
{
    unsigned long count;
    unsigned long long total;
    unsigned pass;
    int rc = 0;

    memset(out, 0, sizeof(*out));
    if (keep == 0 && keep_bytes == 0)
        return 0;
    /* More journals than the table holds: each pass removes what it can
     * see, the oldest first; a few passes reach the rest. */
    for (pass = 0; pass < 4; pass++) {
        unsigned long seen = 0, removed = 0;
        unsigned long long bytes = 0;
        unsigned i;

        tally(state_dir, &count, &total);
        if ((keep == 0 || count <= keep) && (keep_bytes == 0 || total <= keep_bytes))
            return rc; /* within the limits: no journal needs reading */
        if ((rc = convs_load(s, state_dir)) < 0)
            return rc;
        for (i = 0; i < t.n; i++) {
            struct row *r = &t.row[i];

            if (!finished(r))
                continue;
            seen++;
            bytes += r->bytes;
            if (r->loaded || ((keep == 0 || seen <= keep) && (keep_bytes == 0 || bytes <= keep_bytes)))
                continue;
            rc = mote_session_remove(s, r->id);
            if (rc == 0) {
                removed++;
                out->count++;
                out->bytes += r->bytes;
            } else if (rc != MOTE_ERR_BUSY && rc != MOTE_ERR_LOCKED && rc != MOTE_ERR_NOENT) {
                return rc;
            }
            rc = 0;
        }
        if (t.dropped == 0 || removed == 0)
            break;
    }
    return rc;
}
