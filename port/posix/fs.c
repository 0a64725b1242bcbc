/*
 * fs.c - the file-system group of the POSIX port, for the built-in file
 * tools: paths as the user gave them, regular files only, and replacement
 * that keeps what a user expects of a file (its mode, its owner and group,
 * a symlink pointing at it) through an exclusively created, unpredictably
 * named temporary in the same directory, synced before the rename and the
 * directory after. What a rename cannot keep is refused before anything is
 * written: a file nobody may write (an editor asks first), a file with
 * other hard links (they would keep the old text).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

#define FS_PATH_MAX 4096
#define FS_LINK_HOPS 40

static unsigned kind(mode_t m)
{
    return S_ISREG(m) ? MOTE_FS_FILE : S_ISDIR(m) ? MOTE_FS_DIR : MOTE_FS_OTHER;
}

static int fs_stat(void *ctx, const char *path, struct mote_fs_stat *st)
{
    struct stat sb;

    (void)ctx;
    if (stat(path, &sb) < 0)
        return mote_posix_err(errno);
    st->type = (uint8_t)kind(sb.st_mode);
    st->mode = (uint32_t)(sb.st_mode & 07777);
    st->size = S_ISREG(sb.st_mode) ? (uint64_t)sb.st_size : 0;
    return 0;
}

static int fs_open(void *ctx, const char *path)
{
    struct stat sb;
    int fd;

    (void)ctx;
    /* Look before opening: opening a FIFO or a device could block, or do
     * something (a tape rewinds). */
    if (stat(path, &sb) < 0)
        return mote_posix_err(errno);
    if (S_ISDIR(sb.st_mode))
        return MOTE_ERR_ISDIR;
    if (!S_ISREG(sb.st_mode))
        return MOTE_ERR_INVAL;
    do {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return mote_posix_err(errno);
    /* ... and again after: the path may have changed in between. */
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return MOTE_ERR_INVAL;
    }
    return fd;
}

static int fs_read(void *ctx, int h, uint64_t offset, void *buf, size_t len)
{
    ssize_t n;

    (void)ctx;
    /* Past what an off_t holds is past any end (pread would say EINVAL). */
    if (offset >= (uint64_t)INT64_MAX)
        return 0;
    if (len > (uint64_t)INT64_MAX - offset)
        len = (size_t)((uint64_t)INT64_MAX - offset);
    if (len > 0x7FFFFFFF)
        len = 0x7FFFFFFF;
    do {
        n = pread(h, buf, len, (off_t)offset);
    } while (n < 0 && errno == EINTR);
    return n < 0 ? mote_posix_err(errno) : (int)n;
}

static void fs_close(void *ctx, int h)
{
    (void)ctx;
    if (h >= 0)
        close(h);
}

/* The file a write to `path` reaches: symlinks followed to their final
 * target, which may not exist yet. */
static int resolve(const char *path, char *out, size_t cap)
{
    char cur[FS_PATH_MAX], link[FS_PATH_MAX];
    int hop;

    if (strlen(path) >= sizeof(cur))
        return MOTE_ERR_NAMETOOLONG;
    strcpy(cur, path);
    for (hop = 0; hop < FS_LINK_HOPS; hop++) {
        struct stat sb;
        ssize_t n;

        if (lstat(cur, &sb) < 0) {
            if (errno != ENOENT)
                return mote_posix_err(errno);
            break; /* a new file */
        }
        if (!S_ISLNK(sb.st_mode))
            break;
        n = readlink(cur, link, sizeof(link) - 1);
        if (n < 0)
            return mote_posix_err(errno);
        link[n] = '\0';
        if (link[0] == '/') {
            strcpy(cur, link);
        } else {
            char *slash = strrchr(cur, '/');
            size_t dir = slash != NULL ? (size_t)(slash - cur) + 1 : 0;

            if (dir + (size_t)n >= sizeof(cur))
                return MOTE_ERR_NAMETOOLONG;
            memcpy(cur + dir, link, (size_t)n + 1);
        }
    }
    if (hop == FS_LINK_HOPS)
        return MOTE_ERR_INVAL; /* a loop */
    if (strlen(cur) >= cap)
        return MOTE_ERR_NAMETOOLONG;
    strcpy(out, cur);
    return 0;
}

static int sync_dir_of(const char *path)
{
    char dir[FS_PATH_MAX];
    char *slash;
    int fd, rc = 0;

    strcpy(dir, path);
    slash = strrchr(dir, '/');
    if (slash == NULL)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return mote_posix_err(errno);
    if (fsync(fd) < 0 && errno != EINVAL)
        rc = mote_posix_err(errno);
    close(fd);
    return rc;
}

