/*
 * posix_internal.h - what the files of port/posix share (internal).
 *
 * The layers: posix.c fills the port's table and calls each group's fill
 * function (storage.c, fs.c, net.c, listen.c, proc.c, clock.c); the groups call
 * replace.c and base.c; replace.c calls base.c; base.c calls no file of
 * the port. Nothing calls upwards.
 */
#ifndef MOTE_POSIX_INTERNAL_H
#define MOTE_POSIX_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mote/mote_config.h"
#include "mote/mote_port.h"

/* Descriptors one wait() accepts (the loop passes at most MOTE_MAX_WATCHES). */
#define MOTE_POSIX_MAX_POLL (MOTE_MAX_WATCHES + 8)

/* Longest path the file-system group takes (the user's paths), bytes. */
#define MOTE_POSIX_FS_PATH_MAX 4096

/* Longest path of a file in the storage root, bytes with the NUL. */
#define MOTE_POSIX_STORE_PATH_MAX (MOTE_POSIX_PATH_MAX + MOTE_STORAGE_NAME_MAX + 2)

/* Longest path mote_posix_replace() takes: either group's. */
#define MOTE_POSIX_REPLACE_PATH_MAX                                                    \
    (MOTE_POSIX_STORE_PATH_MAX > MOTE_POSIX_FS_PATH_MAX ? MOTE_POSIX_STORE_PATH_MAX \
                                                         : MOTE_POSIX_FS_PATH_MAX)

/* ---- the groups' fill functions (called by posix.c) ---- */

void mote_posix_storage_fill(struct mote_port *port); /* storage.c */
void mote_posix_net_fill(struct mote_port *port);     /* net.c */
void mote_posix_proc_fill(struct mote_port *port);    /* proc.c */
void mote_posix_fs_fill(struct mote_port *port);      /* fs.c */
void mote_posix_listen_fill(struct mote_port *port);  /* listen.c */
void mote_posix_clock_fill(struct mote_port *port);   /* clock.c */

/* ---- replace.c ---- */

/* Replaces the file `target` atomically with what `produce` yields (see
 * replace.c): the new file gets mode `mode` and, if `owner` (a struct
 * stat of the old file) is not NULL, the old file's owner and group where
 * this user may give them. Returns 0, MOTE_FS_OWNER_LOST (replaced; the
 * owner or group could not be kept, set-ID bits dropped), or < 0 with the
 * old file untouched and no temporary left. */
int mote_posix_replace(const char *target, unsigned mode, const void *owner,
                       mote_produce_fn produce, void *arg);

/* The same for entry `name` of directory `dir` (a descriptor, O_PATH is
 * enough): the temporary is made in `dir` and renamed onto `name` there,
 * so a link at `name` is replaced, never followed. */
int mote_posix_replace_at(int dir, const char *name, unsigned mode, const void *owner,
                          mote_produce_fn produce, void *arg);

/* Creates entry `name` of directory `dir` with what `produce` yields and
 * mode `mode`, whole (a temporary written and synced, then linked into
 * place, the directory synced), only if nothing is there: an entry of any
 * kind at `name` gives MOTE_ERR_EXIST, whoever made it when. Returns 0 or
 * < 0, with no temporary left. */
int mote_posix_create_at(int dir, const char *name, unsigned mode, mote_produce_fn produce,
                         void *arg);

/* A replacement in steps of entry `name` of directory `dir` (which the
 * caller keeps: the replacement holds its own descriptor): the
 * temporary, with the old owner kept as mote_posix_replace_at does.
 * Returns a handle >= 0, or < 0 (MOTE_ERR_FULL: too many at once).
 * Then mote_posix_replace_write (a blocking write of the content, 0 or
 * < 0), mote_posix_replace_commit (mode, sync, rename and the directory's
 * sync on a helper thread: MOTE_ERR_AGAIN with *wait_fd readable when it
 * is done; then 0, MOTE_FS_OWNER_LOST or < 0), and always
 * mote_posix_replace_end once (an uncommitted temporary is removed; a
 * commit under way finishes on its thread, unwaited). The file group's
 * fs_replace_* in mote_port.h. */
int mote_posix_replace_open(int dir, const char *name, unsigned mode, const void *owner);
int mote_posix_replace_write(int h, const void *buf, size_t len);
int mote_posix_replace_commit(int h, int *wait_fd);
void mote_posix_replace_end(int h);

/* Waits up to `ms` for the commits under way (those left by their
 * callers too) to end: at the port's deinitialisation. */
void mote_posix_replace_drain(uint32_t ms);

/* ---- base.c ---- */

/* Random bytes that never block: getrandom, else (early boot, no
 * getrandom) a clock-seeded stream. For names, ids, tags and jitter,
 * never keys. Never fails. */
void mote_posix_random_bytes(void *buf, size_t len);

/* Bytes for a secret: getrandom only, never a fallback. 0, or
 * MOTE_ERR_AGAIN before the kernel's pool is initialised (nothing written;
 * *wait_fd: /dev/random, readable once it is), or < 0. Never blocks. */
int mote_posix_random_secret(void *buf, size_t len, int *wait_fd);

/* `digits` random lower-case hex digits and a NUL into `out`. */
void mote_posix_random_hex(char *out, size_t digits);

/* Writes all `n` bytes (a blocking descriptor), retrying after EINTR.
 * Returns 0, MOTE_ERR_NOSPC when nothing more is taken, or the failure. */
int mote_posix_write_all(int fd, const void *buf, size_t n);

/* Opens the regular file `path` with open(2) `flags` (O_CLOEXEC, and
 * O_NONBLOCK so that a FIFO or a device never makes it wait, are added;
 * `mode` for O_CREAT) and checks what was opened. Returns the descriptor
 * (still O_NONBLOCK), MOTE_ERR_NOTREG (anything but a regular file, or a
 * link with O_NOFOLLOW), or the failure. */
int mote_posix_open_file(const char *path, int flags, unsigned mode);

/* One read, write or pread, retried after EINTR, of at most 2^31 - 1
 * bytes. Returns the bytes moved (0: end of file), or < 0 (MOTE_ERR_AGAIN
 * on a non-blocking descriptor with nothing to do). An offset past what
 * the system can address reads as the end. */
int mote_posix_read(int fd, void *buf, size_t len);
int mote_posix_write(int fd, const void *buf, size_t len);
int mote_posix_pread(int fd, uint64_t offset, void *buf, size_t len);

/* Closes `fd` if it is >= 0; the shape of the port's close members. */
void mote_posix_close(void *ctx, int fd);

/* `a` as a socket address in `ss` (a struct sockaddr_storage, passed as
 * void so that this header needs no socket header). Returns its length,
 * or 0 for a family that is neither 4 nor 6. */
unsigned mote_posix_sockaddr(const struct mote_addr *a, void *ss);

#endif
