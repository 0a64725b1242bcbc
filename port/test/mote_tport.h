/*
 * mote_tport.h - the deterministic test port.
 *
 * Same struct mote_port as port/posix, with nothing real behind it:
 *  - clock: simulated milliseconds; wait() advances it by the timeout when
 *    nothing is ready, so timers fire in order without sleeping; the
 *    real-time clock runs with it, set (or jumped) by the test;
 *  - fds: virtual descriptors a test marks ready with mote_tport_fd_ready;
 *  - signals: injected with mote_tport_raise;
 *  - storage: in memory, with countdown fault injection (fail the Nth call
 *    of chosen kinds with an error, or make the Nth append short) and power
 *    cuts (at the Nth write everything stops; mote_tport_power_restore
 *    brings back what was durable, with the unsynced tail dropped, kept,
 *    torn, or turned into NUL bytes);
 *  - random: a seeded xorshift.
 * The port may allocate (it is not part of the core).
 */
#ifndef MOTE_TPORT_H
#define MOTE_TPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_port.h"

#define MOTE_TPORT_FILES 64
#define MOTE_TPORT_HANDLES 32
#define MOTE_TPORT_FDS 128

/* Storage call kinds, for fault injection masks. */
enum {
    MOTE_TP_OPEN = 1u << 0,
    MOTE_TP_READ = 1u << 1,
    MOTE_TP_APPEND = 1u << 2,
    MOTE_TP_SYNC = 1u << 3,
    MOTE_TP_SIZE = 1u << 4,
    MOTE_TP_TRUNCATE = 1u << 5,
    MOTE_TP_ATOMIC = 1u << 6,
    MOTE_TP_LIST = 1u << 7,
    MOTE_TP_REMOVE = 1u << 8,
    MOTE_TP_MKDIR = 1u << 9,
    MOTE_TP_ALL = 0x3FFu,
};

/* What a power cut leaves of data appended but not synced. */
enum mote_tport_cut {
    MOTE_TP_CUT_DROP,  /* lost entirely */
    MOTE_TP_CUT_KEEP,  /* all of it reached the disk */
    MOTE_TP_CUT_TORN,  /* the first half of it reached the disk */
    MOTE_TP_CUT_ZERO,  /* the file grew but the bytes read as NUL */
};

struct mote_tport_file {
    bool used;
    bool is_dir;
    char name[MOTE_STORAGE_NAME_MAX];
    unsigned char *data;
    size_t len;
    size_t cap;
    size_t synced; /* bytes known durable */
};

struct mote_tport_net;
struct mote_tport_serve;

struct mote_tport {
    struct mote_port port;
    struct mote_tport_net *net; /* scripted sockets, if mote_tport_net_init was called */
    struct mote_tport_serve *serve; /* served connections (mote_tport_serve_init) */
    uint32_t now;            /* simulated clock */
    int64_t real_base;       /* the real-time clock (ms since 1970) when `now` was real_at: */
    uint32_t real_at;        /*   it runs with the simulated clock from there */
    int real_state;          /* what clock_real says of it (MOTE_CLOCK_*) */
    uint32_t rng;            /* xorshift state, never 0 */
    bool secret_not_seeded;  /* random_secret says MOTE_ERR_AGAIN (early boot) */
    uint16_t fd_ready[MOTE_TPORT_FDS];
    uint8_t sig[MOTE_SIG_COUNT];
    unsigned waits;          /* wait() calls so far */
    /* Called at the start of every wait(), before readiness is checked. */
    void (*on_wait)(struct mote_tport *tp, int32_t timeout_ms, void *arg);
    void *on_wait_arg;

    /* storage */
    struct mote_tport_file files[MOTE_TPORT_FILES];
    int handles[MOTE_TPORT_HANDLES]; /* file index + 1, 0 = closed */
    unsigned st_calls;       /* storage calls so far */
    unsigned st_reads;       /* storage reads (st_read) so far */
    unsigned st_writes;      /* appends + atomic writes so far */
    unsigned fail_mask;      /* kinds the countdown applies to */
    unsigned fail_at;        /* 1-based call number among those kinds; 0 = off */
    unsigned fail_seen;
    int fail_err;            /* error to return, or 0 for a short append */
    bool fail_sticky;        /* keep failing after the first */
    unsigned cut_at;         /* power dies at this write (1-based); 0 = off */
    bool power_off;
};

/* Fills tp->port; clock starts at `start_ms`. */
void mote_tport_init(struct mote_tport *tp, uint32_t start_ms);

/* Frees the in-memory files. */
void mote_tport_deinit(struct mote_tport *tp);

void mote_tport_advance(struct mote_tport *tp, uint32_t ms);

/* Sets the real-time clock to `ms` (since 1970; a jump, either way) and
 * what clock_real says of it (MOTE_CLOCK_*); it runs on with the
 * simulated clock. Init sets 2026-06-01, MOTE_CLOCK_UNKNOWN. */
void mote_tport_set_real(struct mote_tport *tp, int64_t ms, int state);
void mote_tport_fd_ready(struct mote_tport *tp, int fd, unsigned revents);
void mote_tport_raise(struct mote_tport *tp, enum mote_signal sig);

/* The Nth (1-based) storage call whose kind is in `mask` fails with `err`
 * (0: if it is an append, it writes half and returns the short count). */
void mote_tport_fail_after(struct mote_tport *tp, unsigned mask, unsigned n, int err,
                           bool sticky);