static int write_all(int fd, const char *p, size_t n)
{
    while (n > 0) {
        ssize_t w = write(fd, p, n);

        if (w < 0) {
            if (errno == EINTR)
                continue;
            return mote_posix_err(errno);
        }
        if (w == 0)
            return MOTE_ERR_NOSPC;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* Creates the temporary beside `target`: exclusive, never through a link,
 * under a name nobody can guess. */
static int make_temp(const char *target, char *tmp, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    const char *slash = strrchr(target, '/');
    size_t dir = slash != NULL ? (size_t)(slash - target) + 1 : 0;
    int tries;

    for (tries = 0; tries < 8; tries++) {
        unsigned char r[8];
        char name[2 * sizeof(r) + 1];
        size_t i;
        int fd, n;

        if (getrandom(r, sizeof(r), GRND_NONBLOCK) != (ssize_t)sizeof(r)) {
            int u = open("/dev/urandom", O_RDONLY | O_CLOEXEC);

            if (u < 0 || read(u, r, sizeof(r)) != (ssize_t)sizeof(r)) {
                if (u >= 0)
                    close(u);
                return MOTE_ERR_IO;
            }
            close(u);
        }
        for (i = 0; i < sizeof(r); i++) {
            name[2 * i] = hex[r[i] >> 4];
            name[2 * i + 1] = hex[r[i] & 15u];
        }
        name[2 * sizeof(r)] = '\0';
        n = snprintf(tmp, cap, "%.*s.mote-%s.tmp", (int)dir, target, name);
        if (n < 0 || (size_t)n >= cap)
            return MOTE_ERR_NAMETOOLONG;
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
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
        if (fchown(fd, old->st_uid, old->st_gid) < 0 && now.st_gid != old->st_gid &&
            fchown(fd, (uid_t)-1, old->st_gid) < 0) {
            /* neither: what is lost is told below */
        }
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

static int fs_replace(void *ctx, const char *path, mote_produce_fn produce, void *arg)
{
    char target[FS_PATH_MAX], tmp[FS_PATH_MAX + 40];
    char buf[4096];
    struct stat sb;
    mode_t mode;
    bool exists = false;
    int fd, rc, lost = 0;

    (void)ctx;
    if ((rc = resolve(path, target, sizeof(target))) < 0)
        return rc;
    if (stat(target, &sb) == 0) {
        if (!S_ISREG(sb.st_mode))
            return S_ISDIR(sb.st_mode) ? MOTE_ERR_ISDIR : MOTE_ERR_INVAL;
        /* A file without a write bit (even for root, who could) or one
         * this user may not write: a rename would replace it all the same
         * (the directory is what it checks), so it is refused here. */
        if ((sb.st_mode & 0222) == 0)
            return MOTE_ERR_ACCES;
        if (faccessat(AT_FDCWD, target, W_OK, AT_EACCESS) < 0)
            return mote_posix_err(errno);
        if (sb.st_nlink > 1)
            return MOTE_ERR_LINKED;
        mode = sb.st_mode & 07777;
        exists = true;
    } else if (errno == ENOENT) {
        mode_t um = umask(0);

        umask(um);
        mode = 0644 & ~um;
    } else {
        return mote_posix_err(errno);
    }
    fd = make_temp(target, tmp, sizeof(tmp));
    if (fd < 0)
        return fd;
    rc = 0;
    if (exists && (lost = keep_owner(fd, &sb, &mode)) < 0)
        rc = lost;
    while (rc == 0) {
        int n = produce(arg, buf, sizeof(buf));

        if (n <= 0) {
            rc = n;
            break;
        }
        rc = write_all(fd, buf, (size_t)n);
    }
    /* The mode last: a chown, and a write by anyone but root, clear the
     * set-ID bits. */
    if (rc == 0 && fchmod(fd, mode) < 0)
        rc = mote_posix_err(errno);
    if (rc == 0 && fsync(fd) < 0)
        rc = mote_posix_err(errno);
    if (close(fd) < 0 && rc == 0)
        rc = mote_posix_err(errno);
    if (rc == 0 && rename(tmp, target) < 0)
        rc = mote_posix_err(errno);
    if (rc < 0) {
        unlink(tmp);
        return rc;
    }
    rc = sync_dir_of(target);
    return rc < 0 ? rc : lost;
}

static int fs_list(void *ctx, const char *path, mote_fs_list_fn fn, void *arg)
{
    struct dirent *de;
    DIR *d;
    int rc = 0;

    (void)ctx;
    d = opendir(path);
    if (d == NULL)
        return mote_posix_err(errno);
    while ((de = readdir(d)) != NULL) {
        unsigned t = MOTE_FS_OTHER;

        if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
            continue;
        if (de->d_type == DT_REG)
            t = MOTE_FS_FILE;
        else if (de->d_type == DT_DIR)
            t = MOTE_FS_DIR;
        else if (de->d_type == DT_UNKNOWN || de->d_type == DT_LNK) {
            struct stat sb;

            if (fstatat(dirfd(d), de->d_name, &sb, 0) == 0)
                t = kind(sb.st_mode);
        }
        rc = fn(arg, de->d_name, t);
        if (rc != 0)
            break;
    }
    closedir(d);
    return rc;
}

void mote_posix_fs_fill(struct mote_port *port)
{
    port->fs_stat = fs_stat;
    port->fs_open = fs_open;
    port->fs_read = fs_read;
    port->fs_close = fs_close;
    port->fs_replace = fs_replace;
    port->fs_list = fs_list;
}
