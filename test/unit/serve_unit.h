/* serve_unit.h - what the unit tests of mote serve's doors share on top
 * of serve_kit.h (test helper, cmocka): the teardown, turning the loop,
 * and what a client peer has received. Included after cmocka.h. */
#ifndef MOTE_TEST_SERVE_UNIT_H
#define MOTE_TEST_SERVE_UNIT_H

#include "../serve_kit.h"

/* The server, session and loop ended, the port with them. */
static inline int teardown(void **state)
{
    (void)state;
    kit_stop();
    mote_tport_deinit(&tp);
    return 0;
}

/* Turns the loop `n` times (time moves on only when nothing is ready). */
static inline void turns(unsigned n)
{
    while (n-- > 0)
        assert_true(mote_loop_poll(&loop, 10) >= 0);
}

/* What peer `p` has received, NUL-terminated (within its buffer). */
static inline const char *sent(int p)
{
    struct mote_tport_peer *q = mote_tport_peer_get(&tp, p);

    assert_true(q->out_len < MOTE_TPORT_PEER_OUT);
    q->out[q->out_len] = '\0';
    return q->out;
}

#endif
