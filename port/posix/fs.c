/*
 * fs.c - the file-system group of the POSIX port, for the built-in file
 * tools: paths as the user gave them, regular files only, and replacement
 * (replace.c) that keeps what a user expects of a file: its mode, its
 * owner and group, a symlink pointing at it. What a rename cannot keep is
 * refused before anything is written: a file nobody may write (an editor
 * asks first), a file with other hard links (they would keep the old text).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

#define FS_PATH_MAX MOTE_POSIX_FS_PATH_MAX
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
    /* ... and again after: the path may have changed in between. */
    fd = mote_posix_open_file(path, O_RDONLY, 0);
    return fd == MOTE_ERR_NOTREG ? MOTE_ERR_INVAL : fd;
}

static int fs_read(void *ctx, int h, uint64_t offset, void *buf, size_t len)
{
    (void)ctx;
    return mote_posix_pread(h, offset, buf, len);
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

static int fs_replace(void *ctx, const char *path, mote_produce_fn produce, void *arg)
{
    char target[FS_PATH_MAX];
    struct stat sb;
    int rc;

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
        return mote_posix_replace(target, (unsigned)(sb.st_mode & 07777), &sb, produce, arg);
    }
    if (errno == ENOENT) {
        mode_t um = umask(0);

        umask(um);
        return mote_posix_replace(target, (unsigned)(0644 & ~um), NULL, produce, arg);
    }
    return mote_posix_err(errno);
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
    port->fs_close = mote_posix_close;
    port->fs_replace = fs_replace;
    port->fs_list = fs_list;
}
