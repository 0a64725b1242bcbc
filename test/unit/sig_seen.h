/* sig_seen.h - a loop's signal callback that counts what came (test
 * helper): the loop's unit tests (the test port's signals) and the POSIX
 * port's (real ones) check the same counts. */
#ifndef MOTE_TEST_SIG_SEEN_H
#define MOTE_TEST_SIG_SEEN_H

#include "mote/mote.h"

struct sseen {
    unsigned count[MOTE_SIG_COUNT]; /* deliveries of each signal */
    int calls;                      /* callbacks (one may carry several deliveries) */
};

/* mote_loop_on_signal's callback; arg is a struct sseen. */
static inline void on_sig(struct mote_loop *l, enum mote_signal sig, unsigned n, void *arg)
{
    struct sseen *s = arg;

    (void)l;
    s->count[sig] += n;
    s->calls++;
}

#endif
