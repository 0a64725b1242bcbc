/* one_part.h - a request's parts callback for a conversation of one user
 * text (the unit tests that send a request and look only at the wire, "hi";
 * the model client's probe, its prompt). */
#ifndef ONE_PART_H
#define ONE_PART_H

#include <stddef.h>
#include <string.h>

#include "mote/mote_llm.h"

/* Part `index` of a conversation of one user text, text[0..len): fills *p
 * and returns 1 for index 0, returns 0 (the end) after it. */
static inline int one_text_part(unsigned index, struct mote_part *p, const char *text, size_t len)
{
    if (index > 0)
        return 0;
    memset(p, 0, sizeof(*p));
    p->role = MOTE_ROLE_USER;
    p->type = MOTE_PART_TEXT;
    p->text = text;
    p->text_len = len;
    return 1;
}

/* The parts of a conversation of one user text, "hi". */
static inline int one_part(void *arg, unsigned index, struct mote_part *p)
{
    (void)arg;
    return one_text_part(index, p, "hi", 2);
}

#endif
