/*
 * fs.c - the file-system group of the POSIX port, for the built-in file
 * tools: paths as the user gave them, walked one component at a time with
 * every symlink followed by mote itself under the kernel's
 * protected_symlinks rule (whatever the system's setting), regular files
 * only, and replacement (replace.c) in the directory found, that keeps
 * what a user expects of a file: its mode, its owner and group, a symlink
 * pointing at it. What a rename cannot keep is refused before anything is
 * written: a file nobody may write (an editor asks first), a file with
 * other hard links (they would keep the old text).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mote/mote_err.h"
#include "mote/mote_posix.h"
#include "posix_internal.h"

#define FS_PATH_MAX MOTE_POSIX_FS_PATH_MAX
#define FS_NAME_MAX 256 /* a path component and its NUL (NAME_MAX + 1) */
#define FS_LINK_HOPS 40 /* symbolic links followed in one path, as Linux */

static unsigned kind(mode_t m)
{
    return S_ISREG(m) ? MOTE_FS_FILE : S_ISDIR(m) ? MOTE_FS_DIR : MOTE_FS_OTHER;
}

/* Where a path leads: the directory holding its last entry, open, and
 * the entry's name there; every symlink on the way already followed. The
 * caller then works on (dir, name) alone, so what was checked is what is
 * read or written: a name swapped for a link in between is not followed
 * (O_NOFOLLOW, renameat replaces the entry itself). */
struct spot {
    int dir;                /* O_PATH descriptor of the directory */
    char name[FS_NAME_MAX]; /* the entry's name in it ("." for the directory itself) */
    bool exists;
    struct stat st;         /* the entry (never a symlink), if it exists */
};

static int fd_err(int fd)
{
    int e = errno;

    if (fd >= 0)
        close(fd);
    return mote_posix_err(e);
}

