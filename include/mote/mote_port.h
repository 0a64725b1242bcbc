/*
 * mote_port.h - everything the portable core needs from the platform.
 *
 * A port is one struct of function pointers plus a context pointer that is
 * passed back to every call. The embedder fills it (port/posix does it for
 * Linux and other POSIX systems, port/test for deterministic tests) and
 * hands it to mote_loop_init(); the core never calls the OS any other way.
 *
 * Versioning: `size` must be sizeof(struct mote_port) as the embedder was
 * compiled, `version` MOTE_PORT_VERSION. Members are only ever appended;
 * the core checks `size` before it touches a member, so a port built
 * against an older header keeps working and a member past its size counts
 * as NULL. A NULL member means "not supported": the call that needs it
 * fails with MOTE_ERR_NOSYS.
 *
 * Conventions for every member:
 *  - Return >= 0 on success (a count where stated), < 0 an enum mote_err.
 *  - "Non-blocking" means the call returns at once; when it cannot make
 *    progress it returns MOTE_ERR_AGAIN, which is not an error: the caller
 *    waits for readiness through wait() and repeats the same call with the
 *    same arguments.
 *  - Partial I/O: a write may take fewer bytes than offered and a read may
 *    return fewer than asked; the return value says how many.
 *  - No member calls back into the core.
 *
 * Groups: clock, wait, signals, storage, random (version 1), then net,
 * TLS, process, file system, process identity, the storage lock and
 * serving, appended in that order (and later members of the groups after
 * them: the real-time clock and time zones last); older ports stay valid
 * through `size`.
 */
#ifndef MOTE_PORT_H
#define MOTE_PORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h" /* MOTE_STORAGE_NAME_MAX, named below */

