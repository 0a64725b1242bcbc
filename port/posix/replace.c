/*
 * replace.c - atomic replacement of a file for the POSIX port, shared by
 * the storage group (mote's own state) and the file-system group (the
 * user's files): the new content goes into an exclusively created,
 * unpredictably named temporary in the same directory (one descriptor
 * for it all: no path is looked up twice), never opened through a link; it gets its mode (and, where asked, the old file's owner
 * and group), is synced, renamed over the file, and the directory is
 * synced after. A reader sees the old file or the new one, never a part,
 * and a power cut at any moment leaves one of them.
 *
 * A replacement in steps (the file group's fs_replace_begin/write/
 * commit/end) keeps its temporary in a slot between calls, and its commit
 * - the mode, the sync, the rename, the directory's sync - runs on a
 * detached helper thread, so the loop never waits for the disk: it waits
 * on the slot's pipe, which the thread writes when it is done, and may
 * leave at any time (the thread then frees the slot itself), as name
 * resolution does (net.c). The storage group's writes behind
 * (st_write_behind) are such replacements left at once; the port's
 * deinitialisation waits for what is under way (bounded).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

#define COPY_BUF 4096
#define TEMP_HEX 16   /* random hex digits in a temporary's name */
#define TEMP_TRIES 16 /* names tried before giving up */
#define STEP_SLOTS 8  /* replacements in steps at once (commits left running included) */
#define NAME_CAP 256  /* an entry's name and its NUL (NAME_MAX + 1) */

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

/* Writes what `produce` gives to `fd` until it says the end (0) or fails. */
static int pour(int fd, mote_produce_fn produce, void *arg)
{
    char buf[COPY_BUF];
    int rc = 0;

    while (rc == 0) {
        int n = produce(arg, buf, sizeof(buf));

        if (n <= 0)
            return n;
        rc = mote_posix_write_all(fd, buf, (size_t)n);
    }
    return rc;
}

/* The end of a replacement whose content is in temporary `fd` (named
 * `tmp` in `dir`): its mode, the sync, the rename onto `name`, the
 * directory's sync; `rc` < 0 (a failure before) only cleans up. The
 * descriptor is closed, the temporary removed on failure. Returns 0 or
 * < 0. */
static int commit_temp(int dir, int fd, const char *tmp, const char *name, mode_t m, int rc)
{
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
    return sync_dir(dir);
}

int mote_posix_replace_at(int dir, const char *name, unsigned mode, const void *owner,
                          mote_produce_fn produce, void *arg)
{
    char tmp[TEMP_HEX + 16];
    mode_t m = (mode_t)mode;
    int fd, rc = 0, lost = 0;

    fd = make_temp(dir, tmp, sizeof(tmp));
    if (fd < 0)
        return fd;
    if (owner != NULL && (lost = keep_owner(fd, owner, &m)) < 0)
        rc = lost;
    if (rc == 0)
        rc = pour(fd, produce, arg);
    rc = commit_temp(dir, fd, tmp, name, m, rc);
    return rc < 0 ? rc : lost;
}

/* Puts temporary `tmp` at `name` in `dir` only if nothing is there: a
 * hard link (fails with EEXIST on any entry, a dangling link's too),
 * else, on a file system without hard links, a rename that never
 * replaces. The temporary's own name is removed either way. */
static int put_new(int dir, const char *tmp, const char *name)
{
    int rc = 0;

    if (linkat(dir, tmp, dir, name, 0) < 0) {
        int e = errno;

#ifdef SYS_renameat2
        if (e == EPERM || e == EOPNOTSUPP || e == ENOSYS || e == EMLINK) {
            /* RENAME_NOREPLACE (1): the temporary becomes the file */
            if (syscall(SYS_renameat2, dir, tmp, dir, name, 1u) == 0)
                return 0;
            e = errno;
        }
#endif
        rc = mote_posix_err(e);
    }
    unlinkat(dir, tmp, 0);
    return rc;
}

int mote_posix_create_at(int dir, const char *name, unsigned mode, mote_produce_fn produce,
                         void *arg)
{
    char tmp[TEMP_HEX + 16];
    int fd, rc = 0;

    fd = make_temp(dir, tmp, sizeof(tmp));
    if (fd < 0)
        return fd;
    rc = pour(fd, produce, arg);
    if (rc == 0 && fchmod(fd, (mode_t)mode) < 0)
        rc = mote_posix_err(errno);
    if (rc == 0 && fsync(fd) < 0)
        rc = mote_posix_err(errno);
    if (close(fd) < 0 && rc == 0)
        rc = mote_posix_err(errno);
    if (rc < 0) {
        unlinkat(dir, tmp, 0);
        return rc;
    }
    if ((rc = put_new(dir, tmp, name)) < 0)
        return rc;
    return sync_dir(dir);
}

/* ---- in steps -------------------------------------------------------------- */

struct step_rep {
    bool used;       /* taken (by the caller, or by a commit it left) */
    bool committing; /* the helper thread has it */
    bool done;       /* the thread finished: `rc` holds */
    bool abandoned;  /* the caller ended it during the commit: the thread frees it */
    int dir;         /* the directory (a descriptor of our own) */
    int fd;          /* the temporary */
    int pipe[2];     /* written by the thread when it is done */
    mode_t mode;
    int lost;        /* MOTE_FS_OWNER_LOST, or 0 */
    int rc;          /* the commit's result */
    char tmp[TEMP_HEX + 16];
    char name[NAME_CAP];
};

