/* conn.h - kept connections, as the model client uses them (internal). */
#ifndef MOTE_CONN_INTERNAL_H
#define MOTE_CONN_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "mote/mote_client.h"

/* Takes `k` for a request to `origin` (a hash of scheme, host, port,
 * proxy and trust). Returns 1: an idle connection to that origin that is
 * still good, now busy (no idle watch, no timer); 0: `k` is busy and
 * closed (one closed on the way if it was another origin's, or dead):
 * the request opens one and sets k->fd, k->tls; MOTE_ERR_BUSY: another
 * request has it. Never blocks (a look at the socket without waiting). */
int mote_conn_take(struct mote_conn *k, struct mote_loop *loop, uint64_t origin);

/* Closes the descriptors of busy `k` and leaves it busy and closed, for
 * the same request to open again. */
void mote_conn_drop(struct mote_conn *k);

/* The request that had `k` is done with it: kept idle (watched, closed
 * after `idle_ms`) when `keep`, its idle limit is not 0 and nobody asked
 * to close it meanwhile (mote_conn_close); else closed. */
void mote_conn_release(struct mote_conn *k, bool keep, uint32_t idle_ms);

#endif /* MOTE_CONN_INTERNAL_H */
