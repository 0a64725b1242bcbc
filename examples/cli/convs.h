/* convs.h - the conversations on disk, as the CLI shows them: `--list`,
 * /conversations and the `--resume` picker (the retention limit is the
 * library's mote_session_prune). */
#ifndef MOTE_CLI_CONVS_H
#define MOTE_CLI_CONVS_H

#include <stdbool.h>
#include <stdio.h>

#include "mote/mote_agent.h"

/* Rows kept for a listing (the newest; older ones are counted). */
#define CONVS_MAX 512

/* Reads the conversations in STATE/conversations into the table, newest
 * first. Returns 0 or a storage error. */
int convs_load(struct mote_session *s);

unsigned convs_count(void);
const char *convs_id(unsigned i); /* 0: the newest */

/* Prints the first `max` rows: id, last activity, state, user messages,
 * first words. `numbered` (the picker): the rows that can be opened are
 * numbered from 1 (a damaged one, one of a newer format or one open in
 * another process gets no number); returns how many got one. */
unsigned convs_print(FILE *out, bool numbered, unsigned max);

/* The id of the row the picker numbered `k` (from 1), or NULL. */
const char *convs_pick(unsigned k, unsigned max);

#endif
