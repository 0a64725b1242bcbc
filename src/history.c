/*
 * history.c - the input history, STATE/history: one line per input,
 * appended as it is entered, and rewritten atomically at shutdown with its
 * last MOTE_HISTORY_MAX lines (only when it has more: small flash is not
 * rewritten for nothing). Memory: one line and one read block, on the
 * stack; the rewrite copies from the old file piece by piece.
 */
#include <string.h>

#include "mote/mote_agent.h"
#include "util.h"

#define HIST_NAME "history"
/* Bytes read at a time: small, since it is on the stack (a 500-line
 * history is read in about 50 calls). */
#define HIST_BLOCK 512

int mote_history_add(struct mote_session *s, const char *line, size_t len)
{
    const struct mote_port *p = s->port;
    char buf[MOTE_HISTORY_LINE_MAX + 1];
    size_t i;
    int h, n;

    s->history_used = true;
    if (len == 0 || len > MOTE_HISTORY_LINE_MAX)
        return MOTE_ERR_TOO_LARGE;
    for (i = 0; i < len; i++)
        buf[i] = line[i] == '\n' || line[i] == '\r' ? ' ' : line[i];
    buf[len] = '\n';
    h = p->st_open(p->ctx, HIST_NAME, MOTE_ST_APPEND | MOTE_ST_CREATE);
    if (h < 0)
        return h; /* saved again (or warned about) at shutdown */
    n = p->st_append(p->ctx, h, buf, len + 1);
    p->st_close(p->ctx, h);
    return n < 0 ? n : 0;
}

int mote_history_read(struct mote_session *s, int (*fn)(void *arg, const char *line, size_t len),
                      void *arg)
{
    const struct mote_port *p = s->port;
    char block[HIST_BLOCK];
    char line[MOTE_HISTORY_LINE_MAX + 1];
    size_t ll = 0;
    bool skip = false;
    uint64_t off = 0;
    int h, n, rc = 0;

    h = p->st_open(p->ctx, HIST_NAME, MOTE_ST_READ);
    if (h < 0)
        return h;
    while (rc == 0 && (n = p->st_read(p->ctx, h, off, block, sizeof(block))) > 0) {
        int i;

        off += (uint64_t)n;
        for (i = 0; i < n && rc == 0; i++) {
            if (block[i] != '\n') {
                if (ll < MOTE_HISTORY_LINE_MAX)
                    line[ll++] = block[i];
                else
                    skip = true; /* too long: left out */
                continue;
            }
            if (!skip && ll > 0) {
                line[ll] = '\0';
                rc = fn(arg, line, ll);
            }
            ll = 0;
            skip = false;
        }
    }
    p->st_close(p->ctx, h);
    if (rc != 0)
        return rc;
    return n < 0 ? n : 0;
}

int mote_history_save(struct mote_session *s)
{
    const struct mote_port *p = s->port;
    char block[HIST_BLOCK];
    struct mote_src_range c;
    uint64_t pos, from = 0;
    int64_t size;
    unsigned lines = 0;
    bool found = false;
    int h, rc;

    h = p->st_open(p->ctx, HIST_NAME, MOTE_ST_READ);
    if (h == MOTE_ERR_NOENT)
        return 0;
    if (h < 0)
        return h;
    size = p->st_size(p->ctx, h);
    if (size < 0) {
        p->st_close(p->ctx, h);
        return (int)size;
    }
    /* From the end backwards: where the last MOTE_HISTORY_MAX lines start
     * (the final newline ends the last line, it does not start one). */
    pos = (uint64_t)size;
    while (pos > 0 && !found) {
        size_t n = pos < sizeof(block) ? (size_t)pos : sizeof(block);
        int got = p->st_read(p->ctx, h, pos - n, block, n), i;

        if (got < 0 || (size_t)got != n) {
            p->st_close(p->ctx, h);
            return got < 0 ? got : MOTE_ERR_IO;
        }
        for (i = (int)n - 1; i >= 0; i--) {
            uint64_t at = pos - n + (uint64_t)i;

            if (block[i] != '\n' || at + 1 == (uint64_t)size)
                continue;
            if (++lines >= MOTE_HISTORY_MAX) {
                from = at + 1;
                found = true;
                break;
            }
        }
        pos -= n;
    }
    if (!found) {
        p->st_close(p->ctx, h); /* short enough: nothing to rewrite */
        return 0;
    }
    c.port = p;
    c.h = h;
    c.off = from;
    c.end = (uint64_t)size;
    rc = p->st_write_atomic(p->ctx, HIST_NAME, mote_produce_range, &c);
    p->st_close(p->ctx, h);
    return rc;
}
