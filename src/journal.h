/* journal.h - what the journal's modules share inside the library
 * (internal): reading the fields of the record in the journal's buffer.
 * The record I/O (journal.c) defines them; the part source
 * (journal_parts.c), the recovery decision (journal_recover.c) and the
 * agent's stepped opening (agent_session.c) use them. */
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

/* The line check of opening, in steps (journal.c; mote_jscan and the
 * agent's conversation load, mote_conv_load_*, use it).
 * Start opens `id` (read only and the lock tested if `peek`, else for
 * appending with the lock held) and begins at its first line; 0 or a
 * failure (the journal closed). Next checks one line, or one chunk of a
 * line over the limit, adding the bytes read to *spent: the good
 * record's type (> 0; the record in j->buf, j->cur_off its offset),
 * MOTE_ERR_AGAIN (a chunk of a long line: call again), 0 at the end of
 * the good records, or a failure (MOTE_ERR_CORRUPT with j->bad_line, a
 * read failure). Finish, once next returned 0, applies the end's rules
 * (a newer format, the torn tail cut unless `peek`, a file without a
 * header) and makes j->size the end of the good records: 0, or a failure
 * with the journal closed. */
int mote_jcheck_start(struct mote_journal *j, const struct mote_port *port, const char *id,
                      bool peek, struct mote_jcheck *c);
int mote_jcheck_next(struct mote_journal *j, struct mote_jcheck *c, size_t *spent);
int mote_jcheck_finish(struct mote_journal *j, struct mote_jcheck *c, bool peek);

#endif /* MOTE_JOURNAL_INTERNAL_H */
