/*
 * storage.c - the storage group of the POSIX port: mote's state as files
 * below a root directory (directories 0700, files 0600, never opened
 * through a link), appends as one write(2), fdatasync for durability,
 * atomic replacement (replace.c) and advisory locks.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

/* Checks `name` and joins it to the root. */
static int join(const struct mote_posix *pp, const char *name, char *out, size_t cap)
{
    const char *p = name;
    size_t n = strlen(name);
    int len;

    if (pp->root[0] == '\0')
        return MOTE_ERR_NOENT;
    if (n >= MOTE_STORAGE_NAME_MAX)
        return MOTE_ERR_NAMETOOLONG;
    if (name[0] == '/')
        return MOTE_ERR_INVAL;
    /* Refuse ".." components anywhere. */
    while (*p != '\0') {
        const char *slash = strchr(p, '/');
        size_t clen = slash != NULL ? (size_t)(slash - p) : strlen(p);

        if (clen == 2 && p[0] == '.' && p[1] == '.')
            return MOTE_ERR_INVAL;
        p += clen;
        if (*p == '/')
            p++;
    }
    len = snprintf(out, cap, "%s%s%s", pp->root, n > 0 ? "/" : "", name);
    if (len < 0 || (size_t)len >= cap)
        return MOTE_ERR_NAMETOOLONG;
    /* Every directory between the root and the entry is a real one: a
     * link there ("conversations" or "tls" pointing elsewhere) would
     * carry mote's state, and its removals, out of the root. */
    {
        size_t root = strlen(pp->root) + 1, i;

        for (i = root; out[i] != '\0'; i++) {
            struct stat sb;
            int bad;

            if (out[i] != '/')
                continue;
            out[i] = '\0';
            bad = lstat(out, &sb) == 0 && !S_ISDIR(sb.st_mode);
            out[i] = '/';
            if (bad)
                return MOTE_ERR_NOTDIR;
        }
    }
    return 0;
}