#ifdef __cplusplus
extern "C" {
#endif

#define MOTE_PORT_VERSION 1

/* Events for struct mote_pollfd. */
#define MOTE_POLL_IN 0x1u  /* readable, or a peer hung up */
#define MOTE_POLL_OUT 0x2u /* writable */
#define MOTE_POLL_ERR 0x4u /* error or hang-up; always reported */

struct mote_pollfd {
    int fd;           /* a descriptor of the port's own kind */
    uint16_t events;  /* MOTE_POLL_IN | MOTE_POLL_OUT asked for */
    uint16_t revents; /* set by wait(): what is ready */
};

/* Portable signal numbers (the port maps its own). */
enum mote_signal {
    MOTE_SIG_INT = 0,  /* interrupt (Ctrl+C) */
    MOTE_SIG_TERM = 1, /* terminate (service manager stop) */
    MOTE_SIG_HUP = 2,  /* hang-up (terminal closed) */
    MOTE_SIG_COUNT
};

/* Flags for storage open(). */
#define MOTE_ST_READ 0x1u   /* open for reading */
#define MOTE_ST_APPEND 0x2u /* open for appending (writes go to the end) */
#define MOTE_ST_CREATE 0x4u /* create if missing (mode 0600 where it applies) */
#define MOTE_ST_PRIVATE 0x8u /* open only a file of this user that neither group nor others
                              * may read or write (else MOTE_ERR_PERM), for secrets; a port
                              * whose files have no owner opens it as usual */

/* Produces the content of write_atomic() piece by piece: fill at most `cap`
 * bytes of `buf`, return how many (0 = the end), or < 0 to abort. */
typedef int (*mote_produce_fn)(void *arg, char *buf, size_t cap);

/* A resolved address. */
struct mote_addr {
    uint8_t family;    /* 4 or 6 */
    uint16_t port;     /* host byte order */
    uint8_t addr[16];  /* network byte order; IPv4 uses the first 4 */
};

#define MOTE_MAX_ADDRS 4 /* addresses kept per name */

/* Called by list() once per entry with its name (no directory part).
 * Return 0 to go on, anything else to stop the listing and have list()
 * return it. */
typedef int (*mote_list_fn)(void *arg, const char *name);

/* What fs_stat tells of a path (after following symlinks). */
struct mote_fs_stat {
    uint8_t type;   /* MOTE_FS_* */
    uint32_t mode;  /* permission bits (0644, ...), 0 where it does not apply */
    uint64_t size;  /* bytes (regular files) */
};

/* Called by fs_list once per entry with its name and kind (MOTE_FS_*).
 * Return 0 to go on, anything else to stop. */
typedef int (*mote_fs_list_fn)(void *arg, const char *name, unsigned type);

struct mote_tls_peer;
struct mote_tls_info;

struct mote_port {
    uint32_t size;    /* sizeof(struct mote_port) as compiled by the port */
    uint32_t version; /* MOTE_PORT_VERSION */
    void *ctx;        /* passed back as the first argument of every call */

    /* ---- clock ---- */

    /* Monotonic milliseconds. Never blocks, never fails. Wraps around at
     * 2^32: the core compares times only by wrap-safe differences, so any
     * starting value is fine. */
    uint32_t (*now_ms)(void *ctx);

    /* ---- wait ---- */

    /* Blocks until one of `fds` is ready, a signal is pending (see
     * signals_take), or `timeout_ms` passes (0: do not block; < 0: no
     * timeout). Sets each revents. Returns the number of fds with
     * revents != 0 (0 on timeout or when a signal woke it), or < 0 on a
     * failure of the wait itself. A signal that arrives before the call
     * must still make it return at once: no wake-up is ever lost. */
    int (*wait)(void *ctx, struct mote_pollfd *fds, unsigned nfds, int32_t timeout_ms);

    /* ---- signals ---- */

    /* Takes the signals that arrived since the last call: counts[sig] is
     * set to how many of each arrived (saturating at 255) and cleared in
     * the port. Returns the total. Never blocks; never loses a signal that
     * arrives during the call (it is reported by the next one). */
    int (*signals_take)(void *ctx, uint8_t counts[MOTE_SIG_COUNT]);

    /* ---- storage ----
     * Names are relative paths of at most MOTE_STORAGE_NAME_MAX - 1 bytes
     * ("history", "conversations/ID.jsonl") below a root the port chose; a
     * name with ".." components, a leading '/' or a NUL is refused with
     * MOTE_ERR_INVAL. Handles are small ints >= 0. All calls block until
     * done (local storage); none returns MOTE_ERR_AGAIN. */

    /* Opens `name` with MOTE_ST_* flags; returns a handle or < 0
     * (MOTE_ERR_NOENT when missing and not CREATE). Anything but a regular
     * file (a symlink, a FIFO, a device, a directory: planted or left in
     * the state) is refused with MOTE_ERR_NOTREG at once: never followed,
     * never waited on (opening a FIFO blocks until a writer comes). */
    int (*st_open)(void *ctx, const char *name, unsigned flags);

    /* Reads up to `len` bytes at byte `offset`; returns the count, 0 at
     * the end of the file. */
    int (*st_read)(void *ctx, int h, uint64_t offset, void *buf, size_t len);

    /* Appends `len` bytes with a single write. Returns the count written:
     * a short count means the rest was not written (disk full, say) and
     * the caller decides (it may truncate back). Not durable until
     * st_sync(). */
    int (*st_append)(void *ctx, int h, const void *buf, size_t len);

    /* Makes everything appended so far durable (fdatasync or fsync). */
    int (*st_sync)(void *ctx, int h);

    /* Current size in bytes, or < 0. */
    int64_t (*st_size)(void *ctx, int h);

    /* Cuts the file to `size` bytes and makes the cut durable. */
    int (*st_truncate)(void *ctx, int h, uint64_t size);

    /* Closes the handle (always succeeds from the caller's view). */
    void (*st_close)(void *ctx, int h);

    /* Replaces `name` atomically with what `produce` yields: a temporary
     * file is written and synced, renamed over `name`, and the directory
     * synced. On any failure `name` keeps its old content (or stays
     * missing) and the temporary file is removed. */
    int (*st_write_atomic)(void *ctx, const char *name, mote_produce_fn produce, void *arg);

    /* Calls `fn` for every entry of directory `dir` ("" is the root),
     * leaving out "." and "..", in no particular order. */
    int (*st_list)(void *ctx, const char *dir, mote_list_fn fn, void *arg);

    /* Removes file `name`; MOTE_ERR_NOENT if it is missing. */
    int (*st_remove)(void *ctx, const char *name);

    /* Creates directory `name` (mode 0700 where it applies); succeeds if
     * it exists already. */
    int (*st_mkdir)(void *ctx, const char *name);

    /* ---- random ---- */

    /* Fills `buf` with `len` unpredictable bytes for what is not a secret
     * (jitter, ids, temporary names, process tags). Never blocks; before
     * the OS's generator is seeded (early boot) a port may fall back to a
     * weaker source. Secrets come from random_secret (below). */
    int (*random)(void *ctx, void *buf, size_t len);

    /* ---- net ----
     * All calls are non-blocking. Descriptors are the port's own and can
     * be passed to wait(). */

    /* Starts resolving `host` (a name or an address literal) for `port`.
     * Returns a request handle >= 0 and sets *wait_fd to a descriptor
     * that becomes readable when the answer is in; never blocks, however
     * slow the name service is. */
    int (*net_resolve)(void *ctx, const char *host, uint16_t port, int *wait_fd);

    /* The answer of request `req`: up to `max` addresses, IPv4 and IPv6
     * as the name service ordered them. Returns the count (> 0),
     * MOTE_ERR_AGAIN while pending, or MOTE_ERR_DNS. */
    int (*net_resolve_result)(void *ctx, int req, struct mote_addr *out, unsigned max);

    /* Ends request `req`, finished or not (a pending lookup is abandoned:
     * its answer is dropped when it comes). Always call it once. */
    void (*net_resolve_end)(void *ctx, int req);

    /* Starts a TCP connection to `a`. Returns a descriptor >= 0 (connected
     * or in progress: wait for MOTE_POLL_OUT, then net_connect_done) or
     * < 0. */
    int (*net_connect)(void *ctx, const struct mote_addr *a);

    /* 0 once connected, MOTE_ERR_AGAIN while in progress, or the failure
     * (MOTE_ERR_CONNREFUSED, MOTE_ERR_HOSTUNREACH, ...). */
    int (*net_connect_done)(void *ctx, int fd);

    /* Sends up to `n` bytes: the count (may be short), MOTE_ERR_AGAIN, or
     * < 0 (MOTE_ERR_PIPE, MOTE_ERR_CONNRESET). */
    int (*net_send)(void *ctx, int fd, const void *buf, size_t n);

    /* Receives up to `n` bytes: the count, 0 when the peer closed,
     * MOTE_ERR_AGAIN, or < 0. */
    int (*net_recv)(void *ctx, int fd, void *buf, size_t n);

    /* Closes the descriptor. */
    void (*net_close)(void *ctx, int fd);

    /* ---- TLS ----
     * A TLS session on a connected descriptor (the backend chosen at
     * build time: TLS=mbedtls or TLS=none). Certificate verification is
     * always on: the CA bundle, SNI, the host name, the validity dates.
     * "Would block" is MOTE_ERR_AGAIN with *want set to MOTE_POLL_IN or
     * MOTE_POLL_OUT: wait for that, then repeat the same call. Failures
     * leave an explanation in `err` (err_cap bytes, NUL-terminated). */

    /* Prepares a session for `host` on `fd`, trusting `ca_file` (NULL or
     * "": the backend's default roots, mote_tls.h). Returns a handle >= 0
     * or < 0 (MOTE_ERR_NOTSUP when built without TLS). Sends nothing.
     * port/tls_mbedtls.c fills these members for any port
     * (mote_tls_fill): it runs over net_send/net_recv and reads roots
     * through fs_open/fs_read. */
    int (*tls_open)(void *ctx, int fd, const char *host, const char *ca_file, char *err,
                    size_t err_cap);

    /* Advances the handshake: 0 when done and the peer verified. */
    int (*tls_handshake)(void *ctx, int h, unsigned *want, char *err, size_t err_cap);

    /* Like net_send / net_recv, through the session. */
    int (*tls_send)(void *ctx, int h, const void *buf, size_t n, unsigned *want);
    int (*tls_recv)(void *ctx, int h, void *buf, size_t n, unsigned *want);

    /* Bytes already decrypted and waiting (read them before waiting). */
    int (*tls_pending)(void *ctx, int h);

    /* Ends the session (the descriptor is closed by net_close). */
    void (*tls_close)(void *ctx, int h);

    /* ---- process ----
     * Child processes in their own process group, with pipes, that never
     * outlive mote: each runs under a small supervisor (a fork of mote)
     * that kills the child's whole group when the child exits or when mote
     * goes away, even by kill -9. */

    /* Starts argv[0] (searched in PATH) with environment `envp` (NULL:
     * inherit) in a new process group, stdin/stdout/stderr on non-blocking
     * pipes returned in fds[0..2] (fds[2] is -1 with `merge_err`: stderr
     * then goes to the stdout pipe). Does not wait for the program to be
     * loaded: returns 0 and a handle in *pid for
     * proc_signal/proc_reap/proc_group, or < 0 (MOTE_ERR_NOENT when the
     * program is not there); a program that only its start finds
     * unrunnable says why on its stderr and exits 127 (as a shell). */
    int (*proc_spawn)(void *ctx, const char *const *argv, const char *const *envp, bool merge_err,
                      int fds[3], int64_t *pid);

    /* Sends MOTE_PROC_TERM or MOTE_PROC_KILL to the child's whole process
     * group (`pid` a handle from proc_spawn not yet reaped: a reaped
     * handle gives MOTE_ERR_NOENT and signals nothing, since its group id
     * may name a stranger's group by then). Never signals a group whose
     * leader was reaped (the POSIX port's supervisor sends it, right after
     * the call, only while the leader is unreaped). Never blocks. Returns
     * 0, or MOTE_ERR_NOENT if nothing of it is left. What an earlier run
     * left is ended with proc_kill_recorded. */
    int (*proc_signal)(void *ctx, int64_t pid, int which);

    /* Collects the child's exit without blocking: MOTE_ERR_AGAIN while it
     * runs, else 0 with *status = its exit code, or 128 + signal. Frees
     * the handle. */
    int (*proc_reap)(void *ctx, int64_t pid, int *status);

    /* When process `pid` started (an opaque count that differs between a
     * process and a later one reusing its pid), or 0 if no such process
     * runs. */
    uint64_t (*proc_start_time)(void *ctx, int64_t pid);

    /* The process group id of a child (for the journal), or < 0
     * (MOTE_ERR_AGAIN: the port does not know it yet: ask again on a
     * later step). Never blocks. The POSIX port learns it from the
     * child's supervisor right after its fork (before the exec). */
    int64_t (*proc_group)(void *ctx, int64_t pid);

    /* Non-blocking I/O on the pipes proc_spawn returned: the count (may be
     * short), 0 at end of file (read), MOTE_ERR_AGAIN, MOTE_ERR_PIPE when
     * the child closed its end, or < 0. */
    int (*pipe_read)(void *ctx, int fd, void *buf, size_t n);
    int (*pipe_write)(void *ctx, int fd, const void *buf, size_t n);
    void (*pipe_close)(void *ctx, int fd);

    /* ---- file system (the built-in file tools) ----
     * Paths as a user writes them (absolute, or relative to the working
     * directory), not below the storage root. Every call blocks until done
     * (local files); errors are enum mote_err (MOTE_ERR_NOENT,
     * MOTE_ERR_ACCES, MOTE_ERR_ISDIR, ...). A port without it offers no
     * file tools. Symlinks are followed as Linux's protected_symlinks rule
     * allows, whatever the system's setting: a link in a sticky directory
     * that others may write is followed only if its owner is the
     * directory's owner or the caller (else MOTE_ERR_ACCES: anyone may
     * plant a link there). What a call checks is what it reads or writes
     * (the POSIX port works on the last entry through its directory's
     * descriptor). */

    /* What `path` is (symlinks followed). */
    int (*fs_stat)(void *ctx, const char *path, struct mote_fs_stat *st);

    /* Opens regular file `path` for reading; anything else (a FIFO, a
     * device: opening them could block or never end) is refused with
     * MOTE_ERR_INVAL, a directory with MOTE_ERR_ISDIR. Returns a handle. */
    int (*fs_open)(void *ctx, const char *path);

    /* Reads up to `len` bytes at `offset`: the count, 0 at the end (an
     * offset past what the platform's file offsets hold is past the end:
     * 0, not an error). */
    int (*fs_read)(void *ctx, int h, uint64_t offset, void *buf, size_t len);

    void (*fs_close)(void *ctx, int h);

    /* Replaces the content of `path` with what `produce` yields,
     * atomically: a crash leaves the old content or the new one. The new
     * file keeps the old one's permission bits and its owner and group (a
     * new file gets 0644 less the process's umask, and the caller's
     * owner); a symlink is written through (its target changes, the link
     * stays). Refused, the file left as it is and nothing written:
     * anything but a regular file or a missing one (MOTE_ERR_INVAL, or
     * MOTE_ERR_ISDIR), a file with no write permission bit at all or one
     * the caller may not write (MOTE_ERR_ACCES, even where the caller
     * could replace it: an editor asks first), a file with other hard
     * links (MOTE_ERR_LINKED: they would keep the old content). Where the
     * caller may not give the file its old owner or group (only a
     * privileged caller may), the new file is the caller's, any
     * set-user-ID or set-group-ID bit that would now grant another user
     * or group is dropped, and MOTE_FS_OWNER_LOST is returned instead of
     * 0. The temporary file is created exclusively under an unpredictable
     * name in the same directory, and file and directory are synced.
     * Blocks (local files). Returns 0, MOTE_FS_OWNER_LOST (> 0: done) or
     * < 0 (produce's error, or the file system's: the old file stays). */
    int (*fs_replace)(void *ctx, const char *path, mote_produce_fn produce, void *arg);

    /* Calls `fn` for each entry of directory `path` (no "." or ".."), in
     * no particular order. */
    int (*fs_list)(void *ctx, const char *path, mote_fs_list_fn fn, void *arg);

    /* ---- process identity (recovery of tools after a crash) ----
     * Every process proc_spawn starts carries a tag that its descendants
     * inherit (on POSIX the environment variable MOTE_TOOL_TAG, a random
     * token), so what is left of a tool can be found after mote died even
     * when the tool's leader is gone and its members moved to other
     * process groups; and a stranger's process never matches. */

    /* Copies child `pid`'s tag (a handle from proc_spawn) into buf (cap
     * bytes, NUL-terminated). Returns its length, or < 0. */
    int (*proc_tag)(void *ctx, int64_t pid, char *buf, size_t cap);

    /* Ends what is left of a tool an earlier run recorded: process group
     * `pgid` if its leader still has start time `start` (0: do not), and
     * every process of this user carrying `tag` (NULL or "": none).
     * Returns how many processes it signalled (0: nothing was left), or
     * < 0. Never signals a process that matches neither. */
    int (*proc_kill_recorded)(void *ctx, int64_t pgid, uint64_t start, const char *tag);

    /* ---- storage, appended: one writer per conversation ----
     * Optional: NULL (or outside the port's size) where only one process
     * ever uses the storage; every lock then succeeds. */

    /* MOTE_LOCK_HOLD: takes an exclusive lock on open handle `h` without
     * waiting, held until st_close(h). MOTE_LOCK_TEST: only says whether
     * another process holds one (nothing is kept). Returns 0, or
     * MOTE_ERR_LOCKED with *holder set to the holder's process id where
     * the platform can tell (else 0), or < 0. A process's own lock through
     * another handle counts as another's. */
    int (*st_lock)(void *ctx, int h, unsigned how, int64_t *holder);

    /* ---- net, appended: serving (mote_serve.h) ----
     * Optional: a port without them cannot serve (mote_serve_listen fails
     * with MOTE_ERR_NOSYS naming the member). Accepted connections are
     * ordinary descriptors: net_send, net_recv and net_close work on them.
     * Nothing here blocks. */

    /* Listens on a local (Unix domain) stream socket at file-system path
     * `path`, reachable by this user only (mode 0600). An existing path is
     * taken over only if it is a socket of this user that nobody listens
     * on (left by a process that died); a socket someone listens on gives
     * MOTE_ERR_ADDRINUSE, anything else (a file, a link, another user's
     * socket) MOTE_ERR_EXIST, and is left as it is. Returns the listening
     * descriptor, or < 0 (MOTE_ERR_NAMETOOLONG: longer than the platform
     * takes). */
    int (*net_listen_unix)(void *ctx, const char *path);

    /* Listens on TCP address `a` (port 0: one the system picks). Sets
     * *bound to the address bound. Returns the listening descriptor or
     * < 0 (MOTE_ERR_ADDRINUSE, MOTE_ERR_ACCES, ...). */
    int (*net_listen_tcp)(void *ctx, const struct mote_addr *a, struct mote_addr *bound);

    /* Takes one pending connection of listener `lfd`: a new non-blocking
     * descriptor, or MOTE_ERR_AGAIN when none waits, or < 0. A peer the
     * port refuses (on a Unix socket, another user) is closed here and
     * counts as none. */
    int (*net_accept)(void *ctx, int lfd);

    /* Closes listener `lfd`; a Unix socket's path is removed if it is
     * still the one this listener made. */
    void (*net_unlisten)(void *ctx, int lfd);

    /* Ends the sending side of accepted descriptor `fd` (a half close):
     * the peer reads the end of input once what was sent has arrived,
     * and net_recv goes on working. Does not block. Returns 0 or < 0.
     * Optional (NULL, or outside the port's size): a server then keeps
     * the connection a moment after its last answer, and closes. */
    int (*net_shutdown)(void *ctx, int fd);

    /* ---- storage, appended: retention ----
     * Optional: NULL (or outside the port's size) where files keep no
     * time; mote_session_prune then takes the oldest by name (a default
     * conversation id starts with its creation time). */

    /* Sets *mtime to the time of the last change of `name` (a regular
     * file, not followed if a link), in seconds of the platform's real-time
     * clock. Returns 0, MOTE_ERR_NOENT, or < 0. */
    int (*st_time)(void *ctx, const char *name, int64_t *mtime);

    /* ---- TLS, appended: which server, sessions kept for resumption ----
     * Optional (NULL, or outside the port's size): the core then uses
     * tls_open, and every connection makes a full handshake. */

    /* Like tls_open, for the server `peer` names (struct mote_tls_peer):
     * its port binds a kept session to the server as much as its name;
     * a session kept from an earlier handshake with the same server,
     * name and trust (in memory, or in storage with
     * MOTE_TLS_RESUME_DISK) is offered for resumption; `alpn` is offered
     * with ALPN. Returns a handle >= 0 or < 0. Sends nothing. */
    int (*tls_connect)(void *ctx, int fd, const struct mote_tls_peer *peer, char *err,
                       size_t err_cap);

    /* What the finished handshake of session `h` gave (struct
     * mote_tls_info). Returns 0, or MOTE_ERR_BADF. Never blocks. */
    int (*tls_info)(void *ctx, int h, struct mote_tls_info *info);

    /* ---- random, appended: secrets ----
     * Optional: a port without it cannot make secrets (mote_serve_token
     * fails with MOTE_ERR_NOSYS; the operator gives the token instead). */

    /* Fills `buf` with `len` bytes fit for a secret (a credential): from
     * the platform's cryptographic generator once it is seeded, never
     * from a fallback. Never blocks: MOTE_ERR_AGAIN while the generator
     * is not seeded yet (early boot), nothing written to `buf` then, and
     * *wait_fd a descriptor that becomes readable when it may be (-1:
     * none; ask again a little later). Returns 0, MOTE_ERR_AGAIN, or < 0
     * (MOTE_ERR_NOSYS: the platform has no such generator). `random`
     * above is for what is not a secret (ids, names, jitter) and may
     * fall back to something weaker; this never does. */
    int (*random_secret)(void *ctx, void *buf, size_t len, int *wait_fd);

    /* ---- net, appended: serving a group ----
     * Optional: without it a server serves only its own user (a conf's
     * socket_group gives MOTE_ERR_NOSYS). */

    /* Opens Unix listener `lfd` (from net_listen_unix) to the members of
     * group `group` (a name, or a number): the socket's mode becomes 0660
     * with that group, and net_accept serves its members besides this
     * user and root. Returns 0, MOTE_ERR_NOENT (no such group),
     * MOTE_ERR_PERM (this user may not give the socket that group: it is
     * not a member), or < 0; on failure the socket stays 0600. */
    int (*net_listen_group)(void *ctx, int lfd, const char *group);

    /* ---- net, appended: a peer that does not read ----
     * Optional: NULL (or outside the port's size) where the platform
     * cannot tell; a server then notices a peer that reads nothing only
     * once the socket's buffer is full. */

    /* Bytes sent on connected descriptor `fd` that the peer has not taken
     * yet (not read, on a local socket; not acknowledged, on TCP). Never
     * blocks. Returns the count (0: all taken), or < 0. */
    int (*net_unread)(void *ctx, int fd);

    /* ---- signals, appended: a loop run inside another ----
     * Optional (NULL, or outside the port's size): a loop inside another
     * one then takes signals at each of its dispatches only. */

    /* The descriptor wait() watches for signals (a self-pipe's read end):
     * readable while a signal waits to be taken, so that another event
     * loop can watch it for MOTE_POLL_IN beside mote's own descriptors
     * (mote_loop_host). Once it has been asked for, signals_take empties
     * it whenever it has something. Returns the descriptor, or < 0 (none).
     * Never blocks. */
    int (*signals_fd)(void *ctx);

    /* ---- process, appended: a start held until it is journaled ----
     * Optional (both or neither; NULL, or outside the port's size): a
     * tool's program then starts at once, and its group is journaled
     * while it runs. */

    /* Like proc_spawn, but the program is held: the child waits in its
     * new process group, before its exec, until proc_go. So its group
     * (proc_group) and tag can be made durable before anything of the
     * program runs. A held child that is signalled, or that mote leaves
     * (any death of mote), ends without running the program. */
    int (*proc_spawn_held)(void *ctx, const char *const *argv, const char *const *envp,
                           bool merge_err, int fds[3], int64_t *pid);

    /* Lets held child `pid` (a handle from proc_spawn_held, not reaped)
     * run its program. Never blocks. Returns 0, or MOTE_ERR_NOENT (no such
     * child, or nothing of it is left). */
    int (*proc_go)(void *ctx, int64_t pid);

    /* ---- file system, appended: a replacement in steps ----
     * Optional (all four or none; NULL, or outside the port's size): the
     * file tools then replace a file with fs_replace, in one step. The
     * same replacement as fs_replace - the same checks, refusals, kept
     * mode and owner, the same result - cut so that no call blocks long:
     * begin, the new content written piece by piece, then the commit,
     * whose sync and rename run apart from the caller. */

    /* Starts replacing `path`: fs_replace's checks (a refusal writes
     * nothing), then the temporary file. Returns a handle >= 0, or < 0
     * (fs_replace's refusals, MOTE_ERR_FULL: too many at once). Blocks as
     * a local file's creation does. */
    int (*fs_replace_begin)(void *ctx, const char *path);

    /* Appends `len` bytes of the new content to replacement `h`. Blocks
     * as a local write does (no sync). Returns 0, or < 0 (the replacement
     * cannot succeed: end it). */
    int (*fs_replace_write)(void *ctx, int h, const void *buf, size_t len);

    /* Commits replacement `h`: the new file gets its mode (and owner), is
     * synced, renamed over the path, and the directory synced. Never
     * blocks: MOTE_ERR_AGAIN while that runs, with *wait_fd a descriptor
     * that becomes readable when it is done (-1: ask again a little
     * later); called again, the same until it is done, then 0,
     * MOTE_FS_OWNER_LOST or < 0 as fs_replace (the old file stays on a
     * failure). */
    int (*fs_replace_commit)(void *ctx, int h, int *wait_fd);

    /* Ends replacement `h`, whatever its point: one not committed is
     * abandoned (its temporary removed, the file unchanged); a commit
     * under way goes on to its end apart from the caller (the file is
     * then replaced or not, as the commit decides) and is not waited
     * for. Always call it once. Never blocks for a sync. */
    void (*fs_replace_end)(void *ctx, int h);

    /* ---- clock, appended: the real-time clock ----
     * Optional (NULL, or outside the port's size): wall-clock schedules
     * then never run, and the budget's hours and days run on the
     * monotonic clock from the latest time journaled. */

    /* Sets *ms to the real-time clock, milliseconds since 1970-01-01 UTC
     * (as it is: a device without a battery-backed clock may say 1970
     * until it is set). Returns MOTE_CLOCK_SYNCED when the platform says
     * the clock is synchronised (NTP), MOTE_CLOCK_UNSYNCED when it says
     * it is not, MOTE_CLOCK_UNKNOWN (0) when it cannot tell, or < 0.
     * Never blocks. */
    int (*clock_real)(void *ctx, int64_t *ms);

    /* ---- time zones ----
     * Optional: without it only UTC is known. */

    /* Opens the zone information (a TZif file, RFC 8536) of IANA zone
     * `name` ("Europe/Paris": checked by the core with mote_tz_name_ok,
     * never a path out of the zone directory) for fs_read and fs_close.
     * Returns a handle, MOTE_ERR_NOENT (no such zone here), or < 0.
     * Blocks as a local file's open does. */
    int (*tz_open)(void *ctx, const char *name);

    /* ---- storage, appended: a file written behind ----
     * Optional (NULL, or outside the port's size): st_write_atomic is used
     * instead, which waits for the disk. */

    /* Replaces `name` atomically with `len` bytes of `buf`, as
     * st_write_atomic does, its sync and rename apart from the caller:
     * returns once the bytes are handed over (a temporary file written,
     * not synced), never waiting for the disk. `name` then holds the new
     * content or the old one as that commit goes, and a crash before its
     * end leaves the old one. What is under way is finished when the port
     * is deinitialised (a bounded wait). Returns 0, or < 0 and nothing is
     * written (MOTE_ERR_FULL: too many under way). */
    int (*st_write_behind)(void *ctx, const char *name, const void *buf, size_t len);

    /* ---- storage, appended: creation that never replaces ----
     * Optional (NULL, or outside the port's size): the core then looks
     * whether `name` exists and writes it with st_write_atomic, which is
     * safe only where one process at a time creates files there. */

    /* Creates `name` with what `produce` yields, whole or not at all (as
     * st_write_atomic: written aside, synced, put in place, the directory
     * synced), only where nothing is at `name`: an entry of any kind
     * there (a file, even an empty one; a link; a FIFO), also one another
     * process puts there at the same moment, gives MOTE_ERR_EXIST and is
     * left as it is. Returns 0 or < 0 (nothing left behind). */
    int (*st_create)(void *ctx, const char *name, mote_produce_fn produce, void *arg);

    /* ---- process, appended: the memory it holds ----
     * Optional (NULL, or outside the port's size): the metrics then leave
     * it out. */

    /* Sets *bytes to the memory this process holds resident (its RSS).
     * Never blocks long (a read of the kernel's counters). Returns 0 or
     * < 0. */
    int (*mem_resident)(void *ctx, uint64_t *bytes);
};

/* What clock_real says of the clock. */
#define MOTE_CLOCK_UNKNOWN 0  /* the platform cannot tell */
#define MOTE_CLOCK_SYNCED 1   /* synchronised (NTP, PTP, GPS) */
#define MOTE_CLOCK_UNSYNCED 2 /* the platform says it is not */

/* Resumption of TLS sessions (mote_tls_peer.resume). */
#define MOTE_TLS_RESUME_OFF 0    /* every connection a full handshake */
#define MOTE_TLS_RESUME_MEMORY 1 /* sessions kept in memory for the process's later connections */
#define MOTE_TLS_RESUME_DISK 2   /* and in storage (tls/...), for the next process */

/* The server a TLS session is for, and how sessions are kept. */
struct mote_tls_peer {
    const char *host;         /* SNI and the name the certificate must carry */
    uint16_t port;            /* the server's TCP port */
    const char *ca_file;      /* NULL or "": the backend's default roots */
    const char *alpn;         /* offered with ALPN ("http/1.1"); NULL: none */
    uint8_t resume;           /* MOTE_TLS_RESUME_* */
    uint32_t session_max_s;   /* a session older than this (seconds since its full
                               * handshake) is not offered; 0: the backend's cap */
    const char *cert_file;    /* a client certificate (its chain, PEM) for a server that
                               * asks for one (mutual TLS), with its private key: */
    const char *key_file;     /*   PEM, unencrypted; NULL, NULL: none */
};

/* What a handshake gave. */
struct mote_tls_info {
    bool resumed;             /* an abbreviated handshake: a kept session was resumed */
    char version[16];         /* "TLSv1.2", ... */
    char alpn[16];            /* the protocol the server chose with ALPN, "" if none */
};

#define MOTE_LOCK_HOLD 1
#define MOTE_LOCK_TEST 2

#define MOTE_PROC_TERM 1
#define MOTE_PROC_KILL 2

/* Kinds of file for struct mote_fs_stat. */
#define MOTE_FS_FILE 1  /* a regular file */
#define MOTE_FS_DIR 2   /* a directory */
#define MOTE_FS_OTHER 3 /* a FIFO, a device, a socket: the tools refuse them */

/* fs_replace succeeded, but the file's old owner or group could not be
 * kept (the caller may not give files away): it is now the caller's. */
#define MOTE_FS_OWNER_LOST 1

/* Feature groups for mote_port_missing(). */
#define MOTE_PORT_CORE 0x01u    /* now_ms, wait: the loop */
#define MOTE_PORT_STORAGE 0x02u /* st_*: journals, history, the session */
#define MOTE_PORT_NET 0x04u     /* net_*: the model client */
#define MOTE_PORT_TLS 0x08u     /* tls_*: https */
#define MOTE_PORT_PROC 0x10u    /* proc_*, pipe_*: the shell tool, MCP servers */
#define MOTE_PORT_FS 0x20u      /* fs_*: the file tools */
#define MOTE_PORT_SERVE 0x40u   /* net_accept, net_unlisten (+ net_send/recv/close): serving */
#define MOTE_PORT_LISTEN_UNIX 0x80u /* net_listen_unix: serving on a Unix socket */
#define MOTE_PORT_LISTEN_TCP 0x100u /* net_listen_tcp: serving on TCP */

/* The name of the first member of `groups` that port `p` lacks (outside
 * its declared size, or NULL), or NULL if it has them all. The entry
 * points that need a group fail with MOTE_ERR_NOSYS when it is
 * incomplete; this names what is missing for the message. */
const char *mote_port_missing(const struct mote_port *p, unsigned groups);

/* True if port `p` has member `m` (inside its declared size and set). */
#define MOTE_PORT_HAS(p, m)                                                        \
    ((p)->size >= offsetof(struct mote_port, m) + sizeof((p)->m) && (p)->m != NULL)

#ifdef __cplusplus
}
#endif

#endif /* MOTE_PORT_H */
