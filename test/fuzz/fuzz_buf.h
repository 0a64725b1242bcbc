/* fuzz_buf.h - a bounded buffer and the writer's sink into it, as the fuzz
 * targets that write JSON or text collect what is written (test helper):
 * past its capacity the sink refuses (MOTE_ERR_TOO_LARGE) and keeps what
 * it has. */
#ifndef FUZZ_BUF_H
#define FUZZ_BUF_H

#include <stddef.h>
#include <string.h>

#include "mote/mote.h"

struct buf {
    char *p;
    size_t cap, len;
};

static inline int sink(void *arg, const char *p, size_t n)
{
    struct buf *b = arg;

    if (b->len + n > b->cap)
        return MOTE_ERR_TOO_LARGE;
    memcpy(b->p + b->len, p, n);
    b->len += n;
    return 0;
}

#endif
