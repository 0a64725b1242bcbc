/* text_out.h - a bounded text buffer and the sink a writer fills it
 * through (test helper): what a JSON writer, a request body or a head
 * emits, kept NUL-terminated; past its capacity the sink refuses with
 * MOTE_ERR_TOO_LARGE and keeps what it has. */
#ifndef MOTE_TEST_TEXT_OUT_H
#define MOTE_TEST_TEXT_OUT_H

#include <stddef.h>
#include <string.h>

#include "mote/mote.h"

struct out {
    char s[8192];
    size_t n;
};

static inline int to_out(void *arg, const char *p, size_t n)
{
    struct out *o = arg;

    if (o->n + n >= sizeof(o->s))
        return MOTE_ERR_TOO_LARGE;
    memcpy(o->s + o->n, p, n);
    o->n += n;
    o->s[o->n] = '\0';
    return 0;
}

#endif
