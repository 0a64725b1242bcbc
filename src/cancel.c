/* cancel.c - cooperative cancellation flags. */
#include "mote/mote_cancel.h"

void mote_cancel_init(struct mote_cancel *c, const struct mote_cancel *parent)
{
    c->parent = parent;
    c->set = false;
}

void mote_cancel_set(struct mote_cancel *c)
{
    c->set = true;
}

void mote_cancel_clear(struct mote_cancel *c)
{
    c->set = false;
}
