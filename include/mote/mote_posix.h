/*
 * mote_posix.h - the POSIX/Linux port (port/posix).
 *
 * struct mote_posix is caller-owned and holds a ready struct mote_port in
 * `port`. Signals are process-wide, so at most one mote_posix may have
 * its signal handlers installed at a time.
 */
#ifndef MOTE_POSIX_H
#define MOTE_POSIX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h" /* MOTE_POSIX_PATH_MAX, MOTE_CONFIG_SIGNATURE */
#include "mote/mote_port.h"

#ifdef __cplusplus
extern "C" {
#endif

struct mote_posix {
    struct mote_port port;   /* hand &pp->port to mote_loop_init */
    int sig_pipe[2];         /* self-pipe: read end watched by wait() */
    bool sig_installed;
    bool sig_ready;          /* the last wait() saw the pipe readable */
    bool sig_fd_out;         /* signals_fd gave the pipe to another loop: drain it always */
    uint32_t clock_offset;   /* added to the clock (tests start near 2^32) */
    char root[MOTE_POSIX_PATH_MAX]; /* storage root, "" until set */
    const char *zoneinfo;    /* the time zones' directory (tz_open): NULL is
                              * /usr/share/zoneinfo (a frontend may set $TZDIR's) */
};

/* Fills pp->port and creates the signal self-pipe. No handler is
 * installed yet. Returns 0, MOTE_ERR_CONFIG if the program was compiled
 * with other MOTE_* values than the library (struct mote_posix would not
 * match: `pp` is not touched), or another value < 0 (the pipe could not be
 * made). A macro: it passes the caller's MOTE_CONFIG_SIGNATURE. */
#define mote_posix_init(pp) mote_posix_init_checked((pp), MOTE_CONFIG_SIGNATURE)
int mote_posix_init_checked(struct mote_posix *pp, unsigned long config_signature);

/* Installs handlers for SIGINT, SIGTERM and SIGHUP that count the signal
 * and wake wait(), and ignores SIGPIPE (a closed peer becomes
 * MOTE_ERR_PIPE). Returns 0, or MOTE_ERR_BUSY if another mote_posix has
 * them. */
int mote_posix_signals_install(struct mote_posix *pp);

/* Puts back the handlers that were there before install. */
void mote_posix_signals_restore(struct mote_posix *pp);

/* Sets the storage root to `dir`, creating it and missing parents with
 * mode 0700. Returns 0, MOTE_ERR_NAMETOOLONG, MOTE_ERR_NOTDIR,
 * MOTE_ERR_PERM (a directory another user owns, or that group or others
 * may write to: refused, as ssh refuses a loose ~/.ssh) or the failure of
 * mkdir. Files below it are opened without following symbolic links and
 * replaced through unpredictable, exclusively created temporary names. */
int mote_posix_storage_root(struct mote_posix *pp, const char *dir);

/* Restores signals and closes the self-pipe, after waiting (up to 2 s)
 * for the files being written behind (st_write_behind) to be committed. */
void mote_posix_deinit(struct mote_posix *pp);

/* errno value -> enum mote_err (-EIO class codes map to themselves). */
int mote_posix_err(int errnum);

/* ---- for services (port/posix/service.c) ---- */

/* systemd's notification socket (Type=notify), spoken without libsystemd. */
struct mote_posix_notify {
    char path[108]; /* $NOTIFY_SOCKET (a path, or '@' and an abstract name) */
    size_t len;     /* 0: none */
};

/* Takes $NOTIFY_SOCKET out of the environment into `n`, so that tools
 * and MCP servers (and their children) never talk to systemd in mote's
 * name. Returns true if it names a socket (a path or '@name' that fits). */
bool mote_posix_notify_take(struct mote_posix_notify *n);

/* Sends `msg` ("READY=1", "STOPPING=1", "READY=1\nSTATUS=...") as one
 * datagram; nothing without a socket. Does not block. Returns 0, or the
 * send's failure (a service goes on: systemd then times the start out). */
int mote_posix_notify(const struct mote_posix_notify *n, const char *msg);

/* Checks that a file holding a secret (a token) is private: 0 if it does
 * not exist or is a regular file of this user that neither group nor
 * others may read or write; MOTE_ERR_PERM (another user's, or mode bits
 * for group or others), MOTE_ERR_NOTREG (a link or not a regular file), or
 * the failure of lstat. */
int mote_posix_private_file(const char *path);

#ifdef __cplusplus
}
#endif

#endif /* MOTE_POSIX_H */