/* Power dies during write number `n` (appends and atomic writes count):
 * that write and every later storage call fail with MOTE_ERR_IO. */
void mote_tport_cut_at(struct mote_tport *tp, unsigned n);

/* Power comes back: handles are closed, and each file keeps its durable
 * bytes plus what `mode` says of the rest. Clears fault injection. */
void mote_tport_power_restore(struct mote_tport *tp, enum mote_tport_cut mode);

/* Direct access for assertions: the file's bytes (NULL if missing). */
const struct mote_tport_file *mote_tport_file(const struct mote_tport *tp, const char *name);

/* Creates or replaces a file's content directly (durable). */
int mote_tport_put(struct mote_tport *tp, const char *name, const void *data, size_t len);

/* ---- scripted sockets (tnet.c) ----
 * Each TCP connection the core opens is answered by the next response of
 * a script: its bytes come `chunk` at a time, one read per wait() (so
 * connections interleave as real ones do), then the connection ends - or,
 * with `stall`, stays open and silent. What the core sends is kept. Names
 * resolve at once to 127.0.0.1. No TLS. */

#define MOTE_TPORT_CONNS 8
#define MOTE_TPORT_SENT_MAX 65536

struct mote_tport_resp {
    const char *bytes;  /* the whole response: status line, headers, body */
    size_t len;
    size_t chunk;       /* bytes per read (0: all at once) */
    bool stall;         /* after the bytes, stay open and silent */
    bool flood;         /* every read finds data (a peer faster than the reader):
                         * no "one read per wait()", never "would block" */
};

struct mote_tport_conn {
    bool used;
    int fd;
    unsigned index;     /* which response */
    size_t off;
    unsigned last_wait; /* the wait() count of the last read: one read per wait */
    size_t sent_len;
    char sent[MOTE_TPORT_SENT_MAX]; /* the request (cut at the cap) */
};

struct mote_tport_net {
    const struct mote_tport_resp *script;
    unsigned n, next;
    unsigned connects;
    struct mote_tport_conn conns[MOTE_TPORT_CONNS];
    /* The request of each connection, in order (what the server saw). */
    unsigned nrequests;
    char requests[16][MOTE_TPORT_SENT_MAX];
};

/* Gives `tp` the net group, answering connections from `script` (n
 * responses; more connections are refused). */
void mote_tport_net_init(struct mote_tport *tp, struct mote_tport_net *net,
                         const struct mote_tport_resp *script, unsigned n);

/* ---- served connections (tserve.c) ----
 * The serving members: one Unix listener (fd 60) and one TCP listener
 * (fd 61); a test connects peers (fds 64..127), writes what the client
 * sends, reads what the server sent, limits how much the client's socket
 * takes before "would block" (a slow reader), and closes. Descriptors
 * that are not the server's go to the scripted sockets above. */

#define MOTE_TPORT_PEERS 64
#define MOTE_TPORT_PEER_IN 70000
#define MOTE_TPORT_PEER_OUT 262144

struct mote_tport_peer {
    bool used;
    bool tcp;
    bool accepted;
    bool server_closed;  /* the server closed it */
    bool client_closed;  /* the test closed its side: the server reads 0 */
    bool client_shut;    /* the client shut its sending side only: the server reads 0,
                          * what it sends still arrives */
    bool server_shut;    /* the server shut its sending side (net_shutdown) */
    int fd;
    size_t in_len, in_off;  /* client -> server */
    size_t out_len;         /* server -> client, all kept */
    size_t out_read;        /* of it, taken by the client (mote_tport_peer_read) */
    size_t window;          /* unread bytes the client's socket holds (0: no limit) */
    size_t max_unread;      /* the most that was ever unread (bounded-memory checks) */
    char in[MOTE_TPORT_PEER_IN];
    char out[MOTE_TPORT_PEER_OUT];
};

struct mote_tport_serve {
    bool unix_open, tcp_open;
    unsigned listens;       /* successful listen calls */
    unsigned nqueue;        /* peers waiting for accept, in order */
    int queue[MOTE_TPORT_PEERS];
    struct mote_tport_peer peers[MOTE_TPORT_PEERS];
    /* the scripted sockets' members, for the descriptors that are not ours */
    int (*send)(void *ctx, int fd, const void *buf, size_t n);
    int (*recv)(void *ctx, int fd, void *buf, size_t n);
    void (*close)(void *ctx, int fd);
};

/* Gives `tp` the serving members (after mote_tport_net_init, if used). */
void mote_tport_serve_init(struct mote_tport *tp, struct mote_tport_serve *s);

/* A client connects (to the TCP listener if `tcp`): the peer's index,
 * or -1 (no peer slot, or not listening). */
int mote_tport_peer_connect(struct mote_tport *tp, bool tcp);

/* The client sends `n` bytes. */
void mote_tport_peer_write(struct mote_tport *tp, int peer, const char *data, size_t n);

/* The client takes `n` more bytes of what the server sent (the window
 * opens again); n = (size_t)-1: all of it. */
void mote_tport_peer_read(struct mote_tport *tp, int peer, size_t n);

/* The client closes its side. */
void mote_tport_peer_close(struct mote_tport *tp, int peer);

/* The client shuts its sending side (shutdown(SHUT_WR)): the server
 * reads the end of input, and the client still reads what it sends. */
void mote_tport_peer_shutdown(struct mote_tport *tp, int peer);

struct mote_tport_peer *mote_tport_peer_get(struct mote_tport *tp, int peer);

#endif /* MOTE_TPORT_H */
