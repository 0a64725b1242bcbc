/*
 * replace.c - atomic replacement of a file for the POSIX port, shared by
 * the storage group (mote's own state) and the file-system group (the
 * user's files): the new content goes into an exclusively created,
 * unpredictably named temporary in the same directory (one descriptor
 * for it all: no path is looked up twice), never opened through a link; it gets its mode (and, where asked, the old file's owner
 * and group), is synced, renamed over the file, and the directory is
 * synced after. A reader sees the old file or the new one, never a part,
 * and a power cut at any moment leaves one of them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

#define COPY_BUF 4096
#define TEMP_HEX 16   /* random hex digits in a temporary's name */
#define TEMP_TRIES 16 /* names tried before giving up */

/* Syncs directory `dir` (what a rename changed). A descriptor opened
 * with O_PATH (a directory this user may search but not read) cannot be
 * synced: its own reopening is, if readable; else nothing is (the rename
 * itself is atomic; only its durability waits for the file system). */
static int sync_dir(int dir)
{
    int fd, rc = 0;

    do {
        fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return errno == EACCES ? 0 : mote_posix_err(errno);
    if (fsync(fd) < 0 && errno != EINVAL)
        rc = mote_posix_err(errno);
    close(fd);
    return rc;
}

/* Creates the temporary in `dir` (".mote-HEX.tmp"): exclusive, never
 * through a link, under a name nobody can guess, mode 0600. Returns its
 * descriptor with the name in `tmp`, or < 0. */
static int make_temp(int dir, char *tmp, size_t cap)
{
    int tries;

    for (tries = 0; tries < TEMP_TRIES; tries++) {
        char name[TEMP_HEX + 1];
        int fd, n;

        mote_posix_random_hex(name, TEMP_HEX);
        n = snprintf(tmp, cap, ".mote-%s.tmp", name);
        if (n < 0 || (size_t)n >= cap)
            return MOTE_ERR_NAMETOOLONG;
        do {
            fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
        } while (fd < 0 && errno == EINTR);
        if (fd >= 0)
            return fd;
        if (errno != EEXIST)
            return mote_posix_err(errno);
    }
    return MOTE_ERR_EXIST;
}

/* Gives the temporary the old file's owner and group. Only root may give
 * a file away: anyone else keeps at least the group where they are in it,
 * and a set-user-ID or set-group-ID bit is dropped when the owner or group
 * it would grant changed (as cp and install do): never a setuid file of
 * the wrong user. Returns MOTE_FS_OWNER_LOST when they could not be kept. */
static int keep_owner(int fd, const struct stat *old, mode_t *mode)
{
    struct stat now;
    int lost = 0;

    if (fstat(fd, &now) < 0)
        return mote_posix_err(errno);
    if (now.st_uid != old->st_uid || now.st_gid != old->st_gid) {
        /* Both at once, else the group alone; what could not be kept is
         * told below. */
        if (fchown(fd, old->st_uid, old->st_gid) < 0 && now.st_gid != old->st_gid)
            (void)fchown(fd, (uid_t)-1, old->st_gid);
        if (fstat(fd, &now) < 0)
            return mote_posix_err(errno);
    }
    if (now.st_uid != old->st_uid) {
        *mode &= ~(mode_t)S_ISUID;
        lost = MOTE_FS_OWNER_LOST;
    }
    if (now.st_gid != old->st_gid) {
        *mode &= ~(mode_t)S_ISGID;
        lost = MOTE_FS_OWNER_LOST;
    }
    return lost;
}

int mote_posix_replace_at(int dir, const char *name, unsigned mode, const void *owner,
                          mote_produce_fn produce, void *arg)
{
    char tmp[TEMP_HEX + 16];
    char buf[COPY_BUF];
    mode_t m = (mode_t)mode;
    int fd, rc = 0, lost = 0;

    fd = make_temp(dir, tmp, sizeof(tmp));
    if (fd < 0)
        return fd;
    if (owner != NULL && (lost = keep_owner(fd, owner, &m)) < 0)
        rc = lost;
    while (rc == 0) {
        int n = produce(arg, buf, sizeof(buf));

        if (n <= 0) {
            rc = n;
            break;
        }
        rc = mote_posix_write_all(fd, buf, (size_t)n);
    }
    /* The mode last: a chown, and a write by anyone but root, clear the
     * set-ID bits. */
    if (rc == 0 && fchmod(fd, m) < 0)
        rc = mote_posix_err(errno);
    if (rc == 0 && fsync(fd) < 0)
        rc = mote_posix_err(errno);
    if (close(fd) < 0 && rc == 0)
        rc = mote_posix_err(errno);
    /* the entry itself is replaced, never what a link there points at */
    if (rc == 0 && renameat(dir, tmp, dir, name) < 0)
        rc = mote_posix_err(errno);
    if (rc < 0) {
        unlinkat(dir, tmp, 0);
        return rc;
    }
    rc = sync_dir(dir);
    return rc < 0 ? rc : lost;
}

int mote_posix_replace(const char *target, unsigned mode, const void *owner,
                       mote_produce_fn produce, void *arg)
{
    char dir[MOTE_POSIX_REPLACE_PATH_MAX];
    const char *slash = strrchr(target, '/');
    int fd, rc;

    if (slash == NULL)
        strcpy(dir, ".");
    else if (slash == target)
        strcpy(dir, "/");
    else if ((size_t)(slash - target) < sizeof(dir))
        snprintf(dir, sizeof(dir), "%.*s", (int)(slash - target), target);
    else
        return MOTE_ERR_NAMETOOLONG;
    do {
        fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return mote_posix_err(errno);
    rc = mote_posix_replace_at(fd, slash != NULL ? slash + 1 : target, mode, owner, produce, arg);
    close(fd);
    return rc;
}
