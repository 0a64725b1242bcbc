/*
 * mote_cancel.h - cooperative cancellation flags.
 *
 * A flag may have a parent; a flag counts as set when it or any ancestor is
 * set. A session's flag is the parent of every job's flag, so setting the
 * session's flag cancels every job at once. Setting a flag is all a cancel
 * does: the owner of the work sees it on its next step and stops.
 *
 * Flags are caller-owned structs; a parent must outlive its children.
 * Setting from a signal handler is not supported (signals reach the core
 * as loop events instead).
 */
#ifndef MOTE_CANCEL_H
#define MOTE_CANCEL_H

#include <stdbool.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

struct mote_cancel {
    const struct mote_cancel *parent; /* NULL for a root flag */
    bool set;
};

/* Clears `c` and links it to `parent` (may be NULL). */
void mote_cancel_init(struct mote_cancel *c, const struct mote_cancel *parent);

/* Sets `c` (and so every descendant). Idempotent. */
void mote_cancel_set(struct mote_cancel *c);

/* Clears `c` itself; a set ancestor still makes it count as set. */
void mote_cancel_clear(struct mote_cancel *c);

/* True if `c` or an ancestor is set. Cost: one load per level. */
static inline bool mote_cancel_is_set(const struct mote_cancel *c)
{
    for (; c != NULL; c = c->parent) {
        if (c->set)
            return true;
    }
    return false;
}

#ifdef __cplusplus
}
#endif

#endif /* MOTE_CANCEL_H */
