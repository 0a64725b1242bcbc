/* posix_internal.h - shared between the files of port/posix (internal). */
#ifndef MOTE_POSIX_INTERNAL_H
#define MOTE_POSIX_INTERNAL_H

#include "mote/mote_config.h"
#include "mote/mote_port.h"

/* Descriptors one wait() accepts (the loop passes at most MOTE_MAX_WATCHES). */
#define MOTE_POSIX_MAX_POLL (MOTE_MAX_WATCHES + 8)

/* Random bytes that never block (getrandom, else a clock-seeded stream):
 * for names, ids and jitter, never keys (posix.c). */
void mote_posix_random_bytes(void *buf, size_t len);

/* Sets the storage members of `port` (storage.c). */
void mote_posix_storage_fill(struct mote_port *port);

/* Sets the net members (net.c). */
void mote_posix_net_fill(struct mote_port *port);

/* Sets the process members (proc.c). */
void mote_posix_proc_fill(struct mote_port *port);

/* Sets the file-system members (fs.c). */
void mote_posix_fs_fill(struct mote_port *port);

/* Sets the serving members (listen.c). */
void mote_posix_listen_fill(struct mote_port *port);

/* Sets the TLS members: tls_mbedtls.c or tls_none.c, as built. */
void mote_tls_fill(struct mote_port *port);

#endif
