/* sse_steps.h - a model's stream given to the SSE parser in pieces of a
 * chosen size, then ended by a blank line (the unit tests that decode a
 * provider's stream however the network would cut it). */
#ifndef SSE_STEPS_H
#define SSE_STEPS_H

#include <stddef.h>

#include "mote/mote_sse.h"

/* Feeds n bytes of buf to `sse` in pieces of `step` bytes (0: in one go),
 * stopping at the first error, then "\n\n" to end a last event left
 * open. Returns 0 or the parser's (or its callback's) error. */
static inline int sse_feed_steps(struct mote_sse *sse, const char *buf, size_t n, size_t step)
{
    size_t at = 0;
    int rc = 0;

    while (at < n && rc == 0) {
        size_t piece = step == 0 || step > n - at ? n - at : step;

        rc = mote_sse_feed(sse, buf + at, piece);
        at += piece;
    }
    if (rc == 0)
        rc = mote_sse_feed(sse, "\n\n", 2);
    return rc;
}

#endif