static int st_open(void *ctx, const char *name, unsigned flags)
{
    char path[MOTE_POSIX_STORE_PATH_MAX];
    int rc = join(ctx, name, path, sizeof(path));
    /* The state is mote's own regular files: never a link, and never an
     * open that could wait (a FIFO) or do something (a device). */
    int of = O_NOFOLLOW;
    struct stat sb;
    int fd;

    if (rc < 0)
        return rc;
    if (lstat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return MOTE_ERR_NOTREG; /* not even opened */
    if (flags & MOTE_ST_APPEND)
        of |= (flags & MOTE_ST_READ) ? O_RDWR | O_APPEND : O_WRONLY | O_APPEND;
    else
        of |= O_RDONLY;
    if (flags & MOTE_ST_CREATE)
        of |= O_CREAT;
    fd = mote_posix_open_file(path, of, 0600);
    if (fd < 0)
        return fd;
    /* A secret: only this user's, and only this user may read it. */
    if ((flags & MOTE_ST_PRIVATE) &&
        (fstat(fd, &sb) < 0 || sb.st_uid != geteuid() || (sb.st_mode & 077) != 0)) {
        close(fd);
        return MOTE_ERR_PERM;
    }
    /* Blocking again, as the rest of the group expects (regular files
     * do not block; the flag only guarded the open). */
    if ((rc = fcntl(fd, F_GETFL)) < 0 || fcntl(fd, F_SETFL, rc & ~O_NONBLOCK) < 0) {
        rc = mote_posix_err(errno);
        close(fd);
        return rc;
    }
    return fd;
}

static int st_read(void *ctx, int h, uint64_t offset, void *buf, size_t len)
{
    (void)ctx;
    return mote_posix_pread(h, offset, buf, len);
}

/* One write(2): a record is appended whole or (a full disk) in part, and
 * the caller sees which. */
static int st_append(void *ctx, int h, const void *buf, size_t len)
{
    (void)ctx;
    if (len > 0x7FFFFFFF)
        return MOTE_ERR_TOO_LARGE;
    return mote_posix_write(h, buf, len);
}

static int st_sync(void *ctx, int h)
{
    (void)ctx;
    if (fdatasync(h) < 0)
        return mote_posix_err(errno);
    return 0;
}

static int64_t st_size(void *ctx, int h)
{
    struct stat sb;

    (void)ctx;
    if (fstat(h, &sb) < 0)
        return mote_posix_err(errno);
    return (int64_t)sb.st_size;
}

static int st_truncate(void *ctx, int h, uint64_t size)
{
    (void)ctx;
    if (ftruncate(h, (off_t)size) < 0 || fsync(h) < 0)
        return mote_posix_err(errno);
    return 0;
}

static int st_write_atomic(void *ctx, const char *name, mote_produce_fn produce, void *arg)
{
    char path[MOTE_POSIX_STORE_PATH_MAX];
    int rc = join(ctx, name, path, sizeof(path));

    return rc < 0 ? rc : mote_posix_replace(path, 0600, NULL, produce, arg);
}

/* st_write_atomic's replacement with its commit (sync, rename, the
 * directory's sync) on replace.c's helper thread, left to finish alone. */
static int st_write_behind(void *ctx, const char *name, const void *buf, size_t len)
{
    char path[MOTE_POSIX_STORE_PATH_MAX];
    char *slash;
    int rc = join(ctx, name, path, sizeof(path)), dir, h, wait_fd;

    if (rc < 0)
        return rc;
    slash = strrchr(path, '/'); /* (the root is an absolute path: there is one) */
    *slash = '\0';
    do {
        dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    } while (dir < 0 && errno == EINTR);
    if (dir < 0)
        return mote_posix_err(errno);
    h = mote_posix_replace_open(dir, slash + 1, 0600, NULL);
    close(dir);
    if (h < 0)
        return h;
    rc = mote_posix_replace_write(h, buf, len);
    if (rc == 0)
        rc = mote_posix_replace_commit(h, &wait_fd);
    mote_posix_replace_end(h); /* (a commit under way goes on alone) */
    return rc == MOTE_ERR_AGAIN ? 0 : rc;
}

/* Creates `name`, only where nothing is (a link there is an entry). */
static int st_create(void *ctx, const char *name, mote_produce_fn produce, void *arg)
{
    char path[MOTE_POSIX_STORE_PATH_MAX];
    int rc = join(ctx, name, path, sizeof(path)), dir;
    char *slash;

    if (rc < 0)
        return rc;
    slash = strrchr(path, '/'); /* (the root's own '/' at least) */
    *slash = '\0';
    do {
        /* (the root itself may be a link the user chose; join checked
         * the directories below it) */
        dir = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    } while (dir < 0 && errno == EINTR);
    if (dir < 0)
        return mote_posix_err(errno);
    rc = mote_posix_create_at(dir, slash + 1, 0600, produce, arg);
    close(dir);
    return rc;
}

static int st_list(void *ctx, const char *dir, mote_list_fn fn, void *arg)
{
    char path[MOTE_POSIX_STORE_PATH_MAX];
    int rc = join(ctx, dir, path, sizeof(path));
    struct dirent *de;
    DIR *d;

    if (rc < 0)
        return rc;
    {
        /* (only the state's own directories, never through a link) */
        int fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC |
                                (dir[0] != '\0' ? O_NOFOLLOW : 0));

        if (fd < 0)
            return mote_posix_err(errno);
        d = fdopendir(fd);
        if (d == NULL) {
            rc = mote_posix_err(errno);
            close(fd);
            return rc;
        }
    }
    if (d == NULL)
        return mote_posix_err(errno);
    while ((de = readdir(d)) != NULL) {
        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        rc = fn(arg, de->d_name);
        if (rc != 0)
            break;
    }
    closedir(d);
    return rc;
}

static int st_time(void *ctx, const char *name, int64_t *mtime)
{
    char path[MOTE_POSIX_STORE_PATH_MAX];
    int rc = join(ctx, name, path, sizeof(path));
    struct stat sb;

    if (rc < 0)
        return rc;
    if (lstat(path, &sb) < 0)
        return mote_posix_err(errno);
    if (!S_ISREG(sb.st_mode))
        return MOTE_ERR_NOTREG;
    *mtime = (int64_t)sb.st_mtime;
    return 0;
}

static int st_remove(void *ctx, const char *name)
{
    char path[MOTE_POSIX_STORE_PATH_MAX];
    int rc = join(ctx, name, path, sizeof(path));

    if (rc < 0)
        return rc;
    if (unlink(path) < 0)
        return mote_posix_err(errno);
    return 0;
}

static int make_dir(const char *path)
{
    struct stat sb;

    if (mkdir(path, 0700) == 0)
        return 0;
    if (errno == EEXIST && lstat(path, &sb) == 0)
        return S_ISDIR(sb.st_mode) ? 0 : MOTE_ERR_NOTDIR; /* a link is not one */
    return mote_posix_err(errno);
}

static int st_mkdir(void *ctx, const char *name)
{
    char path[MOTE_POSIX_STORE_PATH_MAX];
    int rc = join(ctx, name, path, sizeof(path));

    if (rc < 0)
        return rc;
    return make_dir(path);
}

