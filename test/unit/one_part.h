/* one_part.h - a request's parts callback that gives one user text, "hi"
 * (the unit tests that send a request and look only at the wire). */
#ifndef ONE_PART_H
#define ONE_PART_H

#include <string.h>

#include "mote/mote_llm.h"

static inline int one_part(void *arg, unsigned index, struct mote_part *p)
{
    (void)arg;
    if (index > 0)
        return 0;
    memset(p, 0, sizeof(*p));
    p->role = MOTE_ROLE_USER;
    p->type = MOTE_PART_TEXT;
    p->text = "hi";
    p->text_len = 2;
    return 1;
}

#endif
