/*
 * port.c - which members a port lacks, by the feature that needs them.
 *
 * mote_port.h promises that a missing member is an error, never a crash:
 * every entry point that needs a group checks it here once (loop, journal,
 * session, model client) and fails with MOTE_ERR_NOSYS, and
 * mote_port_missing() names the member for the message.
 */
#include <stddef.h>

#include "mote/mote_port.h"

struct member {
    unsigned group;
    size_t off, size;
    const char *name;
};

#define M(g, m) {g, offsetof(struct mote_port, m), sizeof(((struct mote_port *)0)->m), #m}

static const struct member members[] = {
    M(MOTE_PORT_CORE, now_ms),
    M(MOTE_PORT_CORE, wait),
    M(MOTE_PORT_STORAGE, st_open),
    M(MOTE_PORT_STORAGE, st_read),
    M(MOTE_PORT_STORAGE, st_append),
    M(MOTE_PORT_STORAGE, st_sync),
    M(MOTE_PORT_STORAGE, st_size),
    M(MOTE_PORT_STORAGE, st_truncate),
    M(MOTE_PORT_STORAGE, st_close),
    M(MOTE_PORT_STORAGE, st_write_atomic),
    M(MOTE_PORT_STORAGE, st_list),
    M(MOTE_PORT_STORAGE, st_remove),
    M(MOTE_PORT_STORAGE, st_mkdir),
    M(MOTE_PORT_NET, net_resolve),
    M(MOTE_PORT_NET, net_resolve_result),
    M(MOTE_PORT_NET, net_resolve_end),
    M(MOTE_PORT_NET, net_connect),
    M(MOTE_PORT_NET, net_connect_done),
    M(MOTE_PORT_NET, net_send),
    M(MOTE_PORT_NET, net_recv),
    M(MOTE_PORT_NET, net_close),
    M(MOTE_PORT_TLS, tls_open),
    M(MOTE_PORT_TLS, tls_handshake),
    M(MOTE_PORT_TLS, tls_send),
    M(MOTE_PORT_TLS, tls_recv),
    M(MOTE_PORT_TLS, tls_close),
    M(MOTE_PORT_PROC, proc_spawn),
    M(MOTE_PORT_PROC, proc_signal),
    M(MOTE_PORT_PROC, proc_reap),
    M(MOTE_PORT_PROC, pipe_read),
    M(MOTE_PORT_PROC, pipe_write),
    M(MOTE_PORT_PROC, pipe_close),
    M(MOTE_PORT_FS, fs_stat),
    M(MOTE_PORT_FS, fs_open),
    M(MOTE_PORT_FS, fs_read),
    M(MOTE_PORT_FS, fs_close),
    M(MOTE_PORT_FS, fs_replace),
    M(MOTE_PORT_FS, fs_list),
    M(MOTE_PORT_SERVE, net_accept),
    M(MOTE_PORT_SERVE, net_unlisten),
    M(MOTE_PORT_SERVE, net_send),
    M(MOTE_PORT_SERVE, net_recv),
    M(MOTE_PORT_SERVE, net_close),
    M(MOTE_PORT_LISTEN_UNIX, net_listen_unix),
    M(MOTE_PORT_LISTEN_TCP, net_listen_tcp),
};

const char *mote_port_missing(const struct mote_port *p, unsigned groups)
{
    size_t i;

    if (p == NULL)
        return "the port itself";
    for (i = 0; i < sizeof(members) / sizeof(members[0]); i++) {
        const struct member *m = &members[i];
        const void *fn;

        if ((m->group & groups) == 0)
            continue;
        if (p->size < m->off + m->size)
            return m->name;
        /* Every member is a function pointer: read it as one. */
        fn = *(const void *const *)(const void *)((const char *)p + m->off);
        if (fn == NULL)
            return m->name;
    }
    return NULL;
}