/* The process holding an flock on the file `fd` is open on, from
 * /proc/locks where there is one (Linux); 0 when it cannot be told. */
static int64_t lock_holder(int fd)
{
    char line[256];
    struct stat sb;
    int64_t pid = 0;
    FILE *f;

    if (fstat(fd, &sb) < 0 || (f = fopen("/proc/locks", "re")) == NULL)
        return 0;
    while (pid == 0 && fgets(line, sizeof(line), f) != NULL) {
        long long p;
        unsigned maj, min;
        unsigned long long ino;

        /* "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a waiter's
         * line has "->" after the number and is not a holder. */
        if (strstr(line, "FLOCK") == NULL || strstr(line, "->") != NULL)
            continue;
        /* the fields by hand (sscanf would bring 12 KB of libc into a
         * static build): "N:" FLOCK ADVISORY WRITE pid maj:min:ino */
        {
            char *fld[6], *save = NULL, *tok, *e;
            unsigned n = 0;

            for (tok = strtok_r(line, " \t\n", &save); tok != NULL && n < 6;
                 tok = strtok_r(NULL, " \t\n", &save))
                fld[n++] = tok;
            if (n < 6 || strcmp(fld[1], "FLOCK") != 0)
                continue;
            p = strtoll(fld[4], &e, 10);
            if (e == fld[4] || *e != '\0')
                continue;
            maj = (unsigned)strtoul(fld[5], &e, 16);
            if (*e != ':')
                continue;
            min = (unsigned)strtoul(e + 1, &e, 16);
            if (*e != ':')
                continue;
            ino = strtoull(e + 1, &e, 10);
            if (*e != '\0')
                continue;
        }
        if (ino == (unsigned long long)sb.st_ino && maj == major(sb.st_dev) &&
            min == minor(sb.st_dev) && p > 0 && p != (long long)getpid())
            pid = p;
    }
    fclose(f);
    return pid;
}

static int st_lock(void *ctx, int h, unsigned how, int64_t *holder)
{
    int rc;

    (void)ctx;
    *holder = 0;
    do {
        rc = flock(h, (how == MOTE_LOCK_HOLD ? LOCK_EX : LOCK_SH) | LOCK_NB);
    } while (rc < 0 && errno == EINTR);
    if (rc < 0 && errno == EWOULDBLOCK) {
        *holder = lock_holder(h);
        return MOTE_ERR_LOCKED;
    }
    if (rc < 0)
        return errno == ENOLCK || errno == EINVAL ? 0 : mote_posix_err(errno); /* no locks here */
    if (how != MOTE_LOCK_HOLD)
        (void)flock(h, LOCK_UN);
    return 0;
}

int mote_posix_storage_root(struct mote_posix *pp, const char *dir)
{
    char path[MOTE_POSIX_PATH_MAX];
    size_t n = strlen(dir), i;
    int rc;

    if (n == 0)
        return MOTE_ERR_INVAL;
    if (n >= sizeof(path))
        return MOTE_ERR_NAMETOOLONG;
    memcpy(path, dir, n + 1);
    while (n > 1 && path[n - 1] == '/')
        path[--n] = '\0';
    /* mkdir -p, each missing level 0700 */
    for (i = 1; i <= n; i++) {
        if (path[i] == '/' || path[i] == '\0') {
            char c = path[i];

            path[i] = '\0';
            rc = make_dir(path);
            path[i] = c;
            if (rc < 0)
                return rc;
        }
    }
    {
        /* As ssh refuses a loose ~/.ssh: a state directory that another
         * user owns or may write to could have its journals swapped. */
        struct stat sb;

        if (stat(path, &sb) < 0)
            return mote_posix_err(errno);
        if (!S_ISDIR(sb.st_mode))
            return MOTE_ERR_NOTDIR;
        if ((sb.st_mode & 022) != 0 || sb.st_uid != geteuid())
            return MOTE_ERR_PERM;
    }
    memcpy(pp->root, path, n + 1);
    return 0;
}

void mote_posix_storage_fill(struct mote_port *port)
{
    port->st_open = st_open;
    port->st_read = st_read;
    port->st_append = st_append;
    port->st_sync = st_sync;
    port->st_size = st_size;
    port->st_truncate = st_truncate;
    port->st_close = mote_posix_close;
    port->st_write_atomic = st_write_atomic;
    port->st_write_behind = st_write_behind;
    port->st_list = st_list;
    port->st_remove = st_remove;
    port->st_mkdir = st_mkdir;
    port->st_lock = st_lock;
    port->st_time = st_time;
    port->st_create = st_create;
}