static int open_path(int at, const char *name)
{
    int fd;

    do {
        fd = openat(at, name, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

/* The kernel's protected_symlinks rule, kept whatever the system's
 * setting: a symlink in a sticky directory that others may write is
 * followed only if the directory's owner or the caller owns it; anyone
 * may plant one there, pointing at the caller's files. */
static bool may_follow(int dir, const struct stat *link)
{
    struct stat ds;

    if (fstat(dir, &ds) < 0)
        return false;
    if ((ds.st_mode & S_ISVTX) == 0 || (ds.st_mode & S_IWOTH) == 0)
        return true;
    return link->st_uid == ds.st_uid || link->st_uid == geteuid();
}

/* Walks `path` one component at a time from the working directory (or
 * the root), each directory opened without following links, each link
 * followed here, under the rule above. Returns 0 with sp->dir open (the
 * caller closes it), or < 0: MOTE_ERR_ACCES (a link the rule refuses),
 * MOTE_ERR_INVAL (more than FS_LINK_HOPS links: a loop),
 * MOTE_ERR_NAMETOOLONG, MOTE_ERR_NOENT or MOTE_ERR_NOTDIR (a directory
 * on the way missing or a file), or the system's failure. */
static int locate(const char *path, struct spot *sp)
{
    char rest[FS_PATH_MAX], link[FS_PATH_MAX];
    size_t len = strlen(path), at = 0;
    int dir, hops = 0;

    if (len == 0)
        return MOTE_ERR_NOENT;
    if (len + 2 >= sizeof(rest))
        return MOTE_ERR_NAMETOOLONG;
    memcpy(rest, path, len + 1);
    if (rest[len - 1] == '/')
        memcpy(rest + len, ".", 2); /* "dir/" names the directory itself */
    if ((dir = open_path(AT_FDCWD, rest[0] == '/' ? "/" : ".")) < 0)
        return fd_err(-1);
    for (;;) {
        size_t n;
        bool last;
        ssize_t k;
        int next;

        while (rest[at] == '/')
            at++;
        n = strcspn(rest + at, "/");
        if (n >= sizeof(sp->name)) {
            close(dir);
            return MOTE_ERR_NAMETOOLONG;
        }
        memcpy(sp->name, rest + at, n);
        sp->name[n] = '\0';
        at += n;
        while (rest[at] == '/')
            at++;
        last = rest[at] == '\0';
        if (n == 0) {
            memcpy(sp->name, ".", 2); /* the path was "/" */
            last = true;
        }
        if (fstatat(dir, sp->name, &sp->st, AT_SYMLINK_NOFOLLOW) < 0) {
            if (errno == ENOENT && last) {
                sp->dir = dir;
                sp->exists = false;
                return 0;
            }
            return fd_err(dir);
        }
        if (S_ISLNK(sp->st.st_mode)) {
            if (++hops > FS_LINK_HOPS) {
                close(dir);
                return MOTE_ERR_INVAL;
            }
            if (!may_follow(dir, &sp->st)) {
                close(dir);
                return MOTE_ERR_ACCES;
            }
            k = readlinkat(dir, sp->name, link, sizeof(link));
            if (k < 0)
                return fd_err(dir);
            if (k == 0 || (size_t)k + 1 + strlen(rest + at) + 2 >= sizeof(link)) {
                close(dir);
                return k == 0 ? MOTE_ERR_NOENT : MOTE_ERR_NAMETOOLONG;
            }
            /* the link's text, then what was left of the path */
            link[k] = '\0';
            if (!last) {
                link[k++] = '/';
                memcpy(link + k, rest + at, strlen(rest + at) + 1);
            } else if (link[k - 1] == '/') {
                memcpy(link + k, ".", 2);
            }
            memcpy(rest, link, strlen(link) + 1);
            at = 0;
            if (rest[0] == '/') {
                close(dir);
                if ((dir = open_path(AT_FDCWD, "/")) < 0)
                    return fd_err(-1);
            }
            continue; /* a relative link goes on from its own directory */
        }
        if (last) {
            sp->dir = dir;
            sp->exists = true;
            return 0;
        }
        if (!S_ISDIR(sp->st.st_mode)) {
            close(dir);
            return MOTE_ERR_NOTDIR;
        }
        next = open_path(dir, sp->name);
        if (next < 0)
            return fd_err(dir);
        close(dir);
        dir = next;
    }
}

static int fs_stat(void *ctx, const char *path, struct mote_fs_stat *st)
{
    struct spot sp;
    int rc;

    (void)ctx;
    if ((rc = locate(path, &sp)) < 0)
        return rc;
    close(sp.dir);
    if (!sp.exists)
        return MOTE_ERR_NOENT;
    st->type = (uint8_t)kind(sp.st.st_mode);
    st->mode = (uint32_t)(sp.st.st_mode & 07777);
    st->size = S_ISREG(sp.st.st_mode) ? (uint64_t)sp.st.st_size : 0;
    return 0;
}

static int fs_open(void *ctx, const char *path)
{
    struct spot sp;
    struct stat sb;
    int fd, rc;

    (void)ctx;
    if ((rc = locate(path, &sp)) < 0)
        return rc;
    /* Look before opening: opening a FIFO or a device could block, or do
     * something (a tape rewinds). */
    rc = !sp.exists ? MOTE_ERR_NOENT : S_ISDIR(sp.st.st_mode) ? MOTE_ERR_ISDIR
         : !S_ISREG(sp.st.st_mode)                            ? MOTE_ERR_INVAL
                                                               : 0;
    if (rc < 0) {
        close(sp.dir);
        return rc;
    }
    do {
        fd = openat(sp.dir, sp.name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) {
        rc = errno == ELOOP ? MOTE_ERR_INVAL : mote_posix_err(errno);
        close(sp.dir);
        return rc;
    }
    close(sp.dir);
    /* ... and again after: the entry may have changed in between. */
    if (fstat(fd, &sb) < 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return MOTE_ERR_INVAL;
    }
    return fd;
}

static int fs_read(void *ctx, int h, uint64_t offset, void *buf, size_t len)
{
    (void)ctx;
    return mote_posix_pread(h, offset, buf, len);
}

/* The checks of an existing file before it is replaced (see fs_replace
 * in mote_port.h). */
static int replaceable(const struct spot *sp)
{
    if (!S_ISREG(sp->st.st_mode))
        return S_ISDIR(sp->st.st_mode) ? MOTE_ERR_ISDIR : MOTE_ERR_INVAL;
    /* A file without a write bit (even for root, who could) or one this
     * user may not write: a rename would replace it all the same (the
     * directory is what it checks), so it is refused here. */
    if ((sp->st.st_mode & 0222) == 0)
        return MOTE_ERR_ACCES;
    if (faccessat(sp->dir, sp->name, W_OK, AT_EACCESS | AT_SYMLINK_NOFOLLOW) < 0 &&
        (errno != EINVAL || faccessat(sp->dir, sp->name, W_OK, AT_EACCESS) < 0))
        return mote_posix_err(errno);
    if (sp->st.st_nlink > 1)
        return MOTE_ERR_LINKED;
    return 0;
}

/* The place a replacement goes: `sp` located (its directory open when
 * this returns 0), the file there refused unless it may be replaced, and
 * the mode the new file gets (the old one's, or 0644 under the umask). */
static int replace_spot(const char *path, struct spot *sp, unsigned *mode)
{
    int rc;

    if ((rc = locate(path, sp)) < 0)
        return rc;
    rc = 0;
    if (sp->exists) {
        *mode = (unsigned)(sp->st.st_mode & 07777);
        if ((rc = replaceable(sp)) != 0)
            close(sp->dir);
    } else {
        mode_t um = umask(0);

        umask(um);
        *mode = (unsigned)(0644 & ~um);
    }
    return rc;
}

/* Replaces `path` in its directory: written whole by `produce`, or (NULL)
 * opened to be written in parts (fs_replace_write, _end). */
static int replace_in(const char *path, mote_produce_fn produce, void *arg)
{
    struct spot sp;
    unsigned mode;
    int rc;

    if ((rc = replace_spot(path, &sp, &mode)) != 0)
        return rc;
    if (produce != NULL)
        rc = mote_posix_replace_at(sp.dir, sp.name, mode, sp.exists ? &sp.st : NULL, produce, arg);
    else
        rc = mote_posix_replace_open(sp.dir, sp.name, mode, sp.exists ? &sp.st : NULL);
    close(sp.dir);
    return rc;
}

static int fs_replace(void *ctx, const char *path, mote_produce_fn produce, void *arg)
{
    (void)ctx;
    return produce != NULL ? replace_in(path, produce, arg) : MOTE_ERR_INVAL;
}

static int fs_replace_begin(void *ctx, const char *path)
{
    (void)ctx;
    return replace_in(path, NULL, NULL);
}

static int fs_replace_write(void *ctx, int h, const void *buf, size_t len)
{
    (void)ctx;
    return mote_posix_replace_write(h, buf, len);
}

static int fs_replace_commit(void *ctx, int h, int *wait_fd)
{
    (void)ctx;
    return mote_posix_replace_commit(h, wait_fd);
}

static void fs_replace_end(void *ctx, int h)
{
    (void)ctx;
    mote_posix_replace_end(h);
}

static int fs_list(void *ctx, const char *path, mote_fs_list_fn fn, void *arg)
{
    struct dirent *de;
    struct spot sp;
    DIR *d;
    int rc, fd;

    (void)ctx;
    if ((rc = locate(path, &sp)) < 0)
        return rc;
    if (!sp.exists || !S_ISDIR(sp.st.st_mode)) {
        close(sp.dir);
        return !sp.exists ? MOTE_ERR_NOENT : MOTE_ERR_NOTDIR;
    }
    do {
        fd = openat(sp.dir, sp.name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    rc = fd < 0 ? mote_posix_err(errno) : 0;
    close(sp.dir);
    if (rc < 0)
        return rc;
    d = fdopendir(fd);
    if (d == NULL)
        return fd_err(fd);
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
    port->fs_replace_begin = fs_replace_begin;
    port->fs_replace_write = fs_replace_write;
    port->fs_replace_commit = fs_replace_commit;
    port->fs_replace_end = fs_replace_end;
}