static pthread_mutex_t step_lock = PTHREAD_MUTEX_INITIALIZER;
static struct step_rep steps[STEP_SLOTS];

/* Frees slot `r` (with step_lock held, or no thread on it). */
static void step_free(struct step_rep *r)
{
    if (r->dir >= 0)
        close(r->dir);
    if (r->pipe[0] >= 0)
        close(r->pipe[0]);
    if (r->pipe[1] >= 0)
        close(r->pipe[1]);
    r->dir = r->pipe[0] = r->pipe[1] = -1;
    r->used = false;
}

static struct step_rep *step_of(int h)
{
    return h >= 0 && h < STEP_SLOTS && steps[h].used ? &steps[h] : NULL;
}

int mote_posix_replace_open(int dir, const char *name, unsigned mode, const void *owner)
{
    struct step_rep *r = NULL;
    int i, rc;

    if (strlen(name) >= NAME_CAP)
        return MOTE_ERR_NAMETOOLONG;
    pthread_mutex_lock(&step_lock);
    for (i = 0; i < STEP_SLOTS && r == NULL; i++) {
        if (!steps[i].used) {
            r = &steps[i];
            memset(r, 0, sizeof(*r));
            r->used = true;
            r->dir = r->fd = r->pipe[0] = r->pipe[1] = -1;
        }
    }
    pthread_mutex_unlock(&step_lock);
    if (r == NULL)
        return MOTE_ERR_FULL;
    strcpy(r->name, name);
    r->mode = (mode_t)mode;
    r->dir = fcntl(dir, F_DUPFD_CLOEXEC, 0);
    rc = r->dir < 0 ? mote_posix_err(errno) : make_temp(r->dir, r->tmp, sizeof(r->tmp));
    if (rc >= 0) {
        r->fd = rc;
        rc = owner != NULL ? keep_owner(r->fd, owner, &r->mode) : 0;
        r->lost = rc > 0 ? rc : 0;
    }
    if (rc < 0) {
        if (r->fd >= 0) {
            close(r->fd);
            unlinkat(r->dir, r->tmp, 0);
        }
        step_free(r);
        return rc;
    }
    return (int)(r - steps);
}

int mote_posix_replace_write(int h, const void *buf, size_t len)
{
    struct step_rep *r = step_of(h);

    if (r == NULL || r->committing)
        return MOTE_ERR_BADF;
    return mote_posix_write_all(r->fd, buf, len);
}

static void *commit_thread(void *arg)
{
    struct step_rep *r = arg;
    int rc = commit_temp(r->dir, r->fd, r->tmp, r->name, r->mode, 0);

    pthread_mutex_lock(&step_lock);
    r->fd = -1;
    r->rc = rc < 0 ? rc : r->lost;
    r->done = true;
    if (r->abandoned)
        step_free(r);
    else
        (void)!write(r->pipe[1], "", 1);
    pthread_mutex_unlock(&step_lock);
    return NULL;
}

int mote_posix_replace_commit(int h, int *wait_fd)
{
    struct step_rep *r = step_of(h);
    pthread_attr_t attr;
    pthread_t th;
    int rc;

    *wait_fd = -1;
    if (r == NULL)
        return MOTE_ERR_BADF;
    if (r->committing) {
        pthread_mutex_lock(&step_lock);
        rc = r->done ? r->rc : MOTE_ERR_AGAIN;
        pthread_mutex_unlock(&step_lock);
        *wait_fd = rc == MOTE_ERR_AGAIN ? r->pipe[0] : -1;
        return rc;
    }
    r->committing = true;
    if (pipe2(r->pipe, O_CLOEXEC | O_NONBLOCK) == 0) {
        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        pthread_attr_setstacksize(&attr, 64 * 1024);
        rc = pthread_create(&th, &attr, commit_thread, r);
        pthread_attr_destroy(&attr);
        if (rc == 0) {
            *wait_fd = r->pipe[0];
            return MOTE_ERR_AGAIN;
        }
    }
    /* No thread (or no pipe): the commit here, at once. */
    rc = commit_temp(r->dir, r->fd, r->tmp, r->name, r->mode, 0);
    r->fd = -1;
    r->rc = rc < 0 ? rc : r->lost;
    r->done = true;
    return r->rc;
}

void mote_posix_replace_end(int h)
{
    struct step_rep *r = step_of(h);

    if (r == NULL)
        return;
    pthread_mutex_lock(&step_lock);
    if (r->committing && !r->done) {
        r->abandoned = true; /* the thread finishes it and frees the slot */
        pthread_mutex_unlock(&step_lock);
        return;
    }
    pthread_mutex_unlock(&step_lock);
    if (!r->committing && r->fd >= 0) {
        /* never committed: the file stays as it was */
        close(r->fd);
        unlinkat(r->dir, r->tmp, 0);
    }
    r->fd = -1;
    pthread_mutex_lock(&step_lock);
    step_free(r);
    pthread_mutex_unlock(&step_lock);
}

void mote_posix_replace_drain(uint32_t ms)
{
    struct timespec nap = {0, 5 * 1000 * 1000};
    uint32_t waited;
    int i, busy;

    for (waited = 0;; waited += 5) {
        busy = 0;
        pthread_mutex_lock(&step_lock);
        for (i = 0; i < STEP_SLOTS; i++)
            busy += steps[i].used && steps[i].committing && !steps[i].done;
        pthread_mutex_unlock(&step_lock);
        if (busy == 0 || waited >= ms)
            return;
        nanosleep(&nap, NULL);
    }
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
