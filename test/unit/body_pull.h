/* body_pull.h - a model request's body pulled from its stream
 * (mote_llm_body_read) in reads of a chosen size, as the HTTP client takes
 * it (the unit tests that compare it with the one-go writer or its
 * length). Include after <cmocka.h>. */
#ifndef BODY_PULL_H
#define BODY_PULL_H

#include <stddef.h>

#include "mote/mote_llm.h"

/* Pulls the body of `req` into buf (cap bytes) in reads of at most
 * `piece` bytes; the stream must end (0, not an error) within cap.
 * Returns the body's length. */
static inline size_t body_pull(const struct mote_llm_req *req, char *buf, size_t cap,
                               size_t piece)
{
    struct mote_llm_body b;
    size_t n = 0;
    int r;

    mote_llm_body_init(&b, req);
    while ((r = mote_llm_body_read(&b, buf + n, piece < cap - n ? piece : cap - n)) > 0)
        n += (size_t)r;
    assert_int_equal(r, 0);
    return n;
}

#endif
