/* journal.h - what the journal's modules share inside the library
 * (internal): reading the fields of the record in the journal's buffer.
 * The record I/O (journal.c) defines them; the part source
 * (journal_parts.c) and the recovery decision (journal_recover.c) use
 * them. */
#ifndef MOTE_JOURNAL_INTERNAL_H
#define MOTE_JOURNAL_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "mote/mote_journal.h"

/* String member `key` of object token `obj` of the record in j->buf->json,
 * unescaped into j->buf->text at offset *used; *used moves past it and
 * its NUL, and *len (if not NULL) gets its length. Returns the string, or
 * NULL when the member is missing, is not a string, or does not fit the
 * rest of j->buf->text. */
const char *mote_jrec_str(struct mote_journal *j, int obj, const char *key, size_t *used,
                          size_t *len);

/* Boolean member `key` of object token `obj` of the record in
 * j->buf->json; false when it is missing or not a boolean. */
bool mote_jrec_bool(const struct mote_journal *j, int obj, const char *key);

#endif /* MOTE_JOURNAL_INTERNAL_H */
